//! Bindings of the plain-text renderings (`crate::transcript`): the summarizer's transcript, the
//! report's previews and tool output texts, read by the same walk as every other binding.

use pyo3::prelude::*;

use super::messages::{Keep, Walker};
use crate::transcript;

/// One text entry per message, `"[i] role: ..."`; `max_block_chars` caps each text, argument
/// or tool result (characters); a message carrying `previous` (the summary being updated) is
/// rendered without it.
#[pyfunction]
#[pyo3(signature = (messages, /, *, max_block_chars=8_000, previous=None))]
fn render_transcript(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    max_block_chars: usize,
    previous: Option<&str>,
) -> PyResult<Vec<String>> {
    let keep = Keep::new();
    let ms = Walker::new(py, &keep).messages(messages)?;
    Ok(py.detach(|| transcript::render_transcript(&ms, max_block_chars, previous)))
}

/// `text` if it has at most `max_chars` characters, else its head (2/3) and tail (1/3) around
/// a `…[cut N chars]…` marker, at most `max_chars` characters in all.
#[pyfunction]
#[pyo3(signature = (text, max_chars, /))]
fn cap_text(text: &str, max_chars: usize) -> String {
    transcript::cap_text(text, max_chars).into_owned()
}

/// A one-line preview of each message, at most `width` characters.
#[pyfunction]
#[pyo3(signature = (messages, /, *, width=80))]
fn message_previews(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    width: usize,
) -> PyResult<Vec<String>> {
    let keep = Keep::new();
    let ms = Walker::new(py, &keep).messages(messages)?;
    Ok(py.detach(|| ms.iter().map(|m| transcript::preview(m, width)).collect()))
}

/// (message index, text) of every tool output (the user messages after the first for a text
/// agent without tool results).
#[pyfunction]
#[pyo3(signature = (messages, /))]
fn tool_output_texts(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
) -> PyResult<Vec<(usize, String)>> {
    let keep = Keep::new();
    let ms = Walker::new(py, &keep).messages(messages)?;
    Ok(py.detach(|| transcript::tool_outputs(&ms)))
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(render_transcript, m)?)?;
    m.add_function(wrap_pyfunction!(cap_text, m)?)?;
    m.add_function(wrap_pyfunction!(message_previews, m)?)?;
    m.add_function(wrap_pyfunction!(tool_output_texts, m)?)
}
