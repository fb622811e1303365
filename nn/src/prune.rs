//! Magnitude pruning of dense weights `[rows, cols]`:
//!
//! - N:M along rows ([`prune_n_m`], [`prune_2_4`], [`n_m_mask`]): in every group of `m`
//!   consecutive elements of a row the `n` of largest magnitude are kept, the rest zeroed. This
//!   is the pattern semi-structured kernels compress (2:4, or 1:2 for f32 as torch does).
//! - Unstructured top-k ([`prune_magnitude`], [`magnitude_mask`], [`prune_magnitude_csr`]), to a
//!   *sparsity* (the fraction of zeros, as everywhere in this crate): the `round(sparsity * numel)`
//!   elements of smallest magnitude are zeroed, the other `numel - round(sparsity * numel)` kept.
//!
//! Ties are broken by position (the earlier element is kept), so the result never depends on
//! the sort algorithm; NaN counts as larger than every number (it is kept, where it shows).
//! Choosing what to keep is host work on the magnitudes; the zeroing itself is a burn op on the
//! weight (`mask_fill`, `select`), so a pruned weight keeps its dtype and device and stays
//! differentiable with respect to the kept elements.

use burn::tensor::{Bool, DType, Device, Int, Tensor, TensorData};
use sparsegrad_backend::error::invalid;
use sparsegrad_backend::util::int_tensor;
use sparsegrad_backend::{Result, SparseTensor};
use std::cmp::Ordering;

/// |w| of every element, row-major.
pub(crate) fn magnitudes(weight: &Tensor<2>) -> Vec<f64> {
    weight.to_data().iter::<f64>().map(f64::abs).collect()
}

/// "`a` goes before `b`": larger magnitude first, then the earlier position.
fn rank(mags: &[f64], a: usize, b: usize) -> Ordering {
    mags[b].total_cmp(&mags[a]).then(a.cmp(&b))
}

/// The number of elements a density keeps: `round(density * numel)`. Errors unless `density` is
/// in `[0, 1]`.
pub fn density_nnz(numel: usize, density: f64) -> Result<usize> {
    kept_count(numel, density, "density_nnz")
}

pub(crate) fn kept_count(numel: usize, density: f64, operation: &'static str) -> Result<usize> {
    if !(0.0..=1.0).contains(&density) {
        return Err(invalid(operation, format!("density {density} is not in [0, 1]")));
    }
    Ok(((density * numel as f64).round() as usize).min(numel))
}

/// The number of elements a sparsity keeps: `numel - round(sparsity * numel)`. Errors unless
/// `sparsity` is in `[0, 1]`.
pub(crate) fn kept_at_sparsity(numel: usize, sparsity: f64, operation: &'static str) -> Result<usize> {
    if !(0.0..=1.0).contains(&sparsity) {
        return Err(invalid(operation, format!("sparsity {sparsity} is not in [0, 1]")));
    }
    Ok(numel - ((sparsity * numel as f64).round() as usize).min(numel))
}

/// Row-major positions of the `k` largest magnitudes, ascending.
pub(crate) fn top_k_positions(mags: &[f64], k: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..mags.len()).collect();
    if k < order.len() {
        // `rank` is a total order on positions, so the k first are the same whatever the pivot.
        order.select_nth_unstable_by(k, |&a, &b| rank(mags, a, b));
        order.truncate(k);
    }
    order.sort_unstable();
    order
}

/// Row-major positions kept by N:M pruning of a `[rows, cols]` weight, ascending.
pub(crate) fn n_m_positions(mags: &[f64], cols: usize, n: usize, m: usize) -> Vec<usize> {
    let mut kept = Vec::with_capacity(mags.len() / m * n);
    let mut group: Vec<usize> = Vec::with_capacity(m);
    for start in (0..mags.len()).step_by(m) {
        debug_assert!(start % cols + m <= cols, "groups never straddle rows");
        group.clear();
        group.extend(start..start + m);
        group.sort_unstable_by(|&a, &b| rank(mags, a, b));
        let first = kept.len();
        kept.extend_from_slice(&group[..n]);
        kept[first..].sort_unstable();
    }
    kept
}

pub(crate) fn check_n_m(shape: [usize; 2], n: usize, m: usize, operation: &'static str) -> Result<()> {
    if m == 0 || n > m {
        return Err(invalid(operation, format!("{n}:{m} is not a pattern: need 0 <= n <= m and m >= 1")));
    }
    if !shape[1].is_multiple_of(m) {
        return Err(invalid(
            operation,
            format!(
                "the rows of weight {shape:?} have {} elements, not a multiple of the group size m = {m}",
                shape[1]
            ),
        ));
    }
    Ok(())
}

