//! The index types the kernels read: [`IndexElem`], an integer element read straight from a
//! buffer (i8 to i64), and [`IndexType`], which of those a tensor's indices are stored in, with
//! the largest index it holds (the bound every dimension and entry count is checked against).

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

/// The signed integer type indices are stored in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IndexType {
    /// 8-bit indices.
    I8,
    /// 16-bit indices.
    I16,
    /// 32-bit indices.
    I32,
    /// 64-bit indices.
    I64,
}

impl IndexType {
    /// The largest index the type holds.
    pub fn max(self) -> i64 {
        match self {
            IndexType::I8 => i8::MAX as i64,
            IndexType::I16 => i16::MAX as i64,
            IndexType::I32 => i32::MAX as i64,
            IndexType::I64 => i64::MAX,
        }
    }

    /// torch's name: `int8` ... `int64`.
    pub fn name(self) -> &'static str {
        match self {
            IndexType::I8 => "int8",
            IndexType::I16 => "int16",
            IndexType::I32 => "int32",
            IndexType::I64 => "int64",
        }
    }

    /// The narrowest type at least as wide as `self` that holds `max` (int64 at most): how
    /// indices derived from a tensor's (a block-diagonal batch, a concatenation) are widened
    /// when they outgrow it, never narrowed.
    pub fn widened_for(self, max: u64) -> IndexType {
        [IndexType::I8, IndexType::I16, IndexType::I32, IndexType::I64]
            .into_iter()
            .find(|&t| t >= self && max <= t.max() as u64)
            .unwrap_or(IndexType::I64)
    }
}

/// Entries above which kernels split work across rayon threads.
pub const PARALLEL_MIN: usize = 1 << 16;

#[cfg(test)]
mod tests;
