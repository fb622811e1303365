//! SDDMM, the other product primitive of the matmul family: `out[j] = a[row j] · b[col j]` on a
//! CSR pattern, the values of `a · bᵀ` sampled at its entries (the values' gradient of a
//! product, and `sampled_addmm`). One burn extension trait, [`SparseSddmm`], holds the forward
//! impl of each backend and, beside them, the backward rule (JAX style).
//!
//! - Forward: Flex runs the host kernel of `sparsegrad-kernels` (torch's `mat2 [d, k]`, given as
//!   a transposed view, is transposed once by the kernel itself); Cube devices the kernel of
//!   `cube::spmm` (under burn's `fusion`, on the resolved tensors); any other backend gets the
//!   trait's default of burn's gathers. These untracked backends ignore the transpose cell.
//! - Backward (`Autodiff`): d/da is `P_g · b` and d/db is `P_gᵀ · a`, `P_g` the pattern carrying
//!   the output gradient, by the SpMM kernels (SpMM and SDDMM are each other's gradient). The
//!   transposed product reads the pattern's transposed view from its [`TransposeCell`], which
//!   the rule keeps.
//!
//! The method is `unsafe` for the reason `SparseSpmm`'s are; `matmul` calls it only with the
//! patterns of checked tensors.

use crate::flex::*;
use crate::spmm::{default, with_pattern};
use burn::backend::flex::FlexTensor;
use burn::backend::{
    backend_extension,
    tensor::{FloatTensor, IntTensor},
    Backend, Flex, TensorMetadata,
};
use sparsegrad_kernels::pattern::TransposeCell;
use sparsegrad_kernels::sddmm::{sddmm, sddmm_bt};
use std::sync::Arc;

/// The sampled product, differentiable on `Autodiff`.
///
/// # Safety
/// As [`crate::spmm::SparseSpmm`]: `crow [m + 1]` and `col [nnz]` form a valid CSR pattern
/// `[m, k]` over `k = b.shape()[0]` columns, `a` is `[m, d]`, `b` is `[k, d]`, and `transposed`
/// is this pattern's cell (or empty).
#[backend_extension(Flex, Cube: cfg(feature = "cube"), Autodiff)]
#[diagnostic::on_unimplemented(
    message = "sparsegrad has no kernels for the backend `{Self}` (`SparseSddmm` is not implemented)",
    label = "no sparsegrad kernels for this backend",
    note = "a `Fusion<CubeBackend>` here means that burn's feature `fusion` is on (burn's default features turn it on) and sparsegrad's is off: turn on sparsegrad's `fusion` with `wgpu`, `sparsegrad = {{ version = \"0.1\", features = [\"wgpu\", \"fusion\"] }}` (see `sparsegrad::guide::gpu`)"
)]
pub trait SparseSddmm: Backend {
    /// `out[j] = a[row j] · b[col j]` for each stored entry: `a [m, d]`, `b [k, d]`, result `[nnz]`.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn sparse_sddmm(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
        transposed: Arc<TransposeCell>,
    ) -> FloatTensor<Self> {
        let _ = transposed;
        default::sddmm::<Self>(crow, col, a, b)
    }
}

/// Cube devices: the kernel of `cube::spmm` (16-bit floats widened to f32, as on Flex).
#[cfg(feature = "cube")]
impl SparseSddmm for crate::cube::CubeBackend {
    unsafe fn sparse_sddmm(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
        transposed: Arc<TransposeCell>,
    ) -> FloatTensor<Self> {
        let _ = transposed;
        crate::cube::spmm::widened([a, b], |[a, b]| crate::cube::spmm::sddmm(crow, col, a, b))
    }
}

/// Cube devices under burn's `fusion`: the Cube kernels on the resolved tensors (`cube::fused`).
#[cfg(all(feature = "cube", feature = "fusion"))]
impl SparseSddmm for crate::cube::FusedCube {
    unsafe fn sparse_sddmm(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
        transposed: Arc<TransposeCell>,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = a.client.clone();
        // SAFETY: the same tensors and cell, resolved: this method's contract (its caller's) is
        // the Cube impl's.
        let out =
            unsafe { crate::cube::CubeBackend::sparse_sddmm(int(crow), int(col), float(a), float(b), transposed) };
        publish_float(&client, out)
    }
}

