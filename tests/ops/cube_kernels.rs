//! The Cube kernels of the sparse products on both of their paths, against the same ops on Flex:
//! the fast kernels (SpMM staged through shared memory with vector loads, SDDMM by plane
//! reductions; `backend::cube::path`) and the naive fallbacks a device without planes runs,
//! each forced in turn by the backend's hidden switch. SpMM is `mm`'s forward, SpMMᵀ its `X`
//! gradient (the transposed view), SDDMM its values' gradient and `sampled_addmm`.
//!
//! The cases reach every branch of the launchers: `n` a multiple of 4 (vectors of 4) and not
//! (of 1), rows of one vector and of more than a plane's worth, empty rows, a hub row and a hub
//! column long enough for the row split of both products, and a matrix without entries; in f32
//! and f64, the two types the kernels take as stored. On Flex (no device named) the test
//! compares Flex with itself and only checks that it runs.

use crate::common_ops;

use burn::tensor::{DType, Device, FloatDType, Tensor, TensorData};
use common_ops::{assert_near, dev, floats, on_wgpu};
use sparsegrad::prelude::*;
use sparsegrad::sparse::{self as sp};

/// A CSR pattern with its values, `[m, k]`.
struct Case {
    name: &'static str,
    m: usize,
    k: usize,
    crow: Vec<i64>,
    col: Vec<i64>,
    values: Vec<f64>,
}

impl Case {
    /// A case from each row's columns (sorted and deduplicated here).
    fn from_rows(name: &'static str, k: usize, rows: Vec<Vec<usize>>) -> Self {
        let (mut crow, mut col, mut values) = (vec![0i64], Vec::new(), Vec::new());
        for (r, mut cols) in rows.clone().into_iter().enumerate() {
            cols.sort_unstable();
            cols.dedup();
            for c in cols {
                col.push(c as i64);
                values.push(((r * 7 + c * 3) % 17) as f64 / 8.0 - 1.0);
            }
            crow.push(col.len() as i64);
        }
        Self { name, m: rows.len(), k, crow, col, values }
    }
}

fn cases() -> Vec<Case> {
    // Rows of 0 to 6 entries, every third row empty.
    let mixed = (0..37).map(|r| if r % 3 == 1 { vec![] } else { (0..r % 7).map(|j| (r * 5 + j * 11) % 29).collect() });
    // Row 3 holds 600 of the 700 columns (longer than a piece of 256 entries and 8 times the
    // mean): the row split. Column 5 is in all 320 rows: the column split of the transposed view.
    let hub = (0..320).map(|r| if r == 3 { (0..600).collect() } else { vec![5, (r * 13) % 700, (r * 31 + 2) % 700] });
    vec![
        Case::from_rows("mixed", 29, mixed.collect()),
        Case::from_rows("hub", 700, hub.collect()),
        Case::from_rows("no entries", 6, vec![vec![]; 5]),
    ]
}

/// Deterministic data in [-1, 1).
fn data(len: usize, seed: usize) -> Vec<f64> {
    (0..len).map(|i| ((i * 7919 + seed * 104729) % 61) as f64 / 30.5 - 1.0).collect()
}

fn dense(v: &[f64], shape: [usize; 2], dtype: DType, device: &Device) -> Tensor<2> {
    Tensor::from_data(TensorData::new(v.to_vec(), shape).convert_dtype(dtype), (device, dtype))
}

