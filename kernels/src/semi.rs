//! Semi-structured (2:4) matrices on the host: the metadata torch uses (one `i16` word per 16
//! columns, one nibble per group of four from the low bits up, the nibble's low 2 bits the first
//! kept position and its high 2 bits the second) and the products with a matrix `A [rows, cols]`
//! given by its kept values `[rows, cols / 2]` and metadata words:
//!
//! - `semi_mm`: `A · B` (or `B · Aᵀ`, a linear layer's product) — half the multiply-adds of the
//!   dense product. `B` is cut into panels of `NT` columns (packed contiguous), rows of `A` into
//!   blocks; a task owns one (panel, row block) pair and walks the columns of `A` in slabs, so
//!   the slab of `B` it reads stays in L1 while every row of the block uses it, and each row's
//!   `NT` accumulators stay in registers across a slab. Positions come straight from the
//!   nibbles: every nibble decodes to a column inside its own group, whatever its bits, so no
//!   metadata word can lead a read outside the panel.
//! - `semi_mm_t`: `Aᵀ · G` and `semi_sddmm` (the kept values' gradient), straight from the
//!   metadata (`semi_backward`); with a narrow operand, `semi_mm` hands over to `semi_narrow`.

use crate::alloc::out_len;
use crate::error::{Result, SparseError};
use crate::pattern::SendPtr;
use crate::real::Real;
use crate::scratch::Scratch;
use crate::simd::{isa, prefetch_range, Isa};
use rayon::prelude::*;

/// Which elements of a group of four a row may keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SemiPattern {
    /// Any two of every four consecutive elements (torch's rule for f16, bf16 and i8).
    TwoFour,
    /// One of every two consecutive elements (torch's rule for f32): a 2:4 group with one kept
    /// element in each half.
    OneTwo,
}

impl SemiPattern {
    /// `"2:4"` or `"1:2"`.
    pub fn name(self) -> &'static str {
        match self {
            SemiPattern::TwoFour => "2:4",
            SemiPattern::OneTwo => "1:2",
        }
    }
}

/// Columns per metadata word (four groups of four).
pub const WORD_COLUMNS: usize = 16;

/// The positions kept in one group of four (ascending), or the violation.
fn group_slots(nz: &[bool], pattern: SemiPattern, row: usize, column: usize) -> Result<[usize; 2]> {
    let violation = |column, nonzeros| SparseError::PatternViolation { pattern: pattern.name(), row, column, nonzeros };
    match pattern {
        SemiPattern::TwoFour => {
            let set: Vec<usize> = (0..4).filter(|&i| nz[i]).collect();
            match set.as_slice() {
                [] => Ok([0, 1]),
                // One non-zero: keep it and the lowest other slot, in order.
                &[p] => Ok(if p == 0 { [0, 1] } else { [0, p] }),
                &[a, b] => Ok([a, b]),
                _ => Err(violation(column, set.len())),
            }
        }
        SemiPattern::OneTwo => {
            if nz[0] && nz[1] {
                return Err(violation(column, 2));
            }
            if nz[2] && nz[3] {
                return Err(violation(column + 2, 2));
            }
            Ok([usize::from(nz[1]), 2 + usize::from(nz[3])])
        }
    }
}

/// Metadata words (`[rows, ceil(cols / 16)]`) and the kept columns (`[rows, cols / 2]`) of a
/// row-major non-zero mask.
pub fn compress_mask(nz: &[bool], rows: usize, cols: usize, pattern: SemiPattern) -> Result<(Vec<i16>, Vec<i64>)> {
    let words = cols.div_ceil(WORD_COLUMNS);
    let mut meta = vec![0i16; rows * words];
    let mut kept = Vec::with_capacity(rows * cols / 2);
    for r in 0..rows {
        for g in 0..cols / 4 {
            let c = 4 * g;
            let [a, b] = group_slots(&nz[r * cols + c..r * cols + c + 4], pattern, r, c)?;
            let nibble = (a | b << 2) as u16;
            let w = &mut meta[r * words + g / 4];
            *w = (*w as u16 | nibble << (4 * (g % 4))) as i16;
            kept.push((c + a) as i64);
            kept.push((c + b) as i64);
        }
    }
    Ok((meta, kept))
}

