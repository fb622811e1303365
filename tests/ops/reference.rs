//! Every printed example of the reference texts (docs/REFERENCES.md) that this crate covers,
//! reproduced with the same inputs: torch.sparse 1.11 (English) and 2.x (Russian; the `>>>`
//! examples), Julia's `SparseArrayCOO` and TensorFlow Scala's `SparseTensor`.
//!
//! Printed sparse reprs are translated to our conventions: values are float tensors (`[3, 4, 5]`
//! prints `[3., 4., 5.]`), names drop `torch.` (`layout=sparse_coo`, `dtype=float64`), and the
//! suffixes wrap by torch's own `_add_suffixes` rule at 80 columns (COO: a new line before
//! `size=`; compressed layouts: `, ` unless the line would pass 80). The shorter names move some
//! line breaks relative to the reference; each expected string says where it comes from.

use burn::tensor::f16;
use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use sparsegrad::prelude::*;

fn dev() -> Device {
    crate::common_ops::dev()
}

fn ints<const N: usize>(data: &[i64], shape: [usize; N], dtype: DType) -> Tensor<N, Int> {
    Tensor::from_data(TensorData::new(data.to_vec(), shape).convert_dtype(dtype), (&dev(), dtype))
}

fn f32s<const N: usize>(data: &[f32], shape: [usize; N]) -> Tensor<N> {
    Tensor::from_data(TensorData::new(data.to_vec(), shape), (&dev(), DType::F32))
}

fn f64s<const N: usize>(data: &[f64], shape: [usize; N]) -> Tensor<N> {
    Tensor::from_data(TensorData::new(data.to_vec(), shape), (&dev(), DType::F64))
}

fn read_ints<const N: usize>(t: Tensor<N, Int>) -> (Vec<usize>, Vec<i64>) {
    let d = t.into_data();
    (d.shape().to_vec(), d.iter::<i64>().collect())
}

fn read_floats<const N: usize>(t: Tensor<N>) -> (Vec<usize>, Vec<f64>) {
    let d = t.into_data();
    (d.shape().to_vec(), d.iter::<f64>().collect())
}

/// torch's `s = torch.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], values, size)`.
fn coo_023<const D: usize, const V: usize>(values: Tensor<V>, shape: [usize; D], idx: DType) -> SparseTensor<D> {
    SparseTensor::coo(ints(&[0, 1, 1, 2, 0, 2], [2, 3], idx), values, shape).unwrap()
}

// ---------------------------------------------------------------- torch: COO construction

/// 1.11 "Construction" / 2.x "Создание": `sparse_coo_tensor(i, v, (2, 3))`, its repr and `to_dense()`.
#[test]
fn coo_construction() {
    for idx in [DType::I64, DType::I32] {
        let s = coo_023(f32s(&[3., 4., 5.], [3]), [2, 3], idx);
        assert_eq!(s.layout(), Layout::Coo);
        assert_eq!(s.index_dtype(), idx);
        assert_eq!((s.shape(), s.nnz(), s.sparse_dim(), s.dense_dim()), ([2, 3], 3, 2, 0));
        assert!(!s.is_coalesced(), "a new COO tensor is uncoalesced, as torch");
        assert_eq!(read_floats(s.to_dense()), (vec![2, 3], vec![0., 0., 3., 4., 0., 5.]));
        let dtype = if idx == DType::I32 { ", dtype=int32" } else { "" };
        let expected = format!(
            "tensor(indices=tensor([[0, 1, 1],
                       [2, 0, 2]]{dtype}),
       values=tensor([3., 4., 5.]),
       size=(2, 3), nnz=3, layout=sparse_coo)"
        );
        assert_eq!(format!("{s}"), expected);
    }
}

/// 1.11 / 2.x: the list of index tuples, transposed (`list(zip(*i))`, `torch.tensor(i).t()`),
/// and TensorFlow's row form (`coo_from_rows`), all give `[[0, 0, 3], [4, 0, 5]]`.
#[test]
fn coo_from_transposed_index_list() {
    for idx in [DType::I64, DType::I32] {
        let rows = ints(&[0, 2, 1, 0, 1, 2], [3, 2], idx);
        let a = SparseTensor::coo(rows.clone().transpose(), f32s(&[3., 4., 5.], [3]), [2, 3]).unwrap();
        let b = SparseTensor::coo_from_rows(rows, f32s(&[3., 4., 5.], [3]), [2, 3]).unwrap();
        for s in [a, b] {
            assert_eq!(read_ints(s.indices_raw().unwrap()), (vec![2, 3], vec![0, 1, 1, 2, 0, 2]));
            assert_eq!(read_floats(s.to_dense()), (vec![2, 3], vec![0., 0., 3., 4., 0., 5.]));
        }
    }
}

