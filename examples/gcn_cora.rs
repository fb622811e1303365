//! A 2-layer GCN (`sparsegrad::nn::models::Gcn`) on a Planetoid graph (Cora by default,
//! `--dataset cora|citeseer|pubmed`, `--root DIR`) with the Planetoid split and Kipf & Welling's settings: 16 hidden
//! units, dropout 0.5 (on the sparse bag-of-words features: on their stored values; and on the
//! hidden layer), weight decay 5e-4 on the first layer, Adam with lr 0.01, 200 epochs, early
//! stopping on the validation loss (window 10). Features stay sparse (CSR, row-normalised); the
//! adjacency is `D^-1/2 (A + I) D^-1/2` in CSR; both products are sparsegrad's differentiable
//! `mm`. Dropout masks come from burn's generator, seeded per run with `device.seed`; the model
//! is evaluated under `valid()` (no dropout, no autodiff graph).
//!
//! `cargo run --release --example gcn_cora [-- --seeds N] [--epochs E] [--png PATH] [--dataset
//! NAME] [--root DIR] [--device flex|wgpu]` (`--help`; `wgpu` with `--features wgpu`)
//! Ends with `test accuracy: mean XX.XX % +- X.XX over N seeds`; with `--png PATH`, writes the
//! loss and accuracy curves of the first seed there as a PNG.

#[path = "dataset/mod.rs"]
mod dataset;
#[path = "device/mod.rs"]
mod device;
#[path = "plot/mod.rs"]
mod plot;
use plot::Curves;
#[path = "progress/mod.rs"]
mod progress;

use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use clap::Parser;
use sparsegrad::nn::models::{Gcn, GcnConfig};
use sparsegrad::nn::{gcn_norm, Planetoid};
use sparsegrad::prelude::*;
use std::path::PathBuf;
use std::time::Instant;

/// A 2-layer GCN on a Planetoid graph (Kipf & Welling's settings), trained once per seed.
#[derive(Parser, Debug)]
#[command(long_about = None)]
struct Args {
    /// Training runs, with seeds 0 to N - 1.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    seeds: u64,
    /// Most epochs of a run (early stopping on the validation loss may end it sooner).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..))]
    epochs: u64,
    /// Where to write the loss and accuracy curves of seed 0 (PNG; none without it).
    #[arg(long)]
    png: Option<PathBuf>,
    #[command(flatten)]
    data: dataset::DatasetArgs,
    #[command(flatten)]
    device: device::DeviceArgs,
}

/// Kipf & Welling's model: 16 hidden units, dropout 0.5, no bias.
fn model(g: &Planetoid, device: &Device) -> Gcn {
    GcnConfig::new(g.num_features, g.num_classes).with_bias(false).init(device).expect("a valid configuration")
}

fn ids(v: &[usize], device: &Device) -> Tensor<1, Int> {
    Tensor::from_data(TensorData::new(v.iter().map(|&i| i as i64).collect::<Vec<_>>(), [v.len()]), (device, DType::I64))
}

struct Split {
    nodes: Tensor<1, Int>,
    labels: Tensor<1, Int>,
    n: usize,
}

fn split(g: &Planetoid, nodes: &[usize], device: &Device) -> Split {
    let labels: Vec<usize> = nodes.iter().map(|&i| g.labels[i]).collect();
    // Labels in the device's default Int dtype, the one `argmax` returns.
    let labels = Tensor::from_data(
        TensorData::new(labels.iter().map(|&l| l as i64).collect::<Vec<_>>(), [labels.len()]),
        device,
    );
    Split { nodes: ids(nodes, device), labels, n: nodes.len() }
}

/// Cross-entropy and accuracy of `logits` on a split.
fn evaluate(logits: &Tensor<2>, s: &Split, device: &Device) -> (Tensor<1>, f64) {
    let picked = logits.clone().select(0, s.nodes.clone());
    let loss = CrossEntropyLossConfig::new().init(device).forward(picked.clone(), s.labels.clone());
    let correct = picked.argmax(1).reshape([s.n]).equal(s.labels.clone()).int().sum().into_scalar::<i64>();
    (loss, correct as f64 / s.n as f64)
}

