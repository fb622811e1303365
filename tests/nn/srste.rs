//! SrsteLinear (SR-STE, 2:4 from scratch): the forward against the dense product with the
//! pruned master weight, the master weight's gradient against its definition
//! `g(W̃) + λ (1 − mask) ⊙ W` computed by hand with dense ops, the straight-through part against
//! central differences of the loss as a function of the pruned weight (every position) and of
//! the layer itself where the mask holds (the kept positions), gradcheck of the input and the
//! bias, an SGD step that is exactly the paper's update, the deployable layer computing the same
//! forward, a record round trip, and the errors.

use crate::common_ops;

use crate::common_ops::gradcheck;
use burn::module::{Module, Param};
use burn::optim::{GradientsParams, SgdConfig};
use burn::store::ModuleRecord;
use burn::tensor::{Bool, DType, Device, Tensor, TensorData};
use common_ops::{assert_close, assert_close_f32, f32s, floats, input, train, Layer, Net, Rng};
use sparsegrad::gradcheck::{GradInput, GradcheckOptions};
use sparsegrad::nn::{n_m_mask, prune_2_4, SrsteLinear, SrsteLinearConfig};
use sparsegrad::sparse::semi_structured::{srste_linear, try_srste_linear};
use sparsegrad::{SemiPattern, SemiStructuredTensor};
use std::panic::{catch_unwind, AssertUnwindSafe};

const ROWS: usize = 3;
const COLS: usize = 8;
const N: usize = 5;

fn t64<const D: usize>(v: &[f64], shape: [usize; D], device: &Device) -> Tensor<D> {
    Tensor::from_data(TensorData::new(v.to_vec(), shape), (device, DType::F64))
}

/// A master weight whose magnitudes within each group of four are at least 0.05 apart (so a
/// perturbation of 1e-6 never changes the mask), signs mixed; and the input, the bias and the
/// weights `R` of the loss `sum(tanh(y) ⊙ R)`.
fn data() -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut rng = Rng(11);
    let mut w = Vec::with_capacity(ROWS * COLS);
    for g in 0..ROWS * COLS / 4 {
        // A permutation of four distinct magnitudes per group.
        let perm = [[0, 1, 2, 3], [3, 1, 0, 2], [2, 0, 3, 1], [1, 3, 2, 0], [0, 2, 1, 3], [3, 2, 1, 0]][g % 6];
        for p in perm {
            let sign = if rng.below(2) == 0 { -1.0 } else { 1.0 };
            w.push(sign * (0.2 + 0.25 * p as f64 + 0.01 * rng.unit()));
        }
    }
    let x = (0..N * COLS).map(|_| rng.range(-1.0, 1.0)).collect();
    let b = (0..ROWS).map(|_| rng.range(-0.5, 0.5)).collect();
    let r = (0..N * ROWS).map(|_| rng.range(-1.0, 1.0)).collect();
    (w, x, b, r)
}

fn layer(w: &[f64], b: &[f64], decay: f64, device: &Device) -> SrsteLinear {
    SrsteLinear {
        weight: Param::from_tensor(t64(w, [ROWS, COLS], device)),
        bias: Some(Param::from_tensor(t64(b, [ROWS], device))),
        decay,
    }
}

/// `sum(tanh(x · wᵀ + b) ⊙ r)` with burn's dense ops, `w` any dense weight.
fn dense_loss(w: Tensor<2>, x: &Tensor<2>, b: &Tensor<1>, r: &Tensor<2>) -> f64 {
    let y = x.clone().matmul(w.transpose()) + b.clone().unsqueeze::<2>();
    (y.tanh() * r.clone()).sum().into_scalar::<f64>()
}

#[test]
fn forward_is_the_pruned_dense_product_and_deploys_unchanged() {
    let _serial = common_ops::serial();
    let device = crate::common_ops::dev();
    device.seed(3);
    // 300 inputs: a partial metadata word (300 = 18 * 16 + 12).
    let layer = SrsteLinearConfig::new(300, 7).init(&device);
    assert_eq!((layer.d_output(), layer.d_input(), layer.decay), (7, 300, 2e-4));
    let x = input(9, 300, &device);
    let pruned = prune_2_4(layer.weight.val()).unwrap();
    let expected = x.clone().matmul(pruned.clone().transpose()) + layer.bias.as_ref().unwrap().val().unsqueeze::<2>();
    let y = layer.forward(x.clone());
    assert_close_f32(&f32s(y.clone()), &f32s(expected), 1e-5);
    // The deployable layer: the same kept values through the same kernel.
    let deployed = layer.to_semi_structured().unwrap();
    assert_eq!(f32s(deployed.weight().to_dense()), f32s(pruned.clone()));
    assert_eq!(f32s(deployed.forward(x)), f32s(y));
    // The mask is the 2:4 magnitude mask of the master weight, and the pruned weight holds it.
    let mask = layer.mask().unwrap();
    assert_eq!(mask.clone().int().sum().into_scalar::<i64>(), 7 * 150);
    let masked = layer.weight.val().mask_fill(mask.bool_not(), 0.0);
    assert_eq!(f32s(masked), f32s(pruned));
    // A 3-D input keeps its leading dims, an empty batch gives an empty output.
    let x3: Tensor<3> = input(6, 300, &device).reshape([2, 3, 300]);
    assert_eq!(layer.forward(x3).dims(), [2, 3, 7]);
    assert_eq!(layer.forward(Tensor::<2>::zeros([0, 300], &device)).dims(), [0, 7]);
    // Without a bias.
    let nobias = SrsteLinearConfig::new(8, 3).with_bias(false).init(&device);
    let x = input(4, 8, &device);
    let expected = x.clone().matmul(prune_2_4(nobias.weight.val()).unwrap().transpose());
    assert_close_f32(&f32s(nobias.forward(x)), &f32s(expected), 1e-5);
}

