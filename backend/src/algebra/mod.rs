//! Index algebra: the host kernels of `sparsegrad-kernels` (keys, sorting, compress/expand,
//! validation, non-zeros), with the validation helpers that take burn's `DType`, and the
//! macros that dispatch a generic kernel over the typed views of `host`.

pub use sparsegrad_kernels::algebra::{compress, keys, nonzero, sort, IndexElem};

/// The layouts' invariants: the kernels' checks, and the ones on burn's index dtypes.
pub mod validate {
    use burn::tensor::DType;
    pub use sparsegrad_kernels::algebra::validate::*;
    use sparsegrad_kernels::{IndexType, Result, SparseError};

    /// The index type of an index dtype, or the error naming an unsupported one.
    pub fn index_type(dtype: DType) -> Result<IndexType> {
        // By variant, not by `==`: `DType` carries payloads (quantisation schemes) whose bytes a
        // comparison of two payload-free variants may read uninitialised.
        match dtype {
            DType::I64 => Ok(IndexType::I64),
            DType::I32 => Ok(IndexType::I32),
            DType::I16 => Ok(IndexType::I16),
            DType::I8 => Ok(IndexType::I8),
            other => Err(SparseError::UnsupportedDtype { component: "indices", dtype: format!("{other:?}") }),
        }
    }

    /// The largest value an index dtype holds, and its torch-style name.
    pub fn index_dtype_max(dtype: DType) -> Result<(i64, &'static str)> {
        let t = index_type(dtype)?;
        Ok((t.max(), t.name()))
    }

    /// Every dimension fits the index dtype (Julia's `check_Ti`) and the element count fits in i64.
    pub fn check_shape(shape: &[usize], index_dtype: DType) -> Result<()> {
        sparsegrad_kernels::algebra::validate::check_shape(shape, index_type(index_dtype)?)
    }
}

/// Dispatches a generic kernel call over the variants of an [`crate::host::IntSlice`].
#[macro_export]
#[doc(hidden)]
macro_rules! match_ints {
    ($slice:expr, $s:ident => $body:expr) => {
        match $slice {
            $crate::host::IntSlice::I64($s) => $body,
            $crate::host::IntSlice::I32($s) => $body,
            $crate::host::IntSlice::I16($s) => $body,
            $crate::host::IntSlice::I8($s) => $body,
        }
    };
}

/// Dispatches a generic kernel call over the variants of an [`crate::host::FloatSlice`].
#[macro_export]
#[doc(hidden)]
macro_rules! match_floats {
    ($slice:expr, $s:ident => $body:expr) => {
        match $slice {
            $crate::host::FloatSlice::F64($s) => $body,
            $crate::host::FloatSlice::F32($s) => $body,
            $crate::host::FloatSlice::F16($s) => $body,
            $crate::host::FloatSlice::BF16($s) => $body,
        }
    };
}
