//! Patterns that change while training: `SparseLinear::rewire` against a hand-built pattern,
//! its refusals, the optimizer state carried across a change (compared with the state before
//! it and with a run without surgery), records of a rewired model, the GMP schedule against its
//! formula, SET's drop and regrowth, RigL's tiled top-k against a dense top-k of the dense
//! gradient, and the probe that yields `dL/dy`.

use crate::common_ops::{f32s, ints, serial};
use burn::module::{Module, ParamId};
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Distribution, Tensor, TensorData};
use sparsegrad::nn::sparse_training::rewire::GROWN;
use sparsegrad::nn::sparse_training::top_gradient_positions;
use sparsegrad::nn::{
    erdos_renyi_densities, load_rewired, rewire_optimizer, DropSchedule, GradualMagnitudePruning, RigLConfig,
    SetConfig, SparseLinear, SparseLinearConfig,
};
use sparsegrad::prelude::*;
use std::collections::HashMap;

/// A layer `[rows, cols]` with the given row-major positions and values `1, 2, 3, ...`.
fn layer_at(rows: usize, cols: usize, positions: &[usize], device: &Device) -> SparseLinear {
    let values: Vec<f32> = (1..=positions.len()).map(|v| v as f32).collect();
    let dense: Vec<f32> =
        (0..rows * cols).map(|p| positions.iter().position(|&q| q == p).map_or(0.0, |i| values[i])).collect();
    let w = Tensor::<2>::from_data(TensorData::new(dense, [rows, cols]), device);
    let crow_col = w.to_sparse_csr().unwrap();
    SparseLinear::from_weight(&crow_col, None).unwrap()
}

/// `(row-major position, value)` of every stored entry.
fn entries(layer: &SparseLinear) -> Vec<(usize, f32)> {
    let (crow, col, v) = (ints(layer.crow.val()), ints(layer.col.val()), f32s(layer.values.val()));
    let mut out = Vec::new();
    for r in 0..layer.d_output() {
        for e in crow[r] as usize..crow[r + 1] as usize {
            out.push((r * layer.d_input + col[e] as usize, v[e]));
        }
    }
    out
}

#[test]
fn rewire_drops_grows_and_keeps_values() {
    let _serial = serial();
    let device = crate::common_ops::dev();
    // 3 x 4, entries at 1, 2, 4, 7, 9, 11 with values 1..=6.
    let layer = layer_at(3, 4, &[1, 2, 4, 7, 9, 11], &device);
    let id = layer.values.id;
    // Drop entries 1 (position 2) and 4 (position 9); grow 0, 10 and 2 (a dropped one comes back).
    let init = Tensor::<1>::from_data(TensorData::new(vec![10.0f32, 20.0, 30.0], [3]), &device);
    let (new, rw) = layer.rewire(&[4, 1], &[0, 10, 2], Some(init)).unwrap();
    assert_eq!(entries(&new), vec![(0, 10.0), (1, 1.0), (2, 30.0), (4, 3.0), (7, 4.0), (10, 20.0), (11, 6.0)]);
    assert_eq!(rw.source(), &[GROWN, 0, GROWN, 2, 3, GROWN, 5]);
    assert_eq!((rw.old_nnz(), rw.new_nnz(), rw.kept(), rw.grown()), (6, 7, 4, 3));
    assert_eq!((new.values.id, rw.param), (id, id));
    new.check().unwrap();
    // Without init the grown entries are zero; nothing dropped or grown is the same layer.
    let (zero, _) = layer.rewire(&[], &[3], None).unwrap();
    assert_eq!(entries(&zero)[..3], [(1, 1.0), (2, 2.0), (3, 0.0)]);
    let (same, rw) = layer.rewire(&[], &[], None).unwrap();
    assert_eq!(entries(&same), entries(&layer));
    assert_eq!(rw.source(), &[0, 1, 2, 3, 4, 5]);
    // Everything dropped: an empty layer that still runs.
    let (empty, _) = layer.rewire(&[0, 1, 2, 3, 4, 5], &[], None).unwrap();
    assert_eq!(empty.nnz(), 0);
    let y = empty.forward(Tensor::<2>::ones([2, 4], &device));
    assert_eq!(f32s(y), vec![0.0; 6]);
}

