//! sparsegrad-backend: the sparse tensor type, its layouts and invariants, conversions, and the
//! host kernels of index algebra behind burn extension traits.
//!
//! - [`SparseTensor`] (`tensor`), built by the checked constructors of `construct`, converted by
//!   `convert`, `to_sparse` ([`ToSparse`] on burn tensors) and `transpose`, printed by `display`.
//! - `algebra`: index algebra kernels (keys, sorting, compress/expand, validation, non-zeros).
//! - `host`: the [`host::HostAccess`] extension trait that hands those kernels zero-copy slices on
//!   Flex and a read-back copy elsewhere.
//! - [`SparseError`] (`error`): what is wrong and where.

pub mod algebra;
pub use sparsegrad_kernels::alloc;
pub mod cat;
pub mod construct;
pub mod convert;
mod display;
pub mod elementwise;
pub use sparsegrad_kernels::error;
mod flex;
pub mod host;
pub use sparsegrad_kernels::layout;
pub mod memo;
pub mod movement;
pub use sparsegrad_kernels::pattern;
pub mod reduce;
pub mod sddmm;
pub mod select;
pub mod semi_spmm;
pub mod semi_structured;
pub mod shape;
pub mod softmax;
pub mod spdiags;
pub mod spmm;
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
