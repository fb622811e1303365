//! `gradcheck`: compares the gradients burn's autodiff computes with central differences in f64.
//!
//! Inputs are flat value tensors: a dense input contributes all its elements, a sparse input only
//! its specified values (torch's `masked=True`): unspecified elements have no gradient. The
//! function rebuilds its operands from the flat tensors it is given (`reshape`, or
//! `SparseTensor::with_values`), so one checker serves every rank and layout.
//!
//! The check projects the output on fixed pseudo-random weights `w` and compares the gradient of
//! `sum(w * f(x))` (one backward pass) with its central differences (two forward passes per
//! input element), which checks `Jᵀw` for every input element.

use burn::tensor::{DType, Device, Tensor, TensorData};
use sparsegrad_backend::SparseTensor;
use std::fmt;

/// Tolerances and step of the check.
#[derive(Debug, Clone, Copy)]
pub struct GradcheckOptions {
    /// Central-difference step.
    pub eps: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance (of the numeric value).
    pub rtol: f64,
}

impl Default for GradcheckOptions {
    fn default() -> Self {
        Self { eps: 1e-6, atol: 1e-5, rtol: 1e-3 }
    }
}

/// One input of the checked function: its flat f64 values and its name in reports.
#[derive(Debug, Clone)]
pub struct GradInput {
    /// Name used in reports.
    pub name: String,
    /// Flat values.
    pub values: Vec<f64>,
}

impl GradInput {
    /// All elements of a dense tensor.
    pub fn dense<const D: usize>(name: &str, t: &Tensor<D>) -> Self {
        let values = t.to_data().iter::<f64>().collect();
        Self { name: name.into(), values }
    }

    /// The specified values of a sparse tensor (flattened `values_flat`).
    pub fn sparse<const D: usize>(name: &str, s: &SparseTensor<D>) -> Self {
        Self::dense(name, &s.values_flat())
    }
}

/// The worst element of a check.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    /// The input's name.
    pub input: String,
    /// Position in the input's flat values.
    pub position: usize,
    /// Gradient from autodiff.
    pub analytic: f64,
    /// Gradient from central differences.
    pub numeric: f64,
}

/// A failed check: the worst mismatch and how many elements failed.
#[derive(Debug, Clone, PartialEq)]
pub struct GradcheckError {
    /// The element with the largest error relative to its tolerance.
    pub worst: Mismatch,
    /// Elements outside tolerance.
    pub failures: usize,
    /// Elements checked.
    pub checked: usize,
}

impl fmt::Display for GradcheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = &self.worst;
        write!(
            f,
            "gradcheck failed on {} of {} elements; worst: input `{}` position {}: analytic {:.8e}, numeric {:.8e}",
            self.failures, self.checked, w.input, w.position, w.analytic, w.numeric
        )
    }
}

impl std::error::Error for GradcheckError {}

/// What a passing check saw.
#[derive(Debug, Clone, PartialEq)]
pub struct GradcheckReport {
    /// Elements checked.
    pub checked: usize,
    /// The largest |analytic - numeric| seen.
    pub max_abs_error: f64,
}

fn weights(n: usize) -> Vec<f64> {
    // A fixed splitmix stream in [-1, 1): reproducible, and no symmetry for errors to hide behind.
    let mut rng = sparsegrad_kernels::rng::SplitMix64::new(0x5EED);
    (0..n).map(|_| rng.unit_f64() * 2.0 - 1.0).collect()
}

fn leaf(values: &[f64], device: &Device) -> Tensor<1> {
    Tensor::from_data(TensorData::new(values.to_vec(), [values.len()]), (device, DType::F64))
}

/// Checks the gradients of `f` at `inputs` on `Device::flex().autodiff()`.
///
/// `f` receives one flat f64 tensor per input (in order) and returns the output flattened to
/// rank 1.
///
/// ```
/// use burn::tensor::Device;
/// use sparsegrad_autodiff::gradcheck::{gradcheck, GradInput, GradcheckOptions};
/// use sparsegrad_backend::SparseTensor;
///
/// // d/dv of sum(softmax(A)) over a CSR pattern, perturbing only the stored values.
/// let device = Device::flex();
/// let a = SparseTensor::csr_from_vecs(vec![0, 2, 3], vec![0, 2, 1], vec![0.3f64, -1.2, 2.0], [2, 3], &device).unwrap();
/// let weights = burn::tensor::Tensor::<1>::from_data([1.0f64, 2.0, 3.0], (&device.clone().autodiff(), burn::tensor::DType::F64));
/// let report = gradcheck(
///     |inputs| {
///         let s = a.to_device(&inputs[0].device()).with_values(inputs[0].clone().reshape([3, 1]));
///         let p = sparsegrad_autodiff::softmax::softmax(&s, 1);
///         p.values_flat().reshape([3]) * weights.clone()
///     },
///     &[GradInput::sparse("a", &a)],
///     GradcheckOptions::default(),
/// )
/// .unwrap();
/// assert_eq!(report.checked, 3);
/// ```
pub fn gradcheck<F>(f: F, inputs: &[GradInput], options: GradcheckOptions) -> Result<GradcheckReport, GradcheckError>
where
    F: Fn(&[Tensor<1>]) -> Tensor<1>,
{
    gradcheck_on(&Device::flex(), f, inputs, options)
}