#[test]
fn rewire_refuses_bad_requests_by_name() {
    let _serial = serial();
    let device = crate::common_ops::dev();
    let layer = layer_at(3, 4, &[1, 2, 4, 7, 9, 11], &device);
    let msg = |drop: &[usize], grow: &[usize], init: Option<Tensor<1>>| {
        layer.rewire(drop, grow, init).map(|_| ()).unwrap_err().to_string()
    };
    assert!(msg(&[6], &[], None).contains("drop[0] = 6 is not an entry"), "{}", msg(&[6], &[], None));
    assert!(msg(&[1, 1], &[], None).contains("drop[1] = 1 is listed twice"));
    assert!(msg(&[], &[12], None).contains("grow[0] = 12 is outside"));
    assert!(msg(&[], &[0, 0], None).contains("is listed twice"));
    assert!(msg(&[0], &[3, 2], None).contains("grow[1] = 2 (row 0, column 2) is stored and not dropped"));
    let wrong = Tensor::<1>::zeros([2], &device);
    assert!(msg(&[], &[0], Some(wrong)).contains("init is [2]"));
    let f64s = Tensor::<1>::zeros([1], (&device, burn::tensor::DType::F64));
    assert!(msg(&[], &[0], Some(f64s)).contains("F64"));
}

/// A one-layer regression model for the optimizer tests.
#[derive(Module, Debug)]
struct Model {
    layer: SparseLinear,
}

/// One Adam step on `mean((layer(x) - target)^2)`.
fn adam_step(model: Model, optim: &mut ModuleOptimizer, x: &Tensor<2>, target: &Tensor<2>) -> Model {
    let y = model.layer.forward(x.clone());
    let loss = (y - target.clone()).powf_scalar(2.0).mean();
    let grads = GradientsParams::from_grads(loss.backward(), &model);
    optim.step(1e-2, model, grads)
}

/// The per-entry state tensors of parameter `id` in the optimizer's record, by field name.
fn state_of(optim: &ModuleOptimizer, id: ParamId) -> HashMap<String, Vec<f32>> {
    let reader = burn_pack::Reader::from_bytes(optim.into_bytes().unwrap()).unwrap();
    let mut out = HashMap::new();
    for t in reader.into_tensors().unwrap() {
        if t.param_id == Some(id.val()) {
            let (name, dtype, shape, _, bytes) = t.into_parts().unwrap();
            let data = TensorData::from_bytes_vec(bytes.to_vec(), shape, dtype);
            out.insert(name.rsplit('.').next().unwrap().to_string(), data.iter::<f32>().collect());
        }
    }
    out
}

fn problem(device: &Device) -> (Tensor<2>, Tensor<2>) {
    device.seed(11);
    let x = Tensor::<2>::random([16, 12], Distribution::Normal(0.0, 1.0), device);
    let target = Tensor::<2>::random([16, 8], Distribution::Normal(0.0, 1.0), device);
    (x, target)
}

#[test]
fn surgery_carries_adam_moments_exactly() {
    let _serial = serial();
    let device = crate::common_ops::ad();
    let (x, target) = problem(&device);
    let layer = SparseLinearConfig::new(12, 8).with_density(0.3).with_seed(Some(5)).init(&device);
    let mut optim = AdamConfig::new().init();
    let mut model = Model { layer };
    for _ in 0..3 {
        model = adam_step(model, &mut optim, &x, &target);
    }
    let id = model.layer.values.id;
    let before = state_of(&optim, id);
    assert!(before.contains_key("moment_1") && before.contains_key("moment_2"), "{:?}", before.keys());
    assert!(before["moment_1"].iter().any(|&m| m != 0.0));
    // Drop 5 entries, grow 7 free positions.
    let (crow, col) = (ints(model.layer.crow.val()), ints(model.layer.col.val()));
    let stored: Vec<usize> = (0..8)
        .flat_map(|r| (crow[r]..crow[r + 1]).map(move |e| (r, e)))
        .map(|(r, e)| r * 12 + col[e as usize] as usize)
        .collect();
    let grow: Vec<usize> = (0..96).filter(|p| !stored.contains(p)).step_by(9).take(7).collect();
    let (layer, rw) = model.layer.rewire(&[0, 3, 4, 10, 20], &grow, None).unwrap();
    let optim2 = rewire_optimizer(optim.clone(), std::slice::from_ref(&rw)).unwrap();
    let after = state_of(&optim2, id);
    for field in ["moment_1", "moment_2"] {
        let expected: Vec<f32> = rw.source().iter().map(|&s| if s == GROWN { 0.0 } else { before[field][s] }).collect();
        assert_eq!(after[field], expected, "{field}");
    }
    // Training goes on with the remapped state.
    let mut optim2 = optim2;
    let model2 = adam_step(Model { layer }, &mut optim2, &x, &target);
    assert_eq!(model2.layer.nnz(), rw.new_nnz());
    // A rewiring of the wrong size is refused by name.
    let (_, other) = SparseLinearConfig::new(12, 8).init(&device).rewire(&[0], &[], None).unwrap();
    let mut wrong = other;
    wrong.param = id;
    let e = rewire_optimizer(optim, &[wrong]).err().unwrap().to_string();
    assert!(e.contains("moment_1") || e.contains("moment_2"), "{e}");
}

