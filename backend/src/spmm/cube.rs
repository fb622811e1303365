//! [`SparseSpmm`] on Cube devices, with and without burn's `fusion`: the kernels of `cube::spmm`,
//! the transposed products through the pattern's transposed view on the device.

use super::SparseSpmm;
use crate::operand::{spmm_backward_dims, spmm_dims, spmm_t_dims, CsrOperand};
use burn::backend::{tensor::FloatTensor, TensorMetadata};
use burn::tensor::Shape;

/// Cube devices: the kernels of `cube::spmm` (16-bit floats widened to f32, as on Flex), the
/// transposed products through the pattern's transposed view on the device.
#[cfg(feature = "cube")]
impl SparseSpmm for crate::cube::CubeBackend {
    fn csr_spmm(pattern: CsrOperand<Self>, values: FloatTensor<Self>, x: FloatTensor<Self>) -> FloatTensor<Self> {
        use crate::cube::spmm::{spmm, widened, RowSplit};
        spmm_dims("csr_spmm", &pattern, &values, &x);
        let (crow, col, _, cell) = pattern.into_parts();
        let split = RowSplit::of(&crow, &cell);
        widened([values, x], |[values, x]| spmm(crow, col, values, x, split.as_ref()))
    }

    fn csr_spmm_t(pattern: CsrOperand<Self>, values: FloatTensor<Self>, g: FloatTensor<Self>) -> FloatTensor<Self> {
        use crate::cube::spmm::{spmm_t, widened, DeviceTranspose};
        spmm_t_dims("csr_spmm_t", &pattern, &values, &g);
        let (crow, col, k, cell) = pattern.into_parts();
        let t = DeviceTranspose::of(&crow, &col, k, &cell);
        widened([values, g], |[values, g]| spmm_t(&t, values, g))
    }

    fn csr_spmm_backward(
        pattern: CsrOperand<Self>,
        values: FloatTensor<Self>,
        g: FloatTensor<Self>,
        x: FloatTensor<Self>,
        transpose: bool,
    ) -> FloatTensor<Self> {
        use crate::sddmm::SparseSddmm;
        use burn::backend::ops::FloatTensorOps;
        spmm_backward_dims("csr_spmm_backward", &pattern, &values, &g, &x, transpose);
        // As the default body, the SDDMM by Cube's kernel (on the same pattern and cell).
        let (dx, dv) = if transpose {
            (Self::csr_spmm(pattern.clone(), values, g.clone()), Self::sparse_sddmm(pattern, x, g))
        } else {
            (Self::csr_spmm_t(pattern.clone(), values, g.clone()), Self::sparse_sddmm(pattern, g, x))
        };
        let len = dx.shape().num_elements();
        Self::float_cat(vec![Self::float_reshape(dx, Shape::new([len])), dv], 0)
    }
}

/// Cube devices under burn's `fusion`: the Cube kernels on the resolved tensors (`cube::fused`).
#[cfg(all(feature = "cube", feature = "fusion"))]
impl SparseSpmm for crate::cube::FusedCube {
    fn csr_spmm(pattern: CsrOperand<Self>, values: FloatTensor<Self>, x: FloatTensor<Self>) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = values.client.clone();
        let out = crate::cube::CubeBackend::csr_spmm(pattern.map(int), float(values), float(x));
        publish_float(&client, out)
    }

    fn csr_spmm_t(pattern: CsrOperand<Self>, values: FloatTensor<Self>, g: FloatTensor<Self>) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = values.client.clone();
        let out = crate::cube::CubeBackend::csr_spmm_t(pattern.map(int), float(values), float(g));
        publish_float(&client, out)
    }

    fn csr_spmm_backward(
        pattern: CsrOperand<Self>,
        values: FloatTensor<Self>,
        g: FloatTensor<Self>,
        x: FloatTensor<Self>,
        transpose: bool,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = values.client.clone();
        let out =
            crate::cube::CubeBackend::csr_spmm_backward(pattern.map(int), float(values), float(g), float(x), transpose);
        publish_float(&client, out)
    }
}
