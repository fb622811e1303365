//! Building, moving and casting tensors without index tensors by hand: `coo_from_vecs`,
//! `csr_from_vecs`, `csc_from_vecs` against the tensor constructors on the same data,
//! `to_device`, `cast` (values, with gradients) and `cast_indices` (checked, never narrowing);
//! `from_sprs` (feature `sprs`) and serde round trips (feature `serde`).

use crate::common_ops::*;
use burn::tensor::{DType, FloatDType, Int, IntDType, Tensor, TensorData};
use sparsegrad::prelude::*;

#[test]
fn coo_from_vecs_matches_the_tensor_constructor_duplicates_included() {
    let entries = vec![[0i64, 2], [1, 0], [0, 2], [2, 1]];
    let s = SparseTensor::coo_from_vecs(&entries, vec![1.5f64, -2.0, 0.25, 4.0], [3, 3], &dev()).unwrap();
    assert_eq!((s.layout(), s.dtype(), s.index_dtype(), s.nnz()), (Layout::Coo, DType::F64, DType::I64, 4));
    assert!(!s.is_coalesced(), "as given, like torch: duplicates are kept until coalesce");
    let t = SparseTensor::coo(
        int_on(&[0, 1, 0, 2, 2, 0, 2, 1], [2, 4], &dev()),
        f64s_plain(&[1.5, -2.0, 0.25, 4.0]),
        [3, 3],
    )
    .unwrap();
    assert_eq!(floats(s.to_dense()), floats(t.to_dense()));
    assert_eq!(floats(s.to_dense()), [0.0, 0.0, 1.75, -2.0, 0.0, 0.0, 0.0, 4.0, 0.0]);
    // Three sparse dims, f32 values.
    let s3 = SparseTensor::coo_from_vecs([[1i64, 0, 3]], vec![7.0f32], [2, 1, 4], &dev()).unwrap();
    assert_eq!(s3.dtype(), DType::F32);
    let d = floats(s3.to_dense());
    assert_eq!((d[4 + 3], d.iter().sum::<f64>()), (7.0, 7.0));
}

fn f64s_plain(v: &[f64]) -> Tensor<1> {
    dense(v, [v.len()], DType::F64)
}

#[test]
fn plain_constructors_check_like_the_tensor_ones() {
    let d = dev();
    // An index outside the shape, named.
    let e = SparseTensor::coo_from_vecs([[0i64, 3]], vec![1.0f32], [2, 3], &d).unwrap_err();
    assert!(matches!(e, SparseError::IndexOutOfBounds { .. }), "{e}");
    // Values and indices of different lengths.
    let e = SparseTensor::coo_from_vecs([[0i64, 1], [1, 1]], vec![1.0f32], [2, 3], &d).unwrap_err();
    assert!(matches!(e, SparseError::ShapeMismatch { component: "values", .. }), "{e}");
    // Integer values are refused, not converted.
    let e = SparseTensor::coo_from_vecs([[0i64, 1]], vec![1i32], [2, 3], &d).unwrap_err();
    assert!(matches!(e, SparseError::UnsupportedDtype { component: "values", .. }), "{e}");
    // A decreasing crow.
    let e = SparseTensor::csr_from_vecs(vec![0, 2, 1], vec![0, 1], vec![1.0f32, 2.0], [2, 2], &d).unwrap_err();
    assert!(matches!(e, SparseError::CompressedDecreasing { .. }), "{e}");
    // Empty.
    let s = SparseTensor::csr_from_vecs(vec![0, 0, 0], vec![], Vec::<f32>::new(), [2, 5], &d).unwrap();
    assert_eq!((s.nnz(), floats(s.to_dense())), (0, vec![0.0; 10]));
    let s = SparseTensor::<2>::coo_from_vecs(Vec::<[i64; 2]>::new(), Vec::<f64>::new(), [0, 4], &d).unwrap();
    assert_eq!((s.nnz(), s.shape()), (0, [0, 4]));
}

#[test]
fn csr_and_csc_from_vecs_are_the_same_matrix() {
    // [[0, 3, 0], [4, 0, 5]]
    let csr =
        SparseTensor::csr_from_vecs(vec![0, 1, 3], vec![1, 0, 2], vec![3.0f64, 4.0, 5.0], [2, 3], &dev()).unwrap();
    let csc =
        SparseTensor::csc_from_vecs(vec![0, 1, 2, 3], vec![1, 0, 1], vec![4.0f64, 3.0, 5.0], [2, 3], &dev()).unwrap();
    assert_eq!((csr.layout(), csc.layout()), (Layout::Csr, Layout::Csc));
    let expected = [0.0, 3.0, 0.0, 4.0, 0.0, 5.0];
    assert_eq!(floats(csr.to_dense()), expected);
    assert_eq!(floats(csc.to_dense()), expected);
    assert_eq!(ints(csr.col_indices::<1>().unwrap()), [1, 0, 2]);
}

