//! Index algebra computed where the indices live, behind the extension trait
//! [`IndexKernels`]. On a Cube device these run as kernels: the keys of COO entries, the
//! coalescing plan (keys sorted and numbered there), the compression and expansion of sorted
//! row indices, the segments of a softmax along any dim, the count of a sparse product's
//! partial products, the pattern of a masked sparse product, the non-zeros of a dense tensor
//! with their coordinates, and the join of `index_select` (entries against the index's
//! positions). So `coalesce`, `to_dense`, `mul_dense`, `sparse::sum`, the CSR <-> COO
//! conversions, dense -> COO/CSR, the softmax segments, `index_select`, spgemm's memory check
//! and its masked symbolic pass read back at most a few integers instead of every index (or
//! every element). Flex (whose indices are host memory already) and
//! the other backends answer `None`, and the callers plan on the host. Index tensors are never
//! tracked, so autodiff devices delegate to their inner backend.

use burn::backend::{
    backend_extension,
    tensor::{FloatTensor, IntTensor},
    Backend, ExtensionType, Flex,
};
use burn::tensor::{DType, Int, IntDType, Tensor};

/// Index algebra on the indices' device.
#[backend_extension(Flex, Cube: cfg(feature = "cube"), Autodiff)]
#[diagnostic::on_unimplemented(
    message = "sparsegrad has no kernels for the backend `{Self}` (`IndexKernels` is not implemented)",
    label = "no sparsegrad kernels for this backend",
    note = "a `Fusion<CubeBackend>` here means that burn's feature `fusion` is on (burn's default features turn it on) and sparsegrad's is off: turn on sparsegrad's `fusion` with `wgpu`, `sparsegrad = {{ version = \"0.1\", features = [\"wgpu\", \"fusion\"] }}` (see `sparsegrad::guide::gpu`)"
)]
pub trait IndexKernels: Backend {
    /// The linear key of each entry of the valid COO indices `[sizes.len(), n]` over `sizes`
    /// (row-major; their product fits i64): `[n]`, i32 where every key fits, else i64.
    fn linear_keys(indices: IntTensor<Self>, sizes: &[usize]) -> Option<IntTensor<Self>> {
        let _ = (indices, sizes);
        None
    }

    /// For valid COO indices `[sizes.len(), n]` over `sizes` (their product fits i64, `n >= 1`):
    /// `Some(Some(..))`, the sorted unique coordinates `[sizes.len(), unique]` in the indices'
    /// dtype and each entry's position among them (`[n]`, i32 or i64); `Some(None)` where the
    /// indices already are sorted and unique.
    fn coalesce_plan(indices: IntTensor<Self>, sizes: &[usize]) -> Option<Option<(IntTensor<Self>, IntTensor<Self>)>> {
        let _ = (indices, sizes);
        None
    }

    /// The compressed indices `[rows + 1]` (i32 or i64) of the non-decreasing row indices
    /// `sorted [n]`, all in `0..rows`.
    fn compress_sorted(sorted: IntTensor<Self>, rows: usize) -> Option<IntTensor<Self>> {
        let _ = (sorted, rows);
        None
    }

    /// The row of each of the `nse` entries of the valid compressed indices `[rows + 1]`, in
    /// their dtype.
    fn expand(compressed: IntTensor<Self>, nse: usize) -> Option<IntTensor<Self>> {
        let _ = (compressed, nse);
        None
    }

    /// The segments of a softmax along `dim` of the valid COO indices `[sizes.len(), n]` over
    /// `sizes` (`n >= 1`): offsets `[segments + 1]` into an order `[n]` of the entries that
    /// groups those agreeing on every coordinate but `dim` (in storage order within a group),
    /// the groups in the order of those coordinates.
    fn segment_plan(
        indices: IntTensor<Self>,
        sizes: &[usize],
        dim: usize,
    ) -> Option<(IntTensor<Self>, IntTensor<Self>)> {
        let _ = (indices, sizes, dim);
        None
    }

