//! SpGEMM behind the burn extension trait [`SpgemmKernels`]: the values of `C = A · B` on a
//! given pattern of `C` (the symbolic pass's, or a mask's), and their gradients w.r.t. the
//! values of `A` and of `B` as masked sparse products; the rule that differentiates them
//! lives in `sparsegrad-autodiff`'s `spgemm`. [`product_pattern`] runs the symbolic pass (index
//! algebra, on the host views `host` gives).
//!
//! Flex runs the host kernels of `sparsegrad-kernels` on its buffers (f32 and f64; 16-bit
//! floats widened to f32); any other backend gets a default that reads the operands back and
//! runs the same kernels. The methods are `unsafe`: they take three patterns as raw index
//! tensors, which the kernels walk through unchecked offsets.

use crate::flex::*;
use crate::host::{with_ints, IntSlice};
use burn::backend::flex::FlexTensor;
use burn::backend::{
    backend_extension, read_sync,
    tensor::{FloatTensor, IntTensor},
    Backend, Flex, TensorMetadata,
};
use burn::tensor::{DType, Int, Tensor, TensorData};
use sparsegrad_kernels::pattern::CsrPattern;
use sparsegrad_kernels::real::Real;
use sparsegrad_kernels::spgemm::{
    spgemm, spgemm_grad_a, spgemm_grad_b, spgemm_numeric, spgemm_products, spgemm_symbolic,
};

/// Runs `$body` with `$a`, `$b`, `$c` the patterns of six index slices (`A`'s pointers and
/// columns, then `B`'s, then `C`'s) over `$ka`, `$kb`, `$kc` columns: as they are when all six
/// are int64 or all int32, else widened to int64.
///
/// Only where the slices are valid patterns over those columns (the contract of the unsafe
/// methods it expands in, or the checked operands of [`product_pattern`]).
macro_rules! with_three {
    ($ints:expr, [$ka:expr, $kb:expr, $kc:expr], |$a:ident, $b:ident, $c:ident| $body:expr) => {{
        let ints: [IntSlice<'_>; 6] = $ints;
        match ints {
            [IntSlice::I64(ap), IntSlice::I64(ai), IntSlice::I64(bp), IntSlice::I64(bi), IntSlice::I64(cp), IntSlice::I64(ci)] => {
                // SAFETY: valid patterns over these columns: this macro's precondition.
                let ($a, $b, $c) = unsafe {
                    (
                        CsrPattern::new_unchecked(ap, ai, $ka),
                        CsrPattern::new_unchecked(bp, bi, $kb),
                        CsrPattern::new_unchecked(cp, ci, $kc),
                    )
                };
                $body
            }
            [IntSlice::I32(ap), IntSlice::I32(ai), IntSlice::I32(bp), IntSlice::I32(bi), IntSlice::I32(cp), IntSlice::I32(ci)] => {
                // SAFETY: as above.
                let ($a, $b, $c) = unsafe {
                    (
                        CsrPattern::new_unchecked(ap, ai, $ka),
                        CsrPattern::new_unchecked(bp, bi, $kb),
                        CsrPattern::new_unchecked(cp, ci, $kc),
                    )
                };
                $body
            }
            other => {
                let w: Vec<Vec<i64>> = other.iter().map(|s| s.to_i64()).collect();
                // SAFETY: as above: the same indices, widened.
                let ($a, $b, $c) = unsafe {
                    (
                        CsrPattern::new_unchecked(&w[0][..], &w[1][..], $ka),
                        CsrPattern::new_unchecked(&w[2][..], &w[3][..], $kb),
                        CsrPattern::new_unchecked(&w[4][..], &w[5][..], $kc),
                    )
                };
                $body
            }
        }
    }};
}

/// The sparse product kernels.
///
/// # Safety
/// Every method takes three CSR patterns, `A [m, k]` (`a_crow [m + 1]`, `a_col`), `B [k, n]`
/// (`b_crow [k + 1]`, `b_col`) and `C [m, n]` (`c_crow [m + 1]`, `c_col`), each valid as
/// `sparsegrad_kernels::pattern::CsrPattern::new` checks it (`k` is `b_crow`'s length less
/// one), `C`'s rows sorted; value tensors hold one value per entry of their pattern. Where the
/// rows of `B` (and of `C`) also hold no repeated column, as a checked CSR tensor's, every
/// backend computes the same values; the Cube kernels find columns by bisection, so on
/// unsorted rows they may miss entries (wrong values, never an access outside the operands).
#[backend_extension(Flex, Cube: cfg(feature = "cube"))]
#[diagnostic::on_unimplemented(
    message = "sparsegrad has no kernels for the backend `{Self}` (`SpgemmKernels` is not implemented)",
    label = "no sparsegrad kernels for this backend",
    note = "a `Fusion<CubeBackend>` here means that burn's feature `fusion` is on (burn's default features turn it on) and sparsegrad's is off: turn on sparsegrad's `fusion` with `wgpu`, `sparsegrad = {{ version = \"0.1\", features = [\"wgpu\", \"fusion\"] }}` (see `sparsegrad::guide::gpu`)"
)]
pub trait SpgemmKernels: Backend {
    /// The values of `A · B` on `C`'s pattern, `[nnz_c]`.
    ///
    /// # Safety
    /// See the trait.
    #[allow(clippy::too_many_arguments)]
    unsafe fn csr_spgemm(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        a_values: FloatTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        b_values: FloatTensor<Self>,
        c_crow: IntTensor<Self>,
        c_col: IntTensor<Self>,
        n: usize,
    ) -> FloatTensor<Self> {
        // SAFETY: this method's contract.
        unsafe { default::csr_spgemm::<Self>(a_crow, a_col, a_values, b_crow, b_col, b_values, c_crow, c_col, n) }
    }

