//! The tests of the SpGEMM kernels: every route (narrow, wide, packed, dense block, masked)
//! against a dense reference, the gradients, and bit-identical results across thread counts.

use super::*;

/// A deterministic sparse matrix `[m, n]`: row `i` holds about `deg` columns (some
/// repeated when `dups`), values small integers (exact sums in any order).
fn random(m: usize, n: usize, deg: usize, seed: u64, dups: bool) -> (Vec<i64>, Vec<i64>, Vec<f64>) {
    let mut s = seed;
    let mut next = || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (s >> 33) as usize
    };
    let (mut crow, mut col, mut val) = (vec![0i64], vec![], vec![]);
    for _ in 0..m {
        let len = next() % (2 * deg + 1);
        let mut row: Vec<i64> = (0..len).map(|_| (next() % n.max(1)) as i64).collect();
        if !dups {
            row.sort_unstable();
            row.dedup();
        }
        for c in row {
            col.push(c);
            val.push((next() % 7) as f64 - 3.0);
        }
        crow.push(col.len() as i64);
    }
    if n == 0 {
        col.clear();
        val.clear();
        crow.iter_mut().for_each(|v| *v = 0);
    }
    (crow, col, val)
}

fn dense(m: usize, n: usize, crow: &[i64], col: &[i64], val: &[f64]) -> Vec<f64> {
    let mut d = vec![0.0; m * n];
    for i in 0..m {
        for j in crow[i] as usize..crow[i + 1] as usize {
            d[i * n + col[j] as usize] += val[j];
        }
    }
    d
}

fn structure(m: usize, n: usize, crow: &[i64], col: &[i64]) -> Vec<bool> {
    let mut d = vec![false; m * n];
    for i in 0..m {
        for j in crow[i] as usize..crow[i + 1] as usize {
            d[i * n + col[j] as usize] = true;
        }
    }
    d
}

/// The one pass against the two phases, bit for bit, on values whose sums round (so the
/// order of the terms shows): row blocks that take the dense block product (dense rows),
/// chunks that do not (a sparse stretch, duplicate columns), a partial last chunk, an
/// infinity in `B` (no dense blocks then), in f64 and f32.
#[test]
fn one_pass_matches_two_phases_bit_for_bit() {
    fn check<T: Real + core::fmt::Debug>(
        a: CsrPattern<'_, i64, i64>,
        av: &[T],
        b: CsrPattern<'_, i64, i64>,
        bv: &[T],
        what: &str,
    ) {
        let (crow, col, val) = spgemm(a, av, b, bv).unwrap();
        let (c2, k2) = spgemm_symbolic(a, b, None).unwrap();
        let c = CsrPattern::new(&c2[..], &k2[..], b.ncols()).unwrap();
        let v2 = spgemm_numeric(a, av, b, bv, c);
        assert_eq!((crow, col), (c2, k2), "{what}: pattern");
        let bits = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&val), bits(&v2), "{what}: values");
    }
    // Dense rows (about half of k; every fourth one whole) with sparse rows (two entries)
    // and empty rows between them, and two dense rows with a repeated column (row by row),
    // one of them with k entries:
    // one group of lanes (m = 21) and several (a block's lanes in up to four groups, the
    // last partial).
    for m in [21, 2 * LANES + 21] {
        let (k, n) = (40, 37);
        let mut s = 7u64;
        let mut next = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 33) as usize
        };
        let (mut ap, mut ai) = (vec![0i64], vec![]);
        for i in 0..m {
            match i % 5 {
                2 => ai.extend([3, 17]),
                4 => {}
                _ if i % 4 == 0 => ai.extend(0..k as i64),
                _ => ai.extend((0..k as i64).filter(|_| next() % 2 == 0)),
            }
            if i == 8 {
                // k entries, not 0..k: column k - 2 twice.
                ai.pop();
                ai.push(k as i64 - 2);
            }
            if i == 13 {
                ai.push(*ai.last().unwrap_or(&0));
            }
            ap.push(ai.len() as i64);
        }
        // The last four columns of B stored in one row each: lanes whose row does not store
        // that row's column do not reach them.
        let (mut bp, mut bi) = (vec![0i64], vec![]);
        for p in 0..k {
            for j in 0..n {
                if if j + 4 >= n { p == j + 4 - n } else { next() % 3 == 0 } {
                    bi.push(j as i64);
                }
            }
            bp.push(bi.len() as i64);
        }
        let av: Vec<f64> = (0..ai.len()).map(|_| (next() % 1000) as f64 / 7.0 - 70.0).collect();
        let mut bv: Vec<f64> = (0..bi.len()).map(|_| (next() % 1000) as f64 / 3.0 - 150.0).collect();
        let a = CsrPattern::new(&ap[..], &ai[..], k).unwrap();
        let b = CsrPattern::new(&bp[..], &bi[..], n).unwrap();
        assert!(dense_blocks_pay(a, b, &bv), "the test reaches the dense blocks");
        let mut block = DenseBlock::default();
        let end = block.gather(a, &av, &Columns::of(b, &bv), 0..m);
        let want: Vec<usize> = (0..end).filter(|&i| i % 5 < 2 || i % 5 == 3).filter(|&i| i != 8 && i != 13).collect();
        assert_eq!(block.rows, want, "m = {m}: the dense rows are the lanes, the others skipped");
        assert_eq!(block.rows.len(), LANES.min(want.len()));
        assert!(block.full != 0 && block.full != LaneMask::MAX, "lanes that reach every column and lanes that do not");
        check(a, &av, b, &bv, "f64");
        let (af, bf): (Vec<f32>, Vec<f32>) =
            (av.iter().map(|&v| v as f32).collect(), bv.iter().map(|&v| v as f32).collect());
        check(a, &af, b, &bf, "f32");
        // Zeros stored in A and B, and an exact cancellation.
        let mut az = av.clone();
        az[3] = 0.0;
        az[5] = -0.0;
        bv[2] = 0.0;
        check(a, &az, b, &bv, "stored zeros");
        // An infinity in B: row by row only (a dense block would multiply it by zeros).
        bv[7] = f64::INFINITY;
        assert!(!dense_blocks_pay(a, b, &bv));
        check(a, &av, b, &bv, "infinite B");
    }
}

