//! Property tests of the layouts and conversions (docs/SPEC.md sections 1 and 2) over random shapes
//! (zero-size dims included), densities (0 and 1 included), batch and dense dims, block sizes,
//! both index dtypes and uncoalesced COO input. Every result is compared with burn's dense ops
//! or with an independent host computation; values are small integers, so comparisons are exact.

use crate::common_ops;

use burn::tensor::{DType, Tensor, TensorData};
use common_ops::{dev, f32s, index_on, ints, numel, Rng};
use proptest::prelude::*;
use sparsegrad::prelude::*;
use std::collections::BTreeMap;

// ---------------------------------------------------------------------------------------------
// Helpers: deterministic data, tensors in and out, the dispatch from a runtime rank to `D`.

fn arr<const D: usize>(v: &[usize]) -> [usize; D] {
    v.try_into().expect("rank")
}

fn dense<const D: usize>(data: Vec<f32>, shape: [usize; D]) -> Tensor<D> {
    Tensor::from_data(TensorData::new(data, shape), (&dev(), DType::F32))
}

/// Calls `$f::<D>(args)` for a rank known only at run time.
macro_rules! with_rank {
    ($rank:expr, $f:ident($($a:expr),*)) => {
        match $rank {
            1 => $f::<1>($($a),*),
            2 => $f::<2>($($a),*),
            3 => $f::<3>($($a),*),
            4 => $f::<4>($($a),*),
            5 => $f::<5>($($a),*),
            r => unreachable!("rank {r}"),
        }
    };
}

fn index_dtype() -> impl Strategy<Value = DType> {
    prop_oneof![Just(DType::I64), Just(DType::I32)]
}

fn density() -> impl Strategy<Value = f64> {
    prop_oneof![Just(0.0), Just(1.0), 0.0..1.0f64]
}

fn spec(layout: Layout, dense_dim: usize, blocksize: Option<[usize; 2]>, index_dtype: DType) -> SparseSpec {
    SparseSpec { layout, dense_dim, blocksize, index_dtype }
}

// ---------------------------------------------------------------------------------------------
// COO: entries as tuples, uncoalesced input, independent checks.

/// COO entries on the host: one index tuple and one dense item per stored entry.
#[derive(Debug, Clone)]
struct Entries {
    tuples: Vec<Vec<i64>>,
    items: Vec<Vec<f32>>,
}

fn coo_entries<const D: usize>(s: &SparseTensor<D>) -> Entries {
    let (sd, n) = (s.sparse_dim(), s.nnz());
    let idx = ints(s.indices_raw().unwrap());
    let vals = f32s(s.values_flat());
    let item = numel(&s.shape()[sd..]);
    let tuples = (0..n).map(|j| (0..sd).map(|d| idx[d * n + j]).collect()).collect();
    let items = (0..n).map(|j| vals[j * item..(j + 1) * item].to_vec()).collect();
    Entries { tuples, items }
}

/// A checked COO tensor from host entries (values of rank 1 + dense dims).
fn build_coo<const D: usize>(
    e: &Entries,
    shape: [usize; D],
    sd: usize,
    dtype: DType,
) -> Result<SparseTensor<D>, SparseError> {
    let n = e.tuples.len();
    let idx: Vec<i64> = (0..sd).flat_map(|d| e.tuples.iter().map(move |t| t[d])).collect();
    let indices = index_on(&idx, [sd, n], dtype, &dev());
    let vals: Vec<f32> = e.items.concat();
    let ds = &shape[sd..];
    let v = |s: Vec<usize>| TensorData::new(vals.clone(), s);
    let o = (&dev(), DType::F32);
    match D - sd {
        0 => SparseTensor::coo(indices, Tensor::<1>::from_data(v(vec![n]), o), shape),
        1 => SparseTensor::coo(indices, Tensor::<2>::from_data(v(vec![n, ds[0]]), o), shape),
        2 => SparseTensor::coo(indices, Tensor::<3>::from_data(v(vec![n, ds[0], ds[1]]), o), shape),
        3 => SparseTensor::coo(indices, Tensor::<4>::from_data(v(vec![n, ds[0], ds[1], ds[2]]), o), shape),
        k => unreachable!("{k} dense dims"),
    }
}

