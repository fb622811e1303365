//! Moving value rows by index: `gather_rows` (`out[k] = values[ids[k]]`) and `index_add_rows`
//! (`out[targets[j]] += values[j]`), the two value movements every conversion, `coalesce` and
//! `to_dense` are made of. They are each other's gradient, so the pair is closed under autodiff.
//!
//! Behind the extension trait [`RowMovement`]: Flex runs host kernels over its buffers (f32 and
//! f64; other dtypes take the default), any other backend composes burn's `select` and
//! `select_assign`, and `Autodiff` records the two backward rules.

use crate::flex::*;
use crate::host::IntSlice;
use burn::backend::flex::FlexTensor;
use burn::backend::Dispatch;
use burn::backend::{
    backend_extension,
    tensor::{FloatTensor, IntTensor},
    Backend, Flex, TensorMetadata,
};
use burn::tensor::{DType, IndexingUpdateOp, Shape, TensorData};
use burn::tensor::{Int, Tensor};
use rayon::prelude::*;

/// Row gather and scatter-add on `[rows, width]` value tensors.
#[backend_extension(Flex, Cube: cfg(feature = "cube"), Autodiff)]
#[diagnostic::on_unimplemented(
    message = "sparsegrad has no kernels for the backend `{Self}` (`RowMovement` is not implemented)",
    label = "no sparsegrad kernels for this backend",
    note = "a `Fusion<CubeBackend>` here means that burn's feature `fusion` is on (burn's default features turn it on) and sparsegrad's is off: turn on sparsegrad's `fusion` with `wgpu`, `sparsegrad = {{ version = \"0.1\", features = [\"wgpu\", \"fusion\"] }}` (see `sparsegrad::guide::gpu`)"
)]
pub trait RowMovement: Backend {
    /// `out[k] = values[ids[k]]`: `[ids.len(), width]`.
    fn gather_rows(values: FloatTensor<Self>, ids: IntTensor<Self>) -> FloatTensor<Self> {
        gather_rows_default::<Self>(values, ids)
    }

    /// `out = zeros([rows, width]); out[targets[j]] += values[j]`.
    fn index_add_rows(values: FloatTensor<Self>, targets: IntTensor<Self>, rows: usize) -> FloatTensor<Self> {
        index_add_rows_default::<Self>(values, targets, rows)
    }
}

fn gather_rows_default<B: Backend>(values: FloatTensor<B>, ids: IntTensor<B>) -> FloatTensor<B> {
    B::float_select(values, 0, ids)
}

fn index_add_rows_default<B: Backend>(values: FloatTensor<B>, targets: IntTensor<B>, rows: usize) -> FloatTensor<B> {
    let shape = values.shape();
    let width = shape[1];
    let zeros = B::float_zeros(Shape::new([rows, width]), &values.device(), values.dtype().into());
    if shape[0] == 0 || width == 0 {
        return zeros;
    }
    B::float_select_assign(zeros, 0, targets, values, IndexingUpdateOp::Add)
}

fn flex_ids(ids: &FlexTensor) -> Option<IntSlice<'_>> {
    match ids.dtype() {
        DType::I64 => ids.as_slice::<i64>().map(IntSlice::I64),
        DType::I32 => ids.as_slice::<i32>().map(IntSlice::I32),
        _ => None,
    }
}

/// Rows per rayon task: enough work to amortise scheduling.
fn rows_per_task(rows: usize, width: usize) -> usize {
    (65_536 / width.max(1)).max(1).min(rows.max(1))
}