/// 1.11 / 2.x: `torch.sparse_coo_tensor(size=(2, 3))`.
#[test]
fn empty_coo_of_size_only() {
    for s in [SparseTensor::<2>::empty([2, 3], &dev()), SparseTensor::<2>::zeros([2, 3], &dev())] {
        let expected = "tensor(indices=tensor([], size=(2, 0)),
       values=tensor([], size=(0,)),
       size=(2, 3), nnz=0, layout=sparse_coo)";
        assert_eq!(format!("{s}"), expected);
        assert_eq!((s.nnz(), s.index_dtype(), s.dtype()), (0, DType::I64, DType::F32));
        assert!(s.is_coalesced());
        assert_eq!(read_ints(s.indices().unwrap()).0, vec![2, 0]);
        assert_eq!(read_floats(s.to_dense()), (vec![2, 3], vec![0.; 6]));
    }
}

/// 1.11 "Hybrid sparse COO tensors" / 2.x "Разреженные гибридные COO-тензоры", and "Working with
/// sparse COO tensors": `(2, 3, 2)` with values `[[3, 4], [5, 6], [7, 8]]`.
#[test]
fn hybrid_coo() {
    let s = coo_023(f32s(&[3., 4., 5., 6., 7., 8.], [3, 2]), [2, 3, 2], DType::I64);
    let expected = "tensor(indices=tensor([[0, 1, 1],
                       [2, 0, 2]]),
       values=tensor([[3., 4.],
                      [5., 6.],
                      [7., 8.]]),
       size=(2, 3, 2), nnz=3, layout=sparse_coo)";
    assert_eq!(format!("{s}"), expected);
    assert_eq!(read_floats(s.to_dense()), (vec![2, 3, 2], vec![0., 0., 0., 0., 3., 4., 5., 6., 0., 0., 7., 8.]));
    // s.sparse_dim(), s.dense_dim() == (2, 1); M + K == ndim.
    assert_eq!((s.sparse_dim(), s.dense_dim()), (2, 1));
    // s.indices() on an uncoalesced tensor.
    let err = s.indices().unwrap_err();
    assert_eq!(err, SparseError::Uncoalesced { operation: "indices" });
    assert_eq!(err.to_string(), "Cannot get indices on an uncoalesced tensor, please call .coalesce() first");
    assert_eq!(s.values::<2>().unwrap_err(), SparseError::Uncoalesced { operation: "values" });
    // s._indices(), s.is_coalesced().
    assert_eq!(read_ints(s.indices_raw().unwrap()), (vec![2, 3], vec![0, 1, 1, 2, 0, 2]));
    assert!(!s.is_coalesced());
    // s2 = s.coalesce(); s2.indices(); values().shape == (nse,) + shape[M:M+K].
    let s2 = s.coalesce();
    assert!(s2.is_coalesced());
    assert_eq!(read_ints(s2.indices().unwrap()), (vec![2, 3], vec![0, 1, 1, 2, 0, 2]));
    assert_eq!(read_floats(s2.values::<2>().unwrap()), (vec![3, 2], vec![3., 4., 5., 6., 7., 8.]));
    assert_eq!(s2.values_shape(), vec![3, 2]);
}

/// 1.11 / 2.x "Uncoalesced sparse COO tensors": `i = [[1, 1]]`, `v = [3, 4]`, size `(3,)`, and
/// `s.coalesce()`. The reference prints `values=tensor(  [3, 4])` (two stray spaces that torch's
/// formatter does not produce); we print torch's actual layout.
#[test]
fn uncoalesced_1d_and_coalesce() {
    for idx in [DType::I64, DType::I32] {
        let s = SparseTensor::<1>::coo(ints(&[1, 1], [1, 2], idx), f32s(&[3., 4.], [2]), [3]).unwrap();
        let dtype = if idx == DType::I32 { ", dtype=int32" } else { "" };
        assert_eq!(
            format!("{s}"),
            format!(
                "tensor(indices=tensor([[1, 1]]{dtype}),
       values=tensor([3., 4.]),
       size=(3,), nnz=2, layout=sparse_coo)"
            )
        );
        assert!(!s.is_coalesced());
        let c = s.coalesce();
        assert_eq!(
            format!("{c}"),
            format!(
                "tensor(indices=tensor([[1]]{dtype}),
       values=tensor([7.]),
       size=(3,), nnz=1, layout=sparse_coo)"
            )
        );
        assert!(c.is_coalesced());
        assert_eq!(c.index_dtype(), idx);
        assert_eq!(read_floats(s.to_dense()).1, vec![0., 7., 0.]);
        assert_eq!(read_floats(c.to_dense()).1, vec![0., 7., 0.]);
    }
}

