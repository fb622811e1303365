//! `SparseLinear`: a linear layer `y = x Wᵀ + b` whose weight `W [d_output, d_input]` has a
//! fixed CSR pattern and trainable values (unstructured sparse training with a static mask).
//!
//! The pattern (`crow`, `col`) is held in Int parameters so burn records save and load it with
//! the values; optimizers only see float parameters, so it never moves. The product is the
//! differentiable sparse `mm` of the autodiff crate, whose rule puts the weight's gradient on the
//! stored values only (an SDDMM over the pattern): the layer stays exactly as sparse while it
//! trains, and no dense `d_output x d_input` matrix is built forward or backward.
//!
//! Built from a density (a uniformly random pattern, [`SparseLinearConfig::init`]), from a given
//! pattern ([`SparseLinearConfig::init_with_pattern`]), from a sparse weight
//! ([`SparseLinear::from_weight`]) or by magnitude pruning of a dense `burn::nn::Linear`
//! ([`SparseLinear::from_linear`]).
//!
//! A random pattern is drawn in time and memory proportional to its entries, not to
//! `d_output * d_input` (Floyd's sampling of distinct positions), so a very sparse layer of huge
//! sizes is cheap; a size or entry count that cannot be counted or allocated is an error.
//!
//! Records are untrusted (files on disk), and the CSR kernels index with the pattern unchecked.
//! So the `Module` impl is written out (what `#[derive(Module)]` generates) to override
//! `try_load_record`: a record whose pattern is not valid CSR for the layer's shape is refused
//! with a `RecordError` naming the violation (`load_record` and `load_file` panic with it). A
//! layer loaded as part of a bigger module goes through `map`, which cannot fail, and its fields
//! are public; so [`SparseLinear::weight`] builds the weight with the checked CSR constructor
//! as well, and the kernels never see an unchecked pattern. The check runs once per pattern:
//! the layer's [`PatternMemo`] recognises the index tensors it already checked, so a training
//! loop does not pay a pass over the pattern at every step.

use crate::prune::{csr_at_positions, csr_indices, kept_at_sparsity, kept_count, magnitudes, top_k_positions, try_vec};
use burn::config::Config;
use burn::module::{
    Content, Devices, Module, ModuleDisplay, ModuleDisplayDefault, ModuleMapper, ModuleVisitor, Param, ParamId,
};
use burn::nn::{Initializer, Linear};
use burn::store::{ModuleRecord, RecordError};
use burn::tensor::{DType, Device, Distribution, Int, Tensor};
use sparsegrad_autodiff::matmul::mm;
use sparsegrad_backend::memo::PatternMemo;
use sparsegrad_backend::record::load_checked;
use sparsegrad_backend::rng::SplitMix64;
use sparsegrad_backend::util::{int_tensor, reshape, reshape_int};
use sparsegrad_backend::{Layout, SparseError, SparseTensor};
use std::collections::HashSet;
use std::fmt;

// Not `Result`: the `Config` derive expands to code naming the std `Result`.
type Checked<T> = sparsegrad_backend::Result<T>;

/// Configuration of a [`SparseLinear`] layer, with burn's `LinearConfig` conventions.
#[derive(Config, Debug)]
pub struct SparseLinearConfig {
    /// Input features.
    pub d_input: usize,
    /// Output features.
    pub d_output: usize,
    /// Fraction of the weight's elements stored: `round(density * d_input * d_output)` entries.
    #[config(default = 0.1)]
    pub density: f64,
    /// Whether to add a bias.
    #[config(default = true)]
    pub bias: bool,
    /// Initializer of the stored values and the bias (burn's `Linear` default). Fan-in and
    /// fan-out are the stored entries per row and per column, not the dense sizes.
    #[config(default = "Initializer::KaimingUniform{gain:0.5773502691896258, fan_out_only:false}")]
    pub initializer: Initializer,
    /// Seed of the random pattern (the same seed, sizes and density give the same pattern);
    /// `None` draws it from the device's generator (reproducible after `device.seed`).
    #[config(default = "None")]
    pub seed: Option<u64>,
}

