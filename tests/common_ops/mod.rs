//! Shared helpers of the op tests (`elementwise`, `unary`, `reduce`, `spdiags`): tensors from host
//! data, the same matrix in every layout (uncoalesced COO with duplicates included), NaN-aware
//! comparison with a dense reference, and gradcheck of a function of sparse values.
#![allow(dead_code)]

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use sparsegrad::gradcheck::{gradcheck, GradInput, GradcheckOptions};
use sparsegrad::prelude::*;

pub fn dev() -> Device {
    Device::flex()
}

pub fn ad() -> Device {
    Device::flex().autodiff()
}

/// A float tensor of `shape` holding `data`, in `dtype`, on `device`.
pub fn dense_on<const D: usize>(data: &[f64], shape: [usize; D], dtype: DType, device: &Device) -> Tensor<D> {
    Tensor::from_data(TensorData::new(data.to_vec(), shape).convert_dtype(dtype), (device, dtype))
}

/// [`dense_on`] on the plain Flex device.
pub fn dense<const D: usize>(data: &[f64], shape: [usize; D], dtype: DType) -> Tensor<D> {
    dense_on(data, shape, dtype, &dev())
}

pub fn int_on<const D: usize>(data: &[i64], shape: [usize; D], device: &Device) -> Tensor<D, Int> {
    Tensor::from_data(TensorData::new(data.to_vec(), shape), (device, DType::I64))
}

pub fn floats<const D: usize>(t: Tensor<D>) -> Vec<f64> {
    t.into_data().iter::<f64>().collect()
}

pub fn ints<const D: usize>(t: Tensor<D, Int>) -> Vec<i64> {
    t.into_data().iter::<i64>().collect()
}

/// Element-wise `|a - e| <= tol * (1 + |e|)`, NaN matching NaN and infinities matching exactly.
pub fn assert_close(actual: &[f64], expected: &[f64], tol: f64, what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: length\n{actual:?}\n{expected:?}");
    for (k, (&a, &e)) in actual.iter().zip(expected).enumerate() {
        let ok = if e.is_nan() || a.is_nan() {
            e.is_nan() && a.is_nan()
        } else if e.is_infinite() || a.is_infinite() {
            a == e
        } else {
            (a - e).abs() <= tol * (1.0 + e.abs())
        };
        assert!(ok, "{what}: element {k}: {a} != {e}\nactual   {actual:?}\nexpected {expected:?}");
    }
}

/// Tolerance for a dtype: f32 results are compared at f32 precision.
pub fn tol(dtype: DType) -> f64 {
    if dtype == DType::F32 { 1e-5 } else { 1e-12 }
}

/// A splitmix stream: the data of a case follows from its seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `lo..hi`.
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
}

/// `n` values, each non-zero with probability `density`, drawn from `±[lo, hi)`.
pub fn sparse_data(n: usize, density: f64, lo: f64, hi: f64, rng: &mut Rng) -> Vec<f64> {
    (0..n)
        .map(|_| {
            if rng.unit() >= density {
                return 0.0;
            }
            let v = rng.range(lo, hi);
            if rng.next() & 1 == 0 { v } else { -v }
        })
        .collect()
}

/// The COO tensor `s` stored uncoalesced: each entry split into two duplicates holding 3/4 and
/// 1/4 of its value (or sub-tensor), all 3/4 parts first in reverse entry order, then the 1/4
/// parts in order: unsorted, with every index repeated. `V` is the rank of `s.values_shape()`.
pub fn uncoalesced<const D: usize, const V: usize>(s: &SparseTensor<D>) -> SparseTensor<D> {
    let s = s.to_sparse_coo();
    let (sd, n) = (s.sparse_dim(), s.nnz());
    let idx = ints(s.indices_raw().unwrap());
    let vals = floats(s.values_flat());
    let item = vals.len().checked_div(n).unwrap_or(0);
    let order: Vec<(usize, f64)> = (0..n).rev().map(|j| (j, 0.75)).chain((0..n).map(|j| (j, 0.25))).collect();
    let mut new_idx = vec![0i64; sd * 2 * n];
    let mut new_vals = Vec::with_capacity(2 * n * item);
    for (k, &(j, w)) in order.iter().enumerate() {
        for d in 0..sd {
            new_idx[d * 2 * n + k] = idx[d * n + j];
        }
        new_vals.extend(vals[j * item..(j + 1) * item].iter().map(|v| v * w));
    }
    let mut vshape = s.values_shape();
    vshape[0] = 2 * n;
    let device = s.device();
    let values = Tensor::<V>::from_data(TensorData::new(new_vals, vshape).convert_dtype(s.dtype()), (&device, s.dtype()));
    let u = SparseTensor::coo(int_on(&new_idx, [sd, 2 * n], &device), values, s.shape()).unwrap();
    assert!(n < 1 || !u.is_coalesced());
    u
}

