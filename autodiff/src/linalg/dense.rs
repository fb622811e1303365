//! The small dense pieces of [`super`], on the host with faer: thin QR, thin SVD, the symmetric
//! eigenproblem and the inverse of a triangular factor, and the moves of dense matrices between
//! burn tensors and faer matrices.
//!
//! The matrices here are thin (`m x q` with `q` the sketch or block size) or small (`q x q`):
//! their factorisations cost `O(m q²)`, which is why they run on the host, in f64 whatever the
//! tensors' dtype. The thin QR of a tensor ([`thin_qr_tensor`], CholeskyQR2) runs on the
//! tensor's own f32 or f64 storage through the kernels of `sparsegrad_kernels::tall` (Gram
//! matrices and row products in f64, one output buffer transformed in place): copying a
//! 100,000 x 16 sketch to f64 and back around each QR cost more, mostly in page faults on the
//! fresh buffers, than the sparse products. An ill-conditioned sketch falls back to faer's
//! Householder QR on a row-major f64 copy ([`Rows`]). None of this sees the sparse operand,
//! which the callers touch only through `mm`.

use burn::tensor::{DType, Device, Tensor, TensorData};
use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatMut, MatRef, Par, Side};
use sparsegrad_backend::host::{with_floats, FloatSlice};
use sparsegrad_backend::{Result, SparseError};
use sparsegrad_kernels::real::Real;
use sparsegrad_kernels::tall;

fn failed(operation: &'static str, what: &str) -> SparseError {
    SparseError::InvalidArgument {
        operation,
        message: format!("{what} did not converge (the input holds NaN or infinities?)"),
    }
}

fn par() -> Par {
    faer::get_global_parallelism()
}

/// The dtypes the factorisations accept (their results come back in the same dtype).
pub(crate) fn check_dtype(operation: &'static str, dtype: DType) -> Result<()> {
    match dtype {
        DType::F32 | DType::F64 => Ok(()),
        other => Err(SparseError::InvalidArgument {
            operation,
            message: format!("values of dtype {other:?} are not supported; use f32 or f64"),
        }),
    }
}

/// A thin dense matrix on the host, row-major in f64 (burn's layout).
pub(crate) struct Rows {
    pub(crate) data: Vec<f64>,
    pub(crate) rows: usize,
    pub(crate) cols: usize,
}

impl Rows {
    pub(crate) fn zeros(rows: usize, cols: usize) -> Self {
        Self { data: vec![0.0; rows * cols], rows, cols }
    }

    /// A tensor's values (a copy in f64; the tensor's graph is untouched).
    pub(crate) fn of(t: &Tensor<2>) -> Self {
        let [rows, cols] = t.dims();
        let data = t.to_data();
        let data = match data.dtype() {
            DType::F64 => match data.as_slice::<f64>() {
                Ok(s) => s.to_vec(),
                Err(_) => data.iter::<f64>().collect(),
            },
            DType::F32 => match data.as_slice::<f32>() {
                Ok(s) => s.iter().map(|&v| v as f64).collect(),
                Err(_) => data.iter::<f64>().collect(),
            },
            _ => data.iter::<f64>().collect(),
        };
        Self { data, rows, cols }
    }

    pub(crate) fn view(&self) -> MatRef<'_, f64> {
        MatRef::from_row_major_slice(&self.data, self.rows, self.cols)
    }

    pub(crate) fn view_mut(&mut self) -> MatMut<'_, f64> {
        MatMut::from_row_major_slice_mut(&mut self.data, self.rows, self.cols)
    }

    /// As a tensor of `dtype` on `device` (untracked).
    pub(crate) fn tensor(self, device: &Device, dtype: DType) -> Tensor<2> {
        let shape = [self.rows, self.cols];
        let data = if dtype == DType::F32 {
            TensorData::new(self.data.iter().map(|&v| v as f32).collect::<Vec<f32>>(), shape)
        } else {
            TensorData::new(self.data, shape).convert_dtype(dtype)
        };
        Tensor::from_data(data, (device, dtype))
    }
}

