//! Sparse -> dense: `to_dense`, TensorFlow's `to_dense_with` (a default value for the missing
//! elements) and its validating form.

use crate::algebra::validate;
use crate::alloc::{ensure_allocatable, try_filled, try_vec};
use crate::error::Result;
use crate::layout::Layout;
use crate::movement::{scatter_add_rows, scatter_add_rows_at};
use crate::tensor::SparseTensor;
use crate::util::{numel, reshape};
use burn::tensor::{Tensor, TensorData};

impl<const D: usize> SparseTensor<D> {
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
}
