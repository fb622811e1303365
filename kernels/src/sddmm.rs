//! SDDMM on CSR patterns: `out[j] = a[row j] · b[col j]`, the values of `a · bᵀ` sampled on
//! the pattern (the values' gradient of a product, and `sampled_addmm`).
//!
//! Each row of `a` is read once for all its entries; the dot products run in independent
//! accumulator chains. f32 at d = 64 and 128 on AVX-512 keeps the row of `a` in registers and
//! reduces four dot products at once; `b` is read from an aligned copy (or the transpose of
//! torch's `mat2`, made once) when its rows are gathered often enough to pay for it; at
//! d = 128, where `b` outgrows a core's L2, from two panels of 64 columns in two passes.

use crate::alloc::out_len;
use crate::index::IndexElem;
use crate::pattern::CsrPattern;
use crate::real::Real;
use crate::scratch::{aligned_copy, Scratch};
use crate::simd::{as_f32, as_f32_uninit, fmadd, isa, prefetch_row, Isa, PREFETCH};
#[cfg(target_arch = "x86_64")]
use crate::simd::{reduce4, reduce4_avx2};
use core::mem::MaybeUninit;
use macerator::{vload_unaligned, with_simd, Simd, Vector};
use rayon::prelude::*;

/// What one task of the row kernels reads and writes: the entries of rows `r0..` filling
/// `out` (which starts at row `r0`'s first entry).
pub(crate) struct RowsOf<'a, T, I, J> {
    pub p: CsrPattern<'a, I, J>,
    /// The left operand; the dot products read `d` elements of each of its rows, which start
    /// `lda` apart (`lda > d` when a pass reads one panel of its columns).
    pub a: &'a [T],
    pub lda: usize,
    /// The right operand's rows, `d` elements each, gathered by the pattern's columns.
    pub b: &'a [T],
    pub d: usize,
    pub r0: usize,
    pub out: &'a mut [MaybeUninit<T>],
    /// Entries ahead whose rows of `b` are prefetched ([`prefetch_distance`]).
    pub ahead: usize,
    /// Whether the sums add to what `out` holds (the second panel's pass) or replace it.
    pub add: bool,
}

/// `x[q * lanes..]` as a vector.
///
/// # Safety
/// `(q + 1) * lanes <= x.len()`.
#[inline(always)]
unsafe fn load<S: Simd, T: Real>(x: &[T], q: usize) -> Vector<S, T> {
    // SAFETY: the lanes lie inside `x` (the caller's promise).
    unsafe { vload_unaligned::<S, T>(x.as_ptr().add(q * T::lanes::<S>())) }
}

/// The dot products of `x` with the four rows `ys` (each at least as long), in two chains a
/// row (eight independent multiply-add chains, enough to cover their latency on AVX2 and
/// AVX-512 alike), with each vector of `x` loaded once for the four.
#[inline(always)]
pub(crate) fn dots4<S: Simd, T: Real>(x: &[T], ys: [&[T]; 4]) -> [T; 4] {
    let (lanes, d) = (T::lanes::<S>(), x.len());
    assert!(ys.iter().all(|y| y.len() >= d), "dots4: rows shorter than x");
    let nv = d / lanes;
    let zero = T::default().splat::<S>();
    let (mut even, mut odd) = ([zero; 4], [zero; 4]);
    let mut q = 0;
    while q + 2 <= nv {
        // SAFETY: (q + 2) lanes <= nv lanes <= d, the length of `x` and at most each row's.
        let (x0, x1) = unsafe { (load::<S, T>(x, q), load::<S, T>(x, q + 1)) };
        for k in 0..4 {
            // SAFETY: as above.
            let (y0, y1) = unsafe { (load::<S, T>(ys[k], q), load::<S, T>(ys[k], q + 1)) };
            even[k] = fmadd(x0, y0, even[k]);
            odd[k] = fmadd(x1, y1, odd[k]);
        }
        q += 2;
    }
    if q < nv {
        // SAFETY: as above, q + 1 <= nv.
        let x0 = unsafe { load::<S, T>(x, q) };
        for k in 0..4 {
            // SAFETY: as above.
            even[k] = fmadd(x0, unsafe { load::<S, T>(ys[k], q) }, even[k]);
        }
    }
    // A loop, not `array::from_fn`: a closure is compiled without the kernel's target
    // features, so its vector reductions became calls (and the accumulators went through the
    // stack on every step), 2.6x slower.
    let mut sums = [T::default(); 4];
    for k in 0..4 {
        let mut sum = (even[k] + odd[k]).reduce_add();
        for t in nv * lanes..d {
            sum = sum + x[t] * ys[k][t];
        }
        sums[k] = sum;
    }
    sums
}

