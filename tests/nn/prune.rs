//! Magnitude pruning: N:M along rows and unstructured top-k, against hand-computed examples,
//! their error paths, and properties on pseudo-random weights (exactly n kept per group, the
//! kept entries are the largest, the CSR form holds the same entries).

use burn::tensor::{Tensor, TensorData};
use sparsegrad::nn::{
    density_nnz, magnitude_mask, n_m_mask, prune_2_4, prune_magnitude, prune_magnitude_csr, prune_n_m,
};
use sparsegrad::prelude::*;

fn t(v: Vec<f32>, shape: [usize; 2]) -> Tensor<2> {
    Tensor::from_data(TensorData::new(v, shape), &crate::common_ops::dev())
}

fn vals(t: Tensor<2>) -> Vec<f32> {
    t.into_data().try_to_vec::<f32>().unwrap()
}

/// Non-zero pseudo-random weights in (-1, 1), several exact ties among them.
fn weights(rows: usize, cols: usize, seed: u64) -> Vec<f32> {
    let mut rng = crate::common_ops::Rng(seed);
    (0..rows * cols)
        .map(|_| {
            let u = rng.unit();
            // Quantised to 1/64 so equal magnitudes (and ties of opposite sign) occur.
            let q = ((u * 128.0).floor() - 64.0) / 64.0;
            if q == 0.0 {
                0.5
            } else {
                q as f32
            }
        })
        .collect()
}

#[test]
fn two_four_hand_example() {
    let _serial = crate::common_ops::serial();
    // Second group: |4| three times; the two earliest positions win the tie.
    let w = t(vec![1.0, -3.0, 2.0, 0.5, 4.0, 4.0, -4.0, 1.0, 0.0, 0.0, 0.0, 7.0, -1.0, 2.0, -3.0, 0.25], [2, 8]);
    assert_eq!(
        vals(prune_2_4(w.clone()).unwrap()),
        vec![0.0, -3.0, 2.0, 0.0, 4.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 7.0, 0.0, 2.0, -3.0, 0.0]
    );
    let mask = n_m_mask(&w, 2, 4).unwrap().int().into_data().iter::<i64>().map(|v| v != 0).collect::<Vec<bool>>();
    assert_eq!(
        mask,
        vec![false, true, true, false, true, true, false, false, true, false, false, true, false, true, true, false]
    );
    // 1:2 (the f32 semi-structured pattern) and 3:4.
    assert_eq!(vals(prune_n_m(w.clone(), 1, 2).unwrap())[..8], [0.0, -3.0, 2.0, 0.0, 4.0, 0.0, -4.0, 0.0]);
    assert_eq!(vals(prune_n_m(w.clone(), 3, 4).unwrap())[..8], [1.0, -3.0, 2.0, 0.0, 4.0, 4.0, -4.0, 0.0]);
    // m = row length: a per-row top-n.
    assert_eq!(vals(prune_n_m(w, 1, 8).unwrap())[8..], [0.0, 0.0, 0.0, 7.0, 0.0, 0.0, 0.0, 0.0]);
}

#[test]
fn n_m_rejects_bad_patterns_and_shapes() {
    let _serial = crate::common_ops::serial();
    let w = t(vec![1.0; 12], [2, 6]);
    let e = prune_2_4(w.clone()).unwrap_err();
    assert!(matches!(e, SparseError::InvalidArgument { operation: "prune_n_m", .. }), "{e}");
    assert!(e.to_string().contains("[2, 6]") && e.to_string().contains("m = 4"), "{e}");
    let e = prune_n_m(w.clone(), 3, 2).unwrap_err().to_string();
    assert!(e.contains("3:2"), "{e}");
    assert!(prune_n_m(w.clone(), 0, 0).is_err());
    assert!(n_m_mask(&w, 2, 4).is_err());
    // 0:m zeroes everything, m:m keeps everything.
    assert_eq!(vals(prune_n_m(w.clone(), 0, 3).unwrap()), vec![0.0; 12]);
    assert_eq!(vals(prune_n_m(w, 2, 2).unwrap()), vec![1.0; 12]);
}