#[test]
fn gradient_is_straight_through_plus_sparse_refined_decay() {
    let _serial = common_ops::serial();
    let (w, x, b, r) = data();
    let decay = 0.1;
    let ad = crate::common_ops::ad();
    let l = layer(&w, &b, decay, &ad);
    let xt = t64(&x, [N, COLS], &ad).require_grad();
    let loss = (l.forward(xt.clone()).tanh() * t64(&r, [N, ROWS], &ad)).sum();
    let grads = loss.backward();
    let gw = l.weight.val().grad(&grads).unwrap();
    let gb = l.bias.as_ref().unwrap().val().grad(&grads).unwrap();
    let gx = xt.grad(&grads).unwrap();

    // By hand with dense ops: y = x W̃ᵀ + b, G = R ⊙ (1 − tanh(y)²), g = Gᵀ x.
    let dev = crate::common_ops::dev();
    let wd = t64(&w, [ROWS, COLS], &dev);
    let pruned = prune_2_4(wd.clone()).unwrap();
    let (xd, bd, rd) = (t64(&x, [N, COLS], &dev), t64(&b, [ROWS], &dev), t64(&r, [N, ROWS], &dev));
    let y = xd.clone().matmul(pruned.clone().transpose()) + bd.unsqueeze::<2>();
    let th = y.tanh();
    let g_out = rd * (th.clone() * th).neg().add_scalar(1.0);
    let g = g_out.clone().transpose().matmul(xd);
    let keep: Tensor<2, Bool> = n_m_mask(&wd, 2, 4).unwrap();
    let decay_term = wd.mask_fill(keep.clone(), 0.0).mul_scalar(decay);
    let expected = g.clone() + decay_term.clone();
    assert_close(&floats(gw.clone()), &floats(expected), 1e-12, "master weight gradient");
    assert_close(&floats(gb), &floats(g_out.clone().sum_dim(0).reshape([ROWS])), 1e-12, "bias gradient");
    assert_close(&floats(gx), &floats(g_out.matmul(pruned)), 1e-12, "input gradient");

    // An empty batch: no loss gradient, the decay alone.
    let loss = l.forward(Tensor::<2>::zeros([0, COLS], (&ad, DType::F64))).sum();
    let gw0 = l.weight.val().grad(&loss.backward()).unwrap();
    assert_close(&floats(gw0), &floats(decay_term.clone()), 1e-12, "empty batch");

    // The pruned positions get g (straight through) plus the decay: both parts are there.
    let (gw, g, d, kept) =
        (floats(gw), floats(g), floats(decay_term), keep.into_data().iter::<bool>().collect::<Vec<_>>());
    for i in 0..ROWS * COLS {
        assert!(g[i] != 0.0, "position {i}: no straight-through gradient");
        if kept[i] {
            assert_eq!(d[i], 0.0, "position {i}: a kept weight is not decayed");
        } else {
            assert!(d[i] != 0.0 && (gw[i] - g[i]).abs() > 1e-3, "position {i}: the pruned weight is decayed");
        }
    }
}