/// 1.11 / 2.x: the printed result of `a + b` (`indices [[0, 0, 1, 1]]`, `values [7, 8, 5, 6]`,
/// size `(2,)`), built directly (sparse addition is not part of these tests), and its coalesced
/// form: sorted, unique, duplicates summed.
#[test]
fn concatenated_sum_repr_and_coalesce() {
    let s = SparseTensor::<1>::coo(ints(&[0, 0, 1, 1], [1, 4], DType::I64), f32s(&[7., 8., 5., 6.], [4]), [2]).unwrap();
    assert_eq!(
        format!("{s}"),
        "tensor(indices=tensor([[0, 0, 1, 1]]),
       values=tensor([7., 8., 5., 6.]),
       size=(2,), nnz=4, layout=sparse_coo)"
    );
    let c = s.coalesce();
    assert_eq!(read_ints(c.indices().unwrap()).1, vec![0, 1]);
    assert_eq!(read_floats(c.values::<1>().unwrap()).1, vec![15., 11.]);
    // Unsorted input with duplicates: coalesce sorts lexicographically (2-D) and sums.
    let u = SparseTensor::<2>::coo(
        ints(&[1, 0, 1, 0, 2, 1, 2, 1], [2, 4], DType::I32),
        f32s(&[1., 2., 3., 4.], [4]),
        [2, 3],
    )
    .unwrap();
    let c = u.coalesce();
    assert_eq!(read_ints(c.indices().unwrap()), (vec![2, 2], vec![0, 1, 1, 2]));
    assert_eq!(read_floats(c.values::<1>().unwrap()).1, vec![6., 4.]);
    assert_eq!(c.index_dtype(), DType::I32);
}

/// 1.11 note on memory: a 10 000 x 10 000 COO tensor with 100 000 f32 values takes
/// `(2 * 8 + 4) * 100 000 = 2 000 000` bytes with int64 indices.
#[test]
fn coo_memory_formula() {
    let nse = 100_000usize;
    let idx: Vec<i64> = (0..nse as i64).chain((0..nse as i64).map(|i| (i * 7) % 10_000)).map(|i| i % 10_000).collect();
    for (dtype, bytes) in [(DType::I64, 2_000_000), (DType::I32, 1_200_000)] {
        let values = Tensor::<1>::ones([nse], (&dev(), DType::F32));
        let s = SparseTensor::<2>::coo(ints(&idx, [2, nse], dtype), values, [10_000, 10_000]).unwrap();
        assert_eq!(s.memory_bytes(), bytes);
    }
}

// ---------------------------------------------------------------- torch: dense -> sparse

/// 2.x overview: `torch.tensor([[0, 2.], [3, 0]]).to_sparse()`.
#[test]
fn dense_to_sparse_coo() {
    let s = f32s(&[0., 2., 3., 0.], [2, 2]).to_sparse().unwrap();
    assert_eq!(
        format!("{s}"),
        "tensor(indices=tensor([[0, 1],
                       [1, 0]]),
       values=tensor([2., 3.]),
       size=(2, 2), nnz=2, layout=sparse_coo)"
    );
    assert!(s.is_coalesced());
}

/// 2.x "Пакеты": `t.to_sparse_csr()` of a 3-D tensor gives a batched CSR tensor. The reference
/// breaks before `layout=torch.sparse_csr`; `layout=sparse_csr` fits in 80 columns.
#[test]
fn batched_dense_to_csr() {
    let t = f32s(&[1., 0., 2., 3., 4., 0., 5., 6.], [2, 2, 2]);
    let s = t.clone().to_sparse_csr().unwrap();
    assert_eq!(
        format!("{s}"),
        "tensor(crow_indices=tensor([[0, 1, 3],
                            [0, 1, 3]]),
       col_indices=tensor([[0, 0, 1],
                           [0, 0, 1]]),
       values=tensor([[1., 2., 3.],
                      [4., 5., 6.]]), size=(2, 2, 2), nnz=3, layout=sparse_csr)"
    );
    assert_eq!((s.batch_dim(), s.sparse_dim(), s.dense_dim(), s.nnz()), (1, 2, 0, 3));
    assert_eq!(read_ints(s.crow_indices::<2>().unwrap()), (vec![2, 3], vec![0, 1, 3, 0, 1, 3]));
    assert_eq!(read_ints(s.col_indices::<2>().unwrap()), (vec![2, 3], vec![0, 0, 1, 0, 0, 1]));
    assert_eq!(read_floats(s.values::<2>().unwrap()), (vec![2, 3], vec![1., 2., 3., 4., 5., 6.]));
    assert_eq!(read_floats(s.to_dense()), read_floats(t.clone()));
    // The same through COO (3 sparse dims -> batched CSR).
    let via_coo = t.to_sparse().unwrap().to_sparse_csr().unwrap();
    assert_eq!(format!("{via_coo}"), format!("{s}"));
}

