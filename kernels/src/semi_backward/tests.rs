//! The tests of `semi_backward`, beside it in a file of their own.

use super::*;
use crate::semi::{compress_mask, SemiPattern};

/// Both products against their definitions on the dense matrix, at widths around the panel
/// (1, 63, 64, 65, 128, 130, 256: the AVX-512 widths included), column counts with
/// partial metadata words (12, 36, 68), and 9 or 70 rows (one chunk of rows, or three at the
/// widest panel).
#[test]
fn backward_products_match_definitions() {
    for (rows, cols) in [9usize, 70].into_iter().flat_map(|r| [12usize, 36, 68].map(|c| (r, c))) {
        let mut nz = vec![false; rows * cols];
        for (i, z) in nz.iter_mut().enumerate() {
            let (r, c) = (i / cols, i % cols);
            let (s0, s1) = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)][(r * 5 + c / 4) % 6];
            *z = c % 4 == s0 || c % 4 == s1;
        }
        let (meta, kept) = compress_mask(&nz, rows, cols, SemiPattern::TwoFour).unwrap();
        let vals: Vec<f64> = (0..kept.len()).map(|j| (j % 7) as f64 - 3.0).collect();
        let layout = SemiLayout::new(&meta, rows, cols).unwrap();
        let mut dense = vec![0f64; rows * cols];
        for r in 0..rows {
            for j in 0..cols / 2 {
                dense[r * cols + kept[r * cols / 2 + j] as usize] = vals[r * cols / 2 + j];
            }
        }
        for n in [1usize, 63, 64, 65, 128, 130, 256] {
            let g: Vec<f64> = (0..rows * n).map(|i| ((i * 11) % 13) as f64 - 6.0).collect();
            let b: Vec<f64> = (0..cols * n).map(|i| ((i * 7) % 9) as f64 - 4.0).collect();
            let got = semi_mm_t(SemiRef::new(layout, &vals[..]).unwrap(), &g, n);
            for c in 0..cols {
                for t in 0..n {
                    let want: f64 = (0..rows).map(|r| dense[r * cols + c] * g[r * n + t]).sum();
                    assert_eq!(got[c * n + t], want, "Aᵀ·G cols={cols} n={n} ({c}, {t})");
                }
            }
            let got = semi_sddmm(layout, &g, &b, n);
            for r in 0..rows {
                for j in 0..cols / 2 {
                    let c = kept[r * cols / 2 + j] as usize;
                    let want: f64 = (0..n).map(|t| g[r * n + t] * b[c * n + t]).sum();
                    assert_eq!(got[r * cols / 2 + j], want, "sddmm cols={cols} n={n} ({r}, {j})");
                }
            }
            // f32 (the vectorised kernels): integers, exact.
            let f = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
            let (v32, g32, b32) = (f(&vals), f(&g), f(&b));
            let got = semi_mm_t(SemiRef::new(layout, &v32[..]).unwrap(), &g32, n);
            assert_eq!(got, f(&semi_mm_t(SemiRef::new(layout, &vals[..]).unwrap(), &g, n)), "f32 Aᵀ·G n={n}");
            assert_eq!(semi_sddmm(layout, &g32, &b32, n), f(&semi_sddmm(layout, &g, &b, n)), "f32 sddmm n={n}");
        }
    }
}

/// Any metadata word, torch's or not: a nibble names two slots, and when they are equal both
/// values add to that one column (`Aᵀ · G` against the dense sum, on every path).
#[test]
fn any_metadata_word_adds_both_values() {
    let (rows, cols) = (37usize, 40usize);
    let words = cols.div_ceil(WORD_COLUMNS);
    let meta: Vec<i16> = (0..rows * words).map(|i| (i as u32).wrapping_mul(40503) as u16 as i16).collect();
    let vals: Vec<f64> = (0..rows * cols / 2).map(|j| (j % 5) as f64 - 2.0).collect();
    let layout = SemiLayout::new(&meta, rows, cols).unwrap();
    let mut dense = vec![0f64; rows * cols];
    for r in 0..rows {
        for grp in 0..cols / 4 {
            let (c0, c1) = group_columns(&meta[r * words..(r + 1) * words], grp);
            dense[r * cols + c0] += vals[r * cols / 2 + 2 * grp];
            dense[r * cols + c1] += vals[r * cols / 2 + 2 * grp + 1];
        }
    }
    assert!((0..rows * cols / 4).any(|i| {
        let nibble = (meta[(i / (cols / 4)) * words + (i % (cols / 4)) / 4] as u16) >> (4 * (i % 4));
        nibble & 3 == (nibble >> 2) & 3
    }));
    for n in [64usize, 256] {
        let g: Vec<f64> = (0..rows * n).map(|i| ((i * 11) % 13) as f64 - 6.0).collect();
        let got = semi_mm_t(SemiRef::new(layout, &vals[..]).unwrap(), &g, n);
        let g32: Vec<f32> = g.iter().map(|&x| x as f32).collect();
        let v32: Vec<f32> = vals.iter().map(|&x| x as f32).collect();
        let got32 = semi_mm_t(SemiRef::new(layout, &v32[..]).unwrap(), &g32, n);
        for c in 0..cols {
            for t in 0..n {
                let want: f64 = (0..rows).map(|r| dense[r * cols + c] * g[r * n + t]).sum();
                assert_eq!(got[c * n + t], want, "Aᵀ·G n={n} ({c}, {t})");
                assert_eq!(got32[c * n + t], want as f32, "f32 Aᵀ·G n={n} ({c}, {t})");
            }
        }
    }
}
