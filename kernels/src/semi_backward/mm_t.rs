//! `Aᵀ · G` from the 2:4 metadata: tasks own a slab of the result's rows times a panel of its
//! columns; within a task, each row of `A` adds its kept values times its row of `G` (the portable
//! task, the macerator bodies over per-slot lists, the f32 AVX-512 kernel), and the choice of
//! panels and lists by the instruction set and `n`.

use super::*;

/// Result columns per task panel of `semi_mm_t`.
pub(super) const PANEL: usize = 64;

/// The kept columns of group `g` of a row, from the row's metadata words.
#[inline(always)]
pub(super) fn group_columns(words: &[i16], g: usize) -> (usize, usize) {
    let nibble = (words[g / 4] as u16 as usize) >> (4 * (g % 4));
    (4 * g + (nibble & 3), 4 * g + ((nibble >> 2) & 3))
}

/// `o += v · x` over `W` elements.
#[inline(always)]
pub(super) fn axpy<T: Real, const FMA: bool>(o: &mut [T], v: T, x: &[T]) {
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
pub(super) unsafe fn mm_t_task<T: Real, const FMA: bool>(
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

/// Groups of a row whose kept values share a cache line (16 f32 values): the lists of
/// `mm_t_task_f32_avx512` are built for this many groups at a time.
pub(super) const LINE_GROUPS: usize = 8;

/// Rows of `A` per chunk of `mm_t_task_f32_avx512`: their panel of `G` (at most 32 KB) stays in
/// L1 while the slab's groups pass over it. At most 128 (list entries index rows by a byte).
pub(super) fn chunk_rows(width: usize) -> usize {
    (32 * 1024 / (4 * width)).clamp(8, 64)
}

/// For each of `LINE_GROUPS` groups and each of its four slots, the chunk rows that keep the
/// slot and their values: up to twice the chunk (a nibble whose two slots are equal puts both
/// of its row's values on one list).
pub(super) struct SlotLists<T> {
    pub(super) rows: Vec<u8>,
    pub(super) vals: Vec<T>,
    pub(super) len: [[usize; 4]; LINE_GROUPS],
    pub(super) cap: usize,
}

impl<T: Copy + Default> SlotLists<T> {
    pub(super) fn new(chunk: usize) -> Self {
        let cap = 2 * chunk;
        Self {
            rows: vec![0; LINE_GROUPS * 4 * cap],
            vals: vec![T::default(); LINE_GROUPS * 4 * cap],
            len: [[0; 4]; LINE_GROUPS],
            cap,
        }
    }

    pub(super) fn push(&mut self, j: usize, slot: usize, row: u8, v: T) {
        let at = (4 * j + slot) * self.cap + self.len[j][slot];
        self.rows[at] = row;
        self.vals[at] = v;
        self.len[j][slot] += 1;
    }

    pub(super) fn list(&self, j: usize, slot: usize) -> (&[u8], &[T]) {
        let (at, len) = ((4 * j + slot) * self.cap, self.len[j][slot]);
        (&self.rows[at..at + len], &self.vals[at..at + len])
    }
}

/// `acc += Σ v · G[row]` over one slot list: `V` registers of a result row's panel, each row
/// of the chunk's `G` (`16 V` floats apart from `gc`) read once.
///
/// # Safety
/// The CPU supports AVX-512F; `gc` holds `(max(rows) + 1) · 16 V` floats.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(super) unsafe fn slot_sum<const V: usize>(
    gc: *const f32,
    rows: &[u8],
    vals: &[f32],
    acc: &mut [core::arch::x86_64::__m512; V],
) {
    use core::arch::x86_64::*;
    for (&i, &v) in rows.iter().zip(vals) {
        // SAFETY: row i of the chunk lies inside `gc` (the caller's promise). The pointer goes
        // through `opaque` so the loads address it as base + constant: an indexed address
        // splits every memory-operand multiply-add into two micro-operations on Intel's cores.
        let gp = crate::simd::opaque(unsafe { gc.add(i as usize * 16 * V) });
        let c = _mm512_set1_ps(v);
        for (q, a) in acc.iter_mut().enumerate() {
            // SAFETY: inside row i (q < V).
            *a = _mm512_fmadd_ps(c, unsafe { _mm512_loadu_ps(gp.add(16 * q)) }, *a);
        }
    }
}

/// [`mm_t_task`] for f32 with AVX-512 on a panel of `16 V` columns. The rows of `A` go in
/// chunks whose panel of `G` stays in L1; for a chunk and each group of the slab, the rows
/// that keep each of the group's four slots are listed with their values (`SlotLists`, built
/// a cache line of groups at a time, so each row's values are read once per chunk), and each
/// slot's result row (`V` registers) sums its list: every loaded register of `G` feeds one
/// multiply-add, as in the forward product, and the decoding is paid once per kept value.
///
/// (Keeping a group's four result rows in registers instead, and bucketing the rows by nibble,
/// held only 64 columns, so each row of `A` paid the decoding for 8 multiply-adds: at
/// n = 256 it ran at a third of the forward's rate.)
///
/// # Safety
/// The CPU supports AVX-512F; `p0 + 16 V <= n`; as [`mm_t_task`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn mm_t_task_f32_avx512<const V: usize>(
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
    let w = 16 * V;
    let (words, half) = (cols.div_ceil(WORD_COLUMNS), cols / 2);
    assert!(p0 + w <= n && 4 * g1 <= cols && meta.len() >= rows * words && vals.len() >= rows * half);
    let chunk = chunk_rows(w);
    let mut sums = vec![0f32; (g1 - g0) * 4 * w];
    let mut gbuf = vec![0f32; chunk * w];
    let mut lists = SlotLists::new(chunk);
    for r0 in (0..rows).step_by(chunk) {
        let end = (r0 + chunk).min(rows);
        // The chunk's panel of `G`, contiguous (in place its rows lie `n` floats apart).
        for (i, r) in (r0..end).enumerate() {
            gbuf[i * w..][..w].copy_from_slice(&g[r * n + p0..][..w]);
        }
        for l0 in (g0..g1).step_by(LINE_GROUPS) {
            let l1 = (l0 + LINE_GROUPS).min(g1);
            // The next line of groups of these rows (or the first of the next chunk's), fetched
            // while this one is summed: a row's line is a row of `A` from the last, and read
            // as needed each waited on L2 or memory.
            let (n0, nr) = if l1 < g1 { (l1, r0..end) } else { (g0, end..(end + chunk).min(rows)) };
            for r in nr {
                prefetch_range(vals, r * half + 2 * n0, 2 * LINE_GROUPS.min(g1 - n0));
                prefetch_range(meta, r * words + n0 / 4, LINE_GROUPS.min(g1 - n0).div_ceil(4));
            }
            lists.len = [[0; 4]; LINE_GROUPS];
            for (i, r) in (r0..end).enumerate() {
                let (wr, vr) = (&meta[r * words..(r + 1) * words], &vals[r * half..(r + 1) * half]);
                for grp in l0..l1 {
                    let nibble = (wr[grp / 4] as u16 as usize) >> (4 * (grp % 4));
                    lists.push(grp - l0, nibble & 3, i as u8, vr[2 * grp]);
                    lists.push(grp - l0, (nibble >> 2) & 3, i as u8, vr[2 * grp + 1]);
                }
            }
            for grp in l0..l1 {
                for slot in 0..4 {
                    let (rows_of, vals_of) = lists.list(grp - l0, slot);
                    if rows_of.is_empty() {
                        continue;
                    }
                    let sp = sums[((grp - g0) * 4 + slot) * w..][..w].as_mut_ptr();
                    // SAFETY: `sp` starts a checked slice of w = 16 V floats.
                    let mut acc: [__m512; V] = core::array::from_fn(|q| unsafe { _mm512_loadu_ps(sp.add(16 * q)) });
                    // SAFETY: AVX-512F is enabled here; the listed rows are below `end - r0`,
                    // whose panels `gbuf` holds.
                    unsafe { slot_sum::<V>(gbuf.as_ptr(), rows_of, vals_of, &mut acc) };
                    for (q, a) in acc.iter().enumerate() {
                        // SAFETY: inside the slice of w floats `sp` starts.
                        unsafe { _mm512_storeu_ps(sp.add(16 * q), *a) };
                    }
                }
            }
        }
    }
    for (i, row) in sums.chunks_exact(w).enumerate() {
        let c = 4 * g0 + i;
        // SAFETY: c < 4 g1 <= cols and p0 + w <= n: inside the output, in this task's rectangle
        // (the caller's promise).
        unsafe { core::ptr::copy_nonoverlapping(row.as_ptr(), out.at(c * n + p0), w) };
    }
}

