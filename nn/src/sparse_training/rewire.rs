//! Pattern surgery on a [`SparseLinear`]: drop stored entries, grow new ones, and carry the
//! training state across the change.
//!
//! [`SparseLinear::rewire`] gives the new layer and a [`Rewiring`], the map from each entry of
//! the new pattern to the entry of the old one it continues (or none, for a grown entry).
//! Surviving entries keep their values; grown entries start at zero or at values the caller
//! gives. The values parameter keeps its [`ParamId`], so the optimizer still recognises it;
//! [`rewire_optimizer`] then moves the optimizer's per-entry state (Adam's moments, SGD's
//! momentum: every state tensor shaped like the values) along the same map, zero for grown
//! entries, and leaves scalar state (Adam's step count) as it was.
//!
//! Burn keeps optimizer state behind a serialised record keyed by parameter id
//! (`ModuleOptimizer::into_bytes`, a burnpack buffer); the remap reads that record, rewrites the
//! tensors of the rewired parameters element by element (a byte copy, so any element dtype
//! works) and loads it back. A record of a module whose patterns changed no longer fits a module
//! built from its config (the entry counts differ); [`load_rewired`] resizes the sparse layers'
//! entry arrays to the record's before burn loads it.

use crate::sparse_linear::SparseLinear;
use burn::module::{Module, ModuleMapper, Param, ParamId};
use burn::optim::ModuleOptimizer;
use burn::store::{ModuleRecord, RecordError};
use burn::tensor::{DType, Int, Shape, Tensor, TensorData};
use sparsegrad_backend::error::invalid;
use sparsegrad_backend::memo::PatternMemo;
use sparsegrad_backend::util::try_int_tensor;
use sparsegrad_backend::Result;
use std::collections::HashMap;

/// Marks a grown entry in [`Rewiring::source`].
pub const GROWN: usize = usize::MAX;

/// How the entries of a rewired [`SparseLinear`] relate to those of the layer it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Rewiring {
    /// The values parameter of both layers (the id is kept across the change).
    pub param: ParamId,
    old_nnz: usize,
    source: Vec<usize>,
}

impl Rewiring {
    /// For every stored entry of the new layer, in storage order, the index of the entry of the
    /// old layer it continues, or [`GROWN`].
    pub fn source(&self) -> &[usize] {
        &self.source
    }

    /// Stored entries before the change.
    pub fn old_nnz(&self) -> usize {
        self.old_nnz
    }

    /// Stored entries after the change.
    pub fn new_nnz(&self) -> usize {
        self.source.len()
    }

    /// Entries that were grown.
    pub fn grown(&self) -> usize {
        self.source.iter().filter(|&&s| s == GROWN).count()
    }

    /// Entries of the old layer that survived.
    pub fn kept(&self) -> usize {
        self.new_nnz() - self.grown()
    }
}

/// The host copy of a layer's pattern: `crow`, `col` as `usize`.
pub(crate) fn host_pattern(layer: &SparseLinear) -> (Vec<usize>, Vec<usize>) {
    let read = |t: Tensor<1, Int>| t.into_data().iter::<i64>().map(|v| v as usize).collect::<Vec<_>>();
    (read(layer.crow.val()), read(layer.col.val()))
}

