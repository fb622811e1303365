//! A streaming, bounds-checked Matrix Market `coordinate` reader that honours the banner:
//! [`read_mtx`] keeps the values of a `real` or `integer` file and returns a `symmetric` or
//! `skew-symmetric` file's stored triangle as such ([`MatrixMarket::to_general`] adds the mirrored
//! entries). It lives apart from the dataset loaders of `planetoid`, which use it for their
//! adjacency and feature files (and its line reader for their TSV files), because it is a
//! general-purpose reader (SuiteSparse files load with it too). Input is a file or any
//! [`Read`] ([`read_mtx_from`]); gzip-compressed input is recognised by its magic bytes
//! (`1f 8b`), whatever the file is called, and a missing `path` is looked for as `path.gz`.
//! `real` values take what scipy and numpy take, `nan`, `inf`, `-inf` and `infinity` in any case
//! included; [`ReadOptions`] refuses them where a caller wants finite values only.
//!
//! The files are untrusted input: they are read as streams of lines of at most [`MAX_LINE`]
//! bytes (never whole into memory), nothing is sized by a number a file declares before the file's
//! own content bounds that number (a 100-byte file announcing 10^12 entries is an error, not a
//! multi-terabyte allocation): memory is sized by what the file holds. Sizes computed from file
//! contents use checked arithmetic, and every inconsistency is a [`DataError`] naming the file,
//! the 1-based line (`path:line: ...`) where the problem sits, and what is wrong.
//!
//! The reader is split by what each part knows: `lines` turns a file or a reader (plain or
//! gzip) into bounded, numbered lines; `banner` parses the `%%MatrixMarket` banner and its field
//! and symmetry; `entry` parses one entry's indices and value under the [`ReadOptions`];
//! `coordinate` and `array` are the readers of the two storage formats built on them.
//!
//! [`Read`]: std::io::Read
//! [`DataError`]: crate::error::DataError

mod array;
mod banner;
mod coordinate;
mod entry;
mod lines;
#[cfg(test)]
mod tests;

pub use array::{read_mtx_array, read_mtx_array_from, read_mtx_array_with, DenseMatrixMarket};
pub use banner::{MtxField, MtxSymmetry};
pub use coordinate::{read_mtx, read_mtx_from, read_mtx_with, MatrixMarket};
pub use entry::ReadOptions;
pub(crate) use lines::Lines;
pub use lines::{MAX_LINE, READER_NAME};
