//! The tests of `semi_narrow`, beside it in a file of their own.

use super::*;
use crate::semi::{compress_mask, SemiLayout, SemiPattern};

/// Against the dense product, at every n up to NARROW, on column counts with and without a
/// partial chunk (4, 20, 36, 64 and 100), f32 (the AVX-512 kernel where present), f64, and
/// bf16 and f16 values.
#[test]
fn narrow_products_match_dense() {
    let rows = 70;
    for cols in [4usize, 20, 36, 64, 100] {
        // Two kept slots per group, varying with the row and group.
        let mut dense = vec![0f64; rows * cols];
        let mut nz = vec![false; rows * cols];
        for r in 0..rows {
            for g in 0..cols / 4 {
                let (s0, s1) = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)][(r * 5 + g * 3) % 6];
                for s in [s0, s1] {
                    nz[r * cols + 4 * g + s] = true;
                    dense[r * cols + 4 * g + s] = ((r * 7 + g * 13 + s) % 11) as f64 - 5.0;
                }
            }
        }
        let (meta, kept) = compress_mask(&nz, rows, cols, SemiPattern::TwoFour).unwrap();
        let vals: Vec<f64> = (0..rows)
            .flat_map(|r| kept[r * cols / 2..(r + 1) * cols / 2].iter().map(move |&c| (r, c)))
            .map(|(r, c)| dense[r * cols + c as usize])
            .collect();
        let vals32: Vec<f32> = vals.iter().map(|&v| v as f32).collect();
        let layout = SemiLayout::new(&meta, rows, cols).unwrap();
        for n in 1..=NARROW {
            let b: Vec<f64> = (0..n * cols).map(|i| ((i * 37) % 17) as f64 - 8.0).collect();
            let b32: Vec<f32> = b.iter().map(|&v| v as f32).collect();
            // B [n, cols] · Aᵀ: out [n, rows].
            let want: Vec<f64> = (0..n)
                .flat_map(|m| (0..rows).map(move |r| (m, r)))
                .map(|(m, r)| (0..cols).map(|c| b[m * cols + c] * dense[r * cols + c]).sum())
                .collect();
            let got = semi_mm_narrow(SemiRef::new(layout, &vals[..]).unwrap(), &b, n, true);
            assert_eq!(got, want, "f64 cols={cols} n={n}");
            let got32 = semi_mm_narrow(SemiRef::new(layout, &vals32[..]).unwrap(), &b32, n, true);
            assert!(got32.iter().zip(&want).all(|(&g, &w)| g as f64 == w), "f32 cols={cols} n={n}");
            // 16-bit values (small integers: exact in bf16 and f16) sum as their f32 twins.
            let bf: Vec<half::bf16> = vals32.iter().map(|&v| half::bf16::from_f32(v)).collect();
            let hf: Vec<half::f16> = vals32.iter().map(|&v| half::f16::from_f32(v)).collect();
            let got = semi_mm_narrow_16(SemiRef::new(layout, &bf[..]).unwrap(), &b32, n, true);
            assert_eq!(got, got32, "bf16 cols={cols} n={n}");
            let got = semi_mm_narrow_16(SemiRef::new(layout, &hf[..]).unwrap(), &b32, n, true);
            assert_eq!(got, got32, "f16 cols={cols} n={n}");
            // A · B with B [cols, n] = the transpose of the same rows: out [rows, n].
            let bn = crate::dense::transpose_blocked(&b32, n, cols);
            let got = semi_mm_narrow(SemiRef::new(layout, &vals32[..]).unwrap(), &bn, n, false);
            for r in 0..rows {
                for m in 0..n {
                    assert_eq!(got[r * n + m] as f64, want[m * rows + r], "A·B cols={cols} n={n} ({r}, {m})");
                }
            }
        }
    }
}

