//! Checked constructors (`coo`, `coo_from_rows`, `csr`, `csc`, `bsr`, `bsc`, `compressed`), their
//! `*_unchecked` forms, and `empty`/`zeros`. A checked constructor returns every violation of the
//! layout's invariants (see `tensor`) as a `SparseError`; the unchecked ones take the contents
//! as given (still deriving the structure from the component shapes) and leave the check to the
//! first operation that reads them, so an invalid tensor gives an error there, never undefined
//! behaviour.

use crate::algebra::validate::{
    check_compressed, check_coo_bounds, check_numel, check_shape, index_dtype_max, CompressedNames,
};
use crate::error::{invalid, Result, SparseError};
use crate::host::with_ints;
use crate::layout::Layout;
use crate::match_ints;
use crate::memo::PatternMemo;
use crate::tensor::{Indices, SparseTensor, Trust};
use crate::util::{numel, reshape, reshape_int};
use burn::tensor::{DType, Device, Int, Tensor, TensorData};

impl<const D: usize> SparseTensor<D> {
    /// torch's `sparse_coo_tensor(indices, values, size)`: `indices [sparse_dim, nse]`,
    /// `values [nse, *dense]`. The result is uncoalesced (as torch) unless `nse < 2`.
    pub fn coo<const V: usize>(indices: Tensor<2, Int>, values: Tensor<V>, shape: [usize; D]) -> Result<Self> {
        let s = Self::coo_structure(indices, values, shape)?;
        s.check_coo_contents()?;
        Ok(Self { trust: Trust::Checked, ..s })
    }

    /// [`SparseTensor::coo`] without the index checks (torch's `check_invariants=False`): the
    /// indices are kept as given and checked on the first operation that reads them (see
    /// [`SparseTensor::check_invariants`]). Panics when the component shapes are inconsistent.
    pub fn coo_unchecked<const V: usize>(indices: Tensor<2, Int>, values: Tensor<V>, shape: [usize; D]) -> Self {
        Self::coo_structure(indices, values, shape).unwrap_or_else(|e| panic!("coo_unchecked: {e}"))
    }

    /// TensorFlow's `SparseTensor(indices, values, dense_shape)`: `rows [nse, rank]`, one row per entry.
    pub fn coo_from_rows<const V: usize>(rows: Tensor<2, Int>, values: Tensor<V>, shape: [usize; D]) -> Result<Self> {
        Self::coo(rows.transpose(), values, shape)
    }

    pub(crate) fn coo_structure<const V: usize>(
        indices: Tensor<2, Int>,
        values: Tensor<V>,
        shape: [usize; D],
    ) -> Result<Self> {
        crate::util::check_backend(&values.device())?;
        let [sparse_dim, nse] = indices.dims();
        let dense_dim = V - 1;
        if sparse_dim == 0 || sparse_dim + dense_dim != D {
            return Err(invalid(
                "sparse_coo_tensor",
                format!("{sparse_dim} sparse dims and {dense_dim} dense dims (values of rank {V}) do not make a tensor of rank {D}"),
            ));
        }
        let vdims = values.dims();
        let mut expected = vec![nse];
        expected.extend_from_slice(&shape[sparse_dim..]);
        if vdims.as_slice() != expected.as_slice() {
            return Err(SparseError::ShapeMismatch { component: "values", expected, actual: vdims.to_vec() });
        }
        // The whole shape first, so an overflow reports it with its dense dims.
        check_numel(&shape)?;
        check_shape(&shape[..sparse_dim], indices.dtype())?;
        let item = numel(&shape[sparse_dim..]);
        Ok(Self {
            layout: Layout::Coo,
            shape,
            batch_dim: 0,
            sparse_dim,
            dense_dim,
            blocksize: None,
            values: reshape(values, [nse, item]),
            indices: Indices::Coo(indices),
            coalesced: nse < 2,
            trust: Trust::unchecked(),
        })
    }