/// Splits every entry into 1..=3 duplicates summing to it, optionally adds pairs of entries that
/// cancel at random positions, and shuffles: an uncoalesced COO with the same dense value.
fn uncoalesce(e: &Entries, sizes: &[usize], item: usize, zero_pairs: bool, rng: &mut Rng) -> Entries {
    let mut out = Entries { tuples: vec![], items: vec![] };
    for (t, v) in e.tuples.iter().zip(&e.items) {
        let mut rest = v.clone();
        for _ in 0..rng.below(3) {
            let part: Vec<f32> = (0..item).map(|_| rng.nonzero()).collect();
            rest.iter_mut().zip(&part).for_each(|(r, p)| *r -= p);
            out.tuples.push(t.clone());
            out.items.push(part);
        }
        out.tuples.push(t.clone());
        out.items.push(rest);
    }
    if zero_pairs && sizes.iter().all(|&s| s > 0) {
        for _ in 0..rng.below(3) {
            let t: Vec<i64> = sizes.iter().map(|&s| rng.below(s) as i64).collect();
            let v: Vec<f32> = (0..item).map(|_| rng.nonzero()).collect();
            out.tuples.extend([t.clone(), t]);
            out.items.push(v.iter().map(|x| -x).collect());
            out.items.push(v);
        }
    }
    for i in (1..out.tuples.len()).rev() {
        let j = rng.below(i + 1);
        out.tuples.swap(i, j);
        out.items.swap(i, j);
    }
    out
}

fn strictly_increasing(t: &[Vec<i64>]) -> bool {
    t.windows(2).all(|w| w[0] < w[1])
}

/// A dense tensor in which each item (the trailing `item` elements under one sparse index) is
/// stored with probability `density`; a stored item has at least one non-zero element.
/// Returns the data and the number of stored items.
fn random_items(shape: &[usize], sd: usize, density: f64, rng: &mut Rng) -> (Vec<f32>, usize) {
    let (items, item) = (numel(&shape[..sd]), numel(&shape[sd..]));
    let mut data = vec![0.0f32; items * item];
    let mut stored = 0;
    for i in 0..items {
        if item == 0 || rng.unit() >= density {
            continue;
        }
        stored += 1;
        let cell = &mut data[i * item..(i + 1) * item];
        cell.iter_mut().for_each(|x| *x = if rng.next() & 1 == 0 { rng.nonzero() } else { 0.0 });
        cell[rng.below(item)] = rng.nonzero();
    }
    (data, stored)
}

// ---------------------------------------------------------------------------------------------
// Compressed layouts: cases with batch, block and dense dims; an independent invariant check.

#[derive(Debug, Clone)]
struct CCase {
    batch: Vec<usize>,
    block: [usize; 2],
    mblocks: [usize; 2],
    dense: Vec<usize>,
    density: f64,
    dtype: DType,
    seed: u64,
}

