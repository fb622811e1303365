//! sparsegrad-autodiff: differentiable sparse ops with sparse backward rules, and `gradcheck`.
//!
//! The conversions of the backend differentiate through burn's own autodiff (they move values
//! with burn ops); the fused kernels get their rules here, one file per op family.

pub mod gradcheck;

pub use gradcheck::{gradcheck, GradInput, GradcheckError, GradcheckOptions, GradcheckReport, Mismatch};
