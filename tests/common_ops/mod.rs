//! Shared helpers of the integration tests, kept in one place so that every test draws its
//! data from the same generator and builds tensors the same way: the seeded [`Rng`], tensors
//! from host data and back, the same matrix in every layout (uncoalesced COO with duplicates
//! included), comparisons with a dense reference, gradcheck of a function of sparse values, the
//! random operands of the product tests, and the two-layer model the `nn` layer tests train.
//!
//! Each test target compiles this module on its own and uses only part of it.
#![allow(dead_code)]

use burn::module::{Module, ModuleDisplay};
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use sparsegrad::gradcheck::{GradInput, GradcheckError, GradcheckOptions, GradcheckReport};
use sparsegrad::nn::{SemiStructuredLinear, SparseLinear};
use sparsegrad::prelude::*;

/// Serialises the tests that draw from burn's process-wide random generator (layer
/// initialisation, `device.seed`): in one test binary they run on parallel threads, and a draw of
/// one between another's `seed` and its own draws would change the other's data.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// The device the op tests run on: Flex, or the one `SPARSEGRAD_TEST_DEVICE` names (`wgpu` or
/// `cuda`, with the feature of that name: burn's Cube backend, on Mesa's lavapipe where wgpu finds
/// no GPU). A Cube device is probed once per process (`check_device`): where its runtime or GPU is
/// missing, the test binary ends with that reason and exit status 2, not with a panic per test.
pub fn dev() -> Device {
    let device = match std::env::var("SPARSEGRAD_TEST_DEVICE").as_deref() {
        Err(_) | Ok("") | Ok("flex") => Device::flex(),
        #[cfg(feature = "wgpu")]
        Ok("wgpu") => Device::wgpu(burn::tensor::DeviceKind::DefaultDevice),
        #[cfg(feature = "cuda")]
        Ok("cuda") => Device::cuda(0),
        Ok(other) => {
            panic!("SPARSEGRAD_TEST_DEVICE={other}: not a device of this build (flex, or wgpu/cuda with its feature)")
        }
    };
    if device == Device::flex() {
        return device;
    }
    static PROBED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    PROBED.get_or_init(|| {
        if let Err(e) = sparsegrad::backend::util::check_device(&device) {
            // Straight to the process's stderr: the test harness captures `eprintln!` of a test,
            // and the exit below would drop it unseen.
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SPARSEGRAD_TEST_DEVICE: {e}");
            std::process::exit(2);
        }
    });
    device
}

/// Whether the tests run on burn's wgpu device (`SPARSEGRAD_TEST_DEVICE=wgpu`; lavapipe in CI,
/// which runs every launch as a CPU shader).
pub fn on_wgpu() -> bool {
    matches!(std::env::var("SPARSEGRAD_TEST_DEVICE").as_deref(), Ok("wgpu"))
}

/// The float dtypes of `all` that the test device stores: wgpu has no bf16.
pub fn stored_dtypes<const N: usize>(all: [DType; N]) -> Vec<DType> {
    let bf16 = !on_wgpu();
    all.into_iter().filter(|&d| bf16 || d != DType::BF16).collect()
}

/// The float dtypes of `all` in which the test device's transcendental functions (burn's `exp`,
/// `pow`, `asin`, `tanh`, ...) are exact: WGSL has them for f32 alone, so wgpu drops f64.
pub fn transcendental_dtypes<const N: usize>(all: [DType; N]) -> Vec<DType> {
    let f64_math = !on_wgpu();
    all.into_iter().filter(|&d| f64_math || d != DType::F64).collect()
}

/// The pairs `(i, j)` of `n` operand templates a two-operand test crosses: all `n²` on the
/// host; on wgpu, each template on each side beside itself and its neighbour (`2n` pairs):
/// every layout still meets the device's kernels as either operand. (Crossing all 25 pairs of
/// five layouts in the three gradchecks of `elementwise::gradcheck_sparse_sparse_ops` took 500 s
/// of the 1,700 s of the ops suite there.)
pub fn template_pairs(n: usize) -> Vec<(usize, usize)> {
    if on_wgpu() {
        (0..n).flat_map(|i| [(i, i), (i, (i + 1) % n)]).filter(|&(i, j)| i == j || n > 1).collect()
    } else {
        (0..n).flat_map(|i| (0..n).map(move |j| (i, j))).collect()
    }
}

