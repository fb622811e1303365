//! The SDDMM primitive, `sparse_sddmm`: `out[j] = a[row j] · b[col j]` on a CSR pattern, with its
//! backward rule beside its forward (JAX style): d/da is `P_g · b` and d/db is `P_gᵀ · a`, `P_g`
//! the pattern carrying the output gradient, by the SpMM kernels (SpMM and SDDMM are each
//! other's gradient). The transposed product reads the pattern's transposed view from its
//! [`TransposeCell`], which the rule keeps.
//!
//! The primitive is `unsafe` for the reason `sparse_spmm` is; `matmul` calls it only with the
//! patterns of checked tensors.

use burn::backend::autodiff::{
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
    Autodiff,
};
use burn::backend::{
    backend_extension,
    tensor::{FloatTensor, IntTensor},
    Backend, Flex, TensorMetadata,
};
use sparsegrad_backend::sddmm::SddmmKernels;
use sparsegrad_backend::spmm::SpmmKernels;
use sparsegrad_kernels::pattern::TransposeCell;
use std::sync::Arc;

/// The differentiable sampled product.
///
/// # Safety
/// `crow [m + 1]` and `col [nnz]` form a valid CSR pattern `[m, k]` (as `SpmmKernels`
/// requires), `a` is `[m, d]`, `b` is `[k, d]`, and `transposed` is this pattern's cell (or
/// empty).
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
    ) -> FloatTensor<Self>;
}

/// The untracked backends run the forward kernels.
macro_rules! untracked {
    ($backend:ty) => {
        impl SparseSddmm for $backend {
            unsafe fn sparse_sddmm(
                crow: IntTensor<Self>,
                col: IntTensor<Self>,
                a: FloatTensor<Self>,
                b: FloatTensor<Self>,
                transposed: Arc<TransposeCell>,
            ) -> FloatTensor<Self> {
                let _ = transposed;
                // SAFETY: this method's contract is the kernel's.
                unsafe { Self::csr_sddmm(crow, col, a, b) }
            }
        }
    };
}
untracked!(Flex);
#[cfg(feature = "cube")]
untracked!(sparsegrad_backend::cube::CubeBackend);
#[cfg(all(feature = "cube", feature = "fusion"))]
untracked!(sparsegrad_backend::cube::FusedCube);

/// Backward of `sparse_sddmm`; parents `[a, b]`.
#[derive(Debug)]
struct Sddmm;

impl<B: SpmmKernels + SddmmKernels> Backward<B, 2> for Sddmm {
    type State = (IntTensor<B>, IntTensor<B>, FloatTensor<B>, FloatTensor<B>, Arc<TransposeCell>);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let (crow, col, a, b, transposed) = ops.state;
        let [a_node, b_node] = ops.parents;
        let g = grads.consume::<B>(&ops.node);
        let k = b.shape()[0];
        // SAFETY: the state holds the pattern the forward SDDMM was called with, valid over the
        // rows of `b` (its contract), and its cell; `g [nnz]` are values on it, `b [k, d]` and
        // `a [m, d]`.
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

impl<B: SpmmKernels + SddmmKernels, C: CheckpointStrategy> SparseSddmm for Autodiff<B, C> {
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
                // SAFETY: this method's contract is the kernel's.
                let out = unsafe { B::csr_sddmm(crow.clone(), col.clone(), ap.clone(), bp.clone()) };
                prep.finish((crow, col, ap, bp, transposed), out)
            }
            // SAFETY: as above.
            OpsKind::UnTracked(prep) => prep.finish(unsafe { B::csr_sddmm(crow, col, ap, bp) }),
        }
    }
}
