//! `spgemm` (sparse @ sparse, CSR result) and `spgemm_with` (mask, dropping exact zeros)
//! against dense references computed with burn's dense matmul, on every layout of both
//! operands and of the mask, empty and uncoalesced operands included; their gradients
//! (gradcheck on every layout); and the value filters (`filter`, `eliminate_zeros`,
//! `clamp_stored`, `add_scalar_to_stored`) against their definitions, with gradients.

use crate::common_ops;

use burn::tensor::{DType, Tensor, TensorData};
use common_ops::{
    ad, assert_near, dev, f64s, flat, floats, gradcheck_all, index_on, ints, matrix, rebuild, split_entries, Kind, Rng,
};
use sparsegrad::gradcheck::GradInput;
use sparsegrad::prelude::*;
use sparsegrad::sparse::{self as sp, SpgemmOptions};

const KINDS: [Kind; 6] = [Kind::Coo, Kind::CooDup, Kind::Csr, Kind::Csc, Kind::Bsr([2, 3]), Kind::Bsc([2, 1])];

fn tensor<const D: usize>(data: &[f64], shape: [usize; D], dtype: DType, device: &burn::tensor::Device) -> Tensor<D> {
    let data = match dtype {
        DType::F32 => TensorData::new(data.iter().map(|&v| v as f32).collect::<Vec<_>>(), shape),
        _ => TensorData::new(data.to_vec(), shape),
    };
    Tensor::from_data(data, (device, dtype))
}

/// `data [rows, cols]` stored as `kind` (uncoalesced for `CooDup`) on `device`.
fn sparse(
    data: &[f64],
    shape: [usize; 2],
    kind: Kind,
    vd: DType,
    id: DType,
    device: &burn::tensor::Device,
    rng: &mut Rng,
) -> SparseTensor<2> {
    let (layout, blocksize) = kind.layout();
    if kind != Kind::CooDup {
        return tensor(data, shape, vd, device)
            .to_sparse_with(SparseSpec { layout, dense_dim: 0, blocksize, index_dtype: id })
            .unwrap();
    }
    let (idx, vals) = split_entries(data, shape, |rng| 1 + rng.below(2), rng);
    let n = vals.len();
    SparseTensor::coo(index_on(&idx, [2, n], id, device), tensor(&vals, [n], vd, device), shape).unwrap()
}

/// Which elements are stored (structurally), as a flags matrix.
fn stored(s: &SparseTensor<2>) -> Vec<bool> {
    let [m, n] = s.shape();
    let coo = s.to_sparse_coo().coalesce();
    let idx = ints(coo.indices().unwrap());
    let nnz = coo.nnz();
    let mut out = vec![false; m * n];
    for j in 0..nnz {
        out[idx[j] as usize * n + idx[nnz + j] as usize] = true;
    }
    out
}

fn structure(data: &[f64], [m, k]: [usize; 2], kind: Kind) -> Vec<bool> {
    // Blocked layouts store whole blocks: the stored pattern is read off the tensor.
    let s = sparse(
        data,
        [m, k],
        if kind == Kind::CooDup { Kind::Coo } else { kind },
        DType::F64,
        DType::I64,
        &dev(),
        &mut Rng(0),
    );
    stored(&s)
}

fn product_structure(pa: &[bool], pb: &[bool], m: usize, k: usize, n: usize) -> Vec<bool> {
    (0..m * n).map(|ij| (0..k).any(|p| pa[ij / n * k + p] && pb[p * n + ij % n])).collect()
}

/// The CSR result: sorted unique columns per row (checked by the checked constructor).
fn assert_canonical_csr(c: &SparseTensor<2>, what: &str) {
    assert_eq!(c.layout(), Layout::Csr, "{what}");
    let (crow, col) = c.compressed_indices_flat().unwrap();
    let (m, nnz) = (c.shape()[0], c.nnz());
    let rebuilt = SparseTensor::csr(
        index_on(&ints(crow), [m + 1], DType::I64, &dev()),
        index_on(&ints(col), [nnz], DType::I64, &dev()),
        f64s(&floats(c.values_flat()), [nnz]),
        c.shape(),
    );
    assert!(rebuilt.is_ok(), "{what}: {:?}", rebuilt.err());
}

