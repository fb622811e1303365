//! Which items of a dense buffer hold a non-zero: the pattern of a dense -> sparse conversion.
//! An item is one element, or the dense sub-tensor (block x dense dims) stored per index.

use super::PARALLEL_MIN;
use half::{bf16, f16};
use rayon::prelude::*;

/// A value that can be asked whether it is zero (NaN counts as non-zero, as in torch).
pub trait IsZero: Copy + Send + Sync {
    /// Whether the value equals zero.
    fn is_zero(self) -> bool;
}

impl IsZero for f32 {
    fn is_zero(self) -> bool {
        self == 0.0
    }
}
impl IsZero for f64 {
    fn is_zero(self) -> bool {
        self == 0.0
    }
}
impl IsZero for f16 {
    fn is_zero(self) -> bool {
        self.to_f32() == 0.0
    }
}
impl IsZero for bf16 {
    fn is_zero(self) -> bool {
        self.to_f32() == 0.0
    }
}

/// Positions (in item units) of the items of length `item_len` with a non-zero element, ascending.
///
/// Two passes: count per task (a vector compare and sum), then each task writes its positions
/// into its part of one exactly sized output. Fresh memory is the expensive part on virtual
/// machines (first-touch faults), so the output is never grown, copied or over-allocated.
pub fn nonzero_items<F: IsZero>(data: &[F], item_len: usize) -> Vec<i64> {
    if item_len == 0 {
        return Vec::new();
    }
    let items = data.len() / item_len;
    let tasks = if data.len() < PARALLEL_MIN { 1 } else { rayon::current_num_threads() * 4 };
    let per_task = items.div_ceil(tasks).max(1);
    let nonzero = |item: &[F]| item.iter().any(|v| !v.is_zero());
    let counts: Vec<usize> = data
        .par_chunks(per_task * item_len)
        .map(|part| {
            if item_len == 1 {
                part.iter().map(|v| usize::from(!v.is_zero())).sum()
            } else {
                part.chunks(item_len).filter(|item| nonzero(item)).count()
            }
        })
        .collect();
    let total: usize = counts.iter().sum();
    let mut out: Vec<i64> = Vec::with_capacity(total);
    let mut slots: Vec<&mut [core::mem::MaybeUninit<i64>]> = Vec::with_capacity(counts.len());
    let mut rest = &mut out.spare_capacity_mut()[..total];
    for &c in &counts {
        let (head, tail) = rest.split_at_mut(c);
        slots.push(head);
        rest = tail;
    }
    data.par_chunks(per_task * item_len).zip(slots).enumerate().for_each(|(t, (part, slot))| {
        let base = (t * per_task) as i64;
        let mut len = 0;
        if item_len == 1 {
            // Eight at a time: a bit mask of non-zeros (a vector compare), then its set bits.
            let mut chunks = part.chunks_exact(8);
            for (c, group) in chunks.by_ref().enumerate() {
                let mut mask = 0u32;
                for (k, v) in group.iter().enumerate() {
                    mask |= u32::from(!v.is_zero()) << k;
                }
                let first = base + (c * 8) as i64;
                while mask != 0 {
                    slot[len].write(first + mask.trailing_zeros() as i64);
                    len += 1;
                    mask &= mask - 1;
                }
            }
            let tail = base + (part.len() / 8 * 8) as i64;
            for (i, v) in chunks.remainder().iter().enumerate() {
                if !v.is_zero() {
                    slot[len].write(tail + i as i64);
                    len += 1;
                }
            }
        } else {
            for (i, item) in part.chunks(item_len).enumerate() {
                if nonzero(item) {
                    slot[len].write(base + i as i64);
                    len += 1;
                }
            }
        }
        assert_eq!(len, slot.len(), "count and fill passes disagree");
    });
    // SAFETY: every task filled its slot (asserted), and the slots partition 0..total.
    unsafe { out.set_len(total) };
    out
}

/// CSR of a dense row-major `[rows, cols]` buffer in one pattern pass and one fill pass:
/// `(crow [rows + 1], col [nnz], values [nnz])`, zeros not stored. Rows are split across tasks;
/// the count pass sizes every output exactly, so the fill writes each element once in place.
pub fn dense_to_csr<F: IsZero + Default>(data: &[F], rows: usize, cols: usize) -> (Vec<i64>, Vec<i64>, Vec<F>) {
    assert_eq!(Some(data.len()), rows.checked_mul(cols), "dense_to_csr: data is [rows, cols] = [{rows}, {cols}]");
    let mut crow = vec![0i64; rows + 1];
    if cols == 0 || rows == 0 {
        return (crow, Vec::new(), Vec::new());
    }
    let rows_per_task = (PARALLEL_MIN / cols).max(1);
    crow[1..].par_chunks_mut(rows_per_task).enumerate().for_each(|(t, counts)| {
        for (r, c) in counts.iter_mut().enumerate() {
            let row = &data[(t * rows_per_task + r) * cols..][..cols];
            *c = row.iter().map(|v| i64::from(!v.is_zero())).sum();
        }
    });
    for r in 0..rows {
        crow[r + 1] += crow[r];
    }
    let nnz = crow[rows] as usize;
    let mut col: Vec<i64> = Vec::with_capacity(nnz);
    let mut val: Vec<F> = Vec::with_capacity(nnz);
    {
        // Split both outputs at task boundaries (rows_per_task rows each).
        let mut col_parts = Vec::new();
        let mut val_parts = Vec::new();
        let (mut col_rest, mut val_rest) = (&mut col.spare_capacity_mut()[..nnz], &mut val.spare_capacity_mut()[..nnz]);
        for r0 in (0..rows).step_by(rows_per_task) {
            let r1 = (r0 + rows_per_task).min(rows);
            let len = (crow[r1] - crow[r0]) as usize;
            let (c, ct) = col_rest.split_at_mut(len);
            let (v, vt) = val_rest.split_at_mut(len);
            col_parts.push(c);
            val_parts.push(v);
            col_rest = ct;
            val_rest = vt;
        }
        col_parts.into_par_iter().zip(val_parts).enumerate().for_each(|(t, (cs, vs))| {
            let r0 = t * rows_per_task;
            let block = &data[r0 * cols..((r0 + rows_per_task).min(rows)) * cols];
            let mut len = 0;
            let mut chunks = block.chunks_exact(8);
            for (g, group) in chunks.by_ref().enumerate() {
                let mut mask = 0u32;
                for (k, v) in group.iter().enumerate() {
                    mask |= u32::from(!v.is_zero()) << k;
                }
                while mask != 0 {
                    let k = mask.trailing_zeros() as usize;
                    cs[len].write(((g * 8 + k) % cols) as i64);
                    vs[len].write(group[k]);
                    len += 1;
                    mask &= mask - 1;
                }
            }
            let tail = block.len() / 8 * 8;
            for (i, &v) in chunks.remainder().iter().enumerate() {
                if !v.is_zero() {
                    cs[len].write(((tail + i) % cols) as i64);
                    vs[len].write(v);
                    len += 1;
                }
            }
            assert_eq!(len, cs.len(), "count and fill passes disagree");
        });
    }
    // SAFETY: the task parts partition 0..nnz and each was filled (asserted).
    unsafe {
        col.set_len(nnz);
        val.set_len(nnz);
    }
    (crow, col, val)
}

#[cfg(test)]
mod tests;
