//! The message-passing layers with PyG's semantics (`SageConv`, `GinConv`, `GraphConv`,
//! `AppnpPropagation`) on a small directed weighted graph (node 4 has no incoming edge): each
//! forward against a dense reference built with burn's dense ops from the same edges, and
//! gradcheck (f64) of `SageConv` with max aggregation and of `GinConv` with a trainable eps,
//! w.r.t. the features and the parameters; and both layers trained on the karate club from its
//! `edge_index`.

use crate::common_ops::gradcheck;
use burn::module::{Param, ParamId};
use burn::nn::Linear;
use burn::tensor::{activation::relu, DType, Device, Int, Tensor, TensorData};
use sparsegrad::gradcheck::{GradInput, GradcheckOptions};
use sparsegrad::nn::{
    gcn_norm_edge_index, to_propagation_matrix, Aggregation, AppnpPropagationConfig, GcnNormOptions, GinConv,
    GinConvConfig, GinMlp, GraphConv, GraphConvConfig, SageConv, SageConvConfig,
};
use sparsegrad::prelude::*;

const N: usize = 5;
/// `(source, target, weight)`.
const EDGES: [(usize, usize, f64); 8] =
    [(0, 1, 0.5), (2, 1, 1.5), (3, 1, -1.0), (1, 0, 2.0), (4, 0, 0.25), (0, 2, 1.0), (1, 3, -0.5), (2, 3, 3.0)];

fn f64s<const D: usize>(v: Vec<f64>, shape: [usize; D], device: &Device) -> Tensor<D> {
    Tensor::from_data(TensorData::new(v, shape), (device, DType::F64))
}

fn values<const D: usize>(t: Tensor<D>) -> Vec<f64> {
    t.into_data().convert_dtype(DType::F64).iter::<f64>().collect()
}

fn assert_near(a: Tensor<2>, b: Tensor<2>, what: &str) {
    let (a, b) = (values(a), values(b));
    assert_eq!(a.len(), b.len(), "{what}");
    for (x, y) in a.iter().zip(&b) {
        assert!((x - y).abs() < 1e-10, "{what}: {a:?} vs {b:?}");
    }
}

fn edge_index(device: &Device) -> Tensor<2, Int> {
    let mut v: Vec<i64> = EDGES.iter().map(|e| e.0 as i64).collect();
    v.extend(EDGES.iter().map(|e| e.1 as i64));
    Tensor::from_data(TensorData::new(v, [2, EDGES.len()]), (device, DType::I64))
}

/// The propagation matrix with the edges' weights (`weighted`) or ones, f64.
fn adj(weighted: bool, device: &Device) -> SparseTensor<2> {
    let w = EDGES.iter().map(|e| if weighted { e.2 } else { 1.0 }).collect();
    to_propagation_matrix(&edge_index(device), Some(&f64s(w, [EDGES.len()], device)), N).unwrap()
}

/// The propagation matrix with unit f32 values (for layers initialised by their configs).
fn adj32(device: &Device) -> SparseTensor<2> {
    to_propagation_matrix(&edge_index(device), None, N).unwrap()
}

/// The dense `[N, N]` matrix with `m[target, source] = weight` (or 1), by burn's `select_assign`
/// on the flat positions.
fn dense_adj(weighted: bool, device: &Device) -> Tensor<2> {
    let pos: Vec<i64> = EDGES.iter().map(|e| (e.1 * N + e.0) as i64).collect();
    let w = EDGES.iter().map(|e| if weighted { e.2 } else { 1.0 }).collect();
    let pos = Tensor::<1, Int>::from_data(TensorData::new(pos, [EDGES.len()]), (device, DType::I64));
    Tensor::<1>::zeros([N * N], (device, DType::F64))
        .select_assign(0, pos, f64s(w, [EDGES.len()], device), burn::tensor::IndexingUpdateOp::Add)
        .reshape([N, N])
}

/// Features `[N, d]`, all distinct (no ties in a max).
fn features(d: usize, device: &Device) -> Tensor<2> {
    f64s((0..N * d).map(|i| ((i * 37 % 23) as f64 - 11.0) / 7.0).collect(), [N, d], device)
}

fn param<const D: usize>(t: Tensor<D>) -> Param<Tensor<D>> {
    Param::initialized(ParamId::new(), t)
}

fn linear(w: Tensor<2>, b: Option<Tensor<1>>) -> Linear {
    Linear { weight: param(w), bias: b.map(param) }
}

