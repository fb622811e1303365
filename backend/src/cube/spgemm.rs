//! Sparse x sparse on Cube devices, over CSR patterns whose rows are sorted and duplicate-free
//! (checked CSR tensors; `SpgemmKernels`' contract):
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

use super::census;
use burn::backend::cubecl::dtype_to_storage_type;
use burn::backend::ops::{FloatTensorOps, IntTensorOps};
use burn::tensor::{DType, FloatDType, IntDType, Shape};
use burn_cubecl::cubecl::{self, prelude::*};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::{empty_device_contiguous_dtype, zeros_client};
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::CubeBackend;

use super::keys::{flagged, inclusive_sum, keys_of_runs, offsets_of_runs, read_one, runs_of};
use super::sort::{bounds, expand, row_of, stable_sort};
use super::spmm::{assert_addressable, compressed_product, launch_dims, widened};

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

/// `out[p] = Σ_{q ∈ row i of A} a[q] · B[a_col[q], j]` for every entry `p = (i, j)` of `C`.
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
fn values_on_pattern<F: Float, P: Int>(
    a_crow: &Tensor<P>,
    a_col: &Tensor<P>,
    a_val: &Tensor<F>,
    b_crow: &Tensor<P>,
    b_col: &Tensor<P>,
    b_val: &Tensor<F>,
    c_crow: &Tensor<P>,
    c_col: &Tensor<P>,
    out: &mut Tensor<F>,
    m: usize,
    #[define(F, P)] _dtypes: [ElemType; 2],
) {
    let p = ABSOLUTE_POS;
    if p >= out.len() {
        terminate!();
    }
    let i = row_of::<P>(c_crow, m, p);
    let j = c_col[p];
    let mut acc = F::new(0.0);
    for q in usize::cast_from(a_crow[i])..usize::cast_from(a_crow[i + 1]) {
        let k = usize::cast_from(a_col[q]);
        let end = usize::cast_from(b_crow[k + 1]);
        let at = find::<P>(b_col, usize::cast_from(b_crow[k]), end, j);
        if at < end {
            acc += a_val[q] * b_val[at];
        }
    }
    out[p] = acc;
}

/// `out[q] = Σ_{r ∈ row k of B} b[r] · G[i, b_col[r]]` for every entry `q = (i, k)` of `A`,
/// `G` on `C`'s pattern.
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
fn gradient_on_first<F: Float, P: Int>(
    a_crow: &Tensor<P>,
    a_col: &Tensor<P>,
    b_crow: &Tensor<P>,
    b_col: &Tensor<P>,
    b_val: &Tensor<F>,
    c_crow: &Tensor<P>,
    c_col: &Tensor<P>,
    g: &Tensor<F>,
    out: &mut Tensor<F>,
    m: usize,
    #[define(F, P)] _dtypes: [ElemType; 2],
) {
    let q = ABSOLUTE_POS;
    if q >= out.len() {
        terminate!();
    }
    let i = row_of::<P>(a_crow, m, q);
    let k = usize::cast_from(a_col[q]);
    let (start, end) = (usize::cast_from(c_crow[i]), usize::cast_from(c_crow[i + 1]));
    let mut acc = F::new(0.0);
    for r in usize::cast_from(b_crow[k])..usize::cast_from(b_crow[k + 1]) {
        let at = find::<P>(c_col, start, end, b_col[r]);
        if at < end {
            acc += b_val[r] * g[at];
        }
    }
    out[q] = acc;
}

