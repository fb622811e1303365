//! Flex buffers for the host kernels: contiguous views, typed index slices, and running an f32
//! or f64 kernel on float inputs (16-bit floats widened to f32 and the result narrowed back).

use crate::host::IntSlice;
use burn::backend::flex::FlexTensor;
use burn::tensor::{DType, Shape, TensorData};

/// The tensor itself when contiguous from offset 0, else a contiguous copy.
pub(crate) fn contiguous(t: FlexTensor) -> FlexTensor {
    if t.is_contiguous() && t.layout().start_offset() == 0 {
        return t;
    }
    transposed_2d(&t).unwrap_or_else(|| t.to_contiguous())
}

/// A 2-D view that is the transpose of a contiguous buffer (strides `[1, rows]`, as
/// `mat2.transpose()` for SDDMM), copied by a cache-blocked parallel transpose: the generic
/// strided copy walks it a column at a time and takes 3x longer than the product it feeds.
fn transposed_2d(t: &FlexTensor) -> Option<FlexTensor> {
    let layout = t.layout();
    let (rows, cols) = match layout.shape().as_slice() {
        &[r, c] => (r, c),
        _ => return None,
    };
    if layout.strides() != [1, rows as isize] || rows * cols == 0 {
        return None;
    }
    let off = layout.start_offset();
    let data = match t.dtype() {
        DType::F32 => TensorData::new(
            sparsegrad_kernels::dense::transpose_blocked(&t.storage::<f32>()[off..off + rows * cols], cols, rows),
            [rows, cols],
        ),
        DType::F64 => TensorData::new(
            sparsegrad_kernels::dense::transpose_blocked(&t.storage::<f64>()[off..off + rows * cols], cols, rows),
            [rows, cols],
        ),
        _ => return None,
    };
    Some(FlexTensor::from_data(data))
}

/// For a 2-D view that is the transpose of a contiguous buffer from offset 0 (strides
/// `[1, rows]`), that buffer as a contiguous tensor (`[cols, rows]`).
pub(crate) fn transposed_base(t: &FlexTensor) -> Option<FlexTensor> {
    let layout = t.layout();
    let rows = match layout.shape().as_slice() {
        &[r, c] if r * c > 0 => r,
        _ => return None,
    };
    if layout.strides() != [1, rows as isize] || layout.start_offset() != 0 {
        return None;
    }
    let base = t.clone().transpose(0, 1);
    base.is_contiguous().then_some(base)
}

/// The elements of a contiguous integer tensor.
pub(crate) fn int_slice(t: &FlexTensor) -> IntSlice<'_> {
    match t.dtype() {
        DType::I64 => IntSlice::I64(t.as_slice().expect("contiguous i64")),
        DType::I32 => IntSlice::I32(t.as_slice().expect("contiguous i32")),
        DType::I16 => IntSlice::I16(t.as_slice().expect("contiguous i16")),
        DType::I8 => IntSlice::I8(t.as_slice().expect("contiguous i8")),
        other => panic!("index tensors must have an integer dtype, got {other:?}"),
    }
}

/// Runs `f32k` or `f64k` on `N` float inputs of one dtype and wraps the result in `shape`;
/// 16-bit floats are widened to f32 (so they accumulate in f32) and the result narrowed back.
pub(crate) fn with_real<const N: usize>(
    inputs: [FlexTensor; N],
    shape: impl Into<Shape>,
    f32k: impl FnOnce([&[f32]; N]) -> Vec<f32>,
    f64k: impl FnOnce([&[f64]; N]) -> Vec<f64>,
) -> FlexTensor {
    let dtype = inputs[0].dtype();
    let shape = shape.into();
    match dtype {
        DType::F64 => {
            let ins = inputs.map(contiguous);
            let out = f64k(core::array::from_fn(|i| ins[i].as_slice::<f64>().expect("f64 operands")));
            FlexTensor::from_data(TensorData::new(out, shape))
        }
        DType::F32 => {
            let ins = inputs.map(contiguous);
            let out = f32k(core::array::from_fn(|i| ins[i].as_slice::<f32>().expect("f32 operands")));
            FlexTensor::from_data(TensorData::new(out, shape))
        }
        _ => {
            let ins = inputs.map(|t| FlexTensor::from_data(t.into_data().convert_dtype(DType::F32)));
            let out = f32k(core::array::from_fn(|i| ins[i].as_slice::<f32>().expect("f32 operands")));
            FlexTensor::from_data(TensorData::new(out, shape).convert_dtype(dtype))
        }
    }
}

/// What a check of a Flex pattern passed ([`checked_pattern`]): where its elements lie, and
/// the buffers that hold them, kept so that they stay where they are, unwritten, while the
/// record lives (the tensors are kept: Flex copies a buffer that another tensor shares before it
/// writes it).
struct CheckedFlexPattern {
    _keep: [FlexTensor; 2],
    /// Address, length and dtype of the row pointers, then of the columns.
    at: [(usize, usize, DType); 2],
    ncols: usize,
}

/// The CSR pattern `c [m + 1]`, `p [nnz]` over `ncols` columns, the elements of the contiguous
/// Flex tensors `crow` and `col`, checked (a panic naming the violation where it is not valid:
/// the safe functions of the tensor layer only pass the patterns of checked tensors). `cell`
/// keeps the record of the last check that passed, so the same arrays are checked once, not at
/// every call (the check reads the whole pattern; a small product costs little more).
pub(crate) fn checked_pattern<'a, I: sparsegrad_kernels::index::IndexElem, J: sparsegrad_kernels::index::IndexElem>(
    operation: &str,
    cell: &sparsegrad_kernels::pattern::TransposeCell,
    tensors: [&FlexTensor; 2],
    c: &'a [I],
    p: &'a [J],
    ncols: usize,
) -> sparsegrad_kernels::pattern::CsrPattern<'a, I, J> {
    try_checked_pattern(cell, tensors, c, p, ncols)
        .unwrap_or_else(|e| panic!("{operation}: the pattern is not valid: {e}"))
}

