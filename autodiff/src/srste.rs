//! The straight-through 2:4 product of SR-STE (Zhou et al. 2021, "Learning N:M fine-grained
//! structured sparse neural networks from scratch"): a dense master weight `W [rows, cols]`,
//! pruned to a 2:4 pattern for the forward pass, trained densely.
//!
//! One primitive, [`SrsteMatmul`]'s `srste_product`: the forward is `X · W̃ᵀ` through the 2:4
//! kernel, `W̃` the entries of `W` at the pattern's kept positions (zero elsewhere); the backward
//! rule gives the input `G · W̃` and the master weight the straight-through gradient on EVERY
//! element plus the sparse-refined decay on the pruned ones, `dW = Gᵀ · X + λ (W − W̃)`. Its
//! one trait, each backend's forward and its backward rule live in
//! `sparsegrad_backend::semi::srste` (re-exported here, so that the old path still resolves);
//! this file checks the operands of [`srste_linear`] and runs the primitive. The layer on top
//! is `sparsegrad_nn::SrsteLinear`.

use burn::backend::Dispatch;
use burn::tensor::{Float, Tensor};
pub use sparsegrad_backend::semi::SrsteMatmul;
use sparsegrad_backend::semi_structured::SemiStructuredTensor;
use sparsegrad_backend::util::reshape;
use sparsegrad_backend::{Result, SparseError};

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
