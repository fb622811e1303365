//! APPNP's propagation (Klicpera et al. 2019) as PyG's `APPNP`: `K` steps of personalised
//! PageRank, `h⁰ = x`, `h^{k+1} = (1 - alpha) · Â h^k + alpha · x`, on a normalised adjacency `Â`
//! (`gcn_norm` or `edge_index::gcn_norm_edge_index` builds it; PyG's layer normalises inside).
//! Each step is a sparse product; with `dropout`, the stored values of `Â` are dropped out
//! while training (on autodiff devices), a fresh mask per step as PyG's.

use crate::dropout::{SparseDropout, SparseDropoutConfig};
use burn::config::Config;
use burn::module::Module;
use burn::tensor::Tensor;
use sparsegrad_autodiff::matmul::mm;
use sparsegrad_backend::SparseTensor;

/// Configuration of an [`AppnpPropagation`].
#[derive(Config, Debug)]
pub struct AppnpPropagationConfig {
    /// Propagation steps (the paper's 10).
    pub k: usize,
    /// Teleport probability (the paper's 0.1).
    pub alpha: f64,
    /// Dropout on the adjacency's stored values while training.
    #[config(default = 0.0)]
    pub dropout: f64,
}

/// APPNP's propagation; no parameters.
///
/// # Examples
///
/// ```
/// use burn::tensor::{Device, Tensor};
/// use sparsegrad_nn::{gcn_norm, AppnpPropagationConfig};
///
/// let device = Device::flex();
/// let adj = gcn_norm(&[(0, 1), (1, 2)], 3, &device)?;
/// let appnp = AppnpPropagationConfig::new(10, 0.1).init();
/// let h = Tensor::<2>::from_floats([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]], &device);
/// // K = 10 steps of `(1 - alpha) Â h + alpha h_0`, the predictions of another model smoothed.
/// assert_eq!(appnp.forward(h, &adj).dims(), [3, 2]);
/// # Ok::<(), sparsegrad_backend::SparseError>(())
/// ```
#[derive(Module, Debug)]
pub struct AppnpPropagation {
    /// Propagation steps.
    pub k: usize,
    /// Teleport probability.
    pub alpha: f64,
    /// Dropout on the adjacency's values.
    pub edge_dropout: SparseDropout,
}

impl AppnpPropagationConfig {
    /// A new propagation.
    ///
    /// # Panics
    /// If `dropout` is not in `[0, 1)` (as burn's `DropoutConfig::init`).
    pub fn init(&self) -> AppnpPropagation {
        AppnpPropagation { k: self.k, alpha: self.alpha, edge_dropout: SparseDropoutConfig::new(self.dropout).init() }
    }
}

impl AppnpPropagation {
    /// `K` steps on `x [n, d]` over the normalised adjacency `adj [n, n]`.
    pub fn forward(&self, x: Tensor<2>, adj: &SparseTensor<2>) -> Tensor<2> {
        let teleport = x.clone() * self.alpha;
        let mut h = x;
        for _ in 0..self.k {
            let a = self.edge_dropout.forward(adj);
            h = mm(&a, h) * (1.0 - self.alpha) + teleport.clone();
        }
        h
    }
}
