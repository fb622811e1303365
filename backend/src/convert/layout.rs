//! The public layout <-> layout conversions: `to_sparse_coo`, `to_sparse_csr`, `to_sparse_csc`,
//! `to_sparse_bsr`, `to_sparse_bsc` and `to_layout`, which dispatch to the builders of
//! `compressed`.

use crate::algebra::keys;
use crate::error::{Result, SparseError};
use crate::layout::Layout;
use crate::tensor::{Indices, SparseTensor};
use crate::util::int_tensor;

impl<const D: usize> SparseTensor<D> {
    /// torch's `to_sparse_coo()`: compressed layouts become COO over batch + 2 sparse dims
    /// (blocks expanded to elements); a COO tensor is returned as is. Panics on a tensor built
    /// unchecked with invalid indices (see [`Self::try_to_sparse_coo`]).
    pub fn to_sparse_coo(&self) -> Self {
        self.try_to_sparse_coo().unwrap_or_else(|e| panic!("to_sparse_coo: {e}"))
    }

    /// [`Self::to_sparse_coo`] returning the violation of a tensor built unchecked.
    pub fn try_to_sparse_coo(&self) -> Result<Self> {
        self.check_invariants()?;
        if self.layout == Layout::Coo {
            return Ok(self.clone());
        }
        if let Some((indices, values)) = self.device_element_indices() {
            let [m, n] = indices.dims();
            return Ok(Self {
                layout: Layout::Coo,
                batch_dim: 0,
                sparse_dim: m,
                blocksize: None,
                indices: Indices::Coo(indices),
                values,
                coalesced: self.layout == Layout::Csr || n < 2,
                ..self.clone()
            });
        }
        let e = self.entries()?;
        let n = e.keys.len();
        let m = e.sizes.len();
        let indices = int_tensor(keys::delinearize(&e.keys, &e.sizes), [m, n], self.index_dtype(), &self.device());
        Ok(Self {
            layout: Layout::Coo,
            batch_dim: 0,
            sparse_dim: m,
            blocksize: None,
            indices: Indices::Coo(indices),
            values: e.values,
            coalesced: e.sorted_unique || n < 2,
            ..self.clone()
        })
    }

    /// torch's `to_sparse_csr()`.
    pub fn to_sparse_csr(&self) -> Result<Self> {
        self.to_layout(Layout::Csr, None)
    }

    /// torch's `to_sparse_csc()`.
    pub fn to_sparse_csc(&self) -> Result<Self> {
        self.to_layout(Layout::Csc, None)
    }

    /// torch's `to_sparse_bsr(blocksize)`.
    pub fn to_sparse_bsr(&self, blocksize: [usize; 2]) -> Result<Self> {
        self.to_layout(Layout::Bsr, Some(blocksize))
    }

    /// torch's `to_sparse_bsc(blocksize)`.
    pub fn to_sparse_bsc(&self, blocksize: [usize; 2]) -> Result<Self> {
        self.to_layout(Layout::Bsc, Some(blocksize))
    }

    /// Converts to any layout; BSR/BSC need a block size. A COO source needs at least 2 sparse
    /// dims for a compressed target: the ones before the last two become batch dims.
    pub fn to_layout(&self, layout: Layout, blocksize: Option<[usize; 2]>) -> Result<Self> {
        self.check_invariants()?;
        if layout == Layout::Coo {
            return self.try_to_sparse_coo();
        }
        let blocksize = match (layout.is_blocked(), blocksize) {
            (true, Some(b)) => b,
            (true, None) => {
                return Err(SparseError::InvalidArgument {
                    operation: "to_sparse",
                    message: format!("{} needs a blocksize", layout.name()),
                })
            }
            (false, _) => [1, 1],
        };
        if self.layout == layout && self.blocksize.unwrap_or([1, 1]) == blocksize {
            return Ok(self.clone());
        }
        if self.sparse_dim < 2 {
            return Err(SparseError::InvalidArgument {
                operation: "to_sparse",
                message: format!("{} needs 2 sparse dims, the tensor has {}", layout.name(), self.sparse_dim),
            });
        }
        if layout == Layout::Csr && self.layout == Layout::Coo && self.coalesced && self.sparse_dim == 2 {
            return self.coalesced_coo_to_csr();
        }
        if matches!(layout, Layout::Csr | Layout::Csc) && self.layout == Layout::Coo && self.sparse_dim == 2 {
            if let Some(t) = self.device_compressed(layout) {
                return t;
            }
        }
        let e = self.entries()?;
        self.entries_to_compressed(e, layout, blocksize)
    }
}
