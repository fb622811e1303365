//! Segment softmax, the fused primitive behind `sparse::softmax` and `sparse::log_softmax`. One
//! burn extension trait, [`SparseSoftmax`], holds the forward impl of each backend and, beside
//! them, the backward rule (JAX style).
//!
//! torch's sparse softmax treats unspecified elements as -inf, so along `dim` each slice is a
//! softmax over its stored elements only. A *segment* is the set of stored elements that share
//! every index but the one along `dim`. Three parts:
//!
//! - index algebra ([`SparseTensor::segment_plan`]): the segments as offsets into an order of the
//!   stored elements. Storage order already groups them when `dim` is the last indexed dim of a
//!   coalesced COO tensor or the plain dim of CSR/CSC (the offsets are then the row pointers);
//!   otherwise the elements are stably sorted on their key with `dim` removed.
//! - forward: the kernels (the trait's `segment_softmax` and `segment_softmax_backward`) make
//!   three short passes over each segment while it is in cache (the max; the shifted
//!   exponentials, stored, and their sum; the scaled output), segments in parallel blocks
//!   balanced by element count, each dense column of hybrid values on its own. Flex runs them on
//!   its buffers (f32 and f64; f16 and bf16 computed in f32), Cube devices the kernels of
//!   `cube::softmax` (under burn's `fusion`, on the resolved tensors), any other backend gets
//!   defaults composed of burn ops (gather, scatter with max and add).
//! - backward (`Autodiff`): the closed form on the same segments, from the saved output `y`:
//!   softmax `dx = y * (g - sum_seg(g * y))`, log-softmax `dx = g - exp(y) * sum_seg(g)`, by the
//!   inner backend's backward kernel. Both stay on the input's pattern.
//!
//! The torch-named functions on top live in `sparsegrad-autodiff`'s `softmax`.

use crate::algebra::{compress, keys::FastDiv, sort, IndexElem};
use crate::error::{invalid, Result, SparseError};
use crate::flex::*;
use crate::host::with_ints;
use crate::layout::Layout;
use crate::match_ints;
use crate::tensor::{Indices, SparseTensor};
use crate::util::{int_tensor, numel, read_i64};
use burn::backend::flex::FlexTensor;
use burn::backend::{
    backend_extension,
    tensor::{FloatTensor, IntTensor},
    Backend, Flex, TensorMetadata,
};
use burn::tensor::{DType, Int, Tensor, TensorData};
pub use sparsegrad_kernels::softmax::{segment_softmax, segment_softmax_backward, SoftmaxReal};

/// The segment softmax on `[elements, width]` values, differentiable on `Autodiff`, and the
/// kernels its rule runs.
///
/// Segment `s` holds the elements `order[offsets[s]..offsets[s + 1]]`; an empty `order` stands
/// for storage order (the positions themselves: extension ops take no optional tensors, and an
/// identity permutation would cost a pass over every element). Each of the `width` columns is
/// normalised on its own. Outputs are in the input's element order.
#[backend_extension(Flex, Cube: cfg(feature = "cube"), Autodiff)]
#[diagnostic::on_unimplemented(
    message = "sparsegrad has no kernels for the backend `{Self}` (`SparseSoftmax` is not implemented)",
    label = "no sparsegrad kernels for this backend",
    note = "a `Fusion<CubeBackend>` here means that burn's feature `fusion` is on (burn's default features turn it on) and sparsegrad's is off: turn on sparsegrad's `fusion` with `wgpu`, `sparsegrad = {{ version = \"0.1\", features = [\"wgpu\", \"fusion\"] }}` (see `sparsegrad::guide::gpu`)"
)]
pub trait SparseSoftmax: Backend {
    /// Softmax (`log`: log-softmax) of `values [elements, width]` over the segments given by
    /// `offsets` into `order` (empty: storage order), as [`segment_softmax`](Self::segment_softmax):
    /// the differentiable primitive (`Autodiff` records the rule; the untracked backends run the
    /// forward kernel).
    fn sparse_segment_softmax(
        values: FloatTensor<Self>,
        offsets: IntTensor<Self>,
        order: IntTensor<Self>,
        log: bool,
    ) -> FloatTensor<Self> {
        Self::segment_softmax(values, offsets, order, log)
    }

