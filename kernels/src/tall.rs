//! Kernels on tall thin dense matrices `[rows, q]` (row-major, `q` small): the host steps the
//! randomized SVD (`linalg::svd_lowrank`) runs between its sparse products. A sketch of a
//! hundred thousand rows is read once per step, in its own dtype, and transformed in place:
//! converting it to f64 and back around a library QR cost more than the sparse products.
//!
//! - [`gram`]: `Xᵀ X` accumulated in f64 (the products of f32 inputs are exact in f64);
//! - [`mul_small`] / [`mul_small_in_place`]: `X T` for a small `T [q, q]`, each row in f64;
//! - [`fill_standard_normal`]: independent N(0, 1) draws from a seed.
//!
//! Each runs in parallel over blocks of rows whose results do not depend on the number of
//! threads: partial Gram matrices are summed in block order, and every block of random draws
//! has its own stream derived from the seed and the block's index.

use crate::real::{axpy, Real};
use crate::rng::SplitMix64;
use crate::simd::multiversion;
use rayon::prelude::*;

/// Rows per parallel block (and elements per block of random draws).
const BLOCK: usize = 4096;

fn check(len: usize, rows: usize, q: usize, what: &str) {
    let n = rows.checked_mul(q).unwrap_or_else(|| panic!("{what}: [{rows}, {q}] overflows usize"));
    assert_eq!(len, n, "{what}: a buffer of {len} elements for [{rows}, {q}]");
}

/// `g += Xᵀ X` for a block of rows of `x` (`q` columns), `g [q, q]` row-major, in f64: each
/// row's outer product added a full row of `g` at a time (contiguous and of one length, so it
/// vectorises; the upper triangle alone, rows of falling length, ran slower).
/// Inlined into each variant of [`gram_block_dispatch`], so the multiply-adds are compiled for
/// its instruction set.
#[inline(always)]
fn gram_block<T: Real, const FMA: bool>(x: &[T], q: usize, g: &mut [f64]) {
    let mut row = vec![0.0f64; q];
    for r in x.chunks_exact(q) {
        for (d, &v) in row.iter_mut().zip(r) {
            *d = v.to_f64();
        }
        for (i, &xi) in row.iter().enumerate() {
            axpy::<f64, FMA>(&mut g[i * q..(i + 1) * q], xi, &row);
        }
    }
}

multiversion! {
    /// `gram_block` compiled for the best vector extension available.
    fn gram_block_dispatch<T: Real>(x: &[T], q: usize, g: &mut [f64]) => gram_block
}

/// `Xᵀ X` (`[q, q]`, row-major, symmetric) of the row-major `x [rows, q]`, accumulated in f64.
pub fn gram<T: Real>(x: &[T], rows: usize, q: usize) -> Vec<f64> {
    check(x.len(), rows, q, "gram");
    if q == 0 {
        return Vec::new();
    }
    let partial: Vec<Vec<f64>> = x
        .par_chunks(BLOCK * q)
        .map(|block| {
            let mut g = vec![0.0f64; q * q];
            gram_block_dispatch(block, q, &mut g);
            g
        })
        .collect();
    let mut g = vec![0.0f64; q * q];
    for p in &partial {
        for (a, b) in g.iter_mut().zip(p) {
            *a += b;
        }
    }
    g
}

/// One row times `t [q, q]` (row-major) in f64: `acc = row T`.
#[inline(always)]
fn row_times<const FMA: bool>(row: &[f64], t: &[f64], q: usize, acc: &mut [f64]) {
    acc.fill(0.0);
    for (i, &v) in row.iter().enumerate() {
        axpy::<f64, FMA>(acc, v, &t[i * q..(i + 1) * q]);
    }
}

/// `out = X T` for a block of rows (`q` columns, `t [q, q]` row-major), each row in f64.
/// Inlined as `gram_block`.
#[inline(always)]
fn mul_block<T: Real, const FMA: bool>(x: &[T], out: &mut [T], q: usize, t: &[f64]) {
    let (mut row, mut acc) = (vec![0.0f64; q], vec![0.0f64; q]);
    for (src, dst) in x.chunks_exact(q).zip(out.chunks_exact_mut(q)) {
        for (d, &v) in row.iter_mut().zip(src) {
            *d = v.to_f64();
        }
        row_times::<FMA>(&row, t, q, &mut acc);
        for (d, &a) in dst.iter_mut().zip(&acc) {
            *d = T::from_f64(a);
        }
    }
}

