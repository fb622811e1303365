//! Graphs as PyG's `edge_index`: an Int tensor `[2, E]` whose row 0 holds each edge's source
//! and row 1 its target, with optional edge weights `[E]`. Messages flow from source to target
//! (PyG's `flow="source_to_target"`): node `i` aggregates over the edges `j -> i`.
//!
//! The helpers follow `torch_geometric.utils`: [`add_self_loops`], [`add_remaining_self_loops`],
//! [`remove_self_loops`], [`coalesce`], [`to_undirected`], [`degree`], and
//! [`gcn_norm_edge_index`] (PyG's `gcn_norm` on an `edge_index`). The index work (validating,
//! masking, sorting) runs on the host; the weights move with burn ops (`select`, `cat`, the
//! sparse `coalesce`), so gradients reach a trainable `edge_weight`. [`to_propagation_matrix`]
//! turns a graph into the sparse matrix the layers multiply (`P[target, source]`, so that
//! `mm(P, X)` sums the messages at their targets); [`to_sparse_adjacency`] gives PyG's
//! `to_torch_csr_tensor` (`A[source, target]`).
//!
//! Every function checks its input: an `edge_index` that is not `[2, E]` or a weight vector that
//! is not `[E]` is a `ShapeMismatch` naming it, a node outside `0..num_nodes` an
//! `IndexOutOfBounds` naming the edge (its position) and the row (dim 0: source, 1: target).

use burn::tensor::{DType, Device, IndexingUpdateOp, Int, Tensor, TensorData};
use sparsegrad_backend::alloc::ensure_allocatable;
use sparsegrad_backend::host::with_ints;
use sparsegrad_backend::util::int_tensor;
use sparsegrad_backend::{Result, SparseError, SparseTensor};

/// A graph's edges and their optional weights, as the functions of this module return them.
pub type EdgeIndexWeights = (Tensor<2, Int>, Option<Tensor<1>>);

/// The edges of `edge_index` on the host as `(sources, targets)`, checked: shape `[2, E]`, every
/// node in `0..num_nodes`, and `edge_weight` (when given) of shape `[E]`.
fn edges_of(
    edge_index: &Tensor<2, Int>,
    edge_weight: Option<&Tensor<1>>,
    num_nodes: usize,
) -> Result<(Vec<i64>, Vec<i64>)> {
    let [rows, e] = edge_index.dims();
    if rows != 2 {
        return Err(SparseError::ShapeMismatch {
            component: "edge_index",
            expected: vec![2, e],
            actual: vec![rows, e],
        });
    }
    if let Some(w) = edge_weight {
        if w.dims() != [e] {
            return Err(SparseError::ShapeMismatch {
                component: "edge_weight",
                expected: vec![e],
                actual: w.dims().to_vec(),
            });
        }
    }
    let flat = with_ints(edge_index, |v| v.to_i64());
    for (k, &v) in flat.iter().enumerate() {
        if v < 0 || v as u64 >= num_nodes as u64 {
            return Err(SparseError::IndexOutOfBounds {
                component: "edge_index",
                dim: k / e.max(1),
                position: k % e.max(1),
                value: v.into(),
                size: num_nodes,
            });
        }
    }
    let targets = flat[e..].to_vec();
    let mut sources = flat;
    sources.truncate(e);
    Ok((sources, targets))
}

/// `[2, E]` int64 edges on `device`.
fn edge_tensor(sources: Vec<i64>, targets: Vec<i64>, device: &Device) -> Tensor<2, Int> {
    let e = sources.len();
    let mut flat = sources;
    flat.extend(targets);
    int_tensor(flat, [2, e], DType::I64, device)
}

/// The positions `keep` of `w` (a differentiable `select`).
fn select_weights(w: &Tensor<1>, keep: &[i64]) -> Tensor<1> {
    let index = int_tensor(keep.to_vec(), [keep.len()], DType::I64, &w.device());
    w.clone().select(0, index)
}

/// `[n]` weights of `fill` in `like`'s dtype, on its device.
fn filled(like: &Tensor<1>, n: usize, fill: f64) -> Tensor<1> {
    let dtype = like.dtype();
    Tensor::from_data(TensorData::new(vec![fill; n], [n]).convert_dtype(dtype), (&like.device(), dtype))
}

