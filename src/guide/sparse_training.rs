//! # Sparse training
//!
//! ## Sparse layers and pruning
//!
//! [`nn::SparseLinear`](crate::nn::SparseLinear) is a linear layer over a CSR weight (a fixed
//! pattern, trainable values) that never holds a dense weight or a dense gradient;
//! [`nn::SemiStructuredLinear`](crate::nn::SemiStructuredLinear) is its 2:4 twin
//! ([`semi_structured`](super::semi_structured)). Both save and load through burn records,
//! checked on load. `nn::prune_n_m` / `prune_2_4` / `prune_magnitude` prune dense weights.
//!
//! **Sparsity, not density.** Every argument that is a fraction of a weight is a *sparsity*, the
//! fraction of zeros: `prune_magnitude`, `magnitude_mask`, `prune_magnitude_csr`,
//! `SparseLinear::from_linear`, `wanda_mask`, `SparseLinear::from_linear_wanda` and
//! [`GradualMagnitudePruning`](crate::nn::sparse_training::GradualMagnitudePruning) all keep
//! 10 % of the entries at `0.9`. A *density* (the fraction stored) appears only where the name
//! says so: `SparseLinearConfig::with_density`, `SparseLinear::density`, `density_nnz` and
//! `erdos_renyi_densities`.
//!
//! ## Patterns that change while training
//!
//! [`nn::sparse_training`](crate::nn::sparse_training): `SparseLinear::rewire` drops and grows
//! entries keeping the survivors' values and, through `rewire_optimizer`, their optimizer state;
//! `GradualMagnitudePruning`, `Set` and `RigL` (its growth from the dense gradient computed tile
//! by tile, never whole) drive it, and `erdos_renyi_densities` shares a budget of entries
//! between layers.
//!
//! ```
//! use burn::nn::LinearConfig;
//! use burn::tensor::{Device, Tensor};
//! use sparsegrad::nn::sparse_training::{erdos_renyi_densities, GradualMagnitudePruning, SetConfig};
//! use sparsegrad::nn::SparseLinear;
//!
//! let device = Device::flex();
//! // Magnitude pruning of a dense layer to a sparsity of 75 % (128 of 16 x 32 weights kept).
//! let layer = SparseLinear::from_linear(&LinearConfig::new(32, 16).init(&device), 0.75)?;
//! assert_eq!(layer.nnz(), 128);
//! assert_eq!(layer.forward(Tensor::<2>::ones([4, 32], &device)).dims(), [4, 16]);
//!
//! // SET: 30 % of the entries dropped by magnitude and as many grown at random.
//! let mut set = SetConfig::new().init()?;
//! let (layer, rewiring) = set.update(&layer)?;
//! assert_eq!((layer.nnz(), rewiring.old_nnz()), (128, 128));
//! // (`rewire_optimizer(optim, &[rewiring])` moves an optimizer's state along.)
//!
//! // Gradual magnitude pruning to a *sparsity* of 90 % between steps 0 and 1000.
//! let gmp = GradualMagnitudePruning::new(0.9, 0, 1000);
//! let (pruned, _) = gmp.step(1000, &layer)?.expect("a pruning step");
//! assert_eq!(pruned.nnz(), 51); // 10 % of 512
//!
//! // A budget of 10 % of the weights shared by two layers (Erdős–Rényi densities).
//! let d = erdos_renyi_densities(&[[300, 784], [100, 300]], 0.1)?;
//! assert!(d[1] > d[0]);
//! # Ok::<(), sparsegrad::SparseError>(())
//! ```
//!
//! `cargo run --release --example sparse_training_mnist` compares dense, GMP, SET, RigL, SR-STE
//! and Wanda on MNIST; `rigl_at_scale` times one RigL update of a 16384 x 16384 layer and reports
//! its peak memory.
//!
//! ## SR-STE and Wanda
//!
//! [`nn::SrsteLinear`](crate::nn::SrsteLinear) trains 2:4 from scratch with SR-STE (dense master
//! weights pruned 2:4 at every step, straight-through gradient plus the sparse-refined decay;
//! `to_semi_structured` deploys it), and Wanda prunes a trained `Linear` in one shot by
//! `|W| · ||X_j||₂` per output row from calibration activations
//! ([`nn::WandaCalibration`](crate::nn::WandaCalibration), `wanda_mask`, `wanda_mask_n_m`,
//! `SparseLinear::from_linear_wanda`, `wanda_semi_structured`).
//!
//! ```
//! use burn::nn::LinearConfig;
//! use burn::tensor::{Device, Tensor};
//! use sparsegrad::nn::{wanda_semi_structured, SrsteLinearConfig, WandaCalibration};
//!
//! let device = Device::flex();
//! // SR-STE: trains densely, runs through the 2:4 kernel, deploys as a 2:4 layer.
//! let srste = SrsteLinearConfig::new(8, 4).init(&device);
//! let deployed = srste.to_semi_structured()?;
//! assert_eq!(deployed.forward(Tensor::<2>::ones([2, 8], &device)).dims(), [2, 4]);
//!
//! // Wanda: calibrate on the layer's inputs, then prune to 2:4 in one shot.
//! let dense = LinearConfig::new(8, 4).init(&device);
//! let mut calibration = WandaCalibration::new(8);
//! calibration.observe(&Tensor::<2>::ones([16, 8], &device))?;
//! let pruned = wanda_semi_structured(&dense, &calibration)?;
//! assert_eq!(pruned.forward(Tensor::<2>::ones([2, 8], &device)).dims(), [2, 4]);
//! # Ok::<(), sparsegrad::SparseError>(())
//! ```