#[test]
fn straight_through_part_matches_central_differences() {
    let _serial = common_ops::serial();
    let (w, x, b, r) = data();
    let ad = crate::common_ops::ad();
    // g(W̃) alone: the layer with decay 0.
    let l = layer(&w, &b, 0.0, &ad);
    let loss = (l.forward(t64(&x, [N, COLS], &ad)).tanh() * t64(&r, [N, ROWS], &ad)).sum();
    let ste = floats(l.weight.val().grad(&loss.backward()).unwrap());

    let dev = crate::common_ops::dev();
    let (xd, bd, rd) = (t64(&x, [N, COLS], &dev), t64(&b, [ROWS], &dev), t64(&r, [N, ROWS], &dev));
    let eps = 1e-6;
    // The loss as a function of the pruned weight: its derivative at every position (kept or
    // pruned) is what the straight-through estimator hands to the master weight.
    let pruned: Vec<f64> = floats(prune_2_4(t64(&w, [ROWS, COLS], &dev)).unwrap());
    let bumped = |base: &[f64], i: usize, h: f64| {
        let mut v = base.to_vec();
        v[i] += h;
        t64(&v, [ROWS, COLS], &dev)
    };
    let numeric: Vec<f64> = (0..ROWS * COLS)
        .map(|i| {
            (dense_loss(bumped(&pruned, i, eps), &xd, &bd, &rd) - dense_loss(bumped(&pruned, i, -eps), &xd, &bd, &rd))
                / (2.0 * eps)
        })
        .collect();
    assert_close(&ste, &numeric, 1e-7, "g(W̃) against central differences");

    // The layer itself, with its decay, perturbed at the kept positions of the master weight
    // (the mask does not change there: checked): its true derivative, equal to its gradient
    // since the decay is zero on kept weights.
    let decayed = layer(&w, &b, 2e-4, &ad);
    let loss = (decayed.forward(t64(&x, [N, COLS], &ad)).tanh() * t64(&r, [N, ROWS], &ad)).sum();
    let grad = floats(decayed.weight.val().grad(&loss.backward()).unwrap());
    let mask0: Vec<bool> = layer(&w, &b, 2e-4, &dev).mask().unwrap().into_data().iter::<bool>().collect();
    let layer_loss = |v: Tensor<2>| {
        let l = SrsteLinear { weight: Param::from_tensor(v), bias: Some(Param::from_tensor(bd.clone())), decay: 2e-4 };
        let mask: Vec<bool> = l.mask().unwrap().into_data().iter::<bool>().collect();
        assert_eq!(mask, mask0, "the perturbation changed the mask");
        (l.forward(xd.clone()).tanh() * rd.clone()).sum().into_scalar::<f64>()
    };
    let mut checked = 0;
    for i in (0..ROWS * COLS).filter(|&i| mask0[i]) {
        let fd = (layer_loss(bumped(&w, i, eps)) - layer_loss(bumped(&w, i, -eps))) / (2.0 * eps);
        assert!((grad[i] - fd).abs() <= 1e-7 * (1.0 + fd.abs()), "kept position {i}: {} vs {fd}", grad[i]);
        checked += 1;
    }
    assert_eq!(checked, ROWS * COLS / 2);
}

#[test]
fn gradcheck_input_and_bias() {
    let _serial = common_ops::serial();
    let (w, x, b, _) = data();
    let dev = crate::common_ops::dev();
    let pattern =
        SemiStructuredTensor::from_dense(prune_2_4(t64(&w, [ROWS, COLS], &dev)).unwrap(), SemiPattern::TwoFour)
            .unwrap();
    let f = |t: &[Tensor<1>]| -> Tensor<1> {
        let d = t[0].device();
        let y =
            srste_linear(t[0].clone().reshape([N, COLS]), t64(&w, [ROWS, COLS], &d), &pattern, 0.3, Some(t[1].clone()));
        y.tanh().reshape([N * ROWS])
    };
    let inputs = [GradInput { name: "x".into(), values: x }, GradInput { name: "bias".into(), values: b }];
    let report = gradcheck(f, &inputs, GradcheckOptions::default()).unwrap();
    assert_eq!(report.checked, N * COLS + ROWS);
}

#[test]
fn sgd_step_is_the_papers_update_and_regrows_pruned_weights() {
    let _serial = common_ops::serial();
    let (w, x, b, r) = data();
    let ad = crate::common_ops::ad();
    let decay = 0.05;
    let lr = 0.5;
    let model = layer(&w, &b, decay, &ad);
    let loss = (model.forward(t64(&x, [N, COLS], &ad)).tanh() * t64(&r, [N, ROWS], &ad)).sum();
    let grads = GradientsParams::from_grads(loss.backward(), &model);
    let mut optim = SgdConfig::new().init();
    let stepped = optim.step(lr, model.clone(), grads);

    let dev = crate::common_ops::dev();
    let wd = t64(&w, [ROWS, COLS], &dev);
    let (xd, bd, rd) = (t64(&x, [N, COLS], &dev), t64(&b, [ROWS], &dev), t64(&r, [N, ROWS], &dev));
    let pruned = prune_2_4(wd.clone()).unwrap();
    let th = (xd.clone().matmul(pruned.transpose()) + bd.unsqueeze::<2>()).tanh();
    let g = (rd * (th.clone() * th).neg().add_scalar(1.0)).transpose().matmul(xd);
    let keep = n_m_mask(&wd, 2, 4).unwrap();
    let expected = wd.clone() - (g + wd.clone().mask_fill(keep, 0.0).mul_scalar(decay)).mul_scalar(lr);
    assert_close(&floats(stepped.weight.val().inner()), &floats(expected), 1e-12, "W after one SGD step");
    // Every weight moved, the pruned ones included.
    let (before, after) = (w, floats(stepped.weight.val().inner()));
    assert!(before.iter().zip(&after).all(|(a, b)| a != b), "{before:?}\n{after:?}");
}