#[test]
fn spgemm_matches_dense_on_every_layout() {
    let mut rng = Rng(31);
    let (m, k, n) = (8, 6, 5);
    let a_data = matrix(m, k, 0.5, &[2, 3], &[4], &mut rng);
    let b_data = matrix(k, n, 0.5, &[1], &[3], &mut rng);
    for (vd, id) in [(DType::F32, DType::I32), (DType::F64, DType::I64)] {
        for ka in KINDS {
            for kb in [Kind::Coo, Kind::CooDup, Kind::Csr, Kind::Csc, Kind::Bsr([3, 5]), Kind::Bsc([2, 1])] {
                for (which, ad_, bd_) in [
                    ("full", a_data.clone(), b_data.clone()),
                    ("empty a", vec![0.0; m * k], b_data.clone()),
                    ("empty b", a_data.clone(), vec![0.0; k * n]),
                ] {
                    let a = sparse(&ad_, [m, k], ka, vd, id, &dev(), &mut rng);
                    let b = sparse(&bd_, [k, n], kb, vd, DType::I64, &dev(), &mut rng);
                    let what = format!("{ka:?} @ {kb:?} {which} {vd:?}");
                    let c = sp::spgemm(&a, &b).unwrap();
                    assert_canonical_csr(&c, &what);
                    assert_eq!((c.shape(), c.index_dtype(), c.dtype()), ([m, n], id, vd), "{what}");
                    let reference = tensor(&ad_, [m, k], vd, &dev()).matmul(tensor(&bd_, [k, n], vd, &dev()));
                    let tol = if vd == DType::F64 { 1e-12 } else { 1e-5 };
                    assert_near(&floats(c.to_dense()), &floats(reference), tol, &what);
                    let want = product_structure(&structure(&ad_, [m, k], ka), &structure(&bd_, [k, n], kb), m, k, n);
                    assert_eq!(stored(&c), want, "{what}: structural pattern");
                    // Bit-reproducible: a second call gives the same bits.
                    let again = sp::spgemm(&a, &b).unwrap();
                    assert_eq!(floats(again.values_flat()), floats(c.values_flat()), "{what}: reproducible");
                    // The one pass and the two phases (masked by the product's own pattern)
                    // sum alike, bit for bit.
                    let masked = sp::spgemm_with(&a, &b, SpgemmOptions { mask: Some(&c), drop_zeros: false }).unwrap();
                    assert_eq!(floats(masked.values_flat()), floats(c.values_flat()), "{what}: one pass, two phases");
                }
            }
        }
    }
}

#[test]
fn masked_spgemm_computes_only_the_mask() {
    let mut rng = Rng(32);
    let (m, k, n) = (7, 9, 6);
    let a_data = matrix(m, k, 0.4, &[0], &[], &mut rng);
    let b_data = matrix(k, n, 0.4, &[], &[2], &mut rng);
    let mask_data = matrix(m, n, 0.5, &[3], &[], &mut rng);
    let full = tensor(&a_data, [m, k], DType::F64, &dev()).matmul(tensor(&b_data, [k, n], DType::F64, &dev()));
    let full = floats(full);
    let want_s =
        product_structure(&structure(&a_data, [m, k], Kind::Csr), &structure(&b_data, [k, n], Kind::Csr), m, k, n);
    for kind in [Kind::Coo, Kind::CooDup, Kind::Csr, Kind::Csc] {
        let a = sparse(&a_data, [m, k], Kind::Csr, DType::F64, DType::I64, &dev(), &mut rng);
        let b = sparse(&b_data, [k, n], Kind::Csc, DType::F64, DType::I32, &dev(), &mut rng);
        let mask = sparse(&mask_data, [m, n], kind, DType::F64, DType::I64, &dev(), &mut rng);
        let c = sp::spgemm_with(&a, &b, SpgemmOptions { mask: Some(&mask), drop_zeros: false }).unwrap();
        assert_canonical_csr(&c, &format!("mask {kind:?}"));
        let in_mask: Vec<bool> = mask_data.iter().map(|&v| v != 0.0).collect();
        let expect_s: Vec<bool> = want_s.iter().zip(&in_mask).map(|(&x, &y)| x && y).collect();
        assert_eq!(stored(&c), expect_s, "mask {kind:?}: pattern");
        let got = floats(c.to_dense());
        let expect: Vec<f64> = (0..m * n).map(|t| if expect_s[t] { full[t] } else { 0.0 }).collect();
        assert_near(&got, &expect, 1e-12, &format!("mask {kind:?}: values"));
    }
    // A mask of the wrong shape is an error naming it.
    let a = sparse(&a_data, [m, k], Kind::Csr, DType::F64, DType::I64, &dev(), &mut rng);
    let b = sparse(&b_data, [k, n], Kind::Csr, DType::F64, DType::I64, &dev(), &mut rng);
    let bad = SparseTensor::<2>::empty([m, n + 1], &dev());
    let e = sp::spgemm_with(&a, &b, SpgemmOptions { mask: Some(&bad), drop_zeros: false }).unwrap_err();
    assert!(e.to_string().contains("mask"), "{e}");
    // Mismatched operands.
    assert!(sp::spgemm(&a, &a).is_err());
}

