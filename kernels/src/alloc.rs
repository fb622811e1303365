//! Allocation that fails with an error instead of aborting the process: buffers sized by a
//! tensor's dimensions (which an adversarial shape can make enormous) are reserved with
//! `try_reserve_exact`, and a dense result about to be built behind a backend call is probed
//! first. A refused or overflowing request is a [`SparseError::Allocation`] naming what the
//! memory was for.

use crate::error::{Result, SparseError};

/// Bytes of `len` elements of `T`, or the error for a size that overflows.
fn bytes_of<T>(len: usize, what: &'static str) -> Result<usize> {
    len.checked_mul(core::mem::size_of::<T>())
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or(SparseError::Allocation { bytes: usize::MAX, what })
}

/// An empty vector with room for `len` elements, or the error when it cannot be had.
pub fn try_vec<T>(len: usize, what: &'static str) -> Result<Vec<T>> {
    let bytes = bytes_of::<T>(len, what)?;
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| SparseError::Allocation { bytes, what })?;
    Ok(v)
}

/// `len` copies of `value`, or the error when the memory cannot be had.
pub fn try_filled<T: Clone>(len: usize, value: T, what: &'static str) -> Result<Vec<T>> {
    let mut v = try_vec(len, what)?;
    v.resize(len, value);
    Ok(v)
}

/// Checks that `elems` elements of `elem_bytes` bytes each can be allocated, by asking the
/// allocator for them and giving them back (untouched, so no page is faulted in). For results
/// built behind a backend call, which allocates without a way to report failure: past this
/// probe, their allocation succeeds as this one did.
pub fn ensure_allocatable(elems: usize, elem_bytes: usize, what: &'static str) -> Result<()> {
    let bytes = elems
        .checked_mul(elem_bytes)
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or(SparseError::Allocation { bytes: usize::MAX, what })?;
    // Small buffers are not worth a round trip to the allocator.
    if bytes >= 1 << 24 {
        let mut probe: Vec<u8> = Vec::new();
        probe.try_reserve_exact(bytes).map_err(|_| SparseError::Allocation { bytes, what })?;
    }
    Ok(())
}

/// The element count `a * b` of an output, or a panic naming it: a wrapped count would size a
/// buffer the kernels then write past.
pub fn out_len(a: usize, b: usize, what: &str) -> usize {
    a.checked_mul(b).unwrap_or_else(|| panic!("{what}: {a} x {b} elements overflow usize"))
}

#[cfg(test)]
mod tests;
