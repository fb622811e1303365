//! SpMM, the product primitive of the matmul family behind the burn extension trait
//! [`SpmmKernels`]: `A · X` and `Aᵀ · G` for `A` a CSR pattern with values, and both gradients
//! of a product in one pass (forward only; the rule that differentiates them lives in
//! `sparsegrad-autodiff`'s `spmm`).
//!
//! Flex runs the host kernels of `sparsegrad-kernels` on its buffers (f32 and f64; f16 and bf16
//! widened to f32, so they accumulate in f32); burn's Cube backend runs the CubeCL kernels of
//! `crate::cube::spmm` (feature `cube`); any other backend gets defaults composed of burn's
//! gather and scatter ops (memory `nnz x n`, never `m x k`). The transposed products read
//! the pattern's transposed view from the [`TransposeCell`] its owner passes in (a tensor's
//! pattern, a layer's memo), computed once per pattern.
//!
//! The trait's methods are `unsafe`: they take the pattern as raw index tensors and the host
//! kernels walk it through unchecked offsets, so the caller vouches that it is valid (the safe
//! functions of `sparsegrad-autodiff` hand over only the patterns of checked tensors).

use crate::flex::*;
use burn::backend::flex::FlexTensor;
use burn::backend::{
    backend_extension,
    tensor::{FloatTensor, IntTensor},
    Backend, Flex, TensorMetadata,
};
use burn::tensor::{DType, IndexingUpdateOp, Shape, TensorData};
use sparsegrad_kernels::alloc::out_len;
use sparsegrad_kernels::on_transposed;
use sparsegrad_kernels::pattern::CscPattern;
use sparsegrad_kernels::pattern::TransposeCell;
use sparsegrad_kernels::spmm::{
    gather_column_values, spmm, spmm_of_transpose_transposed_out, spmm_t_gathered, spmm_t_gathered_transposed_out,
    spmm_t_with, spmm_transposed_out,
};
use sparsegrad_kernels::spmm_backward::{spmm_backward, Walk};
use std::sync::{Arc, Weak};

/// The CSR product kernels.
///
/// # Safety
/// Every method takes a CSR pattern `A [m, k]` as `crow [m + 1]` and `col [nnz]`, which must be
/// valid as `sparsegrad_kernels::pattern::CsrPattern::new` checks it: `crow` starts at 0, never decreases and ends at
/// `nnz`, and every column lies in `0..k`. `k` is the method's `k` argument, or the rows of `x`.
/// The dense operands must have the shapes the methods state, and a `transposed` cell must be
/// this pattern's (or empty).
#[backend_extension(Flex, Cube: cfg(feature = "cube"))]
#[diagnostic::on_unimplemented(
    message = "sparsegrad has no kernels for the backend `{Self}` (`SpmmKernels` is not implemented)",
    label = "no sparsegrad kernels for this backend",
    note = "a `Fusion<CubeBackend>` here means that burn's feature `fusion` is on (burn's default features turn it on) and sparsegrad's is off: turn on sparsegrad's `fusion` with `wgpu`, `sparsegrad = {{ version = \"0.1\", features = [\"wgpu\", \"fusion\"] }}` (see `sparsegrad::guide::gpu`)"
)]
pub trait SpmmKernels: Backend {
    /// `A · X`: `A` `[m, k]` in CSR (`crow [m + 1]`, `col [nnz]`, `values [nnz]`), `X [k, n]`.
    /// `cell` is the pattern's (or empty): where a backend keeps what it derives from the pattern
    /// once (a Cube device's split of long rows).
    ///
    /// # Safety
    /// See the trait: a valid pattern over `k = x.shape()[0]` columns, and its cell.
    unsafe fn csr_spmm(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        cell: &TransposeCell,
    ) -> FloatTensor<Self> {
        let _ = cell;
        default::spmm::<Self>(crow, col, values, x, false, 0)
    }