#[test]
fn growing_zeros_matches_a_run_without_surgery() {
    let _serial = serial();
    let device = crate::common_ops::ad();
    let (x, target) = problem(&device);
    let layer = SparseLinearConfig::new(12, 8).with_density(0.3).with_seed(Some(9)).init(&device);
    let run = |surgery: bool| {
        let mut optim = AdamConfig::new().init();
        let mut model = Model { layer: layer.clone() };
        for _ in 0..3 {
            model = adam_step(model, &mut optim, &x, &target);
        }
        let mut source = None;
        if surgery {
            // Zero entries change nothing the loss sees: the survivors' next step is the same.
            let stored: Vec<(usize, f32)> = entries(&model.layer);
            let grow: Vec<usize> = (0..96).filter(|p| !stored.iter().any(|s| s.0 == *p)).take(10).collect();
            let (layer, rw) = model.layer.rewire(&[], &grow, None).unwrap();
            optim = rewire_optimizer(optim, std::slice::from_ref(&rw)).unwrap();
            model = Model { layer };
            source = Some(rw);
        }
        model = adam_step(model, &mut optim, &x, &target);
        (f32s(model.layer.values.val()), source)
    };
    let (plain, _) = run(false);
    let (rewired, rw) = run(true);
    let rw = rw.unwrap();
    let survivors: Vec<f32> = rw.source().iter().zip(&rewired).filter(|(s, _)| **s != GROWN).map(|(_, v)| *v).collect();
    assert_eq!(survivors, plain);
}

/// Two sparse layers, for the record round trip.
#[derive(Module, Debug)]
struct Two {
    a: SparseLinear,
    b: SparseLinear,
}

#[test]
fn records_of_rewired_models_load() {
    let _serial = serial();
    let device = crate::common_ops::dev();
    let config_a = SparseLinearConfig::new(10, 6).with_density(0.5).with_seed(Some(1));
    let config_b = SparseLinearConfig::new(6, 3).with_density(0.5).with_seed(Some(2));
    let model = Two { a: config_a.init(&device), b: config_b.init(&device) };
    let (a, _) = model.a.rewire(&[0, 1, 2, 7], &[], None).unwrap();
    let free = (0..18).find(|p| !entries(&model.b).iter().any(|e| e.0 == *p)).unwrap();
    let (b, _) = model.b.rewire(&[], &[free], None).unwrap();
    let rewired = Two { a, b };
    let expected = (entries(&rewired.a), entries(&rewired.b));
    let bytes = rewired.into_record().into_bytes().unwrap();
    let fresh = || Two { a: config_a.init(&device), b: config_b.init(&device) };
    // burn's own loading refuses: the entry counts differ.
    let record = burn::store::ModuleRecord::from_bytes(bytes.clone()).unwrap();
    assert!(fresh().try_load_record(record).is_err());
    let record = burn::store::ModuleRecord::from_bytes(bytes).unwrap();
    let loaded = load_rewired(fresh(), record).unwrap();
    assert_eq!((entries(&loaded.a), entries(&loaded.b)), expected);
    loaded.a.check().unwrap();
    loaded.b.check().unwrap();
}