/// 2.x "Размеры плотных тензоров": `t.to_sparse(sparse_dim=2)` keeps the last dim dense and
/// stores a row when any of its elements is non-zero.
#[test]
fn hybrid_dense_to_coo() {
    let t = f32s(&[0., 0., 1., 2., 0., 0., 3., 4.], [2, 2, 2]);
    let s = t.clone().to_sparse_coo(2).unwrap();
    assert_eq!(
        format!("{s}"),
        "tensor(indices=tensor([[0, 1],
                       [1, 1]]),
       values=tensor([[1., 2.],
                      [3., 4.]]),
       size=(2, 2, 2), nnz=2, layout=sparse_coo)"
    );
    assert_eq!((s.sparse_dim(), s.dense_dim()), (2, 1));
    assert_eq!(read_floats(s.to_dense()), read_floats(t));
    // A row with one zero and one non-zero element is stored whole.
    let u = f32s(&[0., 0., 0., 5.], [2, 2]).to_sparse_coo(1).unwrap();
    assert_eq!(read_floats(u.values::<2>().unwrap()), (vec![1, 2], vec![0., 5.]));
}

// ---------------------------------------------------------------- torch: CSR / CSC

/// 1.11 "Construction of CSR tensors" / 2.x "Создание CSR-тензоров" (`dtype=torch.float64`).
/// `dtype=float64` fits on the values line; `layout=sparse_csr` wraps.
#[test]
fn csr_constructor() {
    for idx in [DType::I64, DType::I32] {
        let csr = SparseTensor::<2>::csr(
            ints(&[0, 2, 4], [3], idx),
            ints(&[0, 1, 0, 1], [4], idx),
            f64s(&[1., 2., 3., 4.], [4]),
            [2, 2],
        )
        .unwrap();
        let dtype = if idx == DType::I32 { ", dtype=int32" } else { "" };
        assert_eq!(
            format!("{csr}"),
            format!(
                "tensor(crow_indices=tensor([0, 2, 4]{dtype}),
       col_indices=tensor([0, 1, 0, 1]{dtype}),
       values=tensor([1., 2., 3., 4.]), size=(2, 2), nnz=4, dtype=float64,
       layout=sparse_csr)"
            )
        );
        assert_eq!((csr.dtype(), csr.index_dtype(), csr.layout()), (DType::F64, idx, Layout::Csr));
        assert_eq!(read_floats(csr.to_dense()), (vec![2, 2], vec![1., 2., 3., 4.]));
    }
}

/// 1.11 "CSR Tensor Operations" / 2.x: `a.to_sparse_csr()` of a float64 dense tensor, also
/// from a sparse COO tensor ("from a strided or sparse COO tensor").
#[test]
fn dense_to_csr() {
    let a = f64s(&[0., 0., 1., 0., 1., 2., 0., 0., 0., 0., 0., 0.], [3, 4]);
    let expected = "tensor(crow_indices=tensor([0, 1, 3, 3]),
       col_indices=tensor([2, 0, 1]),
       values=tensor([1., 1., 2.]), size=(3, 4), nnz=3, dtype=float64,
       layout=sparse_csr)";
    let sp = a.clone().to_sparse_csr().unwrap();
    assert_eq!(format!("{sp}"), expected);
    let via_coo = a.clone().to_sparse().unwrap().to_sparse_csr().unwrap();
    assert_eq!(format!("{via_coo}"), expected);
    assert_eq!(read_floats(sp.to_dense()), read_floats(a));
}

