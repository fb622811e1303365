//! Finding 8, continued: the Planetoid raw files are Python pickles, read by our own reader
//! (`sparsegrad::nn::pickle`). Probes of the sizes a hostile file can announce (run under
//! `ulimit -v`: an allocation the file does not back is refused, never attempted), and a fuzz of
//! the reader and of `Planetoid::read_raw` on mutations of the real files and on random opcodes:
//! every input gives `Ok` or an `Err` naming the file, never a panic, an abort or unbounded
//! memory. `SPARSEGRAD_FUZZ_CASES` sets the number of cases (10^4 by default; CI's valgrind run
//! sets 2000), `SPARSEGRAD_FUZZ_SEED` the first seed.

use super::*;
use sparsegrad::nn::pickle::Pickle;
use std::path::{Path, PathBuf};

/// The checkout's raw Planetoid files (never copied into the repository).
fn raw_dir(dataset: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/planetoid").join(dataset).join("raw");
    assert!(dir.is_dir(), "{} holds the raw files (the checkout's ../shared/data)", dir.display());
    dir
}

/// `PROTO 2`, `body`, `STOP`.
fn pickle(body: &[u8]) -> Vec<u8> {
    [&[0x80, 2][..], body, b"."].concat()
}

/// A numpy array pickle whose state announces `shape` (BININT dimensions) of `descr` over `data`.
fn array(descr: &[u8], shape: &[i32], data: &[u8]) -> Vec<u8> {
    let mut b = b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85U\x01b\x87R(K\x01(".to_vec();
    for d in shape {
        b.push(b'J');
        b.extend(d.to_le_bytes());
    }
    b.extend(b"tcnumpy\ndtype\nU\x02");
    b.extend(descr);
    b.extend(b"K\x00K\x01\x87R(K\x03U\x01<NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb\x89T");
    b.extend((data.len() as i32).to_le_bytes());
    b.extend(data);
    b.extend(b"tb");
    pickle(&b)
}

probe!(
    /// Pickles announcing what their bytes do not hold: a 2 GB string in 8 bytes, a
    /// 10^6 x 10^6 array over 8 bytes, a CSR matrix of 2^31 - 1 rows, memo keys near 2^32, a
    /// `test.index` spreading 1000 test nodes over 10^12: errors naming the file and offset.
    alloc_hostile_pickles, limit = LIMIT_KB => {
    let at = Path::new("h.pkl");
    let e = Pickle::parse(pickle(b"T\xff\xff\xff\x7f"), at).unwrap_err().to_string();
    assert!(e.contains("h.pkl: byte 2: opcode BINSTRING (0x54): needs 2147483647 bytes"), "{e}");
    let e = Pickle::parse(array(b"f8", &[1_000_000, 1_000_000], &[0; 8]), at).unwrap_err().to_string();
    assert!(e.contains("shape [1000000, 1000000] of 8-byte elements needs 8000000000000 bytes, the data holds 8"), "{e}");
    // A CSR matrix of 2^31 - 1 rows whose pointers hold one entry.
    let mut csr = b"cscipy.sparse.csr\ncsr_matrix\n)\x81}(U\x06formatU\x03csrU\x06_shapeJ\xff\xff\xff\x7fJ\x01\x00\x00\x00\x86U\x06indptr".to_vec();
    let ptr = array(b"i4", &[1], &[0; 4]);
    csr.extend(&ptr[2..ptr.len() - 1]);
    for key in [&b"indices"[..], b"data"] {
        csr.extend([b'U', key.len() as u8]);
        csr.extend(key);
        let a = array(if key == b"data" { b"f4" } else { b"i4" }, &[0], &[]);
        csr.extend(&a[2..a.len() - 1]);
    }
    csr.extend(b"ub");
    let e = Pickle::parse(pickle(&csr), at).unwrap().csr_matrix().unwrap_err().to_string();
    assert!(e.contains("indptr has 1 entries for 2147483647 rows"), "{e}");
    // A million memo keys near 2^32: a map of what the file sets, not a table of 2^32 slots.
    let mut memo = b"N".to_vec();
    for k in 0..1_000_000u32 {
        memo.push(b'r');
        memo.extend((u32::MAX - k).to_le_bytes());
    }
    let p = Pickle::parse(pickle(&memo), at).unwrap();
    assert!(p.array().is_err() && p.csr_matrix().is_err(), "None is no data");
    // Cora with a test index whose last node is 10^12: refused before anything is sized by it.
    let dir = temp_dir("pickles");
    for f in std::fs::read_dir(raw_dir("Cora")).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), dir.join(f.file_name())).unwrap();
    }
    let index = std::fs::read_to_string(dir.join("ind.cora.test.index")).unwrap().replace("2692\n", "1000000000000\n");
    std::fs::write(dir.join("ind.cora.test.index"), index).unwrap();
    let e = Planetoid::read_raw(&dir, "cora").unwrap_err().to_string();
    assert!(e.contains("ind.cora.test.index: 1000 test nodes spread over 999999998293: more holes than test nodes"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
});

/// The opcodes a random pickle is drawn from: every one the reader knows and a few it refuses.
const OPCODES: &[u8] = b"\x80c)t\x85\x86\x87]ae}u(N\x88\x89JKMUTqrhjR\x81b.IGX";

/// One fuzz input: a mutation of a real file, or random opcodes with random arguments.
fn fuzz_input(rng: &mut Rng, files: &[Vec<u8>]) -> Vec<u8> {
    if rng.below(10) == 0 {
        let mut b = vec![0x80, 2];
        for _ in 0..rng.below(64) {
            b.push(OPCODES[rng.below(OPCODES.len())]);
            for _ in 0..rng.below(5) {
                b.push(if rng.below(2) == 0 { rng.below(4) as u8 } else { rng.next() as u8 });
            }
        }
        return b;
    }
    let mut b = files[rng.below(files.len())].clone();
    for _ in 0..1 + rng.below(6) {
        let at = rng.below(b.len().max(1));
        match rng.below(7) {
            0 => {
                let bit = 1 << rng.below(8);
                if let Some(byte) = b.get_mut(at) {
                    *byte ^= bit;
                }
            }
            1 => {
                let value = [0, 0xff, 0x7f, 0x80, b'(', b'.', b'R'][rng.below(7)];
                if let Some(byte) = b.get_mut(at) {
                    *byte = value;
                }
            }
            2 => b.truncate(at),
            3 => {
                let len = rng.below(64).min(b.len() - at);
                b.drain(at..at + len);
            }
            4 => {
                let len = rng.below(64).min(b.len() - at);
                let copy = b[at..at + len].to_vec();
                let to = rng.below(b.len() + 1);
                b.splice(to..to, copy);
            }
            5 => {
                // A length or count field: four bytes of 0xff or 0x7f.
                for k in at..(at + 4).min(b.len()) {
                    b[k] = if k + 1 == at + 4 { 0x7f } else { 0xff };
                }
            }
            _ => b.insert(at.min(b.len()), rng.next() as u8),
        }
        if b.is_empty() {
            break;
        }
    }
    b
}

probe!(
    /// The fuzz (in a child under `ulimit -v` in the plain suite; in-process under valgrind).
    pickle_fuzz, limit = LIMIT_KB => {
    let cases: u64 = std::env::var("SPARSEGRAD_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let first: u64 = std::env::var("SPARSEGRAD_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    let cora = raw_dir("Cora");
    let names = ["ind.cora.x", "ind.cora.y", "ind.cora.ty", "ind.cora.graph", "ind.cora.tx"];
    let mut files: Vec<Vec<u8>> = names.iter().map(|n| std::fs::read(cora.join(n)).unwrap()).collect();
    files.push(std::fs::read(raw_dir("CiteSeer").join("ind.citeseer.y")).unwrap());
    let dir = temp_dir("pickle-fuzz");
    for f in std::fs::read_dir(&cora).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), dir.join(f.file_name())).unwrap();
    }
    let start = std::time::Instant::now();
    let mut seen = std::collections::BTreeMap::<&str, u64>::new();
    for seed in first..first + cases {
        let mut rng = Rng(seed);
        let input = fuzz_input(&mut rng, &files);
        let outcome = catch_unwind(AssertUnwindSafe(|| match Pickle::parse(input.clone(), Path::new("f.pkl")) {
            Err(e) => {
                assert!(e.to_string().starts_with("f.pkl: byte "), "{e}");
                "refused"
            }
            Ok(p) => {
                let read = [p.csr_matrix().is_ok(), p.array().is_ok(), p.adjacency().is_ok()];
                if read.contains(&true) { "read" } else { "parsed, not data" }
            }
        }));
        let kind = outcome.unwrap_or_else(|_| panic!("seed {seed}: the reader panicked on {} bytes", input.len()));
        *seen.entry(kind).or_default() += 1;
        // One case in 50: a whole dataset with one file damaged, through the loader.
        if seed % 50 == 0 {
            let file = ["ind.cora.x", "ind.cora.ally", "ind.cora.graph", "ind.cora.test.index"][rng.below(4)];
            let good = std::fs::read(cora.join(file)).unwrap();
            let bad = fuzz_input(&mut rng, std::slice::from_ref(&good));
            std::fs::write(dir.join(file), &bad).unwrap();
            let loaded = catch_unwind(AssertUnwindSafe(|| Planetoid::read_raw(&dir, "Cora").map(|g| g.nodes)));
            let loaded = loaded.unwrap_or_else(|_| panic!("seed {seed}: the loader panicked on a damaged {file}"));
            *seen.entry(if loaded.is_ok() { "dataset read" } else { "dataset refused" }).or_default() += 1;
            std::fs::write(dir.join(file), &good).unwrap();
        }
    }
    eprintln!("pickle fuzz: {cases} cases from seed {first} in {:.1} s: {seen:?}", start.elapsed().as_secs_f64());
    if cases >= 1000 {
        for kind in ["refused", "read", "dataset refused"] {
            assert!(seen.get(kind).copied().unwrap_or(0) > 0, "no case {kind}: {seen:?}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
});
