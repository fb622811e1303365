//! The thin QR and thin SVD of [`super::lowrank`] with gradients.
//!
//! The factors come from faer on the host ([`super::dense`]), outside burn's graph. When the
//! input is tracked, its first-order dependence is attached with burn ops: with `z = x - x̄`
//! (`x̄` the detached input, so `z` is zero but tracked), the output is `F(x̄) + dF(z)`, where
//! `dF` is the differential of the factorisation at `x̄` written with matmuls, triangular masks
//! and diagonal scalings. Its value is `F(x̄)` and its gradient is `dFᵀ`, the exact derivative
//! of the factorisation; nothing is added to the graph when the input is not tracked.
//!
//! The differentials (with `x = Q R`, resp. `x = U diag(s) Vᵀ`):
//! - QR: `C = Qᵀ dx R⁻¹`, `Ω = tril(C, -1) - tril(C, -1)ᵀ` (`QᵀdQ`, skew), `dR R⁻¹ = C - Ω`
//!   (upper triangular), so `dQ = dx R⁻¹ - Q (C - Ω)`; it needs `x` of full column rank.
//! - SVD: `P = Uᵀ dx V`, `ds = diag(P)`, `dU = U (F ∘ (P S + S Pᵀ)) + (dx V - U P) S⁻¹`,
//!   `dV = V (F ∘ (S P + Pᵀ S))` with `F_ij = 1 / (s_j² - s_i²)` off the diagonal and 0 on it;
//!   it needs distinct non-zero singular values (as torch's SVD gradient) and `V` square.

use super::dense::{thin_qr_tensor, thin_svd_tensor, to_tensor, upper_inverse, vec_tensor};
use burn::tensor::Tensor;
use faer::Mat;
use sparsegrad_backend::Result;

/// The orthonormal factor `Q [m, q]` of the thin QR of a tall `x [m, q]`, differentiable.
pub(crate) fn qr_q(x: Tensor<2>) -> Tensor<2> {
    let (device, dtype) = (x.device(), x.dtype());
    let (q, r) = thin_qr_tensor(&x);
    if !x.is_tracked() {
        return q;
    }
    let r_inv = to_tensor(upper_inverse(r.as_ref()).as_ref(), &device, dtype);
    let z = x.clone() - x.detach();
    let zr = z.matmul(r_inv);
    let c = q.clone().transpose().matmul(zr.clone());
    let low = c.clone().tril(-1);
    let omega = low.clone() - low.transpose();
    let dq = zr - q.clone().matmul(c - omega);
    q + dq
}

/// The thin SVD `x = U diag(s) Vᵀ` of a tall `x [m, q]` (`m >= q`), differentiable:
/// `U [m, q]`, `s [q]` non-increasing, `V [q, q]`.
pub(crate) fn svd(x: Tensor<2>, operation: &'static str) -> Result<(Tensor<2>, Tensor<1>, Tensor<2>)> {
    let (device, dtype) = (x.device(), x.dtype());
    let (u, s, v) = thin_svd_tensor(&x, operation)?;
    let r = s.len();
    let (v, s_t) = (to_tensor(v.as_ref(), &device, dtype), vec_tensor(&s, &device, dtype));
    if !x.is_tracked() {
        return Ok((u, s_t, v));
    }
    let square = |f: &dyn Fn(usize, usize) -> f64| {
        let m = Mat::<f64>::from_fn(r, r, f);
        to_tensor(m.as_ref(), &device, dtype)
    };
    let f = square(&|i, j| if i == j { 0.0 } else { 1.0 / (s[j] * s[j] - s[i] * s[i]) });
    let sd = square(&|i, j| if i == j { s[i] } else { 0.0 });
    let s_inv = square(&|i, j| if i == j { 1.0 / s[i] } else { 0.0 });
    let eye = square(&|i, j| if i == j { 1.0 } else { 0.0 });
    let z = x.clone() - x.detach();
    let zv = z.matmul(v.clone());
    let p = u.clone().transpose().matmul(zv.clone());
    let ds = (p.clone() * eye).sum_dim(1).reshape([r]);
    let pt = p.clone().transpose();
    let du = u.clone().matmul(f.clone() * (p.clone().matmul(sd.clone()) + sd.clone().matmul(pt.clone())))
        + (zv - u.clone().matmul(p.clone())).matmul(s_inv);
    let dv = v.clone().matmul(f * (sd.clone().matmul(p) + pt.matmul(sd)));
    Ok((u + du, s_t + ds, v + dv))
}
