//! serde `Serialize` / `Deserialize` for [`SparseTensor`] (feature `serde`): the layout, shape,
//! dims and block size, and the components as burn `TensorData` (dtype and shape included), as
//! stored: indices in their own dtype, values folded to `[batch * nse, item]`. Nothing is
//! converted, so a round trip gives the same tensor bit for bit, dtypes included.
//!
//! Serialized bytes are untrusted input: deserializing checks the header (a known layout, dims
//! that add up to the rank, a block size exactly for BSR/BSC that divides the matrix), every
//! component's shape and dtype against it, and then the layout's invariants, as the checked
//! constructors do; a violation is a serde error carrying the [`SparseError`]'s message. The
//! tensor lands on burn's default device (move it with [`SparseTensor::to_device`]).

use crate::algebra::validate::{check_numel, check_shape, index_type};
use crate::error::{Result, SparseError};
use crate::layout::Layout;
use crate::module::coo_sorted_unique;
use crate::tensor::{Indices, SparseTensor, Trust};
use ::serde::{Deserialize, Deserializer, Serialize, Serializer};
use burn::tensor::{Device, Int, Tensor, TensorData};
use std::sync::Arc;

/// What is written: the header and the components as stored.
#[derive(Serialize, Deserialize)]
#[serde(rename = "SparseTensor")]
struct Repr {
    layout: String,
    shape: Vec<usize>,
    batch_dim: usize,
    dense_dim: usize,
    blocksize: Option<[usize; 2]>,
    coalesced: bool,
    /// COO `indices [sparse_dim, nse]`, or the compressed indices `[batch, n + 1]`.
    indices: TensorData,
    /// The plain indices `[batch, nse]` of a compressed layout.
    plain_indices: Option<TensorData>,
    /// `[batch * nse, item]`.
    values: TensorData,
}

impl<const D: usize> Serialize for SparseTensor<D> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        self.check_invariants().map_err(::serde::ser::Error::custom)?;
        let (indices, plain_indices) = match &self.indices {
            Indices::Coo(i) => (i.clone().into_data(), None),
            Indices::Compressed { compressed, plain, .. } => {
                (compressed.clone().into_data(), Some(plain.clone().into_data()))
            }
        };
        Repr {
            layout: self.layout.name().to_string(),
            shape: self.shape.to_vec(),
            batch_dim: self.batch_dim,
            dense_dim: self.dense_dim,
            blocksize: self.blocksize,
            coalesced: self.coalesced,
            indices,
            plain_indices,
            values: self.values.clone().into_data(),
        }
        .serialize(serializer)
    }
}

impl<'de, const D: usize> Deserialize<'de> for SparseTensor<D> {
    fn deserialize<De: Deserializer<'de>>(deserializer: De) -> std::result::Result<Self, De::Error> {
        let repr = Repr::deserialize(deserializer)?;
        from_repr(repr, &Device::default()).map_err(::serde::de::Error::custom)
    }
}

fn invalid(message: String) -> SparseError {
    crate::error::invalid("deserialize SparseTensor", message)
}