/// [`dots4`] for one row.
#[inline(always)]
fn dot1<S: Simd, T: Real>(x: &[T], y: &[T]) -> T {
    let (lanes, d) = (T::lanes::<S>(), x.len());
    assert!(y.len() >= d, "dot1: row shorter than x");
    let nv = d / lanes;
    let zero = T::default().splat::<S>();
    let (mut even, mut odd) = (zero, zero);
    let mut q = 0;
    while q + 2 <= nv {
        // SAFETY: (q + 2) lanes <= nv lanes <= d <= both lengths.
        let (x0, x1, y0, y1) =
            unsafe { (load::<S, T>(x, q), load::<S, T>(x, q + 1), load::<S, T>(y, q), load::<S, T>(y, q + 1)) };
        even = fmadd(x0, y0, even);
        odd = fmadd(x1, y1, odd);
        q += 2;
    }
    if q < nv {
        // SAFETY: as above, q + 1 <= nv.
        even = fmadd(unsafe { load::<S, T>(x, q) }, unsafe { load::<S, T>(y, q) }, even);
    }
    let mut sum = (even + odd).reduce_add();
    for t in nv * lanes..d {
        sum = sum + x[t] * y[t];
    }
    sum
}

/// The entries of one task ([`RowsOf`]), one kernel body for every instruction set: each row
/// of `a` is read once for all its entries, and each of its vectors is loaded once for four
/// rows of `b` ([`dots4`]).
#[with_simd(on(arch = crate::simd::arch()))]
fn sddmm_rows<'a, S: Simd, T: Real, I: IndexElem, J: IndexElem>(args: RowsOf<'a, T, I, J>) {
    let RowsOf { p, a, lda, b, d, r0, out, ahead, add } = args;
    let (crow, col) = (p.ptr(), p.idx());
    let (base, total) = (crow[r0].to_i64() as usize, out.len());
    let row = |j: usize| &b[col[j].to_i64() as usize * d..][..d];
    let mut put = |j: usize, v: T| {
        let o = &mut out[j - base];
        // SAFETY: with `add`, the first panel's pass wrote every entry of this part.
        let before = if add { unsafe { o.assume_init() } } else { T::default() };
        o.write(before + v);
    };
    let (mut r, mut done) = (r0, 0);
    while done < total {
        let (s, e) = (crow[r].to_i64() as usize, crow[r + 1].to_i64() as usize);
        let ar = &a[r * lda..][..d];
        let mut j = s;
        while j + 4 <= e {
            for k in ahead..ahead + 4 {
                prefetch_row(b, col, j + k, d, 0, d.min(64));
            }
            let sums = dots4::<S, T>(ar, [row(j), row(j + 1), row(j + 2), row(j + 3)]);
            for (t, v) in sums.into_iter().enumerate() {
                put(j + t, v);
            }
            j += 4;
        }
        while j < e {
            put(j, dot1::<S, T>(ar, row(j)));
            j += 1;
        }
        done += e - s;
        r += 1;
    }
}

