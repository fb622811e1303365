//! `mm_reduce` (torch's `sparse.mm(a, x, reduce=)`): sum, mean, amax and amin over the stored
//! entries of each row, against a dense reference computed with burn's dense ops (the products
//! `a_ij x_jc` of a `[m, k, n]` broadcast, masked to the stored entries) on every layout,
//! including explicit zeros stored in blocks, empty rows, an operand without entries and
//! uncoalesced COO; and gradcheck (f64) of every reduction on every layout w.r.t. the sparse
//! values and `x` (inputs without ties for amax and amin).

use crate::common_ops;

use burn::tensor::{DType, Tensor};
use common_ops::{dense, f64s, flat, floats, gradcheck_all, layouts_2d, matrix, rebuild, Rng};
use sparsegrad::gradcheck::GradInput;
use sparsegrad::prelude::*;
use sparsegrad::sparse::{self as sp, Reduce};

const REDUCES: [Reduce; 4] = [Reduce::Sum, Reduce::Mean, Reduce::Amax, Reduce::Amin];

/// The reduction from its definition with burn's dense ops: `a [m, k]`, `stored [m, k]` (1 where
/// the operand stores an entry), `x [k, n]`.
fn reference(a: Tensor<2>, stored: Tensor<2>, x: Tensor<2>, reduce: Reduce) -> Tensor<2> {
    let products = a.unsqueeze_dim::<3>(2) * x.unsqueeze_dim::<3>(0); // [m, k, n]
    let n = products.dims()[2];
    let mask = stored.clone().unsqueeze_dim::<3>(2).repeat_dim(2, n).greater_elem(0.5);
    let count = stored.sum_dim(1); // [m, 1]
    let empty = count.clone().equal_elem(0.0);
    let out = match reduce {
        Reduce::Sum => products.mask_fill(mask.bool_not(), 0.0).sum_dim(1).squeeze_dim::<2>(1),
        Reduce::Mean => products.mask_fill(mask.bool_not(), 0.0).sum_dim(1).squeeze_dim::<2>(1) / count.clamp_min(1.0),
        Reduce::Amax => products.mask_fill(mask.bool_not(), f64::NEG_INFINITY).max_dim(1).squeeze_dim::<2>(1),
        Reduce::Amin => products.mask_fill(mask.bool_not(), f64::INFINITY).min_dim(1).squeeze_dim::<2>(1),
    };
    let [m, n] = out.dims();
    out.mask_fill(empty.repeat_dim(1, n).reshape([m, n]), 0.0)
}

/// 1 where `s` stores an entry (after coalescing: duplicates are one entry).
fn stored(s: &SparseTensor<2>) -> Tensor<2> {
    let c = s.to_sparse_coo().coalesce();
    c.with_values(c.values_flat().ones_like()).to_dense()
}

#[test]
fn matches_the_dense_reference_on_every_layout() {
    let mut rng = Rng(61);
    let (m, k, n) = (4, 6, 3);
    let main = matrix(m, k, 0.5, &[1], &[2], &mut rng);
    for (which, data) in [("main", main), ("empty", vec![0.0; m * k])] {
        let a = dense(&data, [m, k], DType::F64);
        let x = dense(&rng.values(k * n), [k, n], DType::F64);
        for (name, s) in layouts_2d(&a) {
            let mask = stored(&s);
            for reduce in REDUCES {
                let got = floats(sp::mm_reduce(&s, x.clone(), reduce));
                let want = floats(reference(s.to_dense(), mask.clone(), x.clone(), reduce));
                common_ops::assert_near(&got, &want, 1e-12, &format!("{which} {name} {reduce:?}"));
            }
        }
    }
    // f32, and no output columns.
    let a = dense(&matrix(m, k, 0.5, &[], &[], &mut rng), [m, k], DType::F32);
    let s = a.clone().to_sparse_csr().unwrap();
    let x = dense(&rng.values(k * n), [k, n], DType::F32);
    for reduce in REDUCES {
        let got = floats(sp::mm_reduce(&s, x.clone(), reduce));
        let want = floats(reference(a.clone(), stored(&s), x.clone(), reduce));
        common_ops::assert_near(&got, &want, 1e-5, &format!("f32 {reduce:?}"));
        assert_eq!(sp::mm_reduce(&s, dense(&[], [k, 0], DType::F32), reduce).dims(), [m, 0]);
    }
}