impl Layer for SrsteLinear {
    fn apply(&self, x: Tensor<2>) -> Tensor<2> {
        self.forward(x)
    }
}

#[test]
fn adam_training_from_the_config_lowers_the_loss() {
    let _serial = common_ops::serial();
    let device = crate::common_ops::ad();
    device.seed(5);
    let init =
        || Net { l0: SrsteLinearConfig::new(20, 16).init(&device), l1: SrsteLinearConfig::new(16, 4).init(&device) };
    let model = init();
    let teacher = init();
    let x = input(32, 20, &device);
    let target = teacher.forward(x.clone()).detach();
    let before = f32s(model.l0.weight.val());
    let (model, first, last) = train(model, &x, &target);
    assert!(last < first / 3.0, "loss {first} -> {last}");
    // Dense master weights: every one of them trained, the pruned ones included.
    let after = f32s(model.l0.weight.val());
    assert!(before.iter().zip(&after).all(|(a, b)| a != b), "every master weight moved");
    // A layer from a dense `Linear` on the autodiff device is trainable too.
    let dense = burn::nn::LinearConfig::new(8, 2).init(&device);
    let l = SrsteLinear::from_linear(&dense, 2e-4).unwrap();
    let loss = l.forward(input(3, 8, &device)).sum();
    assert!(l.weight.val().grad(&loss.backward()).is_some());
}

#[test]
fn record_round_trip_restores_the_master_weights() {
    let _serial = common_ops::serial();
    let device = crate::common_ops::dev();
    let config = SrsteLinearConfig::new(16, 5).with_decay(1e-3);
    device.seed(1);
    let layer = config.init(&device);
    let x = input(3, 16, &device);
    let expected = f32s(layer.forward(x.clone()));
    let bytes = layer.clone().into_record().into_bytes().unwrap();
    device.seed(2);
    let skeleton = config.init(&device);
    assert_ne!(f32s(skeleton.weight.val()), f32s(layer.weight.val()));
    let loaded = skeleton.load_record(ModuleRecord::from_bytes(bytes).unwrap());
    assert_eq!(f32s(loaded.weight.val()), f32s(layer.weight.val()));
    assert_eq!(loaded.decay, 1e-3);
    assert_eq!(f32s(loaded.forward(x)), expected);
}

#[test]
fn errors_name_the_problem() {
    let _serial = common_ops::serial();
    let device = crate::common_ops::dev();
    let err = SrsteLinearConfig::new(6, 3).try_init(&device).unwrap_err();
    assert!(err.to_string().contains("d_input = 6 is not a multiple of 4"), "{err}");
    let err = SrsteLinearConfig::new(8, 3).with_decay(f64::NAN).try_init(&device).unwrap_err();
    assert!(err.to_string().contains("decay NaN is not finite"), "{err}");
    let layer = SrsteLinearConfig::new(8, 3).init(&device);
    let result = catch_unwind(AssertUnwindSafe(|| layer.forward(input(2, 12, &device))));
    assert!(result.is_err(), "a wrong input width panics");

    let w = layer.weight.val();
    let pattern = layer.pruned_weight().unwrap();
    let e = try_srste_linear(input(2, 12, &device), w.clone(), &pattern, 0.0, None).unwrap_err();
    assert!(e.to_string().contains("does not end with the weight's 8 input features"), "{e}");
    let e = try_srste_linear(input(2, 8, &device), w.clone(), &pattern.t(), 0.0, None).unwrap_err();
    assert!(e.to_string().contains("transposed"), "{e}");
    let other = SrsteLinearConfig::new(8, 4).init(&device).pruned_weight().unwrap();
    let e = try_srste_linear(input(2, 8, &device), w.clone(), &other, 0.0, None).unwrap_err();
    assert!(e.to_string().contains("is not the weight's [3, 8]"), "{e}");
    let e = try_srste_linear(input(2, 8, &device), w.clone(), &pattern, f64::INFINITY, None).unwrap_err();
    assert!(e.to_string().contains("decay inf is not finite"), "{e}");
    let e = try_srste_linear(input(2, 8, &device), w, &pattern, 0.0, Some(Tensor::zeros([4], &device))).unwrap_err();
    assert!(e.to_string().contains("bias of shape [4] for 3 output features"), "{e}");
}
