//! torch's `lobpcg`: the `k` largest (or smallest) eigenpairs of a symmetric sparse `A`, of the
//! generalized problem `A x = λ B x` when `B` (symmetric positive definite) is given, optionally
//! preconditioned with `iK`, by the locally optimal block preconditioned conjugate gradient
//! method (Knyazev 2001) in torch's "ortho" form (Duersch et al. 2018): the search basis
//! `S = [X, P, W]` is kept B-orthonormal, `W` (the preconditioned residuals) is orthogonalised
//! against `[X, P]` by repeated SVQB, `P` is built from the Ritz vectors as a B-orthonormal
//! complement of the new `X`, and converged leading pairs are locked (they leave the
//! Rayleigh-Ritz problem, which keeps the order of the returned pairs).
//!
//! Convergence: pair `j` has converged when `‖r_j‖ / (‖x_j‖ (‖A‖ + |λ_j| ‖B‖)) < tol` with
//! `r_j = A x_j - λ_j B x_j` and the norms of `A` and `B` estimated on the initial block, as
//! torch does; the iteration stops when the first `k` pairs have, or after `niter` iterations
//! (then the current approximations are returned, as torch returns them).
//!
//! The sparse operands are touched only through [`try_mm`]; the dense work (blocks of `m x n`,
//! Rayleigh-Ritz problems of at most `3n x 3n`) runs on the host in f64 with faer. No gradients.

use super::dense::{check_dtype, eigh, to_host, to_tensor, vec_tensor};
use crate::matmul::try_mm;
use burn::tensor::{DType, Device, Distribution, Tensor};
use faer::{Mat, MatRef, Side};
use sparsegrad_backend::{Result, SparseError, SparseTensor};

const OP: &str = "lobpcg";

fn invalid(message: String) -> SparseError {
    sparsegrad_backend::error::invalid(OP, message)
}

/// Repetitions of the orthogonalisation of `W` (outer: against `[X, P]`, inner: SVQB).
const ORTHO_OUTER: usize = 3;
const ORTHO_INNER: usize = 3;

/// The operators of one problem: products of host blocks with the sparse matrices.
struct Problem<'a> {
    a: &'a SparseTensor<2>,
    b: Option<&'a SparseTensor<2>>,
    ik: Option<&'a SparseTensor<2>>,
    device: Device,
    dtype: DType,
    tol: f64,
}

