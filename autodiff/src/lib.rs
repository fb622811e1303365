//! sparsegrad-autodiff: differentiable sparse ops with sparse backward rules, and `gradcheck`.
//!
//! The conversions of the backend differentiate through burn's own autodiff (they move values
//! with burn ops); the fused kernels get their rules here: `products` holds the two
//! differentiable primitives (SpMM and SDDMM, each the other's gradient), `matmul` the
//! torch-named functions built on them, `gradcheck` the numerical checker,
//! `semi_structured` the differentiable products with 2:4 matrices.

pub mod gradcheck;
pub mod matmul;
pub mod products;
pub mod semi_structured;
pub mod softmax;

pub use gradcheck::{gradcheck, GradInput, GradcheckError, GradcheckOptions, GradcheckReport, Mismatch};
