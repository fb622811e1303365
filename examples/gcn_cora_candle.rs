//! The 2-layer GCN of `gcn_cora` trained with candle through `sparsegrad::candle`, written as
//! candle users write a model: parameters in a `candle_nn::VarMap` created through a
//! `VarBuilder` (Glorot-uniform, as burn's `XavierUniform` in `GcnConv`), `candle_nn::AdamW`
//! with burn's Adam settings (betas 0.9 and 0.999, epsilon 1e-8, no decoupled weight decay:
//! Adam), `candle_nn::loss::cross_entropy` and `candle_nn::ops::dropout`. Cora with the
//! Planetoid split and Kipf & Welling's settings: 16 hidden units, dropout 0.5 on the stored
//! feature values and on the hidden layer, weight decay 5e-4 (an L2 term) on the first layer,
//! lr 0.01, 200 epochs, early stopping on the validation loss with window 10.
//!
//! The adjacency `D^-1/2 (A + I) D^-1/2` and the row-normalised features are built by the burn
//! loaders and moved to candle once with `sparsegrad::candle::from_burn`; both products are the
//! candle `mm` custom op, whose backward puts `Aᵀ G` on the weights. candle's CPU generator
//! cannot be seeded (candle refuses `set_seed` on the CPU), so the runs are not reproducible:
//! `--seeds` counts them.
//!
//! `cargo run --release --features candle --example gcn_cora_candle [-- --seeds N] [--epochs E]
//! [--png PATH]` (`--help`). Ends with `test accuracy: mean XX.XX % +- X.XX over N seeds`; with
//! `--png PATH`, writes the loss and accuracy curves of the first run there as a PNG.

#[path = "plot/mod.rs"]
mod plot;
use plot::Curves;
#[path = "progress/mod.rs"]
mod progress;

use clap::Parser;
use sparsegrad::candle::candle_core::{DType, Device, Result, Tensor, D};
use sparsegrad::candle::candle_nn::{
    self, init::Init, loss::cross_entropy, ops::dropout, Optimizer, VarBuilder, VarMap,
};
use sparsegrad::candle::{from_burn, mm, SparseTensor};
use sparsegrad::nn::{gcn_norm, Planetoid};
use std::path::PathBuf;
use std::time::Instant;

/// The GCN of gcn_cora in candle (candle-nn layers and optimiser, sparsegrad's candle `mm`).
#[derive(Parser, Debug)]
#[command(long_about = None)]
struct Args {
    /// Training runs (candle's CPU generator cannot be seeded: the runs differ).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    seeds: u64,
    /// Most epochs of a run (early stopping on the validation loss may end it sooner).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..))]
    epochs: u64,
    /// Where to write the loss and accuracy curves of run 0 (PNG; none without it).
    #[arg(long)]
    png: Option<PathBuf>,
}

/// Glorot-uniform `[fan_in, fan_out]` (burn's `XavierUniform` with gain 1).
fn glorot(fan_in: usize, fan_out: usize) -> Init {
    let limit = (6.0 / (fan_in + fan_out) as f64).sqrt();
    Init::Uniform { lo: -limit, up: limit }
}

struct Gcn {
    w0: Tensor,
    w1: Tensor,
}

impl Gcn {
    fn new(vb: VarBuilder, features: usize, classes: usize) -> Result<Self> {
        let w0 = vb.pp("l0").get_with_hints((features, 16), "weight", glorot(features, 16))?;
        let w1 = vb.pp("l1").get_with_hints((16, classes), "weight", glorot(16, classes))?;
        Ok(Self { w0, w1 })
    }

    /// Logits `[nodes, classes]`; while training, dropout on the features' stored values and
    /// on the hidden layer.
    fn forward(&self, x: &SparseTensor, adj: &SparseTensor, train: bool) -> Result<Tensor> {
        let x = if train {
            x.with_values(dropout(x.values(), 0.5)?).map_err(sparsegrad::candle::candle_core::Error::wrap)?
        } else {
            x.clone()
        };
        let h = mm(adj, &mm(&x, &self.w0)?)?.relu()?;
        let h = if train { dropout(&h, 0.5)? } else { h };
        mm(adj, &h.matmul(&self.w1)?)
    }
}

struct Split {
    nodes: Tensor,
    labels: Tensor,
}

