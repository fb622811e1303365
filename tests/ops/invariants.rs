//! The invariants of docs/SPEC.md section 1 as checked by the constructors and conversions: one test per
//! violation, asserting the exact `SparseError` (variant, component, position, value) and its
//! Display text; and the `*_unchecked` constructors, which take the contents as given.

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use sparsegrad::prelude::*;

fn dev() -> Device {
    crate::common_ops::dev()
}

fn ints<const N: usize>(data: &[i64], shape: [usize; N], dtype: DType) -> Tensor<N, Int> {
    Tensor::from_data(TensorData::new(data.to_vec(), shape).convert_dtype(dtype), (&dev(), dtype))
}

fn i64s<const N: usize>(data: &[i64], shape: [usize; N]) -> Tensor<N, Int> {
    ints(data, shape, DType::I64)
}

fn f32s<const N: usize>(data: &[f32], shape: [usize; N]) -> Tensor<N> {
    Tensor::from_data(TensorData::new(data.to_vec(), shape), (&dev(), DType::F32))
}

fn zeros<const N: usize>(shape: [usize; N]) -> Tensor<N> {
    Tensor::zeros(shape, (&dev(), DType::F32))
}

fn read_ints<const N: usize>(t: Tensor<N, Int>) -> Vec<i64> {
    t.into_data().iter::<i64>().collect()
}

/// A 2 x 3 COO tensor with the given `[2, nse]` indices.
fn coo23(idx: &[i64], dtype: DType) -> Result<SparseTensor<2>, SparseError> {
    let nse = idx.len() / 2;
    SparseTensor::coo(ints(idx, [2, nse], dtype), zeros([nse]), [2, 3])
}

/// A CSR (or other compressed layout) tensor of `shape` with 1-D index tensors.
fn compressed2(c: &[i64], p: &[i64], shape: [usize; 2], layout: Layout) -> Result<SparseTensor<2>, SparseError> {
    SparseTensor::compressed(i64s(c, [c.len()]), i64s(p, [p.len()]), zeros([p.len()]), shape, layout)
}

/// `err` is `expected` and prints `text`.
fn check(err: SparseError, expected: SparseError, text: &str) {
    assert_eq!(err, expected);
    assert_eq!(err.to_string(), text);
}

// ---------------------------------------------------------------- COO

#[test]
fn coo_negative_index() {
    assert!(coo23(&[0, 1, 1, 2, 0, 2], DType::I64).is_ok());
    for dtype in [DType::I64, DType::I32, DType::I16, DType::I8] {
        let err = coo23(&[0, -1, 1, 2, 0, 2], dtype).unwrap_err();
        check(
            err,
            SparseError::IndexOutOfBounds { component: "indices", dim: 0, position: 1, value: -1, size: 2 },
            "indices: index -1 at position 1 is out of bounds for dimension 0 of size 2",
        );
    }
}

#[test]
fn coo_index_too_large() {
    let err = coo23(&[0, 1, 1, 2, 0, 3], DType::I64).unwrap_err();
    check(
        err,
        SparseError::IndexOutOfBounds { component: "indices", dim: 1, position: 2, value: 3, size: 3 },
        "indices: index 3 at position 2 is out of bounds for dimension 1 of size 3",
    );
    let err = coo23(&[0, 2, 1, 2, 0, 2], DType::I32).unwrap_err();
    assert_eq!(err, SparseError::IndexOutOfBounds { component: "indices", dim: 0, position: 1, value: 2, size: 2 });
}

/// The first bad entry in entry order, whatever its dim; within one entry, the first dim.
#[test]
fn coo_reports_first_bad_entry() {
    // Dim 0 is bad at entry 2, dim 1 at entry 0: entry 0 is reported.
    let err = coo23(&[0, 1, 5, 7, 0, 2], DType::I64).unwrap_err();
    assert_eq!(err, SparseError::IndexOutOfBounds { component: "indices", dim: 1, position: 0, value: 7, size: 3 });
    // Entry 1 is bad in both dims.
    let err = coo23(&[0, 9, 1, 0, -4, 2], DType::I32).unwrap_err();
    assert_eq!(err, SparseError::IndexOutOfBounds { component: "indices", dim: 0, position: 1, value: 9, size: 2 });
    // The row form (TensorFlow) reports the same entry.
    let rows = i64s(&[0, 7, 1, 0, 5, 2], [3, 2]);
    let err = SparseTensor::<2>::coo_from_rows(rows, zeros([3]), [2, 3]).unwrap_err();
    assert_eq!(err, SparseError::IndexOutOfBounds { component: "indices", dim: 1, position: 0, value: 7, size: 3 });
}

