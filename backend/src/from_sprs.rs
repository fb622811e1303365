//! Matrices from `sprs` (feature `sprs`): a `CsMat` becomes a CSR or CSC [`SparseTensor`] of
//! the same storage, its indices as int64 and its values in their own dtype.
//!
//! `TryFrom`, not `From`: an index that does not fit int64 (a `u64` index type) or a shape whose
//! element count overflows int64 is an error, not a panic. The checked constructor runs on the
//! converted arrays, so the result holds every invariant whatever `sprs` guaranteed.

use crate::error::{Result, SparseError};
use crate::layout::Layout;
use crate::tensor::SparseTensor;
use burn::tensor::Device;
use sprs::{CsMatBase, SpIndex};
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
