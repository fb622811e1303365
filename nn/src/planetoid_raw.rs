//! [`Planetoid::new`]: Cora, CiteSeer and PubMed from the raw files PyG downloads
//! (`{root}/{Name}/raw/ind.{name}.{x,tx,allx,y,ty,ally,graph,test.index}`, kimiyoung/planetoid's
//! `data/` folder), found or fetched through the chain of [`crate::source`] and assembled as PyG's
//! `read_planetoid_data` does:
//!
//! - nodes: the rows of `allx`, then the test nodes, which `test.index` numbers from there on
//!   (`tx` and `ty` row `k` belong to node `test.index[k]`); a node inside that range that no
//!   line of `test.index` names (CiteSeer's 15 isolated nodes) gets an empty feature row and an
//!   all-zero label row, so its label is 0 and it is listed in [`Planetoid::unlabeled`];
//! - features: `allx` and `tx` with their values (PubMed's are TF-IDF), duplicate entries of a
//!   row summed and zeros dropped, as scipy's `todense` would leave them;
//!   [`Planetoid::features_csr`] row-normalises them when asked;
//! - labels: the argmax of each one-hot row (the first maximum, as torch's);
//! - split ("public"): train = the rows of `y` (`0..y.rows`), val = the next 500, test = the nodes
//!   of `test.index`, ascending;
//! - edges: the `graph` dict of lists, self loops removed, made symmetric and deduplicated, each
//!   undirected edge once as `(u, v)` with `u > v`, sorted.
//!
//! The files are untrusted: the pickles are read by [`crate::pickle`], and every size here is
//! bounded by what they hold (the node count by `allx` and `tx` rows: `test.index` may leave at
//! most as many holes as it names test nodes), every node number checked against the node count.

use crate::error::DataError;
use crate::mtx::Lines;
use crate::pickle::{read_pickle, Array, CsrMatrix};
use crate::planetoid::Planetoid;
use crate::source::{DataSources, Wanted};
use std::path::Path;

/// The validation nodes of the public split: the 500 after the training nodes.
pub const VAL_NODES: usize = 500;

/// The raw files of a Planetoid dataset, in PyG's order.
pub const RAW_FILES: [&str; 8] = ["x", "tx", "allx", "y", "ty", "ally", "graph", "test.index"];

/// PyG's Planetoid datasets: `(name, file prefix)`. Names are matched case-insensitively, as PyG
/// does; the directory is the name as written here.
pub const PLANETOID_NAMES: [(&str, &str); 3] = [("Cora", "cora"), ("CiteSeer", "citeseer"), ("PubMed", "pubmed")];

/// The canonical name and file prefix of a Planetoid dataset, any case.
pub(crate) fn planetoid_name(name: &str) -> Result<(&'static str, &'static str), DataError> {
    PLANETOID_NAMES.iter().copied().find(|(n, _)| n.eq_ignore_ascii_case(name)).ok_or_else(|| DataError::Invalid {
        what: format!("{name:?} is not a Planetoid dataset; PyG's names are Cora, CiteSeer and PubMed (any case)"),
    })
}

/// What a node's row comes from: a row of `allx`/`ally`, a row of `tx`/`ty`, or nothing.
#[derive(Clone, Copy)]
enum Row {
    All(usize),
    Test(usize),
    Hole,
}

/// `Ok` when a count of the file `path` agrees with that of the file `of`, else an error naming both.
fn agree(path: &Path, what: &str, got: usize, want: usize, of: &str) -> Result<(), DataError> {
    if got == want {
        return Ok(());
    }
    Err(DataError::content(path, None, format_args!("{got} {what}, but {of} has {want}")))
}

/// A 2-D label array's rows and columns.
fn label_shape(path: &Path, a: &Array) -> Result<(usize, usize), DataError> {
    match a.shape.as_slice() {
        [r, c] => Ok((*r, *c)),
        s => Err(DataError::content(path, None, format_args!("labels of shape {s:?}, not one one-hot row per node"))),
    }
}

