//! Indexing: `index_select`, `select` (torch's `s[i]` along one dim), `at` (torch's `s[1, 0, 1]`:
//! the dense value once every sparse dim is indexed), `narrow` (torch's `narrow_copy`) and
//! [`sparse_mask`] (a dense tensor read at a sparse pattern).
//!
//! Along a sparse dim the kept entries and their new indices are found where the indices live
//! (the `IndexKernels` of a Cube device; on the host elsewhere) and the values move with the
//! row gather, whose gradient is the matching
//! scatter-add; along a dense dim the values are selected with burn's `select`. Every result is
//! differentiable with respect to the values (and `sparse_mask` with respect to the dense input).
//! COO is native; the other layouts go through COO as `shape` describes.

use crate::algebra::keys;
use crate::alloc::ensure_allocatable;
use crate::error::{invalid, Result, SparseError};
use crate::index_kernels::{device_index_matches, Matched};
use crate::movement::{gather_rows, scatter_add_rows};
use crate::shape::{coo_with, fixed_rank, pick_dense};
use crate::tensor::{Indices, SparseTensor};
use crate::util::{numel, read_i64, reshape};
use burn::tensor::{Int, Tensor};

/// The one error of an index out of range, on every path (`index_select`'s host and device
/// paths, `select`, `at`); `value` as given, a `usize` above `i64::MAX` included.
fn out_of_bounds(dim: usize, position: usize, value: i128, size: usize) -> SparseError {
    SparseError::IndexOutOfBounds { component: "index", dim, position, value, size }
}

/// The values of `index` on the host, or the first one outside `0..size` as an error.
fn checked_ids(index: &Tensor<1, Int>, dim: usize, size: usize) -> Result<Vec<i64>> {
    let ids = read_i64(index);
    if let Some((p, &v)) = ids.iter().enumerate().find(|(_, &v)| v < 0 || v as usize >= size) {
        return Err(out_of_bounds(dim, p, v.into(), size));
    }
    Ok(ids)
}

impl<const D: usize> SparseTensor<D> {
    fn check_dim(&self, operation: &'static str, dim: usize) -> Result<()> {
        if dim >= D {
            return Err(invalid(operation, format!("dim {dim} out of range for shape {:?}", self.shape)));
        }
        Ok(())
    }

