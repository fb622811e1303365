//! Index algebra over linear keys on Cube devices: each COO entry's key over the sparse dims
//! (row-major), the runs of equal keys in sorted keys (numbered by a prefix sum, Hillis and
//! Steele), and back from keys to coordinates. On these rest
//!
//! - `coalesce`'s plan: the keys sorted stably (`sort`), each run one entry of the result;
//! - the segments of a softmax along one dim: the keys without that dim's stride, sorted;
//! - the non-zero rows of a dense tensor: flags, their prefix sum, the positions of the flagged;
//! - `spgemm`'s partial products, summed per run of one key.
//!
//! What these read back is a count or two (the size of a result), never the indices.

use super::census;
use burn::backend::cubecl::dtype_to_storage_type;
use burn::backend::{ops::IntTensorOps, read_sync};
use burn::tensor::{DType, Shape, TensorData};
use burn_cubecl::cubecl::{self, prelude::*};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::empty_device_contiguous_dtype;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::CubeBackend;

use super::sort::{position_dtype, stable_sort};
use super::spmm::{assert_addressable, launch_dims};

/// `keys[e] = Σ_d indices[d, e] · strides[d]` for the entries `e` of `indices [dims, n]`.
#[cube(launch)]
fn linear_keys_of<P: Int, K: Int>(
    indices: &Tensor<P>,
    strides: &Tensor<K>,
    keys: &mut Tensor<K>,
    n: usize,
    #[define(P, K)] _dtypes: [ElemType; 2],
) {
    let e = ABSOLUTE_POS;
    if e >= n {
        terminate!();
    }
    let mut key = K::cast_from(0u32);
    for d in 0..strides.len() {
        key += K::cast_from(indices[d * n + e]) * strides[d];
    }
    keys[e] = key;
}

/// `out[p] = 1` where the key at `p` is not above the one before (the keys are not strictly
/// increasing there), else 0.
#[cube(launch)]
fn non_increases<K: Int, P: Int>(keys: &Tensor<K>, out: &mut Tensor<P>, #[define(K, P)] _dtypes: [ElemType; 2]) {
    let p = ABSOLUTE_POS;
    if p >= out.len() {
        terminate!();
    }
    let mut flag = P::cast_from(0u32);
    if p > 0 {
        flag = select(keys[p] <= keys[p - 1], P::cast_from(1u32), P::cast_from(0u32));
    }
    out[p] = flag;
}

/// The number of positions of `keys [n]` (`n >= 1`) not above the one before, as a one-element
/// i32 tensor on the device (zero: the keys are strictly increasing).
pub(crate) fn non_increase_count(keys: &CubeTensor) -> CubeTensor {
    let n = keys.meta.num_elements();
    let (client, device) = (keys.client.clone(), keys.device.clone());
    let flags = empty_device_contiguous_dtype(client.clone(), device, Shape::new([n]), DType::I32);
    let (count, dim) = launch_dims(&flags, n);
    census::launched("non_increases");
    non_increases::launch(
        &client,
        count,
        dim,
        into_contiguous(keys.clone()).into_tensor_arg(),
        flags.clone().into_tensor_arg(),
        [keys.dtype, DType::I32].map(dtype_to_storage_type),
    );
    <CubeBackend as IntTensorOps<CubeBackend>>::int_sum(flags)
}

/// `starts[p] = 1` where a run of equal keys starts in the sorted `keys` (at `p = 0` and where
/// the key differs from the one before), else 0.
#[cube(launch)]
fn run_starts<K: Int, P: Int>(keys: &Tensor<K>, starts: &mut Tensor<P>, #[define(K, P)] _dtypes: [ElemType; 2]) {
    let p = ABSOLUTE_POS;
    if p >= starts.len() {
        terminate!();
    }
    let mut start = P::cast_from(1u32);
    if p > 0 {
        start = select(keys[p] != keys[p - 1], P::cast_from(1u32), P::cast_from(0u32));
    }
    starts[p] = start;
}

