//! Lexicographic keys of COO entries: the row-major linear index of an entry's sparse
//! coordinates, so that sorting keys sorts entries lexicographically.

use super::{IndexElem, PARALLEL_MIN};
use rayon::prelude::*;

/// Row-major strides of `sizes` (the last dimension has stride 1).
pub fn strides(sizes: &[usize]) -> Vec<u64> {
    let mut strides = vec![1u64; sizes.len()];
    for d in (0..sizes.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * sizes[d + 1] as u64;
    }
    strides
}

/// The key of every entry of `indices` (laid out `[sparse_dim, nse]`); indices must be in bounds.
pub fn linear_keys<I: IndexElem>(indices: &[I], nse: usize, sizes: &[usize]) -> Vec<u64> {
    let strides = strides(sizes);
    let mut keys: Vec<u64> = Vec::with_capacity(nse);
    // Each key is written once, never read first: a read of untouched memory maps the shared
    // zero page, and the write after it costs a copy-on-write fault and a TLB shootdown.
    let fill = |start: usize, chunk: &mut [core::mem::MaybeUninit<u64>]| {
        for (j, k) in chunk.iter_mut().enumerate() {
            let e = start + j;
            let mut key = 0u64;
            for (d, &stride) in strides.iter().enumerate() {
                key += indices[d * nse + e].to_i64() as u64 * stride;
            }
            k.write(key);
        }
    };
    if nse >= PARALLEL_MIN {
        let chunk = nse.div_ceil(rayon::current_num_threads() * 4).max(4096);
        keys.spare_capacity_mut()[..nse].par_chunks_mut(chunk).enumerate().for_each(|(c, out)| fill(c * chunk, out));
    } else {
        fill(0, &mut keys.spare_capacity_mut()[..nse]);
    }
    // SAFETY: all nse keys were written above.
    unsafe { keys.set_len(nse) };
    keys
}

/// Division by a fixed divisor through an f64 reciprocal (a few cycles instead of a 64-bit
/// `div`), exact for dividends below 2^52 and falling back to `/` above.
#[derive(Debug, Clone, Copy)]
pub struct FastDiv {
    d: u64,
    inv: f64,
}

impl FastDiv {
    /// A divider by `d` (> 0).
    pub fn new(d: u64) -> Self {
        Self { d: d.max(1), inv: 1.0 / d.max(1) as f64 }
    }

    /// `(n / d, n % d)`.
    #[inline(always)]
    pub fn divmod(&self, n: u64) -> (u64, u64) {
        if n >= 1 << 52 {
            return (n / self.d, n % self.d);
        }
        // Through i64: x86 converts signed integers in one instruction, unsigned ones in several.
        let mut q = (n as i64 as f64 * self.inv) as i64 as u64;
        let mut p = q * self.d;
        if p > n {
            q -= 1;
            p -= self.d;
        } else if p + self.d <= n {
            q += 1;
            p += self.d;
        }
        (q, n - p)
    }
}

/// The coordinates of each key, laid out `[sizes.len(), keys.len()]`.
pub fn delinearize(keys: &[u64], sizes: &[usize]) -> Vec<i64> {
    let n = keys.len();
    let mut out = vec![0i64; sizes.len() * n];
    let m = sizes.len();
    if n == 0 || m == 0 {
        return out;
    }
    // Peel coordinates from the last dim: one division per dim and key.
    let divs: Vec<FastDiv> = sizes.iter().map(|&s| FastDiv::new(s as u64)).collect();
    let fill = |start: usize, len: usize, rows: &mut [&mut [i64]]| {
        for j in 0..len {
            let mut k = keys[start + j];
            for d in (1..m).rev() {
                let (q, r) = divs[d].divmod(k);
                rows[d][j] = r as i64;
                k = q;
            }
            rows[0][j] = k as i64;
        }
    };
    const CHUNK: usize = 1 << 14;
    let mut rows: Vec<&mut [i64]> = out.chunks_mut(n).collect();
    if n >= PARALLEL_MIN {
        // Split every row into matching chunks; task c owns chunk c of each row.
        let mut per_task: Vec<Vec<&mut [i64]>> = (0..n.div_ceil(CHUNK)).map(|_| Vec::with_capacity(m)).collect();
        for row in rows.drain(..) {
            for (c, part) in row.chunks_mut(CHUNK).enumerate() {
                per_task[c].push(part);
            }
        }
        per_task.into_par_iter().enumerate().for_each(|(c, mut parts)| {
            let len = parts[0].len();
            fill(c * CHUNK, len, &mut parts)
        });
    } else {
        fill(0, n, &mut rows);
    }
    out
}

#[cfg(test)]
mod tests;
