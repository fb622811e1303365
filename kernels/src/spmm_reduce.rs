//! SpMM with an extreme in place of the sum (torch's `sparse.mm(a, x, reduce="amax" | "amin")`):
//! `out[i, c]` is the largest (smallest) of `a[i, j] · x[j, c]` over the stored entries `j` of
//! row `i`, and 0 for a row with no entry. The forward records, for every output element, which
//! entry won (its *arg*), so the gradient goes to that entry alone, as torch's `scatter_reduce`
//! defines it: `dvalues[p] += g[i, c] · x[col p, c]` and `dX[col p, c] += g[i, c] · a_p`.
//!
//! Ties go to the first entry in storage order. A NaN product wins over any number and the
//! first NaN stays (the result propagates NaN, as torch's max does).
//!
//! Parallel over output rows (each row's extremes and args are its own); the backward is one
//! sequential scatter over the output (it adds into shared rows of `dX`).

use crate::alloc::out_len;
use crate::index::IndexElem;
use crate::pattern::CsrPattern;
use crate::real::Real;
use rayon::prelude::*;

/// A value type with an order (f32, f64).
pub trait Ordered: Real + PartialOrd {}
impl Ordered for f32 {}
impl Ordered for f64 {}

/// Whether `v` replaces the current extreme `best`: strictly beyond it (ties keep the first), or
/// a NaN over a number.
#[inline(always)]
fn wins<T: Ordered>(v: T, best: T, max: bool) -> bool {
    #[allow(clippy::eq_op)] // `x != x` is the NaN test for a generic PartialOrd type.
    let (v_nan, best_nan) = (v != v, best != best);
    if best_nan {
        return false;
    }
    v_nan || if max { v > best } else { v < best }
}

/// The extremes of `a[i, j] · x[j, c]` over the stored entries of each row (`max`: the largest,
/// else the smallest) on host slices: `A [m, k]` with one value per entry, `X [k, n]` row-major.
/// Returns `out [m, n]` and `arg [m, n]`: the storage position of the winning entry, or `nnz`
/// for a row with no entry (whose output is 0).
///
/// # Panics
/// If `val` does not hold one value per entry or `x` is not `[k, n]`.
pub fn spmm_arg_extreme<T: Ordered, I: IndexElem, J: IndexElem>(
    a: CsrPattern<'_, I, J>,
    val: &[T],
    x: &[T],
    n: usize,
    max: bool,
) -> (Vec<T>, Vec<i64>) {
    let (m, k, nnz) = (a.nrows(), a.ncols(), a.nnz());
    assert_eq!(val.len(), nnz, "spmm_arg_extreme: one value per stored entry");
    assert_eq!(x.len(), out_len(k, n, "spmm_arg_extreme: X"), "spmm_arg_extreme: X is [k, n] = [{k}, {n}]");
    let len = out_len(m, n, "spmm_arg_extreme: the output");
    let mut out = vec![T::default(); len];
    let mut arg = vec![nnz as i64; len];
    if len == 0 {
        return (out, arg);
    }
    out.par_chunks_mut(n).zip(arg.par_chunks_mut(n)).enumerate().for_each(|(r, (o, g))| {
        let row = a.row(r);
        let Some(first) = row.clone().next() else { return };
        let xr = &x[a.col(first) * n..][..n];
        for c in 0..n {
            o[c] = val[first] * xr[c];
            g[c] = first as i64;
        }
        for p in row.skip(1) {
            let (v, xr) = (val[p], &x[a.col(p) * n..][..n]);
            for c in 0..n {
                let prod = v * xr[c];
                if wins(prod, o[c], max) {
                    o[c] = prod;
                    g[c] = p as i64;
                }
            }
        }
    });
    (out, arg)
}

/// Both gradients of [`spmm_arg_extreme`] from its `arg` and the output gradient `g [m, n]`:
/// `dX [k, n]` then `dvalues [nnz]`, in one vector. An output element whose row has no entry
/// (`arg == nnz`) passes no gradient.
///
/// # Panics
/// If the operands are not shaped as the forward's, or an arg is neither an entry of its own
/// row nor `nnz`.
pub fn spmm_arg_extreme_backward<T: Real, I: IndexElem, J: IndexElem>(
    a: CsrPattern<'_, I, J>,
    val: &[T],
    x: &[T],
    arg: &[i64],
    g: &[T],
    n: usize,
) -> Vec<T> {
    let (m, k, nnz) = (a.nrows(), a.ncols(), a.nnz());
    assert_eq!(val.len(), nnz, "spmm_arg_extreme backward: one value per stored entry");
    let xlen = out_len(k, n, "spmm_arg_extreme backward: X");
    assert_eq!(x.len(), xlen, "spmm_arg_extreme backward: X is [k, n] = [{k}, {n}]");
    let len = out_len(m, n, "spmm_arg_extreme backward: the output");
    assert!(arg.len() == len && g.len() == len, "spmm_arg_extreme backward: arg and g are [m, n] = [{m}, {n}]");
    let total = xlen.checked_add(nnz).expect("spmm_arg_extreme backward: gradient length overflows usize");
    let mut grad = vec![T::default(); total];
    let (dx, dv) = grad.split_at_mut(xlen);
    for r in 0..m {
        let row = a.row(r);
        for c in 0..n {
            let p = arg[r * n + c];
            if p == nnz as i64 {
                continue;
            }
            assert!(
                p >= 0 && row.contains(&(p as usize)),
                "spmm_arg_extreme backward: arg {p} at ({r}, {c}) is not an entry of row {r}"
            );
            let (p, gv) = (p as usize, g[r * n + c]);
            let xi = a.col(p) * n + c;
            dv[p] = dv[p] + gv * x[xi];
            dx[xi] = dx[xi] + gv * val[p];
        }
    }
    grad
}

#[cfg(test)]
mod tests;
