//! Shape and indexing ops (docs/SPEC.md section 3): `permute`, `unsqueeze`, `index_select`, `select`,
//! `at`, `narrow`, `sparse::cat`, `stack`, `hstack`, `vstack`, `sparse_mask` and `reshape`, each
//! against burn's dense op on the tensor's `to_dense()` (values only move, so results are
//! exact) on every layout it accepts, f32 and f64, uncoalesced COO, hybrid values and empty
//! tensors; the reference texts' `s[1]` and `s[1, 0, 1]`; errors for bad input; and `gradcheck`
//! of every op with respect to the values (and of `sparse_mask` w.r.t. the dense input).

use crate::common_ops;

use crate::common_ops::gradcheck;
use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use common_ops::{ad, check_sparse_grad, dev, flat, floats, halves_reversed, int_on, ints, Kind, Rng};
use sparsegrad::gradcheck::{GradInput, GradcheckOptions};
use sparsegrad::prelude::*;
use sparsegrad::sparse as sp;

fn index(ids: &[i64], device: &Device) -> Tensor<1, Int> {
    int_on(ids, [ids.len()], device)
}

/// A dense tensor whose first `indexed` dims hold a random pattern of about `density` (items of
/// small distinct integers, so every comparison is exact).
fn dense<const D: usize>(
    shape: [usize; D],
    indexed: usize,
    density: f64,
    seed: u64,
    dtype: DType,
    device: &Device,
) -> Tensor<D> {
    let mut rng = Rng(seed);
    let item: usize = shape[indexed..].iter().product();
    let keys: usize = shape[..indexed].iter().product();
    let mut data = vec![0.0f64; keys * item];
    for k in 0..keys {
        if rng.unit() < density {
            for t in 0..item {
                data[k * item + t] = ((k * item + t) % 13 + 1) as f64 * if rng.next() & 1 == 0 { 1.0 } else { -0.5 };
            }
        }
    }
    Tensor::from_data(TensorData::new(data, shape), (device, dtype))
}

/// A sparse tensor of `kind` holding `d`; `V` is the rank of COO values (1 + dense dims). As
/// `CooDup` each entry is stored twice with half its value, the copies reversed.
fn sparse<const D: usize, const V: usize>(d: &Tensor<D>, kind: Kind, dense_dim: usize) -> SparseTensor<D> {
    let (layout, blocksize) = kind.layout();
    let s = d.clone().to_sparse_with(SparseSpec { layout, dense_dim, blocksize, index_dtype: DType::I64 }).unwrap();
    if kind != Kind::CooDup {
        return s;
    }
    halves_reversed::<D, V>(&s)
}

/// `s` holds `expected` (same shape, exactly the same elements).
fn same<const D: usize>(s: &SparseTensor<D>, expected: Tensor<D>, what: &str) {
    assert_eq!(s.shape(), expected.dims(), "{what}: shape");
    assert_eq!(floats(s.to_dense()), floats(expected), "{what}: elements");
}

const KINDS: [Kind; 4] = [Kind::Coo, Kind::CooDup, Kind::Csr, Kind::Csc];
const DTYPES: [DType; 2] = [DType::F32, DType::F64];

// ---------------------------------------------------------------- the reference texts

/// torch 1.11 / 2.x "Working with sparse COO tensors": `s[1]` and `s[1, 0, 1]` of the hybrid
/// `(2, 3, 2)` tensor, and `s[1, 0, 1:]`. torch's `tensor(6)` is a one-element tensor here.
#[test]
fn reference_indexing_examples() {
    let i = Tensor::<2, Int>::from_data(TensorData::new(vec![0i64, 1, 1, 2, 0, 2], [2, 3]), (&dev(), DType::I64));
    let v = Tensor::<2>::from_data(TensorData::new(vec![3.0f32, 4., 5., 6., 7., 8.], [3, 2]), &dev());
    let s = SparseTensor::coo(i, v, [2, 3, 2]).unwrap();
    let s1 = s.select::<2>(0, 1);
    let expected = "tensor(indices=tensor([[0, 2]]),
       values=tensor([[5., 6.],
                      [7., 8.]]),
       size=(3, 2), nnz=2, layout=sparse_coo)";
    assert_eq!(format!("{s1}"), expected);
    let six = s.at::<1>(&[1, 0, 1]);
    assert_eq!(six.dims(), [1]);
    assert_eq!(six.into_scalar::<f32>(), 6.0);
    assert_eq!(floats(s.at::<1>(&[1, 0])), vec![5.0, 6.0]);
    assert_eq!(floats(s.at::<1>(&[1, 0]).narrow(0, 1, 1)), vec![6.0], "s[1, 0, 1:]");
    assert_eq!(floats(s.at::<1>(&[0, 1])), vec![0.0, 0.0], "unspecified");
}

// ---------------------------------------------------------------- permute, unsqueeze, reshape

