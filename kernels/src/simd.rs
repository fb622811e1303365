//! The one place the CPU is asked what it supports ([`isa`], detected once), and the pieces
//! every vectorised kernel shares: the macerator architecture of the chosen path ([`arch`]),
//! which kernel bodies written once over `macerator::Simd` run on (AVX-512, AVX2+FMA, NEON or
//! scalar), the multiply-add they share (`fmadd`), the multiversioning macro that compiles a portable kernel
//! body for AVX-512 and AVX2+FMA and picks the variant at run time, the prefetch of a gathered
//! row, f32 views of generic slices for the hand-written AVX-512 kernels, and the four-way
//! horizontal reduction.

use crate::index::IndexElem;
use core::mem::MaybeUninit;
use std::sync::OnceLock;

/// The vector instruction sets a kernel can be compiled for, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    /// AVX-512 F and VL (with AVX2 and FMA).
    Avx512,
    /// AVX2 with FMA.
    Avx2Fma,
    /// Anything else: the portable kernels.
    Portable,
}

impl Isa {
    /// The name `SPARSEGRAD_ISA` takes for this path.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Avx512 => "avx512",
            Isa::Avx2Fma => "avx2",
            Isa::Portable => "portable",
        }
    }

    /// Every path, best first.
    pub const ALL: [Isa; 3] = [Isa::Avx512, Isa::Avx2Fma, Isa::Portable];
}

impl core::fmt::Display for Isa {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// The environment variable that picks a path other than the best the CPU has (to measure or
/// test the AVX2 and portable kernels on an AVX-512 machine): `avx512`, `avx2` or `portable`.
pub const ISA_VAR: &str = "SPARSEGRAD_ISA";

/// Why `SPARSEGRAD_ISA` cannot be followed: an unknown name, or a path this CPU lacks (running
/// it would execute instructions the CPU does not have).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsaError {
    /// The value of the variable.
    pub requested: String,
    /// The paths this CPU supports, best first.
    pub supported: Vec<Isa>,
}

impl core::fmt::Display for IsaError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let names: Vec<&str> = self.supported.iter().map(|i| i.name()).collect();
        write!(f, "{ISA_VAR}={:?}: ", self.requested)?;
        if Isa::ALL.iter().any(|i| i.name() == self.requested.trim()) {
            write!(f, "this CPU lacks that path")?;
        } else {
            write!(f, "not a path (avx512, avx2 or portable)")?;
        }
        write!(f, "; this CPU supports {}", names.join(", "))
    }
}

impl std::error::Error for IsaError {}

/// The paths this CPU can run, best first (`Portable` always).
///
/// From macerator's detection, so that a path is offered exactly when the macerator
/// architecture it runs on is available: `avx512` is x86-64-v4 (AVX-512 F, VL, BW, DQ, CD on
/// top of v3), `avx2` is x86-64-v3 (AVX2, FMA, F16C, BMI1/2, LZCNT, MOVBE).
pub fn supported() -> Vec<Isa> {
    let mut paths = Vec::with_capacity(3);
    #[cfg(target_arch = "x86_64")]
    match macerator::Arch::detect() {
        macerator::Arch::V4 => paths.extend([Isa::Avx512, Isa::Avx2Fma]),
        macerator::Arch::V3 => paths.push(Isa::Avx2Fma),
        _ => {}
    }
    paths.push(Isa::Portable);
    paths
}

