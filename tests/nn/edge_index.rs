//! The `edge_index` helpers (PyG's conventions): self loops, coalescing, `to_undirected`,
//! `degree` and `gcn_norm_edge_index` on a small directed weighted graph against values computed
//! by hand, the input checks, gradients through the weights, and the GCN normalisation of
//! Cora and the karate club against the existing `gcn_norm` path.

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use sparsegrad::nn::edge_index::coalesce;
use sparsegrad::nn::{
    add_remaining_self_loops, add_self_loops, degree, gcn_norm, gcn_norm_edge_index, remove_self_loops,
    to_propagation_matrix, to_sparse_adjacency, to_undirected, GcnNormOptions, Planetoid,
};
use sparsegrad::prelude::*;

fn dev() -> Device {
    crate::common_ops::dev()
}

fn edges(sources: &[i64], targets: &[i64]) -> Tensor<2, Int> {
    let mut v = sources.to_vec();
    v.extend_from_slice(targets);
    Tensor::from_data(TensorData::new(v, [2, sources.len()]), (&dev(), DType::I64))
}

fn weights(w: &[f64]) -> Tensor<1> {
    Tensor::from_data(TensorData::new(w.to_vec(), [w.len()]), (&dev(), DType::F64))
}

fn ints(t: Tensor<2, Int>) -> Vec<i64> {
    t.into_data().convert_dtype(DType::I64).iter::<i64>().collect()
}

fn floats<const D: usize>(t: Tensor<D>) -> Vec<f64> {
    t.into_data().convert_dtype(DType::F64).iter::<f64>().collect()
}

fn assert_near(a: &[f64], b: &[f64], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: {a:?} vs {b:?}");
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < 1e-6, "{what}: {a:?} vs {b:?}");
    }
}

#[test]
fn self_loops() {
    let ei = edges(&[0, 1, 1], &[0, 1, 2]);
    let w = weights(&[1.0, 2.0, 3.0]);
    let (e, w2) = add_self_loops(&ei, Some(&w), 3, 1.5).unwrap();
    assert_eq!(ints(e), [0, 1, 1, 0, 1, 2, 0, 1, 2, 0, 1, 2]);
    assert_eq!(floats(w2.unwrap()), [1.0, 2.0, 3.0, 1.5, 1.5, 1.5]);
    let (e, w2) = remove_self_loops(&ei, Some(&w)).unwrap();
    assert_eq!((ints(e), floats(w2.unwrap())), (vec![1, 2], vec![3.0]));
    let (e, none) = remove_self_loops(&ei, None).unwrap();
    assert!(none.is_none());
    assert_eq!(ints(e), [1, 2]);
    // Remaining loops: node 0 and 1 keep their loops' weights, node 2 gets the fill value.
    let (e, w2) =
        add_remaining_self_loops(&edges(&[0, 1, 2], &[1, 1, 0]), Some(&weights(&[1.0, 5.0, 2.0])), 3, 7.0).unwrap();
    assert_eq!(ints(e), [0, 2, 0, 1, 2, 1, 0, 0, 1, 2]);
    assert_eq!(floats(w2.unwrap()), [1.0, 2.0, 7.0, 5.0, 7.0]);
}

#[test]
fn undirected_coalesced_and_degree() {
    // (0, 1) w 1, (1, 0) w 2, (1, 2) w 4: both directions summed (PyG's reduce "add").
    let ei = edges(&[0, 1, 1], &[1, 0, 2]);
    let (e, w) = to_undirected(&ei, Some(&weights(&[1.0, 2.0, 4.0])), 3).unwrap();
    assert_eq!(ints(e), [0, 1, 1, 2, 1, 0, 2, 1]);
    assert_eq!(floats(w.unwrap()), [3.0, 3.0, 4.0, 4.0]);
    let (e, w) = to_undirected(&ei, None, 3).unwrap();
    assert!(w.is_none());
    assert_eq!(ints(e), [0, 1, 1, 2, 1, 0, 2, 1]);
    let (e, w) = coalesce(&edges(&[2, 0, 2], &[1, 1, 1]), Some(&weights(&[1.0, 2.0, 4.0])), 3).unwrap();
    assert_eq!((ints(e), floats(w.unwrap())), (vec![0, 2, 1, 1], vec![2.0, 5.0]));
    let targets = Tensor::<1, Int>::from_data(TensorData::new(vec![1i64, 2, 2], [3]), &dev());
    let d = degree(&targets, 4).unwrap();
    assert_eq!(d.into_data().convert_dtype(DType::I64).iter::<i64>().collect::<Vec<_>>(), [0, 1, 2, 0]);
    // Empty graphs.
    let (e, w) = to_undirected(&edges(&[], &[]), Some(&weights(&[])), 2).unwrap();
    assert_eq!((e.dims(), floats(w.unwrap()).len()), ([2, 0], 0));
}

