//! Products with a semi-structured (2:4) matrix `A [rows, cols]` (kept values `[rows, cols / 2]`
//! and metadata words, see `semi_structured`), forward kernels only (the rules that
//! differentiate them live in `sparsegrad-autodiff`):
//!
//! - `semi_mm`: `A · B` — half the multiply-adds of the dense product: each output row sums
//!   `cols / 2` scaled rows of `B`, two per group of four;
//! - `semi_mm_t`: `Aᵀ · G`, through the CSR view of the pattern and the CSR transposed kernel;
//! - `semi_sddmm`: `out[r, j] = G[r] · B[col(r, j)]`, the gradient of the kept values, through
//!   the CSR SDDMM kernel.
//!
//! `semi_mm` is blocked for the caches: `B` is cut into panels of `NT` columns (packed
//! contiguous), rows of `A` into blocks; a task owns one (panel, row block) pair and walks the
//! columns of `A` in blocks of `KB`, so the `KB x NT` slab of `B` it reads stays in L1 while
//! every row of the block uses it, and each row's `NT` accumulators stay in registers across a
//! slab. Positions come straight from the metadata nibbles; nothing of size `rows x cols` is
//! built.
//!
//! Behind the extension trait [`SemiKernels`]: Flex runs the host kernels (f32 and f64; f16 and
//! bf16 widened to f32), other backends the CSR defaults of [`SpmmKernels`].

use crate::flex::*;
use crate::semi_structured::{kept_columns, WORD_COLUMNS};
use crate::spmm::{CsrPattern, Real, Scratch, SendPtr, SpmmKernels};
use burn::backend::flex::FlexTensor;
use burn::backend::{
    backend_extension,
    tensor::{FloatTensor, IntTensor},
    Backend, Flex, TensorMetadata,
};
use burn::backend::ops::FloatTensorOps;
use burn::tensor::{Shape, TensorData};
use rayon::prelude::*;

/// Products with a semi-structured matrix `A [rows, cols]` given as kept values
/// `[rows, cols / 2]` and `i16` metadata words `[rows, ceil(cols / 16)]`.
#[backend_extension(Flex)]
pub trait SemiKernels: SpmmKernels {
    /// `A · B` (`B [cols, n]`, result `[rows, n]`), or with `transposed` `B · Aᵀ`
    /// (`B [n, cols]`, result `[n, rows]`: a linear layer's product).
    fn semi_mm(values: FloatTensor<Self>, metadata: IntTensor<Self>, cols: usize, b: FloatTensor<Self>, transposed: bool) -> FloatTensor<Self> {
        let (crow, col) = default::csr_pattern::<Self>(metadata, cols, &b.device());
        let b = if transposed { Self::float_transpose(b) } else { b };
        // SAFETY: `csr_pattern` checked the pattern it built (over `cols` columns, the rows of
        // `b` once oriented as `[cols, n]`).
        let out = unsafe { Self::csr_spmm(crow, col, default::flat::<Self>(values), b) };
        if transposed { Self::float_transpose(out) } else { out }
    }

    /// `Aᵀ · G` (`G [rows, n]`, result `[cols, n]`), or with `transposed` `G · A`
    /// (`G [n, rows]`, result `[n, cols]`).
    fn semi_mm_t(values: FloatTensor<Self>, metadata: IntTensor<Self>, cols: usize, g: FloatTensor<Self>, transposed: bool) -> FloatTensor<Self> {
        let (crow, col) = default::csr_pattern::<Self>(metadata, cols, &g.device());
        let g = if transposed { Self::float_transpose(g) } else { g };
        // SAFETY: `csr_pattern` checked the pattern it built, over `cols` columns.
        let out = unsafe { Self::csr_spmm_t(crow, col, default::flat::<Self>(values), g, cols) };
        if transposed { Self::float_transpose(out) } else { out }
    }

    /// `out[r, j] = G[r] · B[col(r, j)]` for every kept entry: `G [rows, n]`, `B [cols, n]`,
    /// result `[rows, cols / 2]`.
    fn semi_sddmm(metadata: IntTensor<Self>, cols: usize, g: FloatTensor<Self>, b: FloatTensor<Self>) -> FloatTensor<Self> {
        let rows = metadata.shape()[0];
        let (crow, col) = default::csr_pattern::<Self>(metadata, cols, &g.device());
        // SAFETY: `csr_pattern` checked the pattern it built, over `cols` columns (the rows of `b`).
        Self::float_reshape(unsafe { Self::csr_sddmm(crow, col, g, b) }, Shape::new([rows, cols / 2]))
    }
}

