//! The fused `beta * input + alpha * product` forms: [`addmm`] (a dense input and a dense
//! product) and [`sampled_addmm`] (the product evaluated only on a sparse input's pattern), and
//! `ignoring_input`, torch's `beta = 0` semantics that both need.

use super::csr::{block_diagonal, mismatch, sddmm, Csr};
use super::mm::try_mm;
use burn::tensor::Tensor;
use sparsegrad_backend::error::invalid;
use sparsegrad_backend::util::{reshape, reshape_int};
use sparsegrad_backend::{Layout, Result, SparseTensor};

/// torch's `sparse.addmm(input, mat1, mat2, beta, alpha)`: `beta * input + alpha * (mat1 @ mat2)`;
/// `input` broadcasts to the product's shape. As torch, with `beta = 0` the input's values are
/// ignored (its NaN and infinities are not propagated) and its gradient is zeros of its shape.
/// Panics on mismatched shapes (see [`try_addmm`]).
///
/// ```
/// use burn::tensor::{Device, Tensor};
/// use sparsegrad_autodiff::matmul::addmm;
/// use sparsegrad_backend::SparseTensor;
///
/// let device = Device::flex();
/// let a = SparseTensor::csr_from_vecs(vec![0, 1, 2], vec![1, 0], vec![2.0f32, 3.0], [2, 2], &device)?;
/// let x = Tensor::<2>::from_data([[1.0f32, 2.0], [3.0, 4.0]], &device);
/// let bias = Tensor::<2>::from_data([[1.0f32, -1.0]], &device); // broadcast over the rows
/// // 0.5 * bias + 2 * (a @ x) = [[12.5, 15.5], [6.5, 11.5]]
/// let y = addmm(bias, &a, x, 0.5, 2.0);
/// assert_eq!(y.into_data().try_to_vec::<f32>().unwrap(), [12.5, 15.5, 6.5, 11.5]);
/// # Ok::<(), sparsegrad_backend::SparseError>(())
/// ```
pub fn addmm(input: Tensor<2>, mat1: &SparseTensor<2>, mat2: Tensor<2>, beta: f64, alpha: f64) -> Tensor<2> {
    try_addmm(input, mat1, mat2, beta, alpha).unwrap_or_else(|e| panic!("{e}"))
}

/// [`addmm`] returning shape and layout errors.
pub fn try_addmm(
    input: Tensor<2>,
    mat1: &SparseTensor<2>,
    mat2: Tensor<2>,
    beta: f64,
    alpha: f64,
) -> Result<Tensor<2>> {
    let product = try_mm(mat1, mat2)?;
    let [m, n] = product.dims();
    let [im, in_] = input.dims();
    if !((im == m || im == 1) && (in_ == n || in_ == 1)) {
        return Err(invalid(
            "addmm",
            format!("input of shape [{im}, {in_}] does not broadcast to the product's [{m}, {n}]"),
        ));
    }
    let product = if alpha == 1.0 { product } else { product * alpha };
    if m * n == 0 {
        return Ok(product);
    }
    if beta == 0.0 {
        return Ok(ignoring_input(product, input));
    }
    Ok(product + if beta == 1.0 { input } else { input * beta })
}

/// `product` with `input` joined to the graph at weight zero, for `addmm` with `beta = 0`:
/// torch ignores the input's values then (its NaN and infinities do not reach the result) but
/// still gives it a gradient, zeros of its shape, where burn would give none for an input the
/// graph never saw. `input * 0` would let a NaN through, so the input is masked to zeros instead:
/// the mask's backward zeroes the gradient, and the sum with the product reduces it over the
/// broadcast dims to the input's shape. An untracked input costs nothing.
pub(crate) fn ignoring_input(product: Tensor<2>, input: Tensor<2>) -> Tensor<2> {
    if !input.is_require_grad() {
        return product;
    }
    let everywhere = input.zeros_like().equal_elem(0.0);
    product + input.mask_fill(everywhere, 0.0)
}

