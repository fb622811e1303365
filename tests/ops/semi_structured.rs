//! Semi-structured (2:4) tensors (docs/SPEC.md section 5): the reference's examples (torch.sparse 2.x,
//! "Разреженные полуструктурированные тензоры"), compression round trips for every dtype,
//! every rejection path, the products against burn's dense matmul in every arrangement, and
//! gradcheck of each op w.r.t. the kept values and the dense operand.

use crate::common_ops;

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use common_ops::{ad, assert_near, flat, gradcheck_all, Rng};
use sparsegrad::backend::semi_structured::metadata_dtype;
use sparsegrad::backend::util::reshape;
use sparsegrad::gradcheck::GradInput;
use sparsegrad::prelude::*;
use sparsegrad::sparse::semi_structured::{self as semi, to_sparse_semi_structured};

/// A dense `[rows, cols]` matrix following `pattern`: in each group of four, two (2:4) or one
/// per pair (1:2) non-zeros, sometimes fewer (groups with one or no non-zero).
fn patterned(rows: usize, cols: usize, pattern: SemiPattern, rng: &mut Rng) -> Vec<f64> {
    let mut d = vec![0.0; rows * cols];
    for r in 0..rows {
        for g in 0..cols / 4 {
            let at = r * cols + 4 * g;
            let keep = 2 - usize::from(rng.below(5) == 0) - usize::from(rng.below(7) == 0);
            match pattern {
                SemiPattern::TwoFour => {
                    let mut slots = [0usize, 1, 2, 3];
                    for i in 0..keep {
                        let j = i + rng.below(4 - i);
                        slots.swap(i, j);
                    }
                    for &s in &slots[..keep] {
                        d[at + s] = rng.value();
                    }
                }
                SemiPattern::OneTwo => {
                    for half in 0..keep {
                        d[at + 2 * half + rng.below(2)] = rng.value();
                    }
                }
            }
        }
    }
    d
}

fn dense(data: &[f64], shape: [usize; 2], dtype: DType, device: &Device) -> Tensor<2> {
    Tensor::<2>::from_data(TensorData::new(data.to_vec(), shape), (device, DType::F64)).cast(dtype)
}

fn host(t: Tensor<2>) -> Vec<f64> {
    t.cast(DType::F64).into_data().try_to_vec::<f64>().unwrap()
}

// ---------------------------------------------------------------- the reference's examples

/// `torch.Tensor([0, 0, 1, 1]).tile((128, 32)).half()` (the `.cuda()` dropped: this is the CPU).
fn tiled(rows: usize, reps: usize, dtype: DType) -> Tensor<2> {
    let data: Vec<f64> = [0.0, 0.0, 1.0, 1.0].repeat(reps * rows);
    dense(&data, [rows, 4 * reps], dtype, &crate::common_ops::dev())
}

#[test]
fn reference_tiled_pattern_compresses_to_the_printed_values() {
    let device = crate::common_ops::dev();
    let a = tiled(128, 32, DType::F16);
    let s = to_sparse_semi_structured(a.clone()).unwrap();
    assert_eq!(s.shape(), [128, 128]);
    assert!(!s.is_transposed());
    assert_eq!(s.pattern(), SemiPattern::TwoFour);
    assert_eq!(s.values().dims(), [128, 64]);
    assert_eq!(s.values().dtype(), DType::F16);
    assert!(host(s.values()).iter().all(|&v| v == 1.0));
    assert_eq!(s.metadata().dims(), [128, 8]);
    // i16 as torch's, where the device stores i16 (wgpu: i32 holding the same readings).
    assert_eq!(s.metadata().dtype(), metadata_dtype(&device));
    let meta = sparsegrad::backend::util::read_i64(&s.metadata());
    assert!(meta.iter().all(|&w| w == -4370), "torch prints metadata=tensor([[-4370, ...");
    assert_eq!(host(s.to_dense()), host(a));
    let expected = "SparseSemiStructuredTensor(shape=Size([128, 128]), transposed=False, values=tensor([[1., 1., 1.,  ..., 1., 1., 1.],
        [1., 1., 1.,  ..., 1., 1., 1.],
        [1., 1., 1.,  ..., 1., 1., 1.],
        ...,
        [1., 1., 1.,  ..., 1., 1., 1.],
        [1., 1., 1.,  ..., 1., 1., 1.],
        [1., 1., 1.,  ..., 1., 1., 1.]], dtype=float16), metadata=tensor([[-4370, -4370, -4370,  ..., -4370, -4370, -4370],
        [-4370, -4370, -4370,  ..., -4370, -4370, -4370],
        [-4370, -4370, -4370,  ..., -4370, -4370, -4370],
        ...,
        [-4370, -4370, -4370,  ..., -4370, -4370, -4370],
        [-4370, -4370, -4370,  ..., -4370, -4370, -4370],
        [-4370, -4370, -4370,  ..., -4370, -4370, -4370]], dtype=int16))";
    // The printed dtype is the stored one: int32 on a device without 16-bit integers.
    let stored = format!("dtype=int{}", if metadata_dtype(&device) == DType::I16 { 16 } else { 32 });
    assert_eq!(s.to_string(), expected.replace("dtype=int16", &stored));
}

