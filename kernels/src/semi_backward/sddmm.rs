//! The kept values' gradient from the 2:4 metadata: one dot product per kept value, the row of
//! `G` read once for all of them (the macerator body and the f32 AVX-512 kernel).

use super::*;

/// The dot products of the kept values of rows `r0..` (filling `out`, which starts at row
/// `r0`'s first value) with their rows of `B`, one kernel body for every instruction set: two
/// groups (four kept values) at a time, each vector of the row of `G` loaded once for the four
/// (`sddmm::dots4`), over blocks of columns whose rows of `B` stay in L1 while the task's rows
/// pass (as [`sddmm_rows_f32_avx512`]).
#[with_simd(on(arch = crate::simd::arch()))]
fn sddmm_rows<'a, S: Simd, T: Real>(
    layout: SemiLayout<'a>,
    g: &'a [T],
    b: &'a [T],
    n: usize,
    r0: usize,
    out: &'a mut [T],
) {
    let (cols, meta) = (layout.cols(), layout.meta());
    let (words, half) = (cols.div_ceil(WORD_COLUMNS), cols / 2);
    let block = (32 * 1024 / (core::mem::size_of::<T>() * n.max(1))).max(4) / 4;
    let groups = half / 2;
    let row = |c: usize| &b[c * n..][..n];
    for gb in (0..groups).step_by(block) {
        let ge = (gb + block).min(groups);
        for (i, o) in out.chunks_mut(half).enumerate() {
            let r = r0 + i;
            let (wr, gr) = (&meta[r * words..(r + 1) * words], &g[r * n..(r + 1) * n]);
            let mut grp = gb;
            while grp + 2 <= ge {
                let ((c0, c1), (c2, c3)) = (group_columns(wr, grp), group_columns(wr, grp + 1));
                let sums = crate::sddmm::dots4::<S, T>(gr, [row(c0), row(c1), row(c2), row(c3)]);
                o[2 * grp..2 * grp + 4].copy_from_slice(&sums);
                grp += 2;
            }
            if grp < ge {
                let (c0, c1) = group_columns(wr, grp);
                let sums = crate::sddmm::dots4::<S, T>(gr, [row(c0), row(c1), row(c0), row(c1)]);
                o[2 * grp..2 * grp + 2].copy_from_slice(&sums[..2]);
            }
        }
    }
}

/// `sddmm_rows` for f32 with AVX-512 and `n = 16 V`: the row of `G` stays in `V` registers for
/// all its kept values, which go four at a time (two groups) with one transposed reduction of
/// their dot products (the reduction through an array cost more than the multiply-adds).
///
/// # Safety
/// The CPU supports AVX-512F; `n = 16 V`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn sddmm_rows_f32_avx512<const V: usize>(
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
                // Through `opaque`: the loads address it as base + constant (an indexed address
                // splits each memory-operand multiply-add in two on Intel's cores).
                let bp = crate::simd::opaque(b[c * n..][..n].as_ptr());
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
        // SAFETY: `simd::arch` is an architecture this CPU supports.
        unsafe { sddmm_rows(p, g, b, n, blk * ROWS, o) }
    });
    out
}
