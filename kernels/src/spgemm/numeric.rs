//! The numeric passes: the values of `A · B` on a given pattern ([`spgemm_numeric`]), and the one
//! pass that computes the whole product ([`spgemm`]): each row block into its own parts, gathered
//! into place, each row through the accumulator its product count picks.

use super::*;

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

/// One row block's share of [`spgemm`]'s output: the length of each of its rows, then their
/// columns and values, rows one after the other.
pub(super) struct Part<T, C> {
    pub(super) lens: Vec<i64>,
    pub(super) col: Vec<C>,
    pub(super) val: Vec<T>,
}

impl<T: Real, C> Part<T, C> {
    /// Room for `more` entries, or the error when it cannot be had.
    pub(super) fn reserve(&mut self, more: usize) -> Result<()> {
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
pub(super) const PACK_READS: i64 = 2;

/// Part columns in 32 bits widened into the output's.
pub(super) fn widen_u32(src: &[u32], dst: &mut [MaybeUninit<i64>]) {
    for (d, &c) in dst.iter_mut().zip(src) {
        d.write(c as i64);
    }
}

/// The row blocks' parts, in block order, as one CSR `[m, n]`: row pointers from their
/// lengths, columns (through `widen`, which writes every element of its output) and values
/// copied into place in parallel.
pub(super) fn gather_parts<T: Real, C: Sync>(
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
pub(super) trait PartIndex: Copy + Send + Sync {
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
pub(super) fn product_rows<T: Real, I: IndexElem, J: IndexElem, B: RowsOfB<T>, C: PartIndex>(
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
