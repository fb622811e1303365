//! Defaults for backends without host kernels: burn gathers and scatter-adds over `[nnz, n]`,
//! the pattern read back and checked on the host (the row of each entry is host work).

use crate::algebra::compress::expand;
use crate::operand::CsrOperand;
use burn::backend::{
    tensor::{FloatTensor, IntTensor},
    Backend, TensorMetadata,
};
use burn::tensor::{IndexingUpdateOp, Shape, TensorData};
use sparsegrad_kernels::pattern::CsrPattern;

/// `A · X` (`X [k, n]`, result `[m, n]`) or `Aᵀ · X` (`transpose`: `X [m, n]`, result
/// `[k, n]`); the caller checked the dense operands' shapes.
pub fn spmm<B: Backend>(
    operation: &str,
    pattern: CsrOperand<B>,
    values: FloatTensor<B>,
    x: FloatTensor<B>,
    transpose: bool,
) -> FloatTensor<B> {
    let device = x.device();
    let (m, k, nnz) = (pattern.nrows(), pattern.ncols(), pattern.nnz());
    let n = x.shape()[1];
    let (rows, col) = checked_rows::<B>(operation, pattern, &device);
    let (src, dst, out_rows) = if transpose { (rows, col, k) } else { (col, rows, m) };
    let out = B::float_zeros(Shape::new([out_rows, n]), &device, x.dtype().into());
    if nnz == 0 || n == 0 {
        return out;
    }
    let gathered = B::float_select(x, 0, src);
    let scaled = B::float_mul(gathered, B::float_reshape(values, Shape::new([nnz, 1])));
    B::float_select_assign(out, 0, dst, scaled, IndexingUpdateOp::Add)
}

/// `out[j] = a[row j] · b[col j]` (`a [m, d]`, `b [k, d]`); the caller checked the shapes.
pub fn sddmm<B: Backend>(
    operation: &str,
    pattern: CsrOperand<B>,
    a: FloatTensor<B>,
    b: FloatTensor<B>,
) -> FloatTensor<B> {
    let device = a.device();
    let nnz = pattern.nnz();
    let (rows, col) = checked_rows::<B>(operation, pattern, &device);
    if nnz == 0 {
        return B::float_zeros(Shape::new([0]), &device, a.dtype().into());
    }
    let prod = B::float_mul(B::float_select(a, 0, rows), B::float_select(b, 0, col));
    B::float_reshape(B::float_sum_dim(prod, 1), Shape::new([nnz]))
}

/// The row of each entry and the columns, the pattern read back and checked first (any
/// backend; index algebra is host work): an invalid pattern is a panic naming `operation`.
fn checked_rows<B: Backend>(
    operation: &str,
    pattern: CsrOperand<B>,
    device: &B::Device,
) -> (IntTensor<B>, IntTensor<B>) {
    let (m, k, nnz) = (pattern.nrows(), pattern.ncols(), pattern.nnz());
    let (crow, col, _, _) = pattern.into_parts();
    let host = |t: IntTensor<B>| -> Vec<i64> {
        let data = burn::backend::read_sync(B::int_into_data(t)).expect("pattern readback");
        data.iter::<i64>().collect()
    };
    let (crow, cols) = (host(crow), host(col.clone()));
    if let Err(e) = CsrPattern::new(&crow[..], &cols[..], k) {
        panic!("{operation}: the pattern is not valid: {e}");
    }
    let rows = expand(&crow, 1, m, nnz);
    (B::int_from_data(TensorData::new(rows, [nnz]), device), col)
}
