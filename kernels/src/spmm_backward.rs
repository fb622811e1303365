//! The fused backward of a CSR product: both gradients of `out = A · X` in one pass.
//!
//! Separately, `dvalues = SDDMM(G, X)` and `dX = Aᵀ · G` each gather a row of `G` per stored
//! entry — the gathers are what the products cost. Walked in the order of the transposed
//! pattern (column `c` of `A` at a time), both need the same row: entry `j` at `(r, c)` adds
//! `v_j · G[r]` to `dX[c]` and gives `dv_j = G[r] · X[c]`, so one gather serves both, `X[c]`
//! and the `dX[c]` accumulators stay in registers across the column, and each `dX` row is
//! written once by the task that owns it (no atomics). `out = Aᵀ · X` has the same structure
//! on the pattern itself (row `r` of `A`: `dX[r] += v_j · G[c]`, `dv_j = X[r] · G[c]`).
//!
//! Walked through the transposed pattern, the values and their gradients sit in another order
//! than the walk's. Where the gathered rows of `G` stay in cache, the pass's only misses are the
//! permuted value reads and gradient writes, and they overlap best in separate passes: the
//! values are gathered into walk order before and the gradients back after (the 4096 x 128
//! backward at 10 % took 35 % less). Where the rows of `G` miss anyway (100k x 64), the permuted
//! accesses hide under those misses, and separate passes only add traffic: the pass reads and
//! writes through the permutation itself (10 % faster there).

use crate::alloc::out_len;
use crate::index::IndexElem;
use crate::pattern::{balanced_row_blocks, CscPattern, CsrPattern, SendPtr};
use crate::real::Real;
use crate::scratch::{gather_into, Scratch};
use crate::simd::{cast, fmadd, isa, prefetch_row, Isa, PREFETCH};
use core::mem::MaybeUninit;
use macerator::{vload_unaligned, vstore_unaligned, with_simd, Simd};
use rayon::prelude::*;

/// A compressed pattern walked by its compressed dimension.
pub enum Walk<'a, I, J> {
    /// A pattern walked by its rows (segments); values in storage order.
    InOrder(CsrPattern<'a, I, J>),
    /// The CSC view of a CSR pattern; values in CSR (storage) order.
    Transposed(&'a CscPattern),
}

/// Where a pass writes each entry's value gradient.
enum Sink<'a, T> {
    /// In walk order: the gradients of this block's entries, from its first.
    Block(&'a mut [MaybeUninit<T>]),
    /// In storage order, at `perm[p]`: a [`CscPattern`]'s permutation of the entries, so tasks
    /// write disjoint places.
    Permuted(&'a [i64], &'a SendPtr<T>),
}

/// Lanes of the partial dot products (one AVX-512 register of f32).
const LANES: usize = 16;

/// Segments `[s0, s1)` of the walk `(ptr, idx)`, values `val` in walk order: `dx` rows for them
/// (`[(s1 - s0) * n]`) and `dv` for their entries (from `ptr[s0]`), each written once.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn segments<T: Real, I: IndexElem, J: IndexElem, const FMA: bool, const TILE: usize>(
    ptr: &[I],
    idx: &[J],
    val: &[T],
    g: &[T],
    x: &[T],
    n: usize,
    s0: usize,
    dx: &mut [MaybeUninit<T>],
    dv: &mut [MaybeUninit<T>],
) {
    let base = ptr[s0].to_i64() as usize;
    let mut dots: Vec<T> = Vec::new();
    for s in s0..s0 + dx.len() / n.max(1) {
        let (b, e) = (ptr[s].to_i64() as usize, ptr[s + 1].to_i64() as usize);
        dots.clear();
        dots.resize(e - b, T::default());
        let xr = &x[s * n..(s + 1) * n];
        let drow = &mut dx[(s - s0) * n..(s - s0 + 1) * n];
        let mut t0 = 0;
        while t0 < n {
            let w = TILE.min(n - t0);
            let mut acc = [T::default(); TILE];
            if w == TILE {
                let xt: &[T; TILE] = xr[t0..t0 + TILE].try_into().expect("tile");
                for p in b..e {
                    prefetch_row(g, idx, p + PREFETCH, n, t0, TILE);
                    let gr: &[T; TILE] = g[idx[p].to_i64() as usize * n + t0..][..TILE].try_into().expect("tile");
                    let v = val[p];
                    // Four independent lane accumulators for the dot product, as the SDDMM
                    // kernel: one would chain every multiply-add on the previous one's latency.
                    let mut lanes = [[T::default(); LANES]; 4];
                    for c in 0..TILE / LANES {
                        for (l, lane) in lanes[c % 4].iter_mut().enumerate() {
                            let t = c * LANES + l;
                            acc[t] = if FMA { T::mul_add(v, gr[t], acc[t]) } else { acc[t] + v * gr[t] };
                            *lane = if FMA { T::mul_add(gr[t], xt[t], *lane) } else { *lane + gr[t] * xt[t] };
                        }
                    }
                    let mut lanes: [T; LANES] =
                        core::array::from_fn(|l| (lanes[0][l] + lanes[1][l]) + (lanes[2][l] + lanes[3][l]));
                    let mut width = LANES / 2;
                    while width > 0 {
                        for t in 0..width {
                            lanes[t] = lanes[t] + lanes[t + width];
                        }
                        width /= 2;
                    }
                    dots[p - b] = dots[p - b] + lanes[0];
                }
            } else {
                for p in b..e {
                    let gr = &g[idx[p].to_i64() as usize * n + t0..][..w];
                    let v = val[p];
                    let mut dot = T::default();
                    for t in 0..w {
                        acc[t] = acc[t] + v * gr[t];
                        dot = dot + gr[t] * xr[t0 + t];
                    }
                    dots[p - b] = dots[p - b] + dot;
                }
            }
            for (o, &a) in drow[t0..t0 + w].iter_mut().zip(&acc[..w]) {
                o.write(a);
            }
            t0 += w;
        }
        for (o, &d) in dv[b - base..e - base].iter_mut().zip(&dots) {
            o.write(d);
        }
    }
}