    /// The forward kernel: `y = softmax(x)` per segment, or `log_softmax(x)` when `log`.
    /// Untracked (on `Autodiff`, the default of burn ops, which burn differentiates).
    fn segment_softmax(
        values: FloatTensor<Self>,
        offsets: IntTensor<Self>,
        order: IntTensor<Self>,
        log: bool,
    ) -> FloatTensor<Self> {
        default::softmax::<Self>(values, offsets, order, log)
    }

    /// The backward kernel: the input gradient from the output `y` and its gradient `g`:
    /// `y * (g - sum_seg(g * y))`, or `g - exp(y) * sum_seg(g)` when `y` is a log-softmax.
    fn segment_softmax_backward(
        y: FloatTensor<Self>,
        g: FloatTensor<Self>,
        offsets: IntTensor<Self>,
        order: IntTensor<Self>,
        log: bool,
    ) -> FloatTensor<Self> {
        default::backward::<Self>(y, g, offsets, order, log)
    }
}

// ------------------------------------------------------------------------------------------
// Index algebra: the segments of a tensor.

/// The stored elements of a tensor grouped into the segments of a softmax along one dim.
#[derive(Debug, Clone)]
pub struct SegmentPlan {
    /// The stored elements `[elements, dense]` in storage order: `values_flat` with blocks
    /// expanded to elements (a reshape, so gradients reach the tensor's values).
    pub values: Tensor<2>,
    /// `[segments + 1]` offsets into the grouped order: int64, or a compressed tensor's own
    /// compressed indices (in their dtype) along its plain dim.
    pub offsets: Tensor<1, Int>,
    /// `[elements]` element positions, segment by segment (int64, or i32 from a device plan);
    /// empty when storage order already is grouped.
    pub order: Tensor<1, Int>,
}

impl<const D: usize> SparseTensor<D> {
    /// Number of dims addressed by indices: COO's sparse dims, or batch + rows + cols.
    pub fn indexed_dims(&self) -> usize {
        match self.layout {
            Layout::Coo => self.sparse_dim,
            _ => self.batch_dim + 2,
        }
    }

    /// The segments of a softmax along indexed dim `dim` (see [`SegmentPlan`]). An error on an
    /// uncoalesced COO tensor (coalesce first: duplicates are one element) and on a dim that
    /// is not indexed (a dense dim is a plain softmax of the values).
    pub fn segment_plan(&self, dim: usize) -> Result<SegmentPlan> {
        if !self.coalesced {
            return Err(SparseError::Uncoalesced { operation: "softmax" });
        }
        let indexed = self.indexed_dims();
        if dim >= indexed {
            return Err(invalid(
                "softmax",
                format!("dim {dim} is not one of the {indexed} indexed dims of a {} tensor", self.layout),
            ));
        }
        let device = self.device();
        let i64s = |v: Vec<i64>| {
            let n = v.len();
            int_tensor(v, [n], DType::I64, &device)
        };
        if let Some(offsets) = self.compressed_segments(dim) {
            return Ok(SegmentPlan { values: self.values.clone(), offsets, order: i64s(Vec::new()) });
        }
        if let Some((offsets, order)) = self.device_segments(dim) {
            return Ok(SegmentPlan { values: self.values.clone(), offsets, order });
        }
        if let Some(offsets) = self.storage_segments(dim) {
            return Ok(SegmentPlan { values: self.values.clone(), offsets: i64s(offsets), order: i64s(Vec::new()) });
        }
        let e = self.entries()?;
        let (segment_keys, bound) = keys_without_dim(&e.keys, &e.sizes, dim);
        let (offsets, order) = if sort::is_sorted(&segment_keys) {
            (run_offsets(segment_keys.iter().copied()), i64s(Vec::new()))
        } else {
            let order = sort::stable_sort_perm(&segment_keys, bound);
            (run_offsets(order.iter().map(|&p| segment_keys[p as usize])), i64s(order))
        };
        Ok(SegmentPlan { values: e.values, offsets: i64s(offsets), order })
    }

    /// The segments along the plain dim of an unbatched compressed tensor without blocks: its
    /// compressed indices themselves (checked, so from 0 to nnz and non-decreasing), on its
    /// device, so that a softmax there reads nothing back.
    fn compressed_segments(&self, dim: usize) -> Option<Tensor<1, Int>> {
        match &self.indices {
            Indices::Compressed { compressed, .. } if self.blocksize.is_none() && self.batch_numel() == 1 => {
                let plain_dim = if self.layout.compresses_rows() { self.batch_dim + 1 } else { self.batch_dim };
                let len = compressed.dims()[1];
                (dim == plain_dim).then(|| crate::util::reshape_int(compressed.clone(), [len]))
            }
            _ => None,
        }
    }

