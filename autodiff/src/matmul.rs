//! torch.sparse's matmul family as free functions (re-exported from `sparsegrad::sparse`):
//! `mm` (sparse @ dense, sparse @ sparse), `mm_dense_sparse` (dense @ sparse, without torch's
//! double transpose), `addmm`, `sampled_addmm`, `mv`, `bmm`, `smm`, `hspmm`, `sspaddmm`.
//!
//! Every layout is accepted as the sparse operand. CSR runs the kernels directly, CSC runs them
//! on its arrays as the CSR pattern of the transpose (no conversion), and COO, BSR and BSC are
//! converted to CSR first; conversions move values with differentiable burn ops, so gradients
//! reach the operand's own values whatever its layout. Batched products run on the
//! block-diagonal pattern of the batch, one kernel call for all entries.
//!
//! Shape errors panic with both shapes named, like burn's ops; the `try_` forms return them.

use crate::products::SparseMatmul;
use burn::backend::Dispatch;
use burn::tensor::{Int, Tensor};
use sparsegrad_backend::algebra::sort::coalesce_plan;
use sparsegrad_backend::host::with_ints;
use sparsegrad_backend::movement::{gather_rows, scatter_add_rows};
use sparsegrad_backend::util::{int_tensor, reshape, reshape_int};
use sparsegrad_backend::{Layout, Result, SparseError, SparseTensor};

/// A sparse operand as a CSR pattern (`rows x cols`) with values, used as is or transposed.
struct Csr {
    crow: Tensor<1, Int>,
    col: Tensor<1, Int>,
    values: Tensor<1>,
    cols: usize,
    /// The operand is the transpose of the pattern (a CSC tensor's arrays).
    transposed: bool,
}

fn invalid(operation: &'static str, message: String) -> SparseError {
    SparseError::InvalidArgument { operation, message }
}

fn mismatch(operation: &'static str, a: &[usize], b: &[usize]) -> SparseError {
    invalid(operation, format!("shapes {a:?} and {b:?} cannot be multiplied"))
}

/// The CSR view of a 2-D sparse operand.
fn csr_of(a: &SparseTensor<2>, operation: &'static str) -> Result<Csr> {
    if a.dense_dim() > 0 {
        return Err(invalid(operation, format!("hybrid operands (dense_dim {}) are not supported; the values must be scalars", a.dense_dim())));
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
    })
}

/// `pattern · x` (or `patternᵀ · x`) through the differentiable primitive.
fn spmm(c: &Csr, x: Tensor<2>, transpose: bool) -> Tensor<2> {
    Tensor::from_dispatch(<Dispatch as SparseMatmul>::sparse_spmm(
        c.crow.clone().into_dispatch(),
        c.col.clone().into_dispatch(),
        c.values.clone().into_dispatch(),
        x.into_dispatch(),
        transpose,
        c.cols,
    ))
}

/// `out[j] = a[row j] · b[col j]` on a pattern, through the differentiable primitive.
fn sddmm(crow: &Tensor<1, Int>, col: &Tensor<1, Int>, a: Tensor<2>, b: Tensor<2>) -> Tensor<1> {
    Tensor::from_dispatch(<Dispatch as SparseMatmul>::sparse_sddmm(crow.clone().into_dispatch(), col.clone().into_dispatch(), a.into_dispatch(), b.into_dispatch()))
}

/// The right operand of [`mm`]: a dense matrix (dense result) or a sparse one (sparse result).
pub trait MatmulRhs {
    /// The product's type.
    type Output;
    /// `a @ self`.
    fn rmm(self, a: &SparseTensor<2>) -> Result<Self::Output>;
}

impl MatmulRhs for Tensor<2> {
    type Output = Tensor<2>;

    fn rmm(self, a: &SparseTensor<2>) -> Result<Tensor<2>> {
        let [m, k] = a.shape();
        if self.dims()[0] != k {
            return Err(mismatch("mm", &[m, k], &self.dims()));
        }
        let c = csr_of(a, "mm")?;
        Ok(spmm(&c, self, c.transposed))
    }
}

impl MatmulRhs for &SparseTensor<2> {
    type Output = SparseTensor<2>;

