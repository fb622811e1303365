//! sparsegrad-nn: sparse neural-network layers for burn.
//!
//! - `gcn`: [`GcnConv`] and [`gcn_norm`] (Kipf & Welling's graph convolution).
//! - `edge_index`: graphs as PyG's `edge_index` `[2, E]` with optional weights: self loops,
//!   [`to_undirected`], [`degree`], [`gcn_norm_edge_index`] (PyG's `gcn_norm`), and the sparse
//!   matrices the layers multiply ([`to_propagation_matrix`]).
//! - `gat`: [`GatConv`] (multi-head graph attention: SDDMM scores, sparse softmax, sparse mm).
//! - `models`: [`models::Gcn`] and [`models::Gat`], whole node-classification models (PyG's
//!   `GCN`/`GAT`) that the examples and a user's program share.
//! - Message passing with PyG's semantics over a propagation matrix (`adj[i, j]` the edge `j ->
//!   i`): `sage_conv` ([`SageConv`], mean or max aggregation and a root weight), `gin_conv`
//!   ([`GinConv`], sum and an MLP, fixed or trainable eps), `graph_conv` ([`GraphConv`]),
//!   `appnp` ([`AppnpPropagation`], K steps of personalised PageRank), `aggregation`
//!   ([`Aggregation`]: sum, mean, max, min through `mm_reduce`).
//! - `sampler`: [`NeighborSampler`], GraphSAGE's neighbour sampling for mini-batches (fan-outs
//!   per hop, seeded), each hop a CSR block the message-passing layers take.
//! - `partition`: ClusterGCN's batches: [`partition_graph`] (a METIS-like multilevel k-way
//!   partition) and [`cluster_subgraph`] (the subgraph a batch of parts induces).
//! - `semi_structured_linear`: [`SemiStructuredLinear`] (a linear layer with a 2:4 weight,
//!   trained on its kept values).
//! - `sparse_linear`: [`SparseLinear`] (a linear layer with a fixed CSR pattern and trainable
//!   values).
//! - `sparse_training`: patterns that change while training: pattern surgery keeping the
//!   optimizer state ([`SparseLinear::rewire`], [`rewire_optimizer`], [`load_rewired`]),
//!   gradual magnitude pruning, SET and RigL on RigL's cosine schedule, and the Erdős–Rényi
//!   share of a budget between layers.
//! - `srste`: [`SrsteLinear`] (2:4 sparse training from scratch with SR-STE: dense master
//!   weights pruned 2:4 at every step, straight-through gradient plus the sparse-refined decay;
//!   [`SrsteLinear::to_semi_structured`] gives the deployable layer).
//! - `wanda`: Wanda one-shot pruning by `|W| · ||X_j||₂` per output row, from calibration
//!   activations ([`WandaCalibration`]): masks ([`wanda_mask`], [`wanda_mask_n_m`]) and layers
//!   ([`SparseLinear::from_linear_wanda`], [`wanda_semi_structured`]).
//! - `prune`: magnitude pruning of dense weights, N:M along rows ([`prune_2_4`], [`prune_n_m`])
//!   and unstructured to a sparsity, the fraction of zeros ([`prune_magnitude`], straight to CSR with
//!   [`prune_magnitude_csr`]).
//! - `dropout`: dropout on the stored values of sparse tensors ([`SparseDropout`], burn's
//!   `Dropout` on the values; [`sparse_dropout`]), masks from burn's device generator.
//! - `mtx`: the Matrix Market reader ([`read_mtx`], [`MatrixMarket`]: streaming, bounds-checked,
//!   honouring the banner's field and symmetry).
//! - `io`: Matrix Market files to and from `SparseTensor` (any layout) and dense tensors.
//! - `error`: [`DataError`], what went wrong reading a file (file, line, what).
//! - `planetoid`: the graph type [`Planetoid`] and its loaders for plain-text exports and the
//!   karate club shipped in `data/karate` (features with their values, unlabeled nodes), and
//!   [`normalize_features`]; `planetoid_raw`: [`Planetoid::new`], PyG's Cora, CiteSeer and
//!   PubMed from their raw files, assembled as PyG does.
//! - `pickle`: the reader of those raw files (Python 2 pickles of numpy and scipy objects), which
//!   runs no code and refuses what it does not know.
//! - `source`: where dataset files come from ([`DataSources`]: the caller's root,
//!   `$SPARSEGRAD_DATA`, the user's cache, this repository's `../shared/data`, a download);
//!   `download` (feature `download`): the download, checked and written atomically;
//!   `suitesparse`: SuiteSparse matrices by name ([`io::suitesparse`]).
//! - `mnist`: the MNIST loader ([`Mnist`], IDX files in `data/mnist/`).
//!
//! The dataset loaders and gzip-compressed input sit behind the default-on feature `datasets`, so
//! a user of the layers alone does not compile a gzip reader; the download (an HTTPS client, a
//! hash, a tar reader) sits behind the feature `download`, off by default.