/// `segments` for f32 with AVX-512 intrinsics, `n` a multiple of `16 V`: `V` vectors of `dX`
/// accumulators and of the `X` row stay in registers across a segment, the dot product runs in
/// two chains and reduces with one instruction sequence (the portable reduction through an
/// array costs more than the multiply-adds, as in the SDDMM kernel).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
unsafe fn segments_f32_avx512<I: IndexElem, J: IndexElem, const V: usize>(
    ptr: &[I],
    idx: &[J],
    val: &[f32],
    g: &[f32],
    x: &[f32],
    n: usize,
    s0: usize,
    dx: &mut [MaybeUninit<f32>],
    mut sink: Sink<'_, f32>,
) {
    use core::arch::x86_64::*;
    let base = ptr[s0].to_i64() as usize;
    // Values and gradients through the permutation, or in walk order.
    let perm = match sink {
        Sink::Permuted(perm, _) => Some(perm),
        Sink::Block(_) => None,
    };
    let mut dots: Vec<f32> = Vec::new();
    for s in s0..s0 + dx.len() / n {
        let (b, e) = (ptr[s].to_i64() as usize, ptr[s + 1].to_i64() as usize);
        dots.clear();
        dots.resize(e - b, 0.0);
        let mut t0 = 0;
        while t0 < n {
            // The loads and stores: t0 + 16 V <= n, so every vector lies inside its row.
            let xp = x[s * n + t0..].as_ptr();
            // SAFETY: `xp` starts column t0 of row s of `x [len, n]` (a checked slice start, s <
            // len), and t0 + 16 V <= n: the 16 V floats read lie in the row.
            let xt: [__m512; V] = core::array::from_fn(|q| unsafe { _mm512_loadu_ps(xp.add(16 * q)) });
            let mut acc = [_mm512_setzero_ps(); V];
            let v_at = |p: usize| _mm512_set1_ps(val[perm.map_or(p, |q| q[p] as usize)]);
            let g_at = |p: usize| g[idx[p].to_i64() as usize * n + t0..][..16 * V].as_ptr();
            // One entry: its G row into the accumulators, and its dot product with the X row.
            let entry = |p: usize, acc: &mut [__m512; V]| -> __m512 {
                prefetch_row(g, idx, p + PREFETCH, n, t0, 16 * V);
                // Through the permutation, the value read and the gradient written are random
                // accesses too: fetch their lines ahead with the row of G.
                if let (Some(&q), Sink::Permuted(_, out)) = (perm.and_then(|q| q.get(p + PREFETCH)), &sink) {
                    _mm_prefetch::<_MM_HINT_T0>(val.as_ptr().wrapping_add(q as usize) as *const i8);
                    _mm_prefetch::<_MM_HINT_T0>(out.0.wrapping_add(q as usize) as *const i8);
                }
                let (gp, v) = (g_at(p), v_at(p));
                let mut d = [_mm512_setzero_ps(); 2];
                for q in 0..V {
                    // SAFETY: `gp` starts a checked slice of 16 V elements of G's row.
                    let gq = unsafe { _mm512_loadu_ps(gp.add(16 * q)) };
                    acc[q] = _mm512_fmadd_ps(v, gq, acc[q]);
                    d[q % 2] = _mm512_fmadd_ps(gq, xt[q], d[q % 2]);
                }
                _mm512_add_ps(d[0], d[1])
            };
            let mut p = b;
            // Four entries at a time share one transposed reduction of their dot products.
            while p + 4 <= e {
                let (d0, d1, d2, d3) =
                    (entry(p, &mut acc), entry(p + 1, &mut acc), entry(p + 2, &mut acc), entry(p + 3, &mut acc));
                let sums = crate::simd::reduce4(d0, d1, d2, d3);
                let mut four = [0.0f32; 4];
                // SAFETY: `four` holds the 4 floats stored.
                unsafe { _mm_storeu_ps(four.as_mut_ptr(), sums) };
                for (i, v) in four.iter().enumerate() {
                    dots[p - b + i] += v;
                }
                p += 4;
            }
            while p < e {
                dots[p - b] += _mm512_reduce_add_ps(entry(p, &mut acc));
                p += 1;
            }
            let out = dx[(s - s0) * n + t0..].as_mut_ptr() as *mut f32;
            for (q, a) in acc.iter().enumerate() {
                // SAFETY: `out` starts at column t0 of this segment's `dx` row (a checked slice
                // start) and t0 + 16 V <= n, so the 16 V floats stored stay inside the row.
                unsafe { _mm512_storeu_ps(out.add(16 * q), *a) };
            }
            t0 += 16 * V;
        }
        match &mut sink {
            Sink::Block(dv) => {
                for (o, &d) in dv[b - base..e - base].iter_mut().zip(&dots) {
                    o.write(d);
                }
            }
            Sink::Permuted(perm, out) => {
                for (p, &d) in (b..e).zip(&dots) {
                    let q = perm[p] as usize;
                    // SAFETY: a `CscPattern`'s permutation of the entries, whose count the
                    // caller checked against the output's: each place is written once.
                    unsafe { out.at(q).write(d) };
                }
            }
        }
    }
}

