//! [`DistCsr`]: a square sparse matrix `A [n, n]` partitioned by rows over the ranks, and its
//! differentiable product with a dense operand partitioned the same way.
//!
//! Rank `r` holds the rows of `A` that it owns (a [`RowPartition`]) as a local CSR block whose
//! columns are renumbered: its own rows first (`0..local`, the local index of each), then its
//! halo (`local..local + halo`, the plan's order). `mm(X_local)` is then
//! `mm(A_local, cat(X_local, halo_exchange(X_local)))`: the exchange moves exactly the halo rows,
//! the product is the crate's ordinary local SpMM, and the gradients come from burn's autodiff
//! through both (the values' gradient locally, the operand's gradient through the exchange's
//! reverse). The plan is built once, at construction.

use crate::exchange::{HaloExchange, Plan};
use crate::group::ProcessGroup;
use crate::halo::HaloPlan;
use crate::invalid;
use crate::partition::RowPartition;
use burn::backend::{Dispatch, DispatchDevice};
use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use sparsegrad_autodiff::matmul::try_mm;
use sparsegrad_backend::host::with_ints;
use sparsegrad_backend::{Result, SparseError, SparseTensor};
use std::sync::Arc;

/// This rank's rows of `A`, with global column ids: the input of [`DistCsr::from_rows`].
#[derive(Debug, Clone)]
pub struct RowBlock {
    /// Row pointers over the rank's rows (`rows + 1`, from 0 to the entry count).
    pub crow: Vec<usize>,
    /// The global column of each entry (`0..n`).
    pub col: Vec<usize>,
    /// The values, one per entry, on the device the products run on (they may be tracked: their
    /// gradient comes back through [`DistCsr::mm`]).
    pub values: Tensor<1>,
}

/// The volume of one exchange of a [`DistCsr`] on this rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HaloStats {
    /// Rows this rank owns.
    pub local_rows: usize,
    /// Stored entries of its block.
    pub local_nnz: usize,
    /// Rows it receives a forward exchange (its halo).
    pub rows_received: usize,
    /// Rows it sends a forward exchange (a row needed by two ranks counts twice).
    pub rows_sent: usize,
}

impl HaloStats {
    /// Bytes this rank receives in one exchange of a `width`-column operand of `dtype`; the
    /// backward exchange moves as many the other way.
    pub fn bytes_received(&self, width: usize, dtype: DType) -> usize {
        self.rows_received * width * dtype.size()
    }
}

/// A square sparse matrix partitioned by rows over the ranks of a [`ProcessGroup`], with a
/// differentiable [`DistCsr::mm`]. See the crate's docs for a worked example.
#[derive(Debug, Clone)]
pub struct DistCsr {
    plan: Arc<Plan>,
    partition: Arc<RowPartition>,
    /// `[local, local + halo]`, columns renumbered.
    local: SparseTensor<2>,
    /// The block's pattern on the host, columns renumbered (for `global_entries`).
    crow: Arc<Vec<usize>>,
    col: Arc<Vec<usize>>,
}

