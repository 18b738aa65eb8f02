//! Bindings of the tail walk and the prune: `prune` plans and applies its edits here,
//! copy-on-write, building new objects for the containers on the edited paths only;
//! `apply_edits` applies a compaction plan's edits the same way.

use pyo3::exceptions::{PyException, PyRuntimeError, PyValueError};
use std::collections::{HashMap, HashSet};

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString, PyTuple};

use super::messages::{Keep, Walker};
use super::options::{check_tail, PruneOptions};
use super::priced_request::PyPricedRequest;
use super::py_input::{invalid, is_invalid_message};
use crate::estimate::Estimator;
use crate::prune::{argument_edits, plan_with, PrunePlan, Step};
use crate::tail_walk::{find_tail_start as walk, legal_cuts, TailOptions};

/// For each message, whether a cut before it keeps every tool group whole (a call and its
/// results on one side), in the history's own format.
#[pyfunction]
#[pyo3(signature = (messages, /))]
fn legal_cuts_of(py: Python<'_>, messages: &Bound<'_, PyAny>) -> PyResult<Vec<bool>> {
    let keep = Keep::new();
    let ms = Walker::new(py, &keep).messages(messages)?;
    Ok(py.detach(|| legal_cuts(&ms)))
}

/// Index where the protected tail begins (see `tail_walk::find_tail_start` for the rules).
#[pyfunction]
#[pyo3(signature = (messages, /, *, budget_tokens, protect_first_n=1, min_tail=3, soft_ceiling=1.5, provider="openai", model=None))]
#[allow(clippy::too_many_arguments)]
fn find_tail_start(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    budget_tokens: u64,
    protect_first_n: usize,
    min_tail: usize,
    soft_ceiling: f64,
    provider: &str,
    model: Option<&str>,
) -> PyResult<usize> {
    check_tail(soft_ceiling, min_tail)?;
    let mut est = super::estimator_args::estimator(provider, model)?;
    let opt = TailOptions {
        budget_tokens,
        protect_first_n,
        min_tail,
        soft_ceiling,
    };
    if let Ok(list) = messages.cast::<PyList>() {
        if let Some(start) = tail_from_the_end(py, list, &est, &opt)? {
            return Ok(start);
        }
    }
    let keep = Keep::new();
    let (ms, costs) = Walker::new(py, &keep).messages_priced(messages, &mut est)?;
    Ok(py.detach(|| walk(&costs, &legal_cuts(&ms), &opt)))
}

/// The error of a history that changed length while it was read (a property that trims the
/// list, another thread).
#[cold]
fn changed() -> PyErr {
    PyRuntimeError::new_err("messages changed size while being read")
}

/// The tail walk reading only the end of the history: messages are parsed backward until two
/// legal cuts lie beyond the budget's reach (`w1`, the nearer, and `w2` before it), after
/// which the walk on `w2..n` provably returns what the walk on the whole history would (every
/// result in `w2..n` answers a call in `w2..n`, and the start lands after `w1`). Per turn this
/// costs O(tail), not O(history). `None` when the protected head is reached first: the caller
/// then walks the whole (short) history.
fn tail_from_the_end(
    py: Python<'_>,
    list: &Bound<'_, PyList>,
    est: &Estimator,
    opt: &TailOptions,
) -> PyResult<Option<usize>> {
    let mut est = *est;
    // Whether a message already priced would cost otherwise once the platform is settled.
    let mut priced_calls = false;
    let n = list.len();
    let ceiling = opt.budget_tokens as f64 * opt.soft_ceiling.max(1.0);
    let keep = Keep::new();
    let mut walker = Walker::new(py, &keep);
    let mut open: HashMap<String, usize> = HashMap::new();
    let mut costs_rev: Vec<u32> = Vec::new();
    let mut suffix = 0f64;
    let mut w1: Option<usize> = None;
    let mut i = n;
    while i > opt.protect_first_n {
        i -= 1;
        walker.set_index(i);
        let item = list.get_item(i).map_err(|_| changed())?;
        let m = walker.message(&item)?;
        // Read backward, the function results of the newest turn come before the signature
        // that settles a bare Gemini 3 name's platform; the forward walk prices them as settled.
        if est.settle_platform(std::slice::from_ref(&m)) && priced_calls {
            return Ok(None);
        }
        priced_calls |= m.call_ids().next().is_some() || m.result_ids().next().is_some();
        let cost = est.message(&m);
        costs_rev.push(cost);
        suffix += f64::from(cost);
        for id in m.call_ids() {
            if let Some(c) = open.get_mut(id) {
                *c -= 1;
                if *c == 0 {
                    open.remove(id);
                }
            }
        }
        for id in m.result_ids() {
            *open.entry(id.to_string()).or_insert(0) += 1;
        }
        if !open.is_empty() {
            continue;
        }
        match w1 {
            None => {
                if suffix > ceiling && i + opt.min_tail < n && i > opt.protect_first_n {
                    w1 = Some(i);
                }
            }
            Some(_) => {
                // `i` is w2: walk the window i..n with its own head at 0.
                costs_rev.reverse();
                let mut legal = vec![false; n - i + 1];
                // Legal cuts inside the window, recomputed forward from the same views' ids
                // would need the views again; the cheap way is to re-derive them from `open`
                // bookkeeping, so redo the backward pass over the collected window instead.
                let window = list.get_slice(i, n);
                let views = Walker::new(py, &keep).messages(window.as_any())?;
                // Reading runs Python code (properties, `model_dump`) that may change the list.
                let cuts = legal_cuts(&views);
                if cuts.len() != legal.len() || list.len() != n {
                    return Err(changed());
                }
                legal.copy_from_slice(&cuts);
                let w = TailOptions {
                    protect_first_n: 0,
                    ..*opt
                };
                return Ok(Some(i + walk(&costs_rev, &legal, &w)));
            }
        }
    }
    Ok(None)
}

