//! The candle frontend and the burn side on the same inputs: outputs and gradients (sparse
//! values and dense operands) of `mm`, `addmm`, `sampled_addmm`, `softmax` and `log_softmax`
//! agree, in f32 and f64, for CSR, coalesced COO and uncoalesced COO operands (the burn side's
//! values gradient is per stored entry too), with empty rows and with no entries.

use crate::common;

use burn::tensor::{DType as BurnDtype, Device as BurnDevice, Int, Tensor as BurnTensor, TensorData};
use candle_core::{DType, Tensor, Var};
use common::*;
use sparsegrad_autodiff::{matmul as bmat, softmax as bsoft};
use sparsegrad_backend::SparseTensor as BurnSparse;
use sparsegrad_candle as sc;

fn ad() -> BurnDevice {
    BurnDevice::flex().autodiff()
}

fn bdtype(dtype: DType) -> BurnDtype {
    if dtype == DType::F32 {
        BurnDtype::F32
    } else {
        BurnDtype::F64
    }
}

fn bt<const D: usize>(data: &[f64], shape: [usize; D], dtype: DType) -> BurnTensor<D> {
    BurnTensor::<D>::from_data(TensorData::new(data.to_vec(), shape), (&ad(), BurnDtype::F64)).cast(bdtype(dtype))
}

fn bhost<const D: usize>(t: BurnTensor<D>) -> Vec<f64> {
    t.into_data().iter::<f64>().collect()
}

fn bints<const D: usize>(data: Vec<i64>, shape: [usize; D]) -> BurnTensor<D, Int> {
    BurnTensor::from_data(TensorData::new(data, shape), (&ad(), BurnDtype::I64))
}

/// The burn tensor of a case in a layout, its values a leaf that requires grad.
fn burn_sparse(case: &Case, layout: &str, values: BurnTensor<1>) -> BurnSparse<2> {
    let nnz = case.nnz();
    if layout == "csr" {
        let (crow, col) = case.csr_arrays();
        BurnSparse::csr(bints(crow, [case.shape[0] + 1]), bints(col, [nnz]), values, case.shape).unwrap()
    } else {
        let mut idx = case.rows.clone();
        idx.extend(&case.cols);
        BurnSparse::coo(bints(idx, [2, nnz]), values, case.shape).unwrap()
    }
}

fn candle_sparse(case: &Case, layout: &str, values: Tensor) -> sc::SparseTensor {
    if layout == "csr" {
        case.csr(values)
    } else {
        case.coo(values)
    }
}

/// Every case in every layout, in both dtypes.
fn each(seed: u64, mut f: impl FnMut(&Case, &str, DType, &mut Rng)) {
    let mut rng = Rng(seed ^ 0xABCD);
    for base in cases(seed) {
        let shuffled = uncoalesced(&base, &mut rng);
        for (case, layout) in [(&base, "csr"), (&base, "coo"), (&shuffled, "coo")] {
            for dtype in [DType::F32, DType::F64] {
                f(case, layout, dtype, &mut rng);
            }
        }
    }
}

/// f32 sums in the two frontends may group differently (burn composes `addmm` itself).
fn ptol(dtype: DType) -> f64 {
    if dtype == DType::F32 {
        1e-5
    } else {
        1e-12
    }
}

#[test]
fn mm_and_addmm_match_burn() {
    each(21, |case, layout, dtype, rng| {
        let what = format!("{} {layout} {dtype:?}", case.name);
        let [m, k] = case.shape;
        let n = 3;
        let (xs, inp, ws) = (rng.values(k * n), rng.values(m * n), rng.values(m * n));
        let t = ptol(dtype);
        for (alpha, beta) in [(1.0, 0.0), (-0.5, 2.0)] {
            let bv = bt(&case.values, [case.nnz()], dtype).require_grad();
            let bx = bt(&xs, [k, n], dtype).require_grad();
            let bi = bt(&inp, [m, n], dtype).require_grad();
            let a = burn_sparse(case, layout, bv.clone());
            let bout = if beta == 0.0 {
                bmat::mm(&a, bx.clone()) * alpha
            } else {
                bmat::addmm(bi.clone(), &a, bx.clone(), beta, alpha)
            };
            let bgrads = (bout.clone() * bt(&ws, [m, n], dtype)).sum().backward();

            let cv = Var::from_tensor(&tensor(&case.values, &[case.nnz()], dtype)).unwrap();
            let cx = Var::from_tensor(&tensor(&xs, &[k, n], dtype)).unwrap();
            let ci = Var::from_tensor(&tensor(&inp, &[m, n], dtype)).unwrap();
            let s = candle_sparse(case, layout, cv.as_tensor().clone());
            let cout = sc::addmm(ci.as_tensor(), &s, cx.as_tensor(), beta, alpha).unwrap();
            let cgrads = (&cout * tensor(&ws, &[m, n], dtype)).unwrap().sum_all().unwrap().backward().unwrap();

            let what = format!("{what} alpha {alpha} beta {beta}");
            assert_close(&host(&cout), &bhost(bout), t, &format!("{what}: output"));
            let bdv = bv.grad(&bgrads).map(bhost).unwrap_or_default();
            let cdv = cgrads.get(&cv).map(host).unwrap_or_default();
            assert_eq!(cdv.len(), case.nnz(), "{what}: a gradient for every stored value");
            assert_close(&cdv, &bdv, t, &format!("{what}: d/dvalues"));
            assert_close(
                &host(cgrads.get(&cx).unwrap()),
                &bhost(bx.grad(&bgrads).unwrap()),
                t,
                &format!("{what}: d/dX"),
            );
            if beta != 0.0 {
                assert_close(
                    &host(cgrads.get(&ci).unwrap()),
                    &bhost(bi.grad(&bgrads).unwrap()),
                    t,
                    &format!("{what}: d/dinput"),
                );
            }
        }
    });
}