    /// `A · X` as [`SpmmKernels::csr_spmm`], stored transposed where the backend can: an
    /// `[m, n]` tensor over a row-major `[n, m]` buffer (strides `[1, m]`), so that its
    /// transpose, `Xᵀ · Aᵀ`, is contiguous. The default stores it as `csr_spmm` does.
    ///
    /// # Safety
    /// As [`SpmmKernels::csr_spmm`].
    unsafe fn csr_spmm_stored_transposed(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        cell: &TransposeCell,
    ) -> FloatTensor<Self> {
        // SAFETY: this method's contract is `csr_spmm`'s.
        unsafe { Self::csr_spmm(crow, col, values, x, cell) }
    }

    /// `Aᵀ · G`: `A` `[m, k]` in CSR, `G [m, n]`, result `[k, n]`; the transposed view from (or
    /// into) `transposed`.
    ///
    /// # Safety
    /// See the trait: a valid pattern over `k` columns, and its cell.
    unsafe fn csr_spmm_t(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        g: FloatTensor<Self>,
        k: usize,
        transposed: &TransposeCell,
    ) -> FloatTensor<Self> {
        let _ = transposed;
        default::spmm::<Self>(crow, col, values, g, true, k)
    }

    /// `Aᵀ · G` as [`SpmmKernels::csr_spmm_t`], stored transposed where the backend can: a
    /// `[k, n]` tensor over a row-major `[n, k]` buffer (strides `[1, k]`), so that its
    /// transpose, `Gᵀ · A`, is contiguous. The default stores it as `csr_spmm_t` does.
    ///
    /// # Safety
    /// As [`SpmmKernels::csr_spmm_t`].
    unsafe fn csr_spmm_t_stored_transposed(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        g: FloatTensor<Self>,
        k: usize,
        transposed: &TransposeCell,
    ) -> FloatTensor<Self> {
        // SAFETY: this method's contract is `csr_spmm_t`'s.
        unsafe { Self::csr_spmm_t(crow, col, values, g, k, transposed) }
    }

    /// Both gradients of `A · X` (`transpose = false`: `dX = Aᵀ · G`, `dvalues = SDDMM(G, X)`)
    /// or of `Aᵀ · X` (`dX = A · G`, `dvalues = SDDMM(X, G)`), in one flat tensor: `dX`'s
    /// elements, then the values' gradient. `k` is the pattern's column count.
    ///
    /// # Safety
    /// See the trait: a valid pattern over `k` columns, and its cell.
    #[allow(clippy::too_many_arguments)]
    unsafe fn csr_spmm_backward(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        g: FloatTensor<Self>,
        x: FloatTensor<Self>,
        transpose: bool,
        k: usize,
        transposed: &TransposeCell,
    ) -> FloatTensor<Self> {
        // SAFETY: the pattern is the caller's, valid over `k` columns (this method's contract);
        // `x [k, n]` for the forward product's `dX`, `g [k, n]` for the transposed one's.
        let (dx, dv) = unsafe {
            if transpose {
                (
                    Self::csr_spmm(crow.clone(), col.clone(), values, g.clone(), transposed),
                    default::sddmm::<Self>(crow, col, x, g),
                )
            } else {
                (
                    Self::csr_spmm_t(crow.clone(), col.clone(), values, g.clone(), k, transposed),
                    default::sddmm::<Self>(crow, col, g, x),
                )
            }
        };
        let len = dx.shape().num_elements();
        Self::float_cat(vec![Self::float_reshape(dx, Shape::new([len])), dv], 0)
    }
}

/// Defaults for backends without host kernels: burn gathers and scatter-adds over `[nnz, n]`.
pub(crate) mod default {
    use super::*;
    use crate::algebra::compress::expand;

