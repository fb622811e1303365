//! The `Autodiff` impl of [`SparseSpgemm`]: the tracked forwards (`sparse_spgemm`,
//! `sparse_spgemm_product`) run the inner backend's kernels and record the backward rule, which
//! sends the output gradient `G` on `C`'s pattern to `A`'s values as `(G · Bᵀ)` on `A`'s pattern
//! and to `B`'s values as `(Aᵀ · G)` on `B`'s pattern, by the inner backend's gradient kernels.

use super::SparseSpgemm;
use crate::operand::CsrOperand;
use burn::backend::autodiff::{
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
    Autodiff,
};
use burn::backend::tensor::{FloatTensor, IntTensor};
use sparsegrad_kernels::pattern::TransposeCell;
use std::sync::Arc;

/// Backward of `sparse_spgemm`; parents `[a_values, b_values]`.
#[derive(Debug)]
struct Spgemm;

/// The three patterns and both operands' values (each the other's gradient's factor).
type SpgemmState<B> = ([CsrOperand<B>; 3], FloatTensor<B>, FloatTensor<B>);

impl<B: SparseSpgemm> Backward<B, 2> for Spgemm {
    type State = SpgemmState<B>;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let ([a, b, c], av, bv) = ops.state;
        let [a_node, b_node] = ops.parents;
        let g = grads.consume::<B>(&ops.node);
        if let Some(node) = a_node {
            // The forward's patterns, `B`'s values, and `g` on `C`'s pattern.
            let da = B::csr_spgemm_grad_a(a.clone(), b.clone(), bv, c.clone(), g.clone());
            grads.register::<B>(node.id, da);
        }
        if let Some(node) = b_node {
            let db = B::csr_spgemm_grad_b(a, av, b, c, g);
            grads.register::<B>(node.id, db);
        }
    }
}

impl<B: SparseSpgemm, C: CheckpointStrategy> SparseSpgemm for Autodiff<B, C> {
    fn sparse_spgemm(
        a: CsrOperand<Self>,
        a_values: FloatTensor<Self>,
        b: CsrOperand<Self>,
        b_values: FloatTensor<Self>,
        c: CsrOperand<Self>,
    ) -> FloatTensor<Self> {
        let [a, b, c] = [a, b, c].map(CsrOperand::retag::<B>);
        let guards = [a_values.node(), b_values.node()];
        let (av, bv) = (a_values.into_primitive(), b_values.into_primitive());
        match Spgemm.prepare::<C>(guards).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let out = B::csr_spgemm(a.clone(), av.clone(), b.clone(), bv.clone(), c.clone());
                prep.finish(([a, b, c], av, bv), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::csr_spgemm(a, av, b, bv, c)),
        }
    }

    fn sparse_spgemm_product(
        a: CsrOperand<Self>,
        a_values: FloatTensor<Self>,
        b: CsrOperand<Self>,
        b_values: FloatTensor<Self>,
    ) -> (IntTensor<Self>, IntTensor<Self>, FloatTensor<Self>) {
        let [a, b] = [a, b].map(CsrOperand::retag::<B>);
        let guards = [a_values.node(), b_values.node()];
        let (av, bv) = (a_values.into_primitive(), b_values.into_primitive());
        match Spgemm.prepare::<C>(guards).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let n = b.ncols();
                let (c_crow, c_col, out) = B::csr_spgemm_product(a.clone(), av.clone(), b.clone(), bv.clone());
                // The backward reads `C`'s pattern as the forward of `sparse_spgemm` takes it (a
                // pattern of its own: nothing derived from it is kept yet).
                let c = CsrOperand::new(c_crow.clone(), c_col.clone(), n, Arc::new(TransposeCell::new()));
                (c_crow, c_col, prep.finish(([a, b, c], av, bv), out))
            }
            OpsKind::UnTracked(prep) => {
                let (c_crow, c_col, out) = B::csr_spgemm_product(a, av, b, bv);
                (c_crow, c_col, prep.finish(out))
            }
        }
    }
}
