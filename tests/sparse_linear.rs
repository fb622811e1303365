//! SparseLinear: forward against the dense formula `x Wᵀ + b`, gradcheck w.r.t. the stored
//! values, the bias and the input, construction paths (density, given pattern, sparse weight,
//! pruned `burn::nn::Linear`) and their errors, Adam training that keeps the pattern, and a
//! save/load round trip through burn records.

mod common_ops;

use burn::module::{Module, Param, ParamId};
use burn::nn::LinearConfig;
use burn::store::ModuleRecord;
use burn::tensor::{DType, Device, Tensor, TensorData};
use common_ops::{assert_close_f32, f32s, input, ints, train, Net};
use sparsegrad::gradcheck::{gradcheck, GradInput, GradcheckOptions};
use sparsegrad::nn::{prune_magnitude, SparseLinear, SparseLinearConfig};
use sparsegrad::prelude::*;

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
    let device = Device::flex();
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
    let device = Device::flex();
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
    let device = Device::flex();
    let layer = SparseLinearConfig::new(24, 9).with_seed(Some(1)).init(&device);
    let _ = layer.forward(input(3, 25, &device));
}

#[test]
fn built_from_patterns_weights_and_dense_layers() {
    let device = Device::flex();
    let dense = Tensor::<2>::from_data(TensorData::new(vec![0.0f32, 2.0, 0.0, -1.0, 0.0, 0.0, 3.0, 0.0], [2, 4]), &device);
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
    let pruned = SparseLinear::from_linear(&linear, 0.25).unwrap();
    assert_eq!(pruned.nnz(), 24);
    let w = prune_magnitude(linear.weight.val().transpose(), 0.25).unwrap();
    assert_eq!(f32s(pruned.weight().to_dense()), f32s(w.clone()));
    let x = input(5, 16, &device);
    let expected = f32s(x.clone().matmul(w.transpose()) + linear.bias.as_ref().unwrap().val().unsqueeze::<2>());
    assert_close_f32(&f32s(pruned.forward(x)), &expected, 1e-5);
    assert!(SparseLinear::from_linear(&linear, -0.5).is_err());
}

#[test]
fn gradcheck_values_bias_and_input() {
    let device = Device::flex();
    let dense = Tensor::<2>::from_data(
        TensorData::new(vec![0.5f64, 0.0, -1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.5, -0.5, 0.0, 0.0, 0.0, 0.75], [3, 6]),
        (&device, DType::F64),
    );
    let w = dense.to_sparse_csr().unwrap();
    let template = SparseLinear::from_weight(&w, None).unwrap();
    let b = Tensor::<1>::from_data(TensorData::new(vec![0.1f64, -0.2, 0.3], [3]), (&device, DType::F64));
    let x = Tensor::<2>::from_data(TensorData::new((0..24).map(|i| (i as f64 - 11.5) / 9.0).collect::<Vec<_>>(), [4, 6]), (&device, DType::F64));
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
    let device = Device::flex().autodiff();
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
    let device = Device::flex();
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
