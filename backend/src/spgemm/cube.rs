//! [`SparseSpgemm`] on Cube devices, with and without burn's `fusion`: the kernels of
//! `cube::spgemm` where the indices fit them, the portable defaults elsewhere.

use super::{default, SparseSpgemm};
use burn::backend::tensor::{FloatTensor, IntTensor};

/// Cube devices: the kernels of `cube::spgemm` for 32- and 64-bit indices (the portable
/// defaults for others, and for a whole product too large for the device sort).
#[cfg(feature = "cube")]
impl SparseSpgemm for crate::cube::CubeBackend {
    unsafe fn csr_spgemm(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        a_values: FloatTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        b_values: FloatTensor<Self>,
        c_crow: IntTensor<Self>,
        c_col: IntTensor<Self>,
        n: usize,
    ) -> FloatTensor<Self> {
        use crate::cube::spgemm::{takes, values_on, DevicePattern};
        if !takes(&[&a_crow, &a_col, &b_crow, &b_col, &c_crow, &c_col]) {
            // SAFETY: this method's contract.
            return unsafe {
                default::csr_spgemm::<Self>(a_crow, a_col, a_values, b_crow, b_col, b_values, c_crow, c_col, n)
            };
        }
        let pattern = |crow, col| DevicePattern { crow, col };
        values_on(pattern(a_crow, a_col), a_values, pattern(b_crow, b_col), b_values, pattern(c_crow, c_col))
    }

    unsafe fn csr_spgemm_product(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        a_values: FloatTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        b_values: FloatTensor<Self>,
        n: usize,
    ) -> (IntTensor<Self>, IntTensor<Self>, FloatTensor<Self>) {
        use crate::cube::spgemm::{product, takes};
        if takes(&[&a_crow, &a_col, &b_crow, &b_col]) {
            let args =
                (a_crow.clone(), a_col.clone(), a_values.clone(), b_crow.clone(), b_col.clone(), b_values.clone());
            if let Some(c) = product(args.0, args.1, args.2, args.3, args.4, args.5, n) {
                return c;
            }
        }
        // SAFETY: this method's contract.
        unsafe { default::csr_spgemm_product::<Self>(a_crow, a_col, a_values, b_crow, b_col, b_values, n) }
    }

    unsafe fn csr_spgemm_grad_a(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        b_values: FloatTensor<Self>,
        c_crow: IntTensor<Self>,
        c_col: IntTensor<Self>,
        g: FloatTensor<Self>,
        n: usize,
    ) -> FloatTensor<Self> {
        use crate::cube::spgemm::{gradient_a, takes, DevicePattern};
        if !takes(&[&a_crow, &a_col, &b_crow, &b_col, &c_crow, &c_col]) {
            // SAFETY: this method's contract.
            return unsafe {
                default::csr_spgemm_grad_a::<Self>(a_crow, a_col, b_crow, b_col, b_values, c_crow, c_col, g, n)
            };
        }
        let pattern = |crow, col| DevicePattern { crow, col };
        gradient_a(pattern(a_crow, a_col), pattern(b_crow, b_col), b_values, pattern(c_crow, c_col), g)
    }

    unsafe fn csr_spgemm_grad_b(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        a_values: FloatTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        c_crow: IntTensor<Self>,
        c_col: IntTensor<Self>,
        g: FloatTensor<Self>,
        n: usize,
    ) -> FloatTensor<Self> {
        use crate::cube::spgemm::{gradient_b, takes, DevicePattern};
        if !takes(&[&a_crow, &a_col, &b_crow, &b_col, &c_crow, &c_col]) {
            // SAFETY: this method's contract.
            return unsafe {
                default::csr_spgemm_grad_b::<Self>(a_crow, a_col, a_values, b_crow, b_col, c_crow, c_col, g, n)
            };
        }
        let pattern = |crow, col| DevicePattern { crow, col };
        gradient_b(pattern(a_crow, a_col), a_values, pattern(b_crow, b_col), pattern(c_crow, c_col), g)
    }
}

/// Cube devices under burn's `fusion`: the Cube kernels on the resolved tensors (`cube::fused`).
#[cfg(all(feature = "cube", feature = "fusion"))]
impl SparseSpgemm for crate::cube::FusedCube {
    #[allow(clippy::too_many_arguments)]
    unsafe fn csr_spgemm(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        a_values: FloatTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        b_values: FloatTensor<Self>,
        c_crow: IntTensor<Self>,
        c_col: IntTensor<Self>,
        n: usize,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = a_values.client.clone();
        // SAFETY: the same tensors, resolved: this method's contract is the Cube impl's.
        let out = unsafe {
            crate::cube::CubeBackend::csr_spgemm(
                int(a_crow),
                int(a_col),
                float(a_values),
                int(b_crow),
                int(b_col),
                float(b_values),
                int(c_crow),
                int(c_col),
                n,
            )
        };
        publish_float(&client, out)
    }

    unsafe fn csr_spgemm_product(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        a_values: FloatTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        b_values: FloatTensor<Self>,
        n: usize,
    ) -> (IntTensor<Self>, IntTensor<Self>, FloatTensor<Self>) {
        use crate::cube::fused::{float, int, publish, Out};
        let client = a_values.client.clone();
        // SAFETY: the same tensors, resolved: this method's contract is the Cube impl's.
        let (crow, col, values) = unsafe {
            crate::cube::CubeBackend::csr_spgemm_product(
                int(a_crow),
                int(a_col),
                float(a_values),
                int(b_crow),
                int(b_col),
                float(b_values),
                n,
            )
        };
        let [crow, col, values] = publish(&client, [Out::Int(crow), Out::Int(col), Out::Float(values)]);
        (crow, col, values)
    }

    #[allow(clippy::too_many_arguments)]
    unsafe fn csr_spgemm_grad_a(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        b_values: FloatTensor<Self>,
        c_crow: IntTensor<Self>,
        c_col: IntTensor<Self>,
        g: FloatTensor<Self>,
        n: usize,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = g.client.clone();
        // SAFETY: the same tensors, resolved: this method's contract is the Cube impl's.
        let out = unsafe {
            crate::cube::CubeBackend::csr_spgemm_grad_a(
                int(a_crow),
                int(a_col),
                int(b_crow),
                int(b_col),
                float(b_values),
                int(c_crow),
                int(c_col),
                float(g),
                n,
            )
        };
        publish_float(&client, out)
    }

    #[allow(clippy::too_many_arguments)]
    unsafe fn csr_spgemm_grad_b(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        a_values: FloatTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        c_crow: IntTensor<Self>,
        c_col: IntTensor<Self>,
        g: FloatTensor<Self>,
        n: usize,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = g.client.clone();
        // SAFETY: the same tensors, resolved: this method's contract is the Cube impl's.
        let out = unsafe {
            crate::cube::CubeBackend::csr_spgemm_grad_b(
                int(a_crow),
                int(a_col),
                float(a_values),
                int(b_crow),
                int(b_col),
                int(c_crow),
                int(c_col),
                float(g),
                n,
            )
        };
        publish_float(&client, out)
    }
}
