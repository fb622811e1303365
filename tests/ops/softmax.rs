//! `sparse::softmax` and `sparse::log_softmax` (docs/SPEC.md sections 3 and 4) against a dense reference
//! computed with burn's own softmax on a dense tensor holding -inf at every unspecified position,
//! compared at the stored positions: every layout (COO, uncoalesced COO, CSR, CSC, BSR, BSC),
//! every indexed dim, dense dims of hybrid tensors, batches, f32 and f64, empty tensors and
//! slices without entries (which stay empty), and a size that runs the kernels in parallel.
//! Gradients: `gradcheck` of both functions on COO and CSR (and the other layouts), through the
//! values and through `to_dense`.

use crate::common_ops;

use crate::common_ops::gradcheck;
use burn::tensor::{activation, DType, Device, Tensor, TensorData};
use common_ops::{ad, assert_near, flat, floats, halves_reversed, ints, numel, Kind, Rng};
use sparsegrad::gradcheck::{GradInput, GradcheckOptions};
use sparsegrad::prelude::*;
use sparsegrad::sparse as sp;

/// Host data of `shape` whose first `indexed` dims form a random pattern of about `density`
/// (dense items fully non-zero), with the slice at 1 along dim 0 and at 2 along dim 1 empty.
fn pattern_data(shape: &[usize], indexed: usize, density: f64, rng: &mut Rng) -> Vec<f64> {
    let item = numel(&shape[indexed..]);
    let strides: Vec<usize> = (0..indexed).map(|d| numel(&shape[d + 1..indexed])).collect();
    let mut data = vec![0.0; numel(shape)];
    for key in 0..numel(&shape[..indexed]) {
        let coord = |d: usize| key / strides[d] % shape[d];
        let empty = (shape[0] > 2 && coord(0) == 1) || (indexed > 1 && shape[1] > 2 && coord(1) == 2);
        if !empty && rng.unit() < density {
            for t in 0..item {
                data[key * item + t] = rng.value();
            }
        }
    }
    data
}

/// A sparse tensor of `kind` holding `data`; `V` is the rank of COO values (1 + dense dims). As
/// `CooDup` every entry is split in two halves, the copies appended in reverse order.
fn make<const D: usize, const V: usize>(
    data: &[f64],
    shape: [usize; D],
    kind: Kind,
    dense_dim: usize,
    dtype: DType,
    device: &Device,
) -> SparseTensor<D> {
    let dense = Tensor::<D>::from_data(TensorData::new(data.to_vec(), shape), (device, dtype));
    let (layout, blocksize) = kind.layout();
    let s = dense.to_sparse_with(SparseSpec { layout, dense_dim, blocksize, index_dtype: DType::I64 }).unwrap();
    if kind != Kind::CooDup {
        return s;
    }
    halves_reversed::<D, V>(&s)
}

/// burn's dense softmax along `dim` of `s` with -inf at unspecified positions, read at the
/// stored positions (zero elsewhere), in f64.
fn reference<const D: usize>(s: &SparseTensor<D>, dim: usize, log: bool) -> Vec<f64> {
    let c = s.to_sparse_coo().coalesce();
    let shape = c.shape();
    let sd = c.sparse_dim();
    let item = numel(&shape[sd..]);
    let (idx, vals, n) = (ints(c.indices().unwrap()), floats(c.values_flat()), c.nnz());
    let mut full = vec![f64::NEG_INFINITY; numel(&shape)];
    let mut stored = vec![false; full.len()];
    for j in 0..n {
        let key = (0..sd).fold(0, |k, d| k * shape[d] + idx[d * n + j] as usize);
        for t in 0..item {
            full[key * item + t] = vals[j * item + t];
            stored[key * item + t] = true;
        }
    }
    // On the host: the reference does not depend on the device under test (f64 exp on a wgpu
    // device is not exact).
    let t = Tensor::<D>::from_data(TensorData::new(full, shape), (&Device::flex(), DType::F64));
    let r = if log { activation::log_softmax(t, dim) } else { activation::softmax(t, dim) };
    floats(r).into_iter().zip(stored).map(|(v, s)| if s { v } else { 0.0 }).collect()
}

