//! Shape changes that keep every stored value: `permute`, `unsqueeze` and `reshape`
//! (TensorFlow's `sparse_reshape`), as methods and as free functions, plus the helpers the indexing ops of `select` and `cat`
//! share: building a COO result from host indices, running a COO op on the other layouts, and
//! moving values along one dense dim.
//!
//! Indices are rewritten on the host (index algebra), except by `unsqueeze` and `cat`, which
//! insert a row or shift one with burn's ops where the indices live, and by `reshape` on a
//! backend with `IndexKernels` (keys and coordinates computed there); values only move through burn ops
//! (`reshape`, `swap_dims`, `select`) and the row movements, so every op here is
//! differentiable with respect to the values. COO is the native layout: a compressed input is
//! converted to COO and the result converted back to the input's layout (an error when that
//! layout cannot hold it, COO when fewer than two sparse dims remain). `unsqueeze` and
//! dense-dim moves never convert.

use crate::algebra::{
    keys,
    validate::{check_numel, check_shape},
};
use crate::error::{invalid, Result};
use crate::index_kernels::{device_delinearize, device_linear_keys};
use crate::layout::Layout;
use crate::movement::gather_index;
use crate::tensor::{Indices, SparseTensor, Trust};
use crate::util::{self, index_dtype_for, int_tensor, numel, read_i64};
use burn::tensor::Tensor;

/// The shape as an array of the rank the caller asked for.
pub(crate) fn fixed_rank<const E: usize>(operation: &'static str, shape: Vec<usize>) -> Result<[usize; E]> {
    let rank = shape.len();
    shape.try_into().map_err(|_| invalid(operation, format!("the result has rank {rank}, asked for rank {E}")))
}

/// A checked COO tensor of `shape` over `indices [sparse_dim, nse]` (in bounds of `shape`, in a
/// dtype that holds it) and `values [nse, ..]`.
pub(crate) fn coo_with<const E: usize>(
    shape: [usize; E],
    sparse_dim: usize,
    indices: Tensor<2, burn::tensor::Int>,
    values: Tensor<2>,
    coalesced: bool,
) -> SparseTensor<E> {
    let nse = values.dims()[0];
    SparseTensor {
        layout: Layout::Coo,
        shape,
        batch_dim: 0,
        sparse_dim,
        dense_dim: E - sparse_dim,
        blocksize: None,
        indices: Indices::Coo(indices),
        values,
        coalesced: coalesced || nse < 2,
        trust: Trust::Checked,
    }
}

/// `indices [r, n]` with a row of zeros inserted before row `at`, by burn's ops on their device
/// (nothing read back).
fn with_zero_row(indices: &Tensor<2, burn::tensor::Int>, at: usize) -> Tensor<2, burn::tensor::Int> {
    let [r, n] = indices.dims();
    let device = indices.device();
    if n == 0 {
        // burn's Cube backend rejects element-wise work on empty rank-2 tensors.
        return int_tensor(Vec::new(), [r + 1, 0], indices.dtype(), &device);
    }
    let zeros = Tensor::<2, burn::tensor::Int>::zeros([1, n], (&device, indices.dtype()));
    let mut parts = Vec::with_capacity(3);
    if at > 0 {
        parts.push(indices.clone().slice([0..at, 0..n]));
    }
    parts.push(zeros);
    if at < r {
        parts.push(indices.clone().slice([at..r, 0..n]));
    }
    Tensor::cat(parts, 0)
}

/// `t` with positions `ids` of axis 2 (a dense dim in the `[elements, pre, d, post]` view),
/// built as zeros when it holds no element (burn's `select` wants a non-empty result).
pub(crate) fn pick_dense(t: Tensor<4>, ids: Vec<i64>) -> Tensor<4> {
    let [n, pre, _, post] = t.dims();
    if n * pre * ids.len() * post == 0 {
        return Tensor::zeros([n, pre, ids.len(), post], (&t.device(), t.dtype()));
    }
    let device = t.device();
    t.select(2, gather_index(ids, &device))
}

impl<const D: usize> SparseTensor<D> {
    /// A COO tensor from host indices (`[sparse_dim, nse]`, `nse` the rows of `values`, each in
    /// bounds of `shape`) on this tensor's device, in its index dtype, widened when a derived
    /// dimension does not fit it; an error when the shape's element count overflows.
    pub(crate) fn coo_from_host<const E: usize>(
        &self,
        shape: [usize; E],
        sparse_dim: usize,
        indices: Vec<i64>,
        values: Tensor<2>,
        coalesced: bool,
    ) -> Result<SparseTensor<E>> {
        let dtype = self.coo_index_dtype(&shape, sparse_dim)?;
        let nse = values.dims()[0];
        let indices = int_tensor(indices, [sparse_dim, nse], dtype, &self.device());
        Ok(coo_with(shape, sparse_dim, indices, values, coalesced))
    }

