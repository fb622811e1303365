//! One RigL update of a large `SparseLinear` without its dense gradient: a 16384 x 16384 layer
//! at 99 % sparsity (2.7 M stored entries) and a batch of 256. The dense gradient `Gᵀ X` would
//! take 1 GiB in f32; the update drops the 30 % smallest entries and grows as many where the
//! gradient is largest, computing it a tile of rows at a time with a running top-k.
//!
//! `cargo run --release --example rigl_at_scale [-- --size 16384] [--sparsity 0.99] [--batch 256]
//! [--tile-elements 4194304]`. Prints the time of the update and the process's peak resident
//! memory during it (Linux: `VmHWM` of `/proc/self/status`, reset through
//! `/proc/self/clear_refs` just before the update, so the layer's construction does not count),
//! beside the size of the dense gradient.

use burn::tensor::{Device, Distribution, Tensor};
use clap::Parser;
use sparsegrad::nn::{RigLConfig, SparseLinearConfig};
use std::time::Instant;

#[path = "memory/mod.rs"]
mod memory;

/// One RigL update of a large sparse layer: time and peak memory.
#[derive(Parser, Debug)]
#[command(long_about = None)]
struct Args {
    /// Rows and columns of the weight.
    #[arg(long, default_value_t = 16384, value_parser = clap::value_parser!(u64).range(1..))]
    size: u64,
    /// Fraction of the weight's elements not stored (zeros).
    #[arg(long, default_value_t = 0.99)]
    sparsity: f64,
    /// Batch of the input and output gradient.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..))]
    batch: u64,
    /// Elements of one tile of the dense gradient.
    #[arg(long, default_value_t = 1 << 22, value_parser = clap::value_parser!(u64).range(1..))]
    tile_elements: u64,
}

fn main() {
    let args = Args::parse();
    let (n, batch) = (args.size as usize, args.batch as usize);
    let device = Device::flex();
    device.seed(0);
    let t = Instant::now();
    let layer = SparseLinearConfig::new(n, n)
        .with_density(1.0 - args.sparsity)
        .with_seed(Some(1))
        .with_bias(false)
        .init(&device);
    let x = Tensor::<2>::random([batch, n], Distribution::Normal(0.0, 1.0), &device);
    let g = Tensor::<2>::random([batch, n], Distribution::Normal(0.0, 1.0), &device);
    println!(
        "layer {n} x {n}, {} stored entries ({:.2} % dense), batch {batch}: built in {:.1} s",
        layer.nnz(),
        layer.density() * 100.0,
        t.elapsed().as_secs_f64()
    );
    let rigl = RigLConfig::new(1000).with_tile_elements(args.tile_elements as usize).init().expect("valid settings");
    let before = memory::status_kib("VmRSS:");
    // Writing 5 resets the peak (VmHWM) to the current resident size (Linux >= 4.0).
    let reset = memory::reset_peak();
    let t = Instant::now();
    let (new, rewiring) = rigl.update(1, &layer, x, g).expect("shapes of the layer");
    let seconds = t.elapsed().as_secs_f64();
    let peak = memory::peak_kib();
    let dense_gradient = (n as f64) * (n as f64) * 4.0;
    println!(
        "RigL update: {} dropped and {} grown in {seconds:.2} s; {} entries after",
        rewiring.old_nnz() - rewiring.kept(),
        rewiring.grown(),
        new.nnz()
    );
    println!(
        "resident memory: {} before the update, peak {} during it{}; the dense f32 gradient alone is {:.0} MiB",
        memory::mib(before),
        memory::mib(peak),
        if reset { "" } else { " (peak not reset: it includes the construction)" },
        dense_gradient / (1 << 20) as f64
    );
    if let (Some(b), Some(p)) = (before, peak) {
        println!(
            "peak growth during the update: {:.0} MiB = {:.3} of the dense gradient",
            (p.saturating_sub(b)) as f64 / 1024.0,
            (p.saturating_sub(b)) as f64 * 1024.0 / dense_gradient
        );
        println!("peak resident memory = {:.3} of the dense gradient", p as f64 * 1024.0 / dense_gradient);
    }
}