    /// The segments planned on the tensor's device (`IndexKernels::segment_plan`: a Cube device
    /// sorts there and reads back their count) for COO and unbatched CSR/CSC without blocks;
    /// `None` elsewhere.
    fn device_segments(&self, dim: usize) -> Option<(Tensor<1, Int>, Tensor<1, Int>)> {
        if self.nnz() == 0 {
            return None;
        }
        // A compressed tensor's plans stay with its pattern (its cell, shared by every tensor
        // built on the pattern): planned once per dim and device.
        let device = self.device();
        let cell = self.transpose_cell();
        if let Some(hit) = cell.as_ref().and_then(|c| {
            c.with_plans(|slot| {
                let plans = slot.as_ref()?.downcast_ref::<SegmentPlans>()?;
                plans.iter().find(|p| p.0 == dim && p.1 == device).map(|p| (p.2.clone(), p.3.clone()))
            })
        }) {
            return Some(hit);
        }
        let coords = match &self.indices {
            Indices::Coo(indices) => indices.clone(),
            Indices::Compressed { .. } => self.device_coo_indices()?,
        };
        let sizes = &self.shape[..coords.dims()[0]];
        let (offsets, order) = crate::index_kernels::device_segment_plan(&coords, sizes, dim)?;
        if let Some(c) = cell {
            c.with_plans(|slot| {
                let plans = slot.get_or_insert_with(|| Box::new(SegmentPlans::new()));
                if let Some(plans) = plans.downcast_mut::<SegmentPlans>() {
                    plans.push((dim, device, offsets.clone(), order.clone()));
                }
            });
        }
        Some((offsets, order))
    }

    /// Offsets of the segments when storage order groups them without looking at keys: the
    /// last dim of a coalesced 1- or 2-sparse-dim COO tensor, the plain dim of CSR/CSC. For COO
    /// only the rows that hold entries are segments (memory in the entries, not in the rows: a
    /// 10^9-row matrix with three entries has three segments).
    fn storage_segments(&self, dim: usize) -> Option<Vec<i64>> {
        let nse = self.nnz();
        match &self.indices {
            Indices::Coo(indices) if dim + 1 == self.sparse_dim && self.sparse_dim <= 2 => {
                Some(match self.sparse_dim {
                    1 => vec![0, nse as i64],
                    _ => with_ints(
                        indices,
                        |s| match_ints!(s, i => run_offsets(i[..nse].iter().map(|r| r.to_i64() as u64))),
                    ),
                })
            }
            Indices::Compressed { compressed, .. } if self.blocksize.is_none() => {
                let plain_dim = if self.layout.compresses_rows() { self.batch_dim + 1 } else { self.batch_dim };
                (dim == plain_dim).then(|| batch_offsets(&read_i64(compressed), self.batch_numel(), nse))
            }
            _ => None,
        }
    }
}

/// The softmax segments planned on a device for a compressed pattern, kept in its cell: (dim,
/// device, offsets, order).
type SegmentPlans = Vec<(usize, burn::tensor::Device, Tensor<1, Int>, Tensor<1, Int>)>;

/// Per-batch compressed indices `[batch, n + 1]` as offsets into all `batch * nse` elements.
fn batch_offsets(compressed: &[i64], batch: usize, nse: usize) -> Vec<i64> {
    if batch == 0 {
        return vec![0];
    }
    let n = compressed.len() / batch - 1;
    let mut out = Vec::with_capacity(batch * n + 1);
    out.push(0);
    for b in 0..batch {
        let row = &compressed[b * (n + 1)..(b + 1) * (n + 1)];
        out.extend(row[1..].iter().map(|&c| c + (b * nse) as i64));
    }
    out
}

/// Each key with the coordinate of `dim` taken out (a key over the other dims), and one past
/// the largest such key.
fn keys_without_dim(keys: &[u64], sizes: &[usize], dim: usize) -> (Vec<u64>, u64) {
    let inner = numel(&sizes[dim + 1..]) as u64;
    let (outer, low) = (FastDiv::new(inner * sizes[dim] as u64), FastDiv::new(inner));
    let out = keys
        .iter()
        .map(|&k| {
            let (hi, rest) = outer.divmod(k);
            hi * inner + low.divmod(rest).1
        })
        .collect();
    (out, numel(sizes) as u64 / (sizes[dim] as u64).max(1))
}

