//! `t` and `transpose`: COO swaps index rows; CSR <-> CSC (BSR <-> BSC) reinterpret the same
//! index arrays under the dual layout, moving values only inside blocks; dense dims permute the
//! values.

use crate::error::{Result, SparseError};
use crate::movement::gather_index;
use crate::tensor::{Indices, SparseTensor};
use crate::util::{numel, reshape};
use burn::tensor::Tensor;

impl<const D: usize> SparseTensor<D> {
    /// torch's `t()`: transposes the two sparse dims (the last two indexed dims).
    pub fn t(&self) -> Self {
        let first = self.batch_dim + self.sparse_dim - 2;
        self.transpose(first, first + 1)
    }

    /// torch's `transpose(dim0, dim1)`; panics on dims it cannot swap (see [`Self::try_transpose`]).
    pub fn transpose(&self, dim0: usize, dim1: usize) -> Self {
        self.try_transpose(dim0, dim1).unwrap_or_else(|e| panic!("{e}"))
    }

    /// `transpose` as a `Result`: two sparse dims, two dense dims, or (compressed layouts) the
    /// row and column dims; a sparse dim cannot trade places with a dense or batch dim.
    pub fn try_transpose(&self, dim0: usize, dim1: usize) -> Result<Self> {
        let (d0, d1) = (dim0.min(dim1), dim0.max(dim1));
        if d1 >= D {
            return Err(SparseError::InvalidArgument {
                operation: "transpose",
                message: format!("dims ({dim0}, {dim1}) out of range for rank {D}"),
            });
        }
        if d0 == d1 {
            return Ok(self.clone());
        }
        let mut shape = self.shape;
        shape.swap(d0, d1);
        let first_dense = D - self.dense_dim;
        if d0 >= first_dense {
            return Ok(Self {
                shape,
                values: self.swap_dense_dims(d0 - first_dense, d1 - first_dense),
                ..self.clone()
            });
        }
        match &self.indices {
            Indices::Coo(indices) if d1 < self.sparse_dim => {
                let mut rows: Vec<i64> = (0..self.sparse_dim as i64).collect();
                rows.swap(d0, d1);
                let indices = indices.clone().select(0, gather_index(rows, &self.device()));
                Ok(Self { shape, indices: Indices::Coo(indices), coalesced: self.nnz() < 2, ..self.clone() })
            }
            Indices::Compressed { .. } if d0 == self.batch_dim && d1 == self.batch_dim + 1 => {
                let values = match self.blocksize {
                    Some([br, bc]) => {
                        let [n, item] = self.values.dims();
                        let dense = item / (br * bc);
                        reshape(reshape(self.values.clone(), [n, br, bc, dense]).swap_dims(1, 2), [n, item])
                    }
                    None => self.values.clone(),
                };
                Ok(Self {
                    layout: self.layout.transposed(),
                    shape,
                    blocksize: self.blocksize.map(|[br, bc]| [bc, br]),
                    values,
                    ..self.clone()
                })
            }
            _ => Err(SparseError::InvalidArgument {
                operation: "transpose",
                message: format!(
                    "cannot swap dims {d0} and {d1} of a {} tensor with {} batch, {} sparse and {} dense dims",
                    self.layout, self.batch_dim, self.sparse_dim, self.dense_dim
                ),
            }),
        }
    }

    /// Values with dense dims `a < b` (counted among the dense dims) swapped.
    fn swap_dense_dims(&self, a: usize, b: usize) -> Tensor<2> {
        let dense = self.dense_shape();
        let [n, item] = self.values.dims();
        let block = self.blocksize.map_or(1, |[br, bc]| br * bc);
        let shape6 =
            [n * block, numel(&dense[..a]), dense[a], numel(&dense[a + 1..b]), dense[b], numel(&dense[b + 1..])];
        reshape(reshape(self.values.clone(), shape6).swap_dims(2, 4), [n, item])
    }
}
