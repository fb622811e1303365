//! Ready-made node-classification models, PyG's `torch_geometric.nn.models.GCN`/`GAT` in burn's
//! Module/Config conventions, so the examples and a user's program train the same model:
//!
//! - [`Gcn`]: `num_layers` [`GcnConv`] layers with ReLU between them (Kipf & Welling 2017);
//! - [`Gat`]: `num_layers` [`GatConv`] layers, the hidden ones multi-head and concatenated with
//!   ELU, the last averaging `output_heads` heads (Veličković et al. 2018).
//!
//! Both take the node features dense (`forward`) or sparse (`forward_sparse`, bag-of-words
//! features that stay CSR), drop out the inputs (on a sparse input's stored values) and every
//! hidden layer while training (burn's dropout: off under `valid()` and on devices without
//! autodiff), and return the logits `[nodes, d_output]`. The propagation matrix is given to
//! every call: build it once (`gcn_norm`, [`GcnConv::propagation`],
//! [`GatConv::propagation_pattern`]).

use crate::dropout::{SparseDropout, SparseDropoutConfig};
use crate::gat::{GatConv, GatConvConfig};
use crate::gcn::{GcnConv, GcnConvConfig};
use burn::config::Config;
use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig};
use burn::tensor::activation::{elu, relu};
use burn::tensor::{Device, Tensor};
use sparsegrad_backend::error::invalid;
use sparsegrad_backend::SparseTensor;

type Checked<T> = sparsegrad_backend::Result<T>;

/// Errors for a model with no layer or a dropout probability outside `[0, 1)`.
fn check(operation: &'static str, num_layers: usize, dropout: f64) -> Checked<()> {
    if num_layers == 0 {
        return Err(invalid(operation, "num_layers must be at least 1"));
    }
    if !(0.0..1.0).contains(&dropout) {
        return Err(invalid(operation, format!("dropout = {dropout} is not in [0, 1)")));
    }
    Ok(())
}

/// Configuration of a [`Gcn`] (PyG's `GCN` arguments; the defaults are Kipf & Welling's
/// model but for the bias, which PyG's layers carry).
#[derive(Config, Debug)]
pub struct GcnConfig {
    /// Input features per node.
    pub d_input: usize,
    /// Outputs per node (the classes).
    pub d_output: usize,
    /// Features of every hidden layer.
    #[config(default = 16)]
    pub d_hidden: usize,
    /// Graph convolutions (1: a single `d_input -> d_output` layer).
    #[config(default = 2)]
    pub num_layers: usize,
    /// Dropout on the input features and on every hidden layer while training.
    #[config(default = 0.5)]
    pub dropout: f64,
    /// Whether every layer adds a bias.
    #[config(default = true)]
    pub bias: bool,
}

/// A graph convolutional network: `Â relu(... relu(Â X W_0) ...) W_last`, dropout before
/// every layer while training.
///
/// ```
/// use burn::tensor::{Device, Tensor};
/// use sparsegrad_nn::models::GcnConfig;
/// use sparsegrad_nn::gcn_norm;
///
/// let device = Device::flex();
/// let adj = gcn_norm(&[(0, 1), (1, 2), (2, 3)], 4, &device)?;
/// let model = GcnConfig::new(5, 3).init(&device)?;
/// let logits = model.forward(Tensor::<2>::ones([4, 5], &device), &adj);
/// assert_eq!(logits.dims(), [4, 3]);
/// # Ok::<(), sparsegrad_backend::SparseError>(())
/// ```
#[derive(Module, Debug)]
pub struct Gcn {
    /// The graph convolutions, first to last.
    pub layers: Vec<GcnConv>,
    /// Dropout on a sparse input's stored values.
    pub input_dropout: SparseDropout,
    /// Dropout on dense inputs and hidden layers.
    pub dropout: Dropout,
}

impl GcnConfig {
    /// A new model on `device`. Errors when `num_layers` is 0 or `dropout` is not in `[0, 1)`.
    pub fn init(&self, device: &Device) -> Checked<Gcn> {
        check("GcnConfig::init", self.num_layers, self.dropout)?;
        let layers = (0..self.num_layers)
            .map(|l| {
                let d_in = if l == 0 { self.d_input } else { self.d_hidden };
                let d_out = if l + 1 == self.num_layers { self.d_output } else { self.d_hidden };
                GcnConvConfig::new(d_in, d_out).with_bias(self.bias).init(device)
            })
            .collect();
        Ok(Gcn {
            layers,
            input_dropout: SparseDropoutConfig::new(self.dropout).init(),
            dropout: DropoutConfig::new(self.dropout).init(),
        })
    }
}

impl Gcn {
    /// Logits `[nodes, d_output]` for dense features `x [nodes, d_input]`.
    pub fn forward(&self, x: Tensor<2>, adj: &SparseTensor<2>) -> Tensor<2> {
        let first = &self.layers[0];
        self.rest(adj, first.forward(self.dropout.forward(x), adj))
    }

    /// Logits for sparse features (dropout on their stored values; `X W_0` a sparse product).
    pub fn forward_sparse(&self, x: &SparseTensor<2>, adj: &SparseTensor<2>) -> Tensor<2> {
        let first = &self.layers[0];
        self.rest(adj, first.forward_sparse(&self.input_dropout.forward(x), adj))
    }