/// A `[rows, cols]` Bool tensor, true at the given row-major positions.
pub(crate) fn mask_of(positions: &[usize], shape: [usize; 2], device: &Device) -> Tensor<2, Bool> {
    let mut keep = vec![false; shape[0] * shape[1]];
    for &p in positions {
        keep[p] = true;
    }
    Tensor::from_data(TensorData::new(keep, shape), device)
}

/// The N:M keep mask of `weight` (true where kept): in every group of `m` consecutive elements
/// of a row, the `n` largest magnitudes. Errors when `n > m`, `m == 0` or the row length is not a
/// multiple of `m`.
pub fn n_m_mask(weight: &Tensor<2>, n: usize, m: usize) -> Result<Tensor<2, Bool>> {
    let shape = weight.dims();
    check_n_m(shape, n, m, "n_m_mask")?;
    Ok(mask_of(&n_m_positions(&magnitudes(weight), shape[1], n, m), shape, &weight.device()))
}

/// N:M magnitude pruning along rows: `weight` with all but the `n` largest magnitudes of every
/// group of `m` consecutive row elements zeroed (see [`n_m_mask`] for the errors).
pub fn prune_n_m(weight: Tensor<2>, n: usize, m: usize) -> Result<Tensor<2>> {
    let shape = weight.dims();
    check_n_m(shape, n, m, "prune_n_m")?;
    let keep = mask_of(&n_m_positions(&magnitudes(&weight), shape[1], n, m), shape, &weight.device());
    Ok(weight.mask_fill(keep.bool_not(), 0.0))
}

/// 2:4 magnitude pruning: [`prune_n_m`] with `n = 2`, `m = 4`.
pub fn prune_2_4(weight: Tensor<2>) -> Result<Tensor<2>> {
    prune_n_m(weight, 2, 4)
}

/// The unstructured keep mask of `weight` at `sparsity` (the fraction of zeros): true at its
/// `numel - round(sparsity * numel)` largest magnitudes. Errors unless `sparsity` is in `[0, 1]`.
///
/// # Examples
///
/// ```
/// use burn::tensor::{Device, Tensor};
/// use sparsegrad_nn::magnitude_mask;
///
/// let w = Tensor::<2>::from_floats([[0.1, -5.0], [3.0, 0.2]], &Device::flex());
/// let keep = magnitude_mask(&w, 0.5).unwrap(); // half of the entries zeroed
/// assert_eq!(keep.into_data().to_vec::<bool>().unwrap(), vec![false, true, true, false]);
/// ```
pub fn magnitude_mask(weight: &Tensor<2>, sparsity: f64) -> Result<Tensor<2, Bool>> {
    let shape = weight.dims();
    let k = kept_at_sparsity(shape[0] * shape[1], sparsity, "magnitude_mask")?;
    Ok(mask_of(&top_k_positions(&magnitudes(weight), k), shape, &weight.device()))
}

/// Unstructured magnitude pruning to `sparsity` (the fraction of zeros): `weight` with its
/// `round(sparsity * numel)` smallest magnitudes zeroed, so `0.9` keeps 10 % of the elements.
/// Errors unless `sparsity` is in `[0, 1]`.
///
/// # Examples
///
/// ```
/// use burn::tensor::{Device, Tensor};
/// use sparsegrad_nn::prune_magnitude;
///
/// let w = Tensor::<2>::from_floats([[0.1, -5.0, 3.0], [2.0, -0.2, 4.0]], &Device::flex());
/// let pruned = prune_magnitude(w, 2.0 / 3.0).unwrap(); // 4 of 6 zeroed, the 2 largest kept
/// assert_eq!(pruned.into_data().to_vec::<f32>().unwrap(), vec![0.0, -5.0, 0.0, 0.0, 0.0, 4.0]);
/// ```
pub fn prune_magnitude(weight: Tensor<2>, sparsity: f64) -> Result<Tensor<2>> {
    let shape = weight.dims();
    let k = kept_at_sparsity(shape[0] * shape[1], sparsity, "prune_magnitude")?;
    let keep = mask_of(&top_k_positions(&magnitudes(&weight), k), shape, &weight.device());
    Ok(weight.mask_fill(keep.bool_not(), 0.0))
}