#[test]
fn exact_zeros_are_dropped_on_request() {
    // [[1, 1], [2, 0]] @ [[1, 3], [-1, 0]] = [[0, 3], [2, 6]]: a structural entry that cancels.
    let a = f64s(&[1.0, 1.0, 2.0, 0.0], [2, 2]).to_sparse_csr().unwrap();
    let b = f64s(&[1.0, 3.0, -1.0, 0.0], [2, 2]).to_sparse_coo(2).unwrap();
    let kept = sp::spgemm(&a, &b).unwrap();
    assert_eq!(kept.nnz(), 4);
    let dropped = sp::spgemm_with(&a, &b, SpgemmOptions { mask: None, drop_zeros: true }).unwrap();
    assert_eq!(dropped.nnz(), 3);
    assert_canonical_csr(&dropped, "dropped");
    assert_eq!(floats(dropped.to_dense()), vec![0.0, 3.0, 2.0, 6.0]);
    assert_eq!(stored(&dropped), vec![false, true, true, true]);
}

#[test]
fn gradcheck_spgemm_on_every_layout_with_mask_and_drops() {
    let mut rng = Rng(33);
    let (m, k, n) = (4, 6, 4);
    let a_data = matrix(m, k, 0.5, &[1], &[2], &mut rng);
    let b_data = matrix(k, n, 0.5, &[4], &[1], &mut rng);
    let mask_data = matrix(m, n, 0.6, &[], &[], &mut rng);
    let b_kinds = [Kind::Coo, Kind::CooDup, Kind::Csr, Kind::Csc, Kind::Bsr([3, 2]), Kind::Bsc([2, 4])];
    for (i, ka) in KINDS.into_iter().enumerate() {
        let kb = b_kinds[(i + 2) % b_kinds.len()];
        let a = sparse(&a_data, [m, k], ka, DType::F64, DType::I64, &ad(), &mut rng);
        let b = sparse(&b_data, [k, n], kb, DType::F64, DType::I32, &ad(), &mut rng);
        let mask = sparse(&mask_data, [m, n], Kind::Csr, DType::F64, DType::I64, &ad(), &mut rng);
        let inputs = [GradInput::sparse("a", &a), GradInput::sparse("b", &b)];
        gradcheck_all(
            &format!("spgemm {ka:?} @ {kb:?}"),
            |v| flat(sp::spgemm(&rebuild(&a, &v[0]), &rebuild(&b, &v[1])).unwrap().values_flat()),
            &inputs,
        );
        gradcheck_all(
            &format!("masked spgemm {ka:?} @ {kb:?}"),
            |v| {
                let o = SpgemmOptions { mask: Some(&mask), drop_zeros: false };
                flat(sp::spgemm_with(&rebuild(&a, &v[0]), &rebuild(&b, &v[1]), o).unwrap().to_dense())
            },
            &inputs,
        );
    }
    // Chained products (A B) A' reach both operands through two primitives.
    let a = sparse(&a_data, [m, k], Kind::Csr, DType::F64, DType::I64, &ad(), &mut rng);
    let b = sparse(&b_data, [k, n], Kind::Csr, DType::F64, DType::I64, &ad(), &mut rng);
    gradcheck_all(
        "chained",
        |v| {
            let ab = sp::spgemm(&rebuild(&a, &v[0]), &rebuild(&b, &v[1])).unwrap();
            let bt = rebuild(&b, &v[1]).t().to_sparse_csr().unwrap();
            flat(sp::spgemm(&ab, &bt).unwrap().to_dense())
        },
        &[GradInput::sparse("a", &a), GradInput::sparse("b", &b)],
    );
}

