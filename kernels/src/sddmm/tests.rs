//! The tests of `sddmm`, beside it in a file of their own.

use super::*;

/// The f32 SDDMM kernels that hold the row of `a` (AVX-512 at d = 64 and 128, AVX2 at d = 64;
/// four entries at a time, one at a time otherwise) and the generic body against plain dot
/// products, on whichever path `SPARSEGRAD_ISA` picks; row lengths 0..9 exercise the remainders.
#[test]
fn f32_sddmm_matches_dot_products() {
    let (m, k) = (11, 13);
    let mut crow = vec![0i64];
    let mut col = Vec::new();
    for r in 0..m {
        for j in 0..r % 10 {
            col.push(((r * 7 + j * 5) % k) as i64);
        }
        crow.push(col.len() as i64);
    }
    for d in [16, 48, 64, 128, 130] {
        let a: Vec<f32> = (0..m * d).map(|i| ((i * 13) % 7) as f32 - 3.0).collect();
        let b: Vec<f32> = (0..k * d).map(|i| ((i * 37) % 11) as f32 - 5.0).collect();
        let got = sddmm(CsrPattern::new(&crow, &col, k).unwrap(), &a, &b, d);
        for r in 0..m {
            for j in crow[r] as usize..crow[r + 1] as usize {
                let c = col[j] as usize;
                let want: f32 = (0..d).map(|t| a[r * d + t] * b[c * d + t]).sum();
                assert_eq!(got[j], want, "d={d} row {r} entry {j}");
            }
        }
    }
}

/// The two-panel kernel (d = 128, `b` past 1 MB, 16+ gathers a row of `b`) against plain
/// dot products, from `b` and from its transpose, with rows of every length modulo 4 and
/// an empty row; integer values, so every order of summing is exact.
#[test]
fn f32_sddmm_in_panels_matches_dot_products() {
    let (m, k, d) = (203, 2100, 128);
    let mut crow = vec![0i64];
    let mut col = Vec::new();
    for r in 0..m {
        let len = if r == 5 { 0 } else { 170 + r % 9 };
        col.extend((0..len).map(|j| ((r * 13 + j * 11) % k) as i64));
        crow.push(col.len() as i64);
    }
    let p = CsrPattern::new(&crow, &col, k).unwrap();
    assert!(in_panels::<f32>(p, d) || isa() != Isa::Avx512, "the case runs in panels");
    let a: Vec<f32> = (0..m * d).map(|i| ((i * 13) % 7) as f32 - 3.0).collect();
    let b: Vec<f32> = (0..k * d).map(|i| ((i * 37) % 11) as f32 - 5.0).collect();
    let bt: Vec<f32> = (0..d * k).map(|i| b[(i % k) * d + i / k]).collect();
    let (crow_ref, col_ref) = (&crow, &col);
    let want: Vec<f32> = (0..m)
        .flat_map(|r| (crow_ref[r] as usize..crow_ref[r + 1] as usize).map(move |j| (r, col_ref[j] as usize)))
        .map(|(r, c)| (0..d).map(|t| a[r * d + t] * b[c * d + t]).sum())
        .collect();
    assert_eq!(sddmm(p, &a, &b, d), want);
    assert_eq!(sddmm_bt(p, &a, &bt, d), want);
}
