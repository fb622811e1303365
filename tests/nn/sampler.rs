//! `NeighborSampler`: the blocks of a small directed graph by hand, the sampling invariants on the
//! karate club (each row keeps `min(in-degree, fanout)` distinct true neighbours, targets first,
//! reproducible from the seed), the input checks, and a two-layer `SageConv` on full-fan-out
//! blocks against the same layers on the whole graph.

use burn::tensor::{activation::relu, DType, Device, Int, Tensor, TensorData};
use sparsegrad::nn::{
    to_propagation_matrix, to_undirected, Aggregation, NeighborSampler, Planetoid, SageConvConfig, SampledSubgraph,
};
use sparsegrad::prelude::*;

fn dev() -> Device {
    crate::common_ops::dev()
}

fn edge_index(sources: &[i64], targets: &[i64]) -> Tensor<2, Int> {
    let mut v = sources.to_vec();
    v.extend_from_slice(targets);
    Tensor::from_data(TensorData::new(v, [2, sources.len()]), (&dev(), DType::I64))
}

fn dense(s: &SparseTensor<2>) -> Vec<f32> {
    s.to_dense().into_data().try_to_vec::<f32>().unwrap()
}

/// The rows of a block as lists of local columns.
fn rows(s: &SparseTensor<2>) -> Vec<Vec<usize>> {
    let (c, p) = s.compressed_indices_flat().unwrap();
    let c: Vec<i64> = c.into_data().iter::<i64>().collect();
    let p: Vec<i64> = p.into_data().iter::<i64>().collect();
    c.windows(2).map(|w| p[w[0] as usize..w[1] as usize].iter().map(|&j| j as usize).collect()).collect()
}

#[test]
fn blocks_of_a_small_graph() {
    // Into 0 from 1, 2, 3; into 1 from 4; into 2 from 4 and 5.
    let p = to_propagation_matrix(&edge_index(&[1, 2, 3, 4, 4, 5], &[0, 0, 0, 1, 2, 2]), None, 6).unwrap();
    let ei = edge_index(&[1, 2, 3, 4, 4, 5], &[0, 0, 0, 1, 2, 2]);
    let sampler = NeighborSampler::from_edge_index(&ei, 6, vec![10, 10]).unwrap();
    let SampledSubgraph { n_id, blocks } = sampler.sample(&[0], 1, &dev()).unwrap();
    assert_eq!(n_id, [0, 1, 2, 3, 4, 5]);
    assert_eq!(blocks.len(), 2);
    // The hop next to the seed is the last block: [1, 4].
    assert_eq!((blocks[1].dst, blocks[1].src), (1, 4));
    assert_eq!(dense(&blocks[1].adj), [0.0, 1.0, 1.0, 1.0]);
    // The input hop: targets 0..4, sources 0..6.
    assert_eq!((blocks[0].dst, blocks[0].src), (4, 6));
    assert_eq!(rows(&blocks[0].adj), [vec![1, 2, 3], vec![4], vec![4, 5], vec![]]);
    // A fan-out of 2 keeps two of node 0's three neighbours.
    let sampler = NeighborSampler::new(&p, vec![2]).unwrap();
    let s = sampler.sample(&[0], 5, &dev()).unwrap();
    assert_eq!((s.blocks[0].dst, s.blocks[0].src, s.blocks[0].adj.nnz()), (1, 3, 2));
    assert!(s.n_id[1..].iter().all(|&u| (1..4).contains(&u)));
}

fn karate_adj() -> (Planetoid, SparseTensor<2>) {
    let g = Planetoid::karate(concat!(env!("CARGO_MANIFEST_DIR"), "/data/karate")).unwrap();
    let (s, t): (Vec<i64>, Vec<i64>) = g.edges.iter().map(|&(u, v)| (u as i64, v as i64)).unzip();
    let (und, _) = to_undirected(&edge_index(&s, &t), None, g.nodes).unwrap();
    let p = to_propagation_matrix(&und, None, g.nodes).unwrap();
    (g, p)
}

