//! Index algebra on Cube devices: a stable sort of integer keys (carrying the permutation), the
//! bounds of a sorted key range, so that grouping entries by a key (the scatter-add of
//! `RowMovement::index_add_rows`, which conversions and `coalesce` move values with) reads
//! nothing back to the host.
//!
//! The sort is a merge sort whose passes merge pairs of sorted runs of `width` keys: a unit per
//! key finds its place in the merged run by bisection of the other run (its rank in its own run,
//! plus the keys of the other run that go before it: those below it when it comes from the left
//! run, those at or below it when from the right, so equal keys keep their order). `log2 n`
//! passes of `n` units each; every pass reads the whole buffer of the last, so the passes need
//! no synchronisation inside a launch.

use super::census;
use burn::backend::cubecl::dtype_to_storage_type;
use burn::tensor::{DType, Shape};
use burn_cubecl::cubecl::{self, prelude::*};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::{empty_device_contiguous_dtype, zeros_client};
use burn_cubecl::tensor::CubeTensor;

use super::spmm::{assert_addressable, launch_dims};

/// `out[i] = i`.
#[cube(launch)]
fn iota<P: Int>(out: &mut Tensor<P>, #[define(P)] _dtype: ElemType) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    out[ABSOLUTE_POS] = P::cast_from(ABSOLUTE_POS);
}

