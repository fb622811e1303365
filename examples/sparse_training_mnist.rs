//! Sparse training methods side by side on MNIST: LeNet-300-100 (ReLU hidden layers 784-300-100,
//! a dense 10-way output layer), Adam (lr 3e-3, cosine decay to zero), mini-batches of 128,
//! inputs scaled to [0, 1], as `sparse_mlp_mnist`. The methods differ in how the hidden layers'
//! weights become sparse; the sparsity is that of the hidden layers' weights together (the same
//! in each layer for gmp; shared Erdős–Rényi for set and rigl, `--distribution`):
//!
//! - `dense`: `burn::nn::Linear`, the reference;
//! - `gmp`: gradual magnitude pruning (Zhu & Gupta) of fully stored `SparseLinear` layers, the
//!   cubic schedule from 0 to the target between the end of epoch 1 and 60 % of training, every
//!   100 steps;
//! - `set`: SET from scratch on RigL's schedule, as the RigL paper runs it (a random pattern;
//!   every 100 steps until 75 % of training, a cosine-decaying fraction from 30 % of the
//!   entries closest to zero replaced by random ones);
//! - `rigl`: RigL from scratch (the same schedule; the entries grow where the dense gradient,
//!   computed tile by tile, is largest);
//! - `srste`: SR-STE 2:4 from scratch (dense master weights, 2:4 forward, straight-through
//!   gradient with the sparse-refined decay), deployed as `SemiStructuredLinear` for the test.
//!   The first layer's groups of four take one pixel from each quarter of the image's rows
//!   (`--srste-groups interleaved`, a fixed input permutation, as channel permutations for N:M
//!   sparsity do): four neighbouring pixels are mostly all background or all stroke, and 2:4
//!   must drop two of them either way;
//! - `wanda`: one-shot pruning of the trained dense model by |W| x ||X_col|| per output row
//!   (1024 calibration images), 2:4 and unstructured at each sparsity, with magnitude pruning of
//!   the same model at the same pattern beside it; no retraining.
//!
//! `cargo run --release --example sparse_training_mnist [-- --method dense,gmp,set,rigl,srste,wanda]
//! [--sparsity 0.9,0.98] [--seeds 3] [--epochs 20] [--png PATH]` (`--help`). Ends with a table
//! (method, sparsity, test accuracy mean ± std over the seeds, parameter bytes, training time per
//! epoch); with `--png PATH`, a PNG of test accuracy against sparsity for every method there (the
//! README's figure is `--png docs/img/sparse_training_mnist.png`).

use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer};
use burn::tensor::{activation::relu, Device, Distribution, Int, Tensor, TensorData};
use clap::{Parser, ValueEnum};
use sparsegrad::nn::{
    erdos_renyi_densities, rewire_optimizer, DropSchedule, GradualMagnitudePruning, Mnist, MnistSplit, Rewiring, RigL,
    RigLConfig, SemiStructuredLinear, SetConfig, SparseLinear, SparseLinearConfig, SrsteLinear, SrsteLinearConfig,
    WandaCalibration,
};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

#[path = "plot/mod.rs"]
mod plot;
#[path = "progress/mod.rs"]
mod progress;

/// Sparse training methods on MNIST (LeNet-300-100).
#[derive(Parser, Debug)]
#[command(long_about = None)]
struct Args {
    /// Methods to run, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "dense,gmp,set,rigl,srste,wanda")]
    method: Vec<Method>,
    /// Sparsities of the hidden layers for gmp, set, rigl and unstructured wanda, comma-separated
    /// (srste and 2:4 wanda are 50 %).
    #[arg(long, value_delimiter = ',', default_value = "0.9,0.98", value_parser = fraction)]
    sparsity: Vec<f64>,
    /// Seeds per configuration (0, 1, ...).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    seeds: u64,
    /// Epochs of every training run.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    epochs: u64,
    /// Mini-batch size.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u64).range(1..))]
    batch: u64,
    /// How set and rigl share the stored weights between the hidden layers: `erk` (Erdős–Rényi,
    /// the papers' choice: the small layer denser) or `uniform` (the same density in each).
    #[arg(long, value_enum, default_value = "erk")]
    distribution: Spread,
    /// SR-STE's sparse-refined decay on the pruned master weights.
    #[arg(long, default_value_t = 2e-4)]
    srste_decay: f64,
    /// How SR-STE's first layer groups the pixels in fours: `interleaved` (group `g` holds
    /// pixels `g`, `g + 196`, `g + 392`, `g + 588`: one from each horizontal band of the image)
    /// or `contiguous` (four neighbours on a row).
    #[arg(long, value_enum, default_value = "interleaved")]
    srste_groups: Groups,
    /// Where to write test accuracy against sparsity (PNG; none without it).
    #[arg(long)]
    png: Option<PathBuf>,
}