/// One step of an inclusive prefix sum (Hillis and Steele): `out[i] = x[i] + x[i - shift]`
/// where `i >= shift`, else `x[i]`.
#[cube(launch)]
fn add_shifted<P: Int>(x: &Tensor<P>, out: &mut Tensor<P>, shift: usize, #[define(P)] _dtype: ElemType) {
    let i = ABSOLUTE_POS;
    if i >= out.len() {
        terminate!();
    }
    let mut v = x[i];
    if i >= shift {
        v += x[i - shift];
    }
    out[i] = v;
}

/// What `place_runs` reads: the sorted keys, their order and runs, and the strides and sizes
/// that take a key apart.
#[derive(CubeLaunch, CubeType)]
struct PlaceRunsArgs<K: Int, P: Int> {
    keys: OwnedTensor<K>,
    order: OwnedTensor<P>,
    runs: OwnedTensor<P>,
    strides: OwnedTensor<K>,
    sizes: OwnedTensor<K>,
}

/// From the sorted keys, their permutation `order` and the inclusive count of run starts
/// `runs`: each entry's run (`targets[order[p]] = runs[p] - 1`) and each run's coordinates
/// (`coords [dims, unique]`, written by the run's first entry: `(key / strides[d]) % sizes[d]`).
#[cube(launch)]
fn place_runs<K: Int, P: Int, I: Int>(
    args: &PlaceRunsArgs<K, P>,
    targets: &mut Tensor<P>,
    coords: &mut Tensor<I>,
    unique: usize,
    #[define(K, P, I)] _dtypes: [ElemType; 3],
) {
    let p = ABSOLUTE_POS;
    if p >= args.keys.len() {
        terminate!();
    }
    let run = usize::cast_from(args.runs[p]) - 1;
    targets[usize::cast_from(args.order[p])] = P::cast_from(run);
    let mut first = true;
    if p > 0 {
        first = args.keys[p] != args.keys[p - 1];
    }
    if first {
        let key = args.keys[p];
        for d in 0..args.strides.len() {
            coords[d * unique + run] = I::cast_from((key / args.strides[d]) % args.sizes[d]);
        }
    }
}

pub(crate) fn upload(v: Vec<i64>, dtype: DType, device: &burn_cubecl::CubeDevice) -> CubeTensor {
    let n = v.len();
    let data = match dtype {
        DType::I32 => TensorData::new(v.into_iter().map(|x| x as i32).collect::<Vec<_>>(), [n]),
        _ => TensorData::new(v, [n]),
    };
    <CubeBackend as IntTensorOps<CubeBackend>>::int_from_data(data, device)
}

/// The linear keys (row-major over `sizes`) of the valid COO indices `indices [dims, n]`, in
/// the type [`key_dtype`] gives, with their strides on the device.
fn keys_and_strides(indices: CubeTensor, sizes: &[usize]) -> (CubeTensor, CubeTensor, DType) {
    let dims = sizes.len();
    let n = indices.meta.shape()[1];
    let (client, device, idtype) = (indices.client.clone(), indices.device.clone(), indices.dtype);
    let kdtype = key_dtype(sizes);
    let mut strides = vec![1i64; dims];
    for d in (0..dims.saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * sizes[d + 1] as i64;
    }
    let strides = upload(strides, kdtype, &device);
    let keys = empty_device_contiguous_dtype(client.clone(), device, Shape::new([n]), kdtype);
    if n == 0 {
        return (keys, strides, kdtype);
    }
    assert_addressable("the keys of COO indices", &[&indices]);
    let (count, dim) = launch_dims(&keys, n);
    census::launched("linear_keys_of");
    linear_keys_of::launch(
        &client,
        count,
        dim,
        into_contiguous(indices).into_tensor_arg(),
        strides.clone().into_tensor_arg(),
        keys.clone().into_tensor_arg(),
        n,
        [idtype, kdtype].map(dtype_to_storage_type),
    );
    (keys, strides, kdtype)
}

