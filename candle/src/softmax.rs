//! torch's `sparse.softmax` / `sparse.log_softmax` for candle: unspecified elements count as
//! -inf, so each row (`dim = 1`) or column (`dim = 0`) is normalised over its stored elements
//! only, and a row with none stays empty. The result has the input's pattern (COO coalesced
//! first: repeats are one element).
//!
//! One custom op pair on the held CSR pattern, the burn side's rule (`sparsegrad_autodiff::
//! softmax`) beside the same kernels (`sparsegrad_kernels::softmax`): the forward is the segment
//! softmax, its backward the closed form from the saved output `y`, `y * (g - sum_seg(g * y))`
//! or `g - exp(y) * sum_seg(g)` for log-softmax, both on the pattern. Rows are segments as
//! stored (the row pointers are the offsets); columns are segments of the CSC view (its column
//! pointers, read through its permutation, no copy of the values).

use crate::host::{data, float_dtype, shape_error, Float};
use crate::indices::with_csr;
use crate::tensor::{CsrPattern, Pattern, SparseTensor};
use candle_core::{CpuStorage, CustomOp1, CustomOp2, DType, Error, Layout, Result, Shape, Tensor, WithDType};
use sparsegrad_kernels::softmax::{segment_softmax, segment_softmax_backward};
use sparsegrad_kernels::SparseError;
use std::sync::Arc;

/// Segments of a pattern along `dim` and which of the two functions.
#[derive(Clone)]
struct Segments {
    pattern: Arc<CsrPattern>,
    dim: usize,
    log: bool,
}

impl Segments {
    fn name(&self) -> &'static str {
        if self.log {
            "sparse_log_softmax"
        } else {
            "sparse_softmax"
        }
    }

    fn check(&self, what: &str, l: &Layout) -> Result<()> {
        let nnz = self.pattern.nnz();
        if l.dims() != [nnz] {
            return Err(shape_error(self.name(), what, &[nnz], l.dims()));
        }
        Ok(())
    }

    fn forward<T: Float>(&self, x: &[T]) -> Vec<T> {
        let p = &self.pattern;
        if self.dim == 1 {
            with_csr!(&p.indices, |c, _q| segment_softmax(x, 1, c, None::<&[i64]>, self.log))
        } else {
            let csc = p.csc();
            segment_softmax(x, 1, csc.ccol(), Some(csc.perm()), self.log)
        }
    }

    fn backward<T: Float>(&self, y: &[T], g: &[T]) -> Vec<T> {
        let p = &self.pattern;
        if self.dim == 1 {
            with_csr!(&p.indices, |c, _q| segment_softmax_backward(y, g, 1, c, None::<&[i64]>, self.log))
        } else {
            let csc = p.csc();
            segment_softmax_backward(y, g, 1, csc.ccol(), Some(csc.perm()), self.log)
        }
    }
}

/// The segment softmax of the values `[nnz]`.
struct SegmentSoftmax(Segments);

impl CustomOp1 for SegmentSoftmax {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        self.0.check("values", l)?;
        let out = match float_dtype(self.name(), &[s])? {
            DType::F32 => f32::to_cpu_storage_owned(self.0.forward(data::<f32>(s, l, self.name())?)),
            _ => f64::to_cpu_storage_owned(self.0.forward(data::<f64>(s, l, self.name())?)),
        };
        Ok((out, l.shape().clone()))
    }

    fn bwd(&self, _x: &Tensor, y: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
        Ok(Some(y.contiguous()?.apply_op2_no_bwd(&g.contiguous()?, &SegmentSoftmaxBackward(self.0.clone()))?))
    }
}

/// The input gradient from the output `y` and its gradient `g` (operands `(y, g)`).
struct SegmentSoftmaxBackward(Segments);

impl CustomOp2 for SegmentSoftmaxBackward {
    fn name(&self) -> &'static str {
        if self.0.log {
            "sparse_log_softmax_backward"
        } else {
            "sparse_softmax_backward"
        }
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout) -> Result<(CpuStorage, Shape)> {
        self.0.check("the output", l1)?;
        self.0.check("the output gradient", l2)?;
        let op = self.name();
        let out = match float_dtype(op, &[s1, s2])? {
            DType::F32 => {
                f32::to_cpu_storage_owned(self.0.backward(data::<f32>(s1, l1, op)?, data::<f32>(s2, l2, op)?))
            }
            _ => f64::to_cpu_storage_owned(self.0.backward(data::<f64>(s1, l1, op)?, data::<f64>(s2, l2, op)?)),
        };
        Ok((out, l1.shape().clone()))
    }
}

fn segment_softmax_op(input: &SparseTensor, dim: usize, log: bool) -> Result<SparseTensor> {
    if dim > 1 {
        let operation = if log { "log_softmax" } else { "softmax" };
        return Err(Error::wrap(SparseError::InvalidArgument {
            operation,
            message: format!("dim {dim} out of range for a tensor of rank 2"),
        }));
    }
    let s = input.coalesce()?;
    let pattern = match &s.pattern {
        Pattern::Csr(p) => p.clone(),
        Pattern::Coo { .. } => {
            let Pattern::Csr(p) = s.to_sparse_csr()?.pattern else { unreachable!("to_sparse_csr returns CSR") };
            p
        }
    };
    // A coalesced COO tensor stores its entries in the CSR order of its pattern, so the values
    // need no permutation either way.
    let y = s.values.contiguous()?.apply_op1(SegmentSoftmax(Segments { pattern, dim, log }))?;
    Ok(SparseTensor { pattern: s.pattern, values: y })
}

/// torch's `sparse.softmax(input, dim)` for a matrix (`dim` 0 or 1): the input's pattern with
/// each column or row normalised over its stored elements. Differentiable w.r.t. the values.
pub fn softmax(input: &SparseTensor, dim: usize) -> Result<SparseTensor> {
    segment_softmax_op(input, dim, false)
}

/// torch's `sparse.log_softmax(input, dim)`: as [`softmax`], the logarithm computed directly.
pub fn log_softmax(input: &SparseTensor, dim: usize) -> Result<SparseTensor> {
    segment_softmax_op(input, dim, true)
}
