//! Data-parallel gradients over the GPUs of one process, on burn's collective all-reduce (NCCL on
//! CUDA): [`all_reduce_gradients_devices`].
//!
//! burn 0.22's collectives run inside one process: cubecl's CUDA runtime creates the NCCL
//! communicator from a unique id it keeps in a process-wide map, so GPUs driven by different
//! processes (MPI ranks) cannot join one NCCL group through burn. The way burn offers multi-GPU
//! training on one node is therefore one process, one thread (or one model replica) a GPU, and an
//! all-reduce across the devices; this file wires that into the same contract as the MPI path's
//! [`all_reduce_gradients`](crate::all_reduce_gradients): every replica's gradients summed (or
//! averaged) parameter by parameter, so that every replica takes the same optimizer step.
//!
//! It lives outside the feature `mpi`: it needs no MPI, only burn's `cuda` runtime (this crate's
//! feature `cuda`). Other devices are refused with an error, because burn's collective on a
//! device without one (Flex, wgpu, CPU) panics inside cubecl or burn without naming the device.

use crate::invalid;
use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::distributed::{all_reduce, ReduceOperation};
use burn::tensor::{Device, Tensor};
use sparsegrad_backend::Result;

const OP: &str = "all_reduce_gradients_devices";

/// The float parameters' ids and ranks, in visiting order (the same in every replica: a replica
/// is the module forked to another device, which keeps the ids).
struct Params(Vec<(ParamId, usize)>);

impl ModuleVisitor for Params {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.0.push((param.id, D));
    }
}

/// Whether burn runs collectives on `device` in this build: CUDA devices (NCCL) with the feature
/// `cuda`; nothing without it.
fn has_collectives(device: &Device) -> bool {
    #[cfg(feature = "cuda")]
    {
        use burn::backend::DispatchDevice;
        use burn::backend::RuntimeId;
        #[allow(unreachable_patterns)]
        match device.clone().without_autodiff().as_dispatch() {
            DispatchDevice::Cube(cube) => cube.runtime() == RuntimeId::Cuda,
            _ => false,
        }
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = device;
        false
    }
}

/// Sums the gradients of replicas of `module` over the GPUs of this process, with burn's
/// all-reduce (NCCL on CUDA): `grads[i]` holds replica `i`'s gradients, on `devices[i]`. Returns
/// the reduced gradients in the same order, each on its device; with `average`, divided by the
/// number of devices (for a loss that is a mean on every replica).
///
/// `module` is any one replica (the parameters' ids and ranks are read from it). A parameter
/// without a gradient on some replica counts as zeros there, so every device takes part in every
/// collective; a parameter without a gradient on any replica is left out (nothing to reduce).
/// Errors: a device count that differs from the gradient count, no device, a device named twice,
/// a device without collectives in this build (only CUDA has them, with the feature `cuda`), a
/// parameter of rank above 4, or replicas whose gradients of one parameter differ in shape or
/// dtype.
///
/// Compiled in CI (`cuda-check`), not run there: it needs CUDA GPUs (`docs/distributed.md`).
pub fn all_reduce_gradients_devices<M: Module>(
    module: &M,
    grads: Vec<GradientsParams>,
    devices: &[Device],
    average: bool,
) -> Result<Vec<GradientsParams>> {
    if devices.is_empty() {
        return Err(invalid(OP, "no device"));
    }
    if grads.len() != devices.len() {
        return Err(invalid(OP, format!("{} gradient sets for {} devices: one a device", grads.len(), devices.len())));
    }
    // Gradients live on the devices without autodiff; the collective names those.
    let devices: Vec<Device> = devices.iter().map(|d| d.clone().without_autodiff()).collect();
    for (i, d) in devices.iter().enumerate() {
        if let Some(first) = devices[..i].iter().position(|e| e == d) {
            return Err(invalid(OP, format!("device {d:?} named twice (positions {first} and {i})")));
        }
    }
    if let Some((i, d)) = devices.iter().enumerate().find(|(_, d)| !has_collectives(d)) {
        return Err(invalid(
            OP,
            format!("device {d:?} (position {i}) has no collective all-reduce in this build: CUDA devices, with the feature `cuda`"),
        ));
    }
    let mut params = Params(Vec::new());
    module.visit(&mut params);
    let op = if average { ReduceOperation::Mean } else { ReduceOperation::Sum };
    let mut grads = grads;
    for (id, rank) in params.0 {
        match rank {
            1 => reduce_param::<1>(&mut grads, id, &devices, op)?,
            2 => reduce_param::<2>(&mut grads, id, &devices, op)?,
            3 => reduce_param::<3>(&mut grads, id, &devices, op)?,
            4 => reduce_param::<4>(&mut grads, id, &devices, op)?,
            _ => return Err(invalid(OP, format!("a parameter of rank {rank}: 1 to 4 dims"))),
        }
    }
    Ok(grads)
}

