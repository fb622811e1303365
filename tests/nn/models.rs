//! PyG's options of `GcnConv` and `GatConv` on an `edge_index` (against dense references built
//! by hand with burn's dense ops), GAT's attention weights, gradients through edge weights, and
//! the reusable `models::Gcn` / `models::Gat` against their layers composed by hand.

use crate::common_ops::gradcheck;
use crate::common_ops::{floats, serial};
use burn::module::{Module, Param, ParamId};
use burn::tensor::activation::{elu, relu};
use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use sparsegrad::gradcheck::{GradInput, GradcheckOptions};
use sparsegrad::nn::models::{GatConfig, GcnConfig};
use sparsegrad::nn::{adjacency_with_self_loops, GatConvConfig, GcnConv, GcnConvConfig, Planetoid};
use sparsegrad::prelude::*;

fn f64t<const D: usize>(v: Vec<f64>, shape: [usize; D], device: &Device) -> Tensor<D> {
    Tensor::from_data(TensorData::new(v, shape), (device, DType::F64))
}

fn edge_index(sources: &[i64], targets: &[i64], device: &Device) -> Tensor<2, Int> {
    let mut v = sources.to_vec();
    v.extend_from_slice(targets);
    Tensor::from_data(TensorData::new(v, [2, sources.len()]), (device, DType::I64))
}

fn near(a: &[f64], b: &[f64], tol: f64, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= tol * y.abs().max(1.0), "{what}[{i}]: {x} vs {y}");
    }
}

/// A directed weighted graph of 4 nodes with a self loop at 2 (weight 3) and a repeated edge.
const SRC: [i64; 6] = [0, 1, 2, 3, 0, 2];
const DST: [i64; 6] = [1, 2, 2, 0, 1, 3];
const W: [f64; 6] = [0.5, 2.0, 3.0, 1.5, 0.25, 1.0];

/// The dense propagation matrix PyG's `GCNConv` builds: `P[t, s] = w` summed, the remaining self
/// loops (an existing loop keeps its weight; `fill` elsewhere), then `D^-1/2 P D^-1/2` with the
/// in-degrees (row sums).
fn dense_gcn(n: usize, loops: Option<f64>, normalize: bool) -> Vec<f64> {
    let mut p = vec![0.0; n * n];
    for k in 0..SRC.len() {
        if loops.is_some() && SRC[k] == DST[k] {
            continue;
        }
        p[DST[k] as usize * n + SRC[k] as usize] += W[k];
    }
    if let Some(fill) = loops {
        for i in 0..n {
            let own = (0..SRC.len()).rev().find(|&k| SRC[k] == i as i64 && DST[k] == i as i64);
            p[i * n + i] = own.map_or(fill, |k| W[k]);
        }
    }
    if !normalize {
        return p;
    }
    let deg: Vec<f64> = (0..n).map(|i| p[i * n..(i + 1) * n].iter().sum()).collect();
    let s = |d: f64| if d == 0.0 { 0.0 } else { 1.0 / d.sqrt() };
    (0..n * n).map(|k| s(deg[k / n]) * p[k] * s(deg[k % n])).collect()
}

#[test]
fn gcn_conv_options_on_edge_index_match_dense_references() {
    let _serial = serial();
    let device = crate::common_ops::dev();
    let n = 4;
    let ei = edge_index(&SRC, &DST, &device);
    let w = f64t(W.to_vec(), [6], &device);
    let x = f64t((0..n * 3).map(|i| (i as f64 * 0.37).sin()).collect(), [n, 3], &device);
    let cases = [
        ("defaults", GcnConvConfig::new(3, 2), Some(1.0), true),
        ("improved", GcnConvConfig::new(3, 2).with_improved(true), Some(2.0), true),
        ("no self loops", GcnConvConfig::new(3, 2).with_add_self_loops(false), None, true),
        ("not normalised", GcnConvConfig::new(3, 2).with_normalize(false), None, false),
    ];
    for (what, config, loops, normalize) in cases {
        let layer = config.init(&device);
        let layer = GcnConv {
            weight: Param::from_tensor(f64t(vec![0.3, -0.2, 0.1, 0.5, -0.4, 0.25], [3, 2], &device)),
            bias: Some(Param::from_tensor(f64t(vec![0.1, -0.3], [2], &device))),
            ..layer
        };
        let got = floats(layer.forward_edge_index(x.clone(), &ei, Some(&w)).unwrap());
        let p = f64t(dense_gcn(n, loops, normalize), [n, n], &device);
        let expected = p.matmul(x.clone().matmul(layer.weight.val())) + layer.bias.as_ref().unwrap().val().unsqueeze();
        near(&got, &floats(expected), 1e-12, what);
    }
    // PyG's default GCNConv carries a bias; Kipf & Welling's layer is built without.
    assert!(GcnConvConfig::new(3, 2).init(&device).bias.is_some());
    // A node outside the graph is an error naming the edge, not a panic.
    let bad = edge_index(&[0, 9], &[1, 2], &device);
    let e = GcnConvConfig::new(3, 2).init(&device).forward_edge_index(x, &bad, None).unwrap_err();
    assert!(e.to_string().contains('9'), "{e}");
}

