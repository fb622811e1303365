//! The numeric kernels on a given pattern of `C`: the values of `A · B` on it, and the gradients
//! on `A`'s and on `B`'s patterns, with the launchers that pick the index dtype.

use super::{find, one_index_type};
use crate::cube::census;
use crate::cube::sort::{bounds, expand, row_of, stable_sort};
use crate::cube::spmm::{assert_addressable, launch_dims, widened};
use burn::backend::cubecl::dtype_to_storage_type;
use burn::tensor::Shape;
use burn_cubecl::cubecl::{self, prelude::*};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::{empty_device_contiguous_dtype, zeros_client};
use burn_cubecl::tensor::CubeTensor;

/// What `values_on_pattern` reads: `A`'s and `B`'s patterns and values, and `C`'s pattern.
#[derive(CubeLaunch, CubeType)]
struct ValuesArgs<F: Float, P: Int> {
    a_crow: OwnedTensor<P>,
    a_col: OwnedTensor<P>,
    a_val: OwnedTensor<F>,
    b_crow: OwnedTensor<P>,
    b_col: OwnedTensor<P>,
    b_val: OwnedTensor<F>,
    c_crow: OwnedTensor<P>,
    c_col: OwnedTensor<P>,
}

/// `out[p] = Σ_{q ∈ row i of A} a[q] · B[a_col[q], j]` for every entry `p = (i, j)` of `C`.
#[cube(launch)]
fn values_on_pattern<F: Float, P: Int>(
    args: &ValuesArgs<F, P>,
    out: &mut Tensor<F>,
    m: usize,
    #[define(F, P)] _dtypes: [ElemType; 2],
) {
    let p = ABSOLUTE_POS;
    if p >= out.len() {
        terminate!();
    }
    let i = row_of::<P>(&args.c_crow, m, p);
    let j = args.c_col[p];
    let mut acc = F::new(0.0);
    for q in usize::cast_from(args.a_crow[i])..usize::cast_from(args.a_crow[i + 1]) {
        let k = usize::cast_from(args.a_col[q]);
        let end = usize::cast_from(args.b_crow[k + 1]);
        let at = find::<P>(&args.b_col, usize::cast_from(args.b_crow[k]), end, j);
        if at < end {
            acc += args.a_val[q] * args.b_val[at];
        }
    }
    out[p] = acc;
}

/// What `gradient_on_first` reads: `A`'s pattern, `B`'s pattern and values, `C`'s pattern and
/// the gradient `g` on it.
#[derive(CubeLaunch, CubeType)]
struct GradientFirstArgs<F: Float, P: Int> {
    a_crow: OwnedTensor<P>,
    a_col: OwnedTensor<P>,
    b_crow: OwnedTensor<P>,
    b_col: OwnedTensor<P>,
    b_val: OwnedTensor<F>,
    c_crow: OwnedTensor<P>,
    c_col: OwnedTensor<P>,
    g: OwnedTensor<F>,
}

/// `out[q] = Σ_{r ∈ row k of B} b[r] · G[i, b_col[r]]` for every entry `q = (i, k)` of `A`,
/// `G` on `C`'s pattern.
#[cube(launch)]
fn gradient_on_first<F: Float, P: Int>(
    args: &GradientFirstArgs<F, P>,
    out: &mut Tensor<F>,
    m: usize,
    #[define(F, P)] _dtypes: [ElemType; 2],
) {
    let q = ABSOLUTE_POS;
    if q >= out.len() {
        terminate!();
    }
    let i = row_of::<P>(&args.a_crow, m, q);
    let k = usize::cast_from(args.a_col[q]);
    let (start, end) = (usize::cast_from(args.c_crow[i]), usize::cast_from(args.c_crow[i + 1]));
    let mut acc = F::new(0.0);
    for r in usize::cast_from(args.b_crow[k])..usize::cast_from(args.b_crow[k + 1]) {
        let at = find::<P>(&args.c_col, start, end, args.b_col[r]);
        if at < end {
            acc += args.b_val[r] * args.g[at];
        }
    }
    out[q] = acc;
}

