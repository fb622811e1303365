//! Joining sparse tensors: `sparse::cat` along an existing dim, `sparse::stack` along a new one,
//! and torch's `hstack` / `vstack`.
//!
//! Along a sparse dim the index arrays are concatenated on their device (nothing read back)
//! with each tensor's coordinates shifted by the sizes before it; along a dense dim (torch's rule) the indices are concatenated as they
//! are and each tensor's values are padded with zeros to the joined dense extent, so entries at
//! the same index from different inputs become duplicates (uncoalesced). Values are joined with
//! burn's `cat`, so gradients flow back to every input's values. COO is native; compressed
//! inputs go through COO as `shape` describes, with the first input's layout.

use crate::error::{invalid, Result};
use crate::layout::Layout;
use crate::shape::fixed_rank;
use crate::tensor::SparseTensor;
use burn::tensor::Tensor;

/// torch's `cat(tensors, dim)`: shapes equal except along `dim`. Panics on mismatched inputs,
/// naming both shapes (see [`try_cat`]).
pub fn cat<const D: usize>(tensors: &[SparseTensor<D>], dim: usize) -> SparseTensor<D> {
    try_cat(tensors, dim).unwrap_or_else(|e| panic!("{e}"))
}

/// [`cat`] returning an error for no input, a dim out of range, or inputs that differ in layout,
/// value dtype, sparse/dense split or shape outside `dim`. The result is coalesced when every
/// input is and `dim` is 0 (the inputs' ranges follow each other in key order).
pub fn try_cat<const D: usize>(tensors: &[SparseTensor<D>], dim: usize) -> Result<SparseTensor<D>> {
    let first = tensors.first().ok_or_else(|| invalid("cat", "expected at least one tensor"))?;
    for t in tensors {
        t.check_invariants()?;
    }
    if dim >= D {
        return Err(invalid("cat", format!("dim {dim} out of range for shape {:?}", first.shape)));
    }
    for (i, t) in tensors.iter().enumerate().skip(1) {
        let differs = (0..D).any(|d| d != dim && t.shape[d] != first.shape[d]);
        if differs {
            return Err(invalid(
                "cat",
                format!("shapes {:?} (tensor 0) and {:?} (tensor {i}) differ outside dim {dim}", first.shape, t.shape),
            ));
        }
        if t.layout != first.layout
            || t.dtype() != first.dtype()
            || t.dense_dim != first.dense_dim
            || t.indexed_dims() != first.indexed_dims()
        {
            return Err(invalid(
                "cat",
                format!(
                    "tensor {i} ({}, {:?}, {} sparse and {} dense dims) does not match tensor 0 ({}, {:?}, {} sparse and {} dense dims)",
                    t.layout, t.dtype(), t.indexed_dims(), t.dense_dim, first.layout, first.dtype(), first.indexed_dims(), first.dense_dim
                ),
            ));
        }
    }
    if first.layout == Layout::Coo {
        return cat_coo(tensors, dim);
    }
    let coo: Vec<SparseTensor<D>> = tensors.iter().map(|t| t.to_sparse_coo()).collect();
    cat_coo(&coo, dim)?.into_layout(first.layout, first.blocksize)
}

fn cat_coo<const D: usize>(tensors: &[SparseTensor<D>], dim: usize) -> Result<SparseTensor<D>> {
    let first = &tensors[0];
    let sd = first.sparse_dim;
    let mut shape = first.shape;
    shape[dim] = tensors
        .iter()
        .try_fold(0usize, |acc, t| acc.checked_add(t.shape[dim]))
        .ok_or_else(|| invalid("cat", format!("the sizes along dim {dim} overflow usize")))?;
    // Each tensor's indices on the device, shifted along a sparse `dim` by the sizes before it
    // (the joined size fits the result's index dtype, so every offset does).
    let index_parts = tensors.iter().map(|t| t.indices_raw()).collect::<Result<Vec<_>>>()?;
    let shift = (dim < sd).then(|| {
        let mut offset = 0i64;
        let offsets = tensors
            .iter()
            .map(|t| {
                let before = offset;
                offset += t.shape[dim] as i64;
                before
            })
            .collect();
        (dim, offsets)
    });
    let values: Vec<Tensor<2>> = if dim < sd {
        tensors.iter().map(|t| t.values.clone()).collect()
    } else {
        padded_dense_values(tensors, dim - sd, shape[dim])
    };
    // burn's `cat` is left the non-empty parts: an empty one adds nothing and has no gradient.
    let width = values[0].dims()[1];
    let mut parts: Vec<Tensor<2>> = values.into_iter().filter(|v| v.dims()[0] > 0).collect();
    let values = match parts.len() {
        0 => Tensor::zeros([0, width], (&first.device(), first.dtype())),
        1 => parts.pop().expect("one part"),
        _ => Tensor::cat(parts, 0),
    };
    let coalesced = (dim == 0 || tensors.len() == 1) && tensors.iter().all(|t| t.coalesced);
    first.coo_from_device_parts(shape, sd, index_parts, shift, values, coalesced)
}

