//! Defaults for backends without host kernels: burn gathers and scatter-adds over `[nnz, n]`.

use crate::algebra::compress::expand;
use burn::backend::{
    tensor::{FloatTensor, IntTensor},
    Backend, TensorMetadata,
};
use burn::tensor::{IndexingUpdateOp, Shape, TensorData};

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
