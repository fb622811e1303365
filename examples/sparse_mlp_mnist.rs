//! The same MLP on MNIST with dense and with sparse hidden layers: ReLU hidden layers (784-300-100
//! by default, LeNet-300-100), a dense 10-way output layer, Adam (lr 3e-3 with a cosine decay to
//! zero), mini-batches of 128, inputs scaled to [0, 1]. Variants differ only in how the hidden layers store their weight:
//!
//! - `dense`: `burn::nn::Linear`;
//! - `semi24`: `SemiStructuredLinear`, 2:4 semi-structured (50 %: burn's initialisation pruned
//!   to the two largest magnitudes of every four inputs, the kept values trained);
//! - `sparse90`: `SparseLinear` at density 0.1 (90 % unstructured sparsity, a fixed random
//!   pattern trained from scratch).
//!
//! `cargo run --release --example sparse_mlp_mnist [-- --epochs N] [--variants dense,semi24,sparse90]
//! [--hidden 300,100] [--batch 128] [--lr 0.003] [--seed 0] [--png PATH]` (`--help`)
//! Ends with a table: test accuracy, parameter memory (bytes stored: values, indices, biases)
//! and training time per epoch of each variant; with `--png PATH`, writes the training loss and
//! test accuracy of every variant per epoch there as a PNG (the README's figure is
//! `--png docs/img/sparse_mlp_mnist_curves.png`).
//!
//! A variant is a [`Variant`] (its name and how it builds a hidden layer) and a [`Hidden`] arm
//! (its forward pass and stored bytes).

use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{activation::relu, Device, Distribution, Tensor};
use clap::{Parser, ValueEnum};
use sparsegrad::nn::{
    Mnist, MnistSplit, SemiStructuredLinear, SemiStructuredLinearConfig, SparseLinear, SparseLinearConfig,
};
use std::path::PathBuf;
use std::time::Instant;

#[path = "plot/mod.rs"]
mod plot;
#[path = "progress/mod.rs"]
mod progress;

/// The same MLP on MNIST with dense, 2:4 and 90 %-sparse hidden layers.
#[derive(Parser, Debug)]
#[command(long_about = None)]
struct Args {
    /// Epochs per variant.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    epochs: u64,
    /// Variants to train, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "dense,semi24,sparse90")]
    variants: Vec<Variant>,
    /// Hidden layer sizes, comma-separated (2:4 needs multiples of 4 for all but the last).
    #[arg(long, value_delimiter = ',', default_value = "300,100", value_parser = clap::value_parser!(u64).range(1..))]
    hidden: Vec<u64>,
    /// Mini-batch size.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u64).range(1..))]
    batch: u64,
    /// Peak learning rate of Adam (cosine decay to zero over the run).
    #[arg(long, default_value_t = 3e-3, value_parser = positive, allow_negative_numbers = true)]
    lr: f64,
    /// Seed of the initialisation, the sparse patterns and the batch order.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Where to write the curves of every variant (PNG; none without it).
    #[arg(long)]
    png: Option<PathBuf>,
}

/// A finite number above zero.
fn positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(v) => Err(format!("{v} is not a finite number above 0")),
        Err(e) => Err(e.to_string()),
    }
}

/// How the hidden layers are built.
#[derive(Clone, Copy, Debug, PartialEq, ValueEnum)]
enum Variant {
    /// `burn::nn::Linear`.
    #[value(name = "dense")]
    Dense,
    /// 2:4 semi-structured (`SemiStructuredLinear`).
    #[value(name = "semi24")]
    Semi24,
    /// 90 % unstructured sparsity (`SparseLinear`, density 0.1).
    #[value(name = "sparse90")]
    Sparse90,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Dense => "dense",
            Variant::Semi24 => "semi24",
            Variant::Sparse90 => "sparse90",
        }
    }

    /// A fresh hidden layer `d_input -> d_output`; `seed` makes sparse patterns reproducible.
    fn hidden(self, d_input: usize, d_output: usize, seed: u64, device: &Device) -> Hidden {
        match self {
            Variant::Dense => Hidden::Dense(LinearConfig::new(d_input, d_output).init(device)),
            Variant::Semi24 => Hidden::Semi(SemiStructuredLinearConfig::new(d_input, d_output).init(device)),
            Variant::Sparse90 => Hidden::Sparse(
                SparseLinearConfig::new(d_input, d_output).with_density(0.1).with_seed(Some(seed)).init(device),
            ),
        }
    }
}

