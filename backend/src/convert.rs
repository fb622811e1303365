//! Conversions: sparse -> dense (`to_dense`, TensorFlow's `to_dense_with` and validating form),
//! layout <-> layout, and the dense -> sparse kernels behind `ToSparse`.
//!
//! Every conversion computes its pattern on the host (index algebra) and moves values with
//! burn ops (`select`, `select_assign` with add, `reshape`, `permute`), so conversions are
//! differentiable with respect to values on an autodiff device. Layout changes go through
//! element entries: one linear key per stored element over the indexed dims, which is also
//! how duplicates in uncoalesced COO input get summed.

use crate::algebra::{
    compress, keys,
    keys::FastDiv,
    nonzero::{dense_to_csr, nonzero_items},
    sort, validate,
};
use crate::alloc::{ensure_allocatable, try_filled, try_vec};
use crate::error::{Result, SparseError};
use crate::host::{with_floats, with_ints, FloatSlice};
use crate::index_kernels::{
    device_coalesce_plan, device_compress_sorted, device_delinearize, device_expand, device_linear_keys,
    device_nonzero_rows,
};
use crate::layout::Layout;
use crate::movement::{gather_index, gather_rows, gather_rows_at, scatter_add_rows, scatter_add_rows_at};
use crate::tensor::{Indices, SparseTensor, Trust};
use crate::util::{index_dtype_for, int_tensor, numel, reshape, try_int_tensor};
use crate::{match_floats, match_ints};
use burn::tensor::{DType, Int, Tensor, TensorData};

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

    /// torch's `to_dense()`: unspecified elements are zero, duplicates are summed. Panics when
    /// the dense tensor cannot be allocated (see [`Self::try_to_dense`]).
    pub fn to_dense(&self) -> Tensor<D> {
        self.try_to_dense().unwrap_or_else(|e| panic!("to_dense: {e}"))
    }

    /// [`Self::to_dense`] returning the error when the dense tensor cannot be allocated (an
    /// `Allocation` error: a sparse shape can describe more elements than memory holds) or the
    /// tensor was built unchecked with invalid indices.
    pub fn try_to_dense(&self) -> Result<Tensor<D>> {
        if let Some((keys, values)) = self.device_keys()? {
            ensure_allocatable(numel(&self.shape), self.dtype().size(), "to_dense")?;
            let items = numel(&self.shape[..self.shape.len() - self.dense_dim]);
            return Ok(reshape(scatter_add_rows_at(values, keys, items), self.shape));
        }
        let e = self.entries()?;
        let items = numel(&e.sizes);
        ensure_allocatable(numel(&self.shape), self.dtype().size(), "to_dense")?;
        let keys = e.keys.into_iter().map(|k| k as i64).collect();
        Ok(reshape(scatter_add_rows(e.values, keys, items), self.shape))
    }

    /// TensorFlow's `toTensor(defaultValue)`: unspecified elements take `default_value`.
    /// Panics as [`Self::to_dense`] does.
    pub fn to_dense_with(&self, default_value: f64) -> Tensor<D> {
        self.try_to_dense_with(default_value).unwrap_or_else(|e| panic!("to_dense: {e}"))
    }

    /// [`Self::to_dense_with`] returning [`Self::try_to_dense`]'s errors.
    pub fn try_to_dense_with(&self, default_value: f64) -> Result<Tensor<D>> {
        let dense = self.try_to_dense()?;
        if default_value == 0.0 {
            return Ok(dense);
        }
        let e = self.entries()?;
        let item = numel(self.dense_shape());
        let mut fill = try_filled(numel(&e.sizes), default_value, "to_dense: the default values")?;
        for &k in &e.keys {
            fill[k as usize] = 0.0;
        }
        let mut all = try_vec(numel(&self.shape), "to_dense: the default values")?;
        all.extend(fill.into_iter().flat_map(|v| std::iter::repeat_n(v, item)));
        let fill = Tensor::<D>::from_data(TensorData::new(all, self.shape), (&dense.device(), dense.dtype()));
        Ok(dense + fill)
    }

    /// TensorFlow's `toTensor(defaultValue, validateIndices = true)`: an error unless the COO
    /// indices are in lexicographic order without repeats.
    pub fn to_dense_validated(&self, default_value: f64) -> Result<Tensor<D>> {
        if self.layout == Layout::Coo {
            validate::check_sorted_unique(&self.entries()?.keys)?;
        }
        self.try_to_dense_with(default_value)
    }

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
    fn device_coalesce(&self) -> Option<Self> {
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

    /// A coalesced 2-sparse-dim COO tensor is already in CSR order: only the row indices are
    /// compressed; the column indices and the values are reused as they are.
    fn coalesced_coo_to_csr(&self) -> Result<Self> {
        let Indices::Coo(indices) = &self.indices else { unreachable!("COO layout") };
        let (m, nnz) = (self.shape[0], self.nnz());
        // Row pointers count entries: widened when the entries outnumber the dtype's range.
        let dtype = index_dtype_for(self.index_dtype(), nnz as u64);
        let plain_indices = if dtype == self.index_dtype() { indices.clone() } else { indices.clone().cast(dtype) };
        let rows = crate::util::reshape_int(indices.clone().slice([0..1, 0..nnz]), [nnz]);
        let compressed = match device_compress_sorted(&rows, m) {
            // Compressed on the device (`IndexKernels`), then in the dtype chosen above.
            Some(c) => crate::util::reshape_int(if c.dtype() == dtype { c } else { c.cast(dtype) }, [1, m + 1]),
            None => {
                let c = with_ints(indices, |s| match_ints!(s, i => compress::compress_sorted(&i[..nnz], m)))?;
                try_int_tensor(c, [1, m + 1], dtype, &self.device())?
            }
        };
        let plain = crate::util::reshape_int(plain_indices.slice([1..2, 0..nnz]), [1, nnz]);
        Ok(Self {
            layout: Layout::Csr,
            batch_dim: 0,
            blocksize: None,
            indices: Indices::Compressed { compressed, plain, transposed: Default::default() },
            ..self.clone()
        })
    }

    /// A 2-sparse-dim COO tensor (at least two entries) in CSR or CSC where the backend
    /// coalesces on the device (`IndexKernels`: a Cube device, reading back two integers):
    /// coalesced there in the target's order (by column for CSC, through the swapped
    /// coordinates of the transpose, whose CSR arrays are this tensor's CSC arrays), then
    /// compressed there. `None` elsewhere.
    fn device_compressed(&self, layout: Layout) -> Option<Result<Self>> {
        let Indices::Coo(indices) = &self.indices else { return None };
        let nnz = self.nnz();
        if nnz < 2 {
            return None;
        }
        let source = if layout == Layout::Csr {
            self.clone()
        } else {
            let swapped =
                Tensor::cat(vec![indices.clone().slice([1..2, 0..nnz]), indices.clone().slice([0..1, 0..nnz])], 0);
            let mut shape = self.shape;
            shape.swap(0, 1);
            Self { shape, indices: Indices::Coo(swapped), coalesced: false, ..self.clone() }
        };
        let sorted = source.device_coalesce()?;
        Some(sorted.coalesced_coo_to_csr().map(|c| {
            if layout == Layout::Csr {
                c
            } else {
                Self { layout: Layout::Csc, shape: self.shape, ..c }
            }
        }))
    }

    fn entries_to_compressed(&self, e: Entries, layout: Layout, [br, bc]: [usize; 2]) -> Result<Self> {
        let b = e.sizes.len() - 2;
        let (rows, cols) = (e.sizes[b], e.sizes[b + 1]);
        for (dim, size, block) in [(b, rows, br), (b + 1, cols, bc)] {
            if block == 0 || size % block != 0 {
                return Err(SparseError::BlocksizeMismatch { dim, size, block });
            }
        }
        let (mb, nb) = (rows / br, cols / bc);
        let (n_comp, n_plain) = if layout.compresses_rows() { (mb, nb) } else { (nb, mb) };
        let batch = numel(&e.sizes[..b]);
        let (rows64, cols64) = (rows as u64, cols as u64);
        let mut block_keys = Vec::with_capacity(e.keys.len());
        let mut inner = Vec::with_capacity(e.keys.len());
        let (plane, by_col) = (FastDiv::new(rows64 * cols64), FastDiv::new(cols64));
        let (by_br, by_bc) = (FastDiv::new(br as u64), FastDiv::new(bc as u64));
        for &k in &e.keys {
            let (bi, rem) = plane.divmod(k);
            let (r, c) = by_col.divmod(rem);
            let ((brow, ri), (bcol, ci)) = (by_br.divmod(r), by_bc.divmod(c));
            let (comp, plain) = if layout.compresses_rows() { (brow, bcol) } else { (bcol, brow) };
            block_keys.push((bi * n_comp as u64 + comp) * n_plain as u64 + plain);
            inner.push(ri * bc as u64 + ci);
        }
        let plan = sort::coalesce_plan(block_keys, &[batch, n_comp, n_plain]);
        let nblocks = plan.unique;
        let block_len = (br * bc) as i64;
        let dense = e.values.dims()[1];
        let values = if plan.identity && br * bc == 1 {
            e.values
        } else {
            let targets = plan.segment.iter().zip(&inner).map(|(&s, &i)| s * block_len + i as i64).collect();
            scatter_add_rows(e.values, targets, nblocks * br * bc)
        };
        let values = reshape(values, [nblocks, br * bc * dense]);
        let mut rows = plan.coords.chunks_exact(nblocks.max(1)).map(|r| r.to_vec());
        let (batch_of, comp, plain) = match nblocks {
            0 => (Vec::new(), Vec::new(), Vec::new()),
            _ => (rows.next().expect("batch row"), rows.next().expect("comp row"), rows.next().expect("plain row")),
        };
        let batch_of: Vec<usize> = batch_of.into_iter().map(|b| b as usize).collect();
        let nse = equal_batch_nse(&batch_of, batch)?;
        self.assemble_compressed(layout, [br, bc], comp, plain, values, batch, nse, n_comp)
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble_compressed(
        &self,
        layout: Layout,
        blocksize: [usize; 2],
        comp: Vec<i64>,
        plain: Vec<i64>,
        values: Tensor<2>,
        batch: usize,
        nse: usize,
        n_comp: usize,
    ) -> Result<Self> {
        // Widened when the entries per batch entry outnumber the dtype's range (the dims fit it:
        // they are this tensor's own).
        let dtype = index_dtype_for(self.index_dtype(), nse as u64);
        let b = self.shape_batch_dim_for_compressed();
        let device = self.device();
        let compressed = compress::compress(&comp, batch, nse, n_comp)?;
        Ok(Self {
            layout,
            batch_dim: b,
            sparse_dim: 2,
            blocksize: layout.is_blocked().then_some(blocksize),
            indices: Indices::Compressed {
                compressed: try_int_tensor(compressed, [batch, n_comp + 1], dtype, &device)?,
                plain: int_tensor(plain, [batch, nse], dtype, &device),
                transposed: Default::default(),
            },
            values,
            coalesced: true,
            ..self.clone()
        })
    }

    /// Batch dims of this tensor viewed as compressed: all indexed dims but the last two.
    fn shape_batch_dim_for_compressed(&self) -> usize {
        match self.layout {
            Layout::Coo => self.sparse_dim - 2,
            _ => self.batch_dim,
        }
    }
}

/// The common per-batch count of sorted batch ids, or the first batch entry that differs.
fn equal_batch_nse(batch_of: &[usize], batch: usize) -> Result<usize> {
    if batch == 0 {
        return Ok(0);
    }
    let mut counts = try_filled(batch, 0usize, "per-batch entry counts")?;
    for &b in batch_of {
        counts[b] += 1;
    }
    match counts.iter().position(|&c| c != counts[0]) {
        None => Ok(counts[0]),
        Some(b) => Err(SparseError::UnequalBatchNse { batch: b, nse: counts[b], expected: counts[0] }),
    }
}

/// How a dense tensor is to be stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SparseSpec {
    /// The target layout.
    pub layout: Layout,
    /// Trailing dims kept dense (hybrid); for COO the sparse dims are the rest.
    pub dense_dim: usize,
    /// Block size for BSR/BSC.
    pub blocksize: Option<[usize; 2]>,
    /// Index dtype (torch: int64).
    pub index_dtype: DType,
}

