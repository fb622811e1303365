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
use crate::simd::multiversion;
#[cfg(target_arch = "x86_64")]
use crate::simd::{as_f32, as_f32_mut};
use rayon::prelude::*;

/// Result columns per task panel of `semi_mm_t`.
const PANEL: usize = 64;

/// The kept columns of group `g` of a row, from the row's metadata words.
#[inline(always)]
fn group_columns(words: &[i16], g: usize) -> (usize, usize) {
    let nibble = (words[g / 4] as u16 as usize) >> (4 * (g % 4));
    (4 * g + (nibble & 3), 4 * g + ((nibble >> 2) & 3))
}

/// `o += v · x` over `W` elements.
#[inline(always)]
fn axpy<T: Real, const FMA: bool>(o: &mut [T], v: T, x: &[T]) {
    for (o, &x) in o.iter_mut().zip(x) {
        *o = if FMA { T::mul_add(v, x, *o) } else { *o + v * x };
    }
}

/// One task of `semi_mm_t`: groups `g0..g1` of every row (result rows `4 g0..4 g1`), result
/// columns `p0..p0 + w`, summed in a contiguous block that stays in L1 and then written to
/// `out`. (Summed in place, the rows a kept value adds to are a row of `out` apart: 1 KB at
/// n = 256, and every update waited on L2.)
///
/// # Safety
/// `out` holds `[cols, n]`; no other task writes these rows in these columns.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn mm_t_task<T: Real, const FMA: bool>(
    meta: &[i16],
    vals: &[T],
    (rows, cols): (usize, usize),
    g: &[T],
    n: usize,
    (g0, g1): (usize, usize),
    (p0, w): (usize, usize),
    out: &SendPtr<T>,
) {
    let (words, half) = (cols.div_ceil(WORD_COLUMNS), cols / 2);
    let mut acc = vec![T::default(); 4 * (g1 - g0) * w];
    for r in 0..rows {
        let (wr, vr) = (&meta[r * words..(r + 1) * words], &vals[r * half..(r + 1) * half]);
        let gr = &g[r * n + p0..][..w];
        for grp in g0..g1 {
            let (c0, c1) = group_columns(wr, grp);
            let (v0, v1) = (vr[2 * grp], vr[2 * grp + 1]);
            let (a0, a1) = ((c0 - 4 * g0) * w, (c1 - 4 * g0) * w);
            if w == PANEL {
                // Whole panels at a constant width: the loop vectorises.
                let gp: &[T; PANEL] = gr.try_into().expect("a whole panel");
                axpy::<T, FMA>(&mut acc[a0..a0 + PANEL], v0, gp);
                axpy::<T, FMA>(&mut acc[a1..a1 + PANEL], v1, gp);
            } else {
                axpy::<T, FMA>(&mut acc[a0..a0 + w], v0, gr);
                axpy::<T, FMA>(&mut acc[a1..a1 + w], v1, gr);
            }
        }
    }
    for (i, row) in acc.chunks_exact(w).enumerate() {
        let c = 4 * g0 + i;
        // SAFETY: c < 4 g1 <= cols and p0 + w <= n: inside the output, in this task's rectangle
        // (the caller's promise).
        unsafe { core::ptr::copy_nonoverlapping(row.as_ptr(), out.at(c * n + p0), w) };
    }
}

/// The operands of one (row chunk, group) pass of `mm_t_task_f32_avx512`.
#[cfg(target_arch = "x86_64")]
struct Bucket<'a> {
    vals: &'a [f32],
    g: &'a [f32],
    half: usize,
    n: usize,
    r0: usize,
    grp: usize,
    p0: usize,
}

#[cfg(target_arch = "x86_64")]
impl Bucket<'_> {
    /// Adds, for each chunk row `r0 + i` of `rows` (whose group keeps slots `S0` and `S1`), its
    /// kept values times its panel of `G` to result rows `S0` and `S1` of `acc`.
    ///
    /// # Safety
    /// The CPU supports AVX-512F.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn add<const S0: usize, const S1: usize>(
        &self,
        rows: &[u8],
        acc: &mut [[core::arch::x86_64::__m512; 4]; 4],
    ) {
        use core::arch::x86_64::*;
        for &i in rows {
            let r = self.r0 + i as usize;
            let (v0, v1) = (self.vals[r * self.half + 2 * self.grp], self.vals[r * self.half + 2 * self.grp + 1]);
            let gp = self.g[r * self.n + self.p0..][..PANEL].as_ptr();
            let (c0, c1) = (_mm512_set1_ps(v0), _mm512_set1_ps(v1));
            // SAFETY: `gp` starts a checked slice of 64 floats.
            let x: [__m512; 4] = core::array::from_fn(|q| unsafe { _mm512_loadu_ps(gp.add(16 * q)) });
            for (q, &xq) in x.iter().enumerate() {
                acc[S0][q] = _mm512_fmadd_ps(c0, xq, acc[S0][q]);
                acc[S1][q] = _mm512_fmadd_ps(c1, xq, acc[S1][q]);
            }
        }
    }
}

