//! The tests of `rng`, beside it in a file of their own.

use super::*;

/// The reference outputs of splitmix64 seeded with 0 (Vigna's `splitmix64.c`), and the
/// counter-based form agreeing with the stream.
#[test]
fn matches_the_reference_stream() {
    let mut rng = SplitMix64::new(0);
    let first: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
    assert_eq!(first, [0xE220_A839_7B1D_CDAF, 0x6E78_9E6A_A1B9_65F4, 0x06C4_5D18_8009_454F]);
    for seed in [0u64, 1, 0x5EED, u64::MAX] {
        let mut rng = SplitMix64::new(seed);
        for k in 0..100 {
            assert_eq!(rng.next_u64(), stream_at(seed, k), "seed {seed} draw {k}");
        }
    }
}

/// `below` stays in range and is uniform to within sampling noise on a range that does not
/// divide 2^64; `permutation` is a permutation; `unit_f64` lies in [0, 1).
#[test]
fn draws_are_in_range_and_uniform() {
    let mut rng = SplitMix64::new(3);
    let mut counts = [0usize; 7];
    for _ in 0..70_000 {
        counts[rng.below(7) as usize] += 1;
    }
    for (v, &c) in counts.iter().enumerate() {
        assert!((9_400..10_600).contains(&c), "value {v} drawn {c} times of 70000");
    }
    assert_eq!(SplitMix64::new(9).below(1), 0);
    let mut p = rng.permutation(1000);
    assert_ne!(p, (0..1000).collect::<Vec<_>>());
    p.sort_unstable();
    assert_eq!(p, (0..1000).collect::<Vec<_>>());
    assert!(rng.permutation(0).is_empty());
    for _ in 0..1000 {
        let u = rng.unit_f64();
        assert!((0.0..1.0).contains(&u), "{u}");
    }
}
