//! Flex buffers for the host kernels: contiguous views, typed index slices, and running an f32
//! or f64 kernel on float inputs (16-bit floats widened to f32 and the result narrowed back).

use crate::host::IntSlice;
use burn::backend::flex::FlexTensor;
use burn::tensor::{DType, Shape, TensorData};

/// The tensor itself when contiguous from offset 0, else a contiguous copy.
pub(crate) fn contiguous(t: FlexTensor) -> FlexTensor {
    if t.is_contiguous() && t.layout().start_offset() == 0 {
        return t;
    }
    transposed_2d(&t).unwrap_or_else(|| t.to_contiguous())
}

/// A 2-D view that is the transpose of a contiguous buffer (strides `[1, rows]`, as
/// `mat2.transpose()` for SDDMM), copied by a cache-blocked parallel transpose: the generic
/// strided copy walks it a column at a time and takes 3x longer than the product it feeds.
fn transposed_2d(t: &FlexTensor) -> Option<FlexTensor> {
    let layout = t.layout();
    let (rows, cols) = match layout.shape().as_slice() {
        &[r, c] => (r, c),
        _ => return None,
    };
    if layout.strides() != [1, rows as isize] || rows * cols == 0 {
        return None;
    }
    let off = layout.start_offset();
    let data = match t.dtype() {
        DType::F32 => TensorData::new(transpose_blocked(&t.storage::<f32>()[off..off + rows * cols], cols, rows), [rows, cols]),
        DType::F64 => TensorData::new(transpose_blocked(&t.storage::<f64>()[off..off + rows * cols], cols, rows), [rows, cols]),
        _ => return None,
    };
    Some(FlexTensor::from_data(data))
}

/// The transpose `[c, r]` of a row-major `[r, c]` buffer.
fn transpose_blocked<T: Copy + Send + Sync + 'static>(src: &[T], r: usize, c: usize) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(r * c);
    transpose_into(src, r, c, &mut out.spare_capacity_mut()[..r * c]);
    // SAFETY: `transpose_into` writes every element.
    unsafe { out.set_len(r * c) };
    out
}

/// The transpose `[c, r]` of a row-major `[r, c]` buffer into `out`, in 16 x 16 tiles (f32
/// tiles in AVX-512 registers where available), parallel over bands of output rows, each element
/// written once. Element by element, the transpose took a fifth of the SDDMM it feeds.
pub(crate) fn transpose_into<T: Copy + Send + Sync + 'static>(src: &[T], r: usize, c: usize, out: &mut [core::mem::MaybeUninit<T>]) {
    use rayon::prelude::*;
    const TILE: usize = 16;
    let len = r.checked_mul(c).expect("transpose: size overflows usize");
    assert!(src.len() >= len && out.len() >= len, "transpose: buffers hold [{r}, {c}]");
    if len == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    let simd = core::any::TypeId::of::<T>() == core::any::TypeId::of::<f32>() && std::arch::is_x86_feature_detected!("avx512f");
    out[..r * c].par_chunks_mut(TILE * r).enumerate().for_each(|(band, dst)| {
        let j0 = band * TILE;
        let jn = dst.len() / r;
        for i0 in (0..r).step_by(TILE) {
            let iw = TILE.min(r - i0);
            #[cfg(target_arch = "x86_64")]
            if simd && iw == TILE && jn == TILE {
                // SAFETY: T is f32; the tile's 16 source rows of 16 from (i0, j0) lie inside
                // `src` ([r, c], i0 + 16 <= r, j0 + 16 <= c), and its 16 destination rows of 16
                // from column i0 inside this band ([16, r]).
                unsafe { transpose_16x16_f32(src[i0 * c + j0..].as_ptr() as *const f32, c, dst[i0..].as_mut_ptr() as *mut f32, r) };
                continue;
            }
            for i in i0..i0 + iw {
                for j in 0..jn {
                    dst[j * r + i].write(src[i * c + j0 + j]);
                }
            }
        }
    });
}

