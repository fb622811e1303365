//! The pieces of the plain-text formats that both loaders share: the undirected edges of a
//! `pattern symmetric` adjacency file, and the header, node ids and labels of a TSV file.

use super::DataError;
use crate::mtx::Lines;
use crate::mtx::{MatrixMarket, MtxField, MtxSymmetry};
use std::path::Path;

/// The undirected edges of a graph's adjacency file: it must be `pattern symmetric` (each edge
/// stored once, in the lower triangle), without self loops or an edge stored twice. The edges are
/// the stored entries, in file order.
pub(super) fn undirected_edges(path: &Path, m: MatrixMarket) -> Result<Vec<(usize, usize)>, DataError> {
    if (m.field, m.symmetry) != (MtxField::Pattern, MtxSymmetry::Symmetric) {
        return Err(DataError::content(path, Some(1), format_args!(
            "banner declares `{} {}`; a graph's adjacency must be `pattern symmetric` (each undirected edge stored once)",
            m.field,
            m.symmetry
        )));
    }
    if let Some(k) = m.entries.iter().position(|&(i, j)| i == j) {
        let i = m.entries.get(k).map_or(0, |e| e.0 + 1);
        return Err(DataError::content(
            path,
            None,
            format_args!(
                "entry {} of {} is a self loop `{i} {i}`; the graph's edges have none",
                k + 1,
                m.entries.len()
            ),
        ));
    }
    let mut sorted = m.entries.clone();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w.first() == w.get(1)) {
        let (i, j) = w.first().map_or((0, 0), |&(i, j)| (i + 1, j + 1));
        return Err(DataError::content(path, None, format_args!("edge `{i} {j}` is stored twice")));
    }
    Ok(m.entries)
}

/// Checks a TSV header line.
pub(super) fn tsv_header(lines: &mut Lines, expected: &str) -> Result<(), DataError> {
    if !lines.advance()? {
        return Err(DataError::content(&lines.path, None, format_args!("empty, no header {expected:?}")));
    }
    if lines.line() != expected {
        return Err(lines.error(format_args!("header {:?} is not {expected:?}", lines.line())));
    }
    Ok(())
}

/// The `n` labels of `records` (`(line, node, label)`), which must name every node of `0..n`
/// once; sized only once `records` (read from the file) has exactly `n` elements, so a declared
/// node count the file does not back allocates nothing.
pub(super) fn labels_of(
    lines: &Lines,
    records: &[(usize, usize, usize)],
    n: usize,
    of: &Path,
) -> Result<Vec<usize>, DataError> {
    if records.len() != n {
        return Err(lines.error(format_args!(
            "the file ends after {} nodes, {} declares {n}",
            records.len(),
            of.display()
        )));
    }
    let mut labels = vec![usize::MAX; n];
    for &(line, node, label) in records {
        let at = |what: String| DataError::content(&lines.path, Some(line), what);
        let slot = labels.get_mut(node).ok_or_else(|| at(format!("node {node} is outside 0..{n}")))?;
        if *slot != usize::MAX {
            return Err(at(format!("node {node} is listed twice")));
        }
        *slot = label;
    }
    // `n` records, none repeated and all below `n`: every node has its label.
    Ok(labels)
}

/// A node number of a TSV line, checked against the `n` nodes of the graph file `of`, and the
/// refusal of more lines than nodes (which bounds what the records take by the declared count).
pub(super) fn tsv_node(lines: &Lines, token: &str, n: usize, listed: usize, of: &Path) -> Result<usize, DataError> {
    if listed == n {
        return Err(lines.error(format_args!("more node lines than the {n} nodes {} declares", of.display())));
    }
    match token.parse::<usize>() {
        Ok(node) if node < n => Ok(node),
        Ok(node) => Err(lines.error(format_args!("node {node} is outside 0..{n} (the nodes of {})", of.display()))),
        Err(_) => Err(lines.error(format_args!("node {token:?} is not a non-negative integer"))),
    }
}
