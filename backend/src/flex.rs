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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transposed_views_are_copied_in_order() {
        let base = FlexTensor::from_data(TensorData::new((0..12).map(|v| v as f32).collect::<Vec<_>>(), [3, 4]));
        let view = base.transpose(0, 1);
        let copy = contiguous(view);
        assert_eq!(copy.as_slice::<f32>().unwrap(), &[0., 4., 8., 1., 5., 9., 2., 6., 10., 3., 7., 11.]);
    }
}
