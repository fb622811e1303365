//! Graph convolution (Kipf & Welling 2017): `GcnConv` computes `Â X W (+ b)` with the symmetric
//! normalisation `Â = D^-1/2 (A + I) D^-1/2`, built once by [`gcn_norm`] as a CSR tensor. The
//! aggregation is the sparse `mm` of the autodiff crate, so gradients w.r.t. `W` (and `X`) never
//! build a dense `n x n` matrix; sparse inputs (bag-of-words features) multiply `W` directly.

use crate::edge_index::{gcn_norm_edge_index, to_propagation_matrix, GcnNormOptions};
use burn::config::Config;
use burn::module::{Module, Param};
use burn::nn::Initializer;
use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use sparsegrad_autodiff::matmul::mm;
use sparsegrad_backend::alloc::try_filled;
use sparsegrad_backend::{SparseError, SparseTensor};

/// Configuration of a [`GcnConv`] layer, with PyG's `GCNConv` options and defaults.
#[derive(Config, Debug)]
pub struct GcnConvConfig {
    /// Input features per node.
    pub d_input: usize,
    /// Output features per node.
    pub d_output: usize,
    /// Whether to add a bias (PyG's default; Kipf & Welling's model has none).
    #[config(default = true)]
    pub bias: bool,
    /// [`GcnConv::propagation`]: add the remaining self loops before normalising.
    #[config(default = true)]
    pub add_self_loops: bool,
    /// [`GcnConv::propagation`]: weight the added self loops 2 (`Â = A + 2I`).
    #[config(default = false)]
    pub improved: bool,
    /// [`GcnConv::propagation`]: normalise `D^-1/2 Â D^-1/2`; without it the edge weights (ones
    /// when none are given) are used as they are and no self loops are added, as in PyG.
    #[config(default = true)]
    pub normalize: bool,
}

/// A graph convolution layer: `Â (X W) + b`.
///
/// ```
/// use burn::tensor::{Device, Tensor};
/// use sparsegrad_nn::{gcn_norm, GcnConvConfig};
///
/// let device = Device::flex();
/// // A path 0 - 1 - 2: with self loops, node 1 has degree 3 and the ends degree 2.
/// let adj = gcn_norm(&[(0, 1), (1, 2)], 3, &device)?;
/// let conv = GcnConvConfig::new(4, 2).with_bias(false).init(&device);
/// let x = Tensor::<2>::ones([3, 4], &device);
/// let y = conv.forward(x.clone(), &adj);
/// // The same product with the normalised adjacency made dense.
/// let expected = adj.to_dense().matmul(x.matmul(conv.weight.val()));
/// y.into_data().assert_approx_eq::<f32>(&expected.into_data(), burn::tensor::Tolerance::default());
/// # Ok::<(), sparsegrad_backend::SparseError>(())
/// ```
#[derive(Module, Debug)]
pub struct GcnConv {
    /// `[d_input, d_output]`, Glorot-uniform initialised (as Kipf & Welling).
    pub weight: Param<Tensor<2>>,
    /// `[d_output]`, zeros.
    pub bias: Option<Param<Tensor<1>>>,
    /// How [`GcnConv::propagation`] builds the matrix from an `edge_index`.
    pub add_self_loops: bool,
    /// See [`GcnConvConfig::improved`].
    pub improved: bool,
    /// See [`GcnConvConfig::normalize`].
    pub normalize: bool,
}

impl GcnConvConfig {
    /// A new layer on `device`.
    pub fn init(&self, device: &Device) -> GcnConv {
        let weight = Initializer::XavierUniform { gain: 1.0 }.init_with(
            [self.d_input, self.d_output],
            Some(self.d_input),
            Some(self.d_output),
            device,
        );
        let bias = self.bias.then(|| Initializer::Zeros.init([self.d_output], device));
        GcnConv {
            weight,
            bias,
            add_self_loops: self.add_self_loops,
            improved: self.improved,
            normalize: self.normalize,
        }
    }
}

impl GcnConv {
    fn add_bias(&self, y: Tensor<2>) -> Tensor<2> {
        match &self.bias {
            Some(b) => y + b.val().unsqueeze::<2>(),
            None => y,
        }
    }

    /// `Â (X W) + b` for dense node features `x [n, d_input]`, `adj` the propagation matrix
    /// (from [`gcn_norm`] or [`GcnConv::propagation`]).
    pub fn forward(&self, x: Tensor<2>, adj: &SparseTensor<2>) -> Tensor<2> {
        self.add_bias(mm(adj, x.matmul(self.weight.val())))
    }

    /// `Â (X W) + b` for sparse node features `x [n, d_input]` (`X W` is a sparse @ dense product).
    pub fn forward_sparse(&self, x: &SparseTensor<2>, adj: &SparseTensor<2>) -> Tensor<2> {
        self.add_bias(mm(adj, mm(x, self.weight.val())))
    }

    /// The matrix this layer propagates over for a graph given as PyG's `edge_index` (messages
    /// from source to target) with optional `edge_weight`, built with the layer's options
    /// (PyG's `gcn_norm`: [`gcn_norm_edge_index`]). Build it once and pass it to
    /// [`GcnConv::forward`] at every step (PyG's `cached = True`); gradients reach a trainable
    /// `edge_weight` through it.
    pub fn propagation(
        &self,
        edge_index: &Tensor<2, Int>,
        edge_weight: Option<&Tensor<1>>,
        num_nodes: usize,
    ) -> sparsegrad_backend::Result<SparseTensor<2>> {
        if !self.normalize {
            return to_propagation_matrix(edge_index, edge_weight, num_nodes);
        }
        let options = GcnNormOptions { add_self_loops: self.add_self_loops, improved: self.improved };
        let (edge_index, weight) = gcn_norm_edge_index(edge_index, edge_weight, num_nodes, options)?;
        to_propagation_matrix(&edge_index, Some(&weight), num_nodes)
    }

