//! The product stored transposed (`X · A` through `Aᵀ`): rows of the product turned into columns
//! by 16 x 16 register transposes, streamed past a core's L2 (one write stream per output row
//! defeats the prefetcher).

use super::*;

/// The f32 tile [`rows_transposed`] moves at once (AVX-512 registers).
pub(super) const TILE: usize = 16;

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
pub(super) fn rows_transposed<T: Real, I: IndexElem, J: IndexElem>(
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
pub(super) fn streams_output<T>(len: usize) -> bool {
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
pub(super) unsafe fn stream_run_f32(src: *const f32, dst: *mut f32, len: usize) {
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
