//! The CSR products on Cube devices: `A · X`, `Aᵀ · G` through the pattern's transposed view, and
//! SDDMM (`Σⱼ a[row(p), j] · b[col(p), j]` at every stored entry `p`).
//!
//! A kernel unit computes one output element, so the units of a warp share a row of `A` (the same
//! trip count, no divergence where `n` is a multiple of the warp) and read consecutive elements of
//! the dense operand. The transposed product walks the pattern's columns: the transposed view (the
//! host's `CscPattern`, computed once per pattern in its `TransposeCell`) goes to the device once
//! and stays in the cell's slot, so a training step reads nothing back.
//!
//! Every kernel is launched checked (an out-of-range index is clamped, never read), though the
//! callers' contract already makes every index valid. The kernels take f32 and f64 values; for
//! other value types the callers keep the portable defaults.

use burn::backend::cubecl::dtype_to_storage_type;
use burn::backend::{
    ops::{FloatTensorOps, IntTensorOps},
    read_sync,
};
use burn::tensor::{DType, FloatDType, Shape};
use burn_cubecl::cubecl::{self, calculate_cube_count_elemwise, prelude::*, CubeDim};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::{empty_device_contiguous_dtype, zeros_client};
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{CubeBackend, CubeDevice};
use sparsegrad_kernels::pattern::{CscPattern, TransposeCell};
use std::sync::Arc;

/// `out[r, j] = Σ_{q ∈ ptr[r]..ptr[r + 1]} values[v(q)] · x[idx[q], j]`, one unit per element of
/// `out [rows, n]`; `v(q)` is `perm[q]` when `permuted` (a transposed view's entry order), else `q`.
#[cube(launch)]
fn compressed_times_dense<F: Float, P: Int, J: Int>(
    ptr: &Tensor<P>,
    idx: &Tensor<J>,
    perm: &Tensor<J>,
    values: &Tensor<F>,
    x: &Tensor<F>,
    out: &mut Tensor<F>,
    n: usize,
    #[comptime] permuted: bool,
    #[define(F, P, J)] _dtypes: [ElemType; 3],
) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    let r = ABSOLUTE_POS / n;
    let j = ABSOLUTE_POS % n;
    let start = usize::cast_from(ptr[r]);
    let end = usize::cast_from(ptr[r + 1]);
    let mut acc = F::new(0.0);
    for q in start..end {
        let v = if permuted { values[usize::cast_from(perm[q])] } else { values[q] };
        acc += v * x[usize::cast_from(idx[q]) * n + j];
    }
    out[ABSOLUTE_POS] = acc;
}

/// `out[p] = Σⱼ a[row(p), j] · b[idx[p], j]` for every entry `p` of the pattern `ptr [rows + 1]`,
/// one unit per entry; `row(p)`, the last row starting at or before `p`, by bisection of `ptr`.
#[cube(launch)]
fn sampled_row_dots<F: Float, P: Int, J: Int>(
    ptr: &Tensor<P>,
    idx: &Tensor<J>,
    a: &Tensor<F>,
    b: &Tensor<F>,
    out: &mut Tensor<F>,
    rows: usize,
    n: usize,
    #[define(F, P, J)] _dtypes: [ElemType; 3],
) {
    let p = ABSOLUTE_POS;
    if p >= out.len() {
        terminate!();
    }
    // `ptr[lo] <= p < ptr[hi]` throughout: `ptr[0] = 0` and `ptr[rows] = nnz > p`.
    let mut lo = 0;
    let mut hi = rows;
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if usize::cast_from(ptr[mid]) <= p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let a_row = lo * n;
    let b_row = usize::cast_from(idx[p]) * n;
    let mut acc = F::new(0.0);
    for j in 0..n {
        acc += a[a_row + j] * b[b_row + j];
    }
    out[p] = acc;
}

/// Whether the kernels take values of `dtype` as stored (f32 and f64; the callers widen 16-bit
/// floats to f32 with [`widened`], so that they accumulate in f32 as on the host).
pub(crate) fn takes(dtype: DType) -> bool {
    matches!(dtype, DType::F32 | DType::F64)
}