#[test]
fn samples_keep_true_neighbours_within_the_fanout() {
    let (g, p) = karate_adj();
    let neighbours: Vec<Vec<usize>> = rows(&p);
    let sampler = NeighborSampler::new(&p, vec![3, 2]).unwrap();
    for seed in 0..5u64 {
        let seeds = [33, 0, 5, 16];
        let s = sampler.sample(&seeds, seed, &dev()).unwrap();
        assert_eq!(&s.n_id[..4], &seeds);
        let mut distinct = s.n_id.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), s.n_id.len(), "n_id lists every node once");
        assert!(s.n_id.iter().all(|&u| u < g.nodes));
        assert_eq!((s.blocks[0].src, s.blocks[1].dst), (s.n_id.len(), 4));
        assert_eq!(s.blocks[0].dst, s.blocks[1].src);
        for (block, fanout) in s.blocks.iter().zip([2usize, 3]) {
            assert_eq!(block.adj.shape(), [block.dst, block.src]);
            for (i, row) in rows(&block.adj).iter().enumerate() {
                let global = s.n_id[i];
                assert_eq!(row.len(), neighbours[global].len().min(fanout), "node {global}");
                assert!(row.windows(2).all(|w| w[0] < w[1]), "distinct, sorted");
                assert!(row.iter().all(|&j| neighbours[global].contains(&s.n_id[j])), "true neighbours of {global}");
            }
        }
        // Reproducible from the seed.
        let again = sampler.sample(&seeds, seed, &dev()).unwrap();
        assert_eq!(again.n_id, s.n_id);
        assert_eq!(dense(&again.blocks[0].adj), dense(&s.blocks[0].adj));
    }
    let a = sampler.sample(&[0], 1, &dev()).unwrap().n_id;
    assert!((2..20u64).any(|seed| sampler.sample(&[0], seed, &dev()).unwrap().n_id != a), "seeds differ");
}

#[test]
fn bad_input_is_named() {
    let (_, p) = karate_adj();
    let sampler = NeighborSampler::new(&p, vec![2]).unwrap();
    assert_eq!(
        sampler.sample(&[1, 34], 0, &dev()).unwrap_err(),
        SparseError::IndexOutOfBounds { component: "seeds", dim: 0, position: 1, value: 34, size: 34 }
    );
    let e = sampler.sample(&[3, 1, 3], 0, &dev()).unwrap_err().to_string();
    assert!(e.contains("seed 3 is listed twice (positions 0 and 2)"), "{e}");
    let rect = SparseTensor::<2>::empty([2, 3], &dev());
    assert!(NeighborSampler::new(&rect, vec![1]).unwrap_err().to_string().contains("square, got [2, 3]"));
}

/// With fan-outs above every degree the blocks hold the whole 2-hop neighbourhood: two
/// `SageConv` layers on them give the full-graph layers' outputs at the seeds.
#[test]
fn full_fanout_blocks_match_full_batch_layers() {
    let (g, p) = karate_adj();
    let device = dev();
    let x = Tensor::<2>::from_data(
        TensorData::new(
            (0..g.nodes * 4).map(|i| ((i * 37 % 23) as f32 - 11.0) / 7.0).collect::<Vec<_>>(),
            [g.nodes, 4],
        ),
        &device,
    );
    for aggr in [Aggregation::Mean, Aggregation::Max] {
        let l1 = SageConvConfig::new(4, 8).with_aggr(aggr).init(&device);
        let l2 = SageConvConfig::new(8, 3).with_aggr(aggr).init(&device);
        let full = l2.forward(relu(l1.forward(x.clone(), &p)), &p);
        let seeds = [33usize, 0, 7];
        let s = NeighborSampler::new(&p, vec![100, 100]).unwrap().sample(&seeds, 0, &device).unwrap();
        let ids = Tensor::<1, Int>::from_data(
            TensorData::new(s.n_id.iter().map(|&u| u as i64).collect::<Vec<_>>(), [s.n_id.len()]),
            &device,
        );
        let h = relu(l1.forward(x.clone().select(0, ids), &s.blocks[0].adj));
        let out = l2.forward(h, &s.blocks[1].adj);
        let seed_ids = Tensor::<1, Int>::from_data(TensorData::new(vec![33i64, 0, 7], [3]), &device);
        let want: Vec<f32> = full.select(0, seed_ids).into_data().try_to_vec().unwrap();
        let got: Vec<f32> = out.into_data().try_to_vec().unwrap();
        assert_eq!(got.len(), want.len());
        for (a, b) in got.iter().zip(&want) {
            assert!((a - b).abs() < 1e-5, "{aggr:?}: {got:?} vs {want:?}");
        }
    }
}
