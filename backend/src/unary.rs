//! Unary ops on sparse tensors, as methods with torch's names, on every layout.
//!
//! Only ops with `f(0) = 0` keep a sparse result sparse. They apply to the stored values (dense
//! items and block elements included, where `f(0) = 0` keeps the explicit zeros zero):
//!
//! - linear ops (`deg2rad`, `rad2deg`) commute with the summing of duplicates and apply to the
//!   values as stored;
//! - every other op is nonlinear (`sin(a + b) != sin(a) + sin(b)`), so an uncoalesced COO tensor
//!   is coalesced first: abs, asin, asinh, atan, atanh, ceil, floor, round (half to even), trunc,
//!   sign, sgn, sin, sinh, tan, tanh, sqrt, square, log1p, expm1, erf, erfinv, relu;
//! - predicates (`isnan`, `isinf`, `isposinf`, `isneginf`, `signbit`): burn has no sparse bool
//!   values, so they return the same pattern with values 1.0 (true) and 0.0 (false), in the
//!   values' dtype, detached from the autodiff graph.
//!
//! Ops with `f(0) != 0` (`cos`, `exp`, `log`, `sigmoid`, ...) are refused with
//! [`SparseError::NotZeroPreserving`], torch's "unsupported tensor layout": the result would be
//! dense, and applying them to the stored values only would be silently wrong. Convert to dense
//! first (`s.to_dense().cos()`).
//!
//! Values go through burn's float ops, so burn's autodiff differentiates every op. `expm1` and
//! `erfinv`, which burn lacks, are composed from burn ops with exact derivatives (see each).

use crate::error::{Result, SparseError};
use crate::tensor::SparseTensor;
use burn::tensor::{activation, Bool, Tensor};

/// Methods for zero-preserving ops: `$apply` is `map_linear` or `map_coalesced`.
macro_rules! zero_preserving {
    ($($(#[$doc:meta])* $name:ident = $apply:ident(|$v:ident| $body:expr);)*) => {$(
        $(#[$doc])*
        pub fn $name(&self) -> Self {
            self.$apply(|$v| $body)
        }
    )*};
}

/// Methods for predicates: `$mask` gives the bool mask of the (coalesced) values.
macro_rules! predicate {
    ($($(#[$doc:meta])* $name:ident = |$v:ident| $mask:expr;)*) => {$(
        $(#[$doc])*
        pub fn $name(&self) -> Self {
            self.map_predicate(|$v| $mask)
        }
    )*};
}

/// Methods refusing ops that do not preserve zeros.
macro_rules! refused {
    ($($name:ident),* $(,)?) => {$(
        #[doc = concat!("torch's `", stringify!($name), "` is refused on sparse tensors: `", stringify!($name),
            "(0) != 0` makes the result dense. Always [`SparseError::NotZeroPreserving`]; use `s.to_dense().",
            stringify!($name), "()`.")]
        pub fn $name(&self) -> Result<Self> {
            Err(SparseError::NotZeroPreserving { operation: stringify!($name), layout: self.layout.name() })
        }
    )*};
}

impl<const D: usize> SparseTensor<D> {
    zero_preserving! {
        /// Degrees to radians (linear: no coalescing).
        deg2rad = map_linear(|v| v.deg2rad());
        /// Radians to degrees (linear: no coalescing).
        rad2deg = map_linear(|v| v.rad2deg());
        /// `|x|`.
        abs = map_coalesced(|v| v.abs());
        /// `asin(x)`.
        asin = map_coalesced(|v| v.asin());
        /// `asinh(x)`.
        asinh = map_coalesced(|v| v.asinh());
        /// `atan(x)`.
        atan = map_coalesced(|v| v.atan());
        /// `atanh(x)`.
        atanh = map_coalesced(|v| v.atanh());
        /// Rounds up.
        ceil = map_coalesced(|v| v.ceil());
        /// Rounds down.
        floor = map_coalesced(|v| v.floor());
        /// Rounds to the nearest integer, halves to even (torch's `round`).
        round = map_coalesced(|v| v.round());
        /// Rounds towards zero.
        trunc = map_coalesced(|v| v.trunc());
        /// -1, 0 or 1 by the sign of `x`.
        sign = map_coalesced(|v| v.sign());
        /// torch's `sgn`, which for real values is `sign`.
        sgn = map_coalesced(|v| v.sign());
        /// `sin(x)`.
        sin = map_coalesced(|v| v.sin());
        /// `sinh(x)`.
        sinh = map_coalesced(|v| v.sinh());
        /// `tan(x)`.
        tan = map_coalesced(|v| v.tan());
        /// `tanh(x)`.
        tanh = map_coalesced(|v| v.tanh());
        /// `sqrt(x)` (NaN for negative values, as torch).
        sqrt = map_coalesced(|v| v.sqrt());
        /// `x * x`.
        square = map_coalesced(|v| v.square());
        /// `ln(1 + x)`, accurate near 0.
        log1p = map_coalesced(|v| v.log1p());
        /// `exp(x) - 1`, accurate near 0 (as `2 exp(x/2) sinh(x/2)`).
        expm1 = map_coalesced(|v| expm1(v));
        /// The error function.
        erf = map_coalesced(|v| v.erf());
        /// The inverse error function on `[-1, 1]` (±inf at ±1, NaN outside).
        erfinv = map_coalesced(|v| erfinv(v));
        /// `max(x, 0)`.
        relu = map_coalesced(|v| activation::relu(v));
    }

    predicate! {
        /// 1.0 where the value is NaN (torch's `isnan`, as floats: see the module docs).
        isnan = |v| v.is_nan();
        /// 1.0 where the value is ±inf.
        isinf = |v| v.is_inf();
        /// 1.0 where the value is +inf.
        isposinf = |v| v.clone().is_inf().bool_and(v.greater_elem(0.0));
        /// 1.0 where the value is -inf.
        isneginf = |v| v.clone().is_inf().bool_and(v.lower_elem(0.0));
        /// 1.0 where the sign bit is set: negative values and -0.0 (found as `1 / x = -inf`).
        signbit = |v| signbit_mask(v);
    }

    refused!(acos, acosh, cos, cosh, exp, exp2, log, log2, log10, erfc, recip, rsqrt, sigmoid);

    /// The values mapped by `f` as stored: for ops linear in the value.
    fn map_linear(&self, f: impl FnOnce(Tensor<2>) -> Tensor<2>) -> Self {
        self.with_values(f(self.values.clone()))
    }

    /// The values of the coalesced tensor mapped by `f`: for nonlinear ops.
    fn map_coalesced(&self, f: impl FnOnce(Tensor<2>) -> Tensor<2>) -> Self {
        let c = self.coalesce();
        c.with_values(f(c.values.clone()))
    }

    /// 1.0 / 0.0 values by `mask` of the coalesced values, detached (predicates have no gradient).
    fn map_predicate(&self, mask: impl FnOnce(Tensor<2>) -> Tensor<2, Bool>) -> Self {
        let c = self.coalesce();
        let v = c.values.clone().detach();
        let m = mask(v.clone());
        c.with_values(v.zeros_like().mask_fill(m, 1.0))
    }
}

/// `x < 0`, or `x` a zero whose reciprocal is `-inf` (-0.0).
fn signbit_mask(v: Tensor<2>) -> Tensor<2, Bool> {
    let negative_zero = v.clone().equal_elem(0.0).bool_and(v.clone().recip().lower_elem(0.0));
    v.lower_elem(0.0).bool_or(negative_zero)
}

/// `exp(x) - 1 = 2 exp(x/2) sinh(x/2)`: no cancellation near 0 (`sinh` is accurate there), and
/// its derivative through burn's autodiff is `exp(x/2) (sinh + cosh)(x/2) = exp(x)`, exact.
/// Inputs below -60 give -1 (exact in f64 and f32) and keep `exp(x/2) * sinh(x/2)` away from
/// `0 * inf`.
fn expm1<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    let half = x.clamp_min(-60.0).div_scalar(2.0);
    half.clone().exp().mul(half.sinh()).mul_scalar(2.0)
}

/// The inverse error function, from burn ops, differentiable.
///
/// The value: Giles' approximation ("Approximating the erfinv function", 2010; relative error
/// below 4e-7) refined by two Newton steps on `erf(y) = x` (burn's `erf` is libm's), on the
/// detached input. The gradient: one more Newton step from that value `y0`, taken on the tracked
/// input, `y = y0 - (erf(y0) - x) * c` with `c = sqrt(pi)/2 * exp(y0^2)` held constant, whose
/// derivative `c` is exactly `erfinv'(x)`. `±1` gives `±inf`, `|x| > 1` and NaN give NaN.
fn erfinv<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    let xd = x.clone().detach();
    let inside = xd.clone().abs().lower_elem(1.0);
    let outside = inside.clone().bool_not();
    // Work only on |x| < 1; the rest is overwritten below and must not poison the arithmetic.
    let safe = xd.clone().mask_fill(outside.clone(), 0.0);
    let mut y = giles_erfinv(safe.clone());
    for _ in 0..2 {
        y = y.clone() - (y.clone().erf() - safe.clone()) * erfinv_slope(y);
    }
    let slope = erfinv_slope(y.clone());
    let tracked = x.mask_fill(outside.clone(), 0.0);
    let y = y.clone() - (y.erf() - tracked) * slope;
    // ±inf at ±1 (sign * inf), NaN beyond and for NaN (sign(NaN) * inf is NaN or 0 * inf).
    let edge = xd.clone().sign().mul_scalar(f64::INFINITY).mask_fill(xd.abs().greater_elem(1.0), f64::NAN);
    y.mask_where(outside, edge)
}

