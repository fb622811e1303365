//! The symbolic pass: the pattern of `A · B` (row pointers and sorted columns), optionally under a
//! mask pattern (GraphBLAS's masked `mxm`), in a pass that counts each row and a pass that fills it.

use super::*;

/// The pattern of `C = A · B` (`A [m, k]`, `B [k, n]`), or of `C<M> = A · B` with a `mask
/// [m, n]`: row pointers `[m + 1]` and the columns of each row, ascending (in the mask row's
/// order with a mask: ascending for a canonical mask). Structural: an entry is stored where
/// some stored `a[i, p]` meets a stored `b[p, j]` (and, with a mask, `(i, j)` is in it),
/// whatever the values. Two passes over the products: one counts each row (sizing the
/// output exactly), one writes the columns in place.
///
/// # Errors
/// An `Allocation` error when the product count or the pattern's size cannot be had.
///
/// # Panics
/// If `a`'s columns are not `b`'s rows or the mask is not `[m, n]`.
pub fn spgemm_symbolic<I: IndexElem, J: IndexElem>(
    a: CsrPattern<'_, I, J>,
    b: CsrPattern<'_, I, J>,
    mask: Option<CsrPattern<'_, I, J>>,
) -> Result<(Vec<i64>, Vec<i64>)> {
    assert_eq!(a.ncols(), b.nrows(), "spgemm: A's columns are B's rows");
    if let Some(mk) = mask {
        assert_eq!((mk.nrows(), mk.ncols()), (a.nrows(), b.ncols()), "spgemm: the mask is [m, n]");
    }
    let (m, n) = (a.nrows(), b.ncols());
    let work = row_work(a, b)?;
    let cuts = blocks(&work);
    let mut crow = try_vec::<i64>(m + 1, "spgemm: row pointers")?;
    crow.resize(m + 1, 0);
    let lens = SendPtr(crow.as_mut_ptr());
    cuts.par_windows(2).for_each(|w| {
        with_workspace::<f32, _>(n, |mut ws| {
            for i in w[0]..w[1] {
                let len = row_columns::<I, J, f32, false>(a, b, mask, i, &work, &mut ws, |_| {});
                // SAFETY: `i + 1 <= m` and the blocks partition `0..m`: each row's slot is
                // written by its block only.
                unsafe { lens.at(i + 1).write(len as i64) };
            }
        })
    });
    for i in 0..m {
        crow[i + 1] += crow[i];
    }
    let nnz = crow[m] as usize;
    let mut col = try_vec::<i64>(nnz, "spgemm: output columns")?;
    let dst = SendPtr(col.as_mut_ptr());
    cuts.par_windows(2).for_each(|w| {
        with_workspace::<f32, _>(n, |mut ws| {
            for (i, ends) in crow.windows(2).enumerate().take(w[1]).skip(w[0]) {
                let (mut at, end) = (ends[0] as usize, ends[1] as usize);
                row_columns::<I, J, f32, true>(a, b, mask, i, &work, &mut ws, |j| {
                    // The counting pass gave the row's length (the same walk); the bound is
                    // checked anyway, so a disagreement can only fail the assertion below.
                    if at < end {
                        // SAFETY: `at` lies in `crow[i]..crow[i + 1]`, inside `0..nnz`; rows
                        // are partitioned by the blocks.
                        unsafe { dst.at(at).write(j as i64) };
                    }
                    at += 1;
                });
                assert_eq!(at, end, "spgemm: the fill pass disagrees with the counting pass");
            }
        })
    });
    // SAFETY: every row's range was filled; the ranges cover `0..nnz`.
    unsafe { col.set_len(nnz) };
    Ok((crow, col))
}

/// Row `i`'s distinct columns of the product, ascending (the mask row's entries some product
/// reaches, in its order, with a mask), each given to `emit` when `emit` is wanted; returns
/// their count. The scratch is left clear.
#[inline(always)]
pub(super) fn row_columns<I: IndexElem, J: IndexElem, T, const EMIT: bool>(
    a: CsrPattern<'_, I, J>,
    b: CsrPattern<'_, I, J>,
    mask: Option<CsrPattern<'_, I, J>>,
    i: usize,
    work: &[i64],
    ws: &mut Rows<'_, T>,
    mut emit: impl FnMut(usize),
) -> usize {
    let bcol = b.idx();
    if let Some(mk) = mask {
        for e in mk.row(i) {
            ws.marks[mk.col(e)] = 1;
        }
        for q in a.row(i) {
            for r in b.row(a.col(q)) {
                let j = bcol[r].to_i64() as usize;
                // 1 (in the mask) becomes 2 (reached), 2 stays 2, 0 stays 0.
                ws.marks[j] = ((ws.marks[j] != 0) as u8) << 1;
            }
        }
        let mut len = 0;
        for e in mk.row(i) {
            let j = mk.col(e);
            if ws.marks[j] == 2 {
                emit(j);
                len += 1;
            }
            ws.marks[j] = 0;
        }
        return len;
    }
    let products = (work[i + 1] - work[i]) as usize;
    if products == 0 {
        return 0;
    }
    let (mut lo, mut hi) = (usize::MAX, 0usize);
    for q in a.row(i) {
        if products > NARROW {
            prefetch_b(a.idx(), &PlainB { b, val: bcol }, q);
        }
        for r in b.row(a.col(q)) {
            let j = bcol[r].to_i64() as usize;
            ws.bits.set(j);
            lo = lo.min(j);
            hi = hi.max(j);
        }
    }
    let (t0, t1) = (lo >> 12, hi >> 12);
    if !EMIT {
        return ws.bits.count(t0, t1);
    }
    let mut len = 0;
    ws.bits.drain(t0, t1, |j| {
        emit(j);
        len += 1;
    });
    len
}
