//! The tests of `pattern`, beside it in a file of their own.

use super::*;

#[test]
fn checked_constructor_names_each_violation() {
    assert!(CsrPattern::new(&[0i64, 2, 3], &[1i32, 0, 2], 3).is_ok());
    let e = CsrPattern::new(&[0i64, 3, 1, 4], &[0i64; 4], 1).unwrap_err();
    assert!(matches!(e, SparseError::CompressedDecreasing { position: 2, previous: 3, value: 1, .. }), "{e}");
    let e = CsrPattern::new(&[1i64, 1], &[0i64; 0], 1).unwrap_err();
    assert!(matches!(e, SparseError::CompressedStart { value: 1, .. }), "{e}");
    let e = CsrPattern::new(&[0i64, 1], &[0i64; 1000], 1).unwrap_err();
    assert!(matches!(e, SparseError::CompressedEnd { expected: 1000, value: 1, .. }), "{e}");
    let e = CsrPattern::new(&[0i64, 2], &[0i64, -1], 4).unwrap_err();
    assert!(matches!(e, SparseError::IndexOutOfBounds { position: 1, value: -1, size: 4, .. }), "{e}");
    let e = CsrPattern::new(&[0i8, 1], &[9i8], 9).unwrap_err();
    assert!(matches!(e, SparseError::IndexOutOfBounds { position: 0, value: 9, .. }), "{e}");
    assert!(CsrPattern::<i64, i64>::new(&[], &[], 0).is_err());
    // A large column array takes the parallel check; the first bad position is reported.
    let mut col = vec![3i32; 1 << 19];
    col[400_000] = 7;
    col[450_000] = -2;
    let ptr = [0i64, col.len() as i64];
    let e = CsrPattern::new(&ptr, &col, 5).unwrap_err();
    assert!(matches!(e, SparseError::IndexOutOfBounds { position: 400_000, value: 7, .. }), "{e}");
}

#[test]
fn transpose_is_a_stable_counting_sort() {
    // [[1, 0, 2], [0, 0, 3], [4, 5, 0]] by entry position.
    let a = CsrPattern::new(&[0i64, 2, 3, 5], &[0i64, 2, 2, 0, 1], 3).unwrap();
    let t = a.transpose();
    assert_eq!(t.ccol(), &[0, 2, 3, 5]);
    assert_eq!(t.rows_to_vec(), [0, 2, 2, 0, 1]);
    assert_eq!(t.perm(), &[0, 3, 4, 1, 2]);
    assert_eq!(t.inv(), &[0, 3, 4, 1, 2]);
    // Three rows fit 32 bits: the view stores them so, and reads back as the rows above.
    let crate::pattern::TransposedCsr::Narrow(back) = t.as_csr() else { panic!("rows fit 32 bits") };
    assert_eq!((back.nrows(), back.ncols(), back.nnz()), (3, 3, 5));
    assert_eq!(back.idx(), &[0, 2, 2, 0, 1]);
    assert_eq!(a.row_blocks(2), vec![0, 1, 3]);
}

/// Every route of the transpose against a reference stable sort: one block in one pass (few
/// columns), one block in two passes by buckets (a DNN-like layer whose columns all hold
/// the same count, a power of two apart, and a random pattern with repeated columns and
/// empty rows and columns), and parallel blocks; the inverse permutation on each.
#[test]
fn every_route_of_the_transpose_is_the_stable_sort() {
    fn check(ptr: &[i64], idx: &[i64], k: usize, what: &str) {
        let a = CsrPattern::new(ptr, idx, k).unwrap();
        let mut want: Vec<(i64, usize, usize)> = Vec::new();
        for r in 0..a.nrows() {
            want.extend(a.row(r).map(|j| (idx[j], r, j)));
        }
        want.sort_by_key(|&(c, _, _)| c);
        let t = a.transpose();
        let mut ccol = vec![0i64; k + 1];
        for &(c, _, _) in &want {
            ccol[c as usize + 1] += 1;
        }
        for c in 0..k {
            ccol[c + 1] += ccol[c];
        }
        assert_eq!(t.ccol(), &ccol[..], "{what}: column pointers");
        assert_eq!(t.rows_to_vec(), want.iter().map(|w| w.1 as i64).collect::<Vec<_>>(), "{what}: rows");
        assert_eq!(t.perm(), &want.iter().map(|w| w.2 as i64).collect::<Vec<_>>()[..], "{what}: perm");
        for (p, &j) in t.perm().iter().enumerate() {
            assert_eq!(t.inv()[j as usize], p as i64, "{what}: inverse at {j}");
        }
        let (_, rows, vals) = transpose_with(a, |j| j as f32 * 0.5);
        assert_eq!(rows, t.rows_to_vec(), "{what}: transpose_with rows");
        assert!(vals.iter().zip(t.perm()).all(|(&v, &j)| v == j as f32 * 0.5), "{what}: values follow");
    }
    let mut s = 11u64;
    let mut next = |bound: usize| {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (s >> 33) as usize % bound
    };
    let mut random = |m: usize, k: usize, deg: usize| {
        let (mut ptr, mut idx) = (vec![0i64], Vec::new());
        for r in 0..m {
            if r % 7 != 3 {
                let mut row: Vec<i64> = (0..next(2 * deg + 1)).map(|_| next(k - k / 4) as i64).collect();
                row.sort_unstable();
                idx.extend(row);
            }
            ptr.push(idx.len() as i64);
        }
        (ptr, idx)
    };
    let (p, i) = random(300, 40, 5);
    check(&p, &i, 40, "one pass");
    let (p, i) = random(500, 1000, 8);
    assert!(i.len() < crate::algebra::PARALLEL_MIN);
    check(&p, &i, 1000, "buckets, random");
    let (p, i) = random(9000, 3000, 9);
    assert!(i.len() >= crate::algebra::PARALLEL_MIN);
    check(&p, &i, 3000, "parallel blocks");
    // 1024 x 1024, 32 entries a row 32 columns apart: every column holds 32.
    let (mut p, mut i) = (vec![0i64], Vec::new());
    for r in 0..1024 {
        let mut row: Vec<i64> = (0..32).map(|t| ((r + 32 * t + 7) % 1024) as i64).collect();
        row.sort_unstable();
        i.extend(row);
        p.push(i.len() as i64);
    }
    check(&p, &i, 1024, "buckets, a DNN layer");
}
