//! The coalescing plan of COO indices computed where they live, behind the extension trait
//! [`CoalesceKernels`]: on a Cube device the keys are sorted and numbered there
//! (`cube::coalesce`), so `coalesce` reads back one integer (the number of unique entries)
//! rather than every index; Flex (whose indices are host memory already) and the other
//! backends answer `None`, and `SparseTensor::coalesce` plans on the host. Index tensors are
//! never tracked, so autodiff devices delegate to their inner backend.

use burn::backend::{backend_extension, tensor::IntTensor, Backend, Flex};

/// Coalescing plans on the indices' device.
#[backend_extension(Flex, Cube: cfg(feature = "cube"), Autodiff)]
pub trait CoalesceKernels: Backend {
    /// For valid COO indices `[sizes.len(), n]` over `sizes` (their product fits i64, `n >= 1`):
    /// `Some(Some(..))`, the sorted unique coordinates `[sizes.len(), unique]` in the indices'
    /// dtype and each entry's position among them (`[n]`, i32 or i64); `Some(None)` where the
    /// indices already are sorted and unique; `None` where the backend plans on the host.
    fn coalesce_plan(indices: IntTensor<Self>, sizes: &[usize]) -> Option<Option<(IntTensor<Self>, IntTensor<Self>)>> {
        let _ = (indices, sizes);
        None
    }
}

impl CoalesceKernels for Flex {}

/// Cube devices: the device sort of `cube::coalesce`.
#[cfg(feature = "cube")]
impl CoalesceKernels for crate::cube::CubeBackend {
    fn coalesce_plan(indices: IntTensor<Self>, sizes: &[usize]) -> Option<Option<(IntTensor<Self>, IntTensor<Self>)>> {
        // The kernels take 32- and 64-bit indices (wgpu has no narrower integers).
        if !matches!(indices.dtype, burn::tensor::DType::I32 | burn::tensor::DType::I64) {
            return None;
        }
        Some(crate::cube::coalesce::coalesce_plan(indices, sizes))
    }
}

/// Cube devices under burn's `fusion`: planned on the host.
#[cfg(all(feature = "cube", feature = "fusion"))]
impl CoalesceKernels for crate::cube::FusedCube {}

mod autodiff_impl {
    use super::*;
    use burn::backend::autodiff::{checkpoint::strategy::CheckpointStrategy, Autodiff};

    impl<B: CoalesceKernels, C: CheckpointStrategy> CoalesceKernels for Autodiff<B, C> {
        fn coalesce_plan(
            indices: IntTensor<Self>,
            sizes: &[usize],
        ) -> Option<Option<(IntTensor<Self>, IntTensor<Self>)>> {
            B::coalesce_plan(indices, sizes)
        }
    }
}

/// The merged coordinates and each entry's position among them.
pub(crate) type Merge = (burn::Tensor<2, burn::tensor::Int>, burn::Tensor<1, burn::tensor::Int>);

/// The plan of [`CoalesceKernels::coalesce_plan`] for an Int tensor of any device.
pub(crate) fn device_coalesce_plan(
    indices: &burn::Tensor<2, burn::tensor::Int>,
    sizes: &[usize],
) -> Option<Option<Merge>> {
    let plan = <burn::backend::Dispatch as CoalesceKernels>::coalesce_plan(indices.clone().into_dispatch(), sizes)?;
    Some(plan.map(|(coords, targets)| (burn::Tensor::from_dispatch(coords), burn::Tensor::from_dispatch(targets))))
}
