//! The tests of `tall`, beside it in a file of their own.

use super::*;

#[test]
fn gram_and_products_match_direct_sums() {
    let (rows, q) = (10_000, 3);
    let x: Vec<f32> = (0..rows * q).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();
    let g = gram(&x, rows, q);
    for i in 0..q {
        for j in 0..q {
            let direct: f64 = (0..rows).map(|r| x[r * q + i] as f64 * x[r * q + j] as f64).sum();
            assert!((g[i * q + j] - direct).abs() <= 1e-12 * direct.abs().max(1.0), "({i}, {j})");
        }
    }
    let t = [1.0, 2.0, 0.5, 0.25, 1.0, -1.0, -2.0, 0.75, 3.0];
    let y = mul_small(&x, rows, q, &t);
    let mut z = x.clone();
    mul_small_in_place(&mut z, rows, q, &t);
    assert_eq!(y, z);
    for r in [0, 4097, rows - 1] {
        for j in 0..q {
            let direct: f64 = (0..q).map(|i| x[r * q + i] as f64 * t[i * q + j]).sum();
            assert_eq!(y[r * q + j], direct as f32, "row {r}, column {j}");
        }
    }
    assert!(gram::<f64>(&[], 0, 0).is_empty() && gram::<f64>(&[], 0, 4) == vec![0.0; 16]);
}

#[test]
fn normal_draws_are_standard_and_reproducible() {
    let mut a = vec![0.0f64; 100_001];
    fill_standard_normal(&mut a, 42);
    let mut b = vec![0.0f64; 100_001];
    fill_standard_normal(&mut b, 42);
    assert_eq!(a, b);
    fill_standard_normal(&mut b, 43);
    assert_ne!(a, b);
    let n = a.len() as f64;
    let mean = a.iter().sum::<f64>() / n;
    let var = a.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    let within_one = a.iter().filter(|v| v.abs() < 1.0).count() as f64 / n;
    // Five standard errors: mean 0 (sd 1/sqrt(n)), variance 1 (sd sqrt(2/n)), P(|z| < 1).
    assert!(mean.abs() < 5.0 / n.sqrt(), "mean {mean}");
    assert!((var - 1.0).abs() < 5.0 * (2.0 / n).sqrt(), "variance {var}");
    assert!((within_one - 0.682_689_492).abs() < 5.0 * (0.2166 / n).sqrt(), "P(|z| < 1) = {within_one}");
    // The blocks are independent streams: neighbouring blocks do not repeat each other.
    assert_ne!(a[..64], a[BLOCK..BLOCK + 64]);
}
