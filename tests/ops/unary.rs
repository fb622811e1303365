//! Zero-preserving unary ops (docs/SPEC.md section 3) on every layout against burn's op on the dense
//! tensor (host `f64` functions where burn has none: `expm1`, `erfinv`), f32 and f64, hybrid and
//! empty tensors; uncoalesced COO is coalesced before nonlinear ops; predicates as 1.0 / 0.0;
//! refusal of `cos`, `exp`, ... with torch's message; the reference's `b_s.sin()` and `b_s.cos()`;
//! gradcheck of every op.

use crate::common_ops;

use burn::tensor::{activation, DType, Tensor};
use common_ops::*;
use sparsegrad::gradcheck::GradcheckOptions;
use sparsegrad::prelude::*;

const DTYPES: [DType; 2] = [DType::F32, DType::F64];

type SparseOp = fn(&SparseTensor<2>) -> SparseTensor<2>;
type DenseOp = fn(Tensor<2>) -> Tensor<2>;

/// Every zero-preserving op, with burn's dense op as the reference.
fn ops() -> Vec<(&'static str, SparseOp, DenseOp)> {
    vec![
        ("abs", |s| s.abs(), |t| t.abs()),
        ("asin", |s| s.asin(), |t| t.asin()),
        ("asinh", |s| s.asinh(), |t| t.asinh()),
        ("atan", |s| s.atan(), |t| t.atan()),
        ("atanh", |s| s.atanh(), |t| t.atanh()),
        ("ceil", |s| s.ceil(), |t| t.ceil()),
        ("floor", |s| s.floor(), |t| t.floor()),
        ("round", |s| s.round(), |t| t.round()),
        ("trunc", |s| s.trunc(), |t| t.trunc()),
        ("sign", |s| s.sign(), |t| t.sign()),
        ("sgn", |s| s.sgn(), |t| t.sign()),
        ("sin", |s| s.sin(), |t| t.sin()),
        ("sinh", |s| s.sinh(), |t| t.sinh()),
        ("tan", |s| s.tan(), |t| t.tan()),
        ("tanh", |s| s.tanh(), |t| t.tanh()),
        ("sqrt", |s| s.sqrt(), |t| t.sqrt()),
        ("square", |s| s.square(), |t| t.square()),
        ("log1p", |s| s.log1p(), |t| t.log1p()),
        ("erf", |s| s.erf(), |t| t.erf()),
        ("deg2rad", |s| s.deg2rad(), |t| t.deg2rad()),
        ("rad2deg", |s| s.rad2deg(), |t| t.rad2deg()),
        ("relu", |s| s.relu(), activation::relu),
    ]
}

/// A 4 x 6 matrix with values in ±[0.05, 0.95): inside every op's domain but sqrt's (negative
/// values give NaN, as in the dense reference), with halves for `round` to split.
fn matrix(dtype: DType, seed: u64) -> Tensor<2> {
    let mut rng = Rng(seed);
    let mut data = sparse_data(24, 0.6, 0.05, 0.95, &mut rng);
    data[1] = 0.5;
    data[7] = -0.5;
    dense(&data, [4, 6], dtype)
}

fn host_op(t: Tensor<2>, f: fn(f64) -> f64) -> Vec<f64> {
    floats(t).into_iter().map(f).collect()
}

#[test]
fn every_op_matches_dense_on_every_layout() {
    for dtype in common_ops::transcendental_dtypes(DTYPES) {
        let a = matrix(dtype, 1);
        for (ln, l) in layouts_2d(&a) {
            for (name, op, reference) in ops() {
                let what = format!("{name} on {ln} {dtype:?}");
                let out = op(&l);
                assert_eq!(
                    (out.layout(), out.blocksize(), out.index_dtype(), out.dtype()),
                    (l.layout(), l.blocksize(), l.index_dtype(), dtype),
                    "{what}"
                );
                let linear = matches!(name, "deg2rad" | "rad2deg");
                assert!(out.is_coalesced() || linear, "{what}: nonlinear ops coalesce");
                assert_close(&floats(out.to_dense()), &floats(reference(a.clone())), tol(dtype), &what);
            }
            let expm1 = l.expm1();
            assert_close(
                &floats(expm1.to_dense()),
                &host_op(a.clone(), f64::exp_m1),
                tol(dtype),
                &format!("expm1 on {ln}"),
            );
        }
    }
}