/// The type of the linear keys over `sizes`: i32 where every key fits, else i64 (the callers
/// hold a checked shape, whose element count fits i64).
fn key_dtype(sizes: &[usize]) -> DType {
    let total: u128 = sizes.iter().map(|&s| s as u128).product();
    if total <= i32::MAX as u128 {
        DType::I32
    } else {
        DType::I64
    }
}

/// The linear keys of the valid COO indices `indices [dims, n]` over `sizes` (row-major).
pub(crate) fn linear_keys(indices: CubeTensor, sizes: &[usize]) -> CubeTensor {
    keys_and_strides(indices, sizes).0
}

/// The coalescing plan of the valid COO indices `indices [dims, n]` over `sizes` (whose product
/// fits i64, and `n >= 1`): the sorted unique coordinates `[dims, unique]` in the indices'
/// dtype, and each entry's position among them (`[n]`, the targets of the values'
/// scatter-add); `None` where they already are sorted and unique. Reads back two integers: the
/// count of entries out of order or repeated, then the number of unique coordinates.
pub(crate) fn coalesce_plan(indices: CubeTensor, sizes: &[usize]) -> Option<(CubeTensor, CubeTensor)> {
    let dims = sizes.len();
    let n = indices.meta.shape()[1];
    let (client, device, idtype) = (indices.client.clone(), indices.device.clone(), indices.dtype);
    let (keys, strides, kdtype) = keys_and_strides(indices, sizes);
    let size_t = upload(sizes.iter().map(|&s| s as i64).collect(), kdtype, &device);
    let (count, dim) = launch_dims(&keys, n);
    // Strictly increasing already (no entry at or below the one before): nothing to merge.
    if read_one(non_increase_count(&keys)) == 0 {
        return None;
    }
    let (keys, order) = stable_sort(keys);
    let pdtype = position_dtype(n);
    let runs = empty_device_contiguous_dtype(client.clone(), device.clone(), Shape::new([n]), pdtype);
    census::launched("run_starts");
    run_starts::launch(
        &client,
        count.clone(),
        dim,
        keys.clone().into_tensor_arg(),
        runs.clone().into_tensor_arg(),
        [kdtype, pdtype].map(dtype_to_storage_type),
    );
    let runs = inclusive_sum(runs);
    // The number of runs: the last count, the one value read back.
    let last =
        <CubeBackend as IntTensorOps<CubeBackend>>::int_slice(runs.clone(), &[burn::tensor::Slice::from(n - 1..n)]);
    let unique = read_one(last) as usize;
    let targets = empty_device_contiguous_dtype(client.clone(), device.clone(), Shape::new([n]), pdtype);
    let coords = empty_device_contiguous_dtype(client.clone(), device, Shape::new([dims, unique]), idtype);
    census::launched("place_runs");
    place_runs::launch(
        &client,
        count,
        dim,
        PlaceRunsArgsLaunch::new(
            keys.into_tensor_arg(),
            order.into_tensor_arg(),
            runs.into_tensor_arg(),
            strides.into_tensor_arg(),
            size_t.into_tensor_arg(),
        ),
        targets.clone().into_tensor_arg(),
        coords.clone().into_tensor_arg(),
        unique,
        [kdtype, pdtype, idtype].map(dtype_to_storage_type),
    );
    Some((coords, targets))
}

/// The inclusive prefix sum of `x [n]` (Hillis and Steele: `log2 n` passes of `n` units).
pub(crate) fn inclusive_sum(mut x: CubeTensor) -> CubeTensor {
    let n = x.meta.num_elements();
    let (client, device, dtype) = (x.client.clone(), x.device.clone(), x.dtype);
    let (count, dim) = launch_dims(&x, n);
    let mut shift = 1;
    while shift < n {
        let next = empty_device_contiguous_dtype(client.clone(), device.clone(), Shape::new([n]), dtype);
        census::launched("add_shifted");
        add_shifted::launch(
            &client,
            count.clone(),
            dim,
            x.into_tensor_arg(),
            next.clone().into_tensor_arg(),
            shift,
            dtype_to_storage_type(dtype),
        );
        x = next;
        shift *= 2;
    }
    x
}