#[test]
fn gcn_norm_of_a_directed_weighted_graph() {
    // 0 -> 1 (w 1), 0 -> 2 (w 2), 1 -> 2 (w 3); in-degrees with unit loops: 1, 2, 6.
    let ei = edges(&[0, 0, 1], &[1, 2, 2]);
    let w = weights(&[1.0, 2.0, 3.0]);
    let (e, norm) = gcn_norm_edge_index(&ei, Some(&w), 3, GcnNormOptions::default()).unwrap();
    assert_eq!(ints(e.clone()), [0, 0, 1, 0, 1, 2, 1, 2, 2, 0, 1, 2]);
    let s = f64::sqrt;
    let expected = [1.0 / s(2.0), 2.0 / s(6.0), 3.0 / s(12.0), 1.0, 0.5, 1.0 / 6.0];
    assert_near(&floats(norm.clone()), &expected, "gcn_norm");
    // The propagation matrix: P[target, source].
    let p = to_propagation_matrix(&e, Some(&norm), 3).unwrap();
    let dense = floats(p.to_dense());
    let mut want = [0.0; 9];
    for (k, (src, dst)) in [(0, 1), (0, 2), (1, 2), (0, 0), (1, 1), (2, 2)].into_iter().enumerate() {
        want[dst * 3 + src] = expected[k];
    }
    assert_near(&dense, &want, "propagation matrix");
    let a = to_sparse_adjacency(&e, Some(&norm), 3).unwrap();
    assert_near(&floats(a.to_dense().transpose().reshape([9])), &want, "adjacency");
    // improved: loops weigh 2, in-degrees 2, 3, 7.
    let opts = GcnNormOptions { add_self_loops: true, improved: true };
    let (_, norm) = gcn_norm_edge_index(&ei, Some(&w), 3, opts).unwrap();
    let expected = [1.0 / s(6.0), 2.0 / s(14.0), 3.0 / s(21.0), 1.0, 2.0 / 3.0, 2.0 / 7.0];
    assert_near(&floats(norm), &expected, "improved");
    // No loops: node 0 has in-degree 0, so its edges weigh 0 (PyG masks the infinity).
    let opts = GcnNormOptions { add_self_loops: false, improved: false };
    let (e, norm) = gcn_norm_edge_index(&ei, None, 3, opts).unwrap();
    assert_eq!(ints(e), [0, 0, 1, 1, 2, 2]);
    assert_near(&floats(norm), &[0.0, 0.0, 1.0 / s(2.0)], "no loops");
}

#[test]
fn gradients_reach_the_edge_weights() {
    let device = crate::common_ops::ad();
    let ei = Tensor::<2, Int>::from_data(TensorData::new(vec![0i64, 0, 1, 1, 2, 2], [2, 3]), (&device, DType::I64));
    let w = Tensor::<1>::from_data(TensorData::new(vec![1.0f64, 2.0, 3.0], [3]), (&device, DType::F64)).require_grad();
    let (e, norm) = gcn_norm_edge_index(&ei, Some(&w), 3, GcnNormOptions::default()).unwrap();
    let p = to_propagation_matrix(&e, Some(&norm), 3).unwrap();
    let x = Tensor::<2>::from_data(TensorData::new(vec![1.0f64, 2.0, 3.0], [3, 1]), (&device, DType::F64));
    let out = sparsegrad::sparse::mm(&p, x).sum();
    let g = floats(w.grad(&out.backward()).unwrap());
    // Central differences of the same function.
    let f = |wv: &[f64]| {
        let (e, n) =
            gcn_norm_edge_index(&edges(&[0, 0, 1], &[1, 2, 2]), Some(&weights(wv)), 3, GcnNormOptions::default())
                .unwrap();
        let p = to_propagation_matrix(&e, Some(&n), 3).unwrap();
        let x = Tensor::<2>::from_data(TensorData::new(vec![1.0f64, 2.0, 3.0], [3, 1]), (&dev(), DType::F64));
        floats(sparsegrad::sparse::mm(&p, x).sum())[0]
    };
    for k in 0..3 {
        let (mut hi, mut lo) = ([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]);
        hi[k] += 1e-6;
        lo[k] -= 1e-6;
        let numeric = (f(&hi) - f(&lo)) / 2e-6;
        assert!((g[k] - numeric).abs() < 1e-6, "edge {k}: {} vs {numeric}", g[k]);
    }
}