/// What `gradient_on_second` reads: `A`'s transposed view (`a_ccol`, `order`, `rows`) and
/// values, `B`'s pattern, `C`'s pattern and the gradient `g` on it.
#[derive(CubeLaunch, CubeType)]
struct GradientSecondArgs<F: Float, P: Int> {
    a_ccol: OwnedTensor<P>,
    order: OwnedTensor<P>,
    rows: OwnedTensor<P>,
    a_val: OwnedTensor<F>,
    b_crow: OwnedTensor<P>,
    b_col: OwnedTensor<P>,
    c_crow: OwnedTensor<P>,
    c_col: OwnedTensor<P>,
    g: OwnedTensor<F>,
}

/// `out[r] = Σ_{t ∈ column k of A} a[order[t]] · G[rows[order[t]], j]` for every entry
/// `r = (k, j)` of `B`: `a_ccol` and `order` are `A`'s transposed view (the entries of each
/// column, in row order), `rows` the row of each entry of `A`.
#[cube(launch)]
fn gradient_on_second<F: Float, P: Int>(
    args: &GradientSecondArgs<F, P>,
    out: &mut Tensor<F>,
    k_rows: usize,
    #[define(F, P)] _dtypes: [ElemType; 2],
) {
    let r = ABSOLUTE_POS;
    if r >= out.len() {
        terminate!();
    }
    let k = row_of::<P>(&args.b_crow, k_rows, r);
    let j = args.b_col[r];
    let mut acc = F::new(0.0);
    for t in usize::cast_from(args.a_ccol[k])..usize::cast_from(args.a_ccol[k + 1]) {
        let q = usize::cast_from(args.order[t]);
        let i = usize::cast_from(args.rows[q]);
        let end = usize::cast_from(args.c_crow[i + 1]);
        let at = find::<P>(&args.c_col, usize::cast_from(args.c_crow[i]), end, j);
        if at < end {
            acc += args.a_val[q] * args.g[at];
        }
    }
    out[r] = acc;
}

/// A CSR pattern on the device, as the launchers take it: row pointers and columns.
pub(crate) struct DevicePattern {
    /// The row pointers, `[rows + 1]`.
    pub crow: CubeTensor,
    /// The columns, `[nnz]`.
    pub col: CubeTensor,
}

/// The values of `A · B` on `C`'s pattern (`A [m, k]`, `B [k, n]`, `C [m, n]`, valid CSR
/// patterns with sorted, duplicate-free rows).
pub(crate) fn values_on(
    a: DevicePattern,
    a_values: CubeTensor,
    b: DevicePattern,
    b_values: CubeTensor,
    c: DevicePattern,
) -> CubeTensor {
    let (DevicePattern { crow: a_crow, col: a_col }, DevicePattern { crow: b_crow, col: b_col }) = (a, b);
    let DevicePattern { crow: c_crow, col: c_col } = c;
    widened([a_values, b_values], |[av, bv]| {
        let nnz_c = c_col.meta.num_elements();
        let m = a_crow.meta.num_elements() - 1;
        let (client, device, dtype) = (av.client.clone(), av.device.clone(), av.dtype);
        if nnz_c == 0 {
            return zeros_client(client, device, Shape::new([0]), dtype);
        }
        let [a_crow, a_col, b_crow, b_col, c_crow, c_col] =
            one_index_type([a_crow, a_col, b_crow, b_col, c_crow, c_col]);
        let out = empty_device_contiguous_dtype(client.clone(), device, Shape::new([nnz_c]), dtype);
        assert_addressable("spgemm", &[&a_col, &b_col, &out]);
        let (count, dim) = launch_dims(&out, nnz_c);
        let types = [dtype, a_crow.dtype].map(dtype_to_storage_type);
        census::launched("values_on_pattern");
        values_on_pattern::launch(
            &client,
            count,
            dim,
            ValuesArgsLaunch::new(
                a_crow.into_tensor_arg(),
                a_col.into_tensor_arg(),
                into_contiguous(av).into_tensor_arg(),
                b_crow.into_tensor_arg(),
                b_col.into_tensor_arg(),
                into_contiguous(bv).into_tensor_arg(),
                c_crow.into_tensor_arg(),
                c_col.into_tensor_arg(),
            ),
            out.clone().into_tensor_arg(),
            m,
            types,
        );
        out
    })
}