/// `sddmm_rows_f32_avx512` for rows of exactly `16 V` columns, four entries at a time: the
/// row of `a` stays in `V` registers, and the four dot products reduce together (one transpose
/// of partial sums, 13 instructions instead of four 8-instruction horizontal reductions, which
/// cost as much as the multiply-adds at these widths). The rows of `b` are prefetched `ahead`
/// entries early (see [`prefetch_distance`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn sddmm_rows_f32_avx512_x4<I: IndexElem, J: IndexElem, const V: usize, const ADD: bool>(
    p: CsrPattern<'_, I, J>,
    (a, lda): (&[f32], usize),
    b: &[f32],
    r0: usize,
    out: &mut [MaybeUninit<f32>],
    ahead: usize,
) {
    let (crow, col) = (p.ptr(), p.idx());
    use core::arch::x86_64::*;
    let d = 16 * V;
    let base = crow[r0].to_i64() as usize;
    let mut r = r0;
    let mut done = 0;
    // The dot product of the row with one row of `b`, in two chains.
    let dot = |ar: &[__m512; V], bp: *const f32| -> __m512 {
        let mut acc = [_mm512_setzero_ps(); 2];
        for q in 0..V {
            // SAFETY: `bp` starts a row of `d = 16 V` elements of `b`.
            acc[q % 2] = _mm512_fmadd_ps(ar[q], unsafe { _mm512_loadu_ps(bp.add(16 * q)) }, acc[q % 2]);
        }
        _mm512_add_ps(acc[0], acc[1])
    };
    while done < out.len() {
        let (s, e) = (crow[r].to_i64() as usize, crow[r + 1].to_i64() as usize);
        let ap = a[r * lda..r * lda + d].as_ptr();
        // SAFETY: the row of `a` holds `d` elements.
        let ar: [__m512; V] = core::array::from_fn(|q| unsafe { _mm512_loadu_ps(ap.add(16 * q)) });
        // Through `opaque`: the loads address a row as base + constant (`simd::opaque`).
        let row = |j: usize| crate::simd::opaque(b[col[j].to_i64() as usize * d..][..d].as_ptr());
        let mut j = s;
        while j + 4 <= e {
            for k in ahead..ahead + 4 {
                prefetch_row(b, col, j + k, d, 0, d);
            }
            let (d0, d1, d2, d3) = (dot(&ar, row(j)), dot(&ar, row(j + 1)), dot(&ar, row(j + 2)), dot(&ar, row(j + 3)));
            let dst = out[j - base..j - base + 4].as_mut_ptr() as *mut f32;
            let mut sums = reduce4(d0, d1, d2, d3);
            if ADD {
                // SAFETY: entries j..j + 4 lie in this task's part of `out`, written by the
                // pass over the first panel (`ADD` is the second pass's).
                sums = _mm_add_ps(unsafe { _mm_loadu_ps(dst) }, sums);
            }
            // SAFETY: entries j..j + 4 lie in this task's part of `out`.
            unsafe { _mm_storeu_ps(dst, sums) };
            j += 4;
        }
        while j < e {
            let sum = _mm512_reduce_add_ps(dot(&ar, row(j)));
            // SAFETY: written by the first panel's pass when `ADD` (above).
            let before = if ADD { unsafe { out[j - base].assume_init() } } else { 0.0 };
            out[j - base].write(before + sum);
            j += 1;
        }
        done += e - s;
        r += 1;
    }
}

/// The AVX2 twin of [`sddmm_rows_f32_avx512_x4`] at d = 64: the row of `a` stays in 8 of the 16
/// ymm registers, four entries run as four multiply-add chains (4 more registers; two chains an
/// entry would spill), and their dot products reduce together ([`reduce4_avx2`], 5 instructions
/// instead of four horizontal reductions of 5). The generic body reloads the row of `a` for
/// every four entries and reduces each sum alone.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn sddmm_rows_f32_avx2_x4<I: IndexElem, J: IndexElem>(
    p: CsrPattern<'_, I, J>,
    a: &[f32],
    b: &[f32],
    r0: usize,
    out: &mut [MaybeUninit<f32>],
    ahead: usize,
) {
    use core::arch::x86_64::*;
    const V: usize = 8;
    let (crow, col) = (p.ptr(), p.idx());
    let d = 8 * V;
    let base = crow[r0].to_i64() as usize;
    let (mut r, mut done) = (r0, 0);
    while done < out.len() {
        let (s, e) = (crow[r].to_i64() as usize, crow[r + 1].to_i64() as usize);
        let ap = a[r * d..r * d + d].as_ptr();
        // SAFETY: the row of `a` holds `d = 8 V` elements.
        let ar: [__m256; V] = core::array::from_fn(|q| unsafe { _mm256_loadu_ps(ap.add(8 * q)) });
        // Through `opaque`: the loads address a row as base + constant (`simd::opaque`).
        let row = |j: usize| crate::simd::opaque(b[col[j].to_i64() as usize * d..][..d].as_ptr());
        let mut j = s;
        while j + 4 <= e {
            for k in ahead..ahead + 4 {
                prefetch_row(b, col, j + k, d, 0, d);
            }
            let bp = [row(j), row(j + 1), row(j + 2), row(j + 3)];
            let mut acc = [_mm256_setzero_ps(); 4];
            for (q, aq) in ar.iter().enumerate() {
                for (acc, bp) in acc.iter_mut().zip(bp) {
                    // SAFETY: `bp` starts a row of `d = 8 V` elements of `b`.
                    *acc = _mm256_fmadd_ps(*aq, unsafe { _mm256_loadu_ps(bp.add(8 * q)) }, *acc);
                }
            }
            let sums = reduce4_avx2(acc[0], acc[1], acc[2], acc[3]);
            // SAFETY: entries j..j + 4 lie in this task's part of `out`.
            unsafe { _mm_storeu_ps(out[j - base..j - base + 4].as_mut_ptr() as *mut f32, sums) };
            j += 4;
        }
        while j < e {
            let (bp, mut acc) = (row(j), _mm256_setzero_ps());
            for (q, aq) in ar.iter().enumerate() {
                // SAFETY: as above.
                acc = _mm256_fmadd_ps(*aq, unsafe { _mm256_loadu_ps(bp.add(8 * q)) }, acc);
            }
            let s4 = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps::<1>(acc));
            let s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
            out[j - base].write(_mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps::<0b01>(s2, s2))));
            j += 1;
        }
        done += e - s;
        r += 1;
    }
}