/// A number in `[0, 1)`.
fn fraction(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..1.0).contains(&v) => Ok(v),
        Ok(v) => Err(format!("{v} is not in [0, 1)")),
        Err(e) => Err(e.to_string()),
    }
}

/// How the first 2:4 layer groups its inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Groups {
    /// One pixel from each quarter of the rows per group.
    Interleaved,
    /// Four neighbouring pixels per group.
    Contiguous,
}

/// How a from-scratch pattern's entries are shared between the hidden layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "lower")]
enum Spread {
    /// Erdős–Rényi: density proportional to (d_input + d_output) / (d_input d_output).
    Erk,
    /// The same density in every hidden layer.
    Uniform,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
enum Method {
    /// Dense layers.
    Dense,
    /// Gradual magnitude pruning.
    Gmp,
    /// Sparse Evolutionary Training.
    Set,
    /// RigL.
    Rigl,
    /// SR-STE 2:4.
    Srste,
    /// Wanda one-shot pruning of the dense model (and magnitude pruning beside it).
    Wanda,
}

const SIZES: [usize; 3] = [784, 300, 100];
const LR: f64 = 3e-3;

/// A hidden layer of any method.
#[derive(Module, Debug)]
enum Hidden {
    Dense(Linear),
    Sparse(SparseLinear),
    Srste(SrsteLinear),
    Semi(SemiStructuredLinear),
}

impl Hidden {
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        match self {
            Hidden::Dense(l) => l.forward(x),
            Hidden::Sparse(l) => l.forward(x),
            Hidden::Srste(l) => l.forward(x),
            Hidden::Semi(l) => l.forward(x),
        }
    }

    fn memory_bytes(&self) -> usize {
        match self {
            Hidden::Dense(l) => linear_bytes(l),
            Hidden::Sparse(l) => l.memory_bytes(),
            Hidden::Srste(l) => {
                let w = l.weight.val();
                w.shape().num_elements() * w.dtype().size()
                    + l.bias.as_ref().map_or(0, |b| b.val().shape().num_elements() * b.val().dtype().size())
            }
            Hidden::Semi(l) => l.memory_bytes(),
        }
    }

    /// Stored weights and dense size.
    fn stored(&self) -> (usize, usize) {
        match self {
            Hidden::Dense(l) => {
                let n = l.weight.val().shape().num_elements();
                (n, n)
            }
            Hidden::Sparse(l) => (l.nnz(), l.d_output() * l.d_input),
            Hidden::Srste(l) => {
                let n = l.weight.val().shape().num_elements();
                (n / 2, n)
            }
            Hidden::Semi(l) => {
                let n = l.d_output() * l.d_input;
                (n / 2, n)
            }
        }
    }

    fn sparse(&self) -> Option<&SparseLinear> {
        match self {
            Hidden::Sparse(l) => Some(l),
            _ => None,
        }
    }
}

fn linear_bytes(l: &Linear) -> usize {
    let w = l.weight.val();
    w.shape().num_elements() * w.dtype().size()
        + l.bias.as_ref().map_or(0, |b| b.val().shape().num_elements() * b.val().dtype().size())
}

