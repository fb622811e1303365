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

use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{activation::relu, DType, Device, Int, Tensor, TensorData};
use clap::Parser;
use sparsegrad::nn::models::GcnConfig;
use sparsegrad::nn::{NeighborSampler, SageConv, SageConvConfig};
use sparsegrad::prelude::*;
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

const COMMUNITIES: usize = 20;
const FEATURES: usize = 16;
const HIDDEN: usize = 64;

/// splitmix64: the graph, the features and the split come from one seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64 * n as f64) as usize
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A standard normal sample (Box-Muller).
    fn normal(&mut self) -> f64 {
        let u = self.unit().max(f64::MIN_POSITIVE);
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * self.unit()).cos()
    }
}

/// The stochastic block model: communities, an undirected CSR adjacency (no loops, sorted rows)
/// and the features.
struct Sbm {
    community: Vec<usize>,
    crow: Vec<usize>,
    col: Vec<u32>,
    features: Vec<f32>,
    /// The community means `[COMMUNITIES, FEATURES]`.
    means: Vec<f64>,
}

impl Sbm {
    fn nodes(&self) -> usize {
        self.community.len()
    }

    fn build(a: &Args) -> Sbm {
        let n = a.nodes as usize;
        assert!(n <= u32::MAX as usize, "node ids are stored as u32");
        let mut rng = Rng(a.seed ^ 0x0005_EED0_F5B3);
        let community: Vec<usize> = (0..n).map(|_| rng.below(COMMUNITIES)).collect();
        let mut members = vec![Vec::new(); COMMUNITIES];
        for (i, &c) in community.iter().enumerate() {
            members[c].push(i as u32);
        }
        // Each node draws degree / 2 edges; both directions are stored.
        let draws = (a.degree / 2) as usize;
        // Four passes over the nodes: the draws, placing both directions, sorting the rows, the
        // features.
        let bar = progress::Progress::new(4 * n as u64, "building the graph");
        let tick = |pass: u64, u: usize, what: &'static str| {
            if u.is_multiple_of(1 << 16) {
                bar.step(pass * n as u64 + u as u64, || what.to_string());
            }
        };
        let mut ends = Vec::with_capacity(n * draws);
        for u in 0..n {
            tick(0, u, "drawing edges");
            for _ in 0..draws {
                let v = if rng.unit() < a.p_in {
                    let m = &members[community[u]];
                    m[rng.below(m.len())]
                } else {
                    rng.below(n) as u32
                };
                ends.push(v);
            }
        }
        bar.epoch(n as u64, || format!("{} edges drawn", ends.len()));
        // Counting sort into rows: u's draws and, reversed, every draw that reaches u.
        let mut count = vec![0usize; n + 1];
        for u in 0..n {
            for &v in &ends[u * draws..(u + 1) * draws] {
                count[u + 1] += 1;
                count[v as usize + 1] += 1;
            }
        }
        for i in 0..n {
            count[i + 1] += count[i];
        }
        let mut next = count.clone();
        let mut col = vec![0u32; count[n]];
        for u in 0..n {
            tick(1, u, "placing both directions");
            for &v in &ends[u * draws..(u + 1) * draws] {
                col[next[u]] = v;
                next[u] += 1;
                col[next[v as usize]] = u as u32;
                next[v as usize] += 1;
            }
        }
        drop(ends);
        bar.epoch(2 * n as u64, || "rows filled".to_string());
        // Sorted rows, loops and repeats dropped, compacted in place.
        let mut crow = vec![0usize; n + 1];
        let mut kept = 0;
        for u in 0..n {
            tick(2, u, "sorting rows");
            let row = &mut col[count[u]..count[u + 1]];
            row.sort_unstable();
            let mut last = None;
            for i in count[u]..count[u + 1] {
                let v = col[i];
                if v as usize != u && last != Some(v) {
                    col[kept] = v;
                    kept += 1;
                    last = Some(v);
                }
            }
            crow[u + 1] = kept;
        }
        col.truncate(kept);
        col.shrink_to_fit();
        bar.epoch(3 * n as u64, || format!("rows sorted, {kept} entries"));
        let means: Vec<f64> = (0..COMMUNITIES * FEATURES).map(|_| rng.normal()).collect();
        let features = (0..n * FEATURES)
            .map(|k| {
                if k.is_multiple_of(FEATURES) {
                    tick(3, k / FEATURES, "drawing features");
                }
                (means[community[k / FEATURES] * FEATURES + k % FEATURES] + a.sigma * rng.normal()) as f32
            })
            .collect();
        bar.epoch(4 * n as u64, || "features drawn".to_string());
        bar.finish();
        Sbm { community, crow, col, features, means }
    }

    /// The adjacency as a CSR tensor with unit values (`P[i, j]` for the edge `j -> i`; the
    /// graph is undirected).
    fn adjacency(&self, device: &Device) -> SparseTensor<2> {
        self.csr(device, |_, _| 1.0, false)
    }

    /// `D^-1/2 (A + I) D^-1/2` as CSR.
    fn gcn_matrix(&self, device: &Device) -> SparseTensor<2> {
        let inv: Vec<f64> = self.crow.windows(2).map(|w| 1.0 / ((w[1] - w[0] + 1) as f64).sqrt()).collect();
        self.csr(device, |i, j| (inv[i] * inv[j]) as f32, true)
    }

    fn csr(&self, device: &Device, value: impl Fn(usize, usize) -> f32, loops: bool) -> SparseTensor<2> {
        let n = self.nodes();
        let nnz = self.col.len() + if loops { n } else { 0 };
        let (mut crow, mut col, mut val) =
            (Vec::with_capacity(n + 1), Vec::with_capacity(nnz), Vec::with_capacity(nnz));
        crow.push(0i64);
        let bar = progress::Progress::new(n as u64, if loops { "GCN matrix rows" } else { "adjacency rows" });
        for i in 0..n {
            if i.is_multiple_of(1 << 16) {
                bar.step(i as u64, String::new);
            }
            let row = &self.col[self.crow[i]..self.crow[i + 1]];
            let split = row.partition_point(|&j| (j as usize) < i);
            let mut push = |j: usize| {
                col.push(j as i64);
                val.push(value(i, j));
            };
            row[..split].iter().for_each(|&j| push(j as usize));
            if loops {
                push(i);
            }
            row[split..].iter().for_each(|&j| push(j as usize));
            crow.push(col.len() as i64);
        }
        bar.finish();
        let crow = Tensor::<1, Int>::from_data(TensorData::new(crow, [n + 1]), (device, DType::I64));
        let col = Tensor::<1, Int>::from_data(TensorData::new(col, [nnz]), (device, DType::I64));
        let val = Tensor::<1>::from_data(TensorData::new(val, [nnz]), device);
        SparseTensor::csr(crow, col, val, [n, n]).expect("a valid CSR matrix")
    }

    /// The features of `nodes`, in that order, `[nodes, FEATURES]`.
    fn gather(&self, nodes: &[usize], device: &Device) -> Tensor<2> {
        let mut v = Vec::with_capacity(nodes.len() * FEATURES);
        for &i in nodes {
            v.extend_from_slice(&self.features[i * FEATURES..(i + 1) * FEATURES]);
        }
        Tensor::from_data(TensorData::new(v, [nodes.len(), FEATURES]), device)
    }

    /// The fraction of `nodes` whose own features are nearest their community's true mean:
    /// what the features alone can tell (the classifier knows the means, no model does better
    /// on features alone).
    fn nearest_mean_accuracy(&self, nodes: &[usize]) -> f64 {
        let hits = nodes
            .iter()
            .filter(|&&i| {
                let x = &self.features[i * FEATURES..(i + 1) * FEATURES];
                let distance = |c: usize| -> f64 {
                    x.iter()
                        .zip(&self.means[c * FEATURES..(c + 1) * FEATURES])
                        .map(|(&a, &m)| (a as f64 - m).powi(2))
                        .sum()
                };
                (0..COMMUNITIES).min_by(|&a, &b| distance(a).total_cmp(&distance(b))) == Some(self.community[i])
            })
            .count();
        hits as f64 / nodes.len() as f64
    }

    fn labels(&self, nodes: &[usize], device: &Device) -> Tensor<1, Int> {
        Tensor::from_data(
            TensorData::new(nodes.iter().map(|&i| self.community[i] as i64).collect::<Vec<_>>(), [nodes.len()]),
            device,
        )
    }
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
    let g = Sbm::build(&args);
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
    let mut rng = Rng(args.seed ^ 0x0005_9117);
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
