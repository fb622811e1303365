//! SpGEMM: the values of `C = A · B` on a given CSR pattern of `C` (the symbolic pass's, or a
//! mask's). One burn extension trait, [`SparseSpgemm`], holds the forward impl of each backend
//! and, beside them, the backward rule (JAX style).
//!
//! - Forward: Flex runs the host kernels of `sparsegrad-kernels` on its buffers (f32 and f64;
//!   16-bit floats widened to f32), Cube devices the kernels of `cube::spgemm` (under burn's
//!   `fusion`, on the resolved tensors); any other backend gets the trait's defaults, which read
//!   the operands back and run the same kernels.
//! - Backward (`Autodiff`): for the output gradient `G` on `C`'s pattern, d/dA is `(G · Bᵀ)` on
//!   `A`'s pattern and d/dB is `(Aᵀ · G)` on `B`'s pattern, each a masked sparse product by the
//!   inner backend's gradient kernels (never a dense `m x k` or `k x n`).
//!
//! [`product_pattern`] runs the symbolic pass (index algebra, on the host views `host` gives).
//! The methods are `unsafe`: they take three patterns as raw index tensors, which the kernels
//! walk through unchecked offsets; `sparsegrad-autodiff`'s `matmul` calls them only with the
//! patterns of checked tensors and the pattern the symbolic pass computed from them.
//!
//! Here the trait and the macro its implementations share; the implementations are apart:
//! [`default`] (any backend, through the host), `flex` (Flex's buffers), `cube` (the Cube
//! kernels of `cube::spgemm`) and `autodiff_impl` (the tracked forward and the backward rule),
//! and `pattern` the symbolic pass ([`product_pattern`]).

use burn::backend::{
    backend_extension,
    tensor::{FloatTensor, IntTensor},
    Backend,
};

/// Runs `$body` with `$a`, `$b`, `$c` the patterns of six index slices (`A`'s pointers and
/// columns, then `B`'s, then `C`'s) over `$ka`, `$kb`, `$kc` columns: as they are when all six
/// are int64 or all int32, else widened to int64. Each pattern is checked first
/// ([`checked_csr`]): an invalid one is a panic naming it, never a kernel walking it.
macro_rules! with_three {
    ($ints:expr, [$ka:expr, $kb:expr, $kc:expr], |$a:ident, $b:ident, $c:ident| $body:expr) => {{
        let ints: [IntSlice<'_>; 6] = $ints;
        match ints {
            [IntSlice::I64(ap), IntSlice::I64(ai), IntSlice::I64(bp), IntSlice::I64(bi), IntSlice::I64(cp), IntSlice::I64(ci)] => {
                let ($a, $b, $c) = ($crate::spgemm::checked_csr("A", ap, ai, $ka), $crate::spgemm::checked_csr("B", bp, bi, $kb), $crate::spgemm::checked_csr("C", cp, ci, $kc));
                $body
            }
            [IntSlice::I32(ap), IntSlice::I32(ai), IntSlice::I32(bp), IntSlice::I32(bi), IntSlice::I32(cp), IntSlice::I32(ci)] => {
                let ($a, $b, $c) = ($crate::spgemm::checked_csr("A", ap, ai, $ka), $crate::spgemm::checked_csr("B", bp, bi, $kb), $crate::spgemm::checked_csr("C", cp, ci, $kc));
                $body
            }
            other => {
                let w: Vec<Vec<i64>> = other.iter().map(|s| s.to_i64()).collect();
                let ($a, $b, $c) = (
                    $crate::spgemm::checked_csr("A", &w[0][..], &w[1][..], $ka),
                    $crate::spgemm::checked_csr("B", &w[2][..], &w[3][..], $kb),
                    $crate::spgemm::checked_csr("C", &w[4][..], &w[5][..], $kc),
                );
                $body
            }
        }
    }};
}

/// The CSR pattern of `ptr` and `idx` over `ncols` columns, checked: a panic naming the operand
/// and the violation where it is not valid (the tensor layer passes only checked patterns).
pub(crate) fn checked_csr<'a, I: sparsegrad_kernels::index::IndexElem, J: sparsegrad_kernels::index::IndexElem>(
    operand: &str,
    ptr: &'a [I],
    idx: &'a [J],
    ncols: usize,
) -> sparsegrad_kernels::pattern::CsrPattern<'a, I, J> {
    sparsegrad_kernels::pattern::CsrPattern::new(ptr, idx, ncols)
        .unwrap_or_else(|e| panic!("spgemm: the pattern of {operand} is not valid: {e}"))
}

mod autodiff_impl;
#[cfg(feature = "cube")]
mod cube;
pub mod default;
mod flex;
mod pattern;

pub use pattern::{masked_product_pattern_on_device, product_count, product_pattern};

