//! `partition_graph` and `cluster_subgraph`: every node in a part, parts within the balance cap,
//! far fewer cut edges than a balanced random assignment (a planted-community graph, where the
//! communities should come back, the karate club and Cora), the same partition from the same
//! seed; the induced subgraph against the dense submatrix, with gradients to the kept values; and
//! the input checks.

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use sparsegrad::nn::{cluster_subgraph, partition_graph, to_propagation_matrix, to_undirected, Planetoid};
use sparsegrad::prelude::*;

fn dev() -> Device {
    crate::common_ops::dev()
}

fn graph(edges: &[(usize, usize)], n: usize) -> SparseTensor<2> {
    let (s, t): (Vec<i64>, Vec<i64>) = edges.iter().map(|&(u, v)| (u as i64, v as i64)).unzip();
    let mut v = s;
    v.extend(t);
    let ei = Tensor::<2, Int>::from_data(TensorData::new(v, [2, edges.len()]), (&dev(), DType::I64));
    let (und, _) = to_undirected(&ei, None, n).unwrap();
    to_propagation_matrix(&und, None, n).unwrap()
}

/// Edges `{u, v}`, `u != v`, cut by `parts` (each undirected edge once).
fn cut(edges: &[(usize, usize)], parts: &[usize]) -> usize {
    edges.iter().filter(|&&(u, v)| u != v && parts[u] != parts[v]).count()
}

fn check(edges: &[(usize, usize)], n: usize, k: usize, what: &str) -> (usize, usize) {
    let adj = graph(edges, n);
    let parts = partition_graph(&adj, k, 7).unwrap();
    assert_eq!(parts.len(), n, "{what}");
    let cap = (n * 105).div_ceil(100 * k);
    let mut sizes = vec![0; k];
    for &p in &parts {
        sizes[p] += 1;
    }
    assert!(sizes.iter().all(|&s| s <= cap && s > 0), "{what}: sizes {sizes:?}, cap {cap}");
    assert_eq!(partition_graph(&adj, k, 7).unwrap(), parts, "{what}: reproducible");
    // A balanced random assignment, for scale.
    let mut x = 12345u64;
    let mut random: Vec<usize> = (0..n).map(|u| u % k).collect();
    for i in (1..n).rev() {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        random.swap(i, (x >> 33) as usize % (i + 1));
    }
    (cut(edges, &parts), cut(edges, &random))
}

#[test]
fn planted_communities_come_back() {
    // 8 communities of 100 nodes: 6 random edges inside per node, one in ten nodes with an edge
    // to another community.
    let (n, k) = (800, 8);
    let mut x = 99u64;
    let mut next = |m: usize| {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) as usize % m
    };
    let mut edges = Vec::new();
    for u in 0..n {
        let c = u / 100;
        for _ in 0..6 {
            let v = c * 100 + next(100);
            if v != u {
                edges.push((u, v));
            }
        }
        if u % 10 == 0 {
            edges.push((u, (u + 100 * (1 + next(7))) % n));
        }
    }
    let (ours, random) = check(&edges, n, k, "planted");
    let planted = cut(&edges, &(0..n).map(|u| u / 100).collect::<Vec<_>>());
    assert!(ours <= planted * 2, "cut {ours}, planted {planted}, random {random}");
    assert!(ours * 5 < random, "cut {ours}, random {random}");
}

#[test]
fn karate_and_cora_partitions_cut_few_edges() {
    let root = env!("CARGO_MANIFEST_DIR");
    let karate = Planetoid::karate(format!("{root}/data/karate")).unwrap();
    let (ours, random) = check(&karate.edges, karate.nodes, 2, "karate");
    assert!(ours * 2 < random, "karate: cut {ours}, random {random}");
    let cora = Planetoid::new(None, "Cora").unwrap_or_else(|e| panic!("{e}"));
    let (ours, random) = check(&cora.edges, cora.nodes, 16, "cora");
    assert!(ours * 3 < random, "cora: cut {ours}, random {random}");
}

#[test]
fn cluster_subgraph_is_the_induced_submatrix() {
    let device = crate::common_ops::ad();
    // A weighted directed matrix [5, 5].
    let dense: Vec<f64> = (0..25).map(|i| if i % 3 == 0 { i as f64 + 1.0 } else { 0.0 }).collect();
    let a = Tensor::<2>::from_data(TensorData::new(dense, [5, 5]), (&device, DType::F64));
    let s = a.clone().to_sparse_csr().unwrap();
    let v = s.values_flat().require_grad();
    let s = s.with_values(v.clone());
    let parts = [0, 0, 1, 1, 2];
    let (nodes, sub) = cluster_subgraph(&s, &parts, &[2, 0]).unwrap();
    assert_eq!(nodes, [0, 1, 4]);
    let ids = Tensor::<1, Int>::from_data(TensorData::new(vec![0i64, 1, 4], [3]), (&device, DType::I64));
    let want = a.select(0, ids.clone()).select(1, ids);
    assert_eq!(
        sub.to_dense().into_data().iter::<f64>().collect::<Vec<_>>(),
        want.into_data().iter::<f64>().collect::<Vec<_>>()
    );
    // Gradients reach exactly the kept values.
    let grads = sub.values_flat().sum().backward();
    let g: Vec<f64> = v.grad(&grads).unwrap().into_data().iter::<f64>().collect();
    let kept = g.iter().filter(|&&x| x == 1.0).count();
    assert_eq!((kept, g.len() - kept), (sub.nnz(), s.nnz() - sub.nnz()));
}

#[test]
fn bad_input_is_an_error() {
    let adj = graph(&[(0, 1), (1, 2)], 3);
    assert!(partition_graph(&adj, 0, 0).unwrap_err().to_string().contains("0 parts for a graph of 3 nodes"));
    assert!(partition_graph(&adj, 4, 0).is_err());
    let rect = SparseTensor::<2>::empty([2, 3], &dev());
    assert!(partition_graph(&rect, 1, 0).unwrap_err().to_string().contains("square"));
    assert!(cluster_subgraph(&adj, &[0, 1], &[0]).unwrap_err().to_string().contains("one part per node"));
    // Every node in one part: the whole graph.
    let (nodes, sub) = cluster_subgraph(&adj, &[0, 0, 0], &[0]).unwrap();
    assert_eq!((nodes, sub.nnz()), (vec![0, 1, 2], adj.nnz()));
}