    /// The number of partial products of a sparse product `A · B`: the sum over the entries of
    /// `A` (columns `a_col`, each in `0..k`) of the lengths of the rows of `B` they pick
    /// (`b_crow [k + 1]`, valid compressed indices).
    fn partial_products(a_col: IntTensor<Self>, b_crow: IntTensor<Self>) -> Option<u64> {
        let _ = (a_col, b_crow);
        None
    }

    /// The pattern of the masked product `C<M> = A · B` (the symbolic pass): of the entries of
    /// the mask `M [m, n]`, those some entry `(i, k)` of `A [m, k]` meets with an entry `(k, j)`
    /// of `B [k, n]`, as row pointers `[m + 1]` and columns (i32 or i64). All three are valid
    /// CSR patterns with sorted, duplicate-free rows (checked CSR tensors').
    fn masked_product_pattern(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        m_crow: IntTensor<Self>,
        m_col: IntTensor<Self>,
    ) -> Option<(IntTensor<Self>, IntTensor<Self>)> {
        let _ = (a_crow, a_col, b_crow, b_col, m_crow, m_col);
        None
    }

    /// The positions (ascending, i32 or i64) of the rows of `flat [items, item]` that hold an
    /// element other than zero (NaN included).
    fn nonzero_rows(flat: FloatTensor<Self>) -> Option<IntTensor<Self>> {
        let _ = flat;
        None
    }

    /// The coordinates `[sizes.len(), n]` over `sizes` (row-major) of the linear keys `keys [n]`
    /// (each below the product of `sizes`), in `dtype` (which holds every size).
    fn delinearize(keys: IntTensor<Self>, sizes: &[usize], dtype: IntDType) -> Option<IntTensor<Self>> {
        let _ = (keys, sizes, dtype);
        None
    }

    /// The join of `index_select`: every pair (entry `e`, position `p`) with `coords[e] ==
    /// index[p]`, for the coordinates `coords [n]` of the entries along the selected dim and the
    /// index `index [len]` (`n, len >= 1`), entry-major with positions ascending;
    /// [`Matched::OutOfBounds`] when a value of `index` lies outside `0..size`,
    /// [`Matched::TooMany`] when there are more than `limit` pairs.
    fn index_matches(
        coords: IntTensor<Self>,
        index: IntTensor<Self>,
        size: usize,
        limit: u64,
    ) -> Option<Matched<Self>> {
        let _ = (coords, index, size, limit);
        None
    }
}

/// What [`IndexKernels::index_matches`] found.
#[derive(ExtensionType)]
pub enum Matched<B: Backend> {
    /// The pairs, entry-major.
    Pairs {
        /// Each pair's entry `[pairs]`.
        src: IntTensor<B>,
        /// Each pair's position in the index `[pairs]`.
        pos: IntTensor<B>,
        /// Whether the index is strictly increasing.
        increasing: bool,
    },
    /// A value of the index outside the dim.
    OutOfBounds,
    /// More pairs than the caller's limit: their number.
    TooMany(u64),
}

impl IndexKernels for Flex {}

/// Cube devices: the kernels of `cube::keys` and `cube::sort`, for 32- and 64-bit indices
/// (wgpu has no narrower integers; other dtypes plan on the host).
#[cfg(feature = "cube")]
impl IndexKernels for crate::cube::CubeBackend {
    fn linear_keys(indices: IntTensor<Self>, sizes: &[usize]) -> Option<IntTensor<Self>> {
        wide(&indices).then(|| crate::cube::keys::linear_keys(indices, sizes))
    }

    fn coalesce_plan(indices: IntTensor<Self>, sizes: &[usize]) -> Option<Option<(IntTensor<Self>, IntTensor<Self>)>> {
        wide(&indices).then(|| crate::cube::keys::coalesce_plan(indices, sizes))
    }

    fn compress_sorted(sorted: IntTensor<Self>, rows: usize) -> Option<IntTensor<Self>> {
        wide(&sorted).then(|| crate::cube::sort::bounds(&burn_cubecl::kernel::into_contiguous(sorted), rows))
    }

