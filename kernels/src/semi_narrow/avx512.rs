//! The AVX-512 narrow 2:4 kernel: 32 columns (16 kept values) a step, their columns decoded
//! from two metadata words by one variable shift, the row of `B` selected into kept order by one
//! two-register permute (the module docs of `semi_narrow`); kept values f32, bf16 or f16.

use super::*;

/// Up to 16 kept values from `p` (the lanes of `mask`, a run from lane 0; the rest zero) as f32
/// lanes: f32 as they are, bf16 shifted into the high half of an f32, f16 through the hardware
/// conversion.
///
/// # Safety
/// The CPU supports AVX-512F; `V` is f32, bf16 or f16; the masked lanes lie inside the values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(super) unsafe fn kept_lanes<V: 'static>(
    p: *const V,
    mask: core::arch::x86_64::__mmask16,
) -> core::arch::x86_64::__m512 {
    use core::any::TypeId;
    use core::arch::x86_64::*;
    // SAFETY: the masked lanes lie inside the values (the caller's promise); the type tests
    // select the reading of V's bits.
    unsafe {
        if TypeId::of::<V>() == TypeId::of::<f32>() {
            _mm512_maskz_loadu_ps(mask, p as *const f32)
        } else {
            // The 16-bit lanes without AVX-512BW: a whole load, or the first lanes (the masks
            // here are runs from lane 0) copied into a zeroed buffer.
            let bits = if mask == 0xFFFF {
                _mm256_loadu_si256(p as *const __m256i)
            } else {
                let mut buf = [0u16; 16];
                core::ptr::copy_nonoverlapping(p as *const u16, buf.as_mut_ptr(), mask.trailing_ones() as usize);
                _mm256_loadu_si256(buf.as_ptr() as *const __m256i)
            };
            if TypeId::of::<V>() == TypeId::of::<half::bf16>() {
                _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(bits)))
            } else {
                _mm512_cvtph_ps(bits)
            }
        }
    }
}

