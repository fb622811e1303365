//! The stochastic block model of the `sage_sbm` and `gcn_distributed` examples: communities,
//! an undirected CSR adjacency and noisy community-dependent features, all built
//! deterministically from a seed (`sage_sbm`'s docs describe the model). Building a graph of
//! millions of nodes takes a while: a progress bar follows its passes (`super::progress`, which
//! every example that includes this module includes too).

#![allow(dead_code)]

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use sparsegrad::kernels::rng::SplitMix64;
use sparsegrad::prelude::*;

/// The model's parameters (the examples' command-line options of the same names).
#[derive(Debug, Clone, Copy)]
pub struct SbmParams {
    /// Nodes of the graph.
    pub nodes: u64,
    /// Mean neighbours per node (edges = nodes * degree / 2).
    pub degree: u64,
    /// Probability that an edge stays in its node's community.
    pub p_in: f64,
    /// Noise of the features around their community's mean.
    pub sigma: f64,
    /// Seed of the graph and the features.
    pub seed: u64,
}

pub const COMMUNITIES: usize = 20;
pub const FEATURES: usize = 16;
pub const HIDDEN: usize = 64;

/// The graph, the features and the split come from one seed: the workspace's splitmix64
/// (`sparsegrad::kernels::rng`), with this model's own draws on top.
pub struct Rng(SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(SplitMix64::new(seed))
    }

    pub fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n` from 53 bits, as the model has always drawn (a graph depends on it).
    pub fn below(&mut self, n: usize) -> usize {
        (self.unit() * n as f64) as usize
    }

    pub fn unit(&mut self) -> f64 {
        self.0.unit_f64()
    }

    /// A standard normal sample (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u = self.unit().max(f64::MIN_POSITIVE);
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * self.unit()).cos()
    }
}

/// The stochastic block model: communities, an undirected CSR adjacency (no loops, sorted rows)
/// and the features.
pub struct Sbm {
    pub community: Vec<usize>,
    pub crow: Vec<usize>,
    pub col: Vec<u32>,
    pub features: Vec<f32>,
    /// The community means `[COMMUNITIES, FEATURES]`.
    pub means: Vec<f64>,
}

impl Sbm {
    pub fn nodes(&self) -> usize {
        self.community.len()
    }

    pub fn build(a: &SbmParams) -> Sbm {
        let n = a.nodes as usize;
        assert!(n <= u32::MAX as usize, "node ids are stored as u32");
        let mut rng = Rng::new(a.seed ^ 0x0005_EED0_F5B3);
        let community: Vec<usize> = (0..n).map(|_| rng.below(COMMUNITIES)).collect();
        let mut members = vec![Vec::new(); COMMUNITIES];
        for (i, &c) in community.iter().enumerate() {
            members[c].push(i as u32);
        }
        // Each node draws degree / 2 edges; both directions are stored.
        let draws = (a.degree / 2) as usize;
        // Four passes over the nodes: the draws, placing both directions, sorting the rows, the
        // features.
        let bar = super::progress::Progress::new(4 * n as u64, "building the graph");
        let tick = |pass: u64, u: usize, what: &'static str| {
            if u.is_multiple_of(1 << 16) {
                bar.step(pass * n as u64 + u as u64, || what.to_string());
            }
        };
        let mut ends = Vec::with_capacity(n * draws);
        for u in 0..n {
            tick(0, u, "drawing edges");
            for _ in 0..draws {
                let v = if rng.unit() < a.p_in {
                    let m = &members[community[u]];
                    m[rng.below(m.len())]
                } else {
                    rng.below(n) as u32
                };
                ends.push(v);
            }
        }
        bar.epoch(n as u64, || format!("{} edges drawn", ends.len()));
        // Counting sort into rows: u's draws and, reversed, every draw that reaches u.
        let mut count = vec![0usize; n + 1];
        for u in 0..n {
            for &v in &ends[u * draws..(u + 1) * draws] {
                count[u + 1] += 1;
                count[v as usize + 1] += 1;
            }
        }
        for i in 0..n {
            count[i + 1] += count[i];
        }
        let mut next = count.clone();
        let mut col = vec![0u32; count[n]];
        for u in 0..n {
            tick(1, u, "placing both directions");
            for &v in &ends[u * draws..(u + 1) * draws] {
                col[next[u]] = v;
                next[u] += 1;
                col[next[v as usize]] = u as u32;
                next[v as usize] += 1;
            }
        }
        drop(ends);
        bar.epoch(2 * n as u64, || "rows filled".to_string());
        // Sorted rows, loops and repeats dropped, compacted in place.
        let mut crow = vec![0usize; n + 1];
        let mut kept = 0;
        for u in 0..n {
            tick(2, u, "sorting rows");
            let row = &mut col[count[u]..count[u + 1]];
            row.sort_unstable();
            let mut last = None;
            for i in count[u]..count[u + 1] {
                let v = col[i];
                if v as usize != u && last != Some(v) {
                    col[kept] = v;
                    kept += 1;
                    last = Some(v);
                }
            }
            crow[u + 1] = kept;
        }
        col.truncate(kept);
        col.shrink_to_fit();
        bar.epoch(3 * n as u64, || format!("rows sorted, {kept} entries"));
        let means: Vec<f64> = (0..COMMUNITIES * FEATURES).map(|_| rng.normal()).collect();
        let features = (0..n * FEATURES)
            .map(|k| {
                if k.is_multiple_of(FEATURES) {
                    tick(3, k / FEATURES, "drawing features");
                }
                (means[community[k / FEATURES] * FEATURES + k % FEATURES] + a.sigma * rng.normal()) as f32
            })
            .collect();
        bar.epoch(4 * n as u64, || "features drawn".to_string());
        bar.finish();
        Sbm { community, crow, col, features, means }
    }

    /// The adjacency as a CSR tensor with unit values (`P[i, j]` for the edge `j -> i`; the
    /// graph is undirected).
    pub fn adjacency(&self, device: &Device) -> SparseTensor<2> {
        self.csr(device, |_, _| 1.0, false)
    }

    /// `D^-1/2 (A + I) D^-1/2` as CSR.
    pub fn gcn_matrix(&self, device: &Device) -> SparseTensor<2> {
        let inv: Vec<f64> = self.crow.windows(2).map(|w| 1.0 / ((w[1] - w[0] + 1) as f64).sqrt()).collect();
        self.csr(device, |i, j| (inv[i] * inv[j]) as f32, true)
    }

    pub fn csr(&self, device: &Device, value: impl Fn(usize, usize) -> f32, loops: bool) -> SparseTensor<2> {
        let n = self.nodes();
        let nnz = self.col.len() + if loops { n } else { 0 };
        let (mut crow, mut col, mut val) =
            (Vec::with_capacity(n + 1), Vec::with_capacity(nnz), Vec::with_capacity(nnz));
        crow.push(0i64);
        let bar = super::progress::Progress::new(n as u64, if loops { "GCN matrix rows" } else { "adjacency rows" });
        for i in 0..n {
            if i.is_multiple_of(1 << 16) {
                bar.step(i as u64, String::new);
            }
            let row = &self.col[self.crow[i]..self.crow[i + 1]];
            let split = row.partition_point(|&j| (j as usize) < i);
            let mut push = |j: usize| {
                col.push(j as i64);
                val.push(value(i, j));
            };
            row[..split].iter().for_each(|&j| push(j as usize));
            if loops {
                push(i);
            }
            row[split..].iter().for_each(|&j| push(j as usize));
            crow.push(col.len() as i64);
        }
        bar.finish();
        let crow = Tensor::<1, Int>::from_data(TensorData::new(crow, [n + 1]), (device, DType::I64));
        let col = Tensor::<1, Int>::from_data(TensorData::new(col, [nnz]), (device, DType::I64));
        let val = Tensor::<1>::from_data(TensorData::new(val, [nnz]), device);
        SparseTensor::csr(crow, col, val, [n, n]).expect("a valid CSR matrix")
    }

    /// The features of `nodes`, in that order, `[nodes, FEATURES]`.
    pub fn gather(&self, nodes: &[usize], device: &Device) -> Tensor<2> {
        let mut v = Vec::with_capacity(nodes.len() * FEATURES);
        for &i in nodes {
            v.extend_from_slice(&self.features[i * FEATURES..(i + 1) * FEATURES]);
        }
        Tensor::from_data(TensorData::new(v, [nodes.len(), FEATURES]), device)
    }

    /// The fraction of `nodes` whose own features are nearest their community's true mean:
    /// what the features alone can tell (the classifier knows the means, no model does better
    /// on features alone).
    pub fn nearest_mean_accuracy(&self, nodes: &[usize]) -> f64 {
        let hits = nodes
            .iter()
            .filter(|&&i| {
                let x = &self.features[i * FEATURES..(i + 1) * FEATURES];
                let distance = |c: usize| -> f64 {
                    x.iter()
                        .zip(&self.means[c * FEATURES..(c + 1) * FEATURES])
                        .map(|(&a, &m)| (a as f64 - m).powi(2))
                        .sum()
                };
                (0..COMMUNITIES).min_by(|&a, &b| distance(a).total_cmp(&distance(b))) == Some(self.community[i])
            })
            .count();
        hits as f64 / nodes.len() as f64
    }

    pub fn labels(&self, nodes: &[usize], device: &Device) -> Tensor<1, Int> {
        Tensor::from_data(
            TensorData::new(nodes.iter().map(|&i| self.community[i] as i64).collect::<Vec<_>>(), [nodes.len()]),
            device,
        )
    }
}