/// Products, symbolic and numeric, against dense references; narrow and wide rows, scans
/// and sorts (n small and large), duplicate columns in the operands, empty operands.
#[test]
fn product_matches_dense_reference() {
    // Cases with `B` packed (its rows read at least `PACK_READS` times an entry) and not.
    let mut routes = [0; 2];
    for (m, k, n, da, db, dups) in [
        (30, 20, 25, 3, 4, false),
        (40, 30, 500, 6, 8, true),
        (50, 60, 40, 12, 12, false),
        (5, 0, 7, 2, 2, false),
        (0, 4, 3, 2, 2, false),
        (20, 2000, 3000, 1, 40, false),
    ] {
        let (ap, ai, av) = random(m, k, da, 1 + m as u64, dups);
        let (bp, bi, bv) = random(k, n, db, 2 + n as u64, dups);
        let a = CsrPattern::new(&ap[..], &ai[..], k).unwrap();
        let b = CsrPattern::new(&bp[..], &bi[..], n).unwrap();
        let (crow, col, val) = spgemm(a, &av, b, &bv).unwrap();
        routes[usize::from(spgemm_products(a, b).unwrap() as i64 >= PACK_READS * b.nnz() as i64)] += 1;
        let c = CsrPattern::new(&crow[..], &col[..], n).unwrap();
        for i in 0..m {
            let r = &col[c.row(i)];
            assert!(r.windows(2).all(|w| w[0] < w[1]), "row {i} sorted and unique");
        }
        let (ad, bd) = (dense(m, k, &ap, &ai, &av), dense(k, n, &bp, &bi, &bv));
        let (sa, sb) = (structure(m, k, &ap, &ai), structure(k, n, &bp, &bi));
        let mut want = vec![0.0; m * n];
        let mut want_s = vec![false; m * n];
        for i in 0..m {
            for p in 0..k {
                for j in 0..n {
                    want[i * n + j] += ad[i * k + p] * bd[p * n + j];
                    want_s[i * n + j] |= sa[i * k + p] && sb[p * n + j];
                }
            }
        }
        assert_eq!(structure(m, n, &crow, &col), want_s, "structure {m}x{k}x{n}");
        assert_eq!(dense(m, n, &crow, &col, &val), want, "values {m}x{k}x{n}");
        assert_eq!(
            spgemm_products(a, b).unwrap() as usize,
            (0..ai.len()).map(|q| b.row(ai[q] as usize).len()).sum::<usize>()
        );
        // Masked: a pattern of its own; the result is the mask's entries some product reaches.
        let (mp, mi, _) = random(m, n, 5, 9, false);
        let mk = CsrPattern::new(&mp[..], &mi[..], n).unwrap();
        let (mcrow, mcol) = spgemm_symbolic(a, b, Some(mk)).unwrap();
        let sm = structure(m, n, &mp, &mi);
        let masked_s: Vec<bool> = want_s.iter().zip(&sm).map(|(&x, &y)| x && y).collect();
        assert_eq!(structure(m, n, &mcrow, &mcol), masked_s, "masked structure");
        let cm = CsrPattern::new(&mcrow[..], &mcol[..], n).unwrap();
        let mval = spgemm_numeric(a, &av, b, &bv, cm);
        let got = dense(m, n, &mcrow, &mcol, &mval);
        for t in 0..m * n {
            assert_eq!(got[t], if masked_s[t] { want[t] } else { 0.0 }, "masked value {t}");
        }
        // The numeric pass on the whole mask (entries no product reaches are zeros).
        let on_mask = spgemm_numeric(a, &av, b, &bv, mk);
        let got = dense(m, n, &mp, &mi, &on_mask);
        for t in 0..m * n {
            assert_eq!(got[t], if sm[t] { want[t] } else { 0.0 }, "on mask {t}");
        }
    }
    assert!(routes.iter().all(|&r| r >= 2), "both routes of B, packed and plain: {routes:?}");
}

