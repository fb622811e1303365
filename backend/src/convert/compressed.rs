//! Building a compressed layout (CSR, CSC, BSR, BSC): from coalesced COO directly, on the device
//! where the indices live, or from [`Entries`] on the host; every batch entry must store the same
//! number of elements.

use super::Entries;
use crate::algebra::{compress, keys::FastDiv, sort};
use crate::alloc::try_filled;
use crate::error::{Result, SparseError};
use crate::host::with_ints;
use crate::index_kernels::device_compress_sorted;
use crate::layout::Layout;
use crate::match_ints;
use crate::movement::scatter_add_rows;
use crate::tensor::{Indices, SparseTensor};
use crate::util::{index_dtype_for, int_tensor, numel, reshape, try_int_tensor};
use burn::tensor::Tensor;

impl<const D: usize> SparseTensor<D> {
    /// A coalesced 2-sparse-dim COO tensor is already in CSR order: only the row indices are
    /// compressed; the column indices and the values are reused as they are.
    pub(super) fn coalesced_coo_to_csr(&self) -> Result<Self> {
        let Indices::Coo(indices) = &self.indices else { unreachable!("COO layout") };
        let (m, nnz) = (self.shape[0], self.nnz());
        // Row pointers count entries: widened when the entries outnumber the dtype's range.
        let dtype = index_dtype_for(self.index_dtype(), nnz as u64);
        let plain_indices = if dtype == self.index_dtype() { indices.clone() } else { indices.clone().cast(dtype) };
        let rows = crate::util::reshape_int(indices.clone().slice([0..1, 0..nnz]), [nnz]);
        let compressed = match device_compress_sorted(&rows, m) {
            // Compressed on the device (`IndexKernels`), then in the dtype chosen above.
            Some(c) => crate::util::reshape_int(if c.dtype() == dtype { c } else { c.cast(dtype) }, [1, m + 1]),
            None => {
                let c = with_ints(indices, |s| match_ints!(s, i => compress::compress_sorted(&i[..nnz], m)))?;
                try_int_tensor(c, [1, m + 1], dtype, &self.device())?
            }
        };
        let plain = crate::util::reshape_int(plain_indices.slice([1..2, 0..nnz]), [1, nnz]);
        Ok(Self {
            layout: Layout::Csr,
            batch_dim: 0,
            blocksize: None,
            indices: Indices::Compressed { compressed, plain, transposed: Default::default() },
            ..self.clone()
        })
    }

    /// A 2-sparse-dim COO tensor (at least two entries) in CSR or CSC where the backend
    /// coalesces on the device (`IndexKernels`: a Cube device, reading back two integers):
    /// coalesced there in the target's order (by column for CSC, through the swapped
    /// coordinates of the transpose, whose CSR arrays are this tensor's CSC arrays), then
    /// compressed there. `None` elsewhere.
    pub(super) fn device_compressed(&self, layout: Layout) -> Option<Result<Self>> {
        let Indices::Coo(indices) = &self.indices else { return None };
        let nnz = self.nnz();
        if nnz < 2 {
            return None;
        }
        let source = if layout == Layout::Csr {
            self.clone()
        } else {
            let swapped =
                Tensor::cat(vec![indices.clone().slice([1..2, 0..nnz]), indices.clone().slice([0..1, 0..nnz])], 0);
            let mut shape = self.shape;
            shape.swap(0, 1);
            Self { shape, indices: Indices::Coo(swapped), coalesced: false, ..self.clone() }
        };
        let sorted = source.device_coalesce()?;
        Some(sorted.coalesced_coo_to_csr().map(|c| {
            if layout == Layout::Csr {
                c
            } else {
                Self { layout: Layout::Csc, shape: self.shape, ..c }
            }
        }))
    }