#[test]
fn gmp_follows_its_cubic_and_drops_the_smallest() {
    let _serial = serial();
    let device = crate::common_ops::dev();
    let gmp = GradualMagnitudePruning::new(0.9, 100, 500).with_frequency(50);
    for (t, s) in
        [(0, 0.0), (100, 0.0), (200, 0.9 - 0.9 * 0.75f64.powi(3)), (300, 0.9 - 0.9 * 0.125), (500, 0.9), (900, 0.9)]
    {
        assert!((gmp.sparsity_at(t) - s).abs() < 1e-12, "t = {t}: {} vs {s}", gmp.sparsity_at(t));
    }
    assert!(gmp.is_pruning_step(150) && !gmp.is_pruning_step(160) && !gmp.is_pruning_step(50));
    // A dense 4 x 5 layer with distinct magnitudes.
    device.seed(3);
    let w = Tensor::<2>::random([4, 5], Distribution::Normal(0.0, 1.0), &device);
    let layer = SparseLinear::from_weight(&w.clone().to_sparse().unwrap(), None).unwrap();
    assert_eq!(layer.nnz(), 20);
    assert!(gmp.step(160, &layer).unwrap().is_none());
    let (pruned, rw) = gmp.step(300, &layer).unwrap().unwrap();
    let keep = ((1.0 - gmp.sparsity_at(300)) * 20.0).round() as usize;
    assert_eq!(pruned.nnz(), keep);
    assert_eq!(rw.grown(), 0);
    // The kept entries are the largest magnitudes.
    let mut mags: Vec<f32> = f32s(w.reshape([20])).iter().map(|v| v.abs()).collect();
    mags.sort_by(|a, b| b.total_cmp(a));
    let mut kept: Vec<f32> = entries(&pruned).iter().map(|e| e.1.abs()).collect();
    kept.sort_by(|a, b| b.total_cmp(a));
    assert_eq!(kept, mags[..keep]);
    let e = GradualMagnitudePruning::new(1.5, 0, 10).step(0, &layer).unwrap_err();
    assert!(e.to_string().contains("final_sparsity = 1.5"), "{e}");
}

#[test]
fn set_replaces_the_smallest_at_free_positions() {
    let _serial = serial();
    let device = crate::common_ops::dev();
    for density in [0.1, 0.8] {
        let layer = SparseLinearConfig::new(20, 10).with_density(density).with_seed(Some(4)).init(&device);
        let mut set = SetConfig::new().with_seed(7).init().unwrap();
        let (new, rw) = set.update(&layer).unwrap();
        let k = (0.3 * layer.nnz() as f64).round() as usize;
        assert_eq!((new.nnz(), rw.grown(), rw.kept()), (layer.nnz(), k, layer.nnz() - k));
        new.check().unwrap();
        let old = entries(&layer);
        let mut mags: Vec<f32> = old.iter().map(|e| e.1.abs()).collect();
        mags.sort_by(|a, b| b.total_cmp(a));
        let mut kept: Vec<f32> = rw.source().iter().filter(|&&s| s != GROWN).map(|&s| old[s].1.abs()).collect();
        kept.sort_by(|a, b| b.total_cmp(a));
        assert_eq!(kept, mags[..layer.nnz() - k], "density {density}");
        // Grown entries are zero, at positions that were not kept.
        let kept_positions: Vec<usize> = rw.source().iter().filter(|&&s| s != GROWN).map(|&s| old[s].0).collect();
        for ((p, v), s) in entries(&new).iter().zip(rw.source()) {
            if *s == GROWN {
                assert_eq!(*v, 0.0);
                assert!(!kept_positions.contains(p));
            }
        }
        // The same seed draws the same positions.
        let (again, _) = SetConfig::new().with_seed(7).init().unwrap().update(&layer).unwrap();
        assert_eq!(entries(&again), entries(&new));
    }
    assert!(SetConfig::new().with_zeta(2.0).init().is_err());
}

