//! Gradients through the conversions (docs/SPEC.md sections 2 and 4) on the test device with autodiff (`common_ops::ad()`) in
//! f64: the gradient of `sum(W * to_dense(x))` with respect to the stored values is `W` at each
//! value's position, computed here from the raw index arrays, independently of the library's
//! conversions; `gradcheck` passes for every conversion and fails for a wrong gradient.

use crate::common_ops;

use crate::common_ops::gradcheck;
use burn::tensor::{DType, Tensor, TensorData};
use common_ops::{ad, assert_near, check_sparse_grad, f64s, flat, floats, index_on, ints, numel, Rng};
use proptest::prelude::*;
use sparsegrad::gradcheck::{GradInput, GradcheckOptions};
use sparsegrad::prelude::*;

/// The gradients agree to f64 precision.
fn assert_close(actual: &[f64], expected: &[f64], what: &str) {
    assert_near(actual, expected, 1e-12, what);
}

/// For every element of `values_flat()`, the linear position in `to_dense()` where it lands,
/// read from the raw index arrays (not through any conversion of the library).
fn positions<const D: usize>(s: &SparseTensor<D>) -> Vec<usize> {
    let shape = s.shape();
    let item = numel(&shape[D - s.dense_dim()..]);
    let mut out = vec![];
    match s.compressed_indices_flat() {
        None => {
            let (sd, n) = (s.sparse_dim(), s.nnz());
            let idx = ints(s.indices_raw().unwrap());
            for j in 0..n {
                let lin = (0..sd).fold(0usize, |acc, d| acc * shape[d] + idx[d * n + j] as usize);
                out.extend((0..item).map(|e| lin * item + e));
            }
        }
        Some((c, p)) => {
            let (c, p) = (ints(c), ints(p));
            let (b, nse) = (s.batch_dim(), s.nnz());
            let (rows, cols) = (shape[b], shape[b + 1]);
            let [br, bc] = s.blocksize().unwrap_or([1, 1]);
            let n_comp = if s.layout().compresses_rows() { rows / br } else { cols / bc };
            for bi in 0..numel(&shape[..b]) {
                for j in 0..nse {
                    let seg = (0..n_comp).find(|&g| (c[bi * (n_comp + 1) + g + 1] as usize) > j).unwrap();
                    let pl = p[bi * nse + j] as usize;
                    let (brow, bcol) = if s.layout().compresses_rows() { (seg, pl) } else { (pl, seg) };
                    for i in 0..br {
                        for jj in 0..bc {
                            let lin = (bi * rows + brow * br + i) * cols + bcol * bc + jj;
                            out.extend((0..item).map(|e| lin * item + e));
                        }
                    }
                }
            }
        }
    }
    out
}

/// The gradient of `sum(w * f(s).to_dense())` with respect to the values of `s`, whose values
/// are replaced by a fresh leaf.
fn value_grad<const D: usize>(
    s: &SparseTensor<D>,
    w: &Tensor<D>,
    f: impl Fn(SparseTensor<D>) -> SparseTensor<D>,
) -> Vec<f64> {
    let leaf = s.values_flat().detach().require_grad();
    let x = s.with_values(leaf.clone());
    let out = f(x).to_dense();
    let grads = (out * w.clone()).sum().backward();
    floats(leaf.grad(&grads).expect("values receive a gradient"))
}

/// `W` gathered at each stored value's position in `s` (the dense reference gradient).
fn gathered<const D: usize>(s: &SparseTensor<D>, w: &[f64]) -> Vec<f64> {
    positions(s).into_iter().map(|p| w[p]).collect()
}

/// Host data of a random sparse tensor `[*batch, rows, cols, *dense]` on the autodiff device:
/// every batch entry holds the same number of `block`s, each full of non-zeros, and as an
/// uncoalesced COO each element appears 1..=3 times (duplicates summing to its value), shuffled.
struct Case {
    shape: Vec<usize>,
    batch: usize,
    block: [usize; 2],
    dense: Vec<f64>,
    coo_tuples: Vec<Vec<i64>>,
    coo_values: Vec<Vec<f64>>,
}

