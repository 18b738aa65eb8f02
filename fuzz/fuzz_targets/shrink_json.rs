#![no_main]
//! `shrink_json` on arbitrary bytes: see `checks::shrink_json` for what must hold.

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::shrink_json(data));
