//! torch's `svd_lowrank` and `pca_lowrank` on a sparse matrix: the randomized range finder with
//! power iterations and the SVD of the projected matrix (Halko, Martinsson & Tropp, algorithm
//! 5.1, in the form torch implements it).
//!
//! The sparse operand is touched only through [`try_mm`] (`A X`, and `Aᵀ X` on the transposed
//! view, which shares A's arrays) and [`try_mm_dense_sparse`] (pca's column means), so it is
//! never densified; a mean `M` (`svd_lowrank`'s `m`, `pca_lowrank`'s column
//! means) enters each product as a dense correction `M X` computed from `M`'s own shape, a rank-one
//! product when `M` is a row or a column. The thin QR factorisations and the final small SVD run
//! on the host with faer ([`super::dense`]).
//!
//! Gradients: `U`, `S` and `V` are all differentiable w.r.t. the sparse operand's values and the
//! mean: the products are burn's and the library's differentiable ops, and the QR and SVD steps
//! carry their exact derivatives ([`super::tracked`]), as torch's `linalg.qr` and `linalg.svd` do.
//! Those derivatives exist where torch's do: sketches of full column rank and distinct non-zero
//! singular values. The Gaussian test matrix is a constant, drawn on the host from a seed that
//! burn's generator gives.

use super::dense::check_dtype;
use super::tracked::{qr_q, svd};
use crate::matmul::{try_mm, try_mm_dense_sparse};
use burn::tensor::{DType, Device, Distribution, Int, Tensor, TensorData};
use sparsegrad_backend::error::invalid;
use sparsegrad_backend::{Layout, Result, SparseTensor};
use sparsegrad_kernels::tall;

/// `M_b x`, with `M_b` the broadcast of `mean [r, c]` to `[rows, x.rows]` (`r` is 1 or `rows`,
/// `c` is 1 or `x.rows`): a row or column of means never becomes a full matrix.
fn mean_mm(mean: &Tensor<2>, x: Tensor<2>, rows: usize) -> Tensor<2> {
    let [r, c] = mean.dims();
    let [inner, k] = x.dims();
    let p = if c == inner { mean.clone().matmul(x) } else { mean.clone().matmul(x.sum_dim(0)) };
    if r == rows {
        p
    } else {
        p.expand([rows, k])
    }
}

/// `A - M` as an operator, transposed when torch's algorithm works on `Aᵀ` (wide inputs).
struct Operand {
    /// The sparse matrix in a compressed layout (converted once, not at every product).
    a: SparseTensor<2>,
    /// Its transpose: the same index arrays under the dual layout (and the same cached
    /// transposed pattern), so `Aᵀ x` is one sparse product, without dense transposes.
    at: SparseTensor<2>,
    /// The operator is `Aᵀ - Mᵀ`.
    transposed: bool,
    /// The mean, already transposed when the operator is.
    mean: Option<Tensor<2>>,
    /// The operator's shape.
    shape: [usize; 2],
}

impl Operand {
    fn new(a: &SparseTensor<2>, mean: Option<Tensor<2>>, transposed: bool) -> Result<Self> {
        let a = match a.layout() {
            Layout::Csr | Layout::Csc => a.clone(),
            _ => a.to_sparse_csr()?,
        };
        let [m, n] = a.shape();
        let shape = if transposed { [n, m] } else { [m, n] };
        let mean = mean.map(|t| if transposed { t.transpose() } else { t });
        let at = a.t();
        Ok(Self { a, at, transposed, mean, shape })
    }

    /// `A x` (or `Aᵀ x` on the stored matrix).
    fn sparse(&self, x: Tensor<2>, transpose: bool) -> Result<Tensor<2>> {
        try_mm(if transpose { &self.at } else { &self.a }, x)
    }

    /// `(A - M) x`, `x [cols, k]`.
    fn apply(&self, x: Tensor<2>) -> Result<Tensor<2>> {
        let ax = self.sparse(x.clone(), self.transposed)?;
        Ok(match &self.mean {
            Some(m) => ax - mean_mm(m, x, self.shape[0]),
            None => ax,
        })
    }

    /// `(A - M)ᵀ x`, `x [rows, k]`.
    fn apply_t(&self, x: Tensor<2>) -> Result<Tensor<2>> {
        let ax = self.sparse(x.clone(), !self.transposed)?;
        Ok(match &self.mean {
            Some(m) => ax - mean_mm(&m.clone().transpose(), x, self.shape[1]),
            None => ax,
        })
    }
}

