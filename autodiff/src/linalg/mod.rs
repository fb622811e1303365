//! torch's low-rank factorisations and eigensolver on sparse input (`sparsegrad::linalg`):
//! [`svd_lowrank`], [`pca_lowrank`] (`lowrank`) and [`lobpcg`] (`lobpcg`).
//!
//! They touch the sparse operand only through the library's `mm` (`A X` and `Aᵀ X`), so it is
//! never densified; the small dense pieces (thin QR, thin SVD, the symmetric eigenproblems of
//! Rayleigh-Ritz) run on the host with faer (`dense`), and `tracked` gives the QR and SVD
//! steps of `svd_lowrank` their derivatives, so that its outputs are differentiable w.r.t. the
//! sparse values as torch's are.

mod dense;
mod lobpcg;
mod lowrank;
mod tracked;

pub use lobpcg::lobpcg;
pub use lowrank::{pca_lowrank, svd_lowrank};
