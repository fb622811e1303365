//! The tests of `sort`, beside it in a file of their own.

use super::*;

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^ (z >> 31)
}

#[test]
fn sorted_pairs_matches_std_stable_sort() {
    for &(n, bound) in &[(10usize, 7u64), (5000, 1000), (200_000, 1 << 40), (100_000, 3)] {
        let keys: Vec<u64> = (0..n as u64).map(|i| splitmix(i) % bound).collect();
        let mut expected: Vec<(u64, usize)> = keys.iter().copied().zip(0..).collect();
        expected.sort_by_key(|p| p.0);
        assert_eq!(sorted_pairs(&keys, bound), expected, "n={n} bound={bound}");
    }
}

#[test]
fn plan_merges_duplicates() {
    let keys = [5u64, 1, 5, 3, 1];
    let plan = coalesce_plan(keys.to_vec(), &[2, 3]);
    // keys 1, 3, 5 over sizes [2, 3] are (0, 1), (1, 0), (1, 2)
    assert_eq!(plan.coords, vec![0, 1, 1, 1, 0, 2]);
    assert_eq!(plan.unique, 3);
    assert_eq!(plan.segment, vec![2, 0, 2, 1, 0]);
    assert!(!plan.identity);
    let plan = coalesce_plan(vec![0, 2, 4], &[5]);
    assert!(plan.identity);
    assert_eq!(plan.coords, vec![0, 2, 4]);
    assert_eq!(stable_sort_perm(&keys, 6), vec![1, 4, 3, 0, 2]);
}

#[test]
fn parallel_plan_matches_sequential_definition() {
    let n = 300_000u64;
    let keys: Vec<u64> = (0..n).map(|i| splitmix(i) % 50_000).collect();
    check_plan(&keys, &[50_000]);
    // Large key space: the packed path (40-bit keys) and the pair path (63-bit keys).
    for sizes in [vec![1usize << 20, 1 << 20], vec![1 << 31, 1 << 32]] {
        let bound: u64 = sizes.iter().map(|&s| s as u64).product();
        let keys: Vec<u64> =
            (0..n).map(|i| splitmix(i) % bound).chain((0..1000).map(|i| splitmix(i) % bound)).collect();
        check_plan(&keys, &sizes);
    }
}

fn check_plan(keys: &[u64], sizes: &[usize]) {
    let plan = coalesce_plan(keys.to_vec(), sizes);
    let mut uniq = keys.to_vec();
    uniq.sort_unstable();
    uniq.dedup();
    assert_eq!(plan.unique, uniq.len());
    assert_eq!(plan.coords, delinearize(&uniq, sizes));
    for (j, &k) in keys.iter().enumerate() {
        assert_eq!(uniq[plan.segment[j] as usize], k);
    }
}
