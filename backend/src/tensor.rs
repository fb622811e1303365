//! `SparseTensor`: one type for COO, CSR, CSC, BSR and BSC, its components as burn tensors, and
//! the accessors with torch's names.
//!
//! Storage: indices are Int tensors in the dtype the user gave; values are one Float tensor
//! `[batch * nse, item]` with the block and dense dims folded into the trailing axis, so a
//! tensor on an autodiff device carries gradients on its values with no extra machinery.
//! The torch-shaped views (`values::<V>()`, `crow_indices::<C>()`) are reshapes of that storage.
//!
//! Invariants: the indices satisfy their layout's rules (COO indices inside the shape;
//! compressed indices starting at 0, non-decreasing, ending at `nse`, with plain indices inside
//! the shape, sorted and unique per segment), every dimension and `nse` fit the index dtype, and
//! the shape's element count fits `i64`. The checked constructors establish them, every
//! operation preserves them, and the host kernels rely on them for memory safety. A tensor from
//! an `*_unchecked` constructor holds its contents as given (`Trust::Unchecked`): they are
//! checked once, on the first operation that reads them ([`SparseTensor::check_invariants`]),
//! so an invalid one gives an error, never an access outside a buffer.

use crate::error::{Result, SparseError};
use crate::layout::Layout;
use crate::util::{numel, reshape, reshape_int};
use burn::tensor::{DType, Device, Int, Tensor};
use sparsegrad_kernels::pattern::TransposeCell;
use std::sync::{Arc, OnceLock};

/// Index components of a sparse tensor.
#[derive(Debug, Clone)]
// Both variants hold reference-counted tensor handles: the size difference is a few words.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Indices {
    /// `[sparse_dim, nse]`.
    Coo(Tensor<2, Int>),
    /// `[batch, n_compressed + 1]` and `[batch, nse]`, with the cache of the pattern's
    /// transposed view (the products' `Aᵀ`, computed once and shared by every clone).
    Compressed { compressed: Tensor<2, Int>, plain: Tensor<2, Int>, transposed: Arc<TransposeCell> },
}

/// Whether a tensor's index contents are known to satisfy its layout's invariants.
#[derive(Debug, Clone)]
pub(crate) enum Trust {
    /// Built by a checked constructor, or by an operation on tensors that were checked.
    Checked,
    /// Built by an `*_unchecked` constructor: checked on the first operation that reads the
    /// indices, the outcome shared by every clone (clones share the indices too).
    Unchecked(Arc<OnceLock<Result<()>>>),
}

impl Trust {
    /// A fresh unchecked state.
    pub(crate) fn unchecked() -> Self {
        Trust::Unchecked(Arc::new(OnceLock::new()))
    }
}

/// A sparse tensor of rank `D` (batch + sparse + dense dims, as burn's `Tensor<D>`).
///
/// Made by the checked constructors (`coo`, `csr`, `csc`, `bsr`, `bsc`, `compressed`, and from
/// plain vectors `coo_from_vecs`, `csr_from_vecs`) or from a dense tensor (`ToSparse`); its
/// values are a burn tensor, so gradients reach them through every conversion and product.
///
/// # Examples
///
/// ```
/// use burn::tensor::Device;
/// use sparsegrad_backend::{Layout, SparseTensor};
///
/// let device = Device::flex();
/// // [[0, 0, 3], [4, 0, 5]] from its coordinates and values.
/// let s = SparseTensor::coo_from_vecs(vec![[0, 2], [1, 0], [1, 2]], vec![3.0f32, 4.0, 5.0], [2, 3], &device)?;
/// assert_eq!((s.layout(), s.nnz(), s.shape()), (Layout::Coo, 3, [2, 3]));
/// let csr = s.to_sparse_csr()?;
/// assert_eq!(csr.crow_indices::<1>()?.into_data().to_vec::<i64>().unwrap(), vec![0, 1, 3]);
/// assert_eq!(csr.to_dense().into_data().to_vec::<f32>().unwrap(), vec![0.0, 0.0, 3.0, 4.0, 0.0, 5.0]);
/// # Ok::<(), sparsegrad_backend::SparseError>(())
/// ```
#[derive(Debug, Clone)]
pub struct SparseTensor<const D: usize> {
    pub(crate) layout: Layout,
    pub(crate) shape: [usize; D],
    pub(crate) batch_dim: usize,
    pub(crate) sparse_dim: usize,
    pub(crate) dense_dim: usize,
    pub(crate) blocksize: Option<[usize; 2]>,
    pub(crate) indices: Indices,
    pub(crate) values: Tensor<2>,
    pub(crate) coalesced: bool,
    pub(crate) trust: Trust,
}

impl<const D: usize> SparseTensor<D> {
    /// The storage layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The full shape (batch, sparse and dense dims).
    pub fn shape(&self) -> [usize; D] {
        self.shape
    }

