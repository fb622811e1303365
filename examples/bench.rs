//! The benchmark: rebuilds the workloads of `docs/WORKLOADS.md` bit for bit (it
//! prints their nnz and value sums as proof) and times sparsegrad on them. Several runs after a
//! warm-up: the figure is their median (GFLOP/s from it), with the minimum, the maximum and the
//! interquartile range beside it, since a shared machine's noise is 20-40 %. A table by default;
//! `--json` prints one JSON object per line (`{"op":..., "workload":..., "ms":..., "gflops":...,
//! "min_ms":..., "max_ms":..., "iqr_ms":..., "runs":...}`, `ms` the median). Compare ratios
//! against `python bench/anchors.py` (PyTorch and scipy on the same workloads) run on the same
//! machine, close in time.
//!
//! `--sums` prints, for every op, the sum of its output's values and a hash of their bits
//! instead of timing it: two builds whose sums and hashes agree computed bit-identical outputs.
//!
//! Each section (the products on one workload, spgemm, coalesce, the GCN step, dense -> CSR,
//! the 2:4 layer, svd_lowrank, softmax) runs in a process of its own, started by this one with
//! the same arguments and `--section`: a row's figure then depends on no row before it. In one
//! process, the allocator's state and the caches that earlier rows left behind moved figures by
//! up to 1.7x (coalesce on 10M entries: 327-344 ms alone, 488-571 ms after the products).
//! `--in-process` runs every section in this process, as before.
//!
//! Usage: `cargo run --release --example bench [-- --json] [--only OP] [--sums] [--in-process]`
//! (`--help`); with `--features wgpu` (or `cuda`) the `cube_*` rows time the products, the 2:4
//! layer and the GCN step on burn's Cube backend as well, on the device `--cube-device` names
//! (`--only cube` runs those alone; `bench/gpu/run.sh` runs them on a GPU machine).

#[path = "device/mod.rs"]
mod device;
#[path = "memory/mod.rs"]
mod memory;
#[path = "workloads/mod.rs"]
mod workloads;

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use clap::Parser;
use sparsegrad::prelude::*;
use std::time::Instant;

/// Times sparsegrad on the workloads of docs/WORKLOADS.md (the anchors' workloads).
#[derive(Parser, Debug)]
#[command(long_about = None)]
struct Bench {
    /// One JSON object per line instead of the table.
    #[arg(long)]
    json: bool,
    /// Only the ops whose name contains OP.
    #[arg(long, value_name = "OP")]
    only: Option<String>,
    /// Print each op's output sum and bit hash instead of timing it.
    #[arg(long)]
    sums: bool,
    /// Run every section in this process (by default each runs in a process of its own).
    #[arg(long)]
    in_process: bool,
    /// Run this section only: how the bench starts each section's process.
    #[arg(long, hide = true, value_name = "SECTION")]
    section: Option<String>,
    /// The device of the `cube_*` rows (builds with `--features wgpu` or `cuda`).
    #[arg(long, value_enum, default_value = "wgpu")]
    cube_device: device::DeviceName,
}

impl Bench {
    fn wants(&self, op: &str) -> bool {
        self.only.as_deref().is_none_or(|o| op.contains(o))
    }

    /// Whether this process runs `section` (all of them with `--in-process`, one in a
    /// section's own process).
    fn runs(&self, section: &str) -> bool {
        self.section.as_deref().is_none_or(|s| s == section)
    }

    /// Runs each section in a process of its own (this executable, the same arguments and
    /// `--section`), in order; `false` where this process is to run them itself.
    fn spawn_sections(&self, sections: &[String]) -> bool {
        if self.in_process || self.section.is_some() {
            return false;
        }
        let exe = std::env::current_exe().expect("bench: the path of this executable");
        let args: Vec<String> = std::env::args().skip(1).collect();
        for section in sections {
            let status = std::process::Command::new(&exe)
                .args(&args)
                .args(["--section", section])
                .status()
                .unwrap_or_else(|e| panic!("bench: starting section {section}: {e}"));
            if !status.success() {
                eprintln!("bench: section {section} failed ({status})");
                std::process::exit(1);
            }
        }
        true
    }