#[test]
fn reference_mm_matches_dense_mm() {
    // a = tile((64, 16)).half(); b = rand(64, 64).half(); allclose(mm(a, b), mm(a_sparse, b)).
    let device = crate::common_ops::dev();
    let a = tiled(64, 16, DType::F16);
    let mut rng = Rng(7);
    let b: Vec<f64> = (0..64 * 64).map(|_| (rng.below(1000) as f64) / 1000.0).collect();
    let b = dense(&b, [64, 64], DType::F16, &device);
    let c = a.clone().matmul(b.clone());
    let a_sparse = to_sparse_semi_structured(a).unwrap();
    assert_near(&host(semi::mm(&a_sparse, b)), &host(c), 2e-3, "mm(a_sparse, b)");
}

#[test]
fn reference_linear_with_a_masked_weight() {
    // linear.weight = to_sparse_semi_structured(linear.weight.masked_fill(~mask, 0)).
    let device = crate::common_ops::dev();
    let mut rng = Rng(11);
    let input: Vec<f64> = (0..64 * 64).map(|_| rng.value()).collect();
    let weight: Vec<f64> = (0..64 * 64).map(|i| if i % 4 >= 2 { rng.value() } else { 0.0 }).collect();
    let bias: Vec<f64> = (0..64).map(|_| rng.value()).collect();
    let (x, w) = (dense(&input, [64, 64], DType::F16, &device), dense(&weight, [64, 64], DType::F16, &device));
    let b = Tensor::<1>::from_data(TensorData::new(bias, [64]), (&device, DType::F64)).cast(DType::F16);
    let expected = x.clone().matmul(w.clone().transpose()) + b.clone().unsqueeze::<2>();
    let ws = to_sparse_semi_structured(w).unwrap();
    assert_near(&host(semi::linear(x, &ws, Some(b))), &host(expected), 1e-2, "linear");
}

#[test]
fn compression_ratios_follow_the_reference_formula() {
    let device = crate::common_ops::dev();
    let ratio = |dtype| to_sparse_semi_structured(tiled(32, 16, dtype)).unwrap().compression_ratio();
    assert_eq!(ratio(DType::F16), 0.5625);
    assert_eq!(ratio(DType::BF16), 0.5625);
    let i8s =
        Tensor::<2, Int>::from_data(TensorData::new([0i8, 0, 1, 1].repeat(32 * 16), [32, 64]), (&device, DType::I8));
    let s = to_sparse_semi_structured(i8s).unwrap();
    assert_eq!(s.compression_ratio(), 0.625);
    // 64 x 64 f16: kept values 64 x 32 x 2 bytes + 64 x 4 metadata words x 2 bytes.
    assert_eq!(to_sparse_semi_structured(tiled(64, 16, DType::F16)).unwrap().memory_bytes(), 64 * 32 * 2 + 64 * 4 * 2);
}

// ---------------------------------------------------------------- round trips and rejections

