//! [`CsrPattern`]: a compressed sparse pattern whose existence proves that walking it stays
//! inside its arrays, and [`CscPattern`], the transposed view computed from one.
//!
//! Every host kernel whose memory safety rests on a pattern (the products, the transposed
//! products, SDDMM, the fused backward) takes these types, not loose slices: the checked
//! constructor [`CsrPattern::new`] establishes the invariants once in O(rows + nnz), and
//! [`CsrPattern::new_unchecked`] is an `unsafe fn` whose caller vouches for them (the Flex side
//! of the extension traits, whose own contract requires a validated pattern). A `CscPattern` is
//! only ever built from a `CsrPattern`, so its invariants hold by construction.
//!
//! The invariants are the structural half of torch's compressed-layout invariants, the half
//! memory safety needs: `ptr` has `nrows + 1` elements, starts at 0, never decreases and ends
//! at `idx.len()`; every `idx` lies in `0..ncols`. Sortedness and uniqueness within a row are
//! not required (a row with a repeated column sums both entries, as a product should).

use crate::algebra::IndexElem;
use crate::error::{Result, SparseError};
use core::ops::Range;
use rayon::prelude::*;

/// A CSR (or, read the other way, CSC) pattern `[nrows, ncols]` over borrowed index arrays.
#[derive(Debug, Clone, Copy)]
pub struct CsrPattern<'a, I, J> {
    ptr: &'a [I],
    idx: &'a [J],
    ncols: usize,
}

/// Entries from which validation splits across rayon threads.
const PARALLEL_CHECK: usize = 1 << 18;

impl<'a, I: IndexElem, J: IndexElem> CsrPattern<'a, I, J> {
    /// The pattern of `ptr` (row pointers, `nrows + 1` of them) and `idx` (the column of each
    /// entry), `ncols` columns; an error naming the first violation (`crow_indices` and
    /// `col_indices` as the components, positions as in the arrays).
    pub fn new(ptr: &'a [I], idx: &'a [J], ncols: usize) -> Result<Self> {
        check_pointers("crow_indices", ptr, idx.len())?;
        check_bounded("col_indices", 1, idx, ncols)?;
        Ok(Self { ptr, idx, ncols })
    }

    /// A pattern without the checks.
    ///
    /// # Safety
    /// `ptr` is non-empty, `ptr[0] == 0`, `ptr` never decreases, `ptr[ptr.len() - 1] ==
    /// idx.len()`, and every element of `idx` lies in `0..ncols`: the invariants
    /// [`CsrPattern::new`] checks. Kernels read and write through unchecked offsets derived
    /// from them.
    pub unsafe fn new_unchecked(ptr: &'a [I], idx: &'a [J], ncols: usize) -> Self {
        debug_assert!(Self::new(ptr, idx, ncols).is_ok(), "CsrPattern::new_unchecked on an invalid pattern");
        Self { ptr, idx, ncols }
    }

    /// Rows (compressed segments).
    #[inline(always)]
    pub fn nrows(&self) -> usize {
        self.ptr.len() - 1
    }

    /// Columns (the range of `idx`).
    #[inline(always)]
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// Stored entries.
    #[inline(always)]
    pub fn nnz(&self) -> usize {
        self.idx.len()
    }

    /// The row pointers, `[nrows + 1]`.
    #[inline(always)]
    pub fn ptr(&self) -> &'a [I] {
        self.ptr
    }

    /// The column of each entry, `[nnz]`.
    #[inline(always)]
    pub fn idx(&self) -> &'a [J] {
        self.idx
    }

    /// The first entry of row `r` (`r <= nrows`): a position in `0..=nnz`.
    #[inline(always)]
    pub fn start(&self, r: usize) -> usize {
        self.ptr[r].to_i64() as usize
    }

    /// The entries of row `r`, a range inside `0..nnz`.
    #[inline(always)]
    pub fn row(&self, r: usize) -> Range<usize> {
        self.start(r)..self.start(r + 1)
    }

    /// The column of entry `j`, in `0..ncols`.
    #[inline(always)]
    pub fn col(&self, j: usize) -> usize {
        self.idx[j].to_i64() as usize
    }

    /// Cut points `0 = c_0 < ... < c_t = nrows` of row blocks holding about equal entries (and
    /// a bounded number of rows each), for about `tasks` parallel tasks; `[0]` with no rows.
    pub fn row_blocks(&self, tasks: usize) -> Vec<usize> {
        balanced_row_blocks(self.ptr, tasks)
    }

    /// The transposed view (CSC of this CSR pattern): see [`CscPattern`].
    pub fn transpose(&self) -> CscPattern {
        CscPattern::of(*self)
    }
}

