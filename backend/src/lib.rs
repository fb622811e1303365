//! sparsegrad-backend: the sparse tensor type on burn, its layouts and invariants, conversions,
//! and the burn extension traits through which the host kernels of `sparsegrad-kernels` run.
//!
//! - The type: [`SparseTensor`] (`tensor`), built by the checked (and lazily checked unchecked)
//!   constructors of `construct`, converted by `convert`, `to_sparse` ([`ToSparse`] on burn
//!   tensors) and `transpose`, printed by `display`, moved and cast by `cast`; `memo` lets a
//!   layer check its pattern once.
//! - In burn modules: `module` ([`module::SparseParam`], a sparse tensor as a module field that
//!   saves, loads and trains) and `record` (loading records that are checked on load).
//! - Operations on it, moving values with burn ops so they differentiate through burn's
//!   autodiff: `shape`, `select`, `cat`, `reduce`, `elementwise`, `unary`, `filter`, `spdiags`,
//!   `semi_structured` (2:4 tensors).
//! - The extension traits, a primitive per file, each with its portable default and its Flex
//!   impl over the kernels: `spmm`, `spmm_reduce`, `sddmm`, `spgemm`, `softmax`, `semi` (the 2:4 products), `movement` (the row
//!   movements), and `host` (zero-copy host views of tensors); `movement`, `spmm`, `sddmm`,
//!   `spmm_reduce`, `softmax`, `spgemm` and `semi` hold their autodiff rules too (one trait per
//!   primitive with the `Autodiff` impl).
//! - `cube` (feature `cube`, turned on by `wgpu`): the CubeCL kernels behind the traits' impls
//!   for burn's Cube backend.
//! - `flex` (Flex buffers as slices), `algebra` and `util` (index tensors in and out).
//! - From the kernels crate: [`SparseError`] (`error`), [`Layout`], `alloc`, `pattern`.

#![warn(missing_docs)]

pub mod algebra;
pub use sparsegrad_kernels::alloc;
pub mod cast;
pub mod cat;
pub mod construct;
pub mod convert;
#[cfg(feature = "cube")]
pub mod cube;
mod display;
pub mod elementwise;
pub mod filter;
pub use sparsegrad_kernels::error;
mod flex;
#[cfg(feature = "sprs")]
pub mod from_sprs;
pub mod host;
pub mod index_kernels;
pub use sparsegrad_kernels::layout;
pub mod memo;
pub mod module;
pub mod movement;
pub mod operand;
pub use sparsegrad_kernels::pattern;
/// The one random-number generator of the workspace (splitmix64): `sparsegrad_kernels::rng`.
pub use sparsegrad_kernels::rng;
pub mod record;
pub mod reduce;
pub mod sddmm;
pub mod select;
pub mod semi;
pub mod semi_structured;
#[cfg(feature = "serde")]
pub mod serde;
pub mod shape;
pub mod softmax;
pub mod spdiags;
pub mod spgemm;
pub mod spmm;
pub mod spmm_reduce;
pub mod tensor;
pub mod to_sparse;
pub mod transpose;
pub mod unary;
pub mod util;

pub use convert::SparseSpec;
pub use error::{Result, SparseError};
pub use layout::Layout;
pub use tensor::SparseTensor;
pub use to_sparse::ToSparse;
