//! The Cube impls of [`SemiMatmul`]'s kernels: the kernels of `cube::semi`, which decode the
//! metadata words on the device (words stored as i16 take [`default`](super::default)'s CSR
//! bodies: a device that stores i16 has no kernels here), and under burn's `fusion` the same
//! kernels on the resolved tensors.
//!
//! [`SemiMatmul`]: super::SemiMatmul

use super::SemiMatmul;
use burn::backend::tensor::{FloatTensor, IntTensor};

/// Cube devices: the kernels of `cube::semi`, which decode the metadata words on the device
/// (words stored as i16 take the default: a device that stores i16 has no kernels here).
impl SemiMatmul for crate::cube::CubeBackend {
    fn semi_mm(
        values: FloatTensor<Self>,
        metadata: IntTensor<Self>,
        cols: usize,
        b: FloatTensor<Self>,
        transposed: bool,
    ) -> FloatTensor<Self> {
        use crate::cube::semi::{semi_product, takes_metadata, SemiProduct};
        if !takes_metadata(&metadata) {
            return super::default::semi_mm::<Self>(values, metadata, cols, b, transposed);
        }
        semi_product(values, metadata, cols, b, transposed, SemiProduct::Forward)
    }

    fn semi_mm_t(
        values: FloatTensor<Self>,
        metadata: IntTensor<Self>,
        cols: usize,
        g: FloatTensor<Self>,
        transposed: bool,
    ) -> FloatTensor<Self> {
        use crate::cube::semi::{semi_product, takes_metadata, SemiProduct};
        if !takes_metadata(&metadata) {
            return super::default::semi_mm_t::<Self>(values, metadata, cols, g, transposed);
        }
        semi_product(values, metadata, cols, g, transposed, SemiProduct::Transposed)
    }

    fn semi_sddmm(
        metadata: IntTensor<Self>,
        cols: usize,
        g: FloatTensor<Self>,
        b: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        use crate::cube::semi::takes_metadata;
        if !takes_metadata(&metadata) {
            return super::default::semi_sddmm::<Self>(metadata, cols, g, b);
        }
        crate::cube::semi::semi_sddmm(metadata, cols, g, b)
    }
}

/// Cube devices under burn's `fusion`: the Cube kernels on the resolved tensors (`cube::fused`).
#[cfg(all(feature = "cube", feature = "fusion"))]
impl SemiMatmul for crate::cube::FusedCube {
    fn semi_mm(
        values: FloatTensor<Self>,
        metadata: IntTensor<Self>,
        cols: usize,
        b: FloatTensor<Self>,
        transposed: bool,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = values.client.clone();
        publish_float(
            &client,
            crate::cube::CubeBackend::semi_mm(float(values), int(metadata), cols, float(b), transposed),
        )
    }

    fn semi_mm_t(
        values: FloatTensor<Self>,
        metadata: IntTensor<Self>,
        cols: usize,
        g: FloatTensor<Self>,
        transposed: bool,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = values.client.clone();
        publish_float(
            &client,
            crate::cube::CubeBackend::semi_mm_t(float(values), int(metadata), cols, float(g), transposed),
        )
    }

    fn semi_sddmm(
        metadata: IntTensor<Self>,
        cols: usize,
        g: FloatTensor<Self>,
        b: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = g.client.clone();
        publish_float(&client, crate::cube::CubeBackend::semi_sddmm(int(metadata), cols, float(g), float(b)))
    }
}
