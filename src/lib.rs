//! contextfold core: plain Rust, no PyO3 types outside `python/`.
//!
//! One concept per module; the Python bindings live in `python/` behind the `python` feature.

pub mod error;

#[cfg(feature = "python")]
mod python;
