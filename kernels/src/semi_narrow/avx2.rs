//! The AVX2 twin of the AVX-512 narrow 2:4 kernel: 16 columns (8 kept values) a step in 256-bit
//! registers, for CPUs without AVX-512 (AMD before Zen 4, most laptops and desktops).
//!
//! AVX2 has no two-register permute, so the 16 columns of a row of `B` come as two vectors and
//! each is permuted into kept order by `vpermps` on the low three bits of the kept columns; the
//! first four kept values of a step always lie in the first eight columns (groups 0 and 1) and
//! the last four in the second eight, so one blend with a constant mask joins them. bf16 kept
//! values are widened by a shift (no `vdpbf16ps` here), f16 by F16C's conversion.

use super::{Out, AHEAD};
use crate::semi::{SemiRef, WORD_COLUMNS};
use core::any::TypeId;
use core::arch::x86_64::*;

/// Columns a step: one metadata word.
const STEP: usize = WORD_COLUMNS;

/// Eight kept values from `p` as f32 lanes: f32 as they are, bf16 shifted into the high half of
/// an f32, f16 through F16C.
///
/// # Safety
/// The CPU supports AVX2 and F16C; `V` is f32, bf16 or f16; eight values lie at `p`.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
unsafe fn kept8<V: 'static>(p: *const V) -> __m256 {
    // SAFETY: eight values at `p` (the caller's promise); the type tests select the reading of
    // V's bits.
    unsafe {
        if TypeId::of::<V>() == TypeId::of::<f32>() {
            _mm256_loadu_ps(p as *const f32)
        } else {
            let bits = _mm_loadu_si128(p as *const __m128i);
            if TypeId::of::<V>() == TypeId::of::<half::bf16>() {
                _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(bits)))
            } else {
                _mm256_cvtph_ps(bits)
            }
        }
    }
}

/// The sum of the eight lanes.
#[target_feature(enable = "avx2")]
#[inline]
fn hsum(v: __m256) -> f32 {
    let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)))
}

