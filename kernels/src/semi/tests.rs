//! The tests of `semi`, beside it in a file of their own.

use super::*;

fn view<'a, T>(meta: &'a [i16], vals: &'a [T], rows: usize, cols: usize) -> SemiRef<'a, T> {
    SemiRef::new(SemiLayout::new(meta, rows, cols).unwrap(), vals).unwrap()
}

#[test]
fn torch_metadata_word_for_0011() {
    let nz: Vec<bool> = [false, false, true, true].repeat(4);
    let (meta, kept) = compress_mask(&nz, 1, 16, SemiPattern::TwoFour).unwrap();
    assert_eq!(meta, vec![-4370i16]);
    assert_eq!(kept, vec![2, 3, 6, 7, 10, 11, 14, 15]);
    assert_eq!(kept_columns(&meta, 1, 16), kept);
}

#[test]
fn one_two_keeps_one_per_pair() {
    let nz = [true, true, false, false];
    let err = compress_mask(&nz, 1, 4, SemiPattern::OneTwo).unwrap_err();
    assert_eq!(err, SparseError::PatternViolation { pattern: "1:2", row: 0, column: 0, nonzeros: 2 });
    assert!(compress_mask(&nz, 1, 4, SemiPattern::TwoFour).is_ok());
    let (meta, kept) = compress_mask(&[false, true, false, true], 1, 4, SemiPattern::OneTwo).unwrap();
    assert_eq!(kept, vec![1, 3]);
    assert_eq!(meta, vec![0b1101]);
}

/// A random 2:4 matrix `[rows, cols]` (dense f64) with its compressed form.
fn random_24(rows: usize, cols: usize, seed: u64) -> (Vec<f64>, Vec<i16>, Vec<f64>) {
    let mut s = seed;
    let mut next = || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (s >> 33) as usize
    };
    let mut dense = vec![0.0; rows * cols];
    for r in 0..rows {
        for g in 0..cols / 4 {
            for _ in 0..2 {
                dense[r * cols + 4 * g + next() % 4] = (next() % 19) as f64 - 9.0;
            }
        }
    }
    let nz: Vec<bool> = dense.iter().map(|&v| v != 0.0).collect();
    let (meta, kept) = compress_mask(&nz, rows, cols, SemiPattern::TwoFour).unwrap();
    let vals = kept.iter().enumerate().map(|(i, &c)| dense[(i / (cols / 2)) * cols + c as usize]).collect();
    (dense, meta, vals)
}

fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for p in 0..k {
            for j in 0..n {
                c[i * n + j] += a[i * k + p] * b[p * n + j];
            }
        }
    }
    c
}

fn transpose(a: &[f64], r: usize, c: usize) -> Vec<f64> {
    (0..c * r).map(|i| a[(i % r) * c + i / r]).collect()
}

#[test]
fn semi_products_match_dense() {
    // Widths around the panel sizes, a row count past one row block, a partial word.
    for &(rows, cols, n) in &[(3, 8, 5), (300, 72, 70), (17, 36, 64), (5, 20, 130), (2, 4, 1)] {
        let (a, meta, vals) = random_24(rows, cols, (rows * 31 + n) as u64);
        let b: Vec<f64> = (0..cols * n).map(|i| ((i * 37) % 11) as f64 - 5.0).collect();
        let ab = matmul(&a, &b, rows, cols, n);
        assert_eq!(semi_mm(view(&meta, &vals, rows, cols), &b, n, false), ab, "A·B {rows}x{cols}x{n}");
        let bt = transpose(&b, cols, n);
        assert_eq!(
            semi_mm(view(&meta, &vals, rows, cols), &bt, n, true),
            transpose(&ab, rows, n),
            "B·Aᵀ {rows}x{cols}x{n}"
        );
        let g: Vec<f64> = (0..rows * n).map(|i| ((i * 13) % 7) as f64 - 3.0).collect();
        let mut at = vec![0.0; cols * rows];
        for i in 0..rows {
            for j in 0..cols {
                at[j * rows + i] = a[i * cols + j];
            }
        }
        assert_eq!(semi_mm_t(view(&meta, &vals, rows, cols), &g, n), matmul(&at, &g, cols, rows, n));
        let f32s = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
        let vals32 = f32s(&vals);
        let got = semi_mm(view(&meta, &vals32, rows, cols), &f32s(&b), n, false);
        assert_eq!(got, f32s(&matmul(&a, &b, rows, cols, n)), "f32 A·B {rows}x{cols}x{n}");
    }
}