/// [`segments`] with `V` vectors of `dX` accumulators and of the `X` row in registers across a
/// segment, one kernel body for every instruction set (the twin of [`segments_f32_avx512`]
/// without its four-at-a-time reduction); `n` a multiple of `V · lanes`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn segments_regs<S: Simd, T: Real, I: IndexElem, J: IndexElem, const V: usize>(
    ptr: &[I],
    idx: &[J],
    val: &[T],
    g: &[T],
    x: &[T],
    n: usize,
    s0: usize,
    dx: &mut [MaybeUninit<T>],
    dv: &mut [MaybeUninit<T>],
) {
    let lanes = T::lanes::<S>();
    let tile = V * lanes;
    let zero = T::default().splat::<S>();
    let base = ptr[s0].to_i64() as usize;
    let mut dots: Vec<T> = Vec::new();
    for s in s0..s0 + dx.len() / n {
        let (b, e) = (ptr[s].to_i64() as usize, ptr[s + 1].to_i64() as usize);
        dots.clear();
        dots.resize(e - b, T::default());
        let mut t0 = 0;
        while t0 + tile <= n {
            let xr = &x[s * n + t0..][..tile];
            let (mut xt, mut acc) = ([zero; V], [zero; V]);
            for (q, xq) in xt.iter_mut().enumerate() {
                // SAFETY: lanes q · lanes..(q + 1) · lanes of the checked tile.
                *xq = unsafe { vload_unaligned::<S, T>(xr.as_ptr().add(q * lanes)) };
            }
            for p in b..e {
                prefetch_row(g, idx, p + PREFETCH, n, t0, tile);
                let gr = &g[idx[p].to_i64() as usize * n + t0..][..tile];
                let v = val[p].splat::<S>();
                // The dot product in two chains: one would wait on every multiply-add.
                let (mut d0, mut d1) = (zero, zero);
                for q in 0..V {
                    // SAFETY: as above, in the checked tile of G's row.
                    let gq = unsafe { vload_unaligned::<S, T>(gr.as_ptr().add(q * lanes)) };
                    acc[q] = fmadd(v, gq, acc[q]);
                    if q % 2 == 0 {
                        d0 = fmadd(gq, xt[q], d0);
                    } else {
                        d1 = fmadd(gq, xt[q], d1);
                    }
                }
                dots[p - b] = dots[p - b] + (d0 + d1).reduce_add();
            }
            let out = &mut dx[(s - s0) * n + t0..][..tile];
            for (q, a) in acc.iter().enumerate() {
                // SAFETY: lanes q · lanes..(q + 1) · lanes of the checked tile of this segment's
                // `dx` row (`MaybeUninit<T>` has `T`'s layout).
                unsafe { vstore_unaligned::<S, T>(out.as_mut_ptr().add(q * lanes) as *mut T, *a) };
            }
            t0 += tile;
        }
        for (o, &d) in dv[b - base..e - base].iter_mut().zip(&dots) {
            o.write(d);
        }
    }
}