#[test]
fn ties_go_to_the_first_entry_and_mean_counts_stored_zeros() {
    // Row 0 stores 2, 2 and an explicit 0 (a BSR block), x = ones: amax 2 from entry 0.
    let a = dense(&[2.0, 2.0, 0.0, 0.0, 0.0, 0.0], [2, 3], DType::F64);
    let s = a.to_sparse_bsr([1, 3]).unwrap();
    let x = dense(&[1.0; 3], [3, 1], DType::F64);
    assert_eq!(floats(sp::mm_reduce(&s, x.clone(), Reduce::Mean)), [4.0 / 3.0, 0.0]);
    assert_eq!(floats(sp::mm_reduce(&s, x.clone(), Reduce::Amin)), [0.0, 0.0]);
    // The gradient of a tie reaches the first entry only.
    let ad_s = f64s(&[2.0, 2.0, 0.0, 0.0, 0.0, 0.0], [2, 3]).to_sparse_bsr([1, 3]).unwrap();
    let v = ad_s.values_flat().require_grad();
    let out = sp::mm_reduce(&ad_s.with_values(v.clone()), f64s(&[1.0; 3], [3, 1]), Reduce::Amax);
    let grads = out.sum().backward();
    let g = floats(v.grad(&grads).unwrap().reshape([-1]));
    assert_eq!(g, [1.0, 0.0, 0.0]);
}

#[test]
fn shape_errors_are_reported() {
    let s = dense(&[1.0; 6], [2, 3], DType::F64).to_sparse_csr().unwrap();
    let err = sp::try_mm_reduce(&s, dense(&[1.0; 4], [4, 1], DType::F64), Reduce::Amax).unwrap_err();
    assert!(err.to_string().contains("[2, 3]") && err.to_string().contains("[4, 1]"), "{err}");
}

#[test]
fn gradcheck_every_reduce_and_layout() {
    let mut rng = Rng(67);
    let (m, k, n) = (4, 6, 3);
    // Whole 2 x 2 blocks (so blocked layouts store no zeros that could tie), block row 1 empty.
    let mut data = vec![0.0; m * k];
    for (br, bc) in [(0, 0), (0, 2)] {
        for i in 0..2 {
            for j in 0..2 {
                data[(2 * br + i) * k + 2 * bc + j] = rng.value();
            }
        }
    }
    let a = f64s(&data, [m, k]);
    let x = f64s(&rng.values(k * n), [k, n]);
    for (name, s) in layouts_2d(&a) {
        for reduce in REDUCES {
            gradcheck_all(
                &format!("mm_reduce {reduce:?} {name}"),
                |v| flat(sp::mm_reduce(&rebuild(&s, &v[0]), v[1].clone().reshape([k, n]), reduce)),
                &[GradInput::sparse("values", &s), GradInput::dense("x", &x)],
            );
        }
    }
}

/// amax and amin on the test device against Flex (a Cube device runs the extremes and both
/// gradients in kernels): a hub row, empty rows, ties, NaN in `x` (a NaN wins over a number and
/// keeps its place), f32 with i32 indices; the outputs and the gradients of `sum(out * W)`
/// w.r.t. the values and `x` equal bit for bit.
#[test]
fn extremes_and_their_gradients_match_flex() {
    let mut rng = Rng(23);
    let (m, k, n) = (60, 200, 9);
    let mut a = matrix(m, k, 0.04, &[3, 17], &[], &mut rng);
    for v in &mut a[..k] {
        *v = rng.value(); // row 0: every column
    }
    a[5 * k + 1] = 2.0;
    a[5 * k + 2] = 2.0; // row 5: equal values over equal rows of x: ties
    let mut x: Vec<f64> = (0..k * n).map(|_| rng.value()).collect();
    let row2 = x[2 * n..3 * n].to_vec();
    x[n..2 * n].copy_from_slice(&row2);
    x[40 * n + 3] = f64::NAN;
    let w: Vec<f64> = (0..m * n).map(|_| rng.value()).collect();
    for reduce in [Reduce::Amax, Reduce::Amin] {
        let on = |device: &burn::tensor::Device| {
            let ad = device.clone().autodiff();
            let spec = SparseSpec { index_dtype: DType::I32, ..SparseSpec::new(Layout::Csr) };
            let s = common_ops::dense_on(&a, [m, k], DType::F32, &ad).to_sparse_with(spec).unwrap().require_grad();
            let xt = common_ops::dense_on(&x, [k, n], DType::F32, &ad).require_grad();
            let out = sp::mm_reduce(&s, xt.clone(), reduce);
            let grads = (out.clone() * common_ops::dense_on(&w, [m, n], DType::F32, &ad)).sum().backward();
            let bits = |v: Vec<f64>| v.into_iter().map(f64::to_bits).collect::<Vec<_>>();
            (
                bits(floats(out.inner())),
                bits(floats(s.values_flat().grad(&grads).unwrap())),
                bits(floats(xt.grad(&grads).unwrap())),
            )
        };
        let (got, want) = (on(&common_ops::dev()), on(&burn::tensor::Device::flex()));
        assert_eq!(got, want, "{reduce:?}");
    }
}