/// [`checked_pattern`] with the violation returned, for a caller that names the operand itself.
pub(crate) fn try_checked_pattern<
    'a,
    I: sparsegrad_kernels::index::IndexElem,
    J: sparsegrad_kernels::index::IndexElem,
>(
    cell: &sparsegrad_kernels::pattern::TransposeCell,
    [crow, col]: [&FlexTensor; 2],
    c: &'a [I],
    p: &'a [J],
    ncols: usize,
) -> sparsegrad_kernels::Result<sparsegrad_kernels::pattern::CsrPattern<'a, I, J>> {
    use sparsegrad_kernels::pattern::CsrPattern;
    let at = [(c.as_ptr() as usize, c.len(), crow.dtype()), (p.as_ptr() as usize, p.len(), col.dtype())];
    let known = cell.with_checks(|slot| {
        slot.as_ref()
            .and_then(|r| r.downcast_ref::<CheckedFlexPattern>())
            .is_some_and(|r| r.at == at && r.ncols == ncols)
    });
    if known {
        // SAFETY: a record of this type is written below only after `CsrPattern::new` passed on
        // elements of these dtypes at these addresses and lengths over `ncols` columns. It keeps
        // the buffers they lie in, so those buffers are still allocated (no other allocation
        // can lie at these addresses) and unwritten since (shared, so Flex copies before a
        // write): these are the same elements.
        return Ok(unsafe { CsrPattern::new_unchecked(c, p, ncols) });
    }
    let pattern = CsrPattern::new(c, p, ncols)?;
    let record = CheckedFlexPattern { _keep: [crow.clone(), col.clone()], at, ncols };
    cell.with_checks(|slot| *slot = Some(Box::new(record)));
    Ok(pattern)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sparsegrad_kernels::pattern::TransposeCell;

    #[test]
    fn transposed_views_are_copied_in_order() {
        let base = FlexTensor::from_data(TensorData::new((0..12).map(|v| v as f32).collect::<Vec<_>>(), [3, 4]));
        let view = base.transpose(0, 1);
        let copy = contiguous(view);
        assert_eq!(copy.as_slice::<f32>().unwrap(), &[0., 4., 8., 1., 5., 9., 2., 6., 10., 3., 7., 11.]);
    }

    fn ints(v: &[i64]) -> FlexTensor {
        FlexTensor::from_data(TensorData::new(v.to_vec(), [v.len()]))
    }

    /// Checks `crow` and `col` over `k` columns through `cell`, as the kernels' methods do.
    fn check(cell: &TransposeCell, crow: &FlexTensor, col: &FlexTensor, k: usize) -> usize {
        crate::match_ints!(int_slice(crow), c => crate::match_ints!(int_slice(col), p => {
            checked_pattern("test", cell, [crow, col], c, p, k).nnz()
        }))
    }

    /// A pattern is checked once per index storage: the record then vouches for the same
    /// elements (other tensors over the same buffer included), never for other arrays.
    #[test]
    fn a_record_vouches_for_the_arrays_checked_only() {
        let cell = TransposeCell::new();
        let (crow, col) = (ints(&[0, 2, 3]), ints(&[0, 2, 1]));
        assert!(!cell.with_checks(|slot| slot.is_some()));
        assert_eq!(check(&cell, &crow, &col, 3), 3);
        assert!(cell.with_checks(|slot| slot.is_some()), "the check is recorded");
        // Clones share the storage: the record holds.
        assert_eq!(check(&cell, &crow.clone(), &col.clone(), 3), 3);
        // The same arrays over fewer columns are not what was checked.
        let narrower = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&cell, &crow, &col, 2)));
        assert!(narrower.is_err(), "column 2 of 2 columns passed on an old record");
        // Equal values in other buffers pass their own check.
        assert_eq!(check(&cell, &ints(&[0, 2, 3]), &ints(&[0, 2, 1]), 3), 3);
    }

    /// A buffer written after its check (Flex copies a shared buffer first) is checked again.
    #[test]
    fn a_written_buffer_is_checked_again() {
        let cell = TransposeCell::new();
        let (crow, mut col) = (ints(&[0, 2, 3]), ints(&[0, 2, 1]));
        assert_eq!(check(&cell, &crow, &col, 3), 3);
        assert!(col.try_storage_mut::<i64>().is_none(), "the record shares the buffer");
        col.storage_mut::<i64>()[1] = 7;
        let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&cell, &crow, &col, 3)));
        let message = *written.expect_err("column 7 of 3 passed").downcast::<String>().expect("a message");
        assert!(message.contains("test: the pattern is not valid"), "{message}");
    }

    /// Each violation of the CSR invariants is refused, naming it.
    #[test]
    fn invalid_patterns_are_refused() {
        let cases: [(&[i64], &[i64], &str); 4] = [
            (&[0, 2, 1], &[0, 1], "crow"),
            (&[1, 2, 2], &[0, 1], "crow"),
            (&[0, 1, 3], &[0, 1], "crow"),
            (&[0, 1, 2], &[0, -1], "col"),
        ];
        for (c, p, what) in cases {
            let cell = TransposeCell::new();
            let refused =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&cell, &ints(c), &ints(p), 2)));
            let message = *refused.expect_err("an invalid pattern passed").downcast::<String>().expect("a message");
            assert!(message.contains(what), "{c:?} {p:?}: {message}");
            assert!(!cell.with_checks(|slot| slot.is_some()), "a failed check is not recorded");
        }
    }
}