/// `contextfold.prune`: the prune plan (`prune::plan_with`) applied copy-on-write, in one call.
/// Only the containers along an edited path are new objects (shallow copies: `copy`, the
/// Python layer's, for what is not a dict, list or tuple); every other message and value is the
/// caller's own, and nothing the caller holds is changed. `request` gives the estimator (its
/// provider and model).
#[pyfunction]
#[pyo3(signature = (messages, /, request, options, *, copy))]
fn prune<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
    request: &PyPricedRequest,
    options: &PruneOptions,
    copy: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    // One snapshot of the history: the plan reads it and the edits apply to it.
    let out = PyList::new(py, Walker::snapshot(messages)?)?;
    let p = plan(py, &out, request, options)?;
    apply_planned(py, &out, &p.edits, copy)?;
    Ok(out)
}

/// A new list where, in every message, each tool call's arguments longer than `max_chars`
/// characters are shrunk to valid JSON of at most that many (in the message's own format);
/// copy-on-write, the caller's objects never changed.
#[pyfunction]
#[pyo3(signature = (messages, /, *, max_chars, copy))]
fn shrink_arguments<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
    max_chars: usize,
    copy: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    if max_chars < 64 {
        return Err(PyValueError::new_err(format!(
            "max_chars must be at least 64 (room for a valid JSON marker), got {max_chars}"
        )));
    }
    let out = PyList::new(py, Walker::snapshot(messages)?)?;
    let edits = {
        let keep = Keep::new();
        let ms = Walker::new(py, &keep).messages(out.as_any())?;
        py.detach(|| argument_edits(&ms, max_chars))
    };
    apply_planned(py, &out, &edits, copy)?;
    Ok(out)
}

/// Apply the core's edits to `out` copy-on-write.
fn apply_planned<'py>(
    py: Python<'py>,
    out: &Bound<'py, PyList>,
    edits: &[crate::prune::Edit],
    copy: &Bound<'py, PyAny>,
) -> PyResult<()> {
    let mut cow = CopyOnWrite::new(out, copy);
    for e in edits {
        let steps = e
            .path
            .iter()
            .map(|s| step_object(py, s))
            .collect::<PyResult<Vec<_>>>()?;
        match steps.split_last() {
            Some((last, parents)) => {
                cow.set_at(e.message, parents, last, &json_value(py, &e.value)?)?
            }
            None => cow.set_fields(e.message, &json_value(py, &e.value)?)?,
        }
    }
    Ok(())
}

/// The prune plan of `out`, read and priced, made with the GIL released; the views are dropped
/// before the edits are applied.
fn plan(
    py: Python<'_>,
    out: &Bound<'_, PyList>,
    request: &PyPricedRequest,
    options: &PruneOptions,
) -> PyResult<PrunePlan> {
    let mut est = request.request.estimator;
    let keep = Keep::new();
    let (ms, costs) = Walker::new(py, &keep).messages_priced(out.as_any(), &mut est)?;
    let opt = &options.opt;
    Ok(py.detach(|| plan_with(&ms, &est, &costs, &legal_cuts(&ms), opt)))
}