#[test]
fn permute_matches_dense() {
    for dtype in DTYPES {
        let d = dense([3, 4, 5, 2], 3, 0.3, 1, dtype, &dev());
        for kind in [Kind::Coo, Kind::CooDup] {
            let s = sparse::<4, 2>(&d, kind, 1);
            for p in [[0, 1, 2, 3], [2, 0, 1, 3], [1, 2, 0, 3], [2, 1, 0, 3]] {
                let r = s.permute(p);
                same(&r, d.clone().permute(p), &format!("{kind:?} {p:?}"));
                assert_eq!(r.is_coalesced(), p == [0, 1, 2, 3] && kind == Kind::Coo);
            }
        }
        // Two dense dims permute the values.
        let d = dense([3, 4, 2, 3], 2, 0.5, 2, dtype, &dev());
        let s = sparse::<4, 3>(&d, Kind::Coo, 2);
        same(&sp::permute(&s, [1, 0, 3, 2]), d.clone().permute([1, 0, 3, 2]), "dense dims");
        // Compressed: through COO, back to the input's layout.
        let d = dense([4, 6], 2, 0.5, 3, dtype, &dev());
        for kind in [Kind::Csr, Kind::Csc, Kind::Bsr([2, 2])] {
            let r = sparse::<2, 1>(&d, kind, 0).permute([1, 0]);
            same(&r, d.clone().permute([1, 0]), &format!("{kind:?}"));
            assert_eq!(r.layout(), sparse::<2, 1>(&d, kind, 0).layout());
        }
        let b = Tensor::cat(vec![d.clone().unsqueeze_dim::<3>(0), (d.clone() * 2.0).unsqueeze_dim(0)], 0);
        same(&b.clone().to_sparse_csr().unwrap().permute([0, 2, 1]), b.permute([0, 2, 1]), "batched CSR");
    }
    let s = sparse::<3, 2>(&dense([3, 4, 2], 2, 0.5, 4, DType::F32, &dev()), Kind::Coo, 1);
    assert!(s.try_permute([0, 2, 1]).unwrap_err().to_string().contains("dense positions"));
    assert!(s.try_permute([0, 0, 1]).unwrap_err().to_string().contains("not a permutation"));
}

#[test]
fn unsqueeze_matches_dense() {
    for dtype in DTYPES {
        let d = dense([3, 4, 2], 2, 0.5, 5, dtype, &dev());
        for kind in [Kind::Coo, Kind::CooDup, Kind::Csr] {
            let s = sparse::<3, 2>(&d, kind, 1);
            for dim in 0..=3 {
                if kind == Kind::Csr && dim == 1 {
                    assert!(s.try_unsqueeze::<4>(1).unwrap_err().to_string().contains("between the row and column"));
                    continue;
                }
                let r = sp::unsqueeze::<3, 4>(&s, dim);
                same(&r, d.clone().unsqueeze_dim(dim), &format!("{kind:?} dim {dim}"));
                assert_eq!((r.layout(), r.is_coalesced(), r.nnz()), (s.layout(), s.is_coalesced(), s.nnz()));
            }
        }
        let d = dense([4, 6], 2, 0.5, 6, dtype, &dev());
        let b = sparse::<2, 1>(&d, Kind::Bsr([2, 3]), 0);
        same(&b.unsqueeze::<3>(0), d.clone().unsqueeze_dim(0), "BSR batch");
        same(&b.unsqueeze::<3>(2), d.clone().unsqueeze_dim(2), "BSR dense");
    }
    let s = SparseTensor::<2>::empty([3, 4], &dev());
    assert!(s.try_unsqueeze::<3>(3).is_err());
    assert!(s.try_unsqueeze::<4>(0).unwrap_err().to_string().contains("rank 3, asked for rank 4"));
}

#[test]
fn reshape_matches_dense() {
    for dtype in DTYPES {
        let d = dense([4, 6], 2, 0.5, 7, dtype, &dev());
        for kind in KINDS {
            let s = sparse::<2, 1>(&d, kind, 0);
            same(&s.reshape([3, -1]), d.clone().reshape([3, 8]), &format!("{kind:?} [3, -1]"));
            same(&sp::reshape(&s, [24]), d.clone().reshape([24]), &format!("{kind:?} [24]"));
            assert_eq!(s.reshape([6, 4]).layout(), s.layout());
        }
        for kind in [Kind::Coo, Kind::CooDup] {
            same(
                &sparse::<2, 1>(&d, kind, 0).reshape([-1, 4, 3]),
                d.clone().reshape([2, 4, 3]),
                &format!("{kind:?} [-1, 4, 3]"),
            );
        }
        // Compressed into 3-D: a batched result, which needs equal counts per batch entry.
        let twice = Tensor::cat(vec![d.clone().narrow(0, 0, 2), d.clone().narrow(0, 0, 2) * 3.0], 0);
        let r = sparse::<2, 1>(&twice, Kind::Csr, 0).reshape([2, 2, 6]);
        assert_eq!((r.layout(), r.batch_dim()), (Layout::Csr, 1));
        same(&r, twice.reshape([2, 2, 6]), "batched CSR");
        let uneven = Tensor::cat(vec![d.clone().narrow(0, 0, 2), d.clone().narrow(0, 0, 2) * 0.0], 0);
        let err = sparse::<2, 1>(&uneven, Kind::Csr, 0).try_reshape([2, 2, 6]).unwrap_err();
        assert!(matches!(err, SparseError::UnequalBatchNse { batch: 1, nse: 0, .. }), "{err}");
        assert!(sparse::<2, 1>(&d, Kind::Coo, 0).reshape([2, 12]).is_coalesced(), "order is kept");
        let h = dense([4, 6, 2], 2, 0.5, 8, dtype, &dev());
        same(&sparse::<3, 2>(&h, Kind::CooDup, 1).reshape([8, 3, 2]), h.clone().reshape([8, 3, 2]), "hybrid");
    }
    let s = SparseTensor::<2>::empty([4, 6], &dev());
    for (bad, why) in [([-1i64, -1], "only one"), ([5, 5], "do not fit"), ([-1, 5], "not a multiple")] {
        assert!(s.try_reshape(bad).unwrap_err().to_string().contains(why), "{bad:?}");
    }
    assert!(SparseTensor::<2>::empty([0, 6], &dev())
        .try_reshape([0, -1])
        .unwrap_err()
        .to_string()
        .contains("zero-size"));
    let h = SparseTensor::<3>::empty_with([4, 6, 2], 2, DType::I64, DType::F32, &dev()).unwrap();
    assert!(h.try_reshape([24, 2]).is_ok());
    assert!(h.try_reshape([12, 4]).unwrap_err().to_string().contains("dense dims [2]"));
}