/// `out[r] = Σ_{t ∈ column k of A} a[order[t]] · G[rows[order[t]], j]` for every entry
/// `r = (k, j)` of `B`: `a_ccol` and `order` are `A`'s transposed view (the entries of each
/// column, in row order), `rows` the row of each entry of `A`.
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
fn gradient_on_second<F: Float, P: Int>(
    a_ccol: &Tensor<P>,
    order: &Tensor<P>,
    rows: &Tensor<P>,
    a_val: &Tensor<F>,
    b_crow: &Tensor<P>,
    b_col: &Tensor<P>,
    c_crow: &Tensor<P>,
    c_col: &Tensor<P>,
    g: &Tensor<F>,
    out: &mut Tensor<F>,
    k_rows: usize,
    #[define(F, P)] _dtypes: [ElemType; 2],
) {
    let r = ABSOLUTE_POS;
    if r >= out.len() {
        terminate!();
    }
    let k = row_of::<P>(b_crow, k_rows, r);
    let j = b_col[r];
    let mut acc = F::new(0.0);
    for t in usize::cast_from(a_ccol[k])..usize::cast_from(a_ccol[k + 1]) {
        let q = usize::cast_from(order[t]);
        let i = usize::cast_from(rows[q]);
        let end = usize::cast_from(c_crow[i + 1]);
        let at = find::<P>(c_col, usize::cast_from(c_crow[i]), end, j);
        if at < end {
            acc += a_val[q] * g[at];
        }
    }
    out[r] = acc;
}

/// `hits[p] = 1` where entry `p = (i, j)` of the mask `M` is reached by `A · B` (some entry
/// `(i, k)` of `A` meets an entry `(k, j)` of `B`), else 0: the symbolic pass of `C<M> = A · B`.
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
fn mask_hits<P: Int, Q: Int>(
    a_crow: &Tensor<P>,
    a_col: &Tensor<P>,
    b_crow: &Tensor<P>,
    b_col: &Tensor<P>,
    m_crow: &Tensor<P>,
    m_col: &Tensor<P>,
    hits: &mut Tensor<Q>,
    m: usize,
    #[define(P, Q)] _dtypes: [ElemType; 2],
) {
    let p = ABSOLUTE_POS;
    if p >= hits.len() {
        terminate!();
    }
    let i = row_of::<P>(m_crow, m, p);
    let j = m_col[p];
    let mut hit = Q::cast_from(0u32);
    for q in usize::cast_from(a_crow[i])..usize::cast_from(a_crow[i + 1]) {
        let k = usize::cast_from(a_col[q]);
        let end = usize::cast_from(b_crow[k + 1]);
        if find::<P>(b_col, usize::cast_from(b_crow[k]), end, j) < end {
            hit = Q::cast_from(1u32);
        }
    }
    hits[p] = hit;
}

/// `counts[q]`, the length of row `a_col[q]` of `B`: the partial products of entry `q` of `A`.
#[cube(launch)]
fn product_counts<P: Int>(
    a_col: &Tensor<P>,
    b_crow: &Tensor<P>,
    counts: &mut Tensor<P>,
    #[define(P)] _dtype: ElemType,
) {
    let q = ABSOLUTE_POS;
    if q >= counts.len() {
        terminate!();
    }
    let k = usize::cast_from(a_col[q]);
    counts[q] = b_crow[k + 1] - b_crow[k];
}