/// A pass on the path's architecture: [`segments_regs`] with four vectors where `n` is a
/// multiple of their width (eight would spill AVX2's 16 registers: the `X` row's vectors sit
/// beside the accumulators), the scalar fallback included (its two-lane vectors beat the
/// compiler's loop here, 200-245 ms against 422 on the 4096 x 4096 backward at 10 %),
/// [`segments`] otherwise.
#[with_simd(on(arch = crate::simd::arch()))]
#[allow(clippy::too_many_arguments)]
fn segments_simd<'a, S: Simd, T: Real, I: IndexElem, J: IndexElem>(
    ptr: &'a [I],
    idx: &'a [J],
    val: &'a [T],
    g: &'a [T],
    x: &'a [T],
    n: usize,
    s0: usize,
    dx: &'a mut [MaybeUninit<T>],
    dv: &'a mut [MaybeUninit<T>],
) {
    let lanes = T::lanes::<S>();
    if n > 0 && n.is_multiple_of(4 * lanes) {
        segments_regs::<S, T, I, J, 4>(ptr, idx, val, g, x, n, s0, dx, dv)
    } else if <T as macerator::VFma>::is_accelerated::<S>() {
        segments::<T, I, J, true, 32>(ptr, idx, val, g, x, n, s0, dx, dv)
    } else {
        segments::<T, I, J, false, 32>(ptr, idx, val, g, x, n, s0, dx, dv)
    }
}

/// Whether [`segments_f32_avx512`] runs a pass of width `n` over `T`.
fn avx512_f32<T: 'static>(n: usize) -> bool {
    core::any::TypeId::of::<T>() == core::any::TypeId::of::<f32>()
        && n > 0
        && n.is_multiple_of(64)
        && isa() == Isa::Avx512
}

#[allow(clippy::too_many_arguments)]
fn segments_dispatch<T: Real, I: IndexElem, J: IndexElem>(
    ptr: &[I],
    idx: &[J],
    val: &[T],
    g: &[T],
    x: &[T],
    n: usize,
    s0: usize,
    dx: &mut [MaybeUninit<T>],
    dv: &mut [MaybeUninit<T>],
) {
    #[cfg(target_arch = "x86_64")]
    if avx512_f32::<T>(n) {
        // SAFETY: T is f32 (`avx512_f32` checked it): the same type, the same layout.
        let (val, g, x) = unsafe { (cast::<T, f32>(val), cast::<T, f32>(g), cast::<T, f32>(x)) };
        // SAFETY: as above.
        let dx = unsafe { core::slice::from_raw_parts_mut(dx.as_mut_ptr() as *mut MaybeUninit<f32>, dx.len()) };
        // SAFETY: as above.
        let dv = unsafe { core::slice::from_raw_parts_mut(dv.as_mut_ptr() as *mut MaybeUninit<f32>, dv.len()) };
        // SAFETY: `isa` detected AVX-512F and `n` is a multiple of 64 (`avx512_f32`).
        return unsafe { segments_f32_avx512_width(ptr, idx, val, g, x, n, s0, dx, Sink::Block(dv)) };
    }
    #[cfg(target_arch = "x86_64")]
    if isa() == Isa::Avx512 {
        #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
        unsafe fn avx512<T: Real, I: IndexElem, J: IndexElem, const TILE: usize>(
            ptr: &[I],
            idx: &[J],
            val: &[T],
            g: &[T],
            x: &[T],
            n: usize,
            s0: usize,
            dx: &mut [MaybeUninit<T>],
            dv: &mut [MaybeUninit<T>],
        ) {
            segments::<T, I, J, true, TILE>(ptr, idx, val, g, x, n, s0, dx, dv)
        }
        // SAFETY: `isa` detected the features the functions were compiled for.
        return unsafe {
            if core::mem::size_of::<T>() == 4 && n.is_multiple_of(128) {
                avx512::<T, I, J, 128>(ptr, idx, val, g, x, n, s0, dx, dv)
            } else {
                avx512::<T, I, J, 64>(ptr, idx, val, g, x, n, s0, dx, dv)
            }
        };
    }
    // SAFETY: `simd::arch` is an architecture this CPU supports.
    unsafe { segments_simd(ptr, idx, val, g, x, n, s0, dx, dv) }
}