    pub fn spmm<B: Backend>(
        crow: IntTensor<B>,
        col: IntTensor<B>,
        values: FloatTensor<B>,
        x: FloatTensor<B>,
        transpose: bool,
        k: usize,
    ) -> FloatTensor<B> {
        let device = x.device();
        let m = crow.shape()[0] - 1;
        let nnz = col.shape()[0];
        let n = x.shape()[1];
        let rows = rows_of_any::<B>(crow, nnz, &device);
        let (src, dst, out_rows) = if transpose { (rows, col, k) } else { (col, rows, m) };
        let out = B::float_zeros(Shape::new([out_rows, n]), &device, x.dtype().into());
        if nnz == 0 || n == 0 {
            return out;
        }
        let gathered = B::float_select(x, 0, src);
        let scaled = B::float_mul(gathered, B::float_reshape(values, Shape::new([nnz, 1])));
        B::float_select_assign(out, 0, dst, scaled, IndexingUpdateOp::Add)
    }

    pub fn sddmm<B: Backend>(
        crow: IntTensor<B>,
        col: IntTensor<B>,
        a: FloatTensor<B>,
        b: FloatTensor<B>,
    ) -> FloatTensor<B> {
        let device = a.device();
        let nnz = col.shape()[0];
        if nnz == 0 {
            return B::float_zeros(Shape::new([0]), &device, a.dtype().into());
        }
        let rows = rows_of_any::<B>(crow, nnz, &device);
        let prod = B::float_mul(B::float_select(a, 0, rows), B::float_select(b, 0, col));
        B::float_reshape(B::float_sum_dim(prod, 1), Shape::new([nnz]))
    }

    /// Row ids through a readback (any backend; index algebra is host work).
    fn rows_of_any<B: Backend>(crow: IntTensor<B>, nnz: usize, device: &B::Device) -> IntTensor<B> {
        let m = crow.shape()[0] - 1;
        let data = burn::backend::read_sync(B::int_into_data(crow)).expect("crow readback");
        let crow: Vec<i64> = data.iter::<i64>().collect();
        let rows = expand(&crow, 1, m, nnz);
        B::int_from_data(TensorData::new(rows, [nnz]), device)
    }
}

/// Runs `$body` with `$a` the pattern of the contiguous Flex index tensors `$crow` and `$col`
/// over `$k` columns, for every pair of index types.
///
/// Only for the bodies of the unsafe extension methods whose contract is that the tensors form
/// a valid pattern over `$k` columns (`SpmmKernels`, `SddmmKernels`).
macro_rules! with_pattern {
    ($crow:expr, $col:expr, $k:expr, |$a:ident| $body:expr) => {
        $crate::match_ints!($crate::flex::int_slice($crow), c => $crate::match_ints!($crate::flex::int_slice($col), p => {
            // SAFETY: the tensors are a valid pattern over `$k` columns: the contract of the
            // extension method this expands in.
            let $a = unsafe { sparsegrad_kernels::pattern::CsrPattern::new_unchecked(c, p, $k) };
            $body
        }))
    };
}
pub(crate) use with_pattern;

/// Cube devices: the kernels of `cube::spmm` (16-bit floats widened to f32, as on Flex), the
/// transposed products through the pattern's transposed view on the device.
#[cfg(feature = "cube")]
impl SpmmKernels for crate::cube::CubeBackend {
    unsafe fn csr_spmm(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        cell: &TransposeCell,
    ) -> FloatTensor<Self> {
        use crate::cube::spmm::{spmm, widened, RowSplit};
        let split = RowSplit::of(&crow, cell);
        widened([values, x], |[values, x]| spmm(crow, col, values, x, split.as_ref()))
    }

    unsafe fn csr_spmm_t(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        g: FloatTensor<Self>,
        k: usize,
        transposed: &TransposeCell,
    ) -> FloatTensor<Self> {
        use crate::cube::spmm::{spmm_t, widened, DeviceTranspose};
        // SAFETY: a valid pattern over `k` columns with its cell: this method's contract.
        let t = unsafe { DeviceTranspose::of(&crow, &col, k, transposed) };
        widened([values, g], |[values, g]| spmm_t(&t, values, g))
    }

