//! The pricing bindings: `estimate`, `estimate_each`, `request_overhead`, `wire_bytes`, one
//! image's tokens and size, and what a model name resolves to.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString};

use super::estimator_args::{
    add_signed, estimator, provider as parse_provider, resolve_sizes, size_fixes,
};
use super::messages::{Keep, Walker};
use super::priced_request::request_parts;
use super::{json_out, langchain_message};
use crate::estimate::Estimator;
use crate::image::{dims_of_base64, dims_of_bytes};
use crate::image_tokens::{image_tokens as image_cost, rule_for};
use crate::message::Detail;

/// Estimated prompt tokens of a whole request: every message plus the request overhead.
#[pyfunction]
#[pyo3(signature = (messages, /, *, provider="openai", model=None, tools=None, system=None, response_format=None, image_sizes=None))]
#[allow(clippy::too_many_arguments)]
fn estimate(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    provider: &str,
    model: Option<&str>,
    tools: Option<&Bound<'_, PyAny>>,
    system: Option<&Bound<'_, PyAny>>,
    response_format: Option<&Bound<'_, PyAny>>,
    image_sizes: Option<&Bound<'_, PyAny>>,
) -> PyResult<u64> {
    let keep = Keep::new();
    let w = Walker::new(py, &keep);
    let (mut est, extras) = request_parts(&w, provider, model, tools, system, response_format)?;
    // The messages first: their thought signatures may settle what the tools cost.
    let each = message_tokens(py, messages, &mut est, image_sizes)?;
    let overhead = u64::from(est.overhead(&extras));
    Ok(overhead + each.iter().map(|&t| u64::from(t)).sum::<u64>())
}

/// Estimated tokens of each message, envelope included.
#[pyfunction]
#[pyo3(signature = (messages, /, *, provider="openai", model=None, image_sizes=None))]
fn estimate_each(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    provider: &str,
    model: Option<&str>,
    image_sizes: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<u32>> {
    message_tokens(py, messages, &mut estimator(provider, model)?, image_sizes)
}

/// Each message's estimated tokens (`estimate_each`), the images the caller's `image_sizes`
/// knows priced at their size; `estimate` is their sum plus the request overhead. `est`
/// settles its serving platform on the messages (`Estimator::settle_platform`).
fn message_tokens(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    est: &mut Estimator,
    image_sizes: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<u32>> {
    if image_sizes.is_some_and(|s| !s.is_none()) {
        // The caller's sizes are looked up once per reference over the whole history.
        let keep = Keep::new();
        let ms = Walker::new(py, &keep).messages(messages)?;
        est.settle_platform(&ms);
        let est = *est;
        let sizes = resolve_sizes(image_sizes, &ms)?;
        return Ok(py.detach(|| {
            let fixes = size_fixes(est.image_rule(), &ms, &sizes);
            est.each(&ms)
                .into_iter()
                .zip(fixes)
                .map(|(t, d)| add_signed(u64::from(t), d) as u32)
                .collect()
        }));
    }
    // Priced as read, with the GIL held: pricing a chunk takes less time than releasing and
    // taking back the GIL would, and the samples are priced while still in the CPU's cache.
    // (Reading the whole history with `messages_priced`, which keeps every view for a planner,
    // measured 1.07x this.)
    let mut out = Vec::new();
    Walker::chunks(py, messages, |ms| {
        est.settle_platform(ms);
        out.extend(est.each(ms))
    })?;
    Ok(out)
}

/// Estimated tokens of what surrounds the messages: reply priming, system prompt, tools.
#[pyfunction]
#[pyo3(signature = (*, provider="openai", model=None, tools=None, system=None, response_format=None))]
fn request_overhead(
    py: Python<'_>,
    provider: &str,
    model: Option<&str>,
    tools: Option<&Bound<'_, PyAny>>,
    system: Option<&Bound<'_, PyAny>>,
    response_format: Option<&Bound<'_, PyAny>>,
) -> PyResult<u32> {
    let keep = Keep::new();
    let w = Walker::new(py, &keep);
    let (est, extras) = request_parts(&w, provider, model, tools, system, response_format)?;
    Ok(est.overhead(&extras))
}

/// Bytes of the messages serialized as compact UTF-8 JSON (the request body's share).
#[pyfunction]
#[pyo3(signature = (messages, /, *, provider="openai"))]
fn wire_bytes(py: Python<'_>, messages: &Bound<'_, PyAny>, provider: &str) -> PyResult<usize> {
    parse_provider(provider)?;
    // Validate like every other entry point so a malformed history fails the same way.
    let keep = Keep::new();
    Walker::new(py, &keep).messages(messages)?;
    // `[m0,m1,...]`, measured message by message so a failure names its message.
    let mut total = 2usize;
    for (i, m) in messages.try_iter()?.enumerate() {
        let m = m?;
        total += usize::from(i > 0)
            + if langchain_message::is_message(&m) {
                langchain_message::wire_json_len(&m)?
            } else {
                json_out::message_json_len(&m, i)?
            };
    }
    Ok(total)
}

/// Tokens one image costs with a provider's formula, from the pixel size in its header.
#[pyfunction]
#[pyo3(signature = (image, /, *, provider="openai", model=None, detail="auto"))]
fn image_tokens(
    image: &Bound<'_, PyAny>,
    provider: &str,
    model: Option<&str>,
    detail: &str,
) -> PyResult<u32> {
    // The model's family decides the formula; an unknown model the provider's default one.
    let info = crate::model_info::model_info(model.unwrap_or(""));
    let family = match info.family {
        crate::model_info::Family::Unknown => parse_provider(provider)?.default_family(),
        f => f,
    };
    let rule = rule_for(family.pricing_provider(), &info.base);
    let detail = Detail::parse(detail).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown detail {detail:?}; valid: auto, low, high, original"
        ))
    })?;
    let dims = if let Ok(s) = image.cast::<PyString>() {
        let s = s.to_str()?;
        if s.starts_with("data:") || !s.contains("://") {
            dims_of_base64(s)
        } else {
            None
        }
    } else if let Ok(b) = image.cast::<PyBytes>() {
        dims_of_bytes(b.as_bytes())
    } else if let Ok(b) = image.cast::<PyByteArray>() {
        dims_of_bytes(&b.to_vec())
    } else {
        return Err(PyTypeError::new_err(
            "image must be a data URL, a base64 string, a URL or bytes",
        ));
    };
    Ok(image_cost(rule, dims, detail))
}

