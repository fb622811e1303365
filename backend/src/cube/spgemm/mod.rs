//! Sparse x sparse on Cube devices, over CSR patterns whose rows are sorted and duplicate-free
//! (checked CSR tensors; `SparseSpgemm`' contract):
//!
//! - the pattern of a masked product `C<M> = A · B`: a unit per entry `(i, j)` of `M` walks row
//!   `i` of `A` and looks for `j` in each row `k` of `B` it picks; the entries found are kept
//!   (their count read back);
//! - the values of `A · B` on a given pattern of `C` (a mask's, or the product's own): a unit per
//!   entry `(i, j)` of `C` walks row `i` of `A` and finds `j` in each row `k` of `B` by bisection;
//! - the gradients on `A`'s pattern (a unit per entry `(i, k)`: row `k` of `B`, each column found
//!   in row `i` of `C`) and on `B`'s (a unit per entry `(k, j)`: column `k` of `A`, through `A`'s
//!   transposed view, sorted on the device, each row's `j` found in `C`);
//! - the product whole (expand, sort, compress): every partial product listed with its key
//!   `i · n + j` (a prefix sum of the row lengths of `B` places them), the keys sorted stably,
//!   each run of one key summed in the order of the products, as the host kernel accumulates
//!   them. Two integers are read back: the number of partial products and of distinct keys.
//!
//! Here the helpers every part shares (the bisection `find`, the index dtype the kernels read);
//! `numeric` holds the values and gradients on a given pattern, `pattern` the masked pattern and
//! the count of partial products, `product` the whole product.

use burn::backend::ops::IntTensorOps;
use burn::tensor::{DType, IntDType};
use burn_cubecl::cubecl::{self, prelude::*};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::CubeBackend;

mod numeric;
mod pattern;
mod product;

pub(crate) use numeric::{gradient_a, gradient_b, values_on, DevicePattern};
pub(crate) use pattern::{masked_pattern, product_count};
pub(crate) use product::product;

/// The position of `key` in the sorted `idx[start..end]`, or `end` where it is not there.
#[cube]
// Nested, not `lo < end && ..`: kernel code evaluates both operands, and `idx[end]` may lie
// past the tensor.
#[allow(clippy::collapsible_if)]
fn find<J: Int>(idx: &Tensor<J>, start: usize, end: usize, key: J) -> usize {
    let mut lo = start;
    let mut hi = end;
    while lo < hi {
        let mid = (lo + hi) / 2;
        if idx[mid] < key {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let mut at = end;
    if lo < end {
        if idx[lo] == key {
            at = lo;
        }
    }
    at
}

/// The index tensors in one dtype, as the kernels read them: i32 where all are, else i64.
fn one_index_type<const N: usize>(ts: [CubeTensor; N]) -> [CubeTensor; N] {
    let narrow = ts.iter().all(|t| t.dtype == DType::I32);
    let dtype = if narrow { IntDType::I32 } else { IntDType::I64 };
    ts.map(|t| {
        let t = if t.dtype == DType::from(dtype) {
            t
        } else {
            <CubeBackend as IntTensorOps<CubeBackend>>::int_cast(t, dtype)
        };
        into_contiguous(t)
    })
}

/// Whether the kernels take index tensors of these dtypes (32- and 64-bit integers).
pub(crate) fn takes(ts: &[&CubeTensor]) -> bool {
    ts.iter().all(|t| matches!(t.dtype, DType::I32 | DType::I64))
}
