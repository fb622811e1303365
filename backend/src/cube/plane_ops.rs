//! What the plane kernels (`sddmm_planes`, `softmax_planes`) share: reductions over an aligned
//! group of a plane's units, and the choice of the group's width at launch.
//!
//! A group is either the whole plane (`group == 0`: CubeCL's `plane_sum` / `plane_max`) or a
//! power of two `group` at most the device's smallest plane, which then divides every plane of
//! the device: a butterfly of `plane_shuffle_xor` over masks below `group` stays inside each
//! aligned group, so a plane serves several short rows or segments at once. Every unit of a plane
//! must call these the same number of times: the callers' trip counts depend on the launch alone.

use burn_cubecl::cubecl::{self, prelude::*};

/// The sum of `v` over the unit's group, in every unit of the group.
#[cube]
pub(crate) fn group_sum<F: Float>(v: F, #[comptime] group: u32) -> F {
    if comptime!(group == 0) {
        plane_sum(v)
    } else {
        let mut s = v;
        #[unroll]
        for i in 0..comptime!(group.trailing_zeros()) {
            s += plane_shuffle_xor(s, comptime!(1u32 << i));
        }
        s
    }
}

/// The largest of `v` over the unit's group, in every unit of the group; a NaN is kept only where
/// every unit holds one (the softmax's units all start from their segment's first element, so a
/// NaN there reaches every unit, as in the host kernel's max).
#[cube]
pub(crate) fn group_max<F: Float>(v: F, #[comptime] group: u32) -> F {
    if comptime!(group == 0) {
        plane_max(v)
    } else {
        let mut m = v;
        #[unroll]
        for i in 0..comptime!(group.trailing_zeros()) {
            let other = plane_shuffle_xor(m, comptime!(1u32 << i));
            m = select(other > m, other, m);
        }
        m
    }
}

/// The group for items of about `len` units of work each (a row's vectors, a segment's elements)
/// on a device whose planes hold at least `plane_min` units: 0 (the whole plane) where an item
/// fills the smallest plane, else the next power of two at or above `len`, at most `plane_min`.
pub(crate) fn group_for(len: usize, plane_min: usize) -> u32 {
    if plane_min == 0 || len >= plane_min || !plane_min.is_power_of_two() {
        0
    } else {
        len.max(1).next_power_of_two().min(plane_min) as u32
    }
}
