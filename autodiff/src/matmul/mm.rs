//! The plain products: [`mm`] (sparse @ dense, or sparse @ sparse through [`MatmulRhs`]),
//! [`mv`] and dense @ sparse ([`mm_dense_sparse`]), with their `try_` forms.

use super::csr::{csr_of, mismatch, spmm, spmm_stored};
use super::spgemm::spgemm;
use burn::tensor::Tensor;
use sparsegrad_backend::util::reshape;
use sparsegrad_backend::{Result, SparseTensor};

/// The right operand of [`mm`]: a dense matrix (dense result) or a sparse one (sparse result).
pub trait MatmulRhs {
    /// The product's type.
    type Output;
    /// `a @ self`.
    fn rmm(self, a: &SparseTensor<2>) -> Result<Self::Output>;
}

impl MatmulRhs for Tensor<2> {
    type Output = Tensor<2>;

    fn rmm(self, a: &SparseTensor<2>) -> Result<Tensor<2>> {
        let [m, k] = a.shape();
        if self.dims()[0] != k {
            return Err(mismatch("mm", &[m, k], &self.dims()));
        }
        let c = csr_of(a, "mm")?;
        spmm("mm", &c, self, c.transposed)
    }
}

impl MatmulRhs for &SparseTensor<2> {
    type Output = SparseTensor<2>;

    fn rmm(self, a: &SparseTensor<2>) -> Result<SparseTensor<2>> {
        spgemm(a, self)?.try_to_sparse_coo()
    }
}

/// torch's `sparse.mm(mat1, mat2)`: sparse @ dense gives a dense `Tensor<2>`, sparse @ sparse a
/// coalesced sparse COO tensor ([`spgemm`]'s CSR product, converted; call [`spgemm`] to keep
/// CSR). Differentiable w.r.t. the sparse values (on the operand's pattern) and the dense
/// operand. Panics on mismatched shapes (see [`try_mm`]).
///
/// ```
/// use burn::tensor::{Device, Tensor};
/// use sparsegrad_autodiff::matmul::mm;
/// use sparsegrad_backend::SparseTensor;
///
/// let device = Device::flex();
/// // [[0, 2], [3, 0]] @ [[1, 2], [3, 4]] = [[6, 8], [3, 6]]
/// let a = SparseTensor::csr_from_vecs(vec![0, 1, 2], vec![1, 0], vec![2.0f32, 3.0], [2, 2], &device)?;
/// let x = Tensor::<2>::from_data([[1.0f32, 2.0], [3.0, 4.0]], &device);
/// assert_eq!(mm(&a, x.clone()).into_data().try_to_vec::<f32>().unwrap(), [6.0, 8.0, 3.0, 6.0]);
/// // The same as the dense product.
/// assert_eq!(mm(&a, x.clone()).into_data(), a.to_dense().matmul(x).into_data());
/// // Sparse @ sparse: [[0, 2], [3, 0]]^2 = [[6, 0], [0, 6]], a coalesced COO tensor.
/// let a2 = mm(&a, &a);
/// assert_eq!(a2.to_dense().into_data().try_to_vec::<f32>().unwrap(), [6.0, 0.0, 0.0, 6.0]);
/// # Ok::<(), sparsegrad_backend::SparseError>(())
/// ```
pub fn mm<R: MatmulRhs>(a: &SparseTensor<2>, b: R) -> R::Output {
    try_mm(a, b).unwrap_or_else(|e| panic!("{e}"))
}

/// [`mm`] returning shape and layout errors.
pub fn try_mm<R: MatmulRhs>(a: &SparseTensor<2>, b: R) -> Result<R::Output> {
    b.rmm(a)
}

/// Dense @ sparse: `x [p, m] @ a [m, k] -> [p, k]`, computed as `(aᵀ xᵀ)ᵀ` on the kernels
/// without materialising `aᵀ` (torch makes users transpose twice): through the transposed view
/// of `a`'s pattern, computed once per pattern, and `a`'s values in its column order, gathered
/// once per values on Flex (a constant matrix pays the gather on its first product only). On
/// Flex the result is contiguous, as torch's is: the kernel stores `aᵀ xᵀ` transposed, tile by
/// tile, so the ops that follow read it in order (on the transposed view `(aᵀ xᵀ)ᵀ` leaves,
/// an elementwise op ran 3-4x slower).
pub fn mm_dense_sparse(x: Tensor<2>, a: &SparseTensor<2>) -> Tensor<2> {
    try_mm_dense_sparse(x, a).unwrap_or_else(|e| panic!("{e}"))
}

/// [`mm_dense_sparse`] returning errors.
pub fn try_mm_dense_sparse(x: Tensor<2>, a: &SparseTensor<2>) -> Result<Tensor<2>> {
    let [m, k] = a.shape();
    if x.dims()[1] != m {
        return Err(mismatch("mm_dense_sparse", &x.dims(), &[m, k]));
    }
    let c = csr_of(a, "mm_dense_sparse")?;
    // aᵀ xᵀ: for a = P that is Pᵀ xᵀ; for a = Pᵀ (CSC) it is P xᵀ. Either product is stored
    // transposed, so the result is contiguous (elementwise ops after it read it in order; on a
    // transposed view they ran 3-4x slower).
    Ok(spmm_stored("mm_dense_sparse", &c, x.transpose(), !c.transposed, true)?.transpose())
}

/// torch's `mv`: sparse matrix @ dense vector. Panics on mismatched shapes (see [`try_mv`]).
pub fn mv(a: &SparseTensor<2>, v: Tensor<1>) -> Tensor<1> {
    try_mv(a, v).unwrap_or_else(|e| panic!("{e}"))
}

/// [`mv`] returning shape and layout errors.
pub fn try_mv(a: &SparseTensor<2>, v: Tensor<1>) -> Result<Tensor<1>> {
    let k = v.dims()[0];
    let m = a.shape()[0];
    Ok(reshape(try_mm(a, reshape(v, [k, 1]))?, [m]))
}
