//! `SparseParam`: a sparse tensor as a field of a derived burn module. Records round trip (in
//! memory and on disk) on every layout, loading checks what it loads, the values train (or stay
//! frozen) and the indices are never parameters.

use burn::module::Module;
use burn::store::{ModuleRecord, RecordError};
use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use sparsegrad::backend::module::SparseParam;
use sparsegrad::prelude::*;

#[derive(Module, Debug)]
struct Model {
    adjacency: SparseParam<2>,
    scale: burn::module::Param<Tensor<1>>,
}

fn ints(v: &[i64], device: &Device) -> Tensor<1, Int> {
    Tensor::<1, Int>::from_data(TensorData::new(v.to_vec(), [v.len()]), (device, DType::I64))
}

fn floats(v: &[f32], device: &Device) -> Tensor<1> {
    Tensor::<1>::from_data(TensorData::new(v.to_vec(), [v.len()]), (device, DType::F32))
}

fn dense(s: &SparseTensor<2>) -> Vec<f32> {
    s.to_dense().into_data().try_to_vec::<f32>().unwrap()
}

/// A 3 x 4 matrix with 4 entries in `layout`, values scaled by `k`.
fn matrix(layout: Layout, k: f32, device: &Device) -> SparseTensor<2> {
    let csr = SparseTensor::csr(
        ints(&[0, 2, 2, 4], device),
        ints(&[1, 3, 0, 2], device),
        floats(&[k, 2.0 * k, 3.0 * k, 4.0 * k], device),
        [3, 4],
    )
    .unwrap();
    csr.to_layout(layout, (layout == Layout::Bsr).then_some([1, 2])).unwrap()
}

fn model(layout: Layout, k: f32, trainable: bool, device: &Device) -> Model {
    Model {
        adjacency: SparseParam::new(matrix(layout, k, device), trainable),
        scale: burn::module::Param::from_tensor(floats(&[1.0], device)),
    }
}

#[test]
fn records_round_trip_on_every_layout() {
    let device = crate::common_ops::dev();
    for layout in [Layout::Coo, Layout::Csr, Layout::Csc, Layout::Bsr] {
        let m = model(layout, 1.0, true, &device);
        let expected = dense(&m.adjacency.tensor().unwrap());
        assert_eq!(expected, dense(&matrix(Layout::Csr, 1.0, &device)), "{layout:?}");
        // The stored values (BSR: its blocks' elements) and `scale` are the parameters; the
        // indices are not.
        let stored = m.adjacency.tensor().unwrap().values_flat().shape().num_elements();
        assert_eq!(m.num_params(), stored + 1, "{layout:?}");
        // In memory, into a model of other values.
        let bytes = m.clone().into_record().into_bytes().unwrap();
        let loaded = model(layout, 10.0, true, &device).load_record(ModuleRecord::from_bytes(bytes).unwrap());
        let t = loaded.adjacency.tensor().unwrap();
        assert_eq!((t.layout(), dense(&t)), (layout, expected.clone()), "{layout:?}");
        assert!(t.is_coalesced(), "{layout:?}");
        // On disk.
        let path = std::env::temp_dir().join(format!("sparsegrad-sparse-param-{layout:?}-{}.bpk", std::process::id()));
        m.save_file(&path).unwrap();
        let loaded = model(layout, 5.0, true, &device).load_file(&path);
        assert_eq!(dense(&loaded.adjacency.tensor().unwrap()), expected, "{layout:?}");
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn loading_checks_the_pattern() {
    let device = crate::common_ops::dev();
    let good = model(Layout::Csr, 1.0, true, &device);
    // A tensor of the same structure whose column index 4 is outside the 4 columns.
    let bad = SparseTensor::csr_unchecked(
        ints(&[0, 2, 2, 4], &device),
        ints(&[1, 4, 0, 2], &device),
        floats(&[1.0, 2.0, 3.0, 4.0], &device),
        [3, 4],
    );
    let bad = Model { adjacency: SparseParam::new(bad, true), scale: good.scale.clone() };
    let violation = bad.adjacency.tensor().unwrap_err().to_string();
    assert!(violation.contains("col_indices: index 4 at position 1 is out of bounds"), "{violation}");
    // Loaded alone: refused with the violation.
    let Err(RecordError::Validation(message)) =
        good.adjacency.clone().try_load_record(bad.adjacency.clone().into_record())
    else {
        panic!("a record with an out-of-range column loaded");
    };
    assert!(message.contains("SparseParam") && message.contains(&violation), "{message}");
    // Loaded as part of a bigger module (burn applies it through `map`, which cannot fail): the
    // tensor is refused when asked for, so no kernel ever sees the pattern.
    let loaded = good.clone().load_record(bad.into_record());
    assert_eq!(loaded.adjacency.tensor().unwrap_err().to_string(), violation);
    // The good one still loads into itself.
    let reloaded = good.clone().try_load_record(good.clone().into_record()).unwrap();
    assert_eq!(dense(&reloaded.adjacency.tensor().unwrap()), dense(&good.adjacency.tensor().unwrap()));
}

#[test]
fn values_train_and_frozen_ones_do_not() {
    let device = crate::common_ops::ad();
    for trainable in [true, false] {
        let m = model(Layout::Csr, 1.0, trainable, &device);
        let t = m.adjacency.tensor().unwrap();
        let x = Tensor::<2>::from_data([[1.0f32], [2.0], [3.0], [4.0]], &device).require_grad();
        let y = sparsegrad::sparse::mm(&t, x);
        let grads = y.sum().backward();
        let g = m.adjacency.values().val().grad(&grads);
        if trainable {
            // d sum(A x) / d A[i][j] = x[j]: columns 1, 3, 0, 2.
            let g = g.expect("a trainable SparseParam gets a gradient");
            assert_eq!(g.into_data().try_to_vec::<f32>().unwrap(), [2.0, 4.0, 1.0, 3.0]);
        } else {
            assert!(g.is_none(), "a frozen SparseParam got a gradient");
        }
    }
}
