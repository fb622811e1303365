//! torch.sparse's matmul family as free functions (re-exported from `sparsegrad::sparse`):
//! `mm` (sparse @ dense, sparse @ sparse: `spgemm`), `mm_reduce` (torch's `mm(.., reduce=)`),
//! `mm_dense_sparse` (dense @ sparse, without torch's double transpose), `addmm`,
//! `sampled_addmm`, `mv`, `bmm`, `smm`, `hspmm`, `sspaddmm`.
//!
//! Every layout is accepted as the sparse operand. CSR runs the kernels directly, CSC runs them
//! on its arrays as the CSR pattern of the transpose (no conversion), and COO, BSR and BSC are
//! converted to CSR first; conversions move values with differentiable burn ops, so gradients
//! reach the operand's own values whatever its layout. Batched products run on the
//! block-diagonal pattern of the batch, one kernel call for all entries.
//!
//! Shape errors panic with both shapes named, like burn's ops; the `try_` forms return them.
//!
//! Soundness: the product primitives are `unsafe` (the kernels walk the pattern through
//! unchecked offsets), and this module calls them only with a `Csr`, which only `csr_of` and
//! `block_diagonal` build: from a tensor whose invariants were checked
//! ([`SparseTensor::check_invariants`]), or derived from one with checked arithmetic. A dense
//! result is sized with checked arithmetic and probed before the kernels allocate it, so an
//! impossible one is an `Allocation` error, not an abort.

use crate::sddmm::SparseSddmm;
use crate::spgemm::SparseSpgemm;
use crate::spmm::SparseSpmm;
use crate::spmm_reduce::SparseSpmmReduce;
use burn::backend::Dispatch;
use burn::tensor::{Int, Tensor};
use sparsegrad_backend::algebra::validate::check_numel;
use sparsegrad_backend::alloc::{ensure_allocatable, try_vec};
use sparsegrad_backend::error::invalid;
use sparsegrad_backend::host::with_ints;
use sparsegrad_backend::movement::gather_rows;
use sparsegrad_backend::spgemm::{masked_product_pattern_on_device, product_count, product_pattern};
use sparsegrad_backend::util::{index_dtype_for, int_tensor, reshape, reshape_int, try_int_tensor};
use sparsegrad_backend::{Layout, Result, SparseError, SparseTensor};
use sparsegrad_kernels::pattern::TransposeCell;
use std::sync::Arc;

/// A sparse operand as a CSR pattern (`rows x cols`) with values, used as is or transposed.
/// Built only by [`csr_of`] and [`block_diagonal`], from checked tensors: its pattern is valid,
/// which the unsafe product primitives require.
struct Csr {
    crow: Tensor<1, Int>,
    col: Tensor<1, Int>,
    values: Tensor<1>,
    cols: usize,
    /// The operand is the transpose of the pattern (a CSC tensor's arrays).
    transposed: bool,
    /// The pattern's transposed-view cache (its tensor's, shared by the tensor's clones).
    cell: Arc<TransposeCell>,
}

fn mismatch(operation: &'static str, a: &[usize], b: &[usize]) -> SparseError {
    invalid(operation, format!("shapes {a:?} and {b:?} cannot be multiplied"))
}

/// The CSR view of a 2-D sparse operand (its invariants checked first).
fn csr_of(a: &SparseTensor<2>, operation: &'static str) -> Result<Csr> {
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
fn spmm(operation: &'static str, c: &Csr, x: Tensor<2>, transpose: bool) -> Result<Tensor<2>> {
    spmm_stored(operation, c, x, transpose, false)
}

/// [`spmm`], the product `stored_transposed` where the backend can, for a caller that
/// transposes it next (see `SparseSpmm::sparse_spmm`).
fn spmm_stored(
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
    // SAFETY: `c` is a `Csr`, built from a checked tensor (its type's invariant): a valid pattern
    // `[rows, cols]`; `x` was checked above to be the operand the product reads.
    Ok(Tensor::from_dispatch(unsafe {
        <Dispatch as SparseSpmm>::sparse_spmm(
            c.crow.clone().into_dispatch(),
            c.col.clone().into_dispatch(),
            c.values.clone().into_dispatch(),
            x.into_dispatch(),
            transpose,
            stored_transposed,
            c.cols,
            c.cell.clone(),
        )
    }))
}

/// `out[j] = a[row j] · b[col j]` on the pattern of `c` (its values unused), through the
/// differentiable primitive: `a [rows, d]`, `b [cols, d]`.
fn sddmm(c: &Csr, a: Tensor<2>, b: Tensor<2>) -> Tensor<1> {
    let rows = c.crow.dims()[0] - 1;
    assert_eq!(
        (a.dims()[0], b.dims()[0], a.dims()[1]),
        (rows, c.cols, b.dims()[1]),
        "sddmm operands (callers check the shapes)"
    );
    // SAFETY: `c` is a `Csr`, a valid pattern `[rows, cols]` (its type's invariant), and the
    // operands' shapes were checked above.
    Tensor::from_dispatch(unsafe {
        <Dispatch as SparseSddmm>::sparse_sddmm(
            c.crow.clone().into_dispatch(),
            c.col.clone().into_dispatch(),
            a.into_dispatch(),
            b.into_dispatch(),
            c.cell.clone(),
        )
    })
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
        spmm("mm", &c, self, c.transposed)
    }
}