    fn check_coo_contents(&self) -> Result<()> {
        let Indices::Coo(indices) = &self.indices else { return Ok(()) };
        let nse = self.nnz();
        let sizes = &self.shape[..self.sparse_dim];
        with_ints(indices, |s| match_ints!(s, i => check_coo_bounds("indices", i, nse, sizes)))
    }

    /// torch's `sparse_compressed_tensor(compressed, plain, values, size, layout)`.
    ///
    /// `compressed [*batch, n + 1]`, `plain [*batch, nse]` (`C` = batch dims + 1), and `values
    /// [*batch, nse, *dense]`, or `[*batch, nse, br, bc, *dense]` for BSR/BSC.
    pub fn compressed<const C: usize, const V: usize>(
        compressed: Tensor<C, Int>,
        plain: Tensor<C, Int>,
        values: Tensor<V>,
        shape: [usize; D],
        layout: Layout,
    ) -> Result<Self> {
        let s = Self::compressed_structure(compressed, plain, values, shape, layout)?;
        s.check_compressed_contents()?;
        Ok(Self { trust: Trust::Checked, ..s })
    }

    /// [`SparseTensor::compressed`] without the index checks (torch's `check_invariants=False`):
    /// the indices are kept as given and checked on the first operation that reads them (see
    /// [`SparseTensor::check_invariants`]). Panics when the component shapes are inconsistent.
    pub fn compressed_unchecked<const C: usize, const V: usize>(
        compressed: Tensor<C, Int>,
        plain: Tensor<C, Int>,
        values: Tensor<V>,
        shape: [usize; D],
        layout: Layout,
    ) -> Self {
        Self::compressed_structure(compressed, plain, values, shape, layout)
            .unwrap_or_else(|e| panic!("sparse_compressed_tensor_unchecked: {e}"))
    }

    /// A CSR tensor whose indices an operation computed itself (a product's pattern), taken
    /// as checked without reading them again.
    ///
    /// # Safety
    /// `crow` and `col` satisfy the CSR invariants for `shape` (pointers from 0 to `nse`,
    /// non-decreasing; columns in range, strictly increasing within each row) and their dtype
    /// holds every index: kernels later walk them through unchecked offsets. Debug builds
    /// check them.
    pub unsafe fn csr_trusted(
        crow: Tensor<1, Int>,
        col: Tensor<1, Int>,
        values: Tensor<1>,
        shape: [usize; D],
    ) -> Result<Self> {
        let s = Self::compressed_structure(crow, col, values, shape, Layout::Csr)?;
        debug_assert_eq!(s.check_compressed_contents(), Ok(()), "csr_trusted: invalid indices");
        Ok(Self { trust: Trust::Checked, ..s })
    }

    /// torch's `sparse_csr_tensor(crow_indices, col_indices, values, size)`.
    pub fn csr<const C: usize, const V: usize>(
        crow: Tensor<C, Int>,
        col: Tensor<C, Int>,
        values: Tensor<V>,
        shape: [usize; D],
    ) -> Result<Self> {
        Self::compressed(crow, col, values, shape, Layout::Csr)
    }

    /// [`SparseTensor::csr`] for a weight rebuilt from the same index tensors at every step (a
    /// layer's parameters): the contents are checked the first time and again only when the
    /// tensors or the shape change (see [`PatternMemo`]), with the same errors as `csr`.
    pub fn csr_with_memo<const V: usize>(
        crow: Tensor<1, Int>,
        col: Tensor<1, Int>,
        values: Tensor<V>,
        shape: [usize; D],
        memo: &PatternMemo<1>,
    ) -> Result<Self> {
        let s = Self::compressed_structure(crow.clone(), col.clone(), values, shape, Layout::Csr)?;
        let cell = memo.check_once(&[&crow, &col], &shape, || s.check_compressed_contents())?;
        let indices = match s.indices {
            Indices::Compressed { compressed, plain, .. } => {
                Indices::Compressed { compressed, plain, transposed: cell }
            }
            coo => coo,
        };
        Ok(Self { trust: Trust::Checked, indices, ..s })
    }

