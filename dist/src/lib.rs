//! sparsegrad-dist: graphs and sparse layers partitioned over MPI ranks, with gradients
//! (`sparsegrad::dist` under the facade's feature `mpi`).
//!
//! The transport is MPI's (rsmpi over the system's MPI; Open MPI in CI), under the crate's
//! feature `mpi`; without it only the MPI-free `devices` is there, so that the workspace builds
//! without an MPI installation. What lives where:
//!
//! - `group`: [`ProcessGroup`] ([`init_process_group`]): MPI's initialisation and the
//!   collectives on host buffers the rest uses.
//! - `partition`: [`RowPartition`], the owner rank of every row, from contiguous ranges or from
//!   `sparsegrad::nn::partition_graph`'s parts.
//! - `halo`: the halo plan, built once per pattern: which rows of the dense operand each rank
//!   sends to which, and the two host exchanges (forward, and the backward that sums at the
//!   owners).
//! - `exchange`: the exchange as a differentiable primitive (a burn backend extension with its
//!   backward rule).
//! - `csr`: [`DistCsr`], the row-partitioned square matrix, and its differentiable
//!   [`DistCsr::mm`].
//! - [`models`]: `sparsegrad::nn::models::Gcn` with its propagation over a [`DistCsr`].
//! - `data_parallel`: [`all_reduce_gradients`], the sum of the replicated dense parameters'
//!   gradients over the ranks before the optimizer step.
//! - `devices` (no MPI needed): [`all_reduce_gradients_devices`], the same sum across the GPUs of
//!   one process on burn's collective all-reduce (NCCL; feature `cuda`): burn's collectives do
//!   not span processes, so this is its one-node multi-GPU path.
//!
//! ```no_run
//! # #[cfg(feature = "mpi")]
//! # fn main() -> Result<(), sparsegrad_backend::SparseError> {
//! use burn::tensor::{Device, Tensor};
//! use sparsegrad_backend::SparseTensor;
//! use sparsegrad_dist::{init_process_group, DistCsr, RowPartition};
//!
//! let group = init_process_group()?; // under `mpirun -np R`
//! let device = Device::flex();
//! // The path 0 - 1 - 2 - 3, whole on every rank; each rank keeps its rows.
//! let a = SparseTensor::csr_from_vecs(vec![0, 1, 3, 5, 6], vec![1, 0, 2, 1, 3, 2], vec![1.0f32; 6], [4, 4], &device)?;
//! let partition = RowPartition::contiguous(4, group.world_size())?;
//! let dist = DistCsr::from_global(&group, &partition, &a)?;
//! // This rank's rows of X: global row i holds i.
//! let rows: Vec<f32> = dist.rows().iter().map(|&i| i as f32).collect();
//! let x = Tensor::<1>::from_floats(rows.as_slice(), &device).reshape([rows.len(), 1]);
//! let y = dist.mm(x)?; // this rank's rows of A X: [1, 2, 4, 2] for rows 0..4
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "mpi"))]
//! # fn main() {}
//! ```
//!
//! The user guide, with the cost model and the measurements, is `docs/distributed.md` in the
//! repository; the checks across ranks are `tests/mpi_ranks.rs` (run under `mpirun`).

#![warn(missing_docs)]
// The links above name the items of the feature `mpi`: without it they do not exist.
#![cfg_attr(not(feature = "mpi"), allow(rustdoc::broken_intra_doc_links))]

#[cfg(feature = "mpi")]
mod csr;
#[cfg(feature = "mpi")]
mod data_parallel;
mod devices;
#[cfg(feature = "mpi")]
mod exchange;
#[cfg(feature = "mpi")]
mod group;
#[cfg(feature = "mpi")]
mod halo;
#[cfg(feature = "mpi")]
pub mod models;
#[cfg(feature = "mpi")]
mod partition;

#[cfg(feature = "mpi")]
pub use csr::{DistCsr, HaloStats, RowBlock};
#[cfg(feature = "mpi")]
pub use data_parallel::all_reduce_gradients;
pub use devices::all_reduce_gradients_devices;
#[cfg(feature = "mpi")]
pub use exchange::{HaloExchange, Plan};
#[cfg(feature = "mpi")]
pub use group::{init_process_group, ProcessGroup};
#[cfg(feature = "mpi")]
pub use partition::RowPartition;

/// The error every check of this crate returns: `SparseError::InvalidArgument` naming the
/// operation and what is wrong.
pub(crate) use sparsegrad_backend::error::invalid;
