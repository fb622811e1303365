//! # Semi-structured (2:4) sparsity
//!
//! 2:4 sparsity on the CPU, with gradients (PyTorch's is CUDA-only).
//! [`sparse::to_sparse_semi_structured(dense)`](crate::sparse::to_sparse_semi_structured)
//! compresses a tensor whose rows keep at most two of every four consecutive elements (f16,
//! bf16, i8; f32 and f64 keep torch's 1:2), with torch's metadata layout and compression ratios;
//! [`sparse::semi_structured::{mm, mm_dense_sparse, addmm, linear}`](crate::sparse::semi_structured)
//! run a kernel that does half the multiply-adds of the dense product, and train the kept values
//! (the backward products run straight from the metadata). With at most 16 rows of the dense
//! operand (decode-size batches) the product streams the compressed weight once, at memory
//! speed; bf16 and f16 weights are read as stored and summed in f32. i8 matrices multiply i8
//! operands with int32 sums, as torch's int8 semi-structured product:
//! `SemiStructuredTensor::matmul_i32`, `linear_i32`.
//!
//! ```
//! use burn::tensor::{DType, Device, Tensor, TensorData};
//! use sparsegrad::prelude::*;
//!
//! let device = Device::flex();
//! // Every group of four keeps its last two: a 2:4 pattern, stored as f16.
//! let tiled: Vec<f32> = [0.0, 0.0, 1.0, 1.0].repeat(64 * 16);
//! let a = sparse::to_sparse_semi_structured(Tensor::<2>::from_data(TensorData::new(tiled, [64, 64]), &device).cast(DType::F16))?;
//! assert!(a.compression_ratio() < 1.0); // half the values plus the metadata
//!
//! // Gradients reach the kept values.
//! let ad = Device::flex().autodiff();
//! let w = Tensor::<2>::from_data(TensorData::new(vec![0.0f64, 2., 0., -1., 3., 0., 0., 4.], [2, 4]), (&ad, DType::F64));
//! let w24 = SemiStructuredTensor::from_dense(w, SemiPattern::TwoFour)?;
//! let kept = w24.values().require_grad();
//! let w24 = w24.with_values(kept.clone());
//! let x = Tensor::<2>::from_data(TensorData::new(vec![1.0f64, 1., 1., 1.], [1, 4]), (&ad, DType::F64));
//! let y = sparse::semi_structured::linear(x, &w24, None); // x Wᵀ
//! assert_eq!(y.to_data().iter::<f64>().collect::<Vec<_>>(), [1.0, 7.0]);
//! let grads = y.sum().backward();
//! assert_eq!(kept.grad(&grads).unwrap().dims(), [2, 2]); // one per kept value
//! # Ok::<(), SparseError>(())
//! ```
//!
//! ## Layers
//!
//! [`nn::SemiStructuredLinear`](crate::nn::SemiStructuredLinear) (fresh, or `from_linear`
//! pruning a `burn::nn::Linear`) and [`nn::SparseLinear`](crate::nn::SparseLinear) (a fixed CSR
//! pattern, trainable values) are burn modules that save and load through burn records;
//! [`nn::prune_n_m`](crate::nn::prune_n_m) / [`prune_2_4`](crate::nn::prune_2_4) /
//! [`prune_magnitude`](crate::nn::prune_magnitude) prune dense weights. Training 2:4 from scratch
//! (SR-STE) and one-shot pruning (Wanda) are in [`sparse_training`](super::sparse_training).
//!
//! ```
//! use burn::nn::LinearConfig;
//! use burn::tensor::{Device, Tensor};
//! use sparsegrad::nn::SemiStructuredLinear;
//!
//! let device = Device::flex();
//! let dense = LinearConfig::new(16, 8).init(&device);
//! let layer = SemiStructuredLinear::from_linear(&dense)?; // the two largest of every four kept
//! assert_eq!(layer.forward(Tensor::<2>::ones([3, 16], &device)).dims(), [3, 8]);
//! # Ok::<(), sparsegrad::SparseError>(())
//! ```
//!
//! `cargo run --release --example sparse_mlp_mnist` trains the same MLP on MNIST dense, 2:4 and
//! 90 % unstructured and prints accuracy, parameter memory, time per epoch and the trained
//! model's inference time on a batch of 1 and of 256 images.