impl CCase {
    fn rows_cols(&self) -> [usize; 2] {
        [self.block[0] * self.mblocks[0], self.block[1] * self.mblocks[1]]
    }
    fn shape(&self) -> Vec<usize> {
        let mut s = self.batch.clone();
        s.extend(self.rows_cols());
        s.extend(&self.dense);
        s
    }
    /// Dense data in which every batch entry stores the same number `k` of blocks of
    /// `gen_block` (each with a non-zero; every element non-zero when `full`). Returns (data, k).
    fn data(&self, gen_block: [usize; 2], full: bool) -> (Vec<f32>, usize) {
        let mut rng = Rng(self.seed);
        let [rows, cols] = self.rows_cols();
        let item = numel(&self.dense);
        let (mb, nb) = (rows / gen_block[0], cols / gen_block[1]);
        let nblocks = mb * nb;
        let k = (self.density * nblocks as f64).round() as usize;
        let mut data = vec![0.0f32; numel(&self.shape())];
        for b in 0..numel(&self.batch) {
            let mut perm: Vec<usize> = (0..nblocks).collect();
            for i in 0..k {
                let j = i + rng.below(nblocks - i);
                perm.swap(i, j);
            }
            for &blk in &perm[..k] {
                let (bi, bj) = (blk / nb, blk % nb);
                let mut pos = vec![];
                for r in 0..gen_block[0] {
                    for c in 0..gen_block[1] {
                        let (r, c) = (bi * gen_block[0] + r, bj * gen_block[1] + c);
                        pos.extend((0..item).map(|e| ((b * rows + r) * cols + c) * item + e));
                    }
                }
                for &p in &pos {
                    data[p] = if full || rng.next() & 1 == 0 { rng.nonzero() } else { 0.0 };
                }
                if !pos.is_empty() {
                    data[pos[rng.below(pos.len())]] = rng.nonzero();
                }
            }
        }
        (data, k)
    }
}

fn ccase() -> impl Strategy<Value = CCase> {
    let batch = prop::collection::vec(prop_oneof![4 => 1..=3usize, 1 => Just(0usize)], 0..=2);
    let dense = prop::collection::vec(prop_oneof![3 => 1..=3usize, 1 => Just(0usize)], 0..=1);
    (batch, [1..=3usize, 1..=3usize], [0..=2usize, 0..=2usize], dense, density(), index_dtype(), any::<u64>()).prop_map(
        |(batch, block, mblocks, dense, density, dtype, seed)| CCase {
            batch,
            block,
            mblocks,
            dense,
            density,
            dtype,
            seed,
        },
    )
}

fn compressed_layout() -> impl Strategy<Value = Layout> {
    prop_oneof![Just(Layout::Csr), Just(Layout::Csc), Just(Layout::Bsr), Just(Layout::Bsc)]
}

/// Checks the compressed invariants of docs/SPEC.md section 1 on the raw index arrays, independently of
/// the library's validator, and the folded shapes of indices and values.
fn check_compressed<const D: usize>(s: &SparseTensor<D>) {
    let (c, p) = s.compressed_indices_flat().expect("compressed layout");
    assert_eq!(c.dtype(), p.dtype(), "index dtypes agree");
    let (c, p) = (ints(c), ints(p));
    let (b, shape, nse) = (s.batch_dim(), s.shape(), s.nnz());
    let [br, bc] = s.blocksize().unwrap_or([1, 1]);
    assert_eq!(s.layout().is_blocked(), s.blocksize().is_some());
    let (nr, nc) = (shape[b] / br, shape[b + 1] / bc);
    let (n_comp, n_plain) = if s.layout().compresses_rows() { (nr, nc) } else { (nc, nr) };
    let batch = numel(&shape[..b]);
    assert_eq!((c.len(), p.len()), (batch * (n_comp + 1), batch * nse));
    for bi in 0..batch {
        let c = &c[bi * (n_comp + 1)..(bi + 1) * (n_comp + 1)];
        let p = &p[bi * nse..(bi + 1) * nse];
        assert_eq!((c[0], c[n_comp]), (0, nse as i64), "compressed ends");
        for seg in 0..n_comp {
            assert!(c[seg] <= c[seg + 1], "compressed non-decreasing");
            let row = &p[c[seg] as usize..c[seg + 1] as usize];
            assert!(row.iter().all(|&x| (0..n_plain as i64).contains(&x)), "plain in bounds");
            assert!(row.windows(2).all(|w| w[0] < w[1]), "plain strictly increasing");
        }
    }
    let item = br * bc * numel(&shape[D - s.dense_dim()..]);
    assert_eq!(s.values_flat().dims(), [batch * nse, item]);
}

