//! The `Autodiff` impl of [`SparseSpmm`]: the tracked `sparse_spmm` runs the inner backend's
//! forward kernels and records the backward rule, which sends the output gradient `G` to the
//! values as the SDDMM of `G` and `X` over the pattern (masked) and to `X` as `Aᵀ · G` (or
//! `A · G`), by the inner backend's kernels: one fused pass
//! ([`csr_spmm_backward`](SparseSpmm::csr_spmm_backward)) when both are wanted. The rule keeps
//! the pattern's transposed-view cell.

use super::{forward, SparseSpmm};
use crate::sddmm::SparseSddmm;
use burn::backend::autodiff::{
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
    Autodiff,
};
use burn::backend::{
    tensor::{FloatTensor, IntTensor},
    TensorMetadata,
};
use burn::tensor::Slice;
use sparsegrad_kernels::pattern::TransposeCell;
use std::sync::Arc;

/// Backward of `sparse_spmm`; parents `[values, x]`.
#[derive(Debug)]
struct Spmm;

/// Pattern, both operands (for each other's gradient), direction, the pattern's column count
/// and its transposed-view cache.
type SpmmState<B> = (IntTensor<B>, IntTensor<B>, FloatTensor<B>, FloatTensor<B>, bool, usize, Arc<TransposeCell>);

impl<B: SparseSpmm + SparseSddmm> Backward<B, 2> for Spmm {
    type State = SpmmState<B>;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let (crow, col, values, x, transpose, k, transposed) = ops.state;
        let [values_node, x_node] = ops.parents;
        let g = grads.consume::<B>(&ops.node);
        // SAFETY (every kernel call below): the state holds the pattern the forward product was
        // called with, valid over `k` columns (its caller's contract), its cell, and the operands
        // and the output gradient of that product, whose shapes are the ones the kernels take.
        if let (Some(vn), Some(xn)) = (&values_node, &x_node) {
            // Both wanted: one pass gathers each row of G once for both (see `spmm_backward`).
            let (nnz, xshape) = (values.shape().num_elements(), x.shape());
            let len = xshape.num_elements();
            // SAFETY: the forward's pattern, valid over `k` columns, and its cell (see above).
            let both = unsafe { B::csr_spmm_backward(crow, col, values, g, x, transpose, k, &transposed) };
            let dx = B::float_reshape(B::float_slice(both.clone(), &[Slice::new(0, Some(len as isize), 1)]), xshape);
            let dv = B::float_slice(both, &[Slice::new(len as isize, Some((len + nnz) as isize), 1)]);
            grads.register::<B>(vn.id, dv);
            grads.register::<B>(xn.id, dx);
            return;
        }
        if let Some(node) = values_node {
            // out = A X: dv_j = G[row j] · X[col j];  out = Aᵀ X: dv_j = X[row j] · G[col j].
            // SAFETY: the forward's pattern, valid over `k` columns (see above).
            let dv = unsafe {
                if transpose {
                    B::sparse_sddmm(crow.clone(), col.clone(), x, g.clone(), transposed.clone())
                } else {
                    B::sparse_sddmm(crow.clone(), col.clone(), g.clone(), x, transposed.clone())
                }
            };
            grads.register::<B>(node.id, dv);
        }
        if let Some(node) = x_node {
            // out = A X: dX = Aᵀ G;  out = Aᵀ X: dX = A G.
            // SAFETY: the forward's pattern, valid over `k` columns, and its cell (see above).
            let dx = unsafe { forward::<B>(crow, col, values, g, !transpose, false, k, &transposed) };
            grads.register::<B>(node.id, dx);
        }
    }
}

impl<B: SparseSpmm + SparseSddmm, C: CheckpointStrategy> SparseSpmm for Autodiff<B, C> {
    unsafe fn sparse_spmm(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        transpose: bool,
        stored_transposed: bool,
        k: usize,
        transposed: Arc<TransposeCell>,
    ) -> FloatTensor<Self> {
        let guards = [values.node(), x.node()];
        let (v, xp) = (values.into_primitive(), x.into_primitive());
        match Spmm.prepare::<C>(guards).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                // SAFETY: the caller's contract for this method is the inner backend's kernels'.
                let out = unsafe {
                    forward::<B>(
                        crow.clone(),
                        col.clone(),
                        v.clone(),
                        xp.clone(),
                        transpose,
                        stored_transposed,
                        k,
                        &transposed,
                    )
                };
                prep.finish((crow, col, v, xp, transpose, k, transposed), out)
            }
            OpsKind::UnTracked(prep) => {
                // SAFETY: as above.
                prep.finish(unsafe { forward::<B>(crow, col, v, xp, transpose, stored_transposed, k, &transposed) })
            }
        }
    }
}
