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

use crate::mtx::Lines;
pub use crate::mtx::{read_mtx, MatrixMarket, MtxField, MtxSymmetry, MAX_LINE};
use burn::tensor::{DType, Int, Tensor, TensorData};
use sparsegrad_backend::SparseTensor;
use std::path::Path;

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

/// The undirected edges of a graph's adjacency file: it must be `pattern symmetric` (each edge
/// stored once, in the lower triangle), without self loops or an edge stored twice. The edges are
/// the stored entries, in file order.
fn undirected_edges(path: &Path, m: MatrixMarket) -> Result<Vec<(usize, usize)>, DataError> {
    if (m.field, m.symmetry) != (MtxField::Pattern, MtxSymmetry::Symmetric) {
        return Err(DataError::content(path, Some(1), format_args!(
            "banner declares `{} {}`; a graph's adjacency must be `pattern symmetric` (each undirected edge stored once)",
            m.field,
            m.symmetry
        )));
    }
    if let Some(k) = m.entries.iter().position(|&(i, j)| i == j) {
        let i = m.entries.get(k).map_or(0, |e| e.0 + 1);
        return Err(DataError::content(
            path,
            None,
            format_args!(
                "entry {} of {} is a self loop `{i} {i}`; the graph's edges have none",
                k + 1,
                m.entries.len()
            ),
        ));
    }
    let mut sorted = m.entries.clone();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w.first() == w.get(1)) {
        let (i, j) = w.first().map_or((0, 0), |&(i, j)| (i + 1, j + 1));
        return Err(DataError::content(path, None, format_args!("edge `{i} {j}` is stored twice")));
    }
    Ok(m.entries)
}

/// Checks a TSV header line.
fn tsv_header(lines: &mut Lines, expected: &str) -> Result<(), DataError> {
    if !lines.advance()? {
        return Err(DataError::content(&lines.path, None, format_args!("empty, no header {expected:?}")));
    }
    if lines.line() != expected {
        return Err(lines.error(format_args!("header {:?} is not {expected:?}", lines.line())));
    }
    Ok(())
}

/// The `n` labels of `records` (`(line, node, label)`), which must name every node of `0..n`
/// once; sized only once `records` (read from the file) has exactly `n` elements, so a declared
/// node count the file does not back allocates nothing.
fn labels_of(lines: &Lines, records: &[(usize, usize, usize)], n: usize, of: &Path) -> Result<Vec<usize>, DataError> {
    if records.len() != n {
        return Err(lines.error(format_args!(
            "the file ends after {} nodes, {} declares {n}",
            records.len(),
            of.display()
        )));
    }
    let mut labels = vec![usize::MAX; n];
    for &(line, node, label) in records {
        let at = |what: String| DataError::content(&lines.path, Some(line), what);
        let slot = labels.get_mut(node).ok_or_else(|| at(format!("node {node} is outside 0..{n}")))?;
        if *slot != usize::MAX {
            return Err(at(format!("node {node} is listed twice")));
        }
        *slot = label;
    }
    // `n` records, none repeated and all below `n`: every node has its label.
    Ok(labels)
}

/// A node number of a TSV line, checked against the `n` nodes of the graph file `of`, and the
/// refusal of more lines than nodes (which bounds what the records take by the declared count).
fn tsv_node(lines: &Lines, token: &str, n: usize, listed: usize, of: &Path) -> Result<usize, DataError> {
    if listed == n {
        return Err(lines.error(format_args!("more node lines than the {n} nodes {} declares", of.display())));
    }
    match token.parse::<usize>() {
        Ok(node) if node < n => Ok(node),
        Ok(node) => Err(lines.error(format_args!("node {node} is outside 0..{n} (the nodes of {})", of.display()))),
        Err(_) => Err(lines.error(format_args!("node {token:?} is not a non-negative integer"))),
    }
}

