//! The tests of `alloc`, beside it in a file of their own.

use super::*;

#[test]
fn refusals_are_errors() {
    assert!(matches!(
        try_vec::<u64>(usize::MAX / 4, "x"),
        Err(SparseError::Allocation { bytes: usize::MAX, what: "x" })
    ));
    let e = try_vec::<u8>(isize::MAX as usize, "huge").unwrap_err();
    assert!(matches!(e, SparseError::Allocation { what: "huge", .. }), "{e}");
    assert_eq!(try_filled(3, 7i64, "small").unwrap(), vec![7, 7, 7]);
    assert!(ensure_allocatable(4, 1 << 62, "dense").is_err());
    assert!(ensure_allocatable(1 << 20, 8, "dense").is_ok());
}
