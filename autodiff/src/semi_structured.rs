//! Differentiable products with semi-structured (2:4) matrices: torch's supported ops on
//! `SparseSemiStructuredTensor` (`mm(sparse, dense)`, `mm(dense, sparse)`,
//! `addmm(bias, dense, sparse.t())`, `linear(input, weight, bias)`), re-exported from
//! `sparsegrad::sparse::semi_structured`.
//!
//! One primitive, [`SemiMatmul`]'s `semi_product`, covers the four arrangements of `A` (as
//! stored, or `Aᵀ`) and of the dense operand (as is, or the whole product transposed — a linear
//! layer's `X · Aᵀ` runs as one kernel call on `X` as laid out). Its one trait, each backend's
//! kernels and its backward rule live in `sparsegrad_backend::semi` (re-exported here, so that
//! the old path still resolves): the gradient of the kept values is the SDDMM of the output
//! gradient and the dense operand over the pattern (so a 2:4 weight stays 2:4 while training),
//! the gradient of the dense operand is the product with the other arrangement of `A`. Nothing
//! of `A`'s dense size is ever built. This file checks the operands and runs the primitive.

use burn::backend::Dispatch;
use burn::tensor::{Float, Tensor};
use sparsegrad_backend::error::invalid;
pub use sparsegrad_backend::semi::SemiMatmul;
use sparsegrad_backend::semi_structured::SemiStructuredTensor;
use sparsegrad_backend::util::reshape;
use sparsegrad_backend::Result;

// ------------------------------------------------------------------------------------------
// torch's ops.

/// `a`'s stored matrix times `x` in one of the four arrangements, after the shape and dtype
/// checks `operation` names.
fn product(
    operation: &'static str,
    a: &SemiStructuredTensor<Float>,
    x: Tensor<2>,
    transpose_a: bool,
    transposed: bool,
) -> Result<Tensor<2>> {
    let [rows, cols] = a.stored_shape();
    let inner = if transpose_a { rows } else { cols };
    let x_inner = x.dims()[usize::from(transposed)];
    if x_inner != inner {
        let (sa, sx) = (a.shape(), x.dims());
        let (l, r) = if transposed { (sx, sa) } else { (sa, sx) };
        return Err(invalid(operation, format!("shapes {l:?} and {r:?} cannot be multiplied")));
    }
    if x.dtype() != a.dtype() {
        return Err(invalid(
            operation,
            format!("dtypes differ: the semi-structured operand is {:?}, the dense one {:?}", a.dtype(), x.dtype()),
        ));
    }
    Ok(Tensor::from_dispatch(<Dispatch as SemiMatmul>::semi_product(
        a.values().into_dispatch(),
        a.metadata().into_dispatch(),
        cols,
        x.into_dispatch(),
        transpose_a,
        transposed,
    )))
}

/// `torch.mm(sparse, dense)`: `a [r, c] · x [c, n]`.
pub fn try_mm(a: &SemiStructuredTensor<Float>, x: Tensor<2>) -> Result<Tensor<2>> {
    product("mm", a, x, a.is_transposed(), false)
}

/// [`try_mm`], panicking with both shapes on a mismatch (as burn's `matmul`).
pub fn mm(a: &SemiStructuredTensor<Float>, x: Tensor<2>) -> Tensor<2> {
    try_mm(a, x).unwrap_or_else(|e| panic!("{e}"))
}

/// `torch.mm(dense, sparse)`: `x [m, r] · a [r, c]`.
pub fn try_mm_dense_sparse(x: Tensor<2>, a: &SemiStructuredTensor<Float>) -> Result<Tensor<2>> {
    // x · a = x · Aᵀ when a is the transpose of its stored matrix A, else x · A.
    product("mm", a, x, !a.is_transposed(), true)
}