/// The macerator architecture a path runs on: x86-64-v4 for `avx512`, v3 for `avx2`; for
/// `portable`, scalar code on x86 and the best the CPU has elsewhere (NEON on aarch64, which
/// has no other path).
pub fn arch_of(isa: Isa) -> macerator::Arch {
    #[cfg(target_arch = "x86_64")]
    {
        match isa {
            Isa::Avx512 => macerator::Arch::V4,
            Isa::Avx2Fma => macerator::Arch::V3,
            Isa::Portable => macerator::Arch::Scalar,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = isa;
        macerator::Arch::detect()
    }
}

/// The macerator architecture of the path every kernel runs ([`isa`]). Kernel bodies generic
/// over `S: macerator::Simd` are dispatched on it with
/// `#[macerator::with_simd(on(arch = crate::simd::arch()))]`; that makes the dispatcher an
/// `unsafe fn`, whose callers rest on this: [`supported`] offers a path only where macerator
/// detected its architecture, and [`isa`] only a supported path.
pub fn arch() -> macerator::Arch {
    arch_of(isa())
}

/// `a * b + c` in a kernel body generic over the instruction set: fused where the architecture
/// has the instruction, a multiply and an add elsewhere (the scalar fallback would otherwise
/// call the C library's `fma` for each lane).
#[inline(always)]
pub(crate) fn fmadd<S: macerator::Simd, T: crate::real::Real>(
    a: macerator::Vector<S, T>,
    b: macerator::Vector<S, T>,
    c: macerator::Vector<S, T>,
) -> macerator::Vector<S, T> {
    if <T as macerator::VFma>::is_accelerated::<S>() {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// The path `SPARSEGRAD_ISA` asks for, checked against the CPU; the best the CPU has where the
/// variable is unset or empty.
pub fn select(requested: Option<&str>) -> Result<Isa, IsaError> {
    let supported = supported();
    match requested.map(str::trim).filter(|r| !r.is_empty()) {
        None => Ok(supported[0]),
        Some(name) => supported
            .iter()
            .copied()
            .find(|i| i.name() == name)
            .ok_or_else(|| IsaError { requested: name.to_owned(), supported }),
    }
}

/// [`select`] on the process's `SPARSEGRAD_ISA`: what a program calls at start, to report a
/// path the CPU lacks as an error before any kernel runs.
pub fn isa_checked() -> Result<Isa, IsaError> {
    select(std::env::var(ISA_VAR).ok().as_deref())
}

/// The path every kernel runs, chosen on the first call and kept: every kernel's choice of
/// variant, and every `unsafe` call of a `target_feature` function, rests on it. It is the best
/// the CPU has, or the one `SPARSEGRAD_ISA` names.
///
/// # Panics
/// If `SPARSEGRAD_ISA` names a path this CPU lacks (or no path): running it would execute
/// instructions the CPU does not have. Programs call [`isa_checked`] at start to report that as
/// an error instead.
pub fn isa() -> Isa {
    static ISA: OnceLock<Isa> = OnceLock::new();
    *ISA.get_or_init(|| isa_checked().unwrap_or_else(|e| panic!("{e}")))
}

/// Compiles the portable kernel `$body::<.., FMA>` for AVX-512 and for AVX2+FMA beside the plain
/// build, as `fn $name`, which runs the best variant [`isa`] allows.
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
                match $crate::simd::isa() {
                    // SAFETY: `isa` detected the features the function was compiled for.
                    $crate::simd::Isa::Avx512 => return unsafe { avx512::<$($g),*>($($arg),*) },
                    // SAFETY: as above.
                    $crate::simd::Isa::Avx2Fma => return unsafe { avx2::<$($g),*>($($arg),*) },
                    $crate::simd::Isa::Portable => {}
                }
            }
            $body::<$($g),*, false>($($arg),*)
        }
    };
    // The same with one const parameter after the type parameters (passed before `FMA`).
    ($(#[$m:meta])* fn $name:ident<$($g:ident: $b:path),*; const $c:ident: usize>($($arg:ident: $ty:ty),*) => $body:ident) => {
        $(#[$m])*
        fn $name<$($g: $b),*, const $c: usize>($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
                unsafe fn avx512<$($g: $b),*, const $c: usize>($($arg: $ty),*) { $body::<$($g),*, $c, true>($($arg),*) }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn avx2<$($g: $b),*, const $c: usize>($($arg: $ty),*) { $body::<$($g),*, $c, true>($($arg),*) }
                match $crate::simd::isa() {
                    // SAFETY: `isa` detected the features the function was compiled for.
                    $crate::simd::Isa::Avx512 => return unsafe { avx512::<$($g),*, $c>($($arg),*) },
                    // SAFETY: as above.
                    $crate::simd::Isa::Avx2Fma => return unsafe { avx2::<$($g),*, $c>($($arg),*) },
                    $crate::simd::Isa::Portable => {}
                }
            }
            $body::<$($g),*, $c, false>($($arg),*)
        }
    };
}
pub(crate) use multiversion;

/// Entries ahead at which the row gather prefetches: the rows of `X` an output row reads are
/// scattered, and the gather is latency-bound even when `X` fits in the last-level cache
/// (measured: 4096 x 128 gains 20 %, 100k x 64 gains 2x).
pub const PREFETCH: usize = 16;