/// Whether a test runs case `case` of a nested loop on the test device: every case on the host;
/// on wgpu, one in `stride`. A test passes the sum of its loop indices as `case`, so the cases
/// kept shift with each index: every value of one index still meets several of the others (the
/// longest product tests crossed every layout with every dtype and shape there).
pub fn device_keeps(case: usize, stride: usize) -> bool {
    !on_wgpu() || case.is_multiple_of(stride)
}

/// [`dev`] with autodiff.
pub fn ad() -> Device {
    dev().autodiff()
}

/// `sparsegrad::gradcheck` on the test device.
pub fn gradcheck<F: Fn(&[Tensor<1>]) -> Tensor<1>>(
    f: F,
    inputs: &[GradInput],
    options: GradcheckOptions,
) -> Result<GradcheckReport, GradcheckError> {
    sparsegrad::gradcheck::gradcheck_on(&dev(), f, inputs, options)
}

/// A float tensor of `shape` holding `data`, in `dtype`, on `device`.
pub fn dense_on<const D: usize>(data: &[f64], shape: [usize; D], dtype: DType, device: &Device) -> Tensor<D> {
    Tensor::from_data(TensorData::new(data.to_vec(), shape).convert_dtype(dtype), (device, dtype))
}

/// [`dense_on`] on the plain Flex device.
pub fn dense<const D: usize>(data: &[f64], shape: [usize; D], dtype: DType) -> Tensor<D> {
    dense_on(data, shape, dtype, &dev())
}

/// An f64 tensor on the autodiff device: the leaves and templates of the gradient tests.
pub fn f64s<const D: usize>(data: &[f64], shape: [usize; D]) -> Tensor<D> {
    Tensor::from_data(TensorData::new(data.to_vec(), shape), (&ad(), DType::F64))
}

/// An index tensor of `dtype` (I32 or I64) holding `data`, on `device`.
pub fn index_on<const D: usize>(data: &[i64], shape: [usize; D], dtype: DType, device: &Device) -> Tensor<D, Int> {
    let data = match dtype {
        DType::I32 => TensorData::new(data.iter().map(|&v| v as i32).collect::<Vec<_>>(), shape),
        _ => TensorData::new(data.to_vec(), shape),
    };
    Tensor::from_data(data, (device, dtype))
}

pub fn int_on<const D: usize>(data: &[i64], shape: [usize; D], device: &Device) -> Tensor<D, Int> {
    index_on(data, shape, DType::I64, device)
}

pub fn floats<const D: usize>(t: Tensor<D>) -> Vec<f64> {
    t.into_data().iter::<f64>().collect()
}

pub fn f32s<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().iter::<f32>().collect()
}

pub fn ints<const D: usize>(t: Tensor<D, Int>) -> Vec<i64> {
    t.into_data().iter::<i64>().collect()
}

pub fn numel(s: &[usize]) -> usize {
    s.iter().product()
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
    if dtype == DType::F32 {
        1e-5
    } else {
        1e-12
    }
}

/// Element-wise `|a - e| <= tol * (1 + |e|)` for results that must be finite: unlike
/// [`assert_close`], a NaN or an infinity on either side fails.
pub fn assert_near(actual: &[f64], expected: &[f64], tol: f64, what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: length");
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert!((a - e).abs() <= tol * (1.0 + e.abs()), "{what}: element {i}: {a} != {e}");
    }
}

/// Element-wise `|a - e| <= tol * max(|e|, 1)` in f32, the precision of the `nn` layers.
pub fn assert_close_f32(actual: &[f32], expected: &[f32], tol: f32) {
    assert_eq!(actual.len(), expected.len());
    for (i, (x, y)) in actual.iter().zip(expected).enumerate() {
        assert!((x - y).abs() <= tol * y.abs().max(1.0), "element {i}: {x} vs {y}");
    }
}

