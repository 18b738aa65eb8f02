//! Bindings of the identifier index (`crate::identifier_index`): one walk over the folded
//! messages, the ranked index rendered within a token budget.

use pyo3::prelude::*;

use super::read_cache::{with_messages, MessageCache};
use crate::identifier_index::{collect, index_at, prices, render_except, Shown, INDEX_HEADING};

/// The identifier index section of `messages` in at most `max_tokens` tokens, carrying the
/// identifiers of `previous` (a summary) first, without those `besides` (the summary text the
/// index is appended to) already shows; an empty string when nothing fits. `cache`: as
/// `compaction_plan`'s.
#[pyfunction]
#[pyo3(signature = (messages, /, *, max_tokens, provider="openai", model=None, previous=None, besides=None, cache=None))]
#[allow(clippy::too_many_arguments)]
fn identifier_index(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    max_tokens: u64,
    provider: &str,
    model: Option<&str>,
    previous: Option<&str>,
    besides: Option<&str>,
    cache: Option<&MessageCache>,
) -> PyResult<String> {
    let mut est = super::estimator_args::estimator(provider, model)?;
    with_messages(py, messages, cache, |ms| {
        est.settle_platform(ms);
        Ok(py.detach(|| {
            let idents = collect(ms, previous);
            let shown = besides.map_or_else(Vec::new, |t| Shown::new(&idents).flags(t));
            render_except(&idents, &prices(&idents, &est), &est, max_tokens, &shown)
        }))
    })
}

/// Where `summary`'s index section starts, in characters (`identifier_index::index_at`: the
/// last line that is the heading alone); None without one.
#[pyfunction]
fn identifier_index_at(summary: &str) -> Option<usize> {
    index_at(summary).map(|at| summary[..at].chars().count())
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("IDENTIFIER_INDEX_HEADING", INDEX_HEADING)?;
    m.add_function(wrap_pyfunction!(identifier_index_at, m)?)?;
    m.add_function(wrap_pyfunction!(identifier_index, m)?)
}
