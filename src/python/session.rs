//! Binding of the session ledger (`_core.SessionLedger`); the batch estimators live in
//! `batch.rs`, the list-layout probe the prefix match reads with in `list_layout.rs`.
//!
//! A `SessionLedger` keeps, per message of the last history seen, the message object's address,
//! a cheap fingerprint and its cost: never a reference to the message, so the caller's large
//! strings are freed as soon as the caller drops them. All calls on one ledger are serialized by
//! a mutex (each call is atomic); the lock is taken without holding the GIL's attention
//! (`lock_py_attached`), so two threads sharing a session cannot deadlock against the GIL.

use std::borrow::Cow;
use std::sync::Mutex;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::encoding::Encoding;
use crate::estimate::{RequestExtras, ResponseFormat, ToolDef};
use crate::ledger::{content_hash, payload_chars, Entry, Ledger};
use crate::message::{Detail, Message};
use crate::priced_request::PricedRequest;
use crate::provider::Provider;
use crate::session_state::SessionState;

use super::json_out::json_len;
use super::list_layout::{as_list, id_at, item_addresses};
use super::messages::{Keep, Walker};
use super::priced_request::PyPricedRequest;

/// Above this many new messages, their pricing runs with the GIL released.
const DETACH_AT: usize = 256;

/// FNV-1a over 64-bit words: the fingerprint only needs to differ when a message changes shape.
struct Fnv(u64);