/// The slot (0..4) of the `j`-th kept value of a row, from its metadata words.
#[inline(always)]
pub fn slot(words: &[i16], j: usize) -> usize {
    let g = j / 2;
    let nibble = (words[g / 4] as u16 >> (4 * (g % 4))) & 0xF;
    (if j.is_multiple_of(2) { nibble & 3 } else { nibble >> 2 }) as usize
}

/// The kept columns `[rows, cols / 2]` (row-major) decoded from metadata words.
pub fn kept_columns(meta: &[i16], rows: usize, cols: usize) -> Vec<i64> {
    let words = cols.div_ceil(WORD_COLUMNS);
    let half = cols / 2;
    let mut out = Vec::with_capacity(rows * half);
    for r in 0..rows {
        let w = &meta[r * words..(r + 1) * words];
        out.extend((0..half).map(|j| (4 * (j / 2) + slot(w, j)) as i64));
    }
    out
}

/// Checks that metadata words describe valid groups of `pattern` (slots ascending, 1:2 slots in
/// their halves, unused nibbles zero).
pub fn validate_metadata(meta: &[i16], rows: usize, cols: usize, pattern: SemiPattern) -> Result<()> {
    let words = cols.div_ceil(WORD_COLUMNS);
    for r in 0..rows {
        let w = &meta[r * words..(r + 1) * words];
        for g in 0..cols / 4 {
            let (a, b) = (slot(w, 2 * g), slot(w, 2 * g + 1));
            let ok = match pattern {
                SemiPattern::TwoFour => a < b,
                SemiPattern::OneTwo => a < 2 && b >= 2,
            };
            if !ok {
                return Err(SparseError::InvalidArgument {
                    operation: "SemiStructuredTensor::from_parts",
                    message: format!(
                        "metadata row {r}, group {g} (columns {}..{}): slots {a} and {b} are not a {} group",
                        4 * g,
                        4 * g + 3,
                        pattern.name()
                    ),
                });
            }
        }
        for g in cols / 4..words * 4 {
            if (w[g / 4] as u16 >> (4 * (g % 4))) & 0xF != 0 {
                return Err(SparseError::InvalidArgument {
                    operation: "SemiStructuredTensor::from_parts",
                    message: format!("metadata row {r}: bits set past the last group (column {})", cols),
                });
            }
        }
    }
    Ok(())
}

/// The pattern of a 2:4 matrix `[rows, cols]` on the host: its metadata words `[rows,
/// ceil(cols / 16)]`, row-major. [`SemiLayout::new`] checks the lengths (and that `cols` is a
/// whole number of groups), so the kernels index the words without checks of their own.
#[derive(Debug, Clone, Copy)]
pub struct SemiLayout<'a> {
    meta: &'a [i16],
    rows: usize,
    cols: usize,
}

impl<'a> SemiLayout<'a> {
    /// The layout of `meta` for a `[rows, cols]` matrix; an error when `cols` is not a multiple
    /// of 4 or `meta` does not hold `rows * ceil(cols / 16)` words.
    pub fn new(meta: &'a [i16], rows: usize, cols: usize) -> Result<Self> {
        if !cols.is_multiple_of(4) {
            return Err(crate::error::invalid(
                "semi-structured matrix",
                format!("the row length {cols} must be a multiple of 4"),
            ));
        }
        let words = rows.checked_mul(cols.div_ceil(WORD_COLUMNS));
        if words != Some(meta.len()) {
            return Err(SparseError::ShapeMismatch {
                component: "metadata",
                expected: vec![rows, cols.div_ceil(WORD_COLUMNS)],
                actual: vec![meta.len()],
            });
        }
        Ok(Self { meta, rows, cols })
    }

