//! Dense host kernels the sparse ones lean on: the cache-blocked parallel transpose (torch's
//! `mat2` arrives transposed for SDDMM; a 2:4 product's operand may be given transposed).

/// The transpose `[c, r]` of a row-major `[r, c]` buffer.
pub fn transpose_blocked<T: Copy + Send + Sync + 'static>(src: &[T], r: usize, c: usize) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(r * c);
    transpose_into(src, r, c, &mut out.spare_capacity_mut()[..r * c]);
    // SAFETY: `transpose_into` writes every element.
    unsafe { out.set_len(r * c) };
    out
}

/// The transpose `[c, r]` of a row-major `[r, c]` buffer into `out`, in 16 x 16 tiles (f32
/// tiles in AVX-512 registers where available), parallel over bands of 64 output rows, each
/// element written once. Element by element, the transpose took a fifth of the SDDMM it feeds.
pub fn transpose_into<T: Copy + Send + Sync + 'static>(
    src: &[T],
    r: usize,
    c: usize,
    out: &mut [core::mem::MaybeUninit<T>],
) {
    use rayon::prelude::*;
    const TILE: usize = 16;
    let len = r.checked_mul(c).expect("transpose: size overflows usize");
    assert!(src.len() >= len && out.len() >= len, "transpose: buffers hold [{r}, {c}]");
    if len == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    let simd = core::any::TypeId::of::<T>() == core::any::TypeId::of::<f32>()
        && crate::simd::isa() == crate::simd::Isa::Avx512;
    // Bands of 64 output rows: each source row gives the band 256 contiguous bytes (four whole
    // lines) rather than one line, so the strided source rows stream in fewer, longer runs.
    const BAND: usize = 4 * TILE;
    out[..r * c].par_chunks_mut(BAND * r).enumerate().for_each(|(band, dst)| {
        let j0 = band * BAND;
        let jn = dst.len() / r;
        for i0 in (0..r).step_by(TILE) {
            let iw = TILE.min(r - i0);
            for t0 in (0..jn).step_by(TILE) {
                let tw = TILE.min(jn - t0);
                #[cfg(target_arch = "x86_64")]
                if simd && iw == TILE && tw == TILE {
                    // SAFETY: `isa` detected AVX-512F and T is f32; the tile's 16 source rows
                    // of 16 from (i0, j0 + t0) lie inside `src` ([r, c], i0 + 16 <= r,
                    // j0 + t0 + 16 <= c), and its 16 destination rows of 16 from (t0, i0)
                    // inside this band ([jn, r], t0 + 16 <= jn).
                    unsafe {
                        transpose_16x16_f32::<false>(
                            src[i0 * c + j0 + t0..].as_ptr() as *const f32,
                            c,
                            dst[t0 * r + i0..].as_mut_ptr() as *mut f32,
                            r,
                        )
                    };
                    continue;
                }
                for i in i0..i0 + iw {
                    for j in t0..t0 + tw {
                        dst[j * r + i].write(src[i * c + j0 + j]);
                    }
                }
            }
        }
    });
}

/// `dst[j * ldd + i] = src[i * lds + j]` for `i < r`, `j < c`: a serial transpose between
/// strided buffers in 16 x 16 tiles (f32 tiles in AVX-512 registers where available), for
/// callers already inside a parallel task (`spgemm`'s dense blocks, a lane per row).
///
/// # Panics
/// If `src` does not hold `r` rows of `c` at stride `lds` (`lds >= c`) or `dst` `c` rows of `r`
/// at stride `ldd` (`ldd >= r`).
pub(crate) fn transpose_strided<T: Copy + 'static>(
    src: &[T],
    lds: usize,
    dst: &mut [T],
    ldd: usize,
    r: usize,
    c: usize,
) {
    const TILE: usize = 16;
    if r == 0 || c == 0 {
        return;
    }
    let fits = |len: usize, rows: usize, cols: usize, ld: usize| {
        ld >= cols && (rows - 1).checked_mul(ld).and_then(|v| v.checked_add(cols)).is_some_and(|end| end <= len)
    };
    assert!(
        fits(src.len(), r, c, lds) && fits(dst.len(), c, r, ldd),
        "transpose: buffers hold [{r}, {c}] and [{c}, {r}]"
    );
    #[cfg(target_arch = "x86_64")]
    let simd = core::any::TypeId::of::<T>() == core::any::TypeId::of::<f32>()
        && crate::simd::isa() == crate::simd::Isa::Avx512;
    for i0 in (0..r).step_by(TILE) {
        let iw = TILE.min(r - i0);
        for j0 in (0..c).step_by(TILE) {
            let jw = TILE.min(c - j0);
            #[cfg(target_arch = "x86_64")]
            if simd && iw == TILE && jw == TILE {
                // SAFETY: `isa` detected AVX-512F and T is f32; the tile's 16 source rows of 16
                // from (i0, j0) lie inside `src` (i0 + 16 <= r, j0 + 16 <= c, checked above
                // against `src.len()`), its 16 destination rows of 16 from (j0, i0) inside `dst`
                // (likewise).
                unsafe {
                    transpose_16x16_f32::<false>(
                        src[i0 * lds + j0..].as_ptr() as *const f32,
                        lds,
                        dst[j0 * ldd + i0..].as_mut_ptr() as *mut f32,
                        ldd,
                    )
                };
                continue;
            }
            for i in i0..i0 + iw {
                for j in j0..j0 + jw {
                    dst[j * ldd + i] = src[i * lds + j];
                }
            }
        }
    }
}

