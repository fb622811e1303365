//! The matmul family (docs/SPEC.md section 3) against dense references computed with burn's own dense
//! ops: every op, every layout accepted as the sparse operand (COO coalesced and with duplicate
//! entries, CSR, CSC, BSR, BSC), f32 and f64 values, i32 and i64 indices, empty rows, an empty
//! operand, and `n` on both sides of the kernel's 64-column tile. Also: the backward of `mm` on a
//! 1,000,000 x 1,000,000 matrix (a dense gradient would need terabytes) and the error paths.
//! Gradient checks are in `matmul_grad.rs`.

use crate::common_ops;

use burn::tensor::{DType, Tensor, TensorData};
use common_ops::{
    assert_near, batched, dev, device_keeps, floats, index_on, ints, matrix, on_wgpu, split_entries, Kind, Rng,
};
use sparsegrad::prelude::*;
use sparsegrad::sparse::{self as sp};

/// A dense tensor of `dtype` from host f64 data.
fn tensor<const D: usize>(data: &[f64], shape: [usize; D], dtype: DType) -> Tensor<D> {
    let data = match dtype {
        DType::F32 => TensorData::new(data.iter().map(|&v| v as f32).collect::<Vec<_>>(), shape),
        _ => TensorData::new(data.to_vec(), shape),
    };
    let t = Tensor::from_data(data, (&dev(), dtype));
    assert_eq!(t.dtype(), dtype);
    t
}

fn tol(dtype: DType) -> f64 {
    if dtype == DType::F64 {
        1e-10
    } else {
        1e-4
    }
}

/// A trait of this module rather than an inherent `impl Kind`, which `matmul_grad` (the same
/// test binary) also has, with another signature.
trait Fitted {
    fn fitted(self, shape: [usize; 2], blocks: [usize; 2]) -> Kind;
}

impl Fitted for Kind {
    /// The same kind with block sizes that tile a matrix of `shape`.
    fn fitted(self, shape: [usize; 2], blocks: [usize; 2]) -> Kind {
        assert!(shape[0].is_multiple_of(blocks[0]) && shape[1].is_multiple_of(blocks[1]));
        match self {
            Kind::Bsr(_) => Kind::Bsr(blocks),
            Kind::Bsc(_) => Kind::Bsc(blocks),
            k => k,
        }
    }
}

const KINDS: [Kind; 6] = [Kind::Coo, Kind::CooDup, Kind::Csr, Kind::Csc, Kind::Bsr([2, 3]), Kind::Bsc([4, 1])];
const DTYPES: [(DType, DType); 4] =
    [(DType::F32, DType::I32), (DType::F32, DType::I64), (DType::F64, DType::I32), (DType::F64, DType::I64)];

/// A sparse tensor of `kind` holding the dense host matrix `data` (shape `[rows, cols]` or
/// `[batch, rows, cols]`); as `CooDup` every entry is split into 1..=3 duplicates, shuffled.
fn sparse<const D: usize>(
    data: &[f64],
    shape: [usize; D],
    kind: Kind,
    vd: DType,
    id: DType,
    rng: &mut Rng,
) -> SparseTensor<D> {
    let (layout, blocksize) = kind.layout();
    if kind != Kind::CooDup {
        let s = tensor(data, shape, vd)
            .to_sparse_with(SparseSpec { layout, dense_dim: 0, blocksize, index_dtype: id })
            .unwrap();
        assert_eq!((s.layout(), s.index_dtype(), s.dtype()), (layout, id, vd));
        return s;
    }
    let (idx, vals) = split_entries(data, shape, |rng| rng.below(3), rng);
    let n = vals.len();
    let s = SparseTensor::coo(index_on(&idx, [D, n], id, &dev()), tensor(&vals, [n], vd), shape).unwrap();
    assert!(n < 2 || !s.is_coalesced() || data.iter().filter(|&&v| v != 0.0).count() == n);
    s
}

/// The stored positions of `kind` for the host matrix: non-zeros, or whole blocks holding one.
fn pattern(data: &[f64], [rows, cols]: [usize; 2], kind: Kind) -> Vec<bool> {
    let [br, bc] = match kind {
        Kind::Bsr(b) | Kind::Bsc(b) => b,
        _ => [1, 1],
    };
    let mut p = vec![false; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            let (r0, c0) = (r / br * br, c / bc * bc);
            p[r * cols + c] = (r0..r0 + br).any(|i| (c0..c0 + bc).any(|j| data[i * cols + j] != 0.0));
        }
    }
    p
}

/// Rows holding at least one stored entry.
fn stored_rows(pattern: &[bool], cols: usize) -> Vec<i64> {
    pattern.chunks(cols).enumerate().filter(|(_, r)| r.iter().any(|&b| b)).map(|(i, _)| i as i64).collect()
}

// ---------------------------------------------------------------------------------------------
// sparse @ dense and its relatives, 2-D.

