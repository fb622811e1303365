//! RigL (Evci et al. 2020, "Rigging the lottery: making all tickets winners"): every
//! `update_interval` steps until `end_step`, a layer drops the fraction `f_t` of its stored
//! entries of smallest magnitude and grows as many where the magnitude of the dense gradient
//! `dL/dW` is largest among the positions not kept, the grown entries starting at zero. The
//! fraction decays along a cosine, `f_t = alpha / 2 (1 + cos(pi t / end_step))` (the
//! [`DropSchedule`]).
//!
//! The dense gradient of `y = x Wᵀ` is `Gᵀ X` (`G = dL/dy [batch, d_output]`, `X` the layer's
//! input `[batch, d_input]`), a `d_output x d_input` matrix: the one thing a sparse layer must
//! not build. [`top_gradient_positions`] computes it a tile of rows at a time (a dense product
//! `G[:, rows]ᵀ X`, `tile_elements` elements) and keeps a running top-k of the free positions,
//! so the memory is `O(tile + k)` whatever the layer's size. The training loop gets `X` and
//! `G` at an update step from [`SparseLinear::forward_probed`]: the layer's output plus a zero
//! leaf tensor whose gradient is `G`.

use super::rewire::{host_pattern, smallest_entries, Rewiring};
use super::schedule::DropSchedule;
use crate::sparse_linear::SparseLinear;
use burn::config::Config;
use burn::tensor::Tensor;
use sparsegrad_backend::error::invalid;
use std::cmp::Ordering;

type Checked<T> = sparsegrad_backend::Result<T>;

/// Configuration of [`RigL`] (the paper's defaults: `alpha = 0.3`, `ΔT = 100`, updates stop at
/// three quarters of training).
#[derive(Config, Debug)]
pub struct RigLConfig {
    /// The last step that may update, `T_end` (the paper: 75 % of the training steps).
    pub end_step: usize,
    /// Initial fraction of the stored entries replaced, `alpha`.
    #[config(default = 0.3)]
    pub drop_fraction: f64,
    /// Steps between updates, `ΔT`.
    #[config(default = 100)]
    pub update_interval: usize,
    /// Elements of one tile of the dense gradient (rows of `d_input` elements are taken whole,
    /// at least one per tile).
    #[config(default = 4194304)]
    pub tile_elements: usize,
}

impl RigLConfig {
    /// The method. Errors when `drop_fraction` is not in `[0, 1]` or `update_interval` or
    /// `tile_elements` is zero.
    pub fn init(&self) -> Checked<RigL> {
        const OP: &str = "RigLConfig::init";
        let schedule = DropSchedule::new(self.end_step)
            .with_drop_fraction(self.drop_fraction)
            .with_update_interval(self.update_interval);
        schedule.check(OP)?;
        if self.tile_elements == 0 {
            return Err(invalid(OP, "tile_elements must be at least 1"));
        }
        Ok(RigL { schedule, tile_elements: self.tile_elements })
    }
}

/// RigL's schedule and update; see the module docs.
#[derive(Clone, Debug)]
pub struct RigL {
    schedule: DropSchedule,
    tile_elements: usize,
}

impl RigL {
    /// The schedule of the updates.
    pub fn schedule(&self) -> &DropSchedule {
        &self.schedule
    }

    /// Whether the pattern changes after `step` ([`DropSchedule::is_update_step`]).
    pub fn is_update_step(&self, step: usize) -> bool {
        self.schedule.is_update_step(step)
    }

    /// The fraction replaced at `step` ([`DropSchedule::update_fraction`]).
    pub fn update_fraction(&self, step: usize) -> f64 {
        self.schedule.update_fraction(step)
    }

    /// The layer after one RigL update at `step`: `k = round(f_t nnz)` entries of smallest
    /// magnitude dropped, `k` zero entries grown at the free positions of largest `|Gᵀ X|`
    /// (`input [batch, d_input]` the layer's input, `output_grad [batch, d_output]` the loss's
    /// gradient w.r.t. its output, on one batch), and the [`Rewiring`] for the optimizer.
    /// Call it where [`RigL::is_update_step`] says so.
    pub fn update(
        &self,
        step: usize,
        layer: &SparseLinear,
        input: Tensor<2>,
        output_grad: Tensor<2>,
    ) -> Checked<(SparseLinear, Rewiring)> {
        let k = (self.update_fraction(step) * layer.nnz() as f64).round() as usize;
        let drop = smallest_entries(layer, k);
        let grow = top_gradient_positions(layer, &drop, input, output_grad, k, self.tile_elements)?;
        layer.rewire(&drop, &grow, None)
    }
}

/// One tile of the dense gradient on the host: borrowed f32, or any other float dtype widened.
enum Tile<'a> {
    F32(&'a [f32]),
    F64(Vec<f64>),
}

