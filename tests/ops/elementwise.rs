//! Arithmetic on sparse tensors (docs/SPEC.md section 3): sparse ± sparse, sparse ⊙ sparse, sparse ⊙
//! dense, sparse + dense, scalars, `neg`, `pow`. Every op against the same op of burn on the dense
//! tensors, on every layout pair, f32 and f64, hybrid and empty tensors; the torch reference
//! `a + b` of uncoalesced tensors printed exactly; errors for mismatched operands; gradcheck of
//! every op with respect to the sparse values and the dense operand.

use crate::common_ops;

use crate::common_ops::gradcheck;
use burn::tensor::{DType, Tensor};
use common_ops::*;
use sparsegrad::gradcheck::{GradInput, GradcheckOptions};
use sparsegrad::prelude::*;

const DTYPES: [DType; 2] = [DType::F32, DType::F64];

/// Two 4 x 6 matrices with overlapping random patterns.
fn pair(dtype: DType, seed: u64) -> (Tensor<2>, Tensor<2>) {
    let mut rng = Rng(seed);
    let a = sparse_data(24, 0.5, 0.5, 2.0, &mut rng);
    let b = sparse_data(24, 0.5, 0.5, 2.0, &mut rng);
    (dense(&a, [4, 6], dtype), dense(&b, [4, 6], dtype))
}

fn full(shape: [usize; 2], dtype: DType, seed: u64) -> Tensor<2> {
    let mut rng = Rng(seed);
    let data = sparse_data(shape[0] * shape[1], 1.0, 0.5, 2.0, &mut rng);
    dense(&data, shape, dtype)
}

fn is_sorted(s: &SparseTensor<2>) -> bool {
    let idx = ints(s.indices_raw().unwrap());
    let n = s.nnz();
    (1..n).all(|j| (idx[j - 1], idx[n + j - 1]) <= (idx[j], idx[n + j]))
}

fn count_nonzero(t: &Tensor<2>) -> usize {
    floats(t.clone()).iter().filter(|v| **v != 0.0).count()
}

// ---------------------------------------------------------------- sparse ± sparse

#[test]
fn add_and_sub_match_dense_on_every_layout_pair() {
    for dtype in DTYPES {
        let (a, b) = pair(dtype, 1);
        let (sum, diff) = (floats(a.clone() + b.clone()), floats(a.clone() - b.clone()));
        for (ln, l) in layouts_2d(&a) {
            for (rn, r) in layouts_2d(&b) {
                let what = format!("{ln} ± {rn} {dtype:?}");
                for (out, expected, op) in
                    [(l.add(&r), &sum, "+"), (l.sub(&r), &diff, "-"), (&l + &r, &sum, "+"), (&l - &r, &diff, "-")]
                {
                    assert_eq!(
                        (out.layout(), out.blocksize(), out.index_dtype()),
                        (l.layout(), l.blocksize(), l.index_dtype()),
                        "{what} {op}: left operand's layout"
                    );
                    assert_eq!(out.dtype(), dtype);
                    assert_close(&floats(out.to_dense()), expected, tol(dtype), &format!("{what} {op}"));
                }
            }
        }
    }
}

/// COO + COO keeps both operands' entries (torch concatenates): sorted, with duplicates unless
/// both operands are coalesced, in which case equal indices are merged.
#[test]
fn coo_add_concatenates_or_merges() {
    let (a, b) = pair(DType::F64, 2);
    let (ca, cb) = (a.clone().to_sparse().unwrap(), b.clone().to_sparse().unwrap());
    let (ua, ub) = (uncoalesced::<2, 1>(&ca), uncoalesced::<2, 1>(&cb));
    let union = count_nonzero(&(a.clone().abs() + b.clone().abs()));
    let merged = ca.add(&cb);
    assert!(merged.is_coalesced());
    assert_eq!(merged.nnz(), union, "coalesced operands merge equal indices");
    for (l, r) in [(&ua, &cb), (&ca, &ub), (&ua, &ub)] {
        let s = l.add(r);
        assert_eq!(s.nnz(), l.nnz() + r.nnz(), "an uncoalesced operand: every entry kept");
        assert!(!s.is_coalesced());
        assert!(is_sorted(&s), "entries in stable sorted order");
        assert_close(&floats(s.coalesce().to_dense()), &floats(a.clone() + b.clone()), 1e-12, "coalesced sum");
    }
}