    fn expand(compressed: IntTensor<Self>, nse: usize) -> Option<IntTensor<Self>> {
        wide(&compressed).then(|| crate::cube::sort::expand(compressed, nse))
    }

    fn segment_plan(
        indices: IntTensor<Self>,
        sizes: &[usize],
        dim: usize,
    ) -> Option<(IntTensor<Self>, IntTensor<Self>)> {
        wide(&indices).then(|| crate::cube::keys::segment_plan(indices, sizes, dim))
    }

    fn partial_products(a_col: IntTensor<Self>, b_crow: IntTensor<Self>) -> Option<u64> {
        (wide(&a_col) && wide(&b_crow)).then(|| crate::cube::spgemm::product_count(&a_col, &b_crow))
    }

    fn masked_product_pattern(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        m_crow: IntTensor<Self>,
        m_col: IntTensor<Self>,
    ) -> Option<(IntTensor<Self>, IntTensor<Self>)> {
        let takes = [&a_crow, &a_col, &b_crow, &b_col, &m_crow, &m_col].into_iter().all(wide);
        takes.then(|| crate::cube::spgemm::masked_pattern(a_crow, a_col, b_crow, b_col, m_crow, m_col))
    }

    fn nonzero_rows(flat: FloatTensor<Self>) -> Option<IntTensor<Self>> {
        use burn::backend::ops::FloatTensorOps;
        // Other float types as f32 (exact for the test against zero, NaN stays NaN).
        let flat = if crate::cube::spmm::takes(flat.dtype) {
            flat
        } else {
            Self::float_cast(flat, burn::tensor::FloatDType::F32)
        };
        Some(crate::cube::keys::nonzero_rows(flat))
    }

    fn delinearize(keys: IntTensor<Self>, sizes: &[usize], dtype: IntDType) -> Option<IntTensor<Self>> {
        let dtype = burn::tensor::DType::from(dtype);
        let wide_out = matches!(dtype, burn::tensor::DType::I32 | burn::tensor::DType::I64);
        (wide(&keys) && wide_out).then(|| crate::cube::keys::delinearize(keys, sizes, dtype))
    }

    fn index_matches(
        coords: IntTensor<Self>,
        index: IntTensor<Self>,
        size: usize,
        limit: u64,
    ) -> Option<Matched<Self>> {
        (wide(&coords) && wide(&index)).then(|| crate::cube::matches::index_matches(coords, index, size, limit))
    }
}

/// Whether the Cube kernels take an index tensor of this dtype.
#[cfg(feature = "cube")]
fn wide(t: &burn_cubecl::tensor::CubeTensor) -> bool {
    matches!(t.dtype, burn::tensor::DType::I32 | burn::tensor::DType::I64)
}

/// Cube devices under burn's `fusion`: the Cube kernels on the resolved tensors (`cube::fused`),
/// for the dtypes they take (the others plan on the host, with the tensor left unresolved).
#[cfg(all(feature = "cube", feature = "fusion"))]
impl IndexKernels for crate::cube::FusedCube {
    fn linear_keys(indices: IntTensor<Self>, sizes: &[usize]) -> Option<IntTensor<Self>> {
        use crate::cube::fused::{int, publish_int};
        let client = indices.client.clone();
        let keys = fused_wide(&indices).then(|| crate::cube::CubeBackend::linear_keys(int(indices), sizes))??;
        Some(publish_int(&client, keys))
    }

    fn coalesce_plan(indices: IntTensor<Self>, sizes: &[usize]) -> Option<Option<(IntTensor<Self>, IntTensor<Self>)>> {
        use crate::cube::fused::{int, publish, Out};
        let client = indices.client.clone();
        let plan = fused_wide(&indices).then(|| crate::cube::CubeBackend::coalesce_plan(int(indices), sizes))??;
        Some(plan.map(|(unique, position)| {
            let [unique, position] = publish(&client, [Out::Int(unique), Out::Int(position)]);
            (unique, position)
        }))
    }