/// 2.x "Создание тензоров CSC": `sparse_csc_tensor` (float64) and `a.to_sparse_csc()`.
#[test]
fn csc_constructor_and_dense_to_csc() {
    for idx in [DType::I64, DType::I32] {
        let csc = SparseTensor::<2>::csc(
            ints(&[0, 2, 4], [3], idx),
            ints(&[0, 1, 0, 1], [4], idx),
            f64s(&[1., 2., 3., 4.], [4]),
            [2, 2],
        )
        .unwrap();
        let dtype = if idx == DType::I32 { ", dtype=int32" } else { "" };
        assert_eq!(
            format!("{csc}"),
            format!(
                "tensor(ccol_indices=tensor([0, 2, 4]{dtype}),
       row_indices=tensor([0, 1, 0, 1]{dtype}),
       values=tensor([1., 2., 3., 4.]), size=(2, 2), nnz=4, dtype=float64,
       layout=sparse_csc)"
            )
        );
        assert_eq!(read_floats(csc.to_dense()), (vec![2, 2], vec![1., 3., 2., 4.]));
    }
    let a = f64s(&[0., 0., 1., 0., 1., 2., 0., 0., 0., 0., 0., 0.], [3, 4]);
    let sp = a.clone().to_sparse_csc().unwrap();
    assert_eq!(
        format!("{sp}"),
        "tensor(ccol_indices=tensor([0, 1, 2, 3, 3]),
       row_indices=tensor([1, 1, 0]),
       values=tensor([1., 2., 1.]), size=(3, 4), nnz=3, dtype=float64,
       layout=sparse_csc)"
    );
    assert_eq!(read_floats(sp.to_dense()), read_floats(a.clone()));
    // CSR -> CSC gives the same tensor.
    let from_csr = a.to_sparse_csr().unwrap().to_sparse_csc().unwrap();
    assert_eq!(format!("{from_csr}"), format!("{sp}"));
}

/// 2.x "Обзор операторов": `b.to_sparse_csr()` and `b_s.sin()` (sin applied to the values,
/// the zero-preserving unary op of the example).
#[test]
fn csr_of_b_and_sin_of_its_values() {
    let b = f32s(&[0., 0., 1., 2., 3., 0., 4., 5., 0., 6., 0., 0.], [2, 6]);
    let b_s = b.to_sparse_csr().unwrap();
    assert_eq!(read_ints(b_s.crow_indices::<1>().unwrap()).1, vec![0, 3, 6]);
    assert_eq!(read_ints(b_s.col_indices::<1>().unwrap()).1, vec![2, 3, 4, 0, 1, 3]);
    let sin = b_s.with_values(b_s.values_flat().sin());
    assert_eq!(
        format!("{sin}"),
        "tensor(crow_indices=tensor([0, 3, 6]),
       col_indices=tensor([2, 3, 4, 0, 1, 3]),
       values=tensor([ 0.8415,  0.9093,  0.1411, -0.7568, -0.9589, -0.2794]),
       size=(2, 6), nnz=6, layout=sparse_csr)"
    );
}

// ---------------------------------------------------------------- torch: BSR / BSC

const BLOCKS: [f64; 24] =
    [0., 1., 2., 6., 7., 8., 3., 4., 5., 9., 10., 11., 12., 13., 14., 18., 19., 20., 15., 16., 17., 21., 22., 23.];

const BLOCK_VALUES: &str = "values=tensor([[[ 0.,  1.,  2.],
                       [ 6.,  7.,  8.]],
                      [[ 3.,  4.,  5.],
                       [ 9., 10., 11.]],
                      [[12., 13., 14.],
                       [18., 19., 20.]],
                      [[15., 16., 17.],
                       [21., 22., 23.]]])";

/// 2.x "Создание тензоров BSR": `sparse_bsr_tensor` with 2 x 3 blocks, float64. The reference
/// breaks before `size=`, which torch's rule does not (its own BSC example keeps `size=` on the
/// values line); with our names `dtype=float64` fits too and `layout=` wraps.
#[test]
fn bsr_constructor() {
    for idx in [DType::I64, DType::I32] {
        let bsr = SparseTensor::<2>::bsr(
            ints(&[0, 2, 4], [3], idx),
            ints(&[0, 1, 0, 1], [4], idx),
            f64s(&BLOCKS, [4, 2, 3]),
            [4, 6],
        )
        .unwrap();
        let dtype = if idx == DType::I32 { ", dtype=int32" } else { "" };
        assert_eq!(
            format!("{bsr}"),
            format!(
                "tensor(crow_indices=tensor([0, 2, 4]{dtype}),
       col_indices=tensor([0, 1, 0, 1]{dtype}),
       {BLOCK_VALUES}, size=(4, 6), nnz=4, dtype=float64,
       layout=sparse_bsr)"
            )
        );
        assert_eq!((bsr.blocksize(), bsr.nnz(), bsr.values_shape()), (Some([2, 3]), 4, vec![4, 2, 3]));
        let dense: Vec<f64> = (0..24).map(f64::from).collect();
        assert_eq!(read_floats(bsr.to_dense()), (vec![4, 6], dense));
    }
}