    /// torch's `index_select(dim, index)`: the slices at `index` along `dim`, in that order
    /// (repeats allowed). Panics on a bad dim or index (see [`Self::try_index_select`]).
    pub fn index_select(&self, dim: usize, index: Tensor<1, Int>) -> Self {
        self.try_index_select(dim, index).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Self::index_select`] returning an error for a dim out of range or an index out of
    /// bounds. The result is coalesced when the input is and `index` is strictly increasing.
    ///
    /// Along a sparse dim of a COO tensor on a device with the index kernels (a Cube device),
    /// the matches are found there and four integers are read back (the index's extremes, the
    /// number of matches and whether it increases); elsewhere the index and the indices are
    /// read to the host.
    pub fn try_index_select(&self, dim: usize, index: Tensor<1, Int>) -> Result<Self> {
        self.check_dim("index_select", dim)?;
        let size = self.shape[dim];
        let mut shape = self.shape;
        shape[dim] = index.dims()[0];
        let indexed = self.indexed_dims();
        if dim >= indexed {
            let ids = checked_ids(&index, dim, size)?;
            let values = self.map_dense_dim(dim - indexed, |v| pick_dense(v, ids));
            return Ok(Self { shape, values, ..self.clone() });
        }
        self.via_coo(|c| {
            if let Some(t) = c.device_index_select(shape, dim, &index)? {
                return Ok(t);
            }
            let ids = checked_ids(&index, dim, size)?;
            let (sd, nse) = (c.sparse_dim, c.nnz());
            let rows = c.coo_host_indices();
            let by_value = positions_by_value(&ids);
            // Each entry's run of matching positions, and their total, checked before a buffer
            // is sized by it (repeated index values multiply the entries).
            let runs: Vec<(usize, usize)> = (0..nse)
                .map(|j| {
                    let at = rows[dim * nse + j];
                    let first = by_value.partition_point(|&(v, _)| v < at);
                    (first, first + by_value[first..].partition_point(|&(v, _)| v == at))
                })
                .collect();
            let m = runs
                .iter()
                .try_fold(0usize, |m, &(a, b)| m.checked_add(b - a))
                .ok_or(SparseError::Allocation { bytes: usize::MAX, what: "index_select: the selected entries" })?;
            ensure_allocatable(m, c.selected_entry_bytes(), "index_select: the selected entries")?;
            let (mut src, mut new_coord) = (Vec::with_capacity(m), Vec::with_capacity(m));
            for (j, &(a, b)) in runs.iter().enumerate() {
                for &(_, k) in &by_value[a..b] {
                    src.push(j as i64);
                    new_coord.push(k);
                }
            }
            let mut out = Vec::with_capacity(sd * m);
            for d in 0..sd {
                if d == dim {
                    out.extend_from_slice(&new_coord);
                } else {
                    out.extend(src.iter().map(|&j| rows[d * nse + j as usize]));
                }
            }
            let increasing = ids.windows(2).all(|w| w[0] < w[1]);
            let values = gather_rows(c.values.clone(), src);
            c.coo_from_host(shape, sd, out, values, c.coalesced && increasing)
        })
    }

    /// The bytes an entry of a selection from this tensor takes: its indices (as i64 on the
    /// host), its source position and its values.
    fn selected_entry_bytes(&self) -> usize {
        let item = numel(self.dense_shape()).saturating_mul(self.dtype().size());
        (self.sparse_dim + 2).saturating_mul(8).saturating_add(item)
    }

    /// [`Self::try_index_select`] of a COO tensor along sparse dim `dim` (to `shape`), the
    /// matches found on the tensor's device (`IndexKernels::index_matches`) and the entries
    /// moved there; `None` where the backend finds them on the host, or nothing is stored or
    /// selected.
    fn device_index_select(&self, shape: [usize; D], dim: usize, index: &Tensor<1, Int>) -> Result<Option<Self>> {
        let Indices::Coo(indices) = &self.indices else { return Ok(None) };
        let (sd, nse, len, size) = (self.sparse_dim, self.nnz(), index.dims()[0], self.shape[dim]);
        if nse == 0 || len == 0 {
            return Ok(None);
        }
        let what = "index_select: the selected entries";
        // The index may live elsewhere (the host path reads it from anywhere): moved here.
        let device = self.device();
        let index = if index.device() == device { index.clone() } else { index.clone().to_device(&device) };
        let row = crate::util::reshape_int(indices.clone().slice([dim..dim + 1, 0..nse]), [nse]);
        // The kernels address 2^32 elements; the pairs' indices take `sd` rows.
        let limit = u64::from(u32::MAX) / sd as u64;
        let Some(found) = device_index_matches(&row, &index, size, limit) else { return Ok(None) };
        let (src, pos, increasing) = match found {
            Matched::Pairs { src, pos, increasing } => {
                (Tensor::<1, Int>::from_dispatch(src), Tensor::<1, Int>::from_dispatch(pos), increasing)
            }
            Matched::OutOfBounds => {
                // The first value out of bounds, named as the host path names it. Should the
                // host find none, the host path (which checks every value again) decides.
                checked_ids(&index, dim, size)?;
                return Ok(None);
            }
            Matched::TooMany(m) => {
                let bytes = usize::try_from(m).ok().and_then(|m| m.checked_mul(self.selected_entry_bytes()));
                return Err(SparseError::Allocation { bytes: bytes.unwrap_or(usize::MAX), what });
            }
        };
        let m = src.dims()[0];
        let dtype = self.coo_index_dtype(&shape, sd)?;
        if m == 0 {
            let indices = crate::util::int_tensor(Vec::new(), [sd, 0], dtype, &device);
            let values = gather_rows(self.values.clone(), Vec::new());
            return Ok(Some(coo_with(shape, sd, indices, values, true)));
        }
        let picked = indices.clone().select(1, src.clone());
        let picked = if picked.dtype() == dtype { picked } else { picked.cast(dtype) };
        let pos = crate::util::reshape_int(if pos.dtype() == dtype { pos } else { pos.cast(dtype) }, [1, m]);
        let parts: Vec<Tensor<2, Int>> = [
            (dim > 0).then(|| picked.clone().slice([0..dim, 0..m])),
            Some(pos),
            (dim + 1 < sd).then(|| picked.slice([dim + 1..sd, 0..m])),
        ]
        .into_iter()
        .flatten()
        .collect();
        let values = crate::movement::gather_rows_at(self.values.clone(), src);
        Ok(Some(coo_with(shape, sd, Tensor::cat(parts, 0), values, self.coalesced && increasing)))
    }

    /// torch's `select(dim, index)` (`s[index]` along `dim`), `E = D - 1`: the slice without
    /// `dim`. Selecting the last sparse dim of a COO tensor is [`Self::at`]'s job (the result
    /// is dense). Panics on a bad dim or index (see [`Self::try_select`]).
    pub fn select<const E: usize>(&self, dim: usize, index: usize) -> SparseTensor<E> {
        self.try_select(dim, index).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Self::select`] returning an error for a dim or index out of range, a rank
    /// `E != D - 1`, or the only sparse dim. A coalesced input gives a coalesced result.
    pub fn try_select<const E: usize>(&self, dim: usize, index: usize) -> Result<SparseTensor<E>> {
        self.check_dim("select", dim)?;
        let size = self.shape[dim];
        if index >= size {
            // `usize` to `i128` is lossless: a huge index is reported as given.
            return Err(out_of_bounds(dim, 0, index as i128, size));
        }
        let mut shape = self.shape.to_vec();
        shape.remove(dim);
        let shape = fixed_rank::<E>("select", shape)?;
        let indexed = self.indexed_dims();
        if dim >= indexed {
            let values = self.map_dense_dim(dim - indexed, |v| pick_dense(v, vec![index as i64]));
            return Ok(SparseTensor { shape, values, dense_dim: self.dense_dim - 1, ..self.retyped() });
        }
        if indexed == 1 {
            return Err(invalid(
                "select",
                format!(
                    "dim {dim} is the only sparse dim of shape {:?}: the result is dense, use at(&[{index}])",
                    self.shape
                ),
            ));
        }
        self.via_coo(|c| {
            let (sd, nse) = (c.sparse_dim, c.nnz());
            if let Some(n) = c.device_narrow(c.shape, dim, index, 1) {
                // The entries at `index` found on the device; then their coordinate along `dim`
                // (all `index`) dropped. Removing a constant coordinate keeps the order.
                let crate::tensor::Indices::Coo(kept) = &n.indices else { unreachable!("COO layout") };
                let m = n.nnz();
                let indices = if m == 0 {
                    crate::util::int_tensor(Vec::new(), [sd - 1, 0], kept.dtype(), &c.device())
                } else {
                    let parts: Vec<Tensor<2, Int>> = [0..dim, dim + 1..sd]
                        .into_iter()
                        .filter(|r| !r.is_empty())
                        .map(|r| kept.clone().slice([r, 0..m]))
                        .collect();
                    Tensor::cat(parts, 0)
                };
                return Ok(SparseTensor {
                    layout: crate::layout::Layout::Coo,
                    shape,
                    batch_dim: 0,
                    sparse_dim: sd - 1,
                    dense_dim: n.dense_dim,
                    blocksize: None,
                    indices: crate::tensor::Indices::Coo(indices),
                    values: n.values,
                    coalesced: n.coalesced,
                    trust: crate::tensor::Trust::Checked,
                });
            }
            let rows = c.coo_host_indices();
            let keep: Vec<i64> = (0..nse as i64).filter(|&j| rows[dim * nse + j as usize] == index as i64).collect();
            let out = (0..sd)
                .filter(|&d| d != dim)
                .flat_map(|d| keep.iter().map(move |&j| (d, j)))
                .map(|(d, j)| rows[d * nse + j as usize])
                .collect();
            let values = gather_rows(c.values.clone(), keep);
            c.coo_from_host(shape, sd - 1, out, values, c.coalesced)
        })
    }

