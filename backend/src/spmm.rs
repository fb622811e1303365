//! Sparse x dense products on CSR patterns, the fused kernels of the matmul family (forward
//! only; the rules that differentiate them live in `sparsegrad-autodiff`):
//!
//! - `csr_spmm`: `A · X` for `A` in CSR — each output row is a sum of scaled rows of `X`;
//! - `csr_spmm_t`: `Aᵀ · G` without building `Aᵀ`: the CSC view of the pattern (a counting sort,
//!   index algebra, see `pattern`) turns it into the same row-gather kernel, so threads never
//!   write the same row;
//! - `csr_sddmm`: `out[j] = a[row j] · b[col j]`, the values of `a · bᵀ` sampled on the pattern.
//!
//! Behind the extension trait [`SpmmKernels`]: Flex runs the host kernels below (f32 and f64;
//! f16 and bf16 are widened to f32 and the result narrowed back, so they accumulate in f32),
//! any other backend gets defaults composed of burn's gather and scatter ops (memory
//! `nnz x n`, never `m x k`). The trait's methods are `unsafe`: they take the pattern as raw
//! index tensors, and the host kernels walk it through unchecked offsets, so the caller vouches
//! that it is valid (the safe functions of `sparsegrad-autodiff` hand over only the patterns of
//! checked `SparseTensor`s). The host kernels themselves are safe functions over a
//! [`CsrPattern`], whose existence proves the pattern valid.
//!
//! Kernels are parallel over row blocks balanced by stored entries (and, where the dense operand
//! outgrows a core's L2, over packed column panels of it), vectorised over the dense dimension in
//! register tiles, and compiled for AVX-512, AVX2+FMA or plain x86-64 with a runtime choice.
//! Dense operands that are gathered many times per row are read from cache-aligned copies in
//! pooled buffers (`Scratch`).

use crate::algebra::IndexElem;
use crate::flex::*;
use crate::match_ints;
pub use crate::pattern::{CscPattern, CsrPattern};
pub(crate) use crate::pattern::{balanced_row_blocks, SendPtr};
use crate::pattern::transpose_with;
use burn::backend::flex::FlexTensor;
use burn::backend::{
    backend_extension,
    tensor::{FloatTensor, IntTensor},
    Backend, Flex, TensorMetadata,
};
use burn::tensor::{IndexingUpdateOp, Shape, TensorData};
use core::mem::MaybeUninit;
use rayon::prelude::*;

/// The CSR product kernels.
///
/// # Safety
/// Every method takes a CSR pattern `A [m, k]` as `crow [m + 1]` and `col [nnz]`, which must be
/// valid as [`CsrPattern::new`] checks it: `crow` starts at 0, never decreases and ends at
/// `nnz`, and every column lies in `0..k`. `k` is the method's `k` argument, or the rows of the
/// dense operand indexed by column (`x` of `csr_spmm`, `b` of `csr_sddmm`). The dense operands
/// must have the shapes the methods state.
#[backend_extension(Flex)]
pub trait SpmmKernels: Backend {
    /// `A · X`: `A` `[m, k]` in CSR (`crow [m + 1]`, `col [nnz]`, `values [nnz]`), `X [k, n]`.
    ///
    /// # Safety
    /// See the trait: a valid pattern over `k = x.shape()[0]` columns.
    unsafe fn csr_spmm(crow: IntTensor<Self>, col: IntTensor<Self>, values: FloatTensor<Self>, x: FloatTensor<Self>) -> FloatTensor<Self> {
        default::spmm::<Self>(crow, col, values, x, false, 0)
    }

    /// `Aᵀ · G`: `A` `[m, k]` in CSR, `G [m, n]`, result `[k, n]`.
    ///
    /// # Safety
    /// See the trait: a valid pattern over `k` columns.
    unsafe fn csr_spmm_t(crow: IntTensor<Self>, col: IntTensor<Self>, values: FloatTensor<Self>, g: FloatTensor<Self>, k: usize) -> FloatTensor<Self> {
        default::spmm::<Self>(crow, col, values, g, true, k)
    }

    /// Both gradients of `A · X` (`transpose = false`: `dX = Aᵀ · G`, `dvalues = SDDMM(G, X)`)
    /// or of `Aᵀ · X` (`dX = A · G`, `dvalues = SDDMM(X, G)`), in one flat tensor: `dX`'s
    /// elements, then the values' gradient. `k` is the pattern's column count.
    ///
    /// # Safety
    /// See the trait: a valid pattern over `k` columns.
    #[allow(clippy::too_many_arguments)]
    unsafe fn csr_spmm_backward(crow: IntTensor<Self>, col: IntTensor<Self>, values: FloatTensor<Self>, g: FloatTensor<Self>, x: FloatTensor<Self>, transpose: bool, k: usize) -> FloatTensor<Self> {
        // SAFETY: the pattern is the caller's, valid over `k` columns (this method's contract);
        // `x [k, n]` for the forward product's `dX`, `g [k, n]` for the transposed one's.
        let (dx, dv) = unsafe {
            if transpose {
                (Self::csr_spmm(crow.clone(), col.clone(), values, g.clone()), Self::csr_sddmm(crow, col, x, g))
            } else {
                (Self::csr_spmm_t(crow.clone(), col.clone(), values, g.clone(), k), Self::csr_sddmm(crow, col, g, x))
            }
        };
        let len = dx.shape().num_elements();
        Self::float_cat(vec![Self::float_reshape(dx, Shape::new([len])), dv], 0)
    }