#[test]
fn sparse_dense_products_match_dense_matmul() {
    let mut rng = Rng(1);
    let (m, k) = (8, 6);
    // Rows 2 and 3 empty (a whole empty block row of BSR [2, 3]), column 4 empty.
    let main = matrix(m, k, 0.6, &[2, 3], &[4], &mut rng);
    let empty = vec![0.0; m * k];
    let mut count = 0;
    for (vd, id) in DTYPES {
        let t = tol(vd);
        for (ki, kind) in KINDS.into_iter().enumerate() {
            for (which, data) in [("main", &main), ("empty", &empty)] {
                let a = sparse(data, [m, k], kind, vd, id, &mut rng);
                let ad = tensor(data, [m, k], vd);
                let pat = pattern(data, [m, k], kind);
                let what = |op: &str, n: usize| format!("{op} {kind:?} {which} {vd:?}/{id:?} n={n}");
                if which == "empty" {
                    assert_eq!(a.nnz(), 0);
                }
                // On the device, every other width per layout (`device_keeps`).
                for (ni, n) in [1, 5, 64, 70, 130].into_iter().enumerate() {
                    if !device_keeps(ki + ni, 2) {
                        continue;
                    }
                    let x = tensor(&rng.values(k * n), [k, n], vd);
                    let reference = ad.clone().matmul(x.clone());
                    let y = sp::mm(&a, x.clone());
                    assert_eq!((y.dims(), y.dtype()), ([m, n], vd));
                    assert_near(&floats(y), &floats(reference.clone()), t, &what("mm", n));
                    assert_near(
                        &floats(sp::try_mm(&a, x.clone()).unwrap()),
                        &floats(reference.clone()),
                        t,
                        &what("try_mm", n),
                    );

                    // dense @ sparse: x [n, m] @ a [m, k].
                    let xl = tensor(&rng.values(n * m), [n, m], vd);
                    let z = sp::mm_dense_sparse(xl.clone(), &a);
                    assert_eq!(z.dims(), [n, k]);
                    assert_near(&floats(z), &floats(xl.clone().matmul(ad.clone())), t, &what("mm_dense_sparse", n));
                    assert_near(
                        &floats(sp::try_mm_dense_sparse(xl.clone(), &a).unwrap()),
                        &floats(xl.matmul(ad.clone())),
                        t,
                        &what("try_mm_dense_sparse", n),
                    );

                    // addmm: beta * input + alpha * a @ x.
                    let input = tensor(&rng.values(m * n), [m, n], vd);
                    let got = sp::addmm(input.clone(), &a, x.clone(), 0.5, -1.5);
                    assert_near(&floats(got), &floats(input * 0.5 + reference.clone() * -1.5), t, &what("addmm", n));

                    // hspmm: rows of a with stored entries, each a dense row of the product.
                    let h = sp::hspmm(&a, x.clone());
                    let rows = stored_rows(&pat, k);
                    assert_eq!(
                        (h.layout(), h.shape(), h.sparse_dim(), h.dense_dim()),
                        (Layout::Coo, [m, n], 1, 1),
                        "{}",
                        what("hspmm", n)
                    );
                    assert_eq!(ints(h.indices_raw().unwrap()), rows, "{}", what("hspmm rows", n));
                    assert_eq!(h.values_flat().dims(), [rows.len(), n]);
                    let rref = floats(reference.clone());
                    let expected_vals: Vec<f64> =
                        rows.iter().flat_map(|&r| rref[r as usize * n..(r as usize + 1) * n].to_vec()).collect();
                    assert_near(&floats(h.values_flat()), &expected_vals, t, &what("hspmm values", n));
                    assert_near(&floats(h.to_dense()), &rref, t, &what("hspmm to_dense", n));
                    assert_near(
                        &floats(sp::try_hspmm(&a, x.clone()).unwrap().to_dense()),
                        &rref,
                        t,
                        &what("try_hspmm", n),
                    );

                    // smm (torch: sspaddmm(empty, a, x, 0, 1)): every column of the rows of a
                    // with stored entries, a structural pattern (BSR's stored zeros included).
                    let s = sp::smm(&a, x.clone());
                    assert_eq!(
                        (s.layout(), s.shape(), s.nnz(), s.index_dtype()),
                        (Layout::Coo, [m, n], rows.len() * n, id),
                        "{}",
                        what("smm", n)
                    );
                    assert!(s.is_coalesced());
                    assert_near(&floats(s.to_dense()), &rref, t, &what("smm", n));
                    assert_near(&floats(sp::try_smm(&a, x.clone()).unwrap().to_dense()), &rref, t, &what("try_smm", n));
                    count += 1;
                }
                // mv: a @ v for a vector v.
                let v = tensor(&rng.values(k), [k], vd);
                let got = sp::mv(&a, v.clone());
                assert_eq!(got.dims(), [m]);
                let expected = ad.clone().matmul(v.reshape([k, 1]));
                assert_near(&floats(got), &floats(expected), t, &format!("mv {kind:?} {which} {vd:?}/{id:?}"));
            }
        }
    }
    // On the device, widths 1, 64 and 130 for three layouts, 5 and 70 for the other three.
    assert_eq!(count, if on_wgpu() { 4 * 2 * (3 * 3 + 3 * 2) } else { 4 * 6 * 2 * 5 });
}

