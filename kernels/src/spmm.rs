//! SpMM on CSR patterns: `A · X` (each output row a sum of scaled rows of `X`) and `Aᵀ · G`
//! through the pattern's transposed view, so threads never write the same row.
//!
//! Parallel over row blocks balanced by stored entries and, where `X` outgrows a core's L2,
//! over packed column panels of it; vectorised over the dense dimension in register tiles:
//! a portable kernel compiled for AVX-512 and AVX2+FMA beside the plain build, and an f32
//! AVX-512 kernel whose accumulators stay in registers across a row. Dense operands gathered
//! many times per row are read from cache-aligned copies (`Scratch`). The product stored
//! transposed (`X · A` through `Aᵀ`) goes out in 16 x 16 register transposes, and past a core's
//! L2 in streaming stores (one write stream per output row defeats the prefetcher).

use crate::alloc::out_len;
use crate::index::IndexElem;
use crate::pattern::{transpose_with, CscPattern, CsrPattern, SendPtr};
use crate::real::{axpy, Real};
use crate::scratch::{aligned_copy, gather_into, Scratch};
#[cfg(target_arch = "x86_64")]
use crate::simd::as_f32;
use crate::simd::{fmadd, isa, prefetch_row, Isa, PREFETCH};
use macerator::{vload_unaligned, vstore_unaligned, with_simd, Simd};
use rayon::prelude::*;

/// A task's block of the output: rows `[r0, r1)`, columns `[c0, c1)`.
#[derive(Clone, Copy, Debug)]
struct Block {
    r0: usize,
    r1: usize,
    c0: usize,
    c1: usize,
}

/// The rows of `X` a block reads: `x[row * ld + xc ..]` holds output column `c0` of the block.
/// The whole `X` (`ld = n`, `xc = c0`), or a packed panel of its columns (`ld` the panel width).
#[derive(Clone, Copy)]
struct XRows<'a, T> {
    x: &'a [T],
    ld: usize,
    xc: usize,
}