// ---------------------------------------------------------------- index_select, select, at, narrow

#[test]
fn index_select_matches_dense() {
    for dtype in DTYPES {
        let d = dense([5, 6, 2], 2, 0.5, 9, dtype, &dev());
        for kind in KINDS {
            let s = sparse::<3, 2>(&d, kind, 1);
            for (dim, ids) in
                [(0, vec![4i64, 0, 0, 2]), (1, vec![1, 3]), (1, vec![5, 5]), (2, vec![1, 1, 0]), (0, vec![])]
            {
                let r = s.index_select(dim, index(&ids, &dev()));
                same(&r, d.clone().select(dim, index(&ids, &dev())), &format!("{kind:?} dim {dim} {ids:?}"));
                if dim < 2 && kind != Kind::CooDup {
                    assert_eq!(r.layout(), s.layout());
                }
            }
        }
        let c = sparse::<3, 2>(&d, Kind::Coo, 1);
        assert!(c.index_select(1, index(&[0, 2, 5], &dev())).is_coalesced(), "increasing index keeps order");
        assert!(!c.index_select(1, index(&[2, 0], &dev())).is_coalesced() || c.nnz() < 2);
    }
    let d = dense([6, 6], 2, 0.5, 10, DType::F32, &dev());
    let b = sparse::<2, 1>(&d, Kind::Bsr([2, 3]), 0);
    same(&b.index_select(0, index(&[5, 0], &dev())), d.clone().select(0, index(&[5, 0], &dev())), "BSR");
    assert!(matches!(b.try_index_select(0, index(&[1], &dev())), Err(SparseError::BlocksizeMismatch { .. })));
    let err = b.try_index_select(1, index(&[0, 6], &dev())).unwrap_err();
    assert_eq!(err, SparseError::IndexOutOfBounds { component: "index", dim: 1, position: 1, value: 6, size: 6 });
}

#[test]
fn index_select_lists_entries_in_storage_order_with_positions_ascending() {
    // Uncoalesced COO (rows out of order, one coordinate stored twice, row 3 empty) and an
    // index with a repeat, in every pairing of i32 and i64.
    let (rows, cols) = ([2i64, 0, 2, 1, 0], [1i64, 3, 1, 0, 2]);
    let vals = TensorData::new(vec![1.0f32, 2.0, 3.0, 4.0, 5.0], [5]);
    for (idx_dtype, ids_dtype) in [(DType::I64, DType::I32), (DType::I32, DType::I64), (DType::I64, DType::I64)] {
        let indices = common_ops::index_on(&[rows, cols].concat(), [2, 5], idx_dtype, &dev());
        let s = SparseTensor::<2>::coo(indices, Tensor::<1>::from_data(vals.clone(), &dev()), [4, 4]).unwrap();
        let at = |ids: &[i64]| common_ops::index_on(ids, [ids.len()], ids_dtype, &dev());
        // Entry by entry: each matching position of the index, ascending.
        let r = s.index_select(0, at(&[2, 2, 0]));
        assert_eq!(r.shape(), [3, 4]);
        assert_eq!(ints(r.indices_raw().unwrap()), [0, 1, 2, 0, 1, 2, 1, 1, 3, 1, 1, 2], "{idx_dtype:?} {ids_dtype:?}");
        assert_eq!(floats(r.values_flat()), [1.0, 1.0, 2.0, 3.0, 3.0, 5.0]);
        assert!(!r.is_coalesced());
        // Along the columns, the index strictly increasing.
        let r = s.index_select(1, at(&[1, 2]));
        assert_eq!(ints(r.indices_raw().unwrap()), [2, 2, 0, 0, 0, 1]);
        assert_eq!(floats(r.values_flat()), [1.0, 3.0, 5.0]);
        // Nothing matches: an empty result of the selected shape.
        let r = s.index_select(0, at(&[3, 3]));
        assert_eq!((r.shape(), r.nnz()), ([2, 4], 0));
        assert_eq!(floats(r.to_dense()), vec![0.0; 8]);
        // The first value out of bounds is named, whichever side it leaves.
        let err = s.try_index_select(0, at(&[1, -1, 9])).unwrap_err();
        assert_eq!(err, SparseError::IndexOutOfBounds { component: "index", dim: 0, position: 1, value: -1, size: 4 });
        let err = s.try_index_select(1, at(&[0, 4])).unwrap_err();
        assert_eq!(err, SparseError::IndexOutOfBounds { component: "index", dim: 1, position: 1, value: 4, size: 4 });
    }
    // A coalesced input and a strictly increasing index: coalesced, as the dense reference.
    let d = dense([6, 5], 2, 0.6, 12, DType::F32, &dev());
    let c = sparse::<2, 1>(&d, Kind::Coo, 0);
    let r = c.index_select(0, index(&[0, 3, 4], &dev()));
    assert!(r.is_coalesced());
    same(&r, d.select(0, index(&[0, 3, 4], &dev())), "coalesced");
}

