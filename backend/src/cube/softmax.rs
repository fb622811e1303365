//! The segment softmax on Cube devices, forward and backward: a kernel unit per (segment,
//! column), which walks its segment's elements (through `order`, or in storage order) in the
//! passes of the host kernel (`sparsegrad_kernels::softmax`), in its order, so the two agree to
//! rounding. The offsets stay on the device: no call reads anything back.

use super::census;
use super::softmax_planes::{SegmentOp, Segments, SegmentsLaunch};
use burn::backend::cubecl::dtype_to_storage_type;
use burn::tensor::{DType, Shape};
use burn_cubecl::cubecl::{self, calculate_cube_count_elemwise, prelude::*, CubeDim};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::empty_device_contiguous_dtype;
use burn_cubecl::tensor::CubeTensor;

/// The position of the `j`-th grouped element.
#[cube]
pub(crate) fn grouped_at<P: Int>(order: &Tensor<P>, j: usize, #[comptime] ordered: bool) -> usize {
    if ordered {
        usize::cast_from(order[j])
    } else {
        j
    }
}

/// `e^x` for `x <= 0` (or NaN): the device's `exp`, or with `series` (f64: WGSL, and so wgpu,
/// has transcendental functions for f32 alone) from `+`, `*` and `/`, to about an ulp:
/// `x = k ln 2 + r` with `|r| <= ln 2 / 2`, `e^r` by its Taylor series to `r^13` (its remainder is
/// below `2^-53`), the coefficients divided out in the type itself (an f32 `1 / n!` would cost
/// eight digits), and `2^k` by squaring. `ln 2` is split into three f32 parts (Cody and Waite),
/// the first two exact and with few enough bits that `k` times them is exact for every `k` that
/// does not underflow.
#[cube]
pub(crate) fn exp_nonpositive<F: Float>(x: F, #[comptime] series: bool) -> F {
    if series {
        let k = (x * F::new(core::f32::consts::LOG2_E) + F::new(0.5)).floor();
        let r = ((x - k * F::new(0.693_145_75)) - k * F::new(1.428_606_8e-6)) - k * F::new(5.497_923e-14);
        let mut p = F::new(1.0);
        #[unroll]
        for i in 0..13 {
            let n = 13 - i;
            p = F::new(1.0) + r * p / F::new(n as f32);
        }
        // 2^k for k = -m <= 0, bit by bit of m (m below 2^11: anything smaller underflows).
        let mut m = u32::cast_from(F::new(0.0) - k.max(F::new(-2047.0)));
        let mut base = F::new(0.5);
        let mut scale = F::new(1.0);
        #[unroll]
        for _ in 0..11 {
            if m % 2 == 1 {
                scale *= base;
            }
            base *= base;
            m /= 2;
        }
        let e = p * scale;
        // Below -746 the result is 0 (and -inf gives 0, not the NaN of `-inf - k ln 2`).
        select(x < F::new(-746.0), F::new(0.0), e)
    } else {
        x.exp()
    }
}

/// `ln s` for `s >= 1` (the sum of a segment's shifted exponentials, the max's own term 1): the
/// device's `ln`, or with `series` the f32 `ln` refined by two Newton steps on `e^-y s = 1`
/// through [`exp_nonpositive`] (each doubles the correct digits: 7, 14, then the type's 16).
#[cube]
pub(crate) fn ln_at_least_one<F: Float>(s: F, #[comptime] series: bool) -> F {
    if series {
        let mut y = F::cast_from(f32::cast_from(s).ln());
        #[unroll]
        for _ in 0..2 {
            y = y + s * exp_nonpositive::<F>(F::new(0.0) - y, series) - F::new(1.0);
        }
        y
    } else {
        s.ln()
    }
}

/// `out = softmax(x)` (or `log_softmax` when `log`) over each segment `order[offsets[s]..
/// offsets[s + 1]]` of `x [elements, width]`, per column; one unit per (segment, column).
#[cube(launch)]
fn segment_softmax_columns<F: Float, O: Int, P: Int>(
    x: &Tensor<F>,
    segs: &Segments<O, P>,
    out: &mut Tensor<F>,
    #[comptime] op: SegmentOp,
    #[define(F, O, P)] _dtypes: [ElemType; 3],
) {
    if ABSOLUTE_POS >= segs.segments * segs.width {
        terminate!();
    }
    let s = ABSOLUTE_POS / segs.width;
    let c = ABSOLUTE_POS % segs.width;
    let start = usize::cast_from(segs.offsets[s]);
    let end = usize::cast_from(segs.offsets[s + 1]);
    if start >= end {
        terminate!();
    }
    // The max starts at the first element rather than at -inf (WGSL has no infinite literal):
    // the same max, and the same NaN wherever the host kernel gives one.
    let mut max = x[grouped_at::<P>(&segs.order, start, op.ordered) * segs.width + c];
    for j in start + 1..end {
        let v = x[grouped_at::<P>(&segs.order, j, op.ordered) * segs.width + c];
        if v > max {
            max = v;
        }
    }
    // The sum of the shifted exponentials (stored on the way for softmax). No variable is
    // assigned inside a branch on `log`: CubeCL drops such assignments to outer variables.
    let mut sum = F::new(0.0);
    for j in start..end {
        let at = grouped_at::<P>(&segs.order, j, op.ordered) * segs.width + c;
        let v = exp_nonpositive::<F>(x[at] - max, op.series);
        sum += v;
        if !op.log {
            out[at] = v;
        }
    }
    if op.log {
        let shift = max + ln_at_least_one::<F>(sum, op.series);
        for j in start..end {
            let at = grouped_at::<P>(&segs.order, j, op.ordered) * segs.width + c;
            out[at] = x[at] - shift;
        }
    } else {
        let inv = F::new(1.0) / sum;
        for j in start..end {
            let at = grouped_at::<P>(&segs.order, j, op.ordered) * segs.width + c;
            out[at] *= inv;
        }
    }
}