    fn compress_sorted(sorted: IntTensor<Self>, rows: usize) -> Option<IntTensor<Self>> {
        use crate::cube::fused::{int, publish_int};
        let client = sorted.client.clone();
        let out = fused_wide(&sorted).then(|| crate::cube::CubeBackend::compress_sorted(int(sorted), rows))??;
        Some(publish_int(&client, out))
    }

    fn expand(compressed: IntTensor<Self>, nse: usize) -> Option<IntTensor<Self>> {
        use crate::cube::fused::{int, publish_int};
        let client = compressed.client.clone();
        let out = fused_wide(&compressed).then(|| crate::cube::CubeBackend::expand(int(compressed), nse))??;
        Some(publish_int(&client, out))
    }

    fn segment_plan(
        indices: IntTensor<Self>,
        sizes: &[usize],
        dim: usize,
    ) -> Option<(IntTensor<Self>, IntTensor<Self>)> {
        use crate::cube::fused::{int, publish, Out};
        let client = indices.client.clone();
        let (offsets, order) =
            fused_wide(&indices).then(|| crate::cube::CubeBackend::segment_plan(int(indices), sizes, dim))??;
        let [offsets, order] = publish(&client, [Out::Int(offsets), Out::Int(order)]);
        Some((offsets, order))
    }

    fn partial_products(a_col: IntTensor<Self>, b_crow: IntTensor<Self>) -> Option<u64> {
        use crate::cube::fused::int;
        (fused_wide(&a_col) && fused_wide(&b_crow))
            .then(|| crate::cube::CubeBackend::partial_products(int(a_col), int(b_crow)))?
    }

    fn masked_product_pattern(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        m_crow: IntTensor<Self>,
        m_col: IntTensor<Self>,
    ) -> Option<(IntTensor<Self>, IntTensor<Self>)> {
        use crate::cube::fused::{int, publish, Out};
        let client = m_col.client.clone();
        if ![&a_crow, &a_col, &b_crow, &b_col, &m_crow, &m_col].into_iter().all(fused_wide) {
            return None;
        }
        let (crow, col) = crate::cube::CubeBackend::masked_product_pattern(
            int(a_crow),
            int(a_col),
            int(b_crow),
            int(b_col),
            int(m_crow),
            int(m_col),
        )?;
        let [crow, col] = publish(&client, [Out::Int(crow), Out::Int(col)]);
        Some((crow, col))
    }

    fn nonzero_rows(flat: FloatTensor<Self>) -> Option<IntTensor<Self>> {
        use crate::cube::fused::{float, publish_int};
        let client = flat.client.clone();
        Some(publish_int(&client, crate::cube::CubeBackend::nonzero_rows(float(flat))?))
    }

    fn delinearize(keys: IntTensor<Self>, sizes: &[usize], dtype: IntDType) -> Option<IntTensor<Self>> {
        use crate::cube::fused::{int, publish_int};
        let client = keys.client.clone();
        let wide_out = matches!(DType::from(dtype), DType::I32 | DType::I64);
        let out = (fused_wide(&keys) && wide_out)
            .then(|| crate::cube::CubeBackend::delinearize(int(keys), sizes, dtype))??;
        Some(publish_int(&client, out))
    }

    fn index_matches(
        coords: IntTensor<Self>,
        index: IntTensor<Self>,
        size: usize,
        limit: u64,
    ) -> Option<Matched<Self>> {
        use crate::cube::fused::{int, publish, Out};
        let client = coords.client.clone();
        let found = (fused_wide(&coords) && fused_wide(&index))
            .then(|| crate::cube::CubeBackend::index_matches(int(coords), int(index), size, limit))??;
        Some(match found {
            Matched::Pairs { src, pos, increasing } => {
                let [src, pos] = publish(&client, [Out::Int(src), Out::Int(pos)]);
                Matched::Pairs { src, pos, increasing }
            }
            Matched::OutOfBounds => Matched::OutOfBounds,
            Matched::TooMany(n) => Matched::TooMany(n),
        })
    }
}