impl SparseSpec {
    /// `layout` with no dense dims, no blocks and int64 indices.
    pub fn new(layout: Layout) -> Self {
        Self { layout, dense_dim: 0, blocksize: None, index_dtype: DType::I64 }
    }
}

/// Items of `flat` ([items, item_len]) holding a non-zero element.
fn nonzero_rows(flat: &Tensor<2>) -> Vec<i64> {
    let item = flat.dims()[1];
    with_floats(flat, |s| match_floats!(s, v => nonzero_items(v, item)))
}

/// The positions of the items of `flat [items, item]` that hold a non-zero and their
/// coordinates `[sizes.len(), n]` over `sizes` in `index_dtype`, found on the tensor's device
/// (`IndexKernels`: a Cube device reads back only their count); `None` where the backend finds
/// them on the host.
fn device_nonzeros(flat: &Tensor<2>, sizes: &[usize], index_dtype: DType) -> Option<(Tensor<1, Int>, Tensor<2, Int>)> {
    let ids = device_nonzero_rows(flat)?;
    let coords = device_delinearize(&ids, sizes, index_dtype)?;
    Some((ids, coords))
}

/// Dense -> sparse in any layout (the body of `ToSparse`).
pub fn dense_to_sparse<const D: usize>(dense: Tensor<D>, spec: SparseSpec) -> Result<SparseTensor<D>> {
    crate::util::check_backend(&dense.device())?;
    let shape = dense.dims();
    let k = spec.dense_dim;
    if k > D || (spec.layout == Layout::Coo && k == D) || (spec.layout.is_compressed() && k + 2 > D) {
        return Err(SparseError::InvalidArgument {
            operation: "to_sparse",
            message: format!(
                "dense_dim {k} leaves too few sparse dims in a tensor of rank {D} for {}",
                spec.layout.name()
            ),
        });
    }
    validate::check_shape(&shape[..D - k], spec.index_dtype)?;
    validate::check_numel(&shape)?;
    let device = dense.device();
    let m = D - k;
    let item = numel(&shape[m..]);
    if spec.layout == Layout::Coo {
        let items = numel(&shape[..m]);
        let flat = reshape(dense, [items, item]);
        let (indices, values) = match device_nonzeros(&flat, &shape[..m], spec.index_dtype) {
            Some((ids, indices)) => (indices, gather_rows_at(flat, ids)),
            None => {
                let ids = nonzero_rows(&flat);
                let keys_u: Vec<u64> = ids.iter().map(|&i| i as u64).collect();
                let n = ids.len();
                let coords = keys::delinearize(&keys_u, &shape[..m]);
                (int_tensor(coords, [m, n], spec.index_dtype, &device), gather_rows(flat, ids))
            }
        };
        return Ok(SparseTensor {
            layout: Layout::Coo,
            shape,
            batch_dim: 0,
            sparse_dim: m,
            dense_dim: k,
            blocksize: None,
            indices: Indices::Coo(indices),
            values,
            coalesced: true,
            trust: Trust::Checked,
        });
    }
    let b = D - 2 - k;
    let [br, bc] = if spec.layout.is_blocked() {
        spec.blocksize.ok_or_else(|| SparseError::InvalidArgument {
            operation: "to_sparse",
            message: format!("{} needs a blocksize", spec.layout.name()),
        })?
    } else {
        [1, 1]
    };
    let (rows, cols) = (shape[b], shape[b + 1]);
    for (dim, size, block) in [(b, rows, br), (b + 1, cols, bc)] {
        if block == 0 || size % block != 0 {
            return Err(SparseError::BlocksizeMismatch { dim, size, block });
        }
    }
    let batch = numel(&shape[..b]);
    let (mb, nb) = (rows / br, cols / bc);
    let blocks = reshape(dense, [batch, mb, br, nb, bc, item]);
    let (n_comp, n_plain, flat) = if spec.layout == Layout::Csr {
        (mb, nb, reshape(blocks, [batch * mb * nb, item]))
    } else if spec.layout.compresses_rows() {
        (mb, nb, reshape(blocks.permute([0, 1, 3, 2, 4, 5]), [batch * mb * nb, br * bc * item]))
    } else {
        (nb, mb, reshape(blocks.permute([0, 3, 1, 2, 4, 5]), [batch * mb * nb, br * bc * item]))
    };
    if spec.layout == Layout::Csr && batch == 1 {
        if let Some((ids, coords, crow)) =
            device_nonzeros(&flat, &[rows, cols], spec.index_dtype).and_then(|(ids, coords)| {
                let nse = ids.dims()[0];
                let row = crate::util::reshape_int(coords.clone().slice([0..1, 0..nse]), [nse]);
                Some((ids, coords, device_compress_sorted(&row, rows)?))
            })
        {
            let nse = ids.dims()[0];
            let (max, name) = validate::index_dtype_max(spec.index_dtype)?;
            if nse as u128 > max as u128 {
                return Err(SparseError::DimensionTooLarge {
                    component: "nse",
                    dim: b,
                    size: nse,
                    index_dtype: name,
                    max,
                });
            }
            let crow = if crow.dtype() == spec.index_dtype { crow } else { crow.cast(spec.index_dtype) };
            return Ok(SparseTensor {
                layout: Layout::Csr,
                shape,
                batch_dim: b,
                sparse_dim: 2,
                dense_dim: k,
                blocksize: None,
                indices: Indices::Compressed {
                    compressed: crate::util::reshape_int(crow, [1, rows + 1]),
                    plain: coords.slice([1..2, 0..nse]),
                    transposed: Default::default(),
                },
                values: gather_rows_at(flat, ids),
                coalesced: true,
                trust: Trust::Checked,
            });
        }
    }
    if spec.layout == Layout::Csr && item == 1 && k == 0 && !flat.is_tracked() {
        if let Some(s) = untracked_csr(&flat, shape, batch, rows, cols, spec.index_dtype)? {
            return Ok(s);
        }
    }
    let ids = nonzero_rows(&flat);
    // One pass: plain indices, per-batch counts and per-segment counts (no per-entry temporaries).
    let (plane, by_plain) = (FastDiv::new((n_comp * n_plain) as u64), FastDiv::new(n_plain as u64));
    let mut compressed = vec![0i64; batch * (n_comp + 1)];
    let mut per_batch = vec![0usize; batch];
    let mut plain = Vec::with_capacity(ids.len());
    for &i in &ids {
        let (bi, rem) = plane.divmod(i as u64);
        let (c, p) = by_plain.divmod(rem);
        per_batch[bi as usize] += 1;
        compressed[bi as usize * (n_comp + 1) + c as usize + 1] += 1;
        plain.push(p as i64);
    }
    let nse = per_batch.first().copied().unwrap_or(0);
    if let Some(bi) = per_batch.iter().position(|&c| c != nse) {
        return Err(SparseError::UnequalBatchNse { batch: bi, nse: per_batch[bi], expected: nse });
    }
    compress::prefix_sum_segments(&mut compressed, batch, n_comp);
    let (max, name) = validate::index_dtype_max(spec.index_dtype)?;
    if nse as u128 > max as u128 {
        return Err(SparseError::DimensionTooLarge { component: "nse", dim: b, size: nse, index_dtype: name, max });
    }
    let values = gather_rows(flat, ids);
    Ok(SparseTensor {
        layout: spec.layout,
        shape,
        batch_dim: b,
        sparse_dim: 2,
        dense_dim: k,
        blocksize: spec.layout.is_blocked().then_some([br, bc]),
        indices: Indices::Compressed {
            compressed: int_tensor(compressed, [batch, n_comp + 1], spec.index_dtype, &device),
            plain: int_tensor(plain, [batch, nse], spec.index_dtype, &device),
            transposed: Default::default(),
        },
        values,
        coalesced: true,
        trust: Trust::Checked,
    })
}

