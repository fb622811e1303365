//! # Sparse tensors
//!
//! [`SparseTensor`](crate::SparseTensor) holds every layout of `torch.sparse` as one type on
//! burn: COO (with hybrid dense dims and uncoalesced entries), CSR, CSC, BSR and BSC (with batch
//! and dense dims). Its constructors are checked, and their errors name the component, the
//! position and the value; it converts between every layout, differentiably with respect to the
//! values ([`autograd`](super::autograd)); it prints as torch does. The index algebra (sorting,
//! coalescing, compressing, validating) runs as host kernels behind a burn extension trait,
//! zero-copy on the Flex backend.
//!
//! ## Construct, convert, print
//!
//! ```
//! use burn::tensor::{DType, Device, Int, Tensor, TensorData};
//! use sparsegrad::prelude::*;
//!
//! let device = Device::flex();
//! let i = Tensor::<2, Int>::from_data(TensorData::new(vec![0i64, 1, 1, 2, 0, 2], [2, 3]), (&device, DType::I64));
//! let s = SparseTensor::coo(i, Tensor::<1>::from_floats([3.0, 4.0, 5.0], &device), [2, 3])?;
//! println!("{s}"); // tensor(indices=tensor([[0, 1, 1], [2, 0, 2]]), values=..., layout=sparse_coo)
//! let csr = s.to_sparse_csr()?; // crow_indices [0, 1, 3], col_indices [2, 0, 2]
//! let dense = csr.to_dense(); // [[0, 0, 3], [4, 0, 5]]
//! assert_eq!(dense.clone().into_data().try_to_vec::<f32>().unwrap(), [0.0, 0.0, 3.0, 4.0, 0.0, 5.0]);
//! let back = dense.to_sparse_bsr([1, 3])?; // blocks of one row
//! assert_eq!(back.nnz(), 2);
//!
//! // From plain Rust data: entries as coordinates, or CSR's three arrays.
//! let a = SparseTensor::csr_from_vecs(vec![0, 1, 2], vec![1, 0], vec![2.0f64, 3.0], [2, 2], &device)?;
//! let b = SparseTensor::coo_from_vecs(vec![[0, 1], [1, 0]], vec![2.0f64, 3.0], [2, 2], &device)?;
//! assert!(a.to_dense().equal(b.to_dense()).all().into_scalar::<bool>());
//!
//! // An uncoalesced COO tensor (3 and 4 both at index 1) keeps its entries until `coalesce`.
//! let u = SparseTensor::coo_from_vecs(vec![[1], [1]], vec![3.0f32, 4.0], [3], &device)?;
//! assert!(u.indices().is_err()); // torch's "Cannot get indices on an uncoalesced tensor"
//! assert_eq!(u.coalesce().values::<1>().unwrap().into_data().try_to_vec::<f32>().unwrap(), [7.0]);
//!
//! // Errors name the component, the position and the value.
//! let bad = SparseTensor::coo_from_vecs(vec![[0, 5]], vec![1.0f32], [2, 3], &device);
//! println!("{}", bad.unwrap_err());
//! # Ok::<(), SparseError>(())
//! ```
//!
//! `cargo run --release --example quickstart` runs the whole torch.sparse tour of the reference
//! texts in a few seconds: hybrid COO, empty tensors, every compressed layout, batched CSR,
//! `CSR.t()` as CSC over the same arrays, TensorFlow's conventions (`coo_from_rows`, `reorder`,
//! `to_dense_with`, `to_dense_validated`), and gradients.
//!
//! ## Arithmetic, shapes, selections
//!
//! Arithmetic and unary ops (`add`, `mul`, `mul_dense`, `pow`, `sin`, ...) are methods of
//! `SparseTensor`, as in torch ([`backend::elementwise`](crate::backend::elementwise),
//! [`backend::unary`](crate::backend::unary)); the free functions of `torch.sparse` (the matmul
//! family, `softmax`, `cat`, `stack`, `sum`, `spdiags`, ...) are in [`sparse`](crate::sparse).
//!
//! ## Devices, dtypes and records
//!
//! `to_device`, `cast` and `cast_indices` (checked, never narrowing) move and convert a tensor
//! whole. A `SparseTensor` is a field of a `#[derive(Module)]` struct as
//! [`backend::module::SparseParam`](crate::backend::module::SparseParam) (indices as state, values
//! trainable or frozen), saved and loaded by burn's recorders and checked on load. The feature
//! `serde` adds `Serialize`/`Deserialize` (checked on the way in), the feature `sprs`
//! `SparseTensor::from_sprs` and `TryFrom<&sprs::CsMat>` ([`io`](super::io)).
//!
//! ## Checked input (soundness and hostile input)
//!
//! No safe function of the workspace can cause undefined behaviour, whatever its arguments, and
//! checked input never gives a wrong answer:
//!
//! - The host kernels take a [`kernels::pattern::CsrPattern`](crate::kernels::pattern::CsrPattern),
//!   whose checked constructor proves the pattern walkable (pointers from 0 to nnz,
//!   non-decreasing, columns in range); the burn extension traits that hand raw index tensors to
//!   them are `unsafe`, called only with the patterns of checked tensors.
//! - `SparseTensor::*_unchecked` constructors keep their contents as given (torch's
//!   `check_invariants=False`) and are checked once, on the first operation that reads them
//!   (`check_invariants()`): an invalid one gives a `SparseError` naming the violation.
//! - Sizes use checked arithmetic; indices derived from a tensor's (a block-diagonal batch, a
//!   concatenation) are widened when they outgrow its index dtype, never narrowed; memory sized
//!   by a shape rather than by stored entries is reserved fallibly, so an impossible request is a
//!   `SparseError::Allocation`, not an abort.
//! - Records (`SparseLinear`, `SemiStructuredLinear`) are checked when loaded, and a layer checks
//!   its pattern once per index tensor (`memo::PatternMemo`); the loaders (Matrix Market, IDX,
//!   Planetoid, karate) check every index and size what they allocate by what the file holds.
//!   The Planetoid raw files are Python pickles: our own reader (`nn::pickle`) knows the opcodes
//!   and globals they use, runs no code, and refuses anything else naming the byte offset and
//!   opcode.
//!
//! `tests/hostile.rs` holds a probe for every finding of the soundness review (the crash-prone
//! ones run in a child process, the allocation ones under `ulimit -v`), an 8-thread stress
//! compared bit for bit with one thread, a fuzz of the pickle reader and the Planetoid loader on
//! damaged real files and random opcodes (`tests/hostile/pickle.rs`, under `ulimit -v`), and a
//! fuzz of every constructor, conversion and product against a dense reference (10^4 cases each;
//! `SPARSEGRAD_FUZZ_CASES=1000000 cargo test --release --test hostile fuzz` for more). CI runs
//! the suite under valgrind memcheck as well.
//!
//! ## Candle
//!
//! The feature `candle` (off by default) adds `sparsegrad::candle`: COO and CSR
//! matrices whose values are candle tensors, with `mm`, `addmm`, `sampled_addmm`, `softmax` and
//! `log_softmax` as candle custom ops on the same kernels and backward rules; `from_burn` and
//! `to_burn` move a matrix between the two frontends. The same GCN in candle:
//! `cargo run --release --features candle --example gcn_cora_candle`.
