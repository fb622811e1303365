//! Wanda: the calibration norms against hand-written loops, the unstructured and N:M masks
//! against a direct computation (scores by hand, per-row selection by repeated arg-max with
//! ties to the earlier position) on random weights with ties and a zero-activation column, the
//! per-row and per-group counts, the layers' forward against the dense forward of the masked
//! weight, and the errors.

use crate::common_ops;

use burn::nn::LinearConfig;
use burn::tensor::{Device, Tensor, TensorData};
use common_ops::{assert_close_f32, f32s, Rng};
use sparsegrad::nn::{
    wanda_mask, wanda_mask_n_m, wanda_semi_structured, SemiStructuredLinear, SparseLinear, WandaCalibration,
};
use sparsegrad::prelude::*;

const OUT: usize = 6;
const IN: usize = 16;

fn t2(v: &[f32], shape: [usize; 2], device: &Device) -> Tensor<2> {
    Tensor::from_data(TensorData::new(v.to_vec(), shape), device)
}

fn bools(t: Tensor<2, burn::tensor::Bool>) -> Vec<bool> {
    t.into_data().iter::<bool>().collect()
}

/// Random weights `[OUT, IN]` with ties: row 1 repeats its first group's magnitudes (with other
/// signs) in its second group, and columns 9 and 10 hold equal magnitudes in every row; and two
/// activation batches `[7, IN]`, `[5, IN]` with column 3 all zero, columns 4..8 copies of
/// columns 0..4 (so column 7 is zero too) and column 10 a copy of column 9.
fn data() -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut rng = Rng(23);
    let mut w: Vec<f32> = (0..OUT * IN).map(|_| rng.range(-1.0, 1.0) as f32).collect();
    for j in 0..4 {
        w[IN + 4 + j] = -w[IN + j];
    }
    for r in 0..OUT {
        w[r * IN + 10] = -w[r * IN + 9];
    }
    let mut batch = |rows: usize| {
        let mut x: Vec<f32> = (0..rows * IN).map(|_| rng.range(-2.0, 2.0) as f32).collect();
        for i in 0..rows {
            x[i * IN + 3] = 0.0;
            for j in 0..4 {
                x[i * IN + 4 + j] = x[i * IN + j];
            }
            x[i * IN + 10] = x[i * IN + 9];
        }
        x
    };
    let (x0, x1) = (batch(7), batch(5));
    (w, x0, x1)
}

/// `||X_j||₂` by hand over both batches.
fn norms_by_hand(batches: &[&[f32]]) -> Vec<f64> {
    let mut s = vec![0.0f64; IN];
    for x in batches {
        for (i, v) in x.iter().enumerate() {
            s[i % IN] += f64::from(*v) * f64::from(*v);
        }
    }
    s.into_iter().map(f64::sqrt).collect()
}

/// The `keep` largest of `scores` by repeated arg-max, ties to the earlier position.
fn select(scores: &[f64], keep: usize) -> Vec<bool> {
    let mut kept = vec![false; scores.len()];
    for _ in 0..keep {
        let mut best: Option<usize> = None;
        for (j, &s) in scores.iter().enumerate() {
            if !kept[j] && best.is_none_or(|b| s > scores[b]) {
                best = Some(j);
            }
        }
        kept[best.unwrap()] = true;
    }
    kept
}

fn scores_by_hand(w: &[f32], norms: &[f64]) -> Vec<f64> {
    w.iter().enumerate().map(|(i, v)| f64::from(v.abs()) * norms[i % IN]).collect()
}

#[test]
fn calibration_norms_are_the_column_norms() {
    let device = crate::common_ops::dev();
    let (_, x0, x1) = data();
    let mut c = WandaCalibration::new(IN);
    assert_eq!(c.norms(), vec![0.0; IN]);
    c.observe(&t2(&x0, [7, IN], &device)).unwrap();
    // A 3-D batch counts its leading dims as rows.
    c.observe(&t2(&x1, [5, IN], &device).reshape([1, 5, IN])).unwrap();
    c.observe(&Tensor::<2>::zeros([0, IN], &device)).unwrap();
    assert_eq!(c.samples(), 12);
    assert_eq!(c.norms(), norms_by_hand(&[&x0, &x1]));
    assert_eq!((c.norms()[3], c.norms()[7]), (0.0, 0.0));
    assert_eq!(c.norms()[9], c.norms()[10]);
    let err = c.observe(&Tensor::<2>::zeros([2, IN + 1], &device)).unwrap_err();
    assert!(err.to_string().contains("do not end in d_input = 16"), "{err}");
    assert_eq!(c.samples(), 12, "a refused batch adds nothing");
}