fn case(
    batch: &[usize],
    block: [usize; 2],
    mblocks: [usize; 2],
    dense_dims: &[usize],
    density: f64,
    seed: u64,
) -> Case {
    let mut rng = Rng(seed);
    let (rows, cols) = (block[0] * mblocks[0], block[1] * mblocks[1]);
    let mut shape = batch.to_vec();
    shape.extend([rows, cols]);
    shape.extend(dense_dims);
    let item = numel(dense_dims);
    let nblocks = mblocks[0] * mblocks[1];
    let k = (density * nblocks as f64).round() as usize;
    let mut dense = vec![0.0; numel(&shape)];
    let (mut coo_tuples, mut coo_values) = (vec![], vec![]);
    for b in 0..numel(batch) {
        let mut perm: Vec<usize> = (0..nblocks).collect();
        for i in 0..k {
            let j = i + rng.below(nblocks - i);
            perm.swap(i, j);
        }
        for &blk in &perm[..k] {
            for i in 0..block[0] {
                for j in 0..block[1] {
                    let (r, c) = (blk / mblocks[1] * block[0] + i, blk % mblocks[1] * block[1] + j);
                    let at = ((b * rows + r) * cols + c) * item;
                    let v: Vec<f64> = (0..item).map(|_| rng.value()).collect();
                    dense[at..at + item].copy_from_slice(&v);
                    let mut tuple: Vec<i64> =
                        (0..batch.len()).map(|d| ((b / numel(&batch[d + 1..])) % batch[d]) as i64).collect();
                    tuple.extend([r as i64, c as i64]);
                    let mut rest = v;
                    for _ in 0..rng.below(3) {
                        let part: Vec<f64> = (0..item).map(|_| rng.value()).collect();
                        rest.iter_mut().zip(&part).for_each(|(x, p)| *x -= p);
                        coo_tuples.push(tuple.clone());
                        coo_values.push(part);
                    }
                    coo_tuples.push(tuple);
                    coo_values.push(rest);
                }
            }
        }
    }
    for i in (1..coo_tuples.len()).rev() {
        let j = rng.below(i + 1);
        coo_tuples.swap(i, j);
        coo_values.swap(i, j);
    }
    Case { shape, batch: batch.len(), block, dense, coo_tuples, coo_values }
}

impl Case {
    fn coo<const D: usize>(&self, dtype: DType) -> SparseTensor<D> {
        let (sd, n) = (self.batch + 2, self.coo_tuples.len());
        let idx: Vec<i64> = (0..sd).flat_map(|d| self.coo_tuples.iter().map(move |t| t[d])).collect();
        let vals = self.coo_values.concat();
        let ds = &self.shape[sd..];
        let shape: [usize; D] = self.shape.clone().try_into().unwrap();
        let idx = index_on(&idx, [sd, n], dtype, &ad());
        match ds.len() {
            0 => SparseTensor::coo(idx, f64s(&vals, [n]), shape),
            1 => SparseTensor::coo(idx, f64s(&vals, [n, ds[0]]), shape),
            _ => SparseTensor::coo(idx, f64s(&vals, [n, ds[0], ds[1]]), shape),
        }
        .unwrap()
    }
    fn dense<const D: usize>(&self) -> Tensor<D> {
        f64s(&self.dense, self.shape.clone().try_into().unwrap())
    }
    fn targets(&self) -> [(Layout, Option<[usize; 2]>); 5] {
        [
            (Layout::Coo, None),
            (Layout::Csr, None),
            (Layout::Csc, None),
            (Layout::Bsr, Some(self.block)),
            (Layout::Bsc, Some(self.block)),
        ]
    }
}

/// Value gradients through coalesce and every conversion of an uncoalesced COO tensor, and
/// through every conversion of every layout.
fn conversions<const D: usize>(c: &Case, dtype: DType, seed: u64) {
    let dense_dim = D - c.batch - 2;
    let w = Rng(seed ^ 1).values(numel(&c.shape));
    let wt: Tensor<D> = f64s(&w, c.shape.clone().try_into().unwrap());
    let coo = c.coo::<D>(dtype);
    let expected = gathered(&coo, &w);
    assert_close(&value_grad(&coo, &wt, |x| x), &expected, "COO to_dense (duplicates)");
    assert_close(&value_grad(&coo, &wt, |x| x.coalesce()), &expected, "coalesce");
    assert_close(&value_grad(&coo, &wt, |x| x.reorder()), &expected, "reorder");
    let mut sources = vec![coo];
    for (l, bs) in c.targets().into_iter().skip(1) {
        let spec = SparseSpec { layout: l, dense_dim, blocksize: bs, index_dtype: dtype };
        sources.push(c.dense::<D>().to_sparse_with(spec).unwrap());
    }
    for src in &sources {
        let expected = gathered(src, &w);
        for (l, bs) in c.targets() {
            let g = value_grad(src, &wt, |x| x.to_layout(l, bs).unwrap());
            assert_close(&g, &expected, &format!("{} -> {l}", src.layout()));
        }
    }
}

