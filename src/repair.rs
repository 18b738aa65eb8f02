//! Repair of broken histories: what a provider would reject, made acceptable with the least
//! change, each change said.
//!
//! - A call without a result gets a stand-in result marked as interrupted (an error result
//!   where the format has the notion: Anthropic `is_error`, Bedrock `status: "error"`, Gemini
//!   `response.error`).
//! - A result without its call (or a second result of one call) is dropped.
//! - Duplicate call ids are made unique (`id_2`, `id_3`, ...), the result that follows each
//!   renamed call renamed with it (in chat, an id used again in a later round once its call
//!   was answered is kept).
//! - Arguments a provider parses as JSON (OpenAI chat function calls, Responses `function_call`
//!   items) that are not valid JSON are kept as a string under `"invalid_json"` (empty ones
//!   become `{}`): a model's malformed or cut call, recorded as it came, made every later
//!   request carrying it fail where the provider parses past arguments.
//! - A pending last turn (calls still awaiting results or an approval) is left as it is.
//!
//! Where a result must sit: OpenAI chat, in the run of `tool` messages right after its call;
//! Responses, in a `function_call_output` item after its call and before the next user or
//! assistant message; Anthropic, Bedrock and Gemini, in the message right after the call's.
//! Gemini calls without an id pair by name and order, so they are never renamed.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::compaction::Turn;
use crate::message::{Content, Message, Part, Role};
use crate::server_call_span::{is_server_call_id, ServerSpans};
use crate::shrink_json::is_valid_json;
use crate::wire::edit::{json_string, CallAt, Step};
use crate::wire::{
    anthropic, bedrock, gemini, openai_chat, openai_responses, responses_tool_items, BlankText,
    Format, WireFormat,
};

/// The text of a stand-in result.
pub const INTERRUPTED: &str =
    "[interrupted: no result was recorded for this call (the run stopped \
before it returned); stand-in added by contextfold repair]";

/// The key under which a repaired call keeps arguments that were not valid JSON, as a string.
pub const INVALID_JSON_KEY: &str = "invalid_json";

/// The text left in a message whose every block was a result without its call.
pub const DROPPED: &str =
    "[results of calls missing from this history were dropped by contextfold repair]";

pub use crate::wire::edit::Action;

/// One edit of caller message `index`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepairEdit {
    pub index: usize,
    pub path: Vec<Step>,
    pub action: Action,
}

/// A message of the repaired history: a caller's message (edited by `edits` when any names
/// it) or a new one (compact JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slot {
    Keep(usize),
    New(String),
}

/// The repair of a history.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RepairPlan {
    pub messages: Vec<Slot>,
    /// Sets first, then removals (highest position first), then insertions, per message.
    pub edits: Vec<RepairEdit>,
    /// What was changed, one line each, naming the caller's message index.
    pub changes: Vec<String>,
    /// The caller messages whose content a note replaced (every block in them an orphan
    /// result): text alone once repaired, which a turn of one role before it may take.
    noted: Vec<usize>,
}

struct CallRef<'a> {
    at: CallAt,
    id: &'a str,
    name: &'a str,
}

fn calls_of<'a>(m: &'a Message<'_>) -> Vec<CallRef<'a>> {
    let mut out: Vec<CallRef<'a>> = m
        .tool_calls
        .iter()
        .enumerate()
        .map(|(j, c)| CallRef {
            at: CallAt::ToolCalls(j),
            id: c.id,
            name: c.name,
        })
        .collect();
    if let Content::Parts(ps) = &m.content {
        for (k, p) in ps.iter().enumerate() {
            // A server tool's call answered in its own message needs no result elsewhere.
            if let Part::ToolUse(c) = p {
                if m.answered_here(c.id) {
                    continue;
                }
                out.push(CallRef {
                    at: CallAt::Part(k),
                    id: c.id,
                    name: c.name,
                });
            }
        }
    }
    out
}

fn results_of<'a>(m: &'a Message<'_>) -> Vec<(Option<usize>, &'a str)> {
    let mut out = Vec::new();
    if let Some(id) = m.tool_call_id {
        out.push((None, id));
    }
    if let Content::Parts(ps) = &m.content {
        for (k, p) in ps.iter().enumerate() {
            if let Part::ToolResult { tool_use_id, .. } = p {
                if m.answered_here(tool_use_id) {
                    continue;
                }
                out.push((Some(k), *tool_use_id));
            }
        }
    }
    out
}

fn call_path(m: &Message<'_>, at: CallAt) -> Option<Vec<Step>> {
    match m.wire {
        Format::OpenAIChat => openai_chat::call_id_path(at),
        Format::OpenAIResponses => openai_responses::call_id_path(at),
        Format::Anthropic => anthropic::call_id_path(at),
        Format::Gemini => gemini::call_id_path(at, false),
        Format::GeminiSnake => gemini::call_id_path(at, true),
        Format::Bedrock => bedrock::call_id_path(at),
        // A Responses call item of a client-run tool (never edited otherwise): its id's key.
        Format::Unknown => m
            .item
            .and_then(responses_tool_items::call_id_key)
            .filter(|_| at == CallAt::ToolCalls(0))
            .map(|key| vec![Step::Key(key)]),
        Format::LangChain => None,
    }
}

fn result_path(m: &Message<'_>, part: Option<usize>) -> Option<Vec<Step>> {
    match m.wire {
        Format::OpenAIChat => openai_chat::result_id_path(part),
        Format::OpenAIResponses => openai_responses::result_id_path(part),
        Format::Anthropic => anthropic::result_id_path(part),
        Format::Gemini => gemini::result_id_path(part, false),
        Format::GeminiSnake => gemini::result_id_path(part, true),
        Format::Bedrock => bedrock::result_id_path(part),
        Format::Unknown => m
            .item
            .and_then(responses_tool_items::result_id_key)
            .filter(|_| part.is_none())
            .map(|key| vec![Step::Key(key)]),
        Format::LangChain => None,
    }
}

/// Whether a call is a Gemini or Ollama call without an id (its view's id is its name).
fn nameless(m: &Message<'_>, id: &str, name: &str) -> bool {
    matches!(
        m.wire,
        Format::Gemini | Format::GeminiSnake | Format::OpenAIChat
    ) && id == name
}

/// The list key of a strict format's message content.
fn list_key(wire: Format) -> &'static str {
    match wire {
        Format::Gemini | Format::GeminiSnake => "parts",
        _ => "content",
    }
}

/// A stand-in result block of a strict format.
fn block(wire: Format, id: &str, name: &str) -> String {
    match wire {
        Format::Gemini => gemini::error_result_block_json(id, name, INTERRUPTED, false),
        Format::GeminiSnake => gemini::error_result_block_json(id, name, INTERRUPTED, true),
        Format::Bedrock => bedrock::error_result_block_json(id, INTERRUPTED),
        _ => anthropic::error_result_block_json(id, INTERRUPTED),
    }
}

/// A text block of a strict format.
fn text_block(wire: Format, text: &str) -> String {
    match wire {
        Format::Gemini | Format::GeminiSnake => gemini::text_block_json(text),
        Format::Bedrock => bedrock::text_block_json(text),
        _ => anthropic::text_block_json(text),
    }
}

fn count_parts(m: &Message<'_>) -> usize {
    match &m.content {
        Content::Parts(ps) => ps.len(),
        _ => 0,
    }
}

