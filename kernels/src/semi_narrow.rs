//! 2:4 products with a narrow dense operand: `B · Aᵀ` (a linear layer at decode size) and
//! `A · B` when `B` has at most [`NARROW`] rows (columns).
//!
//! At these sizes the product is bound by the bytes of `A`, read once: the panel kernel of
//! `semi` packs `B` into panels at least 8 wide and decodes every group once per panel row,
//! which at one row of `B` ran 3x slower than burn's dense matrix-vector product. Here each row
//! of `A` streams past once, its kept values and metadata read in chunks of 32 columns, and
//! every row of `B` takes its dot product with it in registers:
//!
//! - AVX-512 (f32): the 16 kept values of a chunk in one vector; their 16 columns decoded from
//!   the chunk's two metadata words with one variable shift (lane `i` of the word pair shifted
//!   by `2 i`: nibble `g` holds the slots of values `2 g` and `2 g + 1`); the row of `B`'s
//!   32 columns selected into kept order by one two-register permute. Every decoded index lies
//!   in `0..32`, inside the chunk's own columns, so no metadata word can lead a read elsewhere.
//!   Kept values stored as bf16 or f16 are read as stored and widened in registers.
//! - AVX512_BF16 (bf16 values against a bf16 `B`): 64 columns a step, one 16-bit permute and one
//!   `vdpbf16ps` per row of `B` (`semi_mm_narrow_bf16`).
//! - AVX2 with FMA (f32, bf16 or f16 values; `avx2.rs`): the same walk 16 columns a step in
//!   256-bit registers, the row of `B` selected by two one-register permutes and a blend.
//! - Elsewhere: the same walk a group at a time.
//!
//! Rows of `A` go to tasks in blocks, so each thread streams its own part of the values; the
//! columns go in slabs whose rows of `B` stay in L1, and each step prefetches the slab's run of
//! a row `AHEAD` rows further (the runs are too short for the hardware prefetcher).

use crate::alloc::out_len;
use crate::pattern::SendPtr;
use crate::real::Real;
use crate::semi::{SemiRef, WORD_COLUMNS};
use crate::simd::{isa, Isa};
use rayon::prelude::*;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod bf16;

#[cfg(target_arch = "x86_64")]
use avx512::*;
pub use bf16::semi_mm_narrow_bf16;

/// Rows of `B` up to which [`semi_mm_narrow`] applies (and `semi_mm` hands over to it).
pub const NARROW: usize = 16;

/// Rows of `A` per task.
const ROW_BLOCK: usize = 64;

/// Rows ahead whose slab runs the narrow kernels prefetch: one row's run (1.5 KB at N = 8) is
/// summed in less than a memory latency, so the next row's lines arrived late.
const AHEAD: usize = 3;

mod sealed {
    pub trait Sealed {}
    impl<T: crate::real::Real> Sealed for T {}
    impl Sealed for half::bf16 {}
    impl Sealed for half::f16 {}
}

/// A stored kept value and the type its products sum in: f32 and f64 sum in themselves, bf16
/// and f16 (read as stored, half the bytes) in f32.
pub trait Kept: Copy + Send + Sync + 'static + sealed::Sealed {
    /// The type of `B`, the sums and the result.
    type Acc: Real;
    /// The value in the summing type (exact).
    fn widen(self) -> Self::Acc;
}

impl<T: Real> Kept for T {
    type Acc = T;
    #[inline(always)]
    fn widen(self) -> T {
        self
    }
}

impl Kept for half::bf16 {
    type Acc = f32;
    #[inline(always)]
    fn widen(self) -> f32 {
        self.to_f32()
    }
}

impl Kept for half::f16 {
    type Acc = f32;
    #[inline(always)]
    fn widen(self) -> f32 {
        self.to_f32()
    }
}

/// Where the result of row `m` of `B` and row `r` of `A` goes: `[n, rows]` (`B · Aᵀ`) or
/// `[rows, n]` (`A · B`).
struct Out<T> {
    ptr: SendPtr<T>,
    rows: usize,
    n: usize,
    transposed: bool,
}

impl<T> Out<T> {
    /// Writes one result.
    ///
    /// # Safety
    /// `m < n`, `r < rows`, the buffer holds `rows * n` elements, and no other task writes
    /// `(m, r)`.
    #[inline(always)]
    unsafe fn put(&self, m: usize, r: usize, v: T) {
        let at = if self.transposed { m * self.rows + r } else { r * self.n + m };
        // SAFETY: as the caller promises.
        unsafe { self.ptr.at(at).write(v) };
    }

