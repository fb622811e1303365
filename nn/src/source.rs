//! Where dataset files come from: one chain for every loader that takes files it does not ship
//! ([`crate::Planetoid::new`], [`crate::io::suitesparse`]), tried in this order:
//!
//! 1. the directory the caller names (the `root` argument, the examples' `--root`), in PyG's
//!    layout: `{root}/{Name}/raw/ind.{name}.*` for Planetoid, `{root}/{Group}/{name}.mtx` or
//!    `{root}/{name}.mtx` for SuiteSparse;
//! 2. `$SPARSEGRAD_DATA`, a data directory: `planetoid/{Name}/raw/...`,
//!    `suitesparse/{Group}/{name}.mtx` or `suitesparse/{name}.mtx`;
//! 3. the user's cache, the same layout: `$XDG_CACHE_HOME/sparsegrad` (else
//!    `~/.cache/sparsegrad`; `~/Library/Caches/sparsegrad` on macOS, `%LOCALAPPDATA%\sparsegrad`
//!    on Windows), where downloads go by default;
//! 4. this repository's `../shared/data` when it is there (development machines and CI), found
//!    from where this crate was compiled; a crate built from a registry has no such directory;
//! 5. a download from the canonical address (PyG's for Planetoid, the SuiteSparse collection's),
//!    with the feature `download`, written into the first of `root`, `$SPARSEGRAD_DATA` and the
//!    cache (see `crate::download`).
//!
//! The first place holding every file wins; a place holding some of them is skipped (its
//! report says which file is missing). When no place has them, [`DataError::NotFound`] lists
//! each place, why it failed, and the one-line fix.

use crate::error::{DataError, Tried};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The environment variable naming a data directory (step 2).
pub const DATA_ENV: &str = "SPARSEGRAD_DATA";

/// PyG's Planetoid address: kimiyoung/planetoid's `data/` folder, `ind.{name}.{ext}` under it.
pub const PLANETOID_URL: &str = "https://github.com/kimiyoung/planetoid/raw/master/data";

/// The SuiteSparse collection's Matrix Market archives, `{Group}/{name}.tar.gz` under it.
pub const SUITESPARSE_URL: &str = "https://sparse.tamu.edu/MM";

/// How to download (step 5): the addresses and the patience.
#[derive(Debug, Clone)]
pub struct Download {
    /// The folder of the Planetoid files ([`PLANETOID_URL`]).
    pub planetoid_url: String,
    /// The root of the SuiteSparse archives ([`SUITESPARSE_URL`]).
    pub suitesparse_url: String,
    /// The longest wait for a connection (and for the name lookup).
    pub connect_timeout: Duration,
    /// The longest wait for any one read: a stalled transfer fails after it, a slow one does not.
    pub read_timeout: Duration,
    /// Whether to draw a progress bar on a terminal's stderr.
    pub progress: bool,
}

impl Default for Download {
    fn default() -> Self {
        Self {
            planetoid_url: PLANETOID_URL.into(),
            suitesparse_url: SUITESPARSE_URL.into(),
            connect_timeout: Duration::from_secs(15),
            read_timeout: Duration::from_secs(60),
            progress: true,
        }
    }
}

/// The places a dataset is looked for, in order (see the module). [`DataSources::new`] fills
/// them from the environment; every field can be changed before a lookup.
#[derive(Debug, Clone)]
pub struct DataSources {
    /// 1. The caller's directory (PyG's `root`).
    pub root: Option<PathBuf>,
    /// 2. `$SPARSEGRAD_DATA` (unset or empty: `None`).
    pub env: Option<PathBuf>,
    /// 3. The user's cache directory for sparsegrad.
    pub cache: Option<PathBuf>,
    /// 4. The repository's shared data, when the directory exists.
    pub checkout: Option<PathBuf>,
    /// 5. How to download, or `None` for never. Without the feature `download` a `Some` reports
    ///    that the download is not compiled in.
    pub download: Option<Download>,
}

