//! A 2-layer GCN on Cora with the Planetoid split and Kipf & Welling's settings: 16 hidden
//! units, dropout 0.5 (on the sparse bag-of-words features: on their stored values), weight
//! decay 5e-4 on the first layer, Adam with lr 0.01, 200 epochs, early stopping on the
//! validation loss (window 10). Features stay sparse (CSR, row-normalised); the adjacency is
//! `D^-1/2 (A + I) D^-1/2` in CSR; both products are sparsegrad's differentiable `mm`.
//!
//! `cargo run --release --example gcn_cora [-- --seeds N] [--epochs E] [--png PATH]`
//! Ends with `test accuracy: mean XX.XX % +- X.XX over N seeds` and writes the loss and
//! accuracy curves of the first seed as a PNG (default `gcn_cora_curves.png`).

#[path = "plot/mod.rs"]
mod plot;

use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{activation::relu, DType, Device, Int, Tensor, TensorData};
use sparsegrad::nn::{dense_dropout, gcn_norm, sparse_dropout, GcnConv, GcnConvConfig, MaskRng, Planetoid};
use sparsegrad::prelude::*;
use std::io::Write;
use std::time::Instant;

#[derive(Module, Debug)]
struct Gcn {
    l0: GcnConv,
    l1: GcnConv,
}

impl Gcn {
    fn forward(&self, adj: &SparseTensor<2>, x: &SparseTensor<2>, train: Option<&mut MaskRng>) -> Tensor<2> {
        match train {
            Some(rng) => {
                let h = relu(self.l0.forward_sparse(adj, &sparse_dropout(x, 0.5, rng)));
                self.l1.forward(adj, dense_dropout(h, 0.5, rng))
            }
            None => self.l1.forward(adj, relu(self.l0.forward_sparse(adj, x))),
        }
    }
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

struct Curves {
    train_loss: Vec<f64>,
    val_loss: Vec<f64>,
    train_acc: Vec<f64>,
    val_acc: Vec<f64>,
}

fn run(
    seed: u64,
    epochs: usize,
    g: &Planetoid,
    adj: &SparseTensor<2>,
    x: &SparseTensor<2>,
    device: &Device,
) -> (f64, Vec<f64>, Curves) {
    device.seed(seed);
    let mut model = Gcn {
        l0: GcnConvConfig::new(g.num_features, 16).init(device),
        l1: GcnConvConfig::new(16, g.num_classes).init(device),
    };
    let mut optim = AdamConfig::new().with_epsilon(1e-8).init();
    let mut rng = MaskRng::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1CE);
    let (train, val, test) = (split(g, &g.train, device), split(g, &g.val, device), split(g, &g.test, device));
    let mut curves = Curves { train_loss: vec![], val_loss: vec![], train_acc: vec![], val_acc: vec![] };
    let mut step_ms = Vec::new();
    // The progress bar redraws one line: only on a terminal, not in logs.
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    for epoch in 0..epochs {
        let t = Instant::now();
        let logits = model.forward(adj, x, Some(&mut rng));
        let (loss, train_acc) = evaluate(&logits, &train, device);
        let w0 = model.l0.weight.val();
        let loss = loss + (w0.clone() * w0).sum() * (5e-4 / 2.0);
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(0.01, model, grads);
        step_ms.push(t.elapsed().as_secs_f64() * 1e3);
        let logits = model.forward(adj, x, None);
        let (val_loss, val_acc) = evaluate(&logits, &val, device);
        let val_loss = val_loss.into_scalar::<f32>() as f64;
        curves.train_loss.push(loss.into_scalar::<f32>() as f64);
        curves.train_acc.push(train_acc);
        curves.val_acc.push(val_acc);
        let bar = (epoch + 1) * 30 / epochs;
        if tty {
            eprint!(
                "\rseed {seed:2} [{}{}] {:3}/{epochs} val loss {val_loss:.4} val acc {:5.1} %",
                "#".repeat(bar),
                ".".repeat(30 - bar),
                epoch + 1,
                val_acc * 100.0
            );
            let _ = std::io::stderr().flush();
        }
        let window = &curves.val_loss[curves.val_loss.len().saturating_sub(10)..];
        let stop = epoch > 10 && val_loss > window.iter().sum::<f64>() / window.len() as f64;
        curves.val_loss.push(val_loss);
        if stop {
            break;
        }
    }
    let (_, test_acc) = evaluate(&model.forward(adj, x, None), &test, device);
    eprintln!(
        "{}seed {seed:2}: {} epochs, test accuracy {:.2} %",
        if tty { "\n" } else { "" },
        curves.val_loss.len(),
        test_acc * 100.0
    );
    (test_acc, step_ms, curves)
}

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let seeds: u64 = arg(&args, "--seeds", 10);
    let epochs: usize = arg(&args, "--epochs", 200);
    let png: String = arg(&args, "--png", "gcn_cora_curves.png".to_string());
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/cora");
    let g = Planetoid::load(&data, "cora").expect("data/cora holds the Planetoid export of Cora");
    println!(
        "Cora: {} nodes, {} edges, {} features ({} stored), {} classes; split {} / {} / {}",
        g.nodes,
        g.edges.len(),
        g.num_features,
        g.features.len(),
        g.num_classes,
        g.train.len(),
        g.val.len(),
        g.test.len()
    );
    let device = Device::flex().autodiff();
    let adj = gcn_norm(&g.edges, g.nodes, &device).expect("valid graph");
    let x = g.features_csr(&device);
    let mut accs = Vec::new();
    let mut steps = Vec::new();
    for seed in 0..seeds {
        let (acc, ms, curves) = run(seed, epochs, &g, &adj, &x, &device);
        accs.push(acc * 100.0);
        steps.extend(ms);
        if seed == 0 {
            let mut canvas = plot::Canvas::new(900, 360);
            canvas.panel(
                (30, 20, 400, 310),
                &[
                    plot::Series { values: &curves.train_loss, rgb: [200, 40, 40] },
                    plot::Series { values: &curves.val_loss, rgb: [40, 40, 200] },
                ],
            );
            canvas.panel(
                (470, 20, 400, 310),
                &[
                    plot::Series { values: &curves.train_acc, rgb: [200, 40, 40] },
                    plot::Series { values: &curves.val_acc, rgb: [40, 40, 200] },
                ],
            );
            match canvas.save_png(std::path::Path::new(&png)) {
                Ok(()) => println!("curves of seed 0 (left: loss, right: accuracy; red train, blue validation): {png}"),
                Err(e) => eprintln!("could not write {png}: {e}"),
            }
        }
    }
    steps.sort_by(f64::total_cmp);
    let mean = accs.iter().sum::<f64>() / accs.len() as f64;
    let std = (accs.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / accs.len() as f64).sqrt();
    println!("median training step (forward, backward, Adam): {:.2} ms", steps[steps.len() / 2]);
    println!("test accuracy: mean {mean:.2} % +- {std:.2} over {seeds} seeds");
}
