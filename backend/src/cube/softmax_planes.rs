//! The segment softmax and its backward on Cube devices with plane operations, for narrow values
//! (fewer columns than the device's smallest plane: the attention scores of a GAT have one column
//! per head).
//!
//! The column kernels of `softmax` give a unit a (segment, column) and have it walk the whole
//! segment: with few columns, neighbouring units walk different segments (no load coalesces) and
//! a hub's segment keeps one unit busy for thousands of elements. Here a group of a plane's units
//! takes a (segment, column), its units consecutive elements of the segment, and the max and the
//! sum of the shifted exponentials meet in plane reductions (`plane_ops`): a long segment is
//! shared by the group, and a plane serves several short segments at once. The sums are taken in
//! another order than the host kernel's, so the two agree to rounding, not bit for bit.
//!
//! Every unit of a plane takes every plane operation the same number of times (the trip counts
//! depend on the launch alone); a group past the last (segment, column) works on the last one and
//! writes nothing.

use super::census;
use super::plane_ops::{group_for, group_max, group_sum};
use super::softmax::{exp_nonpositive, grouped_at, ln_at_least_one};
use burn::backend::cubecl::dtype_to_storage_type;
use burn_cubecl::cubecl::{self, calculate_cube_count_elemwise, prelude::*, CubeDim};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;

/// The units of a cube: a multiple of every plane size (at most 128).
const CUBE_UNITS: usize = 256;

/// The segments a launch works on (here and in `softmax`'s column kernels): their offsets and
/// order, and the sizes.
#[derive(CubeLaunch, CubeType)]
pub(crate) struct Segments<O: Int, P: Int> {
    /// Segment `s` is `order[offsets[s]..offsets[s + 1]]` (or that range itself).
    pub offsets: OwnedTensor<O>,
    /// The grouped elements' positions (the offsets again where the segments are not ordered).
    pub order: OwnedTensor<P>,
    /// Segments: `offsets`' length less one.
    pub segments: usize,
    /// Columns of the values, `[elements, width]`.
    pub width: usize,
}

/// What a launch computes, fixed when its kernel is compiled (a comptime argument).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub(crate) struct SegmentOp {
    /// The elements of a segment are `order[offsets[s]..offsets[s + 1]]` (else the range itself).
    pub ordered: bool,
    /// `log_softmax` rather than `softmax`.
    pub log: bool,
    /// f64 `exp` and `ln` from `+`, `*` and `/` (`softmax::exp_nonpositive`).
    pub series: bool,
}

/// `out = softmax(x)` (or `log_softmax` when `log`) over each segment, per column; a group of
/// `group` units (the whole plane when 0) per (segment, column), groups striding over them.
#[cube(launch)]
// CubeCL's kernels have no `div_ceil`; `if a { if b {..} }` keeps the comptime `a` apart from
// the runtime `b`, which CubeCL cannot join in one condition.
#[allow(clippy::manual_div_ceil, clippy::collapsible_if)]
fn segment_softmax_planes<F: Float, O: Int, P: Int>(
    x: &Tensor<F>,
    segs: &Segments<O, P>,
    out: &mut Tensor<F>,
    #[comptime] group: u32,
    #[comptime] op: SegmentOp,
    #[define(F, O, P)] _dtypes: [ElemType; 3],
) {
    let width = if comptime!(group == 0) { PLANE_DIM as usize } else { comptime!(group as usize).runtime() };
    let lane = UNIT_POS_PLANE as usize % width;
    let groups = CUBE_COUNT * CUBE_DIM as usize / width;
    let items = segs.segments * segs.width;
    let rounds = (items + groups - 1) / groups;
    for round in 0..rounds {
        let item = round * groups + ABSOLUTE_POS / width;
        let live = item < items;
        let at_item = select(live, item, items - 1);
        let s = at_item / segs.width;
        let c = at_item % segs.width;
        let start = usize::cast_from(segs.offsets[s]);
        let end = usize::cast_from(segs.offsets[s + 1]);
        // Every unit starts from the segment's first element, as the host kernel's max does (an
        // empty segment reads a clamped element and writes nothing).
        let mut max = x[grouped_at::<P>(&segs.order, start, op.ordered) * segs.width + c];
        let mut j = start + lane;
        while j < end {
            let v = x[grouped_at::<P>(&segs.order, j, op.ordered) * segs.width + c];
            max = select(v > max, v, max);
            j += width;
        }
        max = group_max::<F>(max, group);
        let mut sum = F::new(0.0);
        j = start + lane;
        while j < end {
            let at = grouped_at::<P>(&segs.order, j, op.ordered) * segs.width + c;
            let e = exp_nonpositive::<F>(x[at] - max, op.series);
            sum += e;
            if !op.log {
                if live {
                    out[at] = e;
                }
            }
            j += width;
        }
        sum = group_sum::<F>(sum, group);
        // No variable is assigned inside a branch on the comptime `log` (CubeCL drops such
        // assignments to outer variables): the shift and the scale are both computed.
        let shift = max + ln_at_least_one::<F>(select(sum < F::new(1.0), F::new(1.0), sum), op.series);
        let inv = F::new(1.0) / sum;
        j = start + lane;
        while j < end {
            let at = grouped_at::<P>(&segs.order, j, op.ordered) * segs.width + c;
            if live {
                if op.log {
                    out[at] = x[at] - shift;
                } else {
                    out[at] *= inv;
                }
            }
            j += width;
        }
    }
}

