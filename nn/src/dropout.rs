//! Dropout on sparse tensors: each stored value is zeroed with probability `p` and the kept ones
//! scaled by `1 / (1 - p)`, the pattern unchanged (the mask multiplies the values, so gradients
//! flow to the kept ones). Masks come from a caller-seeded stream, so runs are reproducible.

use burn::tensor::{Tensor, TensorData};
use sparsegrad_backend::SparseTensor;

/// A splitmix64 stream for dropout masks.
#[derive(Debug, Clone)]
pub struct MaskRng(u64);

impl MaskRng {
    /// A stream from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// Uniform in [0, 1).
    pub fn next_unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A keep mask of `n` elements scaled by `1 / (1 - p)`.
    pub fn keep_mask(&mut self, n: usize, p: f64) -> Vec<f32> {
        let scale = (1.0 / (1.0 - p)) as f32;
        (0..n).map(|_| if self.next_unit() >= p { scale } else { 0.0 }).collect()
    }
}

/// Dropout on the stored values of `s` (identity when `p == 0`).
pub fn sparse_dropout<const D: usize>(s: &SparseTensor<D>, p: f64, rng: &mut MaskRng) -> SparseTensor<D> {
    assert!((0.0..1.0).contains(&p), "dropout probability {p} must be in [0, 1)");
    if p == 0.0 {
        return s.clone();
    }
    let values = s.values_flat();
    let [n, w] = values.dims();
    let mask =
        Tensor::<2>::from_data(TensorData::new(rng.keep_mask(n * w, p), [n, w]), (&values.device(), values.dtype()));
    s.with_values(values * mask)
}

/// Dropout on a dense tensor with the same stream (inverted scaling).
pub fn dense_dropout<const D: usize>(x: Tensor<D>, p: f64, rng: &mut MaskRng) -> Tensor<D> {
    assert!((0.0..1.0).contains(&p), "dropout probability {p} must be in [0, 1)");
    if p == 0.0 {
        return x;
    }
    let shape = x.shape();
    let n = shape.num_elements();
    let mask = Tensor::<D>::from_data(TensorData::new(rng.keep_mask(n, p), shape), (&x.device(), x.dtype()));
    x * mask
}
