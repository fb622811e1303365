//! The tests of `compress`, beside it in a file of their own.

use super::*;

#[test]
fn compress_and_expand_invert() {
    let rows = vec![1i64, 1, 2, 0, 0, 2];
    let c = compress(&rows, 2, 3, 3).unwrap();
    assert_eq!(c, vec![0, 0, 2, 3, 0, 2, 2, 3]);
    assert_eq!(expand(&c, 2, 3, 3), rows);
    assert_eq!(compress_sorted(&[0i32, 0, 2, 2, 2, 4], 5).unwrap(), vec![0, 2, 2, 5, 5, 6]);
    assert_eq!(compress_sorted::<i64>(&[], 2).unwrap(), vec![0, 0, 0]);
    assert!(matches!(compress_sorted::<i64>(&[], usize::MAX), Err(SparseError::Allocation { .. })));
    assert!(matches!(compress(&[], 1 << 40, 0, 1 << 40), Err(SparseError::Allocation { .. })));
    // Long and empty rows on both sides of the galloping steps.
    let rows: Vec<i64> = (0..40).flat_map(|r| std::iter::repeat_n(r, (r as usize * 7) % 13)).collect();
    let expected: Vec<i64> = (0..=41).map(|r| rows.iter().filter(|&&v| v < r).count() as i64).collect();
    assert_eq!(compress_sorted(&rows, 41).unwrap(), expected);
}
