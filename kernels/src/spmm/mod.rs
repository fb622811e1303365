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

mod panels;
mod rows;
#[cfg(test)]
mod tests;
mod transpose;
mod transposed_out;

use panels::*;
use rows::*;
pub use transpose::{gather_column_values, spmm_t, spmm_t_gathered, spmm_t_gathered_transposed_out, spmm_t_with};
use transposed_out::*;

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