/// `flags[i] = 1` where row `i` of `x [items, width]` holds an element other than zero (NaN
/// included), else 0.
#[cube(launch)]
fn nonzero_flags<F: Float, P: Int>(
    x: &Tensor<F>,
    flags: &mut Tensor<P>,
    width: usize,
    #[define(F, P)] _dtypes: [ElemType; 2],
) {
    let i = ABSOLUTE_POS;
    if i >= flags.len() {
        terminate!();
    }
    let mut any = P::cast_from(0u32);
    for j in 0..width {
        // `!(v == 0)` rather than `v != 0`: true for NaN whatever the compiler's `!=` does.
        any = select(!(x[i * width + j] == F::new(0.0)), P::cast_from(1u32), any);
    }
    flags[i] = any;
}

/// `ids[counts[i] - 1] = i` for every flagged row `i` (`counts`, the inclusive sum of the flags).
#[cube(launch)]
fn flagged_positions<P: Int>(
    flags: &Tensor<P>,
    counts: &Tensor<P>,
    ids: &mut Tensor<P>,
    #[define(P)] _dtype: ElemType,
) {
    let i = ABSOLUTE_POS;
    if i >= flags.len() {
        terminate!();
    }
    if flags[i] != P::cast_from(0u32) {
        ids[usize::cast_from(counts[i]) - 1] = P::cast_from(i);
    }
}

/// `coords[d, s] = (keys[s] / strides[d]) % sizes[d]`.
#[cube(launch)]
fn coordinates<K: Int, I: Int>(
    keys: &Tensor<K>,
    strides: &Tensor<K>,
    sizes: &Tensor<K>,
    coords: &mut Tensor<I>,
    n: usize,
    #[define(K, I)] _dtypes: [ElemType; 2],
) {
    let at = ABSOLUTE_POS;
    if at >= coords.len() {
        terminate!();
    }
    let d = at / n;
    let key = keys[at % n];
    coords[at] = I::cast_from((key / strides[d]) % sizes[d]);
}

/// The positions (ascending, in `sort::position_dtype`) of the rows of `flat [items, width]`
/// that hold an element other than zero. Reads back one integer, their count.
pub(crate) fn nonzero_rows(flat: CubeTensor) -> CubeTensor {
    let [items, width] = [flat.meta.shape()[0], flat.meta.shape()[1]];
    let (client, device) = (flat.client.clone(), flat.device.clone());
    let pdtype = position_dtype(items);
    if items == 0 || width == 0 {
        return empty_device_contiguous_dtype(client, device, Shape::new([0]), pdtype);
    }
    assert_addressable("the non-zeros of a dense tensor", &[&flat]);
    let flags = empty_device_contiguous_dtype(client.clone(), device.clone(), Shape::new([items]), pdtype);
    let (count, dim) = launch_dims(&flags, items);
    census::launched("nonzero_flags");
    nonzero_flags::launch(
        &client,
        count.clone(),
        dim,
        into_contiguous(flat.clone()).into_tensor_arg(),
        flags.clone().into_tensor_arg(),
        width,
        [flat.dtype, pdtype].map(dtype_to_storage_type),
    );
    flagged(flags)
}

/// The positions (ascending, in the flags' dtype, which holds their count) of the set flags of
/// `flags [n]` (each 0 or 1, `n >= 1`). Reads back one integer, their count.
pub(crate) fn flagged(flags: CubeTensor) -> CubeTensor {
    let n = flags.meta.num_elements();
    let (client, device, pdtype) = (flags.client.clone(), flags.device.clone(), flags.dtype);
    let (count, dim) = launch_dims(&flags, n);
    let counts = inclusive_sum(flags.clone());
    let last =
        <CubeBackend as IntTensorOps<CubeBackend>>::int_slice(counts.clone(), &[burn::tensor::Slice::from(n - 1..n)]);
    let kept = read_one(last) as usize;
    let ids = empty_device_contiguous_dtype(client.clone(), device, Shape::new([kept]), pdtype);
    if kept == 0 {
        return ids;
    }
    census::launched("flagged_positions");
    flagged_positions::launch(
        &client,
        count,
        dim,
        flags.into_tensor_arg(),
        counts.into_tensor_arg(),
        ids.clone().into_tensor_arg(),
        dtype_to_storage_type(pdtype),
    );
    ids
}