    /// The same places, typed as `U` (the same type as `T`, checked by the caller).
    fn cast<U>(&self) -> Out<U> {
        Out { ptr: SendPtr(self.ptr.0 as *mut U), rows: self.rows, n: self.n, transposed: self.transposed }
    }
}

/// The dot products of one row of `A` (`words`, `vals`) with the `N` rows of `b` (`[N, cols]`,
/// row-major), a group of four columns at a time.
#[inline(always)]
fn row_dots<V: Kept, const FMA: bool, const N: usize>(
    words: &[i16],
    vals: &[V],
    b: &[V::Acc],
    cols: usize,
) -> [V::Acc; N] {
    type T<V> = <V as Kept>::Acc;
    let mut acc = [T::<V>::default(); N];
    for g in 0..cols / 4 {
        let nibble = (words[g / 4] as u16 as usize) >> (4 * (g % 4));
        let (c0, c1) = (4 * g + (nibble & 3), 4 * g + ((nibble >> 2) & 3));
        let (v0, v1) = (vals[2 * g].widen(), vals[2 * g + 1].widen());
        for (m, a) in acc.iter_mut().enumerate() {
            let (x0, x1) = (b[m * cols + c0], b[m * cols + c1]);
            *a = if FMA { T::<V>::mul_add(v1, x1, T::<V>::mul_add(v0, x0, *a)) } else { *a + v0 * x0 + v1 * x1 };
        }
    }
    acc
}

/// Rows `r0..r1` of `A` against the `N` rows of `b`, portable.
///
/// # Safety
/// As [`Out::put`] for every `m < N` and `r` in `r0..r1`.
#[inline(always)]
unsafe fn block<V: Kept, const FMA: bool, const N: usize>(
    a: SemiRef<'_, V>,
    b: &[V::Acc],
    (r0, r1): (usize, usize),
    out: &Out<V::Acc>,
) {
    let (cols, words) = (a.layout().cols(), a.layout().cols().div_ceil(WORD_COLUMNS));
    let (meta, vals, half) = (a.layout().meta(), a.vals(), cols / 2);
    for r in r0..r1 {
        let dots = row_dots::<V, FMA, N>(&meta[r * words..(r + 1) * words], &vals[r * half..(r + 1) * half], b, cols);
        for (m, &d) in dots.iter().enumerate() {
            // SAFETY: m < N, r in r0..r1 (the caller's promise).
            unsafe { out.put(m, r, d) };
        }
    }
}

/// [`block`] compiled for the best vector extension available.
///
/// # Safety
/// As [`block`].
unsafe fn block_dispatch<V: Kept, const N: usize>(
    a: SemiRef<'_, V>,
    b: &[V::Acc],
    rows: (usize, usize),
    out: &Out<V::Acc>,
) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2<V: Kept, const N: usize>(
            a: SemiRef<'_, V>,
            b: &[V::Acc],
            rows: (usize, usize),
            out: &Out<V::Acc>,
        ) {
            // SAFETY: as the caller promises.
            unsafe { block::<V, true, N>(a, b, rows, out) }
        }
        if isa() != Isa::Portable {
            // SAFETY: `isa` detected AVX2 and FMA (AVX-512 machines have both); the rest as the
            // caller promises.
            return unsafe { avx2::<V, N>(a, b, rows, out) };
        }
    }
    // SAFETY: as the caller promises.
    unsafe { block::<V, false, N>(a, b, rows, out) }
}

/// Rows `r0..r1` of `A` against the `N` rows of `b`, on the best kernel for `V`.
///
/// # Safety
/// As [`block`].
unsafe fn rows_of<V: Kept, const N: usize>(a: SemiRef<'_, V>, b: &[V::Acc], rows: (usize, usize), out: &Out<V::Acc>) {
    #[cfg(target_arch = "x86_64")]
    if let Some(b32) = crate::simd::as_f32(b) {
        if isa() == Isa::Avx512 {
            // SAFETY: `isa` detected AVX-512F; the sums are f32 (`as_f32` checked it), so V is
            // f32, bf16 or f16 (the `Kept` impls) and the output holds f32s; the writes as the
            // caller promises.
            return unsafe { block_avx512::<V, N>(a, b32, rows, &out.cast::<f32>()) };
        }
        if isa() == Isa::Avx2Fma && std::arch::is_x86_feature_detected!("f16c") {
            // SAFETY: `isa` detected AVX2 and FMA, and F16C is detected; V is f32, bf16 or f16
            // and the output holds f32s, as above; the writes as the caller promises.
            return unsafe { avx2::block_avx2::<V, N>(a, b32, rows, &out.cast::<f32>()) };
        }
    }
    // SAFETY: as the caller promises.
    unsafe { block_dispatch::<V, N>(a, b, rows, out) }
}