#[test]
fn set_on_the_cosine_schedule_replaces_the_scheduled_fraction() {
    let _serial = serial();
    let device = crate::common_ops::dev();
    let schedule = DropSchedule::new(1000).with_drop_fraction(0.4).with_update_interval(100);
    // f_t = 0.4 / 2 (1 + cos(pi t / 1000)); updates at positive multiples of 100 below 1000.
    for step in [0, 50, 100, 150, 300, 900, 1000, 1200] {
        let expected =
            if step >= 1000 { 0.0 } else { 0.2 * (1.0 + (std::f64::consts::PI * step as f64 / 1000.0).cos()) };
        assert!((schedule.update_fraction(step) - expected).abs() < 1e-12, "step {step}");
        assert_eq!(schedule.is_update_step(step), step > 0 && step < 1000 && step % 100 == 0, "step {step}");
    }
    let layer = SparseLinearConfig::new(30, 20).with_density(0.2).with_seed(Some(2)).init(&device);
    let mut set = SetConfig::new().with_seed(1).init().unwrap();
    assert!(set.step(150, &schedule, &layer).unwrap().is_none());
    for step in [100, 500, 900] {
        let (new, rw) = set.step(step, &schedule, &layer).unwrap().expect("an update step");
        let k = (schedule.update_fraction(step) * layer.nnz() as f64).round() as usize;
        assert_eq!((new.nnz(), rw.grown(), rw.kept()), (layer.nnz(), k, layer.nnz() - k), "step {step}");
    }
    // The fraction is checked, and so are RigL's and the schedule's settings.
    let e = set.replace(&layer, 1.5).unwrap_err().to_string();
    assert!(e.contains("Set::replace") && e.contains("1.5"), "{e}");
    let e = RigLConfig::new(10).with_update_interval(0).init().unwrap_err().to_string();
    assert!(e.contains("update_interval"), "{e}");
    let e = RigLConfig::new(10).with_drop_fraction(-0.5).init().unwrap_err().to_string();
    assert!(e.contains("drop_fraction"), "{e}");
    // A schedule with no interval never updates rather than dividing by zero.
    assert!(!DropSchedule::new(10).with_update_interval(0).is_update_step(5));
}

#[test]
fn rigl_tiled_top_k_equals_the_dense_top_k() {
    let _serial = serial();
    let device = crate::common_ops::dev();
    device.seed(21);
    let (rows, cols, batch) = (13, 17, 6);
    let layer = SparseLinearConfig::new(cols, rows).with_density(0.25).with_seed(Some(8)).init(&device);
    let x = Tensor::<2>::random([batch, cols], Distribution::Normal(0.0, 1.0), &device);
    let g = Tensor::<2>::random([batch, rows], Distribution::Normal(0.0, 1.0), &device);
    let drop = [0usize, 5, 9];
    // Dense reference: |Gᵀ X| over the positions not kept, sorted best first.
    let dense: Vec<f32> = f32s(g.clone().transpose().matmul(x.clone()).reshape([rows * cols]));
    let kept: Vec<usize> =
        entries(&layer).iter().enumerate().filter(|(e, _)| !drop.contains(e)).map(|(_, e)| e.0).collect();
    let mut order: Vec<usize> = (0..rows * cols).filter(|p| !kept.contains(p)).collect();
    order.sort_by(|&a, &b| dense[b].abs().total_cmp(&dense[a].abs()).then(a.cmp(&b)));
    for k in [0, 1, 7, 40, rows * cols] {
        let mut expected: Vec<usize> = order.iter().take(k).copied().collect();
        expected.sort_unstable();
        for tile in [1, cols, 3 * cols + 2, 1 << 20] {
            let got = top_gradient_positions(&layer, &drop, x.clone(), g.clone(), k, tile).unwrap();
            assert_eq!(got, expected, "k = {k}, tile = {tile}");
        }
    }
    let e = top_gradient_positions(&layer, &drop, g.clone(), g, 3, 8).unwrap_err();
    assert!(e.to_string().contains("do not fit"), "{e}");
}