    pub(super) fn entries_to_compressed(&self, e: Entries, layout: Layout, [br, bc]: [usize; 2]) -> Result<Self> {
        let b = e.sizes.len() - 2;
        let (rows, cols) = (e.sizes[b], e.sizes[b + 1]);
        for (dim, size, block) in [(b, rows, br), (b + 1, cols, bc)] {
            if block == 0 || size % block != 0 {
                return Err(SparseError::BlocksizeMismatch { dim, size, block });
            }
        }
        let (mb, nb) = (rows / br, cols / bc);
        let (n_comp, n_plain) = if layout.compresses_rows() { (mb, nb) } else { (nb, mb) };
        let batch = numel(&e.sizes[..b]);
        let (rows64, cols64) = (rows as u64, cols as u64);
        let mut block_keys = Vec::with_capacity(e.keys.len());
        let mut inner = Vec::with_capacity(e.keys.len());
        let (plane, by_col) = (FastDiv::new(rows64 * cols64), FastDiv::new(cols64));
        let (by_br, by_bc) = (FastDiv::new(br as u64), FastDiv::new(bc as u64));
        for &k in &e.keys {
            let (bi, rem) = plane.divmod(k);
            let (r, c) = by_col.divmod(rem);
            let ((brow, ri), (bcol, ci)) = (by_br.divmod(r), by_bc.divmod(c));
            let (comp, plain) = if layout.compresses_rows() { (brow, bcol) } else { (bcol, brow) };
            block_keys.push((bi * n_comp as u64 + comp) * n_plain as u64 + plain);
            inner.push(ri * bc as u64 + ci);
        }
        let plan = sort::coalesce_plan(block_keys, &[batch, n_comp, n_plain]);
        let nblocks = plan.unique;
        let block_len = (br * bc) as i64;
        let dense = e.values.dims()[1];
        let values = if plan.identity && br * bc == 1 {
            e.values
        } else {
            let targets = plan.segment.iter().zip(&inner).map(|(&s, &i)| s * block_len + i as i64).collect();
            scatter_add_rows(e.values, targets, nblocks * br * bc)
        };
        let values = reshape(values, [nblocks, br * bc * dense]);
        let mut rows = plan.coords.chunks_exact(nblocks.max(1)).map(|r| r.to_vec());
        let (batch_of, comp, plain) = match nblocks {
            0 => (Vec::new(), Vec::new(), Vec::new()),
            _ => (rows.next().expect("batch row"), rows.next().expect("comp row"), rows.next().expect("plain row")),
        };
        let batch_of: Vec<usize> = batch_of.into_iter().map(|b| b as usize).collect();
        let nse = equal_batch_nse(&batch_of, batch)?;
        self.assemble_compressed(layout, [br, bc], CompressedParts { comp, plain, values, batch, nse, n_comp })
    }

    fn assemble_compressed(&self, layout: Layout, blocksize: [usize; 2], parts: CompressedParts) -> Result<Self> {
        let CompressedParts { comp, plain, values, batch, nse, n_comp } = parts;
        // Widened when the entries per batch entry outnumber the dtype's range (the dims fit it:
        // they are this tensor's own).
        let dtype = index_dtype_for(self.index_dtype(), nse as u64);
        let b = self.shape_batch_dim_for_compressed();
        let device = self.device();
        let compressed = compress::compress(&comp, batch, nse, n_comp)?;
        Ok(Self {
            layout,
            batch_dim: b,
            sparse_dim: 2,
            blocksize: layout.is_blocked().then_some(blocksize),
            indices: Indices::Compressed {
                compressed: try_int_tensor(compressed, [batch, n_comp + 1], dtype, &device)?,
                plain: int_tensor(plain, [batch, nse], dtype, &device),
                transposed: Default::default(),
            },
            values,
            coalesced: true,
            ..self.clone()
        })
    }

    /// Batch dims of this tensor viewed as compressed: all indexed dims but the last two.
    fn shape_batch_dim_for_compressed(&self) -> usize {
        match self.layout {
            Layout::Coo => self.sparse_dim - 2,
            _ => self.batch_dim,
        }
    }
}

/// A compressed layout's blocks on the host, sorted, before they become its tensors.
struct CompressedParts {
    /// Each block's compressed coordinate (its row, or column for CSC and BSC).
    comp: Vec<i64>,
    /// Each block's plain coordinate.
    plain: Vec<i64>,
    /// The blocks' values, a row each.
    values: Tensor<2>,
    /// Batch entries.
    batch: usize,
    /// Blocks per batch entry.
    nse: usize,
    /// Compressed rows (or columns) per batch entry.
    n_comp: usize,
}

/// The common per-batch count of sorted batch ids, or the first batch entry that differs.
fn equal_batch_nse(batch_of: &[usize], batch: usize) -> Result<usize> {
    if batch == 0 {
        return Ok(0);
    }
    let mut counts = try_filled(batch, 0usize, "per-batch entry counts")?;
    for &b in batch_of {
        counts[b] += 1;
    }
    match counts.iter().position(|&c| c != counts[0]) {
        None => Ok(counts[0]),
        Some(b) => Err(SparseError::UnequalBatchNse { batch: b, nse: counts[b], expected: counts[0] }),
    }
}
