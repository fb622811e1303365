//! Which kernel a sparse product runs on a Cube device, chosen at each launch: the fast ones of
//! `spmm_tiled` (SpMM staged through shared memory, vector loads) and `sddmm_planes` (SDDMM by
//! plane reductions), or the naive ones of `spmm` (a unit per output element), which every
//! device runs and which stay as the fallback and the reference.
//!
//! The tiled SpMM needs shared memory and cube barriers only, which every CubeCL runtime has, so
//! it runs everywhere. The SDDMM needs plane (warp, subgroup) operations: it runs where the
//! client reports `Plane::Ops`. CubeCL's wgpu runtime reports none for an adapter of device type
//! CPU, lavapipe among them, although lavapipe's Vulkan does have subgroups: there the naive
//! SDDMM runs unless [`KernelPath::Planes`] forces the plane kernel, as the device tests do to
//! check it. The choice is a process-wide switch (hidden, for the tests and for timing the two
//! paths against each other), read from `SPARSEGRAD_CUBE_KERNELS` (`auto`, `naive`, `planes`)
//! at the first launch and changed by [`set_kernel_path`].

use std::sync::atomic::{AtomicU8, Ordering};

use burn_cubecl::cubecl::features::Plane;
use burn_cubecl::tensor::CubeTensor;

/// The environment variable that sets the initial [`KernelPath`].
pub const KERNELS_VAR: &str = "SPARSEGRAD_CUBE_KERNELS";

/// Which kernels the sparse products launch (see the module docs).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelPath {
    /// The fast kernels where the device has what they need, else the naive ones (the default).
    Auto,
    /// The naive kernels everywhere: the fallback of a device without planes.
    Naive,
    /// The fast kernels, the plane ones even where the client reports no plane operations (a
    /// device that has them without saying so, as lavapipe: only for tests and timing).
    Planes,
}

// 0: not yet read from the environment; else 1 + the path's index.
static PATH: AtomicU8 = AtomicU8::new(0);

impl KernelPath {
    fn code(self) -> u8 {
        match self {
            Self::Auto => 1,
            Self::Naive => 2,
            Self::Planes => 3,
        }
    }

    fn from_code(code: u8) -> Self {
        match code {
            2 => Self::Naive,
            3 => Self::Planes,
            _ => Self::Auto,
        }
    }
}

/// The path in force: the last [`set_kernel_path`], else `SPARSEGRAD_CUBE_KERNELS`, else `Auto`.
#[doc(hidden)]
pub fn kernel_path() -> KernelPath {
    match PATH.load(Ordering::Relaxed) {
        0 => {
            let path = match std::env::var(KERNELS_VAR).as_deref() {
                Ok("naive") => KernelPath::Naive,
                Ok("planes") => KernelPath::Planes,
                _ => KernelPath::Auto,
            };
            // A racing `set_kernel_path` wins: only an unset switch takes the environment's.
            let _ = PATH.compare_exchange(0, path.code(), Ordering::Relaxed, Ordering::Relaxed);
            KernelPath::from_code(PATH.load(Ordering::Relaxed))
        }
        code => KernelPath::from_code(code),
    }
}

/// Sets the path for the launches that follow, in the whole process, and returns the one it
/// replaces (a test restores it when done).
#[doc(hidden)]
pub fn set_kernel_path(path: KernelPath) -> KernelPath {
    let old = kernel_path();
    PATH.store(path.code(), Ordering::Relaxed);
    old
}

/// Whether SpMM runs the tiled kernel: everywhere but under [`KernelPath::Naive`].
pub(crate) fn tiled_spmm() -> bool {
    kernel_path() != KernelPath::Naive
}

/// Whether the plane kernels (SDDMM, the narrow segment softmax) run on `t`'s device: where its
/// client reports plane operations, or where the switch forces them.
pub(crate) fn planes(t: &CubeTensor) -> bool {
    match kernel_path() {
        KernelPath::Naive => false,
        KernelPath::Planes => true,
        KernelPath::Auto => t.client.features().plane.contains(Plane::Ops),
    }
}

/// The width of the vectors a kernel reads rows of `n` elements of `t`'s type in: the widest of
/// 4, 2 and 1 that divides `n` and that the device loads in one go (4 for f32 everywhere; f64 may
/// get 2, 16 bytes, where the device reads no wider), so that every row starts on a vector.
pub(crate) fn vector_width(t: &CubeTensor, n: usize) -> usize {
    let offered: Vec<usize> = t.client.io_optimized_vector_sizes(t.dtype.size()).collect();
    [4, 2].into_iter().find(|&w| n.is_multiple_of(w) && offered.contains(&w)).unwrap_or(1)
}