/// Both functions along `dim` against the reference: values, pattern (the coalesced input's),
/// layout.
fn check<const D: usize>(s: &SparseTensor<D>, dim: usize, what: &str) {
    let tol = if s.dtype() == DType::F64 { 1e-12 } else { 2e-6 };
    let pattern = |t: &SparseTensor<D>| ints(t.to_sparse_coo().coalesce().indices().unwrap());
    for log in [false, true] {
        let what = format!("{what} dim {dim} log {log}");
        let y = if log { sp::log_softmax(s, dim) } else { sp::softmax(s, dim) };
        assert_eq!((y.layout(), y.shape(), y.dtype()), (s.layout(), s.shape(), s.dtype()), "{what}");
        assert!(y.is_coalesced(), "{what}: the result is coalesced");
        assert_eq!(y.nnz(), s.coalesce().nnz(), "{what}: one output per stored element");
        assert_eq!(pattern(&y), pattern(s), "{what}: the input's pattern");
        assert_near(&floats(y.to_dense()), &reference(s, dim, log), tol, &what);
    }
}

const KINDS: [Kind; 6] = [Kind::Coo, Kind::CooDup, Kind::Csr, Kind::Csc, Kind::Bsr([2, 3]), Kind::Bsc([3, 2])];

#[test]
fn matrices_on_every_layout_and_dim() {
    let mut rng = Rng(1);
    let data = pattern_data(&[6, 6], 2, 0.5, &mut rng);
    for dtype in [DType::F32, DType::F64] {
        for kind in KINDS {
            let s = make::<2, 1>(&data, [6, 6], kind, 0, dtype, &crate::common_ops::dev());
            for dim in 0..2 {
                check(&s, dim, &format!("{kind:?} {dtype:?}"));
            }
        }
    }
}

/// torch's own example shape: `[[1, _, 2], [_, _, _], [3, 4, _]]` along both dims, by hand.
#[test]
fn a_small_matrix_by_hand() {
    let device = crate::common_ops::dev();
    let d = Tensor::<2>::from_data(
        TensorData::new(vec![1.0f64, 0.0, 2.0, 0.0, 0.0, 0.0, 3.0, 4.0, 0.0], [3, 3]),
        (&device, DType::F64),
    );
    let s = d.to_sparse().unwrap();
    let (e1, e2, e3, e4) = (1f64.exp(), 2f64.exp(), 3f64.exp(), 4f64.exp());
    let rows = floats(sp::softmax(&s, 1).to_dense());
    let expected = [e1 / (e1 + e2), 0.0, e2 / (e1 + e2), 0.0, 0.0, 0.0, e3 / (e3 + e4), e4 / (e3 + e4), 0.0];
    assert_near(&rows, &expected, 1e-15, "dim 1");
    let cols = floats(sp::softmax(&s, 0).to_dense());
    let expected = [e1 / (e1 + e3), 0.0, 1.0, 0.0, 0.0, 0.0, e3 / (e1 + e3), 1.0, 0.0];
    assert_near(&cols, &expected, 1e-15, "dim 0");
    let logs = floats(sp::log_softmax(&s, 1).values_flat());
    let expected = [1.0 - (e1 + e2).ln(), 2.0 - (e1 + e2).ln(), 3.0 - (e3 + e4).ln(), 4.0 - (e3 + e4).ln()];
    assert_near(&logs, &expected, 1e-15, "log dim 1");
}

#[test]
fn higher_rank_coo_and_hybrid_values() {
    let mut rng = Rng(2);
    for dtype in common_ops::transcendental_dtypes([DType::F32, DType::F64]) {
        // Three sparse dims: every dim groups differently (storage order only for the last).
        let data = pattern_data(&[4, 5, 3], 3, 0.4, &mut rng);
        for kind in [Kind::Coo, Kind::CooDup] {
            let s = make::<3, 1>(&data, [4, 5, 3], kind, 0, dtype, &crate::common_ops::dev());
            for dim in 0..3 {
                check(&s, dim, &format!("3-sparse {kind:?} {dtype:?}"));
            }
        }
        // Two sparse dims and a dense dim of 3: a softmax per dense column along 0 and 1, a
        // plain softmax of each item along 2.
        let data = pattern_data(&[5, 4, 3], 2, 0.5, &mut rng);
        for kind in [Kind::Coo, Kind::CooDup, Kind::Csr, Kind::Csc, Kind::Bsr([1, 2])] {
            let s = make::<3, 2>(&data, [5, 4, 3], kind, 1, dtype, &crate::common_ops::dev());
            for dim in 0..3 {
                check(&s, dim, &format!("hybrid {kind:?} {dtype:?}"));
            }
        }
    }
}

