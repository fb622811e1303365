//! `Aᵀ · G` through the pattern's transposed view (a CSC pattern), so threads never write the
//! same row: with the values gathered into the view's column order once, or at every call.

use super::*;

/// `Aᵀ · G` on host slices (`A [m, k]`, one value per entry, `G [m, n]`): `out [k, n]`.
///
/// # Panics
/// If `val` does not hold one value per entry or `g` is not `[m, n]`.
pub fn spmm_t<T: Real, I: IndexElem, J: IndexElem>(a: CsrPattern<'_, I, J>, val: &[T], g: &[T], n: usize) -> Vec<T> {
    assert_eq!(val.len(), a.nnz(), "spmm_t: one value per stored entry");
    let (ccol, row, tval) = transpose_with(a, |j| val[j]);
    // SAFETY: the counting sort of a valid pattern `[m, k]` gives a valid pattern `[k, m]`.
    let at = unsafe { CsrPattern::new_unchecked(&ccol[..], &row[..], a.nrows()) };
    spmm(at, &tval, g, n)
}

/// `Aᵀ · G` with the CSC view of `A`'s pattern given. The values are gathered into column order
/// first: read through the permutation inside the kernel, each is a random access competing with
/// the rows of `G` for the line-fill buffers (measured: the 100k x 100k product takes 30 % longer).
///
/// # Panics
/// If `val` does not hold one value per entry or `g` is not `[m, n]`.
pub fn spmm_t_with<T: Real>(csc: &CscPattern, val: &[T], g: &[T], n: usize) -> Vec<T> {
    assert_eq!(val.len(), csc.nnz(), "spmm_t: one value per stored entry");
    let tval = Scratch::gathered(val, csc.perm());
    crate::on_transposed!(csc.as_csr(), |at| spmm(at, tval.get(), g, n))
}

/// `val` (one value per entry of the CSR pattern `csc` transposes) in the view's column order:
/// what [`spmm_t_gathered`] reads.
///
/// # Panics
/// If `val` does not hold one value per entry.
pub fn gather_column_values<T: Real>(csc: &CscPattern, val: &[T]) -> Vec<T> {
    assert_eq!(val.len(), csc.nnz(), "gather_column_values: one value per stored entry");
    let mut out = Vec::with_capacity(val.len());
    gather_into(val, csc.perm(), &mut out.spare_capacity_mut()[..val.len()]);
    // SAFETY: `gather_into` wrote every element of the first `nnz`.
    unsafe { out.set_len(val.len()) };
    out
}

/// `Aᵀ · G` with the CSC view of `A`'s pattern and the values already in its column order
/// ([`gather_column_values`]): for values that outlive one product (a constant matrix), whose
/// gather is then paid once.
///
/// # Panics
/// If `tval` does not hold one value per entry or `g` is not `[m, n]`.
pub fn spmm_t_gathered<T: Real>(csc: &CscPattern, tval: &[T], g: &[T], n: usize) -> Vec<T> {
    crate::on_transposed!(csc.as_csr(), |at| spmm(at, tval, g, n))
}

/// [`spmm_t_gathered`] stored transposed: `(Aᵀ · G)ᵀ = Gᵀ · A`, `out [n, k]` row-major (see
/// [`spmm_transposed_out`]).
///
/// # Panics
/// As [`spmm_t_gathered`].
pub fn spmm_t_gathered_transposed_out<T: Real>(csc: &CscPattern, tval: &[T], g: &[T], n: usize) -> Vec<T> {
    crate::on_transposed!(csc.as_csr(), |at| spmm_transposed_out(at, tval, g, n))
}
