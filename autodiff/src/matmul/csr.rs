//! The sparse operand as the product primitives take it: [`Csr`], a checked CSR pattern with
//! values (built only by [`csr_of`] from a 2-D tensor and [`block_diagonal`] from a batch), and the
//! calls of the product primitives (`spmm`, `sddmm`) on its operand ([`Csr::operand`]).

use burn::backend::Dispatch;
use burn::tensor::{Int, Tensor};
use sparsegrad_backend::algebra::validate::check_numel;
use sparsegrad_backend::alloc::ensure_allocatable;
use sparsegrad_backend::error::invalid;
use sparsegrad_backend::sddmm::SparseSddmm;
use sparsegrad_backend::spmm::SparseSpmm;
use sparsegrad_backend::util::{index_dtype_for, reshape, reshape_int};
use sparsegrad_backend::{Layout, Result, SparseError, SparseTensor};
use sparsegrad_kernels::pattern::TransposeCell;
use std::sync::Arc;

/// A sparse operand as a CSR pattern (`rows x cols`) with values, used as is or transposed.
/// Built only by [`csr_of`] and [`block_diagonal`], from checked tensors: its pattern is valid
/// (the primitives check it anyway).
pub(super) struct Csr {
    pub(super) crow: Tensor<1, Int>,
    pub(super) col: Tensor<1, Int>,
    pub(super) values: Tensor<1>,
    pub(super) cols: usize,
    /// The operand is the transpose of the pattern (a CSC tensor's arrays).
    pub(super) transposed: bool,
    /// The pattern's transposed-view cache (its tensor's, shared by the tensor's clones).
    pub(super) cell: Arc<TransposeCell>,
}

impl Csr {
    /// The pattern as the primitives take it.
    pub(super) fn operand(&self) -> sparsegrad_backend::operand::CsrOperand<Dispatch> {
        sparsegrad_backend::operand::CsrOperand::new(
            self.crow.clone().into_dispatch(),
            self.col.clone().into_dispatch(),
            self.cols,
            self.cell.clone(),
        )
    }
}

pub(super) fn mismatch(operation: &'static str, a: &[usize], b: &[usize]) -> SparseError {
    invalid(operation, format!("shapes {a:?} and {b:?} cannot be multiplied"))
}

/// The CSR view of a 2-D sparse operand (its invariants checked first).
pub(super) fn csr_of(a: &SparseTensor<2>, operation: &'static str) -> Result<Csr> {
    a.check_invariants()?;
    if a.dense_dim() > 0 {
        return Err(invalid(
            operation,
            format!("hybrid operands (dense_dim {}) are not supported; the values must be scalars", a.dense_dim()),
        ));
    }
    let converted;
    let (s, transposed) = match a.layout() {
        Layout::Csr => (a, false),
        Layout::Csc => (a, true),
        _ => {
            converted = a.to_sparse_csr()?;
            (&converted, false)
        }
    };
    let (c, p) = s.compressed_indices_flat().expect("compressed layout");
    let [pattern_rows, pattern_cols] = if transposed { [a.shape()[1], a.shape()[0]] } else { a.shape() };
    let nnz = s.nnz();
    Ok(Csr {
        crow: reshape_int(c, [pattern_rows + 1]),
        col: reshape_int(p, [nnz]),
        values: reshape(s.values_flat(), [nnz]),
        cols: pattern_cols,
        transposed,
        cell: s.transpose_cell().expect("compressed layout"),
    })
}

/// `pattern · x` (or `patternᵀ · x`) through the differentiable primitive; `x` must be
/// `[cols, n]` (`[rows, n]` transposed). An error when the `[rows, n]` (`[cols, n]`) result
/// cannot be allocated.
pub(super) fn spmm(operation: &'static str, c: &Csr, x: Tensor<2>, transpose: bool) -> Result<Tensor<2>> {
    spmm_stored(operation, c, x, transpose, false)
}