impl Problem<'_> {
    fn product(&self, s: &SparseTensor<2>, x: MatRef<'_, f64>) -> Result<Mat<f64>> {
        let t = to_tensor(x, &self.device, self.dtype);
        Ok(to_host(&try_mm(s, t)?))
    }

    fn a_mul(&self, x: MatRef<'_, f64>) -> Result<Mat<f64>> {
        self.product(self.a, x)
    }

    fn b_mul(&self, x: MatRef<'_, f64>) -> Result<Mat<f64>> {
        match self.b {
            Some(b) => self.product(b, x),
            None => Ok(x.to_owned()),
        }
    }

    fn precondition(&self, x: MatRef<'_, f64>) -> Result<Mat<f64>> {
        match self.ik {
            Some(k) => self.product(k, x),
            None => Ok(x.to_owned()),
        }
    }

    /// `Ri` with `Riᵀ (Sᵀ B S) Ri = I`: the Cholesky factor of the diagonally scaled Gram matrix
    /// (`D Sᵀ B S D = L Lᵀ`, `D = diag(Sᵀ B S)^-1/2`), `Ri = D L⁻ᵀ`.
    fn rayleigh_ritz_transform(&self, s: MatRef<'_, f64>, bs: MatRef<'_, f64>) -> Result<Mat<f64>> {
        let g = s.transpose() * bs;
        let c = g.ncols();
        let d: Vec<f64> = (0..c).map(|i| g[(i, i)].powf(-0.5)).collect();
        let scaled = Mat::<f64>::from_fn(c, c, |i, j| 0.5 * (g[(i, j)] + g[(j, i)]) * d[i] * d[j]);
        let llt = scaled
            .llt(Side::Lower)
            .map_err(|_| invalid("the search basis lost its B-orthogonality (is B positive definite?)".into()))?;
        let mut l_inv = Mat::<f64>::identity(c, c);
        llt.L().solve_lower_triangular_in_place(l_inv.as_mut());
        Ok(Mat::from_fn(c, c, |i, j| d[i] * l_inv[(j, i)]))
    }

    /// The Rayleigh-Ritz step on the basis `s`: the Ritz values (ordered as asked), `Ri` and the
    /// eigenvectors `Z` of `Riᵀ Sᵀ A S Ri` (the Ritz vectors are `S Ri Z`).
    fn rayleigh_ritz(&self, s: MatRef<'_, f64>, largest: bool) -> Result<(Vec<f64>, Mat<f64>, Mat<f64>)> {
        let bs = self.b_mul(s)?;
        let ri = self.rayleigh_ritz_transform(s, bs.as_ref())?;
        let as_ = self.a_mul(s)?;
        let m = ri.transpose() * (s.transpose() * as_) * &ri;
        let c = m.ncols();
        let m = Mat::<f64>::from_fn(c, c, |i, j| 0.5 * (m[(i, j)] + m[(j, i)]));
        let (e, z) = eigh(m.as_ref(), largest, OP)?;
        Ok((e, ri, z))
    }

    /// SVQB (Duersch et al. 2018, algorithm 4): `U` made B-orthonormal through the eigenpairs of
    /// its scaled Gram matrix, with eigenvalues below `tol * max` raised to that floor. Exactly
    /// zero columns are dropped.
    fn svqb(&self, u: Mat<f64>) -> Result<Mat<f64>> {
        let bu = self.b_mul(u.as_ref())?;
        let g = u.transpose() * &bu;
        let keep: Vec<usize> = (0..g.ncols()).filter(|&i| g[(i, i)] != 0.0).collect();
        let (u, g) = if keep.len() < g.ncols() {
            let u = Mat::from_fn(u.nrows(), keep.len(), |i, j| u[(i, keep[j])]);
            let g = Mat::from_fn(keep.len(), keep.len(), |i, j| g[(keep[i], keep[j])]);
            (u, g)
        } else {
            (u, g)
        };
        let c = g.ncols();
        if c == 0 {
            return Ok(u);
        }
        let d: Vec<f64> = (0..c).map(|i| g[(i, i)].abs().powf(-0.5)).collect();
        let scaled = Mat::<f64>::from_fn(c, c, |i, j| 0.5 * (g[(i, j)] + g[(j, i)]) * d[i] * d[j]);
        let (mut e, z) = eigh(scaled.as_ref(), false, OP)?;
        let floor = self.tol * e.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for v in &mut e {
            if *v < floor {
                *v = floor;
            }
        }
        let t = Mat::<f64>::from_fn(c, c, |i, j| d[i] * z[(i, j)] / e[j].sqrt());
        Ok(u * t)
    }

    /// `U` made B-orthogonal to the B-orthonormal `V` and B-orthonormal itself (Duersch et al.
    /// 2018, algorithm 5 without dropping): projections and SVQB repeated until both residuals
    /// are below `tol`.
    fn ortho(&self, mut u: Mat<f64>, v: MatRef<'_, f64>) -> Result<Mat<f64>> {
        let bv_norm = self.b_mul(v)?.norm_l2();
        let mut bu = self.b_mul(u.as_ref())?;
        let mut vbu = v.transpose() * &bu;
        for _ in 0..ORTHO_OUTER {
            u = &u - v * &vbu;
            for _ in 0..ORTHO_INNER {
                u = self.svqb(u)?;
                if u.ncols() == 0 {
                    return Ok(u);
                }
                bu = self.b_mul(u.as_ref())?;
                let mut g = u.transpose() * &bu;
                for i in 0..g.ncols() {
                    g[(i, i)] -= 1.0;
                }
                if g.norm_l2() / (bu.norm_l2() * u.norm_l2()) < self.tol {
                    break;
                }
            }
            vbu = v.transpose() * &bu;
            if vbu.norm_l2() / (bv_norm * u.norm_l2()) < self.tol {
                break;
            }
        }
        Ok(u)
    }
}