/// A linear layer with a CSR weight of fixed pattern: `y = x Wᵀ + b`.
///
/// Its record (`into_record`, `save_file`) holds the pattern, the values and the bias; it loads
/// into a layer of the same shape and entry count, which a [`SparseLinearConfig`] with the same
/// sizes and density builds whatever its seed. Loading checks the pattern (see the module docs).
#[derive(Clone, Debug)]
pub struct SparseLinear {
    /// Compressed row pointers of `W`, `[d_output + 1]`.
    pub crow: Param<Tensor<1, Int>>,
    /// Column of each stored entry, `[nnz]`, sorted within each row.
    pub col: Param<Tensor<1, Int>>,
    /// The stored entries of `W`, `[nnz]`: the trainable weight.
    pub values: Param<Tensor<1>>,
    /// `[d_output]`.
    pub bias: Option<Param<Tensor<1>>>,
    /// Columns of `W`.
    pub d_input: usize,
    /// The pattern tensors last checked, so [`SparseLinear::weight`] checks `crow` and `col`
    /// once, not at every forward pass (see [`PatternMemo`]). `PatternMemo::default()` for a
    /// layer built by hand; sharing one between layers is harmless (it recognises tensors by
    /// their storage).
    pub memo: PatternMemo<1>,
}

/// int32 indices when they fit (half the memory of int64; the kernels take both): the CSR
/// constructor wants both dimensions and the entry count to fit the index dtype.
pub(crate) fn index_dtype(d_output: usize, d_input: usize, nnz: usize) -> DType {
    if d_output.max(d_input).max(nnz) <= i32::MAX as usize {
        DType::I32
    } else {
        DType::I64
    }
}

/// Stored entries per row and per column, at least 1: a sparse row sums `nnz / d_output`
/// products, so scaling the initialisation by the dense fan-in would shrink activations by
/// `sqrt(density)` per layer.
fn fans(nnz: usize, d_input: usize, d_output: usize) -> (usize, usize) {
    let per = |n: usize| ((nnz as f64 / n.max(1) as f64).round() as usize).max(1);
    (per(d_output), per(d_input))
}

fn index_param(t: Tensor<1, Int>) -> Param<Tensor<1, Int>> {
    Param::initialized(ParamId::new(), t)
}

/// A uniformly random `k`-subset of `0..n` (`k <= n`), ascending. Floyd's algorithm: for each
/// `j` of the last `k` values, draw `t` in `0..=j` and take `t`, or `j` when `t` is taken
/// already; every step adds one element, `k` draws and a set of `k` entries in all.
fn floyd(n: usize, k: usize, rng: &mut SplitMix64, operation: &'static str) -> Checked<Vec<usize>> {
    let mut chosen = HashSet::new();
    chosen.try_reserve(k).map_err(|_| SparseError::InvalidArgument {
        operation,
        message: format!("cannot allocate a set of {k} positions"),
    })?;
    let mut out = try_vec(k, "the positions of the entries", operation)?;
    for j in n - k..n {
        let t = rng.below(j as u64 + 1) as usize;
        if !chosen.insert(t) {
            chosen.insert(j);
        }
    }
    out.extend(chosen);
    out.sort_unstable();
    Ok(out)
}

/// A uniformly random `k`-subset of the row-major positions `0..n`, ascending, in `O(k)`
/// expected time and memory. Above half the positions the `n - k` left out are drawn instead
/// (fewer draws, and walking all `n` positions is then `O(k)` too).
fn random_positions(n: usize, k: usize, seed: u64, operation: &'static str) -> Checked<Vec<usize>> {
    let mut rng = SplitMix64::new(seed);
    if k <= n / 2 {
        return floyd(n, k, &mut rng, operation);
    }
    let mut out = try_vec(k, "the positions of the entries", operation)?;
    let mut skipped = floyd(n, n - k, &mut rng, operation)?.into_iter().peekable();
    for p in 0..n {
        if skipped.peek() == Some(&p) {
            skipped.next();
        } else {
            out.push(p);
        }
    }
    Ok(out)
}

/// A seed from the device's generator: 16 bits of each of four uniform draws (`device.seed`
/// makes it reproducible, as the rest of burn's initialisation).
fn device_seed(device: &Device) -> u64 {
    let draws = Tensor::<1>::random([4], Distribution::Uniform(0.0, 1.0), device).into_data();
    draws.iter::<f64>().fold(0u64, |seed, u| seed << 16 | ((u * 65536.0) as u64 & 0xFFFF))
}

