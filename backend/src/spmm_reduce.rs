//! SpMM with an extreme in place of the sum (`reduce = "amax" | "amin"`): `out[i, c]` the
//! largest (or smallest) `a[i, j] · x[j, c]` over the stored entries of row `i` (0 for a row
//! without one). One burn extension trait, [`SparseSpmmReduce`], holds the forward impl of each
//! backend and, beside them, the backward rule (JAX style).
//!
//! - Forward: the kernels give the extremes and, for every output element, the storage position
//!   of the entry that won (its arg). Flex runs the host kernels of
//!   `sparsegrad_kernels::spmm_reduce` on its buffers (f32 and f64; f16 and bf16 widened to f32),
//!   Cube devices the kernels of `cube::spmm_reduce` (under burn's `fusion`, on the resolved
//!   tensors); any other backend gets the trait's default, which reads the operands back to the
//!   host, runs the same kernels in f64 and uploads the result.
//! - Backward (`Autodiff`): the gradient goes to the winning entry of every output element alone
//!   (torch's `scatter_reduce` with `amax` / `amin`), `dvalues[p] += g[i, c] · x[col p, c]` and
//!   `dX[col p, c] += g[i, c] · a_p`, from the args the forward saved, by the inner backend's
//!   backward kernel.
//!
//! Behind `sparsegrad-autodiff`'s `matmul::mm_reduce` (`Reduce::Amax`, `Reduce::Amin`); `sum`
//! and `mean` are the plain SpMM. The methods are safe: they take the pattern as a
//! [`CsrOperand`], which the host kernels check before they walk it (once per index storage on
//! Flex) and the device kernels read through checked launches, and they check the dense
//! operands' shapes against it (a panic naming them).

use crate::flex::*;
use crate::operand::{expect_dims, spmm_dims, CsrOperand};
use crate::spmm::with_pattern;
use burn::backend::flex::FlexTensor;
use burn::backend::{
    backend_extension, read_sync,
    tensor::{FloatTensor, IntTensor},
    Backend, Flex, TensorMetadata,
};
use burn::tensor::{DType, TensorData};
use sparsegrad_kernels::alloc::out_len;
use sparsegrad_kernels::pattern::CsrPattern;
use sparsegrad_kernels::spmm_reduce::{spmm_arg_extreme, spmm_arg_extreme_backward};

/// The arg-extreme CSR product, differentiable on `Autodiff`, and the kernels its rule runs.
///
/// Every method takes a CSR pattern `A [m, k]` ([`CsrOperand`]), its `values [nnz]` and
/// `x [k, n]`; a pattern that is not valid CSR, or operands of other shapes, are a panic that
/// names them.
#[backend_extension(Flex, Cube: cfg(feature = "cube"), Autodiff)]
#[diagnostic::on_unimplemented(
    message = "sparsegrad has no kernels for the backend `{Self}` (`SparseSpmmReduce` is not implemented)",
    label = "no sparsegrad kernels for this backend",
    note = "a `Fusion<CubeBackend>` here means that burn's feature `fusion` is on (burn's default features turn it on) and sparsegrad's is off: turn on sparsegrad's `fusion` with `wgpu`, `sparsegrad = {{ version = \"0.1\", features = [\"wgpu\", \"fusion\"] }}` (see `sparsegrad::guide::gpu`)"
)]
pub trait SparseSpmmReduce: Backend {
    /// The extremes `[m, n]` (`max`, else min) of `a[i, j] · x[j, c]` over each row's entries:
    /// the differentiable primitive (`Autodiff` records the rule; the untracked backends run
    /// [`csr_spmm_arg_extreme`](Self::csr_spmm_arg_extreme) and drop the args).
    fn sparse_spmm_arg_extreme(
        #[extension_type] pattern: CsrOperand<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        max: bool,
    ) -> FloatTensor<Self> {
        Self::csr_spmm_arg_extreme(pattern, values, x, max).0
    }

    /// The forward kernel: the extremes of `a[i, j] · x[j, c]` over each row's entries (`max`,
    /// else min) `[m, n]`, and the winning entries' positions `[m, n]` (int64; `nnz` for an
    /// empty row, whose output is 0). Ties go to the first entry in storage order. Untracked
    /// (on `Autodiff`, the default through the host).
    fn csr_spmm_arg_extreme(
        #[extension_type] pattern: CsrOperand<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        max: bool,
    ) -> (FloatTensor<Self>, IntTensor<Self>) {
        default::arg_extreme::<Self>(pattern, values, x, max)
    }

