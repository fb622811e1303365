//! Products with a semi-structured (2:4) matrix `A [rows, cols]` (kept values `[rows, cols / 2]`
//! and metadata words, see `semi_structured`), forward kernels only (the rules that
//! differentiate them live in `sparsegrad-autodiff`):
//!
//! - `semi_mm`: `A · B` — half the multiply-adds of the dense product: each output row sums
//!   `cols / 2` scaled rows of `B`, two per group of four;
//! - `semi_mm_t`: `Aᵀ · G`, through the CSR view of the pattern and the CSR transposed kernel;
//! - `semi_sddmm`: `out[r, j] = G[r] · B[col(r, j)]`, the gradient of the kept values, through
//!   the CSR SDDMM kernel.
//!
//! Behind the extension trait [`SemiKernels`]: Flex runs the host kernels of
//! `sparsegrad-kernels`' `semi` (f32 and f64; f16 and bf16 widened to f32), Cube devices the
//! kernels of `cube::semi` (which decode the words on the device), other backends the CSR
//! defaults of [`SparseSpmm`] and [`SparseSddmm`] (the words read back at every call). No
//! metadata word can lead a kernel
//! outside its operands (every nibble decodes to a column of its own group), so these methods
//! are safe to call.

use crate::flex::*;
use crate::host::IntSlice;
use crate::sddmm::SparseSddmm;
use crate::spmm::SparseSpmm;
use burn::backend::flex::FlexTensor;
use burn::backend::ops::FloatTensorOps;
use burn::backend::{
    backend_extension,
    tensor::{FloatTensor, IntTensor},
    Backend, Flex, TensorMetadata,
};
use burn::tensor::{DType, Shape, TensorData};
use half::{bf16, f16};
use sparsegrad_kernels::pattern::{CsrPattern, TransposeCell};
use sparsegrad_kernels::semi::{csr_of, semi_mm, semi_mm_t, semi_sddmm, SemiLayout, SemiRef};
use sparsegrad_kernels::semi_narrow::{semi_mm_narrow_16, semi_mm_narrow_bf16, NARROW};

/// Products with a semi-structured matrix `A [rows, cols]` given as kept values
/// `[rows, cols / 2]` and `i16` metadata words `[rows, ceil(cols / 16)]`.
#[backend_extension(Flex, Cube: cfg(feature = "cube"))]
#[diagnostic::on_unimplemented(
    message = "sparsegrad has no kernels for the backend `{Self}` (`SemiKernels` is not implemented)",
    label = "no sparsegrad kernels for this backend",
    note = "a `Fusion<CubeBackend>` here means that burn's feature `fusion` is on (burn's default features turn it on) and sparsegrad's is off: turn on sparsegrad's `fusion` with `wgpu`, `sparsegrad = {{ version = \"0.1\", features = [\"wgpu\", \"fusion\"] }}` (see `sparsegrad::guide::gpu`)"
)]
pub trait SemiKernels: SparseSpmm + SparseSddmm {
    /// `A · B` (`B [cols, n]`, result `[rows, n]`), or with `transposed` `B · Aᵀ`
    /// (`B [n, cols]`, result `[n, rows]`: a linear layer's product).
    fn semi_mm(
        values: FloatTensor<Self>,
        metadata: IntTensor<Self>,
        cols: usize,
        b: FloatTensor<Self>,
        transposed: bool,
    ) -> FloatTensor<Self> {
        default::semi_mm::<Self>(values, metadata, cols, b, transposed)
    }

    /// `Aᵀ · G` (`G [rows, n]`, result `[cols, n]`), or with `transposed` `G · A`
    /// (`G [n, rows]`, result `[n, cols]`).
    fn semi_mm_t(
        values: FloatTensor<Self>,
        metadata: IntTensor<Self>,
        cols: usize,
        g: FloatTensor<Self>,
        transposed: bool,
    ) -> FloatTensor<Self> {
        default::semi_mm_t::<Self>(values, metadata, cols, g, transposed)
    }

    /// `out[r, j] = G[r] · B[col(r, j)]` for every kept entry: `G [rows, n]`, `B [cols, n]`,
    /// result `[rows, cols / 2]`.
    fn semi_sddmm(
        metadata: IntTensor<Self>,
        cols: usize,
        g: FloatTensor<Self>,
        b: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        default::semi_sddmm::<Self>(metadata, cols, g, b)
    }
}

/// The products through the CSR view of the pattern (read back and decoded on the host at
/// every call), for backends without kernels of their own.
mod default {
    use super::*;

    pub fn semi_mm<B: SemiKernels>(
        values: FloatTensor<B>,
        metadata: IntTensor<B>,
        cols: usize,
        b: FloatTensor<B>,
        transposed: bool,
    ) -> FloatTensor<B> {
        let (crow, col) = csr_pattern::<B>(metadata, cols, &b.device());
        let b = if transposed { B::float_transpose(b) } else { b };
        // SAFETY: `csr_pattern` checked the pattern it built (over `cols` columns, the rows of
        // `b` once oriented as `[cols, n]`).
        let out = unsafe { B::csr_spmm(crow, col, flat::<B>(values), b, &TransposeCell::new()) };
        if transposed {
            B::float_transpose(out)
        } else {
            out
        }
    }