impl SparseLinear {
    /// Pattern surgery: the layer without the stored entries `drop` (indices into its entries,
    /// in storage order) and with new entries at the row-major positions `grow`
    /// (`row * d_input + col`), which must not be stored after the drop (a dropped position
    /// may be grown again: it comes back as a new entry). Grown entries take the values `init`
    /// (`[grow.len()]`, in the order of `grow`, the layer's value dtype) or zero.
    ///
    /// Surviving entries keep their values bit for bit and the values parameter keeps its id;
    /// the returned [`Rewiring`] says where each entry came from, for [`rewire_optimizer`].
    /// The new values are a fresh leaf (no autodiff history), trainable as before.
    ///
    /// Errors, naming the offending index: a drop index out of range or repeated, a grow
    /// position outside the matrix, repeated, or stored and not dropped, or an `init` of the
    /// wrong length or dtype. `O(nnz + d_output + grow log grow)` on the host.
    pub fn rewire(&self, drop: &[usize], grow: &[usize], init: Option<Tensor<1>>) -> Result<(SparseLinear, Rewiring)> {
        const OP: &str = "SparseLinear::rewire";
        self.try_weight()?;
        let (d_output, d_input) = (self.d_output(), self.d_input);
        let (crow, col) = host_pattern(self);
        let nnz = col.len();
        let mut dropped = vec![false; nnz];
        for (i, &e) in drop.iter().enumerate() {
            if e >= nnz {
                return Err(invalid(OP, format!("drop[{i}] = {e} is not an entry of a layer with {nnz}")));
            }
            if std::mem::replace(&mut dropped[e], true) {
                return Err(invalid(OP, format!("drop[{i}] = {e} is listed twice")));
            }
        }
        let numel = d_output.checked_mul(d_input).ok_or_else(|| {
            invalid(OP, format!("a {d_output} x {d_input} weight has more elements than usize holds"))
        })?;
        // Grown positions in row-major order, each with its place in `grow` (for `init`).
        let mut order: Vec<(usize, usize)> = grow.iter().enumerate().map(|(i, &p)| (p, i)).collect();
        order.sort_unstable();
        for w in order.windows(2) {
            if w[0].0 == w[1].0 {
                return Err(invalid(OP, format!("grow[{}] = {} is listed twice", w[1].1, w[1].0)));
            }
        }
        if let Some(&(p, i)) = order.last().filter(|(p, _)| *p >= numel) {
            return Err(invalid(OP, format!("grow[{i}] = {p} is outside the {d_output} x {d_input} weight")));
        }
        if let Some(init) = &init {
            let values = self.values.val();
            if init.dims() != [grow.len()] || init.dtype() != values.dtype() {
                return Err(invalid(
                    OP,
                    format!(
                        "init is {:?} of {:?}; the {} grown entries need [{}] of {:?}",
                        init.dims(),
                        init.dtype(),
                        grow.len(),
                        grow.len(),
                        values.dtype()
                    ),
                ));
            }
        }
        // Merge each row's surviving entries with its grown ones, both in column order.
        let new_nnz = nnz - drop.len() + grow.len();
        let mut new_crow = Vec::with_capacity(d_output + 1);
        let mut new_col = Vec::with_capacity(new_nnz);
        let mut source = Vec::with_capacity(new_nnz);
        // Index of each new entry into `[old values, init]`.
        let mut gather = Vec::with_capacity(new_nnz);
        new_crow.push(0i64);
        let mut g = 0;
        for r in 0..d_output {
            let mut e = crow[r];
            let end = crow[r + 1];
            loop {
                while e < end && dropped[e] {
                    e += 1;
                }
                let grown_here = g < order.len() && order[g].0 / d_input == r;
                let grown_col = if grown_here { order[g].0 % d_input } else { usize::MAX };
                if e < end && col[e] == grown_col {
                    let (p, i) = order[g];
                    return Err(invalid(
                        OP,
                        format!("grow[{i}] = {p} (row {r}, column {grown_col}) is stored and not dropped"),
                    ));
                }
                if e < end && col[e] < grown_col {
                    new_col.push(col[e] as i64);
                    source.push(e);
                    gather.push(e as i64);
                    e += 1;
                } else if grown_here {
                    new_col.push(grown_col as i64);
                    source.push(GROWN);
                    gather.push((nnz + order[g].1) as i64);
                    g += 1;
                } else {
                    break;
                }
            }
            new_crow.push(new_col.len() as i64);
        }
        debug_assert_eq!(new_col.len(), new_nnz);

        let values = self.values.val();
        let device = values.device();
        let index_dtype = self.col.val().dtype();
        let grown_values = init.unwrap_or_else(|| Tensor::zeros([grow.len()], (&device, values.dtype())));
        let gather = try_int_tensor(gather, [new_nnz], DType::I64, &device)?;
        let new_crow = try_int_tensor(new_crow, [d_output + 1], index_dtype, &device)?;
        let new_col = try_int_tensor(new_col, [new_nnz], index_dtype, &device)?;
        let values = self.values.clone().map(|v| {
            let trainable = v.is_require_grad();
            let moved = Tensor::cat(vec![v.detach(), grown_values.detach()], 0).select(0, gather).detach();
            if trainable {
                moved.require_grad()
            } else {
                moved
            }
        });
        let layer = SparseLinear {
            crow: self.crow.clone().map(|_| new_crow),
            col: self.col.clone().map(|_| new_col),
            values,
            bias: self.bias.clone(),
            d_input,
            memo: PatternMemo::new(),
        };
        Ok((layer, Rewiring { param: self.values.id, old_nnz: nnz, source }))
    }
}

