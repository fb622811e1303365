//! Tests of the Planetoid loaders on the shipped exports and on hand-written files, valid and
//! inconsistent, and of the feature normalisation.

use super::*;
use burn::tensor::{DType, Int, Tensor, TensorData};
use sparsegrad_backend::SparseTensor;
use std::path::{Path, PathBuf};

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
    assert_eq!((g.nodes, g.edges.len(), g.num_features, g.features.len(), g.num_classes), (2708, 5278, 1433, 49216, 7));
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
