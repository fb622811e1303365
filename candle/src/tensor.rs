//! [`SparseTensor`]: a 2-D COO or CSR matrix for candle — host indices held by the tensor (and
//! shared with its ops), values a candle [`Tensor`] (a [`candle_core::Var`]'s tensor when
//! trained) — with torch's checked constructors and the accessors.
//!
//! The checks are the burn side's: `sparsegrad_kernels::algebra::validate` runs on the host
//! buffers and every violation is the same [`SparseError`] (component, position, value). The
//! `*_unchecked` constructors skip the checks that only meaning rests on (CSR columns sorted and
//! unique within a row; COO indices in bounds, checked instead on the first conversion that reads
//! them), never the ones memory safety rests on: a CSR pattern handed to the kernels is always
//! structurally valid ([`sparsegrad_kernels::pattern::CsrPattern::new`]).

use crate::indices::{read_indices, rule_dtype, with_index, CsrIndices, IndexVec};
use candle_core::{DType, Tensor};
use sparsegrad_kernels::algebra::validate::{check_compressed, check_coo_bounds, check_numel, CompressedNames};
use sparsegrad_kernels::pattern::{CscPattern, CsrPattern as Structure};
use sparsegrad_kernels::{Layout, Result, SparseError};
use std::sync::{Arc, OnceLock};

/// A CSR pattern `[rows, cols]`: what the product and softmax ops hold. Built only by
/// [`CsrPattern::new`], which checks the structure the kernels walk without bounds checks.
#[derive(Debug)]
pub(crate) struct CsrPattern {
    pub rows: usize,
    pub cols: usize,
    pub indices: CsrIndices,
    /// The CSC view, built on the first transposed product and kept: training multiplies by
    /// `Aᵀ` with the same pattern at every backward pass, and the counting sort costs as much
    /// as a product.
    csc: OnceLock<CscPattern>,
}

/// Runs `$body` with `$a` the kernels' view ([`sparsegrad_kernels::pattern::CsrPattern`]) of a
/// [`CsrPattern`], for either index type.
macro_rules! with_structure {
    ($p:expr, |$a:ident| $body:expr) => {{
        let p: &$crate::tensor::CsrPattern = $p;
        $crate::indices::with_csr!(&p.indices, |c, q| {
            // SAFETY: a `CsrPattern` is only built by `CsrPattern::new`, which checked that
            // `(c, q)` is a valid pattern over `p.cols` columns.
            let $a = unsafe { sparsegrad_kernels::pattern::CsrPattern::new_unchecked(c, q, p.cols) };
            $body
        })
    }};
}
pub(crate) use with_structure;

impl CsrPattern {
    /// The pattern `[rows, cols]` of `indices`, its structure checked (`crow [rows + 1]` from 0
    /// to nnz, non-decreasing; columns in `0..cols`): an error naming the first violation.
    pub fn new(rows: usize, cols: usize, indices: CsrIndices) -> Result<Self> {
        let crow_len = crate::indices::with_csr!(&indices, |c, q| {
            Structure::new(c, q, cols)?;
            c.len()
        });
        if crow_len != rows + 1 {
            return Err(SparseError::ShapeMismatch {
                component: "crow_indices",
                expected: vec![rows + 1],
                actual: vec![crow_len],
            });
        }
        Ok(Self { rows, cols, indices, csc: OnceLock::new() })
    }

    /// Stored entries.
    pub fn nnz(&self) -> usize {
        match &self.indices {
            CsrIndices::I32 { col, .. } => col.len(),
            CsrIndices::I64 { col, .. } => col.len(),
        }
    }

    /// The CSC view of the pattern (the CSR positions of the entries in column order).
    pub fn csc(&self) -> &CscPattern {
        self.csc.get_or_init(|| with_structure!(self, |a| a.transpose()))
    }
}

/// COO indices `[2, nnz]` with the way to CSR, planned once per pattern.
#[derive(Debug)]
pub(crate) struct CooPattern {
    pub rows: usize,
    pub cols: usize,
    pub indices: IndexVec,
    pub(crate) plan: OnceLock<crate::convert::CooPlan>,
    /// Whether every index lies in `[rows, cols]`: checked by the checked constructor, else on
    /// the first conversion that reads the indices.
    pub(crate) bounds: OnceLock<Result<()>>,
}

impl CooPattern {
    /// A pattern whose bounds are checked on first use.
    pub fn new(rows: usize, cols: usize, indices: IndexVec) -> Self {
        Self { rows, cols, indices, plan: OnceLock::new(), bounds: OnceLock::new() }
    }

    /// Every index in bounds, or the first that is not (checked once).
    pub fn check(&self) -> Result<()> {
        self.bounds
            .get_or_init(
                || with_index!(&self.indices, s => check_coo_bounds("indices", s, self.nnz(), &[self.rows, self.cols])),
            )
            .clone()
    }