#[test]
fn sampled_addmm_matches_burn() {
    each(22, |case, layout, dtype, rng| {
        let what = format!("{} {layout} {dtype:?}", case.name);
        let [m, n] = case.shape;
        let d = 5;
        let (m1, m2) = (rng.values(m * d), rng.values(d * n));
        let t = ptol(dtype);

        let bv = bt(&case.values, [case.nnz()], dtype).require_grad();
        let (b1, b2) = (bt(&m1, [m, d], dtype).require_grad(), bt(&m2, [d, n], dtype).require_grad());
        let bout = bmat::sampled_addmm(&burn_sparse(case, layout, bv.clone()), b1.clone(), b2.clone(), 0.25, -1.5);
        let nnz_out = bout.nnz();
        let ws = rng.values(nnz_out);
        let bvals = bout.values_flat().reshape([nnz_out]);
        let bgrads = (bvals.clone() * bt(&ws, [nnz_out], dtype)).sum().backward();

        let cv = Var::from_tensor(&tensor(&case.values, &[case.nnz()], dtype)).unwrap();
        let (c1, c2) = (
            Var::from_tensor(&tensor(&m1, &[m, d], dtype)).unwrap(),
            Var::from_tensor(&tensor(&m2, &[d, n], dtype)).unwrap(),
        );
        let cout = sc::sampled_addmm(
            &candle_sparse(case, layout, cv.as_tensor().clone()),
            c1.as_tensor(),
            c2.as_tensor(),
            0.25,
            -1.5,
        )
        .unwrap();
        assert_eq!(cout.nnz(), nnz_out, "{what}: nnz");
        let cgrads = (cout.values() * tensor(&ws, &[nnz_out], dtype)).unwrap().sum_all().unwrap().backward().unwrap();

        assert_close(&host(cout.values()), &bhost(bvals), t, &format!("{what}: values"));
        let (bc, cc) = (
            bout.crow_indices::<1>().unwrap().into_data().iter::<i64>().collect::<Vec<_>>(),
            cout.crow_indices().unwrap().to_vec1::<i64>().unwrap(),
        );
        assert_eq!(cc, bc, "{what}: crow_indices");
        let bdv = bv.grad(&bgrads).map(bhost).unwrap_or_default();
        let cdv = cgrads.get(&cv).map(host).unwrap_or_default();
        assert_eq!(cdv.len(), case.nnz(), "{what}: a gradient for every stored value");
        assert_close(&cdv, &bdv, t, &format!("{what}: d/dinput"));
        // With no stored entries neither side records a gradient for the dense operands (candle's
        // binary ops return an empty left operand as is, dropping the right one from the graph):
        // absent means zero.
        let or_zeros = |g: Option<Vec<f64>>, n: usize| g.unwrap_or_else(|| vec![0.0; n]);
        let (bd1, bd2) = (or_zeros(b1.grad(&bgrads).map(bhost), m * d), or_zeros(b2.grad(&bgrads).map(bhost), d * n));
        let (cd1, cd2) = (or_zeros(cgrads.get(&c1).map(host), m * d), or_zeros(cgrads.get(&c2).map(host), d * n));
        assert_close(&cd1, &bd1, t, &format!("{what}: d/dmat1"));
        assert_close(&cd2, &bd2, t, &format!("{what}: d/dmat2"));
    });
}

#[test]
fn softmax_and_log_softmax_match_burn() {
    each(23, |case, layout, dtype, rng| {
        for (dim, log) in [(1, false), (1, true), (0, false), (0, true)] {
            let what = format!("{} {layout} {dtype:?} dim {dim} log {log}", case.name);
            let t = ptol(dtype);
            let bv = bt(&case.values, [case.nnz()], dtype).require_grad();
            let bs = burn_sparse(case, layout, bv.clone());
            let bout = if log { bsoft::log_softmax(&bs, dim) } else { bsoft::softmax(&bs, dim) };
            let nnz_out = bout.nnz();
            let ws = rng.values(nnz_out);
            let bvals = bout.values_flat().reshape([nnz_out]);
            let bgrads = (bvals.clone() * bt(&ws, [nnz_out], dtype)).sum().backward();

            let cv = Var::from_tensor(&tensor(&case.values, &[case.nnz()], dtype)).unwrap();
            let cs = candle_sparse(case, layout, cv.as_tensor().clone());
            let cout = if log { sc::log_softmax(&cs, dim) } else { sc::softmax(&cs, dim) }.unwrap();
            assert_eq!(cout.nnz(), nnz_out, "{what}: nnz");
            let cgrads =
                (cout.values() * tensor(&ws, &[nnz_out], dtype)).unwrap().sum_all().unwrap().backward().unwrap();

            assert_close(&host(cout.values()), &bhost(bvals), t, &format!("{what}: values"));
            let bdv = bv.grad(&bgrads).map(bhost).unwrap_or_default();
            let cdv = cgrads.get(&cv).map(host).unwrap_or_default();
            assert_eq!(cdv.len(), case.nnz(), "{what}: a gradient for every stored value");
            assert_close(&cdv, &bdv, t, &format!("{what}: d/dvalues"));
        }
    });
}
