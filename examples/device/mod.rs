//! The `--device NAME` option of the examples: which burn device they train on. Flex (the CPU,
//! always there) or, with the crate's `wgpu` feature, burn's Cube backend through wgpu (a GPU, or
//! Mesa's lavapipe on a machine without one).

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
        match self.device {
            DeviceName::Flex => Ok(Device::flex()),
            #[cfg(feature = "wgpu")]
            DeviceName::Wgpu => Ok(Device::wgpu(burn::tensor::DeviceKind::DefaultDevice)),
            #[cfg(not(feature = "wgpu"))]
            DeviceName::Wgpu => Err("--device wgpu needs a build with `--features wgpu`".into()),
        }
    }
}
