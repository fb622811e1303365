//! `sparse::softmax` and `sparse::log_softmax` (torch.sparse semantics: unspecified elements are
//! -inf, so each slice along `dim` is a softmax over its stored elements; a slice with none stays
//! empty), with the differentiable segment-softmax primitive and its backward rule side by side.
//!
//! The forward is the fused kernel of `sparsegrad_backend::softmax` on the segments its index
//! algebra finds; the rule is the closed form on the same segments, from the saved output `y`:
//! softmax `dx = y * (g - sum_seg(g * y))`, log-softmax `dx = g - exp(y) * sum_seg(g)`. Both stay
//! on the input's pattern. The trait [`SparseSoftmax`] is this crate's own (the orphan rule keeps
//! `Autodiff` impls of backend traits out of reach): Flex runs the kernels, `Autodiff<B, C>`
//! records the rule.
//!
//! A softmax along a dense dim of a hybrid tensor is a plain softmax of the values (burn's own,
//! differentiated by burn).

use burn::backend::autodiff::{
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
    Autodiff,
};
use burn::backend::{
    backend_extension,
    tensor::{FloatTensor, IntTensor},
    Backend, Dispatch, Flex,
};
use burn::tensor::{activation, Tensor};
use sparsegrad_backend::softmax::{SegmentPlan, SoftmaxKernels};
use sparsegrad_backend::util::{numel, reshape};
use sparsegrad_backend::{Result, SparseError, SparseTensor};

/// The differentiable segment softmax.
#[backend_extension(Flex, Cube: cfg(feature = "cube"), Autodiff)]
#[diagnostic::on_unimplemented(
    message = "sparsegrad has no kernels for the backend `{Self}` (`SparseSoftmax` is not implemented)",
    label = "no sparsegrad kernels for this backend",
    note = "a `Fusion<CubeBackend>` here means that burn's feature `fusion` is on (burn's default features turn it on) and sparsegrad's is off: turn on sparsegrad's `fusion` with `wgpu`, `sparsegrad = {{ version = \"0.1\", features = [\"wgpu\", \"fusion\"] }}` (see `sparsegrad::guide::gpu`)"
)]
pub trait SparseSoftmax: Backend {
    /// Softmax (`log`: log-softmax) of `values [elements, width]` over the segments given by
    /// `offsets` into `order` (empty: storage order), as [`SoftmaxKernels::segment_softmax`].
    fn sparse_segment_softmax(
        values: FloatTensor<Self>,
        offsets: IntTensor<Self>,
        order: IntTensor<Self>,
        log: bool,
    ) -> FloatTensor<Self>;
}

/// The untracked backends run the forward kernels.
macro_rules! untracked {
    ($backend:ty) => {
        impl SparseSoftmax for $backend {
            fn sparse_segment_softmax(
                values: FloatTensor<Self>,
                offsets: IntTensor<Self>,
                order: IntTensor<Self>,
                log: bool,
            ) -> FloatTensor<Self> {
                Self::segment_softmax(values, offsets, order, log)
            }
        }
    };
}
untracked!(Flex);
#[cfg(feature = "cube")]
untracked!(sparsegrad_backend::cube::CubeBackend);
#[cfg(all(feature = "cube", feature = "fusion"))]
untracked!(sparsegrad_backend::cube::FusedCube);

/// Backward of `sparse_segment_softmax`; one parent, the values.
#[derive(Debug)]
struct SegmentSoftmax;

impl<B: SoftmaxKernels> Backward<B, 1> for SegmentSoftmax {
    /// The output, the segments and which of the two functions it was.
    type State = (FloatTensor<B>, IntTensor<B>, IntTensor<B>, bool);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let (y, offsets, order, log) = ops.state;
        burn::backend::autodiff::ops::unary::<B, _>(ops.parents, ops.node, grads, |g| {
            B::segment_softmax_backward(y, g, offsets, order, log)
        });
    }
}

