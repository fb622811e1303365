//! Sorting COO keys: the coalesce plan (sorted unique keys and, for every entry, the unique key
//! it merges into) and the stable order TensorFlow's `reorder` needs.
//!
//! Keys are bucketed on their high bits with a parallel counting sort (a stable scatter), then
//! each small bucket is sorted on its own. With about two entries per bucket this is linear
//! time, the same shape of work as scipy's coo -> csr, and it splits across threads without
//! atomics: each thread owns a contiguous chunk of entries and its own histogram.

use super::keys::{delinearize, FastDiv};
use super::PARALLEL_MIN;
use rayon::prelude::*;

/// What coalescing a COO tensor does to its entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoalescePlan {
    /// Number of distinct keys.
    pub unique: usize,
    /// The coordinates of the distinct keys in increasing key order, `[sizes.len(), unique]`.
    pub coords: Vec<i64>,
    /// For every entry, the rank of its key among the distinct keys (where its value is summed).
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

/// A raw pointer the parallel passes write through at positions each task owns.
struct SyncPtr<T>(*mut T);
// SAFETY: it is only written through by `write`, whose callers give each position to one task,
// so sharing it between threads races on nothing.
unsafe impl<T> Send for SyncPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SyncPtr<T> {}
impl<T> SyncPtr<T> {
    /// # Safety
    /// `i` must be in bounds of the allocation and written by one thread only.
    unsafe fn write(&self, i: usize, v: T) {
        // SAFETY: `i` is inside the allocation and owned by this writer (the caller's promise).
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
    // About eight entries per bucket: the histograms stay cache-sized, the buckets trivial to sort.
    let bucket_bits = (usize::BITS - (n / 8).leading_zeros()).min(key_bits).min(24);
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

/// Entries packed as `(key << pos_bits) | pos` and sorted: sorting the words sorts by key and,
/// for equal keys, by position (stable).
struct Packed {
    words: Vec<u64>,
    pos_bits: u32,
}

impl Packed {
    #[inline(always)]
    fn key(&self, w: u64) -> u64 {
        w >> self.pos_bits
    }

    #[inline(always)]
    fn pos(&self, w: u64) -> usize {
        (w & ((1u64 << self.pos_bits) - 1)) as usize
    }
}

fn threads_for(n: usize) -> usize {
    if n >= PARALLEL_MIN {
        rayon::current_num_threads().clamp(1, 8)
    } else {
        1
    }
}

std::thread_local! {
    /// Sort buffers kept between calls: on a VM, first-touch page faults on fresh 100 MB
    /// buffers cost more than the sort itself.
    static SCRATCH: core::cell::RefCell<Vec<u64>> = const { core::cell::RefCell::new(Vec::new()) };
}

/// An empty vector with capacity for `n` words, reusing the thread's kept buffer when it fits.
fn scratch_take(n: usize) -> Vec<u64> {
    let mut v = SCRATCH.with(|s| core::mem::take(&mut *s.borrow_mut()));
    v.clear();
    v.reserve(n);
    v
}

/// Keeps `v` for the next sort on this thread (the larger of it and the kept one).
fn scratch_give(v: Vec<u64>) {
    SCRATCH.with(|s| {
        let mut kept = s.borrow_mut();
        if v.capacity() > kept.capacity() {
            *kept = v;
        }
    });
}

/// One stable counting pass of an LSD radix sort on `bits` bits at `shift`, split across threads:
/// each thread owns a contiguous chunk of `src` and a histogram.
fn radix_pass(src: &[u64], dst: &mut [u64], shift: u32, bits: u32, threads: usize) {
    let n = src.len();
    let radix = 1usize << bits;
    let mask = (radix - 1) as u64;
    let chunk = n.div_ceil(threads).max(1);
    let mut hists: Vec<Vec<usize>> = src
        .par_chunks(chunk)
        .map(|part| {
            let mut h = vec![0usize; radix];
            for &w in part {
                h[((w >> shift) & mask) as usize] += 1;
            }
            h
        })
        .collect();
    let mut running = 0usize;
    for d in 0..radix {
        for h in hists.iter_mut() {
            let c = h[d];
            h[d] = running;
            running += c;
        }
    }
    let out = SyncPtr(dst.as_mut_ptr());
    src.par_chunks(chunk).zip(hists.par_iter_mut()).for_each(|(part, offs)| {
        for &w in part {
            let d = ((w >> shift) & mask) as usize;
            // SAFETY: the offsets partition 0..n; each slot is written exactly once.
            unsafe { out.write(offs[d], w) };
            offs[d] += 1;
        }
    });
}

/// The packed sort, when keys and positions fit one u64 together: an LSD radix sort on the
/// top (up to 22) key bits in cache-sized digit passes, then each short run of equal top bits
/// sorted in place. `keys` is consumed: its buffer is the radix scratch space, returned spare
/// with the result for the caller to reuse. `Err` gives the keys back when they do not fit.
fn sorted_packed(keys: Vec<u64>, bound: u64) -> Result<(Packed, Vec<u64>), Vec<u64>> {
    let n = keys.len();
    let key_bits = 64 - bound.saturating_sub(1).leading_zeros();
    let pos_bits = (64 - (n as u64).leading_zeros()).max(1);
    if key_bits + pos_bits > 64 {
        return Err(keys);
    }
    let threads = threads_for(n);
    let mut words = scratch_take(n);
    let chunk = n.div_ceil(threads * 4).max(4096);
    words.spare_capacity_mut()[..n].par_chunks_mut(chunk).enumerate().for_each(|(c, out)| {
        let base = c * chunk;
        for (j, (o, &k)) in out.iter_mut().zip(&keys[base..]).enumerate() {
            o.write((k << pos_bits) | (base + j) as u64);
        }
    });
    // SAFETY: every slot was initialised above.
    unsafe { words.set_len(n) };
    let top = key_bits.min(22);
    let low = key_bits - top;
    let passes = top.div_ceil(11).max(1);
    let mut scratch = keys;
    let mut done = 0;
    for p in 0..passes {
        let bits = (top - done).div_ceil(passes - p);
        radix_pass(&words, &mut scratch, pos_bits + low + done, bits, threads);
        core::mem::swap(&mut words, &mut scratch);
        done += bits;
    }
    if low > 0 {
        let high = |w: u64| w >> (pos_bits + low);
        let cuts = cut_at_changes(n, threads * 4, |i| high(words[i]));
        let mut parts = Vec::with_capacity(cuts.len());
        let mut tail: &mut [u64] = &mut words;
        for w in cuts.windows(2) {
            let (head, t) = tail.split_at_mut(w[1] - w[0]);
            parts.push(head);
            tail = t;
        }
        parts.into_par_iter().for_each(|part| {
            let mut s = 0;
            while s < part.len() {
                let h = high(part[s]);
                let e = s + part[s..].iter().take_while(|&&w| high(w) == h).count();
                if e - s > 1 {
                    part[s..e].sort_unstable();
                }
                s = e;
            }
        });
    }
    Ok((Packed { words, pos_bits }, scratch))
}

/// About `tasks` cut points over `0..n` (first 0, last n), moved right until `group` changes,
/// so no run of equal groups spans two tasks.
fn cut_at_changes(n: usize, tasks: usize, group: impl Fn(usize) -> u64) -> Vec<usize> {
    let mut cuts = vec![0usize];
    for t in 1..tasks {
        let mut c = (t * n / tasks).max(*cuts.last().expect("non-empty"));
        while c > 0 && c < n && group(c - 1) == group(c) {
            c += 1;
        }
        cuts.push(c.min(n));
    }
    cuts.push(n);
    cuts
}

/// The permutation that sorts `keys` stably (TensorFlow's `sparse_reorder`).
pub fn stable_sort_perm(keys: &[u64], bound: u64) -> Vec<i64> {
    match sorted_packed(keys.to_vec(), bound) {
        Ok((p, _)) => p.words.iter().map(|&w| p.pos(w) as i64).collect(),
        Err(_) => sorted_pairs(keys, bound).into_iter().map(|(_, p)| p as i64).collect(),
    }
}

/// Plans the coalescing of entries with these keys over `sizes` (the keys are consumed: their
/// buffer is reused).
pub fn coalesce_plan(keys: Vec<u64>, sizes: &[usize]) -> CoalescePlan {
    let n = keys.len();
    let bound = sizes.iter().map(|&s| s as u64).product::<u64>();
    if is_strictly_increasing(&keys) {
        let coords = delinearize(&keys, sizes);
        return CoalescePlan { unique: n, coords, segment: (0..n as i64).collect(), identity: true };
    }
    match sorted_packed(keys, bound) {
        Ok((p, spare)) => {
            let plan = plan_from_sorted(n, sizes, |i| p.key(p.words[i]), |i| p.pos(p.words[i]), spare);
            scratch_give(p.words);
            plan
        }
        Err(keys) => {
            let pairs = sorted_pairs(&keys, bound);
            plan_from_sorted(n, sizes, |i| pairs[i].0, |i| pairs[i].1, keys)
        }
    }
}

/// Unique keys and segments from entries in sorted order (`key(i)`, original position `pos(i)`),
/// two parallel passes over tasks cut between runs: count distinct keys, then write them at each
/// task's offset. `spare` (capacity >= n) becomes the segment vector.
fn plan_from_sorted(
    n: usize,
    sizes: &[usize],
    key: impl Fn(usize) -> u64 + Sync,
    pos: impl Fn(usize) -> usize + Sync,
    spare: Vec<u64>,
) -> CoalescePlan {
    let cuts = cut_at_changes(n, threads_for(n) * 4, &key);
    let is_new = |i: usize, start: usize| i == start || key(i - 1) != key(i);
    let counts: Vec<usize> = cuts.par_windows(2).map(|w| (w[0]..w[1]).filter(|&i| is_new(i, w[0])).count()).collect();
    let mut offsets = Vec::with_capacity(counts.len());
    let mut total = 0usize;
    for c in &counts {
        offsets.push(total);
        total += c;
    }
    let m = sizes.len();
    let divs: Vec<FastDiv> = sizes.iter().map(|&s| FastDiv::new(s as u64)).collect();
    let mut coords: Vec<i64> = Vec::with_capacity(m * total);
    let mut segment = spare;
    segment.clear();
    segment.reserve(n);
    let (co, sg) = (SyncPtr(coords.as_mut_ptr()), SyncPtr(segment.as_mut_ptr()));
    cuts.par_windows(2).zip(offsets.par_iter()).for_each(|(w, &off)| {
        let mut next = off;
        for i in w[0]..w[1] {
            if is_new(i, w[0]) {
                // Peel coordinates from the last dim.
                let mut k = key(i);
                for d in (1..m).rev() {
                    let (q, r) = divs[d].divmod(k);
                    // SAFETY: tasks own disjoint columns [off, off + count) of the coordinate
                    // rows (the count and write passes use the same cuts), next < off + count.
                    unsafe { co.write(d * total + next, r as i64) };
                    k = q;
                }
                // SAFETY: as above.
                unsafe { co.write(next, k as i64) };
                next += 1;
            }
            // SAFETY: positions are a permutation of 0..n: each slot written once.
            unsafe { sg.write(pos(i), next as u64 - 1) };
        }
    });
    // SAFETY: every slot of both vectors was written above.
    unsafe {
        coords.set_len(m * total);
        segment.set_len(n);
    }
    // Same size and alignment: collected in place, no new buffer.
    let segment = segment.into_iter().map(|s| s as i64).collect();
    CoalescePlan { unique: total, coords, segment, identity: false }
}

#[cfg(test)]
mod tests;
