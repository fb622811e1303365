//! Tests of the Flex SpMM methods against the definition, the transposed view computed once.

use super::*;
use crate::flex::*;
use crate::operand::CsrOperand;
use burn::backend::flex::FlexTensor;
use burn::backend::Flex;
use burn::tensor::TensorData;
use sparsegrad_kernels::pattern::TransposeCell;
use std::sync::Arc;

fn ints(v: &[i64]) -> FlexTensor {
    FlexTensor::from_data(TensorData::new(v.to_vec(), [v.len()]))
}

/// The pattern of `crow` and `col` over `k` columns, with `cell`.
fn pattern(crow: &[i64], col: &[i64], k: usize, cell: &Arc<TransposeCell>) -> CsrOperand<Flex> {
    CsrOperand::new(ints(crow), ints(col), k, cell.clone())
}

/// The Flex methods on a pattern with an empty row and an empty column, against the
/// definition; the transposed view is computed once into the cell and reused.
#[test]
fn flex_products_use_the_cell() {
    let (crow, col) = (vec![0i64, 2, 2, 3], vec![0i64, 2, 2]);
    let floats = |v: Vec<f64>, shape: [usize; 2]| FlexTensor::from_data(TensorData::new(v, shape));
    let values = FlexTensor::from_data(TensorData::new(vec![1.0f64, 2.0, 3.0], [3]));
    let g = floats(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [3, 2]);
    let cell = Arc::new(TransposeCell::new());
    let out = Flex::csr_spmm_t(pattern(&crow, &col, 3, &cell), values.clone(), g.clone());
    // Aᵀ G with A = [[1, 0, 2], [0, 0, 0], [0, 0, 3]]: rows 1·G0, 0, 2·G0 + 3·G2.
    assert_eq!(out.into_data().iter::<f64>().collect::<Vec<_>>(), vec![1.0, 2.0, 0.0, 0.0, 17.0, 22.0]);
    assert!(cell.is_computed());
    let again = Flex::csr_spmm_t(pattern(&crow, &col, 3, &cell), values, g);
    assert_eq!(again.into_data().iter::<f64>().collect::<Vec<_>>(), vec![1.0, 2.0, 0.0, 0.0, 17.0, 22.0]);
}

