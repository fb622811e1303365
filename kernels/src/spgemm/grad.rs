//! The gradients of `C = A · B` w.r.t. both operands' values as masked sparse products, never
//! densified: `dA = (G · Bᵀ)` on `A`'s pattern, `dB = (Aᵀ · G)` on `B`'s pattern (summed per
//! fixed block of rows, then added in block order: the result does not depend on the threads).

use super::*;

/// Scatters row `i` of `G` (on `c`'s pattern) into `gd`.
#[inline(always)]
pub(super) fn scatter_row<T: Real, I: IndexElem, J: IndexElem>(
    c: CsrPattern<'_, I, J>,
    g: &[T],
    i: usize,
    gd: &mut [T],
) {
    for e in c.row(i) {
        let j = c.col(e);
        gd[j] = gd[j] + g[e];
    }
}

/// Clears what [`scatter_row`] set.
#[inline(always)]
pub(super) fn clear_row<T: Real, I: IndexElem, J: IndexElem>(c: CsrPattern<'_, I, J>, i: usize, gd: &mut [T]) {
    for e in c.row(i) {
        gd[c.col(e)] = T::default();
    }
}

/// The gradient of `C = A · B`'s values (on `c`'s pattern, `g [nnz_c]`) w.r.t. `A`'s values:
/// `dA[i, p] = Σ_j G[i, j] B[p, j]`, `(G · Bᵀ)` on `A`'s pattern, one value per entry of `A`.
///
/// # Panics
/// If the operands' shapes or value counts disagree.
pub fn spgemm_grad_a<T: Real, I: IndexElem, J: IndexElem>(
    a: CsrPattern<'_, I, J>,
    b: CsrPattern<'_, I, J>,
    bval: &[T],
    c: CsrPattern<'_, I, J>,
    g: &[T],
) -> Vec<T> {
    check_operands(a, a.nnz(), b, bval.len(), c);
    assert_eq!(g.len(), c.nnz(), "spgemm: one gradient per entry of C");
    let n = b.ncols();
    let work = row_work(a, b).expect("spgemm: the products were counted in the forward pass");
    let cuts = blocks(&work);
    let mut out: Vec<T> = Vec::with_capacity(a.nnz());
    let dst = SendPtr(out.as_mut_ptr());
    let bcol = b.idx();
    cuts.par_windows(2).for_each(|w| {
        with_workspace::<T, _>(n, |ws| {
            let gd = ws.acc;
            for i in w[0]..w[1] {
                scatter_row(c, g, i, gd);
                for q in a.row(i) {
                    let p = a.col(q);
                    let mut s = T::default();
                    for r in b.row(p) {
                        s = s + gd[bcol[r].to_i64() as usize] * bval[r];
                    }
                    // SAFETY: `q` is an entry of row `i` of `a`, inside `0..nnz_a`; rows are
                    // partitioned by the blocks, so each place is written once.
                    unsafe { dst.at(q).write(s) };
                }
                clear_row(c, i, gd);
            }
        })
    });
    // SAFETY: every entry of every row of `a` was written.
    unsafe { out.set_len(a.nnz()) };
    out
}

/// Fixed row blocks of the gradient w.r.t. `B`: a count from the product count only (never
/// the thread count), so the partial sums, and their order, are the same on any machine.
pub(super) fn grad_b_parts(products: i64) -> usize {
    ((products >> 20) as usize).clamp(1, 8)
}

/// The gradient of `C = A · B`'s values (on `c`'s pattern, `g [nnz_c]`) w.r.t. `B`'s values:
/// `dB[p, j] = Σ_i A[i, p] G[i, j]`, `(Aᵀ · G)` on `B`'s pattern, one value per entry of `B`.
/// Rows of `A` run in a fixed number of blocks, each adding into its own partial array of
/// `B`'s values; the partials are summed in block order.
///
/// # Errors
/// An `Allocation` error when the partial arrays cannot be had.
///
/// # Panics
/// If the operands' shapes or value counts disagree.
pub fn spgemm_grad_b<T: Real, I: IndexElem, J: IndexElem>(
    a: CsrPattern<'_, I, J>,
    aval: &[T],
    b: CsrPattern<'_, I, J>,
    c: CsrPattern<'_, I, J>,
    g: &[T],
) -> Result<Vec<T>> {
    check_operands(a, aval.len(), b, b.nnz(), c);
    assert_eq!(g.len(), c.nnz(), "spgemm: one gradient per entry of C");
    let (n, nb) = (b.ncols(), b.nnz());
    let work = row_work(a, b)?;
    let cuts = balanced_row_blocks(&work, grad_b_parts(*work.last().expect("m + 1")));
    let parts = cuts.len().saturating_sub(1);
    let mut partial = try_vec::<T>(
        parts
            .checked_mul(nb)
            .ok_or(SparseError::Allocation { bytes: usize::MAX, what: "spgemm: partial gradients of B" })?,
        "spgemm: partial gradients of B",
    )?;
    partial.resize(parts * nb, T::default());
    let acol = a.idx();
    let bcol = b.idx();
    cuts.par_windows(2).zip(partial.par_chunks_mut(nb.max(1))).for_each(|(w, part)| {
        with_workspace::<T, _>(n, |ws| {
            let gd = ws.acc;
            for i in w[0]..w[1] {
                scatter_row(c, g, i, gd);
                for q in a.row(i) {
                    let (p, av) = (acol[q].to_i64() as usize, aval[q]);
                    for r in b.row(p) {
                        part[r] = part[r] + av * gd[bcol[r].to_i64() as usize];
                    }
                }
                clear_row(c, i, gd);
            }
        })
    });
    if parts <= 1 {
        partial.truncate(nb);
        if parts == 0 {
            partial.resize(nb, T::default());
        }
        return Ok(partial);
    }
    let mut out = try_vec::<T>(nb, "spgemm: gradient of B")?;
    out.resize(nb, T::default());
    const CHUNK: usize = 1 << 14;
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(t, o)| {
        let start = t * CHUNK;
        for (x, v) in o.iter_mut().enumerate() {
            let mut s = partial[start + x];
            for b in 1..parts {
                s = s + partial[b * nb + start + x];
            }
            *v = s;
        }
    });
    Ok(out)
}
