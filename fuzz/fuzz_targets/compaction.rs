#![no_main]
//! The compaction plan with every option, on agent histories with thinking in every wire
//! format (and on arbitrary decoded histories): see `checks::compaction` for what must hold.

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::compaction(data));