/// The values gathered into column order are reused only for the same values: a buffer
/// written after the gather (copy-on-write moves it), other values on the same pattern, and
/// another range of one buffer each give their own product.
#[test]
fn gathered_values_follow_the_values() {
    let (crow, col) = (vec![0i64, 2, 2, 3], vec![0i64, 2, 2]);
    let g = FlexTensor::from_data(TensorData::new(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], [3, 2]));
    let cell = Arc::new(TransposeCell::new());
    // Aᵀ G for A = [[v0, 0, v1], [0, 0, 0], [0, 0, v2]].
    let reference = |v: &[f64]| vec![v[0], 2.0 * v[0], 0.0, 0.0, v[1] + 5.0 * v[2], 2.0 * v[1] + 6.0 * v[2]];
    let product = |values: FlexTensor| {
        let out = Flex::csr_spmm_t(pattern(&crow, &col, 3, &cell), values, g.clone());
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

/// A pattern that is not valid CSR, or a dense operand of another shape, is a panic naming it,
/// on the Flex kernels and the generic defaults alike (`csr_spmm`, `csr_spmm_t`, the backward
/// and `sparse_sddmm`).
#[test]
fn bad_operands_are_refused() {
    use crate::operand::{spmm_dims, spmm_t_dims};
    use crate::sddmm::SparseSddmm;
    let f = |v: Vec<f64>, shape: Vec<usize>| FlexTensor::from_data(TensorData::new(v, shape));
    let fresh = || Arc::new(TransposeCell::new());
    let message = |run: &dyn Fn()| {
        let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).expect_err("accepted");
        err.downcast::<String>().map(|s| *s).unwrap_or_default()
    };
    // A [3, 3] with 4 entries; x [3, 2], g [3, 2].
    let (values, x) = (f(vec![1.0; 4], vec![4]), f(vec![1.0; 6], vec![3, 2]));
    let ok = |cell| pattern(&[0, 2, 2, 4], &[0, 2, 1, 2], 3, cell);
    let bad_column = pattern(&[0, 2, 2, 4], &[0, 3, 1, 2], 3, &fresh());
    let bad_pointers = pattern(&[0, 3, 2, 4], &[0, 2, 1, 2], 3, &fresh());
    // The generic defaults (as a backend without kernels runs them), shapes checked as the
    // trait's default methods check them.
    let default_spmm = |p: CsrOperand<Flex>, v: FlexTensor, x: FlexTensor| {
        spmm_dims("csr_spmm", &p, &v, &x);
        default::spmm::<Flex>("csr_spmm", p, v, x, false)
    };
    let default_spmm_t = |p: CsrOperand<Flex>, v: FlexTensor, g: FlexTensor| {
        spmm_t_dims("csr_spmm_t", &p, &v, &g);
        default::spmm::<Flex>("csr_spmm_t", p, v, g, true)
    };
    for (p, which) in [(&bad_column, "col"), (&bad_pointers, "crow")] {
        let m = message(&|| drop(Flex::csr_spmm(p.clone(), values.clone(), x.clone())));
        assert!(m.contains("csr_spmm") && m.contains("not valid") && m.contains(which), "{m}");
        let m = message(&|| drop(Flex::csr_spmm_t(p.clone(), values.clone(), x.clone())));
        assert!(m.contains("csr_spmm_t") && m.contains("not valid") && m.contains(which), "{m}");
        let m = message(&|| drop(Flex::csr_spmm_backward(p.clone(), values.clone(), x.clone(), x.clone(), false)));
        assert!(m.contains("not valid") && m.contains(which), "{m}");
        let m = message(&|| drop(Flex::sparse_sddmm(p.clone(), x.clone(), x.clone())));
        assert!(m.contains("sparse_sddmm") && m.contains("not valid") && m.contains(which), "{m}");
        let m = message(&|| drop(default_spmm(p.clone(), values.clone(), x.clone())));
        assert!(m.contains("csr_spmm: the pattern is not valid"), "{m}");
        let m = message(&|| drop(default_spmm_t(p.clone(), values.clone(), x.clone())));
        assert!(m.contains("csr_spmm_t: the pattern is not valid"), "{m}");
        let m = message(&|| drop(default::sddmm::<Flex>("sparse_sddmm", p.clone(), x.clone(), x.clone())));
        assert!(m.contains("sparse_sddmm: the pattern is not valid"), "{m}");
    }
    // Dense operands of other shapes (a transposed view keeps its logical shape).
    let a = ok(&fresh());
    let short = f(vec![1.0; 4], vec![2, 2]);
    let short_t = f(vec![1.0; 4], vec![2, 2]).transpose(0, 1);
    let short_values = f(vec![1.0; 3], vec![3]);
    let m = message(&|| drop(Flex::csr_spmm(a.clone(), values.clone(), short.clone())));
    assert!(m.contains("csr_spmm: x is [2, 2], expected [3, 2]"), "{m}");
    let m = message(&|| drop(Flex::csr_spmm_stored_transposed(a.clone(), values.clone(), short_t.clone())));
    assert!(m.contains("csr_spmm: x is [2, 2], expected [3, 2]"), "{m}");
    let m = message(&|| drop(Flex::csr_spmm(a.clone(), short_values.clone(), x.clone())));
    assert!(m.contains("csr_spmm: values is [3], expected [4]"), "{m}");
    let m = message(&|| drop(Flex::csr_spmm_t(a.clone(), values.clone(), short.clone())));
    assert!(m.contains("csr_spmm_t: g is [2, 2], expected [3, 2]"), "{m}");
    let m = message(&|| drop(Flex::csr_spmm_t_stored_transposed(a.clone(), values.clone(), short_t.clone())));
    assert!(m.contains("csr_spmm_t: g is [2, 2], expected [3, 2]"), "{m}");
    let m = message(&|| drop(Flex::csr_spmm_backward(a.clone(), values.clone(), short.clone(), x.clone(), false)));
    assert!(m.contains("csr_spmm_backward: g is [2, 2], expected [3, 2]"), "{m}");
    let m = message(&|| drop(Flex::sparse_sddmm(a.clone(), x.clone(), short.clone())));
    assert!(m.contains("sparse_sddmm: b is [2, 2], expected [3, 2]"), "{m}");
    let m = message(&|| drop(Flex::sparse_sddmm(a.clone(), short.clone(), x.clone())));
    assert!(m.contains("sparse_sddmm: a is [2, 2], expected [3, 2]"), "{m}");
    // The valid operands pass, and the defaults agree with the kernels.
    let host = |t: FlexTensor| t.into_data().iter::<f64>().collect::<Vec<_>>();
    assert_eq!(
        host(Flex::csr_spmm(a.clone(), values.clone(), x.clone())),
        host(default_spmm(a.clone(), values.clone(), x.clone()))
    );
    assert_eq!(
        host(Flex::csr_spmm_t(a.clone(), values.clone(), x.clone())),
        host(default_spmm_t(a.clone(), values.clone(), x.clone()))
    );
    assert_eq!(
        host(Flex::sparse_sddmm(a.clone(), x.clone(), x.clone())),
        host(default::sddmm::<Flex>("sparse_sddmm", a.clone(), x.clone(), x.clone()))
    );
}
