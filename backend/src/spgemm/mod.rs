//! SpGEMM: the values of `C = A · B` on a given CSR pattern of `C` (the symbolic pass's, or a
//! mask's). One burn extension trait, [`SparseSpgemm`], holds the forward impl of each backend
//! and, beside them, the backward rule (JAX style).
//!
//! - Forward: Flex runs the host kernels of `sparsegrad-kernels` on its buffers (f32 and f64;
//!   16-bit floats widened to f32), Cube devices the kernels of `cube::spgemm` (under burn's
//!   `fusion`, on the resolved tensors); any other backend gets the trait's defaults, which read
//!   the operands back and run the same kernels.
//! - Backward (`Autodiff`): for the output gradient `G` on `C`'s pattern, d/dA is `(G · Bᵀ)` on
//!   `A`'s pattern and d/dB is `(Aᵀ · G)` on `B`'s pattern, each a masked sparse product by the
//!   inner backend's gradient kernels (never a dense `m x k` or `k x n`).
//!
//! [`product_pattern`] runs the symbolic pass (index algebra, on the host views `host` gives).
//! The methods are safe: they take the patterns as [`CsrOperand`]s, which the host kernels check
//! before they walk them (each call, `checked_csr`) and the device kernels read through checked
//! launches, and they check the value operands' shapes against them (a panic naming them).
//!
//! Here the trait and the macro its implementations share; the implementations are apart:
//! [`default`] (any backend, through the host), `flex` (Flex's buffers), `cube` (the Cube
//! kernels of `cube::spgemm`) and `autodiff_impl` (the tracked forward and the backward rule),
//! and `pattern` the symbolic pass ([`product_pattern`]).

use crate::operand::CsrOperand;
use burn::backend::{
    backend_extension,
    tensor::{FloatTensor, IntTensor},
    Backend,
};

/// Runs `$body` with `$a`, `$b`, `$c` the patterns of six index slices (`A`'s pointers and
/// columns, then `B`'s, then `C`'s) over `$ka`, `$kb`, `$kc` columns: as they are when all six
/// are int64 or all int32, else widened to int64. Each pattern is checked first
/// ([`checked_csr`]): an invalid one is a panic naming it, never a kernel walking it. The
/// `vouched:` form skips the checks; it is for Flex's tensors that `flex::checked_pattern` has
/// just checked (or found checked in their cell), and only those.
macro_rules! with_three {
    ($ints:expr, [$ka:expr, $kb:expr, $kc:expr], |$a:ident, $b:ident, $c:ident| $body:expr) => {
        with_three!(@run checked, $ints, [$ka, $kb, $kc], |$a, $b, $c| $body)
    };
    (vouched: $ints:expr, [$ka:expr, $kb:expr, $kc:expr], |$a:ident, $b:ident, $c:ident| $body:expr) => {
        with_three!(@run vouched, $ints, [$ka, $kb, $kc], |$a, $b, $c| $body)
    };
    (@make checked, $name:literal, $p:expr, $i:expr, $k:expr) => {
        $crate::spgemm::checked_csr($name, $p, $i, $k)
    };
    (@make vouched, $name:literal, $p:expr, $i:expr, $k:expr) => {
        // SAFETY: the `vouched:` form's contract: `flex::checked_pattern` checked these
        // elements (the same slices, or their widened copies) over these columns just before.
        unsafe { sparsegrad_kernels::pattern::CsrPattern::new_unchecked($p, $i, $k) }
    };
    (@run $how:ident, $ints:expr, [$ka:expr, $kb:expr, $kc:expr], |$a:ident, $b:ident, $c:ident| $body:expr) => {{
        let ints: [IntSlice<'_>; 6] = $ints;
        match ints {
            [IntSlice::I64(ap), IntSlice::I64(ai), IntSlice::I64(bp), IntSlice::I64(bi), IntSlice::I64(cp), IntSlice::I64(ci)] => {
                let ($a, $b, $c) = (
                    with_three!(@make $how, "A", ap, ai, $ka),
                    with_three!(@make $how, "B", bp, bi, $kb),
                    with_three!(@make $how, "C", cp, ci, $kc),
                );
                $body
            }
            [IntSlice::I32(ap), IntSlice::I32(ai), IntSlice::I32(bp), IntSlice::I32(bi), IntSlice::I32(cp), IntSlice::I32(ci)] => {
                let ($a, $b, $c) = (
                    with_three!(@make $how, "A", ap, ai, $ka),
                    with_three!(@make $how, "B", bp, bi, $kb),
                    with_three!(@make $how, "C", cp, ci, $kc),
                );
                $body
            }
            other => {
                let w: Vec<Vec<i64>> = other.iter().map(|s| s.to_i64()).collect();
                let ($a, $b, $c) = (
                    with_three!(@make $how, "A", &w[0][..], &w[1][..], $ka),
                    with_three!(@make $how, "B", &w[2][..], &w[3][..], $kb),
                    with_three!(@make $how, "C", &w[4][..], &w[5][..], $kc),
                );
                $body
            }
        }
    }};
}

/// The CSR pattern of `ptr` and `idx` over `ncols` columns, checked: a panic naming the operand
/// and the violation where it is not valid (the tensor layer passes only checked patterns).
pub(crate) fn checked_csr<'a, I: sparsegrad_kernels::index::IndexElem, J: sparsegrad_kernels::index::IndexElem>(
    operand: &str,
    ptr: &'a [I],
    idx: &'a [J],
    ncols: usize,
) -> sparsegrad_kernels::pattern::CsrPattern<'a, I, J> {
    sparsegrad_kernels::pattern::CsrPattern::new(ptr, idx, ncols)
        .unwrap_or_else(|e| panic!("spgemm: the pattern of {operand} is not valid: {e}"))
}

