//! burn's Cube backend (one backend type for every CubeCL runtime: wgpu, CUDA, ROCm, Metal; a
//! tensor's device says which): the CubeCL kernels behind the extension traits' Cube impls.
//!
//! Feature `cube`, turned on by a runtime feature (`wgpu`, `cuda`); with `fusion` (burn's, which wraps
//! the backend in `Fusion<..>`) the traits are implemented for [`FusedCube`] by the same
//! kernels, run on the tensors fusion resolves for them (`fused`). The impls themselves live beside the
//! Flex ones, in the file of each primitive; a trait method without a kernel here runs its
//! portable default (burn ops on the device, and a host read of the pattern where the default
//! needs one).

#[cfg(not(any(feature = "wgpu", feature = "cuda")))]
compile_error!("the feature `cube` needs a runtime feature of sparsegrad-backend: `wgpu` or `cuda`");

pub use burn_cubecl::CubeBackend;

/// The Cube backend as burn dispatches it with its `fusion` feature (feature `fusion` here,
/// which must be on whenever burn's is): the extension traits run the Cube kernels there.
#[cfg(feature = "fusion")]
pub type FusedCube = burn::backend::fusion::Fusion<CubeBackend>;

pub mod census;
#[cfg(feature = "fusion")]
pub(crate) mod fused;
pub(crate) mod keys;
pub(crate) mod matches;
pub mod path;
pub(crate) mod plane_ops;
pub(crate) mod sddmm_planes;
pub(crate) mod semi;
pub(crate) mod softmax;
pub(crate) mod softmax_planes;
pub(crate) mod sort;
pub(crate) mod spgemm;
pub(crate) mod spmm;
pub(crate) mod spmm_reduce;
pub(crate) mod spmm_tiled;
