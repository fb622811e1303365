//! Canonical order of a COO tensor: `coalesce` (sorted, duplicates summed) and TensorFlow's
//! `reorder` (sorted, duplicates kept).

use crate::algebra::sort;
use crate::error::Result;
use crate::index_kernels::device_coalesce_plan;
use crate::movement::{gather_index, gather_rows, scatter_add_rows, scatter_add_rows_at};
use crate::tensor::{Indices, SparseTensor};
use crate::util::{int_tensor, numel};

impl<const D: usize> SparseTensor<D> {
    /// torch's `coalesce()`: indices sorted lexicographically and unique, duplicates summed.
    /// Panics on a tensor built unchecked with invalid indices (see [`Self::try_coalesce`]).
    pub fn coalesce(&self) -> Self {
        self.try_coalesce().unwrap_or_else(|e| panic!("coalesce: {e}"))
    }

    /// [`Self::coalesce`] returning the violation of a tensor built unchecked.
    pub fn try_coalesce(&self) -> Result<Self> {
        self.check_invariants()?;
        if self.coalesced {
            return Ok(self.clone());
        }
        if let Some(t) = self.device_coalesce() {
            return Ok(t);
        }
        let e = self.entries()?;
        let plan = sort::coalesce_plan(e.keys, &e.sizes);
        if plan.identity {
            return Ok(Self { coalesced: true, ..self.clone() });
        }
        let n = plan.unique;
        let values = scatter_add_rows(e.values, plan.segment, n);
        let indices = int_tensor(plan.coords, [e.sizes.len(), n], self.index_dtype(), &self.device());
        Ok(Self { indices: Indices::Coo(indices), values, coalesced: true, ..self.clone() })
    }

    /// `coalesce` of a checked COO tensor planned on its device, where the backend plans there
    /// (`IndexKernels`: a Cube device, which then reads back one integer rather than every
    /// index); `None` elsewhere.
    pub(super) fn device_coalesce(&self) -> Option<Self> {
        let Indices::Coo(indices) = &self.indices else { return None };
        if self.nnz() < 2 || self.sparse_dim == 0 {
            return None;
        }
        let Some((coords, targets)) = device_coalesce_plan(indices, &self.shape[..self.sparse_dim])? else {
            // Sorted and unique already: the tensor itself, as on the host.
            return Some(Self { coalesced: true, ..self.clone() });
        };
        let unique = coords.dims()[1];
        let values = scatter_add_rows_at(self.values.clone(), targets, unique);
        Some(Self { indices: Indices::Coo(coords), values, coalesced: true, ..self.clone() })
    }

    /// TensorFlow's `sparse_reorder`: entries sorted lexicographically (stable), duplicates kept.
    pub fn reorder(&self) -> Self {
        let Indices::Coo(indices) = &self.indices else { return self.clone() };
        let e = self.entries().unwrap_or_else(|e| panic!("reorder: {e}"));
        if sort::is_sorted(&e.keys) {
            return Self { coalesced: sort::is_strictly_increasing(&e.keys), ..self.clone() };
        }
        let perm = sort::stable_sort_perm(&e.keys, numel(&e.sizes) as u64);
        let sorted: Vec<u64> = perm.iter().map(|&p| e.keys[p as usize]).collect();
        let device = self.device();
        let indices = indices.clone().select(1, gather_index(perm.clone(), &device));
        let values = gather_rows(self.values.clone(), perm);
        Self {
            indices: Indices::Coo(indices),
            values,
            coalesced: sort::is_strictly_increasing(&sorted),
            ..self.clone()
        }
    }
}
