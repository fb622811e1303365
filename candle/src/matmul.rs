//! The matmul family for candle (torch names): [`mm`] (sparse @ dense), [`addmm`] and
//! [`sampled_addmm`], on two custom ops that pair each forward with its backward rule, as the
//! burn side's `sparsegrad_autodiff::{spmm, sddmm}` do — and differentiate each other:
//!
//! - `Spmm`: `A · X` (or `Aᵀ · X`), `A` the held CSR pattern, its values the first operand.
//!   d/dvalues is the SDDMM of the output gradient and `X` over the pattern (masked semantics:
//!   no gradient for unspecified elements, never an `m x k` matrix); d/dX is `Aᵀ · G` (`A · G`).
//! - `Sddmm`: `out[j] = a[row j] · b[col j]` on the pattern. d/da is `P_g · b`, d/db is
//!   `P_gᵀ · a`, `P_g` the pattern carrying the output gradient.
//!
//! `cpu_fwd` runs the host kernels (`sparsegrad_kernels::{spmm, sddmm}`) on candle's storage
//! without copying it; `Aᵀ · G` reads the values through the pattern's CSC view, built once and
//! kept with the pattern. `addmm` and `sampled_addmm` scale and add with candle's ops around
//! them, so candle differentiates those parts. A COO operand is converted to CSR first
//! (differentiably, see `convert`).
//!
//! Shape mismatches are candle errors wrapping the [`SparseError`] the burn side reports.

use crate::host::{data, float_dtype, shape_error, Float};
use crate::tensor::{with_structure, CsrPattern, Pattern, SparseTensor};
use candle_core::{CpuStorage, CustomOp2, DType, Error, Layout, Result, Shape, Tensor};
use sparsegrad_kernels::sddmm::sddmm;
use sparsegrad_kernels::spmm::{spmm, spmm_t_with};
use sparsegrad_kernels::SparseError;
use std::sync::Arc;

/// `A · X` (`transpose = false`: `X [cols, n]`, result `[rows, n]`) or `Aᵀ · X` (`X [rows, n]`,
/// result `[cols, n]`); operands `(values [nnz], X)`.
struct Spmm {
    pattern: Arc<CsrPattern>,
    transpose: bool,
}

impl Spmm {
    fn run<T: Float>(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout) -> Result<(CpuStorage, Shape)> {
        const OP: &str = "sparse_mm";
        let p = &self.pattern;
        let (inner, outer) = if self.transpose { (p.rows, p.cols) } else { (p.cols, p.rows) };
        let (values, x) = (data::<T>(s1, l1, OP)?, data::<T>(s2, l2, OP)?);
        if values.len() != p.nnz() {
            return Err(shape_error(OP, "values", &[p.nnz()], l1.dims()));
        }
        let n = match l2.dims() {
            &[rows, n] if rows == inner => n,
            other => {
                return Err(shape_error(OP, "the dense operand", &[inner, other.last().copied().unwrap_or(0)], other))
            }
        };
        let out = if self.transpose {
            spmm_t_with(p.csc(), values, x, n)
        } else {
            with_structure!(p, |a| spmm(a, values, x, n))
        };
        Ok((T::to_cpu_storage_owned(out), Shape::from((outer, n))))
    }
}

impl CustomOp2 for Spmm {
    fn name(&self) -> &'static str {
        "sparse_mm"
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout) -> Result<(CpuStorage, Shape)> {
        match float_dtype(self.name(), &[s1, s2])? {
            DType::F32 => self.run::<f32>(s1, l1, s2, l2),
            _ => self.run::<f64>(s1, l1, s2, l2),
        }
    }

    fn bwd(&self, values: &Tensor, x: &Tensor, _res: &Tensor, g: &Tensor) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let g = g.contiguous()?;
        // Operands outside the graph (a fixed adjacency's values) get no gradient computed.
        let dv = if values.track_op() {
            let on_pattern = Sddmm { pattern: self.pattern.clone() };
            // out = A X: dv_j = G[row j] · X[col j];  out = Aᵀ X: dv_j = X[row j] · G[col j].
            Some(if self.transpose {
                x.apply_op2_no_bwd(&g, &on_pattern)?
            } else {
                g.apply_op2_no_bwd(x, &on_pattern)?
            })
        } else {
            None
        };
        let dx = if x.track_op() {
            // out = A X: dX = Aᵀ G;  out = Aᵀ X: dX = A G.
            Some(values.apply_op2_no_bwd(&g, &Spmm { pattern: self.pattern.clone(), transpose: !self.transpose })?)
        } else {
            None
        };
        Ok((dv, dx))
    }
}

/// `out[j] = a[row j] · b[col j]` for each stored entry: operands `(a [rows, d], b [cols, d])`,
/// result `[nnz]`.
struct Sddmm {
    pattern: Arc<CsrPattern>,
}