    /// Times `f` ([`time`] with `reps` runs; the median in ms), or with `--sums` prints the
    /// checksum of its output.
    fn run<const D: usize>(
        &self,
        op: &str,
        workload: &str,
        reps: usize,
        flops: Option<f64>,
        mut f: impl FnMut() -> Tensor<D>,
    ) -> f64 {
        if self.sums {
            let values: Vec<f64> = f().into_data().iter::<f64>().collect();
            let sum: f64 = values.iter().sum();
            let hash =
                values.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, v| (h ^ v.to_bits()).wrapping_mul(0x100_0000_01b3));
            println!("{op:<28} {workload:<24} sum {sum:.17e} hash {hash:016x}");
            return 0.0;
        }
        let t = time(reps, f);
        self.report(op, workload, t, flops);
        t.median
    }

    /// Two rows whose ratio is reported (an op and the route it replaces), timed in turn, the
    /// order swapped every round, so both see the same state of the machine: timed one after
    /// the other, a host whose speed drifts between the two batches decides the ratio.
    fn run_pair<const D: usize>(
        &self,
        ops: [&str; 2],
        workload: &str,
        reps: usize,
        flops: Option<f64>,
        mut f: impl FnMut() -> Tensor<D>,
        mut g: impl FnMut() -> Tensor<D>,
    ) {
        if self.sums {
            self.run(ops[0], workload, reps, flops, f);
            self.run(ops[1], workload, reps, flops, g);
            return;
        }
        let [tf, tg] = time_pair(reps, &mut f, &mut g);
        self.report(ops[0], workload, tf, flops);
        self.report(ops[1], workload, tg, flops);
    }

    /// One row: the median (and GFLOP/s from it), then min, max and IQR.
    fn report(&self, op: &str, workload: &str, t: Stats, flops: Option<f64>) {
        let ms = t.median;
        let gflops = flops.map(|f| f / (ms * 1e-3) / 1e9);
        if self.json {
            let g = gflops.map_or("null".to_string(), |g| format!("{g:.3}"));
            println!(
                "{{\"op\":\"{op}\",\"workload\":\"{workload}\",\"ms\":{ms:.3},\"gflops\":{g},\"min_ms\":{:.3},\"max_ms\":{:.3},\"iqr_ms\":{:.3},\"runs\":{}}}",
                t.min,
                t.max,
                t.iqr(),
                t.runs
            );
        } else {
            let g = gflops.map_or(" ".repeat(16), |g| format!("{g:8.2} GFLOP/s"));
            println!(
                "{op:<28} {workload:<24} {ms:10.3} ms {g}  (min {:.3}, max {:.3}, IQR {:.3} ms, {} runs)",
                t.min,
                t.max,
                t.iqr(),
                t.runs
            );
        }
    }
}

/// Wall times of the runs of one figure, in ms.
#[derive(Clone, Copy, Debug)]
struct Stats {
    min: f64,
    q1: f64,
    median: f64,
    q3: f64,
    max: f64,
    runs: usize,
}

impl Stats {
    /// The order statistics of `ts` (non-empty): quartiles by linear interpolation between
    /// the closest ranks, as numpy's default `percentile`.
    fn of(mut ts: Vec<f64>) -> Stats {
        assert!(!ts.is_empty(), "at least one run");
        ts.sort_by(f64::total_cmp);
        let q = |p: f64| {
            let pos = p * (ts.len() - 1) as f64;
            let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
            ts[lo] + (ts[hi] - ts[lo]) * (pos - lo as f64)
        };
        Stats { min: ts[0], q1: q(0.25), median: q(0.5), q3: q(0.75), max: ts[ts.len() - 1], runs: ts.len() }
    }

    /// Interquartile range.
    fn iqr(&self) -> f64 {
        self.q3 - self.q1
    }
}

/// Wall times in ms of `reps` runs after a warm-up of at least one run and 50 ms.
///
/// On this 2-core VM an L2-bound product run right after a single-threaded phase (the `sprs`
/// peer) stays about twice as slow for its first ten or so calls (10-20 ms: the idle core
/// ramping up), so one warm-up call measured the ramp, not the kernel.
fn time<R>(reps: usize, mut f: impl FnMut() -> R) -> Stats {
    let warm = Instant::now();
    std::hint::black_box(f());
    while warm.elapsed().as_secs_f64() < 0.05 {
        std::hint::black_box(f());
    }
    let ts: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    Stats::of(ts)
}