/// The input gradient from the output `y` and its gradient `g`: `y * (g - sum_seg(g * y))`, or
/// `g - exp(y) * sum_seg(g)` when `log`; one unit per (segment, column).
#[cube(launch)]
fn segment_softmax_backward_columns<F: Float, O: Int, P: Int>(
    y: &Tensor<F>,
    g: &Tensor<F>,
    segs: &Segments<O, P>,
    out: &mut Tensor<F>,
    #[comptime] op: SegmentOp,
    #[define(F, O, P)] _dtypes: [ElemType; 3],
) {
    if ABSOLUTE_POS >= segs.segments * segs.width {
        terminate!();
    }
    let s = ABSOLUTE_POS / segs.width;
    let c = ABSOLUTE_POS % segs.width;
    let start = usize::cast_from(segs.offsets[s]);
    let end = usize::cast_from(segs.offsets[s + 1]);
    let mut sum = F::new(0.0);
    for j in start..end {
        let at = grouped_at::<P>(&segs.order, j, op.ordered) * segs.width + c;
        let term = if op.log { g[at] } else { g[at] * y[at] };
        sum += term;
    }
    for j in start..end {
        let at = grouped_at::<P>(&segs.order, j, op.ordered) * segs.width + c;
        if op.log {
            out[at] = g[at] - exp_nonpositive::<F>(y[at], op.series) * sum;
        } else {
            out[at] = y[at] * (g[at] - sum);
        }
    }
}

/// The launch shape of a segment kernel over `values [elements, width]`: `(segments, width)`.
fn segments_of(values: &CubeTensor, offsets: &CubeTensor) -> (usize, usize) {
    let shape = values.meta.shape();
    let width = if shape.len() > 1 { shape[1] } else { 1 };
    (offsets.meta.shape()[0].saturating_sub(1), width)
}

/// Segment softmax of `values` (`[elements]` or `[elements, width]`), the segments valid over its
/// elements (`SoftmaxKernels`' contract, checked by `SegmentPlan`).
pub(crate) fn softmax(values: CubeTensor, offsets: CubeTensor, order: CubeTensor, log: bool) -> CubeTensor {
    let (segments, width) = segments_of(&values, &offsets);
    let values = into_contiguous(values);
    let out = empty_device_contiguous_dtype(
        values.client.clone(),
        values.device.clone(),
        Shape::from(values.meta.shape().to_vec()),
        values.dtype,
    );
    if segments * width == 0 {
        return out;
    }
    crate::cube::spmm::assert_addressable("softmax", &[&values, &order]);
    let ordered = order.meta.num_elements() > 0;
    let order = if ordered { order } else { offsets.clone() };
    let op = SegmentOp { ordered, log, series: values.dtype == DType::F64 };
    if super::path::planes(&out) && super::softmax_planes::serves(&out, width) {
        super::softmax_planes::softmax(values, offsets, order, &out, [segments, width], op);
        return out;
    }
    let cube_dim = CubeDim::new(&out.client, segments * width);
    let count = calculate_cube_count_elemwise(&out.client, segments * width, cube_dim);
    let types = [values.dtype, offsets.dtype, order.dtype].map(dtype_to_storage_type);
    census::launched("segment_softmax_columns");
    segment_softmax_columns::launch(
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
        op,
        types,
    );
    out
}

/// The backward of [`softmax`] from its output `y` and the gradient `g` (shaped as `y`).
pub(crate) fn softmax_backward(
    y: CubeTensor,
    g: CubeTensor,
    offsets: CubeTensor,
    order: CubeTensor,
    log: bool,
) -> CubeTensor {
    let (segments, width) = segments_of(&y, &offsets);
    let y = into_contiguous(y);
    let out = empty_device_contiguous_dtype(
        y.client.clone(),
        y.device.clone(),
        Shape::from(y.meta.shape().to_vec()),
        y.dtype,
    );
    if segments * width == 0 {
        return out;
    }
    crate::cube::spmm::assert_addressable("softmax backward", &[&y, &order]);
    let ordered = order.meta.num_elements() > 0;
    let order = if ordered { order } else { offsets.clone() };
    let op = SegmentOp { ordered, log, series: y.dtype == DType::F64 };
    if super::path::planes(&out) && super::softmax_planes::serves(&out, width) {
        let g = into_contiguous(g);
        super::softmax_planes::softmax_backward(y, g, offsets, order, &out, [segments, width], op);
        return out;
    }
    let cube_dim = CubeDim::new(&out.client, segments * width);
    let count = calculate_cube_count_elemwise(&out.client, segments * width, cube_dim);
    let types = [y.dtype, offsets.dtype, order.dtype].map(dtype_to_storage_type);
    census::launched("segment_softmax_backward_columns");
    segment_softmax_backward_columns::launch(
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
        op,
        types,
    );
    out
}
