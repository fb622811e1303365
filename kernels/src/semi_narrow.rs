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

/// Up to 16 kept values from `p` (the lanes of `mask`, a run from lane 0; the rest zero) as f32
/// lanes: f32 as they are, bf16 shifted into the high half of an f32, f16 through the hardware
/// conversion.
///
/// # Safety
/// The CPU supports AVX-512F; `V` is f32, bf16 or f16; the masked lanes lie inside the values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn kept_lanes<V: 'static>(p: *const V, mask: core::arch::x86_64::__mmask16) -> core::arch::x86_64::__m512 {
    use core::any::TypeId;
    use core::arch::x86_64::*;
    // SAFETY: the masked lanes lie inside the values (the caller's promise); the type tests
    // select the reading of V's bits.
    unsafe {
        if TypeId::of::<V>() == TypeId::of::<f32>() {
            _mm512_maskz_loadu_ps(mask, p as *const f32)
        } else {
            // The 16-bit lanes without AVX-512BW: a whole load, or the first lanes (the masks
            // here are runs from lane 0) copied into a zeroed buffer.
            let bits = if mask == 0xFFFF {
                _mm256_loadu_si256(p as *const __m256i)
            } else {
                let mut buf = [0u16; 16];
                core::ptr::copy_nonoverlapping(p as *const u16, buf.as_mut_ptr(), mask.trailing_ones() as usize);
                _mm256_loadu_si256(buf.as_ptr() as *const __m256i)
            };
            if TypeId::of::<V>() == TypeId::of::<half::bf16>() {
                _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(bits)))
            } else {
                _mm512_cvtph_ps(bits)
            }
        }
    }
}