fn weight(d_in: usize, d_out: usize, seed: usize, device: &Device) -> Tensor<2> {
    f64s((0..d_in * d_out).map(|i| (((i + seed) * 17 % 11) as f64 - 5.0) / 6.0).collect(), [d_in, d_out], device)
}

fn bias(d: usize, device: &Device) -> Tensor<1> {
    f64s((0..d).map(|i| i as f64 * 0.1 - 0.2).collect(), [d], device)
}

/// Max over each row's neighbours of `x` (`a01 [N, N]` the pattern), 0 for a row with none.
fn dense_max(a01: Tensor<2>, x: Tensor<2>) -> Tensor<2> {
    let d = x.dims()[1];
    let present = a01.clone().unsqueeze_dim::<3>(2).repeat_dim(2, d).greater_elem(0.5);
    let xs = x.unsqueeze_dim::<3>(0).repeat_dim(0, N);
    let max = xs.mask_fill(present.bool_not(), f64::NEG_INFINITY).max_dim(1).reshape([N, d]);
    let empty = a01.sum_dim(1).equal_elem(0.0).repeat_dim(1, d);
    max.mask_fill(empty, 0.0)
}

fn sage(aggr: Aggregation, root: bool, device: &Device) -> SageConv {
    SageConv {
        lin_l: linear(weight(3, 2, 0, device), Some(bias(2, device))),
        lin_r: root.then(|| linear(weight(3, 2, 5, device), None)),
        aggr,
        normalize: false,
    }
}

#[test]
fn sage_conv_matches_dense() {
    let device = crate::common_ops::dev();
    let (a, a01, x) = (adj(false, &device), dense_adj(false, &device), features(3, &device));
    let (wl, wr, b) = (weight(3, 2, 0, &device), weight(3, 2, 5, &device), bias(2, &device).unsqueeze::<2>());
    let deg = a01.clone().sum_dim(1).clamp_min(1.0);
    let mean = a01.clone().matmul(x.clone()) / deg;
    let root = x.clone().matmul(wr);
    assert_near(
        sage(Aggregation::Mean, true, &device).forward(x.clone(), &a),
        mean.matmul(wl.clone()) + b.clone() + root.clone(),
        "sage mean",
    );
    let max = dense_max(a01, x.clone());
    assert_near(
        sage(Aggregation::Max, true, &device).forward(x.clone(), &a),
        max.clone().matmul(wl.clone()) + b.clone() + root,
        "sage max",
    );
    assert_near(sage(Aggregation::Max, false, &device).forward(x.clone(), &a), max.matmul(wl) + b, "sage max no root");
    // The config builds the same shapes, and normalize gives unit rows.
    let layer = SageConvConfig::new(3, 4).with_aggr(Aggregation::Max).with_normalize(true).init(&device);
    let y = layer.forward(features(3, &device).cast(DType::F32), &adj32(&device));
    let norms = values(y.clone().powi_scalar(2).sum_dim(1).sqrt());
    assert!(norms.iter().all(|v| (v - 1.0).abs() < 1e-5), "{norms:?}");
}

#[test]
fn sage_conv_on_sparse_features_matches_dense_features() {
    let device = crate::common_ops::dev();
    let a = adj(false, &device);
    // Features with zeros, as bag-of-words are, stored CSR and COO, and uncoalesced.
    let x = features(3, &device).clamp_min(0.0);
    let mut sparse = vec![("csr", x.clone().to_sparse_csr().unwrap()), ("coo", x.clone().to_sparse_coo(2).unwrap())];
    sparse.push(("uncoalesced", crate::common_ops::uncoalesced::<2, 1>(&sparse[1].1)));
    for (aggr, root) in [(Aggregation::Mean, true), (Aggregation::Sum, true), (Aggregation::Mean, false)] {
        let layer = sage(aggr, root, &device);
        let expected = layer.forward(x.clone(), &a);
        for (layout, xs) in &sparse {
            assert_near(layer.forward_sparse(xs, &a).unwrap(), expected.clone(), &format!("{aggr:?} {layout}"));
        }
    }
    let e = sage(Aggregation::Max, true, &device).forward_sparse(&sparse[0].1, &a).unwrap_err().to_string();
    assert!(e.contains("forward_sparse") && e.contains("Max"), "{e}");
}