#[test]
fn round_trips_for_every_dtype() {
    let device = crate::common_ops::dev();
    let mut rng = Rng(3);
    // Row lengths with a partial metadata word (20, 36) and whole words (64).
    for (rows, cols) in [(5, 20), (33, 64), (2, 36), (0, 8), (3, 0)] {
        for dtype in common_ops::stored_dtypes([DType::F16, DType::BF16, DType::F32, DType::F64]) {
            let pattern = sparsegrad::backend::semi_structured::semi_pattern_for(dtype).unwrap();
            let d = patterned(rows, cols, pattern, &mut rng);
            let t = dense(&d, [rows, cols], dtype, &device);
            let s = to_sparse_semi_structured(t.clone()).unwrap();
            assert_eq!(s.values().dims(), [rows, cols / 2]);
            assert_eq!(s.metadata().dims(), [rows, cols.div_ceil(16)]);
            assert_eq!(host(s.to_dense()), host(t.clone()), "{dtype:?} {rows}x{cols}");
            // 1:2 tensors are 2:4 tensors too; the explicit 2:4 constructor takes them.
            let s24 = SemiStructuredTensor::from_dense(t.clone(), SemiPattern::TwoFour).unwrap();
            assert_eq!(host(s24.to_dense()), host(t), "{dtype:?} as 2:4");
        }
        if !device.supports_dtype(DType::I8) {
            continue; // wgpu: WGSL has no 8-bit integers.
        }
        let d = patterned(rows, cols, SemiPattern::TwoFour, &mut rng);
        let ints: Vec<i8> = d.iter().map(|&v| (v * 40.0) as i8).collect();
        let t = Tensor::<2, Int>::from_data(TensorData::new(ints.clone(), [rows, cols]), (&device, DType::I8));
        let s = to_sparse_semi_structured(t).unwrap();
        assert_eq!(s.values().dtype(), DType::I8);
        assert_eq!(s.to_dense().into_data().try_to_vec::<i8>().unwrap(), ints, "i8 {rows}x{cols}");
    }
}

#[test]
fn transpose_is_a_flag_and_densifies_transposed() {
    let device = crate::common_ops::dev();
    let d = patterned(8, 12, SemiPattern::TwoFour, &mut Rng(5));
    let t = dense(&d, [8, 12], DType::F32, &device);
    let s = SemiStructuredTensor::from_dense(t.clone(), SemiPattern::TwoFour).unwrap();
    let st = s.t();
    assert!(st.is_transposed());
    assert_eq!(st.shape(), [12, 8]);
    assert_eq!(st.stored_shape(), [8, 12]);
    assert_eq!(host(st.to_dense()), host(t.transpose()));
    assert!(!st.t().is_transposed());
    assert!(st.to_string().starts_with("SparseSemiStructuredTensor(shape=Size([12, 8]), transposed=True, values="));
}

