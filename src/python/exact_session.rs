//! `_core.ExactLedger`: exact counts of a conversation turn by turn (`Session(exact=True)`).
//!
//! Keeps, per message of the last history seen, its object's address, its fingerprint and its
//! exact count (never the message), and the call context the next messages need
//! (`exact::CountContext`): a turn reads and tokenizes only the messages appended since, and a
//! history rebuilt from known messages is recounted from the by-content memo.

use std::collections::HashMap;
use std::sync::Mutex;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;

use crate::exact::{CountContext, Counter};
use crate::ledger::VERIFY_TAIL;
use crate::tool_render::Json;

use super::exact::{counter, to_json, tools_json};
use super::list_layout::{as_list, id_at};
use super::messages::{Keep, Walker};
use super::session::fingerprint;

struct State {
    counter: Counter,
    tools: Vec<Json>,
    response_format: Option<Json>,
    ids: Vec<usize>,
    fingerprints: Vec<u64>,
    tokens: Vec<u32>,
    ctx: CountContext,
    memo: HashMap<u64, u32>,
}

impl State {
    /// Forget the history seen (ids, fingerprints, counts, the rendering context); the memo
    /// of counts by content stays.
    fn forget_history(&mut self) {
        self.ids.clear();
        self.fingerprints.clear();
        self.tokens.clear();
        self.ctx = CountContext::default();
    }
}

#[pyclass(module = "contextfold._core", frozen)]
pub struct ExactLedger {
    state: Mutex<State>,
}

impl ExactLedger {
    /// The ledger's state, locked (a poisoned lock is a RuntimeError, never a panic).
    fn locked<'a>(&'a self, py: Python<'_>) -> PyResult<std::sync::MutexGuard<'a, State>> {
        self.state
            .lock_py_attached(py)
            .map_err(|_| PyRuntimeError::new_err("exact ledger lock poisoned"))
    }
}

#[pymethods]
impl ExactLedger {
    #[new]
    #[pyo3(signature = (*, model, tools=None, response_format=None))]
    fn new(
        py: Python<'_>,
        model: &str,
        tools: Option<&Bound<'_, PyAny>>,
        response_format: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let response_format = match response_format.filter(|r| !r.is_none()) {
            Some(r) => Some(to_json(r, "response_format", 0)?),
            None => None,
        };
        Ok(ExactLedger {
            state: Mutex::new(State {
                counter: counter(py, model)?,
                tools: tools_json(tools)?,
                response_format,
                ids: Vec::new(),
                fingerprints: Vec::new(),
                tokens: Vec::new(),
                ctx: CountContext::default(),
                memo: HashMap::new(),
            }),
        })
    }

    /// Exact prompt tokens of `messages` (as `count` gives them), counting only the messages
    /// not seen in the same place last call.
    #[pyo3(signature = (messages, /))]
    fn count(&self, py: Python<'_>, messages: &Bound<'_, PyAny>) -> PyResult<u64> {
        let list = as_list(messages)?;
        let mut s = self.locked(py)?;
        let n = list.len();
        let mut prefix = s.ids.len().min(n);
        if let Some(i) = (0..prefix).find(|&i| id_at(&list, i) != s.ids[i]) {
            prefix = i;
        }
        // Recent messages are re-checked by shape: an in-place edit of the last turn is seen.
        for i in prefix.saturating_sub(VERIFY_TAIL)..prefix {
            if fingerprint(&list.get_item(i)?)? != s.fingerprints[i] {
                prefix = i;
                break;
            }
        }
        let s = &mut *s;
        if prefix < s.ids.len() {
            // An earlier message changed: the call context is rebuilt from the start (the
            // memo makes the known messages a hash each).
            s.ids.clear();
            s.fingerprints.clear();
            s.tokens.clear();
            s.ctx = CountContext::default();
            prefix = 0;
        }
        let keep = Keep::new();
        let mut w = Walker::new(py, &keep);
        let mut views = Vec::with_capacity(n - prefix);
        for i in prefix..n {
            let m = list.get_item(i)?;
            w.set_index(i);
            views.push(w.message(&m)?);
            s.ids.push(id_at(&list, i));
            s.fingerprints.push(fingerprint(&m)?);
        }
        let (counter, ctx, memo) = (s.counter, &mut s.ctx, &mut s.memo);
        let new = if views.len() > 256 {
            py.detach(|| counter.count_appended(ctx, memo, &views))
        } else {
            counter.count_appended(ctx, memo, &views)
        };
        s.tokens.extend(new);
        let messages: u64 = s.tokens.iter().map(|&t| u64::from(t)).sum();
        Ok(messages
            + s.counter
                .overhead_of(&s.ctx, &s.tools, s.response_format.as_ref()))
    }

    /// Messages whose counts are cached.
    #[getter]
    fn cached_messages(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.locked(py)?.ids.len())
    }

    /// Forget the history seen (in-place edits); the counts remembered by content stay.
    fn invalidate(&self, py: Python<'_>) -> PyResult<()> {
        let mut s = self.locked(py)?;
        s.forget_history();
        Ok(())
    }

    /// Forget everything (the memo included).
    fn reset(&self, py: Python<'_>) -> PyResult<()> {
        let mut s = self.locked(py)?;
        s.forget_history();
        s.memo.clear();
        Ok(())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ExactLedger>()
}
