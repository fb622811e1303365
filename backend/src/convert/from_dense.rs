//! Dense -> sparse: [`dense_to_sparse`] stores a dense tensor's non-zero elements in the layout a
//! [`SparseSpec`] names (the kernels behind `ToSparse`), finding them on the device where it can.

use crate::algebra::{
    compress, keys,
    keys::FastDiv,
    nonzero::{dense_to_csr, nonzero_items},
    validate,
};
use crate::error::{Result, SparseError};
use crate::host::{with_floats, FloatSlice};
use crate::index_kernels::{device_compress_sorted, device_delinearize, device_nonzero_rows};
use crate::layout::Layout;
use crate::match_floats;
use crate::movement::{gather_rows, gather_rows_at};
use crate::tensor::{Indices, SparseTensor, Trust};
use crate::util::{int_tensor, numel, reshape};
use burn::tensor::{DType, Int, Tensor, TensorData};

/// How a dense tensor is to be stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SparseSpec {
    /// The target layout.
    pub layout: Layout,
    /// Trailing dims kept dense (hybrid); for COO the sparse dims are the rest.
    pub dense_dim: usize,
    /// Block size for BSR/BSC.
    pub blocksize: Option<[usize; 2]>,
    /// Index dtype (torch: int64).
    pub index_dtype: DType,
}

impl SparseSpec {
    /// `layout` with no dense dims, no blocks and int64 indices.
    pub fn new(layout: Layout) -> Self {
        Self { layout, dense_dim: 0, blocksize: None, index_dtype: DType::I64 }
    }
}

/// Items of `flat` ([items, item_len]) holding a non-zero element.
fn nonzero_rows(flat: &Tensor<2>) -> Vec<i64> {
    let item = flat.dims()[1];
    with_floats(flat, |s| match_floats!(s, v => nonzero_items(v, item)))
}

/// The positions of the items of `flat [items, item]` that hold a non-zero and their
/// coordinates `[sizes.len(), n]` over `sizes` in `index_dtype`, found on the tensor's device
/// (`IndexKernels`: a Cube device reads back only their count); `None` where the backend finds
/// them on the host.
fn device_nonzeros(flat: &Tensor<2>, sizes: &[usize], index_dtype: DType) -> Option<(Tensor<1, Int>, Tensor<2, Int>)> {
    let ids = device_nonzero_rows(flat)?;
    let coords = device_delinearize(&ids, sizes, index_dtype)?;
    Some((ids, coords))
}

