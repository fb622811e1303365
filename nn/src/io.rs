//! Matrix Market files to and from tensors: [`read_sparse`] (a `coordinate` file into a
//! `SparseTensor` in the layout asked for; [`read_sparse_from`] from any [`Read`],
//! [`read_sparse_with`] with [`ReadOptions`]), [`read_dense`] (an `array` file into a dense
//! tensor; [`read_dense_from`], [`read_dense_with`]) and [`write_sparse`] / [`write_sparse_to`]
//! (a sparse matrix out as `coordinate real`, `integer` or `pattern`, `general`, `symmetric` or
//! `skew-symmetric`), and [`suitesparse`]: a matrix of the SuiteSparse collection by name, found
//! or fetched (feature `datasets`).
//!
//! The parsing is `mtx`'s (streaming, bounded by what the file holds, every problem a
//! [`DataError`] naming the file and line; gzip recognised by its magic bytes; `nan` and
//! infinities taken as scipy takes them unless [`ReadOptions`] refuses them); this module only
//! turns its entries into tensors and back. Values are read as `f64` and cast to the dtype asked
//! for (the caller's explicit choice); indices are `int64`. Written values use Rust's shortest
//! representation that reads back to the same `f64`, so a write followed by a read gives the
//! same tensor bit for bit.

use crate::error::DataError;
pub use crate::mtx::{
    read_mtx, read_mtx_array, read_mtx_array_from, read_mtx_array_with, read_mtx_from, read_mtx_with,
    DenseMatrixMarket, MatrixMarket, MtxField, MtxSymmetry, ReadOptions, READER_NAME,
};
#[cfg(feature = "datasets")]
pub use crate::suitesparse::{suitesparse, suitesparse_from};
use burn::tensor::{DType, Device, FloatDType, Int, Tensor, TensorData};
use sparsegrad_backend::util::read_i64;
use sparsegrad_backend::{Layout, SparseTensor};
use std::io::{BufWriter, Read, Write};
use std::path::Path;

/// Reads a Matrix Market `coordinate` file (`real`, `integer` or `pattern`; `general`,
/// `symmetric` or `skew-symmetric`; plain, or gzip-compressed with the `datasets` feature,
/// whatever its name; `path.gz` where `path` is missing) into a matrix of `layout` (`blocksize`
/// for BSR and BSC), values cast to `dtype`, on `device`. Every entry is stored: a symmetric
/// file's mirrored entries are added, and entries a file lists twice are summed (the result is
/// coalesced). `complex`, `hermitian` and `array` files are refused by name. `nan` and infinite
/// values are read as scipy reads them (see [`read_sparse_with`] to refuse them).
///
/// ```no_run
/// use burn::tensor::{Device, FloatDType};
/// use sparsegrad_backend::Layout;
/// let a = sparsegrad_nn::io::read_sparse("bcsstk13.mtx", Layout::Csr, None, FloatDType::F64, &Device::flex())?;
/// assert_eq!(a.shape(), [2003, 2003]);
/// # Ok::<(), sparsegrad_nn::DataError>(())
/// ```
pub fn read_sparse(
    path: impl AsRef<Path>,
    layout: Layout,
    blocksize: Option<[usize; 2]>,
    dtype: FloatDType,
    device: &Device,
) -> Result<SparseTensor<2>, DataError> {
    read_sparse_with(path, &ReadOptions::default(), layout, blocksize, dtype, device)
}

/// [`read_sparse`] with `options` (`ReadOptions::default().allow_non_finite(false)` refuses `nan`
/// and infinite values, naming the file and line).
pub fn read_sparse_with(
    path: impl AsRef<Path>,
    options: &ReadOptions,
    layout: Layout,
    blocksize: Option<[usize; 2]>,
    dtype: FloatDType,
    device: &Device,
) -> Result<SparseTensor<2>, DataError> {
    let path = path.as_ref();
    sparse_of(read_mtx_with(path, options)?, path, layout, blocksize, dtype, device)
}

/// [`read_sparse_with`] from any reader (bytes in memory, an archive member, a socket), plain
/// or gzip-compressed (by its magic bytes); errors name it [`READER_NAME`].
///
/// ```
/// use burn::tensor::{Device, FloatDType};
/// use sparsegrad_backend::Layout;
/// use sparsegrad_nn::io::{read_sparse_from, ReadOptions};
/// let text = "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n1 1 4\n2 1 -1.5\n";
/// let options = ReadOptions::default();
/// let a = read_sparse_from(text.as_bytes(), &options, Layout::Csr, None, FloatDType::F64, &Device::flex())?;
/// assert_eq!(a.to_dense().into_data().try_to_vec::<f64>().unwrap(), [4.0, -1.5, -1.5, 0.0]);
/// # Ok::<(), sparsegrad_nn::DataError>(())
/// ```
pub fn read_sparse_from(
    reader: impl Read,
    options: &ReadOptions,
    layout: Layout,
    blocksize: Option<[usize; 2]>,
    dtype: FloatDType,
    device: &Device,
) -> Result<SparseTensor<2>, DataError> {
    sparse_of(read_mtx_from(reader, options)?, Path::new(READER_NAME), layout, blocksize, dtype, device)
}

