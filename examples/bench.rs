//! The benchmark: rebuilds the workloads of `../shared/anchors/WORKLOADS.md` bit for bit (it
//! prints their nnz and value sums as proof) and times sparsegrad on them. Median of several runs
//! after a warm-up. A table by default; `--json` prints one JSON object per line
//! (`{"op":..., "workload":..., "ms":..., "gflops":...}`). Compare ratios against
//! `python ../shared/anchors/anchors.py` run on the same machine, close in time.
//!
//! Usage: `cargo run --release --example bench [-- --json] [-- --only OP]`

#[path = "workloads/mod.rs"]
mod workloads;

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use sparsegrad::prelude::*;
use std::time::Instant;

struct Bench {
    json: bool,
    only: Option<String>,
}

impl Bench {
    fn wants(&self, op: &str) -> bool {
        self.only.as_deref().is_none_or(|o| op.contains(o))
    }

    fn report(&self, op: &str, workload: &str, ms: f64, flops: Option<f64>) {
        let gflops = flops.map(|f| f / (ms * 1e-3) / 1e9);
        if self.json {
            let g = gflops.map_or("null".to_string(), |g| format!("{g:.3}"));
            println!("{{\"op\":\"{op}\",\"workload\":\"{workload}\",\"ms\":{ms:.3},\"gflops\":{g}}}");
        } else {
            let g = gflops.map_or(String::new(), |g| format!("{g:8.2} GFLOP/s"));
            println!("{op:<28} {workload:<24} {ms:10.3} ms {g}");
        }
    }
}

/// Median wall time in ms of `reps` runs after one warm-up.
fn time<R>(reps: usize, mut f: impl FnMut() -> R) -> f64 {
    std::hint::black_box(f());
    let mut ts: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ts.sort_by(f64::total_cmp);
    ts[ts.len() / 2]
}

fn ints(v: Vec<i64>, shape: [usize; 2], device: &Device) -> Tensor<2, Int> {
    Tensor::from_data(TensorData::new(v, shape), (device, DType::I64))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bench = Bench {
        json: args.iter().any(|a| a == "--json"),
        only: args.iter().position(|a| a == "--only").and_then(|i| args.get(i + 1).cloned()),
    };
    let device = Device::flex();

    for (name, make, _n, _xseed, (nnz, sum)) in workloads::set() {
        let a = make();
        if !bench.json {
            println!(
                "workload {name}: {}x{} nnz {} (expected {nnz}) sum(values) {:.3} (expected {sum})",
                a.rows,
                a.cols,
                a.nnz(),
                a.value_sum()
            );
        }
        assert_eq!(a.nnz(), nnz, "{name}: workload differs from the anchors");
        assert!((a.value_sum() - sum).abs() < 1e-2, "{name}: value sum differs from the anchors");
    }

    if bench.wants("coalesce") {
        // 10M random entries with duplicates in a 1M x 1M COO, as anchors.py (its own RNG).
        let n = 10_000_000usize;
        let mut idx = Vec::with_capacity(2 * n);
        idx.extend((0..n as u64).map(|k| (workloads::sm(7, k) % 1_000_000) as i64));
        idx.extend((0..n as u64).map(|k| (workloads::sm(8, k) % 1_000_000) as i64));
        let vals: Vec<f32> = (0..n as u64).map(|k| (workloads::unit(9, k) * 2.0 - 1.0) as f32).collect();
        let indices = ints(idx, [2, n], &device);
        let values = Tensor::<1>::from_data(TensorData::new(vals, [n]), &device);
        let s = SparseTensor::coo(indices, values, [1_000_000, 1_000_000]).expect("valid COO");
        let ms = time(3, || s.coalesce());
        bench.report("coalesce", "10M nse 1Mx1M", ms, None);
    }

    if bench.wants("dense_to_csr") {
        let a = workloads::uniform(4096, 4096, 0.1, 4);
        let d = Tensor::<2>::from_data(TensorData::new(a.to_dense(), [4096, 4096]), &device);
        let ms = time(5, || d.clone().to_sparse_csr().expect("fits"));
        bench.report("dense_to_csr", "4096^2 d=0.1", ms, None);
    }
}
