//! The bridge between the frontends (feature `candle`): burn -> candle -> burn round trips keep
//! the layout, the arrays, the index and value dtypes and the dense matrix (uncoalesced COO
//! included, its duplicates kept); CSC and BSR reach candle as CSR; a candle product on the
//! bridged matrix equals burn's; matrices candle cannot hold are refused by name.
#![cfg(feature = "candle")]

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use sparsegrad::candle::candle_core::{self, Device as CandleDevice};
use sparsegrad::candle::{from_burn, to_burn};
use sparsegrad::prelude::*;

fn ints<const D: usize>(v: Vec<i64>, shape: [usize; D], dtype: DType, device: &Device) -> Tensor<D, Int> {
    Tensor::from_data(TensorData::new(v, shape), (device, dtype))
}

fn dense_of(s: &SparseTensor<2>) -> Vec<f64> {
    s.to_dense().into_data().iter::<f64>().collect()
}

fn candle_dense(s: &sparsegrad::candle::SparseTensor) -> Vec<f64> {
    let d = s.to_dense().unwrap().to_dtype(candle_core::DType::F64).unwrap();
    d.flatten_all().unwrap().to_vec1::<f64>().unwrap()
}

fn int_vec(t: Tensor<1, Int>) -> Vec<i64> {
    t.into_data().iter::<i64>().collect()
}

/// A 4 x 5 matrix with an empty row: [[0, 1, 0, 0, 2], [0, 0, 0, 0, 0], [3, 0, 4, 0, 0], [0, 0, 0, 5, 6]].
fn csr(dtype: DType, index: DType, device: &Device) -> SparseTensor<2> {
    let values = Tensor::<1>::from_data(TensorData::new(vec![1.0f64, 2., 3., 4., 5., 6.], [6]), (device, dtype));
    SparseTensor::csr(
        ints(vec![0, 2, 2, 4, 6], [5], index, device),
        ints(vec![1, 4, 0, 2, 3, 4], [6], index, device),
        values,
        [4, 5],
    )
    .unwrap()
}

#[test]
fn csr_round_trip_keeps_arrays_and_dtypes() {
    let device = Device::flex();
    for (dtype, index) in [(DType::F32, DType::I64), (DType::F64, DType::I32), (DType::F32, DType::I32)] {
        let a = csr(dtype, index, &device);
        let c = from_burn(&a, &CandleDevice::Cpu).unwrap();
        assert_eq!(c.layout(), Layout::Csr);
        assert_eq!((c.shape(), c.nnz()), ([4, 5], 6));
        let want_index = if index == DType::I32 { candle_core::DType::I32 } else { candle_core::DType::I64 };
        let want_value = if dtype == DType::F64 { candle_core::DType::F64 } else { candle_core::DType::F32 };
        assert_eq!((c.index_dtype(), c.dtype()), (want_index, want_value), "{dtype:?} {index:?}");
        let crow = c.crow_indices().unwrap().to_dtype(candle_core::DType::I64).unwrap().to_vec1::<i64>().unwrap();
        assert_eq!(crow, vec![0, 2, 2, 4, 6]);
        assert_eq!(candle_dense(&c), dense_of(&a));

        let back = to_burn(&c, &device).unwrap();
        assert_eq!(back.layout(), Layout::Csr);
        assert_eq!((back.dtype(), back.index_dtype()), (dtype, index));
        assert_eq!(int_vec(back.crow_indices::<1>().unwrap()), vec![0, 2, 2, 4, 6]);
        assert_eq!(int_vec(back.col_indices::<1>().unwrap()), vec![1, 4, 0, 2, 3, 4]);
        assert_eq!(dense_of(&back), dense_of(&a));
    }
}