mod autodiff_impl;
#[cfg(feature = "cube")]
mod cube;
pub mod default;
mod flex;
mod pattern;

pub use pattern::{masked_product_pattern_on_device, product_count, product_pattern};

/// The sparse product, differentiable on `Autodiff`, and the kernels its rule runs.
///
/// Every method takes CSR patterns ([`CsrOperand`]s), `A [m, k]`, `B [k, n]` and, where the
/// product's pattern is given, `C [m, n]` (its rows sorted), and value tensors of one value per
/// entry of their pattern; a pattern that is not valid CSR, or operands of other shapes, are a
/// panic that names them. Where the rows of `B` (and of `C`) also hold no repeated column, as a
/// checked CSR tensor's, every backend computes the same values; the Cube kernels find columns
/// by bisection, so on unsorted rows they may miss entries (wrong values, never an access
/// outside the operands).
#[backend_extension(Flex, Cube: cfg(feature = "cube"), Autodiff)]
#[diagnostic::on_unimplemented(
    message = "sparsegrad has no kernels for the backend `{Self}` (`SparseSpgemm` is not implemented)",
    label = "no sparsegrad kernels for this backend",
    note = "a `Fusion<CubeBackend>` here means that burn's feature `fusion` is on (burn's default features turn it on) and sparsegrad's is off: turn on sparsegrad's `fusion` with `wgpu`, `sparsegrad = {{ version = \"0.1\", features = [\"wgpu\", \"fusion\"] }}` (see `sparsegrad::guide::gpu`)"
)]
pub trait SparseSpgemm: Backend {
    /// The values of `A · B` on `C`'s pattern, `[nnz_c]`: the differentiable primitive
    /// (`Autodiff` records the rule; the untracked backends run
    /// [`csr_spgemm`](Self::csr_spgemm)).
    fn sparse_spgemm(
        #[extension_type] a: CsrOperand<Self>,
        a_values: FloatTensor<Self>,
        #[extension_type] b: CsrOperand<Self>,
        b_values: FloatTensor<Self>,
        #[extension_type] c: CsrOperand<Self>,
    ) -> FloatTensor<Self> {
        Self::csr_spgemm(a, a_values, b, b_values, c)
    }

    /// `C = A · B` whole in one pass ([`csr_spgemm_product`](Self::csr_spgemm_product)): `C`'s
    /// row pointers and sorted columns (int64) and its values, differentiable w.r.t. both
    /// operands' values by the same rule as [`sparse_spgemm`](Self::sparse_spgemm) (`Autodiff`
    /// records it; the untracked backends run the kernel).
    #[allow(clippy::type_complexity)]
    fn sparse_spgemm_product(
        #[extension_type] a: CsrOperand<Self>,
        a_values: FloatTensor<Self>,
        #[extension_type] b: CsrOperand<Self>,
        b_values: FloatTensor<Self>,
    ) -> (IntTensor<Self>, IntTensor<Self>, FloatTensor<Self>) {
        Self::csr_spgemm_product(a, a_values, b, b_values)
    }

    /// The forward kernel: the values of `A · B` on `C`'s pattern, `[nnz_c]`. Untracked (on
    /// `Autodiff`, the default through the host).
    fn csr_spgemm(
        #[extension_type] a: CsrOperand<Self>,
        a_values: FloatTensor<Self>,
        #[extension_type] b: CsrOperand<Self>,
        b_values: FloatTensor<Self>,
        #[extension_type] c: CsrOperand<Self>,
    ) -> FloatTensor<Self> {
        default::csr_spgemm::<Self>(a, a_values, b, b_values, c)
    }

