//! Semi-structured (2:4) sparsity: [`SemiStructuredTensor`], a 2-D matrix whose rows keep two
//! of every four consecutive elements, stored as the kept values (`[rows, cols / 2]`) and
//! 2 bits of metadata per kept value that say where it sits in its group.
//!
//! The metadata follows torch's layout for 16-bit types: one `i16` word per 16 columns, one
//! nibble per group of four from the low bits up, the nibble's low 2 bits the first kept
//! position and its high 2 bits the second (so `[0, 0, 1, 1]` is `0b1110` and a row of it is
//! `0xEEEE`, torch's `-4370`). Every dtype uses it: f32 (and f64) keep torch's 1:2 rule, one
//! element per pair, which is a 2:4 group whose first slot is in `0..2` and second in `2..4`.
//!
//! Compression reads the non-zero pattern on the host, writes the metadata, and gathers the kept
//! values with burn's `gather`, so a tensor built from a tracked dense tensor carries gradients
//! to it; `to_dense` scatters them back the same way. The products live in `semi` (one trait per
//! primitive: the kernels, the forwards and the backward rules) and `sparsegrad-autodiff`'s
//! torch-named ops on top.

use crate::host::{with_floats, with_ints, IntSlice};
use crate::memo::PatternMemo;
use crate::util::int_tensor;
use crate::{Result, SparseError};
use burn::tensor::kind::Basic;
use burn::tensor::IndexingUpdateOp;
use burn::tensor::{DType, Device, Float, Int, Tensor, TensorData};
pub use sparsegrad_kernels::semi::{compress_mask, kept_columns, slot, validate_metadata, SemiPattern, WORD_COLUMNS};
use sparsegrad_kernels::semi::{SemiLayout, SemiRef};
use sparsegrad_kernels::semi_int::{semi_mm_i8, I32_SAFE_COLS};

/// torch's pattern for a dtype: 2:4 for 16- and 8-bit types, 1:2 for 32- and 64-bit floats.
pub fn semi_pattern_for(dtype: DType) -> Result<SemiPattern> {
    match dtype {
        DType::F16 | DType::BF16 | DType::I8 => Ok(SemiPattern::TwoFour),
        DType::F32 | DType::F64 => Ok(SemiPattern::OneTwo),
        other => {
            Err(SparseError::UnsupportedDtype { component: "semi-structured values", dtype: format!("{other:?}") })
        }
    }
}

/// Tensor kinds a semi-structured tensor holds: floats (f16, bf16, f32, f64) or i8 integers.
pub trait SemiKind: Basic + Sized {
    /// Whether each element (row-major) is non-zero, read on the host.
    fn nonzero(t: &Tensor<2, Self>) -> Vec<bool>;
    /// The elements widened to f64, for printing.
    fn host_f64(t: &Tensor<2, Self>) -> Vec<f64>;
    /// Whether the dtype can be stored.
    fn supported(dtype: DType) -> bool;
    /// Whether elements print as integers.
    const INTEGER: bool;
}

impl SemiKind for Float {
    fn nonzero(t: &Tensor<2, Self>) -> Vec<bool> {
        with_floats(t, |s| s.to_f64()).into_iter().map(|v| v != 0.0).collect()
    }
    fn host_f64(t: &Tensor<2, Self>) -> Vec<f64> {
        with_floats(t, |s| s.to_f64())
    }
    fn supported(dtype: DType) -> bool {
        matches!(dtype, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }
    const INTEGER: bool = false;
}

impl SemiKind for Int {
    fn nonzero(t: &Tensor<2, Self>) -> Vec<bool> {
        with_ints(t, |s| s.to_i64()).into_iter().map(|v| v != 0).collect()
    }
    fn host_f64(t: &Tensor<2, Self>) -> Vec<f64> {
        with_ints(t, |s| s.to_i64()).into_iter().map(|v| v as f64).collect()
    }
    fn supported(dtype: DType) -> bool {
        dtype == DType::I8
    }
    const INTEGER: bool = true;
}

/// A 2-D tensor with 2:4 (or 1:2) semi-structured sparsity along its rows.
///
/// `values` and `metadata` describe the stored matrix `[rows, cols]`; `t()` flips a flag, so the
/// logical shape of a transposed tensor is `[cols, rows]` (torch's `transposed=True`).
#[derive(Debug, Clone)]
pub struct SemiStructuredTensor<K: SemiKind = Float> {
    pub(crate) values: Tensor<2, K>,
    pub(crate) metadata: Tensor<2, Int>,
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) pattern: SemiPattern,
    pub(crate) transposed: bool,
}