/// One block of `A · X` into `out` (`[m, n]`, written through a pointer: tasks own disjoint
/// blocks), the rows of `X` gathered by `col`. Columns are processed in register tiles of
/// `TILE`, each accumulated over the row's entries.
#[inline(always)]
fn spmm_rows<T: Real, I: IndexElem, J: IndexElem, const FMA: bool, const TILE: usize>(
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
unsafe fn spmm_rows_f32_avx512<I: IndexElem, J: IndexElem, const V: usize>(
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
fn spmm_rows_regs<S: Simd, T: Real, I: IndexElem, J: IndexElem, const V: usize>(
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
fn spmm_rows_dispatch<T: Real, I: IndexElem, J: IndexElem>(
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

/// `A · X` on host slices: `A [m, k]` with one value per entry, `X [k, n]` row-major; `out [m,
/// n]`. Every output element is written exactly once (no zeroing pass over the output).
///
/// # Panics
/// If `val` does not hold one value per entry or `x` is not `[k, n]`.
pub fn spmm<T: Real, I: IndexElem, J: IndexElem>(a: CsrPattern<'_, I, J>, val: &[T], x: &[T], n: usize) -> Vec<T> {
    spmm_laid_out(a, val, Operand::Rows(x), n, false)
}

/// `A · X` as [`spmm`] computes it, stored transposed: `out [n, m]` row-major, element `(r, c)`
/// of the product at `c * m + r`. Each task computes its rows up to 128 at a time into a
/// buffer that stays in L1 and transposes it into place in 16 x 16 tiles: an L1 round trip
/// more than [`spmm`], not a pass over memory (what `X · A` needs, `(Aᵀ Xᵀ)ᵀ`, contiguous).
///
/// # Panics
/// As [`spmm`].
pub fn spmm_transposed_out<T: Real, I: IndexElem, J: IndexElem>(
    a: CsrPattern<'_, I, J>,
    val: &[T],
    x: &[T],
    n: usize,
) -> Vec<T> {
    spmm_laid_out(a, val, Operand::Rows(x), n, true)
}

/// `A · Yᵀ` stored transposed, that is `Y · Aᵀ`: `Y [n, k]` row-major (the dense operand given
/// by its transpose, as `X · A` has it), `out [n, m]` as [`spmm_transposed_out`] gives it for
/// `X = Yᵀ`, bit for bit. `Yᵀ` is never copied on its own: the packing pass the product makes
/// anyway (column panels of `X`, or an aligned copy of it) transposes `Y`'s rows into it.
///
/// # Panics
/// If `val` does not hold one value per entry or `y` is not `[n, k]`.
pub fn spmm_of_transpose_transposed_out<T: Real, I: IndexElem, J: IndexElem>(
    a: CsrPattern<'_, I, J>,
    val: &[T],
    y: &[T],
    n: usize,
) -> Vec<T> {
    spmm_laid_out(a, val, Operand::Transposed(y), n, true)
}

/// The dense operand `X [k, n]` of [`spmm_laid_out`]: its rows (row-major), or its transpose
/// `[n, k]` row-major.
#[derive(Clone, Copy)]
enum Operand<'a, T> {
    Rows(&'a [T]),
    Transposed(&'a [T]),
}

/// Rows an output group of [`spmm_transposed_out`] holds at most: each row of the transposed
/// output gets up to 512 contiguous bytes per group. Measured on the 100,000-row product
/// against the same product left untransposed: 16 rows a group (a line per output row) ran
/// 20-35 % slower, 64 rows 20-30 %, 128 rows 15-20 %.
const GROUP: usize = 128;

/// Bytes of a task's group buffer, at most (fewer rows a group for wide blocks).
const GROUP_BYTES: usize = 32 << 10;

/// The f32 tile [`rows_transposed`] moves at once (AVX-512 registers).
const TILE: usize = 16;

/// Rows `b.r0..b.r1` and columns `b.c0..b.c1` of `A · X` into the transposed output `out
/// [n, m]`, [`group_rows`] rows at a time through `buf` (that many rows of `c1 - c0`, twice
/// over when `stream`: see [`streams_output`]).
///
/// Streamed, the output's rows are written in whole lines: where every output row starts at
/// the same offset in its line (`m` floats a multiple of a line), the groups start on a line
/// boundary and each transposed tile row, one line, is a streaming store straight from the
/// registers; otherwise the tiles go to `runs` (each output row's run of the group,
/// contiguous) and the runs out with streaming stores.
#[allow(clippy::too_many_arguments)]
fn rows_transposed<T: Real, I: IndexElem, J: IndexElem>(
    a: CsrPattern<'_, I, J>,
    val: &[T],
    x: XRows<'_, T>,
    m: usize,
    b: Block,
    buf: &mut [T],
    out: &SendPtr<T>,
    stream: bool,
) {
    let w = b.c1 - b.c0;
    let group = group_rows::<T>(w);
    #[cfg(target_arch = "x86_64")]
    let tiles = core::any::TypeId::of::<T>() == core::any::TypeId::of::<f32>() && isa() == Isa::Avx512;
    #[cfg(not(target_arch = "x86_64"))]
    let tiles = false;
    let stream = stream && tiles;
    // The rows' common line phase: element `l` of every output row starts a line when `l %
    // TILE == phase` (f32: 16 to a line). None when the rows' phases differ.
    let line = TILE * core::mem::size_of::<T>();
    let phase = (stream && (m * core::mem::size_of::<T>()).is_multiple_of(line))
        .then(|| (line - out.0 as usize % line) % line / core::mem::size_of::<T>());
    let (buf, runs) = buf.split_at_mut(group * w);
    let mut g0 = b.r0;
    while g0 < b.r1 {
        // With a common phase, a group starts on a line boundary: the rows before the block's
        // first boundary form a group of their own, stored plainly.
        let direct = phase == Some(g0 % TILE);
        let g1 = match phase {
            Some(p) if !direct => g0 + (p + TILE - g0 % TILE) % TILE,
            _ => g0 + group,
        }
        .min(b.r1);
        // The kernel writes row `r`, column `t` at `r * w + t` from its pointer: shifted back
        // by `g0 * w + c0`, that is `buf[(r - g0) * w + (t - c0)]`.
        let shifted = SendPtr(buf.as_mut_ptr().wrapping_sub(g0 * w + b.c0));
        spmm_rows_dispatch(a, val, x, w, Block { r0: g0, r1: g1, c0: b.c0, c1: b.c1 }, &shifted);
        let rows = g1 - g0;
        // Streamed without a common phase, the transpose goes to `runs` (`[w, group]`) and the
        // runs to `out` below; else the tiles go to `out` directly.
        let via_runs = stream && phase.is_none();
        let (dst, ld) = if via_runs {
            (SendPtr(runs.as_mut_ptr()), group)
        } else {
            (SendPtr(out.0.wrapping_add(b.c0 * m + g0)), m)
        };
        // Whole 16 x 16 tiles in registers where they fit, the rest element by element.
        let (mut tiled_rows, mut tiled_cols) = (0, 0);
        #[cfg(target_arch = "x86_64")]
        if tiles {
            (tiled_rows, tiled_cols) = (rows / TILE * TILE, w / TILE * TILE);
            for t0 in (0..tiled_cols).step_by(TILE) {
                for l0 in (0..tiled_rows).step_by(TILE) {
                    let (src, to) =
                        (buf.as_ptr().wrapping_add(l0 * w + t0) as *const f32, dst.at(t0 * ld + l0) as *mut f32);
                    // SAFETY: AVX-512F was detected and T is f32 (`tiles`). The tile's 16
                    // source rows of 16 from (l0, t0) lie in `buf` ([rows, w], l0 + 16 <= rows,
                    // t0 + 16 <= w); its 16 destination rows of 16 from (t0, l0) lie in `runs`
                    // ([w, group], rows <= group) or, from (c0 + t0, g0 + l0), in `out` ([n,
                    // m]: c0 + t0 + 16 <= c1 <= n, g0 + l0 + 16 <= g1 <= m), in this task's rows
                    // and columns. `direct`: every output row starts at phase `p` in its line
                    // and g0 + l0 = p (mod 16), so each destination row is a whole line.
                    unsafe {
                        if direct {
                            crate::dense::transpose_16x16_f32::<true>(src, w, to, ld)
                        } else {
                            crate::dense::transpose_16x16_f32::<false>(src, w, to, ld)
                        }
                    };
                }
            }
        }
        for t in 0..w {
            let from = if t < tiled_cols { tiled_rows } else { 0 };
            for l in from..rows {
                // SAFETY: (t, l) lies in `runs` ([w, group]) or (c0 + t, g0 + l) in `out`
                // ([n, m]), in this task's block.
                unsafe { dst.at(t * ld + l).write(buf[l * w + t]) };
            }
        }
        #[cfg(target_arch = "x86_64")]
        if via_runs {
            for t in 0..w {
                // SAFETY: AVX-512F was detected (`stream`) and T is f32; row t of `runs` holds
                // `rows` written elements, and the output row's run (c0 + t, g0..g1) lies in
                // `out` ([n, m]), in this task's block.
                unsafe {
                    stream_run_f32(
                        runs.as_ptr().add(t * group) as *const f32,
                        out.at((b.c0 + t) * m + g0) as *mut f32,
                        rows,
                    )
                };
            }
        }
        g0 = g1;
    }
    #[cfg(target_arch = "x86_64")]
    if stream {
        // Streaming stores are weakly ordered: fenced before the task ends, so the rayon join
        // that publishes the output orders them as the plain stores.
        // SAFETY: SSE is part of x86-64.
        unsafe { core::arch::x86_64::_mm_sfence() };
    }
}

/// Whether [`rows_transposed`] streams its runs to memory: outputs past the caches. Each group
/// writes a run of 128 elements into every one of its `w` output rows, `m` elements apart: as
/// many write streams as columns, too many for the hardware prefetcher to fetch their lines
/// for ownership ahead, so every line's first store waited on memory (measured on the 100,000
/// x 64 product: the tile stores took 11-17 ms of 19-28, the rest of the product 10.5).
/// Streaming stores write whole lines without reading them.
fn streams_output<T>(len: usize) -> bool {
    const PAST_L2: usize = 1 << 20;
    len.saturating_mul(core::mem::size_of::<T>()) > PAST_L2
}

/// `len` f32 from `src` to `dst`: whole 64-byte lines of `dst` with streaming stores, the
/// partial lines at either end with masked plain stores.
///
/// # Safety
/// AVX-512F is available; `src` holds `len` readable elements and `dst` `len` writable ones.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn stream_run_f32(src: *const f32, dst: *mut f32, len: usize) {
    use core::arch::x86_64::*;
    // Elements before `dst`'s next line boundary (an f32 pointer is 4-byte aligned).
    let head = ((64 - dst as usize % 64) % 64 / 4).min(len);
    let head_mask = ((1u32 << head) - 1) as u16;
    // SAFETY: the mask covers the first `head <= len` elements of `src` and `dst` (the
    // caller's promise).
    unsafe { _mm512_mask_storeu_ps(dst, head_mask, _mm512_maskz_loadu_ps(head_mask, src)) };
    let mut i = head;
    while i + 16 <= len {
        // SAFETY: elements i..i + 16 <= len of both (the caller's promise); `dst + i` starts a
        // line (64-byte aligned): `head` reached the first boundary, each step is a line.
        unsafe { _mm512_stream_ps(dst.add(i), _mm512_loadu_ps(src.add(i))) };
        i += 16;
    }
    let tail_mask = ((1u32 << (len - i)) - 1) as u16;
    // SAFETY: the mask covers elements i..len (fewer than 16) of both (the caller's promise).
    unsafe { _mm512_mask_storeu_ps(dst.add(i), tail_mask, _mm512_maskz_loadu_ps(tail_mask, src.add(i))) };
}

/// Rows a group of [`rows_transposed`] holds for blocks `w` columns wide: as many as fit
/// [`GROUP_BYTES`], a multiple of 16 from 16 to [`GROUP`].
fn group_rows<T>(w: usize) -> usize {
    (GROUP_BYTES / (w.max(1) * core::mem::size_of::<T>()).max(1)).clamp(TILE, GROUP) / TILE * TILE
}

/// [`spmm`], its output `[m, n]` or, `transposed_out`, `[n, m]`.
fn spmm_laid_out<T: Real, I: IndexElem, J: IndexElem>(
    a: CsrPattern<'_, I, J>,
    val: &[T],
    operand: Operand<'_, T>,
    n: usize,
    transposed_out: bool,
) -> Vec<T> {
    let (m, k) = (a.nrows(), a.ncols());
    assert_eq!(val.len(), a.nnz(), "spmm: one value per stored entry");
    let (Operand::Rows(given) | Operand::Transposed(given)) = operand;
    assert_eq!(given.len(), out_len(k, n, "spmm: X"), "spmm: X is [k, n] = [{k}, {n}]");
    let len = out_len(m, n, "spmm: the output");
    if len == 0 {
        return Vec::new();
    }
    let col = a.idx();
    // Panels are packed copies of X; measured, they pay at 41 reads per row (4096 x 128 at 1 %:
    // 9 %) where a plain aligned copy does not. X given transposed is packed in any case (the
    // transpose is the copy), in panels where they pay.
    let transposed = matches!(operand, Operand::Transposed(_));
    let w = if col.len() >= 16 * k || transposed { panel_width::<T>(k, n) } else { n };
    let mut out: Vec<T> = Vec::with_capacity(len);
    let cuts = a.row_blocks(rayon::current_num_threads() * 16);
    // Panel-major: rayon splits the task list in halves, so each thread starts on its own panel.
    let blocks: Vec<Block> = (0..n)
        .step_by(w)
        .flat_map(|c0| cuts.windows(2).map(move |r| Block { r0: r[0], r1: r[1], c0, c1: (c0 + w).min(n) }))
        .collect();
    let dst = SendPtr(out.as_mut_ptr());
    let stream = transposed_out && streams_output::<T>(len);
    if w < n || transposed {
        // Each panel's columns packed contiguously (and aligned): a panel read in place from
        // the full rows touches half of every row's lines, so it maps onto half the cache's
        // sets and thrashes (measured: slower than no panels at all).
        let packed = match operand {
            Operand::Rows(x) => pack_panels(x, k, n, w),
            Operand::Transposed(y) => pack_panels_of_transpose(y, k, n, w),
        };
        let px = packed.get();
        // One group buffer per rayon job, not per task: zeroing one per task cost as much as
        // the transposes at 4096 x 128.
        blocks.into_par_iter().for_each_init(Vec::new, |buf, b| {
            let xr = XRows { x: &px[b.c0 * k..(b.c0 * k + (b.c1 - b.c0) * k)], ld: b.c1 - b.c0, xc: 0 };
            if transposed_out {
                buf.resize(2 * group_rows::<T>(b.c1 - b.c0) * (b.c1 - b.c0), T::default());
                rows_transposed(a, val, xr, m, b, buf, &dst, stream);
            } else {
                spmm_rows_dispatch(a, val, xr, n, b, &dst)
            }
        });
    } else {
        // Not packed: X given by its rows (`given`).
        let aligned = aligned_copy(given, n, col.len(), 64);
        let x = aligned.as_ref().map_or(given, |a| a.get());
        blocks.into_par_iter().for_each_init(Vec::new, |buf, b| {
            let xr = XRows { x, ld: n, xc: 0 };
            if transposed_out {
                buf.resize(2 * group_rows::<T>(b.c1 - b.c0) * (b.c1 - b.c0), T::default());
                rows_transposed(a, val, xr, m, b, buf, &dst, stream);
            } else {
                spmm_rows_dispatch(a, val, xr, n, b, &dst)
            }
        });
    }
    // SAFETY: the blocks partition [0, m) x [0, n) (row cuts from 0 to m, panels from 0 to n)
    // and the kernels write every element of their own.
    unsafe { out.set_len(len) };
    out
}

/// `x [k, n]` as column panels of width `w` (the last may be narrower), each `[k, w']`
/// row-major, one after the other: panel `c0 / w` starts at `c0 * k`.
fn pack_panels<T: Real>(x: &[T], k: usize, n: usize, w: usize) -> Scratch<T> {
    // SAFETY: every panel row is copied: rows 0..k of each panel cover `k * n` elements.
    unsafe {
        Scratch::filled(k * n, |buf| {
            let dst = SendPtr(buf.as_mut_ptr() as *mut T);
            (0..n).step_by(w).collect::<Vec<_>>().into_par_iter().for_each(|c0| {
                let pw = w.min(n - c0);
                for r in 0..k {
                    // SAFETY: panel `c0` owns `[c0 * k, (c0 + pw) * k)`; row `r` of it is in it.
                    core::ptr::copy_nonoverlapping(x[r * n + c0..].as_ptr(), dst.at(c0 * k + r * pw), pw);
                }
            });
        })
    }
}

/// [`pack_panels`] of `X = Yᵀ` from `y [n, k]`: panel `c0` (`[k, w']`) is the transpose of rows
/// `c0..c0 + w'` of `y`, which lie one after the other.
fn pack_panels_of_transpose<T: Real>(y: &[T], k: usize, n: usize, w: usize) -> Scratch<T> {
    // SAFETY: `transpose_into` writes every element of each panel's `[c0 * k, (c0 + w') * k)`,
    // and the panels cover `k * n` elements.
    unsafe {
        Scratch::filled(k * n, |buf| {
            for (c0, panel) in (0..n).step_by(w).zip(buf.chunks_mut(w * k)) {
                let pw = w.min(n - c0);
                crate::dense::transpose_into(&y[c0 * k..(c0 + pw) * k], pw, k, panel);
            }
        })
    }
}

/// Columns per task panel of an `X [k, n]`: each core gathers its rows of `X` from its own L2
/// when a panel of them fits in half of it (1 MB here), else from the shared cache.
/// Measured: the 4096 x 128 product at 10 % runs 30 % faster in panels of 64 columns; where
/// even a 64-wide panel would not fit (100k rows), panels only re-read the pattern.
fn panel_width<T>(k: usize, n: usize) -> usize {
    const L2_SHARE: usize = 1 << 20;
    let elem = core::mem::size_of::<T>();
    if k * n * elem <= L2_SHARE {
        return n;
    }
    // Whole register tiles (64 wide) only: a narrower panel would leave the tiled kernel.
    let w = L2_SHARE / (k * elem) / 64 * 64;
    if w == 0 {
        n
    } else {
        w.min(n)
    }
}

/// `Aᵀ · G` on host slices (`A [m, k]`, one value per entry, `G [m, n]`): `out [k, n]`.
///
/// # Panics
/// If `val` does not hold one value per entry or `g` is not `[m, n]`.
pub fn spmm_t<T: Real, I: IndexElem, J: IndexElem>(a: CsrPattern<'_, I, J>, val: &[T], g: &[T], n: usize) -> Vec<T> {
    assert_eq!(val.len(), a.nnz(), "spmm_t: one value per stored entry");
    let (ccol, row, tval) = transpose_with(a, |j| val[j]);
    // SAFETY: the counting sort of a valid pattern `[m, k]` gives a valid pattern `[k, m]`.
    let at = unsafe { CsrPattern::new_unchecked(&ccol[..], &row[..], a.nrows()) };
    spmm(at, &tval, g, n)
}

/// `Aᵀ · G` with the CSC view of `A`'s pattern given. The values are gathered into column order
/// first: read through the permutation inside the kernel, each is a random access competing with
/// the rows of `G` for the line-fill buffers (measured: the 100k x 100k product takes 30 % longer).
///
/// # Panics
/// If `val` does not hold one value per entry or `g` is not `[m, n]`.
pub fn spmm_t_with<T: Real>(csc: &CscPattern, val: &[T], g: &[T], n: usize) -> Vec<T> {
    assert_eq!(val.len(), csc.nnz(), "spmm_t: one value per stored entry");
    let tval = Scratch::gathered(val, csc.perm());
    crate::on_transposed!(csc.as_csr(), |at| spmm(at, tval.get(), g, n))
}

/// `val` (one value per entry of the CSR pattern `csc` transposes) in the view's column order:
/// what [`spmm_t_gathered`] reads.
///
/// # Panics
/// If `val` does not hold one value per entry.
pub fn gather_column_values<T: Real>(csc: &CscPattern, val: &[T]) -> Vec<T> {
    assert_eq!(val.len(), csc.nnz(), "gather_column_values: one value per stored entry");
    let mut out = Vec::with_capacity(val.len());
    gather_into(val, csc.perm(), &mut out.spare_capacity_mut()[..val.len()]);
    // SAFETY: `gather_into` wrote every element of the first `nnz`.
    unsafe { out.set_len(val.len()) };
    out
}

/// `Aᵀ · G` with the CSC view of `A`'s pattern and the values already in its column order
/// ([`gather_column_values`]): for values that outlive one product (a constant matrix), whose
/// gather is then paid once.
///
/// # Panics
/// If `tval` does not hold one value per entry or `g` is not `[m, n]`.
pub fn spmm_t_gathered<T: Real>(csc: &CscPattern, tval: &[T], g: &[T], n: usize) -> Vec<T> {
    crate::on_transposed!(csc.as_csr(), |at| spmm(at, tval, g, n))
}

/// [`spmm_t_gathered`] stored transposed: `(Aᵀ · G)ᵀ = Gᵀ · A`, `out [n, k]` row-major (see
/// [`spmm_transposed_out`]).
///
/// # Panics
/// As [`spmm_t_gathered`].
pub fn spmm_t_gathered_transposed_out<T: Real>(csc: &CscPattern, tval: &[T], g: &[T], n: usize) -> Vec<T> {
    crate::on_transposed!(csc.as_csr(), |at| spmm_transposed_out(at, tval, g, n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sddmm::sddmm;

    fn dense_ref(m: usize, k: usize, crow: &[i64], col: &[i64], val: &[f64]) -> Vec<f64> {
        let mut a = vec![0.0; m * k];
        for r in 0..m {
            for j in crow[r] as usize..crow[r + 1] as usize {
                a[r * k + col[j] as usize] += val[j];
            }
        }
        a
    }

    fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for p in 0..k {
                for j in 0..n {
                    c[i * n + j] += a[i * k + p] * b[p * n + j];
                }
            }
        }
        c
    }

    /// The transposed output is the product's transpose, element for element: f32 (the
    /// AVX-512 tiles where present) and f64, full and partial row groups, widths that are and
    /// are not multiples of 16, column panels, and an output streamed to memory.
    #[test]
    fn transposed_output_is_the_transpose() {
        fn check<T: Real + PartialEq + core::fmt::Debug>(
            m: usize,
            k: usize,
            n: usize,
            per_row: usize,
            of: fn(usize) -> T,
        ) {
            let (mut crow, mut col) = (vec![0i64], vec![]);
            for r in 0..m {
                // Uneven rows: the row blocks start anywhere in a line.
                for t in 0..per_row + r % 3 {
                    col.push(((r * 31 + t * 17) % k) as i64);
                }
                crow.push(col.len() as i64);
            }
            let val: Vec<T> = (0..col.len()).map(|i| of(i % 11)).collect();
            let x: Vec<T> = (0..k * n).map(|i| of((i * 7) % 13)).collect();
            let p = CsrPattern::new(&crow, &col, k).unwrap();
            let plain = spmm(p, &val, &x, n);
            let t = spmm_transposed_out(p, &val, &x, n);
            let want: Vec<T> = (0..n * m).map(|i| plain[(i % m) * n + i / m]).collect();
            assert_eq!(t, want, "{m} x {k} x {n}");
            // X given by its transpose: the same product, bit for bit.
            let xt: Vec<T> = (0..n * k).map(|i| x[(i % k) * n + i / k]).collect();
            assert_eq!(spmm_of_transpose_transposed_out(p, &val, &xt, n), want, "Xᵀ given: {m} x {k} x {n}");
        }
        // The f32 outputs of the last three cases are streamed: rows of 5,003 elements start off
        // the lines (the runs have partial lines at both ends); rows of 8,192 and 20,000 share a
        // line phase (whole lines stored from the tiles, the groups before each block's first
        // boundary plainly). 4096 x 128 goes in panels of 64 columns, packed from Xᵀ when given.
        for (m, k, n, per_row) in [
            (40, 9, 70, 5),
            (16, 30, 64, 7),
            (5, 4, 3, 2),
            (40, 2100, 128, 900),
            (10_000, 50, 16, 2),
            (64, 4096, 128, 40),
            (5_003, 40, 70, 3),
            (8_192, 40, 64, 3),
            (20_000, 30, 24, 2),
        ] {
            check::<f32>(m, k, n, per_row, |v| v as f32 - 5.0);
            check::<f64>(m, k, n, per_row, |v| v as f64 * 0.5 - 2.0);
        }
    }

    #[test]
    fn kernels_match_dense_products() {
        // A 7 x 5 with an empty row, n = 70 (one full tile and a partial one).
        let (m, k, n) = (7, 5, 70);
        let crow = vec![0i64, 2, 2, 5, 6, 8, 9, 11];
        let col = vec![0i64, 4, 1, 2, 3, 0, 2, 4, 1, 0, 3];
        let val: Vec<f64> = (0..11).map(|i| i as f64 * 0.5 - 2.0).collect();
        let x: Vec<f64> = (0..k * n).map(|i| ((i * 37) % 11) as f64 - 5.0).collect();
        let a = dense_ref(m, k, &crow, &col, &val);
        let p = CsrPattern::new(&crow, &col, k).unwrap();
        assert_eq!(spmm(p, &val, &x, n), matmul(&a, &x, m, k, n));
        let g: Vec<f64> = (0..m * n).map(|i| ((i * 13) % 7) as f64 - 3.0).collect();
        let mut at = vec![0.0; k * m];
        for i in 0..m {
            for j in 0..k {
                at[j * m + i] = a[i * k + j];
            }
        }
        assert_eq!(spmm_t(p, &val, &g, n), matmul(&at, &g, k, m, n));
        assert_eq!(spmm_t_with(&p.transpose(), &val, &g, n), matmul(&at, &g, k, m, n));
        let csc = p.transpose();
        assert_eq!(spmm_t_gathered(&csc, &gather_column_values(&csc, &val), &g, n), matmul(&at, &g, k, m, n));
        // The view's rows in 64 bits, as a pattern of 2^31 rows or more stores them: the same.
        let wide = p.transpose().widened();
        assert!(matches!(wide.as_csr(), crate::pattern::TransposedCsr::Wide(_)));
        assert_eq!(spmm_t_with(&wide, &val, &g, n), matmul(&at, &g, k, m, n));
        let gt = spmm_t_gathered_transposed_out(&wide, &gather_column_values(&wide, &val), &g, n);
        assert_eq!(gt, spmm_t_gathered_transposed_out(&csc, &gather_column_values(&csc, &val), &g, n));
        let full = {
            let mut xt = vec![0.0; n * k];
            for i in 0..k {
                for j in 0..n {
                    xt[j * k + i] = x[i * n + j];
                }
            }
            matmul(&g, &xt, m, n, k)
        };
        let s = sddmm(p, &g, &x, n);
        for r in 0..m {
            for j in crow[r] as usize..crow[r + 1] as usize {
                assert_eq!(s[j], full[r * k + col[j] as usize]);
            }
        }
        // f32 at widths of the AVX-512 kernel (64: four registers, 128: eight, 192: four, three
        // times) and one beside it; integer data, so the sums are exact in any order.
        let f = |v: &[f64]| v.iter().map(|&a| a as f32).collect::<Vec<f32>>();
        for n in [64, 128, 192, 80] {
            let x: Vec<f64> = (0..k * n).map(|i| ((i * 37) % 11) as f64 - 5.0).collect();
            let want = f(&matmul(&a, &x, m, k, n));
            assert_eq!(spmm(p, &f(&val), &f(&x), n), want, "f32 n={n}");
        }
    }

    /// Column panels: an `X` over the L2 share with at least 64 reads per row is packed into
    /// panels (here 128 and a narrower 64) and the product split by them; integer data, so the
    /// panelled sums equal the plain ones exactly.
    #[test]
    fn panelled_product_matches_plain_sums() {
        let (m, k, n) = (300, 2048, 192);
        assert_eq!(panel_width::<f32>(k, n), 128);
        let mut crow = vec![0i64];
        let mut col = Vec::new();
        for r in 0..m {
            // 440 entries per row on average (64 reads per row of X need 131,072), one row empty.
            let len = if r == 17 { 0 } else { 400 + (r * 31) % 81 };
            col.extend((0..len).map(|j| ((r * 131 + j * 4099) % k) as i64));
            crow.push(col.len() as i64);
        }
        assert!(col.len() >= 64 * k);
        let val: Vec<f32> = (0..col.len()).map(|j| ((j * 7) % 5) as f32 - 2.0).collect();
        let x: Vec<f32> = (0..k * n).map(|i| ((i * 13) % 9) as f32 - 4.0).collect();
        let got = spmm(CsrPattern::new(&crow, &col, k).unwrap(), &val, &x, n);
        for r in [0, 17, 18, 150, m - 1] {
            for t in 0..n {
                let want: f32 =
                    (crow[r] as usize..crow[r + 1] as usize).map(|j| val[j] * x[col[j] as usize * n + t]).sum();
                assert_eq!(got[r * n + t], want, "row {r} column {t}");
            }
        }
    }
}
