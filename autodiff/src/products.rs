//! The two differentiable primitives of the matmul family, each with its backward rule beside
//! its forward (JAX style), and each differentiated by the other:
//!
//! - `sparse_spmm`: `A · X` (or `Aᵀ · X`) for `A` stored as a CSR pattern with values.
//!   d/dvalues is the SDDMM of the output gradient and `X` over the pattern (masked: no gradient
//!   for unspecified elements); d/dX is `Aᵀ · G` (or `A · G`) by the transposed kernel.
//! - `sparse_sddmm`: `out[j] = a[row j] · b[col j]` on a CSR pattern.
//!   d/da is `P_g · b` and d/db is `P_gᵀ · a`, `P_g` the pattern carrying the output gradient.
//!
//! No rule builds an `m x k` dense matrix: gradients w.r.t. a sparse operand are values-shaped.
//! Both primitives are `unsafe`: they take the pattern as raw index tensors and hand it to the
//! host kernels, which walk it through unchecked offsets (see `SpmmKernels`); `matmul` calls
//! them only with the patterns of checked tensors.
//! The trait [`SparseMatmul`] is this crate's own (Rust's orphan rule keeps `Autodiff` impls of
//! backend traits out of reach): implemented for `Autodiff<B, C>` with the rules, and for Flex
//! by the forward kernels of `sparsegrad_backend::spmm`.

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
use sparsegrad_backend::spmm::SpmmKernels;

/// Differentiable CSR products.
///
/// # Safety
/// As [`SpmmKernels`]: `crow [m + 1]` and `col [nnz]` form a valid CSR pattern `[m, k]`
/// (`crow` from 0 to nnz, non-decreasing; every column in `0..k`), and the dense operands have
/// the shapes each method states.
#[backend_extension(Flex, Autodiff)]
pub trait SparseMatmul: Backend {
    /// `A · X` (`transpose = false`, `A` the pattern `[m, k]`, `X [k, n]`, result `[m, n]`) or
    /// `Aᵀ · X` (`transpose = true`, `X [m, n]`, result `[k, n]`); `values [nnz]`.
    ///
    /// # Safety
    /// See the trait: a valid pattern over `k` columns.
    unsafe fn sparse_spmm(crow: IntTensor<Self>, col: IntTensor<Self>, values: FloatTensor<Self>, x: FloatTensor<Self>, transpose: bool, k: usize) -> FloatTensor<Self>;

    /// `out[j] = a[row j] · b[col j]` for each stored entry: `a [m, d]`, `b [k, d]`, result `[nnz]`.
    ///
    /// # Safety
    /// See the trait: a valid pattern over `k = b.shape()[0]` columns.
    unsafe fn sparse_sddmm(crow: IntTensor<Self>, col: IntTensor<Self>, a: FloatTensor<Self>, b: FloatTensor<Self>) -> FloatTensor<Self>;
}

/// `A · X` or `Aᵀ · X` by the forward kernels.
///
/// # Safety
/// A valid pattern over `k` columns, as [`SparseMatmul::sparse_spmm`].
unsafe fn spmm_forward<B: SpmmKernels>(crow: IntTensor<B>, col: IntTensor<B>, values: FloatTensor<B>, x: FloatTensor<B>, transpose: bool, k: usize) -> FloatTensor<B> {
    // SAFETY: the caller's pattern is valid over `k` columns; `A · X` reads `X [k, n]`.
    unsafe {
        if transpose {
            B::csr_spmm_t(crow, col, values, x, k)
        } else {
            B::csr_spmm(crow, col, values, x)
        }
    }
}

impl SparseMatmul for Flex {
    unsafe fn sparse_spmm(crow: IntTensor<Self>, col: IntTensor<Self>, values: FloatTensor<Self>, x: FloatTensor<Self>, transpose: bool, k: usize) -> FloatTensor<Self> {
        // SAFETY: this method's contract is the kernels'.
        unsafe { spmm_forward::<Flex>(crow, col, values, x, transpose, k) }
    }

    unsafe fn sparse_sddmm(crow: IntTensor<Self>, col: IntTensor<Self>, a: FloatTensor<Self>, b: FloatTensor<Self>) -> FloatTensor<Self> {
        // SAFETY: this method's contract is the kernel's.
        unsafe { Flex::csr_sddmm(crow, col, a, b) }
    }
}

/// Backward of `sparse_spmm`; parents `[values, x]`.
#[derive(Debug)]
struct Spmm;

