//! The `--dataset NAME` and `--root DIR` options of the graph examples: which Planetoid graph to
//! load, and from where. The repository ships Cora (`data/cora`); Citeseer and PubMed load from
//! a directory holding the same export (`<name>_adjacency.mtx`, `<name>_features.mtx`,
//! `<name>_nodes.tsv`, each possibly gzip-compressed; see `Planetoid::load`).

#![allow(dead_code)]

use clap::{Args, ValueEnum};
use sparsegrad::nn::Planetoid;
use std::path::PathBuf;

/// A Planetoid graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Dataset {
    /// Cora (shipped in `data/cora`).
    Cora,
    /// Citeseer (bring its export with `--root`).
    Citeseer,
    /// PubMed (bring its export with `--root`).
    Pubmed,
}

impl Dataset {
    /// The file-name prefix of the export.
    pub fn name(self) -> &'static str {
        match self {
            Dataset::Cora => "cora",
            Dataset::Citeseer => "citeseer",
            Dataset::Pubmed => "pubmed",
        }
    }

    /// The name as papers print it.
    pub fn title(self) -> &'static str {
        match self {
            Dataset::Cora => "Cora",
            Dataset::Citeseer => "Citeseer",
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
    /// The directory of its export (default: `data/<dataset>` in the repository).
    #[arg(long)]
    pub root: Option<PathBuf>,
}

impl DatasetArgs {
    /// The directory the graph is read from.
    pub fn dir(&self) -> PathBuf {
        self.root
            .clone()
            .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data").join(self.dataset.name()))
    }

    /// The graph; exits with the loader's message (file, line, what) when it cannot be read.
    pub fn load(&self) -> Planetoid {
        let dir = self.dir();
        Planetoid::load(&dir, self.dataset.name()).unwrap_or_else(|e| {
            eprintln!(
                "cannot load {} from {}: {e}\n(the repository ships Cora only; give --root DIR holding {}_adjacency.mtx, \
                 {}_features.mtx and {}_nodes.tsv, as in data/cora)",
                self.dataset.title(),
                dir.display(),
                self.dataset.name(),
                self.dataset.name(),
                self.dataset.name()
            );
            std::process::exit(2)
        })
    }
}