#[test]
fn coo_values_length_mismatch() {
    let err = SparseTensor::<2>::coo(i64s(&[0, 1, 1, 2, 0, 2], [2, 3]), zeros([4]), [2, 3]).unwrap_err();
    check(
        err,
        SparseError::ShapeMismatch { component: "values", expected: vec![3], actual: vec![4] },
        "values: expected shape [3], got [4]",
    );
    // Hybrid: the dense dims of the values must match the shape's trailing dims.
    let err = SparseTensor::<3>::coo(i64s(&[0, 1, 1, 2, 0, 2], [2, 3]), zeros([3, 3]), [2, 3, 2]).unwrap_err();
    assert_eq!(err, SparseError::ShapeMismatch { component: "values", expected: vec![3, 2], actual: vec![3, 3] });
}

#[test]
fn coo_rank_mismatch() {
    // 2 sparse + 0 dense dims cannot make a rank-3 tensor.
    let err = SparseTensor::<3>::coo(i64s(&[0, 1, 1, 2, 0, 2], [2, 3]), zeros([3]), [2, 3, 2]).unwrap_err();
    let SparseError::InvalidArgument { operation, message } = &err else { panic!("{err:?}") };
    assert_eq!(*operation, "sparse_coo_tensor");
    assert!(message.contains("rank 3"), "{message}");
    assert!(err.to_string().starts_with("sparse_coo_tensor: "));
    // No sparse dim at all.
    let err = SparseTensor::<1>::coo(i64s(&[], [0, 0]), zeros([0, 3]), [3]).unwrap_err();
    assert!(matches!(err, SparseError::InvalidArgument { operation: "sparse_coo_tensor", .. }), "{err:?}");
    let err = SparseTensor::<2>::empty_with([2, 3], 3, DType::I64, DType::F32, &dev()).unwrap_err();
    assert!(matches!(err, SparseError::InvalidArgument { operation: "empty", .. }), "{err:?}");
}

// ---------------------------------------------------------------- compressed layouts

#[test]
fn compressed_start_not_zero() {
    assert!(compressed2(&[0, 2, 4], &[0, 1, 0, 1], [2, 2], Layout::Csr).is_ok());
    let err = compressed2(&[1, 2, 4], &[0, 1, 0, 1], [2, 2], Layout::Csr).unwrap_err();
    check(
        err,
        SparseError::CompressedStart { component: "crow_indices", batch: 0, value: 1 },
        "crow_indices[0]: compressed indices must start with 0, got 1",
    );
    let err = compressed2(&[1, 2, 4], &[0, 1, 0, 1], [2, 2], Layout::Csc).unwrap_err();
    assert_eq!(err, SparseError::CompressedStart { component: "ccol_indices", batch: 0, value: 1 });
    // Batched: the second batch entry is wrong.
    let err = SparseTensor::<3>::csr(
        i64s(&[0, 1, 2, 1, 1, 2], [2, 3]),
        i64s(&[0, 1, 0, 1], [2, 2]),
        zeros([2, 2]),
        [2, 2, 2],
    )
    .unwrap_err();
    assert_eq!(err, SparseError::CompressedStart { component: "crow_indices", batch: 1, value: 1 });
}

#[test]
fn compressed_decreasing() {
    let err = compressed2(&[0, 3, 2, 4], &[0, 1, 0, 1], [3, 2], Layout::Csr).unwrap_err();
    check(
        err,
        SparseError::CompressedDecreasing { component: "crow_indices", batch: 0, position: 2, previous: 3, value: 2 },
        "crow_indices[0]: compressed indices must be non-decreasing, got 2 at position 2 after 3",
    );
}

#[test]
fn compressed_end_not_nse() {
    let err = compressed2(&[0, 2, 3], &[0, 1, 0, 1], [2, 2], Layout::Csr).unwrap_err();
    check(
        err,
        SparseError::CompressedEnd { component: "crow_indices", batch: 0, expected: 4, value: 3 },
        "crow_indices[0]: compressed indices must end with nse = 4, got 3",
    );
    let err = compressed2(&[0, 2, 5], &[0, 1, 0, 1], [2, 2], Layout::Csc).unwrap_err();
    assert_eq!(err, SparseError::CompressedEnd { component: "ccol_indices", batch: 0, expected: 4, value: 5 });
}