#[test]
fn hybrid_add_and_mul_match_dense() {
    let mut rng = Rng(3);
    for dtype in DTYPES {
        // Whole dense sub-tensors are zero or not: sparse_data on [4, 4] items of 2.
        let item = |rng: &mut Rng| -> Vec<f64> {
            sparse_data(16, 0.5, 1.0, 1.5, rng).into_iter().flat_map(|v| [v, v * 0.5 - 0.25 * v.signum()]).collect()
        };
        let (ad_, bd_) = (item(&mut rng), item(&mut rng));
        let a = dense_on::<3>(&ad_, [4, 4, 2], dtype, &dev());
        let b = dense_on::<3>(&bd_, [4, 4, 2], dtype, &dev());
        let d = dense_on::<3>(&sparse_data(32, 1.0, 0.5, 2.0, &mut rng), [4, 4, 2], dtype, &dev());
        for (ln, l) in layouts_hybrid(&a) {
            let what = format!("{ln} {dtype:?}");
            assert_close(
                &floats(l.mul_dense(d.clone()).to_dense()),
                &floats(a.clone() * d.clone()),
                tol(dtype),
                &format!("{what} * dense"),
            );
            assert_close(
                &floats(l.add_dense(d.clone())),
                &floats(a.clone() + d.clone()),
                tol(dtype),
                &format!("{what} + dense"),
            );
            for (rn, r) in layouts_hybrid(&b) {
                let what = format!("{what} op {rn}");
                assert_close(
                    &floats(l.add(&r).to_dense()),
                    &floats(a.clone() + b.clone()),
                    tol(dtype),
                    &format!("{what} +"),
                );
                assert_close(
                    &floats(l.mul(&r).to_dense()),
                    &floats(a.clone() * b.clone()),
                    tol(dtype),
                    &format!("{what} *"),
                );
                assert_eq!(l.mul(&r).layout(), l.layout());
            }
        }
    }
}

#[test]
fn batched_csr_add_keeps_the_layout_or_reports_unequal_counts() {
    // Two batch entries of 2 x 3: a has 2 entries in each, b the same pattern shifted.
    let a =
        dense::<3>(&[1., 0., 2., 0., 0., 0., 0., 3., 0., 0., 4., 0.], [2, 2, 3], DType::F64).to_sparse_csr().unwrap();
    let same =
        dense::<3>(&[0., 5., 0., 6., 0., 0., 0., 0., 0., 7., 0., 8.], [2, 2, 3], DType::F64).to_sparse_csr().unwrap();
    let s = a.add(&same);
    assert_eq!((s.layout(), s.batch_dim(), s.nnz()), (Layout::Csr, 1, 4));
    assert_eq!(floats(s.to_dense()), vec![1., 5., 2., 6., 0., 0., 0., 3., 0., 7., 4., 8.]);
    // Entry 0 gains two elements, entry 1 none: not storable as a batched CSR.
    let other =
        dense::<3>(&[0., 5., 0., 6., 0., 0., 0., 9., 0., 0., 9., 0.], [2, 2, 3], DType::F64).to_sparse_csr().unwrap();
    assert!(matches!(a.try_add(&other), Err(SparseError::UnequalBatchNse { batch: 1, .. })));
    // As COO it is fine.
    let coo = a.to_sparse_coo().add(&other);
    assert_eq!(floats(coo.to_dense()), vec![1., 5., 2., 6., 0., 0., 0., 12., 0., 0., 13., 0.]);
}

