//! The graph convolution of Morris et al. (2019) as PyG's `GraphConv`: `out_i = W_rel ·
//! aggr_{j -> i} (e_ji · x_j) + b + W_root · x_i`, the aggregation (sum by default; mean, max,
//! min) a reduction of the sparse product `mm_reduce` over the propagation matrix `adj[i, j] =
//! e_ji` (edge `j -> i` with its weight; `edge_index::to_propagation_matrix` builds it).

use crate::aggregation::{targets, Aggregation};
use burn::config::Config;
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::Tensor;
use sparsegrad_backend::SparseTensor;

/// Configuration of a [`GraphConv`] layer.
#[derive(Config, Debug)]
pub struct GraphConvConfig {
    /// Input features per node.
    pub d_input: usize,
    /// Output features per node.
    pub d_output: usize,
    /// How the weighted messages are combined (PyG's default: sum).
    #[config(default = "Aggregation::Sum")]
    pub aggr: Aggregation,
    /// A bias on `lin_rel` (PyG's `bias`).
    #[config(default = true)]
    pub bias: bool,
}

/// A `GraphConv` layer.
///
/// # Examples
///
/// ```
/// use burn::tensor::{DType, Device, Int, Tensor, TensorData};
/// use sparsegrad_nn::{to_propagation_matrix, GraphConvConfig};
///
/// let device = Device::flex();
/// let edge_index = Tensor::<2, Int>::from_data(TensorData::new(vec![0i64, 1, 1, 2], [2, 2]), (&device, DType::I64));
/// let weights = Tensor::<1>::from_floats([0.5, 2.0], &device); // one per edge
/// let adj = to_propagation_matrix(&edge_index, Some(&weights), 3)?;
/// let conv = GraphConvConfig::new(4, 2).init(&device);
/// assert_eq!(conv.forward(Tensor::<2>::ones([3, 4], &device), &adj).dims(), [3, 2]);
/// # Ok::<(), sparsegrad_backend::SparseError>(())
/// ```
#[derive(Module, Debug)]
pub struct GraphConv {
    /// The aggregated messages' transform `W_rel` (with the bias).
    pub lin_rel: Linear,
    /// The root transform `W_root` (no bias).
    pub lin_root: Linear,
    /// How the messages are combined.
    #[module(skip)]
    pub aggr: Aggregation,
}

impl GraphConvConfig {
    /// A new layer on `device` (burn's default initialisation of its linear maps).
    pub fn init(&self, device: &burn::tensor::Device) -> GraphConv {
        GraphConv {
            lin_rel: LinearConfig::new(self.d_input, self.d_output).with_bias(self.bias).init(device),
            lin_root: LinearConfig::new(self.d_input, self.d_output).with_bias(false).init(device),
            aggr: self.aggr,
        }
    }
}

impl GraphConv {
    /// The layer on node features `x [n, d_input]` over the propagation matrix `adj [n, n]`,
    /// or a sampled block `adj [dst, n]` whose targets are the first `dst` nodes.
    pub fn forward(&self, x: Tensor<2>, adj: &SparseTensor<2>) -> Tensor<2> {
        self.lin_rel.forward(self.aggr.aggregate(x.clone(), adj)) + self.lin_root.forward(targets(adj, x))
    }
}