    /// `C = A · B` whole, its pattern and values in one pass over the products: `C`'s row
    /// pointers `[m + 1]` and sorted columns `[nnz_c]` (int64), and its values `[nnz_c]` in
    /// `A`'s float dtype. Panics when the product's memory cannot be had (callers check the
    /// product count first: see [`product_count`]).
    ///
    /// # Safety
    /// `A` and `B` as the trait says (`C` is the output here).
    #[allow(clippy::type_complexity)]
    unsafe fn csr_spgemm_product(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        a_values: FloatTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        b_values: FloatTensor<Self>,
        n: usize,
    ) -> (IntTensor<Self>, IntTensor<Self>, FloatTensor<Self>) {
        // SAFETY: this method's contract.
        unsafe { default::csr_spgemm_product::<Self>(a_crow, a_col, a_values, b_crow, b_col, b_values, n) }
    }

    /// The gradient w.r.t. `A`'s values of `A · B`'s values on `C` (`g [nnz_c]`): `(G · Bᵀ)` on
    /// `A`'s pattern, `[nnz_a]`.
    ///
    /// # Safety
    /// See the trait.
    #[allow(clippy::too_many_arguments)]
    unsafe fn csr_spgemm_grad_a(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        b_values: FloatTensor<Self>,
        c_crow: IntTensor<Self>,
        c_col: IntTensor<Self>,
        g: FloatTensor<Self>,
        n: usize,
    ) -> FloatTensor<Self> {
        // SAFETY: this method's contract.
        unsafe { default::csr_spgemm_grad_a::<Self>(a_crow, a_col, b_crow, b_col, b_values, c_crow, c_col, g, n) }
    }

    /// The gradient w.r.t. `B`'s values of `A · B`'s values on `C` (`g [nnz_c]`): `(Aᵀ · G)` on
    /// `B`'s pattern, `[nnz_b]`.
    ///
    /// # Safety
    /// See the trait.
    #[allow(clippy::too_many_arguments)]
    unsafe fn csr_spgemm_grad_b(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        a_values: FloatTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        c_crow: IntTensor<Self>,
        c_col: IntTensor<Self>,
        g: FloatTensor<Self>,
        n: usize,
    ) -> FloatTensor<Self> {
        // SAFETY: this method's contract.
        unsafe { default::csr_spgemm_grad_b::<Self>(a_crow, a_col, a_values, b_crow, b_col, c_crow, c_col, g, n) }
    }
}

/// The portable bodies of [`SpgemmKernels`]: the operands read back, the host kernels run, the
/// results uploaded (one round trip per call).
///
/// # Safety
/// Every function: the trait's contract.
pub mod default {
    use super::*;

