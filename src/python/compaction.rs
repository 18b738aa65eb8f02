//! Bindings of the compaction plan, the verification of a finished history and the extractive
//! digest. Histories are read only through `Keep` / `Walker`; plans come back as plain dicts
//! and tuples that `contextfold.compactor` applies.

use std::borrow::Cow;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

use super::messages::{Keep, Walker};
use super::options::CompactionOptions;
use super::priced_request::PyPricedRequest;
use super::prune::planned_edit;
use super::py_input::PyInput;
use super::read_cache::{fold_of, read_messages, with_messages, MessageCache};
use crate::compaction::{
    check, plan_priced, summary_message_json, text_block_json, verify, Failure, Placement,
    PlanOptions, PricedEdit, Turn, WireFormat, MIN_SUMMARY_TOKENS, SUMMARY_CLOSE, SUMMARY_OPEN,
};
use crate::digest::{
    digest_indexed, requests_sections as digest_requests, DigestOptions, Digested,
};
use crate::message::Message;
use crate::wire::detect;

fn format(name: &str) -> PyResult<WireFormat> {
    WireFormat::parse(name).map_err(PyValueError::new_err)
}

fn turn(role: &str) -> PyResult<Turn> {
    match role {
        "user" => Ok(Turn::User),
        "assistant" | "model" => Ok(Turn::Assistant),
        _ => Err(PyValueError::new_err(format!(
            "summary role must be 'user' or 'assistant', got {role:?}"
        ))),
    }
}

/// From this many messages on, the plan's check of its input runs on a second thread (below, the
/// spawn costs more than the check).
const CHECK_ASIDE_AT: usize = 2048;

/// `(message index, path, value or None, kind, part or call index, tokens saved)`: the first
/// three as `contextfold.prune.apply_edits` takes them, written in the message's wire format.
type CompactionEdit<'py> = (
    usize,
    Bound<'py, PyList>,
    Bound<'py, PyAny>,
    &'static str,
    usize,
    u32,
);

fn edit_tuples<'py>(
    py: Python<'py>,
    ms: &[Message<'_>],
    edits: Vec<PricedEdit>,
) -> PyResult<Vec<CompactionEdit<'py>>> {
    let mut out = Vec::with_capacity(edits.len());
    for e in edits {
        let i = e.edit.index();
        let (path, value) = e.edit.wire_edit(&ms[i]);
        let (i, path, value) = planned_edit(py, i, &path, value.as_deref())?;
        out.push((i, path, value, e.edit.kind(), e.edit.slot(), e.saved));
    }
    Ok(out)
}