/// The canonical form of a tensor: index arrays and values.
fn parts<const D: usize>(s: &SparseTensor<D>) -> (Vec<i64>, Vec<i64>, Vec<f32>) {
    let (c, p) = match s.compressed_indices_flat() {
        Some((c, p)) => (ints(c), ints(p)),
        None => (ints(s.indices_raw().unwrap()), vec![]),
    };
    (c, p, f32s(s.values_flat()))
}

// ---------------------------------------------------------------------------------------------
// The properties, as generic functions of the rank.

fn coo_roundtrip<const D: usize>(shape: &[usize], sd: usize, density: f64, dtype: DType, seed: u64) {
    let shape: [usize; D] = arr(shape);
    let (data, stored) = random_items(&shape, sd, density, &mut Rng(seed));
    let d = dense(data.clone(), shape);
    let s = d.clone().to_sparse_with(spec(Layout::Coo, D - sd, None, dtype)).unwrap();
    assert_eq!((s.layout(), s.shape(), s.sparse_dim(), s.dense_dim()), (Layout::Coo, shape, sd, D - sd));
    assert_eq!((s.index_dtype(), s.nnz()), (dtype, stored));
    assert!(s.is_coalesced());
    let e = coo_entries(&s);
    assert!(strictly_increasing(&e.tuples), "dense -> COO is sorted and unique");
    assert!(e.items.iter().all(|v| v.iter().any(|&x| x != 0.0)), "zeros are not stored");
    assert_eq!(f32s(s.to_dense()), data);
    if dtype == DType::I64 {
        let t = d.clone().to_sparse_coo(sd).unwrap();
        assert_eq!(parts(&t), parts(&s));
        if sd == D {
            assert_eq!(parts(&d.to_sparse().unwrap()), parts(&s));
        }
    }
}

fn compressed_roundtrip<const D: usize>(case: &CCase, layout: Layout) {
    let shape: [usize; D] = arr(&case.shape());
    let block = if layout.is_blocked() { case.block } else { [1, 1] };
    let (data, k) = case.data(block, false);
    let d = dense(data.clone(), shape);
    let bs = layout.is_blocked().then_some(block);
    let s = d.clone().to_sparse_with(spec(layout, case.dense.len(), bs, case.dtype)).unwrap();
    assert_eq!((s.layout(), s.shape(), s.batch_dim(), s.sparse_dim()), (layout, shape, case.batch.len(), 2));
    assert_eq!((s.dense_dim(), s.blocksize(), s.index_dtype()), (case.dense.len(), bs, case.dtype));
    let elements = block[0] * block[1] * numel(&case.dense) > 0;
    assert_eq!(s.nnz(), if elements && numel(&case.batch) > 0 { k } else { 0 });
    check_compressed(&s);
    let item = s.values_flat().dims()[1];
    assert!(
        f32s(s.values_flat()).chunks(item.max(1)).all(|v| v.iter().any(|&x| x != 0.0)),
        "zero blocks are not stored"
    );
    assert_eq!(f32s(s.to_dense()), data);
    if case.dtype == DType::I64 && case.dense.is_empty() {
        let t = match layout {
            Layout::Csr => d.to_sparse_csr(),
            Layout::Csc => d.to_sparse_csc(),
            Layout::Bsr => d.to_sparse_bsr(block),
            _ => d.to_sparse_bsc(block),
        };
        assert_eq!(parts(&t.unwrap()), parts(&s));
    }
}

fn convert_named<const D: usize>(s: &SparseTensor<D>, layout: Layout, bs: Option<[usize; 2]>) -> SparseTensor<D> {
    match layout {
        Layout::Coo => s.to_sparse_coo(),
        Layout::Csr => s.to_sparse_csr().unwrap(),
        Layout::Csc => s.to_sparse_csc().unwrap(),
        Layout::Bsr => s.to_sparse_bsr(bs.unwrap()).unwrap(),
        Layout::Bsc => s.to_sparse_bsc(bs.unwrap()).unwrap(),
    }
}

