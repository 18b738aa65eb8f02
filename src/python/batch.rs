//! The batch functions: `estimate_many` and `count_many`, many histories read in batches with
//! the GIL and priced on several threads with the GIL released.

use std::sync::atomic::{AtomicUsize, Ordering};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::message::Message;

use super::messages::{Keep, Walker};
use super::priced_request::request_parts;

/// Messages walked per batch of `estimate_many`: each batch is read with the GIL, then priced
/// with the GIL released, so the views and the references they need stay small and cache-warm.
const BATCH_MESSAGES: usize = 8192;

/// `total` of every history, on up to `threads` threads; one thread for small batches, where
/// spawning would cost more than it saves.
///
/// Threads take the next unpriced history as they finish the last: histories differ in cost by
/// orders of magnitude (one SWE trajectory holds most of a batch's text), so fixed chunks left
/// one thread idle (count_many on 20 SWE histories: 1.13x on 2 threads).
fn price_all<F>(
    all: &[Vec<Message<'_>>],
    threads: usize,
    min_per_thread: usize,
    total: F,
) -> Vec<u64>
where
    F: Fn(&[Message<'_>]) -> u64 + Sync,
{
    let weight: usize = all.iter().map(|h| h.len() + 1).sum();
    let threads = threads
        .min(all.len())
        .min(weight / min_per_thread.max(1) + 1)
        .max(1);
    if threads == 1 {
        return all.iter().map(|h| total(h)).collect();
    }
    // Largest first, so the last history a thread picks up is a small one.
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(all[i].len()));
    let next = AtomicUsize::new(0);
    let (total, order, next) = (&total, &order, &next);
    let work = move || {
        let mut got = Vec::new();
        loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            let Some(&i) = order.get(k) else { break };
            got.push((i, total(&all[i])));
        }
        got
    };
    let parts: Vec<Vec<(usize, u64)>> = std::thread::scope(|s| {
        let workers: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        // The calling thread is a worker too: one spawn fewer, and its per-thread tokenizer
        // state (`bpe_count`'s compiled split regex and its lazily built DFA caches) is already
        // warm, where a new thread builds its own first.
        let mut parts = vec![work()];
        parts.extend(
            workers
                .into_iter()
                .map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e))),
        );
        parts
    });
    let mut out = vec![0u64; all.len()];
    for (i, v) in parts.into_iter().flatten() {
        out[i] = v;
    }
    out
}

fn check_batch_args(
    histories: &Bound<'_, PyAny>,
    threads: Option<&Bound<'_, PyAny>>,
) -> PyResult<usize> {
    let threads = match threads.filter(|t| !t.is_none()) {
        None => None,
        Some(t) if t.is_instance_of::<pyo3::types::PyBool>() => {
            return Err(PyTypeError::new_err("threads must be an int, got bool"));
        }
        Some(t) => {
            let n: i64 = t.extract().or_else(|e| {
                if !t.is_instance_of::<pyo3::types::PyInt>() {
                    return Err(e);
                }
                // An int beyond i64: more threads than any machine has, or (below i64) fewer
                // than one, refused below like -1 (not an OverflowError from the conversion).
                Ok(if t.gt(0).unwrap_or(false) {
                    i64::MAX
                } else {
                    i64::MIN
                })
            })?;
            if n == i64::MIN {
                return Err(PyValueError::new_err(format!(
                    "threads must be at least 1, got {t}"
                )));
            }
            if n < 1 {
                return Err(PyValueError::new_err(format!(
                    "threads must be at least 1, got {n}"
                )));
            }
            // Never more threads than the batch can use (price_all caps it again by work).
            Some(usize::try_from(n).unwrap_or(usize::MAX).min(1024))
        }
    };
    if histories.is_instance_of::<PyString>() || histories.is_instance_of::<PyDict>() {
        return Err(PyTypeError::new_err(
            "histories must be a list of message lists",
        ));
    }
    Ok(threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())))
}

/// An error reading history `k` of a batch: an `InvalidMessageError` gets `.history = k` (its
/// `.index` is the message's position inside that history) and says so in its text.
#[cold]
fn in_history(py: Python<'_>, e: PyErr, k: usize) -> PyErr {
    let v = e.value(py);
    if v.hasattr("index").unwrap_or(false) && v.setattr("history", k).is_ok() {
        if let (Ok(reason), Ok(index), Ok(field)) =
            (v.getattr("reason"), v.getattr("index"), v.getattr("field"))
        {
            let reason = format!("history {k}: {reason}");
            if let Ok(new) = v.get_type().call1((reason, index, field)) {
                let _ = new.setattr("history", k);
                let _ = new.setattr("__cause__", v.getattr("__cause__").ok());
                return PyErr::from_value(new);
            }
        }
    }
    e
}