#[test]
fn cast_changes_the_values_dtype_and_carries_gradients() {
    let s = SparseTensor::csr_from_vecs(vec![0, 1, 2], vec![1, 0], vec![0.1f32, 3.0], [2, 2], &ad())
        .unwrap()
        .require_grad();
    let c = s.cast(FloatDType::F64);
    assert_eq!((c.dtype(), c.index_dtype(), c.layout()), (DType::F64, DType::I64, Layout::Csr));
    assert_eq!(floats(c.to_dense()), [0.0, 0.1f32 as f64, 3.0, 0.0]);
    // d/dv sum(2 * cast(v)) = 2 for each stored value, back in f32.
    let grads = (c.values_flat() * 2.0).sum().backward();
    let g = s.values_flat().grad(&grads).expect("the values get a gradient through the cast");
    assert_eq!(f32s(g), [2.0, 2.0]);
    // Casting to the current dtype is the identity.
    assert_eq!(floats(s.cast(FloatDType::F32).to_dense()), floats(s.to_dense()));
}

#[test]
fn cast_indices_narrows_only_when_everything_fits() {
    let d = dev();
    let s = SparseTensor::csr_from_vecs(vec![0, 1, 3], vec![1, 0, 2], vec![3.0f32, 4.0, 5.0], [2, 3], &d).unwrap();
    for (dtype, expected) in [(IntDType::I8, DType::I8), (IntDType::I16, DType::I16), (IntDType::I32, DType::I32)] {
        let c = s.cast_indices(dtype).unwrap();
        assert_eq!(c.index_dtype(), expected);
        assert_eq!(floats(c.to_dense()), floats(s.to_dense()));
        assert_eq!(ints(c.crow_indices::<1>().unwrap()), [0, 1, 3]);
        // And back.
        assert_eq!(c.cast_indices(IntDType::I64).unwrap().index_dtype(), DType::I64);
    }
    // A dimension past int8.
    let wide = SparseTensor::coo_from_vecs([[0i64, 200]], vec![1.0f32], [1, 300], &d).unwrap();
    let e = wide.cast_indices(IntDType::I8).unwrap_err();
    assert!(matches!(e, SparseError::DimensionTooLarge { component: "size", dim: 1, size: 300, .. }), "{e}");
    assert_eq!(wide.cast_indices(IntDType::I16).unwrap().index_dtype(), DType::I16);
    // nse past int8 in a compressed tensor whose dimensions fit.
    let n = 100usize;
    let crow: Vec<i64> = (0..=n as i64).map(|i| i * 2).collect();
    let col: Vec<i64> = (0..n).flat_map(|_| [0i64, 1]).collect();
    let many = SparseTensor::csr_from_vecs(crow, col, vec![1.0f32; 2 * n], [n, 2], &d).unwrap();
    let e = many.cast_indices(IntDType::I8).unwrap_err();
    assert!(matches!(e, SparseError::DimensionTooLarge { component: "nse", size: 200, .. }), "{e}");
    // Unsigned dtypes are not index dtypes.
    assert!(matches!(s.cast_indices(IntDType::U32), Err(SparseError::UnsupportedDtype { .. })));
    // An invalid unchecked tensor reports its violation, not a cast.
    let bad = SparseTensor::csr_unchecked(
        int_on(&[0, 2, 1], [3], &d),
        int_on(&[0, 1], [2], &d),
        dense(&[1.0, 2.0], [2], DType::F32),
        [2, 2],
    );
    assert!(matches!(bad.cast_indices(IntDType::I32), Err(SparseError::CompressedDecreasing { .. })));
}

#[test]
fn to_device_moves_indices_and_values_together() {
    let s = SparseTensor::coo_from_vecs([[0i64, 1], [1, 0]], vec![1.0f32, 2.0], [2, 2], &ad()).unwrap().require_grad();
    let moved = s.to_device(&ad());
    assert_eq!((moved.device(), moved.index_dtype()), (ad(), DType::I64));
    assert_eq!(ints(moved.indices_raw().unwrap()), ints(s.indices_raw().unwrap()));
    assert_eq!(floats(moved.to_dense()), floats(s.to_dense()));
    // The move is part of the graph: the gradient reaches the original values.
    let grads = (moved.to_dense() * 3.0).sum().backward();
    assert_eq!(f32s(s.values_flat().grad(&grads).unwrap()), [3.0, 3.0]);
}

