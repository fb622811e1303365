//! GraphChallenge-style sparse DNN inference (the MIT/IEEE challenge's rule): per layer
//! `Y <- clip(relu(Y W + b on stored entries), 32)`, bias -0.3 (its value for 1024 neurons),
//! categories = the rows of the last `Y` with a stored entry. The network is a synthetic
//! RadiX-Net-like one built from a seed: 1024 neurons, 32 connections per neuron, 120 layers;
//! the input a sparse binary batch. `bench/sparse_dnn.py` builds the same network and batch
//! (splitmix64 streams, as `bench/workloads.py`) and runs scipy on them.
//!
//! Two paths, both printing edges/second as the challenge reports it (`batch x edges per layer
//! x layers / seconds`, over the median of `--repeat` runs): the sparse-Y path (`spgemm`, then the value filters
//! `add_scalar_to_stored`, `filter`, `clamp_stored`; `Y` stays CSR) and the dense-Y path
//! (`mm_dense_sparse`, then dense ops). Both must find the same categories.
//!
//! Usage: `cargo run --release --example sparse_dnn [-- --batch 256 --layers 120 --repeat 5]`
//! (`--help`).

#[path = "memory/mod.rs"]
mod memory;
#[path = "progress/mod.rs"]
mod progress;
#[path = "workloads/mod.rs"]
mod workloads;

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use clap::Parser;
use sparsegrad::prelude::*;
use std::time::Instant;

/// GraphChallenge-style sparse DNN inference, sparse-Y and dense-Y, on a seeded synthetic network.
#[derive(Parser, Debug)]
#[command(long_about = None)]
struct Args {
    /// Rows of the input batch.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..))]
    batch: u64,
    /// Layers of the network.
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..))]
    layers: u64,
    /// Runs of each path, taken in turn (sparse, dense, sparse, ...); the median of each is
    /// reported, so a slow moment of a shared machine moves one run, not the ratio.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    repeat: u64,
}

const NEURONS: usize = 1024;
const FANOUT: usize = 32;
const BIAS: f64 = -0.3;
const CLIP: f64 = 32.0;
const SEED: u64 = 17;
/// The challenge's 1/16 lets this synthetic net die out within a few layers; 3/32 keeps a
/// subset of the rows alive (as `bench/sparse_dnn.py`).
const WEIGHT: f32 = 3.0 / 32.0;

fn csr(crow: Vec<i64>, col: Vec<i64>, val: Vec<f32>, shape: [usize; 2], device: &Device) -> SparseTensor<2> {
    let (rows, nnz) = (crow.len(), col.len());
    SparseTensor::csr(
        Tensor::<1, Int>::from_data(TensorData::new(crow, [rows]), (device, DType::I64)),
        Tensor::<1, Int>::from_data(TensorData::new(col, [nnz]), (device, DType::I64)),
        Tensor::<1>::from_data(TensorData::new(val, [nnz]), device),
        shape,
    )
    .expect("valid CSR")
}

/// Layer `l`: input neuron `i` feeds `(i + t * stride + offset) mod 1024` for `t < 32`, stride 1
/// on even layers and 32 on odd ones (two layers connect every input to every output, as a
/// radix-32 RadiX-Net does), the offset drawn from the seed.
fn layer(l: usize, device: &Device) -> SparseTensor<2> {
    let stride = if l.is_multiple_of(2) { 1 } else { FANOUT };
    let offset = (workloads::sm(SEED, l as u64) % NEURONS as u64) as usize;
    let mut crow = vec![0i64];
    let mut col = Vec::with_capacity(NEURONS * FANOUT);
    for i in 0..NEURONS {
        let mut row: Vec<i64> = (0..FANOUT).map(|t| ((i + t * stride + offset) % NEURONS) as i64).collect();
        row.sort_unstable();
        col.extend(row);
        crow.push(col.len() as i64);
    }
    let nnz = col.len();
    csr(crow, col, vec![WEIGHT; nnz], [NEURONS, NEURONS], device)
}

/// The input batch: entry `(r, c)` is 1 when draw `r * 1024 + c` of stream `SEED + 1` is below
/// row `r`'s density, 0.4 times draw `r` of stream `SEED + 3`.
fn inputs(batch: usize, device: &Device) -> SparseTensor<2> {
    let mut crow = vec![0i64];
    let mut col = Vec::new();
    for r in 0..batch {
        let density = 0.4 * workloads::unit(SEED + 3, r as u64);
        col.extend(
            (0..NEURONS).filter(|&c| workloads::unit(SEED + 1, (r * NEURONS + c) as u64) < density).map(|c| c as i64),
        );
        crow.push(col.len() as i64);
    }
    let nnz = col.len();
    csr(crow, col, vec![1.0; nnz], [batch, NEURONS], device)
}

