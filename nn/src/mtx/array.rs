//! The `array` (dense) format: [`DenseMatrixMarket`], every element of a file (a symmetric
//! file's stored triangle mirrored), and [`read_mtx_array`] and its variants that read one with
//! the same checks and memory bounds as the `coordinate` reader.

use super::banner::{parse_banner_of, skipped};
use super::entry::value;
use super::lines::GZ_INITIAL_CAPACITY;
use super::{Lines, MtxField, MtxSymmetry, ReadOptions, READER_NAME};
use crate::error::DataError;
use std::io::Read;
use std::path::{Path, PathBuf};

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
/// asks. The same checks as [`read_mtx`](super::read_mtx): every problem is a [`DataError`] naming the file and
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
