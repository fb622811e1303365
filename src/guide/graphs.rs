//! # Graphs
//!
//! ## Aggregation: `mm_reduce`
//!
//! [`sparse::mm_reduce(&a, x, Reduce::{Sum, Mean, Amax, Amin})`](crate::sparse::mm_reduce) is
//! torch's `sparse.mm(a, x, reduce=)` on every layout, differentiable w.r.t. the sparse values
//! and `x` (amax / amin through the winning entry, as `scatter_reduce`; torch has no CSR
//! backward for them).
//!
//! ## PyG's `edge_index`
//!
//! [`sparsegrad::nn`](crate::nn) takes PyG's `edge_index` (`[2, E]`, row 0 sources, row 1
//! targets, optional weights): `add_self_loops`, `add_remaining_self_loops`,
//! `remove_self_loops`, `to_undirected`, `degree`,
//! [`gcn_norm_edge_index(edge_index, edge_weight, n, GcnNormOptions { add_self_loops, improved })`](crate::nn::gcn_norm_edge_index)
//! (directed and weighted graphs, weights differentiable) and
//! [`to_propagation_matrix`](crate::nn::to_propagation_matrix) (the CSR matrix
//! `P[target, source]` the layers multiply).
//!
//! **Argument order.** As PyG's `conv(x, edge_index)`, every layer and model takes the features
//! first and the graph second, `conv.forward(x, &adj)` (a sampled block's matrix in place of
//! `adj`). `forward_edge_index(x, &edge_index, ..)` on `GcnConv` takes PyG's `edge_index` itself
//! and builds the matrix at every call; keep the matrix for repeated calls.
//!
//! ```
//! use burn::tensor::{DType, Device, Int, Tensor, TensorData};
//! use sparsegrad::nn::{gcn_norm_edge_index, to_propagation_matrix, GcnConvConfig, GcnNormOptions};
//! use sparsegrad::prelude::*;
//!
//! let device = Device::flex();
//! // A directed path 0 -> 1 -> 2 -> 3, as PyG's edge_index.
//! let edge_index = Tensor::<2, Int>::from_data(TensorData::new(vec![0i64, 1, 2, 1, 2, 3], [2, 3]), (&device, DType::I64));
//! let (edges, weights) = gcn_norm_edge_index(&edge_index, None, 4, GcnNormOptions::default())?;
//! assert_eq!(edges.dims(), [2, 7]); // a self loop added on every node
//! let p = to_propagation_matrix(&edges, Some(&weights), 4)?; // P[target, source], CSR
//! let conv = GcnConvConfig::new(5, 2).init(&device);
//! let x = Tensor::<2>::ones([4, 5], &device);
//! let y = conv.forward(x.clone(), &p);
//! assert_eq!(y.dims(), [4, 2]);
//! // Max aggregation of the neighbours' features (a SageConv with Aggregation::Max does this).
//! let m = sparse::mm_reduce(&p, x, sparse::Reduce::Amax);
//! assert_eq!(m.dims(), [4, 5]);
//! # Ok::<(), SparseError>(())
//! ```
//!
//! ## Layers and models
//!
//! [`SageConv`](crate::nn::SageConv) (mean / max, root weight), [`GinConv`](crate::nn::GinConv)
//! (sum + MLP, trainable eps), [`GraphConv`](crate::nn::GraphConv) and
//! [`AppnpPropagation`](crate::nn::AppnpPropagation) follow PyG's definitions.
//! [`GcnConv`](crate::nn::GcnConv) and [`GatConv`](crate::nn::GatConv) take PyG's options (bias,
//! `add_self_loops`, `improved`, `normalize`; `forward_edge_index`; GAT's attention weights on
//! request with `forward_with_attention`, and `feature_dropout`, the paper's code's dropout of each
//! head's projected features), and [`nn::models::{Gcn, Gat}`](crate::nn::models) are
//! whole models the examples share: `gcn_cora`, `gat_cora` and `gnn_planetoid` take
//! `--dataset cora|citeseer|pubmed` and `--root DIR` (PyG's root: see [`io`](super::io) for
//! where the datasets are found). [`nn::Planetoid::new(root, name)`](crate::nn::Planetoid) is
//! PyG's `Planetoid(root, name)`.
//!
//! ## Graphs that do not fit one batch
//!
//! [`NeighborSampler`](crate::nn::NeighborSampler) (GraphSAGE's fan-outs, e.g. `[15, 10]`,
//! seeded) returns each hop as a CSR block `[dst, src]` that the layers take directly (a block's
//! targets are the first rows of its sources); [`partition_graph`](crate::nn::partition_graph)
//! (a METIS-like multilevel k-way partition: heavy-edge matching, region growing, boundary
//! refinement) and [`cluster_subgraph`](crate::nn::cluster_subgraph) give ClusterGCN's batches.
//!
//! ```
//! use burn::tensor::{DType, Device, Int, Tensor, TensorData};
//! use sparsegrad::nn::{NeighborSampler, SageConvConfig};
//!
//! let device = Device::flex();
//! // A ring of 6 nodes, both directions.
//! let (src, dst): (Vec<i64>, Vec<i64>) = (0..6).flat_map(|i| [(i, (i + 1) % 6), ((i + 1) % 6, i)]).unzip();
//! let edge_index = Tensor::<2, Int>::from_data(TensorData::new([src, dst].concat(), [2, 12]), (&device, DType::I64));
//! let sampler = NeighborSampler::from_edge_index(&edge_index, 6, vec![2, 2])?;
//! let batch = sampler.sample(&[0, 3], 7, &device)?; // two seeds, seeded draw
//! let (l1, l2) = (SageConvConfig::new(8, 8).init(&device), SageConvConfig::new(8, 3).init(&device));
//! let x = Tensor::<2>::ones([batch.n_id.len(), 8], &device); // features of the sampled nodes
//! let h = l1.forward(x, &batch.blocks[0].adj);
//! let out = l2.forward(h, &batch.blocks[1].adj);
//! assert_eq!(out.dims(), [2, 3]); // one row per seed
//! # Ok::<(), sparsegrad::SparseError>(())
//! ```
//!
//! `cargo run --release --example sage_sbm` trains GraphSAGE by sampled mini-batches on a
//! 1,000,000-node, 20,000,000-edge stochastic block model and times full-batch GCN beside it.