#[test]
fn select_matches_dense() {
    for dtype in DTYPES {
        let d = dense([3, 4, 5], 3, 0.4, 11, dtype, &dev());
        for kind in [Kind::Coo, Kind::CooDup] {
            let s = sparse::<3, 1>(&d, kind, 0);
            for dim in 0..3 {
                for i in [0, 2] {
                    let r = s.select::<2>(dim, i);
                    assert_eq!(
                        floats(r.to_dense()),
                        floats(d.clone().narrow(dim, i, 1)),
                        "{kind:?} dim {dim} index {i}"
                    );
                    assert_eq!(r.is_coalesced(), kind == Kind::Coo || r.nnz() < 2);
                }
            }
        }
        // A dense dim of a hybrid tensor; the rows and columns of CSR and CSC (a 1-D COO result).
        let h = dense([4, 5, 3], 2, 0.5, 12, dtype, &dev());
        let r = sparse::<3, 2>(&h, Kind::Csr, 1).select::<2>(2, 1);
        assert_eq!((r.layout(), r.dense_dim()), (Layout::Csr, 0));
        assert_eq!(floats(r.to_dense()), floats(h.clone().narrow(2, 1, 1)));
        let m = dense([4, 5], 2, 0.5, 13, dtype, &dev());
        for kind in KINDS {
            let s = sparse::<2, 1>(&m, kind, 0);
            for dim in 0..2 {
                let r = s.select::<1>(dim, 3);
                assert_eq!(r.layout(), Layout::Coo);
                assert_eq!(floats(r.to_dense()), floats(m.clone().narrow(dim, 3, 1)), "{kind:?} dim {dim}");
            }
        }
        // A batched CSR keeps its layout while two sparse dims remain.
        let b = Tensor::cat(vec![m.clone().unsqueeze_dim::<3>(0), (m.clone() * 3.0).unsqueeze_dim(0)], 0);
        let s = b.clone().to_sparse_csr().unwrap();
        for dim in 0..3 {
            let r = s.select::<2>(dim, 1);
            assert_eq!(r.layout(), Layout::Csr, "dim {dim}");
            assert_eq!(floats(r.to_dense()), floats(b.clone().narrow(dim, 1, 1)), "batched dim {dim}");
        }
    }
    let v = SparseTensor::<1>::empty([4], &dev());
    assert!(v.try_select::<0>(0, 1).unwrap_err().to_string().contains("use at("));
    let s = SparseTensor::<2>::empty([3, 4], &dev());
    assert!(s.try_select::<2>(0, 1).is_err(), "rank");
    assert_eq!(
        s.try_select::<1>(1, 4).unwrap_err(),
        SparseError::IndexOutOfBounds { component: "index", dim: 1, position: 0, value: 4, size: 4 }
    );
}

/// An index out of range is `IndexOutOfBounds` with the index as given, along every path of
/// `select` (a sparse dim, a dense dim, an index past `i64::MAX`, which was `InvalidArgument`)
/// and of `at`.
#[test]
fn select_and_at_report_every_index_out_of_range_alike() {
    let m = dense([4, 5, 3], 2, 0.5, 16, DType::F64, &dev());
    let s = sparse::<3, 2>(&m, Kind::Coo, 1);
    let oob = |dim: usize, position: usize, value: i128, size: usize| SparseError::IndexOutOfBounds {
        component: "index",
        dim,
        position,
        value,
        size,
    };
    // Just past the end: a sparse dim, then the dense dim.
    assert_eq!(s.try_select::<2>(0, 4).unwrap_err(), oob(0, 0, 4, 4));
    assert_eq!(s.try_select::<2>(2, 3).unwrap_err(), oob(2, 0, 3, 3));
    // Past i64::MAX, reported as given (not as text, not wrapped to a negative value).
    for dim in [1, 2] {
        assert_eq!(s.try_select::<2>(dim, usize::MAX).unwrap_err(), oob(dim, 0, usize::MAX as i128, [4, 5, 3][dim]));
    }
    let big = usize::MAX - 1;
    assert_eq!(s.try_at::<1>(&[1, big]).unwrap_err(), oob(1, 1, big as i128, 5));
    assert_eq!(s.try_at::<1>(&[1, 2, 3]).unwrap_err(), oob(2, 2, 3, 3));
    assert!(s.try_select::<2>(1, usize::MAX).unwrap_err().to_string().contains(&usize::MAX.to_string()));
}

