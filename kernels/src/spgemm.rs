//! SpGEMM on CSR patterns, Gustavson's row-by-row product `C = A · B`, and the gradients of
//! its values w.r.t. both operands' values as masked sparse products.
//!
//! - [`spgemm`]: `C` whole (row pointers, sorted columns, values) in one pass over the partial
//!   products: each row block computes its rows into its own arrays, which are then copied
//!   into place. The unmasked forward.
//! - [`spgemm_symbolic`]: the pattern of `C` (row pointers and the sorted columns of each row),
//!   optionally restricted to a mask pattern (GraphBLAS's masked `mxm`): integer work only,
//!   a pass that counts each row and a pass that fills it.
//! - [`spgemm_numeric`]: the values of `A · B` on a given pattern (the symbolic pass's, or any
//!   other: products that fall outside it are skipped).
//! - [`spgemm_grad_a`], [`spgemm_grad_b`]: for an output gradient `G` on `C`'s pattern,
//!   `dA = (G · Bᵀ)` on `A`'s pattern and `dB = (Aᵀ · G)` on `B`'s pattern, never densified.
//!
//! Every row picks its accumulator by its product count (`Σ |B_p|` over its entries `p`):
//! narrow rows (at most [`NARROW`] products) sort their few products by column and merge them
//! (the numeric pass finds each product's place in the row by binary search instead),
//! touching no `n`-sized array; wider rows use a dense accumulator over the `n` columns and
//! record which columns they reached, in scratch kept per thread and all clear between rows
//! (each row clears exactly what it set), read back in ascending column order without a sort.
//! The two phases record in a two-level bitmap (a bit per column, a bit per word of those),
//! drained word by set word; the one pass picks the record by the row's products per column:
//! a byte per column where they are many, the bitmap's low words alone where they outnumber
//! the words, both levels for the sparsest rows.
//!
//! Where `A`'s rows are dense (an eighth of `k` or more, columns strictly increasing) and `B`'s
//! values finite, the one pass gathers up to `LANES` (64) such rows of a row block at once,
//! skipping the others (an empty or sparse row costs a dense block as much as a dense one),
//! as a dense block: the rows laid out by column in groups of sixteen lanes, `B` by columns (a
//! stable transpose), each column of the product one vector sum per group over the column's
//! entries, with the lanes reached as a bit mask. Each entry of `B` read feeds every group. The
//! terms are the row-by-row product's, in its order, plus products of the block's zeros, which
//! leave every sum as it is. The rows are written out as the walk of the row block reaches them.
//!
//! Where each entry of `B` is read twice or more on average, the one pass first copies `B`
//! with each entry's column, in 32 bits, beside its value (`PackedB`): a row of `B` read at
//! random is then one run of lines instead of two (8 bytes an entry for f32 instead of 12).
//!
//! Rows run in parallel in blocks balanced by product count. Each output value sums its
//! products from zero in the order of `A`'s row entries, then of `B`'s row entries, whatever
//! the block cuts, the accumulator or the pass: results are bit-identical across runs, thread
//! counts, and the one-pass and two-phase routes. The gradient w.r.t. `B` sums per fixed
//! block of rows into private partial arrays, then adds the partials in block order; the
//! blocks depend only on the operands, not on the thread count.

use crate::alloc::try_vec;
use crate::dense::transpose_strided;
use crate::error::{Result, SparseError};
use crate::index::IndexElem;
use crate::pattern::{balanced_row_blocks, transpose_with, CsrPattern, SendPtr};
use crate::real::Real;
use crate::simd::multiversion;
use core::cell::RefCell;
use core::mem::MaybeUninit;
use core::ops::Range;
use rayon::prelude::*;

/// Rows with at most this many products take the sort-merge (symbolic) and binary-search
/// (numeric) path instead of the dense accumulator.
pub const NARROW: usize = 32;

/// Row blocks per thread: enough that rayon balances the uneven ones.
const BLOCKS_PER_THREAD: usize = 8;

/// The product count of each row as prefix sums `[m + 1]` (`work[i + 1] - work[i]` products in
/// row `i`), or the error when the total overflows.
fn row_work<I: IndexElem, J: IndexElem>(a: CsrPattern<'_, I, J>, b: CsrPattern<'_, I, J>) -> Result<Vec<i64>> {
    let m = a.nrows();
    let overflow = || SparseError::Allocation { bytes: usize::MAX, what: "spgemm: partial products" };
    // Each row's count in parallel (rows of a dense `A` hold thousands of entries: serial, this
    // was a twentieth of a sparse DNN layer), then their running sum.
    let mut counts: Vec<Option<i64>> = try_vec(m, "spgemm: row products")?;
    (0..m)
        .into_par_iter()
        .with_min_len(64)
        .map(|i| {
            a.row(i).try_fold(0i64, |t, q| {
                let p = a.col(q);
                t.checked_add((b.start(p + 1) - b.start(p)) as i64)
            })
        })
        .collect_into_vec(&mut counts);
    let mut work = try_vec(m + 1, "spgemm: row products")?;
    work.push(0i64);
    let mut total = 0i64;
    for c in counts {
        total = c.and_then(|c| total.checked_add(c)).ok_or_else(overflow)?;
        work.push(total);
    }
    Ok(work)
}

/// The number of partial products `a[i, p] * b[p, j]` of `A · B` (the work of every phase).
///
/// # Panics
/// If `a`'s columns are not `b`'s rows.
pub fn spgemm_products<I: IndexElem, J: IndexElem>(a: CsrPattern<'_, I, J>, b: CsrPattern<'_, I, J>) -> Result<u64> {
    assert_eq!(a.ncols(), b.nrows(), "spgemm: A's columns are B's rows");
    Ok(*row_work(a, b)?.last().expect("m + 1 entries") as u64)
}

/// Row blocks balanced by products for the thread pool.
fn blocks(work: &[i64]) -> Vec<usize> {
    balanced_row_blocks(work, rayon::current_num_threads() * BLOCKS_PER_THREAD)
}

std::thread_local! {
    /// Per-thread marker bytes, bitmap words and accumulator words, all zero between uses
    /// (each row clears what it set); `dirty` says a use did not finish (a panic), so the
    /// arrays are re-zeroed.
    static SCRATCH: RefCell<Workspace> = const {
        RefCell::new(Workspace { marks: Vec::new(), bits: Vec::new(), words: Vec::new(), dirty: false })
    };
}

struct Workspace {
    marks: Vec<u8>,
    bits: Vec<u64>,
    words: Vec<u64>,
    dirty: bool,
}

/// A thread's zeroed scratch for rows over `n` columns: marker bytes `[n]`, a two-level bitmap
/// (`n` bits and a bit per word of them) and an accumulator `[n]`.
struct Rows<'a, T> {
    marks: &'a mut [u8],
    bits: Bitmap<'a>,
    acc: &'a mut [T],
}

