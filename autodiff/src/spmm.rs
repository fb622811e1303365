//! The SpMM primitive, `sparse_spmm`: `A · X` (or `Aᵀ · X`) for `A` stored as a CSR pattern with
//! values, with its backward rule beside its forward (JAX style).
//!
//! - d/dvalues is the SDDMM of the output gradient and `X` over the pattern (masked: no gradient
//!   for unspecified elements); d/dX is `Aᵀ · G` (or `A · G`) by the transposed kernel. When both
//!   are wanted, one fused pass computes them (`SpmmKernels::csr_spmm_backward`).
//! - The pattern's transposed view comes from its [`TransposeCell`], which the rule keeps: a
//!   training loop transposes an operand's pattern once.
//!
//! No rule builds an `m x k` dense matrix: the gradient w.r.t. the sparse operand is
//! values-shaped. The primitive is `unsafe`: it takes the pattern as raw index tensors and hands
//! it to kernels that walk it through unchecked offsets (see `SpmmKernels`); `matmul` calls it
//! only with the patterns of checked tensors. The trait [`SparseSpmm`] is this crate's own (the
//! orphan rule keeps `Autodiff` impls of backend traits out of reach): implemented for
//! `Autodiff<B, C>` with the rule, and for Flex by the forward kernels.

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
use burn::tensor::Slice;
use sparsegrad_backend::sddmm::SparseSddmm;
use sparsegrad_backend::spmm::SpmmKernels;
use sparsegrad_kernels::pattern::TransposeCell;
use std::sync::Arc;

/// The differentiable CSR product.
///
/// # Safety
/// As [`SpmmKernels`]: `crow [m + 1]` and `col [nnz]` form a valid CSR pattern `[m, k]`
/// (`crow` from 0 to nnz, non-decreasing; every column in `0..k`), the dense operand has the
/// shape the method states, and `transposed` is this pattern's cell (or empty).
#[backend_extension(Flex, Cube: cfg(feature = "cube"), Autodiff)]
#[diagnostic::on_unimplemented(
    message = "sparsegrad has no kernels for the backend `{Self}` (`SparseSpmm` is not implemented)",
    label = "no sparsegrad kernels for this backend",
    note = "a `Fusion<CubeBackend>` here means that burn's feature `fusion` is on (burn's default features turn it on) and sparsegrad's is off: turn on sparsegrad's `fusion` with `wgpu`, `sparsegrad = {{ version = \"0.1\", features = [\"wgpu\", \"fusion\"] }}` (see `sparsegrad::guide::gpu`)"
)]
pub trait SparseSpmm: Backend {
    /// `A · X` (`transpose = false`, `A` the pattern `[m, k]`, `X [k, n]`, result `[m, n]`) or
    /// `Aᵀ · X` (`transpose = true`, `X [m, n]`, result `[k, n]`); `values [nnz]`. With
    /// `stored_transposed`, the product is stored as its transpose where the backend can
    /// (`SpmmKernels::csr_spmm_stored_transposed`, `csr_spmm_t_stored_transposed`): for callers
    /// that transpose it next.
    ///
    /// # Safety
    /// See the trait.
    #[allow(clippy::too_many_arguments)]
    unsafe fn sparse_spmm(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        transpose: bool,
        stored_transposed: bool,
        k: usize,
        transposed: Arc<TransposeCell>,
    ) -> FloatTensor<Self>;
}

/// `A · X` or `Aᵀ · X` by the forward kernels.
///
/// # Safety
/// As [`SparseSpmm::sparse_spmm`].
#[allow(clippy::too_many_arguments)]
unsafe fn forward<B: SpmmKernels>(
    crow: IntTensor<B>,
    col: IntTensor<B>,
    values: FloatTensor<B>,
    x: FloatTensor<B>,
    transpose: bool,
    stored_transposed: bool,
    k: usize,
    transposed: &TransposeCell,
) -> FloatTensor<B> {
    // SAFETY: the caller's pattern is valid over `k` columns, with its cell; `A · X` reads
    // `X [k, n]`.
    unsafe {
        if transpose && stored_transposed {
            B::csr_spmm_t_stored_transposed(crow, col, values, x, k, transposed)
        } else if transpose {
            B::csr_spmm_t(crow, col, values, x, k, transposed)
        } else if stored_transposed {
            B::csr_spmm_stored_transposed(crow, col, values, x, transposed)
        } else {
            B::csr_spmm(crow, col, values, x, transposed)
        }
    }
}