/// `f` on the float operands `ts` as the kernels take them: 16-bit floats widened to f32 and the
/// result narrowed back to their type.
pub(crate) fn widened<const N: usize>(
    ts: [CubeTensor; N],
    f: impl FnOnce([CubeTensor; N]) -> CubeTensor,
) -> CubeTensor {
    let dtype = ts[0].dtype;
    if takes(dtype) {
        return f(ts);
    }
    let wide = ts.map(|t| <CubeBackend as FloatTensorOps<CubeBackend>>::float_cast(t, FloatDType::F32));
    <CubeBackend as FloatTensorOps<CubeBackend>>::float_cast(f(wide), dtype.into())
}

fn launch_dims(t: &CubeTensor, units: usize) -> (CubeCount, CubeDim) {
    let cube_dim = CubeDim::new(&t.client, units);
    (calculate_cube_count_elemwise(&t.client, units, cube_dim), cube_dim)
}

/// `ptr [rows + 1]`, `idx` and (when `perm` is given) `perm` a valid compressed pattern over the
/// rows of `x [cols, n]`, `values` its values in storage order: the product `[rows, n]`.
fn compressed_product(
    ptr: CubeTensor,
    idx: CubeTensor,
    perm: Option<CubeTensor>,
    values: CubeTensor,
    x: CubeTensor,
) -> CubeTensor {
    let rows = ptr.meta.shape()[0] - 1;
    let n = x.meta.shape()[1];
    let (client, device, dtype) = (x.client.clone(), x.device.clone(), x.dtype);
    let out_shape = Shape::new([rows, n]);
    if rows * n == 0 || idx.meta.shape()[0] == 0 {
        return zeros_client(client, device, out_shape, dtype);
    }
    let out = empty_device_contiguous_dtype(client, device, out_shape, dtype);
    let (count, dim) = launch_dims(&out, rows * n);
    let types = [dtype, ptr.dtype, idx.dtype].map(dtype_to_storage_type);
    let permuted = perm.is_some();
    let perm = perm.unwrap_or_else(|| idx.clone());
    compressed_times_dense::launch(
        &out.client,
        count,
        dim,
        into_contiguous(ptr).into_tensor_arg(),
        into_contiguous(idx).into_tensor_arg(),
        into_contiguous(perm).into_tensor_arg(),
        into_contiguous(values).into_tensor_arg(),
        into_contiguous(x).into_tensor_arg(),
        out.clone().into_tensor_arg(),
        n,
        permuted,
        types,
    );
    out
}

/// `A · X` for the valid pattern `crow`, `col` over the rows of `x [k, n]`.
pub(crate) fn spmm(crow: CubeTensor, col: CubeTensor, values: CubeTensor, x: CubeTensor) -> CubeTensor {
    compressed_product(crow, col, None, values, x)
}

/// `Aᵀ · G` through the transposed view `t` of the pattern (on the device), `g [m, n]`.
pub(crate) fn spmm_t(t: &DeviceTranspose, values: CubeTensor, g: CubeTensor) -> CubeTensor {
    compressed_product(t.ccol.clone(), t.row.clone(), Some(t.perm.clone()), values, g)
}

/// SDDMM over the valid pattern `crow`, `col`: `[nnz]`, from `a [m, n]` and `b [k, n]`.
pub(crate) fn sddmm(crow: CubeTensor, col: CubeTensor, a: CubeTensor, b: CubeTensor) -> CubeTensor {
    let rows = crow.meta.shape()[0] - 1;
    let nnz = col.meta.shape()[0];
    let n = a.meta.shape()[1];
    let (client, device, dtype) = (a.client.clone(), a.device.clone(), a.dtype);
    if nnz == 0 || n == 0 {
        return zeros_client(client, device, Shape::new([nnz]), dtype);
    }
    let out = empty_device_contiguous_dtype(client, device, Shape::new([nnz]), dtype);
    let (count, dim) = launch_dims(&out, nnz);
    let types = [dtype, crow.dtype, col.dtype].map(dtype_to_storage_type);
    sampled_row_dots::launch(
        &out.client,
        count,
        dim,
        into_contiguous(crow).into_tensor_arg(),
        into_contiguous(col).into_tensor_arg(),
        into_contiguous(a).into_tensor_arg(),
        into_contiguous(b).into_tensor_arg(),
        out.clone().into_tensor_arg(),
        rows,
        n,
        types,
    );
    out
}

/// A pattern's transposed view on one device: `ccol [k + 1]`, `row [nnz]` and `perm [nnz]` (the
/// CSR entry each CSC entry is), in one index type.
#[derive(Clone)]
pub(crate) struct DeviceTranspose {
    device: CubeDevice,
    ccol: CubeTensor,
    row: CubeTensor,
    perm: CubeTensor,
}