    fn rmm(self, a: &SparseTensor<2>) -> Result<SparseTensor<2>> {
        spgemm(a, self)
    }
}

/// torch's `sparse.mm(mat1, mat2)`: sparse @ dense gives a dense `Tensor<2>`, sparse @ sparse a
/// coalesced sparse COO tensor. Differentiable w.r.t. the sparse values (on the operand's
/// pattern) and the dense operand. Panics on mismatched shapes (see [`try_mm`]).
pub fn mm<R: MatmulRhs>(a: &SparseTensor<2>, b: R) -> R::Output {
    try_mm(a, b).unwrap_or_else(|e| panic!("{e}"))
}

/// [`mm`] returning shape and layout errors.
pub fn try_mm<R: MatmulRhs>(a: &SparseTensor<2>, b: R) -> Result<R::Output> {
    b.rmm(a)
}

/// Dense @ sparse: `x [p, m] @ a [m, k] -> [p, k]`, computed as `(aᵀ xᵀ)ᵀ` on the kernels
/// without materialising `aᵀ` (torch makes users transpose twice).
pub fn mm_dense_sparse(x: Tensor<2>, a: &SparseTensor<2>) -> Tensor<2> {
    try_mm_dense_sparse(x, a).unwrap_or_else(|e| panic!("{e}"))
}

/// [`mm_dense_sparse`] returning errors.
pub fn try_mm_dense_sparse(x: Tensor<2>, a: &SparseTensor<2>) -> Result<Tensor<2>> {
    let [m, k] = a.shape();
    if x.dims()[1] != m {
        return Err(mismatch("mm_dense_sparse", &x.dims(), &[m, k]));
    }
    let c = csr_of(a, "mm_dense_sparse")?;
    // aᵀ xᵀ: for a = P that is Pᵀ xᵀ; for a = Pᵀ (CSC) it is P xᵀ.
    Ok(spmm(&c, x.transpose(), !c.transposed).transpose())
}

/// torch's `sparse.addmm(input, mat1, mat2, beta, alpha)`: `beta * input + alpha * (mat1 @ mat2)`.
pub fn addmm(input: Tensor<2>, mat1: &SparseTensor<2>, mat2: Tensor<2>, beta: f64, alpha: f64) -> Tensor<2> {
    input * beta + mm(mat1, mat2) * alpha
}

/// torch's `mv`: sparse matrix @ dense vector.
pub fn mv(a: &SparseTensor<2>, v: Tensor<1>) -> Tensor<1> {
    let k = v.dims()[0];
    let m = a.shape()[0];
    reshape(mm(a, reshape(v, [k, 1])), [m])
}

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

/// The CSR pattern of a (batched) compressed tensor as one block-diagonal pattern: batch entry
/// `b`'s rows and columns are offset by `b * rows` and `b * cols`. Returns `(crow, col)`.
fn block_diagonal<const D: usize>(s: &SparseTensor<D>) -> (Tensor<1, Int>, Tensor<1, Int>) {
    let (c, p) = s.compressed_indices_flat().expect("compressed layout");
    let [batch, rows1] = c.dims();
    let nse = p.dims()[1];
    let cols = s.shape()[D - 1];
    let crow = with_ints(&c, |v| v.to_i64());
    let col = with_ints(&p, |v| v.to_i64());
    let rows = rows1 - 1;
    let mut bd_crow = Vec::with_capacity(batch * rows + 1);
    for b in 0..batch {
        let skip = usize::from(b > 0);
        bd_crow.extend(crow[b * rows1 + skip..(b + 1) * rows1].iter().map(|&v| v + (b * nse) as i64));
    }
    if batch == 0 {
        bd_crow.push(0);
    }
    let bd_col: Vec<i64> = col.iter().enumerate().map(|(j, &v)| v + ((j / nse.max(1)) * cols) as i64).collect();
    let device = s.device();
    let dtype = s.index_dtype();
    let n = bd_crow.len();
    (int_tensor(bd_crow, [n], dtype, &device), int_tensor(bd_col, [batch * nse], dtype, &device))
}

