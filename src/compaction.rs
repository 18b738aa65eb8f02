//! Compaction: the plan that folds the middle of a history into one summary, and the check of a
//! finished history before it is sent.
//!
//! One call plans everything over the message views: per-message costs, the head kept verbatim
//! (the first `protect_first_n` messages and the first user request, the task), the protected
//! tail (the tail walk, never inside a tool group), the mask edits (prune's, filtered by the
//! caller's knobs), the messages of the middle kept verbatim (pinned ones, opaque server
//! compaction items), the messages folded, the previous summary of an earlier compaction, and
//! where the summary goes so that no two neighbours share a role. A second call verifies the
//! assembled history: call/result pairs, roles, JSON of every arguments string, budget.

pub use crate::wire::WireFormat;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use crate::estimate::Estimator;
use crate::message::{Content, Message, Part};
use crate::prune::{self, group_sep, PruneOptions};
use crate::shrink_json::{is_valid_json, shrink_json};
use crate::tail_walk::{find_tail_start, legal_cuts, TailOptions};
use crate::wire::edit::{CallAt, Change};

use crate::mask_edit::writable;
pub use crate::mask_edit::MaskEdit;
pub use crate::summary_marker::{own_summary, SUMMARY_CLOSE, SUMMARY_OPEN};
pub use crate::turn::{seat, Turn};

/// A summary smaller than this (tokens) is not worth writing: the plan masks the tail instead.
pub const MIN_SUMMARY_TOKENS: u64 = 64;

/// Arguments of a call whose result was cleared (`clear_tool_inputs`) shrink to this many
/// characters (shrink_json's floor: still valid JSON, keys and short values kept).
const CLEARED_INPUT_CHARS: usize = 64;

fn collide(a: Turn, b: Turn) -> bool {
    a == b && matches!(a, Turn::User | Turn::Assistant)
}

/// The masking knobs (Anthropic's context-editing vocabulary where it has a word).
#[derive(Debug, Clone, PartialEq)]
pub struct MaskOptions {
    pub tool_result_max_tokens: u32,
    pub arguments_max_chars: usize,
    pub prune_images: bool,
    pub dedupe: bool,
    /// Masking ends on block boundaries of this many tokens (prompt-cache aware); 0: off.
    pub cache_block_tokens: u64,
    /// The results (and arguments) of the last `keep_tool_uses` tool calls are never masked.
    pub keep_tool_uses: usize,
    /// Results of these tools are never masked (memory, plan, todo tools).
    pub exclude_tools: Vec<String>,
    /// Also shrink the arguments of calls whose result was masked.
    pub clear_tool_inputs: bool,
    /// Keep thinking blocks only in the last N assistant turns that have them (None: all).
    pub keep_thinking_turns: Option<usize>,
    /// Text agents (no structured tool calls, e.g. mini-swe-agent): a long user message that
    /// answers an assistant's command is an observation and is masked like a tool result.
    pub mask_observations: bool,
    /// Every placeholder names the id its removed text is kept under (`recall`).
    pub recoverable: bool,
}

impl Default for MaskOptions {
    fn default() -> Self {
        MaskOptions {
            tool_result_max_tokens: 200,
            arguments_max_chars: 2_000,
            prune_images: true,
            dedupe: true,
            cache_block_tokens: 0,
            keep_tool_uses: 0,
            exclude_tools: Vec::new(),
            clear_tool_inputs: false,
            keep_thinking_turns: None,
            mask_observations: true,
            recoverable: false,
        }
    }
}

/// Everything a plan needs besides the messages. Sizes in the estimator's tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanOptions {
    pub format: WireFormat,
    /// Target prompt tokens of the finished request (messages + overhead).
    pub budget_tokens: u64,
    /// Tokens around the messages (system, tools, reply priming): `Estimator::overhead`.
    pub overhead_tokens: u64,
    /// Tokens the protected tail holds (at most: shrunk when head + summary leave less room).
    pub tail_tokens: u64,
    /// Tokens the summary may take at most.
    pub summary_tokens: u64,
    pub protect_first_n: usize,
    pub min_tail: usize,
    pub soft_ceiling: f64,
    /// Indices of messages kept verbatim wherever they are.
    pub pinned: Vec<usize>,
    pub mask: MaskOptions,
    /// Hashes (`summary_trust::summary_hash`) of the summaries the caller wrote: only those, or
    /// one standing where an inserted summary goes, are read as the previous summary.
    pub trusted_summaries: Vec<u64>,
    /// Tokens the summary should have at least: old tool output inside the tail is masked to
    /// leave it that room (0: only when even `MIN_SUMMARY_TOKENS` would not fit).
    pub summary_floor: u64,
}

impl Default for PlanOptions {
    /// The head and tail floors of `tail_walk` (`protect_first_n` 1, `min_tail` 3,
    /// `soft_ceiling` 1.5) and the default masking; the sizes 0 until a caller sets them.
    fn default() -> Self {
        PlanOptions {
            format: WireFormat::Chat,
            budget_tokens: 0,
            overhead_tokens: 0,
            tail_tokens: 0,
            summary_tokens: 0,
            protect_first_n: 1,
            min_tail: 3,
            soft_ceiling: 1.5,
            pinned: Vec::new(),
            mask: MaskOptions::default(),
            trusted_summaries: Vec::new(),
            summary_floor: 0,
        }
    }
}

/// An edit with the tokens it saves (the message's cost before minus after that edit alone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PricedEdit {
    pub edit: MaskEdit,
    pub saved: u32,
}

/// Where the summary goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// A new message of this turn (User or Assistant) between the kept messages and the tail.
    Insert(Turn),
    /// A text block added to caller message `index` (at its start, or at its end), because
    /// any new message there would share a role with a neighbour.
    Merge { index: usize, at_start: bool },
}