/// [`spmm`], the product `stored_transposed` where the backend can, for a caller that
/// transposes it next (see `SparseSpmm::sparse_spmm`).
pub(super) fn spmm_stored(
    operation: &'static str,
    c: &Csr,
    x: Tensor<2>,
    transpose: bool,
    stored_transposed: bool,
) -> Result<Tensor<2>> {
    let [inner, n] = x.dims();
    let rows = c.crow.dims()[0] - 1;
    let (expected, out_rows) = if transpose { (rows, c.cols) } else { (c.cols, rows) };
    assert_eq!(inner, expected, "{operation}: the dense operand's rows (callers check the shapes)");
    // A saturated count overflows the byte size too: refused as an overflow.
    ensure_allocatable(out_rows.saturating_mul(n), x.dtype().size(), operation)?;
    Ok(Tensor::from_dispatch(<Dispatch as SparseSpmm>::sparse_spmm(
        c.operand(),
        c.values.clone().into_dispatch(),
        x.into_dispatch(),
        transpose,
        stored_transposed,
    )))
}

/// `out[j] = a[row j] · b[col j]` on the pattern of `c` (its values unused), through the
/// differentiable primitive: `a [rows, d]`, `b [cols, d]`.
pub(super) fn sddmm(c: &Csr, a: Tensor<2>, b: Tensor<2>) -> Tensor<1> {
    let rows = c.crow.dims()[0] - 1;
    assert_eq!(
        (a.dims()[0], b.dims()[0], a.dims()[1]),
        (rows, c.cols, b.dims()[1]),
        "sddmm operands (callers check the shapes)"
    );
    Tensor::from_dispatch(<Dispatch as SparseSddmm>::sparse_sddmm(c.operand(), a.into_dispatch(), b.into_dispatch()))
}

/// The pattern of a batched CSR tensor (`[batch, rows, cols]`, its invariants checked) as one
/// block-diagonal CSR pattern `[batch * rows, batch * cols]`: batch entry `b`'s rows and
/// columns are offset by `b * rows` and `b * cols`, its entries by `b * nse`. The offsets are
/// computed with checked arithmetic, and the indices widened when the block-diagonal sizes do
/// not fit the tensor's index dtype (an int8 batch of 100-column matrices needs int16).
pub(super) fn block_diagonal<const D: usize>(s: &SparseTensor<D>, operation: &'static str) -> Result<Csr> {
    s.check_invariants()?;
    let (c, p) =
        s.compressed_indices_flat().ok_or(SparseError::UnsupportedLayout { operation, layout: s.layout().name() })?;
    let [batch, rows1] = c.dims();
    let (rows, nse, cols) = (rows1 - 1, p.dims()[1], s.shape()[D - 1]);
    let too_large = || {
        invalid(
            operation,
            format!(
                "{batch} matrices [{rows}, {cols}] of {nse} entries each are too large for one block-diagonal pattern"
            ),
        )
    };
    let total_rows = batch.checked_mul(rows).ok_or_else(too_large)?;
    let total_cols = batch.checked_mul(cols).ok_or_else(too_large)?;
    let total_nnz = batch.checked_mul(nse).ok_or_else(too_large)?;
    check_numel(&[total_rows, total_cols])?;
    let device = s.device();
    let dtype = index_dtype_for(s.index_dtype(), total_nnz.max(total_cols) as u64);
    // Computed with burn's integer ops where the indices live (nothing read back): batch `b`'s
    // row pointers past the first, shifted by `b · nse`, after one 0; its columns shifted by
    // `b · cols`. Every value is below `total_nnz` or `total_cols` (checked above), so fits.
    // (No element-wise op on an empty operand: burn's Cube backend rejects them.)
    let batch_index = || Tensor::<1, Int>::arange(0..batch as i64, (&device, dtype)).reshape([batch, 1]);
    let zero = Tensor::<1, Int>::zeros([1], (&device, dtype));
    let bd_crow = if total_rows == 0 {
        zero
    } else {
        let ends = c.cast(dtype).slice([0..batch, 1..rows1]) + batch_index().mul_scalar(nse as i64);
        Tensor::cat(vec![zero, reshape_int(ends, [total_rows])], 0)
    };
    let bd_col = if total_nnz == 0 {
        Tensor::<1, Int>::zeros([0], (&device, dtype))
    } else {
        reshape_int(p.cast(dtype) + batch_index().mul_scalar(cols as i64), [total_nnz])
    };
    Ok(Csr {
        crow: bd_crow,
        col: bd_col,
        values: reshape(s.values_flat(), [total_nnz]),
        cols: total_cols,
        transposed: false,
        cell: Arc::new(TransposeCell::new()),
    })
}
