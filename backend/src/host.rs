//! Host access to tensor data for the index-algebra kernels, behind the burn extension trait
//! [`HostAccess`].
//!
//! Index algebra (sorting, coalescing, compressing, validating) is untracked integer work that
//! runs on the CPU over slices. Flex hands out its storage zero-copy; every other backend gets a
//! correct default that reads the tensor back. Autodiff devices delegate to their inner backend:
//! reading data never records anything on the graph.

use burn::backend::{
    backend_extension, read_sync,
    tensor::{FloatTensor, IntTensor},
    Backend, Flex, TensorMetadata,
};
use burn::tensor::{DType, TensorData};
use half::{bf16, f16};

/// A borrowed view of integer tensor data, in its stored dtype.
#[derive(Debug, Clone, Copy)]
pub enum IntSlice<'a> {
    /// 64-bit indices.
    I64(&'a [i64]),
    /// 32-bit indices.
    I32(&'a [i32]),
    /// 16-bit indices.
    I16(&'a [i16]),
    /// 8-bit indices.
    I8(&'a [i8]),
}

/// A borrowed view of float tensor data, in its stored dtype.
#[derive(Debug, Clone, Copy)]
pub enum FloatSlice<'a> {
    /// f64 values.
    F64(&'a [f64]),
    /// f32 values.
    F32(&'a [f32]),
    /// f16 values.
    F16(&'a [f16]),
    /// bf16 values.
    BF16(&'a [bf16]),
}

impl IntSlice<'_> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            IntSlice::I64(s) => s.len(),
            IntSlice::I32(s) => s.len(),
            IntSlice::I16(s) => s.len(),
            IntSlice::I8(s) => s.len(),
        }
    }

    /// Whether the view holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements at positions `at` (each below `len()`), widened to i64: a gather without
    /// the copy of the whole slice that `to_i64` makes first.
    ///
    /// # Panics
    /// If a position is out of range.
    pub fn gather_i64(&self, at: &[i64]) -> Vec<i64> {
        match self {
            IntSlice::I64(s) => at.iter().map(|&j| s[j as usize]).collect(),
            IntSlice::I32(s) => at.iter().map(|&j| s[j as usize] as i64).collect(),
            IntSlice::I16(s) => at.iter().map(|&j| s[j as usize] as i64).collect(),
            IntSlice::I8(s) => at.iter().map(|&j| s[j as usize] as i64).collect(),
        }
    }

    /// The values widened to i64 (a copy; kernels that care about speed match on the variant).
    pub fn to_i64(&self) -> Vec<i64> {
        match self {
            IntSlice::I64(s) => s.to_vec(),
            IntSlice::I32(s) => s.iter().map(|&v| v as i64).collect(),
            IntSlice::I16(s) => s.iter().map(|&v| v as i64).collect(),
            IntSlice::I8(s) => s.iter().map(|&v| v as i64).collect(),
        }
    }
}

impl FloatSlice<'_> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            FloatSlice::F64(s) => s.len(),
            FloatSlice::F32(s) => s.len(),
            FloatSlice::F16(s) => s.len(),
            FloatSlice::BF16(s) => s.len(),
        }
    }

    /// Whether the view holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values widened to f64 (a copy, for printing and checks, not for hot paths).
    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            FloatSlice::F64(s) => s.to_vec(),
            FloatSlice::F32(s) => s.iter().map(|&v| v as f64).collect(),
            FloatSlice::F16(s) => s.iter().map(|v| v.to_f64()).collect(),
            FloatSlice::BF16(s) => s.iter().map(|v| v.to_f64()).collect(),
        }
    }

    /// The positions of the elements whose value (widened to f64) satisfies `keep`, ascending:
    /// read in place, without `to_f64`'s copy.
    pub fn positions(&self, keep: impl Fn(f64) -> bool) -> Vec<i64> {
        fn of<T: Copy>(s: &[T], wide: impl Fn(T) -> f64, keep: impl Fn(f64) -> bool) -> Vec<i64> {
            // Room for every position, each written and kept (the length moves past it) where
            // `keep` holds: no branch on the values (a filter keeping most of them, as relu in
            // a sparse DNN, mispredicts on each dropped one) and no regrowth of the output.
            let mut out: Vec<i64> = Vec::with_capacity(s.len());
            let spare = &mut out.spare_capacity_mut()[..s.len()];
            let mut n = 0;
            for (j, &x) in s.iter().enumerate() {
                spare[n].write(j as i64);
                n += usize::from(keep(wide(x)));
            }
            // SAFETY: the first `n` elements were written: `n` moves past an element only in
            // the step that wrote it.
            unsafe { out.set_len(n) };
            out
        }
        match self {
            FloatSlice::F64(s) => of(s, |v| v, keep),
            FloatSlice::F32(s) => of(s, |v| v as f64, keep),
            FloatSlice::F16(s) => of(s, |v| v.to_f64(), keep),
            FloatSlice::BF16(s) => of(s, |v| v.to_f64(), keep),
        }
    }
}

