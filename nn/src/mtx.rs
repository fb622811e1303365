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

use crate::error::DataError;
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// The longest line [`read_mtx`] and the dataset loaders accept, in bytes (the Matrix Market
/// format itself limits lines to 1024 characters): a bound on the memory one line of a hostile or
/// corrupt file can take.
pub const MAX_LINE: usize = 1 << 20;

/// Initial capacity for entries of a stream whose length is unknown until it is read (gzip, or
/// any reader): the vectors grow with what the stream really holds, not with what its size line
/// claims.
const GZ_INITIAL_CAPACITY: usize = 1 << 16;

/// The two bytes every gzip stream starts with (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// The name errors give input read through [`read_mtx_from`] (it has no path).
pub const READER_NAME: &str = "<reader>";

/// How the Matrix Market readers treat what scipy accepts but a caller may not want.
///
/// Built from the default, which accepts what scipy's `mmread` accepts, one setting at a time
/// (`ReadOptions::default().allow_non_finite(false)`): non-exhaustive, so a later option does
/// not break a caller's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Whether a `real` value may be `nan`, `inf`, `-inf` or `infinity` (any case, as scipy and
    /// numpy take them), or overflow to an infinity (`1e999`). Default `true`; with `false` such
    /// a value is an error naming the file and line.
    pub allow_non_finite: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self { allow_non_finite: true }
    }
}

impl ReadOptions {
    /// These options with [`Self::allow_non_finite`] set to `allow`.
    pub fn allow_non_finite(mut self, allow: bool) -> Self {
        self.allow_non_finite = allow;
        self
    }
}

/// The lines of a file or a reader, decompressed where they are gzip, read one at a time with
/// their 1-based numbers (for error messages) and the bytes consumed (to bound what the rest of a
/// plain file can hold).
pub(crate) struct Lines<'a> {
    /// The file actually read (`path` or `path.gz`), or [`READER_NAME`].
    pub(crate) path: PathBuf,
    reader: Box<dyn BufRead + 'a>,
    /// Number of the current line (0 before the first).
    pub(crate) number: usize,
    /// Bytes read so far, line terminators included.
    consumed: u64,
    /// Length of a plain file; `None` for a gzip stream or a reader.
    len: Option<u64>,
    buf: Vec<u8>,
    line: String,
}

impl<'a> Lines<'a> {
    /// The lines of the file `path`, or of `path.gz` where `path` does not exist (an error then
    /// names `path`); gzip or plain by the content.
    pub(crate) fn open(path: &Path) -> Result<Self, DataError> {
        let (read, file) = if path.exists() {
            (path.to_path_buf(), std::fs::File::open(path).map_err(|e| DataError::io(path, None, e))?)
        } else {
            let mut gz = path.as_os_str().to_owned();
            gz.push(".gz");
            let gz = PathBuf::from(gz);
            let file = std::fs::File::open(&gz).map_err(|e| DataError::io(path, None, e))?;
            (gz, file)
        };
        let len = file.metadata().map_err(|e| DataError::io(&read, None, e))?.len();
        Self::from_reader(read, Box::new(file), Some(len))
    }

