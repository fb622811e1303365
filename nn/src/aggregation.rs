//! [`Aggregation`]: how a message-passing layer combines the messages arriving at a node (PyG's
//! `aggr`), each one a reduction of the sparse product `mm_reduce` over the stored entries of
//! the node's row of the propagation matrix (see `edge_index::to_propagation_matrix`).

use burn::config::Config;
use burn::tensor::Tensor;
use sparsegrad_autodiff::matmul::{mm_reduce, Reduce};
use sparsegrad_backend::SparseTensor;

/// How the messages `a_ij · x_j` at node `i` are combined; a node without incoming edges gets 0.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum Aggregation {
    /// Their sum (PyG's `"add"` / `"sum"`).
    Sum,
    /// Their mean over the node's incoming edges.
    Mean,
    /// Their element-wise maximum.
    Max,
    /// Their element-wise minimum.
    Min,
}

impl Aggregation {
    /// The reduction of `mm_reduce` it is.
    pub fn reduce(self) -> Reduce {
        match self {
            Aggregation::Sum => Reduce::Sum,
            Aggregation::Mean => Reduce::Mean,
            Aggregation::Max => Reduce::Amax,
            Aggregation::Min => Reduce::Amin,
        }
    }

    /// The aggregated messages `[n, d]`: `adj [n, m]` the propagation matrix (`adj[i, j]` the
    /// weight of the edge `j -> i`), `x [m, d]` the sources' features.
    pub fn aggregate(self, x: Tensor<2>, adj: &SparseTensor<2>) -> Tensor<2> {
        mm_reduce(adj, x, self.reduce())
    }
}

/// The targets' features for a propagation matrix `adj [dst, src]` and the sources' features
/// `x [src, d]`: the first `dst` rows (all of `x` for a square `adj`; a sampled block lists its
/// targets first, see `sampler`).
///
/// # Panics
/// If `adj` has more rows than `x` (no block does).
pub(crate) fn targets(adj: &SparseTensor<2>, x: Tensor<2>) -> Tensor<2> {
    let dst = adj.shape()[0];
    let [src, d] = x.dims();
    assert!(dst <= src, "a propagation matrix of {dst} targets for the features of {src} nodes");
    if dst == src {
        x
    } else {
        x.slice([0..dst, 0..d])
    }
}
