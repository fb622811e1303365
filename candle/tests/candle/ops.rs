//! Every op against a dense candle reference, in f32 and f64, on COO (coalesced and not) and
//! CSR operands with empty rows and with no entries: the forward values, the gradient of the
//! sparse values (the dense reference's gradient read at the stored entries) and of the dense
//! operands.

use crate::common;

use candle_core::{DType, Device, Tensor, Var};
use common::*;
use sparsegrad_candle::{addmm, log_softmax, mm, sampled_addmm, softmax, SparseTensor};

const DTYPES: [DType; 2] = [DType::F32, DType::F64];

/// The layouts a case is tried in: CSR, COO as given and COO uncoalesced (shuffled, repeats).
fn operands(case: &Case, rng: &mut Rng) -> Vec<(Case, &'static str)> {
    vec![(case.clone(), "csr"), (case.clone(), "coo"), (uncoalesced(case, rng), "coo")]
}

fn build(case: &Case, layout: &str, values: Tensor) -> SparseTensor {
    if layout == "csr" {
        case.csr(values)
    } else {
        case.coo(values)
    }
}

#[test]
fn mm_and_its_gradients_match_dense_matmul() {
    let mut rng = Rng(11);
    for base in cases(1) {
        for (case, layout) in operands(&base, &mut rng) {
            for dtype in DTYPES {
                let what = format!("{} {layout} {dtype:?}", case.name);
                let [m, k] = case.shape;
                let n = 5;
                let (xs, ws) = (rng.values(k * n), rng.values(m * n));
                let v = Var::from_tensor(&tensor(&case.values, &[case.nnz()], dtype)).unwrap();
                let x = Var::from_tensor(&tensor(&xs, &[k, n], dtype)).unwrap();
                let w = tensor(&ws, &[m, n], dtype);
                let a = build(&case, layout, v.as_tensor().clone());
                let out = mm(&a, x.as_tensor()).unwrap();
                let grads = (&out * &w).unwrap().sum_all().unwrap().backward().unwrap();

                let ad = Var::from_tensor(&tensor(&case.dense(), &[m, k], dtype)).unwrap();
                let xr = Var::from_tensor(&tensor(&xs, &[k, n], dtype)).unwrap();
                let reference = ad.as_tensor().matmul(xr.as_tensor()).unwrap();
                let rgrads = (&reference * &w).unwrap().sum_all().unwrap().backward().unwrap();

                let t = tol(dtype);
                assert_close(&host(&out), &host(&reference), t, &format!("{what}: mm"));
                let dv = grads.get(&v).map(host).unwrap_or_default();
                assert_close(
                    &dv,
                    &at_entries(&host(rgrads.get(&ad).unwrap()), &case),
                    t,
                    &format!("{what}: d/dvalues"),
                );
                assert_close(
                    &host(grads.get(&x).unwrap()),
                    &host(rgrads.get(&xr).unwrap()),
                    t,
                    &format!("{what}: d/dX"),
                );
            }
        }
    }
}

