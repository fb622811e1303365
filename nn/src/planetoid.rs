//! Loaders for the graph datasets shipped in `data/`: the Planetoid export of Cora (Matrix
//! Market adjacency and features, a TSV of labels and the 140 / 500 / 1000 split) and Zachary's
//! karate club, and the Matrix Market reader they share ([`read_mtx`], public: it honours the
//! banner's field and symmetry). Files may be gzip-compressed (`.gz`).
//!
//! The files are untrusted input: they are read as streams of lines of at most [`MAX_LINE`]
//! bytes (never whole into memory), nothing is sized by a number a file declares before the file's
//! own content bounds that number (a 100-byte file announcing 10^12 nodes is an error, not an
//! 8 TB allocation), sizes computed from file contents use checked arithmetic, and every
//! inconsistency is a [`DataError`] naming the file, the 1-based line (`path:line: ...`) where
//! the problem sits, and what is wrong.

use burn::tensor::{DType, Int, Tensor, TensorData};
use flate2::read::GzDecoder;
use sparsegrad_backend::SparseTensor;
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// The longest line the loaders accept, in bytes (the Matrix Market format itself limits lines to
/// 1024 characters): a bound on the memory one line of a hostile or corrupt file can take.
pub const MAX_LINE: usize = 1 << 20;

/// Initial capacity for entries of a gzip-compressed file, whose decompressed length is unknown
/// until it is read: the vectors grow with what the stream really holds, not with what its size
/// line claims.
const GZ_INITIAL_CAPACITY: usize = 1 << 16;

/// A node-classification graph: undirected edges, sparse features, labels and the split.
#[derive(Debug, Clone)]
pub struct Planetoid {
    /// Number of nodes.
    pub nodes: usize,
    /// Undirected edges `(u, v)`, each listed once, no self loops: the entries stored in the
    /// `pattern symmetric` adjacency file (its lower triangle, `u > v`), in file order.
    pub edges: Vec<(usize, usize)>,
    /// Number of feature columns.
    pub num_features: usize,
    /// Feature entries `(node, feature)`, each at most once.
    pub features: Vec<(usize, usize)>,
    /// The value of each entry of `features` (same length and order): 1.0 for a `pattern`
    /// features file (Cora's bag of words) and for the karate club's identity features, the
    /// stored values for a `real` or `integer` one.
    pub feature_values: Vec<f64>,
    /// Class of every node.
    pub labels: Vec<usize>,
    /// Number of classes.
    pub num_classes: usize,
    /// Training nodes (140 for Cora).
    pub train: Vec<usize>,
    /// Validation nodes (500).
    pub val: Vec<usize>,
    /// Test nodes (1000).
    pub test: Vec<usize>,
}

/// An error reading a dataset: the file, the line and what is wrong.
#[derive(Debug)]
pub struct DataError(pub String);

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DataError {}

/// The lines of `path`, or of `path.gz` decompressed, read one at a time with their 1-based
/// numbers (for error messages) and the bytes consumed (to bound what the rest of a plain file can
/// hold).
struct Lines {
    /// The file actually read (`path` or `path.gz`).
    path: PathBuf,
    reader: Box<dyn BufRead>,
    /// Number of the current line (0 before the first).
    number: usize,
    /// Bytes read so far, line terminators included.
    consumed: u64,
    /// Length of a plain file; `None` for a gzip stream.
    len: Option<u64>,
    buf: Vec<u8>,
    line: String,
}

impl Lines {
    fn open(path: &Path) -> Result<Self, DataError> {
        let (path, reader, len): (PathBuf, Box<dyn BufRead>, _) = if path.exists() {
            let file = std::fs::File::open(path).map_err(|e| DataError(format!("{}: {e}", path.display())))?;
            let len = file.metadata().map_err(|e| DataError(format!("{}: {e}", path.display())))?.len();
            (path.to_path_buf(), Box::new(BufReader::new(file)), Some(len))
        } else {
            let mut gz = path.as_os_str().to_owned();
            gz.push(".gz");
            let gz = PathBuf::from(gz);
            let file = std::fs::File::open(&gz).map_err(|e| DataError(format!("{} (or .gz): {e}", path.display())))?;
            (gz, Box::new(BufReader::new(GzDecoder::new(file))), None)
        };
        Ok(Self { path, reader, number: 0, consumed: 0, len, buf: Vec::new(), line: String::new() })
    }