/// Dense -> sparse in any layout (the body of `ToSparse`).
pub fn dense_to_sparse<const D: usize>(dense: Tensor<D>, spec: SparseSpec) -> Result<SparseTensor<D>> {
    crate::util::check_backend(&dense.device())?;
    let shape = dense.dims();
    let k = spec.dense_dim;
    if k > D || (spec.layout == Layout::Coo && k == D) || (spec.layout.is_compressed() && k + 2 > D) {
        return Err(SparseError::InvalidArgument {
            operation: "to_sparse",
            message: format!(
                "dense_dim {k} leaves too few sparse dims in a tensor of rank {D} for {}",
                spec.layout.name()
            ),
        });
    }
    validate::check_shape(&shape[..D - k], spec.index_dtype)?;
    validate::check_numel(&shape)?;
    let device = dense.device();
    let m = D - k;
    let item = numel(&shape[m..]);
    if spec.layout == Layout::Coo {
        let items = numel(&shape[..m]);
        let flat = reshape(dense, [items, item]);
        let (indices, values) = match device_nonzeros(&flat, &shape[..m], spec.index_dtype) {
            Some((ids, indices)) => (indices, gather_rows_at(flat, ids)),
            None => {
                let ids = nonzero_rows(&flat);
                let keys_u: Vec<u64> = ids.iter().map(|&i| i as u64).collect();
                let n = ids.len();
                let coords = keys::delinearize(&keys_u, &shape[..m]);
                (int_tensor(coords, [m, n], spec.index_dtype, &device), gather_rows(flat, ids))
            }
        };
        return Ok(SparseTensor {
            layout: Layout::Coo,
            shape,
            batch_dim: 0,
            sparse_dim: m,
            dense_dim: k,
            blocksize: None,
            indices: Indices::Coo(indices),
            values,
            coalesced: true,
            trust: Trust::Checked,
        });
    }
    let b = D - 2 - k;
    let [br, bc] = if spec.layout.is_blocked() {
        spec.blocksize.ok_or_else(|| SparseError::InvalidArgument {
            operation: "to_sparse",
            message: format!("{} needs a blocksize", spec.layout.name()),
        })?
    } else {
        [1, 1]
    };
    let (rows, cols) = (shape[b], shape[b + 1]);
    for (dim, size, block) in [(b, rows, br), (b + 1, cols, bc)] {
        if block == 0 || size % block != 0 {
            return Err(SparseError::BlocksizeMismatch { dim, size, block });
        }
    }
    let batch = numel(&shape[..b]);
    let (mb, nb) = (rows / br, cols / bc);
    let blocks = reshape(dense, [batch, mb, br, nb, bc, item]);
    let (n_comp, n_plain, flat) = if spec.layout == Layout::Csr {
        (mb, nb, reshape(blocks, [batch * mb * nb, item]))
    } else if spec.layout.compresses_rows() {
        (mb, nb, reshape(blocks.permute([0, 1, 3, 2, 4, 5]), [batch * mb * nb, br * bc * item]))
    } else {
        (nb, mb, reshape(blocks.permute([0, 3, 1, 2, 4, 5]), [batch * mb * nb, br * bc * item]))
    };
    if spec.layout == Layout::Csr && batch == 1 {
        if let Some((ids, coords, crow)) =
            device_nonzeros(&flat, &[rows, cols], spec.index_dtype).and_then(|(ids, coords)| {
                let nse = ids.dims()[0];
                let row = crate::util::reshape_int(coords.clone().slice([0..1, 0..nse]), [nse]);
                Some((ids, coords, device_compress_sorted(&row, rows)?))
            })
        {
            let nse = ids.dims()[0];
            let (max, name) = validate::index_dtype_max(spec.index_dtype)?;
            if nse as u128 > max as u128 {
                return Err(SparseError::DimensionTooLarge {
                    component: "nse",
                    dim: b,
                    size: nse,
                    index_dtype: name,
                    max,
                });
            }
            let crow = if crow.dtype() == spec.index_dtype { crow } else { crow.cast(spec.index_dtype) };
            return Ok(SparseTensor {
                layout: Layout::Csr,
                shape,
                batch_dim: b,
                sparse_dim: 2,
                dense_dim: k,
                blocksize: None,
                indices: Indices::Compressed {
                    compressed: crate::util::reshape_int(crow, [1, rows + 1]),
                    plain: coords.slice([1..2, 0..nse]),
                    transposed: Default::default(),
                },
                values: gather_rows_at(flat, ids),
                coalesced: true,
                trust: Trust::Checked,
            });
        }
    }
    if spec.layout == Layout::Csr && item == 1 && k == 0 && !flat.is_tracked() {
        if let Some(s) = untracked_csr(&flat, shape, batch, rows, cols, spec.index_dtype)? {
            return Ok(s);
        }
    }
    let ids = nonzero_rows(&flat);
    // One pass: plain indices, per-batch counts and per-segment counts (no per-entry temporaries).
    let (plane, by_plain) = (FastDiv::new((n_comp * n_plain) as u64), FastDiv::new(n_plain as u64));
    let mut compressed = vec![0i64; batch * (n_comp + 1)];
    let mut per_batch = vec![0usize; batch];
    let mut plain = Vec::with_capacity(ids.len());
    for &i in &ids {
        let (bi, rem) = plane.divmod(i as u64);
        let (c, p) = by_plain.divmod(rem);
        per_batch[bi as usize] += 1;
        compressed[bi as usize * (n_comp + 1) + c as usize + 1] += 1;
        plain.push(p as i64);
    }
    let nse = per_batch.first().copied().unwrap_or(0);
    if let Some(bi) = per_batch.iter().position(|&c| c != nse) {
        return Err(SparseError::UnequalBatchNse { batch: bi, nse: per_batch[bi], expected: nse });
    }
    compress::prefix_sum_segments(&mut compressed, batch, n_comp);
    let (max, name) = validate::index_dtype_max(spec.index_dtype)?;
    if nse as u128 > max as u128 {
        return Err(SparseError::DimensionTooLarge { component: "nse", dim: b, size: nse, index_dtype: name, max });
    }
    let values = gather_rows(flat, ids);
    Ok(SparseTensor {
        layout: spec.layout,
        shape,
        batch_dim: b,
        sparse_dim: 2,
        dense_dim: k,
        blocksize: spec.layout.is_blocked().then_some([br, bc]),
        indices: Indices::Compressed {
            compressed: int_tensor(compressed, [batch, n_comp + 1], spec.index_dtype, &device),
            plain: int_tensor(plain, [batch, nse], spec.index_dtype, &device),
            transposed: Default::default(),
        },
        values,
        coalesced: true,
        trust: Trust::Checked,
    })
}

