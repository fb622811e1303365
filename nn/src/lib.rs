//! sparsegrad-nn: sparse neural-network layers for burn.
//!
//! - `gcn`: [`GcnConv`] and [`gcn_norm`] (Kipf & Welling's graph convolution).
//! - `gat`: [`GatConv`] (multi-head graph attention: SDDMM scores, sparse softmax, sparse mm).
//! - `dropout`: dropout on the stored values of sparse tensors (and a seeded dense twin).
//! - `planetoid`: loaders for the graph datasets shipped in `data/` (Cora, karate club).

pub mod dropout;
pub mod gat;
pub mod gcn;
pub mod planetoid;

pub use dropout::{dense_dropout, sparse_dropout, MaskRng};
pub use gat::{GatConv, GatConvConfig};
pub use gcn::{adjacency_with_self_loops, gcn_norm, GcnConv, GcnConvConfig};
pub use planetoid::{DataError, Planetoid};