/// [`segments_f32_avx512`] with `V` for `n` (eight registers where `n` is a multiple of 128).
///
/// # Safety
/// The CPU supports AVX-512F and `n` is a multiple of 64.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
unsafe fn segments_f32_avx512_width<I: IndexElem, J: IndexElem>(
    ptr: &[I],
    idx: &[J],
    val: &[f32],
    g: &[f32],
    x: &[f32],
    n: usize,
    s0: usize,
    dx: &mut [MaybeUninit<f32>],
    sink: Sink<'_, f32>,
) {
    // SAFETY: AVX-512F and n a multiple of 64 (the caller's promise), of 128 for V = 8.
    unsafe {
        if n.is_multiple_of(128) {
            segments_f32_avx512::<I, J, 8>(ptr, idx, val, g, x, n, s0, dx, sink)
        } else {
            segments_f32_avx512::<I, J, 4>(ptr, idx, val, g, x, n, s0, dx, sink)
        }
    }
}

/// The pass over a CSC view with the values read and their gradients written through its
/// permutation (f32, AVX-512), in parallel over blocks of columns: `dv` in storage order.
#[cfg(target_arch = "x86_64")]
fn walk_permuted(
    csc: &CscPattern,
    val: &[f32],
    g: &[f32],
    x: &[f32],
    n: usize,
    dx: &mut [MaybeUninit<f32>],
    dv: &mut [MaybeUninit<f32>],
) {
    let ptr = csc.ccol();
    let cuts = balanced_row_blocks(ptr, rayon::current_num_threads() * 16);
    let mut parts = Vec::with_capacity(cuts.len());
    let mut rest = dx;
    for w in cuts.windows(2) {
        let (head, tail) = rest.split_at_mut((w[1] - w[0]) * n);
        parts.push((w[0], head));
        rest = tail;
    }
    let out = SendPtr(dv.as_mut_ptr() as *mut f32);
    // SAFETY: the caller runs this on AVX-512 CPUs with `n` a multiple of 64; the permutation
    // covers `dv` (checked by the caller).
    parts.into_par_iter().for_each(|(s0, px)| unsafe {
        crate::on_transposed!(csc.as_csr(), |t| {
            segments_f32_avx512_width(ptr, t.idx(), val, g, x, n, s0, px, Sink::Permuted(csc.perm(), &out))
        })
    });
}

/// Bytes of gathered rows from which they miss the cache anyway (the two cores' L2 here), so a
/// pass through a permutation reads and writes through it in place.
const PERMUTE_IN_PASS_FROM: usize = 4 << 20;

/// The pass over `(ptr, idx)` with values and their gradients `dv` in walk order, in parallel
/// over blocks of segments with about equal entries.
#[allow(clippy::too_many_arguments)]
fn walk_in_order<T: Real, I: IndexElem, J: IndexElem>(
    ptr: &[I],
    idx: &[J],
    val: &[T],
    g: &[T],
    x: &[T],
    n: usize,
    dx: &mut [MaybeUninit<T>],
    dv: &mut [MaybeUninit<T>],
) {
    let cuts = balanced_row_blocks(ptr, rayon::current_num_threads() * 16);
    let mut parts = Vec::with_capacity(cuts.len());
    let (mut rest_x, mut rest_v) = (dx, dv);
    for w in cuts.windows(2) {
        let entries = (ptr[w[1]].to_i64() - ptr[w[0]].to_i64()) as usize;
        let (hx, tx) = rest_x.split_at_mut((w[1] - w[0]) * n);
        let (hv, tv) = rest_v.split_at_mut(entries);
        parts.push((w[0], hx, hv));
        (rest_x, rest_v) = (tx, tv);
    }
    parts.into_par_iter().for_each(|(s0, px, pv)| segments_dispatch(ptr, idx, val, g, x, n, s0, px, pv));
}

