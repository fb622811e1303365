//! Dropout on sparse values: masks from burn's device generator (reproducible under
//! `device.seed`, a different mask for another seed), each stored value dropped or scaled by
//! `1 / (1 - p)` with the pattern kept, gradients through the kept values only; the layer
//! (`SparseDropout`, `GatConv`'s attention dropout) drops only on an autodiff device.

use burn::module::Module;
use burn::tensor::{Device, Tensor, TensorData};
use sparsegrad::nn::{adjacency_with_self_loops, sparse_dropout, GatConvConfig, Planetoid, SparseDropoutConfig};
use sparsegrad::prelude::*;

/// A 40 x 50 CSR matrix with 1000 stored values, all 2.
fn twos(device: &Device) -> SparseTensor<2> {
    let dense: Vec<f32> = (0..2000).map(|k| if k % 2 == 0 { 2.0 } else { 0.0 }).collect();
    Tensor::<2>::from_data(TensorData::new(dense, [40, 50]), device).to_sparse_csr().unwrap()
}

fn values(s: &SparseTensor<2>) -> Vec<f32> {
    s.values_flat().into_data().iter::<f32>().collect()
}

#[test]
fn masks_come_from_the_seeded_device_generator() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    let s = twos(&device);
    device.seed(7);
    let a = sparse_dropout(&s, 0.25);
    device.seed(7);
    let b = sparse_dropout(&s, 0.25);
    device.seed(8);
    let c = sparse_dropout(&s, 0.25);
    let (va, vb, vc) = (values(&a), values(&b), values(&c));
    assert_eq!(va, vb, "the same seed draws the same mask");
    assert_ne!(va, vc, "another seed draws another mask");
    let kept = 2.0 / 0.75;
    assert!(va.iter().all(|&v| v == 0.0 || (v - kept).abs() < 1e-6), "values are 0 or 2 / (1 - p)");
    let dropped = va.iter().filter(|&&v| v == 0.0).count();
    // 1000 draws of p = 0.25: 250 expected, standard deviation 13.7.
    assert!((180..=320).contains(&dropped), "{dropped} of 1000 dropped at p = 0.25");
    assert_eq!(
        a.crow_indices::<1>().unwrap().into_data().iter::<i64>().collect::<Vec<_>>(),
        s.crow_indices::<1>().unwrap().into_data().iter::<i64>().collect::<Vec<_>>()
    );
    assert_eq!(
        a.col_indices::<1>().unwrap().into_data().iter::<i64>().collect::<Vec<_>>(),
        s.col_indices::<1>().unwrap().into_data().iter::<i64>().collect::<Vec<_>>()
    );
    assert_eq!(values(&sparse_dropout(&s, 0.0)), values(&s));
}

#[test]
fn gradients_reach_the_kept_values_only() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::ad();
    device.seed(11);
    let s = twos(&device).require_grad();
    let d = sparse_dropout(&s, 0.5);
    let out = values(&d);
    let grads = d.values_flat().sum().backward();
    let g: Vec<f32> = s.values_flat().grad(&grads).unwrap().into_data().iter::<f32>().collect();
    for (o, g) in out.iter().zip(&g) {
        // d out / d value = mask / (1 - p): 2 where kept (out = 4), 0 where dropped.
        assert_eq!(*g, if *o == 0.0 { 0.0 } else { 2.0 }, "out {o}, grad {g}");
    }
}

#[test]
fn the_layer_drops_only_while_training() {
    let _serial = crate::common_ops::serial();
    let layer = SparseDropoutConfig::new(0.5).init();
    let plain = crate::common_ops::dev();
    assert_eq!(values(&layer.forward(&twos(&plain))), vec![2.0; 1000], "no autodiff: identity");
    let ad = crate::common_ops::ad();
    ad.seed(5);
    let dropped = values(&layer.forward(&twos(&ad)));
    assert!(dropped.contains(&0.0) && dropped.contains(&4.0), "autodiff device: dropped and scaled");
}

#[test]
fn gat_attention_dropout_is_off_under_valid() {
    let _serial = crate::common_ops::serial();
    let ad = crate::common_ops::ad();
    ad.seed(2);
    let g = Planetoid::karate(concat!(env!("CARGO_MANIFEST_DIR"), "/data/karate")).expect("data/karate");
    let config = GatConvConfig::new(34, 4).with_heads(2).with_dropout(0.6);
    let layer = config.init(&ad);
    let eye: Vec<f32> = (0..34 * 34).map(|k| if k / 34 == k % 34 { 1.0 } else { 0.0 }).collect();
    let x = |device: &Device| Tensor::<2>::from_data(TensorData::new(eye.clone(), [34, 34]), device);
    let out = |t: Tensor<2>| t.into_data().iter::<f32>().collect::<Vec<_>>();
    let adj_ad = adjacency_with_self_loops(&g.edges, g.nodes, &ad).unwrap();
    let (first, second) = (out(layer.forward(x(&ad), &adj_ad)), out(layer.forward(x(&ad), &adj_ad)));
    assert_ne!(first, second, "training: a new attention mask at every forward");

    // The same parameters without dropout, and the layer under valid(): equal outputs.
    let valid = layer.valid();
    let plain = crate::common_ops::dev();
    let adj = adjacency_with_self_loops(&g.edges, g.nodes, &plain).unwrap();
    let no_dropout =
        sparsegrad::nn::GatConv { attention_dropout: SparseDropoutConfig::new(0.0).init(), ..valid.clone() };
    let (a, b) = (out(valid.forward(x(&plain), &adj)), out(no_dropout.forward(x(&plain), &adj)));
    assert_eq!(a, b, "valid(): no attention dropout");
    assert_ne!(first, a, "training output differs from the evaluation output");
}

#[test]
fn gat_feature_dropout_acts_only_while_training() {
    let _serial = crate::common_ops::serial();
    let ad = crate::common_ops::ad();
    ad.seed(3);
    let g = Planetoid::karate(concat!(env!("CARGO_MANIFEST_DIR"), "/data/karate")).expect("data/karate");
    // Only the projected features are dropped out (no attention dropout).
    let layer = GatConvConfig::new(34, 4).with_heads(2).with_feature_dropout(0.6).init(&ad);
    let eye: Vec<f32> = (0..34 * 34).map(|k| if k / 34 == k % 34 { 1.0 } else { 0.0 }).collect();
    let x = |device: &Device| Tensor::<2>::from_data(TensorData::new(eye.clone(), [34, 34]), device);
    let out = |t: Tensor<2>| t.into_data().iter::<f32>().collect::<Vec<_>>();
    let adj_ad = adjacency_with_self_loops(&g.edges, g.nodes, &ad).unwrap();
    let (first, second) = (out(layer.forward(x(&ad), &adj_ad)), out(layer.forward(x(&ad), &adj_ad)));
    assert_ne!(first, second, "training: a new feature mask at every forward");

    let valid = layer.valid();
    let plain = crate::common_ops::dev();
    let adj = adjacency_with_self_loops(&g.edges, g.nodes, &plain).unwrap();
    let no_dropout =
        sparsegrad::nn::GatConv { feature_dropout: burn::nn::DropoutConfig::new(0.0).init(), ..valid.clone() };
    let (a, b) = (out(valid.forward(x(&plain), &adj)), out(no_dropout.forward(x(&plain), &adj)));
    assert_eq!(a, b, "valid(): no feature dropout");
    assert_ne!(first, a, "training output differs from the evaluation output");
}
