//! SpMM with an extreme in place of the sum on Cube devices, forward and backward, by the rules
//! of the host kernels (`sparsegrad_kernels::spmm_reduce`): the first entry starts the extreme,
//! a later one replaces it when strictly beyond it or a NaN over a number; an empty row gives 0
//! and the arg `nnz`. The backward sends each output gradient to its winning entry: a unit per
//! entry for the values' gradient, a unit per element of `dX` walking its column of `A` through
//! the transposed view sorted on the device. Args that name no entry of their row pass nothing
//! (the host kernel panics on them; nothing is read back here to check).

use super::census;
use burn::backend::cubecl::dtype_to_storage_type;
use burn::backend::ops::IntTensorOps;
use burn::tensor::{DType, IntDType, Shape};
use burn_cubecl::cubecl::{self, prelude::*};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::{empty_device_contiguous_dtype, zeros_client};
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::CubeBackend;

use super::sort::{bounds, expand, row_of, stable_sort};
use super::spmm::{assert_addressable, launch_dims, widened};

/// Whether `v` replaces the extreme `best`: strictly beyond it, or a NaN over a number.
#[cube]
#[allow(clippy::eq_op)] // `!(x == x)` is the NaN test in kernel code.
fn wins<F: Float>(v: F, best: F, #[comptime] max: bool) -> bool {
    let v_nan = !(v == v);
    let best_nan = !(best == best);
    let beyond = if max { v > best } else { v < best };
    !best_nan && (v_nan || beyond)
}

/// What `row_extremes` reads: the pattern, its values and the dense `x`.
#[derive(CubeLaunch, CubeType)]
struct RowExtremesArgs<F: Float, P: Int> {
    crow: OwnedTensor<P>,
    col: OwnedTensor<P>,
    values: OwnedTensor<F>,
    x: OwnedTensor<F>,
}

/// `out[r, c]`, the extreme of `values[q] · x[col[q], c]` over row `r`'s entries, and `arg[r, c]`
/// the winning `q` (`nnz` and 0 for an empty row).
#[cube(launch)]
fn row_extremes<F: Float, P: Int>(
    args: &RowExtremesArgs<F, P>,
    out: &mut Tensor<F>,
    arg: &mut Tensor<P>,
    n: usize,
    #[comptime] max: bool,
    #[define(F, P)] _dtypes: [ElemType; 2],
) {
    let at = ABSOLUTE_POS;
    if at >= out.len() {
        terminate!();
    }
    let r = at / n;
    let c = at % n;
    let (start, end) = (usize::cast_from(args.crow[r]), usize::cast_from(args.crow[r + 1]));
    let mut best = F::new(0.0);
    let mut won = args.col.len();
    if start < end {
        best = args.values[start] * args.x[usize::cast_from(args.col[start]) * n + c];
        won = start;
        for q in start + 1..end {
            let v = args.values[q] * args.x[usize::cast_from(args.col[q]) * n + c];
            if wins::<F>(v, best, max) {
                best = v;
                won = q;
            }
        }
    }
    out[at] = best;
    arg[at] = P::cast_from(won);
}

/// What `values_gradient` reads: the pattern, the dense `x`, the forward's args and the
/// output gradient `g`.
#[derive(CubeLaunch, CubeType)]
struct ValuesGradientArgs<F: Float, P: Int> {
    crow: OwnedTensor<P>,
    col: OwnedTensor<P>,
    x: OwnedTensor<F>,
    arg: OwnedTensor<P>,
    g: OwnedTensor<F>,
}

/// `dv[q] = Σ_c [arg[r, c] = q] · g[r, c] · x[col[q], c]` for every entry `q` of row `r`.
#[cube(launch)]
fn values_gradient<F: Float, P: Int>(
    args: &ValuesGradientArgs<F, P>,
    dv: &mut Tensor<F>,
    m: usize,
    n: usize,
    #[define(F, P)] _dtypes: [ElemType; 2],
) {
    let q = ABSOLUTE_POS;
    if q >= dv.len() {
        terminate!();
    }
    let r = row_of::<P>(&args.crow, m, q);
    let xrow = usize::cast_from(args.col[q]) * n;
    let mut acc = F::new(0.0);
    for c in 0..n {
        if usize::cast_from(args.arg[r * n + c]) == q {
            acc += args.g[r * n + c] * args.x[xrow + c];
        }
    }
    dv[q] = acc;
}

/// What `input_gradient` reads: the transposed view (`ccol`, `order`, `rows`), the values, the
/// forward's args and the output gradient `g`.
#[derive(CubeLaunch, CubeType)]
struct InputGradientArgs<F: Float, P: Int> {
    ccol: OwnedTensor<P>,
    order: OwnedTensor<P>,
    rows: OwnedTensor<P>,
    values: OwnedTensor<F>,
    arg: OwnedTensor<P>,
    g: OwnedTensor<F>,
}

/// `dx[k, c] = Σ_{q in column k} [arg[row(q), c] = q] · g[row(q), c] · values[q]`, column `k` of
/// `A` through its transposed view (`ccol`, `order`: its entries in row order; `rows`: each
/// entry's row).
#[cube(launch)]
fn input_gradient<F: Float, P: Int>(
    args: &InputGradientArgs<F, P>,
    dx: &mut Tensor<F>,
    n: usize,
    #[define(F, P)] _dtypes: [ElemType; 2],
) {
    let at = ABSOLUTE_POS;
    if at >= dx.len() {
        terminate!();
    }
    let k = at / n;
    let c = at % n;
    let mut acc = F::new(0.0);
    for t in usize::cast_from(args.ccol[k])..usize::cast_from(args.ccol[k + 1]) {
        let q = usize::cast_from(args.order[t]);
        let o = usize::cast_from(args.rows[q]) * n + c;
        if usize::cast_from(args.arg[o]) == q {
            acc += args.g[o] * args.values[q];
        }
    }
    dx[at] = acc;
}

