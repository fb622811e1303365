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
//!
//! Records are untrusted, and the 2:4 kernels read the slots of the metadata words unchecked.
//! As for `SparseLinear`, the `Module` impl is written out to override `try_load_record`, which
//! refuses metadata that is not valid 2:4 (slots ascending within each group, no bits past the
//! last group) with a `RecordError`; and [`SemiStructuredLinear::weight`] builds the weight with
//! the checked `SemiStructuredTensor::from_parts` (one pass over `rows * cols / 16` words, once
//! per metadata tensor: the layer's [`PatternMemo`] recognises the words it already checked),
//! for layers loaded inside a bigger module or with their public fields set by hand.

use crate::prune::prune_2_4;
use burn::config::Config;
use burn::module::{
    Content, Devices, Module, ModuleDisplay, ModuleDisplayDefault, ModuleMapper, ModuleVisitor, Param, ParamId,
};
use burn::nn::{Initializer, Linear, LinearConfig};
use burn::store::{ModuleRecord, RecordError};
use burn::tensor::{Device, Int, Tensor};
use sparsegrad_autodiff::semi_structured::linear;
use sparsegrad_backend::memo::PatternMemo;
use sparsegrad_backend::record::load_checked;
use sparsegrad_backend::semi_structured::{SemiPattern, SemiStructuredTensor};
use sparsegrad_backend::SparseError;
use std::fmt;

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
///
/// Its record holds the kept values, the metadata and the bias; loading checks the metadata
/// (see the module docs).
///
/// ```
/// use burn::tensor::{Device, Tensor};
/// use sparsegrad_nn::SemiStructuredLinearConfig;
///
/// let device = Device::flex();
/// let layer = SemiStructuredLinearConfig::new(8, 4).init(&device);
/// let y = layer.forward(Tensor::<2>::ones([3, 8], &device));
/// assert_eq!(y.dims(), [3, 4]);
/// // The same as the dense layer of its decompressed weight: half of each group of 4 is zero.
/// let w = layer.weight().to_dense(); // [4, 8]
/// let zeros = w.clone().equal_elem(0.0).int().sum().into_scalar::<i64>();
/// assert!(zeros >= 16, "{zeros} zeros in a 2:4 weight of 32 elements");
/// let dense = Tensor::<2>::ones([3, 8], &device).matmul(w.transpose()) + layer.bias.as_ref().unwrap().val().unsqueeze();
/// y.into_data().assert_approx_eq::<f32>(&dense.into_data(), burn::tensor::Tolerance::default());
/// ```
#[derive(Clone, Debug)]
pub struct SemiStructuredLinear {
    /// The kept weights `[d_output, d_input / 2]`: the trainable values.
    pub values: Param<Tensor<2>>,
    /// Metadata words `[d_output, ceil(d_input / 16)]` (`i16`, torch's layout; `i32` on a device
    /// without 16-bit integers).
    pub metadata: Param<Tensor<2, Int>>,
    /// `[d_output]`.
    pub bias: Option<Param<Tensor<1>>>,
    /// Columns of `W`.
    pub d_input: usize,
    /// The metadata tensor last checked, so [`SemiStructuredLinear::weight`] checks it once,
    /// not at every forward pass (see [`PatternMemo`]). `PatternMemo::default()` for a layer
    /// built by hand.
    pub memo: PatternMemo<2>,
}

impl SemiStructuredLinearConfig {
    /// A layer initialised as burn's `Linear` and pruned to 2:4 by magnitude. Panics when
    /// `d_input` is not a multiple of 4 (see [`SemiStructuredLinearConfig::try_init`]).
    pub fn init(&self, device: &Device) -> SemiStructuredLinear {
        self.try_init(device).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`SemiStructuredLinearConfig::init`] returning the error.
    pub fn try_init(&self, device: &Device) -> Checked<SemiStructuredLinear> {
        let dense = LinearConfig::new(self.d_input, self.d_output)
            .with_bias(self.bias)
            .with_initializer(self.initializer.clone())
            .init(device);
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
                return Err(SparseError::ShapeMismatch {
                    component: "bias",
                    expected: vec![d_output],
                    actual: b.dims().to_vec(),
                });
            }
        }
        Ok(Self {
            values: Param::from_tensor(weight.values().detach()),
            metadata: Param::initialized(ParamId::new(), weight.metadata()),
            bias: bias.map(|b| Param::from_tensor(b.detach())),
            d_input,
            memo: PatternMemo::new(),
        })
    }

    /// Rows of `W`.
    pub fn d_output(&self) -> usize {
        self.values.val().dims()[0]
    }

    /// `W` as a semi-structured tensor sharing the layer's values (differentiable w.r.t. them
    /// on an autodiff device), built by the checked `SemiStructuredTensor::from_parts` (the
    /// metadata checked once per tensor, see [`PatternMemo`]). Panics
    /// with the violation when the parts do not make a valid 2:4 weight (see
    /// [`SemiStructuredLinear::try_weight`]).
    pub fn weight(&self) -> SemiStructuredTensor {
        self.try_weight().unwrap_or_else(|e| panic!("SemiStructuredLinear: invalid weight: {e}"))
    }

    /// [`SemiStructuredLinear::weight`] returning the error: `d_input` not a multiple of 4,
    /// values not `[d_output, d_input / 2]` floats, metadata not `[d_output, ceil(d_input / 16)]`,
    /// or a metadata word whose slots are not a 2:4 group (or with bits past the last group).
    pub fn try_weight(&self) -> Checked<SemiStructuredTensor> {
        SemiStructuredTensor::from_parts_with_memo(
            self.values.val(),
            self.metadata.val(),
            self.d_input,
            SemiPattern::TwoFour,
            &self.memo,
        )
    }

    /// Checks the layer: its parts make a valid weight ([`SemiStructuredLinear::try_weight`])
    /// and the bias, if any, is `[d_output]`. What loading a record runs.
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

    /// Bytes the parameters occupy: kept values, metadata words (16 bits each, however the
    /// parameter stores them) and the bias.
    pub fn memory_bytes(&self) -> usize {
        let values = self.values.val();
        let bias = self.bias.as_ref().map_or(0, |b| {
            let b = b.val();
            b.dims()[0] * b.dtype().size()
        });
        values.shape().num_elements() * values.dtype().size() + self.metadata.val().shape().num_elements() * 2 + bias
    }

    /// `x Wᵀ + b` for `input [..., d_input]`, giving `[..., d_output]`. Panics when the last
    /// axis is not `d_input`, naming both.
    pub fn forward<const D: usize>(&self, input: Tensor<D>) -> Tensor<D> {
        linear(input, &self.weight(), self.bias.as_ref().map(|b| b.val()))
    }
}