/// `[a, b, ...]` side by side.
fn hcat(blocks: &[MatRef<'_, f64>]) -> Mat<f64> {
    let rows = blocks[0].nrows();
    let cols: usize = blocks.iter().map(|b| b.ncols()).sum();
    let mut out = Mat::<f64>::zeros(rows, cols);
    let mut at = 0;
    for b in blocks {
        out.as_mut().subcols_mut(at, b.ncols()).copy_from(b);
        at += b.ncols();
    }
    out
}

/// torch's `lobpcg(A, k, B, X, n, iK, niter, tol, largest, method)`: `(E [k], X [m, k])`, the
/// `k` largest (`largest`, the default) or smallest eigenvalues of the symmetric sparse `A`
/// (`A x = λ B x` with `B`) and their eigenvectors (B-orthonormal columns), in order.
///
/// - `k` defaults to the columns of `X` if given, else 1; `n` (the block size, `k <= n`)
///   defaults to the columns of `X`, else `k`; `3 n <= m` is required, as in torch.
/// - `X [m, n]`: the initial block, else drawn from burn's generator on `A`'s device (seed it
///   for repeatable results).
/// - `iK`: a preconditioner applied to the residuals (approximating `A⁻¹` for the smallest
///   eigenvalues).
/// - `niter`: the most iterations (default 1000; `usize::MAX` runs until convergence);
///   `tol`: the residual tolerance (default `sqrt(ε)` of the values' dtype).
/// - `method`: `"ortho"` (the default) is the one implemented; `"basic"` is refused.
///
/// Errors: a non-square `A`, `B` or `iK` of another shape, `k > n`, `3 n > m`, an `X` of
/// another shape, values other than f32 or f64.
#[allow(clippy::too_many_arguments)] // torch's signature, argument for argument
pub fn lobpcg(
    a: &SparseTensor<2>,
    k: Option<usize>,
    b: Option<&SparseTensor<2>>,
    x: Option<Tensor<2>>,
    n: Option<usize>,
    i_k: Option<&SparseTensor<2>>,
    niter: Option<usize>,
    tol: Option<f64>,
    largest: Option<bool>,
    method: Option<&str>,
) -> Result<(Tensor<1>, Tensor<2>)> {
    let [m, cols] = a.shape();
    if m != cols {
        return Err(invalid(format!("A must be square, got [{m}, {cols}]")));
    }
    for (name, op) in [("B", b), ("iK", i_k)] {
        if let Some(op) = op {
            if op.shape() != [m, m] {
                return Err(invalid(format!("{name} must be [{m}, {m}] like A, got {:?}", op.shape())));
            }
        }
    }
    let dtype = a.dtype();
    check_dtype(OP, dtype)?;
    match method.unwrap_or("ortho") {
        "ortho" => {}
        other => return Err(invalid(format!("method \"{other}\" is not supported; use \"ortho\""))),
    }
    let x_cols = x.as_ref().map(|x| x.dims()[1]);
    let k = k.unwrap_or(x_cols.unwrap_or(1));
    let n = match (n, x_cols) {
        (Some(n), Some(c)) if n != c => {
            return Err(invalid(format!("n = {n} but the initial X has {c} columns")));
        }
        (n, c) => n.or(c).unwrap_or(k),
    };
    if k > n {
        return Err(invalid(format!("k = {k} eigenpairs requested from a block of n = {n}")));
    }
    if m < n.saturating_mul(3) {
        return Err(invalid(format!(
            "not applicable when the number of rows of A (= {m}) is smaller than 3 x the block size (= {n})"
        )));
    }
    let device = a.device();
    let largest = largest.unwrap_or(true);
    let eps = if dtype == DType::F32 { f32::EPSILON as f64 } else { f64::EPSILON };
    let p = Problem { a, b, ik: i_k, device: device.clone(), dtype, tol: tol.unwrap_or(eps.sqrt()) };
    let x0 = match x {
        Some(x) if x.dims() != [m, n] => {
            return Err(invalid(format!("the initial X must be [{m}, {n}], got {:?}", x.dims())));
        }
        Some(x) => x,
        None => Tensor::random([m, n], Distribution::Normal(0.0, 1.0), (&device, dtype)),
    };
    if n == 0 {
        return Ok((Tensor::zeros([0], (&device, dtype)), Tensor::zeros([m, 0], (&device, dtype))));
    }
    let (e, x) = iterate(&p, to_host(&x0), k, niter.unwrap_or(1000), largest)?;
    Ok((vec_tensor(&e[..k], &device, dtype), to_tensor(x.as_ref().subcols(0, k), &device, dtype)))
}

/// The LOBPCG iteration from the block `x [m, n]`: the Ritz values and vectors of the last step.
fn iterate(p: &Problem<'_>, x: Mat<f64>, k: usize, niter: usize, largest: bool) -> Result<(Vec<f64>, Mat<f64>)> {
    let n = x.ncols();
    // Norm estimates for the convergence test, on the initial block.
    let x_norm = x.norm_l2();
    let a_norm = p.a_mul(x.as_ref())?.norm_l2() / x_norm;
    let b_norm = p.b_mul(x.as_ref())?.norm_l2() / x_norm;

    let (ev, ri, z) = p.rayleigh_ritz(x.as_ref(), largest)?;
    let mut x = x * (ri * z);
    let mut e = ev[..n].to_vec();
    let mut locked = 0;
    let mut pdir = Mat::<f64>::zeros(x.nrows(), 0);
    for step in 0.. {
        // Residuals and the locked (converged leading) pairs.
        let ax = p.a_mul(x.as_ref())?;
        let bx = p.b_mul(x.as_ref())?;
        let r = Mat::<f64>::from_fn(x.nrows(), n, |i, j| ax[(i, j)] - e[j] * bx[(i, j)]);
        while locked < n {
            let j = locked;
            let err = r.col(j).norm_l2() / (x.col(j).norm_l2() * (a_norm + e[j].abs() * b_norm));
            // A NaN residual is not converged.
            if err.partial_cmp(&p.tol) != Some(std::cmp::Ordering::Less) {
                break;
            }
            locked += 1;
        }
        if locked >= k || step >= niter {
            break;
        }
        // The new search directions, orthogonal to [X, P].
        let w = p.precondition(r.as_ref().subcols(locked, n - locked))?;
        let xp = hcat(&[x.as_ref(), pdir.as_ref()]);
        let w = p.ortho(w, xp.as_ref())?;
        // Rayleigh-Ritz on the unlocked part of the basis [X, P, W].
        let s = hcat(&[x.as_ref().subcols(locked, n - locked), pdir.as_ref(), w.as_ref()]);
        let (ev, ri, z) = p.rayleigh_ritz(s.as_ref(), largest)?;
        let c = &ri * &z;
        let nx = n - locked;
        let new_x = &s * c.as_ref().subcols(0, nx);
        x.as_mut().subcols_mut(locked, nx).copy_from(&new_x);
        e[locked..].copy_from_slice(&ev[..nx]);
        // P: the combination of the remaining Ritz vectors that carries the old X's
        // components, B-orthonormal and B-orthogonal to the new X.
        let rest = z.ncols() - nx;
        let z12t = z.as_ref().submatrix(0, nx, nx, rest).transpose().to_owned();
        let basis = z12t.qr().compute_thin_Q();
        pdir = &s * (c.as_ref().subcols(nx, rest) * basis);
    }
    Ok((e, x))
}