/// The index tensors as i64 (the args' type), contiguous.
fn as_i64<const N: usize>(ts: [CubeTensor; N]) -> [CubeTensor; N] {
    ts.map(|t| {
        let t = if t.dtype == DType::I64 {
            t
        } else {
            <CubeBackend as IntTensorOps<CubeBackend>>::int_cast(t, IntDType::I64)
        };
        into_contiguous(t)
    })
}

/// The extremes `[m, n]` and args `[m, n]` (i64) of the valid pattern `crow`, `col` over the
/// rows of `x [k, n]`.
pub(crate) fn arg_extreme(
    crow: CubeTensor,
    col: CubeTensor,
    values: CubeTensor,
    x: CubeTensor,
    max: bool,
) -> (CubeTensor, CubeTensor) {
    let m = crow.meta.num_elements() - 1;
    let n = x.meta.shape()[1];
    let (client, device) = (x.client.clone(), x.device.clone());
    let arg = empty_device_contiguous_dtype(client.clone(), device.clone(), Shape::new([m, n]), DType::I64);
    let arg_out = arg.clone();
    let out = widened([values, x], |[values, x]| {
        let dtype = x.dtype;
        if m * n == 0 {
            return zeros_client(client.clone(), device.clone(), Shape::new([m, n]), dtype);
        }
        let out = empty_device_contiguous_dtype(client.clone(), device.clone(), Shape::new([m, n]), dtype);
        let [crow, col] = as_i64([crow, col]);
        assert_addressable("mm_reduce", &[&col, &x, &out]);
        let (count, dim) = launch_dims(&out, m * n);
        census::launched("row_extremes");
        row_extremes::launch(
            &client,
            count,
            dim,
            RowExtremesArgsLaunch::new(
                crow.into_tensor_arg(),
                col.into_tensor_arg(),
                into_contiguous(values).into_tensor_arg(),
                into_contiguous(x).into_tensor_arg(),
            ),
            out.clone().into_tensor_arg(),
            arg.clone().into_tensor_arg(),
            n,
            max,
            [dtype, DType::I64].map(dtype_to_storage_type),
        );
        out
    });
    (out, arg_out)
}

/// Both gradients in one flat tensor, `dX`'s `k · n` elements then the values' `nnz`.
pub(crate) fn arg_extreme_backward(
    crow: CubeTensor,
    col: CubeTensor,
    values: CubeTensor,
    x: CubeTensor,
    arg: CubeTensor,
    g: CubeTensor,
) -> CubeTensor {
    let m = crow.meta.num_elements() - 1;
    let [k, n] = [x.meta.shape()[0], x.meta.shape()[1]];
    let nnz = col.meta.num_elements();
    widened([g, values, x], |[g, values, x]| {
        let (client, device, dtype) = (g.client.clone(), g.device.clone(), g.dtype);
        let total = k * n + nnz;
        if nnz == 0 || n == 0 {
            return zeros_client(client, device, Shape::new([total]), dtype);
        }
        let [crow, col, arg] = as_i64([crow, col, arg]);
        let (values, x, g) = (into_contiguous(values), into_contiguous(x), into_contiguous(g));
        let dv = empty_device_contiguous_dtype(client.clone(), device.clone(), Shape::new([nnz]), dtype);
        assert_addressable("mm_reduce's gradient", &[&col, &x, &g, &dv]);
        let (count, dim) = launch_dims(&dv, nnz);
        let types = [dtype, DType::I64].map(dtype_to_storage_type);
        census::launched("values_gradient");
        values_gradient::launch(
            &client,
            count,
            dim,
            ValuesGradientArgsLaunch::new(
                crow.clone().into_tensor_arg(),
                col.clone().into_tensor_arg(),
                x.into_tensor_arg(),
                arg.clone().into_tensor_arg(),
                g.clone().into_tensor_arg(),
            ),
            dv.clone().into_tensor_arg(),
            m,
            n,
            types,
        );
        // `A`'s transposed view: its entries by column, rows ascending within one.
        let rows = expand(crow, nnz);
        let (sorted, order) = stable_sort(col);
        let [ccol, order] = as_i64([bounds(&sorted, k), order]);
        let dx = empty_device_contiguous_dtype(client.clone(), device.clone(), Shape::new([k, n]), dtype);
        let (count, dim) = launch_dims(&dx, k * n);
        census::launched("input_gradient");
        input_gradient::launch(
            &client,
            count,
            dim,
            InputGradientArgsLaunch::new(
                ccol.into_tensor_arg(),
                order.into_tensor_arg(),
                rows.into_tensor_arg(),
                values.into_tensor_arg(),
                arg.into_tensor_arg(),
                g.into_tensor_arg(),
            ),
            dx.clone().into_tensor_arg(),
            n,
            types,
        );
        let dx =
            <CubeBackend as burn::backend::ops::FloatTensorOps<CubeBackend>>::float_reshape(dx, Shape::new([k * n]));
        <CubeBackend as burn::backend::ops::FloatTensorOps<CubeBackend>>::float_cat(vec![dx, dv], 0)
    })
}
