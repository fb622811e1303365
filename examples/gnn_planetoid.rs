//! GraphSAGE and APPNP on a Planetoid graph (Cora by default, `--dataset cora|citeseer|pubmed`,
//! `--root DIR`), full batch, with the Planetoid split and PyG's example settings:
//!
//! - `--model sage`: two `SageConv` layers with mean aggregation and a root weight (1433 -> 64
//!   -> classes), ReLU, dropout 0.5 on the inputs (their stored values) and the hidden layer,
//!   Adam lr 0.01, weight decay 5e-4 on every weight; the first layer runs on the sparse
//!   features (`SageConv::forward_sparse`: the mean commutes with the weight);
//! - `--model appnp`: an MLP (-> 64 -> classes, ReLU, dropout 0.5 on the inputs and the hidden
//!   layer) whose logits propagate `K = 10` steps of personalised PageRank with teleport
//!   `alpha = 0.1` over `D^-1/2 (A + I) D^-1/2` (`AppnpPropagation`), Adam lr 0.01, weight
//!   decay 5e-3 on the first layer (Klicpera et al. 2019).
//!
//! Features are row-normalised and stay sparse. Every run keeps the model of the best
//! validation loss and stops after `--patience` epochs without a better one; that model is
//! tested. Dropout masks come from burn's generator, seeded per run with `device.seed`.
//!
//! `cargo run --release --example gnn_planetoid [-- --model sage|appnp] [--seeds N] [--epochs E]
//! [--patience P] [--dataset NAME] [--root DIR] [--png PATH]` (`--help`). Ends with `test
//! accuracy: mean XX.XX % +- X.XX over N seeds`; with `--png PATH`, writes the loss and accuracy
//! curves of the first seed there as a PNG.

#[path = "dataset/mod.rs"]
mod dataset;
#[path = "plot/mod.rs"]
mod plot;
use plot::Curves;
#[path = "progress/mod.rs"]
mod progress;

use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Dropout, DropoutConfig, Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{activation::relu, DType, Device, Int, Tensor, TensorData};
use clap::{Parser, ValueEnum};
use sparsegrad::nn::{
    gcn_norm, to_propagation_matrix, Aggregation, AppnpPropagation, AppnpPropagationConfig, Planetoid, SageConv,
    SageConvConfig, SparseDropout, SparseDropoutConfig,
};
use sparsegrad::prelude::*;
use sparsegrad::sparse::mm;
use std::path::PathBuf;

/// GraphSAGE or APPNP on a Planetoid graph, trained once per seed.
#[derive(Parser, Debug)]
#[command(long_about = None)]
struct Args {
    /// The model.
    #[arg(long, value_enum, default_value = "sage")]
    model: Which,
    /// Training runs, with seeds 0 to N - 1.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    seeds: u64,
    /// Most epochs of a run.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    epochs: u64,
    /// Epochs without a better validation loss before a run stops.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    patience: u64,
    /// Where to write the loss and accuracy curves of seed 0 (PNG; none without it).
    #[arg(long)]
    png: Option<PathBuf>,
    #[command(flatten)]
    data: dataset::DatasetArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Which {
    /// GraphSAGE, mean aggregation.
    Sage,
    /// APPNP (MLP, then personalised PageRank).
    Appnp,
}

const HIDDEN: usize = 64;

#[derive(Module, Debug)]
struct Sage {
    l0: SageConv,
    l1: SageConv,
}

#[derive(Module, Debug)]
struct Appnp {
    l0: Linear,
    l1: Linear,
    propagation: AppnpPropagation,
}

// One model per run: the size of the variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Module, Debug)]
enum Net {
    Sage(Sage),
    Appnp(Appnp),
}

#[derive(Module, Debug)]
struct Model {
    net: Net,
    input_dropout: SparseDropout,
    dropout: Dropout,
}

/// The matrices a model multiplies: the unit propagation matrix (SAGE) and the normalised
/// adjacency with self loops (APPNP).
struct Graph {
    propagation: SparseTensor<2>,
    normalised: SparseTensor<2>,
    x: SparseTensor<2>,
}

impl Graph {
    fn new(g: &Planetoid, device: &Device) -> Graph {
        let (sources, targets): (Vec<i64>, Vec<i64>) =
            g.edges.iter().flat_map(|&(u, v)| [(u as i64, v as i64), (v as i64, u as i64)]).unzip();
        let e = sources.len();
        let edge_index =
            Tensor::<2, Int>::from_data(TensorData::new([sources, targets].concat(), [2, e]), (device, DType::I64));
        Graph {
            propagation: to_propagation_matrix(&edge_index, None, g.nodes).expect("a valid graph"),
            normalised: gcn_norm(&g.edges, g.nodes, device).expect("a valid graph"),
            x: g.features_csr(device),
        }
    }
}

impl Model {
    fn new(which: Which, g: &Planetoid, device: &Device) -> Model {
        let net = match which {
            Which::Sage => Net::Sage(Sage {
                l0: SageConvConfig::new(g.num_features, HIDDEN).with_aggr(Aggregation::Mean).init(device),
                l1: SageConvConfig::new(HIDDEN, g.num_classes).with_aggr(Aggregation::Mean).init(device),
            }),
            Which::Appnp => Net::Appnp(Appnp {
                l0: LinearConfig::new(g.num_features, HIDDEN).init(device),
                l1: LinearConfig::new(HIDDEN, g.num_classes).init(device),
                propagation: AppnpPropagationConfig::new(10, 0.1).init(),
            }),
        };
        Model { net, input_dropout: SparseDropoutConfig::new(0.5).init(), dropout: DropoutConfig::new(0.5).init() }
    }

