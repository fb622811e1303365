//! `sparse::spdiags` (docs/SPEC.md section 3): every example of the torch.sparse.spdiags documentation (docs/REFERENCES.md)
//! reproduced exactly (reprs translated to our conventions: float values, no `torch.` prefix),
//! CSC output, f32 and f64, errors for repeated offsets, a wrong number of diagonal rows and a
//! blocked layout, and gradcheck with respect to the diagonals.

use crate::common_ops;

use crate::common_ops::gradcheck;
use burn::tensor::{DType, Tensor};
use common_ops::*;
use sparsegrad::gradcheck::{GradInput, GradcheckOptions};
use sparsegrad::prelude::*;

/// torch's `torch.arange(9).reshape(3, 3)`, as floats.
fn arange9(dtype: DType) -> Tensor<2> {
    dense(&[0., 1., 2., 3., 4., 5., 6., 7., 8.], [3, 3], dtype)
}

const LOWER_3X3: [f64; 9] = [0., 0., 0., 3., 1., 0., 6., 4., 2.];

/// "Установка главной и двух первых нижних диагоналей матрицы": offsets `[0, -1, -2]`, COO.
#[test]
fn main_and_two_lower_diagonals_coo() {
    for dtype in [DType::F32, DType::F64] {
        let s = sparse::spdiags(arange9(dtype), &[0, -1, -2], [3, 3], Layout::Coo).unwrap();
        let dtype_suffix = if dtype == DType::F64 { ", dtype=float64" } else { "" };
        assert_eq!(
            format!("{s}"),
            format!(
                "tensor(indices=tensor([[0, 1, 2, 1, 2, 2],
                       [0, 1, 2, 0, 1, 0]]),
       values=tensor([0., 1., 2., 3., 4., 6.]),
       size=(3, 3), nnz=6{dtype_suffix}, layout=sparse_coo)"
            )
        );
        assert_eq!(ints(s.indices_raw().unwrap()), vec![0, 1, 2, 1, 2, 2, 0, 1, 2, 0, 1, 0]);
        assert_eq!(floats(s.values_flat()), vec![0., 1., 2., 3., 4., 6.]);
        assert_eq!(floats(s.to_dense()), LOWER_3X3.to_vec());
        assert!(!s.is_coalesced(), "torch's diagonal-by-diagonal order is not sorted");
    }
}

/// "Изменение структуры данных выходного тензора": the same with `layout=torch.sparse_csr`.
#[test]
fn main_and_two_lower_diagonals_csr() {
    let s = sparse::spdiags(arange9(DType::F32), &[0, -1, -2], [3, 3], Layout::Csr).unwrap();
    assert_eq!(
        format!("{s}"),
        "tensor(crow_indices=tensor([0, 1, 3, 6]),
       col_indices=tensor([0, 0, 1, 0, 1, 2]),
       values=tensor([0., 3., 1., 6., 4., 2.]), size=(3, 3), nnz=6,
       layout=sparse_csr)"
    );
    assert_eq!(ints(s.crow_indices::<1>().unwrap()), vec![0, 1, 3, 6]);
    assert_eq!(ints(s.col_indices::<1>().unwrap()), vec![0, 0, 1, 0, 1, 2]);
    assert_eq!(floats(s.values::<1>().unwrap()), vec![0., 3., 1., 6., 4., 2.]);
    assert_eq!(floats(s.to_dense()), LOWER_3X3.to_vec());
}

/// CSC output: columns compressed, rows sorted within each column.
#[test]
fn main_and_two_lower_diagonals_csc() {
    let s = sparse::spdiags(arange9(DType::F64), &[0, -1, -2], [3, 3], Layout::Csc).unwrap();
    assert_eq!(s.layout(), Layout::Csc);
    assert_eq!(ints(s.ccol_indices::<1>().unwrap()), vec![0, 3, 5, 6]);
    assert_eq!(ints(s.row_indices::<1>().unwrap()), vec![0, 1, 2, 1, 2, 2]);
    assert_eq!(floats(s.values::<1>().unwrap()), vec![0., 3., 6., 1., 4., 2.]);
    assert_eq!(floats(s.to_dense()), LOWER_3X3.to_vec());
}