/// Cut points of blocks of segments with about equal entries (and a bounded number of
/// segments each), over a non-decreasing pointer array `ptr [segments + 1]`, for about `tasks`
/// rayon tasks; `[0]` with no segment.
pub(crate) fn balanced_row_blocks<I: IndexElem>(ptr: &[I], tasks: usize) -> Vec<usize> {
    let m = ptr.len().saturating_sub(1);
    let nnz = ptr.last().map_or(0, |v| v.to_i64().max(0) as usize);
    let target = (nnz / tasks.max(1)).max(1);
    let mut cuts = vec![0usize];
    let mut last = ptr.first().map_or(0, |v| v.to_i64());
    let max_rows = (m / tasks.max(1)).max(1) * 4;
    for (r, p) in ptr.iter().enumerate().take(m).skip(1) {
        let at = p.to_i64();
        if at.saturating_sub(last) >= target as i64 || r - cuts.last().expect("non-empty") >= max_rows {
            cuts.push(r);
            last = at;
        }
    }
    if m > 0 {
        cuts.push(m);
    }
    cuts
}

/// `ptr` is a valid array of compressed pointers over `nnz` entries.
fn check_pointers<I: IndexElem>(component: &'static str, ptr: &[I], nnz: usize) -> Result<()> {
    let Some(first) = ptr.first() else {
        return Err(SparseError::ShapeMismatch { component, expected: vec![1], actual: vec![0] });
    };
    if first.to_i64() != 0 {
        return Err(SparseError::CompressedStart { component, batch: 0, value: first.to_i64() });
    }
    if let Some(i) = ptr.windows(2).position(|w| w[1] < w[0]) {
        return Err(SparseError::CompressedDecreasing {
            component,
            batch: 0,
            position: i + 1,
            previous: ptr[i].to_i64(),
            value: ptr[i + 1].to_i64(),
        });
    }
    let last = ptr[ptr.len() - 1].to_i64();
    if last != nnz as i64 {
        return Err(SparseError::CompressedEnd { component, batch: 0, expected: nnz, value: last });
    }
    Ok(())
}

/// Every element of `idx` lies in `0..bound`; the error names the first one that does not.
pub(crate) fn check_bounded<J: IndexElem>(component: &'static str, dim: usize, idx: &[J], bound: usize) -> Result<()> {
    // One unsigned compare per element (a negative index widens to a huge u64), vectorisable;
    // the position is searched for only on failure.
    let ok = |s: &[J]| s.iter().all(|&v| (v.to_i64() as u64) < bound as u64);
    let all = if idx.len() >= PARALLEL_CHECK { idx.par_chunks(1 << 16).all(ok) } else { ok(idx) };
    if all {
        return Ok(());
    }
    let position = idx.iter().position(|&v| (v.to_i64() as u64) >= bound as u64).expect("a failing element");
    Err(SparseError::IndexOutOfBounds { component, dim, position, value: idx[position].to_i64().into(), size: bound })
}

/// The CSC view of a CSR pattern `[m, k]`: column pointers `[k + 1]`, the row of each entry in
/// column order, and the permutation between the two orders. Built by a stable counting sort
/// from a [`CsrPattern`] (so its own invariants hold by construction: its fields are private),
/// computed once and shared (an operand's pattern owns it, see `SparseTensor`).
#[derive(Debug)]
pub struct CscPattern {
    ccol: Vec<i64>,
    row: Rows,
    perm: Vec<i64>,
    inv: Vec<i64>,
    nrows: usize,
}