/// Runs `f` with this thread's zeroed scratch over `n` columns (the accumulator of `T`, f32 or
/// f64; another `Real` gets a fresh zeroed vector), which `f` must leave zeroed.
fn with_workspace<T: Real, R>(n: usize, f: impl FnOnce(Rows<'_, T>) -> R) -> R {
    let fits_words = core::mem::size_of::<T>() <= 8
        && core::mem::align_of::<T>() <= 8
        && (core::any::TypeId::of::<T>() == core::any::TypeId::of::<f32>()
            || core::any::TypeId::of::<T>() == core::any::TypeId::of::<f64>());
    let nw = n.div_ceil(64);
    let nt = nw.div_ceil(64);
    SCRATCH.with(|cell| {
        let Ok(mut ws) = cell.try_borrow_mut() else {
            // Re-entered on this thread (a nested pool call): private arrays.
            let (mut marks, mut bits, mut acc) = (vec![0u8; n], vec![0u64; nw + nt], vec![T::default(); n]);
            let (words, top) = bits.split_at_mut(nw);
            return f(Rows { marks: &mut marks, bits: Bitmap { words, top }, acc: &mut acc });
        };
        if ws.dirty {
            ws.marks.iter_mut().for_each(|v| *v = 0);
            ws.bits.iter_mut().for_each(|v| *v = 0);
            ws.words.iter_mut().for_each(|v| *v = 0);
        }
        if ws.marks.len() < n {
            ws.marks.resize(n, 0);
        }
        // The bitmap's words, then its top words, at fixed places for this `n`: clear
        // words past them are never read.
        if ws.bits.len() < nw + nt {
            ws.bits.resize(nw + nt, 0);
        }
        if fits_words && ws.words.len() < n {
            ws.words.resize(n, 0);
        }
        ws.dirty = true;
        let Workspace { marks, bits, words, .. } = &mut *ws;
        let (bw, rest) = bits.split_at_mut(nw);
        let bits = Bitmap { words: bw, top: &mut rest[..nt] };
        let out = if fits_words {
            // SAFETY: `T` is f32 or f64 (checked above), whose all-zero bit pattern is 0.0 and
            // whose size and alignment fit a u64's: `n` elements lie inside the `n` words.
            let acc = unsafe { core::slice::from_raw_parts_mut(words.as_mut_ptr() as *mut T, n) };
            f(Rows { marks: &mut marks[..n], bits, acc })
        } else {
            let mut acc = vec![T::default(); n];
            f(Rows { marks: &mut marks[..n], bits, acc: &mut acc })
        };
        ws.dirty = false;
        out
    })
}

/// A two-level bitmap over `0..n`: a bit per column, and a bit per word of those. Setting is
/// branch-free, and draining walks the set columns in ascending order in time proportional to
/// their count plus `n / 4096`: a row's columns come out sorted without a sort.
struct Bitmap<'a> {
    words: &'a mut [u64],
    top: &'a mut [u64],
}

impl Bitmap<'_> {
    #[inline(always)]
    fn set(&mut self, j: usize) {
        let w = j >> 6;
        self.words[w] |= 1u64 << (j & 63);
        self.top[w >> 6] |= 1u64 << (w & 63);
    }

    /// Calls `f` on every set column in ascending order, clearing the bitmap; top words in
    /// `t0..=t1` only (the caller's bounds of what it set).
    #[inline(always)]
    fn drain(&mut self, t0: usize, t1: usize, mut f: impl FnMut(usize)) {
        for t in t0..=t1 {
            let mut x = core::mem::take(&mut self.top[t]);
            while x != 0 {
                let w = t * 64 + x.trailing_zeros() as usize;
                x &= x - 1;
                let mut y = core::mem::take(&mut self.words[w]);
                while y != 0 {
                    f(w * 64 + y.trailing_zeros() as usize);
                    y &= y - 1;
                }
            }
        }
    }

    /// Sets column `j`'s bit only, not its word's: for rows that drain with
    /// [`Bitmap::drain_words`].
    #[inline(always)]
    fn set_low(&mut self, j: usize) {
        self.words[j >> 6] |= 1u64 << (j & 63);
    }

    /// Calls `f` on every set column of words `w0..=w1` in ascending order, clearing them: the
    /// drain of rows set by [`Bitmap::set_low`], whose products outnumber the words.
    #[inline(always)]
    fn drain_words(&mut self, w0: usize, w1: usize, mut f: impl FnMut(usize)) {
        for w in w0..=w1 {
            let mut y = core::mem::take(&mut self.words[w]);
            while y != 0 {
                f(w * 64 + y.trailing_zeros() as usize);
                y &= y - 1;
            }
        }
    }

    /// The number of set columns, clearing the bitmap (top words in `t0..=t1`).
    #[inline(always)]
    fn count(&mut self, t0: usize, t1: usize) -> usize {
        let mut total = 0;
        for t in t0..=t1 {
            let mut x = core::mem::take(&mut self.top[t]);
            while x != 0 {
                let w = t * 64 + x.trailing_zeros() as usize;
                x &= x - 1;
                total += core::mem::take(&mut self.words[w]).count_ones() as usize;
            }
        }
        total
    }
}

/// Prefetches the line holding `p` (no-op off x86-64; a prefetch never faults).
#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching never faults, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Entries of `A`'s row ahead at which the rows of `B` they select are prefetched (their
/// pointers twice as far ahead): the rows of `B` are scattered, and a walk that waits for each
/// is latency-bound.
const AHEAD: usize = 8;

/// Prefetches what entry `q + AHEAD` of `A` will read of `B` (and the pointers of `q + 2 AHEAD`).
#[inline(always)]
fn prefetch_b<T, J: IndexElem, B: RowsOfB<T>>(acol: &[J], b: &B, q: usize) {
    if let Some(p) = acol.get(q + 2 * AHEAD) {
        b.prefetch_pointer(p.to_i64() as usize);
    }
    if let Some(p) = acol.get(q + AHEAD) {
        b.prefetch_row(p.to_i64() as usize);
    }
}

/// The rows of `B` as the products read them: each entry's column and value.
trait RowsOfB<T>: Sync {
    /// A row's entries, in `B`'s order.
    type Row<'s>: Iterator<Item = (usize, T)>
    where
        Self: 's;
    /// Row `p`'s entries.
    fn row(&self, p: usize) -> Self::Row<'_>;
    /// Prefetches row `p`'s pointers.
    fn prefetch_pointer(&self, p: usize);
    /// Prefetches the lines holding row `p`'s first and last entries: a row of ten entries
    /// spans two lines in most places, and the line after the first is not fetched for us.
    fn prefetch_row(&self, p: usize);
}

/// `B` as given: its pattern and one value per entry (the values may be the columns again,
/// for the passes that need no values).
#[derive(Clone, Copy)]
struct PlainB<'a, I, J, V> {
    b: CsrPattern<'a, I, J>,
    val: &'a [V],
}

impl<I: IndexElem, J: IndexElem, V: Copy + Sync> RowsOfB<V> for PlainB<'_, I, J, V> {
    type Row<'s>
        =
        core::iter::Map<core::iter::Zip<core::slice::Iter<'s, J>, core::slice::Iter<'s, V>>, fn((&J, &V)) -> (usize, V)>
    where
        Self: 's;

    #[inline(always)]
    fn row(&self, p: usize) -> Self::Row<'_> {
        let r = self.b.row(p);
        self.b.idx()[r.clone()].iter().zip(&self.val[r]).map(|(c, &v)| (c.to_i64() as usize, v))
    }

    #[inline(always)]
    fn prefetch_pointer(&self, p: usize) {
        prefetch(self.b.ptr().as_ptr().wrapping_add(p));
    }

    #[inline(always)]
    fn prefetch_row(&self, p: usize) {
        let (s, e) = (self.b.start(p), self.b.start(p + 1).max(1) - 1);
        prefetch(self.b.idx().as_ptr().wrapping_add(s));
        prefetch(self.val.as_ptr().wrapping_add(s));
        prefetch(self.b.idx().as_ptr().wrapping_add(e));
        prefetch(self.val.as_ptr().wrapping_add(e));
    }
}

/// An entry of [`PackedB`]: its column (`n` fits 32 bits) beside its value.
#[derive(Clone, Copy)]
#[repr(C)]
struct Entry<T> {
    col: u32,
    val: T,
}

/// `B` with each entry's column and value side by side, the columns in 32 bits: a row read
/// at random costs one stream of lines instead of two, a third as many bytes for f32
/// (`i64` columns and f32 values took 12 bytes an entry, here 8).
struct PackedB<'a, I, T> {
    ptr: &'a [I],
    ent: Vec<Entry<T>>,
}