/// The CSR view of the pattern, for backends without the host kernels.
mod default {
    use super::*;

    pub fn flat<B: Backend>(values: FloatTensor<B>) -> FloatTensor<B> {
        let n = values.shape().num_elements();
        B::float_reshape(values, Shape::new([n]))
    }

    pub fn csr_pattern<B: Backend>(metadata: IntTensor<B>, cols: usize, device: &B::Device) -> (IntTensor<B>, IntTensor<B>) {
        let rows = metadata.shape()[0];
        let data = burn::backend::read_sync(B::int_into_data(metadata)).expect("metadata readback");
        let meta: Vec<i16> = data.iter::<i64>().map(|v| v as i16).collect();
        let (crow, col) = csr_of(&meta, rows, cols);
        let nnz = col.len();
        // Checked (linear in the kept entries): the unsafe products below rely on it.
        if let Err(e) = CsrPattern::new(&crow, &col, cols) {
            panic!("semi-structured metadata does not describe a [{rows}, {cols}] matrix: {e}");
        }
        (B::int_from_data(TensorData::new(crow, [rows + 1]), device), B::int_from_data(TensorData::new(col, [nnz]), device))
    }
}

/// `(crow, col)` of the pattern: `cols / 2` entries in every row.
fn csr_of(meta: &[i16], rows: usize, cols: usize) -> (Vec<i64>, Vec<i64>) {
    let half = (cols / 2) as i64;
    ((0..=rows as i64).map(|r| r * half).collect(), kept_columns(meta, rows, cols))
}

// ------------------------------------------------------------------------------------------
// Host kernels.

/// Bytes of `B` per slab (`kb` rows of the panel): within L1 beside the accumulators' traffic.
const SLAB_BYTES: usize = 32 * 1024;

/// Rows of `A` per task: enough that a slab is reused many times before the next is loaded.
const RB: usize = 256;

/// `acc += v0 · bp[c0] + v1 · bp[c1]` over the `NT` columns of the packed panel.
///
/// # Safety
/// Rows `c0` and `c1` of the panel (`NT` elements each) lie inside `bp`.
#[inline(always)]
unsafe fn group_fma<T: Real, const FMA: bool, const NT: usize>(bp: *const T, c0: usize, c1: usize, v0: T, v1: T, acc: &mut [T; NT]) {
    // SAFETY: as the caller promises.
    let (x0, x1) = unsafe { (bp.add(c0 * NT), bp.add(c1 * NT)) };
    for t in 0..NT {
        let (a, b) = unsafe { (*x0.add(t), *x1.add(t)) };
        acc[t] = if FMA { T::mul_add(v1, b, T::mul_add(v0, a, acc[t])) } else { acc[t] + v0 * a + v1 * b };
    }
}

