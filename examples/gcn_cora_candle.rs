//! The 2-layer GCN of `gcn_cora` trained with candle through `sparsegrad::candle`: Cora with the
//! Planetoid split and Kipf & Welling's settings (16 hidden units, dropout 0.5 on the stored
//! feature values and on the hidden layer, weight decay 5e-4 on the first layer, Adam with lr
//! 0.01, 200 epochs, early stopping on the validation loss with window 10). The adjacency
//! `D^-1/2 (A + I) D^-1/2` and the row-normalised features are CSR tensors for candle; both
//! products are the candle `mm` custom op, whose backward puts `Aᵀ G` on the weights. Adam is
//! written out on candle `Var`s (candle-nn would add a dependency for a dozen lines).
//!
//! `cargo run --release --features candle --example gcn_cora_candle [-- --seeds N] [--epochs E]`
//! Ends with `test accuracy: mean XX.XX % +- X.XX over N seeds`.

use sparsegrad::candle::candle_core::{DType, Device, Result, Tensor, Var, D};
use sparsegrad::candle::{mm, SparseTensor as CandleSparse};
use sparsegrad::nn::{gcn_norm, MaskRng, Planetoid};
use sparsegrad::SparseTensor;
use std::io::Write;
use std::time::Instant;

/// A burn CSR matrix (as the loaders and `gcn_norm` build it) moved to candle.
fn to_candle(s: &SparseTensor<2>) -> Result<CandleSparse> {
    let ints = |t: burn::tensor::Tensor<1, burn::tensor::Int>| t.into_data().iter::<i64>().collect::<Vec<_>>();
    let crow = ints(s.crow_indices::<1>().expect("CSR"));
    let col = ints(s.col_indices::<1>().expect("CSR"));
    let values: Vec<f32> = s.values_flat().into_data().iter::<f32>().collect();
    let dev = Device::Cpu;
    let (n, nnz) = (crow.len(), col.len());
    let t = CandleSparse::csr(
        &Tensor::from_vec(crow, n, &dev)?,
        &Tensor::from_vec(col, nnz, &dev)?,
        Tensor::from_vec(values, nnz, &dev)?,
        s.shape(),
    );
    t.map_err(sparsegrad::candle::candle_core::Error::wrap)
}

/// Glorot-uniform `[fan_in, fan_out]` (as burn's `XavierUniform`, which `GcnConv` uses).
fn glorot(fan_in: usize, fan_out: usize, rng: &mut MaskRng) -> Result<Var> {
    let limit = (6.0 / (fan_in + fan_out) as f64).sqrt();
    let w: Vec<f32> = (0..fan_in * fan_out).map(|_| ((2.0 * rng.next_unit() - 1.0) * limit) as f32).collect();
    Var::from_vec(w, (fan_in, fan_out), &Device::Cpu)
}

/// Inverted dropout of `x` with a keep mask from `rng`.
fn dropout(x: &Tensor, p: f64, rng: &mut MaskRng) -> Result<Tensor> {
    let mask = Tensor::from_vec(rng.keep_mask(x.elem_count(), p), x.shape(), x.device())?;
    x * mask
}

struct Gcn {
    w0: Var,
    w1: Var,
}

impl Gcn {
    /// Logits `[nodes, classes]`; with a mask stream, dropout on the features' stored values
    /// and on the hidden layer.
    fn forward(&self, adj: &CandleSparse, x: &CandleSparse, train: Option<&mut MaskRng>) -> Result<Tensor> {
        match train {
            Some(rng) => {
                let x = x
                    .with_values(dropout(x.values(), 0.5, rng)?)
                    .map_err(sparsegrad::candle::candle_core::Error::wrap)?;
                let h = mm(adj, &mm(&x, self.w0.as_tensor())?)?.relu()?;
                mm(adj, &dropout(&h, 0.5, rng)?.matmul(self.w1.as_tensor())?)
            }
            None => {
                let h = mm(adj, &mm(x, self.w0.as_tensor())?)?.relu()?;
                mm(adj, &h.matmul(self.w1.as_tensor())?)
            }
        }
    }
}

/// Adam (Kingma & Ba, burn's defaults: betas 0.9 and 0.999, epsilon 1e-8) on candle `Var`s.
struct Adam {
    lr: f64,
    step: i32,
    moments: Vec<(Var, Tensor, Tensor)>,
}

impl Adam {
    fn new(lr: f64, params: &[&Var]) -> Result<Self> {
        let moments =
            params.iter().map(|p| Ok(((*p).clone(), p.zeros_like()?, p.zeros_like()?))).collect::<Result<_>>()?;
        Ok(Self { lr, step: 0, moments })
    }