impl<B: SoftmaxKernels, C: CheckpointStrategy> SparseSoftmax for Autodiff<B, C> {
    fn sparse_segment_softmax(
        values: FloatTensor<Self>,
        offsets: IntTensor<Self>,
        order: IntTensor<Self>,
        log: bool,
    ) -> FloatTensor<Self> {
        let guard = values.node();
        let y = B::segment_softmax(values.into_primitive(), offsets.clone(), order.clone(), log);
        match SegmentSoftmax.prepare::<C>([guard]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => prep.finish((y.clone(), offsets, order, log), y),
            OpsKind::UnTracked(prep) => prep.finish(y),
        }
    }
}

/// torch's `sparse.softmax(input, dim)`: the input's pattern (coalesced) with each slice along
/// `dim` normalised over its stored elements. Every layout; an uncoalesced COO input is
/// coalesced first (duplicates are one element). Panics on a dim out of range (see
/// [`try_softmax`]).
///
/// ```
/// use burn::tensor::Device;
/// use sparsegrad_backend::SparseTensor;
///
/// let device = Device::flex();
/// // Row 0 stores two equal values, row 1 one: unstored elements are not part of the softmax.
/// let s = SparseTensor::csr_from_vecs(vec![0, 2, 3], vec![0, 2, 1], vec![1.0f32, 1.0, 5.0], [2, 3], &device)?;
/// let p = sparsegrad_autodiff::softmax::softmax(&s, 1);
/// assert_eq!(p.to_dense().into_data().try_to_vec::<f32>().unwrap(), [0.5, 0.0, 0.5, 0.0, 1.0, 0.0]);
/// # Ok::<(), sparsegrad_backend::SparseError>(())
/// ```
pub fn softmax<const D: usize>(input: &SparseTensor<D>, dim: usize) -> SparseTensor<D> {
    try_softmax(input, dim).unwrap_or_else(|e| panic!("{e}"))
}

/// torch's `sparse.log_softmax(input, dim)`: as [`softmax`], the logarithm computed directly.
pub fn log_softmax<const D: usize>(input: &SparseTensor<D>, dim: usize) -> SparseTensor<D> {
    try_log_softmax(input, dim).unwrap_or_else(|e| panic!("{e}"))
}

/// [`softmax`] returning an error for a dim out of range.
pub fn try_softmax<const D: usize>(input: &SparseTensor<D>, dim: usize) -> Result<SparseTensor<D>> {
    segment_softmax(input, dim, false)
}

/// [`log_softmax`] returning an error for a dim out of range.
pub fn try_log_softmax<const D: usize>(input: &SparseTensor<D>, dim: usize) -> Result<SparseTensor<D>> {
    segment_softmax(input, dim, true)
}

fn segment_softmax<const D: usize>(input: &SparseTensor<D>, dim: usize, log: bool) -> Result<SparseTensor<D>> {
    if dim >= D {
        return Err(SparseError::InvalidArgument {
            operation: "softmax",
            message: format!("dim {dim} out of range for a tensor of rank {D}"),
        });
    }
    input.check_invariants()?;
    let s = input.coalesce();
    let indexed = s.indexed_dims();
    if dim >= indexed {
        return Ok(dense_dim_softmax(&s, dim - indexed, log));
    }
    let SegmentPlan { values, offsets, order } = s.segment_plan(dim)?;
    let y = Tensor::<2>::from_dispatch(<Dispatch as SparseSoftmax>::sparse_segment_softmax(
        values.into_dispatch(),
        offsets.into_dispatch(),
        order.into_dispatch(),
        log,
    ));
    Ok(s.with_values(reshape(y, s.values_flat().dims())))
}

/// Softmax along dense dim `k` (counted among the dense dims): each stored element's dense item
/// on its own, with burn's softmax.
fn dense_dim_softmax<const D: usize>(s: &SparseTensor<D>, k: usize, log: bool) -> SparseTensor<D> {
    let values = s.values_flat();
    let [n, item] = values.dims();
    if n * item == 0 {
        return s.clone();
    }
    let dense = &s.shape()[D - s.dense_dim()..];
    let (pre, post) = (numel(&dense[..k]), numel(&dense[k + 1..]));
    let rows = n * item / (pre * dense[k] * post);
    let v = reshape(values, [rows, pre, dense[k], post]);
    let y = if log { activation::log_softmax(v, 2) } else { activation::softmax(v, 2) };
    s.with_values(reshape(y, [n, item]))
}