#[test]
fn plain_unsorted_within_row() {
    // Decreasing across rows is fine; within row 0 it is not.
    let err = compressed2(&[0, 2, 4], &[1, 0, 0, 1], [2, 2], Layout::Csr).unwrap_err();
    check(
        err,
        SparseError::PlainUnsorted {
            component: "col_indices",
            batch: 0,
            segment: 0,
            position: 1,
            previous: 1,
            value: 0,
        },
        "col_indices[0]: plain indices must be sorted within segment 0, got 0 at position 1 after 1",
    );
    // CSC, batched: column 0 of batch entry 1.
    let err = SparseTensor::<3>::csc(
        i64s(&[0, 1, 2, 0, 2, 2], [2, 3]),
        i64s(&[0, 1, 1, 0], [2, 2]),
        zeros([2, 2]),
        [2, 2, 2],
    )
    .unwrap_err();
    assert_eq!(
        err,
        SparseError::PlainUnsorted {
            component: "row_indices",
            batch: 1,
            segment: 0,
            position: 1,
            previous: 1,
            value: 0
        }
    );
}

#[test]
fn plain_repeated_within_row() {
    let err = compressed2(&[0, 2, 4], &[0, 1, 1, 1], [2, 2], Layout::Csr).unwrap_err();
    check(
        err,
        SparseError::PlainDuplicate { component: "col_indices", batch: 0, segment: 1, position: 3, value: 1 },
        "col_indices[0]: plain index 1 repeated within segment 1 at position 3",
    );
    // The same block column twice in a block row of a BSR tensor.
    let err = SparseTensor::<2>::bsr(i64s(&[0, 2, 2], [3]), i64s(&[1, 1], [2]), zeros([2, 2, 3]), [4, 6]).unwrap_err();
    assert_eq!(
        err,
        SparseError::PlainDuplicate { component: "col_indices", batch: 0, segment: 0, position: 1, value: 1 }
    );
}

#[test]
fn plain_out_of_bounds() {
    let err = compressed2(&[0, 2, 4], &[0, 1, 0, 2], [2, 2], Layout::Csr).unwrap_err();
    check(
        err,
        SparseError::IndexOutOfBounds { component: "col_indices", dim: 1, position: 3, value: 2, size: 2 },
        "col_indices: index 2 at position 3 is out of bounds for dimension 1 of size 2",
    );
    let err = compressed2(&[0, 2, 4], &[-1, 1, 0, 1], [2, 2], Layout::Csc).unwrap_err();
    assert_eq!(
        err,
        SparseError::IndexOutOfBounds { component: "row_indices", dim: 0, position: 0, value: -1, size: 2 }
    );
    // BSR: block columns of a 4 x 6 tensor with 2 x 3 blocks are in 0..2.
    let err = SparseTensor::<2>::bsr(i64s(&[0, 1, 2], [3]), i64s(&[0, 2], [2]), zeros([2, 2, 3]), [4, 6]).unwrap_err();
    assert_eq!(err, SparseError::IndexOutOfBounds { component: "col_indices", dim: 1, position: 1, value: 2, size: 2 });
    // Batched: the position counts through the flattened `[batch, nse]` plain indices.
    let err = SparseTensor::<3>::csr(
        i64s(&[0, 1, 2, 0, 1, 2], [2, 3]),
        i64s(&[0, 1, 0, 5], [2, 2]),
        zeros([2, 2]),
        [2, 2, 2],
    )
    .unwrap_err();
    assert_eq!(err, SparseError::IndexOutOfBounds { component: "col_indices", dim: 2, position: 3, value: 5, size: 2 });
}

#[test]
fn compressed_index_dtype_mismatch() {
    let err = SparseTensor::<2>::csr(
        ints(&[0, 2, 4], [3], DType::I64),
        ints(&[0, 1, 0, 1], [4], DType::I32),
        zeros([4]),
        [2, 2],
    )
    .unwrap_err();
    check(
        err,
        SparseError::InvalidArgument {
            operation: "sparse_compressed_tensor",
            message: "crow_indices (I64) and col_indices (I32) must have the same dtype".into(),
        },
        "sparse_compressed_tensor: crow_indices (I64) and col_indices (I32) must have the same dtype",
    );
    let err = SparseTensor::<2>::csc(
        ints(&[0, 2, 4], [3], DType::I32),
        ints(&[0, 1, 0, 1], [4], DType::I64),
        zeros([4]),
        [2, 2],
    )
    .unwrap_err();
    assert!(
        matches!(&err, SparseError::InvalidArgument { message, .. } if message.contains("ccol_indices (I32)") && message.contains("row_indices (I64)")),
        "{err:?}"
    );
}

