//! Conversions: sparse -> dense (`to_dense`, TensorFlow's `to_dense_with` and validating form),
//! layout <-> layout, and the dense -> sparse kernels behind `ToSparse`.
//!
//! Every conversion computes its pattern on the host (index algebra) and moves values with
//! burn ops (`select`, `select_assign` with add, `reshape`, `permute`), so conversions are
//! differentiable with respect to values on an autodiff device. Layout changes go through
//! element entries: one linear key per stored element over the indexed dims, which is also
//! how duplicates in uncoalesced COO input get summed.
//!
//! One file per conversion family: `entries` (the element coordinates every layout change goes
//! through), `to_dense` (sparse -> dense), `coalesce` (canonical order: `coalesce`, `reorder`),
//! `layout` (the public layout <-> layout conversions), `compressed` (building CSR, CSC, BSR and
//! BSC from entries) and `from_dense` (dense -> sparse, [`dense_to_sparse`]).

mod coalesce;
mod compressed;
mod entries;
mod from_dense;
mod layout;
mod to_dense;

pub(crate) use entries::Entries;
pub use from_dense::{dense_to_sparse, SparseSpec};
