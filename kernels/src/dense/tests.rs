//! The tests of `dense`, beside it in a file of their own.

use super::*;

#[test]
fn strided_transpose_matches_definition() {
    // Whole f32 tiles in registers, edges element by element; strides wider than the
    // rows, and the elements outside the transposed rows left as they were.
    for (r, c, lds, ldd) in [(1, 1, 1, 1), (16, 16, 16, 16), (16, 1024, 1024, 64), (37, 20, 25, 40), (64, 33, 33, 64)] {
        let src: Vec<f32> = (0..r * lds).map(|v| v as f32).collect();
        let mut dst = vec![-1.0f32; c * ldd];
        transpose_strided(&src, lds, &mut dst, ldd, r, c);
        let mut dst64 = vec![-1.0f64; c * ldd];
        transpose_strided(&src.iter().map(|&v| v as f64).collect::<Vec<_>>(), lds, &mut dst64, ldd, r, c);
        for j in 0..c {
            for i in 0..ldd {
                let want = if i < r { src[i * lds + j] } else { -1.0 };
                assert_eq!(dst[j * ldd + i], want, "f32 {r} x {c} at ({i}, {j})");
                assert_eq!(dst64[j * ldd + i], want as f64, "f64 {r} x {c} at ({i}, {j})");
            }
        }
    }
}

#[test]
fn blocked_transpose_matches_definition() {
    // f32 runs whole 16 x 16 tiles in registers (and the edges element by element), f64
    // element by element throughout.
    for (r, c) in [(1, 1), (3, 70), (16, 16), (65, 33), (100, 1), (48, 130)] {
        let src: Vec<f64> = (0..r * c).map(|v| v as f64).collect();
        let out = transpose_blocked(&src, r, c);
        let src32: Vec<f32> = src.iter().map(|&v| v as f32).collect();
        let out32 = transpose_blocked(&src32, r, c);
        for i in 0..r {
            for j in 0..c {
                assert_eq!(out[j * r + i], src[i * c + j]);
                assert_eq!(out32[j * r + i], src32[i * c + j], "f32 {r} x {c} at ({i}, {j})");
            }
        }
    }
}