fn gin(eps: Option<Tensor<1>>, device: &Device) -> GinConv<GinMlp> {
    GinConv {
        mlp: GinMlp {
            lin1: linear(weight(3, 4, 1, device), Some(bias(4, device))),
            lin2: linear(weight(4, 2, 2, device), Some(bias(2, device))),
        },
        eps_param: eps.map(param),
        eps: 0.3,
    }
}

#[test]
fn gin_conv_matches_dense() {
    let device = crate::common_ops::dev();
    let (a, a01, x) = (adj(false, &device), dense_adj(false, &device), features(3, &device));
    let h = x.clone() * 1.3 + a01.matmul(x.clone());
    let mlp = |h: Tensor<2>| {
        relu(h.matmul(weight(3, 4, 1, &device)) + bias(4, &device).unsqueeze::<2>()).matmul(weight(4, 2, 2, &device))
            + bias(2, &device).unsqueeze::<2>()
    };
    assert_near(gin(None, &device).forward(x.clone(), &a), mlp(h.clone()), "gin fixed eps");
    let eps = f64s(vec![0.3], [1], &device);
    assert_near(gin(Some(eps), &device).forward(x.clone(), &a), mlp(h), "gin trainable eps");
    let layer = GinConvConfig::new(3, 8, 2).with_train_eps(true).init(&device);
    assert!(layer.eps_param.is_some());
    // Any network: a single linear map.
    let single = GinConv::new(linear(weight(3, 2, 6, &device), None), 0.3, false, &device);
    let h = x.clone() * 1.3 + dense_adj(false, &device).matmul(x.clone());
    assert_near(single.forward(x.clone(), &a), h.matmul(weight(3, 2, 6, &device)), "gin linear");
    assert_eq!(layer.forward(x.cast(DType::F32), &adj32(&device)).dims(), [N, 2]);
}

#[test]
fn graph_conv_matches_dense() {
    let device = crate::common_ops::dev();
    let (a, aw, x) = (adj(true, &device), dense_adj(true, &device), features(3, &device));
    let layer = |aggr| GraphConv {
        lin_rel: linear(weight(3, 2, 3, &device), Some(bias(2, &device))),
        lin_root: linear(weight(3, 2, 4, &device), None),
        aggr,
    };
    let root = x.clone().matmul(weight(3, 2, 4, &device));
    let rel = |agg: Tensor<2>| agg.matmul(weight(3, 2, 3, &device)) + bias(2, &device).unsqueeze::<2>();
    let sum = aw.clone().matmul(x.clone());
    assert_near(layer(Aggregation::Sum).forward(x.clone(), &a), rel(sum.clone()) + root.clone(), "graph conv sum");
    let deg = dense_adj(false, &device).sum_dim(1).clamp_min(1.0);
    assert_near(layer(Aggregation::Mean).forward(x.clone(), &a), rel(sum / deg) + root, "graph conv mean");
    let config = GraphConvConfig::new(3, 2);
    assert_eq!((config.aggr, config.bias), (Aggregation::Sum, true));
    assert_eq!(config.init(&device).forward(x.cast(DType::F32), &adj32(&device)).dims(), [N, 2]);
}

#[test]
fn appnp_matches_dense() {
    let device = crate::common_ops::dev();
    let ones = f64s(vec![1.0; EDGES.len()], [EDGES.len()], &device);
    let (e, norm) = gcn_norm_edge_index(&edge_index(&device), Some(&ones), N, GcnNormOptions::default()).unwrap();
    let a = to_propagation_matrix(&e, Some(&norm), N).unwrap();
    // Â = D^-1/2 (A + I) D^-1/2 with D the in-degrees (row sums of P + I).
    let pi = dense_adj(false, &device) + Tensor::<2>::eye(N, &device).cast(DType::F64);
    let dinv = pi.clone().sum_dim(1).powf_scalar(-0.5);
    let hat = dinv.clone() * pi * dinv.reshape([1, N]);
    let x = features(3, &device);
    let (k, alpha) = (4, 0.1);
    let mut h = x.clone();
    for _ in 0..k {
        h = hat.clone().matmul(h) * (1.0 - alpha) + x.clone() * alpha;
    }
    let prop = AppnpPropagationConfig::new(k, alpha).init();
    assert_near(prop.forward(x, &a), h, "appnp");
}