/// The optimizer with the state of every rewired values parameter moved along its
/// [`Rewiring`]: each state tensor of that parameter shaped `[old_nnz]` becomes `[new_nnz]`,
/// surviving entries keeping their state exactly and grown ones starting at zero. Scalar
/// state (step counts) is kept; parameters not rewired are untouched. A parameter without
/// state yet (before the first step) needs nothing.
///
/// Errors when a state tensor of a rewired parameter is not `[old_nnz]` (an optimizer whose
/// per-parameter state is not elementwise, or a `Rewiring` from another layer), or when the
/// record cannot be read or written.
pub fn rewire_optimizer(optim: ModuleOptimizer, rewirings: &[Rewiring]) -> Result<ModuleOptimizer> {
    const OP: &str = "rewire_optimizer";
    let by_id: HashMap<u64, &Rewiring> = rewirings.iter().map(|r| (r.param.val(), r)).collect();
    let record_error = |e: &dyn std::fmt::Display| invalid(OP, format!("the optimizer record: {e}"));
    let bytes = optim.into_bytes().map_err(|e| record_error(&e))?;
    let reader = burn_pack::Reader::from_bytes(bytes).map_err(|e| record_error(&e))?;
    let scalars = reader.scalars().clone();
    let metadata = reader.metadata().clone();
    let mut tensors = Vec::new();
    for tensor in reader.into_tensors().map_err(|e| record_error(&e))? {
        let Some(rewiring) = tensor.param_id.and_then(|id| by_id.get(&id)) else {
            tensors.push(tensor);
            continue;
        };
        let (name, dtype, shape, param_id, bytes) = tensor.into_parts().map_err(|e| record_error(&e))?;
        if shape.as_slice() != [rewiring.old_nnz] || matches!(dtype, DType::QFloat(_)) {
            return Err(invalid(
                OP,
                format!(
                    "state tensor {name} is {:?} of {dtype:?}; a rewired parameter's state must be [{}] of a plain dtype",
                    shape.as_slice(),
                    rewiring.old_nnz
                ),
            ));
        }
        let size = dtype.size();
        let mut moved = vec![0u8; rewiring.new_nnz() * size];
        for (to, &from) in moved.chunks_exact_mut(size).zip(&rewiring.source) {
            if from != GROWN {
                to.copy_from_slice(&bytes[from * size..(from + 1) * size]);
            }
        }
        let (moved, shape, dtype) = TensorData::from_bytes_vec(moved, [rewiring.new_nnz()], dtype).into_parts();
        tensors.push(burn_pack::Tensor::new(name, dtype, shape, param_id, moved));
    }
    let mut writer = burn_pack::Writer::new(tensors);
    for (key, value) in &scalars {
        writer = writer.with_scalar(key, *value);
    }
    for (key, value) in &metadata {
        writer = writer.with_metadata(key, value);
    }
    let bytes = writer.into_bytes().map_err(|e| record_error(&e))?;
    optim.from_bytes(bytes).map_err(|e| record_error(&e))
}

/// `module` with `record` loaded, where the record may come from a module whose
/// [`SparseLinear`] layers were rewired: each such layer's entry arrays (`col`, `values`) are
/// first resized to the record's lengths, then burn loads the record as usual (its shape checks
/// apply to every other parameter) and every loaded layer's pattern is checked before use.
pub fn load_rewired<M: Module>(module: M, record: ModuleRecord) -> std::result::Result<M, RecordError> {
    let reader = burn_pack::Reader::from_bytes(record.clone().into_bytes()?)?;
    let shapes: HashMap<String, Shape> =
        reader.into_tensors()?.into_iter().map(|t| (t.name.clone(), t.shape.clone())).collect();
    let mut resize = Resize { path: Vec::new(), in_sparse_linear: Vec::new(), shapes };
    module.map(&mut resize).try_load_record(record)
}

/// Gives the entry arrays of every [`SparseLinear`] the length the record holds for them.
struct Resize {
    path: Vec<String>,
    in_sparse_linear: Vec<bool>,
    shapes: HashMap<String, Shape>,
}

impl Resize {
    /// The record's shape for the current parameter, when it is a `SparseLinear`'s `col` or
    /// `values`, is one-dimensional and differs from `current`.
    fn target(&self, current: &Shape) -> Option<usize> {
        let last = self.path.last()?;
        if !self.in_sparse_linear.last().copied().unwrap_or(false) || !(last == "col" || last == "values") {
            return None;
        }
        let shape = self.shapes.get(&self.path.join("."))?;
        (shape.num_dims() == 1 && shape != current).then(|| shape.as_slice()[0])
    }
}

impl ModuleMapper for Resize {
    fn enter_module(&mut self, name: &str, container_type: &str) {
        self.path.push(name.to_string());
        self.in_sparse_linear.push(container_type == "Struct:SparseLinear");
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
        self.in_sparse_linear.pop();
    }

    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        match self.target(&param.lazy_shape()) {
            Some(len) if D == 1 => param.map(|t| {
                let trainable = t.is_require_grad();
                let mut dims = [0; D];
                dims[0] = len;
                let fresh = Tensor::zeros(dims, (&t.device(), t.dtype()));
                if trainable {
                    fresh.require_grad()
                } else {
                    fresh
                }
            }),
            _ => param,
        }
    }

    fn map_int<const D: usize>(&mut self, param: Param<Tensor<D, Int>>) -> Param<Tensor<D, Int>> {
        match self.target(&param.lazy_shape()) {
            Some(len) if D == 1 => param.map(|t| {
                let mut dims = [0; D];
                dims[0] = len;
                Tensor::zeros(dims, (&t.device(), t.dtype()))
            }),
            _ => param,
        }
    }
}

/// Indices of the `k` stored entries of smallest magnitude (ties: the later entry goes first,
/// mirroring the pruning rule that keeps the earlier; NaN counts as the largest), ascending.
pub(crate) fn smallest_entries(layer: &SparseLinear, k: usize) -> Vec<usize> {
    let mags: Vec<f64> = layer.values.val().into_data().iter::<f64>().map(f64::abs).collect();
    let keep = crate::prune::top_k_positions(&mags, mags.len().saturating_sub(k));
    let mut kept = keep.into_iter().peekable();
    (0..mags.len())
        .filter(|&e| {
            if kept.peek() == Some(&e) {
                kept.next();
                false
            } else {
                true
            }
        })
        .collect()
}