    /// torch's `sparse_csc_tensor(ccol_indices, row_indices, values, size)`.
    pub fn csc<const C: usize, const V: usize>(
        ccol: Tensor<C, Int>,
        row: Tensor<C, Int>,
        values: Tensor<V>,
        shape: [usize; D],
    ) -> Result<Self> {
        Self::compressed(ccol, row, values, shape, Layout::Csc)
    }

    /// torch's `sparse_bsr_tensor(crow_indices, col_indices, values, size)`; the block size is
    /// read from `values [*batch, nse, br, bc, *dense]`.
    pub fn bsr<const C: usize, const V: usize>(
        crow: Tensor<C, Int>,
        col: Tensor<C, Int>,
        values: Tensor<V>,
        shape: [usize; D],
    ) -> Result<Self> {
        Self::compressed(crow, col, values, shape, Layout::Bsr)
    }

    /// torch's `sparse_bsc_tensor(ccol_indices, row_indices, values, size)`.
    pub fn bsc<const C: usize, const V: usize>(
        ccol: Tensor<C, Int>,
        row: Tensor<C, Int>,
        values: Tensor<V>,
        shape: [usize; D],
    ) -> Result<Self> {
        Self::compressed(ccol, row, values, shape, Layout::Bsc)
    }

    /// [`SparseTensor::csr`] without the index checks.
    pub fn csr_unchecked<const C: usize, const V: usize>(
        crow: Tensor<C, Int>,
        col: Tensor<C, Int>,
        values: Tensor<V>,
        shape: [usize; D],
    ) -> Self {
        Self::compressed_unchecked(crow, col, values, shape, Layout::Csr)
    }

    /// [`SparseTensor::csc`] without the index checks.
    pub fn csc_unchecked<const C: usize, const V: usize>(
        ccol: Tensor<C, Int>,
        row: Tensor<C, Int>,
        values: Tensor<V>,
        shape: [usize; D],
    ) -> Self {
        Self::compressed_unchecked(ccol, row, values, shape, Layout::Csc)
    }

    /// [`SparseTensor::bsr`] without the index checks.
    pub fn bsr_unchecked<const C: usize, const V: usize>(
        crow: Tensor<C, Int>,
        col: Tensor<C, Int>,
        values: Tensor<V>,
        shape: [usize; D],
    ) -> Self {
        Self::compressed_unchecked(crow, col, values, shape, Layout::Bsr)
    }

    /// [`SparseTensor::bsc`] without the index checks.
    pub fn bsc_unchecked<const C: usize, const V: usize>(
        ccol: Tensor<C, Int>,
        row: Tensor<C, Int>,
        values: Tensor<V>,
        shape: [usize; D],
    ) -> Self {
        Self::compressed_unchecked(ccol, row, values, shape, Layout::Bsc)
    }