/// One merge pass: the runs `[2 w t, 2 w t + w)` and `[2 w t + w, 2 w (t + 1))` (cut at `n`) of
/// `keys` (each sorted) merged stably into the same range of `keys_out`, `items` moved alongside.
#[cube(launch)]
fn merge_runs<K: Int, P: Int>(
    keys: &Tensor<K>,
    items: &Tensor<P>,
    keys_out: &mut Tensor<K>,
    items_out: &mut Tensor<P>,
    n: usize,
    width: usize,
    #[define(K, P)] _dtypes: [ElemType; 2],
) {
    let i = ABSOLUTE_POS;
    if i >= n {
        terminate!();
    }
    let run = i / width;
    let pair_start = (run / 2) * 2 * width;
    let middle = select(pair_start + width < n, pair_start + width, n);
    let pair_end = select(middle + width < n, middle + width, n);
    let key = keys[i];
    let from_left = (run & 1) == 0;
    // The other run, and the first of its keys that goes after `key`, by bisection:
    // for a left key, the first right key >= key; for a right key, the first left key > key.
    let mut lo = select(from_left, middle, pair_start);
    let mut hi = select(from_left, pair_end, middle);
    let own_start = select(from_left, pair_start, middle);
    let other_start = lo;
    while lo < hi {
        let mid = (lo + hi) / 2;
        let k = keys[mid];
        let before = select(from_left, k < key, k <= key);
        if before {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let at = pair_start + (i - own_start) + (lo - other_start);
    keys_out[at] = key;
    items_out[at] = items[i];
}

/// `out[r] = #{ p : sorted[p] < r }` for `r` in `0..=rows`: the offsets of the groups of keys
/// `0..rows` in the non-decreasing `sorted` (keys outside `0..rows` fall in no group).
#[cube(launch)]
fn group_bounds<K: Int, P: Int>(
    sorted: &Tensor<K>,
    out: &mut Tensor<P>,
    n: usize,
    #[define(K, P)] _dtypes: [ElemType; 2],
) {
    let r = ABSOLUTE_POS;
    if r >= out.len() {
        terminate!();
    }
    let key = K::cast_from(r);
    let mut lo = 0;
    let mut hi = n;
    while lo < hi {
        let mid = (lo + hi) / 2;
        if sorted[mid] < key {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    out[r] = P::cast_from(lo);
}

/// The index type of the permutations and offsets over `n` entries: i32 where `n` fits.
pub(crate) fn position_dtype(n: usize) -> DType {
    if i32::try_from(n).is_ok() {
        DType::I32
    } else {
        DType::I64
    }
}

/// `keys [n]` (an integer tensor) sorted stably: the sorted keys and the permutation (`perm[p]`
/// the position in `keys` of the `p`-th sorted key), in [`position_dtype`].
pub(crate) fn stable_sort(keys: CubeTensor) -> (CubeTensor, CubeTensor) {
    let n = keys.meta.num_elements();
    let (client, device) = (keys.client.clone(), keys.device.clone());
    let pdtype = position_dtype(n);
    let mut items = empty_device_contiguous_dtype(client.clone(), device.clone(), Shape::new([n]), pdtype);
    let mut keys = into_contiguous(keys);
    if n == 0 {
        return (keys, items);
    }
    // Below 2^31, so that `pair_start + 2 width` stays inside the kernels' 32-bit addresses.
    assert!(i32::try_from(n).is_ok(), "a device sort of {n} keys (at most 2^31 - 1)");
    let (count, dim) = launch_dims(&items, n);
    census::launched("iota");
    iota::launch(&client, count.clone(), dim, items.clone().into_tensor_arg(), dtype_to_storage_type(pdtype));
    let types = [keys.dtype, pdtype].map(dtype_to_storage_type);
    let mut width = 1;
    while width < n {
        let keys_out = empty_device_contiguous_dtype(client.clone(), device.clone(), Shape::new([n]), keys.dtype);
        let items_out = empty_device_contiguous_dtype(client.clone(), device.clone(), Shape::new([n]), pdtype);
        census::launched("merge_runs");
        merge_runs::launch(
            &client,
            count.clone(),
            dim,
            keys.into_tensor_arg(),
            items.into_tensor_arg(),
            keys_out.clone().into_tensor_arg(),
            items_out.clone().into_tensor_arg(),
            n,
            width,
            types,
        );
        (keys, items) = (keys_out, items_out);
        width = width.saturating_mul(2);
    }
    (keys, items)
}

/// The row of entry `p` of the compressed indices `ptr [rows + 1]` (`p < ptr[rows]`): the last
/// row starting at or before `p`, by bisection.
#[cube]
pub(crate) fn row_of<P: Int>(ptr: &Tensor<P>, rows: usize, p: usize) -> usize {
    // `ptr[lo] <= p < ptr[hi]` throughout: `ptr[0] = 0` and `ptr[rows] = nse > p`.
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
    lo
}

/// `out[p]`, the row of every entry `p` of the compressed indices `ptr [rows + 1]`.
#[cube(launch)]
fn entry_rows<P: Int>(ptr: &Tensor<P>, out: &mut Tensor<P>, rows: usize, #[define(P)] _dtype: ElemType) {
    let p = ABSOLUTE_POS;
    if p >= out.len() {
        terminate!();
    }
    out[p] = P::cast_from(row_of::<P>(ptr, rows, p));
}

/// The row of each of the `nse` entries of the valid compressed indices `ptr [rows + 1]`, in
/// their dtype.
pub(crate) fn expand(ptr: CubeTensor, nse: usize) -> CubeTensor {
    let rows = ptr.meta.num_elements() - 1;
    let out = empty_device_contiguous_dtype(ptr.client.clone(), ptr.device.clone(), Shape::new([nse]), ptr.dtype);
    if nse == 0 {
        return out;
    }
    assert_addressable("the rows of compressed indices", &[&out]);
    let (count, dim) = launch_dims(&out, nse);
    let dtype = dtype_to_storage_type(ptr.dtype);
    census::launched("entry_rows");
    entry_rows::launch(
        &out.client,
        count,
        dim,
        into_contiguous(ptr).into_tensor_arg(),
        out.clone().into_tensor_arg(),
        rows,
        dtype,
    );
    out
}

/// The offsets `[rows + 1]` of the groups of keys `0..rows` in the non-decreasing `sorted`.
pub(crate) fn bounds(sorted: &CubeTensor, rows: usize) -> CubeTensor {
    let n = sorted.meta.num_elements();
    let pdtype = position_dtype(n);
    if n == 0 {
        return zeros_client(sorted.client.clone(), sorted.device.clone(), Shape::new([rows + 1]), pdtype);
    }
    let out =
        empty_device_contiguous_dtype(sorted.client.clone(), sorted.device.clone(), Shape::new([rows + 1]), pdtype);
    assert_addressable("group bounds", &[&out]);
    let (count, dim) = launch_dims(&out, rows + 1);
    census::launched("group_bounds");
    group_bounds::launch(
        &out.client,
        count,
        dim,
        sorted.clone().into_tensor_arg(),
        out.clone().into_tensor_arg(),
        n,
        [sorted.dtype, pdtype].map(dtype_to_storage_type),
    );
    out
}