    pub fn semi_mm_t<B: SemiKernels>(
        values: FloatTensor<B>,
        metadata: IntTensor<B>,
        cols: usize,
        g: FloatTensor<B>,
        transposed: bool,
    ) -> FloatTensor<B> {
        let (crow, col) = csr_pattern::<B>(metadata, cols, &g.device());
        let g = if transposed { B::float_transpose(g) } else { g };
        // SAFETY: `csr_pattern` checked the pattern it built, over `cols` columns; the cell is
        // fresh.
        let out = unsafe { B::csr_spmm_t(crow, col, flat::<B>(values), g, cols, &TransposeCell::new()) };
        if transposed {
            B::float_transpose(out)
        } else {
            out
        }
    }

    pub fn semi_sddmm<B: SemiKernels>(
        metadata: IntTensor<B>,
        cols: usize,
        g: FloatTensor<B>,
        b: FloatTensor<B>,
    ) -> FloatTensor<B> {
        let rows = metadata.shape()[0];
        let (crow, col) = csr_pattern::<B>(metadata, cols, &g.device());
        // SAFETY: `csr_pattern` checked the pattern it built, over `cols` columns (the rows of `b`);
        // the cell is fresh.
        let out = unsafe { B::sparse_sddmm(crow, col, g, b, std::sync::Arc::new(TransposeCell::new())) };
        B::float_reshape(out, Shape::new([rows, cols / 2]))
    }

    pub fn flat<B: Backend>(values: FloatTensor<B>) -> FloatTensor<B> {
        let n = values.shape().num_elements();
        B::float_reshape(values, Shape::new([n]))
    }

    pub fn csr_pattern<B: Backend>(
        metadata: IntTensor<B>,
        cols: usize,
        device: &B::Device,
    ) -> (IntTensor<B>, IntTensor<B>) {
        let rows = metadata.shape()[0];
        let data = burn::backend::read_sync(B::int_into_data(metadata)).expect("metadata readback");
        let meta: Vec<i16> = data.iter::<i64>().map(|v| v as i16).collect();
        let (crow, col) = csr_of(&meta, rows, cols);
        let nnz = col.len();
        // Checked (linear in the kept entries): the unsafe products below rely on it.
        if let Err(e) = CsrPattern::new(&crow, &col, cols) {
            panic!("semi-structured metadata does not describe a [{rows}, {cols}] matrix: {e}");
        }
        (
            B::int_from_data(TensorData::new(crow, [rows + 1]), device),
            B::int_from_data(TensorData::new(col, [nnz]), device),
        )
    }
}

// ------------------------------------------------------------------------------------------
// Flex.

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

/// Cube devices: the kernels of `cube::semi`, which decode the metadata words on the device
/// (words stored as i16 take the default: a device that stores i16 has no kernels here).
#[cfg(feature = "cube")]
impl SemiKernels for crate::cube::CubeBackend {
    fn semi_mm(
        values: FloatTensor<Self>,
        metadata: IntTensor<Self>,
        cols: usize,
        b: FloatTensor<Self>,
        transposed: bool,
    ) -> FloatTensor<Self> {
        use crate::cube::semi::{semi_product, takes_metadata, SemiProduct};
        if !takes_metadata(&metadata) {
            return default::semi_mm::<Self>(values, metadata, cols, b, transposed);
        }
        semi_product(values, metadata, cols, b, transposed, SemiProduct::Forward)
    }

    fn semi_mm_t(
        values: FloatTensor<Self>,
        metadata: IntTensor<Self>,
        cols: usize,
        g: FloatTensor<Self>,
        transposed: bool,
    ) -> FloatTensor<Self> {
        use crate::cube::semi::{semi_product, takes_metadata, SemiProduct};
        if !takes_metadata(&metadata) {
            return default::semi_mm_t::<Self>(values, metadata, cols, g, transposed);
        }
        semi_product(values, metadata, cols, g, transposed, SemiProduct::Transposed)
    }

    fn semi_sddmm(
        metadata: IntTensor<Self>,
        cols: usize,
        g: FloatTensor<Self>,
        b: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        use crate::cube::semi::takes_metadata;
        if !takes_metadata(&metadata) {
            return default::semi_sddmm::<Self>(metadata, cols, g, b);
        }
        crate::cube::semi::semi_sddmm(metadata, cols, g, b)
    }
}

/// Cube devices under burn's `fusion`: the Cube kernels on the resolved tensors (`cube::fused`).
#[cfg(all(feature = "cube", feature = "fusion"))]
impl SemiKernels for crate::cube::FusedCube {
    fn semi_mm(
        values: FloatTensor<Self>,
        metadata: IntTensor<Self>,
        cols: usize,
        b: FloatTensor<Self>,
        transposed: bool,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = values.client.clone();
        publish_float(
            &client,
            crate::cube::CubeBackend::semi_mm(float(values), int(metadata), cols, float(b), transposed),
        )
    }

    fn semi_mm_t(
        values: FloatTensor<Self>,
        metadata: IntTensor<Self>,
        cols: usize,
        g: FloatTensor<Self>,
        transposed: bool,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = values.client.clone();
        publish_float(
            &client,
            crate::cube::CubeBackend::semi_mm_t(float(values), int(metadata), cols, float(g), transposed),
        )
    }

    fn semi_sddmm(
        metadata: IntTensor<Self>,
        cols: usize,
        g: FloatTensor<Self>,
        b: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = g.client.clone();
        publish_float(&client, crate::cube::CubeBackend::semi_sddmm(int(metadata), cols, float(g), float(b)))
    }
}

impl SemiKernels for Flex {
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
