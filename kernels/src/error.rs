//! `SparseError`: every way a sparse tensor can be malformed or misused, each naming the
//! component, the position and the offending value so the caller can find it in their data.

use core::fmt;

/// An invalid sparse tensor or an invalid request on one.
///
/// Checked constructors and conversions return it instead of panicking; every variant names the
/// component (`"indices"`, `"crow_indices"`, `"values"`, ...) and where the problem is.
///
/// `#[non_exhaustive]`: later versions add variants (a finer kind of a case that is an
/// [`InvalidArgument`](SparseError::InvalidArgument) today), so a `match` on it outside this
/// crate needs a `_` arm.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SparseError {
    /// An index outside `0..size` of its dimension.
    IndexOutOfBounds {
        /// The index tensor holding it.
        component: &'static str,
        /// The dimension the index addresses.
        dim: usize,
        /// The entry (column of `indices`, or position in a plain index tensor).
        position: usize,
        /// The offending value.
        ///
        /// Wide enough for any `i64` index value and any `usize` index argument, so every path
        /// reports the value it was given (a `usize` above `i64::MAX` would wrap in an `i64`).
        value: i128,
        /// The size of the dimension.
        size: usize,
    },
    /// A component whose shape does not match what the others imply.
    ShapeMismatch {
        /// The component with the wrong shape.
        component: &'static str,
        /// The shape implied by the other components and the size.
        expected: Vec<usize>,
        /// The shape given.
        actual: Vec<usize>,
    },
    /// Compressed indices must start at 0.
    CompressedStart {
        /// `crow_indices` or `ccol_indices`.
        component: &'static str,
        /// The batch entry (0 without batch dims).
        batch: usize,
        /// The first value found.
        value: i64,
    },
    /// Compressed indices must be non-decreasing.
    CompressedDecreasing {
        /// `crow_indices` or `ccol_indices`.
        component: &'static str,
        /// The batch entry.
        batch: usize,
        /// The position of the value smaller than its predecessor.
        position: usize,
        /// The predecessor.
        previous: i64,
        /// The offending value.
        value: i64,
    },
    /// Compressed indices must end at the number of specified elements.
    CompressedEnd {
        /// `crow_indices` or `ccol_indices`.
        component: &'static str,
        /// The batch entry.
        batch: usize,
        /// The number of specified elements (per batch entry).
        expected: usize,
        /// The last value found.
        value: i64,
    },
    /// Plain indices must be strictly increasing within a compressed row (column).
    PlainUnsorted {
        /// `col_indices` or `row_indices`.
        component: &'static str,
        /// The batch entry.
        batch: usize,
        /// The compressed row (column, block row, block column).
        segment: usize,
        /// The position in the plain index tensor.
        position: usize,
        /// The index before it.
        previous: i64,
        /// The offending value.
        value: i64,
    },
    /// The same plain index twice within a compressed row (column).
    PlainDuplicate {
        /// `col_indices` or `row_indices`.
        component: &'static str,
        /// The batch entry.
        batch: usize,
        /// The compressed row (column).
        segment: usize,
        /// The position of the repeat.
        position: usize,
        /// The repeated value.
        value: i64,
    },
    /// A dimension (or the number of specified elements) too large for the index dtype.
    DimensionTooLarge {
        /// `"size"` for a dimension, `"nse"` for the element count of compressed indices.
        component: &'static str,
        /// The dimension.
        dim: usize,
        /// Its size.
        size: usize,
        /// The index dtype, as text (`"int32"`).
        index_dtype: &'static str,
        /// The largest value the dtype holds.
        max: i64,
    },
    /// The shape has more elements than an `i64` can count.
    ElementCountOverflow {
        /// The shape.
        shape: Vec<usize>,
    },
    /// A block size that does not divide the matrix dimension it tiles.
    BlocksizeMismatch {
        /// The sparse dimension (row or column) of the shape.
        dim: usize,
        /// Its size.
        size: usize,
        /// The block extent along it.
        block: usize,
    },
    /// Batched compressed tensors need the same number of specified elements in every batch entry.
    UnequalBatchNse {
        /// The first batch entry whose count differs from batch entry 0.
        batch: usize,
        /// Its count.
        nse: usize,
        /// Batch entry 0's count.
        expected: usize,
    },
    /// A dtype the component cannot hold.
    UnsupportedDtype {
        /// The component.
        component: &'static str,
        /// The dtype found, as Debug text.
        dtype: String,
    },
    /// An operation that needs coalesced input (torch: `indices()` on an uncoalesced tensor).
    Uncoalesced {
        /// The operation.
        operation: &'static str,
    },
    /// An operation that does not accept this layout.
    UnsupportedLayout {
        /// The operation.
        operation: &'static str,
        /// The layout given, as text.
        layout: &'static str,
    },
    /// Indices not in lexicographic order where an operation requires it (TensorFlow's
    /// validating dense conversion).
    NotSorted {
        /// The entry that comes before its predecessor.
        position: usize,
    },
    /// The same index twice where an operation forbids it.
    RepeatedIndex {
        /// The second occurrence.
        position: usize,
    },
    /// An op that does not map 0 to 0 (cos, exp, ...): its result would be dense, so it is
    /// refused on sparse input, as torch refuses it ("unsupported tensor layout").
    NotZeroPreserving {
        /// The operation.
        operation: &'static str,
        /// The layout given, as text.
        layout: &'static str,
    },
    /// A group of a semi-structured (N:M) row with more non-zeros than the pattern keeps.
    PatternViolation {
        /// The pattern (`"2:4"`, `"1:2"`).
        pattern: &'static str,
        /// The row.
        row: usize,
        /// The first column of the offending group.
        column: usize,
        /// The non-zeros found in the group.
        nonzeros: usize,
    },
    /// Memory an operation needs could not be had: the allocator refused it, or its size
    /// overflows what an allocation can ask for.
    Allocation {
        /// Bytes asked for (`usize::MAX` when the size itself overflows).
        bytes: usize,
        /// What the memory was for.
        what: &'static str,
    },
    /// Arguments inconsistent with each other (dimension counts, ranks).
    InvalidArgument {
        /// The operation.
        operation: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A device of a burn backend the sparse ops have no kernels for in this build (burn itself
    /// would panic at the first op with "Backend not supported for custom op").
    UnsupportedBackend {
        /// The device, as burn prints it (`NdArray(Cpu)`, `Cube(Wgpu(..))`).
        device: String,
        /// The backends this build runs on, and how to add the others.
        supported: &'static str,
    },
    /// A device this build has kernels for, but whose runtime cannot run on this machine: a CUDA
    /// device where no driver (`libcuda.so`) or GPU is found, a wgpu device without an adapter.
    DeviceUnavailable {
        /// The device, as burn prints it (`Cube(Cuda(..))`).
        device: String,
        /// What the runtime said when it was first used.
        reason: String,
    },
}

impl fmt::Display for SparseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use SparseError::*;
        match self {
            PatternViolation { pattern, row, column, nonzeros } => {
                let (n, m) = pattern.split_once(':').unwrap_or(("?", "?"));
                write!(
                    f,
                    "row {row}, columns {column}..{}: {nonzeros} non-zeros in a group of {m}, the {pattern} pattern keeps at most {n}",
                    column + m.parse::<usize>().unwrap_or(1) - 1
                )
            }
            UnsupportedBackend { device, supported } => {
                write!(f, "device {device}: sparsegrad has no kernels for its backend; this build supports {supported}")
            }
            DeviceUnavailable { device, reason } => write!(f, "device {device} cannot run on this machine: {reason}"),
            IndexOutOfBounds { component, dim, position, value, size } => write!(
                f,
                "{component}: index {value} at position {position} is out of bounds for dimension {dim} of size {size}"
            ),
            ShapeMismatch { component, expected, actual } => {
                write!(f, "{component}: expected shape {expected:?}, got {actual:?}")
            }
            CompressedStart { component, batch, value } => write!(
                f,
                "{component}[{batch}]: compressed indices must start with 0, got {value}"
            ),
            CompressedDecreasing { component, batch, position, previous, value } => write!(
                f,
                "{component}[{batch}]: compressed indices must be non-decreasing, got {value} at position {position} after {previous}"
            ),
            CompressedEnd { component, batch, expected, value } => write!(
                f,
                "{component}[{batch}]: compressed indices must end with nse = {expected}, got {value}"
            ),
            PlainUnsorted { component, batch, segment, position, previous, value } => write!(
                f,
                "{component}[{batch}]: plain indices must be sorted within segment {segment}, got {value} at position {position} after {previous}"
            ),
            PlainDuplicate { component, batch, segment, position, value } => write!(
                f,
                "{component}[{batch}]: plain index {value} repeated within segment {segment} at position {position}"
            ),
            DimensionTooLarge { component, dim, size, index_dtype, max } => write!(
                f,
                "{component}: {size} (dimension {dim}) does not fit the index dtype {index_dtype} (max {max})"
            ),
            ElementCountOverflow { shape } => {
                write!(f, "shape {shape:?} has more elements than i64 can count")
            }
            BlocksizeMismatch { dim, size, block } => write!(
                f,
                "blocksize: block extent {block} does not divide dimension {dim} of size {size}"
            ),
            UnequalBatchNse { batch, nse, expected } => write!(
                f,
                "batch entry {batch} has {nse} specified elements, batch entry 0 has {expected}: batched compressed tensors need equal counts"
            ),
            UnsupportedDtype { component, dtype } => {
                write!(f, "{component}: unsupported dtype {dtype}")
            }
            Uncoalesced { operation } => write!(
                f,
                "Cannot get {operation} on an uncoalesced tensor, please call .coalesce() first"
            ),
            UnsupportedLayout { operation, layout } => {
                write!(f, "{operation}: unsupported tensor layout {layout}")
            }
            NotSorted { position } => write!(
                f,
                "indices: entry {position} is out of lexicographic order"
            ),
            RepeatedIndex { position } => {
                write!(f, "indices: entry {position} repeats the index before it")
            }
            NotZeroPreserving { operation, layout } => write!(
                f,
                "{operation}: unsupported tensor layout: {layout} ({operation} does not map 0 to 0, so its result is dense); convert to dense first: `s.to_dense().{operation}()`"
            ),
            Allocation { bytes: usize::MAX, what } => write!(f, "{what}: the size overflows what an allocation can ask for"),
            Allocation { bytes, what } => write!(f, "{what}: could not allocate {bytes} bytes"),
            InvalidArgument { operation, message } => write!(f, "{operation}: {message}"),
        }
    }
}

impl std::error::Error for SparseError {}

/// Shorthand for results of fallible sparse operations.
pub type Result<T> = core::result::Result<T, SparseError>;

/// An [`SparseError::InvalidArgument`] of `operation` saying `message`.
pub fn invalid(operation: &'static str, message: impl Into<String>) -> SparseError {
    SparseError::InvalidArgument { operation, message: message.into() }
}