/// What one compaction will do.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Cost of every message.
    pub costs: Vec<u32>,
    /// Messages + overhead, before anything.
    pub tokens_before: u64,
    /// Mask edits (outside the head, the tail walk's protected tail and pinned messages).
    pub mask_edits: Vec<PricedEdit>,
    /// Tokens of the whole request once the mask edits are applied.
    pub tokens_after_mask: u64,
    /// Messages `..head_end` are kept verbatim.
    pub head_end: usize,
    /// Messages `tail_start..` are kept (verbatim, or masked by `tail_edits`).
    pub tail_start: usize,
    /// Messages of the middle kept verbatim, in order (pinned, server compaction items, and
    /// what keeps their neighbours' roles apart).
    pub kept: Vec<usize>,
    /// Messages of the middle folded into the summary, in order.
    pub folded: Vec<usize>,
    /// Text of contextfold's own summary found among the folded messages.
    pub previous_summary: Option<String>,
    pub placement: Placement,
    /// Edits inside the tail needed to leave room for a summary (empty normally).
    pub tail_edits: Vec<PricedEdit>,
    /// Tokens the summary text may take (0 when there is nothing to fold).
    pub summary_tokens: u64,
    /// Tokens of everything but the summary's text once assembled.
    pub fixed_tokens: u64,
    /// Output positions where the assembled history joins messages that were not neighbours
    /// (verify checks roles there).
    pub seams: Vec<usize>,
    /// Why nothing can be folded, when nothing can.
    pub reason: Option<String>,
}

/// True when a part is an opaque compaction item of a server (OpenAI Responses `compaction`
/// items, Anthropic `compaction` blocks): kept verbatim, never folded.
fn is_server_compaction(m: &Message<'_>) -> bool {
    match &m.content {
        Content::Parts(parts) => parts.iter().any(|p| {
            matches!(p, Part::Opaque { kind, .. } if kind == "compaction" || kind.ends_with("_compaction") || kind == "compaction_summary")
        }),
        _ => false,
    }
}

/// A copy of `m` with one edit applied (for pricing).
fn edited<'a>(m: &Message<'a>, e: &MaskEdit) -> Message<'a> {
    let mut out = m.clone();
    match e {
        MaskEdit::Change { change, .. } => match change {
            Change::ResultText { part: None, text } | Change::Text { text } => {
                out.content = Content::Text(Cow::Owned(text.clone()));
            }
            Change::ResultText {
                part: Some(part),
                text,
            } => {
                if let Content::Parts(ps) = &mut out.content {
                    if let Some(Part::ToolResult { content, .. }) = ps.get_mut(*part) {
                        *content = vec![Part::Text(Cow::Owned(text.clone()))];
                    }
                }
            }
            Change::Image { part, text } => {
                if let Content::Parts(ps) = &mut out.content {
                    if let Some(p) = ps.get_mut(*part) {
                        *p = Part::Text(Cow::Owned(text.clone()));
                    }
                }
            }
            Change::Arguments {
                call: CallAt::Part(k),
                json,
            } => {
                if let Content::Parts(ps) = &mut out.content {
                    if let Some(Part::ToolUse(c)) = ps.get_mut(*k) {
                        c.arguments = Cow::Owned(json.clone());
                    }
                }
            }
            Change::Arguments {
                call: CallAt::ToolCalls(j),
                json,
            } => {
                if let Some(c) = out.tool_calls.get_mut(*j) {
                    c.arguments = Cow::Owned(json.clone());
                }
            }
        },
        MaskEdit::DropPart { part, .. } => {
            if let Content::Parts(ps) = &mut out.content {
                if *part < ps.len() {
                    ps.remove(*part);
                }
            }
        }
    }
    out
}

/// Cost of each edited message with all its edits applied (drops last, highest part first).
fn costs_with(msgs: &[Message<'_>], est: &Estimator, costs: &[u32], edits: &[PricedEdit]) -> u64 {
    let mut by_msg: HashMap<usize, Vec<&MaskEdit>> = HashMap::new();
    for e in edits {
        by_msg.entry(e.edit.index()).or_default().push(&e.edit);
    }
    let mut total: u64 = costs.iter().map(|&c| u64::from(c)).sum();
    for (i, mut es) in by_msg {
        // Drops shift later parts: apply them after the replacements, highest part first.
        es.sort_by_key(|e| match e {
            MaskEdit::DropPart { part, .. } => (1, usize::MAX - part),
            _ => (0, 0),
        });
        let mut m = msgs[i].clone();
        for e in es {
            m = edited(&m, e);
        }
        total = total - u64::from(costs[i]) + u64::from(est.message(&m));
    }
    total
}

/// Names of the tool each call id belongs to, and the ids of calls in order.
fn calls_in_order<'a>(msgs: &[Message<'a>]) -> (HashMap<&'a str, &'a str>, Vec<&'a str>) {
    let mut names = HashMap::new();
    let mut order = Vec::new();
    for m in msgs {
        for c in &m.tool_calls {
            names.insert(c.id, c.name);
            order.push(c.id);
        }
        if let Content::Parts(ps) = &m.content {
            for p in ps {
                if let Part::ToolUse(c) = p {
                    names.insert(c.id, c.name);
                    order.push(c.id);
                }
            }
        }
    }
    (names, order)
}

/// The call id a change touches (the result it replaces, or the call it shrinks).
fn edit_call_id<'a>(msgs: &[Message<'a>], index: usize, change: &Change) -> Option<&'a str> {
    let m = &msgs[index];
    let part = |k: usize| match &m.content {
        Content::Parts(ps) => ps.get(k),
        _ => None,
    };
    match change {
        Change::ResultText { part: None, .. } => m.tool_call_id,
        Change::ResultText { part: Some(k), .. } => match part(*k) {
            Some(Part::ToolResult { tool_use_id, .. }) => Some(*tool_use_id),
            _ => None,
        },
        Change::Arguments {
            call: CallAt::Part(k),
            ..
        } => match part(*k) {
            Some(Part::ToolUse(c)) => Some(c.id),
            _ => None,
        },
        Change::Arguments {
            call: CallAt::ToolCalls(j),
            ..
        } => m.tool_calls.get(*j).map(|c| c.id),
        Change::Image { .. } | Change::Text { .. } => None,
    }
}

/// The stand-in of a masked observation: its first line (the return code, say) and its size.
fn observation_placeholder(text: &str, tokens: u32) -> String {
    let first: String = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .chars()
        .take(120)
        .collect();
    format!(
        "{}\n[output pruned to save context: {} bytes (~{} tokens)]",
        first.trim_end(),
        group_sep(text.len()),
        group_sep(tokens as usize)
    )
}

