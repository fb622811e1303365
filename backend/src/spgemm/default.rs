//! The portable bodies of [`SparseSpgemm`]: the operands read back, the host kernels run, the
//! results uploaded (one round trip per call). Each checks its operands' shapes and patterns
//! first (a panic naming the operand).
//!
//! [`SparseSpgemm`]: super::SparseSpgemm

use crate::host::IntSlice;
use crate::operand::{spgemm_dims, CsrOperand};
use burn::backend::{
    read_sync,
    tensor::{FloatTensor, IntTensor},
    Backend, TensorMetadata,
};
use burn::tensor::{DType, TensorData};
use sparsegrad_kernels::spgemm::{spgemm, spgemm_grad_a, spgemm_grad_b, spgemm_numeric};

/// [`SparseSpgemm::csr_spgemm`](super::SparseSpgemm::csr_spgemm) on the host.
pub fn csr_spgemm<B: Backend>(
    a: CsrOperand<B>,
    a_values: FloatTensor<B>,
    b: CsrOperand<B>,
    b_values: FloatTensor<B>,
    c: CsrOperand<B>,
) -> FloatTensor<B> {
    const OP: &str = "csr_spgemm";
    spgemm_dims(OP, &a, &b, Some(&c), &[("a_values", &a_values, &a), ("b_values", &b_values, &b)]);
    let ([ka, kb, kc], ints) = host_patterns::<B>([a, b, c]);
    let (device, dtype) = (a_values.device(), a_values.dtype());
    let (av, bv) = (host_floats::<B>(a_values), host_floats::<B>(b_values));
    let out = with_three!(ints.each_ref().map(|v| IntSlice::I64(&v[..])), [ka, kb, kc], |a, b, c| spgemm_numeric(
        a, &av, b, &bv, c
    ));
    floats_on::<B>(out, dtype, &device)
}

/// [`SparseSpgemm::csr_spgemm_product`](super::SparseSpgemm::csr_spgemm_product) on the host.
#[allow(clippy::type_complexity)]
pub fn csr_spgemm_product<B: Backend>(
    a: CsrOperand<B>,
    a_values: FloatTensor<B>,
    b: CsrOperand<B>,
    b_values: FloatTensor<B>,
) -> (IntTensor<B>, IntTensor<B>, FloatTensor<B>) {
    const OP: &str = "csr_spgemm_product";
    spgemm_dims(OP, &a, &b, None, &[("a_values", &a_values, &a), ("b_values", &b_values, &b)]);
    let (k, n) = (a.ncols(), b.ncols());
    let (a_crow, a_col, _, _) = a.into_parts();
    let (b_crow, b_col, _, _) = b.into_parts();
    let ints = [a_crow, a_col, b_crow, b_col].map(host_ints::<B>);
    let (device, dtype) = (a_values.device(), a_values.dtype());
    let (av, bv) = (host_floats::<B>(a_values), host_floats::<B>(b_values));
    let (a, b) = (
        super::checked_csr("A", &ints[0][..], &ints[1][..], k),
        super::checked_csr("B", &ints[2][..], &ints[3][..], n),
    );
    let (crow, col, val) = spgemm(a, &av, b, &bv).unwrap_or_else(|e| panic!("{e}"));
    let ints_on = |v: Vec<i64>| {
        let len = v.len();
        B::int_from_data(TensorData::new(v, [len]), &device)
    };
    (ints_on(crow), ints_on(col), floats_on::<B>(val, dtype, &device))
}

/// [`SparseSpgemm::csr_spgemm_grad_a`](super::SparseSpgemm::csr_spgemm_grad_a) on the host.
pub fn csr_spgemm_grad_a<B: Backend>(
    a: CsrOperand<B>,
    b: CsrOperand<B>,
    b_values: FloatTensor<B>,
    c: CsrOperand<B>,
    g: FloatTensor<B>,
) -> FloatTensor<B> {
    const OP: &str = "csr_spgemm_grad_a";
    spgemm_dims(OP, &a, &b, Some(&c), &[("b_values", &b_values, &b), ("g", &g, &c)]);
    let ([ka, kb, kc], ints) = host_patterns::<B>([a, b, c]);
    let (device, dtype) = (g.device(), g.dtype());
    let (bv, gv) = (host_floats::<B>(b_values), host_floats::<B>(g));
    let out = with_three!(ints.each_ref().map(|v| IntSlice::I64(&v[..])), [ka, kb, kc], |a, b, c| spgemm_grad_a(
        a, b, &bv, c, &gv
    ));
    floats_on::<B>(out, dtype, &device)
}

/// [`SparseSpgemm::csr_spgemm_grad_b`](super::SparseSpgemm::csr_spgemm_grad_b) on the host.
pub fn csr_spgemm_grad_b<B: Backend>(
    a: CsrOperand<B>,
    a_values: FloatTensor<B>,
    b: CsrOperand<B>,
    c: CsrOperand<B>,
    g: FloatTensor<B>,
) -> FloatTensor<B> {
    const OP: &str = "csr_spgemm_grad_b";
    spgemm_dims(OP, &a, &b, Some(&c), &[("a_values", &a_values, &a), ("g", &g, &c)]);
    let ([ka, kb, kc], ints) = host_patterns::<B>([a, b, c]);
    let (device, dtype) = (g.device(), g.dtype());
    let (av, gv) = (host_floats::<B>(a_values), host_floats::<B>(g));
    let out = with_three!(ints.each_ref().map(|v| IntSlice::I64(&v[..])), [ka, kb, kc], |a, b, c| spgemm_grad_b(
        a, &av, b, c, &gv
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    floats_on::<B>(out, dtype, &device)
}

/// The column counts of three patterns and their six index arrays (each pattern's pointers,
/// then its columns) read back as i64.
fn host_patterns<B: Backend>(patterns: [CsrOperand<B>; 3]) -> ([usize; 3], [Vec<i64>; 6]) {
    let cols = patterns.each_ref().map(|p| p.ncols());
    let [(ap, ai, _, _), (bp, bi, _, _), (cp, ci, _, _)] = patterns.map(CsrOperand::into_parts);
    (cols, [ap, ai, bp, bi, cp, ci].map(host_ints::<B>))
}

/// An Int tensor of any backend read back as i64.
fn host_ints<B: Backend>(t: IntTensor<B>) -> Vec<i64> {
    read_sync(B::int_into_data(t)).expect("int tensor readback").iter::<i64>().collect()
}

/// A Float tensor of any backend read back as f64.
fn host_floats<B: Backend>(t: FloatTensor<B>) -> Vec<f64> {
    read_sync(B::float_into_data(t)).expect("float tensor readback").iter::<f64>().collect()
}

/// `v` as a float tensor of `dtype` on `device`.
fn floats_on<B: Backend>(v: Vec<f64>, dtype: DType, device: &B::Device) -> FloatTensor<B> {
    let len = v.len();
    B::float_from_data(TensorData::new(v, [len]).convert_dtype(dtype), device)
}
