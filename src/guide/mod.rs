//! The guide: what sparsegrad does and how to use it, chapter by chapter.
//!
//! These modules hold documentation only (as clap's `_tutorial` and tokio's guides do); every
//! code block in them is a doctest, compiled and run by `cargo test --doc -p sparsegrad`.
//! `cargo doc --open` renders them; the README points here for everything past a first look.
//!
//! | chapter | what it covers |
//! |---|---|
//! | [`tensors`] | `SparseTensor`: every layout of `torch.sparse`, checked constructors, conversions, printing, records, checked input |
//! | [`autograd`] | gradients through conversions and products, the sparse backward rules, [`gradcheck`](crate::gradcheck()) |
//! | [`graphs`] | `mm_reduce`, PyG's `edge_index` helpers, the graph layers and models, neighbour sampling and partitions |
//! | [`semi_structured`] | 2:4 sparsity on the CPU with gradients: compression, products, layers |
//! | [`sparse_training`] | sparse linear layers, pruning, patterns that change while training (GMP, SET, RigL), SR-STE, Wanda |
//! | [`linalg`] | sparse @ sparse (`spgemm`, masked), value filters, `svd_lowrank`, `pca_lowrank`, `lobpcg` |
//! | [`io`] | Matrix Market files, SuiteSparse by name, the dataset loaders and where they look, serde and sprs |
//! | [`gpu`] | burn's Cube backend on wgpu: features, what runs on the device, tests on a device, limits |
//! | [`performance`] | the benchmark, how to read its numbers, and the measured results (`bench/RESULTS.md`) |
//!
//! Every snippet uses the prelude (`use sparsegrad::prelude::*`) and burn's Flex (CPU) backend
//! unless it says otherwise.

pub mod autograd;
pub mod gpu;
pub mod graphs;
pub mod io;
pub mod linalg;
pub mod performance;
pub mod semi_structured;
pub mod sparse_training;
pub mod tensors;