impl DataSources {
    /// The chain with `root` first, then the environment's places, then a download when the
    /// feature `download` is on.
    pub fn new(root: Option<PathBuf>) -> Self {
        Self {
            root,
            env: std::env::var_os(DATA_ENV).filter(|v| !v.is_empty()).map(PathBuf::from),
            cache: user_cache_dir().map(|c| c.join("sparsegrad")),
            checkout: checkout_data().filter(|d| d.is_dir()),
            download: cfg!(feature = "download").then(Download::default),
        }
    }

    /// Where a download is written: `root`, else `$SPARSEGRAD_DATA`, else the cache; with
    /// whether it is the root (PyG's layout) or a data directory.
    fn download_home(&self) -> Option<(&Path, bool)> {
        match (&self.root, &self.env, &self.cache) {
            (Some(r), _, _) => Some((r, true)),
            (None, Some(e), _) => Some((e, false)),
            (None, None, Some(c)) => Some((c, false)),
            _ => None,
        }
    }

    /// The path of `wanted` (a directory for Planetoid, the `.mtx` file for SuiteSparse): the
    /// first place that holds it, else a download, else [`DataError::NotFound`].
    pub(crate) fn locate(&self, wanted: &Wanted) -> Result<PathBuf, DataError> {
        let mut tried = Vec::new();
        let places: [(&str, &Option<PathBuf>, bool, &str); 4] = [
            ("the root argument", &self.root, true, "none given"),
            ("$SPARSEGRAD_DATA", &self.env, false, "not set"),
            ("the cache", &self.cache, false, "no home directory"),
            ("the checkout's shared data", &self.checkout, false, "not in a checkout beside ../shared/data"),
        ];
        for (source, place, is_root, absent) in places {
            let Some(place) = place else {
                tried.push(Tried { source: source.into(), location: None, why: absent.into() });
                continue;
            };
            for candidate in wanted.candidates(place, is_root) {
                match wanted.check(&candidate) {
                    Ok(()) => return Ok(candidate),
                    Err(why) => tried.push(Tried {
                        source: source.into(),
                        location: Some(candidate.display().to_string()),
                        why,
                    }),
                }
            }
        }
        let fix = match (&self.download, self.download_home()) {
            (None, _) if !cfg!(feature = "download") => {
                let why = "not compiled in (the feature `download` is off)";
                tried.push(Tried { source: "download".into(), location: None, why: why.into() });
                wanted.fix(self, "or build with `--features download` to fetch it")
            }
            (None, _) => {
                tried.push(Tried { source: "download".into(), location: None, why: "turned off".into() });
                wanted.fix(self, "or turn the download on (`DataSources::download`)")
            }
            (Some(_), None) => {
                let why = "no directory to write to (no root, $SPARSEGRAD_DATA or cache directory)";
                tried.push(Tried { source: "download".into(), location: None, why: why.into() });
                wanted.fix(self, "or give a root to download into")
            }
            (Some(d), Some((home, is_root))) => match fetch(wanted, d, home, is_root) {
                Ok(path) => return Ok(path),
                Err(e) => {
                    let (at, why) = download_why(e, wanted.url(d));
                    tried.push(Tried { source: "download".into(), location: Some(at), why });
                    wanted.fix(self, "or retry with a working connection")
                }
            },
        };
        Err(DataError::NotFound { dataset: wanted.describe(), tried, fix })
    }
}

/// The address that failed (the one file of a set, where one did) and why; `url` (the set's
/// address) where the error names none.
fn download_why(e: DataError, url: String) -> (String, String) {
    match e {
        DataError::Download { url, what } => (url, what),
        e => (url, e.to_string()),
    }
}

#[cfg(feature = "download")]
fn fetch(wanted: &Wanted, d: &Download, home: &Path, is_root: bool) -> Result<PathBuf, DataError> {
    crate::download::fetch(wanted, d, home, is_root)
}

#[cfg(not(feature = "download"))]
fn fetch(wanted: &Wanted, d: &Download, _home: &Path, _is_root: bool) -> Result<PathBuf, DataError> {
    let what = "not compiled in (build with the feature `download`, e.g. `--features download`)";
    Err(DataError::Download { url: wanted.url(d), what: what.into() })
}

