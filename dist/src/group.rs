//! The process group: MPI's initialisation and the few collectives the rest of the crate uses,
//! on host buffers of plain numbers.
//!
//! One [`ProcessGroup`] a process ([`init_process_group`], after torch's
//! `torch.distributed.init_process_group`). It owns rsmpi's `Universe`, whose drop finalises MPI,
//! behind an `Arc` that every plan and autodiff node holding a communication keeps: MPI is
//! finalised only when the last of them is gone, never under a backward pass that still has to
//! exchange. Every call goes to `MPI_COMM_WORLD` (rsmpi's world handle is never freed, so no
//! handle outlives the finalisation either).
//!
//! MPI is initialised with `MPI_THREAD_MULTIPLE`: burn runs a backward pass in whichever thread
//! calls it, so the exchanges of [`crate::DistCsr`] may come from any thread. An MPI without it
//! is refused at initialisation rather than misused later.

use crate::invalid;
use mpi::collective::SystemOperation;
use mpi::datatype::{Partition, PartitionMut};
use mpi::environment::{Threading, Universe};
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives, Equivalence};
use mpi::Count;
use sparsegrad_backend::Result;
use std::sync::Arc;

/// The MPI processes of a run (`MPI_COMM_WORLD`): this process's rank, their number, and the
/// collectives on host buffers. Cheap to clone; MPI is finalised when the last clone (and the
/// last [`crate::DistCsr`] and autodiff node built on it) is dropped.
#[derive(Clone)]
pub struct ProcessGroup {
    inner: Arc<Inner>,
}

struct Inner {
    // Finalises MPI on drop: kept, never read.
    _universe: Universe,
    rank: usize,
    size: usize,
}

impl std::fmt::Debug for ProcessGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ProcessGroup {{ rank: {}, world_size: {} }}", self.inner.rank, self.inner.size)
    }
}

/// Initialises MPI (`MPI_Init_thread` with `MPI_THREAD_MULTIPLE`) and returns the group of all
/// processes `mpirun` started (a single process outside `mpirun`). An error when MPI was
/// initialised already in this process or cannot run multi-threaded.
pub fn init_process_group() -> Result<ProcessGroup> {
    const OP: &str = "init_process_group";
    let (universe, threading) = mpi::initialize_with_threading(Threading::Multiple)
        .ok_or_else(|| invalid(OP, "MPI is initialised already in this process (one group a process)"))?;
    if threading != Threading::Multiple {
        return Err(invalid(OP, format!("MPI gives {threading:?} threading; MPI_THREAD_MULTIPLE is needed")));
    }
    let world = universe.world();
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    Ok(ProcessGroup { inner: Arc::new(Inner { _universe: universe, rank, size }) })
}

/// Element counts and displacements of a variable all-to-all, as MPI takes them (C ints).
pub(crate) struct Counts {
    pub(crate) counts: Vec<Count>,
    pub(crate) displs: Vec<Count>,
}

impl Counts {
    /// The counts `per_rank[r]` (elements), displaced one after another. An error when the total
    /// passes what a C int addresses (MPI's counts).
    pub(crate) fn new(per_rank: impl IntoIterator<Item = usize>, operation: &'static str) -> Result<Counts> {
        let (mut counts, mut displs, mut at) = (Vec::new(), Vec::new(), 0usize);
        for c in per_rank {
            let too_big = || invalid(operation, format!("{} elements in one exchange pass MPI's int counts", at + c));
            displs.push(Count::try_from(at).map_err(|_| too_big())?);
            counts.push(Count::try_from(c).map_err(|_| too_big())?);
            at = at.checked_add(c).filter(|&t| t <= Count::MAX as usize).ok_or_else(too_big)?;
        }
        Ok(Counts { counts, displs })
    }

    pub(crate) fn total(&self) -> usize {
        self.counts.iter().map(|&c| c as usize).sum()
    }
}

impl ProcessGroup {
    /// This process's rank, `0..world_size()`.
    pub fn rank(&self) -> usize {
        self.inner.rank
    }

    /// The number of processes.
    pub fn world_size(&self) -> usize {
        self.inner.size
    }

    fn world(&self) -> SimpleCommunicator {
        SimpleCommunicator::world()
    }

    /// Waits for every rank (`MPI_Barrier`).
    pub fn barrier(&self) {
        self.world().barrier();
    }

    /// `buf` summed over the ranks, in place on every rank (`MPI_Allreduce` with `MPI_SUM`; the
    /// same length on every rank, which the caller guarantees).
    pub fn all_reduce_sum<T: Equivalence + Copy>(&self, buf: &mut [T]) {
        let send = buf.to_vec();
        self.world().all_reduce_into(&send[..], buf, SystemOperation::sum());
    }

    /// The maximum of `value` over the ranks.
    pub fn all_reduce_max(&self, value: f64) -> f64 {
        let mut out = 0.0f64;
        self.world().all_reduce_into(&value, &mut out, SystemOperation::max());
        out
    }

    /// One value from every rank, in rank order (`MPI_Allgather`).
    pub fn all_gather<T: Equivalence + Copy + Default>(&self, value: T) -> Vec<T> {
        let mut out = vec![T::default(); self.world_size()];
        self.world().all_gather_into(&value, &mut out[..]);
        out
    }

    /// A variable all-to-all (`MPI_Alltoallv`): `send`, laid out by `send_counts`, goes out; what
    /// comes in is laid out by `recv_counts` (which must be what the others send this rank: the
    /// callers take both from one plan).
    pub(crate) fn all_to_all_v<T: Equivalence + Copy + Default>(
        &self,
        send: &[T],
        send_counts: &Counts,
        recv_counts: &Counts,
    ) -> Vec<T> {
        debug_assert_eq!(send.len(), send_counts.total());
        let mut recv = vec![T::default(); recv_counts.total()];
        let out = Partition::new(send, &send_counts.counts[..], &send_counts.displs[..]);
        let mut into = PartitionMut::new(&mut recv[..], &recv_counts.counts[..], &recv_counts.displs[..]);
        self.world().all_to_all_varcount_into(&out, &mut into);
        recv
    }

    /// `counts[r]` sent to rank `r`; returns what every rank sent this one (`MPI_Alltoall`).
    pub(crate) fn all_to_all_counts(&self, counts: &[u64]) -> Vec<u64> {
        let mut recv = vec![0u64; self.world_size()];
        self.world().all_to_all_into(counts, &mut recv[..]);
        recv
    }

    /// An error on every rank unless `value` is the same on all of them (what `what` names, for
    /// the message): the check of inputs that must agree across ranks.
    pub(crate) fn check_same(&self, value: u64, operation: &'static str, what: &str) -> Result<()> {
        let all = self.all_gather(value);
        if all.iter().any(|&v| v != all[0]) {
            return Err(invalid(operation, format!("{what} differs between ranks ({all:?})")));
        }
        Ok(())
    }
}
