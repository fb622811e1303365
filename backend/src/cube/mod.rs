//! burn's Cube backend (one backend type for every CubeCL runtime: wgpu, CUDA, ROCm, Metal; a
//! tensor's device says which): the CubeCL kernels behind the extension traits' Cube impls.
//!
//! Feature `cube`, turned on by a runtime feature (`wgpu`). The impls themselves live beside the
//! Flex ones, in the file of each primitive; a trait method without a kernel here runs its
//! portable default (burn ops on the device, and a host read of the pattern where the default
//! needs one).

#[cfg(not(feature = "wgpu"))]
compile_error!("the feature `cube` needs a runtime feature of sparsegrad-backend: `wgpu`");

pub use burn_cubecl::CubeBackend;

pub(crate) mod softmax;
pub(crate) mod spmm;