/// The matrix `m` read from `path` as a sparse tensor: every entry stored (mirrored ones added,
/// duplicates summed), in `layout`.
fn sparse_of(
    m: MatrixMarket,
    path: &Path,
    layout: Layout,
    blocksize: Option<[usize; 2]>,
    dtype: FloatDType,
    device: &Device,
) -> Result<SparseTensor<2>, DataError> {
    let m = m.to_general()?;
    let nse = m.entries.len();
    let sparse = |source| DataError::Sparse { path: path.to_path_buf(), source };
    let coords = |k: fn(&(usize, usize)) -> usize| m.entries.iter().map(move |e| k(e) as i64);
    // `[2, nse]`: rows, then columns. `usize` entries below the declared sizes, which the
    // constructor checks fit int64.
    let mut flat = Vec::new();
    flat.try_reserve_exact(2 * nse).map_err(|_| DataError::content(path, None, "cannot allocate the indices"))?;
    flat.extend(coords(|e| e.0));
    flat.extend(coords(|e| e.1));
    let indices = Tensor::<2, Int>::from_data(TensorData::new(flat, [2, nse]), (device, DType::I64));
    let values = Tensor::<1>::from_data(TensorData::new(m.values, [nse]), (device, DType::F64)).cast(dtype);
    let coo = SparseTensor::coo(indices, values, [m.rows, m.cols]).map_err(sparse)?.coalesce();
    coo.to_layout(layout, blocksize).map_err(sparse)
}

/// Reads a Matrix Market `array` file (dense storage, `real` or `integer`, any symmetry: the
/// stored triangle is mirrored) into a dense `[rows, cols]` tensor of `dtype` on `device`; plain
/// or gzip-compressed, `nan` and infinities read as scipy reads them.
pub fn read_dense(path: impl AsRef<Path>, dtype: FloatDType, device: &Device) -> Result<Tensor<2>, DataError> {
    read_dense_with(path, &ReadOptions::default(), dtype, device)
}

/// [`read_dense`] with `options`.
pub fn read_dense_with(
    path: impl AsRef<Path>,
    options: &ReadOptions,
    dtype: FloatDType,
    device: &Device,
) -> Result<Tensor<2>, DataError> {
    Ok(dense_of(read_mtx_array_with(path.as_ref(), options)?, dtype, device))
}

/// [`read_dense_with`] from any reader, plain or gzip-compressed; errors name it [`READER_NAME`].
pub fn read_dense_from(
    reader: impl Read,
    options: &ReadOptions,
    dtype: FloatDType,
    device: &Device,
) -> Result<Tensor<2>, DataError> {
    Ok(dense_of(read_mtx_array_from(reader, options)?, dtype, device))
}

/// The elements of `m` as a `[rows, cols]` tensor.
fn dense_of(m: DenseMatrixMarket, dtype: FloatDType, device: &Device) -> Tensor<2> {
    Tensor::<2>::from_data(TensorData::new(m.values, [m.rows, m.cols]), (device, DType::F64)).cast(dtype)
}

/// Writes the matrix `a` to the file `path` as Matrix Market `coordinate` (see
/// [`write_sparse_to`]).
pub fn write_sparse(
    path: impl AsRef<Path>,
    a: &SparseTensor<2>,
    field: MtxField,
    symmetry: MtxSymmetry,
) -> Result<(), DataError> {
    let path = path.as_ref();
    let file = std::fs::File::create(path).map_err(|e| DataError::io(path, None, e))?;
    let mut out = BufWriter::new(file);
    write_sparse_to(&mut out, a, field, symmetry).map_err(|e| match e {
        DataError::Io { line, source, .. } => DataError::io(path, line, source),
        e => e,
    })?;
    out.flush().map_err(|e| DataError::io(path, None, e))
}

