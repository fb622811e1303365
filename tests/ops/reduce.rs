//! Sums (docs/SPEC.md section 3, torch's `torch.sparse.sum`): `sum()` of everything, `sparse::sum` over
//! dims with a sparse result, `sparse::sum_to_dense` with a dense one, against burn's sums of the
//! dense tensor on every layout, f32 and f64, hybrid, batched and empty tensors; errors for bad
//! dims and ranks; gradcheck of each.

use crate::common_ops;

use burn::tensor::{DType, Tensor};
use common_ops::*;
use sparsegrad::gradcheck::GradcheckOptions;
use sparsegrad::prelude::*;

const DTYPES: [DType; 2] = [DType::F32, DType::F64];

fn matrix(dtype: DType, seed: u64) -> Tensor<2> {
    let mut rng = Rng(seed);
    dense(&sparse_data(24, 0.5, 0.5, 2.0, &mut rng), [4, 6], dtype)
}

/// A `[4, 2, 6]` tensor, whole `[6]` rows zero or not (for a hybrid COO with 2 sparse dims).
fn cube(dtype: DType, seed: u64) -> Tensor<3> {
    let mut rng = Rng(seed);
    let rows = sparse_data(8, 0.6, 0.5, 2.0, &mut rng);
    let data: Vec<f64> =
        rows.iter().flat_map(|&r| (0..6).map(move |k| if r == 0.0 { 0.0 } else { r + 0.25 * k as f64 })).collect();
    dense(&data, [4, 2, 6], dtype)
}

#[test]
fn sum_of_everything_on_every_layout() {
    for dtype in DTYPES {
        let a = matrix(dtype, 1);
        let total = floats(a.clone().sum());
        for (ln, l) in layouts_2d(&a) {
            let s = l.sum();
            assert_eq!((s.dims(), s.dtype()), ([1], dtype), "{ln}");
            assert_close(&floats(s), &total, tol(dtype), &ln);
            let d = sparse::sum_to_dense::<2, 1>(&l, &[0, 1]).unwrap();
            assert_close(&floats(d), &total, tol(dtype), &format!("sum_to_dense {ln}"));
        }
        let c = cube(dtype, 2);
        for (ln, l) in layouts_hybrid(&c.clone().swap_dims(1, 2).reshape([4, 6, 2])) {
            assert_close(&floats(l.sum()), &floats(c.clone().sum()), tol(dtype), &ln);
        }
    }
}

/// Sums over one sparse dim of a matrix: a 1-D COO tensor, coalesced, on every layout.
#[test]
fn sum_over_a_sparse_dim_of_a_matrix() {
    for dtype in DTYPES {
        let a = matrix(dtype, 3);
        for (ln, l) in layouts_2d(&a) {
            for dim in [0, 1] {
                let s = sparse::sum::<2, 1>(&l, &[dim]).unwrap();
                let what = format!("{ln} dim {dim} {dtype:?}");
                assert_eq!(
                    (s.layout(), s.sparse_dim(), s.dense_dim(), s.is_coalesced()),
                    (Layout::Coo, 1, 0, true),
                    "{what}"
                );
                assert_eq!(s.index_dtype(), l.index_dtype(), "{what}: index dtype kept");
                assert_close(
                    &floats(s.to_dense()),
                    &floats(a.clone().sum_dim(dim).reshape([a.dims()[1 - dim]])),
                    tol(dtype),
                    &what,
                );
            }
        }
    }
}

/// A 3-D all-sparse COO tensor (uncoalesced too) summed over every subset of its dims.
#[test]
fn sum_over_every_subset_of_dims_of_a_3d_coo() {
    for dtype in DTYPES {
        let c = cube(dtype, 4);
        let coo = c.clone().to_sparse().unwrap();
        for (ln, s) in [("coo", coo.clone()), ("uncoalesced coo", uncoalesced::<3, 1>(&coo))] {
            let what = |dims: &[usize]| format!("{ln} dims {dims:?} {dtype:?}");
            for d in 0..3 {
                let out = sparse::sum::<3, 2>(&s, &[d]).unwrap();
                assert_eq!(out.sparse_dim(), 2);
                assert_close(&floats(out.to_dense()), &floats(c.clone().sum_dim(d)), tol(dtype), &what(&[d]));
            }
            for dims in [[0, 1], [1, 0], [0, 2], [1, 2]] {
                let out = sparse::sum::<3, 1>(&s, &dims).unwrap();
                let kept = 3 - dims[0] - dims[1];
                let expected = c.clone().sum_dims(&[dims[0] as isize, dims[1] as isize]).reshape([c.dims()[kept]]);
                assert_close(&floats(out.to_dense()), &floats(expected), tol(dtype), &what(&dims));
            }
            let all = sparse::sum_to_dense::<3, 1>(&s, &[2, 0, 1]).unwrap();
            assert_close(&floats(all), &floats(c.clone().sum()), tol(dtype), &what(&[2, 0, 1]));
            let none = sparse::sum::<3, 3>(&s, &[]).unwrap();
            assert_close(&floats(none.to_dense()), &floats(c.clone()), tol(dtype), &what(&[]));
        }
    }
}