#[test]
fn gradients_of_spgemm_are_masked_products() {
    // d/dA sum(C) on A's pattern is rowsum(B)[p] for every stored (i, p); d/dB is colsum(A)[p].
    let a = f64s(&[1.0, 0.0, 2.0, 0.0, 3.0, 4.0], [2, 3]).to_sparse_csr().unwrap().require_grad();
    let b = f64s(&[1.0, 2.0, 0.0, 0.0, 5.0, 6.0], [3, 2]).to_sparse_csr().unwrap().require_grad();
    let grads = sp::spgemm(&a, &b).unwrap().values_flat().sum().backward();
    let da = floats(a.values_flat().grad(&grads).unwrap());
    let db = floats(b.values_flat().grad(&grads).unwrap());
    // a entries: (0,0) (0,2) (1,1) (1,2); rowsum(B) = [3, 0, 11].
    assert_eq!(da, vec![3.0, 11.0, 0.0, 11.0]);
    // b entries: (0,0) (0,1) (2,0) (2,1); colsum(A) = [1, 3, 6].
    assert_eq!(db, vec![1.0, 1.0, 6.0, 6.0]);
}

#[test]
fn filters_keep_the_selected_entries() {
    let data = [0.5, 0.0, -2.0, 0.0, 3.0, 0.0, 1.5, -0.25, 0.0, 4.0, 0.0, -1.0];
    let shape = [3, 4];
    let mut rng = Rng(34);
    for kind in [Kind::Coo, Kind::CooDup, Kind::Csr, Kind::Csc] {
        let s = sparse(&data, shape, kind, DType::F64, DType::I64, &dev(), &mut rng);
        let what = format!("{kind:?}");
        // filter: keep the positive entries; dense equivalent.
        let f = s.filter(|v| v > 0.0).unwrap();
        assert_eq!(f.layout(), s.layout(), "{what}");
        let want: Vec<f64> = data.iter().map(|&v| if v > 0.0 { v } else { 0.0 }).collect();
        if kind != Kind::CooDup {
            assert_eq!(floats(f.to_dense()), want, "{what}: filter");
            assert_eq!(f.nnz(), data.iter().filter(|&&v| v > 0.0).count(), "{what}");
        }
        f.check_invariants().unwrap();
        // clamp and add on the stored values only.
        let c = s.clamp_stored(-1.0, 2.0);
        assert_eq!(c.nnz(), s.nnz());
        let want: Vec<f64> = data.iter().map(|&v| if v != 0.0 { v.clamp(-1.0, 2.0) } else { 0.0 }).collect();
        assert_eq!(floats(c.coalesce().to_dense()).len(), want.len());
        if kind != Kind::CooDup {
            assert_eq!(floats(c.to_dense()), want, "{what}: clamp");
            let plus = s.add_scalar_to_stored(1.0);
            let want: Vec<f64> = data.iter().map(|&v| if v != 0.0 { v + 1.0 } else { 0.0 }).collect();
            assert_eq!(floats(plus.to_dense()), want, "{what}: add");
        }
        // Everything dropped: an empty tensor of the same shape.
        let none = s.filter(|_| false).unwrap();
        assert_eq!((none.nnz(), none.shape()), (0, shape), "{what}");
        assert_eq!(floats(none.to_dense()), vec![0.0; 12], "{what}");
    }
    // eliminate_zeros drops stored zeros only.
    let idx = index_on(&[0, 1, 2, 0, 3, 1], [2, 3], DType::I64, &dev());
    let s = SparseTensor::coo(idx, f64s(&[0.0, 2.0, 0.0], [3]), [3, 4]).unwrap();
    let e = s.eliminate_zeros().unwrap();
    assert_eq!(e.nnz(), 1);
    assert_eq!(floats(e.to_dense())[4 + 3], 2.0);
    let csr = s.to_sparse_csr().unwrap().eliminate_zeros().unwrap();
    assert_eq!((csr.layout(), csr.nnz()), (Layout::Csr, 1));
    // Blocked layouts are refused by name.
    let bsr = f64s(&data, shape)
        .to_sparse_with(SparseSpec {
            layout: Layout::Bsr,
            dense_dim: 0,
            blocksize: Some([1, 2]),
            index_dtype: DType::I64,
        })
        .unwrap();
    assert!(matches!(bsr.filter(|v| v > 0.0), Err(SparseError::UnsupportedLayout { .. })));
}

