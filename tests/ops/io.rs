//! `sparsegrad::io`: Matrix Market files to and from tensors. Four SuiteSparse matrices, found by
//! name (`sparsegrad::io::suitesparse`: the checkout's `../shared/data/suitesparse` here), are read
//! in every layout and compared entry by entry with what `sprs`'s reader gives for the same file,
//! then written and read back bit for bit; hand-written files cover the fields, symmetries and
//! `array` storage, and the writer's refusals.

use burn::tensor::{Device, FloatDType, Tensor};
use flate2::write::GzEncoder;
use sparsegrad::io::{
    read_dense, read_dense_from, read_sparse, read_sparse_from, read_sparse_with, write_sparse, write_sparse_to,
    MtxField, MtxSymmetry, ReadOptions,
};
use sparsegrad::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn device() -> Device {
    crate::common_ops::dev()
}

/// A fresh directory for one test.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sparsegrad-io-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The stored entries of a matrix, `(row, col) -> value`, read from its COO form.
fn entries(a: &SparseTensor<2>) -> BTreeMap<(usize, usize), f64> {
    let coo = a.to_sparse_coo().coalesce();
    let i = coo.indices().unwrap().into_data().convert::<i64>().try_to_vec::<i64>().unwrap();
    let v = coo.values_flat().cast(FloatDType::F64).into_data().try_to_vec::<f64>().unwrap();
    let n = v.len();
    (0..n).map(|k| ((i[k] as usize, i[n + k] as usize), v[k])).collect()
}

/// The entries `sprs` reads from the (decompressed) file, duplicates summed.
fn sprs_entries(plain: &Path, pattern: bool) -> ([usize; 2], BTreeMap<(usize, usize), f64>) {
    let mut out = BTreeMap::new();
    let shape = if pattern {
        let t: sprs::TriMat<sprs::num_kinds::Pattern> = sprs::io::read_matrix_market(plain).unwrap();
        for (_, (i, j)) in t.triplet_iter() {
            *out.entry((i, j)).or_insert(0.0) += 1.0;
        }
        [t.rows(), t.cols()]
    } else {
        let t: sprs::TriMat<f64> = sprs::io::read_matrix_market(plain).unwrap();
        for (v, (i, j)) in t.triplet_iter() {
            *out.entry((i, j)).or_insert(0.0) += *v;
        }
        [t.rows(), t.cols()]
    };
    (shape, out)
}