/// The argmax of a label row (the first maximum), `None` for a row without a positive entry;
/// `Err` with the value of a row holding a NaN or an infinity.
fn argmax(row: &[f64]) -> Result<Option<usize>, f64> {
    if let Some(&v) = row.iter().find(|v| !v.is_finite()) {
        return Err(v);
    }
    let mut best: Option<(usize, f64)> = None;
    for (c, &v) in row.iter().enumerate() {
        if v > best.map_or(0.0, |b| b.1) {
            best = Some((c, v));
        }
    }
    Ok(best.map(|b| b.0))
}

/// The node numbers of `test.index`: one non-negative integer a line, none twice.
fn read_test_index(path: &Path) -> Result<Vec<usize>, DataError> {
    let mut lines = Lines::open(path)?;
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    while lines.advance()? {
        let token = lines.line().trim();
        if token.is_empty() {
            continue;
        }
        let node: usize =
            token.parse().map_err(|_| lines.error(format_args!("{token:?} is not a non-negative integer")))?;
        if !seen.insert(node) {
            return Err(lines.error(format_args!("node {node} is listed twice")));
        }
        out.push(node);
    }
    Ok(out)
}

impl Planetoid {
    /// PyG's `Planetoid(root, name)`: Cora, CiteSeer or PubMed (`name` in any case) from the raw
    /// files under `{root}/{Name}/raw`, or, when `root` is `None` or lacks them, from the next
    /// source of [`DataSources::new`]: `$SPARSEGRAD_DATA`, the user's cache, this repository's
    /// `../shared/data`, then a download (feature `download`) into `root` (or the first of
    /// `$SPARSEGRAD_DATA` and the cache). The result is assembled as PyG's (see the module).
    ///
    /// ```no_run
    /// let g = sparsegrad_nn::Planetoid::new(None, "CiteSeer")?;
    /// assert_eq!((g.nodes, g.num_features, g.num_classes), (3327, 3703, 6));
    /// # Ok::<(), sparsegrad_nn::DataError>(())
    /// ```
    pub fn new(root: Option<&Path>, name: &str) -> Result<Self, DataError> {
        Self::from_sources(&DataSources::new(root.map(Path::to_path_buf)), name)
    }

    /// [`Planetoid::new`] with the sources given (see [`DataSources`]).
    pub fn from_sources(sources: &DataSources, name: &str) -> Result<Self, DataError> {
        let (name, prefix) = planetoid_name(name)?;
        let dir = sources.locate(&Wanted::Planetoid { name, prefix })?;
        Self::read_raw(&dir, name)
    }