/// [`time`] of two closures in turn (`f` first in even rounds, `g` first in odd ones), after
/// the warm-up of both.
fn time_pair<R, S>(reps: usize, mut f: impl FnMut() -> R, mut g: impl FnMut() -> S) -> [Stats; 2] {
    let warm = Instant::now();
    std::hint::black_box(f());
    std::hint::black_box(g());
    while warm.elapsed().as_secs_f64() < 0.1 {
        std::hint::black_box(f());
        std::hint::black_box(g());
    }
    let (mut tf, mut tg) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    for round in 0..reps {
        for first in [round % 2 == 0, round % 2 == 1] {
            let t = Instant::now();
            if first {
                std::hint::black_box(f());
                tf.push(t.elapsed().as_secs_f64() * 1e3);
            } else {
                std::hint::black_box(g());
                tg.push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    [Stats::of(tf), Stats::of(tg)]
}

fn ints(v: Vec<i64>, shape: [usize; 2], device: &Device) -> Tensor<2, Int> {
    Tensor::from_data(TensorData::new(v, shape), (device, DType::I64))
}

fn csr_tensor(a: &workloads::Csr, device: &Device) -> SparseTensor<2> {
    let nnz = a.nnz();
    let crow = Tensor::<1, Int>::from_data(TensorData::new(a.crow.clone(), [a.rows + 1]), (device, DType::I64));
    let col = Tensor::<1, Int>::from_data(TensorData::new(a.col.clone(), [nnz]), (device, DType::I64));
    let val = Tensor::<1>::from_data(TensorData::new(a.val.clone(), [nnz]), device);
    SparseTensor::csr(crow, col, val, [a.rows, a.cols]).expect("workload is valid CSR")
}

fn dense(rows: usize, cols: usize, seed: u64, device: &Device) -> Tensor<2> {
    Tensor::from_data(TensorData::new(workloads::dense(rows, cols, seed), [rows, cols]), device)
}

/// The device of the `cube_*` rows (`--cube-device`), probed: a machine without its runtime or
/// GPU ends the bench here with the reason.
#[cfg(any(feature = "wgpu", feature = "cuda"))]
fn cube_device(bench: &Bench) -> Device {
    device::DeviceArgs { device: bench.cube_device }.device().unwrap_or_else(|e| {
        eprintln!("bench: {e}");
        std::process::exit(2)
    })
}

/// The products on burn's Cube backend (features `wgpu`, `cuda`: a GPU, or Mesa's lavapipe on
/// the CPU): spmm, sddmm and mm forward+backward, and, where the matrix fits densely, burn's own
/// dense matmul of the same output size on the same device (at 1 % a sparse product must beat
/// it). Each run waits for the device (`Device::sync`).
#[cfg(any(feature = "wgpu", feature = "cuda"))]
fn cube_products(bench: &Bench, name: &str, a: &workloads::Csr, n: usize, xseed: u64) {
    let device = cube_device(bench);
    let synced = |t: Tensor<2>| {
        device.sync().expect("the device runs");
        t
    };
    let flops = 2.0 * a.nnz() as f64 * n as f64;
    let s = csr_tensor(a, &device);
    let x = dense(a.cols, n, xseed, &device);
    bench.run("cube_spmm_csr", name, 7, Some(flops), || synced(sparse::mm(&s, x.clone())));
    let (l, r) = (dense(a.rows, n, xseed + 100, &device), dense(n, a.cols, xseed + 200, &device));
    bench.run("cube_sddmm", name, 7, Some(flops), || {
        synced(sparse::sampled_addmm(&s, l.clone(), r.clone(), 0.0, 1.0).values_flat().reshape([1, -1]))
    });
    let ad = device.clone().autodiff();
    let (sa, xa) = (csr_tensor(a, &ad), dense(a.cols, n, xseed, &ad));
    bench.run("cube_mm_fwd_bwd_values_x", name, 5, Some(3.0 * flops), || {
        let v = sa.clone().require_grad();
        let xg = xa.clone().require_grad();
        let grads = sparse::mm(&v, xg.clone()).sum().backward();
        std::hint::black_box(v.values_flat().grad(&grads).expect("values grad"));
        synced(xg.grad(&grads).expect("x grad"))
    });
    if a.rows * a.cols <= 4096 * 4096 {
        let dense_a = s.to_dense();
        bench.run("cube_matmul_dense_burn", name, 5, Some(2.0 * (a.rows * a.cols * n) as f64), || {
            synced(dense_a.clone().matmul(x.clone()))
        });
    }
}

/// Peak resident memory of this process so far, in MB (Linux; 0 elsewhere).
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// spmm (CSR, COO, sprs), sddmm and mm forward+backward on one workload.
fn products(bench: &Bench, name: &str, a: &workloads::Csr, n: usize, xseed: u64) {
    let device = Device::flex();
    let flops = 2.0 * a.nnz() as f64 * n as f64;
    let s = csr_tensor(a, &device);
    let x = dense(a.cols, n, xseed, &device);
    if bench.wants("spmm") {
        bench.run("spmm_csr", name, 7, Some(flops), || sparse::mm(&s, x.clone()));
        let coo = s.to_sparse_coo();
        bench.run("spmm_coo", name, 7, Some(flops), || sparse::mm(&coo, x.clone()));
        // The Rust peer on the same matrix and operand (timed only).
        if !bench.sums {
            let csmat = sprs::CsMat::new(
                (a.rows, a.cols),
                a.crow.iter().map(|&v| v as usize).collect(),
                a.col.iter().map(|&v| v as usize).collect(),
                a.val.clone(),
            );
            let xs = ndarray::Array2::from_shape_vec((a.cols, n), workloads::dense(a.cols, n, xseed)).expect("shape");
            let ms = time(7, || &csmat * &xs);
            bench.report("spmm_csr_sprs", name, ms, Some(flops));
        }
    }
    if bench.wants("sddmm") {
        let l = dense(a.rows, n, xseed + 100, &device);
        let r = dense(n, a.cols, xseed + 200, &device);
        bench.run("sddmm", name, 7, Some(flops), || {
            sparse::sampled_addmm(&s, l.clone(), r.clone(), 0.0, 1.0).values_flat()
        });
    }
    if bench.wants("mm_dense_sparse") {
        // Dense @ sparse, `Y [n, rows] @ A`: `mm_dense_sparse` (A's transposed view, no copy of
        // Aᵀ), and the route a torch user takes, `(Aᵀ Yᵀ)ᵀ` with Aᵀ converted to CSR (its
        // result left as a transposed view). Timed in turn: their ratio is a target.
        let y = dense(n, a.rows, xseed + 300, &device);
        let st = s.t().to_sparse_csr().expect("transpose");
        bench.run_pair(
            ["mm_dense_sparse", "mm_dense_sparse_via_t"],
            name,
            9,
            Some(flops),
            || sparse::mm_dense_sparse(y.clone(), &s),
            || sparse::mm(&st, y.clone().transpose()).transpose(),
        );
    }
    if bench.wants("mm_fwd_bwd") {
        let ad = Device::flex().autodiff();
        let sa = csr_tensor(a, &ad);
        let xa = dense(a.cols, n, xseed, &ad);
        bench.run("mm_fwd_autodiff", name, 5, Some(flops), || sparse::mm(&sa, xa.clone()));
        bench.run("mm_fwd_bwd_values_x", name, 5, Some(3.0 * flops), || {
            let v = sa.clone().require_grad();
            let xg = xa.clone().require_grad();
            let grads = sparse::mm(&v, xg.clone()).sum().backward();
            let (dv, dx) = (v.values_flat().grad(&grads).expect("values grad"), xg.grad(&grads).expect("x grad"));
            // Both gradients are computed (the backend is eager), as the anchor's backward
            // leaves them; they are concatenated only for `--sums`: a 29 MB copy is no part of
            // the step.
            if bench.sums {
                Tensor::cat(vec![dv.reshape([-1]), dx.reshape([-1])], 0)
            } else {
                std::hint::black_box(dv);
                dx.reshape([-1])
            }
        });
        bench.run("mm_fwd_bwd_x", name, 5, Some(2.0 * flops), || {
            let xg = xa.clone().require_grad();
            let grads = sparse::mm(&sa, xg.clone()).sum().backward();
            xg.grad(&grads).expect("x grad")
        });
        if !bench.json && !bench.sums {
            println!("{:<28} {name:<24} {:10.1} MB peak RSS so far", "memory", peak_rss_mb());
        }
    }
}

/// Sparse @ sparse, `A @ A` (as `bench/anchors.py`'s `spgemm` rows: scipy's `A @ A`, PyTorch's
/// CSR @ CSR): the CSR product with sorted columns, and its forward + backward w.r.t. both
/// operands' values. uniform4096_d10 is skipped there (624M products, a dense result).
fn spgemm_rows(bench: &Bench, name: &str, a: &workloads::Csr) {
    if name == "uniform4096_d10" {
        return;
    }
    let device = Device::flex();
    let s = csr_tensor(a, &device);
    let workload = format!("{name} A@A");
    bench.run("spgemm", &workload, 7, None, || sparse::spgemm(&s, &s).expect("square").values_flat());
    if bench.wants("spgemm_fwd_bwd") {
        let ad = Device::flex().autodiff();
        let sa = csr_tensor(a, &ad);
        bench.run("spgemm_fwd_bwd", &workload, 5, None, || {
            let (l, r) = (sa.clone().require_grad(), sa.clone().require_grad());
            let grads = sparse::spgemm(&l, &r).expect("square").values_flat().sum().backward();
            let (dl, dr) = (l.values_flat().grad(&grads).expect("grad"), r.values_flat().grad(&grads).expect("grad"));
            Tensor::cat(vec![dl.reshape([-1]), dr.reshape([-1])], 0)
        });
    }
}

#[derive(burn::module::Module, Debug)]
struct Gcn2 {
    l0: sparsegrad::nn::GcnConv,
    l1: sparsegrad::nn::GcnConv,
}

/// One GCN training step on a Planetoid graph (Cora, CiteSeer: forward, backward, Adam), as
/// `bench/anchor_gcn.py` (which trains on dense features; here they stay sparse).
/// `op` names the row; each step waits for the device (`Device::sync`, nothing to wait for on
/// Flex).
fn gcn_step(bench: &Bench, op: &str, name: &str, device: &Device) {
    use burn::nn::loss::CrossEntropyLossConfig;
    use burn::optim::{AdamConfig, GradientsParams};
    use sparsegrad::nn::{gcn_norm, GcnConvConfig, Planetoid};
    let g = Planetoid::new(None, name).unwrap_or_else(|e| panic!("{e}"));
    let device = device.clone().autodiff();
    let adj = gcn_norm(&g.edges, g.nodes, &device).expect("valid graph");
    let x = g.features_csr(&device);
    let train = Tensor::<1, Int>::from_data(
        TensorData::new(g.train.iter().map(|&i| i as i64).collect::<Vec<_>>(), [g.train.len()]),
        (&device, DType::I64),
    );
    let labels = Tensor::<1, Int>::from_data(
        TensorData::new(g.train.iter().map(|&i| g.labels[i] as i64).collect::<Vec<_>>(), [g.train.len()]),
        &device,
    );
    let mut model = Some(Gcn2 {
        // The anchor's layers have no bias.
        l0: GcnConvConfig::new(g.num_features, 16).with_bias(false).init(&device),
        l1: GcnConvConfig::new(16, g.num_classes).with_bias(false).init(&device),
    });
    let mut optim = AdamConfig::new().init();
    let loss_fn = CrossEntropyLossConfig::new().init(&device);
    let ms = time(20, || {
        let m = model.take().expect("model");
        let h = burn::tensor::activation::relu(m.l0.forward_sparse(&x, &adj));
        let logits = m.l1.forward(h, &adj).select(0, train.clone());
        let w0 = m.l0.weight.val();
        let loss = loss_fn.forward(logits, labels.clone()) + (w0.clone() * w0).sum() * 2.5e-4;
        let grads = GradientsParams::from_grads(loss.backward(), &m);
        model = Some(optim.step(0.01, m, grads));
        device.sync().expect("the device runs");
    });
    bench.report(op, &name.to_lowercase(), ms, None);
}

/// The 2:4 linear layer's product against burn's dense matmul on Flex, same shapes, same run:
/// `x [M, K] · Wᵀ` with `W [N, K]` pruned to 2:4 by magnitude (the anchors time PyTorch's dense
/// `F.linear` on these shapes; PyTorch has no CPU 2:4 kernel), at prefill sizes (M = 256, 64)
/// and decode sizes (M = 8, 1), where the weight's bytes bound the product.
fn linear_2_4(bench: &Bench, device: &Device) {
    use sparsegrad::sparse::semi_structured::{linear, SemiPattern, SemiStructuredTensor};
    for (m, k, n) in [(256usize, 4096usize, 4096usize), (64, 4096, 11008), (8, 4096, 11008), (1, 4096, 11008)] {
        let x = dense(m, k, 11, device);
        let w = sparsegrad::nn::prune_2_4(dense(n, k, 12, device)).expect("K is a multiple of 4");
        let ws = SemiStructuredTensor::from_dense(w.clone(), SemiPattern::TwoFour).expect("2:4 after pruning");
        let shape = format!("M={m} K={k} N={n}");
        let flops = 2.0 * (m * k * n) as f64;
        let dense_ms =
            bench.run("linear_dense_burn", &shape, 7, Some(flops), || x.clone().matmul(w.clone().transpose()));
        // Dense-equivalent GFLOP/s: the 2:4 product does half the multiply-adds.
        let semi_ms = bench.run("linear_2:4", &shape, 7, Some(flops), || linear(x.clone(), &ws, None));
        if !bench.json && !bench.sums {
            println!(
                "{:<28} {shape:<24} {:10.2}x faster than burn's dense matmul",
                "linear_2:4 / dense",
                dense_ms / semi_ms
            );
            // At decode sizes the weight's bytes are the cost: each product reads them once.
            let dense_bytes = (n * k * 4) as f64;
            let semi_bytes = (n * (k / 2) * 4 + n * k.div_ceil(16) * 2) as f64;
            println!(
                "{:<28} {shape:<24} {:10.1} GB/s 2:4 ({:.1} MB), {:.1} GB/s dense ({:.1} MB)",
                "linear weight bytes / time",
                semi_bytes / (semi_ms * 1e-3) / 1e9,
                semi_bytes / 1e6,
                dense_bytes / (dense_ms * 1e-3) / 1e9,
                dense_bytes / 1e6
            );
        }
        if m <= 16 {
            // bf16 values (half the bytes again), sums in f32: the anchors time PyTorch's bf16
            // dense `F.linear` on these shapes.
            let (xb, wb) = (x.clone().cast(DType::BF16), w.clone().cast(DType::BF16));
            let wsb = SemiStructuredTensor::from_dense(wb, SemiPattern::TwoFour).expect("2:4 after pruning");
            let bf16_ms = bench.run("linear_2:4_bf16", &shape, 7, Some(flops), || linear(xb.clone(), &wsb, None));
            if !bench.json && !bench.sums {
                let bytes = (n * (k / 2) * 2 + n * k.div_ceil(16) * 2) as f64;
                println!(
                    "{:<28} {shape:<24} {:10.1} GB/s 2:4 bf16 ({:.1} MB)",
                    "linear weight bytes / time",
                    bytes / (bf16_ms * 1e-3) / 1e9,
                    bytes / 1e6
                );
            }
        }
    }
}

/// The 2:4 linear layer's product on the Cube device against burn's dense matmul there, at the
/// shape PyTorch's semi-structured (cuSPARSELt) anchor uses, M = K = N = 4096: in f16 on CUDA
/// (the anchor's dtype), in f32 on wgpu (lavapipe and WGSL have no f16 storage everywhere).
#[cfg(any(feature = "wgpu", feature = "cuda"))]
fn cube_linear_2_4(bench: &Bench) {
    use sparsegrad::sparse::semi_structured::{linear, SemiPattern, SemiStructuredTensor};
    let device = cube_device(bench);
    let dtype = if bench.cube_device == device::DeviceName::Cuda { DType::F16 } else { DType::F32 };
    let (m, k, n) = (4096usize, 4096usize, 4096usize);
    let x = dense(m, k, 11, &device).cast(dtype);
    let w = sparsegrad::nn::prune_2_4(dense(n, k, 12, &device)).expect("K is a multiple of 4").cast(dtype);
    let ws = SemiStructuredTensor::from_dense(w.clone(), SemiPattern::TwoFour).expect("2:4 after pruning");
    let shape = format!("M={m} K={k} N={n} {dtype:?}");
    let flops = 2.0 * (m * k * n) as f64;
    let synced = |t: Tensor<2>| {
        device.sync().expect("the device runs");
        t
    };
    bench.run("cube_linear_dense_burn", &shape, 7, Some(flops), || synced(x.clone().matmul(w.clone().transpose())));
    bench.run("cube_linear_2:4", &shape, 7, Some(flops), || synced(linear(x.clone(), &ws, None)));
}

/// This machine's f32 multiply-add peak (GFLOP/s, all threads: independent AVX-512 or AVX2
/// FMA chains, the widest the CPU has) and stream bandwidth (GB/s, a parallel triad
/// `a = b + s c` over 3 x 128 MB, counting the bytes read and written), measured once: the
/// bars the linear rows' fractions are taken against.
fn machine_peaks() -> (f64, f64) {
    use rayon::prelude::*;
    let threads = rayon::current_num_threads();
    const ITERS: usize = 20_000_000;
    let fma = |width: usize| {
        let t = Instant::now();
        let sums: f32 = (0..threads).into_par_iter().map(|i| chains(ITERS, i as f32 * 1e-9)).sum();
        std::hint::black_box(sums);
        (threads * ITERS * 12 * width * 2) as f64 / t.elapsed().as_secs_f64() / 1e9
    };
    // Twelve independent chains of `width`-lane FMAs: enough to cover the latency on any core.
    #[cfg(target_arch = "x86_64")]
    fn chains(iters: usize, seed: f32) -> f32 {
        #[target_feature(enable = "avx512f")]
        unsafe fn avx512(iters: usize, seed: f32) -> f32 {
            use std::arch::x86_64::*;
            let (m, a) = (_mm512_set1_ps(0.999_999), _mm512_set1_ps(seed));
            let mut acc = [_mm512_set1_ps(1.0); 12];
            for _ in 0..iters {
                for x in acc.iter_mut() {
                    *x = _mm512_fmadd_ps(*x, m, a);
                }
            }
            acc.iter().map(|&x| _mm512_reduce_add_ps(x)).sum()
        }
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2(iters: usize, seed: f32) -> f32 {
            use std::arch::x86_64::*;
            let (m, a) = (_mm256_set1_ps(0.999_999), _mm256_set1_ps(seed));
            let mut acc = [_mm256_set1_ps(1.0); 12];
            for _ in 0..iters {
                for x in acc.iter_mut() {
                    *x = _mm256_fmadd_ps(*x, m, a);
                }
            }
            let mut lanes = [0f32; 8];
            acc.iter()
                .map(|&x| {
                    // SAFETY: `lanes` holds the 8 floats stored.
                    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), x) };
                    lanes.iter().sum::<f32>()
                })
                .sum()
        }
        if is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (checked).
            unsafe { avx512(iters, seed) }
        } else if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has AVX2 and FMA (checked).
            unsafe { avx2(iters, seed) }
        } else {
            0.0
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    fn chains(_: usize, _: f32) -> f32 {
        0.0
    }
    #[cfg(target_arch = "x86_64")]
    let width = if is_x86_feature_detected!("avx512f") { 16 } else { 8 };
    #[cfg(not(target_arch = "x86_64"))]
    let width = 0;
    let peak = fma(width);
    let n = 32 << 20;
    let (b, c) = (vec![1.0f32; n], vec![2.0f32; n]);
    let mut a = vec![0.0f32; n];
    let triad = |a: &mut [f32]| {
        a.par_chunks_mut(1 << 16)
            .zip(b.par_chunks(1 << 16))
            .zip(c.par_chunks(1 << 16))
            .for_each(|((a, b), c)| a.iter_mut().zip(b).zip(c).for_each(|((a, &b), &c)| *a = b + 3.0 * c));
    };
    triad(&mut a);
    let t = time(5, || triad(&mut a));
    (peak, (3 * n * 4) as f64 / (t.min * 1e-3) / 1e9)
}