#[test]
fn suitesparse_matrices_match_sprs_and_round_trip() {
    let dir = temp_dir("suitesparse");
    for name in ["HB/bcsstk13", "Bai/cryg2500", "HB/jagmesh7", "HB/west0067"] {
        let plain = sparsegrad::io::suitesparse(name).unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(&plain).unwrap();
        let banner = text.lines().next().unwrap().to_ascii_lowercase();
        let (shape, expected) = sprs_entries(&plain, banner.contains("pattern"));

        for layout in [Layout::Coo, Layout::Csr, Layout::Csc, Layout::Bsr] {
            let blocksize = (layout == Layout::Bsr).then_some([1, 1]);
            let a = read_sparse(&plain, layout, blocksize, FloatDType::F64, &device()).unwrap();
            assert_eq!((a.layout(), a.shape()), (layout, shape), "{name}");
            assert_eq!(entries(&a), expected, "{name} {layout:?}");
        }
        // Compressed, read through the `.gz` beside a missing plain file: the same.
        let stem = plain.file_stem().unwrap().to_str().unwrap().to_owned();
        let gz = std::fs::File::create(dir.join(format!("{stem}.mtx.gz"))).unwrap();
        let mut gz = GzEncoder::new(gz, flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, text.as_bytes()).unwrap();
        gz.finish().unwrap();
        let a = read_sparse(dir.join(format!("{stem}.mtx")), Layout::Csr, None, FloatDType::F64, &device()).unwrap();
        assert_eq!(entries(&a), expected, "{name}.gz");
        // The `.gz` by its own name (gzip is told by its magic bytes: this was "not UTF-8"), and
        // through a reader, compressed and plain.
        let gz_path = dir.join(format!("{stem}.mtx.gz"));
        let by_name = read_sparse(&gz_path, Layout::Csr, None, FloatDType::F64, &device()).unwrap();
        assert_eq!(entries(&by_name), expected, "{name}.mtx.gz by its name");
        let options = ReadOptions::default();
        for (what, reader) in [
            ("gzip", Box::new(std::fs::File::open(&gz_path).unwrap()) as Box<dyn std::io::Read>),
            ("plain", Box::new(std::io::BufReader::new(std::fs::File::open(&plain).unwrap()))),
        ] {
            let a = read_sparse_from(reader, &options, Layout::Coo, None, FloatDType::F64, &device()).unwrap();
            assert_eq!((a.shape(), entries(&a)), (shape, expected.clone()), "{name} from a {what} reader");
        }

        // Written and read back: the same entries, bit for bit (general, and the banner's own
        // symmetry when the matrix has one).
        let field = if banner.contains("pattern") { MtxField::Pattern } else { MtxField::Real };
        let symmetry = if banner.contains("symmetric") { MtxSymmetry::Symmetric } else { MtxSymmetry::General };
        for symmetry in [MtxSymmetry::General, symmetry] {
            let out = dir.join(format!("{stem}-out.mtx"));
            write_sparse(&out, &a, field, symmetry).unwrap();
            let back = read_sparse(&out, Layout::Coo, None, FloatDType::F64, &device()).unwrap();
            let (got, want) = (entries(&back), entries(&a));
            assert_eq!(got.len(), want.len(), "{name} {symmetry:?}");
            for ((k, g), (_, w)) in got.iter().zip(&want) {
                assert_eq!(g.to_bits(), w.to_bits(), "{name} {symmetry:?} {k:?}");
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn read_sparse_honours_fields_and_symmetries() {
    let dir = temp_dir("fields");
    let path = dir.join("m.mtx");
    // Skew-symmetric integer, with a comment and a duplicate entry (summed).
    std::fs::write(
        &path,
        "%%MatrixMarket matrix coordinate integer skew-symmetric\n% c\n3 3 3\n2 1 4\n3 1 -2\n2 1 1\n",
    )
    .unwrap();
    let a = read_sparse(&path, Layout::Csr, None, FloatDType::F32, &device()).unwrap();
    assert_eq!(a.dtype(), burn::tensor::DType::F32);
    let dense = a.to_dense().into_data().try_to_vec::<f32>().unwrap();
    assert_eq!(dense, [0.0, -5.0, 2.0, 5.0, 0.0, 0.0, -2.0, 0.0, 0.0]);
    // Written back as skew-symmetric integer: the strict lower triangle.
    let mut out = Vec::new();
    write_sparse_to(&mut out, &a, MtxField::Integer, MtxSymmetry::SkewSymmetric).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 2\n2 1 5\n3 1 -2\n"
    );
    // Empty matrices, both ways.
    std::fs::write(&path, "%%MatrixMarket matrix coordinate real general\n0 4 0\n").unwrap();
    let e = read_sparse(&path, Layout::Csc, None, FloatDType::F64, &device()).unwrap();
    assert_eq!((e.shape(), e.nnz()), ([0, 4], 0));
    let mut out = Vec::new();
    write_sparse_to(&mut out, &e, MtxField::Real, MtxSymmetry::General).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), "%%MatrixMarket matrix coordinate real general\n0 4 0\n");
    // Refused by name: complex, and array storage in the sparse reader.
    std::fs::write(&path, "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n").unwrap();
    let e = read_sparse(&path, Layout::Coo, None, FloatDType::F64, &device()).unwrap_err();
    assert!(e.to_string().contains("field \"complex\" is not supported"), "{e}");
    assert_eq!(e.line(), Some(1));
    std::fs::write(&path, "%%MatrixMarket matrix array real general\n1 1\n1\n").unwrap();
    let e = read_sparse(&path, Layout::Coo, None, FloatDType::F64, &device()).unwrap_err();
    assert!(e.to_string().contains("read it with `io::read_dense`"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn read_dense_reads_array_files() {
    let dir = temp_dir("array");
    let path = dir.join("a.mtx");
    // Column-major: [[1, 3], [2, 4], [-1, 0.5]].
    std::fs::write(&path, "%%MatrixMarket matrix array real general\n% c\n3 2\n1\n2\n-1\n3\n4\n0.5\n").unwrap();
    let a = read_dense(&path, FloatDType::F64, &device()).unwrap();
    let expected = Tensor::<2>::from_data([[1.0, 3.0], [2.0, 4.0], [-1.0, 0.5]], (&device(), burn::tensor::DType::F64));
    assert_eq!(a.into_data(), expected.into_data());
    // Symmetric: the lower triangle with its diagonal, column by column.
    std::fs::write(&path, "%%MatrixMarket matrix array integer symmetric\n2 2\n1\n7\n3\n").unwrap();
    let a = read_dense(&path, FloatDType::F64, &device()).unwrap().into_data().try_to_vec::<f64>().unwrap();
    assert_eq!(a, [1.0, 7.0, 7.0, 3.0]);
    // Skew-symmetric: the strict lower triangle.
    std::fs::write(&path, "%%MatrixMarket matrix array real skew-symmetric\n3 3\n1\n2\n3\n").unwrap();
    let a = read_dense(&path, FloatDType::F64, &device()).unwrap().into_data().try_to_vec::<f64>().unwrap();
    assert_eq!(a, [0.0, -1.0, -2.0, 1.0, 0.0, -3.0, 2.0, 3.0, 0.0]);
    // Too few and too many values, a coordinate file, and a size the file cannot hold.
    for (text, expected) in [
        (
            "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3.5e0\n",
            "a.mtx:5: the file ends after 3 of the 4 values",
        ),
        ("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n", "a.mtx:2: 4 values declared, but the 6 bytes"),
        ("%%MatrixMarket matrix array real general\n1 1\n1\n2\n", "a.mtx:4: more values than the 1"),
        ("%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 1\n", "format \"coordinate\" is not supported"),
        (
            "%%MatrixMarket matrix array real general\n100000 100000\n1\n",
            "10000000000 values declared, but the 2 bytes",
        ),
        ("%%MatrixMarket matrix array pattern general\n1 1\n", "has no `pattern` field"),
        ("%%MatrixMarket matrix array real symmetric\n2 3\n1\n", "must be square"),
    ] {
        std::fs::write(&path, text).unwrap();
        let e = read_dense(&path, FloatDType::F64, &device()).unwrap_err().to_string();
        assert!(e.contains(expected), "{text:?}: {e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn write_sparse_refuses_what_the_banner_cannot_say() {
    let d = device();
    let a = SparseTensor::coo_from_vecs(vec![[0, 1], [1, 0], [1, 1]], vec![2.0f64, 3.0, 1.5], [2, 2], &d).unwrap();
    let refused = |field, symmetry| write_sparse_to(Vec::new(), &a, field, symmetry).unwrap_err().to_string();
    assert!(refused(MtxField::Real, MtxSymmetry::Symmetric).contains("entry (0, 1) = 2.0, but (1, 0) holds 3.0"));
    assert!(refused(MtxField::Integer, MtxSymmetry::General).contains("entry (1, 1) = 1.5 is not an integer"));
    assert!(refused(MtxField::Real, MtxSymmetry::SkewSymmetric)
        .contains("not skew-symmetric: entry (0, 1) = 2.0, but (1, 0) holds 3.0"));
    let wide = SparseTensor::coo_from_vecs(vec![[0, 2]], vec![1.0f64], [2, 3], &d).unwrap();
    let e = write_sparse_to(Vec::new(), &wide, MtxField::Real, MtxSymmetry::Symmetric).unwrap_err().to_string();
    assert!(e.contains("must be square, this one is 2 x 3"), "{e}");
    // A mirror missing entirely.
    let lower = SparseTensor::coo_from_vecs(vec![[1, 0]], vec![1.0f64], [2, 2], &d).unwrap();
    let e = write_sparse_to(Vec::new(), &lower, MtxField::Real, MtxSymmetry::Symmetric).unwrap_err().to_string();
    assert!(e.contains("entry (1, 0) = 1.0, but (0, 1) holds nothing"), "{e}");
    // Uncoalesced input is coalesced before writing: 1 + 2 at (0, 1).
    let dup = SparseTensor::coo_from_vecs(vec![[0, 1], [0, 1]], vec![1.0f32, 2.0], [1, 2], &d).unwrap();
    let mut out = Vec::new();
    write_sparse_to(&mut out, &dup, MtxField::Real, MtxSymmetry::General).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), "%%MatrixMarket matrix coordinate real general\n1 2 1\n1 2 3.0\n");
}

/// `nan` and infinities in a `real` file reach the tensor as scipy's `mmread` gives them (a
/// LAGraph-style `skew_fp64.mtx`: skew-symmetric, the mirrored entries negated), in `f64` and
/// cast to `f32`; `ReadOptions::default().allow_non_finite(false)` refuses the file naming its line.
#[test]
fn non_finite_values_reach_the_tensor_unless_refused() {
    let dir = temp_dir("nonfinite");
    let path = dir.join("skew_fp64.mtx");
    std::fs::write(
        &path,
        "%%MatrixMarket matrix coordinate real skew-symmetric\n%%GraphBLAS type double\n3 3 3\n2 1 NaN\n3 1 inf\n3 2 -2.5\n",
    )
    .unwrap();
    let inf = f64::INFINITY;
    for dtype in [FloatDType::F64, FloatDType::F32] {
        let a = read_sparse(&path, Layout::Csr, None, dtype, &device()).unwrap();
        let got: Vec<((usize, usize), f64)> = entries(&a).into_iter().collect();
        let want =
            [((0, 1), f64::NAN), ((0, 2), -inf), ((1, 0), f64::NAN), ((1, 2), 2.5), ((2, 0), inf), ((2, 1), -2.5)];
        assert_eq!(got.len(), want.len(), "{dtype:?}");
        for ((gk, gv), (wk, wv)) in got.iter().zip(want) {
            assert!(*gk == wk && ((gv.is_nan() && wv.is_nan()) || *gv == wv), "{dtype:?}: {got:?}");
        }
    }
    let finite = ReadOptions::default().allow_non_finite(false);
    let e = read_sparse_with(&path, &finite, Layout::Csr, None, FloatDType::F64, &device()).unwrap_err().to_string();
    assert!(
        e.ends_with("skew_fp64.mtx:4: value \"NaN\" is not finite (refused: `ReadOptions::allow_non_finite` is false)"),
        "{e}"
    );
    // A dense `array` file from a reader, the same way.
    let array = "%%MatrixMarket matrix array real general\n1 3\n-Infinity\n1\nnan\n";
    let d = read_dense_from(array.as_bytes(), &ReadOptions::default(), FloatDType::F64, &device()).unwrap();
    let d = d.into_data().try_to_vec::<f64>().unwrap();
    assert!(d[0] == -inf && d[1] == 1.0 && d[2].is_nan(), "{d:?}");
    let e = read_dense_from(array.as_bytes(), &finite, FloatDType::F64, &device()).unwrap_err().to_string();
    assert!(e.starts_with("<reader>:3: value \"-Infinity\" is not finite"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