#[derive(Module, Debug)]
struct Mlp {
    hidden: Vec<Hidden>,
    output: Linear,
    /// The inputs reach the first layer interleaved (see `Groups`): a fixed permutation.
    #[module(skip)]
    interleave: bool,
}

impl Mlp {
    fn new(method: Method, sparsity: f64, seed: u64, o: &Options, device: &Device) -> Self {
        let shapes: Vec<[usize; 2]> = SIZES.windows(2).map(|w| [w[1], w[0]]).collect();
        let densities = match o.distribution {
            Spread::Erk => erdos_renyi_densities(&shapes, 1.0 - sparsity).expect("a density in [0, 1]"),
            Spread::Uniform => vec![1.0 - sparsity; shapes.len()],
        };
        let hidden = SIZES
            .windows(2)
            .enumerate()
            .map(|(i, w)| {
                let (d_input, d_output) = (w[0], w[1]);
                let pattern_seed = Some(seed * 1000 + i as u64);
                match method {
                    Method::Dense | Method::Wanda => Hidden::Dense(LinearConfig::new(d_input, d_output).init(device)),
                    // Fully stored to begin with: GMP prunes from the dense initialisation.
                    Method::Gmp => Hidden::Sparse(
                        SparseLinear::from_linear(&LinearConfig::new(d_input, d_output).init(device), 0.0)
                            .expect("sparsity 0 is a sparsity"),
                    ),
                    Method::Set | Method::Rigl => Hidden::Sparse(
                        SparseLinearConfig::new(d_input, d_output)
                            .with_density(densities[i])
                            .with_seed(pattern_seed)
                            .init(device),
                    ),
                    Method::Srste => {
                        Hidden::Srste(SrsteLinearConfig::new(d_input, d_output).with_decay(o.srste_decay).init(device))
                    }
                }
            })
            .collect();
        let interleave = method == Method::Srste && o.srste_groups == Groups::Interleaved;
        Mlp { hidden, output: LinearConfig::new(SIZES[2], 10).init(device), interleave }
    }

    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let h = self.hidden.iter().fold(self.order(x), |h, layer| relu(layer.forward(h)));
        self.output.forward(h)
    }

    /// The inputs in the first layer's order: input `i` is pixel `(i % 4) * (d / 4) + i / 4`
    /// when interleaved, so each group of four (2:4 keeps two) takes one pixel from each
    /// quarter of the image's rows instead of four neighbours that are all background or all
    /// stroke.
    fn order(&self, x: Tensor<2>) -> Tensor<2> {
        if !self.interleave {
            return x;
        }
        let d = x.dims()[1];
        let perm: Vec<i64> = (0..d).map(|i| ((i % 4) * (d / 4) + i / 4) as i64).collect();
        let perm = Tensor::<1, Int>::from_data(TensorData::new(perm, [d]), &x.device());
        x.select(1, perm)
    }

    /// The forward pass with each sparse hidden layer probed (see `SparseLinear::forward_probed`):
    /// the logits and, per sparse layer, its input and the probe whose gradient is `dL/dy`.
    fn forward_probed(&self, x: Tensor<2>) -> (Tensor<2>, Vec<(Tensor<2>, Tensor<2>)>) {
        let mut probes = Vec::new();
        let mut h = self.order(x);
        for layer in &self.hidden {
            h = relu(match layer {
                Hidden::Sparse(l) => {
                    let (y, probe) = l.forward_probed(h.clone());
                    probes.push((h.detach(), probe));
                    y
                }
                other => other.forward(h),
            });
        }
        (self.output.forward(h), probes)
    }

    fn memory_bytes(&self) -> usize {
        self.hidden.iter().map(Hidden::memory_bytes).sum::<usize>() + linear_bytes(&self.output)
    }

    /// Fraction of the hidden layers' weights not stored.
    fn sparsity(&self) -> f64 {
        let (kept, all) = self.hidden.iter().map(Hidden::stored).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        1.0 - kept as f64 / all as f64
    }

    /// Applies `change` to every sparse hidden layer; the rewirings of those that changed.
    fn rewire(
        &mut self,
        mut change: impl FnMut(usize, &SparseLinear) -> Option<(SparseLinear, Rewiring)>,
    ) -> Vec<Rewiring> {
        let mut done = Vec::new();
        for (i, layer) in self.hidden.iter_mut().enumerate() {
            if let Some((new, rw)) = layer.sparse().and_then(|l| change(i, l)) {
                *layer = Hidden::Sparse(new);
                done.push(rw);
            }
        }
        done
    }
}

