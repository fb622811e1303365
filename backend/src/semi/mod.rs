//! The products with a semi-structured (2:4) matrix `A [rows, cols]` (kept values
//! `[rows, cols / 2]` and metadata words, see `semi_structured`). One burn extension trait per
//! primitive holds the forward impl of each backend and, beside them, the backward rule (JAX
//! style):
//!
//! - [`SemiMatmul`], the 2:4 product: the differentiable `semi_product` (the four arrangements
//!   of `A`, as stored or `Aᵀ`, and of the dense operand, as is or the whole product transposed)
//!   and the kernels it and its rule run:
//!   - `semi_mm`: `A · B` — half the multiply-adds of the dense product: each output row sums
//!     `cols / 2` scaled rows of `B`, two per group of four;
//!   - `semi_mm_t`: `Aᵀ · G`;
//!   - `semi_sddmm`: `out[r, j] = G[r] · B[col(r, j)]`, the gradient of the kept values.
//!
//!   Backward (`Autodiff`): the gradient of the kept values is the SDDMM of the output gradient
//!   and the dense operand over the pattern (so a 2:4 weight stays 2:4 while training), the
//!   gradient of the dense operand the product with the other arrangement of `A`. Nothing of
//!   `A`'s dense size is ever built.
//! - [`SrsteMatmul`] (`srste`), SR-STE's straight-through product of a dense master weight
//!   pruned to a 2:4 pattern, on the same kernels.
//!
//! Forward: Flex runs the host kernels of `sparsegrad-kernels`' `semi` (f32 and f64; f16 and
//! bf16 widened to f32), Cube devices the kernels of `cube::semi` (which decode the words on the
//! device; under burn's `fusion`, on the resolved tensors). Another backend implements the three
//! kernels, with [`default`]'s bodies where it has the CSR kernels ([`SparseSpmm`] and
//! [`SparseSddmm`]): they run the products through the CSR view of the pattern (the words read
//! back at every call). No metadata word can lead a kernel outside its operands (every nibble
//! decodes to a column of its own group), so these methods are safe to call.
//!
//! Here the trait; the implementations are apart: [`default`] (the CSR bodies), `flex` (Flex's
//! buffers), `cube` (the Cube kernels of `cube::semi`) and `autodiff_impl` (the tracked forward
//! and the backward rule); [`srste`] the straight-through product, its impls and rule.
//!
//! [`SparseSpmm`]: crate::spmm::SparseSpmm
//! [`SparseSddmm`]: crate::sddmm::SparseSddmm

use burn::backend::{
    backend_extension,
    tensor::{FloatTensor, IntTensor},
    Backend,
};

mod autodiff_impl;
#[cfg(feature = "cube")]
mod cube;
pub mod default;
mod flex;
pub mod srste;

pub use srste::SrsteMatmul;

/// Products with a semi-structured matrix `A [rows, cols]` given as kept values
/// `[rows, cols / 2]` and `i16` metadata words `[rows, ceil(cols / 16)]`: the differentiable
/// product (on `Autodiff`) and the kernels its rule runs.
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
    /// (`x [n, rows]`). The differentiable primitive (`Autodiff` records the rule; the untracked
    /// backends run [`semi_mm`](Self::semi_mm) or [`semi_mm_t`](Self::semi_mm_t)).
    fn semi_product(
        values: FloatTensor<Self>,
        metadata: IntTensor<Self>,
        cols: usize,
        x: FloatTensor<Self>,
        transpose_a: bool,
        transposed: bool,
    ) -> FloatTensor<Self> {
        if transpose_a {
            Self::semi_mm_t(values, metadata, cols, x, transposed)
        } else {
            Self::semi_mm(values, metadata, cols, x, transposed)
        }
    }

    /// `A · B` (`B [cols, n]`, result `[rows, n]`), or with `transposed` `B · Aᵀ`
    /// (`B [n, cols]`, result `[n, rows]`: a linear layer's product). Untracked (on
    /// `Autodiff`, the inner backend's kernel).
    fn semi_mm(
        values: FloatTensor<Self>,
        metadata: IntTensor<Self>,
        cols: usize,
        b: FloatTensor<Self>,
        transposed: bool,
    ) -> FloatTensor<Self>;

    /// `Aᵀ · G` (`G [rows, n]`, result `[cols, n]`), or with `transposed` `G · A`
    /// (`G [n, rows]`, result `[n, cols]`). Untracked (on `Autodiff`, the inner backend's
    /// kernel).
    fn semi_mm_t(
        values: FloatTensor<Self>,
        metadata: IntTensor<Self>,
        cols: usize,
        g: FloatTensor<Self>,
        transposed: bool,
    ) -> FloatTensor<Self>;

    /// `out[r, j] = G[r] · B[col(r, j)]` for every kept entry: `G [rows, n]`, `B [cols, n]`,
    /// result `[rows, cols / 2]`. Untracked (on `Autodiff`, the inner backend's kernel).
    fn semi_sddmm(
        metadata: IntTensor<Self>,
        cols: usize,
        g: FloatTensor<Self>,
        b: FloatTensor<Self>,
    ) -> FloatTensor<Self>;
}
