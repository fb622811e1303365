//! The row kernels of `A · X`: each output row a sum of scaled rows of `X`, vectorised over the
//! dense dimension in register tiles (the portable tile, the macerator bodies, the f32 AVX-512
//! kernel whose accumulators stay in registers across a row), and the dispatch among them.

use super::*;

/// A task's block of the output: rows `[r0, r1)`, columns `[c0, c1)`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Block {
    pub(super) r0: usize,
    pub(super) r1: usize,
    pub(super) c0: usize,
    pub(super) c1: usize,
}

/// The rows of `X` a block reads: `x[row * ld + xc ..]` holds output column `c0` of the block.
/// The whole `X` (`ld = n`, `xc = c0`), or a packed panel of its columns (`ld` the panel width).
#[derive(Clone, Copy)]
pub(super) struct XRows<'a, T> {
    pub(super) x: &'a [T],
    pub(super) ld: usize,
    pub(super) xc: usize,
}

/// One block of `A · X` into `out` (`[m, n]`, written through a pointer: tasks own disjoint
/// blocks), the rows of `X` gathered by `col`. Columns are processed in register tiles of
/// `TILE`, each accumulated over the row's entries.
#[inline(always)]
pub(super) fn spmm_rows<T: Real, I: IndexElem, J: IndexElem, const FMA: bool, const TILE: usize>(
    a: CsrPattern<'_, I, J>,
    val: &[T],
    xr: XRows<'_, T>,
    n: usize,
    b: Block,
    out: &SendPtr<T>,
) {
    let XRows { x, ld, xc } = xr;
    let col = a.idx();
    for r in b.r0..b.r1 {
        let (s, e) = (a.start(r), a.start(r + 1));
        let mut t0 = b.c0;
        while t0 < b.c1 {
            let w = TILE.min(b.c1 - t0);
            let xt = t0 - b.c0 + xc;
            let mut acc = [T::default(); TILE];
            if w == TILE {
                for j in s..e {
                    prefetch_row(x, col, j + PREFETCH, ld, xt, TILE);
                    let row = &x[col[j].to_i64() as usize * ld + xt..][..TILE];
                    axpy::<T, FMA>(&mut acc, val[j], row);
                }
            } else {
                for j in s..e {
                    let row = &x[col[j].to_i64() as usize * ld + xt..][..w];
                    axpy::<T, FMA>(&mut acc[..w], val[j], row);
                }
            }
            // SAFETY: `r < m` and `t0 + w <= n`, and `out` holds `m * n` elements: inside the
            // output, in this task's block (the blocks partition it).
            unsafe { core::ptr::copy_nonoverlapping(acc.as_ptr(), out.at(r * n + t0), w) };
            t0 += w;
        }
    }
}

/// `spmm_rows` for f32 with AVX-512 intrinsics, block widths a multiple of `16 V`: the `V`
/// accumulators stay in registers across a row's entries (the portable kernel spilled one per
/// entry at `V = 8`), and the prefetch of the row ahead needs no bounds test on `X` (a prefetch
/// never faults).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn spmm_rows_f32_avx512<I: IndexElem, J: IndexElem, const V: usize>(
    a: CsrPattern<'_, I, J>,
    val: &[f32],
    xr: XRows<'_, f32>,
    n: usize,
    b: Block,
    out: &SendPtr<f32>,
) {
    use core::arch::x86_64::*;
    let XRows { x, ld, xc } = xr;
    let col = a.idx();
    for r in b.r0..b.r1 {
        let (s, e) = (a.start(r), a.start(r + 1));
        let mut t0 = b.c0;
        while t0 < b.c1 {
            let xt = t0 - b.c0 + xc;
            let mut acc = [_mm512_setzero_ps(); V];
            for j in s..e {
                if let Some(c) = col.get(j + PREFETCH) {
                    let ahead = x.as_ptr().wrapping_add(c.to_i64() as usize * ld + xt) as *const i8;
                    for q in 0..V {
                        _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(64 * q));
                    }
                }
                // Through `opaque`: the loads address the row as base + constant (`simd::opaque`).
                let row = crate::simd::opaque(x[col[j].to_i64() as usize * ld + xt..][..16 * V].as_ptr());
                let v = _mm512_set1_ps(val[j]);
                for (q, a) in acc.iter_mut().enumerate() {
                    // SAFETY: `row` starts a checked slice of 16 V floats.
                    *a = _mm512_fmadd_ps(v, unsafe { _mm512_loadu_ps(row.add(16 * q)) }, *a);
                }
            }
            for (q, a) in acc.iter().enumerate() {
                // SAFETY: `r < m`, `t0 + 16 V <= n`, and `out` holds `m * n` elements: inside
                // the output, in this task's block.
                unsafe { _mm512_storeu_ps(out.at(r * n + t0 + 16 * q), *a) };
            }
            t0 += 16 * V;
        }
    }
}

