//! # Performance
//!
//! ## Building
//!
//! The first build compiles burn and its kernels: about 10 minutes on 2 cores (`cargo test`,
//! dev profile with lightly optimised dependencies), a few minutes more for `--release`; later
//! builds take seconds. The feature `wgpu` adds about 25 minutes to a first build on 2 cores.
//! Time anything with `--release`.
//!
//! ## The benchmark
//!
//! `cargo run --release --example bench` (each figure the median of its runs, with min, max and
//! IQR beside it; add `--json` for one JSON object per line, `--only OP` for the ops whose name
//! contains OP, `--sums` for a checksum of every output instead of timings). On Linux with glibc
//! the bench first asks the allocator to keep freed memory (`mallopt`: no trimming, no separate
//! mappings; the first line says so), as a long-running training process should: with glibc's
//! defaults every large buffer a step frees comes back as fresh pages, and rows such as
//! `svd_lowrank`, `mm_fwd_bwd_values_x`, `coalesce` and `spgemm` swing by up to 2x with the
//! allocator's state. `SPARSEGRAD_BENCH_DEFAULT_MALLOC=1` keeps glibc's defaults; for PyTorch the
//! same settings are the environment variables `MALLOC_TRIM_THRESHOLD_=2147483647
//! MALLOC_TOP_PAD_=268435456 MALLOC_MMAP_MAX_=0`. `python bench/anchors.py` times PyTorch and
//! scipy on the same workloads (defined in `docs/WORKLOADS.md`). With `--features wgpu` the bench
//! adds `cube_*` rows: spmm, sddmm and mm forward+backward on the device, and burn's dense matmul
//! of the same output size where the matrix fits densely.
//!
//! Both sides move by 20-40 % between runs on a small shared machine: compare ratios within one
//! run. Every measured figure, with its date, its machine and what changed before it, is in
//! `bench/RESULTS.md` in the repository.
//!
//! ## What to expect
//!
//! - The products (`mm`, `sampled_addmm`, both gradients) run on host kernels over validated
//!   patterns, in parallel with rayon, vectorised for the CPU's best path (`kernels::simd`; the
//!   environment variable `SPARSEGRAD_ISA` picks a lower one). A training step never forms a
//!   dense `m x k` gradient.
//! - 2:4 products do half the multiply-adds of the dense product; with at most 16 rows of the
//!   dense operand (decode-size batches) they stream the compressed weight once, at memory
//!   speed.
//! - `spgemm` makes one pass over the partial products, rows in parallel blocks balanced by
//!   product count. Rows of `A` an eighth dense or more go through `spgemm` up to 64 at a time
//!   as a dense block, gathered past the sparse and empty rows between them (same sums, bit for
//!   bit).
//! - Dense @ sparse ([`sparse::mm_dense_sparse`](crate::sparse::mm_dense_sparse)) runs through
//!   the transposed view of the sparse operand's pattern, computed once per pattern, and writes
//!   a contiguous result. A layer whose values change every step pays the view's gather once per
//!   step; `sparse_dnn`'s fresh layers pay it inside every timed run, as a one-pass inference
//!   must.
//!
//! ```
//! use burn::tensor::{Device, Tensor};
//! use sparsegrad::prelude::*;
//!
//! let device = Device::flex();
//! let a = SparseTensor::csr_from_vecs(vec![0, 1, 3], vec![2, 0, 2], vec![3.0f32, 4.0, 5.0], [2, 3], &device)?;
//! let y = Tensor::<2>::ones([4, 2], &device);
//! let out = sparse::mm_dense_sparse(y.clone(), &a); // [4, 2] @ [2, 3], no transposes
//! assert!(out.equal(y.matmul(a.to_dense())).all().into_scalar::<bool>());
//! # Ok::<(), SparseError>(())
//! ```
