//! Bindings of the exact OpenAI counter (`crate::exact`): `count`, `count_each`, `count_text`,
//! `encoding_for`, `preload`. The history is walked once with the GIL held (borrowing the
//! strings), then tokenized with the GIL released, so several Python threads count in parallel.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};

use crate::encoding::{encoding_for as core_encoding_for, Encoding, UnknownModel};
use crate::exact::Counter;
use crate::tool_render::Json;

use super::messages::{Keep, Walker};

static UNKNOWN_MODEL: PyOnceLock<Py<PyType>> = PyOnceLock::new();

#[cold]
fn unknown_model(py: Python<'_>, e: UnknownModel) -> PyErr {
    match UNKNOWN_MODEL.import(py, "contextfold.errors", "UnknownModelError") {
        Ok(cls) => match cls.call1((e.to_string(),)) {
            Ok(exc) => PyErr::from_value(exc),
            Err(err) => err,
        },
        Err(err) => err,
    }
}

pub(super) fn counter(py: Python<'_>, model: &str) -> PyResult<Counter> {
    Counter::new(model).map_err(|e| unknown_model(py, e))
}

// Deeper than any real schema; also stops self-referencing containers.
const MAX_DEPTH: usize = 256;

/// A Python value (dicts, lists, strings, numbers, pydantic models) as an ordered JSON value.
///
/// Dicts are read through a snapshot of their items, so a callback (a key's `__str__`, a
/// `model_dump`) that changes the dict cannot break the walk; a container met again inside
/// itself is a `ValueError` naming its path.
pub(super) fn to_json(v: &Bound<'_, PyAny>, path: &str, depth: usize) -> PyResult<Json> {
    let mut open = Vec::new();
    to_json_in(v, path, depth, &mut open)
}

fn enter(v: &Bound<'_, PyAny>, path: &str, open: &mut Vec<usize>) -> PyResult<()> {
    let id = v.as_ptr() as usize;
    if open.contains(&id) {
        return Err(PyValueError::new_err(format!(
            "{path}: a container that contains itself (cycle)"
        )));
    }
    open.push(id);
    Ok(())
}

fn to_json_in(
    v: &Bound<'_, PyAny>,
    path: &str,
    depth: usize,
    open: &mut Vec<usize>,
) -> PyResult<Json> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(format!(
            "{path}: nested deeper than {MAX_DEPTH} levels"
        )));
    }
    if v.is_none() {
        return Ok(Json::Null);
    }
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(Json::String(s.to_string_lossy().into_owned()));
    }
    if let Ok(b) = v.cast::<PyBool>() {
        return Ok(Json::Bool(b.is_true()));
    }
    if v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>() {
        // repr() of a finite float is what json.dumps writes.
        return Ok(Json::Number(v.repr()?.to_string_lossy().into_owned()));
    }
    if let Ok(d) = v.cast::<PyDict>() {
        enter(v, path, open)?;
        let items = d.items();
        let mut kv = Vec::with_capacity(items.len());
        for item in items.iter() {
            let (k, val): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
            let key = match k.cast::<PyString>() {
                Ok(s) => s.to_string_lossy().into_owned(),
                Err(_) => k.str()?.to_string_lossy().into_owned(),
            };
            let sub = to_json_in(&val, &format!("{path}.{key}"), depth + 1, open)?;
            kv.push((key, sub));
        }
        open.pop();
        return Ok(Json::Object(kv));
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        enter(v, path, open)?;
        let mut out = Vec::new();
        for (i, item) in v.try_iter()?.enumerate() {
            out.push(to_json_in(
                &item?,
                &format!("{path}[{i}]"),
                depth + 1,
                open,
            )?);
        }
        open.pop();
        return Ok(Json::Array(out));
    }
    // A mapping that is not a dict (`MappingProxyType`): the dict it reads as.
    if super::py_input::is_other_mapping(v) {
        enter(v, path, open)?;
        let d = v.py().get_type::<PyDict>().call1((v,))?;
        let out = to_json_in(&d, path, depth + 1, open)?;
        open.pop();
        return Ok(out);
    }
    // SDK objects (pydantic models): their JSON form, without unset optional fields.
    if let Ok(dump) = v.getattr(intern!(v.py(), "model_dump")) {
        enter(v, path, open)?;
        let kwargs = PyDict::new(v.py());
        kwargs.set_item("mode", "json")?;
        kwargs.set_item("exclude_none", true)?;
        let d = dump.call((), Some(&kwargs))?;
        let out = to_json_in(&d, path, depth + 1, open)?;
        open.pop();
        return Ok(out);
    }
    Err(PyTypeError::new_err(format!(
        "{path}: expected JSON-like data (dict, list, str, number, bool, None), got {}",
        v.get_type().name()?
    )))
}

