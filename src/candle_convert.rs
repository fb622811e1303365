//! The bridge between the two frontends (feature `candle`): a burn-side [`SparseTensor<2>`] to
//! a candle-side [`sparsegrad_candle::SparseTensor`] and back. It lives in the facade because
//! `sparsegrad-candle` does not depend on burn (see ARCHITECTURE.md): the facade sees both.
//!
//! A matrix crosses in its layout (COO stays COO, uncoalesced entries included; CSR stays CSR;
//! CSC, BSR and BSC become CSR on the way to candle, which has no other layout), its index dtype
//! (i32 or i64) and its value dtype (f32 or f64). The values cross as data: gradients do not
//! flow between the frameworks (the burn side's autodiff graph ends at the hand-over, and a
//! candle `Var` built from the result starts a new one). Both constructors on the other side are
//! the checked ones.

use crate::{Layout, SparseError, SparseTensor};
use burn::tensor::{DType, Device as BurnDevice, Int, Tensor, TensorData};
use sparsegrad_candle::candle_core::{self, Device as CandleDevice, Tensor as CandleTensor};
use sparsegrad_candle::SparseTensor as CandleSparse;

type Result<T> = std::result::Result<T, SparseError>;

fn candle_err(operation: &'static str) -> impl Fn(candle_core::Error) -> SparseError {
    move |e| SparseError::InvalidArgument { operation, message: e.to_string() }
}

/// A burn `TensorData` read in a dtype it does not hold (not reached: the dtype is matched first).
fn data_err(e: impl std::fmt::Debug) -> SparseError {
    SparseError::InvalidArgument { operation: "sparsegrad::candle::from_burn", message: format!("{e:?}") }
}

/// A burn index tensor as a candle tensor of the same dtype (I32 or I64).
fn indices_to_candle<const D: usize>(t: Tensor<D, Int>, device: &CandleDevice) -> Result<CandleTensor> {
    const OP: &str = "sparsegrad::candle::from_burn";
    let dims = t.dims().to_vec();
    let data = t.into_data();
    match data.dtype() {
        DType::I64 => CandleTensor::from_vec(data.try_to_vec::<i64>().map_err(data_err)?, dims, device),
        DType::I32 => CandleTensor::from_vec(data.try_to_vec::<i32>().map_err(data_err)?, dims, device),
        other => return Err(SparseError::UnsupportedDtype { component: "indices", dtype: format!("{other:?}") }),
    }
    .map_err(candle_err(OP))
}

/// The values `[nnz, 1]` of a burn matrix as a candle vector `[nnz]` (F32 or F64).
fn values_to_candle(values: Tensor<2>, device: &CandleDevice) -> Result<CandleTensor> {
    const OP: &str = "sparsegrad::candle::from_burn";
    let [nnz, width] = values.dims();
    if width != 1 {
        return Err(SparseError::InvalidArgument {
            operation: OP,
            message: format!("only plain matrices cross to candle; these values have {width} elements per entry"),
        });
    }
    let data = values.into_data();
    match data.dtype() {
        DType::F32 => CandleTensor::from_vec(data.try_to_vec::<f32>().map_err(data_err)?, nnz, device),
        DType::F64 => CandleTensor::from_vec(data.try_to_vec::<f64>().map_err(data_err)?, nnz, device),
        other => return Err(SparseError::UnsupportedDtype { component: "values", dtype: format!("{other:?}") }),
    }
    .map_err(candle_err(OP))
}

/// The burn matrix `s` as a candle sparse matrix on `device` (COO stays COO, CSR stays CSR,
/// CSC, BSR and BSC become CSR), with the same index and value dtypes. The values are copied,
/// detached from burn's autodiff graph.
///
/// Errors: a matrix with dense dims or a batch, a value dtype other than f32/f64, or the
/// invariants of `s` broken (an unchecked tensor).
pub fn from_burn(s: &SparseTensor<2>, device: &CandleDevice) -> Result<CandleSparse> {
    const OP: &str = "sparsegrad::candle::from_burn";
    s.check_invariants()?;
    if s.dense_dim() != 0 || s.batch_dim() != 0 {
        return Err(SparseError::InvalidArgument {
            operation: OP,
            message: format!(
                "only plain matrices cross to candle; this one has {} dense and {} batch dims",
                s.dense_dim(),
                s.batch_dim()
            ),
        });
    }
    let shape = s.shape();
    match s.layout() {
        Layout::Coo => {
            let indices = indices_to_candle(s.indices_raw()?, device)?;
            let values = values_to_candle(s.values_flat(), device)?;
            CandleSparse::coo(&indices, values, shape)
        }
        Layout::Csr => {
            let crow = indices_to_candle(s.crow_indices::<1>()?, device)?;
            let col = indices_to_candle(s.col_indices::<1>()?, device)?;
            let values = values_to_candle(s.values_flat(), device)?;
            CandleSparse::csr(&crow, &col, values, shape)
        }
        _ => from_burn(&s.to_sparse_csr()?, device),
    }
}

/// A candle index tensor as a burn one of the same dtype.
fn indices_to_burn<const D: usize>(t: &CandleTensor, shape: [usize; D], device: &BurnDevice) -> Result<Tensor<D, Int>> {
    const OP: &str = "sparsegrad::candle::to_burn";
    let flat = t.flatten_all().map_err(candle_err(OP))?;
    Ok(match t.dtype() {
        candle_core::DType::I32 => Tensor::from_data(
            TensorData::new(flat.to_vec1::<i32>().map_err(candle_err(OP))?, shape),
            (device, DType::I32),
        ),
        _ => {
            let flat = flat.to_dtype(candle_core::DType::I64).map_err(candle_err(OP))?;
            Tensor::from_data(
                TensorData::new(flat.to_vec1::<i64>().map_err(candle_err(OP))?, shape),
                (device, DType::I64),
            )
        }
    })
}

/// The values `[nnz]` of a candle matrix as burn values `[nnz]` (F32 or F64).
fn values_to_burn(values: &CandleTensor, device: &BurnDevice) -> Result<Tensor<1>> {
    const OP: &str = "sparsegrad::candle::to_burn";
    let nnz = values.elem_count();
    match values.dtype() {
        candle_core::DType::F32 => Ok(Tensor::from_data(
            TensorData::new(values.to_vec1::<f32>().map_err(candle_err(OP))?, [nnz]),
            (device, DType::F32),
        )),
        candle_core::DType::F64 => Ok(Tensor::from_data(
            TensorData::new(values.to_vec1::<f64>().map_err(candle_err(OP))?, [nnz]),
            (device, DType::F64),
        )),
        other => Err(SparseError::UnsupportedDtype { component: "values", dtype: other.as_str().to_string() }),
    }
}

/// The candle matrix `s` as a burn sparse matrix on `device`, in its layout (COO, uncoalesced
/// entries included, or CSR), with the same index and value dtypes. The values are copied:
/// build a tensor that requires gradients from the result if burn is to train them.
pub fn to_burn(s: &CandleSparse, device: &BurnDevice) -> Result<SparseTensor<2>> {
    let shape = s.shape();
    let nnz = s.nnz();
    let values = values_to_burn(s.values(), device)?;
    match s.layout() {
        Layout::Coo => {
            let indices = indices_to_burn(&s.indices()?, [2, nnz], device)?;
            SparseTensor::coo(indices, values, shape)
        }
        _ => {
            let crow = indices_to_burn(&s.crow_indices()?, [shape[0] + 1], device)?;
            let col = indices_to_burn(&s.col_indices()?, [nnz], device)?;
            SparseTensor::csr(crow, col, values, shape)
        }
    }
}
