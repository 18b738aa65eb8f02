//! `read_request` and `estimate_request`: a request body as the user passes it to the SDK, read
//! by the core's body readers (`crate::wire::request`), its values handed back unchanged.

use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::provider::Provider;
use crate::wire::{
    format_field, read_request_at as core_read_request, Body, History, ReadError, Thinking,
    ToolChoice, Turn,
};

use super::messages::{Keep, PyInput, Walker};

/// `(thinking, budget, reasoning_effort, tool_choice, tool_name, mcp_servers, server_tools,
/// cache_breakpoints)`.
type RawSettings = (
    &'static str,
    Option<u64>,
    Option<String>,
    Option<&'static str>,
    Option<String>,
    Vec<(String, String)>,
    Vec<String>,
    u32,
);

/// `(api, provider, model, messages, tools, system, response_format, settings, settings_tokens,
/// fields)`; `fields` is `(the body's field of each tool, of the structured-output option)`.
type RawRequest<'py> = (
    &'static str,
    &'static str,
    Option<String>,
    Bound<'py, PyAny>,
    Option<Bound<'py, PyList>>,
    Option<Bound<'py, PyAny>>,
    Option<Bound<'py, PyAny>>,
    RawSettings,
    u32,
    (Vec<String>, &'static str),
);

/// A body error: a `ValueError` whose `field` attribute names the body's field. An accessor's
/// own error (a schema that contains itself, a property that raises) read at a known `field`
/// becomes one too, with the original as its `__cause__`; what is not an `Exception`
/// (KeyboardInterrupt) passes through.
#[cold]
fn body_error(py: Python<'_>, (at, e): (String, ReadError<PyErr>)) -> PyErr {
    let named = |text: String, field: String| {
        let err = PyValueError::new_err(text);
        let _ = err.value(py).setattr("field", field);
        err
    };
    match e {
        ReadError::Source(err) if at.is_empty() || !err.is_instance_of::<PyException>(py) => err,
        ReadError::Source(cause) => {
            let kind = cause
                .get_type(py)
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default();
            let err = named(
                format!("{at}: could not be read: {kind}: {}", cause.value(py)),
                at,
            );
            err.set_cause(py, Some(cause));
            err
        }
        ReadError::Invalid { field, reason } => {
            let text = if field.is_empty() {
                reason
            } else {
                format!("{field}: {reason}")
            };
            named(text, field)
        }
    }
}

fn settings_of(b: &Body<'_, PyInput<'_, '_>>) -> RawSettings {
    let s = &b.settings;
    let (thinking, budget) = match s.thinking {
        Thinking::Off => ("off", None),
        Thinking::Enabled { budget } => ("enabled", budget),
        Thinking::Adaptive => ("adaptive", None),
    };
    let (choice, name) = match &s.tool_choice {
        ToolChoice::Unset => (None, None),
        ToolChoice::Auto => (Some("auto"), None),
        ToolChoice::None => (Some("none"), None),
        ToolChoice::Any => (Some("any"), None),
        ToolChoice::Tool(n) => (Some("tool"), Some(n.clone())),
    };
    (
        thinking,
        budget,
        s.reasoning_effort.clone(),
        choice,
        name,
        s.mcp_servers
            .iter()
            .map(|m| (m.name.clone(), m.url.clone()))
            .collect(),
        s.server_tools.clone(),
        s.cache_breakpoints,
    )
}

/// The history of a body as a Python list (the Responses API's string `input` as one user
/// message; Gemini parts given without their `Content` wrapped in one, as the SDK sends them).
fn history<'py>(py: Python<'py>, h: &History<'_, PyInput<'_, 'py>>) -> PyResult<Bound<'py, PyAny>> {
    Ok(match h {
        History::List(v) => v.value().clone(),
        History::Text(t) => {
            let m = PyDict::new(py);
            m.set_item("role", "user")?;
            m.set_item("content", t.as_ref())?;
            PyList::new(py, [m])?.into_any()
        }
        History::Turns(turns) => {
            let out = PyList::empty(py);
            for t in turns {
                match t {
                    Turn::Message(v) => out.append(v.value())?,
                    Turn::Parts { role, parts } => {
                        let m = PyDict::new(py);
                        m.set_item("role", *role)?;
                        m.set_item("parts", PyList::new(py, parts.iter().map(|p| p.value()))?)?;
                        out.append(m)?;
                    }
                }
            }
            out.into_any()
        }
    })
}

/// Read a request body: which API it is for, its history, tools, system prompt, structured
/// output and settings, and the tokens those settings add (see `contextfold.inputs`).
#[pyfunction]
#[pyo3(signature = (body, /, *, provider=None))]
fn read_request<'py>(
    py: Python<'py>,
    body: &Bound<'py, PyAny>,
    provider: Option<&str>,
) -> PyResult<RawRequest<'py>> {
    let forced = provider
        .map(Provider::parse)
        .transpose()
        .map_err(PyValueError::new_err)?;
    let keep = Keep::new();
    let w = Walker::new(py, &keep);
    let input = w.input(body);
    let b = core_read_request(&input, forced).map_err(|e| body_error(py, e))?;
    let provider = forced.unwrap_or(b.api.provider());
    let model = b.model.as_deref().map(str::to_string);
    let est = super::estimator_args::estimator(provider.name(), model.as_deref())?;
    let settings = est
        .body_tokens(b.api, &b.settings, !b.tools.is_empty())
        .round() as u32;
    let tools = if b.tools.is_empty() {
        None
    } else {
        Some(PyList::new(py, b.tools.iter().map(|t| t.value().clone()))?)
    };
    Ok((
        b.api.name(),
        provider.name(),
        model,
        history(py, &b.history)?,
        tools,
        b.system.as_ref().map(|s| s.value().clone()),
        b.response_format.as_ref().map(|r| r.value().clone()),
        settings_of(&b),
        settings,
        (b.tool_fields.clone(), format_field(&input, b.api)),
    ))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read_request, m)?)
}