    /// `out[j] = a[row j] · b[col j]` for every stored entry: `a [m, d]`, `b [k, d]`.
    ///
    /// # Safety
    /// See the trait: a valid pattern over `k = b.shape()[0]` columns.
    unsafe fn csr_sddmm(crow: IntTensor<Self>, col: IntTensor<Self>, a: FloatTensor<Self>, b: FloatTensor<Self>) -> FloatTensor<Self> {
        default::sddmm::<Self>(crow, col, a, b)
    }
}

/// Defaults for backends without host kernels: burn gathers and scatter-adds over `[nnz, n]`.
mod default {
    use super::*;
    use crate::algebra::compress::expand;

    pub fn spmm<B: Backend>(crow: IntTensor<B>, col: IntTensor<B>, values: FloatTensor<B>, x: FloatTensor<B>, transpose: bool, k: usize) -> FloatTensor<B> {
        let device = x.device();
        let m = crow.shape()[0] - 1;
        let nnz = col.shape()[0];
        let n = x.shape()[1];
        let rows = rows_of_any::<B>(crow, nnz, &device);
        let (src, dst, out_rows) = if transpose { (rows, col, k) } else { (col, rows, m) };
        let out = B::float_zeros(Shape::new([out_rows, n]), &device, x.dtype().into());
        if nnz == 0 || n == 0 {
            return out;
        }
        let gathered = B::float_select(x, 0, src);
        let scaled = B::float_mul(gathered, B::float_reshape(values, Shape::new([nnz, 1])));
        B::float_select_assign(out, 0, dst, scaled, IndexingUpdateOp::Add)
    }

    pub fn sddmm<B: Backend>(crow: IntTensor<B>, col: IntTensor<B>, a: FloatTensor<B>, b: FloatTensor<B>) -> FloatTensor<B> {
        let device = a.device();
        let nnz = col.shape()[0];
        if nnz == 0 {
            return B::float_zeros(Shape::new([0]), &device, a.dtype().into());
        }
        let rows = rows_of_any::<B>(crow, nnz, &device);
        let prod = B::float_mul(B::float_select(a, 0, rows), B::float_select(b, 0, col));
        B::float_reshape(B::float_sum_dim(prod, 1), Shape::new([nnz]))
    }

    /// Row ids through a readback (any backend; index algebra is host work).
    fn rows_of_any<B: Backend>(crow: IntTensor<B>, nnz: usize, device: &B::Device) -> IntTensor<B> {
        let m = crow.shape()[0] - 1;
        let data = burn::backend::read_sync(B::int_into_data(crow)).expect("crow readback");
        let crow: Vec<i64> = data.iter::<i64>().collect();
        let rows = expand(&crow, 1, m, nnz);
        B::int_from_data(TensorData::new(rows, [nnz]), device)
    }
}

// ------------------------------------------------------------------------------------------
// Host kernels.

