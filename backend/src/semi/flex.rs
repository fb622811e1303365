//! Flex's impl of [`SemiMatmul`]: the host kernels of `sparsegrad-kernels`' `semi` on Flex's
//! buffers (f32 and f64; f16 and bf16 widened to f32, or read as stored at decode size).
//!
//! [`SemiMatmul`]: super::SemiMatmul

use super::SemiMatmul;
use crate::flex::*;
use crate::host::IntSlice;
use burn::backend::flex::FlexTensor;
use burn::backend::ops::FloatTensorOps;
use burn::backend::{Flex, TensorMetadata};
use burn::tensor::{DType, TensorData};
use half::{bf16, f16};
use sparsegrad_kernels::semi::{semi_mm, semi_mm_t, semi_sddmm, SemiLayout, SemiRef};
use sparsegrad_kernels::semi_narrow::{semi_mm_narrow_16, semi_mm_narrow_bf16, NARROW};

/// Runs `f` on the metadata words of a Flex Int tensor: borrowed where they are stored as
/// `i16` (as `SemiStructuredTensor` keeps them), converted otherwise. A decode-size product
/// reads each word once, so a per-call conversion (a 22 MB i64 copy at K = 4096, N = 11008)
/// cost as much as the product.
fn with_words<R>(metadata: FlexTensor, f: impl FnOnce(&[i16]) -> R) -> R {
    let metadata = contiguous(metadata);
    match int_slice(&metadata) {
        IntSlice::I16(words) => f(words),
        other => f(&other.to_i64().into_iter().map(|v| v as i16).collect::<Vec<_>>()),
    }
}

/// The metadata words as a layout `[rows, cols]`; a panic naming the mismatch when they do not
/// fit it (the tensor-level constructors check the shapes first).
fn semi_layout(meta: &[i16], rows: usize, cols: usize) -> SemiLayout<'_> {
    SemiLayout::new(meta, rows, cols).unwrap_or_else(|e| panic!("semi-structured product: {e}"))
}

/// The matrix of the metadata words and kept values, as [`semi_layout`].
fn semi_ref<'a, T>(meta: &'a [i16], vals: &'a [T], rows: usize, cols: usize) -> SemiRef<'a, T> {
    semi_ref_in(semi_layout(meta, rows, cols), vals)
}

/// The matrix of `layout` holding `vals`; a panic naming the mismatch otherwise.
fn semi_ref_in<'a, T>(layout: SemiLayout<'a>, vals: &'a [T]) -> SemiRef<'a, T> {
    SemiRef::new(layout, vals).unwrap_or_else(|e| panic!("semi-structured product: {e}"))
}

impl SemiMatmul for Flex {
    fn semi_mm(values: FlexTensor, metadata: FlexTensor, cols: usize, b: FlexTensor, transposed: bool) -> FlexTensor {
        let rows = values.shape()[0];
        let n = b.shape()[if transposed { 0 } else { 1 }];
        let shape = if transposed { vec![n, rows] } else { vec![rows, n] };
        let dtype = values.dtype();
        if matches!(dtype, DType::BF16 | DType::F16) && n <= NARROW {
            // Decode size: the 16-bit values are read as stored (widening them to f32 first
            // would write and read twice their bytes, which is what the product costs); `b`,
            // a few rows, is widened.
            let values = contiguous(values);
            let out = with_words(metadata, |meta| {
                let layout = semi_layout(meta, rows, cols);
                if dtype == DType::BF16 && b.dtype() == DType::BF16 {
                    // bf16 against bf16: the dot-product instruction where the CPU has it.
                    let b = contiguous(b);
                    let v = values.as_slice::<bf16>().expect("bf16 values");
                    return semi_mm_narrow_bf16(
                        semi_ref_in(layout, v),
                        b.as_slice::<bf16>().expect("bf16"),
                        n,
                        transposed,
                    );
                }
                let b = FlexTensor::from_data(b.into_data().convert_dtype(DType::F32));
                let b = b.as_slice::<f32>().expect("f32 operand");
                if dtype == DType::BF16 {
                    let v = values.as_slice::<bf16>().expect("bf16 values");
                    semi_mm_narrow_16(semi_ref_in(layout, v), b, n, transposed)
                } else {
                    let v = values.as_slice::<f16>().expect("f16 values");
                    semi_mm_narrow_16(semi_ref_in(layout, v), b, n, transposed)
                }
            });
            return FlexTensor::from_data(TensorData::new(out, shape).convert_dtype(dtype));
        }
        with_words(metadata, |meta| {
            with_real(
                [values, b],
                shape,
                |[v, b]| semi_mm(semi_ref(meta, v, rows, cols), b, n, transposed),
                |[v, b]| semi_mm(semi_ref(meta, v, rows, cols), b, n, transposed),
            )
        })
    }

    fn semi_mm_t(values: FlexTensor, metadata: FlexTensor, cols: usize, g: FlexTensor, transposed: bool) -> FlexTensor {
        let rows = values.shape()[0];
        // `G · A = (Aᵀ · Gᵀ)ᵀ`: a gradient path, so the transposes are plain copies.
        let g = if transposed { Flex::float_transpose(g) } else { g };
        let n = g.shape()[1];
        let out = with_words(metadata, |meta| {
            with_real(
                [values, g],
                vec![cols, n],
                |[v, g]| semi_mm_t(semi_ref(meta, v, rows, cols), g, n),
                |[v, g]| semi_mm_t(semi_ref(meta, v, rows, cols), g, n),
            )
        });
        if transposed {
            Flex::float_transpose(out)
        } else {
            out
        }
    }

    fn semi_sddmm(metadata: FlexTensor, cols: usize, g: FlexTensor, b: FlexTensor) -> FlexTensor {
        let rows = metadata.shape()[0];
        let n = g.shape()[1];
        with_words(metadata, |meta| {
            with_real(
                [g, b],
                vec![rows, cols / 2],
                |[g, b]| semi_sddmm(semi_layout(meta, rows, cols), g, b, n),
                |[g, b]| semi_sddmm(semi_layout(meta, rows, cols), g, b, n),
            )
        })
    }
}