/// The graph on both devices: the autodiff one trains, the plain one evaluates `valid()` models.
struct Graph<'a> {
    g: &'a Planetoid,
    adj: SparseTensor<2>,
    x: SparseTensor<2>,
    adj_eval: SparseTensor<2>,
    x_eval: SparseTensor<2>,
}

fn run(seed: u64, epochs: u64, graph: &Graph, device: &Device, eval: &Device) -> (f64, Vec<f64>, Curves) {
    device.seed(seed);
    let g = graph.g;
    let mut model = model(g, device);
    let mut optim = AdamConfig::new().with_epsilon(1e-8).init();
    let train = split(g, &g.train, device);
    let (val, test) = (split(g, &g.val, eval), split(g, &g.test, eval));
    let mut curves = Curves::default();
    let mut step_ms = Vec::new();
    let progress = progress::Progress::new(epochs, format!("seed {seed:2}"));
    for epoch in 0..epochs {
        let t = Instant::now();
        let logits = model.forward_sparse(&graph.x, &graph.adj);
        let (loss, train_acc) = evaluate(&logits, &train, device);
        let w0 = model.layers[0].weight.val();
        let loss = loss + (w0.clone() * w0).sum() * (5e-4 / 2.0);
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(0.01, model, grads);
        step_ms.push(t.elapsed().as_secs_f64() * 1e3);
        let logits = model.valid().forward_sparse(&graph.x_eval, &graph.adj_eval);
        let (val_loss, val_acc) = evaluate(&logits, &val, eval);
        let val_loss = val_loss.into_scalar::<f32>() as f64;
        let train_loss = loss.into_scalar::<f32>() as f64;
        curves.train_loss.push(train_loss);
        curves.train_acc.push(train_acc);
        curves.val_acc.push(val_acc);
        progress.epoch(epoch + 1, || {
            format!("train loss {train_loss:.4}, val loss {val_loss:.4}, val acc {:5.1} %", val_acc * 100.0)
        });
        let window = &curves.val_loss[curves.val_loss.len().saturating_sub(10)..];
        let stop = epoch > 10 && val_loss > window.iter().sum::<f64>() / window.len() as f64;
        curves.val_loss.push(val_loss);
        if stop {
            break;
        }
    }
    progress.finish();
    let (_, test_acc) = evaluate(&model.valid().forward_sparse(&graph.x_eval, &graph.adj_eval), &test, eval);
    println!("seed {seed:2}: {} epochs, test accuracy {:.2} %", curves.val_loss.len(), test_acc * 100.0);
    (test_acc, step_ms, curves)
}

fn main() {
    let args = Args::parse();
    let eval = args.device.device().unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let g = args.data.load();
    println!(
        "{}: {} nodes, {} edges, {} features ({} stored), {} classes; split {} / {} / {}",
        args.data.dataset.title(),
        g.nodes,
        g.edges.len(),
        g.num_features,
        g.features.len(),
        g.num_classes,
        g.train.len(),
        g.val.len(),
        g.test.len()
    );
    let device = eval.clone().autodiff();
    let graph = Graph {
        g: &g,
        adj: gcn_norm(&g.edges, g.nodes, &device).expect("valid graph"),
        x: g.features_csr(&device),
        adj_eval: gcn_norm(&g.edges, g.nodes, &eval).expect("valid graph"),
        x_eval: g.features_csr(&eval),
    };
    let mut accs = Vec::new();
    let mut steps = Vec::new();
    for seed in 0..args.seeds {
        let (acc, ms, curves) = run(seed, args.epochs, &graph, &device, &eval);
        accs.push(acc * 100.0);
        steps.extend(ms);
        if let (0, Some(path)) = (seed, &args.png) {
            let title = format!("GCN on {}, seed 0: test accuracy {:.1} %", args.data.dataset.title(), acc * 100.0);
            plot::training_curves(path, &title, &curves, "seed 0");
        }
    }
    steps.sort_by(f64::total_cmp);
    let mean = accs.iter().sum::<f64>() / accs.len() as f64;
    let std = (accs.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / accs.len() as f64).sqrt();
    println!("median training step (forward, backward, Adam): {:.2} ms", steps[steps.len() / 2]);
    println!("test accuracy: mean {mean:.2} % +- {std:.2} over {} seeds", args.seeds);
}
