//! SpMM, the product primitive of the matmul family: `A · X` (or `Aᵀ · X`) for `A` a CSR
//! pattern with values. One burn extension trait, [`SparseSpmm`], holds the forward impl of each
//! backend and, beside them, the backward rule (JAX style).
//!
//! - Forward: Flex runs the host kernels of `sparsegrad-kernels` on its buffers (f32 and f64;
//!   f16 and bf16 widened to f32, so they accumulate in f32); burn's Cube backend runs the
//!   CubeCL kernels of `crate::cube::spmm` (feature `cube`; under burn's `fusion`, on the
//!   resolved tensors); any other backend gets the trait's defaults, composed of burn's gather
//!   and scatter ops (memory `nnz x n`, never `m x k`). The transposed products read the
//!   pattern's transposed view from the [`TransposeCell`] its owner passes in (a tensor's
//!   pattern, a layer's memo), computed once per pattern.
//! - Backward (`Autodiff`): d/dvalues is the SDDMM of the output gradient and `X` over the
//!   pattern (masked: no gradient for unspecified elements); d/dX is `Aᵀ · G` (or `A · G`) by
//!   the transposed kernel. When both are wanted, one fused pass computes them
//!   ([`SparseSpmm::csr_spmm_backward`]). The rule keeps the pattern's [`TransposeCell`]: a
//!   training loop transposes an operand's pattern once. No rule builds an `m x k` dense
//!   matrix: the gradient w.r.t. the sparse operand is values-shaped.
//!
//! The trait's methods are `unsafe`: they take the pattern as raw index tensors and the host
//! kernels walk it through unchecked offsets, so the caller vouches that it is valid (the safe
//! functions of `sparsegrad-autodiff`'s `matmul` hand over only the patterns of checked
//! tensors).
//!
//! Here the trait; its implementations are apart: `default` (burn's gather and scatter ops),
//! `flex` (the host kernels, with the cache of a pattern's values in column order), `cube`
//! (the CubeCL kernels) and `autodiff_impl` (the tracked forward and the backward rule).

use burn::backend::{
    backend_extension,
    tensor::{FloatTensor, IntTensor},
    Backend, TensorMetadata,
};
use burn::tensor::Shape;
use sparsegrad_kernels::pattern::TransposeCell;
use std::sync::Arc;

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
/// # Safety
/// Every method takes a CSR pattern `A [m, k]` as `crow [m + 1]` and `col [nnz]`, which must be
/// valid as `sparsegrad_kernels::pattern::CsrPattern::new` checks it: `crow` starts at 0, never decreases and ends at
/// `nnz`, and every column lies in `0..k`. `k` is the method's `k` argument, or the rows of `x`.
/// The dense operands must have the shapes the methods state, and a `transposed` cell must be
/// this pattern's (or empty).
#[backend_extension(Flex, Cube: cfg(feature = "cube"), Autodiff)]
#[diagnostic::on_unimplemented(
    message = "sparsegrad has no kernels for the backend `{Self}` (`SparseSpmm` is not implemented)",
    label = "no sparsegrad kernels for this backend",
    note = "a `Fusion<CubeBackend>` here means that burn's feature `fusion` is on (burn's default features turn it on) and sparsegrad's is off: turn on sparsegrad's `fusion` with `wgpu`, `sparsegrad = {{ version = \"0.1\", features = [\"wgpu\", \"fusion\"] }}` (see `sparsegrad::guide::gpu`)"
)]
pub trait SparseSpmm: Backend {
    /// `A · X` (`transpose = false`, `A` the pattern `[m, k]`, `X [k, n]`, result `[m, n]`) or
    /// `Aᵀ · X` (`transpose = true`, `X [m, n]`, result `[k, n]`); `values [nnz]`: the
    /// differentiable primitive (`Autodiff` records the rule; the untracked backends run the
    /// forward kernels). With `stored_transposed`, the product is stored as its transpose where
    /// the backend can ([`csr_spmm_stored_transposed`](Self::csr_spmm_stored_transposed),
    /// [`csr_spmm_t_stored_transposed`](Self::csr_spmm_t_stored_transposed)): for callers that
    /// transpose it next.
    ///
    /// # Safety
    /// See the trait.
    #[allow(clippy::too_many_arguments)]
    unsafe fn sparse_spmm(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        transpose: bool,
        stored_transposed: bool,
        k: usize,
        transposed: Arc<TransposeCell>,
    ) -> FloatTensor<Self> {
        // SAFETY: this method's contract (its caller's) is the kernels'.
        unsafe { forward::<Self>(crow, col, values, x, transpose, stored_transposed, k, &transposed) }
    }

    /// The forward kernel: `A · X`, `A` `[m, k]` in CSR (`crow [m + 1]`, `col [nnz]`,
    /// `values [nnz]`), `X [k, n]`. `cell` is the pattern's (or empty): where a backend keeps
    /// what it derives from the pattern once (a Cube device's split of long rows). Not the rule:
    /// on `Autodiff`, the default of burn's ops, which burn's autodiff differentiates op by op.
    ///
    /// # Safety
    /// See the trait: a valid pattern over `k = x.shape()[0]` columns, and its cell.
    unsafe fn csr_spmm(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        cell: &TransposeCell,
    ) -> FloatTensor<Self> {
        let _ = cell;
        default::spmm::<Self>(crow, col, values, x, false, 0)
    }

