//! The `--device NAME` option of the examples: which burn device they train on. Flex (the CPU,
//! always there) or burn's Cube backend: through wgpu with the crate's `wgpu` feature (a GPU, or
//! Mesa's lavapipe on a machine without one), or on CUDA with its `cuda` feature. A Cube device is
//! probed once (`check_device`), so that a machine without its runtime or GPU ends the example
//! with a message, not a panic trace from the first op.

#![allow(dead_code)]

use burn::tensor::Device;
use clap::{Args, ValueEnum};

/// A burn device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DeviceName {
    /// burn's CPU backend.
    Flex,
    /// burn's Cube backend on wgpu's default adapter (build with `--features wgpu`).
    Wgpu,
    /// burn's Cube backend on the first CUDA GPU (build with `--features cuda`).
    Cuda,
}

/// The device to train on.
#[derive(Args, Debug)]
pub struct DeviceArgs {
    /// The device.
    #[arg(long, value_enum, default_value = "flex")]
    pub device: DeviceName,
}

impl DeviceArgs {
    /// The device, or why this build cannot give it.
    pub fn device(&self) -> Result<Device, String> {
        let device = match self.device {
            DeviceName::Flex => Device::flex(),
            #[cfg(feature = "wgpu")]
            DeviceName::Wgpu => Device::wgpu(burn::tensor::DeviceKind::DefaultDevice),
            #[cfg(not(feature = "wgpu"))]
            DeviceName::Wgpu => return Err("--device wgpu needs a build with `--features wgpu`".into()),
            #[cfg(feature = "cuda")]
            DeviceName::Cuda => Device::cuda(0),
            #[cfg(not(feature = "cuda"))]
            DeviceName::Cuda => return Err("--device cuda needs a build with `--features cuda`".into()),
        };
        sparsegrad::backend::util::check_device(&device).map_err(|e| e.to_string())?;
        Ok(device)
    }
}
