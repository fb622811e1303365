//! The accumulators a row of `A · B` sums its products in, and the two ways `B`'s rows are read:
//! the per-thread workspace (a dense row of values over `n` columns and the record of the columns
//! reached: a byte per column or the two-level [`Bitmap`]), drained in ascending column order
//! without a sort; `B` as it is (`PlainB`) or packed with each entry's 32-bit column beside its
//! value (`PackedB`), behind [`RowsOfB`], with the prefetch of the rows a row of `A` reads next.

use super::*;

pub(super) struct Workspace {
    pub(super) marks: Vec<u8>,
    pub(super) bits: Vec<u64>,
    pub(super) words: Vec<u64>,
    pub(super) dirty: bool,
}

/// A thread's zeroed scratch for rows over `n` columns: marker bytes `[n]`, a two-level bitmap
/// (`n` bits and a bit per word of them) and an accumulator `[n]`.
pub(super) struct Rows<'a, T> {
    pub(super) marks: &'a mut [u8],
    pub(super) bits: Bitmap<'a>,
    pub(super) acc: &'a mut [T],
}

/// Runs `f` with this thread's zeroed scratch over `n` columns (the accumulator of `T`, f32 or
/// f64; another `Real` gets a fresh zeroed vector), which `f` must leave zeroed.
pub(super) fn with_workspace<T: Real, R>(n: usize, f: impl FnOnce(Rows<'_, T>) -> R) -> R {
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
pub(super) struct Bitmap<'a> {
    pub(super) words: &'a mut [u64],
    pub(super) top: &'a mut [u64],
}

impl Bitmap<'_> {
    #[inline(always)]
    pub(super) fn set(&mut self, j: usize) {
        let w = j >> 6;
        self.words[w] |= 1u64 << (j & 63);
        self.top[w >> 6] |= 1u64 << (w & 63);
    }

    /// Calls `f` on every set column in ascending order, clearing the bitmap; top words in
    /// `t0..=t1` only (the caller's bounds of what it set).
    #[inline(always)]
    pub(super) fn drain(&mut self, t0: usize, t1: usize, mut f: impl FnMut(usize)) {
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
    pub(super) fn set_low(&mut self, j: usize) {
        self.words[j >> 6] |= 1u64 << (j & 63);
    }

    /// Calls `f` on every set column of words `w0..=w1` in ascending order, clearing them: the
    /// drain of rows set by [`Bitmap::set_low`], whose products outnumber the words.
    #[inline(always)]
    pub(super) fn drain_words(&mut self, w0: usize, w1: usize, mut f: impl FnMut(usize)) {
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
    pub(super) fn count(&mut self, t0: usize, t1: usize) -> usize {
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
pub(super) fn prefetch<T>(p: *const T) {
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
pub(super) const AHEAD: usize = 8;

/// Prefetches what entry `q + AHEAD` of `A` will read of `B` (and the pointers of `q + 2 AHEAD`).
#[inline(always)]
pub(super) fn prefetch_b<T, J: IndexElem, B: RowsOfB<T>>(acol: &[J], b: &B, q: usize) {
    if let Some(p) = acol.get(q + 2 * AHEAD) {
        b.prefetch_pointer(p.to_i64() as usize);
    }
    if let Some(p) = acol.get(q + AHEAD) {
        b.prefetch_row(p.to_i64() as usize);
    }
}

/// The rows of `B` as the products read them: each entry's column and value.
pub(super) trait RowsOfB<T>: Sync {
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
pub(super) struct PlainB<'a, I, J, V> {
    pub(super) b: CsrPattern<'a, I, J>,
    pub(super) val: &'a [V],
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
pub(super) struct Entry<T> {
    pub(super) col: u32,
    pub(super) val: T,
}

/// `B` with each entry's column and value side by side, the columns in 32 bits: a row read
/// at random costs one stream of lines instead of two, a third as many bytes for f32
/// (`i64` columns and f32 values took 12 bytes an entry, here 8).
pub(super) struct PackedB<'a, I, T> {
    pub(super) ptr: &'a [I],
    pub(super) ent: Vec<Entry<T>>,
}

impl<'a, I: IndexElem, T: Real> PackedB<'a, I, T> {
    /// `b` packed, or `None` where its columns do not fit 32 bits; the error when the copy
    /// cannot be had.
    pub(super) fn of<J: IndexElem>(b: CsrPattern<'a, I, J>, bval: &[T]) -> Result<Option<Self>> {
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

/// How a wide row of [`spgemm`] records which columns its products reached.
#[derive(Clone, Copy)]
pub(super) enum Record {
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
pub(super) const MARK_PRODUCTS_PER_COLUMN: usize = 2;

/// Calls `f` on every marked column of `lo..=hi` in ascending order, clearing the marks: eight
/// at a time.
#[inline(always)]
pub(super) fn drain_marks(marks: &mut [u8], lo: usize, hi: usize, mut f: impl FnMut(usize)) {
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

/// A stable insertion sort of a narrow row's products by column (at most [`NARROW`]).
#[inline(always)]
pub(super) fn insertion_sort_by_column<T: Copy>(v: &mut [(usize, T)]) {
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
