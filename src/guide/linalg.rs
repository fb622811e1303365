//! # Sparse @ sparse, filters and spectral methods
//!
//! ## Sparse @ sparse
//!
//! [`sparse::spgemm(a, b)`](crate::sparse::spgemm) is Gustavson's row-by-row product in one
//! pass over the partial products (each row's sorted columns and values together; rows in
//! parallel blocks balanced by product count; bit-reproducible), a CSR result, differentiable
//! w.r.t. both operands' values (each gradient a masked sparse product on its operand's pattern,
//! never densified);
//! [`sparse::spgemm_with(a, b, SpgemmOptions { mask, drop_zeros })`](crate::sparse::spgemm_with)
//! computes only a mask's entries (GraphBLAS's masked `mxm`: a symbolic pass for the pattern,
//! then a numeric pass for the values) and drops exact zeros. `mm(&a, &b)` is the same product
//! as coalesced COO.
//!
//! Value filters on stored entries, differentiable w.r.t. the kept ones: `s.filter(|v| ..)`
//! (GraphBLAS `select`), `s.eliminate_zeros()`, `s.clamp_stored(min, max)`,
//! `s.add_scalar_to_stored(b)`.
//!
//! ```
//! use burn::tensor::Device;
//! use sparsegrad::prelude::*;
//! use sparsegrad::sparse::{spgemm, spgemm_with, SpgemmOptions};
//!
//! let device = Device::flex();
//! // A = [[1, 2, 0], [0, 0, 3], [4, 0, 0]]
//! let a = SparseTensor::csr_from_vecs(vec![0, 2, 3, 4], vec![0, 1, 2, 0], vec![1.0f32, 2.0, 3.0, 4.0], [3, 3], &device)?;
//! let c = spgemm(&a, &a)?; // A @ A, CSR
//! assert!(c.to_dense().equal(a.to_dense().matmul(a.to_dense())).all().into_scalar::<bool>());
//! // Only the diagonal: GraphBLAS's C<I> = A @ A.
//! let eye = SparseTensor::coo_from_vecs(vec![[0, 0], [1, 1], [2, 2]], vec![1.0f32; 3], [3, 3], &device)?;
//! let diag = spgemm_with(&a, &a, SpgemmOptions { mask: Some(&eye), drop_zeros: true })?;
//! assert_eq!(diag.nnz(), 1); // (A @ A) has one non-zero on its diagonal: 1 at (0, 0)
//! // Keep the stored entries above 1.5.
//! assert_eq!(a.filter(|v| v > 1.5)?.nnz(), 3);
//! # Ok::<(), SparseError>(())
//! ```
//!
//! `cargo run --release --example sparse_dnn` runs GraphChallenge-style inference on a
//! synthetic 120-layer network both ways (sparse `Y` by `spgemm` and the filters, dense `Y` by
//! `mm_dense_sparse`); `python bench/sparse_dnn.py` runs scipy on the same network (its timings
//! are in `bench/RESULTS.md`).
//!
//! ## Spectral methods
//!
//! [`sparsegrad::linalg`](crate::linalg), with torch's names and arguments, never densifies the
//! sparse operand: [`svd_lowrank`](crate::linalg::svd_lowrank) and
//! [`pca_lowrank`](crate::linalg::pca_lowrank) (randomized range finder with power iterations;
//! centering as a rank-one correction; `U`, `S`, `V` differentiable w.r.t. the sparse values) and
//! [`lobpcg`](crate::linalg::lobpcg) (the largest or smallest eigenpairs of a symmetric matrix,
//! generalized and preconditioned, torch's "ortho" method).
//!
//! ```
//! use burn::tensor::Device;
//! use sparsegrad::linalg::{lobpcg, svd_lowrank};
//! use sparsegrad::prelude::*;
//!
//! let device = Device::flex();
//! // A rank-2 matrix: singular values 3 and 2.
//! let a = SparseTensor::coo_from_vecs(vec![[0, 0], [5, 3]], vec![3.0f64, -2.0], [8, 6], &device)?;
//! let (u, s, v) = svd_lowrank(&a, Some(2), None, None)?; // torch's (A, q, niter, M)
//! assert_eq!((u.dims(), v.dims()), ([8, 2], [6, 2]));
//! let s: Vec<f64> = s.into_data().iter::<f64>().collect();
//! assert!((s[0] - 3.0).abs() < 1e-9 && (s[1] - 2.0).abs() < 1e-9);
//!
//! // The largest eigenvalue of diag(1, ..., 12).
//! let d = SparseTensor::coo_from_vecs(
//!     (0..12i64).map(|i| [i, i]).collect::<Vec<_>>(),
//!     (1..=12).map(f64::from).collect::<Vec<f64>>(),
//!     [12, 12],
//!     &device,
//! )?;
//! let (e, x) = lobpcg(&d, Some(1), None, None, None, None, None, None, None, None)?;
//! assert_eq!(x.dims(), [12, 1]);
//! assert!((e.into_data().iter::<f64>().next().unwrap() - 12.0).abs() < 1e-6);
//! # Ok::<(), SparseError>(())
//! ```