    /// [`SpgemmKernels::csr_spgemm`] on the host.
    ///
    /// # Safety
    /// As the trait method.
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    pub unsafe fn csr_spgemm<B: Backend>(
        a_crow: IntTensor<B>,
        a_col: IntTensor<B>,
        a_values: FloatTensor<B>,
        b_crow: IntTensor<B>,
        b_col: IntTensor<B>,
        b_values: FloatTensor<B>,
        c_crow: IntTensor<B>,
        c_col: IntTensor<B>,
        n: usize,
    ) -> FloatTensor<B> {
        let ints = [a_crow, a_col, b_crow, b_col, c_crow, c_col].map(host_ints::<B>);
        let (device, dtype) = (a_values.device(), a_values.dtype());
        let (av, bv) = (host_floats::<B>(a_values), host_floats::<B>(b_values));
        let k = ints[2].len() - 1;
        let out = with_three!(ints.each_ref().map(|v| IntSlice::I64(&v[..])), [k, n, n], |a, b, c| spgemm_numeric(
            a, &av, b, &bv, c
        ));
        floats_on::<B>(out, dtype, &device)
    }

    /// [`SpgemmKernels::csr_spgemm_product`] on the host.
    ///
    /// # Safety
    /// As the trait method.
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    pub unsafe fn csr_spgemm_product<B: Backend>(
        a_crow: IntTensor<B>,
        a_col: IntTensor<B>,
        a_values: FloatTensor<B>,
        b_crow: IntTensor<B>,
        b_col: IntTensor<B>,
        b_values: FloatTensor<B>,
        n: usize,
    ) -> (IntTensor<B>, IntTensor<B>, FloatTensor<B>) {
        let ints = [a_crow, a_col, b_crow, b_col].map(host_ints::<B>);
        let (device, dtype) = (a_values.device(), a_values.dtype());
        let (av, bv) = (host_floats::<B>(a_values), host_floats::<B>(b_values));
        let k = ints[2].len() - 1;
        // SAFETY: valid patterns `[m, k]` and `[k, n]`: this method's contract.
        let (a, b) = unsafe {
            (
                CsrPattern::new_unchecked(&ints[0][..], &ints[1][..], k),
                CsrPattern::new_unchecked(&ints[2][..], &ints[3][..], n),
            )
        };
        let (crow, col, val) = spgemm(a, &av, b, &bv).unwrap_or_else(|e| panic!("{e}"));
        let ints_on = |v: Vec<i64>| {
            let len = v.len();
            B::int_from_data(TensorData::new(v, [len]), &device)
        };
        (ints_on(crow), ints_on(col), floats_on::<B>(val, dtype, &device))
    }

    /// [`SpgemmKernels::csr_spgemm_grad_a`] on the host.
    ///
    /// # Safety
    /// As the trait method.
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    pub unsafe fn csr_spgemm_grad_a<B: Backend>(
        a_crow: IntTensor<B>,
        a_col: IntTensor<B>,
        b_crow: IntTensor<B>,
        b_col: IntTensor<B>,
        b_values: FloatTensor<B>,
        c_crow: IntTensor<B>,
        c_col: IntTensor<B>,
        g: FloatTensor<B>,
        n: usize,
    ) -> FloatTensor<B> {
        let ints = [a_crow, a_col, b_crow, b_col, c_crow, c_col].map(host_ints::<B>);
        let (device, dtype) = (g.device(), g.dtype());
        let (bv, gv) = (host_floats::<B>(b_values), host_floats::<B>(g));
        let k = ints[2].len() - 1;
        let out = with_three!(ints.each_ref().map(|v| IntSlice::I64(&v[..])), [k, n, n], |a, b, c| spgemm_grad_a(
            a, b, &bv, c, &gv
        ));
        floats_on::<B>(out, dtype, &device)
    }

