//! The symbolic side on the device: the pattern of a masked product `C<M> = A · B`, and the
//! per-row ends and total count of the partial products that size the whole product.

use super::{find, one_index_type};
use crate::cube::census;
use crate::cube::keys::{flagged, inclusive_sum, read_one};
use crate::cube::sort::{bounds, expand, row_of};
use crate::cube::spmm::{assert_addressable, launch_dims};
use burn::backend::cubecl::dtype_to_storage_type;
use burn::backend::ops::IntTensorOps;
use burn::tensor::{DType, IntDType, Shape};
use burn_cubecl::cubecl::{self, prelude::*};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::{empty_device_contiguous_dtype, zeros_client};
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::CubeBackend;

/// `hits[p] = 1` where entry `p = (i, j)` of the mask `M` is reached by `A · B` (some entry
/// `(i, k)` of `A` meets an entry `(k, j)` of `B`), else 0: the symbolic pass of `C<M> = A · B`.
/// The three patterns `mask_hits` reads: `A`'s, `B`'s and the mask's.
#[derive(CubeLaunch, CubeType)]
struct MaskHitsArgs<P: Int> {
    a_crow: OwnedTensor<P>,
    a_col: OwnedTensor<P>,
    b_crow: OwnedTensor<P>,
    b_col: OwnedTensor<P>,
    m_crow: OwnedTensor<P>,
    m_col: OwnedTensor<P>,
}

#[cube(launch)]
fn mask_hits<P: Int, Q: Int>(
    args: &MaskHitsArgs<P>,
    hits: &mut Tensor<Q>,
    m: usize,
    #[define(P, Q)] _dtypes: [ElemType; 2],
) {
    let p = ABSOLUTE_POS;
    if p >= hits.len() {
        terminate!();
    }
    let i = row_of::<P>(&args.m_crow, m, p);
    let j = args.m_col[p];
    let mut hit = Q::cast_from(0u32);
    for q in usize::cast_from(args.a_crow[i])..usize::cast_from(args.a_crow[i + 1]) {
        let k = usize::cast_from(args.a_col[q]);
        let end = usize::cast_from(args.b_crow[k + 1]);
        if find::<P>(&args.b_col, usize::cast_from(args.b_crow[k]), end, j) < end {
            hit = Q::cast_from(1u32);
        }
    }
    hits[p] = hit;
}

/// `counts[q]`, the length of row `a_col[q]` of `B`: the partial products of entry `q` of `A`.
#[cube(launch)]
fn product_counts<P: Int>(
    a_col: &Tensor<P>,
    b_crow: &Tensor<P>,
    counts: &mut Tensor<P>,
    #[define(P)] _dtype: ElemType,
) {
    let q = ABSOLUTE_POS;
    if q >= counts.len() {
        terminate!();
    }
    let k = usize::cast_from(a_col[q]);
    counts[q] = b_crow[k + 1] - b_crow[k];
}

/// The number of partial products of `A · B`, and each entry's end among them (the
/// inclusive sum of the row lengths of `B` its column picks).
pub(super) fn product_ends(a_col: &CubeTensor, b_crow: &CubeTensor) -> (CubeTensor, u64) {
    let nnz_a = a_col.meta.num_elements();
    let counts =
        empty_device_contiguous_dtype(a_col.client.clone(), a_col.device.clone(), Shape::new([nnz_a]), DType::I64);
    let [a_col, b_crow] = one_index_type([a_col.clone(), b_crow.clone()]);
    let [a_col, b_crow] = if a_col.dtype == DType::I64 {
        [a_col, b_crow]
    } else {
        [a_col, b_crow].map(|t| <CubeBackend as IntTensorOps<CubeBackend>>::int_cast(t, IntDType::I64))
    };
    let (count, dim) = launch_dims(&counts, nnz_a);
    census::launched("product_counts");
    product_counts::launch(
        &counts.client,
        count,
        dim,
        a_col.into_tensor_arg(),
        b_crow.into_tensor_arg(),
        counts.clone().into_tensor_arg(),
        dtype_to_storage_type(DType::I64),
    );
    let ends = inclusive_sum(counts);
    let last = <CubeBackend as IntTensorOps<CubeBackend>>::int_slice(
        ends.clone(),
        &[burn::tensor::Slice::from(nnz_a - 1..nnz_a)],
    );
    let total = read_one(last) as u64;
    (ends, total)
}

