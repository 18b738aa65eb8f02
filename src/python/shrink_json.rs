//! Binding of `shrink_json`; the GIL is released while a large document is shrunk.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::shrink_json::{shrink_json as shrink, MIN_MAX_CHARS};

/// Shrink JSON text to at most `max_chars` characters, keeping it valid JSON.
#[pyfunction]
#[pyo3(signature = (text, /, *, max_chars))]
fn shrink_json(py: Python<'_>, text: &str, max_chars: usize) -> PyResult<String> {
    if max_chars < MIN_MAX_CHARS {
        return Err(PyValueError::new_err(format!(
            "max_chars must be at least {MIN_MAX_CHARS} (room for a valid JSON marker), got {max_chars}"
        )));
    }
    if text.len() <= max_chars {
        return Ok(text.to_string());
    }
    Ok(py.detach(|| shrink(text, max_chars)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(shrink_json, m)?)
}
