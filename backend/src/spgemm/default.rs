//! The portable bodies of [`SparseSpgemm`]: the operands read back, the host kernels run, the
//! results uploaded (one round trip per call).
//!
//! # Safety
//! Every function: the trait's contract.
//!
//! [`SparseSpgemm`]: super::SparseSpgemm

use crate::host::IntSlice;
use burn::backend::{
    read_sync,
    tensor::{FloatTensor, IntTensor},
    Backend, TensorMetadata,
};
use burn::tensor::{DType, TensorData};
use sparsegrad_kernels::spgemm::{spgemm, spgemm_grad_a, spgemm_grad_b, spgemm_numeric};

/// [`SparseSpgemm::csr_spgemm`](super::SparseSpgemm::csr_spgemm) on the host.
///
/// # Safety
/// As the trait method.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub unsafe fn csr_spgemm<B: Backend>(
    a_crow: IntTensor<B>,
    a_col: IntTensor<B>,
    a_values: FloatTensor<B>,
    b_crow: IntTensor<B>,
    b_col: IntTensor<B>,
    b_values: FloatTensor<B>,
    c_crow: IntTensor<B>,
    c_col: IntTensor<B>,
    n: usize,
) -> FloatTensor<B> {
    let ints = [a_crow, a_col, b_crow, b_col, c_crow, c_col].map(host_ints::<B>);
    let (device, dtype) = (a_values.device(), a_values.dtype());
    let (av, bv) = (host_floats::<B>(a_values), host_floats::<B>(b_values));
    let k = ints[2].len() - 1;
    let out = with_three!(ints.each_ref().map(|v| IntSlice::I64(&v[..])), [k, n, n], |a, b, c| spgemm_numeric(
        a, &av, b, &bv, c
    ));
    floats_on::<B>(out, dtype, &device)
}

/// [`SparseSpgemm::csr_spgemm_product`](super::SparseSpgemm::csr_spgemm_product) on the host.
///
/// # Safety
/// As the trait method.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub unsafe fn csr_spgemm_product<B: Backend>(
    a_crow: IntTensor<B>,
    a_col: IntTensor<B>,
    a_values: FloatTensor<B>,
    b_crow: IntTensor<B>,
    b_col: IntTensor<B>,
    b_values: FloatTensor<B>,
    n: usize,
) -> (IntTensor<B>, IntTensor<B>, FloatTensor<B>) {
    let ints = [a_crow, a_col, b_crow, b_col].map(host_ints::<B>);
    let (device, dtype) = (a_values.device(), a_values.dtype());
    let (av, bv) = (host_floats::<B>(a_values), host_floats::<B>(b_values));
    let k = ints[2].len() - 1;
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
///
/// # Safety
/// As the trait method.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub unsafe fn csr_spgemm_grad_a<B: Backend>(
    a_crow: IntTensor<B>,
    a_col: IntTensor<B>,
    b_crow: IntTensor<B>,
    b_col: IntTensor<B>,
    b_values: FloatTensor<B>,
    c_crow: IntTensor<B>,
    c_col: IntTensor<B>,
    g: FloatTensor<B>,
    n: usize,
) -> FloatTensor<B> {
    let ints = [a_crow, a_col, b_crow, b_col, c_crow, c_col].map(host_ints::<B>);
    let (device, dtype) = (g.device(), g.dtype());
    let (bv, gv) = (host_floats::<B>(b_values), host_floats::<B>(g));
    let k = ints[2].len() - 1;
    let out = with_three!(ints.each_ref().map(|v| IntSlice::I64(&v[..])), [k, n, n], |a, b, c| spgemm_grad_a(
        a, b, &bv, c, &gv
    ));
    floats_on::<B>(out, dtype, &device)
}

/// [`SparseSpgemm::csr_spgemm_grad_b`](super::SparseSpgemm::csr_spgemm_grad_b) on the host.
///
/// # Safety
/// As the trait method.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub unsafe fn csr_spgemm_grad_b<B: Backend>(
    a_crow: IntTensor<B>,
    a_col: IntTensor<B>,
    a_values: FloatTensor<B>,
    b_crow: IntTensor<B>,
    b_col: IntTensor<B>,
    c_crow: IntTensor<B>,
    c_col: IntTensor<B>,
    g: FloatTensor<B>,
    n: usize,
) -> FloatTensor<B> {
    let ints = [a_crow, a_col, b_crow, b_col, c_crow, c_col].map(host_ints::<B>);
    let (device, dtype) = (g.device(), g.dtype());
    let (av, gv) = (host_floats::<B>(a_values), host_floats::<B>(g));
    let k = ints[2].len() - 1;
    let out = with_three!(ints.each_ref().map(|v| IntSlice::I64(&v[..])), [k, n, n], |a, b, c| spgemm_grad_b(
        a, &av, b, c, &gv
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    floats_on::<B>(out, dtype, &device)
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