/// The sparse product, differentiable on `Autodiff`, and the kernels its rule runs.
///
/// # Safety
/// Every method takes three CSR patterns, `A [m, k]` (`a_crow [m + 1]`, `a_col`), `B [k, n]`
/// (`b_crow [k + 1]`, `b_col`) and `C [m, n]` (`c_crow [m + 1]`, `c_col`), each valid as
/// `sparsegrad_kernels::pattern::CsrPattern::new` checks it (`k` is `b_crow`'s length less
/// one), `C`'s rows sorted; value tensors hold one value per entry of their pattern. Where the
/// rows of `B` (and of `C`) also hold no repeated column, as a checked CSR tensor's, every
/// backend computes the same values; the Cube kernels find columns by bisection, so on
/// unsorted rows they may miss entries (wrong values, never an access outside the operands).
#[backend_extension(Flex, Cube: cfg(feature = "cube"), Autodiff)]
#[diagnostic::on_unimplemented(
    message = "sparsegrad has no kernels for the backend `{Self}` (`SparseSpgemm` is not implemented)",
    label = "no sparsegrad kernels for this backend",
    note = "a `Fusion<CubeBackend>` here means that burn's feature `fusion` is on (burn's default features turn it on) and sparsegrad's is off: turn on sparsegrad's `fusion` with `wgpu`, `sparsegrad = {{ version = \"0.1\", features = [\"wgpu\", \"fusion\"] }}` (see `sparsegrad::guide::gpu`)"
)]
pub trait SparseSpgemm: Backend {
    /// The values of `A · B` on `C`'s pattern, `[nnz_c]`: the differentiable primitive
    /// (`Autodiff` records the rule; the untracked backends run
    /// [`csr_spgemm`](Self::csr_spgemm)).
    ///
    /// # Safety
    /// See the trait.
    #[allow(clippy::too_many_arguments)]
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
        // SAFETY: this method's contract (its caller's) is the kernel's.
        unsafe { Self::csr_spgemm(a_crow, a_col, a_values, b_crow, b_col, b_values, c_crow, c_col, n) }
    }

    /// `C = A · B` whole in one pass ([`csr_spgemm_product`](Self::csr_spgemm_product)): `C`'s
    /// row pointers and sorted columns (int64) and its values, differentiable w.r.t. both
    /// operands' values by the same rule as [`sparse_spgemm`](Self::sparse_spgemm) (`Autodiff`
    /// records it; the untracked backends run the kernel).
    ///
    /// # Safety
    /// `A [m, k]` and `B [k, n]` as for [`sparse_spgemm`](Self::sparse_spgemm).
    #[allow(clippy::type_complexity)]
    unsafe fn sparse_spgemm_product(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        a_values: FloatTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        b_values: FloatTensor<Self>,
        n: usize,
    ) -> (IntTensor<Self>, IntTensor<Self>, FloatTensor<Self>) {
        // SAFETY: this method's contract (its caller's) is the kernel's.
        unsafe { Self::csr_spgemm_product(a_crow, a_col, a_values, b_crow, b_col, b_values, n) }
    }

    /// The forward kernel: the values of `A · B` on `C`'s pattern, `[nnz_c]`. Untracked (on
    /// `Autodiff`, the default through the host).
    ///
    /// # Safety
    /// See the trait.
    #[allow(clippy::too_many_arguments)]
    unsafe fn csr_spgemm(
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
        // SAFETY: this method's contract.
        unsafe { default::csr_spgemm::<Self>(a_crow, a_col, a_values, b_crow, b_col, b_values, c_crow, c_col, n) }
    }

    /// The whole-product kernel: `C = A · B`, its pattern and values in one pass over the
    /// products: `C`'s row pointers `[m + 1]` and sorted columns `[nnz_c]` (int64), and its
    /// values `[nnz_c]` in `A`'s float dtype. Panics when the product's memory cannot be had
    /// (callers check the product count first: see [`product_count`]). Untracked (on
    /// `Autodiff`, the default through the host).
    ///
    /// # Safety
    /// `A` and `B` as the trait says (`C` is the output here).
    #[allow(clippy::type_complexity)]
    unsafe fn csr_spgemm_product(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        a_values: FloatTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        b_values: FloatTensor<Self>,
        n: usize,
    ) -> (IntTensor<Self>, IntTensor<Self>, FloatTensor<Self>) {
        // SAFETY: this method's contract.
        unsafe { default::csr_spgemm_product::<Self>(a_crow, a_col, a_values, b_crow, b_col, b_values, n) }
    }

    /// The backward kernel for `A`: the gradient w.r.t. `A`'s values of `A · B`'s values on `C`
    /// (`g [nnz_c]`), `(G · Bᵀ)` on `A`'s pattern, `[nnz_a]`.
    ///
    /// # Safety
    /// See the trait.
    #[allow(clippy::too_many_arguments)]
    unsafe fn csr_spgemm_grad_a(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        b_values: FloatTensor<Self>,
        c_crow: IntTensor<Self>,
        c_col: IntTensor<Self>,
        g: FloatTensor<Self>,
        n: usize,
    ) -> FloatTensor<Self> {
        // SAFETY: this method's contract.
        unsafe { default::csr_spgemm_grad_a::<Self>(a_crow, a_col, b_crow, b_col, b_values, c_crow, c_col, g, n) }
    }

    /// The backward kernel for `B`: the gradient w.r.t. `B`'s values of `A · B`'s values on `C`
    /// (`g [nnz_c]`), `(Aᵀ · G)` on `B`'s pattern, `[nnz_b]`.
    ///
    /// # Safety
    /// See the trait.
    #[allow(clippy::too_many_arguments)]
    unsafe fn csr_spgemm_grad_b(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        a_values: FloatTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        c_crow: IntTensor<Self>,
        c_col: IntTensor<Self>,
        g: FloatTensor<Self>,
        n: usize,
    ) -> FloatTensor<Self> {
        // SAFETY: this method's contract.
        unsafe { default::csr_spgemm_grad_b::<Self>(a_crow, a_col, a_values, b_crow, b_col, c_crow, c_col, g, n) }
    }
}
