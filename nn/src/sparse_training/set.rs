//! Sparse Evolutionary Training (Mocanu et al. 2018): at the end of every training period the
//! fraction `zeta` of a layer's stored entries closest to zero is dropped and as many entries
//! are grown at positions drawn uniformly at random among those not stored, starting at zero.
//! The entry count, so the cost of the layer, stays what it was; the pattern wanders towards
//! the connections that matter.
//!
//! The random positions are drawn in time and memory proportional to the entries, not to
//! `d_output * d_input`: by rejection against the set of stored positions while at least half
//! the matrix is free (at most two draws per position expected), by enumerating the free
//! positions otherwise (then fewer than `2 nnz` of them).

use super::rewire::{host_pattern, smallest_entries, Rewiring};
use super::schedule::DropSchedule;
use crate::sparse_linear::SparseLinear;
use burn::config::Config;
use sparsegrad_backend::error::invalid;
use sparsegrad_backend::rng::SplitMix64;
use std::collections::HashSet;

type Checked<T> = sparsegrad_backend::Result<T>;

/// Configuration of [`Set`].
#[derive(Config, Debug)]
pub struct SetConfig {
    /// Fraction of the stored entries replaced at each update, `zeta` (0.3 in the paper).
    #[config(default = 0.3)]
    pub zeta: f64,
    /// Seed of the positions grown.
    #[config(default = 0)]
    pub seed: u64,
}

impl SetConfig {
    /// The method, with its random stream at the seed. Errors when `zeta` is not in `[0, 1]`.
    pub fn init(&self) -> Checked<Set> {
        if !(0.0..=1.0).contains(&self.zeta) {
            return Err(invalid("SetConfig::init", format!("zeta = {} is not in [0, 1]", self.zeta)));
        }
        Ok(Set { zeta: self.zeta, rng: SplitMix64::new(self.seed) })
    }
}

/// Sparse Evolutionary Training: [`Set::update`] once per period (an epoch in the paper).
pub struct Set {
    zeta: f64,
    rng: SplitMix64,
}

impl Set {
    /// The layer with its `round(zeta * nnz)` smallest-magnitude entries replaced by as many
    /// zero entries at random free positions (a dropped position may be drawn again), and the
    /// [`Rewiring`] for the optimizer.
    pub fn update(&mut self, layer: &SparseLinear) -> Checked<(SparseLinear, Rewiring)> {
        self.replace(layer, self.zeta)
    }

    /// SET on RigL's schedule (as the RigL paper runs it): at an update step of `schedule`,
    /// [`Set::replace`] with the schedule's fraction in place of `zeta`; `None` at other steps.
    /// Call it at every step.
    pub fn step(
        &mut self,
        step: usize,
        schedule: &DropSchedule,
        layer: &SparseLinear,
    ) -> Checked<Option<(SparseLinear, Rewiring)>> {
        if !schedule.is_update_step(step) {
            return Ok(None);
        }
        self.replace(layer, schedule.update_fraction(step)).map(Some)
    }

    /// [`Set::update`] with the fraction `fraction` in place of `zeta`: for a schedule that
    /// changes it along training (see [`Set::step`]). Errors when `fraction` is not in
    /// `[0, 1]`.
    pub fn replace(&mut self, layer: &SparseLinear, fraction: f64) -> Checked<(SparseLinear, Rewiring)> {
        if !(0.0..=1.0).contains(&fraction) {
            return Err(invalid("Set::replace", format!("fraction = {fraction} is not in [0, 1]")));
        }
        let k = (fraction * layer.nnz() as f64).round() as usize;
        let drop = smallest_entries(layer, k);
        let grow = random_free_positions(layer, &drop, k, &mut self.rng)?;
        layer.rewire(&drop, &grow, None)
    }
}

/// `k` distinct row-major positions drawn uniformly among those of `layer` not stored after
/// dropping the entries `drop` (ascending indices).
pub(crate) fn random_free_positions(
    layer: &SparseLinear,
    drop: &[usize],
    k: usize,
    rng: &mut SplitMix64,
) -> Checked<Vec<usize>> {
    const OP: &str = "Set::update";
    let (crow, col) = host_pattern(layer);
    let d_input = layer.d_input;
    let numel = layer.d_output().saturating_mul(d_input);
    let mut dropped = drop.iter().copied().peekable();
    let mut kept = Vec::with_capacity(col.len() - drop.len());
    for r in 0..layer.d_output() {
        for (e, &c) in col.iter().enumerate().take(crow[r + 1]).skip(crow[r]) {
            if dropped.peek() == Some(&e) {
                dropped.next();
            } else {
                kept.push(r * d_input + c);
            }
        }
    }
    let free = numel - kept.len();
    if k > free {
        return Err(invalid(OP, format!("cannot grow {k} entries: only {free} positions are free")));
    }
    let mut out = Vec::with_capacity(k);
    if free >= numel / 2 {
        let mut taken: HashSet<usize> = kept.into_iter().collect();
        while out.len() < k {
            let p = rng.below(numel as u64) as usize;
            if taken.insert(p) {
                out.push(p);
            }
        }
    } else {
        // `kept` is ascending: walk the gaps, then a partial Fisher-Yates shuffle picks `k`.
        let mut frees = Vec::with_capacity(free);
        let mut next = kept.into_iter().peekable();
        for p in 0..numel {
            if next.peek() == Some(&p) {
                next.next();
            } else {
                frees.push(p);
            }
        }
        for i in 0..k {
            let j = i + rng.below((frees.len() - i) as u64) as usize;
            frees.swap(i, j);
        }
        frees.truncate(k);
        out = frees;
    }
    Ok(out)
}
