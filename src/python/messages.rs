//! The entry points other bindings use to read a history: `Keep::new()`,
//! `Walker::new(py, &keep)`, `.messages(obj)`, `.extras(tools, system)` (and `.message(obj)`
//! with `.set_index(i)` for one message). The formats are understood by the core
//! (`crate::wire`); Python values are read through `py_input`.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyType};

use crate::estimate::{Estimator, RequestExtras};
use crate::message::Message;
use crate::wire::{read_extras, read_message, ExtrasError};

use super::langchain_message;
use super::py_input::{extras_error, keys, message_error, type_name};
pub use super::py_input::{Keep, PyInput};

/// Messages read before they are priced: their samples (a few cache lines each) stay well
/// inside L1/L2 between the read and the pricing.
pub(super) const CHUNK: usize = 32;

/// Reads one history, knowing which message it is in for error messages.
pub struct Walker<'k, 'py> {
    py: Python<'py>,
    keep: &'k Keep<'py>,
    index: usize,
}

impl<'k, 'py> Walker<'k, 'py> {
    pub fn new(py: Python<'py>, keep: &'k Keep<'py>) -> Self {
        keep.keys.get_or_init(|| keys(py));
        Walker { py, keep, index: 0 }
    }

    pub(super) fn input(&self, v: &Bound<'py, PyAny>) -> PyInput<'k, 'py> {
        PyInput::new(v.clone(), self.keep)
    }

    /// Set the message index that errors report (for callers that read messages one by one).
    pub fn set_index(&mut self, index: usize) {
        self.index = index;
    }