    /// The whole-product kernel: `C = A · B`, its pattern and values in one pass over the
    /// products: `C`'s row pointers `[m + 1]` and sorted columns `[nnz_c]` (int64), and its
    /// values `[nnz_c]` in `A`'s float dtype. Panics when the product's memory cannot be had
    /// (callers check the product count first: see [`product_count`]). Untracked (on
    /// `Autodiff`, the default through the host).
    #[allow(clippy::type_complexity)]
    fn csr_spgemm_product(
        #[extension_type] a: CsrOperand<Self>,
        a_values: FloatTensor<Self>,
        #[extension_type] b: CsrOperand<Self>,
        b_values: FloatTensor<Self>,
    ) -> (IntTensor<Self>, IntTensor<Self>, FloatTensor<Self>) {
        default::csr_spgemm_product::<Self>(a, a_values, b, b_values)
    }

    /// The backward kernel for `A`: the gradient w.r.t. `A`'s values of `A · B`'s values on `C`
    /// (`g [nnz_c]`), `(G · Bᵀ)` on `A`'s pattern, `[nnz_a]`.
    fn csr_spgemm_grad_a(
        #[extension_type] a: CsrOperand<Self>,
        #[extension_type] b: CsrOperand<Self>,
        b_values: FloatTensor<Self>,
        #[extension_type] c: CsrOperand<Self>,
        g: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        default::csr_spgemm_grad_a::<Self>(a, b, b_values, c, g)
    }