/// The rows of a [`CscPattern`]'s entries, in 32 bits where the pattern's rows fit: the
/// products over the view stream them, and read half the bytes (measured on the bench's
/// `Y · A` products, 3-8 % faster than with 64-bit rows).
#[derive(Debug)]
enum Rows {
    Narrow(Vec<i32>),
    Wide(Vec<i64>),
}

/// A [`CscPattern`] as a CSR pattern `[k, m]`, its rows in the index type the view stores them
/// in ([`on_transposed`](crate::on_transposed) runs code on either).
#[derive(Clone, Copy, Debug)]
pub enum TransposedCsr<'a> {
    /// Rows in 32 bits (the pattern has fewer than 2^31 rows).
    Narrow(CsrPattern<'a, i64, i32>),
    /// Rows in 64 bits.
    Wide(CsrPattern<'a, i64, i64>),
}

/// Runs `$body` with `$a` bound to the pattern of `$t`, a
/// [`TransposedCsr`](crate::pattern::TransposedCsr), whichever index type its rows are stored in
/// (the body is compiled for both).
#[macro_export]
macro_rules! on_transposed {
    ($t:expr, |$a:ident| $body:expr) => {
        match $t {
            $crate::pattern::TransposedCsr::Narrow($a) => $body,
            $crate::pattern::TransposedCsr::Wide($a) => $body,
        }
    };
}

impl CscPattern {
    /// The CSC view of `a`.
    pub fn of<I: IndexElem, J: IndexElem>(a: CsrPattern<'_, I, J>) -> Self {
        // The inverse permutation is written as the entries are placed, in CSR order: inverted
        // after, from the permutation, its writes jumped a row's length apart within a column.
        let (ccol, row, perm, inv) = if i32::try_from(a.nrows()).is_ok() {
            // Every row is below `nrows`, which fits 31 bits.
            let (ccol, row, perm, inv) = transpose_placed(a, |j| j as i64, |r| r as i32, true);
            (ccol, Rows::Narrow(row), perm, inv)
        } else {
            let (ccol, row, perm, inv) = transpose_placed(a, |j| j as i64, |r| r as i64, true);
            (ccol, Rows::Wide(row), perm, inv)
        };
        let inv = inv.expect("asked for");
        Self { ccol, row, perm, inv, nrows: a.nrows() }
    }

    /// The transposed pattern as a CSR pattern `[k, m]`: row `c` lists the rows of column `c`.
    pub fn as_csr(&self) -> TransposedCsr<'_> {
        match &self.row {
            Rows::Narrow(row) => {
                // SAFETY: `ccol` and `row` come from the counting sort of a valid pattern of
                // `nrows` rows (`transpose_placed`): pointers from 0 to nnz, non-decreasing, rows
                // below `nrows`, which fits 31 bits where they are stored in 32 (`CscPattern::of`).
                let a = unsafe { CsrPattern::new_unchecked(&self.ccol, row, self.nrows) };
                TransposedCsr::Narrow(a)
            }
            Rows::Wide(row) => {
                // SAFETY: as above, the rows in 64 bits.
                let a = unsafe { CsrPattern::new_unchecked(&self.ccol, row, self.nrows) };
                TransposedCsr::Wide(a)
            }
        }
    }

    /// Column pointers `[k + 1]`.
    pub fn ccol(&self) -> &[i64] {
        &self.ccol
    }

    /// Row of each entry in column order, widened to 64 bits (a copy; the products read the
    /// rows as stored, through [`CscPattern::as_csr`]).
    pub fn rows_to_vec(&self) -> Vec<i64> {
        match &self.row {
            Rows::Narrow(row) => row.iter().map(|&r| r as i64).collect(),
            Rows::Wide(row) => row.clone(),
        }
    }

    /// CSR position of each entry in column order: a permutation of `0..nnz` (kernels may
    /// write through it in parallel, each place once).
    pub fn perm(&self) -> &[i64] {
        &self.perm
    }

    /// Column-order position of each CSR entry (the inverse of `perm`).
    pub fn inv(&self) -> &[i64] {
        &self.inv
    }

    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.perm.len()
    }

    /// The view with its rows in 64 bits, as a pattern of 2^31 rows or more has them: the
    /// tests run the wide route on small patterns.
    #[cfg(test)]
    pub(crate) fn widened(self) -> Self {
        Self { row: Rows::Wide(self.rows_to_vec()), ..self }
    }
}