#[test]
fn compressed_batch_shape_mismatch() {
    let shape = [2, 2, 2];
    let ok =
        SparseTensor::<3>::csr(i64s(&[0, 1, 2, 0, 1, 2], [2, 3]), i64s(&[0, 1, 0, 1], [2, 2]), zeros([2, 2]), shape);
    assert!(ok.is_ok());
    let err =
        SparseTensor::<3>::csr(i64s(&[0; 9], [3, 3]), i64s(&[0, 1, 0, 1], [2, 2]), zeros([2, 2]), shape).unwrap_err();
    check(
        err,
        SparseError::ShapeMismatch { component: "crow_indices", expected: vec![2, 3], actual: vec![3, 3] },
        "crow_indices: expected shape [2, 3], got [3, 3]",
    );
    let err = SparseTensor::<3>::csr(i64s(&[0, 1, 2, 0, 1, 2], [2, 3]), i64s(&[0; 6], [3, 2]), zeros([2, 2]), shape)
        .unwrap_err();
    assert_eq!(err, SparseError::ShapeMismatch { component: "col_indices", expected: vec![2, 2], actual: vec![3, 2] });
    let err =
        SparseTensor::<3>::csr(i64s(&[0, 1, 2, 0, 1, 2], [2, 3]), i64s(&[0, 1, 0, 1], [2, 2]), zeros([3, 2]), shape)
            .unwrap_err();
    assert_eq!(err, SparseError::ShapeMismatch { component: "values", expected: vec![2, 2], actual: vec![3, 2] });
    // Without batch dims: crow_indices of the wrong length, values of the wrong length.
    let err = compressed2(&[0, 2, 4, 4], &[0, 1, 0, 1], [2, 2], Layout::Csr).unwrap_err();
    assert_eq!(err, SparseError::ShapeMismatch { component: "crow_indices", expected: vec![3], actual: vec![4] });
    let err = SparseTensor::<2>::csr(i64s(&[0, 2, 4], [3]), i64s(&[0, 1, 0, 1], [4]), zeros([3]), [2, 2]).unwrap_err();
    assert_eq!(err, SparseError::ShapeMismatch { component: "values", expected: vec![4], actual: vec![3] });
}

#[test]
fn compressed_rank_mismatch() {
    // 1-D index tensors and 1-D values cannot make a rank-3 (hybrid) CSR tensor.
    let err =
        SparseTensor::<3>::csr(i64s(&[0, 2, 4], [3]), i64s(&[0, 1, 0, 1], [4]), zeros([4]), [2, 2, 2]).unwrap_err();
    assert!(matches!(err, SparseError::InvalidArgument { operation: "sparse_compressed_tensor", .. }), "{err:?}");
    let err = SparseTensor::<2>::compressed(i64s(&[0, 1], [2]), i64s(&[0], [1]), zeros([1]), [1, 1], Layout::Coo)
        .unwrap_err();
    assert_eq!(err, SparseError::UnsupportedLayout { operation: "sparse_compressed_tensor", layout: "sparse_coo" });
}

// ---------------------------------------------------------------- index dtype and element count