impl SparseLinearConfig {
    /// A layer with a uniformly random pattern of `round(density * d_input * d_output)` entries
    /// (every set of that many distinct positions equally likely; time and memory proportional
    /// to the entries and `d_output`). Panics where [`SparseLinearConfig::try_init`] errors.
    pub fn init(&self, device: &Device) -> SparseLinear {
        self.try_init(device).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`SparseLinearConfig::init`] returning the error: a density outside `[0, 1]`, sizes whose
    /// product exceeds `i64::MAX` (`ElementCountOverflow`), or index arrays that cannot be
    /// allocated.
    pub fn try_init(&self, device: &Device) -> Checked<SparseLinear> {
        const OP: &str = "SparseLinearConfig::init";
        let shape = [self.d_output, self.d_input];
        // The CSR constructor's bound: the element count fits an i64.
        let numel = self
            .d_output
            .checked_mul(self.d_input)
            .filter(|&n| n <= i64::MAX as usize)
            .ok_or(SparseError::ElementCountOverflow { shape: shape.to_vec() })?;
        let nnz = kept_count(numel, self.density, OP)?;
        let seed = self.seed.unwrap_or_else(|| device_seed(device));
        let positions = random_positions(numel, nnz, seed, OP)?;
        let (crow, col) = csr_indices(&positions, self.d_output, self.d_input, OP)?;
        drop(positions);
        Ok(self.with_indices(crow, col, device))
    }

    /// A layer on the pattern of `pattern` (its values are ignored; the layer's are initialised
    /// by the configured initializer). Errors when its shape is not `[d_output, d_input]` or it
    /// has dense dims.
    pub fn init_with_pattern(&self, pattern: &SparseTensor<2>, device: &Device) -> Checked<SparseLinear> {
        let expected = [self.d_output, self.d_input];
        if pattern.shape() != expected {
            return Err(SparseError::ShapeMismatch {
                component: "pattern",
                expected: expected.to_vec(),
                actual: pattern.shape().to_vec(),
            });
        }
        let (crow, col, _) = csr_parts(pattern, "SparseLinearConfig::init_with_pattern")?;
        let read = |t: Tensor<1, Int>| t.into_data().iter::<i64>().collect::<Vec<_>>();
        Ok(self.with_indices(read(crow), read(col), device))
    }

    fn with_indices(&self, crow: Vec<i64>, col: Vec<i64>, device: &Device) -> SparseLinear {
        let nnz = col.len();
        let dtype = index_dtype(self.d_output, self.d_input, nnz);
        let (fan_in, fan_out) = fans(nnz, self.d_input, self.d_output);
        SparseLinear {
            crow: index_param(int_tensor(crow, [self.d_output + 1], dtype, device)),
            col: index_param(int_tensor(col, [nnz], dtype, device)),
            values: self.initializer.init_with([nnz], Some(fan_in), Some(fan_out), device),
            bias: self.bias.then(|| self.initializer.init_with([self.d_output], Some(fan_in), Some(fan_out), device)),
            d_input: self.d_input,
            memo: PatternMemo::new(),
        }
    }
}

/// `(crow [rows + 1], col [nnz], values [nnz])` of a 2-D sparse tensor without dense dims, in
/// CSR (other layouts converted; the values keep their autodiff graph).
fn csr_parts(
    weight: &SparseTensor<2>,
    operation: &'static str,
) -> Checked<(Tensor<1, Int>, Tensor<1, Int>, Tensor<1>)> {
    if weight.dense_dim() > 0 {
        return Err(SparseError::InvalidArgument {
            operation,
            message: format!("the weight has {} dense dims; its values must be scalars", weight.dense_dim()),
        });
    }
    let csr = match weight.layout() {
        Layout::Csr => weight.clone(),
        _ => weight.to_sparse_csr()?,
    };
    let (c, p) = csr.compressed_indices_flat().expect("CSR has compressed indices");
    let (rows, nnz) = (csr.shape()[0], csr.nnz());
    Ok((reshape_int(c, [rows + 1]), reshape_int(p, [nnz]), reshape(csr.values_flat(), [nnz])))
}