/// The transposed view of one pattern, computed on first use and kept: what a tensor (or a
/// layer) owns beside its indices, so that every transposed product and backward pass over the
/// pattern reuses one counting sort (as costly as a product). Clones of a pattern share it
/// through an `Arc`.
///
/// Beside the view, a slot for one value in the caller's keeping ([`TransposeCell::with_slot`]):
/// the backend keeps there the last values it gathered into the view's column order, with
/// what identifies the values they came from (or, on a Cube device, the view uploaded there);
/// a second one for the tensor layer's plans over the pattern
/// ([`TransposeCell::with_plans`]: softmax segments); and a third for the backend's record of
/// the index arrays whose check passed ([`TransposeCell::with_checks`]), so that a host kernel
/// checks a pattern once, not at every call.
#[derive(Debug, Default)]
pub struct TransposeCell(std::sync::OnceLock<CscPattern>, Slot, Slot, Slot);

/// [`TransposeCell`]'s slot: any value, behind a lock.
#[derive(Default)]
struct Slot(std::sync::Mutex<Option<Box<dyn core::any::Any + Send + Sync>>>);

impl core::fmt::Debug for Slot {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Slot")
    }
}

impl TransposeCell {
    /// An empty cell.
    pub fn new() -> Self {
        Self::default()
    }

    /// The transposed view of `a`, computed on the first call. A cell belongs to one pattern:
    /// a call with a pattern of another shape or entry count is a panic (a cell shared by
    /// mistake), never a view used against the wrong arrays.
    pub fn of<I: IndexElem, J: IndexElem>(&self, a: CsrPattern<'_, I, J>) -> &CscPattern {
        let t = self.0.get_or_init(|| a.transpose());
        assert!(
            t.nnz() == a.nnz() && t.ccol().len() == a.ncols() + 1 && t.nrows == a.nrows(),
            "TransposeCell: the cell holds the transpose of another pattern"
        );
        t
    }

    /// Whether the view was computed.
    pub fn is_computed(&self) -> bool {
        self.0.get().is_some()
    }

    /// Runs `f` on the cell's slot under its lock (a panic in an earlier `f` leaves the slot
    /// as it was). `f` must not reach this cell again (the lock is not reentrant) nor run
    /// parallel work that might: keep it to reading and replacing the slot.
    pub fn with_slot<R>(&self, f: impl FnOnce(&mut Option<Box<dyn core::any::Any + Send + Sync>>) -> R) -> R {
        let mut slot = self.1 .0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut slot)
    }

    /// Runs `f` on the cell's second slot, the plans the tensor layer derives from the pattern,
    /// under the same rules as [`TransposeCell::with_slot`].
    pub fn with_plans<R>(&self, f: impl FnOnce(&mut Option<Box<dyn core::any::Any + Send + Sync>>) -> R) -> R {
        let mut slot = self.2 .0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut slot)
    }

    /// Runs `f` on the cell's third slot, the backend's record of the index arrays it checked
    /// against this pattern, under the same rules as [`TransposeCell::with_slot`]. Only the
    /// backend that wrote a record can read it (the record's type is its own), so a record
    /// vouches for nothing but what that backend checked.
    pub fn with_checks<R>(&self, f: impl FnOnce(&mut Option<Box<dyn core::any::Any + Send + Sync>>) -> R) -> R {
        let mut slot = self.3 .0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut slot)
    }
}