    #[allow(clippy::too_many_arguments)]
    unsafe fn csr_spmm_backward(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        g: FloatTensor<Self>,
        x: FloatTensor<Self>,
        transpose: bool,
        k: usize,
        transposed: &TransposeCell,
    ) -> FloatTensor<Self> {
        use crate::sddmm::SddmmKernels;
        use burn::backend::ops::FloatTensorOps;
        // SAFETY: as the default body: the pattern is valid over `k` columns (this method's
        // contract); `x [k, n]` for the forward product's `dX`, `g [k, n]` for the transposed one's.
        let (dx, dv) = unsafe {
            if transpose {
                (
                    Self::csr_spmm(crow.clone(), col.clone(), values, g.clone(), transposed),
                    Self::csr_sddmm(crow, col, x, g),
                )
            } else {
                (
                    Self::csr_spmm_t(crow.clone(), col.clone(), values, g.clone(), k, transposed),
                    Self::csr_sddmm(crow, col, g, x),
                )
            }
        };
        let len = dx.shape().num_elements();
        Self::float_cat(vec![Self::float_reshape(dx, Shape::new([len])), dv], 0)
    }
}

/// Cube devices under burn's `fusion`: the Cube kernels on the resolved tensors (`cube::fused`).
#[cfg(all(feature = "cube", feature = "fusion"))]
impl SpmmKernels for crate::cube::FusedCube {
    unsafe fn csr_spmm(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        cell: &TransposeCell,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = values.client.clone();
        // SAFETY: the same tensors, resolved: this method's contract is the Cube impl's.
        let out = unsafe { crate::cube::CubeBackend::csr_spmm(int(crow), int(col), float(values), float(x), cell) };
        publish_float(&client, out)
    }

    unsafe fn csr_spmm_t(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        g: FloatTensor<Self>,
        k: usize,
        transposed: &TransposeCell,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = values.client.clone();
        // SAFETY: the same tensors, resolved: this method's contract is the Cube impl's.
        let out = unsafe {
            crate::cube::CubeBackend::csr_spmm_t(int(crow), int(col), float(values), float(g), k, transposed)
        };
        publish_float(&client, out)
    }

    #[allow(clippy::too_many_arguments)]
    unsafe fn csr_spmm_backward(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        g: FloatTensor<Self>,
        x: FloatTensor<Self>,
        transpose: bool,
        k: usize,
        transposed: &TransposeCell,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = values.client.clone();
        // SAFETY: the same tensors, resolved: this method's contract is the Cube impl's.
        let out = unsafe {
            crate::cube::CubeBackend::csr_spmm_backward(
                int(crow),
                int(col),
                float(values),
                float(g),
                float(x),
                transpose,
                k,
                transposed,
            )
        };
        publish_float(&client, out)
    }
}

impl SpmmKernels for Flex {
    unsafe fn csr_spmm(
        crow: FlexTensor,
        col: FlexTensor,
        values: FlexTensor,
        x: FlexTensor,
        _cell: &TransposeCell,
    ) -> FlexTensor {
        let (crow, col) = (contiguous(crow), contiguous(col));
        let m = crow.shape()[0] - 1;
        let [k, n] = [x.shape()[0], x.shape()[1]];
        with_real(
            [values, x],
            vec![m, n],
            |[v, x]| with_pattern!(&crow, &col, k, |a| spmm(a, v, x, n)),
            |[v, x]| with_pattern!(&crow, &col, k, |a| spmm(a, v, x, n)),
        )
    }

