//! The one random-number generator of the workspace: splitmix64 (Steele, Lea and Flood, 2014),
//! seeded, reproducible on every platform and thread count, and small enough to own. The layers'
//! random patterns (`SparseLinear`, SET's regrowth), the neighbour sampler, the partitioner's
//! shuffles, the randomized SVD's normal draws and gradcheck's weights all draw from it, so a seed
//! means the same stream everywhere. It is not cryptographic.
//!
//! Two ways to draw: a [`SplitMix64`] stream (`next_u64` and what is built on it), or the
//! counter-based [`stream_at`] (`k`-th output of the stream of a seed, without the `k - 1`
//! before it), which the benchmark's workloads use to match their Python twin bit for bit.
//!
//! ```
//! use sparsegrad_kernels::rng::{stream_at, SplitMix64};
//! let mut rng = SplitMix64::new(42);
//! let (a, b) = (rng.next_u64(), rng.next_u64());
//! assert_eq!((stream_at(42, 0), stream_at(42, 1)), (a, b));
//! assert!(SplitMix64::new(7).below(10) < 10);
//! ```

/// The stream's increment: 2^64 divided by the golden ratio, odd.
pub const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// splitmix64's output function: a bijection of `u64` that mixes every input bit into every
/// output bit.
#[inline]
pub const fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The `k`-th output (from 0) of the stream seeded with `seed`: `SplitMix64::new(seed)`'s
/// `k + 1`-th `next_u64`, in constant time.
#[inline]
pub const fn stream_at(seed: u64, k: u64) -> u64 {
    mix(seed.wrapping_add(k.wrapping_add(1).wrapping_mul(GOLDEN)))
}

/// A splitmix64 stream: 64-bit outputs, period 2^64.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// The stream of `seed`.
    pub const fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN);
        mix(self.0)
    }

    /// Uniform in `0..n` (`n >= 1`), without modulo bias: the high word of `x * n` for a uniform
    /// `x`, rejecting the `2^64 mod n` low words that would favour some results (Lemire, 2019).
    ///
    /// # Panics
    /// If `n` is 0 (an empty range has no element to draw).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "SplitMix64::below: an empty range");
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = u128::from(self.next_u64()) * u128::from(n);
            if m as u64 >= threshold {
                return (m >> 64) as u64;
            }
        }
    }

    /// [`below`](Self::below) for a `usize` range.
    #[inline]
    pub fn below_usize(&mut self, n: usize) -> usize {
        // usize is at most 64 bits on every target Rust supports, so both casts are exact.
        self.below(n as u64) as usize
    }

    /// Uniform in `[0, 1)`, from the top 53 bits (every value a multiple of 2^-53).
    #[inline]
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniform random permutation of `0..n` (Fisher-Yates).
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut p: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            p.swap(i, self.below_usize(i + 1));
        }
        p
    }
}

#[cfg(test)]
mod tests;