/// Whether the Cube kernels take a fused index tensor of this dtype (checked before resolving it).
#[cfg(all(feature = "cube", feature = "fusion"))]
fn fused_wide(t: &crate::cube::fused::Fused) -> bool {
    matches!(t.dtype, DType::I32 | DType::I64)
}

mod autodiff_impl {
    use super::*;
    use burn::backend::autodiff::{checkpoint::strategy::CheckpointStrategy, Autodiff};

    impl<B: IndexKernels, C: CheckpointStrategy> IndexKernels for Autodiff<B, C> {
        fn linear_keys(indices: IntTensor<Self>, sizes: &[usize]) -> Option<IntTensor<Self>> {
            B::linear_keys(indices, sizes)
        }

        fn coalesce_plan(
            indices: IntTensor<Self>,
            sizes: &[usize],
        ) -> Option<Option<(IntTensor<Self>, IntTensor<Self>)>> {
            B::coalesce_plan(indices, sizes)
        }

        fn compress_sorted(sorted: IntTensor<Self>, rows: usize) -> Option<IntTensor<Self>> {
            B::compress_sorted(sorted, rows)
        }

        fn expand(compressed: IntTensor<Self>, nse: usize) -> Option<IntTensor<Self>> {
            B::expand(compressed, nse)
        }

        fn segment_plan(
            indices: IntTensor<Self>,
            sizes: &[usize],
            dim: usize,
        ) -> Option<(IntTensor<Self>, IntTensor<Self>)> {
            B::segment_plan(indices, sizes, dim)
        }

        fn partial_products(a_col: IntTensor<Self>, b_crow: IntTensor<Self>) -> Option<u64> {
            B::partial_products(a_col, b_crow)
        }

        fn masked_product_pattern(
            a_crow: IntTensor<Self>,
            a_col: IntTensor<Self>,
            b_crow: IntTensor<Self>,
            b_col: IntTensor<Self>,
            m_crow: IntTensor<Self>,
            m_col: IntTensor<Self>,
        ) -> Option<(IntTensor<Self>, IntTensor<Self>)> {
            B::masked_product_pattern(a_crow, a_col, b_crow, b_col, m_crow, m_col)
        }

        fn nonzero_rows(flat: FloatTensor<Self>) -> Option<IntTensor<Self>> {
            B::nonzero_rows(flat.primitive().clone())
        }

        fn delinearize(keys: IntTensor<Self>, sizes: &[usize], dtype: IntDType) -> Option<IntTensor<Self>> {
            B::delinearize(keys, sizes, dtype)
        }

        fn index_matches(
            coords: IntTensor<Self>,
            index: IntTensor<Self>,
            size: usize,
            limit: u64,
        ) -> Option<Matched<Self>> {
            // The same index tensors: autodiff tracks floats only.
            Some(match B::index_matches(coords, index, size, limit)? {
                Matched::Pairs { src, pos, increasing } => Matched::Pairs { src, pos, increasing },
                Matched::OutOfBounds => Matched::OutOfBounds,
                Matched::TooMany(n) => Matched::TooMany(n),
            })
        }
    }
}

type Dispatch = burn::backend::Dispatch;

/// The merged coordinates and each entry's position among them.
pub(crate) type Merge = (Tensor<2, Int>, Tensor<1, Int>);

/// [`IndexKernels::coalesce_plan`] for an Int tensor of any device.
pub(crate) fn device_coalesce_plan(indices: &Tensor<2, Int>, sizes: &[usize]) -> Option<Option<Merge>> {
    let plan = <Dispatch as IndexKernels>::coalesce_plan(indices.clone().into_dispatch(), sizes)?;
    Some(plan.map(|(coords, targets)| (Tensor::from_dispatch(coords), Tensor::from_dispatch(targets))))
}

/// [`IndexKernels::linear_keys`] for an Int tensor of any device.
pub(crate) fn device_linear_keys(indices: &Tensor<2, Int>, sizes: &[usize]) -> Option<Tensor<1, Int>> {
    <Dispatch as IndexKernels>::linear_keys(indices.clone().into_dispatch(), sizes).map(Tensor::from_dispatch)
}

