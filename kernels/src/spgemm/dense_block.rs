//! Dense rows of `A` gathered into a dense block (up to 64 rows, groups of sixteen lanes) and
//! multiplied with `B` by columns, one vector sum per group over each column's entries: where `A`'s
//! rows hold an eighth of `k` or more, the one pass takes them this way.

use super::*;

/// Lanes of a dense block group: one vector of f32 (a cache line).
pub(super) const GROUP: usize = 16;

/// Groups a dense block holds at most: each entry of `B` read (its row, its value, the lanes'
/// marks) feeds up to this many vectors of multiply-adds, where sixteen lanes gave it one. The
/// sums of a column stay in registers (four vectors, or eight for f64).
pub(super) const MAX_GROUPS: usize = 4;

/// Rows of `A` a dense block holds at most: a lane per row.
pub(super) const LANES: usize = GROUP * MAX_GROUPS;

/// A bit per lane of a dense block.
pub(super) type LaneMask = u64;

/// Columns of `A` up to which its dense blocks are held (a block is `k` lanes of values).
pub(super) const DENSE_MAX_K: usize = 1 << 16;

/// Columns of `B` up to which dense blocks run: a block's sums take `LANES` values per column
/// of the product (32 MB of f64 at this bound, per thread).
pub(super) const DENSE_MAX_N: usize = 1 << 16;

/// `B` by columns for the dense row blocks: column pointers `[n + 1]`, the row of `B` of each
/// entry, and its value, each column's entries in `B`'s order (a stable transpose).
pub(super) struct Columns<T> {
    pub(super) ptr: Vec<i64>,
    pub(super) row: Vec<i64>,
    pub(super) val: Vec<T>,
}

impl<T: Real> Columns<T> {
    pub(super) fn of<I: IndexElem, J: IndexElem>(b: CsrPattern<'_, I, J>, bval: &[T]) -> Self {
        let (ptr, row, val) = transpose_with(b, |q| bval[q]);
        Self { ptr, row, val }
    }
}

/// Whether the dense row blocks can pay and are exact: `A` at least an eighth dense on average
/// (each block's own density is checked again), `k` and `n` small enough to hold a block and its
/// sums, and every
/// value of `B` finite (a block multiplies `B`'s values by the zeros of `A`'s unstored
/// entries, which is exact only for finite values).
pub(super) fn dense_blocks_pay<T: Real, I: IndexElem, J: IndexElem>(
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
pub(super) fn dense_row_blocks(work: &[i64]) -> Vec<usize> {
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
pub(super) struct DenseBlock<T> {
    pub(super) rows: Vec<usize>,
    pub(super) dense: Vec<T>,
    pub(super) marks: Vec<LaneMask>,
    pub(super) tile: Vec<[T; GROUP]>,
    pub(super) sums: Vec<[T; GROUP]>,
    pub(super) reached: Vec<LaneMask>,
    /// The lanes that reach every column of the product.
    pub(super) full: LaneMask,
    pub(super) out: Vec<T>,
    /// The next lane to emit.
    pub(super) next: usize,
}

impl<T: Real> DenseBlock<T> {
    /// Whether row `i` is the next lane to emit.
    pub(super) fn holds(&self, i: usize) -> bool {
        self.rows.get(self.next) == Some(&i)
    }

    /// Gathers the dense rows of `rows` into lanes, up to [`LANES`] of them, and computes the
    /// block's product with `B` where the lanes are dense enough together (an eighth of `k`
    /// over the lanes the groups hold). Returns the row after the last one looked at: the
    /// lanes lie below it, and every other row below it goes row by row.
    pub(super) fn gather<I: IndexElem, J: IndexElem>(
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
    pub(super) fn emit<C: PartIndex>(&mut self, part: &mut Part<T, C>) -> Result<()> {
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
pub(super) fn dense_block_columns_body<T: Real, const G: usize, const FMA: bool>(
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
