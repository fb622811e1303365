//! Index algebra: the untracked integer work behind every layout change, as host kernels over
//! slices (DESIGN's first kind of work). Values never pass through here; these kernels produce
//! the index tensors and the permutations and segment ids that burn ops then apply to values,
//! so gradients flow through burn's own autodiff.
//!
//! - `keys`: lexicographic keys of COO entries (linearised indices) and their inverse.
//! - `sort`: the coalesce plan (sorted unique keys, a segment id per entry) and stable sorting.
//! - `compress`: compressed <-> expanded row (column) indices.
//! - `validate`: the invariants of SPEC section 1, each violation a `SparseError`.
//! - `nonzero`: which items of a dense buffer hold a non-zero.

pub mod compress;
pub mod keys;
pub mod nonzero;
pub mod sort;
pub mod validate;

/// An integer index element the kernels read directly (i64, i32, i16, i8).
pub trait IndexElem: Copy + Send + Sync + Ord + 'static {
    /// Widens to i64.
    fn to_i64(self) -> i64;
}

macro_rules! index_elem {
    ($($t:ty),*) => {$(
        impl IndexElem for $t {
            #[inline(always)]
            fn to_i64(self) -> i64 { self as i64 }
        }
    )*};
}
index_elem!(i64, i32, i16, i8);

/// Dispatches a generic kernel call over the variants of an [`crate::host::IntSlice`].
#[macro_export]
#[doc(hidden)]
macro_rules! match_ints {
    ($slice:expr, $s:ident => $body:expr) => {
        match $slice {
            $crate::host::IntSlice::I64($s) => $body,
            $crate::host::IntSlice::I32($s) => $body,
            $crate::host::IntSlice::I16($s) => $body,
            $crate::host::IntSlice::I8($s) => $body,
        }
    };
}

/// Dispatches a generic kernel call over the variants of an [`crate::host::FloatSlice`].
#[macro_export]
#[doc(hidden)]
macro_rules! match_floats {
    ($slice:expr, $s:ident => $body:expr) => {
        match $slice {
            $crate::host::FloatSlice::F64($s) => $body,
            $crate::host::FloatSlice::F32($s) => $body,
            $crate::host::FloatSlice::F16($s) => $body,
            $crate::host::FloatSlice::BF16($s) => $body,
        }
    };
}

/// Entries above which kernels split work across rayon threads.
pub(crate) const PARALLEL_MIN: usize = 1 << 16;