    /// torch's `s[i0, i1, ...]` once every sparse (indexed) dim has an index: the dense value
    /// there (duplicates summed, zero when unspecified), further indices reading into the
    /// dense dims. Rank `R = D - index.len()`, or 1 when every dim is indexed (burn has no
    /// rank 0: torch's `tensor(6)` is `[6.]` here). Panics on a bad index (see [`Self::try_at`]).
    pub fn at<const R: usize>(&self, index: &[usize]) -> Tensor<R> {
        self.try_at(index).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Self::at`] returning an error for too few or too many indices, one out of bounds, or
    /// the wrong rank `R`.
    pub fn try_at<const R: usize>(&self, index: &[usize]) -> Result<Tensor<R>> {
        let indexed = self.indexed_dims();
        if index.len() < indexed || index.len() > D {
            return Err(invalid(
                "at",
                format!(
                    "{index:?} must index the {indexed} sparse dims of shape {:?} (and at most every dim)",
                    self.shape
                ),
            ));
        }
        for (d, &i) in index.iter().enumerate() {
            if i >= self.shape[d] {
                return Err(out_of_bounds(d, d, i as i128, self.shape[d]));
            }
        }
        let dense = self.dense_shape();
        let q = index.len() - indexed;
        let mut out_shape = dense[q..].to_vec();
        if out_shape.is_empty() {
            out_shape.push(1);
        }
        let out_shape = fixed_rank::<R>("at", out_shape)?;
        let e = self.entries()?;
        let target: u64 = keys::strides(&e.sizes).iter().zip(index).map(|(&s, &i)| s * i as u64).sum();
        let hits: Vec<i64> = (0..e.keys.len() as i64).filter(|&j| e.keys[j as usize] == target).collect();
        let n = hits.len();
        let item = scatter_add_rows(gather_rows(e.values, hits), vec![0; n], 1);
        let tail = numel(&dense[q..]);
        let offset: usize =
            index[indexed..].iter().zip(keys::strides(&dense[..q])).map(|(&i, s)| i * s as usize).sum::<usize>() * tail;
        let picked =
            pick_dense(reshape(item, [1, 1, numel(dense), 1]), (offset as i64..(offset + tail) as i64).collect());
        Ok(reshape(picked, out_shape))
    }

    /// torch's `narrow_copy(dim, start, length)`: the slice `start..start + length` along
    /// `dim`, re-indexed from 0. Panics on a range out of bounds (see [`Self::try_narrow`]).
    pub fn narrow(&self, dim: usize, start: usize, length: usize) -> Self {
        self.try_narrow(dim, start, length).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Self::narrow`] under torch's name.
    pub fn narrow_copy(&self, dim: usize, start: usize, length: usize) -> Self {
        self.narrow(dim, start, length)
    }