/// Forward and backward of a linear layer `[M, K] -> [M, N]` (gradients of the weight and the
/// input from `y.sum()`): `SemiStructuredLinear` against burn's `Linear`, both under autodiff on
/// Flex.
fn linear_fwd_bwd(bench: &Bench, m: usize, k: usize, n: usize) {
    use sparsegrad::nn::SemiStructuredLinearConfig;
    let ad = Device::flex().autodiff();
    let shape = format!("M={m} K={k} N={n}");
    let flops = 3.0 * 2.0 * (m * k * n) as f64;
    let x = dense(m, k, 21, &ad);
    let dense_layer = burn::nn::LinearConfig::new(k, n).init(&ad);
    let dense_ms = bench.run("linear_dense_burn_fwd_bwd", &shape, 5, Some(flops), || {
        let xg = x.clone().require_grad();
        let grads = dense_layer.forward(xg.clone()).sum().backward();
        std::hint::black_box(dense_layer.weight.val().grad(&grads).expect("weight grad"));
        xg.grad(&grads).expect("x grad")
    });
    let semi_layer = SemiStructuredLinearConfig::new(k, n).init(&ad);
    let semi_ms = bench.run("linear_2:4_fwd_bwd", &shape, 5, Some(flops), || {
        let xg = x.clone().require_grad();
        let grads = semi_layer.forward(xg.clone()).sum().backward();
        std::hint::black_box(semi_layer.values.val().grad(&grads).expect("values grad"));
        xg.grad(&grads).expect("x grad")
    });
    if !bench.json && !bench.sums {
        println!(
            "{:<28} {shape:<24} {:10.2}x faster than burn's dense Linear",
            "linear_2:4_fwd_bwd / dense",
            dense_ms / semi_ms
        );
    }
}