fn gather_kernel<T: Copy + Default + Send + Sync>(src: &[T], width: usize, ids: IntSlice<'_>) -> Vec<T> {
    let n = ids.len();
    let mut out = vec![T::default(); n * width];
    if out.is_empty() {
        // Zero rows or zero-width rows (a zero-size dense dim): nothing to move, and
        // `par_chunks_mut` / `chunks_mut` refuse a chunk size of 0.
        return out;
    }
    let chunk = rows_per_task(n, width);
    crate::match_ints!(ids, ids => {
        out.par_chunks_mut(chunk * width).enumerate().for_each(|(c, rows)| {
            let base = c * chunk;
            for (r, row) in rows.chunks_mut(width).enumerate() {
                let s = ids[base + r] as usize * width;
                row.copy_from_slice(&src[s..s + width]);
            }
        })
    });
    out
}

fn index_add_kernel<T: Copy + Default + core::ops::AddAssign + Send + Sync>(
    src: &[T],
    width: usize,
    targets: IntSlice<'_>,
    rows: usize,
) -> Vec<T> {
    // Zeros written, not calloc'd: the read-modify-writes below would otherwise fault twice per
    // page (zero page, then copy-on-write with a TLB shootdown).
    let mut out = Vec::with_capacity(rows * width);
    out.resize(rows * width, T::default());
    crate::match_ints!(targets, t => {
        if width == 1 {
            for (j, &r) in t.iter().enumerate() {
                out[r as usize] += src[j];
            }
        } else {
            for (j, &r) in t.iter().enumerate() {
                let dst = &mut out[r as usize * width..(r as usize + 1) * width];
                for (d, &s) in dst.iter_mut().zip(&src[j * width..(j + 1) * width]) {
                    *d += s;
                }
            }
        }
    });
    out
}

/// Cube devices: burn's `select` for the gather; the scatter-add by the product kernel over the
/// rows grouped by target on the device (`cube::spmm::index_add_rows`: a device sort, nothing
/// read back), where burn's `select_assign` walks every row in one kernel unit (and on
/// lavapipe loses the rows past about 70 000).
#[cfg(feature = "cube")]
impl RowMovement for crate::cube::CubeBackend {
    fn index_add_rows(values: FloatTensor<Self>, targets: IntTensor<Self>, rows: usize) -> FloatTensor<Self> {
        crate::cube::spmm::index_add_rows(values, targets, rows)
    }
}

/// Cube devices under burn's `fusion`: the Cube kernels on the resolved tensors (`cube::fused`).
#[cfg(all(feature = "cube", feature = "fusion"))]
impl RowMovement for crate::cube::FusedCube {
    fn index_add_rows(values: FloatTensor<Self>, targets: IntTensor<Self>, rows: usize) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = values.client.clone();
        publish_float(&client, crate::cube::CubeBackend::index_add_rows(float(values), int(targets), rows))
    }
}

impl RowMovement for Flex {
    fn gather_rows(values: FlexTensor, ids: FlexTensor) -> FlexTensor {
        let (values, ids) = (contiguous(values), contiguous(ids));
        let width = values.shape()[1];
        let n = ids.shape().num_elements();
        let Some(idx) = flex_ids(&ids) else { return gather_rows_default::<Flex>(values, ids) };
        let data = match values.dtype() {
            DType::F32 => {
                TensorData::new(gather_kernel(values.as_slice::<f32>().expect("f32"), width, idx), [n, width])
            }
            DType::F64 => {
                TensorData::new(gather_kernel(values.as_slice::<f64>().expect("f64"), width, idx), [n, width])
            }
            _ => return gather_rows_default::<Flex>(values, ids),
        };
        FlexTensor::from_data(data)
    }

    fn index_add_rows(values: FlexTensor, targets: FlexTensor, rows: usize) -> FlexTensor {
        let (values, targets) = (contiguous(values), contiguous(targets));
        let width = values.shape()[1];
        let Some(idx) = flex_ids(&targets) else { return index_add_rows_default::<Flex>(values, targets, rows) };
        let data = match values.dtype() {
            DType::F32 => TensorData::new(
                index_add_kernel(values.as_slice::<f32>().expect("f32"), width, idx, rows),
                [rows, width],
            ),
            DType::F64 => TensorData::new(
                index_add_kernel(values.as_slice::<f64>().expect("f64"), width, idx, rows),
                [rows, width],
            ),
            _ => return index_add_rows_default::<Flex>(values, targets, rows),
        };
        FlexTensor::from_data(data)
    }
}

