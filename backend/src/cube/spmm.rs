//! The CSR products on Cube devices: `A · X`, `Aᵀ · G` through the pattern's transposed view, and
//! SDDMM (`Σⱼ a[row(p), j] · b[col(p), j]` at every stored entry `p`): the host side (operand
//! checks, the row split, the plans a pattern keeps per device) and the naive kernels.
//!
//! Which kernel runs is `path`'s choice at each launch: SpMM and SpMMᵀ run `spmm_tiled` (a team
//! of units per row, the row's entries staged in shared memory, the dense rows read in vectors),
//! SDDMM runs `sddmm_planes` (a group of a plane's units per entry, a plane reduction) where the
//! device has planes. The naive kernels here are the fallback and the reference: a unit per
//! output element for the product (the units of a warp share a row of `A` and read consecutive
//! elements of the dense operand), a unit per entry for SDDMM.
//!
//! Where a few rows are far longer than the rest (power-law patterns), the rows are cut into
//! pieces of at most 256 entries (`RowSplit`), whichever kernel runs: a row per piece, then a row
//! per row of `A` sums its pieces. The transposed product walks the pattern's columns: the
//! transposed view (the host's `CscPattern`, computed once per pattern in its `TransposeCell`)
//! goes to the device once, with the split of its long columns. Both plans stay in the cell's
//! slot (`DevicePlans`), so a training step reads nothing back after the first.
//!
//! Every kernel is launched checked (an out-of-range index is clamped, never read), though the
//! callers' contract already makes every index valid. The kernels take f32 and f64 values; for
//! other value types the callers keep the portable defaults.

use super::census;
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

use super::sort::row_of;

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
/// one unit per entry; `row(p)` by bisection of `ptr` (`sort::row_of`).
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
    let a_row = row_of::<P>(ptr, rows, p) * n;
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

/// The kernels address in 32 bits (CubeCL's default, and wgpu's only width).
///
/// # Panics
/// If one of `ts` holds 2^32 elements or more.
pub(crate) fn assert_addressable(op: &str, ts: &[&CubeTensor]) {
    for t in ts {
        let len = t.meta.num_elements();
        assert!(
            u32::try_from(len).is_ok(),
            "{op} on a Cube device: an operand of {len} elements (the kernels address 2^32 at most)"
        );
    }
}

pub(crate) fn launch_dims(t: &CubeTensor, units: usize) -> (CubeCount, CubeDim) {
    let cube_dim = CubeDim::new(&t.client, units);
    (calculate_cube_count_elemwise(&t.client, units, cube_dim), cube_dim)
}

