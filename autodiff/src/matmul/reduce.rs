//! [`mm_reduce`], torch's `mm(.., reduce=)`: the row reductions (`sum`, `mean`, `amax`, `amin`)
//! of the products of a sparse row with a dense matrix.

use super::csr::{csr_of, mismatch, spmm, Csr};
use burn::backend::Dispatch;
use burn::tensor::Tensor;
use sparsegrad_backend::alloc::ensure_allocatable;
use sparsegrad_backend::spmm_reduce::SparseSpmmReduce;
use sparsegrad_backend::{Layout, Result, SparseTensor};

/// The reduction of [`mm_reduce`] over the stored entries of a row (torch's `reduce=` argument
/// of `sparse.mm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduce {
    /// `sum_j a_ij x_jc`: the plain product.
    Sum,
    /// The sum divided by the row's number of stored entries.
    Mean,
    /// `max_j a_ij x_jc`.
    Amax,
    /// `min_j a_ij x_jc`.
    Amin,
}

/// torch's `sparse.mm(a, x, reduce)`: `out[i, c]` reduces `a_ij · x_jc` over the stored entries
/// `j` of row `i` (sum, mean, max or min); a row with no stored entry gives 0. Every layout of
/// `a`; an uncoalesced COO operand is coalesced first (duplicates are one entry, their values
/// summed). Differentiable w.r.t. the sparse values (on the operand's pattern) and `x`: sum and
/// mean as [`mm`](super::mm), amax and amin through the winning entry of every output element (the first
/// in storage order on a tie, as `scatter_reduce` defines it; torch has no CSR backward for
/// these, this does). Panics on mismatched shapes (see [`try_mm_reduce`]).
///
/// ```
/// use burn::tensor::{Device, Tensor};
/// use sparsegrad_autodiff::matmul::{mm_reduce, Reduce};
/// use sparsegrad_backend::SparseTensor;
///
/// let device = Device::flex();
/// // [[1, 2], [0, 0]]: row 1 has no entry.
/// let a = SparseTensor::csr_from_vecs(vec![0, 2, 2], vec![0, 1], vec![1.0f32, 2.0], [2, 2], &device)?;
/// let x = Tensor::<2>::from_data([[3.0f32], [-1.0]], &device);
/// let out = |r| mm_reduce(&a, x.clone(), r).into_data().try_to_vec::<f32>().unwrap();
/// assert_eq!(out(Reduce::Sum), [1.0, 0.0]);
/// assert_eq!(out(Reduce::Mean), [0.5, 0.0]);
/// assert_eq!(out(Reduce::Amax), [3.0, 0.0]);
/// assert_eq!(out(Reduce::Amin), [-2.0, 0.0]);
/// # Ok::<(), sparsegrad_backend::SparseError>(())
/// ```
pub fn mm_reduce(a: &SparseTensor<2>, x: Tensor<2>, reduce: Reduce) -> Tensor<2> {
    try_mm_reduce(a, x, reduce).unwrap_or_else(|e| panic!("{e}"))
}

/// [`mm_reduce`] returning shape and layout errors.
pub fn try_mm_reduce(a: &SparseTensor<2>, x: Tensor<2>, reduce: Reduce) -> Result<Tensor<2>> {
    const OP: &str = "mm_reduce";
    let [m, k] = a.shape();
    if x.dims()[0] != k {
        return Err(mismatch(OP, &[m, k], &x.dims()));
    }
    match reduce {
        Reduce::Sum => {
            let c = csr_of(a, OP)?;
            spmm(OP, &c, x, c.transposed)
        }
        Reduce::Mean => {
            let c = csr_of(a, OP)?;
            // Each row's entry count, as the product of the pattern (unit values) with a column
            // of ones, where the pattern lives (nothing read back); the sum divided by it (an
            // empty row's sum, 0, by 1).
            let device = a.device();
            let dtype = c.values.dtype();
            let units = Csr {
                crow: c.crow.clone(),
                col: c.col.clone(),
                values: Tensor::<1>::ones([c.values.dims()[0]], (&device, dtype)),
                cols: c.cols,
                transposed: c.transposed,
                cell: c.cell.clone(),
            };
            let inner = x.dims()[0];
            let counts = spmm(OP, &units, Tensor::<2>::ones([inner, 1], (&device, dtype)), units.transposed)?;
            let sum = spmm(OP, &c, x, c.transposed)?;
            Ok(sum / counts.clamp_min(1.0))
        }
        Reduce::Amax | Reduce::Amin => {
            // The kernel walks the operand's rows: CSC goes to CSR (differentiably).
            let converted;
            let rows = if a.layout() == Layout::Csc {
                a.check_invariants()?;
                converted = a.to_sparse_csr()?;
                &converted
            } else {
                a
            };
            let c = csr_of(rows, OP)?;
            debug_assert!(!c.transposed);
            let n = x.dims()[1];
            ensure_allocatable(m.saturating_mul(n), x.dtype().size(), OP)?;
            ensure_allocatable(m.saturating_mul(n), 8, OP)?;
            Ok(Tensor::from_dispatch(<Dispatch as SparseSpmmReduce>::sparse_spmm_arg_extreme(
                c.operand(),
                c.values.into_dispatch(),
                x.into_dispatch(),
                reduce == Reduce::Amax,
            )))
        }
    }
}