#[test]
fn gcn_conv_gradcheck_through_edge_weights() {
    let _serial = serial();
    let device = crate::common_ops::dev();
    let x = f64t((0..12).map(|i| (i as f64 * 0.61).cos()).collect(), [4, 3], &device);
    let w = f64t(W.to_vec(), [6], &device);
    let report = gradcheck(
        |v| {
            let d = v[0].device();
            let layer = GcnConv {
                weight: Param::initialized(ParamId::new(), f64t(vec![0.3, -0.2, 0.1, 0.5, -0.4, 0.25], [3, 2], &d)),
                ..GcnConvConfig::new(3, 2).with_bias(false).init(&d)
            };
            let ei = edge_index(&SRC, &DST, &d);
            let weight = v[0].clone().reshape([6]);
            layer.forward_edge_index(x.clone().to_device(&d), &ei, Some(&weight)).unwrap().tanh().reshape([8])
        },
        &[GradInput::dense("edge_weight", &w.reshape([6, 1]))],
        GradcheckOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.checked, 6);
}

#[test]
fn gat_conv_pattern_and_attention_weights() {
    let _serial = serial();
    let device = crate::common_ops::dev();
    let g = Planetoid::karate(concat!(env!("CARGO_MANIFEST_DIR"), "/data/karate")).expect("data/karate");
    // Both directions of every edge, plus a stray self loop that must not count twice.
    let (mut s, mut t): (Vec<i64>, Vec<i64>) = g.edges.iter().map(|&(u, v)| (u as i64, v as i64)).unzip();
    let (s2, t2) = (t.clone(), s.clone());
    s.extend(s2);
    t.extend(t2);
    s.push(5);
    t.push(5);
    let ei = edge_index(&s, &t, &device);
    let layer = GatConvConfig::new(6, 3).with_heads(2).init(&device);
    let pattern = layer.propagation_pattern(&ei, g.nodes).unwrap();
    let reference = adjacency_with_self_loops(&g.edges, g.nodes, &device).unwrap();
    assert_eq!(
        crate::common_ops::ints(pattern.crow_indices::<1>().unwrap()),
        crate::common_ops::ints(reference.crow_indices::<1>().unwrap())
    );
    assert_eq!(
        crate::common_ops::ints(pattern.col_indices::<1>().unwrap()),
        crate::common_ops::ints(reference.col_indices::<1>().unwrap())
    );
    let without = GatConvConfig::new(6, 3).with_add_self_loops(false).init(&device);
    assert_eq!(without.propagation_pattern(&ei, g.nodes).unwrap().nnz(), 2 * 78 + 1);

    let x = Tensor::<2>::from_data(
        TensorData::new((0..34 * 6).map(|i| ((i * 31) % 17) as f32 / 8.0 - 1.0).collect::<Vec<_>>(), [34, 6]),
        &device,
    );
    let (out, attention) = layer.forward_with_attention(x.clone(), &pattern);
    assert_eq!(attention.len(), 2);
    floats(out.clone()).iter().zip(floats(layer.forward(x.clone(), &pattern))).for_each(|(a, b)| assert_eq!(*a, b));
    // Each head's weights are a distribution over each node's neighbours, and the output is
    // their average of the projected features, head by head, concatenated.
    let wh = x.matmul(layer.weight.val());
    let mut heads = Vec::new();
    for (h, alpha) in attention.iter().enumerate() {
        let dense = alpha.to_dense();
        for sum in floats(dense.clone().sum_dim(1)) {
            assert!((sum - 1.0).abs() < 1e-5, "head {h}: a row sums to {sum}");
        }
        assert_eq!(alpha.nnz(), pattern.nnz());
        heads.push(dense.matmul(wh.clone().slice([0..34, h * 3..(h + 1) * 3])));
    }
    let expected = Tensor::cat(heads, 1) + layer.bias.as_ref().unwrap().val().unsqueeze();
    let (a, b) = (floats(out), floats(expected));
    near(&a, &b, 1e-5, "attention-weighted sum");
}