/// Both gradients of a product over `walk` (`len` segments), as one buffer: `dx [len, n]` then
/// `dv [nnz]` in values order; from the output gradient rows `g` (`[width, n]`, indexed by the
/// walk's plain index in `0..width`) and the operand rows `x [len, n]`. Every element is written
/// once.
///
/// # Panics
/// If `val` is not one value per entry, `x` not `[len, n]` or `g` not `[width, n]`.
pub fn spmm_backward<T: Real, I: IndexElem, J: IndexElem>(
    walk: &Walk<'_, I, J>,
    val: &[T],
    g: &[T],
    x: &[T],
    n: usize,
) -> Vec<T> {
    let pattern = match walk {
        Walk::InOrder(a) => (a.nrows(), a.nnz(), a.ncols()),
        Walk::Transposed(csc) => crate::on_transposed!(csc.as_csr(), |t| (t.nrows(), t.nnz(), t.ncols())),
    };
    let (len, nnz, width) = pattern;
    assert_eq!(val.len(), nnz, "spmm backward: one value per stored entry");
    assert_eq!(x.len(), out_len(len, n, "spmm backward: x"), "spmm backward: x is [len, n] = [{len}, {n}]");
    assert_eq!(g.len(), out_len(width, n, "spmm backward: g"), "spmm backward: g is [width, n] = [{width}, {n}]");
    let total =
        out_len(len, n, "spmm backward: dx").checked_add(nnz).expect("spmm backward: gradient length overflows usize");
    let mut out: Vec<T> = Vec::with_capacity(total);
    if n == 0 {
        out.resize(total, T::default());
        return out;
    }
    let (dx, dv) = out.spare_capacity_mut()[..total].split_at_mut(len * n);
    match walk {
        Walk::InOrder(a) => walk_in_order(a.ptr(), a.idx(), val, g, x, n, dx, dv),
        Walk::Transposed(csc) => {
            #[cfg(target_arch = "x86_64")]
            if avx512_f32::<T>(n) && core::mem::size_of_val(g) >= PERMUTE_IN_PASS_FROM {
                // SAFETY: T is f32 (`avx512_f32` checked it): the same type, the same layout.
                let (val, g, x) = unsafe { (cast::<T, f32>(val), cast::<T, f32>(g), cast::<T, f32>(x)) };
                // SAFETY: as above.
                let dx = unsafe { core::slice::from_raw_parts_mut(dx.as_mut_ptr() as *mut MaybeUninit<f32>, dx.len()) };
                // SAFETY: as above.
                let dv = unsafe { core::slice::from_raw_parts_mut(dv.as_mut_ptr() as *mut MaybeUninit<f32>, dv.len()) };
                walk_permuted(csc, val, g, x, n, dx, dv);
                // SAFETY: the blocks cover every `dx` row, and the permutation every gradient.
                unsafe { out.set_len(total) };
                return out;
            }
            let wval = Scratch::gathered(val, csc.perm());
            // SAFETY: the segments cover every entry of the walk; each gradient is written.
            let wdv = unsafe {
                Scratch::filled(nnz, |wdv| {
                    crate::on_transposed!(csc.as_csr(), |t| walk_in_order(
                        t.ptr(),
                        t.idx(),
                        wval.get(),
                        g,
                        x,
                        n,
                        dx,
                        wdv
                    ))
                })
            };
            gather_into(wdv.get(), csc.inv(), dv);
        }
    }
    // SAFETY: the walk's pattern is valid (a `CsrPattern`, or a `CscPattern` built from one):
    // its segments run from entry 0 to entry nnz, so the blocks cover every `dx` row and every
    // entry's gradient, each written once.
    unsafe { out.set_len(total) };
    out
}

#[cfg(test)]
mod tests;
