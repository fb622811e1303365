//! The bodies of [`SemiMatmul`]'s kernels through the CSR view of the pattern (read back and
//! decoded on the host at every call), for backends with the CSR kernels ([`SparseSpmm`],
//! [`SparseSddmm`]) and no 2:4 kernels of their own (and for Cube devices whose words are
//! stored as i16).
//!
//! [`SemiMatmul`]: super::SemiMatmul

use crate::operand::CsrOperand;
use crate::sddmm::SparseSddmm;
use crate::spmm::SparseSpmm;
use burn::backend::{
    tensor::{FloatTensor, IntTensor},
    Backend, TensorMetadata,
};
use burn::tensor::{Shape, TensorData};
use sparsegrad_kernels::pattern::{CsrPattern, TransposeCell};
use sparsegrad_kernels::semi::csr_of;
use std::sync::Arc;

/// [`SemiMatmul::semi_mm`](super::SemiMatmul::semi_mm) through the CSR product.
pub fn semi_mm<B: SparseSpmm + SparseSddmm>(
    values: FloatTensor<B>,
    metadata: IntTensor<B>,
    cols: usize,
    b: FloatTensor<B>,
    transposed: bool,
) -> FloatTensor<B> {
    let pattern = csr_pattern::<B>(metadata, cols, &b.device());
    let b = if transposed { B::float_transpose(b) } else { b };
    let out = B::csr_spmm(pattern, flat::<B>(values), b);
    if transposed {
        B::float_transpose(out)
    } else {
        out
    }
}

/// [`SemiMatmul::semi_mm_t`](super::SemiMatmul::semi_mm_t) through the CSR transposed product.
pub fn semi_mm_t<B: SparseSpmm + SparseSddmm>(
    values: FloatTensor<B>,
    metadata: IntTensor<B>,
    cols: usize,
    g: FloatTensor<B>,
    transposed: bool,
) -> FloatTensor<B> {
    let pattern = csr_pattern::<B>(metadata, cols, &g.device());
    let g = if transposed { B::float_transpose(g) } else { g };
    let out = B::csr_spmm_t(pattern, flat::<B>(values), g);
    if transposed {
        B::float_transpose(out)
    } else {
        out
    }
}

/// [`SemiMatmul::semi_sddmm`](super::SemiMatmul::semi_sddmm) through the CSR SDDMM.
pub fn semi_sddmm<B: SparseSpmm + SparseSddmm>(
    metadata: IntTensor<B>,
    cols: usize,
    g: FloatTensor<B>,
    b: FloatTensor<B>,
) -> FloatTensor<B> {
    let rows = metadata.shape()[0];
    let pattern = csr_pattern::<B>(metadata, cols, &g.device());
    let out = B::sparse_sddmm(pattern, g, b);
    B::float_reshape(out, Shape::new([rows, cols / 2]))
}

/// The values as one flat vector.
fn flat<B: Backend>(values: FloatTensor<B>) -> FloatTensor<B> {
    let n = values.shape().num_elements();
    B::float_reshape(values, Shape::new([n]))
}

/// The CSR pattern of the metadata words, decoded on the host and checked, with a fresh cell.
fn csr_pattern<B: Backend>(metadata: IntTensor<B>, cols: usize, device: &B::Device) -> CsrOperand<B> {
    let rows = metadata.shape()[0];
    let data = burn::backend::read_sync(B::int_into_data(metadata)).expect("metadata readback");
    let meta: Vec<i16> = data.iter::<i64>().map(|v| v as i16).collect();
    let (crow, col) = csr_of(&meta, rows, cols);
    let nnz = col.len();
    // Checked here (linear in the kept entries) for a panic that names the metadata; the
    // products check it again.
    if let Err(e) = CsrPattern::new(&crow, &col, cols) {
        panic!("semi-structured metadata does not describe a [{rows}, {cols}] matrix: {e}");
    }
    let (crow, col) = (
        B::int_from_data(TensorData::new(crow, [rows + 1]), device),
        B::int_from_data(TensorData::new(col, [nnz]), device),
    );
    CsrOperand::new(crow, col, cols, Arc::new(TransposeCell::new()))
}
