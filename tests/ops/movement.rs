//! The two value movements every conversion and `coalesce` are made of (`RowMovement`): the
//! scatter-add against a host sum in the same order (bit for bit in f32, which is what the
//! device's grouping of targets must preserve), and the gather, on the test device, with i64
//! and i32 targets, duplicates, runs in descending order, targets that receive nothing, and
//! more rows than one merge run or kernel unit covers.

use crate::common_ops::{self, Rng};
use burn::backend::Dispatch;
use burn::tensor::{DType, Int, Tensor, TensorData};
use sparsegrad::backend::movement::RowMovement;

fn scatter(values: &[f32], width: usize, targets: &[i64], rows: usize, dtype: DType) -> Vec<f32> {
    let device = common_ops::dev();
    let n = targets.len();
    let v = Tensor::<2>::from_data(TensorData::new(values.to_vec(), [n, width]), (&device, DType::F32));
    let t = common_ops::index_on(targets, [n], dtype, &device);
    let out = <Dispatch as RowMovement>::index_add_rows(v.into_dispatch(), t.into_dispatch(), rows);
    common_ops::f32s(Tensor::<2>::from_dispatch(out))
}

#[test]
fn index_add_rows_sums_in_target_order() {
    let mut rng = Rng(41);
    for (n, rows, width) in [(0, 3, 2), (1, 1, 1), (2, 5, 3), (3, 2, 1), (1000, 7, 3), (70_001, 5000, 1), (4097, 1, 2)]
    {
        // Random targets, then a descending run and a block of one repeated target.
        let mut targets: Vec<i64> = (0..n).map(|_| rng.below(rows) as i64).collect();
        let third = n / 3;
        for (k, t) in targets[..third].iter_mut().enumerate() {
            *t = ((third - k) % rows) as i64;
        }
        for t in targets[third..2 * third].iter_mut() {
            *t = (rows / 2) as i64;
        }
        let values: Vec<f32> = (0..n * width).map(|_| rng.value() as f32).collect();
        // The host sum in the order of the entries.
        let mut expected = vec![0f32; rows * width];
        for (j, &t) in targets.iter().enumerate() {
            for c in 0..width {
                expected[t as usize * width + c] += values[j * width + c];
            }
        }
        for dtype in [DType::I64, DType::I32] {
            let got = scatter(&values, width, &targets, rows, dtype);
            assert_eq!(got, expected, "n={n} rows={rows} width={width} {dtype:?}");
        }
    }
}

#[test]
fn gather_rows_reads_each_id() {
    let device = common_ops::dev();
    let mut rng = Rng(42);
    let (rows, width, n) = (300, 3, 2000);
    let values: Vec<f32> = (0..rows * width).map(|_| rng.value() as f32).collect();
    let ids: Vec<i64> = (0..n).map(|_| rng.below(rows) as i64).collect();
    let v = Tensor::<2>::from_data(TensorData::new(values.clone(), [rows, width]), (&device, DType::F32));
    let t: Tensor<1, Int> = common_ops::index_on(&ids, [n], DType::I64, &device);
    let got = common_ops::f32s(Tensor::<2>::from_dispatch(<Dispatch as RowMovement>::gather_rows(
        v.into_dispatch(),
        t.into_dispatch(),
    )));
    let expected: Vec<f32> = ids.iter().flat_map(|&i| values[i as usize * width..][..width].to_vec()).collect();
    assert_eq!(got, expected);
}