/// Every partial product of entry `q = (i, k)` of `A` with row `k` of `B`, at
/// `ends[q] - count .. ends[q]`: its key `i · n + j` and its value.
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
fn list_products<F: Float, P: Int, K: Int>(
    rows: &Tensor<P>,
    a_col: &Tensor<P>,
    a_val: &Tensor<F>,
    b_crow: &Tensor<P>,
    b_col: &Tensor<P>,
    b_val: &Tensor<F>,
    ends: &Tensor<P>,
    keys: &mut Tensor<K>,
    values: &mut Tensor<F>,
    n: usize,
    #[define(F, P, K)] _dtypes: [ElemType; 3],
) {
    let q = ABSOLUTE_POS;
    if q >= rows.len() {
        terminate!();
    }
    let k = usize::cast_from(a_col[q]);
    let (start, end) = (usize::cast_from(b_crow[k]), usize::cast_from(b_crow[k + 1]));
    let base = usize::cast_from(ends[q]) - (end - start);
    let row_key = K::cast_from(rows[q]) * K::cast_from(n);
    for r in start..end {
        keys[base + r - start] = row_key + K::cast_from(b_col[r]);
        values[base + r - start] = a_val[q] * b_val[r];
    }
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

/// The values of `A · B` on `C`'s pattern (`A [m, k]`, `B [k, n]`, `C [m, n]`, valid CSR
/// patterns with sorted, duplicate-free rows).
#[allow(clippy::too_many_arguments)]
pub(crate) fn values_on(
    a_crow: CubeTensor,
    a_col: CubeTensor,
    a_values: CubeTensor,
    b_crow: CubeTensor,
    b_col: CubeTensor,
    b_values: CubeTensor,
    c_crow: CubeTensor,
    c_col: CubeTensor,
) -> CubeTensor {
    widened([a_values, b_values], |[av, bv]| {
        let nnz_c = c_col.meta.num_elements();
        let m = a_crow.meta.num_elements() - 1;
        let (client, device, dtype) = (av.client.clone(), av.device.clone(), av.dtype);
        if nnz_c == 0 {
            return zeros_client(client, device, Shape::new([0]), dtype);
        }
        let [a_crow, a_col, b_crow, b_col, c_crow, c_col] =
            one_index_type([a_crow, a_col, b_crow, b_col, c_crow, c_col]);
        let out = empty_device_contiguous_dtype(client.clone(), device, Shape::new([nnz_c]), dtype);
        assert_addressable("spgemm", &[&a_col, &b_col, &out]);
        let (count, dim) = launch_dims(&out, nnz_c);
        let types = [dtype, a_crow.dtype].map(dtype_to_storage_type);
        census::launched("values_on_pattern");
        values_on_pattern::launch(
            &client,
            count,
            dim,
            a_crow.into_tensor_arg(),
            a_col.into_tensor_arg(),
            into_contiguous(av).into_tensor_arg(),
            b_crow.into_tensor_arg(),
            b_col.into_tensor_arg(),
            into_contiguous(bv).into_tensor_arg(),
            c_crow.into_tensor_arg(),
            c_col.into_tensor_arg(),
            out.clone().into_tensor_arg(),
            m,
            types,
        );
        out
    })
}

/// The gradient on `A`'s pattern of `A · B`'s values on `C` (`g [nnz_c]`): `(G · Bᵀ)` there.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gradient_a(
    a_crow: CubeTensor,
    a_col: CubeTensor,
    b_crow: CubeTensor,
    b_col: CubeTensor,
    b_values: CubeTensor,
    c_crow: CubeTensor,
    c_col: CubeTensor,
    g: CubeTensor,
) -> CubeTensor {
    widened([g, b_values], |[g, bv]| {
        let nnz_a = a_col.meta.num_elements();
        let m = a_crow.meta.num_elements() - 1;
        let (client, device, dtype) = (g.client.clone(), g.device.clone(), g.dtype);
        if nnz_a == 0 || g.meta.num_elements() == 0 {
            return zeros_client(client, device, Shape::new([nnz_a]), dtype);
        }
        let [a_crow, a_col, b_crow, b_col, c_crow, c_col] =
            one_index_type([a_crow, a_col, b_crow, b_col, c_crow, c_col]);
        let out = empty_device_contiguous_dtype(client.clone(), device, Shape::new([nnz_a]), dtype);
        assert_addressable("spgemm's gradient", &[&a_col, &b_col, &c_col, &out]);
        let (count, dim) = launch_dims(&out, nnz_a);
        let types = [dtype, a_crow.dtype].map(dtype_to_storage_type);
        census::launched("gradient_on_first");
        gradient_on_first::launch(
            &client,
            count,
            dim,
            a_crow.into_tensor_arg(),
            a_col.into_tensor_arg(),
            b_crow.into_tensor_arg(),
            b_col.into_tensor_arg(),
            into_contiguous(bv).into_tensor_arg(),
            c_crow.into_tensor_arg(),
            c_col.into_tensor_arg(),
            into_contiguous(g).into_tensor_arg(),
            out.clone().into_tensor_arg(),
            m,
            types,
        );
        out
    })
}

