//! Sparse @ sparse: [`spgemm`] and [`spgemm_with`] ([`SpgemmOptions`]: an output mask, dropping
//! cancelled zeros), a CSR product differentiable w.r.t. both operands' values.

use super::csr::mismatch;
use burn::backend::Dispatch;
use burn::tensor::{Int, Tensor};
use sparsegrad_backend::algebra::validate::check_numel;
use sparsegrad_backend::alloc::ensure_allocatable;
use sparsegrad_backend::error::invalid;
use sparsegrad_backend::operand::CsrOperand;
use sparsegrad_backend::spgemm::{masked_product_pattern_on_device, product_count, product_pattern, SparseSpgemm};
use sparsegrad_backend::util::{index_dtype_for, reshape, reshape_int, try_int_tensor};
use sparsegrad_backend::{Layout, Result, SparseTensor};
use sparsegrad_kernels::pattern::TransposeCell;
use std::sync::Arc;

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
    // The operands' patterns as the primitives take them, each with its tensor's cell.
    let operand = |s: &SparseTensor<2>, (crow, col): &(Tensor<1, Int>, Tensor<1, Int>), cols: usize| {
        let cell = s.transpose_cell().expect("csr");
        CsrOperand::new(crow.clone().into_dispatch(), col.clone().into_dispatch(), cols, cell)
    };
    let (a_op, b_op) = (operand(&ac, &a_idx, k), operand(&bc, &b_idx, n));
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
            let products = product_count((&a_idx.0, &a_idx.1), (&b_idx.0, &b_idx.1), k, n)?;
            ensure_allocatable(usize::try_from(products).unwrap_or(usize::MAX).min(m.saturating_mul(n)), elem, what)?;
        }
        let (c_crow, c_col, values) = <Dispatch as SparseSpgemm>::sparse_spgemm_product(
            a_op,
            reshape(ac.values_flat(), [ac.nnz()]).into_dispatch(),
            b_op,
            b_values.into_dispatch(),
        );
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
    // The operands and the mask are checked CSR tensors of these shapes: valid patterns with
    // sorted rows.
    let on_device = m_idx
        .as_ref()
        .and_then(|(c, p)| masked_product_pattern_on_device((&a_idx.0, &a_idx.1), (&b_idx.0, &b_idx.1), (c, p)));
    let (c_crow, c_col) = match on_device {
        // The symbolic pass on the operands' device (a Cube device: one count read back).
        Some((crow, col)) => {
            let nnz = col.dims()[0];
            let dtype = index_dtype_for(ac.index_dtype(), m.max(n).max(nnz) as u64);
            let col = if nnz == 0 { try_int_tensor(Vec::new(), [0], dtype, &device)? } else { col.cast(dtype) };
            (crow.cast(dtype), col)
        }
        None => {
            let (crow, col) =
                product_pattern((&a_idx.0, &a_idx.1), (&b_idx.0, &b_idx.1), m_idx.as_ref().map(|(c, p)| (c, p)), k, n)?;
            let nnz = col.len();
            let dtype = index_dtype_for(ac.index_dtype(), m.max(n).max(nnz) as u64);
            (try_int_tensor(crow, [m + 1], dtype, &device)?, try_int_tensor(col, [nnz], dtype, &device)?)
        }
    };
    // `c` is the symbolic pass's pattern of the product, a pattern of its own (its cell new).
    let c_op = CsrOperand::new(
        c_crow.clone().into_dispatch(),
        c_col.clone().into_dispatch(),
        n,
        Arc::new(TransposeCell::new()),
    );
    let values = Tensor::<1>::from_dispatch(<Dispatch as SparseSpgemm>::sparse_spgemm(
        a_op,
        reshape(ac.values_flat(), [ac.nnz()]).into_dispatch(),
        b_op,
        b_values.into_dispatch(),
        c_op,
    ));
    // SAFETY: the symbolic pass's pattern: pointers from 0 to nnz, non-decreasing; each row's
    // columns strictly increasing and below n; the dtype was sized for them.
    let c = unsafe { SparseTensor::csr_trusted(c_crow, c_col, values, [m, n])? };
    if options.drop_zeros {
        c.eliminate_zeros()
    } else {
        Ok(c)
    }
}
