//! `sparsegrad::dist::all_reduce_gradients_devices` on CUDA GPUs (burn's NCCL all-reduce), under
//! `SPARSEGRAD_TEST_DEVICE=cuda` in a `cuda` build (`bench/gpu/run.sh` runs it on the GPU
//! machine; with one GPU the collective spans one device). Elsewhere the refusals are the dist
//! crate's unit tests.

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::optim::GradientsParams;
use burn::tensor::{Device, DeviceType, Tensor, TensorData};
use sparsegrad::dist::all_reduce_gradients_devices;

/// Replica `i`'s gradients: the loss `(i + 1) * sum(model(x_i))` with `x_i` a fixed input of its
/// own, so that every device contributes a different gradient.
fn grads_of(model: &Linear, i: usize, device: &Device) -> GradientsParams {
    let values: Vec<f32> = (0..12).map(|k| ((k * 7 + i * 5) % 11) as f32 / 11.0 - 0.4).collect();
    let x = Tensor::<2>::from_data(TensorData::new(values, [4, 3]), &device.clone().autodiff());
    let loss = model.forward(x).sum().mul_scalar((i + 1) as f32);
    GradientsParams::from_grads(loss.backward(), model)
}

fn weight_grad(grads: &GradientsParams, model: &Linear) -> Vec<f32> {
    let g = grads.get::<2>(model.weight.id).expect("the weight's gradient");
    g.into_data().convert::<f32>().try_to_vec::<f32>().unwrap()
}

#[test]
fn gradients_summed_and_averaged_over_the_gpus() {
    if std::env::var("SPARSEGRAD_TEST_DEVICE").as_deref() != Ok("cuda") {
        return; // needs CUDA GPUs: run by bench/gpu/run.sh on the GPU machine
    }
    let devices: Vec<Device> = Device::enumerate(DeviceType::Cuda).into_iter().collect();
    assert!(!devices.is_empty(), "SPARSEGRAD_TEST_DEVICE=cuda without a CUDA device");
    let model: Linear = LinearConfig::new(3, 2).init(&devices[0].clone().autodiff());
    let replicas: Vec<Linear> = devices.iter().map(|d| model.clone().fork(&d.clone().autodiff())).collect();
    // The expected sum, from each replica's own gradients read before any reduction.
    let mut expected = vec![0.0f32; 6];
    for (i, (r, d)) in replicas.iter().zip(&devices).enumerate() {
        for (e, g) in expected.iter_mut().zip(weight_grad(&grads_of(r, i, d), r)) {
            *e += g;
        }
    }
    for average in [false, true] {
        let grads = replicas.iter().zip(&devices).enumerate().map(|(i, (r, d))| grads_of(r, i, d)).collect();
        let reduced = all_reduce_gradients_devices(&model, grads, &devices, average).unwrap();
        let scale = if average { 1.0 / devices.len() as f32 } else { 1.0 };
        for (g, r) in reduced.iter().zip(&replicas) {
            for (got, want) in weight_grad(g, r).into_iter().zip(&expected) {
                assert!(
                    (got - want * scale).abs() <= 1e-5 * (1.0 + want.abs()),
                    "average {average}: {got} against {}",
                    want * scale
                );
            }
        }
    }
}
