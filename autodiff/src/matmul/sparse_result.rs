//! Sparse @ dense products with a sparse result on the rows where `a` stores entries: [`smm`],
//! [`hspmm`] and [`sspaddmm`], whose patterns are structural (never depend on the values).

use super::csr::mismatch;
use super::mm::try_mm;
use burn::tensor::Tensor;
use sparsegrad_backend::alloc::try_vec;
use sparsegrad_backend::error::invalid;
use sparsegrad_backend::host::with_ints;
use sparsegrad_backend::movement::gather_rows;
use sparsegrad_backend::util::{int_tensor, reshape};
use sparsegrad_backend::{Result, SparseTensor};

/// torch's `smm`: sparse @ dense with a sparse (COO) result, `sspaddmm(empty, a, x, 0, 1)` as
/// torch defines it: every column of the rows where `a` has stored entries. The pattern is
/// structural (never depends on the values), so stored zeros of `a` still get gradients.
pub fn smm(a: &SparseTensor<2>, x: Tensor<2>) -> SparseTensor<2> {
    try_smm(a, x).unwrap_or_else(|e| panic!("{e}"))
}

/// [`smm`] returning errors.
pub fn try_smm(a: &SparseTensor<2>, x: Tensor<2>) -> Result<SparseTensor<2>> {
    let empty = SparseTensor::empty_with([a.shape()[0], x.dims()[1]], 2, a.index_dtype(), a.dtype(), &a.device())?;
    try_sspaddmm(&empty, a, x, 0.0, 1.0)
}

/// Rows of `a` holding at least one stored entry, ascending.
fn nonempty_rows(a: &SparseTensor<2>) -> Result<Vec<i64>> {
    let coo = a.to_sparse_coo();
    let idx = coo.indices_raw()?;
    let nnz = coo.nnz();
    let mut rows: Vec<i64> = with_ints(&idx, |v| v.to_i64())[..nnz].to_vec();
    rows.sort_unstable();
    rows.dedup();
    Ok(rows)
}

/// torch's `hspmm`: sparse @ dense as a hybrid COO tensor (1 sparse dim: the rows of `a` with
/// stored entries; 1 dense dim: those rows of the product).
pub fn hspmm(a: &SparseTensor<2>, x: Tensor<2>) -> SparseTensor<2> {
    try_hspmm(a, x).unwrap_or_else(|e| panic!("{e}"))
}

/// [`hspmm`] returning errors.
pub fn try_hspmm(a: &SparseTensor<2>, x: Tensor<2>) -> Result<SparseTensor<2>> {
    let [m, _] = a.shape();
    let n = x.dims()[1];
    let product = try_mm(a, x)?;
    let rows = nonempty_rows(a)?;
    let r = rows.len();
    let device = product.device();
    let indices = int_tensor(rows.clone(), [1, r], a.index_dtype(), &device);
    let values = gather_rows(product, rows);
    Ok(SparseTensor::coo(indices, values, [m, n])?.coalesce())
}

/// torch's `sspaddmm`: `beta * input + alpha * (mat1 @ mat2)` as a sparse COO result (the
/// product's rows where `mat1` has entries, plus `input`'s entries; coalesced).
pub fn sspaddmm(
    input: &SparseTensor<2>,
    mat1: &SparseTensor<2>,
    mat2: Tensor<2>,
    beta: f64,
    alpha: f64,
) -> SparseTensor<2> {
    try_sspaddmm(input, mat1, mat2, beta, alpha).unwrap_or_else(|e| panic!("{e}"))
}

/// [`sspaddmm`] returning errors.
pub fn try_sspaddmm(
    input: &SparseTensor<2>,
    mat1: &SparseTensor<2>,
    mat2: Tensor<2>,
    beta: f64,
    alpha: f64,
) -> Result<SparseTensor<2>> {
    let [m, n] = input.shape();
    if mat1.shape()[0] != m || mat2.dims()[1] != n {
        return Err(mismatch("sspaddmm", &input.shape(), &[mat1.shape()[0], mat2.dims()[1]]));
    }
    if input.dense_dim() > 0 {
        return Err(invalid("sspaddmm", "hybrid input is not supported"));
    }
    input.check_invariants()?;
    let h = try_hspmm(mat1, mat2)?;
    let rows = with_ints(&h.indices_raw()?, |v| v.to_i64());
    let r = rows.len();
    // r * n <= m * n, which fits i64 (the input's shape is checked).
    let mut idx = try_vec(2 * r * n, "sspaddmm: the product's indices")?;
    idx.extend(rows.iter().flat_map(|&row| std::iter::repeat_n(row, n)));
    idx.extend((0..r).flat_map(|_| 0..n as i64));
    let inp = input.to_sparse_coo();
    let in_idx = with_ints(&inp.indices_raw()?, |v| v.to_i64());
    let nin = inp.nnz();
    let mut all = try_vec(2 * (nin + r * n), "sspaddmm: the result's indices")?;
    all.extend_from_slice(&in_idx[..nin]);
    all.extend_from_slice(&idx[..r * n]);
    all.extend_from_slice(&in_idx[nin..]);
    all.extend_from_slice(&idx[r * n..]);
    let total = nin + r * n;
    let device = inp.device();
    let values =
        Tensor::cat(vec![reshape(inp.values_flat(), [nin]) * beta, reshape(h.values_flat(), [r * n]) * alpha], 0);
    let indices = int_tensor(all, [2, total], input.index_dtype(), &device);
    Ok(SparseTensor::coo(indices, values, [m, n])?.coalesce())
}