#[test]
fn sprs_matrices_convert_with_their_storage() {
    let d = dev();
    // [[0, 3, 0], [4, 0, 5]] in CSR and CSC, with u32 indices.
    let csr = sprs::CsMatI::<f64, u32>::new((2, 3), vec![0, 1, 3], vec![1, 0, 2], vec![3.0, 4.0, 5.0]);
    let s = SparseTensor::from_sprs(&csr, &d).unwrap();
    assert_eq!((s.layout(), s.shape(), s.index_dtype(), s.dtype()), (Layout::Csr, [2, 3], DType::I64, DType::F64));
    assert_eq!(floats(s.to_dense()), [0.0, 3.0, 0.0, 4.0, 0.0, 5.0]);
    let csc = csr.to_csc();
    let s = SparseTensor::<2>::try_from(&csc).unwrap();
    assert_eq!(s.layout(), Layout::Csc);
    assert_eq!(floats(s.to_dense()), [0.0, 3.0, 0.0, 4.0, 0.0, 5.0]);
    // A view of a row slice (its indptr does not start at 0) and an empty matrix.
    let rows = csr.slice_outer(1..2);
    assert_eq!(floats(SparseTensor::from_sprs(&rows, &d).unwrap().to_dense()), [4.0, 0.0, 5.0]);
    let empty = sprs::CsMat::<f32>::zero((0, 4));
    let s = SparseTensor::from_sprs(&empty, &d).unwrap();
    assert_eq!((s.shape(), s.nnz(), s.dtype()), ([0, 4], 0, DType::F32));
}

/// Back to sprs: a CSR or CSC tensor keeps its storage, the other layouts come as CSR
/// (duplicates summed); sprs -> tensor -> sprs gives the same arrays bit for bit, values
/// converted to the type asked; batch and dense dims are refused by name.
#[test]
fn sprs_round_trips_both_ways() {
    let d = dev();
    // [[0, 3, 0, -1e-300], [4, 0, 5, 0], [0, 0, 0, 0]]: an empty row, a subnormal-adjacent value.
    let csr = sprs::CsMat::<f64>::new((3, 4), vec![0, 2, 4, 4], vec![1, 3, 0, 2], vec![3.0, -1e-300, 4.0, 5.0]);
    for m in [csr.clone(), csr.to_csc()] {
        let s = SparseTensor::from_sprs(&m, &d).unwrap();
        let back: sprs::CsMat<f64> = s.to_sprs().unwrap();
        assert_eq!(back.is_csr(), m.is_csr());
        assert_eq!(
            (back.shape(), back.indptr().raw_storage(), back.indices()),
            (m.shape(), m.indptr().raw_storage(), m.indices())
        );
        let bits = |m: &sprs::CsMat<f64>| m.data().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&m), "csr: {}", m.is_csr());
        let via_trait = sprs::CsMat::<f64>::try_from(&s).unwrap();
        assert_eq!(via_trait, back);
    }
    // COO with a duplicate, and BSR: as CSR, duplicates summed; f32 values read as f32.
    let coo = SparseTensor::coo_from_vecs([[1i64, 0], [0, 1], [1, 0]], vec![2.0f32, -3.0, 0.5], [2, 2], &d).unwrap();
    let m: sprs::CsMat<f32> = coo.to_sprs().unwrap();
    assert!(m.is_csr());
    assert_eq!((m.indptr().raw_storage(), m.indices(), m.data()), (&[0, 1, 2][..], &[1, 0][..], &[-3.0f32, 2.5][..]));
    let bsr = SparseTensor::from_sprs(&csr, &d).unwrap().to_layout(Layout::Bsr, Some([1, 2])).unwrap();
    let m: sprs::CsMat<f64> = bsr.to_sprs().unwrap();
    assert_eq!(m.to_dense(), csr.to_dense());
    // Values converted to the type asked (f64 -> f32 here).
    let m32: sprs::CsMat<f32> = SparseTensor::from_sprs(&csr, &d).unwrap().to_sprs().unwrap();
    assert_eq!(m32.data(), &[3.0f32, -1e-300f64 as f32, 4.0, 5.0][..]);
    // Dense dims do not fit a CsMat.
    let hybrid =
        SparseTensor::coo(int_on(&[0, 1], [1, 2], &d), f64s_plain(&[1.0, 2.0, 3.0, 4.0]).reshape([2, 2]), [2, 2]);
    let e = hybrid.unwrap().to_sprs::<f64>().unwrap_err().to_string();
    assert!(e.contains("to_sprs") && e.contains("1 dense dims"), "{e}");
}

