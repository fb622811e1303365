//! SpMM, the product primitive of the matmul family: `A · X` (or `Aᵀ · X`) for `A` a CSR
//! pattern with values. One burn extension trait, [`SparseSpmm`], holds the forward impl of each
//! backend and, beside them, the backward rule (JAX style).
//!
//! - Forward: Flex runs the host kernels of `sparsegrad-kernels` on its buffers (f32 and f64;
//!   f16 and bf16 widened to f32, so they accumulate in f32); burn's Cube backend runs the
//!   CubeCL kernels of `crate::cube::spmm` (feature `cube`; under burn's `fusion`, on the
//!   resolved tensors); any other backend gets the trait's defaults, composed of burn's gather
//!   and scatter ops (memory `nnz x n`, never `m x k`). The transposed products read the
//!   pattern's transposed view from the cell its owner passes in with it ([`CsrOperand`]: a
//!   tensor's pattern, a layer's memo), computed once per pattern.
//! - Backward (`Autodiff`): d/dvalues is the SDDMM of the output gradient and `X` over the
//!   pattern (masked: no gradient for unspecified elements); d/dX is `Aᵀ · G` (or `A · G`) by
//!   the transposed kernel. When both are wanted, one fused pass computes them
//!   ([`SparseSpmm::csr_spmm_backward`]). The rule keeps the pattern's operand, cell included: a
//!   training loop transposes an operand's pattern once. No rule builds an `m x k` dense
//!   matrix: the gradient w.r.t. the sparse operand is values-shaped.
//!
//! The trait's methods are safe: they take the pattern as a [`CsrOperand`], which the host
//! kernels check before they walk it (once per index storage on Flex, the record in the
//! operand's cell) and the device kernels read through checked launches, and they check the
//! dense operands' shapes against it (a panic naming them).
//!
//! Here the trait; its implementations are apart: `default` (burn's gather and scatter ops),
//! `flex` (the host kernels, with the cache of a pattern's values in column order), `cube`
//! (the CubeCL kernels) and `autodiff_impl` (the tracked forward and the backward rule).

use crate::operand::{spmm_backward_dims, spmm_dims, spmm_t_dims, CsrOperand};
use burn::backend::{backend_extension, tensor::FloatTensor, Backend, TensorMetadata};
use burn::tensor::Shape;

mod autodiff_impl;
#[cfg(feature = "cube")]
mod cube;
pub(crate) mod default;
mod flex;
#[cfg(test)]
mod tests;

pub(crate) use flex::with_pattern;

/// The CSR product, differentiable on `Autodiff`, and the kernels its rule runs.
///
/// Every method takes a CSR pattern `A [m, k]` ([`CsrOperand`], with the cell where a backend
/// keeps what it derives from the pattern once: its transposed view, a Cube device's split of
/// long rows, the record of its check), its `values [nnz]` and the dense operands of the
/// shapes each method states; a pattern that is not valid CSR, or operands of other shapes, are
/// a panic that names them.
#[backend_extension(Flex, Cube: cfg(feature = "cube"), Autodiff)]
#[diagnostic::on_unimplemented(
    message = "sparsegrad has no kernels for the backend `{Self}` (`SparseSpmm` is not implemented)",
    label = "no sparsegrad kernels for this backend",
    note = "a `Fusion<CubeBackend>` here means that burn's feature `fusion` is on (burn's default features turn it on) and sparsegrad's is off: turn on sparsegrad's `fusion` with `wgpu`, `sparsegrad = {{ version = \"0.1\", features = [\"wgpu\", \"fusion\"] }}` (see `sparsegrad::guide::gpu`)"
)]
pub trait SparseSpmm: Backend {
    /// `A · X` (`transpose = false`, `X [k, n]`, result `[m, n]`) or `Aᵀ · X`
    /// (`transpose = true`, `X [m, n]`, result `[k, n]`): the differentiable primitive
    /// (`Autodiff` records the rule; the untracked backends run the forward kernels). With
    /// `stored_transposed`, the product is stored as its transpose where the backend can
    /// ([`csr_spmm_stored_transposed`](Self::csr_spmm_stored_transposed),
    /// [`csr_spmm_t_stored_transposed`](Self::csr_spmm_t_stored_transposed)): for callers that
    /// transpose it next.
    fn sparse_spmm(
        #[extension_type] pattern: CsrOperand<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        transpose: bool,
        stored_transposed: bool,
    ) -> FloatTensor<Self> {
        forward::<Self>(pattern, values, x, transpose, stored_transposed)
    }