/// A value type the kernels compute in.
pub trait Real: Copy + Default + Send + Sync + core::ops::Add<Output = Self> + core::ops::Mul<Output = Self> + 'static {
    /// `a * b + c`, fused where the caller compiled for FMA.
    fn mul_add(a: Self, b: Self, c: Self) -> Self;
}
impl Real for f32 {
    #[inline(always)]
    fn mul_add(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
}
impl Real for f64 {
    #[inline(always)]
    fn mul_add(a: f64, b: f64, c: f64) -> f64 {
        a.mul_add(b, c)
    }
}

/// `acc[t] += v * x[t]`, fused multiply-add only where FMA is compiled in (else `mul_add` is a
/// library call).
#[inline(always)]
fn axpy<T: Real, const FMA: bool>(acc: &mut [T], v: T, x: &[T]) {
    for (a, &xi) in acc.iter_mut().zip(x) {
        *a = if FMA { T::mul_add(v, xi, *a) } else { *a + v * xi };
    }
}

/// Entries ahead at which the row gather prefetches: the rows of `X` an output row reads are
/// scattered, and the gather is latency-bound even when `X` fits in the last-level cache
/// (measured: 4096 x 128 gains 20 %, 100k x 64 gains 2x).
pub(crate) const PREFETCH: usize = 16;

/// Prefetches the tile of the `X` row that entry `j` will read (no-op past the end).
#[inline(always)]
pub(crate) fn prefetch_row<T, J: IndexElem>(x: &[T], col: &[J], j: usize, n: usize, t0: usize, width: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(c) = col.get(j) {
        let start = c.to_i64() as usize * n + t0;
        let bytes = width * core::mem::size_of::<T>();
        if start + width <= x.len() {
            let base = x[start..].as_ptr() as *const i8;
            let mut off = 0;
            while off < bytes {
                // SAFETY: prefetching never faults; the address lies inside `x`.
                unsafe { core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(base.add(off)) };
                off += 64;
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (x, col, j, n, t0, width);
}

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
fn spmm_rows<T: Real, I: IndexElem, J: IndexElem, const FMA: bool, const TILE: usize>(a: CsrPattern<'_, I, J>, val: &[T], xr: XRows<'_, T>, n: usize, b: Block, out: &SendPtr<T>) {
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

macro_rules! multiversion {
    ($(#[$m:meta])* fn $name:ident<$($g:ident: $b:path),*>($($arg:ident: $ty:ty),*) => $body:ident) => {
        $(#[$m])*
        fn $name<$($g: $b),*>($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
                unsafe fn avx512<$($g: $b),*>($($arg: $ty),*) { $body::<$($g),*, true>($($arg),*) }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn avx2<$($g: $b),*>($($arg: $ty),*) { $body::<$($g),*, true>($($arg),*) }
                if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512vl") {
                    // SAFETY: the CPU supports the features the function was compiled for.
                    return unsafe { avx512::<$($g),*>($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                    // SAFETY: as above.
                    return unsafe { avx2::<$($g),*>($($arg),*) };
                }
            }
            $body::<$($g),*, false>($($arg),*)
        }
    };
}

/// `spmm_rows` for f32 with AVX-512 intrinsics, block widths a multiple of `16 V`: the `V`
/// accumulators stay in registers across a row's entries (the portable kernel spilled one per
/// entry at `V = 8`), and the prefetch of the row ahead needs no bounds test on `X` (a prefetch
/// never faults).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn spmm_rows_f32_avx512<I: IndexElem, J: IndexElem, const V: usize>(a: CsrPattern<'_, I, J>, val: &[f32], xr: XRows<'_, f32>, n: usize, b: Block, out: &SendPtr<f32>) {
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
                let row = &x[col[j].to_i64() as usize * ld + xt..][..16 * V];
                let v = _mm512_set1_ps(val[j]);
                for (q, a) in acc.iter_mut().enumerate() {
                    // SAFETY: `row` holds 16 V floats.
                    *a = _mm512_fmadd_ps(v, unsafe { _mm512_loadu_ps(row.as_ptr().add(16 * q)) }, *a);
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

/// `spmm_rows` compiled for the best vector extension available. With AVX-512's 32 registers a
/// row of up to 128 f32 columns stays in registers (one pass over the row's entries); AVX2's 16
/// hold 64.
fn spmm_rows_dispatch<T: Real, I: IndexElem, J: IndexElem>(a: CsrPattern<'_, I, J>, val: &[T], x: XRows<'_, T>, n: usize, b: Block, out: &SendPtr<T>) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
        unsafe fn avx512<T: Real, I: IndexElem, J: IndexElem, const TILE: usize>(a: CsrPattern<'_, I, J>, val: &[T], x: XRows<'_, T>, n: usize, b: Block, out: &SendPtr<T>) {
            spmm_rows::<T, I, J, true, TILE>(a, val, x, n, b, out)
        }
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2<T: Real, I: IndexElem, J: IndexElem>(a: CsrPattern<'_, I, J>, val: &[T], x: XRows<'_, T>, n: usize, b: Block, out: &SendPtr<T>) {
            spmm_rows::<T, I, J, true, 64>(a, val, x, n, b, out)
        }
        let width = b.c1 - b.c0;
        if let (Some(val), Some(xs)) = (as_f32(val), as_f32(x.x)) {
            if width.is_multiple_of(64) && std::arch::is_x86_feature_detected!("avx512f") {
                let xr = XRows { x: xs, ld: x.ld, xc: x.xc };
                let out = SendPtr(out.0 as *mut f32);
                // SAFETY: the CPU supports AVX-512F; T is f32.
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
        if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512vl") {
            // SAFETY: the CPU supports the features the functions were compiled for.
            return unsafe {
                if wide {
                    avx512::<T, I, J, 128>(a, val, x, n, b, out)
                } else {
                    avx512::<T, I, J, 64>(a, val, x, n, b, out)
                }
            };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: as above.
            return unsafe { avx2::<T, I, J>(a, val, x, n, b, out) };
        }
    }
    spmm_rows::<T, I, J, false, 64>(a, val, x, n, b, out)
}

/// The element count `a * b` of an output, or a panic naming it: a wrapped count would size a
/// buffer the kernels then write past.
pub(crate) fn out_len(a: usize, b: usize, what: &str) -> usize {
    a.checked_mul(b).unwrap_or_else(|| panic!("{what}: {a} x {b} elements overflow usize"))
}

/// `A · X` on host slices: `A [m, k]` with one value per entry, `X [k, n]` row-major; `out [m,
/// n]`. Every output element is written exactly once (no zeroing pass over the output).
///
/// # Panics
/// If `val` does not hold one value per entry or `x` is not `[k, n]`.
pub fn spmm<T: Real, I: IndexElem, J: IndexElem>(a: CsrPattern<'_, I, J>, val: &[T], x: &[T], n: usize) -> Vec<T> {
    let (m, k) = (a.nrows(), a.ncols());
    assert_eq!(val.len(), a.nnz(), "spmm: one value per stored entry");
    assert_eq!(x.len(), out_len(k, n, "spmm: X"), "spmm: X is [k, n] = [{k}, {n}]");
    let len = out_len(m, n, "spmm: the output");
    if len == 0 {
        return Vec::new();
    }
    let col = a.idx();
    // Panels are packed copies of X; measured, they pay at 41 reads per row (4096 x 128 at 1 %:
    // 9 %) where a plain aligned copy does not.
    let w = if col.len() >= 16 * k { panel_width::<T>(k, n) } else { n };
    let mut out: Vec<T> = Vec::with_capacity(len);
    let cuts = a.row_blocks(rayon::current_num_threads() * 16);
    // Panel-major: rayon splits the task list in halves, so each thread starts on its own panel.
    let blocks: Vec<Block> = (0..n).step_by(w).flat_map(|c0| cuts.windows(2).map(move |r| Block { r0: r[0], r1: r[1], c0, c1: (c0 + w).min(n) })).collect();
    let dst = SendPtr(out.as_mut_ptr());
    if w < n {
        // Each panel's columns packed contiguously (and aligned): a panel read in place from
        // the full rows touches half of every row's lines, so it maps onto half the cache's
        // sets and thrashes (measured: slower than no panels at all).
        let packed = pack_panels(x, k, n, w);
        let px = packed.get();
        blocks.into_par_iter().for_each(|b| spmm_rows_dispatch(a, val, XRows { x: &px[b.c0 * k..(b.c0 * k + (b.c1 - b.c0) * k)], ld: b.c1 - b.c0, xc: 0 }, n, b, &dst));
    } else {
        let aligned = aligned_copy(x, n, col.len(), 64);
        let x = aligned.as_ref().map_or(x, |a| a.get());
        blocks.into_par_iter().for_each(|b| spmm_rows_dispatch(a, val, XRows { x, ld: n, xc: 0 }, n, b, &dst));
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

/// Scratch buffers kept for the next call: a fresh multi-megabyte allocation is mapped anew by
/// the allocator each time and pays a page fault per page (measured: a fifth of the 4096 x 128
/// product at 1 %). At most [`SCRATCH_KEPT`] buffers are held.
static SCRATCH: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());

/// Scratch buffers kept between calls.
const SCRATCH_KEPT: usize = 4;

/// A cache-aligned array of `T` in a pooled buffer (returned to the pool on drop): aligned
/// copies of dense operands, and the per-entry arrays of a walk in another order.
pub(crate) struct Scratch<T> {
    buf: Vec<u8>,
    off: usize,
    len: usize,
    _t: core::marker::PhantomData<T>,
}

impl<T: Copy + Send + Sync> Scratch<T> {
    /// `len` elements written by `fill`.
    ///
    /// # Safety
    /// `fill` writes every element of the slice it is given.
    pub(crate) unsafe fn filled(len: usize, fill: impl FnOnce(&mut [MaybeUninit<T>])) -> Self {
        // The element bytes and the 64 bytes of alignment slack, without wrapping.
        let bytes = out_len(len, core::mem::size_of::<T>(), "scratch buffer");
        let room = bytes.checked_add(64).expect("scratch buffer: size overflows usize");
        let mut buf = {
            let mut pool = SCRATCH.lock().unwrap_or_else(|e| e.into_inner());
            // The smallest that fits: a large buffer taken for a small need would leave the
            // next large need to a fresh allocation.
            let fit = pool.iter().enumerate().filter(|(_, b)| b.capacity() >= room).min_by_key(|(_, b)| b.capacity()).map(|(i, _)| i);
            match fit {
                Some(i) => pool.remove(i),
                None => Vec::with_capacity(room),
            }
        };
        let off = buf.as_ptr().align_offset(64);
        // SAFETY: `off + bytes <= capacity`, `off` aligns the start for `T` (64 is a multiple of
        // its alignment), and the slice is of `MaybeUninit`, so uninitialised bytes are fine.
        fill(unsafe { core::slice::from_raw_parts_mut(buf.as_mut_ptr().add(off) as *mut MaybeUninit<T>, len) });
        Self { buf, off, len, _t: core::marker::PhantomData }
    }

    /// An aligned copy of `x`.
    fn of(x: &[T]) -> Self {
        // SAFETY: the copy writes every element.
        unsafe {
            Self::filled(x.len(), |out| {
                core::ptr::copy_nonoverlapping(x.as_ptr(), out.as_mut_ptr() as *mut T, x.len());
            })
        }
    }

    /// `src[idx[p]]` for every `p`, gathered in parallel.
    pub(crate) fn gathered(src: &[T], idx: &[i64]) -> Self {
        // SAFETY: the zipped chunks cover the output; each element is written.
        unsafe { Self::filled(idx.len(), |out| gather_into(src, idx, out)) }
    }

    /// `len` copies of `value`.
    pub(crate) fn splat(len: usize, value: T) -> Self {
        // SAFETY: every element is written.
        unsafe {
            Self::filled(len, |out| {
                for o in out {
                    o.write(value);
                }
            })
        }
    }

    pub(crate) fn get(&self) -> &[T] {
        // SAFETY: `filled` initialised `len` elements at `off`, 64-byte aligned.
        unsafe { core::slice::from_raw_parts(self.buf.as_ptr().add(self.off) as *const T, self.len) }
    }

    pub(crate) fn get_mut(&mut self) -> &mut [T] {
        // SAFETY: as `get`, and `self` is borrowed mutably.
        unsafe { core::slice::from_raw_parts_mut(self.buf.as_mut_ptr().add(self.off) as *mut T, self.len) }
    }
}

impl<T> Drop for Scratch<T> {
    fn drop(&mut self) {
        // Most recent first; the least recently returned buffer goes when the pool is full, so
        // the buffers of the products in use stay.
        let mut pool = SCRATCH.lock().unwrap_or_else(|e| e.into_inner());
        pool.insert(0, core::mem::take(&mut self.buf));
        pool.truncate(SCRATCH_KEPT);
    }
}

/// `out[p] = src[idx[p]]`, in parallel chunks. A gather, not a scatter through the inverse
/// permutation: the random reads overlap, where random writes each wait for their line
/// (measured: 1.0 ms against 1.2-2.5 ms for a million entries).
pub(crate) fn gather_into<T: Copy + Send + Sync>(src: &[T], idx: &[i64], out: &mut [MaybeUninit<T>]) {
    const CHUNK: usize = 1 << 14;
    out.par_chunks_mut(CHUNK).zip(idx.par_chunks(CHUNK)).for_each(|(o, ix)| {
        for (o, &i) in o.iter_mut().zip(ix) {
            o.write(src[i as usize]);
        }
    });
}

/// A cache-aligned copy of the rows `x [len, n]` when it pays: burn's buffers start 16 bytes
/// past a cache line, so every vector load of a row straddles two lines. The copy pays where
/// each row is read at least `min_reuse` times on average (`reads >= min_reuse * len`); measured
/// here: the SpMM gains 8 % at 390 reads per row (4096 x 128 at 10 %) but loses 15 % at 41 (at
/// 1 %), where the copy costs more than the split loads, while the SDDMM, whose every load is a
/// row read, gains a third at 41.
fn aligned_copy<T: Real>(x: &[T], n: usize, reads: usize, min_reuse: usize) -> Option<Scratch<T>> {
    let row_bytes = n * core::mem::size_of::<T>();
    (n > 0 && x.as_ptr() as usize % 64 != 0 && row_bytes % 64 == 0 && reads >= min_reuse * (x.len() / n)).then(|| Scratch::of(x))
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
    spmm(csc.as_csr(), tval.get(), g, n)
}

/// Entries of rows `r0..` filling `out` (which starts at row `r0`'s first entry): each row of
/// `a` is read once for all its entries, dot products run in 16 lanes and reduce by halving.
#[inline(always)]
fn sddmm_rows<T: Real, I: IndexElem, J: IndexElem, const FMA: bool>(p: CsrPattern<'_, I, J>, a: &[T], b: &[T], d: usize, r0: usize, out: &mut [MaybeUninit<T>]) {
    let (crow, col) = (p.ptr(), p.idx());
    const LANES: usize = 16;
    let base = crow[r0].to_i64() as usize;
    let mut r = r0;
    let mut done = 0;
    while done < out.len() {
        let (s, e) = (crow[r].to_i64() as usize, crow[r + 1].to_i64() as usize);
        let ar = &a[r * d..(r + 1) * d];
        for j in s..e {
            prefetch_row(b, col, j + PREFETCH, d, 0, d.min(64));
            let br = &b[col[j].to_i64() as usize * d..][..d];
            // Four independent 16-lane accumulators: one would chain every FMA of the row on
            // the previous one's latency.
            let mut acc = [[T::default(); LANES]; 4];
            let mut wide_a = ar.chunks_exact(4 * LANES);
            let mut wide_b = br.chunks_exact(4 * LANES);
            for (ca, cb) in wide_a.by_ref().zip(wide_b.by_ref()) {
                for q in 0..4 {
                    for t in 0..LANES {
                        let (x, y) = (ca[q * LANES + t], cb[q * LANES + t]);
                        acc[q][t] = if FMA { T::mul_add(x, y, acc[q][t]) } else { acc[q][t] + x * y };
                    }
                }
            }
            let (ra, rb) = (wide_a.remainder(), wide_b.remainder());
            for (t, (&x, &y)) in ra.iter().zip(rb).enumerate() {
                acc[(t / LANES) % 4][t % LANES] = acc[(t / LANES) % 4][t % LANES] + x * y;
            }
            let mut acc: [T; LANES] = core::array::from_fn(|t| (acc[0][t] + acc[1][t]) + (acc[2][t] + acc[3][t]));
            let mut width = LANES / 2;
            while width > 0 {
                for t in 0..width {
                    acc[t] = acc[t] + acc[t + width];
                }
                width /= 2;
            }
            out[j - base].write(acc[0]);
        }
        done += e - s;
        r += 1;
    }
}

multiversion! {
    /// `sddmm_rows` compiled for the best vector extension available.
    fn sddmm_rows_dispatch<T: Real, I: IndexElem, J: IndexElem>(p: CsrPattern<'_, I, J>, a: &[T], b: &[T], d: usize, r0: usize, out: &mut [MaybeUninit<T>]) => sddmm_rows
}

/// `x` as `&[f32]` when `T` is `f32`.
fn as_f32<T: 'static>(x: &[T]) -> Option<&[f32]> {
    (core::any::TypeId::of::<T>() == core::any::TypeId::of::<f32>())
        // SAFETY: T is f32 (same type, same layout).
        .then(|| unsafe { core::slice::from_raw_parts(x.as_ptr() as *const f32, x.len()) })
}

/// `x` as `&mut [MaybeUninit<f32>]` when `T` is `f32`.
fn as_f32_uninit<T: 'static>(x: &mut [MaybeUninit<T>]) -> Option<&mut [MaybeUninit<f32>]> {
    (core::any::TypeId::of::<T>() == core::any::TypeId::of::<f32>())
        // SAFETY: T is f32 (same type, same layout).
        .then(|| unsafe { core::slice::from_raw_parts_mut(x.as_mut_ptr() as *mut MaybeUninit<f32>, x.len()) })
}


/// `sddmm_rows` for f32 with AVX-512: four 16-lane FMA chains per dot product and one
/// horizontal reduction instruction sequence; the portable version's reduction through an array
/// cost three times the multiply-adds.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn sddmm_rows_f32_avx512<I: IndexElem, J: IndexElem>(p: CsrPattern<'_, I, J>, a: &[f32], b: &[f32], d: usize, r0: usize, out: &mut [MaybeUninit<f32>]) {
    let (crow, col) = (p.ptr(), p.idx());
    use core::arch::x86_64::*;
    let base = crow[r0].to_i64() as usize;
    let (full, rest) = (d / 64 * 64, d % 64);
    let mut r = r0;
    let mut done = 0;
    while done < out.len() {
        let (s, e) = (crow[r].to_i64() as usize, crow[r + 1].to_i64() as usize);
        let ar = &a[r * d..(r + 1) * d];
        for j in s..e {
            prefetch_row(b, col, j + PREFETCH, d, 0, d.min(64));
            let br = &b[col[j].to_i64() as usize * d..][..d];
            let (pa, pb) = (ar.as_ptr(), br.as_ptr());
            let mut acc = [_mm512_setzero_ps(); 4];
            let mut t = 0;
            while t < full {
                for (q, accq) in acc.iter_mut().enumerate() {
                    // SAFETY: t + 16 q + 16 <= full <= d: inside both rows.
                    let (x, y) = unsafe { (_mm512_loadu_ps(pa.add(t + 16 * q)), _mm512_loadu_ps(pb.add(t + 16 * q))) };
                    *accq = _mm512_fmadd_ps(x, y, *accq);
                }
                t += 64;
            }
            let mut tail = 0.0f32;
            for i in full..full + rest {
                tail += ar[i] * br[i];
            }
            let sum = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
            out[j - base].write(_mm512_reduce_add_ps(sum) + tail);
        }
        done += e - s;
        r += 1;
    }
}

/// The horizontal sums of four vectors, as `[s0, s1, s2, s3]`: pairwise interleave-and-add
/// until each 128-bit lane holds the four partial sums of its quarter, then fold the quarters.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) fn reduce4(d0: core::arch::x86_64::__m512, d1: core::arch::x86_64::__m512, d2: core::arch::x86_64::__m512, d3: core::arch::x86_64::__m512) -> core::arch::x86_64::__m128 {
    use core::arch::x86_64::*;
    let x01 = _mm512_add_ps(_mm512_unpacklo_ps(d0, d1), _mm512_unpackhi_ps(d0, d1));
    let x23 = _mm512_add_ps(_mm512_unpacklo_ps(d2, d3), _mm512_unpackhi_ps(d2, d3));
    let (p01, p23) = (_mm512_castps_pd(x01), _mm512_castps_pd(x23));
    let y = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(p01, p23)), _mm512_castpd_ps(_mm512_unpackhi_pd(p01, p23)));
    let z = _mm512_add_ps(y, _mm512_shuffle_f32x4::<0b0100_1110>(y, y));
    let w = _mm512_add_ps(z, _mm512_shuffle_f32x4::<0b1011_0001>(z, z));
    _mm512_castps512_ps128(w)
}

/// `sddmm_rows_f32_avx512` for rows of exactly `16 V` columns, four entries at a time: the
/// row of `a` stays in `V` registers, and the four dot products reduce together (one transpose
/// of partial sums, 13 instructions instead of four 8-instruction horizontal reductions, which
/// cost as much as the multiply-adds at these widths).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn sddmm_rows_f32_avx512_x4<I: IndexElem, J: IndexElem, const V: usize>(p: CsrPattern<'_, I, J>, a: &[f32], b: &[f32], r0: usize, out: &mut [MaybeUninit<f32>]) {
    let (crow, col) = (p.ptr(), p.idx());
    use core::arch::x86_64::*;
    let d = 16 * V;
    let base = crow[r0].to_i64() as usize;
    let mut r = r0;
    let mut done = 0;
    // The dot product of the row with one row of `b`, in two chains.
    let dot = |ar: &[__m512; V], bp: *const f32| -> __m512 {
        let mut acc = [_mm512_setzero_ps(); 2];
        for q in 0..V {
            // SAFETY: `bp` starts a row of `d = 16 V` elements of `b`.
            acc[q % 2] = _mm512_fmadd_ps(ar[q], unsafe { _mm512_loadu_ps(bp.add(16 * q)) }, acc[q % 2]);
        }
        _mm512_add_ps(acc[0], acc[1])
    };
    while done < out.len() {
        let (s, e) = (crow[r].to_i64() as usize, crow[r + 1].to_i64() as usize);
        let ap = a[r * d..(r + 1) * d].as_ptr();
        // SAFETY: the row of `a` holds `d` elements.
        let ar: [__m512; V] = core::array::from_fn(|q| unsafe { _mm512_loadu_ps(ap.add(16 * q)) });
        let row = |j: usize| b[col[j].to_i64() as usize * d..][..d].as_ptr();
        let mut j = s;
        while j + 4 <= e {
            prefetch_row(b, col, j + PREFETCH, d, 0, d);
            prefetch_row(b, col, j + PREFETCH + 2, d, 0, d);
            let (d0, d1, d2, d3) = (dot(&ar, row(j)), dot(&ar, row(j + 1)), dot(&ar, row(j + 2)), dot(&ar, row(j + 3)));
            // SAFETY: entries j..j + 4 lie in this task's part of `out`.
            unsafe { _mm_storeu_ps(out[j - base..j - base + 4].as_mut_ptr() as *mut f32, reduce4(d0, d1, d2, d3)) };
            j += 4;
        }
        while j < e {
            out[j - base].write(_mm512_reduce_add_ps(dot(&ar, row(j))));
            j += 1;
        }
        done += e - s;
        r += 1;
    }
}

/// `out[j] = a[row j] · b[col j]` on host slices: `a [m, d]` indexed by the pattern's rows,
/// `b [k, d]` by its columns; `out [nnz]`.
///
/// # Panics
/// If `a` is not `[m, d]` or `b` not `[k, d]`.
pub fn sddmm<T: Real, I: IndexElem, J: IndexElem>(p: CsrPattern<'_, I, J>, a: &[T], b: &[T], d: usize) -> Vec<T> {
    assert_eq!(b.len(), out_len(p.ncols(), d, "sddmm: b"), "sddmm: b is [k, d] = [{}, {d}]", p.ncols());
    let b_al = aligned_copy(b, d, p.nnz(), 32);
    sddmm_aligned_b(p, a, b_al.as_ref().map_or(b, |x| x.get()), d)
}

/// [`sddmm`] with the right operand given transposed, `bt [d, k]` (torch's `mat2`): it is
/// transposed once into an aligned buffer, which is also the aligned copy the row gathers want.
///
/// # Panics
/// If `a` is not `[m, d]` or `bt` not `[d, k]`.
pub fn sddmm_bt<T: Real, I: IndexElem, J: IndexElem>(p: CsrPattern<'_, I, J>, a: &[T], bt: &[T], d: usize) -> Vec<T> {
    let k = p.ncols();
    assert_eq!(bt.len(), out_len(d, k, "sddmm: bt"), "sddmm: bt is [d, k] = [{d}, {k}]");
    // SAFETY: the transpose writes every element of `[k, d]`.
    let b = unsafe { Scratch::filled(k * d, |out| crate::flex::transpose_into(bt, d, k, out)) };
    sddmm_aligned_b(p, a, b.get(), d)
}

/// Whether the f32 SDDMM kernel for width `d` keeps the row of `a` in registers (d = 64, 128).
fn sddmm_holds_a_row<T: 'static>(d: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    if core::any::TypeId::of::<T>() == core::any::TypeId::of::<f32>() && (d == 64 || d == 128) {
        return std::arch::is_x86_feature_detected!("avx512f");
    }
    let _ = d;
    false
}

