//! SparseLinear: forward against the dense formula `x Wᵀ + b`, gradcheck w.r.t. the stored
//! values, the bias and the input, construction paths (density, given pattern, sparse weight,
//! pruned `burn::nn::Linear`) and their errors, the random pattern (drawn in proportion to its
//! entries: huge sparse layers, dense ones, uniformity), Adam training that keeps the pattern,
//! a save/load round trip through burn records, and tampered records refused by name.

use crate::common_ops;

use crate::common_ops::gradcheck;
use burn::module::{Module, Param, ParamId};
use burn::nn::LinearConfig;
use burn::store::{ModuleRecord, RecordError};
use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use common_ops::{assert_close_f32, f32s, input, ints, train, Net};
use sparsegrad::gradcheck::{GradInput, GradcheckOptions};
use sparsegrad::nn::{prune_magnitude, SparseLinear, SparseLinearConfig};
use sparsegrad::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// `x Wᵀ + b` with the dense weight.
fn dense_reference(layer: &SparseLinear, x: Tensor<2>) -> Tensor<2> {
    let y = x.matmul(layer.weight().to_dense().transpose());
    match &layer.bias {
        Some(b) => y + b.val().unsqueeze::<2>(),
        None => y,
    }
}

#[test]
fn density_fixes_the_count_and_seed_the_pattern() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    let config = SparseLinearConfig::new(37, 11).with_density(0.2).with_seed(Some(3));
    let layer = config.init(&device);
    // round(0.2 * 407) = 81.
    assert_eq!((layer.nnz(), layer.d_output(), layer.d_input), (81, 11, 37));
    assert_eq!(layer.bias.as_ref().unwrap().val().dims(), [11]);
    let again = config.init(&device);
    assert_eq!(ints(layer.col.val()), ints(again.col.val()));
    assert_eq!(ints(layer.crow.val()), ints(again.crow.val()));
    let other = config.clone().with_seed(Some(4)).init(&device);
    assert_ne!(ints(layer.col.val()), ints(other.col.val()));
    // A valid CSR pattern (the checked constructor accepts it) with int32 indices.
    let w = layer.weight();
    assert_eq!(w.index_dtype(), DType::I32);
    SparseTensor::csr(layer.crow.val(), layer.col.val(), layer.values.val(), [11, 37]).unwrap();
    // Memory: values and col (4 bytes each per entry), crow (12 x 4), bias (11 x 4).
    assert_eq!(layer.memory_bytes(), 81 * 8 + 12 * 4 + 11 * 4);
    // The device generator draws a pattern too, reproducibly.
    device.seed(5);
    let a = SparseLinearConfig::new(20, 10).with_bias(false).init(&device);
    device.seed(5);
    let b = SparseLinearConfig::new(20, 10).with_bias(false).init(&device);
    assert_eq!((a.nnz(), ints(a.col.val())), (20, ints(b.col.val())));
    assert!(a.bias.is_none());
    let e = SparseLinearConfig::new(4, 4).with_density(1.5).try_init(&device).unwrap_err();
    assert!(e.to_string().contains("density 1.5"), "{e}");
}

#[test]
fn forward_matches_dense_reference() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    let layer = SparseLinearConfig::new(24, 9).with_density(0.3).with_seed(Some(1)).init(&device);
    let x = input(7, 24, &device);
    let expected = f32s(dense_reference(&layer, x.clone()));
    assert_close_f32(&f32s(layer.forward(x.clone())), &expected, 1e-5);
    // Leading dims are batch dims.
    let y3 = layer.forward(x.clone().reshape([7, 1, 24]));
    assert_eq!(y3.dims(), [7, 1, 9]);
    assert_close_f32(&f32s(y3), &expected, 1e-5);
    // Without bias, and with a pattern that leaves whole rows and columns empty.
    let config = SparseLinearConfig::new(24, 9).with_density(0.02).with_bias(false).with_seed(Some(2));
    let sparse = config.init(&device);
    assert_eq!(sparse.nnz(), 4);
    assert_close_f32(&f32s(sparse.forward(x.clone())), &f32s(dense_reference(&sparse, x)), 1e-5);
}

#[test]
#[should_panic(expected = "does not end in d_input = 24")]
fn forward_names_a_wrong_input_width() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    let layer = SparseLinearConfig::new(24, 9).with_seed(Some(1)).init(&device);
    let _ = layer.forward(input(3, 25, &device));
}

