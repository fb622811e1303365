//! Which rank owns which rows: [`RowPartition`], from contiguous ranges or from the parts of
//! `sparsegrad::nn::partition_graph` (METIS-like, few edges between parts).
//!
//! A rank owns its rows in increasing global order; its local row `i` is the `i`-th of them.
//! The same partition must be given on every rank (its fingerprint is compared when a
//! [`crate::DistCsr`] is built).

use crate::invalid;
use sparsegrad_backend::Result;

/// The owner rank of every global row (node) of a graph, and each rank's rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowPartition {
    owner: Vec<usize>,
    /// Each rank's global rows, increasing.
    rows: Vec<Vec<usize>>,
    /// The local index of every global row on its owner.
    local: Vec<usize>,
}

impl RowPartition {
    /// Rows `0..n` in `world_size` contiguous blocks, the first `n % world_size` one row longer.
    pub fn contiguous(n: usize, world_size: usize) -> Result<RowPartition> {
        if world_size == 0 {
            return Err(invalid("RowPartition::contiguous", "world_size must be at least 1"));
        }
        let (base, extra) = (n / world_size, n % world_size);
        let owner = (0..world_size).flat_map(|r| std::iter::repeat_n(r, base + usize::from(r < extra))).collect();
        RowPartition::from_parts(owner, world_size)
    }

    /// The partition with `parts[i]` the owner of row `i` (as `partition_graph(adj,
    /// world_size, seed)` returns). An error for a part outside `0..world_size`.
    pub fn from_parts(parts: Vec<usize>, world_size: usize) -> Result<RowPartition> {
        const OP: &str = "RowPartition::from_parts";
        if world_size == 0 {
            return Err(invalid(OP, "world_size must be at least 1"));
        }
        let mut rows = vec![Vec::new(); world_size];
        let mut local = Vec::with_capacity(parts.len());
        for (i, &p) in parts.iter().enumerate() {
            let block = rows
                .get_mut(p)
                .ok_or_else(|| invalid(OP, format!("row {i} is given part {p}; parts must be below {world_size}")))?;
            local.push(block.len());
            block.push(i);
        }
        Ok(RowPartition { owner: parts, rows, local })
    }

    /// The number of global rows.
    pub fn num_rows(&self) -> usize {
        self.owner.len()
    }

    /// The number of parts (ranks).
    pub fn world_size(&self) -> usize {
        self.rows.len()
    }

    /// The owner of global row `i`.
    pub fn owner(&self, i: usize) -> usize {
        self.owner[i]
    }

    /// The local index of global row `i` on its owner.
    pub fn local_index(&self, i: usize) -> usize {
        self.local[i]
    }

    /// The global rows of `rank`, increasing.
    pub fn rows(&self, rank: usize) -> &[usize] {
        &self.rows[rank]
    }

    /// The stored entries `(i, j)` of the square pattern `(crow, col)` whose row and column have
    /// different owners: the edge cut of a graph's adjacency (each undirected edge counted from
    /// both ends when both directions are stored).
    pub fn edge_cut(&self, crow: &[usize], col: &[usize]) -> usize {
        (0..crow.len().saturating_sub(1))
            .map(|i| col[crow[i]..crow[i + 1]].iter().filter(|&&j| self.owner[j] != self.owner[i]).count())
            .sum()
    }

    /// A fingerprint of the partition (FNV-1a over the owners), compared across ranks.
    pub(crate) fn fingerprint(&self) -> u64 {
        let mut h = 0xcbf2_9ce4_8422_2325u64 ^ self.rows.len() as u64;
        for &p in &self.owner {
            h = (h ^ p as u64).wrapping_mul(0x0100_0000_01b3);
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_blocks_and_parts() {
        let p = RowPartition::contiguous(7, 3).unwrap();
        assert_eq!((p.rows(0), p.rows(1), p.rows(2)), (&[0, 1, 2][..], &[3, 4][..], &[5, 6][..]));
        assert_eq!((p.owner(4), p.local_index(4)), (1, 1));
        let q = RowPartition::from_parts(vec![1, 0, 1, 0], 2).unwrap();
        assert_eq!((q.rows(0), q.rows(1)), (&[1, 3][..], &[0, 2][..]));
        // 0 -> 1 and 1 -> 0 cross; 2 -> 0 stays in part 1.
        assert_eq!(q.edge_cut(&[0, 1, 2, 3, 3], &[1, 0, 0]), 2);
        assert!(RowPartition::from_parts(vec![0, 2], 2).is_err());
        assert!(RowPartition::contiguous(3, 0).is_err());
        assert_ne!(p.fingerprint(), RowPartition::contiguous(7, 2).unwrap().fingerprint());
    }
}
