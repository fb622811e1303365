//! Checked constructors (every violation the burn side's `SparseError`, naming component,
//! position and value; never a panic), the unchecked forms, accessors, and the conversions
//! (`coalesce`, `to_sparse_csr`, `to_sparse_coo`, `to_dense`) with their gradients.

use crate::common;

use candle_core::{DType, Device, Tensor, Var};
use common::*;
use sparsegrad_candle::{Layout, SparseError, SparseTensor};

fn dev() -> Device {
    Device::Cpu
}

fn idx(rows: &[i64], cols: &[i64]) -> Tensor {
    Tensor::from_vec([rows, cols].concat(), (2, rows.len()), &dev()).unwrap()
}

fn vals(n: usize) -> Tensor {
    Tensor::ones(n, DType::F32, &dev()).unwrap()
}

fn i64s(v: &[i64]) -> Tensor {
    Tensor::from_slice(v, v.len(), &dev()).unwrap()
}

#[test]
fn coo_violations_are_sparse_errors() {
    let e = SparseTensor::coo(&idx(&[0, 5, 1], &[0, 1, 2]), vals(3), [2, 3]).unwrap_err();
    assert_eq!(e, SparseError::IndexOutOfBounds { component: "indices", dim: 0, position: 1, value: 5, size: 2 });
    assert!(e.to_string().contains("indices: index 5 at position 1 is out of bounds for dimension 0 of size 2"), "{e}");
    let e = SparseTensor::coo(&idx(&[0, 1], &[-1, 0]), vals(2), [2, 3]).unwrap_err();
    assert_eq!(e, SparseError::IndexOutOfBounds { component: "indices", dim: 1, position: 0, value: -1, size: 3 });
    // A u32 index past int32 is reported as itself, not wrapped.
    let big = Tensor::from_vec(vec![0u32, 3_000_000_000, 0, 0], (2, 2), &dev()).unwrap();
    let e = SparseTensor::coo(&big, vals(2), [2, 3]).unwrap_err();
    assert_eq!(
        e,
        SparseError::IndexOutOfBounds { component: "indices", dim: 0, position: 1, value: 3_000_000_000, size: 2 }
    );
    let e = SparseTensor::coo(&Tensor::zeros((3, 2), DType::I64, &dev()).unwrap(), vals(2), [2, 3]).unwrap_err();
    assert_eq!(e, SparseError::ShapeMismatch { component: "indices", expected: vec![2, 2], actual: vec![3, 2] });
    let e = SparseTensor::coo(&idx(&[0, 1], &[0, 1]), vals(3), [2, 3]).unwrap_err();
    assert_eq!(e, SparseError::ShapeMismatch { component: "values", expected: vec![2], actual: vec![3] });
    let e = SparseTensor::coo(&idx(&[0], &[0]), Tensor::new(&[1i64], &dev()).unwrap(), [2, 3]).unwrap_err();
    assert!(matches!(e, SparseError::UnsupportedDtype { component: "values", .. }), "{e:?}");
    let e = SparseTensor::coo(&Tensor::zeros((2, 1), DType::U8, &dev()).unwrap(), vals(1), [2, 3]).unwrap_err();
    assert!(
        matches!(&e, SparseError::UnsupportedDtype { component: "indices", dtype } if dtype.starts_with("u8")),
        "{e:?}"
    );
    let i32s = Tensor::zeros((2, 1), DType::I32, &dev()).unwrap();
    let e = SparseTensor::coo(&i32s, vals(1), [3_000_000_000, 2]).unwrap_err();
    assert!(
        matches!(e, SparseError::DimensionTooLarge { component: "size", dim: 0, index_dtype: "int32", .. }),
        "{e:?}"
    );
    let e = SparseTensor::coo(&idx(&[0], &[0]), vals(1), [1 << 40, 1 << 40]).unwrap_err();
    assert!(matches!(e, SparseError::ElementCountOverflow { .. }), "{e:?}");
}

