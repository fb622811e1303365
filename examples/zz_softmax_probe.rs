#[path = "workloads/mod.rs"]
mod workloads;
use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use sparsegrad::prelude::*;
use std::time::Instant;
fn best<R>(mut f: impl FnMut() -> R) -> f64 {
    let mut b = f64::MAX;
    for _ in 0..7 { let t = Instant::now(); std::hint::black_box(f()); b = b.min(t.elapsed().as_secs_f64() * 1e3); }
    b
}
fn main() {
    let device = Device::flex();
    let a = workloads::powerlaw(100_000, 10.0, 1);
    let nnz = a.nnz();
    let crow = Tensor::<1, Int>::from_data(TensorData::new(a.crow.clone(), [a.rows + 1]), (&device, DType::I64));
    let col = Tensor::<1, Int>::from_data(TensorData::new(a.col.clone(), [nnz]), (&device, DType::I64));
    let val = Tensor::<1>::from_data(TensorData::new(a.val.clone(), [nnz]), &device);
    let s = SparseTensor::csr(crow, col, val, [a.rows, a.cols]).unwrap().to_sparse_coo();
    println!("full      {:.3}", best(|| sparsegrad::sparse::softmax(&s, 1)));
    println!("plan      {:.3}", best(|| s.segment_plan(1).unwrap()));
    let offs: Vec<i64> = a.crow.clone();
    println!("kernel    {:.3}", best(|| sparsegrad::backend::softmax::segment_softmax::<f32, i64, i64>(&a.val, 1, &offs, None, false)));
    println!("kernel lg {:.3}", best(|| sparsegrad::backend::softmax::segment_softmax::<f32, i64, i64>(&a.val, 1, &offs, None, true)));
    let exps: Vec<f32> = a.val.clone();
    println!("exp only  {:.3}", best(|| exps.iter().map(|v| v.exp()).sum::<f32>()));
    println!("threads {}", rayon::current_num_threads());
    let idx = s.indices_raw().unwrap();
    println!("read idx  {:.3}", best(|| sparsegrad::backend::host::with_ints(&idx, |v| v.len())));
    let rows: Vec<i64> = idx.clone().into_data().iter::<i64>().take(nnz).collect();
    println!("compress  {:.3}", best(|| sparsegrad::backend::algebra::compress::compress_sorted(&rows, 100_000)));
    println!("coalesce  {:.3}", best(|| s.coalesce()));
}
#[allow(dead_code)]
fn probe2() {}