#[test]
fn gradcheck_filters() {
    let data = [0.5, 0.0, -2.0, 0.0, 3.0, 0.0, 1.5, -0.25, 0.0, 4.0, 0.0, -1.0];
    let mut rng = Rng(35);
    for kind in [Kind::Coo, Kind::CooDup, Kind::Csr, Kind::Csc] {
        let s = sparse(&data, [3, 4], kind, DType::F64, DType::I64, &ad(), &mut rng);
        gradcheck_all(
            &format!("filter {kind:?}"),
            // The kept set must not change under the perturbation: a threshold far from values.
            |v| flat(rebuild(&s, &v[0]).filter(|x| x > 0.1).unwrap().to_dense()),
            &[GradInput::sparse("s", &s)],
        );
        gradcheck_all(
            &format!("clamp/add {kind:?}"),
            // Bounds away from the stored values (at a bound the one-sided derivatives differ).
            |v| flat(rebuild(&s, &v[0]).clamp_stored(-0.9, 2.0).add_scalar_to_stored(0.5).to_dense()),
            &[GradInput::sparse("s", &s)],
        );
    }
}

/// A larger product on the test device against Flex (a Cube device lists, sorts and sums the
/// partial products there, and computes both gradients as masked products): a hub row and a
/// hub column in `A`, i32 and i64 indices. The patterns equal, the values and the gradients of
/// `sum(C * W)` equal to f32 rounding, the masked product equal to the whole one.
#[test]
fn larger_products_match_flex() {
    let mut rng = Rng(37);
    let (m, k, n) = (120, 300, 90);
    let mut a_data = matrix(m, k, 0.03, &[], &[], &mut rng);
    for v in &mut a_data[..k] {
        *v = rng.value(); // row 0: every column
    }
    for r in 0..m {
        a_data[r * k + 7] = rng.value(); // column 7: every row
    }
    let b_data = matrix(k, n, 0.05, &[], &[], &mut rng);
    for id in [DType::I32, DType::I64] {
        let on = |device: &burn::tensor::Device| {
            let spec = SparseSpec { index_dtype: id, ..SparseSpec::new(Layout::Csr) };
            let a = tensor(&a_data, [m, k], DType::F32, device).to_sparse_with(spec).unwrap().require_grad();
            let b = tensor(&b_data, [k, n], DType::F32, device).to_sparse_with(spec).unwrap().require_grad();
            let c = sp::spgemm(&a, &b).unwrap();
            let masked = sp::spgemm_with(&a, &b, SpgemmOptions { mask: Some(&c), drop_zeros: false }).unwrap();
            let w: Vec<f64> = (0..c.nnz()).map(|i| ((i * 7919) % 13) as f64 - 6.0).collect();
            let w = tensor(&w, [c.nnz(), 1], DType::F32, device);
            let grads = (c.values_flat() * w).sum().backward();
            (
                ints(c.crow_indices::<1>().unwrap().inner()),
                ints(c.col_indices::<1>().unwrap().inner()),
                floats(c.values_flat().inner()),
                floats(masked.values_flat().inner()),
                floats(a.values_flat().grad(&grads).unwrap()),
                floats(b.values_flat().grad(&grads).unwrap()),
            )
        };
        let (got, want) = (on(&ad()), on(&burn::tensor::Device::flex().autodiff()));
        assert_eq!((&got.0, &got.1), (&want.0, &want.1), "{id:?}: the product's pattern");
        for (g, w, what) in
            [(&got.2, &want.2, "values"), (&got.3, &want.3, "masked"), (&got.4, &want.4, "dA"), (&got.5, &want.5, "dB")]
        {
            assert_near(g, w, 1e-5, &format!("{id:?}: {what}"));
        }
    }
}