/// torch's `sparse.sampled_addmm(input, mat1, mat2, beta, alpha)`: `beta * input + alpha *
/// (mat1 @ mat2)` evaluated only on `input`'s pattern (SDDMM), a CSR result. `D = 2`, or `D = 3`
/// for a batch (`input [B, m, n]` batched CSR, `mat1 [B, m, k]`, `mat2 [B, k, n]`). Other
/// layouts of `input` are converted to CSR.
///
/// ```
/// use burn::tensor::{Device, Tensor};
/// use sparsegrad_autodiff::matmul::sampled_addmm;
/// use sparsegrad_backend::SparseTensor;
///
/// let device = Device::flex();
/// // The pattern {(0, 1), (1, 0)} with values 10 and 20.
/// let input = SparseTensor::csr_from_vecs(vec![0, 1, 2], vec![1, 0], vec![10.0f32, 20.0], [2, 2], &device)?;
/// let m1 = Tensor::<2>::from_data([[1.0f32, 2.0], [3.0, 4.0]], &device);
/// let m2 = Tensor::<2>::from_data([[5.0f32, 6.0], [7.0, 8.0]], &device);
/// // m1 @ m2 = [[19, 22], [43, 50]]; on the pattern: 0.1 * 10 + 22 and 0.1 * 20 + 43.
/// let out = sampled_addmm(&input, m1, m2, 0.1, 1.0);
/// assert_eq!(out.to_dense().into_data().try_to_vec::<f32>().unwrap(), [0.0, 23.0, 45.0, 0.0]);
/// # Ok::<(), sparsegrad_backend::SparseError>(())
/// ```
pub fn sampled_addmm<const D: usize>(
    input: &SparseTensor<D>,
    mat1: Tensor<D>,
    mat2: Tensor<D>,
    beta: f64,
    alpha: f64,
) -> SparseTensor<D> {
    try_sampled_addmm(input, mat1, mat2, beta, alpha).unwrap_or_else(|e| panic!("{e}"))
}

/// [`sampled_addmm`] returning errors.
pub fn try_sampled_addmm<const D: usize>(
    input: &SparseTensor<D>,
    mat1: Tensor<D>,
    mat2: Tensor<D>,
    beta: f64,
    alpha: f64,
) -> Result<SparseTensor<D>> {
    const OP: &str = "sampled_addmm";
    if D != 2 && D != 3 {
        return Err(invalid(OP, format!("rank {D}: expected a matrix or a batch of matrices")));
    }
    if input.dense_dim() > 0 {
        return Err(invalid(OP, "hybrid input is not supported"));
    }
    let s = if input.layout() == Layout::Csr { input.clone() } else { input.to_sparse_csr()? };
    let (d1, d2) = (mat1.dims(), mat2.dims());
    let shape = s.shape();
    let (batch, m, n) = if D == 3 { (shape[0], shape[1], shape[2]) } else { (1, shape[0], shape[1]) };
    let k = d1[D - 1];
    let ok = d1[D - 2] == m && d2[D - 2] == k && d2[D - 1] == n && (D == 2 || (d1[0] == batch && d2[0] == batch));
    if !ok {
        return Err(mismatch(OP, &d1, &d2));
    }
    let pattern = if D == 3 {
        block_diagonal(&s, OP)?
    } else {
        s.check_invariants()?;
        let (c, p) = s.compressed_indices_flat().expect("csr");
        let nnz = s.nnz();
        Csr {
            crow: reshape_int(c, [m + 1]),
            col: reshape_int(p, [nnz]),
            values: reshape(s.values_flat(), [nnz]),
            cols: n,
            transposed: false,
            cell: s.transpose_cell().expect("csr"),
        }
    };
    let a = reshape(mat1, [batch * m, k]);
    // For a matrix the transposed view goes to the kernel as is (its host side transposes it in
    // cache tiles); a reshape would first copy it through burn's generic strided path.
    let b = if D == 2 {
        Tensor::<2>::from_dispatch(mat2.swap_dims(0, 1).into_dispatch())
    } else {
        reshape(mat2.swap_dims(D - 2, D - 1), [batch * n, k])
    };
    let nnz_total = s.values_flat().dims()[0];
    if nnz_total == 0 {
        // Nothing to sample (and no scaling of an empty tensor: burn's Cube backend rejects
        // element-wise ops on `[0, 1]`).
        return Ok(s.clone());
    }
    let sampled = reshape(sddmm(&pattern, a, b), [nnz_total, 1]);
    let sampled = if alpha == 1.0 { sampled } else { sampled * alpha };
    // As torch: with beta = 0 the input's values are ignored (not multiplied: NaN * 0 is NaN).
    let values = if beta == 0.0 { sampled } else { s.values_flat() * beta + sampled };
    Ok(s.with_values(values))
}
