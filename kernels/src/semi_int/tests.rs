//! The tests of `semi_int`, beside it in a file of their own.

use super::*;
use crate::semi::{compress_mask, SemiLayout, SemiPattern};

/// Against the dense integer product, with the extreme values (-128 · -128 summed over a
/// row), both orientations.
#[test]
fn i8_products_match_dense_integer_products() {
    let (rows, cols) = (7, 40);
    let mut nz = vec![false; rows * cols];
    for (i, z) in nz.iter_mut().enumerate() {
        *z = [1, 2].contains(&((i + 3 * (i / cols)) % 4));
    }
    let (meta, kept) = compress_mask(&nz, rows, cols, SemiPattern::TwoFour).unwrap();
    let vals: Vec<i8> = (0..kept.len()).map(|j| if j % 5 == 0 { -128 } else { (j * 37 % 255) as i8 }).collect();
    let layout = SemiLayout::new(&meta, rows, cols).unwrap();
    let a = SemiRef::new(layout, &vals[..]).unwrap();
    for n in [1usize, 5, 33, 64] {
        let b: Vec<i8> = (0..cols * n).map(|i| if i % 7 == 0 { -128 } else { (i * 91 % 255) as i8 }).collect();
        let got = semi_mm_i8(a, &b, n, false);
        for r in 0..rows {
            for t in 0..n {
                let want: i32 = (0..cols / 2)
                    .map(|j| vals[r * cols / 2 + j] as i32 * b[kept[r * cols / 2 + j] as usize * n + t] as i32)
                    .sum();
                assert_eq!(got[r * n + t], want, "n={n} ({r}, {t})");
            }
        }
        // B [n, cols] · Aᵀ: the transpose of the same product.
        let bt = crate::dense::transpose_blocked(&b, cols, n);
        let got_t = semi_mm_i8(a, &bt, n, true);
        assert_eq!(got_t, crate::dense::transpose_blocked(&got, rows, n), "transposed n={n}");
    }
    assert!(I32_SAFE_COLS / 2 * 128 * 128 <= i32::MAX as usize);
    assert!((I32_SAFE_COLS / 2 + 1) * 128 * 128 > i32::MAX as usize);
}