/// A hidden layer of any variant.
#[derive(Module, Debug)]
enum Hidden {
    Dense(Linear),
    Semi(SemiStructuredLinear),
    Sparse(SparseLinear),
}

impl Hidden {
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        match self {
            Hidden::Dense(l) => l.forward(x),
            Hidden::Semi(l) => l.forward(x),
            Hidden::Sparse(l) => l.forward(x),
        }
    }

    fn memory_bytes(&self) -> usize {
        match self {
            Hidden::Dense(l) => linear_bytes(l),
            Hidden::Semi(l) => l.memory_bytes(),
            Hidden::Sparse(l) => l.memory_bytes(),
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
}

impl Mlp {
    fn new(variant: Variant, sizes: &[usize], seed: u64, device: &Device) -> Self {
        let hidden = sizes
            .windows(2)
            .enumerate()
            .map(|(i, w)| variant.hidden(w[0], w[1], seed * 1000 + i as u64, device))
            .collect();
        let last = *sizes.last().expect("at least the input size");
        Mlp { hidden, output: LinearConfig::new(last, 10).init(device) }
    }

    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let h = self.hidden.iter().fold(x, |h, layer| relu(layer.forward(h)));
        self.output.forward(h)
    }

    fn memory_bytes(&self) -> usize {
        self.hidden.iter().map(Hidden::memory_bytes).sum::<usize>() + linear_bytes(&self.output)
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

/// Median wall time in ms of the trained model's forward pass on `batch` test images (no
/// autodiff graph): batch 1 is the decode-like case, where a 2:4 layer's time is the bytes of
/// its weight, and 256 the throughput case.
fn inference_ms(model: &Mlp, split: &MnistSplit, batch: usize, device: &Device) -> f64 {
    let idx: Vec<usize> = (0..batch.min(split.len())).collect();
    let (x, _) = split.batch(&idx, device);
    let run = || std::hint::black_box(model.forward(x.clone()).into_data());
    for _ in 0..5 {
        run();
    }
    let mut ts: Vec<f64> = (0..25)
        .map(|_| {
            let t = Instant::now();
            run();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ts.sort_by(f64::total_cmp);
    ts[ts.len() / 2]
}

struct Options {
    epochs: usize,
    batch: usize,
    lr: f64,
    seed: u64,
    sizes: Vec<usize>,
}

struct Outcome {
    accuracy: f64,
    memory: usize,
    epoch_seconds: f64,
    /// Inference time (ms) of a batch of 1 and of 256 test images.
    infer_ms: [f64; 2],
    /// Mean training loss of every epoch.
    loss: Vec<f64>,
    /// Test accuracy after every epoch.
    test_accuracy: Vec<f64>,
}

fn train(variant: Variant, data: &Mnist, o: &Options) -> Outcome {
    let device = Device::flex().autodiff();
    device.seed(o.seed);
    let plain = Device::flex();
    let mut model = Mlp::new(variant, &o.sizes, o.seed, &device);
    let mut optim = AdamConfig::new().init();
    let loss_fn = CrossEntropyLossConfig::new().init(&device);
    let n = data.train.len();
    let steps = n.div_ceil(o.batch);
    let (mut seconds, mut losses, mut accuracies) = (0.0, Vec::new(), Vec::new());
    for epoch in 0..o.epochs {
        // A random order from burn's seeded generator: the ranks of uniform draws.
        let order: Vec<usize> = Tensor::<1>::random([n], Distribution::Default, &plain)
            .argsort(0)
            .into_data()
            .iter::<i64>()
            .map(|i| i as usize)
            .collect();
        let progress =
            progress::Progress::new(steps as u64, format!("{:8} epoch {:2}/{}", variant.name(), epoch + 1, o.epochs));
        let t = Instant::now();
        let mut loss_sum = 0.0;
        for (step, batch) in order.chunks(o.batch).enumerate() {
            let (x, y) = data.train.batch(batch, &device);
            let loss = loss_fn.forward(model.forward(x), y);
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            // Cosine decay to zero over the run: the last epochs average out the noise of
            // the mini-batches instead of bouncing around the optimum.
            let progress_frac = (epoch * steps + step) as f64 / (o.epochs * steps) as f64;
            let lr = o.lr * 0.5 * (1.0 + (std::f64::consts::PI * progress_frac).cos());
            model = optim.step(lr, model, grads);
            loss_sum += loss.into_scalar::<f32>() as f64;
            progress.step(step as u64 + 1, || format!("mean loss {:.4}", loss_sum / (step + 1) as f64));
        }
        progress.finish();
        let elapsed = t.elapsed().as_secs_f64();
        seconds += elapsed;
        let acc = accuracy(&model.valid(), &data.test, &plain);
        let mean_loss = loss_sum / steps as f64;
        losses.push(mean_loss);
        accuracies.push(acc);
        println!(
            "{:8} epoch {:2}/{}: {elapsed:6.1} s, mean training loss {mean_loss:.4}, test accuracy {:.2} %",
            variant.name(),
            epoch + 1,
            o.epochs,
            acc * 100.0
        );
    }
    let model = model.valid();
    Outcome {
        accuracy: accuracy(&model, &data.test, &plain),
        memory: model.memory_bytes(),
        epoch_seconds: seconds / o.epochs.max(1) as f64,
        infer_ms: [inference_ms(&model, &data.test, 1, &plain), inference_ms(&model, &data.test, 256, &plain)],
        loss: losses,
        test_accuracy: accuracies,
    }
}

fn main() {
    let args = Args::parse();
    let mut sizes = vec![784];
    sizes.extend(args.hidden.iter().map(|&h| h as usize));
    let o = Options { epochs: args.epochs as usize, batch: args.batch as usize, lr: args.lr, seed: args.seed, sizes };

    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/mnist");
    let data = Mnist::load(&dir).unwrap_or_else(|e| panic!("data/mnist holds the MNIST IDX files: {e}"));
    println!(
        "MNIST: {} train / {} test images; MLP {}-10, Adam lr {} (cosine decay), batch {}, {} epochs",
        data.train.len(),
        data.test.len(),
        o.sizes.iter().map(usize::to_string).collect::<Vec<_>>().join("-"),
        o.lr,
        o.batch,
        o.epochs
    );
    let outcomes: Vec<(Variant, Outcome)> = args.variants.iter().map(|&v| (v, train(v, &data, &o))).collect();

    if let Some(path) = &args.png {
        let panels = [
            plot::Panel {
                caption: "Training loss (mean over the epoch)",
                y_label: "cross-entropy",
                series: outcomes.iter().map(|(v, r)| plot::Series { name: v.name(), values: &r.loss }).collect(),
            },
            plot::Panel {
                caption: "Test accuracy",
                y_label: "accuracy",
                series: outcomes
                    .iter()
                    .map(|(v, r)| plot::Series { name: v.name(), values: &r.test_accuracy })
                    .collect(),
            },
        ];
        let title = format!(
            "MLP {}-10 on MNIST: dense and sparse hidden layers",
            o.sizes.iter().map(usize::to_string).collect::<Vec<_>>().join("-")
        );
        match plot::curves(path, &title, &panels, (1000, 420)) {
            Ok(()) => println!("curves: {}", path.display()),
            Err(e) => eprintln!("could not write {}: {e}", path.display()),
        }
    }

    let dense_memory = outcomes.iter().find(|(v, _)| *v == Variant::Dense).map(|(_, r)| r.memory);
    println!("\n| variant | test accuracy | parameter memory | training time / epoch | inference, batch 1 / 256 |");
    println!("|---|---|---|---|---|");
    for (v, r) in &outcomes {
        let ratio =
            dense_memory.map_or(String::new(), |d| format!(" ({:.1} % of dense)", 100.0 * r.memory as f64 / d as f64));
        println!(
            "| {} | {:.2} % | {} bytes{ratio} | {:.1} s | {:.3} / {:.2} ms |",
            v.name(),
            r.accuracy * 100.0,
            r.memory,
            r.epoch_seconds,
            r.infer_ms[0],
            r.infer_ms[1]
        );
    }
}