/// The gradient on `A`'s pattern of `A · B`'s values on `C` (`g [nnz_c]`): `(G · Bᵀ)` there.
pub(crate) fn gradient_a(
    a: DevicePattern,
    b: DevicePattern,
    b_values: CubeTensor,
    c: DevicePattern,
    g: CubeTensor,
) -> CubeTensor {
    let (DevicePattern { crow: a_crow, col: a_col }, DevicePattern { crow: b_crow, col: b_col }) = (a, b);
    let DevicePattern { crow: c_crow, col: c_col } = c;
    widened([g, b_values], |[g, bv]| {
        let nnz_a = a_col.meta.num_elements();
        let m = a_crow.meta.num_elements() - 1;
        let (client, device, dtype) = (g.client.clone(), g.device.clone(), g.dtype);
        if nnz_a == 0 || g.meta.num_elements() == 0 {
            return zeros_client(client, device, Shape::new([nnz_a]), dtype);
        }
        let [a_crow, a_col, b_crow, b_col, c_crow, c_col] =
            one_index_type([a_crow, a_col, b_crow, b_col, c_crow, c_col]);
        let out = empty_device_contiguous_dtype(client.clone(), device, Shape::new([nnz_a]), dtype);
        assert_addressable("spgemm's gradient", &[&a_col, &b_col, &c_col, &out]);
        let (count, dim) = launch_dims(&out, nnz_a);
        let types = [dtype, a_crow.dtype].map(dtype_to_storage_type);
        census::launched("gradient_on_first");
        gradient_on_first::launch(
            &client,
            count,
            dim,
            GradientFirstArgsLaunch::new(
                a_crow.into_tensor_arg(),
                a_col.into_tensor_arg(),
                b_crow.into_tensor_arg(),
                b_col.into_tensor_arg(),
                into_contiguous(bv).into_tensor_arg(),
                c_crow.into_tensor_arg(),
                c_col.into_tensor_arg(),
                into_contiguous(g).into_tensor_arg(),
            ),
            out.clone().into_tensor_arg(),
            m,
            types,
        );
        out
    })
}

/// The gradient on `B`'s pattern of `A · B`'s values on `C` (`g [nnz_c]`): `(Aᵀ · G)` there,
/// through `A`'s transposed view, built on the device (a stable sort of `A`'s columns).
pub(crate) fn gradient_b(
    a: DevicePattern,
    a_values: CubeTensor,
    b: DevicePattern,
    c: DevicePattern,
    g: CubeTensor,
) -> CubeTensor {
    let (DevicePattern { crow: a_crow, col: a_col }, DevicePattern { crow: b_crow, col: b_col }) = (a, b);
    let DevicePattern { crow: c_crow, col: c_col } = c;
    widened([g, a_values], |[g, av]| {
        let nnz_b = b_col.meta.num_elements();
        let nnz_a = a_col.meta.num_elements();
        let k_rows = b_crow.meta.num_elements() - 1;
        let (client, device, dtype) = (g.client.clone(), g.device.clone(), g.dtype);
        if nnz_b == 0 || nnz_a == 0 || g.meta.num_elements() == 0 {
            return zeros_client(client, device, Shape::new([nnz_b]), dtype);
        }
        let [a_crow, a_col, b_crow, b_col, c_crow, c_col] =
            one_index_type([a_crow, a_col, b_crow, b_col, c_crow, c_col]);
        // `A`'s transposed view: its entries ordered by column (rows ascending within one).
        let rows = expand(a_crow, nnz_a);
        let (sorted, order) = stable_sort(a_col);
        let a_ccol = bounds(&sorted, k_rows);
        let [a_ccol, order, rows, b_crow, b_col, c_crow, c_col] =
            one_index_type([a_ccol, order, rows, b_crow, b_col, c_crow, c_col]);
        let out = empty_device_contiguous_dtype(client.clone(), device, Shape::new([nnz_b]), dtype);
        assert_addressable("spgemm's gradient", &[&rows, &b_col, &c_col, &out]);
        let (count, dim) = launch_dims(&out, nnz_b);
        let types = [dtype, a_ccol.dtype].map(dtype_to_storage_type);
        census::launched("gradient_on_second");
        gradient_on_second::launch(
            &client,
            count,
            dim,
            GradientSecondArgsLaunch::new(
                a_ccol.into_tensor_arg(),
                order.into_tensor_arg(),
                rows.into_tensor_arg(),
                into_contiguous(av).into_tensor_arg(),
                b_crow.into_tensor_arg(),
                b_col.into_tensor_arg(),
                c_crow.into_tensor_arg(),
                c_col.into_tensor_arg(),
                into_contiguous(g).into_tensor_arg(),
            ),
            out.clone().into_tensor_arg(),
            k_rows,
            types,
        );
        out
    })
}
