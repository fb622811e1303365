//! A reader for the Python pickles of the Planetoid raw files (`ind.<name>.{x,tx,allx,y,ty,ally,
//! graph}`): protocol 2, written by Python 2, holding a scipy `csr_matrix`, a numpy array or a
//! `collections.defaultdict` of lists. It exists so that [`crate::Planetoid::new`] reads the files
//! PyG downloads, unchanged, without Python.
//!
//! A pickle is a program for a stack machine, and Python's unpickler runs whatever callables the
//! program names. This reader runs nothing: it knows the 28 opcodes these files use (and
//! `LONG_BINGET`, the partner of their `LONG_BINPUT`) and six globals (numpy's `_reconstruct`,
//! `ndarray` and `dtype`, scipy's `csr_matrix`, `defaultdict` and `list`), builds plain data
//! from them ([`Pickle`]), and refuses anything else with a
//! [`DataError::Binary`] naming the file, the byte offset and the opcode. The interpretation into
//! matrices ([`Pickle::csr_matrix`], [`Pickle::array`], [`Pickle::adjacency`]) checks every
//! invariant a consumer relies on (pointers monotone, indices in range, lengths that agree).
//!
//! The input is hostile: every count read from it is checked against the bytes that remain (a
//! 100-byte file announcing a 10^12-element array or a 2 GB string is an error, never an
//! allocation), every size is computed with checked arithmetic, the memo is a map (an index of
//! 4e9 allocates nothing), and the stack and the nesting of marks are bounded. Strings are ranges
//! of the input, never copies, so memo lookups duplicate nothing; containers live in one arena
//! that grows by at most one object an opcode (and [`MAX_OBJECTS`] in all), each element of a
//! container one opcode's push: memory is linear in the file's length. Nothing recurses, so no
//! input can exhaust the call stack.

use crate::error::DataError;
use machine::{ArrayData, Object, Value};
use std::collections::HashMap;
use std::path::Path;

mod machine;
#[cfg(test)]
mod tests;

/// The largest pickle read (256 MiB): the Planetoid files are at most tens of megabytes.
pub const MAX_PICKLE_BYTES: u64 = 1 << 28;

/// The deepest stack of values a pickle may build (these files need about 2000: Python 2 batches
/// `APPENDS` and `SETITEMS` by 1000).
pub const MAX_STACK: usize = 1 << 16;

/// The most marks open at once (these files nest three).
pub const MAX_MARKS: usize = 64;

/// The most containers and objects a pickle may build (PubMed's graph, one list a node, needs
/// about 20,000): with the stack bound, memory stays within a few dozen bytes an input byte.
pub const MAX_OBJECTS: usize = 1 << 20;

/// A parsed pickle: the input, the arena of objects it built and its result. Read it with
/// [`Pickle::csr_matrix`], [`Pickle::array`] or [`Pickle::adjacency`].
#[derive(Debug)]
pub struct Pickle {
    path: std::path::PathBuf,
    bytes: Vec<u8>,
    objects: Vec<(usize, Object)>,
    root: Value,
}

/// A scipy CSR matrix as read from a pickle, checked: `indptr` has `rows + 1` non-decreasing
/// entries from 0 to `indices.len() == data.len()`, every index is below `cols`.
#[derive(Clone, Debug, PartialEq)]
pub struct CsrMatrix {
    /// Number of rows.
    pub rows: usize,
    /// Number of columns.
    pub cols: usize,
    /// Row pointers.
    pub indptr: Vec<usize>,
    /// Column of each stored entry.
    pub indices: Vec<usize>,
    /// Value of each stored entry, widened to `f64`.
    pub data: Vec<f64>,
}

/// A numpy array as read from a pickle: its shape and its elements in row-major order, widened
/// to `f64` (a Fortran-ordered array is transposed on the way).
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    /// The dimensions.
    pub shape: Vec<usize>,
    /// `shape.iter().product()` elements, row-major.
    pub data: Vec<f64>,
}

/// Reads the pickle at `path` (at most [`MAX_PICKLE_BYTES`]).
pub fn read_pickle(path: &Path) -> Result<Pickle, DataError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| DataError::io(path, None, e))?;
    let mut bytes = Vec::new();
    file.take(MAX_PICKLE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| DataError::io(path, None, e))?;
    if bytes.len() as u64 > MAX_PICKLE_BYTES {
        return Err(DataError::content(path, None, format_args!("longer than {MAX_PICKLE_BYTES} bytes")));
    }
    Pickle::parse(bytes, path)
}

