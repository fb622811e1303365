//! `SemiStructuredLinear`: a linear layer `y = x Wᵀ + b` whose weight `W [d_output, d_input]`
//! is 2:4 semi-structured along its input features (two of every four consecutive weights of
//! a row kept), trained on its kept values.
//!
//! The metadata (where the kept values sit) is an Int parameter, so burn records save and load
//! it with the values while optimizers, which only see float parameters, never move it. The
//! product is the differentiable 2:4 `linear` of the autodiff crate: half the multiply-adds of
//! the dense layer forward, and a backward rule that puts the weight's gradient on the kept
//! values only — the layer stays 2:4 while it trains.
//!
//! Built fresh ([`SemiStructuredLinearConfig::init`]: burn's `Linear` initialisation, then 2:4
//! magnitude pruning), from a dense `burn::nn::Linear` by pruning
//! ([`SemiStructuredLinear::from_linear`]) or from a compressed weight
//! ([`SemiStructuredLinear::from_weight`]).

use crate::prune::prune_2_4;
use burn::config::Config;
use burn::module::{Module, Param, ParamId};
use burn::nn::{Initializer, Linear, LinearConfig};
use burn::tensor::{Device, Int, Tensor};
use sparsegrad_autodiff::semi_structured::linear;
use sparsegrad_backend::semi_structured::{SemiPattern, SemiStructuredTensor};
use sparsegrad_backend::SparseError;

// Not `Result`: the `Config` derive expands to code naming the std `Result`.
type Checked<T> = sparsegrad_backend::Result<T>;

/// Configuration of a [`SemiStructuredLinear`] layer, with burn's `LinearConfig` conventions.
#[derive(Config, Debug)]
pub struct SemiStructuredLinearConfig {
    /// Input features (a multiple of 4: whole groups).
    pub d_input: usize,
    /// Output features.
    pub d_output: usize,
    /// Whether to add a bias.
    #[config(default = true)]
    pub bias: bool,
    /// Initializer of the dense weight before pruning, and of the bias (burn's `Linear` default).
    #[config(default = "Initializer::KaimingUniform{gain:0.5773502691896258, fan_out_only:false}")]
    pub initializer: Initializer,
}

/// A linear layer with a 2:4 weight: `y = x Wᵀ + b`.
#[derive(Module, Debug)]
pub struct SemiStructuredLinear {
    /// The kept weights `[d_output, d_input / 2]`: the trainable values.
    pub values: Param<Tensor<2>>,
    /// Metadata words `[d_output, ceil(d_input / 16)]` (`i16`, torch's layout).
    pub metadata: Param<Tensor<2, Int>>,
    /// `[d_output]`.
    pub bias: Option<Param<Tensor<1>>>,
    /// Columns of `W`.
    pub d_input: usize,
}

impl SemiStructuredLinearConfig {
    /// A layer initialised as burn's `Linear` and pruned to 2:4 by magnitude. Panics when
    /// `d_input` is not a multiple of 4 (see [`SemiStructuredLinearConfig::try_init`]).
    pub fn init(&self, device: &Device) -> SemiStructuredLinear {
        self.try_init(device).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`SemiStructuredLinearConfig::init`] returning the error.
    pub fn try_init(&self, device: &Device) -> Checked<SemiStructuredLinear> {
        let dense = LinearConfig::new(self.d_input, self.d_output).with_bias(self.bias).with_initializer(self.initializer.clone()).init(device);
        SemiStructuredLinear::from_linear(&dense)
    }
}

impl SemiStructuredLinear {
    /// 2:4 magnitude pruning of a dense layer: in every group of four consecutive input
    /// features of an output's weights the two largest magnitudes are kept; the bias is copied.
    /// Errors when `d_input` is not a multiple of 4.
    pub fn from_linear(linear: &Linear) -> Checked<Self> {
        // burn's Linear stores `[d_input, d_output]`; this layer's `W` is its transpose.
        let w = linear.weight.val().detach().transpose();
        let weight = SemiStructuredTensor::from_dense(prune_2_4(w)?, SemiPattern::TwoFour)?;
        Self::from_weight(&weight, linear.bias.as_ref().map(|b| b.val()))
    }

    /// A layer with the compressed weight `[d_output, d_input]` (stored untransposed, the
    /// kernel's fast arrangement) and bias `[d_output]`; values and bias become new trainable
    /// parameters (detached from any graph).
    pub fn from_weight(weight: &SemiStructuredTensor, bias: Option<Tensor<1>>) -> Checked<Self> {
        if weight.is_transposed() {
            return Err(SparseError::InvalidArgument {
                operation: "SemiStructuredLinear::from_weight",
                message: "the weight must be stored as [d_output, d_input] (compressed along the input features), not transposed".into(),
            });
        }
        let [d_output, d_input] = weight.shape();
        if let Some(b) = &bias {
            if b.dims() != [d_output] {
                return Err(SparseError::ShapeMismatch { component: "bias", expected: vec![d_output], actual: b.dims().to_vec() });
            }
        }
        Ok(Self {
            values: Param::from_tensor(weight.values().detach()),
            metadata: Param::initialized(ParamId::new(), weight.metadata()),
            bias: bias.map(|b| Param::from_tensor(b.detach())),
            d_input,
        })
    }

    /// Rows of `W`.
    pub fn d_output(&self) -> usize {
        self.values.val().dims()[0]
    }

    /// `W` as a semi-structured tensor sharing the layer's tensors (differentiable w.r.t. the
    /// values on an autodiff device).
    pub fn weight(&self) -> SemiStructuredTensor {
        SemiStructuredTensor::from_parts_unchecked(self.values.val(), self.metadata.val(), self.d_input, SemiPattern::TwoFour)
    }

    /// Bytes the parameters occupy: kept values, metadata words and the bias.
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
        linear(input, &self.weight(), self.bias.as_ref().map(|b| b.val()))
    }
}