#[test]
fn larger_random_products_match_dense_matmul() {
    // Enough rows for several parallel row blocks, rows of very different lengths.
    let mut rng = Rng(2);
    let (m, k) = (240, 150);
    let mut data = matrix(m, k, 0.03, &[0, 7, 100, 239], &[], &mut rng);
    for c in 0..k {
        data[50 * k + c] = rng.value(); // one full row
    }
    for (vd, id) in [(DType::F32, DType::I32), (DType::F64, DType::I64)] {
        for kind in [Kind::Coo, Kind::Csr, Kind::Csc, Kind::Bsr([4, 5]), Kind::Bsc([3, 2])] {
            let a = sparse(&data, [m, k], kind, vd, id, &mut rng);
            let ad = tensor(&data, [m, k], vd);
            for n in [3, 70] {
                let x = tensor(&rng.values(k * n), [k, n], vd);
                assert_near(
                    &floats(sp::mm(&a, x.clone())),
                    &floats(ad.clone().matmul(x)),
                    tol(vd),
                    &format!("mm {kind:?} {vd:?} n={n}"),
                );
                let xl = tensor(&rng.values(n * m), [n, m], vd);
                assert_near(
                    &floats(sp::mm_dense_sparse(xl.clone(), &a)),
                    &floats(xl.matmul(ad.clone())),
                    tol(vd),
                    &format!("mm_dense_sparse {kind:?} {vd:?} n={n}"),
                );
            }
        }
    }
}

/// A power-law pattern: one hub row and one hub column far longer than the rest (the kernels
/// that cut long rows into pieces, on a Cube device, take this path; the others sum them whole).
#[test]
fn hub_rows_and_columns_match_dense_matmul() {
    let device = dev();
    let (m, k, n) = (300, 2000, 5);
    let (mut crow, mut col, mut values) = (vec![0i64], Vec::new(), Vec::new());
    for r in 0..m {
        // Row 7 holds every column; the others three, one of them the hub column 11.
        let cols: Vec<usize> = if r == 7 { (0..k).collect() } else { vec![(r * 13) % k, 11, (r * 31 + 5) % k] };
        let mut cols = cols;
        cols.sort_unstable();
        cols.dedup();
        for c in cols {
            col.push(c as i64);
            values.push(((r * 7 + c * 3) % 17) as f64 / 8.0 - 1.0);
        }
        crow.push(col.len() as i64);
    }
    let a = SparseTensor::csr_from_vecs(crow, col, values, [m, k], &device).unwrap();
    let dense = a.to_dense();
    let x = tensor(&(0..k * n).map(|i| ((i * 7919) % 29) as f64 / 14.0 - 1.0).collect::<Vec<_>>(), [k, n], DType::F64);
    let got = floats(sp::mm(&a, x.clone()));
    assert_near(&got, &floats(dense.clone().matmul(x)), 1e-12, "A X");
    // Aᵀ G walks the hub column 11 (300 entries) and the hub row's columns.
    let g =
        tensor(&(0..m * n).map(|i| ((i * 104729) % 31) as f64 / 15.0 - 1.0).collect::<Vec<_>>(), [m, n], DType::F64);
    let at = a.transpose(0, 1);
    let got = floats(sp::mm(&at, g.clone()));
    assert_near(&got, &floats(dense.transpose().matmul(g)), 1e-12, "Aᵀ G");
}