impl Pickle {
    /// Runs the pickle `bytes` (read from `path`, which errors name).
    pub fn parse(bytes: Vec<u8>, path: &Path) -> Result<Pickle, DataError> {
        match machine::run(&bytes) {
            Ok((objects, root)) => Ok(Pickle { path: path.to_path_buf(), bytes, objects, root }),
            Err((offset, what)) => Err(DataError::Binary { path: path.to_path_buf(), offset: offset as u64, what }),
        }
    }

    fn error(&self, at: usize, what: impl std::fmt::Display) -> DataError {
        DataError::Binary { path: self.path.clone(), offset: at as u64, what: what.to_string() }
    }

    fn get(&self, v: &Value) -> Option<&(usize, Object)> {
        match v {
            Value::Obj(h) => self.objects.get(*h),
            _ => None,
        }
    }

    /// The built array `v` refers to, and the offset that created it.
    fn array_data(&self, v: &Value, what: &str) -> Result<(usize, &ArrayData), DataError> {
        match self.get(v) {
            Some((at, Object::Array(Some(a)))) => Ok((*at, a)),
            Some((at, _)) => Err(self.error(*at, format_args!("{what} is not a built numpy array"))),
            None => Err(self.error(0, format_args!("{what} is not a numpy array"))),
        }
    }

    /// The elements of an array, each widened to `f64` (exact for every integer below 2^53 and
    /// every float).
    fn elements(&self, a: &ArrayData) -> Vec<f64> {
        let bytes = self.bytes.get(a.data.clone()).unwrap_or_default();
        bytes.chunks_exact(a.dtype.size).map(|c| a.dtype.float(c)).collect()
    }

    /// The pickle as a numpy array (`ndarray` of a numeric dtype), row-major.
    pub fn array(&self) -> Result<Array, DataError> {
        let (_, a) = self.array_data(&self.root, "the pickle's value")?;
        let mut data = self.elements(a);
        // An empty array has nothing to reorder (and its dimensions' product may overflow); a
        // non-empty one has every dimension at least 1, so no stride exceeds its length.
        if a.fortran && a.shape.len() > 1 && !data.is_empty() {
            // Column-major to row-major: element (i, j, ..) sits at the reversed strides.
            let mut strides = vec![1usize; a.shape.len()];
            for k in 1..a.shape.len() {
                strides[k] = strides[k - 1] * a.shape[k - 1];
            }
            let mut out = Vec::with_capacity(data.len());
            let mut idx = vec![0usize; a.shape.len()];
            for _ in 0..data.len() {
                let at: usize = idx.iter().zip(&strides).map(|(i, s)| i * s).sum();
                out.push(data.get(at).copied().unwrap_or(0.0));
                for k in (0..idx.len()).rev() {
                    idx[k] += 1;
                    if idx[k] < a.shape[k] {
                        break;
                    }
                    idx[k] = 0;
                }
            }
            data = out;
        }
        Ok(Array { shape: a.shape.clone(), data })
    }

    /// A 1-D array of non-negative integers below `bound`.
    fn index_array(&self, v: &Value, what: &str, bound: usize) -> Result<Vec<usize>, DataError> {
        let (at, a) = self.array_data(v, what)?;
        if a.shape.len() != 1 || !matches!(a.dtype.kind, b'i' | b'u') {
            return Err(self.error(at, format_args!("{what} is not a 1-D integer array")));
        }
        let bytes = self.bytes.get(a.data.clone()).unwrap_or_default();
        let mut out = Vec::with_capacity(bytes.len() / a.dtype.size);
        for (k, c) in bytes.chunks_exact(a.dtype.size).enumerate() {
            let v = a.dtype.int(c);
            match usize::try_from(v) {
                Ok(i) if i < bound => out.push(i),
                _ => return Err(self.error(at, format_args!("{what}[{k}] = {v} is outside 0..{bound}"))),
            }
        }
        Ok(out)
    }

