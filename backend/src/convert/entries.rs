//! Stored elements in element coordinates ([`Entries`]: one linear key per stored element over
//! the indexed dims, and its dense item), the common currency of layout changes, coalescing and
//! densifying, and their on-device counterparts (keys, element and COO indices computed where the
//! indices live).

use crate::algebra::{compress, keys};
use crate::error::Result;
use crate::host::with_ints;
use crate::index_kernels::{device_expand, device_linear_keys};
use crate::layout::Layout;
use crate::match_ints;
use crate::tensor::{Indices, SparseTensor};
use crate::util::{int_tensor, numel, reshape};
use burn::tensor::{DType, Int, Tensor};

/// Stored elements in element coordinates: a key over the indexed dims and its dense item.
pub(crate) struct Entries {
    /// The indexed dims: COO's sparse dims, or batch + rows + cols.
    pub sizes: Vec<usize>,
    /// Linear key of each entry over `sizes`.
    pub keys: Vec<u64>,
    /// `[entries, dense_numel]`.
    pub values: Tensor<2>,
    /// Keys known to be strictly increasing.
    pub sorted_unique: bool,
}

impl<const D: usize> SparseTensor<D> {
    /// The stored elements with keys over the indexed dims (blocks expanded to elements); the
    /// invariants' violation when the tensor was built unchecked and is invalid.
    pub(crate) fn entries(&self) -> Result<Entries> {
        self.check_invariants()?;
        let dense = numel(self.dense_shape());
        match &self.indices {
            Indices::Coo(indices) => {
                let sizes = self.shape[..self.sparse_dim].to_vec();
                let nse = self.nnz();
                let keys = with_ints(indices, |s| match_ints!(s, i => keys::linear_keys(i, nse, &sizes)));
                Ok(Entries { sizes, keys, values: self.values.clone(), sorted_unique: self.coalesced })
            }
            Indices::Compressed { compressed, plain, .. } => {
                let b = self.batch_dim;
                let sizes = self.shape[..b + 2].to_vec();
                let (rows, cols) = (sizes[b] as u64, sizes[b + 1] as u64);
                let [br, bc] = self.blocksize.unwrap_or([1, 1]);
                let (n_comp, _) = self.compressed_extents();
                let (batch, nse) = (self.batch_numel(), self.nnz());
                let seg = with_ints(compressed, |s| match_ints!(s, c => compress::expand(c, batch, n_comp, nse)));
                let plain = crate::util::read_i64(plain);
                let mut keys = Vec::with_capacity(batch * nse * br * bc);
                for (k, (&s, &p)) in seg.iter().zip(&plain).enumerate() {
                    let (s, p) = (s as u64, p as u64);
                    let (brow, bcol) = if self.layout.compresses_rows() { (s, p) } else { (p, s) };
                    let base = (k / nse.max(1)) as u64 * rows * cols;
                    for i in 0..br as u64 {
                        for j in 0..bc as u64 {
                            keys.push(base + (brow * br as u64 + i) * cols + bcol * bc as u64 + j);
                        }
                    }
                }
                let values = reshape(self.values.clone(), [batch * nse * br * bc, dense]);
                let sorted_unique = self.layout == Layout::Csr;
                Ok(Entries { sizes, keys, values, sorted_unique })
            }
        }
    }

    /// The element keys and values `[entries, dense_numel]` computed on the tensor's device,
    /// where the backend has the kernels (`IndexKernels`: a Cube device): COO, and compressed
    /// layouts of any batch and block size with 32- or 64-bit indices
    /// ([`Self::device_element_indices`]); `None` elsewhere (the host's `entries`).
    pub(crate) fn device_keys(&self) -> Result<Option<(Tensor<1, Int>, Tensor<2>)>> {
        self.check_invariants()?;
        let (coords, values) = match &self.indices {
            Indices::Coo(indices) => (indices.clone(), self.values.clone()),
            Indices::Compressed { .. } => match self.device_element_indices() {
                Some(found) => found,
                None => return Ok(None),
            },
        };
        let sizes = &self.shape[..coords.dims()[0]];
        Ok(device_linear_keys(&coords, sizes).map(|keys| (keys, values)))
    }