#[test]
fn csr_violations_are_sparse_errors() {
    let csr = |crow: &[i64], col: &[i64]| SparseTensor::csr(&i64s(crow), &i64s(col), vals(col.len()), [2, 3]);
    assert!(csr(&[0, 2, 3], &[0, 2, 1]).is_ok());
    assert_eq!(
        csr(&[1, 2, 3], &[0, 2, 1]).unwrap_err(),
        SparseError::CompressedStart { component: "crow_indices", batch: 0, value: 1 }
    );
    assert!(matches!(
        csr(&[0, 3, 2], &[0, 1, 2]).unwrap_err(),
        SparseError::CompressedDecreasing { position: 2, previous: 3, value: 2, .. }
    ));
    assert!(matches!(
        csr(&[0, 2, 2], &[0, 2, 1]).unwrap_err(),
        SparseError::CompressedEnd { expected: 3, value: 2, .. }
    ));
    assert_eq!(
        csr(&[0, 2, 3], &[2, 0, 1]).unwrap_err(),
        SparseError::PlainUnsorted {
            component: "col_indices",
            batch: 0,
            segment: 0,
            position: 1,
            previous: 2,
            value: 0
        }
    );
    assert!(matches!(
        csr(&[0, 2, 3], &[1, 1, 0]).unwrap_err(),
        SparseError::PlainDuplicate { segment: 0, position: 1, value: 1, .. }
    ));
    assert_eq!(
        csr(&[0, 2, 3], &[0, 1, 3]).unwrap_err(),
        SparseError::IndexOutOfBounds { component: "col_indices", dim: 1, position: 2, value: 3, size: 3 }
    );
    let e = csr(&[0, 3], &[0, 1, 2]).unwrap_err();
    assert_eq!(e, SparseError::ShapeMismatch { component: "crow_indices", expected: vec![3], actual: vec![2] });
    let col32 = Tensor::new(&[0i32, 2, 1], &dev()).unwrap();
    let e = SparseTensor::csr(&i64s(&[0, 2, 3]), &col32, vals(3), [2, 3]).unwrap_err();
    assert!(matches!(e, SparseError::InvalidArgument { operation: "sparse_csr_tensor", .. }), "{e:?}");
}

#[test]
fn unchecked_constructors_skip_content_checks_only() {
    assert!(SparseTensor::coo_unchecked(&idx(&[0, 5], &[0, 1]), vals(2), [2, 3]).is_ok());
    assert!(SparseTensor::csr_unchecked(&i64s(&[0, 2, 3]), &i64s(&[2, 0, 1]), vals(3), [2, 3]).is_ok());
    let e = SparseTensor::coo_unchecked(&idx(&[0, 1], &[0, 1]), vals(1), [2, 3]).unwrap_err();
    assert!(matches!(e, SparseError::ShapeMismatch { component: "values", .. }));
}

#[test]
fn accessors_report_layout_dtypes_and_memory() {
    let u32s = Tensor::new(&[[0u32, 1, 1], [2, 0, 2]], &dev()).unwrap();
    let s = SparseTensor::coo(&u32s, Tensor::new(&[3.0f64, 4.0, 5.0], &dev()).unwrap(), [2, 3]).unwrap();
    assert_eq!((s.layout(), s.nnz(), s.shape(), s.dtype()), (Layout::Coo, 3, [2, 3], DType::F64));
    // u32 indices are kept as int32 (every dimension fits).
    assert_eq!(s.index_dtype(), DType::I32);
    assert_eq!(s.indices().unwrap().to_vec2::<i32>().unwrap(), vec![vec![0, 1, 1], vec![2, 0, 2]]);
    assert_eq!(s.memory_bytes(), (2 * 4 + 8) * 3);
    assert!(!s.is_coalesced(), "as torch: a fresh COO tensor with 2 or more entries counts as uncoalesced");
    assert!(s.crow_indices().is_err());
    let csr = s.to_sparse_csr().unwrap();
    assert_eq!((csr.layout(), csr.index_dtype()), (Layout::Csr, DType::I32));
    assert_eq!(csr.crow_indices().unwrap().to_vec1::<i32>().unwrap(), vec![0, 1, 3]);
    assert_eq!(csr.col_indices().unwrap().to_vec1::<i32>().unwrap(), vec![2, 0, 2]);
    assert_eq!(csr.memory_bytes(), 4 * (3 + 3) + 8 * 3);
    assert!(matches!(csr.indices().unwrap_err(), SparseError::UnsupportedLayout { operation: "indices", .. }));
    assert!(s.with_values(Tensor::zeros(4, DType::F32, &dev()).unwrap()).is_err());
    assert_eq!(s.with_values(Tensor::zeros(3, DType::F32, &dev()).unwrap()).unwrap().dtype(), DType::F32);
}