#[test]
fn built_from_patterns_weights_and_dense_layers() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    let dense =
        Tensor::<2>::from_data(TensorData::new(vec![0.0f32, 2.0, 0.0, -1.0, 0.0, 0.0, 3.0, 0.0], [2, 4]), &device);
    // A given pattern: its entries, fresh values.
    let coo = dense.clone().to_sparse().unwrap();
    let layer = SparseLinearConfig::new(4, 2).init_with_pattern(&coo, &device).unwrap();
    assert_eq!((ints(layer.crow.val()), ints(layer.col.val())), (vec![0, 2, 3], vec![1, 3, 2]));
    let e = SparseLinearConfig::new(3, 2).init_with_pattern(&coo, &device).unwrap_err();
    assert!(matches!(e, SparseError::ShapeMismatch { component: "pattern", .. }), "{e}");
    // A given weight: its values too.
    let bias = Tensor::<1>::from_floats([0.5, -0.5], &device);
    let layer = SparseLinear::from_weight(&coo, Some(bias.clone())).unwrap();
    assert_eq!(f32s(layer.weight().to_dense()), f32s(dense.clone()));
    let e = SparseLinear::from_weight(&coo, Some(Tensor::<1>::from_floats([1.0, 2.0, 3.0], &device))).unwrap_err();
    assert!(matches!(e, SparseError::ShapeMismatch { component: "bias", .. }), "{e}");
    // A pruned dense layer: its largest weights and its bias, and the output of the dense
    // layer with the pruned weight.
    let linear = LinearConfig::new(16, 6).init(&device);
    let pruned = SparseLinear::from_linear(&linear, 0.75).unwrap();
    assert_eq!(pruned.nnz(), 24);
    let w = prune_magnitude(linear.weight.val().transpose(), 0.75).unwrap();
    assert_eq!(f32s(pruned.weight().to_dense()), f32s(w.clone()));
    let x = input(5, 16, &device);
    let expected = f32s(x.clone().matmul(w.transpose()) + linear.bias.as_ref().unwrap().val().unsqueeze::<2>());
    assert_close_f32(&f32s(pruned.forward(x)), &expected, 1e-5);
    assert!(SparseLinear::from_linear(&linear, -0.5).is_err());
    assert!(SparseLinear::from_linear(&linear, 1.5).is_err());
}

#[test]
fn gradcheck_values_bias_and_input() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    let dense = Tensor::<2>::from_data(
        TensorData::new(
            vec![0.5f64, 0.0, -1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.5, -0.5, 0.0, 0.0, 0.0, 0.75],
            [3, 6],
        ),
        (&device, DType::F64),
    );
    let w = dense.to_sparse_csr().unwrap();
    let template = SparseLinear::from_weight(&w, None).unwrap();
    let b = Tensor::<1>::from_data(TensorData::new(vec![0.1f64, -0.2, 0.3], [3]), (&device, DType::F64));
    let x = Tensor::<2>::from_data(
        TensorData::new((0..24).map(|i| (i as f64 - 11.5) / 9.0).collect::<Vec<_>>(), [4, 6]),
        (&device, DType::F64),
    );
    let report = gradcheck(
        |v| {
            // `Param::initialized` keeps gradcheck's tensors as given: they stay graph nodes.
            let layer = SparseLinear {
                values: Param::initialized(ParamId::new(), v[0].clone()),
                bias: Some(Param::initialized(ParamId::new(), v[1].clone())),
                ..template.clone()
            };
            layer.forward(v[2].clone().reshape([4, 6])).tanh().reshape([12])
        },
        &[GradInput::sparse("values", &w), GradInput::dense("bias", &b), GradInput::dense("input", &x)],
        GradcheckOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // Only the 6 stored values of W are inputs: no gradient exists for the other 12 elements.
    assert_eq!(report.checked, 6 + 3 + 24);
}

