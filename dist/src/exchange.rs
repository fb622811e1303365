//! The halo exchange as a differentiable primitive: `halo_exchange(X_local) = X_halo`, with its
//! backward rule beside it (the reverse exchange, summed at the owners).
//!
//! It is a burn backend extension (as the autodiff crate's `sparse_spmm`): implemented for Flex
//! by the host exchange of the plan, and for `Autodiff<B, C>` with the rule, so that `DistCsr::mm`
//! is `mm(A_local, cat(X_local, X_halo))` with burn's own autodiff tracking the local product,
//! the concatenation and this op. Communication happens inside the op, in the forward and in
//! the backward pass: every rank must run the same sequence of distributed products, and every
//! rank's loss must depend on each of them, or a rank waits for an exchange another never
//! starts (SPMD, as with torch's DistributedDataParallel).
//!
//! The values go through the host (a read-back, `MPI_Alltoallv` on host buffers, an upload):
//! zero-copy reads on Flex. f32 and f64 (the caller checks the dtype).

use crate::halo::HaloPlan;
use burn::backend::autodiff::{
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
    Autodiff,
};
use burn::backend::{backend_extension, read_sync, tensor::FloatTensor, Backend, Flex, TensorMetadata};
use burn::tensor::{DType, TensorData};
use std::sync::Arc;

/// The halo exchange of a [`crate::DistCsr`]'s plan (collective: every rank calls it).
///
/// The plan is opaque outside this crate; `DistCsr::mm` is the way in.
#[backend_extension(Flex, Autodiff)]
pub trait HaloExchange: Backend {
    /// The halo rows `[halo, d]` of this rank's rows `x [local, d]` of the dense operand.
    fn halo_exchange(x: FloatTensor<Self>, plan: Arc<Plan>) -> FloatTensor<Self>;
}

/// A halo plan as the primitive takes it (built by `DistCsr`).
#[derive(Debug)]
pub struct Plan(pub(crate) HaloPlan);

/// Which way the rows go: forward (owners to the ranks that need them) or backward (the
/// gradient of the halo back to the owners, summed).
#[derive(Debug, Clone, Copy)]
enum Direction {
    Forward,
    Backward,
}

/// One exchange on the host of any backend: read `t`, exchange, upload on `t`'s device. The
/// dtype and the exchange's size were checked by `DistCsr::mm`.
fn exchange<B: Backend>(t: FloatTensor<B>, plan: &HaloPlan, direction: Direction) -> FloatTensor<B> {
    let (device, shape) = (t.device(), t.shape());
    let width = shape[1];
    let rows = match direction {
        Direction::Forward => plan.rows_received(),
        Direction::Backward => plan.num_local,
    };
    let data = read_sync(B::float_into_data(t)).expect("halo exchange: reading the operand back");
    let failed = |e: sparsegrad_backend::SparseError| -> ! { panic!("halo exchange (checked by DistCsr::mm): {e}") };
    let out = match data.dtype() {
        DType::F64 => {
            let x = data.as_slice::<f64>().expect("an f64 tensor");
            let v = match direction {
                Direction::Forward => plan.forward(x, width),
                Direction::Backward => plan.backward(x, width),
            };
            TensorData::new(v.unwrap_or_else(|e| failed(e)), [rows, width])
        }
        DType::F32 => {
            let x = data.as_slice::<f32>().expect("an f32 tensor");
            let v = match direction {
                Direction::Forward => plan.forward(x, width),
                Direction::Backward => plan.backward(x, width),
            };
            TensorData::new(v.unwrap_or_else(|e| failed(e)), [rows, width])
        }
        other => panic!("halo exchange of {other:?} values (DistCsr::mm takes f32 and f64)"),
    };
    B::float_from_data(out, &device)
}

impl HaloExchange for Flex {
    fn halo_exchange(x: FloatTensor<Self>, plan: Arc<Plan>) -> FloatTensor<Self> {
        exchange::<Self>(x, &plan.0, Direction::Forward)
    }
}

/// Backward of `halo_exchange`; parent `[x]`.
#[derive(Debug)]
struct HaloBackward;

impl<B: Backend> Backward<B, 1> for HaloBackward {
    type State = Arc<Plan>;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [x_node] = ops.parents;
        // Consumed whether or not `x` wants a gradient: the owners wait for this rank's
        // contributions (the exchange is collective), so it always takes part.
        let g = grads.consume::<B>(&ops.node);
        let dx = exchange::<B>(g, &ops.state.0, Direction::Backward);
        if let Some(node) = x_node {
            grads.register::<B>(node.id, dx);
        }
    }
}

impl<B: HaloExchange, C: CheckpointStrategy> HaloExchange for Autodiff<B, C> {
    fn halo_exchange(x: FloatTensor<Self>, plan: Arc<Plan>) -> FloatTensor<Self> {
        let guards = [x.node()];
        let xp = x.into_primitive();
        match HaloBackward.prepare::<C>(guards).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let out = B::halo_exchange(xp, plan.clone());
                prep.finish(plan, out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::halo_exchange(xp, plan)),
        }
    }
}