/// Walk `histories` in batches of about `BATCH_MESSAGES` messages with the GIL held, and price
/// each batch with the GIL released.
fn batched<F>(
    py: Python<'_>,
    histories: &Bound<'_, PyAny>,
    threads: usize,
    min_per_thread: usize,
    total: F,
) -> PyResult<Vec<u64>>
where
    F: Fn(&[Message<'_>]) -> u64 + Sync,
{
    let mut out = Vec::new();
    let mut it = histories.try_iter()?.peekable();
    while it.peek().is_some() {
        let keep = Keep::new();
        let mut w = Walker::new(py, &keep);
        let mut batch: Vec<Vec<Message<'_>>> = Vec::new();
        let mut walked = 0;
        while walked < BATCH_MESSAGES {
            let Some(h) = it.next() else { break };
            let ms = w
                .messages(&h?)
                .map_err(|e| in_history(py, e, out.len() + batch.len()))?;
            walked += ms.len() + 1;
            batch.push(ms);
        }
        out.extend(py.detach(|| price_all(&batch, threads, min_per_thread, &total)));
    }
    Ok(out)
}

/// Estimates of many histories (same provider, model, tools and system): read in batches with
/// the GIL, priced on several threads with the GIL released.
#[pyfunction]
#[pyo3(signature = (histories, /, *, provider="openai", model=None, tools=None, system=None, response_format=None, threads=None))]
#[allow(clippy::too_many_arguments)]
fn estimate_many(
    py: Python<'_>,
    histories: &Bound<'_, PyAny>,
    provider: &str,
    model: Option<&str>,
    tools: Option<&Bound<'_, PyAny>>,
    system: Option<&Bound<'_, PyAny>>,
    response_format: Option<&Bound<'_, PyAny>>,
    threads: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<u64>> {
    let threads = check_batch_args(histories, threads)?;
    let keep = Keep::new();
    let w = Walker::new(py, &keep);
    let (est, extras) = request_parts(&w, provider, model, tools, system, response_format)?;
    let overhead = u64::from(est.overhead(&extras));
    // The heuristic prices ~1,000 messages in well under a millisecond: threads only pay off
    // on large batches.
    batched(py, histories, threads, 2048, |ms| {
        // Each history settles its own serving platform (`Estimator::settle_platform`); only
        // one that does pays for its overhead again.
        let mut est = est;
        let overhead = match est.settle_platform(ms) {
            true => u64::from(est.overhead(&extras)),
            false => overhead,
        };
        est.messages_total(ms) + overhead
    })
}

/// Exact OpenAI prompt tokens of many histories (same model, tools and response format), as
/// `count` computes them: read in batches with the GIL, tokenized on several threads with the
/// GIL released.
#[pyfunction]
#[pyo3(signature = (histories, /, *, model, tools=None, response_format=None, threads=None))]
fn count_many(
    py: Python<'_>,
    histories: &Bound<'_, PyAny>,
    model: &str,
    tools: Option<&Bound<'_, PyAny>>,
    response_format: Option<&Bound<'_, PyAny>>,
    threads: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<u64>> {
    let threads = check_batch_args(histories, threads)?;
    let c = super::exact::counter(py, model)?;
    let tools = super::exact::tools_json(tools)?;
    let rf = match response_format.filter(|r| !r.is_none()) {
        Some(r) => Some(super::exact::to_json(r, "response_format", 0)?),
        None => None,
    };
    let responses = c.for_responses();
    // BPE costs ~30 ns per byte: even small histories are worth a thread.
    batched(py, histories, threads, 16, |ms| {
        // (Each history by the API whose shape it shows, as `count` reads one.)
        if crate::wire::detect(ms) == crate::message::Format::OpenAIResponses {
            responses.count(ms, &tools, rf.as_ref())
        } else {
            c.count(ms, &tools, rf.as_ref())
        }
    })
}

/// Register the batch functions on the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(estimate_many, m)?)?;
    m.add_function(wrap_pyfunction!(count_many, m)?)?;
    Ok(())
}
