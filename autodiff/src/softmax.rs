//! `sparse::softmax` and `sparse::log_softmax` (torch.sparse semantics: unspecified elements are
//! -inf, so each slice along `dim` is a softmax over its stored elements; a slice with none stays
//! empty), on the differentiable segment-softmax primitive [`SparseSoftmax`].
//!
//! The primitive's one trait, each backend's forward kernels and its backward rule live in
//! `sparsegrad_backend::softmax` (re-exported here, so that the old path still resolves); this
//! file finds the segments with the backend's index algebra and runs the primitive on them.
//!
//! A softmax along a dense dim of a hybrid tensor is a plain softmax of the values (burn's own,
//! differentiated by burn).

use burn::backend::Dispatch;
use burn::tensor::{activation, Tensor};
use sparsegrad_backend::softmax::SegmentPlan;
pub use sparsegrad_backend::softmax::SparseSoftmax;
use sparsegrad_backend::util::{numel, reshape};
use sparsegrad_backend::{Result, SparseError, SparseTensor};

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