/// Prefetches the tile of the `X` row that entry `j` will read (no-op past the end).
#[inline(always)]
pub fn prefetch_row<T, J: IndexElem>(x: &[T], col: &[J], j: usize, n: usize, t0: usize, width: usize) {
    if let Some(c) = col.get(j) {
        prefetch_range(x, c.to_i64() as usize * n + t0, width);
    }
}

/// Prefetches every line of `x[start..start + len]` (no-op where that is not inside `x`).
///
/// Every line, from the line of the first byte: burn's buffers start 16 bytes past a line, so
/// a row of 64 floats spans five lines, and prefetching four from its start left the fifth to
/// miss (measured: the fused backward on 100k x 64 ran 10 ms in a training step against 6.5 on
/// an aligned operand).
#[inline(always)]
pub(crate) fn prefetch_range<T>(x: &[T], start: usize, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let bytes = len * core::mem::size_of::<T>();
        if start.checked_add(len).is_some_and(|end| end <= x.len()) && bytes > 0 {
            let base = x[start..].as_ptr() as *const i8;
            let skew = base as usize % 64;
            let mut off = 0;
            while off < skew + bytes {
                // SAFETY: prefetching never faults, whatever the address; the pointer is formed
                // with wrapping arithmetic and never dereferenced.
                unsafe {
                    core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                        base.wrapping_sub(skew).wrapping_add(off),
                    )
                };
                off += 64;
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (x, start, len);
}

/// `p` itself, its address in a register the optimiser cannot see through: loads from it at
/// constant offsets then address it as base + displacement. (LLVM folds `base + i * stride`
/// into an indexed address, and Intel's cores split each memory-operand multiply-add with an
/// indexed address into two micro-operations: measured, the 2:4 product at M = 256 ran 10 %
/// faster without them.)
#[inline(always)]
pub(crate) fn opaque<T>(p: *const T) -> *const T {
    #[cfg(target_arch = "x86_64")]
    {
        let mut p = p;
        #[allow(clippy::pointers_in_nomem_asm_block)]
        // SAFETY: an empty template: no instruction runs, and nothing is read or written
        // through the pointer, which comes back unchanged (with its provenance).
        unsafe {
            core::arch::asm!("/* {0} */", inout(reg) p, options(pure, nomem, nostack, preserves_flags))
        };
        p
    }
    #[cfg(not(target_arch = "x86_64"))]
    p
}

/// `x` as `&[f32]` when `T` is `f32`.
pub(crate) fn as_f32<T: 'static>(x: &[T]) -> Option<&[f32]> {
    (core::any::TypeId::of::<T>() == core::any::TypeId::of::<f32>())
        // SAFETY: T is f32 (same type, same layout).
        .then(|| unsafe { core::slice::from_raw_parts(x.as_ptr() as *const f32, x.len()) })
}

/// `x` as `&mut [f32]` when `T` is `f32`.
pub(crate) fn as_f32_mut<T: 'static>(x: &mut [T]) -> Option<&mut [f32]> {
    (core::any::TypeId::of::<T>() == core::any::TypeId::of::<f32>())
        // SAFETY: T is f32 (same type, same layout).
        .then(|| unsafe { core::slice::from_raw_parts_mut(x.as_mut_ptr() as *mut f32, x.len()) })
}

/// `x` as `&mut [MaybeUninit<f32>]` when `T` is `f32`.
pub(crate) fn as_f32_uninit<T: 'static>(x: &mut [MaybeUninit<T>]) -> Option<&mut [MaybeUninit<f32>]> {
    (core::any::TypeId::of::<T>() == core::any::TypeId::of::<f32>())
        // SAFETY: T is f32 (same type, same layout).
        .then(|| unsafe { core::slice::from_raw_parts_mut(x.as_mut_ptr() as *mut MaybeUninit<f32>, x.len()) })
}

/// `x` viewed as `[U]`.
///
/// # Safety
/// `T` and `U` are the same type.
pub(crate) unsafe fn cast<T, U>(x: &[T]) -> &[U] {
    // SAFETY: `T` is `U` (the caller's promise): the same elements under another name.
    unsafe { core::slice::from_raw_parts(x.as_ptr() as *const U, x.len()) }
}

