//! Step 5 of [`crate::source`] (feature `download`): fetching a dataset from its canonical
//! address into a data directory, as PyG and burn's dataset loaders do on first use.
//!
//! - Planetoid: the eight files `ind.{name}.*` from PyG's address (kimiyoung/planetoid's `data/`),
//!   each checked against its pinned SHA-256 ([`PLANETOID_SHA256`], the sums of the files PyG
//!   downloads). PubMed's sums are not pinned (its files could not be obtained where these were
//!   recorded): its files are checked by the pickle reader alone, which runs no code and
//!   refuses any content it does not know.
//! - SuiteSparse: the collection's Matrix Market archive `{Group}/{name}.tar.gz`; only the entry
//!   `{name}/{name}.mtx` is taken from it (no path from the archive is ever joined to a
//!   directory), and the Matrix Market reader checks it when it is read. The collection publishes
//!   no checksums this crate could pin for every matrix.
//!
//! Every file is streamed to a temporary file beside its destination (`.{file}.part-{pid}`),
//! hashed on the way, flushed and renamed into place only once complete and checked: an
//! interrupted or corrupt download never leaves a file the chain would take for a good one. Every
//! connection has a timeout ([`Download`]: 15 s to connect, 60 s for any one read), so with no
//! network the step fails in seconds with the address and the reason. A progress bar shows on
//! a terminal's stderr.

