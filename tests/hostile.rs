//! Hostile inputs: the probes of the soundness review (safe calls an attacker or a careless user
//! would make, each of which once corrupted the heap, read uninitialised memory, crashed, aborted
//! or returned a wrong number), one test per class of hole they showed (unchecked patterns,
//! records, size overflow, index narrowing, allocation, loaders, NaN semantics), an 8-thread
//! stress of the products and softmax compared bit for bit with a single-threaded run, a fuzz of
//! the constructors, conversions and products, and the pickle reader's probes and fuzz
//! (`hostile/pickle.rs`).
//!
//! A probe that could take the process down runs in a child process (this test binary, asked to
//! run one ignored test): a crash is then a failing test, not a dead suite. Allocation probes
//! (`alloc_*`) run there under `ulimit -v`, so an allocation the library cannot have is refused
//! the same way on any machine, whatever its memory. CI also runs every probe in-process under
//! valgrind (`.ci/run`: `-- --ignored --skip alloc_`), which reports any invalid read or write.

mod common_ops;

use burn::module::{Param, ParamId};
use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use common_ops::{ad, dev, floats, ints, Rng};
use sparsegrad::kernels::pattern::CsrPattern;
use sparsegrad::kernels::{sddmm::sddmm, spmm::spmm};
use sparsegrad::nn::{MnistSplit, Planetoid, SparseLinearConfig};
use sparsegrad::prelude::*;
use sparsegrad::sparse as sp;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::Command;

// ---------------------------------------------------------------------------------------------
// The harness.

/// Runs the ignored test `test` of this binary in a child process, under an address-space limit
/// of `limit_kb` when given, and fails with the child's output unless it passed.
fn in_child(test: &str, limit_kb: Option<u64>) {
    let exe = std::env::current_exe().expect("the test binary");
    let mut cmd = match limit_kb {
        Some(kb) => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(format!("ulimit -v {kb} && exec \"$0\" \"$@\"")).arg(&exe);
            c
        }
        None => Command::new(&exe),
    };
    cmd.args(["--ignored", "--exact", test, "--nocapture", "--test-threads", "1"]);
    let out = cmd.output().expect("spawning the probe");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("1 passed"), "probe {test} failed ({}):\n{text}", out.status);
}

/// A probe: an ignored test `$name::probe` with the body, and the test `$name::run` that runs it
/// in a child process (under `ulimit -v $kb` when `limit = $kb` is given).
macro_rules! probe {
    ($(#[$doc:meta])* $name:ident $(, limit = $kb:expr)? => $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[test]
            #[ignore = "run in a child process by the test beside it"]
            fn probe() $body

            $(#[$doc])*
            #[test]
            fn run() {
                // The probe's name as the harness lists it: its module path without the crate.
                let name = module_path!().split_once("::").map_or(module_path!(), |(_, path)| path);
                super::in_child(&format!("{name}::probe"), probe!(@limit $($kb)?));
            }
        }
    };
    (@limit) => { None };
    (@limit $kb:expr) => { Some($kb) };
}

/// Address space of the allocation probes: room for the test harness and the library, far
/// less than the gigabytes the hostile shapes ask for.
const LIMIT_KB: u64 = 3 << 20;

fn ix<const D: usize>(v: &[i64], shape: [usize; D]) -> Tensor<D, Int> {
    Tensor::from_data(TensorData::new(v.to_vec(), shape), (&dev(), DType::I64))
}

fn ix_on<const D: usize>(v: &[i64], shape: [usize; D], device: &Device) -> Tensor<D, Int> {
    Tensor::from_data(TensorData::new(v.to_vec(), shape), (device, DType::I64))
}

fn ix_as<const D: usize>(v: &[i64], shape: [usize; D], dtype: DType) -> Tensor<D, Int> {
    common_ops::index_on(v, shape, dtype, &dev())
}

fn ones<const D: usize>(shape: [usize; D]) -> Tensor<D> {
    Tensor::ones(shape, &dev())
}

fn f64s<const D: usize>(v: &[f64], shape: [usize; D], device: &Device) -> Tensor<D> {
    Tensor::from_data(TensorData::new(v.to_vec(), shape), (device, DType::F64))
}

/// The message of the panic `f` raises, or `None` when it returns.
fn panic_message(f: impl FnOnce()) -> Option<String> {
    let payload = catch_unwind(AssertUnwindSafe(f)).err()?;
    Some(
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default(),
    )
}

/// The dense product `a [m, k] · b [k, n]` of host matrices.
fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for p in 0..k {
            for j in 0..n {
                c[i * n + j] += a[i * k + p] * b[p * n + j];
            }
        }
    }
    c
}

// ---------------------------------------------------------------------------------------------
// Finding 1: unchecked patterns reaching the kernels (heap overflow, segfault).

probe!(
    /// A non-monotone `crow` from `csr_unchecked` is an error at the product (it wrote past the
    /// transpose's buffer); so is a zigzag one, a `csc_unchecked` one, and the backward w.r.t. X.
    unchecked_zigzag_crow => {
    let a = SparseTensor::<2>::csr_unchecked(ix(&[0, 3, 1, 4], [4]), ix(&[0, 0, 0, 0], [4]), ones([4]), [3, 1]);
    let decreasing = SparseError::CompressedDecreasing { component: "crow_indices", batch: 0, position: 2, previous: 3, value: 1 };
    assert_eq!(sp::try_mm_dense_sparse(ones([1, 3]), &a).unwrap_err(), decreasing);
    assert_eq!(sp::try_mm(&a, ones([1, 2])).unwrap_err(), decreasing);
    assert_eq!(a.check_invariants().unwrap_err(), decreasing);
    let message = panic_message(|| drop(sp::mm_dense_sparse(ones([1, 3]), &a))).expect("mm_dense_sparse panics");
    assert!(message.contains("non-decreasing"), "{message}");
    // A zigzag crow over many rows.
    let crow: Vec<i64> = (0..=200).map(|r| if r % 2 == 1 { 999 } else { r / 2 }).collect();
    let z = SparseTensor::<2>::csr_unchecked(ix(&crow, [201]), ix(&[0; 100], [100]), ones([100]), [200, 4]);
    assert!(matches!(sp::try_mm(&z, ones([4, 3])), Err(SparseError::CompressedDecreasing { .. })));
    let c = SparseTensor::<2>::csc_unchecked(ix(&[0, 3, 1, 4], [4]), ix(&[0, 0, 0, 0], [4]), ones([4]), [1, 3]);
    assert!(matches!(sp::try_mm(&c, ones([3, 2])), Err(SparseError::CompressedDecreasing { component: "ccol_indices", .. })));
    // The gradient w.r.t. X: the forward refuses before any graph is recorded.
    let on_ad = SparseTensor::<2>::csr_unchecked(
        ix_on(&[0i64, 3, 1, 4], [4], &ad()),
        ix_on(&[0i64; 4], [4], &ad()),
        Tensor::<1>::ones([4], &ad()).require_grad(),
        [3, 1],
    );
    let x = Tensor::<2>::ones([1, 5], &ad()).require_grad();
    assert_eq!(sp::try_mm(&on_ad, x).unwrap_err(), decreasing);
});