impl DistCsr {
    /// The block of `group.rank()` from every rank's `block` (collective: every rank calls it,
    /// with the same `partition`). An error, on every rank, when the partition differs between
    /// ranks or has another number of parts than the group has ranks; on the calling rank when
    /// its block is malformed (a rank then fails alone and the others wait: check blocks before).
    pub fn from_rows(group: &ProcessGroup, partition: &RowPartition, block: RowBlock) -> Result<DistCsr> {
        const OP: &str = "DistCsr::from_rows";
        let (rank, n) = (group.rank(), partition.num_rows());
        if partition.world_size() != group.world_size() {
            return Err(invalid(
                OP,
                format!("a partition in {} parts for {} ranks", partition.world_size(), group.world_size()),
            ));
        }
        group.check_same(partition.fingerprint(), OP, "the partition")?;
        let local = partition.rows(rank).len();
        let RowBlock { crow, col, values } = block;
        if crow.len() != local + 1 || crow[0] != 0 || crow.windows(2).any(|w| w[0] > w[1]) || crow[local] != col.len() {
            return Err(invalid(
                OP,
                format!(
                    "rank {rank} owns {local} rows: crow must rise from 0 to the {} entries over {} pointers",
                    col.len(),
                    local + 1
                ),
            ));
        }
        if values.dims() != [col.len()] {
            return Err(SparseError::ShapeMismatch {
                component: "values",
                expected: vec![col.len()],
                actual: values.dims().to_vec(),
            });
        }
        if let Some(&j) = col.iter().find(|&&j| j >= n) {
            return Err(invalid(OP, format!("column {j} of rank {rank}'s block is outside the {n} rows")));
        }
        check_device(&values.device(), OP)?;
        let plan = HaloPlan::build(group, partition, &col)?;
        // Renumber: own rows by their local index, halo rows after them in the plan's order (a
        // binary search on its (owner, id) order); then each row sorted by the new numbers, the
        // values permuted with it (a differentiable `select`, skipped when nothing moves).
        let renumber = |j: usize| {
            let owner = partition.owner(j);
            if owner == rank {
                partition.local_index(j)
            } else {
                let at = plan.halo.binary_search_by_key(&(owner, j), |&h| (partition.owner(h), h));
                local + at.expect("every remote column is in the halo")
            }
        };
        let mut entries: Vec<(usize, usize)> = Vec::with_capacity(col.len());
        for i in 0..local {
            let start = entries.len();
            entries.extend((crow[i]..crow[i + 1]).map(|e| (renumber(col[e]), e)));
            entries[start..].sort_unstable();
        }
        let moved = entries.iter().enumerate().any(|(k, &(_, e))| k != e);
        let values = if moved {
            let order = entries.iter().map(|&(_, e)| e as i64).collect::<Vec<_>>();
            let (len, device) = (order.len(), values.device());
            values.select(0, Tensor::<1, Int>::from_data(TensorData::new(order, [len]), (&device, DType::I64)))
        } else {
            values
        };
        let new_col: Vec<usize> = entries.into_iter().map(|(c, _)| c).collect();
        let width = local + plan.halo.len();
        let tensor = csr_tensor(&crow, &new_col, values, [local, width])?;
        Ok(DistCsr {
            plan: Arc::new(Plan(plan)),
            partition: Arc::new(partition.clone()),
            local: tensor,
            crow: Arc::new(crow),
            col: Arc::new(new_col),
        })
    }

    /// This rank's block of `a [n, n]`, a matrix every rank holds whole (built the same way on
    /// each: generated from a seed, or read from one file). Its values are selected from `a`'s
    /// (a differentiable `select`). Collective, as [`DistCsr::from_rows`].
    pub fn from_global(group: &ProcessGroup, partition: &RowPartition, a: &SparseTensor<2>) -> Result<DistCsr> {
        const OP: &str = "DistCsr::from_global";
        let [n, m] = a.shape();
        if n != m || n != partition.num_rows() {
            return Err(invalid(
                OP,
                format!("a square matrix of the partition's {} rows, got [{n}, {m}]", partition.num_rows()),
            ));
        }
        let csr = a.to_sparse_csr()?;
        if csr.dense_dim() > 0 {
            return Err(invalid(OP, "hybrid matrices are not supported"));
        }
        let (crow_t, col_t) = csr.compressed_indices_flat().expect("a CSR tensor");
        let g_crow = with_ints(&crow_t, |v| v.to_i64());
        let g_col = with_ints(&col_t, |v| v.to_i64());
        let (mut crow, mut col, mut picked) = (vec![0usize], Vec::new(), Vec::new());
        for &i in partition.rows(group.rank()) {
            let (start, end) = (g_crow[i] as usize, g_crow[i + 1] as usize);
            col.extend(g_col[start..end].iter().map(|&j| j as usize));
            picked.extend(start as i64..end as i64);
            crow.push(col.len());
        }
        let device = csr.device();
        let len = picked.len();
        let values = csr
            .values_flat()
            .reshape([csr.nnz()])
            .select(0, Tensor::<1, Int>::from_data(TensorData::new(picked, [len]), (&device, DType::I64)));
        DistCsr::from_rows(group, partition, RowBlock { crow, col, values })
    }

