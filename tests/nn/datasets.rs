//! Datasets from PyG's raw files and the chain of sources: `Planetoid::new` equals the plain-text
//! exports of `../shared/data/planetoid/export` (edges, features, labels, split) for Cora and
//! CiteSeer; the chain takes the first place that holds the files, reports every place when none
//! does, and downloads (from a server on this machine: the tests need no network) with the
//! SHA-256 checked and the file written only once complete; with no network it fails in
//! seconds.

use sparsegrad::nn::{DataError, DataSources, Download, Planetoid};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The checkout's shared data (never copied into the repository).
fn shared(rel: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data").join(rel);
    assert!(p.exists(), "{} is the checkout's ../shared/data", p.display());
    p
}

/// A fresh directory for one test.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sparsegrad-datasets-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Sources with nothing in them: no root, environment, cache, checkout or download.
fn nowhere() -> DataSources {
    DataSources { root: None, env: None, cache: None, checkout: None, download: None }
}

fn sorted<T: Ord + Clone>(v: &[T]) -> Vec<T> {
    let mut v = v.to_vec();
    v.sort();
    v
}

/// Features as sorted `((node, feature), value)`.
fn features(g: &Planetoid) -> Vec<((usize, usize), u64)> {
    sorted(&g.features.iter().copied().zip(g.feature_values.iter().map(|v| v.to_bits())).collect::<Vec<_>>())
}

#[test]
fn planetoid_raw_files_match_the_exports() {
    // (name, nodes, undirected edges, features, stored features, classes, train, isolated nodes)
    let cases = [("Cora", 2708, 5278, 1433, 49216, 7, 140, 0), ("CiteSeer", 3327, 4552, 3703, 105165, 6, 120, 15)];
    for (name, nodes, edges, num_features, stored, classes, train, isolated) in cases {
        let raw = Planetoid::new(None, name).unwrap_or_else(|e| panic!("{e}"));
        let lower = name.to_lowercase();
        let export = Planetoid::load(shared("planetoid/export").join(&lower), &lower).unwrap();
        assert_eq!(
            (raw.nodes, raw.edges.len(), raw.num_features, raw.features.len(), raw.num_classes),
            (nodes, edges, num_features, stored, classes),
            "{name}"
        );
        assert!(raw.edges.windows(2).all(|w| w[0] < w[1]) && raw.edges.iter().all(|&(u, v)| u > v), "{name}");
        assert_eq!(raw.edges, sorted(&export.edges), "{name}: edges");
        assert_eq!(features(&raw), features(&export), "{name}: features");
        assert_eq!(raw.labels, export.labels, "{name}: labels");
        assert_eq!((raw.train.len(), raw.val.len(), raw.test.len()), (train, 500, 1000), "{name}");
        assert_eq!(raw.train, (0..train).collect::<Vec<_>>(), "{name}");
        assert_eq!((&raw.train, &raw.val, &raw.test), (&export.train, &export.val, &sorted(&export.test)), "{name}");
        // The isolated test-range nodes of CiteSeer: no features, label 0, in no split.
        assert_eq!(raw.unlabeled.len(), isolated, "{name}");
        for &u in &raw.unlabeled {
            assert!(raw.features.iter().all(|&(n, _)| n != u) && raw.labels[u] == 0, "{name}: node {u}");
            assert!(!raw.test.contains(&u) && u >= raw.val[499], "{name}: node {u}");
        }
    }
    // PyG's names in any case.
    assert_eq!(Planetoid::new(None, "citeseer").unwrap().nodes, 3327);
    let e = Planetoid::new(None, "Reddit").unwrap_err().to_string();
    assert!(e.contains("\"Reddit\" is not a Planetoid dataset; PyG's names are Cora, CiteSeer and PubMed"), "{e}");
}