/// One 16 x 16 f32 tile: rows of `src` (stride `lds`) to rows of `dst` (stride `ldd`), in four
/// shuffle stages (32-bit pairs, 64-bit pairs, then 128-bit lanes twice).
///
/// # Safety
/// The CPU supports AVX-512F; `src` holds 16 rows of 16 readable floats at stride `lds`, and
/// `dst` 16 rows of 16 writable ones at stride `ldd`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn transpose_16x16_f32(src: *const f32, lds: usize, dst: *mut f32, ldd: usize) {
    use core::arch::x86_64::*;
    // SAFETY: the caller promises 16 readable rows of 16 at stride `lds`.
    let rows: [__m512; 16] = core::array::from_fn(|i| unsafe { _mm512_loadu_ps(src.add(i * lds)) });
    let mut t = [_mm512_setzero_ps(); 16];
    for p in 0..8 {
        t[2 * p] = _mm512_unpacklo_ps(rows[2 * p], rows[2 * p + 1]);
        t[2 * p + 1] = _mm512_unpackhi_ps(rows[2 * p], rows[2 * p + 1]);
    }
    let pd = _mm512_castps_pd;
    let ps = _mm512_castpd_ps;
    let mut u = [_mm512_setzero_ps(); 16];
    for q in 0..4 {
        let (a, b, c, d) = (pd(t[4 * q]), pd(t[4 * q + 1]), pd(t[4 * q + 2]), pd(t[4 * q + 3]));
        u[4 * q] = ps(_mm512_unpacklo_pd(a, c));
        u[4 * q + 1] = ps(_mm512_unpackhi_pd(a, c));
        u[4 * q + 2] = ps(_mm512_unpacklo_pd(b, d));
        u[4 * q + 3] = ps(_mm512_unpackhi_pd(b, d));
    }
    let mut v = [_mm512_setzero_ps(); 16];
    for h in 0..2 {
        for i in 0..4 {
            v[8 * h + i] = _mm512_shuffle_f32x4::<0x88>(u[8 * h + i], u[8 * h + 4 + i]);
            v[8 * h + 4 + i] = _mm512_shuffle_f32x4::<0xdd>(u[8 * h + i], u[8 * h + 4 + i]);
        }
    }
    for i in 0..8 {
        // SAFETY: the caller promises 16 writable rows of 16 at stride `ldd`; rows i and 8 + i.
        unsafe {
            _mm512_storeu_ps(dst.add(i * ldd), _mm512_shuffle_f32x4::<0x88>(v[i], v[8 + i]));
            _mm512_storeu_ps(dst.add((8 + i) * ldd), _mm512_shuffle_f32x4::<0xdd>(v[i], v[8 + i]));
        }
    }
}

/// For a 2-D view that is the transpose of a contiguous buffer from offset 0 (strides
/// `[1, rows]`), that buffer as a contiguous tensor (`[cols, rows]`).
pub(crate) fn transposed_base(t: &FlexTensor) -> Option<FlexTensor> {
    let layout = t.layout();
    let rows = match layout.shape().as_slice() {
        &[r, c] if r * c > 0 => r,
        _ => return None,
    };
    if layout.strides() != [1, rows as isize] || layout.start_offset() != 0 {
        return None;
    }
    let base = t.clone().transpose(0, 1);
    base.is_contiguous().then_some(base)
}

/// The elements of a contiguous integer tensor.
pub(crate) fn int_slice(t: &FlexTensor) -> IntSlice<'_> {
    match t.dtype() {
        DType::I64 => IntSlice::I64(t.as_slice().expect("contiguous i64")),
        DType::I32 => IntSlice::I32(t.as_slice().expect("contiguous i32")),
        DType::I16 => IntSlice::I16(t.as_slice().expect("contiguous i16")),
        DType::I8 => IntSlice::I8(t.as_slice().expect("contiguous i8")),
        other => panic!("index tensors must have an integer dtype, got {other:?}"),
    }
}

/// Runs `f32k` or `f64k` on `N` float inputs of one dtype and wraps the result in `shape`;
/// 16-bit floats are widened to f32 (so they accumulate in f32) and the result narrowed back.
pub(crate) fn with_real<const N: usize>(
    inputs: [FlexTensor; N],
    shape: impl Into<Shape>,
    f32k: impl FnOnce([&[f32]; N]) -> Vec<f32>,
    f64k: impl FnOnce([&[f64]; N]) -> Vec<f64>,
) -> FlexTensor {
    let dtype = inputs[0].dtype();
    let shape = shape.into();
    match dtype {
        DType::F64 => {
            let ins = inputs.map(contiguous);
            let out = f64k(core::array::from_fn(|i| ins[i].as_slice::<f64>().expect("f64 operands")));
            FlexTensor::from_data(TensorData::new(out, shape))
        }
        DType::F32 => {
            let ins = inputs.map(contiguous);
            let out = f32k(core::array::from_fn(|i| ins[i].as_slice::<f32>().expect("f32 operands")));
            FlexTensor::from_data(TensorData::new(out, shape))
        }
        _ => {
            let ins = inputs.map(|t| FlexTensor::from_data(t.into_data().convert_dtype(DType::F32)));
            let out = f32k(core::array::from_fn(|i| ins[i].as_slice::<f32>().expect("f32 operands")));
            FlexTensor::from_data(TensorData::new(out, shape).convert_dtype(dtype))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocked_transpose_matches_definition() {
        // f32 runs whole 16 x 16 tiles in registers (and the edges element by element), f64
        // element by element throughout.
        for (r, c) in [(1, 1), (3, 70), (16, 16), (65, 33), (100, 1), (48, 130)] {
            let src: Vec<f64> = (0..r * c).map(|v| v as f64).collect();
            let out = transpose_blocked(&src, r, c);
            let src32: Vec<f32> = src.iter().map(|&v| v as f32).collect();
            let out32 = transpose_blocked(&src32, r, c);
            for i in 0..r {
                for j in 0..c {
                    assert_eq!(out[j * r + i], src[i * c + j]);
                    assert_eq!(out32[j * r + i], src32[i * c + j], "f32 {r} x {c} at ({i}, {j})");
                }
            }
        }
    }

    #[test]
    fn transposed_views_are_copied_in_order() {
        let base = FlexTensor::from_data(TensorData::new((0..12).map(|v| v as f32).collect::<Vec<_>>(), [3, 4]));
        let view = base.transpose(0, 1);
        let copy = contiguous(view);
        assert_eq!(copy.as_slice::<f32>().unwrap(), &[0., 4., 8., 1., 5., 9., 2., 6., 10., 3., 7., 11.]);
    }
}