/// [`block`] with AVX-512, 32 columns (16 kept values) a step, values f32, bf16 or f16 and `b`
/// in f32; see the module docs.
///
/// # Safety
/// The CPU supports AVX-512F; `V` is f32, bf16 or f16; as [`block`] for the writes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn block_avx512<V: Copy + 'static, const N: usize>(
    a: SemiRef<'_, V>,
    b: &[f32],
    (r0, r1): (usize, usize),
    out: &Out<f32>,
) {
    use core::arch::x86_64::*;
    let cols = a.layout().cols();
    let (words, half) = (cols.div_ceil(WORD_COLUMNS), cols / 2);
    let (meta, vals) = (a.layout().meta(), a.vals());
    assert!(b.len() >= N * cols && meta.len() >= r1 * words && vals.len() >= r1 * half);
    let shifts = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    let base = _mm512_setr_epi32(0, 0, 4, 4, 8, 8, 12, 12, 16, 16, 20, 20, 24, 24, 28, 28);
    let three = _mm512_set1_epi32(3);
    // The kept values' columns inside a chunk of 32, from its two metadata words.
    let columns = |pair: u32| {
        _mm512_add_epi32(_mm512_and_si512(_mm512_srlv_epi32(_mm512_set1_epi32(pair as i32), shifts), three), base)
    };
    let (chunks, rest) = (cols / 32, cols % 32);
    // The columns go in slabs whose rows of `b` stay in L1 (24 KiB) while every row of the
    // block passes over them; each row's accumulators wait in `part` between slabs. In one
    // sweep per row, N = 8 rows of `b` (128 KiB) were re-read from L2 for every row of `A`.
    let slab = (24 * 1024 / (4 * 32 * N)).max(1);
    let mut part = vec![[_mm512_setzero_ps(); N]; r1 - r0];
    for ch0 in (0..chunks).step_by(slab) {
        for r in r0..r1 {
            let (w, v) = (&meta[r * words..(r + 1) * words], &vals[r * half..(r + 1) * half]);
            let mut acc = part[r - r0];
            // The slab's part of each row is a short run (1.5 KB at N = 8) and the next run
            // starts a row further: too short for the hardware prefetcher, which left the
            // value loads waiting on memory. Each step fetches the same step of a row `AHEAD` further
            // (addresses formed with wrapping arithmetic; a prefetch never faults).
            let (next_v, next_w) =
                (vals.as_ptr().wrapping_add((r + AHEAD) * half), meta.as_ptr().wrapping_add((r + AHEAD) * words));
            for ch in ch0..(ch0 + slab).min(chunks) {
                if r + AHEAD < r1 {
                    _mm_prefetch::<_MM_HINT_T0>(next_v.wrapping_add(16 * ch) as *const i8);
                    _mm_prefetch::<_MM_HINT_T0>(next_w.wrapping_add(2 * ch) as *const i8);
                }
                let pair = (w[2 * ch] as u16 as u32) | ((w[2 * ch + 1] as u16 as u32) << 16);
                let idx = columns(pair);
                // SAFETY: values 16 ch..16 ch + 16 of the row: 32 (ch + 1) <= cols, so
                // 16 (ch + 1) <= half.
                let kept = unsafe { kept_lanes(v.as_ptr().add(16 * ch), 0xFFFF) };
                for (m, am) in acc.iter_mut().enumerate() {
                    // SAFETY: columns 32 ch..32 ch + 32 <= cols of row m < N of `b`, which holds
                    // N rows of `cols` (asserted above).
                    let (x0, x1) = unsafe {
                        // Base + constant addresses for both loads (`simd::opaque`).
                        let x = crate::simd::opaque(b.as_ptr().add(m * cols + 32 * ch));
                        (_mm512_loadu_ps(x), _mm512_loadu_ps(x.add(16)))
                    };
                    *am = _mm512_fmadd_ps(kept, _mm512_permutex2var_ps(x0, idx, x1), *am);
                }
            }
            part[r - r0] = acc;
        }
    }
    for r in r0..r1 {
        let (w, v) = (&meta[r * words..(r + 1) * words], &vals[r * half..(r + 1) * half]);
        let acc = &mut part[r - r0];
        if rest > 0 {
            // The last groups (rest is a multiple of 4 below 32): masked loads, and lanes past
            // the kept values zeroed by the permute, so nothing outside the row is read and
            // nothing past it (an infinity times a zero) enters the sums.
            let c0 = 32 * chunks;
            let kept_mask: __mmask16 = ((1u32 << (rest / 2)) - 1) as __mmask16;
            let lo: __mmask16 = ((1u32 << rest.min(16)) - 1) as __mmask16;
            let hi: __mmask16 = ((1u32 << rest.saturating_sub(16)) - 1) as __mmask16;
            let pair = (w[2 * chunks] as u16 as u32) | (w.get(2 * chunks + 1).map_or(0, |&x| x as u16 as u32) << 16);
            let idx = columns(pair);
            // SAFETY: masked lanes only: the row's last rest / 2 values.
            let kept = unsafe { kept_lanes(v.as_ptr().add(16 * chunks), kept_mask) };
            for (m, am) in acc.iter_mut().enumerate() {
                let x = b[m * cols + c0..][..rest].as_ptr();
                // SAFETY: masked lanes only: the rest columns of the checked slice.
                let (x0, x1) = unsafe { (_mm512_maskz_loadu_ps(lo, x), _mm512_maskz_loadu_ps(hi, x.add(16))) };
                *am = _mm512_fmadd_ps(kept, _mm512_maskz_permutex2var_ps(kept_mask, x0, idx, x1), *am);
            }
        }
        for (m, am) in acc.iter().enumerate() {
            // SAFETY: m < N, r in r0..r1 (the caller's promise).
            unsafe { out.put(m, r, _mm512_reduce_add_ps(*am)) };
        }
    }
}
