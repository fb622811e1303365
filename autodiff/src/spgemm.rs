//! The SpGEMM primitive, `sparse_spgemm`: the values of `C = A · B` on a given CSR pattern of
//! `C` (the symbolic pass's, or a mask's), with its backward rule beside its forward (JAX
//! style): for the output gradient `G` on `C`'s pattern, d/dA is `(G · Bᵀ)` on `A`'s pattern
//! and d/dB is `(Aᵀ · G)` on `B`'s pattern, each a masked sparse product by the kernels of
//! `SpgemmKernels` (never a dense `m x k` or `k x n`).
//!
//! The primitive is `unsafe` for the reason `sparse_spmm` is: it takes three patterns as raw
//! index tensors; `matmul` calls it only with the patterns of checked tensors and the pattern
//! the symbolic pass computed from them.

use burn::backend::autodiff::{
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
    Autodiff,
};
use burn::backend::{
    backend_extension,
    tensor::{FloatTensor, IntTensor},
    Backend, Flex,
};
use sparsegrad_backend::spgemm::SpgemmKernels;

/// The differentiable sparse product.
///
/// # Safety
/// As [`SpgemmKernels`]: `A [m, k]`, `B [k, n]` and `C [m, n]` are valid CSR patterns (`C`'s
/// rows sorted), with one value per entry in `a_values` and `b_values`.
#[backend_extension(Flex, Cube: cfg(feature = "cube"), Autodiff)]
#[diagnostic::on_unimplemented(
    message = "sparsegrad has no kernels for the backend `{Self}` (`SparseSpgemm` is not implemented)",
    label = "no sparsegrad kernels for this backend",
    note = "a `Fusion<CubeBackend>` here means that burn's feature `fusion` is on (burn's default features turn it on) and sparsegrad's is off: turn on sparsegrad's `fusion` with `wgpu`, `sparsegrad = {{ version = \"0.1\", features = [\"wgpu\", \"fusion\"] }}` (see `sparsegrad::guide::gpu`)"
)]
pub trait SparseSpgemm: Backend {
    /// The values of `A · B` on `C`'s pattern, `[nnz_c]`.
    ///
    /// # Safety
    /// See the trait.
    #[allow(clippy::too_many_arguments)]
    unsafe fn sparse_spgemm(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        a_values: FloatTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        b_values: FloatTensor<Self>,
        c_crow: IntTensor<Self>,
        c_col: IntTensor<Self>,
        n: usize,
    ) -> FloatTensor<Self>;

    /// `C = A · B` whole in one pass (`SpgemmKernels::csr_spgemm_product`): `C`'s row
    /// pointers and sorted columns (int64) and its values, differentiable w.r.t. both
    /// operands' values by the same rule as [`SparseSpgemm::sparse_spgemm`].
    ///
    /// # Safety
    /// `A [m, k]` and `B [k, n]` as for [`SparseSpgemm::sparse_spgemm`].
    #[allow(clippy::type_complexity)]
    unsafe fn sparse_spgemm_product(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        a_values: FloatTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        b_values: FloatTensor<Self>,
        n: usize,
    ) -> (IntTensor<Self>, IntTensor<Self>, FloatTensor<Self>);
}

/// The untracked backends run the forward kernels.
macro_rules! untracked {
    ($backend:ty) => {
        impl SparseSpgemm for $backend {
            unsafe fn sparse_spgemm(
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
                // SAFETY: this method's contract is the kernel's.
                unsafe { Self::csr_spgemm(a_crow, a_col, a_values, b_crow, b_col, b_values, c_crow, c_col, n) }
            }

            unsafe fn sparse_spgemm_product(
                a_crow: IntTensor<Self>,
                a_col: IntTensor<Self>,
                a_values: FloatTensor<Self>,
                b_crow: IntTensor<Self>,
                b_col: IntTensor<Self>,
                b_values: FloatTensor<Self>,
                n: usize,
            ) -> (IntTensor<Self>, IntTensor<Self>, FloatTensor<Self>) {
                // SAFETY: this method's contract is the kernel's.
                unsafe { Self::csr_spgemm_product(a_crow, a_col, a_values, b_crow, b_col, b_values, n) }
            }
        }
    };
}
untracked!(Flex);
#[cfg(feature = "cube")]
untracked!(sparsegrad_backend::cube::CubeBackend);
#[cfg(all(feature = "cube", feature = "fusion"))]
untracked!(sparsegrad_backend::cube::FusedCube);