/// `a b` into a new row-major matrix.
pub(crate) fn product(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Rows {
    let mut out = Rows::zeros(a.nrows(), b.ncols());
    matmul(out.view_mut(), Accum::Replace, a, b, 1.0, par());
    out
}

/// A host matrix as a tensor of `dtype` on `device` (untracked).
pub(crate) fn to_tensor(m: MatRef<'_, f64>, device: &Device, dtype: DType) -> Tensor<2> {
    let mut out = Rows::zeros(m.nrows(), m.ncols());
    out.view_mut().copy_from(m);
    out.tensor(device, dtype)
}

/// A tensor's values as a (column-major) host matrix.
pub(crate) fn to_host(t: &Tensor<2>) -> Mat<f64> {
    Rows::of(t).view().to_owned()
}

/// A host vector as a rank-1 tensor of `dtype` on `device`.
pub(crate) fn vec_tensor(v: &[f64], device: &Device, dtype: DType) -> Tensor<1> {
    Tensor::from_data(TensorData::new(v.to_vec(), [v.len()]).convert_dtype(dtype), (device, dtype))
}

/// `R = Lᵀ` and `(L⁻¹)ᵀ` (row-major, for [`tall::mul_small`]) of the Cholesky factor `L` of
/// the Gram matrix `g` of a tall matrix. `None` when `g` is not numerically positive definite
/// or `R`'s diagonal spans more than 1e6 (a condition number where the next pass could no
/// longer repair `Q`).
fn cholesky_factors(g: MatRef<'_, f64>) -> Option<(Mat<f64>, Vec<f64>)> {
    let q = g.nrows();
    let llt = g.llt(Side::Lower).ok()?;
    let l = llt.L();
    let diag: Vec<f64> = (0..q).map(|i| l[(i, i)]).collect();
    let (lo, hi) = diag.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &d| (lo.min(d), hi.max(d)));
    // NaN compares as neither: a NaN diagonal is ill-conditioned too.
    if lo.partial_cmp(&(1e-6 * hi)) != Some(std::cmp::Ordering::Greater) {
        return None;
    }
    let mut l_inv = Mat::<f64>::identity(q, q);
    l.solve_lower_triangular_in_place(l_inv.as_mut());
    // (L⁻¹)ᵀ row-major is L⁻¹ column-major: element (i, j) of the transpose is l_inv[(j, i)].
    let t = (0..q * q).map(|k| l_inv[(k % q, k / q)]).collect();
    Some((l.transpose().to_owned(), t))
}

/// One CholeskyQR pass: `x = Q R` from the Cholesky factor of `xᵀ x` (`R = Lᵀ`), `Q = x L⁻ᵀ`;
/// `None` as [`cholesky_factors`].
fn cholesky_qr_pass(x: MatRef<'_, f64>) -> Option<(Rows, Mat<f64>)> {
    let q = x.ncols();
    let mut g = Mat::<f64>::zeros(q, q);
    matmul(g.as_mut(), Accum::Replace, x.transpose(), x, 1.0, par());
    let (r, t) = cholesky_factors(g.as_ref())?;
    Some((product(x, MatRef::from_row_major_slice(&t, q, q)), r))
}

/// CholeskyQR2 of the row-major `x [m, q]` on the host in its own dtype (the Gram matrices and
/// each row's product in f64, [`tall`]): `(Q, R)`, or `None` when a pass is ill-conditioned.
fn cholesky_qr2_rows<T: Real>(x: &[T], m: usize, q: usize) -> Option<(Vec<T>, Mat<f64>)> {
    let gram = |x: &[T]| {
        let g = tall::gram(x, m, q);
        Mat::from_fn(q, q, |i, j| g[i * q + j])
    };
    let (r1, t1) = cholesky_factors(gram(x).as_ref())?;
    let mut out = tall::mul_small(x, m, q, &t1);
    let (r2, t2) = cholesky_factors(gram(&out).as_ref())?;
    tall::mul_small_in_place(&mut out, m, q, &t2);
    Some((out, &r2 * &r1))
}

