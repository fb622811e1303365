//! The tests of the SpMM kernels: every route (row tiles, panels, the transposed output, `Aᵀ · G`)
//! against a plain reference, on every vector path this CPU has.

use super::*;
use crate::sddmm::sddmm;

fn dense_ref(m: usize, k: usize, crow: &[i64], col: &[i64], val: &[f64]) -> Vec<f64> {
    let mut a = vec![0.0; m * k];
    for r in 0..m {
        for j in crow[r] as usize..crow[r + 1] as usize {
            a[r * k + col[j] as usize] += val[j];
        }
    }
    a
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

/// The transposed output is the product's transpose, element for element: f32 (the
/// AVX-512 tiles where present) and f64, full and partial row groups, widths that are and
/// are not multiples of 16, column panels, and an output streamed to memory.
#[test]
fn transposed_output_is_the_transpose() {
    fn check<T: Real + PartialEq + core::fmt::Debug>(m: usize, k: usize, n: usize, per_row: usize, of: fn(usize) -> T) {
        let (mut crow, mut col) = (vec![0i64], vec![]);
        for r in 0..m {
            // Uneven rows: the row blocks start anywhere in a line.
            for t in 0..per_row + r % 3 {
                col.push(((r * 31 + t * 17) % k) as i64);
            }
            crow.push(col.len() as i64);
        }
        let val: Vec<T> = (0..col.len()).map(|i| of(i % 11)).collect();
        let x: Vec<T> = (0..k * n).map(|i| of((i * 7) % 13)).collect();
        let p = CsrPattern::new(&crow, &col, k).unwrap();
        let plain = spmm(p, &val, &x, n);
        let t = spmm_transposed_out(p, &val, &x, n);
        let want: Vec<T> = (0..n * m).map(|i| plain[(i % m) * n + i / m]).collect();
        assert_eq!(t, want, "{m} x {k} x {n}");
        // X given by its transpose: the same product, bit for bit.
        let xt: Vec<T> = (0..n * k).map(|i| x[(i % k) * n + i / k]).collect();
        assert_eq!(spmm_of_transpose_transposed_out(p, &val, &xt, n), want, "Xᵀ given: {m} x {k} x {n}");
    }
    // The f32 outputs of the last three cases are streamed: rows of 5,003 elements start off
    // the lines (the runs have partial lines at both ends); rows of 8,192 and 20,000 share a
    // line phase (whole lines stored from the tiles, the groups before each block's first
    // boundary plainly). 4096 x 128 goes in panels of 64 columns, packed from Xᵀ when given.
    for (m, k, n, per_row) in [
        (40, 9, 70, 5),
        (16, 30, 64, 7),
        (5, 4, 3, 2),
        (40, 2100, 128, 900),
        (10_000, 50, 16, 2),
        (64, 4096, 128, 40),
        (5_003, 40, 70, 3),
        (8_192, 40, 64, 3),
        (20_000, 30, 24, 2),
    ] {
        check::<f32>(m, k, n, per_row, |v| v as f32 - 5.0);
        check::<f64>(m, k, n, per_row, |v| v as f64 * 0.5 - 2.0);
    }
}

#[test]
fn kernels_match_dense_products() {
    // A 7 x 5 with an empty row, n = 70 (one full tile and a partial one).
    let (m, k, n) = (7, 5, 70);
    let crow = vec![0i64, 2, 2, 5, 6, 8, 9, 11];
    let col = vec![0i64, 4, 1, 2, 3, 0, 2, 4, 1, 0, 3];
    let val: Vec<f64> = (0..11).map(|i| i as f64 * 0.5 - 2.0).collect();
    let x: Vec<f64> = (0..k * n).map(|i| ((i * 37) % 11) as f64 - 5.0).collect();
    let a = dense_ref(m, k, &crow, &col, &val);
    let p = CsrPattern::new(&crow, &col, k).unwrap();
    assert_eq!(spmm(p, &val, &x, n), matmul(&a, &x, m, k, n));
    let g: Vec<f64> = (0..m * n).map(|i| ((i * 13) % 7) as f64 - 3.0).collect();
    let mut at = vec![0.0; k * m];
    for i in 0..m {
        for j in 0..k {
            at[j * m + i] = a[i * k + j];
        }
    }
    assert_eq!(spmm_t(p, &val, &g, n), matmul(&at, &g, k, m, n));
    assert_eq!(spmm_t_with(&p.transpose(), &val, &g, n), matmul(&at, &g, k, m, n));
    let csc = p.transpose();
    assert_eq!(spmm_t_gathered(&csc, &gather_column_values(&csc, &val), &g, n), matmul(&at, &g, k, m, n));
    // The view's rows in 64 bits, as a pattern of 2^31 rows or more stores them: the same.
    let wide = p.transpose().widened();
    assert!(matches!(wide.as_csr(), crate::pattern::TransposedCsr::Wide(_)));
    assert_eq!(spmm_t_with(&wide, &val, &g, n), matmul(&at, &g, k, m, n));
    let gt = spmm_t_gathered_transposed_out(&wide, &gather_column_values(&wide, &val), &g, n);
    assert_eq!(gt, spmm_t_gathered_transposed_out(&csc, &gather_column_values(&csc, &val), &g, n));
    let full = {
        let mut xt = vec![0.0; n * k];
        for i in 0..k {
            for j in 0..n {
                xt[j * k + i] = x[i * n + j];
            }
        }
        matmul(&g, &xt, m, n, k)
    };
    let s = sddmm(p, &g, &x, n);
    for r in 0..m {
        for j in crow[r] as usize..crow[r + 1] as usize {
            assert_eq!(s[j], full[r * k + col[j] as usize]);
        }
    }
    // f32 at widths of the AVX-512 kernel (64: four registers, 128: eight, 192: four, three
    // times) and one beside it; integer data, so the sums are exact in any order.
    let f = |v: &[f64]| v.iter().map(|&a| a as f32).collect::<Vec<f32>>();
    for n in [64, 128, 192, 80] {
        let x: Vec<f64> = (0..k * n).map(|i| ((i * 37) % 11) as f64 - 5.0).collect();
        let want = f(&matmul(&a, &x, m, k, n));
        assert_eq!(spmm(p, &f(&val), &f(&x), n), want, "f32 n={n}");
    }
}

/// Column panels: an `X` over the L2 share with at least 64 reads per row is packed into
/// panels (here 128 and a narrower 64) and the product split by them; integer data, so the
/// panelled sums equal the plain ones exactly.
#[test]
fn panelled_product_matches_plain_sums() {
    let (m, k, n) = (300, 2048, 192);
    assert_eq!(panel_width::<f32>(k, n), 128);
    let mut crow = vec![0i64];
    let mut col = Vec::new();
    for r in 0..m {
        // 440 entries per row on average (64 reads per row of X need 131,072), one row empty.
        let len = if r == 17 { 0 } else { 400 + (r * 31) % 81 };
        col.extend((0..len).map(|j| ((r * 131 + j * 4099) % k) as i64));
        crow.push(col.len() as i64);
    }
    assert!(col.len() >= 64 * k);
    let val: Vec<f32> = (0..col.len()).map(|j| ((j * 7) % 5) as f32 - 2.0).collect();
    let x: Vec<f32> = (0..k * n).map(|i| ((i * 13) % 9) as f32 - 4.0).collect();
    let got = spmm(CsrPattern::new(&crow, &col, k).unwrap(), &val, &x, n);
    for r in [0, 17, 18, 150, m - 1] {
        for t in 0..n {
            let want: f32 = (crow[r] as usize..crow[r + 1] as usize).map(|j| val[j] * x[col[j] as usize * n + t]).sum();
            assert_eq!(got[r * n + t], want, "row {r} column {t}");
        }
    }
}