    /// Reads the eight raw files `ind.{name}.*` of the directory `dir` (no lookup, no download).
    pub fn read_raw(dir: impl AsRef<Path>, name: &str) -> Result<Self, DataError> {
        let (_, prefix) = planetoid_name(name)?;
        let path = |ext: &str| dir.as_ref().join(format!("ind.{prefix}.{ext}"));
        let csr = |ext: &str| read_pickle(&path(ext))?.csr_matrix();
        let labels = |ext: &str| {
            let a = read_pickle(&path(ext))?.array()?;
            let shape = label_shape(&path(ext), &a)?;
            Ok::<_, DataError>((a, shape))
        };
        let (x, tx, allx) = (csr("x")?, csr("tx")?, csr("allx")?);
        let ((_, y_shape), (ty, ty_shape), (ally, ally_shape)) = (labels("y")?, labels("ty")?, labels("ally")?);
        let graph = read_pickle(&path("graph"))?.adjacency()?;
        let test = read_test_index(&path("test.index"))?;

        let features = allx.cols;
        agree(&path("x"), "columns", x.cols, features, "allx")?;
        agree(&path("tx"), "columns", tx.cols, features, "allx")?;
        let classes = ally_shape.1;
        agree(&path("y"), "classes", y_shape.1, classes, "ally")?;
        agree(&path("ty"), "classes", ty_shape.1, classes, "ally")?;
        agree(&path("y"), "rows", y_shape.0, x.rows, "x")?;
        agree(&path("ty"), "rows", ty_shape.0, tx.rows, "tx")?;
        agree(&path("ally"), "rows", ally_shape.0, allx.rows, "allx")?;
        agree(&path("test.index"), "nodes", test.len(), tx.rows, "tx")?;
        if x.rows > allx.rows {
            let what = format_args!("{} training rows, more than the {} rows of allx", x.rows, allx.rows);
            return Err(DataError::content(&path("x"), None, what));
        }

        // The nodes: allx's rows, then the range test.index spans from there, holes included.
        let first = allx.rows;
        let nodes = match (test.iter().min(), test.iter().max()) {
            (Some(&lo), Some(&hi)) => {
                if lo != first {
                    let what =
                        format_args!("the smallest test node is {lo}; the test nodes follow the {first} rows of allx");
                    return Err(DataError::content(&path("test.index"), None, what));
                }
                let span = hi - lo + 1; // hi >= lo
                if span - test.len() > test.len() {
                    let what = format_args!("{} test nodes spread over {span}: more holes than test nodes", test.len());
                    return Err(DataError::content(&path("test.index"), None, what));
                }
                first + span
            }
            _ => first,
        };
        if x.rows + VAL_NODES > nodes {
            let what = format_args!("{} training and {VAL_NODES} validation nodes, but only {nodes} nodes", x.rows);
            return Err(DataError::content(&path("y"), None, what));
        }
        let mut rows: Vec<Row> =
            (0..first).map(Row::All).chain(std::iter::repeat_n(Row::Hole, nodes - first)).collect();
        for (k, &node) in test.iter().enumerate() {
            rows[node] = Row::Test(k); // node in first..nodes: checked above
        }

        let (mut entries, mut values) = (Vec::new(), Vec::new());
        let (mut labels, mut unlabeled) = (Vec::with_capacity(nodes), Vec::new());
        let mut row_buf: Vec<(usize, f64)> = Vec::new();
        for (node, row) in rows.iter().enumerate() {
            // Rows of the label arrays: `classes` values each, `rows * classes` in all (checked
            // by the pickle reader against the array's bytes).
            let (matrix, label_row, labels_file) = match *row {
                Row::All(r) => (Some((&allx, r)), ally.data.get(r * classes..(r + 1) * classes), "ally"),
                Row::Test(k) => (Some((&tx, k)), ty.data.get(k * classes..(k + 1) * classes), "ty"),
                Row::Hole => (None, None, "ty"),
            };
            if let Some((m, r)) = matrix {
                feature_row(m, r, &mut row_buf);
                for &(c, v) in &row_buf {
                    entries.push((node, c));
                    values.push(v);
                }
            }
            match argmax(label_row.unwrap_or_default()) {
                Ok(Some(c)) => labels.push(c),
                Ok(None) => {
                    labels.push(0);
                    unlabeled.push(node);
                }
                Err(v) => {
                    let what = format_args!("the label row of node {node} holds {v}");
                    return Err(DataError::content(&path(labels_file), None, what));
                }
            }
        }

        let train: Vec<usize> = (0..x.rows).collect();
        let val: Vec<usize> = (x.rows..x.rows + VAL_NODES).collect();
        let mut test_nodes = test;
        test_nodes.sort_unstable();
        for (split, of) in [(&train, "training"), (&val, "validation"), (&test_nodes, "test")] {
            if let Some(&u) = split.iter().find(|u| unlabeled.binary_search(u).is_ok()) {
                let what = format_args!("{of} node {u} has an all-zero label row");
                return Err(DataError::content(&path(if of == "test" { "ty" } else { "ally" }), None, what));
            }
        }

        let mut edges = Vec::new();
        for (u, neighbours) in &graph {
            for &v in std::iter::once(u).chain(neighbours) {
                if v >= nodes {
                    let what = format_args!("node {v} (key {u}) is outside the {nodes} nodes");
                    return Err(DataError::content(&path("graph"), None, what));
                }
            }
            edges.extend(neighbours.iter().filter(|&&v| v != *u).map(|&v| (v.max(*u), v.min(*u))));
        }
        edges.sort_unstable();
        edges.dedup();

        let labeled = labels.iter().enumerate().filter(|(u, _)| unlabeled.binary_search(u).is_err());
        let num_classes = labeled.map(|(_, &c)| c + 1).max().unwrap_or(0);
        Ok(Self {
            nodes,
            edges,
            num_features: features,
            features: entries,
            feature_values: values,
            labels,
            unlabeled,
            num_classes,
            train,
            val,
            test: test_nodes,
        })
    }
}