/// [`mm_t_task`] for f32 with AVX-512 on a whole panel (64 columns): one group at a time, its
/// four result rows' panel (16 registers) summed over a chunk of rows of `A` in registers (summed
/// in memory, each update waited on the previous one's store). The chunk's rows are bucketed by
/// the group's nibble, so each bucket adds to its two result rows by registers known at compile
/// time (one coefficient per slot, zero on the unkept two, doubled the multiply-adds).
///
/// # Safety
/// The CPU supports AVX-512F; `w = 64`; as [`mm_t_task`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
unsafe fn mm_t_task_f32_avx512(
    meta: &[i16],
    vals: &[f32],
    (rows, cols): (usize, usize),
    g: &[f32],
    n: usize,
    (g0, g1): (usize, usize),
    p0: usize,
    out: &SendPtr<f32>,
) {
    use core::arch::x86_64::*;
    let (words, half) = (cols.div_ceil(WORD_COLUMNS), cols / 2);
    assert!(meta.len() >= rows * words && vals.len() >= rows * half && g.len() >= rows * n && p0 + PANEL <= n);
    // Rows go in chunks whose panel of `G` (128 rows x 64 floats, 32 KB) stays in L1 while
    // every group of the slab passes over it; the groups' sums wait in `sums` between chunks.
    // (Down all rows at once, the panel, 1 MB at 4096 rows, came from L3 for every group.)
    const CHUNK: usize = 128;
    let mut sums = vec![0f32; (g1 - g0) * 4 * PANEL];
    let mut bucket = [[0u8; CHUNK]; 16];
    for r0 in (0..rows).step_by(CHUNK) {
        for grp in g0..g1 {
            let sp = sums[(grp - g0) * 4 * PANEL..][..4 * PANEL].as_mut_ptr();
            let mut acc: [[__m512; 4]; 4] = core::array::from_fn(|s| {
                // SAFETY: `sp` starts a checked slice of 4 x 64 floats.
                core::array::from_fn(|q| unsafe { _mm512_loadu_ps(sp.add(PANEL * s + 16 * q)) })
            });
            // The chunk's rows by the group's nibble (its two slots), so that each bucket adds
            // to two result rows known at compile time: two multiply-adds per register of `G`
            // rather than four (one per slot, with zero coefficients on the unkept two).
            let mut count = [0usize; 16];
            let end = (r0 + CHUNK).min(rows);
            for r in r0..end {
                let nibble = (meta[r * words + grp / 4] as u16 as usize >> (4 * (grp % 4))) & 15;
                bucket[nibble][count[nibble]] = (r - r0) as u8;
                count[nibble] += 1;
            }
            for (nibble, &c) in count.iter().enumerate() {
                let rows_of = &bucket[nibble][..c];
                let at = Bucket { vals, g, half, n, r0, grp, p0 };
                // Every nibble, valid or not (both slots equal adds both values to one row).
                // SAFETY: AVX-512F is enabled here (every arm); the bucket's rows are below
                // `end <= rows`, and `add` reads through checked slices.
                unsafe {
                    match nibble {
                        0 => at.add::<0, 0>(rows_of, &mut acc),
                        1 => at.add::<1, 0>(rows_of, &mut acc),
                        2 => at.add::<2, 0>(rows_of, &mut acc),
                        3 => at.add::<3, 0>(rows_of, &mut acc),
                        4 => at.add::<0, 1>(rows_of, &mut acc),
                        5 => at.add::<1, 1>(rows_of, &mut acc),
                        6 => at.add::<2, 1>(rows_of, &mut acc),
                        7 => at.add::<3, 1>(rows_of, &mut acc),
                        8 => at.add::<0, 2>(rows_of, &mut acc),
                        9 => at.add::<1, 2>(rows_of, &mut acc),
                        10 => at.add::<2, 2>(rows_of, &mut acc),
                        11 => at.add::<3, 2>(rows_of, &mut acc),
                        12 => at.add::<0, 3>(rows_of, &mut acc),
                        13 => at.add::<1, 3>(rows_of, &mut acc),
                        14 => at.add::<2, 3>(rows_of, &mut acc),
                        _ => at.add::<3, 3>(rows_of, &mut acc),
                    }
                }
            }
            for (s, row) in acc.iter().enumerate() {
                for (q, a) in row.iter().enumerate() {
                    // SAFETY: inside the slice of 4 x 64 floats `sp` starts.
                    unsafe { _mm512_storeu_ps(sp.add(PANEL * s + 16 * q), *a) };
                }
            }
        }
    }
    for (i, row) in sums.chunks_exact(PANEL).enumerate() {
        let c = 4 * g0 + i;
        // SAFETY: c < 4 g1 <= cols and p0 + 64 <= n: inside the output, in this task's
        // rectangle (the caller's promise).
        unsafe { core::ptr::copy_nonoverlapping(row.as_ptr(), out.at(c * n + p0), PANEL) };
    }
}