    /// Logits `[nodes, classes]`; dropout acts on an autodiff device only.
    fn forward(&self, graph: &Graph) -> Tensor<2> {
        let x = self.input_dropout.forward(&graph.x);
        match &self.net {
            Net::Sage(m) => {
                let h = m.l0.forward_sparse(&x, &graph.propagation).expect("mean aggregation commutes");
                m.l1.forward(self.dropout.forward(relu(h)), &graph.propagation)
            }
            Net::Appnp(m) => {
                let h = mm(&x, m.l0.weight.val()) + m.l0.bias.as_ref().expect("a bias").val().unsqueeze();
                let logits = m.l1.forward(self.dropout.forward(relu(h)));
                m.propagation.forward(logits, &graph.normalised)
            }
        }
    }

    /// The weight-decay term: 5e-4 / 2 on every SAGE weight, 5e-3 / 2 on APPNP's first layer.
    fn penalty(&self) -> Tensor<1> {
        let sq = |t: Tensor<2>| (t.clone() * t).sum();
        match &self.net {
            Net::Sage(m) => {
                let mut s = sq(m.l0.lin_l.weight.val()) + sq(m.l1.lin_l.weight.val());
                for r in [&m.l0.lin_r, &m.l1.lin_r].into_iter().flatten() {
                    s = s + sq(r.weight.val());
                }
                s * (5e-4 / 2.0)
            }
            Net::Appnp(m) => sq(m.l0.weight.val()) * (5e-3 / 2.0),
        }
    }
}

fn split(g: &Planetoid, nodes: &[usize], device: &Device) -> (Tensor<1, Int>, Tensor<1, Int>) {
    let ids = nodes.iter().map(|&i| i as i64).collect::<Vec<_>>();
    let labels = nodes.iter().map(|&i| g.labels[i] as i64).collect::<Vec<_>>();
    (
        Tensor::from_data(TensorData::new(ids, [nodes.len()]), (device, DType::I64)),
        // Labels in the device's default Int dtype, the one `argmax` returns.
        Tensor::from_data(TensorData::new(labels, [nodes.len()]), device),
    )
}

fn evaluate(
    logits: &Tensor<2>,
    (nodes, labels): &(Tensor<1, Int>, Tensor<1, Int>),
    device: &Device,
) -> (Tensor<1>, f64) {
    let picked = logits.clone().select(0, nodes.clone());
    let n = labels.dims()[0];
    let loss = CrossEntropyLossConfig::new().init(device).forward(picked.clone(), labels.clone());
    let correct = picked.argmax(1).reshape([n]).equal(labels.clone()).int().sum().into_scalar::<i64>();
    (loss, correct as f64 / n as f64)
}

fn run(
    seed: u64,
    args: &Args,
    g: &Planetoid,
    train: &Graph,
    eval: &Graph,
    device: &Device,
    plain: &Device,
) -> (f64, Curves) {
    device.seed(seed);
    let mut model = Model::new(args.model, g, device);
    let mut optim = AdamConfig::new().with_epsilon(1e-8).init();
    let (tr, va, te) = (split(g, &g.train, device), split(g, &g.val, plain), split(g, &g.test, plain));
    let (mut best, mut best_model, mut waited, mut epoch) = (f64::INFINITY, model.valid(), 0, 0);
    let mut curves = Curves::default();
    let progress = progress::Progress::new(args.epochs, format!("seed {seed:2}"));
    while epoch < args.epochs && waited < args.patience {
        let (loss, train_acc) = evaluate(&model.forward(train), &tr, device);
        let loss = loss + model.penalty();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(0.01, model, grads);
        let valid = model.valid();
        let (val_loss, val_acc) = evaluate(&valid.forward(eval), &va, plain);
        let val_loss = val_loss.into_scalar::<f32>() as f64;
        curves.train_loss.push(loss.into_scalar::<f32>() as f64);
        curves.val_loss.push(val_loss);
        curves.train_acc.push(train_acc);
        curves.val_acc.push(val_acc);
        if val_loss < best {
            (best, best_model, waited) = (val_loss, valid, 0);
        } else {
            waited += 1;
        }
        epoch += 1;
        progress.epoch(epoch, || format!("val loss {val_loss:.4}, val acc {:5.1} % (best {best:.4})", val_acc * 100.0));
    }
    progress.finish();
    let (_, acc) = evaluate(&best_model.forward(eval), &te, plain);
    println!("seed {seed:2}: {epoch} epochs, test accuracy {:.2} %", acc * 100.0);
    (acc, curves)
}

fn main() {
    let args = Args::parse();
    let g = args.data.load();
    println!(
        "{:?} on {}: {} nodes, {} edges, {} features, {} classes; split {} / {} / {}",
        args.model,
        args.data.dataset.title(),
        g.nodes,
        g.edges.len(),
        g.num_features,
        g.num_classes,
        g.train.len(),
        g.val.len(),
        g.test.len()
    );
    let device = Device::flex().autodiff();
    let plain = Device::flex();
    let (train, eval) = (Graph::new(&g, &device), Graph::new(&g, &plain));
    let mut accs = Vec::new();
    for seed in 0..args.seeds {
        let (acc, curves) = run(seed, &args, &g, &train, &eval, &device, &plain);
        accs.push(acc * 100.0);
        if let (0, Some(path)) = (seed, &args.png) {
            let title = format!(
                "{:?} on {}, seed 0: test accuracy {:.1} %",
                args.model,
                args.data.dataset.title(),
                acc * 100.0
            );
            plot::training_curves(path, &title, &curves, "seed 0");
        }
    }
    let mean = accs.iter().sum::<f64>() / accs.len() as f64;
    let std = (accs.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / accs.len() as f64).sqrt();
    println!("test accuracy: mean {mean:.2} % +- {std:.2} over {} seeds", args.seeds);
}
