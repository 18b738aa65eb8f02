//! `breakdown`: the estimate split per message, by role and by kind, in one call.

use pyo3::prelude::*;

use crate::breakdown::{breakdown as core_breakdown, Kind};

use super::estimator_args::resolve_sizes;
use super::messages::{Keep, Walker};
use super::priced_request::request_parts;

/// Raw breakdown: `(total, kinds, roles, per_message, request, request_system, unmeasured)`.
/// `per_message` holds `(tokens, by_kind)` with `by_kind` ordered like `kinds`; `unmeasured`
/// holds `(index, kind, assumed_tokens, reason)`. `contextfold.breakdown` wraps it.
type Raw = (
    u64,
    Vec<&'static str>,
    Vec<String>,
    Vec<(u32, Vec<u64>)>,
    Vec<u64>,
    u64,
    Vec<(usize, String, u32, &'static str)>,
);

#[pyfunction]
#[pyo3(signature = (messages, /, *, provider="openai", model=None, tools=None, system=None, response_format=None, image_sizes=None))]
#[allow(clippy::too_many_arguments)]
fn breakdown(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    provider: &str,
    model: Option<&str>,
    tools: Option<&Bound<'_, PyAny>>,
    system: Option<&Bound<'_, PyAny>>,
    response_format: Option<&Bound<'_, PyAny>>,
    image_sizes: Option<&Bound<'_, PyAny>>,
) -> PyResult<Raw> {
    let keep = Keep::new();
    let mut w = Walker::new(py, &keep);
    let (mut est, extras) = request_parts(&w, provider, model, tools, system, response_format)?;
    let ms = w.messages(messages)?;
    est.settle_platform(&ms);
    let sizes = resolve_sizes(image_sizes, &ms)?;
    let roles: Vec<String> = ms.iter().map(|m| m.role_str.to_string()).collect();
    let b = py.detach(|| core_breakdown(&est, &ms, &extras, &|r| sizes.get(r).copied()));
    Ok((
        b.total,
        Kind::ALL.iter().map(|k| k.name()).collect(),
        roles,
        b.per_message
            .into_iter()
            .map(|m| (m.tokens, m.by_kind.to_vec()))
            .collect(),
        b.request.to_vec(),
        b.request_system,
        b.unmeasured
            .into_iter()
            .map(|u| (u.index, u.kind, u.assumed_tokens, u.reason))
            .collect(),
    ))
}

/// Each tool's `(name, own cost)` (`Estimator::tool_costs`), in order; `contextfold.breakdown`
/// shares the tools' part of the overhead out in these proportions.
#[pyfunction]
#[pyo3(signature = (tools, /, *, provider="openai", model=None))]
fn tool_costs(
    py: Python<'_>,
    tools: &Bound<'_, PyAny>,
    provider: &str,
    model: Option<&str>,
) -> PyResult<Vec<(String, f64)>> {
    let est = super::estimator_args::estimator(provider, model)?;
    let keep = Keep::new();
    let extras = Walker::new(py, &keep).extras(Some(tools), None, None)?;
    let costs = est.tool_costs(&extras.tools);
    Ok(extras
        .tools
        .iter()
        .zip(costs)
        .map(|(t, c)| (t.name.to_string(), c))
        .collect())
}

/// The names of the tools `messages` call (OpenAI `tool_calls`, Anthropic `tool_use`, Gemini
/// `functionCall`, ... : every format the reader knows), sorted.
#[pyfunction]
#[pyo3(signature = (messages, /))]
fn called_tools(py: Python<'_>, messages: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    use crate::message::{Content, Part};
    let keep = Keep::new();
    let ms = Walker::new(py, &keep).messages(messages)?;
    let mut names = std::collections::BTreeSet::new();
    for m in &ms {
        names.extend(m.tool_calls.iter().map(|c| c.name.to_string()));
        if let Content::Parts(parts) = &m.content {
            for p in parts {
                if let Part::ToolUse(c) = p {
                    names.insert(c.name.to_string());
                }
            }
        }
    }
    Ok(names.into_iter().collect())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(breakdown, m)?)?;
    m.add_function(wrap_pyfunction!(tool_costs, m)?)?;
    m.add_function(wrap_pyfunction!(called_tools, m)?)
}