/// `mm_t_task` compiled for the best vector extension available.
///
/// # Safety
/// As `mm_t_task`.
#[allow(clippy::too_many_arguments)]
unsafe fn mm_t_task_dispatch<T: Real>(
    meta: &[i16],
    vals: &[T],
    shape: (usize, usize),
    g: &[T],
    n: usize,
    groups: (usize, usize),
    panel: (usize, usize),
    out: &SendPtr<T>,
) {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::simd::{isa, Isa};
        if let (Some(v32), Some(g32), true) = (as_f32(vals), as_f32(g), panel.1 == PANEL && isa() == Isa::Avx512) {
            let out32 = SendPtr(out.0 as *mut f32);
            // SAFETY: `isa` detected AVX-512F; T is f32 (`as_f32` checked it), so `out` holds
            // f32s; the panel is whole; the rest as the caller promises.
            return unsafe { mm_t_task_f32_avx512(meta, v32, shape, g32, n, groups, panel.0, &out32) };
        }
        #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
        #[allow(clippy::too_many_arguments)]
        unsafe fn avx512<T: Real>(
            meta: &[i16],
            vals: &[T],
            shape: (usize, usize),
            g: &[T],
            n: usize,
            groups: (usize, usize),
            panel: (usize, usize),
            out: &SendPtr<T>,
        ) {
            // SAFETY: as the caller promises.
            unsafe { mm_t_task::<T, true>(meta, vals, shape, g, n, groups, panel, out) }
        }
        #[target_feature(enable = "avx2,fma")]
        #[allow(clippy::too_many_arguments)]
        unsafe fn avx2<T: Real>(
            meta: &[i16],
            vals: &[T],
            shape: (usize, usize),
            g: &[T],
            n: usize,
            groups: (usize, usize),
            panel: (usize, usize),
            out: &SendPtr<T>,
        ) {
            // SAFETY: as the caller promises.
            unsafe { mm_t_task::<T, true>(meta, vals, shape, g, n, groups, panel, out) }
        }
        match isa() {
            // SAFETY: `isa` detected the features; the rest as the caller promises.
            Isa::Avx512 => return unsafe { avx512(meta, vals, shape, g, n, groups, panel, out) },
            // SAFETY: as above.
            Isa::Avx2Fma => return unsafe { avx2(meta, vals, shape, g, n, groups, panel, out) },
            Isa::Portable => {}
        }
    }
    // SAFETY: as the caller promises.
    unsafe { mm_t_task::<T, false>(meta, vals, shape, g, n, groups, panel, out) }
}

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
    let panels: Vec<(usize, usize)> = (0..n).step_by(PANEL).map(|p0| (p0, PANEL.min(n - p0))).collect();
    // Slabs of groups whose sums fill 32 KB (in L1), fewer groups where that leaves too few
    // tasks for the threads.
    let fit = (32 * 1024 / (4 * PANEL * core::mem::size_of::<T>())).max(1);
    let spread = groups.div_ceil((4 * rayon::current_num_threads()).div_ceil(panels.len())).max(1);
    let slab = fit.min(spread);
    let tasks: Vec<((usize, usize), (usize, usize))> = (0..groups)
        .step_by(slab)
        .flat_map(|g0| panels.iter().map(move |&p| ((g0, (g0 + slab).min(groups)), p)))
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