    /// The forward kernel: `A · X`, `X [k, n]`, result `[m, n]`. Not the rule: on `Autodiff`,
    /// the default of burn's ops, which burn's autodiff differentiates op by op.
    fn csr_spmm(
        #[extension_type] pattern: CsrOperand<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        spmm_dims("csr_spmm", &pattern, &values, &x);
        default::spmm::<Self>("csr_spmm", pattern, values, x, false)
    }

    /// `A · X` as [`csr_spmm`](Self::csr_spmm), stored transposed where the backend can: an
    /// `[m, n]` tensor over a row-major `[n, m]` buffer (strides `[1, m]`), so that its
    /// transpose, `Xᵀ · Aᵀ`, is contiguous. The default stores it as `csr_spmm` does.
    fn csr_spmm_stored_transposed(
        #[extension_type] pattern: CsrOperand<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        Self::csr_spmm(pattern, values, x)
    }

    /// The transposed kernel: `Aᵀ · G`, `G [m, n]`, result `[k, n]`; the transposed view from
    /// (or into) the pattern's cell. Not the rule: on `Autodiff`, the default of burn's ops,
    /// which burn's autodiff differentiates op by op.
    fn csr_spmm_t(
        #[extension_type] pattern: CsrOperand<Self>,
        values: FloatTensor<Self>,
        g: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        spmm_t_dims("csr_spmm_t", &pattern, &values, &g);
        default::spmm::<Self>("csr_spmm_t", pattern, values, g, true)
    }

    /// `Aᵀ · G` as [`csr_spmm_t`](Self::csr_spmm_t), stored transposed where the backend can: a
    /// `[k, n]` tensor over a row-major `[n, k]` buffer (strides `[1, k]`), so that its
    /// transpose, `Gᵀ · A`, is contiguous. The default stores it as `csr_spmm_t` does.
    fn csr_spmm_t_stored_transposed(
        #[extension_type] pattern: CsrOperand<Self>,
        values: FloatTensor<Self>,
        g: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        Self::csr_spmm_t(pattern, values, g)
    }

    /// The backward kernel: both gradients of `A · X` (`transpose = false`: `x [k, n]`,
    /// `g [m, n]`; `dX = Aᵀ · G`, `dvalues = SDDMM(G, X)`) or of `Aᵀ · X` (`x [m, n]`,
    /// `g [k, n]`; `dX = A · G`, `dvalues = SDDMM(X, G)`), in one flat tensor: `dX`'s elements,
    /// then the values' gradient. Not the rule: on `Autodiff`, the default of burn's ops, which
    /// burn's autodiff differentiates op by op.
    fn csr_spmm_backward(
        #[extension_type] pattern: CsrOperand<Self>,
        values: FloatTensor<Self>,
        g: FloatTensor<Self>,
        x: FloatTensor<Self>,
        transpose: bool,
    ) -> FloatTensor<Self> {
        spmm_backward_dims("csr_spmm_backward", &pattern, &values, &g, &x, transpose);
        let (dx, dv) = if transpose {
            (
                Self::csr_spmm(pattern.clone(), values, g.clone()),
                default::sddmm::<Self>("csr_spmm_backward", pattern, x, g),
            )
        } else {
            (
                Self::csr_spmm_t(pattern.clone(), values, g.clone()),
                default::sddmm::<Self>("csr_spmm_backward", pattern, g, x),
            )
        };
        let len = dx.shape().num_elements();
        Self::float_cat(vec![Self::float_reshape(dx, Shape::new([len])), dv], 0)
    }
}

/// `A · X` or `Aᵀ · X` by the forward kernels (stored transposed where asked and the backend
/// can): the body of the untracked [`SparseSpmm::sparse_spmm`], and of the tracked one's forward
/// and `dX`.
fn forward<B: SparseSpmm>(
    pattern: CsrOperand<B>,
    values: FloatTensor<B>,
    x: FloatTensor<B>,
    transpose: bool,
    stored_transposed: bool,
) -> FloatTensor<B> {
    match (transpose, stored_transposed) {
        (true, true) => B::csr_spmm_t_stored_transposed(pattern, values, x),
        (true, false) => B::csr_spmm_t(pattern, values, x),
        (false, true) => B::csr_spmm_stored_transposed(pattern, values, x),
        (false, false) => B::csr_spmm(pattern, values, x),
    }
}
