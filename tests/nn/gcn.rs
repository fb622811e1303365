//! GcnConv on Zachary's karate club: the forward pass against the dense formula, gradcheck of the
//! layer w.r.t. its weight and its input features, and a short full-supervision training run that
//! must fit every node (it cannot if the gradients are wrong).

use crate::common_ops::gradcheck;
use burn::module::{Module, Param, ParamId};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{activation::relu, DType, Device, Int, Tensor, TensorData};
use sparsegrad::gradcheck::{GradInput, GradcheckOptions};
use sparsegrad::nn::{gcn_norm, GcnConv, GcnConvConfig, Planetoid};
use sparsegrad::prelude::*;

fn karate() -> Planetoid {
    Planetoid::karate(concat!(env!("CARGO_MANIFEST_DIR"), "/data/karate")).expect("data/karate")
}

fn f64s(v: Vec<f64>, shape: [usize; 2], device: &Device) -> Tensor<2> {
    Tensor::from_data(TensorData::new(v, shape), (device, DType::F64))
}

/// `D^-1/2 (A + I) D^-1/2` computed densely from the edge list.
fn dense_norm(g: &Planetoid) -> Vec<f64> {
    let n = g.nodes;
    let mut a = vec![0.0; n * n];
    for i in 0..n {
        a[i * n + i] = 1.0;
    }
    for &(u, v) in &g.edges {
        a[u * n + v] = 1.0;
        a[v * n + u] = 1.0;
    }
    let d: Vec<f64> = (0..n).map(|i| a[i * n..(i + 1) * n].iter().sum::<f64>()).collect();
    (0..n * n).map(|k| a[k] / (d[k / n] * d[k % n]).sqrt()).collect()
}

fn as_f64(adj: &SparseTensor<2>, device: &Device) -> SparseTensor<2> {
    let v = adj.values_flat().into_data().iter::<f32>().map(|x| x as f64).collect::<Vec<_>>();
    let n = v.len();
    adj.with_values(f64s(v, [n, 1], device))
}

fn features(n: usize, d: usize, device: &Device) -> Tensor<2> {
    f64s((0..n * d).map(|i| ((i * 7919) % 13) as f64 / 6.0 - 1.0).collect(), [n, d], device)
}

#[test]
fn karate_graph_loads() {
    let _serial = crate::common_ops::serial();
    let g = karate();
    assert_eq!((g.nodes, g.edges.len(), g.num_classes), (34, 78, 2));
    assert_eq!(g.labels.iter().filter(|&&l| l == 1).count(), 17);
    assert_eq!((g.labels[0], g.labels[33]), (0, 1));
}

#[test]
fn forward_matches_dense_formula() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    let g = karate();
    let adj = as_f64(&gcn_norm(&g.edges, g.nodes, &device).unwrap(), &device);
    assert_eq!(adj.nnz(), 2 * 78 + 34);
    let layer = GcnConvConfig::new(5, 3).with_bias(true).init(&device);
    let w = f64s((0..15).map(|i| i as f64 / 7.0 - 1.0).collect(), [5, 3], &device);
    let b = Tensor::<1>::from_data(TensorData::new(vec![0.5f64, -1.0, 2.0], [3]), (&device, DType::F64));
    let layer = GcnConv {
        weight: Param::from_tensor(w.clone()),
        bias: layer.bias.clone().map(|_| Param::from_tensor(b.clone())),
        ..layer
    };
    let x = features(34, 5, &device);
    let got = layer.forward(x.clone(), &adj).into_data().iter::<f64>().collect::<Vec<_>>();
    let expected = (f64s(dense_norm(&g), [34, 34], &device).matmul(x.clone().matmul(w)) + b.unsqueeze::<2>())
        .into_data()
        .iter::<f64>()
        .collect::<Vec<_>>();
    // gcn_norm stores f32 values: agreement to f32 precision.
    for (a, e) in got.iter().zip(&expected) {
        assert!((a - e).abs() < 1e-6 * e.abs().max(1.0), "{a} vs {e}");
    }
    // Sparse features give the same result as their dense form.
    let xs = x.clone().to_sparse_csr().unwrap();
    let got_sparse = layer.forward_sparse(&xs, &adj).into_data().iter::<f64>().collect::<Vec<_>>();
    for (a, e) in got_sparse.iter().zip(&expected) {
        assert!((a - e).abs() < 1e-6 * e.abs().max(1.0), "{a} vs {e}");
    }
}