/// Whether the history uses structured tool calls anywhere.
fn has_structured_calls(msgs: &[Message<'_>]) -> bool {
    msgs.iter()
        .any(|m| m.has_tool_calls() || m.result_ids().next().is_some())
}

/// The mask edits of a region: prune's plan filtered by the knobs, plus observation masking
/// and thinking drops. `protect_first_n` / `protect_tail_tokens` / `min_tail` bound the region
/// as in prune.
#[allow(clippy::too_many_arguments)]
fn find_mask_edits(
    msgs: &[Message<'_>],
    est: &Estimator,
    costs: &[u32],
    legal: &[bool],
    opt: &MaskOptions,
    pinned: &HashSet<usize>,
    protect_first_n: usize,
    protect_tail_tokens: u64,
    min_tail: usize,
    soft_ceiling: f64,
    cache_block_tokens: u64,
) -> Vec<MaskEdit> {
    let popt = PruneOptions {
        protect_tail_tokens,
        protect_first_n,
        min_tail,
        soft_ceiling,
        tool_result_max_tokens: opt.tool_result_max_tokens,
        arguments_max_chars: opt.arguments_max_chars,
        prune_images: opt.prune_images,
        dedupe: opt.dedupe,
        cache_block_tokens,
    };
    let p = prune::plan_with(msgs, est, costs, legal, &popt);
    let (names, order) = calls_in_order(msgs);
    let kept_ids: HashSet<&str> = order
        .iter()
        .rev()
        .take(opt.keep_tool_uses)
        .copied()
        .collect();
    let excluded = |id: Option<&str>| -> bool {
        match id {
            Some(id) => {
                kept_ids.contains(id)
                    || names
                        .get(id)
                        .is_some_and(|n| opt.exclude_tools.iter().any(|x| x == n))
            }
            None => false,
        }
    };
    let mut out: Vec<MaskEdit> = Vec::new();
    let mut cleared: HashSet<&str> = HashSet::new();
    for (e, (idx, change)) in p.edits.into_iter().zip(p.changes) {
        if pinned.contains(&idx) {
            continue;
        }
        let id = edit_call_id(msgs, idx, &change);
        if excluded(id) {
            continue;
        }
        if matches!(change, Change::ResultText { .. }) {
            if let Some(id) = id {
                cleared.insert(id);
            }
        }
        out.push(MaskEdit::written(e, change));
    }
    let end = prune::prune_end(costs, p.protected_from, cache_block_tokens, legal);
    let first = protect_first_n.min(end);
    if opt.clear_tool_inputs && !cleared.is_empty() {
        let already: HashSet<(usize, CallAt)> = out
            .iter()
            .filter_map(|e| match e {
                MaskEdit::Change {
                    index,
                    change: Change::Arguments { call, .. },
                    ..
                } => Some((*index, *call)),
                _ => None,
            })
            .collect();
        for (i, m) in msgs.iter().enumerate().take(end).skip(first) {
            if pinned.contains(&i) {
                continue;
            }
            for (j, c) in m.tool_calls.iter().enumerate() {
                let call = CallAt::ToolCalls(j);
                if cleared.contains(c.id) && !already.contains(&(i, call)) {
                    let json = shrink_json(&c.arguments, CLEARED_INPUT_CHARS);
                    if json != *c.arguments {
                        out.extend(writable(msgs, i, Change::Arguments { call, json }));
                    }
                }
            }
            if let Content::Parts(ps) = &m.content {
                for (j, p) in ps.iter().enumerate() {
                    if let Part::ToolUse(c) = p {
                        let call = CallAt::Part(j);
                        if cleared.contains(c.id) && !already.contains(&(i, call)) {
                            let json = shrink_json(&c.arguments, CLEARED_INPUT_CHARS);
                            if json != *c.arguments {
                                out.extend(writable(msgs, i, Change::Arguments { call, json }));
                            }
                        }
                    }
                }
            }
        }
    }
    if opt.mask_observations && !has_structured_calls(msgs) {
        for i in first.max(1)..end {
            let m = &msgs[i];
            if pinned.contains(&i)
                || Turn::of(m) != Turn::User
                || Turn::of(&msgs[i - 1]) != Turn::Assistant
                || costs[i] <= opt.tool_result_max_tokens
            {
                continue;
            }
            // Plain text, as a string or as text blocks only (replaced by a string).
            let text: Option<Cow<'_, str>> = match &m.content {
                Content::Text(t) => Some(Cow::Borrowed(t.as_ref())),
                Content::Parts(ps)
                    if !ps.is_empty() && ps.iter().all(|p| matches!(p, Part::Text(_))) =>
                {
                    Some(Cow::Owned(
                        ps.iter()
                            .filter_map(|p| match p {
                                Part::Text(t) => Some(t.as_ref()),
                                _ => None,
                            })
                            .collect::<Vec<_>>()
                            .join("\n"),
                    ))
                }
                _ => None,
            };
            if let Some(t) = text {
                if own_summary(m).is_none() {
                    let text = observation_placeholder(&t, costs[i]);
                    out.extend(writable(msgs, i, Change::Text { text }));
                }
            }
        }
    }
    if let Some(keep) = opt.keep_thinking_turns {
        // Thinking of older turns goes whole (Anthropic drops it from earlier turns anyway);
        // the last `keep` turns (at least the current one) keep theirs byte-identical.
        let with_thinking: Vec<usize> = msgs
            .iter()
            .enumerate()
            .filter(|(_, m)| {
                matches!(&m.content, Content::Parts(ps) if ps.iter().any(|p| matches!(p, Part::Thinking { .. } | Part::EncryptedReasoning(_))))
            })
            .map(|(i, _)| i)
            .collect();
        let keep = keep.max(1);
        let cut = with_thinking.len().saturating_sub(keep);
        for &i in &with_thinking[..cut] {
            // The protected head stays byte-identical; the tail pass protects all before the
            // tail this way, and an edit there would be priced against the wrong slice.
            // Only formats whose thinking is a block of the message's own content array can
            // drop it (a Responses reasoning item is an item of its own, chat's a field).
            let block_format =
                crate::wire::dialect_of(msgs[i].wire).is_some_and(|d| d.thinking_in_content);
            if !block_format
                || i < protect_first_n
                || pinned.contains(&i)
                || Turn::of(&msgs[i]) != Turn::Assistant
            {
                continue;
            }
            let Content::Parts(ps) = &msgs[i].content else {
                continue;
            };
            let drops: Vec<usize> = ps
                .iter()
                .enumerate()
                .filter(|(_, p)| matches!(p, Part::Thinking { .. } | Part::EncryptedReasoning(_)))
                .map(|(j, _)| j)
                .collect();
            // A message left without any content would be rejected: keep it whole then.
            if drops.len() < ps.len() || !msgs[i].tool_calls.is_empty() {
                out.extend(
                    drops
                        .into_iter()
                        .map(|part| MaskEdit::DropPart { index: i, part }),
                );
            }
        }
    }
    if opt.recoverable {
        out = crate::recall::recoverable_edits(msgs, est, costs, &names, out);
    }
    out
}

fn priced(
    msgs: &[Message<'_>],
    est: &Estimator,
    costs: &[u32],
    edits: Vec<MaskEdit>,
) -> Vec<PricedEdit> {
    edits
        .into_iter()
        .map(|edit| {
            let i = edit.index();
            let after = est.message(&edited(&msgs[i], &edit));
            PricedEdit {
                saved: costs[i].saturating_sub(after),
                edit,
            }
        })
        .collect()
}

/// The history a plan describes, with `summary` written where the plan places it: the head, the
/// messages of the middle kept verbatim, the summary (a message of its own, or a text block
/// merged into the message the plan names), then the tail. The Compactor writes the same in
/// each wire format's own shape; this is the format-neutral view its checks and tests verify.
pub fn assemble<'a>(msgs: &[Message<'a>], p: &Plan, summary: &'a str) -> Vec<Message<'a>> {
    let mut out: Vec<Message<'a>> = msgs[..p.head_end].to_vec();
    out.extend(p.kept.iter().map(|&i| msgs[i].clone()));
    match p.placement {
        Placement::Insert(t) => {
            let role = if t == Turn::Assistant {
                "assistant"
            } else {
                "user"
            };
            out.push(Message::text(role, summary));
            out.extend(msgs[p.tail_start..].iter().cloned());
        }
        Placement::Merge { index, at_start } => {
            let base_len = out.len();
            out.extend(msgs[p.tail_start..].iter().cloned());
            let pos = if index < p.head_end {
                index
            } else if let Some(k) = p.kept.iter().position(|&i| i == index) {
                p.head_end + k
            } else {
                base_len + index - p.tail_start
            };
            let m = &mut out[pos];
            let block = Part::Text(Cow::Borrowed(summary));
            m.content = match std::mem::take(&mut m.content) {
                Content::Parts(mut ps) => {
                    if at_start {
                        ps.insert(0, block)
                    } else {
                        ps.push(block)
                    }
                    Content::Parts(ps)
                }
                Content::Text(t) => Content::Parts(if at_start {
                    vec![block, Part::Text(t)]
                } else {
                    vec![Part::Text(t), block]
                }),
                Content::None => Content::Parts(vec![block]),
            };
        }
    }
    out
}

/// Plan a compaction of `msgs`.
pub fn plan(msgs: &[Message<'_>], est: &Estimator, opt: &PlanOptions) -> Plan {
    plan_priced(msgs, est, &est.each(msgs), opt)
}

/// As [`plan`], with the messages' costs (`est.each(msgs)`) a caller already has (the
/// bindings price while reading).
pub fn plan_priced(
    msgs: &[Message<'_>],
    est: &Estimator,
    costs: &[u32],
    opt: &PlanOptions,
) -> Plan {
    let n = msgs.len();
    let legal = legal_cuts(msgs);
    let msg_tokens: u64 = costs.iter().map(|&c| u64::from(c)).sum();
    let tokens_before = msg_tokens + opt.overhead_tokens;
    let pinned: HashSet<usize> = opt.pinned.iter().copied().filter(|&i| i < n).collect();

    // Head: the first messages, and the task (first user request) whatever protect_first_n.
    let first_request = msgs
        .iter()
        .position(|m| Turn::of(m) == Turn::User && m.result_ids().next().is_none());
    let mut head_end = opt.protect_first_n.min(n);
    if let Some(f) = first_request {
        head_end = head_end.max(f + 1);
    }
    while head_end < n && !legal[head_end] {
        head_end += 1;
    }

    // Masking: the region between the head and the tail walk's protected tail.
    let edits = find_mask_edits(
        msgs,
        est,
        costs,
        &legal,
        &opt.mask,
        &pinned,
        head_end,
        opt.tail_tokens,
        opt.min_tail,
        opt.soft_ceiling,
        opt.mask.cache_block_tokens,
    );
    let mask_edits = priced(msgs, est, costs, edits);
    let tokens_after_mask = costs_with(msgs, est, costs, &mask_edits) + opt.overhead_tokens;

    let mut out = Plan {
        costs: costs.to_vec(),
        tokens_before,
        mask_edits,
        tokens_after_mask,
        head_end,
        tail_start: head_end,
        kept: Vec::new(),
        folded: Vec::new(),
        previous_summary: None,
        placement: Placement::Insert(Turn::User),
        tail_edits: Vec::new(),
        summary_tokens: 0,
        fixed_tokens: tokens_before,
        seams: Vec::new(),
        reason: None,
    };
    let costs = &out.costs;
    if n < head_end + opt.min_tail + 1 {
        out.reason = Some(format!(
            "too short to compact: {n} messages, the head keeps {head_end} and the tail at least {}",
            opt.min_tail
        ));
        return out;
    }
    let head_cost: u64 = costs[..head_end].iter().map(|&c| u64::from(c)).sum();
    let special = |i: usize| pinned.contains(&i) || is_server_compaction(&msgs[i]);
    let kept_upper: u64 = (head_end..n)
        .filter(|&i| special(i))
        .map(|i| u64::from(costs[i]))
        .sum();
    let room = opt
        .budget_tokens
        .saturating_sub(opt.overhead_tokens + head_cost + kept_upper + opt.summary_tokens);
    // The walk may overshoot its budget by the soft ceiling: leave room for that.
    let tail_budget = opt
        .tail_tokens
        .min((room as f64 / opt.soft_ceiling.max(1.0)) as u64);
    let topt = TailOptions {
        budget_tokens: tail_budget,
        protect_first_n: head_end,
        min_tail: opt.min_tail,
        soft_ceiling: opt.soft_ceiling,
    };
    let mut tail_start = find_tail_start(costs, &legal, &topt);
    if tail_start <= head_end {
        out.reason =
            Some("nothing to fold: the head and the protected tail cover the history".into());
        return out;
    }

    // Kept groups of the middle, each a whole tool group, extended back while its first
    // message would share a role with what precedes it in the output.
    let group_of = |i: usize| -> (usize, usize) {
        let mut a = i;
        while a > head_end && !legal[a] {
            a -= 1;
        }
        let mut b = i + 1;
        while b < n && !legal[b] {
            b += 1;
        }
        (a, b)
    };
    let build_kept = |tail_start: usize| -> Vec<(usize, usize)> {
        let mut segs: Vec<(usize, usize)> = Vec::new();
        for i in head_end..tail_start {
            if !special(i) {
                continue;
            }
            let (a, b) = group_of(i);
            let b = b.min(tail_start);
            match segs.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => segs.push((a, b)),
            }
        }
        // Alternation at each seam: extend a segment back to earlier legal cuts.
        let mut k = 0;
        while k < segs.len() {
            let prev_end = if k == 0 { head_end } else { segs[k - 1].1 };
            let prev_turn = (prev_end > 0).then(|| seat(opt.format, &msgs[prev_end - 1]));
            let (mut a, b) = segs[k];
            while a > prev_end && prev_turn.is_some_and(|t| collide(t, seat(opt.format, &msgs[a])))
            {
                a -= 1;
                while a > prev_end && !legal[a] {
                    a -= 1;
                }
            }
            segs[k] = (a, b);
            if k > 0 && a <= segs[k - 1].1 {
                segs[k - 1].1 = b;
                segs.remove(k);
            } else {
                k += 1;
            }
        }
        segs
    };

    // The summary's role: no collision with the message before it (the last kept one or the
    // head's last) nor with the tail's first; strict formats want a user turn first.
    let choose = |segs: &[(usize, usize)], t: usize| -> Option<Turn> {
        let prev_idx = segs.last().map(|s| s.1).unwrap_or(head_end);
        let prev = (prev_idx > 0).then(|| seat(opt.format, &msgs[prev_idx - 1]));
        let first_turn = (0..prev_idx).all(|i| Turn::of(&msgs[i]) == Turn::System);
        // An empty tail (min_tail 0) has no first message to collide with.
        let next = (t < n).then(|| seat(opt.format, &msgs[t]));
        [Turn::User, Turn::Assistant].into_iter().find(|&c| {
            let user_first_ok = c == Turn::User || !first_turn || !opt.format.strict_turns();
            !prev.is_some_and(|p| collide(p, c))
                && !next.is_some_and(|x| collide(c, x))
                && user_first_ok
        })
    };
    let tail_cost = |t: usize| -> u64 { costs[t..].iter().map(|&c| u64::from(c)).sum() };
    let mut segs = build_kept(tail_start);
    let mut placement = choose(&segs, tail_start).map(Placement::Insert);
    if placement.is_none() {
        // Move the tail start to a nearby legal cut where the roles work out: earlier first
        // (the tail keeps more) while it stays within the tail's ceiling, then later.
        let ceiling = (tail_budget as f64 * opt.soft_ceiling).max(tail_cost(tail_start) as f64);
        let earlier = (head_end + 1..tail_start)
            .rev()
            .filter(|&t| legal[t])
            .take(3)
            .filter(|&t| tail_cost(t) as f64 <= ceiling);
        let later = (tail_start + 1..=n.saturating_sub(opt.min_tail))
            .filter(|&t| legal[t])
            .take(3);
        for t in earlier.chain(later) {
            let s = build_kept(t);
            if s.last().is_some_and(|l| l.1 >= t) {
                continue;
            }
            if let Some(turn) = choose(&s, t) {
                tail_start = t;
                segs = s;
                placement = Some(Placement::Insert(turn));
                break;
            }
        }
    }
    // Merge into a neighbour instead of a same-role pair: the tail's first message (the head
    // stays byte-identical), else the message before; never into a turn with thinking (its
    // signed blocks stay as they are), a tool result or a Responses item without content.
    let mergeable = |m: &Message<'_>, at_start: bool| -> bool {
        let parts_ok = match &m.content {
            Content::Parts(ps) => !ps.iter().any(|p| {
                matches!(p, Part::Thinking { .. } | Part::EncryptedReasoning(_))
                    || (at_start && matches!(p, Part::ToolResult { .. }))
            }),
            Content::None => opt.format == WireFormat::Chat,
            Content::Text(_) => true,
        };
        matches!(Turn::of(m), Turn::User | Turn::Assistant) && parts_ok
    };
    // Pinned messages, server compaction items and the head (the task stays byte-identical,
    // and so does the prompt cache's prefix) are never merged into: the tail's first message
    // takes the summary at its start, else the first user turn of the tail that can carry a
    // text after its own blocks (a tool-result turn of a thinking tool loop).
    let merge_into = |tail_start: usize| -> Option<Placement> {
        if !special(tail_start) && mergeable(&msgs[tail_start], true) {
            return Some(Placement::Merge {
                index: tail_start,
                at_start: true,
            });
        }
        (tail_start..n)
            .find(|&i| {
                !special(i) && Turn::of(&msgs[i]) == Turn::User && mergeable(&msgs[i], false)
            })
            .map(|index| Placement::Merge {
                index,
                at_start: false,
            })
    };
    let placement = match placement.or_else(|| merge_into(tail_start)) {
        Some(p) => p,
        None => {
            // No seat and no message that may carry the summary (a pinned turn opens a tail of
            // tool results, say): a valid request comes before the tail's ceiling, so the tail
            // keeps more, from the nearest earlier legal cut whose roles work out (the budget
            // check and the Compactor's degrading steps follow).
            let found = (head_end + 1..tail_start)
                .rev()
                .filter(|&t| legal[t])
                .find_map(|t| {
                    let s = build_kept(t);
                    if s.last().is_some_and(|l| l.1 >= t) {
                        return None;
                    }
                    let seat = choose(&s, t).map(Placement::Insert);
                    seat.or_else(|| merge_into(t)).map(|p| (t, s, p))
                });
            match found {
                Some((t, s, p)) => {
                    tail_start = t;
                    segs = s;
                    p
                }
                None => Placement::Insert(Turn::User),
            }
        }
    };

    let mut kept = Vec::new();
    for &(a, b) in &segs {
        kept.extend(a..b);
    }
    let kept_set: HashSet<usize> = kept.iter().copied().collect();
    let folded: Vec<usize> = (head_end..tail_start)
        .filter(|i| !kept_set.contains(i))
        .collect();
    if folded.is_empty() {
        out.reason = Some("nothing to fold: every message of the middle is pinned".into());
        out.tail_start = tail_start;
        out.kept = kept;
        return out;
    }
    let mut previous: Vec<&str> = Vec::new();
    for &i in &folded {
        if let Some(s) =
            crate::summary_trust::trusted_summary(msgs, i, head_end, &opt.trusted_summaries)
        {
            previous.push(s);
        }
    }
    let kept_cost: u64 = kept.iter().map(|&i| u64::from(costs[i])).sum();
    let envelope = match placement {
        Placement::Insert(turn) => {
            let role = if turn == Turn::User {
                "user"
            } else {
                "assistant"
            };
            u64::from(est.message(&Message::text(role, "")))
        }
        Placement::Merge { .. } => 4,
    } + est.text(SUMMARY_OPEN).ceil() as u64
        + est.text(SUMMARY_CLOSE).ceil() as u64
        + 2;
    let mut fixed = opt.overhead_tokens + head_cost + kept_cost + tail_cost(tail_start) + envelope;
    let mut tail_edits = Vec::new();
    let floor = MIN_SUMMARY_TOKENS
        .min(opt.summary_tokens)
        .max(opt.summary_floor.min(opt.summary_tokens));
    if opt.budget_tokens < fixed + floor {
        // The tail's floor alone overflows: mask inside it too (never its last message, never
        // kept tool uses, excluded tools or pinned messages).
        let edits = find_mask_edits(
            msgs, est, costs, &legal, &opt.mask, &pinned, tail_start, 0, 1, 1.0, 0,
        );
        tail_edits = priced(msgs, est, costs, edits);
        let saved: u64 = tail_cost(tail_start)
            - (costs_with(
                &msgs[tail_start..],
                est,
                &costs[tail_start..],
                &shifted(&tail_edits, tail_start),
            ));
        fixed -= saved;
    }
    out.head_end = head_end;
    out.tail_start = tail_start;
    out.summary_tokens = opt
        .summary_tokens
        .min(opt.budget_tokens.saturating_sub(fixed));
    out.fixed_tokens = fixed;
    if out.summary_tokens < MIN_SUMMARY_TOKENS.min(opt.summary_tokens) {
        out.reason = Some(format!(
            "budget {} too small: the head, pinned messages and the last {} messages cost {} tokens, plus at least {} for a summary",
            opt.budget_tokens,
            n - tail_start,
            fixed,
            MIN_SUMMARY_TOKENS.min(opt.summary_tokens)
        ));
    }
    // Output positions: head, kept, [summary], tail.
    let mut seams = Vec::new();
    let mut pos = head_end;
    for &(a, b) in &segs {
        if pos > 0 {
            seams.push(pos);
        }
        pos += b - a;
    }
    match placement {
        Placement::Insert(_) => {
            if pos > 0 {
                seams.push(pos);
            }
            seams.push(pos + 1);
        }
        Placement::Merge { .. } => {
            if pos > 0 {
                seams.push(pos);
            }
        }
    }
    out.seams = seams;
    out.kept = kept;
    out.folded = folded;
    out.previous_summary = (!previous.is_empty()).then(|| previous.join("\n"));
    out.placement = placement;
    out.tail_edits = tail_edits;
    out
}

/// Edits re-indexed relative to `offset` (for pricing a slice); edits before the slice are
/// not part of it and are left out (never wrapped below zero).
fn shifted(edits: &[PricedEdit], offset: usize) -> Vec<PricedEdit> {
    edits
        .iter()
        .filter_map(|e| {
            let mut e = e.clone();
            match &mut e.edit {
                MaskEdit::Change { index, .. } | MaskEdit::DropPart { index, .. } => {
                    *index = index.checked_sub(offset)?
                }
            }
            Some(e)
        })
        .collect()
}

/// The summary as a whole message of the format, as compact JSON.
pub fn summary_message_json(format: WireFormat, turn: Turn, text: &str) -> String {
    format.text_message_json(turn == Turn::Assistant, text)
}

/// A text block of the format carrying `text`, as compact JSON (for merging into a message).
pub fn text_block_json(format: WireFormat, turn: Turn, text: &str) -> String {
    format.text_block_json(turn == Turn::Assistant, text)
}

/// Why a finished history would be rejected (or miss its budget).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A tool call without its result.
    OrphanCall { index: usize, id: String },
    /// A tool result without its call (or not right after it where the format requires).
    OrphanResult { index: usize, id: String },
    /// Message `index` shares its role with message `index - 1` at a seam.
    RoleCollision { index: usize },
    /// The first non-system turn is not the user's (Anthropic, Gemini, Bedrock).
    FirstTurnNotUser { index: usize },
    /// Arguments of call `call` of message `index` are not valid JSON.
    InvalidArguments { index: usize, call: usize },
    /// A message with no content at all where the format needs some.
    EmptyMessage { index: usize },
    /// Estimated tokens over the budget.
    OverBudget { tokens: u64, budget: u64 },
}