impl Planetoid {
    /// Loads `<dir>/<name>_adjacency.mtx`, `<name>_features.mtx` and `<name>_nodes.tsv` (each
    /// possibly `.gz`).
    ///
    /// The adjacency must be a `pattern symmetric` Matrix Market file: its stored entries (one
    /// triangle) are the undirected edges, each once, no self loops (see [`Planetoid::edges`]). The
    /// features may be `pattern` (values 1), `real` or `integer` (values kept in
    /// `feature_values`), general or symmetric (expanded), one row per node, no entry twice. The
    /// nodes TSV has the header `node<TAB>label<TAB>split` and one line `node<TAB>label<TAB>split`
    /// per node (every node exactly once; split `train`, `val`, `test` or `none`; a label below
    /// the node count, since more classes than nodes would only add empty classes, or `-1` for
    /// an unlabeled node, whose split must be `none`: see [`Planetoid::unlabeled`]).
    pub fn load(dir: impl AsRef<Path>, name: &str) -> Result<Self, DataError> {
        let dir = dir.as_ref();
        let adjacency_path = dir.join(format!("{name}_adjacency.mtx"));
        let adjacency = read_mtx(&adjacency_path)?;
        let n = adjacency.rows;
        let edges = undirected_edges(&adjacency_path, adjacency)?;
        let features_path = dir.join(format!("{name}_features.mtx"));
        let features = read_mtx(&features_path)?;
        if features.rows != n {
            return Err(DataError::content(
                &features_path,
                None,
                format_args!("{} rows, but {} has {n} nodes", features.rows, adjacency_path.display()),
            ));
        }
        let features = features.to_general()?;
        let mut sorted = features.entries.clone();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w.first() == w.get(1)) {
            let (i, j) = w.first().map_or((0, 0), |&(i, j)| (i + 1, j + 1));
            return Err(DataError::content(&features_path, None, format_args!("entry `{i} {j}` is stored twice")));
        }
        drop(sorted);