/// The dot products of the kept values of rows `r0..` (filling `out`, which starts at row
/// `r0`'s first value) with their rows of `B`.
#[inline(always)]
fn sddmm_rows<T: Real, const FMA: bool>(layout: SemiLayout<'_>, g: &[T], b: &[T], n: usize, r0: usize, out: &mut [T]) {
    let (cols, meta) = (layout.cols(), layout.meta());
    let (words, half) = (cols.div_ceil(WORD_COLUMNS), cols / 2);
    for (i, o) in out.chunks_mut(half).enumerate() {
        let r = r0 + i;
        let (wr, gr) = (&meta[r * words..(r + 1) * words], &g[r * n..(r + 1) * n]);
        for (j, o) in o.iter_mut().enumerate() {
            let (c0, c1) = group_columns(wr, j / 2);
            let br = &b[if j % 2 == 0 { c0 } else { c1 } * n..][..n];
            *o = crate::sddmm::dot_lanes::<T, FMA>(gr, br);
        }
    }
}

multiversion! {
    /// `sddmm_rows` compiled for the best vector extension available.
    fn sddmm_rows_dispatch<T: Real>(layout: SemiLayout<'_>, g: &[T], b: &[T], n: usize, r0: usize, out: &mut [T]) => sddmm_rows
}

/// `sddmm_rows` for f32 with AVX-512 and `n = 16 V`: the row of `G` stays in `V` registers for
/// all its kept values, which go four at a time (two groups) with one transposed reduction of
/// their dot products (the reduction through an array cost more than the multiply-adds).
///
/// # Safety
/// The CPU supports AVX-512F; `n = 16 V`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn sddmm_rows_f32_avx512<const V: usize>(
    layout: SemiLayout<'_>,
    g: &[f32],
    b: &[f32],
    r0: usize,
    out: &mut [f32],
) {
    use core::arch::x86_64::*;
    let n = 16 * V;
    let (cols, meta) = (layout.cols(), layout.meta());
    let (words, half) = (cols.div_ceil(WORD_COLUMNS), cols / 2);
    assert!(b.len() >= cols * n);
    // Columns go in blocks whose rows of `B` (32 KB) stay in L1 while every row of the task
    // (64 rows of `G`, in L2) passes over them: each row of `G` is loaded once per block and
    // serves the block's kept values. Down all columns per row, each kept value's row of `B`
    // came from L3; in 512 KB blocks, from L2 (the 4096-wide backward took 10 ms more).
    let block = (32 * 1024 / (4 * n)).max(4) / 4;
    let groups = half / 2;
    for gb in (0..groups).step_by(block) {
        let ge = (gb + block).min(groups);
        for (i, o) in out.chunks_mut(half).enumerate() {
            let r = r0 + i;
            let (wr, gr) = (&meta[r * words..(r + 1) * words], &g[r * n..(r + 1) * n]);
            // SAFETY: the row of G holds n = 16 V floats.
            let x: [__m512; V] = core::array::from_fn(|q| unsafe { _mm512_loadu_ps(gr.as_ptr().add(16 * q)) });
            let dot = |c: usize| {
                let bp = b[c * n..][..n].as_ptr();
                let mut acc = [_mm512_setzero_ps(); 2];
                for q in 0..V {
                    // SAFETY: `bp` starts a checked slice of n = 16 V floats.
                    acc[q % 2] = _mm512_fmadd_ps(x[q], unsafe { _mm512_loadu_ps(bp.add(16 * q)) }, acc[q % 2]);
                }
                _mm512_add_ps(acc[0], acc[1])
            };
            let mut grp = gb;
            while grp + 2 <= ge {
                let ((c0, c1), (c2, c3)) = (group_columns(wr, grp), group_columns(wr, grp + 1));
                let sums = crate::simd::reduce4(dot(c0), dot(c1), dot(c2), dot(c3));
                let o4 = &mut o[2 * grp..2 * grp + 4];
                // SAFETY: `o4` holds four floats.
                unsafe { _mm_storeu_ps(o4.as_mut_ptr(), sums) };
                grp += 2;
            }
            if grp < ge {
                let (c0, c1) = group_columns(wr, grp);
                o[2 * grp] = _mm512_reduce_add_ps(dot(c0));
                o[2 * grp + 1] = _mm512_reduce_add_ps(dot(c1));
            }
        }
    }
}