/// Each tensor's values with dense dim `k` zero-padded to `extent`, its own slice at the offset
/// of the tensors before it.
fn padded_dense_values<const D: usize>(tensors: &[SparseTensor<D>], k: usize, extent: usize) -> Vec<Tensor<2>> {
    let mut start = 0;
    let dim = tensors[0].sparse_dim + k;
    tensors
        .iter()
        .map(|t| {
            let own = t.shape[dim];
            let values = t.map_dense_dim(k, |v| {
                let [n, pre, _, post] = v.dims();
                let (device, dtype) = (v.device(), v.dtype());
                let zeros = |w: usize| Tensor::<4>::zeros([n, pre, w, post], (&device, dtype));
                let parts: Vec<Tensor<4>> =
                    [zeros(start), v, zeros(extent - start - own)].into_iter().filter(|p| p.dims()[2] > 0).collect();
                match parts.len() {
                    0 => zeros(extent),
                    1 => parts.into_iter().next().expect("one"),
                    _ if n * pre * post == 0 => zeros(extent),
                    _ => Tensor::cat(parts, 2),
                }
            });
            start += own;
            values
        })
        .collect()
}

/// torch's `stack(tensors, dim)` (`E = D + 1`): each tensor unsqueezed at `dim`, then joined
/// there. Panics on mismatched inputs (see [`try_stack`]).
pub fn stack<const D: usize, const E: usize>(tensors: &[SparseTensor<D>], dim: usize) -> SparseTensor<E> {
    try_stack(tensors, dim).unwrap_or_else(|e| panic!("{e}"))
}

/// [`stack`] returning an error for no input, unequal shapes or a rank `E != D + 1`.
pub fn try_stack<const D: usize, const E: usize>(tensors: &[SparseTensor<D>], dim: usize) -> Result<SparseTensor<E>> {
    let first = tensors.first().ok_or_else(|| invalid("stack", "expected at least one tensor"))?;
    if let Some((i, t)) = tensors.iter().enumerate().find(|(_, t)| t.shape != first.shape) {
        return Err(invalid(
            "stack",
            format!("shapes {:?} (tensor 0) and {:?} (tensor {i}) differ", first.shape, t.shape),
        ));
    }
    let lifted = tensors.iter().map(|t| t.try_unsqueeze::<E>(dim)).collect::<Result<Vec<_>>>()?;
    try_cat(&lifted, dim)
}

/// torch's `hstack`: joined along dim 1, or dim 0 for 1-D tensors.
pub fn hstack<const D: usize>(tensors: &[SparseTensor<D>]) -> SparseTensor<D> {
    try_hstack(tensors).unwrap_or_else(|e| panic!("{e}"))
}

/// [`hstack`] returning [`try_cat`]'s errors.
pub fn try_hstack<const D: usize>(tensors: &[SparseTensor<D>]) -> Result<SparseTensor<D>> {
    try_cat(tensors, if D == 1 { 0 } else { 1 })
}

/// torch's `vstack`: joined along dim 0 (`E = D`), 1-D tensors first made rows `[1, n]`
/// (`E = 2`). Panics on mismatched inputs (see [`try_vstack`]).
pub fn vstack<const D: usize, const E: usize>(tensors: &[SparseTensor<D>]) -> SparseTensor<E> {
    try_vstack(tensors).unwrap_or_else(|e| panic!("{e}"))
}

/// [`vstack`] returning [`try_cat`]'s errors, or one for a rank `E != max(D, 2)`.
pub fn try_vstack<const D: usize, const E: usize>(tensors: &[SparseTensor<D>]) -> Result<SparseTensor<E>> {
    if E != D.max(2) {
        return Err(invalid("vstack", format!("rank-{D} inputs stack to rank {}, asked for rank {E}", D.max(2))));
    }
    if D == 1 {
        let rows = tensors.iter().map(|t| t.try_unsqueeze::<E>(0)).collect::<Result<Vec<_>>>()?;
        return try_cat(&rows, 0);
    }
    let same: Vec<SparseTensor<E>> = tensors.iter().map(|t| t.with_rank::<E>()).collect::<Result<_>>()?;
    try_cat(&same, 0)
}

impl<const D: usize> SparseTensor<D> {
    /// This tensor typed with rank `E` (which must equal `D`).
    fn with_rank<const E: usize>(&self) -> Result<SparseTensor<E>> {
        let shape = fixed_rank::<E>("vstack", self.shape.to_vec())?;
        Ok(SparseTensor { shape, ..self.retyped() })
    }
}