        let nodes_path = dir.join(format!("{name}_nodes.tsv"));
        let mut lines = Lines::open(&nodes_path)?;
        tsv_header(&mut lines, "node\tlabel\tsplit")?;
        let (mut records, mut train, mut val, mut test) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut unlabeled = Vec::new();
        while lines.advance()? {
            let line = lines.line();
            let mut f = line.split('\t');
            let (Some(node), Some(label), Some(split), None) = (f.next(), f.next(), f.next(), f.next()) else {
                return Err(lines.error(format_args!("{line:?} is not `node<TAB>label<TAB>split`")));
            };
            let node = tsv_node(&lines, node, n, records.len(), &adjacency_path)?;
            let label = match label.parse::<usize>() {
                _ if label == "-1" => {
                    if split != "none" {
                        return Err(lines.error(format_args!(
                            "node {node} is unlabeled (label -1) but in the {split:?} split; an unlabeled node's split is `none`"
                        )));
                    }
                    unlabeled.push(node);
                    0
                }
                Ok(l) if l < n => l,
                Ok(l) => {
                    return Err(
                        lines.error(format_args!("label {l} is not below the {n} nodes (more classes than nodes)"))
                    )
                }
                Err(_) => return Err(lines.error(format_args!("label {label:?} is not a non-negative integer"))),
            };
            match split {
                "train" => train.push(node),
                "val" => val.push(node),
                "test" => test.push(node),
                "none" => {}
                _ => return Err(lines.error(format_args!("split {split:?} is not train, val, test or none"))),
            }
            records.push((lines.number, node, label));
        }
        let labels = labels_of(&lines, &records, n, &adjacency_path)?;
        let mut is_labeled = vec![true; n];
        for &u in &unlabeled {
            is_labeled[u] = false;
        }
        let num_classes = labels.iter().zip(&is_labeled).filter(|(_, &l)| l).map(|(&c, _)| c + 1).max().unwrap_or(0);
        Ok(Self {
            nodes: n,
            edges,
            num_features: features.cols,
            features: features.entries,
            feature_values: features.values,
            labels,
            unlabeled,
            num_classes,
            train,
            val,
            test,
        })
    }

    /// The features as a CSR tensor with their values (`feature_values`; duplicate entries,
    /// which [`Planetoid::load`] refuses, summed), f32 values and int64 indices, columns sorted
    /// per row. Panics if `features` and `feature_values` differ in length or an entry is
    /// outside `nodes x num_features` (a hand-built value; loaded ones are checked).
    pub fn feature_matrix(&self, device: &burn::tensor::Device) -> SparseTensor<2> {
        assert_eq!(
            self.features.len(),
            self.feature_values.len(),
            "features and feature_values must have one element per entry"
        );
        let mut rows: Vec<Vec<(i64, f32)>> = vec![Vec::new(); self.nodes];
        for (&(r, c), &v) in self.features.iter().zip(&self.feature_values) {
            rows[r].push((c as i64, v as f32));
        }
        let mut crow = vec![0i64];
        let (mut col, mut val) = (Vec::new(), Vec::new());
        for r in rows.iter_mut() {
            r.sort_by_key(|&(c, _)| c);
            r.dedup_by(|next, kept| {
                let same = next.0 == kept.0;
                if same {
                    kept.1 += next.1;
                }
                same
            });
            for &(c, v) in r.iter() {
                col.push(c);
                val.push(v);
            }
            crow.push(col.len() as i64);
        }
        let nnz = col.len();
        SparseTensor::csr(
            Tensor::<1, Int>::from_data(TensorData::new(crow, [self.nodes + 1]), (device, DType::I64)),
            Tensor::<1, Int>::from_data(TensorData::new(col, [nnz]), (device, DType::I64)),
            Tensor::<1>::from_data(TensorData::new(val, [nnz]), device),
            [self.nodes, self.num_features],
        )
        .expect("loaded features are in bounds, sorted and unique per row")
    }

    /// The features row-normalised ([`normalize_features`] of [`Planetoid::feature_matrix`]):
    /// each row of non-zero sum sums to 1, as Kipf & Welling preprocess bag-of-words features,
    /// and a row summing to 0 becomes zeros. A pattern row of `k` entries gets `1.0 / k` exactly.
    pub fn features_csr(&self, device: &burn::tensor::Device) -> SparseTensor<2> {
        normalize_features(&self.feature_matrix(device)).expect("a checked CSR matrix")
    }

    /// Zachary's karate club from `<dir>/karate_networkx.mtx` and `karate_networkx_club.tsv`
    /// (`data/karate`, written by its `make_karate.py` from networkx's data): identity features,
    /// the two clubs as labels (`Mr. Hi` 0, `Officer` 1), the first and the last node (0 "Mr. Hi"
    /// and 33 "Officer") as the training set and every other node as the test set.
    ///
    /// `karate_networkx.mtx` must be `pattern symmetric` with at least 2 nodes (a `0 0 0` or
    /// `1 1 0` size line is an error: the split needs two distinct training nodes); the club file
    /// has the header `node<TAB>club` and one line per node, every node exactly once.
    pub fn karate(dir: impl AsRef<Path>) -> Result<Self, DataError> {
        let dir = dir.as_ref();
        let mtx_path = dir.join("karate_networkx.mtx");
        let m = read_mtx(&mtx_path)?;
        let n = m.rows;
        if n < 2 {
            return Err(DataError::content(&mtx_path, None, format_args!(
                "the size line declares {n} nodes; the karate split needs at least 2 (the first and the last node train)"
            )));
        }
        let edges = undirected_edges(&mtx_path, m)?;
        let club_path = dir.join("karate_networkx_club.tsv");
        let mut lines = Lines::open(&club_path)?;
        tsv_header(&mut lines, "node\tclub")?;
        let mut records = Vec::new();
        while lines.advance()? {
            let line = lines.line();
            let mut f = line.split('\t');
            let (Some(node), Some(club), None) = (f.next(), f.next(), f.next()) else {
                return Err(lines.error(format_args!("{line:?} is not `node<TAB>club`")));
            };
            let node = tsv_node(&lines, node, n, records.len(), &mtx_path)?;
            let label = match club {
                "Mr. Hi" => 0,
                "Officer" => 1,
                _ => return Err(lines.error(format_args!("club {club:?} is not \"Mr. Hi\" or \"Officer\""))),
            };
            records.push((lines.number, node, label));
        }
        let labels = labels_of(&lines, &records, n, &mtx_path)?;
        let last = n - 1; // n >= 2
        Ok(Self {
            nodes: n,
            edges,
            num_features: n,
            features: (0..n).map(|i| (i, i)).collect(),
            feature_values: vec![1.0; n],
            labels,
            unlabeled: Vec::new(),
            num_classes: 2,
            train: vec![0, last],
            val: Vec::new(),
            test: (1..last).collect(),
        })
    }
}