/// The sparse-Y path: `Y` stays CSR.
fn sparse_path(y0: &SparseTensor<2>, layers: &[SparseTensor<2>]) -> Result<SparseTensor<2>, SparseError> {
    let bar = progress::Progress::new(layers.len() as u64, "sparse-Y layers");
    let mut y = y0.clone();
    for (l, w) in layers.iter().enumerate() {
        bar.step(l as u64 + 1, String::new);
        let z = sparse::spgemm(&y, w)?;
        let z = z.add_scalar_to_stored(BIAS);
        // relu drops the entries it zeroes; the clip keeps the pattern.
        let z = z.filter(|v| v > 0.0)?;
        y = z.clamp_stored(0.0, CLIP);
    }
    bar.finish();
    Ok(y)
}

/// The dense-Y path: `Y` dense. The bias is negative, so adding it to every element and
/// clamping at 0 gives what adding it where `Y W` is non-zero gives (a zero stays 0): one
/// elementwise pass over the product.
fn dense_path(y0: Tensor<2>, layers: &[SparseTensor<2>]) -> Tensor<2> {
    const { assert!(BIAS < 0.0, "the dense path relies on a negative bias") };
    let bar = progress::Progress::new(layers.len() as u64, "dense-Y layers ");
    let mut y = y0;
    for (l, w) in layers.iter().enumerate() {
        bar.step(l as u64 + 1, String::new);
        y = (sparse::mm_dense_sparse(y, w) + BIAS).clamp(0.0, CLIP);
    }
    bar.finish();
    y
}

fn main() -> Result<(), SparseError> {
    let args = Args::parse();
    // As the bench: both paths free and allocate the same buffers at every layer, which glibc's
    // defaults hand back and fault in again (measured: the sparse path's time doubled, with its
    // statements ordered one way rather than another).
    let kept = memory::keep_freed_memory();
    let (batch, nl) = (args.batch as usize, args.layers as usize);
    let device = Device::flex();
    // Each run gets the layers freshly built (not timed): as in the challenge, a one-pass
    // inference uses each weight matrix once, so what an op keeps on a weight tensor after its
    // first use (the dense path's transposed view of `W`) is built inside every timed run.
    let network = || -> Vec<SparseTensor<2>> { (0..nl).map(|l| layer(l, &device)).collect() };
    let y0 = inputs(batch, &device);
    let edges = (batch * NEURONS * FANOUT * nl) as f64;
    println!(
        "batch {batch}, {nl} layers of {NEURONS} neurons x {FANOUT} connections, input nnz {}; allocator: {}",
        y0.nnz(),
        if kept { "glibc keeping freed memory" } else { "the platform default" }
    );

    let dense0 = y0.to_dense();
    let (mut times_s, mut times_d) = (Vec::new(), Vec::new());
    let (mut ys, mut yd) = (None, None);
    for _ in 0..args.repeat {
        let layers = network();
        let t = Instant::now();
        ys = Some(sparse_path(&y0, &layers)?);
        times_s.push(t.elapsed().as_secs_f64());
        let layers = network();
        let t = Instant::now();
        yd = Some(dense_path(dense0.clone(), &layers));
        times_d.push(t.elapsed().as_secs_f64());
    }
    let (ys, yd) = (ys.expect("at least one run"), yd.expect("at least one run"));
    let (ts, td) = (median(&times_s), median(&times_d));
    let (crow, _) = ys.compressed_indices_flat().expect("csr");
    let crow: Vec<i64> = crow.into_data().iter::<i64>().collect();
    let cats: Vec<usize> = (0..batch).filter(|&r| crow[r + 1] > crow[r]).collect();
    let sum_s: f64 = ys.values_flat().into_data().iter::<f64>().sum();

    let rows: Vec<bool> = yd.clone().not_equal_elem(0.0).any_dim(1).into_data().iter::<bool>().collect();
    let catd: Vec<usize> = (0..batch).filter(|&r| rows[r]).collect();
    let sum_d: f64 = yd.into_data().iter::<f64>().sum();
    assert_eq!(cats, catd, "the two paths disagree on the categories");

    println!(
        "sparsegrad sparse-Y: {:9.1} ms  {:.3e} edges/s   categories {} nnz(Y) {} sum(Y) {sum_s:.4}   (runs {} ms)",
        ts * 1e3,
        edges / ts,
        cats.len(),
        ys.nnz(),
        spread(&times_s)
    );
    println!(
        "sparsegrad dense-Y:  {:9.1} ms  {:.3e} edges/s   sum(Y) {sum_d:.4}   (runs {} ms)",
        td * 1e3,
        edges / td,
        spread(&times_d)
    );
    println!("sparse-Y / dense-Y time: {:.2} (medians of {} runs each)", ts / td, args.repeat);
    Ok(())
}

/// The median of some run times (the upper one of the middle two for an even count, as the
/// other examples take it).
fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The range of some run times in ms, `min-max`.
fn spread(v: &[f64]) -> String {
    let (lo, hi) = v.iter().fold((f64::MAX, 0.0f64), |(lo, hi), &t| (lo.min(t), hi.max(t)));
    format!("{:.1}-{:.1}", lo * 1e3, hi * 1e3)
}