/// `out[j] = a[row j] · b[col j]` on host slices: `a [m, d]` indexed by the pattern's rows,
/// `b [k, d]` by its columns; `out [nnz]`.
///
/// # Panics
/// If `a` is not `[m, d]` or `b` not `[k, d]`.
pub fn sddmm<T: Real, I: IndexElem, J: IndexElem>(p: CsrPattern<'_, I, J>, a: &[T], b: &[T], d: usize) -> Vec<T> {
    assert_eq!(b.len(), out_len(p.ncols(), d, "sddmm: b"), "sddmm: b is [k, d] = [{}, {d}]", p.ncols());
    #[cfg(target_arch = "x86_64")]
    if let (Some(a32), Some(b32)) = (as_f32(a), as_f32(b)) {
        if in_panels::<T>(p, d) {
            let k = p.ncols();
            // Columns 0..64 of `b`'s rows, then 64..128: the same bytes as the aligned copy.
            // SAFETY: the copies write the `k * 64` elements of each panel.
            let panels = unsafe {
                Scratch::filled(k * d, |out| {
                    out.par_chunks_mut(PANEL).enumerate().for_each(|(i, dst)| {
                        let (half, c) = (i / k, i % k);
                        for (o, &v) in dst.iter_mut().zip(&b32[c * d + half * PANEL..][..PANEL]) {
                            o.write(v);
                        }
                    })
                })
            };
            return sddmm_in_panels(p, a32, panels.get());
        }
    }
    let b_al = aligned_copy(b, d, p.nnz(), 32);
    sddmm_aligned_b(p, a, b_al.as_ref().map_or(b, |x| x.get()), d)
}

/// [`sddmm`] with the right operand given transposed, `bt [d, k]` (torch's `mat2`): it is
/// transposed once into an aligned buffer, which is also the aligned copy the row gathers want.
///
/// # Panics
/// If `a` is not `[m, d]` or `bt` not `[d, k]`.
pub fn sddmm_bt<T: Real, I: IndexElem, J: IndexElem>(p: CsrPattern<'_, I, J>, a: &[T], bt: &[T], d: usize) -> Vec<T> {
    let k = p.ncols();
    assert_eq!(bt.len(), out_len(d, k, "sddmm: bt"), "sddmm: bt is [d, k] = [{d}, {k}]");
    #[cfg(target_arch = "x86_64")]
    if let (Some(a32), Some(bt32)) = (as_f32(a), as_f32(bt)) {
        if in_panels::<T>(p, d) {
            // Each half of `bt`'s rows, transposed, is one panel `[k, 64]`.
            // SAFETY: the two transposes write the `k * 64` elements of each panel.
            let panels = unsafe {
                Scratch::filled(k * d, |out| {
                    let (first, second) = out.split_at_mut(k * PANEL);
                    crate::dense::transpose_into(&bt32[..PANEL * k], PANEL, k, first);
                    crate::dense::transpose_into(&bt32[PANEL * k..], PANEL, k, second);
                })
            };
            return sddmm_in_panels(p, a32, panels.get());
        }
    }
    // SAFETY: the transpose writes every element of `[k, d]`.
    let b = unsafe { Scratch::filled(k * d, |out| crate::dense::transpose_into(bt, d, k, out)) };
    sddmm_aligned_b(p, a, b.get(), d)
}

