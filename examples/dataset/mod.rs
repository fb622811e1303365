//! The `--dataset NAME` and `--root DIR` options of the graph examples: which Planetoid graph to
//! load, and where to look first. The graph comes from PyG's raw files through
//! `Planetoid::new`'s chain of sources: `--root` (PyG's layout, `DIR/CiteSeer/raw/ind.citeseer.*`),
//! `$SPARSEGRAD_DATA`, the user's cache, this repository's `../shared/data`, then a download into
//! the first of `--root`, `$SPARSEGRAD_DATA` and the cache (the examples build with the feature
//! `download`). Nothing is shipped in the repository.

#![allow(dead_code)]

use clap::{Args, ValueEnum};
use sparsegrad::nn::Planetoid;
use std::path::PathBuf;

/// A Planetoid graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Dataset {
    /// Cora (2708 nodes, 1433 features, 7 classes).
    Cora,
    /// CiteSeer (3327 nodes, 3703 features, 6 classes).
    Citeseer,
    /// PubMed (19717 nodes, 500 TF-IDF features, 3 classes).
    Pubmed,
}

impl Dataset {
    /// The name as PyG and papers write it (and the directory under a root).
    pub fn title(self) -> &'static str {
        match self {
            Dataset::Cora => "Cora",
            Dataset::Citeseer => "CiteSeer",
            Dataset::Pubmed => "PubMed",
        }
    }
}

/// Where the graph comes from.
#[derive(Args, Debug)]
pub struct DatasetArgs {
    /// The Planetoid graph.
    #[arg(long, value_enum, default_value = "cora")]
    pub dataset: Dataset,
    /// PyG's root: the raw files in DIR/<Name>/raw (downloaded there when missing everywhere).
    #[arg(long)]
    pub root: Option<PathBuf>,
}

impl DatasetArgs {
    /// The graph; exits with the loader's message (each place tried, or the file and what is
    /// wrong) when it cannot be had.
    pub fn load(&self) -> Planetoid {
        Planetoid::new(self.root.as_deref(), self.dataset.title()).unwrap_or_else(|e| {
            eprintln!("cannot load {}: {e}", self.dataset.title());
            std::process::exit(2)
        })
    }
}