    /// Read a whole history (any sequence but a str or a dict).
    pub fn messages(&mut self, seq: &Bound<'py, PyAny>) -> PyResult<Vec<Message<'k>>> {
        let items = Self::snapshot(seq)?;
        let mut out = Vec::with_capacity(items.len());
        for (i, m) in items.into_iter().enumerate() {
            self.index = i;
            out.push(self.read(m)?);
        }
        crate::wire::item_reference::bind(&mut out);
        Ok(out)
    }

    /// Read a history a chunk of messages at a time, handing each chunk's views to `f`, then
    /// dropping them (and their string references).
    ///
    /// For walks that price as they read (`estimate`): each text's sample is read while the
    /// cache lines the reader just touched (and prefetched) are still in the CPU's cache, where
    /// reading the whole history first and pricing it after loaded every sample from memory a
    /// second time (`estimate` of the 10k synthetic history, this way and the prefetch together:
    /// 0.75-0.98x the time of the read-then-price build).
    pub fn chunks(
        py: Python<'py>,
        seq: &Bound<'py, PyAny>,
        mut f: impl FnMut(&[Message<'_>]),
    ) -> PyResult<()> {
        let items = Self::snapshot(seq)?;
        for (c, chunk) in items.chunks(CHUNK).enumerate() {
            let keep = Keep::new();
            let mut w = Walker::new(py, &keep);
            let mut ms = Vec::with_capacity(chunk.len());
            for (j, m) in chunk.iter().enumerate() {
                w.index = c * CHUNK + j;
                ms.push(w.read(m.clone())?);
            }
            f(&ms);
        }
        Ok(())
    }

    /// Read a whole history as [`Walker::messages`] does, and the estimated tokens of each
    /// message (`est.each`), priced a chunk at a time right after the chunk is read, while its
    /// samples are still in the CPU's cache (see [`Walker::chunks`]). `est` settles its
    /// serving platform on each chunk before pricing it (`Estimator::settle_platform`).
    pub fn messages_priced(
        &mut self,
        seq: &Bound<'py, PyAny>,
        est: &mut Estimator,
    ) -> PyResult<(Vec<Message<'k>>, Vec<u32>)> {
        let items = Self::snapshot(seq)?;
        let mut out = Vec::with_capacity(items.len());
        let mut costs = Vec::with_capacity(items.len());
        for (i, m) in items.into_iter().enumerate() {
            self.index = i;
            out.push(self.read(m)?);
            if out.len() - costs.len() == CHUNK {
                costs.extend(Self::priced(&out[costs.len()..], est));
            }
        }
        costs.extend(Self::priced(&out[costs.len()..], est));
        let bound = crate::wire::item_reference::bind(&mut out);
        if !bound.is_empty() {
            costs = Self::repriced(&out, costs, &bound, est);
        }
        Ok((out, costs))
    }

    /// The estimated tokens of each of `ms` (already read), as [`Walker::messages_priced`]
    /// prices them: a chunk at a time, `est` settling its serving platform on each chunk first.
    pub fn priced(ms: &[Message<'_>], est: &mut Estimator) -> Vec<u32> {
        let mut costs = Vec::with_capacity(ms.len());
        for chunk in ms.chunks(CHUNK) {
            est.settle_platform(chunk);
            costs.extend(est.each(chunk));
        }
        costs
    }

    /// `costs` (a history's [`Walker::messages_priced`] costs before the messages at `reprice`
    /// changed) with those messages priced again as `messages_priced` prices them: with the
    /// estimator settled on every chunk up to the message's own (settling on a prefix at once
    /// finds the same first signature as chunk by chunk), and settled on the whole history after.
    pub fn repriced(
        ms: &[Message<'_>],
        mut costs: Vec<u32>,
        reprice: &[usize],
        est: &mut Estimator,
    ) -> Vec<u32> {
        let mut todo = reprice.to_vec();
        // (Ascending: settling is for good, so an earlier message must be priced before it.)
        todo.sort_unstable();
        for i in todo {
            est.settle_platform(&ms[..((i / CHUNK + 1) * CHUNK).min(ms.len())]);
            costs[i] = est.message(&ms[i]);
        }
        est.settle_platform(ms);
        costs
    }

    /// The items of a history (any sequence but a str or a dict), as a snapshot: reading one
    /// message may run Python code (a property, a `model_dump`) that changes the list.
    pub(super) fn snapshot(seq: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        if seq.is_instance_of::<PyString>()
            || seq.is_instance_of::<PyDict>()
            || (!seq.is_instance_of::<PyList>() && super::py_input::is_other_mapping(seq))
        {
            return Err(PyTypeError::new_err(format!(
                "messages must be a list of messages, got {}",
                type_name(seq)
            )));
        }
        if let Ok(list) = seq.cast::<PyList>() {
            Ok(list.iter().collect())
        } else {
            // An iterator's own error mid-way is the caller's and passes through; a value that
            // is no iterable at all is named (was: "'int' object is not iterable").
            seq.try_iter()
                .map_err(|_| {
                    PyTypeError::new_err(format!(
                        "messages must be a list of messages, got {}",
                        type_name(seq)
                    ))
                })?
                .collect()
        }
    }

    /// Read one message (any supported format).
    pub fn message(&self, m: &Bound<'py, PyAny>) -> PyResult<Message<'k>> {
        self.read(m.clone())
    }

    fn read(&self, m: Bound<'py, PyAny>) -> PyResult<Message<'k>> {
        self.keep.failed.set(None);
        if langchain_message::is_message(&m) {
            return langchain_message::read(&m, self.keep)
                .map_err(|e| message_error(self.py, self.index, self.keep.failed.take(), e));
        }
        read_message(&PyInput::new(m, self.keep))
            .map_err(|e| message_error(self.py, self.index, self.keep.failed.take(), e))
    }

    /// Extras of a request: optional tools, system and structured-output schema.
    pub fn extras(
        &self,
        tools: Option<&Bound<'py, PyAny>>,
        system: Option<&Bound<'py, PyAny>>,
        response_format: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<RequestExtras<'k>> {
        let tools = tools.map(|t| self.input(t));
        let system = system.map(|s| self.input(s));
        // A pydantic model class (what OpenAI's `parse` takes) stands for its JSON schema; an
        // SDK object (OpenAI's `ResponseFormatJSONSchema`) for its wire dict, aliases included
        // (its `schema_` field travels as `schema`).
        let converted;
        let response_format = match response_format {
            Some(r) if r.is_instance_of::<PyType>() && r.hasattr("model_json_schema")? => {
                converted = r.call_method0("model_json_schema")?;
                Some(&converted)
            }
            Some(r) if !r.is_instance_of::<PyDict>() && r.hasattr("model_dump")? => {
                let kw = PyDict::new(self.py);
                kw.set_item("mode", "json")?;
                kw.set_item("by_alias", true)?;
                kw.set_item("exclude_none", true)?;
                converted = match r.call_method("model_dump", (), Some(&kw)) {
                    Ok(d) => d,
                    // A value pydantic cannot write as JSON (google-genai's `response_schema`
                    // given as a model class, a function as a tool): the SDK's own meaning of it.
                    Err(_) => self
                        .py
                        .import("contextfold.sdk_values")?
                        .call_method1("json_ready", (r,))?,
                };
                Some(&converted)
            }
            r => r,
        }
        .map(|r| self.input(r));
        read_extras(tools.as_ref(), system.as_ref(), response_format.as_ref()).map_err(
            |e| match e {
                ExtrasError::Tools(Some(j), e) => extras_error(self.py, &format!("tools[{j}]"), e),
                ExtrasError::Tools(None, e) => extras_error(self.py, "tools", e),
                ExtrasError::System(e) => extras_error(self.py, "system", e),
                ExtrasError::ResponseFormat(e) => extras_error(self.py, "response_format", e),
            },
        )
    }
}