impl SparseSddmm for Flex {
    unsafe fn sparse_sddmm(
        crow: FlexTensor,
        col: FlexTensor,
        a: FlexTensor,
        b: FlexTensor,
        transposed: Arc<TransposeCell>,
    ) -> FlexTensor {
        let (crow, col) = (contiguous(crow), contiguous(col));
        let nnz = col.shape()[0];
        let [k, d] = [b.shape()[0], a.shape()[1]];
        // torch's `mat2 [d, k]` arrives as a transposed view: the kernel transposes it itself.
        if let Some(bt) = transposed_base(&b) {
            return with_real(
                [a, bt],
                vec![nnz],
                |[a, bt]| with_pattern!("sparse_sddmm", &transposed, &crow, &col, k, |p| sddmm_bt(p, a, bt, d)),
                |[a, bt]| with_pattern!("sparse_sddmm", &transposed, &crow, &col, k, |p| sddmm_bt(p, a, bt, d)),
            );
        }
        with_real(
            [a, b],
            vec![nnz],
            |[a, b]| with_pattern!("sparse_sddmm", &transposed, &crow, &col, k, |p| sddmm(p, a, b, d)),
            |[a, b]| with_pattern!("sparse_sddmm", &transposed, &crow, &col, k, |p| sddmm(p, a, b, d)),
        )
    }
}

/// The backward rule and the tracked forward.
mod autodiff_impl {
    use super::*;
    use crate::spmm::SparseSpmm;
    use burn::backend::autodiff::{
        checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
        grads::Gradients,
        ops::{Backward, Ops, OpsKind},
        Autodiff,
    };

    /// Backward of `sparse_sddmm`; parents `[a, b]`.
    #[derive(Debug)]
    struct Sddmm;

    impl<B: SparseSpmm + SparseSddmm> Backward<B, 2> for Sddmm {
        type State = (IntTensor<B>, IntTensor<B>, FloatTensor<B>, FloatTensor<B>, Arc<TransposeCell>);

        fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
            let (crow, col, a, b, transposed) = ops.state;
            let [a_node, b_node] = ops.parents;
            let g = grads.consume::<B>(&ops.node);
            let k = b.shape()[0];
            // SAFETY (both calls below): the state holds the pattern the forward SDDMM was
            // called with, valid over the rows of `b` (its caller's contract), and its cell;
            // `g [nnz]` are values on it, `b [k, d]` and `a [m, d]`.
            if let Some(node) = a_node {
                // SAFETY: as above.
                let da = unsafe { B::csr_spmm(crow.clone(), col.clone(), g.clone(), b, &transposed) };
                grads.register::<B>(node.id, da);
            }
            if let Some(node) = b_node {
                // SAFETY: as above.
                let db = unsafe { B::csr_spmm_t(crow, col, g, a, k, &transposed) };
                grads.register::<B>(node.id, db);
            }
        }
    }

    impl<B: SparseSpmm + SparseSddmm, C: CheckpointStrategy> SparseSddmm for Autodiff<B, C> {
        unsafe fn sparse_sddmm(
            crow: IntTensor<Self>,
            col: IntTensor<Self>,
            a: FloatTensor<Self>,
            b: FloatTensor<Self>,
            transposed: Arc<TransposeCell>,
        ) -> FloatTensor<Self> {
            let guards = [a.node(), b.node()];
            let (ap, bp) = (a.into_primitive(), b.into_primitive());
            match Sddmm.prepare::<C>(guards).compute_bound().stateful() {
                OpsKind::Tracked(prep) => {
                    // SAFETY: the caller's contract for this method is the inner backend's.
                    let out = unsafe {
                        B::sparse_sddmm(crow.clone(), col.clone(), ap.clone(), bp.clone(), transposed.clone())
                    };
                    prep.finish((crow, col, ap, bp, transposed), out)
                }
                // SAFETY: as above.
                OpsKind::UnTracked(prep) => prep.finish(unsafe { B::sparse_sddmm(crow, col, ap, bp, transposed) }),
            }
        }
    }
}