/// The compaction plan of a history (see `compaction::plan`), as a dict: the sizes of this
/// call beside what `request` (its format, tools, system prompt) and `options` fixed once.
/// `input_failures` are what the history already fails (`compaction::check`; checked only when
/// it is over the budget, the one case a compaction changes it), so a caller that verifies the
/// result tells its own problems from the input's without a second read. A caller moving the
/// tail of a history it planned already asks `masks=false` (no mask edits: `tokens_after_mask`
/// is `tokens_before`) and `check_input=false` (no `input_failures`: it has them), and passes
/// the first plan's `costs` with the indices of the messages it changed in `reprice`: the
/// others are not priced again (on the 10k synthetic history, ~1 ms of such a plan's ~15 ms;
/// reading the messages is most of the rest). The costs are those a fresh plan would find
/// (`Walker::repriced`). With a `cache` (`MessageCache`), each message object is read once per
/// cache: the tail fill's plan, the digest and the checks of one compaction reuse the first
/// plan's reading (that plan of the 10k history: 14.3 -> 5.2 ms). `carried_whole`: a previous
/// summary in the fold is the only home of what it stands for (`PlanOptions::carried_whole`).
#[pyfunction]
#[pyo3(signature = (messages, /, request, options, *, budget_tokens, tail_tokens, summary_tokens, pinned=Vec::new(), trusted_summaries=Vec::new(), masks=true, check_input=true, costs=None, reprice=Vec::new(), cache=None, carried_whole=false))]
#[allow(clippy::too_many_arguments)]
fn compaction_plan<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
    request: &PyPricedRequest,
    options: &CompactionOptions,
    budget_tokens: u64,
    tail_tokens: u64,
    summary_tokens: u64,
    pinned: Vec<usize>,
    trusted_summaries: Vec<u64>,
    masks: bool,
    check_input: bool,
    costs: Option<Vec<u32>>,
    reprice: Vec<usize>,
    cache: Option<&MessageCache>,
    carried_whole: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let format = request.format()?;
    let mut est = request.request.estimator;
    let keep = Keep::new();
    let mut locked = cache.map(|c| c.lock(py)).transpose()?;
    let (ms, costs) = match costs {
        Some(given) => {
            let ms = read_messages(py, messages, locked.as_mut(), &keep)?;
            if given.len() != ms.len() {
                return Err(PyValueError::new_err(format!(
                    "costs has {} entries for {} messages",
                    given.len(),
                    ms.len()
                )));
            }
            if let Some(&i) = reprice.iter().find(|&&i| i >= ms.len()) {
                return Err(PyValueError::new_err(format!(
                    "reprice names message {i} of a history of {}",
                    ms.len()
                )));
            }
            let costs = Walker::repriced(&ms, given, &reprice, &mut est);
            (ms, costs)
        }
        None => match locked.as_mut() {
            Some(l) => l.messages_priced(py, messages, &mut est)?,
            None => {
                let (ms, costs) = Walker::new(py, &keep).messages_priced(messages, &mut est)?;
                (Cow::Owned(ms), costs)
            }
        },
    };
    let opt = PlanOptions {
        format,
        budget_tokens,
        overhead_tokens: u64::from(request.request.overhead_beside(&ms)),
        tail_tokens,
        summary_tokens,
        pinned,
        trusted_summaries,
        summary_floor: (summary_tokens as f64 * options.summary_floor_share) as u64,
        find_masks: masks,
        carried_whole,
        ..options.plan.clone()
    };
    let (p, input_failures) = py.detach(|| {
        // Only a history over the budget is changed and verified: one within it skips the walk.
        // A long one is checked on a second thread beside the plan (the check alone cost 10% of
        // the plan on the synthetic 10k history).
        let checked = check_input
            && costs.iter().map(|&c| u64::from(c)).sum::<u64>() + opt.overhead_tokens
                > budget_tokens;
        match (checked, ms.len() >= CHECK_ASIDE_AT) {
            (false, _) => (plan_priced(&ms, &est, &costs, &opt), Vec::new()),
            (true, false) => (
                plan_priced(&ms, &est, &costs, &opt),
                check(&ms, format, &[]),
            ),
            (true, true) => std::thread::scope(|s| {
                let aside = s.spawn(|| check(&ms, format, &[]));
                let p = plan_priced(&ms, &est, &costs, &opt);
                let failures = aside
                    .join()
                    .unwrap_or_else(|e| std::panic::resume_unwind(e));
                (p, failures)
            }),
        }
    });
    let d = PyDict::new(py);
    // Each message's tokens as the plan priced them: a caller that needs them again (the tail
    // fill) reads them here instead of pricing the history a second time.
    d.set_item("costs", &costs)?;
    // Where a tail may open, one byte per position (1: no tool round is split there).
    let legal: Vec<u8> = p.legal.iter().map(|&ok| u8::from(ok)).collect();
    d.set_item("legal", PyBytes::new(py, &legal))?;
    d.set_item("overhead_tokens", opt.overhead_tokens)?;
    d.set_item("tokens_before", p.tokens_before)?;
    d.set_item("tokens_after_mask", p.tokens_after_mask)?;
    if opt.mask.recoverable {
        let mut all = super::recall::folds(&ms, &p.mask_edits);
        all.extend(super::recall::folds(&ms, &p.tail_edits));
        d.set_item("folds", all)?;
    }
    d.set_item("mask_edits", edit_tuples(py, &ms, p.mask_edits)?)?;
    d.set_item("head_end", p.head_end)?;
    d.set_item("tail_start", p.tail_start)?;
    d.set_item("kept", p.kept)?;
    d.set_item("folded", p.folded)?;
    d.set_item("previous_summary", p.previous_summary)?;
    d.set_item("previous_at", p.previous_at)?;
    d.set_item("previous_alone", p.previous_alone)?;
    match p.placement {
        Placement::Insert(t) => {
            d.set_item(
                "summary_role",
                if t == Turn::Assistant {
                    "assistant"
                } else {
                    "user"
                },
            )?;
            d.set_item("merge_index", py.None())?;
            d.set_item("merge_at_start", false)?;
        }
        Placement::Merge { index, at_start } => {
            d.set_item("summary_role", py.None())?;
            d.set_item("merge_index", index)?;
            d.set_item("merge_at_start", at_start)?;
        }
    }
    d.set_item("tail_edits", edit_tuples(py, &ms, p.tail_edits)?)?;
    d.set_item("summary_tokens", p.summary_tokens)?;
    d.set_item("fixed_tokens", p.fixed_tokens)?;
    d.set_item("seams", p.seams)?;
    d.set_item("reason", p.reason)?;
    d.set_item("input_failures", failure_tuples(&input_failures))?;
    // Where the pending last turn begins (calls awaiting results, left as they are by repair):
    // the one unanswered call a compaction may return.
    d.set_item("pending_from", crate::repair::pending_from(&ms, format))?;
    Ok(d)
}

