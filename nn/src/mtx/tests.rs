//! Tests of the Matrix Market readers: banners, malformed content named by line, declared sizes
//! that the file cannot hold, symmetric expansion, non-finite values and gzip detection.

use super::*;
use crate::error::DataError;
use flate2::write::GzEncoder;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

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
        ("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", "field \"complex\" is not supported"),
        ("%%MatrixMarket matrix coordinate complex hermitian\n1 1 1\n1 1 1 0\n", "field \"complex\" is not supported"),
        ("%%MatrixMarket matrix coordinate real hermitian\n1 1 1\n1 1 1\n", "symmetry \"hermitian\" is not supported"),
        ("%%MatrixMarket matrix array real general\n1 1\n1\n", "format \"array\" is not supported (only `coordinate`"),
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
        (format!("{integer}2 2 1\n1 1 9007199254740993\n"), "m.mtx:3: integer value 9007199254740993 is beyond 2^53"),
        (
            format!("{sym}2 2 1\n1 2 1\n"),
            "m.mtx:3: entry (1, 2) is above the diagonal; a symmetric file stores the lower triangle",
        ),
        (format!("{skew}2 2 1\n1 2 1\n"), "m.mtx:3: entry (1, 2) is above the diagonal; a skew-symmetric file"),
        (format!("{skew}2 2 1\n2 2 1\n"), "m.mtx:3: diagonal entry (2, 2) in a skew-symmetric file"),
        (format!("{sym}2 3 1\n1 1 1\n"), "m.mtx:2: a symmetric matrix must be square, the size line declares 2 x 3"),
        (format!("{pattern}2 2 1\n1 1\n% comment\n2 2\n"), "m.mtx:5: more entries than the 1 the size line declares"),
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
    std::fs::write(dir.join("m.mtx"), b"%%MatrixMarket matrix coordinate pattern general\n1 1 1\n1 \xff\n").unwrap();
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
        e.ends_with("skew_fp64.mtx:4: value \"nan\" is not finite (refused: `ReadOptions::allow_non_finite` is false)"),
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
        assert_eq!((m.rows, m.cols, m.entries.clone(), m.values.clone()), (2, 3, vec![(0, 2), (1, 0)], vec![2.5, -4.0]))
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