/// On an uncoalesced tensor, nonlinear ops see each element's summed value: `sin(3/4 v + 1/4 v)`,
/// not `sin(3/4 v) + sin(1/4 v)`; linear ones may keep the duplicates.
#[test]
fn uncoalesced_input_is_coalesced_for_nonlinear_ops_only() {
    let a = matrix(DType::F64, 2);
    let u = uncoalesced::<2, 1>(&a.clone().to_sparse().unwrap());
    let coalesced_nnz = u.coalesce().nnz();
    for (name, op, reference) in ops() {
        let out = op(&u);
        if matches!(name, "deg2rad" | "rad2deg") {
            assert_eq!(out.nnz(), u.nnz(), "{name} is linear: duplicates kept");
        } else {
            assert_eq!((out.nnz(), out.is_coalesced()), (coalesced_nnz, true), "{name}");
        }
        assert_close(&floats(out.to_dense()), &floats(reference(a.clone())), 1e-12, name);
    }
}

#[test]
fn hybrid_and_empty_tensors() {
    for dtype in DTYPES {
        let mut rng = Rng(3);
        let data: Vec<f64> = sparse_data(16, 0.5, 0.1, 0.9, &mut rng).into_iter().flat_map(|v| [v, -0.5 * v]).collect();
        let h = dense_on::<3>(&data, [4, 4, 2], dtype, &dev());
        for (ln, l) in layouts_hybrid(&h) {
            let what = format!("{ln} {dtype:?}");
            assert_close(&floats(l.sin().to_dense()), &floats(h.clone().sin()), tol(dtype), &format!("sin {what}"));
            assert_close(&floats(l.sqrt().to_dense()), &floats(h.clone().sqrt()), tol(dtype), &format!("sqrt {what}"));
            assert_close(&floats(l.isnan().to_dense()), &vec![0.0; 32], 0.0, &format!("isnan {what}"));
            assert_close(&floats(l.erfinv().erf().to_dense()), &data, tol(dtype), &format!("erf(erfinv) {what}"));
        }
        let empty = SparseTensor::<2>::empty_with([3, 4], 2, DType::I64, dtype, &dev()).unwrap();
        let zeros = Tensor::<2>::zeros([4, 6], (&dev(), dtype));
        for s in [empty.clone(), zeros.clone().to_sparse_csr().unwrap(), zeros.to_sparse_bsc([2, 2]).unwrap()] {
            for (name, op, _) in ops() {
                let out = op(&s);
                assert_eq!((out.nnz(), out.layout(), out.dtype()), (0, s.layout(), dtype), "{name} on empty");
            }
            assert_eq!(s.erfinv().nnz(), 0);
            assert_eq!(s.expm1().nnz(), 0);
            assert_eq!(s.isinf().nnz(), 0);
        }
    }
}

#[test]
fn expm1_and_erfinv_are_accurate() {
    for dtype in DTYPES {
        let xs = [1e-10, -1e-10, 1e-5, 0.3, -0.7, 5.0, -5.0, 30.0, -80.0, -1000.0];
        let s = dense::<2>(&xs, [1, 10], dtype).to_sparse().unwrap();
        let expected: Vec<f64> = xs.iter().map(|x| x.exp_m1()).collect();
        // Relative accuracy near 0, where exp(x) - 1 would cancel.
        for (a, e) in floats(s.expm1().values::<1>().unwrap()).iter().zip(&expected) {
            assert!((a - e).abs() <= tol(dtype) * e.abs().max(1e-300), "expm1 {dtype:?}: {a} != {e}");
        }
        // erfinv: known values, ±1 -> ±inf, outside [-1, 1] -> NaN, and erf(erfinv(x)) = x.
        let xs = [0.5, -0.5, 0.9, 1e-8, 0.999999, -0.999, 1.0, -1.0, 1.5, -2.0];
        let s = dense::<2>(&xs, [1, 10], dtype).to_sparse().unwrap();
        let y = floats(s.erfinv().values::<1>().unwrap());
        let known = [0.4769362762044699, -0.4769362762044699, 1.1630871536766743, 8.86226925452758e-9];
        assert_close(&y[..4], &known, tol(dtype), &format!("erfinv {dtype:?}"));
        assert_close(&y[6..], &[f64::INFINITY, f64::NEG_INFINITY, f64::NAN, f64::NAN], 0.0, "erfinv edges");
        let back = floats(dense::<1>(&y[..6], [6], dtype).erf());
        assert_close(&back, &xs[..6], tol(dtype), &format!("erf(erfinv) {dtype:?}"));
    }
}