/// A splitmix stream: the data of a case follows from its seed. Tests depend on the exact
/// sequence each method draws, so changing one changes the data of every seeded case.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `lo..hi`.
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// A value in ±[0.5, 2): never zero, so the pattern of a matrix is the set of its non-zeros,
    /// and far enough from zero that a gradcheck perturbation never changes the pattern.
    pub fn value(&mut self) -> f64 {
        let v = 0.5 + 1.5 * self.unit();
        if self.next() & 1 == 0 {
            v
        } else {
            -v
        }
    }

    pub fn values(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.value()).collect()
    }

    /// A non-zero small integer in ±[1, 5]: sums of them stay exact in f32.
    pub fn nonzero(&mut self) -> f32 {
        let v = (1 + self.below(5)) as f32;
        if self.next() & 1 == 0 {
            v
        } else {
            -v
        }
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
            if rng.next() & 1 == 0 {
                v
            } else {
                -v
            }
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
    let values =
        Tensor::<V>::from_data(TensorData::new(new_vals, vshape).convert_dtype(s.dtype()), (&device, s.dtype()));
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
pub fn check_sparse_grad<const D: usize, const E: usize>(
    s: &SparseTensor<D>,
    name: &str,
    options: GradcheckOptions,
    f: impl Fn(SparseTensor<D>) -> Tensor<E>,
) {
    let input = GradInput::sparse(name, s);
    let n = input.values.len();
    let report = gradcheck(|v| flat(f(rebuild(s, &v[0]))), &[input], options).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(report.checked, n, "{name}: every stored value is checked");
}

/// `s` moved to the autodiff device with f64 values (a gradcheck template).
pub fn on_ad<const D: usize>(
    dense_data: &[f64],
    shape: [usize; D],
    to: impl Fn(Tensor<D>) -> SparseTensor<D>,
) -> SparseTensor<D> {
    to(dense_on(dense_data, shape, DType::F64, &ad()))
}

/// Runs gradcheck and asserts that every input element was checked.
pub fn gradcheck_all(name: &str, f: impl Fn(&[Tensor<1>]) -> Tensor<1>, inputs: &[GradInput]) {
    let report = gradcheck(f, inputs, GradcheckOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(report.checked, inputs.iter().map(|i| i.values.len()).sum::<usize>(), "{name}");
}

// ---------------------------------------------------------------------------------------------
// Operands of the product, softmax and shape tests.

/// How a test stores a sparse operand.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    Coo,
    /// Uncoalesced COO. How the duplicates split each value is the builder's choice: see
    /// [`split_entries`] and [`halves_reversed`].
    CooDup,
    Csr,
    Csc,
    Bsr([usize; 2]),
    Bsc([usize; 2]),
}

impl Kind {
    /// The layout and block size a dense tensor converts to (plain COO for `CooDup`, which its
    /// builder then uncoalesces).
    pub fn layout(self) -> (Layout, Option<[usize; 2]>) {
        match self {
            Kind::Coo | Kind::CooDup => (Layout::Coo, None),
            Kind::Csr => (Layout::Csr, None),
            Kind::Csc => (Layout::Csc, None),
            Kind::Bsr(b) => (Layout::Bsr, Some(b)),
            Kind::Bsc(b) => (Layout::Bsc, Some(b)),
        }
    }
}

/// The COO tensor `s` with every entry stored twice holding half its value (or sub-tensor), the
/// second copies in reverse entry order. `V` is the rank of `s.values_shape()`.
pub fn halves_reversed<const D: usize, const V: usize>(s: &SparseTensor<D>) -> SparseTensor<D> {
    let (idx, n, device) = (s.indices_raw().unwrap(), s.nnz(), s.device());
    let halves = s.values_raw::<V>().unwrap() * 0.5;
    let rev = int_on(&(0..n as i64).rev().collect::<Vec<_>>(), [n], &device);
    let indices = Tensor::cat(vec![idx.clone(), idx.select(1, rev.clone())], 1);
    let values = Tensor::cat(vec![halves.clone(), halves.select(0, rev)], 0);
    let u = SparseTensor::coo(indices, values, s.shape()).unwrap();
    assert!(n < 2 || !u.is_coalesced());
    u
}

/// The non-zeros of the dense host tensor `data` of `shape` as uncoalesced COO: each entry
/// split into `extra(rng)` random parts plus the remainder (so the duplicates sum to it), all
/// shuffled. Returns the `[D, n]` indices and the `n` values.
pub fn split_entries<const D: usize>(
    data: &[f64],
    shape: [usize; D],
    extra: impl Fn(&mut Rng) -> usize,
    rng: &mut Rng,
) -> (Vec<i64>, Vec<f64>) {
    let (mut tuples, mut vals) = (vec![], vec![]);
    for (lin, &v) in data.iter().enumerate() {
        if v == 0.0 {
            continue;
        }
        let mut t = vec![0i64; D];
        let mut rest = lin;
        for d in (0..D).rev() {
            t[d] = (rest % shape[d]) as i64;
            rest /= shape[d];
        }
        let mut left = v;
        for _ in 0..extra(rng) {
            let part = rng.value();
            left -= part;
            tuples.push(t.clone());
            vals.push(part);
        }
        tuples.push(t);
        vals.push(left);
    }
    for i in (1..tuples.len()).rev() {
        let j = rng.below(i + 1);
        tuples.swap(i, j);
        vals.swap(i, j);
    }
    let idx = (0..D).flat_map(|d| tuples.iter().map(move |t| t[d])).collect();
    (idx, vals)
}

/// A `rows x cols` matrix with about `density` of its entries non-zero, rows `empty_rows` and
/// columns `empty_cols` all zero.
pub fn matrix(
    rows: usize,
    cols: usize,
    density: f64,
    empty_rows: &[usize],
    empty_cols: &[usize],
    rng: &mut Rng,
) -> Vec<f64> {
    let mut a = vec![0.0; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            if rng.unit() < density && !empty_rows.contains(&r) && !empty_cols.contains(&c) {
                a[r * cols + c] = rng.value();
            }
        }
    }
    a
}