/// The gradient with respect to a dense input of dense -> layout -> dense: `W` where an item
/// (element x dense dims, or block x dense dims) is stored, zero elsewhere.
fn dense_roundtrip<const D: usize>(c: &Case, dtype: DType, seed: u64) {
    let dense_dim = D - c.batch - 2;
    let item = numel(&c.shape[D - dense_dim..]);
    let w = Rng(seed ^ 2).values(numel(&c.shape));
    let wt: Tensor<D> = f64s(&w, c.shape.clone().try_into().unwrap());
    for (l, bs) in c.targets() {
        let x = c.dense::<D>().require_grad();
        let spec = SparseSpec { layout: l, dense_dim, blocksize: bs, index_dtype: dtype };
        let s = x.clone().to_sparse_with(spec).unwrap();
        let grads = (s.to_dense() * wt.clone()).sum().backward();
        let g = floats(x.grad(&grads).expect("dense input receives a gradient"));
        let mut expected = vec![0.0; w.len()];
        for p in positions(&s) {
            expected[p] = w[p];
        }
        // Stored positions are exactly the items holding a non-zero (blocks are full here).
        let stored = c.dense.chunks(item.max(1)).filter(|v| v.iter().any(|&x| x != 0.0)).count();
        assert_eq!(positions(&s).len(), stored * item, "{l}: stored items");
        assert_close(&g, &expected, &format!("dense -> {l} -> dense"));
    }
}

/// Value gradients through `t()` and `transpose`: `W'` (of the transposed shape) gathered at
/// each value's transposed position, i.e. `W'.swap_dims(i, j)` at its position.
fn transposes<const D: usize>(c: &Case, dtype: DType, seed: u64) {
    let dense_dim = D - c.batch - 2;
    let b = c.batch;
    let mut shape_t: [usize; D] = c.shape.clone().try_into().unwrap();
    shape_t.swap(b, b + 1);
    let wt: Tensor<D> = f64s(&Rng(seed ^ 3).values(numel(&c.shape)), shape_t);
    let w_back = floats(wt.clone().swap_dims(b, b + 1));
    let mut sources = vec![c.coo::<D>(dtype)];
    for (l, bs) in c.targets().into_iter().skip(1) {
        let spec = SparseSpec { layout: l, dense_dim, blocksize: bs, index_dtype: dtype };
        sources.push(c.dense::<D>().to_sparse_with(spec).unwrap());
    }
    for src in &sources {
        let expected = gathered(src, &w_back);
        assert_close(&value_grad(src, &wt, |x| x.t()), &expected, &format!("{}.t()", src.layout()));
        assert_close(
            &value_grad(src, &wt, |x| x.transpose(b + 1, b)),
            &expected,
            &format!("{}.transpose", src.layout()),
        );
    }
}

/// A random case: shape, two dims, a block size, dense dims, density, index dtype, seed.
type CaseParams = (Vec<usize>, [usize; 2], [usize; 2], Vec<usize>, f64, DType, u64);

fn case_strategy() -> impl Strategy<Value = CaseParams> {
    (
        prop::collection::vec(1..=2usize, 0..=1),
        [1..=2usize, 1..=2usize],
        [1..=2usize, 1..=3usize],
        prop::collection::vec(1..=2usize, 0..=1),
        prop_oneof![Just(1.0), 0.2..1.0f64],
        prop_oneof![Just(DType::I64), Just(DType::I32)],
        any::<u64>(),
    )
}

