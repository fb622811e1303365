//! Dense · sparse behind the burn extension trait [`DenseSparseKernels`]: `X · A` for `X [p, m]`
//! dense and `A [m, k]` a CSR pattern with values, each output row accumulating the rows of `A`
//! scaled by that row of `X` (no transposes of `X` or of the result), and its two gradients
//! (`G · Aᵀ` for `X`, `Xᵀ · G` on `A`'s pattern for the values); the rule lives in
//! `sparsegrad-autodiff`'s `dense_sparse`.
//!
//! Flex runs the host kernels of `sparsegrad-kernels`; any other backend gets a default that
//! reads the operands back and runs the same kernels. The methods are `unsafe` for the reason
//! `SpmmKernels`' are.

use crate::flex::*;
use crate::spmm::with_pattern;
use burn::backend::flex::FlexTensor;
use burn::backend::{
    backend_extension, read_sync,
    tensor::{FloatTensor, IntTensor},
    Backend, Flex, TensorMetadata,
};
use burn::tensor::{Shape, TensorData};
use sparsegrad_kernels::dense_sparse::{dense_sparse, dense_sparse_grad_values, dense_sparse_grad_x};
use sparsegrad_kernels::pattern::CsrPattern;

/// The dense · sparse kernels.
///
/// # Safety
/// `crow [m + 1]` and `col [nnz]` form a valid CSR pattern `[m, k]` (as
/// `sparsegrad_kernels::pattern::CsrPattern::new` checks it), `values` holds one value per
/// entry, `x` is `[p, m]` and `g` is `[p, k]`.
#[backend_extension(Flex)]
pub trait DenseSparseKernels: Backend {
    /// `X · A`, `[p, k]`.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn dense_csr_mm(
        x: FloatTensor<Self>,
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        k: usize,
    ) -> FloatTensor<Self> {
        let ([crow, col], device, dtype, p) = host_pattern::<Self>(crow, col, &x);
        let (xv, v) = (host_floats::<Self>(x), host_floats::<Self>(values));
        // SAFETY: the trait's contract: a valid pattern over `k` columns.
        let a = unsafe { CsrPattern::new_unchecked(&crow[..], &col[..], k) };
        let out = dense_sparse(&xv, p, a, &v);
        Self::float_from_data(TensorData::new(out, [p, k]).convert_dtype(dtype), &device)
    }

    /// `G · Aᵀ`, the gradient w.r.t. `X`: `[p, m]`.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn dense_csr_mm_grad_x(
        g: FloatTensor<Self>,
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let k = g.shape()[1];
        let ([crow, col], device, dtype, p) = host_pattern::<Self>(crow, col, &g);
        let m = crow.len() - 1;
        let (gv, v) = (host_floats::<Self>(g), host_floats::<Self>(values));
        // SAFETY: as above.
        let a = unsafe { CsrPattern::new_unchecked(&crow[..], &col[..], k) };
        let out = dense_sparse_grad_x(&gv, p, a, &v);
        Self::float_from_data(TensorData::new(out, [p, m]).convert_dtype(dtype), &device)
    }

    /// `Xᵀ · G` on `A`'s pattern, the gradient w.r.t. the values: `[nnz]`.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn dense_csr_mm_grad_values(
        x: FloatTensor<Self>,
        g: FloatTensor<Self>,
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
    ) -> FloatTensor<Self> {
        let k = g.shape()[1];
        let ([crow, col], device, dtype, p) = host_pattern::<Self>(crow, col, &x);
        let (xv, gv) = (host_floats::<Self>(x), host_floats::<Self>(g));
        // SAFETY: as above.
        let a = unsafe { CsrPattern::new_unchecked(&crow[..], &col[..], k) };
        let out = dense_sparse_grad_values(&xv, &gv, p, a);
        let n = out.len();
        Self::float_from_data(TensorData::new(out, [n]).convert_dtype(dtype), &device)
    }
}

/// The pattern read back as i64, with the dense operand's device, dtype and rows.
fn host_pattern<B: Backend>(
    crow: IntTensor<B>,
    col: IntTensor<B>,
    dense: &FloatTensor<B>,
) -> ([Vec<i64>; 2], B::Device, burn::tensor::DType, usize) {
    let read = |t: IntTensor<B>| read_sync(B::int_into_data(t)).expect("int readback").iter::<i64>().collect();
    ([read(crow), read(col)], dense.device(), dense.dtype(), dense.shape()[0])
}

fn host_floats<B: Backend>(t: FloatTensor<B>) -> Vec<f64> {
    read_sync(B::float_into_data(t)).expect("float readback").iter::<f64>().collect()
}

impl DenseSparseKernels for Flex {
    unsafe fn dense_csr_mm(
        x: FlexTensor,
        crow: FlexTensor,
        col: FlexTensor,
        values: FlexTensor,
        k: usize,
    ) -> FlexTensor {
        let (crow, col) = (contiguous(crow), contiguous(col));
        let p = x.shape()[0];
        with_real(
            [x, values],
            Shape::new([p, k]),
            |[x, v]| with_pattern!(&crow, &col, k, |a| dense_sparse(x, p, a, v)),
            |[x, v]| with_pattern!(&crow, &col, k, |a| dense_sparse(x, p, a, v)),
        )
    }

    unsafe fn dense_csr_mm_grad_x(g: FlexTensor, crow: FlexTensor, col: FlexTensor, values: FlexTensor) -> FlexTensor {
        let (crow, col) = (contiguous(crow), contiguous(col));
        let ([p, k], m) = ([g.shape()[0], g.shape()[1]], crow.shape()[0] - 1);
        with_real(
            [g, values],
            Shape::new([p, m]),
            |[g, v]| with_pattern!(&crow, &col, k, |a| dense_sparse_grad_x(g, p, a, v)),
            |[g, v]| with_pattern!(&crow, &col, k, |a| dense_sparse_grad_x(g, p, a, v)),
        )
    }

    unsafe fn dense_csr_mm_grad_values(x: FlexTensor, g: FlexTensor, crow: FlexTensor, col: FlexTensor) -> FlexTensor {
        let (crow, col) = (contiguous(crow), contiguous(col));
        let ([p, k], nnz) = ([g.shape()[0], g.shape()[1]], col.shape()[0]);
        with_real(
            [x, g],
            Shape::new([nnz]),
            |[x, g]| with_pattern!(&crow, &col, k, |a| dense_sparse_grad_values(x, g, p, a)),
            |[x, g]| with_pattern!(&crow, &col, k, |a| dense_sparse_grad_values(x, g, p, a)),
        )
    }
}
