//! sparsegrad-autodiff: differentiable sparse ops with sparse backward rules, and `gradcheck`.
//!
//! The conversions of the backend differentiate through burn's own autodiff (they move values
//! with burn ops); the fused kernels' primitives, each one trait with its backward rule beside
//! its forwards, live in the backend and are re-exported here under their old paths: [`spmm`]
//! (its values' gradient the SDDMM), [`sddmm`], [`spmm_reduce`] (the product with max or min in
//! place of the sum, its gradient through the winning entries), [`spgemm`] (sparse · sparse,
//! its gradients masked sparse products) and the 2:4 products' (the backend's `semi`). Here:
//! `softmax` (segment softmax: the torch-named functions; its trait and rule live in the
//! backend's `softmax`, re-exported), `semi_structured` (the torch-named products with 2:4
//! matrices), `srste` (SR-STE's straight-through 2:4 product of a dense master weight);
//! `matmul` holds the torch-named functions built on the products, `linalg` the low-rank
//! factorisations and the eigensolver on top of them, `gradcheck` the numerical checker.

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
/// The SpMM primitive: its one trait, forward impls and backward rule live in
/// `sparsegrad_backend::spmm`; re-exported here so that the old path still resolves.
pub mod spmm {
    pub use sparsegrad_backend::spmm::SparseSpmm;
}
/// The arg-extreme SpMM primitive: its one trait, forward impls and backward rule live in
/// `sparsegrad_backend::spmm_reduce`; re-exported here so that the old path still resolves.
pub mod spmm_reduce {
    pub use sparsegrad_backend::spmm_reduce::SparseSpmmReduce;
}
pub mod srste;

pub use gradcheck::{gradcheck, GradInput, GradcheckError, GradcheckOptions, GradcheckReport, Mismatch};