    /// The lines of `reader`, named `name` in errors, `len` its length in bytes where known.
    /// Gzip is recognised by the stream's first two bytes, not by a name: a file called
    /// `x.mtx.gz` may be plain and one called `x.mtx` compressed. The bytes read to look are
    /// put back in front of the stream.
    pub(crate) fn from_reader(
        name: PathBuf,
        mut reader: Box<dyn Read + 'a>,
        len: Option<u64>,
    ) -> Result<Self, DataError> {
        let mut head = [0u8; 2];
        let mut got = 0;
        // A reader may hand out one byte at a time: read until two or the end.
        while got < head.len() {
            match reader.read(&mut head[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(DataError::io(&name, None, e)),
            }
        }
        let stream: Box<dyn Read + 'a> = Box::new(std::io::Cursor::new(head[..got].to_vec()).chain(reader));
        let (reader, len): (Box<dyn BufRead + 'a>, Option<u64>) = if head[..got] == GZIP_MAGIC {
            // The decompressed length is unknown: what the stream holds bounds the memory.
            (Self::gunzip(&name, stream)?, None)
        } else {
            (Box::new(BufReader::new(stream)), len)
        };
        Ok(Self { path: name, reader, number: 0, consumed: 0, len, buf: Vec::new(), line: String::new() })
    }

    /// A gzip stream decompressed, every member of it (as `gzip -d` reads a concatenation).
    #[cfg(feature = "datasets")]
    fn gunzip(_name: &Path, stream: Box<dyn Read + 'a>) -> Result<Box<dyn BufRead + 'a>, DataError> {
        Ok(Box::new(BufReader::new(flate2::read::MultiGzDecoder::new(stream))))
    }

    /// Without the `datasets` feature there is no gzip reader: a gzip stream is an error that
    /// says which feature reads it.
    #[cfg(not(feature = "datasets"))]
    fn gunzip(name: &Path, _stream: Box<dyn Read + 'a>) -> Result<Box<dyn BufRead + 'a>, DataError> {
        Err(DataError::content(
            name,
            None,
            "gzip-compressed, and this build has no gzip reader (turn on the feature `datasets`)",
        ))
    }

    /// Moves to the next line; `false` at the end of the file.
    pub(crate) fn advance(&mut self) -> Result<bool, DataError> {
        self.buf.clear();
        let limit = MAX_LINE as u64 + 1;
        let read = (&mut self.reader).take(limit).read_until(b'\n', &mut self.buf);
        let n = read.map_err(|e| DataError::io(&self.path, Some(self.number + 1), e))?;
        if n == 0 {
            return Ok(false);
        }
        self.number += 1;
        self.consumed = self.consumed.saturating_add(n as u64);
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
        } else if n > MAX_LINE {
            return Err(self.error(format_args!("line longer than {MAX_LINE} bytes")));
        }
        let text = std::str::from_utf8(&self.buf).map_err(|_| self.error("not UTF-8 text"))?;
        self.line.clear();
        self.line.push_str(text);
        Ok(true)
    }

    /// The current line, without its terminator.
    pub(crate) fn line(&self) -> &str {
        &self.line
    }

    /// An error at the current line.
    pub(crate) fn error(&self, what: impl fmt::Display) -> DataError {
        DataError::content(&self.path, Some(self.number), what)
    }

    /// Bytes a plain file holds after the current line; `None` for a gzip stream or a reader.
    fn bytes_left(&self) -> Option<u64> {
        self.len.map(|len| len.saturating_sub(self.consumed))
    }
}

/// What each entry of a Matrix Market file stores besides its position (the banner's field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MtxField {
    /// A floating-point value.
    Real,
    /// An integer value (held as `f64`, exactly: magnitudes above 2^53 are refused).
    Integer,
    /// No value: the entry is there or not (its value is 1).
    Pattern,
}

/// Which entries a Matrix Market file stores (the banner's symmetry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MtxSymmetry {
    /// Every entry.
    General,
    /// The lower triangle (`row >= col`) of a symmetric matrix: `a[j][i] = a[i][j]`.
    Symmetric,
    /// The strict lower triangle (`row > col`) of a skew-symmetric matrix: `a[j][i] = -a[i][j]`
    /// and a zero diagonal.
    SkewSymmetric,
}

impl fmt::Display for MtxField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MtxField::Real => "real",
            MtxField::Integer => "integer",
            MtxField::Pattern => "pattern",
        })
    }
}

impl fmt::Display for MtxSymmetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MtxSymmetry::General => "general",
            MtxSymmetry::Symmetric => "symmetric",
            MtxSymmetry::SkewSymmetric => "skew-symmetric",
        })
    }
}

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

/// The field and symmetry of a `%%MatrixMarket matrix coordinate <field> <symmetry>` banner (its
/// words are case-insensitive); anything this reader does not handle is refused by name.
fn parse_banner(line: &str) -> Result<(MtxField, MtxSymmetry), String> {
    parse_banner_of(line, "coordinate")
}

/// [`parse_banner`] for the storage format `wanted` (`coordinate` or `array`).
fn parse_banner_of(line: &str, wanted: &str) -> Result<(MtxField, MtxSymmetry), String> {
    let fields = if wanted == "array" { "<real|integer>" } else { "<real|integer|pattern>" };
    let expected = format!("`%%MatrixMarket matrix {wanted} {fields} <general|symmetric|skew-symmetric>`");
    let mut words = line.split_whitespace();
    let (Some(banner), Some(object), Some(format), Some(field), Some(symmetry), None) =
        (words.next(), words.next(), words.next(), words.next(), words.next(), words.next())
    else {
        return Err(if line.starts_with("%%") {
            format!("banner {line:?} is not {expected}")
        } else {
            format!("no Matrix Market banner: the first line is {line:?}, not {expected}")
        });
    };
    if !banner.eq_ignore_ascii_case("%%MatrixMarket") {
        return Err(format!("banner {line:?} is not {expected}"));
    }
    if !object.eq_ignore_ascii_case("matrix") {
        return Err(format!("banner {line:?}: object {object:?} is not supported (only `matrix`)"));
    }
    if !format.eq_ignore_ascii_case(wanted) {
        let hint = if wanted == "coordinate" {
            "`array` is dense storage: read it with `io::read_dense`"
        } else {
            "`coordinate` is sparse storage: read it with `read_mtx` or `io::read_sparse`"
        };
        return Err(format!("banner {line:?}: format {format:?} is not supported (only `{wanted}`; {hint})"));
    }
    let field = match field.to_ascii_lowercase().as_str() {
        "real" => MtxField::Real,
        "integer" => MtxField::Integer,
        "pattern" => MtxField::Pattern,
        _ => return Err(format!("banner {line:?}: field {field:?} is not supported (real, integer or pattern)")),
    };
    let symmetry = match symmetry.to_ascii_lowercase().as_str() {
        "general" => MtxSymmetry::General,
        "symmetric" => MtxSymmetry::Symmetric,
        "skew-symmetric" => MtxSymmetry::SkewSymmetric,
        _ => {
            return Err(format!(
                "banner {line:?}: symmetry {symmetry:?} is not supported (general, symmetric or skew-symmetric)"
            ))
        }
    };
    if field == MtxField::Pattern && wanted == "array" {
        return Err(format!("banner {line:?}: an `array` file has no `pattern` field (it stores every value)"));
    }
    if field == MtxField::Pattern && symmetry == MtxSymmetry::SkewSymmetric {
        return Err(format!("banner {line:?}: `pattern skew-symmetric` has no values to negate"));
    }
    Ok((field, symmetry))
}

