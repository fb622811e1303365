//! torch.sparse's matmul family as free functions (re-exported from `sparsegrad::sparse`):
//! `mm` (sparse @ dense, sparse @ sparse: `spgemm`), `mm_reduce` (torch's `mm(.., reduce=)`),
//! `mm_dense_sparse` (dense @ sparse, without torch's double transpose), `addmm`,
//! `sampled_addmm`, `mv`, `bmm`, `smm`, `hspmm`, `sspaddmm`.
//!
//! Every layout is accepted as the sparse operand. CSR runs the kernels directly, CSC runs them
//! on its arrays as the CSR pattern of the transpose (no conversion), and COO, BSR and BSC are
//! converted to CSR first; conversions move values with differentiable burn ops, so gradients
//! reach the operand's own values whatever its layout. Batched products run on the
//! block-diagonal pattern of the batch, one kernel call for all entries.
//!
//! Shape errors panic with both shapes named, like burn's ops; the `try_` forms return them.
//!
//! Soundness: the product primitives are `unsafe` (the kernels walk the pattern through
//! unchecked offsets), and this module calls them only with a `Csr`, which only `csr_of` and
//! `block_diagonal` build: from a tensor whose invariants were checked
//! ([`SparseTensor::check_invariants`]), or derived from one with checked arithmetic. A dense
//! result is sized with checked arithmetic and probed before the kernels allocate it, so an
//! impossible one is an `Allocation` error, not an abort.
//!
//! One file per family: `csr` holds the checked CSR operand and the unsafe primitive calls on
//! it (the soundness boundary above), `mm` the plain products (`mm`, `mv`, dense @ sparse),
//! `reduce` `mm_reduce`, `addmm` the fused `beta * input + alpha * product` forms (`addmm`,
//! `sampled_addmm`), `bmm` the batched product, `sparse_result` the products with a sparse
//! result on `a`'s rows (`smm`, `hspmm`, `sspaddmm`), and `spgemm` sparse @ sparse.
//!
//! [`SparseTensor::check_invariants`]: sparsegrad_backend::SparseTensor::check_invariants

mod addmm;
mod bmm;
mod csr;
mod mm;
mod reduce;
mod sparse_result;
mod spgemm;

pub(crate) use addmm::ignoring_input;
pub use addmm::{addmm, sampled_addmm, try_addmm, try_sampled_addmm};
pub use bmm::{bmm, try_bmm};
pub use mm::{mm, mm_dense_sparse, mv, try_mm, try_mm_dense_sparse, try_mv, MatmulRhs};
pub use reduce::{mm_reduce, try_mm_reduce, Reduce};
pub use sparse_result::{hspmm, smm, sspaddmm, try_hspmm, try_smm, try_sspaddmm};
pub use spgemm::{spgemm, spgemm_with, SpgemmOptions};
