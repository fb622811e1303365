//! The features of a [`Planetoid`] as a sparse tensor (COO or CSR), and their row normalisation
//! ([`normalize_features`]).

use super::Planetoid;
use burn::tensor::{DType, Int, Tensor, TensorData};
use sparsegrad_backend::SparseTensor;

impl Planetoid {
    /// The features as a CSR tensor with their values (`feature_values`; duplicate entries,
    /// which [`Planetoid::load`] refuses, summed), f32 values and int64 indices, columns sorted
    /// per row. Panics if `features` and `feature_values` differ in length or an entry is
    /// outside `nodes x num_features` (a hand-built value; loaded ones are checked).
    pub fn feature_matrix(&self, device: &burn::tensor::Device) -> SparseTensor<2> {
        assert_eq!(
            self.features.len(),
            self.feature_values.len(),
            "features and feature_values must have one element per entry"
        );
        let mut rows: Vec<Vec<(i64, f32)>> = vec![Vec::new(); self.nodes];
        for (&(r, c), &v) in self.features.iter().zip(&self.feature_values) {
            rows[r].push((c as i64, v as f32));
        }
        let mut crow = vec![0i64];
        let (mut col, mut val) = (Vec::new(), Vec::new());
        for r in rows.iter_mut() {
            r.sort_by_key(|&(c, _)| c);
            r.dedup_by(|next, kept| {
                let same = next.0 == kept.0;
                if same {
                    kept.1 += next.1;
                }
                same
            });
            for &(c, v) in r.iter() {
                col.push(c);
                val.push(v);
            }
            crow.push(col.len() as i64);
        }
        let nnz = col.len();
        SparseTensor::csr(
            Tensor::<1, Int>::from_data(TensorData::new(crow, [self.nodes + 1]), (device, DType::I64)),
            Tensor::<1, Int>::from_data(TensorData::new(col, [nnz]), (device, DType::I64)),
            Tensor::<1>::from_data(TensorData::new(val, [nnz]), device),
            [self.nodes, self.num_features],
        )
        .expect("loaded features are in bounds, sorted and unique per row")
    }

    /// The features row-normalised ([`normalize_features`] of [`Planetoid::feature_matrix`]):
    /// each row of non-zero sum sums to 1, as Kipf & Welling preprocess bag-of-words features,
    /// and a row summing to 0 becomes zeros. A pattern row of `k` entries gets `1.0 / k` exactly.
    pub fn features_csr(&self, device: &burn::tensor::Device) -> SparseTensor<2> {
        normalize_features(&self.feature_matrix(device)).expect("a checked CSR matrix")
    }
}

/// Row normalisation of a feature matrix (PyG's `NormalizeFeatures`, Kipf & Welling's
/// preprocessing): every stored value divided by the sum of its row's stored values, in the
/// values' dtype; a row summing to 0 becomes zeros (their `1 / rowsum` with infinities set to
/// 0). Any layout in, CSR out (an uncoalesced COO input is coalesced first: duplicates are one
/// entry). The values move with burn ops, so the result is differentiable w.r.t. `x`'s values.
pub fn normalize_features(x: &SparseTensor<2>) -> sparsegrad_backend::Result<SparseTensor<2>> {
    x.check_invariants()?;
    let csr = if x.layout() == sparsegrad_backend::Layout::Csr { x.clone() } else { x.to_sparse_csr()? };
    if csr.dense_dim() > 0 {
        return Err(sparsegrad_backend::SparseError::InvalidArgument {
            operation: "normalize_features",
            message: format!("hybrid features (dense_dim {}) are not supported", csr.dense_dim()),
        });
    }
    let (crow, _) = csr.compressed_indices_flat().expect("a CSR tensor");
    let crow = sparsegrad_backend::host::with_ints(&crow, |v| v.to_i64());
    let [m, _] = csr.shape();
    let nnz = csr.nnz();
    let mut rows = Vec::with_capacity(nnz);
    for (r, w) in crow.windows(2).enumerate() {
        rows.extend(std::iter::repeat_n(r as i64, (w[1] - w[0]) as usize));
    }
    let device = csr.device();
    let rows = Tensor::<1, Int>::from_data(TensorData::new(rows, [nnz]), (&device, DType::I64));
    let values = csr.values_flat().reshape([nnz]);
    let sums = Tensor::<1>::zeros([m], (&device, values.dtype())).select_assign(
        0,
        rows.clone(),
        values.clone(),
        burn::tensor::IndexingUpdateOp::Add,
    );
    let per_entry = sums.select(0, rows);
    let zero = per_entry.clone().equal_elem(0.0);
    let normalized = (values / per_entry.mask_fill(zero.clone(), 1.0)).mask_fill(zero, 0.0);
    Ok(csr.with_values(normalized.reshape([nnz, 1])))
}
