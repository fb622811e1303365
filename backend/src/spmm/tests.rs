//! Tests of the Flex SpMM methods against the definition, the transposed view computed once.

use super::*;
use crate::flex::*;
use burn::backend::flex::FlexTensor;
use burn::backend::Flex;
use burn::tensor::TensorData;
use sparsegrad_kernels::pattern::CsrPattern;
use sparsegrad_kernels::pattern::TransposeCell;

/// The Flex methods on a pattern with an empty row and an empty column, against the
/// definition; the transposed view is computed once into the cell and reused.
#[test]
fn flex_products_use_the_cell() {
    let (crow, col) = (vec![0i64, 2, 2, 3], vec![0i64, 2, 2]);
    let ints = |v: &Vec<i64>| FlexTensor::from_data(TensorData::new(v.clone(), [v.len()]));
    let floats = |v: Vec<f64>, shape: [usize; 2]| FlexTensor::from_data(TensorData::new(v, shape));
    let values = FlexTensor::from_data(TensorData::new(vec![1.0f64, 2.0, 3.0], [3]));
    let g = floats(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [3, 2]);
    let cell = TransposeCell::new();
    assert!(CsrPattern::new(&crow[..], &col[..], 3).is_ok());
    // SAFETY: a valid pattern [3, 3] (checked by the assertion above), its own cell.
    let out = unsafe { Flex::csr_spmm_t(ints(&crow), ints(&col), values.clone(), g.clone(), 3, &cell) };
    // Aᵀ G with A = [[1, 0, 2], [0, 0, 0], [0, 0, 3]]: rows 1·G0, 0, 2·G0 + 3·G2.
    assert_eq!(out.into_data().iter::<f64>().collect::<Vec<_>>(), vec![1.0, 2.0, 0.0, 0.0, 17.0, 22.0]);
    assert!(cell.is_computed());
    // SAFETY: as above.
    let again = unsafe { Flex::csr_spmm_t(ints(&crow), ints(&col), values, g, 3, &cell) };
    assert_eq!(again.into_data().iter::<f64>().collect::<Vec<_>>(), vec![1.0, 2.0, 0.0, 0.0, 17.0, 22.0]);
}

/// The values gathered into column order are reused only for the same values: a buffer
/// written after the gather (copy-on-write moves it), other values on the same pattern, and
/// another range of one buffer each give their own product.
#[test]
fn gathered_values_follow_the_values() {
    let (crow, col) = (vec![0i64, 2, 2, 3], vec![0i64, 2, 2]);
    let ints = |v: &Vec<i64>| FlexTensor::from_data(TensorData::new(v.clone(), [v.len()]));
    let g = FlexTensor::from_data(TensorData::new(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], [3, 2]));
    let cell = TransposeCell::new();
    assert!(CsrPattern::new(&crow[..], &col[..], 3).is_ok());
    // Aᵀ G for A = [[v0, 0, v1], [0, 0, 0], [0, 0, v2]].
    let reference = |v: &[f64]| vec![v[0], 2.0 * v[0], 0.0, 0.0, v[1] + 5.0 * v[2], 2.0 * v[1] + 6.0 * v[2]];
    let product = |values: FlexTensor| {
        // SAFETY: a valid pattern [3, 3] (checked above), its own cell.
        let out = unsafe { Flex::csr_spmm_t(ints(&crow), ints(&col), values, g.clone(), 3, &cell) };
        out.into_data().iter::<f64>().collect::<Vec<_>>()
    };
    let mut values = FlexTensor::from_data(TensorData::new(vec![1.0f64, 2.0, 3.0], [3]));
    assert_eq!(product(values.clone()), reference(&[1.0, 2.0, 3.0]));
    assert!(cell.with_slot(|slot| slot.is_some()), "the gathered values are kept");
    assert_eq!(product(values.clone()), reference(&[1.0, 2.0, 3.0]));
    // The sole owner writes its buffer: never in place while the slot names it.
    assert!(values.try_storage_mut::<f64>().is_none());
    values.storage_mut::<f64>()[0] = 10.0;
    assert_eq!(product(values.clone()), reference(&[10.0, 2.0, 3.0]));
    // Other values on the same pattern, then the first ones again.
    let other = FlexTensor::from_data(TensorData::new(vec![-1.0f64, 0.5, 4.0], [3]));
    assert_eq!(product(other), reference(&[-1.0, 0.5, 4.0]));
    assert_eq!(product(values), reference(&[10.0, 2.0, 3.0]));
    // Two ranges of one buffer.
    let wide = FlexTensor::from_data(TensorData::new(vec![1.0f64, 2.0, 3.0, 4.0], [4]));
    let head = contiguous(wide.clone().narrow(0, 0, 3));
    let tail = contiguous(wide.narrow(0, 1, 3));
    assert_eq!(product(head), reference(&[1.0, 2.0, 3.0]));
    assert_eq!(product(tail), reference(&[2.0, 3.0, 4.0]));
}
