//! Moving and casting a sparse tensor as a whole, with burn's names: [`SparseTensor::to_device`]
//! (indices and values together), [`SparseTensor::cast`] (the values' float dtype, differentiable
//! as burn's `cast` is) and [`SparseTensor::cast_indices`] (the index dtype, checked).
//!
//! None of them changes the pattern, so the transposed view a compressed tensor already computed
//! (`TransposeCell`, host data independent of the index dtype) is kept, and so is the outcome of
//! an unchecked tensor's check.

use crate::algebra::validate::{check_shape, index_dtype_max, index_type};
use crate::error::{Result, SparseError};
use crate::tensor::{Indices, SparseTensor};
use burn::tensor::{DType, Device, FloatDType, Int, IntDType, Tensor};

impl<const D: usize> SparseTensor<D> {
    /// The tensor on `device`: indices and values moved together (burn's `to_device`; the
    /// values keep their place in the autodiff graph).
    pub fn to_device(&self, device: &Device) -> Self {
        let indices = match &self.indices {
            Indices::Coo(i) => Indices::Coo(i.clone().to_device(device)),
            Indices::Compressed { compressed, plain, transposed } => Indices::Compressed {
                compressed: compressed.clone().to_device(device),
                plain: plain.clone().to_device(device),
                transposed: transposed.clone(),
            },
        };
        Self { indices, values: self.values.clone().to_device(device), ..self.clone() }
    }

    /// The tensor with its values cast to `dtype` (burn's `cast`: differentiable, a no-op for the
    /// current dtype); the indices are shared.
    pub fn cast(&self, dtype: FloatDType) -> Self {
        Self { values: self.values.clone().cast(dtype), ..self.clone() }
    }

    /// The tensor with its indices stored in `dtype` (torch's index dtypes: `int8` to `int64`).
    /// Checked: a narrower dtype must hold every dimension of the shape and, for the compressed
    /// layouts, the number of specified elements (the invariant the constructors establish), so
    /// no index is ever narrowed into another value. Errors:
    /// [`SparseError::UnsupportedDtype`] for an unsigned dtype, [`SparseError::DimensionTooLarge`]
    /// naming the first dimension (or `nse`) the dtype cannot hold, and the tensor's own
    /// invariant error when it came from an unchecked constructor and is invalid.
    pub fn cast_indices(&self, dtype: IntDType) -> Result<Self> {
        let dtype = DType::from(dtype);
        let target = index_type(dtype)?;
        self.check_invariants()?;
        // The shape first: the same check (and error) a constructor with this dtype gives.
        check_shape(&self.shape[..self.batch_dim + self.sparse_dim], dtype)?;
        let (max, name) = index_dtype_max(dtype)?;
        let cast = |t: &Tensor<2, Int>| {
            if index_type(t.dtype()).ok() == Some(target) {
                t.clone()
            } else {
                t.clone().cast(dtype)
            }
        };
        let indices = match &self.indices {
            Indices::Coo(i) => Indices::Coo(cast(i)),
            Indices::Compressed { compressed, plain, transposed } => {
                // Compressed indices count entries: `nse` itself must fit.
                let nse = plain.dims()[1];
                if nse as u128 > max as u128 {
                    return Err(SparseError::DimensionTooLarge {
                        component: "nse",
                        dim: self.batch_dim,
                        size: nse,
                        index_dtype: name,
                        max,
                    });
                }
                Indices::Compressed { compressed: cast(compressed), plain: cast(plain), transposed: transposed.clone() }
            }
        };
        Ok(Self { indices, ..self.clone() })
    }
}
