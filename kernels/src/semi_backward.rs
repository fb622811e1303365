//! The two products a 2:4 layer's backward needs, straight from the metadata (no CSR arrays,
//! no transposed pattern):
//!
//! - `semi_mm_t`: `Aᵀ · G` (`G [rows, n]`, result `[cols, n]`): the input's gradient. Each
//!   row of `A` adds its kept values times its row of `G` to the result rows of their columns.
//!   Tasks own a slab of the result's rows (a range of `A`'s columns, so a range of every row's
//!   groups) times a panel of its columns, so no two write the same element and the slab stays
//!   in cache while every row of `A` passes over it.
//! - `semi_sddmm`: `out[r, j] = G[r] · B[col(r, j)]` (`G [rows, n]`, `B [cols, n]`): the kept
//!   values' gradient, one dot product per kept value, the row of `G` read once for all of them.
//!
//! Through the CSR view these took eleven times the forward product at M = 256,
//! K = N = 4096: the view (8M decoded columns) and its transpose were rebuilt at every call.

use crate::alloc::out_len;
use crate::pattern::SendPtr;
use crate::real::Real;
use crate::semi::{SemiLayout, SemiRef, WORD_COLUMNS};
#[cfg(target_arch = "x86_64")]
use crate::simd::{as_f32, as_f32_mut};
use crate::simd::{fmadd, prefetch_range};
use macerator::{vload_unaligned, vstore_unaligned, with_simd, Simd, Vector};
use rayon::prelude::*;

mod mm_t;
mod sddmm;

use mm_t::*;
pub use sddmm::semi_sddmm;

/// `Aᵀ · G` on host slices (`G [rows, n]`): result `[cols, n]`, straight from the metadata.
///
/// # Panics
/// If `g` is not `[rows, n]`.
pub fn semi_mm_t<T: Real>(a: SemiRef<'_, T>, g: &[T], n: usize) -> Vec<T> {
    let (rows, cols) = (a.layout().rows(), a.layout().cols());
    assert_eq!(g.len(), out_len(rows, n, "semi_mm_t: g"), "semi_mm_t: g is [rows, n] = [{rows}, {n}]");
    let len = out_len(cols, n, "semi_mm_t: the output");
    // Zeroed (a matrix with no rows adds nothing); the tasks then write every element.
    let mut out = vec![T::default(); len];
    if len == 0 || rows == 0 {
        return out;
    }
    let groups = cols / 4;
    let panels = mm_t_panels::<T>(n);
    // Slabs of groups whose sums fill 32 KB (L1) on the portable path, 256 KB (L2) on the
    // AVX-512 one (which keeps a result row in registers while it sums a list), fewer groups
    // where that leaves too few tasks for the threads.
    let budget = if wide_panels::<T>() || lists_span_n(n) { 256 * 1024 } else { 32 * 1024 };
    let spread = groups.div_ceil((4 * rayon::current_num_threads()).div_ceil(panels.len())).max(1);
    let tasks: Vec<((usize, usize), (usize, usize))> = panels
        .iter()
        .flat_map(|&(p0, w)| {
            let slab = (budget / (4 * w * core::mem::size_of::<T>())).clamp(1, spread);
            (0..groups).step_by(slab).map(move |g0| ((g0, (g0 + slab).min(groups)), (p0, w)))
        })
        .collect();
    let dst = SendPtr(out.as_mut_ptr());
    let (meta, vals) = (a.layout().meta(), a.vals());
    tasks.into_par_iter().for_each(|(grp, panel)| {
        // SAFETY: the output is `[cols, n]`; the tasks' (group range, panel) rectangles are
        // disjoint: group ranges cover disjoint result rows (a group's columns lie in it) and
        // panels disjoint columns.
        unsafe { mm_t_task_dispatch(meta, vals, (rows, cols), g, n, grp, panel, &dst) }
    });
    out
}

#[cfg(test)]
mod tests;
