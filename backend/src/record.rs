//! Loading a record into a module that must check what it loads: sparse patterns in records
//! come from files (untrusted) and the kernels walk them unchecked, so the `Module` impls of
//! [`crate::module::SparseParam`] and of the sparse layers override `try_load_record` with
//! [`load_checked`]: burn's own loading, then the layer's check,
//! a failure being a `RecordError::Validation` naming the violation.

use burn::module::{Devices, Module, ModuleMapper, ModuleVisitor};
use burn::store::{ModuleRecord, RecordError};
use burn::tensor::Device;

/// `module` with `record` applied by burn's own loading, then `check`ed: the body of a layer's
/// `try_load_record` override. Burn applies a record through `map`; `Unchecked` forwards it
/// to the layer without a path component of its own, so the record's paths are the layer's.
pub fn load_checked<M: Module>(
    module: M,
    record: ModuleRecord,
    name: &str,
    check: impl FnOnce(&M) -> crate::error::Result<()>,
) -> Result<M, RecordError> {
    let loaded = Unchecked(module).try_load_record(record)?.0;
    check(&loaded)
        .map_err(|e| RecordError::Validation(format!("{name}: the record does not make a valid layer: {e}")))?;
    Ok(loaded)
}

/// A module with burn's default `try_load_record` (the trait's, which only this crate's layers
/// override); every other method is the inner module's.
#[derive(Clone, Debug)]
struct Unchecked<M>(M);

impl<M: Module> Module for Unchecked<M> {
    fn collect_devices(&self, devices: Devices) -> Devices {
        self.0.collect_devices(devices)
    }

    fn fork(self, device: &Device) -> Self {
        Self(self.0.fork(device))
    }

    fn to_device(self, device: &Device) -> Self {
        Self(self.0.to_device(device))
    }

    fn train(self) -> Self {
        Self(self.0.train())
    }

    fn valid(&self) -> Self {
        Self(self.0.valid())
    }

    fn materialize(self) -> Self {
        Self(self.0.materialize())
    }

    fn visit<V: ModuleVisitor>(&self, visitor: &mut V) {
        self.0.visit(visitor)
    }

    fn map<Mp: ModuleMapper>(self, mapper: &mut Mp) -> Self {
        Self(self.0.map(mapper))
    }
}