fn every_layout_to_every_layout<const D: usize>(case: &CCase, full: bool) {
    let shape: [usize; D] = arr(&case.shape());
    let (data, _) = case.data(case.block, full);
    let d = dense(data.clone(), shape);
    let (dd, b, dt) = (case.dense.len(), case.batch.len(), case.dtype);
    let direct = |l: Layout, bs| d.clone().to_sparse_with(spec(l, dd, bs, dt)).unwrap();
    let coo = direct(Layout::Coo, None);
    let mut rng = Rng(case.seed ^ 0xC0FFEE);
    let unc = uncoalesce(&coo_entries(&coo), &shape[..b + 2], numel(&case.dense), false, &mut rng);
    let mut sources = vec![(coo.clone(), true), (build_coo(&unc, shape, b + 2, dt).unwrap(), true)];
    for (l, bs) in
        [(Layout::Csr, None), (Layout::Csc, None), (Layout::Bsr, Some(case.block)), (Layout::Bsc, Some(case.block))]
    {
        // A blocked source may store explicit zeros inside its blocks unless `full`.
        sources.push((direct(l, bs), full || !l.is_blocked()));
    }
    let targets = [
        (Layout::Coo, None),
        (Layout::Csr, None),
        (Layout::Csc, None),
        (Layout::Bsr, Some(case.block)),
        (Layout::Bsc, Some(case.block)),
        (Layout::Bsr, Some([1, 1])),
        (Layout::Bsc, Some([1, 1])),
    ];
    for (src, canonical) in &sources {
        assert_eq!(f32s(src.to_dense()), data, "source {}", src.layout());
        for &(l, bs) in &targets {
            let ctx = format!("{} -> {l} {bs:?}", src.layout());
            let out = src.to_layout(l, bs).unwrap();
            assert_eq!(parts(&convert_named(src, l, bs)), parts(&out), "{ctx}: named method");
            assert_eq!((out.layout(), out.shape(), out.index_dtype(), out.dense_dim()), (l, shape, dt, dd), "{ctx}");
            assert_eq!(f32s(out.to_dense()), data, "{ctx}: to_dense");
            if l == Layout::Coo {
                assert_eq!(out.sparse_dim(), b + 2, "{ctx}");
                let e = coo_entries(&out);
                if out.is_coalesced() {
                    assert!(strictly_increasing(&e.tuples), "{ctx}: claims coalesced");
                }
                if *canonical {
                    assert_eq!(parts(&out.coalesce()), parts(&coo), "{ctx}: coalesced form");
                }
            } else {
                assert_eq!((out.batch_dim(), out.blocksize()), (b, bs), "{ctx}");
                check_compressed(&out);
                if *canonical {
                    assert_eq!(parts(&out), parts(&direct(l, bs)), "{ctx}: same as from dense");
                }
            }
        }
    }
}

fn unequal_batches<const D: usize>(case: &CCase) {
    let shape: [usize; D] = arr(&case.shape());
    let b = case.batch.len();
    let (data, _) = random_items(&shape, b + 2, case.density, &mut Rng(case.seed));
    let per = numel(&shape[b..]);
    let item = numel(&case.dense);
    let counts: Vec<usize> = (0..numel(&case.batch))
        .map(|bi| data[bi * per..(bi + 1) * per].chunks(item.max(1)).filter(|c| c.iter().any(|&x| x != 0.0)).count())
        .collect();
    let d = dense(data, shape);
    let from_dense = d.clone().to_sparse_with(spec(Layout::Csr, case.dense.len(), None, case.dtype));
    let coo = d.to_sparse_with(spec(Layout::Coo, case.dense.len(), None, case.dtype)).unwrap();
    match counts.iter().position(|&c| c != counts[0]) {
        None => {
            let s = from_dense.unwrap();
            assert_eq!(s.nnz(), counts.first().copied().unwrap_or(0));
            assert_eq!(parts(&coo.to_sparse_csr().unwrap()), parts(&s));
        }
        Some(bi) => {
            let err = SparseError::UnequalBatchNse { batch: bi, nse: counts[bi], expected: counts[0] };
            assert_eq!(from_dense.unwrap_err(), err);
            assert_eq!(coo.to_sparse_csr().unwrap_err(), err);
        }
    }
}

