//! SuiteSparse matrices by name ([`suitesparse`], re-exported as `sparsegrad::io::suitesparse`):
//! `"HB/bcsstk13"` is found, or fetched, through the chain of [`crate::source`] and returned as the
//! path of its Matrix Market file, which [`crate::io::read_sparse`] and [`crate::read_mtx`] read.

use crate::error::DataError;
use crate::source::{DataSources, Wanted};
use std::path::PathBuf;

/// The Matrix Market file of the SuiteSparse matrix `name` (`Group/Name`, as the collection
/// writes it: `HB/bcsstk13`, `Bai/cryg2500`): the first of `{root}/...` (no root here),
/// `$SPARSEGRAD_DATA/suitesparse/{Group}/{name}.mtx` (or `suitesparse/{name}.mtx`, flat), the
/// same in the user's cache and in this repository's `../shared/data`, then, with the feature
/// `download`, the collection's `{Group}/{name}.tar.gz`, unpacked into the cache.
///
/// ```no_run
/// use burn::tensor::{Device, FloatDType};
/// use sparsegrad_backend::Layout;
/// let path = sparsegrad_nn::io::suitesparse("HB/bcsstk13")?;
/// let a = sparsegrad_nn::io::read_sparse(&path, Layout::Csr, None, FloatDType::F64, &Device::flex())?;
/// assert_eq!(a.shape(), [2003, 2003]);
/// # Ok::<(), sparsegrad_nn::DataError>(())
/// ```
pub fn suitesparse(name: &str) -> Result<PathBuf, DataError> {
    suitesparse_from(&DataSources::new(None), name)
}

/// [`suitesparse`] with the sources given (a root, no download, another mirror: [`DataSources`]).
pub fn suitesparse_from(sources: &DataSources, name: &str) -> Result<PathBuf, DataError> {
    let (group, matrix) = split_name(name)?;
    sources.locate(&Wanted::SuiteSparse { group, name: matrix })
}

/// `Group/Name` split in two, each a plain name of the collection (ASCII letters, digits, `_`,
/// `-`, `.`, `+`, not starting with `.`): the parts become a path and an address.
fn split_name(name: &str) -> Result<(&str, &str), DataError> {
    let plain = |s: &str| {
        !s.is_empty()
            && s.len() <= 64
            && !s.starts_with('.')
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.+".contains(&b))
    };
    match name.split_once('/') {
        Some((group, matrix)) if plain(group) && plain(matrix) => Ok((group, matrix)),
        _ => Err(DataError::Invalid {
            what: format!(
                "{name:?} is not a SuiteSparse name `Group/Name` (as \"HB/bcsstk13\"): two plain names and a slash"
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_group_and_matrix() {
        assert_eq!(split_name("HB/bcsstk13").unwrap(), ("HB", "bcsstk13"));
        assert_eq!(split_name("Newman/as-22july06").unwrap(), ("Newman", "as-22july06"));
        for bad in ["bcsstk13", "HB/", "/x", "HB/a/b", "../x", "HB/..", "HB/.hidden", "H B/x", "HB/x\n"] {
            let e = split_name(bad).unwrap_err().to_string();
            assert!(e.contains("is not a SuiteSparse name"), "{bad:?}: {e}");
        }
    }
}