/// [`block`] with AVX-512, 32 columns (16 kept values) a step, values f32, bf16 or f16 and `b`
/// in f32; see the module docs.
///
/// # Safety
/// The CPU supports AVX-512F; `V` is f32, bf16 or f16; as [`block`] for the writes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn block_avx512<V: Copy + 'static, const N: usize>(
    a: SemiRef<'_, V>,
    b: &[f32],
    (r0, r1): (usize, usize),
    out: &Out<f32>,
) {
    use core::arch::x86_64::*;
    let cols = a.layout().cols();
    let (words, half) = (cols.div_ceil(WORD_COLUMNS), cols / 2);
    let (meta, vals) = (a.layout().meta(), a.vals());
    assert!(b.len() >= N * cols && meta.len() >= r1 * words && vals.len() >= r1 * half);
    let shifts = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    let base = _mm512_setr_epi32(0, 0, 4, 4, 8, 8, 12, 12, 16, 16, 20, 20, 24, 24, 28, 28);
    let three = _mm512_set1_epi32(3);
    // The kept values' columns inside a chunk of 32, from its two metadata words.
    let columns = |pair: u32| {
        _mm512_add_epi32(_mm512_and_si512(_mm512_srlv_epi32(_mm512_set1_epi32(pair as i32), shifts), three), base)
    };
    let (chunks, rest) = (cols / 32, cols % 32);
    // The columns go in slabs whose rows of `b` stay in L1 (24 KiB) while every row of the
    // block passes over them; each row's accumulators wait in `part` between slabs. In one
    // sweep per row, N = 8 rows of `b` (128 KiB) were re-read from L2 for every row of `A`.
    let slab = (24 * 1024 / (4 * 32 * N)).max(1);
    let mut part = vec![[_mm512_setzero_ps(); N]; r1 - r0];
    for ch0 in (0..chunks).step_by(slab) {
        for r in r0..r1 {
            let (w, v) = (&meta[r * words..(r + 1) * words], &vals[r * half..(r + 1) * half]);
            let mut acc = part[r - r0];
            // The slab's part of each row is a short run (1.5 KB at N = 8) and the next run
            // starts a row further: too short for the hardware prefetcher, which left the
            // value loads waiting on memory. Each step fetches the same step of a row `AHEAD` further
            // (addresses formed with wrapping arithmetic; a prefetch never faults).
            let (next_v, next_w) =
                (vals.as_ptr().wrapping_add((r + AHEAD) * half), meta.as_ptr().wrapping_add((r + AHEAD) * words));
            for ch in ch0..(ch0 + slab).min(chunks) {
                if r + AHEAD < r1 {
                    _mm_prefetch::<_MM_HINT_T0>(next_v.wrapping_add(16 * ch) as *const i8);
                    _mm_prefetch::<_MM_HINT_T0>(next_w.wrapping_add(2 * ch) as *const i8);
                }
                let pair = (w[2 * ch] as u16 as u32) | ((w[2 * ch + 1] as u16 as u32) << 16);
                let idx = columns(pair);
                // SAFETY: values 16 ch..16 ch + 16 of the row: 32 (ch + 1) <= cols, so
                // 16 (ch + 1) <= half.
                let kept = unsafe { kept_lanes(v.as_ptr().add(16 * ch), 0xFFFF) };
                for (m, am) in acc.iter_mut().enumerate() {
                    // SAFETY: columns 32 ch..32 ch + 32 <= cols of row m < N of `b`, which holds
                    // N rows of `cols` (asserted above).
                    let (x0, x1) = unsafe {
                        // Base + constant addresses for both loads (`simd::opaque`).
                        let x = crate::simd::opaque(b.as_ptr().add(m * cols + 32 * ch));
                        (_mm512_loadu_ps(x), _mm512_loadu_ps(x.add(16)))
                    };
                    *am = _mm512_fmadd_ps(kept, _mm512_permutex2var_ps(x0, idx, x1), *am);
                }
            }
            part[r - r0] = acc;
        }
    }
    for r in r0..r1 {
        let (w, v) = (&meta[r * words..(r + 1) * words], &vals[r * half..(r + 1) * half]);
        let acc = &mut part[r - r0];
        if rest > 0 {
            // The last groups (rest is a multiple of 4 below 32): masked loads, and lanes past
            // the kept values zeroed by the permute, so nothing outside the row is read and
            // nothing past it (an infinity times a zero) enters the sums.
            let c0 = 32 * chunks;
            let kept_mask: __mmask16 = ((1u32 << (rest / 2)) - 1) as __mmask16;
            let lo: __mmask16 = ((1u32 << rest.min(16)) - 1) as __mmask16;
            let hi: __mmask16 = ((1u32 << rest.saturating_sub(16)) - 1) as __mmask16;
            let pair = (w[2 * chunks] as u16 as u32) | (w.get(2 * chunks + 1).map_or(0, |&x| x as u16 as u32) << 16);
            let idx = columns(pair);
            // SAFETY: masked lanes only: the row's last rest / 2 values.
            let kept = unsafe { kept_lanes(v.as_ptr().add(16 * chunks), kept_mask) };
            for (m, am) in acc.iter_mut().enumerate() {
                let x = b[m * cols + c0..][..rest].as_ptr();
                // SAFETY: masked lanes only: the rest columns of the checked slice.
                let (x0, x1) = unsafe { (_mm512_maskz_loadu_ps(lo, x), _mm512_maskz_loadu_ps(hi, x.add(16))) };
                *am = _mm512_fmadd_ps(kept, _mm512_maskz_permutex2var_ps(kept_mask, x0, idx, x1), *am);
            }
        }
        for (m, am) in acc.iter().enumerate() {
            // SAFETY: m < N, r in r0..r1 (the caller's promise).
            unsafe { out.put(m, r, _mm512_reduce_add_ps(*am)) };
        }
    }
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

/// [`semi_mm_narrow_16`] for bf16 values and a bf16 `B`, summed in f32: on CPUs with
/// AVX512_BF16, `B` stays bf16 and each step of 64 columns is one 16-bit permute and one
/// `vdpbf16ps` per row of `B` (each f32 lane sums a group's two products), half the
/// instructions of widening `B`; elsewhere (or with `cols` not a multiple of 64) `B` is widened
/// and [`semi_mm_narrow_16`] runs. The dot-product instruction treats subnormal inputs and
/// results as zero.
///
/// # Panics
/// As [`semi_mm_narrow`].
pub fn semi_mm_narrow_bf16(a: SemiRef<'_, half::bf16>, b: &[half::bf16], n: usize, transposed: bool) -> Vec<f32> {
    assert!(n <= NARROW, "semi_mm_narrow: at most {NARROW} rows of B, not {n}");
    #[cfg(target_arch = "x86_64")]
    if a.layout().cols().is_multiple_of(64)
        && isa() == Isa::Avx512
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512bf16")
    {
        return drive(a, b, n, transposed, bf16_rows_of_n(n));
    }
    let wide: Vec<f32> = b.iter().map(|v| v.to_f32()).collect();
    semi_mm_narrow_16(a, &wide, n, transposed)
}

/// [`bf16_rows`] (or [`bf16_rows_vbmi`] where the CPU has AVX512_VBMI) for `n` (1..=16).
#[cfg(target_arch = "x86_64")]
fn bf16_rows_of_n(n: usize) -> Kernel<half::bf16, half::bf16, f32> {
    if std::arch::is_x86_feature_detected!("avx512vbmi") {
        return match n {
            1 => bf16_rows_vbmi::<1>,
            2 => bf16_rows_vbmi::<2>,
            3 => bf16_rows_vbmi::<3>,
            4 => bf16_rows_vbmi::<4>,
            5 => bf16_rows_vbmi::<5>,
            6 => bf16_rows_vbmi::<6>,
            7 => bf16_rows_vbmi::<7>,
            8 => bf16_rows_vbmi::<8>,
            9 => bf16_rows_vbmi::<9>,
            10 => bf16_rows_vbmi::<10>,
            11 => bf16_rows_vbmi::<11>,
            12 => bf16_rows_vbmi::<12>,
            13 => bf16_rows_vbmi::<13>,
            14 => bf16_rows_vbmi::<14>,
            15 => bf16_rows_vbmi::<15>,
            _ => bf16_rows_vbmi::<16>,
        };
    }
    match n {
        1 => bf16_rows::<1>,
        2 => bf16_rows::<2>,
        3 => bf16_rows::<3>,
        4 => bf16_rows::<4>,
        5 => bf16_rows::<5>,
        6 => bf16_rows::<6>,
        7 => bf16_rows::<7>,
        8 => bf16_rows::<8>,
        9 => bf16_rows::<9>,
        10 => bf16_rows::<10>,
        11 => bf16_rows::<11>,
        12 => bf16_rows::<12>,
        13 => bf16_rows::<13>,
        14 => bf16_rows::<14>,
        15 => bf16_rows::<15>,
        _ => bf16_rows::<16>,
    }
}

/// The bf16 row kernel under the target features `$features`, its 64 lanes' indices prepared
/// by `$index` and `B`'s lanes picked by `$permute` (two forms: below).
macro_rules! bf16_rows_kernel {
    ($(#[$doc:meta])* $name:ident, $features:literal, $index:expr, $permute:expr) => {
    $(#[$doc])*
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = $features)]
    unsafe fn $name<const N: usize>(
        a: SemiRef<'_, half::bf16>,
        b: &[half::bf16],
        (r0, r1): (usize, usize),
        out: &Out<f32>,
    ) {
        use core::arch::x86_64::*;
        let cols = a.layout().cols();
        let (words, half) = (cols.div_ceil(WORD_COLUMNS), cols / 2);
        let (meta, vals) = (a.layout().meta(), a.vals());
        assert!(cols.is_multiple_of(64) && b.len() >= N * cols && meta.len() >= r1 * words && vals.len() >= r1 * half);
        // Lane i of a step (its i-th kept value) reads word i / 8 of the step's four, shifted by
        // 2 (i % 8), masked to its slot, in group i / 2.
        let word_of: __m512i = _mm512_set_epi16(
            3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0,
        );
        let shifts: __m512i = _mm512_set_epi16(
            14, 12, 10, 8, 6, 4, 2, 0, 14, 12, 10, 8, 6, 4, 2, 0, 14, 12, 10, 8, 6, 4, 2, 0, 14, 12, 10, 8, 6, 4, 2, 0,
        );
        let base: __m512i = _mm512_set_epi16(
            60, 60, 56, 56, 52, 52, 48, 48, 44, 44, 40, 40, 36, 36, 32, 32, 28, 28, 24, 24, 20, 20, 16, 16, 12, 12, 8, 8,
            4, 4, 0, 0,
        );
        let three = _mm512_set1_epi16(3);
        let steps = cols / 64;
        let slab = (24 * 1024 / (2 * 64 * N)).max(1);
        let mut part = vec![[_mm512_setzero_ps(); N]; r1 - r0];
        for s0 in (0..steps).step_by(slab) {
            for r in r0..r1 {
                let (w, v) = (&meta[r * words..(r + 1) * words], &vals[r * half..(r + 1) * half]);
                let (next_v, next_w) =
                    (vals.as_ptr().wrapping_add((r + AHEAD) * half), meta.as_ptr().wrapping_add((r + AHEAD) * words));
                let step = |st: usize, acc: &mut [__m512; N]| {
                    if r + AHEAD < r1 {
                        // As `block_avx512`: the slab's runs are too short for the hardware prefetcher.
                        _mm_prefetch::<_MM_HINT_T0>(next_v.wrapping_add(32 * st) as *const i8);
                        _mm_prefetch::<_MM_HINT_T0>(next_w.wrapping_add(4 * st) as *const i8);
                    }
                    let quad = w[4 * st..4 * st + 4]
                        .iter()
                        .enumerate()
                        .fold(0u64, |q, (i, &x)| q | ((x as u16 as u64) << (16 * i)));
                    let words4 = _mm512_permutexvar_epi16(word_of, _mm512_set1_epi64(quad as i64));
                    let idx = $index(_mm512_add_epi16(_mm512_and_si512(_mm512_srlv_epi16(words4, shifts), three), base));
                    let at = v[32 * st..32 * st + 32].as_ptr() as *const __m512i;
                    // SAFETY: values 32 st..32 st + 32 of the row (sliced above), read as a
                    // 512-bit vector of plain bits (32 bf16 lanes).
                    let kept: __m512bh = unsafe { core::mem::transmute(_mm512_loadu_si512(at as *const _)) };
                    for (m, am) in acc.iter_mut().enumerate() {
                        // SAFETY: columns 64 st..64 st + 64 <= cols of row m < N of `b` (asserted).
                        let (x0, x1) = unsafe {
                            let x = b.as_ptr().add(m * cols + 64 * st) as *const __m512i;
                            (_mm512_loadu_si512(x as *const _), _mm512_loadu_si512(x.add(1) as *const _))
                        };
                        // SAFETY: both are 512-bit vectors of plain bits (32 bf16 lanes).
                        let xs: __m512bh = unsafe { core::mem::transmute($permute(x0, idx, x1)) };
                        *am = _mm512_dpbf16_ps(*am, kept, xs);
                    }
                };
                let (mut acc, mut st, end) = (part[r - r0], s0, (s0 + slab).min(steps));
                if N <= 2 {
                    // One or two rows of `B` leave one or two chains of dot products, each step
                    // waiting on the last (`vdpbf16ps` takes about 7 cycles, the step's other
                    // work 2-4): the odd steps sum in a second chain, added at the slab's end.
                    let mut odd = [_mm512_setzero_ps(); N];
                    while st + 1 < end {
                        step(st, &mut acc);
                        step(st + 1, &mut odd);
                        st += 2;
                    }
                    for (a, o) in acc.iter_mut().zip(odd) {
                        *a = _mm512_add_ps(*a, o);
                    }
                }
                while st < end {
                    step(st, &mut acc);
                    st += 1;
                }
                part[r - r0] = acc;
            }
        }
        for r in r0..r1 {
            for (m, am) in part[r - r0].iter().enumerate() {
                // SAFETY: m < N, r in r0..r1 (the caller's promise).
                unsafe { out.put(m, r, _mm512_reduce_add_ps(*am)) };
            }
        }
    }
    };
}

bf16_rows_kernel!(
    /// Rows `r0..r1` of `A` (bf16) against the `N` bf16 rows of `b`, 64 columns (32 kept
    /// values) a step, in column slabs as `block_avx512`: `B`'s 16-bit lanes picked by a
    /// two-register 16-bit permute.
    ///
    /// # Safety
    /// The CPU supports AVX-512F, BW and BF16 (checked by [`semi_mm_narrow_bf16`]); `cols` is
    /// a multiple of 64; as [`block`] for the writes.
    bf16_rows,
    "avx512f,avx512bw,avx512bf16",
    |idx| idx,
    |x0, idx, x1| _mm512_permutex2var_epi16(x0, idx, x1)
);

bf16_rows_kernel!(
    /// [`bf16_rows`] with the lanes picked by the byte permute of AVX512_VBMI: each 16-bit
    /// index `i` becomes the byte pair `2 i, 2 i + 1`. The 16-bit permute is three
    /// micro-operations (two cycles a permute) on Intel's cores, the byte permute one.
    ///
    /// # Safety
    /// As [`bf16_rows`], and the CPU supports AVX512_VBMI.
    bf16_rows_vbmi,
    "avx512f,avx512bw,avx512bf16,avx512vbmi",
    |idx| _mm512_or_si512(_mm512_slli_epi16::<1>(idx), _mm512_add_epi16(_mm512_slli_epi16::<9>(idx), _mm512_set1_epi16(0x100))),
    |x0, bytes, x1| _mm512_permutex2var_epi8(x0, bytes, x1)
);

#[cfg(test)]
mod tests;