    fn compressed_structure<const C: usize, const V: usize>(
        compressed: Tensor<C, Int>,
        plain: Tensor<C, Int>,
        values: Tensor<V>,
        shape: [usize; D],
        layout: Layout,
    ) -> Result<Self> {
        const OP: &str = "sparse_compressed_tensor";
        crate::util::check_backend(&values.device())?;
        if layout == Layout::Coo {
            return Err(SparseError::UnsupportedLayout { operation: OP, layout: layout.name() });
        }
        let (cname, pname) = layout.index_names();
        let batch_dim = C - 1;
        let block_rank = if layout.is_blocked() { 2 } else { 0 };
        if D < batch_dim + 2 || V < batch_dim + 1 + block_rank {
            return Err(invalid(
                OP,
                format!(
                    "index tensors of rank {C} and values of rank {V} do not make a {} tensor of rank {D}",
                    layout.name()
                ),
            ));
        }
        let dense_dim = D - batch_dim - 2;
        if V != batch_dim + 1 + block_rank + dense_dim {
            return Err(invalid(
                OP,
                format!(
                    "values of rank {V} need rank {} for {batch_dim} batch and {dense_dim} dense dims",
                    batch_dim + 1 + block_rank + dense_dim
                ),
            ));
        }
        if compressed.dtype() != plain.dtype() {
            return Err(invalid(
                OP,
                format!(
                    "{cname} ({:?}) and {pname} ({:?}) must have the same dtype",
                    compressed.dtype(),
                    plain.dtype()
                ),
            ));
        }
        // The whole shape first: every size product below then fits, and so does every dim
        // (the index dtype holds it, so `n + 1` cannot overflow).
        check_numel(&shape)?;
        check_shape(&shape[..batch_dim + 2], compressed.dtype())?;
        let batch = &shape[..batch_dim];
        let vdims = values.dims();
        let blocksize = layout.is_blocked().then(|| [vdims[batch_dim + 1], vdims[batch_dim + 2]]);
        let [br, bc] = blocksize.unwrap_or([1, 1]);
        for (dim, block) in [(batch_dim, br), (batch_dim + 1, bc)] {
            if block == 0 || !shape[dim].is_multiple_of(block) {
                return Err(SparseError::BlocksizeMismatch { dim, size: shape[dim], block });
            }
        }
        let (cdim, cblock) = if layout.compresses_rows() { (batch_dim, br) } else { (batch_dim + 1, bc) };
        let n_comp = shape[cdim] / cblock;
        let nse = plain.dims()[batch_dim];
        let check = |component: &'static str, actual: Vec<usize>, last: &[usize]| {
            let mut expected = batch.to_vec();
            expected.extend_from_slice(last);
            if actual != expected {
                return Err(SparseError::ShapeMismatch { component, expected, actual });
            }
            Ok(())
        };
        check(cname, compressed.dims().to_vec(), &[n_comp + 1])?;
        check(pname, plain.dims().to_vec(), &[nse])?;
        let mut vlast = vec![nse];
        if let Some(b) = blocksize {
            vlast.extend(b);
        }
        vlast.extend_from_slice(&shape[batch_dim + 2..]);
        check("values", vdims.to_vec(), &vlast)?;
        let (max, name) = index_dtype_max(compressed.dtype())?;
        if nse as u128 > max as u128 {
            return Err(SparseError::DimensionTooLarge {
                component: "nse",
                dim: batch_dim,
                size: nse,
                index_dtype: name,
                max,
            });
        }
        let batch_numel = numel(batch);
        let item = br * bc * numel(&shape[batch_dim + 2..]);
        Ok(Self {
            layout,
            shape,
            batch_dim,
            sparse_dim: 2,
            dense_dim,
            blocksize,
            values: reshape(values, [batch_numel * nse, item]),
            indices: Indices::Compressed {
                compressed: reshape_int(compressed, [batch_numel, n_comp + 1]),
                plain: reshape_int(plain, [batch_numel, nse]),
                transposed: Default::default(),
            },
            coalesced: true,
            trust: Trust::unchecked(),
        })
    }

    /// Number of compressed and plain segments (rows and columns, in blocks for BSR/BSC).
    pub(crate) fn compressed_extents(&self) -> (usize, usize) {
        let [br, bc] = self.blocksize.unwrap_or([1, 1]);
        let (rows, cols) = (self.shape[self.batch_dim] / br, self.shape[self.batch_dim + 1] / bc);
        if self.layout.compresses_rows() {
            (rows, cols)
        } else {
            (cols, rows)
        }
    }

    /// Every content invariant of the layout (bounds; compressed order and uniqueness).
    pub(crate) fn check_contents(&self) -> Result<()> {
        match self.indices {
            Indices::Coo(_) => self.check_coo_contents(),
            Indices::Compressed { .. } => self.check_compressed_contents(),
        }
    }

    fn check_compressed_contents(&self) -> Result<()> {
        let Indices::Compressed { compressed, plain, .. } = &self.indices else { return Ok(()) };
        let (cname, pname) = self.layout.index_names();
        let plain_dim = if self.layout.compresses_rows() { self.batch_dim + 1 } else { self.batch_dim };
        let names = CompressedNames { compressed: cname, plain: pname, plain_dim };
        let (n_comp, n_plain) = self.compressed_extents();
        let (batch, nse) = (self.batch_numel(), self.nnz());
        with_ints(compressed, |cs| {
            with_ints(
                plain,
                |ps| match_ints!(cs, c => match_ints!(ps, p => check_compressed(names, c, p, batch, n_comp, n_plain, nse))),
            )
        })
    }

    /// An all-zero COO tensor with no stored entries (Julia's `undef`): every dim sparse,
    /// int64 indices, f32 values. Panics when the shape's element count overflows `i64` (see
    /// [`SparseTensor::try_empty`]).
    pub fn empty(shape: [usize; D], device: &Device) -> Self {
        Self::try_empty(shape, device).unwrap_or_else(|e| panic!("SparseTensor::empty: {e}"))
    }

    /// [`SparseTensor::empty`] returning the error for a shape whose element count overflows
    /// `i64` (or a dimension beyond int64).
    pub fn try_empty(shape: [usize; D], device: &Device) -> Result<Self> {
        Self::empty_with(shape, D, DType::I64, DType::F32, device)
    }

    /// Same as [`SparseTensor::empty`]: sparse tensors store no zeros.
    pub fn zeros(shape: [usize; D], device: &Device) -> Self {
        Self::empty(shape, device)
    }

    /// An empty COO tensor with `sparse_dim` sparse dims and the given dtypes; an error when a
    /// sparse dimension does not fit the index dtype (Julia's `check_Ti`).
    pub fn empty_with(
        shape: [usize; D],
        sparse_dim: usize,
        index_dtype: DType,
        value_dtype: DType,
        device: &Device,
    ) -> Result<Self> {
        if sparse_dim == 0 || sparse_dim > D {
            return Err(invalid("empty", format!("sparse_dim {sparse_dim} must be in 1..={D}")));
        }
        check_numel(&shape)?;
        check_shape(&shape[..sparse_dim], index_dtype)?;
        let item = numel(&shape[sparse_dim..]);
        Ok(Self {
            layout: Layout::Coo,
            shape,
            batch_dim: 0,
            sparse_dim,
            dense_dim: D - sparse_dim,
            blocksize: None,
            indices: Indices::Coo(Tensor::zeros([sparse_dim, 0], (device, index_dtype))),
            values: Tensor::zeros([0, item], (device, value_dtype)),
            coalesced: true,
            trust: Trust::Checked,
        })
    }
}