#[test]
fn rejections_name_what_and_where() {
    let device = crate::common_ops::dev();
    // Row 1, columns 4..7 hold three non-zeros.
    let mut d = vec![0.0; 2 * 8];
    d[8 + 4] = 1.0;
    d[8 + 5] = 2.0;
    d[8 + 7] = 3.0;
    let err = to_sparse_semi_structured(dense(&d, [2, 8], DType::F16, &device)).unwrap_err();
    assert_eq!(err, SparseError::PatternViolation { pattern: "2:4", row: 1, column: 4, nonzeros: 3 });
    assert_eq!(err.to_string(), "row 1, columns 4..7: 3 non-zeros in a group of 4, the 2:4 pattern keeps at most 2");
    // f32 follows torch's 1:2: [a, b, 0, 0] is 2:4 but not 1:2.
    let d = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0];
    let err = to_sparse_semi_structured(dense(&d, [1, 8], DType::F32, &device)).unwrap_err();
    assert_eq!(err, SparseError::PatternViolation { pattern: "1:2", row: 0, column: 6, nonzeros: 2 });
    assert!(SemiStructuredTensor::from_dense(dense(&d, [1, 8], DType::F32, &device), SemiPattern::TwoFour).is_ok());
    // Rows must be whole groups of four.
    let err = to_sparse_semi_structured(dense(&[0.0; 6], [1, 6], DType::F16, &device)).unwrap_err();
    assert!(matches!(err, SparseError::InvalidArgument { .. }) && err.to_string().contains("multiple of 4"), "{err}");
    // Integer tensors other than i8 are refused.
    let i32s = Tensor::<2, Int>::from_data(TensorData::new(vec![0i32; 8], [2, 4]), (&device, DType::I32));
    assert!(matches!(to_sparse_semi_structured(i32s), Err(SparseError::UnsupportedDtype { .. })));
    // from_parts checks shapes and the metadata's groups.
    let values = dense(&[1.0, 2.0], [1, 2], DType::F32, &device);
    let meta = |w: i16| Tensor::<2, Int>::from_data(TensorData::new(vec![w], [1, 1]), (&device, DType::I16));
    assert!(SemiStructuredTensor::from_parts(values.clone(), meta(0b1110), 4, SemiPattern::TwoFour).is_ok());
    let err = SemiStructuredTensor::from_parts(values.clone(), meta(0b0101), 4, SemiPattern::TwoFour).unwrap_err();
    assert!(err.to_string().contains("slots 1 and 1"), "{err}");
    let err = SemiStructuredTensor::from_parts(values.clone(), meta(0b1110), 4, SemiPattern::OneTwo).unwrap_err();
    assert!(err.to_string().contains("not a 1:2 group"), "{err}");
    let err = SemiStructuredTensor::from_parts(values.clone(), meta(0b1110 | 0b0100 << 4), 4, SemiPattern::TwoFour)
        .unwrap_err();
    assert!(err.to_string().contains("past the last group"), "{err}");
    let err = SemiStructuredTensor::from_parts(values, meta(0b1110), 8, SemiPattern::TwoFour).unwrap_err();
    assert_eq!(err, SparseError::ShapeMismatch { component: "values", expected: vec![1, 4], actual: vec![1, 2] });
    // Words in a wider dtype: their i16 or u16 reading is the same word; a value that is no
    // 16-bit word is refused, not truncated (0x1E444 would wrap to the valid word 0xE444).
    let wide = |w: i64| Tensor::<2, Int>::from_data(TensorData::new(vec![w], [1, 1]), (&device, DType::I64));
    let eight = dense(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [1, 8], DType::F32, &device);
    // 0xE444: groups 0-2 keep slots 0 and 1, group 3 slots 2 and 3 (16 columns).
    for w in [0xE444i64, 0xE444 - 0x10000] {
        let s = SemiStructuredTensor::from_parts(eight.clone(), wide(w), 16, SemiPattern::TwoFour).unwrap();
        assert_eq!(s.metadata().into_data().iter::<i64>().collect::<Vec<_>>(), vec![0xE444 - 0x10000], "word {w}");
    }
    let err = SemiStructuredTensor::from_parts(eight, wide(0x1E444), 16, SemiPattern::TwoFour).unwrap_err();
    assert!(
        matches!(err, SparseError::InvalidArgument { .. }) && err.to_string().contains("[0, 0] is 123972"),
        "{err}"
    );
    // Products check shapes and dtypes.
    let s = to_sparse_semi_structured(tiled(4, 2, DType::F16)).unwrap();
    let err = semi::try_mm(&s, Tensor::<2>::zeros([7, 3], (&device, DType::F16))).unwrap_err();
    assert!(err.to_string().contains("[4, 8] and [7, 3] cannot be multiplied"), "{err}");
    let err = semi::try_mm(&s, Tensor::<2>::zeros([8, 3], (&device, DType::F32))).unwrap_err();
    assert!(err.to_string().contains("dtypes differ"), "{err}");
    let err = semi::try_linear(Tensor::<2>::zeros([2, 5], (&device, DType::F16)), &s, None).unwrap_err();
    assert!(err.to_string().contains("input features"), "{err}");
}

// ---------------------------------------------------------------- products vs dense