/// `acc += Σ v · G[row]` over one slot list (the generic twin of `slot_sum`): `V` vectors of a
/// result row's panel, from column `at` of the chunk's rows of `G` (`gbuf`, rows `ld` apart),
/// each read once.
#[inline(always)]
pub(super) fn slot_sum_lanes<S: Simd, T: Real, const V: usize>(
    (gbuf, ld, at): (&[T], usize, usize),
    rows: &[u8],
    vals: &[T],
    acc: &mut [Vector<S, T>; V],
) {
    let lanes = T::lanes::<S>();
    for (&i, &v) in rows.iter().zip(vals) {
        let gp = &gbuf[i as usize * ld + at..][..V * lanes];
        let c = v.splat::<S>();
        for (q, a) in acc.iter_mut().enumerate() {
            // SAFETY: lanes q · lanes..(q + 1) · lanes <= V · lanes of the checked run.
            *a = fmadd(c, unsafe { vload_unaligned::<S, T>(gp.as_ptr().add(q * lanes)) }, *a);
        }
    }
}

/// One task of `semi_mm_t` (groups `g0..g1`, the panel of `w` columns from `p0`, `w` a
/// multiple of `V · lanes`), one kernel body for every instruction set: the rows of `A` go in
/// chunks whose panel of `G` is copied into cache; for every `LINE_GROUPS` groups, each of their
/// result rows (a group and slot) gathers the chunk rows that keep it into a list once, and
/// sums them `V` vectors at a time across the panel. The result rows stay in registers across
/// a list instead of being re-read for every kept value, as the plain walk does (`mm_t_task`);
/// one list serves the whole panel, so a wide panel builds the lists once where panels of
/// `V · lanes` columns built them once each (on AVX2 at n = 256, four times, which cost as
/// much as the sums). AVX-512 runs `mm_t_task_f32_avx512`, its hand-written twin.
///
/// # Safety
/// `p0 + w <= n`, `4 g1 <= cols`, and no other task writes the rows `4 g0..4 g1` x columns
/// `p0..p0 + w` of the `[cols, n]` output.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn mm_t_task_lists<S: Simd, T: Real, const V: usize>(
    meta: &[i16],
    vals: &[T],
    (rows, cols): (usize, usize),
    g: &[T],
    n: usize,
    (g0, g1): (usize, usize),
    (p0, w): (usize, usize),
    out: &SendPtr<T>,
) {
    let lanes = T::lanes::<S>();
    let tile = V * lanes;
    let (words, half) = (cols.div_ceil(WORD_COLUMNS), cols / 2);
    assert!(
        w.is_multiple_of(tile)
            && p0 + w <= n
            && 4 * g1 <= cols
            && meta.len() >= rows * words
            && vals.len() >= rows * half
    );
    let chunk = chunk_rows(w);
    let mut sums = vec![T::default(); (g1 - g0) * 4 * w];
    let mut gbuf = vec![T::default(); chunk * w];
    let mut lists = SlotLists::new(chunk);
    for r0 in (0..rows).step_by(chunk) {
        let end = (r0 + chunk).min(rows);
        for (i, r) in (r0..end).enumerate() {
            gbuf[i * w..][..w].copy_from_slice(&g[r * n + p0..][..w]);
        }
        for l0 in (g0..g1).step_by(LINE_GROUPS) {
            let l1 = (l0 + LINE_GROUPS).min(g1);
            lists.len = [[0; 4]; LINE_GROUPS];
            for (i, r) in (r0..end).enumerate() {
                let (wr, vr) = (&meta[r * words..(r + 1) * words], &vals[r * half..(r + 1) * half]);
                for grp in l0..l1 {
                    let nibble = (wr[grp / 4] as u16 as usize) >> (4 * (grp % 4));
                    lists.push(grp - l0, nibble & 3, i as u8, vr[2 * grp]);
                    lists.push(grp - l0, (nibble >> 2) & 3, i as u8, vr[2 * grp + 1]);
                }
            }
            for grp in l0..l1 {
                for slot in 0..4 {
                    let (rows_of, vals_of) = lists.list(grp - l0, slot);
                    if rows_of.is_empty() {
                        continue;
                    }
                    let row = &mut sums[((grp - g0) * 4 + slot) * w..][..w];
                    for at in (0..w).step_by(tile) {
                        let sp = &mut row[at..at + tile];
                        let mut acc = [T::default().splat::<S>(); V];
                        for (q, a) in acc.iter_mut().enumerate() {
                            // SAFETY: lanes q · lanes..(q + 1) · lanes of the checked tile.
                            *a = unsafe { vload_unaligned::<S, T>(sp.as_ptr().add(q * lanes)) };
                        }
                        slot_sum_lanes::<S, T, V>((&gbuf, w, at), rows_of, vals_of, &mut acc);
                        for (q, a) in acc.iter().enumerate() {
                            // SAFETY: as above.
                            unsafe { vstore_unaligned::<S, T>(sp.as_mut_ptr().add(q * lanes), *a) };
                        }
                    }
                }
            }
        }
    }
    for (i, row) in sums.chunks_exact(w).enumerate() {
        let c = 4 * g0 + i;
        // SAFETY: c < 4 g1 <= cols and p0 + w <= n (asserted): inside the output, in this
        // task's rectangle (the caller's promise).
        unsafe { core::ptr::copy_nonoverlapping(row.as_ptr(), out.at(c * n + p0), w) };
    }
}