#[test]
fn addmm_scales_broadcasts_and_ignores_input_at_beta_zero() {
    let mut rng = Rng(12);
    for case in cases(2) {
        for dtype in DTYPES {
            let what = format!("{} {dtype:?}", case.name);
            let [m, k] = case.shape;
            let n = 3;
            let (xs, bias, ws) = (rng.values(k * n), rng.values(n), rng.values(m * n));
            let v = Var::from_tensor(&tensor(&case.values, &[case.nnz()], dtype)).unwrap();
            let x = Var::from_tensor(&tensor(&xs, &[k, n], dtype)).unwrap();
            let b = Var::from_tensor(&tensor(&bias, &[n], dtype)).unwrap();
            let w = tensor(&ws, &[m, n], dtype);
            let a = case.csr(v.as_tensor().clone());
            let out = addmm(b.as_tensor(), &a, x.as_tensor(), 0.5, -2.0).unwrap();
            let grads = (&out * &w).unwrap().sum_all().unwrap().backward().unwrap();

            let ad = Var::from_tensor(&tensor(&case.dense(), &[m, k], dtype)).unwrap();
            let product = ad.as_tensor().matmul(&tensor(&xs, &[k, n], dtype)).unwrap();
            let reference = (b.as_tensor().broadcast_as((m, n)).unwrap().affine(0.5, 0.0).unwrap()
                + product.affine(-2.0, 0.0).unwrap())
            .unwrap();
            let rgrads = (&reference * &w).unwrap().sum_all().unwrap().backward().unwrap();
            let t = tol(dtype);
            assert_close(&host(&out), &host(&reference), t, &format!("{what}: addmm"));
            let dv = grads.get(&v).map(host).unwrap_or_default();
            assert_close(&dv, &at_entries(&host(rgrads.get(&ad).unwrap()), &case), t, &format!("{what}: d/dvalues"));
            // d/dbias = beta * column sums of W.
            let dbias: Vec<f64> = (0..n).map(|c| 0.5 * (0..m).map(|r| ws[r * n + c]).sum::<f64>()).collect();
            assert_close(&host(grads.get(&b).unwrap()), &dbias, t, &format!("{what}: d/dinput"));

            let nan = Tensor::full(f64::NAN, (m, n), &Device::Cpu).unwrap().to_dtype(dtype).unwrap();
            let ignored = addmm(&nan, &a, x.as_tensor(), 0.0, 1.0).unwrap();
            assert_close(&host(&ignored), &host(&mm(&a, x.as_tensor()).unwrap()), t, &format!("{what}: beta = 0"));
        }
    }
}

#[test]
fn sampled_addmm_matches_the_dense_product_on_the_pattern() {
    let mut rng = Rng(13);
    for base in cases(3) {
        for (case, layout) in operands(&base, &mut rng) {
            for dtype in DTYPES {
                let what = format!("{} {layout} {dtype:?}", case.name);
                let [m, n] = case.shape;
                let d = 4;
                let (m1, m2) = (rng.values(m * d), rng.values(d * n));
                let v = Var::from_tensor(&tensor(&case.values, &[case.nnz()], dtype)).unwrap();
                let a = Var::from_tensor(&tensor(&m1, &[m, d], dtype)).unwrap();
                let b = Var::from_tensor(&tensor(&m2, &[d, n], dtype)).unwrap();
                let input = build(&case, layout, v.as_tensor().clone());
                let out = sampled_addmm(&input, a.as_tensor(), b.as_tensor(), 0.75, 1.5).unwrap();
                assert_eq!(out.layout(), sparsegrad_candle::Layout::Csr, "{what}");
                // Weights per output entry, and the dense weight matrix they make.
                let coalesced = canonical(&case);
                let ws = rng.values(coalesced.nnz());
                let wd = Case { values: ws.clone(), ..coalesced.clone() }.dense();
                let loss = (out.values() * tensor(&ws, &[ws.len()], dtype)).unwrap().sum_all().unwrap();
                let grads = loss.backward().unwrap();

                let ar = Var::from_tensor(&tensor(&m1, &[m, d], dtype)).unwrap();
                let br = Var::from_tensor(&tensor(&m2, &[d, n], dtype)).unwrap();
                let product = ar.as_tensor().matmul(br.as_tensor()).unwrap();
                let reference = (tensor(&coalesced.dense(), &[m, n], dtype).affine(0.75, 0.0).unwrap()
                    + product.affine(1.5, 0.0).unwrap())
                .unwrap();
                let rgrads = (&reference * tensor(&wd, &[m, n], dtype)).unwrap().sum_all().unwrap().backward().unwrap();
                let t = tol(dtype);
                assert_close(
                    &host(out.values()),
                    &at_entries(&host(&reference), &coalesced),
                    t,
                    &format!("{what}: values"),
                );
                // No entries: candle drops the graph of the empty result (absent means zero).
                let or_zeros = |g: Option<&Tensor>, n: usize| g.map(host).unwrap_or_else(|| vec![0.0; n]);
                assert_close(
                    &or_zeros(grads.get(&a), m * d),
                    &host(rgrads.get(&ar).unwrap()),
                    t,
                    &format!("{what}: d/dmat1"),
                );
                assert_close(
                    &or_zeros(grads.get(&b), d * n),
                    &host(rgrads.get(&br).unwrap()),
                    t,
                    &format!("{what}: d/dmat2"),
                );
                // d/dinput values = beta * the weight of the coalesced entry each one sums into.
                let dv = grads.get(&v).map(host).unwrap_or_default();
                assert_close(
                    &dv,
                    &at_entries(&wd.iter().map(|w| 0.75 * w).collect::<Vec<_>>(), &case),
                    t,
                    &format!("{what}: d/dinput"),
                );
            }
        }
    }
}