/// Every op in every arrangement against burn's dense matmul on the densified operand (the
/// references on Flex: burn's Cube backend takes no element-wise op on an empty rank-2 tensor).
#[test]
fn products_match_dense_matmul() {
    let device = crate::common_ops::dev();
    let flex = |t: &Tensor<2>| t.clone().to_device(&Device::flex());
    let mut rng = Rng(21);
    for dtype in [DType::F32, DType::F64] {
        for (rows, cols, n) in [(6, 12, 5), (40, 64, 70), (3, 20, 1), (0, 8, 3), (4, 8, 0), (300, 16, 9), (7, 48, 33)] {
            let d = patterned(rows, cols, SemiPattern::TwoFour, &mut rng);
            let a = SemiStructuredTensor::from_dense(dense(&d, [rows, cols], dtype, &device), SemiPattern::TwoFour)
                .unwrap();
            let ad = flex(&a.to_dense());
            let tol = if dtype == DType::F32 { 1e-5 } else { 1e-12 };
            let x = |r: usize, c: usize, rng: &mut Rng| {
                dense(&(0..r * c).map(|_| rng.value()).collect::<Vec<_>>(), [r, c], dtype, &device)
            };
            let what = format!("{dtype:?} {rows}x{cols} n={n}");
            // A · X and Aᵀ · X.
            let xa = x(cols, n, &mut rng);
            assert_near(
                &host(semi::mm(&a, xa.clone())),
                &host(ad.clone().matmul(flex(&xa))),
                tol,
                &format!("mm {what}"),
            );
            let xt = x(rows, n, &mut rng);
            assert_near(
                &host(semi::mm(&a.t(), xt.clone())),
                &host(ad.clone().transpose().matmul(flex(&xt))),
                tol,
                &format!("mm t {what}"),
            );
            // X · A and X · Aᵀ.
            let xd = x(n, rows, &mut rng);
            assert_near(
                &host(semi::mm_dense_sparse(xd.clone(), &a)),
                &host(flex(&xd).matmul(ad.clone())),
                tol,
                &format!("dense·sparse {what}"),
            );
            let xl = x(n, cols, &mut rng);
            assert_near(
                &host(semi::mm_dense_sparse(xl.clone(), &a.t())),
                &host(flex(&xl).matmul(ad.clone().transpose())),
                tol,
                &format!("dense·sparseᵀ {what}"),
            );
            // addmm(bias, dense, sparse.t()) and linear with a 3-D input.
            let bias = x(1, rows, &mut rng);
            let expected = flex(&xl).matmul(ad.clone().transpose()).mul_scalar(0.5) + flex(&bias).mul_scalar(2.0);
            assert_near(
                &host(semi::addmm(bias.clone(), xl.clone(), &a.t(), 2.0, 0.5)),
                &host(expected),
                tol,
                &format!("addmm {what}"),
            );
            let b1: Tensor<1> = reshape(bias.clone(), [rows]);
            let x3: Tensor<3> = reshape(xl.clone(), [1, n, cols]);
            let y: Tensor<3> = semi::linear(x3, &a, Some(b1));
            let expected = flex(&xl).matmul(ad.transpose()) + flex(&bias);
            assert_near(&host(reshape(y, [n, rows])), &host(expected), tol, &format!("linear {what}"));
        }
    }
}

