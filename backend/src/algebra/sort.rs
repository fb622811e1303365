//! Sorting COO keys: the coalesce plan (sorted unique keys and, for every entry, the unique key
//! it merges into) and the stable order TensorFlow's `reorder` needs.
//!
//! Keys are bucketed on their high bits with a parallel counting sort (a stable scatter), then
//! each small bucket is sorted on its own. With about two entries per bucket this is linear
//! time, the same shape of work as scipy's coo -> csr, and it splits across threads without
//! atomics: each thread owns a contiguous chunk of entries and its own histogram.

use super::PARALLEL_MIN;
use rayon::prelude::*;

/// What coalescing a COO tensor does to its entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoalescePlan {
    /// The distinct keys in increasing order.
    pub unique_keys: Vec<u64>,
    /// For every entry, the position of its key in `unique_keys` (where its value is summed).
    pub segment: Vec<i64>,
    /// True when the keys were already strictly increasing: coalescing changes nothing.
    pub identity: bool,
}

/// Whether keys are strictly increasing (sorted, no duplicates).
pub fn is_strictly_increasing(keys: &[u64]) -> bool {
    keys.windows(2).all(|w| w[0] < w[1])
}

/// Whether keys are non-decreasing.
pub fn is_sorted(keys: &[u64]) -> bool {
    keys.windows(2).all(|w| w[0] <= w[1])
}

struct SyncPtr<T>(*mut T);
unsafe impl<T> Send for SyncPtr<T> {}
unsafe impl<T> Sync for SyncPtr<T> {}
impl<T> SyncPtr<T> {
    /// # Safety
    /// `i` must be in bounds of the allocation and written by one thread only.
    unsafe fn write(&self, i: usize, v: T) {
        unsafe { self.0.add(i).write(v) }
    }
}

/// `(key, original position)` for every entry, sorted by key; equal keys keep their order.
/// `bound` is one past the largest possible key.
pub fn sorted_pairs(keys: &[u64], bound: u64) -> Vec<(u64, usize)> {
    let n = keys.len();
    if n < 2048 {
        let mut pairs: Vec<(u64, usize)> = keys.iter().copied().zip(0..).collect();
        pairs.sort_by_key(|p| p.0);
        return pairs;
    }
    let key_bits = 64 - bound.saturating_sub(1).leading_zeros();
    let bucket_bits = (usize::BITS - (n / 2).leading_zeros()).min(key_bits).min(26);
    let shift = key_bits - bucket_bits;
    let nb = 1usize << bucket_bits;

    let threads = if n >= PARALLEL_MIN { rayon::current_num_threads().clamp(1, 8) } else { 1 };
    let chunk = n.div_ceil(threads);
    // Per-thread histograms, then exclusive offsets in (bucket, thread) order so the scatter is
    // stable: thread t's entries of bucket b land after those of threads < t.
    let mut hists: Vec<Vec<u32>> = keys
        .par_chunks(chunk)
        .map(|part| {
            let mut h = vec![0u32; nb];
            for &k in part {
                h[(k >> shift) as usize] += 1;
            }
            h
        })
        .collect();
    let mut starts = vec![0usize; nb + 1];
    let mut running = 0usize;
    for b in 0..nb {
        starts[b] = running;
        for h in hists.iter_mut() {
            let c = h[b] as usize;
            h[b] = running as u32;
            running += c;
        }
    }
    starts[nb] = running;
    // Offsets can exceed u32 only past 4G entries; fall back to a plain sort there.
    if n > u32::MAX as usize {
        let mut pairs: Vec<(u64, usize)> = keys.iter().copied().zip(0..).collect();
        pairs.par_sort_by_key(|p| p.0);
        return pairs;
    }
    let mut pairs: Vec<(u64, usize)> = Vec::with_capacity(n);
    let out = SyncPtr(pairs.as_mut_ptr());
    keys.par_chunks(chunk).zip(hists.par_iter_mut()).enumerate().for_each(|(t, (part, offs))| {
        let base = t * chunk;
        for (j, &k) in part.iter().enumerate() {
            let b = (k >> shift) as usize;
            let at = offs[b] as usize;
            offs[b] += 1;
            // SAFETY: the offsets partition 0..n; each slot is written exactly once.
            unsafe { out.write(at, (k, base + j)) };
        }
    });
    // SAFETY: all n slots were written above.
    unsafe { pairs.set_len(n) };

    // Sort inside buckets; split the buffer at bucket boundaries into per-task ranges.
    let tasks = (threads * 8).min(nb);
    let mut ranges = Vec::with_capacity(tasks);
    let mut rest: &mut [(u64, usize)] = &mut pairs;
    let mut consumed = 0usize;
    for t in 0..tasks {
        let b_end = if t + 1 == tasks { nb } else { (t + 1) * nb / tasks };
        let end = starts[b_end];
        let (head, tail) = rest.split_at_mut(end - consumed);
        ranges.push((head, consumed, (t * nb / tasks)..b_end));
        rest = tail;
        consumed = end;
    }
    ranges.into_par_iter().for_each(|(slice, offset, buckets)| {
        for b in buckets {
            let (s, e) = (starts[b] - offset, starts[b + 1] - offset);
            if e - s > 1 {
                slice[s..e].sort_by_key(|p| p.0);
            }
        }
    });
    pairs
}

/// The permutation that sorts `keys` stably (TensorFlow's `sparse_reorder`).
pub fn stable_sort_perm(keys: &[u64], bound: u64) -> Vec<i64> {
    sorted_pairs(keys, bound).into_iter().map(|(_, p)| p as i64).collect()
}

/// Plans the coalescing of entries with these keys.
pub fn coalesce_plan(keys: &[u64], bound: u64) -> CoalescePlan {
    if is_strictly_increasing(keys) {
        return CoalescePlan {
            unique_keys: keys.to_vec(),
            segment: (0..keys.len() as i64).collect(),
            identity: true,
        };
    }
    let pairs = sorted_pairs(keys, bound);
    let mut unique_keys = Vec::with_capacity(keys.len());
    let mut segment = vec![0i64; keys.len()];
    for &(k, p) in &pairs {
        if unique_keys.last() != Some(&k) {
            unique_keys.push(k);
        }
        segment[p] = unique_keys.len() as i64 - 1;
    }
    CoalescePlan { unique_keys, segment, identity: false }
}

#[cfg(test)]
mod tests {
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
        let plan = coalesce_plan(&keys, 6);
        assert_eq!(plan.unique_keys, vec![1, 3, 5]);
        assert_eq!(plan.segment, vec![2, 0, 2, 1, 0]);
        assert!(!plan.identity);
        let plan = coalesce_plan(&[0, 2, 4], 5);
        assert!(plan.identity);
        assert_eq!(stable_sort_perm(&keys, 6), vec![1, 4, 3, 0, 2]);
    }
}
