//! Arithmetic on sparse tensors, as methods with torch's names (plus `std::ops` on references
//! for the sparse-sparse and scalar forms):
//!
//! | method | operands | result |
//! |---|---|---|
//! | [`add`](SparseTensor::add), [`sub`](SparseTensor::sub) (`&a + &b`, `&a - &b`) | sparse, sparse | sparse: the union of the patterns |
//! | [`mul`](SparseTensor::mul) (`&a * &b`) | sparse, sparse | sparse: the intersection, coalesced |
//! | [`mul_dense`](SparseTensor::mul_dense) | sparse, dense | sparse, on the sparse operand's pattern |
//! | [`add_dense`](SparseTensor::add_dense) | sparse, dense | dense |
//! | [`mul_scalar`](SparseTensor::mul_scalar), [`div_scalar`](SparseTensor::div_scalar) (`&a * 2.0`, `&a / 2.0`), [`neg`](SparseTensor::neg) (`-&a`) | sparse | sparse, same pattern |
//! | [`pow`](SparseTensor::pow) | sparse, exponent > 0 | sparse, coalesced |
//!
//! Operands must have the same shape and, for two sparse operands, the same number of dense dims
//! and the same value dtype: the plain forms panic naming both shapes (as burn's own ops do), the
//! `try_` forms return the [`SparseError`](crate::SparseError). A sparse result takes the left operand's layout (and
//! block size): other layouts are combined as COO and converted back.
//!
//! COO + COO keeps every entry of both operands (torch adds uncoalesced tensors by concatenating
//! their indices and values): the result holds `a.nnz() + b.nnz()` entries in stable sorted
//! order, the order torch's merge prints. When both operands are coalesced the merge sums
//! equal indices and the result is coalesced.
//!
//! Patterns are index algebra on the host; values move with burn ops (`cat`, `gather_rows`,
//! `scatter_add_rows`, `*`), so every result is differentiable with respect to the values of
//! both operands and the dense operand.

use crate::algebra::{keys, sort};
use crate::error::{invalid, Result};
use crate::layout::Layout;
use crate::movement::{gather_rows, scatter_add_rows};
use crate::tensor::{Indices, SparseTensor};
use crate::util::{int_tensor, numel, reshape};
use burn::tensor::Tensor;

impl<const D: usize> SparseTensor<D> {
    /// torch's `a + b` of two sparse tensors: the union of the patterns, in `self`'s layout.
    /// Panics when the operands do not match (see [`Self::try_add`]).
    pub fn add(&self, other: &Self) -> Self {
        self.try_add(other).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Self::add`] as a `Result`: an error when shapes, dense dims or value dtypes differ, or
    /// when the union cannot be stored in `self`'s layout (a batched compressed tensor whose batch
    /// entries end up with different entry counts).
    pub fn try_add(&self, other: &Self) -> Result<Self> {
        self.check_sparse_operand("add", other)?;
        add_coo(&self.to_sparse_coo(), &other.to_sparse_coo()).into_layout_of(self)
    }

    /// torch's `a - b` of two sparse tensors (`a + (-b)`). Panics when the operands do not
    /// match (see [`Self::try_sub`]).
    pub fn sub(&self, other: &Self) -> Self {
        self.try_sub(other).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Self::sub`] as a `Result`.
    pub fn try_sub(&self, other: &Self) -> Result<Self> {
        self.check_sparse_operand("sub", other)?;
        add_coo(&self.to_sparse_coo(), &other.to_sparse_coo().neg()).into_layout_of(self)
    }

    /// torch's `a * b` of two sparse tensors: elements specified in both, coalesced. Panics when
    /// the operands do not match (see [`Self::try_mul`]).
    pub fn mul(&self, other: &Self) -> Self {
        self.try_mul(other).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Self::mul`] as a `Result`.
    pub fn try_mul(&self, other: &Self) -> Result<Self> {
        self.check_sparse_operand("mul", other)?;
        let (a, b) = (self.to_sparse_coo().coalesce(), other.to_sparse_coo().coalesce());
        let (ea, eb) = (a.entries()?, b.entries()?);
        let (from_a, from_b, common) = intersect_sorted(&ea.keys, &eb.keys);
        let values = gather_rows(ea.values, from_a) * gather_rows(eb.values, from_b);
        a.coo_with_keys(&ea.sizes, &common, values, true).into_layout_of(self)
    }

    /// torch's `sparse * dense`: a sparse result on `self`'s pattern, each stored value times the
    /// dense element (or dense sub-tensor, for hybrid values) at its position. Panics when the
    /// shapes differ (see [`Self::try_mul_dense`]).
    pub fn mul_dense(&self, dense: Tensor<D>) -> Self {
        self.try_mul_dense(dense).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Self::mul_dense`] as a `Result`. Duplicates of an uncoalesced tensor are each
    /// multiplied, which is exact: the product distributes over their sum.
    pub fn try_mul_dense(&self, dense: Tensor<D>) -> Result<Self> {
        self.check_dense_operand("mul_dense", &dense)?;
        if let Some((keys, values)) = self.device_keys()? {
            // The keys computed where the indices live (`IndexKernels`): nothing read back.
            let item = values.dims()[1];
            let items = numel(&self.shape[..D - self.dense_dim]);
            let at_entries = crate::movement::gather_rows_at(reshape(dense, [items, item]), keys);
            return Ok(self.with_values(reshape(values * at_entries, self.values.dims())));
        }
        let e = self.entries()?;
        let item = e.values.dims()[1];
        let keys: Vec<i64> = e.keys.iter().map(|&k| k as i64).collect();
        let at_entries = gather_rows(reshape(dense, [numel(&e.sizes), item]), keys);
        Ok(self.with_values(reshape(e.values * at_entries, self.values.dims())))
    }

