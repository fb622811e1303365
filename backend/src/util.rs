//! Small helpers shared by the tensor-level modules (and the autodiff crate): moving index
//! vectors in and out of burn Int tensors in a chosen dtype, and reshapes that take zero-size
//! dims literally.

use crate::host::with_ints;
use burn::backend::{
    ops::{FloatTensorOps, IntTensorOps},
    Dispatch,
};
use burn::tensor::{DType, Device, Int, Shape, Tensor, TensorData};

/// The backends whose devices the sparse ops run on in this build, as
/// [`SparseError::UnsupportedBackend`](crate::SparseError::UnsupportedBackend) names them.
#[cfg(not(feature = "cube"))]
pub const SUPPORTED_BACKENDS: &str =
    "Flex (`Device::flex()`); Cube devices (`Device::wgpu(..)`, `Device::cuda(..)`) need sparsegrad's feature `wgpu` or `cuda`";
/// The backends whose devices the sparse ops run on in this build, as
/// [`SparseError::UnsupportedBackend`](crate::SparseError::UnsupportedBackend) names them.
#[cfg(feature = "cube")]
pub const SUPPORTED_BACKENDS: &str =
    "Flex (`Device::flex()`) and Cube (`Device::wgpu(..)`, `Device::cuda(..)` and the other CubeCL runtimes)";

/// `Ok` where this build has the sparse kernels for `device`'s backend (Flex, and Cube with the
/// feature `cube`), with or without autodiff; else an
/// [`UnsupportedBackend`](crate::SparseError::UnsupportedBackend) error naming the device and
/// [`SUPPORTED_BACKENDS`]. burn's extension ops would panic instead ("Backend not supported for
/// custom op") at whichever op first reached a kernel, so the constructors call this once, as a
/// tensor enters the library: every op after works on tensors that passed it.
pub fn check_backend(device: &Device) -> crate::Result<()> {
    use burn::backend::DispatchDevice;
    let inner = device.clone().without_autodiff();
    match inner.as_dispatch() {
        DispatchDevice::Flex(_) => Ok(()),
        #[cfg(feature = "cube")]
        DispatchDevice::Cube(_) => Ok(()),
        // Which other variants exist depends on burn's features, unified across the user's build.
        #[allow(unreachable_patterns)]
        other => {
            Err(crate::SparseError::UnsupportedBackend { device: format!("{other:?}"), supported: SUPPORTED_BACKENDS })
        }
    }
}

/// `Ok` where `device` can run here: [`check_backend`], then one tiny op on the device (the sum
/// of `[1, 2]`, read back to the host and checked). A runtime that cannot start panics inside burn
/// at its first op (CUDA where `libcuda.so` or a GPU is missing; wgpu without an adapter), far from
/// the call that chose the device; this turns that panic into a
/// [`DeviceUnavailable`](crate::SparseError::DeviceUnavailable) error naming the device and what
/// the runtime said, so that a program can exit with a message instead of a panic trace.
///
/// The panic hook is muted while the probe runs, and it is process-wide: call this once at
/// start-up, before other threads use burn.
pub fn check_device(device: &Device) -> crate::Result<()> {
    check_backend(device)?;
    let unavailable = |reason: String| crate::SparseError::DeviceUnavailable { device: format!("{device:?}"), reason };
    // The runtime may fail on a thread of its own (CubeCL's server thread loads the driver), and
    // this thread then only sees a closed channel: the muted hook keeps every panic's message, and
    // the first one is the reason.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let hook = std::panic::take_hook();
    let record = std::sync::Arc::clone(&seen);
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into());
        record.lock().unwrap_or_else(|e| e.into_inner()).push(message);
    }));
    // AssertUnwindSafe: the closure owns nothing but a clone of the device, and on a panic the
    // device is reported unusable and not used again by this function.
    let probe = device.clone();
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let t = Tensor::<1>::from_floats([1.0, 2.0], &probe);
        t.sum().into_data().try_to_vec::<f32>()
    }));
    std::panic::set_hook(hook);
    match ran {
        Ok(Ok(sum)) if sum == [3.0] => Ok(()),
        Ok(Ok(sum)) => Err(unavailable(format!("the probe 1 + 2 gave {sum:?}"))),
        Ok(Err(e)) => Err(unavailable(format!("the probe's result could not be read back: {e:?}"))),
        Err(_) => {
            let first = seen.lock().unwrap_or_else(|e| e.into_inner()).first().cloned();
            Err(unavailable(first.unwrap_or_else(|| "its runtime panicked at the first op".into())))
        }
    }
}