/// [`spmm_rows`] with the accumulators in `V` vector registers across a row's entries, one
/// kernel body for every instruction set; block widths a multiple of `V · lanes`.
#[inline(always)]
pub(super) fn spmm_rows_regs<S: Simd, T: Real, I: IndexElem, J: IndexElem, const V: usize>(
    a: CsrPattern<'_, I, J>,
    val: &[T],
    xr: XRows<'_, T>,
    n: usize,
    b: Block,
    out: &SendPtr<T>,
) {
    let XRows { x, ld, xc } = xr;
    let lanes = T::lanes::<S>();
    let tile = V * lanes;
    let col = a.idx();
    for r in b.r0..b.r1 {
        let (s, e) = (a.start(r), a.start(r + 1));
        let mut t0 = b.c0;
        while t0 + tile <= b.c1 {
            let xt = t0 - b.c0 + xc;
            let mut acc = [T::default().splat::<S>(); V];
            for j in s..e {
                prefetch_row(x, col, j + PREFETCH, ld, xt, tile);
                let row = &x[col[j].to_i64() as usize * ld + xt..][..tile];
                let v = val[j].splat::<S>();
                for (q, a) in acc.iter_mut().enumerate() {
                    // SAFETY: lanes q · lanes..(q + 1) · lanes of the checked row of `tile`.
                    *a = fmadd(v, unsafe { vload_unaligned::<S, T>(row.as_ptr().add(q * lanes)) }, *a);
                }
            }
            for (q, a) in acc.iter().enumerate() {
                // SAFETY: `r < m`, `t0 + tile <= c1 <= n`, and `out` holds `m * n` elements:
                // inside the output, in this task's block (the blocks partition it).
                unsafe { vstore_unaligned::<S, T>(out.at(r * n + t0 + q * lanes), *a) };
            }
            t0 += tile;
        }
    }
}

/// The block on the path's architecture: [`spmm_rows_regs`] with 8 vectors of accumulators
/// (half of AVX2's or NEON's registers; 64 f32 on AVX2) or 4 where the block's width is a
/// multiple of that, [`spmm_rows`] in 64-column tiles otherwise and in the scalar fallback
/// (two-lane "vectors" there ran 1.5-3x slower than the compiler's own loop).
#[with_simd(on(arch = crate::simd::arch()))]
fn spmm_rows_simd<'a, S: Simd, T: Real, I: IndexElem, J: IndexElem>(
    a: CsrPattern<'a, I, J>,
    val: &'a [T],
    x: XRows<'a, T>,
    n: usize,
    b: Block,
    out: &'a SendPtr<T>,
) {
    let (width, lanes) = (b.c1 - b.c0, T::lanes::<S>());
    if lanes >= 4 && width.is_multiple_of(8 * lanes) {
        spmm_rows_regs::<S, T, I, J, 8>(a, val, x, n, b, out)
    } else if lanes >= 4 && width.is_multiple_of(4 * lanes) {
        spmm_rows_regs::<S, T, I, J, 4>(a, val, x, n, b, out)
    } else if <T as macerator::VFma>::is_accelerated::<S>() {
        spmm_rows::<T, I, J, true, 64>(a, val, x, n, b, out)
    } else {
        spmm_rows::<T, I, J, false, 64>(a, val, x, n, b, out)
    }
}

/// The block on the best kernel for the path: on AVX-512, the f32 kernel whose accumulators
/// stay in registers (up to 128 f32 columns, one pass over the row's entries) or the portable
/// kernel compiled for it; elsewhere [`spmm_rows_simd`].
pub(super) fn spmm_rows_dispatch<T: Real, I: IndexElem, J: IndexElem>(
    a: CsrPattern<'_, I, J>,
    val: &[T],
    x: XRows<'_, T>,
    n: usize,
    b: Block,
    out: &SendPtr<T>,
) {
    #[cfg(target_arch = "x86_64")]
    if isa() == Isa::Avx512 {
        #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
        unsafe fn avx512<T: Real, I: IndexElem, J: IndexElem, const TILE: usize>(
            a: CsrPattern<'_, I, J>,
            val: &[T],
            x: XRows<'_, T>,
            n: usize,
            b: Block,
            out: &SendPtr<T>,
        ) {
            spmm_rows::<T, I, J, true, TILE>(a, val, x, n, b, out)
        }
        let width = b.c1 - b.c0;
        if let (Some(val), Some(xs)) = (as_f32(val), as_f32(x.x)) {
            if width.is_multiple_of(64) {
                let xr = XRows { x: xs, ld: x.ld, xc: x.xc };
                let out = SendPtr(out.0 as *mut f32);
                // SAFETY: `isa` detected AVX-512F; T is f32 (`as_f32` checked).
                return unsafe {
                    if width.is_multiple_of(128) {
                        spmm_rows_f32_avx512::<I, J, 8>(a, val, xr, n, b, &out)
                    } else {
                        spmm_rows_f32_avx512::<I, J, 4>(a, val, xr, n, b, &out)
                    }
                };
            }
        }
        let wide = core::mem::size_of::<T>() == 4 && width.is_multiple_of(128);
        // SAFETY: `isa` detected the features the functions were compiled for.
        return unsafe {
            if wide {
                avx512::<T, I, J, 128>(a, val, x, n, b, out)
            } else {
                avx512::<T, I, J, 64>(a, val, x, n, b, out)
            }
        };
    }
    // SAFETY: `simd::arch` is an architecture this CPU supports.
    unsafe { spmm_rows_simd(a, val, x, n, b, out) }
}