/// The thin QR of a tall tensor `x [m, q]` (`m >= q`): `Q` (a tensor of `x`'s dtype on its
/// device, untracked) and `R`, as [`thin_qr`]. CholeskyQR2 runs on the tensor's own f32 or f64
/// storage, read once and transformed in place (no f64 copy of an f32 sketch); an
/// ill-conditioned `x` goes to [`thin_qr`]'s Householder fallback.
pub(crate) fn thin_qr_tensor(x: &Tensor<2>) -> (Tensor<2>, Mat<f64>) {
    let [m, q] = x.dims();
    let (device, dtype) = (x.device(), x.dtype());
    let fast = with_floats(x, |s| match s {
        FloatSlice::F32(s) => cholesky_qr2_rows(s, m, q).map(|(v, r)| (TensorData::new(v, [m, q]), r)),
        FloatSlice::F64(s) => cholesky_qr2_rows(s, m, q).map(|(v, r)| (TensorData::new(v, [m, q]), r)),
        _ => None,
    });
    match fast {
        Some((data, r)) => (Tensor::from_data(data, (&device, dtype)), r),
        None => {
            let (q, r) = thin_qr(Rows::of(x).view());
            (q.tensor(&device, dtype), r)
        }
    }
}

/// The thin SVD of a tall tensor `x [m, q]` (`m >= q`): [`thin_qr_tensor`], then the SVD of
/// `R`. `U` is a tensor of `x`'s dtype (untracked), the singular values are non-increasing,
/// and `V` is `[q, q]`.
pub(crate) fn thin_svd_tensor(x: &Tensor<2>, operation: &'static str) -> Result<(Tensor<2>, Vec<f64>, Mat<f64>)> {
    let (q, r) = thin_qr_tensor(x);
    let svd = r.thin_svd().map_err(|_| failed(operation, "the SVD"))?;
    let s = svd.S().column_vector().iter().copied().collect();
    let u_r = to_tensor(svd.U(), &q.device(), q.dtype());
    Ok((q.matmul(u_r), s, svd.V().to_owned()))
}

/// The thin QR factorisation of a tall `x [m, q]` (`m >= q`): `Q [m, q]` with orthonormal
/// columns and the upper triangular `R [q, q]`, `x = Q R`.
///
/// CholeskyQR2 (two CholeskyQR passes, the second repairing the orthogonality the first lost;
/// `R` has a positive diagonal, so the factorisation is the unique one and continuous in `x`)
/// when `x` is well enough conditioned, faer's Householder QR otherwise.
pub(crate) fn thin_qr(x: MatRef<'_, f64>) -> (Rows, Mat<f64>) {
    debug_assert!(x.nrows() >= x.ncols(), "thin QR of a tall matrix");
    if let Some((q1, r1)) = cholesky_qr_pass(x) {
        if let Some((q, r2)) = cholesky_qr_pass(q1.view()) {
            return (q, &r2 * &r1);
        }
    }
    let qr = x.qr();
    let q = qr.compute_thin_Q();
    let mut r = qr.thin_R().to_owned();
    // The positive-diagonal convention of the CholeskyQR path.
    let mut out = Rows::zeros(q.nrows(), q.ncols());
    out.view_mut().copy_from(&q);
    for i in 0..r.nrows() {
        if r[(i, i)] < 0.0 {
            for j in 0..r.ncols() {
                r[(i, j)] = -r[(i, j)];
            }
            for k in 0..out.rows {
                out.data[k * out.cols + i] = -out.data[k * out.cols + i];
            }
        }
    }
    (out, r)
}

/// The eigenpairs of the symmetric `a [q, q]` (its lower triangle is read), the eigenvalues in
/// non-increasing order if `largest`, non-decreasing otherwise; the eigenvectors are the columns
/// of the matrix, in the same order.
pub(crate) fn eigh(a: MatRef<'_, f64>, largest: bool, operation: &'static str) -> Result<(Vec<f64>, Mat<f64>)> {
    let evd = a.self_adjoint_eigen(Side::Lower).map_err(|_| failed(operation, "the symmetric eigensolver"))?;
    let mut e: Vec<f64> = evd.S().column_vector().iter().copied().collect();
    let mut z = evd.U().to_owned();
    if largest {
        e.reverse();
        let q = z.ncols();
        z = Mat::from_fn(z.nrows(), q, |i, j| z[(i, q - 1 - j)]);
    }
    Ok((e, z))
}

/// `R⁻¹` of an upper triangular `r [q, q]` (a triangular solve with the identity).
pub(crate) fn upper_inverse(r: MatRef<'_, f64>) -> Mat<f64> {
    let mut inv = Mat::<f64>::identity(r.nrows(), r.ncols());
    r.solve_upper_triangular_in_place(inv.as_mut());
    inv
}
