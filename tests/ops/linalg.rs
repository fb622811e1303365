//! `sparsegrad::linalg`: `svd_lowrank` and `pca_lowrank` against faer's dense SVD (singular
//! values within 1e-8 relative in f64, subspaces by principal angles) on every layout, with and
//! without a mean, their gradients by gradcheck, and `lobpcg` against faer's dense symmetric
//! eigensolver (standard, generalized, preconditioned, and the 10 largest eigenvalues of
//! SuiteSparse's bcsstk13, found by `sparsegrad::io::suitesparse`).

use crate::common_ops;

use crate::common_ops::gradcheck;
use burn::tensor::{DType, Tensor, TensorData};
use common_ops::{dense, floats, layouts_2d, serial, sparse_data, Rng};
use faer::{Mat, MatRef, Side};
use sparsegrad::gradcheck::{GradInput, GradcheckOptions};
use sparsegrad::linalg::{lobpcg, pca_lowrank, svd_lowrank};
use sparsegrad::prelude::*;

/// A row-major host matrix as a faer matrix.
fn mat(data: &[f64], rows: usize, cols: usize) -> Mat<f64> {
    Mat::from_fn(rows, cols, |i, j| data[i * cols + j])
}

fn host(t: Tensor<2>) -> Mat<f64> {
    let [r, c] = t.dims();
    mat(&floats(t), r, c)
}

/// The dense reference: singular values (non-increasing), U, V.
fn dense_svd(a: MatRef<'_, f64>) -> (Vec<f64>, Mat<f64>, Mat<f64>) {
    let svd = a.thin_svd().unwrap();
    (svd.S().column_vector().iter().copied().collect(), svd.U().to_owned(), svd.V().to_owned())
}

/// Eigenvalues (non-decreasing) and eigenvectors of a dense symmetric matrix.
fn dense_eigh(a: MatRef<'_, f64>) -> (Vec<f64>, Mat<f64>) {
    let e = a.self_adjoint_eigen(Side::Lower).unwrap();
    (e.S().column_vector().iter().copied().collect(), e.U().to_owned())
}

fn assert_rel(actual: &[f64], expected: &[f64], tol: f64, what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: lengths");
    for (k, (&a, &e)) in actual.iter().zip(expected).enumerate() {
        assert!((a - e).abs() <= tol * e.abs(), "{what}[{k}]: {a} vs {e} (relative {:e})", (a - e).abs() / e.abs());
    }
}

/// The cosine of the largest principal angle between the column spaces of the orthonormal
/// `u` and `v` (same column count): the smallest singular value of `uᵀ v`.
fn min_cos(u: MatRef<'_, f64>, v: MatRef<'_, f64>) -> f64 {
    let s = (u.transpose() * v).singular_values().unwrap();
    s.iter().copied().fold(f64::INFINITY, f64::min)
}

/// Asserts that the first `r` columns of `u` and `v` span the same subspace (principal angles
/// below 1e-6) and that `u`'s columns are orthonormal.
fn assert_same_subspace(u: MatRef<'_, f64>, v: MatRef<'_, f64>, r: usize, what: &str) {
    let (u, v) = (u.subcols(0, r), v.subcols(0, r));
    let gram = u.transpose() * u;
    for i in 0..r {
        for j in 0..r {
            let expected = if i == j { 1.0 } else { 0.0 };
            assert!((gram[(i, j)] - expected).abs() < 1e-10, "{what}: columns not orthonormal ({i}, {j})");
        }
    }
    let c = min_cos(u, v).min(1.0);
    assert!((1.0 - c * c).sqrt() < 1e-6, "{what}: largest principal angle sin = {:e}", (1.0 - c * c).sqrt());
}

/// `a - u diag(s) vᵀ` is below `tol` everywhere (`u`, `s`, `v` from a rank-complete call).
fn assert_reconstructs(a: MatRef<'_, f64>, u: MatRef<'_, f64>, s: &[f64], v: MatRef<'_, f64>, tol: f64, what: &str) {
    let us = Mat::from_fn(u.nrows(), u.ncols(), |i, j| u[(i, j)] * s[j]);
    let r = &us * v.transpose();
    for i in 0..a.nrows() {
        for j in 0..a.ncols() {
            assert!((r[(i, j)] - a[(i, j)]).abs() < tol, "{what}: ({i}, {j}) {} vs {}", r[(i, j)], a[(i, j)]);
        }
    }
}