/// PyG's `add_self_loops`: the edges with `(i, i)` appended for every node `i` (existing loops
/// kept), each new loop weighted `fill_value` when weights are given (PyG's default fill is 1).
pub fn add_self_loops(
    edge_index: &Tensor<2, Int>,
    edge_weight: Option<&Tensor<1>>,
    num_nodes: usize,
    fill_value: f64,
) -> Result<EdgeIndexWeights> {
    let (mut sources, mut targets) = edges_of(edge_index, edge_weight, num_nodes)?;
    ensure_allocatable(num_nodes.saturating_mul(3), 8, "add_self_loops: the loops")?;
    sources.extend(0..num_nodes as i64);
    targets.extend(0..num_nodes as i64);
    let weight = edge_weight.map(|w| Tensor::cat(vec![w.clone(), filled(w, num_nodes, fill_value)], 0));
    Ok((edge_tensor(sources, targets, &edge_index.device()), weight))
}

/// PyG's `add_remaining_self_loops`: the edges that are not loops, then one loop `(i, i)` for
/// every node, weighted as the graph's own loop at `i` where it has one (the last, if several)
/// and `fill_value` elsewhere.
pub fn add_remaining_self_loops(
    edge_index: &Tensor<2, Int>,
    edge_weight: Option<&Tensor<1>>,
    num_nodes: usize,
    fill_value: f64,
) -> Result<EdgeIndexWeights> {
    let (sources, targets) = edges_of(edge_index, edge_weight, num_nodes)?;
    ensure_allocatable(num_nodes.saturating_mul(4), 8, "add_remaining_self_loops: the loops")?;
    let keep: Vec<i64> = (0..sources.len()).filter(|&k| sources[k] != targets[k]).map(|k| k as i64).collect();
    let (mut s, mut t): (Vec<i64>, Vec<i64>) = keep.iter().map(|&k| (sources[k as usize], targets[k as usize])).unzip();
    s.extend(0..num_nodes as i64);
    t.extend(0..num_nodes as i64);
    let weight = edge_weight.map(|w| {
        // Every node's loop weight: its own loop's (the last), else the fill value. As one
        // gather from `[w; fill]`, so the kept loop weights stay differentiable.
        let e = sources.len();
        let mut from = vec![e as i64; num_nodes];
        for k in 0..e {
            if sources[k] == targets[k] {
                from[sources[k] as usize] = k as i64;
            }
        }
        let extended = Tensor::cat(vec![w.clone(), filled(w, 1, fill_value)], 0);
        let mut index = keep.clone();
        index.extend(from);
        select_weights(&extended, &index)
    });
    Ok((edge_tensor(s, t, &edge_index.device()), weight))
}

/// PyG's `remove_self_loops`: the edges `(i, j)` with `i != j`, in order, with their weights.
pub fn remove_self_loops(edge_index: &Tensor<2, Int>, edge_weight: Option<&Tensor<1>>) -> Result<EdgeIndexWeights> {
    let [_, e] = edge_index.dims();
    // Any node count bounds the indices; loops are found whatever it is.
    let (sources, targets) = edges_of(edge_index, edge_weight, i64::MAX as usize)?;
    let keep: Vec<i64> = (0..e).filter(|&k| sources[k] != targets[k]).map(|k| k as i64).collect();
    let (s, t) = keep.iter().map(|&k| (sources[k as usize], targets[k as usize])).unzip();
    let weight = edge_weight.map(|w| select_weights(w, &keep));
    Ok((edge_tensor(s, t, &edge_index.device()), weight))
}