/// bf16 values against a bf16 `B` (the dot-product instruction where the CPU has it, at
/// 64 and 128 columns; the widening route at 100) equal the product on widened values, in
/// both orientations (small integers: every sum is exact).
#[test]
fn bf16_products_match_widened() {
    let rows = 37;
    for cols in [64usize, 100, 128] {
        // Two kept slots per group, varying with the row and group.
        let mut nz = vec![false; rows * cols];
        for r in 0..rows {
            for g in 0..cols / 4 {
                let (s0, s1) = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)][(r * 7 + g * 5) % 6];
                nz[r * cols + 4 * g + s0] = true;
                nz[r * cols + 4 * g + s1] = true;
            }
        }
        let (meta, kept) = compress_mask(&nz, rows, cols, SemiPattern::TwoFour).unwrap();
        let layout = SemiLayout::new(&meta, rows, cols).unwrap();
        let vals: Vec<half::bf16> = (0..kept.len()).map(|j| half::bf16::from_f32((j % 11) as f32 - 5.0)).collect();
        for n in [1usize, 2, 3, 8, 16] {
            let b: Vec<half::bf16> = (0..n * cols).map(|i| half::bf16::from_f32(((i * 7) % 13) as f32 - 6.0)).collect();
            let wide: Vec<f32> = b.iter().map(|v| v.to_f32()).collect();
            for transposed in [true, false] {
                let (bb, ww) = if transposed {
                    (b.clone(), wide.clone())
                } else {
                    (crate::dense::transpose_blocked(&b, n, cols), crate::dense::transpose_blocked(&wide, n, cols))
                };
                let a = SemiRef::new(layout, &vals[..]).unwrap();
                assert_eq!(
                    semi_mm_narrow_bf16(a, &bb, n, transposed),
                    semi_mm_narrow_16(a, &ww, n, transposed),
                    "cols={cols} n={n} transposed={transposed}"
                );
            }
        }
    }
}

/// The portable walk (what machines without AVX-512 run) on 16-bit values equals the f32
/// walk on their widened twins, and the dense product.
#[test]
fn portable_walk_widens_16_bit_values() {
    let (rows, cols, n) = (5, 44, 3);
    let mut nz = vec![false; rows * cols];
    for (i, z) in nz.iter_mut().enumerate() {
        *z = [0, 3].contains(&((i + i / cols) % 4));
    }
    let (meta, kept) = compress_mask(&nz, rows, cols, SemiPattern::TwoFour).unwrap();
    let vals32: Vec<f32> = (0..kept.len()).map(|j| (j % 9) as f32 - 4.0).collect();
    let bf: Vec<half::bf16> = vals32.iter().map(|&v| half::bf16::from_f32(v)).collect();
    let b: Vec<f32> = (0..n * cols).map(|i| ((i * 5) % 7) as f32 - 3.0).collect();
    let layout = SemiLayout::new(&meta, rows, cols).unwrap();
    let run = |f: &dyn Fn(&Out<f32>)| {
        let mut out = vec![0f32; rows * n];
        f(&Out { ptr: SendPtr(out.as_mut_ptr()), rows, n, transposed: true });
        out
    };
    // SAFETY: rows * n outputs, one task, m < 3 and r < rows.
    let got16 =
        run(&|o| unsafe { block::<half::bf16, false, 3>(SemiRef::new(layout, &bf[..]).unwrap(), &b, (0, rows), o) });
    // SAFETY: as above.
    let got32 =
        run(&|o| unsafe { block::<f32, false, 3>(SemiRef::new(layout, &vals32[..]).unwrap(), &b, (0, rows), o) });
    assert_eq!(got16, got32);
    for r in 0..rows {
        for m in 0..n {
            let want: f32 =
                (0..cols / 2).map(|j| vals32[r * cols / 2 + j] * b[m * cols + kept[r * cols / 2 + j] as usize]).sum();
            assert_eq!(got32[m * rows + r], want, "({m}, {r})");
        }
    }
}

/// An infinity in `B` at a column no kept value reads stays out of the sums (the masked
/// tail and the permute never pair it with a zero).
#[test]
fn unread_infinities_stay_out() {
    let (rows, cols) = (3, 36);
    let mut nz = vec![false; rows * cols];
    for r in 0..rows {
        for g in 0..cols / 4 {
            nz[r * cols + 4 * g] = true;
            nz[r * cols + 4 * g + 1] = true;
        }
    }
    let (meta, _) = compress_mask(&nz, rows, cols, SemiPattern::TwoFour).unwrap();
    let vals = vec![1f32; rows * cols / 2];
    let mut b = vec![1f32; cols];
    for g in 0..cols / 4 {
        b[4 * g + 3] = f32::INFINITY;
    }
    let got =
        semi_mm_narrow(SemiRef::new(SemiLayout::new(&meta, rows, cols).unwrap(), &vals[..]).unwrap(), &b, 1, true);
    assert_eq!(got, vec![(cols / 2) as f32; rows]);
}
