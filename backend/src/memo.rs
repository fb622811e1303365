//! [`PatternMemo`]: what a layer remembers of the index tensors it last checked, so that a
//! weight rebuilt from the same parameter tensors at every step is checked once, not at every
//! forward pass.
//!
//! A layer keeps its pattern in parameters that anyone can replace (a loaded record, a public
//! field), so it cannot trust them once and for all; reading them at every step would cost a
//! pass over the pattern per forward. The memo holds clones of the tensors that passed the
//! check (with the shape they were checked against) and recognises them by storage identity
//! ([`same_int_storage`]): a backend never writes a buffer two live tensors share, so the same
//! storage seen again holds the same, checked, values. Where the backend cannot tell, every
//! call checks again. The memo also keeps the pattern's transposed-view cache, so the weights
//! built from one pattern share one transpose.

use crate::error::Result;
use crate::host::same_int_storage;
use burn::tensor::{Int, Tensor};
use sparsegrad_kernels::pattern::TransposeCell;
use std::sync::{Arc, Mutex};

/// The index tensors (rank `D`) of the last pattern that passed a check, and the key (shape,
/// column count) it was checked for. Clones share the memory.
#[derive(Debug, Clone, Default)]
pub struct PatternMemo<const D: usize> {
    seen: Arc<Mutex<Option<Seen<D>>>>,
}

#[derive(Debug)]
struct Seen<const D: usize> {
    tensors: Vec<Tensor<D, Int>>,
    key: Vec<usize>,
    /// The transposed view of the pattern the tensors hold, shared by every weight built from
    /// them: a layer's backward passes transpose its pattern once.
    transposed: Arc<TransposeCell>,
}

impl<const D: usize> PatternMemo<D> {
    /// An empty memo.
    pub fn new() -> Self {
        Self::default()
    }

    /// The pattern's transposed-view cache when `tensors` are the storage last checked for
    /// `key`; else runs `check` and, when it passes, remembers them with a new cache.
    pub(crate) fn check_once(
        &self,
        tensors: &[&Tensor<D, Int>],
        key: &[usize],
        check: impl FnOnce() -> Result<()>,
    ) -> Result<Arc<TransposeCell>> {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = seen.as_ref() {
            let same = s.key == key
                && s.tensors.len() == tensors.len()
                && s.tensors.iter().zip(tensors).all(|(a, b)| same_int_storage(a, b));
            if same {
                return Ok(s.transposed.clone());
            }
        }
        check()?;
        let transposed = Arc::new(TransposeCell::new());
        *seen = Some(Seen {
            tensors: tensors.iter().map(|&t| t.clone()).collect(),
            key: key.to_vec(),
            transposed: transposed.clone(),
        });
        Ok(transposed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::SparseError;
    use burn::tensor::{DType, Device, TensorData};

    #[test]
    fn checks_once_per_storage_and_key() {
        let device = Device::flex();
        let ints =
            |v: Vec<i64>| Tensor::<1, Int>::from_data(TensorData::new(v.clone(), [v.len()]), (&device, DType::I64));
        let (a, b) = (ints(vec![0, 1, 2]), ints(vec![1, 0]));
        let memo = PatternMemo::<1>::new();
        let runs = std::cell::Cell::new(0);
        let check = |ok: bool| {
            runs.set(runs.get() + 1);
            if ok {
                Ok(())
            } else {
                Err(SparseError::Uncoalesced { operation: "probe" })
            }
        };
        assert!(memo.check_once(&[&a, &b], &[2, 3], || check(true)).is_ok());
        // The same storage (clones share it) and key: no second check.
        assert!(memo.check_once(&[&a.clone(), &b.clone()], &[2, 3], || check(false)).is_ok());
        // Equal values in new storage, or another key: checked again, and a failure is kept out.
        assert!(memo.check_once(&[&a, &ints(vec![1, 0])], &[2, 3], || check(false)).is_err());
        assert!(memo.check_once(&[&a, &b], &[2, 4], || check(false)).is_err());
        // A failed check leaves the memo as it was: the first pair is still known.
        assert!(memo.check_once(&[&a, &b], &[2, 3], || check(false)).is_ok());
        assert_eq!(runs.get(), 3);
        // Clones of the memo share it.
        let twin = memo.clone();
        assert!(twin.check_once(&[&a, &b], &[2, 3], || check(false)).is_ok());
        assert_eq!(runs.get(), 3);
    }
}
