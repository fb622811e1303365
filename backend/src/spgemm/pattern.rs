//! The symbolic pass of SpGEMM: the pattern of a (masked) product on the host or on the device,
//! and the count of its partial products that bounds its memory.

use crate::host::{with_ints, IntSlice};
use burn::tensor::{Int, Tensor};
use sparsegrad_kernels::spgemm::{spgemm_products, spgemm_symbolic};

/// The pattern of `A · B` (or of `C<M> = A · B`) as row pointers and sorted columns, from the
/// index tensors of CSR operands `A [m, k]` (`a_crow`, `a_col`) and `B [k, n]` and an optional
/// mask `[m, n]` with sorted rows: the symbolic pass, on the host. Each pattern is checked
/// first: one that is not valid CSR of its shape is a panic naming it.
pub fn product_pattern(
    a: (&Tensor<1, Int>, &Tensor<1, Int>),
    b: (&Tensor<1, Int>, &Tensor<1, Int>),
    mask: Option<(&Tensor<1, Int>, &Tensor<1, Int>)>,
    k: usize,
    n: usize,
) -> crate::Result<(Vec<i64>, Vec<i64>)> {
    // Without a mask, A's own pattern stands in for the mask's slots (not read).
    let (mp, mc) = mask.unwrap_or(a);
    with_ints(a.0, |ap| {
        with_ints(a.1, |ai| {
            with_ints(b.0, |bp| {
                with_ints(b.1, |bi| {
                    with_ints(mp, |cp| {
                        with_ints(mc, |ci| {
                            let kc = if mask.is_some() { n } else { k };
                            with_three!([ap, ai, bp, bi, cp, ci], [k, n, kc], |a, b, c| spgemm_symbolic(
                                a,
                                b,
                                mask.is_some().then_some(c)
                            ))
                        })
                    })
                })
            })
        })
    })
}

/// The pattern of the masked product `C<M> = A · B`, as [`product_pattern`] computes it, on the
/// operands' device where the backend has the kernel (`IndexKernels::masked_product_pattern`:
/// a Cube device, reading back one count): row pointers and columns there, i32 or i64; `None`
/// where the symbolic pass runs on the host. The patterns are `A [m, k]`, `B [k, n]` and the
/// mask `[m, n]` with sorted rows (checked tensors'); the device kernel reads them through
/// checked launches (other patterns give a wrong pattern, never an access outside them).
pub fn masked_product_pattern_on_device(
    a: (&Tensor<1, Int>, &Tensor<1, Int>),
    b: (&Tensor<1, Int>, &Tensor<1, Int>),
    mask: (&Tensor<1, Int>, &Tensor<1, Int>),
) -> Option<(Tensor<1, Int>, Tensor<1, Int>)> {
    crate::index_kernels::device_masked_product_pattern(a, b, mask)
}

/// The number of partial products `a[i, p] * b[p, j]` of `A · B`, from the index tensors of
/// CSR operands `A [m, k]` and `B [k, n]`: a bound on the product's stored entries, for a
/// check of its memory before [`SparseSpgemm::csr_spgemm_product`](super::SparseSpgemm::csr_spgemm_product) runs.
///
/// # Errors
/// An `Allocation` error when the count overflows.
///
/// # Panics
/// On the host, where a pattern is not valid CSR of its shape (the device kernel reads them
/// through a checked launch).
pub fn product_count(
    a: (&Tensor<1, Int>, &Tensor<1, Int>),
    b: (&Tensor<1, Int>, &Tensor<1, Int>),
    k: usize,
    n: usize,
) -> crate::Result<u64> {
    if let Some(count) = crate::index_kernels::device_partial_products(a.1, b.0) {
        return Ok(count);
    }
    with_ints(a.0, |ap| {
        with_ints(a.1, |ai| {
            with_ints(b.0, |bp| {
                with_ints(b.1, |bi| {
                    // A's pattern stands in for C's slots (not read).
                    with_three!([ap, ai, bp, bi, ap, ai], [k, n, k], |a, b, _c| spgemm_products(a, b))
                })
            })
        })
    })
}