/// The tensor `repr` describes, every part checked (see the module docs).
fn from_repr<const D: usize>(repr: Repr, device: &Device) -> Result<SparseTensor<D>> {
    let layout = [Layout::Coo, Layout::Csr, Layout::Csc, Layout::Bsr, Layout::Bsc]
        .into_iter()
        .find(|l| l.name() == repr.layout)
        .ok_or_else(|| invalid(format!("unknown layout {:?}", repr.layout)))?;
    let shape: [usize; D] =
        repr.shape.as_slice().try_into().map_err(|_| invalid(format!("shape {:?} is not of rank {D}", repr.shape)))?;
    let (batch_dim, dense_dim) = (repr.batch_dim, repr.dense_dim);
    let sparse_dim =
        D.checked_sub(batch_dim).and_then(|d| d.checked_sub(dense_dim)).filter(|&s| s > 0).ok_or_else(|| {
            invalid(format!("{batch_dim} batch and {dense_dim} dense dims leave no sparse dim in rank {D}"))
        })?;
    if layout == Layout::Coo && batch_dim != 0 {
        return Err(invalid(format!("a COO tensor has no batch dims, {batch_dim} given")));
    }
    if layout.is_compressed() && sparse_dim != 2 {
        return Err(invalid(format!("a {} tensor has 2 sparse dims, {sparse_dim} given", layout.name())));
    }
    check_numel(&shape)?;
    let block = match (layout.is_blocked(), repr.blocksize) {
        (false, None) => [1, 1],
        (true, Some(b)) => {
            let (r, c) = (shape[batch_dim], shape[batch_dim + 1]);
            if b[0] == 0 || b[1] == 0 || r % b[0] != 0 || c % b[1] != 0 {
                return Err(invalid(format!("blocksize {b:?} does not divide the {r} x {c} matrix")));
            }
            b
        }
        (blocked, b) => {
            return Err(invalid(format!("{} with blocksize {b:?} (blocked: {blocked})", layout.name())));
        }
    };
    let indices_dtype = repr.indices.dtype();
    index_type(indices_dtype)?;
    check_shape(&shape[..batch_dim + sparse_dim], indices_dtype)?;
    if !repr.values.dtype().is_float() {
        return Err(SparseError::UnsupportedDtype { component: "values", dtype: format!("{:?}", repr.values.dtype()) });
    }
    // Counts from the header use checked arithmetic (a zero dim lets the others be anything).
    let batch = shape[..batch_dim]
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| invalid("the batch size overflows".into()))?;
    let item = shape[batch_dim + sparse_dim..]
        .iter()
        .try_fold(block[0] * block[1], |n, &d| n.checked_mul(d))
        .ok_or_else(|| invalid("the values' item size overflows".into()))?;
    let expect = |component: &'static str, actual: &[usize], expected: Vec<usize>| {
        if actual == expected.as_slice() {
            Ok(())
        } else {
            Err(SparseError::ShapeMismatch { component, expected, actual: actual.to_vec() })
        }
    };
    let (indices, nse) = match (&repr.plain_indices, layout.is_compressed()) {
        (None, false) => {
            let nse = repr.indices.shape().as_slice().get(1).copied().unwrap_or(0);
            expect("indices", repr.indices.shape().as_slice(), vec![sparse_dim, nse])?;
            (Indices::Coo(int_tensor(repr.indices, device)), nse)
        }
        (Some(p), true) => {
            let nse = p.shape().as_slice().get(1).copied().unwrap_or(0);
            let (cname, pname) = layout.index_names();
            let (rows, cols) = (shape[batch_dim] / block[0], shape[batch_dim + 1] / block[1]);
            let n = if layout.compresses_rows() { rows } else { cols };
            expect(cname, repr.indices.shape().as_slice(), vec![batch, n + 1])?;
            expect(pname, p.shape().as_slice(), vec![batch, nse])?;
            if p.dtype() != indices_dtype {
                return Err(invalid(format!("{cname} are {indices_dtype:?} but {pname} are {:?}", p.dtype())));
            }
            let p = repr.plain_indices.expect("matched Some");
            let compressed = int_tensor(repr.indices, device);
            let plain = int_tensor(p, device);
            (Indices::Compressed { compressed, plain, transposed: Arc::default() }, nse)
        }
        (p, _) => {
            return Err(invalid(format!(
                "{} with{} plain indices",
                layout.name(),
                if p.is_some() { "" } else { "out" }
            )));
        }
    };
    let rows = batch.checked_mul(nse).ok_or_else(|| invalid(format!("{batch} batches of {nse} entries overflow")))?;
    expect("values", repr.values.shape().as_slice(), vec![rows, item])?;
    let values_dtype = repr.values.dtype();
    let values = Tensor::<2>::from_data(repr.values, (device, values_dtype));
    let t = SparseTensor {
        layout,
        shape,
        batch_dim,
        sparse_dim,
        dense_dim,
        blocksize: layout.is_blocked().then_some(block),
        indices,
        values,
        coalesced: layout.is_compressed() || nse < 2,
        trust: Trust::unchecked(),
    };
    t.check_invariants()?;
    // A COO tensor said to be coalesced must be: indices in strictly increasing order.
    let coalesced = t.coalesced || (repr.coalesced && coo_sorted_unique(&t));
    if repr.coalesced && !coalesced {
        return Err(invalid("marked coalesced, but its indices are not sorted and unique".into()));
    }
    Ok(SparseTensor { coalesced, trust: Trust::Checked, ..t })
}

/// An Int tensor of `data` in its own dtype.
fn int_tensor(data: TensorData, device: &Device) -> Tensor<2, Int> {
    let dtype = data.dtype();
    Tensor::<2, Int>::from_data(data, (device, dtype))
}
