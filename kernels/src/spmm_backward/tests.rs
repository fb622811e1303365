//! The tests of `spmm_backward`, beside it in a file of their own.

use super::*;
use crate::pattern::CsrPattern;
use crate::sddmm::sddmm;
use crate::spmm::spmm_t;

#[test]
fn fused_backward_matches_sddmm_and_transposed_product() {
    // A 7 x 5 with an empty row and an empty column (3), n around the tile widths.
    let (m, k) = (7, 5);
    let crow = vec![0i64, 2, 2, 5, 6, 8, 9, 11];
    let col = vec![0i64, 4, 1, 2, 4, 0, 2, 4, 1, 0, 2];
    let val: Vec<f64> = (0..11).map(|i| i as f64 * 0.5 - 2.0).collect();
    for n in [1, 3, 64, 70, 128, 130] {
        let g: Vec<f64> = (0..m * n).map(|i| ((i * 13) % 7) as f64 - 3.0).collect();
        let x: Vec<f64> = (0..k * n).map(|i| ((i * 37) % 11) as f64 - 5.0).collect();
        let a = CsrPattern::new(&crow, &col, k).unwrap();
        let csc = a.transpose();
        let walk: Walk<'_, i64, i64> = Walk::Transposed(&csc);
        let both = spmm_backward(&walk, &val, &g, &x, n);
        assert_eq!(both[..k * n], spmm_t(a, &val, &g, n), "dx n={n}");
        assert_eq!(both[k * n..], sddmm(a, &g, &x, n), "dv n={n}");
        // out = Aᵀ · X (X [m, n], G [k, n]): the walk over the pattern itself.
        let walk = Walk::InOrder(a);
        let gt: Vec<f64> = (0..k * n).map(|i| ((i * 5) % 9) as f64 - 4.0).collect();
        let xt: Vec<f64> = (0..m * n).map(|i| ((i * 3) % 8) as f64 - 3.5).collect();
        let both = spmm_backward(&walk, &val, &gt, &xt, n);
        assert_eq!(both[..m * n], crate::spmm::spmm(a, &val, &gt, n), "dx of Aᵀ·X n={n}");
        assert_eq!(both[m * n..], sddmm(a, &xt, &gt, n), "dv of Aᵀ·X n={n}");
        // f32 takes the AVX-512 kernel where n is a multiple of 64 (integer data: exact).
        let f = |v: &[f64]| v.iter().map(|&a| a as f32).collect::<Vec<f32>>();
        let (val32, g32, x32) = (f(&val), f(&g), f(&x));
        let walk: Walk<'_, i64, i64> = Walk::Transposed(&csc);
        let both = spmm_backward(&walk, &val32, &g32, &x32, n);
        assert_eq!(both[..k * n], spmm_t(a, &val32, &g32, n), "f32 dx n={n}");
        assert_eq!(both[k * n..], sddmm(a, &g32, &x32, n), "f32 dv n={n}");
        // The view's rows in 64 bits (a pattern of 2^31 rows or more): the same gradients.
        let wide = a.transpose().widened();
        let both = spmm_backward(&Walk::<i64, i64>::Transposed(&wide), &val, &g, &x, n);
        assert_eq!(both[..k * n], spmm_t(a, &val, &g, n), "wide dx n={n}");
        assert_eq!(both[k * n..], sddmm(a, &g, &x, n), "wide dv n={n}");
    }
}

/// A gradient of over 4 MB takes the pass that reads values and writes gradients through the
/// permutation in place (f32 on AVX-512); the same sums as the separate kernels.
#[test]
fn permuting_pass_matches_separate_kernels() {
    let (m, k, n) = (17_000, 300, 64);
    assert!(m * n * 4 >= PERMUTE_IN_PASS_FROM);
    let mut crow = vec![0i64];
    let mut col = Vec::new();
    for r in 0..m {
        // 0 to 4 entries per row, columns spread so every column holds entries of many rows.
        col.extend((0..r % 5).map(|j| ((r * 7 + j * 61) % k) as i64));
        crow.push(col.len() as i64);
    }
    let val: Vec<f32> = (0..col.len()).map(|j| ((j * 7) % 5) as f32 - 2.0).collect();
    let g: Vec<f32> = (0..m * n).map(|i| ((i * 13) % 7) as f32 - 3.0).collect();
    let x: Vec<f32> = (0..k * n).map(|i| ((i * 37) % 11) as f32 - 5.0).collect();
    let a = CsrPattern::new(&crow, &col, k).unwrap();
    let both = spmm_backward(&Walk::<i64, i64>::Transposed(&a.transpose()), &val, &g, &x, n);
    assert_eq!(both[..k * n], spmm_t(a, &val, &g, n));
    assert_eq!(both[k * n..], sddmm(a, &g, &x, n));
    // The view's rows in 64 bits (a pattern of 2^31 rows or more): the same.
    let wide = spmm_backward(&Walk::<i64, i64>::Transposed(&a.transpose().widened()), &val, &g, &x, n);
    assert_eq!(wide, both);
}