impl Failure {
    /// Short kind name (the Python error's `.failures` use it).
    pub fn kind(&self) -> &'static str {
        match self {
            Failure::OrphanCall { .. } => "orphan_call",
            Failure::OrphanResult { .. } => "orphan_result",
            Failure::RoleCollision { .. } => "role_collision",
            Failure::FirstTurnNotUser { .. } => "first_turn_not_user",
            Failure::InvalidArguments { .. } => "invalid_arguments",
            Failure::EmptyMessage { .. } => "empty_message",
            Failure::OverBudget { .. } => "over_budget",
        }
    }

    /// The message index it concerns (None for the budget).
    pub fn index(&self) -> Option<usize> {
        match self {
            Failure::OrphanCall { index, .. }
            | Failure::OrphanResult { index, .. }
            | Failure::RoleCollision { index }
            | Failure::FirstTurnNotUser { index }
            | Failure::InvalidArguments { index, .. }
            | Failure::EmptyMessage { index } => Some(*index),
            Failure::OverBudget { .. } => None,
        }
    }

    /// A readable sentence.
    pub fn describe(&self) -> String {
        match self {
            Failure::OrphanCall { index, id } => {
                format!("message {index}: tool call {id:?} has no result")
            }
            Failure::OrphanResult { index, id } => {
                format!("message {index}: tool result {id:?} has no call before it")
            }
            Failure::RoleCollision { index } => {
                format!("messages {} and {index} share a role", index - 1)
            }
            Failure::FirstTurnNotUser { index } => {
                format!("message {index}: the first turn must be the user's")
            }
            Failure::InvalidArguments { index, call } => {
                format!("message {index}: arguments of call {call} are not valid JSON")
            }
            Failure::EmptyMessage { index } => format!("message {index}: no content"),
            Failure::OverBudget { tokens, budget } => {
                format!("{tokens} tokens exceed the budget of {budget}")
            }
        }
    }
}

