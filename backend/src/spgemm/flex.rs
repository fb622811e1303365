//! [`SparseSpgemm`] on Flex: the host kernels of `sparsegrad-kernels` run on Flex's own buffers
//! (f32 and f64; 16-bit floats widened to f32), no read-back.

use super::SparseSpgemm;
use crate::flex::*;
use crate::host::IntSlice;
use crate::operand::{spgemm_dims, CsrOperand};
use burn::backend::flex::FlexTensor;
use burn::backend::Flex;
use burn::tensor::{DType, TensorData};
use sparsegrad_kernels::real::Real;
use sparsegrad_kernels::spgemm::{spgemm, spgemm_grad_a, spgemm_grad_b, spgemm_numeric};

/// The index slices of six contiguous Flex tensors.
fn flex_ints(t: &[FlexTensor; 6]) -> [IntSlice<'_>; 6] {
    core::array::from_fn(|i| int_slice(&t[i]))
}

/// The column counts of three patterns and their six index tensors (each pattern's pointers,
/// then its columns), contiguous, each pattern checked through its cell
/// ([`checked_pattern`]: once per index storage), as `with_three!`'s `vouched:` form requires.
fn flex_patterns(operation: &str, patterns: [CsrOperand<Flex>; 3]) -> ([usize; 3], [FlexTensor; 6]) {
    let cols = patterns.each_ref().map(|p| p.ncols());
    let [(ap, ai, _, ac), (bp, bi, _, bc), (cp, ci, _, cc)] = patterns.map(CsrOperand::into_parts);
    let t = [ap, ai, bp, bi, cp, ci].map(contiguous);
    for (q, cell) in [ac, bc, cc].iter().enumerate() {
        vouch(operation, ["A", "B", "C"][q], cell, [&t[2 * q], &t[2 * q + 1]], cols[q]);
    }
    (cols, t)
}

/// Checks the pattern `[crow, col]` over `ncols` columns through its cell ([`try_checked_pattern`]:
/// once per index storage): a panic naming `operand` where it is not valid, as the host path's
/// (`spgemm::checked_csr`).
fn vouch(
    operation: &str,
    operand: &str,
    cell: &sparsegrad_kernels::pattern::TransposeCell,
    [crow, col]: [&FlexTensor; 2],
    ncols: usize,
) {
    crate::match_ints!(int_slice(crow), c => crate::match_ints!(int_slice(col), p => {
        if let Err(e) = try_checked_pattern(cell, [crow, col], c, p, ncols) {
            panic!("{operation}: the pattern of {operand} is not valid: {e}");
        }
    }));
}

impl SparseSpgemm for Flex {
    fn csr_spgemm(
        a: CsrOperand<Self>,
        a_values: FlexTensor,
        b: CsrOperand<Self>,
        b_values: FlexTensor,
        c: CsrOperand<Self>,
    ) -> FlexTensor {
        spgemm_dims("csr_spgemm", &a, &b, Some(&c), &[("a_values", &a_values, &a), ("b_values", &b_values, &b)]);
        let nnz = c.nnz();
        let ([ka, kb, kc], t) = flex_patterns("csr_spgemm", [a, b, c]);
        with_real(
            [a_values, b_values],
            vec![nnz],
            |[av, bv]| with_three!(vouched: flex_ints(&t), [ka, kb, kc], |a, b, c| spgemm_numeric(a, av, b, bv, c)),
            |[av, bv]| with_three!(vouched: flex_ints(&t), [ka, kb, kc], |a, b, c| spgemm_numeric(a, av, b, bv, c)),
        )
    }

    fn csr_spgemm_product(
        a: CsrOperand<Self>,
        a_values: FlexTensor,
        b: CsrOperand<Self>,
        b_values: FlexTensor,
    ) -> (FlexTensor, FlexTensor, FlexTensor) {
        spgemm_dims("csr_spgemm_product", &a, &b, None, &[("a_values", &a_values, &a), ("b_values", &b_values, &b)]);
        let (k, n) = (a.ncols(), b.ncols());
        let (a_crow, a_col, _, a_cell) = a.into_parts();
        let (b_crow, b_col, _, b_cell) = b.into_parts();
        let t = [a_crow, a_col, b_crow, b_col].map(contiguous);
        // Each pattern checked through its cell (once per index storage), as `run`'s
        // `with_three!` form requires.
        vouch("csr_spgemm_product", "A", &a_cell, [&t[0], &t[1]], k);
        vouch("csr_spgemm_product", "B", &b_cell, [&t[2], &t[3]], n);
        let ints: [IntSlice<'_>; 4] = core::array::from_fn(|i| int_slice(&t[i]));
        /// The product on one float type's slices, as Flex tensors.
        fn run<T: Real + burn::tensor::Element>(
            ints: [IntSlice<'_>; 4],
            k: usize,
            n: usize,
            av: &[T],
            bv: &[T],
        ) -> (FlexTensor, FlexTensor, Vec<T>) {
            // A's pattern stands in for C's slots, not read. The caller checked both patterns.
            let [ap, ai, bp, bi] = ints;
            let (crow, col, val) =
                with_three!(vouched: [ap, ai, bp, bi, ap, ai], [k, n, k], |a, b, _c| spgemm(a, av, b, bv))
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

    fn csr_spgemm_grad_a(
        a: CsrOperand<Self>,
        b: CsrOperand<Self>,
        b_values: FlexTensor,
        c: CsrOperand<Self>,
        g: FlexTensor,
    ) -> FlexTensor {
        spgemm_dims("csr_spgemm_grad_a", &a, &b, Some(&c), &[("b_values", &b_values, &b), ("g", &g, &c)]);
        let nnz = a.nnz();
        let ([ka, kb, kc], t) = flex_patterns("csr_spgemm_grad_a", [a, b, c]);
        with_real(
            [b_values, g],
            vec![nnz],
            |[bv, g]| with_three!(vouched: flex_ints(&t), [ka, kb, kc], |a, b, c| spgemm_grad_a(a, b, bv, c, g)),
            |[bv, g]| with_three!(vouched: flex_ints(&t), [ka, kb, kc], |a, b, c| spgemm_grad_a(a, b, bv, c, g)),
        )
    }

    fn csr_spgemm_grad_b(
        a: CsrOperand<Self>,
        a_values: FlexTensor,
        b: CsrOperand<Self>,
        c: CsrOperand<Self>,
        g: FlexTensor,
    ) -> FlexTensor {
        spgemm_dims("csr_spgemm_grad_b", &a, &b, Some(&c), &[("a_values", &a_values, &a), ("g", &g, &c)]);
        let nnz = b.nnz();
        let ([ka, kb, kc], t) = flex_patterns("csr_spgemm_grad_b", [a, b, c]);
        with_real(
            [a_values, g],
            vec![nnz],
            |[av, g]| {
                with_three!(vouched: flex_ints(&t), [ka, kb, kc], |a, b, c| spgemm_grad_b(a, av, b, c, g))
                    .unwrap_or_else(|e| panic!("{e}"))
            },
            |[av, g]| {
                with_three!(vouched: flex_ints(&t), [ka, kb, kc], |a, b, c| spgemm_grad_b(a, av, b, c, g))
                    .unwrap_or_else(|e| panic!("{e}"))
            },
        )
    }
}
