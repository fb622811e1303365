//! GAT on Cora with the paper's settings (Veličković et al. 2018): 8 heads x 8 hidden units with
//! ELU, one output head, dropout 0.6 on the inputs and on the attention coefficients, Adam with
//! lr 0.005 and weight decay 5e-4, early stopping with patience 100 on the validation loss (the
//! model with the best validation loss is the one tested). Attention runs on the sparse
//! adjacency: SDDMM scores, sparse softmax, sparse mm.
//!
//! `cargo run --release --example gat_cora [-- --seeds N] [--epochs E]`
//! Ends with `test accuracy: mean XX.XX % +- X.XX over N seeds`.

use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{activation::elu, DType, Device, Int, Tensor, TensorData};
use sparsegrad::nn::{
    adjacency_with_self_loops, dense_dropout, sparse_dropout, GatConv, GatConvConfig, MaskRng, Planetoid,
};
use sparsegrad::prelude::*;
use std::io::Write;

#[derive(Module, Debug)]
struct Gat {
    l0: GatConv,
    l1: GatConv,
}

impl Gat {
    fn forward(&self, adj: &SparseTensor<2>, x: &SparseTensor<2>, mut rng: Option<&mut MaskRng>) -> Tensor<2> {
        let p = 0.6;
        let x = match rng.as_mut() {
            Some(r) => sparse_dropout(x, p, r),
            None => x.clone(),
        };
        let h = elu(self.l0.forward_sparse(adj, &x, rng.as_mut().map(|r| (p, &mut **r))), 1.0);
        let h = match rng.as_mut() {
            Some(r) => dense_dropout(h, p, r),
            None => h,
        };
        self.l1.forward(adj, h, rng.map(|r| (p, r)))
    }
}

fn ids(v: &[usize], device: &Device, dtype: Option<DType>) -> Tensor<1, Int> {
    let data = TensorData::new(v.iter().map(|&i| i as i64).collect::<Vec<_>>(), [v.len()]);
    match dtype {
        Some(d) => Tensor::from_data(data, (device, d)),
        None => Tensor::from_data(data, device),
    }
}

/// Loss and accuracy on the nodes `nodes` with labels `labels` (default Int dtype, as argmax).
fn evaluate(logits: &Tensor<2>, nodes: &Tensor<1, Int>, labels: &Tensor<1, Int>, device: &Device) -> (Tensor<1>, f64) {
    let picked = logits.clone().select(0, nodes.clone());
    let n = labels.dims()[0];
    let loss = CrossEntropyLossConfig::new().init(device).forward(picked.clone(), labels.clone());
    let correct = picked.argmax(1).reshape([n]).equal(labels.clone()).int().sum().into_scalar::<i64>();
    (loss, correct as f64 / n as f64)
}

fn l2(model: &Gat) -> Tensor<1> {
    let sq = |t: Tensor<2>| (t.clone() * t).sum();
    sq(model.l0.weight.val())
        + sq(model.l0.att_src.val())
        + sq(model.l0.att_dst.val())
        + sq(model.l1.weight.val())
        + sq(model.l1.att_src.val())
        + sq(model.l1.att_dst.val())
}

fn run(seed: u64, epochs: usize, g: &Planetoid, adj: &SparseTensor<2>, x: &SparseTensor<2>, device: &Device) -> f64 {
    device.seed(seed);
    let mut model = Gat {
        l0: GatConvConfig::new(g.num_features, 8).with_heads(8).init(device),
        l1: GatConvConfig::new(64, g.num_classes).with_heads(1).with_concat(false).init(device),
    };
    let mut optim = AdamConfig::new().with_epsilon(1e-8).init();
    let mut rng = MaskRng::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x6A7);
    let split = |nodes: &[usize]| {
        (
            ids(nodes, device, Some(DType::I64)),
            ids(&nodes.iter().map(|&i| g.labels[i]).collect::<Vec<_>>(), device, None),
        )
    };
    let ((tr_n, tr_l), (va_n, va_l), (te_n, te_l)) = (split(&g.train), split(&g.val), split(&g.test));
    let (mut best, mut best_model, mut waited) = (f64::INFINITY, model.clone(), 0);
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut epoch = 0;
    while epoch < epochs && waited < 100 {
        let logits = model.forward(adj, x, Some(&mut rng));
        let (loss, _) = evaluate(&logits, &tr_n, &tr_l, device);
        let loss = loss + l2(&model) * (5e-4 / 2.0);
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(0.005, model, grads);
        let (val_loss, val_acc) = evaluate(&model.forward(adj, x, None), &va_n, &va_l, device);
        let val_loss = val_loss.into_scalar::<f32>() as f64;
        if val_loss < best {
            (best, best_model, waited) = (val_loss, model.clone(), 0);
        } else {
            waited += 1;
        }
        epoch += 1;
        if tty {
            eprint!("\rseed {seed:2} epoch {epoch:4} val loss {val_loss:.4} val acc {:5.1} % (best {best:.4}, waited {waited:3})", val_acc * 100.0);
            let _ = std::io::stderr().flush();
        }
    }
    let (_, test_acc) = evaluate(&best_model.forward(adj, x, None), &te_n, &te_l, device);
    eprintln!("{}seed {seed:2}: {epoch} epochs, test accuracy {:.2} %", if tty { "\n" } else { "" }, test_acc * 100.0);
    test_acc
}

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let seeds: u64 = arg(&args, "--seeds", 10);
    let epochs: usize = arg(&args, "--epochs", 1000);
    let g = Planetoid::load(concat!(env!("CARGO_MANIFEST_DIR"), "/data/cora"), "cora").expect("data/cora");
    let device = Device::flex().autodiff();
    let adj = adjacency_with_self_loops(&g.edges, g.nodes, &device).expect("valid graph");
    let x = g.features_csr(&device);
    let accs: Vec<f64> = (0..seeds).map(|s| run(s, epochs, &g, &adj, &x, &device) * 100.0).collect();
    let mean = accs.iter().sum::<f64>() / accs.len() as f64;
    let std = (accs.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / accs.len() as f64).sqrt();
    println!("test accuracy: mean {mean:.2} % +- {std:.2} over {seeds} seeds");
}