macro_rules! with_rank {
    ($rank:expr, $f:ident($($a:expr),*)) => {
        match $rank {
            2 => $f::<2>($($a),*),
            3 => $f::<3>($($a),*),
            4 => $f::<4>($($a),*),
            r => unreachable!("rank {r}"),
        }
    };
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn value_gradients_of_conversions_match_dense((batch, block, mb, dd, dens, dt, seed) in case_strategy()) {
        let c = case(&batch, block, mb, &dd, dens, seed);
        with_rank!(c.shape.len(), conversions(&c, dt, seed));
    }

    #[test]
    fn dense_input_gradients_are_masked_by_the_pattern((batch, block, mb, dd, dens, dt, seed) in case_strategy()) {
        let c = case(&batch, block, mb, &dd, dens, seed);
        with_rank!(c.shape.len(), dense_roundtrip(&c, dt, seed));
    }

    #[test]
    fn value_gradients_of_transposes_match_dense((batch, block, mb, dd, dens, dt, seed) in case_strategy()) {
        let c = case(&batch, block, mb, &dd, dens, seed);
        with_rank!(c.shape.len(), transposes(&c, dt, seed));
    }
}

#[test]
fn dense_dim_transpose_gradient() {
    // Two dense dims swapped: values [nse, 2, 3] -> [nse, 3, 2].
    let c = case(&[], [1, 1], [2, 3], &[2, 3], 0.5, 7);
    let s = c.coo::<4>(DType::I64);
    let wt = f64s(&Rng(9).values(3 * 2 * 3 * 2), [2, 3, 3, 2]);
    let expected = gathered(&s, &floats(wt.clone().swap_dims(2, 3)));
    assert_close(&value_grad(&s, &wt, |x| x.transpose(2, 3)), &expected, "dense-dim transpose");
}

// ---------------------------------------------------------------------------------------------
// gradcheck: central differences agree with autodiff for every conversion, and catch a wrong one.

/// Checks `x -> to_dense(f(x with values v))` for a template `s`.
fn check_values<const D: usize>(s: &SparseTensor<D>, name: &str, f: impl Fn(SparseTensor<D>) -> SparseTensor<D>) {
    check_sparse_grad(s, name, GradcheckOptions::default(), |x| f(x).to_dense());
}

#[test]
fn gradcheck_passes_for_every_conversion() {
    // Hybrid (one dense dim of 2), uncoalesced COO with duplicates, 4 x 6 with 2 x 3 blocks.
    let c = case(&[], [2, 3], [2, 2], &[2], 0.5, 11);
    let coo = c.coo::<3>(DType::I64);
    assert!(!coo.is_coalesced());
    check_values(&coo, "coo", |x| x);
    check_values(&coo, "coo.coalesce", |x| x.coalesce());
    check_values(&coo, "coo.t", |x| x.t());
    for (l, bs) in c.targets() {
        check_values(&coo, &format!("coo -> {l}"), |x| x.to_layout(l, bs).unwrap());
        let s = c
            .dense::<3>()
            .to_sparse_with(SparseSpec { layout: l, dense_dim: 1, blocksize: bs, index_dtype: DType::I32 })
            .unwrap();
        check_values(&s, &format!("{l} -> coo"), |x| x.to_sparse_coo());
        check_values(&s, &format!("{l}.t"), |x| x.t());
        check_values(&s, &format!("{l} -> csr"), |x| x.to_sparse_csr().unwrap());
        check_values(&s, &format!("{l} -> bsc"), |x| x.to_sparse_bsc([2, 3]).unwrap());
    }
}

#[test]
fn gradcheck_passes_for_a_batched_csr() {
    // 2 batch entries of 3 x 4, each with 3 full 1 x 2 blocks: 6 elements per batch entry.
    let c = case(&[2], [1, 2], [3, 2], &[], 0.5, 13);
    let csr = c.dense::<3>().to_sparse_csr().unwrap();
    assert_eq!((csr.batch_dim(), csr.nnz()), (1, 6));
    check_values(&csr, "batched csr", |x| x);
    check_values(&csr, "batched csr.t", |x| x.t());
    check_values(&csr, "batched csr -> coo", |x| x.to_sparse_coo());
    check_values(&csr, "batched csr -> csc", |x| x.to_sparse_csc().unwrap());
    check_values(&csr, "batched csr -> bsr", |x| x.to_sparse_bsr([1, 2]).unwrap());
}