/// The untracked backends run the forward kernels.
macro_rules! untracked {
    ($backend:ty) => {
        impl SparseSpmm for $backend {
            unsafe fn sparse_spmm(
                crow: IntTensor<Self>,
                col: IntTensor<Self>,
                values: FloatTensor<Self>,
                x: FloatTensor<Self>,
                transpose: bool,
                stored_transposed: bool,
                k: usize,
                transposed: Arc<TransposeCell>,
            ) -> FloatTensor<Self> {
                // SAFETY: this method's contract is the kernels'.
                unsafe { forward::<Self>(crow, col, values, x, transpose, stored_transposed, k, &transposed) }
            }
        }
    };
}
untracked!(Flex);
#[cfg(feature = "cube")]
untracked!(sparsegrad_backend::cube::CubeBackend);
#[cfg(all(feature = "cube", feature = "fusion"))]
untracked!(sparsegrad_backend::cube::FusedCube);

/// Backward of `sparse_spmm`; parents `[values, x]`.
#[derive(Debug)]
struct Spmm;

/// Pattern, both operands (for each other's gradient), direction, the pattern's column count
/// and its transposed-view cache.
type SpmmState<B> = (IntTensor<B>, IntTensor<B>, FloatTensor<B>, FloatTensor<B>, bool, usize, Arc<TransposeCell>);

impl<B: SpmmKernels + SparseSddmm> Backward<B, 2> for Spmm {
    type State = SpmmState<B>;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let (crow, col, values, x, transpose, k, transposed) = ops.state;
        let [values_node, x_node] = ops.parents;
        let g = grads.consume::<B>(&ops.node);
        // SAFETY (every kernel call below): the state holds the pattern the forward product was
        // called with, valid over `k` columns (its contract), its cell, and the operands and the
        // output gradient of that product, whose shapes are the ones the kernels take.
        if let (Some(vn), Some(xn)) = (&values_node, &x_node) {
            // Both wanted: one pass gathers each row of G once for both (see `spmm_backward`).
            let (nnz, xshape) = (values.shape().num_elements(), x.shape());
            let len = xshape.num_elements();
            // SAFETY: the forward's pattern, valid over `k` columns, and its cell (see above).
            let both = unsafe { B::csr_spmm_backward(crow, col, values, g, x, transpose, k, &transposed) };
            let dx = B::float_reshape(B::float_slice(both.clone(), &[Slice::new(0, Some(len as isize), 1)]), xshape);
            let dv = B::float_slice(both, &[Slice::new(len as isize, Some((len + nnz) as isize), 1)]);
            grads.register::<B>(vn.id, dv);
            grads.register::<B>(xn.id, dx);
            return;
        }
        if let Some(node) = values_node {
            // out = A X: dv_j = G[row j] · X[col j];  out = Aᵀ X: dv_j = X[row j] · G[col j].
            // SAFETY: the forward's pattern, valid over `k` columns (see above).
            let dv = unsafe {
                if transpose {
                    B::sparse_sddmm(crow.clone(), col.clone(), x, g.clone(), transposed.clone())
                } else {
                    B::sparse_sddmm(crow.clone(), col.clone(), g.clone(), x, transposed.clone())
                }
            };
            grads.register::<B>(node.id, dv);
        }
        if let Some(node) = x_node {
            // out = A X: dX = Aᵀ G;  out = Aᵀ X: dX = A G.
            // SAFETY: the forward's pattern, valid over `k` columns, and its cell (see above).
            let dx = unsafe { forward::<B>(crow, col, values, g, !transpose, false, k, &transposed) };
            grads.register::<B>(node.id, dx);
        }
    }
}

impl<B: SpmmKernels + SparseSddmm, C: CheckpointStrategy> SparseSpmm for Autodiff<B, C> {
    unsafe fn sparse_spmm(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        transpose: bool,
        stored_transposed: bool,
        k: usize,
        transposed: Arc<TransposeCell>,
    ) -> FloatTensor<Self> {
        let guards = [values.node(), x.node()];
        let (v, xp) = (values.into_primitive(), x.into_primitive());
        match Spmm.prepare::<C>(guards).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                // SAFETY: this method's contract is the kernels'.
                let out = unsafe {
                    forward::<B>(
                        crow.clone(),
                        col.clone(),
                        v.clone(),
                        xp.clone(),
                        transpose,
                        stored_transposed,
                        k,
                        &transposed,
                    )
                };
                prep.finish((crow, col, v, xp, transpose, k, transposed), out)
            }
            OpsKind::UnTracked(prep) => {
                // SAFETY: this method's contract is the kernels'.
                prep.finish(unsafe { forward::<B>(crow, col, v, xp, transpose, stored_transposed, k, &transposed) })
            }
        }
    }
}