/// The case coalesced (sorted, repeats summed).
fn canonical(case: &Case) -> Case {
    let [m, k] = case.shape;
    let dense = case.dense();
    let mask = case.mask();
    let (mut rows, mut cols, mut values) = (vec![], vec![], vec![]);
    for r in 0..m {
        for c in 0..k {
            if mask[r * k + c] != 0.0 {
                rows.push(r as i64);
                cols.push(c as i64);
                values.push(dense[r * k + c]);
            }
        }
    }
    Case { name: case.name.clone(), shape: case.shape, rows, cols, values }
}

/// Dense softmax along `dim` over the stored elements (the others pushed to -1e30, which
/// underflows to an exact 0 in both dtypes), as a reference.
fn dense_softmax(x: &Tensor, mask: &Tensor, dim: usize, log: bool) -> Tensor {
    let low = Tensor::full(-1e30f64, x.shape(), &Device::Cpu).unwrap().to_dtype(x.dtype()).unwrap();
    let x = mask.where_cond(x, &low).unwrap();
    let shifted = x.broadcast_sub(&x.max_keepdim(dim).unwrap()).unwrap();
    let sum = shifted.exp().unwrap().sum_keepdim(dim).unwrap();
    if log {
        shifted.broadcast_sub(&sum.log().unwrap()).unwrap()
    } else {
        shifted.exp().unwrap().broadcast_div(&sum).unwrap()
    }
}

#[test]
fn softmax_and_log_softmax_match_dense_over_rows_and_columns() {
    let mut rng = Rng(14);
    for base in cases(4) {
        for (case, layout) in operands(&base, &mut rng) {
            for (dtype, dim, log) in
                DTYPES.iter().flat_map(|&t| [(t, 1, false), (t, 1, true), (t, 0, false), (t, 0, true)])
            {
                let what = format!("{} {layout} {dtype:?} dim {dim} log {log}", case.name);
                let [m, k] = case.shape;
                let v = Var::from_tensor(&tensor(&case.values, &[case.nnz()], dtype)).unwrap();
                let input = build(&case, layout, v.as_tensor().clone());
                let out = if log { log_softmax(&input, dim) } else { softmax(&input, dim) }.unwrap();
                assert_eq!(out.layout(), input.layout(), "{what}");
                assert!(out.is_coalesced(), "{what}");
                let coalesced = canonical(&case);
                let ws = rng.values(coalesced.nnz());
                let wd = Case { values: ws.clone(), ..coalesced.clone() }.dense();
                let grads =
                    (out.values() * tensor(&ws, &[ws.len()], dtype)).unwrap().sum_all().unwrap().backward().unwrap();

                let xd = Var::from_tensor(&tensor(&coalesced.dense(), &[m, k], dtype)).unwrap();
                let mask = tensor(&case.mask(), &[m, k], DType::F64).ne(0.0).unwrap();
                let reference = dense_softmax(xd.as_tensor(), &mask, dim, log);
                let rgrads = (&reference * tensor(&wd, &[m, k], dtype)).unwrap().sum_all().unwrap().backward().unwrap();
                let t = tol(dtype) * 10.0;
                assert_close(
                    &host(out.values()),
                    &at_entries(&host(&reference), &coalesced),
                    t,
                    &format!("{what}: values"),
                );
                let dv = grads.get(&v).map(host).unwrap_or_default();
                assert_close(
                    &dv,
                    &at_entries(&host(rgrads.get(&xd).unwrap()), &case),
                    t,
                    &format!("{what}: d/dvalues"),
                );
            }
        }
    }
}