/// Test accuracy in chunks of 1000 images (no autodiff graph).
fn accuracy(model: &Mlp, split: &MnistSplit, device: &Device) -> f64 {
    let mut correct = 0i64;
    for chunk in (0..split.len()).collect::<Vec<_>>().chunks(1000) {
        let (x, y) = split.batch(chunk, device);
        correct += model.forward(x).argmax(1).reshape([chunk.len()]).equal(y).int().sum().into_scalar::<i64>();
    }
    correct as f64 / split.len() as f64
}

struct Options {
    epochs: usize,
    batch: usize,
    distribution: Spread,
    srste_decay: f64,
    srste_groups: Groups,
}

/// A trained model and its training time per epoch.
struct Trained {
    model: Mlp,
    epoch_seconds: f64,
}

/// Trains `method` at `sparsity` with `seed` (dense for `wanda`).
fn train(method: Method, sparsity: f64, seed: u64, data: &Mnist, o: &Options) -> Trained {
    let device = Device::flex().autodiff();
    device.seed(seed);
    let plain = Device::flex();
    let mut model = Mlp::new(method, sparsity, seed, o, &device);
    let mut optim: ModuleOptimizer = AdamConfig::new().init();
    let loss_fn = CrossEntropyLossConfig::new().init(&device);
    let n = data.train.len();
    let steps = n.div_ceil(o.batch);
    let total = o.epochs * steps;
    let gmp = (method == Method::Gmp)
        .then(|| GradualMagnitudePruning::new(sparsity, steps, (total as f64 * 0.6) as usize).with_frequency(100));
    let end_step = (total as f64 * 0.75) as usize;
    let rigl: Option<RigL> =
        (method == Method::Rigl).then(|| RigLConfig::new(end_step).init().expect("the defaults are valid"));
    // SET on RigL's schedule, as the RigL paper compares them.
    let schedule = DropSchedule::new(end_step);
    let mut set = (method == Method::Set).then(|| SetConfig::new().with_seed(seed).init().expect("zeta 0.3"));
    let mut seconds = 0.0;
    for epoch in 0..o.epochs {
        let order: Vec<usize> = Tensor::<1>::random([n], Distribution::Default, &plain)
            .argsort(0)
            .into_data()
            .iter::<i64>()
            .map(|i| i as usize)
            .collect();
        let label = format!("{:?} {:.0} % seed {seed} epoch {:2}/{}", method, sparsity * 100.0, epoch + 1, o.epochs);
        let progress = progress::Progress::new(steps as u64, label);
        let t = Instant::now();
        for (step, batch) in order.chunks(o.batch).enumerate() {
            let global = epoch * steps + step + 1;
            let (x, y) = data.train.batch(batch, &device);
            let probed = rigl.as_ref().is_some_and(|r| r.is_update_step(global));
            let (logits, probes) = if probed { model.forward_probed(x) } else { (model.forward(x), Vec::new()) };
            let loss = loss_fn.forward(logits, y);
            let grads = loss.backward();
            // For RigL: each sparse layer's input and dL/dy on this batch.
            let signals: Vec<(Tensor<2>, Tensor<2>)> = probes
                .into_iter()
                .map(|(input, probe)| (input.inner(), probe.grad(&grads).expect("the probe is a tracked leaf")))
                .collect();
            let params = GradientsParams::from_grads(grads, &model);
            let frac = (global - 1) as f64 / total as f64;
            let lr = LR * 0.5 * (1.0 + (std::f64::consts::PI * frac).cos());
            model = optim.step(lr, model, params);
            let changed = match (&gmp, set.as_mut(), &rigl) {
                (Some(gmp), _, _) => model.rewire(|_, l| gmp.step(global, l).expect("a valid schedule")),
                (_, Some(set), _) => model.rewire(|_, l| set.step(global, &schedule, l).expect("a SET update")),
                (_, _, Some(rigl)) if probed => {
                    let mut signals = signals.into_iter();
                    model.rewire(|_, l| {
                        let (input, grad) = signals.next().expect("one probe per sparse layer");
                        Some(rigl.update(global, l, input, grad).expect("shapes of the layer"))
                    })
                }
                _ => Vec::new(),
            };
            if !changed.is_empty() {
                optim = rewire_optimizer(optim, &changed).expect("Adam's state is per entry");
            }
            progress.step(step as u64 + 1, String::new);
        }
        progress.finish();
        seconds += t.elapsed().as_secs_f64();
    }
    Trained { model: model.valid(), epoch_seconds: seconds / o.epochs as f64 }
}