#[test]
fn serde_round_trips_every_layout_and_refuses_bad_bytes() {
    let d = dev();
    let csr =
        SparseTensor::csr_from_vecs(vec![0, 2, 2, 3], vec![0, 3, 1], vec![1.5f64, -2.0, 0.25], [3, 4], &d).unwrap();
    for layout in [Layout::Coo, Layout::Csr, Layout::Csc, Layout::Bsr, Layout::Bsc] {
        let s = csr.to_layout(layout, layout.is_blocked().then_some([1, 2])).unwrap();
        let json = serde_json::to_string(&s).unwrap();
        let back: SparseTensor<2> = serde_json::from_str(&json).unwrap();
        assert_eq!(
            (back.layout(), back.shape(), back.blocksize(), back.index_dtype(), back.dtype(), back.is_coalesced()),
            (s.layout(), s.shape(), s.blocksize(), s.index_dtype(), s.dtype(), s.is_coalesced()),
            "{layout:?}"
        );
        assert_eq!(back.to_dense().into_data(), s.to_dense().into_data(), "{layout:?}");
    }
    // Hybrid COO (a dense dim), uncoalesced, int32 indices.
    let idx = Tensor::<2, Int>::from_data(TensorData::new(vec![1i32, 0, 1], [1, 3]), (&d, DType::I32));
    let vals = Tensor::<2>::from_data(TensorData::new(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [3, 2]), (&d, DType::F32));
    let hybrid = SparseTensor::coo(idx, vals, [2, 2]).unwrap();
    let back: SparseTensor<2> = serde_json::from_str(&serde_json::to_string(&hybrid).unwrap()).unwrap();
    assert_eq!((back.dense_dim(), back.index_dtype(), back.is_coalesced()), (1, DType::I32, false));
    assert_eq!(floats(back.to_dense()), floats(hybrid.to_dense()));
    // Tampered bytes: an index out of range, a wrong rank, a false coalesced flag, an unknown layout.
    let json = serde_json::to_string(&csr.to_sparse_coo()).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let tamper = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v = v.clone();
        f(&mut v);
        serde_json::from_value::<SparseTensor<2>>(v).unwrap_err().to_string()
    };
    let e = tamper(&|v| v["shape"] = serde_json::json!([3, 2]));
    assert!(e.contains("out of bounds"), "{e}");
    let e = tamper(&|v| v["shape"] = serde_json::json!([3, 4, 1]));
    assert!(e.contains("is not of rank 2"), "{e}");
    let e = tamper(&|v| v["layout"] = serde_json::json!("sparse_xyz"));
    assert!(e.contains("unknown layout"), "{e}");
    let e = tamper(&|v| v["plain_indices"] = v["indices"].clone());
    assert!(e.contains("sparse_coo with plain indices"), "{e}");
    let uncoalesced = serde_json::to_value(&hybrid).unwrap();
    let mut forged = uncoalesced.clone();
    forged["coalesced"] = serde_json::json!(true);
    let e = serde_json::from_value::<SparseTensor<2>>(forged).unwrap_err().to_string();
    assert!(e.contains("marked coalesced"), "{e}");
}

/// A tensor enters the library through a constructor, which checks its device's backend once:
/// Flex passes with and without autodiff (and the constructors build on it); another backend is
/// an `UnsupportedBackend` error naming the device and the backends of this build, where burn
/// would panic with "Backend not supported for custom op" at the first kernel.
#[test]
fn constructors_check_the_backend_once() {
    use sparsegrad::backend::util::{check_backend, SUPPORTED_BACKENDS};
    assert_eq!(check_backend(&burn::tensor::Device::flex()), Ok(()));
    assert_eq!(check_backend(&burn::tensor::Device::flex().autodiff()), Ok(()));
    assert_eq!(check_backend(&dev()), Ok(()));
    assert!(SUPPORTED_BACKENDS.starts_with("Flex (`Device::flex()`)"), "{SUPPORTED_BACKENDS}");
    let e = SparseError::UnsupportedBackend { device: "NdArray(Cpu)".into(), supported: SUPPORTED_BACKENDS };
    assert_eq!(
        e.to_string(),
        format!(
            "device NdArray(Cpu): sparsegrad has no kernels for its backend; this build supports {SUPPORTED_BACKENDS}"
        )
    );
}

/// `check_device` runs one op on the device and checks its result: Flex and the test device
/// (with and without autodiff) pass; the error a device whose runtime cannot start gets names the
/// device and the runtime's reason.
#[test]
fn check_device_probes_the_device() {
    use sparsegrad::backend::util::check_device;
    assert_eq!(check_device(&burn::tensor::Device::flex()), Ok(()));
    assert_eq!(check_device(&dev()), Ok(()));
    assert_eq!(check_device(&dev().autodiff()), Ok(()));
    let e = SparseError::DeviceUnavailable {
        device: "Cube(Cuda(CudaDevice { index: 0 }))".into(),
        reason: "Unable to find libcuda.so".into(),
    };
    assert_eq!(
        e.to_string(),
        "device Cube(Cuda(CudaDevice { index: 0 })) cannot run on this machine: Unable to find libcuda.so"
    );
}
