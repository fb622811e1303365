//! Data-parallel gradients: the dense parameters (a GCN's weights) are replicated on every rank,
//! each rank's backward pass gives the gradient of its share of the loss, and
//! [`all_reduce_gradients`] sums them before the optimizer step, so that every rank takes the
//! same step and keeps identical weights (torch's `DistributedDataParallel`, by hand).
//!
//! All of a module's float parameters go through one `MPI_Allreduce` (packed in one buffer, in
//! the module's visiting order, which is the same on every rank); a parameter without a gradient
//! on a rank contributes zeros, so the ranks always call the same collective.

use crate::group::ProcessGroup;
use crate::invalid;
use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::{DType, Device, Tensor, TensorData};
use sparsegrad_backend::Result;

/// The parameters' ids, shapes and dtypes, in visiting order.
struct Collect {
    params: Vec<(ParamId, Vec<usize>, DType, Device)>,
}

impl ModuleVisitor for Collect {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let t = param.val();
        self.params.push((param.id, t.dims().to_vec(), t.dtype(), t.device()));
    }
}

fn take<const D: usize>(grads: &mut GradientsParams, id: ParamId) -> Option<Tensor<1>> {
    grads.remove::<D>(id).map(|g| g.flatten(0, D - 1))
}

fn put<const D: usize>(grads: &mut GradientsParams, id: ParamId, flat: Tensor<1>, dims: &[usize]) {
    let shape: [usize; D] = dims.try_into().expect("the parameter's rank");
    grads.register::<D>(id, flat.reshape(shape));
}

/// Sums `grads` (of `module`'s parameters) over the ranks, in place: collective, every rank calls
/// it with the same module. With `average`, divides by the number of ranks (for a loss that is a
/// mean on every rank); without, the sum (for a loss that each rank scales by the global count,
/// whose sum over the ranks is the whole loss). f32 and f64 parameters, up to 4 dimensions.
pub fn all_reduce_gradients<M: Module>(
    group: &ProcessGroup,
    module: &M,
    grads: GradientsParams,
    average: bool,
) -> Result<GradientsParams> {
    const OP: &str = "all_reduce_gradients";
    let mut collect = Collect { params: Vec::new() };
    module.visit(&mut collect);
    let mut grads = grads;
    let mut flat: Vec<f64> = Vec::new();
    for (id, dims, dtype, device) in &mut collect.params {
        if !matches!(dtype, DType::F32 | DType::F64) || dims.is_empty() || dims.len() > 4 {
            return Err(invalid(OP, format!("a {dtype:?} parameter of shape {dims:?}: f32 or f64, 1 to 4 dims")));
        }
        let (id, dims) = (*id, &*dims);
        let g = match dims.len() {
            1 => take::<1>(&mut grads, id),
            2 => take::<2>(&mut grads, id),
            3 => take::<3>(&mut grads, id),
            _ => take::<4>(&mut grads, id),
        };
        // Gradients live on the device without autodiff: the reduced ones go back there.
        match g {
            Some(g) => {
                *device = g.device();
                flat.extend(g.into_data().convert::<f64>().iter::<f64>());
            }
            None => {
                *device = device.clone().without_autodiff();
                flat.extend(std::iter::repeat_n(0.0, dims.iter().product()));
            }
        }
    }
    group.check_same(flat.len() as u64, OP, "the number of parameter elements")?;
    group.all_reduce_sum(&mut flat);
    let scale = if average { 1.0 / group.world_size() as f64 } else { 1.0 };
    let mut at = 0;
    for (id, dims, dtype, device) in collect.params {
        let len: usize = dims.iter().product();
        let values: Vec<f64> = flat[at..at + len].iter().map(|&v| v * scale).collect();
        at += len;
        let t = Tensor::<1>::from_data(TensorData::new(values, [len]).convert_dtype(dtype), &device);
        match dims.len() {
            1 => put::<1>(&mut grads, id, t, &dims),
            2 => put::<2>(&mut grads, id, t, &dims),
            3 => put::<3>(&mut grads, id, t, &dims),
            _ => put::<4>(&mut grads, id, t, &dims),
        }
    }
    Ok(grads)
}
