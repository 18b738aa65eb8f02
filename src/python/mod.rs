//! The only place that speaks PyO3: converts Python objects into core views, calls the core with
//! the GIL released where the work is heavy, and converts results back. This file only
//! assembles the module; each binding lives in the file of its concept.

use pyo3::prelude::*;

// The extension's Rust allocations go to mimalloc (Python's own stay with Python's allocator):
// a compaction's digest builds and drops thousands of short strings and vectors, and glibc's
// malloc and free (merging chunks, `malloc_consolidate`) were about an eighth of the SWE
// compactions' CPU under `perf`. `benches/ab_packages.py` (alternated rounds, a shared machine)
// measured the package with mimalloc at 0.84 of the time the package before these speed
// changes took on the SWE compactions, where the same package without it took 0.98; 0.89
// against 0.94 on the 10k history.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

extern "C" {
    /// mimalloc's collection of free pages (compiled in with the allocator above).
    fn mi_collect(force: bool);
}

/// Give the pages the allocator holds free back to the system, after a large one-time
/// structure was dropped (mimalloc keeps freed pages for reuse, and they count as resident):
/// the encoder a tokenizer vocabulary is read back from (`bpe_count::after_build`).
fn return_free_memory() {
    // SAFETY: a plain call into the allocator linked above; it only walks its own free lists.
    unsafe { mi_collect(true) };
}

use crate::provider::Provider;

mod batch;
mod breakdown;
mod compaction;
mod estimate;
mod estimator_args;
mod exact;
mod exact_session;
mod floor_walk;
mod identifier_index;
mod json_out;
mod langchain_message;
mod list_layout;
mod messages;
mod options;
mod priced_request;
mod prune;
mod py_input;
mod read_cache;
mod recall;
mod repair;
mod request;
mod sdk_objects;
mod session;
mod shrink_json;
mod summary_merge;
mod transcript;

#[pymodule(gil_used = false)]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    crate::bpe_count::after_build(return_free_memory);
    m.add("PROVIDERS", Provider::NAMES.to_vec())?;
    estimate::register(m)?;
    batch::register(m)?;
    breakdown::register(m)?;
    compaction::register(m)?;
    identifier_index::register(m)?;
    exact::register(m)?;
    exact_session::register(m)?;
    floor_walk::register(m)?;
    options::register(m)?;
    priced_request::register(m)?;
    prune::register(m)?;
    read_cache::register(m)?;
    recall::register(m)?;
    repair::register(m)?;
    request::register(m)?;
    session::register(m)?;
    shrink_json::register(m)?;
    summary_merge::register(m)?;
    transcript::register(m)?;
    Ok(())
}
