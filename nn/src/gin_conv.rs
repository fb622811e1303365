//! The graph isomorphism network layer (Xu et al. 2019) as PyG's `GINConv`: `out_i = MLP((1 +
//! eps) · x_i + sum_{j -> i} x_j)`, the sum the sparse product over the propagation matrix
//! `adj[i, j]` (edge `j -> i`; `edge_index::to_propagation_matrix`), `eps` fixed or trainable.
//! The network is any module implementing [`GinNetwork`] ([`GinConv::new`]); the config builds
//! the paper's two-layer MLP ([`GinMlp`]: `Linear`, ReLU, `Linear`).

use crate::aggregation::targets;
use burn::config::Config;
use burn::module::{Module, Param};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{activation::relu, Tensor};
use sparsegrad_autodiff::matmul::mm;
use sparsegrad_backend::SparseTensor;

/// Configuration of a [`GinConv`] layer.
#[derive(Config, Debug)]
pub struct GinConvConfig {
    /// Input features per node.
    pub d_input: usize,
    /// Hidden features of the MLP.
    pub d_hidden: usize,
    /// Output features per node.
    pub d_output: usize,
    /// The initial `eps` (PyG's default 0).
    #[config(default = 0.0)]
    pub eps: f64,
    /// Whether `eps` is trained (PyG's `train_eps`).
    #[config(default = false)]
    pub train_eps: bool,
}

/// The network a [`GinConv`] applies to the aggregated features `[n, d]`.
pub trait GinNetwork: Module {
    /// The network on node features `[n, d_in]`.
    fn forward(&self, x: Tensor<2>) -> Tensor<2>;
}

impl GinNetwork for Linear {
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        Linear::forward(self, x)
    }
}

/// The two-layer MLP of a [`GinConv`]: `lin2(relu(lin1(x)))`.
#[derive(Module, Debug)]
pub struct GinMlp {
    /// `[d_input, d_hidden]` with bias.
    pub lin1: Linear,
    /// `[d_hidden, d_output]` with bias.
    pub lin2: Linear,
}

impl GinNetwork for GinMlp {
    /// `lin2(relu(lin1(x)))`.
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.lin2.forward(relu(self.lin1.forward(x)))
    }
}

/// A GIN layer with the network `M` (the config's [`GinMlp`] by default).
///
/// # Examples
///
/// ```
/// use burn::tensor::{Device, Tensor};
/// use sparsegrad_nn::{gcn_norm, GinConvConfig};
///
/// let device = Device::flex();
/// let adj = gcn_norm(&[(0, 1), (1, 2)], 3, &device)?;
/// let conv = GinConvConfig::new(4, 8, 2).with_train_eps(true).init(&device);
/// assert_eq!(conv.forward(Tensor::<2>::ones([3, 4], &device), &adj).dims(), [3, 2]);
/// # Ok::<(), sparsegrad_backend::SparseError>(())
/// ```
#[derive(Module, Debug)]
pub struct GinConv<M: GinNetwork = GinMlp> {
    /// The network applied to the aggregated features.
    pub mlp: M,
    /// `eps` `[1]`, when trained.
    pub eps_param: Option<Param<Tensor<1>>>,
    /// `eps` when fixed.
    pub eps: f64,
}

impl GinConvConfig {
    /// A new layer on `device` (burn's default initialisation of the linear maps).
    pub fn init(&self, device: &burn::tensor::Device) -> GinConv {
        let mlp = GinMlp {
            lin1: LinearConfig::new(self.d_input, self.d_hidden).init(device),
            lin2: LinearConfig::new(self.d_hidden, self.d_output).init(device),
        };
        GinConv::new(mlp, self.eps, self.train_eps, device)
    }
}

impl<M: GinNetwork> GinConv<M> {
    /// A layer with the network `mlp` and the initial `eps`, trained when `train_eps` (a `[1]`
    /// parameter in the default float dtype of `device`).
    pub fn new(mlp: M, eps: f64, train_eps: bool, device: &burn::tensor::Device) -> Self {
        let eps_param = train_eps.then(|| Param::from_tensor(Tensor::<1>::from_data([eps as f32], device)));
        GinConv { mlp, eps_param, eps }
    }

    /// `(1 + eps) · x_i + sum_{j -> i} adj[i, j] · x_j`: the MLP's input.
    pub fn aggregate(&self, x: Tensor<2>, adj: &SparseTensor<2>) -> Tensor<2> {
        let own = targets(adj, x.clone());
        let root = match &self.eps_param {
            Some(eps) => own * (eps.val().cast(x.dtype()) + 1.0).unsqueeze::<2>(),
            None => own * (1.0 + self.eps),
        };
        mm(adj, x) + root
    }

    /// The layer on node features `x [n, d_input]` over the propagation matrix `adj [n, n]`,
    /// or a sampled block `adj [dst, n]` whose targets are the first `dst` nodes.
    pub fn forward(&self, x: Tensor<2>, adj: &SparseTensor<2>) -> Tensor<2> {
        self.mlp.forward(self.aggregate(x, adj))
    }
}
