//! Sums of sparse tensors, torch's `torch.sparse.sum`:
//!
//! - [`SparseTensor::sum`]: every element, a burn tensor of shape `[1]`;
//! - [`sum`]`::<D, R>(s, dims)`: over `dims`, while at least one sparse dim remains: a COO
//!   tensor of rank `R = D - dims.len()`, coalesced when a sparse dim is summed (summing only
//!   dense dims keeps the pattern as it is);
//! - [`sum_to_dense`]`::<D, R>(s, dims)`: over `dims` covering every sparse dim: a dense tensor of
//!   the remaining dense dims (rank `R`; `[1]` when nothing remains).
//!
//! torch returns either kind from one function; Rust needs the output type and rank up front, so
//! the caller picks the function and `R`, and a wrong pick is an error that says which to use.
//! Compressed layouts are summed through their COO view (batch dims count as sparse dims).
//!
//! Sparse dims are summed by index algebra (new keys over the kept dims, then a coalesce plan)
//! and a scatter-add of the values; dense dims by burn's `sum_dim` on the values. Both are burn
//! ops, so the sums are differentiable with respect to the values.

use crate::algebra::{keys, sort};
use crate::error::{invalid, Result};
use crate::layout::Layout;
use crate::movement::scatter_add_rows;
use crate::tensor::{Indices, SparseTensor, Trust};
use crate::util::{int_tensor, numel, read_i64, reshape};
use burn::tensor::{Int, Tensor};

impl<const D: usize> SparseTensor<D> {
    /// torch's `torch.sparse.sum(s)`: the sum of every element (duplicates included), shape `[1]`.
    pub fn sum(&self) -> Tensor<1> {
        self.values.clone().sum()
    }
}

/// torch's `torch.sparse.sum(s, dims)` with a sparse result: `s` summed over `dims` (each once,
/// any order), a COO tensor of rank `R = D - dims.len()`, coalesced when a sparse dim is summed
/// (summing dense dims only keeps the pattern, duplicates included). An error when `dims` covers
/// every sparse dim (the result is dense: use [`sum_to_dense`]), repeats or exceeds a dim, or
/// `R` is not the rank left.
pub fn sum<const D: usize, const R: usize>(s: &SparseTensor<D>, dims: &[usize]) -> Result<SparseTensor<R>> {
    s.check_invariants()?;
    let s = s.to_sparse_coo();
    let reduced = reduced_dims::<D>("sum", dims)?;
    let m = s.sparse_dim;
    let kept: Vec<usize> = (0..m).filter(|&d| !reduced[d]).collect();
    if kept.is_empty() {
        return Err(invalid(
            "sum",
            format!("summing dims {dims:?} leaves no sparse dim of the {m}: the result is dense, use sum_to_dense"),
        ));
    }
    let shape = remaining_shape::<D, R>("sum", &s.shape, &reduced)?;
    let (indices, values, coalesced) = if kept.len() == m {
        (s.indices.clone(), s.values.clone(), s.coalesced)
    } else if let Some((coords, values)) = device_sum_sparse_dims(&s, &kept) {
        (Indices::Coo(coords), values, true)
    } else {
        let (coords, values) = sum_sparse_dims(&s, &kept);
        let n = values.dims()[0];
        (Indices::Coo(int_tensor(coords, [kept.len(), n], s.index_dtype(), &s.device())), values, true)
    };
    let dense_shape: Vec<usize> = s.dense_shape().to_vec();
    let values = sum_dense_dims(values, &dense_shape, &reduced[m..]);
    Ok(SparseTensor {
        layout: Layout::Coo,
        shape,
        batch_dim: 0,
        sparse_dim: kept.len(),
        dense_dim: R - kept.len(),
        blocksize: None,
        indices,
        values,
        coalesced,
        trust: Trust::Checked,
    })
}

/// torch's `torch.sparse.sum(s, dims)` with a dense result: `dims` must include every sparse dim
/// (batch dims of compressed layouts too); the result holds the remaining dense dims, rank `R`
/// (`R = 1`, shape `[1]`, when every dim is summed). An error when a sparse dim would remain (use
/// [`sum`]), on a repeated or out-of-range dim, or when `R` is not the rank left.
pub fn sum_to_dense<const D: usize, const R: usize>(s: &SparseTensor<D>, dims: &[usize]) -> Result<Tensor<R>> {
    s.check_invariants()?;
    let s = s.to_sparse_coo();
    let reduced = reduced_dims::<D>("sum_to_dense", dims)?;
    let m = s.sparse_dim;
    if let Some(d) = (0..m).find(|&d| !reduced[d]) {
        return Err(invalid("sum_to_dense", format!("sparse dim {d} is not summed: the result is sparse, use sum")));
    }
    let kept_dense: Vec<usize> = (m..D).filter(|&d| !reduced[d]).map(|d| s.shape[d]).collect();
    let expected = kept_dense.len().max(1);
    if R != expected {
        return Err(invalid(
            "sum_to_dense",
            format!("summing dims {dims:?} of a rank-{D} tensor leaves rank {expected}, asked for rank {R}"),
        ));
    }
    let total = s.values.clone().sum_dim(0);
    let dense_shape: Vec<usize> = s.dense_shape().to_vec();
    let total = sum_dense_dims(total, &dense_shape, &reduced[m..]);
    let mut shape = [1usize; R];
    shape[..kept_dense.len()].copy_from_slice(&kept_dense);
    Ok(reshape(total, shape))
}

