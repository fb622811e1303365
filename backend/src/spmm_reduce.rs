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
//! and `mean` are the plain SpMM. The methods are `unsafe` for the reason `SparseSpmm`'s are:
//! they take the pattern as raw index tensors that the kernels walk through unchecked offsets;
//! `matmul` calls them only with the patterns of checked tensors.

use crate::flex::*;
use crate::spmm::with_pattern;
use burn::backend::flex::FlexTensor;
use burn::backend::{
    backend_extension, read_sync,
    tensor::{FloatTensor, IntTensor},
    Backend, Flex, TensorMetadata,
};
use burn::tensor::{DType, TensorData};
use sparsegrad_kernels::alloc::out_len;
use sparsegrad_kernels::pattern::{CsrPattern, TransposeCell};
use sparsegrad_kernels::spmm_reduce::{spmm_arg_extreme, spmm_arg_extreme_backward};

/// The arg-extreme CSR product, differentiable on `Autodiff`, and the kernels its rule runs.
///
/// # Safety
/// Every method takes a CSR pattern `A [m, k]` as `crow [m + 1]` and `col [nnz]`, valid as
/// `CsrPattern::new` checks it, with `k` the rows of `x [k, n]`; `values [nnz]`.
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
    ///
    /// # Safety
    /// See the trait.
    unsafe fn sparse_spmm_arg_extreme(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        max: bool,
    ) -> FloatTensor<Self> {
        // SAFETY: this method's contract (its caller's) is the kernel's.
        unsafe { Self::csr_spmm_arg_extreme(crow, col, values, x, max).0 }
    }

    /// The forward kernel: the extremes of `a[i, j] · x[j, c]` over each row's entries (`max`,
    /// else min) `[m, n]`, and the winning entries' positions `[m, n]` (int64; `nnz` for an
    /// empty row, whose output is 0). Ties go to the first entry in storage order. Untracked
    /// (on `Autodiff`, the default through the host).
    ///
    /// # Safety
    /// See the trait.
    unsafe fn csr_spmm_arg_extreme(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        max: bool,
    ) -> (FloatTensor<Self>, IntTensor<Self>) {
        // SAFETY: this method's contract is the default's.
        unsafe { default::arg_extreme::<Self>(crow, col, values, x, max) }
    }

    /// The backward kernel: both gradients from the forward's `arg` and the output gradient
    /// `g [m, n]`, in one flat tensor: `dX`'s `k · n` elements, then the values' `nnz`.
    ///
    /// # Safety
    /// See the trait; `arg` is the forward's (an entry of its row, or `nnz`: checked anyway).
    unsafe fn csr_spmm_arg_extreme_backward(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        arg: IntTensor<Self>,
        g: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        // SAFETY: this method's contract is the default's.
        unsafe { default::arg_extreme_backward::<Self>(crow, col, values, x, arg, g) }
    }
}

/// Defaults for backends without host kernels: the operands read back, the host kernels run
/// in f64, the result uploaded in the values' dtype.
pub(crate) mod default {
    use super::*;