/// `sqrt(pi)/2 * exp(y^2)`: the derivative of erfinv at `erf(y)`.
fn erfinv_slope<const D: usize>(y: Tensor<D>) -> Tensor<D> {
    y.square().exp().mul_scalar(core::f64::consts::PI.sqrt() / 2.0)
}

/// Giles' single-precision erfinv for `|x| < 1`: a polynomial in `w = -ln(1 - x^2)`, one for the
/// centre (`w < 5`) and one for the tails.
fn giles_erfinv<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    const CENTRE: [f64; 9] = [
        2.81022636e-08,
        3.43273939e-07,
        -3.5233877e-06,
        -4.39150654e-06,
        0.00021858087,
        -0.00125372503,
        -0.00417768164,
        0.246640727,
        1.50140941,
    ];
    const TAIL: [f64; 9] = [
        -0.000200214257,
        0.000100950558,
        0.00134934322,
        -0.00367342844,
        0.00573950773,
        -0.0076224613,
        0.00943887047,
        1.00167406,
        2.83297682,
    ];
    let w = x.clone().square().neg().log1p().neg();
    let tail = w.clone().greater_equal_elem(5.0);
    let centre = horner(&CENTRE, w.clone().sub_scalar(2.5));
    // sqrt(max(w, 5)) keeps the unused branch finite.
    let tails = horner(&TAIL, w.clamp_min(5.0).sqrt().sub_scalar(3.0));
    centre.mask_where(tail, tails) * x
}

/// `c[0] w^(n-1) + ... + c[n-1]`.
fn horner<const D: usize>(c: &[f64], w: Tensor<D>) -> Tensor<D> {
    c[1..].iter().fold(w.zeros_like().add_scalar(c[0]), |p, &k| (p * w.clone()).add_scalar(k))
}