/// Words taken unchecked give the matrix they literally describe, in every integer type the
/// device stores: a repeated slot sums its two values, slots out of order are read as given, and
/// bits past the last group are ignored. Products and the values' gradient against the dense
/// matrix those words describe, built on the host.
#[test]
fn unchecked_words_give_the_matrix_they_describe() {
    let device = crate::common_ops::dev();
    let (rows, cols, n) = (3, 20, 4);
    // Per row, five nibbles (groups) and the bits past the fifth group in the second word.
    let nibbles: [[u16; 5]; 3] = [
        [0b0101, 0b0010, 0b1100, 0b1111, 0b0001],
        [0b0100, 0b1110, 0, 0b1001, 0b0110],
        [0b1011, 0b0111, 0b0101, 0b1000, 0b1101],
    ];
    let mut words = vec![0i64; rows * 2];
    let mut described = vec![0.0; rows * cols];
    let mut rng = Rng(17);
    let values: Vec<f64> = (0..rows * cols / 2).map(|_| rng.value()).collect();
    for (r, row) in nibbles.iter().enumerate() {
        for (g, &nib) in row.iter().enumerate() {
            words[r * 2 + g / 4] |= i64::from(nib) << (4 * (g % 4));
            described[r * cols + 4 * g + (nib & 3) as usize] += values[r * cols / 2 + 2 * g];
            described[r * cols + 4 * g + (nib >> 2) as usize] += values[r * cols / 2 + 2 * g + 1];
        }
        words[r * 2 + 1] |= 0xA5A0; // past the fifth group
    }
    let flex = Device::flex();
    let a_dense = dense(&described, [rows, cols], DType::F64, &flex);
    let x: Vec<f64> = (0..cols * n).map(|_| rng.value()).collect();
    let g: Vec<f64> = (0..rows * n).map(|_| rng.value()).collect();
    for dtype in [DType::I16, DType::I32, DType::I64].into_iter().filter(|&d| device.supports_dtype(d)) {
        // The i16 readings of the words (0xA5A0 and the high nibbles wrap), as torch stores them.
        let stored: Vec<i64> = words.iter().map(|&w| i64::from(w as u16 as i16)).collect();
        let meta = common_ops::index_on(&stored, [rows, 2], dtype, &device);
        let vals = dense(&values, [rows, cols / 2], DType::F64, &device);
        let a = SemiStructuredTensor::from_parts_unchecked(vals, meta, cols, SemiPattern::TwoFour);
        let what = format!("{dtype:?} words");
        assert_near(&host(a.to_dense()), &host(a_dense.clone()), 0.0, &format!("to_dense {what}"));
        let xm = dense(&x, [cols, n], DType::F64, &device);
        let expected = a_dense.clone().matmul(dense(&x, [cols, n], DType::F64, &flex));
        assert_near(&host(semi::mm(&a, xm)), &host(expected), 1e-12, &format!("mm {what}"));
        let gm = dense(&g, [rows, n], DType::F64, &device);
        let expected = a_dense.clone().transpose().matmul(dense(&g, [rows, n], DType::F64, &flex));
        assert_near(&host(semi::mm(&a.t(), gm)), &host(expected), 1e-12, &format!("mm t {what}"));
        let xl = dense(&x, [n, cols], DType::F64, &device);
        let expected = dense(&x, [n, cols], DType::F64, &flex).matmul(a_dense.clone().transpose());
        assert_near(&host(semi::linear(xl.clone(), &a, None)), &host(expected), 1e-12, &format!("linear {what}"));
        // The values' gradient of sum(linear(x, A) * G'), G' [n, rows]: (G'ᵀ X) at each slot's
        // column (both slots of a repeated one).
        let ad_device = device.clone().autodiff();
        let v = dense(&values, [rows, cols / 2], DType::F64, &ad_device).require_grad();
        let meta = common_ops::index_on(&stored, [rows, 2], dtype, &ad_device);
        let a = SemiStructuredTensor::from_parts_unchecked(v.clone(), meta, cols, SemiPattern::TwoFour);
        let gl = dense(&g, [n, rows], DType::F64, &ad_device);
        let grads = (semi::linear(dense(&x, [n, cols], DType::F64, &ad_device), &a, None) * gl).sum().backward();
        let gx =
            host(dense(&g, [n, rows], DType::F64, &flex).transpose().matmul(dense(&x, [n, cols], DType::F64, &flex)));
        let mut expected = vec![0.0; rows * cols / 2];
        for (r, row) in nibbles.iter().enumerate() {
            for (gi, &nib) in row.iter().enumerate() {
                expected[r * cols / 2 + 2 * gi] = gx[r * cols + 4 * gi + (nib & 3) as usize];
                expected[r * cols / 2 + 2 * gi + 1] = gx[r * cols + 4 * gi + (nib >> 2) as usize];
            }
        }
        assert_near(&host(v.grad(&grads).unwrap()), &expected, 1e-12, &format!("d values {what}"));
    }
}

/// The 16-bit types accumulate in f32: an f16 product equals the f32 product rounded once.
#[test]
fn half_precision_products_accumulate_in_f32() {
    let device = crate::common_ops::dev();
    let mut rng = Rng(8);
    let d = patterned(16, 256, SemiPattern::TwoFour, &mut rng);
    let x: Vec<f64> = (0..256 * 8).map(|_| rng.value()).collect();
    for dtype in common_ops::stored_dtypes([DType::F16, DType::BF16]) {
        let a = SemiStructuredTensor::from_dense(dense(&d, [16, 256], dtype, &device), SemiPattern::TwoFour).unwrap();
        let a32 = SemiStructuredTensor::from_dense(a.to_dense().cast(DType::F32), SemiPattern::TwoFour).unwrap();
        let xh = dense(&x, [256, 8], dtype, &device);
        let got = semi::mm(&a, xh.clone());
        assert_eq!(got.dtype(), dtype);
        let reference = semi::mm(&a32, xh.cast(DType::F32)).cast(dtype);
        assert_eq!(host(got), host(reference), "{dtype:?}");
        // A linear layer at decode size (3 and 8 rows: the 16-bit values read as stored, not
        // widened), as the f32 product rounded once.
        for rows in [3, 8] {
            let xl = dense(&x[..rows * 256], [rows, 256], dtype, &device);
            let got = semi::linear(xl.clone(), &a, None);
            assert_eq!(got.dtype(), dtype);
            let reference = semi::linear(xl.cast(DType::F32), &a32, None).cast(dtype);
            assert_eq!(host(got), host(reference), "linear {dtype:?} {rows} rows");
        }
    }
}

// ---------------------------------------------------------------- gradients