/// Comment and blank lines, which may follow the banner anywhere.
fn skipped(line: &str) -> bool {
    line.starts_with('%') || line.trim().is_empty()
}

/// A 1-based index of a Matrix Market entry, as 0-based, checked against `1..=size`.
fn index(token: &str, what: &str, size: usize) -> Result<usize, String> {
    match token.parse::<usize>() {
        Ok(i) if (1..=size).contains(&i) => Ok(i - 1),
        Ok(i) => Err(format!("{what} {i} is outside 1..={size}")),
        Err(_) => Err(format!("{what} {token:?} is not a positive integer")),
    }
}

/// The value of an entry of a `real` or `integer` file. A `real` takes Rust's `f64` syntax, which
/// is scipy's and numpy's: `nan`, `inf` and `infinity`, signed or not, in any case, and a
/// decimal too large for `f64` is an infinity; `options` may refuse those.
fn value(token: &str, field: MtxField, options: &ReadOptions) -> Result<f64, String> {
    match field {
        MtxField::Pattern => Ok(1.0),
        MtxField::Real => match token.parse::<f64>() {
            Ok(v) if v.is_finite() || options.allow_non_finite => Ok(v),
            Ok(_) => Err(format!("value {token:?} is not finite (refused: `ReadOptions::allow_non_finite` is false)")),
            Err(_) => Err(format!("value {token:?} is not a real number")),
        },
        MtxField::Integer => {
            // Larger magnitudes would not survive the conversion to f64 exactly.
            const EXACT: i64 = 1 << 53;
            match token.parse::<i64>() {
                Ok(v) if (-EXACT..=EXACT).contains(&v) => Ok(v as f64),
                Ok(v) => Err(format!("integer value {v} is beyond 2^53 and would not be exact as f64")),
                Err(_) => Err(format!("value {token:?} is not an integer")),
            }
        }
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

/// A Matrix Market `array` matrix (dense storage) with every element: a symmetric or
/// skew-symmetric file's stored lower triangle is mirrored.
#[derive(Debug, Clone, PartialEq)]
pub struct DenseMatrixMarket {
    /// Number of rows.
    pub rows: usize,
    /// Number of columns.
    pub cols: usize,
    /// The banner's field (`real` or `integer`).
    pub field: MtxField,
    /// The banner's symmetry (the values below are expanded whatever it is).
    pub symmetry: MtxSymmetry,
    /// The `rows * cols` elements, row-major.
    pub values: Vec<f64>,
}

/// `n (n + 1) / 2` for an `n` whose square did not overflow (so neither does this).
fn triangle(n: usize) -> usize {
    if n.is_multiple_of(2) {
        n / 2 * (n + 1)
    } else {
        n.div_ceil(2) * n
    }
}

/// Reads a Matrix Market `array` file (plain or gzip-compressed, or `path.gz` where `path` is
/// missing): the banner `%%MatrixMarket matrix array
/// <real|integer> <general|symmetric|skew-symmetric>`, comment and blank lines, the size line
/// `rows cols`, then the values column by column (for a symmetric file the lower triangle with
/// its diagonal, for a skew-symmetric one the strict lower triangle), exactly as many as the size
/// asks. The same checks as [`read_mtx`]: every problem is a [`DataError`] naming the file and
/// line, and a plain file declaring more values than its remaining bytes can hold is refused at
/// its size line, before anything is allocated. Values as [`ReadOptions::default`] takes them
/// (see [`read_mtx_array_with`]).
pub fn read_mtx_array(path: &Path) -> Result<DenseMatrixMarket, DataError> {
    read_mtx_array_with(path, &ReadOptions::default())
}

/// [`read_mtx_array`] with `options`.
pub fn read_mtx_array_with(path: &Path, options: &ReadOptions) -> Result<DenseMatrixMarket, DataError> {
    read_mtx_array_lines(Lines::open(path)?, options)
}

/// [`read_mtx_array_with`] from any reader, plain or gzip-compressed (by its magic bytes); errors
/// name it [`READER_NAME`], and memory grows with the values it really holds.
pub fn read_mtx_array_from(reader: impl Read, options: &ReadOptions) -> Result<DenseMatrixMarket, DataError> {
    read_mtx_array_lines(Lines::from_reader(PathBuf::from(READER_NAME), Box::new(reader), None)?, options)
}

/// The `array` reader over opened lines.
fn read_mtx_array_lines(mut lines: Lines<'_>, options: &ReadOptions) -> Result<DenseMatrixMarket, DataError> {
    if !lines.advance()? {
        return Err(DataError::content(&lines.path, None, "empty, no %%MatrixMarket banner"));
    }
    let (field, symmetry) = parse_banner_of(lines.line(), "array").map_err(|e| lines.error(e))?;
    let (rows, cols) = loop {
        if !lines.advance()? {
            return Err(lines.error("the file ends before the size line `rows cols`"));
        }
        let line = lines.line();
        if skipped(line) {
            continue;
        }
        let mut t = line.split_whitespace().map(str::parse::<usize>);
        match (t.next(), t.next(), t.next()) {
            (Some(Ok(r)), Some(Ok(c)), None) => break (r, c),
            _ => {
                return Err(
                    lines.error(format_args!("size line {line:?} is not `rows cols` (two non-negative integers)"))
                )
            }
        }
    };
    if symmetry != MtxSymmetry::General && rows != cols {
        return Err(
            lines.error(format_args!("a {symmetry} matrix must be square, the size line declares {rows} x {cols}"))
        );
    }
    let total = rows.checked_mul(cols).ok_or_else(|| lines.error(format_args!("{rows} x {cols} elements overflow")))?;
    // The values the file stores: every element, or a (strict) lower triangle.
    let stored = match symmetry {
        MtxSymmetry::General => total,
        MtxSymmetry::Symmetric => triangle(rows),
        MtxSymmetry::SkewSymmetric => triangle(rows.saturating_sub(1)),
    };
    if let Some(left) = lines.bytes_left() {
        // A value line takes at least 2 bytes (`0\n`); the last may lack its newline.
        let most = left.saturating_add(1) / 2;
        if u64::try_from(stored).map_or(true, |n| n > most) {
            return Err(lines.error(format_args!(
                "{stored} values declared, but the {left} bytes after this line hold at most {most}"
            )));
        }
    }
    let mut read = Vec::new();
    // A plain file was bounded above; a gzip stream grows with what it really holds.
    let initial = if lines.bytes_left().is_some() { stored } else { stored.min(GZ_INITIAL_CAPACITY) };
    read.try_reserve_exact(initial).map_err(|_| lines.error(format_args!("cannot allocate {stored} values")))?;
    while lines.advance()? {
        let line = lines.line();
        if skipped(line) {
            continue;
        }
        for token in line.split_whitespace() {
            if read.len() == stored {
                return Err(lines.error(format_args!("more values than the {stored} the size line asks")));
            }
            read.push(value(token, field, options).map_err(|e| lines.error(e))?);
        }
    }
    if read.len() != stored {
        return Err(
            lines.error(format_args!("the file ends after {} of the {stored} values the size line asks", read.len()))
        );
    }
    let mut values = Vec::new();
    values.try_reserve_exact(total).map_err(|_| lines.error(format_args!("cannot allocate {rows} x {cols} values")))?;
    values.resize(total, 0.0);
    let mut next = read.into_iter();
    let sign = if symmetry == MtxSymmetry::SkewSymmetric { -1.0 } else { 1.0 };
    for j in 0..cols {
        let first = match symmetry {
            MtxSymmetry::General => 0,
            MtxSymmetry::Symmetric => j,
            MtxSymmetry::SkewSymmetric => j + 1,
        };
        for i in first..rows {
            // Counted above: `stored` values, one per (i, j) visited here.
            let v = next.next().unwrap_or(0.0);
            values[i * cols + j] = v;
            if i != j && symmetry != MtxSymmetry::General {
                values[j * cols + i] = sign * v;
            }
        }
    }
    Ok(DenseMatrixMarket { rows, cols, field, symmetry, values })
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::GzEncoder;
    use std::io::Write;

    /// A fresh directory for one test (removed by the test on success).
    fn temp_dir(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sparsegrad-mtx-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn write_gz(path: &Path, text: &str) {
        let mut e = GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(text.as_bytes()).unwrap();
        std::fs::write(path, e.finish().unwrap()).unwrap();
    }

    /// The error of `read_mtx` on a file holding `text`.
    fn mtx_error(dir: &Path, text: &str) -> String {
        let path = dir.join("m.mtx");
        std::fs::write(&path, text).unwrap();
        let e = read_mtx(&path).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}:", path.display())), "{e}");
        e
    }

    #[test]
    fn read_mtx_honours_field_and_symmetry() {
        let dir = temp_dir("honours");
        let path = dir.join("m.mtx");
        // Case-insensitive banner words, comments and blank lines anywhere after it, CRLF lines.
        std::fs::write(&path, "%%matrixmarket MATRIX Coordinate REAL General\r\n% comment\r\n\r\n2 3 3\r\n1 3 2.5\r\n% between\r\n2 1 -1e-3\r\n2 2 .5\r\n").unwrap();
        let m = read_mtx(&path).unwrap();
        assert_eq!((m.rows, m.cols, m.field, m.symmetry), (2, 3, MtxField::Real, MtxSymmetry::General));
        assert_eq!(m.entries, vec![(0, 2), (1, 0), (1, 1)]);
        assert_eq!(m.values, vec![2.5, -1e-3, 0.5]);
        assert_eq!(m.to_general().unwrap(), m);

        std::fs::write(&path, "%%MatrixMarket matrix coordinate integer symmetric\n3 3 3\n1 1 7\n3 1 -4\n3 2 9\n")
            .unwrap();
        let m = read_mtx(&path).unwrap();
        assert_eq!((m.field, m.symmetry, m.entries.len()), (MtxField::Integer, MtxSymmetry::Symmetric, 3));
        let g = m.to_general().unwrap();
        assert_eq!(g.symmetry, MtxSymmetry::General);
        assert_eq!(g.entries, vec![(0, 0), (2, 0), (0, 2), (2, 1), (1, 2)]);
        assert_eq!(g.values, vec![7.0, -4.0, -4.0, 9.0, 9.0]);

        std::fs::write(&path, "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 1 1.5\n").unwrap();
        let g = read_mtx(&path).unwrap().to_general().unwrap();
        assert_eq!((g.entries, g.values), (vec![(1, 0), (0, 1)], vec![1.5, -1.5]));

        // Pattern: values 1, and the last line may lack its newline.
        std::fs::write(&path, "%%MatrixMarket matrix coordinate pattern symmetric\n2 2 2\n1 1\n2 1").unwrap();
        let m = read_mtx(&path).unwrap();
        assert_eq!((m.entries.clone(), m.values.clone()), (vec![(0, 0), (1, 0)], vec![1.0, 1.0]));
        assert_eq!(m.to_general().unwrap().entries, vec![(0, 0), (1, 0), (0, 1)]);

        // A gzip-compressed file is read when the plain one is absent (the `datasets` feature).
        std::fs::remove_file(&path).unwrap();
        write_gz(&dir.join("m.mtx.gz"), "%%MatrixMarket matrix coordinate real general\n1 2 1\n1 2 3\n");
        if cfg!(feature = "datasets") {
            let m = read_mtx(&path).unwrap();
            assert_eq!((m.entries, m.values), (vec![(0, 1)], vec![3.0]));
        } else {
            assert!(read_mtx(&path).is_err());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn read_mtx_refuses_unsupported_banners() {
        let dir = temp_dir("banners");
        let cases = [
            (
                "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n",
                "field \"complex\" is not supported",
            ),
            (
                "%%MatrixMarket matrix coordinate complex hermitian\n1 1 1\n1 1 1 0\n",
                "field \"complex\" is not supported",
            ),
            (
                "%%MatrixMarket matrix coordinate real hermitian\n1 1 1\n1 1 1\n",
                "symmetry \"hermitian\" is not supported",
            ),
            (
                "%%MatrixMarket matrix array real general\n1 1\n1\n",
                "format \"array\" is not supported (only `coordinate`",
            ),
            ("%%MatrixMarket vector coordinate real general\n1 1\n1 1\n", "object \"vector\" is not supported"),
            (
                "%%MatrixMarket matrix coordinate pattern skew-symmetric\n2 2 1\n2 1\n",
                "`pattern skew-symmetric` has no values",
            ),
            ("%%MatrixMarket matrix coordinate real\n1 1 1\n1 1 1\n", "is not `%%MatrixMarket matrix coordinate"),
            ("%%NotMarket matrix coordinate real general\n1 1 1\n1 1 1\n", "is not `%%MatrixMarket matrix coordinate"),
            ("1 1 1\n1 1\n", "no Matrix Market banner: the first line is \"1 1 1\""),
        ];
        for (text, expected) in cases {
            let e = mtx_error(&dir, text);
            assert!(e.contains("m.mtx:1: ") && e.contains(expected), "{text:?}: {e}");
        }
        let e = mtx_error(&dir, "");
        assert!(e.ends_with("m.mtx: empty, no %%MatrixMarket banner"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn read_mtx_rejects_malformed_content_naming_the_line() {
        let dir = temp_dir("malformed");
        let pattern = "%%MatrixMarket matrix coordinate pattern general\n";
        let real = "%%MatrixMarket matrix coordinate real general\n";
        let integer = "%%MatrixMarket matrix coordinate integer general\n";
        let sym = "%%MatrixMarket matrix coordinate real symmetric\n";
        let skew = "%%MatrixMarket matrix coordinate real skew-symmetric\n";
        let cases = [
            (format!("{pattern}% only comments\n"), "m.mtx:2: the file ends before the size line"),
            (format!("{pattern}2 2\n"), "m.mtx:2: size line \"2 2\" is not `rows cols entries`"),
            (format!("{pattern}2 2 1 4\n"), "m.mtx:2: size line \"2 2 1 4\" is not"),
            (format!("{pattern}2 -2 1\n"), "m.mtx:2: size line \"2 -2 1\" is not"),
            (format!("{pattern}2 2 1\n1 1 1\n"), "m.mtx:3: \"1 1 1\" is not a pattern entry `row col`"),
            (format!("{pattern}2 2 1\n1    \n"), "m.mtx:3: \"1    \" is not a pattern entry"),
            (format!("{real}2 2 1\n1 1   \n"), "m.mtx:3: \"1 1   \" is not a real entry `row col value`"),
            (format!("{real}2 2 1\n1 1 1 1\n"), "m.mtx:3: \"1 1 1 1\" is not a real entry"),
            (format!("{pattern}2 2 1\n0 1\n"), "m.mtx:3: row 0 is outside 1..=2"),
            (format!("{pattern}2 3 1\n1 4\n"), "m.mtx:3: column 4 is outside 1..=3"),
            (format!("{pattern}2 2 1\nx 1\n"), "m.mtx:3: row \"x\" is not a positive integer"),
            (format!("{real}2 2 1\n1 1 one\n"), "m.mtx:3: value \"one\" is not a real number"),
            (format!("{real}2 2 1\n1 1 nan1\n"), "m.mtx:3: value \"nan1\" is not a real number"),
            (format!("{real}2 2 1\n1 1 infinit\n"), "m.mtx:3: value \"infinit\" is not a real number"),
            (format!("{integer}2 2 1\n1 1 1.5\n"), "m.mtx:3: value \"1.5\" is not an integer"),
            (
                format!("{integer}2 2 1\n1 1 9007199254740993\n"),
                "m.mtx:3: integer value 9007199254740993 is beyond 2^53",
            ),
            (
                format!("{sym}2 2 1\n1 2 1\n"),
                "m.mtx:3: entry (1, 2) is above the diagonal; a symmetric file stores the lower triangle",
            ),
            (format!("{skew}2 2 1\n1 2 1\n"), "m.mtx:3: entry (1, 2) is above the diagonal; a skew-symmetric file"),
            (format!("{skew}2 2 1\n2 2 1\n"), "m.mtx:3: diagonal entry (2, 2) in a skew-symmetric file"),
            (
                format!("{sym}2 3 1\n1 1 1\n"),
                "m.mtx:2: a symmetric matrix must be square, the size line declares 2 x 3",
            ),
            (
                format!("{pattern}2 2 1\n1 1\n% comment\n2 2\n"),
                "m.mtx:5: more entries than the 1 the size line declares",
            ),
            (
                format!("{pattern}2 2 3\n1 1\n2 2\n% a comment as long as an entry\n"),
                "m.mtx:5: the file ends after 2 of the 3 entries the size line declares",
            ),
        ];
        for (text, expected) in &cases {
            let e = mtx_error(&dir, text);
            assert!(e.contains(expected), "{text:?}: {e}");
        }
        // Not UTF-8, and a line longer than MAX_LINE (refused without reading it all).
        std::fs::write(dir.join("m.mtx"), b"%%MatrixMarket matrix coordinate pattern general\n1 1 1\n1 \xff\n")
            .unwrap();
        let e = read_mtx(&dir.join("m.mtx")).unwrap_err().to_string();
        assert!(e.ends_with("m.mtx:3: not UTF-8 text"), "{e}");
        let e = mtx_error(&dir, &format!("{pattern}% {}\n1 1 1\n1 1\n", "x".repeat(MAX_LINE)));
        assert!(e.ends_with(&format!("m.mtx:2: line longer than {MAX_LINE} bytes")), "{e}");
        // A `.gz` that is not gzip is read as what it is (the name decides nothing), and a
        // stream with gzip's magic bytes but no valid header fails at its first line.
        std::fs::write(dir.join("g.mtx.gz"), "not gzip at all").unwrap();
        let e = read_mtx(&dir.join("g.mtx")).unwrap_err().to_string();
        assert!(e.contains("g.mtx.gz:1: no Matrix Market banner"), "{e}");
        std::fs::write(dir.join("h.mtx"), b"\x1f\x8bnot a gzip header").unwrap();
        let e = read_mtx(&dir.join("h.mtx")).unwrap_err();
        assert!(matches!(&e, DataError::Io { line: Some(1), .. }), "{e:?}");
        let e = read_mtx(&dir.join("absent.mtx")).unwrap_err();
        assert!(matches!(&e, DataError::Io { line: None, .. }), "{e:?}");
        assert_eq!(e.path(), Some(dir.join("absent.mtx").as_path()));
        assert!(e.to_string().contains("absent.mtx: "), "{e}");
        // The error is data: the file, the line and what is wrong.
        let path = dir.join("m.mtx");
        std::fs::write(&path, "%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n").unwrap();
        let DataError::Content { path: p, line, what } = read_mtx(&path).unwrap_err() else { panic!("not content") };
        assert_eq!((p, line, what.as_str()), (path, Some(3), "row 3 is outside 1..=2"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn read_mtx_refuses_huge_declared_sizes_without_allocating() {
        let dir = temp_dir("huge");
        let text =
            "%%MatrixMarket matrix coordinate pattern general\n1000000000000 1000000000000 1000000000000\n1 1\n2 2\n";
        assert!(text.len() <= 100);
        // Plain: refused at the size line from the bytes left (8 bytes hold at most 2 entries).
        let e = mtx_error(&dir, text);
        assert!(
            e.ends_with("m.mtx:2: 1000000000000 entries declared, but the 8 bytes after this line hold at most 2"),
            "{e}"
        );
        let e = mtx_error(&dir, "%%MatrixMarket matrix coordinate real general\n9 9 2\n1 1 1\n");
        assert!(e.ends_with("m.mtx:2: 2 entries declared, but the 6 bytes after this line hold at most 1"), "{e}");
        // Gzip: the length is unknown, so the entries grow with what the stream holds and the
        // count check fails at its end.
        write_gz(&dir.join("g.mtx.gz"), text);
        let e = read_mtx(&dir.join("g.mtx")).unwrap_err().to_string();
        if cfg!(feature = "datasets") {
            assert!(
                e.ends_with("g.mtx.gz:4: the file ends after 2 of the 1000000000000 entries the size line declares"),
                "{e}"
            );
        }
        // A declared size alone allocates nothing: a 10^12 x 10^12 matrix with its 2 entries loads.
        let m = mtx_error_free(
            &dir,
            "%%MatrixMarket matrix coordinate pattern symmetric\n1000000000000 1000000000000 2\n1 1\n1000000000000 1\n",
        );
        assert_eq!((m.rows, m.entries.clone()), (1_000_000_000_000, vec![(0, 0), (999_999_999_999, 0)]));
        assert_eq!(m.to_general().unwrap().entries.len(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn mtx_error_free(dir: &Path, text: &str) -> MatrixMarket {
        let path = dir.join("ok.mtx");
        std::fs::write(&path, text).unwrap();
        read_mtx(&path).unwrap()
    }

    #[test]
    fn to_general_checks_hand_built_values() {
        let m = MatrixMarket {
            rows: 2,
            cols: 2,
            field: MtxField::Real,
            symmetry: MtxSymmetry::Symmetric,
            entries: vec![(0, 1)],
            values: vec![1.0],
        };
        assert!(m.to_general().unwrap_err().to_string().contains("entry 0 (0, 1) is above the diagonal"));
        let m = MatrixMarket { symmetry: MtxSymmetry::SkewSymmetric, entries: vec![(1, 1)], ..m };
        assert!(m
            .to_general()
            .unwrap_err()
            .to_string()
            .contains("entry 0 (1, 1) is on the diagonal of a skew-symmetric matrix"));
        let m = MatrixMarket { symmetry: MtxSymmetry::General, entries: vec![(2, 0)], ..m };
        assert!(m.to_general().unwrap_err().to_string().contains("entry 0 (2, 0) is outside the matrix"));
        let m = MatrixMarket { values: vec![], ..m };
        assert!(m.to_general().unwrap_err().to_string().contains("1 entries but 0 values"));
    }

    /// The SuiteSparse matrices, found by name through the chain of sources (the checkout's
    /// `../shared/data/suitesparse` here): every field and symmetry of the banner, expanded
    /// exactly.
    #[cfg(feature = "datasets")]
    #[test]
    fn suitesparse_files_load_and_expand() {
        // (name, size, field, symmetry, stored, stored diagonal, first entry and value)
        let cases = [
            ("HB/bcsstk13", 2003, MtxField::Real, MtxSymmetry::Symmetric, 42943, 2003, ((0, 0), 277281165.183)),
            ("Bai/cryg2500", 2500, MtxField::Real, MtxSymmetry::General, 12349, 2500, ((0, 0), -5679.837539484813)),
            ("HB/jagmesh7", 1138, MtxField::Pattern, MtxSymmetry::Symmetric, 4294, 1138, ((0, 0), 1.0)),
            ("HB/west0067", 67, MtxField::Real, MtxSymmetry::General, 294, 2, ((4, 0), -0.2788416)),
        ];
        for (file, n, field, symmetry, stored, diagonal, first) in cases {
            let m = read_mtx(&crate::io::suitesparse(file).unwrap()).unwrap();
            assert_eq!(
                (m.rows, m.cols, m.field, m.symmetry, m.entries.len(), m.values.len()),
                (n, n, field, symmetry, stored, stored),
                "{file}"
            );
            assert_eq!(m.entries.iter().filter(|(i, j)| i == j).count(), diagonal, "{file}");
            assert_eq!((m.entries[0], m.values[0]), first, "{file}");
            let g = m.to_general().unwrap();
            let expanded = if symmetry == MtxSymmetry::General { stored } else { 2 * stored - diagonal };
            assert_eq!((g.entries.len(), g.values.len()), (expanded, expanded), "{file}");
            let mut sorted = g.entries.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), expanded, "{file}: no position twice");
        }
        // bcsstk13 in full: 2 * 42 943 stored - 2003 diagonal = 83 883 entries.
        let bcsstk13 = crate::io::suitesparse("HB/bcsstk13").unwrap();
        assert_eq!(read_mtx(&bcsstk13).unwrap().to_general().unwrap().entries.len(), 83_883);
    }

    /// What scipy's `mmread` and numpy's `float` take: `nan`, `inf`, `infinity`, signed, in any
    /// case, and a decimal beyond `f64` as an infinity. A LAGraph-style `skew_fp64.mtx` (a
    /// skew-symmetric `real` file with NaN and infinities, a GraphBLAS type comment) reads, its
    /// mirrored entries negated; `ReadOptions` refuses the same values naming the line.
    #[test]
    fn non_finite_values_read_as_scipy_reads_them_unless_refused() {
        let dir = temp_dir("nonfinite");
        let path = dir.join("skew_fp64.mtx");
        let text = "%%MatrixMarket matrix coordinate real skew-symmetric\n%%GraphBLAS type double\n\
                    5 5 7\n2 1 nan\n3 1 Inf\n3 2 -inf\n4 1 INFINITY\n4 2 -Infinity\n5 3 -NaN\n5 4 1e999\n";
        std::fs::write(&path, text).unwrap();
        let m = read_mtx(&path).unwrap();
        assert_eq!(m.entries, vec![(1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (4, 2), (4, 3)]);
        let inf = f64::INFINITY;
        let expected = [f64::NAN, inf, -inf, inf, -inf, f64::NAN, inf];
        let same = |got: &[f64], want: &[f64]| {
            got.len() == want.len() && got.iter().zip(want).all(|(g, w)| (g.is_nan() && w.is_nan()) || g == w)
        };
        assert!(same(&m.values, &expected), "{:?}", m.values);
        // Mirrored: (j, i, -v), so the infinities change sign.
        let g = m.to_general().unwrap();
        assert_eq!(g.entries[..4], [(1, 0), (0, 1), (2, 0), (0, 2)]);
        assert!(same(&g.values[..6], &[f64::NAN, f64::NAN, inf, -inf, -inf, inf]), "{:?}", g.values);
        // The same file, finite values only: the first non-finite value is named with its line.
        let finite = ReadOptions::default().allow_non_finite(false);
        let e = read_mtx_with(&path, &finite).unwrap_err().to_string();
        assert!(
            e.ends_with(
                "skew_fp64.mtx:4: value \"nan\" is not finite (refused: `ReadOptions::allow_non_finite` is false)"
            ),
            "{e}"
        );
        std::fs::write(&path, "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 1e999\n").unwrap();
        assert!(read_mtx_with(&path, &finite).unwrap_err().to_string().contains("value \"1e999\" is not finite"));
        // Finite values read the same either way.
        std::fs::write(&path, "%%MatrixMarket matrix coordinate real general\n1 2 2\n1 1 -2.5\n1 2 1e-300\n").unwrap();
        assert_eq!(read_mtx_with(&path, &finite).unwrap().values, vec![-2.5, 1e-300]);
        // `array` storage too, column by column.
        let array = "%%MatrixMarket matrix array real general\n2 2\nNaN\n-inf\n+inf\n0.5\n";
        let d = read_mtx_array_from(array.as_bytes(), &ReadOptions::default()).unwrap();
        assert!(same(&d.values, &[f64::NAN, inf, -inf, 0.5]), "{:?}", d.values);
        let e = read_mtx_array_from(array.as_bytes(), &finite).unwrap_err().to_string();
        assert!(e.starts_with("<reader>:3: value \"NaN\" is not finite"), "{e}");
        // An integer field has no NaN.
        let e = read_mtx_from(
            "%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 nan\n".as_bytes(),
            &ReadOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.ends_with("<reader>:3: value \"nan\" is not an integer"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A reader that hands out one byte a call: the magic bytes need two reads.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match (self.0.split_first(), buf.first_mut()) {
                (Some((&b, rest)), Some(slot)) => {
                    *slot = b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }

    fn gz_bytes(text: &str) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(text.as_bytes()).unwrap();
        e.finish().unwrap()
    }

    /// Gzip is recognised by its magic bytes wherever the input comes from and whatever it is
    /// called: `x.mtx.gz` read by its own name, a compressed file called `.mtx`, bytes in
    /// memory, a reader that hands out a byte at a time, a stream of two gzip members.
    #[test]
    #[cfg(feature = "datasets")]
    fn gzip_is_recognised_by_its_content_not_its_name() {
        let dir = temp_dir("magic");
        let text = "%%MatrixMarket matrix coordinate real general\n2 3 2\n1 3 2.5\n2 1 -4\n";
        let want = |m: MatrixMarket| {
            assert_eq!(
                (m.rows, m.cols, m.entries.clone(), m.values.clone()),
                (2, 3, vec![(0, 2), (1, 0)], vec![2.5, -4.0])
            )
        };
        let gz = gz_bytes(text);
        std::fs::write(dir.join("x.mtx.gz"), &gz).unwrap();
        want(read_mtx(&dir.join("x.mtx.gz")).unwrap());
        std::fs::write(dir.join("compressed.mtx"), &gz).unwrap();
        want(read_mtx(&dir.join("compressed.mtx")).unwrap());
        std::fs::write(dir.join("plain.mtx.gz"), text).unwrap();
        want(read_mtx(&dir.join("plain.mtx.gz")).unwrap());
        let options = ReadOptions::default();
        want(read_mtx_from(gz.as_slice(), &options).unwrap());
        want(read_mtx_from(text.as_bytes(), &options).unwrap());
        want(read_mtx_from(Trickle(&gz), &options).unwrap());
        want(read_mtx_from(Trickle(text.as_bytes()), &options).unwrap());
        // Two members, split inside an entry line: read as one stream (`gzip -d` does).
        let (head, tail) = text.split_at(text.len() - 4);
        want(read_mtx_from([gz_bytes(head), gz_bytes(tail)].concat().as_slice(), &options).unwrap());
        // A reader's length is unknown: a huge declared count allocates nothing and fails at
        // the end, naming the reader.
        let huge = "%%MatrixMarket matrix coordinate pattern general\n9 9 1000000000000\n1 1\n";
        let e = read_mtx_from(huge.as_bytes(), &options).unwrap_err().to_string();
        assert_eq!(e, "<reader>:3: the file ends after 1 of the 1000000000000 entries the size line declares");
        // Empty and one-byte inputs are short of the magic and of a banner alike.
        assert!(read_mtx_from(&b""[..], &options).unwrap_err().to_string().contains("empty"));
        assert!(read_mtx_from(&b"\x1f"[..], &options).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
