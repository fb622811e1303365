//! When a dynamic sparse method changes a layer's pattern, and how much of it: RigL's schedule
//! (Evci et al. 2020), which the RigL paper also gives SET for its comparisons. Every
//! `update_interval` steps before `end_step`, the fraction
//!
//! `f_t = alpha / 2 (1 + cos(pi t / end_step))`
//!
//! of the stored entries is replaced: many changes while the weights are young, fewer as they
//! settle, none in the last stretch, so that grown entries (which start at zero) still train
//! under a learning rate that has not yet decayed away.

use burn::config::Config;
use sparsegrad_backend::error::invalid;

type Checked<T> = sparsegrad_backend::Result<T>;

/// The cosine drop schedule; see the module docs. [`crate::sparse_training::RigL`] follows it,
/// and [`crate::sparse_training::Set::step`] takes one.
#[derive(Config, Debug, Copy)]
pub struct DropSchedule {
    /// The last step that may update, `T_end` (the RigL paper: 75 % of the training steps).
    pub end_step: usize,
    /// Initial fraction of the stored entries replaced, `alpha`.
    #[config(default = 0.3)]
    pub drop_fraction: f64,
    /// Steps between updates, `ΔT`.
    #[config(default = 100)]
    pub update_interval: usize,
}

impl DropSchedule {
    /// Errors when `drop_fraction` is not in `[0, 1]` or `update_interval` is zero; `operation`
    /// names the caller in the error.
    pub(crate) fn check(&self, operation: &'static str) -> Checked<()> {
        if !(0.0..=1.0).contains(&self.drop_fraction) {
            return Err(invalid(operation, format!("drop_fraction = {} is not in [0, 1]", self.drop_fraction)));
        }
        if self.update_interval == 0 {
            return Err(invalid(operation, "update_interval must be at least 1"));
        }
        Ok(())
    }

    /// Whether the pattern changes after `step`: a positive multiple of `update_interval`
    /// below `end_step` (never when `update_interval` is zero).
    pub fn is_update_step(&self, step: usize) -> bool {
        step > 0 && step < self.end_step && self.update_interval > 0 && step.is_multiple_of(self.update_interval)
    }

    /// `f_t = alpha / 2 (1 + cos(pi t / end_step))` before `end_step`, 0 from it on.
    pub fn update_fraction(&self, step: usize) -> f64 {
        if step >= self.end_step {
            return 0.0;
        }
        let t = step as f64 / self.end_step as f64;
        self.drop_fraction / 2.0 * (1.0 + (std::f64::consts::PI * t).cos())
    }
}