#[test]
fn batched_compressed_tensors() {
    // Equal counts per batch entry: the same pattern twice with different values.
    let mut rng = Rng(3);
    let one = pattern_data(&[4, 5], 2, 0.5, &mut rng);
    let data: Vec<f64> = one.iter().chain(&one).enumerate().map(|(i, &v)| if i >= 20 { v * 1.5 } else { v }).collect();
    for dtype in [DType::F32, DType::F64] {
        for kind in [Kind::Csr, Kind::Csc, Kind::Coo] {
            let s = make::<3, 1>(&data, [2, 4, 5], kind, 0, dtype, &crate::common_ops::dev());
            for dim in 0..3 {
                check(&s, dim, &format!("batched {kind:?} {dtype:?}"));
            }
        }
    }
}

#[test]
fn empty_tensors_and_empty_slices() {
    for dtype in [DType::F32, DType::F64] {
        let e = SparseTensor::<2>::empty_with([3, 4], 2, DType::I64, dtype, &crate::common_ops::dev()).unwrap();
        let h = SparseTensor::<3>::empty_with([3, 4, 2], 2, DType::I32, dtype, &crate::common_ops::dev()).unwrap();
        for dim in 0..2 {
            let y = sp::softmax(&e, dim);
            assert_eq!((y.nnz(), y.shape(), y.dtype()), (0, [3, 4], dtype));
            assert_eq!(sp::log_softmax(&h, dim).nnz(), 0);
            let csr = e.to_sparse_csr().unwrap();
            assert_eq!(sp::softmax(&csr, dim).nnz(), 0);
        }
        assert_eq!(sp::softmax(&h, 2).nnz(), 0);
        // Zero-size dims.
        let z = SparseTensor::<2>::empty_with([0, 4], 2, DType::I64, dtype, &crate::common_ops::dev()).unwrap();
        assert_eq!(sp::softmax(&z, 1).shape(), [0, 4]);
        let zb = Tensor::<3>::zeros([0, 4, 5], (&crate::common_ops::dev(), dtype)).to_sparse_csr().unwrap();
        for dim in 0..3 {
            assert_eq!(sp::softmax(&zb, dim).shape(), [0, 4, 5]);
        }
    }
    // A row and a column without entries stay empty (pattern_data empties row 1 and column 2).
    let mut rng = Rng(4);
    let data = pattern_data(&[5, 5], 2, 0.9, &mut rng);
    let s = make::<2, 1>(&data, [5, 5], Kind::Csr, 0, DType::F64, &crate::common_ops::dev());
    for dim in 0..2 {
        let d = floats(sp::softmax(&s, dim).to_dense());
        assert!(d[5..10].iter().all(|&v| v == 0.0), "row 1 stays empty");
        assert!((0..5).all(|r| d[r * 5 + 2] == 0.0), "column 2 stays empty");
    }
    // Every stored element of a row: the outputs sum to 1.
    let y = floats(sp::softmax(&s, 1).to_dense());
    for r in [0, 2, 3, 4] {
        let sum: f64 = y[r * 5..r * 5 + 5].iter().sum();
        assert!((sum - 1.0).abs() < 1e-14 || y[r * 5..r * 5 + 5].iter().all(|&v| v == 0.0), "row {r} sums to {sum}");
    }
}

#[test]
fn large_inputs_run_in_parallel_blocks() {
    // 400 x 400 at 50 %: about 80 000 stored elements, past the kernels' parallel threshold,
    // with rows and columns of uneven lengths (storage order along 1, a sort along 0).
    let mut rng = Rng(5);
    let shape = [400, 400];
    let mut data = vec![0.0; 160_000];
    for (i, v) in data.iter_mut().enumerate() {
        let density = if (i / 400) % 7 == 0 { 0.95 } else { 0.45 };
        if rng.unit() < density {
            *v = 4.0 * rng.value();
        }
    }
    for kind in [Kind::Coo, Kind::Csr] {
        let s = make::<2, 1>(&data, shape, kind, 0, DType::F32, &crate::common_ops::dev());
        assert!(s.nnz() > 70_000);
        for dim in 0..2 {
            check(&s, dim, &format!("large {kind:?}"));
        }
    }
}

