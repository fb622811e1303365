//! SDDMM on Cube devices with plane (warp, subgroup) operations: `out[p] = Σⱼ a[row(p), j] ·
//! b[col(p), j]` for every stored entry `p`, a group of a plane's units per entry.
//!
//! The naive kernel (`spmm::sampled_row_dots`) gives each unit an entry and has it walk both rows
//! alone: neighbouring units read rows far apart, so no load of a plane coalesces. Here the units
//! of a group take consecutive vectors of the two rows (`Vector<F, N>` of 4, or 2, where `n`
//! allows), so the group reads each row in whole lines, and the partial dots meet in a plane
//! reduction. The group is a whole plane (`plane_sum`) where a row has at least a plane's worth of
//! vectors; for shorter rows it is the next power of two above the row's vectors (at most the
//! device's smallest plane), several entries to a plane, reduced by `plane_shuffle_xor` within
//! each aligned group, so that short rows do not leave most of a plane idle.
//!
//! Every unit of a plane takes every plane operation the same number of times (the trip counts
//! depend on the launch alone, never on an entry), as the plane operations of WGSL and SPIR-V
//! want; a group past the last entry computes a clamped entry and writes nothing.

use super::census;
use super::plane_ops::{group_for, group_sum};
use super::sort::row_of;
use burn::backend::cubecl::dtype_to_storage_type;
use burn_cubecl::cubecl::{self, calculate_cube_count_elemwise, prelude::*, CubeDim};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;

/// The units of a cube: a multiple of every plane size (at most 128).
const CUBE_UNITS: usize = 256;

/// The sizes a launch of [`sampled_dots_planes`] works with.
#[derive(CubeLaunch, CubeType)]
struct EntryShape {
    /// Rows of the pattern.
    rows: usize,
    /// Stored entries: `out`'s length.
    nnz: usize,
    /// Vectors of a dense row: `n / N`.
    vectors: usize,
}

/// `out[p] = Σⱼ a[row(p), j] · b[idx[p], j]` over the vectors `j` of `a [m, vectors]` and
/// `b [k, vectors]`, a group of `group` units per entry (a whole plane when `group` is 0); the
/// groups stride over the entries by the number of groups launched.
#[cube(launch)]
// CubeCL's kernels have no `div_ceil`.
#[allow(clippy::manual_div_ceil)]
fn sampled_dots_planes<F: Float, P: Int, J: Int, N: Size>(
    ptr: &Tensor<P>,
    idx: &Tensor<J>,
    a: &Tensor<Vector<F, N>>,
    b: &Tensor<Vector<F, N>>,
    out: &mut Tensor<F>,
    shape: EntryShape,
    #[comptime] group: u32,
    #[define(F, P, J)] _dtypes: [ElemType; 3],
) {
    // The group's width at run time: the plane's own size where the group is the plane.
    let width = if comptime!(group == 0) { PLANE_DIM as usize } else { comptime!(group as usize).runtime() };
    let lane = UNIT_POS_PLANE as usize % width;
    // Planes hold consecutive units, and a cube holds whole planes: `ABSOLUTE_POS / width` counts
    // the groups in launch order.
    let first = ABSOLUTE_POS / width;
    let groups = CUBE_COUNT * CUBE_DIM as usize / width;
    let rounds = (shape.nnz + groups - 1) / groups;
    for round in 0..rounds {
        let p = round * groups + first;
        let live = p < shape.nnz;
        let at = select(live, p, shape.nnz - 1);
        let a_row = row_of::<P>(ptr, shape.rows, at) * shape.vectors;
        let b_row = usize::cast_from(idx[at]) * shape.vectors;
        let mut acc = Vector::<F, N>::new(F::new(0.0));
        let mut j = lane;
        while j < shape.vectors {
            acc += a[a_row + j] * b[b_row + j];
            j += width;
        }
        let mut partial = F::new(0.0);
        #[unroll]
        for c in 0..acc.vector_size() {
            partial += acc.extract(c);
        }
        let dot = group_sum::<F>(partial, group);
        if live && lane == 0 {
            out[p] = dot;
        }
    }
}

/// SDDMM over the compressed pattern `ptr [rows + 1]`, `idx [nnz]` into `out [nnz]`, from
/// `a [m, n]` and `b [k, n]` read in vectors of `width` (which divides `n`). The operands are
/// checked by the caller (`spmm::sddmm`): a valid pattern, every operand addressable in 32 bits,
/// `nnz · n > 0`.
pub(crate) fn launch(ptr: CubeTensor, idx: CubeTensor, a: CubeTensor, b: CubeTensor, out: &CubeTensor, width: usize) {
    let rows = ptr.meta.shape()[0] - 1;
    let nnz = idx.meta.shape()[0];
    let vectors = a.meta.shape()[1] / width;
    let hardware = &out.client.properties().hardware;
    let group = group_for(vectors, hardware.plane_size_min as usize);
    // Units for one round: a group per entry, the group at most the largest plane.
    let per_entry = if group == 0 { hardware.plane_size_max.max(1) as usize } else { group as usize };
    let cube_dim = CubeDim::new_1d(CUBE_UNITS as u32);
    let count = calculate_cube_count_elemwise(&out.client, nnz * per_entry, cube_dim);
    let types = [out.dtype, ptr.dtype, idx.dtype].map(dtype_to_storage_type);
    census::launched("sampled_dots_planes");
    sampled_dots_planes::launch(
        &out.client,
        count,
        cube_dim,
        width,
        into_contiguous(ptr).into_tensor_arg(),
        into_contiguous(idx).into_tensor_arg(),
        into_contiguous(a).into_tensor_arg(),
        into_contiguous(b).into_tensor_arg(),
        out.clone().into_tensor_arg(),
        EntryShapeLaunch::new(rows, nnz, vectors),
        group,
        types,
    );
}
