//! Small helpers shared by the tensor-level modules (and the autodiff crate): moving index
//! vectors in and out of burn Int tensors in a chosen dtype, and reshapes that take zero-size
//! dims literally.

use crate::host::with_ints;
use burn::backend::{
    ops::{FloatTensorOps, IntTensorOps},
    Dispatch,
};
use burn::tensor::{DType, Device, Int, Shape, Tensor, TensorData};

/// An Int tensor of `shape` holding `data`, stored in `dtype` (values must fit: callers check
/// dimensions against the dtype before building indices).
pub fn int_tensor<const N: usize>(
    data: Vec<i64>,
    shape: [usize; N],
    dtype: DType,
    device: &Device,
) -> Tensor<N, Int> {
    let data = match dtype {
        DType::I64 => TensorData::new(data, shape),
        DType::I32 => TensorData::new(data.into_iter().map(|v| v as i32).collect::<Vec<_>>(), shape),
        DType::I16 => TensorData::new(data.into_iter().map(|v| v as i16).collect::<Vec<_>>(), shape),
        DType::I8 => TensorData::new(data.into_iter().map(|v| v as i8).collect::<Vec<_>>(), shape),
        other => TensorData::new(data, shape).convert_dtype(other),
    };
    Tensor::from_data(data, (device, dtype))
}

/// The elements of an Int tensor widened to i64.
pub fn read_i64<const N: usize>(t: &Tensor<N, Int>) -> Vec<i64> {
    with_ints(t, |s| s.to_i64())
}

/// Product of sizes (1 for none).
pub fn numel(sizes: &[usize]) -> usize {
    sizes.iter().product()
}

/// `t.reshape(shape)` that also holds for zero-size dims. burn's `reshape` reads a 0 in the
/// target shape as "keep the source's size at this position" (ONNX semantics), so reshaping an
/// empty tensor to a shape with a zero gets the wrong shape or panics; the dispatch-level op takes
/// the shape literally (and is recorded by autodiff like `reshape`).
pub fn reshape<const A: usize, const B: usize>(t: Tensor<A>, shape: [usize; B]) -> Tensor<B> {
    if shape.contains(&0) {
        Tensor::from_dispatch(Dispatch::float_reshape(t.into_dispatch(), Shape::from(shape)))
    } else {
        t.reshape(shape)
    }
}

/// [`reshape`] for Int tensors.
pub fn reshape_int<const A: usize, const B: usize>(t: Tensor<A, Int>, shape: [usize; B]) -> Tensor<B, Int> {
    if shape.contains(&0) {
        Tensor::from_dispatch(Dispatch::int_reshape(t.into_dispatch(), Shape::from(shape)))
    } else {
        t.reshape(shape)
    }
}