fn sddmm_aligned_b<T: Real, I: IndexElem, J: IndexElem>(p: CsrPattern<'_, I, J>, a: &[T], b: &[T], d: usize) -> Vec<T> {
    let (m, nnz) = (p.nrows(), p.nnz());
    assert_eq!(a.len(), out_len(m, d, "sddmm: a"), "sddmm: a is [m, d] = [{m}, {d}]");
    if nnz == 0 || m == 0 {
        return vec![T::default(); nnz];
    }
    // Written once by the row kernels: no zeroing pass (a zeroed buffer faults every page).
    let mut out: Vec<T> = Vec::with_capacity(nnz);
    // A kernel that holds the row of `a` in registers loads it once per pattern row: no copy.
    let a_al = if sddmm_holds_a_row::<T>(d) { None } else { aligned_copy(a, d, nnz, 32) };
    let a = a_al.as_ref().map_or(a, |x| x.get());
    let cuts = p.row_blocks(rayon::current_num_threads() * 16);
    let mut parts = Vec::with_capacity(cuts.len());
    let mut rest = &mut out.spare_capacity_mut()[..nnz];
    for w in cuts.windows(2) {
        let (head, tail) = rest.split_at_mut(p.start(w[1]) - p.start(w[0]));
        parts.push((w[0], head));
        rest = tail;
    }
    parts.into_par_iter().for_each(|(r0, part)| {
        #[cfg(target_arch = "x86_64")]
        if let (Some(a32), Some(b32), Some(o32)) = (as_f32(a), as_f32(b), as_f32_uninit(part)) {
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU supports AVX-512F.
                unsafe {
                    match d {
                        64 => sddmm_rows_f32_avx512_x4::<I, J, 4>(p, a32, b32, r0, o32),
                        128 => sddmm_rows_f32_avx512_x4::<I, J, 8>(p, a32, b32, r0, o32),
                        _ => sddmm_rows_f32_avx512(p, a32, b32, d, r0, o32),
                    }
                };
                return;
            }
        }
        sddmm_rows_dispatch(p, a, b, d, r0, part)
    });
    // SAFETY: the pattern is valid (its type says so): its rows run from entry 0 to entry nnz,
    // so the row blocks' parts partition the output, and the kernels write every entry of
    // their part once.
    unsafe { out.set_len(nnz) };
    out
}