#[test]
fn at_reads_dense_values() {
    for dtype in DTYPES {
        let h = dense([4, 5, 3], 2, 0.5, 14, dtype, &dev());
        let hd = floats(h.clone());
        for kind in [Kind::Coo, Kind::CooDup, Kind::Csr, Kind::Csc] {
            let s = sparse::<3, 2>(&h, kind, 1);
            for (r, c) in [(0, 0), (3, 4), (2, 1), (1, 3)] {
                let item = &hd[(r * 5 + c) * 3..(r * 5 + c + 1) * 3];
                assert_eq!(floats(s.at::<1>(&[r, c])), item, "{kind:?} ({r}, {c}): duplicates summed");
                assert_eq!(floats(s.at::<1>(&[r, c, 2])), &item[2..], "{kind:?} ({r}, {c}, 2)");
            }
        }
        let m = dense([4, 6], 2, 0.5, 15, dtype, &dev());
        let b = sparse::<2, 1>(&m, Kind::Bsr([2, 3]), 0);
        assert_eq!(floats(b.at::<1>(&[3, 4])), floats(m.clone().slice([3..4, 4..5]).reshape([1])), "BSR");
    }
    let s = SparseTensor::<3>::empty_with([4, 5, 3], 2, DType::I64, DType::F64, &dev()).unwrap();
    assert!(s.try_at::<1>(&[1]).is_err(), "every sparse dim needs an index");
    assert!(s.try_at::<2>(&[1, 1]).is_err(), "rank");
    assert!(matches!(s.try_at::<1>(&[4, 0]), Err(SparseError::IndexOutOfBounds { dim: 0, value: 4, .. })));
    assert_eq!(floats(s.at::<1>(&[1, 1])), vec![0.0; 3]);
}

#[test]
fn narrow_matches_dense() {
    for dtype in DTYPES {
        let d = dense([5, 6, 2], 2, 0.5, 16, dtype, &dev());
        for kind in KINDS {
            let s = sparse::<3, 2>(&d, kind, 1);
            for (dim, start, len) in [(0, 1, 3), (1, 2, 4), (1, 0, 6), (2, 1, 1), (0, 4, 1)] {
                let r = s.narrow(dim, start, len);
                same(&r, d.clone().narrow(dim, start, len), &format!("{kind:?} narrow({dim}, {start}, {len})"));
                assert_eq!(r.is_coalesced(), kind != Kind::CooDup || r.nnz() < 2);
            }
            let e = s.narrow_copy(1, 3, 0);
            assert_eq!((e.shape(), e.nnz()), ([5, 0, 2], 0));
        }
        let m = dense([6, 6], 2, 0.5, 17, dtype, &dev());
        same(&sparse::<2, 1>(&m, Kind::Bsr([2, 3]), 0).narrow(0, 2, 4), m.clone().narrow(0, 2, 4), "BSR");
    }
    let s = SparseTensor::<2>::empty([3, 4], &dev());
    assert!(s.try_narrow(1, 3, 2).unwrap_err().to_string().contains("exceeds dimension 1 of size 4"));
    assert!(s.try_narrow(2, 0, 1).is_err());
}

// ---------------------------------------------------------------- cat, stack, hstack, vstack

