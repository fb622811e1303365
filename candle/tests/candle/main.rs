//! The candle frontend's tests, one module per topic, in one test binary (each binary links
//! candle and burn, so one link instead of one per file). Run one topic with a filter on its
//! module, e.g. `cargo test -p sparsegrad-candle --test candle ops::`.

mod common;

mod burn_parity;
mod constructors;
mod ops;