/// Verify a finished history written for `request`: `(tokens, [(kind, message index or -1,
/// description), ...])`. `overhead_tokens` is the plan's (priced beside the history it was
/// made from); by default the request's own. `cache`: as `compaction_plan`'s.
#[pyfunction]
#[pyo3(signature = (messages, /, request, *, budget_tokens=None, seams=Vec::new(), overhead_tokens=None, cache=None))]
fn compaction_verify(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    request: &PyPricedRequest,
    budget_tokens: Option<u64>,
    seams: Vec<usize>,
    overhead_tokens: Option<u64>,
    cache: Option<&MessageCache>,
) -> PyResult<(u64, Vec<FailureTuple>)> {
    let format = request.format()?;
    let mut est = request.request.estimator;
    with_messages(py, messages, cache, |ms| {
        // As the plan did (a history compacted down to no signature stays priced as the Gemini
        // API: the higher of the two, so the budget check errs on the safe side).
        est.settle_platform(ms);
        let overhead = match overhead_tokens {
            Some(t) => t,
            None => u64::from(request.request.overhead_beside(ms)),
        };
        let v = py.detach(|| verify(ms, format, &est, overhead, budget_tokens, &seams));
        Ok((v.tokens, failure_tuples(&v.failures)))
    })
}

fn failure_tuples(failures: &[Failure]) -> Vec<FailureTuple> {
    failures
        .iter()
        .map(|f| {
            (
                f.kind(),
                f.index().map(|i| i as i64).unwrap_or(-1),
                f.describe(),
            )
        })
        .collect()
}