#[test]
fn n_m_keeps_exactly_n_largest_per_group() {
    let _serial = crate::common_ops::serial();
    for (k, &(n, m)) in [(2, 4), (1, 2), (1, 4), (3, 8), (4, 4)].iter().enumerate() {
        let (rows, cols) = (5, 8 * m);
        let w = weights(rows, cols, k as u64);
        let pruned = vals(prune_n_m(t(w.clone(), [rows, cols]), n, m).unwrap());
        for (g, (orig, kept)) in w.chunks(m).zip(pruned.chunks(m)).enumerate() {
            assert_eq!(kept.iter().filter(|v| **v != 0.0).count(), n, "{n}:{m} group {g}: {kept:?}");
            let max_dropped =
                orig.iter().zip(kept).filter(|(_, k)| **k == 0.0).map(|(o, _)| o.abs()).fold(0.0f32, f32::max);
            for (o, k) in orig.iter().zip(kept).filter(|(_, k)| **k != 0.0) {
                assert_eq!(o, k, "kept values are unchanged");
                assert!(o.abs() >= max_dropped, "{n}:{m} group {g}: kept {o} but dropped {max_dropped}");
            }
        }
    }
}

#[test]
fn magnitude_hand_example_and_ties() {
    let _serial = crate::common_ops::serial();
    let w = t(vec![0.1, -5.0, 3.0, 2.0, -0.2, 4.0], [2, 3]);
    assert_eq!(vals(prune_magnitude(w.clone(), 0.5).unwrap()), vec![0.0, -5.0, 3.0, 0.0, 0.0, 4.0]);
    assert_eq!(vals(prune_magnitude(w.clone(), 0.0).unwrap()), vals(w.clone()));
    assert_eq!(vals(prune_magnitude(w.clone(), 1.0).unwrap()), vec![0.0; 6]);
    // round(0.7 * 6) = 4 zeroed, 2 kept.
    assert_eq!(vals(prune_magnitude(w, 0.7).unwrap()), vec![0.0, -5.0, 0.0, 0.0, 0.0, 4.0]);
    // Equal magnitudes: the earliest positions are kept.
    let ties = t(vec![-1.0, 1.0, 1.0, -1.0], [2, 2]);
    assert_eq!(vals(prune_magnitude(ties.clone(), 0.5).unwrap()), vec![-1.0, 1.0, 0.0, 0.0]);
    assert_eq!(
        magnitude_mask(&ties, 0.25).unwrap().int().into_data().iter::<i64>().map(|v| v != 0).collect::<Vec<bool>>(),
        vec![true, true, true, false]
    );
}

/// The argument is a sparsity, the fraction of zeros: 0.9 keeps 10 % of the entries, in every
/// magnitude pruner and in `SparseLinear::from_linear` (it was a density before).
#[test]
fn magnitude_pruning_takes_a_sparsity() {
    let _serial = crate::common_ops::serial();
    let w = t((1..=100).map(|v| v as f32).collect(), [10, 10]);
    let pruned = vals(prune_magnitude(w.clone(), 0.9).unwrap());
    assert_eq!(pruned.iter().filter(|v| **v != 0.0).count(), 10);
    assert_eq!(pruned[90..], (91..=100).map(|v| v as f32).collect::<Vec<_>>()[..]);
    assert_eq!(prune_magnitude_csr(&w, 0.9).unwrap().nnz(), 10);
    let mask = magnitude_mask(&w, 0.9).unwrap().int().into_data().iter::<i64>().filter(|v| *v != 0).count();
    assert_eq!(mask, 10);
    let linear = burn::nn::LinearConfig::new(20, 10).init(&w.device());
    assert_eq!(sparsegrad::nn::SparseLinear::from_linear(&linear, 0.9).unwrap().nnz(), 20);
    // The error names the argument.
    let e = prune_magnitude(w, 1.5).unwrap_err().to_string();
    assert!(e.contains("sparsity 1.5"), "{e}");
}