/// `cat` and `unsqueeze` of COO rewrite the indices on their device: an index dtype too narrow
/// for the joined size is widened before the offsets are added, inputs of mixed index dtypes
/// join in the first one's (widened where needed), and empty inputs add nothing.
#[test]
fn cat_widens_narrow_indices_and_unsqueeze_inserts_a_zero_row() {
    let device = dev();
    let narrow: Vec<DType> =
        [DType::I8, DType::I16, DType::I32].into_iter().filter(|&d| device.supports_dtype(d)).collect();
    for &idx in &narrow {
        let coo = |rows: &[i64], cols: &[i64], vals: &[f32], idx: DType| {
            let n = rows.len();
            // Built in its dtype (a cast is element-wise work, which burn's Cube backend refuses
            // on an empty rank-2 tensor).
            let data = TensorData::new([rows, cols].concat(), [2, n]).convert_dtype(idx);
            let indices = Tensor::<2, Int>::from_data(data, (&device, idx));
            let values = Tensor::<1>::from_data(TensorData::new(vals.to_vec(), [n]), &device);
            SparseTensor::<2>::coo(indices, values, [100, 3]).unwrap()
        };
        let a = coo(&[0, 99], &[2, 1], &[1.0, 2.0], idx);
        let b = coo(&[98, 5], &[0, 2], &[3.0, 4.0], DType::I64);
        let empty = coo(&[], &[], &[], idx);
        let r = sp::cat(&[a.clone(), empty.clone(), b.clone(), a.clone()], 0);
        assert_eq!(r.shape(), [400, 3]);
        // 400 rows need i16 at least: an i8 input is widened, wider ones keep the first's dtype.
        let expected = if idx == DType::I8 { DType::I16 } else { idx };
        assert_eq!(r.index_dtype(), expected, "{idx:?}");
        assert_eq!(ints(r.indices_raw().unwrap()), [0, 99, 298, 205, 300, 399, 2, 1, 0, 2, 2, 1], "{idx:?}");
        assert_eq!(floats(r.values_flat()), [1.0, 2.0, 3.0, 4.0, 1.0, 2.0]);
        // Along dim 1 (columns shift by 3 per input), nothing crosses the first's dtype.
        let r = sp::cat(&[a.clone(), b.clone()], 1);
        assert_eq!((r.shape(), r.index_dtype()), ([100, 6], idx));
        assert_eq!(ints(r.indices_raw().unwrap()), [0, 99, 98, 5, 2, 1, 3, 5]);
        let u = a.unsqueeze::<3>(1);
        assert_eq!((u.shape(), u.index_dtype()), ([100, 1, 3], idx));
        assert_eq!(ints(u.indices_raw().unwrap()), [0, 99, 0, 0, 2, 1]);
        let u = empty.unsqueeze::<3>(0);
        assert_eq!((u.shape(), u.nnz(), u.indices_raw().unwrap().dims()), ([1, 100, 3], 0, [3, 0]));
    }
}

#[test]
fn cat_matches_dense() {
    for dtype in DTYPES {
        for kind in KINDS {
            let parts = [
                dense([3, 4, 2], 2, 0.5, 18, dtype, &dev()),
                dense([2, 4, 2], 2, 0.5, 19, dtype, &dev()),
                dense([1, 4, 2], 2, 0.0, 20, dtype, &dev()),
            ];
            let s: Vec<SparseTensor<3>> = parts.iter().map(|p| sparse::<3, 2>(p, kind, 1)).collect();
            let r = sp::cat(&s, 0);
            same(&r, Tensor::cat(parts.to_vec(), 0), &format!("{kind:?} dim 0"));
            assert_eq!(r.layout(), s[0].layout());
            assert_eq!(r.is_coalesced(), kind != Kind::CooDup);
            let parts = [dense([3, 4, 2], 2, 0.5, 21, dtype, &dev()), dense([3, 1, 2], 2, 0.5, 22, dtype, &dev())];
            let s: Vec<SparseTensor<3>> = parts.iter().map(|p| sparse::<3, 2>(p, kind, 1)).collect();
            same(&sp::cat(&s, 1), Tensor::cat(parts.to_vec(), 1), &format!("{kind:?} dim 1"));
            // Along the dense dim: values padded with zeros, entries from both inputs kept.
            let parts = [dense([3, 4, 2], 2, 0.5, 23, dtype, &dev()), dense([3, 4, 3], 2, 0.5, 24, dtype, &dev())];
            let s: Vec<SparseTensor<3>> = parts.iter().map(|p| sparse::<3, 2>(p, kind, 1)).collect();
            same(&sp::cat(&s, 2), Tensor::cat(parts.to_vec(), 2), &format!("{kind:?} dense dim"));
        }
    }
    let a = SparseTensor::<2>::empty([2, 3], &dev());
    let b = SparseTensor::<2>::empty([2, 4], &dev());
    let err = sp::try_cat(&[a.clone(), b.clone()], 0).unwrap_err().to_string();
    assert!(err.contains("[2, 3]") && err.contains("[2, 4]"), "{err}");
    let panic = std::panic::catch_unwind(|| sp::cat(&[a.clone(), b.clone()], 0)).unwrap_err();
    let msg = panic.downcast_ref::<String>().expect("a formatted panic");
    assert!(msg.contains("[2, 3]") && msg.contains("[2, 4]"), "{msg}");
    assert!(sp::try_cat(&[a.clone(), a.to_sparse_csr().unwrap()], 0)
        .unwrap_err()
        .to_string()
        .contains("does not match"));
    assert!(sp::try_cat::<2>(&[], 0).is_err());
    assert_eq!(sp::cat(&[a.clone(), b.clone()], 1).shape(), [2, 7]);
}