/// The gradients against their definitions: `dA = (G Bᵀ)` on A's pattern, `dB = (Aᵀ G)` on
/// B's, with G on the product's pattern.
#[test]
fn gradients_are_masked_products() {
    for (m, k, n, da, db) in [(30, 20, 25, 3, 4), (40, 30, 500, 6, 8), (3000, 10, 12, 3, 3), (4, 0, 3, 1, 1)] {
        let (ap, ai, av) = random(m, k, da, 3, false);
        let (bp, bi, bv) = random(k, n, db, 4, false);
        let a = CsrPattern::new(&ap[..], &ai[..], k).unwrap();
        let b = CsrPattern::new(&bp[..], &bi[..], n).unwrap();
        let (crow, col) = spgemm_symbolic(a, b, None).unwrap();
        let c = CsrPattern::new(&crow[..], &col[..], n).unwrap();
        let g: Vec<f64> = (0..col.len()).map(|e| ((e * 5) % 9) as f64 - 4.0).collect();
        let gd = dense(m, n, &crow, &col, &g);
        let (ad, bd) = (dense(m, k, &ap, &ai, &av), dense(k, n, &bp, &bi, &bv));
        let da_got = spgemm_grad_a(a, b, &bv, c, &g);
        for i in 0..m {
            for q in a.row(i) {
                let p = ai[q] as usize;
                let want: f64 = (0..n).map(|j| gd[i * n + j] * bd[p * n + j]).sum();
                assert_eq!(da_got[q], want, "dA[{i}, {p}]");
            }
        }
        let db_got = spgemm_grad_b(a, &av, b, c, &g).unwrap();
        for p in 0..k {
            for r in b.row(p) {
                let j = bi[r] as usize;
                let want: f64 = (0..m).map(|i| ad[i * k + p] * gd[i * n + j]).sum();
                assert_eq!(db_got[r], want, "dB[{p}, {j}]");
            }
        }
    }
}

/// Bit-identical values whatever the thread count.
#[test]
fn results_do_not_depend_on_threads() {
    let (m, k, n) = (600, 400, 700);
    let mut s = 7u64;
    let mut next = || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let (ap, ai, _) = random(m, k, 20, 11, false);
    let (bp, bi, _) = random(k, n, 20, 12, false);
    let av: Vec<f32> = ai.iter().map(|_| next()).collect();
    let bv: Vec<f32> = bi.iter().map(|_| next()).collect();
    let a = CsrPattern::new(&ap[..], &ai[..], k).unwrap();
    let b = CsrPattern::new(&bp[..], &bi[..], n).unwrap();
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let (crow, col, val) = spgemm(a, &av, b, &bv).unwrap();
            let c = CsrPattern::new(&crow[..], &col[..], n).unwrap();
            let g: Vec<f32> = val.iter().map(|v| v * 0.5 + 1.0).collect();
            let db = spgemm_grad_b(a, &av, b, c, &g).unwrap();
            (
                crow,
                col,
                val.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                db.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            )
        })
    };
    assert_eq!(run(1), run(3));
}