/// Unstructured magnitude pruning to `sparsity` straight to CSR (int64 indices, as torch):
/// exactly `numel - round(sparsity * numel)` stored entries, the largest magnitudes (kept zeros
/// stay stored, so the count depends only on the shape and the sparsity). The values are gathered
/// from `weight` by a burn op: gradients reach the kept elements of `weight`.
///
/// # Examples
///
/// ```
/// use burn::tensor::{Device, Tensor};
/// use sparsegrad_nn::prune_magnitude_csr;
///
/// let w = Tensor::<2>::from_floats([[0.1, -5.0, 3.0], [2.0, -0.2, 4.0]], &Device::flex());
/// let csr = prune_magnitude_csr(&w, 0.5).unwrap();
/// assert_eq!(csr.nnz(), 3);
/// ```
pub fn prune_magnitude_csr(weight: &Tensor<2>, sparsity: f64) -> Result<SparseTensor<2>> {
    let shape = weight.dims();
    let k = kept_at_sparsity(shape[0] * shape[1], sparsity, "prune_magnitude_csr")?;
    csr_at_positions(weight.clone(), &top_k_positions(&magnitudes(weight), k), DType::I64)
}

/// The entries of `weight` at ascending row-major `positions` as a CSR tensor with indices in
/// `index_dtype`.
pub(crate) fn csr_at_positions(weight: Tensor<2>, positions: &[usize], index_dtype: DType) -> Result<SparseTensor<2>> {
    let [rows, cols] = weight.dims();
    let device = weight.device();
    let (crow, col) = csr_indices(positions, rows, cols, "csr_at_positions")?;
    let nnz = positions.len();
    let flat: Vec<i64> = positions.iter().map(|&p| p as i64).collect();
    let picked = Tensor::<1, Int>::from_data(TensorData::new(flat, [nnz]), (&device, DType::I64));
    let values = weight.reshape([rows * cols]).select(0, picked);
    SparseTensor::csr(
        int_tensor(crow, [rows + 1], index_dtype, &device),
        int_tensor(col, [nnz], index_dtype, &device),
        values,
        [rows, cols],
    )
}

/// An empty vector with room for exactly `len` elements, or an error naming `what` when the
/// allocator refuses (sizes that come from a caller's numbers must not abort the process).
pub(crate) fn try_vec<T>(len: usize, what: &str, operation: &'static str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| {
        let bytes = (len as u128) * (size_of::<T>() as u128);
        invalid(operation, format!("cannot allocate {bytes} bytes for {what} ({len} entries)"))
    })?;
    Ok(v)
}

/// `(crow, col)` of the CSR pattern holding ascending row-major `positions` (all below
/// `rows * cols`) of a `rows x cols` matrix. Errors when the index arrays cannot be allocated.
pub(crate) fn csr_indices(
    positions: &[usize],
    rows: usize,
    cols: usize,
    operation: &'static str,
) -> Result<(Vec<i64>, Vec<i64>)> {
    let mut crow = try_vec(rows.saturating_add(1), "the compressed row indices", operation)?;
    crow.resize(rows + 1, 0i64);
    let mut col = try_vec(positions.len(), "the column indices", operation)?;
    for &p in positions {
        crow[p / cols + 1] += 1;
        col.push((p % cols) as i64);
    }
    for r in 0..rows {
        crow[r + 1] += crow[r];
    }
    Ok((crow, col))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_keep_the_earlier_position() {
        let mags = [1.0, 3.0, 3.0, 1.0, 2.0, f64::NAN];
        assert_eq!(top_k_positions(&mags, 3), vec![1, 2, 5]);
        assert_eq!(top_k_positions(&mags, 4), vec![1, 2, 4, 5]);
        assert_eq!(top_k_positions(&mags, 0), Vec::<usize>::new());
        assert_eq!(n_m_positions(&[1.0, 1.0, 1.0, 1.0, 0.0, 5.0, 0.0, 5.0], 4, 2, 4), vec![0, 1, 5, 7]);
    }

    #[test]
    fn csr_indices_count_rows() {
        assert_eq!(csr_indices(&[1, 2, 7], 3, 3, "test"), Ok((vec![0, 2, 2, 3], vec![1, 2, 1])));
        // A row count the allocator cannot serve is an error, not an abort.
        let e = csr_indices(&[], usize::MAX / 4, 1, "test").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "test: cannot allocate {} bytes for the compressed row indices ({} entries)",
                (usize::MAX / 4 + 1) as u128 * 8,
                usize::MAX / 4 + 1
            )
        );
    }
}