#[test]
fn bad_dims_are_errors() {
    let s = SparseTensor::<2>::empty([3, 4], &crate::common_ops::dev());
    let err = sp::try_softmax(&s, 2).unwrap_err();
    assert!(err.to_string().contains("dim 2 out of range"), "{err}");
    assert!(sp::try_log_softmax(&s, 5).is_err());
    let panicked = std::panic::catch_unwind(|| sp::softmax(&s, 2)).is_err();
    assert!(panicked, "the panicking form panics");
}

// ---------------------------------------------------------------- gradients

/// gradcheck of both functions along `dim`, read through the values and through `to_dense`.
fn gradcheck_softmax<const D: usize>(s: &SparseTensor<D>, dim: usize, what: &str) {
    let dims = s.values_flat().dims();
    let input = GradInput::sparse("values", s);
    for log in [false, true] {
        for via_dense in [false, true] {
            let f = |v: &[Tensor<1>]| {
                let x = s.with_values(v[0].clone().reshape(dims));
                let y = if log { sp::log_softmax(&x, dim) } else { sp::softmax(&x, dim) };
                if via_dense {
                    flat(y.to_dense())
                } else {
                    flat(y.values_flat())
                }
            };
            let report = gradcheck(f, std::slice::from_ref(&input), GradcheckOptions::default());
            let report = report.unwrap_or_else(|e| panic!("{what} dim {dim} log {log} dense {via_dense}: {e}"));
            assert_eq!(report.checked, numel(&dims));
        }
    }
}

#[test]
fn gradcheck_on_coo_and_csr() {
    let mut rng = Rng(6);
    let data = pattern_data(&[5, 6], 2, 0.5, &mut rng);
    for kind in [Kind::Coo, Kind::CooDup, Kind::Csr] {
        let s = make::<2, 1>(&data, [5, 6], kind, 0, DType::F64, &ad());
        for dim in 0..2 {
            gradcheck_softmax(&s, dim, &format!("{kind:?}"));
        }
    }
}

#[test]
fn gradcheck_on_the_other_layouts_hybrids_and_higher_ranks() {
    let mut rng = Rng(7);
    let data = pattern_data(&[6, 6], 2, 0.4, &mut rng);
    for kind in [Kind::Csc, Kind::Bsr([2, 3]), Kind::Bsc([3, 2])] {
        let s = make::<2, 1>(&data, [6, 6], kind, 0, DType::F64, &ad());
        gradcheck_softmax(&s, 0, &format!("{kind:?}"));
        gradcheck_softmax(&s, 1, &format!("{kind:?}"));
    }
    let data = pattern_data(&[4, 3, 2], 2, 0.6, &mut rng);
    for kind in [Kind::CooDup, Kind::Csr] {
        let s = make::<3, 2>(&data, [4, 3, 2], kind, 1, DType::F64, &ad());
        for dim in 0..3 {
            gradcheck_softmax(&s, dim, &format!("hybrid {kind:?}"));
        }
    }
    let data = pattern_data(&[3, 4, 3], 3, 0.5, &mut rng);
    let s = make::<3, 1>(&data, [3, 4, 3], Kind::Coo, 0, DType::F64, &ad());
    for dim in 0..3 {
        gradcheck_softmax(&s, dim, "3-sparse COO");
    }
}

