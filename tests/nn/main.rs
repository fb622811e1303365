//! The layer and loader tests (`sparsegrad::nn`), one module per topic, in one test binary:
//! each binary links burn, so one binary here instead of one per file saves most of the link
//! time of `cargo test`. Run one topic with a filter on its module, e.g.
//! `cargo test --test nn sparse_linear::`.

#[path = "../common_ops/mod.rs"]
mod common_ops;

#[cfg(feature = "cuda")]
mod data_parallel_devices;
mod datasets;
mod dropout;
mod edge_index;
mod gat;
mod gcn;
mod graph_layers;
mod mnist;
mod models;
mod partition;
mod prune;
mod sampler;
mod semi_structured_linear;
mod sparse_linear;
mod sparse_param;
mod sparse_training;
mod srste;
mod wanda;