/// The coordinates `[sizes.len(), n]` in `dtype` of the linear keys `keys [n]` over `sizes`.
pub(crate) fn delinearize(keys: CubeTensor, sizes: &[usize], dtype: DType) -> CubeTensor {
    let n = keys.meta.num_elements();
    let dims = sizes.len();
    let (client, device) = (keys.client.clone(), keys.device.clone());
    let coords = empty_device_contiguous_dtype(client.clone(), device.clone(), Shape::new([dims, n]), dtype);
    if n == 0 || dims == 0 {
        return coords;
    }
    let kdtype = keys.dtype;
    let mut strides = vec![1i64; dims];
    for d in (0..dims - 1).rev() {
        strides[d] = strides[d + 1] * sizes[d + 1] as i64;
    }
    let strides = upload(strides, kdtype, &device);
    let size_t = upload(sizes.iter().map(|&s| s as i64).collect(), kdtype, &device);
    assert_addressable("coordinates", &[&coords]);
    let (count, dim) = launch_dims(&coords, dims * n);
    census::launched("coordinates");
    coordinates::launch(
        &client,
        count,
        dim,
        into_contiguous(keys).into_tensor_arg(),
        strides.into_tensor_arg(),
        size_t.into_tensor_arg(),
        coords.clone().into_tensor_arg(),
        n,
        [kdtype, dtype].map(dtype_to_storage_type),
    );
    coords
}

/// `offsets[runs[p] - 1] = p` where a run starts at `p` in the sorted keys, and
/// `offsets[segments] = n` (the unit of the last key).
#[cube(launch)]
fn run_offsets<K: Int, P: Int>(
    keys: &Tensor<K>,
    runs: &Tensor<P>,
    offsets: &mut Tensor<P>,
    #[define(K, P)] _dtypes: [ElemType; 2],
) {
    let p = ABSOLUTE_POS;
    let n = keys.len();
    if p >= n {
        terminate!();
    }
    let mut start = true;
    if p > 0 {
        start = keys[p] != keys[p - 1];
    }
    if start {
        offsets[usize::cast_from(runs[p]) - 1] = P::cast_from(p);
    }
    if p == n - 1 {
        offsets[usize::cast_from(runs[p])] = P::cast_from(n);
    }
}

/// The segments of a softmax along `dim` of the valid COO indices `indices [dims, n]` over
/// `sizes` (`n >= 1`): the entries grouped by their coordinates other than `dim` (a stable
/// sort of their keys with `dim`'s stride taken out), as offsets `[segments + 1]` into the
/// grouped order `[n]`. Reads back one integer, the number of segments.
pub(crate) fn segment_plan(indices: CubeTensor, sizes: &[usize], dim: usize) -> (CubeTensor, CubeTensor) {
    let dims = sizes.len();
    let n = indices.meta.shape()[1];
    let (client, device, idtype) = (indices.client.clone(), indices.device.clone(), indices.dtype);
    let kdtype = key_dtype(sizes);
    let mut strides = vec![1i64; dims];
    for d in (0..dims.saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * sizes[d + 1] as i64;
    }
    strides[dim] = 0;
    let strides = upload(strides, kdtype, &device);
    let keys = empty_device_contiguous_dtype(client.clone(), device.clone(), Shape::new([n]), kdtype);
    assert_addressable("softmax segments", &[&indices]);
    let (count, cube_dim) = launch_dims(&keys, n);
    census::launched("linear_keys_of");
    linear_keys_of::launch(
        &client,
        count.clone(),
        cube_dim,
        into_contiguous(indices).into_tensor_arg(),
        strides.into_tensor_arg(),
        keys.clone().into_tensor_arg(),
        n,
        [idtype, kdtype].map(dtype_to_storage_type),
    );
    let (keys, order) = stable_sort(keys);
    let (runs, segments) = runs_of(&keys);
    (offsets_of_runs(&keys, runs, segments), order)
}

