//! SemiStructuredLinear: construction by pruning a dense `burn::nn::Linear` (equal to the
//! pruned dense layer), forward against the dense formula, gradcheck w.r.t. the kept values,
//! the bias and the input, Adam training that keeps the weight 2:4 (same metadata, every group
//! still holding at most two non-zeros), a save/load round trip through burn records, and
//! records with tampered metadata refused by name.

use crate::common_ops;

use crate::common_ops::gradcheck;
use burn::module::{Module, Param, ParamId};
use burn::nn::LinearConfig;
use burn::store::{ModuleRecord, RecordError};
use burn::tensor::{DType, Device, Tensor, TensorData};
use common_ops::{assert_close_f32, f32s, input, train, Net};
use sparsegrad::backend::semi_structured::metadata_dtype;
use sparsegrad::gradcheck::{GradInput, GradcheckOptions};
use sparsegrad::nn::{prune_2_4, SemiStructuredLinear, SemiStructuredLinearConfig};
use sparsegrad::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

fn words(l: &SemiStructuredLinear) -> Vec<i64> {
    l.metadata.val().into_data().iter::<i64>().collect()
}

/// Non-zeros of each group of four of a `[rows, cols]` matrix, at most `limit`.
fn assert_groups_at_most(w: Tensor<2>, limit: usize) {
    let [rows, cols] = w.dims();
    let v = f32s(w);
    for r in 0..rows {
        for g in 0..cols / 4 {
            let nz = (0..4).filter(|&i| v[r * cols + 4 * g + i] != 0.0).count();
            assert!(nz <= limit, "row {r}, group {g}: {nz} non-zeros");
        }
    }
}

#[test]
fn from_linear_is_the_pruned_dense_layer() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    // 300 inputs: a partial metadata word (300 = 18 * 16 + 12).
    let dense = LinearConfig::new(300, 7).init(&device);
    let layer = SemiStructuredLinear::from_linear(&dense).unwrap();
    assert_eq!((layer.d_output(), layer.d_input), (7, 300));
    assert_eq!(layer.values.val().dims(), [7, 150]);
    assert_eq!(layer.metadata.val().dims(), [7, 19]);
    let pruned = prune_2_4(dense.weight.val().transpose()).unwrap();
    assert_eq!(f32s(layer.weight().to_dense()), f32s(pruned.clone()));
    assert_groups_at_most(layer.weight().to_dense(), 2);
    let x = input(9, 300, &device);
    let expected = x.clone().matmul(pruned.transpose()) + dense.bias.as_ref().unwrap().val().unsqueeze::<2>();
    assert_close_f32(&f32s(layer.forward(x)), &f32s(expected), 1e-5);
    // 7 x 150 f32 values, 7 x 19 i16 words, 7 f32 biases.
    assert_eq!(layer.memory_bytes(), 7 * 150 * 4 + 7 * 19 * 2 + 7 * 4);
    // A 3-D input keeps its leading dims.
    let x3: Tensor<3> = input(6, 300, &device).reshape([2, 3, 300]);
    assert_eq!(layer.forward(x3).dims(), [2, 3, 7]);
}

#[test]
fn errors_name_the_problem() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    let err = SemiStructuredLinearConfig::new(6, 3).try_init(&device).unwrap_err();
    assert!(err.to_string().contains("not a multiple of the group size m = 4"), "{err}");
    let layer = SemiStructuredLinearConfig::new(8, 3).init(&device);
    let err = SemiStructuredLinear::from_weight(&layer.weight().t(), None).unwrap_err();
    assert!(err.to_string().contains("not transposed"), "{err}");
    let err = SemiStructuredLinear::from_weight(&layer.weight(), Some(Tensor::zeros([4], &device))).unwrap_err();
    assert_eq!(err, SparseError::ShapeMismatch { component: "bias", expected: vec![3], actual: vec![4] });
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| layer.forward(input(2, 5, &device))));
    assert!(result.is_err(), "a wrong input width panics");
}