/// `dense` compressed with torch's pattern for its dtype (2:4 for f16, bf16, i8; 1:2 for f32
/// and f64). Errors name the first row and group that holds too many non-zeros, a row length
/// that is not a whole number of groups, or an unsupported dtype.
pub fn to_sparse_semi_structured<K: SemiKind>(dense: Tensor<2, K>) -> Result<SemiStructuredTensor<K>> {
    let pattern = semi_pattern_for(dense.dtype())?;
    SemiStructuredTensor::from_dense(dense, pattern)
}

fn shape_error(operation: &'static str, message: String) -> SparseError {
    SparseError::InvalidArgument { operation, message }
}

impl<K: SemiKind> SemiStructuredTensor<K> {
    /// `dense` compressed with `pattern` (any float dtype, or i8). Every group of four
    /// consecutive elements of a row must hold at most 2 non-zeros (1:2: at most one per pair).
    pub fn from_dense(dense: Tensor<2, K>, pattern: SemiPattern) -> Result<Self> {
        let op = "to_sparse_semi_structured";
        crate::util::check_backend(&dense.device())?;
        let dtype = dense.dtype();
        if !K::supported(dtype) {
            return Err(SparseError::UnsupportedDtype {
                component: "semi-structured values",
                dtype: format!("{dtype:?}"),
            });
        }
        let [rows, cols] = dense.dims();
        if !cols.is_multiple_of(4) {
            return Err(shape_error(op, format!("shape [{rows}, {cols}]: the row length must be a multiple of 4 (whole groups of 4 consecutive elements)")));
        }
        let nz = K::nonzero(&dense);
        let (meta, kept) = compress_mask(&nz, rows, cols, pattern)?;
        let device = dense.device();
        let values = if rows * cols == 0 {
            Tensor::<2, K>::zeros([rows, cols / 2], (&device, dtype))
        } else {
            dense.gather(1, int_tensor(kept, [rows, cols / 2], DType::I64, &device))
        };
        Ok(Self {
            values,
            metadata: metadata_tensor(meta, rows, cols, &device),
            rows,
            cols,
            pattern,
            transposed: false,
        })
    }

    /// A tensor from its parts: kept `values` `[rows, cols / 2]` and `metadata` words
    /// `[rows, ceil(cols / 16)]` (any integer dtype holding the 16-bit words), checked.
    pub fn from_parts(
        values: Tensor<2, K>,
        metadata: Tensor<2, Int>,
        cols: usize,
        pattern: SemiPattern,
    ) -> Result<Self> {
        let op = "SemiStructuredTensor::from_parts";
        let [rows, half] = values.dims();
        if !cols.is_multiple_of(4) {
            return Err(shape_error(op, format!("the row length {cols} must be a multiple of 4")));
        }
        if half * 2 != cols {
            return Err(SparseError::ShapeMismatch {
                component: "values",
                expected: vec![rows, cols / 2],
                actual: vec![rows, half],
            });
        }
        let words = cols.div_ceil(WORD_COLUMNS);
        if metadata.dims() != [rows, words] {
            return Err(SparseError::ShapeMismatch {
                component: "metadata",
                expected: vec![rows, words],
                actual: metadata.dims().to_vec(),
            });
        }
        if !K::supported(values.dtype()) {
            return Err(SparseError::UnsupportedDtype { component: "values", dtype: format!("{:?}", values.dtype()) });
        }
        let wide = with_ints(&metadata, |s| s.to_i64());
        // A word held in a wider dtype is its i16 or its u16 reading; anything else is no
        // 16-bit word, and truncating it would change the pattern silently.
        if let Some(p) = wide.iter().position(|v| !(i16::MIN as i64..=u16::MAX as i64).contains(v)) {
            return Err(sparsegrad_kernels::error::invalid(
                op,
                format!(
                    "metadata word at [{}, {}] is {}: not a 16-bit word (-32768..=65535)",
                    p / words.max(1),
                    p % words.max(1),
                    wide[p]
                ),
            ));
        }
        let meta: Vec<i16> = wide.into_iter().map(|v| v as i16).collect();
        validate_metadata(&meta, rows, cols, pattern)?;
        let metadata = metadata_tensor(meta, rows, cols, &values.device());
        Ok(Self { values, metadata, rows, cols, pattern, transposed: false })
    }