/// The gradient on `B`'s pattern of `A · B`'s values on `C` (`g [nnz_c]`): `(Aᵀ · G)` there,
/// through `A`'s transposed view, built on the device (a stable sort of `A`'s columns).
#[allow(clippy::too_many_arguments)]
pub(crate) fn gradient_b(
    a_crow: CubeTensor,
    a_col: CubeTensor,
    a_values: CubeTensor,
    b_crow: CubeTensor,
    b_col: CubeTensor,
    c_crow: CubeTensor,
    c_col: CubeTensor,
    g: CubeTensor,
) -> CubeTensor {
    widened([g, a_values], |[g, av]| {
        let nnz_b = b_col.meta.num_elements();
        let nnz_a = a_col.meta.num_elements();
        let k_rows = b_crow.meta.num_elements() - 1;
        let (client, device, dtype) = (g.client.clone(), g.device.clone(), g.dtype);
        if nnz_b == 0 || nnz_a == 0 || g.meta.num_elements() == 0 {
            return zeros_client(client, device, Shape::new([nnz_b]), dtype);
        }
        let [a_crow, a_col, b_crow, b_col, c_crow, c_col] =
            one_index_type([a_crow, a_col, b_crow, b_col, c_crow, c_col]);
        // `A`'s transposed view: its entries ordered by column (rows ascending within one).
        let rows = expand(a_crow, nnz_a);
        let (sorted, order) = stable_sort(a_col);
        let a_ccol = bounds(&sorted, k_rows);
        let [a_ccol, order, rows, b_crow, b_col, c_crow, c_col] =
            one_index_type([a_ccol, order, rows, b_crow, b_col, c_crow, c_col]);
        let out = empty_device_contiguous_dtype(client.clone(), device, Shape::new([nnz_b]), dtype);
        assert_addressable("spgemm's gradient", &[&rows, &b_col, &c_col, &out]);
        let (count, dim) = launch_dims(&out, nnz_b);
        let types = [dtype, a_ccol.dtype].map(dtype_to_storage_type);
        census::launched("gradient_on_second");
        gradient_on_second::launch(
            &client,
            count,
            dim,
            a_ccol.into_tensor_arg(),
            order.into_tensor_arg(),
            rows.into_tensor_arg(),
            into_contiguous(av).into_tensor_arg(),
            b_crow.into_tensor_arg(),
            b_col.into_tensor_arg(),
            c_crow.into_tensor_arg(),
            c_col.into_tensor_arg(),
            into_contiguous(g).into_tensor_arg(),
            out.clone().into_tensor_arg(),
            k_rows,
            types,
        );
        out
    })
}

/// The number of partial products of `A · B`, and each entry's end among them (the
/// inclusive sum of the row lengths of `B` its column picks).
fn product_ends(a_col: &CubeTensor, b_crow: &CubeTensor) -> (CubeTensor, u64) {
    let nnz_a = a_col.meta.num_elements();
    let counts =
        empty_device_contiguous_dtype(a_col.client.clone(), a_col.device.clone(), Shape::new([nnz_a]), DType::I64);
    let [a_col, b_crow] = one_index_type([a_col.clone(), b_crow.clone()]);
    let [a_col, b_crow] = if a_col.dtype == DType::I64 {
        [a_col, b_crow]
    } else {
        [a_col, b_crow].map(|t| <CubeBackend as IntTensorOps<CubeBackend>>::int_cast(t, IntDType::I64))
    };
    let (count, dim) = launch_dims(&counts, nnz_a);
    census::launched("product_counts");
    product_counts::launch(
        &counts.client,
        count,
        dim,
        a_col.into_tensor_arg(),
        b_crow.into_tensor_arg(),
        counts.clone().into_tensor_arg(),
        dtype_to_storage_type(DType::I64),
    );
    let ends = inclusive_sum(counts);
    let last = <CubeBackend as IntTensorOps<CubeBackend>>::int_slice(
        ends.clone(),
        &[burn::tensor::Slice::from(nnz_a - 1..nnz_a)],
    );
    let total = read_one(last) as u64;
    (ends, total)
}