    /// Rows of the matrix.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns of the matrix.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The metadata words.
    pub fn meta(&self) -> &'a [i16] {
        self.meta
    }
}

/// A 2:4 matrix on the host: its [`SemiLayout`] and kept values `[rows, cols / 2]`, row-major;
/// [`SemiRef::new`] checks the values' length.
#[derive(Debug, Clone, Copy)]
pub struct SemiRef<'a, T> {
    layout: SemiLayout<'a>,
    vals: &'a [T],
}

impl<'a, T> SemiRef<'a, T> {
    /// The matrix of `layout` holding `vals`; an error when they are not `[rows, cols / 2]`.
    pub fn new(layout: SemiLayout<'a>, vals: &'a [T]) -> Result<Self> {
        let expected = layout.rows.checked_mul(layout.cols / 2);
        if expected != Some(vals.len()) {
            return Err(SparseError::ShapeMismatch {
                component: "values",
                expected: vec![layout.rows, layout.cols / 2],
                actual: vec![vals.len()],
            });
        }
        Ok(Self { layout, vals })
    }

    /// The pattern.
    pub fn layout(&self) -> SemiLayout<'a> {
        self.layout
    }

    /// The kept values.
    pub fn vals(&self) -> &'a [T] {
        self.vals
    }
}

/// `(crow, col)` of the pattern: `cols / 2` entries in every row.
pub fn csr_of(meta: &[i16], rows: usize, cols: usize) -> (Vec<i64>, Vec<i64>) {
    let half = (cols / 2) as i64;
    ((0..=rows as i64).map(|r| r * half).collect(), kept_columns(meta, rows, cols))
}

/// Bytes of `B` per slab (`kb` rows of the panel): within L1 beside the accumulators' traffic.
const SLAB_BYTES: usize = 32 * 1024;

/// Rows of `A` per task: enough that a slab is reused many times before the next is loaded.
const RB: usize = 256;

/// The bytes of accumulators a row of [`semi_mm`]'s panel keeps in registers: half the vector
/// registers of the path (`isa`).
fn accumulator_bytes() -> usize {
    match isa() {
        Isa::Avx512 => 16 * 64,
        Isa::Avx2Fma | Isa::Portable => 8 * 32,
    }
}

/// Rows ahead whose slab run of values and metadata a task prefetches.
const AHEAD: usize = 3;

/// `acc += v0 · bp[c0] + v1 · bp[c1]` over the `NT` columns of the packed panel.
///
/// # Safety
/// Rows `c0` and `c1` of the panel (`NT` elements each) lie inside `bp`.
#[inline(always)]
unsafe fn group_fma<T: Real, const FMA: bool, const NT: usize>(
    bp: *const T,
    c0: usize,
    c1: usize,
    v0: T,
    v1: T,
    acc: &mut [T; NT],
) {
    // SAFETY: as the caller promises.
    let (x0, x1) = unsafe { (bp.add(c0 * NT), bp.add(c1 * NT)) };
    // Base + constant addresses for the loads below (see `opaque`).
    let (x0, x1) = (crate::simd::opaque(x0), crate::simd::opaque(x1));
    for (t, at) in acc.iter_mut().enumerate() {
        // SAFETY: t < NT, inside both panel rows (the caller's promise).
        let (a, b) = unsafe { (*x0.add(t), *x1.add(t)) };
        *at = if FMA { T::mul_add(v1, b, T::mul_add(v0, a, *at)) } else { *at + v0 * a + v1 * b };
    }
}

