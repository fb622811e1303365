//! Differentiable products with semi-structured (2:4) matrices: torch's supported ops on
//! `SparseSemiStructuredTensor` (`mm(sparse, dense)`, `mm(dense, sparse)`,
//! `addmm(bias, dense, sparse.t())`, `linear(input, weight, bias)`), re-exported from
//! `sparsegrad::sparse::semi_structured`.
//!
//! One primitive, `semi_product`, covers the four arrangements of `A` (as stored, or `Aᵀ`) and
//! of the dense operand (as is, or the whole product transposed — a linear layer's `X · Aᵀ`
//! runs as one kernel call on `X` as laid out). Its backward rule: the gradient of the kept
//! values is the SDDMM of the output gradient and the dense operand over the pattern (so a
//! 2:4 weight stays 2:4 while training), the gradient of the dense operand is the product with
//! the other arrangement of `A`. Nothing of `A`'s dense size is ever built.

use burn::backend::autodiff::{
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
    Autodiff,
};
use burn::backend::{
    backend_extension,
    tensor::{FloatTensor, IntTensor},
    Backend, Dispatch, Flex,
};
use burn::tensor::{Float, Tensor};
use sparsegrad_backend::error::invalid;
use sparsegrad_backend::semi_spmm::SemiKernels;
use sparsegrad_backend::semi_structured::SemiStructuredTensor;
use sparsegrad_backend::util::reshape;
use sparsegrad_backend::Result;

/// The differentiable semi-structured product.
#[backend_extension(Flex, Cube: cfg(feature = "cube"), Autodiff)]
#[diagnostic::on_unimplemented(
    message = "sparsegrad has no kernels for the backend `{Self}` (`SemiMatmul` is not implemented)",
    label = "no sparsegrad kernels for this backend",
    note = "a `Fusion<CubeBackend>` here means that burn's feature `fusion` is on (burn's default features turn it on) and sparsegrad's is off: turn on sparsegrad's `fusion` with `wgpu`, `sparsegrad = {{ version = \"0.1\", features = [\"wgpu\", \"fusion\"] }}` (see `sparsegrad::guide::gpu`)"
)]
pub trait SemiMatmul: Backend {
    /// `A [rows, cols]` given by kept `values [rows, cols / 2]` and `metadata`, times `x`:
    /// `A · x` (`x [cols, n]`), with `transpose_a` `Aᵀ · x` (`x [rows, n]`); with `transposed`
    /// the transposed product from the transposed operand: `x · Aᵀ` (`x [n, cols]`) or `x · A`
    /// (`x [n, rows]`).
    fn semi_product(
        values: FloatTensor<Self>,
        metadata: IntTensor<Self>,
        cols: usize,
        x: FloatTensor<Self>,
        transpose_a: bool,
        transposed: bool,
    ) -> FloatTensor<Self>;
}

fn forward<B: SemiKernels>(
    values: FloatTensor<B>,
    metadata: IntTensor<B>,
    cols: usize,
    x: FloatTensor<B>,
    transpose_a: bool,
    transposed: bool,
) -> FloatTensor<B> {
    if transpose_a {
        B::semi_mm_t(values, metadata, cols, x, transposed)
    } else {
        B::semi_mm(values, metadata, cols, x, transposed)
    }
}

/// The untracked backends run the forward kernels.
macro_rules! untracked {
    ($backend:ty) => {
        impl SemiMatmul for $backend {
            fn semi_product(
                values: FloatTensor<Self>,
                metadata: IntTensor<Self>,
                cols: usize,
                x: FloatTensor<Self>,
                transpose_a: bool,
                transposed: bool,
            ) -> FloatTensor<Self> {
                forward::<Self>(values, metadata, cols, x, transpose_a, transposed)
            }
        }
    };
}
untracked!(Flex);
#[cfg(feature = "cube")]
untracked!(sparsegrad_backend::cube::CubeBackend);
#[cfg(all(feature = "cube", feature = "fusion"))]
untracked!(sparsegrad_backend::cube::FusedCube);

/// Backward of `semi_product`; parents `[values, x]`.
#[derive(Debug)]
struct SemiProduct;

/// Values, metadata, the dense operand, the column count and the arrangement.
type SemiState<B> = (FloatTensor<B>, IntTensor<B>, FloatTensor<B>, usize, bool, bool);

impl<B: SemiKernels> Backward<B, 2> for SemiProduct {
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
            grads.register::<B>(node.id, forward::<B>(values, metadata, cols, g, !transpose_a, transposed));
        }
    }
}

impl<B: SemiKernels, C: CheckpointStrategy> SemiMatmul for Autodiff<B, C> {
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
                let out = forward::<B>(v.clone(), metadata.clone(), cols, xp.clone(), transpose_a, transposed);
                prep.finish((v, metadata, xp, cols, transpose_a, transposed), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(forward::<B>(v, metadata, cols, xp, transpose_a, transposed)),
        }
    }
}

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
