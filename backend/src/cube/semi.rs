//! The semi-structured (2:4) products on Cube devices, decoding the metadata in the kernels (the
//! layout of `sparsegrad_kernels::semi`: one 16-bit word per 16 columns, a nibble per group of
//! four from the low bits up, its low 2 bits the first kept position and its high 2 bits the
//! second):
//!
//! - `A · B` and `B · Aᵀ` (a linear layer's product): a unit per output element walks the row's
//!   groups, two multiply-adds each: half those of the dense product;
//! - `Aᵀ · G` and `G · A`: a unit per output element `(column c, j)` walks the rows, and adds the
//!   row's term where one of its two slots of `c`'s group is `c`;
//! - the kept values' gradient: a unit per kept entry, a dot product of two rows.
//!
//! Every nibble decodes to a column inside its own group, whatever its bits, so no metadata word
//! can direct a read outside the operands (the launches are checked besides). A repeated slot
//! sums its two values, as on the host. The words are read as stored in any integer type wider
//! than 16 bits (i32 where the device stores no i16, see `semi_structured::metadata_dtype`);
//! their bits above 15 are ignored.

use super::census;
use burn::backend::cubecl::dtype_to_storage_type;
use burn::tensor::{DType, Shape};
use burn_cubecl::cubecl::{self, prelude::*};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::{empty_device_contiguous_dtype, zeros_client};
use burn_cubecl::tensor::CubeTensor;

use super::spmm::{assert_addressable, launch_dims, widened};

/// The nibble of group `g` (of row `r`, `words` words a row): its two kept positions.
#[cube]
fn group_nibble<P: Int>(meta: &Tensor<P>, r: usize, words: usize, g: usize) -> u32 {
    let word = u32::cast_from(meta[r * words + g / 4]);
    (word >> u32::cast_from((g % 4) * 4)) & 15
}

/// `out = A · B` (`b [cols, n]`, `out [rows, n]`), or with `transposed` `B · Aᵀ` (`b [n, cols]`,
/// `out [n, rows]`), for `A` of kept `values [rows, half]` and words `meta [rows, words]`.
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
fn semi_times_dense<F: Float, P: Int>(
    values: &Tensor<F>,
    meta: &Tensor<P>,
    b: &Tensor<F>,
    out: &mut Tensor<F>,
    rows: usize,
    half: usize,
    words: usize,
    n: usize,
    #[comptime] transposed: bool,
    #[define(F, P)] _dtypes: [ElemType; 2],
) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    // Output `[rows, n]`: r = pos / n; transposed, `[n, rows]`: r = pos % rows.
    let r = select(transposed, ABSOLUTE_POS % rows, ABSOLUTE_POS / n);
    let j = select(transposed, ABSOLUTE_POS / rows, ABSOLUTE_POS % n);
    // Element (c, j) of the `[cols, n]` operand is at `c * c_stride + j * j_stride`.
    let c_stride = select(transposed, 1, n);
    let j_base = select(transposed, j * 2 * half, j);
    let mut acc = F::new(0.0);
    for g in 0..half / 2 {
        let nibble = group_nibble::<P>(meta, r, words, g);
        let c0 = 4 * g + usize::cast_from(nibble & 3);
        let c1 = 4 * g + usize::cast_from(nibble >> 2);
        acc += values[r * half + 2 * g] * b[c0 * c_stride + j_base];
        acc += values[r * half + 2 * g + 1] * b[c1 * c_stride + j_base];
    }
    out[ABSOLUTE_POS] = acc;
}

/// `out = Aᵀ · G` (`g [rows, n]`, `out [cols, n]`), or with `transposed` `G · A` (`g [n, rows]`,
/// `out [n, cols]`).
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
fn semi_transposed_times_dense<F: Float, P: Int>(
    values: &Tensor<F>,
    meta: &Tensor<P>,
    g: &Tensor<F>,
    out: &mut Tensor<F>,
    rows: usize,
    half: usize,
    words: usize,
    n: usize,
    #[comptime] transposed: bool,
    #[define(F, P)] _dtypes: [ElemType; 2],
) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    let cols = 2 * half;
    let c = select(transposed, ABSOLUTE_POS % cols, ABSOLUTE_POS / n);
    let j = select(transposed, ABSOLUTE_POS / cols, ABSOLUTE_POS % n);
    // Element (r, j) of the `[rows, n]` operand is at `r * r_stride + j_base`.
    let r_stride = select(transposed, 1, n);
    let j_base = select(transposed, j * rows, j);
    let group = c / 4;
    let slot = u32::cast_from(c % 4);
    let mut acc = F::new(0.0);
    for r in 0..rows {
        let nibble = group_nibble::<P>(meta, r, words, group);
        let gr = g[r * r_stride + j_base];
        let first = values[r * half + 2 * group];
        let second = values[r * half + 2 * group + 1];
        acc += select((nibble & 3) == slot, first * gr, F::new(0.0));
        acc += select((nibble >> 2) == slot, second * gr, F::new(0.0));
    }
    out[ABSOLUTE_POS] = acc;
}

