//! The `Autodiff` impl of [`SparseSpgemm`]: the tracked forwards (`sparse_spgemm`,
//! `sparse_spgemm_product`) run the inner backend's kernels and record the backward rule, which
//! sends the output gradient `G` on `C`'s pattern to `A`'s values as `(G · Bᵀ)` on `A`'s pattern
//! and to `B`'s values as `(Aᵀ · G)` on `B`'s pattern, by the inner backend's gradient kernels.

use super::SparseSpgemm;
use burn::backend::autodiff::{
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
    Autodiff,
};
use burn::backend::tensor::{FloatTensor, IntTensor};

/// Backward of `sparse_spgemm`; parents `[a_values, b_values]`.
#[derive(Debug)]
struct Spgemm;

/// The three patterns, both operands' values (each the other's gradient's factor) and `n`.
type SpgemmState<B> = ([IntTensor<B>; 6], FloatTensor<B>, FloatTensor<B>, usize);

impl<B: SparseSpgemm> Backward<B, 2> for Spgemm {
    type State = SpgemmState<B>;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let ([a_crow, a_col, b_crow, b_col, c_crow, c_col], av, bv, n) = ops.state;
        let [a_node, b_node] = ops.parents;
        let g = grads.consume::<B>(&ops.node);
        if let Some(node) = a_node {
            // SAFETY: the state holds the patterns the forward product was called with (valid:
            // its caller's contract), `B`'s values, and `g` on `C`'s pattern.
            let da = unsafe {
                B::csr_spgemm_grad_a(
                    a_crow.clone(),
                    a_col.clone(),
                    b_crow.clone(),
                    b_col.clone(),
                    bv,
                    c_crow.clone(),
                    c_col.clone(),
                    g.clone(),
                    n,
                )
            };
            grads.register::<B>(node.id, da);
        }
        if let Some(node) = b_node {
            // SAFETY: as above, with `A`'s values.
            let db = unsafe { B::csr_spgemm_grad_b(a_crow, a_col, av, b_crow, b_col, c_crow, c_col, g, n) };
            grads.register::<B>(node.id, db);
        }
    }
}

impl<B: SparseSpgemm, C: CheckpointStrategy> SparseSpgemm for Autodiff<B, C> {
    unsafe fn sparse_spgemm(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        a_values: FloatTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        b_values: FloatTensor<Self>,
        c_crow: IntTensor<Self>,
        c_col: IntTensor<Self>,
        n: usize,
    ) -> FloatTensor<Self> {
        let guards = [a_values.node(), b_values.node()];
        let (av, bv) = (a_values.into_primitive(), b_values.into_primitive());
        match Spgemm.prepare::<C>(guards).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                // SAFETY: the caller's contract for this method is the inner backend's kernel's.
                let out = unsafe {
                    B::csr_spgemm(
                        a_crow.clone(),
                        a_col.clone(),
                        av.clone(),
                        b_crow.clone(),
                        b_col.clone(),
                        bv.clone(),
                        c_crow.clone(),
                        c_col.clone(),
                        n,
                    )
                };
                prep.finish(([a_crow, a_col, b_crow, b_col, c_crow, c_col], av, bv, n), out)
            }
            OpsKind::UnTracked(prep) => {
                // SAFETY: as above.
                prep.finish(unsafe { B::csr_spgemm(a_crow, a_col, av, b_crow, b_col, bv, c_crow, c_col, n) })
            }
        }
    }

    unsafe fn sparse_spgemm_product(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        a_values: FloatTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        b_values: FloatTensor<Self>,
        n: usize,
    ) -> (IntTensor<Self>, IntTensor<Self>, FloatTensor<Self>) {
        let guards = [a_values.node(), b_values.node()];
        let (av, bv) = (a_values.into_primitive(), b_values.into_primitive());
        match Spgemm.prepare::<C>(guards).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                // SAFETY: the caller's contract for this method is the inner backend's kernel's.
                let (c_crow, c_col, out) = unsafe {
                    B::csr_spgemm_product(
                        a_crow.clone(),
                        a_col.clone(),
                        av.clone(),
                        b_crow.clone(),
                        b_col.clone(),
                        bv.clone(),
                        n,
                    )
                };
                // The backward reads `C`'s pattern as the forward of `sparse_spgemm` takes it.
                let state = ([a_crow, a_col, b_crow, b_col, c_crow.clone(), c_col.clone()], av, bv, n);
                (c_crow, c_col, prep.finish(state, out))
            }
            OpsKind::UnTracked(prep) => {
                // SAFETY: as above.
                let (c_crow, c_col, out) = unsafe { B::csr_spgemm_product(a_crow, a_col, av, b_crow, b_col, bv, n) };
                (c_crow, c_col, prep.finish(out))
            }
        }
    }
}
