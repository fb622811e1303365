//! GraphSAGE by mini-batches on a graph too big for one batch: a stochastic block model of
//! 1,000,000 nodes in 20 communities and about 20,000,000 undirected edges, with noisy
//! community-dependent features, all built deterministically from `--seed`; full-batch GCN on
//! the same graph is measured beside it.
//!
//! - The graph: node `i` belongs to community `hash(seed, i) mod 20`. Every node draws
//!   `--degree / 2` edges, each to a uniformly random member of its own community with
//!   probability `--p-in` and to a uniformly random node otherwise (loops and repeats dropped),
//!   so a node has about `--degree` neighbours, most in its community.
//! - The features: `x_i = mu_c + sigma * noise`, `mu_c ~ N(0, I_16)` per community, noise
//!   `N(0, I_16)` per node, `sigma = --sigma`. With the default `sigma = 2` a node's own
//!   features tell its community poorly (the means are about as far apart as the noise is wide);
//!   the mean over its neighbours, mostly of its community, tells it well. Accuracy is therefore
//!   a test of the aggregation; the example prints what the features alone give (each test
//!   node assigned to the nearest true community mean) beside it.
//! - The task: predict the community. 10 % of the nodes train, 10,000 others test.
//! - GraphSAGE: two `SageConv` layers (mean aggregation, 16 -> 64 -> 20, ReLU), mini-batches of
//!   `--batch` seeds, neighbours sampled with fan-outs [15, 10] by `NeighborSampler` (each hop a
//!   CSR block), Adam lr 0.01. Prints per epoch the time, the test accuracy and the peak memory.
//! - Full-batch GCN: two `GcnConv` layers (16 -> 64 -> 20) over the whole normalised adjacency
//!   `D^-1/2 (A + I) D^-1/2` (CSR, about 41,000,000 entries), forward, backward and Adam on the
//!   training nodes; prints the time per step and the peak memory.
//!
//! `cargo run --release --example sage_sbm [-- --nodes N] [--degree D] [--epochs E] [--gcn-steps
//! S] [--seed S]` (`--help`). The target: >= 90 % test accuracy for GraphSAGE. On a
//! terminal, building the graph (its four passes over the nodes, then the CSR matrices), the
//! mini-batches of each epoch, the test batches and the GCN steps show a progress bar
//! (`examples/progress`); elsewhere (a log, a pipe) a line per pass, per epoch and per GCN step.

#[path = "memory/mod.rs"]
mod memory;
#[path = "progress/mod.rs"]
mod progress;
#[path = "sbm/mod.rs"]
mod sbm;

use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{activation::relu, DType, Device, Int, Tensor, TensorData};
use clap::Parser;
use sbm::{Rng, Sbm, SbmParams, COMMUNITIES, FEATURES, HIDDEN};
use sparsegrad::nn::models::GcnConfig;
use sparsegrad::nn::{NeighborSampler, SageConv, SageConvConfig};
use std::time::Instant;

/// GraphSAGE mini-batches and full-batch GCN on a 1M-node stochastic block model.
#[derive(Parser, Debug)]
#[command(long_about = None)]
struct Args {
    /// Nodes of the graph.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(100..))]
    nodes: u64,
    /// Mean neighbours per node (edges = nodes * degree / 2).
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u64).range(2..))]
    degree: u64,
    /// Probability that an edge stays in its node's community.
    #[arg(long, default_value_t = 0.6)]
    p_in: f64,
    /// Noise of the features around their community's mean.
    #[arg(long, default_value_t = 2.0)]
    sigma: f64,
    /// GraphSAGE epochs (passes over the training nodes).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..))]
    epochs: u64,
    /// Seed nodes per mini-batch.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..))]
    batch: u64,
    /// Full-batch GCN steps to time (0: skip).
    #[arg(long, default_value_t = 3)]
    gcn_steps: u64,
    /// Seed of the graph, the features, the split and the sampling.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

#[derive(Module, Debug)]
struct Sage {
    l0: SageConv,
    l1: SageConv,
}

impl Sage {
    /// Logits of the seeds of a sample (`x`: the features of its `n_id`).
    fn forward(&self, x: Tensor<2>, blocks: &[sparsegrad::nn::Block]) -> Tensor<2> {
        let h = relu(self.l0.forward(x, &blocks[0].adj));
        self.l1.forward(h, &blocks[1].adj)
    }
}

fn correct(logits: Tensor<2>, labels: Tensor<1, Int>) -> i64 {
    let n = labels.dims()[0];
    logits.argmax(1).reshape([n]).equal(labels).int().sum().into_scalar::<i64>()
}

