//! Layout changes and `to_dense`: `coalesce`, `to_sparse_csr`, `to_sparse_coo`.
//!
//! The two kinds of work stay apart, as on the burn side. The index algebra runs once per
//! pattern on the host with the backend's kernels (`linear_keys`, `coalesce_plan`,
//! `compress_sorted`, `expand`) and is kept with the pattern ([`CooPlan`]), so a COO adjacency
//! used at every training step is sorted once. The values move with candle's own `index_add`
//! (duplicates summed into their coalesced entry, entries scattered into a dense matrix), so
//! candle differentiates every conversion: the gradient of `index_add` w.r.t. its source is an
//! `index_select` of the output gradient, values-shaped.

use crate::indices::{with_csr, with_index, CsrIndices, IndexVec};
use crate::tensor::{CooPattern, CsrPattern, Pattern, SparseTensor};
use candle_core::{DType, Result, Tensor};
use sparsegrad_kernels::algebra::compress::{compress_sorted, expand};
use sparsegrad_kernels::algebra::keys::linear_keys;
use sparsegrad_kernels::algebra::sort::coalesce_plan;
use sparsegrad_kernels::algebra::IndexElem;
use std::sync::Arc;

/// How a COO pattern becomes coalesced and CSR.
#[derive(Debug)]
pub(crate) struct CooPlan {
    /// The CSR pattern of the coalesced entries.
    csr: Arc<CsrPattern>,
    /// `None` when the entries are already sorted and unique.
    merge: Option<Merge>,
}

/// Where each entry of an uncoalesced pattern is summed.
#[derive(Debug)]
struct Merge {
    coalesced: Arc<CooPattern>,
    /// The coalesced entry of every entry.
    segment: Vec<i64>,
}

/// The index type to keep `len` positions in: the pattern's own unless they overflow int32.
fn fitting(dtype: DType, len: usize) -> DType {
    if dtype == DType::I32 && len > i32::MAX as usize {
        DType::I64
    } else {
        dtype
    }
}

/// The plan of a COO pattern, made once; an error when its indices are out of bounds (a pattern
/// built unchecked).
fn plan(p: &CooPattern) -> Result<&CooPlan> {
    p.check().map_err(candle_core::Error::wrap)?;
    if let Some(plan) = p.plan.get() {
        return Ok(plan);
    }
    let made = make_plan(p).map_err(candle_core::Error::wrap)?;
    // Another thread may have set it meanwhile: either plan is the same.
    let _ = p.plan.set(made);
    Ok(p.plan.get().expect("set above"))
}

fn make_plan(p: &CooPattern) -> sparsegrad_kernels::Result<CooPlan> {
    {
        let (nnz, sizes) = (p.nnz(), [p.rows, p.cols]);
        let keys = with_index!(&p.indices, s => linear_keys(s, nnz, &sizes));
        let plan = coalesce_plan(keys, &sizes);
        let dtype = fitting(p.indices.dtype(), plan.unique);
        let (rows, cols) = plan.coords.split_at(plan.unique);
        let crow = IndexVec::from_i64(compress_sorted(rows, p.rows)?, dtype);
        let csr =
            Arc::new(CsrPattern::new(p.rows, p.cols, CsrIndices::new(crow, IndexVec::from_i64(cols.to_vec(), dtype)))?);
        if plan.identity {
            return Ok(CooPlan { csr, merge: None });
        }
        let coalesced = CooPattern::new(p.rows, p.cols, IndexVec::from_i64(plan.coords, p.indices.dtype()));
        // The coalesced pattern's own plan is known: no merge, the same CSR pattern.
        let _ = coalesced.plan.set(CooPlan { csr: csr.clone(), merge: None });
        Ok(CooPlan { csr, merge: Some(Merge { coalesced: Arc::new(coalesced), segment: plan.segment }) })
    }
}