    fn step(&mut self, grads: &sparsegrad::candle::candle_core::backprop::GradStore) -> Result<()> {
        const B1: f64 = 0.9;
        const B2: f64 = 0.999;
        self.step += 1;
        let (c1, c2) = (1.0 - B1.powi(self.step), 1.0 - B2.powi(self.step));
        for (p, m, v) in self.moments.iter_mut() {
            let Some(g) = grads.get(p) else { continue };
            *m = ((&*m * B1)? + (g * (1.0 - B1))?)?;
            *v = ((&*v * B2)? + (g.sqr()? * (1.0 - B2))?)?;
            let update = ((&*m / c1)? / ((&*v / c2)?.sqrt()? + 1e-8)?)?;
            p.set(&(p.as_tensor() - (update * self.lr)?)?)?;
        }
        Ok(())
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
    let log_probs = picked.broadcast_sub(&picked.log_sum_exp(D::Minus1)?.unsqueeze(1)?)?;
    let loss = log_probs.gather(&s.labels.unsqueeze(1)?, 1)?.mean_all()?.neg()?;
    let correct = picked.argmax(D::Minus1)?.eq(&s.labels)?.to_dtype(DType::F64)?.mean_all()?.to_scalar::<f64>()?;
    Ok((loss, correct))
}

fn run(
    seed: u64,
    epochs: usize,
    g: &Planetoid,
    adj: &CandleSparse,
    x: &CandleSparse,
) -> Result<(f64, usize, Vec<f64>)> {
    let mut init = MaskRng::new(seed);
    let model = Gcn { w0: glorot(g.num_features, 16, &mut init)?, w1: glorot(16, g.num_classes, &mut init)? };
    let mut adam = Adam::new(0.01, &[&model.w0, &model.w1])?;
    let mut rng = MaskRng::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1CE);
    let (train, val, test) = (split(g, &g.train)?, split(g, &g.val)?, split(g, &g.test)?);
    let mut val_losses: Vec<f64> = Vec::new();
    let mut step_ms = Vec::new();
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    for epoch in 0..epochs {
        let t = Instant::now();
        let logits = model.forward(adj, x, Some(&mut rng))?;
        let (loss, _) = evaluate(&logits, &train)?;
        let loss = (loss + (model.w0.as_tensor().sqr()?.sum_all()? * (5e-4 / 2.0))?)?;
        adam.step(&loss.backward()?)?;
        step_ms.push(t.elapsed().as_secs_f64() * 1e3);
        let (val_loss, val_acc) = evaluate(&model.forward(adj, x, None)?, &val)?;
        let val_loss = val_loss.to_scalar::<f32>()? as f64;
        if tty {
            let bar = (epoch + 1) * 30 / epochs;
            eprint!(
                "\rseed {seed:2} [{}{}] {:3}/{epochs} val loss {val_loss:.4} val acc {:5.1} %",
                "#".repeat(bar),
                ".".repeat(30 - bar),
                epoch + 1,
                val_acc * 100.0
            );
            let _ = std::io::stderr().flush();
        }
        let window = &val_losses[val_losses.len().saturating_sub(10)..];
        let stop = epoch > 10 && val_loss > window.iter().sum::<f64>() / window.len() as f64;
        val_losses.push(val_loss);
        if stop {
            break;
        }
    }
    let (_, test_acc) = evaluate(&model.forward(adj, x, None)?, &test)?;
    eprintln!(
        "{}seed {seed:2}: {} epochs, test accuracy {:.2} %",
        if tty { "\n" } else { "" },
        val_losses.len(),
        test_acc * 100.0
    );
    Ok((test_acc, val_losses.len(), step_ms))
}

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let seeds: u64 = arg(&args, "--seeds", 10);
    let epochs: usize = arg(&args, "--epochs", 200);
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/cora");
    let g = Planetoid::load(&data, "cora").expect("data/cora holds the Planetoid export of Cora");
    println!(
        "Cora: {} nodes, {} edges, {} features ({} stored), {} classes",
        g.nodes,
        g.edges.len(),
        g.num_features,
        g.features.len(),
        g.num_classes
    );
    // The loaders build burn tensors; their CSR arrays move to candle once.
    let burn_device = burn::tensor::Device::flex();
    let adj = to_candle(&gcn_norm(&g.edges, g.nodes, &burn_device).expect("valid graph"))?;
    let x = to_candle(&g.features_csr(&burn_device))?;
    let mut accs = Vec::new();
    let mut steps = Vec::new();
    for seed in 0..seeds {
        let (acc, _, ms) = run(seed, epochs, &g, &adj, &x)?;
        accs.push(acc * 100.0);
        steps.extend(ms);
    }
    steps.sort_by(f64::total_cmp);
    let mean = accs.iter().sum::<f64>() / accs.len() as f64;
    let std = (accs.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / accs.len() as f64).sqrt();
    println!("median training step (forward, backward, Adam): {:.2} ms", steps[steps.len() / 2]);
    println!("test accuracy: mean {mean:.2} % +- {std:.2} over {seeds} seeds");
    Ok(())
}
