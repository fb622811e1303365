//! Neighbour sampling for graphs that do not fit one batch (GraphSAGE's mini-batches, PyG's
//! `NeighborLoader`): from a batch of seed nodes, each hop keeps at most `fanout` incoming
//! neighbours of every node reached so far, chosen uniformly without replacement from a seeded
//! generator (the same seed, the same sample). Each hop is a *block*: a CSR matrix `[dst, src]`
//! whose rows are the nodes the hop aggregates into and whose columns are those nodes followed by
//! the neighbours new to this hop, so a block's targets are the first `dst` rows of its sources'
//! features (the layers of this crate take such rectangular propagation matrices: their root
//! term reads the first rows of `x`).
//!
//! The graph is the propagation matrix `P[target, source]` (see `edge_index`), read once into a
//! host CSR pattern; sampling is index work on the host, and only the blocks (unit values, int64
//! indices) are tensors.

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use sparsegrad_backend::host::with_ints;
use sparsegrad_backend::rng::SplitMix64;
use sparsegrad_backend::{Result, SparseError, SparseTensor};
use std::collections::HashMap;

/// One hop of a sample: `adj [dst, src]` with unit values, CSR, columns sorted per row.
#[derive(Debug, Clone)]
pub struct Block {
    /// `[dst, src]`: entry `(i, j)` is a sampled edge from source `j` into target `i`.
    pub adj: SparseTensor<2>,
    /// The targets: the first `dst` of the sources.
    pub dst: usize,
    /// The sources.
    pub src: usize,
}

/// The result of [`NeighborSampler::sample`].
#[derive(Debug, Clone)]
pub struct SampledSubgraph {
    /// The global ids of the first block's sources (the input nodes): the seeds first, in the
    /// order given, then every node each hop added, in the order it was first reached.
    pub n_id: Vec<usize>,
    /// The blocks from the input layer to the output layer: `blocks[0].src == n_id.len()`,
    /// `blocks[l].dst == blocks[l + 1].src`, and the last block's targets are the seeds.
    pub blocks: Vec<Block>,
}

/// A uniform neighbour sampler over a fixed graph (GraphSAGE's fan-outs, e.g. `[15, 10]`).
///
/// # Examples
///
/// ```
/// use burn::tensor::{Device, Tensor};
/// use sparsegrad_nn::{gcn_norm, NeighborSampler, SageConvConfig};
///
/// let device = Device::flex();
/// let adj = gcn_norm(&[(0, 1), (1, 2), (2, 3)], 4, &device)?;
/// let sampler = NeighborSampler::new(&adj, vec![2, 2])?; // two hops, at most 2 neighbours each
/// let batch = sampler.sample(&[1], 7, &device)?; // seed node 1, random seed 7
/// assert_eq!((batch.n_id[0], batch.blocks.len(), batch.blocks[1].dst), (1, 2, 1));
/// // Each block is a layer's graph: features of the block's sources in, of its targets out.
/// let (l1, l2) = (SageConvConfig::new(3, 8).init(&device), SageConvConfig::new(8, 2).init(&device));
/// let x = Tensor::<2>::ones([batch.n_id.len(), 3], &device);
/// let h = l1.forward(x, &batch.blocks[0].adj);
/// assert_eq!(l2.forward(h, &batch.blocks[1].adj).dims(), [1, 2]);
/// # Ok::<(), sparsegrad_backend::SparseError>(())
/// ```
#[derive(Debug, Clone)]
pub struct NeighborSampler {
    /// Row pointers of the incoming neighbours of every node.
    crow: Vec<usize>,
    /// The incoming neighbours (sources), row by row.
    col: Vec<usize>,
    /// Neighbours kept per node at each hop, the first hop (next to the seeds) first.
    fanouts: Vec<usize>,
}

impl NeighborSampler {
    /// A sampler over the propagation matrix `adj [n, n]` (`adj[i, j]` stored: an edge `j -> i`;
    /// any layout; repeated entries of an uncoalesced COO matrix are one edge) keeping
    /// `fanouts[h]` neighbours per node at hop `h` (hop 0 next to the seeds).
    pub fn new(adj: &SparseTensor<2>, fanouts: Vec<usize>) -> Result<Self> {
        let [n, m] = adj.shape();
        if n != m {
            return Err(SparseError::InvalidArgument {
                operation: "NeighborSampler::new",
                message: format!("the propagation matrix must be square, got [{n}, {m}]"),
            });
        }
        adj.check_invariants()?;
        let csr = adj.to_sparse_csr()?;
        let (crow, col) = csr.compressed_indices_flat().expect("a CSR tensor");
        // A checked CSR tensor: pointers from 0 to nnz, non-decreasing; columns in 0..n.
        let crow = with_ints(&crow, |v| v.to_i64()).into_iter().map(|v| v as usize).collect();
        let col = with_ints(&col, |v| v.to_i64()).into_iter().map(|v| v as usize).collect();
        Ok(Self { crow, col, fanouts })
    }