/// One parameter's all-reduce: every device submits its gradient (zeros where it has none), then
/// every result is resolved (the collective completes on all devices before any is read).
fn reduce_param<const D: usize>(
    grads: &mut [GradientsParams],
    id: ParamId,
    devices: &[Device],
    op: ReduceOperation,
) -> Result<()> {
    let taken: Vec<Option<Tensor<D>>> = grads.iter_mut().map(|g| g.remove::<D>(id)).collect();
    let Some(like) = taken.iter().flatten().next() else {
        // No replica has it (a parameter outside the loss everywhere): nothing to reduce.
        return Ok(());
    };
    let (shape, dtype) = (like.shape(), like.dtype());
    // Everything is checked before the first submission: a device that joined the collective
    // while another never does would wait for ever.
    let mut inputs = Vec::with_capacity(devices.len());
    for (g, device) in taken.into_iter().zip(devices) {
        inputs.push(match g {
            Some(g) if g.shape() == shape && g.dtype() == dtype => g.to_device(device),
            Some(g) => {
                return Err(invalid(
                    OP,
                    format!(
                        "parameter {id}: a gradient of shape {:?} {:?} beside {shape:?} {dtype:?}",
                        g.shape(),
                        g.dtype()
                    ),
                ))
            }
            None => Tensor::<D>::zeros(shape.clone(), (device, dtype)),
        });
    }
    let submitted: Vec<_> = inputs.into_iter().map(|g| all_reduce(g, op, devices.to_vec())).collect();
    for (g, collective) in grads.iter_mut().zip(submitted) {
        g.register::<D>(id, collective.resolve());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::nn::{Linear, LinearConfig};

    fn message(r: Result<Vec<GradientsParams>>) -> String {
        match r {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted"),
        }
    }

    /// Every refusal happens before any collective, on any machine: the checks name the count,
    /// the repeated device, and a device without collectives (Flex here; wgpu and CPU alike).
    #[test]
    fn refuses_before_any_collective() {
        let flex = Device::flex();
        let model: Linear = LinearConfig::new(3, 2).init(&flex.clone().autodiff());
        let grads = || vec![GradientsParams::new()];
        assert!(message(all_reduce_gradients_devices(&model, grads(), &[], false)).contains("no device"));
        let m = message(all_reduce_gradients_devices(&model, grads(), &[flex.clone(), flex.clone()], false));
        assert!(m.contains("1 gradient sets for 2 devices"), "{m}");
        let two = vec![GradientsParams::new(), GradientsParams::new()];
        let m = message(all_reduce_gradients_devices(&model, two, &[flex.clone(), flex.clone().autodiff()], true));
        assert!(m.contains("named twice (positions 0 and 1)"), "{m}");
        let m = message(all_reduce_gradients_devices(&model, grads(), std::slice::from_ref(&flex), true));
        assert!(m.contains("position 0") && m.contains("no collective all-reduce"), "{m}");
    }
}