#[test]
fn sparse_sparse_product_matches_dense_matmul() {
    let mut rng = Rng(3);
    let (m, k, n) = (8, 6, 5);
    let a_data = matrix(m, k, 0.5, &[2, 3], &[4], &mut rng);
    let b_data = matrix(k, n, 0.5, &[1], &[3], &mut rng);
    let b_kinds = [Kind::Coo, Kind::CooDup, Kind::Csr, Kind::Csc, Kind::Bsr([3, 5]), Kind::Bsc([2, 1])];
    for (i, (vd, id)) in DTYPES.into_iter().enumerate() {
        for (ia, ka) in KINDS.into_iter().enumerate() {
            for (ib, kb) in b_kinds.into_iter().enumerate() {
                // On the device, every pair of layouts in one or two of the four dtypes.
                if !device_keeps(i + ia + ib, 3) {
                    continue;
                }
                // Index dtypes of the operands may differ; the result takes a's.
                let idb = DTYPES[(i + 1) % 4].1;
                for (which, ad, bd) in [
                    ("full", a_data.clone(), b_data.clone()),
                    ("empty a", vec![0.0; m * k], b_data.clone()),
                    ("empty b", a_data.clone(), vec![0.0; k * n]),
                ] {
                    let a = sparse(&ad, [m, k], ka, vd, id, &mut rng);
                    let b = sparse(&bd, [k, n], kb, vd, idb, &mut rng);
                    let what = format!("{ka:?} @ {kb:?} {which} {vd:?}/{id:?}");
                    let c = sp::mm(&a, &b);
                    assert_eq!(
                        (c.layout(), c.shape(), c.index_dtype(), c.dtype()),
                        (Layout::Coo, [m, n], id, vd),
                        "{what}"
                    );
                    assert!(c.is_coalesced(), "{what}");
                    let reference = tensor(&ad, [m, k], vd).matmul(tensor(&bd, [k, n], vd));
                    assert_near(&floats(c.to_dense()), &floats(reference), tol(vd), &what);
                    // Structural result: (i, j) is stored when some stored a[i, p] meets a stored b[p, j].
                    let (pa, pb) = (pattern(&ad, [m, k], ka), pattern(&bd, [k, n], kb));
                    let structural =
                        (0..m * n).filter(|&ij| (0..k).any(|p| pa[ij / n * k + p] && pb[p * n + ij % n])).count();
                    assert_eq!(c.nnz(), structural, "{what}: stored entries");
                    assert_eq!(sp::spgemm(&a, &b).unwrap().nnz(), structural, "{what}: spgemm");
                }
            }
        }
    }
}

#[test]
fn sspaddmm_matches_dense() {
    let mut rng = Rng(4);
    let (m, k) = (8, 6);
    let mat1_data = matrix(m, k, 0.5, &[2, 3], &[4], &mut rng);
    for (vd, id) in DTYPES {
        for kind in KINDS {
            for n in [1, 70] {
                let in_kind = kind.fitted([m, n], [2, 1]);
                let input_data = matrix(m, n, 0.3, &[5], &[], &mut rng);
                for (which, md) in [("main", mat1_data.clone()), ("empty mat1", vec![0.0; m * k])] {
                    let input = sparse(&input_data, [m, n], in_kind, vd, id, &mut rng);
                    let mat1 = sparse(&md, [m, k], kind, vd, id, &mut rng);
                    let x = tensor(&rng.values(k * n), [k, n], vd);
                    let what = format!("sspaddmm {kind:?} {which} {vd:?}/{id:?} n={n}");
                    let s = sp::sspaddmm(&input, &mat1, x.clone(), 0.75, 2.0);
                    assert_eq!((s.layout(), s.shape(), s.dense_dim()), (Layout::Coo, [m, n], 0), "{what}");
                    assert!(s.is_coalesced(), "{what}");
                    let expected =
                        tensor(&input_data, [m, n], vd) * 0.75 + tensor(&md, [m, k], vd).matmul(x.clone()) * 2.0;
                    assert_near(&floats(s.to_dense()), &floats(expected), tol(vd), &what);
                    // Stored: input's entries and every column of the rows where mat1 has entries.
                    let rows = stored_rows(&pattern(&md, [m, k], kind), k);
                    let pin = pattern(&input_data, [m, n], in_kind);
                    let stored = (0..m * n).filter(|&ij| pin[ij] || rows.contains(&((ij / n) as i64))).count();
                    assert_eq!(s.nnz(), stored, "{what}: stored entries");
                    let t = sp::try_sspaddmm(&input, &mat1, x, 0.75, 2.0).unwrap();
                    assert_eq!(t.nnz(), stored);
                }
            }
        }
    }
}

/// `mask ⊙ (beta * input + alpha * product)` on host data.
fn masked(pattern: &[bool], input: &[f64], product: &[f64], beta: f64, alpha: f64) -> Vec<f64> {
    pattern
        .iter()
        .zip(input.iter().zip(product))
        .map(|(&p, (&i, &q))| if p { beta * i + alpha * q } else { 0.0 })
        .collect()
}