/// The CPU's model name, as Linux reports it (`/proc/cpuinfo`), or why it is unknown.
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines().find_map(|l| {
                l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, m)| m.trim().to_owned())
            })
        })
        .unwrap_or_else(|| format!("unknown {} CPU", std::env::consts::ARCH))
}

fn main() {
    let bench = Bench::parse();
    // The vector path the kernels run (the best this CPU has, or SPARSEGRAD_ISA's), checked
    // before anything runs: a path the CPU lacks ends the bench here with the reason.
    let isa = match sparsegrad::kernels::simd::isa_checked() {
        Ok(isa) => isa,
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::exit(2);
        }
    };
    let supported: Vec<&str> = sparsegrad::kernels::simd::supported().iter().map(|i| i.name()).collect();
    let first = format!(
        "path: {isa} (this CPU: {}), CPU: {}, {} threads",
        supported.join(", "),
        cpu_model(),
        rayon::current_num_threads()
    );
    // The header and the workloads' proof once, from the first process.
    let quiet = bench.json || bench.section.is_some();
    if bench.section.is_none() {
        if bench.json {
            println!("{{\"path\":\"{isa}\",\"cpu\":{:?},\"threads\":{}}}", cpu_model(), rayon::current_num_threads());
        } else {
            println!("{first}");
        }
    }
    let kept = std::env::var_os("SPARSEGRAD_BENCH_DEFAULT_MALLOC").is_none() && memory::keep_freed_memory();
    if !quiet {
        println!(
            "allocator: {}",
            if kept {
                "glibc keeping freed memory (mallopt; SPARSEGRAD_BENCH_DEFAULT_MALLOC=1 for its defaults)"
            } else {
                "the platform default"
            }
        );
    }
    let device = Device::flex();

    let mut built = Vec::new();
    for (name, make, n, xseed, (nnz, sum)) in workloads::set() {
        let a = make();
        if !quiet {
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
        built.push((name, a, n, xseed));
    }

    let mut sections: Vec<String> = built.iter().map(|b| format!("products:{}", b.0)).collect();
    #[cfg(any(feature = "wgpu", feature = "cuda"))]
    if bench.wants("cube") {
        sections.extend(built.iter().map(|b| format!("cube:{}", b.0)));
        sections.extend(["cube:linear", "cube:gcn_step"].map(String::from));
    }
    let named = ["spgemm", "coalesce", "gcn_step", "dense_to_csr", "linear", "svd_lowrank", "softmax"];
    sections.extend(named.iter().filter(|s| bench.wants(s)).map(|s| s.to_string()));
    if bench.spawn_sections(&sections) {
        return;
    }

    for (name, a, n, xseed) in &built {
        if bench.runs(&format!("products:{name}")) {
            products(&bench, name, a, *n, *xseed);
        }
    }
    #[cfg(any(feature = "wgpu", feature = "cuda"))]
    if bench.wants("cube") {
        for (name, a, n, xseed) in &built {
            if bench.runs(&format!("cube:{name}")) {
                cube_products(&bench, name, a, *n, *xseed);
            }
        }
        if bench.runs("cube:linear") {
            cube_linear_2_4(&bench);
        }
        if bench.runs("cube:gcn_step") && !bench.sums {
            gcn_step(&bench, "cube_gcn_train_step", "Cora", &cube_device(&bench));
        }
    }

    if bench.wants("spgemm") && bench.runs("spgemm") {
        for (name, a, _, _) in &built {
            spgemm_rows(&bench, name, a);
        }
    }

    if bench.wants("coalesce") && bench.runs("coalesce") {
        // 10M random entries with duplicates in a 1M x 1M COO, as anchors.py (its own RNG).
        let n = 10_000_000usize;
        let mut idx = Vec::with_capacity(2 * n);
        idx.extend((0..n as u64).map(|k| (workloads::sm(7, k) % 1_000_000) as i64));
        idx.extend((0..n as u64).map(|k| (workloads::sm(8, k) % 1_000_000) as i64));
        let vals: Vec<f32> = (0..n as u64).map(|k| (workloads::unit(9, k) * 2.0 - 1.0) as f32).collect();
        let indices = ints(idx, [2, n], &device);
        let values = Tensor::<1>::from_data(TensorData::new(vals, [n]), &device);
        let s = SparseTensor::coo(indices, values, [1_000_000, 1_000_000]).expect("valid COO");
        bench.run("coalesce", "10M nse 1Mx1M", 3, None, || s.coalesce().values_flat());
    }

    if bench.wants("gcn_step") && bench.runs("gcn_step") && !bench.sums {
        gcn_step(&bench, "gcn_train_step", "Cora", &device);
        gcn_step(&bench, "gcn_train_step", "CiteSeer", &device);
    }

    if bench.wants("dense_to_csr") && bench.runs("dense_to_csr") {
        let a = workloads::uniform(4096, 4096, 0.1, 4);
        let d = Tensor::<2>::from_data(TensorData::new(a.to_dense(), [4096, 4096]), &device);
        bench.run("dense_to_csr", "4096^2 d=0.1", 5, None, || d.clone().to_sparse_csr().expect("fits").values_flat());
    }

    if bench.wants("linear") && bench.runs("linear") {
        if !bench.json && !bench.sums {
            let (fma, stream) = machine_peaks();
            println!(
                "{:<28} {:<24} {fma:10.1} GFLOP/s f32 FMA peak, {stream:.1} GB/s stream triad ({} threads)",
                "machine",
                "",
                rayon::current_num_threads()
            );
        }
        linear_2_4(&bench, &device);
        linear_fwd_bwd(&bench, 256, 4096, 4096);
    }

    if bench.wants("svd_lowrank") && bench.runs("svd_lowrank") {
        // torch.svd_lowrank(A_coo, q=16, niter=2) in the anchors (a coalesced COO input): timed
        // here on CSR and on COO (which converts to CSR once per call). The test matrix is drawn
        // from burn's generator, seeded at every call so that `--sums` is reproducible.
        for (name, a, _, _) in &built {
            let csr = csr_tensor(a, &device);
            let coo = csr.to_sparse_coo();
            for (op, s) in [("svd_lowrank", &csr), ("svd_lowrank_coo", &coo)] {
                bench.run(op, name, 5, None, || {
                    device.seed(1);
                    sparsegrad::linalg::svd_lowrank(s, Some(16), Some(2), None).expect("q <= min(m, n)").1
                });
            }
        }
    }

    if bench.wants("softmax") && bench.runs("softmax") {
        // torch.sparse.softmax(A_coo, 1) on powerlaw100k (anchor 26.9 ms): a coalesced COO input.
        if let Some((name, a, _, _)) = built.iter().find(|b| b.0 == "powerlaw100k") {
            let s = csr_tensor(a, &device).to_sparse_coo();
            bench.run("softmax", &format!("{name} COO dim 1"), 5, None, || {
                sparsegrad::sparse::softmax(&s, 1).values_flat()
            });
        }
    }
}