/// Row `r` of `m` into `out`: its entries sorted by column, a column stored twice summed, zeros
/// dropped (the entries scipy's `todense` leaves non-zero).
fn feature_row(m: &CsrMatrix, r: usize, out: &mut Vec<(usize, f64)>) {
    out.clear();
    let (a, b) = (m.indptr.get(r).copied().unwrap_or(0), m.indptr.get(r + 1).copied().unwrap_or(0));
    let cols = m.indices.get(a..b).unwrap_or_default();
    let vals = m.data.get(a..b).unwrap_or_default();
    out.extend(cols.iter().copied().zip(vals.iter().copied()));
    out.sort_by_key(|e| e.0);
    out.dedup_by(|next, kept| {
        let same = next.0 == kept.0;
        if same {
            kept.1 += next.1;
        }
        same
    });
    out.retain(|e| e.1 != 0.0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A copy of the checkout's raw Cora files in a fresh directory (removed by the test).
    fn cora_copy(test: &str) -> PathBuf {
        let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/planetoid/Cora/raw");
        assert!(from.is_dir(), "{} holds the raw files (the checkout's ../shared/data)", from.display());
        let dir = std::env::temp_dir().join(format!("sparsegrad-planetoid-raw-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for f in std::fs::read_dir(&from).unwrap() {
            let f = f.unwrap();
            std::fs::copy(f.path(), dir.join(f.file_name())).unwrap();
        }
        dir
    }

    #[test]
    fn reads_cora_as_pyg_does() {
        let dir = cora_copy("cora");
        let g = Planetoid::read_raw(&dir, "CORA").unwrap();
        assert_eq!(
            (g.nodes, g.edges.len(), g.num_features, g.features.len(), g.num_classes),
            (2708, 5278, 1433, 49216, 7)
        );
        assert_eq!(
            (g.train, g.val.len(), g.val[0], g.test.len(), g.test[0]),
            ((0..140).collect(), 500, 140, 1000, 1708)
        );
        assert!(g.unlabeled.is_empty());
        // Node 2692 is the first line of test.index: its features are tx's first row.
        let tx = crate::pickle::read_pickle(&dir.join("ind.cora.tx")).unwrap().csr_matrix().unwrap();
        let first: Vec<usize> = g.features.iter().filter(|e| e.0 == 2692).map(|e| e.1).collect();
        assert_eq!(first, tx.indices[tx.indptr[0]..tx.indptr[1]]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn files_that_disagree_are_named() {
        let dir = cora_copy("disagree");
        let error = |dir: &Path| Planetoid::read_raw(dir, "cora").unwrap_err().to_string();
        let swap = |a: &str, b: &str| std::fs::copy(dir.join(a), dir.join(b)).unwrap();
        let index = std::fs::read_to_string(dir.join("ind.cora.test.index")).unwrap();
        let cases: [(&dyn Fn(), &str); 5] = [
            (
                &|| std::fs::write(dir.join("ind.cora.test.index"), index.replace("2692\n", "2692\n2692\n")).unwrap(),
                "ind.cora.test.index:2: node 2692 is listed twice",
            ),
            (
                &|| std::fs::write(dir.join("ind.cora.test.index"), index.replace("2692\n", "-3\n")).unwrap(),
                "ind.cora.test.index:1: \"-3\" is not a non-negative integer",
            ),
            (
                &|| std::fs::write(dir.join("ind.cora.test.index"), index.replace("1708\n", "1707\n")).unwrap(),
                "the smallest test node is 1707; the test nodes follow the 1708 rows of allx",
            ),
            (
                &|| {
                    swap("ind.cora.y", "ind.cora.ty");
                },
                "ind.cora.ty: 140 rows, but tx has 1000",
            ),
            (
                &|| {
                    swap("ind.cora.x", "ind.cora.allx");
                },
                "ind.cora.ally: 1708 rows, but allx has 140",
            ),
        ];
        let originals: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|f| f.unwrap().path())
            .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
            .collect();
        for (damage, want) in cases {
            damage();
            let e = error(&dir);
            assert!(e.contains(want), "expected {want:?}, got {e}");
            for (p, bytes) in &originals {
                std::fs::write(p, bytes).unwrap();
            }
        }
        assert!(Planetoid::read_raw(&dir, "cora").is_ok());
        let e = Planetoid::read_raw(&dir, "citeseer").unwrap_err().to_string();
        assert!(e.contains("ind.citeseer.x: No such file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