/// The pattern of `C<M> = A · B` (`A [m, k]`, `B [k, n]`, the mask `M [m, n]`: valid CSR
/// patterns with sorted, duplicate-free rows): the entries of `M` the product reaches, as row
/// pointers `[m + 1]` and columns (in the index type of the operands, i32 where all are i32,
/// else i64). A unit per entry of `M` walks row `i` of `A` and looks for `j` in each row of `B`
/// it picks, by bisection. Reads back one integer, the number of entries.
pub(crate) fn masked_pattern(
    a_crow: CubeTensor,
    a_col: CubeTensor,
    b_crow: CubeTensor,
    b_col: CubeTensor,
    m_crow: CubeTensor,
    m_col: CubeTensor,
) -> (CubeTensor, CubeTensor) {
    let [a_crow, a_col, b_crow, b_col, m_crow, m_col] = one_index_type([a_crow, a_col, b_crow, b_col, m_crow, m_col]);
    let (m, nnz_m, idtype) = (m_crow.meta.num_elements() - 1, m_col.meta.num_elements(), m_col.dtype);
    let (client, device) = (m_col.client.clone(), m_col.device.clone());
    if nnz_m == 0 {
        let crow = zeros_client(client.clone(), device.clone(), Shape::new([m + 1]), idtype);
        return (crow, empty_device_contiguous_dtype(client, device, Shape::new([0]), idtype));
    }
    assert_addressable("spgemm", &[&a_col, &b_col, &m_col]);
    let pdtype = super::sort::position_dtype(nnz_m);
    let hits = empty_device_contiguous_dtype(client.clone(), device, Shape::new([nnz_m]), pdtype);
    let (count, dim) = launch_dims(&hits, nnz_m);
    census::launched("mask_hits");
    mask_hits::launch(
        &client,
        count,
        dim,
        a_crow.into_tensor_arg(),
        a_col.into_tensor_arg(),
        b_crow.into_tensor_arg(),
        b_col.into_tensor_arg(),
        m_crow.clone().into_tensor_arg(),
        m_col.clone().into_tensor_arg(),
        hits.clone().into_tensor_arg(),
        m,
        [idtype, pdtype].map(dtype_to_storage_type),
    );
    let kept = flagged(hits);
    let nnz = kept.meta.num_elements();
    if nnz == 0 {
        let crow = zeros_client(client.clone(), m_col.device.clone(), Shape::new([m + 1]), idtype);
        return (crow, empty_device_contiguous_dtype(client, m_col.device.clone(), Shape::new([0]), idtype));
    }
    let select = |t: CubeTensor| <CubeBackend as IntTensorOps<CubeBackend>>::int_select(t, 0, kept.clone());
    let rows = select(expand(m_crow, nnz_m));
    let col = into_contiguous(select(m_col));
    // The kept rows are non-decreasing (the mask's are, and `kept` ascends): their bounds.
    let crow = bounds(&into_contiguous(rows), m);
    let crow = if crow.dtype == idtype {
        crow
    } else {
        <CubeBackend as IntTensorOps<CubeBackend>>::int_cast(crow, IntDType::from(idtype))
    };
    (crow, col)
}

/// The number of partial products of `A · B` (`a_col`'s entries times the rows of `B` they
/// pick), computed on the device and read back.
pub(crate) fn product_count(a_col: &CubeTensor, b_crow: &CubeTensor) -> u64 {
    if a_col.meta.num_elements() == 0 {
        return 0;
    }
    product_ends(a_col, b_crow).1
}

