//! Wanda (Sun et al. 2023, "A simple and effective pruning approach for large language
//! models"): one-shot pruning by weights and activations, no retraining.
//!
//! A weight `W [d_output, d_input]` is scored `S_ij = |W_ij| · ||X_j||₂`, `||X_j||₂` the norm of
//! input feature `j` over calibration activations, and pruned per OUTPUT ROW: each row keeps
//! its highest scores, either a fraction of the row ([`wanda_mask`], unstructured) or `n` of every
//! group of `m` consecutive input features ([`wanda_mask_n_m`], 2:4 for the semi-structured
//! kernels). Ties go to the earlier position, as in `prune`, and NaN counts as larger than every
//! number.
//!
//! [`WandaCalibration`] accumulates the per-feature sums of squares batch by batch (in f64 on
//! the host), so the calibration set never has to be held at once. The layers:
//! [`SparseLinear::from_linear_wanda`] (unstructured, CSR) and [`wanda_semi_structured`] (2:4);
//! both keep the original weights at the kept positions.

use crate::prune::{check_n_m, csr_at_positions, magnitudes, mask_of, n_m_positions, top_k_positions, try_vec};
use crate::semi_structured_linear::SemiStructuredLinear;
use crate::sparse_linear::{index_dtype, SparseLinear};
use burn::nn::Linear;
use burn::tensor::{Bool, Tensor};
use sparsegrad_backend::error::invalid;
use sparsegrad_backend::semi_structured::{SemiPattern, SemiStructuredTensor};
use sparsegrad_backend::{Result, SparseError};

/// Per input feature sums of squares of calibration activations, fed batch by batch: what
/// Wanda's scores need (`||X_j||₂`, [`WandaCalibration::norms`]).
///
/// ```
/// use burn::tensor::{Device, Tensor, TensorData};
/// use sparsegrad_nn::WandaCalibration;
///
/// let device = Device::flex();
/// let mut calibration = WandaCalibration::new(2);
/// calibration.observe(&Tensor::<2>::from_data(TensorData::new(vec![3.0f32, 1.0], [1, 2]), &device)).unwrap();
/// calibration.observe(&Tensor::<2>::from_data(TensorData::new(vec![4.0f32, 0.0], [1, 2]), &device)).unwrap();
/// assert_eq!(calibration.norms(), vec![5.0, 1.0]);
/// assert_eq!(calibration.samples(), 2);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct WandaCalibration {
    sum_of_squares: Vec<f64>,
    samples: usize,
}

impl WandaCalibration {
    /// An empty accumulator for `d_input` features (every norm 0 until a batch is observed).
    pub fn new(d_input: usize) -> Self {
        Self { sum_of_squares: vec![0.0; d_input], samples: 0 }
    }

    /// Input features.
    pub fn d_input(&self) -> usize {
        self.sum_of_squares.len()
    }

    /// Activation rows observed so far (the product of all axes but the last, over the batches).
    pub fn samples(&self) -> usize {
        self.samples
    }

    /// Adds a batch of activations `x [..., d_input]` (e.g. `[batch, d_input]`, or
    /// `[batch, tokens, d_input]`): the layer's input, read back to the host and accumulated in
    /// f64. Errors when the last axis is not `d_input` (nothing is added then).
    pub fn observe<const D: usize>(&mut self, x: &Tensor<D>) -> Result<()> {
        let dims = x.dims();
        let d = self.d_input();
        if D == 0 || dims[D - 1] != d {
            return Err(invalid(
                "WandaCalibration::observe",
                format!("activations of shape {dims:?} do not end in d_input = {d}"),
            ));
        }
        let rows: usize = dims[..D - 1].iter().product();
        if rows == 0 {
            return Ok(());
        }
        for (i, v) in x.to_data().iter::<f64>().enumerate() {
            self.sum_of_squares[i % d] += v * v;
        }
        self.samples += rows;
        Ok(())
    }

    /// `Σ_rows x_j²` per input feature.
    pub fn sum_of_squares(&self) -> &[f64] {
        &self.sum_of_squares
    }

    /// `||X_j||₂` per input feature: the square roots of [`WandaCalibration::sum_of_squares`].
    pub fn norms(&self) -> Vec<f64> {
        self.sum_of_squares.iter().map(|s| s.sqrt()).collect()
    }
}

/// `|W_ij| · norms_j` row-major, after checking `norms` against `weight [d_output, d_input]`.
fn scores(weight: &Tensor<2>, norms: &[f64], operation: &'static str) -> Result<Vec<f64>> {
    let [_, cols] = weight.dims();
    if norms.len() != cols {
        return Err(SparseError::ShapeMismatch { component: "norms", expected: vec![cols], actual: vec![norms.len()] });
    }
    if let Some((j, v)) = norms.iter().enumerate().find(|(_, v)| !(v.is_finite() && **v >= 0.0)) {
        return Err(invalid(
            operation,
            format!("the norm of input feature {j} is {v}: norms must be finite and non-negative"),
        ));
    }
    let mut s = magnitudes(weight);
    for (i, x) in s.iter_mut().enumerate() {
        // `abs`: NaN (from a NaN weight, or inf · 0) with a cleared sign, which ranks above
        // every number.
        *x = (*x * norms[i % cols]).abs();
    }
    Ok(s)
}

