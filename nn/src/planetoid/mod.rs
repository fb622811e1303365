//! [`Planetoid`], a node-classification graph, and its plain-text loaders: a Planetoid export
//! ([`Planetoid::load`]: Matrix Market adjacency and features, a TSV of labels and the split;
//! features keep their values, nodes may be unlabeled; the exports in `../shared/data/planetoid/
//! export` check [`Planetoid::new`], which reads PyG's raw files, in `planetoid_raw`) and Zachary's
//! karate club shipped in `data/karate` ([`Planetoid::karate`]), and the row normalisation of
//! features ([`normalize_features`]). Files may be gzip-compressed (`.gz`). The Matrix Market
//! files are read with the reader of `mtx` ([`read_mtx`], re-exported here with its types), the
//! TSV files with its line reader.
//!
//! The files are untrusted input: they are read as streams of lines of at most [`MAX_LINE`]
//! bytes (never whole into memory), nothing is sized by a number a file declares before the file's
//! own content bounds that number (a 100-byte file announcing 10^12 nodes is an error, not an
//! 8 TB allocation), sizes computed from file contents use checked arithmetic, and every
//! inconsistency is a [`DataError`] naming the file, the 1-based line (`path:line: ...`) where
//! the problem sits, and what is wrong.
//!
//! Here the graph type; `export` holds [`Planetoid::load`], `karate` [`Planetoid::karate`], `parse`
//! the pieces of the plain-text formats both loaders share, and `features` the feature matrix
//! and [`normalize_features`].

pub use crate::mtx::{read_mtx, MatrixMarket, MtxField, MtxSymmetry, MAX_LINE};

mod export;
mod features;
mod karate;
mod parse;
#[cfg(test)]
mod tests;

pub use features::normalize_features;

/// A node-classification graph: undirected edges, sparse features, labels and the split.
#[derive(Debug, Clone)]
pub struct Planetoid {
    /// Number of nodes.
    pub nodes: usize,
    /// Undirected edges `(u, v)`, each listed once, no self loops: the entries stored in the
    /// `pattern symmetric` adjacency file (its lower triangle, `u > v`), in file order.
    pub edges: Vec<(usize, usize)>,
    /// Number of feature columns.
    pub num_features: usize,
    /// Feature entries `(node, feature)`, each at most once.
    pub features: Vec<(usize, usize)>,
    /// The value of each entry of `features` (same length and order): 1.0 for a `pattern`
    /// features file (Cora's bag of words) and for the karate club's identity features, the
    /// stored values for a `real` or `integer` one.
    pub feature_values: Vec<f64>,
    /// Class of every node; 0 for an unlabeled node (as PyG's argmax of its all-zero one-hot
    /// row), which [`Planetoid::unlabeled`] lists and no split holds.
    pub labels: Vec<usize>,
    /// The nodes without a label (label `-1` in an export's nodes file; an all-zero one-hot row
    /// in the raw files: CiteSeer's 15 isolated nodes), in the nodes file's order (ascending for
    /// the raw files); none of them is in `train`, `val` or `test`.
    pub unlabeled: Vec<usize>,
    /// Number of classes: one more than the largest label of a labeled node.
    pub num_classes: usize,
    /// Training nodes (140 for Cora).
    pub train: Vec<usize>,
    /// Validation nodes (500).
    pub val: Vec<usize>,
    /// Test nodes (1000).
    pub test: Vec<usize>,
}

pub use crate::error::DataError;