    /// [`Self::narrow`] returning an error for a dim out of range or a range past the end.
    pub fn try_narrow(&self, dim: usize, start: usize, length: usize) -> Result<Self> {
        self.check_dim("narrow", dim)?;
        let size = self.shape[dim];
        if start.checked_add(length).is_none_or(|end| end > size) {
            return Err(invalid(
                "narrow",
                format!(
                    "start {start} + length {length} exceeds dimension {dim} of size {size} (shape {:?})",
                    self.shape
                ),
            ));
        }
        let mut shape = self.shape;
        shape[dim] = length;
        let indexed = self.indexed_dims();
        if dim >= indexed {
            let values =
                self.map_dense_dim(dim - indexed, |v| pick_dense(v, (start as i64..(start + length) as i64).collect()));
            return Ok(Self { shape, values, ..self.clone() });
        }
        self.via_coo(|c| {
            if let Some(t) = c.device_narrow(shape, dim, start, length) {
                return Ok(t);
            }
            let (sd, nse) = (c.sparse_dim, c.nnz());
            let mut rows = c.coo_host_indices();
            let range = start as i64..(start + length) as i64;
            let keep: Vec<i64> = (0..nse as i64).filter(|&j| range.contains(&rows[dim * nse + j as usize])).collect();
            for v in &mut rows[dim * nse..(dim + 1) * nse] {
                *v -= start as i64;
            }
            let out = (0..sd)
                .flat_map(|d| keep.iter().map(move |&j| (d, j)))
                .map(|(d, j)| rows[d * nse + j as usize])
                .collect();
            let values = gather_rows(c.values.clone(), keep);
            c.coo_from_host(shape, sd, out, values, c.coalesced)
        })
    }
}

