//! GatConv on Zachary's karate club: the forward pass against a dense attention reference (scores
//! -inf off the pattern, row softmax, dense product), gradcheck w.r.t. the weight, the attention
//! vectors and the input features, and a short training run that must fit every node.

use crate::common_ops::gradcheck;
use burn::module::{Module, Param, ParamId};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{activation, DType, Device, Int, Tensor, TensorData};
use sparsegrad::gradcheck::{GradInput, GradcheckOptions};
use sparsegrad::nn::{adjacency_with_self_loops, GatConv, GatConvConfig, Planetoid};
use sparsegrad::prelude::*;

fn karate() -> Planetoid {
    Planetoid::karate(concat!(env!("CARGO_MANIFEST_DIR"), "/data/karate")).expect("data/karate")
}

fn f64s<const D: usize>(v: Vec<f64>, shape: [usize; D], device: &Device) -> Tensor<D> {
    Tensor::from_data(TensorData::new(v, shape), (device, DType::F64))
}

fn values(t: Tensor<2>) -> Vec<f64> {
    t.into_data().iter::<f64>().collect()
}

fn pattern_f64(g: &Planetoid, device: &Device) -> SparseTensor<2> {
    let a = adjacency_with_self_loops(&g.edges, g.nodes, device).unwrap();
    let n = a.nnz();
    a.with_values(f64s(vec![1.0; n], [n, 1], device))
}

/// A layer with the given parameters (kept as given: `Param::initialized`, so they stay nodes of
/// whatever graph built them).
fn layer(config: &GatConvConfig, w: Tensor<2>, src: Tensor<2>, dst: Tensor<2>, device: &Device) -> GatConv {
    let base = config.clone().with_bias(false).init(device);
    GatConv {
        weight: Param::initialized(ParamId::new(), w),
        att_src: Param::initialized(ParamId::new(), src),
        att_dst: Param::initialized(ParamId::new(), dst),
        ..base
    }
}

#[allow(clippy::too_many_arguments)] // the layer's parts, one argument each
fn dense_reference(
    g: &Planetoid,
    x: &[f64],
    w: &[f64],
    src: &[f64],
    dst: &[f64],
    d_in: usize,
    f: usize,
    heads: usize,
) -> Vec<f64> {
    let n = g.nodes;
    let mut adj = vec![false; n * n];
    for i in 0..n {
        adj[i * n + i] = true;
    }
    for &(u, v) in &g.edges {
        adj[u * n + v] = true;
        adj[v * n + u] = true;
    }
    let width = heads * f;
    let wh: Vec<f64> =
        (0..n * width).map(|k| (0..d_in).map(|p| x[(k / width) * d_in + p] * w[p * width + k % width]).sum()).collect();
    let mut out = vec![0.0; n * width];
    for h in 0..heads {
        let score = |i: usize, a: &[f64]| (0..f).map(|t| wh[i * width + h * f + t] * a[h * f + t]).sum::<f64>();
        for i in 0..n {
            let e: Vec<f64> = (0..n)
                .map(|j| {
                    if adj[i * n + j] {
                        let s = score(i, dst) + score(j, src);
                        if s > 0.0 {
                            s
                        } else {
                            0.2 * s
                        }
                    } else {
                        f64::NEG_INFINITY
                    }
                })
                .collect();
            let m = e.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let z: f64 = e.iter().map(|v| (v - m).exp()).sum();
            for j in 0..n {
                let a = (e[j] - m).exp() / z;
                for t in 0..f {
                    out[i * width + h * f + t] += a * wh[j * width + h * f + t];
                }
            }
        }
    }
    out
}

fn params(d_in: usize, f: usize, heads: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let n = 34;
    let x = (0..n * d_in).map(|i| ((i * 7919) % 13) as f64 / 6.0 - 1.0).collect();
    let w = (0..d_in * heads * f).map(|i| ((i * 31) % 17) as f64 / 8.0 - 1.0).collect();
    let src = (0..heads * f).map(|i| (i as f64 - 2.0) / 5.0).collect();
    let dst = (0..heads * f).map(|i| (3.0 - i as f64) / 7.0).collect();
    (x, w, src, dst)
}

