//! [`SparseSpgemm`] on Cube devices, with and without burn's `fusion`: the kernels of
//! `cube::spgemm` where the indices fit them, the portable defaults elsewhere.

use super::{default, SparseSpgemm};
use crate::operand::{spgemm_dims, CsrOperand};
use burn::backend::tensor::{FloatTensor, IntTensor};

/// Cube devices: the kernels of `cube::spgemm` for 32- and 64-bit indices (the portable
/// defaults for others, and for a whole product too large for the device sort).
#[cfg(feature = "cube")]
impl SparseSpgemm for crate::cube::CubeBackend {
    fn csr_spgemm(
        a: CsrOperand<Self>,
        a_values: FloatTensor<Self>,
        b: CsrOperand<Self>,
        b_values: FloatTensor<Self>,
        c: CsrOperand<Self>,
    ) -> FloatTensor<Self> {
        use crate::cube::spgemm::{takes, values_on};
        spgemm_dims("csr_spgemm", &a, &b, Some(&c), &[("a_values", &a_values, &a), ("b_values", &b_values, &b)]);
        if !takes(&[a.crow(), a.col(), b.crow(), b.col(), c.crow(), c.col()]) {
            return default::csr_spgemm::<Self>(a, a_values, b, b_values, c);
        }
        let [a, b, c] = [a, b, c].map(device_pattern);
        values_on(a, a_values, b, b_values, c)
    }

    fn csr_spgemm_product(
        a: CsrOperand<Self>,
        a_values: FloatTensor<Self>,
        b: CsrOperand<Self>,
        b_values: FloatTensor<Self>,
    ) -> (IntTensor<Self>, IntTensor<Self>, FloatTensor<Self>) {
        use crate::cube::spgemm::{product, takes};
        spgemm_dims("csr_spgemm_product", &a, &b, None, &[("a_values", &a_values, &a), ("b_values", &b_values, &b)]);
        if takes(&[a.crow(), a.col(), b.crow(), b.col()]) {
            let (a_crow, a_col, b_crow, b_col) = (a.crow().clone(), a.col().clone(), b.crow().clone(), b.col().clone());
            if let Some(c) = product(a_crow, a_col, a_values.clone(), b_crow, b_col, b_values.clone(), b.ncols()) {
                return c;
            }
        }
        default::csr_spgemm_product::<Self>(a, a_values, b, b_values)
    }

    fn csr_spgemm_grad_a(
        a: CsrOperand<Self>,
        b: CsrOperand<Self>,
        b_values: FloatTensor<Self>,
        c: CsrOperand<Self>,
        g: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        use crate::cube::spgemm::{gradient_a, takes};
        spgemm_dims("csr_spgemm_grad_a", &a, &b, Some(&c), &[("b_values", &b_values, &b), ("g", &g, &c)]);
        if !takes(&[a.crow(), a.col(), b.crow(), b.col(), c.crow(), c.col()]) {
            return default::csr_spgemm_grad_a::<Self>(a, b, b_values, c, g);
        }
        let [a, b, c] = [a, b, c].map(device_pattern);
        gradient_a(a, b, b_values, c, g)
    }

    fn csr_spgemm_grad_b(
        a: CsrOperand<Self>,
        a_values: FloatTensor<Self>,
        b: CsrOperand<Self>,
        c: CsrOperand<Self>,
        g: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        use crate::cube::spgemm::{gradient_b, takes};
        spgemm_dims("csr_spgemm_grad_b", &a, &b, Some(&c), &[("a_values", &a_values, &a), ("g", &g, &c)]);
        if !takes(&[a.crow(), a.col(), b.crow(), b.col(), c.crow(), c.col()]) {
            return default::csr_spgemm_grad_b::<Self>(a, a_values, b, c, g);
        }
        let [a, b, c] = [a, b, c].map(device_pattern);
        gradient_b(a, a_values, b, c, g)
    }
}

/// A pattern's index tensors as the Cube kernels take them.
#[cfg(feature = "cube")]
fn device_pattern(p: CsrOperand<crate::cube::CubeBackend>) -> crate::cube::spgemm::DevicePattern {
    let (crow, col, _, _) = p.into_parts();
    crate::cube::spgemm::DevicePattern { crow, col }
}

/// Cube devices under burn's `fusion`: the Cube kernels on the resolved tensors (`cube::fused`).
#[cfg(all(feature = "cube", feature = "fusion"))]
impl SparseSpgemm for crate::cube::FusedCube {
    fn csr_spgemm(
        a: CsrOperand<Self>,
        a_values: FloatTensor<Self>,
        b: CsrOperand<Self>,
        b_values: FloatTensor<Self>,
        c: CsrOperand<Self>,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = a_values.client.clone();
        let out =
            crate::cube::CubeBackend::csr_spgemm(a.map(int), float(a_values), b.map(int), float(b_values), c.map(int));
        publish_float(&client, out)
    }

    fn csr_spgemm_product(
        a: CsrOperand<Self>,
        a_values: FloatTensor<Self>,
        b: CsrOperand<Self>,
        b_values: FloatTensor<Self>,
    ) -> (IntTensor<Self>, IntTensor<Self>, FloatTensor<Self>) {
        use crate::cube::fused::{float, int, publish, Out};
        let client = a_values.client.clone();
        let (crow, col, values) =
            crate::cube::CubeBackend::csr_spgemm_product(a.map(int), float(a_values), b.map(int), float(b_values));
        let [crow, col, values] = publish(&client, [Out::Int(crow), Out::Int(col), Out::Float(values)]);
        (crow, col, values)
    }

    fn csr_spgemm_grad_a(
        a: CsrOperand<Self>,
        b: CsrOperand<Self>,
        b_values: FloatTensor<Self>,
        c: CsrOperand<Self>,
        g: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = g.client.clone();
        let out =
            crate::cube::CubeBackend::csr_spgemm_grad_a(a.map(int), b.map(int), float(b_values), c.map(int), float(g));
        publish_float(&client, out)
    }

    fn csr_spgemm_grad_b(
        a: CsrOperand<Self>,
        a_values: FloatTensor<Self>,
        b: CsrOperand<Self>,
        c: CsrOperand<Self>,
        g: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = g.client.clone();
        let out =
            crate::cube::CubeBackend::csr_spgemm_grad_b(a.map(int), float(a_values), b.map(int), c.map(int), float(g));
        publish_float(&client, out)
    }
}
