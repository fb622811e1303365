//! The tests of `keys`, beside it in a file of their own.

use super::*;

#[test]
fn keys_are_row_major_and_invert() {
    let sizes = [2, 3, 4];
    // entries (1,2,3), (0,0,1), (1,0,0)
    let idx: Vec<i32> = vec![1, 0, 1, 2, 0, 0, 3, 1, 0];
    let keys = linear_keys(&idx, 3, &sizes);
    assert_eq!(keys, vec![12 + 8 + 3, 1, 12]);
    let back = delinearize(&keys, &sizes);
    assert_eq!(back, idx.iter().map(|&v| v as i64).collect::<Vec<_>>());
}

#[test]
fn fast_div_is_exact() {
    for d in [1u64, 3, 7, 1000, 4096, 999_983, 1 << 40] {
        let f = FastDiv::new(d);
        for n in [0u64, 1, d - 1, d, d + 1, 12345678901, (1 << 52) - 1, 1 << 52, u64::MAX] {
            assert_eq!(f.divmod(n), (n / d, n % d), "{n} / {d}");
        }
    }
    let sizes = [70_000usize, 3, 5];
    let keys: Vec<u64> = (0..200_000u64).map(|k| (k * 7919) % (70_000 * 15)).collect();
    let back = delinearize(&keys, &sizes);
    for (j, &k) in keys.iter().enumerate() {
        assert_eq!(back[j] as u64 * 15 + back[200_000 + j] as u64 * 5 + back[400_000 + j] as u64, k);
    }
}
