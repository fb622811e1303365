//! Graph attention (Veličković et al. 2018): `GatConv` with multi-head attention on a sparse
//! adjacency pattern. Per head, the scores `e_ij = LeakyReLU(a_dstᵀ W h_i + a_srcᵀ W h_j)` are a
//! rank-2 SDDMM on the pattern (`sampled_addmm` of `[dst, 1]` and `[1; srcᵀ]`), normalised over
//! each node's neighbours by the sparse `softmax` (unspecified pairs are -inf), dropped out on
//! their stored values while training (`GatConvConfig::dropout`, burn's `Dropout` on the
//! values: off under `valid()` and on devices without autodiff), and the aggregation is the
//! sparse `mm`. Nothing `n x n` is ever dense.

use crate::dropout::{SparseDropout, SparseDropoutConfig};
use crate::edge_index::{add_remaining_self_loops, to_propagation_matrix};
use burn::config::Config;
use burn::module::{Module, Param};
use burn::nn::{Dropout, DropoutConfig, Initializer};
use burn::tensor::{activation::leaky_relu, Int, Tensor};
use sparsegrad_autodiff::matmul::{mm, sampled_addmm};
use sparsegrad_autodiff::softmax::softmax;
use sparsegrad_backend::SparseTensor;

/// Configuration of a [`GatConv`] layer.
#[derive(Config, Debug)]
pub struct GatConvConfig {
    /// Input features per node.
    pub d_input: usize,
    /// Output features per node and head.
    pub d_output: usize,
    /// Attention heads.
    #[config(default = 1)]
    pub heads: usize,
    /// Concatenate the heads (`[n, heads * d_output]`) or average them (`[n, d_output]`).
    #[config(default = true)]
    pub concat: bool,
    /// Slope of the LeakyReLU on the scores.
    #[config(default = 0.2)]
    pub negative_slope: f64,
    /// Whether to add a bias.
    #[config(default = true)]
    pub bias: bool,
    /// Dropout probability on the attention coefficients while training (the paper's 0.6).
    #[config(default = 0.0)]
    pub dropout: f64,
    /// Dropout probability on each head's projected features `W h` where they are aggregated
    /// (after the scores are computed from them) while training: the paper's reference code
    /// applies its input dropout there too; PyG's `GATConv` does not (0, the default).
    #[config(default = 0.0)]
    pub feature_dropout: f64,
    /// [`GatConv::propagation_pattern`]: replace the graph's self loops by one per node (PyG's
    /// default), so every node attends to itself.
    #[config(default = true)]
    pub add_self_loops: bool,
}

/// A multi-head graph attention layer.
///
/// # Examples
///
/// ```
/// use burn::tensor::{Device, Tensor};
/// use sparsegrad_nn::{gcn_norm, GatConvConfig};
///
/// let device = Device::flex();
/// // Only the pattern is read: every node attends to its neighbours and itself.
/// let adj = gcn_norm(&[(0, 1), (1, 2)], 3, &device)?;
/// let conv = GatConvConfig::new(4, 8).with_heads(2).init(&device);
/// let (y, attention) = conv.forward_with_attention(Tensor::<2>::ones([3, 4], &device), &adj);
/// assert_eq!(y.dims(), [3, 16]); // the two heads concatenated
/// // Each head's coefficients sum to 1 over a node's neighbours.
/// let rows = attention[0].to_dense().sum_dim(1).into_data().to_vec::<f32>().unwrap();
/// assert!(rows.iter().all(|r| (r - 1.0).abs() < 1e-5));
/// # Ok::<(), sparsegrad_backend::SparseError>(())
/// ```
#[derive(Module, Debug)]
pub struct GatConv {
    /// `[d_input, heads * d_output]`, Glorot-uniform.
    pub weight: Param<Tensor<2>>,
    /// Source-side attention vectors `[heads, d_output]`.
    pub att_src: Param<Tensor<2>>,
    /// Destination-side attention vectors `[heads, d_output]`.
    pub att_dst: Param<Tensor<2>>,
    /// `[heads * d_output]` (concat) or `[d_output]`.
    pub bias: Option<Param<Tensor<1>>>,
    /// Attention heads.
    pub heads: usize,
    /// Output features per head.
    pub d_output: usize,
    /// Concatenate (or average) the heads.
    pub concat: bool,
    /// Slope of the LeakyReLU on the scores.
    pub negative_slope: f64,
    /// Dropout on the attention coefficients (stored values of the normalised scores).
    pub attention_dropout: SparseDropout,
    /// See [`GatConvConfig::add_self_loops`].
    pub add_self_loops: bool,
    /// Dropout on the projected features where they are aggregated ([`GatConvConfig::feature_dropout`]).
    pub feature_dropout: Dropout,
}