const CONTAINER: &str = "Struct:SemiStructuredLinear";

/// What `#[derive(Module)]` generates for the fields, plus the checked `try_load_record`.
impl Module for SemiStructuredLinear {
    fn collect_devices(&self, devices: Devices) -> Devices {
        let devices = Module::collect_devices(&self.values, devices);
        let devices = Module::collect_devices(&self.metadata, devices);
        Module::collect_devices(&self.bias, devices)
    }

    fn fork(self, device: &Device) -> Self {
        Self {
            values: Module::fork(self.values, device),
            metadata: Module::fork(self.metadata, device),
            bias: Module::fork(self.bias, device),
            d_input: self.d_input,
            memo: PatternMemo::new(),
        }
    }

    fn to_device(self, device: &Device) -> Self {
        Self {
            values: Module::to_device(self.values, device),
            metadata: Module::to_device(self.metadata, device),
            bias: Module::to_device(self.bias, device),
            d_input: self.d_input,
            memo: PatternMemo::new(),
        }
    }

    fn train(self) -> Self {
        Self {
            values: Module::train(self.values),
            metadata: Module::train(self.metadata),
            bias: Module::train(self.bias),
            d_input: self.d_input,
            memo: PatternMemo::new(),
        }
    }

    fn valid(&self) -> Self {
        Self {
            values: Module::valid(&self.values),
            metadata: Module::valid(&self.metadata),
            bias: Module::valid(&self.bias),
            d_input: self.d_input,
            memo: PatternMemo::new(),
        }
    }

    fn materialize(self) -> Self {
        Self {
            values: Module::materialize(self.values),
            metadata: Module::materialize(self.metadata),
            bias: Module::materialize(self.bias),
            d_input: self.d_input,
            memo: PatternMemo::new(),
        }
    }

    fn visit<V: ModuleVisitor>(&self, visitor: &mut V) {
        visitor.enter_module("values", CONTAINER);
        Module::visit(&self.values, visitor);
        visitor.exit_module("values", CONTAINER);
        visitor.enter_module("metadata", CONTAINER);
        Module::visit(&self.metadata, visitor);
        visitor.exit_module("metadata", CONTAINER);
        visitor.enter_module("bias", CONTAINER);
        Module::visit(&self.bias, visitor);
        visitor.exit_module("bias", CONTAINER);
    }

    fn map<M: ModuleMapper>(self, mapper: &mut M) -> Self {
        mapper.enter_module("values", CONTAINER);
        let values = Module::map(self.values, mapper);
        mapper.exit_module("values", CONTAINER);
        mapper.enter_module("metadata", CONTAINER);
        let metadata = Module::map(self.metadata, mapper);
        mapper.exit_module("metadata", CONTAINER);
        mapper.enter_module("bias", CONTAINER);
        let bias = Module::map(self.bias, mapper);
        mapper.exit_module("bias", CONTAINER);
        Self { values, metadata, bias, d_input: self.d_input, memo: PatternMemo::new() }
    }

    /// Burn's loading, then [`SemiStructuredLinear::check`]: a record whose metadata is not
    /// valid 2:4 is a `RecordError::Validation` naming the word at fault.
    fn try_load_record(self, record: ModuleRecord) -> Result<Self, RecordError> {
        load_checked(self, record, "SemiStructuredLinear", Self::check)
    }
}

impl ModuleDisplayDefault for SemiStructuredLinear {
    fn content(&self, content: Content) -> Option<Content> {
        content
            .set_top_level_type("SemiStructuredLinear")
            .add("values", &self.values)
            .add("metadata", &self.metadata)
            .add("bias", &self.bias)
            .add_debug_attribute("d_input", &self.d_input)
            .optional()
    }

    fn num_params(&self) -> usize {
        Module::num_params(self)
    }
}

impl ModuleDisplay for SemiStructuredLinear {}

impl fmt::Display for SemiStructuredLinear {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", ModuleDisplay::format(self, Default::default()))
    }
}
