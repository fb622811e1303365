//! The `Autodiff` impl of [`SemiMatmul`]: the tracked `semi_product` runs the inner backend's
//! kernels and records the backward rule, which sends the output gradient to the kept values as
//! the SDDMM of the gradient and the dense operand over the pattern, and to the dense operand as
//! the product with the other arrangement of `A`; the kernels run untracked on the inner
//! backend.

use super::SemiMatmul;
use burn::backend::autodiff::{
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
    Autodiff,
};
use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::AutodiffBackend;

/// Backward of `semi_product`; parents `[values, x]`.
#[derive(Debug)]
struct SemiProduct;

/// Values, metadata, the dense operand, the column count and the arrangement.
type SemiState<B> = (FloatTensor<B>, IntTensor<B>, FloatTensor<B>, usize, bool, bool);

impl<B: SemiMatmul> Backward<B, 2> for SemiProduct {
    type State = SemiState<B>;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let (values, metadata, x, cols, transpose_a, transposed) = ops.state;
        let [values_node, x_node] = ops.parents;
        let g = grads.consume::<B>(&ops.node);
        if let Some(node) = values_node {
            // dv[r, j] = Σ_t P[r, t] Q[col(r, j), t] with P indexed by A's rows, Q by its
            // columns: (G, x) for A · x, (x, G) for Aᵀ · x; transposed products hand both over
            // transposed.
            let (p, q) = if transpose_a { (x, g.clone()) } else { (g.clone(), x) };
            let (p, q) = if transposed { (B::float_transpose(p), B::float_transpose(q)) } else { (p, q) };
            grads.register::<B>(node.id, B::semi_sddmm(metadata.clone(), cols, p, q));
        }
        if let Some(node) = x_node {
            // d(A · x) = Aᵀ · G, d(Aᵀ · x) = A · G, in the same orientation.
            grads.register::<B>(node.id, B::semi_product(values, metadata, cols, g, !transpose_a, transposed));
        }
    }
}

impl<B: SemiMatmul, C: CheckpointStrategy> SemiMatmul for Autodiff<B, C> {
    fn semi_product(
        values: FloatTensor<Self>,
        metadata: IntTensor<Self>,
        cols: usize,
        x: FloatTensor<Self>,
        transpose_a: bool,
        transposed: bool,
    ) -> FloatTensor<Self> {
        let guards = [values.node(), x.node()];
        let (v, xp) = (values.into_primitive(), x.into_primitive());
        match SemiProduct.prepare::<C>(guards).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let out = B::semi_product(v.clone(), metadata.clone(), cols, xp.clone(), transpose_a, transposed);
                prep.finish((v, metadata, xp, cols, transpose_a, transposed), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::semi_product(v, metadata, cols, xp, transpose_a, transposed)),
        }
    }

    fn semi_mm(
        values: FloatTensor<Self>,
        metadata: IntTensor<Self>,
        cols: usize,
        b: FloatTensor<Self>,
        transposed: bool,
    ) -> FloatTensor<Self> {
        Self::from_inner(B::semi_mm(values.into_primitive(), metadata, cols, b.into_primitive(), transposed))
    }

    fn semi_mm_t(
        values: FloatTensor<Self>,
        metadata: IntTensor<Self>,
        cols: usize,
        g: FloatTensor<Self>,
        transposed: bool,
    ) -> FloatTensor<Self> {
        Self::from_inner(B::semi_mm_t(values.into_primitive(), metadata, cols, g.into_primitive(), transposed))
    }

    fn semi_sddmm(
        metadata: IntTensor<Self>,
        cols: usize,
        g: FloatTensor<Self>,
        b: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        Self::from_inner(B::semi_sddmm(metadata, cols, g.into_primitive(), b.into_primitive()))
    }
}