    /// [`SparseSpmmReduce::csr_spmm_arg_extreme`] through the host.
    ///
    /// # Safety
    /// As the trait method.
    pub unsafe fn arg_extreme<B: Backend>(
        crow: IntTensor<B>,
        col: IntTensor<B>,
        values: FloatTensor<B>,
        x: FloatTensor<B>,
        max: bool,
    ) -> (FloatTensor<B>, IntTensor<B>) {
        let device = x.device();
        let (dtype, [m, n], k) = (x.dtype(), [crow.shape()[0] - 1, x.shape()[1]], x.shape()[0]);
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
    ///
    /// # Safety
    /// As the trait method.
    pub unsafe fn arg_extreme_backward<B: Backend>(
        crow: IntTensor<B>,
        col: IntTensor<B>,
        values: FloatTensor<B>,
        x: FloatTensor<B>,
        arg: IntTensor<B>,
        g: FloatTensor<B>,
    ) -> FloatTensor<B> {
        let device = x.device();
        let (dtype, n, k) = (x.dtype(), x.shape()[1], x.shape()[0]);
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
    unsafe fn csr_spmm_arg_extreme(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        max: bool,
    ) -> (FloatTensor<Self>, IntTensor<Self>) {
        crate::cube::spmm_reduce::arg_extreme(crow, col, values, x, max)
    }

    unsafe fn csr_spmm_arg_extreme_backward(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        arg: IntTensor<Self>,
        g: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        crate::cube::spmm_reduce::arg_extreme_backward(crow, col, values, x, arg, g)
    }
}

/// Cube devices under burn's `fusion`: the Cube kernels on the resolved tensors (`cube::fused`).
#[cfg(all(feature = "cube", feature = "fusion"))]
impl SparseSpmmReduce for crate::cube::FusedCube {
    unsafe fn csr_spmm_arg_extreme(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        max: bool,
    ) -> (FloatTensor<Self>, IntTensor<Self>) {
        use crate::cube::fused::{float, int, publish, Out};
        let client = values.client.clone();
        // SAFETY: the same tensors, resolved: this method's contract (its caller's) is the Cube
        // impl's.
        let (out, arg) = unsafe {
            crate::cube::CubeBackend::csr_spmm_arg_extreme(int(crow), int(col), float(values), float(x), max)
        };
        let [out, arg] = publish(&client, [Out::Float(out), Out::Int(arg)]);
        (out, arg)
    }

    unsafe fn csr_spmm_arg_extreme_backward(
        crow: IntTensor<Self>,
        col: IntTensor<Self>,
        values: FloatTensor<Self>,
        x: FloatTensor<Self>,
        arg: IntTensor<Self>,
        g: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        use crate::cube::fused::{float, int, publish_float};
        let client = values.client.clone();
        // SAFETY: the same tensors, resolved: this method's contract (its caller's) is the Cube
        // impl's.
        let out = unsafe {
            crate::cube::CubeBackend::csr_spmm_arg_extreme_backward(
                int(crow),
                int(col),
                float(values),
                float(x),
                int(arg),
                float(g),
            )
        };
        publish_float(&client, out)
    }
}

impl SparseSpmmReduce for Flex {
    unsafe fn csr_spmm_arg_extreme(
        crow: FlexTensor,
        col: FlexTensor,
        values: FlexTensor,
        x: FlexTensor,
        max: bool,
    ) -> (FlexTensor, FlexTensor) {
        let (crow, col) = (contiguous(crow), contiguous(col));
        // No cell of the pattern's at hand: checked at every call.
        let fresh = TransposeCell::new();
        let m = crow.shape()[0] - 1;
        let [k, n] = [x.shape()[0], x.shape()[1]];
        // Each kernel leaves its args here (one of the two runs).
        let args = core::cell::Cell::new(Vec::new());
        let out = with_real(
            [values, x],
            vec![m, n],
            |[v, x]| {
                with_pattern!("csr_spmm_arg_extreme", &fresh, &crow, &col, k, |a| {
                    let (out, arg) = spmm_arg_extreme(a, v, x, n, max);
                    args.set(arg);
                    out
                })
            },
            |[v, x]| {
                with_pattern!("csr_spmm_arg_extreme", &fresh, &crow, &col, k, |a| {
                    let (out, arg) = spmm_arg_extreme(a, v, x, n, max);
                    args.set(arg);
                    out
                })
            },
        );
        (out, FlexTensor::from_data(TensorData::new(args.into_inner(), [m, n])))
    }

    unsafe fn csr_spmm_arg_extreme_backward(
        crow: FlexTensor,
        col: FlexTensor,
        values: FlexTensor,
        x: FlexTensor,
        arg: FlexTensor,
        g: FlexTensor,
    ) -> FlexTensor {
        let (crow, col) = (contiguous(crow), contiguous(col));
        // No cell of the pattern's at hand: checked at every call.
        let fresh = TransposeCell::new();
        let arg = contiguous(arg);
        let widened;
        let arg: &[i64] = match int_slice(&arg) {
            crate::host::IntSlice::I64(s) => s,
            other => {
                widened = other.to_i64();
                &widened
            }
        };
        let [k, n] = [x.shape()[0], x.shape()[1]];
        let total = vec![out_len(k, n, "spmm_arg_extreme backward: dX")
            .checked_add(col.shape()[0])
            .expect("spmm_arg_extreme backward: gradient length overflows usize")];
        with_real(
            [values, x, g],
            total,
            |[v, x, g]| {
                with_pattern!("csr_spmm_arg_extreme_backward", &fresh, &crow, &col, k, |a| spmm_arg_extreme_backward(
                    a, v, x, arg, g, n
                ))
            },
            |[v, x, g]| {
                with_pattern!("csr_spmm_arg_extreme_backward", &fresh, &crow, &col, k, |a| spmm_arg_extreme_backward(
                    a, v, x, arg, g, n
                ))
            },
        )
    }
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
    type ArgExtremeState<B> = (IntTensor<B>, IntTensor<B>, FloatTensor<B>, FloatTensor<B>, IntTensor<B>);

    impl<B: SparseSpmmReduce> Backward<B, 2> for ArgExtreme {
        type State = ArgExtremeState<B>;

        fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
            let (crow, col, values, x, arg) = ops.state;
            let [values_node, x_node] = ops.parents;
            let g = grads.consume::<B>(&ops.node);
            let (nnz, xshape) = (values.shape().num_elements(), x.shape());
            let len = xshape.num_elements();
            // SAFETY: the state holds the pattern the forward was called with (valid over the
            // rows of `x`: its caller's contract), its operands and its args; `g` is shaped as
            // its output.
            let both = unsafe { B::csr_spmm_arg_extreme_backward(crow, col, values, x, arg, g) };
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
        unsafe fn sparse_spmm_arg_extreme(
            crow: IntTensor<Self>,
            col: IntTensor<Self>,
            values: FloatTensor<Self>,
            x: FloatTensor<Self>,
            max: bool,
        ) -> FloatTensor<Self> {
            let guards = [values.node(), x.node()];
            let (v, xp) = (values.into_primitive(), x.into_primitive());
            // SAFETY: the caller's contract for this method is the inner backend's kernel's.
            let (out, arg) = unsafe { B::csr_spmm_arg_extreme(crow.clone(), col.clone(), v.clone(), xp.clone(), max) };
            match ArgExtreme.prepare::<C>(guards).compute_bound().stateful() {
                OpsKind::Tracked(prep) => prep.finish((crow, col, v, xp, arg), out),
                OpsKind::UnTracked(prep) => prep.finish(out),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Flex methods and the portable defaults agree (f64 and f32).
    #[test]
    fn flex_and_defaults_agree() {
        let ints = |v: Vec<i64>| FlexTensor::from_data(TensorData::new(v.clone(), [v.len()]));
        let (crow, col) = (vec![0i64, 2, 2, 4], vec![0i64, 2, 1, 2]);
        for dtype in [DType::F64, DType::F32] {
            let f =
                |v: Vec<f64>, shape: Vec<usize>| FlexTensor::from_data(TensorData::new(v, shape).convert_dtype(dtype));
            let values = f(vec![2.0, -1.0, 3.0, 3.0], vec![4]);
            let x = f(vec![1.0, -2.0, 5.0, 0.5, 5.0, 4.0], vec![3, 2]);
            let g = f(vec![1.0, 10.0, 100.0, 100.0, 2.0, 3.0], vec![3, 2]);
            let host = |t: FlexTensor| t.into_data().convert_dtype(DType::F64).try_into_vec::<f64>().unwrap();
            let hint = |t: FlexTensor| t.into_data().convert_dtype(DType::I64).try_into_vec::<i64>().unwrap();
            for max in [true, false] {
                // SAFETY: a valid pattern [3, 3] (row pointers 0..=4, columns below 3).
                let (o1, a1) = unsafe {
                    Flex::csr_spmm_arg_extreme(ints(crow.clone()), ints(col.clone()), values.clone(), x.clone(), max)
                };
                // SAFETY: as above.
                let (o2, a2) = unsafe {
                    default::arg_extreme::<Flex>(ints(crow.clone()), ints(col.clone()), values.clone(), x.clone(), max)
                };
                assert_eq!(host(o1), host(o2));
                let (a1, a2) = (hint(a1), hint(a2));
                assert_eq!(a1, a2);
                let arg = ints(a1);
                // SAFETY: as above; `arg` is the forward's.
                let b1 = unsafe {
                    Flex::csr_spmm_arg_extreme_backward(
                        ints(crow.clone()),
                        ints(col.clone()),
                        values.clone(),
                        x.clone(),
                        arg.clone(),
                        g.clone(),
                    )
                };
                // SAFETY: as above.
                let b2 = unsafe {
                    default::arg_extreme_backward::<Flex>(
                        ints(crow.clone()),
                        ints(col.clone()),
                        values.clone(),
                        x.clone(),
                        arg,
                        g.clone(),
                    )
                };
                let (b1, b2) = (host(b1), host(b2));
                assert_eq!(b1.len(), 6 + 4);
                assert_eq!(b1, b2);
            }
        }
    }
}