#[test]
fn svd_lowrank_full_rank_on_every_layout_tall_and_wide() {
    let _g = serial();
    let mut rng = Rng(31);
    for (rows, cols) in [(10usize, 8usize), (8, 10)] {
        let data = sparse_data(rows * cols, 0.45, 0.5, 2.0, &mut rng);
        let a = mat(&data, rows, cols);
        let (s_ref, u_ref, v_ref) = dense_svd(a.as_ref());
        let q = rows.min(cols);
        for (name, s) in layouts_2d(&dense(&data, [rows, cols], DType::F64)) {
            let what = format!("{rows}x{cols} {name}");
            let (u, sv, v) = svd_lowrank(&s, Some(q), None, None).unwrap();
            assert_eq!((u.dims(), sv.dims(), v.dims()), ([rows, q], [q], [cols, q]), "{what}");
            let (u, sv, v) = (host(u), floats(sv), host(v));
            assert_rel(&sv, &s_ref, 1e-8, &what);
            assert_reconstructs(a.as_ref(), u.as_ref(), &sv, v.as_ref(), 1e-10, &what);
            // Distinct singular values: each singular vector matches the reference up to sign.
            for j in 0..q {
                assert_same_subspace(u.as_ref().subcols(j, 1), u_ref.as_ref().subcols(j, 1), 1, &what);
                assert_same_subspace(v.as_ref().subcols(j, 1), v_ref.as_ref().subcols(j, 1), 1, &what);
            }
        }
    }
}

#[test]
fn svd_lowrank_f32() {
    let _g = serial();
    let mut rng = Rng(32);
    let data = sparse_data(12 * 6, 0.5, 0.5, 2.0, &mut rng);
    let (s_ref, _, _) = dense_svd(mat(&data, 12, 6).as_ref());
    let s = dense(&data, [12, 6], DType::F32).to_sparse_csr().unwrap();
    let (u, sv, v) = svd_lowrank(&s, Some(6), Some(1), None).unwrap();
    assert_eq!((u.dtype(), sv.dtype(), v.dtype()), (DType::F32, DType::F32, DType::F32));
    assert_rel(&floats(sv), &s_ref, 1e-4, "f32");
}

/// A rank-3 sparse matrix (a sum of outer products of sparse vectors), 40 x 30.
fn low_rank(rng: &mut Rng) -> Vec<f64> {
    let (m, n) = (40, 30);
    let mut a = vec![0.0; m * n];
    for _ in 0..3 {
        let x = sparse_data(m, 0.3, 0.5, 1.5, rng);
        let y = sparse_data(n, 0.3, 0.5, 1.5, rng);
        for i in 0..m {
            for j in 0..n {
                a[i * n + j] += x[i] * y[j];
            }
        }
    }
    a
}

#[test]
fn svd_lowrank_recovers_a_low_rank_matrix() {
    let _g = serial();
    let mut rng = Rng(33);
    let data = low_rank(&mut rng);
    let a = mat(&data, 40, 30);
    let (s_ref, u_ref, v_ref) = dense_svd(a.as_ref());
    assert!(s_ref[3] < 1e-12 * s_ref[0], "the matrix has rank 3");
    let s = dense(&data, [40, 30], DType::F64).to_sparse().unwrap();
    assert!(s.nnz() < 40 * 30, "the operand is sparse");
    for niter in [0, 2] {
        let (u, sv, v) = svd_lowrank(&s, Some(5), Some(niter), None).unwrap();
        let (u, sv, v) = (host(u), floats(sv), host(v));
        let what = format!("niter {niter}");
        assert_rel(&sv[..3], &s_ref[..3], 1e-8, &what);
        assert!(sv[3..].iter().all(|&x| x < 1e-10 * sv[0]), "{what}: {sv:?}");
        assert_same_subspace(u.as_ref(), u_ref.as_ref(), 3, &what);
        assert_same_subspace(v.as_ref(), v_ref.as_ref(), 3, &what);
    }
}

