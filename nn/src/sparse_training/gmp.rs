//! Gradual magnitude pruning (Zhu & Gupta 2017, "To prune, or not to prune"): the sparsity
//! rises from `s_i` to `s_f` along a cubic over `n` pruning steps `Δt` apart, starting at
//! `t_0`,
//!
//! `s_t = s_f + (s_i - s_f) (1 - (t - t_0) / (n Δt))^3`,
//!
//! fast at first, when there are many redundant weights, and slowly near the end. At each
//! pruning step the layer drops its smallest-magnitude stored entries until it holds
//! `round((1 - s_t) d_output d_input)`; nothing grows back. On a [`SparseLinear`] that starts
//! fully stored (density 1), the layer's entry arrays shrink as it prunes: forward, backward
//! and optimizer state cost what the kept entries cost.

use super::rewire::{smallest_entries, Rewiring};
use crate::sparse_linear::SparseLinear;
use burn::config::Config;
use sparsegrad_backend::error::invalid;

type Checked<T> = sparsegrad_backend::Result<T>;

/// The schedule of gradual magnitude pruning; [`GradualMagnitudePruning::step`] is called at
/// every training step.
#[derive(Config, Debug)]
pub struct GradualMagnitudePruning {
    /// Sparsity before pruning starts, `s_i` (usually 0).
    #[config(default = 0.0)]
    pub initial_sparsity: f64,
    /// Sparsity reached at `end_step` and kept after, `s_f`.
    pub final_sparsity: f64,
    /// First pruning step, `t_0`.
    pub begin_step: usize,
    /// Last pruning step, `t_0 + n Δt`.
    pub end_step: usize,
    /// Steps between prunings, `Δt`.
    #[config(default = 100)]
    pub frequency: usize,
}

impl GradualMagnitudePruning {
    fn check(&self) -> Checked<()> {
        const OP: &str = "GradualMagnitudePruning";
        for (name, s) in [("initial_sparsity", self.initial_sparsity), ("final_sparsity", self.final_sparsity)] {
            if !(0.0..=1.0).contains(&s) {
                return Err(invalid(OP, format!("{name} = {s} is not in [0, 1]")));
            }
        }
        if self.end_step < self.begin_step || self.frequency == 0 {
            return Err(invalid(
                OP,
                format!(
                    "need begin_step <= end_step and frequency >= 1, got {}..{} every {}",
                    self.begin_step, self.end_step, self.frequency
                ),
            ));
        }
        Ok(())
    }

    /// The target sparsity at `step`: `s_i` before `begin_step`, the cubic in between, `s_f`
    /// from `end_step` on.
    pub fn sparsity_at(&self, step: usize) -> f64 {
        let (si, sf) = (self.initial_sparsity, self.final_sparsity);
        if step < self.begin_step {
            return si;
        }
        if step >= self.end_step {
            return sf;
        }
        let progress = (step - self.begin_step) as f64 / (self.end_step - self.begin_step) as f64;
        sf + (si - sf) * (1.0 - progress).powi(3)
    }

    /// Whether `step` is a pruning step: `t_0 + j Δt` up to `end_step`, and `end_step` itself.
    pub fn is_pruning_step(&self, step: usize) -> bool {
        (self.begin_step..=self.end_step).contains(&step)
            && ((step - self.begin_step).is_multiple_of(self.frequency.max(1)) || step == self.end_step)
    }

    /// At a pruning step where `layer` holds more entries than the schedule allows, the layer
    /// with its smallest-magnitude entries dropped (and the [`Rewiring`] for the optimizer);
    /// otherwise `None`. Errors on a schedule that is not one (sparsities outside `[0, 1]`,
    /// `end_step < begin_step`, zero frequency).
    pub fn step(&self, step: usize, layer: &SparseLinear) -> Checked<Option<(SparseLinear, Rewiring)>> {
        self.check()?;
        if !self.is_pruning_step(step) {
            return Ok(None);
        }
        let numel = layer.d_output() as f64 * layer.d_input as f64;
        let target = ((1.0 - self.sparsity_at(step)) * numel).round() as usize;
        let nnz = layer.nnz();
        if nnz <= target {
            return Ok(None);
        }
        let drop = smallest_entries(layer, nnz - target);
        layer.rewire(&drop, &[], None).map(Some)
    }
}