// ------------------------------------------------------------------------------------------
// Flex: the host kernels on its buffers.

/// Transposed patterns kept for reuse: training multiplies by `Aᵀ` with the same pattern at
/// every backward pass, and the counting sort costs as much as a product. Entries hold clones of
/// the index tensors, so a buffer cannot be freed and its address reused while cached.
struct CachedTranspose {
    crow: FlexTensor,
    col: FlexTensor,
    k: usize,
    csc: std::sync::Arc<CscPattern>,
}

/// Patterns kept (most recent first).
const TRANSPOSE_CACHE: usize = 4;

static TRANSPOSES: std::sync::Mutex<Vec<CachedTranspose>> = std::sync::Mutex::new(Vec::new());

fn same_buffer(a: &FlexTensor, b: &FlexTensor) -> bool {
    std::sync::Arc::ptr_eq(&a.data_arc(), &b.data_arc()) && a.layout() == b.layout() && a.dtype() == b.dtype()
}

/// Runs `$body` with `$a` the pattern of the contiguous Flex index tensors `$crow` and `$col`
/// over `$k` columns, for every pair of index types.
///
/// Only for the bodies of [`SpmmKernels`]' methods, whose contract is that the tensors form a
/// valid pattern over `$k` columns.
macro_rules! with_pattern {
    ($crow:expr, $col:expr, $k:expr, |$a:ident| $body:expr) => {
        match_ints!(int_slice($crow), c => match_ints!(int_slice($col), p => {
            // SAFETY: the tensors are a valid pattern over `$k` columns: the contract of the
            // `SpmmKernels` method this expands in.
            let $a = unsafe { CsrPattern::new_unchecked(c, p, $k) };
            $body
        }))
    };
}