/// `contextfold.prune.apply_edits`: a new list of `messages` with `edits` applied copy-on-write.
/// Each edit is `(message index, path, value, ...)` (further fields ignored): `value` replaces
/// what `path` (keys and list positions) names, or `None` removes that list element; with an
/// empty path, `value` is a dict of the message's own fields to set. Removals
/// come after every replacement, highest position first, so the plan's positions stay valid.
/// `copy` is the Python layer's copy of a container that is not a dict, list or tuple.
#[pyfunction]
#[pyo3(signature = (messages, edits, /, *, copy))]
fn apply_edits<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
    edits: &Bound<'py, PyAny>,
    copy: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::new(py, Walker::snapshot(messages)?)?;
    let mut cow = CopyOnWrite::new(&out, copy);
    let mut removals: Vec<(usize, Vec<Bound<'py, PyAny>>, usize)> = Vec::new();
    for edit in edits.try_iter()? {
        let edit = edit?;
        let index: usize = edit.get_item(0)?.extract()?;
        let mut path: Vec<Bound<'py, PyAny>> =
            edit.get_item(1)?.try_iter()?.collect::<PyResult<_>>()?;
        let value = edit.get_item(2)?;
        let Some(last) = path.pop() else {
            if value.is_none() {
                return Err(PyValueError::new_err(
                    "an edit with an empty path removes nothing",
                ));
            }
            cow.set_fields(index, &value)?;
            continue;
        };
        if value.is_none() {
            removals.push((index, path, last.extract()?));
        } else {
            cow.set_at(index, &path, &last, &value)?;
        }
    }
    removals.sort_by_key(|r| std::cmp::Reverse(r.2));
    for (index, parents, position) in removals {
        cow.walk(index, &parents)?.del_item(position)?;
    }
    Ok(out)
}

/// Edits applied to a new list without changing any object the caller holds: each container on
/// an edited path is replaced by a shallow copy the first time an edit passes through it. A
/// path is keys (str) and list positions (int), or attribute names on a LangChain message.
pub(super) struct CopyOnWrite<'a, 'py> {
    out: &'a Bound<'py, PyList>,
    /// The Python layer's copy of a container that is not a dict, list or tuple (an SDK object
    /// becomes the dict of its fields; a LangChain message a copy of its class).
    copy: &'a Bound<'py, PyAny>,
    /// Addresses of the containers made here (safe to write); each is held by `out`.
    mine: HashSet<usize>,
}

impl<'a, 'py> CopyOnWrite<'a, 'py> {
    pub(super) fn new(out: &'a Bound<'py, PyList>, copy: &'a Bound<'py, PyAny>) -> Self {
        CopyOnWrite {
            out,
            copy,
            mine: HashSet::new(),
        }
    }

    fn own(&mut self, obj: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        if self.mine.contains(&(obj.as_ptr() as usize)) {
            return Ok(obj);
        }
        let new = if let Ok(d) = obj.cast::<PyDict>() {
            // `dict(obj)`: a plain dict, also of a dict subclass.
            let new = PyDict::new(obj.py());
            new.update(d.as_mapping())?;
            new.into_any()
        } else if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
            PyList::new(obj.py(), obj.try_iter()?.collect::<PyResult<Vec<_>>>()?)?.into_any()
        } else {
            self.copy.call1((obj,))?
        };
        self.mine.insert(new.as_ptr() as usize);
        Ok(new)
    }

    /// The container at `steps` inside `out[index]`, every container on the way a copy of ours.
    pub(super) fn walk(
        &mut self,
        index: usize,
        steps: &[Bound<'py, PyAny>],
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut node = self
            .own(self.out.get_item(index)?)
            .map_err(|e| uneditable(self.out.py(), index, &[], e))?;
        self.out.set_item(index, &node)?;
        for (k, step) in steps.iter().enumerate() {
            let at = |e| uneditable(self.out.py(), index, &steps[..=k], e);
            let child = get(&node, step).map_err(at)?;
            let child = self.own(child).map_err(at)?;
            set(&node, step, &child).map_err(at)?;
            node = child;
        }
        Ok(node)
    }

    /// Set each field `fields` (a dict) names on `out[index]` itself: an edit with an empty
    /// path (Ollama's native images masked, `content` and `images` written together).
    pub(super) fn set_fields(&mut self, index: usize, fields: &Bound<'py, PyAny>) -> PyResult<()> {
        let fields = fields.cast::<PyDict>().map_err(|_| {
            PyValueError::new_err("an edit with an empty path sets a dict of fields")
        })?;
        for (key, value) in fields.iter() {
            self.set_at(index, &[], &key, &value)?;
        }
        Ok(())
    }

    /// Set `value` at `parents` + `last` inside `out[index]`.
    pub(super) fn set_at(
        &mut self,
        index: usize,
        parents: &[Bound<'py, PyAny>],
        last: &Bound<'py, PyAny>,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<()> {
        let node = self.walk(index, parents)?;
        set(&node, last, value).map_err(|e| {
            let mut path = parents.to_vec();
            path.push(last.clone());
            uneditable(self.out.py(), index, &path, e)
        })
    }
}

/// The error of a container on an edit's path that cannot be copied (an object of no known
/// kind where a block or part belongs: `{"toolUse": object()}`): an `InvalidMessageError`
/// naming the message and the path, the copy's own error as its cause. A `KeyboardInterrupt`
/// passes through.
#[cold]
fn uneditable(py: Python<'_>, index: usize, steps: &[Bound<'_, PyAny>], cause: PyErr) -> PyErr {
    if !cause.is_instance_of::<PyException>(py) || is_invalid_message(py, &cause) {
        return cause;
    }
    let mut field = String::new();
    for s in steps {
        match s.extract::<usize>() {
            Ok(j) => field.push_str(&format!("[{j}]")),
            Err(_) => {
                if !field.is_empty() {
                    field.push('.');
                }
                field.push_str(&s.str().map(|s| s.to_string()).unwrap_or_default());
            }
        }
    }
    let reason = format!(
        "cannot take the edit its repair or compaction needs: not the dict, list or SDK object \
         this format has here ({})",
        cause.value(py)
    );
    let err = invalid(py, index, &field, &reason);
    err.set_cause(py, Some(cause));
    err
}

