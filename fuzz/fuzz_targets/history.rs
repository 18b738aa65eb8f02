#![no_main]
//! Histories decoded from arbitrary bytes through the estimator, exact counter, tail walk and
//! prune plan: see `checks::history` for what must hold.

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::history(data));
