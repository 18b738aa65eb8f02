//! Binding of the summary merged into a neighbour message (`WireFormat::merge_text`): the core
//! says where the text block goes in the message's own format; this applies it to a copy.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::messages::{Keep, Walker};
use super::prune::{json_value, step_object, CopyOnWrite};
use crate::message::{Format, Message};
use crate::repair::Action;
use crate::wire::{Step, WireFormat};

/// A copy of `message` with the one edit `edit` makes to it (given its wire format, a LangChain
/// message read as chat, and its view) applied copy-on-write; None when `edit` makes none. The
/// caller's message is never changed; `copy` copies a container that is not a dict or list.
fn edited_copy<'py>(
    py: Python<'py>,
    message: &Bound<'py, PyAny>,
    format: &str,
    copy: &Bound<'py, PyAny>,
    edit: impl FnOnce(WireFormat, &Message<'_>) -> Option<(Vec<Step>, Action)>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let fmt = WireFormat::parse(format).map_err(PyValueError::new_err)?;
    let edited = PyList::new(py, [message])?;
    let keep = Keep::new();
    let ms = Walker::new(py, &keep).messages(&edited)?;
    let fmt = own_format(message, ms[0].wire, fmt)?;
    let Some((path, action)) = edit(fmt, &ms[0]) else {
        return Ok(None);
    };
    let mut steps: Vec<Bound<'py, PyAny>> = path
        .iter()
        .map(|s| step_object(py, s))
        .collect::<PyResult<_>>()?;
    let mut cow = CopyOnWrite::new(&edited, copy);
    match action {
        Action::Set(value) => {
            let last = steps.pop().expect("a set names a key");
            cow.set_at(0, &steps, &last, &json_value(py, &value)?)?;
        }
        Action::Insert { position, value } => {
            cow.walk(0, &steps)?
                .call_method1("insert", (position, json_value(py, &value)?))?;
        }
        Action::Remove => {
            let last = steps.pop().expect("a removal names a position");
            cow.walk(0, &steps)?.del_item(last)?;
        }
        // (Only a repair reorders a turn's blocks; no summary merge asks it.)
        Action::ResultsFirst | Action::Append { .. } => {}
    }
    Ok(Some(edited.get_item(0)?))
}

/// The format `message` is edited in: `history`'s (a LangChain message as chat), unless the
/// message is a dict without that format's content key: then its own format where it shows
/// one, else the format whose key it holds. (A plain `{"role", "content": []}` turn in a
/// Gemini history, whose key is `parts`: the edit walked to a key the message did not have, a
/// bare `KeyError('parts')` out of `compact`.)
fn own_format(
    message: &Bound<'_, PyAny>,
    read: Format,
    history: WireFormat,
) -> PyResult<WireFormat> {
    if read == Format::LangChain {
        return Ok(WireFormat::Chat);
    }
    let key = history.dialect().content_key;
    let Ok(dict) = message.cast::<PyDict>() else {
        return Ok(history);
    };
    if dict.contains(key)? {
        return Ok(history);
    }
    if let Some(own) = WireFormat::of(read) {
        return Ok(own);
    }
    Ok(match key {
        "parts" if dict.contains("content")? => WireFormat::Chat,
        "content" if dict.contains("parts")? => WireFormat::Gemini,
        _ => history,
    })
}

/// A copy of `message` carrying `text` as a text block of its content (first when
/// `at_start`, else last), written in `format` (a LangChain message as its chat blocks). The
/// caller's message is never changed; `copy` is the Python layer's copy of a container that is
/// not a dict or list (a LangChain message stays of its class).
#[pyfunction]
#[pyo3(signature = (message, text, /, *, format, at_start, copy))]
fn merge_summary<'py>(
    py: Python<'py>,
    message: &Bound<'py, PyAny>,
    text: &str,
    format: &str,
    at_start: bool,
    copy: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let merged = edited_copy(py, message, format, copy, |fmt, m| {
        Some(fmt.merge_text(m, text, at_start))
    })?;
    Ok(merged.expect("a merge always edits"))
}

/// A copy of `message` without the contextfold summary merged into it (`merge_summary`'s
/// inverse, `WireFormat::unmerge_text`), and whether the summary opened it; None when it holds
/// no summary, nothing besides one, or one inside a block with other text. The copy is for
/// reading the host's own words (a digest of the turns behind the summary), not for sending.
#[pyfunction]
#[pyo3(signature = (message, /, *, format, copy))]
fn without_summary<'py>(
    py: Python<'py>,
    message: &Bound<'py, PyAny>,
    format: &str,
    copy: &Bound<'py, PyAny>,
) -> PyResult<Option<(Bound<'py, PyAny>, bool)>> {
    let mut leads = false;
    let host = edited_copy(py, message, format, copy, |fmt, m| {
        let (path, action, first) = fmt.unmerge_text(m)?;
        leads = first;
        Some((path, action))
    })?;
    Ok(host.map(|h| (h, leads)))
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(merge_summary, m)?)?;
    m.add_function(wrap_pyfunction!(without_summary, m)?)
}