/// The runs of equal keys in the sorted `keys [n]` (`n >= 1`): the inclusive count of run starts
/// at every position (so `runs[p] - 1` is the run of `p`), and the number of runs, read back.
pub(crate) fn runs_of(keys: &CubeTensor) -> (CubeTensor, usize) {
    let n = keys.meta.num_elements();
    let pdtype = position_dtype(n);
    let starts = empty_device_contiguous_dtype(keys.client.clone(), keys.device.clone(), Shape::new([n]), pdtype);
    let (count, dim) = launch_dims(&starts, n);
    census::launched("run_starts");
    run_starts::launch(
        &keys.client,
        count,
        dim,
        keys.clone().into_tensor_arg(),
        starts.clone().into_tensor_arg(),
        [keys.dtype, pdtype].map(dtype_to_storage_type),
    );
    let runs = inclusive_sum(starts);
    let last =
        <CubeBackend as IntTensorOps<CubeBackend>>::int_slice(runs.clone(), &[burn::tensor::Slice::from(n - 1..n)]);
    let count = read_one(last) as usize;
    (runs, count)
}

/// The offsets `[count + 1]` of the runs of the sorted `keys` (`runs`, `count` from [`runs_of`]).
pub(crate) fn offsets_of_runs(keys: &CubeTensor, runs: CubeTensor, count: usize) -> CubeTensor {
    let n = keys.meta.num_elements();
    let offsets =
        empty_device_contiguous_dtype(keys.client.clone(), keys.device.clone(), Shape::new([count + 1]), runs.dtype);
    let (cube_count, dim) = launch_dims(&runs, n);
    census::launched("run_offsets");
    run_offsets::launch(
        &keys.client,
        cube_count,
        dim,
        keys.clone().into_tensor_arg(),
        runs.clone().into_tensor_arg(),
        offsets.clone().into_tensor_arg(),
        [keys.dtype, runs.dtype].map(dtype_to_storage_type),
    );
    offsets
}

/// `unique[runs[p] - 1] = keys[p]` at every run start: each run's key.
#[cube(launch)]
fn run_keys<K: Int, P: Int>(
    keys: &Tensor<K>,
    runs: &Tensor<P>,
    unique: &mut Tensor<K>,
    #[define(K, P)] _dtypes: [ElemType; 2],
) {
    let p = ABSOLUTE_POS;
    if p >= keys.len() {
        terminate!();
    }
    let mut start = true;
    if p > 0 {
        start = keys[p] != keys[p - 1];
    }
    if start {
        unique[usize::cast_from(runs[p]) - 1] = keys[p];
    }
}

/// The key of each run of the sorted `keys` (`runs`, `count` from [`runs_of`]).
pub(crate) fn keys_of_runs(keys: &CubeTensor, runs: &CubeTensor, count: usize) -> CubeTensor {
    let n = keys.meta.num_elements();
    let unique =
        empty_device_contiguous_dtype(keys.client.clone(), keys.device.clone(), Shape::new([count]), keys.dtype);
    let (cube_count, dim) = launch_dims(keys, n);
    census::launched("run_keys");
    run_keys::launch(
        &keys.client,
        cube_count,
        dim,
        keys.clone().into_tensor_arg(),
        runs.clone().into_tensor_arg(),
        unique.clone().into_tensor_arg(),
        [keys.dtype, runs.dtype].map(dtype_to_storage_type),
    );
    unique
}

/// The one element of `t`, read back.
pub(crate) fn read_one(t: CubeTensor) -> i64 {
    read_sync(<CubeBackend as IntTensorOps<CubeBackend>>::int_into_data(t))
        .expect("count readback")
        .iter::<i64>()
        .next()
        .expect("one element")
}
