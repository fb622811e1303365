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

use crate::dropout::MaskRng;
use crate::prune::{csr_at_positions, csr_indices, kept_count, magnitudes, top_k_positions};
use burn::config::Config;
use burn::module::{Module, Param, ParamId};
use burn::nn::{Initializer, Linear};
use burn::tensor::{DType, Device, Distribution, Int, Tensor};
use sparsegrad_autodiff::matmul::mm;
use sparsegrad_backend::util::{int_tensor, reshape, reshape_int};
use sparsegrad_backend::{Layout, SparseError, SparseTensor};

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
    /// Seed of the random pattern; `None` draws it from the device's generator (`device.seed`).
    #[config(default = "None")]
    pub seed: Option<u64>,
}

/// A linear layer with a CSR weight of fixed pattern: `y = x Wᵀ + b`.
///
/// Its record (`into_record`, `save_file`) holds the pattern, the values and the bias; it loads
/// into a layer of the same shape and entry count, which a [`SparseLinearConfig`] with the same
/// sizes and density builds whatever its seed.
#[derive(Module, Debug)]
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
}

/// int32 indices when they fit (half the memory of int64; the kernels take both).
fn index_dtype(d_input: usize, nnz: usize) -> DType {
    if d_input.max(nnz) <= i32::MAX as usize {
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

impl SparseLinearConfig {
    /// A layer with a uniformly random pattern of `round(density * d_input * d_output)` entries.
    /// Panics on a density outside `[0, 1]` (see [`SparseLinearConfig::try_init`]).
    pub fn init(&self, device: &Device) -> SparseLinear {
        self.try_init(device).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`SparseLinearConfig::init`] returning the error.
    pub fn try_init(&self, device: &Device) -> Checked<SparseLinear> {
        let shape = [self.d_output, self.d_input];
        let numel = self.d_output.checked_mul(self.d_input).ok_or(SparseError::ElementCountOverflow { shape: shape.to_vec() })?;
        let nnz = kept_count(numel, self.density, "SparseLinearConfig::init")?;
        // The top-k of i.i.d. uniform scores is a uniformly random k-subset.
        let scores: Vec<f64> = match self.seed {
            Some(seed) => {
                let mut rng = MaskRng::new(seed);
                (0..numel).map(|_| rng.next_unit()).collect()
            }
            None => Tensor::<1>::random([numel], Distribution::Uniform(0.0, 1.0), device).into_data().iter::<f64>().collect(),
        };
        let (crow, col) = csr_indices(&top_k_positions(&scores, nnz), self.d_output, self.d_input);
        Ok(self.with_indices(crow, col, device))
    }

    /// A layer on the pattern of `pattern` (its values are ignored; the layer's are initialised
    /// by the configured initializer). Errors when its shape is not `[d_output, d_input]` or it
    /// has dense dims.
    pub fn init_with_pattern(&self, pattern: &SparseTensor<2>, device: &Device) -> Checked<SparseLinear> {
        let expected = [self.d_output, self.d_input];
        if pattern.shape() != expected {
            return Err(SparseError::ShapeMismatch { component: "pattern", expected: expected.to_vec(), actual: pattern.shape().to_vec() });
        }
        let (crow, col, _) = csr_parts(pattern, "SparseLinearConfig::init_with_pattern")?;
        let read = |t: Tensor<1, Int>| t.into_data().iter::<i64>().collect::<Vec<_>>();
        Ok(self.with_indices(read(crow), read(col), device))
    }

    fn with_indices(&self, crow: Vec<i64>, col: Vec<i64>, device: &Device) -> SparseLinear {
        let nnz = col.len();
        let dtype = index_dtype(self.d_input, nnz);
        let (fan_in, fan_out) = fans(nnz, self.d_input, self.d_output);
        SparseLinear {
            crow: index_param(int_tensor(crow, [self.d_output + 1], dtype, device)),
            col: index_param(int_tensor(col, [nnz], dtype, device)),
            values: self.initializer.init_with([nnz], Some(fan_in), Some(fan_out), device),
            bias: self.bias.then(|| self.initializer.init_with([self.d_output], Some(fan_in), Some(fan_out), device)),
            d_input: self.d_input,
        }
    }
}

/// `(crow [rows + 1], col [nnz], values [nnz])` of a 2-D sparse tensor without dense dims, in
/// CSR (other layouts converted; the values keep their autodiff graph).
fn csr_parts(weight: &SparseTensor<2>, operation: &'static str) -> Checked<(Tensor<1, Int>, Tensor<1, Int>, Tensor<1>)> {
    if weight.dense_dim() > 0 {
        return Err(SparseError::InvalidArgument { operation, message: format!("the weight has {} dense dims; its values must be scalars", weight.dense_dim()) });
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
                return Err(SparseError::ShapeMismatch { component: "bias", expected: vec![d_output], actual: b.dims().to_vec() });
            }
        }
        Ok(Self {
            crow: index_param(crow),
            col: index_param(col),
            values: Param::from_tensor(values.detach()),
            bias: bias.map(|b| Param::from_tensor(b.detach())),
            d_input,
        })
    }

    /// Magnitude pruning of a dense layer: the `round(density * d_input * d_output)` weights of
    /// largest magnitude are kept (ties to the earlier position of `Wᵀ`), the bias is copied.
    /// Errors on a density outside `[0, 1]`.
    pub fn from_linear(linear: &Linear, density: f64) -> Checked<Self> {
        // burn's Linear stores `[d_input, d_output]`; this layer's `W` is its transpose.
        let w = linear.weight.val().detach().transpose();
        let [d_output, d_input] = w.dims();
        let nnz = kept_count(d_output * d_input, density, "SparseLinear::from_linear")?;
        let positions = top_k_positions(&magnitudes(&w), nnz);
        let weight = csr_at_positions(w, &positions, index_dtype(d_input, nnz))?;
        Self::from_weight(&weight, linear.bias.as_ref().map(|b| b.val()))
    }

    /// Rows of `W`.
    pub fn d_output(&self) -> usize {
        self.crow.val().dims()[0] - 1
    }

    /// Stored entries of `W`.
    pub fn nnz(&self) -> usize {
        self.col.val().dims()[0]
    }

    /// `nnz / (d_output * d_input)`.
    pub fn density(&self) -> f64 {
        self.nnz() as f64 / (self.d_output() * self.d_input).max(1) as f64
    }

    /// `W` as a CSR tensor sharing the layer's index and value tensors (differentiable w.r.t.
    /// the values on an autodiff device).
    pub fn weight(&self) -> SparseTensor<2> {
        SparseTensor::csr_unchecked(self.crow.val(), self.col.val(), self.values.val(), [self.d_output(), self.d_input])
    }

    /// Bytes the parameters occupy: values, both index arrays and the bias.
    pub fn memory_bytes(&self) -> usize {
        let bias = self.bias.as_ref().map_or(0, |b| {
            let b = b.val();
            b.dims()[0] * b.dtype().size()
        });
        self.weight().memory_bytes() + bias
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