// ---------------------------------------------------------------- sparse ⊙ sparse, sparse ⊙ dense, sparse + dense

#[test]
fn mul_is_the_intersection_on_every_layout_pair() {
    for dtype in DTYPES {
        let (a, b) = pair(dtype, 4);
        let product = floats(a.clone() * b.clone());
        let common = count_nonzero(&(a.clone() * b.clone()));
        for (ln, l) in layouts_2d(&a) {
            for (rn, r) in layouts_2d(&b) {
                let what = format!("{ln} * {rn} {dtype:?}");
                for out in [l.mul(&r), &l * &r] {
                    assert_eq!((out.layout(), out.blocksize()), (l.layout(), l.blocksize()), "{what}");
                    assert!(out.is_coalesced(), "{what}");
                    // Blocks store explicit zeros, which are specified elements too.
                    if l.layout() == Layout::Coo && !r.layout().is_blocked() {
                        assert_eq!(out.nnz(), common, "{what}: one entry per common element");
                    }
                    assert_close(&floats(out.to_dense()), &product, tol(dtype), &what);
                }
            }
        }
    }
}

#[test]
fn mul_dense_keeps_the_pattern_and_add_dense_is_dense() {
    for dtype in DTYPES {
        let (a, _) = pair(dtype, 5);
        let d = full([4, 6], dtype, 6);
        for (ln, l) in layouts_2d(&a) {
            let what = format!("{ln} {dtype:?}");
            let p = l.mul_dense(d.clone());
            assert_eq!(
                (p.layout(), p.nnz(), p.is_coalesced(), p.index_dtype()),
                (l.layout(), l.nnz(), l.is_coalesced(), l.index_dtype()),
                "{what}: same pattern"
            );
            assert_close(&floats(p.to_dense()), &floats(a.clone() * d.clone()), tol(dtype), &format!("{what} * dense"));
            assert_close(
                &floats(l.add_dense(d.clone())),
                &floats(a.clone() + d.clone()),
                tol(dtype),
                &format!("{what} + dense"),
            );
        }
    }
}

// ---------------------------------------------------------------- scalars, neg, pow

#[test]
fn scalar_ops_and_neg_keep_the_pattern() {
    for dtype in DTYPES {
        let (a, _) = pair(dtype, 7);
        for (ln, l) in layouts_2d(&a) {
            let what = format!("{ln} {dtype:?}");
            let cases = [
                (l.mul_scalar(2.5), a.clone().mul_scalar(2.5)),
                (&l * 2.5, a.clone().mul_scalar(2.5)),
                (l.div_scalar(4.0), a.clone().div_scalar(4.0)),
                (&l / 4.0, a.clone().div_scalar(4.0)),
                (l.neg(), a.clone().neg()),
                (-&l, a.clone().neg()),
            ];
            for (k, (out, expected)) in cases.into_iter().enumerate() {
                assert_eq!(
                    (out.layout(), out.nnz(), out.is_coalesced()),
                    (l.layout(), l.nnz(), l.is_coalesced()),
                    "{what} case {k}"
                );
                assert_close(&floats(out.to_dense()), &floats(expected), tol(dtype), &format!("{what} case {k}"));
            }
        }
    }
}

/// `pow` is nonlinear: an uncoalesced tensor is coalesced first, so `(3/4 v + 1/4 v)^p = v^p`.
#[test]
fn pow_coalesces_and_matches_dense() {
    for dtype in DTYPES {
        let (a, _) = pair(dtype, 8);
        for (ln, l) in layouts_2d(&a) {
            for p in [2.0, 3.0, 0.5, 1.0] {
                let what = format!("{ln} pow {p} {dtype:?}");
                let out = l.pow(p);
                assert!(out.is_coalesced(), "{what}");
                assert_eq!(out.layout(), l.layout());
                // 0.5 on negative values is NaN, in both.
                assert_close(&floats(out.to_dense()), &floats(a.clone().powf_scalar(p)), tol(dtype), &what);
            }
        }
    }
}