    /// The backward kernel: both gradients from the forward's `arg` and the output gradient
    /// `g [m, n]`, in one flat tensor: `dX`'s `k · n` elements, then the values' `nnz`. `arg
    /// [m, n]` is the forward's: an arg that names no entry of its row passes no gradient.
    fn csr_spmm_arg_extreme_backward(
        #[extension_type] pattern: CsrOperand<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        arg: IntTensor<Self>,
        g: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        default::arg_extreme_backward::<Self>(pattern, values, x, arg, g)
    }
}

/// Defaults for backends without host kernels: the operands read back, the host kernels run
/// in f64, the result uploaded in the values' dtype.
pub(crate) mod default {
    use super::*;

    /// [`SparseSpmmReduce::csr_spmm_arg_extreme`] through the host.
    pub fn arg_extreme<B: Backend>(
        pattern: CsrOperand<B>,
        values: FloatTensor<B>,
        x: FloatTensor<B>,
        max: bool,
    ) -> (FloatTensor<B>, IntTensor<B>) {
        let n = spmm_dims("csr_spmm_arg_extreme", &pattern, &values, &x);
        let device = x.device();
        let (dtype, m, k) = (x.dtype(), pattern.nrows(), pattern.ncols());
        let (crow, col, _, _) = pattern.into_parts();
        let (crow, col) = (host_ints::<B>(crow), host_ints::<B>(col));
        let (v, xv) = (host_floats::<B>(values), host_floats::<B>(x));
        let a = CsrPattern::new(&crow[..], &col[..], k)
            .unwrap_or_else(|e| panic!("csr_spmm_arg_extreme: the pattern is not valid: {e}"));
        let (out, arg) = spmm_arg_extreme(a, &v, &xv, n, max);
        (
            B::float_from_data(TensorData::new(out, [m, n]).convert_dtype(dtype), &device),
            B::int_from_data(TensorData::new(arg, [m, n]), &device),
        )
    }

    /// [`SparseSpmmReduce::csr_spmm_arg_extreme_backward`] through the host.
    pub fn arg_extreme_backward<B: Backend>(
        pattern: CsrOperand<B>,
        values: FloatTensor<B>,
        x: FloatTensor<B>,
        arg: IntTensor<B>,
        g: FloatTensor<B>,
    ) -> FloatTensor<B> {
        let n = backward_dims(&pattern, &values, &x, &arg, &g);
        let device = x.device();
        let (dtype, k) = (x.dtype(), pattern.ncols());
        let (crow, col, _, _) = pattern.into_parts();
        let (crow, col, arg) = (host_ints::<B>(crow), host_ints::<B>(col), host_ints::<B>(arg));
        let (v, xv, gv) = (host_floats::<B>(values), host_floats::<B>(x), host_floats::<B>(g));
        let a = CsrPattern::new(&crow[..], &col[..], k)
            .unwrap_or_else(|e| panic!("csr_spmm_arg_extreme_backward: the pattern is not valid: {e}"));
        let grad = spmm_arg_extreme_backward(a, &v, &xv, &arg, &gv, n);
        let len = grad.len();
        B::float_from_data(TensorData::new(grad, [len]).convert_dtype(dtype), &device)
    }

    /// An Int tensor's elements on the host as i64 (the portable defaults' readback).
    fn host_ints<B: Backend>(t: IntTensor<B>) -> Vec<i64> {
        read_sync(B::int_into_data(t))
            .expect("int tensor readback")
            .convert_dtype(DType::I64)
            .try_into_vec::<i64>()
            .expect("i64")
    }

    /// A Float tensor's elements on the host as f64 (the portable defaults' readback).
    fn host_floats<B: Backend>(t: FloatTensor<B>) -> Vec<f64> {
        read_sync(B::float_into_data(t))
            .expect("float tensor readback")
            .convert_dtype(DType::F64)
            .try_into_vec::<f64>()
            .expect("f64")
    }
}