    unsafe fn csr_spmm_stored_transposed(
        crow: FlexTensor,
        col: FlexTensor,
        values: FlexTensor,
        x: FlexTensor,
        _cell: &TransposeCell,
    ) -> FlexTensor {
        let (crow, col) = (contiguous(crow), contiguous(col));
        let m = crow.shape()[0] - 1;
        let [k, n] = [x.shape()[0], x.shape()[1]];
        // `x` the transposed view of a `y [n, k]` (`y · Aᵀ`, as `mm_dense_sparse` asks): the
        // kernel transposes `y` in its packing pass instead of a copy of `xᵀ` first.
        if let Some(y) = transposed_base(&x) {
            return with_real(
                [values, y],
                vec![n, m],
                |[v, y]| with_pattern!(&crow, &col, k, |a| spmm_of_transpose_transposed_out(a, v, y, n)),
                |[v, y]| with_pattern!(&crow, &col, k, |a| spmm_of_transpose_transposed_out(a, v, y, n)),
            )
            .transpose(0, 1);
        }
        // `[n, m]` row-major, viewed as its transpose `[m, n]`.
        with_real(
            [values, x],
            vec![n, m],
            |[v, x]| with_pattern!(&crow, &col, k, |a| spmm_transposed_out(a, v, x, n)),
            |[v, x]| with_pattern!(&crow, &col, k, |a| spmm_transposed_out(a, v, x, n)),
        )
        .transpose(0, 1)
    }

    unsafe fn csr_spmm_t(
        crow: FlexTensor,
        col: FlexTensor,
        values: FlexTensor,
        g: FlexTensor,
        k: usize,
        transposed: &TransposeCell,
    ) -> FlexTensor {
        let (crow, col) = (contiguous(crow), contiguous(col));
        let n = g.shape()[1];
        let csc = with_pattern!(&crow, &col, k, |a| transposed.of(a));
        let values = contiguous(values);
        if let Some(tvals) = column_values(transposed, csc, &values) {
            return with_real(
                [tvals, g],
                vec![k, n],
                |[v, g]| spmm_t_gathered(csc, v, g, n),
                |[v, g]| spmm_t_gathered(csc, v, g, n),
            );
        }
        with_real([values, g], vec![k, n], |[v, g]| spmm_t_with(csc, v, g, n), |[v, g]| spmm_t_with(csc, v, g, n))
    }

    unsafe fn csr_spmm_t_stored_transposed(
        crow: FlexTensor,
        col: FlexTensor,
        values: FlexTensor,
        g: FlexTensor,
        k: usize,
        transposed: &TransposeCell,
    ) -> FlexTensor {
        let (crow, col) = (contiguous(crow), contiguous(col));
        let n = g.shape()[1];
        let csc = with_pattern!(&crow, &col, k, |a| transposed.of(a));
        let values = contiguous(values);
        let Some(tvals) = column_values(transposed, csc, &values) else {
            // 16-bit values: stored as `csr_spmm_t` stores them.
            // SAFETY: this method's contract is `csr_spmm_t`'s.
            return unsafe { Self::csr_spmm_t(crow, col, values, g, k, transposed) };
        };
        // `g` the transposed view of a `y [n, m]` (`y · A`, `mm_dense_sparse`): the kernel
        // transposes `y` in its packing pass instead of a copy of `gᵀ` first.
        if let Some(y) = transposed_base(&g) {
            return with_real(
                [tvals, y],
                vec![n, k],
                |[v, y]| on_transposed!(csc.as_csr(), |t| spmm_of_transpose_transposed_out(t, v, y, n)),
                |[v, y]| on_transposed!(csc.as_csr(), |t| spmm_of_transpose_transposed_out(t, v, y, n)),
            )
            .transpose(0, 1);
        }
        // `[n, k]` row-major, viewed as its transpose `[k, n]`.
        with_real(
            [tvals, g],
            vec![n, k],
            |[v, g]| spmm_t_gathered_transposed_out(csc, v, g, n),
            |[v, g]| spmm_t_gathered_transposed_out(csc, v, g, n),
        )
        .transpose(0, 1)
    }