/// The check of a finished history: its tokens (messages + overhead) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    pub tokens: u64,
    pub failures: Vec<Failure>,
}

/// Verify a history about to be sent. Roles are checked at `seams` (output positions joining
/// messages that were not neighbours) and for the first turn; pairs, JSON and the budget
/// everywhere.
pub fn verify(
    msgs: &[Message<'_>],
    format: WireFormat,
    est: &Estimator,
    overhead_tokens: u64,
    budget: Option<u64>,
    seams: &[usize],
) -> Verification {
    let mut failures = check(msgs, format, seams);
    let tokens = msgs.iter().map(|m| u64::from(est.message(m))).sum::<u64>() + overhead_tokens;
    if let Some(b) = budget {
        if tokens > b {
            failures.push(Failure::OverBudget { tokens, budget: b });
        }
    }
    Verification { tokens, failures }
}

/// What `verify` finds besides the budget: pairs, roles at `seams` and for the first turn, the
/// JSON of every arguments string, empty messages. Prices nothing (a plan reports its input's
/// own failures with it, so they are never read twice).
pub fn check(msgs: &[Message<'_>], format: WireFormat, seams: &[usize]) -> Vec<Failure> {
    let mut failures = Vec::new();
    let n = msgs.len();
    // Pairs.
    if format.results_in_next_message() {
        for (i, m) in msgs.iter().enumerate() {
            let calls: Vec<&str> = m.call_ids().collect();
            if !calls.is_empty() {
                let answered: HashSet<&str> = msgs
                    .get(i + 1)
                    .map(|r| r.result_ids().collect())
                    .unwrap_or_default();
                for id in calls {
                    if !answered.contains(id) {
                        failures.push(Failure::OrphanCall {
                            index: i,
                            id: id.to_string(),
                        });
                    }
                }
            }
            let results: Vec<&str> = m.result_ids().collect();
            if !results.is_empty() {
                let called: HashSet<&str> = if i > 0 {
                    msgs[i - 1].call_ids().collect()
                } else {
                    HashSet::new()
                };
                for id in results {
                    if !called.contains(id) {
                        failures.push(Failure::OrphanResult {
                            index: i,
                            id: id.to_string(),
                        });
                    }
                }
            }
        }
    } else {
        // Chat: results in the run of tool messages after the call; Responses: anywhere later.
        let chat = format == WireFormat::Chat;
        let mut open: HashMap<&str, usize> = HashMap::new();
        for (i, m) in msgs.iter().enumerate() {
            for id in m.result_ids() {
                if open.remove(id).is_none() {
                    failures.push(Failure::OrphanResult {
                        index: i,
                        id: id.to_string(),
                    });
                }
            }
            if chat && Turn::of(m) != Turn::Tool && m.result_ids().next().is_none() {
                for (id, &at) in &open {
                    failures.push(Failure::OrphanCall {
                        index: at,
                        id: id.to_string(),
                    });
                }
                open.clear();
            }
            for id in m.call_ids() {
                open.insert(id, i);
            }
        }
        for (id, at) in open {
            // The last message's own calls are the ones being answered now (a history sent
            // for the tool results' turn would end with them): only earlier ones are orphans.
            if at + 1 < n || !chat {
                failures.push(Failure::OrphanCall {
                    index: at,
                    id: id.to_string(),
                });
            }
        }
    }
    // Roles at seams.
    for &p in seams {
        if p > 0 && p < n && collide(seat(format, &msgs[p - 1]), seat(format, &msgs[p])) {
            failures.push(Failure::RoleCollision { index: p });
        }
    }
    if format.strict_turns() {
        if let Some(i) = msgs.iter().position(|m| Turn::of(m) != Turn::System) {
            if Turn::of(&msgs[i]) != Turn::User {
                failures.push(Failure::FirstTurnNotUser { index: i });
            }
        }
    }
    // JSON of every arguments string, and non-empty messages.
    for (i, m) in msgs.iter().enumerate() {
        for (j, c) in m.tool_calls.iter().enumerate() {
            if !is_valid_json(&c.arguments) {
                failures.push(Failure::InvalidArguments { index: i, call: j });
            }
        }
        if let Content::Parts(ps) = &m.content {
            for (j, p) in ps.iter().enumerate() {
                if let Part::ToolUse(c) = p {
                    if !is_valid_json(&c.arguments) {
                        failures.push(Failure::InvalidArguments { index: i, call: j });
                    }
                }
            }
        }
        let empty = match &m.content {
            Content::None => m.tool_calls.is_empty() && m.tool_call_id.is_none(),
            Content::Parts(ps) => ps.is_empty() && m.tool_calls.is_empty(),
            Content::Text(_) => false,
        };
        if empty && format.strict_turns() {
            failures.push(Failure::EmptyMessage { index: i });
        }
    }
    failures
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;
    use crate::provider::Provider;

    fn est() -> Estimator {
        Estimator::new(Provider::OpenAI, "")
    }

    fn call<'a>(id: &'a str, args: &'a str) -> Message<'a> {
        let mut a = Message::empty("assistant");
        a.tool_calls.push(ToolCall {
            id,
            name: "read_file",
            arguments: Cow::Borrowed(args),
        });
        a
    }

    fn result<'a>(id: &'a str, text: &'a str) -> Message<'a> {
        let mut r = Message::empty("tool");
        r.tool_call_id = Some(id);
        r.content = Content::Text(Cow::Borrowed(text));
        r
    }

    const IDS: [&str; 12] = [
        "c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "c10", "c11",
    ];

    fn agent<'a>(big: &'a str) -> Vec<Message<'a>> {
        let mut v = vec![
            Message::text("system", "sys"),
            Message::text("user", "task"),
        ];
        for id in IDS {
            v.push(call(id, "{\"path\":\"a.py\"}"));
            v.push(result(id, big));
        }
        v.push(Message::text("assistant", "done so far"));
        v.push(Message::text("user", "next"));
        // Edits are written in the message's own format: these are OpenAI chat messages.
        for m in &mut v {
            m.wire = crate::wire::Format::OpenAIChat;
        }
        v
    }

    fn options(budget: u64) -> PlanOptions {
        PlanOptions {
            format: WireFormat::Chat,
            budget_tokens: budget,
            overhead_tokens: 3,
            tail_tokens: budget / 3,
            summary_tokens: budget / 8,
            protect_first_n: 1,
            min_tail: 3,
            soft_ceiling: 1.5,
            pinned: Vec::new(),
            mask: MaskOptions::default(),
            trusted_summaries: Vec::new(),
            summary_floor: 0,
        }
    }

    #[test]
    fn head_keeps_the_task_and_tail_never_starts_inside_a_group() {
        let big = "some output line\n".repeat(300);
        let msgs = agent(&big);
        let p = plan(&msgs, &est(), &options(4_000));
        assert_eq!(p.head_end, 2);
        assert!(p.reason.is_none(), "{:?}", p.reason);
        assert!(p.tail_start > 2 && Turn::of(&msgs[p.tail_start]) != Turn::Tool);
        assert_eq!(p.folded.first(), Some(&2));
        assert_eq!(*p.folded.last().unwrap() + 1, p.tail_start);
        assert!(p.summary_tokens >= MIN_SUMMARY_TOKENS);
    }

    #[test]
    fn summary_role_avoids_both_neighbours() {
        // head ends with the user's task; the tail starts with an assistant call: a user
        // summary collides with the head, an assistant one with the tail (double collision).
        let big = "x y z\n".repeat(200);
        let msgs = agent(&big);
        let p = plan(&msgs, &est(), &options(3_000));
        let prev = Turn::User;
        let next = Turn::of(&msgs[p.tail_start]);
        match p.placement {
            Placement::Insert(t) => {
                assert!(
                    !collide(prev, t) && !collide(t, next),
                    "{t:?} between {prev:?} and {next:?}"
                );
            }
            // The tail's first message takes it: the head stays byte-identical.
            Placement::Merge { index, at_start } => assert!(index == p.tail_start && at_start),
        }
    }

    #[test]
    fn strict_formats_merge_rather_than_start_with_an_assistant() {
        // The user's task, then alternating text turns: whatever the tail's first role, the
        // summary never makes two neighbours share a role.
        let mut msgs = vec![Message::text("user", "task")];
        let long = "words ".repeat(400);
        for k in 0..10 {
            msgs.push(Message::text(
                if k % 2 == 0 { "assistant" } else { "user" },
                &long,
            ));
        }
        let mut o = options(2_000);
        o.format = WireFormat::Anthropic;
        let p = plan(&msgs, &est(), &o);
        assert!(p.reason.is_none(), "{:?}", p.reason);
        let next = Turn::of(&msgs[p.tail_start]);
        if let Placement::Insert(t) = p.placement {
            assert!(!collide(Turn::User, t) && !collide(t, next));
        }
    }

    #[test]
    fn pinned_and_server_compaction_items_are_kept() {
        let big = "out\n".repeat(400);
        let mut msgs = agent(&big);
        let mut item = Message::empty("assistant");
        item.content = Content::Parts(vec![Part::Opaque {
            kind: Cow::Borrowed("compaction"),
            media: crate::message::MediaKind::Unknown,
            payload_chars: None,
            wire_chars: 400,
        }]);
        msgs.insert(2, item);
        let mut o = options(4_000);
        o.pinned = vec![6];
        let p = plan(&msgs, &est(), &o);
        assert!(p.kept.contains(&2), "{:?}", p.kept);
        assert!(
            p.kept.contains(&6) && p.kept.contains(&5),
            "group kept whole: {:?}",
            p.kept
        );
        assert!(p.folded.iter().all(|i| !p.kept.contains(i)));
    }

    #[test]
    fn exclude_tools_and_keep_filter_mask_edits() {
        let big = "line\n".repeat(800);
        let msgs = agent(&big);
        let mut o = options(100_000);
        o.tail_tokens = 10;
        let all = plan(&msgs, &est(), &o).mask_edits.len();
        o.mask.exclude_tools = vec!["read_file".into()];
        assert_eq!(plan(&msgs, &est(), &o).mask_edits.len(), 0);
        o.mask.exclude_tools.clear();
        o.mask.keep_tool_uses = 3;
        let kept = plan(&msgs, &est(), &o).mask_edits.len();
        assert!(all > 0 && kept < all, "{kept} vs {all}");
    }

    #[test]
    fn own_summary_is_recognised_and_folded() {
        let big = "o\n".repeat(600);
        let mut msgs = agent(&big);
        let s = format!("{SUMMARY_OPEN}\nolder facts\n{SUMMARY_CLOSE}");
        msgs.insert(2, Message::text("assistant", &s));
        let p = plan(&msgs, &est(), &options(3_000));
        assert_eq!(p.previous_summary.as_deref(), Some("older facts"));
        assert!(p.folded.contains(&2));
    }

    #[test]
    fn verify_finds_orphans_bad_json_collisions_and_budget() {
        let msgs = vec![
            Message::text("user", "task"),
            call("a", "{\"x\": 1"),
            Message::text("user", "hi"),
            Message::text("user", "again"),
            result("b", "r"),
        ];
        let v = verify(&msgs, WireFormat::Chat, &est(), 0, Some(1), &[3]);
        let kinds: Vec<_> = v.failures.iter().map(|f| f.kind()).collect();
        for k in [
            "orphan_call",
            "orphan_result",
            "invalid_arguments",
            "role_collision",
            "over_budget",
        ] {
            assert!(kinds.contains(&k), "{k} missing from {kinds:?}");
        }
        let ok = vec![
            Message::text("user", "task"),
            call("a", "{}"),
            result("a", "r"),
        ];
        assert!(verify(&ok, WireFormat::Chat, &est(), 0, None, &[])
            .failures
            .is_empty());
        let v = verify(&ok[1..], WireFormat::Anthropic, &est(), 0, None, &[]);
        assert!(v.failures.iter().any(|f| f.kind() == "first_turn_not_user"));
    }

    #[test]
    fn summary_json_per_format() {
        assert_eq!(
            summary_message_json(WireFormat::Gemini, Turn::Assistant, "s\n"),
            "{\"role\":\"model\",\"parts\":[{\"text\":\"s\\n\"}]}"
        );
        assert_eq!(
            text_block_json(WireFormat::Responses, Turn::User, "t"),
            "{\"type\":\"input_text\",\"text\":\"t\"}"
        );
    }
}
