//! The whole product `A · B` on the device (expand, sort, compress): every partial product listed
//! with its key, the keys sorted stably, each run of one key summed in the host kernel's order.

use super::one_index_type;
use super::pattern::product_ends;
use crate::cube::census;
use crate::cube::keys::{keys_of_runs, offsets_of_runs, runs_of};
use crate::cube::sort::{bounds, expand, stable_sort};
use crate::cube::spmm::{assert_addressable, compressed_product, launch_dims};
use burn::backend::cubecl::dtype_to_storage_type;
use burn::backend::ops::{FloatTensorOps, IntTensorOps};
use burn::tensor::{DType, FloatDType, IntDType, Shape};
use burn_cubecl::cubecl::{self, prelude::*};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::{empty_device_contiguous_dtype, zeros_client};
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::CubeBackend;

/// What `list_products` reads: each entry's row, `A`'s columns and values, `B`'s pattern and
/// values, and each entry's end among the partial products.
#[derive(CubeLaunch, CubeType)]
struct ListProductsArgs<F: Float, P: Int> {
    rows: OwnedTensor<P>,
    a_col: OwnedTensor<P>,
    a_val: OwnedTensor<F>,
    b_crow: OwnedTensor<P>,
    b_col: OwnedTensor<P>,
    b_val: OwnedTensor<F>,
    ends: OwnedTensor<P>,
}

/// Every partial product of entry `q = (i, k)` of `A` with row `k` of `B`, at
/// `ends[q] - count .. ends[q]`: its key `i · n + j` and its value.
#[cube(launch)]
fn list_products<F: Float, P: Int, K: Int>(
    args: &ListProductsArgs<F, P>,
    keys: &mut Tensor<K>,
    values: &mut Tensor<F>,
    n: usize,
    #[define(F, P, K)] _dtypes: [ElemType; 3],
) {
    let q = ABSOLUTE_POS;
    if q >= args.rows.len() {
        terminate!();
    }
    let k = usize::cast_from(args.a_col[q]);
    let (start, end) = (usize::cast_from(args.b_crow[k]), usize::cast_from(args.b_crow[k + 1]));
    let base = usize::cast_from(args.ends[q]) - (end - start);
    let row_key = K::cast_from(args.rows[q]) * K::cast_from(n);
    for r in start..end {
        keys[base + r - start] = row_key + K::cast_from(args.b_col[r]);
        values[base + r - start] = args.a_val[q] * args.b_val[r];
    }
}