/// Sums the values of entries that share an index (candle's differentiable `index_add`).
fn merge_values(values: &Tensor, merge: &Merge) -> Result<Tensor> {
    let unique = merge.coalesced.nnz();
    let segment = Tensor::from_slice(&merge.segment, merge.segment.len(), values.device())?;
    Tensor::zeros(unique, values.dtype(), values.device())?.index_add(&segment, &values.contiguous()?, 0)
}

impl SparseTensor {
    /// torch's `coalesce()`: COO entries sorted row-major with repeated indices summed (a
    /// coalesced tensor or CSR is returned as is). Differentiable w.r.t. the values.
    pub fn coalesce(&self) -> Result<SparseTensor> {
        let Pattern::Coo { indices, coalesced: false } = &self.pattern else { return Ok(self.clone()) };
        match &plan(indices)?.merge {
            None => Ok(SparseTensor {
                pattern: Pattern::Coo { indices: indices.clone(), coalesced: true },
                values: self.values.clone(),
            }),
            Some(m) => Ok(SparseTensor {
                pattern: Pattern::Coo { indices: m.coalesced.clone(), coalesced: true },
                values: merge_values(&self.values, m)?,
            }),
        }
    }

    /// torch's `to_sparse_csr()` (COO is coalesced on the way). Differentiable w.r.t. the values.
    pub fn to_sparse_csr(&self) -> Result<SparseTensor> {
        let Pattern::Coo { indices, .. } = &self.pattern else { return Ok(self.clone()) };
        let plan = plan(indices)?;
        let values = match &plan.merge {
            None => self.values.clone(),
            Some(m) => merge_values(&self.values, m)?,
        };
        Ok(SparseTensor { pattern: Pattern::Csr(plan.csr.clone()), values })
    }

    /// torch's `to_sparse_coo()`: CSR's entries with their rows expanded (coalesced, the same
    /// values tensor).
    pub fn to_sparse_coo(&self) -> SparseTensor {
        let Pattern::Csr(p) = &self.pattern else { return self.clone() };
        let nnz = p.nnz();
        let (rows, cols) =
            with_csr!(&p.indices, |c, q| (expand(c, 1, p.rows, nnz), q.iter().map(|v| v.to_i64()).collect::<Vec<_>>()));
        let mut indices = rows;
        indices.extend(cols);
        let coo = CooPattern::new(p.rows, p.cols, IndexVec::from_i64(indices, p.indices.dtype()));
        let _ = coo.plan.set(CooPlan { csr: p.clone(), merge: None });
        SparseTensor { pattern: Pattern::Coo { indices: Arc::new(coo), coalesced: true }, values: self.values.clone() }
    }

    /// torch's `to_dense()`: a `[rows, cols]` tensor with every entry added at its index
    /// (repeats sum), zeros elsewhere. Differentiable w.r.t. the values.
    pub fn to_dense(&self) -> Result<Tensor> {
        let [rows, cols] = self.shape();
        let dense = Tensor::zeros(rows * cols, self.values.dtype(), self.values.device())?;
        let nnz = self.nnz();
        if nnz == 0 {
            return dense.reshape((rows, cols));
        }
        let positions: Vec<i64> = match &self.pattern {
            Pattern::Coo { indices, .. } => {
                indices.check().map_err(candle_core::Error::wrap)?;
                let ix = &indices.indices;
                (0..nnz).map(|j| ix.get(j) * cols as i64 + ix.get(nnz + j)).collect()
            }
            Pattern::Csr(p) => with_csr!(&p.indices, |c, q| {
                let rows_of = expand(c, 1, rows, nnz);
                rows_of.iter().zip(q).map(|(&r, k)| r * cols as i64 + k.to_i64()).collect()
            }),
        };
        let positions = Tensor::from_vec(positions, nnz, self.values.device())?;
        dense.index_add(&positions, &self.values.contiguous()?, 0)?.reshape((rows, cols))
    }
}