#[test]
fn gradcheck_sage_max_and_gin() {
    let device = crate::common_ops::ad();
    let a = adj(false, &device);
    let x = features(3, &device);
    let (wl, wr) = (weight(3, 2, 0, &device), weight(3, 2, 5, &device));
    let report = gradcheck(
        |v| {
            let layer = SageConv {
                lin_l: linear(v[1].clone().reshape([3, 2]), None),
                lin_r: Some(linear(v[2].clone().reshape([3, 2]), None)),
                aggr: Aggregation::Max,
                normalize: false,
            };
            layer.forward(v[0].clone().reshape([N, 3]), &a).tanh().reshape([N * 2])
        },
        &[GradInput::dense("x", &x), GradInput::dense("lin_l", &wl), GradInput::dense("lin_r", &wr)],
        GradcheckOptions::default(),
    )
    .unwrap_or_else(|e| panic!("sage max: {e}"));
    assert_eq!(report.checked, 15 + 6 + 6);
    let (w1, w2) = (weight(3, 4, 1, &device), weight(4, 2, 2, &device));
    let eps = f64s(vec![0.3], [1], &device);
    let report = gradcheck(
        |v| {
            let layer = GinConv {
                mlp: GinMlp {
                    lin1: linear(v[2].clone().reshape([3, 4]), None),
                    lin2: linear(v[3].clone().reshape([4, 2]), None),
                },
                eps_param: Some(param(v[1].clone())),
                eps: 0.0,
            };
            layer.forward(v[0].clone().reshape([N, 3]), &a).tanh().reshape([N * 2])
        },
        &[
            GradInput::dense("x", &x),
            GradInput::dense("eps", &eps),
            GradInput::dense("lin1", &w1),
            GradInput::dense("lin2", &w2),
        ],
        GradcheckOptions::default(),
    )
    .unwrap_or_else(|e| panic!("gin: {e}"));
    assert_eq!(report.checked, 15 + 1 + 12 + 8);
}

#[derive(burn::module::Module, Debug)]
struct SageGin {
    sage: SageConv,
    gin: GinConv,
}

/// The edge_index path end to end on the karate club: the undirected propagation matrix from
/// `to_undirected`, a `SageConv` (mean) then a `GinConv` with trainable eps, trained with Adam
/// until it fits every node (it cannot if a gradient is wrong).
#[test]
fn sage_and_gin_train_on_karate() {
    use burn::nn::loss::CrossEntropyLossConfig;
    use burn::optim::{AdamConfig, GradientsParams};
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::ad();
    device.seed(11);
    let g = sparsegrad::nn::Planetoid::karate(concat!(env!("CARGO_MANIFEST_DIR"), "/data/karate")).unwrap();
    let (s, t): (Vec<i64>, Vec<i64>) = g.edges.iter().map(|&(u, v)| (u as i64, v as i64)).unzip();
    let mut flat = s;
    flat.extend(t);
    let ei = Tensor::<2, Int>::from_data(TensorData::new(flat, [2, g.edges.len()]), (&device, DType::I64));
    let (und, _) = sparsegrad::nn::to_undirected(&ei, None, g.nodes).unwrap();
    let adj = to_propagation_matrix(&und, None, g.nodes).unwrap();
    let x = Tensor::<2>::eye(g.nodes, &device);
    let labels = Tensor::<1, Int>::from_data(
        TensorData::new(g.labels.iter().map(|&l| l as i64).collect::<Vec<_>>(), [g.nodes]),
        &device,
    );
    let mut model = SageGin {
        sage: SageConvConfig::new(g.nodes, 16).init(&device),
        gin: GinConvConfig::new(16, 16, 2).with_train_eps(true).init(&device),
    };
    let forward = |m: &SageGin| m.gin.forward(relu(m.sage.forward(x.clone(), &adj)), &adj);
    let mut optim = AdamConfig::new().init();
    let loss_fn = CrossEntropyLossConfig::new().init(&device);
    let eps0 = values(model.gin.eps_param.as_ref().unwrap().val());
    for _ in 0..100 {
        let loss = loss_fn.forward(forward(&model), labels.clone());
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(0.02, model, grads);
    }
    let logits = forward(&model);
    let correct = logits.argmax(1).reshape([g.nodes]).equal(labels).int().sum().into_scalar::<i64>();
    assert_eq!(correct as usize, g.nodes, "training accuracy {correct}/{}", g.nodes);
    // eps was trained.
    assert_ne!(values(model.gin.eps_param.as_ref().unwrap().val()), eps0);
}
