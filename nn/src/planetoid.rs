//! Loaders for the graph datasets shipped in `data/`: the Planetoid export of Cora (Matrix
//! Market adjacency and features, a TSV of labels and the 140 / 500 / 1000 split) and Zachary's
//! karate club. Files may be gzip-compressed (`.gz`).

use burn::tensor::{DType, Int, Tensor, TensorData};
use flate2::read::GzDecoder;
use sparsegrad_backend::SparseTensor;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// A node-classification graph: undirected edges, sparse binary features, labels and the split.
#[derive(Debug, Clone)]
pub struct Planetoid {
    /// Number of nodes.
    pub nodes: usize,
    /// Undirected edges `(u, v)`, each listed once, no self loops.
    pub edges: Vec<(usize, usize)>,
    /// Number of feature columns.
    pub num_features: usize,
    /// Feature entries `(node, feature)` (all values 1).
    pub features: Vec<(usize, usize)>,
    /// Class of every node.
    pub labels: Vec<usize>,
    /// Number of classes.
    pub num_classes: usize,
    /// Training nodes (140 for Cora).
    pub train: Vec<usize>,
    /// Validation nodes (500).
    pub val: Vec<usize>,
    /// Test nodes (1000).
    pub test: Vec<usize>,
}

/// An error reading a dataset: the file and what is wrong.
#[derive(Debug)]
pub struct DataError(pub String);

impl std::fmt::Display for DataError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DataError {}

/// The text of `path`, or of `path.gz` decompressed.
fn read_text(path: &Path) -> Result<String, DataError> {
    let gz = path.with_extension(format!("{}.gz", path.extension().and_then(|e| e.to_str()).unwrap_or("")));
    let mut text = String::new();
    if path.exists() {
        std::fs::File::open(path).and_then(|mut f| f.read_to_string(&mut text)).map_err(|e| DataError(format!("{}: {e}", path.display())))?;
    } else {
        let f = std::fs::File::open(&gz).map_err(|e| DataError(format!("{} (or .gz): {e}", path.display())))?;
        BufReader::new(GzDecoder::new(f)).read_to_string(&mut text).map_err(|e| DataError(format!("{}: {e}", gz.display())))?;
    }
    Ok(text)
}

/// Matrix Market coordinate entries (0-based), with the declared size.
pub fn read_mtx(path: &Path) -> Result<(usize, usize, Vec<(usize, usize)>), DataError> {
    let text = read_text(path)?;
    let bad = |line: &str| DataError(format!("{}: bad line {line:?}", path.display()));
    let mut lines = text.lines().filter(|l| !l.starts_with('%') && !l.trim().is_empty());
    let header = lines.next().ok_or_else(|| DataError(format!("{}: empty", path.display())))?;
    let dims: Vec<usize> = header.split_whitespace().map(|t| t.parse().map_err(|_| bad(header))).collect::<Result<_, _>>()?;
    let [rows, cols, _] = dims[..] else { return Err(bad(header)) };
    let mut entries = Vec::new();
    for line in lines {
        let mut it = line.split_whitespace().map(|t| t.parse::<usize>());
        match (it.next(), it.next()) {
            (Some(Ok(r)), Some(Ok(c))) if r >= 1 && c >= 1 && r <= rows && c <= cols => entries.push((r - 1, c - 1)),
            _ => return Err(bad(line)),
        }
    }
    Ok((rows, cols, entries))
}

impl Planetoid {
    /// Loads `<dir>/<name>_adjacency.mtx`, `<name>_features.mtx` and `<name>_nodes.tsv` (each
    /// possibly `.gz`).
    pub fn load(dir: impl AsRef<Path>, name: &str) -> Result<Self, DataError> {
        let dir = dir.as_ref();
        let (n, _, edges) = read_mtx(&dir.join(format!("{name}_adjacency.mtx")))?;
        let (fn_, num_features, features) = read_mtx(&dir.join(format!("{name}_features.mtx")))?;
        if fn_ != n {
            return Err(DataError(format!("{name}: {n} nodes in the adjacency, {fn_} in the features")));
        }
        let nodes_path = dir.join(format!("{name}_nodes.tsv"));
        let text = read_text(&nodes_path)?;
        let mut labels = vec![usize::MAX; n];
        let (mut train, mut val, mut test) = (Vec::new(), Vec::new(), Vec::new());
        for line in BufReader::new(text.as_bytes()).lines().skip(1) {
            let line = line.map_err(|e| DataError(e.to_string()))?;
            let f: Vec<&str> = line.split('\t').collect();
            let parse = |s: &str| s.parse::<usize>().map_err(|_| DataError(format!("{}: bad line {line:?}", nodes_path.display())));
            if f.len() < 3 {
                return Err(DataError(format!("{}: bad line {line:?}", nodes_path.display())));
            }
            let node = parse(f[0])?;
            if node >= n {
                return Err(DataError(format!("{}: node {node} out of range", nodes_path.display())));
            }
            labels[node] = parse(f[1])?;
            match f[2] {
                "train" => train.push(node),
                "val" => val.push(node),
                "test" => test.push(node),
                _ => {}
            }
        }
        if let Some(node) = labels.iter().position(|&l| l == usize::MAX) {
            return Err(DataError(format!("{}: node {node} has no label", nodes_path.display())));
        }
        let num_classes = labels.iter().max().map_or(0, |m| m + 1);
        Ok(Self { nodes: n, edges, num_features, features, labels, num_classes, train, val, test })
    }

    /// The features as a row-normalised CSR tensor (each row sums to 1, as Kipf & Welling
    /// preprocess bag-of-words features), f32 values and int64 indices.
    pub fn features_csr(&self, device: &burn::tensor::Device) -> SparseTensor<2> {
        let mut rows: Vec<Vec<i64>> = vec![Vec::new(); self.nodes];
        for &(r, c) in &self.features {
            rows[r].push(c as i64);
        }
        let mut crow = vec![0i64];
        let (mut col, mut val) = (Vec::new(), Vec::new());
        for r in rows.iter_mut() {
            r.sort_unstable();
            r.dedup();
            let w = 1.0 / r.len().max(1) as f32;
            col.extend_from_slice(r);
            val.extend(std::iter::repeat_n(w, r.len()));
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

    /// Zachary's karate club from `<dir>/karate.mtx` and `karate_networkx_club.tsv`: identity
    /// features, the two clubs as labels, nodes 0 ("Mr. Hi") and 33 ("Officer") as the training
    /// set and every other node as the test set.
    pub fn karate(dir: impl AsRef<Path>) -> Result<Self, DataError> {
        let dir = dir.as_ref();
        let (n, _, edges) = read_mtx(&dir.join("karate.mtx"))?;
        let text = read_text(&dir.join("karate_networkx_club.tsv"))?;
        let mut labels = vec![0usize; n];
        for line in text.lines().skip(1) {
            let mut f = line.split('\t');
            let node: usize = f.next().and_then(|s| s.parse().ok()).ok_or_else(|| DataError(format!("karate: bad line {line:?}")))?;
            labels[node] = usize::from(f.next() == Some("Officer"));
        }
        let test = (1..n - 1).collect();
        Ok(Self { nodes: n, edges, num_features: n, features: (0..n).map(|i| (i, i)).collect(), labels, num_classes: 2, train: vec![0, n - 1], val: Vec::new(), test })
    }
}