/// Rows `r0..r1` of `A` against the `N` rows of `b` (f32), values f32, bf16 or f16.
///
/// # Safety
/// The CPU supports AVX2, FMA and F16C; `V` is f32, bf16 or f16; `out` as `Out::put` for every
/// `m < N` and `r` in `r0..r1`.
#[target_feature(enable = "avx2,fma,f16c")]
// `st` indexes the metadata words, the values and B's columns alike.
#[allow(clippy::needless_range_loop)]
pub(super) unsafe fn block_avx2<V: Copy + 'static, const N: usize>(
    a: SemiRef<'_, V>,
    b: &[f32],
    (r0, r1): (usize, usize),
    out: &Out<f32>,
) {
    let cols = a.layout().cols();
    let (words, half) = (cols.div_ceil(WORD_COLUMNS), cols / 2);
    let (meta, vals) = (a.layout().meta(), a.vals());
    assert!(b.len() >= N * cols && meta.len() >= r1 * words && vals.len() >= r1 * half);
    let shifts = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    let base = _mm256_setr_epi32(0, 0, 4, 4, 8, 8, 12, 12);
    let three = _mm256_set1_epi32(3);
    // The kept values' columns inside a step of 16, from its metadata word (nibble g holds the
    // slots of values 2 g and 2 g + 1): every index lies in 0..16, inside the step's columns.
    let columns = |word: i16| {
        _mm256_add_epi32(
            _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(word as u16 as i32), shifts), three),
            base,
        )
    };
    // Kept value i of a step reads B's first eight columns for i < 4, the second eight after.
    let select = |x0: __m256, x1: __m256, idx: __m256i| {
        _mm256_blend_ps::<0b1111_0000>(_mm256_permutevar8x32_ps(x0, idx), _mm256_permutevar8x32_ps(x1, idx))
    };
    let (steps, rest) = (cols / STEP, cols % STEP);
    // Slabs of columns whose rows of `b` stay in L1 while the block's rows pass (as the AVX-512
    // kernel; each row's accumulators wait in `part` between slabs).
    let slab = (24 * 1024 / (4 * STEP * N)).max(1);
    let mut part = vec![[_mm256_setzero_ps(); N]; r1 - r0];
    for s0 in (0..steps).step_by(slab) {
        for r in r0..r1 {
            let (w, v) = (&meta[r * words..(r + 1) * words], &vals[r * half..(r + 1) * half]);
            let mut acc = part[r - r0];
            // As the AVX-512 kernel: the slab's runs are too short for the hardware prefetcher;
            // addresses formed with wrapping arithmetic, and a prefetch never faults.
            let (next_v, next_w) =
                (vals.as_ptr().wrapping_add((r + AHEAD) * half), meta.as_ptr().wrapping_add((r + AHEAD) * words));
            for st in s0..(s0 + slab).min(steps) {
                if r + AHEAD < r1 && st % 2 == 0 {
                    _mm_prefetch::<_MM_HINT_T0>(next_v.wrapping_add(8 * st) as *const i8);
                    _mm_prefetch::<_MM_HINT_T0>(next_w.wrapping_add(st) as *const i8);
                }
                let idx = columns(w[st]);
                // SAFETY: values 8 st..8 st + 8 of the row: 16 (st + 1) <= cols, so
                // 8 (st + 1) <= half; V is f32, bf16 or f16 (the caller's promise).
                let kept = unsafe { kept8(v.as_ptr().add(8 * st)) };
                for (m, am) in acc.iter_mut().enumerate() {
                    // SAFETY: columns 16 st..16 st + 16 <= cols of row m < N of `b`, which holds
                    // N rows of `cols` (asserted above).
                    let (x0, x1) = unsafe {
                        let x = crate::simd::opaque(b.as_ptr().add(m * cols + STEP * st));
                        (_mm256_loadu_ps(x), _mm256_loadu_ps(x.add(8)))
                    };
                    *am = _mm256_fmadd_ps(kept, select(x0, x1, idx), *am);
                }
            }
            part[r - r0] = acc;
        }
    }
    for r in r0..r1 {
        let acc = &mut part[r - r0];
        if rest > 0 {
            // The last groups (rest is a multiple of 4 below 16), copied into zeroed buffers:
            // nothing outside the row is read, and lanes past the kept values are cleared
            // after the permute, so nothing past the row (an infinity times a zero) enters
            // the sums.
            let (w, v) = (&meta[r * words..(r + 1) * words], &vals[r * half..(r + 1) * half]);
            let mut kept_bits = [0u32; 8];
            let tail = &v[STEP / 2 * steps..];
            // SAFETY: `tail` holds rest / 2 <= 8 values of at most 4 bytes, inside the 32
            // bytes of `kept_bits`; all-zero bits are 0.0 in f32, bf16 and f16.
            let kept = unsafe {
                core::ptr::copy_nonoverlapping(
                    tail.as_ptr() as *const u8,
                    kept_bits.as_mut_ptr() as *mut u8,
                    core::mem::size_of_val(tail),
                );
                kept8(kept_bits.as_ptr() as *const V)
            };
            let live = _mm256_castsi256_ps(_mm256_cmpgt_epi32(
                _mm256_set1_epi32((rest / 2) as i32),
                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
            ));
            let idx = columns(w[steps]);
            for (m, am) in acc.iter_mut().enumerate() {
                let mut xb = [0f32; STEP];
                xb[..rest].copy_from_slice(&b[m * cols + STEP * steps..][..rest]);
                // SAFETY: 16 floats in `xb`.
                let (x0, x1) = unsafe { (_mm256_loadu_ps(xb.as_ptr()), _mm256_loadu_ps(xb.as_ptr().add(8))) };
                *am = _mm256_fmadd_ps(kept, _mm256_and_ps(select(x0, x1, idx), live), *am);
            }
        }
        for (m, am) in acc.iter().enumerate() {
            // SAFETY: m < N, r in r0..r1 (the caller's promise).
            unsafe { out.put(m, r, hsum(*am)) };
        }
    }
}