/// PyG's `coalesce`: the edges sorted by `(source, target)`, repeats merged, their weights
/// summed (PyG's default `reduce="sum"`).
pub fn coalesce(
    edge_index: &Tensor<2, Int>,
    edge_weight: Option<&Tensor<1>>,
    num_nodes: usize,
) -> Result<EdgeIndexWeights> {
    edges_of(edge_index, edge_weight, num_nodes)?;
    let [_, e] = edge_index.dims();
    let device = edge_index.device();
    let values = match edge_weight {
        Some(w) => w.clone(),
        None => Tensor::<1>::ones([e], &device),
    };
    let a = SparseTensor::coo(edge_index.clone(), values, [num_nodes, num_nodes])?.coalesce();
    let indices = a.indices()?;
    let weight = edge_weight.map(|_| a.values_flat().reshape([a.nnz()]));
    Ok((indices, weight))
}

/// PyG's `to_undirected`: every edge in both directions, coalesced (sorted by `(source,
/// target)`, repeats merged and their weights summed: PyG's default `reduce="add"`).
pub fn to_undirected(
    edge_index: &Tensor<2, Int>,
    edge_weight: Option<&Tensor<1>>,
    num_nodes: usize,
) -> Result<EdgeIndexWeights> {
    let (sources, targets) = edges_of(edge_index, edge_weight, num_nodes)?;
    let mut s = sources.clone();
    s.extend_from_slice(&targets);
    let mut t = targets;
    t.extend(sources);
    let both = edge_tensor(s, t, &edge_index.device());
    let weight = edge_weight.map(|w| Tensor::cat(vec![w.clone(), w.clone()], 0));
    coalesce(&both, weight.as_ref(), num_nodes)
}

/// PyG's `degree(index, num_nodes)`: how often each node appears in `index` (`edge_index`'s
/// row 1 gives in-degrees, row 0 out-degrees), as int64 counts `[num_nodes]`.
pub fn degree(index: &Tensor<1, Int>, num_nodes: usize) -> Result<Tensor<1, Int>> {
    let values = with_ints(index, |v| v.to_i64());
    ensure_allocatable(num_nodes, 8, "degree: the counts")?;
    let mut counts = vec![0i64; num_nodes];
    for (position, &v) in values.iter().enumerate() {
        if v < 0 || v as u64 >= num_nodes as u64 {
            return Err(SparseError::IndexOutOfBounds {
                component: "index",
                dim: 0,
                position,
                value: v.into(),
                size: num_nodes,
            });
        }
        counts[v as usize] += 1;
    }
    Ok(int_tensor(counts, [num_nodes], DType::I64, &index.device()))
}

/// Options of [`gcn_norm_edge_index`] (PyG's `gcn_norm` arguments).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcnNormOptions {
    /// Add the remaining self loops first ([`add_remaining_self_loops`]); PyG's default.
    pub add_self_loops: bool,
    /// Weight the added loops 2 instead of 1 (`Â = A + 2I`, PyG's `improved`).
    pub improved: bool,
}

impl Default for GcnNormOptions {
    /// PyG's defaults: self loops added, not improved.
    fn default() -> Self {
        Self { add_self_loops: true, improved: false }
    }
}