impl GatConvConfig {
    /// A new layer on `device`.
    ///
    /// # Panics
    ///
    /// If `dropout` or `feature_dropout` is not in `[0, 1)` (as burn's `DropoutConfig::init`).
    pub fn init(&self, device: &burn::tensor::Device) -> GatConv {
        let width = self.heads * self.d_output;
        let glorot = Initializer::XavierUniform { gain: 1.0 };
        GatConv {
            weight: glorot.init_with([self.d_input, width], Some(self.d_input), Some(width), device),
            att_src: glorot.init_with([self.heads, self.d_output], Some(self.d_output), Some(1), device),
            att_dst: glorot.init_with([self.heads, self.d_output], Some(self.d_output), Some(1), device),
            bias: self.bias.then(|| Initializer::Zeros.init([if self.concat { width } else { self.d_output }], device)),
            heads: self.heads,
            d_output: self.d_output,
            concat: self.concat,
            negative_slope: self.negative_slope,
            attention_dropout: SparseDropoutConfig::new(self.dropout).init(),
            add_self_loops: self.add_self_loops,
            feature_dropout: DropoutConfig::new(self.feature_dropout).init(),
        }
    }
}

impl GatConv {
    /// The attention of head `h` on `adj`'s pattern given the projected features `wh [n, F]`.
    fn attention(&self, adj: &SparseTensor<2>, wh: &Tensor<2>, h: usize) -> SparseTensor<2> {
        let n = wh.dims()[0];
        let a_src = self.att_src.val().slice([h..h + 1, 0..self.d_output]).reshape([self.d_output, 1]);
        let a_dst = self.att_dst.val().slice([h..h + 1, 0..self.d_output]).reshape([self.d_output, 1]);
        let (src, dst) = (wh.clone().matmul(a_src), wh.clone().matmul(a_dst));
        let ones = Tensor::<2>::ones([n, 1], (&wh.device(), wh.dtype()));
        // e_ij = dst_i * 1 + 1 * src_j, sampled on the pattern.
        let left = Tensor::cat(vec![dst, ones.clone()], 1);
        let right = Tensor::cat(vec![ones, src], 1).transpose();
        let scores = sampled_addmm(adj, left, right, 0.0, 1.0);
        let scores = scores.with_values(leaky_relu(scores.values_flat(), self.negative_slope));
        self.attention_dropout.forward(&softmax(&scores, 1))
    }

    /// The layer on dense features `x [n, d_input]` over `adj`'s pattern (its values are not
    /// used; include self loops in it): node `i` attends over the columns of row `i`.
    pub fn forward(&self, x: Tensor<2>, adj: &SparseTensor<2>) -> Tensor<2> {
        self.aggregate(adj, x.matmul(self.weight.val()), false).0
    }

    /// [`GatConv::forward`] for sparse features.
    pub fn forward_sparse(&self, x: &SparseTensor<2>, adj: &SparseTensor<2>) -> Tensor<2> {
        self.aggregate(adj, mm(x, self.weight.val()), false).0
    }

    /// [`GatConv::forward`] and the attention coefficients of every head (PyG's
    /// `return_attention_weights=True`): per head a sparse tensor on `adj`'s pattern whose row
    /// `i` holds node `i`'s weights over its neighbours (summing to 1, or the dropped-out
    /// coefficients the output used while training), differentiable like the output.
    pub fn forward_with_attention(&self, x: Tensor<2>, adj: &SparseTensor<2>) -> (Tensor<2>, Vec<SparseTensor<2>>) {
        self.aggregate(adj, x.matmul(self.weight.val()), true)
    }

    /// The pattern this layer attends over for a graph given as PyG's `edge_index` (messages
    /// from source to target): row `target`, column `source`, with the self loops replaced by
    /// one per node when [`GatConvConfig::add_self_loops`] (repeated edges merged). Build it
    /// once and pass it to [`GatConv::forward`].
    pub fn propagation_pattern(
        &self,
        edge_index: &Tensor<2, Int>,
        num_nodes: usize,
    ) -> sparsegrad_backend::Result<SparseTensor<2>> {
        if !self.add_self_loops {
            return to_propagation_matrix(edge_index, None, num_nodes);
        }
        let (with_loops, _) = add_remaining_self_loops(edge_index, None, num_nodes, 1.0)?;
        to_propagation_matrix(&with_loops, None, num_nodes)
    }

    fn aggregate(&self, adj: &SparseTensor<2>, wh_all: Tensor<2>, keep: bool) -> (Tensor<2>, Vec<SparseTensor<2>>) {
        let n = wh_all.dims()[0];
        let f = self.d_output;
        let mut attention = Vec::new();
        let outs: Vec<Tensor<2>> = (0..self.heads)
            .map(|h| {
                let wh = wh_all.clone().slice([0..n, h * f..(h + 1) * f]);
                let alpha = self.attention(adj, &wh, h);
                let out = mm(&alpha, self.feature_dropout.forward(wh));
                if keep {
                    attention.push(alpha);
                }
                out
            })
            .collect();
        let out =
            if self.concat { Tensor::cat(outs, 1) } else { Tensor::stack::<3>(outs, 0).mean_dim(0).reshape([n, f]) };
        let out = match &self.bias {
            Some(b) => out + b.val().unsqueeze::<2>(),
            None => out,
        };
        (out, attention)
    }
}