/// 2.x: `dense.to_sparse_bsr(blocksize=(2, 3))` (f32 here: no dtype suffix, `layout=` wraps).
#[test]
fn dense_to_bsr() {
    let data: Vec<f32> = (0..24).map(|v| v as f32).collect();
    let dense = f32s(&data, [4, 6]);
    let expected = format!(
        "tensor(crow_indices=tensor([0, 2, 4]),
       col_indices=tensor([0, 1, 0, 1]),
       {BLOCK_VALUES}, size=(4, 6), nnz=4,
       layout=sparse_bsr)"
    );
    let bsr = dense.clone().to_sparse_bsr([2, 3]).unwrap();
    assert_eq!(format!("{bsr}"), expected);
    assert_eq!(read_floats(bsr.to_dense()), read_floats(dense.clone()));
    // Sparse -> BSR gives the same tensor, from COO and from CSR.
    let from_coo = dense.clone().to_sparse().unwrap().to_sparse_bsr([2, 3]).unwrap();
    assert_eq!(format!("{from_coo}"), expected);
    let from_csr = dense.to_sparse_csr().unwrap().to_sparse_bsr([2, 3]).unwrap();
    assert_eq!(format!("{from_csr}"), expected);
}

/// 2.x "Создание тензоров BSC": `sparse_bsc_tensor`, float64.
#[test]
fn bsc_constructor() {
    let bsc = SparseTensor::<2>::bsc(
        ints(&[0, 2, 4], [3], DType::I64),
        ints(&[0, 1, 0, 1], [4], DType::I64),
        f64s(&BLOCKS, [4, 2, 3]),
        [4, 6],
    )
    .unwrap();
    assert_eq!(
        format!("{bsc}"),
        format!(
            "tensor(ccol_indices=tensor([0, 2, 4]),
       row_indices=tensor([0, 1, 0, 1]),
       {BLOCK_VALUES}, size=(4, 6), nnz=4, dtype=float64,
       layout=sparse_bsc)"
        )
    );
    // Block column 0 holds block rows 0 and 1, then block column 1.
    let dense = vec![
        0., 1., 2., 12., 13., 14., //
        6., 7., 8., 18., 19., 20., //
        3., 4., 5., 15., 16., 17., //
        9., 10., 11., 21., 22., 23.,
    ];
    assert_eq!(read_floats(bsc.to_dense()), (vec![4, 6], dense.clone()));
    let round = f64s(&dense, [4, 6]).to_sparse_bsc([2, 3]).unwrap();
    assert_eq!(format!("{round}"), format!("{bsc}"));
}

/// 2.x "Создание разреженных сжатых тензоров": `sparse_compressed_tensor` with layout csr and
/// csc from the same inputs, and `(csr.transpose(0, 1).to_dense() == csc.to_dense()).all()`.
/// Without `dtype=`, `layout=sparse_csr` fits on the values line.
#[test]
fn sparse_compressed_tensor_csr_and_csc() {
    for idx in [DType::I64, DType::I32] {
        let parts = || (ints(&[0, 2, 4], [3], idx), ints(&[0, 1, 0, 1], [4], idx), f32s(&[1., 2., 3., 4.], [4]));
        let (c, p, v) = parts();
        let csr = SparseTensor::<2>::compressed(c, p, v, [2, 2], Layout::Csr).unwrap();
        let (c, p, v) = parts();
        let csc = SparseTensor::<2>::compressed(c, p, v, [2, 2], Layout::Csc).unwrap();
        let dtype = if idx == DType::I32 { ", dtype=int32" } else { "" };
        assert_eq!(
            format!("{csr}"),
            format!(
                "tensor(crow_indices=tensor([0, 2, 4]{dtype}),
       col_indices=tensor([0, 1, 0, 1]{dtype}),
       values=tensor([1., 2., 3., 4.]), size=(2, 2), nnz=4, layout=sparse_csr)"
            )
        );
        assert_eq!(
            format!("{csc}"),
            format!(
                "tensor(ccol_indices=tensor([0, 2, 4]{dtype}),
       row_indices=tensor([0, 1, 0, 1]{dtype}),
       values=tensor([1., 2., 3., 4.]), size=(2, 2), nnz=4, layout=sparse_csc)"
            )
        );
        let t = csr.transpose(0, 1);
        assert_eq!(t.layout(), Layout::Csc);
        let all = t.to_dense().equal(csc.to_dense()).all().into_data().iter::<bool>().collect::<Vec<_>>();
        assert_eq!(all, vec![true]);
        assert_eq!(read_floats(csc.to_dense()).1, vec![1., 3., 2., 4.]);
    }
}

