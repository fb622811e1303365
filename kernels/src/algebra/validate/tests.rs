//! The tests of `validate`, beside it in a file of their own.

use super::*;
const NAMES: CompressedNames = CompressedNames { compressed: "crow_indices", plain: "col_indices", plain_dim: 1 };

#[test]
fn compressed_violations_are_located() {
    let ok = check_compressed(NAMES, &[0i64, 2, 4], &[0i64, 1, 0, 1], 1, 2, 2, 4);
    assert_eq!(ok, Ok(()));
    let e = check_compressed(NAMES, &[1i64, 2, 4], &[0i64, 1, 0, 1], 1, 2, 2, 4).unwrap_err();
    assert_eq!(e, SparseError::CompressedStart { component: "crow_indices", batch: 0, value: 1 });
    let e = check_compressed(NAMES, &[0i64, 1, 0], &[0i64], 1, 2, 2, 0).unwrap_err();
    assert!(matches!(e, SparseError::CompressedDecreasing { position: 2, previous: 1, value: 0, .. }));
    let e = check_compressed(NAMES, &[0i64, 2, 3], &[0i64, 1, 0, 1], 1, 2, 2, 4).unwrap_err();
    assert!(matches!(e, SparseError::CompressedEnd { expected: 4, value: 3, .. }));
    let e = check_compressed(NAMES, &[0i64, 2, 4], &[1i64, 0, 0, 1], 1, 2, 2, 4).unwrap_err();
    assert!(matches!(e, SparseError::PlainUnsorted { segment: 0, position: 1, previous: 1, value: 0, .. }));
    let e = check_compressed(NAMES, &[0i64, 2, 4], &[0i64, 1, 1, 1], 1, 2, 2, 4).unwrap_err();
    assert!(matches!(e, SparseError::PlainDuplicate { segment: 1, position: 3, value: 1, .. }));
    let e = check_compressed(NAMES, &[0i64, 2, 4], &[0i64, 1, 0, 2], 1, 2, 2, 4).unwrap_err();
    assert!(matches!(
        e,
        SparseError::IndexOutOfBounds { component: "col_indices", position: 3, value: 2, size: 2, .. }
    ));
}

#[test]
fn coo_bounds_report_first_entry() {
    let idx = [0i32, 5, 1, 0, 9, 1];
    let e = check_coo_bounds("indices", &idx, 3, &[2, 3]).unwrap_err();
    assert_eq!(e, SparseError::IndexOutOfBounds { component: "indices", dim: 0, position: 1, value: 5, size: 2 });
    assert!(check_shape(&[3_000_000_000], IndexType::I32).is_err());
    assert!(check_shape(&[3_000_000_000], IndexType::I64).is_ok());
    assert!(matches!(check_shape(&[1 << 40, 1 << 40], IndexType::I64), Err(SparseError::ElementCountOverflow { .. })));
}
