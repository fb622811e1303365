//! SDDMM, the other product primitive of the matmul family, behind the burn extension trait
//! [`SddmmKernels`]: `out[j] = a[row j] · b[col j]` on a CSR pattern, the values of `a · bᵀ`
//! sampled at its entries (the values' gradient of a product, and `sampled_addmm`; its rule
//! lives in `sparsegrad-autodiff`'s `sddmm`).
//!
//! Flex runs the host kernel of `sparsegrad-kernels` (torch's `mat2 [d, k]`, given as a
//! transposed view, is transposed once by the kernel itself); any other backend gets a default
//! of burn's gathers. The method is `unsafe` for the reason `SpmmKernels`' are.

use crate::flex::*;
use crate::spmm::{default, with_pattern};
use burn::backend::flex::FlexTensor;
use burn::backend::{
    backend_extension,
    tensor::{FloatTensor, IntTensor},
    Backend, Flex, TensorMetadata,
};
use sparsegrad_kernels::sddmm::{sddmm, sddmm_bt};

/// The CSR sampled product kernel.
///
/// # Safety
/// As [`crate::spmm::SpmmKernels`]: `crow [m + 1]` and `col [nnz]` form a valid pattern over
/// `k = b.shape()[0]` columns, `a` is `[m, d]` and `b` is `[k, d]`.
#[backend_extension(Flex, Cube: cfg(feature = "cube"))]
#[diagnostic::on_unimplemented(
    message = "sparsegrad has no kernels for the backend `{Self}` (`SddmmKernels` is not implemented)",
    label = "no sparsegrad kernels for this backend",
    note = "a `Fusion<CubeBackend>` here means that burn's feature `fusion` is on (burn's default features turn it on) and sparsegrad's is off: turn on sparsegrad's `fusion` with `wgpu`, `sparsegrad = {{ version = \"0.1\", features = [\"wgpu\", \"fusion\"] }}` (see `sparsegrad::guide::gpu`)"
)]
pub trait SddmmKernels: Backend {
    /// `out[j] = a[row j] · b[col j]` for every stored entry: `a [m, d]`, `b [k, d]`.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn csr_sddmm(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        default::sddmm::<Self>(crow, col, a, b)
    }
}

/// Cube devices: the kernel of `cube::spmm` (16-bit floats widened to f32, as on Flex).
#[cfg(feature = "cube")]
impl SddmmKernels for crate::cube::CubeBackend {
    unsafe fn csr_sddmm(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        crate::cube::spmm::widened([a, b], |[a, b]| crate::cube::spmm::sddmm(crow, col, a, b))
    }
}

/// Cube devices under burn's `fusion`: the Cube kernels on the resolved tensors (`cube::fused`).
#[cfg(all(feature = "cube", feature = "fusion"))]
impl SddmmKernels for crate::cube::FusedCube {
    unsafe fn csr_sddmm(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = a.client.clone();
        // SAFETY: the same tensors, resolved: this method's contract is the Cube impl's.
        let out = unsafe { crate::cube::CubeBackend::csr_sddmm(int(crow), int(col), float(a), float(b)) };
        publish_float(&client, out)
    }
}

impl SddmmKernels for Flex {
    unsafe fn csr_sddmm(crow: FlexTensor, col: FlexTensor, a: FlexTensor, b: FlexTensor) -> FlexTensor {
        let (crow, col) = (contiguous(crow), contiguous(col));
        let nnz = col.shape()[0];
        let [k, d] = [b.shape()[0], a.shape()[1]];
        // torch's `mat2 [d, k]` arrives as a transposed view: the kernel transposes it itself.
        if let Some(bt) = transposed_base(&b) {
            return with_real(
                [a, bt],
                vec![nnz],
                |[a, bt]| with_pattern!(&crow, &col, k, |p| sddmm_bt(p, a, bt, d)),
                |[a, bt]| with_pattern!(&crow, &col, k, |p| sddmm_bt(p, a, bt, d)),
            );
        }
        with_real(
            [a, b],
            vec![nnz],
            |[a, b]| with_pattern!(&crow, &col, k, |p| sddmm(p, a, b, d)),
            |[a, b]| with_pattern!(&crow, &col, k, |p| sddmm(p, a, b, d)),
        )
    }
}
