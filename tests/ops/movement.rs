//! The two value movements every conversion and `coalesce` are made of (`RowMovement`): the
//! scatter-add against a host sum in the same order (bit for bit in f32, which is what the
//! device's grouping of targets must preserve), and the gather, on the test device, with i64
//! and i32 targets, duplicates, runs in descending order, targets that receive nothing, and
//! more rows than one merge run or kernel unit covers. Then `coalesce` on the test device (a
//! Cube device plans it there: `IndexKernels`) against the host plan on Flex.

use crate::common_ops::{self, Rng};
use burn::backend::Dispatch;
use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use sparsegrad::backend::convert::SparseSpec;
use sparsegrad::backend::movement::RowMovement;
use sparsegrad::prelude::*;

fn scatter(values: &[f32], width: usize, targets: &[i64], rows: usize, dtype: DType) -> Vec<f32> {
    let device = common_ops::dev();
    let n = targets.len();
    let v = Tensor::<2>::from_data(TensorData::new(values.to_vec(), [n, width]), (&device, DType::F32));
    let t = common_ops::index_on(targets, [n], dtype, &device);
    let out = <Dispatch as RowMovement>::index_add_rows(v.into_dispatch(), t.into_dispatch(), rows);
    common_ops::f32s(Tensor::<2>::from_dispatch(out))
}

#[test]
fn index_add_rows_sums_in_target_order() {
    let mut rng = Rng(41);
    for (n, rows, width) in [(0, 3, 2), (1, 1, 1), (2, 5, 3), (3, 2, 1), (1000, 7, 3), (70_001, 5000, 1), (4097, 1, 2)]
    {
        // Random targets, then a descending run and a block of one repeated target.
        let mut targets: Vec<i64> = (0..n).map(|_| rng.below(rows) as i64).collect();
        let third = n / 3;
        for (k, t) in targets[..third].iter_mut().enumerate() {
            *t = ((third - k) % rows) as i64;
        }
        for t in targets[third..2 * third].iter_mut() {
            *t = (rows / 2) as i64;
        }
        let values: Vec<f32> = (0..n * width).map(|_| rng.value() as f32).collect();
        // The host sum in the order of the entries.
        let mut expected = vec![0f32; rows * width];
        for (j, &t) in targets.iter().enumerate() {
            for c in 0..width {
                expected[t as usize * width + c] += values[j * width + c];
            }
        }
        for dtype in [DType::I64, DType::I32] {
            let got = scatter(&values, width, &targets, rows, dtype);
            assert_eq!(got, expected, "n={n} rows={rows} width={width} {dtype:?}");
        }
    }
}

#[test]
fn gather_rows_reads_each_id() {
    let device = common_ops::dev();
    let mut rng = Rng(42);
    let (rows, width, n) = (300, 3, 2000);
    let values: Vec<f32> = (0..rows * width).map(|_| rng.value() as f32).collect();
    let ids: Vec<i64> = (0..n).map(|_| rng.below(rows) as i64).collect();
    let v = Tensor::<2>::from_data(TensorData::new(values.clone(), [rows, width]), (&device, DType::F32));
    let t: Tensor<1, Int> = common_ops::index_on(&ids, [n], DType::I64, &device);
    let got = common_ops::f32s(Tensor::<2>::from_dispatch(<Dispatch as RowMovement>::gather_rows(
        v.into_dispatch(),
        t.into_dispatch(),
    )));
    let expected: Vec<f32> = ids.iter().flat_map(|&i| values[i as usize * width..][..width].to_vec()).collect();
    assert_eq!(got, expected);
}

