//! The only place that speaks PyO3: converts Python objects into core views, calls the core with
//! the GIL released where the work is heavy, and converts results back. This file only
//! assembles the module; each binding lives in the file of its concept.

use pyo3::prelude::*;

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
