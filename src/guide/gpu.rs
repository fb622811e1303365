//! # On GPUs (burn's Cube backend)
//!
//! ## Turning it on
//!
//! With the feature `wgpu` (off by default: the wgpu stack adds about 25 minutes to a first
//! build on 2 cores) every extension trait lists burn's `Cube` backend, and every op runs on
//! `Device::wgpu(DeviceKind::DefaultDevice)`, with and without autodiff.
//!
//! **`fusion`.** burn's `fusion` feature (the default of a burn GPU build) wraps the Cube
//! backend in `Fusion<..>`: whenever burn's `fusion` is on, turn on sparsegrad's `fusion` too.
//! Cargo features cannot see another crate's, so sparsegrad cannot turn it on for you: the
//! combination that fails is burn's `fusion` on and sparsegrad's off (sparsegrad's `wgpu` alone
//! is fine where burn is built without `fusion`, and sparsegrad's `fusion` turns burn's on). The
//! build of `sparsegrad-backend` then stops at each extension trait with
//!
//! ```text
//! error[E0277]: sparsegrad has no kernels for the backend `Fusion<CubeBackend>` (`HostAccess` is not implemented)
//!   = note: a `Fusion<CubeBackend>` here means that burn's feature `fusion` is on (burn's default
//!           features turn it on) and sparsegrad's is off: turn on sparsegrad's `fusion` with `wgpu`, ...
//! ```
//!
//! A burn wgpu user therefore asks for both:
//!
//! ```toml
//! burn = { version = "=0.22.1", default-features = false, features = ["std", "wgpu", "fusion", "autodiff", "extension"] }
//! sparsegrad = { path = "../sparsegrad", features = ["wgpu", "fusion"] }
//! ```
//!
//! **Supported backends.** The sparse ops run on burn's Flex (CPU) and Cube (wgpu) backends,
//! fused or not, with or without `Autodiff`. Any other burn backend builds, and making a sparse
//! tensor on it returns `SparseError::UnsupportedBackend`, which names the device and the
//! supported backends (checked once, where the tensor is made), instead of burn's panic
//! "Backend not supported for custom op" at the first op.
//!
//! **CUDA.** The feature `cuda` wires burn's CUDA runtime into the same Cube impls:
//! `Device::cuda(0)` runs every op the wgpu device runs. Its build links CubeCL's LLVM, which the
//! build of burn's `tracel-llvm-bundler` downloads from GitHub; `bench/gpu/build.sh` installs the
//! same LLVM release from PyPI instead (for build machines that reach only the package
//! registries) and builds the bench, the GCN example and the device test binaries with it. The
//! binaries need no CUDA toolkit to build; at run time they load the driver (`libcuda.so.1`). On a
//! machine without a GPU or driver, `sparsegrad::backend::util::check_device` turns the runtime's
//! panic at the first op into `SparseError::DeviceUnavailable`; the examples, the bench and the
//! test binaries call it once and exit with its message.
//!
//! The same code runs on either device; only the device changes:
//!
//! ```no_run
//! use burn::tensor::{Device, Tensor};
//! use sparsegrad::prelude::*;
//!
//! fn propagate(device: &Device) -> Result<Vec<f32>, SparseError> {
//!     let a = SparseTensor::csr_from_vecs(vec![0, 1, 3], vec![2, 0, 2], vec![3.0f32, 4.0, 5.0], [2, 3], device)?;
//!     let y = sparse::mm(&a, Tensor::<2>::ones([3, 4], device)); // a CubeCL kernel on wgpu
//!     Ok(y.into_data().iter::<f32>().collect())
//! }
//!
//! let on_cpu = propagate(&Device::flex())?;
//! # #[cfg(feature = "wgpu")]
//! # {
//! let on_gpu = propagate(&Device::wgpu(burn::tensor::DeviceKind::DefaultDevice))?; // `--features wgpu`
//! assert_eq!(on_cpu, on_gpu);
//! # }
//! # Ok::<(), SparseError>(())
//! ```
//!
//! ## What runs on the device
//!
//! - CubeCL kernels: the CSR product `A · X`, the transposed product `Aᵀ · G` (the pattern's
//!   transposed view is computed once per pattern and uploaded once, into the pattern's cache),
//!   SDDMM (`sampled_addmm`, the values' gradient), both gradients of `mm`, the segment softmax and
//!   log-softmax with their backward, the scatter-add that conversions and `coalesce` move
//!   values with, and the 2:4 products (`A · B`, a linear layer's `X · Aᵀ`, both backward
//!   products and the kept values' gradient), which decode the metadata words in the kernel
//!   (stored as i32 on wgpu, which has no 16-bit integers: `metadata_dtype`). f16 operands are
//!   widened to f32, as on Flex. A training step of `mm`, `sampled_addmm`, or `softmax` along
//!   the plain dim of a CSR/CSC tensor (a GAT's), on a checked tensor reads nothing back to the
//!   host; softmax along other dims of COO and unbatched
//!   CSR/CSC tensors plans its segments on the device (a sort of the keys without that dim),
//!   reading back one integer (their count): once per pattern, dim and device for CSR/CSC (the
//!   plan stays in the pattern's cell, which tensors with new values share), once per call for
//!   COO; batched or blocked tensors plan on the host.
//! - Index algebra on the device (`IndexKernels`): `coalesce` of a COO tensor sorts its keys
//!   there (a stable merge sort, `cube::sort`), numbers the runs of equal keys by a prefix sum and
//!   sums each run's values in entry order, reading back two integers (whether anything is out of
//!   order, and the size of the result). Dense -> COO and dense -> (unbatched) CSR find the
//!   non-zeros by a prefix sum on the device and read back their count. `to_dense` of every
//!   layout, COO -> CSR of a coalesced tensor (compress) and CSR/CSC/BSR/BSC -> COO of any batch
//!   size (the batches' compressed indices joined into one and expanded, blocks spread to their
//!   elements with burn's int ops) read nothing back (COO -> CSR of an uncoalesced tensor, and
//!   COO -> CSC, coalesce there first in the target's order: coalesce's two integers), nor does
//!   the scatter-add that conversions move values with (its targets grouped by the same sort),
//!   `mul_dense`, `mm_reduce`'s mean, the block-diagonal pattern of batched `sampled_addmm` and
//!   batched-CSR `bmm` (built with burn's integer ops), or `sparse::sum` over sparse dims of a
//!   tensor already in order (else two integers, as `coalesce`).
//! - Sparse x sparse (`spgemm`, `mm` of two sparse tensors) on the device: the partial products
//!   listed by a prefix sum, sorted by key and summed per key in their order (the host kernel's),
//!   reading back two integers (the number of partial products, then of entries); a masked
//!   product's pattern by a unit per entry of the mask (row `i` of `A` walked, each column looked
//!   up in the rows of `B` by bisection), reading back its entry count; its values and both
//!   gradients as masked products, reading nothing back.
//! - `mm_reduce`'s amax/amin and both their gradients in kernels (the host kernel's rules:
//!   ties to the first entry, a NaN over a number), nothing read back.
//! - The shape and selection ops of COO on the device: `narrow` and `select` along a sparse dim
//!   find their entries there and read back their count; `index_select` along a sparse dim joins
//!   the entries' coordinates with the sorted index there (a bisection per entry, a prefix sum of
//!   the matches) and reads back four integers in one transfer (the index's extremes, the number
//!   of matches, whether it increases); `reshape` computes keys and coordinates there; `unsqueeze`,
//!   `cat` and `stack` insert or shift index rows with burn's ops; `sparse_mask` reads the dense
//!   tensor at the mask's keys (COO and unbatched CSR/CSC masks). These last read nothing back.
//! - Everything else runs the portable defaults: the rest of the index algebra (conversions into
//!   BSR/BSC, or into CSR/CSC from other than 2-sparse-dim COO, 8- and 16-bit indices, checks of
//!   unchecked input) on the indices read back to the host, one round trip per call.
//! - Rows (and, for `Aᵀ · G`, columns) far longer than the rest, the hubs of power-law graphs, are
//!   cut into pieces of 256 entries, each summed by its own kernel units, then added per row; the
//!   plan is made once per pattern and device.
//! - burn's `fusion` feature (the default of burn's `wgpu` backend crate) wraps the Cube backend in
//!   `Fusion<..>`: turn on sparsegrad's `fusion` feature with it (without it the crate does not
//!   build). The same kernels run there: each sparse op hands fusion's lazy tensors over to the
//!   Cube backend (which runs what fusion queued for them, with nothing read back), runs its
//!   kernels, and registers the results with fusion as new buffers (as burn's `from_data` does),
//!   so the element-wise work around the sparse ops still fuses. CI runs the device tests with both
//!   features on (`--features wgpu,fusion`); without `fusion` they run as they are. One defect of
//!   burn-fusion 0.22.1 shows there: `sparse::stack` of f64 CSR tensors along their last dim
//!   (values padded with burn's `zeros` and `cat`, after the indices were joined by burn's `cat`)
//!   gets two rows of stale memory in the padding; unfused it is right.
//! - Other runtimes: the kernels are CubeCL, compiled for whichever runtime a device names; wgpu
//!   and CUDA are wired as features (`wgpu`, `cuda`). `bench/gpu/run.sh` is the one script a GPU
//!   machine runs: our bench rows, PyTorch's and PyG's on the same workloads, the GCN example and
//!   the device test binaries, with the comparison against the targets.
//! - Limits of wgpu devices rather than of the library: WGSL has transcendental functions for f32
//!   alone, so burn's dense f64 `exp`, `pow`, `asin`, `tanh`, ... are not exact there (the sparse
//!   softmax computes its f64 `exp` and `ln` from `+`, `*`, `/`); wgpu stores no bf16; some of
//!   burn's kernels fail on i8 and i16 tensors there; and burn 0.22.1's Cube backend rejects
//!   element-wise ops on empty rank-2 tensors.
//!
//! ## Tests on a device
//!
//! `SPARSEGRAD_TEST_DEVICE=wgpu cargo test --features wgpu,fusion --test ops`
//! runs the op tests there (`tests/common_ops::dev`; `--test nn` the layer tests; without `,fusion`
//! on the unfused backend; on lavapipe the longest tests run a share of their cases,
//! `common_ops::device_keeps`, while every Cube kernel is still reached: CI checks it),
//! gradient checks included (`gradcheck::gradcheck_on(&device, ..)` is
//! `gradcheck` on a device of your choice). Without a GPU, Mesa's
//! lavapipe is a Vulkan device on the CPU (`apt-get install mesa-vulkan-drivers libvulkan1`; set
//! `XDG_RUNTIME_DIR`); CI runs the suite on it, skipping the tests listed in `.ci/run` for the
//! limits above. With a GPU, wgpu takes the high-power adapter (`CUBECL_WGPU_DEFAULT_DEVICE` picks
//! another).
//!
//! On CUDA: `SPARSEGRAD_TEST_DEVICE=cuda cargo test --features cuda,fusion --test ops`.
//!
//! The GCN and GAT examples take `--device flex|wgpu|cuda`:
//! `cargo run --release --features wgpu --example gcn_cora -- --device wgpu`; the figures
//! measured on lavapipe are in `bench/RESULTS.md`.
