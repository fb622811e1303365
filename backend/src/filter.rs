//! Value-level filters on stored entries (GraphBLAS's `select`, scipy's `eliminate_zeros`):
//! [`SparseTensor::filter`] keeps the stored entries whose value satisfies a predicate,
//! [`SparseTensor::eliminate_zeros`] drops exact zeros, and the value maps that keep the pattern,
//! [`SparseTensor::clamp_stored`] and [`SparseTensor::add_scalar_to_stored`].
//!
//! Which entries are kept is decided on the host from the values (untracked); the kept values
//! move with a differentiable burn gather, so gradients reach the kept entries (and the dropped
//! ones get zero). The pattern is rebuilt by index algebra, never through a dense round trip.

use crate::error::{invalid, Result, SparseError};
use crate::host::{with_floats, with_ints};
use crate::layout::Layout;
use crate::movement::{gather_index, gather_rows};
use crate::tensor::{Indices, SparseTensor, Trust};
use crate::util::{int_tensor, read_i64};
use sparsegrad_kernels::pattern::TransposeCell;
use std::sync::Arc;

impl<const D: usize> SparseTensor<D> {
    /// The stored entries whose value satisfies `keep` (GraphBLAS's `select`), in their order;
    /// the layout, shape and dtypes stay. COO, CSR and CSC (unbatched), scalar values.
    /// Differentiable w.r.t. the kept values.
    pub fn filter(&self, keep: impl Fn(f64) -> bool) -> Result<Self> {
        const OP: &str = "filter";
        self.check_invariants()?;
        if self.dense_dim > 0 {
            return Err(invalid(OP, "hybrid tensors are not supported; the values must be scalars"));
        }
        if self.layout.is_blocked() || (self.layout != Layout::Coo && self.batch_dim > 0) {
            return Err(SparseError::UnsupportedLayout { operation: OP, layout: self.layout.name() });
        }
        let nse = self.nnz();
        let values = self.values_flat();
        let kept: Vec<i64> = with_floats(&values, |v| v.positions(keep));
        if kept.len() == nse {
            return Ok(self.clone());
        }
        let device = self.device();
        let new_values = gather_rows(values, kept.clone());
        let indices = match &self.indices {
            Indices::Coo(idx) => {
                let rows = idx.dims()[0];
                Indices::Coo(if kept.is_empty() {
                    int_tensor(Vec::new(), [rows, 0], self.index_dtype(), &device)
                } else {
                    idx.clone().select(1, gather_index(kept, &device))
                })
            }
            Indices::Compressed { compressed, plain, .. } => {
                let ptr = read_i64(compressed);
                let segments = ptr.len() - 1;
                let mut new_ptr = Vec::with_capacity(ptr.len());
                new_ptr.push(0i64);
                let mut t = 0usize;
                for s in 0..segments {
                    while t < kept.len() && kept[t] < ptr[s + 1] {
                        t += 1;
                    }
                    new_ptr.push(t as i64);
                }
                let new_plain: Vec<i64> = with_ints(plain, |s| s.gather_i64(&kept));
                let n = new_plain.len();
                Indices::Compressed {
                    compressed: int_tensor(new_ptr, [1, segments + 1], self.index_dtype(), &device),
                    plain: int_tensor(new_plain, [1, n], self.index_dtype(), &device),
                    transposed: Arc::new(TransposeCell::new()),
                }
            }
        };
        // A subsequence of valid indices (sorted and unique stay so) in the same dtype.
        Ok(Self { indices, values: new_values, trust: Trust::Checked, ..self.clone() })
    }

    /// The stored entries that are not exactly zero (scipy's `eliminate_zeros`); NaN is kept.
    pub fn eliminate_zeros(&self) -> Result<Self> {
        self.filter(|v| v != 0.0)
    }

    /// `clamp(v, min, max)` on the stored values, the pattern unchanged (unspecified elements
    /// stay implicit zeros even when `min > 0`); differentiable as burn's `clamp`.
    pub fn clamp_stored(&self, min: f64, max: f64) -> Self {
        self.with_values(self.values_flat().clamp(min, max))
    }

    /// `v + scalar` on the stored values, the pattern unchanged (a bias on the stored entries
    /// only, as the sparse DNN rule adds it); differentiable.
    pub fn add_scalar_to_stored(&self, scalar: f64) -> Self {
        self.with_values(self.values_flat() + scalar)
    }
}