    /// Number of sparse dimensions (2 for the compressed layouts, as torch).
    pub fn sparse_dim(&self) -> usize {
        self.sparse_dim
    }

    /// Number of trailing dense dimensions (hybrid tensors).
    pub fn dense_dim(&self) -> usize {
        self.dense_dim
    }

    /// Number of leading batch dimensions (compressed layouts; 0 for COO).
    pub fn batch_dim(&self) -> usize {
        self.batch_dim
    }

    /// Stored entries per batch entry, duplicates and explicit zeros included (Julia's
    /// `numstored`, torch's `nnz`); blocks for BSR/BSC.
    pub fn nnz(&self) -> usize {
        match &self.indices {
            Indices::Coo(i) => i.dims()[1],
            Indices::Compressed { plain, .. } => plain.dims()[1],
        }
    }

    /// Whether indices are sorted and unique (always true for compressed layouts).
    pub fn is_coalesced(&self) -> bool {
        self.coalesced
    }

    /// torch's `check_sparse_tensor_invariants`: `Ok` when the indices satisfy the layout's
    /// invariants, else the first violation. Always `Ok` for a tensor built by a checked
    /// constructor or an operation; a tensor from an `*_unchecked` constructor is checked on
    /// the first call (by this method or by an operation that reads the indices) and the
    /// outcome is kept with the indices.
    pub fn check_invariants(&self) -> Result<()> {
        match &self.trust {
            Trust::Checked => {
                debug_assert_eq!(self.check_contents(), Ok(()), "an operation built an invalid {} tensor", self.layout);
                Ok(())
            }
            Trust::Unchecked(outcome) => outcome.get_or_init(|| self.check_contents()).clone(),
        }
    }

    /// The block size of BSR/BSC tensors.
    pub fn blocksize(&self) -> Option<[usize; 2]> {
        self.blocksize
    }

    /// The device of the components.
    pub fn device(&self) -> Device {
        self.values.device()
    }

    /// The dtype of the values.
    pub fn dtype(&self) -> DType {
        self.values.dtype()
    }

    /// The dtype of the indices.
    pub fn index_dtype(&self) -> DType {
        match &self.indices {
            Indices::Coo(i) => i.dtype(),
            Indices::Compressed { plain, .. } => plain.dtype(),
        }
    }

    /// Bytes held by indices and values: `(sparse_dim * index_bytes + value_bytes) * nse` for COO.
    pub fn memory_bytes(&self) -> usize {
        let index = match &self.indices {
            Indices::Coo(i) => i.shape().num_elements(),
            Indices::Compressed { compressed, plain, .. } => {
                compressed.shape().num_elements() + plain.shape().num_elements()
            }
        } * self.index_dtype().size();
        index + self.values.shape().num_elements() * self.dtype().size()
    }

    /// Product of the batch dims.
    pub(crate) fn batch_numel(&self) -> usize {
        numel(&self.shape[..self.batch_dim])
    }

    /// The dense dims of the shape.
    pub(crate) fn dense_shape(&self) -> &[usize] {
        &self.shape[D - self.dense_dim..]
    }

    /// torch's `values().shape`: `[nse, *dense]` for COO, `[*batch, nse, *block, *dense]` else.
    pub fn values_shape(&self) -> Vec<usize> {
        let mut s = self.shape[..self.batch_dim].to_vec();
        s.push(self.nnz());
        if let Some([br, bc]) = self.blocksize {
            s.extend([br, bc]);
        }
        s.extend_from_slice(self.dense_shape());
        s
    }

    /// The values folded to `[batch * nse, block * dense]`, uncoalesced entries included.
    pub fn values_flat(&self) -> Tensor<2> {
        self.values.clone()
    }

    /// torch's `_values()`: the stored values in torch's shape, uncoalesced entries included.
    /// `V` must be the rank of [`SparseTensor::values_shape`].
    pub fn values_raw<const V: usize>(&self) -> Result<Tensor<V>> {
        let shape = self.values_shape();
        if shape.len() != V {
            return Err(SparseError::InvalidArgument {
                operation: "values",
                message: format!("values have rank {}, asked for rank {V}", shape.len()),
            });
        }
        let shape: [usize; V] = shape.try_into().expect("rank checked");
        Ok(reshape(self.values.clone(), shape))
    }

    /// torch's `values()`: like `values_raw`, but an error on an uncoalesced COO tensor.
    pub fn values<const V: usize>(&self) -> Result<Tensor<V>> {
        if !self.coalesced {
            return Err(SparseError::Uncoalesced { operation: "values" });
        }
        self.values_raw()
    }

    fn coo_indices(&self, operation: &'static str) -> Result<&Tensor<2, Int>> {
        match &self.indices {
            Indices::Coo(i) => Ok(i),
            _ => Err(SparseError::UnsupportedLayout { operation, layout: self.layout.name() }),
        }
    }