impl Sddmm {
    fn run<T: Float>(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout) -> Result<(CpuStorage, Shape)> {
        const OP: &str = "sparse_sddmm";
        let p = &self.pattern;
        let d = l1.dims().last().copied().unwrap_or(0);
        if l1.dims() != [p.rows, d] {
            return Err(shape_error(OP, "the left operand", &[p.rows, d], l1.dims()));
        }
        if l2.dims() != [p.cols, d] {
            return Err(shape_error(OP, "the right operand", &[p.cols, d], l2.dims()));
        }
        let (a, b) = (data::<T>(s1, l1, OP)?, data::<T>(s2, l2, OP)?);
        let out = with_structure!(p, |s| sddmm(s, a, b, d));
        Ok((T::to_cpu_storage_owned(out), Shape::from(p.nnz())))
    }
}

impl CustomOp2 for Sddmm {
    fn name(&self) -> &'static str {
        "sparse_sddmm"
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout) -> Result<(CpuStorage, Shape)> {
        match float_dtype(self.name(), &[s1, s2])? {
            DType::F32 => self.run::<f32>(s1, l1, s2, l2),
            _ => self.run::<f64>(s1, l1, s2, l2),
        }
    }

    fn bwd(&self, a: &Tensor, b: &Tensor, _res: &Tensor, g: &Tensor) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let g = g.contiguous()?;
        let product = |transpose| Spmm { pattern: self.pattern.clone(), transpose };
        let da = if a.track_op() { Some(g.apply_op2_no_bwd(b, &product(false))?) } else { None };
        let db = if b.track_op() { Some(g.apply_op2_no_bwd(a, &product(true))?) } else { None };
        Ok((da, db))
    }
}

fn mismatch(operation: &'static str, a: &[usize], b: &[usize]) -> Error {
    Error::wrap(SparseError::InvalidArgument {
        operation,
        message: format!("shapes {a:?} and {b:?} cannot be multiplied"),
    })
}

/// The CSR pattern and values of a sparse operand (COO converted, differentiably).
fn csr_of(a: &SparseTensor) -> Result<(Arc<CsrPattern>, Tensor)> {
    let csr = a.to_sparse_csr()?;
    let Pattern::Csr(p) = csr.pattern else { unreachable!("to_sparse_csr returns CSR") };
    Ok((p, csr.values.contiguous()?))
}

/// torch's `sparse.mm(mat1, mat2)` for sparse `mat1 [m, k]` (COO or CSR) and dense
/// `mat2 [k, n]`: a dense `[m, n]` tensor. Differentiable w.r.t. the sparse values (gradient
/// `[nnz]` on the pattern) and `mat2`.
pub fn mm(mat1: &SparseTensor, mat2: &Tensor) -> Result<Tensor> {
    let [m, k] = mat1.shape();
    if mat2.rank() != 2 || mat2.dims()[0] != k {
        return Err(mismatch("mm", &[m, k], mat2.dims()));
    }
    let (pattern, values) = csr_of(mat1)?;
    values.apply_op2(&mat2.contiguous()?, Spmm { pattern, transpose: false })
}

/// torch's `sparse.addmm(input, mat1, mat2, beta, alpha)`: `beta * input + alpha * (mat1 @
/// mat2)`, `input` broadcast to `[m, n]`. As torch, `beta = 0` ignores `input` (its NaNs are not
/// propagated).
pub fn addmm(input: &Tensor, mat1: &SparseTensor, mat2: &Tensor, beta: f64, alpha: f64) -> Result<Tensor> {
    let product = mm(mat1, mat2)?;
    let input = input.broadcast_as(product.shape())?;
    let product = if alpha == 1.0 { product } else { product.affine(alpha, 0.0)? };
    if beta == 0.0 {
        return Ok(product);
    }
    input.affine(beta, 0.0)? + product
}

/// torch's `sparse.sampled_addmm(input, mat1, mat2, beta, alpha)`: `beta * input + alpha *
/// (mat1 @ mat2)` evaluated only on `input`'s pattern (SDDMM), a CSR result; `input [m, n]`
/// (COO is converted), `mat1 [m, d]`, `mat2 [d, n]`. The result's values carry the graph: they
/// are differentiable w.r.t. `input`'s values, `mat1` and `mat2`, and no `m x n` product is
/// formed. As torch, `beta = 0` ignores `input`'s values.
pub fn sampled_addmm(
    input: &SparseTensor,
    mat1: &Tensor,
    mat2: &Tensor,
    beta: f64,
    alpha: f64,
) -> Result<SparseTensor> {
    let [m, n] = input.shape();
    let (d1, d2) = (mat1.dims(), mat2.dims());
    let ok = d1.len() == 2 && d2.len() == 2 && d1[0] == m && d2[1] == n && d1[1] == d2[0];
    if !ok {
        return Err(mismatch("sampled_addmm", d1, d2));
    }
    let s = input.to_sparse_csr()?;
    let Pattern::Csr(pattern) = &s.pattern else { unreachable!("to_sparse_csr returns CSR") };
    // The kernel dots rows with rows: mat2 goes in as its transpose [n, d] (a dense copy of a
    // dense operand; candle differentiates the transpose).
    let sampled = mat1.contiguous()?.apply_op2(&mat2.t()?.contiguous()?, Sddmm { pattern: pattern.clone() })?;
    let sampled = if alpha == 1.0 { sampled } else { sampled.affine(alpha, 0.0)? };
    let values = if beta == 0.0 { sampled } else { (s.values.affine(beta, 0.0)? + sampled)? };
    Ok(SparseTensor { pattern: s.pattern.clone(), values })
}
