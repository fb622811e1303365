//! Training with sparse weights whose pattern changes: pattern surgery that keeps the training
//! state ([`rewire`]), and the methods that drive it, each a small type the training loop calls:
//!
//! - [`erk`]: how a budget of stored weights is shared between layers (Erdős–Rényi);
//! - [`gmp`]: gradual magnitude pruning (Zhu & Gupta 2017), a cubic sparsity schedule;
//! - [`set`]: Sparse Evolutionary Training (Mocanu et al. 2018), drop by magnitude, regrow at random;
//! - [`schedule`]: RigL's cosine drop schedule, which SET can follow too;
//! - [`rigl`]: RigL (Evci et al. 2020), drop by magnitude, grow where the dense gradient is
//!   largest, computed tile by tile so the dense gradient never exists whole.
//!
//! All work on [`crate::SparseLinear`]: a layer never holds a dense weight or a dense gradient;
//! after each change, [`rewire::rewire_optimizer`] moves the optimizer's per-entry state along.

pub mod erk;
pub mod gmp;
pub mod rewire;
pub mod rigl;
pub mod schedule;
pub mod set;

pub use erk::erdos_renyi_densities;
pub use gmp::GradualMagnitudePruning;
pub use rewire::{load_rewired, rewire_optimizer, Rewiring, GROWN};
pub use rigl::{top_gradient_positions, RigL, RigLConfig};
pub use schedule::DropSchedule;
pub use set::{Set, SetConfig};
