//! Host index buffers: the indices a candle sparse tensor keeps on the host for its ops, read
//! from candle index tensors and checked on the way.
//!
//! Indices are untracked integer work (index algebra, in ARCHITECTURE.md's terms), so they live in `Vec`s held by
//! the tensor and its ops rather than in candle tensors: the kernels read them as slices with no
//! device round trip. Two element types cover candle's index dtypes: `i64` (candle `I64`) and
//! `i32` (candle `I32`, and `U32` — candle's usual index dtype, which the kernels do not take —
//! when every dimension fits int32). A CSR pattern keeps both of its arrays in one type
//! ([`CsrIndices`]), so a kernel call dispatches over two cases, not four.

use candle_core::{DType, Device, Tensor};
use sparsegrad_kernels::algebra::validate::check_shape;
use sparsegrad_kernels::algebra::IndexElem;
use sparsegrad_kernels::IndexType;
use sparsegrad_kernels::{Result, SparseError};

/// A flat index buffer (COO indices, `[2, nnz]` row-major).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IndexVec {
    I32(Vec<i32>),
    I64(Vec<i64>),
}

/// Calls a generic body with an [`IndexVec`]'s slice.
macro_rules! with_index {
    ($v:expr, $s:ident => $body:expr) => {
        match $v {
            $crate::indices::IndexVec::I32(v) => {
                let $s: &[i32] = v;
                $body
            }
            $crate::indices::IndexVec::I64(v) => {
                let $s: &[i64] = v;
                $body
            }
        }
    };
}
pub(crate) use with_index;

impl IndexVec {
    /// Number of elements.
    pub fn len(&self) -> usize {
        with_index!(self, s => s.len())
    }

    /// The candle dtype of the buffer.
    pub fn dtype(&self) -> DType {
        match self {
            IndexVec::I32(_) => DType::I32,
            IndexVec::I64(_) => DType::I64,
        }
    }

    /// Element `i` widened to i64.
    pub fn get(&self, i: usize) -> i64 {
        with_index!(self, s => s[i].to_i64())
    }

    /// `values` (each fitting `dtype`) stored as `dtype` (`I32` or `I64`); a value that does
    /// not fit is a panic naming it, never a silent narrowing.
    pub fn from_i64(values: Vec<i64>, dtype: DType) -> Self {
        match dtype {
            // Callers pass values that fit: indices checked against dimensions that fit int32,
            // positions checked against int32 by `convert::fitting`.
            DType::I32 => IndexVec::I32(
                values
                    .into_iter()
                    .map(|v| i32::try_from(v).unwrap_or_else(|_| panic!("index {v} does not fit int32")))
                    .collect(),
            ),
            _ => IndexVec::I64(values),
        }
    }

    /// The buffer as a candle tensor of `shape` on `device`.
    pub fn to_tensor(&self, shape: &[usize], device: &Device) -> candle_core::Result<Tensor> {
        match self {
            IndexVec::I32(v) => Tensor::from_slice(v, shape, device),
            IndexVec::I64(v) => Tensor::from_slice(v, shape, device),
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.len() * self.dtype().size_in_bytes()
    }
}

/// The arrays of a CSR pattern, both of one index type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CsrIndices {
    I32 { crow: Vec<i32>, col: Vec<i32> },
    I64 { crow: Vec<i64>, col: Vec<i64> },
}

/// Calls a generic body with a [`CsrIndices`]' two slices.
macro_rules! with_csr {
    ($v:expr, |$c:ident, $p:ident| $body:expr) => {
        match $v {
            $crate::indices::CsrIndices::I32 { crow, col } => {
                let ($c, $p): (&[i32], &[i32]) = (crow, col);
                $body
            }
            $crate::indices::CsrIndices::I64 { crow, col } => {
                let ($c, $p): (&[i64], &[i64]) = (crow, col);
                $body
            }
        }
    };
}
pub(crate) use with_csr;

impl CsrIndices {
    /// Pairs two buffers of the same type (the constructors have checked that they are).
    pub fn new(crow: IndexVec, col: IndexVec) -> Self {
        match (crow, col) {
            (IndexVec::I32(crow), IndexVec::I32(col)) => CsrIndices::I32 { crow, col },
            (crow, col) => CsrIndices::I64 { crow: widen(crow), col: widen(col) },
        }
    }

