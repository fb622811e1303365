//! The lines of a Matrix Market (or dataset TSV) file or reader: decompressed where the content
//! is gzip, at most [`MAX_LINE`] bytes each, numbered for error messages, with the bytes consumed
//! counted so that a reader can bound what the rest of a plain file can hold. Apart from the
//! format readers because it knows nothing of the format, and the `planetoid` loaders read their
//! TSV files with it too.

use crate::error::DataError;
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// The longest line [`read_mtx`](super::read_mtx) and the dataset loaders accept, in bytes (the Matrix Market
/// format itself limits lines to 1024 characters): a bound on the memory one line of a hostile or
/// corrupt file can take.
pub const MAX_LINE: usize = 1 << 20;

/// Initial capacity for entries of a stream whose length is unknown until it is read (gzip, or
/// any reader): the vectors grow with what the stream really holds, not with what its size line
/// claims.
pub(super) const GZ_INITIAL_CAPACITY: usize = 1 << 16;

/// The two bytes every gzip stream starts with (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// The name errors give input read through [`read_mtx_from`](super::read_mtx_from) (it has no path).
pub const READER_NAME: &str = "<reader>";

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
    pub(super) fn bytes_left(&self) -> Option<u64> {
        self.len.map(|len| len.saturating_sub(self.consumed))
    }
}
