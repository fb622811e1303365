use burn::tensor::{Device, Int, Tensor, TensorData};
use sparsegrad_backend::*;

#[test]
fn smoke() {
    let dev = Device::flex();
    let i = Tensor::<2, Int>::from_data(TensorData::new(vec![0i64, 1, 1, 2, 0, 2], [2, 3]), (&dev, burn::tensor::DType::I64));
    let v = Tensor::<1>::from_floats([3.0, 4.0, 5.0], &dev);
    let s = SparseTensor::<2>::coo(i, v, [2, 3]).unwrap();
    println!("{s}");
    println!("{}", s.to_dense());
    let csr = s.to_sparse_csr().unwrap();
    println!("{csr}");
    println!("{}", csr.to_sparse_csc().unwrap());
    println!("{}", csr.to_sparse_bsr([1, 3]).unwrap());
    let d = Tensor::<2>::from_floats([[0.0, 0.0, 1.0, 0.0], [1.0, 2.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]], &dev);
    println!("{}", d.clone().to_sparse_csc().unwrap());
    println!("{}", d.clone().to_sparse_bsr([1,2]).unwrap().to_dense());
    println!("{}", SparseTensor::<2>::empty([2, 3], &dev));
}
