//! [`Scratch`]: cache-aligned temporary arrays in buffers each thread keeps between calls
//! (aligned copies of dense operands, packed panels, values gathered into another order), and
//! the gather that fills them.

use crate::alloc::out_len;
use crate::real::Real;
use core::mem::MaybeUninit;
use rayon::prelude::*;

std::thread_local! {
    /// Scratch buffers this thread keeps for its next call: a fresh multi-megabyte allocation is
    /// mapped anew by the allocator each time and pays a page fault per page (measured: a fifth
    /// of the 4096 x 128 product at 1 %). Per thread, so kernels never wait on each other for
    /// them; at most [`SCRATCH_KEPT`] buffers per thread.
    static POOL: core::cell::RefCell<Vec<Vec<u8>>> = const { core::cell::RefCell::new(Vec::new()) };
}

/// Scratch buffers a thread keeps between calls.
const SCRATCH_KEPT: usize = 4;

/// A cache-aligned array of `T` in a pooled buffer (returned to the pool on drop): aligned
/// copies of dense operands, and the per-entry arrays of a walk in another order.
pub(crate) struct Scratch<T> {
    buf: Vec<u8>,
    off: usize,
    len: usize,
    _t: core::marker::PhantomData<T>,
}

impl<T: Copy + Send + Sync> Scratch<T> {
    /// `len` elements written by `fill`.
    ///
    /// # Safety
    /// `fill` writes every element of the slice it is given.
    pub(crate) unsafe fn filled(len: usize, fill: impl FnOnce(&mut [MaybeUninit<T>])) -> Self {
        // The element bytes and the 64 bytes of alignment slack, without wrapping.
        let bytes = out_len(len, core::mem::size_of::<T>(), "scratch buffer");
        let room = bytes.checked_add(64).expect("scratch buffer: size overflows usize");
        let kept = POOL.with(|pool| {
            let mut pool = pool.borrow_mut();
            // The smallest that fits: a large buffer taken for a small need would leave the
            // next large need to a fresh allocation.
            let fit = pool
                .iter()
                .enumerate()
                .filter(|(_, b)| b.capacity() >= room)
                .min_by_key(|(_, b)| b.capacity())
                .map(|(i, _)| i);
            fit.map(|i| pool.remove(i))
        });
        let mut buf = kept.unwrap_or_else(|| Vec::with_capacity(room));
        let off = buf.as_ptr().align_offset(64);
        // SAFETY: `off + bytes <= capacity`, `off` aligns the start for `T` (64 is a multiple of
        // its alignment), and the slice is of `MaybeUninit`, so uninitialised bytes are fine.
        fill(unsafe { core::slice::from_raw_parts_mut(buf.as_mut_ptr().add(off) as *mut MaybeUninit<T>, len) });
        Self { buf, off, len, _t: core::marker::PhantomData }
    }

    /// An aligned copy of `x`.
    fn of(x: &[T]) -> Self {
        // SAFETY: the copy writes every element.
        unsafe {
            Self::filled(x.len(), |out| {
                core::ptr::copy_nonoverlapping(x.as_ptr(), out.as_mut_ptr() as *mut T, x.len());
            })
        }
    }

    /// `src[idx[p]]` for every `p`, gathered in parallel.
    pub(crate) fn gathered(src: &[T], idx: &[i64]) -> Self {
        // SAFETY: the zipped chunks cover the output; each element is written.
        unsafe { Self::filled(idx.len(), |out| gather_into(src, idx, out)) }
    }

    /// `len` copies of `value`.
    pub(crate) fn splat(len: usize, value: T) -> Self {
        // SAFETY: every element is written.
        unsafe {
            Self::filled(len, |out| {
                for o in out {
                    o.write(value);
                }
            })
        }
    }

    pub(crate) fn get(&self) -> &[T] {
        // SAFETY: `filled` initialised `len` elements at `off`, 64-byte aligned.
        unsafe { core::slice::from_raw_parts(self.buf.as_ptr().add(self.off) as *const T, self.len) }
    }

    pub(crate) fn get_mut(&mut self) -> &mut [T] {
        // SAFETY: as `get`, and `self` is borrowed mutably.
        unsafe { core::slice::from_raw_parts_mut(self.buf.as_mut_ptr().add(self.off) as *mut T, self.len) }
    }
}

impl<T> Drop for Scratch<T> {
    fn drop(&mut self) {
        // Most recent first; the least recently returned buffer goes when the pool is full, so
        // the buffers of the products in use stay. A thread that is exiting has no pool left:
        // the buffer is simply freed.
        let buf = core::mem::take(&mut self.buf);
        let _ = POOL.try_with(|pool| {
            let mut pool = pool.borrow_mut();
            pool.insert(0, buf);
            pool.truncate(SCRATCH_KEPT);
        });
    }
}

/// `out[p] = src[idx[p]]`, in parallel chunks. A gather, not a scatter through the inverse
/// permutation: the random reads overlap, where random writes each wait for their line
/// (measured: 1.0 ms against 1.2-2.5 ms for a million entries).
pub(crate) fn gather_into<T: Copy + Send + Sync>(src: &[T], idx: &[i64], out: &mut [MaybeUninit<T>]) {
    const CHUNK: usize = 1 << 14;
    out.par_chunks_mut(CHUNK).zip(idx.par_chunks(CHUNK)).for_each(|(o, ix)| {
        for (o, &i) in o.iter_mut().zip(ix) {
            o.write(src[i as usize]);
        }
    });
}

/// A cache-aligned copy of the rows `x [len, n]` when it pays: burn's buffers start 16 bytes
/// past a cache line, so every vector load of a row straddles two lines. The copy pays where
/// each row is read at least `min_reuse` times on average (`reads >= min_reuse * len`); measured
/// here: the SpMM gains 8 % at 390 reads per row (4096 x 128 at 10 %) but loses 15 % at 41 (at
/// 1 %), where the copy costs more than the split loads, while the SDDMM, whose every load is a
/// row read, gains a third at 41.
pub(crate) fn aligned_copy<T: Real>(x: &[T], n: usize, reads: usize, min_reuse: usize) -> Option<Scratch<T>> {
    let row_bytes = n * core::mem::size_of::<T>();
    (n > 0
        && !(x.as_ptr() as usize).is_multiple_of(64)
        && row_bytes.is_multiple_of(64)
        && reads >= min_reuse * (x.len() / n))
        .then(|| Scratch::of(x))
}