/// Offsets of the runs of equal keys in a non-decreasing sequence.
fn run_offsets(keys: impl Iterator<Item = u64>) -> Vec<i64> {
    let mut offsets = vec![0i64];
    let mut last = None;
    let mut n = 0i64;
    for k in keys {
        if last.is_some_and(|l| l != k) {
            offsets.push(n);
        }
        last = Some(k);
        n += 1;
    }
    if n > 0 {
        offsets.push(n);
    }
    offsets
}

// ------------------------------------------------------------------------------------------
// Flex: the host kernels on its buffers.

/// Calls `f` with the offsets and the order (if any) as typed slices.
macro_rules! with_segments {
    ($offsets:expr, $order:expr, |$o:ident, $p:ident| $body:expr) => {{
        let offsets = contiguous($offsets);
        let order = contiguous($order);
        let os = int_slice(&offsets);
        match int_slice(&order) {
            ps if ps.is_empty() => match_ints!(os, $o => { let $p: Option<&[i64]> = None; $body }),
            ps => match_ints!(os, $o => match_ints!(ps, q => { let $p = Some(q); $body })),
        }
    }};
}

/// Cube devices: the kernels of `cube::softmax` (16-bit floats widened to f32, as on Flex).
#[cfg(feature = "cube")]
impl SparseSoftmax for crate::cube::CubeBackend {
    fn segment_softmax(
        values: FloatTensor<Self>,
        offsets: IntTensor<Self>,
        order: IntTensor<Self>,
        log: bool,
    ) -> FloatTensor<Self> {
        crate::cube::spmm::widened([values], |[values]| crate::cube::softmax::softmax(values, offsets, order, log))
    }

    fn segment_softmax_backward(
        y: FloatTensor<Self>,
        g: FloatTensor<Self>,
        offsets: IntTensor<Self>,
        order: IntTensor<Self>,
        log: bool,
    ) -> FloatTensor<Self> {
        crate::cube::spmm::widened([y, g], |[y, g]| crate::cube::softmax::softmax_backward(y, g, offsets, order, log))
    }
}

/// Cube devices under burn's `fusion`: the Cube kernels on the resolved tensors (`cube::fused`).
#[cfg(all(feature = "cube", feature = "fusion"))]
impl SparseSoftmax for crate::cube::FusedCube {
    fn segment_softmax(
        values: FloatTensor<Self>,
        offsets: IntTensor<Self>,
        order: IntTensor<Self>,
        log: bool,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = values.client.clone();
        publish_float(&client, crate::cube::CubeBackend::segment_softmax(float(values), int(offsets), int(order), log))
    }

    fn segment_softmax_backward(
        y: FloatTensor<Self>,
        g: FloatTensor<Self>,
        offsets: IntTensor<Self>,
        order: IntTensor<Self>,
        log: bool,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = y.client.clone();
        let out = crate::cube::CubeBackend::segment_softmax_backward(float(y), float(g), int(offsets), int(order), log);
        publish_float(&client, out)
    }
}

impl SparseSoftmax for Flex {
    fn segment_softmax(values: FlexTensor, offsets: FlexTensor, order: FlexTensor, log: bool) -> FlexTensor {
        let [n, width] = [values.shape()[0], values.shape()[1]];
        with_real(
            [values],
            [n, width],
            |[x]| with_segments!(offsets.clone(), order.clone(), |o, p| segment_softmax(x, width, o, p, log)),
            |[x]| with_segments!(offsets.clone(), order.clone(), |o, p| segment_softmax(x, width, o, p, log)),
        )
    }

    fn segment_softmax_backward(
        y: FlexTensor,
        g: FlexTensor,
        offsets: FlexTensor,
        order: FlexTensor,
        log: bool,
    ) -> FlexTensor {
        let [n, width] = [y.shape()[0], y.shape()[1]];
        with_real(
            [y, g],
            [n, width],
            |[y, g]| {
                with_segments!(offsets.clone(), order.clone(), |o, p| segment_softmax_backward(y, g, width, o, p, log))
            },
            |[y, g]| {
                with_segments!(offsets.clone(), order.clone(), |o, p| segment_softmax_backward(y, g, width, o, p, log))
            },
        )
    }
}