/// The Gaussian test matrix: standard normal draws from a seed taken from burn's generator on
/// `device` (so `device.seed(..)` repeats them), filled on the host in parallel blocks
/// ([`tall::fill_standard_normal`]): drawing each element through burn's generator took longer
/// than the power iterations' sparse products.
fn gaussian(shape: [usize; 2], device: &Device, dtype: DType) -> Tensor<2> {
    // Two draws of 31 bits (the default Int dtype may be i32).
    let words: Vec<i64> = Tensor::<1, Int>::random([2], Distribution::Uniform(0.0, 2_147_483_647.0), device)
        .into_data()
        .iter::<i64>()
        .collect();
    let seed = ((words[0] as u64) << 31) ^ words[1] as u64;
    let n = shape[0] * shape[1];
    let data = if dtype == DType::F64 {
        let mut v = vec![0.0f64; n];
        tall::fill_standard_normal(&mut v, seed);
        TensorData::new(v, shape)
    } else {
        let mut v = vec![0.0f32; n];
        tall::fill_standard_normal(&mut v, seed);
        TensorData::new(v, shape)
    };
    Tensor::from_data(data, (device, dtype))
}

/// torch's `svd_lowrank(A, q, niter, M)`: `(U [m, q], S [q], V [n, q])` with
/// `A - M ≈ U diag(S) Vᵀ`, the singular values non-increasing; `q` defaults to 6 and must not
/// exceed `min(m, n)`, `niter` (power iterations) defaults to 2, and `M` (optional) is a dense
/// `[m, n]`, `[1, n]`, `[m, 1]` or `[1, 1]` tensor broadcast to `A`'s shape, never materialised.
///
/// The test matrix is drawn from burn's generator on `A`'s device, as torch draws from its own:
/// seed it (`device.seed(..)`) for repeatable results. All three outputs are differentiable
/// w.r.t. `A`'s values and `M` (module docs). Values must be f32 or f64; hybrid tensors (dense
/// dims) are refused by `mm`.
pub fn svd_lowrank(
    a: &SparseTensor<2>,
    q: Option<usize>,
    niter: Option<usize>,
    m: Option<Tensor<2>>,
) -> Result<(Tensor<2>, Tensor<1>, Tensor<2>)> {
    const OP: &str = "svd_lowrank";
    let [rows, cols] = a.shape();
    let q = q.unwrap_or(6);
    let niter = niter.unwrap_or(2);
    check_dtype(OP, a.dtype())?;
    if q > rows.min(cols) {
        return Err(invalid(
            OP,
            format!("q = {q} exceeds min(m, n) = {} of the [{rows}, {cols}] input", rows.min(cols)),
        ));
    }
    if let Some(mean) = &m {
        let [r, c] = mean.dims();
        if !(r == rows || r == 1) || !(c == cols || c == 1) {
            return Err(invalid(OP, format!("the mean M of shape [{r}, {c}] does not broadcast to [{rows}, {cols}]")));
        }
        if mean.dtype() != a.dtype() {
            return Err(invalid(OP, format!("the mean M is {:?}, the input {:?}", mean.dtype(), a.dtype())));
        }
    }
    let (device, dtype) = (a.device(), a.dtype());
    if q == 0 {
        let empty = |r: usize| Tensor::<2>::zeros([r, 0], (&device, dtype));
        return Ok((empty(rows), Tensor::zeros([0], (&device, dtype)), empty(cols)));
    }
    // torch works on a tall matrix: a wide input is transposed, and U and V swap at the end.
    let transposed = rows < cols;
    let op = Operand::new(a, m, transposed)?;
    let omega = gaussian([op.shape[1], q], &device, dtype);
    let mut basis = qr_q(op.apply(omega)?);
    for _ in 0..niter {
        basis = qr_q(op.apply_t(basis)?);
        basis = qr_q(op.apply(basis)?);
    }
    // B = Qᵀ (A - M), factorised through its transpose (tall): Bᵀ = U' S V'ᵀ, B = V' S U'ᵀ.
    let (u_t, s, v_t) = svd(op.apply_t(basis.clone())?, OP)?;
    let u = basis.matmul(v_t);
    Ok(if transposed { (u_t, s, u) } else { (u, s, u_t) })
}

/// torch's `pca_lowrank(A, q, center, niter)`: [`svd_lowrank`] of `A` minus its column means
/// (`center`, the default in torch), the means entering each product as a rank-one correction
/// (`A` stays sparse; torch builds the dense `[m, n]` mean matrix). `q` defaults to
/// `min(6, m, n)`, `niter` to 2. `V`'s columns are the principal directions and
/// `S² / (m - 1)` the variances along them.
pub fn pca_lowrank(
    a: &SparseTensor<2>,
    q: Option<usize>,
    center: bool,
    niter: Option<usize>,
) -> Result<(Tensor<2>, Tensor<1>, Tensor<2>)> {
    const OP: &str = "pca_lowrank";
    let [rows, cols] = a.shape();
    let q = q.unwrap_or(6.min(rows).min(cols));
    if q > rows.min(cols) {
        return Err(invalid(
            OP,
            format!("q = {q} exceeds min(m, n) = {} of the [{rows}, {cols}] input", rows.min(cols)),
        ));
    }
    check_dtype(OP, a.dtype())?;
    if !center || rows == 0 {
        return svd_lowrank(a, Some(q), niter, None);
    }
    let ones = Tensor::<2>::ones([1, rows], (&a.device(), a.dtype()));
    let means = try_mm_dense_sparse(ones, a)?.div_scalar(rows as f64);
    svd_lowrank(a, Some(q), niter, Some(means))
}
