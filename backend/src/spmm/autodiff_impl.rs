//! The `Autodiff` impl of [`SparseSpmm`]: the tracked `sparse_spmm` runs the inner backend's
//! forward kernels and records the backward rule, which sends the output gradient `G` to the
//! values as the SDDMM of `G` and `X` over the pattern (masked) and to `X` as `Aᵀ · G` (or
//! `A · G`), by the inner backend's kernels: one fused pass
//! ([`csr_spmm_backward`](SparseSpmm::csr_spmm_backward)) when both are wanted. The rule keeps
//! the pattern's transposed-view cell.

use super::{forward, SparseSpmm};
use crate::operand::CsrOperand;
use crate::sddmm::SparseSddmm;
use burn::backend::autodiff::{
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
    Autodiff,
};
use burn::backend::{tensor::FloatTensor, TensorMetadata};
use burn::tensor::Slice;

/// Backward of `sparse_spmm`; parents `[values, x]`.
#[derive(Debug)]
struct Spmm;

/// The pattern (with its cell: the transposed view the backward reuses), both operands (for
/// each other's gradient) and the direction.
type SpmmState<B> = (CsrOperand<B>, FloatTensor<B>, FloatTensor<B>, bool);

impl<B: SparseSpmm + SparseSddmm> Backward<B, 2> for Spmm {
    type State = SpmmState<B>;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let (pattern, values, x, transpose) = ops.state;
        let [values_node, x_node] = ops.parents;
        let g = grads.consume::<B>(&ops.node);
        // The forward's pattern and operands; `g` is shaped as its output.
        if let (Some(vn), Some(xn)) = (&values_node, &x_node) {
            // Both wanted: one pass gathers each row of G once for both (see `spmm_backward`).
            let (nnz, xshape) = (values.shape().num_elements(), x.shape());
            let len = xshape.num_elements();
            let both = B::csr_spmm_backward(pattern, values, g, x, transpose);
            let dx = B::float_reshape(B::float_slice(both.clone(), &[Slice::new(0, Some(len as isize), 1)]), xshape);
            let dv = B::float_slice(both, &[Slice::new(len as isize, Some((len + nnz) as isize), 1)]);
            grads.register::<B>(vn.id, dv);
            grads.register::<B>(xn.id, dx);
            return;
        }
        if let Some(node) = values_node {
            // out = A X: dv_j = G[row j] · X[col j];  out = Aᵀ X: dv_j = X[row j] · G[col j].
            let dv = if transpose {
                B::sparse_sddmm(pattern.clone(), x, g.clone())
            } else {
                B::sparse_sddmm(pattern.clone(), g.clone(), x)
            };
            grads.register::<B>(node.id, dv);
        }
        if let Some(node) = x_node {
            // out = A X: dX = Aᵀ G;  out = Aᵀ X: dX = A G.
            let dx = forward::<B>(pattern, values, g, !transpose, false);
            grads.register::<B>(node.id, dx);
        }
    }
}

impl<B: SparseSpmm + SparseSddmm, C: CheckpointStrategy> SparseSpmm for Autodiff<B, C> {
    fn sparse_spmm(
        pattern: CsrOperand<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        transpose: bool,
        stored_transposed: bool,
    ) -> FloatTensor<Self> {
        let pattern = pattern.retag::<B>();
        let guards = [values.node(), x.node()];
        let (v, xp) = (values.into_primitive(), x.into_primitive());
        match Spmm.prepare::<C>(guards).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                // The inner kernels check the shapes the backward relies on.
                let out = forward::<B>(pattern.clone(), v.clone(), xp.clone(), transpose, stored_transposed);
                prep.finish((pattern, v, xp, transpose), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(forward::<B>(pattern, v, xp, transpose, stored_transposed)),
        }
    }
}