#[test]
fn uncoalesced_coo_crosses_with_its_duplicates() {
    let device = Device::flex();
    // (0, 1) twice (3 + 4), (2, 0) once; unsorted.
    let a = SparseTensor::coo(
        ints(vec![2, 0, 0, 0, 1, 1], [2, 3], DType::I64, &device),
        Tensor::<1>::from_data(TensorData::new(vec![5.0f32, 3.0, 4.0], [3]), &device),
        [3, 2],
    )
    .unwrap();
    let c = from_burn(&a, &CandleDevice::Cpu).unwrap();
    assert_eq!((c.layout(), c.nnz(), c.is_coalesced()), (Layout::Coo, 3, false));
    assert_eq!(candle_dense(&c), vec![0.0, 7.0, 0.0, 0.0, 5.0, 0.0]);
    let back = to_burn(&c, &device).unwrap();
    assert_eq!((back.layout(), back.nnz()), (Layout::Coo, 3));
    let raw: Vec<i64> = back.indices_raw().unwrap().into_data().iter::<i64>().collect();
    assert_eq!(raw, vec![2, 0, 0, 0, 1, 1]);
    assert_eq!(dense_of(&back), dense_of(&a));
}

#[test]
fn other_layouts_reach_candle_as_csr() {
    let device = Device::flex();
    let a = csr(DType::F32, DType::I64, &device);
    let dense = a.to_dense();
    for s in [a.to_sparse_csc().unwrap(), dense.clone().to_sparse_bsr([2, 1]).unwrap()] {
        let c = from_burn(&s, &CandleDevice::Cpu).unwrap();
        assert_eq!(c.layout(), Layout::Csr, "{:?}", s.layout());
        assert_eq!(candle_dense(&c), dense_of(&a));
    }
}

#[test]
fn empty_matrices_cross() {
    let device = Device::flex();
    let e = SparseTensor::<2>::empty([3, 4], &device);
    let c = from_burn(&e, &CandleDevice::Cpu).unwrap();
    assert_eq!((c.shape(), c.nnz()), ([3, 4], 0));
    let back = to_burn(&c, &device).unwrap();
    assert_eq!(dense_of(&back), vec![0.0; 12]);
    let empty_csr = e.to_sparse_csr().unwrap();
    let c = from_burn(&empty_csr, &CandleDevice::Cpu).unwrap();
    assert_eq!((c.layout(), c.nnz()), (Layout::Csr, 0));
    assert_eq!(to_burn(&c, &device).unwrap().layout(), Layout::Csr);
}

#[test]
fn candle_product_on_the_bridged_matrix_equals_burn() {
    let device = Device::flex();
    let a = csr(DType::F32, DType::I64, &device);
    let x: Vec<f32> = (0..15).map(|k| k as f32 * 0.5 - 3.0).collect();
    let burn_y: Vec<f32> = sparse::mm(&a, Tensor::<2>::from_data(TensorData::new(x.clone(), [5, 3]), &device))
        .into_data()
        .iter::<f32>()
        .collect();
    let c = from_burn(&a, &CandleDevice::Cpu).unwrap();
    let cx = candle_core::Tensor::from_vec(x, (5, 3), &CandleDevice::Cpu).unwrap();
    let candle_y = sparsegrad::candle::mm(&c, &cx).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap();
    assert_eq!(candle_y, burn_y);
}

#[test]
fn hybrid_and_half_matrices_are_refused() {
    let device = Device::flex();
    // Rows 0 and 2 of a [3, 2] matrix stored as dense rows: one sparse dim, one dense dim.
    let hybrid = SparseTensor::coo(
        ints(vec![0, 2], [1, 2], DType::I64, &device),
        Tensor::<2>::from_floats([[1.0, 2.0], [3.0, 4.0]], &device),
        [3, 2],
    )
    .unwrap();
    assert_eq!(hybrid.dense_dim(), 1);
    match from_burn(&hybrid, &CandleDevice::Cpu) {
        Err(SparseError::InvalidArgument { message, .. }) => assert!(message.contains("1 dense"), "{message}"),
        other => panic!("hybrid: {other:?}"),
    }
    let half = csr(DType::F16, DType::I64, &device);
    match from_burn(&half, &CandleDevice::Cpu) {
        Err(SparseError::UnsupportedDtype { component, .. }) => assert_eq!(component, "values"),
        other => panic!("f16 values: {other:?}"),
    }
}