#[test]
fn stack_hstack_vstack_match_dense() {
    for dtype in DTYPES {
        let (x, y) = (dense([3, 4], 2, 0.5, 25, dtype, &dev()), dense([3, 4], 2, 0.5, 26, dtype, &dev()));
        for kind in [Kind::Coo, Kind::CooDup, Kind::Csr] {
            let s = [sparse::<2, 1>(&x, kind, 0), sparse::<2, 1>(&y, kind, 0)];
            for dim in 0..=2 {
                if kind == Kind::Csr && dim < 2 {
                    // A batch of CSR matrices needs equal counts: different patterns are an error
                    // (dim 0), and a new dim between rows and columns has no CSR form (dim 1).
                    assert!(sp::try_stack::<2, 3>(&s, dim).is_err());
                    continue;
                }
                let r = sp::stack::<2, 3>(&s, dim);
                same(&r, Tensor::stack(vec![x.clone(), y.clone()], dim), &format!("{kind:?} stack {dim}"));
            }
            let z = dense([3, 2], 2, 0.5, 27, dtype, &dev());
            same(
                &sp::hstack(&[s[0].clone(), sparse::<2, 1>(&z, kind, 0)]),
                Tensor::cat(vec![x.clone(), z.clone()], 1),
                "hstack",
            );
            let z = dense([1, 4], 2, 0.9, 28, dtype, &dev());
            same(
                &sp::vstack::<2, 2>(&[s[0].clone(), sparse::<2, 1>(&z, kind, 0)]),
                Tensor::cat(vec![x.clone(), z], 0),
                "vstack",
            );
        }
        // Equal counts per batch entry: a CSR stack along 0 is a batched CSR.
        let c = [sparse::<2, 1>(&x, Kind::Csr, 0), sparse::<2, 1>(&(x.clone() * 2.0), Kind::Csr, 0)];
        let r = sp::stack::<2, 3>(&c, 0);
        assert_eq!((r.layout(), r.batch_dim()), (Layout::Csr, 1));
        same(&r, Tensor::stack(vec![x.clone(), x.clone() * 2.0], 0), "batched stack");
        let (u, v) = (dense([5], 1, 0.5, 29, dtype, &dev()), dense([5], 1, 0.5, 30, dtype, &dev()));
        let s = [sparse::<1, 1>(&u, Kind::Coo, 0), sparse::<1, 1>(&v, Kind::Coo, 0)];
        same(&sp::vstack::<1, 2>(&s), Tensor::stack(vec![u.clone(), v.clone()], 0), "vstack 1-D");
        same(&sp::hstack(&s), Tensor::cat(vec![u.clone(), v.clone()], 0), "hstack 1-D");
    }
    let a = SparseTensor::<2>::empty([2, 3], &dev());
    assert!(sp::try_stack::<2, 3>(&[a.clone(), SparseTensor::empty([3, 2], &dev())], 0).is_err());
    assert!(sp::try_vstack::<2, 3>(&[a]).is_err());
}

// ---------------------------------------------------------------- sparse_mask

