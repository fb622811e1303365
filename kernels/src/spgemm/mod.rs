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

mod accumulate;
mod dense_block;
mod grad;
mod numeric;
mod symbolic;
#[cfg(test)]
mod tests;

use accumulate::*;
use dense_block::*;
pub use grad::{spgemm_grad_a, spgemm_grad_b};
use numeric::*;
pub use numeric::{spgemm, spgemm_numeric};
pub use symbolic::spgemm_symbolic;

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