/// Constructors from plain Rust data, so a user need not build index tensors by hand: the
/// indices arrive as `i64` (torch's default index dtype, kept as int64) and the values as any of
/// burn's float element types (`f32`, `f64`, `f16`, `bf16`: the tensor takes that dtype). The
/// checks are the checked constructors' own.
impl<const D: usize> SparseTensor<D> {
    /// A COO tensor from one `[i64; D]` coordinate per entry and its value (every dim sparse):
    /// the plain-data form of [`SparseTensor::coo`]. Uncoalesced as given (duplicates are
    /// summed by `coalesce`, as torch's).
    ///
    /// ```
    /// # use sparsegrad_backend::SparseTensor;
    /// let device = burn::tensor::Device::flex();
    /// let s = SparseTensor::coo_from_vecs(vec![[0, 2], [1, 0]], vec![3.0f32, 4.0], [2, 3], &device).unwrap();
    /// assert_eq!(s.to_dense().into_data().try_to_vec::<f32>().unwrap(), [0.0, 0.0, 3.0, 4.0, 0.0, 0.0]);
    /// ```
    pub fn coo_from_vecs<E: burn::tensor::Element>(
        indices: impl AsRef<[[i64; D]]>,
        values: Vec<E>,
        shape: [usize; D],
        device: &Device,
    ) -> Result<Self> {
        let entries = indices.as_ref();
        let nse = entries.len();
        if values.len() != nse {
            return Err(SparseError::ShapeMismatch {
                component: "values",
                expected: vec![nse],
                actual: vec![values.len()],
            });
        }
        // `[sparse_dim, nse]`: dimension-major, as torch stores them.
        let mut flat = crate::alloc::try_vec(D.saturating_mul(nse), "coo_from_vecs")?;
        for d in 0..D {
            flat.extend(entries.iter().map(|e| e[d]));
        }
        let indices = Tensor::<2, Int>::from_data(TensorData::new(flat, [D, nse]), (device, DType::I64));
        Self::coo(indices, float_values(values, device)?, shape)
    }

