//! The tests of `spmm_reduce`, beside it in a file of their own.

use super::*;

#[test]
fn extremes_args_and_gradients() {
    // A = [[2, 0, -1], [0, 0, 0], [0, 3, 3]] (row 2 ties in column 0), X [3, 2].
    let (crow, col) = (vec![0i64, 2, 2, 4], vec![0i32, 2, 1, 2]);
    let a = CsrPattern::new(&crow[..], &col[..], 3).unwrap();
    let val = [2.0f64, -1.0, 3.0, 3.0];
    let x = [1.0, -2.0, 5.0, 0.5, 5.0, 4.0];
    let (out, arg) = spmm_arg_extreme(a, &val, &x, 2, true);
    // Row 0: max(2·1, -1·5) = 2 (entry 0); max(2·-2, -1·4) = -4 (entry 0, first of a tie).
    // Row 2: max(3·5, 3·5) = 15 (entry 2, the first); max(3·0.5, 3·4) = 12 (entry 3).
    assert_eq!(out, [2.0, -4.0, 0.0, 0.0, 15.0, 12.0]);
    assert_eq!(arg, [0, 0, 4, 4, 2, 3]);
    let (out, arg) = spmm_arg_extreme(a, &val, &x, 2, false);
    assert_eq!(out, [-5.0, -4.0, 0.0, 0.0, 15.0, 1.5]);
    assert_eq!(arg, [1, 0, 4, 4, 2, 2]);
    let g = [1.0, 10.0, 100.0, 100.0, 2.0, 3.0];
    let grad = spmm_arg_extreme_backward(a, &val, &x, &arg, &g, 2);
    // dX: entry 1 (col 2) gets g[0,0]·a = -1 at X[2, 0]; entry 0 (col 0) 10·2 at X[0, 1];
    // entry 2 (col 1) gets 2·3 at X[1, 0] and 3·3 at X[1, 1].
    assert_eq!(&grad[..6], &[0.0, 20.0, 6.0, 9.0, -1.0, 0.0]);
    // dvalues: entry 0: 10·-2; entry 1: 1·5; entry 2: 2·5 + 3·0.5; entry 3: none.
    assert_eq!(&grad[6..], &[-20.0, 5.0, 11.5, 0.0]);
}

#[test]
fn nan_propagates() {
    let (crow, col) = (vec![0i64, 2], vec![0i64, 1]);
    let a = CsrPattern::new(&crow[..], &col[..], 2).unwrap();
    let (out, arg) = spmm_arg_extreme(a, &[1.0f32, 1.0], &[f32::NAN, 3.0], 1, true);
    assert!(out[0].is_nan());
    assert_eq!(arg, [0]);
}