/// [`mm_t_task_lists`] where the panel is a multiple of 8 (or 4) vectors wide (the panels of
/// [`mm_t_panels`] on the path); `false` where it is not, for the plain walk to run.
///
/// # Safety
/// As [`mm_t_task_lists`] for the panel.
#[with_simd(on(arch = crate::simd::arch()))]
#[allow(clippy::too_many_arguments)]
fn mm_t_task_vectors<'a, S: Simd, T: Real>(
    meta: &'a [i16],
    vals: &'a [T],
    shape: (usize, usize),
    g: &'a [T],
    n: usize,
    groups: (usize, usize),
    panel: (usize, usize),
    out: &'a SendPtr<T>,
) -> bool {
    let lanes = T::lanes::<S>();
    if panel.1.is_multiple_of(8 * lanes) {
        // SAFETY: as the caller promises; the panel is a multiple of 8 lanes.
        unsafe { mm_t_task_lists::<S, T, 8>(meta, vals, shape, g, n, groups, panel, out) }
    } else if panel.1.is_multiple_of(4 * lanes) {
        // SAFETY: as the caller promises; the panel is a multiple of 4 lanes.
        unsafe { mm_t_task_lists::<S, T, 4>(meta, vals, shape, g, n, groups, panel, out) }
    } else {
        return false;
    }
    true
}