#[test]
fn adam_training_keeps_the_pattern_and_lowers_the_loss() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::ad();
    let init = |seed| Net {
        l0: SparseLinearConfig::new(20, 16).with_density(0.3).with_seed(Some(seed)).init(&device),
        l1: SparseLinearConfig::new(16, 3).with_density(0.5).with_seed(Some(seed + 1)).init(&device),
    };
    let model = init(10);
    let teacher = init(20);
    let x = input(32, 20, &device);
    let target = teacher.forward(x.clone()).detach();
    let (crow, col, values) = (ints(model.l0.crow.val()), ints(model.l0.col.val()), f32s(model.l0.values.val()));
    let (model, first, last) = train(model, &x, &target);
    assert!(last < first / 3.0, "loss {first} -> {last}");
    assert_eq!((ints(model.l0.crow.val()), ints(model.l0.col.val())), (crow, col));
    assert_eq!(model.l0.nnz(), 96);
    let trained = f32s(model.l0.values.val());
    assert_eq!(trained.len(), values.len());
    assert!(trained.iter().zip(&values).filter(|(a, b)| a != b).count() > values.len() / 2, "the values trained");
}

#[test]
fn record_round_trip_restores_pattern_values_and_outputs() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    let config = SparseLinearConfig::new(30, 8).with_density(0.25).with_seed(Some(7));
    let layer = config.init(&device);
    let x = input(5, 30, &device);
    let expected = f32s(layer.forward(x.clone()));
    // In memory: burnpack bytes into a layer of another pattern (same count).
    let bytes = layer.clone().into_record().into_bytes().unwrap();
    let skeleton = config.clone().with_seed(Some(8)).init(&device);
    assert_ne!(ints(skeleton.col.val()), ints(layer.col.val()));
    let loaded = skeleton.load_record(ModuleRecord::from_bytes(bytes).unwrap());
    assert_eq!(ints(loaded.crow.val()), ints(layer.crow.val()));
    assert_eq!(ints(loaded.col.val()), ints(layer.col.val()));
    assert_eq!(f32s(loaded.forward(x.clone())), expected);
    // On disk.
    let path = std::env::temp_dir().join(format!("sparsegrad-sparse-linear-{}.bpk", std::process::id()));
    layer.clone().save_file(&path).unwrap();
    let loaded = config.with_seed(Some(9)).init(&device).load_file(&path);
    assert_eq!(f32s(loaded.forward(x)), expected);
    // Only now: loaded tensors read the file lazily.
    std::fs::remove_file(&path).unwrap();
    // A layer with another entry count cannot take the record.
    let record = layer.into_record();
    let other = SparseLinearConfig::new(30, 8).with_density(0.5).with_seed(Some(7)).init(&device);
    assert!(other.try_load_record(record).is_err());
}

/// The row-major positions of a layer's pattern, after checking it is a CSR pattern of its
/// shape: `crow` from 0 to `nnz` without decreasing, columns in bounds and strictly increasing
/// within each row (so the positions are distinct and ascending).
fn positions(layer: &SparseLinear) -> Vec<usize> {
    let (crow, col) = (ints(layer.crow.val()), ints(layer.col.val()));
    assert_eq!((crow.len(), crow[0], *crow.last().unwrap()), (layer.d_output() + 1, 0, col.len() as i64));
    let mut out = Vec::with_capacity(col.len());
    for r in 0..layer.d_output() {
        let row = &col[crow[r] as usize..crow[r + 1] as usize];
        assert!(row.iter().all(|&c| (0..layer.d_input as i64).contains(&c)), "row {r}: {row:?}");
        assert!(row.windows(2).all(|w| w[0] < w[1]), "row {r} is not strictly increasing: {row:?}");
        out.extend(row.iter().map(|&c| r * layer.d_input + c as usize));
    }
    out
}

#[test]
fn a_huge_very_sparse_layer_draws_only_its_entries() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    // 10^12 weight positions, 1000 kept: drawing anything per position would take terabytes.
    let start = Instant::now();
    let layer = SparseLinearConfig::new(1_000_000, 1_000_000).with_density(1e-9).with_seed(Some(11)).init(&device);
    assert!(start.elapsed() < Duration::from_secs(30), "{:?}", start.elapsed());
    assert_eq!((layer.nnz(), layer.d_output(), layer.d_input), (1000, 1_000_000, 1_000_000));
    let p = positions(&layer);
    assert_eq!(p.len(), 1000);
    assert!(p.windows(2).all(|w| w[0] < w[1]) && *p.last().unwrap() < 1_000_000_000_000);
    assert_eq!(layer.crow.val().dtype(), DType::I32);
    layer.check().unwrap();
    // A batch of one through it: a row of `W x` sums the stored entries of its row.
    let x = Tensor::<2>::ones([1, 1_000_000], &device);
    let y = SparseLinear { bias: None, ..layer.clone() }.forward(x);
    let mut expected = vec![0.0f32; 1_000_000];
    for (&pos, &v) in p.iter().zip(&f32s(layer.values.val())) {
        expected[pos / 1_000_000] += v;
    }
    assert_close_f32(&f32s(y), &expected, 1e-6);
}