/// `A X`, then with autodiff the gradients of `sum(A X ∘ W)` (`Aᵀ W` for `X`: SpMMᵀ; SDDMM of
/// `W` and `X` for the values), then `sampled_addmm` over `A`'s pattern: all on `device`.
fn products(case: &Case, n: usize, dtype: DType, device: &Device) -> [Vec<f64>; 4] {
    let (m, k) = (case.m, case.k);
    let ad = device.clone().autodiff();
    let a = SparseTensor::csr_from_vecs(case.crow.clone(), case.col.clone(), case.values.clone(), [m, k], &ad)
        .unwrap()
        .cast(FloatDType::from(dtype));
    let x = dense(&data(k * n, 1), [k, n], dtype, &ad);
    let w = dense(&data(m * n, 2), [m, n], dtype, &ad);
    let y = floats(sp::mm(&a, x.clone()));
    let (a, x) = (a.require_grad(), x.require_grad());
    let grads = (sp::mm(&a, x.clone()) * w).sum().backward();
    let dx = floats(x.grad(&grads).expect("X gradient"));
    let dv = a.values_flat().grad(&grads).map(floats).unwrap_or_default();
    let p = dense(&data(m * n, 3), [m, n], dtype, &ad);
    let q = dense(&data(n * k, 4), [n, k], dtype, &ad);
    let s = floats(sp::sampled_addmm(&a.detach(), p, q, 0.0, 1.0).values_flat());
    [y, dx, dv, s]
}

/// The segment softmax along rows (dim 1: segments in storage order) and along columns (dim 0:
/// through the order of the transposed view), forward and backward, softmax and log-softmax,
/// one column of values (the plane kernels' case) and, as a hybrid, `width` columns.
fn softmaxes(case: &Case, width: usize, dtype: DType, device: &Device) -> [Vec<f64>; 3] {
    let ad = device.clone().autodiff();
    let (m, k) = (case.m, case.k);
    // The case's pattern with `width` values an entry: a dense `[m, k, width]` made sparse in its
    // first two dims (a hybrid CSR tensor; its values are `[nnz, width]`).
    let mut full = vec![0.0; m * k * width];
    for r in 0..m {
        for q in case.crow[r] as usize..case.crow[r + 1] as usize {
            for c in 0..width {
                full[(r * k + case.col[q] as usize) * width + c] = case.values[q] + c as f64 + 0.5;
            }
        }
    }
    let t: Tensor<3> = Tensor::from_data(TensorData::new(full, [m, k, width]), (&ad, DType::F64));
    let spec = SparseSpec { layout: Layout::Csr, dense_dim: 1, blocksize: None, index_dtype: DType::I64 };
    let a = t.to_sparse_with(spec).unwrap();
    let a = a.cast(FloatDType::from(dtype)).require_grad();
    let nnz = a.nnz();
    let w = dense(&data(nnz * width, 5), [nnz, width], dtype, &ad);
    let rows = sp::softmax(&a, 1).values_flat();
    let cols = sp::log_softmax(&a, 0).values_flat();
    let (y_rows, y_cols) = (floats(rows.clone()), floats(cols.clone()));
    let grads = ((rows + cols) * w).sum().backward();
    let dv = a.values_flat().grad(&grads).map(floats).unwrap_or_default();
    [y_rows, y_cols, dv]
}

/// `f` with the device's products on `path` (`fast`: the fast kernels, the plane ones even where
/// the client reports no planes, as lavapipe; `naive`: the fallbacks), the switch restored after,
/// even when `f` panics.
#[cfg(feature = "wgpu")]
fn on_path<T>(path: &str, f: impl FnOnce() -> T) -> T {
    use sparsegrad::backend::cube::path::{set_kernel_path, KernelPath};
    struct Restore(KernelPath);
    impl Drop for Restore {
        fn drop(&mut self) {
            set_kernel_path(self.0);
        }
    }
    let path = match path {
        "fast" => KernelPath::Planes,
        "naive" => KernelPath::Naive,
        _ => return f(),
    };
    let _restore = Restore(set_kernel_path(path));
    f()
}

#[cfg(not(feature = "wgpu"))]
fn on_path<T>(_: &str, f: impl FnOnce() -> T) -> T {
    f()
}