#[test]
fn gradcheck_layer_weight_and_features() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    let g = karate();
    let adj = as_f64(&gcn_norm(&g.edges, g.nodes, &device).unwrap(), &device);
    let w = f64s((0..8).map(|i| (i as f64 - 3.5) / 4.0).collect(), [4, 2], &device);
    let x = features(34, 4, &device);
    let report = gradcheck(
        |v| {
            let adj = adj.with_values(adj.values_flat().to_device(&v[0].device()));
            // `Param::initialized` keeps the tensor as given: it stays a node of gradcheck's graph.
            let layer = GcnConv {
                weight: Param::initialized(ParamId::new(), v[0].clone().reshape([4, 2])),
                ..GcnConvConfig::new(4, 2).with_bias(false).init(&v[0].device())
            };
            layer.forward(v[1].clone().reshape([34, 4]), &adj).tanh().reshape([68])
        },
        &[GradInput::dense("weight", &w), GradInput::dense("features", &x)],
        GradcheckOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.checked, 8 + 136);
    // Sparse features: gradients w.r.t. their stored values only.
    let xs = x.to_sparse_csr().unwrap();
    let report = gradcheck(
        |v| {
            let adj = adj.with_values(adj.values_flat().to_device(&v[0].device()));
            let xs = xs.with_values(v[1].clone().reshape([xs.nnz(), 1]));
            // `Param::initialized` keeps the tensor as given: it stays a node of gradcheck's graph.
            let layer = GcnConv {
                weight: Param::initialized(ParamId::new(), v[0].clone().reshape([4, 2])),
                ..GcnConvConfig::new(4, 2).with_bias(false).init(&v[0].device())
            };
            layer.forward_sparse(&xs, &adj).tanh().reshape([68])
        },
        &[GradInput::dense("weight", &w), GradInput::sparse("features", &xs)],
        GradcheckOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.checked, 8 + xs.nnz());
}

#[derive(Module, Debug)]
struct TwoLayer {
    l0: GcnConv,
    l1: GcnConv,
}

#[test]
fn short_training_fits_every_node() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::ad();
    device.seed(7);
    let g = karate();
    let adj = gcn_norm(&g.edges, g.nodes, &device).unwrap();
    let eye: Vec<f32> = (0..34 * 34).map(|k| if k / 34 == k % 34 { 1.0 } else { 0.0 }).collect();
    let x = Tensor::<2>::from_data(TensorData::new(eye, [34, 34]), &device).to_sparse_csr().unwrap();
    let labels = Tensor::<1, Int>::from_data(
        TensorData::new(g.labels.iter().map(|&l| l as i64).collect::<Vec<_>>(), [34]),
        &device,
    );
    let mut model = TwoLayer {
        l0: GcnConvConfig::new(34, 16).with_bias(true).init(&device),
        l1: GcnConvConfig::new(16, 2).with_bias(true).init(&device),
    };
    let mut optim = AdamConfig::new().init();
    let loss_fn = CrossEntropyLossConfig::new().init(&device);
    let mut first = None;
    for _ in 0..150 {
        let logits = model.l1.forward(relu(model.l0.forward_sparse(&x, &adj)), &adj);
        let loss = loss_fn.forward(logits, labels.clone());
        first.get_or_insert(loss.clone().into_scalar::<f32>());
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(0.05, model, grads);
    }
    let logits = model.l1.forward(relu(model.l0.forward_sparse(&x, &adj)), &adj);
    let last = loss_fn.forward(logits.clone(), labels.clone()).into_scalar::<f32>();
    let correct = logits.argmax(1).reshape([34]).equal(labels).int().sum().into_scalar::<i64>();
    assert_eq!(correct, 34, "training accuracy {correct}/34 (loss {} -> {last})", first.unwrap());
    assert!(last < first.unwrap() / 4.0);
}

#[test]
fn cora_planetoid_split_loads() {
    let _serial = crate::common_ops::serial();
    let g = Planetoid::new(None, "Cora").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((g.nodes, g.edges.len(), g.num_features, g.features.len(), g.num_classes), (2708, 5278, 1433, 49216, 7));
    assert_eq!((g.train.len(), g.val.len(), g.test.len()), (140, 500, 1000));
    // Planetoid: train = nodes 0..140, 20 per class; val = 140..640.
    assert_eq!(g.train, (0..140).collect::<Vec<_>>());
    assert_eq!(g.val, (140..640).collect::<Vec<_>>());
    for c in 0..7 {
        assert_eq!(g.train.iter().filter(|&&i| g.labels[i] == c).count(), 20);
    }
    assert!(g.edges.iter().all(|&(u, v)| u != v && u < 2708 && v < 2708));
}