fn main() {
    let args = Args::parse();
    let t = Instant::now();
    let g = Sbm::build(&SbmParams {
        nodes: args.nodes,
        degree: args.degree,
        p_in: args.p_in,
        sigma: args.sigma,
        seed: args.seed,
    });
    let n = g.nodes();
    println!(
        "SBM: {n} nodes, {} undirected edges ({:.1} neighbours per node), {COMMUNITIES} communities, \
         {FEATURES} features (sigma {}); built in {:.1} s, peak memory {}",
        g.col.len() / 2,
        g.col.len() as f64 / n as f64,
        args.sigma,
        t.elapsed().as_secs_f64(),
        memory::mib(memory::peak_kib())
    );
    // The split: a shuffled order, its first 10 % trains, the next 10,000 test.
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng = Rng::new(args.seed ^ 0x0005_9117);
    for i in (1..n).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let train = &order[..n / 10];
    let test = &order[n / 10..(n / 10 + 10_000).min(n)];
    println!(
        "test nodes classified by their own features alone (nearest true community mean): {:.2} %",
        g.nearest_mean_accuracy(test) * 100.0
    );

    let plain = Device::flex();
    let sampler = NeighborSampler::new(&g.adjacency(&plain), vec![15, 10]).expect("a square propagation matrix");
    let device = Device::flex().autodiff();
    device.seed(args.seed);
    let mut model = Sage {
        l0: SageConvConfig::new(FEATURES, HIDDEN).init(&device),
        l1: SageConvConfig::new(HIDDEN, 20).init(&device),
    };
    let mut optim = AdamConfig::new().init();
    let loss_fn = CrossEntropyLossConfig::new().init(&device);
    let batch = args.batch as usize;
    let mut accuracy = 0.0;
    // From here the peak is the graph, the sampler and the training.
    memory::reset_peak();
    let batches = train.len().div_ceil(batch);
    for epoch in 0..args.epochs {
        let t = Instant::now();
        let mut sampled = 0usize;
        let bar = progress::Progress::new(batches as u64, format!("GraphSAGE epoch {}/{}", epoch + 1, args.epochs));
        for (b, seeds) in train.chunks(batch).enumerate() {
            let sample =
                sampler.sample(seeds, args.seed ^ (epoch << 32) ^ b as u64, &device).expect("seeds in the graph");
            sampled += sample.n_id.len();
            let logits = model.forward(g.gather(&sample.n_id, &device), &sample.blocks);
            let loss = loss_fn.forward(logits, g.labels(seeds, &device));
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            model = optim.step(0.01, model, grads);
            // Reading the loss waits for the step: only when a bar shows it.
            bar.step(b as u64 + 1, || format!("loss {:.4}", loss.into_scalar::<f32>()));
        }
        bar.finish();
        let seconds = t.elapsed().as_secs_f64();
        let valid = model.valid();
        let mut right = 0;
        let bar = progress::Progress::new(test.len().div_ceil(batch) as u64, "GraphSAGE test batches");
        for (b, seeds) in test.chunks(batch).enumerate() {
            let sample = sampler.sample(seeds, !args.seed ^ b as u64, &plain).expect("seeds in the graph");
            right += correct(valid.forward(g.gather(&sample.n_id, &plain), &sample.blocks), g.labels(seeds, &plain));
            bar.step(b as u64 + 1, String::new);
        }
        bar.finish();
        accuracy = right as f64 / test.len() as f64;
        println!(
            "GraphSAGE epoch {}: {seconds:.1} s ({} batches, {:.0} sampled nodes per batch), test accuracy {:.2} %, \
             peak memory {}",
            epoch + 1,
            batches,
            sampled as f64 / batches as f64,
            accuracy * 100.0,
            memory::mib(memory::peak_kib())
        );
    }
    drop(sampler);

    if args.gcn_steps > 0 {
        memory::reset_peak();
        let t = Instant::now();
        let adj = g.gcn_matrix(&device);
        let x = g.gather(&(0..n).collect::<Vec<_>>(), &device);
        let train_ids = Tensor::<1, Int>::from_data(
            TensorData::new(train.iter().map(|&i| i as i64).collect::<Vec<_>>(), [train.len()]),
            (&device, DType::I64),
        );
        let labels = g.labels(train, &device);
        println!(
            "full-batch GCN: normalised adjacency of {} entries built in {:.1} s",
            adj.nnz(),
            t.elapsed().as_secs_f64()
        );
        let mut gcn = GcnConfig::new(FEATURES, COMMUNITIES).with_d_hidden(HIDDEN).init(&device).expect("valid");
        let mut optim = AdamConfig::new().init();
        let mut steps = Vec::new();
        let bar = progress::Progress::new(args.gcn_steps, "full-batch GCN step");
        for step in 0..args.gcn_steps {
            let t = Instant::now();
            let logits = gcn.forward(x.clone(), &adj).select(0, train_ids.clone());
            let loss = loss_fn.forward(logits, labels.clone());
            let grads = GradientsParams::from_grads(loss.backward(), &gcn);
            gcn = optim.step(0.01, gcn, grads);
            steps.push(t.elapsed().as_secs_f64());
            bar.epoch(step + 1, || format!("{:.2} s", steps[steps.len() - 1]));
        }
        bar.finish();
        steps.sort_by(f64::total_cmp);
        println!(
            "full-batch GCN step (forward, backward, Adam): median {:.2} s over {} steps; peak memory {}",
            steps[steps.len() / 2],
            steps.len(),
            memory::mib(memory::peak_kib())
        );
    }
    println!("GraphSAGE test accuracy: {:.2} % (target >= 90 %)", accuracy * 100.0);
}
