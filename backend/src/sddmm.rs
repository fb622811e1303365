//! SDDMM, the other product primitive of the matmul family: `out[j] = a[row j] · b[col j]` on a
//! CSR pattern, the values of `a · bᵀ` sampled at its entries (the values' gradient of a
//! product, and `sampled_addmm`). One burn extension trait, [`SparseSddmm`], holds the forward
//! impl of each backend and, beside them, the backward rule (JAX style).
//!
//! - Forward: Flex runs the host kernel of `sparsegrad-kernels` (torch's `mat2 [d, k]`, given as
//!   a transposed view, is transposed once by the kernel itself); Cube devices the kernel of
//!   `cube::spmm` (under burn's `fusion`, on the resolved tensors); any other backend gets the
//!   trait's default of burn's gathers. Of the pattern's cell, Flex uses only the record of its
//!   check.
//! - Backward (`Autodiff`): d/da is `P_g · b` and d/db is `P_gᵀ · a`, `P_g` the pattern carrying
//!   the output gradient, by the SpMM kernels (SpMM and SDDMM are each other's gradient). The
//!   transposed product reads the pattern's transposed view from its cell (in the
//!   [`CsrOperand`], which the rule keeps).
//!
//! The method is safe: it takes the pattern as a [`CsrOperand`], which the host kernel checks
//! before it walks it (once per index storage on Flex) and the device kernel reads through
//! checked launches, and it checks the dense operands' shapes against it (a panic naming them).

use crate::flex::*;
use crate::operand::{sddmm_dims, CsrOperand};
use crate::spmm::{default, with_pattern};
use burn::backend::flex::FlexTensor;
use burn::backend::{backend_extension, tensor::FloatTensor, Backend, Flex};
use sparsegrad_kernels::sddmm::{sddmm, sddmm_bt};

/// The sampled product, differentiable on `Autodiff`.
#[backend_extension(Flex, Cube: cfg(feature = "cube"), Autodiff)]
#[diagnostic::on_unimplemented(
    message = "sparsegrad has no kernels for the backend `{Self}` (`SparseSddmm` is not implemented)",
    label = "no sparsegrad kernels for this backend",
    note = "a `Fusion<CubeBackend>` here means that burn's feature `fusion` is on (burn's default features turn it on) and sparsegrad's is off: turn on sparsegrad's `fusion` with `wgpu`, `sparsegrad = {{ version = \"0.1\", features = [\"wgpu\", \"fusion\"] }}` (see `sparsegrad::guide::gpu`)"
)]
pub trait SparseSddmm: Backend {
    /// `out[j] = a[row j] · b[col j]` for each stored entry of `pattern [m, k]`: `a [m, d]`,
    /// `b [k, d]`, result `[nnz]`. A pattern that is not valid CSR, or operands of other shapes,
    /// are a panic that names them.
    fn sparse_sddmm(
        #[extension_type] pattern: CsrOperand<Self>,
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        sddmm_dims("sparse_sddmm", &pattern, &a, &b);
        default::sddmm::<Self>("sparse_sddmm", pattern, a, b)
    }
}

/// Cube devices: the kernel of `cube::spmm` (16-bit floats widened to f32, as on Flex).
#[cfg(feature = "cube")]
impl SparseSddmm for crate::cube::CubeBackend {
    fn sparse_sddmm(pattern: CsrOperand<Self>, a: FloatTensor<Self>, b: FloatTensor<Self>) -> FloatTensor<Self> {
        sddmm_dims("sparse_sddmm", &pattern, &a, &b);
        let (crow, col, _, _) = pattern.into_parts();
        crate::cube::spmm::widened([a, b], |[a, b]| crate::cube::spmm::sddmm(crow, col, a, b))
    }
}

/// Cube devices under burn's `fusion`: the Cube kernels on the resolved tensors (`cube::fused`).
#[cfg(all(feature = "cube", feature = "fusion"))]
impl SparseSddmm for crate::cube::FusedCube {
    fn sparse_sddmm(pattern: CsrOperand<Self>, a: FloatTensor<Self>, b: FloatTensor<Self>) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = a.client.clone();
        let out = crate::cube::CubeBackend::sparse_sddmm(pattern.map(int), float(a), float(b));
        publish_float(&client, out)
    }
}

impl SparseSddmm for Flex {
    fn sparse_sddmm(pattern: CsrOperand<Self>, a: FlexTensor, b: FlexTensor) -> FlexTensor {
        let d = sddmm_dims("sparse_sddmm", &pattern, &a, &b);
        let (nnz, k) = (pattern.nnz(), pattern.ncols());
        let (crow, col, _, cell) = pattern.into_parts();
        let (crow, col) = (contiguous(crow), contiguous(col));
        // torch's `mat2 [d, k]` arrives as a transposed view: the kernel transposes it itself.
        if let Some(bt) = transposed_base(&b) {
            return with_real(
                [a, bt],
                vec![nnz],
                |[a, bt]| with_pattern!("sparse_sddmm", &cell, &crow, &col, k, |p| sddmm_bt(p, a, bt, d)),
                |[a, bt]| with_pattern!("sparse_sddmm", &cell, &crow, &col, k, |p| sddmm_bt(p, a, bt, d)),
            );
        }
        with_real(
            [a, b],
            vec![nnz],
            |[a, b]| with_pattern!("sparse_sddmm", &cell, &crow, &col, k, |p| sddmm(p, a, b, d)),
            |[a, b]| with_pattern!("sparse_sddmm", &cell, &crow, &col, k, |p| sddmm(p, a, b, d)),
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
        type State = (CsrOperand<B>, FloatTensor<B>, FloatTensor<B>);

        fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
            let (pattern, a, b) = ops.state;
            let [a_node, b_node] = ops.parents;
            let g = grads.consume::<B>(&ops.node);
            // The forward's pattern (with its cell) and operands; `g [nnz]` are values on it.
            if let Some(node) = a_node {
                let da = B::csr_spmm(pattern.clone(), g.clone(), b);
                grads.register::<B>(node.id, da);
            }
            if let Some(node) = b_node {
                let db = B::csr_spmm_t(pattern, g, a);
                grads.register::<B>(node.id, db);
            }
        }
    }

    impl<B: SparseSpmm + SparseSddmm, C: CheckpointStrategy> SparseSddmm for Autodiff<B, C> {
        fn sparse_sddmm(pattern: CsrOperand<Self>, a: FloatTensor<Self>, b: FloatTensor<Self>) -> FloatTensor<Self> {
            let pattern = pattern.retag::<B>();
            let guards = [a.node(), b.node()];
            let (ap, bp) = (a.into_primitive(), b.into_primitive());
            match Sddmm.prepare::<C>(guards).compute_bound().stateful() {
                OpsKind::Tracked(prep) => {
                    // The inner call checks the shapes the backward relies on.
                    let out = B::sparse_sddmm(pattern.clone(), ap.clone(), bp.clone());
                    prep.finish((pattern, ap, bp), out)
                }
                OpsKind::UnTracked(prep) => prep.finish(B::sparse_sddmm(pattern, ap, bp)),
            }
        }
    }
}