/// One row of the results: a method at a sparsity, over the seeds.
#[derive(Default)]
struct Row {
    accuracy: Vec<f64>,
    sparsity: Vec<f64>,
    bytes: usize,
    epoch_seconds: Vec<f64>,
}

/// The dense model's hidden layers pruned one-shot: by Wanda (`wanda = true`) or by magnitude,
/// 2:4 (`sparsity = None`) or unstructured per output row. Calibration activations run through
/// the layers pruned before (as Wanda prunes layer by layer).
fn one_shot(dense: &Mlp, calibration: &Tensor<2>, sparsity: Option<f64>, wanda: bool) -> Mlp {
    let mut h = calibration.clone();
    let mut hidden = Vec::new();
    for layer in &dense.hidden {
        let Hidden::Dense(linear) = layer else { unreachable!("one-shot pruning starts from dense layers") };
        let mut stats = WandaCalibration::new(linear.weight.val().dims()[0]);
        if wanda {
            stats.observe(&h).expect("calibration rows of d_input features");
        } else {
            // Equal norms: Wanda's score reduces to |W|, magnitude pruning per output row.
            stats.observe(&Tensor::<2>::ones([1, linear.weight.val().dims()[0]], &h.device())).expect("ones");
        }
        let pruned = match sparsity {
            None => Hidden::Semi(sparsegrad::nn::wanda_semi_structured(linear, &stats).expect("2:4 of a dense layer")),
            Some(s) => {
                Hidden::Sparse(SparseLinear::from_linear_wanda(linear, &stats, s).expect("a sparsity in [0, 1]"))
            }
        };
        h = relu(pruned.forward(h));
        hidden.push(pruned);
    }
    Mlp { hidden, output: dense.output.clone(), interleave: false }
}