#[test]
fn pow_refuses_exponents_that_make_the_result_dense() {
    let (a, _) = pair(DType::F32, 9);
    let s = a.to_sparse().unwrap();
    for p in [0.0, -1.0, f64::NAN] {
        let e = s.try_pow(p).unwrap_err();
        assert!(matches!(e, SparseError::InvalidArgument { operation: "pow", .. }), "{e}");
        assert!(e.to_string().contains("convert to dense first"), "{e}");
    }
}

// ---------------------------------------------------------------- empty tensors

#[test]
fn empty_operands() {
    for dtype in DTYPES {
        let empty = SparseTensor::<2>::empty_with([4, 6], 2, DType::I64, dtype, &dev()).unwrap();
        let zeros = Tensor::<2>::zeros([4, 6], (&dev(), dtype));
        let (a, _) = pair(dtype, 10);
        for (ln, l) in layouts_2d(&a).into_iter().chain(layouts_2d(&zeros)) {
            let what = format!("{ln} {dtype:?}");
            assert_close(
                &floats(empty.add(&l).to_dense()),
                &floats(l.to_dense()),
                tol(dtype),
                &format!("empty + {what}"),
            );
            assert_close(
                &floats(l.add(&empty).to_dense()),
                &floats(l.to_dense()),
                tol(dtype),
                &format!("{what} + empty"),
            );
            assert_close(
                &floats(l.sub(&empty).to_dense()),
                &floats(l.to_dense()),
                tol(dtype),
                &format!("{what} - empty"),
            );
            assert_eq!(l.mul(&empty).to_sparse_coo().nnz(), 0, "{what} * empty");
            assert_eq!(empty.mul(&l).nnz(), 0, "empty * {what}");
        }
        let d = full([4, 6], dtype, 11);
        assert_eq!(empty.mul_dense(d.clone()).nnz(), 0);
        assert_close(&floats(empty.add_dense(d.clone())), &floats(d), 0.0, "empty + dense");
        assert_eq!(empty.add(&empty).nnz(), 0);
        assert_eq!(empty.pow(2.0).nnz(), 0);
        assert_eq!(empty.neg().dtype(), dtype);
    }
}

// ---------------------------------------------------------------- mismatched operands

#[test]
fn mismatched_operands_are_errors_naming_both() {
    let a = full([4, 6], DType::F32, 12).to_sparse().unwrap();
    let t = full([6, 4], DType::F32, 13);
    let b = t.clone().to_sparse().unwrap();
    let msgs = [
        a.try_add(&b).unwrap_err(),
        a.try_sub(&b).unwrap_err(),
        a.try_mul(&b).unwrap_err(),
        a.try_mul_dense(t.clone()).unwrap_err(),
        a.try_add_dense(t).unwrap_err(),
    ];
    for e in msgs {
        let m = e.to_string();
        assert!(
            matches!(e, SparseError::InvalidArgument { .. }) && m.contains("[4, 6]") && m.contains("[6, 4]"),
            "{m}"
        );
    }
    // Value dtypes and dense dims must agree too.
    let a64 = full([4, 6], DType::F64, 12).to_sparse().unwrap();
    assert!(a.try_add(&a64).unwrap_err().to_string().contains("dtypes"));
    assert!(a.try_mul_dense(full([4, 6], DType::F64, 1)).unwrap_err().to_string().contains("dtypes"));
    let h = dense::<3>(&[1.0; 8], [2, 2, 2], DType::F32);
    let (hybrid, all_sparse) = (h.clone().to_sparse_coo(2).unwrap(), h.to_sparse().unwrap());
    assert!(hybrid.try_add(&all_sparse).unwrap_err().to_string().contains("dense dims"));
}