    /// A sampler over the graph of `edge_index` (PyG's `[2, E]`, row 0 sources, row 1 targets;
    /// see `edge_index`) on `num_nodes` nodes: [`NeighborSampler::new`] of its propagation
    /// matrix.
    pub fn from_edge_index(edge_index: &Tensor<2, Int>, num_nodes: usize, fanouts: Vec<usize>) -> Result<Self> {
        Self::new(&crate::edge_index::to_propagation_matrix(edge_index, None, num_nodes)?, fanouts)
    }

    /// The nodes of the graph.
    pub fn num_nodes(&self) -> usize {
        self.crow.len() - 1
    }

    /// A sample around `seeds` (distinct nodes) drawn from `seed`: one block per fan-out, as
    /// [`SampledSubgraph`] describes, the blocks' tensors on `device`. An error names a seed
    /// outside the graph or listed twice.
    pub fn sample(&self, seeds: &[usize], seed: u64, device: &Device) -> Result<SampledSubgraph> {
        let n = self.num_nodes();
        // The local id of every global node reached so far: memory in the sample, not the graph
        // (a batch of a million-node graph touches a few thousand nodes).
        let mut local: HashMap<usize, usize> = HashMap::with_capacity(seeds.len());
        let mut n_id = Vec::with_capacity(seeds.len());
        for (position, &s) in seeds.iter().enumerate() {
            if s >= n {
                return Err(SparseError::IndexOutOfBounds {
                    component: "seeds",
                    dim: 0,
                    position,
                    value: s as i128,
                    size: n,
                });
            }
            if let Some(&first) = local.get(&s) {
                return Err(SparseError::InvalidArgument {
                    operation: "NeighborSampler::sample",
                    message: format!("seed {s} is listed twice (positions {first} and {position})"),
                });
            }
            local.insert(s, n_id.len());
            n_id.push(s);
        }
        let mut rng = SplitMix64::new(seed);
        let mut blocks = Vec::with_capacity(self.fanouts.len());
        let mut scratch: Vec<usize> = Vec::new();
        for &fanout in &self.fanouts {
            let dst = n_id.len();
            let mut crow = Vec::with_capacity(dst + 1);
            crow.push(0i64);
            let mut col: Vec<i64> = Vec::new();
            for t in 0..dst {
                let neighbours = &self.col[self.crow[n_id[t]]..self.crow[n_id[t] + 1]];
                let start = col.len();
                if neighbours.len() <= fanout {
                    for &u in neighbours {
                        col.push(reach(u, &mut local, &mut n_id) as i64);
                    }
                } else {
                    // A partial Fisher-Yates shuffle of the positions: `fanout` distinct ones.
                    scratch.clear();
                    scratch.extend(0..neighbours.len());
                    for i in 0..fanout {
                        let j = i + rng.below_usize(neighbours.len() - i);
                        scratch.swap(i, j);
                        col.push(reach(neighbours[scratch[i]], &mut local, &mut n_id) as i64);
                    }
                }
                col[start..].sort_unstable();
                crow.push(col.len() as i64);
            }
            let src = n_id.len();
            let nnz = col.len();
            let adj = SparseTensor::csr(
                Tensor::<1, Int>::from_data(TensorData::new(crow, [dst + 1]), (device, DType::I64)),
                Tensor::<1, Int>::from_data(TensorData::new(col, [nnz]), (device, DType::I64)),
                Tensor::<1>::ones([nnz], device),
                [dst, src],
            )?;
            blocks.push(Block { adj, dst, src });
        }
        blocks.reverse();
        Ok(SampledSubgraph { n_id, blocks })
    }
}

/// The local id of global node `u`, giving it the next one if it was not reached yet.
fn reach(u: usize, local: &mut HashMap<usize, usize>, n_id: &mut Vec<usize>) -> usize {
    *local.entry(u).or_insert_with(|| {
        n_id.push(u);
        n_id.len() - 1
    })
}