/// A hybrid COO `[4, 2 | 6]`: summing the dense dim keeps the pattern; summing sparse dims
/// gives a hybrid result; summing every sparse dim gives a dense tensor of the dense dim.
#[test]
fn hybrid_sums() {
    for dtype in DTYPES {
        let c = cube(dtype, 5);
        let h = c.clone().to_sparse_coo(2).unwrap();
        for (ln, s) in [("hybrid coo", h.clone()), ("hybrid uncoalesced coo", uncoalesced::<3, 2>(&h))] {
            let what = |dims: &[usize]| format!("{ln} dims {dims:?} {dtype:?}");
            let dense_summed = sparse::sum::<3, 2>(&s, &[2]).unwrap();
            assert_eq!(
                (dense_summed.sparse_dim(), dense_summed.dense_dim(), dense_summed.nnz()),
                (2, 0, s.nnz()),
                "{}",
                what(&[2])
            );
            assert_close(&floats(dense_summed.to_dense()), &floats(c.clone().sum_dim(2)), tol(dtype), &what(&[2]));
            for d in [0, 1] {
                let out = sparse::sum::<3, 2>(&s, &[d]).unwrap();
                assert_eq!((out.sparse_dim(), out.dense_dim()), (1, 1));
                assert_close(&floats(out.to_dense()), &floats(c.clone().sum_dim(d)), tol(dtype), &what(&[d]));
            }
            let out = sparse::sum::<3, 1>(&s, &[0, 2]).unwrap();
            assert_close(
                &floats(out.to_dense()),
                &floats(c.clone().sum_dims(&[0, 2]).reshape([2])),
                tol(dtype),
                &what(&[0, 2]),
            );
            let rows = sparse::sum_to_dense::<3, 1>(&s, &[0, 1]).unwrap();
            assert_eq!(rows.dims(), [6]);
            assert_close(&floats(rows), &floats(c.clone().sum_dims(&[0, 1]).reshape([6])), tol(dtype), &what(&[0, 1]));
            let all = sparse::sum_to_dense::<3, 1>(&s, &[0, 1, 2]).unwrap();
            assert_close(&floats(all), &floats(c.clone().sum()), tol(dtype), &what(&[0, 1, 2]));
        }
        // Hybrid CSR [4, 2 | 6]... as [rows, cols, dense]: the batch-free compressed view.
        let csr = c.clone().to_sparse_with(SparseSpec { dense_dim: 1, ..SparseSpec::new(Layout::Csr) }).unwrap();
        let out = sparse::sum::<3, 2>(&csr, &[1]).unwrap();
        assert_close(&floats(out.to_dense()), &floats(c.clone().sum_dim(1)), tol(dtype), "hybrid csr dim 1");
    }
}

/// Batched CSR `[2, 3, 4]`: the batch dim sums like a sparse dim.
#[test]
fn batched_csr_sums() {
    let mut rng = Rng(6);
    let mut data = sparse_data(12, 0.5, 0.5, 2.0, &mut rng);
    data.extend(data.iter().rev().copied().collect::<Vec<_>>());
    let t = dense::<3>(&data, [2, 3, 4], DType::F64);
    let csr = t.clone().to_sparse_csr().unwrap();
    assert_eq!(csr.batch_dim(), 1);
    for d in 0..3 {
        let out = sparse::sum::<3, 2>(&csr, &[d]).unwrap();
        assert_close(&floats(out.to_dense()), &floats(t.clone().sum_dim(d)), 1e-12, &format!("batched csr dim {d}"));
    }
    let out = sparse::sum_to_dense::<3, 1>(&csr, &[0, 1, 2]).unwrap();
    assert_close(&floats(out), &floats(t.sum()), 1e-12, "batched csr all");
}