/// [`IndexKernels::compress_sorted`] for an Int tensor of any device.
pub(crate) fn device_compress_sorted(sorted: &Tensor<1, Int>, rows: usize) -> Option<Tensor<1, Int>> {
    <Dispatch as IndexKernels>::compress_sorted(sorted.clone().into_dispatch(), rows).map(Tensor::from_dispatch)
}

/// [`IndexKernels::expand`] for an Int tensor of any device.
pub(crate) fn device_expand(compressed: &Tensor<1, Int>, nse: usize) -> Option<Tensor<1, Int>> {
    <Dispatch as IndexKernels>::expand(compressed.clone().into_dispatch(), nse).map(Tensor::from_dispatch)
}

/// [`IndexKernels::nonzero_rows`] for a tensor of any device.
pub(crate) fn device_nonzero_rows(flat: &Tensor<2>) -> Option<Tensor<1, Int>> {
    <Dispatch as IndexKernels>::nonzero_rows(flat.clone().into_dispatch()).map(Tensor::from_dispatch)
}

/// [`IndexKernels::delinearize`] for a tensor of any device (`None` for an index dtype that is
/// not a signed integer type).
pub(crate) fn device_delinearize(keys: &Tensor<1, Int>, sizes: &[usize], dtype: DType) -> Option<Tensor<2, Int>> {
    if !matches!(dtype, DType::I64 | DType::I32 | DType::I16 | DType::I8) {
        return None;
    }
    let dtype = IntDType::from(dtype);
    <Dispatch as IndexKernels>::delinearize(keys.clone().into_dispatch(), sizes, dtype).map(Tensor::from_dispatch)
}

/// [`IndexKernels::segment_plan`] for an Int tensor of any device.
pub(crate) fn device_segment_plan(
    indices: &Tensor<2, Int>,
    sizes: &[usize],
    dim: usize,
) -> Option<(Tensor<1, Int>, Tensor<1, Int>)> {
    let (offsets, order) = <Dispatch as IndexKernels>::segment_plan(indices.clone().into_dispatch(), sizes, dim)?;
    Some((Tensor::from_dispatch(offsets), Tensor::from_dispatch(order)))
}

/// [`IndexKernels::masked_product_pattern`] for Int tensors of any device: `(crow, col)` of
/// the CSR index pairs `a`, `b` and `mask`.
pub(crate) fn device_masked_product_pattern(
    a: (&Tensor<1, Int>, &Tensor<1, Int>),
    b: (&Tensor<1, Int>, &Tensor<1, Int>),
    mask: (&Tensor<1, Int>, &Tensor<1, Int>),
) -> Option<(Tensor<1, Int>, Tensor<1, Int>)> {
    let d = |t: &Tensor<1, Int>| t.clone().into_dispatch();
    let (crow, col) =
        <Dispatch as IndexKernels>::masked_product_pattern(d(a.0), d(a.1), d(b.0), d(b.1), d(mask.0), d(mask.1))?;
    Some((Tensor::from_dispatch(crow), Tensor::from_dispatch(col)))
}

/// [`IndexKernels::partial_products`] for Int tensors of any device.
pub(crate) fn device_partial_products(a_col: &Tensor<1, Int>, b_crow: &Tensor<1, Int>) -> Option<u64> {
    <Dispatch as IndexKernels>::partial_products(a_col.clone().into_dispatch(), b_crow.clone().into_dispatch())
}

/// [`IndexKernels::index_matches`] for Int tensors of any device.
pub(crate) fn device_index_matches(
    coords: &Tensor<1, Int>,
    index: &Tensor<1, Int>,
    size: usize,
    limit: u64,
) -> Option<Matched<Dispatch>> {
    <Dispatch as IndexKernels>::index_matches(
        coords.clone().into_dispatch(),
        index.clone().into_dispatch(),
        size,
        limit,
    )
}
