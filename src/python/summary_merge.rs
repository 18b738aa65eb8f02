//! Binding of the summary merged into a neighbour message (`WireFormat::merge_text`): the core
//! says where the text block goes in the message's own format; this applies it to a copy.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;

use super::messages::{Keep, Walker};
use super::prune::{json_value, step_object, CopyOnWrite};
use crate::message::Format;
use crate::repair::Action;
use crate::wire::WireFormat;

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
    let fmt = WireFormat::parse(format).map_err(PyValueError::new_err)?;
    let edited = PyList::new(py, [message])?;
    let keep = Keep::new();
    let ms = Walker::new(py, &keep).messages(&edited)?;
    let fmt = match ms[0].wire {
        Format::LangChain => WireFormat::Chat,
        _ => fmt,
    };
    let (path, action) = fmt.merge_text(&ms[0], text, at_start);
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
        // `merge_text` only sets or inserts.
        Action::Remove => {}
    }
    edited.get_item(0)
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
    let fmt = WireFormat::parse(format).map_err(PyValueError::new_err)?;
    let edited = PyList::new(py, [message])?;
    let keep = Keep::new();
    let ms = Walker::new(py, &keep).messages(&edited)?;
    let fmt = match ms[0].wire {
        Format::LangChain => WireFormat::Chat,
        _ => fmt,
    };
    let Some((path, action, leads)) = fmt.unmerge_text(&ms[0]) else {
        return Ok(None);
    };
    let mut steps: Vec<Bound<'py, PyAny>> = path
        .iter()
        .map(|s| step_object(py, s))
        .collect::<PyResult<_>>()?;
    let mut cow = CopyOnWrite::new(&edited, copy);
    let last = steps.pop().expect("an unmerge names a key or a position");
    match action {
        Action::Set(value) => cow.set_at(0, &steps, &last, &json_value(py, &value)?)?,
        Action::Remove => cow.walk(0, &steps)?.del_item(last)?,
        // `unmerge_text` only sets or removes.
        Action::Insert { .. } => return Ok(None),
    }
    Ok(Some((edited.get_item(0)?, leads)))
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(merge_summary, m)?)?;
    m.add_function(wrap_pyfunction!(without_summary, m)?)
}
