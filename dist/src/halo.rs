//! The halo plan: which rows of the dense operand each rank sends to which, built once per
//! pattern, and the two host exchanges it drives.
//!
//! A rank's rows of `A` reference columns (nodes) that other ranks own. The plan lists them
//! (the *halo*), grouped by owner and increasing within an owner, and tells every owner which of
//! its rows to send (one all-to-all of counts and one of the row ids, once). Then:
//!
//! - forward: every rank sends the rows of `X` the others need and receives its halo rows
//!   (`MPI_Alltoallv` of exactly those rows, nothing else);
//! - backward: the reverse, every rank sends the gradient of its halo rows back to their owners,
//!   which add what they receive into the gradient of the rows they sent (a row sent to several
//!   ranks gets the sum of their contributions).

use crate::group::{Counts, ProcessGroup};
use crate::invalid;
use crate::partition::RowPartition;
use mpi::traits::Equivalence;
use sparsegrad_backend::Result;
use std::ops::AddAssign;

/// The halo plan of one rank for one pattern.
#[derive(Debug)]
pub(crate) struct HaloPlan {
    pub(crate) group: ProcessGroup,
    /// Rows this rank owns (the local operand's rows).
    pub(crate) num_local: usize,
    /// The local rows this rank sends, grouped by destination rank (`send_per_rank`).
    send_rows: Vec<usize>,
    send_per_rank: Vec<usize>,
    /// The halo rows received from each rank, in the order of `halo`.
    recv_per_rank: Vec<usize>,
    /// The global ids of the halo rows, grouped by owner, increasing within an owner.
    pub(crate) halo: Vec<usize>,
}

impl HaloPlan {
    /// The plan for a rank whose rows reference the global columns `cols` (any order, repeats
    /// allowed): collective, every rank calls it with the same partition.
    pub(crate) fn build(group: &ProcessGroup, partition: &RowPartition, cols: &[usize]) -> Result<HaloPlan> {
        const OP: &str = "DistCsr: the halo plan";
        let (rank, size) = (group.rank(), group.world_size());
        let mut halo: Vec<usize> = cols.iter().copied().filter(|&j| partition.owner(j) != rank).collect();
        halo.sort_unstable_by_key(|&j| (partition.owner(j), j));
        halo.dedup();
        let mut recv_per_rank = vec![0usize; size];
        for &j in &halo {
            recv_per_rank[partition.owner(j)] += 1;
        }
        // Who needs how many of my rows, then which ones (their global ids).
        let asked: Vec<u64> = recv_per_rank.iter().map(|&c| c as u64).collect();
        let send_per_rank: Vec<usize> = group.all_to_all_counts(&asked).into_iter().map(|c| c as usize).collect();
        let ids: Vec<u64> = halo.iter().map(|&j| j as u64).collect();
        let wanted = group.all_to_all_v(
            &ids,
            &Counts::new(recv_per_rank.iter().copied(), OP)?,
            &Counts::new(send_per_rank.iter().copied(), OP)?,
        );
        let mut send_rows = Vec::with_capacity(wanted.len());
        for j in wanted {
            let j = j as usize;
            if j >= partition.num_rows() || partition.owner(j) != rank {
                // Only possible when the ranks were given different partitions (checked before).
                return Err(invalid(OP, format!("rank {rank} was asked for row {j}, which it does not own")));
            }
            send_rows.push(partition.local_index(j));
        }
        Ok(HaloPlan {
            group: group.clone(),
            num_local: partition.rows(rank).len(),
            send_rows,
            send_per_rank,
            recv_per_rank,
            halo,
        })
    }

    /// Rows this rank sends a forward exchange.
    pub(crate) fn rows_sent(&self) -> usize {
        self.send_rows.len()
    }

    /// Rows this rank receives a forward exchange.
    pub(crate) fn rows_received(&self) -> usize {
        self.halo.len()
    }

    fn counts(per_rank: &[usize], width: usize) -> Result<Counts> {
        const OP: &str = "DistCsr: the halo exchange";
        let scaled =
            per_rank.iter().map(|&c| c.checked_mul(width).ok_or_else(|| invalid(OP, "the exchange overflows")));
        Counts::new(scaled.collect::<Result<Vec<_>>>()?, OP)
    }

    /// The halo rows `[halo, width]` (row-major) of the local operand `x [num_local, width]`.
    pub(crate) fn forward<T: Equivalence + Copy + Default>(&self, x: &[T], width: usize) -> Result<Vec<T>> {
        debug_assert_eq!(x.len(), self.num_local * width);
        let mut send = Vec::with_capacity(self.send_rows.len() * width);
        for &i in &self.send_rows {
            send.extend_from_slice(&x[i * width..(i + 1) * width]);
        }
        let (out, into) = (Self::counts(&self.send_per_rank, width)?, Self::counts(&self.recv_per_rank, width)?);
        Ok(self.group.all_to_all_v(&send, &out, &into))
    }

    /// The gradient `[num_local, width]` of the local operand from the gradient `g [halo,
    /// width]` of the halo rows: sent back to the owners, summed into the rows they sent.
    pub(crate) fn backward<T: Equivalence + Copy + Default + AddAssign>(
        &self,
        g: &[T],
        width: usize,
    ) -> Result<Vec<T>> {
        debug_assert_eq!(g.len(), self.halo.len() * width);
        let (out, into) = (Self::counts(&self.recv_per_rank, width)?, Self::counts(&self.send_per_rank, width)?);
        let back = self.group.all_to_all_v(g, &out, &into);
        let mut dx = vec![T::default(); self.num_local * width];
        for (k, &i) in self.send_rows.iter().enumerate() {
            for (d, &v) in dx[i * width..(i + 1) * width].iter_mut().zip(&back[k * width..(k + 1) * width]) {
                *d += v;
            }
        }
        Ok(dx)
    }
}