/// gradcheck in f64 through the 2:4 and 1:2 logic: w.r.t. the kept values (only they are
/// perturbed) and the dense operand, for every op and arrangement.
#[test]
fn gradcheck_every_op_and_arrangement() {
    let mut rng = Rng(99);
    for pattern in [SemiPattern::TwoFour, SemiPattern::OneTwo] {
        let (rows, cols, n) = (5, 12, 3);
        let d = patterned(rows, cols, pattern, &mut rng);
        let a = SemiStructuredTensor::from_dense(dense(&d, [rows, cols], DType::F64, &ad()), pattern).unwrap();
        let kept = GradInput { name: "values".into(), values: host(a.values()) };
        let x = |r: usize, c: usize, rng: &mut Rng| GradInput {
            name: "x".into(),
            values: (0..r * c).map(|_| rng.value()).collect(),
        };
        let with = |v: &Tensor<1>| a.with_values(v.clone().reshape([rows, cols / 2]));
        let xa = x(cols, n, &mut rng);
        gradcheck_all("mm", |t| flat(semi::mm(&with(&t[0]), t[1].clone().reshape([cols, n]))), &[kept.clone(), xa]);
        let xt = x(rows, n, &mut rng);
        gradcheck_all(
            "mm t",
            |t| flat(semi::mm(&with(&t[0]).t(), t[1].clone().reshape([rows, n]))),
            &[kept.clone(), xt],
        );
        let xd = x(n, rows, &mut rng);
        gradcheck_all(
            "dense·sparse",
            |t| flat(semi::mm_dense_sparse(t[1].clone().reshape([n, rows]), &with(&t[0]))),
            &[kept.clone(), xd],
        );
        let xl = x(n, cols, &mut rng);
        let bias = GradInput { name: "bias".into(), values: (0..rows).map(|_| rng.value()).collect() };
        gradcheck_all(
            "addmm",
            |t| {
                flat(semi::addmm(
                    t[2].clone().reshape([1, rows]),
                    t[1].clone().reshape([n, cols]),
                    &with(&t[0]).t(),
                    0.5,
                    2.0,
                ))
            },
            &[kept.clone(), xl.clone(), bias.clone()],
        );
        // beta = 0: the bias's values ignored, its gradient zeros (torch).
        gradcheck_all(
            "addmm beta 0",
            |t| {
                flat(semi::addmm(
                    t[2].clone().reshape([1, rows]),
                    t[1].clone().reshape([n, cols]),
                    &with(&t[0]).t(),
                    0.0,
                    2.0,
                ))
            },
            &[kept.clone(), xl.clone(), bias.clone()],
        );
        gradcheck_all(
            "linear",
            |t| flat(semi::linear(t[1].clone().reshape([n, cols]), &with(&t[0]), Some(t[2].clone()))),
            &[kept.clone(), xl, bias],
        );
    }
}

/// The values' gradient is the dense gradient at the kept positions (nothing for the pruned
/// ones), shaped like the kept values; the input's is `G · A`.
#[test]
fn gradients_stay_on_the_pattern() {
    let device = ad();
    let mut rng = Rng(4);
    let (rows, cols, n) = (6, 16, 4);
    let d = patterned(rows, cols, SemiPattern::TwoFour, &mut rng);
    let a =
        SemiStructuredTensor::from_dense(dense(&d, [rows, cols], DType::F64, &device), SemiPattern::TwoFour).unwrap();
    let values = a.values().require_grad();
    let a = a.with_values(values.clone());
    let xv: Vec<f64> = (0..n * cols).map(|_| rng.value()).collect();
    let x = dense(&xv, [n, cols], DType::F64, &device).require_grad();
    let y = semi::linear(x.clone(), &a, None);
    let w: Vec<f64> = (0..n * rows).map(|_| rng.value()).collect();
    let g = dense(&w, [n, rows], DType::F64, &device);
    let grads = (y * g.clone()).sum().backward();
    let gv = values.grad(&grads).unwrap();
    assert_eq!(gv.dims(), [rows, cols / 2]);
    // Dense reference: dL/dW = Gᵀ X, read at the kept columns.
    let gw = host(g.clone().transpose().matmul(x.clone()).inner());
    let kept = sparsegrad::backend::util::read_i64(&a.kept_columns());
    let expected: Vec<f64> = kept.iter().enumerate().map(|(i, &c)| gw[(i / (cols / 2)) * cols + c as usize]).collect();
    assert_near(&host(gv), &expected, 1e-12, "d values");
    let gx = x.grad(&grads).unwrap();
    assert_near(&host(gx), &host(g.inner().matmul(a.to_dense().inner())), 1e-12, "d x");
}

