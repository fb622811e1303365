//! `DataError`: what went wrong reading a file (a dataset, a Matrix Market matrix), as data a
//! caller can match on (the file, the 1-based line where the problem sits, and what is wrong)
//! rather than a message to parse. Its `Display` is the conventional `path:line: what`.

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
            Self::Io { path, .. } | Self::Content { path, .. } | Self::Sparse { path, .. } => Some(path),
            Self::Invalid { .. } => None,
        }
    }

    /// The 1-based line the error is about, if any.
    pub fn line(&self) -> Option<usize> {
        match self {
            Self::Io { line, .. } | Self::Content { line, .. } => *line,
            Self::Invalid { .. } | Self::Sparse { .. } => None,
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
            Self::Content { .. } | Self::Invalid { .. } => None,
        }
    }
}