    /// torch's `_indices()`: `[sparse_dim, nse]`, uncoalesced entries included.
    pub fn indices_raw(&self) -> Result<Tensor<2, Int>> {
        self.coo_indices("_indices").cloned()
    }

    /// torch's `indices()`: an error on an uncoalesced tensor.
    pub fn indices(&self) -> Result<Tensor<2, Int>> {
        let i = self.coo_indices("indices")?;
        if !self.coalesced {
            return Err(SparseError::Uncoalesced { operation: "indices" });
        }
        Ok(i.clone())
    }

    fn compressed_parts(&self, operation: &'static str, rows: bool) -> Result<(&Tensor<2, Int>, &Tensor<2, Int>)> {
        match &self.indices {
            Indices::Compressed { compressed, plain, .. } if self.layout.compresses_rows() == rows => {
                Ok((compressed, plain))
            }
            _ => Err(SparseError::UnsupportedLayout { operation, layout: self.layout.name() }),
        }
    }

    fn batched<const C: usize>(&self, operation: &'static str, t: &Tensor<2, Int>) -> Result<Tensor<C, Int>> {
        if C != self.batch_dim + 1 {
            return Err(SparseError::InvalidArgument {
                operation,
                message: format!("index tensor has rank {}, asked for rank {C}", self.batch_dim + 1),
            });
        }
        let mut shape = [0usize; C];
        shape[..self.batch_dim].copy_from_slice(&self.shape[..self.batch_dim]);
        shape[C - 1] = t.dims()[1];
        Ok(reshape_int(t.clone(), shape))
    }

    /// CSR/BSR compressed row indices `[*batch, rows + 1]` (`C` = batch dims + 1).
    pub fn crow_indices<const C: usize>(&self) -> Result<Tensor<C, Int>> {
        let (c, _) = self.compressed_parts("crow_indices", true)?;
        self.batched("crow_indices", c)
    }

    /// CSR/BSR column indices `[*batch, nse]`.
    pub fn col_indices<const C: usize>(&self) -> Result<Tensor<C, Int>> {
        let (_, p) = self.compressed_parts("col_indices", true)?;
        self.batched("col_indices", p)
    }

    /// CSC/BSC compressed column indices `[*batch, cols + 1]`.
    pub fn ccol_indices<const C: usize>(&self) -> Result<Tensor<C, Int>> {
        let (c, _) = self.compressed_parts("ccol_indices", false)?;
        self.batched("ccol_indices", c)
    }

    /// CSC/BSC row indices `[*batch, nse]`.
    pub fn row_indices<const C: usize>(&self) -> Result<Tensor<C, Int>> {
        let (_, p) = self.compressed_parts("row_indices", false)?;
        self.batched("row_indices", p)
    }

    /// Compressed and plain indices folded to `[batch, n + 1]` and `[batch, nse]`, as stored
    /// (not checked: see [`Self::check_invariants`]).
    pub fn compressed_indices_flat(&self) -> Option<(Tensor<2, Int>, Tensor<2, Int>)> {
        match &self.indices {
            Indices::Compressed { compressed, plain, .. } => Some((compressed.clone(), plain.clone())),
            Indices::Coo(_) => None,
        }
    }

    /// The cache of the compressed pattern's transposed view, shared by every clone of the
    /// pattern (the products read `Aᵀ` from it); `None` for COO.
    pub fn transpose_cell(&self) -> Option<Arc<TransposeCell>> {
        match &self.indices {
            Indices::Compressed { transposed, .. } => Some(transposed.clone()),
            Indices::Coo(_) => None,
        }
    }

    /// Replaces the values (same folded shape), keeping the pattern: the hook through which
    /// value-wise ops stay differentiable.
    pub fn with_values(&self, values: Tensor<2>) -> Self {
        assert_eq!(
            values.dims(),
            self.values.dims(),
            "with_values: new values {:?} do not match the stored {:?}",
            values.dims(),
            self.values.dims()
        );
        Self { values, ..self.clone() }
    }

    /// This tensor's fields under another rank, for results whose shape the caller replaces.
    pub(crate) fn retyped<const E: usize>(&self) -> SparseTensor<E> {
        SparseTensor {
            layout: self.layout,
            shape: [0; E],
            batch_dim: self.batch_dim,
            sparse_dim: self.sparse_dim,
            dense_dim: self.dense_dim,
            blocksize: self.blocksize,
            indices: self.indices.clone(),
            values: self.values.clone(),
            coalesced: self.coalesced,
            trust: self.trust.clone(),
        }
    }

    /// The tensor with values detached from the autodiff graph.
    pub fn detach(&self) -> Self {
        self.with_values(self.values.clone().detach())
    }

    /// The tensor with values that require gradients.
    pub fn require_grad(self) -> Self {
        let values = self.values.clone().require_grad();
        Self { values, ..self }
    }
}