#[test]
fn unstructured_mask_matches_a_direct_computation() {
    let device = crate::common_ops::dev();
    let (w, x0, x1) = data();
    let norms = norms_by_hand(&[&x0, &x1]);
    let scores = scores_by_hand(&w, &norms);
    let weight = t2(&w, [OUT, IN], &device);
    for sparsity in [0.0, 0.25, 0.3, 0.5, 0.7, 0.9, 1.0] {
        let keep = IN - (sparsity * IN as f64).round() as usize;
        let expected: Vec<bool> = (0..OUT).flat_map(|r| select(&scores[r * IN..(r + 1) * IN], keep)).collect();
        let mask = bools(wanda_mask(&weight, &norms, sparsity).unwrap());
        assert_eq!(mask, expected, "sparsity {sparsity}");
        for r in 0..OUT {
            assert_eq!(mask[r * IN..(r + 1) * IN].iter().filter(|&&k| k).count(), keep, "sparsity {sparsity}, row {r}");
        }
        // The zero-activation columns score 0: kept only when a row keeps nearly everything.
        if keep <= IN - 2 {
            assert!((0..OUT).all(|r| !mask[r * IN + 3]), "sparsity {sparsity}: column 3 kept");
        }
    }
    // The tie of columns 9 and 10 (equal scores in every row) goes to column 9.
    for sparsity in [0.3, 0.5, 0.7] {
        let mask = bools(wanda_mask(&weight, &norms, sparsity).unwrap());
        assert!((0..OUT).all(|r| mask[r * IN + 9] || !mask[r * IN + 10]), "sparsity {sparsity}");
    }
}

#[test]
fn n_m_mask_matches_a_direct_computation() {
    let device = crate::common_ops::dev();
    let (w, x0, x1) = data();
    let norms = norms_by_hand(&[&x0, &x1]);
    let scores = scores_by_hand(&w, &norms);
    let weight = t2(&w, [OUT, IN], &device);
    for (n, m) in [(2, 4), (1, 4), (1, 2), (3, 4), (4, 8)] {
        let expected: Vec<bool> = scores.chunks(m).flat_map(|g| select(g, n)).collect();
        let mask = bools(wanda_mask_n_m(&weight, &norms, n, m).unwrap());
        assert_eq!(mask, expected, "{n}:{m}");
        assert!(mask.chunks(m).all(|g| g.iter().filter(|&&k| k).count() == n), "{n}:{m}: counts");
    }
    // Row 1's first two groups tie score for score: the same slots are kept in both.
    let mask = bools(wanda_mask_n_m(&weight, &norms, 2, 4).unwrap());
    assert_eq!(mask[IN..IN + 4], mask[IN + 4..IN + 8]);
    // Activations change the choice: a small weight on a loud feature beats larger ones.
    let small = t2(&[1.0, 2.0, 3.0, 4.0, 4.0, 3.0, 2.0, 1.0], [1, 8], &device);
    let loud = [10.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0];
    assert_eq!(
        bools(wanda_mask_n_m(&small, &loud, 2, 4).unwrap()),
        vec![true, false, false, true, true, true, false, false]
    );
}