/// The pattern of `C<M> = A · B` (`A [m, k]`, `B [k, n]`, the mask `M [m, n]`: valid CSR
/// patterns with sorted, duplicate-free rows): the entries of `M` the product reaches, as row
/// pointers `[m + 1]` and columns (in the index type of the operands, i32 where all are i32,
/// else i64). A unit per entry of `M` walks row `i` of `A` and looks for `j` in each row of `B`
/// it picks, by bisection. Reads back one integer, the number of entries.
pub(crate) fn masked_pattern(
    a_crow: CubeTensor,
    a_col: CubeTensor,
    b_crow: CubeTensor,
    b_col: CubeTensor,
    m_crow: CubeTensor,
    m_col: CubeTensor,
) -> (CubeTensor, CubeTensor) {
    let [a_crow, a_col, b_crow, b_col, m_crow, m_col] = one_index_type([a_crow, a_col, b_crow, b_col, m_crow, m_col]);
    let (m, nnz_m, idtype) = (m_crow.meta.num_elements() - 1, m_col.meta.num_elements(), m_col.dtype);
    let (client, device) = (m_col.client.clone(), m_col.device.clone());
    if nnz_m == 0 {
        let crow = zeros_client(client.clone(), device.clone(), Shape::new([m + 1]), idtype);
        return (crow, empty_device_contiguous_dtype(client, device, Shape::new([0]), idtype));
    }
    assert_addressable("spgemm", &[&a_col, &b_col, &m_col]);
    let pdtype = crate::cube::sort::position_dtype(nnz_m);
    let hits = empty_device_contiguous_dtype(client.clone(), device, Shape::new([nnz_m]), pdtype);
    let (count, dim) = launch_dims(&hits, nnz_m);
    census::launched("mask_hits");
    mask_hits::launch(
        &client,
        count,
        dim,
        MaskHitsArgsLaunch::new(
            a_crow.into_tensor_arg(),
            a_col.into_tensor_arg(),
            b_crow.into_tensor_arg(),
            b_col.into_tensor_arg(),
            m_crow.clone().into_tensor_arg(),
            m_col.clone().into_tensor_arg(),
        ),
        hits.clone().into_tensor_arg(),
        m,
        [idtype, pdtype].map(dtype_to_storage_type),
    );
    let kept = flagged(hits);
    let nnz = kept.meta.num_elements();
    if nnz == 0 {
        let crow = zeros_client(client.clone(), m_col.device.clone(), Shape::new([m + 1]), idtype);
        return (crow, empty_device_contiguous_dtype(client, m_col.device.clone(), Shape::new([0]), idtype));
    }
    let select = |t: CubeTensor| <CubeBackend as IntTensorOps<CubeBackend>>::int_select(t, 0, kept.clone());
    let rows = select(expand(m_crow, nnz_m));
    let col = into_contiguous(select(m_col));
    // The kept rows are non-decreasing (the mask's are, and `kept` ascends): their bounds.
    let crow = bounds(&into_contiguous(rows), m);
    let crow = if crow.dtype == idtype {
        crow
    } else {
        <CubeBackend as IntTensorOps<CubeBackend>>::int_cast(crow, IntDType::from(idtype))
    };
    (crow, col)
}

/// The number of partial products of `A · B` (`a_col`'s entries times the rows of `B` they
/// pick), computed on the device and read back.
pub(crate) fn product_count(a_col: &CubeTensor, b_crow: &CubeTensor) -> u64 {
    if a_col.meta.num_elements() == 0 {
        return 0;
    }
    product_ends(a_col, b_crow).1
}
