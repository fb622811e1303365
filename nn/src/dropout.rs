//! Dropout on sparse tensors: each stored value is zeroed with probability `p` and the kept ones
//! scaled by `1 / (1 - p)`, the pattern unchanged (the mask multiplies the values, so gradients
//! flow to the kept ones). The masks are drawn on the values' device by burn's generator
//! (`Distribution::Bernoulli`), as burn's own `Dropout` draws them: `device.seed(..)` makes runs
//! reproducible, and nothing is drawn on the host or uploaded per step.
//!
//! [`SparseDropout`] is the layer (burn's `Dropout` on the stored values: off under `valid()`,
//! off on a device without autodiff, off when frozen); [`sparse_dropout`] the function, which
//! always drops.

use burn::config::Config;
use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig};
use burn::tensor::Distribution;
use sparsegrad_backend::SparseTensor;

/// Dropout on the stored values of `s` (identity when `p == 0`), whatever the device: the
/// caller decides when it trains. Keep masks come from burn's generator on the values' device.
///
/// # Panics
///
/// If `p` is not in `[0, 1)` (as burn's `DropoutConfig::init`).
///
/// # Examples
///
/// ```
/// use burn::tensor::Device;
/// use sparsegrad_backend::SparseTensor;
/// use sparsegrad_nn::sparse_dropout;
///
/// let device = Device::flex();
/// let s = SparseTensor::csr_from_vecs(vec![0, 2, 3], vec![0, 1, 1], vec![1.0f32; 3], [2, 2], &device)?;
/// let dropped = sparse_dropout(&s, 0.5);
/// assert_eq!(dropped.nnz(), 3); // the pattern stays; each value is 0 or 2
/// let v = dropped.values::<1>()?.into_data().to_vec::<f32>().unwrap();
/// assert!(v.iter().all(|&x| x == 0.0 || x == 2.0));
/// # Ok::<(), sparsegrad_backend::SparseError>(())
/// ```
pub fn sparse_dropout<const D: usize>(s: &SparseTensor<D>, p: f64) -> SparseTensor<D> {
    assert!(p.is_finite() && (0.0..1.0).contains(&p), "dropout probability {p} must be in [0, 1)");
    if p == 0.0 {
        return s.clone();
    }
    let values = s.values_flat();
    let keep = values.random_like(Distribution::Bernoulli(1.0 - p));
    s.with_values(values * keep * (1.0 / (1.0 - p)))
}

/// Configuration of a [`SparseDropout`] layer.
#[derive(Config, Debug)]
pub struct SparseDropoutConfig {
    /// The probability of zeroing a stored value during training.
    pub prob: f64,
}

impl SparseDropoutConfig {
    /// A new layer.
    ///
    /// # Panics
    ///
    /// If `prob` is not in `[0, 1)` (as burn's `DropoutConfig::init`).
    pub fn init(&self) -> SparseDropout {
        SparseDropout { dropout: DropoutConfig::new(self.prob).init() }
    }
}

/// Dropout on the stored values of a sparse tensor: burn's [`Dropout`] applied to them, so it
/// drops only while training (an autodiff device, not frozen) and is the identity under
/// `valid()`.
#[derive(Module, Debug)]
pub struct SparseDropout {
    /// burn's layer, applied to the values.
    pub dropout: Dropout,
}

impl SparseDropout {
    /// `s` with its stored values dropped out (while training).
    pub fn forward<const D: usize>(&self, s: &SparseTensor<D>) -> SparseTensor<D> {
        if self.dropout.prob == 0.0 || !s.values_flat().device().is_autodiff() {
            return s.clone();
        }
        s.with_values(self.dropout.forward(s.values_flat()))
    }
}