/// A flag per dim: whether `dims` sums it; an error on a dim out of range or given twice.
fn reduced_dims<const D: usize>(operation: &'static str, dims: &[usize]) -> Result<[bool; D]> {
    let mut reduced = [false; D];
    for &d in dims {
        if d >= D {
            return Err(invalid(operation, format!("dim {d} out of range for rank {D}")));
        }
        if reduced[d] {
            return Err(invalid(operation, format!("dim {d} appears twice in {dims:?}")));
        }
        reduced[d] = true;
    }
    Ok(reduced)
}

/// The sizes of the dims not summed, as an `R`-array; an error when `R` is not their count.
fn remaining_shape<const D: usize, const R: usize>(
    operation: &'static str,
    shape: &[usize; D],
    reduced: &[bool; D],
) -> Result<[usize; R]> {
    let kept: Vec<usize> = (0..D).filter(|&d| !reduced[d]).map(|d| shape[d]).collect();
    let n = kept.len();
    kept.try_into().map_err(|_| {
        invalid(operation, format!("summing {} dims of a rank-{D} tensor leaves rank {n}, asked for rank {R}", D - n))
    })
}

/// [`sum_sparse_dims`] planned on the tensor's device (`IndexKernels::coalesce_plan` over the
/// kept rows of the indices: a Cube device reads back two integers); `None` where the backend
/// plans on the host or `s` stores nothing.
fn device_sum_sparse_dims<const D: usize>(s: &SparseTensor<D>, kept: &[usize]) -> Option<(Tensor<2, Int>, Tensor<2>)> {
    let Indices::Coo(indices) = &s.indices else { return None };
    if s.nnz() == 0 {
        return None;
    }
    let rows = crate::movement::gather_index(kept.iter().map(|&d| d as i64).collect(), &s.device());
    let sub = indices.clone().select(0, rows);
    let sizes: Vec<usize> = kept.iter().map(|&d| s.shape[d]).collect();
    match crate::index_kernels::device_coalesce_plan(&sub, &sizes)? {
        // Sorted and unique on the kept dims already: each entry is its own sum.
        None => Some((sub, s.values.clone())),
        Some((coords, targets)) => {
            let n = coords.dims()[1];
            Some((coords, crate::movement::scatter_add_rows_at(s.values.clone(), targets, n)))
        }
    }
}

/// Sums the entries of COO `s` that agree on the `kept` sparse dims: the coordinates of the
/// distinct kept indices (`[kept.len(), n]`, sorted) and their summed values.
fn sum_sparse_dims<const D: usize>(s: &SparseTensor<D>, kept: &[usize]) -> (Vec<i64>, Tensor<2>) {
    let Indices::Coo(indices) = &s.indices else { unreachable!("sum works on the COO view") };
    let nse = s.nnz();
    let idx = read_i64(indices);
    let sizes: Vec<usize> = kept.iter().map(|&d| s.shape[d]).collect();
    let strides = keys::strides(&sizes);
    let new_keys: Vec<u64> =
        (0..nse).map(|j| kept.iter().zip(&strides).map(|(&d, &st)| idx[d * nse + j] as u64 * st).sum()).collect();
    let plan = sort::coalesce_plan(new_keys, &sizes);
    let values =
        if plan.identity { s.values.clone() } else { scatter_add_rows(s.values.clone(), plan.segment, plan.unique) };
    (plan.coords, values)
}

/// Values `[n, prod(dense_shape)]` summed over the dense dims flagged in `reduced` (one flag per
/// dense dim): `[n, prod(kept dense dims)]`. Each summed dim is reduced on a
/// `[n * outer, size, inner]` view, which holds for any number of dense dims.
fn sum_dense_dims(values: Tensor<2>, dense_shape: &[usize], reduced: &[bool]) -> Tensor<2> {
    let n = values.dims()[0];
    let mut sizes = dense_shape.to_vec();
    let mut values = values;
    for (j, _) in reduced.iter().enumerate().filter(|(_, &r)| r) {
        let (outer, inner) = (numel(&sizes[..j]), numel(&sizes[j + 1..]));
        let view = reshape(values, [n * outer, sizes[j], inner]);
        sizes[j] = 1;
        values = reshape(view.sum_dim(1), [n, numel(&sizes)]);
    }
    values
}