#[test]
fn gradcheck_values_bias_and_input() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    let dense = LinearConfig::new(8, 3).init(&device);
    let layer = SemiStructuredLinear::from_linear(&dense).unwrap();
    let values: Vec<f64> = layer.values.val().into_data().iter::<f64>().collect();
    let bias: Vec<f64> = layer.bias.as_ref().unwrap().val().into_data().iter::<f64>().collect();
    let x: Vec<f64> = (0..4 * 8).map(|i| ((i * 37) % 13) as f64 / 6.0 - 1.0).collect();
    let metadata = layer.metadata.val();
    let f = |t: &[Tensor<1>]| -> Tensor<1> {
        let ad = t[0].device();
        let w = SemiStructuredTensor::from_parts(
            t[0].clone().reshape([3, 4]),
            Tensor::from_data(metadata.to_data(), (&ad, DType::I16)),
            8,
            SemiPattern::TwoFour,
        )
        .unwrap();
        let y = sparsegrad::sparse::semi_structured::linear(t[2].clone().reshape([4, 8]), &w, Some(t[1].clone()));
        y.reshape([12])
    };
    let inputs = [
        GradInput { name: "values".into(), values },
        GradInput { name: "bias".into(), values: bias },
        GradInput { name: "x".into(), values: x },
    ];
    let report = gradcheck(f, &inputs, GradcheckOptions::default()).unwrap();
    assert_eq!(report.checked, 12 + 3 + 32);
}

#[test]
fn adam_training_stays_two_four_and_lowers_the_loss() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::ad();
    device.seed(5);
    let init = || Net {
        l0: SemiStructuredLinearConfig::new(20, 16).init(&device),
        l1: SemiStructuredLinearConfig::new(16, 4).init(&device),
    };
    let model = init();
    let teacher = init();
    let x = input(32, 20, &device);
    let target = teacher.forward(x.clone()).detach();
    let (meta, values) = (words(&model.l0), f32s(model.l0.values.val()));
    let (model, first, last) = train(model, &x, &target);
    assert!(last < first / 3.0, "loss {first} -> {last}");
    assert_eq!(words(&model.l0), meta, "the metadata does not train");
    assert_groups_at_most(model.l0.weight().to_dense().inner(), 2);
    assert_groups_at_most(model.l1.weight().to_dense().inner(), 2);
    let trained = f32s(model.l0.values.val());
    assert!(trained.iter().zip(&values).filter(|(a, b)| a != b).count() > values.len() / 2, "the values trained");
}

#[test]
fn record_round_trip_restores_metadata_values_and_outputs() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    let config = SemiStructuredLinearConfig::new(40, 6);
    device.seed(1);
    let layer = config.init(&device);
    let x = input(5, 40, &device);
    let expected = f32s(layer.forward(x.clone()));
    let bytes = layer.clone().into_record().into_bytes().unwrap();
    device.seed(2);
    let skeleton = config.init(&device);
    assert_ne!(words(&skeleton), words(&layer));
    let loaded = skeleton.load_record(ModuleRecord::from_bytes(bytes).unwrap());
    assert_eq!(words(&loaded), words(&layer));
    assert_eq!(loaded.metadata.val().dtype(), metadata_dtype(&device));
    assert_eq!(f32s(loaded.forward(x.clone())), expected);
    let path = std::env::temp_dir().join(format!("sparsegrad-semi-linear-{}.bpk", std::process::id()));
    layer.save_file(&path).unwrap();
    let loaded = config.init(&device).load_file(&path);
    assert_eq!(f32s(loaded.forward(x)), expected);
    // Only now: loaded tensors read the file lazily.
    std::fs::remove_file(&path).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Tampered metadata: refused with the word at fault named, never handed to the kernels.

/// 8 inputs (two groups, one metadata word per row; nibble `g` of a word is `a | b << 2` for
/// the slots `a < b` kept in group `g`), 3 outputs.
fn small_layer(device: &Device) -> SemiStructuredLinear {
    device.seed(3);
    SemiStructuredLinearConfig::new(8, 3).init(device)
}

/// The layer with metadata word `[row, 0]` replaced.
fn tampered(layer: &SemiStructuredLinear, row: usize, word: i16) -> SemiStructuredLinear {
    let mut w = words(layer);
    w[row] = word as i64;
    let words: Vec<i16> = w.iter().map(|&v| v as i16).collect();
    let metadata = Tensor::from_data(TensorData::new(words, [3, 1]), (&layer.metadata.val().device(), DType::I16));
    SemiStructuredLinear { metadata: Param::initialized(ParamId::new(), metadata), ..layer.clone() }
}