/// Cube devices: the kernels of `cube::spmm_reduce` (args that name no entry of their row pass
/// no gradient there, rather than a panic).
#[cfg(feature = "cube")]
impl SparseSpmmReduce for crate::cube::CubeBackend {
    fn csr_spmm_arg_extreme(
        pattern: CsrOperand<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        max: bool,
    ) -> (FloatTensor<Self>, IntTensor<Self>) {
        spmm_dims("csr_spmm_arg_extreme", &pattern, &values, &x);
        let (crow, col, _, _) = pattern.into_parts();
        crate::cube::spmm_reduce::arg_extreme(crow, col, values, x, max)
    }

    fn csr_spmm_arg_extreme_backward(
        pattern: CsrOperand<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        arg: IntTensor<Self>,
        g: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        backward_dims(&pattern, &values, &x, &arg, &g);
        let (crow, col, _, _) = pattern.into_parts();
        crate::cube::spmm_reduce::arg_extreme_backward(crow, col, values, x, arg, g)
    }
}

/// Cube devices under burn's `fusion`: the Cube kernels on the resolved tensors (`cube::fused`).
#[cfg(all(feature = "cube", feature = "fusion"))]
impl SparseSpmmReduce for crate::cube::FusedCube {
    fn csr_spmm_arg_extreme(
        pattern: CsrOperand<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        max: bool,
    ) -> (FloatTensor<Self>, IntTensor<Self>) {
        use crate::cube::fused::{float, int, publish, Out};
        let client = values.client.clone();
        let (out, arg) = crate::cube::CubeBackend::csr_spmm_arg_extreme(pattern.map(int), float(values), float(x), max);
        let [out, arg] = publish(&client, [Out::Float(out), Out::Int(arg)]);
        (out, arg)
    }

    fn csr_spmm_arg_extreme_backward(
        pattern: CsrOperand<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        arg: IntTensor<Self>,
        g: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = values.client.clone();
        let out = crate::cube::CubeBackend::csr_spmm_arg_extreme_backward(
            pattern.map(int),
            float(values),
            float(x),
            int(arg),
            float(g),
        );
        publish_float(&client, out)
    }
}

impl SparseSpmmReduce for Flex {
    fn csr_spmm_arg_extreme(
        pattern: CsrOperand<Self>,
        values: FlexTensor,
        x: FlexTensor,
        max: bool,
    ) -> (FlexTensor, FlexTensor) {
        let n = spmm_dims("csr_spmm_arg_extreme", &pattern, &values, &x);
        let (m, k) = (pattern.nrows(), pattern.ncols());
        let (crow, col, _, cell) = pattern.into_parts();
        let (crow, col) = (contiguous(crow), contiguous(col));
        // Each kernel leaves its args here (one of the two runs).
        let args = core::cell::Cell::new(Vec::new());
        let out = with_real(
            [values, x],
            vec![m, n],
            |[v, x]| {
                with_pattern!("csr_spmm_arg_extreme", &cell, &crow, &col, k, |a| {
                    let (out, arg) = spmm_arg_extreme(a, v, x, n, max);
                    args.set(arg);
                    out
                })
            },
            |[v, x]| {
                with_pattern!("csr_spmm_arg_extreme", &cell, &crow, &col, k, |a| {
                    let (out, arg) = spmm_arg_extreme(a, v, x, n, max);
                    args.set(arg);
                    out
                })
            },
        );
        (out, FlexTensor::from_data(TensorData::new(args.into_inner(), [m, n])))
    }

    fn csr_spmm_arg_extreme_backward(
        pattern: CsrOperand<Self>,
        values: FlexTensor,
        x: FlexTensor,
        arg: FlexTensor,
        g: FlexTensor,
    ) -> FlexTensor {
        let n = backward_dims(&pattern, &values, &x, &arg, &g);
        let k = pattern.ncols();
        let (crow, col, _, cell) = pattern.into_parts();
        let (crow, col) = (contiguous(crow), contiguous(col));
        let arg = contiguous(arg);
        let widened;
        let arg: &[i64] = match int_slice(&arg) {
            crate::host::IntSlice::I64(s) => s,
            other => {
                widened = other.to_i64();
                &widened
            }
        };
        let total = vec![out_len(k, n, "spmm_arg_extreme backward: dX")
            .checked_add(col.shape()[0])
            .expect("spmm_arg_extreme backward: gradient length overflows usize")];
        with_real(
            [values, x, g],
            total,
            |[v, x, g]| {
                with_pattern!("csr_spmm_arg_extreme_backward", &cell, &crow, &col, k, |a| spmm_arg_extreme_backward(
                    a, v, x, arg, g, n
                ))
            },
            |[v, x, g]| {
                with_pattern!("csr_spmm_arg_extreme_backward", &cell, &crow, &col, k, |a| spmm_arg_extreme_backward(
                    a, v, x, arg, g, n
                ))
            },
        )
    }
}

