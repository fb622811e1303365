//! `DataError`: what went wrong reading a file (a dataset, a Matrix Market matrix, a pickle), as
//! data a caller can match on (the file, the 1-based line or the byte offset where the problem
//! sits, and what is wrong) rather than a message to parse. Its `Display` is the conventional
//! `path:line: what` (`path: byte N, ...` for a binary file); a dataset that no source could
//! provide lists every place tried and the fix.

use sparsegrad_backend::SparseError;
use std::fmt;
use std::path::{Path, PathBuf};

/// An error reading or writing a file: which file, which line (1-based, when the problem sits on
/// one), and what is wrong.
#[derive(Debug)]
#[non_exhaustive]
pub enum DataError {
    /// The file could not be opened, read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// The line being read when it failed, if any.
        line: Option<usize>,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file's content is not what its format allows.
    Content {
        /// The file.
        path: PathBuf,
        /// The 1-based line where the problem sits; `None` when it is the file as a whole (two
        /// files that disagree, an entry stored twice).
        line: Option<usize>,
        /// What is wrong.
        what: String,
    },
    /// A binary file's content (a pickle) is not what its format allows, at a byte offset;
    /// displayed as `path: byte 144: opcode REDUCE (0x52): ...`.
    Binary {
        /// The file.
        path: PathBuf,
        /// The offset of the opcode (or object) where the problem sits.
        offset: u64,
        /// What is wrong (the opcode first, when one is at fault).
        what: String,
    },
    /// No source held a dataset and none could fetch it: every place tried, why each failed,
    /// and the one-line fix (see `crate::source`).
    NotFound {
        /// The dataset, as `Planetoid CiteSeer` or `SuiteSparse HB/bcsstk13`.
        dataset: String,
        /// Each place tried, in order: what it is (`$SPARSEGRAD_DATA`), where, and why it failed.
        tried: Vec<Tried>,
        /// The one line that fixes it.
        fix: String,
    },
    /// A download failed: the address, and what went wrong (the network, the server's answer,
    /// a checksum that does not match, the file that could not be written).
    Download {
        /// The address.
        url: String,
        /// What went wrong.
        what: String,
    },
    /// A value built in memory (not read from a file) is inconsistent, or cannot be written.
    Invalid {
        /// What is wrong.
        what: String,
    },
    /// The tensor the content describes was refused by the library's checks.
    Sparse {
        /// The file.
        path: PathBuf,
        /// The library's error.
        source: SparseError,
    },
}

/// One place a dataset was looked for (see [`DataError::NotFound`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tried {
    /// The source, as `the root argument`, `$SPARSEGRAD_DATA`, `the cache`, `the checkout`, `download`.
    pub source: String,
    /// The directory, file or address looked at, if there was one.
    pub location: Option<String>,
    /// Why it did not provide the dataset.
    pub why: String,
}

impl fmt::Display for Tried {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Some(at) => write!(f, "{} ({at}): {}", self.source, self.why),
            None => write!(f, "{}: {}", self.source, self.why),
        }
    }
}

impl DataError {
    /// An I/O error on `path`.
    pub(crate) fn io(path: &Path, line: Option<usize>, source: std::io::Error) -> Self {
        Self::Io { path: path.to_path_buf(), line, source }
    }

    /// Content of `path` that its format does not allow.
    pub(crate) fn content(path: &Path, line: Option<usize>, what: impl fmt::Display) -> Self {
        Self::Content { path: path.to_path_buf(), line, what: what.to_string() }
    }

    /// The file the error is about, if any.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Self::Io { path, .. }
            | Self::Content { path, .. }
            | Self::Binary { path, .. }
            | Self::Sparse { path, .. } => Some(path),
            Self::Invalid { .. } | Self::NotFound { .. } | Self::Download { .. } => None,
        }
    }

    /// The 1-based line the error is about, if any.
    pub fn line(&self) -> Option<usize> {
        match self {
            Self::Io { line, .. } | Self::Content { line, .. } => *line,
            _ => None,
        }
    }

    /// The byte offset the error is about, if any (a binary file's).
    pub fn offset(&self) -> Option<u64> {
        match self {
            Self::Binary { offset, .. } => Some(*offset),
            _ => None,
        }
    }
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = |f: &mut fmt::Formatter<'_>, path: &Path, line: &Option<usize>| match line {
            Some(line) => write!(f, "{}:{line}: ", path.display()),
            None => write!(f, "{}: ", path.display()),
        };
        match self {
            Self::Io { path, line, source } => {
                at(f, path, line)?;
                write!(f, "{source}")
            }
            Self::Content { path, line, what } => {
                at(f, path, line)?;
                f.write_str(what)
            }
            Self::Binary { path, offset, what } => write!(f, "{}: byte {offset}: {what}", path.display()),
            Self::NotFound { dataset, tried, fix } => {
                write!(f, "{dataset} was found nowhere; tried, in order:")?;
                for (k, t) in tried.iter().enumerate() {
                    write!(f, "\n  {}. {t}", k + 1)?;
                }
                write!(f, "\nfix: {fix}")
            }
            Self::Download { url, what } => write!(f, "downloading {url}: {what}"),
            Self::Invalid { what } => f.write_str(what),
            Self::Sparse { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for DataError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::Sparse { source, .. } => Some(source),
            _ => None,
        }
    }
}