#[test]
fn forward_matches_dense_attention() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    let g = karate();
    let adj = pattern_f64(&g, &device);
    let (d_in, f, heads) = (5, 3, 2);
    let (x, w, src, dst) = params(d_in, f, heads);
    let config = GatConvConfig::new(d_in, f).with_heads(heads);
    let l = layer(
        &config,
        f64s(w.clone(), [d_in, heads * f], &device),
        f64s(src.clone(), [heads, f], &device),
        f64s(dst.clone(), [heads, f], &device),
        &device,
    );
    let xt = f64s(x.clone(), [34, d_in], &device);
    let got = values(l.forward(xt.clone(), &adj));
    let expected = dense_reference(&g, &x, &w, &src, &dst, d_in, f, heads);
    for (a, e) in got.iter().zip(&expected) {
        assert!((a - e).abs() < 1e-9, "{a} vs {e}");
    }
    let got_sparse = values(l.forward_sparse(&xt.to_sparse_csr().unwrap(), &adj));
    for (a, e) in got_sparse.iter().zip(&expected) {
        assert!((a - e).abs() < 1e-9, "{a} vs {e}");
    }
    // Averaged heads: the mean of the two head blocks.
    let mean_layer = layer(
        &config.clone().with_concat(false),
        f64s(w, [d_in, heads * f], &device),
        f64s(src, [heads, f], &device),
        f64s(dst, [heads, f], &device),
        &device,
    );
    let got_mean = values(mean_layer.forward(f64s(x, [34, d_in], &device), &adj));
    for i in 0..34 {
        for t in 0..f {
            let e = (expected[i * 6 + t] + expected[i * 6 + 3 + t]) / 2.0;
            assert!((got_mean[i * f + t] - e).abs() < 1e-9);
        }
    }
}

#[test]
fn gradcheck_weight_attention_and_features() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::dev();
    let g = karate();
    let adj = pattern_f64(&g, &device);
    let (d_in, f, heads) = (3, 2, 2);
    let (x, w, src, dst) = params(d_in, f, heads);
    let config = GatConvConfig::new(d_in, f).with_heads(heads);
    let inputs = [
        GradInput::dense("weight", &f64s(w, [d_in, heads * f], &device)),
        GradInput::dense("att_src", &f64s(src, [heads, f], &device)),
        GradInput::dense("att_dst", &f64s(dst, [heads, f], &device)),
        GradInput::dense("features", &f64s(x, [34, d_in], &device)),
    ];
    let report = gradcheck(
        |v| {
            let dev = v[0].device();
            let adj = adj.with_values(adj.values_flat().to_device(&dev));
            let l = layer(
                &config,
                v[0].clone().reshape([d_in, heads * f]),
                v[1].clone().reshape([heads, f]),
                v[2].clone().reshape([heads, f]),
                &dev,
            );
            l.forward(v[3].clone().reshape([34, d_in]), &adj).tanh().reshape([34 * heads * f])
        },
        &inputs,
        GradcheckOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.checked, d_in * heads * f + 2 * heads * f + 34 * d_in);
}

#[derive(Module, Debug)]
struct TwoLayer {
    l0: GatConv,
    l1: GatConv,
}

#[test]
fn short_training_fits_every_node() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::ad();
    device.seed(3);
    let g = karate();
    let adj = adjacency_with_self_loops(&g.edges, g.nodes, &device).unwrap();
    let eye: Vec<f32> = (0..34 * 34).map(|k| if k / 34 == k % 34 { 1.0 } else { 0.0 }).collect();
    let x = Tensor::<2>::from_data(TensorData::new(eye, [34, 34]), &device).to_sparse_csr().unwrap();
    let labels = Tensor::<1, Int>::from_data(
        TensorData::new(g.labels.iter().map(|&l| l as i64).collect::<Vec<_>>(), [34]),
        &device,
    );
    let mut model = TwoLayer {
        l0: GatConvConfig::new(34, 4).with_heads(2).init(&device),
        l1: GatConvConfig::new(8, 2).with_concat(false).init(&device),
    };
    let mut optim = AdamConfig::new().init();
    let loss_fn = CrossEntropyLossConfig::new().init(&device);
    let forward = |m: &TwoLayer| m.l1.forward(activation::elu(m.l0.forward_sparse(&x, &adj), 1.0), &adj);
    let first = loss_fn.forward(forward(&model), labels.clone()).into_scalar::<f32>();
    for _ in 0..150 {
        let loss = loss_fn.forward(forward(&model), labels.clone());
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(0.05, model, grads);
    }
    let logits = forward(&model);
    let last = loss_fn.forward(logits.clone(), labels.clone()).into_scalar::<f32>();
    let correct = logits.argmax(1).reshape([34]).equal(labels).int().sum().into_scalar::<i64>();
    assert_eq!(correct, 34, "training accuracy {correct}/34 (loss {first} -> {last})");
    assert!(last < first / 4.0);
}