/// Defaults for backends without host kernels, composed of burn ops on the grouped values:
/// per-segment max and sums by scatter (max, add) into `[segments, width]`, gathered back.
pub mod default {
    use super::*;
    use burn::backend::read_sync;
    use burn::tensor::{IndexingUpdateOp, Shape};

    /// Segment id of every grouped element (index algebra, on the host).
    fn segment_ids<B: Backend>(offsets: IntTensor<B>, device: &B::Device) -> (IntTensor<B>, usize) {
        let data = read_sync(B::int_into_data(offsets)).expect("offsets readback");
        let offsets: Vec<i64> = data.iter::<i64>().collect();
        let segments = offsets.len().saturating_sub(1);
        let n = offsets.last().copied().unwrap_or(0) as usize;
        let ids = compress::expand(&offsets, 1, segments, n);
        (B::int_from_data(TensorData::new(ids, [n]), device), segments)
    }

    /// The order as an index tensor, `None` for storage order.
    fn permutation<B: Backend>(order: IntTensor<B>) -> Option<IntTensor<B>> {
        (order.shape().num_elements() > 0).then_some(order)
    }

    fn grouped<B: Backend>(t: FloatTensor<B>, order: &Option<IntTensor<B>>) -> FloatTensor<B> {
        match order {
            Some(o) => B::float_select(t, 0, o.clone()),
            None => t,
        }
    }

    fn ungrouped<B: Backend>(t: FloatTensor<B>, order: Option<IntTensor<B>>) -> FloatTensor<B> {
        match order {
            Some(o) => {
                let zeros = B::float_zeros(t.shape(), &t.device(), t.dtype().into());
                B::float_select_assign(zeros, 0, o, t, IndexingUpdateOp::Add)
            }
            None => t,
        }
    }

    /// `reduce(t)` per segment, broadcast back to every element of the segment.
    fn per_segment<B: Backend>(
        t: FloatTensor<B>,
        ids: &IntTensor<B>,
        segments: usize,
        op: IndexingUpdateOp,
        init: f64,
    ) -> FloatTensor<B> {
        let width = t.shape()[1];
        let acc = B::float_full(Shape::new([segments, width]), init.into(), &t.device(), t.dtype().into());
        let acc = B::float_select_assign(acc, 0, ids.clone(), t, op);
        B::float_select(acc, 0, ids.clone())
    }

    /// Softmax per segment with burn ops.
    pub fn softmax<B: Backend>(
        values: FloatTensor<B>,
        offsets: IntTensor<B>,
        order: IntTensor<B>,
        log: bool,
    ) -> FloatTensor<B> {
        if values.shape().num_elements() == 0 {
            return values;
        }
        let order = permutation::<B>(order);
        let (ids, segments) = segment_ids::<B>(offsets, &values.device());
        let x = grouped::<B>(values, &order);
        let max = per_segment::<B>(x.clone(), &ids, segments, IndexingUpdateOp::Max, f64::NEG_INFINITY);
        let shifted = B::float_sub(x, max);
        let e = B::float_exp(shifted.clone());
        let sum = per_segment::<B>(e.clone(), &ids, segments, IndexingUpdateOp::Add, 0.0);
        let y = if log { B::float_sub(shifted, B::float_log(sum)) } else { B::float_div(e, sum) };
        ungrouped::<B>(y, order)
    }

    /// The backward products per segment with burn ops.
    pub fn backward<B: Backend>(
        y: FloatTensor<B>,
        g: FloatTensor<B>,
        offsets: IntTensor<B>,
        order: IntTensor<B>,
        log: bool,
    ) -> FloatTensor<B> {
        if y.shape().num_elements() == 0 {
            return g;
        }
        let order = permutation::<B>(order);
        let (ids, segments) = segment_ids::<B>(offsets, &y.device());
        let (y, g) = (grouped::<B>(y, &order), grouped::<B>(g, &order));
        let dx = if log {
            let sum = per_segment::<B>(g.clone(), &ids, segments, IndexingUpdateOp::Add, 0.0);
            B::float_sub(g, B::float_mul(B::float_exp(y), sum))
        } else {
            let sum = per_segment::<B>(B::float_mul(g.clone(), y.clone()), &ids, segments, IndexingUpdateOp::Add, 0.0);
            B::float_mul(y, B::float_sub(g, sum))
        };
        ungrouped::<B>(dx, order)
    }
}

