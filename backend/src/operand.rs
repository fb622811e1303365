//! [`CsrOperand`]: a CSR pattern as the product primitives take it, its row pointers and columns
//! with its column count and the cell that keeps what is derived from it (the transposed view,
//! device plans, the record of the check). One argument instead of four, and the same four
//! through every primitive, so that a kernel method's signature says "a pattern" and no caller
//! can pair one pattern's arrays with another's column count or cell by accident.
//!
//! An operand claims nothing: anyone can build one from any tensors. The primitives' host
//! kernels check the pattern before they walk it (`flex::checked_pattern`, once per index storage
//! with the record in the cell) and the device kernels read through bounds-checked launches, so
//! the methods that take one are safe. It derives burn's `ExtensionType`, so it crosses the
//! dispatch boundary as an argument of the `#[backend_extension]` traits.

use burn::backend::{tensor::IntTensor, Backend, ExtensionType, TensorMetadata};
use sparsegrad_kernels::pattern::TransposeCell;
use std::sync::Arc;

/// A CSR pattern `[m, k]`: row pointers `crow [m + 1]`, columns `col [nnz]`, `k` columns, and
/// the pattern's cell (shared by the clones of the tensor it came from).
#[derive(ExtensionType)]
pub struct CsrOperand<B: Backend> {
    crow: IntTensor<B>,
    col: IntTensor<B>,
    ncols: usize,
    cell: Arc<TransposeCell>,
}

impl<B: Backend> Clone for CsrOperand<B> {
    fn clone(&self) -> Self {
        Self { crow: self.crow.clone(), col: self.col.clone(), ncols: self.ncols, cell: self.cell.clone() }
    }
}

impl<B: Backend> core::fmt::Debug for CsrOperand<B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CsrOperand")
            .field("shape", &[self.nrows(), self.ncols])
            .field("nnz", &self.nnz())
            .field("index_dtype", &self.crow.dtype())
            .finish()
    }
}

impl<B: Backend> CsrOperand<B> {
    /// The pattern of `crow [m + 1]` and `col [nnz]` over `ncols` columns, with its cell (a new
    /// `TransposeCell` where the pattern has none yet). Nothing is checked here: the kernels
    /// check what they walk.
    pub fn new(crow: IntTensor<B>, col: IntTensor<B>, ncols: usize, cell: Arc<TransposeCell>) -> Self {
        Self { crow, col, ncols, cell }
    }

    /// The row pointers, `[m + 1]`.
    pub fn crow(&self) -> &IntTensor<B> {
        &self.crow
    }

    /// The column of each entry, `[nnz]`.
    pub fn col(&self) -> &IntTensor<B> {
        &self.col
    }

    /// Rows (`m`: one less than the row pointers; 0 for an empty pointer array, which the
    /// kernels refuse).
    pub fn nrows(&self) -> usize {
        self.crow.shape().as_slice().first().map_or(0, |&n| n.saturating_sub(1))
    }

    /// Columns (`k`).
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.col.shape().as_slice().first().copied().unwrap_or(0)
    }

    /// The pattern's cell.
    pub fn cell(&self) -> &Arc<TransposeCell> {
        &self.cell
    }

    /// The row pointers, the columns, the column count and the cell.
    pub fn into_parts(self) -> (IntTensor<B>, IntTensor<B>, usize, Arc<TransposeCell>) {
        (self.crow, self.col, self.ncols, self.cell)
    }

    /// The same pattern on a backend that stores integers as this one does (`Autodiff<B>`'s
    /// operand as `B`'s: autodiff tracks floats only).
    pub fn retag<C: Backend<IntTensorPrimitive = B::IntTensorPrimitive>>(self) -> CsrOperand<C> {
        CsrOperand { crow: self.crow, col: self.col, ncols: self.ncols, cell: self.cell }
    }

    /// The same pattern with its index tensors mapped (a fused tensor resolved to its backend's).
    pub fn map<C: Backend>(self, f: impl Fn(IntTensor<B>) -> IntTensor<C>) -> CsrOperand<C> {
        CsrOperand { crow: f(self.crow), col: f(self.col), ncols: self.ncols, cell: self.cell }
    }
}

/// The shape of a dense operand against what a primitive expects of it: a panic that names the
/// operation, the operand and both shapes where they differ (the tensor layer checks shapes
/// before it calls a primitive, so only a direct caller of the trait meets it).
pub(crate) fn expect_dims(operation: &str, operand: &str, actual: &[usize], expected: &[usize]) {
    assert!(actual == expected, "{operation}: {operand} is {actual:?}, expected {expected:?}");
}