/// `mm_t_task` compiled for the best vector extension available.
///
/// # Safety
/// As `mm_t_task`.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn mm_t_task_dispatch<T: Real>(
    meta: &[i16],
    vals: &[T],
    shape: (usize, usize),
    g: &[T],
    n: usize,
    groups: (usize, usize),
    panel: (usize, usize),
    out: &SendPtr<T>,
) {
    if crate::simd::isa() != crate::simd::Isa::Avx512 {
        // SAFETY: `simd::arch` is an architecture this CPU supports; the panel as the caller
        // promises.
        if unsafe { mm_t_task_vectors(meta, vals, shape, g, n, groups, panel, out) } {
            return;
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        use crate::simd::{isa, Isa};
        if let (Some(v32), Some(g32), true) = (as_f32(vals), as_f32(g), isa() == Isa::Avx512) {
            let out32 = SendPtr(out.0 as *mut f32);
            // SAFETY: `isa` detected AVX-512F; T is f32 (`as_f32` checked it), so `out` holds
            // f32s; the panel is whole (16 V columns inside `n`); the rest as the caller promises.
            unsafe {
                match panel.1 {
                    256 => return mm_t_task_f32_avx512::<16>(meta, v32, shape, g32, n, groups, panel.0, &out32),
                    128 => return mm_t_task_f32_avx512::<8>(meta, v32, shape, g32, n, groups, panel.0, &out32),
                    64 => return mm_t_task_f32_avx512::<4>(meta, v32, shape, g32, n, groups, panel.0, &out32),
                    _ => {}
                }
            }
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

/// Whether `semi_mm_t` runs the AVX-512 f32 kernel (panels of 256, 128 or 64 columns).
pub(super) fn wide_panels<T: 'static>() -> bool {
    #[cfg(target_arch = "x86_64")]
    if core::any::TypeId::of::<T>() == core::any::TypeId::of::<f32>() && crate::simd::isa() == crate::simd::Isa::Avx512
    {
        return true;
    }
    false
}

/// Whether `semi_mm_t` runs the generic list kernel over all `n` columns at once: on every path
/// but AVX-512, where `n` is a multiple of 64 (then of 8 vectors on every architecture) and at
/// most 512 (the chunk's rows of `G` stay in cache: 8 to 16 rows of 512).
pub(super) fn lists_span_n(n: usize) -> bool {
    crate::simd::isa() != crate::simd::Isa::Avx512 && n > 0 && n.is_multiple_of(64) && n <= 512
}

/// The result columns of `semi_mm_t` cut into panels `(first, width)`: all of them where
/// [`lists_span_n`]; the widest of 256, 128 and 64 that fit, then the rest, for the AVX-512
/// kernel; `PANEL` at a time otherwise.
pub(super) fn mm_t_panels<T: 'static>(n: usize) -> Vec<(usize, usize)> {
    if lists_span_n(n) {
        // One panel: the lists, built once, serve all of `n` (`mm_t_task_lists`).
        return vec![(0, n)];
    }
    if !wide_panels::<T>() {
        return (0..n).step_by(PANEL).map(|p0| (p0, PANEL.min(n - p0))).collect();
    }
    let mut panels = Vec::new();
    let mut p0 = 0;
    while p0 < n {
        let w = [256, 128, 64].into_iter().find(|&w| p0 + w <= n).unwrap_or(n - p0);
        panels.push((p0, w));
        p0 += w;
    }
    panels
}