    /// PyG's `GCNConv.forward(x, edge_index, edge_weight)`: [`GcnConv::propagation`] then
    /// [`GcnConv::forward`] (the matrix is rebuilt at every call; keep it for repeated calls).
    pub fn forward_edge_index(
        &self,
        x: Tensor<2>,
        edge_index: &Tensor<2, Int>,
        edge_weight: Option<&Tensor<1>>,
    ) -> sparsegrad_backend::Result<Tensor<2>> {
        let adj = self.propagation(edge_index, edge_weight, x.dims()[0])?;
        Ok(self.forward(x, &adj))
    }
}

/// The CSR pattern `(crow, col)` of `A + I` for an undirected graph of `n` nodes (edges listed
/// once or twice; self loops and repeats merged), columns sorted per row. Memory in the nodes
/// and edges, reserved fallibly: a node count the machine cannot hold is an `Allocation` error.
fn pattern_with_self_loops(edges: &[(usize, usize)], n: usize) -> sparsegrad_backend::Result<(Vec<i64>, Vec<i64>)> {
    for (position, &(u, v)) in edges.iter().enumerate() {
        if u >= n || v >= n {
            let (dim, value) = if u >= n { (0, u) } else { (1, v) };
            return Err(SparseError::IndexOutOfBounds {
                component: "edges",
                dim,
                position,
                value: value as i128,
                size: n,
            });
        }
    }
    let too_many = || SparseError::Allocation { bytes: usize::MAX, what: "gcn_norm: the pattern of A + I" };
    let slots = edges.len().checked_mul(2).and_then(|e| e.checked_add(n)).ok_or_else(too_many)?;
    let rows = n.checked_add(1).ok_or_else(too_many)?;
    // Row starts by counting (a self loop and both directions of every edge), then each row's
    // columns written at its start, sorted and deduplicated in place.
    let mut start = try_filled(rows, 0usize, "gcn_norm: row pointers")?;
    for count in start.iter_mut().skip(1) {
        *count = 1;
    }
    for &(u, v) in edges {
        start[u + 1] += 1;
        start[v + 1] += 1;
    }
    for r in 0..n {
        start[r + 1] += start[r];
    }
    let mut col = try_filled(slots, 0i64, "gcn_norm: columns")?;
    let mut next = start.clone();
    let mut put = |r: usize, c: usize| {
        col[next[r]] = c as i64;
        next[r] += 1;
    };
    for r in 0..n {
        put(r, r);
    }
    for &(u, v) in edges {
        put(u, v);
        put(v, u);
    }
    let mut crow = try_filled(rows, 0i64, "gcn_norm: row pointers")?;
    let mut kept = 0usize;
    for r in 0..n {
        col[start[r]..start[r + 1]].sort_unstable();
        let mut last = None;
        for i in start[r]..start[r + 1] {
            let c = col[i];
            if last != Some(c) {
                // `kept <= i`: the compacted prefix stays behind the reads.
                col[kept] = c;
                kept += 1;
                last = Some(c);
            }
        }
        crow[r + 1] = kept as i64;
    }
    col.truncate(kept);
    Ok((crow, col))
}

/// `A + I` as CSR with unit values (f32, int64 indices): the pattern attention layers use.
pub fn adjacency_with_self_loops(
    edges: &[(usize, usize)],
    n: usize,
    device: &Device,
) -> sparsegrad_backend::Result<SparseTensor<2>> {
    let (crow, col) = pattern_with_self_loops(edges, n)?;
    csr_with_values(crow, col, |_, _| 1.0, device)
}

/// `D^-1/2 (A + I) D^-1/2` as CSR (f32 values, int64 indices) for an undirected graph of `n`
/// nodes given by its edges (each listed once or twice; self loops and repeats are merged).
pub fn gcn_norm(edges: &[(usize, usize)], n: usize, device: &Device) -> sparsegrad_backend::Result<SparseTensor<2>> {
    let (crow, col) = pattern_with_self_loops(edges, n)?;
    let scale: Vec<f64> = crow.windows(2).map(|w| 1.0 / ((w[1] - w[0]) as f64).sqrt()).collect();
    csr_with_values(crow, col, |i, j| (scale[i] * scale[j]) as f32, device)
}

/// A square CSR tensor of the pattern `(crow, col)` with `value(i, j)` at each entry.
fn csr_with_values(
    crow: Vec<i64>,
    col: Vec<i64>,
    value: impl Fn(usize, usize) -> f32,
    device: &Device,
) -> sparsegrad_backend::Result<SparseTensor<2>> {
    let n = crow.len() - 1;
    let mut val = Vec::with_capacity(col.len());
    for i in 0..n {
        val.extend(col[crow[i] as usize..crow[i + 1] as usize].iter().map(|&j| value(i, j as usize)));
    }
    let nnz = col.len();
    let crow = Tensor::<1, Int>::from_data(TensorData::new(crow, [n + 1]), (device, DType::I64));
    let col = Tensor::<1, Int>::from_data(TensorData::new(col, [nnz]), (device, DType::I64));
    let val = Tensor::<1>::from_data(TensorData::new(val, [nnz]), device);
    SparseTensor::csr(crow, col, val, [n, n])
}