/// `n` of SpMM's operands `values [nnz]` and `x [k, n]` on `pattern [m, k]`, checked.
pub(crate) fn spmm_dims<B: Backend>(
    operation: &str,
    pattern: &CsrOperand<B>,
    values: &burn::backend::tensor::FloatTensor<B>,
    x: &burn::backend::tensor::FloatTensor<B>,
) -> usize {
    let x_shape = x.shape();
    let n = if x_shape.num_dims() == 2 { x_shape[1] } else { 0 };
    expect_dims(operation, "values", values.shape().as_slice(), &[pattern.nnz()]);
    expect_dims(operation, "x", x_shape.as_slice(), &[pattern.ncols(), n]);
    n
}

/// `n` of the transposed SpMM's operands `values [nnz]` and `g [m, n]` on `pattern [m, k]`
/// (the product `Aᵀ · G` is `[k, n]`), checked.
pub(crate) fn spmm_t_dims<B: Backend>(
    operation: &str,
    pattern: &CsrOperand<B>,
    values: &burn::backend::tensor::FloatTensor<B>,
    g: &burn::backend::tensor::FloatTensor<B>,
) -> usize {
    let g_shape = g.shape();
    let n = if g_shape.num_dims() == 2 { g_shape[1] } else { 0 };
    expect_dims(operation, "values", values.shape().as_slice(), &[pattern.nnz()]);
    expect_dims(operation, "g", g_shape.as_slice(), &[pattern.nrows(), n]);
    n
}

/// `n` of SpMM's backward operands on `pattern [m, k]`: `values [nnz]`, and the forward's `x`
/// and output gradient `g`: `x [k, n]` and `g [m, n]` for `A · X`, `x [m, n]` and `g [k, n]`
/// for `Aᵀ · X` (`transpose`), checked.
pub(crate) fn spmm_backward_dims<B: Backend>(
    operation: &str,
    pattern: &CsrOperand<B>,
    values: &burn::backend::tensor::FloatTensor<B>,
    g: &burn::backend::tensor::FloatTensor<B>,
    x: &burn::backend::tensor::FloatTensor<B>,
    transpose: bool,
) -> usize {
    let (x_shape, [m, k]) = (x.shape(), [pattern.nrows(), pattern.ncols()]);
    let n = if x_shape.num_dims() == 2 { x_shape[1] } else { 0 };
    let (x_rows, g_rows) = if transpose { (m, k) } else { (k, m) };
    expect_dims(operation, "values", values.shape().as_slice(), &[pattern.nnz()]);
    expect_dims(operation, "x", x_shape.as_slice(), &[x_rows, n]);
    expect_dims(operation, "g", g.shape().as_slice(), &[g_rows, n]);
    n
}

/// `d` of SDDMM's operands `a [m, d]` and `b [k, d]` on `pattern [m, k]`, checked.
pub(crate) fn sddmm_dims<B: Backend>(
    operation: &str,
    pattern: &CsrOperand<B>,
    a: &burn::backend::tensor::FloatTensor<B>,
    b: &burn::backend::tensor::FloatTensor<B>,
) -> usize {
    let (a_shape, b_shape) = (a.shape(), b.shape());
    let d = if a_shape.num_dims() == 2 { a_shape[1] } else { 0 };
    expect_dims(operation, "a", a_shape.as_slice(), &[pattern.nrows(), d]);
    expect_dims(operation, "b", b_shape.as_slice(), &[pattern.ncols(), d]);
    d
}

/// The patterns of a sparse product `A [m, k] · B [k, n]` (on `C [m, n]`'s pattern where it is
/// given) against each other, and each value operand (name and pattern) as `[nnz]` of its
/// pattern: a panic naming the operand where one differs.
pub(crate) fn spgemm_dims<B: Backend>(
    operation: &str,
    a: &CsrOperand<B>,
    b: &CsrOperand<B>,
    c: Option<&CsrOperand<B>>,
    values: &[(&str, &burn::backend::tensor::FloatTensor<B>, &CsrOperand<B>)],
) {
    expect_dims(operation, "B", &[b.nrows(), b.ncols()], &[a.ncols(), b.ncols()]);
    if let Some(c) = c {
        expect_dims(operation, "C", &[c.nrows(), c.ncols()], &[a.nrows(), b.ncols()]);
    }
    for (operand, v, pattern) in values {
        expect_dims(operation, operand, v.shape().as_slice(), &[pattern.nnz()]);
    }
}
