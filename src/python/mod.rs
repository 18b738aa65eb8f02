//! The only place that speaks PyO3: converts Python objects into core views, calls the core with
//! the GIL released where the work is heavy, and converts results back.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString};

use crate::estimate::Estimator;
use crate::image::{dims_of_base64, dims_of_bytes};
use crate::image_tokens::{image_tokens as image_cost, rule_for};
use crate::message::Detail;
use crate::profile::Provider;

mod exact;
mod json_out;
mod messages;
mod prune;
mod session;
mod shrink_json;

use messages::{Keep, Walker};

fn provider(name: &str) -> PyResult<Provider> {
    Provider::parse(name).map_err(PyValueError::new_err)
}

/// Estimated prompt tokens of a whole request: every message plus the request overhead.
#[pyfunction]
#[pyo3(signature = (messages, /, *, provider="openai", model=None, tools=None, system=None))]
fn estimate(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    provider: &str,
    model: Option<&str>,
    tools: Option<&Bound<'_, PyAny>>,
    system: Option<&Bound<'_, PyAny>>,
) -> PyResult<u64> {
    let est = Estimator::new(self::provider(provider)?, model.unwrap_or(""));
    let keep = Keep::new();
    let mut w = Walker::new(py, &keep);
    let ms = w.messages(messages)?;
    let extras = w.extras(tools, system)?;
    Ok(py.detach(|| est.total(&ms, &extras)))
}

/// Estimated tokens of each message, envelope included.
#[pyfunction]
#[pyo3(signature = (messages, /, *, provider="openai", model=None))]
fn estimate_each(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    provider: &str,
    model: Option<&str>,
) -> PyResult<Vec<u32>> {
    let est = Estimator::new(self::provider(provider)?, model.unwrap_or(""));
    let keep = Keep::new();
    let ms = Walker::new(py, &keep).messages(messages)?;
    Ok(py.detach(|| est.each(&ms)))
}

/// Estimated tokens of what surrounds the messages: reply priming, system prompt, tools.
#[pyfunction]
#[pyo3(signature = (*, provider="openai", model=None, tools=None, system=None))]
fn request_overhead(
    py: Python<'_>,
    provider: &str,
    model: Option<&str>,
    tools: Option<&Bound<'_, PyAny>>,
    system: Option<&Bound<'_, PyAny>>,
) -> PyResult<u32> {
    let est = Estimator::new(self::provider(provider)?, model.unwrap_or(""));
    let keep = Keep::new();
    let extras = Walker::new(py, &keep).extras(tools, system)?;
    Ok(est.overhead(&extras))
}

/// Bytes of the messages serialized as compact UTF-8 JSON (the request body's share).
#[pyfunction]
#[pyo3(signature = (messages, /, *, provider="openai"))]
fn wire_bytes(py: Python<'_>, messages: &Bound<'_, PyAny>, provider: &str) -> PyResult<usize> {
    self::provider(provider)?;
    // Validate like every other entry point so a malformed history fails the same way.
    let keep = Keep::new();
    Walker::new(py, &keep).messages(messages)?;
    // `[m0,m1,...]`, measured message by message so a failure names its message.
    let mut total = 2usize;
    for (i, m) in messages.try_iter()?.enumerate() {
        total += usize::from(i > 0) + json_out::message_json_len(&m?, i)?;
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
    let rule = rule_for(self::provider(provider)?, model.unwrap_or(""));
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

#[pymodule(gil_used = false)]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("PROVIDERS", Provider::NAMES.to_vec())?;
    m.add_function(wrap_pyfunction!(estimate, m)?)?;
    m.add_function(wrap_pyfunction!(estimate_each, m)?)?;
    m.add_function(wrap_pyfunction!(request_overhead, m)?)?;
    m.add_function(wrap_pyfunction!(wire_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(image_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(image_size, m)?)?;
    exact::register(m)?;
    prune::register(m)?;
    session::register(m)?;
    shrink_json::register(m)?;
    Ok(())
}