/// An int64 index tensor holding `ids` (the index argument of the row movements).
pub fn gather_index(ids: Vec<i64>, device: &burn::tensor::Device) -> Tensor<1, Int> {
    let n = ids.len();
    Tensor::from_data(TensorData::new(ids, [n]), (device, DType::I64))
}

/// `zeros([rows, width])` with `values`' rows added at `targets` (duplicates summed).
pub fn scatter_add_rows(values: Tensor<2>, targets: Vec<i64>, rows: usize) -> Tensor<2> {
    let device = values.device();
    scatter_add_rows_at(values, gather_index(targets, &device), rows)
}

/// [`scatter_add_rows`] with the targets in a tensor on the values' device.
pub fn scatter_add_rows_at(values: Tensor<2>, targets: Tensor<1, Int>, rows: usize) -> Tensor<2> {
    Tensor::from_dispatch(<Dispatch as RowMovement>::index_add_rows(
        values.into_dispatch(),
        targets.into_dispatch(),
        rows,
    ))
}

/// `values` rows at `ids`, in that order.
pub fn gather_rows(values: Tensor<2>, ids: Vec<i64>) -> Tensor<2> {
    let device = values.device();
    gather_rows_at(values, gather_index(ids, &device))
}

/// [`gather_rows`] with the ids in a tensor on the values' device.
pub fn gather_rows_at(values: Tensor<2>, ids: Tensor<1, Int>) -> Tensor<2> {
    Tensor::from_dispatch(<Dispatch as RowMovement>::gather_rows(values.into_dispatch(), ids.into_dispatch()))
}

mod autodiff_impl {
    use super::*;
    use burn::backend::autodiff::{
        checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
        grads::Gradients,
        ops::{Backward, Ops, OpsKind},
        Autodiff,
    };

    #[derive(Debug)]
    struct GatherRows;

    impl<B: RowMovement> Backward<B, 1> for GatherRows {
        type State = (IntTensor<B>, usize);

        fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
            let (ids, rows) = ops.state;
            burn::backend::autodiff::ops::unary::<B, _>(ops.parents, ops.node, grads, |g| {
                B::index_add_rows(g, ids, rows)
            });
        }
    }

    #[derive(Debug)]
    struct IndexAddRows;

    impl<B: RowMovement> Backward<B, 1> for IndexAddRows {
        type State = IntTensor<B>;

        fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
            let targets = ops.state;
            burn::backend::autodiff::ops::unary::<B, _>(ops.parents, ops.node, grads, |g| B::gather_rows(g, targets));
        }
    }

    impl<B: RowMovement, C: CheckpointStrategy> RowMovement for Autodiff<B, C> {
        fn gather_rows(values: FloatTensor<Self>, ids: IntTensor<Self>) -> FloatTensor<Self> {
            let rows = values.shape()[0];
            let guard = values.node();
            let out = B::gather_rows(values.into_primitive(), ids.clone());
            match GatherRows.prepare::<C>([guard]).compute_bound().stateful() {
                OpsKind::Tracked(prep) => prep.finish((ids, rows), out),
                OpsKind::UnTracked(prep) => prep.finish(out),
            }
        }

        fn index_add_rows(values: FloatTensor<Self>, targets: IntTensor<Self>, rows: usize) -> FloatTensor<Self> {
            let guard = values.node();
            let out = B::index_add_rows(values.into_primitive(), targets.clone(), rows);
            match IndexAddRows.prepare::<C>([guard]).compute_bound().stateful() {
                OpsKind::Tracked(prep) => prep.finish(targets, out),
                OpsKind::UnTracked(prep) => prep.finish(out),
            }
        }
    }
}