/// [`try_mm_dense_sparse`], panicking on a shape mismatch.
pub fn mm_dense_sparse(x: Tensor<2>, a: &SemiStructuredTensor<Float>) -> Tensor<2> {
    try_mm_dense_sparse(x, a).unwrap_or_else(|e| panic!("{e}"))
}

/// `torch.addmm(input, mat1, mat2, beta, alpha)` with a semi-structured `mat2`:
/// `beta * input + alpha * (mat1 · mat2)`; `input` broadcasts (`[1, n]` for a bias row). The
/// reference's use is `addmm(bias, dense, sparse.t())`.
pub fn try_addmm(
    input: Tensor<2>,
    mat1: Tensor<2>,
    mat2: &SemiStructuredTensor<Float>,
    beta: f64,
    alpha: f64,
) -> Result<Tensor<2>> {
    let prod = try_mm_dense_sparse(mat1, mat2)?;
    let [m, n] = prod.dims();
    let [im, in_] = input.dims();
    if !((im == m || im == 1) && (in_ == n || in_ == 1)) {
        return Err(invalid(
            "addmm",
            format!("input of shape [{im}, {in_}] does not broadcast to the product's [{m}, {n}]"),
        ));
    }
    if m * n == 0 {
        // Nothing to scale or add (and burn's Cube backend takes no element-wise op on an
        // empty rank-2 tensor).
        return Ok(prod);
    }
    let scaled = if alpha == 1.0 { prod } else { prod.mul_scalar(alpha) };
    if beta == 0.0 {
        // torch: the input's values ignored, its gradient zeros of its shape.
        return Ok(crate::matmul::ignoring_input(scaled, input));
    }
    let input = if beta == 1.0 { input } else { input.mul_scalar(beta) };
    Ok(scaled + input)
}

/// [`try_addmm`], panicking on a shape mismatch.
pub fn addmm(
    input: Tensor<2>,
    mat1: Tensor<2>,
    mat2: &SemiStructuredTensor<Float>,
    beta: f64,
    alpha: f64,
) -> Tensor<2> {
    try_addmm(input, mat1, mat2, beta, alpha).unwrap_or_else(|e| panic!("{e}"))
}

/// `torch.nn.functional.linear(input, weight, bias)`: `input [..., in] · weightᵀ + bias`,
/// `weight [out, in]` semi-structured (2:4 along `in` when stored untransposed: the kernel's
/// fast arrangement), `bias [out]`.
pub fn try_linear<const D: usize>(
    input: Tensor<D>,
    weight: &SemiStructuredTensor<Float>,
    bias: Option<Tensor<1>>,
) -> Result<Tensor<D>> {
    let dims = input.dims();
    let [out_features, in_features] = weight.shape();
    if dims[D - 1] != in_features {
        return Err(invalid("linear", format!("input of shape {dims:?} does not end with the weight's {in_features} input features (weight [{out_features}, {in_features}])")));
    }
    if let Some(b) = &bias {
        if b.dims() != [out_features] {
            return Err(invalid("linear", format!("bias of shape {:?} for {out_features} output features", b.dims())));
        }
    }
    let m: usize = dims[..D - 1].iter().product();
    let x: Tensor<2> = reshape(input, [m, in_features]);
    // x · weightᵀ = x · A for a stored A = weightᵀ, else x · Aᵀ.
    let y = product("linear", weight, x, weight.is_transposed(), true)?;
    let y = match bias {
        // burn's broadcasting trips over zero-size dims; an empty product needs no bias.
        Some(b) if m * out_features > 0 => y + b.unsqueeze::<2>(),
        _ => y,
    };
    let mut out = dims;
    out[D - 1] = out_features;
    Ok(reshape(y, out))
}

/// [`try_linear`], panicking on a shape mismatch.
pub fn linear<const D: usize>(
    input: Tensor<D>,
    weight: &SemiStructuredTensor<Float>,
    bias: Option<Tensor<1>>,
) -> Tensor<D> {
    try_linear(input, weight, bias).unwrap_or_else(|e| panic!("{e}"))
}