#[test]
fn sampled_addmm_matches_the_masked_dense_product() {
    let mut rng = Rng(5);
    let (m, n) = (8, 7);
    let input_data = matrix(m, n, 0.4, &[1, 6], &[2], &mut rng);
    for (vd, id) in DTYPES {
        // Kernel lanes are 16 wide: k below, at, and above a multiple.
        for kdim in [1, 5, 16, 37] {
            for kind in KINDS {
                let kind = kind.fitted([m, n], [2, 7]);
                for (which, idata) in [("main", input_data.clone()), ("empty", vec![0.0; m * n])] {
                    let input = sparse(&idata, [m, n], kind, vd, id, &mut rng);
                    let (a, b) =
                        (tensor(&rng.values(m * kdim), [m, kdim], vd), tensor(&rng.values(kdim * n), [kdim, n], vd));
                    let pat = pattern(&idata, [m, n], kind);
                    let product = floats(a.clone().matmul(b.clone()));
                    let what = format!("sampled_addmm {kind:?} {which} {vd:?}/{id:?} k={kdim}");
                    let s = sp::sampled_addmm(&input, a.clone(), b.clone(), -0.5, 1.25);
                    assert_eq!(
                        (s.layout(), s.shape(), s.nnz(), s.dtype()),
                        (Layout::Csr, [m, n], pat.iter().filter(|&&p| p).count(), vd),
                        "{what}"
                    );
                    assert_near(&floats(s.to_dense()), &masked(&pat, &idata, &product, -0.5, 1.25), tol(vd), &what);
                    let t = sp::try_sampled_addmm(&input, a, b, 0.0, 1.0).unwrap();
                    assert_near(&floats(t.to_dense()), &masked(&pat, &idata, &product, 0.0, 1.0), tol(vd), &what);
                }
            }
        }
    }
}

const BATCH_KINDS: [Kind; 6] = [Kind::Coo, Kind::CooDup, Kind::Csr, Kind::Csc, Kind::Bsr([1, 2]), Kind::Bsc([1, 2])];

#[test]
fn batched_sampled_addmm_matches_the_masked_dense_product() {
    let mut rng = Rng(6);
    let (bt, m, n) = (3, 5, 4);
    for (vd, id) in DTYPES {
        for per_batch in [4, 0] {
            let idata = batched(bt, m, n, [1, 2], per_batch, (0, 1), &mut rng);
            for kind in BATCH_KINDS {
                let input = sparse(&idata, [bt, m, n], kind, vd, id, &mut rng);
                for kdim in [1, 20] {
                    let a = tensor(&rng.values(bt * m * kdim), [bt, m, kdim], vd);
                    let b = tensor(&rng.values(bt * kdim * n), [bt, kdim, n], vd);
                    let pat: Vec<bool> = idata.iter().map(|&v| v != 0.0).collect();
                    let product = floats(a.clone().matmul(b.clone()));
                    let what = format!("batched sampled_addmm {kind:?} nse={} {vd:?}/{id:?} k={kdim}", per_batch * 2);
                    let s = sp::sampled_addmm(&input, a, b, 1.5, -0.25);
                    assert_eq!(
                        (s.layout(), s.shape(), s.batch_dim(), s.nnz()),
                        (Layout::Csr, [bt, m, n], 1, per_batch * 2),
                        "{what}"
                    );
                    assert_near(&floats(s.to_dense()), &masked(&pat, &idata, &product, 1.5, -0.25), tol(vd), &what);
                }
            }
        }
    }
}