    pub fn nnz(&self) -> usize {
        self.indices.len() / 2
    }
}

#[derive(Debug, Clone)]
pub(crate) enum Pattern {
    Coo { indices: Arc<CooPattern>, coalesced: bool },
    Csr(Arc<CsrPattern>),
}

/// A sparse matrix for candle: COO (possibly uncoalesced: duplicates sum) or CSR.
///
/// Cloning is cheap (the indices are shared). The values carry candle's autograd: build the
/// tensor from a `Var`'s tensor (or call [`SparseTensor::with_values`]) and the ops of this crate
/// put gradients on it with the pattern's shape `[nnz]`.
#[derive(Debug, Clone)]
pub struct SparseTensor {
    pub(crate) pattern: Pattern,
    pub(crate) values: Tensor,
}

fn values_check(values: &Tensor, nnz: usize) -> Result<()> {
    if !values.dtype().is_float() {
        return Err(SparseError::UnsupportedDtype { component: "values", dtype: values.dtype().as_str().to_string() });
    }
    if values.dims() != [nnz] {
        return Err(SparseError::ShapeMismatch {
            component: "values",
            expected: vec![nnz],
            actual: values.dims().to_vec(),
        });
    }
    Ok(())
}

fn shape_of(component: &'static str, t: &Tensor, expected: Vec<usize>) -> Result<()> {
    if t.dims() != expected.as_slice() {
        return Err(SparseError::ShapeMismatch { component, expected, actual: t.dims().to_vec() });
    }
    Ok(())
}

impl SparseTensor {
    /// torch's `sparse_coo_tensor(indices, values, size)` for a matrix: `indices [2, nnz]`
    /// (i64, i32 or u32), `values [nnz]` (a float dtype). Indices must lie in `shape`; repeats
    /// are allowed (they sum), and the result counts as uncoalesced unless `nnz < 2`, as torch.
    pub fn coo(indices: &Tensor, values: Tensor, shape: [usize; 2]) -> Result<Self> {
        Self::coo_with(indices, values, shape, true)
    }

    /// [`SparseTensor::coo`] without the bounds check (shapes and dtypes are still checked).
    pub fn coo_unchecked(indices: &Tensor, values: Tensor, shape: [usize; 2]) -> Result<Self> {
        Self::coo_with(indices, values, shape, false)
    }

    fn coo_with(indices: &Tensor, values: Tensor, shape: [usize; 2], check: bool) -> Result<Self> {
        // Of a malformed indices tensor, the values tell the entry count expected.
        let nnz = if indices.rank() == 2 { indices.dims()[1] } else { values.elem_count() };
        shape_of("indices", indices, vec![2, nnz])?;
        values_check(&values, nnz)?;
        check_numel(&shape)?;
        let read = read_indices("indices", indices, &shape)?;
        if check {
            // On the values as read (before any narrowing), so an error reports them as given.
            with_index!(&read.values, s => check_coo_bounds("indices", s, nnz, &shape))?;
        }
        let pattern = CooPattern::new(shape[0], shape[1], read.finish());
        if check {
            pattern.bounds.get_or_init(|| Ok(()));
        }
        Ok(Self { pattern: Pattern::Coo { indices: Arc::new(pattern), coalesced: nnz < 2 }, values })
    }

    /// torch's `sparse_csr_tensor(crow_indices, col_indices, values, size)`: `crow [rows + 1]`
    /// starting at 0, non-decreasing, ending at `nnz`; `col [nnz]` in bounds, strictly
    /// increasing within each row; both of one dtype (i64, i32 or u32); `values [nnz]`.
    pub fn csr(crow: &Tensor, col: &Tensor, values: Tensor, shape: [usize; 2]) -> Result<Self> {
        Self::csr_with(crow, col, values, shape, true)
    }

    /// [`SparseTensor::csr`] without the content checks (shapes and dtypes are still checked).
    pub fn csr_unchecked(crow: &Tensor, col: &Tensor, values: Tensor, shape: [usize; 2]) -> Result<Self> {
        Self::csr_with(crow, col, values, shape, false)
    }

