//! # sparsegrad
//!
//! Sparse tensors with automatic differentiation for burn: every layout of `torch.sparse` (COO,
//! CSR, CSC, BSR, BSC, with batch and dense dims), checked constructors that say what is wrong
//! and where, conversions that are differentiable with respect to values, and a numerical
//! gradient checker.
//!
//! The [`guide`] walks through everything, chapter by chapter: [`guide::tensors`],
//! [`guide::autograd`], [`guide::graphs`], [`guide::semi_structured`], [`guide::sparse_training`],
//! [`guide::linalg`], [`guide::io`], [`guide::gpu`] and [`guide::performance`].
//!
//! ## The API
//!
//! The stable surface is the crate root's types ([`SparseTensor`], [`SparseError`], ...) and
//! these modules: [`prelude`], [`sparse`] (the ops, torch's names), [`nn`] (layers, pruning,
//! datasets), [`io`] (Matrix Market), [`linalg`], [`gradcheck`](mod@gradcheck), and behind their features `dist`
//! (MPI and multi-GPU) and `candle`.
//!
//! [`kernels`], [`backend`] and [`autodiff`] are the layers underneath, re-exported whole for
//! those who extend the library (a new op, layout or backend: `ARCHITECTURE.md` has the
//! checklists). They are **unstable**: their paths and signatures change with the design, in any
//! release.
//!
//! ```
//! use burn::tensor::{Device, Int, Tensor, TensorData, DType};
//! use sparsegrad::prelude::*;
//!
//! let device = Device::flex();
//! let indices = Tensor::<2, Int>::from_data(TensorData::new(vec![0i64, 1, 1, 2, 0, 2], [2, 3]), (&device, DType::I64));
//! let values = Tensor::<1>::from_floats([3.0, 4.0, 5.0], &device);
//! let s = SparseTensor::coo(indices, values, [2, 3]).unwrap();
//! assert_eq!(s.to_dense().into_data().to_vec::<f32>().unwrap(), vec![0.0, 0.0, 3.0, 4.0, 0.0, 5.0]);
//! let csr = s.to_sparse_csr().unwrap();
//! assert_eq!(csr.crow_indices::<1>().unwrap().into_data().to_vec::<i64>().unwrap(), vec![0, 1, 3]);
//! ```

#![warn(missing_docs)]

/// The README's example, compiled and run as a doctest so it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctest;

pub mod guide;

/// **Unstable**: the gradient rules and the autodiff-aware ops under [`sparse`] and [`linalg`].
pub use sparsegrad_autodiff as autodiff;
/// **Unstable**: the sparse tensor, its layouts and the per-backend (Flex, Cube) impls of every
/// primitive.
pub use sparsegrad_backend as backend;
pub use sparsegrad_backend::semi_structured::{SemiPattern, SemiStructuredTensor};
pub use sparsegrad_backend::{Layout, SparseError, SparseSpec, SparseTensor, ToSparse};
/// **Unstable**: the host kernels, without burn: the validated pattern type, index algebra, the
/// products.
pub use sparsegrad_kernels as kernels;

/// The numerical gradient checker (`sparsegrad::gradcheck(...)`, options and reports in the module).
pub mod gradcheck {
    pub use sparsegrad_autodiff::gradcheck::*;
}
pub use sparsegrad_autodiff::gradcheck::gradcheck;

/// torch's low-rank factorisations and eigensolver on sparse input: `svd_lowrank`,
/// `pca_lowrank` (differentiable w.r.t. the sparse values) and `lobpcg`, touching the sparse
/// operand only through `mm`.
pub mod linalg {
    pub use sparsegrad_autodiff::linalg::*;
}

/// Sparse layers.
pub mod nn {
    pub use sparsegrad_nn::*;
}

/// Graphs and sparse layers partitioned over MPI ranks, with gradients (feature `mpi`):
/// `init_process_group`, `RowPartition`, `DistCsr` (a row-partitioned matrix whose `mm`
/// exchanges exactly the halo rows, forward and backward), `all_reduce_gradients`
/// (data-parallel weights) and `models` (GCN over a `DistCsr`). The guide is
/// `docs/distributed.md`; the crate's docs ([`sparsegrad_dist`]) say what lives where. With the
/// feature `cuda` (and without `mpi`), only `all_reduce_gradients_devices`: data-parallel
/// gradients across the GPUs of one process on burn's NCCL all-reduce.
#[cfg(any(feature = "mpi", feature = "cuda"))]
pub mod dist {
    pub use sparsegrad_dist::*;
}

/// Matrix Market files to and from tensors (`read_sparse`, `read_dense`, `write_sparse`).
pub mod io {
    pub use sparsegrad_nn::io::*;
    pub use sparsegrad_nn::DataError;
}

/// torch.sparse's free functions: the matmul family (`mm`, `addmm`, `sampled_addmm`, `mv`,
/// `bmm`, `smm`, `hspmm`, `sspaddmm`, `mm_dense_sparse`, `spgemm`) and the conversions.
/// Arithmetic and unary ops (`add`, `mul`, `mul_dense`, `pow`, `sin`, ...) are methods of
/// `SparseTensor` (`backend::elementwise`, `backend::unary`), as in torch.
pub mod sparse {
    pub use sparsegrad_autodiff::matmul::*;
    pub use sparsegrad_autodiff::softmax::*;
    pub use sparsegrad_backend::cat::*;
    pub use sparsegrad_backend::convert::dense_to_sparse;
    pub use sparsegrad_backend::reduce::*;
    pub use sparsegrad_backend::select::*;
    pub use sparsegrad_backend::semi_structured::to_sparse_semi_structured;
    pub use sparsegrad_backend::shape::*;
    pub use sparsegrad_backend::spdiags::*;

    /// torch's ops on semi-structured (2:4) tensors: `mm` (sparse @ dense), `mm_dense_sparse`
    /// (dense @ sparse), `addmm(bias, dense, sparse.t())`, `linear`, each with gradients
    /// w.r.t. the kept values and the dense operand; and SR-STE's straight-through `srste_linear`
    /// (a dense master weight pruned to a 2:4 pattern, trained densely).
    pub mod semi_structured {
        pub use sparsegrad_autodiff::semi_structured::*;
        pub use sparsegrad_autodiff::srste::{srste_linear, try_srste_linear};
        pub use sparsegrad_backend::semi_structured::{
            to_sparse_semi_structured, SemiKind, SemiPattern, SemiStructuredTensor,
        };
    }
}

#[cfg(feature = "candle")]
mod candle_convert;

/// Sparse matrices for candle (feature `candle`): COO and CSR tensors with host indices and
/// candle values, `mm`, `addmm`, `sampled_addmm`, `softmax`, `log_softmax` as custom ops on the
/// same kernels and backward rules as the burn side; [`from_burn`](candle::from_burn) and
/// [`to_burn`](candle::to_burn) move a matrix between the two frontends; `candle_core` and
/// `candle_nn` are the versions these are built with.
#[cfg(feature = "candle")]
pub mod candle {
    pub use crate::candle_convert::{from_burn, to_burn};
    pub use candle_nn;
    pub use sparsegrad_candle::*;
}

/// `use sparsegrad::prelude::*;` brings the type, its layouts, errors and `ToSparse`.
pub mod prelude {
    pub use crate::sparse;
    pub use crate::{Layout, SemiPattern, SemiStructuredTensor, SparseError, SparseSpec, SparseTensor, ToSparse};
}
