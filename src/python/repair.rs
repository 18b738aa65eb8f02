//! Binding of the repair of a broken history (`crate::repair`): the core plans, this applies
//! the plan copy-on-write (the caller's objects are never changed) and assembles the list.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;

use super::messages::{Keep, Walker};
use super::prune::{json_value, step_object, CopyOnWrite};
use crate::compaction::WireFormat;
use crate::repair::{repair_history as plan_repair, Action, Slot};

/// `(repaired messages, changes)`: the history with stand-in results for unanswered calls,
/// results without a call dropped and duplicate call ids made unique (see `crate::repair`).
/// Unchanged messages are the caller's own objects; `copy` is the Python layer's copy of a
/// container that is not a dict or list. `like`, when given, turns each message the repair adds
/// (a stand-in result, built as a dict) into the history's own kind of message (a LangChain
/// `ToolMessage` in a history of LangChain messages). `held_upstream`: the history continues
/// one the provider holds (`crate::repair::repair_history`).
#[pyfunction]
#[pyo3(signature = (messages, /, *, format, copy, like=None, held_upstream=false))]
fn repair_history<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
    format: &str,
    copy: &Bound<'py, PyAny>,
    like: Option<&Bound<'py, PyAny>>,
    held_upstream: bool,
) -> PyResult<(Bound<'py, PyList>, Vec<String>)> {
    let fmt = WireFormat::parse(format).map_err(PyValueError::new_err)?;
    // One snapshot of the history: the plan reads it and the edits apply to it (read twice, a
    // list another thread changes while the GIL is released got a plan made for another list).
    let edited = PyList::new(py, Walker::snapshot(messages)?)?;
    let plan = {
        let keep = Keep::new();
        let ms = Walker::new(py, &keep).messages(edited.as_any())?;
        py.detach(|| plan_repair(&ms, fmt, held_upstream))
    };
    if plan.changes.is_empty() {
        return Ok((edited, Vec::new()));
    }
    let mut cow = CopyOnWrite::new(&edited, copy);
    let steps = |path: &[crate::wire::Step]| -> PyResult<Vec<Bound<'py, PyAny>>> {
        path.iter().map(|s| step_object(py, s)).collect()
    };
    // Sets name positions of the caller's lists: before any removal or insertion.
    for e in &plan.edits {
        if let Action::Set(value) = &e.action {
            let mut path = steps(&e.path)?;
            let last = path.pop().expect("a set names a key");
            cow.set_at(e.index, &path, &last, &json_value(py, value)?)?;
        }
    }
    for e in &plan.edits {
        if e.action == Action::Remove {
            let mut path = steps(&e.path)?;
            let last = path.pop().expect("a removal names a position");
            let node = cow.walk(e.index, &path)?;
            match node.is_instance_of::<pyo3::types::PyDict>() || node.is_instance_of::<PyList>() {
                true => node.del_item(last)?,
                false => node.setattr(last.cast::<pyo3::types::PyString>()?, py.None())?,
            }
        }
    }
    // A second results turn joins the first, its own removals made; before the insertions, whose
    // positions count its blocks.
    for e in &plan.edits {
        if let Action::Append { from } = e.action {
            let path = steps(&e.path)?;
            let blocks = cow.walk(from, &path)?;
            cow.walk(e.index, &path)?
                .call_method1("extend", (blocks,))?;
        }
    }
    for e in &plan.edits {
        if let Action::Insert { position, value } = &e.action {
            let path = steps(&e.path)?;
            cow.walk(e.index, &path)?
                .call_method1("insert", (*position, json_value(py, value)?))?;
        }
    }
    // Last: the stand-ins inserted above are results too.
    for e in &plan.edits {
        if e.action == Action::ResultsFirst {
            let path = steps(&e.path)?;
            results_first(&cow.walk(e.index, &path)?)?;
        }
    }
    let out = PyList::empty(py);
    for slot in &plan.messages {
        match slot {
            Slot::Keep(i) => out.append(edited.get_item(*i)?)?,
            Slot::New(json) => {
                let value = json_value(py, json)?;
                match like {
                    Some(f) => out.append(f.call1((value,))?)?,
                    None => out.append(value)?,
                }
            }
        }
    }
    Ok((out, plan.changes))
}

/// Reorder `list` (a copy the repair owns) so its `tool_result` blocks come first, the others
/// after them, each group in its order; the blocks are the caller's own objects (a dict, or an
/// SDK block whose `type` says what it is).
fn results_first(list: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = list.py();
    let kind = pyo3::intern!(py, "type");
    let is_result = |b: &Bound<'_, PyAny>| -> PyResult<bool> {
        let t = match b.cast::<pyo3::types::PyDict>() {
            Ok(d) => d.get_item(kind)?,
            Err(_) => b.getattr_opt(kind)?,
        };
        Ok(t.is_some_and(|t| t.extract::<&str>().is_ok_and(|t| t == "tool_result")))
    };
    let blocks: Vec<Bound<'_, PyAny>> = list.try_iter()?.collect::<PyResult<_>>()?;
    let mut results = Vec::new();
    let mut others = Vec::new();
    for b in blocks {
        if is_result(&b)? {
            results.push(b);
        } else {
            others.push(b);
        }
    }
    for (k, b) in results.into_iter().chain(others).enumerate() {
        list.set_item(k, b)?;
    }
    Ok(())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(repair_history, m)?)?;
    Ok(())
}