/// The CSC view of `(crow, col)`, from the cache or computed and cached.
///
/// # Safety
/// `(crow, col)` is a valid pattern over `k` columns.
unsafe fn cached_transpose(crow: &FlexTensor, col: &FlexTensor, k: usize) -> std::sync::Arc<CscPattern> {
    let mut cache = TRANSPOSES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = cache.iter().position(|c| c.k == k && same_buffer(&c.crow, crow) && same_buffer(&c.col, col)) {
        let hit = cache.remove(i);
        let csc = hit.csc.clone();
        cache.insert(0, hit);
        return csc;
    }
    drop(cache);
    let csc = std::sync::Arc::new(with_pattern!(crow, col, k, |a| a.transpose()));
    let mut cache = TRANSPOSES.lock().unwrap_or_else(|e| e.into_inner());
    cache.insert(0, CachedTranspose { crow: crow.clone(), col: col.clone(), k, csc: csc.clone() });
    cache.truncate(TRANSPOSE_CACHE);
    csc
}

impl SpmmKernels for Flex {
    unsafe fn csr_spmm(crow: FlexTensor, col: FlexTensor, values: FlexTensor, x: FlexTensor) -> FlexTensor {
        let (crow, col) = (contiguous(crow), contiguous(col));
        let m = crow.shape()[0] - 1;
        let [k, n] = [x.shape()[0], x.shape()[1]];
        with_real(
            [values, x],
            vec![m, n],
            |[v, x]| with_pattern!(&crow, &col, k, |a| spmm(a, v, x, n)),
            |[v, x]| with_pattern!(&crow, &col, k, |a| spmm(a, v, x, n)),
        )
    }