/// The repair of `msgs`, a history of `format`.
pub fn repair(msgs: &[Message<'_>], format: WireFormat) -> RepairPlan {
    repair_history(msgs, format, false)
}

/// The repair of `msgs`, a history of `format`; `held_upstream`: the history continues one the
/// provider holds (a Responses input sent with `previous_response_id` or `conversation`), so a
/// result whose call is nowhere in it answers a call of that held history and is kept (once per
/// id). Dropped as an orphan, it left a continuation of nothing but outputs an empty input.
pub fn repair_history(msgs: &[Message<'_>], format: WireFormat, held_upstream: bool) -> RepairPlan {
    let mut plan = RepairPlan::default();
    valid_arguments(msgs, &mut plan);
    drop_empty_call_lists(msgs, &mut plan);
    let ids = unique_ids(msgs, format, &mut plan);
    if format.strict_turns() {
        repair_strict(msgs, &ids, &mut plan);
    } else {
        repair_sequential(
            msgs,
            &ids,
            format == WireFormat::Responses,
            held_upstream,
            &mut plan,
        );
    }
    if format == WireFormat::Responses {
        drop_lone_reasoning(msgs, &mut plan);
    }
    if format.strict_turns() {
        drop_empty_turns(msgs, format, &mut plan);
        drop_blank_blocks(msgs, format, &mut plan);
        if format.dialect().refuses_same_role {
            join_same_role(msgs, &mut plan);
        }
        if format.dialect().refuses_prefill_trailing_space {
            trim_prefill(msgs, format, &mut plan);
        }
    }
    plan
}

/// Turns of an empty content list (a Gemini candidate that came back without parts, a blocked or
/// cut answer, appended as it came), of no content, or of text alone that the format refuses
/// (an empty tool output or model answer sent back as `""`), which Gemini refuses
/// ("contents.parts must not be empty") and Anthropic too ("all messages must have non-empty
/// content except for the optional final assistant message"): dropped, unless the repair put something into them (a stand-in result)
/// or the turn is the final assistant one. Its two neighbours, then turns of one role in a row
/// (Bedrock refuses them), are joined when both hold content lists.
fn drop_empty_turns(msgs: &[Message<'_>], format: WireFormat, plan: &mut RepairPlan) {
    // A turn the repair writes into is no longer empty: a stand-in result replaces an empty
    // string content whole (`Action::Set` of the list), and dropping the turn dropped it too,
    // leaving its call unanswered. A set deeper in the turn (a renamed id) fills nothing.
    let edited = |i: usize, plan: &RepairPlan| {
        plan.fills(i)
            || plan.joined_away(i)
            || plan
                .edits
                .iter()
                .any(|e| e.index == i && !matches!(e.action, Action::Set(_)))
    };
    // What the check calls a message without content: no content, an empty list, or only text
    // the format refuses (`wire::BlankText`: Anthropic's `content: ""`).
    let blank = format.dialect().blank_text;
    let empty = |m: &Message<'_>| {
        let none = match &m.content {
            Content::None => true,
            Content::Parts(ps) => ps
                .iter()
                .all(|p| matches!(p, Part::Text(t) if blank.refuses(t))),
            Content::Text(t) => blank.refuses(t),
        };
        none && m.tool_calls.is_empty() && m.tool_call_id.is_none()
    };
    let last = msgs.len().saturating_sub(1);
    let mut k = 0;
    while k < plan.messages.len() {
        let Slot::Keep(i) = plan.messages[k] else {
            k += 1;
            continue;
        };
        let final_answer = i == last && Turn::of(&msgs[i]) == Turn::Assistant;
        if !empty(&msgs[i]) || final_answer || edited(i, plan) {
            k += 1;
            continue;
        }
        plan.messages.remove(k);
        plan.changes.push(format!(
            "message {i}: an empty turn (the API refuses one): dropped"
        ));
        let (Some(Slot::Keep(a)), Some(Slot::Keep(b))) = (
            k.checked_sub(1).and_then(|j| plan.messages.get(j)),
            plan.messages.get(k),
        ) else {
            continue;
        };
        let (a, b) = (*a, *b);
        let lists = matches!(msgs[a].content, Content::Parts(_))
            && matches!(msgs[b].content, Content::Parts(_));
        if Turn::of(&msgs[a]) == Turn::of(&msgs[b]) && lists && !edited(b, plan) {
            plan.join(
                a,
                b,
                msgs[a].wire,
                k,
                format!("two turns of one role in a row once message {i} went"),
            );
        }
    }
}

/// The whitespace ending the text of a final assistant turn (a prefill), which the format's
/// provider refuses ("final assistant content cannot end with trailing whitespace"): trimmed.
/// A last block of whitespace alone, beside others, goes.
fn trim_prefill(msgs: &[Message<'_>], format: WireFormat, plan: &mut RepairPlan) {
    let Some(&Slot::Keep(i)) = plan.messages.last() else {
        return;
    };
    let m = &msgs[i];
    if Turn::of(m) != Turn::Assistant || plan.fills(i) || plan.takes_blocks(i) {
        return;
    }
    let Some((at, text)) = crate::wire::prefill_end(m, format.dialect().blank_text) else {
        return;
    };
    let trimmed = text.trim_end();
    plan.changes.push(format!(
        "message {i}: the final assistant turn ends in whitespace (the API refuses it): trimmed"
    ));
    match at {
        Some(k) if trimmed.is_empty() && count_parts(m) > 1 => {
            plan.remove_parts(i, m.wire, vec![k]);
            order_removals(plan);
        }
        Some(k) => plan.edits.push(RepairEdit {
            index: i,
            path: vec![
                Step::Key(list_key(m.wire)),
                Step::Index(k),
                Step::Key("text"),
            ],
            action: Action::Set(json_string(trimmed)),
        }),
        None => plan.edits.push(RepairEdit {
            index: i,
            path: vec![Step::Key("content")],
            action: Action::Set(json_string(trimmed)),
        }),
    }
}

/// Two kept turns of one role in a row (a user's words written as a turn of their own after
/// the results turn, two answers of the model), which a format that refuses them
/// (`Dialect::refuses_same_role`: Bedrock) takes as one turn: the second's blocks appended to
/// the first. Left where the second holds results once repaired (they must open their turn).
///
/// Each turn is read as the repair leaves it, or a second repair joined what the first left:
/// a turn of orphan results became a note, and a turn the stand-in results go into kept the
/// user's next turn apart. The appends are made after the sets that replace a list whole (the
/// note) and before the insertions (the stand-ins), whose positions count the first turn's own
/// blocks: from its start, or past its end (a Gemini stand-in after the responses), which stays
/// before the blocks appended.
fn join_same_role(msgs: &[Message<'_>], plan: &mut RepairPlan) {
    // (A turn may take the blocks of several: the appends are made in order.)
    let mut k = 1;
    while k < plan.messages.len() {
        let (Slot::Keep(a), Slot::Keep(b)) = (&plan.messages[k - 1], &plan.messages[k]) else {
            k += 1;
            continue;
        };
        let (a, b) = (*a, *b);
        let turn = Turn::of(&msgs[a]);
        if turn != Turn::of(&msgs[b])
            || !matches!(turn, Turn::User | Turn::Assistant)
            || !plan.holds_list(msgs, a)
            || !plan.holds_list(msgs, b)
            || plan.holds_results(msgs, b)
            || plan.joined_away(a)
            || plan.joined_away(b)
            || plan.takes_blocks(b)
        {
            k += 1;
            continue;
        }
        plan.join(
            a,
            b,
            msgs[a].wire,
            k,
            "the API refuses two turns of one role in a row".to_string(),
        );
    }
}

/// Text blocks the format refuses (`wire::BlankText`: Anthropic's empty and whitespace-only
/// text, "text content blocks must contain non-whitespace text"; Bedrock's empty text, "The
/// text field in the ContentBlock object ... is blank") beside other blocks of a kept turn:
/// removed, said in `.changes`. A turn the repair writes blocks into at positions it counted
/// (stand-in results) or replaces whole keeps them: its positions do not count a removal.
fn drop_blank_blocks(msgs: &[Message<'_>], format: WireFormat, plan: &mut RepairPlan) {
    let blank = format.dialect().blank_text;
    if blank == BlankText::Taken {
        return;
    }
    let kept: Vec<usize> = plan
        .messages
        .iter()
        .filter_map(|s| match s {
            Slot::Keep(i) => Some(*i),
            Slot::New(_) => None,
        })
        .collect();
    let mut removed = false;
    for i in kept {
        let m = &msgs[i];
        let Content::Parts(ps) = &m.content else {
            continue;
        };
        let refused: Vec<usize> = ps
            .iter()
            .enumerate()
            .filter(|(_, p)| matches!(p, Part::Text(t) if blank.refuses(t)))
            .map(|(k, _)| k)
            .collect();
        // (A turn of blank text alone is an empty turn: `drop_empty_turns` dropped or kept it.)
        if plan.fills(i) || refused.is_empty() || refused.len() == ps.len() {
            continue;
        }
        for k in &refused {
            plan.changes.push(format!(
                "message {i}: content block {k} is blank text (the API refuses it): removed"
            ));
        }
        plan.remove_parts(i, m.wire, refused);
        removed = true;
    }
    if removed {
        order_removals(plan);
    }
}

/// The removals of `plan` ordered as they must be made: each message's from its highest
/// position, so each still names its block when two steps of the repair removed from one list.
/// (Each kind of edit is made in a pass of its own: the removals' place among them is free.)
fn order_removals(plan: &mut RepairPlan) {
    let (mut removals, others): (Vec<RepairEdit>, Vec<RepairEdit>) =
        std::mem::take(&mut plan.edits)
            .into_iter()
            .partition(|e| e.action == Action::Remove);
    removals.sort_by_key(|e| {
        let (last, prefix) = match e.path.split_last() {
            Some((Step::Index(k), prefix)) => (*k, prefix),
            Some((Step::Key(_), prefix)) => (0, prefix),
            None => (0, &[][..]),
        };
        (e.index, format!("{prefix:?}"), std::cmp::Reverse(last))
    });
    removals.dedup();
    plan.edits = others;
    plan.edits.extend(removals);
}

/// The `tool_calls: []` of chat messages (`wire::openai_chat::EMPTY_CALLS`), which OpenAI
/// refuses: removed (a list of no calls says what its absence says).
fn drop_empty_call_lists(msgs: &[Message<'_>], plan: &mut RepairPlan) {
    for (i, m) in msgs.iter().enumerate() {
        if m.item == Some(crate::wire::openai_chat::EMPTY_CALLS) {
            plan.changes.push(format!(
                "message {i}: an empty tool_calls list (OpenAI refuses it): removed"
            ));
            plan.edits.push(RepairEdit {
                index: i,
                path: vec![Step::Key("tool_calls")],
                action: Action::Remove,
            });
        }
    }
}

/// Arguments a provider parses as JSON (`wire::json_arguments_path`) that are not valid JSON,
/// made valid with their text kept: `{"invalid_json": "<the text>"}`, or `{}` for empty ones
/// (some OpenAI-compatible servers send `""` for a call without arguments). A custom tool's
/// free-text input and the object arguments of the other formats are never touched.
fn valid_arguments(msgs: &[Message<'_>], plan: &mut RepairPlan) {
    for (i, m) in msgs.iter().enumerate() {
        for (j, c) in m.tool_calls.iter().enumerate() {
            if is_valid_json(&c.arguments) {
                continue;
            }
            let Some(path) = crate::wire::json_arguments_path(m, j) else {
                continue;
            };
            let (new, what) = if c.arguments.trim().is_empty() {
                ("{}".to_string(), "were empty: set to {}".to_string())
            } else {
                (
                    format!("{{\"{INVALID_JSON_KEY}\":{}}}", json_string(&c.arguments)),
                    format!(
                        "were not valid JSON ({} characters): kept as a string under \"{INVALID_JSON_KEY}\"",
                        c.arguments.chars().count()
                    ),
                )
            };
            plan.changes
                .push(format!("message {i}: arguments of call {:?} {what}", c.id));
            plan.edits.push(RepairEdit {
                index: i,
                path,
                action: Action::Set(json_string(&new)),
            });
        }
    }
}

/// Responses reasoning items that the repaired history would send without the item they
/// precede (the next item kept is no output of the model's, or there is none): dropped, said
/// in `.changes`. The API refuses them ("Item 'rs_..' of type 'reasoning' was provided without
/// its required following item"); a reasoning item was left so when the call after it was
/// dropped for want of an output, or when the history ended on it.
fn drop_lone_reasoning(msgs: &[Message<'_>], plan: &mut RepairPlan) {
    // (From the end: a run of reasoning items left alone goes whole.)
    let mut dropped = Vec::new();
    for k in (0..plan.messages.len()).rev() {
        let Slot::Keep(i) = plan.messages[k] else {
            continue;
        };
        let followed = match plan.messages.get(k + 1) {
            Some(Slot::Keep(j)) => follows(&msgs[i], &msgs[*j]),
            _ => false,
        };
        if msgs[i].is_reasoning_item() && !followed {
            plan.messages.remove(k);
            dropped.push(i);
        }
    }
    for i in dropped.into_iter().rev() {
        plan.changes.push(format!(
            "message {i}: reasoning item without the item it precedes: dropped"
        ));
    }
}

/// Whether `next` is an item OpenAI takes as the one `reasoning` precedes: a model item, and
/// not an assistant message without the id it came back with where the reasoning has one of
/// OpenAI's (`rs_...`). The recorded gpt-5 request that sent its reasoning item before
/// `{"role": "assistant", "content": "..."}` was refused ("Item 'rs_..' of type 'reasoning'
/// was provided without its required following item"); DeepSeek's Responses API, whose
/// reasoning ids are no `rs_`, took one before a call item without an id.
fn follows(reasoning: &Message<'_>, next: &Message<'_>) -> bool {
    let bound = reasoning.item_id.is_some_and(|id| id.starts_with("rs_"));
    let message = next.tool_calls.is_empty() && next.item.is_none() && !next.is_reasoning_item();
    next.role == Role::Assistant && !(bound && message && next.item_id.is_none())
}

/// The effective ids of each message's calls (id, tool name) and results (part, id), once
/// duplicate call ids are made unique.
struct Ids {
    calls: Vec<Vec<(String, String)>>,
    results: Vec<Vec<(Option<usize>, String)>>,
}

impl RepairPlan {
    fn interrupted(&mut self, i: usize, id: &str) {
        self.changes.push(format!(
            "message {i}: call {id:?} had no result: stand-in result marked interrupted added"
        ));
    }

    /// The messages `deferred` while calls waited, kept here: each said moved when a result or
    /// stand-in went in before it.
    fn put_back(&mut self, deferred: &mut Vec<(usize, usize)>) {
        for (i, at) in deferred.drain(..) {
            if self.messages.len() > at {
                self.changes.push(format!(
                    "message {i}: message between a tool call and its results: moved after them"
                ));
            }
            self.messages.push(Slot::Keep(i));
        }
    }

    fn orphan(&mut self, i: usize, id: &str) {
        self.changes.push(format!(
            "message {i}: result for call {id:?} without that call (or answered twice): dropped"
        ));
    }

    /// Whether the repair writes blocks into caller message `i` at positions it counted on the
    /// caller's list (stand-in results), or replaces its list whole: a removal there would
    /// move them.
    fn fills(&self, i: usize) -> bool {
        self.edits.iter().any(|e| {
            e.index == i
                && match &e.action {
                    Action::Insert { .. } => true,
                    Action::Set(_) => e.path.len() == 1,
                    _ => false,
                }
        })
    }

    /// Whether the repair inserts blocks into caller message `i` at positions it counted on
    /// the caller's list (stand-in results).
    fn inserts(&self, i: usize) -> bool {
        self.edits
            .iter()
            .any(|e| e.index == i && matches!(e.action, Action::Insert { .. }))
    }

    /// The list that replaces caller message `i`'s content whole (a stand-in for a string
    /// content, or a note), as JSON.
    fn replaced(&self, i: usize) -> Option<&str> {
        self.edits.iter().find_map(|e| match &e.action {
            Action::Set(v) if e.index == i && e.path.len() == 1 && v.starts_with('[') => {
                Some(v.as_str())
            }
            _ => None,
        })
    }

    /// Whether caller message `i`, repaired, holds content blocks: its own list, or one the
    /// repair wrote in place of its content.
    fn holds_list(&self, msgs: &[Message<'_>], i: usize) -> bool {
        matches!(msgs[i].content, Content::Parts(_)) || self.replaced(i).is_some()
    }

    /// Whether caller message `i`, repaired, holds a tool result: one of its own the repair
    /// leaves, or a stand-in it writes. A note in place of orphans holds none.
    fn holds_results(&self, msgs: &[Message<'_>], i: usize) -> bool {
        if self.inserts(i) {
            return true;
        }
        if self.replaced(i).is_some() {
            return !self.noted.contains(&i);
        }
        let key = list_key(msgs[i].wire);
        msgs[i].parts().iter().enumerate().any(|(k, p)| {
            matches!(p, Part::ToolResult { .. })
                && !self.edits.iter().any(|e| {
                    e.index == i
                        && e.action == Action::Remove
                        && e.path == [Step::Key(key), Step::Index(k)]
                })
        })
    }

    /// Whether caller message `i` takes the blocks of a later one (`Action::Append`).
    fn takes_blocks(&self, i: usize) -> bool {
        self.edits
            .iter()
            .any(|e| e.index == i && matches!(e.action, Action::Append { .. }))
    }

    /// Whether caller message `i`'s blocks go to an earlier one (`Action::Append`).
    fn joined_away(&self, i: usize) -> bool {
        self.edits
            .iter()
            .any(|e| matches!(e.action, Action::Append { from } if from == i))
    }

    /// Join caller message `b` (slot `k` of the repaired history) to message `a` before it, of
    /// one role: its content blocks appended to `a`'s, and its slot gone; `why` said.
    fn join(&mut self, a: usize, b: usize, wire: Format, k: usize, why: String) {
        self.edits.push(RepairEdit {
            index: a,
            path: vec![Step::Key(list_key(wire))],
            action: Action::Append { from: b },
        });
        self.changes
            .push(format!("message {b}: joined to message {a} ({why})"));
        self.messages.remove(k);
    }

    /// Remove the content blocks at `parts` of message `index` (highest first, so each index
    /// still names its block).
    fn remove_parts(&mut self, index: usize, wire: Format, mut parts: Vec<usize>) {
        parts.sort_unstable_by(|a, b| b.cmp(a));
        for k in parts {
            self.edits.push(RepairEdit {
                index,
                path: vec![Step::Key(list_key(wire)), Step::Index(k)],
                action: Action::Remove,
            });
        }
    }

    fn rename(&mut self, index: usize, path: Vec<Step>, new: &str, change: String) {
        self.changes.push(change);
        self.edits.push(RepairEdit {
            index,
            path,
            action: Action::Set(json_string(new)),
        });
    }
}

/// Longest call id `renamed` writes: Bedrock's `toolUseId` takes 1-64 characters
/// (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolUseBlock.html),
/// and a 64-character id renamed `id_2` was refused; OpenAI chat has refused ids over 40
/// ("'messages[2].tool_calls[0].id': string too long. Expected a string with maximum length
/// 40", https://github.com/Portkey-AI/gateway/issues/1062), so a 40-character id made unique
/// stays 40. (Ids are not cut to 40 otherwise: OpenAI-compatible servers take longer ones, and
/// every id of the recorded OpenAI requests is within 40.)
const MAX_CALL_ID: usize = 40;

/// Duplicate `id` renamed with suffix `k` (`id_2`), its end cut where the whole would pass
/// `MAX_CALL_ID` characters.
fn renamed(id: &str, k: usize) -> String {
    let suffix = format!("_{k}");
    let room = MAX_CALL_ID.saturating_sub(suffix.len());
    let base = match id.char_indices().nth(room) {
        Some((at, _)) => &id[..at],
        None => id,
    };
    format!("{base}{suffix}")
}

/// Call ids made ones `format`'s provider takes (`wire::CallIdRule`) and duplicates made unique
/// (`id_2`, `id_3`, ...), the result that follows each renamed call renamed with it; calls
/// without an id of their own (Gemini) are never renamed.
fn unique_ids(msgs: &[Message<'_>], format: WireFormat, plan: &mut RepairPlan) -> Ids {
    let responses = format == WireFormat::Responses;
    let rule = format.dialect().call_id;
    let mut seen: HashSet<String> = HashSet::new();
    // The turn each call is made in: a message, or in Responses the first item of the run of
    // model items that make one response (each `function_call` an item of its own: read as
    // turns apart, the first output took the last call of its id, and two calls of one id in
    // a response got each other's outputs).
    let mut turn_of = vec![0usize; msgs.len()];
    for i in 0..msgs.len() {
        let same = responses
            && i > 0
            && Turn::of(&msgs[i]) == Turn::Assistant
            && Turn::of(&msgs[i - 1]) == Turn::Assistant;
        turn_of[i] = if same { turn_of[i - 1] } else { i };
    }
    // The next suffix to try for each duplicated id: every smaller one is taken already (`seen`
    // only grows), so the search goes on from there, where from 2 each time it made a history
    // of n copies of one id cost n² (20,000 copies: 18 s).
    let mut next_suffix: HashMap<String, usize> = HashMap::new();
    // Each original id's calls not yet answered: (message, effective id), in order.
    let mut pending: HashMap<&str, VecDeque<(usize, String)>> = HashMap::new();
    let mut ids = Ids {
        calls: Vec::with_capacity(msgs.len()),
        results: Vec::with_capacity(msgs.len()),
    };
    // Chat pairs a result with the call of the assistant message right before it, so an id
    // reused in a later round, its earlier call answered, is no duplicate: OpenAI answered 37 of
    // the 149 recorded tau-bench dialogues that do so, and `id_2` broke ids of a fixed shape
    // (Mistral's nine characters). Renamed there: a second call of the id in one message, or
    // while an earlier call of it awaits its result.
    let per_round = format == WireFormat::Chat;
    // The ids of the pending last turn's calls stay theirs: the caller answers each next under
    // the id the model gave it. An earlier call of the same id is renamed instead (with the
    // result that follows it): renamed `id_2`, the pending call stayed unanswered, and the
    // result appended next answered nothing the history held (tau-bench task9-trial2 gives two
    // `think` calls one id, the second pending). (Chat takes an id again once its call is
    // answered: nothing to rename there.)
    let pending_start = pending_from(msgs, format);
    let reserved: HashSet<&str> = if per_round {
        HashSet::new()
    } else {
        msgs[pending_start..]
            .iter()
            .flat_map(|m| {
                calls_of(m)
                    .into_iter()
                    .filter(|c| !nameless(m, c.id, c.name) && rule.refuses(c.id).is_none())
                    .map(|c| c.id)
            })
            .collect()
    };
    let mut this_turn: HashSet<String> = HashSet::new();
    for (i, m) in msgs.iter().enumerate() {
        this_turn.clear();
        let mut calls = Vec::new();
        for c in calls_of(m) {
            let mut id = c.id.to_string();
            let free = nameless(m, c.id, c.name);
            if let Some(path) = call_path(m, c.at).filter(|_| !free) {
                let refused = rule.refuses(c.id);
                let base = match refused {
                    Some(_) => rule.accepted(c.id),
                    None => id.clone(),
                };
                let duplicate = (seen.contains(&base)
                    && (!per_round
                        || this_turn.contains(&base)
                        || pending.get(c.id).is_some_and(|q| !q.is_empty())))
                    || (i < pending_start && reserved.contains(base.as_str()));
                let new = if duplicate {
                    let k = next_suffix.entry(base.clone()).or_insert(2);
                    while seen.contains(&renamed(&base, *k)) {
                        *k += 1;
                    }
                    *k += 1;
                    Some(renamed(&base, *k - 1))
                } else {
                    refused.is_some().then_some(base)
                };
                if let Some(new) = new {
                    let change = match refused {
                        Some(why) => format!(
                            "message {i}: call id {:?} is refused by the provider ({why}): renamed {new:?}",
                            c.id
                        ),
                        None => {
                            format!("message {i}: duplicate call id {:?} renamed {new:?}", c.id)
                        }
                    };
                    plan.rename(i, path, &new, change);
                    id = new;
                }
            }
            if !free {
                seen.insert(id.clone());
                this_turn.insert(id.clone());
                pending
                    .entry(c.id)
                    .or_default()
                    .push_back((turn_of[i], id.clone()));
            }
            calls.push((id, c.name.to_string()));
        }
        let mut results = Vec::new();
        for (part, rid) in results_of(m) {
            let mut id = rid.to_string();
            if let Some(e) = pending.get_mut(rid).and_then(answered_call) {
                if e != rid {
                    if let Some(path) = result_path(m, part) {
                        let change = format!(
                            "message {i}: result of call id {rid:?} renamed {e:?} with its call"
                        );
                        plan.rename(i, path, &e, change);
                        id = e;
                    }
                }
            }
            results.push((part, id));
        }
        ids.calls.push(calls);
        ids.results.push(results);
    }
    ids
}

/// The call a result of a reused id answers, taken from `q` (that id's calls not yet answered):
/// the first of those the latest message made. A result follows the turn that made its call, so
/// an earlier call of the same id still unanswered was interrupted (it gets a stand-in), and the
/// result is not taken for its answer and then dropped as an orphan of the later call.
fn answered_call(q: &mut VecDeque<(usize, String)>) -> Option<String> {
    let latest = q.back()?.0;
    let at = q.iter().position(|(m, _)| *m == latest)?;
    q.remove(at).map(|(_, id)| id)
}

/// Anthropic, Bedrock, Gemini: the results of a message's calls sit in the next message, each
/// once. Orphans are dropped (a note stands in for a message left empty); missing results get
/// stand-ins, in the next user message or a new one.
fn repair_strict(msgs: &[Message<'_>], ids: &Ids, plan: &mut RepairPlan) {
    let n = msgs.len();
    // Server calls answered by a later assistant message, or running still at the end (a
    // programmatic tool-calling run): neither is missing a result.
    let spans = ServerSpans::of(msgs);
    let joined: Vec<bool> = (0..n).map(|k| continues_results(msgs, ids, k)).collect();
    for (i, m) in msgs.iter().enumerate() {
        if joined[i] {
            // Its results answer the calls of message i - 2 that message i - 1 left open; its
            // blocks join message i - 1 (`Action::Append`), and it goes.
            let open = left_open(ids, i - 2, Some(i - 1));
            drop_orphans(msgs, i, ids, &spans, open, plan);
            plan.edits.push(RepairEdit {
                index: i - 1,
                path: vec![Step::Key(list_key(m.wire))],
                action: Action::Append { from: i },
            });
            plan.changes.push(format!(
                "message {i}: results of message {}'s calls in a second user turn: joined to message {}",
                i - 2,
                i - 1
            ));
            continue;
        }
        let open = if i > 0 && Turn::of(&msgs[i - 1]) == Turn::Assistant {
            left_open(ids, i - 1, None)
        } else {
            Vec::new()
        };
        let left = drop_orphans(msgs, i, ids, &spans, open, plan);
        if left != Left::Gone {
            plan.messages.push(Slot::Keep(i));
        }
        if left != Left::Kept {
            continue;
        }
        // This message's calls must be answered by the next one.
        if ids.calls[i].is_empty() || i + 1 == n {
            continue; // none, or the pending last turn
        }
        let joined_next = joined.get(i + 2).copied().unwrap_or(false);
        // (A second results turn joined after this one counts: its results follow this one's
        // blocks.)
        let joined_parts = if joined_next {
            msgs[i + 2].parts()
        } else {
            &[]
        };
        if text_before_results(&msgs[i + 1])
            || (joined_next
                && msgs[i + 1].wire == Format::Anthropic
                && other_before_result(msgs[i + 1].parts().iter().chain(joined_parts)))
        {
            plan.edits.push(RepairEdit {
                index: i + 1,
                path: vec![Step::Key(list_key(msgs[i + 1].wire))],
                action: Action::ResultsFirst,
            });
            plan.changes.push(format!(
                "message {}: blocks before the tool results: moved after them (Anthropic wants a turn's results first)",
                i + 1
            ));
        }
        let mut answered: Vec<&str> = ids.results[i + 1]
            .iter()
            .chain(if joined_next {
                &ids.results[i + 2][..]
            } else {
                &[]
            })
            .map(|(_, id)| id.as_str())
            .collect();
        let mut missing: Vec<(&str, &str)> = Vec::new();
        for (id, name) in &ids.calls[i] {
            if spans.spans(i, id) {
                continue;
            }
            match answered.iter().position(|x| x == id) {
                Some(p) => {
                    answered.remove(p);
                }
                None => missing.push((id, name)),
            }
        }
        // A server-run tool's call (Anthropic `server_tool_use`, `mcp_tool_use`: ids
        // `srvtoolu_...`, `mcptoolu_...`) is answered in its own turn by a result block of its
        // own kind, which no stand-in can honestly fill (search results, a run's output): the
        // call goes. A client `tool_result` answering it was refused by the API.
        let mut server: Vec<usize> = Vec::new();
        missing.retain(|&(id, _)| {
            if !is_server_call_id(id) {
                return true;
            }
            if let Some(k) = m
                .parts()
                .iter()
                .position(|p| matches!(p, Part::ToolUse(c) if c.id == id))
            {
                server.push(k);
                plan.changes.push(format!(
                    "message {i}: server tool call {id:?} had no result in its turn, and no stand-in can be written for it: dropped"
                ));
            }
            false
        });
        plan.remove_parts(i, m.wire, server);
        if missing.is_empty() {
            continue;
        }
        let blocks: Vec<String> = missing
            .iter()
            .map(|(id, name)| {
                plan.interrupted(i, id);
                block(m.wire, id, name)
            })
            .collect();
        // Gemini calls without an id pair with their responses by name and order: the
        // responses there answer the first calls of their name, so a stand-in goes after them
        // (put first, it took the first `read` call's output for the second's).
        let first = if missing.iter().any(|(id, name)| nameless(m, id, name)) {
            count_parts(&msgs[i + 1]) + joined_parts.len()
        } else {
            0
        };
        answer_in_next(&msgs[i + 1], i + 1, m.wire, blocks, first, plan);
    }
}

/// Whether an Anthropic user turn holds a block before one of its `tool_result` blocks. The API
/// refuses it: "tool_use ids were found without tool_result blocks immediately after" (the
/// results must come first in the content array, any text after them: Anthropic's tool-use
/// guide, "Handle tool calls"). The recorded Anthropic turns with results send them first, text
/// after them in 9.
pub(crate) fn text_before_results(m: &Message<'_>) -> bool {
    m.wire == Format::Anthropic
        && Turn::of(m) == Turn::User
        && other_before_result(m.parts().iter())
}

/// Whether a block that is no tool result comes before a tool result in `parts`.
fn other_before_result<'p, 'a: 'p>(parts: impl Iterator<Item = &'p Part<'a>>) -> bool {
    let mut other = false;
    for p in parts {
        match p {
            Part::ToolResult { .. } if other => return true,
            Part::ToolResult { .. } => {}
            _ => other = true,
        }
    }
    false
}

/// What is left of a message once its orphan results are dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Left {
    /// The message, less the orphans.
    Kept,
    /// A note in place of a message that held only orphans.
    Noted,
    /// Nothing: the message was an orphan result.
    Gone,
}

/// The call ids of message `calls` (one entry a call) that the results of message `answered`
/// leave open, if any is given.
fn left_open(ids: &Ids, calls: usize, answered: Option<usize>) -> Vec<&str> {
    let mut open: Vec<&str> = ids.calls[calls].iter().map(|(id, _)| id.as_str()).collect();
    for (_, id) in answered.map_or(&[][..], |k| &ids.results[k][..]) {
        if let Some(p) = open.iter().position(|x| x == id) {
            open.remove(p);
        }
    }
    open
}

/// Whether message `k` is a second user turn holding results of message `k - 2`'s calls that
/// message `k - 1`, a results turn of its own, left unanswered (a harness that wrote each
/// result as it came). Bedrock refuses two user turns in a row, and read as orphans the real
/// results went and the calls got "interrupted" stand-ins: its blocks join message `k - 1`.
fn continues_results(msgs: &[Message<'_>], ids: &Ids, k: usize) -> bool {
    if k < 2 || ids.calls[k - 2].is_empty() || ids.results[k].is_empty() {
        return false;
    }
    let (before, first, second) = (&msgs[k - 2], &msgs[k - 1], &msgs[k]);
    let lists = matches!(first.content, Content::Parts(_))
        && matches!(second.content, Content::Parts(_))
        && list_key(first.wire) == list_key(second.wire);
    if Turn::of(before) != Turn::Assistant
        || Turn::of(first) != Turn::User
        || Turn::of(second) != Turn::User
        || !lists
    {
        return false;
    }
    let open = left_open(ids, k - 2, Some(k - 1));
    let answers_first = open.len() < ids.calls[k - 2].len();
    answers_first
        && ids.results[k]
            .iter()
            .any(|(_, id)| open.contains(&id.as_str()))
}

/// Drop the results of message `i` that answer none of the calls `open` (each answered once).
fn drop_orphans(
    msgs: &[Message<'_>],
    i: usize,
    ids: &Ids,
    spans: &ServerSpans<'_>,
    mut open: Vec<&str>,
    plan: &mut RepairPlan,
) -> Left {
    let m = &msgs[i];
    let mut drops: Vec<usize> = Vec::new();
    let mut drop_whole = false;
    for (part, id) in &ids.results[i] {
        if spans.answers(i, id) {
            continue;
        }
        match open.iter().position(|x| x == id) {
            Some(p) => {
                open.remove(p);
            }
            None => {
                plan.orphan(i, id);
                match part {
                    Some(k) => drops.push(*k),
                    None => drop_whole = true,
                }
            }
        }
    }
    if drop_whole {
        return Left::Gone;
    }
    if !drops.is_empty() && drops.len() == count_parts(m) {
        // Nothing of the message would remain: a note in its place keeps the turns alternating
        // (a strict format rejects two assistant turns in a row).
        plan.edits.push(RepairEdit {
            index: i,
            path: vec![Step::Key(list_key(m.wire))],
            action: Action::Set(format!("[{}]", text_block(m.wire, DROPPED))),
        });
        plan.noted.push(i);
        return Left::Noted;
    }
    plan.remove_parts(i, m.wire, drops);
    Left::Kept
}

/// Stand-in result `blocks` go into `next` (caller message `index`) from position `first` when
/// it is a user message with content (0, or past its results for calls paired by order: a list
/// insert past the end appends), else into a new user message before it.
fn answer_in_next(
    next: &Message<'_>,
    index: usize,
    wire: Format,
    blocks: Vec<String>,
    first: usize,
    plan: &mut RepairPlan,
) {
    let path = vec![Step::Key(list_key(next.wire))];
    match &next.content {
        Content::Parts(_) if Turn::of(next) == Turn::User => {
            for (position, value) in (first..).zip(blocks) {
                plan.edits.push(RepairEdit {
                    index,
                    path: path.clone(),
                    action: Action::Insert { position, value },
                });
            }
        }
        Content::Text(t) if Turn::of(next) == Turn::User => {
            let mut list = blocks;
            // Text the format refuses as a block (Anthropic's `""`, `"   "`) is not kept beside
            // the results: a second repair would remove it.
            if !crate::wire::dialect_of(wire).is_some_and(|d| d.blank_text.refuses(t)) {
                list.push(text_block(wire, t));
            }
            plan.edits.push(RepairEdit {
                index,
                path,
                action: Action::Set(format!("[{}]", list.join(","))),
            });
        }
        _ => plan
            .messages
            .push(Slot::New(results_message(wire, &blocks))),
    }
}

/// OpenAI chat and Responses: a result is a message (item) of its own after its call and
/// before the next message that speaks; orphans are dropped, stand-ins are added before the
/// first message that speaks while calls are open. Calls still open at the end are the pending
/// last turn: left as they are.
fn repair_sequential(
    msgs: &[Message<'_>],
    ids: &Ids,
    responses: bool,
    held_upstream: bool,
    plan: &mut RepairPlan,
) {
    // A programmatic tool-calling run carried by LangChain messages (Anthropic blocks in an
    // `AIMessage`): its server call is answered by a later assistant message, never awaited.
    let spans = ServerSpans::of(msgs);
    // The calls of a history held upstream: each id a result answers that no call here makes.
    let mut upstream: Vec<&str> = Vec::new();
    if held_upstream {
        let here: HashSet<&str> = ids
            .calls
            .iter()
            .flatten()
            .map(|(id, _)| id.as_str())
            .collect();
        upstream = ids
            .results
            .iter()
            .flatten()
            .map(|(_, id)| id.as_str())
            .filter(|id| !here.contains(id))
            .collect();
        upstream.sort_unstable();
        upstream.dedup();
    }
    let mut open: Vec<(String, usize)> = Vec::new();
    let mut after_result = false;
    // Chat: system (developer) messages met while calls wait for their results, and where the
    // plan stood then. OpenAI and the strict compatible servers (DeepSeek) want a call's `tool`
    // messages right after it ("An assistant message with 'tool_calls' must be followed by tool
    // messages responding to each 'tool_call_id'"): such a note goes after the results.
    // A user turn or an assistant's words met there go after the results as well when a result
    // of a waiting call comes later: dropped as an orphan for an "interrupted" stand-in, the
    // real output was lost (a user who typed while the tool ran).
    let mut deferred: Vec<(usize, usize)> = Vec::new();
    let results = LaterResults::of(msgs, ids);
    let later = (!responses).then_some(&results);
    // Responses: each call id's output items, ascending, and those moved up to their call's
    // response. An output sent after a later message of the model (DeepSeek refuses it: "No
    // tool output found for tool call call-a", the recorded exchange
    // test_deepseek_responses_rejects_interleaved_function_calls) goes up to where its call
    // stops being awaited; a stand-in there dropped the real output as an answer given twice.
    let outputs = responses.then_some(&results.at);
    let mut moved_up: HashSet<usize> = HashSet::new();
    for (i, m) in msgs.iter().enumerate() {
        if moved_up.contains(&i) {
            continue;
        }
        let turn = Turn::of(m);
        let waits = match &later {
            Some(l) if !open.is_empty() && ids.results[i].is_empty() => {
                turn == Turn::System
                    || (matches!(turn, Turn::User | Turn::Assistant)
                        && ids.calls[i].is_empty()
                        && l.answers_after(i, open.iter().map(|(id, _)| id.as_str())))
            }
            _ => false,
        };
        if waits {
            deferred.push((i, plan.messages.len()));
            continue;
        }
        if result_message(m, ids, i) {
            // A chat `tool` message or a Responses output item: one result.
            let id = &ids.results[i][0].1;
            match open.iter().position(|(x, _)| x == id) {
                Some(p) => {
                    open.remove(p);
                    plan.messages.push(Slot::Keep(i));
                }
                None => match upstream.iter().position(|x| x == id) {
                    Some(p) => {
                        upstream.remove(p);
                        plan.messages.push(Slot::Keep(i));
                    }
                    None => plan.orphan(i, id),
                },
            }
            if open.is_empty() {
                plan.put_back(&mut deferred);
            }
            after_result = true;
            continue;
        }
        // A Responses model item after a result opens the model's next response: a call of an
        // earlier response still open was sent without its output and is no longer awaited
        // (the API refuses such a request: "No tool output found for function call").
        let next_response = responses && after_result && turn == Turn::Assistant;
        after_result = false;
        let speaks = match turn {
            Turn::User => true,
            Turn::Assistant => {
                !responses
                    || matches!(&m.content, Content::Text(_))
                    || matches!(&m.content, Content::Parts(ps) if ps.iter().any(|p| matches!(p, Part::Text(_))))
            }
            _ => false,
        };
        // A Responses assistant item that makes calls of its own does not close earlier ones.
        let closes = !responses || ids.calls[i].is_empty();
        if !open.is_empty() && (speaks && closes || next_response) {
            for (id, at) in std::mem::take(&mut open) {
                let output = outputs.and_then(|o| o.get(id.as_str())).and_then(|js| {
                    js.iter()
                        .copied()
                        .find(|&j| j > i && !moved_up.contains(&j))
                });
                if let Some(j) = output {
                    moved_up.insert(j);
                    plan.messages.push(Slot::Keep(j));
                    plan.changes.push(format!(
                        "message {j}: output of call {id:?} sent after a later message of the model (message {i}): moved up before it"
                    ));
                    continue;
                }
                let json = match (responses, msgs[at].item) {
                    (false, Some(openai_chat::LEGACY_FUNCTION_CALL)) => {
                        openai_chat::legacy_function_result_json(&id, INTERRUPTED)
                    }
                    // An Ollama call without an id is answered by its tool's name.
                    (false, _)
                        if msgs[at]
                            .tool_calls
                            .iter()
                            .any(|c| nameless(&msgs[at], c.id, c.name) && c.id == id) =>
                    {
                        openai_chat::named_tool_result_json(&id, INTERRUPTED)
                    }
                    (false, _) => openai_chat::tool_result_json(&id, INTERRUPTED),
                    (true, Some("custom_tool_call")) => {
                        openai_responses::custom_tool_result_json(&id, INTERRUPTED)
                    }
                    (true, Some("function_call") | None) => {
                        openai_responses::tool_result_json(&id, INTERRUPTED)
                    }
                    (true, Some(kind)) => {
                        // A client-run tool's call item (`wire::responses_tool_items`): its
                        // output has a shape of its own that a stand-in cannot honestly fill
                        // (a screenshot, an exit status), so the call goes instead.
                        plan.messages
                            .retain(|s| !matches!(s, Slot::Keep(k) if *k == at));
                        plan.changes.push(format!(
                            "message {at}: {kind} {id:?} had no output, and no stand-in can be written for it: dropped"
                        ));
                        continue;
                    }
                };
                plan.interrupted(at, &id);
                plan.messages.push(Slot::New(json));
            }
        }
        plan.put_back(&mut deferred);
        plan.messages.push(Slot::Keep(i));
        open.extend(
            ids.calls[i]
                .iter()
                .filter(|(id, _)| !spans.spans(i, id))
                .map(|(id, _)| (id.clone(), i)),
        );
    }
    plan.put_back(&mut deferred);
}

/// Whether message `i` is a result of its own (a chat `tool` message, a Responses output item).
fn result_message(m: &Message<'_>, ids: &Ids, i: usize) -> bool {
    !ids.results[i].is_empty() && !matches!(Turn::of(m), Turn::User | Turn::Assistant)
}

/// Where the results of a chat history sit, to tell whether a waiting call is answered later in
/// its round: before the next assistant message that makes calls.
struct LaterResults<'i> {
    /// Each result id's message indices, ascending.
    at: HashMap<&'i str, Vec<usize>>,
    /// For each index, the first message at or after it that makes calls (`len` if none).
    next_calls: Vec<usize>,
}

impl<'i> LaterResults<'i> {
    fn of(msgs: &[Message<'_>], ids: &'i Ids) -> Self {
        let mut at: HashMap<&str, Vec<usize>> = HashMap::new();
        for (k, results) in ids.results.iter().enumerate() {
            if result_message(&msgs[k], ids, k) {
                for (_, id) in results {
                    at.entry(id.as_str()).or_default().push(k);
                }
            }
        }
        let mut next_calls = vec![msgs.len(); msgs.len() + 1];
        for k in (0..msgs.len()).rev() {
            next_calls[k] = if ids.calls[k].is_empty() {
                next_calls[k + 1]
            } else {
                k
            };
        }
        LaterResults { at, next_calls }
    }

    /// Whether a result of one of `open` comes after message `i`, before the next calls.
    fn answers_after<'o>(&self, i: usize, mut open: impl Iterator<Item = &'o str>) -> bool {
        let end = self.next_calls[i + 1];
        open.any(|id| {
            self.at.get(id).is_some_and(|ks| {
                let p = ks.partition_point(|&k| k <= i);
                ks.get(p).is_some_and(|&k| k < end)
            })
        })
    }
}

/// Where the pending last turn of `msgs` begins: its calls are still awaiting their results,
/// which repair leaves as they are and a check of a history about to be completed does not
/// hold against it. Anthropic, Bedrock and Gemini: the last message's calls (their results
/// would be the next message); OpenAI chat and Responses: the calls after the last message
/// that speaks (a user turn, an assistant text without calls of its own), as
/// `repair_sequential` closes them; in Responses, of the last response only (its model items
/// after the last result). `msgs.len()` when there is none.
pub fn pending_from(msgs: &[Message<'_>], format: WireFormat) -> usize {
    let n = msgs.len();
    if format.strict_turns() {
        return match msgs.last() {
            Some(m) if !calls_of(m).is_empty() => n - 1,
            _ => n,
        };
    }
    let responses = format == WireFormat::Responses;
    let speaks = |m: &Message<'_>| match Turn::of(m) {
        Turn::User => m.result_ids().next().is_none(),
        Turn::Assistant => {
            calls_of(m).is_empty()
                && !m.is_reasoning_item()
                && (!responses
                    || matches!(&m.content, Content::Text(_))
                    || m.parts().iter().any(|p| matches!(p, Part::Text(_))))
        }
        _ => false,
    };
    let mut start = msgs.iter().rposition(speaks).map_or(0, |i| i + 1);
    if responses {
        // The last response only: a model item after a result opens the next one, and the
        // calls before it are no longer awaited (`repair_sequential`).
        let result = |m: &Message<'_>| {
            m.result_ids().next().is_some() && !matches!(Turn::of(m), Turn::User | Turn::Assistant)
        };
        if let Some(k) = (start..n.saturating_sub(1))
            .rev()
            .find(|&k| result(&msgs[k]) && Turn::of(&msgs[k + 1]) == Turn::Assistant)
        {
            start = k + 1;
        }
    }
    if msgs[start..].iter().any(|m| !calls_of(m).is_empty()) {
        start
    } else {
        n
    }
}

/// A user message holding result blocks, in a strict format.
fn results_message(wire: Format, blocks: &[String]) -> String {
    format!(
        "{{\"role\":\"user\",\"{}\":[{}]}}",
        list_key(wire),
        blocks.join(",")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::read_history;
    use serde_json::{json, Value};

    fn plan_of(v: &Value, format: WireFormat) -> RepairPlan {
        let msgs = read_history(&v).expect("readable");
        repair(&msgs, format)
    }

    #[test]
    fn a_call_id_used_twice_in_a_turn_is_named_by_the_check_where_the_format_wants_each_once() {
        let use_ = |id: &str| json!({"type": "tool_use", "id": id, "name": "f", "input": {}});
        let result = |id: &str| json!({"type": "tool_result", "tool_use_id": id, "content": "ok"});
        let h = json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [use_("t1"), use_("t1")]},
            {"role": "user", "content": [result("t1"), result("t1")]}
        ]);
        let msgs = read_history(&&h).expect("readable");
        let est = crate::estimate::Estimator::new(crate::provider::Provider::Anthropic, "");
        let v = crate::compaction::verify(&msgs, WireFormat::Anthropic, &est, 0, None, &[]);
        let kinds: Vec<&str> = v.failures.iter().map(|f| f.kind()).collect();
        assert_eq!(kinds, ["duplicate_call_id"], "{:?}", v.failures);
        // Repair renames the second call and its result.
        let p = plan_of(&h, WireFormat::Anthropic);
        assert_eq!(p.changes.len(), 2, "{:?}", p.changes);
    }

    /// The sets of `plan` as (message, new id), in order.
    fn id_sets(p: &RepairPlan) -> Vec<(usize, String)> {
        p.edits
            .iter()
            .filter_map(|e| match &e.action {
                Action::Set(v) => Some((e.index, serde_json::from_str(v).expect("a JSON string"))),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn call_ids_a_provider_refuses_are_named_and_renamed_with_their_results() {
        // Kimi's ids (`functions.get_weather:0`) carried into an Anthropic history: the API
        // refuses them ("tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"). Two
        // that come out alike (`a.b`, `a:b`) stay two.
        let use_ = |id: &str| json!({"type": "tool_use", "id": id, "name": "f", "input": {}});
        let result = |id: &str| json!({"type": "tool_result", "tool_use_id": id, "content": id});
        let h = json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [use_("functions.get_weather:0"), use_("a.b"), use_("a:b")]},
            {"role": "user", "content": [result("a:b"), result("functions.get_weather:0"), result("a.b")]},
            {"role": "assistant", "content": [use_("toolu_ok")]},
            {"role": "user", "content": [result("toolu_ok")]}
        ]);
        let msgs = read_history(&&h).expect("readable");
        let failures = crate::compaction::check(&msgs, WireFormat::Anthropic, &[]);
        let named: Vec<(&str, Option<usize>)> =
            failures.iter().map(|f| (f.kind(), f.index())).collect();
        assert_eq!(named, [("invalid_call_id", Some(1)); 3], "{failures:?}");
        assert!(failures[0].describe().contains("functions.get_weather:0"));

        let p = plan_of(&h, WireFormat::Anthropic);
        assert_eq!(
            id_sets(&p),
            [
                (1, "functions_get_weather_0".to_string()),
                (1, "a_b".to_string()),
                (1, "a_b_2".to_string()),
                (2, "a_b_2".to_string()),
                (2, "functions_get_weather_0".to_string()),
                (2, "a_b".to_string()),
            ],
            "{:?}",
            p.changes
        );
        assert_eq!(p.messages, (0..5).map(Slot::Keep).collect::<Vec<_>>());
        assert!(
            p.changes[0].contains("refused by the provider"),
            "{:?}",
            p.changes
        );
        // OpenAI-compatible chat servers take any id: nothing is named or renamed there.
        let chat = json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "functions.get_weather:0", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "functions.get_weather:0", "content": "sunny"}
        ]);
        let msgs = read_history(&&chat).expect("readable");
        assert!(crate::compaction::check(&msgs, WireFormat::Chat, &[]).is_empty());
        assert!(plan_of(&chat, WireFormat::Chat).edits.is_empty());
    }

    #[test]
    fn bedrock_ids_empty_or_over_64_characters_and_long_responses_call_ids_are_renamed() {
        // Bedrock's `toolUseId`: 1-64 characters of `[a-zA-Z0-9_-]`; Responses' `call_id`: at
        // most 64 characters, any of them.
        let long = format!(
            "portkey-{}",
            "6aa6db90-1b84-4155-9f32-f658c97d6b1b".repeat(2)
        );
        let h = json!([
            {"role": "user", "content": [{"text": "go"}]},
            {"role": "assistant", "content": [
                {"toolUse": {"toolUseId": "", "name": "a", "input": {}}},
                {"toolUse": {"toolUseId": long, "name": "b", "input": {}}}]},
            {"role": "user", "content": [
                {"toolResult": {"toolUseId": "", "content": [{"text": "1"}]}},
                {"toolResult": {"toolUseId": long, "content": [{"text": "2"}]}}]}
        ]);
        let msgs = read_history(&&h).expect("readable");
        let failures = crate::compaction::check(&msgs, WireFormat::Bedrock, &[]);
        assert_eq!(failures.len(), 2, "{failures:?}");
        let p = plan_of(&h, WireFormat::Bedrock);
        let sets = id_sets(&p);
        assert_eq!(sets.len(), 4, "{:?}", p.changes);
        assert_eq!(sets[0].1, "call");
        assert_eq!(sets[1].1, long[..64]);
        assert_eq!(
            (sets[2].1.as_str(), sets[3].1.as_str()),
            ("call", &long[..64])
        );

        let call_id = format!("resp_{}:call_0", "y".repeat(70));
        let r = json!([
            {"role": "user", "content": "go"},
            {"type": "function_call", "call_id": call_id, "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": call_id, "output": "ok"}
        ]);
        let p = plan_of(&r, WireFormat::Responses);
        let sets = id_sets(&p);
        assert_eq!(sets.len(), 2, "{:?}", p.changes);
        assert!(sets
            .iter()
            .all(|(_, id)| id.chars().count() == 64 && id.ends_with('y')));
        // Bedrock Mantle's own 64-character `resp_...:call_0` ids go back as they are.
        let own = format!("resp_{}:call_0", "y".repeat(52));
        let r = json!([
            {"role": "user", "content": "go"},
            {"type": "function_call", "call_id": own, "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": own, "output": "ok"}
        ]);
        assert!(plan_of(&r, WireFormat::Responses).edits.is_empty());
    }

    #[test]
    fn an_empty_turn_goes_and_its_neighbours_of_one_role_are_joined() {
        // A Gemini candidate that came back without parts, appended as it came: Gemini refuses
        // "contents.parts must not be empty".
        let h = json!([
            {"role": "user", "parts": [{"text": "hi"}]},
            {"role": "model", "parts": []},
            {"role": "user", "parts": [{"text": "again"}]},
            {"role": "model", "parts": [{"text": "ok"}]},
            {"role": "user", "parts": [{"text": "thanks"}]},
            {"role": "model", "parts": []}
        ]);
        let msgs = read_history(&&h).expect("readable");
        let kinds: Vec<(&str, Option<usize>)> =
            crate::compaction::check(&msgs, WireFormat::Gemini, &[])
                .iter()
                .map(|f| (f.kind(), f.index()))
                .collect();
        assert_eq!(
            kinds,
            [("empty_message", Some(1)), ("empty_message", Some(5))]
        );
        let p = plan_of(&h, WireFormat::Gemini);
        // The final model turn stays: a turn still to be written.
        assert_eq!(
            p.messages,
            vec![Slot::Keep(0), Slot::Keep(3), Slot::Keep(4), Slot::Keep(5)]
        );
        assert_eq!(
            p.edits,
            vec![RepairEdit {
                index: 0,
                path: vec![Step::Key("parts")],
                action: Action::Append { from: 2 }
            }]
        );
        assert_eq!(p.changes.len(), 2, "{:?}", p.changes);

        // An empty user turn after a call takes the stand-in result and stays.
        let h = json!([
            {"role": "user", "content": [{"text": "go"}]},
            {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "a", "input": {}}}]},
            {"role": "user", "content": []},
            {"role": "assistant", "content": [{"text": "done"}]}
        ]);
        let p = plan_of(&h, WireFormat::Bedrock);
        assert_eq!(p.messages, (0..4).map(Slot::Keep).collect::<Vec<_>>());
        assert!(
            p.changes.iter().all(|c| !c.contains("dropped")),
            "{:?}",
            p.changes
        );
    }

    #[test]
    fn a_blank_string_turn_after_a_call_takes_the_stand_in_whole_and_stays() {
        // Anthropic refuses `""` and `"   "` as a turn's content; the stand-in result replaces
        // the string (a set of the whole content), and dropping the turn as empty dropped the
        // stand-in with it: the call was left unanswered.
        for blank in ["", "   "] {
            let h = json!([
                {"role": "user", "content": "Find a flight."},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "search", "input": {}}]},
                {"role": "user", "content": blank}
            ]);
            let p = plan_of(&h, WireFormat::Anthropic);
            assert_eq!(p.messages, (0..3).map(Slot::Keep).collect::<Vec<_>>());
            assert_eq!(p.changes.len(), 1, "{:?}", p.changes);
            // The stand-in alone: the blank text the API refuses is not kept beside it.
            let [RepairEdit {
                index: 2,
                action: Action::Set(v),
                ..
            }] = &p.edits[..]
            else {
                panic!("{:?}", p.edits)
            };
            let list: Value = serde_json::from_str(v).expect("JSON");
            assert_eq!(list.as_array().map(Vec::len), Some(1), "{v}");
            assert_eq!(list[0]["type"], "tool_result");
        }
        // Text the format takes stays after the stand-in.
        let h = json!([
            {"role": "user", "content": "Find a flight."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "search", "input": {}}]},
            {"role": "user", "content": "never mind"}
        ]);
        let p = plan_of(&h, WireFormat::Anthropic);
        assert!(
            matches!(&p.edits[..], [RepairEdit { action: Action::Set(v), .. }] if v.contains("never mind"))
        );
    }

    #[test]
    fn a_turn_the_repair_writes_into_is_joined_with_the_user_s_next_turn_on_bedrock() {
        // Read as they came, the note standing for a turn of orphan results and the turn the
        // stand-in goes into were kept apart from the user's next turn: Bedrock refuses two
        // user turns in a row, and a second repair joined them.
        let text = |t: &str| json!({"role": "user", "content": [{"text": t}]});
        let orphans = json!([
            text("Upgrade."),
            {"role": "assistant", "content": [{"text": "Which card?"}]},
            {"role": "user", "content": [{"toolResult": {"toolUseId": "t9", "content": [{"text": "Error"}]}}]},
            text("Card 9725.")
        ]);
        let stand_in = json!([
            text("Upgrade."),
            {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "card", "input": {}}}]},
            text("(lost)"),
            text("Card 9725.")
        ]);
        for h in [orphans, stand_in] {
            let p = plan_of(&h, WireFormat::Bedrock);
            assert_eq!(p.messages, (0..3).map(Slot::Keep).collect::<Vec<_>>());
            assert!(
                p.edits.contains(&RepairEdit {
                    index: 2,
                    path: vec![Step::Key("content")],
                    action: Action::Append { from: 3 }
                }),
                "{:?}",
                p.edits
            );
        }
    }

    #[test]
    fn blank_text_is_named_by_the_check_and_removed_by_the_repair() {
        // An empty tool output or model answer sent back as it came: Anthropic refuses a
        // `content: ""` but in the final assistant turn, and a whitespace-only text block.
        let h = json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": ""},
            {"role": "user", "content": "again"},
            {"role": "assistant", "content": [{"type": "text", "text": " \n"}, {"type": "text", "text": "ok"}]},
            {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
            {"role": "assistant", "content": ""}
        ]);
        let failures = |h: &Value, f: WireFormat| -> Vec<(&'static str, Option<usize>)> {
            let msgs = read_history(&h).expect("readable");
            crate::compaction::check(&msgs, f, &[])
                .iter()
                .map(|f| (f.kind(), f.index()))
                .collect()
        };
        assert_eq!(
            failures(&h, WireFormat::Anthropic),
            [("empty_message", Some(1)), ("blank_text", Some(3))]
        );
        let p = plan_of(&h, WireFormat::Anthropic);
        // The empty turn goes (its neighbours are strings, which Anthropic joins itself), the
        // blank block of message 3 too; the final assistant turn stays, one still to be written.
        assert_eq!(
            p.messages,
            [0, 2, 3, 4, 5].map(Slot::Keep).to_vec(),
            "{:?}",
            p.changes
        );
        assert_eq!(
            p.edits,
            vec![RepairEdit {
                index: 3,
                path: vec![Step::Key("content"), Step::Index(0)],
                action: Action::Remove
            }]
        );

        // Bedrock refuses empty text ("... is blank"), whitespace it took; Gemini took both.
        let b = json!([
            {"role": "user", "content": [{"text": "hi"}]},
            {"role": "assistant", "content": [{"text": ""}]},
            {"role": "user", "content": [{"text": "again"}]},
            {"role": "assistant", "content": [{"text": ""}, {"text": " "}, {"text": "ok"}]}
        ]);
        assert_eq!(
            failures(&b, WireFormat::Bedrock),
            [("empty_message", Some(1)), ("blank_text", Some(3))]
        );
        let p = plan_of(&b, WireFormat::Bedrock);
        assert_eq!(p.messages, [0, 3].map(Slot::Keep).to_vec());
        assert!(p.edits.contains(&RepairEdit {
            index: 0,
            path: vec![Step::Key("content")],
            action: Action::Append { from: 2 }
        }));
        assert!(p.edits.contains(&RepairEdit {
            index: 3,
            path: vec![Step::Key("content"), Step::Index(0)],
            action: Action::Remove
        }));
        let g = json!([
            {"role": "user", "parts": [{"text": ""}]},
            {"role": "model", "parts": [{"text": "hello"}]}
        ]);
        assert!(failures(&g, WireFormat::Gemini).is_empty());
        assert!(plan_of(&g, WireFormat::Gemini).changes.is_empty());
    }

    #[test]
    fn an_empty_tool_calls_list_is_named_and_removed() {
        // An answer appended as a compatible server or an SDK returned it: OpenAI refuses
        // "tool_calls: empty array".
        let h = json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello", "tool_calls": []},
            {"role": "user", "content": "bye"}
        ]);
        let msgs = read_history(&&h).expect("readable");
        let kinds: Vec<(&str, Option<usize>)> =
            crate::compaction::check(&msgs, WireFormat::Chat, &[])
                .iter()
                .map(|f| (f.kind(), f.index()))
                .collect();
        assert_eq!(kinds, [("empty_tool_calls", Some(1))]);
        let p = plan_of(&h, WireFormat::Chat);
        assert_eq!(
            p.edits,
            vec![RepairEdit {
                index: 1,
                path: vec![Step::Key("tool_calls")],
                action: Action::Remove
            }]
        );
        assert_eq!(p.messages, (0..3).map(Slot::Keep).collect::<Vec<_>>());
    }

    #[test]
    fn a_prefill_ending_in_whitespace_is_named_and_trimmed() {
        // "messages: final assistant content cannot end with trailing whitespace".
        let h = json!([
            {"role": "user", "content": "title?"},
            {"role": "assistant", "content": [{"type": "text", "text": "title: "}, {"type": "text", "text": " "}]}
        ]);
        let msgs = read_history(&&h).expect("readable");
        let kinds: Vec<&str> = crate::compaction::check(&msgs, WireFormat::Anthropic, &[])
            .iter()
            .map(|f| f.kind())
            .collect();
        assert_eq!(kinds, ["blank_text", "trailing_whitespace"]);
        let p = plan_of(&h, WireFormat::Anthropic);
        assert!(p.edits.contains(&RepairEdit {
            index: 1,
            path: vec![Step::Key("content"), Step::Index(0), Step::Key("text")],
            action: Action::Set("\"title:\"".to_string())
        }));
        let s = json!([
            {"role": "user", "content": "title?"},
            {"role": "assistant", "content": "title:\n"}
        ]);
        let p = plan_of(&s, WireFormat::Anthropic);
        assert_eq!(
            p.edits,
            vec![RepairEdit {
                index: 1,
                path: vec![Step::Key("content")],
                action: Action::Set("\"title:\"".to_string())
            }]
        );
        // Not the final turn, or a format that takes it: left.
        assert!(plan_of(&s, WireFormat::Chat).changes.is_empty());
        let earlier = json!([
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b "},
            {"role": "user", "content": "c"}
        ]);
        assert!(plan_of(&earlier, WireFormat::Anthropic).changes.is_empty());
    }

    #[test]
    fn removals_from_one_list_run_from_its_end() {
        // An orphan result and a blank block of one user turn: the removals of both steps are
        // made highest first, whatever step planned them.
        let h = json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "a", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                {"type": "tool_result", "tool_use_id": "zz", "content": "stray"},
                {"type": "text", "text": ""},
                {"type": "text", "text": "next"}
            ]}
        ]);
        let p = plan_of(&h, WireFormat::Anthropic);
        let removed: Vec<&Vec<Step>> = p
            .edits
            .iter()
            .filter(|e| e.action == Action::Remove)
            .map(|e| &e.path)
            .collect();
        assert_eq!(
            removed,
            [
                &vec![Step::Key("content"), Step::Index(2)],
                &vec![Step::Key("content"), Step::Index(1)]
            ]
        );
    }

    #[test]
    fn results_split_over_two_user_turns_join_the_first() {
        // A harness that wrote each result as it came: Bedrock refuses the two user turns,
        // and the repair dropped the real second result for an "interrupted" stand-in.
        let h = json!([
            {"role": "user", "content": [{"text": "go"}]},
            {"role": "assistant", "content": [
                {"toolUse": {"toolUseId": "t1", "name": "a", "input": {}}},
                {"toolUse": {"toolUseId": "t2", "name": "b", "input": {}}}]},
            {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "1"}]}}]},
            {"role": "user", "content": [
                {"toolResult": {"toolUseId": "t2", "content": [{"text": "RESULT-2"}]}},
                {"toolResult": {"toolUseId": "zz", "content": [{"text": "stray"}]}}]},
            {"role": "assistant", "content": [{"text": "both done"}]}
        ]);
        let p = plan_of(&h, WireFormat::Bedrock);
        assert_eq!(
            p.messages,
            vec![Slot::Keep(0), Slot::Keep(1), Slot::Keep(2), Slot::Keep(4)]
        );
        assert!(p
            .edits
            .iter()
            .any(|e| e.index == 2 && e.action == Action::Append { from: 3 }));
        // The stray result of the second turn still goes; no call is stood in for.
        assert!(p
            .edits
            .iter()
            .any(|e| e.index == 3 && e.action == Action::Remove));
        assert!(
            !p.changes.iter().any(|c| c.contains("interrupted")),
            "{:?}",
            p.changes
        );
        // A second user turn of text alone is the user's words, not a result: Bedrock refuses
        // the two turns all the same ("A conversation must alternate between user and
        // assistant roles"), and they are one turn, the results first. Anthropic joins them
        // itself: left.
        let h = json!([
            {"role": "user", "content": [{"text": "go"}]},
            {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "a", "input": {}}}]},
            {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "1"}]}}]},
            {"role": "user", "content": [{"text": "and then?"}]},
            {"role": "assistant", "content": [{"text": "Next,"}]},
            {"role": "assistant", "content": [{"text": "then"}]},
            {"role": "assistant", "content": [{"text": "done."}]}
        ]);
        let p = plan_of(&h, WireFormat::Bedrock);
        assert_eq!(p.messages, [0, 1, 2, 4].map(Slot::Keep).to_vec());
        assert_eq!(
            p.edits,
            [(2, 3), (4, 5), (4, 6)]
                .map(|(a, from)| RepairEdit {
                    index: a,
                    path: vec![Step::Key("content")],
                    action: Action::Append { from }
                })
                .to_vec()
        );
        let a = json!([
            {"role": "user", "content": [{"type": "text", "text": "go"}]},
            {"role": "user", "content": [{"type": "text", "text": "now"}]}
        ]);
        assert!(plan_of(&a, WireFormat::Anthropic).changes.is_empty());
    }

    #[test]
    fn a_renamed_duplicate_id_stays_within_40_characters() {
        let id = "t".repeat(64);
        assert_eq!(renamed(&id, 2).chars().count(), 40);
        assert_eq!(renamed(&"t".repeat(40), 12).chars().count(), 40);
        assert_eq!(renamed("toolu_1", 2), "toolu_1_2");
        let h = json!([
            {"role": "user", "content": [{"text": "go"}]},
            {"role": "assistant", "content": [
                {"toolUse": {"toolUseId": id, "name": "a", "input": {}}},
                {"toolUse": {"toolUseId": id, "name": "b", "input": {}}}]},
            {"role": "user", "content": [
                {"toolResult": {"toolUseId": id, "content": [{"text": "1"}]}},
                {"toolResult": {"toolUseId": id, "content": [{"text": "2"}]}}]}
        ]);
        let p = plan_of(&h, WireFormat::Bedrock);
        let set: Vec<&str> = p
            .edits
            .iter()
            .filter_map(|e| match &e.action {
                Action::Set(v) => Some(v.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(set.len(), 2, "{p:?}");
        assert!(
            set.iter().all(|v| v.len() == 40 + 2 && v.ends_with("_2\"")),
            "{set:?}"
        );
    }

    #[test]
    fn gemini_calls_of_one_name_are_counted_and_a_stand_in_goes_after_the_responses() {
        // Two `read` calls without ids, one `read` response: Gemini refuses a turn whose
        // function responses are fewer than its calls; the check saw one name answered.
        let h = json!([
            {"role": "user", "parts": [{"text": "read both"}]},
            {"role": "model", "parts": [
                {"functionCall": {"name": "read", "args": {"path": "a.py"}}},
                {"functionCall": {"name": "read", "args": {"path": "b.py"}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "read", "response": {"r": "A"}}}]},
            {"role": "model", "parts": [{"text": "done"}]}
        ]);
        let msgs = read_history(&&h).expect("readable");
        let est = crate::estimate::Estimator::new(crate::provider::Provider::Gemini, "");
        let v = crate::compaction::verify(&msgs, WireFormat::Gemini, &est, 0, None, &[]);
        let kinds: Vec<&str> = v.failures.iter().map(|f| f.kind()).collect();
        assert_eq!(kinds, ["orphan_call"], "{:?}", v.failures);
        // Repair answers the second call after the first's response, which answers by order.
        let p = plan_of(&h, WireFormat::Gemini);
        assert_eq!(p.edits.len(), 1, "{p:?}");
        assert!(
            matches!(&p.edits[0].action, Action::Insert { position: 1, value } if value.contains("interrupted"))
        );
        // One call, two responses of its name: the second is an orphan.
        let h = json!([
            {"role": "user", "parts": [{"text": "read"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "read", "args": {}}}]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "read", "response": {"r": "A"}}},
                {"functionResponse": {"name": "read", "response": {"r": "B"}}}]}
        ]);
        let msgs = read_history(&&h).expect("readable");
        let v = crate::compaction::verify(&msgs, WireFormat::Gemini, &est, 0, None, &[]);
        let kinds: Vec<&str> = v.failures.iter().map(|f| f.kind()).collect();
        assert_eq!(kinds, ["orphan_result"], "{:?}", v.failures);
    }

    #[test]
    fn anthropic_text_before_a_turn_s_results_goes_after_them_and_the_check_names_it() {
        // The tool-use guide's own example of a 400: text, then the result.
        let h = json!([
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {}},
                {"type": "tool_use", "id": "toolu_2", "name": "w", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "15"},
                {"type": "text", "text": "Here are the results:"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "17"}]},
            {"role": "assistant", "content": "15 and 17."}
        ]);
        let msgs = read_history(&&h).expect("readable");
        assert!(text_before_results(&msgs[2]));
        let v = crate::compaction::verify(
            &msgs,
            WireFormat::Anthropic,
            &crate::estimate::Estimator::new(crate::provider::Provider::Anthropic, ""),
            0,
            None,
            &[],
        );
        let named: Vec<String> = v.failures.iter().map(|f| f.describe()).collect();
        assert_eq!(named.len(), 1, "{named:?}");
        assert!(
            named[0].contains("\"toolu_2\" comes after other blocks"),
            "{named:?}"
        );
        let p = plan_of(&h, WireFormat::Anthropic);
        assert_eq!(p.edits.len(), 1);
        assert_eq!(p.edits[0].index, 2);
        assert_eq!(p.edits[0].action, Action::ResultsFirst);
        // Text after the results, as 9 recorded turns send it, is left.
        let h = json!([
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "w", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "15"},
                {"type": "text", "text": "And tomorrow?"}]}
        ]);
        assert!(plan_of(&h, WireFormat::Anthropic).changes.is_empty());
    }

    #[test]
    fn an_openai_reasoning_item_before_an_assistant_message_without_its_id_goes() {
        // As the recorded gpt-5 request sent it (refused with 400): the message rewritten
        // without the `msg_` id its reasoning item is bound to.
        let rs = json!({"type": "reasoning", "id": "rs_68c4", "encrypted_content": "gAAA", "summary": []});
        let h = json!([
            {"role": "user", "content": "meaning of life?"}, rs,
            {"role": "assistant", "content": "42"},
            {"role": "user", "content": "why?"}
        ]);
        let p = plan_of(&h, WireFormat::Responses);
        assert_eq!(
            p.messages,
            vec![Slot::Keep(0), Slot::Keep(2), Slot::Keep(3)]
        );
        assert!(
            p.changes[0].starts_with("message 1: reasoning item"),
            "{:?}",
            p.changes
        );
        // With the message's id, or before a call, or a reasoning of no `rs_` id: kept.
        for next in [
            json!({"type": "message", "role": "assistant", "id": "msg_68c4", "content": "42"}),
            json!({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}),
        ] {
            let h = json!([{"role": "user", "content": "q"}, rs, next]);
            assert!(plan_of(&h, WireFormat::Responses).changes.is_empty());
        }
        let other = json!({"type": "reasoning", "id": "76f8b89e", "content": [{"type": "reasoning_text", "text": "t"}]});
        let h = json!([{"role": "user", "content": "q"}, other, {"role": "assistant", "content": "42"}]);
        assert!(plan_of(&h, WireFormat::Responses).changes.is_empty());
    }

    #[test]
    fn a_user_turn_typed_while_a_tool_ran_goes_after_its_result() {
        // The real output came after the user's words: dropped as an orphan, it was replaced
        // by an "interrupted" stand-in the assistant's next words then contradicted.
        let h = json!([
            {"role": "user", "content": "weather in Paris?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
            {"role": "user", "content": "also Rome"},
            {"role": "tool", "tool_call_id": "c1", "content": "Paris: 20C"},
            {"role": "assistant", "content": "It is 20C in Paris."}
        ]);
        let p = plan_of(&h, WireFormat::Chat);
        let order: Vec<Slot> = [0, 1, 3, 2, 4].into_iter().map(Slot::Keep).collect();
        assert_eq!(p.messages, order);
        assert_eq!(p.changes.len(), 1, "{:?}", p.changes);
        // With no result after it, the user's turn closes the call as before.
        let h = json!([
            {"role": "user", "content": "weather in Paris?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
            {"role": "user", "content": "never mind"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c2", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "late"}
        ]);
        let p = plan_of(&h, WireFormat::Chat);
        assert!(
            matches!(&p.messages[2], Slot::New(s) if s.contains("interrupted")),
            "{p:?}"
        );
    }

    #[test]
    fn two_responses_calls_of_one_id_keep_their_outputs_in_order() {
        let fc =
            |a: &str| json!({"type": "function_call", "call_id": "a", "name": "w", "arguments": a});
        let fo = |o: &str| json!({"type": "function_call_output", "call_id": "a", "output": o});
        let h = json!([{"role": "user", "content": "weather?"}, fc("{\"city\":\"Paris\"}"), fc("{\"city\":\"Rome\"}"), fo("Paris: 20C"), fo("Rome: 30C")]);
        let p = plan_of(&h, WireFormat::Responses);
        // The second call and the second output are renamed a_2 together.
        let renamed: Vec<usize> = p
            .edits
            .iter()
            .filter(|e| matches!(&e.action, Action::Set(v) if v == "\"a_2\""))
            .map(|e| e.index)
            .collect();
        assert_eq!(renamed, [2, 4], "{p:?}");
    }

    #[test]
    fn a_system_note_between_a_chat_call_and_its_results_goes_after_them() {
        // The note left the call without its `tool` messages right after it, which OpenAI and
        // DeepSeek refuse; repair left it there and the check kept naming the call.
        let call = json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{}"}}]});
        let h = json!([
            {"role": "user", "content": "go"}, call,
            {"role": "tool", "tool_call_id": "a", "content": "ok"},
            {"role": "system", "content": "lint: 2 warnings"},
            {"role": "tool", "tool_call_id": "b", "content": "ok"},
            {"role": "user", "content": "next"}
        ]);
        let p = plan_of(&h, WireFormat::Chat);
        let order: Vec<Slot> = [0, 1, 2, 4, 3, 5].into_iter().map(Slot::Keep).collect();
        assert_eq!(p.messages, order);
        assert_eq!(p.changes.len(), 1, "{:?}", p.changes);
        // With no result after it, the stand-ins go in before it; a system message carrying a
        // `tool_call_id` is no result.
        let h = json!([
            {"role": "user", "content": "go"}, call,
            {"role": "system", "tool_call_id": "a", "content": "ok"},
            {"role": "user", "content": "next"}
        ]);
        let p = plan_of(&h, WireFormat::Chat);
        assert!(
            matches!(&p.messages[2], Slot::New(s) if s.contains("\"a\"")),
            "{p:?}"
        );
        assert!(
            matches!(&p.messages[3], Slot::New(s) if s.contains("\"b\"")),
            "{p:?}"
        );
        assert_eq!(&p.messages[4..], &[Slot::Keep(2), Slot::Keep(3)]);
        // A pending last turn with a note after its calls is left as it is.
        let h =
            json!([{"role": "user", "content": "go"}, call, {"role": "system", "content": "n"}]);
        assert!(plan_of(&h, WireFormat::Chat).changes.is_empty());
    }

    #[test]
    fn a_continuation_held_upstream_keeps_the_outputs_of_calls_it_does_not_hold() {
        // A Responses input sent with previous_response_id: the outputs answer calls of the
        // stored response. Repaired as a history of its own, every one went and the input was
        // empty; held upstream, each is kept once, and a second output of an id still goes.
        let h = json!([
            {"type": "function_call_output", "call_id": "call_a", "output": "12C"},
            {"type": "function_call_output", "call_id": "call_b", "output": "rain"},
            {"type": "function_call_output", "call_id": "call_a", "output": "again"},
            {"role": "user", "content": "and tomorrow?"}
        ]);
        let msgs = read_history(&&h).expect("readable");
        let alone = repair(&msgs, WireFormat::Responses);
        assert_eq!(alone.messages, vec![Slot::Keep(3)]);
        let held = repair_history(&msgs, WireFormat::Responses, true);
        assert_eq!(
            held.messages,
            vec![Slot::Keep(0), Slot::Keep(1), Slot::Keep(3)]
        );
        assert_eq!(held.changes.len(), 1, "{:?}", held.changes);
        assert!(held.changes[0].starts_with("message 2: result for call \"call_a\""));
        // A call made in the input is still answered or stood in for as ever.
        let h = json!([
            {"type": "function_call_output", "call_id": "call_a", "output": "12C"},
            {"type": "function_call", "call_id": "call_c", "name": "f", "arguments": "{}"},
            {"type": "message", "role": "user", "content": "next"}
        ]);
        let msgs = read_history(&&h).expect("readable");
        let held = repair_history(&msgs, WireFormat::Responses, true);
        assert!(
            held.changes
                .iter()
                .any(|c| c.contains("call \"call_c\" had no result")),
            "{:?}",
            held.changes
        );
        assert_eq!(held.messages[0], Slot::Keep(0));
    }

    #[test]
    fn chat_call_without_result_gets_an_interrupted_stand_in_and_orphans_go() {
        let h = json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "ok"},
            {"role": "tool", "tool_call_id": "zzz", "content": "stray"},
            {"role": "user", "content": "next"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
        ]);
        let p = plan_of(&h, WireFormat::Chat);
        assert_eq!(p.messages.len(), 6, "{p:?}");
        assert!(
            matches!(&p.messages[3], Slot::New(s) if s.contains("\"tool_call_id\":\"b\"") && s.contains("interrupted"))
        );
        assert!(!p.messages.contains(&Slot::Keep(3)));
        // The pending last call is left alone.
        assert_eq!(p.messages.last(), Some(&Slot::Keep(5)));
        assert_eq!(p.changes.len(), 2, "{:?}", p.changes);
    }

    #[test]
    fn arguments_that_are_not_json_are_kept_as_a_string_and_free_text_is_left() {
        let h = json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{\"path\": \"f.py\""}},
                {"id": "b", "type": "function", "function": {"name": "g", "arguments": ""}},
                {"id": "c", "type": "function", "function": {"name": "h", "arguments": "{\"ok\": 1}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "bad arguments"},
            {"role": "tool", "tool_call_id": "b", "content": "ok"},
            {"role": "tool", "tool_call_id": "c", "content": "ok"}
        ]);
        let p = plan_of(&h, WireFormat::Chat);
        let sets: Vec<(&[Step], &Action)> = p
            .edits
            .iter()
            .map(|e| (e.path.as_slice(), &e.action))
            .collect();
        assert_eq!(sets.len(), 2, "{p:?}");
        let value = |a: &Action| match a {
            Action::Set(v) => serde_json::from_str::<String>(v).expect("a JSON string"),
            other => panic!("{other:?}"),
        };
        assert_eq!(sets[0].0[1], Step::Index(0));
        let fixed: Value = serde_json::from_str(&value(sets[0].1)).expect("valid JSON");
        assert_eq!(fixed, json!({"invalid_json": "{\"path\": \"f.py\""}));
        assert_eq!(sets[1].0[1], Step::Index(1));
        assert_eq!(value(sets[1].1), "{}");
        assert!(p.changes[0].starts_with("message 1: arguments of call \"a\" were not valid JSON"));
        // A Responses custom tool's input is free text; a function_call's arguments are JSON.
        let r = json!([
            {"role": "user", "content": "go"},
            {"type": "custom_tool_call", "call_id": "x", "name": "patch", "input": "*** Begin Patch"},
            {"type": "custom_tool_call_output", "call_id": "x", "output": "done"},
            {"type": "function_call", "call_id": "y", "name": "f", "arguments": "{\"a\":"},
            {"type": "function_call_output", "call_id": "y", "output": "error"}
        ]);
        let p = plan_of(&r, WireFormat::Responses);
        assert_eq!(p.edits.len(), 1, "{p:?}");
        assert_eq!(
            (p.edits[0].index, p.edits[0].path.clone()),
            (3, vec![Step::Key("arguments")])
        );
        let rv = &r;
        let msgs = read_history(&rv).expect("readable");
        let failures = crate::compaction::check(&msgs, WireFormat::Responses, &[]);
        assert_eq!(
            failures,
            vec![crate::compaction::Failure::InvalidArguments {
                index: 3,
                call: 0,
                id: "y".into()
            }]
        );
    }

    #[test]
    fn duplicate_ids_are_renamed_with_their_results() {
        let h = json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "x", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "1"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "x", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "2"}]}
        ]);
        let p = plan_of(&h, WireFormat::Anthropic);
        let sets: Vec<_> = p
            .edits
            .iter()
            .filter(|e| matches!(&e.action, Action::Set(v) if v == "\"x_2\""))
            .map(|e| e.index)
            .collect();
        assert_eq!(sets, vec![3, 4], "{p:?}");
        assert_eq!(p.messages, (0..5).map(Slot::Keep).collect::<Vec<_>>());
    }

    #[test]
    fn many_copies_of_one_id_take_the_next_free_suffixes_in_linear_time() {
        // An id already taken under its renamed form (`x_3`) is skipped, as a search from 2
        // would skip it; 20,000 copies once took 18 s. (Copies in one message: chat takes an id
        // again in a later round once its call is answered.)
        let calls = |ids: &[&str]| {
            let list: Vec<Value> = ids
                .iter()
                .map(|id| json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}}))
                .collect();
            json!({"role": "assistant", "content": null, "tool_calls": list})
        };
        let result = |id: &str| json!({"role": "tool", "tool_call_id": id, "content": "ok"});
        let ids = ["x", "x_3", "x", "x", "x"];
        let mut h = vec![json!({"role": "user", "content": "go"}), calls(&ids)];
        h.extend(ids.iter().map(|id| result(id)));
        let p = plan_of(&Value::Array(h), WireFormat::Chat);
        let names: Vec<&str> = p
            .edits
            .iter()
            .filter(|e| e.index == 1)
            .filter_map(|e| match &e.action {
                Action::Set(v) => Some(v.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(names, vec!["\"x_2\"", "\"x_4\"", "\"x_5\""], "{p:?}");

        let same = vec!["same"; 20_000];
        let mut big = vec![json!({"role": "user", "content": "go"}), calls(&same)];
        big.extend(same.iter().map(|id| result(id)));
        let p = plan_of(&Value::Array(big), WireFormat::Chat);
        assert_eq!(p.changes.len(), 2 * 19_999);
        // (The last copy takes the next suffix, never a search from 2: `same_20000`.)
        assert!(
            p.changes
                .last()
                .is_some_and(|c| c.contains("\"same_20000\"")),
            "{:?}",
            p.changes.last()
        );
    }

    #[test]
    fn a_chat_id_reused_in_a_later_round_after_its_answer_is_kept() {
        // OpenAI answered tau-bench dialogues that do so; `id_2` broke ids of a fixed shape.
        let call = |id: &str| {
            json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
        };
        let result = |id: &str| json!({"role": "tool", "tool_call_id": id, "content": "ok"});
        let h = json!([{"role": "user", "content": "go"}, call("a1b2c3d4e"), result("a1b2c3d4e"),
            call("a1b2c3d4e"), result("a1b2c3d4e"), {"role": "user", "content": "next"}]);
        let p = plan_of(&h, WireFormat::Chat);
        assert!(p.changes.is_empty(), "{:?}", p.changes);
        // In Anthropic's shape the same reuse is still made unique.
        let h = json!([{"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}]);
        let p = plan_of(&h, WireFormat::Anthropic);
        assert_eq!(p.changes.len(), 2, "{:?}", p.changes);
    }

    #[test]
    fn a_result_answers_the_latest_call_of_its_reused_id_and_is_never_dropped() {
        // An interrupted call `x`, then a new turn calling `x` again and its result: the result
        // was taken for the first call's, renamed to it and dropped as an orphan of the second.
        let call = |id: &str| {
            json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "read", "arguments": "{}"}}]})
        };
        let h = json!([{"role": "user", "content": "task"}, call("x"), call("x"),
            {"role": "tool", "tool_call_id": "x", "content": "IMPORTANT result"},
            {"role": "user", "content": "next"}]);
        let p = plan_of(&h, WireFormat::Chat);
        assert!(p.messages.contains(&Slot::Keep(3)), "{p:?}");
        assert!(
            !p.changes.iter().any(|c| c.contains("dropped")),
            "{:?}",
            p.changes
        );
        assert_eq!(
            p.changes
                .iter()
                .filter(|c| c.contains("interrupted"))
                .count(),
            1,
            "{:?}",
            p.changes
        );
        // Anthropic: two calls `x` in one turn, one answered; a later turn calls `x` again.
        let use_x = |ids: &[&str]| {
            json!({"role": "assistant", "content":
            ids.iter().map(|i| json!({"type": "tool_use", "id": i, "name": "read", "input": {}})).collect::<Vec<_>>()})
        };
        let result = |text: &str| {
            json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "x", "content": text}]})
        };
        let h = json!([{"role": "user", "content": "task"}, use_x(&["x", "x"]), result("first"),
            use_x(&["x"]), result("the 15 KB read")]);
        let p = plan_of(&h, WireFormat::Anthropic);
        assert!(
            !p.changes.iter().any(|c| c.contains("dropped")),
            "{:?}",
            p.changes
        );
        assert!(p.messages.contains(&Slot::Keep(4)), "{p:?}");
    }

    #[test]
    fn a_responses_call_left_without_output_before_the_next_response_gets_a_stand_in() {
        let fc = |id: &str| json!({"type": "function_call", "call_id": id, "name": "read", "arguments": "{}"});
        let out = |id: &str| json!({"type": "function_call_output", "call_id": id, "output": "ok"});
        let h = json!([{"role": "user", "content": "task"}, fc("a"), fc("b"), out("b"), fc("c"), out("c")]);
        let p = plan_of(&h, WireFormat::Responses);
        assert_eq!(p.changes.len(), 1, "{:?}", p.changes);
        assert!(p.changes[0].contains("\"a\""), "{:?}", p.changes);
        // The stand-in goes where the call's response ended: after `b`'s output, before `c`.
        assert!(matches!(p.messages[4], Slot::New(_)), "{:?}", p.messages);
        let msgs = read_history(&&h).expect("readable");
        assert_eq!(pending_from(&msgs, WireFormat::Responses), 4);
        // The last response's calls are still awaited: left as they are.
        let pending = json!([{"role": "user", "content": "task"}, fc("a"), fc("b"), out("b")]);
        assert!(plan_of(&pending, WireFormat::Responses).changes.is_empty());
        let msgs = read_history(&&pending).expect("readable");
        assert_eq!(pending_from(&msgs, WireFormat::Responses), 1);
    }

    #[test]
    fn a_responses_output_sent_after_a_later_model_message_moves_up_to_its_call() {
        // The recorded exchange DeepSeek refused ("No tool output found for tool call call-a"):
        // the model's words between two calls, both outputs after them. A stand-in for `call-a`
        // dropped its real output as an answer given twice.
        let h = json!([
            {"role": "assistant", "content": "inspect inputs"},
            {"type": "function_call", "call_id": "call-a", "name": "read", "arguments": "{}"},
            {"role": "assistant", "content": "inspect views"},
            {"type": "function_call", "call_id": "call-b", "name": "view", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call-a", "output": "contents"},
            {"type": "function_call_output", "call_id": "call-b", "output": "rendered"},
            {"role": "user", "content": "Reply exactly: done"}
        ]);
        let p = plan_of(&h, WireFormat::Responses);
        assert_eq!(
            p.messages,
            [0, 1, 4, 2, 3, 5, 6].map(Slot::Keep).to_vec(),
            "{:?}",
            p.changes
        );
        assert_eq!(p.changes.len(), 1, "{:?}", p.changes);
        assert!(p.changes[0].starts_with("message 4: output of call \"call-a\""));
    }

    #[test]
    fn a_server_tool_answered_in_its_own_message_is_left_as_it_is() {
        // Anthropic web search and MCP: each call's result sits in the assistant message that
        // makes it; the client call beside them is answered by the next message.
        let h = json!([
            {"role": "user", "content": "weather, then notes"},
            {"role": "assistant", "content": [
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "paris"}},
                {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
                    {"type": "web_search_result", "url": "https://w.example", "title": "P", "encrypted_content": "Eq"}]},
                {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "lookup", "server_name": "s", "input": {}},
                {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1", "is_error": false, "content": [{"type": "text", "text": "x"}]},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "n"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "notes"}]},
            {"role": "assistant", "content": "done"}
        ]);
        let p = plan_of(&h, WireFormat::Anthropic);
        assert_eq!(
            p,
            RepairPlan {
                messages: (0..4).map(Slot::Keep).collect(),
                ..RepairPlan::default()
            }
        );
        // A client call still needs its result in the next message.
        let mut broken = h.clone();
        broken[2] = json!({"role": "user", "content": "no result"});
        let p = plan_of(&broken, WireFormat::Anthropic);
        assert_eq!(p.changes.len(), 1, "{:?}", p.changes);
        assert!(p.changes[0].contains("\"toolu_1\""), "{:?}", p.changes);
    }

    #[test]
    fn the_pending_last_turn_is_the_calls_after_the_last_message_that_speaks() {
        let chat = json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "ok"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "b", "content": "ok"}
        ]);
        let msgs = read_history(&&chat).expect("readable");
        assert_eq!(pending_from(&msgs, WireFormat::Chat), 1);
        // A finished round after the last message that speaks is in it too (nothing to answer).
        assert_eq!(pending_from(&msgs[..3], WireFormat::Chat), 1);
        assert_eq!(pending_from(&msgs[..1], WireFormat::Chat), 1);
        let strict = json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "x", "name": "f", "input": {}}]}
        ]);
        let msgs = read_history(&&strict).expect("readable");
        assert_eq!(pending_from(&msgs, WireFormat::Anthropic), 1);
        assert_eq!(pending_from(&msgs[..1], WireFormat::Anthropic), 1);
    }

    #[test]
    fn strict_formats_put_stand_ins_into_the_next_user_message() {
        let h = json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "f", "input": {}}}]},
            {"role": "user", "content": [{"text": "never mind"}]},
            {"role": "assistant", "content": [{"text": "ok"}]}
        ]);
        let p = plan_of(&h, WireFormat::Bedrock);
        assert_eq!(p.messages, (0..4).map(Slot::Keep).collect::<Vec<_>>());
        assert!(
            matches!(&p.edits[0].action, Action::Insert { position: 0, value } if value.contains("\"status\":\"error\""))
        );
    }
}
