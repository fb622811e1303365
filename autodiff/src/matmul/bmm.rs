//! [`bmm`]: a batch of sparse matrices times a batch of dense ones, one kernel call on the
//! batch's block-diagonal pattern.

use super::csr::{block_diagonal, mismatch, spmm};
use super::mm::try_mm;
use burn::tensor::Tensor;
use sparsegrad_backend::algebra::validate::check_numel;
use sparsegrad_backend::alloc::try_vec;
use sparsegrad_backend::error::invalid;
use sparsegrad_backend::host::with_ints;
use sparsegrad_backend::util::{index_dtype_for, int_tensor, reshape};
use sparsegrad_backend::{Layout, Result, SparseTensor};

/// torch's `bmm`: `a [B, m, k]` (COO with 3 sparse dims, or batched CSR/CSC) @ `x [B, k, n]`.
pub fn bmm(a: &SparseTensor<3>, x: Tensor<3>) -> Tensor<3> {
    try_bmm(a, x).unwrap_or_else(|e| panic!("{e}"))
}

/// [`bmm`] returning errors.
pub fn try_bmm(a: &SparseTensor<3>, x: Tensor<3>) -> Result<Tensor<3>> {
    let [batch, m, k] = a.shape();
    let [xb, xk, n] = x.dims();
    if xb != batch || xk != k {
        return Err(mismatch("bmm", &[batch, m, k], &[xb, xk, n]));
    }
    if a.dense_dim() > 0 {
        return Err(invalid("bmm", "hybrid operands are not supported"));
    }
    a.check_invariants()?;
    // Batch entries as one block-diagonal [B*m, B*k] matrix over the same values; its sizes
    // checked, its indices widened when they outgrow the operand's index dtype.
    let too_large =
        || invalid("bmm", format!("{batch} matrices [{m}, {k}] are too large for one block-diagonal matrix"));
    let (rows, cols) = (batch.checked_mul(m).ok_or_else(too_large)?, batch.checked_mul(k).ok_or_else(too_large)?);
    check_numel(&[rows, cols])?;
    if a.layout() == Layout::Csr && a.batch_dim() == 1 {
        // Batched CSR: its block-diagonal pattern built where the indices live.
        let c = block_diagonal(a, "bmm")?;
        return Ok(reshape(spmm("bmm", &c, reshape(x, [cols, n]), false)?, [batch, m, n]));
    }
    let coo = a.to_sparse_coo();
    let idx = coo.indices_raw()?;
    let nnz = coo.nnz();
    let raw = with_ints(&idx, |v| v.to_i64());
    let mut bd = try_vec(2 * nnz, "bmm: block-diagonal indices")?;
    bd.extend((0..nnz).map(|j| raw[j] * m as i64 + raw[nnz + j]));
    bd.extend((0..nnz).map(|j| raw[j] * k as i64 + raw[2 * nnz + j]));
    let dtype = index_dtype_for(coo.index_dtype(), rows.max(cols) as u64);
    let indices = int_tensor(bd, [2, nnz], dtype, &coo.device());
    let flat = SparseTensor::coo(indices, reshape(coo.values_flat(), [nnz]), [rows, cols])?;
    Ok(reshape(try_mm(&flat, reshape(x, [cols, n]))?, [batch, m, n]))
}