/// `x = X T` in place for a block of rows (each row read whole before it is written).
#[inline(always)]
fn mul_block_in_place<T: Real, const FMA: bool>(x: &mut [T], q: usize, t: &[f64]) {
    let (mut row, mut acc) = (vec![0.0f64; q], vec![0.0f64; q]);
    for r in x.chunks_exact_mut(q) {
        for (d, &v) in row.iter_mut().zip(r.iter()) {
            *d = v.to_f64();
        }
        row_times::<FMA>(&row, t, q, &mut acc);
        for (d, &a) in r.iter_mut().zip(&acc) {
            *d = T::from_f64(a);
        }
    }
}

multiversion! {
    /// `mul_block` compiled for the best vector extension available.
    fn mul_block_dispatch<T: Real>(x: &[T], out: &mut [T], q: usize, t: &[f64]) => mul_block
}

multiversion! {
    /// `mul_block_in_place` compiled for the best vector extension available.
    fn mul_block_in_place_dispatch<T: Real>(x: &mut [T], q: usize, t: &[f64]) => mul_block_in_place
}

/// `X T` (`[rows, q]`) for the row-major `x [rows, q]` and `t [q, q]` (row-major), each row
/// in f64: the step `Q = X R⁻¹` of a CholeskyQR.
pub fn mul_small<T: Real>(x: &[T], rows: usize, q: usize, t: &[f64]) -> Vec<T> {
    check(x.len(), rows, q, "mul_small");
    assert_eq!(t.len(), q * q, "mul_small: T is [{q}, {q}]");
    let mut out = vec![T::default(); x.len()];
    if q == 0 {
        return out;
    }
    out.par_chunks_mut(BLOCK * q)
        .zip(x.par_chunks(BLOCK * q))
        .for_each(|(o, block)| mul_block_dispatch(block, o, q, t));
    out
}

/// `X ← X T` in place (see [`mul_small`]).
pub fn mul_small_in_place<T: Real>(x: &mut [T], rows: usize, q: usize, t: &[f64]) {
    check(x.len(), rows, q, "mul_small_in_place");
    assert_eq!(t.len(), q * q, "mul_small_in_place: T is [{q}, {q}]");
    if q == 0 {
        return;
    }
    x.par_chunks_mut(BLOCK * q).for_each(|block| mul_block_in_place_dispatch(block, q, t));
}

/// Uniform in (-1, 1), 53 random bits.
fn symmetric(rng: &mut SplitMix64) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 52) as f64 - 1.0
}

/// Fills `out` with independent standard normal draws (Marsaglia's polar method, in f64) from
/// `seed`: element `i` depends only on `seed` and `i`, whatever the number of threads.
pub fn fill_standard_normal<T: Real>(out: &mut [T], seed: u64) {
    out.par_chunks_mut(BLOCK).enumerate().for_each(|(b, block)| {
        // Distinct, well-mixed streams per block: the block index goes through one mixing step.
        let mut rng =
            SplitMix64::new(SplitMix64::new(seed ^ (b as u64).wrapping_mul(0xD1B5_4A32_D192_ED03)).next_u64());
        let mut pairs = block.chunks_exact_mut(2);
        let mut draw = || loop {
            let (u, v) = (symmetric(&mut rng), symmetric(&mut rng));
            let s = u * u + v * v;
            if s > 0.0 && s < 1.0 {
                let f = (-2.0 * s.ln() / s).sqrt();
                return (u * f, v * f);
            }
        };
        for pair in &mut pairs {
            let (a, b) = draw();
            pair[0] = T::from_f64(a);
            pair[1] = T::from_f64(b);
        }
        if let [last] = pairs.into_remainder() {
            *last = T::from_f64(draw().0);
        }
    });
}

#[cfg(test)]
mod tests;