#[test]
fn svd_lowrank_subtracts_a_broadcast_mean() {
    let _g = serial();
    let mut rng = Rng(34);
    let (rows, cols) = (9, 7);
    let data = sparse_data(rows * cols, 0.4, 0.5, 2.0, &mut rng);
    let s = dense(&data, [rows, cols], DType::F64).to_sparse_csr().unwrap();
    for shape in [[1, cols], [rows, 1], [rows, cols], [1, 1]] {
        let mean = rng.values(shape[0] * shape[1]);
        let centered = mat(&data, rows, cols);
        let centered =
            Mat::from_fn(rows, cols, |i, j| centered[(i, j)] - mean[(i % shape[0]) * shape[1] + (j % shape[1])]);
        let (s_ref, _, _) = dense_svd(centered.as_ref());
        let m = dense(&mean, shape, DType::F64);
        let what = format!("mean {shape:?}");
        let (u, sv, v) = svd_lowrank(&s, Some(7), None, Some(m)).unwrap();
        let sv = floats(sv);
        assert_rel(&sv, &s_ref, 1e-8, &what);
        assert_reconstructs(centered.as_ref(), host(u).as_ref(), &sv, host(v).as_ref(), 1e-10, &what);
    }
}

#[test]
fn pca_lowrank_centers_without_densifying() {
    let _g = serial();
    let mut rng = Rng(35);
    let (rows, cols) = (12, 6);
    let data = sparse_data(rows * cols, 0.4, 0.5, 2.0, &mut rng);
    let a = mat(&data, rows, cols);
    let means: Vec<f64> = (0..cols).map(|j| (0..rows).map(|i| a[(i, j)]).sum::<f64>() / rows as f64).collect();
    let centered = Mat::from_fn(rows, cols, |i, j| a[(i, j)] - means[j]);
    let (s_ref, _, v_ref) = dense_svd(centered.as_ref());
    for (name, s) in layouts_2d(&dense(&data, [rows, cols], DType::F64)) {
        let (u, sv, v) = pca_lowrank(&s, None, true, None).unwrap();
        assert_eq!((u.dims(), sv.dims(), v.dims()), ([rows, 6], [6], [cols, 6]), "{name}: q = min(6, m, n)");
        let (sv, v) = (floats(sv), host(v));
        assert_rel(&sv, &s_ref, 1e-8, &name);
        assert_same_subspace(v.as_ref(), v_ref.as_ref(), 6, &name);
        assert_reconstructs(centered.as_ref(), host(u).as_ref(), &sv, v.as_ref(), 1e-10, &name);
    }
    // Without centering it is the SVD of A itself.
    let s = dense(&data, [rows, cols], DType::F64).to_sparse_csr().unwrap();
    let (_, sv, _) = pca_lowrank(&s, Some(6), false, Some(1)).unwrap();
    assert_rel(&floats(sv), &dense_svd(a.as_ref()).0, 1e-8, "center = false");
}

#[test]
fn lowrank_edge_cases_and_errors() {
    let _g = serial();
    let s = dense(&[1.0, 0.0, 0.0, 2.0, 0.0, 3.0], [2, 3], DType::F64).to_sparse_csr().unwrap();
    let e = svd_lowrank(&s, Some(3), None, None).unwrap_err().to_string();
    assert!(e.contains("q = 3 exceeds min(m, n) = 2"), "{e}");
    let e = pca_lowrank(&s, Some(4), true, None).unwrap_err().to_string();
    assert!(e.contains("q = 4 exceeds"), "{e}");
    let bad = dense(&[1.0, 2.0], [1, 2], DType::F64);
    let e = svd_lowrank(&s, Some(1), None, Some(bad)).unwrap_err().to_string();
    assert!(e.contains("[1, 2] does not broadcast to [2, 3]"), "{e}");
    // q = 0 and an empty matrix give empty factors.
    let (u, sv, v) = svd_lowrank(&s, Some(0), None, None).unwrap();
    assert_eq!((u.dims(), sv.dims(), v.dims()), ([2, 0], [0], [3, 0]));
    let empty = dense(&[], [0, 4], DType::F64).to_sparse().unwrap();
    let (u, sv, v) = pca_lowrank(&empty, None, true, None).unwrap();
    assert_eq!((u.dims(), sv.dims(), v.dims()), ([0, 0], [0], [4, 0]));
    // The diagonal matrix's singular values, exactly, on a matrix with an empty row and column.
    let d = dense(&[3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0], [3, 3], DType::F64).to_sparse().unwrap();
    let (_, sv, _) = svd_lowrank(&d, Some(2), None, None).unwrap();
    assert_rel(&floats(sv), &[3.0, 2.0], 1e-12, "diagonal");
}

