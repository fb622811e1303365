//! [`SparseSpmm`] on Flex: the host kernels of `sparsegrad-kernels` on Flex's own buffers, the
//! `with_pattern!` macro that views two Flex index tensors as a pattern (shared with `sddmm` and
//! `spmm_reduce`), and the cache of a pattern's values gathered in column order that the
//! transposed products reuse.

use super::SparseSpmm;
use crate::flex::*;
use crate::operand::{spmm_backward_dims, spmm_dims, spmm_t_dims, CsrOperand};
use burn::backend::flex::FlexTensor;
use burn::backend::{Flex, TensorMetadata};
use burn::tensor::{DType, TensorData};
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

/// Runs `$body` with `$a` the pattern of the contiguous Flex index tensors `$crow` and `$col`
/// over `$k` columns, for every pair of index types, checked once per index storage
/// ([`crate::flex::checked_pattern`], which keeps its record in `$cell`): an invalid pattern is
/// a panic naming `$op` and the violation, never a kernel walking it.
macro_rules! with_pattern {
    ($op:expr, $cell:expr, $crow:expr, $col:expr, $k:expr, |$a:ident| $body:expr) => {
        $crate::match_ints!($crate::flex::int_slice($crow), c => $crate::match_ints!($crate::flex::int_slice($col), p => {
            let $a = $crate::flex::checked_pattern($op, $cell, [$crow, $col], c, p, $k);
            $body
        }))
    };
}
pub(crate) use with_pattern;

impl SparseSpmm for Flex {
    fn csr_spmm(pattern: CsrOperand<Self>, values: FlexTensor, x: FlexTensor) -> FlexTensor {
        let n = spmm_dims("csr_spmm", &pattern, &values, &x);
        let (m, k) = (pattern.nrows(), pattern.ncols());
        let (crow, col, _, cell) = pattern.into_parts();
        let (crow, col) = (contiguous(crow), contiguous(col));
        with_real(
            [values, x],
            vec![m, n],
            |[v, x]| with_pattern!("csr_spmm", &cell, &crow, &col, k, |a| spmm(a, v, x, n)),
            |[v, x]| with_pattern!("csr_spmm", &cell, &crow, &col, k, |a| spmm(a, v, x, n)),
        )
    }

    fn csr_spmm_stored_transposed(pattern: CsrOperand<Self>, values: FlexTensor, x: FlexTensor) -> FlexTensor {
        let n = spmm_dims("csr_spmm", &pattern, &values, &x);
        let (m, k) = (pattern.nrows(), pattern.ncols());
        let (crow, col, _, cell) = pattern.into_parts();
        let (crow, col) = (contiguous(crow), contiguous(col));
        // `x` the transposed view of a `y [n, k]` (`y · Aᵀ`, as `mm_dense_sparse` asks): the
        // kernel transposes `y` in its packing pass instead of a copy of `xᵀ` first.
        if let Some(y) = transposed_base(&x) {
            return with_real(
                [values, y],
                vec![n, m],
                |[v, y]| {
                    with_pattern!("csr_spmm", &cell, &crow, &col, k, |a| spmm_of_transpose_transposed_out(a, v, y, n))
                },
                |[v, y]| {
                    with_pattern!("csr_spmm", &cell, &crow, &col, k, |a| spmm_of_transpose_transposed_out(a, v, y, n))
                },
            )
            .transpose(0, 1);
        }
        // `[n, m]` row-major, viewed as its transpose `[m, n]`.
        with_real(
            [values, x],
            vec![n, m],
            |[v, x]| with_pattern!("csr_spmm", &cell, &crow, &col, k, |a| spmm_transposed_out(a, v, x, n)),
            |[v, x]| with_pattern!("csr_spmm", &cell, &crow, &col, k, |a| spmm_transposed_out(a, v, x, n)),
        )
        .transpose(0, 1)
    }

    fn csr_spmm_t(pattern: CsrOperand<Self>, values: FlexTensor, g: FlexTensor) -> FlexTensor {
        let n = spmm_t_dims("csr_spmm_t", &pattern, &values, &g);
        let k = pattern.ncols();
        let (crow, col, _, cell) = pattern.into_parts();
        let (crow, col) = (contiguous(crow), contiguous(col));
        let csc = with_pattern!("csr_spmm_t", &cell, &crow, &col, k, |a| cell.of(a));
        let values = contiguous(values);
        if let Some(tvals) = column_values(&cell, csc, &values) {
            return with_real(
                [tvals, g],
                vec![k, n],
                |[v, g]| spmm_t_gathered(csc, v, g, n),
                |[v, g]| spmm_t_gathered(csc, v, g, n),
            );
        }
        with_real([values, g], vec![k, n], |[v, g]| spmm_t_with(csc, v, g, n), |[v, g]| spmm_t_with(csc, v, g, n))
    }

    fn csr_spmm_t_stored_transposed(pattern: CsrOperand<Self>, values: FlexTensor, g: FlexTensor) -> FlexTensor {
        let n = spmm_t_dims("csr_spmm_t", &pattern, &values, &g);
        let k = pattern.ncols();
        let (crow, col, _, cell) = pattern.clone().into_parts();
        let (crow, col) = (contiguous(crow), contiguous(col));
        let csc = with_pattern!("csr_spmm_t", &cell, &crow, &col, k, |a| cell.of(a));
        let values = contiguous(values);
        let Some(tvals) = column_values(&cell, csc, &values) else {
            // 16-bit values: stored as `csr_spmm_t` stores them.
            return Self::csr_spmm_t(pattern, values, g);
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

    fn csr_spmm_backward(
        pattern: CsrOperand<Self>,
        values: FlexTensor,
        g: FlexTensor,
        x: FlexTensor,
        transpose: bool,
    ) -> FlexTensor {
        let n = spmm_backward_dims("csr_spmm_backward", &pattern, &values, &g, &x, transpose);
        let k = pattern.ncols();
        let (crow, col, _, cell) = pattern.into_parts();
        let (crow, col) = (contiguous(crow), contiguous(col));
        let len = x.shape()[0];
        let total = vec![out_len(len, n, "spmm backward: dX")
            .checked_add(col.shape()[0])
            .expect("spmm backward: gradient length overflows usize")];
        if transpose {
            with_real(
                [values, g, x],
                total,
                |[v, g, x]| {
                    with_pattern!("spmm backward", &cell, &crow, &col, k, |a| spmm_backward(
                        &Walk::InOrder(a),
                        v,
                        g,
                        x,
                        n
                    ))
                },
                |[v, g, x]| {
                    with_pattern!("spmm backward", &cell, &crow, &col, k, |a| spmm_backward(
                        &Walk::InOrder(a),
                        v,
                        g,
                        x,
                        n
                    ))
                },
            )
        } else {
            let csc = with_pattern!("spmm backward", &cell, &crow, &col, k, |a| cell.of(a));
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