impl SparseLinear {
    /// A layer with the given weight `[d_output, d_input]` (any layout, converted to CSR; its
    /// stored entries, explicit zeros included, are the pattern) and bias `[d_output]`. Values
    /// and bias become new trainable parameters (detached from any graph they were part of).
    pub fn from_weight(weight: &SparseTensor<2>, bias: Option<Tensor<1>>) -> Checked<Self> {
        let (crow, col, values) = csr_parts(weight, "SparseLinear::from_weight")?;
        let [d_output, d_input] = weight.shape();
        if let Some(b) = &bias {
            if b.dims() != [d_output] {
                return Err(SparseError::ShapeMismatch {
                    component: "bias",
                    expected: vec![d_output],
                    actual: b.dims().to_vec(),
                });
            }
        }
        Ok(Self {
            crow: index_param(crow),
            col: index_param(col),
            values: Param::from_tensor(values.detach()),
            bias: bias.map(|b| Param::from_tensor(b.detach())),
            d_input,
            memo: PatternMemo::new(),
        })
    }

    /// Magnitude pruning of a dense layer to `sparsity` (the fraction of zeros): the
    /// `round(sparsity * d_input * d_output)` weights of smallest magnitude are dropped, the others
    /// stored (ties to the earlier position of `Wᵀ`), the bias is copied; `0.9` keeps 10 %.
    /// Errors on a sparsity outside `[0, 1]`.
    ///
    /// # Examples
    ///
    /// ```
    /// use burn::nn::LinearConfig;
    /// use burn::tensor::{Device, Tensor};
    /// use sparsegrad_nn::SparseLinear;
    ///
    /// let device = Device::flex();
    /// let layer = SparseLinear::from_linear(&LinearConfig::new(10, 4).init(&device), 0.75).unwrap();
    /// assert_eq!(layer.nnz(), 10); // a quarter of 40 weights kept
    /// assert_eq!(layer.forward(Tensor::<2>::ones([2, 10], &device)).dims(), [2, 4]);
    /// ```
    pub fn from_linear(linear: &Linear, sparsity: f64) -> Checked<Self> {
        // burn's Linear stores `[d_input, d_output]`; this layer's `W` is its transpose.
        let w = linear.weight.val().detach().transpose();
        let [d_output, d_input] = w.dims();
        let nnz = kept_at_sparsity(d_output * d_input, sparsity, "SparseLinear::from_linear")?;
        let positions = top_k_positions(&magnitudes(&w), nnz);
        let weight = csr_at_positions(w, &positions, index_dtype(d_output, d_input, nnz))?;
        Self::from_weight(&weight, linear.bias.as_ref().map(|b| b.val()))
    }

    /// Rows of `W` (one less than the length of `crow`).
    pub fn d_output(&self) -> usize {
        self.crow.val().dims()[0].saturating_sub(1)
    }

    /// Stored entries of `W`.
    pub fn nnz(&self) -> usize {
        self.col.val().dims()[0]
    }

    /// `nnz / (d_output * d_input)`.
    pub fn density(&self) -> f64 {
        self.nnz() as f64 / self.d_output().saturating_mul(self.d_input).max(1) as f64
    }

    /// `W` as a CSR tensor sharing the layer's index and value tensors (differentiable w.r.t.
    /// the values on an autodiff device), built by the checked CSR constructor (the indices
    /// checked once per pattern, see [`PatternMemo`]). Panics with the
    /// violation when the parts do not make a valid weight (see [`SparseLinear::try_weight`]).
    pub fn weight(&self) -> SparseTensor<2> {
        self.try_weight().unwrap_or_else(|e| panic!("SparseLinear: invalid weight: {e}"))
    }

    /// [`SparseLinear::weight`] returning the error: `crow` not starting at 0, decreasing or not
    /// ending at `nnz`, a column outside `0..d_input` or not increasing within its row, lengths
    /// that disagree, index dtypes that differ or are not signed integers, or values that are
    /// not floats. One pass over the indices on the host, `O(d_output + nnz)`, the first time
    /// and whenever `crow`, `col` or `d_input` change.
    pub fn try_weight(&self) -> Checked<SparseTensor<2>> {
        let values = self.values.val();
        if !values.dtype().is_float() {
            return Err(SparseError::UnsupportedDtype { component: "values", dtype: format!("{:?}", values.dtype()) });
        }
        SparseTensor::csr_with_memo(
            self.crow.val(),
            self.col.val(),
            values,
            [self.d_output(), self.d_input],
            &self.memo,
        )
    }

