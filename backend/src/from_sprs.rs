//! Matrices to and from `sprs` (feature `sprs`): a `CsMat` becomes a CSR or CSC
//! [`SparseTensor`] of the same storage, its indices as int64 and its values in their own dtype
//! ([`SparseTensor::from_sprs`], `TryFrom<&CsMat>`); a 2-D tensor becomes a `CsMat` of the same
//! storage, CSR or CSC, other layouts as CSR ([`SparseTensor::to_sprs`], `TryFrom<&SparseTensor>`
//! for `CsMat`). A round trip keeps the storage, the pattern and the values bit for bit.
//!
//! `TryFrom`, not `From`, both ways: an index that does not fit int64 (a `u64` index type) or a
//! shape whose element count overflows int64 is an error, and so is a tensor `sprs` cannot hold
//! (batch or dense dims), never a panic. The checked constructors run on the converted arrays, so
//! the result holds every invariant whatever the other side guaranteed.

use crate::error::{Result, SparseError};
use crate::layout::Layout;
use crate::tensor::SparseTensor;
use crate::util::read_i64;
use burn::tensor::Device;
use sprs::{CsMat, CsMatBase, SpIndex};
use std::ops::Deref;

impl SparseTensor<2> {
    /// The `sprs` matrix `m` on `device`: CSR for a CSR matrix, CSC for a CSC one.
    ///
    /// ```
    /// # use sparsegrad_backend::{Layout, SparseTensor};
    /// let m = sprs::CsMat::new((2, 3), vec![0, 1, 2], vec![2, 0], vec![3.0f64, 4.0]);
    /// let s = SparseTensor::from_sprs(&m, &burn::tensor::Device::flex()).unwrap();
    /// assert_eq!(s.layout(), Layout::Csr);
    /// assert_eq!(s.to_dense().into_data().try_to_vec::<f64>().unwrap(), [0.0, 0.0, 3.0, 4.0, 0.0, 0.0]);
    /// ```
    pub fn from_sprs<N, I, Iptr, IptrS, IndS, DataS>(
        m: &CsMatBase<N, I, IptrS, IndS, DataS, Iptr>,
        device: &Device,
    ) -> Result<Self>
    where
        N: burn::tensor::Element + Copy,
        I: SpIndex,
        Iptr: SpIndex,
        IptrS: Deref<Target = [Iptr]>,
        IndS: Deref<Target = [I]>,
        DataS: Deref<Target = [N]>,
    {
        let widen = |component: &'static str| {
            move |(k, i): (usize, Option<usize>)| {
                i.and_then(|i| i64::try_from(i).ok()).ok_or_else(|| SparseError::InvalidArgument {
                    operation: "from_sprs",
                    message: format!("{component}[{k}] does not fit int64"),
                })
            }
        };
        let indptr = m.indptr();
        let compressed = indptr
            .to_proper()
            .iter()
            .map(|p| p.try_index())
            .enumerate()
            .map(widen("indptr"))
            .collect::<Result<Vec<i64>>>()?;
        let plain = m
            .indices()
            .iter()
            .map(|i| i.try_index())
            .enumerate()
            .map(widen("indices"))
            .collect::<Result<Vec<i64>>>()?;
        let layout = if m.is_csr() { Layout::Csr } else { Layout::Csc };
        Self::compressed_from_vecs(compressed, plain, m.data().to_vec(), [m.rows(), m.cols()], layout, device)
    }

    /// The matrix as a `sprs` `CsMat` with values of type `N` (converted from the tensor's
    /// dtype, as burn's `TensorData::try_into_vec_as` casts): a CSC tensor as a CSC matrix,
    /// every other layout as CSR (COO, BSR and BSC converted first, duplicates summed). The
    /// values are read to the host. A tensor with batch or dense dims is an error: a `CsMat` is
    /// a plain matrix.
    ///
    /// ```
    /// # use sparsegrad_backend::SparseTensor;
    /// let device = burn::tensor::Device::flex();
    /// let s = SparseTensor::csr_from_vecs(vec![0, 1, 1, 3], vec![2, 0, 1], vec![3.0f64, 4.0, -1.0], [3, 3], &device)?;
    /// let m: sprs::CsMat<f64> = s.to_sprs()?;
    /// assert!(m.is_csr());
    /// assert_eq!(m.indptr().raw_storage(), &[0, 1, 1, 3][..]);
    /// assert_eq!((m.indices(), m.data()), (&[2, 0, 1][..], &[3.0, 4.0, -1.0][..]));
    /// # Ok::<(), sparsegrad_backend::SparseError>(())
    /// ```
    pub fn to_sprs<N: burn::tensor::Element>(&self) -> Result<CsMat<N>> {
        let operation = "to_sprs";
        if self.batch_dim() != 0 || self.dense_dim() != 0 {
            return Err(SparseError::InvalidArgument {
                operation,
                message: format!(
                    "a sprs matrix is plain: this {:?} tensor has {} batch and {} dense dims",
                    self.shape(),
                    self.batch_dim(),
                    self.dense_dim()
                ),
            });
        }
        self.check_invariants()?;
        let csc = self.layout() == Layout::Csc;
        let m = if csc || self.layout() == Layout::Csr { self.clone() } else { self.to_layout(Layout::Csr, None)? };
        let (compressed, plain) = m
            .compressed_indices_flat()
            .ok_or(SparseError::UnsupportedLayout { operation, layout: m.layout().name() })?;
        // Checked indices lie in 0..=nse and 0..size: each fits usize.
        let to_usize = |v: Vec<i64>| v.into_iter().map(|i| i as usize).collect::<Vec<usize>>();
        let (indptr, indices) = (to_usize(read_i64(&compressed)), to_usize(read_i64(&plain)));
        let data = m.values_flat().into_data().try_into_vec_as::<N>().map_err(|e| SparseError::InvalidArgument {
            operation,
            message: format!("the values do not read as {}: {e:?}", std::any::type_name::<N>()),
        })?;
        let [rows, cols] = self.shape();
        let built = if csc {
            CsMat::try_new_csc((rows, cols), indptr, indices, data)
        } else {
            CsMat::try_new((rows, cols), indptr, indices, data)
        };
        built.map_err(|(.., e)| SparseError::InvalidArgument {
            operation,
            message: format!("sprs refuses the {} arrays: {e}", m.layout().name()),
        })
    }
}

/// [`SparseTensor::to_sprs`].
impl<N: burn::tensor::Element> TryFrom<&SparseTensor<2>> for CsMat<N> {
    type Error = SparseError;

    fn try_from(s: &SparseTensor<2>) -> Result<Self> {
        s.to_sprs()
    }
}

/// [`SparseTensor::from_sprs`] on burn's default device.
impl<N, I, Iptr, IptrS, IndS, DataS> TryFrom<&CsMatBase<N, I, IptrS, IndS, DataS, Iptr>> for SparseTensor<2>
where
    N: burn::tensor::Element + Copy,
    I: SpIndex,
    Iptr: SpIndex,
    IptrS: Deref<Target = [Iptr]>,
    IndS: Deref<Target = [I]>,
    DataS: Deref<Target = [N]>,
{
    type Error = SparseError;

    fn try_from(m: &CsMatBase<N, I, IptrS, IndS, DataS, Iptr>) -> Result<Self> {
        Self::from_sprs(m, &Device::default())
    }
}
