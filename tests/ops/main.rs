//! The tensor and op tests, one module per topic, in one test binary: each binary links burn,
//! so one binary here instead of one per file saves most of the link time of `cargo test`.
//! Run one topic with a filter on its module, e.g. `cargo test --test ops matmul::`.
//!
//! proptest keeps the failing cases it finds in `tests/proptest-regressions/<module>.txt`.

#[path = "../common_ops/mod.rs"]
mod common_ops;

mod cube_kernels;
mod elementwise;
mod gradients;
mod invariants;
mod io;
mod linalg;
mod matmul;
mod matmul_grad;
mod mm_reduce;
mod movement;
mod plain_data;
mod properties;
mod reduce;
mod reference;
mod semi_structured;
mod shape;
mod softmax;
mod spdiags;
mod spgemm;
mod unary;
