//! [`SparseSpmm`] on Cube devices, with and without burn's `fusion`: the kernels of `cube::spmm`,
//! the transposed products through the pattern's transposed view on the device.

use super::SparseSpmm;
use burn::backend::{
    tensor::{FloatTensor, IntTensor},
    TensorMetadata,
};
use burn::tensor::Shape;
use sparsegrad_kernels::pattern::TransposeCell;

/// Cube devices: the kernels of `cube::spmm` (16-bit floats widened to f32, as on Flex), the
/// transposed products through the pattern's transposed view on the device.
#[cfg(feature = "cube")]
impl SparseSpmm for crate::cube::CubeBackend {
    unsafe fn csr_spmm(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        cell: &TransposeCell,
    ) -> FloatTensor<Self> {
        use crate::cube::spmm::{spmm, widened, RowSplit};
        let split = RowSplit::of(&crow, cell);
        widened([values, x], |[values, x]| spmm(crow, col, values, x, split.as_ref()))
    }

    unsafe fn csr_spmm_t(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        g: FloatTensor<Self>,
        k: usize,
        transposed: &TransposeCell,
    ) -> FloatTensor<Self> {
        use crate::cube::spmm::{spmm_t, widened, DeviceTranspose};
        let t = DeviceTranspose::of(&crow, &col, k, transposed);
        widened([values, g], |[values, g]| spmm_t(&t, values, g))
    }

    #[allow(clippy::too_many_arguments)]
    unsafe fn csr_spmm_backward(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        g: FloatTensor<Self>,
        x: FloatTensor<Self>,
        transpose: bool,
        k: usize,
        transposed: &TransposeCell,
    ) -> FloatTensor<Self> {
        use crate::sddmm::SparseSddmm;
        use burn::backend::ops::FloatTensorOps;
        use std::sync::Arc;
        // SAFETY: as the default body: the pattern is valid over `k` columns (this method's
        // contract); `x [k, n]` for the forward product's `dX`, `g [k, n]` for the transposed one's.
        // The SDDMM gets a fresh cell (the borrowed one cannot be shared; Cube ignores it).
        let (dx, dv) = unsafe {
            if transpose {
                (
                    Self::csr_spmm(crow.clone(), col.clone(), values, g.clone(), transposed),
                    Self::sparse_sddmm(crow, col, x, g, Arc::new(TransposeCell::new())),
                )
            } else {
                (
                    Self::csr_spmm_t(crow.clone(), col.clone(), values, g.clone(), k, transposed),
                    Self::sparse_sddmm(crow, col, g, x, Arc::new(TransposeCell::new())),
                )
            }
        };
        let len = dx.shape().num_elements();
        Self::float_cat(vec![Self::float_reshape(dx, Shape::new([len])), dv], 0)
    }
}

/// Cube devices under burn's `fusion`: the Cube kernels on the resolved tensors (`cube::fused`).
#[cfg(all(feature = "cube", feature = "fusion"))]
impl SparseSpmm for crate::cube::FusedCube {
    unsafe fn csr_spmm(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        cell: &TransposeCell,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = values.client.clone();
        // SAFETY: the same tensors, resolved: this method's contract is the Cube impl's.
        let out = unsafe { crate::cube::CubeBackend::csr_spmm(int(crow), int(col), float(values), float(x), cell) };
        publish_float(&client, out)
    }

    unsafe fn csr_spmm_t(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        g: FloatTensor<Self>,
        k: usize,
        transposed: &TransposeCell,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = values.client.clone();
        // SAFETY: the same tensors, resolved: this method's contract is the Cube impl's.
        let out = unsafe {
            crate::cube::CubeBackend::csr_spmm_t(int(crow), int(col), float(values), float(g), k, transposed)
        };
        publish_float(&client, out)
    }

    #[allow(clippy::too_many_arguments)]
    unsafe fn csr_spmm_backward(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        g: FloatTensor<Self>,
        x: FloatTensor<Self>,
        transpose: bool,
        k: usize,
        transposed: &TransposeCell,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = values.client.clone();
        // SAFETY: the same tensors, resolved: this method's contract is the Cube impl's.
        let out = unsafe {
            crate::cube::CubeBackend::csr_spmm_backward(
                int(crow),
                int(col),
                float(values),
                float(g),
                float(x),
                transpose,
                k,
                transposed,
            )
        };
        publish_float(&client, out)
    }
}