impl<const D: usize> SparseTensor<D> {
    /// `narrow` of a COO tensor along sparse dim `dim` (to `shape`), its entries found on the
    /// tensor's device (`IndexKernels::nonzero_rows` over the in-range flags: a Cube device
    /// reads back their count) and moved there; `None` where the backend finds them on the host
    /// or the tensor stores nothing.
    fn device_narrow(&self, shape: [usize; D], dim: usize, start: usize, length: usize) -> Option<Self> {
        let crate::tensor::Indices::Coo(indices) = &self.indices else { return None };
        let (sd, nse) = (self.sparse_dim, self.nnz());
        if nse == 0 {
            return None;
        }
        let row = indices.clone().slice([dim..dim + 1, 0..nse]);
        let inside = row.clone().greater_equal_elem(start as i64).bool_and(row.lower_elem((start + length) as i64));
        let flags: Tensor<2> = crate::util::reshape(inside.float(), [nse, 1]);
        let keep = crate::index_kernels::device_nonzero_rows(&flags)?;
        let n = keep.dims()[0];
        let kept = if n == 0 {
            Tensor::<2, Int>::zeros([sd, 0], (&self.device(), indices.dtype()))
        } else {
            // The narrowed dim counts from `start` (no element-wise op on an empty tensor:
            // burn's Cube backend rejects them).
            let shift: Vec<i64> = (0..sd).map(|d| if d == dim { start as i64 } else { 0 }).collect();
            let shift = crate::util::int_tensor(shift, [sd, 1], indices.dtype(), &self.device());
            indices.clone().select(1, keep.clone()) - shift
        };
        Some(Self {
            shape,
            indices: crate::tensor::Indices::Coo(kept),
            values: crate::movement::gather_rows_at(self.values.clone(), keep),
            coalesced: self.coalesced || n < 2,
            trust: crate::tensor::Trust::Checked,
            ..self.clone()
        })
    }
}

/// `(ids[k], k)` for every position `k`, sorted by value and then position: the positions
/// holding each value, found by a binary search. Memory in the index's length, never in the
/// size of the dimension it selects from (which can be far larger).
fn positions_by_value(ids: &[i64]) -> Vec<(i64, i64)> {
    let mut pairs: Vec<(i64, i64)> = ids.iter().enumerate().map(|(k, &v)| (v, k as i64)).collect();
    pairs.sort_unstable();
    pairs
}

/// torch's `dense.sparse_mask(mask)`: `mask`'s pattern (layout, indices, duplicates) holding
/// `dense`'s values at those positions; `mask`'s own values are ignored. Differentiable w.r.t.
/// `dense` (the gradient is scattered back to the masked positions). Panics when the shapes
/// differ, naming both (see [`try_sparse_mask`]).
pub fn sparse_mask<const D: usize>(dense: &Tensor<D>, mask: &SparseTensor<D>) -> SparseTensor<D> {
    try_sparse_mask(dense, mask).unwrap_or_else(|e| panic!("{e}"))
}

/// [`sparse_mask`] returning an error when the shapes differ.
pub fn try_sparse_mask<const D: usize>(dense: &Tensor<D>, mask: &SparseTensor<D>) -> Result<SparseTensor<D>> {
    if dense.dims() != mask.shape {
        return Err(invalid(
            "sparse_mask",
            format!("dense shape {:?} does not match the mask's shape {:?}", dense.dims(), mask.shape),
        ));
    }
    let item = numel(mask.dense_shape());
    if mask.nnz() > 0 && dense.device() == mask.device() {
        // On a device with the index kernels the keys are computed there (nothing read back).
        if let Some((keys, _)) = mask.device_keys()? {
            let items = numel(&mask.shape[..D - mask.dense_dim]);
            let flat = reshape(dense.clone(), [items, item]);
            let values = crate::movement::gather_rows_at(flat, keys);
            return Ok(SparseTensor { values: reshape(values, mask.values.dims()), ..mask.clone() });
        }
    }
    let e = mask.entries()?;
    let flat = reshape(dense.clone(), [numel(&e.sizes), item]);
    let values = gather_rows(flat, e.keys.iter().map(|&k| k as i64).collect());
    Ok(SparseTensor { values: reshape(values, mask.values.dims()), ..mask.clone() })
}
