//! Gradients of the matmul family (docs/SPEC.md section 4): `gradcheck` (central differences in f64 on
//! the test device with autodiff, `common_ops::ad()`) of every differentiable op on every layout of the sparse operand,
//! with respect to the sparse values (masked semantics: only stored values are perturbed) and the
//! dense operands, including empty rows, uncoalesced COO, empty operands and batches; and the
//! closed form of `mm`'s gradients (SDDMM over the pattern for the values, `Aᵀ W` for `X`).

use crate::common_ops;

use burn::tensor::DType;
use common_ops::{
    ad, assert_near, batched, device_keeps, f64s, flat, floats, gradcheck_all, index_on, ints, matrix, rebuild,
    split_entries, template_pairs, Kind, Rng,
};
use sparsegrad::gradcheck::GradInput;
use sparsegrad::prelude::*;
use sparsegrad::sparse::{self as sp};

/// The closed-form gradients agree to f64 precision.
fn assert_close(actual: &[f64], expected: &[f64], what: &str) {
    assert_near(actual, expected, 1e-10, what);
}

/// A trait of this module rather than an inherent `impl Kind`, which `matmul` (the same test
/// binary) also has, with another signature.
trait Fitted {
    fn fitted(self, blocks: [usize; 2]) -> Kind;
}

impl Fitted for Kind {
    fn fitted(self, blocks: [usize; 2]) -> Kind {
        match self {
            Kind::Bsr(_) => Kind::Bsr(blocks),
            Kind::Bsc(_) => Kind::Bsc(blocks),
            k => k,
        }
    }
}

/// For `[4, 6]` operands.
const KINDS: [Kind; 6] = [Kind::Coo, Kind::CooDup, Kind::Csr, Kind::Csc, Kind::Bsr([2, 3]), Kind::Bsc([4, 2])];

fn index_dtype(i: usize) -> DType {
    if i.is_multiple_of(2) {
        DType::I64
    } else {
        DType::I32
    }
}

/// A sparse f64 tensor of `kind` on the autodiff device holding the host matrix `data`; as
/// `CooDup` every entry is split into 2..=3 duplicates, shuffled.
fn sparse<const D: usize>(data: &[f64], shape: [usize; D], kind: Kind, id: DType, rng: &mut Rng) -> SparseTensor<D> {
    let (layout, blocksize) = kind.layout();
    if kind != Kind::CooDup {
        return f64s(data, shape)
            .to_sparse_with(SparseSpec { layout, dense_dim: 0, blocksize, index_dtype: id })
            .unwrap();
    }
    let (idx, vals) = split_entries(data, shape, |rng| 1 + rng.below(2), rng);
    let n = vals.len();
    let s = SparseTensor::coo(index_on(&idx, [D, n], id, &ad()), f64s(&vals, [n]), shape).unwrap();
    assert!(n == 0 || !s.is_coalesced());
    s
}