/// Adds a row's contribution over columns `[k0, k1)` (`k0` a multiple of 16, `k1` of 4) to
/// `acc`: `bp` is the packed panel `[cols, NT]`, `words` and `vals` the row's metadata and kept
/// values. Whole metadata words are unrolled into their four groups, so the nibble shifts are
/// constants: at narrow panels the decoding is what the multiply-adds wait for.
#[inline(always)]
fn row_slab<T: Real, const FMA: bool, const NT: usize>(
    words: &[i16],
    vals: &[T],
    bp: &[T],
    k0: usize,
    k1: usize,
    acc: &mut [T; NT],
) {
    let groups = k1 / 4;
    assert!(
        k0.is_multiple_of(WORD_COLUMNS)
            && vals.len() >= 2 * groups
            && words.len() * 4 >= groups
            && bp.len() >= 4 * groups * NT
    );
    let (p, v) = (bp.as_ptr(), vals.as_ptr());
    let full = groups / 4;
    // The unchecked reads below rest on the assertion above: every group g read is below
    // `groups`, so its word and both values exist, and a nibble's slots are below 4, so panel
    // rows 4g + slot are below 4 groups.
    for w in k0 / WORD_COLUMNS..full {
        // SAFETY: w < full = groups / 4 <= words.len() (asserted).
        let word = unsafe { *words.get_unchecked(w) } as u16 as usize;
        for q in 0..4 {
            let g = 4 * w + q;
            let nibble = word >> (4 * q);
            // SAFETY: g < groups, and vals holds 2 * groups values (asserted).
            let (v0, v1) = unsafe { (*v.add(2 * g), *v.add(2 * g + 1)) };
            // SAFETY: rows 4g + slot < 4 groups of the panel, which holds 4 * groups * NT (asserted).
            unsafe { group_fma::<T, FMA, NT>(p, 4 * g + (nibble & 3), 4 * g + ((nibble >> 2) & 3), v0, v1, acc) };
        }
    }
    for g in (4 * full).max(k0 / 4)..groups {
        // SAFETY: g < groups <= 4 * words.len() (asserted), so g / 4 < words.len().
        let nibble = (unsafe { *words.get_unchecked(g / 4) } as u16 as usize) >> (4 * (g % 4));
        // SAFETY: g < groups, and vals holds 2 * groups values (asserted).
        let (v0, v1) = unsafe { (*v.add(2 * g), *v.add(2 * g + 1)) };
        // SAFETY: rows 4g + slot < 4 groups of the panel (asserted size).
        unsafe { group_fma::<T, FMA, NT>(p, 4 * g + (nibble & 3), 4 * g + ((nibble >> 2) & 3), v0, v1, acc) };
    }
}

/// Rows `[r0, r1)` of `A · panel` into `acc` (`[(r1 - r0) * NT]`, zeroed by the caller), the
/// columns of `A` walked in slabs of `kb` (a multiple of 4).
#[inline(always)]
fn block_rows<T: Real, const FMA: bool, const NT: usize>(
    meta: &[i16],
    vals: &[T],
    cols: usize,
    bp: &[T],
    r0: usize,
    r1: usize,
    acc: &mut [T],
) {
    let (words, half) = (cols.div_ceil(WORD_COLUMNS), cols / 2);
    let kb = (SLAB_BYTES / (NT * core::mem::size_of::<T>())).max(16) / 16 * 16;
    let mut k0 = 0;
    while k0 < cols {
        let k1 = (k0 + kb).min(cols);
        for r in r0..r1 {
            // The slab's run of each row is short (256 bytes of values at NT = 64) and the next
            // starts a row further: too short for the hardware prefetcher, which left the value
            // loads waiting on memory (measured: M = 64, K = 4096 ran at a third of M = 256's
            // rate). Fetch the run of a row `AHEAD` further while this one is summed (a row's run
            // is summed in less than a memory latency).
            if r + AHEAD < r1 {
                let ahead = r + AHEAD;
                prefetch_range(vals, ahead * half + k0 / 2, (k1 - k0) / 2);
                prefetch_range(meta, ahead * words + k0 / WORD_COLUMNS, (k1 - k0).div_ceil(WORD_COLUMNS));
            }
            let a: &mut [T; NT] = (&mut acc[(r - r0) * NT..][..NT]).try_into().expect("NT accumulators");
            let mut regs = *a;
            row_slab::<T, FMA, NT>(
                &meta[r * words..(r + 1) * words],
                &vals[r * half..(r + 1) * half],
                bp,
                k0,
                k1,
                &mut regs,
            );
            *a = regs;
        }
        k0 = k1;
    }
}