/// The horizontal sums of four vectors, as `[s0, s1, s2, s3]`: pairwise interleave-and-add
/// until each 128-bit lane holds the four partial sums of its quarter, then fold the quarters.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) fn reduce4(
    d0: core::arch::x86_64::__m512,
    d1: core::arch::x86_64::__m512,
    d2: core::arch::x86_64::__m512,
    d3: core::arch::x86_64::__m512,
) -> core::arch::x86_64::__m128 {
    use core::arch::x86_64::*;
    let x01 = _mm512_add_ps(_mm512_unpacklo_ps(d0, d1), _mm512_unpackhi_ps(d0, d1));
    let x23 = _mm512_add_ps(_mm512_unpacklo_ps(d2, d3), _mm512_unpackhi_ps(d2, d3));
    let (p01, p23) = (_mm512_castps_pd(x01), _mm512_castps_pd(x23));
    let y =
        _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(p01, p23)), _mm512_castpd_ps(_mm512_unpackhi_pd(p01, p23)));
    let z = _mm512_add_ps(y, _mm512_shuffle_f32x4::<0b0100_1110>(y, y));
    let w = _mm512_add_ps(z, _mm512_shuffle_f32x4::<0b1011_0001>(z, z));
    _mm512_castps512_ps128(w)
}

/// [`reduce4`] on 8-lane vectors: three in-lane pairwise additions (`vhaddps`) leave the four
/// sums of each 128-bit half side by side, and the halves add.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn reduce4_avx2(
    d0: core::arch::x86_64::__m256,
    d1: core::arch::x86_64::__m256,
    d2: core::arch::x86_64::__m256,
    d3: core::arch::x86_64::__m256,
) -> core::arch::x86_64::__m128 {
    use core::arch::x86_64::*;
    let h = _mm256_hadd_ps(_mm256_hadd_ps(d0, d1), _mm256_hadd_ps(d2, d3));
    _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps::<1>(h))
}

#[cfg(test)]
mod tests {
    use super::{arch, isa, select, supported, Isa};

    /// A kernel body dispatched on [`arch`] runs on the path [`isa`] chose: its f32 vectors are
    /// 16 lanes on `avx512`, 8 on `avx2`, and on `portable` at most 4 (x86's scalar fallback
    /// has 2; NEON, which aarch64 runs as `portable`, 4).
    #[test]
    fn kernel_bodies_run_the_chosen_path() {
        struct Lanes;
        impl macerator::WithSimd for Lanes {
            type Output = usize;
            fn with_simd<S: macerator::Simd>(self) -> usize {
                <f32 as macerator::Scalar>::lanes::<S>()
            }
        }
        // SAFETY: `arch` is the architecture of a path this CPU supports.
        let lanes = unsafe { arch().dispatch(Lanes) };
        match isa() {
            Isa::Avx512 => assert_eq!(lanes, 16),
            Isa::Avx2Fma => assert_eq!(lanes, 8),
            Isa::Portable => assert!(lanes <= 4, "{lanes} lanes on the portable path"),
        }
    }

    /// No request gives the best path; a supported name gives that path; an unknown name and a
    /// path the CPU lacks are errors that name the request and list what the CPU has.
    #[test]
    fn select_follows_the_request_within_what_the_cpu_has() {
        let paths = supported();
        assert_eq!(paths.last(), Some(&Isa::Portable));
        assert_eq!(select(None), Ok(paths[0]));
        assert_eq!(select(Some("  ")), Ok(paths[0]));
        for &isa in &paths {
            assert_eq!(select(Some(isa.name())), Ok(isa));
        }
        let e = select(Some("sse9")).unwrap_err();
        assert_eq!((e.requested.as_str(), &e.supported), ("sse9", &paths));
        assert!(e.to_string().contains("SPARSEGRAD_ISA=\"sse9\": not a path (avx512, avx2 or portable)"), "{e}");
        for isa in Isa::ALL.into_iter().filter(|i| !paths.contains(i)) {
            let e = select(Some(isa.name())).unwrap_err();
            assert!(e.to_string().contains("this CPU lacks that path"), "{e}");
        }
        let names: Vec<&str> = paths.iter().map(|i| i.name()).collect();
        assert!(e.to_string().ends_with(&format!("this CPU supports {}", names.join(", "))), "{e}");
    }
}