/// The main `[4, 6]` test matrix (row 1 and column 2 empty) and the all-empty one.
fn operands(rng: &mut Rng) -> [(&'static str, Vec<f64>); 2] {
    [("main", matrix(4, 6, 0.5, &[1], &[2], rng)), ("empty", vec![0.0; 24])]
}

// ---------------------------------------------------------------------------------------------
// Closed forms.

/// The `(row, col)` of every element of `values_flat()` of a 2-D, non-hybrid tensor, from its
/// raw index arrays.
fn positions(s: &SparseTensor<2>) -> Vec<(usize, usize)> {
    match s.compressed_indices_flat() {
        None => {
            let (idx, n) = (ints(s.indices_raw().unwrap()), s.nnz());
            (0..n).map(|j| (idx[j] as usize, idx[n + j] as usize)).collect()
        }
        Some((c, p)) => {
            let (c, p) = (ints(c), ints(p));
            let [br, bc] = s.blocksize().unwrap_or([1, 1]);
            let mut out = vec![];
            for (j, &plain) in p.iter().enumerate() {
                let seg = (0..c.len() - 1).find(|&g| c[g + 1] as usize > j).unwrap();
                let (brow, bcol) =
                    if s.layout().compresses_rows() { (seg, plain as usize) } else { (plain as usize, seg) };
                for i in 0..br {
                    for jj in 0..bc {
                        out.push((brow * br + i, bcol * bc + jj));
                    }
                }
            }
            out
        }
    }
}

#[test]
fn mm_gradients_are_sddmm_on_the_pattern_and_a_transpose_product() {
    let mut rng = Rng(21);
    let (m, k, n) = (4, 6, 5);
    for (i, kind) in KINDS.into_iter().enumerate() {
        for (which, data) in operands(&mut rng) {
            let what = format!("{kind:?} {which}");
            let a = sparse(&data, [m, k], kind, index_dtype(i), &mut rng).require_grad();
            let (xs, ws) = (rng.values(k * n), rng.values(m * n));
            let x = f64s(&xs, [k, n]).require_grad();
            let grads = (sp::mm(&a, x.clone()) * f64s(&ws, [m, n])).sum().backward();
            // d/dvalues = (W Xᵀ)[row, col] at each stored value, duplicates included.
            let expected: Vec<f64> =
                positions(&a).into_iter().map(|(r, c)| (0..n).map(|t| ws[r * n + t] * xs[c * n + t]).sum()).collect();
            let dv = a.values_flat().grad(&grads).map(floats).unwrap_or_default();
            assert_close(&dv, &expected, &format!("{what}: d/dvalues"));
            // d/dX = Aᵀ W.
            let dense_a = f64s(&data, [m, k]);
            let expected_dx = floats(dense_a.clone().transpose().matmul(f64s(&ws, [m, n])));
            assert_close(&floats(x.grad(&grads).expect("X gradient")), &expected_dx, &format!("{what}: d/dX"));

            // dense @ sparse: Z = Xl A, d/dA = (Xlᵀ W2) gathered, d/dXl = W2 Aᵀ.
            let a = a.detach().require_grad();
            let (ls, w2) = (rng.values(n * m), rng.values(n * k));
            let xl = f64s(&ls, [n, m]).require_grad();
            let grads = (sp::mm_dense_sparse(xl.clone(), &a) * f64s(&w2, [n, k])).sum().backward();
            let expected: Vec<f64> =
                positions(&a).into_iter().map(|(r, c)| (0..n).map(|t| ls[t * m + r] * w2[t * k + c]).sum()).collect();
            let dv = a.values_flat().grad(&grads).map(floats).unwrap_or_default();
            assert_close(&dv, &expected, &format!("{what}: dense@sparse d/dvalues"));
            let expected_dx = floats(f64s(&w2, [n, k]).matmul(dense_a.transpose()));
            assert_close(
                &floats(xl.grad(&grads).expect("Xl gradient")),
                &expected_dx,
                &format!("{what}: dense@sparse d/dXl"),
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// gradcheck, 2-D.

#[test]
fn gradcheck_mm_sparse_dense_and_dense_sparse() {
    let mut rng = Rng(22);
    let (m, k, n) = (4, 6, 3);
    for (i, kind) in KINDS.into_iter().enumerate() {
        for (which, data) in operands(&mut rng) {
            let a = sparse(&data, [m, k], kind, index_dtype(i), &mut rng);
            let name = format!("{kind:?} {which}");
            let x = f64s(&rng.values(k * n), [k, n]);
            gradcheck_all(
                &format!("mm {name}"),
                |v| flat(sp::mm(&rebuild(&a, &v[0]), v[1].clone().reshape([k, n]))),
                &[GradInput::sparse("values", &a), GradInput::dense("x", &x)],
            );
            let xl = f64s(&rng.values(n * m), [n, m]);
            gradcheck_all(
                &format!("mm_dense_sparse {name}"),
                |v| flat(sp::mm_dense_sparse(v[0].clone().reshape([n, m]), &rebuild(&a, &v[1]))),
                &[GradInput::dense("x", &xl), GradInput::sparse("values", &a)],
            );
        }
    }
    // n past the 64-column tile: the kernels' tiled paths in both directions and the SDDMM.
    let data = matrix(m, k, 0.5, &[1], &[], &mut rng);
    for kind in [Kind::Csr, Kind::Csc] {
        let a = sparse(&data, [m, k], kind, DType::I32, &mut rng);
        let x = f64s(&rng.values(k * 70), [k, 70]);
        gradcheck_all(
            &format!("mm {kind:?} n=70"),
            |v| flat(sp::mm(&rebuild(&a, &v[0]), v[1].clone().reshape([k, 70]))),
            &[GradInput::sparse("values", &a), GradInput::dense("x", &x)],
        );
    }
}

#[test]
fn gradcheck_addmm_mv_smm_hspmm() {
    let mut rng = Rng(23);
    let (m, k, n) = (4, 6, 3);
    for (i, kind) in KINDS.into_iter().enumerate() {
        for (which, data) in operands(&mut rng) {
            let a = sparse(&data, [m, k], kind, index_dtype(i), &mut rng);
            let name = format!("{kind:?} {which}");
            let (input, x, vec) =
                (f64s(&rng.values(m * n), [m, n]), f64s(&rng.values(k * n), [k, n]), f64s(&rng.values(k), [k]));
            let vals = GradInput::sparse("values", &a);
            // On the device, each of the five checks on every other layout (`device_keeps`).
            let keeps = |check: usize| device_keeps(i + check, 2);
            if keeps(0) {
                gradcheck_all(
                    &format!("addmm {name}"),
                    |v| {
                        flat(sp::addmm(
                            v[0].clone().reshape([m, n]),
                            &rebuild(&a, &v[1]),
                            v[2].clone().reshape([k, n]),
                            0.5,
                            -2.0,
                        ))
                    },
                    &[GradInput::dense("input", &input), vals.clone(), GradInput::dense("x", &x)],
                );
            }
            if keeps(1) {
                gradcheck_all(
                    &format!("mv {name}"),
                    |v| sp::mv(&rebuild(&a, &v[0]), v[1].clone()),
                    &[vals.clone(), GradInput::dense("v", &vec)],
                );
            }
            if keeps(2) {
                gradcheck_all(
                    &format!("smm {name}"),
                    |v| flat(sp::smm(&rebuild(&a, &v[0]), v[1].clone().reshape([k, n])).to_dense()),
                    &[vals.clone(), GradInput::dense("x", &x)],
                );
            }
            if keeps(3) {
                gradcheck_all(
                    &format!("hspmm {name}"),
                    |v| flat(sp::hspmm(&rebuild(&a, &v[0]), v[1].clone().reshape([k, n])).to_dense()),
                    &[vals.clone(), GradInput::dense("x", &x)],
                );
            }
            // hspmm's stored rows themselves.
            if keeps(4) {
                gradcheck_all(
                    &format!("hspmm values {name}"),
                    |v| flat(sp::hspmm(&rebuild(&a, &v[0]), v[1].clone().reshape([k, n])).values_flat()),
                    &[vals, GradInput::dense("x", &x)],
                );
            }
        }
    }
}

/// `addmm` with `beta = 0` (torch ignores the input's values then): gradcheck through every
/// operand, the input's gradient included, whole or broadcast.
#[test]
fn gradcheck_addmm_with_zero_beta() {
    let mut rng = Rng(31);
    let (m, k, n) = (4, 6, 3);
    let data = matrix(m, k, 0.5, &[1], &[], &mut rng);
    for (kind, input_rows) in [(Kind::Csr, m), (Kind::CooDup, 1), (Kind::Csc, m)] {
        let a = sparse(&data, [m, k], kind, DType::I64, &mut rng);
        let (input, x) = (f64s(&rng.values(input_rows * n), [input_rows, n]), f64s(&rng.values(k * n), [k, n]));
        gradcheck_all(
            &format!("addmm beta 0 {kind:?} input [{input_rows}, {n}]"),
            |v| {
                flat(sp::addmm(
                    v[0].clone().reshape([input_rows, n]),
                    &rebuild(&a, &v[1]),
                    v[2].clone().reshape([k, n]),
                    0.0,
                    -2.0,
                ))
            },
            &[GradInput::dense("input", &input), GradInput::sparse("values", &a), GradInput::dense("x", &x)],
        );
    }
}

/// With `beta = 0` the input's gradient is zeros of its shape, as torch's (burn would give none
/// for an input the graph never used), whole or broadcast, and a NaN in it reaches neither the
/// result nor any gradient; the other operands' gradients are those of `alpha * (A @ X)`.
#[test]
fn addmm_with_zero_beta_gives_the_input_a_zero_gradient() {
    let a = SparseTensor::<2>::csr_from_vecs(vec![0i64, 1, 3], vec![1, 0, 1], vec![2.0f64, 3.0, -1.0], [2, 2], &ad())
        .unwrap()
        .require_grad();
    for input_shape in [[2, 2], [1, 2]] {
        let len = input_shape[0] * input_shape[1];
        let input = f64s(&vec![f64::NAN; len], input_shape).require_grad();
        let x = f64s(&[1.0, 2.0, 3.0, 4.0], [2, 2]).require_grad();
        let y = sp::addmm(input.clone(), &a, x.clone(), 0.0, 0.5);
        // 0.5 * [2 * (3, 4), 3 * (1, 2) - (3, 4)]
        assert_eq!(floats(y.clone()), vec![3.0, 4.0, 0.0, 1.0], "input {input_shape:?}");
        let grads = y.sum().backward();
        let g = input.grad(&grads).expect("addmm with beta = 0 leaves the input a gradient");
        assert_eq!(g.dims(), input_shape);
        assert_eq!(floats(g), vec![0.0; len], "input {input_shape:?}");
        // d/dX[c, t] of sum(0.5 A X) = 0.5 * sum_r A[r, c]: A's column sums (3 and 1), halved.
        assert_eq!(floats(x.grad(&grads).expect("X gradient")), vec![1.5, 1.5, 0.5, 0.5]);
        // d/dA[r, c] = 0.5 * sum_t X[c, t]: X's row sums (3 and 7), halved.
        assert_eq!(floats(a.values_flat().grad(&grads).expect("values gradient")), vec![3.5, 1.5, 3.5]);
    }
}

#[test]
fn gradcheck_sspaddmm() {
    let mut rng = Rng(24);
    let (m, k, n) = (4, 6, 3);
    for (i, kind) in KINDS.into_iter().enumerate() {
        for (which, data) in operands(&mut rng) {
            let mat1 = sparse(&data, [m, k], kind, index_dtype(i), &mut rng);
            let input_data = matrix(m, n, 0.4, &[3], &[], &mut rng);
            let input = sparse(&input_data, [m, n], kind.fitted([2, 1]), index_dtype(i + 1), &mut rng);
            let x = f64s(&rng.values(k * n), [k, n]);
            gradcheck_all(
                &format!("sspaddmm {kind:?} {which}"),
                |v| {
                    flat(
                        sp::sspaddmm(
                            &rebuild(&input, &v[0]),
                            &rebuild(&mat1, &v[1]),
                            v[2].clone().reshape([k, n]),
                            0.25,
                            1.5,
                        )
                        .to_dense(),
                    )
                },
                &[GradInput::sparse("input", &input), GradInput::sparse("mat1", &mat1), GradInput::dense("x", &x)],
            );
        }
    }
}

#[test]
fn gradcheck_sparse_sparse_mm() {
    let mut rng = Rng(25);
    let (m, k, n) = (4, 6, 4);
    let b_kinds = [Kind::Coo, Kind::CooDup, Kind::Csr, Kind::Csc, Kind::Bsr([3, 2]), Kind::Bsc([2, 4])];
    let b_data = matrix(k, n, 0.5, &[4], &[1], &mut rng);
    // Every pair of layouts on the host; each beside itself and its neighbour on the device.
    for (i, j) in template_pairs(KINDS.len()) {
        let (ka, kb) = (KINDS[i], b_kinds[j]);
        let ops = operands(&mut rng);
        for (which, data) in &ops {
            let a = sparse(data, [m, k], ka, index_dtype(i), &mut rng);
            let b = sparse(&b_data, [k, n], kb, index_dtype(j), &mut rng);
            gradcheck_all(
                &format!("mm {ka:?} @ {kb:?} {which}"),
                |v| flat(sp::mm(&rebuild(&a, &v[0]), &rebuild(&b, &v[1])).to_dense()),
                &[GradInput::sparse("a", &a), GradInput::sparse("b", &b)],
            );
        }
    }
}

#[test]
fn gradcheck_sampled_addmm() {
    let mut rng = Rng(26);
    let (m, kd, n) = (4, 5, 6);
    for (i, kind) in KINDS.into_iter().enumerate() {
        for (which, data) in operands(&mut rng) {
            // input [4, 6] is the pattern; mat1 [4, 5], mat2 [5, 6].
            let input = sparse(&data, [m, n], kind, index_dtype(i), &mut rng);
            let (a, b) = (f64s(&rng.values(m * kd), [m, kd]), f64s(&rng.values(kd * n), [kd, n]));
            gradcheck_all(
                &format!("sampled_addmm {kind:?} {which}"),
                |v| {
                    flat(
                        sp::sampled_addmm(
                            &rebuild(&input, &v[0]),
                            v[1].clone().reshape([m, kd]),
                            v[2].clone().reshape([kd, n]),
                            0.5,
                            2.0,
                        )
                        .to_dense(),
                    )
                },
                &[GradInput::sparse("input", &input), GradInput::dense("mat1", &a), GradInput::dense("mat2", &b)],
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// gradcheck, batched.

const BATCH_KINDS: [Kind; 6] = [Kind::Coo, Kind::CooDup, Kind::Csr, Kind::Csc, Kind::Bsr([1, 2]), Kind::Bsc([1, 2])];

#[test]
fn gradcheck_batched_sampled_addmm() {
    let mut rng = Rng(27);
    let (bt, m, kd, n) = (2, 3, 3, 4);
    for (i, kind) in BATCH_KINDS.into_iter().enumerate() {
        for per_batch in [3, 0] {
            let data = batched(bt, m, n, [1, 2], per_batch, (1, 2), &mut rng);
            let input = sparse(&data, [bt, m, n], kind, index_dtype(i), &mut rng);
            let (a, b) = (f64s(&rng.values(bt * m * kd), [bt, m, kd]), f64s(&rng.values(bt * kd * n), [bt, kd, n]));
            gradcheck_all(
                &format!("batched sampled_addmm {kind:?} nse={}", 2 * per_batch),
                |v| {
                    flat(
                        sp::sampled_addmm(
                            &rebuild(&input, &v[0]),
                            v[1].clone().reshape([bt, m, kd]),
                            v[2].clone().reshape([bt, kd, n]),
                            -1.0,
                            0.5,
                        )
                        .to_dense(),
                    )
                },
                &[GradInput::sparse("input", &input), GradInput::dense("mat1", &a), GradInput::dense("mat2", &b)],
            );
        }
    }
}

#[test]
fn gradcheck_bmm() {
    let mut rng = Rng(28);
    let (bt, m, k, n) = (2, 3, 4, 2);
    for (i, kind) in BATCH_KINDS.into_iter().enumerate() {
        for per_batch in [3, 0] {
            let data = batched(bt, m, k, [1, 2], per_batch, (0, 1), &mut rng);
            let a = sparse(&data, [bt, m, k], kind, index_dtype(i), &mut rng);
            let x = f64s(&rng.values(bt * k * n), [bt, k, n]);
            gradcheck_all(
                &format!("bmm {kind:?} nse={}", 2 * per_batch),
                |v| flat(sp::bmm(&rebuild(&a, &v[0]), v[1].clone().reshape([bt, k, n]))),
                &[GradInput::sparse("values", &a), GradInput::dense("x", &x)],
            );
        }
    }
}

#[test]
fn gradients_when_only_one_operand_is_tracked() {
    let mut rng = Rng(29);
    let (m, k, n) = (4, 6, 3);
    let data = matrix(m, k, 0.5, &[1], &[], &mut rng);
    for kind in [Kind::Csr, Kind::Csc, Kind::CooDup] {
        let (xs, ws) = (rng.values(k * n), rng.values(m * n));
        // Only the values.
        let a = sparse(&data, [m, k], kind, DType::I64, &mut rng).require_grad();
        let grads = (sp::mm(&a, f64s(&xs, [k, n])) * f64s(&ws, [m, n])).sum().backward();
        let expected: Vec<f64> =
            positions(&a).into_iter().map(|(r, c)| (0..n).map(|t| ws[r * n + t] * xs[c * n + t]).sum()).collect();
        assert_close(
            &floats(a.values_flat().grad(&grads).expect("values gradient")),
            &expected,
            &format!("{kind:?}: values only"),
        );
        // Only X.
        let a = a.detach();
        let x = f64s(&xs, [k, n]).require_grad();
        let grads = (sp::mm(&a, x.clone()) * f64s(&ws, [m, n])).sum().backward();
        let expected = floats(f64s(&data, [m, k]).transpose().matmul(f64s(&ws, [m, n])));
        assert_close(&floats(x.grad(&grads).expect("X gradient")), &expected, &format!("{kind:?}: X only"));
    }
}