/// Adds a row's contribution over columns `[k0, k1)` (`k0` a multiple of 16, `k1` of 4) to
/// `acc`: `bp` is the packed panel `[cols, NT]`, `words` and `vals` the row's metadata and kept
/// values. Whole metadata words are unrolled into their four groups, so the nibble shifts are
/// constants: at narrow panels the decoding is what the multiply-adds wait for.
#[inline(always)]
fn row_slab<T: Real, const FMA: bool, const NT: usize>(words: &[i16], vals: &[T], bp: &[T], k0: usize, k1: usize, acc: &mut [T; NT]) {
    let groups = k1 / 4;
    assert!(k0.is_multiple_of(WORD_COLUMNS) && vals.len() >= 2 * groups && words.len() * 4 >= groups && bp.len() >= 4 * groups * NT);
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
fn block_rows<T: Real, const FMA: bool, const NT: usize>(meta: &[i16], vals: &[T], cols: usize, bp: &[T], r0: usize, r1: usize, acc: &mut [T]) {
    let (words, half) = (cols.div_ceil(WORD_COLUMNS), cols / 2);
    let kb = (SLAB_BYTES / (NT * core::mem::size_of::<T>())).max(16) / 16 * 16;
    let mut k0 = 0;
    while k0 < cols {
        let k1 = (k0 + kb).min(cols);
        for r in r0..r1 {
            let a: &mut [T; NT] = (&mut acc[(r - r0) * NT..][..NT]).try_into().expect("NT accumulators");
            let mut regs = *a;
            row_slab::<T, FMA, NT>(&meta[r * words..(r + 1) * words], &vals[r * half..(r + 1) * half], bp, k0, k1, &mut regs);
            *a = regs;
        }
        k0 = k1;
    }
}

fn block_rows_dispatch<T: Real, const NT: usize>(meta: &[i16], vals: &[T], cols: usize, bp: &[T], r0: usize, r1: usize, acc: &mut [T]) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
        unsafe fn avx512<T: Real, const NT: usize>(meta: &[i16], vals: &[T], cols: usize, bp: &[T], r0: usize, r1: usize, acc: &mut [T]) {
            block_rows::<T, true, NT>(meta, vals, cols, bp, r0, r1, acc)
        }
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2<T: Real, const NT: usize>(meta: &[i16], vals: &[T], cols: usize, bp: &[T], r0: usize, r1: usize, acc: &mut [T]) {
            block_rows::<T, true, NT>(meta, vals, cols, bp, r0, r1, acc)
        }
        if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512vl") {
            // SAFETY: the CPU supports the features the function was compiled for.
            return unsafe { avx512::<T, NT>(meta, vals, cols, bp, r0, r1, acc) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: as above.
            return unsafe { avx2::<T, NT>(meta, vals, cols, bp, r0, r1, acc) };
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

/// `A · B` on host slices: `A` kept values `[rows, cols / 2]` with metadata words
/// `[rows, ceil(cols / 16)]`, `B [cols, n]`; result `[rows, n]`. With `transposed`, `B` is
/// given as `[n, cols]` and the result is `[n, rows]`: `B · Aᵀ`, a linear layer's product,
/// without transposing either operand in memory.
pub fn semi_mm<T: Real>(meta: &[i16], vals: &[T], rows: usize, cols: usize, b: &[T], n: usize, transposed: bool) -> Vec<T> {
    // Sixteen vector registers of accumulators per row at most (half of AVX-512's), fewer
    // when `n` is small: the metadata decoding is paid once for that many multiply-adds.
    let wide = 1024 / core::mem::size_of::<T>();
    let nt = wide.min(n.next_power_of_two().max(8));
    let len = crate::spmm::out_len(rows, n, "semi_mm: the output");
    assert_eq!(vals.len(), crate::spmm::out_len(rows, cols / 2, "semi_mm: values"), "semi_mm: values are [rows, cols / 2]");
    assert_eq!(b.len(), crate::spmm::out_len(cols, n, "semi_mm: b"), "semi_mm: b is [cols, n] (or [n, cols] transposed)");
    let mut out: Vec<T> = Vec::with_capacity(len);
    if len == 0 {
        return out;
    }
    if cols == 0 {
        return vec![T::default(); len];
    }
    let panels: Vec<(usize, usize)> = (0..n).step_by(nt).map(|t0| (t0, nt.min(n - t0))).collect();
    let packed: Vec<Scratch<T>> = panels.iter().map(|&(t0, w)| pack_panel(b, transposed, cols, n, t0, w, nt)).collect();
    let tasks: Vec<(usize, usize)> = (0..panels.len()).flat_map(|p| (0..rows).step_by(RB).map(move |r0| (p, r0))).collect();
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

/// `Aᵀ · G` on host slices (`G [rows, n]`): result `[cols, n]`.
pub fn semi_mm_t<T: Real>(meta: &[i16], vals: &[T], rows: usize, cols: usize, g: &[T], n: usize) -> Vec<T> {
    let (crow, col) = csr_of(meta, rows, cols);
    crate::spmm::spmm_t(kept_pattern(&crow, &col, cols), vals, g, n)
}

/// The CSR pattern of the kept entries, checked: a metadata array of the wrong length or a row
/// length that is not a whole number of groups is a panic naming it, never an access outside
/// the operands.
fn kept_pattern<'a>(crow: &'a [i64], col: &'a [i64], cols: usize) -> CsrPattern<'a, i64, i64> {
    CsrPattern::new(crow, col, cols).unwrap_or_else(|e| panic!("semi-structured pattern over {cols} columns: {e}"))
}

/// `out[r, j] = G[r] · B[col(r, j)]` on host slices (`G [rows, n]`, `B [cols, n]`): result
/// `[rows, cols / 2]`.
pub fn semi_sddmm<T: Real>(meta: &[i16], rows: usize, cols: usize, g: &[T], b: &[T], n: usize) -> Vec<T> {
    let (crow, col) = csr_of(meta, rows, cols);
    crate::spmm::sddmm(kept_pattern(&crow, &col, cols), g, b, n)
}

// ------------------------------------------------------------------------------------------
// Flex.

/// The metadata words of a Flex Int tensor.
fn words_of(metadata: FlexTensor) -> Vec<i16> {
    let metadata = contiguous(metadata);
    int_slice(&metadata).to_i64().into_iter().map(|v| v as i16).collect()
}

impl SemiKernels for Flex {
    fn semi_mm(values: FlexTensor, metadata: FlexTensor, cols: usize, b: FlexTensor, transposed: bool) -> FlexTensor {
        let rows = values.shape()[0];
        let n = b.shape()[if transposed { 0 } else { 1 }];
        let meta = words_of(metadata);
        let shape = if transposed { vec![n, rows] } else { vec![rows, n] };
        with_real(
            [values, b],
            shape,
            |[v, b]| semi_mm(&meta, v, rows, cols, b, n, transposed),
            |[v, b]| semi_mm(&meta, v, rows, cols, b, n, transposed),
        )
    }

    fn semi_mm_t(values: FlexTensor, metadata: FlexTensor, cols: usize, g: FlexTensor, transposed: bool) -> FlexTensor {
        let rows = values.shape()[0];
        // `G · A = (Aᵀ · Gᵀ)ᵀ`: a gradient path, so the transposes are plain copies.
        let g = if transposed { Flex::float_transpose(g) } else { g };
        let n = g.shape()[1];
        let meta = words_of(metadata);
        let out = with_real(
            [values, g],
            vec![cols, n],
            |[v, g]| semi_mm_t(&meta, v, rows, cols, g, n),
            |[v, g]| semi_mm_t(&meta, v, rows, cols, g, n),
        );
        if transposed { Flex::float_transpose(out) } else { out }
    }

    fn semi_sddmm(metadata: FlexTensor, cols: usize, g: FlexTensor, b: FlexTensor) -> FlexTensor {
        let rows = metadata.shape()[0];
        let n = g.shape()[1];
        let meta = words_of(metadata);
        with_real(
            [g, b],
            vec![rows, cols / 2],
            |[g, b]| semi_sddmm(&meta, rows, cols, g, b, n),
            |[g, b]| semi_sddmm(&meta, rows, cols, g, b, n),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semi_structured::{compress_mask, SemiPattern};

    /// A random 2:4 matrix `[rows, cols]` (dense f64) with its compressed form.
    fn random_24(rows: usize, cols: usize, seed: u64) -> (Vec<f64>, Vec<i16>, Vec<f64>) {
        let mut s = seed;
        let mut next = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 33) as usize
        };
        let mut dense = vec![0.0; rows * cols];
        for r in 0..rows {
            for g in 0..cols / 4 {
                for _ in 0..2 {
                    dense[r * cols + 4 * g + next() % 4] = (next() % 19) as f64 - 9.0;
                }
            }
        }
        let nz: Vec<bool> = dense.iter().map(|&v| v != 0.0).collect();
        let (meta, kept) = compress_mask(&nz, rows, cols, SemiPattern::TwoFour).unwrap();
        let vals = kept.iter().enumerate().map(|(i, &c)| dense[(i / (cols / 2)) * cols + c as usize]).collect();
        (dense, meta, vals)
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

    fn transpose(a: &[f64], r: usize, c: usize) -> Vec<f64> {
        (0..c * r).map(|i| a[(i % r) * c + i / r]).collect()
    }

    #[test]
    fn semi_products_match_dense() {
        // Widths around the panel sizes, a row count past one row block, a partial word.
        for &(rows, cols, n) in &[(3, 8, 5), (300, 72, 70), (17, 36, 64), (5, 20, 130), (2, 4, 1)] {
            let (a, meta, vals) = random_24(rows, cols, (rows * 31 + n) as u64);
            let b: Vec<f64> = (0..cols * n).map(|i| ((i * 37) % 11) as f64 - 5.0).collect();
            let ab = matmul(&a, &b, rows, cols, n);
            assert_eq!(semi_mm(&meta, &vals, rows, cols, &b, n, false), ab, "A·B {rows}x{cols}x{n}");
            let bt = transpose(&b, cols, n);
            assert_eq!(semi_mm(&meta, &vals, rows, cols, &bt, n, true), transpose(&ab, rows, n), "B·Aᵀ {rows}x{cols}x{n}");
            let g: Vec<f64> = (0..rows * n).map(|i| ((i * 13) % 7) as f64 - 3.0).collect();
            let mut at = vec![0.0; cols * rows];
            for i in 0..rows {
                for j in 0..cols {
                    at[j * rows + i] = a[i * cols + j];
                }
            }
            assert_eq!(semi_mm_t(&meta, &vals, rows, cols, &g, n), matmul(&at, &g, cols, rows, n));
            let f32s = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
            let got = semi_mm(&meta, &f32s(&vals), rows, cols, &f32s(&b), n, false);
            assert_eq!(got, f32s(&matmul(&a, &b, rows, cols, n)), "f32 A·B {rows}x{cols}x{n}");
        }
    }
}