pub(super) fn tools_json(tools: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<Json>> {
    let Some(t) = tools.filter(|t| !t.is_none()) else {
        return Ok(Vec::new());
    };
    if !(t.is_instance_of::<PyList>() || t.is_instance_of::<PyTuple>()) {
        return Err(PyTypeError::new_err(format!(
            "tools must be a list of tool definitions, got {}",
            t.get_type().name()?
        )));
    }
    let mut out = Vec::new();
    for (i, item) in t.try_iter()?.enumerate() {
        let item = item?;
        let json = to_json(&item, &format!("tools[{i}]"), 0)?;
        // As the estimate reads them (wire::read_tools): None, a number or a string is no
        // definition, and pricing its JSON would bill a tool the caller never meant.
        if !matches!(json, Json::Object(_)) {
            return Err(PyTypeError::new_err(format!(
                "tools[{i}]: {}",
                crate::wire::not_a_tool(&item.get_type().name()?.to_string())
            )));
        }
        out.push(json);
    }
    Ok(out)
}

/// Prompt tokens OpenAI bills for a chat.completions request (`api="responses"`: for a
/// Responses request, which bills tools and calls otherwise; by default, the API whose shape
/// the history shows: Responses items, else chat).
#[pyfunction]
#[pyo3(signature = (messages, /, *, model, tools=None, response_format=None, image_sizes=None, api=None))]
#[allow(clippy::too_many_arguments)]
fn count(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    model: &str,
    tools: Option<&Bound<'_, PyAny>>,
    response_format: Option<&Bound<'_, PyAny>>,
    image_sizes: Option<&Bound<'_, PyAny>>,
    api: Option<&str>,
) -> PyResult<u64> {
    let c = counter(py, model)?;
    let keep = Keep::new();
    let ms = Walker::new(py, &keep).messages(messages)?;
    let responses = match api {
        Some("chat") => false,
        Some("responses") => true,
        None => crate::wire::detect(&ms) == crate::message::Format::OpenAIResponses,
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "api must be \"chat\" or \"responses\", got {other:?}"
            )))
        }
    };
    let c = if responses { c.for_responses() } else { c };
    let tools = tools_json(tools)?;
    let rf = match response_format.filter(|r| !r.is_none()) {
        Some(r) => Some(to_json(r, "response_format", 0)?),
        None => None,
    };
    let sizes = super::estimator_args::resolve_sizes(image_sizes, &ms)?;
    Ok(py.detach(|| {
        let fix: i64 = super::estimator_args::size_fixes(c.image_rule(), &ms, &sizes)
            .iter()
            .sum();
        super::estimator_args::add_signed(c.count(&ms, &tools, rf.as_ref()), fix)
    }))
}

/// Exact tokens of each message, envelope included.
#[pyfunction]
#[pyo3(signature = (messages, /, *, model))]
fn count_each(py: Python<'_>, messages: &Bound<'_, PyAny>, model: &str) -> PyResult<Vec<u32>> {
    let c = counter(py, model)?;
    let keep = Keep::new();
    let ms = Walker::new(py, &keep).messages(messages)?;
    Ok(py.detach(|| c.count_each(&ms)))
}

/// Tokens of a text, special-token text counted as ordinary text.
#[pyfunction]
#[pyo3(signature = (text, /, *, model=None, encoding=None))]
fn count_text(
    py: Python<'_>,
    text: &Bound<'_, PyString>,
    model: Option<&str>,
    encoding: Option<&str>,
) -> PyResult<usize> {
    let enc = match (model, encoding) {
        (_, Some(name)) => Encoding::parse(name).ok_or_else(|| {
            PyValueError::new_err(format!(
                "unknown encoding {name:?}; valid: {}",
                Encoding::NAMES.join(", ")
            ))
        })?,
        (Some(m), None) => core_encoding_for(m).map_err(|e| unknown_model(py, e))?,
        (None, None) => {
            return Err(PyTypeError::new_err(
                "count_text() needs model= or encoding=",
            ))
        }
    };
    let s = text.to_string_lossy();
    Ok(py.detach(|| enc.count(&s)))
}

/// The tiktoken encoding name of an OpenAI model.
#[pyfunction]
fn encoding_for(py: Python<'_>, model: &str) -> PyResult<&'static str> {
    core_encoding_for(model)
        .map(Encoding::name)
        .map_err(|e| unknown_model(py, e))
}

/// Build the tokenizer vocabularies that pricing for `provider` / `model` counts with (the
/// estimator's exact encodings), with the GIL released; the names of those encodings.
#[pyfunction]
#[pyo3(signature = (*, provider="openai", model=None))]
fn preload(py: Python<'_>, provider: &str, model: Option<&str>) -> PyResult<Vec<&'static str>> {
    let encodings = super::estimator_args::estimator(provider, model)?.exact_encodings();
    // Built here rather than on a first request: that build holds the GIL for its 0.13-0.25 s
    // (the estimate prices with the GIL held), stalling every other Python thread.
    py.detach(|| encodings.iter().for_each(|e| e.preload()));
    Ok(encodings.iter().map(|e| e.name()).collect())
}

/// Benchmarks and tests: the vocabularies this process has built so far (o200k_base's serves
/// o200k_harmony too).
#[pyfunction]
fn _vocabularies_built() -> Vec<&'static str> {
    [Encoding::O200kBase, Encoding::Cl100kBase]
        .into_iter()
        .filter(|e| e.is_loaded())
        .map(Encoding::name)
        .collect()
}

/// Register this module's functions on `_core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(preload, m)?)?;
    m.add_function(wrap_pyfunction!(_vocabularies_built, m)?)?;
    m.add_function(wrap_pyfunction!(count, m)?)?;
    m.add_function(wrap_pyfunction!(count_each, m)?)?;
    m.add_function(wrap_pyfunction!(count_text, m)?)?;
    m.add_function(wrap_pyfunction!(encoding_for, m)?)?;
    Ok(())
}
