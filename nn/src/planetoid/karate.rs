//! [`Planetoid::karate`]: Zachary's karate club as shipped in `data/karate`.

use super::parse::{labels_of, tsv_header, tsv_node, undirected_edges};
use super::{DataError, Planetoid};
use crate::mtx::read_mtx;
use crate::mtx::Lines;
use std::path::Path;

impl Planetoid {
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
