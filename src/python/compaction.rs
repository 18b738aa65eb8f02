//! Bindings of the compaction plan, the verification of a finished history and the extractive
//! digest. Histories are read only through `Keep` / `Walker`; plans come back as plain dicts
//! and tuples that `contextfold.compactor` applies.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use super::messages::{Keep, Walker};
use super::prune::planned_edit;
use crate::compaction::{
    plan_priced, summary_message_json, text_block_json, verify, MaskOptions, Placement,
    PlanOptions, PricedEdit, Turn, WireFormat, MIN_SUMMARY_TOKENS, SUMMARY_CLOSE, SUMMARY_OPEN,
};
use crate::digest::{digest, DigestOptions};
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

/// The compaction plan of a history (see `compaction::plan`), as a dict.
#[pyfunction]
#[pyo3(signature = (messages, /, *, format, budget_tokens, tail_tokens, summary_tokens, provider="openai", model=None, tools=None, system=None, response_format=None, protect_first_n=1, min_tail=3, soft_ceiling=1.5, pinned=Vec::new(), tool_result_max_tokens=200, arguments_max_chars=2000, prune_images=true, dedupe=true, cache_block_tokens=0, keep_tool_uses=0, exclude_tools=Vec::new(), clear_tool_inputs=false, keep_thinking_turns=None, mask_observations=true, trusted_summaries=Vec::new(), summary_floor=0, recoverable=false))]
#[allow(clippy::too_many_arguments)]
fn compaction_plan<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
    format: &str,
    budget_tokens: u64,
    tail_tokens: u64,
    summary_tokens: u64,
    provider: &str,
    model: Option<&str>,
    tools: Option<&Bound<'py, PyAny>>,
    system: Option<&Bound<'py, PyAny>>,
    response_format: Option<&Bound<'py, PyAny>>,
    protect_first_n: usize,
    min_tail: usize,
    soft_ceiling: f64,
    pinned: Vec<usize>,
    tool_result_max_tokens: u32,
    arguments_max_chars: usize,
    prune_images: bool,
    dedupe: bool,
    cache_block_tokens: u64,
    keep_tool_uses: usize,
    exclude_tools: Vec<String>,
    clear_tool_inputs: bool,
    keep_thinking_turns: Option<usize>,
    mask_observations: bool,
    trusted_summaries: Vec<u64>,
    summary_floor: u64,
    recoverable: bool,
) -> PyResult<Bound<'py, PyDict>> {
    if !(soft_ceiling >= 1.0 && soft_ceiling.is_finite()) {
        return Err(PyValueError::new_err(format!(
            "soft_ceiling must be a finite number >= 1.0, got {soft_ceiling}"
        )));
    }
    if min_tail == 0 {
        return Err(PyValueError::new_err("min_tail must be at least 1"));
    }
    if arguments_max_chars < 64 {
        return Err(PyValueError::new_err(
            "arguments_max_chars must be at least 64 (room for a valid JSON marker)",
        ));
    }
    let fmt = self::format(format)?;
    let mut est = super::estimator_args::estimator(provider, model)?;
    let keep = Keep::new();
    let mut w = Walker::new(py, &keep);
    let (ms, costs) = w.messages_priced(messages, &mut est)?;
    let extras = w.extras(tools, system, response_format)?;
    let opt = PlanOptions {
        format: fmt,
        budget_tokens,
        overhead_tokens: u64::from(est.overhead(&extras)),
        tail_tokens,
        summary_tokens,
        protect_first_n,
        min_tail,
        soft_ceiling,
        pinned,
        mask: MaskOptions {
            tool_result_max_tokens,
            arguments_max_chars,
            prune_images,
            dedupe,
            cache_block_tokens,
            keep_tool_uses,
            exclude_tools,
            clear_tool_inputs,
            keep_thinking_turns,
            mask_observations,
            recoverable,
        },
        trusted_summaries,
        summary_floor,
    };
    let overhead = opt.overhead_tokens;
    let p = py.detach(|| plan_priced(&ms, &est, &costs, &opt));
    let d = PyDict::new(py);
    d.set_item("overhead_tokens", overhead)?;
    d.set_item("tokens_before", p.tokens_before)?;
    d.set_item("tokens_after_mask", p.tokens_after_mask)?;
    if recoverable {
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
    Ok(d)
}

/// Verify a finished history: `(tokens, [(kind, message index or -1, description), ...])`.
#[pyfunction]
#[pyo3(signature = (messages, /, *, format, provider="openai", model=None, tools=None, system=None, response_format=None, budget_tokens=None, seams=Vec::new(), overhead_tokens=None))]
#[allow(clippy::too_many_arguments)]
fn compaction_verify(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    format: &str,
    provider: &str,
    model: Option<&str>,
    tools: Option<&Bound<'_, PyAny>>,
    system: Option<&Bound<'_, PyAny>>,
    response_format: Option<&Bound<'_, PyAny>>,
    budget_tokens: Option<u64>,
    seams: Vec<usize>,
    overhead_tokens: Option<u64>,
) -> PyResult<(u64, Vec<FailureTuple>)> {
    let fmt = self::format(format)?;
    let mut est = super::estimator_args::estimator(provider, model)?;
    let keep = Keep::new();
    let mut w = Walker::new(py, &keep);
    let ms = w.messages(messages)?;
    // As the plan did (a history compacted down to no signature stays priced as the Gemini
    // API: the higher of the two, so the budget check errs on the safe side).
    est.settle_platform(&ms);
    // The plan already priced the tools and system (its `overhead_tokens`): a caller that has
    // it passes it instead of having them read and priced again.
    let overhead = match overhead_tokens {
        Some(t) => t,
        None => u64::from(est.overhead(&w.extras(tools, system, response_format)?)),
    };
    let v = py.detach(|| verify(&ms, fmt, &est, overhead, budget_tokens, &seams));
    let failures = v
        .failures
        .iter()
        .map(|f| {
            (
                f.kind(),
                f.index().map(|i| i as i64).unwrap_or(-1),
                f.describe(),
            )
        })
        .collect();
    Ok((v.tokens, failures))
}

/// `(kind, message index or -1, description)`.
type FailureTuple = (&'static str, i64, String);

/// The extractive digest of `messages` (the folded middle), at most `max_tokens` tokens.
#[pyfunction]
#[pyo3(signature = (messages, /, *, max_tokens, provider="openai", model=None, previous=None, instructions=None))]
fn extractive_digest(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    max_tokens: u64,
    provider: &str,
    model: Option<&str>,
    previous: Option<&str>,
    instructions: Option<&str>,
) -> PyResult<String> {
    let mut est = super::estimator_args::estimator(provider, model)?;
    let keep = Keep::new();
    let ms = Walker::new(py, &keep).messages(messages)?;
    est.settle_platform(&ms);
    let opt = DigestOptions {
        max_tokens,
        previous,
        instructions,
    };
    Ok(py.detach(|| digest(&ms, &est, &opt)))
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
    m.add("MIN_SUMMARY_TOKENS", MIN_SUMMARY_TOKENS)?;
    m.add_function(wrap_pyfunction!(compaction_plan, m)?)?;
    m.add_function(wrap_pyfunction!(compaction_verify, m)?)?;
    m.add_function(wrap_pyfunction!(extractive_digest, m)?)?;
    m.add_function(wrap_pyfunction!(summary_hash, m)?)?;
    m.add_function(wrap_pyfunction!(summary_message, m)?)?;
    m.add_function(wrap_pyfunction!(summary_block, m)?)?;
    m.add_function(wrap_pyfunction!(detect_wire_format, m)?)?;
    Ok(())
}