    /// [`Self::coo_from_host`] with indices already on the device: each index tensor
    /// `[sparse_dim, n_i]` is cast to the result's index dtype (whose range holds every index of
    /// `shape`), then `shift` adds to its row `shift.0` its own offset `shift.1[i]`, and the parts
    /// are joined along the entries. Nothing is read back.
    pub(crate) fn coo_from_device_parts<const E: usize>(
        &self,
        shape: [usize; E],
        sparse_dim: usize,
        parts: Vec<Tensor<2, burn::tensor::Int>>,
        shift: Option<(usize, Vec<i64>)>,
        values: Tensor<2>,
        coalesced: bool,
    ) -> Result<SparseTensor<E>> {
        let dtype = self.coo_index_dtype(&shape, sparse_dim)?;
        let device = self.device();
        let mut kept = Vec::with_capacity(parts.len());
        for (i, part) in parts.into_iter().enumerate() {
            if part.dims()[1] == 0 {
                continue;
            }
            // Cast first: an offset may not fit the part's own (narrower) dtype.
            let part = if part.dtype() == dtype { part } else { part.cast(dtype) };
            kept.push(match &shift {
                Some((row, offsets)) if offsets[i] != 0 => {
                    let mut column = vec![0; sparse_dim];
                    column[*row] = offsets[i];
                    part + int_tensor(column, [sparse_dim, 1], dtype, &device)
                }
                _ => part,
            });
        }
        let nse = values.dims()[0];
        let indices = match kept.len() {
            0 => int_tensor(Vec::new(), [sparse_dim, 0], dtype, &device),
            1 => kept.pop().expect("one part"),
            _ => Tensor::cat(kept, 1),
        };
        debug_assert_eq!(indices.dims(), [sparse_dim, nse]);
        Ok(coo_with(shape, sparse_dim, indices, values, coalesced))
    }

    /// The index dtype of a COO result of `shape` derived from this tensor: this tensor's,
    /// widened where a sparse size does not fit it; an error when the shape's element count
    /// overflows or a size fits no index dtype.
    pub(crate) fn coo_index_dtype(&self, shape: &[usize], sparse_dim: usize) -> Result<burn::tensor::DType> {
        check_numel(shape)?;
        let largest = shape[..sparse_dim].iter().copied().max().unwrap_or(0);
        let dtype = index_dtype_for(self.index_dtype(), largest as u64);
        check_shape(&shape[..sparse_dim], dtype)?;
        Ok(dtype)
    }

    /// COO indices read to the host, `[sparse_dim, nse]`.
    pub(crate) fn coo_host_indices(&self) -> Vec<i64> {
        match &self.indices {
            Indices::Coo(i) => read_i64(i),
            Indices::Compressed { .. } => unreachable!("COO layout"),
        }
    }

    /// Runs a COO op on any layout: a compressed tensor goes to COO, and the result back to the
    /// input's layout (block size included) when it keeps at least two sparse dims.
    pub(crate) fn via_coo<const E: usize>(
        &self,
        op: impl FnOnce(&SparseTensor<D>) -> Result<SparseTensor<E>>,
    ) -> Result<SparseTensor<E>> {
        self.check_invariants()?;
        if self.layout == Layout::Coo {
            return op(self);
        }
        op(&self.to_sparse_coo())?.into_layout(self.layout, self.blocksize)
    }

    /// A COO result in `layout` when it has at least two sparse dims (as is otherwise).
    pub(crate) fn into_layout(self, layout: Layout, blocksize: Option<[usize; 2]>) -> Result<Self> {
        if self.sparse_dim < 2 || layout == Layout::Coo {
            return Ok(self);
        }
        self.to_layout(layout, blocksize)
    }

    /// The values with dense dim `k` (counted among the dense dims) mapped by `f` on the view
    /// `[elements, pre, d_k, post]` (elements: stored elements, blocks expanded); flat again.
    pub(crate) fn map_dense_dim(&self, k: usize, f: impl FnOnce(Tensor<4>) -> Tensor<4>) -> Tensor<2> {
        let dense = self.dense_shape();
        let [n, _] = self.values.dims();
        let block = self.blocksize.map_or(1, |[br, bc]| br * bc);
        let (pre, post) = (numel(&dense[..k]), numel(&dense[k + 1..]));
        let out = f(util::reshape(self.values.clone(), [n * block, pre, dense[k], post]));
        let [_, _, d, _] = out.dims();
        util::reshape(out, [n, block * pre * d * post])
    }

