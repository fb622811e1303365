//! The `coordinate` (sparse) format: [`MatrixMarket`], a file's declared size, banner and stored
//! entries, with [`MatrixMarket::to_general`] to add a symmetric file's mirrored entries, and
//! [`read_mtx`] and its variants that read one, bounding memory by what the file holds.

use super::banner::{parse_banner, skipped};
use super::entry::{index, value};
use super::lines::GZ_INITIAL_CAPACITY;
use super::{Lines, MtxField, MtxSymmetry, ReadOptions, READER_NAME};
use crate::error::DataError;
use std::io::Read;
use std::path::{Path, PathBuf};

/// A Matrix Market `coordinate` matrix as stored in its file: the declared size, the banner's
/// field and symmetry, and the entries in file order. For a symmetric or skew-symmetric file only
/// the stored triangle is here; [`MatrixMarket::to_general`] adds the mirrored entries.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixMarket {
    /// Declared number of rows.
    pub rows: usize,
    /// Declared number of columns.
    pub cols: usize,
    /// The banner's field.
    pub field: MtxField,
    /// The banner's symmetry.
    pub symmetry: MtxSymmetry,
    /// Stored entries `(row, col)`, 0-based, in file order (the lower triangle for a symmetric or
    /// skew-symmetric file).
    pub entries: Vec<(usize, usize)>,
    /// The value of each stored entry (same length and order as `entries`): 1.0 for a pattern
    /// file.
    pub values: Vec<f64>,
}

impl MatrixMarket {
    /// The same matrix with every entry stored (`symmetry` [`MtxSymmetry::General`]): each stored
    /// entry, followed for a symmetric file by `(j, i, v)` for an off-diagonal `(i, j, v)`, for a
    /// skew-symmetric file by `(j, i, -v)`. A general matrix is returned as is. [`read_mtx`]
    /// guarantees what this needs; the checks here are for a hand-built value (entries and
    /// values of different lengths, an entry outside the size or above the diagonal of a
    /// symmetric or skew matrix, a diagonal entry of a skew-symmetric one).
    pub fn to_general(&self) -> Result<MatrixMarket, DataError> {
        let what = || format!("Matrix Market {} x {} {} {}", self.rows, self.cols, self.field, self.symmetry);
        if self.entries.len() != self.values.len() {
            return Err(DataError::Invalid {
                what: format!("{}: {} entries but {} values", what(), self.entries.len(), self.values.len()),
            });
        }
        let mut mirrored = 0usize;
        for (k, &(i, j)) in self.entries.iter().enumerate() {
            let stored =
                |problem: &str| DataError::Invalid { what: format!("{}: entry {k} ({i}, {j}) {problem}", what()) };
            if i >= self.rows || j >= self.cols {
                return Err(stored("is outside the matrix"));
            }
            match self.symmetry {
                MtxSymmetry::General => {}
                MtxSymmetry::Symmetric | MtxSymmetry::SkewSymmetric if j > i => {
                    return Err(stored("is above the diagonal"))
                }
                MtxSymmetry::SkewSymmetric if i == j => {
                    return Err(stored("is on the diagonal of a skew-symmetric matrix"))
                }
                MtxSymmetry::Symmetric | MtxSymmetry::SkewSymmetric => mirrored += usize::from(i != j),
            }
        }
        let total = self
            .entries
            .len()
            .checked_add(mirrored)
            .ok_or_else(|| DataError::Invalid { what: format!("{}: too many entries", what()) })?;
        let sign = if self.symmetry == MtxSymmetry::SkewSymmetric { -1.0 } else { 1.0 };
        let (mut entries, mut values) = (Vec::with_capacity(total), Vec::with_capacity(total));
        for (&(i, j), &v) in self.entries.iter().zip(&self.values) {
            entries.push((i, j));
            values.push(v);
            if self.symmetry != MtxSymmetry::General && i != j {
                entries.push((j, i));
                values.push(sign * v);
            }
        }
        Ok(MatrixMarket {
            rows: self.rows,
            cols: self.cols,
            field: self.field,
            symmetry: MtxSymmetry::General,
            entries,
            values,
        })
    }
}

/// Reads a Matrix Market `coordinate` file (plain or gzip-compressed, or `path.gz` where `path`
/// is missing), honouring its banner: the values of a
/// `real` or `integer` file are kept, a `symmetric` or `skew-symmetric` file's stored lower
/// triangle is returned as stored (call [`MatrixMarket::to_general`] for every entry).
///
/// The banner `%%MatrixMarket matrix coordinate <real|integer|pattern>
/// <general|symmetric|skew-symmetric>` is required on the first line (a file without one would
/// have to be guessed as `pattern general`, silently misreading a real or symmetric file);
/// `complex`, `hermitian`, `array`, `vector` and anything else are refused. Then come comment
/// (`%`) and blank lines, the size line `rows cols entries`, and exactly `entries` entry lines of
/// `row col` (pattern) or `row col value` (real, integer), 1-based indices within the size, a
/// symmetric file's entries on or below the diagonal, a skew-symmetric file's strictly below.
/// Any other content is a [`DataError`] naming the file and line. Memory is bounded by what the
/// file holds: a plain file declaring more entries than its remaining bytes can hold (an entry
/// line takes at least 4 bytes, `1 1\n`) is refused at its size line. Values as
/// [`ReadOptions::default`] takes them (see [`read_mtx_with`]).
pub fn read_mtx(path: &Path) -> Result<MatrixMarket, DataError> {
    read_mtx_with(path, &ReadOptions::default())
}