    /// [`SpgemmKernels::csr_spgemm_grad_b`] on the host.
    ///
    /// # Safety
    /// As the trait method.
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    pub unsafe fn csr_spgemm_grad_b<B: Backend>(
        a_crow: IntTensor<B>,
        a_col: IntTensor<B>,
        a_values: FloatTensor<B>,
        b_crow: IntTensor<B>,
        b_col: IntTensor<B>,
        c_crow: IntTensor<B>,
        c_col: IntTensor<B>,
        g: FloatTensor<B>,
        n: usize,
    ) -> FloatTensor<B> {
        let ints = [a_crow, a_col, b_crow, b_col, c_crow, c_col].map(host_ints::<B>);
        let (device, dtype) = (g.device(), g.dtype());
        let (av, gv) = (host_floats::<B>(a_values), host_floats::<B>(g));
        let k = ints[2].len() - 1;
        let out = with_three!(ints.each_ref().map(|v| IntSlice::I64(&v[..])), [k, n, n], |a, b, c| spgemm_grad_b(
            a, &av, b, c, &gv
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        floats_on::<B>(out, dtype, &device)
    }
}

/// An Int tensor of any backend read back as i64.
fn host_ints<B: Backend>(t: IntTensor<B>) -> Vec<i64> {
    read_sync(B::int_into_data(t)).expect("int tensor readback").iter::<i64>().collect()
}

/// A Float tensor of any backend read back as f64.
fn host_floats<B: Backend>(t: FloatTensor<B>) -> Vec<f64> {
    read_sync(B::float_into_data(t)).expect("float tensor readback").iter::<f64>().collect()
}

/// `v` as a float tensor of `dtype` on `device`.
fn floats_on<B: Backend>(v: Vec<f64>, dtype: DType, device: &B::Device) -> FloatTensor<B> {
    let len = v.len();
    B::float_from_data(TensorData::new(v, [len]).convert_dtype(dtype), device)
}

/// The index slices of six contiguous Flex tensors.
fn flex_ints(t: &[FlexTensor; 6]) -> [IntSlice<'_>; 6] {
    core::array::from_fn(|i| int_slice(&t[i]))
}

/// Cube devices: the kernels of `cube::spgemm` for 32- and 64-bit indices (the portable
/// defaults for others, and for a whole product too large for the device sort).
#[cfg(feature = "cube")]
impl SpgemmKernels for crate::cube::CubeBackend {
    unsafe fn csr_spgemm(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        a_values: FloatTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        b_values: FloatTensor<Self>,
        c_crow: IntTensor<Self>,
        c_col: IntTensor<Self>,
        n: usize,
    ) -> FloatTensor<Self> {
        use crate::cube::spgemm::{takes, values_on};
        if !takes(&[&a_crow, &a_col, &b_crow, &b_col, &c_crow, &c_col]) {
            // SAFETY: this method's contract.
            return unsafe {
                default::csr_spgemm::<Self>(a_crow, a_col, a_values, b_crow, b_col, b_values, c_crow, c_col, n)
            };
        }
        values_on(a_crow, a_col, a_values, b_crow, b_col, b_values, c_crow, c_col)
    }

    unsafe fn csr_spgemm_product(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        a_values: FloatTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        b_values: FloatTensor<Self>,
        n: usize,
    ) -> (IntTensor<Self>, IntTensor<Self>, FloatTensor<Self>) {
        use crate::cube::spgemm::{product, takes};
        if takes(&[&a_crow, &a_col, &b_crow, &b_col]) {
            let args =
                (a_crow.clone(), a_col.clone(), a_values.clone(), b_crow.clone(), b_col.clone(), b_values.clone());
            if let Some(c) = product(args.0, args.1, args.2, args.3, args.4, args.5, n) {
                return c;
            }
        }
        // SAFETY: this method's contract.
        unsafe { default::csr_spgemm_product::<Self>(a_crow, a_col, a_values, b_crow, b_col, b_values, n) }
    }

    unsafe fn csr_spgemm_grad_a(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        b_values: FloatTensor<Self>,
        c_crow: IntTensor<Self>,
        c_col: IntTensor<Self>,
        g: FloatTensor<Self>,
        n: usize,
    ) -> FloatTensor<Self> {
        use crate::cube::spgemm::{gradient_a, takes};
        if !takes(&[&a_crow, &a_col, &b_crow, &b_col, &c_crow, &c_col]) {
            // SAFETY: this method's contract.
            return unsafe {
                default::csr_spgemm_grad_a::<Self>(a_crow, a_col, b_crow, b_col, b_values, c_crow, c_col, g, n)
            };
        }
        gradient_a(a_crow, a_col, b_crow, b_col, b_values, c_crow, c_col, g)
    }

    unsafe fn csr_spgemm_grad_b(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        a_values: FloatTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        c_crow: IntTensor<Self>,
        c_col: IntTensor<Self>,
        g: FloatTensor<Self>,
        n: usize,
    ) -> FloatTensor<Self> {
        use crate::cube::spgemm::{gradient_b, takes};
        if !takes(&[&a_crow, &a_col, &b_crow, &b_col, &c_crow, &c_col]) {
            // SAFETY: this method's contract.
            return unsafe {
                default::csr_spgemm_grad_b::<Self>(a_crow, a_col, a_values, b_crow, b_col, c_crow, c_col, g, n)
            };
        }
        gradient_b(a_crow, a_col, a_values, b_crow, b_col, c_crow, c_col, g)
    }
}

/// Cube devices under burn's `fusion`: the Cube kernels on the resolved tensors (`cube::fused`).
#[cfg(all(feature = "cube", feature = "fusion"))]
impl SpgemmKernels for crate::cube::FusedCube {
    #[allow(clippy::too_many_arguments)]
    unsafe fn csr_spgemm(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        a_values: FloatTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        b_values: FloatTensor<Self>,
        c_crow: IntTensor<Self>,
        c_col: IntTensor<Self>,
        n: usize,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = a_values.client.clone();
        // SAFETY: the same tensors, resolved: this method's contract is the Cube impl's.
        let out = unsafe {
            crate::cube::CubeBackend::csr_spgemm(
                int(a_crow),
                int(a_col),
                float(a_values),
                int(b_crow),
                int(b_col),
                float(b_values),
                int(c_crow),
                int(c_col),
                n,
            )
        };
        publish_float(&client, out)
    }

    unsafe fn csr_spgemm_product(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        a_values: FloatTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        b_values: FloatTensor<Self>,
        n: usize,
    ) -> (IntTensor<Self>, IntTensor<Self>, FloatTensor<Self>) {
        use crate::cube::fused::{float, int, publish, Out};
        let client = a_values.client.clone();
        // SAFETY: the same tensors, resolved: this method's contract is the Cube impl's.
        let (crow, col, values) = unsafe {
            crate::cube::CubeBackend::csr_spgemm_product(
                int(a_crow),
                int(a_col),
                float(a_values),
                int(b_crow),
                int(b_col),
                float(b_values),
                n,
            )
        };
        let [crow, col, values] = publish(&client, [Out::Int(crow), Out::Int(col), Out::Float(values)]);
        (crow, col, values)
    }

    #[allow(clippy::too_many_arguments)]
    unsafe fn csr_spgemm_grad_a(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        b_values: FloatTensor<Self>,
        c_crow: IntTensor<Self>,
        c_col: IntTensor<Self>,
        g: FloatTensor<Self>,
        n: usize,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = g.client.clone();
        // SAFETY: the same tensors, resolved: this method's contract is the Cube impl's.
        let out = unsafe {
            crate::cube::CubeBackend::csr_spgemm_grad_a(
                int(a_crow),
                int(a_col),
                int(b_crow),
                int(b_col),
                float(b_values),
                int(c_crow),
                int(c_col),
                float(g),
                n,
            )
        };
        publish_float(&client, out)
    }

    #[allow(clippy::too_many_arguments)]
    unsafe fn csr_spgemm_grad_b(
        a_crow: IntTensor<Self>,
        a_col: IntTensor<Self>,
        a_values: FloatTensor<Self>,
        b_crow: IntTensor<Self>,
        b_col: IntTensor<Self>,
        c_crow: IntTensor<Self>,
        c_col: IntTensor<Self>,
        g: FloatTensor<Self>,
        n: usize,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = g.client.clone();
        // SAFETY: the same tensors, resolved: this method's contract is the Cube impl's.
        let out = unsafe {
            crate::cube::CubeBackend::csr_spgemm_grad_b(
                int(a_crow),
                int(a_col),
                float(a_values),
                int(b_crow),
                int(b_col),
                int(c_crow),
                int(c_col),
                float(g),
                n,
            )
        };
        publish_float(&client, out)
    }
}

impl SpgemmKernels for Flex {
    unsafe fn csr_spgemm(
        a_crow: FlexTensor,
        a_col: FlexTensor,
        a_values: FlexTensor,
        b_crow: FlexTensor,
        b_col: FlexTensor,
        b_values: FlexTensor,
        c_crow: FlexTensor,
        c_col: FlexTensor,
        n: usize,
    ) -> FlexTensor {
        let t = [a_crow, a_col, b_crow, b_col, c_crow, c_col].map(contiguous);
        let (k, nnz) = (t[2].shape()[0] - 1, t[5].shape()[0]);
        with_real(
            [a_values, b_values],
            vec![nnz],
            |[av, bv]| with_three!(flex_ints(&t), [k, n, n], |a, b, c| spgemm_numeric(a, av, b, bv, c)),
            |[av, bv]| with_three!(flex_ints(&t), [k, n, n], |a, b, c| spgemm_numeric(a, av, b, bv, c)),
        )
    }

    unsafe fn csr_spgemm_product(
        a_crow: FlexTensor,
        a_col: FlexTensor,
        a_values: FlexTensor,
        b_crow: FlexTensor,
        b_col: FlexTensor,
        b_values: FlexTensor,
        n: usize,
    ) -> (FlexTensor, FlexTensor, FlexTensor) {
        let t = [a_crow, a_col, b_crow, b_col].map(contiguous);
        let k = t[2].shape()[0] - 1;
        let ints: [IntSlice<'_>; 4] = core::array::from_fn(|i| int_slice(&t[i]));
        /// The product on one float type's slices, as Flex tensors.
        fn run<T: Real + burn::tensor::Element>(
            ints: [IntSlice<'_>; 4],
            k: usize,
            n: usize,
            av: &[T],
            bv: &[T],
        ) -> (FlexTensor, FlexTensor, Vec<T>) {
            // A's pattern stands in for C's slots, not read.
            let [ap, ai, bp, bi] = ints;
            let (crow, col, val) = with_three!([ap, ai, bp, bi, ap, ai], [k, n, k], |a, b, _c| spgemm(a, av, b, bv))
                .unwrap_or_else(|e| panic!("{e}"));
            let ints_of = |v: Vec<i64>| {
                let len = v.len();
                FlexTensor::from_data(TensorData::new(v, [len]))
            };
            (ints_of(crow), ints_of(col), val)
        }
        let dtype = a_values.dtype();
        let [av, bv] = [a_values, b_values].map(contiguous);
        match dtype {
            DType::F64 => {
                let (crow, col, val) = run(
                    ints,
                    k,
                    n,
                    av.as_slice::<f64>().expect("f64 values"),
                    bv.as_slice::<f64>().expect("f64 values"),
                );
                let len = val.len();
                (crow, col, FlexTensor::from_data(TensorData::new(val, [len])))
            }
            _ => {
                // f32 as it is; 16-bit floats widened to f32 and the result rounded back.
                let widen = |t: FlexTensor| {
                    if t.dtype() == DType::F32 {
                        t
                    } else {
                        FlexTensor::from_data(t.into_data().convert_dtype(DType::F32))
                    }
                };
                let (av, bv) = (widen(av), widen(bv));
                let (crow, col, val) = run(
                    ints,
                    k,
                    n,
                    av.as_slice::<f32>().expect("f32 values"),
                    bv.as_slice::<f32>().expect("f32 values"),
                );
                let len = val.len();
                (crow, col, FlexTensor::from_data(TensorData::new(val, [len]).convert_dtype(dtype)))
            }
        }
    }

    unsafe fn csr_spgemm_grad_a(
        a_crow: FlexTensor,
        a_col: FlexTensor,
        b_crow: FlexTensor,
        b_col: FlexTensor,
        b_values: FlexTensor,
        c_crow: FlexTensor,
        c_col: FlexTensor,
        g: FlexTensor,
        n: usize,
    ) -> FlexTensor {
        let t = [a_crow, a_col, b_crow, b_col, c_crow, c_col].map(contiguous);
        let (k, nnz) = (t[2].shape()[0] - 1, t[1].shape()[0]);
        with_real(
            [b_values, g],
            vec![nnz],
            |[bv, g]| with_three!(flex_ints(&t), [k, n, n], |a, b, c| spgemm_grad_a(a, b, bv, c, g)),
            |[bv, g]| with_three!(flex_ints(&t), [k, n, n], |a, b, c| spgemm_grad_a(a, b, bv, c, g)),
        )
    }

    unsafe fn csr_spgemm_grad_b(
        a_crow: FlexTensor,
        a_col: FlexTensor,
        a_values: FlexTensor,
        b_crow: FlexTensor,
        b_col: FlexTensor,
        c_crow: FlexTensor,
        c_col: FlexTensor,
        g: FlexTensor,
        n: usize,
    ) -> FlexTensor {
        let t = [a_crow, a_col, b_crow, b_col, c_crow, c_col].map(contiguous);
        let (k, nnz) = (t[2].shape()[0] - 1, t[3].shape()[0]);
        with_real(
            [a_values, g],
            vec![nnz],
            |[av, g]| {
                with_three!(flex_ints(&t), [k, n, n], |a, b, c| spgemm_grad_b(a, av, b, c, g))
                    .unwrap_or_else(|e| panic!("{e}"))
            },
            |[av, g]| {
                with_three!(flex_ints(&t), [k, n, n], |a, b, c| spgemm_grad_b(a, av, b, c, g))
                    .unwrap_or_else(|e| panic!("{e}"))
            },
        )
    }
}

/// The pattern of `A · B` (or of `C<M> = A · B`) as row pointers and sorted columns, from the
/// index tensors of CSR operands `A [m, k]` (`a_crow`, `a_col`) and `B [k, n]` and an optional
/// mask `[m, n]` with sorted rows: the symbolic pass, on the host.
///
/// # Safety
/// The index tensors form valid CSR patterns of those shapes (a checked tensor's).
pub unsafe fn product_pattern(
    a: (&Tensor<1, Int>, &Tensor<1, Int>),
    b: (&Tensor<1, Int>, &Tensor<1, Int>),
    mask: Option<(&Tensor<1, Int>, &Tensor<1, Int>)>,
    k: usize,
    n: usize,
) -> crate::Result<(Vec<i64>, Vec<i64>)> {
    // Without a mask, A's own pattern stands in for the mask's slots (not read).
    let (mp, mc) = mask.unwrap_or(a);
    with_ints(a.0, |ap| {
        with_ints(a.1, |ai| {
            with_ints(b.0, |bp| {
                with_ints(b.1, |bi| {
                    with_ints(mp, |cp| {
                        with_ints(mc, |ci| {
                            let kc = if mask.is_some() { n } else { k };
                            with_three!([ap, ai, bp, bi, cp, ci], [k, n, kc], |a, b, c| spgemm_symbolic(
                                a,
                                b,
                                mask.is_some().then_some(c)
                            ))
                        })
                    })
                })
            })
        })
    })
}

/// The pattern of the masked product `C<M> = A · B`, as [`product_pattern`] computes it, on the
/// operands' device where the backend has the kernel (`IndexKernels::masked_product_pattern`:
/// a Cube device, reading back one count): row pointers and columns there, i32 or i64; `None`
/// where the symbolic pass runs on the host.
///
/// # Safety
/// The index tensors form valid CSR patterns with sorted rows: `A [m, k]`, `B [k, n]` and the
/// mask `[m, n]` (checked tensors').
pub unsafe fn masked_product_pattern_on_device(
    a: (&Tensor<1, Int>, &Tensor<1, Int>),
    b: (&Tensor<1, Int>, &Tensor<1, Int>),
    mask: (&Tensor<1, Int>, &Tensor<1, Int>),
) -> Option<(Tensor<1, Int>, Tensor<1, Int>)> {
    crate::index_kernels::device_masked_product_pattern(a, b, mask)
}

/// The number of partial products `a[i, p] * b[p, j]` of `A · B`, from the index tensors of
/// CSR operands `A [m, k]` and `B [k, n]`: a bound on the product's stored entries, for a
/// check of its memory before [`SpgemmKernels::csr_spgemm_product`] runs.
///
/// # Errors
/// An `Allocation` error when the count overflows.
///
/// # Safety
/// The index tensors form valid CSR patterns of those shapes (a checked tensor's).
pub unsafe fn product_count(
    a: (&Tensor<1, Int>, &Tensor<1, Int>),
    b: (&Tensor<1, Int>, &Tensor<1, Int>),
    k: usize,
    n: usize,
) -> crate::Result<u64> {
    if let Some(count) = crate::index_kernels::device_partial_products(a.1, b.0) {
        return Ok(count);
    }
    with_ints(a.0, |ap| {
        with_ints(a.1, |ai| {
            with_ints(b.0, |bp| {
                with_ints(b.1, |bi| {
                    // A's pattern stands in for C's slots (not read).
                    with_three!([ap, ai, bp, bi, ap, ai], [k, n, k], |a, b, _c| spgemm_products(a, b))
                })
            })
        })
    })
}
