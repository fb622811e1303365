//! `index_select` along a sparse dim on Cube devices: the join of the entries' coordinates with
//! the index list, computed where both live.
//!
//! The index is sorted stably (`sort::stable_sort`, which carries each value's position), so
//! the positions holding one value form a run in ascending order. A unit per entry finds the
//! run of its coordinate by bisection; a prefix sum of the run lengths gives every entry its
//! first output slot; a unit per output slot then finds its entry (`sort::row_of`) and its
//! position in the index. The output is entry-major, positions ascending within an entry: the
//! order the host planner gives. One read-back: the smallest and largest index value, the
//! number of matches and whether the index is strictly increasing, together.

use super::census;
use burn::backend::cubecl::dtype_to_storage_type;
use burn::backend::{ops::IntTensorOps, read_sync};
use burn::tensor::{DType, IntDType, Shape, Slice};
use burn_cubecl::cubecl::{self, prelude::*};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::{empty_device_contiguous_dtype, zeros_client};
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::CubeBackend;

use super::keys::{inclusive_sum, non_increase_count};
use super::sort::{position_dtype, row_of, stable_sort};
use super::spmm::{assert_addressable, launch_dims};
use crate::index_kernels::Matched;

/// For each entry `e`, the run of `coords[e]` in the non-decreasing `sorted [len]`: its start
/// `first[e]` and its length `count[e]` (zero where the value is absent).
#[cube(launch)]
fn match_runs<K: Int, P: Int>(
    coords: &Tensor<K>,
    sorted: &Tensor<K>,
    first: &mut Tensor<P>,
    count: &mut Tensor<P>,
    len: usize,
    #[define(K, P)] _dtypes: [ElemType; 2],
) {
    let e = ABSOLUTE_POS;
    if e >= first.len() {
        terminate!();
    }
    let c = coords[e];
    // The first position holding a value at or above `c`.
    let mut lo = 0;
    let mut hi = len;
    while lo < hi {
        let mid = (lo + hi) / 2;
        if sorted[mid] < c {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let start = lo;
    // The first position holding a value above `c`.
    hi = len;
    while lo < hi {
        let mid = (lo + hi) / 2;
        if sorted[mid] <= c {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    first[e] = P::cast_from(start);
    count[e] = P::cast_from(lo - start);
}

/// For each output slot `o`: its entry `src[o]` (the last entry whose first slot `ptr[e]` is at
/// or before `o`) and the position `pos[o]` in the index of the value it matched, the
/// `(o - ptr[e])`-th of its run in the sort's permutation `perm`.
#[cube(launch)]
fn place_matches<P: Int, Q: Int, O: Int>(
    ptr: &Tensor<P>,
    first: &Tensor<P>,
    perm: &Tensor<Q>,
    src: &mut Tensor<O>,
    pos: &mut Tensor<O>,
    entries: usize,
    #[define(P, Q, O)] _dtypes: [ElemType; 3],
) {
    let o = ABSOLUTE_POS;
    if o >= src.len() {
        terminate!();
    }
    let e = row_of::<P>(ptr, entries, o);
    let k = usize::cast_from(first[e]) + o - usize::cast_from(ptr[e]);
    src[o] = O::cast_from(e);
    pos[o] = O::cast_from(perm[k]);
}

fn cast(t: CubeTensor, dtype: DType) -> CubeTensor {
    if t.dtype == dtype {
        t
    } else {
        <CubeBackend as IntTensorOps<CubeBackend>>::int_cast(t, IntDType::from(dtype))
    }
}

fn at(t: &CubeTensor, i: usize) -> CubeTensor {
    let one = <CubeBackend as IntTensorOps<CubeBackend>>::int_slice(t.clone(), &[Slice::from(i..i + 1)]);
    cast(one, DType::I64)
}

/// The matches of the coordinates `coords [n]` against the index `index [len]` (`n, len >= 1`,
/// both i32 or i64): every pair (entry, position) with `coords[entry] == index[position]`,
/// entry-major, as `src` and `pos` in `sort::position_dtype` of the larger of `n` and `len`;
/// [`Matched::OutOfBounds`] when an index value lies outside `0..size`, [`Matched::TooMany`] when
/// there are more than `limit` pairs. Reads back four integers, in one transfer.
pub(crate) fn index_matches(coords: CubeTensor, index: CubeTensor, size: usize, limit: u64) -> Matched<CubeBackend> {
    let (n, len) = (coords.meta.num_elements(), index.meta.num_elements());
    assert!(n >= 1 && len >= 1, "index_matches of {n} entries and {len} positions");
    let (client, device) = (coords.client.clone(), coords.device.clone());
    // One key type for the comparisons: the wider of the two.
    let kdtype = if coords.dtype == DType::I64 || index.dtype == DType::I64 { DType::I64 } else { DType::I32 };
    let coords = into_contiguous(cast(coords, kdtype));
    let index = into_contiguous(cast(index, kdtype));
    assert_addressable("index_select", &[&coords, &index]);
    // Whether the index is strictly increasing (the result then keeps a coalesced input's order).
    let non_increases = non_increase_count(&index);
    let (sorted, perm) = stable_sort(index);
    // Counts and offsets in one type wide enough for `n · len` pairs.
    let pdtype = if (n as u128) * (len as u128) <= i32::MAX as u128 { DType::I32 } else { DType::I64 };
    let first = empty_device_contiguous_dtype(client.clone(), device.clone(), Shape::new([n]), pdtype);
    let count = empty_device_contiguous_dtype(client.clone(), device.clone(), Shape::new([n]), pdtype);
    let (units, dim) = launch_dims(&first, n);
    census::launched("match_runs");
    match_runs::launch(
        &client,
        units,
        dim,
        coords.into_tensor_arg(),
        sorted.clone().into_tensor_arg(),
        first.clone().into_tensor_arg(),
        count.clone().into_tensor_arg(),
        len,
        [kdtype, pdtype].map(dtype_to_storage_type),
    );
    let ends = inclusive_sum(count);
    let probe = <CubeBackend as IntTensorOps<CubeBackend>>::int_cat(
        vec![at(&sorted, 0), at(&sorted, len - 1), at(&ends, n - 1), cast(non_increases, DType::I64)],
        0,
    );
    let probe: Vec<i64> = read_sync(<CubeBackend as IntTensorOps<CubeBackend>>::int_into_data(probe))
        .expect("index_select readback")
        .iter::<i64>()
        .collect();
    let [smallest, largest, pairs, non_increases] = probe[..] else { unreachable!("four values read back") };
    if smallest < 0 || largest >= size as i64 {
        return Matched::OutOfBounds;
    }
    let pairs = pairs as u64;
    if pairs > limit {
        return Matched::TooMany(pairs);
    }
    let m = pairs as usize;
    let odtype = position_dtype(n.max(len));
    let increasing = non_increases == 0;
    let src = empty_device_contiguous_dtype(client.clone(), device.clone(), Shape::new([m]), odtype);
    let pos = empty_device_contiguous_dtype(client.clone(), device.clone(), Shape::new([m]), odtype);
    if m == 0 {
        return Matched::Pairs { src, pos, increasing };
    }
    assert_addressable("index_select", &[&src]);
    let zero = zeros_client(client.clone(), device, Shape::new([1]), pdtype);
    let ptr = <CubeBackend as IntTensorOps<CubeBackend>>::int_cat(vec![zero, ends], 0);
    let (units, dim) = launch_dims(&src, m);
    census::launched("place_matches");
    place_matches::launch(
        &client,
        units,
        dim,
        into_contiguous(ptr).into_tensor_arg(),
        first.into_tensor_arg(),
        perm.clone().into_tensor_arg(),
        src.clone().into_tensor_arg(),
        pos.clone().into_tensor_arg(),
        n,
        [pdtype, perm.dtype, odtype].map(dtype_to_storage_type),
    );
    Matched::Pairs { src, pos, increasing }
}