    unsafe fn csr_spmm_t(crow: FlexTensor, col: FlexTensor, values: FlexTensor, g: FlexTensor, k: usize) -> FlexTensor {
        let (crow, col) = (contiguous(crow), contiguous(col));
        let n = g.shape()[1];
        // SAFETY: a valid pattern over `k` columns, this method's contract.
        let csc = unsafe { cached_transpose(&crow, &col, k) };
        with_real([values, g], vec![k, n], |[v, g]| spmm_t_with(&csc, v, g, n), |[v, g]| spmm_t_with(&csc, v, g, n))
    }

    unsafe fn csr_spmm_backward(crow: FlexTensor, col: FlexTensor, values: FlexTensor, g: FlexTensor, x: FlexTensor, transpose: bool, k: usize) -> FlexTensor {
        use crate::spmm_backward::{spmm_backward, Walk};
        let (crow, col) = (contiguous(crow), contiguous(col));
        let n = g.shape()[1];
        let len = x.shape()[0];
        let total = vec![out_len(len, n, "spmm backward: dX").checked_add(col.shape()[0]).expect("spmm backward: gradient length overflows usize")];
        if transpose {
            with_real(
                [values, g, x],
                total,
                |[v, g, x]| with_pattern!(&crow, &col, k, |a| spmm_backward(&Walk::InOrder(a), v, g, x, n)),
                |[v, g, x]| with_pattern!(&crow, &col, k, |a| spmm_backward(&Walk::InOrder(a), v, g, x, n)),
            )
        } else {
            // SAFETY: a valid pattern over `k` columns, this method's contract.
            let csc = unsafe { cached_transpose(&crow, &col, k) };
            let walk: Walk<'_, i64, i64> = Walk::Transposed(&csc);
            with_real([values, g, x], total, |[v, g, x]| spmm_backward(&walk, v, g, x, n), |[v, g, x]| spmm_backward(&walk, v, g, x, n))
        }
    }

