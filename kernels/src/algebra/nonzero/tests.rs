//! The tests of `nonzero`, beside it in a file of their own.

use super::*;

#[test]
fn finds_items_with_any_nonzero() {
    let data = [0.0f32, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 2.0];
    assert_eq!(nonzero_items(&data, 1), vec![2, 7]);
    assert_eq!(nonzero_items(&data, 2), vec![1, 3]);
    let big: Vec<f64> = (0..200_000).map(|i| if i % 7 == 0 { 1.0 } else { 0.0 }).collect();
    let expected: Vec<i64> = (0..200_000).filter(|i| i % 7 == 0).collect();
    assert_eq!(nonzero_items(&big, 1), expected);
}

#[test]
fn dense_to_csr_matches_definition() {
    let (rows, cols) = (300, 701);
    let data: Vec<f32> = (0..rows * cols).map(|i| if (i * 7919) % 13 == 0 { i as f32 } else { 0.0 }).collect();
    let (crow, col, val) = dense_to_csr(&data, rows, cols);
    let mut k = 0;
    for r in 0..rows {
        assert_eq!(crow[r], k as i64);
        for c in 0..cols {
            if data[r * cols + c] != 0.0 {
                assert_eq!((col[k], val[k]), (c as i64, data[r * cols + c]));
                k += 1;
            }
        }
    }
    assert_eq!(crow[rows], k as i64);
    assert_eq!(dense_to_csr::<f64>(&[], 0, 5), (vec![0], vec![], vec![]));
}
