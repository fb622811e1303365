//! The layouts' invariants (torch's `check_invariants`, Julia's `check_Ti`,
//! `check_coo_inds`, `checkbounds_dims`), each violation a [`SparseError`] naming the component,
//! the position and the value.

use super::IndexElem;
use crate::error::{Result, SparseError};
use crate::index::IndexType;

/// Every dimension fits the index type (Julia's `check_Ti`) and the element count fits in i64.
pub fn check_shape(shape: &[usize], index: IndexType) -> Result<()> {
    let (max, name) = (index.max(), index.name());
    for (dim, &size) in shape.iter().enumerate() {
        if size as u128 > max as u128 {
            return Err(SparseError::DimensionTooLarge { component: "size", dim, size, index_dtype: name, max });
        }
    }
    check_numel(shape)
}

/// The element count of `shape` fits in i64.
pub fn check_numel(shape: &[usize]) -> Result<()> {
    let mut count: u128 = 1;
    for &s in shape {
        count = count.saturating_mul(s as u128);
    }
    if shape.iter().all(|&s| s > 0) && count > i64::MAX as u128 {
        return Err(SparseError::ElementCountOverflow { shape: shape.to_vec() });
    }
    Ok(())
}

/// Every COO index (`[sparse_dim, nse]`) lies in `0..sizes[d]`.
pub fn check_coo_bounds<I: IndexElem>(
    component: &'static str,
    indices: &[I],
    nse: usize,
    sizes: &[usize],
) -> Result<()> {
    let bad = |d: usize| {
        let size = sizes[d] as i64;
        indices[d * nse..(d + 1) * nse].iter().position(|&i| {
            let i = i.to_i64();
            i < 0 || i >= size
        })
    };
    // Report the first bad entry in entry order, checking the (rare) failing case carefully.
    let mut first: Option<(usize, usize)> = None;
    for d in 0..sizes.len() {
        if let Some(p) = bad(d) {
            if first.is_none_or(|(fp, _)| p < fp) {
                first = Some((p, d));
            }
        }
    }
    match first {
        None => Ok(()),
        Some((position, dim)) => Err(SparseError::IndexOutOfBounds {
            component,
            dim,
            position,
            value: indices[dim * nse + position].to_i64().into(),
            size: sizes[dim],
        }),
    }
}

/// Names of the two index tensors of a compressed layout.
#[derive(Debug, Clone, Copy)]
pub struct CompressedNames {
    /// `crow_indices` or `ccol_indices`.
    pub compressed: &'static str,
    /// `col_indices` or `row_indices`.
    pub plain: &'static str,
    /// The tensor dimension the plain indices address.
    pub plain_dim: usize,
}

/// The compressed-layout invariants for `batch` entries of `n_comp + 1` compressed indices and
/// `nse` plain indices each, the plain ones in `0..n_plain`.
pub fn check_compressed<I: IndexElem, J: IndexElem>(
    names: CompressedNames,
    compressed: &[I],
    plain: &[J],
    batch: usize,
    n_comp: usize,
    n_plain: usize,
    nse: usize,
) -> Result<()> {
    for b in 0..batch {
        let c = &compressed[b * (n_comp + 1)..(b + 1) * (n_comp + 1)];
        let p = &plain[b * nse..(b + 1) * nse];
        let first = c[0].to_i64();
        if first != 0 {
            return Err(SparseError::CompressedStart { component: names.compressed, batch: b, value: first });
        }
        for i in 1..c.len() {
            let (prev, v) = (c[i - 1].to_i64(), c[i].to_i64());
            if v < prev {
                return Err(SparseError::CompressedDecreasing {
                    component: names.compressed,
                    batch: b,
                    position: i,
                    previous: prev,
                    value: v,
                });
            }
        }
        let last = c[n_comp].to_i64();
        if last != nse as i64 {
            return Err(SparseError::CompressedEnd {
                component: names.compressed,
                batch: b,
                expected: nse,
                value: last,
            });
        }
        for seg in 0..n_comp {
            let (s, e) = (c[seg].to_i64() as usize, c[seg + 1].to_i64() as usize);
            for pos in s..e {
                let v = p[pos].to_i64();
                if v < 0 || v >= n_plain as i64 {
                    return Err(SparseError::IndexOutOfBounds {
                        component: names.plain,
                        dim: names.plain_dim,
                        position: b * nse + pos,
                        value: v.into(),
                        size: n_plain,
                    });
                }
                if pos > s {
                    let prev = p[pos - 1].to_i64();
                    if v == prev {
                        return Err(SparseError::PlainDuplicate {
                            component: names.plain,
                            batch: b,
                            segment: seg,
                            position: pos,
                            value: v,
                        });
                    }
                    if v < prev {
                        return Err(SparseError::PlainUnsorted {
                            component: names.plain,
                            batch: b,
                            segment: seg,
                            position: pos,
                            previous: prev,
                            value: v,
                        });
                    }
                }
            }
        }
    }
    Ok(())
}

/// Keys strictly increasing, or the first entry that breaks it (TensorFlow's `validate_indices`).
pub fn check_sorted_unique(keys: &[u64]) -> Result<()> {
    for (i, w) in keys.windows(2).enumerate() {
        if w[1] == w[0] {
            return Err(SparseError::RepeatedIndex { position: i + 1 });
        }
        if w[1] < w[0] {
            return Err(SparseError::NotSorted { position: i + 1 });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