/// `out[r, s] = Σⱼ g[r, j] · b[col(r, s), j]` for every kept slot (`g [rows, n]`, `b [cols, n]`,
/// `out [rows, half]`).
#[cube(launch)]
fn semi_sampled_dots<F: Float, P: Int>(
    meta: &Tensor<P>,
    g: &Tensor<F>,
    b: &Tensor<F>,
    out: &mut Tensor<F>,
    half: usize,
    words: usize,
    n: usize,
    #[define(F, P)] _dtypes: [ElemType; 2],
) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    let r = ABSOLUTE_POS / half;
    let s = ABSOLUTE_POS % half;
    let nibble = group_nibble::<P>(meta, r, words, s / 2);
    let position = select((s & 1) == 0, nibble & 3, nibble >> 2);
    let c = 4 * (s / 2) + usize::cast_from(position);
    let mut acc = F::new(0.0);
    for j in 0..n {
        acc += g[r * n + j] * b[c * n + j];
    }
    out[ABSOLUTE_POS] = acc;
}

/// Whether the kernels read `metadata` as stored: a 32- or 64-bit integer type (a device that
/// stores i16 has the portable default, which reads the words back).
pub(crate) fn takes_metadata(metadata: &CubeTensor) -> bool {
    matches!(metadata.dtype, DType::I32 | DType::I64 | DType::U32 | DType::U64)
}

/// Which product of `A` (kept `values [rows, half]`, words `meta`) a launch computes.
#[derive(Clone, Copy)]
pub(crate) enum SemiProduct {
    /// `A · B` (or `B · Aᵀ`).
    Forward,
    /// `Aᵀ · G` (or `G · A`).
    Transposed,
}

/// The product `which` of `A` with the dense `d` (`[cols, n]` or `[rows, n]`; with `transposed`
/// its transpose, and the result transposed), computed on `d`'s device.
pub(crate) fn semi_product(
    values: CubeTensor,
    meta: CubeTensor,
    cols: usize,
    d: CubeTensor,
    transposed: bool,
    which: SemiProduct,
) -> CubeTensor {
    widened([values, d], |[values, d]| {
        let [rows, half] = [values.meta.shape()[0], values.meta.shape()[1]];
        let words = meta.meta.shape()[1];
        let n = d.meta.shape()[if transposed { 0 } else { 1 }];
        let (out_rows, client, device, dtype) = match which {
            SemiProduct::Forward => (rows, d.client.clone(), d.device.clone(), d.dtype),
            SemiProduct::Transposed => (cols, d.client.clone(), d.device.clone(), d.dtype),
        };
        let shape = Shape::new(if transposed { [n, out_rows] } else { [out_rows, n] });
        if out_rows * n == 0 || half == 0 || rows == 0 {
            return zeros_client(client, device, shape, dtype);
        }
        let out = empty_device_contiguous_dtype(client, device, shape, dtype);
        assert_addressable("a semi-structured product", &[&values, &meta, &d, &out]);
        let (count, dim) = launch_dims(&out, out_rows * n);
        let types = [dtype, meta.dtype].map(dtype_to_storage_type);
        let args = (
            into_contiguous(values).into_tensor_arg(),
            into_contiguous(meta).into_tensor_arg(),
            into_contiguous(d).into_tensor_arg(),
            out.clone().into_tensor_arg(),
        );
        match which {
            SemiProduct::Forward => {
                census::launched("semi_times_dense");
                semi_times_dense::launch(
                    &out.client,
                    count,
                    dim,
                    args.0,
                    args.1,
                    args.2,
                    args.3,
                    rows,
                    half,
                    words,
                    n,
                    transposed,
                    types,
                )
            }
            SemiProduct::Transposed => {
                census::launched("semi_transposed_times_dense");
                semi_transposed_times_dense::launch(
                    &out.client,
                    count,
                    dim,
                    args.0,
                    args.1,
                    args.2,
                    args.3,
                    rows,
                    half,
                    words,
                    n,
                    transposed,
                    types,
                )
            }
        }
        out
    })
}

/// The kept values' gradient `[rows, cols / 2]` from `g [rows, n]` and `b [cols, n]`.
pub(crate) fn semi_sddmm(meta: CubeTensor, cols: usize, g: CubeTensor, b: CubeTensor) -> CubeTensor {
    widened([g, b], |[g, b]| {
        let rows = meta.meta.shape()[0];
        let words = meta.meta.shape()[1];
        let half = cols / 2;
        let n = g.meta.shape()[1];
        let (client, device, dtype) = (g.client.clone(), g.device.clone(), g.dtype);
        let shape = Shape::new([rows, half]);
        if rows * half == 0 || n == 0 {
            return zeros_client(client, device, shape, dtype);
        }
        let out = empty_device_contiguous_dtype(client, device, shape, dtype);
        assert_addressable("a semi-structured SDDMM", &[&meta, &g, &b, &out]);
        let (count, dim) = launch_dims(&out, rows * half);
        let types = [dtype, meta.dtype].map(dtype_to_storage_type);
        census::launched("semi_sampled_dots");
        semi_sampled_dots::launch(
            &out.client,
            count,
            dim,
            into_contiguous(meta).into_tensor_arg(),
            into_contiguous(g).into_tensor_arg(),
            into_contiguous(b).into_tensor_arg(),
            out.clone().into_tensor_arg(),
            half,
            words,
            n,
            types,
        );
        out
    })
}