/// Writes the matrix `a` (any layout, coalesced first; no batch or dense dims) to `out` as
/// Matrix Market `coordinate <field> <symmetry>`, one entry per line in row-major order, 1-based.
///
/// - `field`: `Real` writes every value exactly (shortest round-trip form); `Integer` requires
///   every value to be an integer of magnitude at most 2^53; `Pattern` writes positions only.
/// - `symmetry`: `General` writes every entry; `Symmetric` requires `a` square and equal to its
///   transpose (stored where its transpose stores, with equal values) and writes the lower
///   triangle; `SkewSymmetric` requires `a = -aᵀ` with nothing stored on the diagonal and writes
///   the strict lower triangle.
///
/// A matrix that does not fit the field or symmetry asked is a [`DataError::Invalid`] naming the
/// first entry that does not, before anything is written.
pub fn write_sparse_to(
    mut out: impl Write,
    a: &SparseTensor<2>,
    field: MtxField,
    symmetry: MtxSymmetry,
) -> Result<(), DataError> {
    let invalid = |what: String| DataError::Invalid { what };
    if a.batch_dim() != 0 || a.dense_dim() != 0 {
        return Err(invalid(format!(
            "Matrix Market stores plain matrices: this one has {} batch and {} dense dims",
            a.batch_dim(),
            a.dense_dim()
        )));
    }
    if field == MtxField::Pattern && symmetry == MtxSymmetry::SkewSymmetric {
        return Err(invalid("`pattern skew-symmetric` has no values to negate".into()));
    }
    let [rows, cols] = a.shape();
    if symmetry != MtxSymmetry::General && rows != cols {
        return Err(invalid(format!("a {symmetry} matrix must be square, this one is {rows} x {cols}")));
    }
    let coo = a.to_sparse_coo().coalesce();
    let indices = coo.indices().map_err(|e| invalid(e.to_string()))?;
    let rc = read_i64(&indices);
    let values: Vec<f64> = coo
        .values_flat()
        .cast(FloatDType::F64)
        .into_data()
        .try_to_vec::<f64>()
        .map_err(|e| invalid(format!("reading the values: {e:?}")))?;
    let nse = values.len();
    let (row, col) = rc.split_at(nse);
    let at = |k: usize| (row[k] as usize, col[k] as usize);
    if field == MtxField::Integer {
        const EXACT: f64 = (1u64 << 53) as f64;
        if let Some(k) = values.iter().position(|v| v.fract() != 0.0 || v.abs() > EXACT) {
            let (i, j) = at(k);
            return Err(invalid(format!(
                "entry ({i}, {j}) = {} is not an integer of magnitude at most 2^53: write it as `real`",
                values[k]
            )));
        }
    }
    if symmetry != MtxSymmetry::General {
        check_symmetric(row, col, &values, cols, symmetry)?;
    }
    let kept = |k: &usize| {
        let (i, j) = at(*k);
        match symmetry {
            MtxSymmetry::General => true,
            MtxSymmetry::Symmetric => i >= j,
            MtxSymmetry::SkewSymmetric => i > j,
        }
    };
    let count = (0..nse).filter(kept).count();
    let io = |e| DataError::Io { path: "<writer>".into(), line: None, source: e };
    writeln!(out, "%%MatrixMarket matrix coordinate {field} {symmetry}").map_err(io)?;
    writeln!(out, "{rows} {cols} {count}").map_err(io)?;
    for k in (0..nse).filter(kept) {
        let (i, j) = at(k);
        match field {
            MtxField::Pattern => writeln!(out, "{} {}", i + 1, j + 1),
            MtxField::Integer => writeln!(out, "{} {} {}", i + 1, j + 1, values[k] as i64),
            // `{:?}` of an f64 is its shortest representation that reads back to the same bits.
            MtxField::Real => writeln!(out, "{} {} {:?}", i + 1, j + 1, values[k]),
        }
        .map_err(io)?;
    }
    Ok(())
}

/// Checks that the coalesced row-major entries `(row, col, values)` of a square matrix are
/// symmetric (`a[j][i] = a[i][j]`) or skew-symmetric (`a[j][i] = -a[i][j]`, empty diagonal):
/// each entry's mirror is found by binary search in its row.
fn check_symmetric(row: &[i64], col: &[i64], values: &[f64], n: usize, symmetry: MtxSymmetry) -> Result<(), DataError> {
    // Row starts of the row-major entries.
    let mut start = vec![0usize; n + 1];
    for &i in row {
        start[i as usize + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let sign = if symmetry == MtxSymmetry::SkewSymmetric { -1.0 } else { 1.0 };
    for k in 0..values.len() {
        let (i, j) = (row[k] as usize, col[k] as usize);
        if i == j && symmetry == MtxSymmetry::SkewSymmetric {
            return Err(DataError::Invalid {
                what: format!("entry ({i}, {j}) is on the diagonal of a skew-symmetric matrix"),
            });
        }
        let mirror_row = &col[start[j]..start[j + 1]];
        let mirror = mirror_row.binary_search(&(i as i64)).ok().map(|m| values[start[j] + m]);
        if mirror != Some(sign * values[k]) {
            let found = mirror.map_or("nothing".to_string(), |v| format!("{v:?}"));
            return Err(DataError::Invalid {
                what: format!(
                    "the matrix is not {symmetry}: entry ({i}, {j}) = {:?}, but ({j}, {i}) holds {found}",
                    values[k]
                ),
            });
        }
    }
    Ok(())
}
