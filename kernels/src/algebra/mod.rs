//! Index algebra: the untracked integer work behind every layout change, as host kernels over
//! slices. Values never pass through here; these kernels produce the index arrays and the
//! permutations and segment ids that a tensor framework then applies to values, so gradients
//! flow through its own autodiff.
//!
//! - `keys`: lexicographic keys of COO entries (linearised indices) and their inverse.
//! - `sort`: the coalesce plan (sorted unique keys, a segment id per entry) and stable sorting.
//! - `compress`: compressed <-> expanded row (column) indices.
//! - `validate`: the layouts' invariants, each violation a `SparseError`.
//! - `nonzero`: which items of a dense buffer hold a non-zero.

pub mod compress;
pub mod keys;
pub mod nonzero;
pub mod sort;
pub mod validate;

pub use crate::index::IndexElem;
pub(crate) use crate::index::PARALLEL_MIN;