/// `ptr [rows + 1]`, `idx` and (when `perm` is given) `perm` a valid compressed pattern over the
/// rows of `x [cols, n]`, `values` its values in storage order: the product `[rows, n]`. With a
/// `split` of the pattern's rows, each piece is summed by its own units into `[pieces, n]`, and
/// the pieces of each row are then summed in order (the same product with unit weights).
pub(crate) fn compressed_product(
    ptr: CubeTensor,
    idx: CubeTensor,
    perm: Option<CubeTensor>,
    values: CubeTensor,
    x: CubeTensor,
    split: Option<&RowSplit>,
) -> CubeTensor {
    if let Some(split) = split {
        let partial = compressed_product(split.piece_start.clone(), idx, perm, values, x, None);
        let pieces = partial.meta.shape()[0];
        let ones = <CubeBackend as FloatTensorOps<CubeBackend>>::float_ones(
            Shape::new([pieces]),
            &partial.device,
            FloatDType::from(partial.dtype),
        );
        return compressed_product(split.row_pieces.clone(), split.identity.clone(), None, ones, partial, None);
    }
    let rows = ptr.meta.shape()[0] - 1;
    let n = x.meta.shape()[1];
    let (client, device, dtype) = (x.client.clone(), x.device.clone(), x.dtype);
    let out_shape = Shape::new([rows, n]);
    if rows * n == 0 || idx.meta.shape()[0] == 0 {
        return zeros_client(client, device, out_shape, dtype);
    }
    let out = empty_device_contiguous_dtype(client, device, out_shape, dtype);
    assert_addressable("a sparse product", &[&idx, &values, &x, &out]);
    if super::path::tiled_spmm() {
        let width = super::path::vector_width(&x, n);
        super::spmm_tiled::launch(ptr, idx, perm, values, x, &out, width);
        return out;
    }
    let permuted = perm.is_some();
    let perm = perm.unwrap_or_else(|| idx.clone());
    let (count, dim) = launch_dims(&out, rows * n);
    let types = [dtype, ptr.dtype, idx.dtype].map(dtype_to_storage_type);
    census::launched("compressed_times_dense");
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

/// `A · X` for the valid pattern `crow`, `col` over the rows of `x [k, n]`, its long rows cut by
/// `split` (the pattern's, from [`RowSplit::of`]).
pub(crate) fn spmm(
    crow: CubeTensor,
    col: CubeTensor,
    values: CubeTensor,
    x: CubeTensor,
    split: Option<&RowSplit>,
) -> CubeTensor {
    compressed_product(crow, col, None, values, x, split)
}

/// `Aᵀ · G` through the transposed view `t` of the pattern (on the device), `g [m, n]`.
pub(crate) fn spmm_t(t: &DeviceTranspose, values: CubeTensor, g: CubeTensor) -> CubeTensor {
    compressed_product(t.ccol.clone(), t.row.clone(), Some(t.perm.clone()), values, g, t.split.as_ref())
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
    assert_addressable("SDDMM", &[&col, &a, &b]);
    if super::path::planes(&out) {
        let width = super::path::vector_width(&a, n);
        super::sddmm_planes::launch(crow, col, a, b, &out, width);
        return out;
    }
    let (count, dim) = launch_dims(&out, nnz);
    let types = [dtype, crow.dtype, col.dtype].map(dtype_to_storage_type);
    census::launched("sampled_row_dots");
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

/// The longest piece of a row that one kernel unit sums (per column of the dense operand).
const PIECE: usize = 256;

/// A compressed pattern's rows cut into pieces of at most [`PIECE`] entries, on one device, for
/// patterns where a few rows hold far more entries than the rest (the hubs of a power-law graph:
/// a unit per row and column would leave the rest of the device waiting on them):
/// `piece_start [pieces + 1]` into the entries, `row_pieces [rows + 1]` into the pieces, and
/// `identity [pieces]`, the second product's columns.
#[derive(Clone)]
pub(crate) struct RowSplit {
    piece_start: CubeTensor,
    row_pieces: CubeTensor,
    identity: CubeTensor,
}

impl RowSplit {
    /// The split of the rows of `ptr` (host offsets), or `None` where no row is longer than a
    /// piece or than 8 times the mean: there a unit per row and column is balanced enough.
    fn plan(ptr: &[i64], device: &CubeDevice) -> Option<Self> {
        let rows = ptr.len().checked_sub(1)?;
        let nnz = usize::try_from(ptr[rows]).ok()?;
        let len = |r: usize| (ptr[r + 1] - ptr[r]) as usize;
        let longest = (0..rows).map(len).max().unwrap_or(0);
        if longest <= PIECE || longest <= 8 * nnz.div_ceil(rows.max(1)) {
            return None;
        }
        let mut piece_start = Vec::with_capacity(rows + nnz / PIECE + 1);
        let mut row_pieces = Vec::with_capacity(rows + 1);
        row_pieces.push(0i64);
        for r in 0..rows {
            let mut at = ptr[r];
            while at < ptr[r + 1] {
                piece_start.push(at);
                at = (at + PIECE as i64).min(ptr[r + 1]);
            }
            row_pieces.push(piece_start.len() as i64);
        }
        piece_start.push(nnz as i64);
        let identity: Vec<i64> = (0..piece_start.len() as i64 - 1).collect();
        Some(Self {
            piece_start: upload_ints(piece_start, device),
            row_pieces: upload_ints(row_pieces, device),
            identity: upload_ints(identity, device),
        })
    }

    /// The split of the pattern whose offsets are `crow`, from (or into) its cell: planned on the
    /// host from `crow` read back at the first call on this device.
    pub(crate) fn of(crow: &CubeTensor, cell: &TransposeCell) -> Option<Self> {
        if let Some(rows) = DevicePlans::get(cell, &crow.device, |p| p.rows.clone()) {
            return rows;
        }
        let split = Self::plan(&host_ints(crow.clone()), &crow.device);
        DevicePlans::put(cell, &crow.device, |p| p.rows = Some(split.clone()));
        split
    }
}

/// What a pattern keeps on one Cube device, in its cell's slot: the split of its rows (planned
/// or not yet) and its transposed view.
#[derive(Clone)]
struct DevicePlans {
    device: CubeDevice,
    rows: Option<Option<RowSplit>>,
    transpose: Option<DeviceTranspose>,
}

impl DevicePlans {
    /// `f` of the plans `cell` holds for `device`, if it holds any.
    fn get<T>(cell: &TransposeCell, device: &CubeDevice, f: impl FnOnce(&DevicePlans) -> Option<T>) -> Option<T> {
        cell.with_slot(|slot| {
            slot.as_ref().and_then(|v| v.downcast_ref::<DevicePlans>()).filter(|p| p.device == *device).and_then(f)
        })
    }

    /// Updates the plans `cell` holds for `device` by `f` (fresh ones where it holds none, or
    /// another device's or backend's).
    fn put(cell: &TransposeCell, device: &CubeDevice, f: impl FnOnce(&mut DevicePlans)) {
        cell.with_slot(|slot| {
            let ours = slot.as_ref().and_then(|v| v.downcast_ref::<DevicePlans>()).is_some_and(|p| p.device == *device);
            if !ours {
                *slot = Some(Box::new(DevicePlans { device: device.clone(), rows: None, transpose: None }));
            }
            if let Some(plans) = slot.as_mut().and_then(|v| v.downcast_mut::<DevicePlans>()) {
                f(plans);
            }
        })
    }
}

/// Whether every index of `v` fits an i32.
fn fit_i32(v: &[i64]) -> bool {
    v.iter().all(|&x| i32::try_from(x).is_ok())
}

/// Host indices on `device`: i32 where every one fits, else i64.
fn upload_ints(v: Vec<i64>, device: &CubeDevice) -> CubeTensor {
    let narrow = fit_i32(&v);
    upload_ints_as(v, narrow, device)
}

/// Host indices on `device`, as i32 when `narrow` (every one fits: the caller checked), else i64.
fn upload_ints_as(v: Vec<i64>, narrow: bool, device: &CubeDevice) -> CubeTensor {
    let len = v.len();
    let data = if narrow {
        burn::tensor::TensorData::new(v.into_iter().map(|x| x as i32).collect::<Vec<_>>(), [len])
    } else {
        burn::tensor::TensorData::new(v, [len])
    };
    <CubeBackend as IntTensorOps<CubeBackend>>::int_from_data(data, device)
}

/// A pattern's transposed view on one device: `ccol [k + 1]`, `row [nnz]` and `perm [nnz]` (the
/// CSR entry each CSC entry is), and the split of its columns where a few are long (the hubs
/// again: a power-law graph's columns are as skewed as its rows).
#[derive(Clone)]
pub(crate) struct DeviceTranspose {
    ccol: CubeTensor,
    row: CubeTensor,
    perm: CubeTensor,
    split: Option<RowSplit>,
}

impl DeviceTranspose {
    /// The view of the host's `t` on `device`, `row` and `perm` in one index type (the kernel
    /// reads both as its `J`).
    fn upload(t: &CscPattern, device: &CubeDevice) -> Self {
        let rows = t.rows_to_vec();
        let narrow = fit_i32(&rows) && fit_i32(t.perm());
        Self {
            ccol: upload_ints(t.ccol().to_vec(), device),
            row: upload_ints_as(rows, narrow, device),
            perm: upload_ints_as(t.perm().to_vec(), narrow, device),
            split: RowSplit::plan(t.ccol(), device),
        }
    }

    /// The view of the pattern `crow`, `col` over `k` columns on their device, from (or into)
    /// the pattern's cell: computed on the host and uploaded at the first call for this device.
    /// The pattern read back is checked (a panic where it is not valid).
    pub(crate) fn of(crow: &CubeTensor, col: &CubeTensor, k: usize, cell: &TransposeCell) -> Self {
        if let Some(t) = DevicePlans::get(cell, &crow.device, |p| p.transpose.clone()) {
            return t;
        }
        let (host_crow, host_col) = (host_ints(crow.clone()), host_ints(col.clone()));
        let a = sparsegrad_kernels::pattern::CsrPattern::new(&host_crow, &host_col, k)
            .unwrap_or_else(|e| panic!("spmm: the pattern is not valid: {e}"));
        let t = Self::upload(cell.of(a), &crow.device);
        DevicePlans::put(cell, &crow.device, |p| p.transpose = Some(t.clone()));
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

/// `out = zeros([rows, width]); out[targets[j]] += values[j]` for `values [n, width]`: the
/// targets sorted stably on the device (`sort`), the offsets of each target's run found by
/// bisection, then the rows summed by the product kernel with unit weights, in the order of `j`
/// as the host kernel sums them (so f32 sums agree bit for bit). Nothing is read back. Targets
/// outside `0..rows` fall in no run, and are left out (the callers' targets are in range).
pub(crate) fn index_add_rows(values: CubeTensor, targets: CubeTensor, rows: usize) -> CubeTensor {
    let [n, width] = [values.meta.shape()[0], values.meta.shape()[1]];
    if n == 0 || rows == 0 || width == 0 {
        return zeros_client(values.client.clone(), values.device.clone(), Shape::new([rows, width]), values.dtype);
    }
    let (sorted, order) = super::sort::stable_sort(targets);
    let offsets = super::sort::bounds(&sorted, rows);
    let ones = <CubeBackend as FloatTensorOps<CubeBackend>>::float_ones(
        Shape::new([n]),
        &values.device,
        FloatDType::from(values.dtype),
    );
    compressed_product(offsets, order, None, ones, values, None)
}