/// `C = A · B` whole: `C`'s row pointers `[m + 1]` and sorted columns (int64) and its values,
/// summed per entry in the order of the partial products (that of the host kernel). `None`
/// where the partial products or the keys `i · n + j` would not fit the device sort (2^31 keys
/// and i64 keys): the caller takes the host route.
pub(crate) fn product(
    a_crow: CubeTensor,
    a_col: CubeTensor,
    a_values: CubeTensor,
    b_crow: CubeTensor,
    b_col: CubeTensor,
    b_values: CubeTensor,
    n: usize,
) -> Option<(CubeTensor, CubeTensor, CubeTensor)> {
    let m = a_crow.meta.num_elements() - 1;
    let nnz_a = a_col.meta.num_elements();
    if (m as u128) * (n as u128) > i64::MAX as u128 {
        return None;
    }
    let (client, device) = (a_col.client.clone(), a_col.device.clone());
    let (ends, total) = if nnz_a == 0 { (a_col.clone(), 0) } else { product_ends(&a_col, &b_crow) };
    if total == 0 {
        let crow = zeros_client(client.clone(), device.clone(), Shape::new([m + 1]), DType::I64);
        let col = zeros_client(client.clone(), device.clone(), Shape::new([0]), DType::I64);
        let values = zeros_client(client, device, Shape::new([0]), a_values.dtype);
        return Some((crow, col, values));
    }
    let total = usize::try_from(total).ok().filter(|&t| i32::try_from(t).is_ok())?;
    // 16-bit floats as f32, as `widened` does for the other products.
    let out_dtype = a_values.dtype;
    let wide = |t: CubeTensor| {
        if super::spmm::takes(t.dtype) {
            t
        } else {
            <CubeBackend as FloatTensorOps<CubeBackend>>::float_cast(t, FloatDType::F32)
        }
    };
    let (av, bv) = (wide(a_values), wide(b_values));
    let dtype = av.dtype;
    let kdtype = if (m as u128) * (n as u128) <= i32::MAX as u128 { DType::I32 } else { DType::I64 };
    let [a_crow, a_col, b_crow, b_col] = one_index_type([a_crow, a_col, b_crow, b_col]);
    let rows = expand(a_crow, nnz_a);
    let pdtype = rows.dtype;
    let ends = if ends.dtype == pdtype {
        ends
    } else {
        <CubeBackend as IntTensorOps<CubeBackend>>::int_cast(ends, IntDType::from(pdtype))
    };
    let keys = empty_device_contiguous_dtype(client.clone(), device.clone(), Shape::new([total]), kdtype);
    let partial = empty_device_contiguous_dtype(client.clone(), device.clone(), Shape::new([total]), dtype);
    assert_addressable("spgemm's partial products", &[&keys, &partial]);
    let (count, dim) = launch_dims(&rows, nnz_a);
    census::launched("list_products");
    list_products::launch(
        &client,
        count,
        dim,
        rows.into_tensor_arg(),
        a_col.into_tensor_arg(),
        into_contiguous(av).into_tensor_arg(),
        b_crow.into_tensor_arg(),
        b_col.into_tensor_arg(),
        into_contiguous(bv).into_tensor_arg(),
        into_contiguous(ends).into_tensor_arg(),
        keys.clone().into_tensor_arg(),
        partial.clone().into_tensor_arg(),
        n,
        [dtype, pdtype, kdtype].map(dtype_to_storage_type),
    );
    let (sorted, order) = stable_sort(keys);
    let (runs, unique) = runs_of(&sorted);
    let unique_keys = keys_of_runs(&sorted, &runs, unique);
    let offsets = offsets_of_runs(&sorted, runs, unique);
    let ones =
        <CubeBackend as FloatTensorOps<CubeBackend>>::float_ones(Shape::new([total]), &device, FloatDType::from(dtype));
    let partial = <CubeBackend as FloatTensorOps<CubeBackend>>::float_reshape(partial, Shape::new([total, 1]));
    let summed = compressed_product(offsets, order, None, ones, partial, None);
    let summed = <CubeBackend as FloatTensorOps<CubeBackend>>::float_reshape(summed, Shape::new([unique]));
    let values = if dtype == out_dtype {
        summed
    } else {
        <CubeBackend as FloatTensorOps<CubeBackend>>::float_cast(summed, FloatDType::from(out_dtype))
    };
    // The keys back to rows and columns, the rows compressed.
    let coords = super::keys::delinearize(unique_keys, &[m, n], DType::I64);
    let row = <CubeBackend as IntTensorOps<CubeBackend>>::int_slice(
        coords.clone(),
        &[burn::tensor::Slice::from(0..1), burn::tensor::Slice::from(0..unique)],
    );
    let row = <CubeBackend as IntTensorOps<CubeBackend>>::int_reshape(row, Shape::new([unique]));
    let col = <CubeBackend as IntTensorOps<CubeBackend>>::int_slice(
        coords,
        &[burn::tensor::Slice::from(1..2), burn::tensor::Slice::from(0..unique)],
    );
    let col = <CubeBackend as IntTensorOps<CubeBackend>>::int_reshape(col, Shape::new([unique]));
    let crow = bounds(&into_contiguous(row), m);
    let crow = <CubeBackend as IntTensorOps<CubeBackend>>::int_cast(crow, IntDType::I64);
    Some((crow, into_contiguous(col), values))
}