/// Backward of `sparse_spgemm`; parents `[a_values, b_values]`.
#[derive(Debug)]
struct Spgemm;

/// The three patterns, both operands' values (each the other's gradient's factor) and `n`.
type SpgemmState<B> = ([IntTensor<B>; 6], FloatTensor<B>, FloatTensor<B>, usize);

impl<B: SpgemmKernels> Backward<B, 2> for Spgemm {
    type State = SpgemmState<B>;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let ([a_crow, a_col, b_crow, b_col, c_crow, c_col], av, bv, n) = ops.state;
        let [a_node, b_node] = ops.parents;
        let g = grads.consume::<B>(&ops.node);
        if let Some(node) = a_node {
            // SAFETY: the state holds the patterns the forward product was called with (valid,
            // its contract), `B`'s values, and `g` on `C`'s pattern.
            let da = unsafe {
                B::csr_spgemm_grad_a(
                    a_crow.clone(),
                    a_col.clone(),
                    b_crow.clone(),
                    b_col.clone(),
                    bv,
                    c_crow.clone(),
                    c_col.clone(),
                    g.clone(),
                    n,
                )
            };
            grads.register::<B>(node.id, da);
        }
        if let Some(node) = b_node {
            // SAFETY: as above, with `A`'s values.
            let db = unsafe { B::csr_spgemm_grad_b(a_crow, a_col, av, b_crow, b_col, c_crow, c_col, g, n) };
            grads.register::<B>(node.id, db);
        }
    }
}

impl<B: SpgemmKernels, C: CheckpointStrategy> SparseSpgemm for Autodiff<B, C> {
    unsafe fn sparse_spgemm(
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
        let guards = [a_values.node(), b_values.node()];
        let (av, bv) = (a_values.into_primitive(), b_values.into_primitive());
        match Spgemm.prepare::<C>(guards).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                // SAFETY: this method's contract is the kernel's.
                let out = unsafe {
                    B::csr_spgemm(
                        a_crow.clone(),
                        a_col.clone(),
                        av.clone(),
                        b_crow.clone(),
                        b_col.clone(),
                        bv.clone(),
                        c_crow.clone(),
                        c_col.clone(),
                        n,
                    )
                };
                prep.finish(([a_crow, a_col, b_crow, b_col, c_crow, c_col], av, bv, n), out)
            }
            OpsKind::UnTracked(prep) => {
                // SAFETY: as above.
                prep.finish(unsafe { B::csr_spgemm(a_crow, a_col, av, b_crow, b_col, bv, c_crow, c_col, n) })
            }
        }
    }

    unsafe fn sparse_spgemm_product(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        a_values: FloatTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        b_values: FloatTensor<Self>,
        n: usize,
    ) -> (IntTensor<Self>, IntTensor<Self>, FloatTensor<Self>) {
        let guards = [a_values.node(), b_values.node()];
        let (av, bv) = (a_values.into_primitive(), b_values.into_primitive());
        match Spgemm.prepare::<C>(guards).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                // SAFETY: this method's contract is the kernel's.
                let (c_crow, c_col, out) = unsafe {
                    B::csr_spgemm_product(
                        a_crow.clone(),
                        a_col.clone(),
                        av.clone(),
                        b_crow.clone(),
                        b_col.clone(),
                        bv.clone(),
                        n,
                    )
                };
                // The backward reads `C`'s pattern as the forward of `sparse_spgemm` takes it.
                let state = ([a_crow, a_col, b_crow, b_col, c_crow.clone(), c_col.clone()], av, bv, n);
                (c_crow, c_col, prep.finish(state, out))
            }
            OpsKind::UnTracked(prep) => {
                // SAFETY: as above.
                let (c_crow, c_col, out) = unsafe { B::csr_spgemm_product(a_crow, a_col, av, b_crow, b_col, bv, n) };
                (c_crow, c_col, prep.finish(out))
            }
        }
    }
}