    /// torch's `sparse + dense`: a dense tensor (every element of the dense operand is
    /// specified). Panics when the shapes differ (see [`Self::try_add_dense`]).
    pub fn add_dense(&self, dense: Tensor<D>) -> Tensor<D> {
        self.try_add_dense(dense).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Self::add_dense`] as a `Result`.
    pub fn try_add_dense(&self, dense: Tensor<D>) -> Result<Tensor<D>> {
        self.check_dense_operand("add_dense", &dense)?;
        Ok(self.to_dense() + dense)
    }

    /// torch's `s * scalar`: the values scaled, same pattern (no coalescing: scaling distributes
    /// over duplicates).
    pub fn mul_scalar(&self, scalar: f64) -> Self {
        self.with_values(self.values.clone().mul_scalar(scalar))
    }

    /// torch's `s / scalar`: the values divided, same pattern. Dividing by zero turns stored
    /// values into ±inf or NaN while unspecified elements stay zero, as torch.
    pub fn div_scalar(&self, scalar: f64) -> Self {
        self.with_values(self.values.clone().div_scalar(scalar))
    }

    /// torch's `-s`: the values negated, same pattern.
    pub fn neg(&self) -> Self {
        self.with_values(self.values.clone().neg())
    }

    /// torch's `s.pow(exponent)` for `exponent > 0` (`0^p = 0`): the stored values raised to
    /// `exponent` after coalescing (a power of a sum of duplicates is not the sum of their
    /// powers). Panics on an exponent that would make the result dense (see [`Self::try_pow`]).
    pub fn pow(&self, exponent: f64) -> Self {
        self.try_pow(exponent).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Self::pow`] as a `Result`: an error for `exponent <= 0` or NaN, whose result is dense
    /// (`0^0 = 1`, `0^-1 = inf`).
    pub fn try_pow(&self, exponent: f64) -> Result<Self> {
        if exponent.is_nan() || exponent <= 0.0 {
            return Err(invalid(
                "pow",
                format!("exponent {exponent} does not map 0 to 0, so the result is dense: convert to dense first (`s.to_dense().powf_scalar({exponent})`)"),
            ));
        }
        let c = self.coalesce();
        Ok(c.with_values(c.values.clone().powf_scalar(exponent)))
    }

    /// Same shape, same number of dense dims and same value dtype (the layouts may differ).
    fn check_sparse_operand(&self, operation: &'static str, other: &Self) -> Result<()> {
        self.check_invariants()?;
        other.check_invariants()?;
        if self.shape != other.shape {
            return Err(invalid(operation, format!("shapes {:?} and {:?} do not match", self.shape, other.shape)));
        }
        if self.dense_dim != other.dense_dim {
            return Err(invalid(
                operation,
                format!(
                    "operands of shape {:?} have {} and {} dense dims: they must match",
                    self.shape, self.dense_dim, other.dense_dim
                ),
            ));
        }
        if self.dtype() != other.dtype() {
            return Err(invalid(
                operation,
                format!("value dtypes {:?} and {:?} do not match", self.dtype(), other.dtype()),
            ));
        }
        Ok(())
    }

    fn check_dense_operand(&self, operation: &'static str, dense: &Tensor<D>) -> Result<()> {
        self.check_invariants()?;
        if dense.dims() != self.shape {
            return Err(invalid(
                operation,
                format!("shapes {:?} (sparse) and {:?} (dense) do not match", self.shape, dense.dims()),
            ));
        }
        if dense.dtype() != self.dtype() {
            return Err(invalid(
                operation,
                format!("value dtypes {:?} (sparse) and {:?} (dense) do not match", self.dtype(), dense.dtype()),
            ));
        }
        Ok(())
    }

    /// A COO tensor shaped like `self` (a COO tensor) holding entries at `keys` over `sizes`.
    pub(crate) fn coo_with_keys(&self, sizes: &[usize], keys: &[u64], values: Tensor<2>, coalesced: bool) -> Self {
        self.coo_with_coords(sizes, keys::delinearize(keys, sizes), keys.len(), values, coalesced)
    }