/// `[batch, rows, cols]` with `per_batch` full `block`s in every batch entry (equal counts, as
/// batched compressed tensors need), none in block row `skip.1` of batch entry `skip.0`.
pub fn batched(
    batch: usize,
    rows: usize,
    cols: usize,
    block: [usize; 2],
    per_batch: usize,
    skip: (usize, usize),
    rng: &mut Rng,
) -> Vec<f64> {
    let (gr, gc) = (rows / block[0], cols / block[1]);
    let mut data = vec![0.0; batch * rows * cols];
    for b in 0..batch {
        let mut cells: Vec<usize> = (0..gr * gc).filter(|&g| !(b == skip.0 && g / gc == skip.1)).collect();
        for i in 0..per_batch {
            let j = i + rng.below(cells.len() - i);
            cells.swap(i, j);
        }
        for &g in &cells[..per_batch] {
            for i in 0..block[0] {
                for j in 0..block[1] {
                    data[(b * rows + g / gc * block[0] + i) * cols + g % gc * block[1] + j] = rng.value();
                }
            }
        }
    }
    data
}

// ---------------------------------------------------------------------------------------------
// The `nn` layer tests: one model and one training loop for both sparse linear layers.

/// A deterministic `[rows, cols]` f32 input in [-1, 1].
pub fn input(rows: usize, cols: usize, device: &Device) -> Tensor<2> {
    let v: Vec<f32> = (0..rows * cols).map(|i| ((i * 7919) % 23) as f32 / 11.0 - 1.0).collect();
    Tensor::from_data(TensorData::new(v, [rows, cols]), device)
}

/// A layer that [`Net`] can stack (`ModuleDisplay`: the derived `Module` of `Net` prints it).
pub trait Layer: Module + ModuleDisplay {
    fn apply(&self, x: Tensor<2>) -> Tensor<2>;
}

impl Layer for SparseLinear {
    fn apply(&self, x: Tensor<2>) -> Tensor<2> {
        self.forward(x)
    }
}

impl Layer for SemiStructuredLinear {
    fn apply(&self, x: Tensor<2>) -> Tensor<2> {
        self.forward(x)
    }
}

#[derive(Module, Debug)]
pub struct Net<L: Module> {
    pub l0: L,
    pub l1: L,
}

impl<L: Layer> Net<L> {
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.l1.apply(self.l0.apply(x).tanh())
    }
}

/// 60 Adam steps (lr 0.01) on the mean squared error of `model` on `x` against `target`: the
/// trained model and the loss before and after.
pub fn train<L: Layer>(mut model: Net<L>, x: &Tensor<2>, target: &Tensor<2>) -> (Net<L>, f32, f32) {
    let mut optim = AdamConfig::new().init();
    let mse = |m: &Net<L>| (m.forward(x.clone()) - target.clone()).powi_scalar(2).mean();
    let first = mse(&model).into_scalar::<f32>();
    for _ in 0..60 {
        let loss = mse(&model);
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(0.01, model, grads);
    }
    let last = mse(&model).into_scalar::<f32>();
    (model, first, last)
}