    /// `A X` for this rank's rows: `x [local, d]` is this rank's rows of `X` (in the order of
    /// `partition.rows(rank)`), the result `[local, d]` this rank's rows of `A X`. Collective:
    /// every rank calls it, in the same order as its other distributed products.
    /// Differentiable with respect to `x` (through the exchange) and to the values. An error
    /// for a wrong shape, a dtype other than f32 / f64 or a device other than Flex; the same
    /// check passes or fails on every rank when the ranks call it alike.
    pub fn mm(&self, x: Tensor<2>) -> Result<Tensor<2>> {
        const OP: &str = "DistCsr::mm";
        let [rows, width] = x.dims();
        let plan = &self.plan.0;
        if rows != plan.num_local {
            return Err(SparseError::ShapeMismatch {
                component: "x",
                expected: vec![plan.num_local, width],
                actual: vec![rows, width],
            });
        }
        if !matches!(x.dtype(), DType::F32 | DType::F64) || x.dtype() != self.local.dtype() {
            return Err(invalid(
                OP,
                format!("x is {:?} and A {:?}; both f32 or both f64", x.dtype(), self.local.dtype()),
            ));
        }
        check_device(&x.device(), OP)?;
        let most = plan.rows_sent().max(plan.rows_received()).max(plan.num_local);
        if most.checked_mul(width).is_none_or(|e| e > i32::MAX as usize) {
            return Err(invalid(OP, format!("{most} rows of {width} in one exchange pass MPI's int counts")));
        }
        let halo = Tensor::from_dispatch(<Dispatch as HaloExchange>::halo_exchange(
            x.clone().into_dispatch(),
            self.plan.clone(),
        ));
        // Always concatenated, an empty halo too: the exchange must be in every rank's graph, or
        // its backward (collective) would not run here while the others wait for it.
        try_mm(&self.local, Tensor::cat(vec![x, halo], 0))
    }

    /// This rank's block with the columns renumbered (`[local, local + halo]`): what
    /// [`DistCsr::mm`] multiplies.
    pub fn local(&self) -> &SparseTensor<2> {
        &self.local
    }

    /// The values of this rank's block, in its storage order (see [`DistCsr::global_entries`]).
    pub fn values(&self) -> Tensor<1> {
        let nnz = self.local.nnz();
        self.local.values_flat().reshape([nnz])
    }

    /// The same matrix with other values (`[nnz]`, the storage order of [`DistCsr::values`]),
    /// sharing the pattern and the halo plan: no communication.
    pub fn with_values(&self, values: Tensor<1>) -> Result<DistCsr> {
        let nnz = self.col.len();
        if values.dims() != [nnz] {
            return Err(SparseError::ShapeMismatch {
                component: "values",
                expected: vec![nnz],
                actual: values.dims().to_vec(),
            });
        }
        check_device(&values.device(), "DistCsr::with_values")?;
        let shape = self.local.shape();
        Ok(DistCsr { local: csr_tensor(&self.crow, &self.col, values, shape)?, ..self.clone() })
    }

    /// The global `(row, column)` of each stored entry of this rank's block, in storage order.
    pub fn global_entries(&self) -> Vec<(usize, usize)> {
        let plan = &self.plan.0;
        let rows = self.partition.rows(plan.group.rank());
        let column = |c: usize| if c < plan.num_local { rows[c] } else { plan.halo[c - plan.num_local] };
        (0..plan.num_local)
            .flat_map(|i| (self.crow[i]..self.crow[i + 1]).map(move |e| (rows[i], column(self.col[e]))))
            .collect()
    }

    /// The partition of the rows.
    pub fn partition(&self) -> &RowPartition {
        &self.partition
    }

    /// The global rows this rank owns, increasing (the rows of `mm`'s operand and result).
    pub fn rows(&self) -> &[usize] {
        self.partition.rows(self.plan.0.group.rank())
    }

    /// The volume of one exchange on this rank.
    pub fn halo_stats(&self) -> HaloStats {
        let plan = &self.plan.0;
        HaloStats {
            local_rows: plan.num_local,
            local_nnz: self.col.len(),
            rows_received: plan.rows_received(),
            rows_sent: plan.rows_sent(),
        }
    }
}

/// A CSR tensor `shape` from host arrays, int64 indices, on `values`' device.
fn csr_tensor(crow: &[usize], col: &[usize], values: Tensor<1>, shape: [usize; 2]) -> Result<SparseTensor<2>> {
    let device = values.device();
    let ints = |v: &[usize]| {
        let v: Vec<i64> = v.iter().map(|&x| x as i64).collect();
        let len = v.len();
        Tensor::<1, Int>::from_data(TensorData::new(v, [len]), (&device, DType::I64))
    };
    SparseTensor::csr(ints(crow), ints(col), values, shape)
}

/// The exchange runs on Flex (host buffers; its `HaloExchange` impl), autodiff or not.
fn check_device(device: &Device, operation: &'static str) -> Result<()> {
    match device.clone().without_autodiff().as_dispatch() {
        DispatchDevice::Flex(_) => Ok(()),
        #[allow(unreachable_patterns)]
        other => Err(invalid(operation, format!("the device {other:?}: distributed products run on Flex"))),
    }
}