/// "Установка частичных диагоналей большого выходного тензора": `[[1, 2], [3, 4]]`, offsets
/// `[0, -1]`, shape `(5, 5)`: each diagonal stops at the end of its row of `diagonals`.
#[test]
fn partial_diagonals_of_a_larger_matrix() {
    let diags = dense(&[1., 2., 3., 4.], [2, 2], DType::F32);
    #[rustfmt::skip]
    let expected = vec![
        1., 0., 0., 0., 0.,
        3., 2., 0., 0., 0.,
        0., 4., 0., 0., 0.,
        0., 0., 0., 0., 0.,
        0., 0., 0., 0., 0.,
    ];
    for layout in [Layout::Coo, Layout::Csr, Layout::Csc] {
        let s = sparse::spdiags(diags.clone(), &[0, -1], [5, 5], layout).unwrap();
        assert_eq!((s.layout(), s.nnz()), (layout, 4));
        assert_eq!(floats(s.to_dense()), expected, "{layout}");
    }
}

/// "Указание положительного смещения": offsets `[0, 1, 2]` on `(5, 5)`: a positive offset `k`
/// starts at `diagonals[i][k]`.
#[test]
fn positive_offsets_start_at_column_k() {
    let diags = dense(&[1., 2., 3., 1., 2., 3., 1., 2., 3.], [3, 3], DType::F64);
    #[rustfmt::skip]
    let expected = vec![
        1., 2., 3., 0., 0.,
        0., 2., 3., 0., 0.,
        0., 0., 3., 0., 0.,
        0., 0., 0., 0., 0.,
        0., 0., 0., 0., 0.,
    ];
    for layout in [Layout::Coo, Layout::Csr, Layout::Csc] {
        let s = sparse::spdiags(diags.clone(), &[0, 1, 2], [5, 5], layout).unwrap();
        assert_eq!(floats(s.to_dense()), expected, "{layout}");
    }
}

/// Non-square shapes and offsets past the matrix: the diagonal is clipped by the shape.
#[test]
fn rectangular_shapes_and_far_offsets() {
    let diags = dense(&[1., 2., 3., 4., 5., 6., 7., 8., 9., 10., 11., 12.], [3, 4], DType::F64);
    let s = sparse::spdiags(diags.clone(), &[-1, 2, 9], [3, 4], Layout::Coo).unwrap();
    // Offset -1: (1, 0) = d[0][0], (2, 1) = d[0][1]. Offset 2: (0, 2) = d[1][2], (1, 3) = d[1][3].
    #[rustfmt::skip]
    let expected = vec![
        0., 0., 7., 0.,
        1., 0., 0., 8.,
        0., 2., 0., 0.,
    ];
    assert_eq!(floats(s.to_dense()), expected);
    assert_eq!(s.nnz(), 4);
    let wide = sparse::spdiags(diags, &[0, 1, -2], [2, 6], Layout::Csr).unwrap();
    // Offset 0: columns 0..2; offset 1: columns 1..3 of row [5..8]; offset -2: below the matrix.
    assert_eq!(floats(wide.to_dense()), vec![1., 6., 0., 0., 0., 0., 0., 2., 7., 0., 0., 0.]);
    let empty = sparse::spdiags(Tensor::<2>::zeros([0, 3], (&dev(), DType::F32)), &[], [3, 3], Layout::Csc).unwrap();
    assert_eq!((empty.nnz(), floats(empty.to_dense())), (0, vec![0.0; 9]));
}

#[test]
fn bad_arguments_are_errors() {
    let d = arange9(DType::F32);
    let e = sparse::spdiags(d.clone(), &[0, -1, 0], [3, 3], Layout::Coo).unwrap_err();
    assert_eq!(e.to_string(), "spdiags: offset 0 is repeated (positions 0 and 2)");
    let e = sparse::spdiags(d.clone(), &[0, -1], [3, 3], Layout::Csr).unwrap_err();
    assert_eq!(
        e.to_string(),
        "spdiags: diagonals has 3 rows (shape [3, 3]) but offsets has 2 entries: one row per offset"
    );
    let e = sparse::spdiags(d, &[0, 1, 2], [3, 3], Layout::Bsr).unwrap_err();
    assert_eq!(e, SparseError::UnsupportedLayout { operation: "spdiags", layout: "sparse_bsr" });
}

#[test]
fn gradcheck_with_respect_to_the_diagonals() {
    let mut rng = Rng(1);
    let d: Vec<f64> = (0..12).map(|_| rng.range(-2.0, 2.0)).collect();
    let input = [GradInput { name: "diagonals".into(), values: d }];
    for layout in [Layout::Coo, Layout::Csr, Layout::Csc] {
        let run = |v: &[Tensor<1>]| {
            flat(sparse::spdiags(v[0].clone().reshape([3, 4]), &[1, -2, 0], [4, 5], layout).unwrap().to_dense())
        };
        let report = gradcheck(run, &input, GradcheckOptions::default()).unwrap_or_else(|e| panic!("{layout}: {e}"));
        assert_eq!(report.checked, 12);
    }
}
