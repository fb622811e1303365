//! Segment softmax: over each segment (the stored elements that share every index but one), a
//! softmax or log-softmax of their values, and the input gradient from the output and its
//! gradient. torch's sparse softmax treats unspecified elements as -inf, so a segment's softmax
//! runs over its stored elements only.
//!
//! Three short passes over each segment while it is in cache (the max; the shifted
//! exponentials, stored, and their sum; the scaled output), segments in parallel blocks
//! balanced by element count, each dense column of hybrid values on its own.

use crate::index::{IndexElem, PARALLEL_MIN};
use crate::pattern::balanced_row_blocks;
use rayon::prelude::*;

/// A value type the softmax kernels compute in.
pub trait SoftmaxReal:
    Copy
    + Default
    + Send
    + Sync
    + PartialOrd
    + 'static
    + core::ops::Add<Output = Self>
    + core::ops::Sub<Output = Self>
    + core::ops::Mul<Output = Self>
    + core::ops::Div<Output = Self>
{
    /// -inf: the max of an empty column.
    const NEG_INFINITY: Self;
    /// 1.
    const ONE: Self;
    /// `e^self`.
    fn exp(self) -> Self;
    /// Natural logarithm.
    fn ln(self) -> Self;
}

macro_rules! softmax_real {
    ($($t:ty),*) => {$(
        impl SoftmaxReal for $t {
            const NEG_INFINITY: Self = <$t>::NEG_INFINITY;
            const ONE: Self = 1.0;
            #[inline(always)]
            fn exp(self) -> Self { <$t>::exp(self) }
            #[inline(always)]
            fn ln(self) -> Self { <$t>::ln(self) }
        }
    )*};
}
softmax_real!(f32, f64);

/// Where each grouped element is stored, a static choice so the hot loops carry no branch on it.
trait Positions: Copy + Send + Sync {
    /// The storage position of grouped element `j`.
    fn at(self, j: usize) -> usize;
    /// Grouped order is storage order.
    const STORAGE: bool;
}

/// Grouped order is storage order.
#[derive(Clone, Copy)]
struct Storage;

impl Positions for Storage {
    #[inline(always)]
    fn at(self, j: usize) -> usize {
        j
    }
    const STORAGE: bool = true;
}

/// Grouped element `j` is stored at `perm[j]`.
#[derive(Clone, Copy)]
struct Perm<'a, P>(&'a [P]);

impl<P: IndexElem> Positions for Perm<'_, P> {
    #[inline(always)]
    fn at(self, j: usize) -> usize {
        self.0[j].to_i64() as usize
    }
    const STORAGE: bool = false;
}

/// Runs `segment(s, e, out)` for every segment `[s, e)` of the grouped order, `out` its grouped
/// output rows, in parallel blocks of segments balanced by element count; then puts the grouped
/// output back in storage order.
fn for_each_segment<T, O, Q>(
    offsets: &[O],
    order: Q,
    width: usize,
    segment: impl Fn(usize, usize, &mut [T]) + Sync,
) -> Vec<T>
where
    T: Copy + Default + Send + Sync,
    O: IndexElem,
    Q: Positions,
{
    let n = offsets.last().map_or(0, |o| o.to_i64() as usize);
    let mut grouped = vec![T::default(); n * width];
    if grouped.is_empty() {
        return grouped;
    }
    let tasks = if n >= PARALLEL_MIN { rayon::current_num_threads() * 8 } else { 1 };
    let cuts = balanced_row_blocks(offsets, tasks);
    let mut parts = Vec::with_capacity(cuts.len());
    let mut rest: &mut [T] = &mut grouped;
    for w in cuts.windows(2) {
        let len = (offsets[w[1]].to_i64() - offsets[w[0]].to_i64()) as usize * width;
        let (head, tail) = rest.split_at_mut(len);
        parts.push((w[0]..w[1], head));
        rest = tail;
    }
    parts.into_par_iter().for_each(|(segments, out)| {
        let base = offsets[segments.start].to_i64() as usize;
        for s in segments {
            let (a, b) = (offsets[s].to_i64() as usize, offsets[s + 1].to_i64() as usize);
            segment(a, b, &mut out[(a - base) * width..(b - base) * width]);
        }
    });
    if Q::STORAGE {
        return grouped;
    }
    let mut out = vec![T::default(); n * width];
    for (j, row) in grouped.chunks_exact(width).enumerate() {
        let p = order.at(j);
        out[p * width..(p + 1) * width].copy_from_slice(row);
    }
    out
}

/// Checks that `offsets` (from 0, non-decreasing) cut `len / width` elements into segments, and
/// that `order`, when given, names one element per grouped position: a panic naming the
/// mismatch, before anything is sized by them.
pub fn check_segments<O: IndexElem, P: IndexElem>(len: usize, width: usize, offsets: &[O], order: Option<&[P]>) {
    let n = offsets.last().map_or(0, |o| o.to_i64());
    assert!(
        offsets.first().is_none_or(|o| o.to_i64() == 0) && offsets.windows(2).all(|w| w[0] <= w[1]),
        "segment softmax: offsets must start at 0 and never decrease"
    );
    assert_eq!(
        Some(len),
        usize::try_from(n).ok().and_then(|n| n.checked_mul(width)),
        "segment softmax: the segments hold {n} elements of width {width}, the values {len}"
    );
    if let Some(p) = order {
        assert!(
            p.len() as i64 == n && p.iter().all(|&q| (q.to_i64() as u64) < n as u64),
            "segment softmax: the order names {} positions in 0..{n}",
            p.len()
        );
    }
}