    /// Moves to the next line; `false` at the end of the file.
    fn advance(&mut self) -> Result<bool, DataError> {
        self.buf.clear();
        let limit = MAX_LINE as u64 + 1;
        let read = (&mut self.reader).take(limit).read_until(b'\n', &mut self.buf);
        let n = read.map_err(|e| DataError(format!("{}:{}: {e}", self.path.display(), self.number + 1)))?;
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
    fn line(&self) -> &str {
        &self.line
    }

    /// An error at the current line.
    fn error(&self, what: impl fmt::Display) -> DataError {
        DataError(format!("{}:{}: {what}", self.path.display(), self.number))
    }

    /// Bytes a plain file holds after the current line; `None` for a gzip stream.
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
            return Err(DataError(format!("{}: {} entries but {} values", what(), self.entries.len(), self.values.len())));
        }
        let mut mirrored = 0usize;
        for (k, &(i, j)) in self.entries.iter().enumerate() {
            let stored = |problem: &str| DataError(format!("{}: entry {k} ({i}, {j}) {problem}", what()));
            if i >= self.rows || j >= self.cols {
                return Err(stored("is outside the matrix"));
            }
            match self.symmetry {
                MtxSymmetry::General => {}
                MtxSymmetry::Symmetric | MtxSymmetry::SkewSymmetric if j > i => return Err(stored("is above the diagonal")),
                MtxSymmetry::SkewSymmetric if i == j => return Err(stored("is on the diagonal of a skew-symmetric matrix")),
                MtxSymmetry::Symmetric | MtxSymmetry::SkewSymmetric => mirrored += usize::from(i != j),
            }
        }
        let total = self.entries.len().checked_add(mirrored).ok_or_else(|| DataError(format!("{}: too many entries", what())))?;
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
        Ok(MatrixMarket { rows: self.rows, cols: self.cols, field: self.field, symmetry: MtxSymmetry::General, entries, values })
    }
}