/// Whether a path step on `node` is an item (a dict's key, a list's position) rather than an
/// attribute (a LangChain message's field).
fn by_item(node: &Bound<'_, PyAny>) -> bool {
    node.is_instance_of::<PyDict>() || node.is_instance_of::<PyList>()
}

fn get<'py>(node: &Bound<'py, PyAny>, step: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    match by_item(node) {
        true => node.get_item(step),
        false => node.getattr(step.cast::<PyString>()?),
    }
}

fn set(node: &Bound<'_, PyAny>, step: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    match by_item(node) {
        true => node.set_item(step, value),
        false => node.setattr(step.cast::<PyString>()?, value),
    }
}

/// A core path step as the Python object `apply_edits` takes.
pub(super) fn step_object<'py>(py: Python<'py>, step: &Step) -> PyResult<Bound<'py, PyAny>> {
    Ok(match step {
        Step::Key(k) => PyString::new(py, k).into_any(),
        Step::Index(j) => j.into_pyobject(py)?.into_any(),
    })
}

/// An edit's replacement (compact JSON text) as new Python objects.
pub(super) fn json_value<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|err| PyValueError::new_err(format!("edit value is not JSON: {err}")))?;
    to_python(py, &v)
}

/// One edit as `contextfold.prune.apply_edits` takes it: `(message index, path, value)`, the
/// value a new Python object (`None`: remove the list element the path names).
pub(super) fn planned_edit<'py>(
    py: Python<'py>,
    message: usize,
    steps: &[Step],
    value: Option<&str>,
) -> PyResult<PlannedEdit<'py>> {
    let path = PyList::new(
        py,
        steps
            .iter()
            .map(|s| step_object(py, s))
            .collect::<PyResult<Vec<_>>>()?,
    )?;
    let value = match value {
        Some(text) => json_value(py, text)?,
        None => py.None().into_bound(py),
    };
    Ok((message, path, value))
}

/// `(message index, path inside it, replacement value)`.
pub(super) type PlannedEdit<'py> = (usize, Bound<'py, PyList>, Bound<'py, PyAny>);

/// A JSON value as new Python objects (what `json.loads` would return).
fn to_python<'py>(py: Python<'py>, v: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    use serde_json::Value;
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(a) => {
            let list = PyList::empty(py);
            for x in a {
                list.append(to_python(py, x)?)?;
            }
            list.into_any()
        }
        Value::Object(o) => {
            let d = PyDict::new(py);
            for (k, x) in o {
                d.set_item(k, to_python(py, x)?)?;
            }
            d.into_any()
        }
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(shrink_arguments, m)?)?;
    m.add_function(wrap_pyfunction!(legal_cuts_of, m)?)?;
    m.add_function(wrap_pyfunction!(find_tail_start, m)?)?;
    m.add_function(wrap_pyfunction!(prune, m)?)?;
    m.add_function(wrap_pyfunction!(apply_edits, m)?)?;
    Ok(())
}