fn coalesce_and_reorder<const D: usize>(shape: &[usize], sd: usize, density: f64, dtype: DType, seed: u64) {
    let shape: [usize; D] = arr(shape);
    let mut rng = Rng(seed);
    let (data, _) = random_items(&shape, sd, density, &mut rng);
    let item = numel(&shape[sd..]);
    let coo = dense(data.clone(), shape).to_sparse_with(spec(Layout::Coo, D - sd, None, dtype)).unwrap();
    let e = uncoalesce(&coo_entries(&coo), &shape[..sd], item, true, &mut rng);
    let u = build_coo(&e, shape, sd, dtype).unwrap();
    let n = e.tuples.len();
    assert_eq!((u.nnz(), u.is_coalesced(), u.index_dtype()), (n, n < 2, dtype));
    assert_eq!(f32s(u.to_dense()), data, "duplicates sum in to_dense");

    // coalesce: the sums per distinct index tuple, in lexicographic order.
    let mut sums: BTreeMap<Vec<i64>, Vec<f32>> = BTreeMap::new();
    for (t, v) in e.tuples.iter().zip(&e.items) {
        let acc = sums.entry(t.clone()).or_insert_with(|| vec![0.0; item]);
        acc.iter_mut().zip(v).for_each(|(a, x)| *a += x);
    }
    let c = u.coalesce();
    assert!(c.is_coalesced());
    assert_eq!((c.layout(), c.sparse_dim(), c.index_dtype(), c.nnz()), (Layout::Coo, sd, dtype, sums.len()));
    let ce = coo_entries(&c);
    assert!(strictly_increasing(&ce.tuples));
    assert_eq!(ce.tuples, sums.keys().cloned().collect::<Vec<_>>());
    assert_eq!(ce.items, sums.values().cloned().collect::<Vec<_>>());
    assert_eq!(f32s(c.to_dense()), data);
    assert_eq!(parts(&c.coalesce()), parts(&c), "coalesce is idempotent");
    assert!(c.indices().is_ok(), "indices() of a coalesced tensor");
    assert_eq!(u.indices().is_err(), n >= 2, "indices() refuses an uncoalesced tensor");

    // reorder: a stable sort that keeps every entry.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| e.tuples[a].cmp(&e.tuples[b]));
    let r = u.reorder();
    let re = coo_entries(&r);
    assert_eq!((r.nnz(), r.index_dtype()), (n, dtype));
    assert_eq!(re.tuples, order.iter().map(|&i| e.tuples[i].clone()).collect::<Vec<_>>());
    assert_eq!(re.items, order.iter().map(|&i| e.items[i].clone()).collect::<Vec<_>>(), "stable");
    assert_eq!(r.is_coalesced(), strictly_increasing(&re.tuples));
    assert_eq!(f32s(r.to_dense()), data);
    assert_eq!(u.to_dense_validated(0.0).is_ok(), strictly_increasing(&e.tuples));
}