#[test]
fn empty_sums() {
    for dtype in DTYPES {
        let e = SparseTensor::<3>::empty_with([3, 4, 5], 2, DType::I64, dtype, &dev()).unwrap();
        assert_eq!(floats(e.sum()), vec![0.0]);
        let s = sparse::sum::<3, 2>(&e, &[1]).unwrap();
        assert_eq!((s.shape(), s.nnz(), s.dense_dim()), ([3, 5], 0, 1));
        assert_eq!(floats(sparse::sum_to_dense::<3, 1>(&e, &[0, 1]).unwrap()), vec![0.0; 5]);
        assert_eq!(floats(sparse::sum_to_dense::<3, 1>(&e, &[0, 1, 2]).unwrap()), vec![0.0]);
        let csr = Tensor::<2>::zeros([4, 6], (&dev(), dtype)).to_sparse_csr().unwrap();
        assert_eq!(floats(csr.sum()), vec![0.0]);
        assert_eq!(sparse::sum::<2, 1>(&csr, &[0]).unwrap().nnz(), 0);
    }
}

#[test]
fn bad_dims_and_ranks_are_errors() {
    let s = cube(DType::F32, 7).to_sparse_coo(2).unwrap();
    let message = |e: SparseError| e.to_string();
    assert!(message(sparse::sum::<3, 2>(&s, &[3]).unwrap_err()).contains("dim 3 out of range for rank 3"));
    assert!(message(sparse::sum::<3, 1>(&s, &[1, 1]).unwrap_err()).contains("dim 1 appears twice"));
    assert!(message(sparse::sum::<3, 1>(&s, &[0]).unwrap_err()).contains("asked for rank 1"));
    assert!(message(sparse::sum::<3, 1>(&s, &[0, 1]).unwrap_err()).contains("use sum_to_dense"));
    assert!(message(sparse::sum_to_dense::<3, 1>(&s, &[0, 2]).unwrap_err()).contains("sparse dim 1 is not summed"));
    assert!(message(sparse::sum_to_dense::<3, 2>(&s, &[0, 1]).unwrap_err()).contains("asked for rank 2"));
    assert!(matches!(
        sparse::sum_to_dense::<3, 1>(&s, &[0, 1, 5]),
        Err(SparseError::InvalidArgument { operation: "sum_to_dense", .. })
    ));
}

// ---------------------------------------------------------------- gradients

#[test]
fn gradcheck_sums() {
    let opts = GradcheckOptions::default();
    let mut rng = Rng(8);
    let data = sparse_data(24, 0.5, 0.5, 2.0, &mut rng);
    let coo = on_ad(&data, [4, 6], |t| t.to_sparse().unwrap());
    let templates = [
        ("uncoalesced coo", uncoalesced::<2, 1>(&coo)),
        ("csc", on_ad(&data, [4, 6], |t| t.to_sparse_csc().unwrap())),
        ("bsr", on_ad(&data, [4, 6], |t| t.to_sparse_bsr([2, 2]).unwrap())),
    ];
    for (ln, l) in templates {
        check_sparse_grad(&l, &format!("{ln} sum()"), opts, |x| x.sum());
        check_sparse_grad(&l, &format!("{ln} sum dim 0"), opts, |x| sparse::sum::<2, 1>(&x, &[0]).unwrap().to_dense());
        check_sparse_grad(&l, &format!("{ln} sum dim 1"), opts, |x| sparse::sum::<2, 1>(&x, &[1]).unwrap().to_dense());
        check_sparse_grad(&l, &format!("{ln} sum_to_dense"), opts, |x| {
            sparse::sum_to_dense::<2, 1>(&x, &[0, 1]).unwrap()
        });
    }
    let c = floats(cube(DType::F64, 9));
    let h = on_ad(&c, [4, 2, 6], |t| t.to_sparse_coo(2).unwrap());
    let h = uncoalesced::<3, 2>(&h);
    check_sparse_grad(&h, "hybrid sum dense dim", opts, |x| sparse::sum::<3, 2>(&x, &[2]).unwrap().to_dense());
    check_sparse_grad(&h, "hybrid sum dims 0, 2", opts, |x| sparse::sum::<3, 1>(&x, &[0, 2]).unwrap().to_dense());
    check_sparse_grad(&h, "hybrid sum_to_dense", opts, |x| sparse::sum_to_dense::<3, 1>(&x, &[1, 0]).unwrap());
}