/// Columns of `b` per panel of [`sddmm_in_panels`].
const PANEL: usize = 64;

/// Whether the f32 SDDMM at width `d` runs in two panels of 64 columns ([`sddmm_in_panels`]):
/// at d = 128 on AVX-512, where `b` outgrows a core's share of L2 (1 MB) and each of its rows
/// is gathered often enough (16 times on average, as the SpMM's panels) to pay for the second
/// pass over the pattern. On the AVX2 path one pass was faster (uniform 4096 x 4096 at 10 %,
/// AVX2 forced on a Zen 4: 24.8 ms against 27.7 in panels; at 1 %, 1.6 against 5.8).
fn in_panels<T: 'static>(p: CsrPattern<'_, impl IndexElem, impl IndexElem>, d: usize) -> bool {
    const L2_SHARE: usize = 1 << 20;
    sddmm_holds_a_row::<T>(d)
        && d == 2 * PANEL
        && p.ncols() * d * core::mem::size_of::<f32>() > L2_SHARE
        && p.nnz() >= 16 * p.ncols()
}

/// [`sddmm`] at d = 128 in two passes over the pattern, one per panel of 64 columns of `b`
/// (`panels`: `[k, 64]` twice): each pass gathers rows from a panel half `b`'s size, which
/// stays in a core's L2 where the whole did not (the SpMM's column panels, for the same
/// reason). The first pass writes the partial dot products, the second adds its own.
#[cfg(target_arch = "x86_64")]
fn sddmm_in_panels<T: 'static, I: IndexElem, J: IndexElem>(
    p: CsrPattern<'_, I, J>,
    a: &[f32],
    panels: &[f32],
) -> Vec<T> {
    let (m, k, nnz) = (p.nrows(), p.ncols(), p.nnz());
    let d = 2 * PANEL;
    assert!(a.len() == m * d && panels.len() == k * d && isa() == Isa::Avx512);
    let mut out: Vec<T> = Vec::with_capacity(nnz);
    let ahead = prefetch_distance(k * PANEL * core::mem::size_of::<f32>());
    let cuts = p.row_blocks(rayon::current_num_threads() * 16);
    let mut parts = Vec::with_capacity(cuts.len());
    let mut rest = as_f32_uninit(&mut out.spare_capacity_mut()[..nnz]).expect("sddmm_in_panels: T is f32");
    for w in cuts.windows(2) {
        let (head, tail) = rest.split_at_mut(p.start(w[1]) - p.start(w[0]));
        parts.push((w[0], head));
        rest = tail;
    }
    let (first, second) = panels.split_at(k * PANEL);
    // Pass by pass: each thread's gathers stay in one panel.
    for (pass, panel) in [first, second].into_iter().enumerate() {
        let a = &a[pass * PANEL..];
        parts.par_iter_mut().for_each(|(r0, part)| {
            // SAFETY: AVX-512F (asserted); `a` is `[m, 128]` from this panel's first column,
            // read at stride 128; the panel is `[k, 64]`; the part is this row block's entries,
            // which the second pass adds to after the first wrote them.
            unsafe {
                if pass == 0 {
                    sddmm_rows_f32_avx512_x4::<I, J, 4, false>(p, (a, d), panel, *r0, part, ahead)
                } else {
                    sddmm_rows_f32_avx512_x4::<I, J, 4, true>(p, (a, d), panel, *r0, part, ahead)
                }
            }
        });
    }
    // SAFETY: the row blocks' parts partition the output and the first pass wrote every entry.
    unsafe { out.set_len(nnz) };
    out
}