    /// The candle dtype of both arrays.
    pub fn dtype(&self) -> DType {
        match self {
            CsrIndices::I32 { .. } => DType::I32,
            CsrIndices::I64 { .. } => DType::I64,
        }
    }

    /// Bytes held by both arrays.
    pub fn bytes(&self) -> usize {
        match self {
            CsrIndices::I32 { crow, col } => 4 * (crow.len() + col.len()),
            CsrIndices::I64 { crow, col } => 8 * (crow.len() + col.len()),
        }
    }

    /// `(crow, col)` as buffers.
    pub fn split(&self) -> (IndexVec, IndexVec) {
        match self.clone() {
            CsrIndices::I32 { crow, col } => (IndexVec::I32(crow), IndexVec::I32(col)),
            CsrIndices::I64 { crow, col } => (IndexVec::I64(crow), IndexVec::I64(col)),
        }
    }
}

fn widen(v: IndexVec) -> Vec<i64> {
    match v {
        IndexVec::I32(v) => v.into_iter().map(i64::from).collect(),
        IndexVec::I64(v) => v,
    }
}

/// The index type whose rules (Julia's `check_Ti`: every dimension fits) apply to a buffer.
pub(crate) fn rule_dtype(dtype: DType) -> IndexType {
    if dtype == DType::I32 {
        IndexType::I32
    } else {
        IndexType::I64
    }
}

/// An index tensor read to the host, before its bounds are checked.
pub(crate) struct Unchecked {
    /// The values, in a type that holds every value read (so an out-of-range `u32` is reported
    /// as itself).
    pub values: IndexVec,
    /// The type to keep them in once checked.
    store_as: DType,
}

impl Unchecked {
    /// The dtype the buffer will be stored in.
    pub fn store_as(&self) -> DType {
        self.store_as
    }

    /// The buffer in its storage type; kept wide when a value does not fit it (an unchecked
    /// out-of-range `u32`), so nothing is narrowed into another index.
    pub fn finish(self) -> IndexVec {
        match self.values {
            IndexVec::I64(v) if self.store_as == DType::I32 && v.iter().all(|&x| i32::try_from(x).is_ok()) => {
                IndexVec::from_i64(v, DType::I32)
            }
            v => v,
        }
    }
}

/// Reads an index tensor to the host, checking that `shape` fits its dtype.
///
/// `I64` and `I32` keep their type; `U32` is stored as `i32` when every dimension of `shape`
/// fits int32 (its in-bounds values then do too) and as `i64` otherwise. Other dtypes are an
/// [`SparseError::UnsupportedDtype`] naming `component`.
pub(crate) fn read_indices(component: &'static str, t: &Tensor, shape: &[usize]) -> Result<Unchecked> {
    let read_err = |e: candle_core::Error| SparseError::InvalidArgument {
        operation: component,
        message: format!("reading the index tensor: {e}"),
    };
    let flat = t.flatten_all().map_err(read_err)?;
    match t.dtype() {
        DType::I64 => {
            check_shape(shape, IndexType::I64)?;
            Ok(Unchecked { values: IndexVec::I64(flat.to_vec1().map_err(read_err)?), store_as: DType::I64 })
        }
        DType::I32 => {
            check_shape(shape, IndexType::I32)?;
            Ok(Unchecked { values: IndexVec::I32(flat.to_vec1().map_err(read_err)?), store_as: DType::I32 })
        }
        DType::U32 => {
            let wide: Vec<i64> = flat.to_vec1::<u32>().map_err(read_err)?.into_iter().map(i64::from).collect();
            let store_as = if check_shape(shape, IndexType::I32).is_ok() {
                DType::I32
            } else {
                check_shape(shape, IndexType::I64)?;
                DType::I64
            };
            Ok(Unchecked { values: IndexVec::I64(wide), store_as })
        }
        other => Err(SparseError::UnsupportedDtype {
            component,
            dtype: format!("{} (expected i64, i32 or u32)", other.as_str()),
        }),
    }
}