fn coo_transpose<const D: usize>(
    shape: &[usize],
    sd: usize,
    dims: (usize, usize),
    density: f64,
    dtype: DType,
    seed: u64,
) {
    let shape: [usize; D] = arr(shape);
    let mut rng = Rng(seed);
    let (data, _) = random_items(&shape, sd, density, &mut rng);
    let d = dense(data, shape);
    let coo = d.clone().to_sparse_with(spec(Layout::Coo, D - sd, None, dtype)).unwrap();
    let e = uncoalesce(&coo_entries(&coo), &shape[..sd], numel(&shape[sd..]), true, &mut rng);
    let u = build_coo(&e, shape, sd, dtype).unwrap();
    let (i, j) = (dims.0 % D, dims.1 % D);
    for s in [&coo, &u] {
        if (i < sd) != (j < sd) {
            assert!(matches!(s.try_transpose(i, j), Err(SparseError::InvalidArgument { .. })));
            continue;
        }
        let t = s.transpose(i, j);
        assert_eq!(f32s(t.to_dense()), f32s(d.clone().swap_dims(i, j)), "transpose({i}, {j})");
        assert_eq!((t.nnz(), t.index_dtype(), t.sparse_dim()), (s.nnz(), dtype, sd));
        if t.is_coalesced() {
            assert!(strictly_increasing(&coo_entries(&t).tuples), "transpose claims coalesced");
        }
        assert_eq!(f32s(t.coalesce().to_dense()), f32s(d.clone().swap_dims(i, j)));
        if sd >= 2 {
            assert_eq!(f32s(s.t().to_dense()), f32s(d.clone().swap_dims(sd - 2, sd - 1)), "t()");
        }
    }
}

fn compressed_transpose<const D: usize>(case: &CCase, layout: Layout) {
    let shape: [usize; D] = arr(&case.shape());
    let b = case.batch.len();
    let block = if layout.is_blocked() { case.block } else { [1, 1] };
    let (data, _) = case.data(block, false);
    let d = dense(data, shape);
    let bs = layout.is_blocked().then_some(block);
    let s = d.clone().to_sparse_with(spec(layout, case.dense.len(), bs, case.dtype)).unwrap();
    let t = s.t();
    let dt = d.clone().swap_dims(b, b + 1);
    assert_eq!(t.layout(), layout.transposed());
    assert_eq!((t.blocksize(), t.index_dtype(), t.nnz()), (bs.map(|[r, c]| [c, r]), case.dtype, s.nnz()));
    assert_eq!(f32s(t.to_dense()), f32s(dt.clone()));
    check_compressed(&t);
    let (sc, sp, sv) = parts(&s);
    let (tc, tp, tv) = parts(&t);
    assert_eq!((tc, tp), (sc, sp), "the transpose shares the index arrays");
    if !layout.is_blocked() {
        assert_eq!(tv, sv, "CSR <-> CSC moves no value");
    }
    let reference = dt.to_sparse_with(spec(t.layout(), case.dense.len(), t.blocksize(), case.dtype)).unwrap();
    assert_eq!(parts(&t), parts(&reference), "same as converting the dense transpose");
    assert_eq!(parts(&s.transpose(b + 1, b)), parts(&t));
    assert_eq!(parts(&t.t()), parts(&s), "t().t() is the identity");
    if b > 0 {
        assert!(s.try_transpose(0, b).is_err(), "batch and sparse dims do not trade places");
    }
}