#[test]
fn dimension_too_large_for_index_dtype() {
    let big = 3_000_000_000usize;
    let err = SparseTensor::<2>::coo(ints(&[], [2, 0], DType::I32), zeros([0]), [big, 2]).unwrap_err();
    check(
        err,
        SparseError::DimensionTooLarge {
            component: "size",
            dim: 0,
            size: big,
            index_dtype: "int32",
            max: i32::MAX as i64,
        },
        "size: 3000000000 (dimension 0) does not fit the index dtype int32 (max 2147483647)",
    );
    assert!(SparseTensor::<2>::coo(ints(&[], [2, 0], DType::I64), zeros([0]), [big, 2]).is_ok());
    let err =
        SparseTensor::<2>::csr(ints(&[0, 0, 0], [3], DType::I16), ints(&[], [0], DType::I16), zeros([0]), [2, 40_000])
            .unwrap_err();
    assert_eq!(
        err,
        SparseError::DimensionTooLarge { component: "size", dim: 1, size: 40_000, index_dtype: "int16", max: 32_767 }
    );
    let err = SparseTensor::<2>::coo(ints(&[0, 0], [2, 1], DType::I8), zeros([1]), [2, 200]).unwrap_err();
    assert_eq!(
        err,
        SparseError::DimensionTooLarge { component: "size", dim: 1, size: 200, index_dtype: "int8", max: 127 }
    );
    let spec = SparseSpec { index_dtype: DType::I8, ..SparseSpec::new(Layout::Coo) };
    let err = zeros([2, 200]).to_sparse_with(spec).unwrap_err();
    assert_eq!(
        err,
        SparseError::DimensionTooLarge { component: "size", dim: 1, size: 200, index_dtype: "int8", max: 127 }
    );
}

/// Index tensors must hold signed integers of 8 to 64 bits.
#[test]
fn unsupported_index_dtype() {
    let err = SparseTensor::<2>::coo(ints(&[0, 1, 1, 2, 0, 2], [2, 3], DType::U8), zeros([3]), [2, 3]).unwrap_err();
    check(
        err,
        SparseError::UnsupportedDtype { component: "indices", dtype: "U8".into() },
        "indices: unsupported dtype U8",
    );
}

/// Compressed indices count up to nse, which must fit the index dtype too.
#[test]
fn nse_too_large_for_index_dtype() {
    let err = SparseTensor::<2>::csr(
        ints(&[0; 21], [21], DType::I8),
        ints(&[0; 200], [200], DType::I8),
        zeros([200]),
        [20, 20],
    )
    .unwrap_err();
    check(
        err,
        SparseError::DimensionTooLarge { component: "nse", dim: 0, size: 200, index_dtype: "int8", max: 127 },
        "nse: 200 (dimension 0) does not fit the index dtype int8 (max 127)",
    );
    let ones = Tensor::<2>::ones([20, 20], (&dev(), DType::F32));
    let spec = SparseSpec { index_dtype: DType::I8, ..SparseSpec::new(Layout::Csr) };
    let err = ones.clone().to_sparse_with(spec).unwrap_err();
    assert_eq!(
        err,
        SparseError::DimensionTooLarge { component: "nse", dim: 0, size: 400, index_dtype: "int8", max: 127 }
    );
    // COO holds coordinates, not counts: 400 entries with int8 indices are fine. Its CSR form
    // counts them, so the conversion widens the indices (to int16) instead of failing or
    // narrowing.
    let coo = ones.to_sparse_with(SparseSpec { index_dtype: DType::I8, ..SparseSpec::new(Layout::Coo) }).unwrap();
    assert_eq!(coo.nnz(), 400);
    let csr = coo.to_sparse_csr().unwrap();
    assert_eq!(csr.index_dtype(), DType::I16);
    assert_eq!(read_ints(csr.crow_indices::<1>().unwrap()), (0..=20).map(|r| 20 * r).collect::<Vec<i64>>());
    assert_eq!(read_ints(csr.col_indices::<1>().unwrap()), (0..400).map(|j| j % 20).collect::<Vec<i64>>());
}

#[test]
fn element_count_over_i64() {
    let big = 1usize << 32;
    let err = SparseTensor::<2>::coo(i64s(&[], [2, 0]), zeros([0]), [big, big]).unwrap_err();
    check(
        err,
        SparseError::ElementCountOverflow { shape: vec![big, big] },
        "shape [4294967296, 4294967296] has more elements than i64 can count",
    );
    // The whole shape is reported, dense dims included.
    let err = SparseTensor::<3>::coo(i64s(&[], [2, 0]), zeros([0, 2]), [big, big, 2]).unwrap_err();
    assert_eq!(err, SparseError::ElementCountOverflow { shape: vec![big, big, 2] });
    let err = SparseTensor::<3>::coo(i64s(&[], [2, 0]), zeros([0, 4]), [1 << 30, 1 << 31, 4]).unwrap_err();
    assert_eq!(err, SparseError::ElementCountOverflow { shape: vec![1 << 30, 1 << 31, 4] });
    let err = SparseTensor::<2>::csr(i64s(&[0, 0], [2]), i64s(&[], [0]), zeros([0]), [1, 1 << 40]).map(|_| ());
    assert!(err.is_ok(), "2^40 elements fit");
    // A hybrid BSR tensor with one huge block and no stored block.
    let shape = [1 << 32, 1 << 31, 1];
    let err =
        SparseTensor::<3>::bsr(i64s(&[0, 0], [2]), i64s(&[], [0]), zeros([0, 1 << 32, 1 << 31, 1]), shape).unwrap_err();
    assert_eq!(err, SparseError::ElementCountOverflow { shape: shape.to_vec() });
}

