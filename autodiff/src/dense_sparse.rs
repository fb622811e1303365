//! The dense · sparse primitive, `sparse_dense_mm`: `X · A` for `X [p, m]` dense and `A [m, k]`
//! a CSR pattern with values, computed row by row without transposes, with its backward rule
//! beside its forward: d/dX is `G · Aᵀ` and d/dvalues is `Xᵀ · G` on `A`'s pattern (never an
//! `m x k` dense matrix), by the kernels of `DenseSparseKernels`.
//!
//! The primitive is `unsafe` for the reason `sparse_spmm` is; `matmul` calls it only with the
//! patterns of checked tensors.

use burn::backend::autodiff::{
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
    Autodiff,
};
use burn::backend::{
    backend_extension,
    tensor::{FloatTensor, IntTensor},
    Backend, Flex,
};
use sparsegrad_backend::dense_sparse::DenseSparseKernels;

/// The differentiable dense · sparse product.
///
/// # Safety
/// As [`DenseSparseKernels`]: `crow [m + 1]` and `col [nnz]` form a valid CSR pattern `[m, k]`,
/// `values [nnz]`, `x [p, m]`.
#[backend_extension(Flex, Autodiff)]
pub trait SparseDenseMm: Backend {
    /// `X · A`, `[p, k]`.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn sparse_dense_mm(
        x: FloatTensor<Self>,
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        k: usize,
    ) -> FloatTensor<Self>;
}

impl SparseDenseMm for Flex {
    unsafe fn sparse_dense_mm(
        x: FloatTensor<Self>,
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        k: usize,
    ) -> FloatTensor<Self> {
        // SAFETY: this method's contract is the kernel's.
        unsafe { Flex::dense_csr_mm(x, crow, col, values, k) }
    }
}

/// Backward of `sparse_dense_mm`; parents `[x, values]`.
#[derive(Debug)]
struct DenseMm;

impl<B: DenseSparseKernels> Backward<B, 2> for DenseMm {
    type State = (FloatTensor<B>, IntTensor<B>, IntTensor<B>, FloatTensor<B>);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let (x, crow, col, values) = ops.state;
        let [x_node, v_node] = ops.parents;
        let g = grads.consume::<B>(&ops.node);
        if let Some(node) = v_node {
            // SAFETY: the forward's pattern (valid, its contract), `x [p, m]` and `g [p, k]`.
            let dv = unsafe { B::dense_csr_mm_grad_values(x, g.clone(), crow.clone(), col.clone()) };
            grads.register::<B>(node.id, dv);
        }
        if let Some(node) = x_node {
            // SAFETY: as above.
            let dx = unsafe { B::dense_csr_mm_grad_x(g, crow, col, values) };
            grads.register::<B>(node.id, dx);
        }
    }
}

impl<B: DenseSparseKernels, C: CheckpointStrategy> SparseDenseMm for Autodiff<B, C> {
    unsafe fn sparse_dense_mm(
        x: FloatTensor<Self>,
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        k: usize,
    ) -> FloatTensor<Self> {
        let guards = [x.node(), values.node()];
        let (xp, vp) = (x.into_primitive(), values.into_primitive());
        match DenseMm.prepare::<C>(guards).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                // SAFETY: this method's contract is the kernel's.
                let out = unsafe { B::dense_csr_mm(xp.clone(), crow.clone(), col.clone(), vp.clone(), k) };
                prep.finish((xp, crow, col, vp), out)
            }
            // SAFETY: as above.
            OpsKind::UnTracked(prep) => prep.finish(unsafe { B::dense_csr_mm(xp, crow, col, vp, k) }),
        }
    }
}