/// What a model name resolves to, as the fields of `contextfold.ModelInfo`:
/// `(model, base, family, encoding, context_window, matched, resolved, unknown_overheads,
/// platform)`.
#[pyfunction]
#[pyo3(signature = (model, /))]
#[allow(clippy::type_complexity)]
fn _model_info(
    model: &str,
) -> (
    String,
    String,
    &'static str,
    Option<&'static str>,
    Option<u64>,
    Option<&'static str>,
    String,
    Vec<&'static str>,
    Option<&'static str>,
) {
    let i = crate::model_info::model_info(model);
    let resolved = i.resolved();
    (
        i.model,
        i.base,
        i.family.name(),
        i.encoding.map(|e| e.name()),
        i.context_window,
        i.matched,
        resolved,
        i.unknown_overheads.to_vec(),
        i.platform.map(|p| p.name()),
    )
}

/// Pixel size `(width, height)` read from an image header, or None when unreadable.
#[pyfunction]
#[pyo3(signature = (image, /))]
fn image_size(image: &Bound<'_, PyAny>) -> PyResult<Option<(u32, u32)>> {
    let dims = if let Ok(s) = image.cast::<PyString>() {
        dims_of_base64(s.to_str()?)
    } else if let Ok(b) = image.cast::<PyBytes>() {
        dims_of_bytes(b.as_bytes())
    } else if let Ok(b) = image.cast::<PyByteArray>() {
        dims_of_bytes(&b.to_vec())
    } else {
        return Err(PyTypeError::new_err(
            "image must be a data URL, a base64 string or bytes",
        ));
    };
    Ok(dims.map(|d| (d.width, d.height)))
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(estimate, m)?)?;
    m.add_function(wrap_pyfunction!(estimate_each, m)?)?;
    m.add_function(wrap_pyfunction!(request_overhead, m)?)?;
    m.add_function(wrap_pyfunction!(wire_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(image_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(image_size, m)?)?;
    m.add_function(wrap_pyfunction!(_model_info, m)?)?;
    Ok(())
}