/// `n` of the backward's operands (`values [nnz]`, `x [k, n]`, `arg` and `g` `[m, n]`), checked.
fn backward_dims<B: Backend>(
    pattern: &CsrOperand<B>,
    values: &FloatTensor<B>,
    x: &FloatTensor<B>,
    arg: &IntTensor<B>,
    g: &FloatTensor<B>,
) -> usize {
    const OP: &str = "csr_spmm_arg_extreme_backward";
    let n = spmm_dims(OP, pattern, values, x);
    expect_dims(OP, "arg", arg.shape().as_slice(), &[pattern.nrows(), n]);
    expect_dims(OP, "g", g.shape().as_slice(), &[pattern.nrows(), n]);
    n
}

/// The backward rule and the tracked forward.
mod autodiff_impl {
    use super::*;
    use burn::backend::autodiff::{
        checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
        grads::Gradients,
        ops::{Backward, Ops, OpsKind},
        Autodiff,
    };
    use burn::tensor::Slice;

    /// Backward of `sparse_spmm_arg_extreme`; parents `[values, x]`.
    #[derive(Debug)]
    struct ArgExtreme;

    /// The pattern, both operands (for each other's gradient) and the forward's args.
    type ArgExtremeState<B> = (CsrOperand<B>, FloatTensor<B>, FloatTensor<B>, IntTensor<B>);

    impl<B: SparseSpmmReduce> Backward<B, 2> for ArgExtreme {
        type State = ArgExtremeState<B>;

        fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
            let (pattern, values, x, arg) = ops.state;
            let [values_node, x_node] = ops.parents;
            let g = grads.consume::<B>(&ops.node);
            let (nnz, xshape) = (values.shape().num_elements(), x.shape());
            let len = xshape.num_elements();
            // The forward's pattern, operands and args; `g` is shaped as its output.
            let both = B::csr_spmm_arg_extreme_backward(pattern, values, x, arg, g);
            if let Some(node) = x_node {
                let dx =
                    B::float_reshape(B::float_slice(both.clone(), &[Slice::new(0, Some(len as isize), 1)]), xshape);
                grads.register::<B>(node.id, dx);
            }
            if let Some(node) = values_node {
                let dv = B::float_slice(both, &[Slice::new(len as isize, Some((len + nnz) as isize), 1)]);
                grads.register::<B>(node.id, dv);
            }
        }
    }

    impl<B: SparseSpmmReduce, C: CheckpointStrategy> SparseSpmmReduce for Autodiff<B, C> {
        fn sparse_spmm_arg_extreme(
            pattern: CsrOperand<Self>,
            values: FloatTensor<Self>,
            x: FloatTensor<Self>,
            max: bool,
        ) -> FloatTensor<Self> {
            let pattern = pattern.retag::<B>();
            let guards = [values.node(), x.node()];
            let (v, xp) = (values.into_primitive(), x.into_primitive());
            let (out, arg) = B::csr_spmm_arg_extreme(pattern.clone(), v.clone(), xp.clone(), max);
            match ArgExtreme.prepare::<C>(guards).compute_bound().stateful() {
                OpsKind::Tracked(prep) => prep.finish((pattern, v, xp, arg), out),
                OpsKind::UnTracked(prep) => prep.finish(out),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sparsegrad_kernels::pattern::TransposeCell;
    use std::sync::Arc;

    fn ints(v: &[i64], shape: Vec<usize>) -> FlexTensor {
        FlexTensor::from_data(TensorData::new(v.to_vec(), shape))
    }

    fn pattern(crow: &[i64], col: &[i64], k: usize) -> CsrOperand<Flex> {
        CsrOperand::new(ints(crow, vec![crow.len()]), ints(col, vec![col.len()]), k, Arc::new(TransposeCell::new()))
    }

    /// The Flex methods and the portable defaults agree (f64 and f32).
    #[test]
    fn flex_and_defaults_agree() {
        let a = pattern(&[0, 2, 2, 4], &[0, 2, 1, 2], 3);
        for dtype in [DType::F64, DType::F32] {
            let f =
                |v: Vec<f64>, shape: Vec<usize>| FlexTensor::from_data(TensorData::new(v, shape).convert_dtype(dtype));
            let values = f(vec![2.0, -1.0, 3.0, 3.0], vec![4]);
            let x = f(vec![1.0, -2.0, 5.0, 0.5, 5.0, 4.0], vec![3, 2]);
            let g = f(vec![1.0, 10.0, 100.0, 100.0, 2.0, 3.0], vec![3, 2]);
            let host = |t: FlexTensor| t.into_data().convert_dtype(DType::F64).try_into_vec::<f64>().unwrap();
            let hint = |t: FlexTensor| t.into_data().convert_dtype(DType::I64).try_into_vec::<i64>().unwrap();
            for max in [true, false] {
                let (o1, a1) = Flex::csr_spmm_arg_extreme(a.clone(), values.clone(), x.clone(), max);
                let (o2, a2) = default::arg_extreme::<Flex>(a.clone(), values.clone(), x.clone(), max);
                assert_eq!(host(o1), host(o2));
                let (a1, a2) = (hint(a1), hint(a2));
                assert_eq!(a1, a2);
                let arg = ints(&a1, vec![3, 2]);
                let b1 =
                    Flex::csr_spmm_arg_extreme_backward(a.clone(), values.clone(), x.clone(), arg.clone(), g.clone());
                let b2 = default::arg_extreme_backward::<Flex>(a.clone(), values.clone(), x.clone(), arg, g.clone());
                let (b1, b2) = (host(b1), host(b2));
                assert_eq!(b1.len(), 6 + 4);
                assert_eq!(b1, b2);
            }
        }
    }

    /// A pattern that is not valid CSR, or an operand of another shape, is a panic naming it, on
    /// the Flex kernels and the host defaults alike.
    #[test]
    fn bad_operands_are_refused() {
        let f = |v: Vec<f64>, shape: Vec<usize>| FlexTensor::from_data(TensorData::new(v, shape));
        let (values, x) = (f(vec![1.0; 4], vec![4]), f(vec![1.0; 6], vec![3, 2]));
        let message = |run: &dyn Fn()| {
            let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).expect_err("accepted");
            err.downcast::<String>().map(|s| *s).unwrap_or_default()
        };
        let bad_column = pattern(&[0, 2, 2, 4], &[0, 3, 1, 2], 3);
        let m = message(&|| drop(Flex::csr_spmm_arg_extreme(bad_column.clone(), values.clone(), x.clone(), true)));
        assert!(m.contains("not valid") && m.contains("col"), "{m}");
        let m = message(&|| drop(default::arg_extreme::<Flex>(bad_column.clone(), values.clone(), x.clone(), true)));
        assert!(m.contains("not valid"), "{m}");
        let bad_pointers = pattern(&[0, 3, 2, 4], &[0, 2, 1, 2], 3);
        let m = message(&|| drop(Flex::csr_spmm_arg_extreme(bad_pointers.clone(), values.clone(), x.clone(), false)));
        assert!(m.contains("not valid") && m.contains("crow"), "{m}");
        let a = pattern(&[0, 2, 2, 4], &[0, 2, 1, 2], 3);
        let short_x = f(vec![1.0; 4], vec![2, 2]);
        let m = message(&|| drop(Flex::csr_spmm_arg_extreme(a.clone(), values.clone(), short_x.clone(), true)));
        assert!(m.contains("x is [2, 2], expected [3, 2]"), "{m}");
        let short_values = f(vec![1.0; 3], vec![3]);
        let m = message(&|| drop(Flex::csr_spmm_arg_extreme(a.clone(), short_values.clone(), x.clone(), true)));
        assert!(m.contains("values is [3], expected [4]"), "{m}");
        let (arg, g) = (ints(&[0; 4], vec![2, 2]), f(vec![1.0; 6], vec![3, 2]));
        let m = message(&|| {
            drop(Flex::csr_spmm_arg_extreme_backward(a.clone(), values.clone(), x.clone(), arg.clone(), g.clone()))
        });
        assert!(m.contains("arg is [2, 2], expected [3, 2]"), "{m}");
    }
}
