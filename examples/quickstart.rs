//! The torch.sparse tour of the reference texts, in sparsegrad: construction, hybrid and
//! uncoalesced COO, coalescing, every compressed layout, conversions, TensorFlow's conventions,
//! and gradients flowing to the specified values.
//!
//! `cargo run --release --example quickstart`

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use clap::Parser;
use sparsegrad::gradcheck::{gradcheck, GradInput, GradcheckOptions};
use sparsegrad::prelude::*;

fn ints<const D: usize>(v: Vec<i64>, shape: [usize; D], device: &Device) -> Tensor<D, Int> {
    Tensor::from_data(TensorData::new(v, shape), (device, DType::I64))
}

/// The torch.sparse tour of the reference texts, in sparsegrad (a few seconds; no options).
#[derive(Parser, Debug)]
#[command(long_about = None)]
struct Args {}

fn main() -> Result<(), SparseError> {
    // `--help`, and an error for any flag: the tour takes none.
    Args::parse();
    let device = Device::flex();

    println!("# COO: entries 3 at (0, 2), 4 at (1, 0), 5 at (1, 2)");
    let s = SparseTensor::coo(
        ints(vec![0, 1, 1, 2, 0, 2], [2, 3], &device),
        Tensor::<1>::from_floats([3.0, 4.0, 5.0], &device),
        [2, 3],
    )?;
    println!("{s}\nto_dense: {:?}\n", s.to_dense().into_data().iter::<f32>().collect::<Vec<_>>());

    println!("# The same from entry rows, TensorFlow style ([nse, rank])");
    let rows = SparseTensor::coo_from_rows(
        ints(vec![0, 2, 1, 0, 1, 2], [3, 2], &device),
        Tensor::<1>::from_floats([3.0, 4.0, 5.0], &device),
        [2, 3],
    )?;
    println!("equal dense: {}\n", rows.to_dense().equal(s.to_dense()).all().into_scalar::<bool>());

    println!("# An empty COO tensor of size (2, 3)\n{}\n", SparseTensor::<2>::empty([2, 3], &device));

    println!("# Hybrid COO: 2 sparse + 1 dense dim");
    let h = SparseTensor::coo(
        ints(vec![0, 1, 1, 2, 0, 2], [2, 3], &device),
        Tensor::<2>::from_floats([[3.0, 4.0], [5.0, 6.0], [7.0, 8.0]], &device),
        [2, 3, 2],
    )?;
    println!("{h}\nsparse_dim {}, dense_dim {}\n", h.sparse_dim(), h.dense_dim());

    println!("# Uncoalesced: 3 and 4 both at index 1");
    let u = SparseTensor::coo(ints(vec![1, 1], [1, 2], &device), Tensor::<1>::from_floats([3.0, 4.0], &device), [3])?;
    println!("{u}\nindices(): {}", u.indices().unwrap_err());
    println!("coalesce():\n{}\n", u.coalesce());

    println!("# Dense -> CSR, CSC, BSR, BSC");
    let a = Tensor::<2>::from_data(
        TensorData::new(vec![0.0f64, 0., 1., 0., 1., 2., 0., 0., 0., 0., 0., 0.], [3, 4]),
        (&device, DType::F64),
    );
    println!("{}\n{}", a.clone().to_sparse_csr()?, a.clone().to_sparse_csc()?);
    let d = Tensor::<2>::from_data(
        TensorData::new((0..24).map(|v| v as f64).collect::<Vec<_>>(), [4, 6]),
        (&device, DType::F64),
    );
    let bsr = d.clone().to_sparse_bsr([2, 3])?;
    println!("{bsr}\n{}\n", bsr.to_sparse_bsc([2, 3])?);

    println!("# Batched CSR from a 3-D tensor (equal nse per batch entry)");
    let t = Tensor::<3>::from_floats([[[1.0, 0.0], [2.0, 3.0]], [[4.0, 0.0], [5.0, 6.0]]], &device);
    println!("{}\n", t.to_sparse_csr()?);

    println!("# CSR.t() is CSC over the same index arrays");
    let csr = s.to_sparse_csr()?;
    println!("{}\n", csr.t());

    println!("# TensorFlow: reorder, to_dense_with(default), validated conversion");
    let unsorted = SparseTensor::coo(
        ints(vec![1, 0, 2, 0], [2, 2], &device),
        Tensor::<1>::from_floats([1.0, 2.0], &device),
        [3, 4],
    )?;
    println!("{}", unsorted.reorder());
    println!("to_dense_with(-1): {:?}", unsorted.to_dense_with(-1.0).into_data().iter::<f32>().collect::<Vec<_>>());
    println!("validated: {}\n", unsorted.to_dense_validated(0.0).unwrap_err());

    println!("# Errors name the component, the position and the value");
    let bad = SparseTensor::coo(
        ints(vec![0, 5, 1, 0], [2, 2], &device),
        Tensor::<1>::from_floats([1.0, 2.0], &device),
        [2, 3],
    );
    println!("{}", bad.unwrap_err());
    let bad = SparseTensor::csr(
        ints(vec![0, 2, 1], [3], &device),
        ints(vec![0, 1], [2], &device),
        Tensor::<1>::from_floats([1.0, 2.0], &device),
        [2, 2],
    );
    println!("{}\n", bad.unwrap_err());

    println!("# Gradients reach only the specified values (COO -> CSR -> dense, checked numerically)");
    let ad = Device::flex().autodiff();
    let idx = ints(vec![0, 1, 1, 0, 2, 0, 2, 2], [2, 4], &ad);
    let v = Tensor::<1>::from_data(TensorData::new(vec![3.0f64, 4.0, 5.0, 1.0], [4]), (&ad, DType::F64)).require_grad();
    let w = Tensor::<2>::from_data(TensorData::new(vec![1.0f64, 2., 3., 4., 5., 6.], [2, 3]), (&ad, DType::F64));
    let x = SparseTensor::coo(idx, v.clone(), [2, 3])?;
    let grads = (x.to_sparse_csr()?.to_dense() * w).sum().backward();
    println!(
        "d loss / d values = {:?} (the weights at (0,2), (1,0), (1,2), (0,2))",
        v.grad(&grads).expect("tracked").into_data().iter::<f64>().collect::<Vec<_>>()
    );
    let pattern = x.detach();
    let report = gradcheck(
        |xs| {
            pattern
                .with_values(xs[0].clone().reshape([4, 1]))
                .to_sparse_csc()
                .expect("converts")
                .to_dense()
                .powi_scalar(2)
                .reshape([6])
        },
        &[GradInput::sparse("values", &pattern)],
        GradcheckOptions::default(),
    )
    .expect("gradients match central differences");
    println!("gradcheck: {} values checked, max |error| {:.1e}\n", report.checked, report.max_abs_error);

    println!("# sparse.mm with gradients: d/dvalues is sampled on the pattern (never a dense m x k matrix)");
    let xd = Tensor::<2>::from_data(TensorData::new(vec![1.0f64, 2., 3., 4., 5., 6.], [3, 2]), (&ad, DType::F64))
        .require_grad();
    let a = x.detach().coalesce().to_sparse_csr()?.require_grad();
    let y = sparse::mm(&a, xd.clone());
    println!("A @ X = {:?}", y.to_data().iter::<f64>().collect::<Vec<_>>());
    let grads = y.sum().backward();
    println!(
        "d sum(A @ X) / d values(A) = {:?}",
        a.values_flat().grad(&grads).expect("tracked").into_data().iter::<f64>().collect::<Vec<_>>()
    );
    println!(
        "d sum(A @ X) / d X = {:?}",
        xd.grad(&grads).expect("tracked").into_data().iter::<f64>().collect::<Vec<_>>()
    );
    let s_att = sparse::softmax(&a.detach(), 1);
    println!(
        "sparse softmax over each row's stored entries: {:?}\n",
        s_att.values_flat().into_data().iter::<f64>().collect::<Vec<_>>()
    );

    println!("# 2:4 semi-structured on the CPU (torch: CUDA only): torch's metadata, half the multiply-adds");
    let tiled: Vec<f32> = [0.0, 0.0, 1.0, 1.0].repeat(128 * 32);
    let a24 = sparse::to_sparse_semi_structured(
        Tensor::<2>::from_data(TensorData::new(tiled, [128, 128]), &device).cast(DType::F16),
    )?;
    println!("{a24}");
    println!("compression ratio {:.2} %", 100.0 * a24.compression_ratio());
    let w =
        Tensor::<2>::from_data(TensorData::new(vec![0.0f64, 2., 0., -1., 3., 0., 0., 4.], [2, 4]), (&ad, DType::F64));
    let w24 = SemiStructuredTensor::from_dense(w, SemiPattern::TwoFour)?;
    let kept = w24.values().require_grad();
    let w24 = w24.with_values(kept.clone());
    let xin = Tensor::<2>::from_data(TensorData::new(vec![1.0f64, 1., 1., 1.], [1, 4]), (&ad, DType::F64));
    let y = sparse::semi_structured::linear(xin, &w24, None);
    let grads = y.clone().sum().backward();
    println!(
        "linear(x, W 2:4) = {:?}; d/d kept values = {:?}",
        y.to_data().iter::<f64>().collect::<Vec<_>>(),
        kept.grad(&grads).expect("tracked").into_data().iter::<f64>().collect::<Vec<_>>()
    );
    Ok(())
}