    /// [`SemiStructuredTensor::from_parts`] for a weight rebuilt from the same parts at every
    /// step (a layer's parameters): metadata in the device's type ([`metadata_dtype`]) is
    /// checked the first time and again only when the tensor, the row length or the pattern
    /// changes (see [`PatternMemo`]); other integer dtypes are converted and checked at every
    /// call, as by `from_parts`.
    pub fn from_parts_with_memo(
        values: Tensor<2, K>,
        metadata: Tensor<2, Int>,
        cols: usize,
        pattern: SemiPattern,
        memo: &PatternMemo<2>,
    ) -> Result<Self> {
        if metadata.dtype() != metadata_dtype(&metadata.device()) {
            return Self::from_parts(values, metadata, cols, pattern);
        }
        let key = [cols, pattern as usize];
        let mut checked = None;
        let _transposed = memo.check_once(&[&metadata], &key, || {
            checked = Some(Self::from_parts(values.clone(), metadata.clone(), cols, pattern)?);
            Ok(())
        })?;
        // Checked now, or the same i16 words checked before: only the shapes remain to check,
        // and `from_parts_unchecked` panics on those, so they are checked here first.
        if let Some(t) = checked {
            return Ok(t);
        }
        let [rows, half] = values.dims();
        if half * 2 != cols || metadata.dims() != [rows, cols.div_ceil(WORD_COLUMNS)] || !K::supported(values.dtype()) {
            return Self::from_parts(values, metadata, cols, pattern);
        }
        Ok(Self { values, metadata, rows, cols, pattern, transposed: false })
    }

    /// [`SemiStructuredTensor::from_parts`] without the metadata check, for parts that come
    /// from a checked tensor: the words are taken as given. The shapes are still checked (a
    /// panic names the mismatch), and the contents cannot break memory safety: every nibble
    /// decodes to a column inside its own group of four, so invalid words (slots out of order,
    /// a 1:2 slot in the wrong half) give the matrix they literally describe, with a repeated
    /// slot summing its two values.
    pub fn from_parts_unchecked(
        values: Tensor<2, K>,
        metadata: Tensor<2, Int>,
        cols: usize,
        pattern: SemiPattern,
    ) -> Self {
        let [rows, half] = values.dims();
        let words = cols.div_ceil(WORD_COLUMNS);
        assert!(
            cols.is_multiple_of(4) && half * 2 == cols && metadata.dims() == [rows, words],
            "SemiStructuredTensor::from_parts_unchecked: values {:?} and metadata {:?} do not describe a [{rows}, {cols}] matrix (values [rows, cols / 2], metadata [rows, ceil(cols / 16)], cols a multiple of 4)",
            values.dims(),
            metadata.dims()
        );
        Self { values, metadata, rows, cols, pattern, transposed: false }
    }

    /// The logical shape (`[cols, rows]` of the stored matrix once transposed).
    pub fn shape(&self) -> [usize; 2] {
        if self.transposed {
            [self.cols, self.rows]
        } else {
            [self.rows, self.cols]
        }
    }

    /// The shape of the stored (compressed) matrix, whatever `transposed` says.
    pub fn stored_shape(&self) -> [usize; 2] {
        [self.rows, self.cols]
    }

    /// Whether the tensor is the transpose of its stored matrix (torch's `transposed`).
    pub fn is_transposed(&self) -> bool {
        self.transposed
    }

    /// The pattern the rows follow.
    pub fn pattern(&self) -> SemiPattern {
        self.pattern
    }

    /// The kept values `[rows, cols / 2]` of the stored matrix, in row order.
    pub fn values(&self) -> Tensor<2, K> {
        self.values.clone()
    }

    /// The metadata words `[rows, ceil(cols / 16)]`, `i16` as torch's ([`metadata_dtype`]: `i32`
    /// on a device without 16-bit integers).
    pub fn metadata(&self) -> Tensor<2, Int> {
        self.metadata.clone()
    }

    /// The values' dtype.
    pub fn dtype(&self) -> DType {
        self.values.dtype()
    }

    /// The device.
    pub fn device(&self) -> Device {
        self.values.device()
    }

    /// The transpose (a flag: no data moves), as torch's `t()`.
    pub fn t(&self) -> Self {
        Self { transposed: !self.transposed, ..self.clone() }
    }

    /// The same pattern with other kept values (`[rows, cols / 2]`): how a layer puts its
    /// trainable values back into the tensor.
    pub fn with_values(&self, values: Tensor<2, K>) -> Self {
        assert_eq!(values.dims(), [self.rows, self.cols / 2], "with_values: values shape");
        Self { values, ..self.clone() }
    }

    /// torch's compression ratio, compressed size over dense size: `1/2 + 1/bits` (2 bits of
    /// metadata per kept element): 56.25 % for 16-bit types, 62.5 % for i8, 53.125 % for f32.
    pub fn compression_ratio(&self) -> f64 {
        0.5 + 1.0 / (self.dtype().size() * 8) as f64
    }

    /// Bytes held: kept values and metadata words.
    pub fn memory_bytes(&self) -> usize {
        self.rows * self.cols / 2 * self.dtype().size() + self.rows * self.cols.div_ceil(WORD_COLUMNS) * 2
    }

    /// The kept columns `[rows, cols / 2]` of the stored matrix (for gathers and scatters).
    pub fn kept_columns(&self) -> Tensor<2, Int> {
        let meta: Vec<i16> = with_ints(&self.metadata, |s| s.to_i64()).into_iter().map(|v| v as i16).collect();
        let cols = kept_columns(&meta, self.rows, self.cols);
        int_tensor(cols, [self.rows, self.cols / 2], DType::I64, &self.device())
    }