/// `out[r, j] = G[r] · B[col(r, j)]` on host slices (`G [rows, n]`, `B [cols, n]`): result
/// `[rows, cols / 2]`, straight from the metadata.
///
/// # Panics
/// If `g` is not `[rows, n]` or `b` not `[cols, n]`.
pub fn semi_sddmm<T: Real>(p: SemiLayout<'_>, g: &[T], b: &[T], n: usize) -> Vec<T> {
    let (rows, cols) = (p.rows(), p.cols());
    assert_eq!(g.len(), out_len(rows, n, "semi_sddmm: g"), "semi_sddmm: g is [rows, n] = [{rows}, {n}]");
    assert_eq!(b.len(), out_len(cols, n, "semi_sddmm: b"), "semi_sddmm: b is [cols, n] = [{cols}, {n}]");
    let half = cols / 2;
    let mut out = vec![T::default(); out_len(rows, half, "semi_sddmm: the output")];
    if out.is_empty() || n == 0 {
        return out;
    }
    const ROWS: usize = 64;
    out.par_chunks_mut(ROWS * half).enumerate().for_each(|(blk, o)| {
        #[cfg(target_arch = "x86_64")]
        if let (Some(g32), Some(b32), Some(o32)) = (as_f32(g), as_f32(b), as_f32_mut(o)) {
            if crate::simd::isa() == crate::simd::Isa::Avx512 && matches!(n, 64 | 128 | 256) {
                // SAFETY: `isa` detected AVX-512F, and n = 16 V.
                unsafe {
                    match n {
                        64 => sddmm_rows_f32_avx512::<4>(p, g32, b32, blk * ROWS, o32),
                        128 => sddmm_rows_f32_avx512::<8>(p, g32, b32, blk * ROWS, o32),
                        _ => sddmm_rows_f32_avx512::<16>(p, g32, b32, blk * ROWS, o32),
                    }
                }
                return;
            }
        }
        sddmm_rows_dispatch(p, g, b, n, blk * ROWS, o)
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semi::{compress_mask, SemiPattern};

    /// Both products against their definitions on the dense matrix, at widths around the panel
    /// (1, 63, 64, 65, 128, 130, 256: the AVX-512 widths included) and column counts with
    /// partial metadata words (12, 36, 68).
    #[test]
    fn backward_products_match_definitions() {
        let rows = 9;
        for cols in [12usize, 36, 68] {
            let mut nz = vec![false; rows * cols];
            for (i, z) in nz.iter_mut().enumerate() {
                let (r, c) = (i / cols, i % cols);
                let (s0, s1) = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)][(r * 5 + c / 4) % 6];
                *z = c % 4 == s0 || c % 4 == s1;
            }
            let (meta, kept) = compress_mask(&nz, rows, cols, SemiPattern::TwoFour).unwrap();
            let vals: Vec<f64> = (0..kept.len()).map(|j| (j % 7) as f64 - 3.0).collect();
            let layout = SemiLayout::new(&meta, rows, cols).unwrap();
            let mut dense = vec![0f64; rows * cols];
            for r in 0..rows {
                for j in 0..cols / 2 {
                    dense[r * cols + kept[r * cols / 2 + j] as usize] = vals[r * cols / 2 + j];
                }
            }
            for n in [1usize, 63, 64, 65, 128, 130, 256] {
                let g: Vec<f64> = (0..rows * n).map(|i| ((i * 11) % 13) as f64 - 6.0).collect();
                let b: Vec<f64> = (0..cols * n).map(|i| ((i * 7) % 9) as f64 - 4.0).collect();
                let got = semi_mm_t(SemiRef::new(layout, &vals[..]).unwrap(), &g, n);
                for c in 0..cols {
                    for t in 0..n {
                        let want: f64 = (0..rows).map(|r| dense[r * cols + c] * g[r * n + t]).sum();
                        assert_eq!(got[c * n + t], want, "Aᵀ·G cols={cols} n={n} ({c}, {t})");
                    }
                }
                let got = semi_sddmm(layout, &g, &b, n);
                for r in 0..rows {
                    for j in 0..cols / 2 {
                        let c = kept[r * cols / 2 + j] as usize;
                        let want: f64 = (0..n).map(|t| g[r * n + t] * b[c * n + t]).sum();
                        assert_eq!(got[r * cols / 2 + j], want, "sddmm cols={cols} n={n} ({r}, {j})");
                    }
                }
                // f32 (the vectorised kernels): integers, exact.
                let f = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
                let (v32, g32, b32) = (f(&vals), f(&g), f(&b));
                let got = semi_mm_t(SemiRef::new(layout, &v32[..]).unwrap(), &g32, n);
                assert_eq!(got, f(&semi_mm_t(SemiRef::new(layout, &vals[..]).unwrap(), &g, n)), "f32 Aᵀ·G n={n}");
                assert_eq!(semi_sddmm(layout, &g32, &b32, n), f(&semi_sddmm(layout, &g, &b, n)), "f32 sddmm n={n}");
            }
        }
    }
}