#[test]
fn sparse_mask_reads_the_dense_tensor_at_the_pattern() {
    for dtype in DTYPES {
        let x = dense([4, 6], 2, 1.0, 31, dtype, &dev());
        let pattern = dense([4, 6], 2, 0.4, 32, DType::F32, &dev());
        for kind in [Kind::Coo, Kind::Csr, Kind::Csc, Kind::Bsr([2, 3])] {
            let mask = sparse::<2, 1>(&pattern, kind, 0);
            let r = sp::sparse_mask(&x, &mask);
            assert_eq!((r.layout(), r.nnz(), r.dtype()), (mask.layout(), mask.nnz(), dtype));
            // Stored (block) elements: the COO form of the mask's own pattern.
            let c = mask.to_sparse_coo().coalesce();
            let ones = c.with_values(Tensor::ones(c.values_flat().dims(), (&dev(), dtype))).to_dense();
            same(&r, x.clone() * ones, &format!("{kind:?}"));
        }
        // Uncoalesced mask: the mask's entries, duplicates included, each with its value.
        let mask = sparse::<2, 1>(&pattern, Kind::CooDup, 0);
        let r = sp::sparse_mask(&x, &mask);
        assert_eq!(ints(r.indices_raw().unwrap()), ints(mask.indices_raw().unwrap()));
        let (idx, n, xd) = (ints(mask.indices_raw().unwrap()), mask.nnz(), floats(x.clone()));
        let expected: Vec<f64> = (0..n).map(|j| xd[idx[j] as usize * 6 + idx[n + j] as usize]).collect();
        assert_eq!(floats(r.values_flat()), expected);
        // Hybrid.
        let h = dense([4, 5, 2], 2, 1.0, 33, dtype, &dev());
        let mask = sparse::<3, 2>(&dense([4, 5, 2], 2, 0.5, 34, dtype, &dev()), Kind::Coo, 1);
        let ones = mask.with_values(mask.values_flat().ones_like()).to_dense();
        same(&sp::sparse_mask(&h, &mask), h.clone() * ones, "hybrid");
    }
    let err = sp::try_sparse_mask(&Tensor::<2>::zeros([3, 4], &dev()), &SparseTensor::empty([4, 3], &dev()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("[3, 4]") && err.contains("[4, 3]"), "{err}");
}

// ---------------------------------------------------------------- empty tensors

#[test]
fn empty_tensors_through_every_op() {
    for dtype in DTYPES {
        let e = SparseTensor::<3>::empty_with([3, 4, 2], 2, DType::I32, dtype, &dev()).unwrap();
        let zeros = |shape: &[usize]| vec![0.0; shape.iter().product()];
        let check = |s: &SparseTensor<3>, shape: [usize; 3]| {
            assert_eq!((s.shape(), s.nnz(), s.dtype()), (shape, 0, dtype));
            assert_eq!(floats(s.to_dense()), zeros(&shape));
        };
        check(&e.permute([1, 0, 2]), [4, 3, 2]);
        check(&e.index_select(1, index(&[0, 3, 3], &dev())), [3, 3, 2]);
        check(&e.index_select(2, index(&[1], &dev())), [3, 4, 1]);
        check(&e.narrow(0, 1, 2), [2, 4, 2]);
        check(&sp::cat(&[e.clone(), e.clone()], 2), [3, 4, 4]);
        check(&e.reshape([2, 6, 2]), [2, 6, 2]);
        check(&e.select::<2>(0, 1).unsqueeze::<3>(0), [1, 4, 2]);
        check(&sp::sparse_mask(&Tensor::ones([3, 4, 2], (&dev(), dtype)), &e), [3, 4, 2]);
        assert_eq!(sp::stack::<3, 4>(&[e.clone(), e.clone()], 0).shape(), [2, 3, 4, 2]);
        assert_eq!(floats(e.at::<1>(&[2, 3, 1])), vec![0.0]);
        assert_eq!(e.index_select(1, index(&[0, 3], &dev())).index_dtype(), DType::I32);
    }
}

// ---------------------------------------------------------------- gradients

/// gradcheck of `op` (its result read through `to_dense`) w.r.t. the values of `s`.
fn grad<const D: usize, const E: usize>(
    s: &SparseTensor<D>,
    what: &str,
    op: impl Fn(&SparseTensor<D>) -> SparseTensor<E>,
) {
    grad_dense(s, what, |x| op(x).to_dense());
}

fn grad_dense<const D: usize, const R: usize>(
    s: &SparseTensor<D>,
    what: &str,
    op: impl Fn(&SparseTensor<D>) -> Tensor<R>,
) {
    check_sparse_grad(s, what, GradcheckOptions::default(), |x| op(&x));
}

#[test]
fn gradcheck_every_op() {
    let d = dense([4, 5, 2], 2, 0.5, 35, DType::F64, &ad());
    for kind in [Kind::Coo, Kind::CooDup, Kind::Csr] {
        let s = sparse::<3, 2>(&d, kind, 1);
        let k = format!("{kind:?}");
        grad(&s, &format!("permute {k}"), |x| x.permute([1, 0, 2]));
        grad(&s, &format!("unsqueeze {k}"), |x| x.unsqueeze::<4>(3));
        grad(&s, &format!("index_select {k}"), |x| x.index_select(0, index(&[3, 0, 3], &x.device())));
        grad(&s, &format!("index_select dense {k}"), |x| x.index_select(2, index(&[1, 1, 0], &x.device())));
        grad(&s, &format!("select {k}"), |x| x.select::<2>(1, 2));
        grad(&s, &format!("select dense {k}"), |x| x.select::<2>(2, 1));
        grad(&s, &format!("narrow {k}"), |x| x.narrow(1, 1, 3));
        grad(&s, &format!("narrow dense {k}"), |x| x.narrow(2, 1, 1));
        grad(&s, &format!("reshape {k}"), |x| x.reshape([10, 2, 2]));
        grad(&s, &format!("cat {k}"), |x| sp::cat(&[x.clone(), x.clone()], 1));
        grad(&s, &format!("cat dense {k}"), |x| sp::cat(&[x.clone(), x.narrow(2, 0, 1)], 2));
        grad(&s, &format!("stack {k}"), |x| sp::stack::<3, 4>(&[x.clone(), x.clone()], 0));
        grad(&s, &format!("hstack {k}"), |x| sp::hstack(&[x.clone(), x.clone()]));
        grad(&s, &format!("vstack {k}"), |x| sp::vstack::<3, 3>(&[x.clone(), x.clone()]));
        grad_dense(&s, &format!("at {k}"), |x| x.at::<1>(&[0, 0]) + x.at::<1>(&[3, 4]) + x.at::<1>(&[2, 1]));
    }
    // Two inputs to cat, each with its own gradient.
    let (a, b) = (sparse::<3, 2>(&d, Kind::Coo, 1), sparse::<3, 2>(&(d.clone() * 0.5), Kind::CooDup, 1));
    let (da, db) = (a.values_flat().dims(), b.values_flat().dims());
    let f = |v: &[Tensor<1>]| {
        flat(sp::cat(&[a.with_values(v[0].clone().reshape(da)), b.with_values(v[1].clone().reshape(db))], 0).to_dense())
    };
    gradcheck(f, &[GradInput::sparse("a", &a), GradInput::sparse("b", &b)], GradcheckOptions::default()).unwrap();
    // sparse_mask w.r.t. the dense input.
    let mask = sparse::<3, 2>(&dense([4, 5, 2], 2, 0.5, 36, DType::F64, &ad()), Kind::CooDup, 1);
    let x = dense([4, 5, 2], 2, 1.0, 37, DType::F64, &ad());
    let f = |v: &[Tensor<1>]| flat(sp::sparse_mask(&v[0].clone().reshape([4, 5, 2]), &mask).to_dense());
    let report = gradcheck(f, &[GradInput::dense("dense", &x)], GradcheckOptions::default()).unwrap();
    assert_eq!(report.checked, 40);
}