/// torch's `sparse.sampled_addmm(input, mat1, mat2, beta, alpha)`: `beta * input + alpha *
/// (mat1 @ mat2)` evaluated only on `input`'s pattern (SDDMM), a CSR result. `D = 2`, or `D = 3`
/// for a batch (`input [B, m, n]` batched CSR, `mat1 [B, m, k]`, `mat2 [B, k, n]`). Other
/// layouts of `input` are converted to CSR.
pub fn sampled_addmm<const D: usize>(input: &SparseTensor<D>, mat1: Tensor<D>, mat2: Tensor<D>, beta: f64, alpha: f64) -> SparseTensor<D> {
    try_sampled_addmm(input, mat1, mat2, beta, alpha).unwrap_or_else(|e| panic!("{e}"))
}

/// [`sampled_addmm`] returning errors.
pub fn try_sampled_addmm<const D: usize>(input: &SparseTensor<D>, mat1: Tensor<D>, mat2: Tensor<D>, beta: f64, alpha: f64) -> Result<SparseTensor<D>> {
    const OP: &str = "sampled_addmm";
    if D != 2 && D != 3 {
        return Err(invalid(OP, format!("rank {D}: expected a matrix or a batch of matrices")));
    }
    if input.dense_dim() > 0 {
        return Err(invalid(OP, "hybrid input is not supported".into()));
    }
    let s = if input.layout() == Layout::Csr { input.clone() } else { input.to_sparse_csr()? };
    let (d1, d2) = (mat1.dims(), mat2.dims());
    let shape = s.shape();
    let (batch, m, n) = if D == 3 { (shape[0], shape[1], shape[2]) } else { (1, shape[0], shape[1]) };
    let k = d1[D - 1];
    let ok = d1[D - 2] == m && d2[D - 2] == k && d2[D - 1] == n && (D == 2 || (d1[0] == batch && d2[0] == batch));
    if !ok {
        return Err(mismatch(OP, &d1, &d2));
    }
    let (crow, col) = if D == 3 {
        block_diagonal(&s)
    } else {
        let (c, p) = s.compressed_indices_flat().expect("csr");
        (reshape_int(c, [m + 1]), reshape_int(p, [s.nnz()]))
    };
    let a = reshape(mat1, [batch * m, k]);
    // For a matrix the transposed view goes to the kernel as is (its host side transposes it in
    // cache tiles); a reshape would first copy it through burn's generic strided path.
    let b = if D == 2 {
        Tensor::<2>::from_dispatch(mat2.swap_dims(0, 1).into_dispatch())
    } else {
        reshape(mat2.swap_dims(D - 2, D - 1), [batch * n, k])
    };
    let nnz_total = s.values_flat().dims()[0];
    let sampled = reshape(sddmm(&crow, &col, a, b), [nnz_total, 1]);
    let sampled = if alpha == 1.0 { sampled } else { sampled * alpha };
    // As torch: with beta = 0 the input's values are ignored (not multiplied: NaN * 0 is NaN).
    let values = if beta == 0.0 { sampled } else { s.values_flat() * beta + sampled };
    Ok(s.with_values(values))
}

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
        return Err(invalid("bmm", "hybrid operands are not supported".into()));
    }
    // Batch entries as one block-diagonal [B*m, B*k] matrix over the same values.
    let coo = a.to_sparse_coo();
    let idx = coo.indices_raw()?;
    let nnz = coo.nnz();
    let raw = with_ints(&idx, |v| v.to_i64());
    let mut bd = vec![0i64; 2 * nnz];
    for j in 0..nnz {
        let b = raw[j];
        bd[j] = b * m as i64 + raw[nnz + j];
        bd[nnz + j] = b * k as i64 + raw[2 * nnz + j];
    }
    let indices = int_tensor(bd, [2, nnz], coo.index_dtype(), &coo.device());
    let flat = SparseTensor::coo_unchecked(indices, reshape(coo.values_flat(), [nnz]), [batch * m, batch * k]);
    Ok(reshape(mm(&flat, reshape(x, [batch * k, n])), [batch, m, n]))
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
pub fn sspaddmm(input: &SparseTensor<2>, mat1: &SparseTensor<2>, mat2: Tensor<2>, beta: f64, alpha: f64) -> SparseTensor<2> {
    try_sspaddmm(input, mat1, mat2, beta, alpha).unwrap_or_else(|e| panic!("{e}"))
}