/// Softmax (`log`: log-softmax) of `x` (`[elements, width]`) over each segment, per column:
/// the max, then the sum of shifted exponentials (stored on the way for softmax), then the
/// output.
///
/// # Panics
/// If the segments do not cover the elements of `x` (see [`check_segments`]).
pub fn segment_softmax<T: SoftmaxReal, O: IndexElem, P: IndexElem>(
    x: &[T],
    width: usize,
    offsets: &[O],
    order: Option<&[P]>,
    log: bool,
) -> Vec<T> {
    check_segments(x.len(), width, offsets, order);
    match order {
        None => softmax_in(x, width, offsets, Storage, log),
        Some(p) => softmax_in(x, width, offsets, Perm(p), log),
    }
}

fn softmax_in<T: SoftmaxReal, O: IndexElem, Q: Positions>(
    x: &[T],
    width: usize,
    offsets: &[O],
    order: Q,
    log: bool,
) -> Vec<T> {
    if width == 1 && Q::STORAGE {
        return for_each_segment(offsets, order, 1, |s, e, out| softmax_contiguous(&x[s..e], out, log));
    }
    let at = |j: usize, c: usize| x[order.at(j) * width + c];
    for_each_segment(offsets, order, width, |s, e, out| {
        for c in 0..width {
            let mut max = T::NEG_INFINITY;
            for j in s..e {
                let v = at(j, c);
                if v > max {
                    max = v;
                }
            }
            let mut sum = T::default();
            if log {
                for j in s..e {
                    sum = sum + (at(j, c) - max).exp();
                }
                let shift = max + sum.ln();
                for j in s..e {
                    out[(j - s) * width + c] = at(j, c) - shift;
                }
            } else {
                for j in s..e {
                    let v = (at(j, c) - max).exp();
                    out[(j - s) * width + c] = v;
                    sum = sum + v;
                }
                let inv = T::ONE / sum;
                for j in s..e {
                    let o = &mut out[(j - s) * width + c];
                    *o = *o * inv;
                }
            }
        }
    })
}

/// One segment of scalars stored contiguously (the common case: CSR rows, the last dim of a
/// coalesced COO tensor), on slices so the passes run without index arithmetic.
#[inline(always)]
fn softmax_contiguous<T: SoftmaxReal>(x: &[T], out: &mut [T], log: bool) {
    let max = x.iter().fold(T::NEG_INFINITY, |m, &v| if v > m { v } else { m });
    let mut sum = T::default();
    if log {
        for &v in x {
            sum = sum + (v - max).exp();
        }
        let shift = max + sum.ln();
        for (o, &v) in out.iter_mut().zip(x) {
            *o = v - shift;
        }
    } else {
        for (o, &v) in out.iter_mut().zip(x) {
            *o = (v - max).exp();
            sum = sum + *o;
        }
        let inv = T::ONE / sum;
        for o in out.iter_mut() {
            *o = *o * inv;
        }
    }
}

/// The input gradient of a segment softmax from its output `y` and output gradient `g`:
/// `y * (g - sum_seg(g * y))`, or for a log-softmax `g - exp(y) * sum_seg(g)`.
///
/// # Panics
/// If the segments do not cover the elements of `y`, or `g` is not shaped as `y`.
pub fn segment_softmax_backward<T: SoftmaxReal, O: IndexElem, P: IndexElem>(
    y: &[T],
    g: &[T],
    width: usize,
    offsets: &[O],
    order: Option<&[P]>,
    log: bool,
) -> Vec<T> {
    check_segments(y.len(), width, offsets, order);
    assert_eq!(g.len(), y.len(), "segment softmax backward: the gradient is shaped as the output");
    match order {
        None => backward_in(y, g, width, offsets, Storage, log),
        Some(p) => backward_in(y, g, width, offsets, Perm(p), log),
    }
}

fn backward_in<T: SoftmaxReal, O: IndexElem, Q: Positions>(
    y: &[T],
    g: &[T],
    width: usize,
    offsets: &[O],
    order: Q,
    log: bool,
) -> Vec<T> {
    let at = |t: &[T], j: usize, c: usize| t[order.at(j) * width + c];
    for_each_segment(offsets, order, width, |s, e, out| {
        for c in 0..width {
            let mut sum = T::default();
            for j in s..e {
                sum = sum + if log { at(g, j, c) } else { at(g, j, c) * at(y, j, c) };
            }
            for j in s..e {
                let (yv, gv) = (at(y, j, c), at(g, j, c));
                out[(j - s) * width + c] = if log { gv - yv.exp() * sum } else { yv * (gv - sum) };
            }
        }
    })
}