/// `C = A · B` whole: `C`'s row pointers `[m + 1]` and sorted columns (int64) and its values,
/// summed per entry in the order of the partial products (that of the host kernel). `None`
/// where the partial products or the keys `i · n + j` would not fit the device sort (2^31 keys
/// and i64 keys): the caller takes the host route.
pub(crate) fn product(
    a_crow: CubeTensor,
    a_col: CubeTensor,
    a_values: CubeTensor,
    b_crow: CubeTensor,
    b_col: CubeTensor,
    b_values: CubeTensor,
    n: usize,
) -> Option<(CubeTensor, CubeTensor, CubeTensor)> {
    let m = a_crow.meta.num_elements() - 1;
    let nnz_a = a_col.meta.num_elements();
    if (m as u128) * (n as u128) > i64::MAX as u128 {
        return None;
    }
    let (client, device) = (a_col.client.clone(), a_col.device.clone());
    let (ends, total) = if nnz_a == 0 { (a_col.clone(), 0) } else { product_ends(&a_col, &b_crow) };
    if total == 0 {
        let crow = zeros_client(client.clone(), device.clone(), Shape::new([m + 1]), DType::I64);
        let col = zeros_client(client.clone(), device.clone(), Shape::new([0]), DType::I64);
        let values = zeros_client(client, device, Shape::new([0]), a_values.dtype);
        return Some((crow, col, values));
    }
    let total = usize::try_from(total).ok().filter(|&t| i32::try_from(t).is_ok())?;
    // 16-bit floats as f32, as `widened` does for the other products.
    let out_dtype = a_values.dtype;
    let wide = |t: CubeTensor| {
        if crate::cube::spmm::takes(t.dtype) {
            t
        } else {
            <CubeBackend as FloatTensorOps<CubeBackend>>::float_cast(t, FloatDType::F32)
        }
    };
    let (av, bv) = (wide(a_values), wide(b_values));
    let dtype = av.dtype;
    let kdtype = if (m as u128) * (n as u128) <= i32::MAX as u128 { DType::I32 } else { DType::I64 };
    let [a_crow, a_col, b_crow, b_col] = one_index_type([a_crow, a_col, b_crow, b_col]);
    let rows = expand(a_crow, nnz_a);
    let pdtype = rows.dtype;
    let ends = if ends.dtype == pdtype {
        ends
    } else {
        <CubeBackend as IntTensorOps<CubeBackend>>::int_cast(ends, IntDType::from(pdtype))
    };
    let keys = empty_device_contiguous_dtype(client.clone(), device.clone(), Shape::new([total]), kdtype);
    let partial = empty_device_contiguous_dtype(client.clone(), device.clone(), Shape::new([total]), dtype);
    assert_addressable("spgemm's partial products", &[&keys, &partial]);
    let (count, dim) = launch_dims(&rows, nnz_a);
    census::launched("list_products");
    list_products::launch(
        &client,
        count,
        dim,
        ListProductsArgsLaunch::new(
            rows.into_tensor_arg(),
            a_col.into_tensor_arg(),
            into_contiguous(av).into_tensor_arg(),
            b_crow.into_tensor_arg(),
            b_col.into_tensor_arg(),
            into_contiguous(bv).into_tensor_arg(),
            into_contiguous(ends).into_tensor_arg(),
        ),
        keys.clone().into_tensor_arg(),
        partial.clone().into_tensor_arg(),
        n,
        [dtype, pdtype, kdtype].map(dtype_to_storage_type),
    );
    let (sorted, order) = stable_sort(keys);
    let (runs, unique) = runs_of(&sorted);
    let unique_keys = keys_of_runs(&sorted, &runs, unique);
    let offsets = offsets_of_runs(&sorted, runs, unique);
    let ones =
        <CubeBackend as FloatTensorOps<CubeBackend>>::float_ones(Shape::new([total]), &device, FloatDType::from(dtype));
    let partial = <CubeBackend as FloatTensorOps<CubeBackend>>::float_reshape(partial, Shape::new([total, 1]));
    let summed = compressed_product(offsets, order, None, ones, partial, None);
    let summed = <CubeBackend as FloatTensorOps<CubeBackend>>::float_reshape(summed, Shape::new([unique]));
    let values = if dtype == out_dtype {
        summed
    } else {
        <CubeBackend as FloatTensorOps<CubeBackend>>::float_cast(summed, FloatDType::from(out_dtype))
    };
    // The keys back to rows and columns, the rows compressed.
    let coords = crate::cube::keys::delinearize(unique_keys, &[m, n], DType::I64);
    let row = <CubeBackend as IntTensorOps<CubeBackend>>::int_slice(
        coords.clone(),
        &[burn::tensor::Slice::from(0..1), burn::tensor::Slice::from(0..unique)],
    );
    let row = <CubeBackend as IntTensorOps<CubeBackend>>::int_reshape(row, Shape::new([unique]));
    let col = <CubeBackend as IntTensorOps<CubeBackend>>::int_slice(
        coords,
        &[burn::tensor::Slice::from(1..2), burn::tensor::Slice::from(0..unique)],
    );
    let col = <CubeBackend as IntTensorOps<CubeBackend>>::int_reshape(col, Shape::new([unique]));
    let crow = bounds(&into_contiguous(row), m);
    let crow = <CubeBackend as IntTensorOps<CubeBackend>>::int_cast(crow, IntDType::I64);
    Some((crow, into_contiguous(col), values))
}