impl Tile<'_> {
    fn get(&self, i: usize) -> f64 {
        match self {
            Tile::F32(v) => f64::from(v[i]),
            Tile::F64(v) => v[i],
        }
    }
}

/// `(score, position)` ordered best first: larger `|gradient|` (NaN above everything), then the
/// earlier position.
fn better(a: &(f64, usize), b: &(f64, usize)) -> Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
}

/// The `k` row-major positions of largest `|(output_gradᵀ input)[i, j]|` among those not
/// stored in `layer` after dropping the entries `drop` (ascending entry indices), ascending.
/// The dense gradient is built `tile_elements` elements (whole rows, at least one) at a time
/// and a running top-k keeps at most `2k` candidates: memory `O(tile_elements + k)`. Fewer
/// than `k` when fewer positions are free. Errors on operands whose shapes do not fit the layer.
pub fn top_gradient_positions(
    layer: &SparseLinear,
    drop: &[usize],
    input: Tensor<2>,
    output_grad: Tensor<2>,
    k: usize,
    tile_elements: usize,
) -> Checked<Vec<usize>> {
    const OP: &str = "top_gradient_positions";
    let (d_output, d_input) = (layer.d_output(), layer.d_input);
    let [batch, di] = input.dims();
    let [gb, go] = output_grad.dims();
    if di != d_input || go != d_output || gb != batch {
        return Err(invalid(
            OP,
            format!(
                "input {:?} and output_grad {:?} do not fit a layer [{d_output}, {d_input}]: need [batch, {d_input}] and [batch, {d_output}]",
                [batch, di],
                [gb, go]
            ),
        ));
    }
    let (crow, col) = host_pattern(layer);
    let mut dropped = vec![false; col.len()];
    for &e in drop {
        if e >= col.len() {
            return Err(invalid(OP, format!("drop index {e} is not an entry of a layer with {}", col.len())));
        }
        dropped[e] = true;
    }
    let (input, output_grad) = (input.detach(), output_grad.detach());
    let tile_rows = (tile_elements / d_input.max(1)).max(1);
    let mut best: Vec<(f64, usize)> = Vec::with_capacity(k.saturating_mul(2).min(d_output.saturating_mul(d_input)));
    // The k-th best score once `best` has been cut to k: nothing below it can enter.
    let mut floor: Option<(f64, usize)> = None;
    let mut stored = vec![false; d_input];
    let mut r0 = 0;
    while r0 < d_output && k > 0 {
        let r1 = (r0 + tile_rows).min(d_output);
        let tile = output_grad.clone().slice([0..batch, r0..r1]).transpose().matmul(input.clone());
        // f32 gradients are scanned in place (no widened copy of the tile).
        let data = tile.into_data();
        let tile: Tile = match data.as_slice::<f32>() {
            Ok(values) => Tile::F32(values),
            Err(_) => Tile::F64(data.iter::<f64>().collect()),
        };
        for r in r0..r1 {
            for e in crow[r]..crow[r + 1] {
                stored[col[e]] = !dropped[e];
            }
            let row = (r - r0) * d_input..(r - r0 + 1) * d_input;
            for (c, &taken) in stored.iter().enumerate() {
                let g = tile.get(row.start + c);
                let candidate = (g.abs(), r * d_input + c);
                if taken || floor.is_some_and(|f| better(&candidate, &f) != Ordering::Less) {
                    continue;
                }
                best.push(candidate);
                if best.len() >= 2 * k {
                    best.select_nth_unstable_by(k - 1, better);
                    best.truncate(k);
                    floor = best.iter().copied().max_by(better);
                }
            }
            for e in crow[r]..crow[r + 1] {
                stored[col[e]] = false;
            }
        }
        r0 = r1;
    }
    if best.len() > k {
        best.select_nth_unstable_by(k - 1, better);
        best.truncate(k);
    }
    let mut positions: Vec<usize> = best.into_iter().map(|(_, p)| p).collect();
    positions.sort_unstable();
    Ok(positions)
}

impl SparseLinear {
    /// The forward pass with a probe for RigL: `(y, probe)` where `y = forward(input) + probe`
    /// and `probe` is a zero leaf `[..., d_output]` that requires grad, so after `backward` the
    /// probe's gradient is `dL/dy`, the `output_grad` of [`RigL::update`]. Costs one dense
    /// addition; use it at update steps only.
    pub fn forward_probed<const D: usize>(&self, input: Tensor<D>) -> (Tensor<D>, Tensor<D>) {
        let y = self.forward(input);
        let probe = Tensor::zeros(y.dims(), (&y.device(), y.dtype())).require_grad();
        (y + probe.clone(), probe)
    }
}