#[test]
fn the_first_place_holding_the_files_wins() {
    let dir = temp_dir("chain");
    let raw = shared("planetoid/Cora/raw");
    let mut sources = DataSources { checkout: Some(shared("")), ..nowhere() };
    sources.root = Some(dir.join("root"));
    sources.env = Some(dir.join("env"));
    // Only the checkout has Cora.
    assert_eq!(sparsegrad::nn::Planetoid::from_sources(&sources, "Cora").unwrap().nodes, 2708);
    // The environment's directory, in the data-directory layout, comes before it: a copy there
    // without its graph is skipped, with it is taken (and read: a damaged graph file shows).
    let env_raw = dir.join("env/planetoid/Cora/raw");
    std::fs::create_dir_all(&env_raw).unwrap();
    for f in std::fs::read_dir(&raw).unwrap() {
        let f = f.unwrap();
        if !f.file_name().to_string_lossy().ends_with("graph") {
            std::fs::copy(f.path(), env_raw.join(f.file_name())).unwrap();
        }
    }
    assert_eq!(Planetoid::from_sources(&sources, "Cora").unwrap().nodes, 2708);
    std::fs::write(env_raw.join("ind.cora.graph"), b"\x80\x02N").unwrap();
    let e = Planetoid::from_sources(&sources, "Cora").unwrap_err().to_string();
    assert!(e.contains("env/planetoid/Cora/raw/ind.cora.graph: byte 3: the input ends before STOP"), "{e}");
    // The root (PyG's layout, `root/Cora/raw`) comes first of all.
    let root_raw = dir.join("root/Cora/raw");
    std::fs::create_dir_all(dir.join("root/Cora")).unwrap();
    std::fs::rename(&env_raw, &root_raw).unwrap();
    let e = Planetoid::from_sources(&sources, "Cora").unwrap_err().to_string();
    assert!(e.contains("root/Cora/raw/ind.cora.graph"), "{e}");
    std::fs::copy(raw.join("ind.cora.graph"), root_raw.join("ind.cora.graph")).unwrap();
    assert_eq!(Planetoid::from_sources(&sources, "Cora").unwrap().test.len(), 1000);
    // SuiteSparse: the flat layout of the checkout, by name.
    let m = sparsegrad::io::suitesparse_from(&sources, "HB/west0067").unwrap();
    assert_eq!(m, shared("suitesparse/west0067.mtx"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn nowhere_lists_every_place_and_the_fix() {
    let dir = temp_dir("nowhere");
    let sources = DataSources { root: Some(dir.clone()), cache: Some(dir.join("cache")), ..nowhere() };
    let e = Planetoid::from_sources(&sources, "pubmed").unwrap_err();
    let DataError::NotFound { dataset, tried, fix } = &e else { panic!("{e:?}") };
    assert_eq!((dataset.as_str(), tried.len()), ("Planetoid PubMed", 5), "{e}");
    let text = e.to_string();
    for line in [
        "Planetoid PubMed was found nowhere; tried, in order:",
        &format!("\n  1. the root argument ({}/PubMed/raw): no such directory", dir.display()),
        "\n  2. $SPARSEGRAD_DATA: not set",
        &format!("\n  3. the cache ({}/cache/planetoid/PubMed/raw): no such directory", dir.display()),
        "\n  4. the checkout's shared data: not in a checkout",
        "\n  5. download: turned off",
        &format!("\nfix: put ind.pubmed.{{x,tx,allx,y,ty,ally,graph,test.index}} (from https://github.com/kimiyoung/planetoid/raw/master/data) into {}/cache/planetoid/PubMed/raw", dir.display()),
    ] {
        assert!(text.contains(line), "{line:?} in\n{text}");
    }
    assert!(fix.starts_with("put ind.pubmed."), "{fix}");
    // A directory with some of the files names the missing ones.
    std::fs::create_dir_all(dir.join("PubMed/raw")).unwrap();
    std::fs::write(dir.join("PubMed/raw/ind.pubmed.x"), b"").unwrap();
    let text = Planetoid::from_sources(&sources, "PubMed").unwrap_err().to_string();
    assert!(text.contains("ind.pubmed.tx, ind.pubmed.allx, ind.pubmed.y, ind.pubmed.ty, ind.pubmed.ally, ind.pubmed.graph, ind.pubmed.test.index missing"), "{text}");
    let text = sparsegrad::io::suitesparse_from(&sources, "HB/nosuch").unwrap_err().to_string();
    assert!(
        text.contains(&format!("1. the root argument ({}/HB/nosuch.mtx): no such file (nor .mtx.gz)", dir.display())),
        "{text}"
    );
    assert!(text.contains("fix: unpack nosuch.mtx from https://sparse.tamu.edu/MM/HB/nosuch.tar.gz into"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A download that cannot connect (a closed port on this machine; with no network at all, the
/// name lookup fails the same way) fails in seconds, naming the address.
#[test]
fn no_network_fails_fast_and_cleanly() {
    let dir = temp_dir("offline");
    let download = Download {
        planetoid_url: "http://127.0.0.1:9/data".into(),
        suitesparse_url: "http://nonexistent.invalid/MM".into(),
        connect_timeout: Duration::from_secs(5),
        ..Download::default()
    };
    let sources = DataSources { cache: Some(dir.clone()), download: Some(download), ..nowhere() };
    let start = Instant::now();
    let e = Planetoid::from_sources(&sources, "Cora").unwrap_err().to_string();
    assert!(e.contains("5. download (http://127.0.0.1:9/data/ind.cora.x): "), "{e}");
    assert!(e.contains("fix: put ind.cora.") && e.contains("or retry with a working connection"), "{e}");
    let e = sparsegrad::io::suitesparse_from(&sources, "HB/bcsstk13").unwrap_err().to_string();
    assert!(e.contains(". download (http://nonexistent.invalid/MM/HB/bcsstk13.tar.gz): "), "{e}");
    assert!(start.elapsed() < Duration::from_secs(20), "{:?}", start.elapsed());
    // Nothing half-written is left behind.
    let left: Vec<_> = walk(&dir).into_iter().filter(|p| p.is_file()).collect();
    assert!(left.is_empty(), "{left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        out.push(e.path());
        if e.path().is_dir() {
            out.extend(walk(&e.path()));
        }
    }
    out
}

/// A one-thread HTTP/1.1 server on this machine answering `GET /path` from `files` (404 else),
/// every connection closed after one answer; its address.
fn serve(files: Vec<(String, Vec<u8>)>) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = Vec::new();
            let mut byte = [0u8; 1];
            while !request.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                request.push(byte[0]);
            }
            let text = String::from_utf8_lossy(&request);
            let path = text.split_whitespace().nth(1).unwrap_or("").to_owned();
            let answer = match files.iter().find(|(p, _)| *p == path) {
                Some((_, body)) => [
                    format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len())
                        .into_bytes(),
                    body.clone(),
                ]
                .concat(),
                None => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
            };
            let _ = stream.write_all(&answer);
        }
    });
    format!("http://{addr}")
}

#[test]
fn downloads_are_checked_and_written_atomically() {
    let dir = temp_dir("download");
    let raw = shared("planetoid/Cora/raw");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&raw)
        .unwrap()
        .map(|f| f.unwrap().path())
        .map(|p| (format!("/data/{}", p.file_name().unwrap().to_string_lossy()), std::fs::read(&p).unwrap()))
        .collect();
    // CiteSeer's x is served damaged: one byte changed.
    let mut x = std::fs::read(shared("planetoid/CiteSeer/raw/ind.citeseer.x")).unwrap();
    x[100] ^= 1;
    files.push(("/data/ind.citeseer.x".into(), x));
    // A SuiteSparse archive as the collection packs it: `west0067/west0067.mtx` (and a README).
    let mtx = std::fs::read(shared("suitesparse/west0067.mtx")).unwrap();
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
    for (name, body) in [("west0067/README", &b"readme"[..]), ("west0067/west0067.mtx", &mtx[..])] {
        let mut header = tar::Header::new_gnu();
        header.set_size(body.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, name, body).unwrap();
    }
    files.push(("/MM/HB/west0067.tar.gz".into(), tar.into_inner().unwrap().finish().unwrap()));
    let base = serve(files);
    let download = Download {
        planetoid_url: format!("{base}/data"),
        suitesparse_url: format!("{base}/MM"),
        progress: false,
        ..Download::default()
    };
    let sources = DataSources {
        root: Some(dir.join("root")),
        cache: Some(dir.join("cache")),
        download: Some(download),
        ..nowhere()
    };

    // Into the root, in PyG's layout, then read as the checkout's copy reads.
    let g = Planetoid::from_sources(&sources, "Cora").unwrap_or_else(|e| panic!("{e}"));
    let theirs = Planetoid::new(None, "Cora").unwrap();
    assert_eq!((g.edges, g.features, g.labels), (theirs.edges, theirs.features, theirs.labels));
    for f in std::fs::read_dir(&raw).unwrap() {
        let f = f.unwrap();
        assert_eq!(
            std::fs::read(dir.join("root/Cora/raw").join(f.file_name())).unwrap(),
            std::fs::read(f.path()).unwrap()
        );
    }
    // A damaged file fails its pinned sum, and is not left behind (nor its temporary file).
    let e = Planetoid::from_sources(&sources, "CiteSeer").unwrap_err().to_string();
    assert!(
        e.contains("/data/ind.citeseer.x): ")
            && e.contains(
                "expected d20de19150741e555de0ed037195630fc194114ebc7fd72ced62810148aa22f6: not the published file"
            ),
        "{e}"
    );
    let left: Vec<String> = std::fs::read_dir(dir.join("root/CiteSeer/raw"))
        .unwrap()
        .map(|f| f.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // A file the server does not have: its status.
    let e = Planetoid::from_sources(&sources, "PubMed").unwrap_err().to_string();
    assert!(e.contains("/data/ind.pubmed.x): http status: 404"), "{e}");

    // SuiteSparse: the archive unpacked into the cache (no root for it), the archive removed.
    let sources = DataSources { root: None, ..sources };
    let path = sparsegrad::io::suitesparse_from(&sources, "HB/west0067").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(path, dir.join("cache/suitesparse/HB/west0067.mtx"));
    assert_eq!(std::fs::read(&path).unwrap(), mtx);
    assert_eq!(std::fs::read_dir(dir.join("cache/suitesparse/HB")).unwrap().count(), 1, "the archive is gone");
    // Found in the cache the next time, with no server needed.
    let offline = DataSources { download: None, ..sources };
    assert_eq!(sparsegrad::io::suitesparse_from(&offline, "HB/west0067").unwrap(), path);
    std::fs::remove_dir_all(&dir).unwrap();
}