    /// The COO indices `[batch_dim + 2, elements]` of a compressed tensor of any batch and block
    /// size (blocks expanded to their elements, in the order `entries` lists them), with its
    /// values `[elements, dense_numel]`, computed on its device: the compressed indices of all
    /// batches joined into one (each batch's shifted by the entries before it) and expanded
    /// there (`IndexKernels::expand`), the rest with burn's int ops, nothing read back. `None`
    /// where the backend expands on the host, for 8- and 16-bit indices, or when nothing is
    /// stored.
    pub(crate) fn device_element_indices(&self) -> Option<(Tensor<2, Int>, Tensor<2>)> {
        if let Some(coords) = self.device_coo_indices() {
            return Some((coords, self.values.clone()));
        }
        let Indices::Compressed { compressed, plain, .. } = &self.indices else { return None };
        let (batch, nse, dtype) = (self.batch_numel(), self.nnz(), self.index_dtype());
        if batch == 0 || nse == 0 || !matches!(dtype, DType::I32 | DType::I64) {
            return None;
        }
        let (b, [br, bc], device) = (self.batch_dim, self.blocksize.unwrap_or([1, 1]), self.device());
        let (n_comp, _) = self.compressed_extents();
        // In i64: every coordinate, and the entry count (a checked tensor's), fits it.
        let (total, block) = (batch * nse, br * bc);
        let ints = |v: Vec<i64>, shape: [usize; 2]| int_tensor(v, shape, DType::I64, &device);
        let shift = ints((0..batch as i64).map(|k| k * nse as i64).collect(), [batch, 1]);
        let ptr = compressed.clone().cast(DType::I64).slice([0..batch, 0..n_comp]) + shift;
        let ptr = Tensor::cat(
            vec![crate::util::reshape_int(ptr, [batch * n_comp]), ints(vec![total as i64], [1, 1]).reshape([1])],
            0,
        );
        // The compressed coordinate across the batches, `k · n_comp + s` for batch `k`.
        let seg = device_expand(&ptr, total)?;
        let (k, s) = (seg.clone().div_scalar(n_comp as i64), seg.remainder_scalar(n_comp as i64));
        let p = crate::util::reshape_int(plain.clone().cast(DType::I64), [total]);
        let (brow, bcol) = if self.layout.compresses_rows() { (s, p) } else { (p, s) };
        // Each block's elements, row-major in the block: `base · scale + offsets[q]`.
        let elements = |base: Tensor<1, Int>, scale: usize, offsets: Vec<i64>| {
            let at = crate::util::reshape_int(base.mul_scalar(scale as i64), [total, 1]) + ints(offsets, [1, block]);
            crate::util::reshape_int(at, [total * block])
        };
        let mut rows = Vec::with_capacity(b + 2);
        if b > 0 {
            let k = elements(k, 1, vec![0; block]);
            let mut stride = batch;
            for &size in &self.shape[..b] {
                stride /= size;
                rows.push(k.clone().div_scalar(stride as i64).remainder_scalar(size as i64));
            }
        }
        rows.push(elements(brow, br, (0..block).map(|q| (q / bc) as i64).collect()));
        rows.push(elements(bcol, bc, (0..block).map(|q| (q % bc) as i64).collect()));
        let coords = Tensor::stack::<2>(rows, 0);
        let coords = if dtype == DType::I64 { coords } else { coords.cast(dtype) };
        let values = reshape(self.values.clone(), [total * block, numel(self.dense_shape())]);
        Some((coords, values))
    }

    /// The COO indices `[2, nse]` of an unbatched CSR/CSC tensor without blocks, expanded on its
    /// device (`IndexKernels::expand`) in the plain indices' dtype; `None` for other tensors or
    /// where the backend expands on the host.
    pub(crate) fn device_coo_indices(&self) -> Option<Tensor<2, Int>> {
        let Indices::Compressed { compressed, plain, .. } = &self.indices else { return None };
        if self.blocksize.is_some() || self.batch_dim != 0 {
            return None;
        }
        let nse = self.nnz();
        let len = compressed.dims()[1];
        let expanded = device_expand(&crate::util::reshape_int(compressed.clone(), [len]), nse)?;
        let dtype = plain.dtype();
        let expanded = if expanded.dtype() == dtype { expanded } else { expanded.cast(dtype) };
        let expanded = crate::util::reshape_int(expanded, [1, nse]);
        let pair =
            if self.layout.compresses_rows() { vec![expanded, plain.clone()] } else { vec![plain.clone(), expanded] };
        Some(Tensor::cat(pair, 0))
    }
}