impl MatmulRhs for &SparseTensor<2> {
    type Output = SparseTensor<2>;

    fn rmm(self, a: &SparseTensor<2>) -> Result<SparseTensor<2>> {
        spgemm(a, self)?.try_to_sparse_coo()
    }
}

/// torch's `sparse.mm(mat1, mat2)`: sparse @ dense gives a dense `Tensor<2>`, sparse @ sparse a
/// coalesced sparse COO tensor ([`spgemm`]'s CSR product, converted; call [`spgemm`] to keep
/// CSR). Differentiable w.r.t. the sparse values (on the operand's pattern) and the dense
/// operand. Panics on mismatched shapes (see [`try_mm`]).
///
/// ```
/// use burn::tensor::{Device, Tensor};
/// use sparsegrad_autodiff::matmul::mm;
/// use sparsegrad_backend::SparseTensor;
///
/// let device = Device::flex();
/// // [[0, 2], [3, 0]] @ [[1, 2], [3, 4]] = [[6, 8], [3, 6]]
/// let a = SparseTensor::csr_from_vecs(vec![0, 1, 2], vec![1, 0], vec![2.0f32, 3.0], [2, 2], &device)?;
/// let x = Tensor::<2>::from_data([[1.0f32, 2.0], [3.0, 4.0]], &device);
/// assert_eq!(mm(&a, x.clone()).into_data().try_to_vec::<f32>().unwrap(), [6.0, 8.0, 3.0, 6.0]);
/// // The same as the dense product.
/// assert_eq!(mm(&a, x.clone()).into_data(), a.to_dense().matmul(x).into_data());
/// // Sparse @ sparse: [[0, 2], [3, 0]]^2 = [[6, 0], [0, 6]], a coalesced COO tensor.
/// let a2 = mm(&a, &a);
/// assert_eq!(a2.to_dense().into_data().try_to_vec::<f32>().unwrap(), [6.0, 0.0, 0.0, 6.0]);
/// # Ok::<(), sparsegrad_backend::SparseError>(())
/// ```
pub fn mm<R: MatmulRhs>(a: &SparseTensor<2>, b: R) -> R::Output {
    try_mm(a, b).unwrap_or_else(|e| panic!("{e}"))
}

/// [`mm`] returning shape and layout errors.
pub fn try_mm<R: MatmulRhs>(a: &SparseTensor<2>, b: R) -> Result<R::Output> {
    b.rmm(a)
}

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
/// mean as [`mm`], amax and amin through the winning entry of every output element (the first
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
            // SAFETY: `c` is a `Csr` of a checked tensor (its type's invariant): a valid pattern
            // `[m, k]`, and `x` is `[k, n]` (checked above).
            Ok(Tensor::from_dispatch(unsafe {
                <Dispatch as SparseSpmmReduce>::sparse_spmm_arg_extreme(
                    c.crow.into_dispatch(),
                    c.col.into_dispatch(),
                    c.values.into_dispatch(),
                    x.into_dispatch(),
                    reduce == Reduce::Amax,
                )
            }))
        }
    }
}