/// The backward rule and the tracked forward.
mod autodiff_impl {
    use super::*;
    use burn::backend::autodiff::{
        checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
        grads::Gradients,
        ops::{Backward, Ops, OpsKind},
        Autodiff,
    };

    /// Backward of `sparse_segment_softmax`; one parent, the values.
    #[derive(Debug)]
    struct SegmentSoftmax;

    impl<B: SparseSoftmax> Backward<B, 1> for SegmentSoftmax {
        /// The output, the segments and which of the two functions it was.
        type State = (FloatTensor<B>, IntTensor<B>, IntTensor<B>, bool);

        fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
            let (y, offsets, order, log) = ops.state;
            burn::backend::autodiff::ops::unary::<B, _>(ops.parents, ops.node, grads, |g| {
                B::segment_softmax_backward(y, g, offsets, order, log)
            });
        }
    }

    impl<B: SparseSoftmax, C: CheckpointStrategy> SparseSoftmax for Autodiff<B, C> {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Softmax of each segment from its definition, in f64.
    fn reference(x: &[f64], segments: &[Vec<usize>], log: bool) -> Vec<f64> {
        let mut out = vec![0.0; x.len()];
        for seg in segments {
            let max = seg.iter().map(|&j| x[j]).fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = seg.iter().map(|&j| (x[j] - max).exp()).sum();
            for &j in seg {
                out[j] = if log { x[j] - max - sum.ln() } else { (x[j] - max).exp() / sum };
            }
        }
        out
    }

    #[test]
    fn kernels_and_defaults_match_the_definition() {
        // Segments {3, 0}, {}, {4}, {1, 5, 2} in grouped order, width 1.
        let x = vec![0.5, -1.0, 2.0, 3.0, 0.25, 1.5];
        let offsets = vec![0i64, 2, 2, 3, 6];
        let order = vec![3i64, 0, 4, 1, 5, 2];
        let segments = vec![vec![3, 0], vec![4], vec![1, 5, 2]];
        for log in [false, true] {
            let expected = reference(&x, &segments, log);
            let got = segment_softmax(&x, 1, &offsets, Some(&order), log);
            let host = |t: FlexTensor| t.into_data().iter::<f64>().collect::<Vec<_>>();
            for (a, e) in got.iter().zip(&expected) {
                assert!((a - e).abs() < 1e-14, "{got:?} != {expected:?}");
            }
            let v = FlexTensor::from_data(TensorData::new(x.clone(), [6, 1]));
            let o = FlexTensor::from_data(TensorData::new(offsets.clone(), [5]));
            let p = FlexTensor::from_data(TensorData::new(order.clone(), [6]));
            let d = host(default::softmax::<Flex>(v.clone(), o.clone(), p.clone(), log));
            for (a, e) in d.iter().zip(&expected) {
                assert!((a - e).abs() < 1e-14, "default {d:?} != {expected:?}");
            }
            // Backward: kernel and default agree with each other on a gradient.
            let y = FlexTensor::from_data(TensorData::new(got.clone(), [6, 1]));
            let g = FlexTensor::from_data(TensorData::new(vec![0.3, -0.7, 1.1, 0.2, -0.4, 0.9], [6, 1]));
            let kb = host(Flex::segment_softmax_backward(y.clone(), g.clone(), o.clone(), p.clone(), log));
            let db = host(default::backward::<Flex>(y, g, o, p, log));
            for (a, e) in kb.iter().zip(&db) {
                assert!((a - e).abs() < 1e-14, "backward {kb:?} != {db:?}");
            }
        }
    }

    #[test]
    fn segments_from_keys() {
        // sizes [2, 3]: keys (0,1)=1, (0,2)=2, (1,0)=3, (1,2)=5; along dim 0: columns 1, 2, 0, 2.
        let (k, bound) = keys_without_dim(&[1, 2, 3, 5], &[2, 3], 0);
        assert_eq!((k, bound), (vec![1, 2, 0, 2], 3));
        assert_eq!(run_offsets([0u64, 1, 2, 2].into_iter()), vec![0, 1, 2, 4]);
        assert_eq!(run_offsets(core::iter::empty()), vec![0]);
        assert_eq!(batch_offsets(&[0, 1, 3, 0, 2, 3], 2, 3), vec![0, 1, 3, 5, 6]);
    }
}