    /// Checks the layer: its parts make a valid weight ([`SparseLinear::try_weight`]) and the
    /// bias, if any, is `[d_output]`. What loading a record runs.
    pub fn check(&self) -> Checked<()> {
        self.try_weight()?;
        if let Some(b) = &self.bias {
            let dims = b.val().dims();
            if dims != [self.d_output()] {
                return Err(SparseError::ShapeMismatch {
                    component: "bias",
                    expected: vec![self.d_output()],
                    actual: dims.to_vec(),
                });
            }
        }
        Ok(())
    }

    /// Bytes the parameters occupy: values, both index arrays and the bias.
    pub fn memory_bytes(&self) -> usize {
        fn bytes<K>(t: Tensor<1, K>) -> usize
        where
            K: burn::tensor::kind::Basic,
        {
            t.dims()[0] * t.dtype().size()
        }
        bytes(self.crow.val())
            + bytes(self.col.val())
            + bytes(self.values.val())
            + self.bias.as_ref().map_or(0, |b| bytes(b.val()))
    }

    /// `x Wᵀ + b` for `input [..., d_input]`, giving `[..., d_output]`. Panics when the last
    /// axis is not `d_input`, naming both.
    pub fn forward<const D: usize>(&self, input: Tensor<D>) -> Tensor<D> {
        let dims = input.dims();
        assert!(
            D >= 1 && dims[D - 1] == self.d_input,
            "SparseLinear: input of shape {dims:?} does not end in d_input = {} (weight [{}, {}])",
            self.d_input,
            self.d_output(),
            self.d_input
        );
        let rows: usize = dims[..D - 1].iter().product();
        let x = reshape(input, [rows, self.d_input]);
        // W xᵀ runs the CSR kernel over the batch as its dense (vectorised) dimension; for a
        // stack of sparse layers the transposes cancel, each layer handing the next a
        // contiguous [features, batch] buffer.
        let y = mm(&self.weight(), x.transpose()).transpose();
        let y = match &self.bias {
            Some(b) => y + b.val().unsqueeze::<2>(),
            None => y,
        };
        let mut out = dims;
        out[D - 1] = self.d_output();
        reshape(y, out)
    }
}

const CONTAINER: &str = "Struct:SparseLinear";

/// What `#[derive(Module)]` generates for the fields, plus the checked `try_load_record`.
impl Module for SparseLinear {
    fn collect_devices(&self, devices: Devices) -> Devices {
        let devices = Module::collect_devices(&self.crow, devices);
        let devices = Module::collect_devices(&self.col, devices);
        let devices = Module::collect_devices(&self.values, devices);
        Module::collect_devices(&self.bias, devices)
    }

    fn fork(self, device: &Device) -> Self {
        Self {
            crow: Module::fork(self.crow, device),
            col: Module::fork(self.col, device),
            values: Module::fork(self.values, device),
            bias: Module::fork(self.bias, device),
            d_input: self.d_input,
            memo: PatternMemo::new(),
        }
    }

    fn to_device(self, device: &Device) -> Self {
        Self {
            crow: Module::to_device(self.crow, device),
            col: Module::to_device(self.col, device),
            values: Module::to_device(self.values, device),
            bias: Module::to_device(self.bias, device),
            d_input: self.d_input,
            memo: PatternMemo::new(),
        }
    }

    fn train(self) -> Self {
        Self {
            crow: Module::train(self.crow),
            col: Module::train(self.col),
            values: Module::train(self.values),
            bias: Module::train(self.bias),
            d_input: self.d_input,
            memo: PatternMemo::new(),
        }
    }

    fn valid(&self) -> Self {
        Self {
            crow: Module::valid(&self.crow),
            col: Module::valid(&self.col),
            values: Module::valid(&self.values),
            bias: Module::valid(&self.bias),
            d_input: self.d_input,
            memo: PatternMemo::new(),
        }
    }