#[test]
#[should_panic(expected = "add: shapes [4, 6] and [6, 4] do not match")]
fn add_panics_on_a_shape_mismatch() {
    let a = full([4, 6], DType::F32, 1).to_sparse().unwrap();
    let b = full([6, 4], DType::F32, 1).to_sparse_csr().unwrap();
    let _ = &a + &b;
}

#[test]
#[should_panic(expected = "mul_dense: shapes [4, 6] (sparse) and [4, 5] (dense) do not match")]
fn mul_dense_panics_on_a_shape_mismatch() {
    let a = full([4, 6], DType::F32, 1).to_sparse_csr().unwrap();
    let _ = a.mul_dense(full([4, 5], DType::F32, 2));
}

// ---------------------------------------------------------------- torch reference

/// 1.11 / 2.x "Uncoalesced sparse COO tensors": `a = sparse_coo_tensor([[1, 1]], [5, 6], (2,))`,
/// `b = sparse_coo_tensor([[0, 0]], [7, 8], (2,))`, `a + b` prints `indices=tensor([[0, 0, 1, 1]])`,
/// `values=tensor([7, 8, 5, 6])`, `nnz=4` (our values print as floats).
#[test]
fn torch_sum_of_uncoalesced_tensors() {
    let a = SparseTensor::<1>::coo(int_on(&[1, 1], [1, 2], &dev()), dense(&[5., 6.], [2], DType::F32), [2]).unwrap();
    let b = SparseTensor::<1>::coo(int_on(&[0, 0], [1, 2], &dev()), dense(&[7., 8.], [2], DType::F32), [2]).unwrap();
    let s = &a + &b;
    assert_eq!(
        format!("{s}"),
        "tensor(indices=tensor([[0, 0, 1, 1]]),
       values=tensor([7., 8., 5., 6.]),
       size=(2,), nnz=4, layout=sparse_coo)"
    );
    assert!(!s.is_coalesced());
    assert_eq!(floats(s.to_dense()), vec![15., 11.]);
    assert_eq!(floats(s.coalesce().values::<1>().unwrap()), vec![15., 11.]);
}

// ---------------------------------------------------------------- gradients

fn opts() -> GradcheckOptions {
    GradcheckOptions::default()
}

/// Templates on the autodiff device in f64: uncoalesced COO, CSR, CSC and BSR of a random 4 x 6.
fn grad_templates(seed: u64) -> Vec<(String, SparseTensor<2>)> {
    let mut rng = Rng(seed);
    let data = sparse_data(24, 0.5, 0.5, 2.0, &mut rng);
    let coo = on_ad(&data, [4, 6], |t| t.to_sparse().unwrap());
    vec![
        ("uncoalesced coo".into(), uncoalesced::<2, 1>(&coo)),
        ("coo".into(), coo),
        ("csr".into(), on_ad(&data, [4, 6], |t| t.to_sparse_csr().unwrap())),
        ("csc".into(), on_ad(&data, [4, 6], |t| t.to_sparse_csc().unwrap())),
        ("bsr".into(), on_ad(&data, [4, 6], |t| t.to_sparse_bsr([2, 2]).unwrap())),
    ]
}

/// gradcheck of `(x, y) -> f(x, y)` over the values of two sparse templates.
fn check_two(
    a: &SparseTensor<2>,
    b: &SparseTensor<2>,
    name: &str,
    f: impl Fn(SparseTensor<2>, SparseTensor<2>) -> Tensor<2>,
) {
    let inputs = [GradInput::sparse("a", a), GradInput::sparse("b", b)];
    gradcheck(|v| flat(f(rebuild(a, &v[0]), rebuild(b, &v[1]))), &inputs, opts())
        .unwrap_or_else(|e| panic!("{name}: {e}"));
}