/// An Int tensor of `shape` holding `data`, stored in `dtype`. Every value must fit the dtype:
/// callers size the dtype by the dimensions the values index ([`index_dtype_for`] widens it for
/// derived dimensions), and a value that does not fit is a panic naming it, never a silent
/// narrowing (which would turn a valid index into a wrong one).
pub fn int_tensor<const N: usize>(data: Vec<i64>, shape: [usize; N], dtype: DType, device: &Device) -> Tensor<N, Int> {
    try_int_tensor(data, shape, dtype, device).unwrap_or_else(|e| panic!("{e}"))
}

/// [`int_tensor`] with the narrowed copy's allocation as an error, for index arrays sized by a
/// dimension rather than by stored entries (a compressed tensor's pointers over 10^9 rows).
pub fn try_int_tensor<const N: usize>(
    data: Vec<i64>,
    shape: [usize; N],
    dtype: DType,
    device: &Device,
) -> crate::Result<Tensor<N, Int>> {
    fn narrow<T: TryFrom<i64>>(data: Vec<i64>, dtype: DType) -> crate::Result<Vec<T>> {
        let mut out = crate::alloc::try_vec(data.len(), "index tensor")?;
        out.extend(
            data.into_iter()
                .map(|v| T::try_from(v).unwrap_or_else(|_| panic!("index {v} does not fit the index dtype {dtype:?}"))),
        );
        Ok(out)
    }
    let data = match dtype {
        DType::I64 => TensorData::new(data, shape),
        DType::I32 => TensorData::new(narrow::<i32>(data, dtype)?, shape),
        DType::I16 => TensorData::new(narrow::<i16>(data, dtype)?, shape),
        DType::I8 => TensorData::new(narrow::<i8>(data, dtype)?, shape),
        other => panic!("index tensors hold a signed integer dtype, got {other:?}"),
    };
    Ok(Tensor::from_data(data, (device, dtype)))
}

/// The index dtype for indices up to `max` derived from indices of `dtype`: `dtype` itself when
/// it holds `max`, else the narrowest wider signed integer dtype that does (int64 at most). A
/// derived pattern (a batch laid out block-diagonally, a concatenation, a reshape) can address
/// a dimension its input's dtype does not reach; its indices are widened, never narrowed.
pub fn index_dtype_for(dtype: DType, max: u64) -> DType {
    // By variant, not by `==`: `DType` carries payloads (quantisation schemes) whose bytes a
    // comparison of two payload-free variants may read uninitialised.
    let widths = [
        (DType::I8, i8::MAX as u64),
        (DType::I16, i16::MAX as u64),
        (DType::I32, i32::MAX as u64),
        (DType::I64, i64::MAX as u64),
    ];
    let from = match dtype {
        DType::I8 => 0,
        DType::I16 => 1,
        DType::I32 => 2,
        _ => 3,
    };
    widths[from..].iter().find(|&&(_, limit)| max <= limit).map_or(DType::I64, |&(d, _)| d)
}

/// The elements of an Int tensor widened to i64.
pub fn read_i64<const N: usize>(t: &Tensor<N, Int>) -> Vec<i64> {
    with_ints(t, |s| s.to_i64())
}

/// Product of sizes (1 for none); a panic on overflow (shapes are checked to fit `i64` when
/// built, so a product of their sizes overflowing is a bug, never a wrapped count).
pub fn numel(sizes: &[usize]) -> usize {
    if sizes.contains(&0) {
        return 0;
    }
    sizes
        .iter()
        .try_fold(1usize, |acc, &s| acc.checked_mul(s))
        .unwrap_or_else(|| panic!("the element count of {sizes:?} overflows usize"))
}

/// `t.reshape(shape)` that also holds for zero-size dims. burn's `reshape` reads a 0 in the
/// target shape as "keep the source's size at this position" (ONNX semantics), so reshaping an
/// empty tensor to a shape with a zero gets the wrong shape or panics; the dispatch-level op takes
/// the shape literally (and is recorded by autodiff like `reshape`).
pub fn reshape<const A: usize, const B: usize>(t: Tensor<A>, shape: [usize; B]) -> Tensor<B> {
    if shape.contains(&0) {
        // Through `[0]`: burn's Cube backend misreads some reshapes of a strided empty tensor
        // (an index past its rank in `reshape_analysis`); a flat empty one reshapes as is.
        let flat = Dispatch::float_reshape(t.into_dispatch(), Shape::from([0]));
        Tensor::from_dispatch(Dispatch::float_reshape(flat, Shape::from(shape)))
    } else {
        t.reshape(shape)
    }
}

/// [`reshape`] for Int tensors.
pub fn reshape_int<const A: usize, const B: usize>(t: Tensor<A, Int>, shape: [usize; B]) -> Tensor<B, Int> {
    if shape.contains(&0) {
        // Through `[0]`, as `reshape`.
        let flat = Dispatch::int_reshape(t.into_dispatch(), Shape::from([0]));
        Tensor::from_dispatch(Dispatch::int_reshape(flat, Shape::from(shape)))
    } else {
        t.reshape(shape)
    }
}
