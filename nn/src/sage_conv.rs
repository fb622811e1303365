//! GraphSAGE (Hamilton et al. 2017) as PyG's `SAGEConv`:
//! `out_i = W_l · aggr_{j -> i} x_j + b + W_r · x_i`, the aggregation (mean by default, or max) a reduction of the sparse product
//! (`mm_reduce`), optionally L2-normalised per node. The neighbours come from the propagation
//! matrix `adj[i, j]` (edge `j -> i`; `edge_index::to_propagation_matrix` builds it): PyG's
//! layer takes no edge weights, so pass it with unit values (other values scale the messages).

use crate::aggregation::{targets, Aggregation};
use burn::config::Config;
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::Tensor;
use sparsegrad_autodiff::matmul::mm;
use sparsegrad_backend::error::invalid;
use sparsegrad_backend::SparseTensor;

/// Configuration of a [`SageConv`] layer.
#[derive(Config, Debug)]
pub struct SageConvConfig {
    /// Input features per node.
    pub d_input: usize,
    /// Output features per node.
    pub d_output: usize,
    /// How the neighbours' features are combined (PyG's default: mean).
    #[config(default = "Aggregation::Mean")]
    pub aggr: Aggregation,
    /// Add the transformed root features `W_r x_i` (PyG's `root_weight`).
    #[config(default = true)]
    pub root_weight: bool,
    /// A bias on the aggregated branch (PyG's `bias`).
    #[config(default = true)]
    pub bias: bool,
    /// L2-normalise every node's output (PyG's `normalize`).
    #[config(default = false)]
    pub normalize: bool,
}

/// A GraphSAGE layer.
///
/// # Examples
///
/// ```
/// use burn::tensor::{DType, Device, Int, Tensor, TensorData};
/// use sparsegrad_nn::{to_propagation_matrix, Aggregation, SageConvConfig};
///
/// let device = Device::flex();
/// // PyG's `edge_index` of the edges 0 -> 1 and 1 -> 2 (sources in row 0, targets in row 1).
/// let edge_index = Tensor::<2, Int>::from_data(TensorData::new(vec![0i64, 1, 1, 2], [2, 2]), (&device, DType::I64));
/// let adj = to_propagation_matrix(&edge_index, None, 3)?;
/// let conv = SageConvConfig::new(4, 2).with_aggr(Aggregation::Max).init(&device);
/// let y = conv.forward(Tensor::<2>::ones([3, 4], &device), &adj); // PyG's `conv(x, edge_index)` order
/// assert_eq!(y.dims(), [3, 2]);
/// # Ok::<(), sparsegrad_backend::SparseError>(())
/// ```
#[derive(Module, Debug)]
pub struct SageConv {
    /// The aggregated neighbours' transform `W_l` (with the bias).
    pub lin_l: Linear,
    /// The root transform `W_r` (no bias), when `root_weight`.
    pub lin_r: Option<Linear>,
    /// How the neighbours are combined.
    #[module(skip)]
    pub aggr: Aggregation,
    /// L2-normalise the outputs.
    pub normalize: bool,
}

impl SageConvConfig {
    /// A new layer on `device` (burn's default initialisation of its linear maps).
    pub fn init(&self, device: &burn::tensor::Device) -> SageConv {
        SageConv {
            lin_l: LinearConfig::new(self.d_input, self.d_output).with_bias(self.bias).init(device),
            lin_r: self
                .root_weight
                .then(|| LinearConfig::new(self.d_input, self.d_output).with_bias(false).init(device)),
            aggr: self.aggr,
            normalize: self.normalize,
        }
    }
}

impl SageConv {
    /// The layer on node features `x [n, d_input]` over the propagation matrix `adj [n, n]`,
    /// or a sampled block `adj [dst, n]` whose targets are the first `dst` nodes (`[dst,
    /// d_output]` out).
    pub fn forward(&self, x: Tensor<2>, adj: &SparseTensor<2>) -> Tensor<2> {
        let mut out = self.lin_l.forward(self.aggr.aggregate(x.clone(), adj));
        if let Some(lin_r) = &self.lin_r {
            out = out + lin_r.forward(targets(adj, x));
        }
        if self.normalize {
            l2_normalize(out)
        } else {
            out
        }
    }

    /// [`SageConv::forward`] for sparse node features `x [n, d_input]` (bag-of-words features
    /// that stay CSR) with a linear aggregation, sum or mean: the transforms run first as sparse
    /// products (`mm(x, W)`) and the aggregation after, which commutes with them, so nothing
    /// `n x d_input` is dense. Errors for max and min, which do not commute with `W` (densify
    /// the features with `to_dense` for those).
    pub fn forward_sparse(&self, x: &SparseTensor<2>, adj: &SparseTensor<2>) -> sparsegrad_backend::Result<Tensor<2>> {
        if matches!(self.aggr, Aggregation::Max | Aggregation::Min) {
            return Err(invalid(
                "SageConv::forward_sparse",
                format!("{:?} aggregation does not commute with the weight; densify the features", self.aggr),
            ));
        }
        let mut out = self.aggr.aggregate(mm(x, self.lin_l.weight.val()), adj);
        if let Some(b) = &self.lin_l.bias {
            out = out + b.val().unsqueeze::<2>();
        }
        if let Some(lin_r) = &self.lin_r {
            out = out + targets(adj, mm(x, lin_r.weight.val()));
        }
        Ok(if self.normalize { l2_normalize(out) } else { out })
    }
}

/// Every row divided by its L2 norm (at least 1e-12, as torch's `F.normalize`).
pub(crate) fn l2_normalize(x: Tensor<2>) -> Tensor<2> {
    let norm = x.clone().powi_scalar(2).sum_dim(1).sqrt().clamp_min(1e-12);
    x / norm
}
