//! # Gradients
//!
//! On burn's `Autodiff` backend (`Device::flex().autodiff()`), gradients reach the *specified*
//! values of a sparse tensor, as in torch:
//!
//! - conversions between layouts (`to_sparse_csr`, `to_dense`, `coalesce`, ...) move values with
//!   burn ops, so their gradients come from burn's autodiff;
//! - the matmul family ([`sparse::mm`](crate::sparse::mm), `addmm`, `sampled_addmm`, `bmm`,
//!   [`mm_reduce`](crate::sparse::mm_reduce), [`spgemm`](crate::sparse::spgemm), ...) and the
//!   sparse `softmax` / `log_softmax` are differentiable primitives with sparse backward rules:
//!   the gradient of the sparse operand's values is sampled on its pattern (an SDDMM), never a
//!   dense `m x k` matrix;
//! - value filters (`filter`, `eliminate_zeros`, `clamp_stored`, `add_scalar_to_stored`) are
//!   differentiable w.r.t. the values they keep.
//!
//! `require_grad()` on a `SparseTensor` tracks its values; `values_flat()` is the tensor whose
//! `grad` you read.
//!
//! ```
//! use burn::tensor::{DType, Device, Int, Tensor, TensorData};
//! use sparsegrad::prelude::*;
//!
//! let ad = Device::flex().autodiff();
//! let a = SparseTensor::csr_from_vecs(vec![0, 1, 3], vec![2, 0, 2], vec![3.0f64, 4.0, 5.0], [2, 3], &ad)?
//!     .require_grad();
//! let x = Tensor::<2>::from_data(TensorData::new(vec![1.0f64, 2., 3., 4., 5., 6.], [3, 2]), (&ad, DType::F64))
//!     .require_grad();
//! let y = sparse::mm(&a, x.clone()); // [2, 2]
//! let grads = y.sum().backward();
//! // d sum(A X) / d a_ij = sum_c x_jc, only at the stored (i, j): (0, 2), (1, 0), (1, 2).
//! let da = a.values_flat().grad(&grads).unwrap();
//! assert_eq!(da.into_data().iter::<f64>().collect::<Vec<_>>(), [11.0, 3.0, 11.0]);
//! // d sum(A X) / d X = Aᵀ 1: column sums of A, repeated over X's columns.
//! let dx = x.grad(&grads).unwrap();
//! assert_eq!(dx.into_data().iter::<f64>().collect::<Vec<_>>(), [4.0, 4.0, 0.0, 0.0, 8.0, 8.0]);
//! # Ok::<(), SparseError>(())
//! ```
//!
//! ## Checking gradients numerically
//!
//! [`gradcheck`](crate::gradcheck()) compares the gradients of a function of sparse values and
//! dense tensors with central differences, as `torch.autograd.gradcheck` does (in f64;
//! [`gradcheck::gradcheck_on`](crate::gradcheck::gradcheck_on) runs it on a device of your
//! choice):
//!
//! ```
//! use burn::tensor::Device;
//! use sparsegrad::gradcheck::{gradcheck, GradInput, GradcheckOptions};
//! use sparsegrad::prelude::*;
//!
//! let device = Device::flex();
//! let pattern = SparseTensor::coo_from_vecs(vec![[0, 2], [1, 0], [1, 2]], vec![3.0f64, 4.0, 5.0], [2, 3], &device)?;
//! let report = gradcheck(
//!     // values -> CSC -> dense, squared: a function of the three stored values. `f` runs on
//!     // the autodiff device and on the plain one: the pattern goes where the values are.
//!     |xs| {
//!         let s = pattern.to_device(&xs[0].device()).with_values(xs[0].clone().reshape([3, 1]));
//!         s.to_sparse_csc().unwrap().to_dense().powi_scalar(2).reshape([6])
//!     },
//!     &[GradInput::sparse("values", &pattern)],
//!     GradcheckOptions::default(),
//! )
//! .expect("gradients match central differences");
//! assert_eq!(report.checked, 3);
//! # Ok::<(), SparseError>(())
//! ```