fn block_rows_dispatch<T: Real, const NT: usize>(
    meta: &[i16],
    vals: &[T],
    cols: usize,
    bp: &[T],
    r0: usize,
    r1: usize,
    acc: &mut [T],
) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
        unsafe fn avx512<T: Real, const NT: usize>(
            meta: &[i16],
            vals: &[T],
            cols: usize,
            bp: &[T],
            r0: usize,
            r1: usize,
            acc: &mut [T],
        ) {
            block_rows::<T, true, NT>(meta, vals, cols, bp, r0, r1, acc)
        }
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2<T: Real, const NT: usize>(
            meta: &[i16],
            vals: &[T],
            cols: usize,
            bp: &[T],
            r0: usize,
            r1: usize,
            acc: &mut [T],
        ) {
            block_rows::<T, true, NT>(meta, vals, cols, bp, r0, r1, acc)
        }
        match isa() {
            // SAFETY: `isa` detected the features the function was compiled for.
            Isa::Avx512 => return unsafe { avx512::<T, NT>(meta, vals, cols, bp, r0, r1, acc) },
            // SAFETY: as above.
            Isa::Avx2Fma => return unsafe { avx2::<T, NT>(meta, vals, cols, bp, r0, r1, acc) },
            Isa::Portable => {}
        }
    }
    block_rows::<T, false, NT>(meta, vals, cols, bp, r0, r1, acc)
}

/// Columns `[t0, t0 + w)` of `B [k, n]` as a contiguous, aligned `[k, nt]` panel (zero past
/// `w`); with `b_t`, `B` is given as its transpose `[n, k]` (rows `t0..t0 + w` are read).
/// In a pooled buffer, as the other scratch arrays of the kernels (a fresh multi-megabyte
/// allocation faults in every page).
fn pack_panel<T: Real>(b: &[T], b_t: bool, k: usize, n: usize, t0: usize, w: usize, nt: usize) -> Scratch<T> {
    const BLOCK: usize = 256;
    let mut p = Scratch::splat(k * nt, T::default());
    p.get_mut().par_chunks_mut(nt * BLOCK).enumerate().for_each(|(blk, dst)| {
        let c0 = blk * BLOCK;
        let rows = dst.len() / nt;
        if b_t {
            for t in 0..w {
                let src = &b[(t0 + t) * k + c0..][..rows];
                for (i, &v) in src.iter().enumerate() {
                    dst[i * nt + t] = v;
                }
            }
        } else {
            for (i, row) in dst.chunks_mut(nt).enumerate() {
                let c = c0 + i;
                row[..w].copy_from_slice(&b[c * n + t0..c * n + t0 + w]);
            }
        }
    });
    p
}