// ---------------------------------------------------------------- blocks and batches

#[test]
fn blocksize_does_not_divide() {
    let err = SparseTensor::<2>::bsr(i64s(&[0, 1, 1], [3]), i64s(&[0], [1]), zeros([1, 3, 3]), [4, 6]).unwrap_err();
    check(
        err,
        SparseError::BlocksizeMismatch { dim: 0, size: 4, block: 3 },
        "blocksize: block extent 3 does not divide dimension 0 of size 4",
    );
    let err = SparseTensor::<2>::bsc(i64s(&[0, 1, 1], [3]), i64s(&[0], [1]), zeros([1, 2, 4]), [4, 6]).unwrap_err();
    assert_eq!(err, SparseError::BlocksizeMismatch { dim: 1, size: 6, block: 4 });
    // Dense -> BSR / BSC, with and without batch dims.
    let dense = Tensor::<2>::ones([4, 6], (&dev(), DType::F32));
    assert_eq!(
        dense.clone().to_sparse_bsr([2, 4]).unwrap_err(),
        SparseError::BlocksizeMismatch { dim: 1, size: 6, block: 4 }
    );
    assert_eq!(
        dense.clone().to_sparse_bsc([3, 3]).unwrap_err(),
        SparseError::BlocksizeMismatch { dim: 0, size: 4, block: 3 }
    );
    assert_eq!(
        dense.clone().to_sparse_bsr([0, 3]).unwrap_err(),
        SparseError::BlocksizeMismatch { dim: 0, size: 4, block: 0 }
    );
    let batched = Tensor::<3>::ones([2, 4, 6], (&dev(), DType::F32));
    assert_eq!(
        batched.to_sparse_bsr([3, 3]).unwrap_err(),
        SparseError::BlocksizeMismatch { dim: 1, size: 4, block: 3 }
    );
    // Sparse -> BSR / BSC.
    let coo = dense.clone().to_sparse().unwrap();
    assert_eq!(coo.to_sparse_bsr([2, 4]).unwrap_err(), SparseError::BlocksizeMismatch { dim: 1, size: 6, block: 4 });
    let csr = dense.to_sparse_csr().unwrap();
    assert_eq!(csr.to_sparse_bsc([3, 2]).unwrap_err(), SparseError::BlocksizeMismatch { dim: 0, size: 4, block: 3 });
}

#[test]
fn unequal_batch_nse() {
    // Batch entry 0 holds 3 non-zeros, entry 1 holds 2.
    let t = f32s(&[1., 0., 2., 3., 4., 0., 0., 6.], [2, 2, 2]);
    let err = t.clone().to_sparse_csr().unwrap_err();
    check(
        err,
        SparseError::UnequalBatchNse { batch: 1, nse: 2, expected: 3 },
        "batch entry 1 has 2 specified elements, batch entry 0 has 3: batched compressed tensors need equal counts",
    );
    assert_eq!(t.clone().to_sparse_csc().unwrap_err(), SparseError::UnequalBatchNse { batch: 1, nse: 2, expected: 3 });
    // The same through a 3-D COO tensor.
    let coo = t.to_sparse().unwrap();
    assert_eq!(coo.to_sparse_csr().unwrap_err(), SparseError::UnequalBatchNse { batch: 1, nse: 2, expected: 3 });
}

// ---------------------------------------------------------------- accessors

#[test]
fn indices_of_uncoalesced() {
    let s = coo23(&[0, 1, 1, 2, 0, 2], DType::I64).unwrap();
    check(
        s.indices().unwrap_err(),
        SparseError::Uncoalesced { operation: "indices" },
        "Cannot get indices on an uncoalesced tensor, please call .coalesce() first",
    );
    assert_eq!(s.values::<1>().unwrap_err(), SparseError::Uncoalesced { operation: "values" });
    assert_eq!(read_ints(s.indices_raw().unwrap()), vec![0, 1, 1, 2, 0, 2]);
    assert_eq!(read_ints(s.coalesce().indices().unwrap()), vec![0, 1, 1, 2, 0, 2]);
}