probe!(
    /// `crow` ending before the entries it claims: the products once returned the entries past
    /// its end uninitialised (stale heap data). Every path now refuses it; the host kernels take
    /// only a checked `CsrPattern`, which refuses it too.
    unchecked_short_crow => {
    let a = SparseTensor::<2>::csr_unchecked(ix(&[0, 1], [2]), ix(&[0; 1000], [1000]), ones([1000]), [1, 1]);
    let short = SparseError::CompressedEnd { component: "crow_indices", batch: 0, expected: 1000, value: 1 };
    assert_eq!(sp::try_sampled_addmm(&a, ones([1, 4]), ones([4, 1]), 1.0, 1.0).unwrap_err(), short);
    let on_ad = SparseTensor::<2>::csr_unchecked(
        ix_on(&[0i64, 1], [2], &ad()),
        ix_on(&[0i64; 1000], [1000], &ad()),
        Tensor::<1>::ones([1000], &ad()).require_grad(),
        [1, 1],
    );
    assert_eq!(sp::try_mm(&on_ad, Tensor::<2>::ones([1, 2], &ad())).unwrap_err(), short);
    assert!(matches!(CsrPattern::new(&[0i64, 1], &[0i64; 1000], 1), Err(SparseError::CompressedEnd { expected: 1000, value: 1, .. })));
    assert!(matches!(CsrPattern::new(&[0i64, 3, 1, 4], &[0i64; 4], 1), Err(SparseError::CompressedDecreasing { .. })));
    assert!(matches!(CsrPattern::new(&[0i64, 2], &[0i64, 7], 3), Err(SparseError::IndexOutOfBounds { position: 1, value: 7, .. })));
    // A checked pattern with operands of the wrong size is a panic naming them, not a read
    // outside them.
    let p = CsrPattern::new(&[0i64, 1, 2], &[0i64, 1], 2).unwrap();
    let message = panic_message(|| drop(spmm(p, &[1.0f32, 2.0], &[1.0; 3], 2))).expect("short X panics");
    assert!(message.contains("spmm: X is [k, n] = [2, 2]"), "{message}");
    let message = panic_message(|| drop(sddmm(p, &[1.0f32; 4], &[1.0; 3], 2))).expect("short b panics");
    assert!(message.contains("sddmm: b is [k, d]"), "{message}");
});

/// Every kernel-backed op refuses an invalid unchecked tensor with the violation, in every
/// layout, whatever the violation (start, decrease, end, bounds, order, duplicates).
#[test]
fn unchecked_tensors_are_checked_before_any_kernel() {
    let cases: [(&[i64], &[i64]); 6] = [
        (&[1, 1, 2], &[0, 1]),
        (&[0, 2, 1], &[0]),
        (&[0, 1, 1], &[0, 1]),
        (&[0, 1, 2], &[0, 5]),
        (&[0, 2, 2], &[1, 0]),
        (&[0, 2, 2], &[1, 1]),
    ];
    for (crow, col) in cases {
        let nnz = col.len();
        for layout in [Layout::Csr, Layout::Csc] {
            let s = SparseTensor::<2>::compressed_unchecked(ix(crow, [3]), ix(col, [nnz]), ones([nnz]), [2, 2], layout);
            let e = s.check_invariants().unwrap_err();
            let what = format!("{layout:?} crow {crow:?} col {col:?}");
            assert_eq!(sp::try_mm(&s, ones([2, 3])).unwrap_err(), e, "{what}");
            for reduce in [sp::Reduce::Sum, sp::Reduce::Mean, sp::Reduce::Amax, sp::Reduce::Amin] {
                assert_eq!(sp::try_mm_reduce(&s, ones([2, 3]), reduce).unwrap_err(), e, "{what}: {reduce:?}");
            }
            assert_eq!(sp::try_mm_dense_sparse(ones([3, 2]), &s).unwrap_err(), e, "{what}");
            assert_eq!(sp::try_softmax(&s, 1).unwrap_err(), e, "{what}");
            assert_eq!(s.try_to_dense().unwrap_err(), e, "{what}");
            assert_eq!(s.try_to_sparse_coo().unwrap_err(), e, "{what}");
            assert_eq!(s.try_coalesce().unwrap_err(), e, "{what}");
            assert_eq!(sp::spgemm(&s, &s).unwrap_err(), e, "{what}");
            // As a mask of a product of valid operands, and under the value filters.
            let ok = SparseTensor::<2>::empty([2, 2], &dev());
            let masked = sp::spgemm_with(&ok, &ok, sp::SpgemmOptions { mask: Some(&s), drop_zeros: false });
            assert_eq!(masked.unwrap_err(), e, "{what}: mask");
            assert_eq!(s.filter(|v| v > 0.0).unwrap_err(), e, "{what}: filter");
            assert_eq!(s.eliminate_zeros().unwrap_err(), e, "{what}: eliminate_zeros");
            assert_eq!(s.try_add(&s).unwrap_err(), e, "{what}");
            assert_eq!(s.try_index_select(0, ix(&[1, 0], [2])).unwrap_err(), e, "{what}");
            assert_eq!(sp::try_cat(&[s.clone(), s.clone()], 0).unwrap_err(), e, "{what}");
        }
    }
    let coo = SparseTensor::<2>::coo_unchecked(ix(&[0, 5, -1, 1], [2, 2]), ones([2]), [2, 3]);
    let e = coo.check_invariants().unwrap_err();
    assert!(matches!(e, SparseError::IndexOutOfBounds { dim: 1, position: 0, value: -1, .. }), "{e}");
    assert_eq!(sp::try_mm(&coo, ones([3, 1])).unwrap_err(), e);
    assert_eq!(coo.to_sparse_csr().unwrap_err(), e);
    assert_eq!(coo.try_reshape([6]).unwrap_err(), e);
    assert_eq!(coo.try_to_dense().unwrap_err(), e);
}