/// Pattern, both operands (for each other's gradient), direction and the pattern's column count.
type SpmmState<B> = (IntTensor<B>, IntTensor<B>, FloatTensor<B>, FloatTensor<B>, bool, usize);

impl<B: SpmmKernels> Backward<B, 2> for Spmm {
    type State = SpmmState<B>;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let (crow, col, values, x, transpose, k) = ops.state;
        let [values_node, x_node] = ops.parents;
        let g = grads.consume::<B>(&ops.node);
        // SAFETY (every kernel call below): the state holds the pattern the forward product was
        // called with, valid over `k` columns (its contract), and the operands and the output
        // gradient of that product, whose shapes are the ones the kernels take.
        if let (Some(vn), Some(xn)) = (&values_node, &x_node) {
            // Both wanted: one pass gathers each row of G once for both (see `spmm_backward`).
            let (nnz, xshape) = (values.shape().num_elements(), x.shape());
            let len = xshape.num_elements();
            let both = unsafe { B::csr_spmm_backward(crow, col, values, g, x, transpose, k) };
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
                    B::csr_sddmm(crow.clone(), col.clone(), x, g.clone())
                } else {
                    B::csr_sddmm(crow.clone(), col.clone(), g.clone(), x)
                }
            };
            grads.register::<B>(node.id, dv);
        }
        if let Some(node) = x_node {
            // out = A X: dX = Aᵀ G;  out = Aᵀ X: dX = A G.
            // SAFETY: the forward's pattern, valid over `k` columns (see above).
            let dx = unsafe { spmm_forward::<B>(crow, col, values, g, !transpose, k) };
            grads.register::<B>(node.id, dx);
        }
    }
}

/// Backward of `sparse_sddmm`; parents `[a, b]`.
#[derive(Debug)]
struct Sddmm;

impl<B: SpmmKernels> Backward<B, 2> for Sddmm {
    type State = (IntTensor<B>, IntTensor<B>, FloatTensor<B>, FloatTensor<B>);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let (crow, col, a, b) = ops.state;
        let [a_node, b_node] = ops.parents;
        let g = grads.consume::<B>(&ops.node);
        let k = b.shape()[0];
        // SAFETY: the state holds the pattern the forward SDDMM was called with, valid over the
        // rows of `b` (its contract); `g [nnz]` are values on it, `b [k, d]` and `a [m, d]`.
        if let Some(node) = a_node {
            grads.register::<B>(node.id, unsafe { B::csr_spmm(crow.clone(), col.clone(), g.clone(), b) });
        }
        if let Some(node) = b_node {
            grads.register::<B>(node.id, unsafe { B::csr_spmm_t(crow, col, g, a, k) });
        }
    }
}

impl<B: SpmmKernels, C: CheckpointStrategy> SparseMatmul for Autodiff<B, C> {
    unsafe fn sparse_spmm(crow: IntTensor<Self>, col: IntTensor<Self>, values: FloatTensor<Self>, x: FloatTensor<Self>, transpose: bool, k: usize) -> FloatTensor<Self> {
        let guards = [values.node(), x.node()];
        let (v, xp) = (values.into_primitive(), x.into_primitive());
        match Spmm.prepare::<C>(guards).compute_bound().stateful() {
            // SAFETY: this method's contract is the kernels'.
            OpsKind::Tracked(prep) => {
                let out = unsafe { spmm_forward::<B>(crow.clone(), col.clone(), v.clone(), xp.clone(), transpose, k) };
                prep.finish((crow, col, v, xp, transpose, k), out)
            }
            // SAFETY: as above.
            OpsKind::UnTracked(prep) => prep.finish(unsafe { spmm_forward::<B>(crow, col, v, xp, transpose, k) }),
        }
    }

    unsafe fn sparse_sddmm(crow: IntTensor<Self>, col: IntTensor<Self>, a: FloatTensor<Self>, b: FloatTensor<Self>) -> FloatTensor<Self> {
        let guards = [a.node(), b.node()];
        let (ap, bp) = (a.into_primitive(), b.into_primitive());
        match Sddmm.prepare::<C>(guards).compute_bound().stateful() {
            // SAFETY: this method's contract is the kernel's.
            OpsKind::Tracked(prep) => {
                let out = unsafe { B::csr_sddmm(crow.clone(), col.clone(), ap.clone(), bp.clone()) };
                prep.finish((crow, col, ap, bp), out)
            }
            // SAFETY: as above.
            OpsKind::UnTracked(prep) => prep.finish(unsafe { B::csr_sddmm(crow, col, ap, bp) }),
        }
    }
}