/// Predicates on NaN, ±inf and -0.0 values; burn has no bool sparse values, so they are 1.0 / 0.0
/// on the input's (coalesced) pattern. An uncoalesced `inf + (-inf)` is NaN once summed.
#[test]
fn predicates() {
    let (inf, nan) = (f64::INFINITY, f64::NAN);
    for dtype in DTYPES {
        let idx = int_on(&[0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4], [2, 10], &dev());
        let vals = dense::<1>(&[1.5, -2.0, inf, -inf, nan, -0.0, 0.0, 7.0, -inf, 3.0], [10], dtype);
        let s = SparseTensor::<2>::coo(idx, vals, [2, 5]).unwrap();
        let cases: [(&str, SparseTensor<2>, [f64; 10]); 5] = [
            ("isnan", s.isnan(), [0., 0., 0., 0., 1., 0., 0., 0., 0., 0.]),
            ("isinf", s.isinf(), [0., 0., 1., 1., 0., 0., 0., 0., 1., 0.]),
            ("isposinf", s.isposinf(), [0., 0., 1., 0., 0., 0., 0., 0., 0., 0.]),
            ("isneginf", s.isneginf(), [0., 0., 0., 1., 0., 0., 0., 0., 1., 0.]),
            ("signbit", s.signbit(), [0., 1., 0., 1., 0., 1., 0., 0., 1., 0.]),
        ];
        for (name, out, expected) in cases {
            assert_eq!((out.nnz(), out.dtype()), (10, dtype), "{name}: same pattern, the values' dtype");
            assert_eq!(floats(out.values::<1>().unwrap()), expected, "{name} {dtype:?}");
        }
        // Duplicates: inf and -inf at (0, 0) sum to NaN, 2 and -2 at (0, 1) to 0.
        let idx = int_on(&[0, 0, 0, 0, 0, 1, 0, 1], [2, 4], &dev());
        let u = SparseTensor::<2>::coo(idx, dense::<1>(&[inf, 2.0, -inf, -2.0], [4], dtype), [1, 2]).unwrap();
        assert_eq!(floats(u.isnan().to_dense()), vec![1., 0.]);
        assert_eq!(floats(u.isinf().to_dense()), vec![0., 0.]);
        // Compressed layouts, against burn's dense predicates.
        let d = dense::<2>(&[0., nan, inf, 0., -inf, 2.0, 0., -1.0], [2, 4], dtype);
        for (ln, l) in layouts_2d(&d) {
            let as_float = |m: Tensor<2, burn::tensor::Bool>| floats(m.float());
            assert_close(&floats(l.isnan().to_dense()), &as_float(d.clone().is_nan()), 0.0, &format!("isnan {ln}"));
            assert_close(&floats(l.isinf().to_dense()), &as_float(d.clone().is_inf()), 0.0, &format!("isinf {ln}"));
        }
    }
}

/// 2.x "Обзор операторов": `b_s.cos()` raises `unsupported tensor layout: SparseCsr`; our error
/// says the same in our names and what to do instead. Every op with `f(0) != 0` is refused.
#[test]
fn non_zero_preserving_ops_are_refused() {
    let b = dense::<2>(&[0., 0., 1., 2., 3., 0., 4., 5., 0., 6., 0., 0.], [2, 6], DType::F32);
    let b_s = b.clone().to_sparse_csr().unwrap();
    let e = b_s.cos().unwrap_err();
    assert_eq!(e, SparseError::NotZeroPreserving { operation: "cos", layout: "sparse_csr" });
    assert_eq!(
        e.to_string(),
        "cos: unsupported tensor layout: sparse_csr (cos does not map 0 to 0, so its result is dense); convert to dense first: `s.to_dense().cos()`"
    );
    // The reference's way out: `b_s.to_dense().cos()`.
    assert_eq!(floats(b_s.to_dense().cos()), floats(b.cos()));
    let u = uncoalesced::<2, 1>(&b_s.to_sparse_coo());
    let refusals: Vec<(&str, sparsegrad::backend::Result<SparseTensor<2>>)> = vec![
        ("acos", u.acos()),
        ("acosh", u.acosh()),
        ("cos", u.cos()),
        ("cosh", u.cosh()),
        ("exp", u.exp()),
        ("exp2", u.exp2()),
        ("log", u.log()),
        ("log2", u.log2()),
        ("log10", u.log10()),
        ("erfc", u.erfc()),
        ("recip", u.recip()),
        ("rsqrt", u.rsqrt()),
        ("sigmoid", u.sigmoid()),
    ];
    for (name, r) in refusals {
        assert_eq!(r.unwrap_err(), SparseError::NotZeroPreserving { operation: name, layout: "sparse_coo" });
    }
}