    unsafe fn csr_spmm_backward(
        crow: FlexTensor,
        col: FlexTensor,
        values: FlexTensor,
        g: FlexTensor,
        x: FlexTensor,
        transpose: bool,
        k: usize,
        transposed: &TransposeCell,
    ) -> FlexTensor {
        let (crow, col) = (contiguous(crow), contiguous(col));
        let n = g.shape()[1];
        let len = x.shape()[0];
        let total = vec![out_len(len, n, "spmm backward: dX")
            .checked_add(col.shape()[0])
            .expect("spmm backward: gradient length overflows usize")];
        if transpose {
            with_real(
                [values, g, x],
                total,
                |[v, g, x]| with_pattern!(&crow, &col, k, |a| spmm_backward(&Walk::InOrder(a), v, g, x, n)),
                |[v, g, x]| with_pattern!(&crow, &col, k, |a| spmm_backward(&Walk::InOrder(a), v, g, x, n)),
            )
        } else {
            let csc = with_pattern!(&crow, &col, k, |a| transposed.of(a));
            let walk: Walk<'_, i64, i64> = Walk::Transposed(csc);
            with_real(
                [values, g, x],
                total,
                |[v, g, x]| spmm_backward(&walk, v, g, x, n),
                |[v, g, x]| spmm_backward(&walk, v, g, x, n),
            )
        }
    }
}

/// The values a pattern's cell last gathered into its column order, and what they came from:
/// the storage (held weakly), the element range in it, and the dtype.
struct ColumnValues<B> {
    source: Weak<B>,
    range: (usize, usize),
    dtype: DType,
    gathered: FlexTensor,
}