/// The rule in closed form on one row: d/dx_i of sum_j w_j y_j is y_i (w_i - sum_j w_j y_j).
#[test]
fn the_backward_rule_in_closed_form() {
    let x = vec![0.3f64, -1.2, 2.0, 0.7];
    let w = [0.5f64, -1.0, 2.0, 0.25];
    let i = Tensor::<2, burn::tensor::Int>::from_data(
        TensorData::new(vec![0i64, 0, 0, 0, 0, 2, 3, 5], [2, 4]),
        (&ad(), DType::I64),
    );
    let v = Tensor::<1>::from_data(TensorData::new(x.clone(), [4]), (&ad(), DType::F64)).require_grad();
    let s = SparseTensor::coo(i, v.clone(), [1, 6]).unwrap();
    let y = sp::softmax(&s, 1);
    let wt = Tensor::<2>::from_data(TensorData::new(w.to_vec(), [4, 1]), (&ad(), DType::F64));
    let grads = (y.values_flat() * wt).sum().backward();
    let g = floats(v.grad(&grads).unwrap());
    let e: Vec<f64> = x.iter().map(|v| v.exp()).collect();
    let z: f64 = e.iter().sum();
    let yv: Vec<f64> = e.iter().map(|v| v / z).collect();
    let dot: f64 = yv.iter().zip(&w).map(|(a, b)| a * b).sum();
    let expected: Vec<f64> = yv.iter().zip(&w).map(|(y, w)| y * (w - dot)).collect();
    assert_near(&g, &expected, 1e-14, "softmax rule");
    // log_softmax: g - exp(y) * sum(g) = w - softmax * sum(w). A fresh graph: burn's tape is
    // consumed by a backward pass.
    let i = Tensor::<2, burn::tensor::Int>::from_data(
        TensorData::new(vec![0i64, 0, 0, 0, 0, 2, 3, 5], [2, 4]),
        (&ad(), DType::I64),
    );
    let v = Tensor::<1>::from_data(TensorData::new(x.clone(), [4]), (&ad(), DType::F64)).require_grad();
    let y = sp::log_softmax(&SparseTensor::coo(i, v.clone(), [1, 6]).unwrap(), 1);
    let wt = Tensor::<2>::from_data(TensorData::new(w.to_vec(), [4, 1]), (&ad(), DType::F64));
    let grads = (y.values_flat() * wt).sum().backward();
    let g = floats(v.grad(&grads).unwrap());
    let sw: f64 = w.iter().sum();
    let expected: Vec<f64> = yv.iter().zip(&w).map(|(y, w)| w - y * sw).collect();
    assert_near(&g, &expected, 1e-14, "log_softmax rule");
}

/// Softmax along the rows' dim of a CSR tensor (columns as segments) plans its segments once
/// per pattern where the device plans them (a Cube device: `IndexKernels::segment_plan`): the
/// plan stays in the pattern's cell, shared by a tensor with new values, and a second call
/// gives the same result. On Flex the host plans per call and the cell keeps nothing.
#[test]
fn column_segments_are_planned_once_per_pattern() {
    let device = common_ops::dev();
    let mut rng = Rng(71);
    let (m, n) = (30, 20);
    let data: Vec<f64> = (0..m * n).map(|_| if rng.unit() < 0.2 { rng.value() } else { 0.0 }).collect();
    let s = common_ops::dense_on(&data, [m, n], DType::F32, &device).to_sparse_csr().unwrap();
    let first = floats(sp::softmax(&s, 0).to_dense());
    let cell = s.transpose_cell().expect("a CSR tensor has a cell");
    let planned = cell.with_plans(|slot| slot.is_some());
    assert_eq!(planned, device != Device::flex(), "the plan is kept where the device makes it");
    let twice = s.with_values(s.values_flat().mul_scalar(2.0));
    assert!(std::sync::Arc::ptr_eq(&cell, &twice.transpose_cell().unwrap()), "one pattern, one cell");
    assert_eq!(floats(sp::softmax(&s, 0).to_dense()), first);
    // The reference: a column softmax of the dense matrix over its stored entries.
    let dense = Tensor::<2>::from_data(TensorData::new(data.clone(), [m, n]), (&Device::flex(), DType::F64));
    let stored = dense.clone().not_equal_elem(0.0);
    let masked = dense.mask_fill(stored.clone().bool_not(), f64::NEG_INFINITY);
    let expected = floats(activation::softmax(masked, 0).mask_fill(stored.bool_not(), 0.0));
    assert_near(&first, &expected, 1e-5, "column softmax");
    let scaled = floats(sp::softmax(&twice, 0).to_dense());
    assert_ne!(scaled, first, "new values, a new softmax over the kept plan");
}
