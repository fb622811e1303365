//! The straight-through 2:4 product of SR-STE (Zhou et al. 2021, "Learning N:M fine-grained
//! structured sparse neural networks from scratch"): a dense master weight `W [rows, cols]`,
//! pruned to a 2:4 pattern for the forward pass, trained densely. One burn extension trait,
//! [`SrsteMatmul`], holds the forward (every backend's, the trait's default on the 2:4 kernels of
//! [`SemiMatmul`]) and, beside it, the backward rule.
//!
//! One primitive, `srste_product`: the forward is `X · W̃ᵀ` through the 2:4 kernel, `W̃` the
//! entries of `W` at the pattern's kept positions (zero elsewhere); the backward rule gives
//!
//! - the input `G · W̃` (the 2:4 kernel, as the plain product's rule), and
//! - the master weight the straight-through gradient on EVERY element plus the sparse-refined
//!   decay on the pruned ones: `dW = Gᵀ · X + λ (W − W̃)`, where `W − W̃ = (1 − mask) ⊙ W`.
//!
//! `Gᵀ · X` is a dense `[rows, cols]` matmul: the method needs the gradient of the pruned
//! positions too (that is what lets a pruned weight come back), so it cannot stay sparse. The
//! decay term is not the derivative of anything in the graph; the rule adds it, so an optimizer
//! step on the master weight is the paper's update `W ← W − γ (g(W̃) + λ (1 − mask) ⊙ W)`.
//! `sparsegrad_autodiff::srste::srste_linear` is the torch-style function on top, and
//! `sparsegrad_nn::SrsteLinear` the layer.

use super::SemiMatmul;
use burn::backend::{
    backend_extension,
    tensor::{FloatTensor, IntTensor},
    Backend, Flex, TensorMetadata,
};

/// The straight-through 2:4 product, differentiable on `Autodiff`.
#[backend_extension(Flex, Cube: cfg(feature = "cube"), Autodiff)]
#[diagnostic::on_unimplemented(
    message = "sparsegrad has no kernels for the backend `{Self}` (`SrsteMatmul` is not implemented)",
    label = "no sparsegrad kernels for this backend",
    note = "a `Fusion<CubeBackend>` here means that burn's feature `fusion` is on (burn's default features turn it on) and sparsegrad's is off: turn on sparsegrad's `fusion` with `wgpu`, `sparsegrad = {{ version = \"0.1\", features = [\"wgpu\", \"fusion\"] }}` (see `sparsegrad::guide::gpu`)"
)]
pub trait SrsteMatmul: SemiMatmul {
    /// `x · W̃ᵀ` for `x [n, cols]`, `W̃` the entries of `weight [rows, cols]` at the kept
    /// columns `kept [rows, cols / 2]` that the 2:4 `metadata` describes. Gradients: `x` gets
    /// `G · W̃`, `weight` gets `Gᵀ · x + decay · (weight − W̃)` (`Autodiff` records the rule;
    /// the untracked backends run [`SemiMatmul::semi_mm`] on the kept values and ignore
    /// `decay`).
    fn srste_product(
        weight: FloatTensor<Self>,
        metadata: IntTensor<Self>,
        kept: IntTensor<Self>,
        x: FloatTensor<Self>,
        decay: f64,
    ) -> FloatTensor<Self> {
        let _ = decay;
        let cols = weight.shape()[1];
        Self::semi_mm(kept_values::<Self>(weight, kept), metadata, cols, x, true)
    }
}

/// The kept values `[rows, cols / 2]` of `weight` (gathered along its rows).
fn kept_values<B: Backend>(weight: FloatTensor<B>, kept: IntTensor<B>) -> FloatTensor<B> {
    let shape = kept.shape();
    if shape.num_elements() == 0 {
        let device = weight.device();
        return B::float_zeros(shape, &device, weight.dtype().into());
    }
    B::float_gather(1, weight, kept)
}

impl SrsteMatmul for Flex {}

/// Cube devices: the 2:4 kernels of `cube::semi`.
#[cfg(feature = "cube")]
impl SrsteMatmul for crate::cube::CubeBackend {}

/// Cube devices under burn's `fusion`: the 2:4 kernels on the resolved tensors.
#[cfg(all(feature = "cube", feature = "fusion"))]
impl SrsteMatmul for crate::cube::FusedCube {}

/// The backward rule and the tracked forward.
mod autodiff_impl {
    use super::*;
    use burn::backend::autodiff::{
        checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
        grads::Gradients,
        ops::{Backward, Ops, OpsKind},
        Autodiff,
    };
    use burn::tensor::IndexingUpdateOp;

    /// Backward of `srste_product`; parents `[weight, x]`.
    #[derive(Debug)]
    struct SrsteProduct;

    /// The master weight, the kept values, metadata, kept columns, the input and the decay.
    type SrsteState<B> = (FloatTensor<B>, FloatTensor<B>, IntTensor<B>, IntTensor<B>, FloatTensor<B>, f64);

    impl<B: SrsteMatmul> Backward<B, 2> for SrsteProduct {
        type State = SrsteState<B>;

        fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
            let (weight, values, metadata, kept, x, decay) = ops.state;
            let [weight_node, x_node] = ops.parents;
            let g = grads.consume::<B>(&ops.node);
            let cols = weight.shape()[1];
            if let Some(node) = x_node {
                // d(x · W̃ᵀ)/dx = G · W̃: the 2:4 kernel in the transposed arrangement.
                grads.register::<B>(node.id, B::semi_mm_t(values.clone(), metadata, cols, g.clone(), true));
            }
            if let Some(node) = weight_node {
                // Straight through: the dense gradient of W̃, on every element of W.
                let ste = B::float_matmul(B::float_transpose(g), x);
                let dw = if decay == 0.0 {
                    ste
                } else {
                    // W − W̃: the kept values subtracted at their own positions (exactly zero
                    // there), the pruned ones left as they are.
                    let pruned = if kept.shape().num_elements() == 0 {
                        weight
                    } else {
                        B::float_scatter(1, weight, kept, B::float_neg(values), IndexingUpdateOp::Add)
                    };
                    B::float_add(ste, B::float_mul_scalar(pruned, decay.into()))
                };
                grads.register::<B>(node.id, dw);
            }
        }
    }

    impl<B: SrsteMatmul, C: CheckpointStrategy> SrsteMatmul for Autodiff<B, C> {
        fn srste_product(
            weight: FloatTensor<Self>,
            metadata: IntTensor<Self>,
            kept: IntTensor<Self>,
            x: FloatTensor<Self>,
            decay: f64,
        ) -> FloatTensor<Self> {
            let guards = [weight.node(), x.node()];
            let (w, xp) = (weight.into_primitive(), x.into_primitive());
            let cols = w.shape()[1];
            let values = kept_values::<B>(w.clone(), kept.clone());
            match SrsteProduct.prepare::<C>(guards).compute_bound().stateful() {
                OpsKind::Tracked(prep) => {
                    let out = B::semi_mm(values.clone(), metadata.clone(), cols, xp.clone(), true);
                    prep.finish((w, values, metadata, kept, xp, decay), out)
                }
                OpsKind::UnTracked(prep) => prep.finish(B::semi_mm(values, metadata, cols, xp, true)),
            }
        }
    }
}
