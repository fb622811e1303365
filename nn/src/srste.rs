//! `SrsteLinear`: 2:4 sparse training from scratch with SR-STE (Zhou et al. 2021, "Learning N:M
//! fine-grained structured sparse neural networks from scratch").
//!
//! The layer keeps DENSE master weights `W [d_output, d_input]` and a bias as ordinary float
//! parameters (so `#[derive(Module)]`, burn's optimizers and records apply as to `Linear`). Every
//! forward pass prunes `W` 2:4 along the input features by magnitude ([`n_m_mask`]'s rule: the
//! two largest of each group of four, ties to the earlier position) and runs `x · W̃ᵀ + b`
//! through the 2:4 kernel, `W̃` the pruned weight. The backward rule (the autodiff crate's
//! `srste_linear`) gives the master weights the straight-through gradient on every element plus
//! the sparse-refined decay on the pruned ones:
//!
//! `dL/dW = g(W̃) + λ_W (1 − mask) ⊙ W`, `g(W̃)` the gradient of the loss w.r.t. the pruned weight,
//!
//! a dense `[d_output, d_input]` gradient: the method needs it, since a pruned weight whose
//! gradient pushes it up must be able to come back. The decay `λ_W` ([`SrsteLinear::decay`],
//! the paper's default `2e-4`) pulls the pruned weights towards zero, so the mask settles.
//!
//! At the end of training [`SrsteLinear::to_semi_structured`] gives the deployable
//! [`SemiStructuredLinear`] (the kept values and their metadata, no dense weight), whose forward
//! is this layer's forward.
//!
//! [`n_m_mask`]: crate::prune::n_m_mask

use crate::prune::{n_m_mask, prune_2_4};
use crate::semi_structured_linear::SemiStructuredLinear;
use burn::config::Config;
use burn::module::{Module, Param};
use burn::nn::{Initializer, Linear, LinearConfig};
use burn::tensor::{Bool, Device, Tensor};
use sparsegrad_autodiff::srste::srste_linear;
use sparsegrad_backend::semi_structured::{SemiPattern, SemiStructuredTensor};
use sparsegrad_backend::SparseError;

// Not `Result`: the `Config` derive expands to code naming the std `Result`.
type Checked<T> = sparsegrad_backend::Result<T>;

/// Configuration of a [`SrsteLinear`] layer, with burn's `LinearConfig` conventions.
#[derive(Config, Debug)]
pub struct SrsteLinearConfig {
    /// Input features (a multiple of 4: whole groups).
    pub d_input: usize,
    /// Output features.
    pub d_output: usize,
    /// Whether to add a bias.
    #[config(default = true)]
    pub bias: bool,
    /// Initializer of the master weight and the bias (burn's `Linear` default).
    #[config(default = "Initializer::KaimingUniform{gain:0.5773502691896258, fan_out_only:false}")]
    pub initializer: Initializer,
    /// The sparse-refined decay `λ_W` on the pruned weights (the paper's `2e-4`).
    #[config(default = 2e-4)]
    pub decay: f64,
}

/// A linear layer trained 2:4-sparse with SR-STE: `y = x W̃ᵀ + b`, `W̃` the dense master weight
/// pruned 2:4 at every step (see the module docs).
///
/// ```
/// use burn::tensor::{Device, Tensor, Tolerance};
/// use sparsegrad_nn::{prune_2_4, SrsteLinearConfig};
///
/// let device = Device::flex();
/// let layer = SrsteLinearConfig::new(8, 4).init(&device);
/// let x = Tensor::<2>::ones([3, 8], &device);
/// let y = layer.forward(x.clone());
/// // The dense layer of the pruned master weight.
/// let w = prune_2_4(layer.weight.val()).unwrap(); // [4, 8]
/// let dense = x.clone().matmul(w.transpose()) + layer.bias.as_ref().unwrap().val().unsqueeze();
/// y.clone().into_data().assert_approx_eq::<f32>(&dense.into_data(), Tolerance::default());
/// // The deployable 2:4 layer computes the same.
/// let deployed = layer.to_semi_structured().unwrap();
/// deployed.forward(x).into_data().assert_approx_eq::<f32>(&y.into_data(), Tolerance::default());
/// ```
#[derive(Module, Debug)]
pub struct SrsteLinear {
    /// The dense master weight `[d_output, d_input]` (this layer's `W`, untransposed; burn's
    /// `Linear` stores the transpose).
    pub weight: Param<Tensor<2>>,
    /// `[d_output]`.
    pub bias: Option<Param<Tensor<1>>>,
    /// The sparse-refined decay `λ_W` added to the gradient of the pruned weights.
    pub decay: f64,
}