    unsafe fn csr_sddmm(crow: FlexTensor, col: FlexTensor, a: FlexTensor, b: FlexTensor) -> FlexTensor {
        let (crow, col) = (contiguous(crow), contiguous(col));
        let nnz = col.shape()[0];
        let [k, d] = [b.shape()[0], a.shape()[1]];
        // torch's `mat2 [d, k]` arrives as a transposed view: the kernel transposes it itself.
        if let Some(bt) = transposed_base(&b) {
            return with_real(
                [a, bt],
                vec![nnz],
                |[a, bt]| with_pattern!(&crow, &col, k, |p| sddmm_bt(p, a, bt, d)),
                |[a, bt]| with_pattern!(&crow, &col, k, |p| sddmm_bt(p, a, bt, d)),
            );
        }
        with_real(
            [a, b],
            vec![nnz],
            |[a, b]| with_pattern!(&crow, &col, k, |p| sddmm(p, a, b, d)),
            |[a, b]| with_pattern!(&crow, &col, k, |p| sddmm(p, a, b, d)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// The f32 AVX-512 SDDMM kernels (four entries at a time at d = 64 and 128, one at a time
    /// otherwise) against plain dot products; row lengths 0..9 exercise the remainders.
    #[test]
    fn f32_sddmm_matches_dot_products() {
        let (m, k) = (11, 13);
        let mut crow = vec![0i64];
        let mut col = Vec::new();
        for r in 0..m {
            for j in 0..r % 10 {
                col.push(((r * 7 + j * 5) % k) as i64);
            }
            crow.push(col.len() as i64);
        }
        for d in [16, 48, 64, 128, 130] {
            let a: Vec<f32> = (0..m * d).map(|i| ((i * 13) % 7) as f32 - 3.0).collect();
            let b: Vec<f32> = (0..k * d).map(|i| ((i * 37) % 11) as f32 - 5.0).collect();
            let got = sddmm(CsrPattern::new(&crow, &col, k).unwrap(), &a, &b, d);
            for r in 0..m {
                for j in crow[r] as usize..crow[r + 1] as usize {
                    let c = col[j] as usize;
                    let want: f32 = (0..d).map(|t| a[r * d + t] * b[c * d + t]).sum();
                    assert_eq!(got[j], want, "d={d} row {r} entry {j}");
                }
            }
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
                let want: f32 = (crow[r] as usize..crow[r + 1] as usize).map(|j| val[j] * x[col[j] as usize * n + t]).sum();
                assert_eq!(got[r * n + t], want, "row {r} column {t}");
            }
        }
    }
}