#[test]
fn gradcheck_sparse_sparse_ops() {
    let (left, right) = (grad_templates(20), grad_templates(21));
    for (i, j) in template_pairs(left.len()) {
        let ((ln, l), (rn, r)) = (&left[i], &right[j]);
        let name = format!("{ln} op {rn}");
        check_two(l, r, &format!("{name} add"), |x, y| x.add(&y).to_dense());
        check_two(l, r, &format!("{name} sub"), |x, y| x.sub(&y).to_dense());
        check_two(l, r, &format!("{name} mul"), |x, y| x.mul(&y).to_dense());
    }
}

#[test]
fn gradcheck_sparse_dense_ops() {
    let mut rng = Rng(22);
    let d = sparse_data(24, 1.0, 0.5, 2.0, &mut rng);
    for (ln, l) in grad_templates(23) {
        let inputs = [GradInput::sparse("s", &l), GradInput { name: "dense".into(), values: d.clone() }];
        let dense_of = |v: &Tensor<1>| v.clone().reshape([4, 6]);
        gradcheck(|v| flat(rebuild(&l, &v[0]).mul_dense(dense_of(&v[1])).to_dense()), &inputs, opts())
            .unwrap_or_else(|e| panic!("{ln} mul_dense: {e}"));
        gradcheck(|v| flat(rebuild(&l, &v[0]).add_dense(dense_of(&v[1]))), &inputs, opts())
            .unwrap_or_else(|e| panic!("{ln} add_dense: {e}"));
    }
}

#[test]
fn gradcheck_scalar_ops_neg_and_pow() {
    for (ln, l) in grad_templates(24) {
        check_sparse_grad(&l, &format!("{ln} mul_scalar"), opts(), |x| x.mul_scalar(-1.5).to_dense());
        check_sparse_grad(&l, &format!("{ln} div_scalar"), opts(), |x| x.div_scalar(3.0).to_dense());
        check_sparse_grad(&l, &format!("{ln} neg"), opts(), |x| x.neg().to_dense());
        check_sparse_grad(&l, &format!("{ln} pow 2"), opts(), |x| x.pow(2.0).to_dense());
        check_sparse_grad(&l, &format!("{ln} pow 3"), opts(), |x| x.pow(3.0).to_dense());
        // A fractional power needs positive values: square them first.
        check_sparse_grad(&l, &format!("{ln} pow 1.5"), opts(), |x| x.pow(2.0).pow(1.5).to_dense());
    }
}

#[test]
fn gradcheck_hybrid_ops() {
    let mut rng = Rng(25);
    let data: Vec<f64> = sparse_data(16, 0.5, 0.5, 2.0, &mut rng).into_iter().flat_map(|v| [v, -0.5 * v]).collect();
    let other: Vec<f64> = sparse_data(16, 0.5, 0.5, 2.0, &mut rng).into_iter().flat_map(|v| [0.5 * v, v]).collect();
    let d = sparse_data(32, 1.0, 0.5, 2.0, &mut rng);
    let a = uncoalesced::<3, 2>(&on_ad(&data, [4, 4, 2], |t| t.to_sparse_coo(2).unwrap()));
    let b = on_ad(&other, [4, 4, 2], |t| {
        t.to_sparse_with(SparseSpec { dense_dim: 1, ..SparseSpec::new(Layout::Csr) }).unwrap()
    });
    let inputs =
        [GradInput::sparse("a", &a), GradInput::sparse("b", &b), GradInput { name: "dense".into(), values: d }];
    let run = |v: &[Tensor<1>]| {
        let (x, y, z) = (rebuild(&a, &v[0]), rebuild(&b, &v[1]), v[2].clone().reshape([4, 4, 2]));
        let s = x.add(&y).mul(&x).mul_dense(z.clone()).pow(2.0);
        flat(s.add_dense(z))
    };
    gradcheck(run, &inputs, opts()).unwrap_or_else(|e| panic!("hybrid: {e}"));
}