/// `(kind, message index or -1, description)`.
type FailureTuple = (&'static str, i64, String);

/// The extractive digest of `messages` (the folded middle), at most `max_tokens` tokens.
/// `cache`: as `compaction_plan`'s.
#[pyfunction]
#[pyo3(signature = (messages, /, *, max_tokens, provider="openai", model=None, previous=None, instructions=None, cache=None))]
#[allow(clippy::too_many_arguments)]
fn extractive_digest(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    max_tokens: u64,
    provider: &str,
    model: Option<&str>,
    previous: Option<&str>,
    instructions: Option<&str>,
    cache: Option<&MessageCache>,
) -> PyResult<String> {
    let report = extractive_digest_report(
        py,
        messages,
        max_tokens,
        provider,
        model,
        previous,
        instructions,
        cache,
    )?;
    Ok(report.0)
}

/// `extractive_digest`, with how many of the user's requests (of `messages` and `previous`;
/// courtesies aside; one a standing rule says whole is kept as it) it left out, and of how many:
/// `(text, left_out, requests)`.
#[pyfunction]
#[pyo3(signature = (messages, /, *, max_tokens, provider="openai", model=None, previous=None, instructions=None, cache=None))]
#[allow(clippy::too_many_arguments)]
fn extractive_digest_report(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    max_tokens: u64,
    provider: &str,
    model: Option<&str>,
    previous: Option<&str>,
    instructions: Option<&str>,
    cache: Option<&MessageCache>,
) -> PyResult<(String, usize, usize)> {
    let opt = DigestOptions {
        max_tokens,
        previous,
        instructions,
    };
    let d = digested(py, messages, provider, model, &opt, cache)?;
    Ok((d.text, d.requests_left_out, d.requests))
}

/// The digest of `messages` read through `cache` (its index ranked once per fold: kept there).
fn digested(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    provider: &str,
    model: Option<&str>,
    opt: &DigestOptions<'_>,
    cache: Option<&MessageCache>,
) -> PyResult<Digested> {
    // The fold's index as a digest of it ranked it earlier in this compaction (the same fold
    // digested again at another room), else ranked here and kept for the next.
    let fold = cache.and_then(|_| fold_of(messages));
    let ranked = match (cache, &fold) {
        (Some(c), Some(f)) => c.ranked_of(py, f, opt.previous)?,
        _ => None,
    };
    let known = ranked.is_some();
    let mut est = super::estimator_args::estimator(provider, model)?;
    let mut d = with_messages(py, messages, cache, |ms| {
        est.settle_platform(ms);
        Ok(py.detach(|| digest_indexed(ms, &est, opt, ranked)))
    })?;
    if let (Some(c), Some(f), false) = (cache, fold, known) {
        // (The text's callers never read the index again.)
        c.keep_ranked(py, f, opt.previous, std::mem::take(&mut d.ranked))?;
    }
    Ok(d)
}

/// The user's requests of `messages` (a folded span) and of `previous`, as the digest's requests
/// section alone, packed into each room of `rooms` (tokens), in order, from one reading of the
/// span; "" where there are none. `cache`: as `compaction_plan`'s.
#[pyfunction]
#[pyo3(signature = (messages, /, *, rooms, provider="openai", model=None, previous=None, cache=None))]
fn requests_sections(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    rooms: Vec<u64>,
    provider: &str,
    model: Option<&str>,
    previous: Option<&str>,
    cache: Option<&MessageCache>,
) -> PyResult<Vec<String>> {
    let mut est = super::estimator_args::estimator(provider, model)?;
    with_messages(py, messages, cache, |ms| {
        est.settle_platform(ms);
        Ok(py.detach(|| digest_requests(ms, &est, previous, &rooms)))
    })
}

/// The standing rules a summary of `messages` (the folded span) must keep, in order: those of
/// `previous` (the summary folded with them) and of the span's system and user turns.
/// `cache`: as `compaction_plan`'s.
#[pyfunction]
#[pyo3(signature = (messages, /, *, previous=None, cache=None))]
fn standing_rules(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    previous: Option<&str>,
    cache: Option<&MessageCache>,
) -> PyResult<Vec<String>> {
    with_messages(py, messages, cache, |ms| {
        let all: Vec<usize> = (0..ms.len()).collect();
        Ok(py.detach(|| crate::digest::fold_rules(ms, &all, previous)))
    })
}

/// The hash by which a later compaction trusts a summary as the library's own
/// (`summary_trust::summary_hash` of the text between the markers).
#[pyfunction]
#[pyo3(signature = (body, /))]
fn summary_hash(body: &str) -> u64 {
    crate::summary_trust::summary_hash(body)
}

/// The wire format of a history as the core reads it (`crate::wire::detect`): `chat`,
/// `responses`, `anthropic`, `gemini` or `bedrock`, from the first message that shows one;
/// None when none does (plain text messages, an empty history). Messages are read one by one
/// and the walk stops at the first that decides, so a long history costs its first messages.
#[pyfunction]
#[pyo3(signature = (messages, /))]
fn detect_wire_format(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
) -> PyResult<Option<&'static str>> {
    if messages.is_instance_of::<PyString>() || messages.is_instance_of::<PyDict>() {
        return Err(PyTypeError::new_err(format!(
            "messages must be a list of messages, got {}",
            messages.get_type().name()?
        )));
    }
    let keep = Keep::new();
    let mut w = Walker::new(py, &keep);
    for (i, m) in messages.try_iter()?.enumerate() {
        w.set_index(i);
        let m = w.message(&m?)?;
        if let Some(f) = WireFormat::of(detect(std::slice::from_ref(&m))) {
            return Ok(Some(f.name()));
        }
    }
    Ok(None)
}