impl<'a, I: IndexElem, T: Real> PackedB<'a, I, T> {
    /// `b` packed, or `None` where its columns do not fit 32 bits; the error when the copy
    /// cannot be had.
    fn of<J: IndexElem>(b: CsrPattern<'a, I, J>, bval: &[T]) -> Result<Option<Self>> {
        if u32::try_from(b.ncols()).is_err() {
            return Ok(None);
        }
        let mut ent = try_vec(b.nnz(), "spgemm: B packed")?;
        // Every column lies in `0..ncols` (a checked pattern), which fits 32 bits.
        b.idx()
            .par_iter()
            .zip(bval)
            .with_min_len(1 << 14)
            .map(|(c, &val)| Entry { col: c.to_i64() as u32, val })
            .collect_into_vec(&mut ent);
        Ok(Some(Self { ptr: b.ptr(), ent }))
    }
}

impl<I: IndexElem, T: Real> RowsOfB<T> for PackedB<'_, I, T> {
    type Row<'s>
        = core::iter::Map<core::slice::Iter<'s, Entry<T>>, fn(&Entry<T>) -> (usize, T)>
    where
        Self: 's;

    #[inline(always)]
    fn row(&self, p: usize) -> Self::Row<'_> {
        let (s, e) = (self.ptr[p].to_i64() as usize, self.ptr[p + 1].to_i64() as usize);
        self.ent[s..e].iter().map(|e| (e.col as usize, e.val))
    }

    #[inline(always)]
    fn prefetch_pointer(&self, p: usize) {
        prefetch(self.ptr.as_ptr().wrapping_add(p));
    }

    #[inline(always)]
    fn prefetch_row(&self, p: usize) {
        let (s, e) = (self.ptr[p].to_i64() as usize, self.ptr[p + 1].to_i64() as usize);
        prefetch(self.ent.as_ptr().wrapping_add(s));
        prefetch(self.ent.as_ptr().wrapping_add(e.max(1) - 1));
    }
}

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
fn row_columns<I: IndexElem, J: IndexElem, T, const EMIT: bool>(
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

/// The values of `A · B` on the pattern `c [m, n]` (one value per entry of `c`, summed over
/// the products that land on it; products outside `c` are skipped). `c`'s rows must be sorted
/// for its narrow rows to be found (a row out of order gets zeros there, never a wrong place);
/// [`spgemm_symbolic`]'s patterns and canonical masks are.
///
/// # Panics
/// If the operands' shapes or value counts disagree.
pub fn spgemm_numeric<T: Real, I: IndexElem, J: IndexElem>(
    a: CsrPattern<'_, I, J>,
    aval: &[T],
    b: CsrPattern<'_, I, J>,
    bval: &[T],
    c: CsrPattern<'_, I, J>,
) -> Vec<T> {
    check_operands(a, aval.len(), b, bval.len(), c);
    let n = b.ncols();
    let nnz = c.nnz();
    let work = row_work(a, b).expect("spgemm: the products were counted for the pattern");
    let cuts = blocks(&work);
    let mut out: Vec<T> = Vec::with_capacity(nnz);
    let dst = SendPtr(out.as_mut_ptr());
    let (acol, bcol, ccol) = (a.idx(), b.idx(), c.idx());
    cuts.par_windows(2).for_each(|w| {
        with_workspace::<T, _>(n, |ws| {
            let Rows { bits, acc, .. } = ws;
            let words = bits.words;
            for i in w[0]..w[1] {
                let row = c.row(i);
                let products = (work[i + 1] - work[i]) as usize;
                if products <= NARROW || row.len() <= 2 {
                    // Each product's place by binary search in the (sorted) row.
                    let cols = &ccol[row.clone()];
                    let mut vals = [T::default(); NARROW];
                    let mut heap;
                    let vals: &mut [T] = if row.len() <= NARROW {
                        &mut vals[..row.len()]
                    } else {
                        heap = vec![T::default(); row.len()];
                        &mut heap
                    };
                    for q in a.row(i) {
                        let (p, av) = (acol[q].to_i64() as usize, aval[q]);
                        for r in b.row(p) {
                            let j = bcol[r];
                            if let Ok(t) = cols.binary_search(&j) {
                                vals[t] = vals[t] + av * bval[r];
                            }
                        }
                    }
                    for (t, &v) in vals.iter().enumerate() {
                        // SAFETY: `row` lies inside `0..nnz` (c is a valid pattern) and the
                        // blocks partition the rows: each place is written once, by this row.
                        unsafe { dst.at(row.start + t).write(v) };
                    }
                } else {
                    // The row's columns as a bitmap: a product outside the row is skipped.
                    for e in row.clone() {
                        let j = ccol[e].to_i64() as usize;
                        words[j >> 6] |= 1u64 << (j & 63);
                    }
                    for q in a.row(i) {
                        prefetch_b(acol, &PlainB { b, val: bval }, q);
                        let (p, av) = (acol[q].to_i64() as usize, aval[q]);
                        for r in b.row(p) {
                            let j = bcol[r].to_i64() as usize;
                            if words[j >> 6] & (1u64 << (j & 63)) != 0 {
                                acc[j] = acc[j] + av * bval[r];
                            }
                        }
                    }
                    for e in row.clone() {
                        let j = ccol[e].to_i64() as usize;
                        // A column repeated in the row gets the sum once (and 0 after).
                        // SAFETY: as above.
                        unsafe { dst.at(e).write(acc[j]) };
                        acc[j] = T::default();
                        words[j >> 6] = 0;
                    }
                }
            }
        })
    });
    // SAFETY: the blocks cover every row of `c`, and every entry of a row is written.
    unsafe { out.set_len(nnz) };
    out
}

fn check_operands<I: IndexElem, J: IndexElem>(
    a: CsrPattern<'_, I, J>,
    na: usize,
    b: CsrPattern<'_, I, J>,
    nb: usize,
    c: CsrPattern<'_, I, J>,
) {
    assert_eq!(a.ncols(), b.nrows(), "spgemm: A's columns are B's rows");
    assert_eq!((c.nrows(), c.ncols()), (a.nrows(), b.ncols()), "spgemm: C is [m, n]");
    assert_eq!(na, a.nnz(), "spgemm: one value per entry of A");
    assert_eq!(nb, b.nnz(), "spgemm: one value per entry of B");
}

/// Scatters row `i` of `G` (on `c`'s pattern) into `gd`.
#[inline(always)]
fn scatter_row<T: Real, I: IndexElem, J: IndexElem>(c: CsrPattern<'_, I, J>, g: &[T], i: usize, gd: &mut [T]) {
    for e in c.row(i) {
        let j = c.col(e);
        gd[j] = gd[j] + g[e];
    }
}

/// Clears what [`scatter_row`] set.
#[inline(always)]
fn clear_row<T: Real, I: IndexElem, J: IndexElem>(c: CsrPattern<'_, I, J>, i: usize, gd: &mut [T]) {
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
fn grad_b_parts(products: i64) -> usize {
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

/// One row block's share of [`spgemm`]'s output: the length of each of its rows, then their
/// columns and values, rows one after the other.
struct Part<T, C> {
    lens: Vec<i64>,
    col: Vec<C>,
    val: Vec<T>,
}

impl<T: Real, C> Part<T, C> {
    /// Room for `more` entries, or the error when it cannot be had.
    fn reserve(&mut self, more: usize) -> Result<()> {
        let err = |_| SparseError::Allocation { bytes: usize::MAX, what: "spgemm: a block of the product" };
        self.col.try_reserve(more).map_err(err)?;
        self.val.try_reserve(more).map_err(err)
    }
}

/// `C = A · B` in CSR (row pointers, sorted columns, values) in one pass over the products:
/// each row block computes its rows into its own arrays (the narrow rows by a sort of their
/// few products, the wide ones by the dense accumulator and the bitmap), then the blocks are
/// copied into place. Against the two phases ([`spgemm_symbolic`], then [`spgemm_numeric`])
/// it walks the products once instead of three times, for one copy of the output; the sums
/// are the same, bit for bit (each value sums its products from zero in the order of `A`'s
/// row entries, then of `B`'s).
///
/// # Errors
/// An `Allocation` error when the product count overflows or the output cannot be had.
///
/// # Panics
/// If the operands' shapes or value counts disagree.
pub fn spgemm<T: Real, I: IndexElem, J: IndexElem>(
    a: CsrPattern<'_, I, J>,
    aval: &[T],
    b: CsrPattern<'_, I, J>,
    bval: &[T],
) -> Result<(Vec<i64>, Vec<i64>, Vec<T>)> {
    assert_eq!(a.ncols(), b.nrows(), "spgemm: A's columns are B's rows");
    assert_eq!(aval.len(), a.nnz(), "spgemm: one value per entry of A");
    assert_eq!(bval.len(), b.nnz(), "spgemm: one value per entry of B");
    let (m, n) = (a.nrows(), b.ncols());
    let work = row_work(a, b)?;
    let columns = dense_blocks_pay(a, b, bval).then(|| Columns::of(b, bval));
    let columns = columns.as_ref();
    let cuts = if columns.is_some() { dense_row_blocks(&work) } else { blocks(&work) };
    // The blocks keep their columns in 32 bits where they fit: a third fewer bytes written
    // and copied. `B` is packed where its rows are read often enough to pay for the copy.
    let products = *work.last().expect("m + 1 entries");
    let packed = if products >= PACK_READS.saturating_mul(b.nnz() as i64) { PackedB::of(b, bval)? } else { None };
    if let Some(packed) = packed {
        let parts: Vec<Part<T, u32>> = cuts
            .par_windows(2)
            .map(|w| with_workspace::<T, _>(n, |ws| product_rows(a, aval, &packed, n, w[0]..w[1], &work, columns, ws)))
            .collect::<Result<_>>()?;
        gather_parts(m, &parts, widen_u32)
    } else if u32::try_from(n).is_ok() {
        let plain = PlainB { b, val: bval };
        let parts: Vec<Part<T, u32>> = cuts
            .par_windows(2)
            .map(|w| with_workspace::<T, _>(n, |ws| product_rows(a, aval, &plain, n, w[0]..w[1], &work, columns, ws)))
            .collect::<Result<_>>()?;
        gather_parts(m, &parts, widen_u32)
    } else {
        let plain = PlainB { b, val: bval };
        let parts: Vec<Part<T, i64>> = cuts
            .par_windows(2)
            .map(|w| with_workspace::<T, _>(n, |ws| product_rows(a, aval, &plain, n, w[0]..w[1], &work, columns, ws)))
            .collect::<Result<_>>()?;
        gather_parts(m, &parts, |src, dst| {
            for (d, &c) in dst.iter_mut().zip(src) {
                d.write(c);
            }
        })
    }
}

/// Reads of each entry of `B` on average (products over `nnz(B)`) from which [`spgemm`] packs
/// `B`: the copy is one more read of each entry (and a write of 8 bytes), paid back where the
/// rows are read again. Measured on the square of `powerlaw(100000, 10)` (ten reads an entry),
/// packed ran about 10 % faster with one thread or two; so did 4096 x 4096 at 1 % squared.
const PACK_READS: i64 = 2;

/// Part columns in 32 bits widened into the output's.
fn widen_u32(src: &[u32], dst: &mut [MaybeUninit<i64>]) {
    for (d, &c) in dst.iter_mut().zip(src) {
        d.write(c as i64);
    }
}

/// The row blocks' parts, in block order, as one CSR `[m, n]`: row pointers from their
/// lengths, columns (through `widen`, which writes every element of its output) and values
/// copied into place in parallel.
fn gather_parts<T: Real, C: Sync>(
    m: usize,
    parts: &[Part<T, C>],
    widen: impl Fn(&[C], &mut [MaybeUninit<i64>]) + Sync,
) -> Result<(Vec<i64>, Vec<i64>, Vec<T>)> {
    let mut crow = try_vec::<i64>(m + 1, "spgemm: row pointers")?;
    crow.push(0);
    let mut offsets = Vec::with_capacity(parts.len());
    for part in parts {
        offsets.push(*crow.last().expect("crow[0]") as usize);
        for &len in &part.lens {
            let last = *crow.last().expect("crow[0]");
            crow.push(last + len);
        }
    }
    let nnz = *crow.last().expect("crow[0]") as usize;
    let mut col = try_vec::<i64>(nnz, "spgemm: output columns")?;
    let mut val = try_vec::<T>(nnz, "spgemm: output values")?;
    let (cdst, vdst) = (SendPtr(col.as_mut_ptr()), SendPtr(val.as_mut_ptr()));
    parts.par_iter().zip(offsets.par_iter()).for_each(|(part, &at)| {
        let len = part.col.len();
        // SAFETY: the parts hold consecutive rows in block order and `at` is the sum of the
        // lengths before this part: its `[at, at + len)` lies inside `0..nnz` (the capacity)
        // and no other part writes there.
        unsafe {
            widen(&part.col, core::slice::from_raw_parts_mut(cdst.at(at) as *mut MaybeUninit<i64>, len));
            core::ptr::copy_nonoverlapping(part.val.as_ptr(), vdst.at(at), len);
        }
    });
    // SAFETY: the parts cover `0..nnz` (their lengths sum to it), each written in full.
    unsafe {
        col.set_len(nnz);
        val.set_len(nnz);
    }
    Ok((crow, col, val))
}

/// A column index as a part stores it (`u32` where `n` fits, else `i64`).
trait PartIndex: Copy + Send + Sync {
    fn of(j: usize) -> Self;
}

impl PartIndex for u32 {
    #[inline(always)]
    fn of(j: usize) -> Self {
        j as u32
    }
}

impl PartIndex for i64 {
    #[inline(always)]
    fn of(j: usize) -> Self {
        j as i64
    }
}

/// Rows `rows` of `A · B` into a [`Part`], with this thread's clear scratch (left clear).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn product_rows<T: Real, I: IndexElem, J: IndexElem, B: RowsOfB<T>, C: PartIndex>(
    a: CsrPattern<'_, I, J>,
    aval: &[T],
    b: &B,
    n: usize,
    rows: Range<usize>,
    work: &[i64],
    columns: Option<&Columns<T>>,
    ws: Rows<'_, T>,
) -> Result<Part<T, C>> {
    let Rows { marks, mut bits, acc } = ws;
    let acol = a.idx();
    let words = n.div_ceil(64);
    let products = (work[rows.end] - work[rows.start]) as usize;
    // Room for the block's products, up to its share of a dense result; a wider guess only
    // reserves address space that is never touched.
    let guess = products.min(rows.len().saturating_mul(n));
    let mut part = Part { lens: try_vec(rows.len(), "spgemm: row lengths")?, col: Vec::new(), val: Vec::new() };
    part.reserve(guess)?;
    // With `B` by columns at hand, the block's dense rows go through dense blocks, gathered
    // as the walk reaches them; the others row by row.
    let mut dense = DenseBlock::default();
    let mut gathered = rows.start;
    for i in rows.clone() {
        if let Some(cols) = columns {
            if i >= gathered {
                gathered = dense.gather(a, aval, cols, i..rows.end);
            }
            if dense.holds(i) {
                dense.emit(&mut part)?;
                continue;
            }
        }
        let products = (work[i + 1] - work[i]) as usize;
        let start = part.col.len();
        if products <= NARROW {
            // The few products in walk order, stably sorted by column, then summed per column
            // in that order.
            let mut prods = [(0usize, T::default()); NARROW];
            let mut len = 0;
            for q in a.row(i) {
                let av = aval[q];
                for (j, v) in b.row(a.col(q)) {
                    prods[len] = (j, av * v);
                    len += 1;
                }
            }
            let prods = &mut prods[..len];
            insertion_sort_by_column(prods);
            part.reserve(len)?;
            let mut t = 0;
            while t < len {
                let j = prods[t].0;
                let mut s = T::default();
                while t < len && prods[t].0 == j {
                    s = s + prods[t].1;
                    t += 1;
                }
                part.col.push(C::of(j));
                part.val.push(s);
            }
        } else {
            // How the row records its columns, by its products against `n`: rows with many
            // products per column mark bytes (a plain store, where bitmap words would chain
            // each product's read-modify-write to the last one's in the same word) and scan
            // them; rows with more products than bitmap words set only the words (not the top
            // word, which every product of a narrow `n` would share) and scan the words; the
            // sparsest rows set both levels and drain the set words only.
            let mode = if products >= MARK_PRODUCTS_PER_COLUMN.saturating_mul(n) {
                Record::Marks
            } else if products >= words {
                Record::Words
            } else {
                Record::Bitmap
            };
            let (lo, hi) = if let Record::Marks = mode {
                // The scan covers all of `0..n` (no bounds kept per product): at least two
                // products per column pay for it.
                for q in a.row(i) {
                    prefetch_b(acol, b, q);
                    let (p, av) = (acol[q].to_i64() as usize, aval[q]);
                    for (j, v) in b.row(p) {
                        marks[j] = 1;
                        acc[j] = acc[j] + av * v;
                    }
                }
                (0, n - 1)
            } else {
                // One loop per record, so that the products' loop tests nothing but its end.
                let (mut lo, mut hi) = (usize::MAX, 0usize);
                let words_only = matches!(mode, Record::Words);
                for q in a.row(i) {
                    prefetch_b(acol, b, q);
                    let (p, av) = (acol[q].to_i64() as usize, aval[q]);
                    let products = b.row(p);
                    if words_only {
                        for (j, v) in products {
                            bits.set_low(j);
                            acc[j] = acc[j] + av * v;
                            lo = lo.min(j);
                            hi = hi.max(j);
                        }
                    } else {
                        for (j, v) in products {
                            bits.set(j);
                            acc[j] = acc[j] + av * v;
                            lo = lo.min(j);
                            hi = hi.max(j);
                        }
                    }
                }
                (lo, hi)
            };
            // At most one column per product, all in `lo..=hi`.
            let cap = products.min(hi - lo + 1);
            part.reserve(cap)?;
            let (cs, vs) = (&mut part.col.spare_capacity_mut()[..cap], &mut part.val.spare_capacity_mut()[..cap]);
            let mut len = 0;
            let emit = |j: usize| {
                cs[len].write(C::of(j));
                vs[len].write(acc[j]);
                acc[j] = T::default();
                len += 1;
            };
            match mode {
                Record::Marks => drain_marks(&mut marks[..], lo, hi, emit),
                Record::Words => bits.drain_words(lo >> 6, hi >> 6, emit),
                Record::Bitmap => bits.drain(lo >> 12, hi >> 12, emit),
            }
            // SAFETY: the drain wrote the first `len` spare elements of both (`len <= cap`:
            // indexing checked it).
            unsafe {
                part.col.set_len(start + len);
                part.val.set_len(start + len);
            }
        }
        part.lens.push((part.col.len() - start) as i64);
    }
    Ok(part)
}

/// How a wide row of [`spgemm`] records which columns its products reached.
#[derive(Clone, Copy)]
enum Record {
    /// A byte per column, scanned eight at a time.
    Marks,
    /// The bitmap's low words only, scanned.
    Words,
    /// Both levels of the bitmap, drained word by set word.
    Bitmap,
}

/// Products per column from which a row records its columns in bytes: measured, bytes pay at
/// 20 products per column (a 1024-neuron sparse DNN layer) and lose at 0.4 (4096 x 4096 at 1 %
/// squared), where the scan of `n` bytes outweighs the products.
const MARK_PRODUCTS_PER_COLUMN: usize = 2;

/// Calls `f` on every marked column of `lo..=hi` in ascending order, clearing the marks: eight
/// at a time.
#[inline(always)]
fn drain_marks(marks: &mut [u8], lo: usize, hi: usize, mut f: impl FnMut(usize)) {
    let span = &mut marks[lo..=hi];
    let mut chunks = span.chunks_exact_mut(8);
    for (c, chunk) in (&mut chunks).enumerate() {
        let mut x = u64::from_le_bytes((&*chunk).try_into().expect("eight marks"));
        if x != 0 {
            chunk.fill(0);
            while x != 0 {
                f(lo + 8 * c + (x.trailing_zeros() / 8) as usize);
                x &= x - 1;
            }
        }
    }
    let rest = chunks.into_remainder();
    let base = hi + 1 - rest.len();
    for (t, m) in rest.iter_mut().enumerate() {
        if *m != 0 {
            *m = 0;
            f(base + t);
        }
    }
}

/// Lanes of a dense block group: one vector of f32 (a cache line).
const GROUP: usize = 16;

/// Groups a dense block holds at most: each entry of `B` read (its row, its value, the lanes'
/// marks) feeds up to this many vectors of multiply-adds, where sixteen lanes gave it one. The
/// sums of a column stay in registers (four vectors, or eight for f64).
const MAX_GROUPS: usize = 4;

/// Rows of `A` a dense block holds at most: a lane per row.
const LANES: usize = GROUP * MAX_GROUPS;

/// A bit per lane of a dense block.
type LaneMask = u64;

/// Columns of `A` up to which its dense blocks are held (a block is `k` lanes of values).
const DENSE_MAX_K: usize = 1 << 16;

/// Columns of `B` up to which dense blocks run: a block's sums take `LANES` values per column
/// of the product (32 MB of f64 at this bound, per thread).
const DENSE_MAX_N: usize = 1 << 16;

/// `B` by columns for the dense row blocks: column pointers `[n + 1]`, the row of `B` of each
/// entry, and its value, each column's entries in `B`'s order (a stable transpose).
struct Columns<T> {
    ptr: Vec<i64>,
    row: Vec<i64>,
    val: Vec<T>,
}

impl<T: Real> Columns<T> {
    fn of<I: IndexElem, J: IndexElem>(b: CsrPattern<'_, I, J>, bval: &[T]) -> Self {
        let (ptr, row, val) = transpose_with(b, |q| bval[q]);
        Self { ptr, row, val }
    }
}

/// Whether the dense row blocks can pay and are exact: `A` at least an eighth dense on average
/// (each block's own density is checked again), `k` and `n` small enough to hold a block and its
/// sums, and every
/// value of `B` finite (a block multiplies `B`'s values by the zeros of `A`'s unstored
/// entries, which is exact only for finite values).
fn dense_blocks_pay<T: Real, I: IndexElem, J: IndexElem>(
    a: CsrPattern<'_, I, J>,
    b: CsrPattern<'_, I, J>,
    bval: &[T],
) -> bool {
    let k = a.ncols();
    k > 0
        && k <= DENSE_MAX_K
        && b.ncols() <= DENSE_MAX_N
        && a.nrows() >= GROUP
        && a.nnz().saturating_mul(8) >= a.nrows().saturating_mul(k)
        && b.nnz() > 0
        && bval.iter().all(|v| v.to_f64().is_finite())
}

/// Row blocks for the pool where dense blocks may run: balanced by products as [`blocks`], but
/// [`LANES`] rows each on average where there are rows enough, so that a block can fill its
/// lanes; a block per thread (of a group's rows at least) where there are fewer.
fn dense_row_blocks(work: &[i64]) -> Vec<usize> {
    let (m, threads) = (work.len() - 1, rayon::current_num_threads());
    let tasks = (threads * BLOCKS_PER_THREAD).min(m / LANES).max(threads.min(m / GROUP)).max(1);
    balanced_row_blocks(work, tasks)
}

/// A dense block: up to [`LANES`] dense rows of `A` (an eighth of `k` or more, columns strictly
/// increasing), gathered from a row block skipping the others, and their product with `B`.
/// The lanes' rows (`rows`, ascending) are laid out row by row (`dense`, `[lanes][k]`, zeros
/// where a row stores nothing), then by column (`tile[p * groups + g]`: column `p` of `A` in
/// group `g`'s sixteen lanes); `marks[p]` says which lanes store column `p`. Per column `j` of
/// the product, `sums[j * groups + g]` holds its sums in group `g`'s lanes and `reached[j]` the
/// lanes it reaches. The rows are emitted one by one as the row block's walk reaches them,
/// from `out`, one group's sums laid out by lane.
#[derive(Default)]
struct DenseBlock<T> {
    rows: Vec<usize>,
    dense: Vec<T>,
    marks: Vec<LaneMask>,
    tile: Vec<[T; GROUP]>,
    sums: Vec<[T; GROUP]>,
    reached: Vec<LaneMask>,
    /// The lanes that reach every column of the product.
    full: LaneMask,
    out: Vec<T>,
    /// The next lane to emit.
    next: usize,
}

impl<T: Real> DenseBlock<T> {
    /// Whether row `i` is the next lane to emit.
    fn holds(&self, i: usize) -> bool {
        self.rows.get(self.next) == Some(&i)
    }

    /// Gathers the dense rows of `rows` into lanes, up to [`LANES`] of them, and computes the
    /// block's product with `B` where the lanes are dense enough together (an eighth of `k`
    /// over the lanes the groups hold). Returns the row after the last one looked at: the
    /// lanes lie below it, and every other row below it goes row by row.
    fn gather<I: IndexElem, J: IndexElem>(
        &mut self,
        a: CsrPattern<'_, I, J>,
        aval: &[T],
        cols: &Columns<T>,
        rows: Range<usize>,
    ) -> usize {
        let k = a.ncols();
        let acol = a.idx();
        self.rows.clear();
        self.next = 0;
        self.marks.clear();
        self.marks.resize(k, 0);
        self.dense.resize(LANES * k, T::default());
        let mut entries = 0usize;
        let mut end = rows.end;
        for i in rows {
            if self.rows.len() == LANES {
                end = i;
                break;
            }
            let span = a.row(i);
            let nnz = span.len();
            if nnz == 0 || nnz.saturating_mul(8) < k {
                continue;
            }
            let l = self.rows.len();
            let bit: LaneMask = 1 << l;
            let lane = &mut self.dense[l * k..(l + 1) * k];
            let marks = &mut self.marks[..];
            // Strictly increasing columns: each product its own term, as the row-by-row sums
            // take it (a repeated column is two terms, which one lane value cannot be).
            let increasing = if nnz == k {
                // A whole row: its columns are 0..k exactly where they increase strictly, and
                // its values are the lane as they stand.
                let whole =
                    acol[span.clone()].iter().enumerate().fold(true, |ok, (p, c)| ok & (c.to_i64() == p as i64));
                lane.copy_from_slice(&aval[span]);
                marks.iter_mut().for_each(|m| *m |= bit);
                whole
            } else {
                lane.fill(T::default());
                let mut increasing = true;
                let mut last = -1i64;
                for (c, &v) in acol[span.clone()].iter().zip(&aval[span]) {
                    let c = c.to_i64();
                    increasing &= c > last;
                    last = c;
                    lane[c as usize] = v;
                    marks[c as usize] |= bit;
                }
                increasing
            };
            if increasing {
                self.rows.push(i);
                entries += nnz;
            } else {
                self.marks.iter_mut().for_each(|m| *m &= !bit);
            }
        }
        let groups = self.rows.len().div_ceil(GROUP);
        if groups == 0 || entries.saturating_mul(8) < (groups * GROUP).saturating_mul(k) {
            // Too few lanes for the groups' work: all of these rows go row by row.
            self.rows.clear();
            return end;
        }
        self.dense[self.rows.len() * k..groups * GROUP * k].fill(T::default());
        let zero = [T::default(); GROUP];
        self.tile.clear();
        self.tile.resize(k * groups, zero);
        for g in 0..groups {
            transpose_strided(
                &self.dense[g * GROUP * k..],
                k,
                &mut self.tile.as_flattened_mut()[g * GROUP..],
                groups * GROUP,
                GROUP,
                k,
            );
        }
        let n = cols.ptr.len() - 1;
        self.sums.clear();
        self.sums.resize(n * groups, zero);
        self.reached.clear();
        self.reached.resize(n, 0);
        let (tile, marks, sums, reached) = (&self.tile[..], &self.marks[..], &mut self.sums[..], &mut self.reached[..]);
        let (ptr, row, val) = (&cols.ptr[..], &cols.row[..], &cols.val[..]);
        match groups {
            1 => dense_block_columns::<T, 1>(tile, marks, ptr, row, val, sums, reached),
            2 => dense_block_columns::<T, 2>(tile, marks, ptr, row, val, sums, reached),
            3 => dense_block_columns::<T, 3>(tile, marks, ptr, row, val, sums, reached),
            _ => dense_block_columns::<T, 4>(tile, marks, ptr, row, val, sums, reached),
        }
        self.full = self.reached.iter().fold(LaneMask::MAX, |f, &r| f & r);
        end
    }

    /// The next lane's row of the product into `part` (see [`DenseBlock::holds`]).
    fn emit<C: PartIndex>(&mut self, part: &mut Part<T, C>) -> Result<()> {
        let (l, n) = (self.next, self.reached.len());
        let (g, t) = (l / GROUP, l % GROUP);
        let groups = self.rows.len().div_ceil(GROUP);
        if t == 0 {
            // The group's sums by lane, so that each lane's row is read contiguously.
            self.out.resize(GROUP * n, T::default());
            transpose_strided(&self.sums.as_flattened()[g * GROUP..], groups * GROUP, &mut self.out, n, n, GROUP);
        }
        let sums = &self.out[t * n..(t + 1) * n];
        let start = part.col.len();
        part.reserve(n)?;
        let len = if self.full >> l & 1 != 0 {
            part.col.extend((0..n).map(C::of));
            part.val.extend_from_slice(sums);
            n
        } else {
            let (cs, vs) = (&mut part.col.spare_capacity_mut()[..n], &mut part.val.spare_capacity_mut()[..n]);
            let mut len = 0;
            for (j, (&r, &s)) in self.reached.iter().zip(sums).enumerate() {
                // Without a branch: every column is written at the end, and kept (the length
                // moves past it) where the lane reached it. (Branching on the lane's bit, a
                // coin toss in a row two-thirds dense, cost a misprediction every third column.)
                cs[len].write(C::of(j));
                vs[len].write(s);
                len += usize::from(r >> l & 1 != 0);
            }
            // SAFETY: the loop wrote the first `len` spare elements of both (`len <= n`, the
            // spare room taken: indexing checked it).
            unsafe {
                part.col.set_len(start + len);
                part.val.set_len(start + len);
            }
            len
        };
        part.lens.push(len as i64);
        self.next += 1;
        Ok(())
    }
}

/// Every column `j` of the product of a dense block (`tile [k * G]`, `G` groups of lanes) with
/// `B` by columns: `sums[j * G + g]` group `g`'s sums over the column's entries in order,
/// `reached[j]` the lanes that store some entry's row. Multiplies then adds (never fused), as
/// the row-by-row product does.
#[inline(always)]
fn dense_block_columns_body<T: Real, const G: usize, const FMA: bool>(
    tile: &[[T; GROUP]],
    marks: &[LaneMask],
    ptr: &[i64],
    row: &[i64],
    val: &[T],
    sums: &mut [[T; GROUP]],
    reached: &mut [LaneMask],
) {
    for (j, (sum, hit)) in sums.chunks_exact_mut(G).zip(reached.iter_mut()).enumerate() {
        let (s, e) = (ptr[j] as usize, ptr[j + 1] as usize);
        let mut acc = [[T::default(); GROUP]; G];
        let mut any: LaneMask = 0;
        for (&p, &bv) in row[s..e].iter().zip(&val[s..e]) {
            let p = p as usize;
            let ap = &tile[p * G..p * G + G];
            for g in 0..G {
                for l in 0..GROUP {
                    acc[g][l] = acc[g][l] + ap[g][l] * bv;
                }
            }
            any |= marks[p];
        }
        sum.copy_from_slice(&acc);
        *hit = any;
    }
}

multiversion! {
    /// [`dense_block_columns_body`] compiled for the best vector extension available.
    fn dense_block_columns<T: Real; const G: usize>(tile: &[[T; GROUP]], marks: &[LaneMask], ptr: &[i64], row: &[i64], val: &[T], sums: &mut [[T; GROUP]], reached: &mut [LaneMask]) => dense_block_columns_body
}

/// A stable insertion sort of a narrow row's products by column (at most [`NARROW`]).
#[inline(always)]
fn insertion_sort_by_column<T: Copy>(v: &mut [(usize, T)]) {
    for t in 1..v.len() {
        let x = v[t];
        let mut u = t;
        while u > 0 && v[u - 1].0 > x.0 {
            v[u] = v[u - 1];
            u -= 1;
        }
        v[u] = x;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic sparse matrix `[m, n]`: row `i` holds about `deg` columns (some
    /// repeated when `dups`), values small integers (exact sums in any order).
    fn random(m: usize, n: usize, deg: usize, seed: u64, dups: bool) -> (Vec<i64>, Vec<i64>, Vec<f64>) {
        let mut s = seed;
        let mut next = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 33) as usize
        };
        let (mut crow, mut col, mut val) = (vec![0i64], vec![], vec![]);
        for _ in 0..m {
            let len = next() % (2 * deg + 1);
            let mut row: Vec<i64> = (0..len).map(|_| (next() % n.max(1)) as i64).collect();
            if !dups {
                row.sort_unstable();
                row.dedup();
            }
            for c in row {
                col.push(c);
                val.push((next() % 7) as f64 - 3.0);
            }
            crow.push(col.len() as i64);
        }
        if n == 0 {
            col.clear();
            val.clear();
            crow.iter_mut().for_each(|v| *v = 0);
        }
        (crow, col, val)
    }

    fn dense(m: usize, n: usize, crow: &[i64], col: &[i64], val: &[f64]) -> Vec<f64> {
        let mut d = vec![0.0; m * n];
        for i in 0..m {
            for j in crow[i] as usize..crow[i + 1] as usize {
                d[i * n + col[j] as usize] += val[j];
            }
        }
        d
    }

    fn structure(m: usize, n: usize, crow: &[i64], col: &[i64]) -> Vec<bool> {
        let mut d = vec![false; m * n];
        for i in 0..m {
            for j in crow[i] as usize..crow[i + 1] as usize {
                d[i * n + col[j] as usize] = true;
            }
        }
        d
    }

    /// The one pass against the two phases, bit for bit, on values whose sums round (so the
    /// order of the terms shows): row blocks that take the dense block product (dense rows),
    /// chunks that do not (a sparse stretch, duplicate columns), a partial last chunk, an
    /// infinity in `B` (no dense blocks then), in f64 and f32.
    #[test]
    fn one_pass_matches_two_phases_bit_for_bit() {
        fn check<T: Real + core::fmt::Debug>(
            a: CsrPattern<'_, i64, i64>,
            av: &[T],
            b: CsrPattern<'_, i64, i64>,
            bv: &[T],
            what: &str,
        ) {
            let (crow, col, val) = spgemm(a, av, b, bv).unwrap();
            let (c2, k2) = spgemm_symbolic(a, b, None).unwrap();
            let c = CsrPattern::new(&c2[..], &k2[..], b.ncols()).unwrap();
            let v2 = spgemm_numeric(a, av, b, bv, c);
            assert_eq!((crow, col), (c2, k2), "{what}: pattern");
            let bits = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&val), bits(&v2), "{what}: values");
        }
        // Dense rows (about half of k; every fourth one whole) with sparse rows (two entries)
        // and empty rows between them, and two dense rows with a repeated column (row by row),
        // one of them with k entries:
        // one group of lanes (m = 21) and several (a block's lanes in up to four groups, the
        // last partial).
        for m in [21, 2 * LANES + 21] {
            let (k, n) = (40, 37);
            let mut s = 7u64;
            let mut next = || {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (s >> 33) as usize
            };
            let (mut ap, mut ai) = (vec![0i64], vec![]);
            for i in 0..m {
                match i % 5 {
                    2 => ai.extend([3, 17]),
                    4 => {}
                    _ if i % 4 == 0 => ai.extend(0..k as i64),
                    _ => ai.extend((0..k as i64).filter(|_| next() % 2 == 0)),
                }
                if i == 8 {
                    // k entries, not 0..k: column k - 2 twice.
                    ai.pop();
                    ai.push(k as i64 - 2);
                }
                if i == 13 {
                    ai.push(*ai.last().unwrap_or(&0));
                }
                ap.push(ai.len() as i64);
            }
            // The last four columns of B stored in one row each: lanes whose row does not store
            // that row's column do not reach them.
            let (mut bp, mut bi) = (vec![0i64], vec![]);
            for p in 0..k {
                for j in 0..n {
                    if if j + 4 >= n { p == j + 4 - n } else { next() % 3 == 0 } {
                        bi.push(j as i64);
                    }
                }
                bp.push(bi.len() as i64);
            }
            let av: Vec<f64> = (0..ai.len()).map(|_| (next() % 1000) as f64 / 7.0 - 70.0).collect();
            let mut bv: Vec<f64> = (0..bi.len()).map(|_| (next() % 1000) as f64 / 3.0 - 150.0).collect();
            let a = CsrPattern::new(&ap[..], &ai[..], k).unwrap();
            let b = CsrPattern::new(&bp[..], &bi[..], n).unwrap();
            assert!(dense_blocks_pay(a, b, &bv), "the test reaches the dense blocks");
            let mut block = DenseBlock::default();
            let end = block.gather(a, &av, &Columns::of(b, &bv), 0..m);
            let want: Vec<usize> =
                (0..end).filter(|&i| i % 5 < 2 || i % 5 == 3).filter(|&i| i != 8 && i != 13).collect();
            assert_eq!(block.rows, want, "m = {m}: the dense rows are the lanes, the others skipped");
            assert_eq!(block.rows.len(), LANES.min(want.len()));
            assert!(
                block.full != 0 && block.full != LaneMask::MAX,
                "lanes that reach every column and lanes that do not"
            );
            check(a, &av, b, &bv, "f64");
            let (af, bf): (Vec<f32>, Vec<f32>) =
                (av.iter().map(|&v| v as f32).collect(), bv.iter().map(|&v| v as f32).collect());
            check(a, &af, b, &bf, "f32");
            // Zeros stored in A and B, and an exact cancellation.
            let mut az = av.clone();
            az[3] = 0.0;
            az[5] = -0.0;
            bv[2] = 0.0;
            check(a, &az, b, &bv, "stored zeros");
            // An infinity in B: row by row only (a dense block would multiply it by zeros).
            bv[7] = f64::INFINITY;
            assert!(!dense_blocks_pay(a, b, &bv));
            check(a, &av, b, &bv, "infinite B");
        }
    }

    /// Products, symbolic and numeric, against dense references; narrow and wide rows, scans
    /// and sorts (n small and large), duplicate columns in the operands, empty operands.
    #[test]
    fn product_matches_dense_reference() {
        // Cases with `B` packed (its rows read at least `PACK_READS` times an entry) and not.
        let mut routes = [0; 2];
        for (m, k, n, da, db, dups) in [
            (30, 20, 25, 3, 4, false),
            (40, 30, 500, 6, 8, true),
            (50, 60, 40, 12, 12, false),
            (5, 0, 7, 2, 2, false),
            (0, 4, 3, 2, 2, false),
            (20, 2000, 3000, 1, 40, false),
        ] {
            let (ap, ai, av) = random(m, k, da, 1 + m as u64, dups);
            let (bp, bi, bv) = random(k, n, db, 2 + n as u64, dups);
            let a = CsrPattern::new(&ap[..], &ai[..], k).unwrap();
            let b = CsrPattern::new(&bp[..], &bi[..], n).unwrap();
            let (crow, col, val) = spgemm(a, &av, b, &bv).unwrap();
            routes[usize::from(spgemm_products(a, b).unwrap() as i64 >= PACK_READS * b.nnz() as i64)] += 1;
            let c = CsrPattern::new(&crow[..], &col[..], n).unwrap();
            for i in 0..m {
                let r = &col[c.row(i)];
                assert!(r.windows(2).all(|w| w[0] < w[1]), "row {i} sorted and unique");
            }
            let (ad, bd) = (dense(m, k, &ap, &ai, &av), dense(k, n, &bp, &bi, &bv));
            let (sa, sb) = (structure(m, k, &ap, &ai), structure(k, n, &bp, &bi));
            let mut want = vec![0.0; m * n];
            let mut want_s = vec![false; m * n];
            for i in 0..m {
                for p in 0..k {
                    for j in 0..n {
                        want[i * n + j] += ad[i * k + p] * bd[p * n + j];
                        want_s[i * n + j] |= sa[i * k + p] && sb[p * n + j];
                    }
                }
            }
            assert_eq!(structure(m, n, &crow, &col), want_s, "structure {m}x{k}x{n}");
            assert_eq!(dense(m, n, &crow, &col, &val), want, "values {m}x{k}x{n}");
            assert_eq!(
                spgemm_products(a, b).unwrap() as usize,
                (0..ai.len()).map(|q| b.row(ai[q] as usize).len()).sum::<usize>()
            );
            // Masked: a pattern of its own; the result is the mask's entries some product reaches.
            let (mp, mi, _) = random(m, n, 5, 9, false);
            let mk = CsrPattern::new(&mp[..], &mi[..], n).unwrap();
            let (mcrow, mcol) = spgemm_symbolic(a, b, Some(mk)).unwrap();
            let sm = structure(m, n, &mp, &mi);
            let masked_s: Vec<bool> = want_s.iter().zip(&sm).map(|(&x, &y)| x && y).collect();
            assert_eq!(structure(m, n, &mcrow, &mcol), masked_s, "masked structure");
            let cm = CsrPattern::new(&mcrow[..], &mcol[..], n).unwrap();
            let mval = spgemm_numeric(a, &av, b, &bv, cm);
            let got = dense(m, n, &mcrow, &mcol, &mval);
            for t in 0..m * n {
                assert_eq!(got[t], if masked_s[t] { want[t] } else { 0.0 }, "masked value {t}");
            }
            // The numeric pass on the whole mask (entries no product reaches are zeros).
            let on_mask = spgemm_numeric(a, &av, b, &bv, mk);
            let got = dense(m, n, &mp, &mi, &on_mask);
            for t in 0..m * n {
                assert_eq!(got[t], if sm[t] { want[t] } else { 0.0 }, "on mask {t}");
            }
        }
        assert!(routes.iter().all(|&r| r >= 2), "both routes of B, packed and plain: {routes:?}");
    }

    /// The gradients against their definitions: `dA = (G Bᵀ)` on A's pattern, `dB = (Aᵀ G)` on
    /// B's, with G on the product's pattern.
    #[test]
    fn gradients_are_masked_products() {
        for (m, k, n, da, db) in [(30, 20, 25, 3, 4), (40, 30, 500, 6, 8), (3000, 10, 12, 3, 3), (4, 0, 3, 1, 1)] {
            let (ap, ai, av) = random(m, k, da, 3, false);
            let (bp, bi, bv) = random(k, n, db, 4, false);
            let a = CsrPattern::new(&ap[..], &ai[..], k).unwrap();
            let b = CsrPattern::new(&bp[..], &bi[..], n).unwrap();
            let (crow, col) = spgemm_symbolic(a, b, None).unwrap();
            let c = CsrPattern::new(&crow[..], &col[..], n).unwrap();
            let g: Vec<f64> = (0..col.len()).map(|e| ((e * 5) % 9) as f64 - 4.0).collect();
            let gd = dense(m, n, &crow, &col, &g);
            let (ad, bd) = (dense(m, k, &ap, &ai, &av), dense(k, n, &bp, &bi, &bv));
            let da_got = spgemm_grad_a(a, b, &bv, c, &g);
            for i in 0..m {
                for q in a.row(i) {
                    let p = ai[q] as usize;
                    let want: f64 = (0..n).map(|j| gd[i * n + j] * bd[p * n + j]).sum();
                    assert_eq!(da_got[q], want, "dA[{i}, {p}]");
                }
            }
            let db_got = spgemm_grad_b(a, &av, b, c, &g).unwrap();
            for p in 0..k {
                for r in b.row(p) {
                    let j = bi[r] as usize;
                    let want: f64 = (0..m).map(|i| ad[i * k + p] * gd[i * n + j]).sum();
                    assert_eq!(db_got[r], want, "dB[{p}, {j}]");
                }
            }
        }
    }

    /// Bit-identical values whatever the thread count.
    #[test]
    fn results_do_not_depend_on_threads() {
        let (m, k, n) = (600, 400, 700);
        let mut s = 7u64;
        let mut next = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        let (ap, ai, _) = random(m, k, 20, 11, false);
        let (bp, bi, _) = random(k, n, 20, 12, false);
        let av: Vec<f32> = ai.iter().map(|_| next()).collect();
        let bv: Vec<f32> = bi.iter().map(|_| next()).collect();
        let a = CsrPattern::new(&ap[..], &ai[..], k).unwrap();
        let b = CsrPattern::new(&bp[..], &bi[..], n).unwrap();
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                let (crow, col, val) = spgemm(a, &av, b, &bv).unwrap();
                let c = CsrPattern::new(&crow[..], &col[..], n).unwrap();
                let g: Vec<f32> = val.iter().map(|v| v * 0.5 + 1.0).collect();
                let db = spgemm_grad_b(a, &av, b, c, &g).unwrap();
                (
                    crow,
                    col,
                    val.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    db.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                )
            })
        };
        assert_eq!(run(1), run(3));
    }
}
