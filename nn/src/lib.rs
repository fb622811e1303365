//! sparsegrad-nn: sparse neural-network layers for burn (sparse-weight linear layers and graph
//! convolutions). The layers arrive with the matmul family they are built on.

pub use sparsegrad_autodiff as autodiff;
pub use sparsegrad_backend as backend;