/// The wire format a list of tool definitions is written in (`crate::wire::tools_format`):
/// None when `tools` is not a list or no definition's shape tells. What a history of plain
/// text messages is written in, when the tools sent beside it say.
#[pyfunction]
#[pyo3(signature = (tools, /))]
fn tools_wire_format(tools: &Bound<'_, PyAny>) -> Option<&'static str> {
    let keep = Keep::new();
    crate::wire::tools_format(&PyInput::new(tools.clone(), &keep)).map(|f| f.name())
}

/// The summary as one message of the wire format, as compact JSON.
#[pyfunction]
#[pyo3(signature = (text, /, *, format, role))]
fn summary_message(text: &str, format: &str, role: &str) -> PyResult<String> {
    Ok(summary_message_json(
        self::format(format)?,
        turn(role)?,
        text,
    ))
}

/// A text block of the wire format carrying `text` (to merge into a message), as compact JSON.
#[pyfunction]
#[pyo3(signature = (text, /, *, format, role))]
fn summary_block(text: &str, format: &str, role: &str) -> PyResult<String> {
    Ok(text_block_json(self::format(format)?, turn(role)?, text))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("SUMMARY_MARKERS", (SUMMARY_OPEN, SUMMARY_CLOSE))?;
    m.add("WIRE_FORMATS", WireFormat::NAMES.to_vec())?;
    // Each format's key of a message's content (its dialect's), for the Python steps that
    // build a message from two.
    let keys: Vec<(&str, &str)> = WireFormat::NAMES
        .iter()
        .filter_map(|n| {
            WireFormat::parse(n)
                .ok()
                .map(|f| (*n, f.dialect().content_key))
        })
        .collect();
    m.add(
        "CONTENT_KEYS",
        pyo3::types::IntoPyDict::into_py_dict(keys, m.py())?,
    )?;
    m.add("MIN_SUMMARY_TOKENS", MIN_SUMMARY_TOKENS)?;
    m.add_function(wrap_pyfunction!(compaction_plan, m)?)?;
    m.add_function(wrap_pyfunction!(compaction_verify, m)?)?;
    m.add_function(wrap_pyfunction!(extractive_digest, m)?)?;
    m.add_function(wrap_pyfunction!(extractive_digest_report, m)?)?;
    m.add_function(wrap_pyfunction!(requests_sections, m)?)?;
    m.add_function(wrap_pyfunction!(standing_rules, m)?)?;
    m.add_function(wrap_pyfunction!(summary_hash, m)?)?;
    m.add_function(wrap_pyfunction!(summary_message, m)?)?;
    m.add_function(wrap_pyfunction!(summary_block, m)?)?;
    m.add_function(wrap_pyfunction!(detect_wire_format, m)?)?;
    m.add_function(wrap_pyfunction!(tools_wire_format, m)?)?;
    Ok(())
}
