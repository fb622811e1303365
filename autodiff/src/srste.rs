//! The straight-through 2:4 product of SR-STE (Zhou et al. 2021, "Learning N:M fine-grained
//! structured sparse neural networks from scratch"): a dense master weight `W [rows, cols]`,
//! pruned to a 2:4 pattern for the forward pass, trained densely.
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
//! The layer on top is `sparsegrad_nn::SrsteLinear`.

use burn::backend::autodiff::{
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
    Autodiff,
};
use burn::backend::{
    backend_extension,
    tensor::{FloatTensor, IntTensor},
    Backend, Dispatch, Flex, TensorMetadata,
};
use burn::tensor::{Float, IndexingUpdateOp, Tensor};
use sparsegrad_backend::semi_spmm::SemiKernels;
use sparsegrad_backend::semi_structured::SemiStructuredTensor;
use sparsegrad_backend::util::reshape;
use sparsegrad_backend::{Result, SparseError};

/// The differentiable straight-through 2:4 product.
#[backend_extension(Flex, Cube: cfg(feature = "cube"), Autodiff)]
#[diagnostic::on_unimplemented(
    message = "sparsegrad has no kernels for the backend `{Self}` (`SrsteMatmul` is not implemented)",
    label = "no sparsegrad kernels for this backend",
    note = "a `Fusion<CubeBackend>` here means that burn's feature `fusion` is on (burn's default features turn it on) and sparsegrad's is off: turn on sparsegrad's `fusion` with `wgpu`, `sparsegrad = {{ version = \"0.1\", features = [\"wgpu\", \"fusion\"] }}` (see `sparsegrad::guide::gpu`)"
)]
pub trait SrsteMatmul: Backend {
    /// `x · W̃ᵀ` for `x [n, cols]`, `W̃` the entries of `weight [rows, cols]` at the kept
    /// columns `kept [rows, cols / 2]` that the 2:4 `metadata` describes. Gradients: `x` gets
    /// `G · W̃`, `weight` gets `Gᵀ · x + decay · (weight − W̃)`.
    fn srste_product(
        weight: FloatTensor<Self>,
        metadata: IntTensor<Self>,
        kept: IntTensor<Self>,
        x: FloatTensor<Self>,
        decay: f64,
    ) -> FloatTensor<Self>;
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

/// The product with the kept values `values`.
fn forward<B: SemiKernels>(
    values: FloatTensor<B>,
    metadata: IntTensor<B>,
    cols: usize,
    x: FloatTensor<B>,
) -> FloatTensor<B> {
    B::semi_mm(values, metadata, cols, x, true)
}

/// The untracked backends run the forward kernels.
macro_rules! untracked {
    ($backend:ty) => {
        impl SrsteMatmul for $backend {
            fn srste_product(
                weight: FloatTensor<Self>,
                metadata: IntTensor<Self>,
                kept: IntTensor<Self>,
                x: FloatTensor<Self>,
                _decay: f64,
            ) -> FloatTensor<Self> {
                let cols = weight.shape()[1];
                forward::<Self>(kept_values::<Self>(weight, kept), metadata, cols, x)
            }
        }
    };
}
untracked!(Flex);
#[cfg(feature = "cube")]
untracked!(sparsegrad_backend::cube::CubeBackend);
#[cfg(all(feature = "cube", feature = "fusion"))]
untracked!(sparsegrad_backend::cube::FusedCube);

/// Backward of `srste_product`; parents `[weight, x]`.
#[derive(Debug)]
struct SrsteProduct;

/// The master weight, the kept values, metadata, kept columns, the input and the decay.
type SrsteState<B> = (FloatTensor<B>, FloatTensor<B>, IntTensor<B>, IntTensor<B>, FloatTensor<B>, f64);

impl<B: SemiKernels> Backward<B, 2> for SrsteProduct {
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

impl<B: SemiKernels, C: CheckpointStrategy> SrsteMatmul for Autodiff<B, C> {
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
                let out = forward::<B>(values.clone(), metadata.clone(), cols, xp.clone());
                prep.finish((w, values, metadata, kept, xp, decay), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(forward::<B>(values, metadata, cols, xp)),
        }
    }
}

fn invalid(message: String) -> SparseError {
    sparsegrad_backend::error::invalid("srste_linear", message)
}

/// SR-STE's linear map: `input [..., in] · W̃ᵀ + bias`, where `W̃` is the dense master
/// `weight [out, in]` pruned to the kept positions of `pattern` (a 2:4 tensor of the same shape,
/// stored untransposed; its values are not read, the kept values are `weight`'s), run by the
/// 2:4 kernel.
///
/// Gradients: `input` gets `G · W̃` (as the plain 2:4 `linear`), `bias` the sum of `G`, and
/// `weight` the straight-through gradient on every element plus the sparse-refined decay on the
/// pruned ones, `Gᵀ · X + decay · (1 − mask) ⊙ weight` (see the module docs; with `decay = 0` the
/// plain straight-through estimator).
///
/// Errors when the shapes disagree, the pattern is transposed, the dtypes differ or `decay` is
/// not finite.
pub fn try_srste_linear<const D: usize>(
    input: Tensor<D>,
    weight: Tensor<2>,
    pattern: &SemiStructuredTensor<Float>,
    decay: f64,
    bias: Option<Tensor<1>>,
) -> Result<Tensor<D>> {
    let [out_features, in_features] = weight.dims();
    if pattern.is_transposed() || pattern.shape() != [out_features, in_features] {
        return Err(invalid(format!(
            "the pattern ({:?}{}) is not the weight's [{out_features}, {in_features}] stored untransposed",
            pattern.shape(),
            if pattern.is_transposed() { ", transposed" } else { "" }
        )));
    }
    let dims = input.dims();
    if dims[D - 1] != in_features {
        return Err(invalid(format!(
            "input of shape {dims:?} does not end with the weight's {in_features} input features (weight [{out_features}, {in_features}])"
        )));
    }
    if input.dtype() != weight.dtype() {
        return Err(invalid(format!(
            "dtypes differ: the weight is {:?}, the input {:?}",
            weight.dtype(),
            input.dtype()
        )));
    }
    if !decay.is_finite() {
        return Err(invalid(format!("decay {decay} is not finite")));
    }
    if let Some(b) = &bias {
        if b.dims() != [out_features] {
            return Err(invalid(format!("bias of shape {:?} for {out_features} output features", b.dims())));
        }
    }
    let m: usize = dims[..D - 1].iter().product();
    let x: Tensor<2> = reshape(input, [m, in_features]);
    let y = Tensor::<2>::from_dispatch(<Dispatch as SrsteMatmul>::srste_product(
        weight.into_dispatch(),
        pattern.metadata().into_dispatch(),
        pattern.kept_columns().into_dispatch(),
        x.into_dispatch(),
        decay,
    ));
    let y = match bias {
        // burn's broadcasting trips over zero-size dims; an empty product needs no bias.
        Some(b) if m * out_features > 0 => y + b.unsqueeze::<2>(),
        _ => y,
    };
    let mut out = dims;
    out[D - 1] = out_features;
    Ok(reshape(y, out))
}

/// [`try_srste_linear`], panicking on a shape mismatch.
pub fn srste_linear<const D: usize>(
    input: Tensor<D>,
    weight: Tensor<2>,
    pattern: &SemiStructuredTensor<Float>,
    decay: f64,
    bias: Option<Tensor<1>>,
) -> Tensor<D> {
    try_srste_linear(input, weight, pattern, decay, bias).unwrap_or_else(|e| panic!("{e}"))
}