#[test]
fn accessor_of_another_layout() {
    let coo = coo23(&[0, 1, 1, 2, 0, 2], DType::I64).unwrap();
    check(
        coo.crow_indices::<1>().unwrap_err(),
        SparseError::UnsupportedLayout { operation: "crow_indices", layout: "sparse_coo" },
        "crow_indices: unsupported tensor layout sparse_coo",
    );
    let csr = coo.to_sparse_csr().unwrap();
    let csc = coo.to_sparse_csc().unwrap();
    let bsr = coo.to_sparse_bsr([1, 3]).unwrap();
    assert_eq!(
        csc.col_indices::<1>().unwrap_err(),
        SparseError::UnsupportedLayout { operation: "col_indices", layout: "sparse_csc" }
    );
    assert_eq!(
        csr.ccol_indices::<1>().unwrap_err(),
        SparseError::UnsupportedLayout { operation: "ccol_indices", layout: "sparse_csr" }
    );
    assert_eq!(
        bsr.row_indices::<1>().unwrap_err(),
        SparseError::UnsupportedLayout { operation: "row_indices", layout: "sparse_bsr" }
    );
    assert_eq!(
        csr.indices().unwrap_err(),
        SparseError::UnsupportedLayout { operation: "indices", layout: "sparse_csr" }
    );
    assert_eq!(
        csc.indices_raw().unwrap_err(),
        SparseError::UnsupportedLayout { operation: "_indices", layout: "sparse_csc" }
    );
    // The right accessor with the wrong rank (no batch dims: rank 1).
    assert!(matches!(
        csr.crow_indices::<2>().unwrap_err(),
        SparseError::InvalidArgument { operation: "crow_indices", .. }
    ));
    assert_eq!(read_ints(csr.crow_indices::<1>().unwrap()), vec![0, 1, 3]);
}

// ---------------------------------------------------------------- unchecked constructors

/// The unchecked constructors take out-of-bounds, unsorted, non-compressed contents as given.
#[test]
fn unchecked_constructors_take_contents_as_given() {
    let s = SparseTensor::<2>::coo_unchecked(i64s(&[0, 5, -1, 9], [2, 2]), zeros([2]), [2, 3]);
    assert_eq!((s.layout(), s.nnz(), s.shape()), (Layout::Coo, 2, [2, 3]));
    assert_eq!(read_ints(s.indices_raw().unwrap()), vec![0, 5, -1, 9]);

    let (crow, col) = ([5, -2, 9], [7, 7, -1, 3]);
    let csr = SparseTensor::<2>::csr_unchecked(i64s(&crow, [3]), i64s(&col, [4]), zeros([4]), [2, 2]);
    assert_eq!((csr.layout(), csr.nnz()), (Layout::Csr, 4));
    assert_eq!(read_ints(csr.crow_indices::<1>().unwrap()), crow);
    assert_eq!(read_ints(csr.col_indices::<1>().unwrap()), col);
    let csc = SparseTensor::<2>::csc_unchecked(i64s(&crow, [3]), i64s(&col, [4]), zeros([4]), [2, 2]);
    assert_eq!(read_ints(csc.ccol_indices::<1>().unwrap()), crow);
    assert_eq!(read_ints(csc.row_indices::<1>().unwrap()), col);
    let bsr = SparseTensor::<2>::bsr_unchecked(i64s(&crow, [3]), i64s(&col, [4]), zeros([4, 2, 3]), [4, 6]);
    assert_eq!((bsr.layout(), bsr.blocksize()), (Layout::Bsr, Some([2, 3])));
    assert_eq!(read_ints(bsr.col_indices::<1>().unwrap()), col);
    let bsc = SparseTensor::<2>::bsc_unchecked(i64s(&crow, [3]), i64s(&col, [4]), zeros([4, 3, 2]), [6, 4]);
    assert_eq!(read_ints(bsc.ccol_indices::<1>().unwrap()), crow);
    let any =
        SparseTensor::<2>::compressed_unchecked(i64s(&crow, [3]), i64s(&col, [4]), zeros([4]), [2, 2], Layout::Csr);
    assert_eq!(read_ints(any.col_indices::<1>().unwrap()), col);
    // The checked forms reject the same inputs.
    assert!(SparseTensor::<2>::coo(i64s(&[0, 5, -1, 9], [2, 2]), zeros([2]), [2, 3]).is_err());
    assert!(SparseTensor::<2>::csr(i64s(&crow, [3]), i64s(&col, [4]), zeros([4]), [2, 2]).is_err());
}