fn split(g: &Planetoid, nodes: &[usize]) -> Result<Split> {
    let ids: Vec<u32> = nodes.iter().map(|&i| i as u32).collect();
    let labels: Vec<u32> = nodes.iter().map(|&i| g.labels[i] as u32).collect();
    Ok(Split {
        nodes: Tensor::from_vec(ids, nodes.len(), &Device::Cpu)?,
        labels: Tensor::from_vec(labels, nodes.len(), &Device::Cpu)?,
    })
}

/// Cross-entropy (mean over the split) and accuracy of `logits` on a split.
fn evaluate(logits: &Tensor, s: &Split) -> Result<(Tensor, f64)> {
    let picked = logits.index_select(&s.nodes, 0)?;
    let loss = cross_entropy(&picked, &s.labels)?;
    let correct = picked.argmax(D::Minus1)?.eq(&s.labels)?.to_dtype(DType::F64)?.mean_all()?.to_scalar::<f64>()?;
    Ok((loss, correct))
}

fn run(run: u64, epochs: u64, g: &Planetoid, adj: &SparseTensor, x: &SparseTensor) -> Result<(f64, Vec<f64>, Curves)> {
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
    let model = Gcn::new(vb, g.num_features, g.num_classes)?;
    let params = candle_nn::ParamsAdamW { lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.0 };
    let mut adam = candle_nn::AdamW::new(varmap.all_vars(), params)?;
    let (train, val, test) = (split(g, &g.train)?, split(g, &g.val)?, split(g, &g.test)?);
    let mut curves = Curves::default();
    let mut step_ms = Vec::new();
    let progress = progress::Progress::new(epochs, format!("run {run:2}"));
    for epoch in 0..epochs {
        let t = Instant::now();
        let (loss, train_acc) = evaluate(&model.forward(x, adj, true)?, &train)?;
        let loss = (loss + (model.w0.sqr()?.sum_all()? * (5e-4 / 2.0))?)?;
        adam.backward_step(&loss)?;
        step_ms.push(t.elapsed().as_secs_f64() * 1e3);
        let (val_loss, val_acc) = evaluate(&model.forward(x, adj, false)?, &val)?;
        let val_loss = val_loss.to_scalar::<f32>()? as f64;
        let train_loss = loss.to_scalar::<f32>()? as f64;
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
    let (_, test_acc) = evaluate(&model.forward(x, adj, false)?, &test)?;
    println!("run {run:2}: {} epochs, test accuracy {:.2} %", curves.val_loss.len(), test_acc * 100.0);
    Ok((test_acc, step_ms, curves))
}

fn main() -> Result<()> {
    let args = Args::parse();
    let g = Planetoid::new(None, "Cora").unwrap_or_else(|e| {
        eprintln!("cannot load Cora: {e}");
        std::process::exit(2)
    });
    println!(
        "Cora: {} nodes, {} edges, {} features ({} stored), {} classes",
        g.nodes,
        g.edges.len(),
        g.num_features,
        g.features.len(),
        g.num_classes
    );
    // The loaders build burn tensors; the library moves their CSR arrays to candle once.
    let burn_device = burn::tensor::Device::flex();
    let wrap = sparsegrad::candle::candle_core::Error::wrap;
    let adj =
        from_burn(&gcn_norm(&g.edges, g.nodes, &burn_device).expect("valid graph"), &Device::Cpu).map_err(wrap)?;
    let x = from_burn(&g.features_csr(&burn_device), &Device::Cpu).map_err(wrap)?;
    let mut accs = Vec::new();
    let mut steps = Vec::new();
    for r in 0..args.seeds {
        let (acc, ms, curves) = run(r, args.epochs, &g, &adj, &x)?;
        accs.push(acc * 100.0);
        steps.extend(ms);
        if let (0, Some(path)) = (r, &args.png) {
            let title = format!("GCN in candle on Cora, run 0: test accuracy {:.1} %", acc * 100.0);
            plot::training_curves(path, &title, &curves, "run 0");
        }
    }
    steps.sort_by(f64::total_cmp);
    let mean = accs.iter().sum::<f64>() / accs.len() as f64;
    let std = (accs.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / accs.len() as f64).sqrt();
    println!("median training step (forward, backward, Adam): {:.2} ms", steps[steps.len() / 2]);
    println!("test accuracy: mean {mean:.2} % +- {std:.2} over {} seeds", args.seeds);
    Ok(())
}