/// The input gradient from the output `y` and its gradient `g`: `y * (g - sum_seg(g * y))`, or
/// `g - exp(y) * sum_seg(g)` when `log`; a group per (segment, column), as the forward.
#[cube(launch)]
// CubeCL's kernels have no `div_ceil`.
#[allow(clippy::manual_div_ceil)]
fn segment_softmax_backward_planes<F: Float, O: Int, P: Int>(
    y: &Tensor<F>,
    g: &Tensor<F>,
    segs: &Segments<O, P>,
    out: &mut Tensor<F>,
    #[comptime] group: u32,
    #[comptime] op: SegmentOp,
    #[define(F, O, P)] _dtypes: [ElemType; 3],
) {
    let width = if comptime!(group == 0) { PLANE_DIM as usize } else { comptime!(group as usize).runtime() };
    let lane = UNIT_POS_PLANE as usize % width;
    let groups = CUBE_COUNT * CUBE_DIM as usize / width;
    let items = segs.segments * segs.width;
    let rounds = (items + groups - 1) / groups;
    for round in 0..rounds {
        let item = round * groups + ABSOLUTE_POS / width;
        let live = item < items;
        let at_item = select(live, item, items - 1);
        let s = at_item / segs.width;
        let c = at_item % segs.width;
        let start = usize::cast_from(segs.offsets[s]);
        let end = usize::cast_from(segs.offsets[s + 1]);
        let mut sum = F::new(0.0);
        let mut j = start + lane;
        while j < end {
            let at = grouped_at::<P>(&segs.order, j, op.ordered) * segs.width + c;
            let term = if op.log { g[at] } else { g[at] * y[at] };
            sum += term;
            j += width;
        }
        sum = group_sum::<F>(sum, group);
        j = start + lane;
        while j < end {
            let at = grouped_at::<P>(&segs.order, j, op.ordered) * segs.width + c;
            if live {
                if op.log {
                    out[at] = g[at] - exp_nonpositive::<F>(y[at], op.series) * sum;
                } else {
                    out[at] = y[at] * (g[at] - sum);
                }
            }
            j += width;
        }
    }
}

/// Whether the plane kernels serve values of `width` columns on `t`'s device: narrower than its
/// smallest plane (wider values are read coalesced by the column kernels already).
pub(crate) fn serves(t: &CubeTensor, width: usize) -> bool {
    width < t.client.properties().hardware.plane_size_min as usize
}

/// The launch of either kernel over `segments` segments of `elements` elements of `width`
/// columns: the group (by the mean segment's length), the cube dim and count.
fn launch_shape(out: &CubeTensor, segments: usize, width: usize, elements: usize) -> (u32, CubeDim, CubeCount) {
    let hardware = &out.client.properties().hardware;
    let group = group_for(elements.div_ceil(segments.max(1)), hardware.plane_size_min as usize);
    let per_item = if group == 0 { hardware.plane_size_max.max(1) as usize } else { group as usize };
    let cube_dim = CubeDim::new_1d(CUBE_UNITS as u32);
    let count = calculate_cube_count_elemwise(&out.client, segments * width * per_item, cube_dim);
    (group, cube_dim, count)
}

/// The forward on `values [elements, width]` (contiguous) into `out` (shaped as it), over
/// `segments` segments, `segments * width > 0` and the segments valid (checked by the caller,
/// `softmax::softmax`).
pub(crate) fn softmax(
    values: CubeTensor,
    offsets: CubeTensor,
    order: CubeTensor,
    out: &CubeTensor,
    [segments, width]: [usize; 2],
    op: SegmentOp,
) {
    let elements = values.meta.shape()[0];
    let (group, cube_dim, count) = launch_shape(out, segments, width, elements);
    let types = [values.dtype, offsets.dtype, order.dtype].map(dtype_to_storage_type);
    census::launched("segment_softmax_planes");
    segment_softmax_planes::launch(
        &out.client,
        count,
        cube_dim,
        values.into_tensor_arg(),
        SegmentsLaunch::new(
            into_contiguous(offsets).into_tensor_arg(),
            into_contiguous(order).into_tensor_arg(),
            segments,
            width,
        ),
        out.clone().into_tensor_arg(),
        group,
        op,
        types,
    );
}

/// The backward from `y` and `g` (contiguous, shaped as `out`), as [`softmax`].
pub(crate) fn softmax_backward(
    y: CubeTensor,
    g: CubeTensor,
    offsets: CubeTensor,
    order: CubeTensor,
    out: &CubeTensor,
    [segments, width]: [usize; 2],
    op: SegmentOp,
) {
    let elements = y.meta.shape()[0];
    let (group, cube_dim, count) = launch_shape(out, segments, width, elements);
    let types = [y.dtype, offsets.dtype, order.dtype].map(dtype_to_storage_type);
    census::launched("segment_softmax_backward_planes");
    segment_softmax_backward_planes::launch(
        &out.client,
        count,
        cube_dim,
        y.into_tensor_arg(),
        into_contiguous(g).into_tensor_arg(),
        SegmentsLaunch::new(
            into_contiguous(offsets).into_tensor_arg(),
            into_contiguous(order).into_tensor_arg(),
            segments,
            width,
        ),
        out.clone().into_tensor_arg(),
        group,
        op,
        types,
    );
}