fn record_of(layer: &SemiStructuredLinear) -> ModuleRecord {
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

const OP: &str = "SemiStructuredTensor::from_parts";

#[test]
fn tampered_metadata_is_refused_naming_the_word() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    let layer = small_layer(&device);
    assert_eq!(layer.metadata.val().dims(), [3, 1]);
    let x = input(2, 8, &device);
    let cases = [
        // Slots 1 and 1 in group 0 (nibble 0b0101).
        (0, 0x0045, format!("{OP}: metadata row 0, group 0 (columns 0..3): slots 1 and 1 are not a 2:4 group")),
        // Slots 2 then 1 in group 1 of row 2 (nibble 0b0110).
        (2, 0x0064, format!("{OP}: metadata row 2, group 1 (columns 4..7): slots 2 and 1 are not a 2:4 group")),
        // A bit in nibble 2, past the two groups of an 8-wide row.
        (1, 0x0144, format!("{OP}: metadata row 1: bits set past the last group (column 8)")),
        // The sign bit (nibble 3), as an i16 word holds it.
        (1, i16::MIN | 0x0044, format!("{OP}: metadata row 1: bits set past the last group (column 8)")),
    ];
    for (row, word, violation) in cases {
        let bad = tampered(&layer, row, word);
        assert_eq!(bad.try_weight().unwrap_err().to_string(), violation);
        assert_eq!(bad.check().unwrap_err().to_string(), violation);
        let expected = RecordError::Validation(format!(
            "SemiStructuredLinear: the record does not make a valid layer: {violation}"
        ));
        assert_eq!(layer.clone().try_load_record(record_of(&bad)).unwrap_err(), expected);
        assert_eq!(layer.clone().try_load_record(record_of(&bad).validate(false)).unwrap_err(), expected);
        assert_eq!(
            panic_text(|| drop(bad.forward(x.clone()))),
            format!("SemiStructuredLinear: invalid weight: {violation}")
        );
    }
    // A valid word other than the layer's (slots 0, 1 then 2, 3; or 0, 1 then 1, 2) loads.
    let other = tampered(&layer, 1, if words(&layer)[1] == 0x00E4 { 0x0094 } else { 0x00E4 });
    assert_ne!(words(&other), words(&layer));
    let loaded = layer.clone().try_load_record(record_of(&other)).unwrap();
    assert_eq!(words(&loaded), words(&other));
    assert_eq!(f32s(loaded.forward(x.clone())), f32s(other.forward(x)));
}

#[test]
#[should_panic(
    expected = "SemiStructuredLinear: the record does not make a valid layer: SemiStructuredTensor::from_parts: metadata row 0, group 0 (columns 0..3): slots 1 and 1 are not a 2:4 group"
)]
fn load_record_panics_on_tampered_metadata() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    let layer = small_layer(&device);
    let _ = layer.clone().load_record(record_of(&tampered(&layer, 0, 0x0045)));
}

#[test]
fn tampered_metadata_inside_a_module_fails_on_first_use() {
    let _serial = crate::common_ops::serial();
    // Loaded through `map`, which cannot fail: the first forward stops with the violation.
    let device = crate::common_ops::ad();
    device.seed(4);
    let good = Net {
        l0: SemiStructuredLinearConfig::new(8, 4).init(&device),
        l1: SemiStructuredLinearConfig::new(4, 8).init(&device),
    };
    let bad_l0 = {
        let mut w = words(&good.l0);
        w[3] = 0x0045;
        let words: Vec<i16> = w.iter().map(|&v| v as i16).collect();
        let metadata = Tensor::from_data(TensorData::new(words, [4, 1]), (&device, DType::I16));
        SemiStructuredLinear { metadata: Param::initialized(ParamId::new(), metadata), ..good.l0.clone() }
    };
    let bad = Net { l0: bad_l0, ..good.clone() };
    let record = ModuleRecord::from_bytes(bad.into_record().into_bytes().unwrap()).unwrap();
    let loaded = good.clone().try_load_record(record).unwrap();
    let violation = format!("{OP}: metadata row 3, group 0 (columns 0..3): slots 1 and 1 are not a 2:4 group");
    assert_eq!(loaded.l0.check().unwrap_err().to_string(), violation);
    let x = input(2, 8, &device);
    assert_eq!(
        panic_text(|| drop(loaded.forward(x.clone()).sum().backward())),
        format!("SemiStructuredLinear: invalid weight: {violation}")
    );
    let _ = good.forward(x).sum().backward();
}

#[test]
fn display_lists_the_parameters() {
    let _serial = crate::common_ops::serial();
    let layer = small_layer(&crate::common_ops::dev());
    let text = layer.to_string();
    for part in [
        "SemiStructuredLinear {",
        "values: ParamTensor {rank: 2, shape: [3, 4], kind: float}",
        "metadata: ParamTensor {rank: 2, shape: [3, 1], kind: int}",
        "bias: ParamTensor {rank: 1, shape: [3], kind: float}",
        "d_input: 8",
        "params: 15",
    ] {
        assert!(text.contains(part), "{part} not in {text}");
    }
}
