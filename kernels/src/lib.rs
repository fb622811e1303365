//! sparsegrad-kernels: the host kernels of sparsegrad, with no tensor framework. The burn backend
//! (`sparsegrad-backend`) and the candle frontend (`sparsegrad-candle`) both run them on their
//! CPU buffers.
//!
//! Layered from the bottom up (a module uses only those above it in this list):
//! - `error`, `index`, `layout`, `alloc`: [`SparseError`], the index types, the layouts' names,
//!   fallible allocation.
//! - `pattern`: [`pattern::CsrPattern`], a compressed pattern whose existence proves that
//!   walking it stays inside its arrays, and its transposed view [`pattern::CscPattern`].
//! - `algebra`: index algebra (keys, sorting, compress/expand, validation, non-zeros).
//! - `simd`, `real`, `scratch`, `dense`: the one CPU-feature check ([`simd::isa`]) and the
//!   multiversioning of kernels on it, the value types, per-thread aligned scratch buffers, the
//!   dense transpose.
//! - `spmm`, `sddmm`, `spmm_backward`, `spgemm`: the products on a [`pattern::CsrPattern`] (`A · X`,
//!   `Aᵀ · G` through the transposed view, SDDMM, both gradients of a product in one pass, and
//!   the sparse · sparse product with its gradients).
//! - `spmm_reduce`: `A · X` with max or min in place of the sum, and its gradients (through
//!   the winning entry of each output element).
//! - `softmax`: softmax and log-softmax over segments of stored elements, and their gradient.
//! - `semi`: 2:4 semi-structured metadata and products; `semi_narrow`: the products with a
//!   narrow dense operand (a linear layer at decode size), bound by the bytes of the 2:4 matrix;
//!   `semi_backward`: the backward products (`Aᵀ · G`, the kept values' gradient) from the metadata;
//!   `semi_int`: i8 products with i32 sums.
//! - `rng`: the one random-number generator (splitmix64), for every crate of the workspace.
//! - `tall`: tall thin dense matrices (`XᵀX` in f64, `X T` in place, standard normal draws),
//!   the host steps of the randomized SVD.
//!
//! Every kernel whose memory safety rests on a pattern takes a `CsrPattern` (or the
//! `CscPattern` built from one); the others check their operands' sizes. None of them is
//! `unsafe` to call.

#![warn(missing_docs)]

pub mod algebra;
pub mod alloc;
pub mod dense;
pub mod error;
pub mod index;
pub mod layout;
pub mod pattern;
pub mod real;
pub mod rng;
pub(crate) mod scratch;
pub mod sddmm;
pub mod semi;
pub mod semi_backward;
pub mod semi_int;
pub mod semi_narrow;
pub mod simd;
pub mod softmax;
pub mod spgemm;
pub mod spmm;
pub mod spmm_backward;
pub mod spmm_reduce;
pub mod tall;

pub use error::{Result, SparseError};
pub use index::{IndexElem, IndexType};
pub use layout::Layout;