/// `(ccol [k + 1], row [nnz], value(j) in column order)` of the CSR pattern `a` (`value(j)` the
/// value, or the CSR position, of entry `j`). A stable counting sort on the column, parallel
/// over row blocks: each block counts its columns, exclusive offsets are laid out
/// (column, block)-major, and each block scatters its entries to its own slots, so no two
/// threads write the same place.
pub(crate) fn transpose_with<T: Copy + Send + Sync, I: IndexElem, J: IndexElem>(
    a: CsrPattern<'_, I, J>,
    value: impl Fn(usize) -> T + Sync,
) -> (Vec<i64>, Vec<i64>, Vec<T>) {
    let (ccol, row, tval, _) = transpose_placed(a, value, |r| r as i64, false);
    (ccol, row, tval)
}

/// [`transpose_with`], its rows as `row_of` writes them (the caller's index type, which holds
/// every row), and with `inverse` the place in column order of each entry `j` (in CSR order),
/// written as the entries are placed.
fn transpose_placed<T: Copy + Send + Sync, R: Copy + Send + Sync, I: IndexElem, J: IndexElem>(
    a: CsrPattern<'_, I, J>,
    value: impl Fn(usize) -> T + Sync,
    row_of: impl Fn(usize) -> R + Sync,
    inverse: bool,
) -> (Vec<i64>, Vec<R>, Vec<T>, Option<Vec<i64>>) {
    let (nnz, k) = (a.nnz(), a.ncols());
    let tasks = if nnz >= crate::algebra::PARALLEL_MIN { rayon::current_num_threads().clamp(1, 8) } else { 1 };
    let cuts = a.row_blocks(tasks);
    let mut hists: Vec<Vec<usize>> = cuts
        .par_windows(2)
        .map(|w| {
            let mut h = vec![0usize; k];
            for j in a.start(w[0])..a.start(w[1]) {
                h[a.col(j)] += 1;
            }
            h
        })
        .collect();
    let mut ccol = vec![0i64; k + 1];
    let mut running = 0usize;
    for c in 0..k {
        ccol[c] = running as i64;
        for h in hists.iter_mut() {
            let n = h[c];
            h[c] = running;
            running += n;
        }
    }
    ccol[k] = running as i64;
    assert_eq!(running, nnz, "the row blocks cover every entry");
    if hists.len() == 1 && k >= BUCKETS_FROM_COLUMNS && [a.nrows(), k, nnz].iter().all(|&v| u32::try_from(v).is_ok()) {
        let (row, tval, inv) = scatter_by_buckets(a, &value, &row_of, &ccol, inverse);
        return (ccol, row, tval, inv);
    }
    let mut row: Vec<R> = Vec::with_capacity(nnz);
    let mut tval: Vec<T> = Vec::with_capacity(nnz);
    let mut inv: Vec<i64> = Vec::with_capacity(if inverse { nnz } else { 0 });
    let (rp, vp, ip) = (SendPtr(row.as_mut_ptr()), SendPtr(tval.as_mut_ptr()), SendPtr(inv.as_mut_ptr()));
    cuts.par_windows(2).zip(hists.par_iter_mut()).for_each(|(w, next)| {
        for r in w[0]..w[1] {
            for j in a.row(r) {
                let c = a.col(j);
                let p = next[c];
                next[c] += 1;
                // SAFETY: the pattern is valid (its type says so), so the blocks' counts
                // partition 0..nnz by (column, block): `p < nnz`, and each slot is written by
                // exactly one block, once.
                unsafe {
                    rp.at(p).write(row_of(r));
                    vp.at(p).write(value(j));
                }
                if inverse {
                    // SAFETY: `j < nnz` is an entry of this block's rows (blocks partition the
                    // entries), and `inv` holds `nnz` elements when `inverse`.
                    unsafe { ip.at(j).write(p as i64) };
                }
            }
        }
    });
    // SAFETY: every one of the nnz slots was written above, and with `inverse` every entry's
    // place.
    unsafe {
        row.set_len(nnz);
        tval.set_len(nnz);
        if inverse {
            inv.set_len(nnz);
        }
    }
    (ccol, row, tval, inverse.then_some(inv))
}