#[test]
fn bmm_matches_batched_dense_matmul() {
    let mut rng = Rng(7);
    let (bt, m, k) = (3, 5, 4);
    for (vd, id) in DTYPES {
        for per_batch in [4, 0] {
            let data = batched(bt, m, k, [1, 2], per_batch, (1, 2), &mut rng);
            for kind in BATCH_KINDS {
                let a = sparse(&data, [bt, m, k], kind, vd, id, &mut rng);
                if kind == Kind::Coo && per_batch > 0 {
                    assert_eq!(a.sparse_dim(), 3);
                }
                for n in [1, 70] {
                    let x = tensor(&rng.values(bt * k * n), [bt, k, n], vd);
                    let y = sp::bmm(&a, x.clone());
                    assert_eq!(y.dims(), [bt, m, n]);
                    let what = format!("bmm {kind:?} nse={} {vd:?}/{id:?} n={n}", per_batch * 2);
                    let reference = floats(tensor(&data, [bt, m, k], vd).matmul(x.clone()));
                    assert_near(&floats(y), &reference, tol(vd), &what);
                    assert_near(&floats(sp::try_bmm(&a, x).unwrap()), &reference, tol(vd), &what);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A 1,000,000 x 1,000,000 operand: the backward of mm never builds a dense m x k matrix.

#[test]
fn mm_backward_on_a_million_by_million_matrix() {
    let device = crate::common_ops::ad();
    let size = 1_000_000usize;
    let mut rng = Rng(8);
    let mut entries: Vec<(usize, usize)> = (0..100).map(|_| (rng.below(size), rng.below(size))).collect();
    entries.push((size - 1, size - 1)); // the last row and column
    entries.sort_unstable();
    entries.dedup();
    let nnz = entries.len();
    let vals = rng.values(nnz);
    let (xs, ws) = (rng.values(size * 2), rng.values(size * 2));
    let f64t = |data: &[f64], shape: [usize; 2]| {
        Tensor::<2>::from_data(TensorData::new(data.to_vec(), shape), (&device, DType::F64))
    };
    let rows: Vec<i64> = entries.iter().map(|e| e.0 as i64).collect();
    let cols: Vec<i64> = entries.iter().map(|e| e.1 as i64).collect();
    let mut crow = vec![0i64; size + 1];
    for &(r, _) in &entries {
        crow[r + 1] += 1;
    }
    for r in 0..size {
        crow[r + 1] += crow[r];
    }
    let vt = Tensor::<1>::from_data(TensorData::new(vals.clone(), [nnz]), (&device, DType::F64));
    let csr = SparseTensor::csr(
        index_on(&crow, [size + 1], DType::I32, &device),
        index_on(&cols, [nnz], DType::I32, &device),
        vt,
        [size, size],
    )
    .unwrap();
    let mut idx = rows.clone();
    idx.extend(&cols);
    // The COO entries in reverse order: unsorted, as users build them.
    let rev: Vec<i64> = idx[..nnz].iter().rev().chain(idx[nnz..].iter().rev()).copied().collect();
    let rev_vals: Vec<f64> = vals.iter().rev().copied().collect();
    let coo = SparseTensor::coo(
        index_on(&rev, [2, nnz], DType::I64, &device),
        Tensor::<1>::from_data(TensorData::new(rev_vals, [nnz]), (&device, DType::F64)),
        [size, size],
    )
    .unwrap();
    for (name, a, reversed) in [("csr", csr, false), ("coo", coo, true)] {
        let start = std::time::Instant::now();
        let a = a.require_grad();
        let x = f64t(&xs, [size, 2]).require_grad();
        let w = f64t(&ws, [size, 2]);
        let y = sp::mm(&a, x.clone());
        assert_eq!(y.dims(), [size, 2]);
        let grads = (y * w).sum().backward();
        let dv = floats(a.values_flat().grad(&grads).expect("values gradient"));
        assert_eq!(dv.len(), nnz, "{name}: one gradient per stored entry");
        // SDDMM: dv_j = W[row j] · X[col j].
        for (j, &(r, c)) in entries.iter().enumerate() {
            let expected = ws[2 * r] * xs[2 * c] + ws[2 * r + 1] * xs[2 * c + 1];
            let got = dv[if reversed { nnz - 1 - j } else { j }];
            assert!((got - expected).abs() < 1e-12 * (1.0 + expected.abs()), "{name}: dv[{j}] {got} != {expected}");
        }
        // dX = Aᵀ W: non-zero only in the rows named by the columns of A.
        let dx = floats(x.grad(&grads).expect("X gradient"));
        let mut expected = vec![0.0; size * 2];
        for (j, &(r, c)) in entries.iter().enumerate() {
            expected[2 * c] += vals[j] * ws[2 * r];
            expected[2 * c + 1] += vals[j] * ws[2 * r + 1];
        }
        assert_near(&dx, &expected, 1e-12, &format!("{name}: dX"));
        let elapsed = start.elapsed();
        assert!(elapsed.as_secs_f64() < 10.0, "{name}: {elapsed:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Errors: mismatched shapes and hybrid operands.

fn small(kind: Kind, shape: [usize; 2]) -> SparseTensor<2> {
    let mut rng = Rng(9);
    let data = matrix(shape[0], shape[1], 0.5, &[], &[], &mut rng);
    sparse(&data, shape, kind.fitted(shape, [1, 1]), DType::F32, DType::I64, &mut rng)
}

fn zeros<const D: usize>(shape: [usize; D]) -> Tensor<D> {
    Tensor::zeros(shape, (&dev(), DType::F32))
}

fn assert_invalid<T: std::fmt::Debug>(r: Result<T, SparseError>, operation: &str, what: &str) {
    match r {
        Err(SparseError::InvalidArgument { operation: op, message }) => {
            assert_eq!(op, operation, "{what}: {message}");
            assert!(!message.is_empty());
        }
        other => panic!("{what}: expected InvalidArgument from {operation}, got {other:?}"),
    }
}

/// A hybrid COO `[rows, cols]`: 1 sparse dim (rows), the columns dense.
fn hybrid(rows: usize, cols: usize) -> SparseTensor<2> {
    let values = tensor(&vec![1.0; 2 * cols], [2, cols], DType::F32);
    let s = SparseTensor::coo(index_on(&[0, 2], [1, 2], DType::I64, &dev()), values, [rows, cols]).unwrap();
    assert_eq!((s.sparse_dim(), s.dense_dim()), (1, 1));
    s
}

#[test]
fn mismatched_shapes_are_invalid_arguments() {
    for kind in KINDS {
        let a = small(kind, [4, 3]);
        let what = format!("{kind:?}");
        assert_invalid(sp::try_mm(&a, zeros([4, 2])), "mm", &what);
        assert_invalid(sp::try_mm(&a, &small(Kind::Csr, [4, 2])), "mm", &what);
        assert_invalid(sp::spgemm(&small(Kind::Coo, [2, 5]), &a), "mm", &what);
        assert_invalid(sp::try_mm_dense_sparse(zeros([2, 3]), &a), "mm_dense_sparse", &what);
        assert_invalid(sp::try_hspmm(&a, zeros([2, 2])), "mm", &what);
        assert_invalid(sp::try_smm(&a, zeros([2, 2])), "mm", &what);
        // sspaddmm: input [5, 2] but mat1 @ mat2 is [4, 2]; inner dims wrong.
        assert_invalid(sp::try_sspaddmm(&small(Kind::Coo, [5, 2]), &a, zeros([3, 2]), 1.0, 1.0), "sspaddmm", &what);
        assert_invalid(sp::try_sspaddmm(&small(Kind::Coo, [4, 3]), &a, zeros([3, 2]), 1.0, 1.0), "sspaddmm", &what);
        assert!(sp::try_sspaddmm(&small(Kind::Coo, [4, 2]), &a, zeros([4, 2]), 1.0, 1.0).is_err(), "{what}");
        // sampled_addmm: input [4, 3] needs mat1 [4, k] and mat2 [k, 3].
        assert_invalid(sp::try_sampled_addmm(&a, zeros([5, 2]), zeros([2, 3]), 1.0, 1.0), "sampled_addmm", &what);
        assert_invalid(sp::try_sampled_addmm(&a, zeros([4, 2]), zeros([3, 3]), 1.0, 1.0), "sampled_addmm", &what);
        assert_invalid(sp::try_sampled_addmm(&a, zeros([4, 2]), zeros([2, 4]), 1.0, 1.0), "sampled_addmm", &what);
    }
    let mut rng = Rng(10);
    let data = batched(2, 3, 4, [1, 1], 2, (0, 0), &mut rng);
    for kind in [Kind::Coo, Kind::Csr] {
        let b = sparse(&data, [2, 3, 4], kind, DType::F32, DType::I32, &mut rng);
        assert_invalid(sp::try_bmm(&b, zeros([3, 4, 2])), "bmm", "batch");
        assert_invalid(sp::try_bmm(&b, zeros([2, 3, 2])), "bmm", "inner");
        assert_invalid(
            sp::try_sampled_addmm(&b, zeros([1, 3, 2]), zeros([2, 2, 4]), 1.0, 1.0),
            "sampled_addmm",
            "mat1 batch",
        );
        assert_invalid(
            sp::try_sampled_addmm(&b, zeros([2, 3, 2]), zeros([1, 2, 4]), 1.0, 1.0),
            "sampled_addmm",
            "mat2 batch",
        );
        assert_invalid(
            sp::try_sampled_addmm(&b, zeros([2, 3, 2]), zeros([2, 2, 5]), 1.0, 1.0),
            "sampled_addmm",
            "columns",
        );
    }
}

#[test]
#[should_panic(expected = "cannot be multiplied")]
fn mm_panics_on_mismatched_shapes() {
    sp::mm(&small(Kind::Csr, [4, 3]), zeros([4, 2]));
}

#[test]
#[should_panic(expected = "cannot be multiplied")]
fn sparse_sparse_mm_panics_on_mismatched_shapes() {
    sp::mm(&small(Kind::Csc, [4, 3]), &small(Kind::Coo, [4, 3]));
}

#[test]
#[should_panic(expected = "cannot be multiplied")]
fn mm_dense_sparse_panics_on_mismatched_shapes() {
    sp::mm_dense_sparse(zeros([2, 3]), &small(Kind::Coo, [4, 3]));
}

#[test]
#[should_panic(expected = "cannot be multiplied")]
fn addmm_panics_on_mismatched_shapes() {
    sp::addmm(zeros([4, 2]), &small(Kind::Bsr([1, 1]), [4, 3]), zeros([2, 2]), 1.0, 1.0);
}

#[test]
#[should_panic(expected = "cannot be multiplied")]
fn mv_panics_on_mismatched_shapes() {
    sp::mv(&small(Kind::Csr, [4, 3]), tensor(&[1.0; 4], [4], DType::F32));
}

#[test]
#[should_panic(expected = "cannot be multiplied")]
fn smm_panics_on_mismatched_shapes() {
    sp::smm(&small(Kind::Csc, [4, 3]), zeros([2, 2]));
}

#[test]
#[should_panic(expected = "cannot be multiplied")]
fn hspmm_panics_on_mismatched_shapes() {
    sp::hspmm(&small(Kind::Coo, [4, 3]), zeros([2, 2]));
}

#[test]
#[should_panic(expected = "cannot be multiplied")]
fn sspaddmm_panics_on_mismatched_shapes() {
    sp::sspaddmm(&small(Kind::Coo, [5, 2]), &small(Kind::Csr, [4, 3]), zeros([3, 2]), 1.0, 1.0);
}

#[test]
#[should_panic(expected = "cannot be multiplied")]
fn sampled_addmm_panics_on_mismatched_shapes() {
    sp::sampled_addmm(&small(Kind::Csr, [4, 3]), zeros([4, 2]), zeros([3, 3]), 1.0, 1.0);
}

#[test]
#[should_panic(expected = "cannot be multiplied")]
fn bmm_panics_on_mismatched_shapes() {
    let mut rng = Rng(11);
    let data = batched(2, 3, 4, [1, 1], 2, (0, 0), &mut rng);
    sp::bmm(&sparse(&data, [2, 3, 4], Kind::Csr, DType::F32, DType::I64, &mut rng), zeros([2, 3, 2]));
}

#[test]
fn hybrid_operands_are_rejected() {
    let h = hybrid(4, 3);
    assert_invalid(sp::try_mm(&h, zeros([3, 2])), "mm", "mm");
    assert_invalid(sp::try_mm_dense_sparse(zeros([2, 4]), &h), "mm_dense_sparse", "mm_dense_sparse");
    assert_invalid(sp::try_hspmm(&h, zeros([3, 2])), "mm", "hspmm");
    assert_invalid(sp::try_smm(&h, zeros([3, 2])), "mm", "smm");
    assert!(matches!(sp::try_mm(&h, &small(Kind::Csr, [3, 2])), Err(SparseError::InvalidArgument { .. })));
    assert!(matches!(sp::try_mm(&small(Kind::Csr, [2, 4]), &h), Err(SparseError::InvalidArgument { .. })));
    assert_invalid(sp::try_sspaddmm(&small(Kind::Coo, [4, 2]), &h, zeros([3, 2]), 1.0, 1.0), "mm", "sspaddmm mat1");
    assert_invalid(
        sp::try_sspaddmm(&hybrid(4, 2), &small(Kind::Csr, [4, 3]), zeros([3, 2]), 1.0, 1.0),
        "sspaddmm",
        "sspaddmm input",
    );
    assert_invalid(
        sp::try_sampled_addmm(&hybrid(4, 3), zeros([4, 2]), zeros([2, 3]), 1.0, 1.0),
        "sampled_addmm",
        "sampled_addmm",
    );
    // 3-D: COO [B, m, k] with the last dim dense, and a CSR [m, k, d] with a dense dim.
    let values = tensor(&[1.0; 6], [2, 3], DType::F32);
    let h3 = SparseTensor::coo(index_on(&[0, 1, 1, 0], [2, 2], DType::I64, &dev()), values, [2, 2, 3]).unwrap();
    assert_eq!(h3.dense_dim(), 1);
    assert_invalid(sp::try_bmm(&h3, zeros([2, 3, 2])), "bmm", "bmm coo");
    let hc = tensor(&[1.0, 0.0, 2.0, 3.0, 0.0, 0.0, 4.0, 5.0, 0.0, 0.0, 0.0, 6.0], [2, 3, 2], DType::F32)
        .to_sparse_with(SparseSpec { layout: Layout::Csr, dense_dim: 1, blocksize: None, index_dtype: DType::I64 })
        .unwrap();
    assert_eq!(hc.dense_dim(), 1);
    assert!(matches!(sp::try_bmm(&hc, zeros([2, 2, 2])), Err(SparseError::InvalidArgument { .. })), "bmm csr");
}

#[test]
fn half_precision_products_accumulate_in_f32() {
    // 3072 products of 1 * 1: exact in f32 and representable in f16 and bf16, but a running sum
    // kept in f16 stalls at 2048 (bf16 at 256).
    let len = 3072;
    for dtype in common_ops::stored_dtypes([DType::F16, DType::BF16]) {
        for kind in [Kind::Coo, Kind::Csr, Kind::Csc] {
            let mut rng = Rng(12);
            let a = sparse(&vec![1.0; len], [1, len], kind, dtype, DType::I32, &mut rng);
            let what = format!("{kind:?} {dtype:?}");
            let y = sp::mm(&a, tensor(&vec![1.0; len], [len, 1], dtype));
            assert_eq!(y.dtype(), dtype, "{what}");
            assert_eq!(floats(y), vec![len as f64], "{what}: mm");
            // dense @ sparse runs the transposed kernel: x [1, len] @ aᵀ [len, 1].
            let at = sparse(&vec![1.0; len], [len, 1], kind, dtype, DType::I32, &mut rng);
            assert_eq!(
                floats(sp::mm_dense_sparse(tensor(&vec![1.0; len], [1, len], dtype), &at)),
                vec![len as f64],
                "{what}: mm_dense_sparse"
            );
            let pattern = sparse(&[1.0], [1, 1], kind, dtype, DType::I32, &mut rng);
            let s = sp::sampled_addmm(
                &pattern,
                tensor(&vec![1.0; len], [1, len], dtype),
                tensor(&vec![1.0; len], [len, 1], dtype),
                0.0,
                1.0,
            );
            assert_eq!(floats(s.to_dense()), vec![len as f64], "{what}: sampled_addmm");
        }
    }
}