    /// A compressed tensor (`Layout::Csr` or `Layout::Csc`) from its compressed indices, plain
    /// indices and values as vectors: the plain-data form of [`SparseTensor::compressed`] for a
    /// matrix (no batch, no dense dims).
    pub(crate) fn compressed_from_vecs<E: burn::tensor::Element>(
        compressed: Vec<i64>,
        plain: Vec<i64>,
        values: Vec<E>,
        shape: [usize; D],
        layout: Layout,
        device: &Device,
    ) -> Result<Self> {
        let int = |v: Vec<i64>| {
            let n = v.len();
            Tensor::<1, Int>::from_data(TensorData::new(v, [n]), (device, DType::I64))
        };
        Self::compressed(int(compressed), int(plain), float_values(values, device)?, shape, layout)
    }
}

impl SparseTensor<2> {
    /// A CSR matrix from `crow_indices`, `col_indices` and `values` as vectors: the plain-data
    /// form of [`SparseTensor::csr`], with its checks.
    ///
    /// ```
    /// # use sparsegrad_backend::SparseTensor;
    /// let device = burn::tensor::Device::flex();
    /// let s = SparseTensor::csr_from_vecs(vec![0, 1, 2], vec![2, 0], vec![3.0f64, 4.0], [2, 3], &device).unwrap();
    /// assert_eq!(s.to_dense().into_data().try_to_vec::<f64>().unwrap(), [0.0, 0.0, 3.0, 4.0, 0.0, 0.0]);
    /// ```
    pub fn csr_from_vecs<E: burn::tensor::Element>(
        crow: Vec<i64>,
        col: Vec<i64>,
        values: Vec<E>,
        shape: [usize; 2],
        device: &Device,
    ) -> Result<Self> {
        Self::compressed_from_vecs(crow, col, values, shape, Layout::Csr, device)
    }

    /// A CSC matrix from `ccol_indices`, `row_indices` and `values` as vectors: the plain-data
    /// form of [`SparseTensor::csc`].
    pub fn csc_from_vecs<E: burn::tensor::Element>(
        ccol: Vec<i64>,
        row: Vec<i64>,
        values: Vec<E>,
        shape: [usize; 2],
        device: &Device,
    ) -> Result<Self> {
        Self::compressed_from_vecs(ccol, row, values, shape, Layout::Csc, device)
    }
}

/// A float tensor of `values` in their own element's dtype; integer or boolean elements are an
/// error (values are floats, and a silent conversion would change them).
fn float_values<E: burn::tensor::Element>(values: Vec<E>, device: &Device) -> Result<Tensor<1>> {
    let n = values.len();
    let data = TensorData::new(values, [n]);
    let dtype = data.dtype();
    if !dtype.is_float() {
        return Err(SparseError::UnsupportedDtype { component: "values", dtype: format!("{dtype:?}") });
    }
    Ok(Tensor::<1>::from_data(data, (device, dtype)))
}