#[test]
fn dense_and_edge_densities_keep_the_exact_count() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    // 13 x 7 = 91 positions. Above one half the left-out positions are drawn instead.
    for (density, nnz) in [(0.0, 0), (0.3, 27), (0.5, 46), (0.9, 82), (1.0, 91)] {
        let layer = SparseLinearConfig::new(7, 13).with_density(density).with_seed(Some(5)).init(&device);
        let p = positions(&layer);
        assert_eq!((layer.nnz(), p.len()), (nnz, nnz), "density {density}");
        layer.check().unwrap();
        let again = SparseLinearConfig::new(7, 13).with_density(density).with_seed(Some(5)).init(&device);
        assert_eq!(positions(&again), p, "the same seed, the same pattern");
    }
    let full = SparseLinearConfig::new(7, 13).with_density(1.0).with_seed(Some(1)).init(&device);
    assert_eq!(positions(&full), (0..91).collect::<Vec<_>>());
    // An empty shape.
    let empty = SparseLinearConfig::new(0, 4).with_seed(Some(1)).init(&device);
    assert_eq!((empty.nnz(), ints(empty.crow.val())), (0, vec![0; 5]));
}

#[test]
fn sizes_that_cannot_be_counted_or_allocated_are_errors() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    let e = SparseLinearConfig::new(usize::MAX, 2).try_init(&device).unwrap_err();
    assert_eq!(e, SparseError::ElementCountOverflow { shape: vec![2, usize::MAX] });
    // 2^63 elements: more than an i64 counts.
    let e = SparseLinearConfig::new(1 << 31, 1 << 32).try_init(&device).unwrap_err();
    assert_eq!(e, SparseError::ElementCountOverflow { shape: vec![1 << 32, 1 << 31] });
    // 2^61 entries, 2^63 left out, 2^61 + 1 row pointers: past what any allocator serves.
    let e = SparseLinearConfig::new(1 << 31, 1 << 31).with_density(0.5).try_init(&device).unwrap_err();
    assert_eq!(e.to_string(), "SparseLinearConfig::init: cannot allocate a set of 2305843009213693952 positions");
    let e = SparseLinearConfig::new(1 << 31, 1 << 31).with_density(0.75).try_init(&device).unwrap_err();
    assert_eq!(e.to_string(), "SparseLinearConfig::init: cannot allocate 27670116110564327424 bytes for the positions of the entries (3458764513820540928 entries)");
    let e = SparseLinearConfig::new(1, 1 << 61).with_density(0.0).try_init(&device).unwrap_err();
    assert_eq!(e.to_string(), "SparseLinearConfig::init: cannot allocate 18446744073709551624 bytes for the compressed row indices (2305843009213693953 entries)");
}

#[test]
fn random_patterns_are_uniform() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    // 8 x 16 = 128 positions, 32 kept (drawn) or 96 kept (the 32 left out drawn), 3000 seeds.
    // Each position is kept with probability k / 128; a row's count is hypergeometric with
    // variance k (16/128) (112/128) (128 - k)/127 = 2.6457 for both.
    let draws = 3000;
    for k in [32usize, 96] {
        let config = SparseLinearConfig::new(16, 8).with_density(k as f64 / 128.0).with_bias(false);
        let mut hits = [0usize; 128];
        let (mut sum_sq, mut n_rows) = (0.0, 0.0);
        for seed in 0..draws {
            let layer = config.clone().with_seed(Some(seed)).init(&device);
            let p = positions(&layer);
            assert_eq!(p.len(), k);
            p.iter().for_each(|&i| hits[i] += 1);
            let crow = ints(layer.crow.val());
            for r in 0..8 {
                let dev = (crow[r + 1] - crow[r]) as f64 - k as f64 / 8.0;
                sum_sq += dev * dev;
                n_rows += 1.0;
            }
        }
        // Binomial(3000, k / 128) counts: a standard deviation of 23.7; 6 of them is 142.
        let (mean, sd) = (draws as f64 * k as f64 / 128.0, (draws as f64 * 0.25 * 0.75).sqrt());
        for (i, &h) in hits.iter().enumerate() {
            assert!(
                (h as f64 - mean).abs() < 6.0 * sd,
                "k = {k}: position {i} kept {h} times, expected {mean} +- {sd}"
            );
        }
        // The sample variance of 24000 row counts is within about 2 % of the true one.
        let var = sum_sq / n_rows;
        assert!((var / 2.6457 - 1.0).abs() < 0.15, "k = {k}: per-row count variance {var}, expected 2.6457");
    }
}