/// Row normalisation of a feature matrix (PyG's `NormalizeFeatures`, Kipf & Welling's
/// preprocessing): every stored value divided by the sum of its row's stored values, in the
/// values' dtype; a row summing to 0 becomes zeros (their `1 / rowsum` with infinities set to
/// 0). Any layout in, CSR out (an uncoalesced COO input is coalesced first: duplicates are one
/// entry). The values move with burn ops, so the result is differentiable w.r.t. `x`'s values.
pub fn normalize_features(x: &SparseTensor<2>) -> sparsegrad_backend::Result<SparseTensor<2>> {
    x.check_invariants()?;
    let csr = if x.layout() == sparsegrad_backend::Layout::Csr { x.clone() } else { x.to_sparse_csr()? };
    if csr.dense_dim() > 0 {
        return Err(sparsegrad_backend::SparseError::InvalidArgument {
            operation: "normalize_features",
            message: format!("hybrid features (dense_dim {}) are not supported", csr.dense_dim()),
        });
    }
    let (crow, _) = csr.compressed_indices_flat().expect("a CSR tensor");
    let crow = sparsegrad_backend::host::with_ints(&crow, |v| v.to_i64());
    let [m, _] = csr.shape();
    let nnz = csr.nnz();
    let mut rows = Vec::with_capacity(nnz);
    for (r, w) in crow.windows(2).enumerate() {
        rows.extend(std::iter::repeat_n(r as i64, (w[1] - w[0]) as usize));
    }
    let device = csr.device();
    let rows = Tensor::<1, Int>::from_data(TensorData::new(rows, [nnz]), (&device, DType::I64));
    let values = csr.values_flat().reshape([nnz]);
    let sums = Tensor::<1>::zeros([m], (&device, values.dtype())).select_assign(
        0,
        rows.clone(),
        values.clone(),
        burn::tensor::IndexingUpdateOp::Add,
    );
    let per_entry = sums.select(0, rows);
    let zero = per_entry.clone().equal_elem(0.0);
    let normalized = (values / per_entry.mask_fill(zero.clone(), 1.0)).mask_fill(zero, 0.0);
    Ok(csr.with_values(normalized.reshape([nnz, 1])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A fresh directory for one test (removed by the test on success).
    fn temp_dir(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sparsegrad-planetoid-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn repo_data(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("data").join(name)
    }

    /// The export of Cora in the checkout's shared data (never copied into the repository).
    fn cora_export() -> PathBuf {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/planetoid/export/cora");
        assert!(dir.is_dir(), "{} holds the export of Cora (the checkout's ../shared/data)", dir.display());
        dir
    }

    #[test]
    fn cora_export_loads() {
        let g = Planetoid::load(cora_export(), "cora").unwrap();
        assert_eq!(
            (g.nodes, g.edges.len(), g.num_features, g.features.len(), g.num_classes),
            (2708, 5278, 1433, 49216, 7)
        );
        assert_eq!((g.train.len(), g.val.len(), g.test.len()), (140, 500, 1000));
        assert_eq!(g.train, (0..140).collect::<Vec<_>>());
        assert_eq!(g.val, (140..640).collect::<Vec<_>>());
        assert_eq!((g.edges[0], g.features[0]), ((2, 1), (0, 19)));
        assert!(g.edges.iter().all(|&(u, v)| u > v));
        assert!(g.feature_values.len() == g.features.len() && g.feature_values.iter().all(|&v| v == 1.0));
        // Row normalisation: every value is exactly 1 / (entries of its row), as before the values.
        let x = g.features_csr(&burn::tensor::Device::flex());
        let crow: Vec<i64> = x.crow_indices::<1>().unwrap().into_data().iter::<i64>().collect();
        let val: Vec<f32> = x.values::<1>().unwrap().into_data().try_to_vec().unwrap();
        assert_eq!(val.len(), 49216);
        for r in 0..g.nodes {
            let (a, b) = (crow[r] as usize, crow[r + 1] as usize);
            assert!(val[a..b].iter().all(|&v| v.to_bits() == (1.0 / (b - a) as f32).to_bits()), "row {r}");
        }
    }

    #[test]
    fn karate_loads_as_before() {
        let g = Planetoid::karate(repo_data("karate")).unwrap();
        assert_eq!((g.nodes, g.edges.len(), g.num_features, g.features.len(), g.num_classes), (34, 78, 34, 34, 2));
        assert_eq!((g.train.clone(), g.val.len(), g.test.len()), (vec![0, 33], 0, 32));
        assert_eq!((g.labels[0], g.labels[33], g.labels.iter().sum::<usize>()), (0, 1, 17));
        assert_eq!(g.edges[0], (1, 0));
        assert_eq!(g.feature_values, vec![1.0; 34]);
    }

    /// Writes a Planetoid dataset `t` to `dir`.
    fn write_planetoid(dir: &Path, adjacency: &str, features: &str, nodes: &str) {
        std::fs::write(dir.join("t_adjacency.mtx"), adjacency).unwrap();
        std::fs::write(dir.join("t_features.mtx"), features).unwrap();
        std::fs::write(dir.join("t_nodes.tsv"), nodes).unwrap();
    }

    const ADJ: &str = "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 2\n";
    const FEAT: &str = "%%MatrixMarket matrix coordinate pattern general\n3 2 3\n1 1\n2 2\n3 1\n";
    const NODES: &str = "node\tlabel\tsplit\n0\t0\ttrain\n1\t1\tval\n2\t1\ttest\n";

    #[test]
    fn planetoid_load_small_dataset_with_real_features() {
        let dir = temp_dir("small");
        write_planetoid(&dir, ADJ, FEAT, NODES);
        let g = Planetoid::load(&dir, "t").unwrap();
        assert_eq!(
            (g.nodes, g.edges.clone(), g.num_features, g.labels.clone(), g.num_classes),
            (3, vec![(1, 0), (2, 1)], 2, vec![0, 1, 1], 2)
        );
        assert_eq!((g.train, g.val, g.test), (vec![0], vec![1], vec![2]));
        // Real features keep their values; the row normalisation divides by the row's sum.
        let feat = "%%MatrixMarket matrix coordinate real general\n3 2 4\n1 1 1\n1 2 3\n2 2 -2\n3 1 0\n";
        write_planetoid(&dir, ADJ, feat, "node\tlabel\tsplit\n2\t0\tnone\n0\t1\ttrain\n1\t2\ttest\n");
        let g = Planetoid::load(&dir, "t").unwrap();
        assert_eq!(
            (g.features.clone(), g.feature_values.clone()),
            (vec![(0, 0), (0, 1), (1, 1), (2, 0)], vec![1.0, 3.0, -2.0, 0.0])
        );
        assert_eq!(
            (g.labels.clone(), g.num_classes, g.train.clone(), g.test.clone()),
            (vec![1, 2, 0], 3, vec![0], vec![1])
        );
        let x = g.features_csr(&burn::tensor::Device::flex());
        assert_eq!(x.values::<1>().unwrap().into_data().try_to_vec::<f32>().unwrap(), vec![0.25, 0.75, 1.0, 0.0]);
        // Unnormalised, the values as stored: 0.5, 2.0 and -7.0 stay themselves.
        let feat = "%%MatrixMarket matrix coordinate real general\n3 2 3\n1 1 0.5\n2 2 2.0\n3 1 -7.0\n";
        write_planetoid(&dir, ADJ, feat, NODES);
        let g = Planetoid::load(&dir, "t").unwrap();
        let raw = g.feature_matrix(&burn::tensor::Device::flex());
        assert_eq!(raw.to_dense().into_data().try_to_vec::<f32>().unwrap(), vec![0.5, 0.0, 0.0, 2.0, -7.0, 0.0]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unlabeled_nodes_are_outside_every_split() {
        let dir = temp_dir("unlabeled");
        let nodes = "node\tlabel\tsplit\n0\t2\ttrain\n1\t-1\tnone\n2\t0\ttest\n";
        write_planetoid(&dir, ADJ, FEAT, nodes);
        let g = Planetoid::load(&dir, "t").unwrap();
        assert_eq!((g.labels.clone(), g.unlabeled.clone(), g.num_classes), (vec![2, 0, 0], vec![1], 3));
        assert_eq!((g.train, g.val, g.test), (vec![0], vec![], vec![2]));
        // All unlabeled: no classes.
        write_planetoid(&dir, ADJ, FEAT, "node\tlabel\tsplit\n0\t-1\tnone\n1\t-1\tnone\n2\t-1\tnone\n");
        let g = Planetoid::load(&dir, "t").unwrap();
        assert_eq!((g.unlabeled, g.num_classes), (vec![0, 1, 2], 0));
        // An unlabeled node in a split is an error naming the line.
        write_planetoid(&dir, ADJ, FEAT, "node\tlabel\tsplit\n0\t0\ttrain\n1\t-1\ttest\n2\t0\tnone\n");
        let e = Planetoid::load(&dir, "t").unwrap_err().to_string();
        assert!(e.contains("t_nodes.tsv:3: node 1 is unlabeled (label -1) but in the \"test\" split"), "{e}");
        write_planetoid(&dir, ADJ, FEAT, "node\tlabel\tsplit\n0\t-2\tnone\n");
        let e = Planetoid::load(&dir, "t").unwrap_err().to_string();
        assert!(e.contains("t_nodes.tsv:2: label \"-2\" is not a non-negative integer"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Row normalisation against the dense definition (rows divided by their sums, zero-sum rows
    /// zero) on CSR, CSC, uncoalesced COO and an empty matrix.
    #[test]
    fn normalize_features_matches_the_definition() {
        use burn::tensor::Device;
        let device = Device::flex();
        // Rows: [1, 3, 0], [0, 0, 0] (empty), [2, -2, 0] (sums to 0), [0, -4, 0].
        let dense = [1.0, 3.0, 0.0, 0.0, 0.0, 0.0, 2.0, -2.0, 0.0, 0.0, -4.0, 0.0];
        let want = [0.25, 0.75, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0];
        let x = Tensor::<2>::from_data(TensorData::new(dense.to_vec(), [4, 3]), (&device, DType::F64));
        let csr = sparsegrad_backend::ToSparse::to_sparse_csr(x.clone()).unwrap();
        let csc = sparsegrad_backend::ToSparse::to_sparse_csc(x).unwrap();
        // COO with (0, 1) split into 1 + 2 and stored last.
        let idx = Tensor::<2, Int>::from_data(
            TensorData::new(vec![0i64, 2, 2, 3, 0, 0, 0, 0, 1, 1, 1, 1], [2, 6]),
            (&device, DType::I64),
        );
        let vals =
            Tensor::<1>::from_data(TensorData::new(vec![1.0, 2.0, -2.0, -4.0, 1.0, 2.0], [6]), (&device, DType::F64));
        let coo = SparseTensor::coo(idx, vals, [4, 3]).unwrap();
        assert!(!coo.is_coalesced());
        for (name, s) in [("csr", csr), ("csc", csc), ("uncoalesced coo", coo)] {
            let got: Vec<f64> = normalize_features(&s).unwrap().to_dense().into_data().iter::<f64>().collect();
            assert_eq!(got, want, "{name}");
        }
        let empty = SparseTensor::<2>::empty([2, 5], &device);
        assert_eq!(normalize_features(&empty).unwrap().nnz(), 0);
    }

    #[test]
    fn planetoid_load_rejects_inconsistent_files() {
        let dir = temp_dir("inconsistent");
        let general = "%%MatrixMarket matrix coordinate pattern general\n3 3 2\n2 1\n1 2\n";
        let real_adj = "%%MatrixMarket matrix coordinate real symmetric\n3 3 1\n2 1 0.5\n";
        let self_loop = "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 3\n";
        let twice = "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 3\n2 1\n3 2\n2 1\n";
        let feat_rows = "%%MatrixMarket matrix coordinate pattern general\n4 2 1\n1 1\n";
        let feat_twice = "%%MatrixMarket matrix coordinate real general\n3 2 2\n1 1 1\n1 1 2\n";
        let huge = "%%MatrixMarket matrix coordinate pattern symmetric\n1000000000000 1000000000000 0\n";
        let huge_feat = "%%MatrixMarket matrix coordinate pattern general\n1000000000000 2 0\n";
        let cases: [(&str, &str, &str, &str); 15] = [
            (
                general,
                FEAT,
                NODES,
                "t_adjacency.mtx:1: banner declares `pattern general`; a graph's adjacency must be `pattern symmetric`",
            ),
            (real_adj, FEAT, NODES, "t_adjacency.mtx:1: banner declares `real symmetric`"),
            (self_loop, FEAT, NODES, "t_adjacency.mtx: entry 2 of 2 is a self loop `3 3`"),
            (twice, FEAT, NODES, "t_adjacency.mtx: edge `2 1` is stored twice"),
            (ADJ, feat_rows, NODES, "t_features.mtx: 4 rows, but"),
            (ADJ, feat_twice, NODES, "t_features.mtx: entry `1 1` is stored twice"),
            (
                ADJ,
                FEAT,
                "id\tlabel\tsplit\n0\t0\ttrain\n",
                "t_nodes.tsv:1: header \"id\\tlabel\\tsplit\" is not \"node\\tlabel\\tsplit\"",
            ),
            (ADJ, FEAT, "node\tlabel\tsplit\n0\t0\ttrain\n3\t0\ttest\n", "t_nodes.tsv:3: node 3 is outside 0..3"),
            (
                ADJ,
                FEAT,
                "node\tlabel\tsplit\n0\t0\ttrain\n1\t0\n",
                "t_nodes.tsv:3: \"1\\t0\" is not `node<TAB>label<TAB>split`",
            ),
            (
                ADJ,
                FEAT,
                "node\tlabel\tsplit\n0\t0\ttrain\n1\t0\tdev\n",
                "t_nodes.tsv:3: split \"dev\" is not train, val, test or none",
            ),
            (ADJ, FEAT, "node\tlabel\tsplit\n0\t3\ttrain\n", "t_nodes.tsv:2: label 3 is not below the 3 nodes"),
            (
                ADJ,
                FEAT,
                "node\tlabel\tsplit\n0\t0\ttrain\n1\t0\ttest\n0\t1\ttest\n",
                "t_nodes.tsv:4: node 0 is listed twice",
            ),
            (ADJ, FEAT, "node\tlabel\tsplit\n0\t0\ttrain\n1\t0\ttest\n", "t_nodes.tsv:3: the file ends after 2 nodes"),
            (
                ADJ,
                FEAT,
                "node\tlabel\tsplit\n0\t0\ttrain\n1\t0\ttest\n2\t0\ttest\n2\t0\ttest\n",
                "t_nodes.tsv:5: more node lines than the 3 nodes",
            ),
            // 10^12 declared nodes, a two-line TSV: an error, no 8 TB label vector.
            (huge, huge_feat, NODES, "t_nodes.tsv:4: the file ends after 3 nodes, "),
        ];
        for (adjacency, features, nodes, expected) in cases {
            write_planetoid(&dir, adjacency, features, nodes);
            let e = Planetoid::load(&dir, "t").unwrap_err().to_string();
            assert!(e.contains(expected), "expected {expected:?}, got {e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn karate_rejects_inconsistent_files() {
        let dir = temp_dir("karate");
        let shipped_mtx = std::fs::read_to_string(repo_data("karate").join("karate_networkx.mtx")).unwrap();
        let shipped_club = std::fs::read_to_string(repo_data("karate").join("karate_networkx_club.tsv")).unwrap();
        let club_error = |club: &str| {
            std::fs::write(dir.join("karate_networkx.mtx"), &shipped_mtx).unwrap();
            std::fs::write(dir.join("karate_networkx_club.tsv"), club).unwrap();
            Planetoid::karate(&dir).unwrap_err().to_string()
        };
        // Node 34 of a 34-node graph (0-based nodes 0..=33) on line 36 (header, 34 nodes, then it).
        let e = club_error(&format!("{shipped_club}34\tOfficer\n"));
        assert!(e.contains("karate_networkx_club.tsv:36: more node lines than the 34 nodes "), "{e}");
        let e = club_error(&shipped_club.replace("33\tOfficer", "34\tOfficer"));
        assert!(e.contains("karate_networkx_club.tsv:35: node 34 is outside 0..34 (the nodes of "), "{e}");
        let e = club_error(&shipped_club.replace("33\tOfficer", "3\tOfficer"));
        assert!(e.contains("karate_networkx_club.tsv:35: node 3 is listed twice"), "{e}");
        let e = club_error(&shipped_club.replace("33\tOfficer\n", ""));
        assert!(e.contains("karate_networkx_club.tsv:34: the file ends after 33 nodes"), "{e}");
        let e = club_error(&shipped_club.replace("33\tOfficer", "33\tofficer"));
        assert!(e.contains("karate_networkx_club.tsv:35: club \"officer\" is not \"Mr. Hi\" or \"Officer\""), "{e}");
        let e = club_error(&shipped_club.replace("node\tclub", "club"));
        assert!(e.contains("karate_networkx_club.tsv:1: header \"club\" is not \"node\\tclub\""), "{e}");

        let mtx_error = |mtx: &str| {
            std::fs::write(dir.join("karate_networkx.mtx"), mtx).unwrap();
            std::fs::write(dir.join("karate_networkx_club.tsv"), &shipped_club).unwrap();
            Planetoid::karate(&dir).unwrap_err().to_string()
        };
        let e = mtx_error("%%MatrixMarket matrix coordinate pattern symmetric\n0 0 0\n");
        assert!(
            e.contains("karate_networkx.mtx: the size line declares 0 nodes; the karate split needs at least 2"),
            "{e}"
        );
        let e = mtx_error("%%MatrixMarket matrix coordinate pattern symmetric\n1 1 0\n");
        assert!(e.contains("karate_networkx.mtx: the size line declares 1 nodes"), "{e}");
        // 10^12 declared nodes and a 34-line club file: an error, no 8 TB allocation.
        let e = mtx_error("%%MatrixMarket matrix coordinate pattern symmetric\n1000000000000 1000000000000 0\n");
        assert!(e.contains("karate_networkx_club.tsv:35: the file ends after 34 nodes"), "{e}");
        let e = mtx_error(&shipped_mtx.replace("pattern symmetric", "pattern general"));
        assert!(e.contains("karate_networkx.mtx:1: banner declares `pattern general`"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