impl Fnv {
    fn add(&mut self, x: u64) {
        for b in x.to_le_bytes() {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// `len()` of a str, list, tuple or dict value; a marker for absent and other values.
fn size_of(v: Option<Bound<'_, PyAny>>) -> u64 {
    match v {
        None => u64::MAX,
        Some(v) if v.is_none() => u64::MAX,
        Some(v) => {
            if let Ok(s) = v.cast::<PyString>() {
                // Code points, O(1) in CPython.
                // SAFETY: `s` is a live str and the GIL is held.
                unsafe { ffi::PyUnicode_GetLength(s.as_ptr()) as u64 }
            } else if v.is_instance_of::<PyList>()
                || v.is_instance_of::<PyTuple>()
                || v.is_instance_of::<PyDict>()
            {
                v.len().map_or(u64::MAX - 1, |n| n as u64)
            } else {
                u64::MAX - 2
            }
        }
    }
}

/// The cheap fingerprint of the prefix-change contract: the object's type, its number of keys
/// (dicts), and the lengths of `content` (or Gemini `parts`) and `tool_calls`. A few dict
/// lookups, never a walk of the content.
pub(super) fn fingerprint(m: &Bound<'_, PyAny>) -> PyResult<u64> {
    let py = m.py();
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    h.add(m.get_type().as_ptr() as u64);
    let (content, calls) = if let Ok(d) = m.cast::<PyDict>() {
        h.add(d.len() as u64);
        let content = match d.get_item(intern!(py, "content"))? {
            Some(c) => Some(c),
            None => d.get_item(intern!(py, "parts"))?,
        };
        (content, d.get_item(intern!(py, "tool_calls"))?)
    } else {
        (
            m.getattr_opt(intern!(py, "content"))?,
            m.getattr_opt(intern!(py, "tool_calls"))?,
        )
    };
    h.add(size_of(content));
    h.add(size_of(calls));
    Ok(h.0)
}

struct State {
    /// Provider, model, encoding, tools and system prompt; its estimator settles its serving
    /// platform on the messages it prices (`Estimator::settle_platform`).
    request: PricedRequest,
    ledger: Ledger,
    /// The caller's `image_sizes` (mapping or callable), asked about new remote images only.
    image_sizes: Option<Py<PyAny>>,
}

impl State {
    /// Bring the cache in line with `messages`: reuse the unchanged prefix, price the rest.
    /// Returns the number of messages.
    fn sync(
        &mut self,
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        track_wire: bool,
    ) -> PyResult<usize> {
        let list = as_list(messages)?;
        let n = list.len();
        if self.ledger.is_unbound() {
            self.rebind(py, &list)?;
        }
        // Identity of every cached message, in order: a pointer compare each (the item array
        // is read in place when the list layout is known, else one C call per item).
        let mut prefix = match item_addresses(&list) {
            Some(ids) => self.ledger.matching_prefix(ids),
            None => self.ledger.matching_prefix_by(n, |i| id_at(&list, i)),
        };
        for i in self.ledger.verify_range(prefix) {
            let m = list.get_item(i)?;
            if Some(fingerprint(&m)?) != self.ledger.fingerprint(i) {
                prefix = i;
                break;
            }
        }
        let cached = self.ledger.len().min(n);
        if prefix < cached {
            prefix = self.rematch(py, &list, prefix, cached)?;
        }
        self.ledger.invalidate(prefix);
        if prefix == n {
            return Ok(n);
        }
        let keep = Keep::new();
        let mut w = Walker::new(py, &keep);
        let mut views: Vec<Message<'_>> = Vec::with_capacity(n - prefix);
        let mut meta: Vec<(usize, u64, u64)> = Vec::with_capacity(n - prefix);
        for i in prefix..n {
            let m = list.get_item(i)?;
            w.set_index(i);
            views.push(w.message(&m)?);
            let wire = match track_wire {
                false => 0,
                true if super::langchain_message::is_message(&m) => {
                    super::langchain_message::wire_json_len(&m)? as u64
                }
                true => json_len(&m)? as u64,
            };
            meta.push((m.as_ptr() as usize, fingerprint(&m)?, wire));
        }
        if self.request.estimator.settle_platform(&views) {
            // The cached messages come before the first thought signature: no call, no result,
            // the same cost on either platform. The tools' price moved.
            let overhead = self.request.estimator.overhead(&self.request.extras);
            self.ledger.set_overhead(overhead);
        }
        let est = self.request.estimator;
        let sizes = super::estimator_args::resolve_sizes(
            self.image_sizes.as_ref().map(|s| s.bind(py)),
            &views,
        )?;
        let fixes = super::estimator_args::size_fixes(est.image_rule(), &views, &sizes);
        let price = || {
            views
                .iter()
                .map(|v| (est.message(v), payload_chars(v), content_hash(v)))
                .collect::<Vec<_>>()
        };
        let costs = if views.len() >= DETACH_AT || self.request.encoding.is_some() {
            py.detach(price)
        } else {
            price()
        };
        for (((id, fingerprint, wire_bytes), (tokens, chars, content)), fix) in
            meta.into_iter().zip(costs).zip(fixes)
        {
            self.ledger.push(Entry {
                id,
                fingerprint,
                content,
                tokens: super::estimator_args::add_signed(u64::from(tokens), fix) as u32,
                wire_bytes,
                chars,
            });
        }
        Ok(n)
    }
}

impl State {
    /// The cached messages `from..to` that `list` holds as other objects with the same content
    /// (matched by content hash, in order, as a restored session matches its first history):
    /// bound to those objects, their costs and the usage anchor kept. A server that decodes
    /// each request's JSON passes equal copies, never the objects it saw: repriced from the
    /// first, 47 of a SWE run's 49 estimates fell back on the calibrated heuristic (mean error
    /// 0.42% -> 0.66%) where a session restored from its state each turn kept the anchor.
    /// Returns the new prefix.
    fn rematch(
        &mut self,
        py: Python<'_>,
        list: &Bound<'_, PyList>,
        from: usize,
        to: usize,
    ) -> PyResult<usize> {
        let keep = Keep::new();
        let mut w = Walker::new(py, &keep);
        let (mut ids, mut fingerprints) = (Vec::new(), Vec::new());
        for i in from..to {
            let m = list.get_item(i)?;
            w.set_index(i);
            let view = w.message(&m)?;
            if self.ledger.content(i) != Some(content_hash(&view)) {
                break;
            }
            ids.push(m.as_ptr() as usize);
            fingerprints.push(fingerprint(&m)?);
        }
        if !ids.is_empty() {
            self.ledger.rebind(from, &ids, &fingerprints);
        }
        Ok(from + ids.len())
    }

    /// First history after a restore: match its messages, by content hash, against the costs
    /// the state carried; the matching prefix is bound to this process's objects, the rest (and
    /// an anchor over any of it) dropped. Reads the history once, as a session's first estimate
    /// would.
    fn rebind(&mut self, py: Python<'_>, list: &Bound<'_, PyList>) -> PyResult<()> {
        let n = list.len().min(self.ledger.len());
        let keep = Keep::new();
        let mut w = Walker::new(py, &keep);
        let mut ids = Vec::with_capacity(n);
        let mut fingerprints = Vec::with_capacity(n);
        let mut views = Vec::with_capacity(n);
        for i in 0..n {
            let m = list.get_item(i)?;
            w.set_index(i);
            views.push(w.message(&m)?);
            ids.push(m.as_ptr() as usize);
            fingerprints.push(fingerprint(&m)?);
        }
        let hash_all = || views.iter().map(content_hash).collect::<Vec<_>>();
        let hashes = if n >= DETACH_AT {
            py.detach(hash_all)
        } else {
            hash_all()
        };
        let same = hashes
            .iter()
            .enumerate()
            .take_while(|&(i, &h)| self.ledger.content(i) == Some(h))
            .count();
        ids.truncate(same);
        fingerprints.truncate(same);
        self.ledger.rebind(0, &ids, &fingerprints);
        Ok(())
    }

    fn to_state(&self, meta: String) -> SessionState {
        SessionState {
            provider: self.request.provider.name().to_string(),
            model: self.request.model.clone(),
            text_encoding: self.request.encoding.map(|e| e.name().to_string()),
            track_wire: false,
            system: self.request.extras.system.as_ref().map(|s| s.to_string()),
            tools: self
                .request
                .extras
                .tools
                .iter()
                .map(|t| (t.name.to_string(), t.json.to_string()))
                .collect(),
            response_format: self.request.extras.response_format.as_ref().map(|r| {
                (
                    r.name.to_string(),
                    r.description.as_ref().map(|d| d.to_string()),
                    r.schema.to_string(),
                )
            }),
            media_resolution: self.request.extras.media_resolution.code(),
            meta,
            ledger: self.ledger.snapshot(),
        }
    }
}

static STATE_ERROR: pyo3::sync::PyOnceLock<Py<pyo3::types::PyType>> = pyo3::sync::PyOnceLock::new();

#[cold]
fn state_error(py: Python<'_>, msg: String) -> PyErr {
    match STATE_ERROR.import(py, "contextfold.errors", "SessionStateError") {
        Ok(cls) => match cls.call1((msg,)) {
            Ok(exc) => PyErr::from_value(exc),
            Err(err) => err,
        },
        Err(err) => err,
    }
}

/// Per-session cache of message costs, usage anchor and correction (see `ledger.rs`).
#[pyclass(frozen, module = "contextfold._core")]
pub struct SessionLedger {
    state: Mutex<State>,
    track_wire: bool,
}

impl SessionLedger {
    fn lock<'a>(&'a self, py: Python<'_>) -> PyResult<std::sync::MutexGuard<'a, State>> {
        self.state
            .lock_py_attached(py)
            .map_err(|_| PyRuntimeError::new_err("session state poisoned by an earlier panic"))
    }
}

#[pymethods]
impl SessionLedger {
    // `smoothing=0.5` is `ledger::DEFAULT_SMOOTHING`, spelled out so the signature shows it.
    /// A ledger pricing the histories of `request` (its provider, model, text encoding, tools,
    /// system prompt and response format, read once).
    #[new]
    #[pyo3(signature = (request, /, *, track_wire=false, smoothing=0.5, image_sizes=None))]
    fn new(
        py: Python<'_>,
        request: &PyPricedRequest,
        track_wire: bool,
        smoothing: f64,
        image_sizes: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        if !(0.0..=1.0).contains(&smoothing) {
            return Err(PyValueError::new_err("smoothing must be within [0, 1]"));
        }
        let request = request.request.clone();
        let ledger = Ledger::new(request.overhead, smoothing);
        Ok(SessionLedger {
            state: Mutex::new(State {
                request,
                ledger,
                image_sizes: image_sizes.filter(|s| !s.is_none(py)),
            }),
            track_wire,
        })
    }

    /// Prompt tokens of `messages`: anchored on the last usage while its prefix is unchanged,
    /// else the calibrated heuristic. Prices only messages not seen in the last call.
    #[pyo3(signature = (messages, /))]
    fn estimate(&self, py: Python<'_>, messages: &Bound<'_, PyAny>) -> PyResult<u64> {
        let mut st = self.lock(py)?;
        let n = st.sync(py, messages, self.track_wire)?;
        Ok(st.ledger.estimate(n).tokens)
    }

    /// `(tokens, heuristic, anchored_messages, wire_bytes)` of `messages`; wire bytes are 0
    /// unless the ledger tracks them.
    #[pyo3(signature = (messages, /))]
    fn measure(
        &self,
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
    ) -> PyResult<(u64, u64, usize, u64)> {
        let mut st = self.lock(py)?;
        let n = st.sync(py, messages, self.track_wire)?;
        let e = st.ledger.estimate(n);
        Ok((e.tokens, e.heuristic, e.anchored, st.ledger.wire_bytes(n)))
    }

    /// Record the provider's real prompt count for the last estimated history (or `messages`).
    /// Returns `(messages, payload_chars, heuristic, estimate_before, real, correction,
    /// model_changed)`.
    #[pyo3(signature = (real, /, *, messages=None, model=None))]
    fn record_usage(
        &self,
        py: Python<'_>,
        real: u64,
        messages: Option<&Bound<'_, PyAny>>,
        model: Option<&str>,
    ) -> PyResult<(usize, u64, u64, u64, u64, f64, bool)> {
        let mut st = self.lock(py)?;
        let n = match messages {
            Some(m) => st.sync(py, m, self.track_wire)?,
            None => st.ledger.last_len(),
        };
        let r = st.ledger.record(n, real, model);
        Ok((
            r.messages,
            r.chars,
            r.heuristic,
            r.estimate,
            r.real,
            r.correction,
            r.model_changed,
        ))
    }

    /// Forget the cached costs of messages `start..` (for in-place edits).
    #[pyo3(signature = (start=0))]
    fn invalidate(&self, py: Python<'_>, start: usize) -> PyResult<()> {
        self.lock(py)?.ledger.invalidate(start);
        Ok(())
    }

    /// Forget everything: cached costs, usage anchor, correction, last usage.
    fn reset(&self, py: Python<'_>) -> PyResult<()> {
        self.lock(py)?.ledger.reset();
        Ok(())
    }

    /// Switch model: a new estimator; cached costs, anchor and correction are dropped.
    #[pyo3(signature = (model, /))]
    fn set_model(&self, py: Python<'_>, model: Option<String>) -> PyResult<()> {
        let mut st = self.lock(py)?;
        if st.request.model == model {
            return Ok(());
        }
        let r = &st.request;
        st.request = PricedRequest::new(r.provider, model, r.encoding, r.extras.clone());
        let overhead = st.request.overhead;
        st.ledger.reset_with_overhead(overhead);
        Ok(())
    }

    /// The session as bytes (see `session_state.rs`): costs per message keyed by content hash,
    /// anchor, correction, last usage and model, what prices the overhead, and `meta` (the
    /// Python layer's settings). Independent of this process's objects.
    #[pyo3(signature = (*, meta=String::new()))]
    fn to_state<'py>(&self, py: Python<'py>, meta: String) -> PyResult<Bound<'py, PyBytes>> {
        let st = self.lock(py)?;
        let mut state = st.to_state(meta);
        state.track_wire = self.track_wire;
        drop(st);
        let bytes = py.detach(|| state.encode());
        Ok(PyBytes::new(py, &bytes))
    }

    /// `(ledger, meta)` from bytes written by `to_state`; `SessionStateError` when they come
    /// from another version, are corrupted or contradict themselves.
    #[staticmethod]
    #[pyo3(signature = (data, /))]
    fn from_state(py: Python<'_>, data: &[u8]) -> PyResult<(SessionLedger, String)> {
        let state = SessionState::decode(data).map_err(|e| state_error(py, e.to_string()))?;
        let invalid = |why: &str| state_error(py, format!("session state invalid: {why}"));
        let provider = Provider::parse(&state.provider).map_err(|_| invalid("unknown provider"))?;
        let encoding = match &state.text_encoding {
            None => None,
            Some(name) => Some(Encoding::parse(name).ok_or_else(|| invalid("unknown encoding"))?),
        };
        let extras = RequestExtras {
            system: state.system.map(Cow::Owned),
            tools: state
                .tools
                .into_iter()
                .map(|(name, json)| ToolDef {
                    name: Cow::Owned(name),
                    json: Cow::Owned(json),
                })
                .collect(),
            response_format: state.response_format.map(|(name, description, schema)| {
                ResponseFormat {
                    name: Cow::Owned(name),
                    description: description.map(Cow::Owned),
                    schema: Cow::Owned(schema),
                }
            }),
            media_resolution: Detail::from_code(state.media_resolution)
                .ok_or_else(|| invalid("unknown media resolution"))?,
        };
        let mut request = PricedRequest::new(provider, state.model, encoding, extras);
        // The overhead is a function of what the state carries: a state whose overhead
        // disagrees was not written by this estimator, unless the session had settled a bare
        // Gemini 3 name on Vertex AI (`Estimator::settle_platform`), which prices tools lower.
        if u64::from(request.overhead) != state.ledger.overhead {
            match request.estimator.settled_on_vertex_ai() {
                Some(v) if u64::from(v.overhead(&request.extras)) == state.ledger.overhead => {
                    request.estimator = v;
                    request.overhead = v.overhead(&request.extras);
                }
                _ => return Err(invalid("overhead does not match its tools and system")),
            }
        }
        let ledger =
            Ledger::restore(state.ledger).ok_or_else(|| invalid("contradictory ledger fields"))?;
        Ok((
            SessionLedger {
                state: Mutex::new(State {
                    request,
                    ledger,
                    // A mapping or callable of the caller's does not travel in bytes.
                    image_sizes: None,
                }),
                track_wire: state.track_wire,
            },
            state.meta,
        ))
    }

    #[getter]
    fn usages(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.lock(py)?.ledger.usages())
    }

    #[getter]
    fn correction(&self, py: Python<'_>) -> PyResult<f64> {
        Ok(self.lock(py)?.ledger.correction())
    }

    #[getter]
    fn last_usage(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        Ok(self.lock(py)?.ledger.last_usage())
    }

    #[getter]
    fn model(&self, py: Python<'_>) -> PyResult<Option<String>> {
        Ok(self.lock(py)?.request.model.clone())
    }

    #[getter]
    fn provider(&self, py: Python<'_>) -> PyResult<&'static str> {
        Ok(self.lock(py)?.request.provider.name())
    }

    #[getter]
    fn overhead(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.lock(py)?.ledger.overhead())
    }

    #[getter]
    fn cached_messages(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.lock(py)?.ledger.len())
    }

    #[getter]
    fn anchored_messages(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        Ok(self.lock(py)?.ledger.anchor().map(|a| a.messages))
    }

    #[getter]
    fn text_encoding(&self, py: Python<'_>) -> PyResult<Option<&'static str>> {
        Ok(self.lock(py)?.request.encoding.map(Encoding::name))
    }

    #[getter]
    fn track_wire(&self) -> bool {
        self.track_wire
    }
}

/// Register the session ledger on the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SessionLedger>()?;
    Ok(())
}