#[test]
fn layers_compute_the_dense_forward_of_the_masked_weight() {
    let _serial = common_ops::serial();
    let device = crate::common_ops::dev();
    device.seed(4);
    let linear = LinearConfig::new(IN, OUT).init(&device);
    let (_, x0, x1) = data();
    let mut c = WandaCalibration::new(IN);
    c.observe(&t2(&x0, [7, IN], &device)).unwrap();
    c.observe(&t2(&x1, [5, IN], &device)).unwrap();
    let w = linear.weight.val().transpose(); // [OUT, IN]
    let bias = linear.bias.as_ref().unwrap().val();
    let x = t2(&x1, [5, IN], &device);
    let dense = |mask: burn::tensor::Tensor<2, burn::tensor::Bool>| {
        x.clone().matmul(w.clone().mask_fill(mask.bool_not(), 0.0).transpose()) + bias.clone().unsqueeze::<2>()
    };

    let sparse = SparseLinear::from_linear_wanda(&linear, &c, 0.75).unwrap();
    assert_eq!(sparse.nnz(), OUT * 4);
    let mask = wanda_mask(&w, &c.norms(), 0.75).unwrap();
    assert_eq!(f32s(sparse.weight().to_dense()), f32s(w.clone().mask_fill(mask.clone().bool_not(), 0.0)));
    assert_close_f32(&f32s(sparse.forward(x.clone())), &f32s(dense(mask)), 1e-5);

    let semi = wanda_semi_structured(&linear, &c).unwrap();
    let mask = wanda_mask_n_m(&w, &c.norms(), 2, 4).unwrap();
    assert_eq!(f32s(semi.weight().to_dense()), f32s(w.clone().mask_fill(mask.clone().bool_not(), 0.0)));
    assert_close_f32(&f32s(semi.forward(x.clone())), &f32s(dense(mask)), 1e-5);
    assert_eq!(f32s(semi.bias.as_ref().unwrap().val()), f32s(bias.clone()));

    // With every norm equal, Wanda is magnitude pruning per row.
    let flat = WandaCalibration::new(IN);
    let mut ones = flat.clone();
    ones.observe(&Tensor::<2>::ones([1, IN], &device)).unwrap();
    let by_magnitude = SemiStructuredLinear::from_linear(&linear).unwrap();
    assert_eq!(
        f32s(wanda_semi_structured(&linear, &ones).unwrap().weight().to_dense()),
        f32s(by_magnitude.weight().to_dense())
    );
}

#[test]
fn errors_name_the_problem() {
    let device = crate::common_ops::dev();
    let w = Tensor::<2>::ones([2, 8], &device);
    let norms = [1.0; 8];
    for s in [-0.1, 1.5, f64::NAN] {
        let e = wanda_mask(&w, &norms, s).unwrap_err();
        assert!(e.to_string().contains("is not in [0, 1]"), "{e}");
    }
    assert_eq!(
        wanda_mask(&w, &norms[..7], 0.5).unwrap_err(),
        SparseError::ShapeMismatch { component: "norms", expected: vec![8], actual: vec![7] }
    );
    for bad in [f64::NAN, f64::INFINITY, -1.0] {
        let mut n = norms;
        n[2] = bad;
        let e = wanda_mask_n_m(&w, &n, 2, 4).unwrap_err();
        assert!(e.to_string().contains(&format!("the norm of input feature 2 is {bad}")), "{e}");
    }
    let e = wanda_mask_n_m(&Tensor::<2>::ones([2, 6], &device), &[1.0; 6], 2, 4).unwrap_err();
    assert!(e.to_string().contains("not a multiple of the group size m = 4"), "{e}");
    let e = wanda_mask_n_m(&w, &norms, 3, 2).unwrap_err();
    assert!(e.to_string().contains("3:2 is not a pattern"), "{e}");

    let linear = LinearConfig::new(8, 3).init(&device);
    assert_eq!(
        SparseLinear::from_linear_wanda(&linear, &WandaCalibration::new(4), 0.5).unwrap_err(),
        SparseError::ShapeMismatch { component: "calibration", expected: vec![8], actual: vec![4] }
    );
    let e = SparseLinear::from_linear_wanda(&linear, &WandaCalibration::new(8), 2.0).unwrap_err();
    assert!(e.to_string().contains("sparsity 2 is not in [0, 1]"), "{e}");
    let odd = LinearConfig::new(6, 3).init(&device);
    let e = wanda_semi_structured(&odd, &WandaCalibration::new(6)).unwrap_err();
    assert!(e.to_string().contains("not a multiple of the group size m = 4"), "{e}");
}
