//! [`SparseSpgemm`] on Flex: the host kernels of `sparsegrad-kernels` run on Flex's own buffers
//! (f32 and f64; 16-bit floats widened to f32), no read-back.

use super::SparseSpgemm;
use crate::flex::*;
use crate::host::IntSlice;
use burn::backend::flex::FlexTensor;
use burn::backend::{Flex, TensorMetadata};
use burn::tensor::{DType, TensorData};
use sparsegrad_kernels::real::Real;
use sparsegrad_kernels::spgemm::{spgemm, spgemm_grad_a, spgemm_grad_b, spgemm_numeric};

/// The index slices of six contiguous Flex tensors.
fn flex_ints(t: &[FlexTensor; 6]) -> [IntSlice<'_>; 6] {
    core::array::from_fn(|i| int_slice(&t[i]))
}

impl SparseSpgemm for Flex {
    unsafe fn csr_spgemm(
        a_crow: FlexTensor,
        a_col: FlexTensor,
        a_values: FlexTensor,
        b_crow: FlexTensor,
        b_col: FlexTensor,
        b_values: FlexTensor,
        c_crow: FlexTensor,
        c_col: FlexTensor,
        n: usize,
    ) -> FlexTensor {
        let t = [a_crow, a_col, b_crow, b_col, c_crow, c_col].map(contiguous);
        let (k, nnz) = (t[2].shape()[0] - 1, t[5].shape()[0]);
        with_real(
            [a_values, b_values],
            vec![nnz],
            |[av, bv]| with_three!(flex_ints(&t), [k, n, n], |a, b, c| spgemm_numeric(a, av, b, bv, c)),
            |[av, bv]| with_three!(flex_ints(&t), [k, n, n], |a, b, c| spgemm_numeric(a, av, b, bv, c)),
        )
    }

    unsafe fn csr_spgemm_product(
        a_crow: FlexTensor,
        a_col: FlexTensor,
        a_values: FlexTensor,
        b_crow: FlexTensor,
        b_col: FlexTensor,
        b_values: FlexTensor,
        n: usize,
    ) -> (FlexTensor, FlexTensor, FlexTensor) {
        let t = [a_crow, a_col, b_crow, b_col].map(contiguous);
        let k = t[2].shape()[0] - 1;
        let ints: [IntSlice<'_>; 4] = core::array::from_fn(|i| int_slice(&t[i]));
        /// The product on one float type's slices, as Flex tensors.
        fn run<T: Real + burn::tensor::Element>(
            ints: [IntSlice<'_>; 4],
            k: usize,
            n: usize,
            av: &[T],
            bv: &[T],
        ) -> (FlexTensor, FlexTensor, Vec<T>) {
            // A's pattern stands in for C's slots, not read.
            let [ap, ai, bp, bi] = ints;
            let (crow, col, val) = with_three!([ap, ai, bp, bi, ap, ai], [k, n, k], |a, b, _c| spgemm(a, av, b, bv))
                .unwrap_or_else(|e| panic!("{e}"));
            let ints_of = |v: Vec<i64>| {
                let len = v.len();
                FlexTensor::from_data(TensorData::new(v, [len]))
            };
            (ints_of(crow), ints_of(col), val)
        }
        let dtype = a_values.dtype();
        let [av, bv] = [a_values, b_values].map(contiguous);
        match dtype {
            DType::F64 => {
                let (crow, col, val) = run(
                    ints,
                    k,
                    n,
                    av.as_slice::<f64>().expect("f64 values"),
                    bv.as_slice::<f64>().expect("f64 values"),
                );
                let len = val.len();
                (crow, col, FlexTensor::from_data(TensorData::new(val, [len])))
            }
            _ => {
                // f32 as it is; 16-bit floats widened to f32 and the result rounded back.
                let widen = |t: FlexTensor| {
                    if t.dtype() == DType::F32 {
                        t
                    } else {
                        FlexTensor::from_data(t.into_data().convert_dtype(DType::F32))
                    }
                };
                let (av, bv) = (widen(av), widen(bv));
                let (crow, col, val) = run(
                    ints,
                    k,
                    n,
                    av.as_slice::<f32>().expect("f32 values"),
                    bv.as_slice::<f32>().expect("f32 values"),
                );
                let len = val.len();
                (crow, col, FlexTensor::from_data(TensorData::new(val, [len]).convert_dtype(dtype)))
            }
        }
    }

    unsafe fn csr_spgemm_grad_a(
        a_crow: FlexTensor,
        a_col: FlexTensor,
        b_crow: FlexTensor,
        b_col: FlexTensor,
        b_values: FlexTensor,
        c_crow: FlexTensor,
        c_col: FlexTensor,
        g: FlexTensor,
        n: usize,
    ) -> FlexTensor {
        let t = [a_crow, a_col, b_crow, b_col, c_crow, c_col].map(contiguous);
        let (k, nnz) = (t[2].shape()[0] - 1, t[1].shape()[0]);
        with_real(
            [b_values, g],
            vec![nnz],
            |[bv, g]| with_three!(flex_ints(&t), [k, n, n], |a, b, c| spgemm_grad_a(a, b, bv, c, g)),
            |[bv, g]| with_three!(flex_ints(&t), [k, n, n], |a, b, c| spgemm_grad_a(a, b, bv, c, g)),
        )
    }

    unsafe fn csr_spgemm_grad_b(
        a_crow: FlexTensor,
        a_col: FlexTensor,
        a_values: FlexTensor,
        b_crow: FlexTensor,
        b_col: FlexTensor,
        c_crow: FlexTensor,
        c_col: FlexTensor,
        g: FlexTensor,
        n: usize,
    ) -> FlexTensor {
        let t = [a_crow, a_col, b_crow, b_col, c_crow, c_col].map(contiguous);
        let (k, nnz) = (t[2].shape()[0] - 1, t[3].shape()[0]);
        with_real(
            [a_values, g],
            vec![nnz],
            |[av, g]| {
                with_three!(flex_ints(&t), [k, n, n], |a, b, c| spgemm_grad_b(a, av, b, c, g))
                    .unwrap_or_else(|e| panic!("{e}"))
            },
            |[av, g]| {
                with_three!(flex_ints(&t), [k, n, n], |a, b, c| spgemm_grad_b(a, av, b, c, g))
                    .unwrap_or_else(|e| panic!("{e}"))
            },
        )
    }
}