/// The kernel for `n` rows of `B`.
type RowsOf<V> =
    for<'a, 'b, 'c> unsafe fn(SemiRef<'a, V>, &'b [<V as Kept>::Acc], (usize, usize), &'c Out<<V as Kept>::Acc>);

/// [`rows_of`] for `n` (1..=16).
fn rows_of_n<V: Kept>(n: usize) -> RowsOf<V> {
    match n {
        1 => rows_of::<V, 1>,
        2 => rows_of::<V, 2>,
        3 => rows_of::<V, 3>,
        4 => rows_of::<V, 4>,
        5 => rows_of::<V, 5>,
        6 => rows_of::<V, 6>,
        7 => rows_of::<V, 7>,
        8 => rows_of::<V, 8>,
        9 => rows_of::<V, 9>,
        10 => rows_of::<V, 10>,
        11 => rows_of::<V, 11>,
        12 => rows_of::<V, 12>,
        13 => rows_of::<V, 13>,
        14 => rows_of::<V, 14>,
        15 => rows_of::<V, 15>,
        _ => rows_of::<V, 16>,
    }
}

/// `B · Aᵀ` (`transposed`: `B [n, cols]`, result `[n, rows]`) or `A · B` (`B [cols, n]`,
/// result `[rows, n]`) for `n <= NARROW`, reading `A` once.
///
/// # Panics
/// If `n > NARROW` or `b` is not `n x cols`.
pub fn semi_mm_narrow<T: Real>(a: SemiRef<'_, T>, b: &[T], n: usize, transposed: bool) -> Vec<T> {
    narrow(a, b, n, transposed)
}

/// [`semi_mm_narrow`] with 16-bit kept values (`half::bf16` or `half::f16`) read as stored,
/// half the bytes of f32, and widened in registers; `B`, the sums and the result in f32.
///
/// # Panics
/// As [`semi_mm_narrow`].
pub fn semi_mm_narrow_16<H: Kept<Acc = f32>>(a: SemiRef<'_, H>, b: &[f32], n: usize, transposed: bool) -> Vec<f32> {
    narrow(a, b, n, transposed)
}

fn narrow<V: Kept>(a: SemiRef<'_, V>, b: &[V::Acc], n: usize, transposed: bool) -> Vec<V::Acc> {
    assert!(n <= NARROW, "semi_mm_narrow: at most {NARROW} rows of B, not {n}");
    drive(a, b, n, transposed, rows_of_n::<V>(n))
}

/// A kernel over rows of `A`: values `V`, `B`'s elements `X`, results `O`.
type Kernel<V, X, O> = for<'a, 'b, 'c> unsafe fn(SemiRef<'a, V>, &'b [X], (usize, usize), &'c Out<O>);

/// Runs `kernel` over blocks of rows of `A` in parallel: `B` as `[n, cols]` (turned once when
/// given as `[cols, n]`), the results into `[n, rows]` or `[rows, n]`.
fn drive<V: Copy + Sync, X: Copy + Send + Sync + 'static, O>(
    a: SemiRef<'_, V>,
    b: &[X],
    n: usize,
    transposed: bool,
    kernel: Kernel<V, X, O>,
) -> Vec<O> {
    let (rows, cols) = (a.layout().rows(), a.layout().cols());
    assert_eq!(b.len(), out_len(cols, n, "semi_mm: b"), "semi_mm: b is [cols, n] (or [n, cols] transposed)");
    let len = out_len(rows, n, "semi_mm: the output");
    if len == 0 {
        return Vec::new();
    }
    // `A · B` takes B's columns as rows: a copy of n x cols elements, a few pages at most.
    let bt: Vec<X>;
    let b = if transposed {
        b
    } else {
        bt = crate::dense::transpose_blocked(b, cols, n);
        &bt
    };
    let mut out: Vec<O> = Vec::with_capacity(len);
    let dst = Out { ptr: SendPtr(out.as_mut_ptr()), rows, n, transposed };
    (0..rows.div_ceil(ROW_BLOCK)).into_par_iter().for_each(|blk| {
        let span = (blk * ROW_BLOCK, (blk * ROW_BLOCK + ROW_BLOCK).min(rows));
        // SAFETY: the output holds rows * n elements; this task alone owns the rows of `span`
        // (the blocks are disjoint), and the kernel for `n` writes m < n only; `b` holds n
        // rows of `cols` (checked above).
        unsafe { kernel(a, b, span, &dst) };
    });
    // SAFETY: the row blocks cover 0..rows and every task stores all n results of each of its
    // rows: every element of the output is written once.
    unsafe { out.set_len(len) };
    out
}

#[cfg(test)]
mod tests;
