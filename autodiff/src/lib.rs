//! sparsegrad-autodiff: differentiable sparse ops with sparse backward rules, and `gradcheck`.
//!
//! The conversions of the backend differentiate through burn's own autodiff (they move values
//! with burn ops); the fused kernels get their rules here, a primitive per file with its rule
//! beside it: `spmm` (its values' gradient the SDDMM, whose trait and rule live in the backend's
//! `sddmm` and are re-exported as [`sddmm`]), `spmm_reduce` (the product with
//! max or min in place of the sum, its gradient through the winning entries: its trait and rule
//! live in the backend's `spmm_reduce`, re-exported as [`spmm_reduce`]), `spgemm` (sparse · sparse, its
//! gradients masked sparse products: its trait and rule live in the backend's `spgemm`,
//! re-exported as [`spgemm`]),
//! `softmax` (segment softmax: the torch-named functions; its trait and rule live in the
//! backend's `softmax`, re-exported),
//! `semi_structured` (the products with 2:4 matrices) and `srste` (SR-STE's straight-through 2:4
//! product of a dense master weight: both traits and rules live in the backend's `semi`,
//! re-exported, beside the torch-named functions here); `matmul` holds the torch-named functions
//! built on the products, `linalg` the low-rank factorisations and the eigensolver on top of
//! them, `gradcheck` the numerical checker.

#![warn(missing_docs)]

pub mod gradcheck;
pub mod linalg;
pub mod matmul;
/// The SDDMM primitive: its one trait, forward impls and backward rule live in
/// `sparsegrad_backend::sddmm`; re-exported here so that the old path still resolves.
pub mod sddmm {
    pub use sparsegrad_backend::sddmm::SparseSddmm;
}
pub mod semi_structured;
pub mod softmax;
/// The SpGEMM primitive: its one trait, forward impls and backward rule live in
/// `sparsegrad_backend::spgemm`; re-exported here so that the old path still resolves.
pub mod spgemm {
    pub use sparsegrad_backend::spgemm::SparseSpgemm;
}
pub mod spmm;
/// The arg-extreme SpMM primitive: its one trait, forward impls and backward rule live in
/// `sparsegrad_backend::spmm_reduce`; re-exported here so that the old path still resolves.
pub mod spmm_reduce {
    pub use sparsegrad_backend::spmm_reduce::SparseSpmmReduce;
}
pub mod srste;

pub use gradcheck::{gradcheck, GradInput, GradcheckError, GradcheckOptions, GradcheckReport, Mismatch};