/// gradcheck of `U`, `S` and `V` together w.r.t. the stored values, the test matrix drawn from
/// the same seed at every evaluation (torch's gradcheck of svd_lowrank fixes the seed the same
/// way).
fn check_lowrank_grad(
    name: &str,
    f: impl Fn(&SparseTensor<2>) -> (Tensor<2>, Tensor<1>, Tensor<2>),
    s: &SparseTensor<2>,
) {
    let input = GradInput::sparse(name, s);
    let n = input.values.len();
    let g = |v: &[Tensor<1>]| {
        v[0].device().seed(7);
        let a = s.with_values(v[0].clone().reshape(s.values_flat().dims()));
        let (u, sv, vv) = f(&a);
        Tensor::cat(vec![u.reshape([-1]), sv, vv.reshape([-1])], 0)
    };
    let report = gradcheck(g, &[input], GradcheckOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(report.checked, n, "{name}");
}

#[test]
fn svd_lowrank_gradients() {
    let _g = serial();
    let ad = crate::common_ops::ad();
    let mut rng = Rng(36);
    for (rows, cols, q, niter) in [(7usize, 5usize, 5usize, 1usize), (7, 5, 3, 1)] {
        let data = sparse_data(rows * cols, 0.6, 0.5, 2.0, &mut rng);
        let t = Tensor::<2>::from_data(TensorData::new(data, [rows, cols]), (&ad, DType::F64));
        for (layout, s) in [("csr", t.clone().to_sparse_csr().unwrap()), ("coo", t.clone().to_sparse().unwrap())] {
            let name = format!("svd_lowrank {rows}x{cols} q={q} niter={niter} {layout}");
            check_lowrank_grad(&name, |a| svd_lowrank(a, Some(q), Some(niter), None).unwrap(), &s);
        }
    }
    // Wide inputs (torch's algorithm runs on the transpose, U and V swap at the end): a singular
    // vector may flip its sign inside a finite-difference step, so the checked output is
    // `U diag(S) Vᵀ`, which no sign flip changes (rank 3 of a rank-5 matrix: not the input).
    for q in [3usize, 5] {
        let data = sparse_data(5 * 7, 0.6, 0.5, 2.0, &mut rng);
        let t = Tensor::<2>::from_data(TensorData::new(data, [5, 7]), (&ad, DType::F64));
        for (layout, s) in [("csr", t.clone().to_sparse_csr().unwrap()), ("coo", t.clone().to_sparse().unwrap())] {
            let name = format!("svd_lowrank 5x7 q={q} U S Vt {layout}");
            let input = GradInput::sparse(&name, &s);
            let n = input.values.len();
            let g = |v: &[Tensor<1>]| {
                v[0].device().seed(7);
                let a = s.with_values(v[0].clone().reshape(s.values_flat().dims()));
                let (u, sv, vv) = svd_lowrank(&a, Some(q), Some(1), None).unwrap();
                (u * sv.unsqueeze::<2>()).matmul(vv.transpose()).reshape([-1])
            };
            let report = gradcheck(g, &[input], GradcheckOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(report.checked, n, "{name}");
        }
    }
    // With a mean (its gradient flows too, checked through pca_lowrank's column means).
    let data = sparse_data(8 * 4, 0.6, 0.5, 2.0, &mut rng);
    let t = Tensor::<2>::from_data(TensorData::new(data, [8, 4]), (&ad, DType::F64));
    check_lowrank_grad("pca_lowrank", |a| pca_lowrank(a, Some(3), true, Some(1)).unwrap(), &t.to_sparse_csr().unwrap());
}

// ---------------------------------------------------------------------------------------------
// lobpcg

/// A random symmetric sparse matrix with a dominant diagonal (positive definite), `n x n`.
fn spd(n: usize, rng: &mut Rng) -> Vec<f64> {
    let off = sparse_data(n * n, 0.15, 0.1, 1.0, rng);
    let mut a = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..i {
            a[i * n + j] = off[i * n + j];
            a[j * n + i] = off[i * n + j];
        }
    }
    for i in 0..n {
        let row: f64 = (0..n).map(|j| a[i * n + j].abs()).sum();
        a[i * n + i] = row + 1.0 + i as f64 * 0.37;
    }
    a
}

/// `‖A x_j - λ_j B x_j‖` is small for every returned pair (`b` the dense B, or identity).
fn assert_eigenpairs(
    a: MatRef<'_, f64>,
    b: Option<MatRef<'_, f64>>,
    e: &[f64],
    x: MatRef<'_, f64>,
    tol: f64,
    what: &str,
) {
    let ax = a * x;
    let bx = match b {
        Some(b) => b * x,
        None => x.to_owned(),
    };
    for (j, &l) in e.iter().enumerate() {
        let r = Mat::from_fn(x.nrows(), 1, |i, _| ax[(i, j)] - l * bx[(i, j)]);
        assert!(r.norm_l2() <= tol * l.abs() * x.col(j).norm_l2(), "{what}: residual of pair {j}: {:e}", r.norm_l2());
    }
}

#[test]
fn lobpcg_matches_the_dense_eigensolver() {
    let _g = serial();
    let mut rng = Rng(37);
    let n = 40;
    let data = spd(n, &mut rng);
    let a = mat(&data, n, n);
    let (e_ref, v_ref) = dense_eigh(a.as_ref());
    crate::common_ops::dev().seed(11);
    for (name, s) in layouts_2d(&dense(&data, [n, n], DType::F64)) {
        for largest in [true, false] {
            let what = format!("{name} largest={largest}");
            let (e, x) =
                lobpcg(&s, Some(3), None, None, Some(5), None, None, Some(1e-10), Some(largest), None).unwrap();
            assert_eq!((e.dims(), x.dims()), ([3], [n, 3]), "{what}");
            let (e, x) = (floats(e), host(x));
            let (expected, vecs): (Vec<f64>, Mat<f64>) = if largest {
                ((0..3).map(|j| e_ref[n - 1 - j]).collect(), Mat::from_fn(n, 3, |i, j| v_ref[(i, n - 1 - j)]))
            } else {
                (e_ref[..3].to_vec(), v_ref.as_ref().subcols(0, 3).to_owned())
            };
            assert_rel(&e, &expected, 1e-8, &what);
            assert_eigenpairs(a.as_ref(), None, &e, x.as_ref(), 1e-6, &what);
            assert_same_subspace(x.as_ref(), vecs.as_ref(), 3, &what);
        }
    }
}

#[test]
fn lobpcg_generalized_and_preconditioned() {
    let _g = serial();
    let mut rng = Rng(38);
    let n = 36;
    let data = spd(n, &mut rng);
    let a = mat(&data, n, n);
    let bdiag: Vec<f64> = (0..n).map(|i| 1.0 + (i % 5) as f64 * 0.5).collect();
    // The reference: eigenvalues of B^-1/2 A B^-1/2.
    let c = Mat::from_fn(n, n, |i, j| a[(i, j)] / (bdiag[i] * bdiag[j]).sqrt());
    let (e_ref, _) = dense_eigh(c.as_ref());
    let diag = |d: &[f64]| {
        let mut m = vec![0.0; n * n];
        for i in 0..n {
            m[i * n + i] = d[i];
        }
        dense(&m, [n, n], DType::F64).to_sparse_csr().unwrap()
    };
    let s = dense(&data, [n, n], DType::F64).to_sparse_csr().unwrap();
    let b = diag(&bdiag);
    crate::common_ops::dev().seed(12);
    let (e, x) = lobpcg(&s, Some(2), Some(&b), None, Some(4), None, None, Some(1e-10), Some(false), None).unwrap();
    let (e, x) = (floats(e), host(x));
    assert_rel(&e, &e_ref[..2], 1e-8, "generalized smallest");
    let bm = Mat::from_fn(n, n, |i, j| if i == j { bdiag[i] } else { 0.0 });
    assert_eigenpairs(a.as_ref(), Some(bm.as_ref()), &e, x.as_ref(), 1e-6, "generalized");
    // X is B-orthonormal.
    let g = x.transpose() * (&bm * &x);
    assert!((g[(0, 0)] - 1.0).abs() < 1e-8 && g[(0, 1)].abs() < 1e-8, "XᵀBX = {g:?}");

    // Jacobi preconditioning, an initial X given (k defaults to its columns).
    let (e_std, _) = dense_eigh(a.as_ref());
    let jacobi = diag(&(0..n).map(|i| 1.0 / a[(i, i)]).collect::<Vec<_>>());
    let x0 = dense(&rng.values(n * 3), [n, 3], DType::F64);
    let (e, x) =
        lobpcg(&s, None, None, Some(x0), None, Some(&jacobi), None, Some(1e-10), Some(false), Some("ortho")).unwrap();
    assert_eq!(x.dims(), [n, 3]);
    assert_rel(&floats(e), &e_std[..3], 1e-8, "preconditioned");
}

#[test]
fn lobpcg_errors() {
    let _g = serial();
    let sq = dense(&spd(9, &mut Rng(39)), [9, 9], DType::F64).to_sparse_csr().unwrap();
    let wide = dense(&[1.0, 0.0, 2.0, 0.0, 3.0, 0.0], [2, 3], DType::F64).to_sparse_csr().unwrap();
    let msg = |r: Result<(Tensor<1>, Tensor<2>), SparseError>| r.unwrap_err().to_string();
    assert!(msg(lobpcg(&wide, None, None, None, None, None, None, None, None, None)).contains("A must be square"));
    let e = msg(lobpcg(&sq, Some(2), None, None, Some(4), None, None, None, None, None));
    assert!(e.contains("(= 9) is smaller than 3 x the block size (= 4)"), "{e}");
    assert!(msg(lobpcg(&sq, Some(3), None, None, Some(2), None, None, None, None, None)).contains("k = 3"));
    assert!(msg(lobpcg(&sq, Some(1), None, None, None, None, None, None, None, Some("basic"))).contains("\"basic\""));
    assert!(
        msg(lobpcg(&sq, Some(1), Some(&wide), None, None, None, None, None, None, None)).contains("B must be [9, 9]")
    );
    let x = dense(&[0.0; 8], [8, 1], DType::F64);
    assert!(msg(lobpcg(&sq, Some(1), None, Some(x), None, None, None, None, None, None)).contains("must be [9, 1]"));
    // 3n = m is allowed.
    crate::common_ops::dev().seed(13);
    let (e, _) = lobpcg(&sq, Some(1), None, None, Some(3), None, None, None, None, None).unwrap();
    let (e_ref, _) = dense_eigh(host(sq.to_dense()).as_ref());
    assert_rel(&floats(e), &e_ref[8..], 1e-8, "3n = m");
}

#[test]
fn lobpcg_bcsstk13_ten_largest() {
    let _g = serial();
    let path = sparsegrad::io::suitesparse("HB/bcsstk13").unwrap_or_else(|e| panic!("{e}"));
    let mtx = sparsegrad::nn::read_mtx(&path).unwrap().to_general().unwrap();
    let n = mtx.rows;
    assert_eq!((n, mtx.cols, mtx.entries.len()), (2003, 2003, 83883));
    let mut idx = vec![0i64; 2 * mtx.entries.len()];
    for (k, &(i, j)) in mtx.entries.iter().enumerate() {
        idx[k] = i as i64;
        idx[mtx.entries.len() + k] = j as i64;
    }
    let device = crate::common_ops::dev();
    let indices = Tensor::from_data(TensorData::new(idx, [2, mtx.entries.len()]), (&device, DType::I64));
    let values = Tensor::<1>::from_data(TensorData::new(mtx.values.clone(), [mtx.values.len()]), (&device, DType::F64));
    let a = SparseTensor::coo(indices, values, [n, n]).unwrap().to_sparse_csr().unwrap();
    let mut dense_a = Mat::<f64>::zeros(n, n);
    for (&(i, j), &v) in mtx.entries.iter().zip(&mtx.values) {
        dense_a[(i, j)] += v;
    }
    let e_ref = dense_a.self_adjoint_eigenvalues(Side::Lower).unwrap();
    let expected: Vec<f64> = (0..10).map(|j| e_ref[n - 1 - j]).collect();
    device.seed(14);
    let (e, x) = lobpcg(&a, Some(10), None, None, Some(20), None, None, None, Some(true), None).unwrap();
    assert_rel(&floats(e.clone()), &expected, 1e-6, "bcsstk13");
    assert_eigenpairs(dense_a.as_ref(), None, &floats(e), host(x).as_ref(), 1e-6, "bcsstk13");
}
