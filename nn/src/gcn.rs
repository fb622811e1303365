//! Graph convolution (Kipf & Welling 2017): `GcnConv` computes `Â X W (+ b)` with the symmetric
//! normalisation `Â = D^-1/2 (A + I) D^-1/2`, built once by [`gcn_norm`] as a CSR tensor. The
//! aggregation is the sparse `mm` of the autodiff crate, so gradients w.r.t. `W` (and `X`) never
//! build a dense `n x n` matrix; sparse inputs (bag-of-words features) multiply `W` directly.

use burn::config::Config;
use burn::module::{Module, Param};
use burn::nn::Initializer;
use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use sparsegrad_autodiff::matmul::mm;
use sparsegrad_backend::{SparseError, SparseTensor};

/// Configuration of a [`GcnConv`] layer.
#[derive(Config, Debug)]
pub struct GcnConvConfig {
    /// Input features per node.
    pub d_input: usize,
    /// Output features per node.
    pub d_output: usize,
    /// Whether to add a bias.
    #[config(default = false)]
    pub bias: bool,
}

/// A graph convolution layer: `Â (X W) + b`.
#[derive(Module, Debug)]
pub struct GcnConv {
    /// `[d_input, d_output]`, Glorot-uniform initialised (as Kipf & Welling).
    pub weight: Param<Tensor<2>>,
    /// `[d_output]`, zeros.
    pub bias: Option<Param<Tensor<1>>>,
}

impl GcnConvConfig {
    /// A new layer on `device`.
    pub fn init(&self, device: &Device) -> GcnConv {
        let weight = Initializer::XavierUniform { gain: 1.0 }.init_with([self.d_input, self.d_output], Some(self.d_input), Some(self.d_output), device);
        let bias = self.bias.then(|| Initializer::Zeros.init([self.d_output], device));
        GcnConv { weight, bias }
    }
}

impl GcnConv {
    fn add_bias(&self, y: Tensor<2>) -> Tensor<2> {
        match &self.bias {
            Some(b) => y + b.val().unsqueeze::<2>(),
            None => y,
        }
    }

    /// `Â (X W) + b` for dense node features `x [n, d_input]`.
    pub fn forward(&self, adj: &SparseTensor<2>, x: Tensor<2>) -> Tensor<2> {
        self.add_bias(mm(adj, x.matmul(self.weight.val())))
    }

    /// `Â (X W) + b` for sparse node features `x [n, d_input]` (`X W` is a sparse @ dense product).
    pub fn forward_sparse(&self, adj: &SparseTensor<2>, x: &SparseTensor<2>) -> Tensor<2> {
        self.add_bias(mm(adj, mm(x, self.weight.val())))
    }
}

/// Sorted neighbour lists of `A + I` for an undirected graph (edges listed once or twice; self
/// loops and repeats merged).
fn neighbours_with_self_loops(edges: &[(usize, usize)], n: usize) -> sparsegrad_backend::Result<Vec<Vec<usize>>> {
    let mut neighbours: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
    for &(u, v) in edges {
        if u >= n || v >= n {
            return Err(SparseError::IndexOutOfBounds { component: "edges", dim: usize::from(u < n), position: 0, value: u.max(v) as i64, size: n });
        }
        neighbours[u].push(v);
        neighbours[v].push(u);
    }
    for list in neighbours.iter_mut() {
        list.sort_unstable();
        list.dedup();
    }
    Ok(neighbours)
}

/// `A + I` as CSR with unit values (f32, int64 indices): the pattern attention layers use.
pub fn adjacency_with_self_loops(edges: &[(usize, usize)], n: usize, device: &Device) -> sparsegrad_backend::Result<SparseTensor<2>> {
    let neighbours = neighbours_with_self_loops(edges, n)?;
    csr_from_lists(&neighbours, |_, _| 1.0, device)
}

/// `D^-1/2 (A + I) D^-1/2` as CSR (f32 values, int64 indices) for an undirected graph of `n`
/// nodes given by its edges (each listed once or twice; self loops and repeats are merged).
pub fn gcn_norm(edges: &[(usize, usize)], n: usize, device: &Device) -> sparsegrad_backend::Result<SparseTensor<2>> {
    let neighbours = neighbours_with_self_loops(edges, n)?;
    let scale: Vec<f64> = neighbours.iter().map(|l| 1.0 / (l.len() as f64).sqrt()).collect();
    csr_from_lists(&neighbours, |i, j| (scale[i] * scale[j]) as f32, device)
}

/// A square CSR tensor from sorted neighbour lists with `value(i, j)` at each entry.
fn csr_from_lists(neighbours: &[Vec<usize>], value: impl Fn(usize, usize) -> f32, device: &Device) -> sparsegrad_backend::Result<SparseTensor<2>> {
    let n = neighbours.len();
    let mut crow = Vec::with_capacity(n + 1);
    let (mut col, mut val) = (Vec::new(), Vec::new());
    crow.push(0i64);
    for (i, list) in neighbours.iter().enumerate() {
        for &j in list {
            col.push(j as i64);
            val.push(value(i, j));
        }
        crow.push(col.len() as i64);
    }
    let nnz = col.len();
    let crow = Tensor::<1, Int>::from_data(TensorData::new(crow, [n + 1]), (device, DType::I64));
    let col = Tensor::<1, Int>::from_data(TensorData::new(col, [nnz]), (device, DType::I64));
    let val = Tensor::<1>::from_data(TensorData::new(val, [nnz]), device);
    SparseTensor::csr(crow, col, val, [n, n])
}