/// One 16 x 16 f32 tile: rows of `src` (stride `lds`) to rows of `dst` (stride `ldd`), in four
/// shuffle stages (32-bit pairs, 64-bit pairs, then 128-bit lanes twice). With `STREAM`, each
/// destination row, a whole cache line, is written by a streaming store (not read first, not
/// kept in the caches): the caller fences before the stores are published.
///
/// # Safety
/// The CPU supports AVX-512F; `src` holds 16 rows of 16 readable floats at stride `lds`, and
/// `dst` 16 rows of 16 writable ones at stride `ldd`, each 64-byte aligned with `STREAM`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn transpose_16x16_f32<const STREAM: bool>(src: *const f32, lds: usize, dst: *mut f32, ldd: usize) {
    use core::arch::x86_64::*;
    // SAFETY: the caller promises 16 readable rows of 16 at stride `lds`.
    let rows: [__m512; 16] = core::array::from_fn(|i| unsafe { _mm512_loadu_ps(src.add(i * lds)) });
    let mut t = [_mm512_setzero_ps(); 16];
    for p in 0..8 {
        t[2 * p] = _mm512_unpacklo_ps(rows[2 * p], rows[2 * p + 1]);
        t[2 * p + 1] = _mm512_unpackhi_ps(rows[2 * p], rows[2 * p + 1]);
    }
    let pd = _mm512_castps_pd;
    let ps = _mm512_castpd_ps;
    let mut u = [_mm512_setzero_ps(); 16];
    for q in 0..4 {
        let (a, b, c, d) = (pd(t[4 * q]), pd(t[4 * q + 1]), pd(t[4 * q + 2]), pd(t[4 * q + 3]));
        u[4 * q] = ps(_mm512_unpacklo_pd(a, c));
        u[4 * q + 1] = ps(_mm512_unpackhi_pd(a, c));
        u[4 * q + 2] = ps(_mm512_unpacklo_pd(b, d));
        u[4 * q + 3] = ps(_mm512_unpackhi_pd(b, d));
    }
    let mut v = [_mm512_setzero_ps(); 16];
    for h in 0..2 {
        for i in 0..4 {
            v[8 * h + i] = _mm512_shuffle_f32x4::<0x88>(u[8 * h + i], u[8 * h + 4 + i]);
            v[8 * h + 4 + i] = _mm512_shuffle_f32x4::<0xdd>(u[8 * h + i], u[8 * h + 4 + i]);
        }
    }
    for i in 0..8 {
        let (lo, hi) = (_mm512_shuffle_f32x4::<0x88>(v[i], v[8 + i]), _mm512_shuffle_f32x4::<0xdd>(v[i], v[8 + i]));
        // SAFETY: the caller promises 16 writable rows of 16 at stride `ldd` (aligned rows
        // with `STREAM`); rows i and 8 + i.
        unsafe {
            if STREAM {
                _mm512_stream_ps(dst.add(i * ldd), lo);
                _mm512_stream_ps(dst.add((8 + i) * ldd), hi);
            } else {
                _mm512_storeu_ps(dst.add(i * ldd), lo);
                _mm512_storeu_ps(dst.add((8 + i) * ldd), hi);
            }
        }
    }
}

#[cfg(test)]
mod tests;