/// The structure still comes from the component shapes: an inconsistent one panics.
#[test]
#[should_panic(expected = "coo_unchecked: values: expected shape [3], got [4]")]
fn unchecked_coo_still_needs_consistent_shapes() {
    let _ = SparseTensor::<2>::coo_unchecked(i64s(&[0, 1, 1, 2, 0, 2], [2, 3]), zeros([4]), [2, 3]);
}

#[test]
#[should_panic(expected = "sparse_compressed_tensor_unchecked: crow_indices: expected shape [3], got [4]")]
fn unchecked_csr_still_needs_consistent_shapes() {
    let _ = SparseTensor::<2>::csr_unchecked(i64s(&[0, 1, 2, 3], [4]), i64s(&[0, 0, 0], [3]), zeros([3]), [2, 2]);
}

// ---------------------------------------------------------------- empty tensors

/// No stored element is a valid tensor in every layout: the checked constructors accept it and
/// the accessors return empty components (burn reads a 0 in a reshape target as "keep the
/// source dim", which once made these panic).
#[test]
fn empty_compressed_tensors() {
    let csr = SparseTensor::<2>::csr(i64s(&[0, 0, 0], [3]), i64s(&[], [0]), zeros([0]), [2, 2]).unwrap();
    assert_eq!(csr.nnz(), 0);
    assert_eq!(read_ints(csr.crow_indices::<1>().unwrap()), vec![0, 0, 0]);
    assert_eq!(csr.col_indices::<1>().unwrap().dims(), [0]);
    assert_eq!(csr.values::<1>().unwrap().dims(), [0]);
    assert_eq!(csr.to_dense().into_data().iter::<f32>().collect::<Vec<_>>(), vec![0.; 4]);
    let batched = zeros([2, 2, 3]).to_sparse_csr().unwrap();
    assert_eq!((batched.nnz(), batched.batch_dim()), (0, 1));
    assert_eq!(read_ints(batched.crow_indices::<2>().unwrap()), vec![0; 6]);
    assert_eq!(batched.col_indices::<2>().unwrap().dims(), [2, 0]);
    assert_eq!(batched.values::<2>().unwrap().dims(), [2, 0]);
    let bsc =
        SparseTensor::<3>::bsc(i64s(&[0, 0, 0, 0, 0, 0], [2, 3]), i64s(&[], [2, 0]), zeros([2, 0, 2, 2]), [2, 4, 4])
            .unwrap();
    assert_eq!(bsc.values::<4>().unwrap().dims(), [2, 0, 2, 2]);
    assert_eq!(bsc.row_indices::<2>().unwrap().dims(), [2, 0]);
    assert_eq!(bsc.to_sparse_coo().nnz(), 0);
    assert_eq!(bsc.to_dense().dims(), [2, 4, 4]);
    let hybrid = SparseTensor::<3>::coo(i64s(&[], [2, 0]), zeros([0, 5]), [2, 3, 5]).unwrap();
    assert_eq!(hybrid.values::<2>().unwrap().dims(), [0, 5]);
    assert_eq!(hybrid.to_sparse_csr().unwrap().values::<2>().unwrap().dims(), [0, 5]);
}

/// A layer skips re-checking a pattern it holds by storage identity: clones of one index tensor
/// share it, a computed copy (even of equal values) and a reshaped view do not.
#[test]
fn storage_identity_of_index_tensors() {
    use sparsegrad::backend::host::same_int_storage;
    let t = ints(&[0, 2, 3, 5], [4], DType::I64);
    assert!(same_int_storage(&t, &t.clone()), "a clone shares the buffer");
    let copy = t.clone() + 0;
    assert_eq!(copy.clone().into_data(), t.clone().into_data());
    assert!(!same_int_storage(&t, &copy), "a computed copy is another buffer");
    let other = ints(&[0, 2, 3, 5], [4], DType::I64);
    assert!(!same_int_storage(&t, &other), "equal values uploaded twice are two buffers");
    let view = t.clone().slice(1..3);
    let head = t.clone().slice(0..2);
    assert!(!same_int_storage(&view, &head), "two views at different offsets");
}