    /// torch's `permute(dims)`: `dims[i]` is the dim that moves to position `i`. Indexed (sparse
    /// and batch) dims stay among themselves, dense dims among themselves. Panics on an
    /// invalid permutation (see [`Self::try_permute`]).
    pub fn permute(&self, dims: [usize; D]) -> Self {
        self.try_permute(dims).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Self::permute`] returning an error for a non-permutation or for one that moves a
    /// sparse dim into a dense position. COO permutes its index rows (coalesced only when the
    /// sparse dims keep their order); dense dims permute the values.
    pub fn try_permute(&self, dims: [usize; D]) -> Result<Self> {
        let mut seen = [false; D];
        for &d in &dims {
            if d >= D || std::mem::replace(&mut seen[d], true) {
                return Err(invalid(
                    "permute",
                    format!("{dims:?} is not a permutation of the {D} dims of shape {:?}", self.shape),
                ));
            }
        }
        let indexed = self.indexed_dims();
        if dims[..indexed].iter().any(|&d| d >= indexed) {
            return Err(invalid("permute", format!("{dims:?} moves sparse dims of a tensor with {indexed} sparse dims and shape {:?} into dense positions", self.shape)));
        }
        let sparse = &dims[..indexed];
        let mut out = if sparse.iter().enumerate().all(|(i, &d)| i == d) {
            self.clone()
        } else {
            self.via_coo(|c| Ok(c.permute_index_rows(sparse)))?
        };
        // Dense dims: as a sequence of transpositions, each a move of the values.
        let mut current: Vec<usize> = (0..D).collect();
        for (i, &wanted) in dims.iter().enumerate().skip(indexed) {
            let p = current.iter().position(|&c| c == wanted).expect("a permutation");
            if p != i {
                out = out.try_transpose(i, p)?;
                current.swap(i, p);
            }
        }
        Ok(out)
    }

    /// COO with index row `i` taken from row `perm[i]`.
    fn permute_index_rows(&self, perm: &[usize]) -> Self {
        let Indices::Coo(indices) = &self.indices else { unreachable!("COO layout") };
        let rows = perm.iter().map(|&p| p as i64).collect();
        let indices = indices.clone().select(0, gather_index(rows, &self.device()));
        let mut shape = self.shape;
        for (i, &p) in perm.iter().enumerate() {
            shape[i] = self.shape[p];
        }
        Self { shape, indices: Indices::Coo(indices), coalesced: self.nnz() < 2, ..self.clone() }
    }

    /// torch's `unsqueeze(dim)` (`E = D + 1`): a dim of size 1 at `dim`. COO: sparse when
    /// `dim <= sparse_dim` (a zero index row; order kept), dense after; compressed: a batch dim
    /// before the rows, a dense dim after the columns. Panics on a bad dim (see
    /// [`Self::try_unsqueeze`]).
    pub fn unsqueeze<const E: usize>(&self, dim: usize) -> SparseTensor<E> {
        self.try_unsqueeze(dim).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Self::unsqueeze`] returning an error for a dim out of `0..=D`, a rank `E != D + 1`, or a
    /// dim between the row and column dims of a compressed tensor.
    pub fn try_unsqueeze<const E: usize>(&self, dim: usize) -> Result<SparseTensor<E>> {
        if dim > D {
            return Err(invalid("unsqueeze", format!("dim {dim} out of range for shape {:?}", self.shape)));
        }
        let mut shape = self.shape.to_vec();
        shape.insert(dim, 1);
        let shape = fixed_rank::<E>("unsqueeze", shape)?;
        let (mut batch_dim, mut sparse_dim, mut dense_dim) = (self.batch_dim, self.sparse_dim, self.dense_dim);
        let mut indices = self.indices.clone();
        match self.layout {
            Layout::Coo if dim <= self.sparse_dim => {
                let Indices::Coo(old) = &self.indices else { unreachable!("COO layout") };
                sparse_dim += 1;
                indices = Indices::Coo(with_zero_row(old, dim));
            }
            Layout::Coo => dense_dim += 1,
            _ if dim <= self.batch_dim => batch_dim += 1,
            _ if dim >= self.batch_dim + 2 => dense_dim += 1,
            layout => {
                return Err(invalid("unsqueeze", format!("dim {dim} falls between the row and column dims of a {layout} tensor of shape {:?}; convert to COO first", self.shape)));
            }
        }
        Ok(SparseTensor {
            layout: self.layout,
            shape,
            batch_dim,
            sparse_dim,
            dense_dim,
            blocksize: self.blocksize,
            indices,
            values: self.values.clone(),
            coalesced: self.coalesced,
            // The same contents with a zero row or a size-1 dim: valid exactly when they were.
            trust: self.trust.clone(),
        })
    }