/// [`gradcheck`] on `device` (with autodiff for the analytic gradients, without for the
/// numeric ones): the inputs `f` receives live there.
pub fn gradcheck_on<F>(
    device: &Device,
    f: F,
    inputs: &[GradInput],
    options: GradcheckOptions,
) -> Result<GradcheckReport, GradcheckError>
where
    F: Fn(&[Tensor<1>]) -> Tensor<1>,
{
    let plain = device.clone();
    let device = plain.clone().autodiff();
    let leaves: Vec<Tensor<1>> = inputs.iter().map(|i| leaf(&i.values, &device).require_grad()).collect();
    let out = f(&leaves);
    let w = weights(out.dims()[0]);
    let w_ad = leaf(&w, &device);
    let loss = (out * w_ad).sum();
    // An output that depends on no tracked input (detached) has zero analytic gradients: report
    // them against the numeric ones instead of panicking in `backward`.
    let grads = loss.is_tracked().then(|| loss.backward());
    let analytic: Vec<Vec<f64>> = leaves
        .iter()
        .zip(inputs)
        .map(|(l, i)| match grads.as_ref().and_then(|g| l.grad(g)) {
            Some(g) => g.into_data().iter::<f64>().collect(),
            None => vec![0.0; i.values.len()],
        })
        .collect();

    let w_plain = leaf(&w, &plain);
    let loss = |vals: &[Vec<f64>]| -> f64 {
        let ts: Vec<Tensor<1>> = vals.iter().map(|v| leaf(v, &plain)).collect();
        (f(&ts) * w_plain.clone()).sum().into_scalar::<f64>()
    };
    let mut current: Vec<Vec<f64>> = inputs.iter().map(|i| i.values.clone()).collect();
    let mut worst: Option<(f64, Mismatch)> = None;
    let (mut failures, mut checked, mut max_abs) = (0, 0, 0.0f64);
    for (k, input) in inputs.iter().enumerate() {
        for j in 0..input.values.len() {
            let x = input.values[j];
            current[k][j] = x + options.eps;
            let up = loss(&current);
            current[k][j] = x - options.eps;
            let down = loss(&current);
            current[k][j] = x;
            let numeric = (up - down) / (2.0 * options.eps);
            let a = analytic[k][j];
            let err = (a - numeric).abs();
            let tol = options.atol + options.rtol * numeric.abs();
            checked += 1;
            max_abs = max_abs.max(err);
            if err > tol || !a.is_finite() {
                failures += 1;
            }
            let ratio = err / tol;
            if worst.as_ref().is_none_or(|(r, _)| ratio > *r) {
                worst = Some((ratio, Mismatch { input: input.name.clone(), position: j, analytic: a, numeric }));
            }
        }
    }
    if failures > 0 {
        return Err(GradcheckError { worst: worst.expect("failures imply a worst").1, failures, checked });
    }
    Ok(GradcheckReport { checked, max_abs_error: max_abs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_a_correct_gradient_and_catches_a_wrong_one() {
        let x = GradInput { name: "x".into(), values: vec![0.3, -1.2, 2.0] };
        let ok = gradcheck(|xs| xs[0].clone() * xs[0].clone(), std::slice::from_ref(&x), GradcheckOptions::default())
            .unwrap();
        assert_eq!(ok.checked, 3);
        // detach() hides the dependence from autodiff: the analytic gradient is wrong (zero).
        let bad =
            gradcheck(|xs| xs[0].clone() * xs[0].clone().detach(), &[x], GradcheckOptions::default()).unwrap_err();
        assert_eq!(bad.failures, 3);
        assert_eq!(bad.worst.input, "x");
        // d/dx (x * c) with c = x held constant is x, half of 2x; the worst ratio is at |x| = 2.
        assert_eq!(bad.worst.position, 2);
    }
}