/// Weights each row prunes at `sparsity`: `round(sparsity * d_input)`.
fn pruned_per_row(d_input: usize, sparsity: f64, operation: &'static str) -> Result<usize> {
    if !(0.0..=1.0).contains(&sparsity) {
        return Err(invalid(operation, format!("sparsity {sparsity} is not in [0, 1]")));
    }
    Ok(((sparsity * d_input as f64).round() as usize).min(d_input))
}

/// Row-major positions, ascending, that every row of `[rows, cols]` keeps: its `keep` highest
/// scores.
fn row_top_k(scores: &[f64], rows: usize, cols: usize, keep: usize, operation: &'static str) -> Result<Vec<usize>> {
    let total = rows.checked_mul(keep).ok_or_else(|| invalid(operation, "too many kept entries"))?;
    let mut kept = try_vec(total, "the kept positions", operation)?;
    for r in 0..rows {
        let start = r * cols;
        kept.extend(top_k_positions(&scores[start..start + cols], keep).into_iter().map(|j| start + j));
    }
    Ok(kept)
}

/// Positions Wanda keeps unstructured: per row the `d_input - round(sparsity * d_input)`
/// highest scores.
fn unstructured_positions(
    weight: &Tensor<2>,
    norms: &[f64],
    sparsity: f64,
    operation: &'static str,
) -> Result<Vec<usize>> {
    let [rows, cols] = weight.dims();
    let pruned = pruned_per_row(cols, sparsity, operation)?;
    let s = scores(weight, norms, operation)?;
    row_top_k(&s, rows, cols, cols - pruned, operation)
}

/// Wanda's unstructured keep mask of `weight [d_output, d_input]` (true where kept): every row
/// keeps its `d_input - round(sparsity * d_input)` highest scores `|W_ij| · norms_j` (ties to the
/// earlier position), so every row has exactly that many. `norms` are `||X_j||₂` per input
/// feature ([`WandaCalibration::norms`]).
///
/// Errors on a sparsity outside `[0, 1]`, `norms` not of length `d_input`, or a norm that is
/// not finite and non-negative.
pub fn wanda_mask(weight: &Tensor<2>, norms: &[f64], sparsity: f64) -> Result<Tensor<2, Bool>> {
    let positions = unstructured_positions(weight, norms, sparsity, "wanda_mask")?;
    Ok(mask_of(&positions, weight.dims(), &weight.device()))
}

/// Wanda's N:M keep mask of `weight [d_output, d_input]`: in every group of `m` consecutive
/// input features of a row, the `n` highest scores `|W_ij| · norms_j` (ties to the earlier
/// position). Errors as [`wanda_mask`], and when `n > m`, `m == 0` or `d_input` is not a multiple
/// of `m`.
pub fn wanda_mask_n_m(weight: &Tensor<2>, norms: &[f64], n: usize, m: usize) -> Result<Tensor<2, Bool>> {
    let shape = weight.dims();
    check_n_m(shape, n, m, "wanda_mask_n_m")?;
    let s = scores(weight, norms, "wanda_mask_n_m")?;
    Ok(mask_of(&n_m_positions(&s, shape[1], n, m), shape, &weight.device()))
}

/// `linear`'s weight as `W [d_output, d_input]` (burn's `Linear` stores `[d_input, d_output]`),
/// detached, after checking the calibration's width.
fn weight_of(linear: &Linear, calibration: &WandaCalibration) -> Result<Tensor<2>> {
    let w = linear.weight.val().detach().transpose();
    if calibration.d_input() != w.dims()[1] {
        return Err(SparseError::ShapeMismatch {
            component: "calibration",
            expected: vec![w.dims()[1]],
            actual: vec![calibration.d_input()],
        });
    }
    Ok(w)
}

impl SparseLinear {
    /// Wanda one-shot pruning of a dense layer ([`wanda_mask`] on its weight and the
    /// calibration's norms): a CSR layer holding the original weights at the kept positions
    /// (every row keeps `d_input - round(sparsity * d_input)`), the bias copied. Errors as
    /// [`wanda_mask`], and when the calibration is not of width `d_input`.
    pub fn from_linear_wanda(linear: &Linear, calibration: &WandaCalibration, sparsity: f64) -> Result<Self> {
        const OP: &str = "SparseLinear::from_linear_wanda";
        let w = weight_of(linear, calibration)?;
        let [d_output, d_input] = w.dims();
        let positions = unstructured_positions(&w, &calibration.norms(), sparsity, OP)?;
        let weight = csr_at_positions(w, &positions, index_dtype(d_output, d_input, positions.len()))?;
        Self::from_weight(&weight, linear.bias.as_ref().map(|b| b.val()))
    }
}

/// Wanda one-shot 2:4 pruning of a dense layer ([`wanda_mask_n_m`] with `n = 2, m = 4` on its
/// weight and the calibration's norms): a [`SemiStructuredLinear`] holding the original weights
/// at the kept positions, the bias copied, no retraining. Errors as [`wanda_mask_n_m`], and when
/// the calibration is not of width `d_input`.
pub fn wanda_semi_structured(linear: &Linear, calibration: &WandaCalibration) -> Result<SemiStructuredLinear> {
    let w = weight_of(linear, calibration)?;
    let keep = wanda_mask_n_m(&w, &calibration.norms(), 2, 4)?;
    let weight = SemiStructuredTensor::from_dense(w.mask_fill(keep.bool_not(), 0.0), SemiPattern::TwoFour)?;
    SemiStructuredLinear::from_weight(&weight, linear.bias.as_ref().map(|b| b.val()))
}