/// Uncoalesced COO input of every kind: many duplicates, keys past i32 (a 2^20 x 2^13 shape),
/// three sparse dims with a dense dim, two entries in descending order, and input sorted and
/// unique already (the tensor comes back as it is). Indices and values equal to the host
/// plan's on Flex, bit for bit (both sum each key's entries in their order), and the values'
/// gradient equal too.
#[test]
fn coalesce_matches_the_host_plan() {
    let mut rng = Rng(43);
    let cases: [(&[usize], usize, usize, DType); 6] = [
        (&[1000, 700], 50_000, 1, DType::I64),
        (&[300, 2], 4000, 1, DType::I32),
        (&[5, 6, 7], 3000, 3, DType::I32),
        (&[1 << 20, 1 << 13], 20_000, 1, DType::I64),
        (&[4, 4], 2, 1, DType::I32),
        (&[9, 9], 40, 2, DType::I64),
    ];
    for (case, &(sizes, nse, width, dtype)) in cases.iter().enumerate() {
        let mut coords: Vec<Vec<i64>> =
            (0..nse).map(|_| sizes.iter().map(|&s| rng.below(s) as i64).collect()).collect();
        if case == 4 {
            coords = vec![vec![3, 1], vec![0, 2]];
        }
        if case == 5 {
            coords.sort();
            coords.dedup();
        }
        let nse = coords.len();
        let c = Case {
            indices: (0..sizes.len()).flat_map(|d| coords.iter().map(move |c| c[d])).collect(),
            sizes,
            width,
            dtype,
            values: (0..nse * width).map(|_| rng.value()).collect(),
            weights: (0..nse * width).map(|_| rng.value()).collect(),
        };
        let on = |device: &Device| match (sizes.len(), width) {
            (2, 1) => coalesced::<2, 1>(device, &c),
            (2, _) => coalesced::<3, 2>(device, &c),
            _ => coalesced::<4, 2>(device, &c),
        };
        let (got, expected) = (on(&common_ops::dev()), on(&Device::flex()));
        assert_eq!(got, expected, "case {case}: {sizes:?} nse={nse} width={width} {dtype:?}");
        if case == 5 {
            assert_eq!(got.0, c.indices, "sorted and unique input comes back as it is");
        }
    }
}

/// One case of [`coalesce_matches_the_host_plan`]: COO indices `[sizes.len(), nse]`, values
/// `[nse]` or `[nse, width]`, and weights for a loss over the coalesced values.
struct Case<'a> {
    indices: Vec<i64>,
    sizes: &'a [usize],
    width: usize,
    dtype: DType,
    values: Vec<f64>,
    weights: Vec<f64>,
}

/// The coalesced indices and values of the case on `device` (a `D`-dim tensor with `V`-dim
/// values: a dense dim of `width` when `V` is 2), and the values' gradient of
/// `sum(coalesced values * weights)`.
fn coalesced<const D: usize, const V: usize>(device: &Device, c: &Case) -> (Vec<i64>, Vec<f32>, Vec<f32>) {
    let ad = device.clone().autodiff();
    let nse = c.indices.len() / c.sizes.len();
    let indices = common_ops::index_on(&c.indices, [c.sizes.len(), nse], c.dtype, &ad);
    let vshape: [usize; V] = std::array::from_fn(|i| if i == 0 { nse } else { c.width });
    let values = Tensor::<V>::from_data(TensorData::new(c.values.clone(), vshape), (&ad, DType::F32)).require_grad();
    let shape: [usize; D] = std::array::from_fn(|i| if i < c.sizes.len() { c.sizes[i] } else { c.width });
    let s = SparseTensor::<D>::coo(indices, values.clone(), shape).unwrap();
    let out = s.coalesce();
    assert!(out.is_coalesced());
    assert_eq!(out.index_dtype(), c.dtype);
    let flat = out.values_flat();
    let unique = flat.dims()[0];
    let w = Tensor::<2>::from_data(
        TensorData::new(c.weights[..unique * c.width].to_vec(), [unique, c.width]),
        (&ad, DType::F32),
    );
    let grads = (flat.clone() * w).sum().backward();
    let grad = values.grad(&grads).unwrap();
    (
        common_ops::ints(out.indices().unwrap().inner()),
        common_ops::f32s(flat.inner()),
        common_ops::f32s(reshape_flat(grad)),
    )
}

fn reshape_flat<const V: usize>(t: Tensor<V>) -> Tensor<1> {
    let n = t.shape().num_elements();
    t.reshape([n])
}

