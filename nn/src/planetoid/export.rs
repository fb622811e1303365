//! [`Planetoid::load`]: a Planetoid export, Matrix Market adjacency and features and a TSV of
//! labels and the split.

use super::parse::{labels_of, tsv_header, tsv_node, undirected_edges};
use super::{DataError, Planetoid};
use crate::mtx::read_mtx;
use crate::mtx::Lines;
use std::path::Path;

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
}
