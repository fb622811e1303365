//! 2:4 products of i8 matrices with i32 sums (torch's int8 semi-structured product returns
//! int32): `A · B` for a 2:4 `A [rows, cols]` of i8 kept values and an i8 `B`.
//!
//! Each row of `A` is walked a group at a time; its two kept values scale two rows of `B` into
//! the row's `n` sums, a loop over `n` that vectorises. Products of i8 are at most 2^14 in
//! magnitude, so a row's `cols / 2` of them fit i32 while `cols <= 2^18 - 4`
//! ([`I32_SAFE_COLS`]); the callers refuse wider rows rather than let a sum wrap.

use crate::alloc::out_len;
use crate::semi::{SemiRef, WORD_COLUMNS};
use rayon::prelude::*;

/// The widest row whose i32 sums cannot overflow: `(cols / 2) * 2^14 <= i32::MAX`.
pub const I32_SAFE_COLS: usize = 2 * (i32::MAX as usize / (128 * 128));

/// One row of `A · B` into `out [n]`: `B [cols, n]`.
#[inline(always)]
fn row(words: &[i16], vals: &[i8], b: &[i8], n: usize, cols: usize, out: &mut [i32]) {
    out.fill(0);
    for g in 0..cols / 4 {
        let nibble = (words[g / 4] as u16 as usize) >> (4 * (g % 4));
        let (c0, c1) = (4 * g + (nibble & 3), 4 * g + ((nibble >> 2) & 3));
        let (v0, v1) = (vals[2 * g] as i32, vals[2 * g + 1] as i32);
        let (b0, b1) = (&b[c0 * n..(c0 + 1) * n], &b[c1 * n..(c1 + 1) * n]);
        for ((o, &x0), &x1) in out.iter_mut().zip(b0).zip(b1) {
            *o += v0 * x0 as i32 + v1 * x1 as i32;
        }
    }
}

/// Rows `r0..` of `A · B` filling `out` (`[.., n]` from row `r0`).
#[inline(always)]
fn rows(a: SemiRef<'_, i8>, b: &[i8], n: usize, r0: usize, out: &mut [i32]) {
    let cols = a.layout().cols();
    let (words, half) = (cols.div_ceil(WORD_COLUMNS), cols / 2);
    let (meta, vals) = (a.layout().meta(), a.vals());
    for (i, o) in out.chunks_mut(n).enumerate() {
        let r = r0 + i;
        row(&meta[r * words..(r + 1) * words], &vals[r * half..(r + 1) * half], b, n, cols, o);
    }
}

/// `rows` compiled for the best vector extension available (the widening multiply-adds
/// vectorise over `n`).
fn rows_dispatch(a: SemiRef<'_, i8>, b: &[i8], n: usize, r0: usize, out: &mut [i32]) {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::simd::{isa, Isa};
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
        unsafe fn avx512(a: SemiRef<'_, i8>, b: &[i8], n: usize, r0: usize, out: &mut [i32]) {
            rows(a, b, n, r0, out)
        }
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2(a: SemiRef<'_, i8>, b: &[i8], n: usize, r0: usize, out: &mut [i32]) {
            rows(a, b, n, r0, out)
        }
        match isa() {
            // AVX-512BW is checked here: `isa` promises F and VL only.
            Isa::Avx512 if std::arch::is_x86_feature_detected!("avx512bw") => {
                // SAFETY: the features were detected.
                return unsafe { avx512(a, b, n, r0, out) };
            }
            Isa::Avx512 | Isa::Avx2Fma => {
                // SAFETY: `isa` detected AVX2 and FMA (AVX-512 machines have both).
                return unsafe { avx2(a, b, n, r0, out) };
            }
            Isa::Portable => {}
        }
    }
    rows(a, b, n, r0, out)
}

/// `A · B` (`B [cols, n]`, result `[rows, n]`) or with `transposed` `B · Aᵀ` (`B [n, cols]`,
/// result `[n, rows]`: a linear layer's product), i8 operands summed in i32.
///
/// # Panics
/// If `b` is not `n x cols`, or `cols > I32_SAFE_COLS` (the callers check it first).
pub fn semi_mm_i8(a: SemiRef<'_, i8>, b: &[i8], n: usize, transposed: bool) -> Vec<i32> {
    let (r, cols) = (a.layout().rows(), a.layout().cols());
    assert!(cols <= I32_SAFE_COLS, "semi_mm_i8: rows of {cols} columns could overflow i32 sums");
    assert_eq!(b.len(), out_len(cols, n, "semi_mm_i8: b"), "semi_mm_i8: b is [cols, n] (or [n, cols] transposed)");
    let len = out_len(r, n, "semi_mm_i8: the output");
    let mut out = vec![0i32; len];
    if len == 0 {
        return out;
    }
    // The walk reads rows of B [cols, n]: the transposed operand is turned once (n x cols
    // bytes).
    let bt: Vec<i8>;
    let b = if transposed {
        bt = crate::dense::transpose_blocked(b, n, cols);
        &bt
    } else {
        b
    };
    const ROWS: usize = 16;
    out.par_chunks_mut(ROWS * n).enumerate().for_each(|(blk, o)| rows_dispatch(a, b, n, blk * ROWS, o));
    if transposed {
        crate::dense::transpose_blocked(&out, r, n)
    } else {
        out
    }
}

#[cfg(test)]
mod tests;
