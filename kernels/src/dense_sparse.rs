//! Dense · sparse without transposes: `X · A` for `X [p, m]` dense (row-major) and `A [m, k]` a
//! CSR pattern with values. Each output row accumulates the rows of `A` scaled by that row of
//! `X` (zeros of `X` skipped, as a sparse `X` would store none of them), so neither `X` nor the
//! result is transposed; and the two gradients: `dX = G · Aᵀ` (each `dX[r, i]` a dot product of
//! row `i` of `A` with row `r` of `G`) and `dA = Xᵀ · G` on `A`'s pattern.
//!
//! Rows of `X` run in parallel; the values' gradient sums over rows of `X` in a fixed number
//! of blocks (from the sizes only) into private partials added in block order, so every result
//! is the same whatever the thread count.

use crate::alloc::out_len;
use crate::index::IndexElem;
use crate::pattern::CsrPattern;
use crate::real::Real;
use rayon::prelude::*;

/// Rows of `X` per parallel task.
const ROWS_PER_TASK: usize = 16;

/// `X · A`: `x [p, m]`, `A [m, k]` with one value per entry; `out [p, k]`. An element of `X`
/// that is zero contributes nothing (not even `0 · inf`).
///
/// # Panics
/// If `x` is not `[p, m]` or `val` does not hold one value per entry.
pub fn dense_sparse<T: Real + PartialEq, I: IndexElem, J: IndexElem>(
    x: &[T],
    p: usize,
    a: CsrPattern<'_, I, J>,
    val: &[T],
) -> Vec<T> {
    let (m, k) = (a.nrows(), a.ncols());
    assert_eq!(x.len(), out_len(p, m, "dense_sparse: X"), "dense_sparse: X is [p, m] = [{p}, {m}]");
    assert_eq!(val.len(), a.nnz(), "dense_sparse: one value per stored entry");
    let mut out = vec![T::default(); out_len(p, k, "dense_sparse: the output")];
    if k == 0 || m == 0 {
        return out;
    }
    let col = a.idx();
    out.par_chunks_mut(k * ROWS_PER_TASK).enumerate().for_each(|(t, o)| {
        for (rr, orow) in o.chunks_mut(k).enumerate() {
            let r = t * ROWS_PER_TASK + rr;
            let xr = &x[r * m..(r + 1) * m];
            for (i, &xi) in xr.iter().enumerate() {
                if xi == T::default() {
                    continue;
                }
                for j in a.row(i) {
                    let c = col[j].to_i64() as usize;
                    orow[c] = orow[c] + xi * val[j];
                }
            }
        }
    });
    out
}

/// `G · Aᵀ`, the gradient of `X · A` w.r.t. `X`: `g [p, k]`; `out [p, m]`.
///
/// # Panics
/// If `g` is not `[p, k]` or `val` does not hold one value per entry.
pub fn dense_sparse_grad_x<T: Real, I: IndexElem, J: IndexElem>(
    g: &[T],
    p: usize,
    a: CsrPattern<'_, I, J>,
    val: &[T],
) -> Vec<T> {
    let (m, k) = (a.nrows(), a.ncols());
    assert_eq!(g.len(), out_len(p, k, "dense_sparse: G"), "dense_sparse: G is [p, k] = [{p}, {k}]");
    assert_eq!(val.len(), a.nnz(), "dense_sparse: one value per stored entry");
    let mut out = vec![T::default(); out_len(p, m, "dense_sparse: dX")];
    if m == 0 {
        return out;
    }
    let col = a.idx();
    out.par_chunks_mut(m * ROWS_PER_TASK).enumerate().for_each(|(t, o)| {
        for (rr, orow) in o.chunks_mut(m).enumerate() {
            let r = t * ROWS_PER_TASK + rr;
            let gr = &g[r * k..(r + 1) * k];
            for (i, v) in orow.iter_mut().enumerate() {
                let mut s = T::default();
                for j in a.row(i) {
                    s = s + gr[col[j].to_i64() as usize] * val[j];
                }
                *v = s;
            }
        }
    });
    out
}