// ---------------------------------------------------------------------------------------------
// Finding 2: records are untrusted.

probe!(
    /// A `SparseLinear` whose `crow` was replaced by a non-monotone one (as a tampered record
    /// loaded inside a bigger module leaves it): forward and backward refuse it by name; the
    /// record loaders themselves refuse it (tests/sparse_linear.rs).
    tampered_sparse_linear => {
    let mut layer = SparseLinearConfig::new(6, 4).with_density(0.5).with_seed(Some(3)).init(&ad());
    let nnz = layer.nnz() as i64;
    let crow = vec![0, nnz, 1, nnz - 1, nnz];
    // The layer's indices are int32; the tampered ones keep the dtype.
    layer.crow = Param::initialized(ParamId::new(), common_ops::index_on(&crow, [5], DType::I32, &ad()));
    let e = layer.try_weight().unwrap_err();
    assert!(matches!(e, SparseError::CompressedDecreasing { position: 2, .. }), "{e}");
    let x = Tensor::<2>::ones([2, 6], &ad()).require_grad();
    let message = panic_message(|| {
        let y = layer.forward(x.clone());
        let _ = y.sum().backward();
    })
    .expect("forward refuses the pattern");
    assert!(message.contains("non-decreasing"), "{message}");
});

// ---------------------------------------------------------------------------------------------
// Finding 4: sizes that overflow.

probe!(
    /// A valid CSR `[4, 0]` times `zeros([0, 2^62])`: the `[4, 2^62]` result's element count
    /// wrapped to 0 and the kernel wrote through it. Now an `Allocation` error (size overflow),
    /// as is the dense @ sparse product of `zeros([2^62, 0])` with a `[0, 4]` CSR.
    overflowing_products => {
    let a = SparseTensor::<2>::csr(ix(&[0; 5], [5]), ix(&[], [0]), ones([0]), [4, 0]).unwrap();
    let x = Tensor::<2>::zeros([0, 1usize << 62], &dev());
    let e = sp::try_mm(&a, x).unwrap_err();
    assert!(matches!(e, SparseError::Allocation { bytes: usize::MAX, what: "mm" }), "{e}");
    let b = SparseTensor::<2>::csr(ix(&[0], [1]), ix(&[], [0]), ones([0]), [0, 4]).unwrap();
    let e = sp::try_mm_dense_sparse(Tensor::<2>::zeros([1usize << 62, 0], &dev()), &b).unwrap_err();
    assert!(matches!(e, SparseError::Allocation { bytes: usize::MAX, what: "mm_dense_sparse" }), "{e}");
    // A block-diagonal batch that cannot be described, and shapes whose counts overflow.
    assert!(matches!(SparseTensor::<2>::try_empty([1usize << 40, 1 << 40], &dev()), Err(SparseError::ElementCountOverflow { .. })));
    let huge = SparseTensor::<1>::empty([usize::MAX >> 2], &dev());
    assert!(sp::try_cat(&[huge.clone(), huge.clone(), huge.clone(), huge.clone(), huge], 0).is_err());
});

// ---------------------------------------------------------------------------------------------
// Finding 5: narrowing of derived indices (wrong answers from checked input).

/// A batched CSR `[batch, 1, cols]` with one entry per batch entry at `at[b]`, in `dtype`.
fn one_per_batch(at: &[i64], cols: usize, dtype: DType) -> SparseTensor<3> {
    let batch = at.len();
    let crow: Vec<i64> = (0..batch).flat_map(|_| [0, 1]).collect();
    let values: Vec<f64> = (0..batch).map(|b| b as f64 + 1.0).collect();
    SparseTensor::<3>::csr(
        ix_as(&crow, [batch, 2], dtype),
        ix_as(at, [batch, 1], dtype),
        f64s(&values, [batch, 1], &dev()),
        [batch, 1, cols],
    )
    .unwrap()
}

/// `sampled_addmm` of a batch against the dense definition: `beta * input + alpha * (mat1 @
/// mat2)` at the input's entries.
fn check_batched_sampled(input: &SparseTensor<3>, k: usize, seed: u64) {
    let [batch, m, n] = input.shape();
    let mut rng = Rng(seed);
    let (m1, m2): (Vec<f64>, Vec<f64>) = (
        (0..batch * m * k).map(|_| rng.below(7) as f64 - 3.0).collect(),
        (0..batch * k * n).map(|_| rng.below(7) as f64 - 3.0).collect(),
    );
    let out =
        sp::try_sampled_addmm(input, f64s(&m1, [batch, m, k], &dev()), f64s(&m2, [batch, k, n], &dev()), 0.5, 2.0)
            .unwrap();
    assert_eq!(out.index_dtype(), input.index_dtype(), "the result keeps the input's pattern");
    let dense_in = floats(input.to_dense());
    let got = floats(out.to_dense());
    for b in 0..batch {
        let prod = matmul(&m1[b * m * k..(b + 1) * m * k], &m2[b * k * n..(b + 1) * k * n], m, k, n);
        for (e, &p) in prod.iter().enumerate() {
            let at = b * m * n + e;
            let want = if dense_in[at] != 0.0 { 0.5 * dense_in[at] + 2.0 * p } else { 0.0 };
            assert_eq!(got[at], want, "{:?} batch {b} element {e}", input.index_dtype());
        }
    }
}