    /// The layers after the first, given the first's output.
    fn rest(&self, adj: &SparseTensor<2>, mut h: Tensor<2>) -> Tensor<2> {
        for layer in &self.layers[1..] {
            h = layer.forward(self.dropout.forward(relu(h)), adj);
        }
        h
    }
}

/// Configuration of a [`Gat`] (the defaults are the paper's Cora model: 8 heads of 8 features,
/// one output head, dropout 0.6 on the inputs, the hidden layer and the attention).
#[derive(Config, Debug)]
pub struct GatConfig {
    /// Input features per node.
    pub d_input: usize,
    /// Outputs per node (the classes).
    pub d_output: usize,
    /// Features per head of every hidden layer.
    #[config(default = 8)]
    pub d_hidden: usize,
    /// Heads of every hidden layer (concatenated).
    #[config(default = 8)]
    pub heads: usize,
    /// Heads of the last layer (averaged; the paper uses 8 on PubMed).
    #[config(default = 1)]
    pub output_heads: usize,
    /// Attention layers (1: a single averaging layer `d_input -> d_output`).
    #[config(default = 2)]
    pub num_layers: usize,
    /// Dropout on the inputs, every hidden layer and the attention coefficients while training.
    #[config(default = 0.6)]
    pub dropout: f64,
    /// Dropout on each head's projected features where they are aggregated
    /// ([`GatConvConfig::feature_dropout`]; the paper's code uses `dropout` there, PyG none).
    #[config(default = 0.0)]
    pub feature_dropout: f64,
}

/// A graph attention network: ELU between the layers, dropout before every layer and on the
/// attention coefficients while training.
#[derive(Module, Debug)]
pub struct Gat {
    /// The attention layers, first to last.
    pub layers: Vec<GatConv>,
    /// Dropout on a sparse input's stored values.
    pub input_dropout: SparseDropout,
    /// Dropout on dense inputs and hidden layers.
    pub dropout: Dropout,
}

impl GatConfig {
    /// A new model on `device`. Errors when `num_layers`, `heads` or `output_heads` is 0 or
    /// `dropout` or `feature_dropout` is not in `[0, 1)`.
    pub fn init(&self, device: &Device) -> Checked<Gat> {
        const OP: &str = "GatConfig::init";
        check(OP, self.num_layers, self.dropout)?;
        if !(0.0..1.0).contains(&self.feature_dropout) {
            return Err(invalid(OP, format!("feature_dropout = {} is not in [0, 1)", self.feature_dropout)));
        }
        if self.heads == 0 || self.output_heads == 0 {
            return Err(invalid(
                OP,
                format!("heads = {} and output_heads = {} must be at least 1", self.heads, self.output_heads),
            ));
        }
        let layers = (0..self.num_layers)
            .map(|l| {
                let d_in = if l == 0 { self.d_input } else { self.d_hidden * self.heads };
                let config = if l + 1 == self.num_layers {
                    GatConvConfig::new(d_in, self.d_output).with_heads(self.output_heads).with_concat(false)
                } else {
                    GatConvConfig::new(d_in, self.d_hidden).with_heads(self.heads)
                };
                config.with_dropout(self.dropout).with_feature_dropout(self.feature_dropout).init(device)
            })
            .collect();
        Ok(Gat {
            layers,
            input_dropout: SparseDropoutConfig::new(self.dropout).init(),
            dropout: DropoutConfig::new(self.dropout).init(),
        })
    }
}

impl Gat {
    /// Logits `[nodes, d_output]` for dense features `x [nodes, d_input]` over `adj`'s pattern
    /// (with self loops: [`GatConv::propagation_pattern`] or `adjacency_with_self_loops`).
    pub fn forward(&self, x: Tensor<2>, adj: &SparseTensor<2>) -> Tensor<2> {
        self.rest(adj, self.layers[0].forward(self.dropout.forward(x), adj))
    }

    /// Logits for sparse features (dropout on their stored values).
    pub fn forward_sparse(&self, x: &SparseTensor<2>, adj: &SparseTensor<2>) -> Tensor<2> {
        let first = &self.layers[0];
        self.rest(adj, first.forward_sparse(&self.input_dropout.forward(x), adj))
    }

    fn rest(&self, adj: &SparseTensor<2>, mut h: Tensor<2>) -> Tensor<2> {
        for layer in &self.layers[1..] {
            h = layer.forward(self.dropout.forward(elu(h, 1.0)), adj);
        }
        h
    }

    /// The sum of squares of every parameter (weights, attention vectors and biases): the
    /// paper's L2 penalty, to be scaled by half the weight decay and added to the loss. The
    /// paper's code regularises every trainable variable (its bias filter compares full variable
    /// names and so never matches), as PyG's example does with Adam's `weight_decay`.
    pub fn l2_penalty(&self) -> Tensor<1> {
        let sq = |t: Tensor<2>| (t.clone() * t).sum();
        let sq1 = |t: Tensor<1>| (t.clone() * t).sum();
        self.layers
            .iter()
            .map(|l| {
                let w = sq(l.weight.val()) + sq(l.att_src.val()) + sq(l.att_dst.val());
                match &l.bias {
                    Some(b) => w + sq1(b.val()),
                    None => w,
                }
            })
            .reduce(|a, b| a + b)
            .expect("at least one layer")
    }
}