/// `to_dense` (duplicates summed), COO -> CSR of a coalesced tensor and CSR/CSC -> COO on the
/// test device (a Cube device computes the keys, the compression and the expansion there:
/// `IndexKernels`) against Flex: equal indices, values and dense results bit for bit, with
/// i32 and i64 indices, empty rows and columns, no entry at all, and the values' gradient of
/// `to_dense`.
#[test]
fn conversions_match_flex() {
    let mut rng = Rng(44);
    for (rows, cols, nse, dtype) in [(50, 3000, 20_000, DType::I64), (7, 5, 60, DType::I32), (4, 6, 0, DType::I32)] {
        let mut idx: Vec<i64> = (0..nse).map(|_| rng.below(rows) as i64).collect();
        idx.extend((0..nse).map(|_| rng.below(cols) as i64));
        let values: Vec<f64> = (0..nse).map(|_| rng.value()).collect();
        let weights: Vec<f64> = (0..rows * cols).map(|_| rng.value()).collect();
        let on = |device: &Device| {
            let ad = device.clone().autodiff();
            let v = Tensor::<1>::from_data(TensorData::new(values.clone(), [nse]), (&ad, DType::F32)).require_grad();
            let s = SparseTensor::<2>::coo(common_ops::index_on(&idx, [2, nse], dtype, &ad), v.clone(), [rows, cols])
                .unwrap();
            let dense = s.to_dense();
            let w = Tensor::<2>::from_data(TensorData::new(weights.clone(), [rows, cols]), (&ad, DType::F32));
            let grads = (dense.clone() * w).sum().backward();
            let grad = common_ops::f32s(v.grad(&grads).unwrap());
            let csr = s.coalesce().to_sparse_csr().unwrap();
            let (crow, col) = (csr.crow_indices::<1>().unwrap(), csr.col_indices::<1>().unwrap());
            let back = csr.to_sparse_coo();
            assert!(back.is_coalesced());
            let csc = csr.to_sparse_csc().unwrap();
            let from_csc = csc.to_sparse_coo();
            (
                common_ops::f32s(dense.inner()),
                grad,
                (common_ops::ints(crow.inner()), common_ops::ints(col.inner()), csr.index_dtype()),
                (common_ops::ints(back.indices().unwrap().inner()), common_ops::f32s(back.values_flat().inner())),
                (
                    common_ops::ints(from_csc.indices_raw().unwrap().inner()),
                    common_ops::f32s(from_csc.to_dense().inner()),
                ),
            )
        };
        let (got, expected) = (on(&common_ops::dev()), on(&Device::flex()));
        assert_eq!(got, expected, "{rows}x{cols} nse={nse} {dtype:?}");
    }
}

/// Dense -> COO (with and without a dense dim) and dense -> CSR (a Cube device finds the
/// non-zeros by a prefix sum there and reads back their count: `IndexKernels`) against Flex:
/// zeros and negative zeros left out, NaN kept, an all-zero and an empty tensor, i32 and i64
/// indices, f32 and f16, and the dense input's gradient through the stored values.
#[test]
fn dense_to_sparse_matches_flex() {
    let mut rng = Rng(45);
    for (rows, cols, density) in [(40, 300, 0.05), (6, 7, 0.5), (5, 4, 0.0), (0, 3, 0.5)] {
        let mut data: Vec<f64> = (0..rows * cols)
            .map(|_| {
                if rng.unit() < density {
                    rng.value()
                } else if rng.unit() < 0.5 {
                    -0.0
                } else {
                    0.0
                }
            })
            .collect();
        if rows * cols > 10 && density > 0.0 {
            data[7] = f64::NAN;
        }
        let weights: Vec<f64> = (0..rows * cols).map(|_| rng.value()).collect();
        for (dtype, index) in [(DType::F32, DType::I64), (DType::F16, DType::I32)] {
            let on = |device: &Device| {
                let ad = device.clone().autodiff();
                let x = Tensor::<2>::from_data(TensorData::new(data.clone(), [rows, cols]), (&ad, DType::F64))
                    .cast(dtype)
                    .require_grad();
                let spec = |layout, dense_dim| SparseSpec { dense_dim, index_dtype: index, ..SparseSpec::new(layout) };
                let coo = x.clone().to_sparse_with(spec(Layout::Coo, 0)).unwrap();
                let hybrid = x.clone().to_sparse_with(spec(Layout::Coo, 1)).unwrap();
                let csr = x.clone().to_sparse_with(spec(Layout::Csr, 0)).unwrap();
                let w = |n: usize| {
                    Tensor::<2>::from_data(TensorData::new(weights[..n].to_vec(), [n, 1]), (&ad, DType::F64))
                        .cast(dtype)
                };
                let stored = coo.values_flat();
                let n = stored.dims()[0];
                let grads = (stored.clone() * w(n)).sum().backward();
                let bits = |t: Tensor<2>| common_ops::floats(t.inner()).iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                (
                    (common_ops::ints(coo.indices().unwrap().inner()), bits(stored), coo.index_dtype()),
                    (common_ops::ints(hybrid.indices().unwrap().inner()), bits(hybrid.values_flat())),
                    (
                        common_ops::ints(csr.crow_indices::<1>().unwrap().inner()),
                        common_ops::ints(csr.col_indices::<1>().unwrap().inner()),
                        bits(csr.values_flat()),
                        csr.index_dtype(),
                    ),
                    bits(x.grad(&grads).unwrap()),
                )
            };
            let (got, expected) = (on(&common_ops::dev()), on(&Device::flex()));
            assert_eq!(got, expected, "{rows}x{cols} density {density} {dtype:?} {index:?}");
        }
    }
}