/// [`read_mtx`] with `options`: `ReadOptions::default().allow_non_finite(false)` refuses `nan` and
/// infinite values.
pub fn read_mtx_with(path: &Path, options: &ReadOptions) -> Result<MatrixMarket, DataError> {
    read_mtx_lines(Lines::open(path)?, options)
}

/// [`read_mtx_with`] from any reader (a socket, an archive member, bytes in memory), plain or
/// gzip-compressed (by its magic bytes); errors name it [`READER_NAME`]. Its length is unknown,
/// so memory grows with the entries it really holds, never with the count its size line declares.
///
/// ```
/// use sparsegrad_nn::mtx::{read_mtx_from, ReadOptions};
/// let text = "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 NaN\n2 1 -inf\n";
/// let m = read_mtx_from(text.as_bytes(), &ReadOptions::default())?;
/// assert!(m.values[0].is_nan() && m.values[1] == f64::NEG_INFINITY);
/// let finite = ReadOptions::default().allow_non_finite(false);
/// assert!(read_mtx_from(text.as_bytes(), &finite).unwrap_err().to_string().starts_with("<reader>:3: "));
/// # Ok::<(), sparsegrad_nn::DataError>(())
/// ```
pub fn read_mtx_from(reader: impl Read, options: &ReadOptions) -> Result<MatrixMarket, DataError> {
    read_mtx_lines(Lines::from_reader(PathBuf::from(READER_NAME), Box::new(reader), None)?, options)
}

/// The `coordinate` reader over opened lines.
fn read_mtx_lines(mut lines: Lines<'_>, options: &ReadOptions) -> Result<MatrixMarket, DataError> {
    if !lines.advance()? {
        return Err(DataError::content(&lines.path, None, "empty, no %%MatrixMarket banner"));
    }
    let (field, symmetry) = parse_banner(lines.line()).map_err(|e| lines.error(e))?;
    let (rows, cols, nnz) = loop {
        if !lines.advance()? {
            return Err(lines.error("the file ends before the size line `rows cols entries`"));
        }
        let line = lines.line();
        if skipped(line) {
            continue;
        }
        let mut t = line.split_whitespace().map(str::parse::<usize>);
        match (t.next(), t.next(), t.next(), t.next()) {
            (Some(Ok(r)), Some(Ok(c)), Some(Ok(z)), None) => break (r, c, z),
            _ => {
                return Err(lines.error(format_args!(
                    "size line {line:?} is not `rows cols entries` (three non-negative integers)"
                )))
            }
        }
    };
    if symmetry != MtxSymmetry::General && rows != cols {
        return Err(
            lines.error(format_args!("a {symmetry} matrix must be square, the size line declares {rows} x {cols}"))
        );
    }
    let capacity = match lines.bytes_left() {
        Some(left) => {
            let shortest: u64 = if field == MtxField::Pattern { 4 } else { 6 };
            // The last line may lack its newline.
            let most = left.saturating_add(1) / shortest;
            if u64::try_from(nnz).map_or(true, |nnz| nnz > most) {
                return Err(lines.error(format_args!(
                    "{nnz} entries declared, but the {left} bytes after this line hold at most {most}"
                )));
            }
            nnz
        }
        None => nnz.min(GZ_INITIAL_CAPACITY),
    };
    let (mut entries, mut values) = (Vec::with_capacity(capacity), Vec::with_capacity(capacity));
    while lines.advance()? {
        let line = lines.line();
        if skipped(line) {
            continue;
        }
        if entries.len() == nnz {
            return Err(lines.error(format_args!("more entries than the {nnz} the size line declares")));
        }
        let mut t = line.split_whitespace();
        let (r, c, v) = (t.next(), t.next(), if field == MtxField::Pattern { None } else { t.next() });
        let (Some(r), Some(c), None) = (r, c, t.next()) else {
            let form = if field == MtxField::Pattern { "`row col`" } else { "`row col value`" };
            return Err(lines.error(format_args!("{line:?} is not a {field} entry {form}")));
        };
        if field != MtxField::Pattern && v.is_none() {
            return Err(lines.error(format_args!("{line:?} is not a {field} entry `row col value`")));
        }
        let i = index(r, "row", rows).map_err(|e| lines.error(e))?;
        let j = index(c, "column", cols).map_err(|e| lines.error(e))?;
        let v = value(v.unwrap_or("1"), field, options).map_err(|e| lines.error(e))?;
        match symmetry {
            MtxSymmetry::General => {}
            _ if j > i => {
                return Err(lines.error(format_args!(
                    "entry ({r}, {c}) is above the diagonal; a {symmetry} file stores the lower triangle"
                )))
            }
            MtxSymmetry::SkewSymmetric if i == j => {
                return Err(lines
                    .error(format_args!("diagonal entry ({r}, {c}) in a skew-symmetric file, whose diagonal is zero")))
            }
            _ => {}
        }
        entries.push((i, j));
        values.push(v);
    }
    if entries.len() != nnz {
        return Err(lines
            .error(format_args!("the file ends after {} of the {nnz} entries the size line declares", entries.len())));
    }
    Ok(MatrixMarket { rows, cols, field, symmetry, entries, values })
}