/// `Xᵀ · G` on `A`'s pattern, the gradient of `X · A` w.r.t. `A`'s values: `dval[j] = Σ_r
/// X[r, i] G[r, c]` for entry `j` at `(i, c)`. Rows of `X` in a fixed number of blocks, each
/// into its own partial array.
///
/// # Panics
/// If `x` is not `[p, m]` or `g` is not `[p, k]`.
pub fn dense_sparse_grad_values<T: Real + PartialEq, I: IndexElem, J: IndexElem>(
    x: &[T],
    g: &[T],
    p: usize,
    a: CsrPattern<'_, I, J>,
) -> Vec<T> {
    let (m, k, nnz) = (a.nrows(), a.ncols(), a.nnz());
    assert_eq!(x.len(), out_len(p, m, "dense_sparse: X"), "dense_sparse: X is [p, m] = [{p}, {m}]");
    assert_eq!(g.len(), out_len(p, k, "dense_sparse: G"), "dense_sparse: G is [p, k] = [{p}, {k}]");
    // Blocks from the sizes only: about 2^20 products each, at most 8.
    let work = p.saturating_mul(nnz);
    let parts = (work >> 20).clamp(1, 8).min(p.max(1));
    let per = p.div_ceil(parts).max(1);
    let col = a.idx();
    let partial: Vec<Vec<T>> = (0..parts)
        .into_par_iter()
        .map(|b| {
            let mut acc = vec![T::default(); nnz];
            for r in b * per..((b + 1) * per).min(p) {
                let (xr, gr) = (&x[r * m..(r + 1) * m], &g[r * k..(r + 1) * k]);
                for (i, &xi) in xr.iter().enumerate() {
                    if xi == T::default() {
                        continue;
                    }
                    for j in a.row(i) {
                        acc[j] = acc[j] + xi * gr[col[j].to_i64() as usize];
                    }
                }
            }
            acc
        })
        .collect();
    let mut out = vec![T::default(); nnz];
    for part in &partial {
        for (o, &v) in out.iter_mut().zip(part) {
            *o = *o + v;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products_and_gradients_match_dense() {
        // A [4, 5] with an empty row; X [3, 4] with zeros; integer data (exact sums).
        let (p, m, k) = (3, 4, 5);
        let crow = [0i64, 2, 2, 5, 6];
        let col = [1i64, 4, 0, 2, 3, 4];
        let val = [2.0f64, -1.0, 3.0, 0.5, -2.0, 1.0];
        let a = CsrPattern::new(&crow[..], &col[..], k).unwrap();
        let mut ad = vec![0.0; m * k];
        for i in 0..m {
            for j in crow[i] as usize..crow[i + 1] as usize {
                ad[i * k + col[j] as usize] += val[j];
            }
        }
        let x: Vec<f64> = (0..p * m).map(|t| if t % 3 == 0 { 0.0 } else { (t % 5) as f64 - 2.0 }).collect();
        let out = dense_sparse(&x, p, a, &val);
        for r in 0..p {
            for c in 0..k {
                let want: f64 = (0..m).map(|i| x[r * m + i] * ad[i * k + c]).sum();
                assert_eq!(out[r * k + c], want, "out[{r}, {c}]");
            }
        }
        let g: Vec<f64> = (0..p * k).map(|t| ((t * 7) % 5) as f64 - 2.0).collect();
        let dx = dense_sparse_grad_x(&g, p, a, &val);
        for r in 0..p {
            for i in 0..m {
                let want: f64 = (0..k).map(|c| g[r * k + c] * ad[i * k + c]).sum();
                assert_eq!(dx[r * m + i], want, "dx[{r}, {i}]");
            }
        }
        let dv = dense_sparse_grad_values(&x, &g, p, a);
        for i in 0..m {
            for j in crow[i] as usize..crow[i + 1] as usize {
                let c = col[j] as usize;
                let want: f64 = (0..p).map(|r| x[r * m + i] * g[r * k + c]).sum();
                assert_eq!(dv[j], want, "dval[{j}]");
            }
        }
        assert!(dense_sparse(&[], 0, a, &val).is_empty());
    }
}