// ---------------------------------------------------------------------------------------------
// Tampered layers and records: refused with the violation named, never handed to the kernels.

/// `[[1, 0, 2, 0], [0, 0, 0, 3], [4, 5, 0, 0]]` with a bias: `crow [0, 2, 3, 5]`, `col [0, 2, 3, 0, 1]`.
fn small_layer(device: &Device) -> SparseLinear {
    let dense = Tensor::<2>::from_data(
        TensorData::new(vec![1.0f32, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 3.0, 4.0, 5.0, 0.0, 0.0], [3, 4]),
        device,
    );
    let layer =
        SparseLinear::from_weight(&dense.to_sparse_csr().unwrap(), Some(Tensor::from_floats([0.5, -0.5, 1.0], device)))
            .unwrap();
    assert_eq!((ints(layer.crow.val()), ints(layer.col.val())), (vec![0, 2, 3, 5], vec![0, 2, 3, 0, 1]));
    layer
}

fn index(v: &[i64], like: &Param<Tensor<1, Int>>) -> Param<Tensor<1, Int>> {
    let t = like.val();
    Param::initialized(
        ParamId::new(),
        Tensor::from_data(TensorData::new(v.to_vec(), [v.len()]), (&t.device(), t.dtype())),
    )
}

/// The layer with its `crow` or `col` replaced (same dtype).
fn tampered(layer: &SparseLinear, crow: Option<&[i64]>, col: Option<&[i64]>) -> SparseLinear {
    SparseLinear {
        crow: crow.map_or_else(|| layer.crow.clone(), |c| index(c, &layer.crow)),
        col: col.map_or_else(|| layer.col.clone(), |c| index(c, &layer.col)),
        ..layer.clone()
    }
}

/// The record of `layer` through burnpack bytes, as a file would hand it over.
fn record_of(layer: &SparseLinear) -> ModuleRecord {
    ModuleRecord::from_bytes(layer.clone().into_record().into_bytes().unwrap()).unwrap()
}

fn panic_text(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("it panics");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// A replacement `crow`, a replacement `col`, and the violation the checked constructor names.
type Tampering = (Option<&'static [i64]>, Option<&'static [i64]>, &'static str);

const TAMPERED: [Tampering; 6] = [
    (
        Some(&[0, 3, 2, 5]),
        None,
        "crow_indices[0]: compressed indices must be non-decreasing, got 2 at position 2 after 3",
    ),
    (Some(&[1, 2, 3, 5]), None, "crow_indices[0]: compressed indices must start with 0, got 1"),
    (Some(&[0, 2, 3, 4]), None, "crow_indices[0]: compressed indices must end with nse = 5, got 4"),
    (None, Some(&[0, 2, 3, 0, 4]), "col_indices: index 4 at position 4 is out of bounds for dimension 1 of size 4"),
    (None, Some(&[0, -1, 3, 0, 1]), "col_indices: index -1 at position 1 is out of bounds for dimension 1 of size 4"),
    (
        None,
        Some(&[2, 0, 3, 0, 1]),
        "col_indices[0]: plain indices must be sorted within segment 0, got 0 at position 1 after 2",
    ),
];

#[test]
fn tampered_records_are_refused_naming_the_violation() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    let layer = small_layer(&device);
    let x = input(2, 4, &device);
    for (crow, col, violation) in TAMPERED {
        let bad = tampered(&layer, crow, col);
        assert_eq!(bad.try_weight().unwrap_err().to_string(), violation);
        assert_eq!(bad.check().unwrap_err().to_string(), violation);
        let expected =
            RecordError::Validation(format!("SparseLinear: the record does not make a valid layer: {violation}"));
        assert_eq!(layer.clone().try_load_record(record_of(&bad)).unwrap_err(), expected);
        // Burn's `validate` flag turns off its shape checks, not this one.
        assert_eq!(layer.clone().try_load_record(record_of(&bad).validate(false)).unwrap_err(), expected);
        // Used anyway (fields set by hand): a panic naming it, before any kernel runs.
        assert_eq!(panic_text(|| drop(bad.forward(x.clone()))), format!("SparseLinear: invalid weight: {violation}"));
    }
    // Lengths that disagree with the layer's: burn's own shape check refuses the record.
    let long = tampered(&layer, Some(&[0, 2, 3, 5, 5]), None);
    let Err(RecordError::Validation(message)) = layer.clone().try_load_record(record_of(&long)) else {
        panic!("a longer crow loads")
    };
    assert!(
        message.contains("crow: shape mismatch, expected Shape { dims: [4] } but record has Shape { dims: [5] }"),
        "{message}"
    );
    // Set by hand they are the weight's error.
    assert_eq!(long.d_output(), 4);
    assert_eq!(
        long.check().unwrap_err(),
        SparseError::ShapeMismatch { component: "bias", expected: vec![4], actual: vec![3] }
    );
    let short = tampered(&layer, None, Some(&[0, 2, 3, 0]));
    assert_eq!(
        short.try_weight().unwrap_err(),
        SparseError::ShapeMismatch { component: "values", expected: vec![4], actual: vec![5] }
    );
    // The untampered record loads, and the layer computes as before.
    let loaded = small_layer(&device).try_load_record(record_of(&layer)).unwrap();
    assert_eq!(f32s(loaded.forward(x.clone())), f32s(layer.forward(x)));
}

#[test]
#[should_panic(
    expected = "SparseLinear: the record does not make a valid layer: crow_indices[0]: compressed indices must be non-decreasing, got 2 at position 2 after 3"
)]
fn load_record_panics_on_a_tampered_record() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    let layer = small_layer(&device);
    let _ = layer.clone().load_record(record_of(&tampered(&layer, Some(&[0, 3, 2, 5]), None)));
}