/// The user's cache directory, by the rule of the `dirs` crate's `cache_dir`: `%LOCALAPPDATA%`
/// on Windows, `~/Library/Caches` on macOS, else `$XDG_CACHE_HOME` when absolute, else
/// `~/.cache`.
fn user_cache_dir() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if cfg!(windows) {
        return var("LOCALAPPDATA");
    }
    let home = var("HOME");
    if cfg!(target_os = "macos") {
        return home.map(|h| h.join("Library/Caches"));
    }
    var("XDG_CACHE_HOME").filter(|p| p.is_absolute()).or_else(|| home.map(|h| h.join(".cache")))
}

/// This repository's `../shared/data`, from the directory this crate was compiled in
/// (`<repository>/nn`).
fn checkout_data() -> Option<PathBuf> {
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
    Some(repository.parent()?.join("shared").join("data"))
}

/// A dataset the chain can provide.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wanted<'a> {
    /// A Planetoid dataset: its canonical name (`CiteSeer`) and file prefix (`citeseer`).
    Planetoid { name: &'static str, prefix: &'static str },
    /// A SuiteSparse matrix `group/name`.
    SuiteSparse { group: &'a str, name: &'a str },
}

impl Wanted<'_> {
    fn describe(&self) -> String {
        match self {
            Wanted::Planetoid { name, .. } => format!("Planetoid {name}"),
            Wanted::SuiteSparse { group, name } => format!("SuiteSparse {group}/{name}"),
        }
    }

    /// Where it would be under a place (a root in PyG's layout, or a data directory).
    fn candidates(&self, place: &Path, is_root: bool) -> Vec<PathBuf> {
        match (self, is_root) {
            (Wanted::Planetoid { name, .. }, true) => vec![place.join(name).join("raw")],
            (Wanted::Planetoid { name, .. }, false) => vec![place.join("planetoid").join(name).join("raw")],
            (Wanted::SuiteSparse { group, name }, root) => {
                let dir = if root { place.to_path_buf() } else { place.join("suitesparse") };
                vec![dir.join(group).join(format!("{name}.mtx")), dir.join(format!("{name}.mtx"))]
            }
        }
    }

    /// `Ok` when `at` holds every file, else why not.
    fn check(&self, at: &Path) -> Result<(), String> {
        match self {
            Wanted::Planetoid { prefix, .. } => {
                if !at.is_dir() {
                    return Err("no such directory".into());
                }
                let missing: Vec<String> = crate::planetoid_raw::RAW_FILES
                    .iter()
                    .map(|ext| format!("ind.{prefix}.{ext}"))
                    .filter(|f| !at.join(f).is_file())
                    .collect();
                match missing.len() {
                    0 => Ok(()),
                    8 => Err("none of the raw files".into()),
                    _ => Err(format!("{} missing", missing.join(", "))),
                }
            }
            Wanted::SuiteSparse { .. } => {
                let mut gz = at.as_os_str().to_owned();
                gz.push(".gz");
                if at.is_file() || Path::new(&gz).is_file() {
                    Ok(())
                } else {
                    Err("no such file (nor .mtx.gz)".into())
                }
            }
        }
    }

    /// The address a download starts from.
    pub(crate) fn url(&self, d: &Download) -> String {
        match self {
            Wanted::Planetoid { prefix, .. } => format!("{}/ind.{prefix}.*", d.planetoid_url),
            Wanted::SuiteSparse { group, name } => format!("{}/{group}/{name}.tar.gz", d.suitesparse_url),
        }
    }

    /// The one-line fix: where to put the files by hand, then `alternative`.
    fn fix(&self, sources: &DataSources, alternative: &str) -> String {
        let home = sources
            .env
            .as_ref()
            .or(sources.cache.as_ref())
            .map_or("$SPARSEGRAD_DATA".into(), |h| h.display().to_string());
        match self {
            Wanted::Planetoid { name, prefix } => format!(
                "put ind.{prefix}.{{{}}} (from {PLANETOID_URL}) into {home}/planetoid/{name}/raw, {alternative}",
                crate::planetoid_raw::RAW_FILES.join(",")
            ),
            Wanted::SuiteSparse { group, name } => format!(
                "unpack {name}.mtx from {SUITESPARSE_URL}/{group}/{name}.tar.gz into {home}/suitesparse/{group}, {alternative}"
            ),
        }
    }
}
