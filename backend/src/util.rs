//! Small helpers shared by the tensor-level modules: moving index vectors in and out of burn
//! Int tensors in a chosen dtype.

use crate::host::with_ints;
use burn::tensor::{DType, Device, Int, Tensor, TensorData};

/// An Int tensor of `shape` holding `data`, stored in `dtype` (values must fit: callers check
/// dimensions against the dtype before building indices).
pub(crate) fn int_tensor<const N: usize>(
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
pub(crate) fn read_i64<const N: usize>(t: &Tensor<N, Int>) -> Vec<i64> {
    with_ints(t, |s| s.to_i64())
}

/// Product of sizes (1 for none).
pub(crate) fn numel(sizes: &[usize]) -> usize {
    sizes.iter().product()
}