fn main() {
    let args = Args::parse();
    let o = Options {
        epochs: args.epochs as usize,
        batch: args.batch as usize,
        distribution: args.distribution,
        srste_decay: args.srste_decay,
        srste_groups: args.srste_groups,
    };
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/mnist");
    let data = Mnist::load(&dir).unwrap_or_else(|e| panic!("data/mnist holds the MNIST IDX files: {e}"));
    let plain = Device::flex();
    println!(
        "MNIST: {} train / {} test images; MLP 784-300-100-10, Adam lr {LR} (cosine decay), batch {}, {} epochs, {} seeds",
        data.train.len(),
        data.test.len(),
        o.batch,
        o.epochs,
        args.seeds
    );
    let mut methods = args.method.clone();
    methods.sort();
    methods.dedup();
    let mut rows: BTreeMap<(String, u64), Row> = BTreeMap::new();
    let record = |name: &str, sparsity: f64, model: &Mlp, epoch_seconds: Option<f64>, rows: &mut BTreeMap<_, Row>| {
        let acc = accuracy(model, &data.test, &plain);
        let row: &mut Row = rows.entry((name.to_string(), (sparsity * 1e4).round() as u64)).or_default();
        row.accuracy.push(acc);
        row.sparsity.push(model.sparsity());
        row.bytes = model.memory_bytes();
        row.epoch_seconds.extend(epoch_seconds);
        println!("{name:>16} at {:5.1} % sparsity: test accuracy {:.2} %", model.sparsity() * 100.0, acc * 100.0);
    };
    for seed in 0..args.seeds {
        let needs_dense = methods.iter().any(|m| matches!(m, Method::Dense | Method::Wanda));
        let dense = needs_dense.then(|| train(Method::Dense, 0.0, seed, &data, &o));
        if let (true, Some(d)) = (methods.contains(&Method::Dense), &dense) {
            record("dense", 0.0, &d.model, Some(d.epoch_seconds), &mut rows);
        }
        for &method in &methods {
            match method {
                Method::Dense => {}
                Method::Gmp | Method::Set | Method::Rigl => {
                    for &s in &args.sparsity {
                        let t = train(method, s, seed, &data, &o);
                        record(&format!("{method:?}").to_lowercase(), s, &t.model, Some(t.epoch_seconds), &mut rows);
                    }
                }
                Method::Srste => {
                    let t = train(method, 0.5, seed, &data, &o);
                    // Deployed: the 2:4 layers the master weights give.
                    let hidden = t
                        .model
                        .hidden
                        .iter()
                        .map(|l| match l {
                            Hidden::Srste(l) => Hidden::Semi(l.to_semi_structured().expect("a 2:4 layer")),
                            _ => unreachable!("SR-STE trains SrsteLinear layers"),
                        })
                        .collect();
                    let deployed = Mlp { hidden, output: t.model.output.clone(), interleave: t.model.interleave };
                    record("srste 2:4", 0.5, &deployed, Some(t.epoch_seconds), &mut rows);
                }
                Method::Wanda => {
                    let dense = &dense.as_ref().expect("trained above").model;
                    let picks: Vec<usize> = (0..1024).map(|i| i * data.train.len() / 1024).collect();
                    let (calibration, _) = data.train.batch(&picks, &plain);
                    record("wanda 2:4", 0.5, &one_shot(dense, &calibration, None, true), None, &mut rows);
                    record("magnitude 2:4", 0.5, &one_shot(dense, &calibration, None, false), None, &mut rows);
                    for &s in &args.sparsity {
                        record("wanda", s, &one_shot(dense, &calibration, Some(s), true), None, &mut rows);
                        record("magnitude", s, &one_shot(dense, &calibration, Some(s), false), None, &mut rows);
                    }
                }
            }
        }
    }

    let mean_std = |v: &[f64]| {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() as f64 - 1.0).max(1.0);
        (m, var.sqrt())
    };
    println!(
        "\n| method | sparsity | test accuracy (mean ± std, {} seeds) | parameter bytes | training time / epoch |",
        args.seeds
    );
    println!("|---|---|---|---|---|");
    let mut by_method: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for ((name, _), row) in &rows {
        let (acc, sd) = mean_std(&row.accuracy);
        let (sparsity, _) = mean_std(&row.sparsity);
        let time = if row.epoch_seconds.is_empty() {
            "no training".to_string()
        } else {
            format!("{:.1} s", mean_std(&row.epoch_seconds).0)
        };
        println!(
            "| {name} | {:.1} % | {:.2} ± {:.2} % | {} | {time} |",
            sparsity * 100.0,
            acc * 100.0,
            sd * 100.0,
            row.bytes
        );
        let family = name.split(' ').next().unwrap_or(name).to_string();
        by_method.entry(family).or_default().push((sparsity * 100.0, acc * 100.0));
    }
    let Some(path) = &args.png else { return };
    let sets: Vec<plot::Points> =
        by_method.iter().map(|(name, points)| plot::Points { name, points: points.clone() }).collect();
    let title = format!("LeNet-300-100 on MNIST: test accuracy against sparsity ({} seeds)", args.seeds);
    match plot::scatter(path, &title, ("sparsity of the hidden layers (%)", "test accuracy (%)"), &sets, (900, 560)) {
        Ok(()) => println!("plot: {}", path.display()),
        Err(e) => eprintln!("could not write {}: {e}", path.display()),
    }
}
