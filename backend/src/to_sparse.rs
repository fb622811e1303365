//! `ToSparse`: torch's `Tensor.to_sparse*` family on burn tensors.

use crate::convert::{dense_to_sparse, SparseSpec};
use crate::error::Result;
use crate::layout::Layout;
use crate::tensor::SparseTensor;
use burn::tensor::Tensor;

/// Dense -> sparse conversions on burn's `Tensor`. Zeros are not stored; for hybrid tensors a
/// dense sub-tensor is stored when any of its elements is non-zero. Indices are int64, as torch;
/// [`ToSparse::to_sparse_with`] chooses another index dtype.
pub trait ToSparse<const D: usize> {
    /// torch's `to_sparse()`: COO with every dim sparse.
    fn to_sparse(self) -> Result<SparseTensor<D>>;
    /// torch's `to_sparse(sparse_dim)`: COO whose trailing `D - sparse_dim` dims stay dense.
    fn to_sparse_coo(self, sparse_dim: usize) -> Result<SparseTensor<D>>;
    /// torch's `to_sparse_csr()`: leading dims beyond two become batch dims.
    fn to_sparse_csr(self) -> Result<SparseTensor<D>>;
    /// torch's `to_sparse_csc()`.
    fn to_sparse_csc(self) -> Result<SparseTensor<D>>;
    /// torch's `to_sparse_bsr(blocksize)`.
    fn to_sparse_bsr(self, blocksize: [usize; 2]) -> Result<SparseTensor<D>>;
    /// torch's `to_sparse_bsc(blocksize)`.
    fn to_sparse_bsc(self, blocksize: [usize; 2]) -> Result<SparseTensor<D>>;
    /// Any layout, dense dims, block size and index dtype (torch's `dense_dim=` option).
    fn to_sparse_with(self, spec: SparseSpec) -> Result<SparseTensor<D>>;
}

impl<const D: usize> ToSparse<D> for Tensor<D> {
    fn to_sparse(self) -> Result<SparseTensor<D>> {
        self.to_sparse_coo(D)
    }

    fn to_sparse_coo(self, sparse_dim: usize) -> Result<SparseTensor<D>> {
        let spec = SparseSpec { dense_dim: D.saturating_sub(sparse_dim), ..SparseSpec::new(Layout::Coo) };
        if sparse_dim > D {
            return Err(crate::error::SparseError::InvalidArgument {
                operation: "to_sparse",
                message: format!("sparse_dim {sparse_dim} exceeds the rank {D}"),
            });
        }
        dense_to_sparse(self, spec)
    }

    fn to_sparse_csr(self) -> Result<SparseTensor<D>> {
        dense_to_sparse(self, SparseSpec::new(Layout::Csr))
    }

    fn to_sparse_csc(self) -> Result<SparseTensor<D>> {
        dense_to_sparse(self, SparseSpec::new(Layout::Csc))
    }

    fn to_sparse_bsr(self, blocksize: [usize; 2]) -> Result<SparseTensor<D>> {
        dense_to_sparse(self, SparseSpec { blocksize: Some(blocksize), ..SparseSpec::new(Layout::Bsr) })
    }

    fn to_sparse_bsc(self, blocksize: [usize; 2]) -> Result<SparseTensor<D>> {
        dense_to_sparse(self, SparseSpec { blocksize: Some(blocksize), ..SparseSpec::new(Layout::Bsc) })
    }

    fn to_sparse_with(self, spec: SparseSpec) -> Result<SparseTensor<D>> {
        dense_to_sparse(self, spec)
    }
}