/// `A · B` on host slices: `A [rows, cols]` a 2:4 matrix, `B [cols, n]`; result `[rows, n]`. With `transposed`, `B` is
/// given as `[n, cols]` and the result is `[n, rows]`: `B · Aᵀ`, a linear layer's product,
/// without transposing either operand in memory.
pub fn semi_mm<T: Real>(a: SemiRef<'_, T>, b: &[T], n: usize, transposed: bool) -> Vec<T> {
    // A few rows of B (decode-size batches): bound by the bytes of A, read once. Not on the
    // portable path from two rows up, where the narrow kernel is a scalar walk and the panel
    // kernel's accumulators vectorise (4096 x 11008, portable on x86: 7.3 ms against 30.6 at
    // eight rows, 6.8 against 8.9 at two; one row, 6.2 narrow against 6.9).
    if n <= crate::semi_narrow::NARROW && (n == 1 || isa() != Isa::Portable) {
        return crate::semi_narrow::semi_mm_narrow(a, b, n, transposed);
    }
    let (meta, vals, rows, cols) = (a.layout.meta, a.vals, a.layout.rows, a.layout.cols);
    // Half the vector registers as accumulators per row at most (16 of AVX-512's 32, 8 of
    // AVX2's or NEON's 16), fewer when `n` is small: the metadata decoding is paid once for
    // that many multiply-adds. More spill: 256 f32 accumulators were 32 registers on AVX2,
    // and every multiply-add went through memory (3x slower than burn's dense product).
    let wide = accumulator_bytes() / core::mem::size_of::<T>();
    let nt = wide.min(n.next_power_of_two().max(8));
    let len = out_len(rows, n, "semi_mm: the output");
    assert_eq!(b.len(), out_len(cols, n, "semi_mm: b"), "semi_mm: b is [cols, n] (or [n, cols] transposed)");
    let mut out: Vec<T> = Vec::with_capacity(len);
    if len == 0 {
        return out;
    }
    if cols == 0 {
        return vec![T::default(); len];
    }
    let panels: Vec<(usize, usize)> = (0..n).step_by(nt).map(|t0| (t0, nt.min(n - t0))).collect();
    let packed: Vec<Scratch<T>> = panels.iter().map(|&(t0, w)| pack_panel(b, transposed, cols, n, t0, w, nt)).collect();
    let tasks: Vec<(usize, usize)> =
        (0..panels.len()).flat_map(|p| (0..rows).step_by(RB).map(move |r0| (p, r0))).collect();
    let dst = SendPtr(out.as_mut_ptr());
    tasks.into_par_iter().for_each(|(p, r0)| {
        let r1 = (r0 + RB).min(rows);
        let (t0, w) = panels[p];
        let bp = packed[p].get();
        let mut acc = Scratch::splat((r1 - r0) * nt, T::default());
        let acc = acc.get_mut();
        match nt {
            256 => block_rows_dispatch::<T, 256>(meta, vals, cols, bp, r0, r1, acc),
            128 => block_rows_dispatch::<T, 128>(meta, vals, cols, bp, r0, r1, acc),
            64 => block_rows_dispatch::<T, 64>(meta, vals, cols, bp, r0, r1, acc),
            32 => block_rows_dispatch::<T, 32>(meta, vals, cols, bp, r0, r1, acc),
            16 => block_rows_dispatch::<T, 16>(meta, vals, cols, bp, r0, r1, acc),
            _ => block_rows_dispatch::<T, 8>(meta, vals, cols, bp, r0, r1, acc),
        }
        // The writes: tasks own disjoint (row block, panel) rectangles of the `rows * n` output.
        if transposed {
            for t in 0..w {
                for r in r0..r1 {
                    // SAFETY: t0 + t < n and r < rows: inside the output, in this task's rectangle.
                    unsafe { dst.at((t0 + t) * rows + r).write(acc[(r - r0) * nt + t]) };
                }
            }
        } else {
            for r in r0..r1 {
                for (t, &v) in acc[(r - r0) * nt..][..w].iter().enumerate() {
                    // SAFETY: r < rows and t0 + t < n: inside the output, in this task's rectangle.
                    unsafe { dst.at(r * n + t0 + t).write(v) };
                }
            }
        }
    });
    // SAFETY: the tasks cover every (row, column) of the output once (row blocks from 0 to
    // rows, panels from 0 to n), inside its `rows * n` elements.
    unsafe { out.set_len(len) };
    out
}

/// `Aᵀ · G` on host slices (`G [rows, n]`): result `[cols, n]` (see `semi_backward`).
pub fn semi_mm_t<T: Real>(a: SemiRef<'_, T>, g: &[T], n: usize) -> Vec<T> {
    crate::semi_backward::semi_mm_t(a, g, n)
}

/// `out[r, j] = G[r] · B[col(r, j)]` on host slices (`G [rows, n]`, `B [cols, n]`): result
/// `[rows, cols / 2]` (see `semi_backward`).
pub fn semi_sddmm<T: Real>(p: SemiLayout<'_>, g: &[T], b: &[T], n: usize) -> Vec<T> {
    crate::semi_backward::semi_sddmm(p, g, b, n)
}

#[cfg(test)]
mod tests;
