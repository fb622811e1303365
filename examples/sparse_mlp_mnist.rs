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
//! [--hidden 300,100] [--batch 128] [--lr 0.003] [--seed 0]`
//! Ends with a table: test accuracy, parameter memory (bytes stored: values, indices, biases)
//! and training time per epoch of each variant.
//!
//! A variant is a [`Variant`] (its name and how it builds a hidden layer) and a [`Hidden`] arm
//! (its forward pass and stored bytes).

use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{activation::relu, Device, Tensor};
use sparsegrad::nn::{
    MaskRng, Mnist, MnistSplit, SemiStructuredLinear, SemiStructuredLinearConfig, SparseLinear, SparseLinearConfig,
};
use std::io::Write;
use std::time::Instant;

/// How the hidden layers are built.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Variant {
    Dense,
    Semi24,
    Sparse90,
}

impl Variant {
    const ALL: [Variant; 3] = [Variant::Dense, Variant::Semi24, Variant::Sparse90];

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
}

fn train(variant: Variant, data: &Mnist, o: &Options) -> Outcome {
    let device = Device::flex().autodiff();
    device.seed(o.seed);
    let plain = Device::flex();
    let mut model = Mlp::new(variant, &o.sizes, o.seed, &device);
    let mut optim = AdamConfig::new().init();
    let loss_fn = CrossEntropyLossConfig::new().init(&device);
    let mut rng = MaskRng::new(o.seed ^ 0x5EED);
    let mut order: Vec<usize> = (0..data.train.len()).collect();
    let steps = order.len().div_ceil(o.batch);
    // The progress bar redraws one line: only on a terminal, not in logs.
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut seconds = 0.0;
    for epoch in 0..o.epochs {
        // Fisher-Yates shuffle from the seeded stream.
        for i in (1..order.len()).rev() {
            order.swap(i, (rng.next_unit() * (i + 1) as f64) as usize);
        }
        let t = Instant::now();
        let mut last_loss = 0.0;
        for (step, batch) in order.chunks(o.batch).enumerate() {
            let (x, y) = data.train.batch(batch, &device);
            let loss = loss_fn.forward(model.forward(x), y);
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            // Cosine decay to zero over the run: the last epochs average out the noise of
            // the mini-batches instead of bouncing around the optimum.
            let progress = (epoch * steps + step) as f64 / (o.epochs * steps) as f64;
            let lr = o.lr * 0.5 * (1.0 + (std::f64::consts::PI * progress).cos());
            model = optim.step(lr, model, grads);
            if step + 1 == steps || (tty && step % 20 == 0) {
                last_loss = loss.into_scalar::<f32>() as f64;
            }
            if tty && (step % 20 == 0 || step + 1 == steps) {
                let bar = (step + 1) * 30 / steps;
                eprint!(
                    "\r{:8} epoch {:2}/{} [{}{}] loss {last_loss:.4}",
                    variant.name(),
                    epoch + 1,
                    o.epochs,
                    "#".repeat(bar),
                    ".".repeat(30 - bar)
                );
                let _ = std::io::stderr().flush();
            }
        }
        let elapsed = t.elapsed().as_secs_f64();
        seconds += elapsed;
        let acc = accuracy(&model.valid(), &data.test, &plain);
        if tty {
            eprint!("\r{}\r", " ".repeat(72));
        }
        eprintln!(
            "{:8} epoch {:2}/{}: {elapsed:6.1} s, last batch loss {last_loss:.4}, test accuracy {:.2} %",
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
    }
}

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let names: String = arg(&args, "--variants", Variant::ALL.map(Variant::name).join(","));
    let variants: Vec<Variant> = names
        .split(',')
        .map(|n| {
            Variant::ALL.into_iter().find(|v| v.name() == n).unwrap_or_else(|| {
                eprintln!("unknown variant {n:?}; known: {}", Variant::ALL.map(Variant::name).join(", "));
                std::process::exit(2)
            })
        })
        .collect();
    let hidden: String = arg(&args, "--hidden", "300,100".to_string());
    let mut sizes = vec![784];
    sizes.extend(
        hidden.split(',').map(|s| s.parse::<usize>().unwrap_or_else(|_| panic!("--hidden: {s:?} is not a size"))),
    );
    let o = Options {
        epochs: arg(&args, "--epochs", 20),
        batch: arg(&args, "--batch", 128),
        lr: arg(&args, "--lr", 3e-3),
        seed: arg(&args, "--seed", 0),
        sizes,
    };

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
    let outcomes: Vec<(Variant, Outcome)> = variants.iter().map(|&v| (v, train(v, &data, &o))).collect();

    let dense_memory = outcomes.iter().find(|(v, _)| *v == Variant::Dense).map(|(_, r)| r.memory);
    println!("\n| variant | test accuracy | parameter memory | training time / epoch |");
    println!("|---|---|---|---|");
    for (v, r) in &outcomes {
        let ratio =
            dense_memory.map_or(String::new(), |d| format!(" ({:.1} % of dense)", 100.0 * r.memory as f64 / d as f64));
        println!(
            "| {} | {:.2} % | {} bytes{ratio} | {:.1} s |",
            v.name(),
            r.accuracy * 100.0,
            r.memory,
            r.epoch_seconds
        );
    }
}