/// [`sspaddmm`] returning errors.
pub fn try_sspaddmm(input: &SparseTensor<2>, mat1: &SparseTensor<2>, mat2: Tensor<2>, beta: f64, alpha: f64) -> Result<SparseTensor<2>> {
    let [m, n] = input.shape();
    if mat1.shape()[0] != m || mat2.dims()[1] != n {
        return Err(mismatch("sspaddmm", &input.shape(), &[mat1.shape()[0], mat2.dims()[1]]));
    }
    if input.dense_dim() > 0 {
        return Err(invalid("sspaddmm", "hybrid input is not supported".into()));
    }
    let h = try_hspmm(mat1, mat2)?;
    let rows = with_ints(&h.indices_raw()?, |v| v.to_i64());
    let r = rows.len();
    let mut idx = Vec::with_capacity(2 * r * n);
    idx.extend(rows.iter().flat_map(|&row| std::iter::repeat_n(row, n)));
    idx.extend((0..r).flat_map(|_| 0..n as i64));
    let inp = input.to_sparse_coo();
    let in_idx = with_ints(&inp.indices_raw()?, |v| v.to_i64());
    let nin = inp.nnz();
    let mut all = Vec::with_capacity(2 * (nin + r * n));
    all.extend_from_slice(&in_idx[..nin]);
    all.extend_from_slice(&idx[..r * n]);
    all.extend_from_slice(&in_idx[nin..]);
    all.extend_from_slice(&idx[r * n..]);
    let total = nin + r * n;
    let device = inp.device();
    let values = Tensor::cat(vec![reshape(inp.values_flat(), [nin]) * beta, reshape(h.values_flat(), [r * n]) * alpha], 0);
    let indices = int_tensor(all, [2, total], input.index_dtype(), &device);
    Ok(SparseTensor::coo(indices, values, [m, n])?.coalesce())
}

/// Sparse @ sparse (SpGEMM): every product `a[i, p] * b[p, j]` is enumerated on the host, then
/// summed into `(i, j)` with the differentiable row movements, so both operands' values get
/// gradients on their own patterns. The result is coalesced COO.
pub fn spgemm(a: &SparseTensor<2>, b: &SparseTensor<2>) -> Result<SparseTensor<2>> {
    let ([m, k], [kb, n]) = (a.shape(), b.shape());
    if k != kb {
        return Err(mismatch("mm", &[m, k], &[kb, n]));
    }
    let to_csr = |s: &SparseTensor<2>| if s.layout() == Layout::Csr { Ok(s.clone()) } else { s.to_sparse_csr() };
    let (ac, bc) = (to_csr(a)?, to_csr(b)?);
    if ac.dense_dim() > 0 || bc.dense_dim() > 0 {
        return Err(invalid("mm", "hybrid operands are not supported".into()));
    }
    let read = |s: &SparseTensor<2>| {
        let (c, p) = s.compressed_indices_flat().expect("csr");
        (with_ints(&c, |v| v.to_i64()), with_ints(&p, |v| v.to_i64()))
    };
    let ((acrow, acol), (bcrow, bcol)) = (read(&ac), read(&bc));
    let (mut ia, mut ib, mut keys) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..m {
        for ja in acrow[i] as usize..acrow[i + 1] as usize {
            let p = acol[ja] as usize;
            for jb in bcrow[p] as usize..bcrow[p + 1] as usize {
                ia.push(ja as i64);
                ib.push(jb as i64);
                keys.push(i as u64 * n as u64 + bcol[jb] as u64);
            }
        }
    }
    let plan = coalesce_plan(keys, &[m, n]);
    let products = gather_rows(ac.values_flat(), ia) * gather_rows(bc.values_flat(), ib);
    let values = scatter_add_rows(products, plan.segment, plan.unique);
    let indices = int_tensor(plan.coords, [2, plan.unique], ac.index_dtype(), &ac.device());
    Ok(SparseTensor::coo(indices, reshape(values, [plan.unique]), [m, n])?.coalesce())
}