#[test]
fn rigl_update_follows_the_cosine_and_the_probe_gives_dl_dy() {
    let _serial = serial();
    let device = crate::common_ops::ad();
    let rigl = RigLConfig::new(1000).init().unwrap();
    assert!(rigl.is_update_step(100) && !rigl.is_update_step(0) && !rigl.is_update_step(150));
    assert!(!rigl.is_update_step(1000));
    assert!((rigl.update_fraction(0) - 0.3).abs() < 1e-12 && (rigl.update_fraction(500) - 0.15).abs() < 1e-12);
    assert_eq!(rigl.update_fraction(1000), 0.0);
    let (x, _) = problem(&device);
    let layer = SparseLinearConfig::new(12, 8).with_density(0.4).with_seed(Some(2)).init(&device);
    // loss = sum(y * c): dL/dy = c.
    let c = Tensor::<2>::random([16, 8], Distribution::Normal(0.0, 1.0), &device);
    let (y, probe) = layer.forward_probed(x.clone());
    assert_eq!(f32s(y.clone()), f32s(layer.forward(x.clone())));
    let grads = (y * c.clone()).sum().backward();
    let dy = probe.grad(&grads).unwrap();
    assert_eq!(f32s(dy.clone()), f32s(c));
    let (new, rw) = rigl.update(100, &layer, x.clone().inner(), dy.clone()).unwrap();
    let k = (rigl.update_fraction(100) * layer.nnz() as f64).round() as usize;
    assert_eq!((new.nnz(), rw.grown()), (layer.nnz(), k));
    // The grown positions are the top-k of the dense gradient among the free ones.
    let drop: Vec<usize> = (0..layer.nnz()).filter(|e| !rw.source().contains(e)).collect();
    let expected = top_gradient_positions(&layer, &drop, x.inner(), dy, k, 1 << 20).unwrap();
    let grown: Vec<usize> =
        entries(&new).iter().zip(rw.source()).filter(|(_, s)| **s == GROWN).map(|(e, _)| e.0).collect();
    assert_eq!(grown, expected);
}

#[test]
fn erdos_renyi_shares_the_budget_by_sum_over_product() {
    let shapes = [[300usize, 784], [100, 300], [10, 100]];
    let numel: Vec<f64> = shapes.iter().map(|s| (s[0] * s[1]) as f64).collect();
    let total: f64 = numel.iter().sum();
    for density in [0.02, 0.1, 0.3] {
        let d = erdos_renyi_densities(&shapes, density).unwrap();
        let kept: f64 = d.iter().zip(&numel).map(|(d, n)| d * n).sum();
        assert!((kept - density * total).abs() < 1e-6 * total, "{density}: kept {kept}");
        // Below the cap, density / (sum / product) is one constant.
        let eps: Vec<f64> =
            d.iter().zip(&shapes).map(|(d, s)| d * (s[0] * s[1]) as f64 / (s[0] + s[1]) as f64).collect();
        if d.iter().all(|&x| x < 1.0) {
            assert!((eps[0] - eps[1]).abs() < 1e-9 * eps[0] && (eps[0] - eps[2]).abs() < 1e-9 * eps[0], "{eps:?}");
        }
    }
    // At 30 % the 10 x 100 layer would pass 1: it is kept dense, the others share the rest.
    let d = erdos_renyi_densities(&shapes, 0.3).unwrap();
    assert_eq!(d[2], 1.0);
    let rest = 0.3 * total - numel[2];
    let eps = rest / (784.0 + 300.0 + 300.0 + 100.0);
    assert!((d[0] - eps * 1084.0 / 235_200.0).abs() < 1e-12 && (d[1] - eps * 400.0 / 30_000.0).abs() < 1e-12, "{d:?}");
    // The ends, a layer with no elements, a kernel's extra sizes.
    assert_eq!(erdos_renyi_densities(&shapes, 0.0).unwrap(), vec![0.0; 3]);
    assert_eq!(erdos_renyi_densities(&shapes, 1.0).unwrap(), vec![1.0; 3]);
    let d = erdos_renyi_densities(&[vec![0usize, 5], vec![64, 32, 3, 3]], 0.5).unwrap();
    assert_eq!(d[0], 1.0);
    assert!((d[1] - 0.5).abs() < 1e-12, "{d:?}");
    assert!(erdos_renyi_densities::<[usize; 2]>(&[], 0.5).unwrap().is_empty());
}

#[test]
fn erdos_renyi_refuses_bad_densities_and_overflow_by_name() {
    for bad in [-0.1, 1.5, f64::NAN] {
        let e = erdos_renyi_densities(&[[4usize, 4]], bad).unwrap_err().to_string();
        assert!(e.contains("erdos_renyi_densities") && e.contains("density"), "{e}");
    }
    let e = erdos_renyi_densities(&[[1usize, 1], [usize::MAX, 2]], 0.5).unwrap_err().to_string();
    assert!(e.contains("layer 1") && e.contains("overflows"), "{e}");
}