    /// The pickle as a scipy `csr_matrix`, checked (see [`CsrMatrix`]).
    pub fn csr_matrix(&self) -> Result<CsrMatrix, DataError> {
        let (at, dict) = match self.get(&self.root) {
            Some((at, Object::Csr(Some(h)))) => match self.objects.get(*h) {
                Some((_, Object::Dict(items))) => (*at, items),
                _ => return Err(self.error(*at, "the csr_matrix's state is not a dict")),
            },
            Some((at, _)) => return Err(self.error(*at, "the pickle's value is not a built scipy csr_matrix")),
            None => return Err(self.error(0, "the pickle's value is not a scipy csr_matrix")),
        };
        // A dict keeps the last value of a repeated key, as Python's does.
        let field = |name: &str| {
            dict.iter()
                .rev()
                .find(|(k, _)| matches!(k, Value::Str(r) if self.bytes.get(r.clone()) == Some(name.as_bytes())))
                .map(|(_, v)| v)
                .ok_or_else(|| self.error(at, format_args!("the csr_matrix has no `{name}`")))
        };
        if !matches!(field("format")?, Value::Str(r) if self.bytes.get(r.clone()) == Some(b"csr")) {
            return Err(self.error(at, "the csr_matrix's `format` is not \"csr\""));
        }
        let shape = match self.get(field("_shape")?) {
            Some((_, Object::Tuple(t))) => match t.as_slice() {
                [Value::Int(r), Value::Int(c)] => usize::try_from(*r).ok().zip(usize::try_from(*c).ok()),
                _ => None,
            },
            _ => None,
        };
        let (rows, cols) =
            shape.ok_or_else(|| self.error(at, "the csr_matrix's `_shape` is not two non-negative integers"))?;
        let indptr = self.index_array(field("indptr")?, "indptr", usize::MAX)?;
        let (data_at, data) = self.array_data(field("data")?, "data")?;
        if data.shape.len() != 1 {
            return Err(self.error(data_at, "data is not a 1-D array"));
        }
        let data = self.elements(data);
        let indices = self.index_array(field("indices")?, "indices", cols)?;
        if Some(indptr.len()) != rows.checked_add(1) {
            return Err(self.error(at, format_args!("indptr has {} entries for {rows} rows", indptr.len())));
        }
        let nnz = indices.len();
        if data.len() != nnz {
            return Err(self.error(at, format_args!("{nnz} indices but {} values", data.len())));
        }
        if indptr.first() != Some(&0) || indptr.last() != Some(&nnz) || indptr.windows(2).any(|w| w[0] > w[1]) {
            return Err(self.error(at, format_args!("indptr does not rise from 0 to the {nnz} entries")));
        }
        Ok(CsrMatrix { rows, cols, indptr, indices, data })
    }

    /// The pickle as a graph: a `defaultdict` (or dict) from node to a list of neighbours, all
    /// non-negative integers; the pairs in the pickle's order, a repeated key keeping its last list.
    pub fn adjacency(&self) -> Result<Vec<(usize, Vec<usize>)>, DataError> {
        let (at, items) = match self.get(&self.root) {
            Some((at, Object::DefaultDict(items) | Object::Dict(items))) => (*at, items),
            Some((at, _)) => return Err(self.error(*at, "the pickle's value is not a dict of lists")),
            None => return Err(self.error(0, "the pickle's value is not a dict of lists")),
        };
        let node = |v: &Value| match v {
            Value::Int(i) => usize::try_from(*i).ok(),
            _ => None,
        };
        let mut out: Vec<(usize, Vec<usize>)> = Vec::with_capacity(items.len());
        let mut seen: HashMap<usize, usize> = HashMap::with_capacity(items.len());
        for (k, v) in items {
            let key = node(k).ok_or_else(|| self.error(at, "a key that is not a non-negative integer"))?;
            let (list_at, list) = match self.get(v) {
                Some((a, Object::List(l))) => (*a, l),
                _ => return Err(self.error(at, format_args!("the value of node {key} is not a list"))),
            };
            let mut neighbours = Vec::with_capacity(list.len());
            for x in list {
                let x = node(x).ok_or_else(|| {
                    self.error(list_at, format_args!("a neighbour of node {key} is not a non-negative integer"))
                })?;
                neighbours.push(x);
            }
            match seen.entry(key) {
                std::collections::hash_map::Entry::Occupied(e) => {
                    if let Some(slot) = out.get_mut(*e.get()) {
                        slot.1 = neighbours;
                    }
                }
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(out.len());
                    out.push((key, neighbours));
                }
            }
        }
        Ok(out)
    }
}