/// `values` (contiguous, f32 or f64) in the column order of `csc`, from `cell`'s slot when they
/// are the values it last gathered, else gathered now and kept there; `None` for other dtypes.
///
/// The key is sound because Flex's storage is copy-on-write through `Arc::get_mut` and
/// `Arc::make_mut`: while the slot holds a `Weak` to it, a buffer is never written in place
/// (`get_mut` refuses, `make_mut` moves the data and leaves the `Weak` dangling), and its
/// address is not reused (the `Weak` keeps the allocation). So a `Weak` that still upgrades to
/// the same storage, over the same range and dtype, names the same values. Holding it keeps
/// the buffer from being updated in place (a copy instead) and keeps `nnz` gathered values
/// alive with the pattern. A matrix whose values change at every product (a trained one)
/// gathers at every call, as without the slot.
fn column_values(cell: &TransposeCell, csc: &CscPattern, values: &FlexTensor) -> Option<FlexTensor> {
    let dtype = values.dtype();
    if !matches!(dtype, DType::F32 | DType::F64) {
        return None;
    }
    let range = values.layout().contiguous_offsets()?;
    let source = Arc::downgrade(&values.data_arc());
    let hit = cell.with_slot(|slot| {
        let cached = slot.as_ref()?.downcast_ref::<ColumnValues<_>>()?;
        (Weak::ptr_eq(&cached.source, &source)
            && cached.source.strong_count() > 0
            && cached.range == range
            && cached.dtype == dtype)
            .then(|| cached.gathered.clone())
    });
    if hit.is_some() {
        return hit;
    }
    // Gathered outside the lock: the gather runs on the thread pool.
    let gathered = match dtype {
        DType::F64 => {
            let v = gather_column_values(csc, values.as_slice::<f64>().expect("f64 values"));
            let len = v.len();
            FlexTensor::from_data(TensorData::new(v, [len]))
        }
        _ => {
            let v = gather_column_values(csc, values.as_slice::<f32>().expect("f32 values"));
            let len = v.len();
            FlexTensor::from_data(TensorData::new(v, [len]))
        }
    };
    let entry = ColumnValues { source, range, dtype, gathered: gathered.clone() };
    cell.with_slot(|slot| *slot = Some(Box::new(entry)));
    Some(gathered)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sparsegrad_kernels::pattern::CsrPattern;

    /// The Flex methods on a pattern with an empty row and an empty column, against the
    /// definition; the transposed view is computed once into the cell and reused.
    #[test]
    fn flex_products_use_the_cell() {
        let (crow, col) = (vec![0i64, 2, 2, 3], vec![0i64, 2, 2]);
        let ints = |v: &Vec<i64>| FlexTensor::from_data(TensorData::new(v.clone(), [v.len()]));
        let floats = |v: Vec<f64>, shape: [usize; 2]| FlexTensor::from_data(TensorData::new(v, shape));
        let values = FlexTensor::from_data(TensorData::new(vec![1.0f64, 2.0, 3.0], [3]));
        let g = floats(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [3, 2]);
        let cell = TransposeCell::new();
        assert!(CsrPattern::new(&crow[..], &col[..], 3).is_ok());
        // SAFETY: a valid pattern [3, 3] (checked by the assertion above), its own cell.
        let out = unsafe { Flex::csr_spmm_t(ints(&crow), ints(&col), values.clone(), g.clone(), 3, &cell) };
        // Aᵀ G with A = [[1, 0, 2], [0, 0, 0], [0, 0, 3]]: rows 1·G0, 0, 2·G0 + 3·G2.
        assert_eq!(out.into_data().iter::<f64>().collect::<Vec<_>>(), vec![1.0, 2.0, 0.0, 0.0, 17.0, 22.0]);
        assert!(cell.is_computed());
        // SAFETY: as above.
        let again = unsafe { Flex::csr_spmm_t(ints(&crow), ints(&col), values, g, 3, &cell) };
        assert_eq!(again.into_data().iter::<f64>().collect::<Vec<_>>(), vec![1.0, 2.0, 0.0, 0.0, 17.0, 22.0]);
    }

    /// The values gathered into column order are reused only for the same values: a buffer
    /// written after the gather (copy-on-write moves it), other values on the same pattern, and
    /// another range of one buffer each give their own product.
    #[test]
    fn gathered_values_follow_the_values() {
        let (crow, col) = (vec![0i64, 2, 2, 3], vec![0i64, 2, 2]);
        let ints = |v: &Vec<i64>| FlexTensor::from_data(TensorData::new(v.clone(), [v.len()]));
        let g = FlexTensor::from_data(TensorData::new(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], [3, 2]));
        let cell = TransposeCell::new();
        assert!(CsrPattern::new(&crow[..], &col[..], 3).is_ok());
        // Aᵀ G for A = [[v0, 0, v1], [0, 0, 0], [0, 0, v2]].
        let reference = |v: &[f64]| vec![v[0], 2.0 * v[0], 0.0, 0.0, v[1] + 5.0 * v[2], 2.0 * v[1] + 6.0 * v[2]];
        let product = |values: FlexTensor| {
            // SAFETY: a valid pattern [3, 3] (checked above), its own cell.
            let out = unsafe { Flex::csr_spmm_t(ints(&crow), ints(&col), values, g.clone(), 3, &cell) };
            out.into_data().iter::<f64>().collect::<Vec<_>>()
        };
        let mut values = FlexTensor::from_data(TensorData::new(vec![1.0f64, 2.0, 3.0], [3]));
        assert_eq!(product(values.clone()), reference(&[1.0, 2.0, 3.0]));
        assert!(cell.with_slot(|slot| slot.is_some()), "the gathered values are kept");
        assert_eq!(product(values.clone()), reference(&[1.0, 2.0, 3.0]));
        // The sole owner writes its buffer: never in place while the slot names it.
        assert!(values.try_storage_mut::<f64>().is_none());
        values.storage_mut::<f64>()[0] = 10.0;
        assert_eq!(product(values.clone()), reference(&[10.0, 2.0, 3.0]));
        // Other values on the same pattern, then the first ones again.
        let other = FlexTensor::from_data(TensorData::new(vec![-1.0f64, 0.5, 4.0], [3]));
        assert_eq!(product(other), reference(&[-1.0, 0.5, 4.0]));
        assert_eq!(product(values), reference(&[10.0, 2.0, 3.0]));
        // Two ranges of one buffer.
        let wide = FlexTensor::from_data(TensorData::new(vec![1.0f64, 2.0, 3.0, 4.0], [4]));
        let head = contiguous(wide.clone().narrow(0, 0, 3));
        let tail = contiguous(wide.narrow(0, 1, 3));
        assert_eq!(product(head), reference(&[1.0, 2.0, 3.0]));
        assert_eq!(product(tail), reference(&[2.0, 3.0, 4.0]));
    }
}