fn coo_validation<const D: usize>(shape: &[usize], nse: usize, dtype: DType, seed: u64) {
    let shape: [usize; D] = arr(shape);
    let mut rng = Rng(seed);
    let tuples: Vec<Vec<i64>> = (0..nse).map(|_| shape.iter().map(|&s| rng.below(s) as i64).collect()).collect();
    let items: Vec<Vec<f32>> = (0..nse).map(|_| vec![rng.nonzero()]).collect();
    let mut expected = vec![0.0f32; numel(&shape)];
    for (t, v) in tuples.iter().zip(&items) {
        let lin = t.iter().zip(&shape).fold(0usize, |acc, (&i, &s)| acc * s + i as usize);
        expected[lin] += v[0];
    }
    let mut e = Entries { tuples, items };
    let s = build_coo(&e, shape, D, dtype).expect("in-bounds indices are accepted");
    assert_eq!(f32s(s.to_dense()), expected);
    let flat = |e: &Entries| (0..D).flat_map(|d| e.tuples.iter().map(move |t| t[d])).collect::<Vec<_>>();
    let rows = index_on(&flat(&e), [D, nse], dtype, &dev()).transpose();
    let values = Tensor::<1>::from_data(TensorData::new(e.items.concat(), [nse]), (&dev(), DType::F32));
    assert_eq!(f32s(SparseTensor::coo_from_rows(rows, values.clone(), shape).unwrap().to_dense()), expected);
    if nse == 0 {
        return;
    }
    let (p, dim) = (rng.below(nse), rng.below(D));
    let bad = if rng.next() & 1 == 0 { (shape[dim] + rng.below(3)) as i64 } else { -1 - rng.below(3) as i64 };
    e.tuples[p][dim] = bad;
    let err =
        SparseError::IndexOutOfBounds { component: "indices", dim, position: p, value: bad.into(), size: shape[dim] };
    assert_eq!(build_coo(&e, shape, D, dtype).unwrap_err(), err);
    let rows = index_on(&flat(&e), [D, nse], dtype, &dev()).transpose();
    assert_eq!(SparseTensor::coo_from_rows(rows, values, shape).unwrap_err(), err);
}

// ---------------------------------------------------------------------------------------------

/// A shape of rank 1..=4 with dims in 0..=4, and a sparse dim count in 1..=rank.
fn coo_shape() -> impl Strategy<Value = (Vec<usize>, usize)> {
    (1..=4usize).prop_flat_map(|r| (prop::collection::vec(prop_oneof![5 => 1..=4usize, 1 => Just(0usize)], r), 1..=r))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn dense_coo_dense_is_identity((shape, sd) in coo_shape(), dens in density(), dt in index_dtype(), seed in any::<u64>()) {
        with_rank!(shape.len(), coo_roundtrip(&shape, sd, dens, dt, seed));
    }

    #[test]
    fn dense_compressed_dense_is_identity(case in ccase(), layout in compressed_layout()) {
        with_rank!(case.shape().len(), compressed_roundtrip(&case, layout));
    }

    #[test]
    fn every_layout_converts_to_every_layout(case in ccase(), full in any::<bool>()) {
        // Batched compressed tensors need equal counts per batch entry in every layout: full blocks.
        let full = full || !case.batch.is_empty();
        with_rank!(case.shape().len(), every_layout_to_every_layout(&case, full));
    }

    #[test]
    fn batched_conversion_needs_equal_counts(mut case in ccase()) {
        if case.batch.is_empty() {
            case.batch.push(2);
        }
        with_rank!(case.shape().len(), unequal_batches(&case));
    }

    #[test]
    fn coalesce_sums_duplicates_and_reorder_sorts_stably((shape, sd) in coo_shape(), dens in density(), dt in index_dtype(), seed in any::<u64>()) {
        with_rank!(shape.len(), coalesce_and_reorder(&shape, sd, dens, dt, seed));
    }

    #[test]
    fn coo_transpose_matches_dense((shape, sd) in coo_shape(), dims in (0..4usize, 0..4usize), dens in density(), dt in index_dtype(), seed in any::<u64>()) {
        with_rank!(shape.len(), coo_transpose(&shape, sd, dims, dens, dt, seed));
    }

    #[test]
    fn compressed_transpose_is_the_dual_layout(case in ccase(), layout in compressed_layout()) {
        with_rank!(case.shape().len(), compressed_transpose(&case, layout));
    }

    #[test]
    fn coo_bounds_are_validated(shape in prop::collection::vec(1..=5usize, 1..=3), nse in 0..=8usize, dt in index_dtype(), seed in any::<u64>()) {
        with_rank!(shape.len(), coo_validation(&shape, nse, dt, seed));
    }
}