// ---------------------------------------------------------------- Julia SparseArrayCOO

/// `SparseArrayCOO(Int8 | Int16 | [Int64], Float16[1.1 0.0 0.0; 2.1 0.0 2.3])`: 3 stored
/// entries at `[1, 1]`, `[2, 1]`, `[2, 3]` (1-based; 0-based here) with index type Ti.
#[test]
fn julia_index_types() {
    let data: Vec<f16> = [1.1, 0.0, 0.0, 2.1, 0.0, 2.3].map(f16::from_f32).to_vec();
    let dense = || Tensor::<2>::from_data(TensorData::new(data.clone(), [2, 3]), (&dev(), DType::F16));
    for ti in [DType::I8, DType::I16, DType::I64] {
        let spec = SparseSpec { index_dtype: ti, ..SparseSpec::new(Layout::Coo) };
        let a = dense().to_sparse_with(spec).unwrap();
        assert_eq!((a.shape(), a.nnz(), a.index_dtype(), a.dtype()), ([2, 3], 3, ti, DType::F16));
        assert_eq!(read_ints(a.indices().unwrap()), (vec![2, 3], vec![0, 1, 1, 0, 0, 2]));
        let expected: Vec<f64> = [1.1f32, 2.1, 2.3].iter().map(|&v| f16::from_f32(v).to_f64()).collect();
        assert_eq!(read_floats(a.values::<1>().unwrap()).1, expected);
        assert_eq!(read_floats(a.to_dense()).1, data.iter().map(|v| v.to_f64()).collect::<Vec<_>>());
    }
}

/// `SparseArrayCOO{Float64, Int8, 3}(undef, (2, 3, 4))`, `SparseArrayCOO{Float64, Int8}(undef,
/// (4,))` and `similar(B, 2, 4, 1)`: no stored entries.
#[test]
fn julia_undef() {
    let a = SparseTensor::<3>::empty_with([2, 3, 4], 3, DType::I8, DType::F64, &dev()).unwrap();
    assert_eq!((a.shape(), a.nnz(), a.index_dtype(), a.dtype()), ([2, 3, 4], 0, DType::I8, DType::F64));
    assert_eq!(read_floats(a.to_dense()), (vec![2, 3, 4], vec![0.; 24]));
    let b = SparseTensor::<1>::empty_with([4], 1, DType::I8, DType::F64, &dev()).unwrap();
    assert_eq!((b.shape(), b.nnz(), b.index_dtype()), ([4], 0, DType::I8));
    let similar = SparseTensor::<3>::empty_with([2, 4, 1], 3, b.index_dtype(), b.dtype(), &dev()).unwrap();
    assert_eq!(
        (similar.shape(), similar.nnz(), similar.index_dtype(), similar.dtype()),
        ([2, 4, 1], 0, DType::I8, DType::F64)
    );
    assert_eq!(read_ints(similar.indices().unwrap()).0, vec![3, 0]);
}

/// `check_Ti(dims, Ti)`: `0 <= dims[k] <= typemax(Ti)` and `prod(dims) <= typemax(Int)`.
#[test]
fn julia_check_ti() {
    let ok = SparseTensor::<2>::empty_with([127, 3], 2, DType::I8, DType::F64, &dev());
    assert!(ok.is_ok());
    let err = SparseTensor::<2>::empty_with([3, 128], 2, DType::I8, DType::F64, &dev()).unwrap_err();
    assert_eq!(
        err,
        SparseError::DimensionTooLarge { component: "size", dim: 1, size: 128, index_dtype: "int8", max: 127 }
    );
    let err = SparseTensor::<2>::coo(ints(&[0, 0], [2, 1], DType::I8), f32s(&[1.], [1]), [200, 2]).unwrap_err();
    assert_eq!(
        err,
        SparseError::DimensionTooLarge { component: "size", dim: 0, size: 200, index_dtype: "int8", max: 127 }
    );
    let big = 1usize << 32;
    let err = SparseTensor::<2>::empty_with([big, big], 2, DType::I64, DType::F64, &dev()).unwrap_err();
    assert_eq!(err, SparseError::ElementCountOverflow { shape: vec![big, big] });
}

/// `numstored(A)`: stored entries, numerical zeros and duplicates included.
#[test]
fn julia_numstored() {
    let s = SparseTensor::<2>::coo(ints(&[0, 0, 1, 2, 2, 0], [2, 3], DType::I16), f32s(&[1., 2., 0.], [3]), [2, 3])
        .unwrap();
    assert_eq!(s.nnz(), 3);
    assert_eq!(s.coalesce().nnz(), 2, "the duplicate is merged, the stored zero kept");
    assert_eq!(read_floats(s.to_dense()).1, vec![0., 0., 3., 0., 0., 0.]);
}

