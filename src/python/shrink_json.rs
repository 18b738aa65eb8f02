//! Binding of `shrink_json`: one string in, one string out, the GIL released for big inputs.

use std::borrow::Cow;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyString};

use crate::shrink_json::{shrink_json_cow, MIN_MAX_CHARS};

// Below this the scan takes microseconds: releasing and re-taking the GIL would cost more.
const DETACH_BYTES: usize = 64 * 1024;

/// Shrink a JSON text (a tool call's arguments) to valid JSON of at most `max_chars`
/// characters; returns the same string object when it is valid JSON and already fits.
#[pyfunction]
#[pyo3(signature = (text, /, *, max_chars))]
fn shrink_json(
    py: Python<'_>,
    text: &Bound<'_, PyString>,
    max_chars: &Bound<'_, PyAny>,
) -> PyResult<Py<PyString>> {
    if max_chars.is_instance_of::<PyBool>() || !max_chars.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "max_chars must be an int, got {}",
            max_chars.get_type().name()?
        )));
    }
    // Beyond i64: larger than any text, so nothing is cut.
    let max_chars: i64 =
        max_chars
            .extract()
            .unwrap_or(if max_chars.gt(0)? { i64::MAX } else { i64::MIN });
    if max_chars < MIN_MAX_CHARS as i64 {
        return Err(PyValueError::new_err(format!(
            "max_chars must be at least {MIN_MAX_CHARS} (room for a valid JSON marker), got {max_chars}"
        )));
    }
    let max = usize::try_from(max_chars).unwrap_or(usize::MAX);
    // UnicodeEncodeError (a ValueError) for a str holding lone surrogates: not JSON text.
    let s = text.to_str()?;
    let run = || match shrink_json_cow(s, max) {
        Cow::Borrowed(_) => None,
        Cow::Owned(o) => Some(o),
    };
    let out = if s.len() > DETACH_BYTES {
        py.detach(run)
    } else {
        run()
    };
    Ok(match out {
        None => text.clone().unbind(),
        Some(o) => PyString::new(py, &o).unbind(),
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(shrink_json, m)?)
}