/// A 2-D matrix (even sizes) in every layout: COO, uncoalesced COO, CSR, CSC, CSR with int32
/// indices, BSR and BSC with 2 x 2 blocks (explicit zeros inside blocks).
pub fn layouts_2d(dense: &Tensor<2>) -> Vec<(String, SparseTensor<2>)> {
    let coo = dense.clone().to_sparse().unwrap();
    let i32_csr = SparseSpec { index_dtype: DType::I32, ..SparseSpec::new(Layout::Csr) };
    vec![
        ("coo".into(), coo.clone()),
        ("uncoalesced coo".into(), uncoalesced::<2, 1>(&coo)),
        ("csr".into(), dense.clone().to_sparse_csr().unwrap()),
        ("csc".into(), dense.clone().to_sparse_csc().unwrap()),
        ("csr int32".into(), dense.clone().to_sparse_with(i32_csr).unwrap()),
        ("bsr".into(), dense.clone().to_sparse_bsr([2, 2]).unwrap()),
        ("bsc".into(), dense.clone().to_sparse_bsc([2, 2]).unwrap()),
    ]
}

/// A 3-D tensor `[rows, cols, k]` (even rows and cols) with one dense dim, hybrid in every
/// layout that takes dense dims: COO, uncoalesced COO, CSR, CSC, BSR with 2 x 2 blocks.
pub fn layouts_hybrid(dense: &Tensor<3>) -> Vec<(String, SparseTensor<3>)> {
    let spec = |layout, blocksize| SparseSpec { dense_dim: 1, blocksize, ..SparseSpec::new(layout) };
    let coo = dense.clone().to_sparse_with(spec(Layout::Coo, None)).unwrap();
    vec![
        ("hybrid coo".into(), coo.clone()),
        ("hybrid uncoalesced coo".into(), uncoalesced::<3, 2>(&coo)),
        ("hybrid csr".into(), dense.clone().to_sparse_with(spec(Layout::Csr, None)).unwrap()),
        ("hybrid csc".into(), dense.clone().to_sparse_with(spec(Layout::Csc, None)).unwrap()),
        ("hybrid bsr".into(), dense.clone().to_sparse_with(spec(Layout::Bsr, Some([2, 2]))).unwrap()),
    ]
}

pub fn flat<const D: usize>(t: Tensor<D>) -> Tensor<1> {
    let n = t.shape().num_elements();
    t.reshape([n])
}

/// `s` with its flat values replaced by the gradcheck leaf `v` (reshaped to the stored shape).
pub fn rebuild<const D: usize>(s: &SparseTensor<D>, v: &Tensor<1>) -> SparseTensor<D> {
    s.with_values(v.clone().reshape(s.values_flat().dims()))
}

/// gradcheck of `x -> f(x)` over the stored values of `s` (a template on the autodiff device).
pub fn check_sparse_grad<const D: usize, const E: usize>(s: &SparseTensor<D>, name: &str, options: GradcheckOptions, f: impl Fn(SparseTensor<D>) -> Tensor<E>) {
    let input = GradInput::sparse(name, s);
    let n = input.values.len();
    let report = gradcheck(|v| flat(f(rebuild(s, &v[0]))), &[input], options).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(report.checked, n, "{name}: every stored value is checked");
}

/// `s` moved to the autodiff device with f64 values (a gradcheck template).
pub fn on_ad<const D: usize>(dense_data: &[f64], shape: [usize; D], to: impl Fn(Tensor<D>) -> SparseTensor<D>) -> SparseTensor<D> {
    to(dense_on(dense_data, shape, DType::F64, &ad()))
}