    fn csr_with(crow: &Tensor, col: &Tensor, values: Tensor, shape: [usize; 2], check: bool) -> Result<Self> {
        const OP: &str = "sparse_csr_tensor";
        if crow.dtype() != col.dtype() {
            return Err(SparseError::InvalidArgument {
                operation: OP,
                message: format!(
                    "crow_indices ({}) and col_indices ({}) must have the same dtype",
                    crow.dtype().as_str(),
                    col.dtype().as_str()
                ),
            });
        }
        let [rows, cols] = shape;
        shape_of("crow_indices", crow, vec![rows + 1])?;
        let nnz = col.dims().first().copied().unwrap_or(0);
        shape_of("col_indices", col, vec![nnz])?;
        values_check(&values, nnz)?;
        check_numel(&shape)?;
        let c = read_indices("crow_indices", crow, &shape)?;
        let p = read_indices("col_indices", col, &shape)?;
        let (max, name) = {
            let t = rule_dtype(c.store_as());
            (t.max(), t.name())
        };
        if nnz as u128 > max as u128 {
            return Err(SparseError::DimensionTooLarge { component: "nse", dim: 0, size: nnz, index_dtype: name, max });
        }
        if check {
            let names = CompressedNames { compressed: "crow_indices", plain: "col_indices", plain_dim: 1 };
            with_index!(&c.values, cs => with_index!(&p.values, ps => check_compressed(names, cs, ps, 1, rows, cols, nnz)))?;
        }
        let pattern = CsrPattern::new(rows, cols, CsrIndices::new(c.finish(), p.finish()))?;
        Ok(Self { pattern: Pattern::Csr(Arc::new(pattern)), values })
    }

    /// `[rows, cols]`.
    pub fn shape(&self) -> [usize; 2] {
        match &self.pattern {
            Pattern::Coo { indices, .. } => [indices.rows, indices.cols],
            Pattern::Csr(p) => [p.rows, p.cols],
        }
    }

    /// `Layout::Coo` or `Layout::Csr`.
    pub fn layout(&self) -> Layout {
        match self.pattern {
            Pattern::Coo { .. } => Layout::Coo,
            Pattern::Csr(_) => Layout::Csr,
        }
    }

    /// Stored entries (duplicates and explicit zeros included).
    pub fn nnz(&self) -> usize {
        match &self.pattern {
            Pattern::Coo { indices, .. } => indices.nnz(),
            Pattern::Csr(p) => p.nnz(),
        }
    }

    /// Whether the entries are sorted row-major with no repeats (always for CSR).
    pub fn is_coalesced(&self) -> bool {
        match self.pattern {
            Pattern::Coo { coalesced, .. } => coalesced,
            Pattern::Csr(_) => true,
        }
    }

    /// The values `[nnz]`, in storage order.
    pub fn values(&self) -> &Tensor {
        &self.values
    }

    /// The value dtype.
    pub fn dtype(&self) -> DType {
        self.values.dtype()
    }

    /// The dtype the indices are stored in (`I64` or `I32`).
    pub fn index_dtype(&self) -> DType {
        match &self.pattern {
            Pattern::Coo { indices, .. } => indices.indices.dtype(),
            Pattern::Csr(p) => p.indices.dtype(),
        }
    }

    /// The same pattern with other values `[nnz]` (dropout on the stored values, a `Var`).
    pub fn with_values(&self, values: Tensor) -> Result<Self> {
        values_check(&values, self.nnz())?;
        Ok(Self { pattern: self.pattern.clone(), values })
    }

    /// The COO indices `[2, nnz]` on the values' device (torch's `_indices()`: also for an
    /// uncoalesced tensor); an error for CSR.
    pub fn indices(&self) -> Result<Tensor> {
        match &self.pattern {
            Pattern::Coo { indices, .. } => to_tensor(&indices.indices, &[2, indices.nnz()], &self.values),
            Pattern::Csr(_) => Err(SparseError::UnsupportedLayout { operation: "indices", layout: Layout::Csr.name() }),
        }
    }

    /// CSR's `crow_indices [rows + 1]`; an error for COO.
    pub fn crow_indices(&self) -> Result<Tensor> {
        let p = self.csr_pattern("crow_indices")?;
        to_tensor(&p.indices.split().0, &[p.rows + 1], &self.values)
    }

    /// CSR's `col_indices [nnz]`; an error for COO.
    pub fn col_indices(&self) -> Result<Tensor> {
        let p = self.csr_pattern("col_indices")?;
        to_tensor(&p.indices.split().1, &[p.nnz()], &self.values)
    }

    /// Bytes held by the indices and values (`(2 * index_bytes + value_bytes) * nnz` for COO,
    /// plus `(rows + 1) * index_bytes` instead of the row indices for CSR).
    pub fn memory_bytes(&self) -> usize {
        let values = self.nnz() * self.values.dtype().size_in_bytes();
        values
            + match &self.pattern {
                Pattern::Coo { indices, .. } => indices.indices.bytes(),
                Pattern::Csr(p) => p.indices.bytes(),
            }
    }

    pub(crate) fn csr_pattern(&self, operation: &'static str) -> Result<&Arc<CsrPattern>> {
        match &self.pattern {
            Pattern::Csr(p) => Ok(p),
            Pattern::Coo { .. } => Err(SparseError::UnsupportedLayout { operation, layout: Layout::Coo.name() }),
        }
    }
}

fn to_tensor(v: &IndexVec, shape: &[usize], like: &Tensor) -> Result<Tensor> {
    v.to_tensor(shape, like.device())
        .map_err(|e| SparseError::InvalidArgument { operation: "indices", message: e.to_string() })
}