    /// TensorFlow's `sparse_reshape(shape)`: the same elements in row-major order under a new
    /// shape; one entry may be -1 and is inferred. Dense dims stay: `shape` ends with them.
    /// Panics on an impossible shape (see [`Self::try_reshape`]).
    pub fn reshape<const E: usize>(&self, shape: [i64; E]) -> SparseTensor<E> {
        self.try_reshape(shape).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Self::reshape`] returning an error for a shape with another element count, more than
    /// one -1, a -1 next to a zero, or without the dense dims at its end.
    pub fn try_reshape<const E: usize>(&self, shape: [i64; E]) -> Result<SparseTensor<E>> {
        let dd = self.dense_dim;
        let dense = self.dense_shape();
        let keeps_dense = E > dd && shape[E - dd..].iter().zip(dense).all(|(&a, &b)| a == b as i64);
        if !keeps_dense {
            return Err(invalid("reshape", format!("cannot reshape {:?} into {shape:?}: the new shape must end with the dense dims {dense:?} after at least one sparse dim", self.shape)));
        }
        let sparse = infer_sizes(&shape[..E - dd], numel(&self.shape[..D - dd]))
            .map_err(|why| invalid("reshape", format!("cannot reshape {:?} into {shape:?}: {why}", self.shape)))?;
        let mut new_shape = sparse.clone();
        new_shape.extend_from_slice(dense);
        let new_shape = fixed_rank::<E>("reshape", new_shape)?;
        self.via_coo(|c| {
            if let Some(t) = c.device_reshape(new_shape, &sparse)? {
                return Ok(t);
            }
            let e = c.entries()?;
            let indices = keys::delinearize(&e.keys, &sparse);
            c.coo_from_host(new_shape, sparse.len(), indices, e.values, c.coalesced)
        })
    }

    /// [`Self::try_reshape`] of a COO tensor where the backend computes keys on the device
    /// (`IndexKernels`): each entry's linear key under the old sparse sizes, then its coordinates
    /// under `sparse`, nothing read back. `None` where the backend plans on the host.
    fn device_reshape<const E: usize>(&self, shape: [usize; E], sparse: &[usize]) -> Result<Option<SparseTensor<E>>> {
        let Indices::Coo(indices) = &self.indices else { return Ok(None) };
        if self.nnz() == 0 {
            return Ok(None);
        }
        self.check_invariants()?;
        let dtype = self.coo_index_dtype(&shape, sparse.len())?;
        let Some(keys) = device_linear_keys(indices, &self.shape[..self.sparse_dim]) else { return Ok(None) };
        let Some(indices) = device_delinearize(&keys, sparse, dtype) else { return Ok(None) };
        Ok(Some(coo_with(shape, sparse.len(), indices, self.values.clone(), self.coalesced)))
    }
}

/// torch's `permute(input, dims)`: [`SparseTensor::permute`].
pub fn permute<const D: usize>(input: &SparseTensor<D>, dims: [usize; D]) -> SparseTensor<D> {
    input.permute(dims)
}

/// torch's `unsqueeze(input, dim)`: [`SparseTensor::unsqueeze`].
pub fn unsqueeze<const D: usize, const E: usize>(input: &SparseTensor<D>, dim: usize) -> SparseTensor<E> {
    input.unsqueeze(dim)
}

/// TensorFlow's `sparse.reshape(sp_input, shape)`: [`SparseTensor::reshape`].
pub fn reshape<const D: usize, const E: usize>(input: &SparseTensor<D>, shape: [i64; E]) -> SparseTensor<E> {
    input.reshape(shape)
}

/// The sizes of `shape` with its -1 (if any) replaced so that they hold `total` elements.
fn infer_sizes(shape: &[i64], total: usize) -> core::result::Result<Vec<usize>, String> {
    if shape.iter().any(|&s| s < -1) {
        return Err("sizes must be non-negative or -1".into());
    }
    let unknown: Vec<usize> = (0..shape.len()).filter(|&i| shape[i] == -1).collect();
    let known_sizes: Vec<usize> = shape.iter().filter(|&&s| s >= 0).map(|&s| s as usize).collect();
    // A product that overflows cannot equal (or divide) an element count that fits.
    let known = if known_sizes.contains(&0) {
        0
    } else {
        known_sizes
            .iter()
            .try_fold(1usize, |a, &s| a.checked_mul(s))
            .ok_or_else(|| format!("the sizes {shape:?} overflow usize"))?
    };
    let mut sizes: Vec<usize> = shape.iter().map(|&s| s.max(0) as usize).collect();
    match unknown.as_slice() {
        [] if known == total => Ok(sizes),
        [] => Err(format!("{total} elements do not fit {known}")),
        [i] if known > 0 && total.is_multiple_of(known) => {
            sizes[*i] = total / known;
            Ok(sizes)
        }
        [_] if known == 0 => Err("cannot infer -1 next to a zero-size dim".into()),
        [_] => Err(format!("{total} elements are not a multiple of {known}")),
        _ => Err("only one size may be -1".into()),
    }
}
