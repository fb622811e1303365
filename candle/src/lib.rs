//! sparsegrad-candle: sparse matrices with autodiff for candle, on the same host kernels and
//! gradient rules as the burn side (`sparsegrad::candle` behind the facade's `candle` feature).
//!
//! ```
//! use candle_core::{Device, Tensor, Var};
//! use sparsegrad_candle::{mm, SparseTensor};
//!
//! let dev = Device::Cpu;
//! let indices = Tensor::new(&[[0i64, 1, 1], [2, 0, 2]], &dev)?;
//! let values = Var::new(&[3.0f32, 4.0, 5.0], &dev)?;
//! let a = SparseTensor::coo(&indices, values.as_tensor().clone(), [2, 3])?;
//! let x = Tensor::new(&[[1.0f32], [2.0], [3.0]], &dev)?;
//! let y = mm(&a, &x)?; // [[9], [19]]
//! assert_eq!(y.to_vec2::<f32>()?, vec![vec![9.0], vec![19.0]]);
//! let grads = y.sum_all()?.backward()?;
//! // d/dvalues on the pattern: x[col j] for each stored entry.
//! assert_eq!(grads.get(&values).unwrap().to_vec1::<f32>()?, vec![3.0, 1.0, 3.0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! - `tensor`: [`SparseTensor`] (COO or CSR; host indices, candle values) and its checked
//!   constructors, which return the burn side's [`SparseError`]s.
//! - `convert`: `coalesce`, `to_sparse_csr`, `to_sparse_coo`, `to_dense`.
//! - `matmul`: [`mm`], [`addmm`], [`sampled_addmm`] (custom ops with backward rules).
//! - `softmax`: [`softmax()`], [`log_softmax`] over the rows or columns.
//! - `indices`, `host`: the host index buffers and the hand-over of candle's CPU storage to the
//!   kernels.
//!
//! The ops run on candle's CPU device, in f32 and f64; other devices and dtypes are candle
//! errors naming them.

#![warn(missing_docs)]

mod convert;
mod host;
mod indices;
pub mod matmul;
pub mod softmax;
pub mod tensor;

pub use candle_core;
pub use matmul::{addmm, mm, sampled_addmm};
pub use softmax::{log_softmax, softmax};
pub use sparsegrad_kernels::{Layout, SparseError};
pub use tensor::SparseTensor;