/// Entries ahead that the gathers of rows of `b` (`b_bytes` in all) are prefetched. Where `b`
/// outgrows the last-level cache its rows come from memory, and 16 entries ahead (about 50
/// cycles of the four-at-a-time kernel) is a fraction of a memory latency: measured on the
/// 100k x 100k power-law pattern (25.6 MB of `b`), 64 entries ahead took the kernel from 5.4 to
/// 4.4 ms; on 2 MB (4096 x 128), where the rows come from cache, it cost 15 %.
fn prefetch_distance(b_bytes: usize) -> usize {
    const IN_CACHE: usize = 8 << 20;
    if b_bytes > IN_CACHE {
        64
    } else {
        PREFETCH
    }
}

/// Whether the f32 SDDMM kernel for width `d` keeps the row of `a` in registers: d = 64 and 128
/// on AVX-512 (32 zmm registers), d = 64 on AVX2 (16 ymm: the row takes 8).
fn sddmm_holds_a_row<T: 'static>(d: usize) -> bool {
    core::any::TypeId::of::<T>() == core::any::TypeId::of::<f32>()
        && match isa() {
            Isa::Avx512 => d == 64 || d == 128,
            Isa::Avx2Fma => d == 64,
            Isa::Portable => false,
        }
}

fn sddmm_aligned_b<T: Real, I: IndexElem, J: IndexElem>(p: CsrPattern<'_, I, J>, a: &[T], b: &[T], d: usize) -> Vec<T> {
    let (m, nnz) = (p.nrows(), p.nnz());
    assert_eq!(a.len(), out_len(m, d, "sddmm: a"), "sddmm: a is [m, d] = [{m}, {d}]");
    if nnz == 0 || m == 0 {
        return vec![T::default(); nnz];
    }
    // Written once by the row kernels: no zeroing pass (a zeroed buffer faults every page).
    let mut out: Vec<T> = Vec::with_capacity(nnz);
    // A kernel that holds the row of `a` in registers loads it once per pattern row: no copy.
    let a_al = if sddmm_holds_a_row::<T>(d) { None } else { aligned_copy(a, d, nnz, 32) };
    let a = a_al.as_ref().map_or(a, |x| x.get());
    let ahead = prefetch_distance(core::mem::size_of_val(b));
    let cuts = p.row_blocks(rayon::current_num_threads() * 16);
    let mut parts = Vec::with_capacity(cuts.len());
    let mut rest = &mut out.spare_capacity_mut()[..nnz];
    for w in cuts.windows(2) {
        let (head, tail) = rest.split_at_mut(p.start(w[1]) - p.start(w[0]));
        parts.push((w[0], head));
        rest = tail;
    }
    parts.into_par_iter().for_each(|(r0, part)| {
        #[cfg(target_arch = "x86_64")]
        if let (Some(a32), Some(b32), Some(o32)) = (as_f32(a), as_f32(b), as_f32_uninit(&mut *part)) {
            if sddmm_holds_a_row::<T>(d) && isa() == Isa::Avx2Fma {
                // SAFETY: `isa` detected AVX2 and FMA; `sddmm_holds_a_row` on AVX2 means d = 64,
                // `a` is `[m, 64]` and `b` `[k, 64]` (asserted above and by `sddmm`).
                unsafe { sddmm_rows_f32_avx2_x4::<I, J>(p, a32, b32, r0, o32, ahead) };
                return;
            }
            if sddmm_holds_a_row::<T>(d) {
                // SAFETY: `isa` detected AVX-512F (`sddmm_holds_a_row`, not AVX2 above).
                unsafe {
                    if d == 64 {
                        sddmm_rows_f32_avx512_x4::<I, J, 4, false>(p, (a32, d), b32, r0, o32, ahead)
                    } else {
                        sddmm_rows_f32_avx512_x4::<I, J, 8, false>(p, (a32, d), b32, r0, o32, ahead)
                    }
                };
                return;
            }
        }
        let args = RowsOf { p, a, lda: d, b, d, r0, out: part, ahead, add: false };
        // SAFETY: `simd::arch` is an architecture this CPU supports.
        unsafe { sddmm_rows(args) }
    });
    // SAFETY: the pattern is valid (its type says so): its rows run from entry 0 to entry nnz,
    // so the row blocks' parts partition the output, and the kernels write every entry of
    // their part once.
    unsafe { out.set_len(nnz) };
    out
}

#[cfg(test)]
mod tests;