impl DeviceTranspose {
    /// The view of the host's `t` on `device`: i32 where every entry fits, else i64.
    fn upload(t: &CscPattern, like: &CubeTensor) -> Self {
        let fits = |s: &[i64]| s.iter().all(|&v| i32::try_from(v).is_ok());
        let narrow = fits(t.ccol()) && fits(t.row()) && fits(t.perm());
        let to_device = |s: &[i64]| {
            let data = if narrow {
                burn::tensor::TensorData::new(s.iter().map(|&v| v as i32).collect::<Vec<_>>(), [s.len()])
            } else {
                burn::tensor::TensorData::new(s.to_vec(), [s.len()])
            };
            <CubeBackend as IntTensorOps<CubeBackend>>::int_from_data(data, &like.device)
        };
        Self {
            device: like.device.clone(),
            ccol: to_device(t.ccol()),
            row: to_device(t.row()),
            perm: to_device(t.perm()),
        }
    }

    /// The view of the pattern `crow`, `col` over `k` columns on their device, from (or into)
    /// the pattern's cell: computed on the host and uploaded at the first call for this device.
    ///
    /// # Safety
    /// `crow` and `col` are a valid pattern over `k` columns, and `cell` is theirs (or empty).
    pub(crate) unsafe fn of(crow: &CubeTensor, col: &CubeTensor, k: usize, cell: &TransposeCell) -> Self {
        let cached = cell.with_slot(|slot| {
            slot.as_ref()
                .and_then(|v| v.downcast_ref::<Arc<DeviceTranspose>>())
                .filter(|t| t.device == crow.device)
                .cloned()
        });
        if let Some(t) = cached {
            return (*t).clone();
        }
        let (host_crow, host_col) = (host_ints(crow.clone()), host_ints(col.clone()));
        // SAFETY: a valid pattern over `k` columns: this function's contract.
        let a = unsafe { sparsegrad_kernels::pattern::CsrPattern::new_unchecked(&host_crow, &host_col, k) };
        let t = Self::upload(cell.of(a), col);
        let shared = Arc::new(t.clone());
        cell.with_slot(|slot| *slot = Some(Box::new(shared)));
        t
    }
}

/// An index tensor read back to the host (once per pattern: the transposed view is cached).
fn host_ints(t: CubeTensor) -> Vec<i64> {
    read_sync(<CubeBackend as IntTensorOps<CubeBackend>>::int_into_data(t))
        .expect("index tensor readback")
        .iter::<i64>()
        .collect()
}

/// `out = zeros([rows, width]); out[targets[j]] += values[j]` for `values [n, width]`: the rows
/// grouped by target on the host (a stable counting sort of the targets, read back once per
/// call: index algebra), then summed on the device by the product kernel with unit weights, in
/// the order of `j` as the host kernel sums them (so f32 sums agree bit for bit).
///
/// # Panics
/// If a target lies outside `0..rows`.
pub(crate) fn index_add_rows(values: CubeTensor, targets: CubeTensor, rows: usize) -> CubeTensor {
    let n = values.meta.shape()[0];
    let targets = host_ints(targets);
    let mut offsets = vec![0i64; rows + 1];
    for &t in &targets {
        let r = usize::try_from(t).ok().filter(|&r| r < rows);
        let r = r.unwrap_or_else(|| panic!("index_add_rows: target {t} outside 0..{rows}"));
        offsets[r + 1] += 1;
    }
    for r in 0..rows {
        offsets[r + 1] += offsets[r];
    }
    let mut next = offsets.clone();
    let mut order = vec![0i64; n];
    for (j, &t) in targets.iter().enumerate() {
        order[next[t as usize] as usize] = j as i64;
        next[t as usize] += 1;
    }
    let upload = |v: Vec<i64>| {
        let len = v.len();
        let data = if n <= i32::MAX as usize {
            burn::tensor::TensorData::new(v.into_iter().map(|x| x as i32).collect::<Vec<_>>(), [len])
        } else {
            burn::tensor::TensorData::new(v, [len])
        };
        <CubeBackend as IntTensorOps<CubeBackend>>::int_from_data(data, &values.device)
    };
    let (ptr, idx) = (upload(offsets), upload(order));
    let ones = <CubeBackend as FloatTensorOps<CubeBackend>>::float_ones(
        Shape::new([n]),
        &values.device,
        FloatDType::from(values.dtype),
    );
    compressed_product(ptr, idx, None, ones, values)
}
