//! torch's `torch.sparse.spdiags`: a 2-D sparse matrix with the rows of `diagonals` placed along
//! the diagonals named by `offsets`, in COO, CSR or CSC.
//!
//! As torch (and scipy's `dia` format), the position along a diagonal is the output column: the
//! element at `(r, c)` on diagonal `k = c - r` is `diagonals[i][c]`, so a positive offset `k`
//! starts at `diagonals[i][k]`, and a diagonal stops at the matrix edge or at the end of the row
//! of `diagonals`, whichever comes first. COO entries come diagonal by diagonal, in the order of
//! `offsets`, each by increasing column (torch's order; coalesced only when that order happens to
//! be sorted); CSR and CSC are sorted as their layouts require.
//!
//! The values are gathered from `diagonals` with a burn op, so the result is differentiable with
//! respect to `diagonals`.

use crate::algebra::{sort, validate};
use crate::error::{invalid, Result, SparseError};
use crate::layout::Layout;
use crate::movement::gather_rows;
use crate::tensor::{Indices, SparseTensor, Trust};
use crate::util::{int_tensor, reshape};
use burn::tensor::{DType, Tensor};

/// torch's `spdiags(diagonals, offsets, shape, layout)`: `diagonals [offsets.len(), w]`, one row
/// per offset (`0` the main diagonal, `< 0` below, `> 0` above); int64 indices.
///
/// Errors: a layout other than COO, CSR or CSC; a row count of `diagonals` other than
/// `offsets.len()`; an offset given twice.
pub fn spdiags(diagonals: Tensor<2>, offsets: &[i64], shape: [usize; 2], layout: Layout) -> Result<SparseTensor<2>> {
    const OP: &str = "spdiags";
    if layout.is_blocked() {
        return Err(SparseError::UnsupportedLayout { operation: OP, layout: layout.name() });
    }
    let [n_diags, width] = diagonals.dims();
    if n_diags != offsets.len() {
        return Err(invalid(
            OP,
            format!("diagonals has {n_diags} rows (shape [{n_diags}, {width}]) but offsets has {} entries: one row per offset", offsets.len()),
        ));
    }
    if let Some((first, second)) = repeated_offset(offsets) {
        return Err(invalid(OP, format!("offset {} is repeated (positions {first} and {second})", offsets[first])));
    }
    validate::check_numel(&shape)?;
    validate::check_shape(&shape, DType::I64)?;
    let (rows, cols, sources) = diagonal_entries(offsets, width, shape);
    let nnz = rows.len();
    let keys: Vec<u64> = rows.iter().zip(&cols).map(|(&r, &c)| r as u64 * shape[1] as u64 + c as u64).collect();
    let values = gather_rows(reshape(diagonals, [n_diags * width, 1]), sources);
    let mut coords = rows;
    coords.extend(cols);
    let coo = SparseTensor {
        layout: Layout::Coo,
        shape,
        batch_dim: 0,
        sparse_dim: 2,
        dense_dim: 0,
        blocksize: None,
        indices: Indices::Coo(int_tensor(coords, [2, nnz], DType::I64, &values.device())),
        values,
        coalesced: sort::is_strictly_increasing(&keys),
        trust: Trust::Checked,
    };
    coo.to_layout(layout, None)
}

/// The first pair of positions holding the same offset.
fn repeated_offset(offsets: &[i64]) -> Option<(usize, usize)> {
    let mut seen = std::collections::HashMap::with_capacity(offsets.len());
    offsets.iter().enumerate().find_map(|(j, k)| seen.insert(*k, j).map(|i| (i, j)))
}

/// Row, column and flat source position in `diagonals` (`i * width + c`) of every element set,
/// diagonal by diagonal in the order of `offsets`, each by increasing column: on offset `k` the
/// columns `max(0, k) .. min(cols, rows + k, width)`.
fn diagonal_entries(offsets: &[i64], width: usize, [rows, cols]: [usize; 2]) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
    let (mut r, mut c, mut src) = (Vec::new(), Vec::new(), Vec::new());
    for (i, &k) in offsets.iter().enumerate() {
        let start = k.max(0) as i128;
        let end = (cols as i128).min(rows as i128 + k as i128).min(width as i128);
        for col in start..end.max(start) {
            r.push((col - k as i128) as i64);
            c.push(col as i64);
            src.push((i * width) as i64 + col as i64);
        }
    }
    (r, c, src)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_follow_the_offsets_and_columns() {
        // torch's first example: offsets [0, -1, -2] on a 3 x 3 matrix.
        let (r, c, s) = diagonal_entries(&[0, -1, -2], 3, [3, 3]);
        assert_eq!(r, vec![0, 1, 2, 1, 2, 2]);
        assert_eq!(c, vec![0, 1, 2, 0, 1, 0]);
        assert_eq!(s, vec![0, 1, 2, 3, 4, 6]);
        // Positive offsets start at column k of their row; far offsets set nothing.
        let (r, c, s) = diagonal_entries(&[2, 7, -9], 3, [5, 5]);
        assert_eq!((r, c, s), (vec![0], vec![2], vec![2]));
        assert_eq!(repeated_offset(&[0, 1, -1, 1]), Some((1, 3)));
        assert_eq!(repeated_offset(&[0, 1, -1]), None);
    }
}