/// The field and symmetry of a `%%MatrixMarket matrix coordinate <field> <symmetry>` banner (its
/// words are case-insensitive); anything this reader does not handle is refused by name.
fn parse_banner(line: &str) -> Result<(MtxField, MtxSymmetry), String> {
    let expected = "`%%MatrixMarket matrix coordinate <real|integer|pattern> <general|symmetric|skew-symmetric>`";
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
    if !format.eq_ignore_ascii_case("coordinate") {
        return Err(format!("banner {line:?}: format {format:?} is not supported (only `coordinate`; `array` is dense storage)"));
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
        _ => return Err(format!("banner {line:?}: symmetry {symmetry:?} is not supported (general, symmetric or skew-symmetric)")),
    };
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

/// The value of an entry of a `real` or `integer` file.
fn value(token: &str, field: MtxField) -> Result<f64, String> {
    match field {
        MtxField::Pattern => Ok(1.0),
        MtxField::Real => match token.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(format!("value {token:?} is not a finite real number")),
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

/// Reads a Matrix Market `coordinate` file (or `path.gz`), honouring its banner: the values of a
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
/// line takes at least 4 bytes, `1 1\n`) is refused at its size line.
pub fn read_mtx(path: &Path) -> Result<MatrixMarket, DataError> {
    let mut lines = Lines::open(path)?;
    if !lines.advance()? {
        return Err(DataError(format!("{}: empty, no %%MatrixMarket banner", lines.path.display())));
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
            _ => return Err(lines.error(format_args!("size line {line:?} is not `rows cols entries` (three non-negative integers)"))),
        }
    };
    if symmetry != MtxSymmetry::General && rows != cols {
        return Err(lines.error(format_args!("a {symmetry} matrix must be square, the size line declares {rows} x {cols}")));
    }
    let capacity = match lines.bytes_left() {
        Some(left) => {
            let shortest: u64 = if field == MtxField::Pattern { 4 } else { 6 };
            // The last line may lack its newline.
            let most = left.saturating_add(1) / shortest;
            if u64::try_from(nnz).map_or(true, |nnz| nnz > most) {
                return Err(lines.error(format_args!("{nnz} entries declared, but the {left} bytes after this line hold at most {most}")));
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
        let v = value(v.unwrap_or("1"), field).map_err(|e| lines.error(e))?;
        match symmetry {
            MtxSymmetry::General => {}
            _ if j > i => return Err(lines.error(format_args!("entry ({r}, {c}) is above the diagonal; a {symmetry} file stores the lower triangle"))),
            MtxSymmetry::SkewSymmetric if i == j => return Err(lines.error(format_args!("diagonal entry ({r}, {c}) in a skew-symmetric file, whose diagonal is zero"))),
            _ => {}
        }
        entries.push((i, j));
        values.push(v);
    }
    if entries.len() != nnz {
        return Err(lines.error(format_args!("the file ends after {} of the {nnz} entries the size line declares", entries.len())));
    }
    Ok(MatrixMarket { rows, cols, field, symmetry, entries, values })
}

/// The undirected edges of a graph's adjacency file: it must be `pattern symmetric` (each edge
/// stored once, in the lower triangle), without self loops or an edge stored twice. The edges are
/// the stored entries, in file order.
fn undirected_edges(path: &Path, m: MatrixMarket) -> Result<Vec<(usize, usize)>, DataError> {
    if (m.field, m.symmetry) != (MtxField::Pattern, MtxSymmetry::Symmetric) {
        return Err(DataError(format!(
            "{}:1: banner declares `{} {}`; a graph's adjacency must be `pattern symmetric` (each undirected edge stored once)",
            path.display(),
            m.field,
            m.symmetry
        )));
    }
    if let Some(k) = m.entries.iter().position(|&(i, j)| i == j) {
        let i = m.entries.get(k).map_or(0, |e| e.0 + 1);
        return Err(DataError(format!("{}: entry {} of {} is a self loop `{i} {i}`; the graph's edges have none", path.display(), k + 1, m.entries.len())));
    }
    let mut sorted = m.entries.clone();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w.first() == w.get(1)) {
        let (i, j) = w.first().map_or((0, 0), |&(i, j)| (i + 1, j + 1));
        return Err(DataError(format!("{}: edge `{i} {j}` is stored twice", path.display())));
    }
    Ok(m.entries)
}

/// Checks a TSV header line.
fn tsv_header(lines: &mut Lines, expected: &str) -> Result<(), DataError> {
    if !lines.advance()? {
        return Err(DataError(format!("{}: empty, no header {expected:?}", lines.path.display())));
    }
    if lines.line() != expected {
        return Err(lines.error(format_args!("header {:?} is not {expected:?}", lines.line())));
    }
    Ok(())
}

/// The `n` labels of `records` (`(line, node, label)`), which must name every node of `0..n`
/// once; sized only once `records` (read from the file) has exactly `n` elements, so a declared
/// node count the file does not back allocates nothing.
fn labels_of(lines: &Lines, records: &[(usize, usize, usize)], n: usize, of: &Path) -> Result<Vec<usize>, DataError> {
    if records.len() != n {
        return Err(lines.error(format_args!("the file ends after {} nodes, {} declares {n}", records.len(), of.display())));
    }
    let mut labels = vec![usize::MAX; n];
    for &(line, node, label) in records {
        let at = |what: String| DataError(format!("{}:{line}: {what}", lines.path.display()));
        let slot = labels.get_mut(node).ok_or_else(|| at(format!("node {node} is outside 0..{n}")))?;
        if *slot != usize::MAX {
            return Err(at(format!("node {node} is listed twice")));
        }
        *slot = label;
    }
    // `n` records, none repeated and all below `n`: every node has its label.
    Ok(labels)
}

/// A node number of a TSV line, checked against the `n` nodes of the graph file `of`, and the
/// refusal of more lines than nodes (which bounds what the records take by the declared count).
fn tsv_node(lines: &Lines, token: &str, n: usize, listed: usize, of: &Path) -> Result<usize, DataError> {
    if listed == n {
        return Err(lines.error(format_args!("more node lines than the {n} nodes {} declares", of.display())));
    }
    match token.parse::<usize>() {
        Ok(node) if node < n => Ok(node),
        Ok(node) => Err(lines.error(format_args!("node {node} is outside 0..{n} (the nodes of {})", of.display()))),
        Err(_) => Err(lines.error(format_args!("node {token:?} is not a non-negative integer"))),
    }
}

impl Planetoid {
    /// Loads `<dir>/<name>_adjacency.mtx`, `<name>_features.mtx` and `<name>_nodes.tsv` (each
    /// possibly `.gz`).
    ///
    /// The adjacency must be a `pattern symmetric` Matrix Market file: its stored entries (one
    /// triangle) are the undirected edges, each once, no self loops (see [`Planetoid::edges`]). The
    /// features may be `pattern` (values 1), `real` or `integer` (values kept in
    /// `feature_values`), general or symmetric (expanded), one row per node, no entry twice. The
    /// nodes TSV has the header `node<TAB>label<TAB>split` and one line `node<TAB>label<TAB>split`
    /// per node (every node exactly once; split `train`, `val`, `test` or `none`; a label below
    /// the node count, since more classes than nodes would only add empty classes).
    pub fn load(dir: impl AsRef<Path>, name: &str) -> Result<Self, DataError> {
        let dir = dir.as_ref();
        let adjacency_path = dir.join(format!("{name}_adjacency.mtx"));
        let adjacency = read_mtx(&adjacency_path)?;
        let n = adjacency.rows;
        let edges = undirected_edges(&adjacency_path, adjacency)?;
        let features_path = dir.join(format!("{name}_features.mtx"));
        let features = read_mtx(&features_path)?;
        if features.rows != n {
            return Err(DataError(format!("{}: {} rows, but {} has {n} nodes", features_path.display(), features.rows, adjacency_path.display())));
        }
        let features = features.to_general()?;
        let mut sorted = features.entries.clone();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w.first() == w.get(1)) {
            let (i, j) = w.first().map_or((0, 0), |&(i, j)| (i + 1, j + 1));
            return Err(DataError(format!("{}: entry `{i} {j}` is stored twice", features_path.display())));
        }
        drop(sorted);

        let nodes_path = dir.join(format!("{name}_nodes.tsv"));
        let mut lines = Lines::open(&nodes_path)?;
        tsv_header(&mut lines, "node\tlabel\tsplit")?;
        let (mut records, mut train, mut val, mut test) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        while lines.advance()? {
            let line = lines.line();
            let mut f = line.split('\t');
            let (Some(node), Some(label), Some(split), None) = (f.next(), f.next(), f.next(), f.next()) else {
                return Err(lines.error(format_args!("{line:?} is not `node<TAB>label<TAB>split`")));
            };
            let node = tsv_node(&lines, node, n, records.len(), &adjacency_path)?;
            let label = match label.parse::<usize>() {
                Ok(l) if l < n => l,
                Ok(l) => return Err(lines.error(format_args!("label {l} is not below the {n} nodes (more classes than nodes)"))),
                Err(_) => return Err(lines.error(format_args!("label {label:?} is not a non-negative integer"))),
            };
            match split {
                "train" => train.push(node),
                "val" => val.push(node),
                "test" => test.push(node),
                "none" => {}
                _ => return Err(lines.error(format_args!("split {split:?} is not train, val, test or none"))),
            }
            records.push((lines.number, node, label));
        }
        let labels = labels_of(&lines, &records, n, &adjacency_path)?;
        let num_classes = labels.iter().max().map_or(0, |m| m + 1);
        Ok(Self {
            nodes: n,
            edges,
            num_features: features.cols,
            features: features.entries,
            feature_values: features.values,
            labels,
            num_classes,
            train,
            val,
            test,
        })
    }

    /// The features as a row-normalised CSR tensor (each row of non-zero sum sums to 1, as Kipf &
    /// Welling preprocess bag-of-words features; a row summing to 0 becomes zeros, as their
    /// `1 / rowsum` with infinities set to 0 does), f32 values and int64 indices. Each value is
    /// `feature_values` (as f32) divided by its row's f32 sum, so a pattern row of `k` entries
    /// gets `1.0 / k` exactly. Duplicate entries, which [`Planetoid::load`] refuses, are summed.
    /// Panics if `features` and `feature_values` differ in length or an entry is outside
    /// `nodes x num_features` (a hand-built value; loaded ones are checked).
    pub fn features_csr(&self, device: &burn::tensor::Device) -> SparseTensor<2> {
        assert_eq!(self.features.len(), self.feature_values.len(), "features and feature_values must have one element per entry");
        let mut rows: Vec<Vec<(i64, f32)>> = vec![Vec::new(); self.nodes];
        for (&(r, c), &v) in self.features.iter().zip(&self.feature_values) {
            rows[r].push((c as i64, v as f32));
        }
        let mut crow = vec![0i64];
        let (mut col, mut val) = (Vec::new(), Vec::new());
        for r in rows.iter_mut() {
            r.sort_by_key(|&(c, _)| c);
            r.dedup_by(|next, kept| {
                let same = next.0 == kept.0;
                if same {
                    kept.1 += next.1;
                }
                same
            });
            let sum: f32 = r.iter().map(|&(_, v)| v).sum();
            for &(c, v) in r.iter() {
                col.push(c);
                val.push(if sum == 0.0 { 0.0 } else { v / sum });
            }
            crow.push(col.len() as i64);
        }
        let nnz = col.len();
        SparseTensor::csr(
            Tensor::<1, Int>::from_data(TensorData::new(crow, [self.nodes + 1]), (device, DType::I64)),
            Tensor::<1, Int>::from_data(TensorData::new(col, [nnz]), (device, DType::I64)),
            Tensor::<1>::from_data(TensorData::new(val, [nnz]), device),
            [self.nodes, self.num_features],
        )
        .expect("loaded features are in bounds, sorted and unique per row")
    }

    /// Zachary's karate club from `<dir>/karate.mtx` and `karate_networkx_club.tsv`: identity
    /// features, the two clubs as labels (`Mr. Hi` 0, `Officer` 1), the first and the last node
    /// (0 "Mr. Hi" and 33 "Officer") as the training set and every other node as the test set.
    ///
    /// `karate.mtx` must be `pattern symmetric` with at least 2 nodes (a `0 0 0` or `1 1 0` size
    /// line is an error: the split needs two distinct training nodes); the club file has the
    /// header `node<TAB>club` and one line per node, every node exactly once.
    pub fn karate(dir: impl AsRef<Path>) -> Result<Self, DataError> {
        let dir = dir.as_ref();
        let mtx_path = dir.join("karate.mtx");
        let m = read_mtx(&mtx_path)?;
        let n = m.rows;
        if n < 2 {
            return Err(DataError(format!(
                "{}: the size line declares {n} nodes; the karate split needs at least 2 (the first and the last node train)",
                mtx_path.display()
            )));
        }
        let edges = undirected_edges(&mtx_path, m)?;
        let club_path = dir.join("karate_networkx_club.tsv");
        let mut lines = Lines::open(&club_path)?;
        tsv_header(&mut lines, "node\tclub")?;
        let mut records = Vec::new();
        while lines.advance()? {
            let line = lines.line();
            let mut f = line.split('\t');
            let (Some(node), Some(club), None) = (f.next(), f.next(), f.next()) else {
                return Err(lines.error(format_args!("{line:?} is not `node<TAB>club`")));
            };
            let node = tsv_node(&lines, node, n, records.len(), &mtx_path)?;
            let label = match club {
                "Mr. Hi" => 0,
                "Officer" => 1,
                _ => return Err(lines.error(format_args!("club {club:?} is not \"Mr. Hi\" or \"Officer\""))),
            };
            records.push((lines.number, node, label));
        }
        let labels = labels_of(&lines, &records, n, &mtx_path)?;
        let last = n - 1; // n >= 2
        Ok(Self {
            nodes: n,
            edges,
            num_features: n,
            features: (0..n).map(|i| (i, i)).collect(),
            feature_values: vec![1.0; n],
            labels,
            num_classes: 2,
            train: vec![0, last],
            val: Vec::new(),
            test: (1..last).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::GzEncoder;
    use std::io::Write;

    /// A fresh directory for one test (removed by the test on success).
    fn temp_dir(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sparsegrad-planetoid-{test}-{}", std::process::id()));
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

    fn repo_data(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("data").join(name)
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

        std::fs::write(&path, "%%MatrixMarket matrix coordinate integer symmetric\n3 3 3\n1 1 7\n3 1 -4\n3 2 9\n").unwrap();
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

        // A gzip-compressed file is read when the plain one is absent.
        std::fs::remove_file(&path).unwrap();
        write_gz(&dir.join("m.mtx.gz"), "%%MatrixMarket matrix coordinate real general\n1 2 1\n1 2 3\n");
        let m = read_mtx(&path).unwrap();
        assert_eq!((m.entries, m.values), (vec![(0, 1)], vec![3.0]));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn read_mtx_refuses_unsupported_banners() {
        let dir = temp_dir("banners");
        let cases = [
            ("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", "field \"complex\" is not supported"),
            ("%%MatrixMarket matrix coordinate complex hermitian\n1 1 1\n1 1 1 0\n", "field \"complex\" is not supported"),
            ("%%MatrixMarket matrix coordinate real hermitian\n1 1 1\n1 1 1\n", "symmetry \"hermitian\" is not supported"),
            ("%%MatrixMarket matrix array real general\n1 1\n1\n", "format \"array\" is not supported"),
            ("%%MatrixMarket vector coordinate real general\n1 1\n1 1\n", "object \"vector\" is not supported"),
            ("%%MatrixMarket matrix coordinate pattern skew-symmetric\n2 2 1\n2 1\n", "`pattern skew-symmetric` has no values"),
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
            (format!("{real}2 2 1\n1 1 one\n"), "m.mtx:3: value \"one\" is not a finite real number"),
            (format!("{real}2 2 1\n1 1 inf\n"), "m.mtx:3: value \"inf\" is not a finite real number"),
            (format!("{real}2 2 1\n1 1 NaN\n"), "m.mtx:3: value \"NaN\" is not a finite real number"),
            (format!("{integer}2 2 1\n1 1 1.5\n"), "m.mtx:3: value \"1.5\" is not an integer"),
            (format!("{integer}2 2 1\n1 1 9007199254740993\n"), "m.mtx:3: integer value 9007199254740993 is beyond 2^53"),
            (format!("{sym}2 2 1\n1 2 1\n"), "m.mtx:3: entry (1, 2) is above the diagonal; a symmetric file stores the lower triangle"),
            (format!("{skew}2 2 1\n1 2 1\n"), "m.mtx:3: entry (1, 2) is above the diagonal; a skew-symmetric file"),
            (format!("{skew}2 2 1\n2 2 1\n"), "m.mtx:3: diagonal entry (2, 2) in a skew-symmetric file"),
            (format!("{sym}2 3 1\n1 1 1\n"), "m.mtx:2: a symmetric matrix must be square, the size line declares 2 x 3"),
            (format!("{pattern}2 2 1\n1 1\n% comment\n2 2\n"), "m.mtx:5: more entries than the 1 the size line declares"),
            (format!("{pattern}2 2 3\n1 1\n2 2\n% a comment as long as an entry\n"), "m.mtx:5: the file ends after 2 of the 3 entries the size line declares"),
        ];
        for (text, expected) in &cases {
            let e = mtx_error(&dir, text);
            assert!(e.contains(expected), "{text:?}: {e}");
        }
        // Not UTF-8, and a line longer than MAX_LINE (refused without reading it all).
        std::fs::write(dir.join("m.mtx"), b"%%MatrixMarket matrix coordinate pattern general\n1 1 1\n1 \xff\n").unwrap();
        let e = read_mtx(&dir.join("m.mtx")).unwrap_err().to_string();
        assert!(e.ends_with("m.mtx:3: not UTF-8 text"), "{e}");
        let e = mtx_error(&dir, &format!("{pattern}% {}\n1 1 1\n1 1\n", "x".repeat(MAX_LINE)));
        assert!(e.ends_with(&format!("m.mtx:2: line longer than {MAX_LINE} bytes")), "{e}");
        // A gzip stream that is not gzip.
        std::fs::write(dir.join("g.mtx.gz"), "not gzip at all").unwrap();
        let e = read_mtx(&dir.join("g.mtx")).unwrap_err().to_string();
        assert!(e.contains("g.mtx.gz:1: "), "{e}");
        let e = read_mtx(&dir.join("absent.mtx")).unwrap_err().to_string();
        assert!(e.contains("absent.mtx (or .gz): "), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn read_mtx_refuses_huge_declared_sizes_without_allocating() {
        let dir = temp_dir("huge");
        let text = "%%MatrixMarket matrix coordinate pattern general\n1000000000000 1000000000000 1000000000000\n1 1\n2 2\n";
        assert!(text.len() <= 100);
        // Plain: refused at the size line from the bytes left (8 bytes hold at most 2 entries).
        let e = mtx_error(&dir, text);
        assert!(e.ends_with("m.mtx:2: 1000000000000 entries declared, but the 8 bytes after this line hold at most 2"), "{e}");
        let e = mtx_error(&dir, "%%MatrixMarket matrix coordinate real general\n9 9 2\n1 1 1\n");
        assert!(e.ends_with("m.mtx:2: 2 entries declared, but the 6 bytes after this line hold at most 1"), "{e}");
        // Gzip: the length is unknown, so the entries grow with what the stream holds and the
        // count check fails at its end.
        write_gz(&dir.join("g.mtx.gz"), text);
        let e = read_mtx(&dir.join("g.mtx")).unwrap_err().to_string();
        assert!(e.ends_with("g.mtx.gz:4: the file ends after 2 of the 1000000000000 entries the size line declares"), "{e}");
        // A declared size alone allocates nothing: a 10^12 x 10^12 matrix with its 2 entries loads.
        let m = mtx_error_free(&dir, "%%MatrixMarket matrix coordinate pattern symmetric\n1000000000000 1000000000000 2\n1 1\n1000000000000 1\n");
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
        let m = MatrixMarket { rows: 2, cols: 2, field: MtxField::Real, symmetry: MtxSymmetry::Symmetric, entries: vec![(0, 1)], values: vec![1.0] };
        assert!(m.to_general().unwrap_err().to_string().contains("entry 0 (0, 1) is above the diagonal"));
        let m = MatrixMarket { symmetry: MtxSymmetry::SkewSymmetric, entries: vec![(1, 1)], ..m };
        assert!(m.to_general().unwrap_err().to_string().contains("entry 0 (1, 1) is on the diagonal of a skew-symmetric matrix"));
        let m = MatrixMarket { symmetry: MtxSymmetry::General, entries: vec![(2, 0)], ..m };
        assert!(m.to_general().unwrap_err().to_string().contains("entry 0 (2, 0) is outside the matrix"));
        let m = MatrixMarket { values: vec![], ..m };
        assert!(m.to_general().unwrap_err().to_string().contains("1 entries but 0 values"));
    }

    /// SuiteSparse files from the shared data folder, when this machine has it (CI does not).
    #[test]
    fn suitesparse_files_load_and_expand() {
        let dir = Path::new("/work/shared/data/suitesparse");
        if !dir.is_dir() {
            return;
        }
        // (file, size, field, symmetry, stored, stored diagonal, first entry and value)
        let cases = [
            ("bcsstk13.mtx", 2003, MtxField::Real, MtxSymmetry::Symmetric, 42943, 2003, ((0, 0), 277281165.183)),
            ("cryg2500.mtx", 2500, MtxField::Real, MtxSymmetry::General, 12349, 2500, ((0, 0), -5679.837539484813)),
            ("jagmesh7.mtx", 1138, MtxField::Pattern, MtxSymmetry::Symmetric, 4294, 1138, ((0, 0), 1.0)),
            ("west0067.mtx", 67, MtxField::Real, MtxSymmetry::General, 294, 2, ((4, 0), -0.2788416)),
        ];
        for (file, n, field, symmetry, stored, diagonal, first) in cases {
            let m = read_mtx(&dir.join(file)).unwrap();
            assert_eq!((m.rows, m.cols, m.field, m.symmetry, m.entries.len(), m.values.len()), (n, n, field, symmetry, stored, stored), "{file}");
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
        assert_eq!(read_mtx(&dir.join("bcsstk13.mtx")).unwrap().to_general().unwrap().entries.len(), 83_883);
    }

    #[test]
    fn cora_loads_as_before() {
        let g = Planetoid::load(repo_data("cora"), "cora").unwrap();
        assert_eq!((g.nodes, g.edges.len(), g.num_features, g.features.len(), g.num_classes), (2708, 5278, 1433, 49216, 7));
        assert_eq!((g.train.len(), g.val.len(), g.test.len()), (140, 500, 1000));
        assert_eq!(g.train, (0..140).collect::<Vec<_>>());
        assert_eq!(g.val, (140..640).collect::<Vec<_>>());
        assert_eq!((g.edges[0], g.features[0]), ((2, 1), (0, 19)));
        assert!(g.edges.iter().all(|&(u, v)| u > v));
        assert!(g.feature_values.len() == g.features.len() && g.feature_values.iter().all(|&v| v == 1.0));
        // Row normalisation: every value is exactly 1 / (entries of its row), as before the values.
        let x = g.features_csr(&burn::tensor::Device::flex());
        let crow: Vec<i64> = x.crow_indices::<1>().unwrap().into_data().iter::<i64>().collect();
        let val: Vec<f32> = x.values::<1>().unwrap().into_data().try_to_vec().unwrap();
        assert_eq!(val.len(), 49216);
        for r in 0..g.nodes {
            let (a, b) = (crow[r] as usize, crow[r + 1] as usize);
            assert!(val[a..b].iter().all(|&v| v.to_bits() == (1.0 / (b - a) as f32).to_bits()), "row {r}");
        }
    }

    #[test]
    fn karate_loads_as_before() {
        let g = Planetoid::karate(repo_data("karate")).unwrap();
        assert_eq!((g.nodes, g.edges.len(), g.num_features, g.features.len(), g.num_classes), (34, 78, 34, 34, 2));
        assert_eq!((g.train.clone(), g.val.len(), g.test.len()), (vec![0, 33], 0, 32));
        assert_eq!((g.labels[0], g.labels[33], g.labels.iter().sum::<usize>()), (0, 1, 17));
        assert_eq!(g.edges[0], (1, 0));
        assert_eq!(g.feature_values, vec![1.0; 34]);
    }

    /// Writes a Planetoid dataset `t` to `dir`.
    fn write_planetoid(dir: &Path, adjacency: &str, features: &str, nodes: &str) {
        std::fs::write(dir.join("t_adjacency.mtx"), adjacency).unwrap();
        std::fs::write(dir.join("t_features.mtx"), features).unwrap();
        std::fs::write(dir.join("t_nodes.tsv"), nodes).unwrap();
    }

    const ADJ: &str = "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 2\n";
    const FEAT: &str = "%%MatrixMarket matrix coordinate pattern general\n3 2 3\n1 1\n2 2\n3 1\n";
    const NODES: &str = "node\tlabel\tsplit\n0\t0\ttrain\n1\t1\tval\n2\t1\ttest\n";

    #[test]
    fn planetoid_load_small_dataset_with_real_features() {
        let dir = temp_dir("small");
        write_planetoid(&dir, ADJ, FEAT, NODES);
        let g = Planetoid::load(&dir, "t").unwrap();
        assert_eq!((g.nodes, g.edges.clone(), g.num_features, g.labels.clone(), g.num_classes), (3, vec![(1, 0), (2, 1)], 2, vec![0, 1, 1], 2));
        assert_eq!((g.train, g.val, g.test), (vec![0], vec![1], vec![2]));
        // Real features keep their values; the row normalisation divides by the row's sum.
        let feat = "%%MatrixMarket matrix coordinate real general\n3 2 4\n1 1 1\n1 2 3\n2 2 -2\n3 1 0\n";
        write_planetoid(&dir, ADJ, feat, "node\tlabel\tsplit\n2\t0\tnone\n0\t1\ttrain\n1\t2\ttest\n");
        let g = Planetoid::load(&dir, "t").unwrap();
        assert_eq!((g.features.clone(), g.feature_values.clone()), (vec![(0, 0), (0, 1), (1, 1), (2, 0)], vec![1.0, 3.0, -2.0, 0.0]));
        assert_eq!((g.labels.clone(), g.num_classes, g.train.clone(), g.test.clone()), (vec![1, 2, 0], 3, vec![0], vec![1]));
        let x = g.features_csr(&burn::tensor::Device::flex());
        assert_eq!(x.values::<1>().unwrap().into_data().try_to_vec::<f32>().unwrap(), vec![0.25, 0.75, 1.0, 0.0]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn planetoid_load_rejects_inconsistent_files() {
        let dir = temp_dir("inconsistent");
        let general = "%%MatrixMarket matrix coordinate pattern general\n3 3 2\n2 1\n1 2\n";
        let real_adj = "%%MatrixMarket matrix coordinate real symmetric\n3 3 1\n2 1 0.5\n";
        let self_loop = "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 3\n";
        let twice = "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 3\n2 1\n3 2\n2 1\n";
        let feat_rows = "%%MatrixMarket matrix coordinate pattern general\n4 2 1\n1 1\n";
        let feat_twice = "%%MatrixMarket matrix coordinate real general\n3 2 2\n1 1 1\n1 1 2\n";
        let huge = "%%MatrixMarket matrix coordinate pattern symmetric\n1000000000000 1000000000000 0\n";
        let huge_feat = "%%MatrixMarket matrix coordinate pattern general\n1000000000000 2 0\n";
        let cases: [(&str, &str, &str, &str); 15] = [
            (general, FEAT, NODES, "t_adjacency.mtx:1: banner declares `pattern general`; a graph's adjacency must be `pattern symmetric`"),
            (real_adj, FEAT, NODES, "t_adjacency.mtx:1: banner declares `real symmetric`"),
            (self_loop, FEAT, NODES, "t_adjacency.mtx: entry 2 of 2 is a self loop `3 3`"),
            (twice, FEAT, NODES, "t_adjacency.mtx: edge `2 1` is stored twice"),
            (ADJ, feat_rows, NODES, "t_features.mtx: 4 rows, but"),
            (ADJ, feat_twice, NODES, "t_features.mtx: entry `1 1` is stored twice"),
            (ADJ, FEAT, "id\tlabel\tsplit\n0\t0\ttrain\n", "t_nodes.tsv:1: header \"id\\tlabel\\tsplit\" is not \"node\\tlabel\\tsplit\""),
            (ADJ, FEAT, "node\tlabel\tsplit\n0\t0\ttrain\n3\t0\ttest\n", "t_nodes.tsv:3: node 3 is outside 0..3"),
            (ADJ, FEAT, "node\tlabel\tsplit\n0\t0\ttrain\n1\t0\n", "t_nodes.tsv:3: \"1\\t0\" is not `node<TAB>label<TAB>split`"),
            (ADJ, FEAT, "node\tlabel\tsplit\n0\t0\ttrain\n1\t0\tdev\n", "t_nodes.tsv:3: split \"dev\" is not train, val, test or none"),
            (ADJ, FEAT, "node\tlabel\tsplit\n0\t3\ttrain\n", "t_nodes.tsv:2: label 3 is not below the 3 nodes"),
            (ADJ, FEAT, "node\tlabel\tsplit\n0\t0\ttrain\n1\t0\ttest\n0\t1\ttest\n", "t_nodes.tsv:4: node 0 is listed twice"),
            (ADJ, FEAT, "node\tlabel\tsplit\n0\t0\ttrain\n1\t0\ttest\n", "t_nodes.tsv:3: the file ends after 2 nodes"),
            (ADJ, FEAT, "node\tlabel\tsplit\n0\t0\ttrain\n1\t0\ttest\n2\t0\ttest\n2\t0\ttest\n", "t_nodes.tsv:5: more node lines than the 3 nodes"),
            // 10^12 declared nodes, a two-line TSV: an error, no 8 TB label vector.
            (huge, huge_feat, NODES, "t_nodes.tsv:4: the file ends after 3 nodes, "),
        ];
        for (adjacency, features, nodes, expected) in cases {
            write_planetoid(&dir, adjacency, features, nodes);
            let e = Planetoid::load(&dir, "t").unwrap_err().to_string();
            assert!(e.contains(expected), "expected {expected:?}, got {e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn karate_rejects_inconsistent_files() {
        let dir = temp_dir("karate");
        let shipped_mtx = std::fs::read_to_string(repo_data("karate").join("karate.mtx")).unwrap();
        let shipped_club = std::fs::read_to_string(repo_data("karate").join("karate_networkx_club.tsv")).unwrap();
        let club_error = |club: &str| {
            std::fs::write(dir.join("karate.mtx"), &shipped_mtx).unwrap();
            std::fs::write(dir.join("karate_networkx_club.tsv"), club).unwrap();
            Planetoid::karate(&dir).unwrap_err().to_string()
        };
        // Node 34 of a 34-node graph (0-based nodes 0..=33) on line 36 (header, 34 nodes, then it).
        let e = club_error(&format!("{shipped_club}34\tOfficer\n"));
        assert!(e.contains("karate_networkx_club.tsv:36: more node lines than the 34 nodes "), "{e}");
        let e = club_error(&shipped_club.replace("33\tOfficer", "34\tOfficer"));
        assert!(e.contains("karate_networkx_club.tsv:35: node 34 is outside 0..34 (the nodes of "), "{e}");
        let e = club_error(&shipped_club.replace("33\tOfficer", "3\tOfficer"));
        assert!(e.contains("karate_networkx_club.tsv:35: node 3 is listed twice"), "{e}");
        let e = club_error(&shipped_club.replace("33\tOfficer\n", ""));
        assert!(e.contains("karate_networkx_club.tsv:34: the file ends after 33 nodes"), "{e}");
        let e = club_error(&shipped_club.replace("33\tOfficer", "33\tofficer"));
        assert!(e.contains("karate_networkx_club.tsv:35: club \"officer\" is not \"Mr. Hi\" or \"Officer\""), "{e}");
        let e = club_error(&shipped_club.replace("node\tclub", "club"));
        assert!(e.contains("karate_networkx_club.tsv:1: header \"club\" is not \"node\\tclub\""), "{e}");

        let mtx_error = |mtx: &str| {
            std::fs::write(dir.join("karate.mtx"), mtx).unwrap();
            std::fs::write(dir.join("karate_networkx_club.tsv"), &shipped_club).unwrap();
            Planetoid::karate(&dir).unwrap_err().to_string()
        };
        let e = mtx_error("%%MatrixMarket matrix coordinate pattern symmetric\n0 0 0\n");
        assert!(e.contains("karate.mtx: the size line declares 0 nodes; the karate split needs at least 2"), "{e}");
        let e = mtx_error("%%MatrixMarket matrix coordinate pattern symmetric\n1 1 0\n");
        assert!(e.contains("karate.mtx: the size line declares 1 nodes"), "{e}");
        // 10^12 declared nodes and a 34-line club file: an error, no 8 TB allocation.
        let e = mtx_error("%%MatrixMarket matrix coordinate pattern symmetric\n1000000000000 1000000000000 0\n");
        assert!(e.contains("karate_networkx_club.tsv:35: the file ends after 34 nodes"), "{e}");
        let e = mtx_error(&shipped_mtx.replace("pattern symmetric", "pattern general"));
        assert!(e.contains("karate.mtx:1: banner declares `pattern general`"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