/// A batched `sampled_addmm` on int8 `[3, 1, 100]` (columns 5, 7, 60) gave -378 for 370: the
/// block-diagonal columns (`+ 2 * 100`) were narrowed to int8. Now widened; int16 `[3, 1,
/// 30000]` too, and a dense int8 `[3, 10, 12]` batch (which panicked) converts and multiplies.
#[test]
fn derived_indices_are_widened_not_narrowed() {
    check_batched_sampled(&one_per_batch(&[5, 7, 60], 100, DType::I8), 4, 1);
    check_batched_sampled(&one_per_batch(&[5, 29_999, 12_345], 30_000, DType::I16), 3, 2);
    let mut rng = Rng(9);
    let data: Vec<f64> = (0..360).map(|_| if rng.below(3) == 0 { rng.below(5) as f64 + 1.0 } else { 0.0 }).collect();
    let dense = f64s(&data, [3, 10, 12], &dev());
    // Equal entries per batch entry: each batch entry is the first one shifted.
    let dense =
        Tensor::cat(vec![dense.clone().narrow(0, 0, 1), dense.clone().narrow(0, 0, 1), dense.narrow(0, 0, 1)], 0);
    let spec = SparseSpec { index_dtype: DType::I8, ..SparseSpec::new(Layout::Csr) };
    let s = dense.to_sparse_with(spec).unwrap();
    assert_eq!(s.index_dtype(), DType::I8);
    check_batched_sampled(&s, 5, 3);
    // bmm on int8 COO: the block-diagonal matrix [300, 300] needs int16.
    let coo = one_per_batch(&[5, 7, 60], 100, DType::I8).to_sparse_coo();
    let x: Vec<f64> = (0..3 * 100 * 2).map(|i| (i % 11) as f64 - 5.0).collect();
    let got = floats(sp::try_bmm(&coo, f64s(&x, [3, 100, 2], &dev())).unwrap());
    for (b, &c) in [5usize, 7, 60].iter().enumerate() {
        for j in 0..2 {
            assert_eq!(got[b * 2 + j], (b as f64 + 1.0) * x[b * 200 + c * 2 + j], "bmm batch {b}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Finding 6: panics where a `Result` was promised.

#[test]
fn try_forms_return_errors_not_panics() {
    let coo = one_per_batch(&[1, 2], 3, DType::I8).to_sparse_coo();
    assert!(sp::try_bmm(&coo, f64s(&[1.0; 12], [2, 3, 2], &dev())).is_ok());
    let e = SparseTensor::<2>::try_empty([1usize << 40, 1 << 40], &dev()).unwrap_err();
    assert!(matches!(e, SparseError::ElementCountOverflow { .. }));
    let message =
        panic_message(|| drop(SparseTensor::<2>::empty([1usize << 40, 1 << 40], &dev()))).expect("empty panics");
    assert!(message.contains("SparseTensor::empty") && message.contains("more elements than i64"), "{message}");
    let s = SparseTensor::<2>::empty([3, 4], &dev());
    let e = s.try_select::<1>(1, usize::MAX).unwrap_err().to_string();
    assert!(e.contains("18446744073709551615") && !e.contains("-1"), "{e}");
    assert!(sp::try_addmm(ones([3, 3]), &s, ones([4, 2]), 1.0, 1.0).is_err(), "addmm with a mismatched input");
    assert!(sp::try_mv(&s, ones([5])).is_err());
}

// ---------------------------------------------------------------------------------------------
// Finding 7: allocation failures abort the process (children under `ulimit -v`).

/// A COO `[1e9, 1e9]` with 3 entries.
fn huge_coo() -> SparseTensor<2> {
    let n = 1_000_000_000i64;
    SparseTensor::<2>::coo(
        ix(&[0, 5, n - 1, 3, n - 2, 7], [2, 3]),
        f64s(&[1.0, 2.0, 3.0], [3], &dev()),
        [n as usize, n as usize],
    )
    .unwrap()
}

probe!(
    /// Conversions of a 10^9 x 10^9 COO with 3 entries need 8 GB of row pointers: an
    /// `Allocation` error under the limit, never an abort. Index selection and softmax along the
    /// columns need memory in the entries only, and succeed; `to_dense` (4e18 bytes) is refused.
    alloc_huge_coo, limit = LIMIT_KB => {
    let s = huge_coo();
    assert!(matches!(s.to_sparse_csr(), Err(SparseError::Allocation { .. })), "to_sparse_csr");
    assert!(matches!(s.to_sparse_csc(), Err(SparseError::Allocation { .. })), "to_sparse_csc");
    assert!(matches!(sp::try_mm(&s, Tensor::<2>::zeros([1_000_000_000, 0], (&dev(), DType::F64))), Err(SparseError::Allocation { .. })), "mm");
    let picked = s.try_index_select(0, ix(&[999_999_999, 0, 3], [3])).unwrap();
    assert_eq!((picked.shape(), picked.nnz()), ([3, 1_000_000_000], 2));
    let soft = sp::try_softmax(&s, 1).unwrap();
    assert_eq!(floats(soft.values_flat()), vec![1.0, 1.0, 1.0]);
    let e = s.try_to_dense().unwrap_err();
    assert!(matches!(e, SparseError::Allocation { what: "to_dense", .. }), "{e}");
});

probe!(
    /// A `[1e9, 4]` dense result of a product: probed before the kernel allocates it.
    alloc_huge_dense_result, limit = LIMIT_KB => {
    let n = 1_000_000_000usize;
    let a = SparseTensor::<2>::csr(ix(&[0; 1], [1]), ix(&[], [0]), ones([0]), [0, n]).unwrap();
    let e = sp::try_mm_dense_sparse(Tensor::<2>::zeros([n, 0], &dev()), &a).unwrap_err();
    assert!(matches!(e, SparseError::Allocation { what: "mm_dense_sparse", .. }), "{e}");
});

probe!(
    /// A product over 10^12 columns, one entry in each operand: every thread's scratch spans
    /// the columns (9 TB), an `Allocation` error, never an abort, with or without a mask.
    alloc_spgemm_wide_columns, limit = LIMIT_KB => {
    let n = 1_000_000_000_000usize;
    let a = SparseTensor::<2>::csr(ix(&[0, 1], [2]), ix(&[0], [1]), ones([1]), [1, 1]).unwrap();
    let b = SparseTensor::<2>::csr(ix(&[0, 1], [2]), ix(&[n as i64 - 1], [1]), ones([1]), [1, n]).unwrap();
    let e = sp::spgemm(&a, &b).unwrap_err();
    assert!(matches!(e, SparseError::Allocation { .. }), "{e}");
    let e = sp::spgemm_with(&a, &b, sp::SpgemmOptions { mask: Some(&b), drop_zeros: false }).unwrap_err();
    assert!(matches!(e, SparseError::Allocation { .. }), "{e}");
});

probe!(
    /// `index_select` with 10^5 entries on one row and an index naming that row 10^5 times:
    /// 10^10 selected entries (hundreds of GB), counted before anything is sized by them, an
    /// `Allocation` error, never an abort.
    alloc_index_select_repeats, limit = LIMIT_KB => {
    let n = 100_000usize;
    let cols: Vec<i64> = (0..n as i64).collect();
    let rows = vec![0i64; n];
    let s = SparseTensor::<2>::coo(ix(&[rows, cols].concat(), [2, n]), ones([n]), [1, n]).unwrap();
    let e = s.try_index_select(0, ix(&vec![0; n], [n])).unwrap_err();
    assert!(matches!(e, SparseError::Allocation { .. }), "{e}");
});

probe!(
    /// A 10^6 x 10^6 layer at density 1e-9 drew a score per weight position (8e12 bytes): now
    /// its 1000 entries are drawn in memory proportional to them.
    alloc_sparse_layer, limit = LIMIT_KB => {
    let layer = SparseLinearConfig::new(1_000_000, 1_000_000).with_density(1e-9).with_seed(Some(1)).try_init(&dev()).unwrap();
    assert_eq!(layer.nnz(), 1000);
    assert!(layer.check().is_ok());
});

probe!(
    /// A graph of 10^12 nodes for `gcn_norm`: its row pointers cannot be had, an `Allocation`
    /// error; an edge past the nodes is an error naming it.
    alloc_huge_graph, limit = LIMIT_KB => {
    let e = sparsegrad::nn::gcn_norm(&[(0, 1)], 1_000_000_000_000, &dev()).unwrap_err();
    assert!(matches!(e, SparseError::Allocation { .. }), "{e}");
    let e = sparsegrad::nn::gcn_norm(&[(0, 1), (2, 7)], 4, &dev()).unwrap_err();
    assert_eq!(e, SparseError::IndexOutOfBounds { component: "edges", dim: 1, position: 1, value: 7, size: 4 });
});

// ---------------------------------------------------------------------------------------------
// Finding 8: loaders read untrusted files.

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sparsegrad-hostile-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

probe!(
    /// The karate loader panicked on a club file naming node 34 of 34 and on a `0 0 0` header;
    /// headers declaring 10^12 nodes or entries in a 100-byte file allocated 8e12 bytes; the
    /// MNIST reader inflated a whole stream before its header. All are errors naming the file.
    alloc_hostile_files, limit = LIMIT_KB => {
    let dir = temp_dir("files");
    let mtx = "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 2\n";
    let mut club = String::from("node\tclub\n0\tMr. Hi\n1\tOfficer\n2\tMr. Hi\n");
    std::fs::write(dir.join("karate_networkx.mtx"), mtx).unwrap();
    std::fs::write(dir.join("karate_networkx_club.tsv"), &club).unwrap();
    assert_eq!(Planetoid::karate(&dir).unwrap().nodes, 3);
    club.push_str("3\tOfficer\n");
    std::fs::write(dir.join("karate_networkx_club.tsv"), &club).unwrap();
    assert!(Planetoid::karate(&dir).is_err(), "a node past the graph");
    std::fs::write(dir.join("karate_networkx.mtx"), "%%MatrixMarket matrix coordinate pattern symmetric\n0 0 0\n").unwrap();
    assert!(Planetoid::karate(&dir).is_err(), "an empty graph");
    let huge = "%%MatrixMarket matrix coordinate pattern symmetric\n1000000000000 1000000000000 1000000000000\n1 1\n";
    std::fs::write(dir.join("karate_networkx.mtx"), huge).unwrap();
    assert!(Planetoid::karate(&dir).is_err(), "10^12 nodes in a tiny file");
    let e = sparsegrad::nn::planetoid::read_mtx(&dir.join("karate_networkx.mtx")).unwrap_err().to_string();
    assert!(e.contains("karate_networkx.mtx"), "{e}");
    // An IDX header announcing 10^9 images of 28 x 28 over a few bytes.
    let mut idx = vec![0u8, 0, 8, 3];
    for d in [1_000_000_000u32, 28, 28] {
        idx.extend(d.to_be_bytes());
    }
    idx.extend([0u8; 10]);
    std::fs::write(dir.join("bomb-images-idx3-ubyte"), &idx).unwrap();
    let e = MnistSplit::load(&dir, "bomb").unwrap_err().to_string();
    assert!(e.contains("truncated") && e.contains("bomb-images-idx3-ubyte"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
});

// The Planetoid raw files' pickles: probes and a fuzz of the reader (`hostile/pickle.rs`).
#[path = "hostile/pickle.rs"]
mod pickle;

// ---------------------------------------------------------------------------------------------
// Finding 9: silent wrong answers.

/// With `beta = 0`, `addmm` ignores its input (torch): NaN and infinities in it do not reach
/// the result.
#[test]
fn addmm_with_zero_beta_ignores_the_input() {
    let a =
        SparseTensor::<2>::csr(ix(&[0, 1, 2], [3]), ix(&[1, 0], [2]), f64s(&[2.0, 3.0], [2], &dev()), [2, 2]).unwrap();
    let input = f64s(&[f64::NAN, f64::INFINITY, f64::NEG_INFINITY, f64::NAN], [2, 2], &dev());
    let x = f64s(&[1.0, 2.0, 3.0, 4.0], [2, 2], &dev());
    assert_eq!(floats(sp::addmm(input.clone(), &a, x.clone(), 0.0, 0.5)), vec![3.0, 4.0, 1.5, 3.0]);
    let with_input = floats(sp::addmm(input, &a, x, 1.0, 0.5));
    assert!(with_input.iter().all(|v| !v.is_finite()), "beta = 1 adds the input: {with_input:?}");
}

/// `read_mtx` honours the banner: a `real symmetric` file keeps its values and expands to both
/// triangles (it loaded as half a pattern).
#[test]
fn matrix_market_banner_is_honoured() {
    let dir = temp_dir("mtx");
    let path = dir.join("sym.mtx");
    std::fs::write(&path, "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 1 2.5\n2 1 -1\n3 2 4e0\n")
        .unwrap();
    let m = sparsegrad::nn::planetoid::read_mtx(&path).unwrap();
    assert_eq!((m.entries.clone(), m.values.clone()), (vec![(0, 0), (1, 0), (2, 1)], vec![2.5, -1.0, 4.0]));
    let g = m.to_general().unwrap();
    let mut all: Vec<((usize, usize), f64)> = g.entries.into_iter().zip(g.values).collect();
    all.sort_by_key(|e| e.0);
    assert_eq!(all, vec![((0, 0), 2.5), ((0, 1), -1.0), ((1, 0), -1.0), ((1, 2), 4.0), ((2, 1), 4.0)]);
    std::fs::write(&path, "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n").unwrap();
    assert!(sparsegrad::nn::planetoid::read_mtx(&path).unwrap_err().to_string().contains("complex"));
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Stress: 8 threads on shared and distinct patterns, bit for bit.

/// Everything a training step computes on a pattern: mm forward, its gradients w.r.t. the
/// values and X, sampled_addmm, softmax, as host vectors.
fn step(a: &SparseTensor<2>, x: &[f64], k: usize, n: usize) -> Vec<Vec<f64>> {
    let device = ad();
    let values = Tensor::<1>::from_data(TensorData::new(floats(a.values_flat()), [a.nnz()]), (&device, DType::F64))
        .require_grad();
    let (c, p) = a.compressed_indices_flat().unwrap();
    let [m, _] = a.shape();
    let on_ad = SparseTensor::<2>::csr(
        ix_on(&ints(c), [m + 1], &device),
        ix_on(&ints(p), [a.nnz()], &device),
        values.clone(),
        [m, k],
    )
    .unwrap();
    let xt = Tensor::<2>::from_data(TensorData::new(x.to_vec(), [k, n]), (&device, DType::F64)).require_grad();
    let y = sp::mm(&on_ad, xt.clone());
    let grads = (y.clone() * y.clone()).sum().backward();
    let sampled = sp::sampled_addmm(&on_ad, y.clone().detach(), xt.clone().detach().transpose(), 0.0, 1.0);
    let soft = sp::softmax(&on_ad, 1);
    vec![
        floats(y),
        floats(values.grad(&grads).unwrap()),
        floats(xt.grad(&grads).unwrap()),
        floats(sampled.values_flat()),
        floats(soft.values_flat()),
    ]
}

fn random_csr(m: usize, k: usize, density: f64, seed: u64) -> SparseTensor<2> {
    let mut rng = Rng(seed);
    let data: Vec<f64> = (0..m * k).map(|_| if rng.unit() < density { rng.value() } else { 0.0 }).collect();
    f64s(&data, [m, k], &dev()).to_sparse_csr().unwrap()
}

#[test]
fn eight_threads_agree_bit_for_bit_with_one() {
    let (k, n) = (96, 64);
    let shared = random_csr(120, k, 0.1, 1);
    let distinct: Vec<SparseTensor<2>> =
        (0..4).map(|t| random_csr(80 + 10 * t, k, 0.05 + 0.05 * t as f64, 10 + t as u64)).collect();
    let mut rng = Rng(5);
    let x: Vec<f64> = (0..k * n).map(|_| rng.value()).collect();
    let patterns: Vec<SparseTensor<2>> =
        (0..8).map(|t| if t % 2 == 0 { shared.clone() } else { distinct[t / 2].clone() }).collect();
    let expected: Vec<Vec<Vec<f64>>> = patterns.iter().map(|a| step(a, &x, k, n)).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = patterns
            .iter()
            .map(|a| {
                let x = &x;
                scope.spawn(move || (0..3).map(|_| step(a, x, k, n)).collect::<Vec<_>>())
            })
            .collect();
        for (t, h) in handles.into_iter().enumerate() {
            for (round, got) in h.join().expect("a stress thread").into_iter().enumerate() {
                for (what, (g, e)) in
                    ["mm", "d values", "d x", "sampled", "softmax"].iter().zip(got.iter().zip(&expected[t]))
                {
                    let bits = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(g), bits(e), "thread {t} round {round}: {what}");
                }
            }
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Fuzz: tensors from arbitrary component arrays (invalid ones too), through every public
// constructor, converted and multiplied. The only outcomes allowed: `Ok` with the dense
// reference's answer, or `Err`. `SPARSEGRAD_FUZZ_CASES` sets the number of cases (10^4 by
// default).

/// One random tensor's components, as a constructor receives them.
#[derive(Debug, Clone)]
struct Parts {
    layout: Layout,
    checked: bool,
    dtype: DType,
    shape: [usize; 2],
    /// `[1, 1]` unless blocked.
    block: [usize; 2],
    /// COO: `[2, nse]`; compressed: the pointers.
    first: Vec<i64>,
    /// Compressed: the plain indices; COO: unused.
    second: Vec<i64>,
    /// `nse * br * bc` values.
    values: Vec<f64>,
}

impl Parts {
    fn nse(&self) -> usize {
        self.values.len() / (self.block[0] * self.block[1])
    }

    /// A valid tensor's components, then (half the time) one component damaged.
    fn draw(rng: &mut Rng) -> Parts {
        let layouts = [Layout::Coo, Layout::Csr, Layout::Csc, Layout::Bsr, Layout::Bsc];
        let layout = layouts[rng.below(5)];
        let dtype = [DType::I8, DType::I16, DType::I32, DType::I64][rng.below(4)];
        let block = if layout.is_blocked() { [1 + rng.below(2), 1 + rng.below(2)] } else { [1, 1] };
        let (mb, nb) = (rng.below(5), rng.below(5));
        let shape = [mb * block[0], nb * block[1]];
        // The stored blocks: a random subset of the block grid, in the layout's order.
        let (n_comp, n_plain) = if layout.compresses_rows() || layout == Layout::Coo { (mb, nb) } else { (nb, mb) };
        let mut first = vec![0i64];
        let mut second = Vec::new();
        for _ in 0..n_comp {
            for p in 0..n_plain {
                if rng.unit() < 0.4 {
                    second.push(p as i64);
                }
            }
            first.push(second.len() as i64);
        }
        let nse = second.len();
        let item = block[0] * block[1];
        let values: Vec<f64> = (0..nse * item).map(|_| rng.nonzero() as f64).collect();
        let mut parts = Parts { layout, checked: rng.below(2) == 0, dtype, shape, block, first, second, values };
        if layout == Layout::Coo {
            // Rows then columns, shuffled, with a duplicate now and then.
            let rows: Vec<i64> = (0..mb)
                .flat_map(|r| std::iter::repeat_n(r as i64, (parts.first[r + 1] - parts.first[r]) as usize))
                .collect();
            let mut entries: Vec<(i64, i64, f64)> =
                rows.iter().zip(&parts.second).zip(&parts.values).map(|((&r, &c), &v)| (r, c, v)).collect();
            if !entries.is_empty() && rng.below(3) == 0 {
                let e = entries[rng.below(entries.len())];
                entries.push((e.0, e.1, rng.nonzero() as f64));
            }
            for i in (1..entries.len()).rev() {
                entries.swap(i, rng.below(i + 1));
            }
            parts.first = entries.iter().map(|e| e.0).chain(entries.iter().map(|e| e.1)).collect();
            parts.second = Vec::new();
            parts.values = entries.iter().map(|e| e.2).collect();
        }
        if rng.below(2) == 0 {
            parts.damage(rng);
        }
        parts
    }

    /// One index changed to a value in `-2..=size + 2`, or two swapped.
    fn damage(&mut self, rng: &mut Rng) {
        let bound = self.shape[0].max(self.shape[1]).max(self.nse()) as i64 + 2;
        let target = if self.layout == Layout::Coo || self.second.is_empty() || rng.below(2) == 0 {
            &mut self.first
        } else {
            &mut self.second
        };
        if target.is_empty() {
            return;
        }
        let i = rng.below(target.len());
        if rng.below(3) == 0 && target.len() > 1 {
            let j = rng.below(target.len());
            target.swap(i, j);
        } else {
            target[i] = rng.below(bound as usize + 3) as i64 - 2;
        }
    }

    /// The tensor, from the constructor the parts name (`Err` from a checked one).
    fn build(&self) -> Result<SparseTensor<2>, SparseError> {
        let [br, bc] = self.block;
        let nse = self.nse();
        let values = f64s(&self.values, [self.values.len()], &dev());
        match (self.layout, self.checked) {
            (Layout::Coo, true) => SparseTensor::coo(ix_as(&self.first, [2, nse], self.dtype), values, self.shape),
            (Layout::Coo, false) => {
                Ok(SparseTensor::coo_unchecked(ix_as(&self.first, [2, nse], self.dtype), values, self.shape))
            }
            (layout, checked) => {
                let c = ix_as(&self.first, [self.first.len()], self.dtype);
                let p = ix_as(&self.second, [nse], self.dtype);
                if layout.is_blocked() {
                    let v: Tensor<3> = values.reshape([nse, br, bc]);
                    if checked {
                        SparseTensor::compressed(c, p, v, self.shape, layout)
                    } else {
                        Ok(SparseTensor::compressed_unchecked(c, p, v, self.shape, layout))
                    }
                } else if checked {
                    SparseTensor::compressed(c, p, values, self.shape, layout)
                } else {
                    Ok(SparseTensor::compressed_unchecked(c, p, values, self.shape, layout))
                }
            }
        }
    }

    /// The dense matrix the components describe when they are valid (`None` otherwise): the
    /// layout's invariants checked here, independently of the library.
    fn reference(&self) -> Option<Vec<f64>> {
        let [m, k] = self.shape;
        let [br, bc] = self.block;
        let mut dense = vec![0.0; m * k];
        let nse = self.nse();
        if self.layout == Layout::Coo {
            for j in 0..nse {
                let (r, c) = (self.first[j], self.first[nse + j]);
                if r < 0 || c < 0 || r as usize >= m || c as usize >= k {
                    return None;
                }
                dense[r as usize * k + c as usize] += self.values[j];
            }
            return Some(dense);
        }
        let (n_comp, n_plain) = if self.layout.compresses_rows() { (m / br, k / bc) } else { (k / bc, m / br) };
        let ptr = &self.first;
        if ptr.len() != n_comp + 1 || ptr[0] != 0 || ptr[n_comp] != nse as i64 || ptr.windows(2).any(|w| w[1] < w[0]) {
            return None;
        }
        for s in 0..n_comp {
            let seg = &self.second[ptr[s] as usize..ptr[s + 1] as usize];
            if seg.iter().any(|&p| p < 0 || p as usize >= n_plain) || seg.windows(2).any(|w| w[1] <= w[0]) {
                return None;
            }
            for (off, &p) in seg.iter().enumerate() {
                let j = ptr[s] as usize + off;
                let (bi, bj) = if self.layout.compresses_rows() { (s, p as usize) } else { (p as usize, s) };
                for a in 0..br {
                    for b in 0..bc {
                        dense[(bi * br + a) * k + bj * bc + b] += self.values[(j * br + a) * bc + b];
                    }
                }
            }
        }
        Some(dense)
    }
}

/// What a case was: its layout, whether its parts were valid, whether they came through an
/// unchecked constructor.
type Outcome = (Layout, bool, bool);

/// The parts as a case: build, then every operation either errs (invalid parts) or agrees with
/// the dense reference exactly (small integers in f64).
fn fuzz_case(seed: u64) -> Outcome {
    let mut rng = Rng(seed);
    let parts = Parts::draw(&mut rng);
    let what = format!("seed {seed}: {parts:?}");
    let reference = parts.reference();
    let s = match parts.build() {
        Ok(s) => s,
        Err(e) => {
            assert!(parts.checked, "{what}: an unchecked constructor refused consistent shapes: {e}");
            assert!(reference.is_none(), "{what}: the checked constructor refused valid parts: {e}");
            return (parts.layout, false, false);
        }
    };
    let [m, k] = parts.shape;
    let Some(dense) = reference else {
        let e = s.check_invariants().expect_err(&what);
        assert!(!parts.checked, "{what}: a checked constructor accepted invalid parts");
        assert_eq!(s.try_to_dense().unwrap_err(), e, "{what}");
        assert_eq!(s.to_sparse_csr().unwrap_err(), e, "{what}");
        assert_eq!(sp::try_mm(&s, f64s(&vec![1.0; k * 2], [k, 2], &dev())).unwrap_err(), e, "{what}");
        for reduce in [sp::Reduce::Mean, sp::Reduce::Amax] {
            let x = f64s(&vec![1.0; k * 2], [k, 2], &dev());
            assert_eq!(sp::try_mm_reduce(&s, x, reduce).unwrap_err(), e, "{what}: {reduce:?}");
        }
        assert_eq!(sp::try_mm_dense_sparse(f64s(&vec![1.0; 2 * m], [2, m], &dev()), &s).unwrap_err(), e, "{what}");
        assert_eq!(
            sp::try_sampled_addmm(
                &s,
                f64s(&vec![1.0; m], [m, 1], &dev()),
                f64s(&vec![1.0; k], [1, k], &dev()),
                1.0,
                1.0
            )
            .unwrap_err(),
            e,
            "{what}"
        );
        return (parts.layout, false, true);
    };
    assert_eq!(s.check_invariants(), Ok(()), "{what}");
    assert_eq!(floats(s.try_to_dense().unwrap()), dense, "{what}: to_dense");
    for (name, converted) in [
        ("csr", s.to_sparse_csr()),
        ("csc", s.to_sparse_csc()),
        ("coo", s.try_to_sparse_coo()),
        ("coalesced", s.try_coalesce()),
    ] {
        assert_eq!(floats(converted.unwrap().to_dense()), dense, "{what}: {name}");
    }
    let n = 1 + rng.below(3);
    let x: Vec<f64> = (0..k * n).map(|_| rng.below(7) as f64 - 3.0).collect();
    assert_eq!(floats(sp::try_mm(&s, f64s(&x, [k, n], &dev())).unwrap()), matmul(&dense, &x, m, k, n), "{what}: mm");
    let summed = sp::try_mm_reduce(&s, f64s(&x, [k, n], &dev()), sp::Reduce::Sum).unwrap();
    assert_eq!(floats(summed), matmul(&dense, &x, m, k, n), "{what}: mm_reduce sum");
    let y: Vec<f64> = (0..n * m).map(|_| rng.below(7) as f64 - 3.0).collect();
    assert_eq!(
        floats(sp::try_mm_dense_sparse(f64s(&y, [n, m], &dev()), &s).unwrap()),
        matmul(&y, &dense, n, m, k),
        "{what}: mm_dense_sparse"
    );
    let (a, b) = (f64s(&y, [m, n], &dev()), f64s(&x, [n, k], &dev()));
    let sampled = sp::try_sampled_addmm(&s, a, b, 0.0, 1.0).unwrap();
    let full = matmul(&y, &x, m, n, k);
    let on_pattern =
        floats(s.to_sparse_csr().unwrap().with_values(s.to_sparse_csr().unwrap().values_flat().ones_like()).to_dense());
    let want: Vec<f64> = full.iter().zip(&on_pattern).map(|(&f, &p)| if p != 0.0 { f } else { 0.0 }).collect();
    assert_eq!(floats(sampled.to_dense()), want, "{what}: sampled_addmm");
    let t = s.t();
    let st = sp::spgemm(&s, &t).unwrap();
    let dense_t: Vec<f64> = (0..k * m).map(|i| dense[(i % m) * k + i / m]).collect();
    assert_eq!(floats(st.to_dense()), matmul(&dense, &dense_t, m, k, m), "{what}: spgemm");
    (parts.layout, true, !parts.checked)
}

#[test]
fn fuzz_constructors_conversions_and_products() {
    let cases: u64 = std::env::var("SPARSEGRAD_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let first: u64 = std::env::var("SPARSEGRAD_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    let start = std::time::Instant::now();
    let mut seen = std::collections::BTreeMap::<String, u64>::new();
    for seed in first..first + cases {
        let (layout, valid, unchecked) = fuzz_case(seed);
        let kind = format!(
            "{layout:?} {} {}",
            if valid { "valid" } else { "invalid" },
            if unchecked { "unchecked" } else { "checked" }
        );
        *seen.entry(kind).or_default() += 1;
    }
    eprintln!("fuzz: {cases} cases from seed {first} in {:.1} s: {seen:?}", start.elapsed().as_secs_f64());
    // Every layout reaches both outcomes through both kinds of constructor.
    if cases >= 1000 {
        assert_eq!(seen.len(), 5 * 4, "{seen:?}");
    }
}