/// Columns from which a transpose in one block scatters in two passes ([`scatter_by_buckets`]).
/// One pass writes a stream per column, and a few hundred streams outgrow the L1 cache; where
/// the columns start a power of two apart (every column of a DNN layer holds 32 entries), a
/// row's entries fall in one cache set. Measured on a 1024 x 1024 layer of 32 entries a row
/// with its columns 32 apart, the whole CSC view (with the inverse permutation written as the
/// entries are placed): 0.65-0.8 ms in one pass, 0.45-0.55 ms in two, on a busy host.
const BUCKETS_FROM_COLUMNS: usize = 256;

/// The scatter of [`transpose_with`] for one block, in two passes of about `sqrt(k)` write
/// streams each: the entries go to buckets of about `sqrt(k)` columns as `(column, row,
/// entry)` records (in row order), then each bucket's records go to their columns. Stable:
/// each column's entries keep their row order. `ccol` is the pattern's column pointers; rows,
/// columns and entries fit 32 bits.
fn scatter_by_buckets<T: Copy, R: Copy, I: IndexElem, J: IndexElem>(
    a: CsrPattern<'_, I, J>,
    value: &impl Fn(usize) -> T,
    row_of: &impl Fn(usize) -> R,
    ccol: &[i64],
    inverse: bool,
) -> (Vec<R>, Vec<T>, Option<Vec<i64>>) {
    let (nnz, k) = (a.nnz(), a.ncols());
    let shift = k.next_power_of_two().trailing_zeros().div_ceil(2);
    // Bucket `b`'s records start `b * SKEW` records past its columns' first slot: where the
    // buckets hold equal counts, a power of two apart, their write streams would share the
    // cache sets (and the 4 KB page offsets); 5 records are 60 bytes.
    const SKEW: usize = 5;
    let buckets = k.div_ceil(1 << shift);
    let area = |b: usize| ccol[(b << shift).min(k)] as usize + b * SKEW;
    let mut next: Vec<usize> = (0..buckets).map(area).collect();
    let mut records = vec![[0u32; 3]; nnz + buckets * SKEW];
    for r in 0..a.nrows() {
        for j in a.row(r) {
            let c = a.col(j);
            let slot = &mut next[c >> shift];
            // Every column, row and entry fits 32 bits (the caller's check).
            records[*slot] = [c as u32, r as u32, j as u32];
            *slot += 1;
        }
    }
    let mut next: Vec<usize> = ccol[..k].iter().map(|&p| p as usize).collect();
    let mut row: Vec<R> = Vec::with_capacity(nnz);
    let mut tval: Vec<T> = Vec::with_capacity(nnz);
    let mut inv = if inverse { vec![0i64; nnz] } else { Vec::new() };
    {
        let (rs, vs) = (&mut row.spare_capacity_mut()[..nnz], &mut tval.spare_capacity_mut()[..nnz]);
        for &[c, r, j] in (0..buckets).flat_map(|b| &records[area(b)..area(b + 1) - SKEW]) {
            let slot = &mut next[c as usize];
            rs[*slot].write(row_of(r as usize));
            vs[*slot].write(value(j as usize));
            if inverse {
                inv[j as usize] = *slot as i64;
            }
            *slot += 1;
        }
    }
    // SAFETY: the records are the pattern's entries, each once; the slots of column `c` run
    // from `ccol[c]` over its count of entries, so they partition `0..nnz` and every slot
    // was written above (an index out of the spare room would have panicked).
    unsafe {
        row.set_len(nnz);
        tval.set_len(nnz);
    }
    (row, tval, inverse.then_some(inv))
}

/// A raw pointer tasks write through at disjoint positions.
pub(crate) struct SendPtr<T>(pub(crate) *mut T);
// SAFETY: the pointer is only written through at positions each task owns (the callers'
// partitions), so sharing it across threads races on nothing.
unsafe impl<T> Send for SendPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SendPtr<T> {}
impl<T> SendPtr<T> {
    /// The address of element `i` (no access). Callers keep `i` inside the allocation before
    /// writing through it.
    #[inline(always)]
    pub(crate) fn at(&self, i: usize) -> *mut T {
        self.0.wrapping_add(i)
    }
}

#[cfg(test)]
mod tests;