// ---------------------------------------------------------------- TensorFlow SparseTensor

/// `SparseTensor(indices = [[0, 0], [1, 2]], values = [1, 2], denseShape = [3, 4])` represents
/// `[[1, 0, 0, 0], [0, 0, 2, 0], [0, 0, 0, 0]]`.
#[test]
fn tf_from_rows_to_dense() {
    for idx in [DType::I64, DType::I32] {
        let st =
            SparseTensor::<2>::coo_from_rows(ints(&[0, 0, 1, 2], [2, 2], idx), f32s(&[1., 2.], [2]), [3, 4]).unwrap();
        let dense = vec![1., 0., 0., 0., 0., 0., 2., 0., 0., 0., 0., 0.];
        assert_eq!(read_floats(st.to_dense()), (vec![3, 4], dense.clone()));
        assert_eq!(read_floats(st.to_dense_validated(0.0).unwrap()), (vec![3, 4], dense));
    }
}

/// `sparseReorder(st)`: entries sorted in row-major order, duplicates kept (stably).
#[test]
fn tf_reorder() {
    let rows = ints(&[1, 2, 0, 0, 1, 2, 0, 3], [4, 2], DType::I64);
    let st = SparseTensor::<2>::coo_from_rows(rows, f32s(&[1., 2., 3., 4.], [4]), [3, 4]).unwrap();
    let r = st.reorder();
    assert_eq!(r.nnz(), 4);
    assert_eq!(read_ints(r.indices_raw().unwrap()).1, vec![0, 0, 1, 1, 0, 3, 2, 2]);
    assert_eq!(read_floats(r.values_raw::<1>().unwrap()).1, vec![2., 4., 1., 3.]);
    assert!(!r.is_coalesced(), "a repeated index stays");
    assert_eq!(read_floats(r.to_dense()), read_floats(st.to_dense()));
    let unique =
        SparseTensor::<2>::coo_from_rows(ints(&[1, 2, 0, 3], [2, 2], DType::I32), f32s(&[5., 6.], [2]), [3, 4])
            .unwrap();
    let r = unique.reorder();
    assert!(r.is_coalesced());
    assert_eq!(read_ints(r.indices().unwrap()).1, vec![0, 1, 3, 2]);
    assert_eq!(read_floats(r.values::<1>().unwrap()).1, vec![6., 5.]);
}

/// `toTensor(defaultValue)`: unspecified elements take the default value.
#[test]
fn tf_to_dense_with_default() {
    let st = SparseTensor::<2>::coo_from_rows(ints(&[0, 0, 1, 2], [2, 2], DType::I64), f64s(&[1., 2.], [2]), [3, 4])
        .unwrap();
    let d = st.to_dense_with(-1.0);
    assert_eq!(d.dtype(), DType::F64);
    assert_eq!(read_floats(d).1, vec![1., -1., -1., -1., -1., -1., 2., -1., -1., -1., -1., -1.]);
    // A stored zero is specified: it keeps 0, not the default.
    let z = SparseTensor::<1>::coo(ints(&[1], [1, 1], DType::I64), f32s(&[0.], [1]), [3]).unwrap();
    assert_eq!(read_floats(z.to_dense_with(7.0)).1, vec![7., 0., 7.]);
}

/// `toTensor(defaultValue, validateIndices = true)`: unsorted or repeated indices are rejected.
#[test]
fn tf_to_dense_validated() {
    let unsorted =
        SparseTensor::<2>::coo_from_rows(ints(&[1, 2, 0, 0], [2, 2], DType::I64), f32s(&[1., 2.], [2]), [3, 4])
            .unwrap();
    let err = unsorted.to_dense_validated(0.0).unwrap_err();
    assert_eq!(err, SparseError::NotSorted { position: 1 });
    assert_eq!(err.to_string(), "indices: entry 1 is out of lexicographic order");
    let repeated = SparseTensor::<2>::coo_from_rows(
        ints(&[0, 0, 1, 2, 1, 2], [3, 2], DType::I32),
        f32s(&[1., 2., 3.], [3]),
        [3, 4],
    )
    .unwrap();
    let err = repeated.to_dense_validated(0.0).unwrap_err();
    assert_eq!(err, SparseError::RepeatedIndex { position: 2 });
    assert_eq!(err.to_string(), "indices: entry 2 repeats the index before it");
    // After reorder the unsorted one validates.
    assert!(unsorted.reorder().to_dense_validated(0.0).is_ok());
}