#[test]
fn softmax_of_torch_example_rows() {
    // torch.sparse.softmax's documented semantics: a row's unspecified elements are -inf.
    let dev = Device::Cpu;
    let crow = Tensor::new(&[0i64, 2, 2, 3], &dev).unwrap();
    let col = Tensor::new(&[0i64, 2, 1], &dev).unwrap();
    let s = SparseTensor::csr(&crow, &col, Tensor::new(&[1.0f64, 1.0, 5.0], &dev).unwrap(), [3, 3]).unwrap();
    assert_eq!(softmax(&s, 1).unwrap().values().to_vec1::<f64>().unwrap(), vec![0.5, 0.5, 1.0]);
    let log = log_softmax(&s, 1).unwrap().values().to_vec1::<f64>().unwrap();
    assert_close(&log, &[-(2f64.ln()), -(2f64.ln()), 0.0], 1e-15, "log_softmax");
    let e = softmax(&s, 2).unwrap_err().to_string();
    assert!(e.contains("dim 2 out of range"), "{e}");
}

#[test]
fn ops_refuse_other_dtypes_and_mixed_dtypes_by_name() {
    let case = &cases(5)[0];
    let [m, k] = case.shape;
    let half = case.csr(tensor(&case.values, &[case.nnz()], DType::F16));
    let x16 = tensor(&vec![1.0; k * 2], &[k, 2], DType::F16);
    let e = mm(&half, &x16).unwrap_err().to_string();
    assert!(e.contains("unsupported dtype f16"), "{e}");
    let e = softmax(&half, 1).unwrap_err().to_string();
    assert!(e.contains("sparse_softmax") && e.contains("f16"), "{e}");
    let single = case.csr(tensor(&case.values, &[case.nnz()], DType::F32));
    let e = mm(&single, &tensor(&vec![1.0; k * 2], &[k, 2], DType::F64)).unwrap_err().to_string();
    assert!(e.contains("f32") && e.contains("f64"), "{e}");
    let e = mm(&single, &tensor(&vec![1.0; (k + 1) * 2], &[k + 1, 2], DType::F32)).unwrap_err().to_string();
    assert!(e.contains(&format!("mm: shapes [{m}, {k}] and [{}, 2] cannot be multiplied", k + 1)), "{e}");
    let e = sampled_addmm(
        &single,
        &tensor(&[1.0; 6], &[3, 2], DType::F32),
        &tensor(&[1.0; 6], &[2, 3], DType::F32),
        1.0,
        1.0,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("sampled_addmm") && e.contains("cannot be multiplied"), "{e}");
}

#[test]
fn a_fixed_pattern_gets_no_gradient_and_dense_grads_still_flow() {
    // A constant adjacency (values not a Var) times a trained matrix: only the matrix gets a
    // gradient, A^T G.
    let case = &cases(6)[1];
    let [m, k] = case.shape;
    let mut rng = Rng(6);
    let xs = rng.values(k * 2);
    let a = case.csr(tensor(&case.values, &[case.nnz()], DType::F64));
    let x = Var::from_tensor(&tensor(&xs, &[k, 2], DType::F64)).unwrap();
    let grads = mm(&a, x.as_tensor()).unwrap().sum_all().unwrap().backward().unwrap();
    let dense = case.dense();
    let expected: Vec<f64> = (0..k)
        .flat_map(|c| {
            let s: f64 = (0..m).map(|r| dense[r * k + c]).sum();
            [s, s]
        })
        .collect();
    assert_close(&host(grads.get(&x).unwrap()), &expected, 1e-12, "d/dX");
    assert!(grads.get(a.values()).is_none());
}