/// Dense -> (batched) CSR without a tracked input: pattern and values in one host kernel, no
/// position list and no separate gather. `None` for dtypes the host kernel does not cover.
fn untracked_csr<const D: usize>(
    flat: &Tensor<2>,
    shape: [usize; D],
    batch: usize,
    rows: usize,
    cols: usize,
    index_dtype: DType,
) -> Result<Option<SparseTensor<D>>> {
    let device = flat.device();
    let dtype = flat.dtype();
    let host = with_floats(flat, |s| match s {
        FloatSlice::F32(v) => {
            let (crow, col, val) = dense_to_csr(v, batch * rows, cols);
            {
                let n = val.len();
                Some((crow, col, TensorData::new(val, [n, 1])))
            }
        }
        FloatSlice::F64(v) => {
            let (crow, col, val) = dense_to_csr(v, batch * rows, cols);
            {
                let n = val.len();
                Some((crow, col, TensorData::new(val, [n, 1])))
            }
        }
        _ => None,
    });
    let Some((crow, col, val)) = host else { return Ok(None) };
    let nse = if batch == 0 { 0 } else { crow[rows] as usize };
    for b in 0..batch {
        let count = (crow[(b + 1) * rows] - crow[b * rows]) as usize;
        if count != nse {
            return Err(SparseError::UnequalBatchNse { batch: b, nse: count, expected: nse });
        }
    }
    let (max, name) = validate::index_dtype_max(index_dtype)?;
    if nse as u128 > max as u128 {
        return Err(SparseError::DimensionTooLarge { component: "nse", dim: D - 2, size: nse, index_dtype: name, max });
    }
    // Per batch entry, the global row prefix minus the entry's start.
    let compressed = if batch == 1 {
        crow
    } else {
        (0..batch).flat_map(|b| crow[b * rows..=(b + 1) * rows].iter().map(move |&c| c - (b * nse) as i64)).collect()
    };
    let values = Tensor::<2>::from_data(val, (&device, dtype));
    Ok(Some(SparseTensor {
        layout: Layout::Csr,
        shape,
        batch_dim: D - 2,
        sparse_dim: 2,
        dense_dim: 0,
        blocksize: None,
        indices: Indices::Compressed {
            compressed: int_tensor(compressed, [batch, rows + 1], index_dtype, &device),
            plain: int_tensor(col, [batch, nse], index_dtype, &device),
            transposed: Default::default(),
        },
        values,
        coalesced: true,
        trust: Trust::Checked,
    }))
}
