//! bf16 kept values against a bf16 `B` (`semi_mm_narrow_bf16`): with AVX512_BF16, 64 columns a
//! step, one 16-bit permute and one `vdpbf16ps` per row of `B`; elsewhere through the f32 walk.

use super::*;

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
pub(super) fn bf16_rows_of_n(n: usize) -> Kernel<half::bf16, half::bf16, f32> {
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