    /// The dense matrix (logical shape; differentiable w.r.t. the values).
    pub fn to_dense(&self) -> Tensor<2, K> {
        let device = self.device();
        let zeros = Tensor::<2, K>::zeros([self.rows, self.cols], (&device, self.dtype()));
        let dense = if self.rows * self.cols == 0 {
            zeros
        } else {
            zeros.scatter(1, self.kept_columns(), self.values.clone(), IndexingUpdateOp::Add)
        };
        if self.transposed {
            dense.transpose()
        } else {
            dense
        }
    }
}

// ------------------------------------------------------------------------------------------
// i8 products with i32 sums.

impl SemiStructuredTensor<Int> {
    /// `self · x` for an i8 `x [cols, n]` (the logical shape's columns), summed in i32: the
    /// `[rows, n]` int32 result of torch's int8 semi-structured product. Checked, exact: rows
    /// wider than [`I32_SAFE_COLS`] (whose sums could wrap) are refused.
    pub fn matmul_i32(&self, x: Tensor<2, Int>) -> Result<Tensor<2, Int>> {
        self.product_i32("matmul_i32", x, false)
    }

    /// `x · selfᵀ` for an i8 `x [m, cols]` (a linear layer), summed in i32: `[m, rows]` int32.
    pub fn linear_i32(&self, x: Tensor<2, Int>) -> Result<Tensor<2, Int>> {
        self.product_i32("linear_i32", x, true)
    }

    fn product_i32(&self, op: &'static str, x: Tensor<2, Int>, linear: bool) -> Result<Tensor<2, Int>> {
        if self.transposed {
            return Err(sparsegrad_kernels::error::invalid(
                op,
                "the operand is a transposed view; the i8 products take the stored matrix (call .t() again)",
            ));
        }
        if x.dtype() != DType::I8 {
            return Err(SparseError::UnsupportedDtype {
                component: "x (an i8 tensor)",
                dtype: format!("{:?}", x.dtype()),
            });
        }
        let (rows, cols) = (self.rows, self.cols);
        if cols > I32_SAFE_COLS {
            return Err(sparsegrad_kernels::error::invalid(
                op,
                format!("rows of {cols} columns: their i32 sums could overflow (at most {I32_SAFE_COLS})"),
            ));
        }
        let [xr, xc] = x.dims();
        let (n, fits) = if linear { (xr, xc == cols) } else { (xc, xr == cols) };
        if !fits {
            return Err(sparsegrad_kernels::error::invalid(
                op,
                format!(
                    "[{rows}, {cols}] and x {:?} do not fit ({})",
                    [xr, xc],
                    if linear { "x [m, cols]" } else { "x [cols, n]" }
                ),
            ));
        }
        let device = x.device();
        let meta: Vec<i16> = with_ints(&self.metadata, |s| s.to_i64()).into_iter().map(|v| v as i16).collect();
        let out = with_ints(&self.values, |v| {
            with_ints(&x, |b| match (v, b) {
                (IntSlice::I8(v), IntSlice::I8(b)) => {
                    let layout = SemiLayout::new(&meta, rows, cols)?;
                    Ok(semi_mm_i8(SemiRef::new(layout, v)?, b, n, linear))
                }
                _ => Err(SparseError::UnsupportedDtype { component: "values and x", dtype: "not i8".into() }),
            })
        })?;
        let shape = if linear { [n, rows] } else { [rows, n] };
        Ok(Tensor::from_data(TensorData::new(out, shape), (&device, DType::I32)))
    }
}

/// The integer type the metadata words of a tensor on `device` are stored in: `i16` where the
/// device stores it, else `i32` (wgpu: WGSL has no 16-bit integers), holding the words'
/// sign-extended `i16` readings (the device kernels read their low 16 bits).
pub fn metadata_dtype(device: &Device) -> DType {
    if device.supports_dtype(DType::I16) {
        DType::I16
    } else {
        DType::I32
    }
}

/// The metadata tensor of a tensor `[rows, cols]`, in [`metadata_dtype`].
fn metadata_tensor(meta: Vec<i16>, rows: usize, cols: usize, device: &Device) -> Tensor<2, Int> {
    let shape = [rows, cols.div_ceil(WORD_COLUMNS)];
    match metadata_dtype(device) {
        DType::I16 => Tensor::from_data(TensorData::new(meta, shape), (device, DType::I16)),
        dtype => {
            let words: Vec<i32> = meta.into_iter().map(i32::from).collect();
            Tensor::from_data(TensorData::new(words, shape), (device, dtype))
        }
    }
}
