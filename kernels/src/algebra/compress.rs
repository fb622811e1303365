//! Compressed <-> expanded indices: CSR's `crow_indices` from sorted row ids and back.
//! Both work per batch entry: compressed `[batch, n + 1]`, expanded `[batch, nse]`.

use super::IndexElem;
use crate::alloc::{try_filled, try_vec};
use crate::error::{Result, SparseError};

/// Compressed indices (`[batch, n + 1]`) of row ids that are sorted within each batch entry
/// (`rows` laid out `[batch, nse]`, each in `0..n`). Their size is set by `n`, not by the
/// entries: an `Allocation` error when it cannot be had.
pub fn compress(rows: &[i64], batch: usize, nse: usize, n: usize) -> Result<Vec<i64>> {
    let len = n
        .checked_add(1)
        .and_then(|w| w.checked_mul(batch))
        .ok_or(SparseError::Allocation { bytes: usize::MAX, what: "compressed indices" })?;
    let mut out = try_filled(len, 0i64, "compressed indices")?;
    for b in 0..batch {
        let counts = &mut out[b * (n + 1)..(b + 1) * (n + 1)];
        for &r in &rows[b * nse..(b + 1) * nse] {
            counts[r as usize + 1] += 1;
        }
    }
    prefix_sum_segments(&mut out, batch, n);
    Ok(out)
}

/// Compressed indices `[n + 1]` of sorted row ids (any index type), by a search for each
/// row's first entry: one pass over the rows, not over the entries. An `Allocation` error when
/// the `n + 1` pointers cannot be had.
pub fn compress_sorted<I: IndexElem>(rows: &[I], n: usize) -> Result<Vec<i64>> {
    let len = n.checked_add(1).ok_or(SparseError::Allocation { bytes: usize::MAX, what: "compressed indices" })?;
    let mut out = try_vec(len, "compressed indices")?;
    let mut at = 0usize;
    for r in 0..=n as i64 {
        // Gallop from the previous row's end: rows are short, so the search stays in cache (a
        // binary search over all the remaining entries costs a cache miss per step).
        let rest = &rows[at..];
        let mut hi = 1;
        while hi <= rest.len() && rest[hi - 1].to_i64() < r {
            hi *= 2;
        }
        let lo = hi / 2;
        at += lo + rest[lo..hi.min(rest.len())].partition_point(|v| v.to_i64() < r);
        out.push(at as i64);
    }
    Ok(out)
}

/// Turns per-segment counts stored at `[b, i + 1]` of `counts` (`[batch, n + 1]`, zeros at
/// `[b, 0]`) into compressed indices, in place.
pub fn prefix_sum_segments(counts: &mut [i64], batch: usize, n: usize) {
    for b in 0..batch {
        let c = &mut counts[b * (n + 1)..(b + 1) * (n + 1)];
        for i in 1..=n {
            c[i] += c[i - 1];
        }
    }
}

/// Row ids (`[batch, nse]`) of valid compressed indices (`[batch, n + 1]`).
pub fn expand<I: IndexElem>(compressed: &[I], batch: usize, n: usize, nse: usize) -> Vec<i64> {
    let mut out = vec![0i64; batch * nse];
    for b in 0..batch {
        let c = &compressed[b * (n + 1)..(b + 1) * (n + 1)];
        let rows = &mut out[b * nse..(b + 1) * nse];
        for r in 0..n {
            let (s, e) = (c[r].to_i64() as usize, c[r + 1].to_i64() as usize);
            rows[s..e].fill(r as i64);
        }
    }
    out
}

#[cfg(test)]
mod tests;