#[test]
fn gradcheck_passes_for_dense_to_every_layout() {
    // x * mask keeps the pattern fixed under perturbation: masked elements stay zero.
    let c = case(&[], [2, 2], [2, 2], &[2], 0.5, 17);
    let mask: Vec<f64> = c.dense.iter().map(|&v| if v != 0.0 { 1.0 } else { 0.0 }).collect();
    let x = f64s(&c.dense.iter().map(|v| v + 0.25).collect::<Vec<_>>(), [4, 4, 2]);
    let input = GradInput::dense("x", &x);
    for (l, bs) in c.targets() {
        let spec = SparseSpec { layout: l, dense_dim: 1, blocksize: bs, index_dtype: DType::I64 };
        let f = |v: &[Tensor<1>]| {
            let m = Tensor::<1>::from_data(TensorData::new(mask.clone(), [32]), (&v[0].device(), DType::F64));
            let d: Tensor<3> = (v[0].clone() * m).reshape([4, 4, 2]);
            flat(d.to_sparse_with(spec).unwrap().to_dense())
        };
        let report = gradcheck(f, std::slice::from_ref(&input), GradcheckOptions::default())
            .unwrap_or_else(|e| panic!("{l}: {e}"));
        assert_eq!(report.checked, 32);
    }
}

#[test]
fn gradcheck_fails_for_a_wrong_gradient() {
    let c = case(&[], [1, 1], [3, 3], &[], 0.5, 19);
    let coo = c.coo::<2>(DType::I64);
    let n = coo.nnz();
    let input = GradInput::sparse("values", &coo);
    // Detached values: autodiff sees no dependence, central differences do.
    let err = gradcheck(
        |v| flat(coo.with_values(v[0].clone().reshape([n, 1]).detach()).to_sparse_csr().unwrap().to_dense()),
        std::slice::from_ref(&input),
        GradcheckOptions::default(),
    )
    .unwrap_err();
    assert_eq!((err.worst.input.as_str(), err.failures, err.checked), ("values", n, n));
    assert_eq!(err.worst.analytic, 0.0);
    // Two inputs, only the second one wrong: the report names it.
    let bias = GradInput::dense("bias", &f64s(&[0.5; 9], [9]));
    let f = |v: &[Tensor<1>]| {
        flat(coo.with_values(v[0].clone().reshape([n, 1])).coalesce().to_dense()) + v[1].clone().detach() * 2.0
    };
    let err = gradcheck(f, &[input, bias], GradcheckOptions::default()).unwrap_err();
    assert_eq!((err.worst.input.as_str(), err.failures, err.checked), ("bias", 9, n + 9));
}

#[test]
fn empty_and_zero_row_tensors_on_the_autodiff_device() {
    let device = ad();
    let empty = SparseTensor::<3>::empty_with([3, 4, 2], 2, DType::I64, DType::F64, &device).unwrap().require_grad();
    let dense = empty.to_dense();
    assert_eq!((dense.dims(), floats(dense.clone())), ([3, 4, 2], vec![0.0; 24]));
    let grads = (dense * 2.0).sum().backward();
    if let Some(g) = empty.values_flat().grad(&grads) {
        assert_eq!(g.dims(), [0, 2]);
    }
    assert_eq!(floats(empty.to_sparse_csr().unwrap().to_dense()), vec![0.0; 24]);
    assert_eq!(floats(empty.to_sparse_bsc([3, 2]).unwrap().to_dense()), vec![0.0; 24]);

    // Zero rows: dense -> every layout -> dense, with a gradient of the right (empty) shape.
    for (l, bs) in [
        (Layout::Coo, None),
        (Layout::Csr, None),
        (Layout::Csc, None),
        (Layout::Bsr, Some([1, 3])),
        (Layout::Bsc, Some([2, 1])),
    ] {
        let x = f64s(&[], [0, 3]).require_grad();
        let s = x
            .clone()
            .to_sparse_with(SparseSpec { layout: l, dense_dim: 0, blocksize: bs, index_dtype: DType::I32 })
            .unwrap();
        assert_eq!((s.nnz(), s.shape()), (0, [0, 3]));
        let d = s.to_dense();
        assert_eq!(d.dims(), [0, 3], "{l}");
        let grads = (d * f64s(&[], [0, 3])).sum().backward();
        if let Some(g) = x.grad(&grads) {
            assert_eq!(g.dims(), [0, 3], "{l}");
        }
        assert_eq!(s.t().to_dense().dims(), [3, 0], "{l}.t()");
    }
}