#[test]
fn tampered_files_are_refused() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    let layer = small_layer(&device);
    let path = std::env::temp_dir().join(format!("sparsegrad-sparse-linear-tampered-{}.bpk", std::process::id()));
    tampered(&layer, None, Some(&[0, 2, 3, 0, 4])).save_file(&path).unwrap();
    let e = layer.clone().try_load_file(&path).unwrap_err();
    let text = panic_text(|| drop(layer.clone().load_file(&path)));
    std::fs::remove_file(&path).unwrap();
    let violation = "col_indices: index 4 at position 4 is out of bounds for dimension 1 of size 4";
    assert_eq!(
        e,
        RecordError::Validation(format!("SparseLinear: the record does not make a valid layer: {violation}"))
    );
    assert!(text.contains(violation), "{text}");
}

#[test]
fn a_tampered_layer_inside_a_module_fails_on_first_use() {
    let _serial = crate::common_ops::serial();
    // A module holding the layer loads it through `map`, which cannot fail: the load goes
    // through, and the weight's check stops the first forward with the violation.
    let device = crate::common_ops::ad();
    let layer = small_layer(&device);
    let good = Net { l0: layer.clone(), l1: SparseLinear::from_weight(&layer.weight().t(), None).unwrap() };
    let bad = Net { l0: tampered(&layer, Some(&[0, 3, 2, 5]), None), ..good.clone() };
    let record = ModuleRecord::from_bytes(bad.into_record().into_bytes().unwrap()).unwrap();
    let loaded = good.clone().try_load_record(record).unwrap();
    assert_eq!(
        loaded.l0.check().unwrap_err().to_string(),
        "crow_indices[0]: compressed indices must be non-decreasing, got 2 at position 2 after 3"
    );
    let x = input(2, 4, &device);
    let text = panic_text(|| drop(loaded.forward(x.clone()).sum().backward()));
    assert_eq!(text, "SparseLinear: invalid weight: crow_indices[0]: compressed indices must be non-decreasing, got 2 at position 2 after 3");
    // The good model trains through the same path.
    let _ = good.forward(x).sum().backward();
}

#[test]
fn display_lists_the_parameters() {
    let _serial = crate::common_ops::serial();
    let layer = small_layer(&crate::common_ops::dev());
    let text = layer.to_string();
    for part in [
        "SparseLinear {",
        "crow: ParamTensor {rank: 1, shape: [4], kind: int}",
        "col: ParamTensor {rank: 1, shape: [5], kind: int}",
        "values: ParamTensor {rank: 1, shape: [5], kind: float}",
        "bias: ParamTensor {rank: 1, shape: [3], kind: float}",
        "d_input: 4",
        "params: 8",
    ] {
        assert!(text.contains(part), "{part} not in {text}");
    }
}