/// PyG's `gcn_norm` on an `edge_index`: with `w` the weights (ones when none are given) after
/// adding the remaining self loops (weight 1, or 2 when `improved`), `deg[i] = sum of w over the
/// edges into i` and every edge `j -> i` weighted `deg[j]^-1/2 · w_ji · deg[i]^-1/2` (0 where a
/// degree is 0). Directed graphs keep their direction (the degree is the in-degree); weighted
/// edges work, and the weights stay differentiable. Returns the edges and their normalised
/// weights; [`to_propagation_matrix`] makes the matrix `GcnConv` multiplies.
///
/// # Examples
///
/// ```
/// use burn::tensor::{DType, Device, Int, Tensor, TensorData};
/// use sparsegrad_nn::{gcn_norm, gcn_norm_edge_index, to_propagation_matrix, to_undirected, GcnNormOptions};
///
/// let device = Device::flex();
/// let edge_index = Tensor::<2, Int>::from_data(TensorData::new(vec![0i64, 1, 1, 2], [2, 2]), (&device, DType::I64));
/// let (both, _) = to_undirected(&edge_index, None, 3)?;
/// let (edges, weights) = gcn_norm_edge_index(&both, None, 3, GcnNormOptions::default())?;
/// assert_eq!(weights.dims(), [7]); // 4 directed edges and 3 self loops
/// // The matrix GcnConv multiplies: the same as `gcn_norm` of the undirected edges.
/// let p = to_propagation_matrix(&edges, Some(&weights), 3)?;
/// let expected = gcn_norm(&[(0, 1), (1, 2)], 3, &device)?;
/// p.to_dense().into_data().assert_approx_eq::<f32>(&expected.to_dense().into_data(), Default::default());
/// # Ok::<(), sparsegrad_backend::SparseError>(())
/// ```
pub fn gcn_norm_edge_index(
    edge_index: &Tensor<2, Int>,
    edge_weight: Option<&Tensor<1>>,
    num_nodes: usize,
    options: GcnNormOptions,
) -> Result<(Tensor<2, Int>, Tensor<1>)> {
    edges_of(edge_index, edge_weight, num_nodes)?;
    ensure_allocatable(num_nodes, 8, "gcn_norm_edge_index: the degrees")?;
    let device = edge_index.device();
    let weight = match edge_weight {
        Some(w) => w.clone(),
        None => Tensor::<1>::ones([edge_index.dims()[1]], &device),
    };
    let (edge_index, weight) = if options.add_self_loops {
        let fill = if options.improved { 2.0 } else { 1.0 };
        let (ei, w) = add_remaining_self_loops(edge_index, Some(&weight), num_nodes, fill)?;
        (ei, w.expect("weights given"))
    } else {
        (edge_index.clone(), weight)
    };
    let e = edge_index.dims()[1];
    let sources = edge_index.clone().slice([0..1, 0..e]).reshape([e]);
    let targets = edge_index.clone().slice([1..2, 0..e]).reshape([e]);
    let deg = Tensor::<1>::zeros([num_nodes], (&device, weight.dtype())).select_assign(
        0,
        targets.clone(),
        weight.clone(),
        IndexingUpdateOp::Add,
    );
    // deg^-1/2, 0 where the degree is 0 (PyG masks the infinities).
    let zero = deg.clone().equal_elem(0.0);
    let inv_sqrt = deg.mask_fill(zero.clone(), 1.0).powf_scalar(-0.5).mask_fill(zero, 0.0);
    let norm = inv_sqrt.clone().select(0, sources) * weight * inv_sqrt.select(0, targets);
    Ok((edge_index, norm))
}

/// The sparse matrix `P [num_nodes, num_nodes]` with `P[target, source] = w` for every edge
/// (repeats summed; weights 1 when none are given), as CSR with int64 indices: `mm(P, X)` is
/// the sum of the messages `w · x_source` at each target, PyG's propagation. It is the
/// transpose of [`to_sparse_adjacency`] (PyG's `adj_t`).
pub fn to_propagation_matrix(
    edge_index: &Tensor<2, Int>,
    edge_weight: Option<&Tensor<1>>,
    num_nodes: usize,
) -> Result<SparseTensor<2>> {
    let (sources, targets) = edges_of(edge_index, edge_weight, num_nodes)?;
    let flipped = edge_tensor(targets, sources, &edge_index.device());
    sparse_of(flipped, edge_weight, num_nodes)
}

/// PyG's `to_torch_csr_tensor(edge_index, edge_weight)`: `A[source, target] = w` (repeats
/// summed; weights 1 when none are given), CSR with int64 indices.
pub fn to_sparse_adjacency(
    edge_index: &Tensor<2, Int>,
    edge_weight: Option<&Tensor<1>>,
    num_nodes: usize,
) -> Result<SparseTensor<2>> {
    edges_of(edge_index, edge_weight, num_nodes)?;
    sparse_of(edge_index.clone(), edge_weight, num_nodes)
}

fn sparse_of(indices: Tensor<2, Int>, edge_weight: Option<&Tensor<1>>, num_nodes: usize) -> Result<SparseTensor<2>> {
    let e = indices.dims()[1];
    let values = match edge_weight {
        Some(w) => w.clone(),
        None => Tensor::<1>::ones([e], &indices.device()),
    };
    SparseTensor::coo(indices, values, [num_nodes, num_nodes])?.to_sparse_csr()
}