    /// [`Self::coo_with_keys`] from coordinates already laid out `[sizes.len(), n]`.
    fn coo_with_coords(&self, sizes: &[usize], coords: Vec<i64>, n: usize, values: Tensor<2>, coalesced: bool) -> Self {
        let indices = int_tensor(coords, [sizes.len(), n], self.index_dtype(), &self.device());
        Self {
            layout: Layout::Coo,
            batch_dim: 0,
            blocksize: None,
            indices: Indices::Coo(indices),
            values,
            coalesced,
            ..self.clone()
        }
    }

    /// This COO result in `template`'s layout and block size.
    fn into_layout_of(self, template: &Self) -> Result<Self> {
        match template.layout {
            Layout::Coo => Ok(self),
            layout => self.to_layout(layout, template.blocksize),
        }
    }
}

/// The union of two COO tensors of the same shape and structure: every entry of both, stably
/// sorted; merged (duplicates summed) when both are coalesced.
fn add_coo<const D: usize>(a: &SparseTensor<D>, b: &SparseTensor<D>) -> SparseTensor<D> {
    let (ea, eb) = (a.entries().expect("checked operands"), b.entries().expect("checked operands"));
    let sizes = ea.sizes;
    let mut all = ea.keys;
    all.extend_from_slice(&eb.keys);
    let values = match (a.nnz(), b.nnz()) {
        (_, 0) => ea.values,
        (0, _) => eb.values,
        _ => Tensor::cat(vec![ea.values, eb.values], 0),
    };
    if a.coalesced && b.coalesced {
        let plan = sort::coalesce_plan(all, &sizes);
        let values = if plan.identity { values } else { scatter_add_rows(values, plan.segment, plan.unique) };
        return a.coo_with_coords(&sizes, plan.coords, plan.unique, values, true);
    }
    if sort::is_sorted(&all) {
        let coalesced = sort::is_strictly_increasing(&all);
        return a.coo_with_keys(&sizes, &all, values, coalesced);
    }
    let perm = sort::stable_sort_perm(&all, numel(&sizes) as u64);
    let sorted: Vec<u64> = perm.iter().map(|&p| all[p as usize]).collect();
    let coalesced = sort::is_strictly_increasing(&sorted);
    a.coo_with_keys(&sizes, &sorted, gather_rows(values, perm), coalesced)
}

/// Positions in `a` and in `b` of the keys both hold, and those keys, for strictly increasing
/// `a` and `b` (a merge walk).
fn intersect_sorted(a: &[u64], b: &[u64]) -> (Vec<i64>, Vec<i64>, Vec<u64>) {
    let (mut i, mut j) = (0, 0);
    let (mut from_a, mut from_b, mut common) = (Vec::new(), Vec::new(), Vec::new());
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            core::cmp::Ordering::Less => i += 1,
            core::cmp::Ordering::Greater => j += 1,
            core::cmp::Ordering::Equal => {
                from_a.push(i as i64);
                from_b.push(j as i64);
                common.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    (from_a, from_b, common)
}

impl<const D: usize> core::ops::Add for &SparseTensor<D> {
    type Output = SparseTensor<D>;

    /// [`SparseTensor::add`].
    fn add(self, other: Self) -> SparseTensor<D> {
        SparseTensor::add(self, other)
    }
}

impl<const D: usize> core::ops::Sub for &SparseTensor<D> {
    type Output = SparseTensor<D>;

    /// [`SparseTensor::sub`].
    fn sub(self, other: Self) -> SparseTensor<D> {
        SparseTensor::sub(self, other)
    }
}

impl<const D: usize> core::ops::Mul for &SparseTensor<D> {
    type Output = SparseTensor<D>;

    /// [`SparseTensor::mul`] (elementwise, the intersection of the patterns).
    fn mul(self, other: Self) -> SparseTensor<D> {
        SparseTensor::mul(self, other)
    }
}

impl<const D: usize> core::ops::Mul<f64> for &SparseTensor<D> {
    type Output = SparseTensor<D>;

    /// [`SparseTensor::mul_scalar`].
    fn mul(self, scalar: f64) -> SparseTensor<D> {
        self.mul_scalar(scalar)
    }
}

impl<const D: usize> core::ops::Div<f64> for &SparseTensor<D> {
    type Output = SparseTensor<D>;

    /// [`SparseTensor::div_scalar`].
    fn div(self, scalar: f64) -> SparseTensor<D> {
        self.div_scalar(scalar)
    }
}

impl<const D: usize> core::ops::Neg for &SparseTensor<D> {
    type Output = SparseTensor<D>;

    /// [`SparseTensor::neg`].
    fn neg(self) -> SparseTensor<D> {
        SparseTensor::neg(self)
    }
}

#[cfg(test)]
mod tests {
    use super::intersect_sorted;

    #[test]
    fn intersection_of_sorted_keys() {
        let (a, b, k) = intersect_sorted(&[1, 3, 5, 8], &[0, 3, 4, 8, 9]);
        assert_eq!((a, b, k), (vec![1, 3], vec![1, 3], vec![3, 8]));
        assert_eq!(intersect_sorted(&[], &[1, 2]).2, Vec::<u64>::new());
    }
}