fn check_width(d_input: usize, operation: &'static str) -> Checked<()> {
    if !d_input.is_multiple_of(4) {
        return Err(SparseError::InvalidArgument {
            operation,
            message: format!("d_input = {d_input} is not a multiple of 4 (whole 2:4 groups)"),
        });
    }
    Ok(())
}

impl SrsteLinearConfig {
    /// A layer initialised as burn's `Linear` (the same draws, stored transposed). Panics when
    /// `d_input` is not a multiple of 4 (see [`SrsteLinearConfig::try_init`]).
    pub fn init(&self, device: &Device) -> SrsteLinear {
        self.try_init(device).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`SrsteLinearConfig::init`] returning the error: `d_input` not a multiple of 4, or a
    /// decay that is not finite.
    pub fn try_init(&self, device: &Device) -> Checked<SrsteLinear> {
        check_width(self.d_input, "SrsteLinearConfig::init")?;
        let dense = LinearConfig::new(self.d_input, self.d_output)
            .with_bias(self.bias)
            .with_initializer(self.initializer.clone())
            .init(device);
        SrsteLinear::from_linear(&dense, self.decay)
    }
}

impl SrsteLinear {
    /// A layer whose master weight is a dense layer's (transposed to `[d_output, d_input]`),
    /// bias copied, both new trainable parameters: SR-STE fine-tuning of a trained dense layer.
    /// Errors when `d_input` is not a multiple of 4 or `decay` is not finite.
    pub fn from_linear(linear: &Linear, decay: f64) -> Checked<Self> {
        let [d_input, _] = linear.weight.val().dims();
        check_width(d_input, "SrsteLinear::from_linear")?;
        if !decay.is_finite() {
            return Err(SparseError::InvalidArgument {
                operation: "SrsteLinear::from_linear",
                message: format!("decay {decay} is not finite"),
            });
        }
        // burn's Linear stores `[d_input, d_output]`; this layer's `W` is its transpose. Detached
        // last: a parameter must be a leaf of the autodiff graph.
        let weight = linear.weight.val().transpose().detach();
        Ok(Self {
            weight: Param::from_tensor(weight),
            bias: linear.bias.as_ref().map(|b| Param::from_tensor(b.val().detach())),
            decay,
        })
    }

    /// Columns of `W`.
    pub fn d_input(&self) -> usize {
        self.weight.val().dims()[1]
    }

    /// Rows of `W`.
    pub fn d_output(&self) -> usize {
        self.weight.val().dims()[0]
    }

    /// The current 2:4 keep mask of the master weight `[d_output, d_input]` (true where kept):
    /// what the next forward pass uses. Errors when `d_input` is not a multiple of 4.
    pub fn mask(&self) -> Checked<Tensor<2, Bool>> {
        n_m_mask(&self.weight.val(), 2, 4)
    }

    /// The master weight pruned 2:4 and compressed: its kept values (detached from the graph)
    /// and their metadata. Errors when `d_input` is not a multiple of 4.
    pub fn pruned_weight(&self) -> Checked<SemiStructuredTensor> {
        SemiStructuredTensor::from_dense(prune_2_4(self.weight.val().detach())?, SemiPattern::TwoFour)
    }

    /// The deployable layer: the master weight pruned 2:4 ([`SrsteLinear::pruned_weight`]) and
    /// the bias, as a [`SemiStructuredLinear`] whose forward equals this layer's.
    pub fn to_semi_structured(&self) -> Checked<SemiStructuredLinear> {
        SemiStructuredLinear::from_weight(&self.pruned_weight()?, self.bias.as_ref().map(|b| b.val()))
    }

    /// `x W̃ᵀ + b` for `input [..., d_input]`, giving `[..., d_output]`, `W̃` the master weight
    /// pruned 2:4 now; on an autodiff device the master weight gets SR-STE's gradient (see the
    /// module docs). Panics when the last axis is not `d_input` or `d_input` is not a multiple
    /// of 4, naming them.
    pub fn forward<const D: usize>(&self, input: Tensor<D>) -> Tensor<D> {
        let weight = self.weight.val();
        let pattern = self.pruned_weight().unwrap_or_else(|e| panic!("SrsteLinear: {e}"));
        srste_linear(input, weight, &pattern, self.decay, self.bias.as_ref().map(|b| b.val()))
    }
}