#[test]
fn bad_input_is_named() {
    let err = gcn_norm_edge_index(&edges(&[0, 5], &[1, 0]), None, 3, GcnNormOptions::default()).unwrap_err();
    assert_eq!(err, SparseError::IndexOutOfBounds { component: "edge_index", dim: 0, position: 1, value: 5, size: 3 });
    let err = to_undirected(&edges(&[0, 1], &[1, -1]), None, 3).unwrap_err();
    assert_eq!(err, SparseError::IndexOutOfBounds { component: "edge_index", dim: 1, position: 1, value: -1, size: 3 });
    let three = Tensor::<2, Int>::from_data(TensorData::new(vec![0i64; 6], [3, 2]), &dev());
    assert!(matches!(
        add_self_loops(&three, None, 3, 1.0),
        Err(SparseError::ShapeMismatch { component: "edge_index", .. })
    ));
    assert!(matches!(
        remove_self_loops(&edges(&[0], &[1]), Some(&weights(&[1.0, 2.0]))),
        Err(SparseError::ShapeMismatch { component: "edge_weight", .. })
    ));
    let index = Tensor::<1, Int>::from_data(TensorData::new(vec![0i64, 3], [2]), &dev());
    assert!(matches!(degree(&index, 3), Err(SparseError::IndexOutOfBounds { position: 1, value: 3, .. })));
    // A node count no machine holds is an allocation error, not an abort.
    let huge = usize::MAX / 4;
    assert!(matches!(add_self_loops(&edges(&[0], &[1]), None, huge, 1.0), Err(SparseError::Allocation { .. })));
    assert!(matches!(degree(&index, huge), Err(SparseError::Allocation { .. })));
    let opts = GcnNormOptions { add_self_loops: false, improved: false };
    assert!(matches!(gcn_norm_edge_index(&edges(&[0], &[1]), None, huge, opts), Err(SparseError::Allocation { .. })));
}

/// The edge_index path (both directions, then `gcn_norm_edge_index`) gives the existing
/// `gcn_norm`'s matrix on an undirected graph listed once per edge.
fn matches_existing_gcn_norm(g: &Planetoid) {
    let (s, t): (Vec<i64>, Vec<i64>) = g.edges.iter().map(|&(u, v)| (u as i64, v as i64)).unzip();
    let ei = edges(&s, &t);
    let (und, w) = to_undirected(&ei, None, g.nodes).unwrap();
    let (e, norm) = gcn_norm_edge_index(&und, w.as_ref(), g.nodes, GcnNormOptions::default()).unwrap();
    let ours = to_propagation_matrix(&e, Some(&norm), g.nodes).unwrap();
    let theirs = gcn_norm(&g.edges, g.nodes, &dev()).unwrap();
    let (oc, op) = ours.compressed_indices_flat().unwrap();
    let (tc, tp) = theirs.compressed_indices_flat().unwrap();
    let i = |t: Tensor<2, Int>| t.into_data().convert_dtype(DType::I64).iter::<i64>().collect::<Vec<_>>();
    assert_eq!(i(oc), i(tc));
    assert_eq!(i(op), i(tp));
    assert_near(&floats(ours.values_flat()), &floats(theirs.values_flat()), "values");
}

#[test]
fn cora_and_karate_match_the_existing_gcn_norm() {
    let root = env!("CARGO_MANIFEST_DIR");
    matches_existing_gcn_norm(&Planetoid::karate(format!("{root}/data/karate")).unwrap());
    matches_existing_gcn_norm(&Planetoid::new(None, "Cora").unwrap_or_else(|e| panic!("{e}")));
}