#[test]
fn models_compose_their_layers_and_refuse_bad_configs() {
    let _serial = serial();
    let device = crate::common_ops::dev();
    let adj = sparsegrad::nn::gcn_norm(&[(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)], 4, &device).unwrap();
    let x = Tensor::<2>::from_data(
        TensorData::new((0..20).map(|i| (i as f32 * 0.3).sin()).collect::<Vec<_>>(), [4, 5]),
        &device,
    );
    let xs = x.clone().to_sparse_csr().unwrap();
    for layers in [1, 2, 3] {
        // On a device without autodiff dropout is off: the model is its layers composed.
        let gcn = GcnConfig::new(5, 3).with_num_layers(layers).with_d_hidden(4).init(&device).unwrap();
        assert_eq!(gcn.layers.len(), layers);
        let mut h = gcn.layers[0].forward(x.clone(), &adj);
        for l in &gcn.layers[1..] {
            h = l.forward(relu(h), &adj);
        }
        near(&floats(gcn.forward(x.clone(), &adj)), &floats(h.clone()), 1e-6, "gcn");
        near(&floats(gcn.forward_sparse(&xs, &adj)), &floats(h), 1e-5, "gcn, sparse features");

        let gat = GatConfig::new(5, 3).with_num_layers(layers).with_heads(2).with_d_hidden(4).init(&device).unwrap();
        let pattern = adjacency_with_self_loops(&[(0, 1), (1, 2), (2, 3)], 4, &device).unwrap();
        let mut h = gat.layers[0].forward(x.clone(), &pattern);
        for l in &gat.layers[1..] {
            h = l.forward(elu(h, 1.0), &pattern);
        }
        assert_eq!(h.dims(), [4, 3]);
        near(&floats(gat.forward(x.clone(), &pattern)), &floats(h.clone()), 1e-6, "gat");
        near(&floats(gat.forward_sparse(&xs, &pattern)), &floats(h), 1e-5, "gat, sparse features");
        // The L2 penalty is the sum of squares of every parameter, biases included (nonzero here).
        let mut gat = gat;
        for l in &mut gat.layers {
            l.bias = l.bias.take().map(|b| Param::from_tensor(b.val().ones_like() * 0.5));
        }
        let sq = |t: Tensor<2>| floats(t.clone() * t).iter().sum::<f64>();
        let bias = |l: &sparsegrad::nn::GatConv| {
            let b = l.bias.as_ref().expect("a bias").val();
            floats(b.clone() * b).iter().sum::<f64>()
        };
        let l2: f64 =
            gat.layers.iter().map(|l| sq(l.weight.val()) + sq(l.att_src.val()) + sq(l.att_dst.val()) + bias(l)).sum();
        near(&floats(gat.l2_penalty()), &[l2], 1e-5, "l2");
    }
    for (what, e) in [
        ("gcn layers", GcnConfig::new(5, 3).with_num_layers(0).init(&device).err()),
        ("gcn dropout", GcnConfig::new(5, 3).with_dropout(1.0).init(&device).err()),
        ("gat layers", GatConfig::new(5, 3).with_num_layers(0).init(&device).err()),
        ("gat dropout", GatConfig::new(5, 3).with_dropout(-0.1).init(&device).err()),
        ("gat feature dropout", GatConfig::new(5, 3).with_feature_dropout(1.0).init(&device).err()),
        ("gat heads", GatConfig::new(5, 3).with_heads(0).init(&device).err()),
        ("gat output heads", GatConfig::new(5, 3).with_output_heads(0).init(&device).err()),
    ] {
        let e = e.unwrap_or_else(|| panic!("{what}: accepted")).to_string();
        assert!(e.contains("num_layers") || e.contains("dropout") || e.contains("heads"), "{what}: {e}");
    }
    // Dropout acts while training: two forward passes on an autodiff device differ.
    let ad = crate::common_ops::ad();
    ad.seed(3);
    let gcn = GcnConfig::new(5, 3).init(&ad).unwrap();
    let (x_ad, adj_ad) = (x.clone().to_device(&ad), adj.to_device(&ad));
    let (a, b) = (floats(gcn.forward(x_ad.clone(), &adj_ad)), floats(gcn.forward(x_ad.clone(), &adj_ad)));
    assert_ne!(a, b);
    near(&floats(gcn.valid().forward(x.clone(), &adj)), &floats(gcn.valid().forward(x, &adj)), 0.0, "valid");
}