/// 2.x "Обзор операторов": `b_s.sin()` prints exactly as the reference.
#[test]
fn torch_sin_of_csr() {
    let b = dense::<2>(&[0., 0., 1., 2., 3., 0., 4., 5., 0., 6., 0., 0.], [2, 6], DType::F32);
    let sin = b.to_sparse_csr().unwrap().sin();
    assert_eq!(
        format!("{sin}"),
        "tensor(crow_indices=tensor([0, 3, 6]),
       col_indices=tensor([2, 3, 4, 0, 1, 3]),
       values=tensor([ 0.8415,  0.9093,  0.1411, -0.7568, -0.9589, -0.2794]),
       size=(2, 6), nnz=6, layout=sparse_csr)"
    );
}

// ---------------------------------------------------------------- gradients

/// Templates on the autodiff device in f64, values in ±[0.1, 0.8): inside every domain and
/// away from the jumps of ceil, floor, round, trunc and sign.
fn grad_templates(positive: bool) -> Vec<(String, SparseTensor<2>)> {
    let mut rng = Rng(if positive { 11 } else { 12 });
    let mut data = sparse_data(24, 0.5, 0.1, 0.8, &mut rng);
    for v in data.iter_mut().filter(|v| positive && **v < 0.0) {
        *v = -*v;
    }
    for v in data.iter_mut().filter(|v| (v.abs() - 0.5).abs() < 0.02) {
        *v *= 0.9;
    }
    let coo = on_ad(&data, [4, 6], |t| t.to_sparse().unwrap());
    vec![
        ("uncoalesced coo".into(), uncoalesced::<2, 1>(&coo)),
        ("csr".into(), on_ad(&data, [4, 6], |t| t.to_sparse_csr().unwrap())),
        ("bsc".into(), on_ad(&data, [4, 6], |t| t.to_sparse_bsc([2, 2]).unwrap())),
    ]
}

#[test]
fn gradcheck_every_op() {
    let opts = GradcheckOptions::default();
    for positive in [false, true] {
        for (ln, l) in grad_templates(positive) {
            for (name, op, _) in ops() {
                // Blocks store explicit zeros, where these ops jump or kink (sqrt's slope is
                // infinite): central differences there measure the jump, not a gradient.
                let kinks_at_zero = matches!(name, "ceil" | "floor" | "sign" | "sgn" | "relu" | "sqrt");
                if (kinks_at_zero && l.layout() == Layout::Bsc) || (name == "sqrt" && !positive) {
                    continue;
                }
                check_sparse_grad(&l, &format!("{name} on {ln}"), opts, |x| op(&x).to_dense());
            }
            check_sparse_grad(&l, &format!("expm1 on {ln}"), opts, |x| x.expm1().to_dense());
            check_sparse_grad(&l, &format!("erfinv on {ln}"), opts, |x| x.erfinv().to_dense());
            check_sparse_grad(&l, &format!("isnan on {ln}"), opts, |x| x.isnan().to_dense());
            if l.layout() != Layout::Bsc {
                check_sparse_grad(&l, &format!("signbit on {ln}"), opts, |x| x.signbit().to_dense());
            }
        }
    }
}

#[test]
fn gradcheck_hybrid() {
    let mut rng = Rng(13);
    let data: Vec<f64> =
        sparse_data(16, 0.5, 0.1, 0.8, &mut rng).into_iter().flat_map(|v| [v.abs(), 0.5 * v.abs()]).collect();
    let coo = on_ad(&data, [4, 4, 2], |t| t.to_sparse_coo(2).unwrap());
    for (ln, l) in [("hybrid uncoalesced coo", uncoalesced::<3, 2>(&coo)), ("hybrid coo", coo)] {
        let opts = GradcheckOptions::default();
        check_sparse_grad(&l, &format!("sqrt on {ln}"), opts, |x| x.sqrt().to_dense());
        check_sparse_grad(&l, &format!("erfinv on {ln}"), opts, |x| x.erfinv().to_dense());
        check_sparse_grad(&l, &format!("asin tanh on {ln}"), opts, |x| x.asin().tanh().rad2deg().to_dense());
    }
}