#[test]
fn magnitude_rejects_sparsities_outside_unit_interval() {
    let _serial = crate::common_ops::serial();
    let w = t(vec![1.0; 4], [2, 2]);
    for d in [-0.1, 1.5, f64::NAN] {
        let e = prune_magnitude(w.clone(), d).unwrap_err();
        assert!(matches!(e, SparseError::InvalidArgument { operation: "prune_magnitude", .. }), "{e}");
        assert!(prune_magnitude_csr(&w, d).is_err());
        assert!(magnitude_mask(&w, d).is_err());
    }
    assert_eq!(density_nnz(784 * 300, 0.1).unwrap(), 23520);
}

#[test]
fn magnitude_keeps_the_top_k() {
    let _serial = crate::common_ops::serial();
    let (rows, cols) = (13, 21);
    let w = weights(rows, cols, 99);
    for sparsity in [0.95, 0.9, 0.63, 0.1] {
        let pruned = vals(prune_magnitude(t(w.clone(), [rows, cols]), sparsity).unwrap());
        let k = rows * cols - (sparsity * (rows * cols) as f64).round() as usize;
        assert_eq!(pruned.iter().filter(|v| **v != 0.0).count(), k);
        let max_dropped =
            w.iter().zip(&pruned).filter(|(_, p)| **p == 0.0).map(|(o, _)| o.abs()).fold(0.0f32, f32::max);
        let min_kept =
            w.iter().zip(&pruned).filter(|(_, p)| **p != 0.0).map(|(o, _)| o.abs()).fold(f32::INFINITY, f32::min);
        assert!(min_kept >= max_dropped, "sparsity {sparsity}: kept {min_kept} < dropped {max_dropped}");
        // The CSR form stores the same entries, in row order.
        let csr = prune_magnitude_csr(&t(w.clone(), [rows, cols]), sparsity).unwrap();
        assert_eq!((csr.layout(), csr.nnz()), (Layout::Csr, k));
        assert_eq!(vals(csr.to_dense()), pruned);
    }
}

#[test]
fn magnitude_csr_counts_kept_zeros() {
    let _serial = crate::common_ops::serial();
    // Half of four zeros: two stored zeros at the first positions, so nnz depends only on the
    // shape and the sparsity.
    let csr = prune_magnitude_csr(&t(vec![0.0; 4], [2, 2]), 0.5).unwrap();
    assert_eq!(csr.nnz(), 2);
    assert_eq!(csr.crow_indices::<1>().unwrap().into_data().try_to_vec::<i64>().unwrap(), vec![0, 2, 2]);
    assert_eq!(csr.col_indices::<1>().unwrap().into_data().try_to_vec::<i64>().unwrap(), vec![0, 1]);
    let csr = prune_magnitude_csr(&t(vec![0.1, -5.0, 3.0, 2.0, -0.2, 4.0], [2, 3]), 0.5).unwrap();
    assert_eq!(csr.crow_indices::<1>().unwrap().into_data().try_to_vec::<i64>().unwrap(), vec![0, 2, 3]);
    assert_eq!(csr.col_indices::<1>().unwrap().into_data().try_to_vec::<i64>().unwrap(), vec![1, 2, 2]);
    assert_eq!(csr.values::<1>().unwrap().into_data().try_to_vec::<f32>().unwrap(), vec![-5.0, 3.0, 4.0]);
}

#[test]
fn pruned_weights_get_gradients_at_kept_entries_only() {
    let _serial = crate::common_ops::serial();
    let device = crate::common_ops::ad();
    let w = Tensor::<2>::from_data(TensorData::new(vec![0.1f32, -5.0, 3.0, 2.0, -0.2, 4.0, 1.0, 1.5], [2, 4]), &device)
        .require_grad();
    let g = prune_2_4(w.clone()).unwrap().sum().backward();
    assert_eq!(
        w.grad(&g).unwrap().into_data().try_to_vec::<f32>().unwrap(),
        vec![0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0]
    );
    let csr = prune_magnitude_csr(&w, 0.75).unwrap();
    let g = csr.values::<1>().unwrap().sum().backward();
    assert_eq!(
        w.grad(&g).unwrap().into_data().try_to_vec::<f32>().unwrap(),
        vec![0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    );
}