/// Dense -> (batched) CSR without a tracked input: pattern and values in one host kernel, no
/// position list and no separate gather. `None` for dtypes the host kernel does not cover.
fn untracked_csr<const D: usize>(
    flat: &Tensor<2>,
    shape: [usize; D],
    batch: usize,
    rows: usize,
    cols: usize,
    index_dtype: DType,
) -> Result<Option<SparseTensor<D>>> {
    let device = flat.device();
    let dtype = flat.dtype();
    let host = with_floats(flat, |s| match s {
        FloatSlice::F32(v) => {
            let (crow, col, val) = dense_to_csr(v, batch * rows, cols);
            {
                let n = val.len();
                Some((crow, col, TensorData::new(val, [n, 1])))
            }
        }
        FloatSlice::F64(v) => {
            let (crow, col, val) = dense_to_csr(v, batch * rows, cols);
            {
                let n = val.len();
                Some((crow, col, TensorData::new(val, [n, 1])))
            }
        }
        _ => None,
    });
    let Some((crow, col, val)) = host else { return Ok(None) };
    let nse = if batch == 0 { 0 } else { crow[rows] as usize };
    for b in 0..batch {
        let count = (crow[(b + 1) * rows] - crow[b * rows]) as usize;
        if count != nse {
            return Err(SparseError::UnequalBatchNse { batch: b, nse: count, expected: nse });
        }
    }
    let (max, name) = validate::index_dtype_max(index_dtype)?;
    if nse as u128 > max as u128 {
        return Err(SparseError::DimensionTooLarge { component: "nse", dim: D - 2, size: nse, index_dtype: name, max });
    }
    // Per batch entry, the global row prefix minus the entry's start.
    let compressed = if batch == 1 {
        crow
    } else {
        (0..batch).flat_map(|b| crow[b * rows..=(b + 1) * rows].iter().map(move |&c| c - (b * nse) as i64)).collect()
    };
    let values = Tensor::<2>::from_data(val, (&device, dtype));
    Ok(Some(SparseTensor {
        layout: Layout::Csr,
        shape,
        batch_dim: D - 2,
        sparse_dim: 2,
        dense_dim: 0,
        blocksize: None,
        indices: Indices::Compressed {
            compressed: int_tensor(compressed, [batch, rows + 1], index_dtype, &device),
            plain: int_tensor(col, [batch, nse], index_dtype, &device),
            transposed: Default::default(),
        },
        values,
        coalesced: true,
        trust: Trust::Checked,
    }))
}
