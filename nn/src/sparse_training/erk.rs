//! How a budget of stored weights is shared between layers: the Erdős–Rényi(-Kernel)
//! distribution of SET (Mocanu et al. 2018) and RigL (Evci et al. 2020).
//!
//! A uniform density starves the small layers: at 98 % sparsity the 300 x 100 hidden layer of
//! LeNet-300-100 keeps six weights per output. Erdős–Rényi makes a layer's density proportional
//! to `(d_output + d_input) / (d_output d_input)` (for a convolution, the kernel's sizes join
//! both sums and products: the "Kernel" variant), so a layer's stored entries grow with the sum
//! of its sizes rather than their product. One scale `eps` is chosen so the model keeps the
//! asked fraction of all its weights; a layer whose density would pass 1 is kept dense and the
//! scale is solved again on the others.

use sparsegrad_backend::error::invalid;

type Checked<T> = sparsegrad_backend::Result<T>;

/// The density of each layer (`shapes`, each the sizes of one weight: `[d_output, d_input]`
/// for a linear layer, with the kernel's sizes after them for a convolution) such that the
/// layers keep `density` of their weights together, distributed Erdős–Rényi(-Kernel): layer
/// `l`'s density is `min(1, eps * sum(shape_l) / prod(shape_l))`.
///
/// A layer with no elements gets density 1 (it stores nothing either way). Errors when
/// `density` is not in `[0, 1]` or a layer's element count overflows `usize`.
///
/// ```
/// use sparsegrad_nn::sparse_training::erdos_renyi_densities;
///
/// // LeNet-300-100's hidden layers keeping 10 % of their weights.
/// let d = erdos_renyi_densities(&[[300, 784], [100, 300]], 0.1).unwrap();
/// let kept = d[0] * 235_200.0 + d[1] * 30_000.0;
/// assert!((kept - 0.1 * 265_200.0).abs() < 1e-6);
/// assert!(d[1] > 2.0 * d[0]); // the small layer is denser
/// ```
pub fn erdos_renyi_densities<S: AsRef<[usize]>>(shapes: &[S], density: f64) -> Checked<Vec<f64>> {
    const OP: &str = "erdos_renyi_densities";
    if !(0.0..=1.0).contains(&density) {
        return Err(invalid(OP, format!("density {density} is not in [0, 1]")));
    }
    // (elements, score = sum / product) per layer, in f64: only ratios matter.
    let mut layers = Vec::with_capacity(shapes.len());
    for (l, shape) in shapes.iter().enumerate() {
        let shape = shape.as_ref();
        let numel = shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(|| invalid(OP, format!("layer {l}: the element count of {shape:?} overflows usize")))?;
        let sum: f64 = shape.iter().map(|&d| d as f64).sum();
        layers.push((numel as f64, if numel == 0 { 0.0 } else { sum / numel as f64 }));
    }
    let budget = density * layers.iter().map(|l| l.0).sum::<f64>();
    let mut dense = vec![false; layers.len()];
    loop {
        let taken: f64 = layers.iter().zip(&dense).filter(|(_, &d)| d).map(|(l, _)| l.0).sum();
        let weight: f64 = layers.iter().zip(&dense).filter(|(_, &d)| !d).map(|(l, _)| l.0 * l.1).sum();
        let eps = if weight > 0.0 { ((budget - taken) / weight).max(0.0) } else { 0.0 };
        // Every layer whose density would pass 1 becomes dense at once; each round adds at
        // least one, so there are at most as many rounds as layers.
        let mut changed = false;
        for (l, d) in layers.iter().zip(dense.iter_mut()) {
            if !*d && (l.0 == 0.0 || eps * l.1 > 1.0) {
                *d = true;
                changed = true;
            }
        }
        if !changed {
            return Ok(layers.iter().zip(&dense).map(|(l, &d)| if d { 1.0 } else { (eps * l.1).min(1.0) }).collect());
        }
    }
}
