//! What every custom op's `cpu_fwd` needs to hand candle's CPU storage to the backend's host
//! kernels: the value types the kernels compute in, the dtype check (f32 and f64, one dtype for
//! all operands; anything else is a candle error naming the dtype) and the zero-copy view of an
//! operand's contiguous data.

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, DType, Error, Layout, Result, WithDType};
use sparsegrad_kernels::real::Real;
use sparsegrad_kernels::softmax::SoftmaxReal;

/// A value type the product and softmax kernels both compute in (f32, f64).
pub(crate) trait Float: Real + SoftmaxReal + WithDType {}
impl Float for f32 {}
impl Float for f64 {}

/// The one dtype of an op's float operands, f32 or f64.
pub(crate) fn float_dtype(op: &'static str, operands: &[&CpuStorage]) -> Result<DType> {
    let dtypes: Vec<DType> = operands.iter().map(|s| s.dtype()).collect();
    let first = dtypes[0];
    if let Some(other) = dtypes.iter().find(|&&d| d != first) {
        return Err(Error::Msg(format!(
            "{op}: operands of dtypes {} and {}: expected one dtype (f32 or f64)",
            first.as_str(),
            other.as_str()
        ))
        .bt());
    }
    match first {
        DType::F32 | DType::F64 => Ok(first),
        other => Err(Error::Msg(format!(
            "{op}: unsupported dtype {}: the sparse kernels run in f32 and f64",
            other.as_str()
        ))
        .bt()),
    }
}

/// An operand's elements as a slice: its storage between the layout's offsets. The public
/// functions make operands contiguous before applying an op, so a strided one is a bug.
pub(crate) fn data<'a, T: WithDType>(s: &'a CpuStorage, l: &Layout, op: &'static str) -> Result<&'a [T]> {
    let (start, end) = l.contiguous_offsets().ok_or_else(|| Error::RequiresContiguous { op }.bt())?;
    Ok(&T::cpu_storage_as_slice(s)?[start..end])
}

/// A candle error for an operand whose shape does not fit the op.
pub(crate) fn shape_error(op: &'static str, what: &str, expected: &[usize], actual: &[usize]) -> Error {
    Error::Msg(format!("{op}: {what} has shape {actual:?}, expected {expected:?}")).bt()
}