    /// `A · X` as [`csr_spmm`](Self::csr_spmm), stored transposed where the backend can: an
    /// `[m, n]` tensor over a row-major `[n, m]` buffer (strides `[1, m]`), so that its
    /// transpose, `Xᵀ · Aᵀ`, is contiguous. The default stores it as `csr_spmm` does.
    ///
    /// # Safety
    /// As [`csr_spmm`](Self::csr_spmm).
    unsafe fn csr_spmm_stored_transposed(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        cell: &TransposeCell,
    ) -> FloatTensor<Self> {
        // SAFETY: this method's contract is `csr_spmm`'s.
        unsafe { Self::csr_spmm(crow, col, values, x, cell) }
    }

    /// The transposed kernel: `Aᵀ · G`, `A` `[m, k]` in CSR, `G [m, n]`, result `[k, n]`; the
    /// transposed view from (or into) `transposed`. Not the rule: on `Autodiff`, the default of
    /// burn's ops, which burn's autodiff differentiates op by op.
    ///
    /// # Safety
    /// See the trait: a valid pattern over `k` columns, and its cell.
    unsafe fn csr_spmm_t(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        g: FloatTensor<Self>,
        k: usize,
        transposed: &TransposeCell,
    ) -> FloatTensor<Self> {
        let _ = transposed;
        default::spmm::<Self>(crow, col, values, g, true, k)
    }

    /// `Aᵀ · G` as [`csr_spmm_t`](Self::csr_spmm_t), stored transposed where the backend can: a
    /// `[k, n]` tensor over a row-major `[n, k]` buffer (strides `[1, k]`), so that its
    /// transpose, `Gᵀ · A`, is contiguous. The default stores it as `csr_spmm_t` does.
    ///
    /// # Safety
    /// As [`csr_spmm_t`](Self::csr_spmm_t).
    unsafe fn csr_spmm_t_stored_transposed(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        g: FloatTensor<Self>,
        k: usize,
        transposed: &TransposeCell,
    ) -> FloatTensor<Self> {
        // SAFETY: this method's contract is `csr_spmm_t`'s.
        unsafe { Self::csr_spmm_t(crow, col, values, g, k, transposed) }
    }

    /// The backward kernel: both gradients of `A · X` (`transpose = false`: `dX = Aᵀ · G`,
    /// `dvalues = SDDMM(G, X)`) or of `Aᵀ · X` (`dX = A · G`, `dvalues = SDDMM(X, G)`), in one
    /// flat tensor: `dX`'s elements, then the values' gradient. `k` is the pattern's column
    /// count. Not the rule: on `Autodiff`, the default of burn's ops, which burn's autodiff
    /// differentiates op by op.
    ///
    /// # Safety
    /// See the trait: a valid pattern over `k` columns, and its cell.
    #[allow(clippy::too_many_arguments)]
    unsafe fn csr_spmm_backward(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        g: FloatTensor<Self>,
        x: FloatTensor<Self>,
        transpose: bool,
        k: usize,
        transposed: &TransposeCell,
    ) -> FloatTensor<Self> {
        // SAFETY: the pattern is the caller's, valid over `k` columns (this method's contract);
        // `x [k, n]` for the forward product's `dX`, `g [k, n]` for the transposed one's.
        let (dx, dv) = unsafe {
            if transpose {
                (
                    Self::csr_spmm(crow.clone(), col.clone(), values, g.clone(), transposed),
                    default::sddmm::<Self>(crow, col, x, g),
                )
            } else {
                (
                    Self::csr_spmm_t(crow.clone(), col.clone(), values, g.clone(), k, transposed),
                    default::sddmm::<Self>(crow, col, g, x),
                )
            }
        };
        let len = dx.shape().num_elements();
        Self::float_cat(vec![Self::float_reshape(dx, Shape::new([len])), dv], 0)
    }
}

/// `A · X` or `Aᵀ · X` by the forward kernels (stored transposed where asked and the backend
/// can): the body of the untracked [`SparseSpmm::sparse_spmm`], and of the tracked one's forward
/// and `dX`.
///
/// # Safety
/// As [`SparseSpmm::sparse_spmm`].
#[allow(clippy::too_many_arguments)]
unsafe fn forward<B: SparseSpmm>(
    crow: IntTensor<B>,
    col: IntTensor<B>,
    values: FloatTensor<B>,
    x: FloatTensor<B>,
    transpose: bool,
    stored_transposed: bool,
    k: usize,
    transposed: &TransposeCell,
) -> FloatTensor<B> {
    // SAFETY: the caller's pattern is valid over `k` columns, with its cell; `A · X` reads
    // `X [k, n]`.
    unsafe {
        if transpose && stored_transposed {
            B::csr_spmm_t_stored_transposed(crow, col, values, x, k, transposed)
        } else if transpose {
            B::csr_spmm_t(crow, col, values, x, k, transposed)
        } else if stored_transposed {
            B::csr_spmm_stored_transposed(crow, col, values, x, transposed)
        } else {
            B::csr_spmm(crow, col, values, x, transposed)
        }
    }
}