fn with_int_data(data: &TensorData, f: &mut dyn FnMut(IntSlice<'_>)) -> usize {
    let n = data.num_elements();
    match data.dtype() {
        DType::I64 => f(IntSlice::I64(data.as_slice().expect("i64 data"))),
        DType::I32 => f(IntSlice::I32(data.as_slice().expect("i32 data"))),
        DType::I16 => f(IntSlice::I16(data.as_slice().expect("i16 data"))),
        DType::I8 => f(IntSlice::I8(data.as_slice().expect("i8 data"))),
        other => {
            let data = data.clone().convert_dtype(DType::I64);
            let _ = other;
            f(IntSlice::I64(data.as_slice().expect("i64 data")))
        }
    }
    n
}

fn with_float_data(data: &TensorData, f: &mut dyn FnMut(FloatSlice<'_>)) -> usize {
    let n = data.num_elements();
    match data.dtype() {
        DType::F64 => f(FloatSlice::F64(data.as_slice().expect("f64 data"))),
        DType::F32 => f(FloatSlice::F32(data.as_slice().expect("f32 data"))),
        DType::F16 => f(FloatSlice::F16(data.as_slice().expect("f16 data"))),
        DType::BF16 => f(FloatSlice::BF16(data.as_slice().expect("bf16 data"))),
        _ => {
            let data = data.clone().convert_dtype(DType::F32);
            f(FloatSlice::F32(data.as_slice().expect("f32 data")))
        }
    }
    n
}

/// Borrowing host views of tensor storage, the one door through which index algebra reaches data.
#[backend_extension(Flex, Cube: cfg(feature = "cube"), Autodiff)]
#[diagnostic::on_unimplemented(
    message = "sparsegrad has no kernels for the backend `{Self}` (`HostAccess` is not implemented)",
    label = "no sparsegrad kernels for this backend",
    note = "a `Fusion<CubeBackend>` here means that burn's feature `fusion` is on (burn's default features turn it on) and sparsegrad's is off: turn on sparsegrad's `fusion` with `wgpu`, `sparsegrad = {{ version = \"0.1\", features = [\"wgpu\", \"fusion\"] }}` (see `sparsegrad::guide::gpu`)"
)]
pub trait HostAccess: Backend {
    /// Calls `f` with the elements of an Int tensor in row-major order.
    fn with_int_slice(tensor: IntTensor<Self>, f: &mut dyn FnMut(IntSlice<'_>)) -> usize {
        let data = read_sync(Self::int_into_data(tensor)).expect("int tensor readback");
        with_int_data(&data, f)
    }

    /// Calls `f` with the elements of a Float tensor in row-major order.
    fn with_float_slice(tensor: &FloatTensor<Self>, f: &mut dyn FnMut(FloatSlice<'_>)) -> usize {
        let data = read_sync(Self::float_into_data(tensor.clone())).expect("float tensor readback");
        with_float_data(&data, f)
    }

    /// Whether two Int tensors are views of the same stored elements (one buffer, the same
    /// offset, shape, strides and dtype), and so hold the same values for as long as both live.
    /// `false` where the backend cannot tell (the default): callers treat it as "maybe not".
    fn same_int_storage(a: IntTensor<Self>, b: IntTensor<Self>) -> bool {
        let _ = (a, b);
        false
    }
}

/// Cube devices: reads go through the portable defaults (a read-back); storage identity from the
/// buffer's memory id.
#[cfg(feature = "cube")]
impl HostAccess for crate::cube::CubeBackend {
    fn same_int_storage(a: IntTensor<Self>, b: IntTensor<Self>) -> bool {
        // CubeCL writes a buffer in place only while a single tensor handle holds it
        // (`can_mut`: the memory pool's own reference and one more; its tests pin that a second
        // handle forbids it), so one buffer seen through one layout by two live tensors holds
        // one set of values, as on Flex.
        a.handle.memory.descriptor() == b.handle.memory.descriptor()
            && (a.handle.offset_start, a.handle.offset_end) == (b.handle.offset_start, b.handle.offset_end)
            && a.meta == b.meta
            && a.dtype == b.dtype
            && a.device == b.device
    }
}

/// Cube devices under burn's `fusion`: reads through the portable defaults; storage identity from
/// the fused tensor's id (clones of one tensor), else from the Cube buffers behind the two.
#[cfg(all(feature = "cube", feature = "fusion"))]
impl HostAccess for crate::cube::FusedCube {
    fn same_int_storage(a: IntTensor<Self>, b: IntTensor<Self>) -> bool {
        use crate::cube::fused::int;
        a.id == b.id || crate::cube::CubeBackend::same_int_storage(int(a), int(b))
    }
}

impl HostAccess for Flex {
    fn with_int_slice(tensor: IntTensor<Self>, f: &mut dyn FnMut(IntSlice<'_>)) -> usize {
        let t =
            if tensor.is_contiguous() && tensor.layout().start_offset() == 0 { tensor } else { tensor.to_contiguous() };
        let n = t.shape().num_elements();
        match t.dtype() {
            DType::I64 => f(IntSlice::I64(t.as_slice::<i64>().expect("contiguous i64"))),
            DType::I32 => f(IntSlice::I32(t.as_slice::<i32>().expect("contiguous i32"))),
            DType::I16 => f(IntSlice::I16(t.as_slice::<i16>().expect("contiguous i16"))),
            DType::I8 => f(IntSlice::I8(t.as_slice::<i8>().expect("contiguous i8"))),
            _ => return with_int_data(&t.into_data(), f),
        }
        n
    }

    fn with_float_slice(tensor: &FloatTensor<Self>, f: &mut dyn FnMut(FloatSlice<'_>)) -> usize {
        let contiguous;
        let t = if tensor.is_contiguous() && tensor.layout().start_offset() == 0 {
            tensor
        } else {
            contiguous = tensor.to_contiguous();
            &contiguous
        };
        let n = t.shape().num_elements();
        match t.dtype() {
            DType::F64 => f(FloatSlice::F64(t.as_slice::<f64>().expect("contiguous f64"))),
            DType::F32 => f(FloatSlice::F32(t.as_slice::<f32>().expect("contiguous f32"))),
            DType::F16 => f(FloatSlice::F16(t.as_slice::<f16>().expect("contiguous f16"))),
            DType::BF16 => f(FloatSlice::BF16(t.as_slice::<bf16>().expect("contiguous bf16"))),
            _ => return with_float_data(&t.clone().into_data(), f),
        }
        n
    }

    fn same_int_storage(a: IntTensor<Self>, b: IntTensor<Self>) -> bool {
        // Flex never writes a buffer that another tensor shares (its in-place ops copy on
        // write when the buffer's count is above one), so one buffer seen through one layout
        // holds one set of values while both tensors live.
        std::sync::Arc::ptr_eq(&a.data_arc(), &b.data_arc()) && a.layout() == b.layout() && a.dtype() == b.dtype()
    }
}

mod autodiff_impl {
    use super::*;
    use burn::backend::autodiff::{checkpoint::strategy::CheckpointStrategy, Autodiff};

    impl<B: HostAccess, C: CheckpointStrategy> HostAccess for Autodiff<B, C> {
        fn with_int_slice(tensor: IntTensor<Self>, f: &mut dyn FnMut(IntSlice<'_>)) -> usize {
            B::with_int_slice(tensor, f)
        }

        fn with_float_slice(tensor: &FloatTensor<Self>, f: &mut dyn FnMut(FloatSlice<'_>)) -> usize {
            B::with_float_slice(tensor.primitive(), f)
        }

        fn same_int_storage(a: IntTensor<Self>, b: IntTensor<Self>) -> bool {
            B::same_int_storage(a, b)
        }
    }
}

/// Runs `f` on the host view of an Int tensor of any device.
pub fn with_ints<const D: usize, R>(
    tensor: &burn::Tensor<D, burn::tensor::Int>,
    f: impl FnOnce(IntSlice<'_>) -> R,
) -> R {
    let mut f = Some(f);
    let mut out = None;
    let prim = tensor.clone().into_dispatch();
    <burn::backend::Dispatch as HostAccess>::with_int_slice(prim, &mut |s| {
        out = Some((f.take().expect("called once"))(s))
    });
    out.expect("host access callback ran")
}

/// Whether `a` and `b` are views of the same stored elements, so they hold the same values:
/// how a layer knows that the pattern it checked is the one it holds now, without reading it.
/// `false` when the backend cannot tell.
pub fn same_int_storage<const D: usize>(
    a: &burn::Tensor<D, burn::tensor::Int>,
    b: &burn::Tensor<D, burn::tensor::Int>,
) -> bool {
    <burn::backend::Dispatch as HostAccess>::same_int_storage(a.clone().into_dispatch(), b.clone().into_dispatch())
}

/// Runs `f` on the host view of a Float tensor of any device.
pub fn with_floats<const D: usize, R>(tensor: &burn::Tensor<D>, f: impl FnOnce(FloatSlice<'_>) -> R) -> R {
    let mut f = Some(f);
    let mut out = None;
    let prim = tensor.clone().into_dispatch();
    <burn::backend::Dispatch as HostAccess>::with_float_slice(&prim, &mut |s| {
        out = Some((f.take().expect("called once"))(s))
    });
    out.expect("host access callback ran")
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Device, Int, Tensor};

    #[test]
    fn positions_are_the_kept_ones_ascending() {
        let v = [0.5f64, -1.0, 2.0, 0.0, f64::NAN, 3.0, -0.0];
        let want = |keep: &dyn Fn(f64) -> bool| -> Vec<i64> {
            v.iter().enumerate().filter(|(_, &x)| keep(x)).map(|(j, _)| j as i64).collect()
        };
        let f32s: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        for keep in [&(|x: f64| x > 0.0) as &dyn Fn(f64) -> bool, &|x| x != 0.0, &|_| true, &|_| false] {
            assert_eq!(FloatSlice::F64(&v).positions(keep), want(keep));
            assert_eq!(FloatSlice::F32(&f32s).positions(keep), want(keep));
        }
        assert_eq!(FloatSlice::F32(&[]).positions(|_| true), Vec::<i64>::new());
    }

    #[test]
    fn same_storage_is_buffer_identity() {
        let device = Device::flex();
        let a = Tensor::<1, Int>::from_data(TensorData::new(vec![1i64, 2, 3], [3]), (&device, DType::I64));
        assert!(same_int_storage(&a, &a.clone()));
        let equal_values = Tensor::<1, Int>::from_data(TensorData::new(vec![1i64, 2, 3], [3]), (&device, DType::I64));
        assert!(!same_int_storage(&a, &equal_values));
        assert!(!same_int_storage(&a.clone().narrow(0, 0, 2), &a.clone().narrow(0, 1, 2)));
        // Through the autodiff backend too: Int tensors are never tracked, the inner buffer decides.
        let ad = Device::flex().autodiff();
        let b = Tensor::<1, Int>::from_data(TensorData::new(vec![4i32, 5], [2]), (&ad, DType::I32));
        assert!(same_int_storage(&b, &b.clone()));
    }
}
