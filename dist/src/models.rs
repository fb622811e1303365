//! The models of `sparsegrad::nn::models` over a [`DistCsr`]: the same modules (so the same
//! initialisation, optimizer and records as one process), their propagation distributed.
//!
//! Every rank holds the whole model (data-parallel weights, summed gradients:
//! [`crate::all_reduce_gradients`]) and its rows of the node features; the graph convolution
//! `Â (X W) + b` multiplies `X W` locally and propagates it with [`DistCsr::mm`].

use crate::csr::DistCsr;
use burn::tensor::activation::relu;
use burn::tensor::Tensor;
use sparsegrad_autodiff::matmul::try_mm;
use sparsegrad_backend::{Result, SparseTensor};
use sparsegrad_nn::models::Gcn;
use sparsegrad_nn::GcnConv;

/// `Â (X W) + b` of one layer for `xw = X W`, this rank's rows.
fn conv(layer: &GcnConv, a: &DistCsr, xw: Tensor<2>) -> Result<Tensor<2>> {
    let y = a.mm(xw)?;
    Ok(match &layer.bias {
        Some(b) => y + b.val().unsqueeze::<2>(),
        None => y,
    })
}

fn rest(model: &Gcn, a: &DistCsr, mut h: Tensor<2>) -> Result<Tensor<2>> {
    for layer in &model.layers[1..] {
        h = conv(layer, a, model.dropout.forward(relu(h)).matmul(layer.weight.val()))?;
    }
    Ok(h)
}

/// [`Gcn::forward`] over a distributed propagation matrix: this rank's logits `[local, classes]`
/// from its rows of the dense features `x [local, d_input]`, in PyG's argument order (features,
/// then graph). Collective (one exchange a layer).
pub fn gcn_forward(model: &Gcn, x: Tensor<2>, a: &DistCsr) -> Result<Tensor<2>> {
    let first = &model.layers[0];
    let h = conv(first, a, model.dropout.forward(x).matmul(first.weight.val()))?;
    rest(model, a, h)
}

/// [`Gcn::forward_sparse`] over a distributed propagation matrix: this rank's rows of sparse
/// features `x [local, d_input]` (`X W` a local sparse product).
pub fn gcn_forward_sparse(model: &Gcn, x: &SparseTensor<2>, a: &DistCsr) -> Result<Tensor<2>> {
    let first = &model.layers[0];
    let xw = try_mm(&model.input_dropout.forward(x), first.weight.val())?;
    let h = conv(first, a, xw)?;
    rest(model, a, h)
}