#[test]
fn coalesce_sorts_and_sums_and_differentiates() {
    // (1,0) twice, (0,2) once, unsorted.
    let v = Var::new(&[1.0f64, 2.0, 3.0, 4.0], &dev()).unwrap();
    let s = SparseTensor::coo(&idx(&[1, 0, 1, 1], &[0, 2, 0, 2]), v.as_tensor().clone(), [2, 3]).unwrap();
    let c = s.coalesce().unwrap();
    assert!(c.is_coalesced());
    assert_eq!(c.indices().unwrap().to_vec2::<i64>().unwrap(), vec![vec![0, 1, 1], vec![2, 0, 2]]);
    assert_eq!(c.values().to_vec1::<f64>().unwrap(), vec![2.0, 4.0, 4.0]);
    let w = Tensor::new(&[10.0f64, 20.0, 30.0], &dev()).unwrap();
    let grads = (c.values() * w).unwrap().sum_all().unwrap().backward().unwrap();
    assert_eq!(grads.get(&v).unwrap().to_vec1::<f64>().unwrap(), vec![20.0, 10.0, 20.0, 30.0]);
    // Coalescing a coalesced tensor, and converting back and forth, keep everything.
    let again = c.coalesce().unwrap();
    assert_eq!(again.values().to_vec1::<f64>().unwrap(), vec![2.0, 4.0, 4.0]);
    let round = c.to_sparse_csr().unwrap().to_sparse_coo();
    assert_eq!(round.indices().unwrap().to_vec2::<i64>().unwrap(), vec![vec![0, 1, 1], vec![2, 0, 2]]);
    assert!(round.is_coalesced());
}

#[test]
fn to_dense_matches_entries_in_every_layout() {
    let mut rng = Rng(31);
    for base in cases(31) {
        let shuffled = uncoalesced(&base, &mut rng);
        for (case, layout) in [(&base, "csr"), (&base, "coo"), (&shuffled, "coo")] {
            for dtype in [DType::F32, DType::F64] {
                let what = format!("{} {layout} {dtype:?}", case.name);
                let v = Var::from_tensor(&tensor(&case.values, &[case.nnz()], dtype)).unwrap();
                let s = if layout == "csr" { case.csr(v.as_tensor().clone()) } else { case.coo(v.as_tensor().clone()) };
                let dense = s.to_dense().unwrap();
                assert_eq!(dense.dims(), case.shape.as_slice(), "{what}");
                assert_close(&host(&dense), &case.dense(), tol(dtype), &format!("{what}: to_dense"));
                assert_close(
                    &host(&s.to_sparse_csr().unwrap().to_dense().unwrap()),
                    &case.dense(),
                    tol(dtype),
                    &format!("{what}: csr"),
                );
                assert_close(
                    &host(&s.to_sparse_coo().to_dense().unwrap()),
                    &case.dense(),
                    tol(dtype),
                    &format!("{what}: coo"),
                );
                if case.nnz() > 0 {
                    let [m, k] = case.shape;
                    let ws = rng.values(m * k);
                    let grads = (dense * tensor(&ws, &[m, k], dtype)).unwrap().sum_all().unwrap().backward().unwrap();
                    assert_close(
                        &host(grads.get(&v).unwrap()),
                        &at_entries(&ws, case),
                        tol(dtype),
                        &format!("{what}: d/dvalues"),
                    );
                }
            }
        }
    }
}

#[test]
fn csr_of_uncoalesced_coo_is_the_canonical_pattern() {
    let mut rng = Rng(32);
    let base = &cases(32)[0];
    let shuffled = uncoalesced(base, &mut rng);
    let s = shuffled.coo(tensor(&shuffled.values, &[shuffled.nnz()], DType::F64)).to_sparse_csr().unwrap();
    let (crow, col) = base.csr_arrays();
    assert_eq!(s.crow_indices().unwrap().to_vec1::<i64>().unwrap(), crow);
    assert_eq!(s.col_indices().unwrap().to_vec1::<i64>().unwrap(), col);
    assert_close(&host(&s.to_dense().unwrap()), &shuffled.dense(), 1e-12, "values summed");
    // The empty matrix with no rows converts too.
    let none = SparseTensor::coo(&Tensor::zeros((2, 0), DType::I64, &dev()).unwrap(), vals(0), [0, 4]).unwrap();
    let csr = none.to_sparse_csr().unwrap();
    assert_eq!(csr.crow_indices().unwrap().to_vec1::<i64>().unwrap(), vec![0]);
    assert_eq!(csr.to_dense().unwrap().dims(), &[0, 4]);
}