use crate::error::DataError;
use crate::source::{Download, Wanted};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The SHA-256 of every Planetoid raw file PyG downloads (kimiyoung/planetoid at
/// af6abf468a772cc055bec88c52e4d6f51b7c37e3): `(file, sum)`.
pub const PLANETOID_SHA256: [(&str, &str); 16] = [
    ("ind.citeseer.allx", "2ac30345d95c9ec933a817ee0bdd6a5f077f8c184a20e696910192d534414668"),
    ("ind.citeseer.ally", "f704b2d986dde6c2669934de1f3ae5696a6cf9455c0f6b2646a2d135ea0a1c95"),
    ("ind.citeseer.graph", "d79a4ef9d3e7169aee8946145f6b7306e35bc79bffad26346cfb94e10e9912a7"),
    ("ind.citeseer.test.index", "2af990671580b6b2df5d158d1038f8292e30c9cd821b5453f399659b25b723d4"),
    ("ind.citeseer.tx", "539a8906a2da97628d212f2fdd668c109a8b3f0d36574b59e5d3fd5b5303da21"),
    ("ind.citeseer.ty", "55e5bd1ba1e733a04598753ad1a8d57957f4b8f89e74519f41f4f4938767e4ce"),
    ("ind.citeseer.x", "d20de19150741e555de0ed037195630fc194114ebc7fd72ced62810148aa22f6"),
    ("ind.citeseer.y", "8ba87e515d8e3ee3cf52f6d2c5b86aa73f11ecad825a808455209ec26cd54924"),
    ("ind.cora.allx", "9419ba2f26f5c35243db64aba110e0f35a04851609e0dc5433450676ca6b8543"),
    ("ind.cora.ally", "2b998f5cc7fedc86e7f97ca2498f47a1ffc1462c29e2d578b23bf3f62b6e7d71"),
    ("ind.cora.graph", "58f13302f39dde8852dad6fe6d15b89b077b6d7f837626bce671ef80344b383d"),
    ("ind.cora.test.index", "297ce89af2b51a6a194181c7dbe1796c6a1cf9cd9349a88383b1b1e227867875"),
    ("ind.cora.tx", "b9afbaa4a400df991f6f02ef677e1e44da55ffc04801fd02f9e673987829226a"),
    ("ind.cora.ty", "41f5ac76596a1699cc33f53084a2419e92961c42bb75f36fc38e616d348532ad"),
    ("ind.cora.x", "23cfa55d91c6f624233f5eb7b6e3f141f1bd2b2ae39608a63cf5d084bb27baab"),
    ("ind.cora.y", "94465c14eb53e04ca262198dcbb2521ee8af60fb3f3d546cd6ca24a511b0e7d1"),
];

/// Downloads `wanted` into `home` (a root in PyG's layout when `is_root`, else a data
/// directory) and returns where it now is, as [`crate::source::DataSources::locate`] would.
pub(crate) fn fetch(wanted: &Wanted, d: &Download, home: &Path, is_root: bool) -> Result<PathBuf, DataError> {
    match *wanted {
        Wanted::Planetoid { name, prefix } => {
            let dir = if is_root { home.join(name) } else { home.join("planetoid").join(name) }.join("raw");
            for ext in crate::planetoid_raw::RAW_FILES {
                let file = format!("ind.{prefix}.{ext}");
                let to = dir.join(&file);
                if to.is_file() {
                    // Already there: from an earlier download cut short (written only once
                    // complete and checked) or put there by hand; the reader checks it.
                    continue;
                }
                let sum = PLANETOID_SHA256.iter().find(|(f, _)| *f == file).map(|(_, s)| *s);
                get(&format!("{}/{file}", d.planetoid_url), &to, sum, d)?;
            }
            Ok(dir)
        }
        Wanted::SuiteSparse { group, name } => {
            let dir = if is_root { home.join(group) } else { home.join("suitesparse").join(group) };
            let archive = dir.join(format!("{name}.tar.gz"));
            let url = format!("{}/{group}/{name}.tar.gz", d.suitesparse_url);
            get(&url, &archive, None, d)?;
            let to = dir.join(format!("{name}.mtx"));
            let unpacked = unpack_mtx(&archive, name, &to);
            let _ = std::fs::remove_file(&archive);
            unpacked.map_err(|what| DataError::Download { url, what })?;
            Ok(to)
        }
    }
}

/// `path`'s temporary sibling for an atomic write.
fn part_of(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.part-{}", std::process::id()))
}

/// Writes what `fill` produces to `to` atomically: a temporary sibling, flushed to disk, then
/// renamed; removed on any failure.
fn write_atomically(to: &Path, fill: impl FnOnce(&mut std::fs::File) -> Result<(), String>) -> Result<(), String> {
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let part = part_of(to);
    let result = (|| {
        let mut file = std::fs::File::create(&part).map_err(|e| format!("cannot create {}: {e}", part.display()))?;
        fill(&mut file)?;
        file.sync_all().map_err(|e| format!("cannot write {}: {e}", part.display()))?;
        std::fs::rename(&part, to).map_err(|e| format!("cannot rename {} to {}: {e}", part.display(), to.display()))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&part);
    }
    result
}

/// Downloads `url` to `to` (atomically), checking its SHA-256 against `sha256` when given.
fn get(url: &str, to: &Path, sha256: Option<&str>, d: &Download) -> Result<(), DataError> {
    let error = |what: String| DataError::Download { url: url.into(), what };
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_resolve(Some(d.connect_timeout))
        .timeout_connect(Some(d.connect_timeout))
        .timeout_recv_response(Some(d.read_timeout))
        .timeout_per_read(Some(d.read_timeout))
        .user_agent(concat!("sparsegrad/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let response = agent.get(url).call().map_err(|e| error(e.to_string()))?;
    let body = response.into_body();
    let bar = progress_bar(d.progress, body.content_length(), to);
    let mut reader = body.into_reader();
    let mut hasher = Sha256::new();
    write_atomically(to, |file| {
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = reader.read(&mut buf).map_err(|e| format!("reading the response: {e}"))?;
            let Some(chunk) = buf.get(..n).filter(|c| !c.is_empty()) else { break };
            hasher.update(chunk);
            file.write_all(chunk).map_err(|e| format!("writing {}: {e}", to.display()))?;
            bar.inc(n as u64);
        }
        let got = hex(&hasher.finalize_reset());
        match sha256 {
            Some(want) if got != want => Err(format!("SHA-256 {got}, expected {want}: not the published file")),
            _ => Ok(()),
        }
    })
    .map_err(error)?;
    bar.finish_and_clear();
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A byte-counting bar for the file `to`, drawn only on a terminal (and only when asked).
fn progress_bar(shown: bool, len: Option<u64>, to: &Path) -> indicatif::ProgressBar {
    if !shown {
        return indicatif::ProgressBar::hidden();
    }
    let bar = len.map_or_else(indicatif::ProgressBar::no_length, indicatif::ProgressBar::new);
    let style = "{msg} {wide_bar} {bytes}/{total_bytes} {bytes_per_sec} {eta}";
    if let Ok(style) = indicatif::ProgressStyle::with_template(style) {
        bar.set_style(style);
    }
    bar.set_message(format!("downloading {}", to.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()));
    bar
}

/// Copies the entry `{name}/{name}.mtx` (or a plain file named `{name}.mtx` anywhere) of the
/// gzip-compressed tar `archive` to `to`, atomically; no other entry is read out.
fn unpack_mtx(archive: &Path, name: &str, to: &Path) -> Result<(), String> {
    let file = std::fs::File::open(archive).map_err(|e| format!("cannot open {}: {e}", archive.display()))?;
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let wanted = format!("{name}.mtx");
    let entries = tar.entries().map_err(|e| format!("not a tar archive: {e}"))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| format!("a damaged archive: {e}"))?;
        let is_it = entry.header().entry_type().is_file()
            && entry.path().is_ok_and(|p| p.file_name().is_some_and(|f| f.to_string_lossy() == wanted));
        if is_it {
            return write_atomically(to, |out| {
                std::io::copy(&mut entry, out).map(|_| ()).map_err(|e| format!("unpacking {wanted}: {e}"))
            });
        }
    }
    Err(format!("the archive holds no {wanted}"))
}