/// Dense @ sparse: `x [p, m] @ a [m, k] -> [p, k]`, computed as `(aᵀ xᵀ)ᵀ` on the kernels
/// without materialising `aᵀ` (torch makes users transpose twice): through the transposed view
/// of `a`'s pattern, computed once per pattern, and `a`'s values in its column order, gathered
/// once per values on Flex (a constant matrix pays the gather on its first product only). On
/// Flex the result is contiguous, as torch's is: the kernel stores `aᵀ xᵀ` transposed, tile by
/// tile, so the ops that follow read it in order (on the transposed view `(aᵀ xᵀ)ᵀ` leaves,
/// an elementwise op ran 3-4x slower).
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
    // aᵀ xᵀ: for a = P that is Pᵀ xᵀ; for a = Pᵀ (CSC) it is P xᵀ. Either product is stored
    // transposed, so the result is contiguous (elementwise ops after it read it in order; on a
    // transposed view they ran 3-4x slower).
    Ok(spmm_stored("mm_dense_sparse", &c, x.transpose(), !c.transposed, true)?.transpose())
}

/// torch's `sparse.addmm(input, mat1, mat2, beta, alpha)`: `beta * input + alpha * (mat1 @ mat2)`;
/// `input` broadcasts to the product's shape. As torch, with `beta = 0` the input's values are
/// ignored (its NaN and infinities are not propagated) and its gradient is zeros of its shape.
/// Panics on mismatched shapes (see [`try_addmm`]).
///
/// ```
/// use burn::tensor::{Device, Tensor};
/// use sparsegrad_autodiff::matmul::addmm;
/// use sparsegrad_backend::SparseTensor;
///
/// let device = Device::flex();
/// let a = SparseTensor::csr_from_vecs(vec![0, 1, 2], vec![1, 0], vec![2.0f32, 3.0], [2, 2], &device)?;
/// let x = Tensor::<2>::from_data([[1.0f32, 2.0], [3.0, 4.0]], &device);
/// let bias = Tensor::<2>::from_data([[1.0f32, -1.0]], &device); // broadcast over the rows
/// // 0.5 * bias + 2 * (a @ x) = [[12.5, 15.5], [6.5, 11.5]]
/// let y = addmm(bias, &a, x, 0.5, 2.0);
/// assert_eq!(y.into_data().try_to_vec::<f32>().unwrap(), [12.5, 15.5, 6.5, 11.5]);
/// # Ok::<(), sparsegrad_backend::SparseError>(())
/// ```
pub fn addmm(input: Tensor<2>, mat1: &SparseTensor<2>, mat2: Tensor<2>, beta: f64, alpha: f64) -> Tensor<2> {
    try_addmm(input, mat1, mat2, beta, alpha).unwrap_or_else(|e| panic!("{e}"))
}

/// [`addmm`] returning shape and layout errors.
pub fn try_addmm(
    input: Tensor<2>,
    mat1: &SparseTensor<2>,
    mat2: Tensor<2>,
    beta: f64,
    alpha: f64,
) -> Result<Tensor<2>> {
    let product = try_mm(mat1, mat2)?;
    let [m, n] = product.dims();
    let [im, in_] = input.dims();
    if !((im == m || im == 1) && (in_ == n || in_ == 1)) {
        return Err(invalid(
            "addmm",
            format!("input of shape [{im}, {in_}] does not broadcast to the product's [{m}, {n}]"),
        ));
    }
    let product = if alpha == 1.0 { product } else { product * alpha };
    if m * n == 0 {
        return Ok(product);
    }
    if beta == 0.0 {
        return Ok(ignoring_input(product, input));
    }
    Ok(product + if beta == 1.0 { input } else { input * beta })
}

/// `product` with `input` joined to the graph at weight zero, for `addmm` with `beta = 0`:
/// torch ignores the input's values then (its NaN and infinities do not reach the result) but
/// still gives it a gradient, zeros of its shape, where burn would give none for an input the
/// graph never saw. `input * 0` would let a NaN through, so the input is masked to zeros instead:
/// the mask's backward zeroes the gradient, and the sum with the product reduces it over the
/// broadcast dims to the input's shape. An untracked input costs nothing.
pub(crate) fn ignoring_input(product: Tensor<2>, input: Tensor<2>) -> Tensor<2> {
    if !input.is_require_grad() {
        return product;
    }
    let everywhere = input.zeros_like().equal_elem(0.0);
    product + input.mask_fill(everywhere, 0.0)
}