#![warn(missing_docs)]

pub mod aggregation;
pub mod appnp;
#[cfg(feature = "download")]
mod download;
pub mod dropout;
pub mod edge_index;
pub mod error;
pub mod gat;
pub mod gcn;
pub mod gin_conv;
pub mod graph_conv;
pub mod io;
#[cfg(feature = "datasets")]
pub mod mnist;
pub mod models;
pub mod mtx;
pub mod partition;
#[cfg(feature = "datasets")]
pub mod pickle;
#[cfg(feature = "datasets")]
pub mod planetoid;
#[cfg(feature = "datasets")]
pub mod planetoid_raw;
pub mod prune;
pub mod sage_conv;
pub mod sampler;
pub mod semi_structured_linear;
#[cfg(feature = "datasets")]
pub mod source;
pub mod sparse_linear;
pub mod sparse_training;
pub mod srste;
#[cfg(feature = "datasets")]
mod suitesparse;
pub mod wanda;

pub use aggregation::Aggregation;
pub use appnp::{AppnpPropagation, AppnpPropagationConfig};
pub use dropout::{sparse_dropout, SparseDropout, SparseDropoutConfig};
pub use edge_index::{
    add_remaining_self_loops, add_self_loops, degree, gcn_norm_edge_index, remove_self_loops, to_propagation_matrix,
    to_sparse_adjacency, to_undirected, EdgeIndexWeights, GcnNormOptions,
};
pub use error::{DataError, Tried};
pub use gat::{GatConv, GatConvConfig};
pub use gcn::{adjacency_with_self_loops, gcn_norm, GcnConv, GcnConvConfig};
pub use gin_conv::{GinConv, GinConvConfig, GinMlp, GinNetwork};
pub use graph_conv::{GraphConv, GraphConvConfig};
#[cfg(feature = "datasets")]
pub use mnist::{Mnist, MnistSplit};
pub use mtx::{read_mtx, read_mtx_from, read_mtx_with, MatrixMarket, MtxField, MtxSymmetry, ReadOptions};
pub use partition::{cluster_subgraph, partition_graph};
#[cfg(feature = "datasets")]
pub use planetoid::{normalize_features, Planetoid};
pub use prune::{density_nnz, magnitude_mask, n_m_mask, prune_2_4, prune_magnitude, prune_magnitude_csr, prune_n_m};
pub use sage_conv::{SageConv, SageConvConfig};
pub use sampler::{Block, NeighborSampler, SampledSubgraph};
pub use semi_structured_linear::{SemiStructuredLinear, SemiStructuredLinearConfig};
#[cfg(feature = "datasets")]
pub use source::{DataSources, Download, DATA_ENV};
pub use sparse_linear::{SparseLinear, SparseLinearConfig};
pub use sparse_training::{
    erdos_renyi_densities, load_rewired, rewire_optimizer, DropSchedule, GradualMagnitudePruning, Rewiring, RigL,
    RigLConfig, Set, SetConfig,
};
pub use srste::{SrsteLinear, SrsteLinearConfig};
pub use wanda::{wanda_mask, wanda_mask_n_m, wanda_semi_structured, WandaCalibration};