    /// The backward kernel for `B`: the gradient w.r.t. `B`'s values of `A · B`'s values on `C`
    /// (`g [nnz_c]`), `(Aᵀ · G)` on `B`'s pattern, `[nnz_b]`.
    fn csr_spgemm_grad_b(
        #[extension_type] a: CsrOperand<Self>,
        a_values: FloatTensor<Self>,
        #[extension_type] b: CsrOperand<Self>,
        #[extension_type] c: CsrOperand<Self>,
        g: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        default::csr_spgemm_grad_b::<Self>(a, a_values, b, c, g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::flex::FlexTensor;
    use burn::backend::Flex;
    use burn::tensor::TensorData;
    use sparsegrad_kernels::pattern::TransposeCell;
    use std::sync::Arc;

    fn ints(v: &[i64]) -> FlexTensor {
        FlexTensor::from_data(TensorData::new(v.to_vec(), [v.len()]))
    }

    fn floats(v: &[f64]) -> FlexTensor {
        FlexTensor::from_data(TensorData::new(v.to_vec(), [v.len()]))
    }

    fn host(t: FlexTensor) -> Vec<f64> {
        t.into_data().convert_dtype(burn::tensor::DType::F64).try_into_vec::<f64>().unwrap()
    }

    fn pattern(crow: &[i64], col: &[i64], k: usize) -> CsrOperand<Flex> {
        CsrOperand::new(ints(crow), ints(col), k, Arc::new(TransposeCell::new()))
    }

    /// `A [2, 3]`, `B [3, 2]` and the pattern of their product, `C [2, 2]`.
    fn operands() -> [(CsrOperand<Flex>, FlexTensor); 3] {
        [
            (pattern(&[0, 2, 3], &[0, 2, 1], 3), floats(&[1.0, 2.0, 3.0])),
            (pattern(&[0, 1, 2, 4], &[1, 0, 0, 1], 2), floats(&[4.0, 5.0, 6.0, 7.0])),
            (pattern(&[0, 2, 3], &[0, 1, 0], 2), floats(&[1.0, 1.0, 1.0])),
        ]
    }

    fn message(run: &dyn Fn()) -> String {
        let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).expect_err("accepted");
        err.downcast::<String>().map(|s| *s).unwrap_or_default()
    }

    /// The Flex methods and the portable defaults agree.
    #[test]
    fn flex_and_defaults_agree() {
        let [(a, av), (b, bv), (c, g)] = operands();
        let (crow, col, v1) = Flex::csr_spgemm_product(a.clone(), av.clone(), b.clone(), bv.clone());
        let (crow2, col2, v2) = default::csr_spgemm_product::<Flex>(a.clone(), av.clone(), b.clone(), bv.clone());
        let index =
            |t: FlexTensor| t.into_data().convert_dtype(burn::tensor::DType::I64).try_into_vec::<i64>().unwrap();
        assert_eq!((index(crow), index(col)), (vec![0, 2, 3], vec![0, 1, 0]));
        assert_eq!((index(crow2), index(col2)), (vec![0, 2, 3], vec![0, 1, 0]));
        assert_eq!(host(v1), vec![12.0, 18.0, 15.0]);
        assert_eq!(host(v2), vec![12.0, 18.0, 15.0]);
        let on_c = Flex::csr_spgemm(a.clone(), av.clone(), b.clone(), bv.clone(), c.clone());
        assert_eq!(host(on_c), vec![12.0, 18.0, 15.0]);
        let on_c = default::csr_spgemm::<Flex>(a.clone(), av.clone(), b.clone(), bv.clone(), c.clone());
        assert_eq!(host(on_c), vec![12.0, 18.0, 15.0]);
        let ga = host(Flex::csr_spgemm_grad_a(a.clone(), b.clone(), bv.clone(), c.clone(), g.clone()));
        assert_eq!(
            ga,
            host(default::csr_spgemm_grad_a::<Flex>(a.clone(), b.clone(), bv.clone(), c.clone(), g.clone()))
        );
        let gb = host(Flex::csr_spgemm_grad_b(a.clone(), av.clone(), b.clone(), c.clone(), g.clone()));
        assert_eq!(gb, host(default::csr_spgemm_grad_b::<Flex>(a, av, b, c, g)));
    }

    /// A pattern that is not valid CSR, or an operand of another shape, is a panic naming it, on
    /// the Flex kernels and the host defaults alike.
    #[test]
    fn bad_operands_are_refused() {
        let [(a, av), (b, bv), (c, g)] = operands();
        // A's column 3 past its 3 columns.
        let bad_a = pattern(&[0, 2, 3], &[0, 3, 1], 3);
        let m = message(&|| drop(Flex::csr_spgemm(bad_a.clone(), av.clone(), b.clone(), bv.clone(), c.clone())));
        assert!(m.contains("pattern of A is not valid"), "{m}");
        let m =
            message(&|| drop(default::csr_spgemm::<Flex>(bad_a.clone(), av.clone(), b.clone(), bv.clone(), c.clone())));
        assert!(m.contains("pattern of A is not valid"), "{m}");
        let m = message(&|| drop(Flex::csr_spgemm_product(bad_a.clone(), av.clone(), b.clone(), bv.clone())));
        assert!(m.contains("pattern of A is not valid"), "{m}");
        let m =
            message(&|| drop(default::csr_spgemm_product::<Flex>(bad_a.clone(), av.clone(), b.clone(), bv.clone())));
        assert!(m.contains("pattern of A is not valid"), "{m}");
        // C's row pointers decrease.
        let bad_c = pattern(&[0, 4, 3], &[0, 1, 0], 2);
        let m = message(&|| drop(Flex::csr_spgemm_grad_a(a.clone(), b.clone(), bv.clone(), bad_c.clone(), g.clone())));
        assert!(m.contains("pattern of C is not valid"), "{m}");
        let m = message(&|| {
            drop(default::csr_spgemm_grad_b::<Flex>(a.clone(), av.clone(), b.clone(), bad_c.clone(), g.clone()))
        });
        assert!(m.contains("pattern of C is not valid"), "{m}");
        // B with 2 rows against A's 3 columns.
        let short_b = pattern(&[0, 1, 2], &[1, 0], 2);
        let m = message(&|| drop(Flex::csr_spgemm(a.clone(), av.clone(), short_b.clone(), bv.clone(), c.clone())));
        assert!(m.contains("csr_spgemm: B is [2, 2], expected [3, 2]"), "{m}");
        let m =
            message(&|| drop(default::csr_spgemm_product::<Flex>(a.clone(), av.clone(), short_b.clone(), bv.clone())));
        assert!(m.contains("csr_spgemm_product: B is [2, 2], expected [3, 2]"), "{m}");
        // C over 3 columns for a product of 2.
        let wide_c = pattern(&[0, 2, 3], &[0, 1, 0], 3);
        let m = message(&|| drop(Flex::csr_spgemm(a.clone(), av.clone(), b.clone(), bv.clone(), wide_c.clone())));
        assert!(m.contains("csr_spgemm: C is [2, 3], expected [2, 2]"), "{m}");
        // Values of another length than their pattern's entries.
        let short_values = floats(&[1.0; 3]);
        let m = message(&|| drop(Flex::csr_spgemm(a.clone(), av.clone(), b.clone(), short_values.clone(), c.clone())));
        assert!(m.contains("csr_spgemm: b_values is [3], expected [4]"), "{m}");
        let m = message(&|| {
            drop(default::csr_spgemm::<Flex>(a.clone(), av.clone(), b.clone(), short_values.clone(), c.clone()))
        });
        assert!(m.contains("csr_spgemm: b_values is [3], expected [4]"), "{m}");
        let short_g = floats(&[1.0; 2]);
        let m =
            message(&|| drop(Flex::csr_spgemm_grad_a(a.clone(), b.clone(), bv.clone(), c.clone(), short_g.clone())));
        assert!(m.contains("csr_spgemm_grad_a: g is [2], expected [3]"), "{m}");
        let m = message(&|| {
            drop(default::csr_spgemm_grad_b::<Flex>(a.clone(), short_g.clone(), b.clone(), c.clone(), g.clone()))
        });
        assert!(m.contains("csr_spgemm_grad_b: a_values is [2], expected [3]"), "{m}");
    }
}