/// torch's `mv`: sparse matrix @ dense vector. Panics on mismatched shapes (see [`try_mv`]).
pub fn mv(a: &SparseTensor<2>, v: Tensor<1>) -> Tensor<1> {
    try_mv(a, v).unwrap_or_else(|e| panic!("{e}"))
}

/// [`mv`] returning shape and layout errors.
pub fn try_mv(a: &SparseTensor<2>, v: Tensor<1>) -> Result<Tensor<1>> {
    let k = v.dims()[0];
    let m = a.shape()[0];
    Ok(reshape(try_mm(a, reshape(v, [k, 1]))?, [m]))
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

/// The pattern of a batched CSR tensor (`[batch, rows, cols]`, its invariants checked) as one
/// block-diagonal CSR pattern `[batch * rows, batch * cols]`: batch entry `b`'s rows and
/// columns are offset by `b * rows` and `b * cols`, its entries by `b * nse`. The offsets are
/// computed with checked arithmetic, and the indices widened when the block-diagonal sizes do
/// not fit the tensor's index dtype (an int8 batch of 100-column matrices needs int16).
fn block_diagonal<const D: usize>(s: &SparseTensor<D>, operation: &'static str) -> Result<Csr> {
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

/// torch's `sparse.sampled_addmm(input, mat1, mat2, beta, alpha)`: `beta * input + alpha *
/// (mat1 @ mat2)` evaluated only on `input`'s pattern (SDDMM), a CSR result. `D = 2`, or `D = 3`
/// for a batch (`input [B, m, n]` batched CSR, `mat1 [B, m, k]`, `mat2 [B, k, n]`). Other
/// layouts of `input` are converted to CSR.
///
/// ```
/// use burn::tensor::{Device, Tensor};
/// use sparsegrad_autodiff::matmul::sampled_addmm;
/// use sparsegrad_backend::SparseTensor;
///
/// let device = Device::flex();
/// // The pattern {(0, 1), (1, 0)} with values 10 and 20.
/// let input = SparseTensor::csr_from_vecs(vec![0, 1, 2], vec![1, 0], vec![10.0f32, 20.0], [2, 2], &device)?;
/// let m1 = Tensor::<2>::from_data([[1.0f32, 2.0], [3.0, 4.0]], &device);
/// let m2 = Tensor::<2>::from_data([[5.0f32, 6.0], [7.0, 8.0]], &device);
/// // m1 @ m2 = [[19, 22], [43, 50]]; on the pattern: 0.1 * 10 + 22 and 0.1 * 20 + 43.
/// let out = sampled_addmm(&input, m1, m2, 0.1, 1.0);
/// assert_eq!(out.to_dense().into_data().try_to_vec::<f32>().unwrap(), [0.0, 23.0, 45.0, 0.0]);
/// # Ok::<(), sparsegrad_backend::SparseError>(())
/// ```
pub fn sampled_addmm<const D: usize>(
    input: &SparseTensor<D>,
    mat1: Tensor<D>,
    mat2: Tensor<D>,
    beta: f64,
    alpha: f64,
) -> SparseTensor<D> {
    try_sampled_addmm(input, mat1, mat2, beta, alpha).unwrap_or_else(|e| panic!("{e}"))
}

/// [`sampled_addmm`] returning errors.
pub fn try_sampled_addmm<const D: usize>(
    input: &SparseTensor<D>,
    mat1: Tensor<D>,
    mat2: Tensor<D>,
    beta: f64,
    alpha: f64,
) -> Result<SparseTensor<D>> {
    const OP: &str = "sampled_addmm";
    if D != 2 && D != 3 {
        return Err(invalid(OP, format!("rank {D}: expected a matrix or a batch of matrices")));
    }
    if input.dense_dim() > 0 {
        return Err(invalid(OP, "hybrid input is not supported"));
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
    let pattern = if D == 3 {
        block_diagonal(&s, OP)?
    } else {
        s.check_invariants()?;
        let (c, p) = s.compressed_indices_flat().expect("csr");
        let nnz = s.nnz();
        Csr {
            crow: reshape_int(c, [m + 1]),
            col: reshape_int(p, [nnz]),
            values: reshape(s.values_flat(), [nnz]),
            cols: n,
            transposed: false,
            cell: s.transpose_cell().expect("csr"),
        }
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
    if nnz_total == 0 {
        // Nothing to sample (and no scaling of an empty tensor: burn's Cube backend rejects
        // element-wise ops on `[0, 1]`).
        return Ok(s.clone());
    }
    let sampled = reshape(sddmm(&pattern, a, b), [nnz_total, 1]);
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

/// Options of [`spgemm_with`].
#[derive(Debug, Clone, Copy, Default)]
pub struct SpgemmOptions<'a> {
    /// Compute only the entries of this pattern `[m, n]` that the product reaches (GraphBLAS's
    /// masked `mxm`, `C<M> = A · B`); the mask's values are not read.
    pub mask: Option<&'a SparseTensor<2>>,
    /// Drop the entries whose computed value is exactly zero (scipy's `eliminate_zeros` on the
    /// product); the pattern then depends on the values.
    pub drop_zeros: bool,
}

/// Sparse @ sparse (SpGEMM): `a [m, k] @ b [k, n]` as a CSR tensor with sorted columns,
/// structural (an entry wherever a stored `a[i, p]` meets a stored `b[p, j]`, stored zeros
/// included). Gustavson's row-by-row product, pattern and values in one pass over the partial
/// products (with a mask, [`spgemm_with`] runs two: a symbolic pass for the pattern on the
/// host, then a numeric pass for the values; see `sparsegrad_kernels::spgemm`);
/// bit-reproducible, and the same sums either way. Differentiable w.r.t. both operands' values, each gradient a masked sparse
/// product on its operand's pattern. Every layout is accepted (non-CSR operands are converted
/// to CSR, differentiably); the values take `a`'s dtype, the indices `a`'s index dtype, widened
/// when the product's sizes outgrow it.
pub fn spgemm(a: &SparseTensor<2>, b: &SparseTensor<2>) -> Result<SparseTensor<2>> {
    spgemm_with(a, b, SpgemmOptions::default())
}

/// [`spgemm`] with a mask (`C<M> = A · B`) and the dropping of exact zeros.
pub fn spgemm_with(a: &SparseTensor<2>, b: &SparseTensor<2>, options: SpgemmOptions<'_>) -> Result<SparseTensor<2>> {
    const OP: &str = "spgemm";
    let ([m, k], [kb, n]) = (a.shape(), b.shape());
    if k != kb {
        return Err(mismatch("mm", &[m, k], &[kb, n]));
    }
    a.check_invariants()?;
    b.check_invariants()?;
    check_numel(&[m, n])?;
    if a.dense_dim() > 0 || b.dense_dim() > 0 {
        return Err(invalid("mm", "hybrid operands are not supported"));
    }
    // Each thread's scratch spans the product's columns (a marker byte, an accumulator word
    // and a bit per column): refused here, before a thread would abort allocating it.
    ensure_allocatable(n, 9, "spgemm: a thread's scratch over the product's columns")?;
    let to_csr = |s: &SparseTensor<2>| if s.layout() == Layout::Csr { Ok(s.clone()) } else { s.to_sparse_csr() };
    let (ac, bc) = (to_csr(a)?, to_csr(b)?);
    let mask = match options.mask {
        Some(mk) => {
            if mk.shape() != [m, n] {
                return Err(invalid(OP, format!("mask of shape {:?} for a product of shape [{m}, {n}]", mk.shape())));
            }
            mk.check_invariants()?;
            if mk.dense_dim() > 0 {
                return Err(invalid(OP, "a hybrid mask is not supported"));
            }
            Some(to_csr(mk)?)
        }
        None => None,
    };
    let flat = |s: &SparseTensor<2>, rows: usize| {
        let (c, p) = s.compressed_indices_flat().expect("csr");
        (reshape_int(c, [rows + 1]), reshape_int(p, [s.nnz()]))
    };
    let (a_idx, b_idx) = (flat(&ac, m), flat(&bc, k));
    let m_idx = mask.as_ref().map(|s| flat(s, m));
    let b_values = reshape(bc.values_flat(), [bc.nnz()]);
    // The values in `a`'s dtype (a cast to the same dtype leaves them as they are).
    let b_values = b_values.cast(ac.dtype());
    let device = ac.device();
    if m_idx.is_none() {
        // One pass for pattern and values. The product has at most one entry per partial
        // product (and per element): that much memory is checked before it runs. The partial
        // products are counted (a walk of `A`, which the kernel makes again) only where the
        // elements alone would not pass.
        let (elem, what) = (8 + ac.dtype().size(), "spgemm: the product");
        if ensure_allocatable(m.saturating_mul(n), elem, what).is_err() {
            // SAFETY: the operands are checked CSR tensors of these shapes: valid patterns.
            let products = unsafe { product_count((&a_idx.0, &a_idx.1), (&b_idx.0, &b_idx.1), k, n)? };
            ensure_allocatable(usize::try_from(products).unwrap_or(usize::MAX).min(m.saturating_mul(n)), elem, what)?;
        }
        // SAFETY: `a` and `b` are checked CSR tensors (valid patterns, one value per entry).
        let (c_crow, c_col, values) = unsafe {
            <Dispatch as SparseSpgemm>::sparse_spgemm_product(
                a_idx.0.into_dispatch(),
                a_idx.1.into_dispatch(),
                reshape(ac.values_flat(), [ac.nnz()]).into_dispatch(),
                b_idx.0.into_dispatch(),
                b_idx.1.into_dispatch(),
                b_values.into_dispatch(),
                n,
            )
        };
        let (c_crow, c_col) = (Tensor::<1, Int>::from_dispatch(c_crow), Tensor::<1, Int>::from_dispatch(c_col));
        let nnz = c_col.dims()[0];
        let dtype = index_dtype_for(ac.index_dtype(), m.max(n).max(nnz) as u64);
        // int64 from the kernel; narrowed to `a`'s index dtype where every index fits it.
        let (c_crow, c_col) = (c_crow.cast(dtype), c_col.cast(dtype));
        // SAFETY: the product's pattern: pointers from 0 to nnz, non-decreasing; each row's
        // columns strictly increasing and below n; the dtype was sized for them.
        let c = unsafe { SparseTensor::csr_trusted(c_crow, c_col, Tensor::from_dispatch(values), [m, n])? };
        return if options.drop_zeros { c.eliminate_zeros() } else { Ok(c) };
    }
    // SAFETY: the operands and the mask are checked CSR tensors of these shapes: valid patterns
    // with sorted rows.
    let on_device = m_idx.as_ref().and_then(|(c, p)| unsafe {
        masked_product_pattern_on_device((&a_idx.0, &a_idx.1), (&b_idx.0, &b_idx.1), (c, p))
    });
    let (c_crow, c_col) = match on_device {
        // The symbolic pass on the operands' device (a Cube device: one count read back).
        Some((crow, col)) => {
            let nnz = col.dims()[0];
            let dtype = index_dtype_for(ac.index_dtype(), m.max(n).max(nnz) as u64);
            let col = if nnz == 0 { try_int_tensor(Vec::new(), [0], dtype, &device)? } else { col.cast(dtype) };
            (crow.cast(dtype), col)
        }
        None => {
            // SAFETY: the operands (and the mask) are checked CSR tensors of these shapes: valid
            // patterns with sorted rows.
            let (crow, col) = unsafe {
                product_pattern((&a_idx.0, &a_idx.1), (&b_idx.0, &b_idx.1), m_idx.as_ref().map(|(c, p)| (c, p)), k, n)?
            };
            let nnz = col.len();
            let dtype = index_dtype_for(ac.index_dtype(), m.max(n).max(nnz) as u64);
            (try_int_tensor(crow, [m + 1], dtype, &device)?, try_int_tensor(col, [nnz], dtype, &device)?)
        }
    };
    // SAFETY: `a` and `b` are checked CSR tensors (valid patterns, one value per entry), and
    // `c` is the symbolic pass's pattern of their product (valid, rows sorted).
    let values = Tensor::<1>::from_dispatch(unsafe {
        <Dispatch as SparseSpgemm>::sparse_spgemm(
            a_idx.0.into_dispatch(),
            a_idx.1.into_dispatch(),
            reshape(ac.values_flat(), [ac.nnz()]).into_dispatch(),
            b_idx.0.into_dispatch(),
            b_idx.1.into_dispatch(),
            b_values.into_dispatch(),
            c_crow.clone().into_dispatch(),
            c_col.clone().into_dispatch(),
            n,
        )
    });
    // SAFETY: the symbolic pass's pattern: pointers from 0 to nnz, non-decreasing; each row's
    // columns strictly increasing and below n; the dtype was sized for them.
    let c = unsafe { SparseTensor::csr_trusted(c_crow, c_col, values, [m, n])? };
    if options.drop_zeros {
        c.eliminate_zeros()
    } else {
        Ok(c)
    }
}
