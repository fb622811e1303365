//! [`Real`]: the value types the product kernels compute in (f32 and f64; 16-bit floats are
//! widened to f32 by the callers), and the scaled row addition at the heart of SpMM.

/// A value type the kernels compute in.
///
/// The macerator bounds let one kernel body run on every instruction set (`simd`).
pub trait Real:
    Copy
    + Default
    + Send
    + Sync
    + core::ops::Add<Output = Self>
    + core::ops::Mul<Output = Self>
    + 'static
    + macerator::Scalar
    + macerator::VAdd
    + macerator::VMul
    + macerator::VMulAdd
    + macerator::VFma
    + macerator::ReduceAdd
{
    /// `a * b + c`, fused where the caller compiled for FMA.
    fn mul_add(a: Self, b: Self, c: Self) -> Self;
    /// Widened to f64 (exact).
    fn to_f64(self) -> f64;
    /// Rounded from f64 to the nearest value.
    fn from_f64(v: f64) -> Self;
}
impl Real for f32 {
    #[inline(always)]
    fn mul_add(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    #[inline(always)]
    fn from_f64(v: f64) -> f32 {
        v as f32
    }
}
impl Real for f64 {
    #[inline(always)]
    fn mul_add(a: f64, b: f64, c: f64) -> f64 {
        a.mul_add(b, c)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn from_f64(v: f64) -> f64 {
        v
    }
}

/// `acc[t] += v * x[t]`, fused multiply-add only where FMA is compiled in (else `mul_add` is a
/// library call).
#[inline(always)]
pub(crate) fn axpy<T: Real, const FMA: bool>(acc: &mut [T], v: T, x: &[T]) {
    for (a, &xi) in acc.iter_mut().zip(x) {
        *a = if FMA { T::mul_add(v, xi, *a) } else { *a + v * xi };
    }
}