/// Both kernel paths of the device against Flex, on every case, width and type.
#[test]
fn fast_and_fallback_kernels_match_flex() {
    let _serial = common_ops::serial();
    let device = dev();
    let paths: &[&str] = if on_wgpu() { &["fast", "naive"] } else { &["flex"] };
    let mut checked = 0;
    for case in cases() {
        // Widths: 3 (vectors of 1, a team of 4), 4 (one vector of 4), 12 (three vectors of 4),
        // 33 (vectors of 1, two tiles of a team of 32), 64 (sixteen vectors of 4).
        for n in [3, 4, 12, 33, 64] {
            for dtype in [DType::F32, DType::F64] {
                let tol = if dtype == DType::F64 { 1e-11 } else { 2e-5 };
                let expected = products(&case, n, dtype, &Device::flex());
                for path in paths {
                    let got = on_path(path, || products(&case, n, dtype, &device));
                    let names = ["A X", "d/dX", "d/dvalues", "sampled_addmm"];
                    for (what, (g, e)) in names.iter().zip(got.iter().zip(&expected)) {
                        assert_near(g, e, tol, &format!("{} n={n} {dtype:?} {path}: {what}", case.name));
                    }
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 3 * 5 * 2 * paths.len());
}

/// The segment softmax's plane kernels and column kernels against Flex: rows of one column and
/// of three (narrower than any plane: the plane kernels), of 40 (the column kernels on either
/// path), short segments, empty ones, the hub row's and hub column's segments of 600 and 320.
#[test]
fn segment_softmax_on_both_paths_matches_flex() {
    let _serial = common_ops::serial();
    let device = dev();
    let paths: &[&str] = if on_wgpu() { &["fast", "naive"] } else { &["flex"] };
    for case in cases() {
        for width in [1, 3, 40] {
            for dtype in [DType::F32, DType::F64] {
                let tol = if dtype == DType::F64 { 1e-11 } else { 2e-5 };
                let expected = softmaxes(&case, width, dtype, &Device::flex());
                for path in paths {
                    let got = on_path(path, || softmaxes(&case, width, dtype, &device));
                    let names = ["softmax dim 1", "log_softmax dim 0", "d/dvalues"];
                    for (what, (g, e)) in names.iter().zip(got.iter().zip(&expected)) {
                        assert_near(g, e, tol, &format!("{} width={width} {dtype:?} {path}: {what}", case.name));
                    }
                }
            }
        }
    }
}

/// A rough timing of both paths on the test device (`--ignored`; lavapipe is a CPU, so this is a
/// sanity check, not a benchmark): a power-law pattern of 20,000 rows, 16 entries a row on
/// average and one hub row of 5,000, products with 64 columns, softmax of one column.
#[test]
#[ignore]
fn time_fast_against_naive() {
    let device = dev();
    let (m, k, n) = (20_000, 20_000, 64);
    let rows = (0..m).map(|r| {
        if r == 17 {
            (0..5000).map(|j| j * 4).collect()
        } else {
            (0..16).map(|j| (r * 131 + j * 977) % k).collect()
        }
    });
    let case = Case::from_rows("power law", k, rows.collect());
    let a =
        SparseTensor::csr_from_vecs(case.crow.clone(), case.col.clone(), case.values.clone(), [m, k], &device).unwrap();
    let x = dense(&data(k * n, 1), [k, n], DType::F32, &device);
    let p = dense(&data(m * n, 3), [m, n], DType::F32, &device);
    let q = dense(&data(n * k, 4), [n, k], DType::F32, &device);
    for path in ["naive", "fast", "naive", "fast"] {
        on_path(path, || {
            let time = |what: &str, f: &dyn Fn() -> Vec<f64>| {
                f();
                let t = std::time::Instant::now();
                for _ in 0..3 {
                    f();
                }
                eprintln!("{path:>5} {what:<14} {:8.1} ms", t.elapsed().as_secs_f64() * 1e3 / 3.0);
            };
            time("SpMM", &|| floats(sp::mm(&a, x.clone())));
            time("SDDMM", &|| floats(sp::sampled_addmm(&a, p.clone(), q.clone(), 0.0, 1.0).values_flat()));
            time("softmax", &|| floats(sp::softmax(&a, 1).values_flat()));
        });
    }
}