/// i8 products sum in i32 (torch's int8 semi-structured product returns int32): against the
/// dense integer product of the densified operand, at the i8 extremes, both orientations; a
/// float operand, a mismatched shape and a transposed view are refused.
#[test]
fn i8_products_sum_in_i32() {
    let device = crate::common_ops::dev();
    let (rows, cols, n) = (6, 24, 5);
    // Two kept per group of four, at positions that vary with the row; -128 and 127 included.
    let dense_a: Vec<i8> = (0..rows * cols)
        .map(|i| {
            let (r, c) = (i / cols, i % cols);
            if (c + r) % 4 < 2 {
                if (r + c) % 3 == 0 {
                    -128
                } else {
                    ((r * 31 + c * 17) % 255) as i8
                }
            } else {
                0
            }
        })
        .collect();
    let xs: Vec<i8> = (0..cols * n).map(|i| if i % 4 == 0 { -128 } else { (i * 53 % 255) as i8 }).collect();
    let ints = |v: &[i8], shape: [usize; 2]| {
        Tensor::<2, Int>::from_data(TensorData::new(v.to_vec(), shape), (&device, DType::I8))
    };
    let a = to_sparse_semi_structured(ints(&dense_a, [rows, cols])).unwrap();
    let host = |t: Tensor<2, Int>| t.into_data().iter::<i64>().collect::<Vec<_>>();
    let got = a.matmul_i32(ints(&xs, [cols, n])).unwrap();
    assert_eq!(got.dtype(), DType::I32);
    let want: Vec<i64> = (0..rows * n)
        .map(|i| (0..cols).map(|c| dense_a[(i / n) * cols + c] as i64 * xs[c * n + i % n] as i64).sum())
        .collect();
    assert_eq!(host(got), want);
    // x [n, cols] · Aᵀ.
    let xt: Vec<i8> = (0..n * cols).map(|i| xs[(i % cols) * n + i / cols]).collect();
    let got = a.linear_i32(ints(&xt, [n, cols])).unwrap();
    let want_t: Vec<i64> = (0..n * rows).map(|i| want[(i % rows) * n + i / rows]).collect();
    assert_eq!(host(got), want_t);
    // Refusals.
    let err = a.matmul_i32(Tensor::<2, Int>::zeros([cols, n], (&device, DType::I32))).unwrap_err();
    assert!(matches!(err, SparseError::UnsupportedDtype { .. }), "{err}");
    let err = a.matmul_i32(ints(&xs[..(cols - 4) * n], [cols - 4, n])).unwrap_err();
    assert!(err.to_string().contains("do not fit"), "{err}");
    let err = a.t().matmul_i32(ints(&xs[..rows * n], [rows, n])).unwrap_err();
    assert!(err.to_string().contains("transposed"), "{err}");
}

/// `addmm` with `beta = 0` gives the input a gradient of zeros of its shape, as torch does (burn
/// gives none for an input the graph never used), and its NaN reaches neither the result nor
/// the gradient.
#[test]
fn addmm_with_zero_beta_gives_the_input_a_zero_gradient() {
    let mut rng = Rng(7);
    let (rows, cols, n) = (4, 8, 3);
    let d = patterned(rows, cols, SemiPattern::TwoFour, &mut rng);
    let a = SemiStructuredTensor::from_dense(dense(&d, [rows, cols], DType::F64, &ad()), SemiPattern::TwoFour).unwrap();
    let x: Vec<f64> = (0..n * cols).map(|_| rng.value()).collect();
    let bias = dense(&[1.0, f64::NAN, 3.0, 4.0], [1, rows], DType::F64, &ad()).require_grad();
    let y = semi::addmm(bias.clone(), dense(&x, [n, cols], DType::F64, &ad()), &a.t(), 0.0, 2.0);
    let expected = semi::mm_dense_sparse(dense(&x, [n, cols], DType::F64, &ad()), &a.t()).mul_scalar(2.0);
    assert_eq!(host(y.clone()), host(expected));
    let grads = y.sum().backward();
    let g = bias.grad(&grads).expect("addmm with beta = 0 leaves the input a gradient");
    assert_eq!(g.dims(), [1, rows]);
    assert_eq!(host(g), vec![0.0; rows]);
}
