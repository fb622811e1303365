//! The arg-extreme SpMM primitive, `sparse_spmm_arg_extreme`: `out[i, c]` the largest (or
//! smallest) `a[i, j] · x[j, c]` over the stored entries of row `i` (0 for a row without one),
//! with its backward rule beside its forward: the gradient goes to the winning entry of every
//! output element alone (torch's `scatter_reduce` with `amax` / `amin`), `dvalues[p] += g[i, c]
//! · x[col p, c]` and `dX[col p, c] += g[i, c] · a_p`, from the args the forward saved.
//!
//! Behind `matmul::mm_reduce` (`Reduce::Amax`, `Reduce::Amin`); `sum` and `mean` are the plain
//! SpMM. The primitive is `unsafe` as `sparse_spmm` is (raw index tensors walked unchecked);
//! `matmul` calls it only with the patterns of checked tensors. The trait is this crate's own
//! (the orphan rule): `Autodiff<B, C>` records the rule, Flex runs the forward kernels.

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
use sparsegrad_backend::spmm_reduce::SpmmReduceKernels;

/// The differentiable arg-extreme CSR product.
///
/// # Safety
/// As [`SpmmReduceKernels`]: `crow [m + 1]` and `col [nnz]` form a valid CSR pattern `[m, k]`
/// with `k` the rows of `x [k, n]`, and `values [nnz]`.
#[backend_extension(Flex, Cube: cfg(feature = "cube"), Autodiff)]
#[diagnostic::on_unimplemented(
    message = "sparsegrad has no kernels for the backend `{Self}` (`SparseSpmmReduce` is not implemented)",
    label = "no sparsegrad kernels for this backend",
    note = "a `Fusion<CubeBackend>` here means that burn's feature `fusion` is on (burn's default features turn it on) and sparsegrad's is off: turn on sparsegrad's `fusion` with `wgpu`, `sparsegrad = {{ version = \"0.1\", features = [\"wgpu\", \"fusion\"] }}` (see `sparsegrad::guide::gpu`)"
)]
pub trait SparseSpmmReduce: Backend {
    /// The extremes `[m, n]` (`max`, else min) of `a[i, j] · x[j, c]` over each row's entries.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn sparse_spmm_arg_extreme(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        max: bool,
    ) -> FloatTensor<Self>;
}

/// The untracked backends run the forward kernels.
macro_rules! untracked {
    ($backend:ty) => {
        impl SparseSpmmReduce for $backend {
            unsafe fn sparse_spmm_arg_extreme(
                crow: IntTensor<Self>,
                col: IntTensor<Self>,
                values: FloatTensor<Self>,
                x: FloatTensor<Self>,
                max: bool,
            ) -> FloatTensor<Self> {
                // SAFETY: this method's contract is the kernels'.
                unsafe { Self::csr_spmm_arg_extreme(crow, col, values, x, max).0 }
            }
        }
    };
}
untracked!(Flex);
#[cfg(feature = "cube")]
untracked!(sparsegrad_backend::cube::CubeBackend);
#[cfg(all(feature = "cube", feature = "fusion"))]
untracked!(sparsegrad_backend::cube::FusedCube);

/// Backward of `sparse_spmm_arg_extreme`; parents `[values, x]`.
#[derive(Debug)]
struct ArgExtreme;

/// The pattern, both operands (for each other's gradient) and the forward's args.
type ArgExtremeState<B> = (IntTensor<B>, IntTensor<B>, FloatTensor<B>, FloatTensor<B>, IntTensor<B>);

impl<B: SpmmReduceKernels> Backward<B, 2> for ArgExtreme {
    type State = ArgExtremeState<B>;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let (crow, col, values, x, arg) = ops.state;
        let [values_node, x_node] = ops.parents;
        let g = grads.consume::<B>(&ops.node);
        let (nnz, xshape) = (values.shape().num_elements(), x.shape());
        let len = xshape.num_elements();
        // SAFETY: the state holds the pattern the forward was called with (valid over the rows
        // of `x`: its contract), its operands and its args; `g` is shaped as its output.
        let both = unsafe { B::csr_spmm_arg_extreme_backward(crow, col, values, x, arg, g) };
        if let Some(node) = x_node {
            let dx = B::float_reshape(B::float_slice(both.clone(), &[Slice::new(0, Some(len as isize), 1)]), xshape);
            grads.register::<B>(node.id, dx);
        }
        if let Some(node) = values_node {
            let dv = B::float_slice(both, &[Slice::new(len as isize, Some((len + nnz) as isize), 1)]);
            grads.register::<B>(node.id, dv);
        }
    }
}

impl<B: SpmmReduceKernels, C: CheckpointStrategy> SparseSpmmReduce for Autodiff<B, C> {
    unsafe fn sparse_spmm_arg_extreme(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        max: bool,
    ) -> FloatTensor<Self> {
        let guards = [values.node(), x.node()];
        let (v, xp) = (values.into_primitive(), x.into_primitive());
        // SAFETY: this method's contract is the kernels'.
        let (out, arg) = unsafe { B::csr_spmm_arg_extreme(crow.clone(), col.clone(), v.clone(), xp.clone(), max) };
        match ArgExtreme.prepare::<C>(guards).compute_bound().stateful() {
            OpsKind::Tracked(prep) => prep.finish((crow, col, v, xp, arg), out),
            OpsKind::UnTracked(prep) => prep.finish(out),
        }
    }
}
