//! burn's `fusion` over the Cube backend: how the extension traits' kernels reach
//! `Fusion<CubeBackend>` ([`super::FusedCube`], feature `fusion`).
//!
//! Fusion records operations lazily and compiles runs of element-wise ones into one kernel; an
//! extension's kernel is opaque to it. Each trait method of the fused backend therefore:
//! 1. resolves its input tensors to the Cube backend's ([`float`], [`int`]). That makes fusion
//!    execute what it has queued for them; nothing is read back to the host;
//! 2. runs the Cube impl on them, the same kernels as without `fusion`;
//! 3. hands the outputs back to fusion ([`publish`]) the way burn's own `from_data` hands over a
//!    new buffer: a handle registered with the client and an `Init` operation for its id.
//!
//! The call is eager rather than deferred into fusion's queue: several kernels take the
//! pattern's cell by reference (plans made once per pattern), and some read a count back to
//! size their output (`coalesce`, SpGEMM), so the outputs' shapes are not known before they run.
//! Element-wise work between two sparse ops still fuses.
//!
//! Why not a custom operation (`OperationIr::Custom`) for the outputs: with burn-fusion 0.22.1 an
//! int output of a custom operation, once dropped, left a later fused `zeros` + `cat` with
//! unwritten rows in its buffer (`shape::stack_hstack_vstack_match_dense` caught it, even with the
//! kernel replaced by a host computation), where the same tensor registered as an `Init` handle
//! gave the right values.

use super::CubeBackend;
use burn::backend::fusion::{Client, FusionBackend, FusionTensor, NoOp};
use burn::backend::ir::{InitOperationIr, OperationIr};
use burn::backend::TensorMetadata;
use burn_cubecl::tensor::CubeTensor;

/// The runtime fusion runs the Cube backend on.
type Runtime = <CubeBackend as FusionBackend>::FusionRuntime;

/// A tensor of the fused backend (its float and int tensors are both this type).
pub(crate) type Fused = FusionTensor<Runtime>;

/// The Cube tensor behind a fused float tensor, once what fusion queued for it has run.
pub(crate) fn float(t: Fused) -> CubeTensor {
    t.client.clone().resolve_tensor_float::<CubeBackend>(t)
}

/// The Cube tensor behind a fused int tensor, once what fusion queued for it has run.
pub(crate) fn int(t: Fused) -> CubeTensor {
    t.client.clone().resolve_tensor_int::<CubeBackend>(t)
}

/// An output of a kernel, with the kind of tensor fusion is to see it as.
pub(crate) enum Out {
    Float(CubeTensor),
    Int(CubeTensor),
}

/// The kernels' outputs as fused tensors on `client`'s device, in order.
pub(crate) fn publish<const N: usize>(client: &Client<Runtime>, outs: [Out; N]) -> [Fused; N] {
    outs.map(|out| {
        let (shape, dtype) = {
            let (Out::Float(t) | Out::Int(t)) = &out;
            (t.shape(), t.dtype())
        };
        let handle = match out {
            Out::Float(t) => <CubeBackend as burn::backend::ir::BackendIr>::float_tensor_handle(t),
            Out::Int(t) => <CubeBackend as burn::backend::ir::BackendIr>::int_tensor_handle(t),
        };
        let desc = InitOperationIr::create(shape, dtype, || client.register_tensor_handle(handle));
        let [t] = client
            .register(
                burn::backend::fusion::stream::StreamId::current(),
                OperationIr::Init(desc),
                NoOp::<CubeBackend>::new(),
            )
            .try_into()
            .unwrap_or_else(|_| unreachable!("an init operation registers one tensor"));
        t
    })
}

/// A fused float tensor from one kernel output.
pub(crate) fn publish_float(client: &Client<Runtime>, t: CubeTensor) -> Fused {
    let [t] = publish(client, [Out::Float(t)]);
    t
}

/// A fused int tensor from one kernel output.
pub(crate) fn publish_int(client: &Client<Runtime>, t: CubeTensor) -> Fused {
    let [t] = publish(client, [Out::Int(t)]);
    t
}