    fn materialize(self) -> Self {
        Self {
            crow: Module::materialize(self.crow),
            col: Module::materialize(self.col),
            values: Module::materialize(self.values),
            bias: Module::materialize(self.bias),
            d_input: self.d_input,
            memo: PatternMemo::new(),
        }
    }

    fn visit<V: ModuleVisitor>(&self, visitor: &mut V) {
        visitor.enter_module("crow", CONTAINER);
        Module::visit(&self.crow, visitor);
        visitor.exit_module("crow", CONTAINER);
        visitor.enter_module("col", CONTAINER);
        Module::visit(&self.col, visitor);
        visitor.exit_module("col", CONTAINER);
        visitor.enter_module("values", CONTAINER);
        Module::visit(&self.values, visitor);
        visitor.exit_module("values", CONTAINER);
        visitor.enter_module("bias", CONTAINER);
        Module::visit(&self.bias, visitor);
        visitor.exit_module("bias", CONTAINER);
    }

    fn map<M: ModuleMapper>(self, mapper: &mut M) -> Self {
        mapper.enter_module("crow", CONTAINER);
        let crow = Module::map(self.crow, mapper);
        mapper.exit_module("crow", CONTAINER);
        mapper.enter_module("col", CONTAINER);
        let col = Module::map(self.col, mapper);
        mapper.exit_module("col", CONTAINER);
        mapper.enter_module("values", CONTAINER);
        let values = Module::map(self.values, mapper);
        mapper.exit_module("values", CONTAINER);
        mapper.enter_module("bias", CONTAINER);
        let bias = Module::map(self.bias, mapper);
        mapper.exit_module("bias", CONTAINER);
        Self { crow, col, values, bias, d_input: self.d_input, memo: PatternMemo::new() }
    }

    /// Burn's loading, then [`SparseLinear::check`]: a record whose pattern is not valid CSR
    /// for the layer's shape is a `RecordError::Validation` naming the violation (with or
    /// without the record's `validate` flag, which governs burn's own shape checks).
    fn try_load_record(self, record: ModuleRecord) -> Result<Self, RecordError> {
        load_checked(self, record, "SparseLinear", Self::check)
    }
}

impl ModuleDisplayDefault for SparseLinear {
    fn content(&self, content: Content) -> Option<Content> {
        content
            .set_top_level_type("SparseLinear")
            .add("crow", &self.crow)
            .add("col", &self.col)
            .add("values", &self.values)
            .add("bias", &self.bias)
            .add_debug_attribute("d_input", &self.d_input)
            .optional()
    }

    fn num_params(&self) -> usize {
        Module::num_params(self)
    }
}

impl ModuleDisplay for SparseLinear {}

impl fmt::Display for SparseLinear {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", ModuleDisplay::format(self, Default::default()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_stays_below_and_reaches_every_value() {
        let mut rng = SplitMix64::new(7);
        assert!((0..100).all(|_| rng.below(1) == 0));
        let big = (1u64 << 63) + 1;
        assert!((0..1000).all(|_| rng.below(big) < big));
        let mut seen = [0usize; 3];
        (0..3000).for_each(|_| seen[rng.below(3) as usize] += 1);
        assert!(seen.iter().all(|&c| (850..1150).contains(&c)), "{seen:?}");
    }

    #[test]
    fn random_positions_are_distinct_ascending_and_in_range() {
        for n in [0usize, 1, 2, 7, 64, 1000] {
            for k in [0, 1, n / 3, n / 2, n / 2 + 1, n.saturating_sub(1), n] {
                if k > n {
                    continue;
                }
                let p = random_positions(n, k, (n * 31 + k) as u64, "test").unwrap();
                assert_eq!(p.len(), k, "n = {n}, k = {k}");
                assert!(p.windows(2).all(|w| w[0] < w[1]) && p.iter().all(|&i| i < n), "n = {n}, k = {k}: {p:?}");
            }
        }
        // Seeded: the same subset again, another for another seed.
        assert_eq!(random_positions(1000, 10, 1, "test"), random_positions(1000, 10, 1, "test"));
        assert_ne!(random_positions(1000, 10, 1, "test"), random_positions(1000, 10, 2, "test"));
    }
}
