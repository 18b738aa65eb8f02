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

use crate::edit_pricing::{costs_with, priced, shifted};
use crate::estimate::Estimator;
use crate::mask_plan::{find_mask_edits, MaskRegion};
use crate::message::{Content, Message, Part};
use crate::server_call_span::ServerSpans;
use crate::shrink_json::is_valid_json;
use crate::summary_placement::Seating;
use crate::tail_walk::{find_tail_start, legal_cuts, TailOptions};

pub use crate::edit_pricing::PricedEdit;
pub use crate::mask_edit::MaskEdit;
pub use crate::mask_plan::MaskOptions;
pub use crate::summary_marker::{own_summary, SUMMARY_CLOSE, SUMMARY_OPEN};
pub use crate::summary_placement::Placement;
use crate::turn::collide;
pub use crate::turn::{seat, Turn};

/// A summary smaller than this (tokens) is not worth writing: the plan masks the tail instead.
pub const MIN_SUMMARY_TOKENS: u64 = 64;

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
    /// Whether the middle's mask edits are found (`mask_edits`, `tokens_after_mask`). A caller
    /// that moves the tail of a plan it already has (the fold is decided: masking is not) asks
    /// without them: on 10,000 messages they are most of the plan's own work.
    pub find_masks: bool,
    /// Whether a previous summary in the fold is the only home of what it stands for (no one
    /// can read the turns behind it again: a digest whose turns were not kept): the summary
    /// carrying it keeps all of its size, up to its share, before the tail gives way; otherwise
    /// half (`CARRIED_FLOOR_DIVISOR`). A plan that cannot make the whole says so as its budget
    /// reason, as for the half: the caller degrades the tail, and plans with the half where
    /// even that misses.
    pub carried_whole: bool,
    /// The caller never folds (`strategy="mask"`): the masked middle is what it sends whether
    /// or not it meets the budget, so its placeholders always name what their outputs held.
    pub masks_only: bool,
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
            find_masks: true,
            carried_whole: false,
            masks_only: false,
        }
    }
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
    /// The folded message that holds the previous summary, when exactly one does: a caller that
    /// kept the messages that summary stood for may have them read in its place.
    pub previous_at: Option<usize>,
    /// Whether that message holds nothing but the summary (else the summary was merged into a
    /// turn, whose own words stay in the fold).
    pub previous_alone: bool,
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
    /// Where a tail may open (`tail_walk::legal_cuts`, `n + 1` entries): a caller that moves
    /// the tail reads the openings here instead of walking the history again.
    pub legal: Vec<bool>,
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
            let lead = crate::summary_placement::leading_thinking(m);
            m.content = match std::mem::take(&mut m.content) {
                Content::Parts(mut ps) => {
                    if at_start {
                        ps.insert(lead, block)
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

impl Plan {
    /// A plan that folds nothing (yet): everything kept, the mask edits alone.
    fn unfolded(
        costs: &[u32],
        tokens_before: u64,
        mask_edits: Vec<PricedEdit>,
        tokens_after_mask: u64,
        head_end: usize,
        legal: Vec<bool>,
    ) -> Plan {
        Plan {
            costs: costs.to_vec(),
            tokens_before,
            mask_edits,
            tokens_after_mask,
            head_end,
            tail_start: head_end,
            kept: Vec::new(),
            folded: Vec::new(),
            previous_summary: None,
            previous_at: None,
            previous_alone: false,
            placement: Placement::Insert(Turn::User),
            tail_edits: Vec::new(),
            summary_tokens: 0,
            fixed_tokens: tokens_before,
            seams: Vec::new(),
            reason: None,
            legal,
        }
    }
}

/// The fewest last messages masking leaves whole, whatever the fold's floor (`min_tail`): the
/// output the model is reading and the round before it. The Compactor's fold keeps two at least
/// (stop 83); with masking down to two as well, the SWE agent loops of the shared data kept 4,614
/// of the 6,073 tokens the agent used next, 4,623 with this floor (`tools/future_report.py
/// --loop`).
pub const MASK_MIN_TAIL: usize = 3;

/// Plan a compaction of `msgs`.
pub fn plan(msgs: &[Message<'_>], est: &Estimator, opt: &PlanOptions) -> Plan {
    plan_priced(msgs, est, &est.each(msgs), opt)
}

/// As [`plan`], with the messages' costs (`est.each(msgs)`) a caller already has (the
/// bindings price while reading). The steps: the head, the mask edits of the middle, the tail
/// walk, the summary's seat, then what is folded and the room the summary gets.
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
    let head_end = head_end(msgs, &legal, opt.protect_first_n);

    // Masking: the region between the head and the tail walk's protected tail.
    let region = MaskRegion {
        protect_first_n: head_end,
        protect_tail_tokens: opt.tail_tokens,
        min_tail: opt.min_tail.max(MASK_MIN_TAIL),
        soft_ceiling: opt.soft_ceiling,
        cache_block_tokens: opt.mask.cache_block_tokens,
    };
    let (mask_edits, tokens_after_mask) = if opt.find_masks {
        let masked = |mentions: bool| {
            let edits = find_mask_edits(
                msgs, est, costs, &legal, &opt.mask, &pinned, &region, mentions,
            );
            let mask_edits = priced(msgs, est, costs, edits);
            let after = costs_with(msgs, est, costs, &mask_edits) + opt.overhead_tokens;
            (mask_edits, after)
        };
        // Placeholders name what their outputs held only where masking alone answers (within
        // the budget, or a caller that never folds): elsewhere the middle is folded and no one
        // reads them (on 10,000 messages, reading every output's identifiers was a quarter of
        // the compaction).
        let (edits, after) = masked(false);
        if (after <= opt.budget_tokens || opt.masks_only) && !edits.is_empty() {
            masked(true)
        } else {
            (edits, after)
        }
    } else {
        (Vec::new(), tokens_before)
    };

    let mut out = Plan::unfolded(
        costs,
        tokens_before,
        mask_edits,
        tokens_after_mask,
        head_end,
        legal.clone(),
    );
    if n < head_end + opt.min_tail + 1 {
        out.reason = Some(format!(
            "too short to compact: {n} messages, the head keeps {head_end} and the tail at least {}",
            opt.min_tail
        ));
        return out;
    }
    let seating = Seating {
        msgs,
        legal: &legal,
        format: opt.format,
        head_end,
        pinned: &pinned,
        min_tail: opt.min_tail,
    };

    // The tail walk, in the room the head, the pinned messages and the summary leave.
    let head_cost = token_sum(&costs[..head_end]);
    let kept_upper: u64 = (head_end..n)
        .filter(|&i| seating.special(i))
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
    let mut walked = find_tail_start(costs, &legal, &topt);
    // The model is acting on the last user turn (its response, calls awaiting or just given
    // their results, is all that follows): the tail opens with that turn. A tail of the
    // response alone answered a request the history no longer held (the summary's room, tight
    // where only that much tail fits, had no line for it).
    if let Some(u) = turn_before_last_response(msgs) {
        if u > head_end && u < walked && legal[u] {
            walked = u;
        }
    }
    if walked <= head_end {
        out.reason =
            Some("nothing to fold: the head and the protected tail cover the history".into());
        return out;
    }

    let ceiling = (tail_budget as f64 * opt.soft_ceiling).max(token_sum(&costs[walked..]) as f64);
    let seat = seating.place(costs, walked, ceiling);
    let tail_start = seat.tail_start;
    let kept: Vec<usize> = seat.segments.iter().flat_map(|&(a, b)| a..b).collect();
    let kept_set: HashSet<usize> = kept.iter().copied().collect();
    let folded: Vec<usize> = (head_end..tail_start)
        .filter(|i| !kept_set.contains(i))
        .collect();
    out.tail_start = tail_start;
    if folded.is_empty() {
        out.reason = Some("nothing to fold: every message of the middle is pinned".into());
        out.kept = kept;
        return out;
    }
    let folded_set: HashSet<usize> = folded.iter().copied().collect();
    let holders: Vec<(usize, &str)> =
        crate::summary_trust::trusted_summaries(msgs, head_end, &opt.trusted_summaries)
            .into_iter()
            .filter(|(i, _)| folded_set.contains(i))
            .collect();
    let previous: Vec<&str> = holders.iter().map(|&(_, body)| body).collect();
    if let [(i, _)] = holders.as_slice() {
        out.previous_at = Some(*i);
        out.previous_alone = crate::summary_marker::without_summary(&msgs[*i]).is_none();
    }
    let fixed = head_cost
        + token_sum(kept.iter().map(|&i| &costs[i]))
        + token_sum(&costs[tail_start..])
        + opt.overhead_tokens
        + summary_envelope(est, seat.placement);
    let previous_summary = (!previous.is_empty()).then(|| previous.join("\n"));
    // The standing rules of the fold are the summary's floor: a room below them would drop a
    // rule (priced only when the summary is squeezed below its planned share: its share holds
    // them otherwise, and on a long fold the rules' walk is not free).
    let squeezed = opt.summary_tokens > opt.budget_tokens.saturating_sub(fixed);
    let rules = if squeezed {
        crate::digest::rules_floor_tokens(msgs, &folded, previous_summary.as_deref(), est)
    } else {
        0
    };
    // A previous summary in the fold is the only home of everything before it: the tail gives
    // way (fewer messages, cuts, all recoverable) before the summary carrying it is squeezed
    // under half its share. (A SWE run's second compaction kept two 2,500-3,400-token thoughts
    // whole in the tail and wrote 184 tokens where the previous summary had 3,283.)
    // (All of it where it is the only home of what it stands for: `PlanOptions::carried_whole`.)
    let divisor = if opt.carried_whole {
        1
    } else {
        CARRIED_FLOOR_DIVISOR
    };
    let carried = match (&previous_summary, squeezed) {
        (Some(p), true) => (est.text(p).ceil() as u64).min(opt.summary_tokens) / divisor,
        _ => 0,
    };
    let must_keep = rules.max(carried);
    let floor = MIN_SUMMARY_TOKENS.max(must_keep).min(opt.summary_tokens);
    let (tail_edits, fixed) = room_for_summary(
        msgs, est, costs, &legal, &pinned, opt, tail_start, fixed, must_keep,
    );
    out.summary_tokens = opt
        .summary_tokens
        .min(opt.budget_tokens.saturating_sub(fixed));
    out.fixed_tokens = fixed;
    if out.summary_tokens < floor {
        let what = if carried > rules.max(MIN_SUMMARY_TOKENS) {
            "for the summary carrying the previous one"
        } else if rules > MIN_SUMMARY_TOKENS {
            "for the summary's standing rules"
        } else {
            "for a summary"
        };
        out.reason = Some(format!(
            "budget {} too small: the head, pinned messages and the last {} messages cost {} tokens, plus at least {floor} {what}",
            opt.budget_tokens,
            n - tail_start,
            fixed,
        ));
    }
    out.seams = seating.seams(&seat.segments, seat.placement);
    out.kept = kept;
    out.folded = folded;
    out.previous_summary = previous_summary;
    out.placement = seat.placement;
    out.tail_edits = tail_edits;
    out
}

/// The summary carrying a previous one keeps at least this fraction of its share (or of the
/// previous summary, when that is smaller) before the tail gives way.
const CARRIED_FLOOR_DIVISOR: u64 = 2;

fn token_sum<'c>(costs: impl IntoIterator<Item = &'c u32>) -> u64 {
    costs.into_iter().map(|&c| u64::from(c)).sum()
}

/// The head kept verbatim: the first `protect_first_n` messages and the task (the first user
/// request) whatever `protect_first_n` says, ending on a legal cut.
fn head_end(msgs: &[Message<'_>], legal: &[bool], protect_first_n: usize) -> usize {
    let n = msgs.len();
    let first_request = msgs
        .iter()
        .position(|m| Turn::of(m) == Turn::User && m.result_ids().next().is_none());
    let mut end = protect_first_n.min(n);
    if let Some(f) = first_request {
        end = end.max(f + 1);
    }
    while end < n && !legal[end] {
        end += 1;
    }
    end
}

/// Tokens of the summary besides its text: its message envelope (or a merged block's few) and
/// the markers around it.
fn summary_envelope(est: &Estimator, placement: Placement) -> u64 {
    let around = match placement {
        Placement::Insert(turn) => {
            let role = if turn == Turn::User {
                "user"
            } else {
                "assistant"
            };
            u64::from(est.message(&Message::text(role, "")))
        }
        Placement::Merge { .. } => 4,
    };
    around + est.text(SUMMARY_OPEN).ceil() as u64 + est.text(SUMMARY_CLOSE).ceil() as u64 + 2
}

/// The last user turn when all that follows it is the model's response to it, making calls:
/// one run of the model's items, then results of its calls at most (no later turn of the
/// model). None otherwise (a history that ends on a user turn, a plain answer, or a tool loop
/// of several responses).
fn turn_before_last_response(msgs: &[Message<'_>]) -> Option<usize> {
    let u = crate::degrade::tail_floor(msgs).1?;
    let rest = &msgs[u + 1..];
    if Turn::of(rest.first()?) != Turn::Assistant {
        return None;
    }
    let mut results = false;
    for m in rest {
        if Turn::of(m) == Turn::Assistant {
            if results {
                return None;
            }
        } else if m.result_ids().next().is_some() {
            results = true;
        } else {
            return None;
        }
    }
    rest.iter().any(|m| m.has_tool_calls()).then_some(u)
}

/// When the tail's floor alone leaves less than the summary's floor, mask inside the tail too
/// (never its last message, never kept tool uses, excluded tools or pinned messages). `must_keep`:
/// the tokens the summary must keep (its standing rules, half the previous summary it carries).
/// Returns those edits and the fixed tokens once they apply.
#[allow(clippy::too_many_arguments)]
fn room_for_summary(
    msgs: &[Message<'_>],
    est: &Estimator,
    costs: &[u32],
    legal: &[bool],
    pinned: &HashSet<usize>,
    opt: &PlanOptions,
    tail_start: usize,
    fixed: u64,
    must_keep: u64,
) -> (Vec<PricedEdit>, u64) {
    let floor = MIN_SUMMARY_TOKENS
        .max(must_keep)
        .min(opt.summary_tokens)
        .max(opt.summary_floor.min(opt.summary_tokens));
    if opt.budget_tokens >= fixed + floor {
        return (Vec::new(), fixed);
    }
    let region = MaskRegion::from(tail_start);
    let edits = find_mask_edits(msgs, est, costs, legal, &opt.mask, pinned, &region, true);
    let tail_edits = priced(msgs, est, costs, edits);
    let tail = &msgs[tail_start..];
    let after = costs_with(
        tail,
        est,
        &costs[tail_start..],
        &shifted(&tail_edits, tail_start),
    );
    let saved = token_sum(&costs[tail_start..]) - after;
    (tail_edits, fixed - saved)
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
    /// Call `id` of message `index` was made before in the same turn, which Anthropic ("tool_use
    /// ids must be unique") and Bedrock ("The toolUse blocks ... contain duplicate Ids") refuse.
    DuplicateCallId { index: usize, id: String },
    /// The result of call `id` (of message `index`) sits after another block of its turn,
    /// which Anthropic refuses as a call without its result (`repair::text_before_results`).
    ResultAfterText { index: usize, id: String },
    /// Message `index` shares its role with message `index - 1` at a seam.
    RoleCollision { index: usize },
    /// The first non-system turn is not the user's (Anthropic, Gemini, Bedrock).
    FirstTurnNotUser { index: usize },
    /// Arguments of call `id` (the `call`-th of message `index`) are not valid JSON.
    InvalidArguments {
        index: usize,
        call: usize,
        id: String,
    },
    /// A message with no content at all where the format needs some (or text alone that the
    /// format refuses, `wire::BlankText`).
    EmptyMessage { index: usize },
    /// The final assistant turn, message `index`, ends its text in whitespace, which the
    /// format's provider refuses (`Dialect::refuses_prefill_trailing_space`).
    TrailingWhitespace { index: usize },
    /// Message `index` is sent with an empty `tool_calls` list, which OpenAI refuses
    /// (`wire::openai_chat::EMPTY_CALLS`).
    EmptyToolCalls { index: usize },
    /// Block `part` of message `index` is text the format's provider refuses (empty, or
    /// whitespace alone for Anthropic: `wire::BlankText`) beside other blocks of the message.
    BlankText { index: usize, part: usize },
    /// Call `id` of message `index` has an id the format's provider refuses (`why`:
    /// `wire::CallIdRule::refuses`).
    InvalidCallId {
        index: usize,
        id: String,
        why: String,
    },
    /// Estimated tokens over the budget.
    OverBudget { tokens: u64, budget: u64 },
}

impl Failure {
    /// Short kind name (the Python error's `.failures` use it).
    pub fn kind(&self) -> &'static str {
        match self {
            // (A call the API takes as unanswered: the same fault for the caller, and repair
            // fixes both.)
            Failure::OrphanCall { .. } | Failure::ResultAfterText { .. } => "orphan_call",
            Failure::OrphanResult { .. } => "orphan_result",
            Failure::DuplicateCallId { .. } => "duplicate_call_id",
            Failure::RoleCollision { .. } => "role_collision",
            Failure::FirstTurnNotUser { .. } => "first_turn_not_user",
            Failure::InvalidArguments { .. } => "invalid_arguments",
            Failure::EmptyMessage { .. } => "empty_message",
            Failure::BlankText { .. } => "blank_text",
            Failure::EmptyToolCalls { .. } => "empty_tool_calls",
            Failure::TrailingWhitespace { .. } => "trailing_whitespace",
            Failure::InvalidCallId { .. } => "invalid_call_id",
            Failure::OverBudget { .. } => "over_budget",
        }
    }

    /// The message index it concerns (None for the budget).
    pub fn index(&self) -> Option<usize> {
        match self {
            Failure::OrphanCall { index, .. }
            | Failure::ResultAfterText { index, .. }
            | Failure::DuplicateCallId { index, .. }
            | Failure::OrphanResult { index, .. }
            | Failure::RoleCollision { index }
            | Failure::FirstTurnNotUser { index }
            | Failure::InvalidArguments { index, .. }
            | Failure::EmptyMessage { index }
            | Failure::BlankText { index, .. }
            | Failure::EmptyToolCalls { index }
            | Failure::TrailingWhitespace { index }
            | Failure::InvalidCallId { index, .. } => Some(*index),
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
            Failure::DuplicateCallId { index, id } => {
                format!("message {index}: tool call id {id:?} is used by another call of its turn")
            }
            Failure::ResultAfterText { index, id } => format!(
                "message {index}: the result of tool call {id:?} comes after other blocks of message {} (Anthropic wants a turn's results first)",
                index + 1
            ),
            Failure::RoleCollision { index } => {
                format!("messages {} and {index} share a role", index - 1)
            }
            Failure::FirstTurnNotUser { index } => {
                format!("message {index}: the first turn must be the user's")
            }
            Failure::InvalidArguments { index, call, id } => {
                format!(
                    "message {index}: arguments of call {id:?} (call {call}) are not valid JSON"
                )
            }
            Failure::EmptyMessage { index } => format!("message {index}: no content"),
            Failure::TrailingWhitespace { index } => format!(
                "message {index}: the final assistant turn ends its text in whitespace, which the provider refuses"
            ),
            Failure::EmptyToolCalls { index } => {
                format!("message {index}: tool_calls is an empty list, which OpenAI refuses")
            }
            Failure::BlankText { index, part } => {
                format!("message {index}: content block {part} is blank text, which the provider refuses")
            }
            Failure::InvalidCallId { index, id, why } => {
                format!("message {index}: tool call id {id:?} is refused by the provider ({why})")
            }
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
    let n = msgs.len();
    let mut failures = pair_failures(msgs, format);
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
    // JSON of every arguments string, ids the provider takes, and non-empty messages.
    let id_rule = format.dialect().call_id;
    let blank = format.dialect().blank_text;
    for (i, m) in msgs.iter().enumerate() {
        if id_rule.restricts() {
            // (A server tool's call answered in its own message carries the server's id.)
            for id in m.call_ids() {
                if let Some(why) = id_rule.refuses(id) {
                    failures.push(Failure::InvalidCallId {
                        index: i,
                        id: id.to_string(),
                        why,
                    });
                }
            }
        }
        let json_calls = crate::wire::json_string_arguments(m);
        for (j, c) in m.tool_calls.iter().enumerate() {
            if json_calls && !is_valid_json(&c.arguments) {
                failures.push(Failure::InvalidArguments {
                    index: i,
                    call: j,
                    id: c.id.to_string(),
                });
            }
        }
        if let Content::Parts(ps) = &m.content {
            for (j, p) in ps.iter().enumerate() {
                if let Part::ToolUse(c) = p {
                    if !is_valid_json(&c.arguments) {
                        failures.push(Failure::InvalidArguments {
                            index: i,
                            call: j,
                            id: c.id.to_string(),
                        });
                    }
                }
            }
        }
        if m.item == Some(crate::wire::openai_chat::EMPTY_CALLS) {
            failures.push(Failure::EmptyToolCalls { index: i });
        }
        if !format.strict_turns() {
            continue;
        }
        let refused = |p: &Part<'_>| matches!(p, Part::Text(t) if blank.refuses(t));
        // (An empty content string is taken in the final assistant turn alone, one still to be
        // written; a blank block nowhere.)
        let final_assistant = i + 1 == n && Turn::of(m) == Turn::Assistant;
        let empty = match &m.content {
            Content::None => m.tool_calls.is_empty() && m.tool_call_id.is_none(),
            Content::Parts(ps) => ps.iter().all(refused) && m.tool_calls.is_empty(),
            Content::Text(t) => !final_assistant && blank.refuses(t) && m.tool_calls.is_empty(),
        };
        if empty {
            failures.push(Failure::EmptyMessage { index: i });
        } else if let Content::Parts(ps) = &m.content {
            for (part, _) in ps.iter().enumerate().filter(|(_, p)| refused(p)) {
                failures.push(Failure::BlankText { index: i, part });
            }
        }
        if final_assistant
            && format.dialect().refuses_prefill_trailing_space
            && crate::wire::prefill_end(m, blank).is_some()
        {
            failures.push(Failure::TrailingWhitespace { index: i });
        }
    }
    failures
}

/// Calls without their result and results without their call, where `format` wants each.
fn pair_failures(msgs: &[Message<'_>], format: WireFormat) -> Vec<Failure> {
    let mut failures = Vec::new();
    if matches!(format, WireFormat::Anthropic | WireFormat::Bedrock) {
        // Two calls of one id in one turn, which both refuse (Bedrock: "The toolUse blocks at
        // messages.2.content contain duplicate Ids"). (An id a later turn reuses is left to
        // `repair`: OpenAI takes one, 37 of the 149 recorded tau-bench dialogues do, and a
        // history converted from theirs keeps it; Gemini pairs calls without ids by name.)
        for (i, m) in msgs.iter().enumerate() {
            let mut seen: HashSet<&str> = HashSet::new();
            for id in m.call_ids() {
                if !seen.insert(id) {
                    failures.push(Failure::DuplicateCallId {
                        index: i,
                        id: id.to_string(),
                    });
                }
            }
        }
    }
    let n = msgs.len();
    // A server call answered by a later assistant message (or running at the end): its run's
    // messages sit between, and the pair is whole (`server_call_span`).
    let spans = ServerSpans::of(msgs);
    if format.results_in_next_message() {
        for (i, m) in msgs.iter().enumerate() {
            let calls: Vec<&str> = m.call_ids().filter(|id| !spans.spans(i, id)).collect();
            if !calls.is_empty() {
                // Counted, not a set: Gemini calls without ids pair by name, and two `read`
                // calls answered by one `read` response are refused ("the number of function
                // response parts is equal to the number of function call parts").
                let mut answered: HashMap<&str, usize> = HashMap::new();
                for id in msgs.get(i + 1).into_iter().flat_map(|r| r.result_ids()) {
                    *answered.entry(id).or_default() += 1;
                }
                // The results after another block of their turn, where that is refused.
                let late: HashSet<&str> = match msgs.get(i + 1) {
                    Some(r) if crate::repair::text_before_results(r) => r
                        .parts()
                        .iter()
                        .skip_while(|p| matches!(p, Part::ToolResult { .. }))
                        .filter_map(|p| match p {
                            Part::ToolResult { tool_use_id, .. } => Some(*tool_use_id),
                            _ => None,
                        })
                        .collect(),
                    _ => HashSet::new(),
                };
                for id in calls {
                    match answered.get_mut(id) {
                        Some(n) if *n > 0 => {
                            *n -= 1;
                            if late.contains(id) {
                                failures.push(Failure::ResultAfterText {
                                    index: i,
                                    id: id.to_string(),
                                });
                            }
                        }
                        _ => failures.push(Failure::OrphanCall {
                            index: i,
                            id: id.to_string(),
                        }),
                    }
                }
            }
            let results: Vec<&str> = m.result_ids().filter(|id| !spans.answers(i, id)).collect();
            if !results.is_empty() {
                // Counted too: a second `read` response to one `read` call is refused alike.
                let mut called: HashMap<&str, usize> = HashMap::new();
                if i > 0 {
                    for id in msgs[i - 1].call_ids() {
                        *called.entry(id).or_default() += 1;
                    }
                }
                for id in results {
                    match called.get_mut(id) {
                        Some(n) if *n > 0 => *n -= 1,
                        _ => failures.push(Failure::OrphanResult {
                            index: i,
                            id: id.to_string(),
                        }),
                    }
                }
            }
        }
    } else {
        // Chat: results in the run of tool messages after the call; Responses: anywhere later.
        let chat = format == WireFormat::Chat;
        // Each open call id: the message that made it and how many calls of it that message
        // made still wait (Ollama's calls carry no id and are read with their tool's name: one
        // turn may make two `run` calls, answered by two results). A later message's call of an
        // id takes its place, as a result answers the nearest call of its id.
        let mut open: HashMap<&str, (usize, usize)> = HashMap::new();
        for (i, m) in msgs.iter().enumerate() {
            for id in m.result_ids().filter(|id| !spans.answers(i, id)) {
                match open.get_mut(id) {
                    Some((_, waiting)) if *waiting > 1 => *waiting -= 1,
                    Some(_) => {
                        open.remove(id);
                    }
                    None => failures.push(Failure::OrphanResult {
                        index: i,
                        id: id.to_string(),
                    }),
                }
            }
            if chat && Turn::of(m) != Turn::Tool && m.result_ids().next().is_none() {
                for (id, &(at, _)) in &open {
                    failures.push(Failure::OrphanCall {
                        index: at,
                        id: id.to_string(),
                    });
                }
                open.clear();
            }
            for id in m.call_ids().filter(|id| !spans.spans(i, id)) {
                match open.get_mut(id) {
                    Some((at, waiting)) if *at == i => *waiting += 1,
                    _ => {
                        open.insert(id, (i, 1));
                    }
                }
            }
        }
        for (id, (at, _)) in open {
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
            budget_tokens: budget,
            overhead_tokens: 3,
            tail_tokens: budget / 3,
            summary_tokens: budget / 8,
            ..PlanOptions::default()
        }
    }

    /// Options whose tail holds its floor only (a 10-token target, never overshot: the last
    /// three messages, or the last question and its tool round) beside a 2,000-token summary.
    fn floor_tail(budget: u64) -> PlanOptions {
        PlanOptions {
            tail_tokens: 10,
            summary_tokens: 2_000,
            soft_ceiling: 1.0,
            ..options(budget)
        }
    }

    /// A text agent's history: the task, then `first` (the assistant's), two observations and
    /// `thought` twice.
    fn text_agent(
        task: &'static str,
        first: &'static str,
        thought: &'static str,
    ) -> Vec<Message<'static>> {
        let mut v = vec![
            Message::text("system", "sys"),
            Message::text("user", task),
            Message::text("assistant", first),
            Message::text("user", "<returncode>0</returncode>\n<output>ok</output>"),
            Message::text("assistant", thought),
            Message::text("user", "<returncode>0</returncode>\n<output>done</output>"),
            Message::text("assistant", thought),
        ];
        for m in v.iter_mut() {
            m.wire = crate::wire::Format::OpenAIChat;
        }
        v
    }

    /// The plan of `msgs` at the budget that leaves the summary `MIN_SUMMARY_TOKENS + over`
    /// tokens beside that tail.
    fn squeezed(msgs: &[Message<'_>], over: u64) -> Plan {
        let fixed = plan(msgs, &est(), &floor_tail(40_000)).fixed_tokens;
        plan(msgs, &est(), &floor_tail(fixed + MIN_SUMMARY_TOKENS + over))
    }

    #[test]
    fn a_tail_of_the_models_response_opens_with_the_user_turn_it_answers() {
        // The history ends on the model's calls in answer to a new user turn: a one-message
        // tail (min_tail 1) held the calls alone and folded the turn they act on.
        let big = "some output line\n".repeat(300);
        let mut msgs = agent(&big);
        let mut last = call("c99", "{\"path\":\"b.py\"}");
        last.wire = crate::wire::Format::OpenAIChat;
        msgs.push(last);
        let n = msgs.len();
        let opt = PlanOptions {
            min_tail: 1,
            ..floor_tail(6_000)
        };
        let p = plan(&msgs, &est(), &opt);
        assert!(p.reason.is_none(), "{:?}", p.reason);
        assert_eq!(p.tail_start, n - 2, "the user turn `next` opens the tail");
        // Once the model has spoken again after the results, the turn is an earlier one's.
        let mut on = msgs.clone();
        on.push(result("c99", "ok"));
        on.push(Message::text("assistant", "read b.py"));
        let q = plan(&on, &est(), &opt);
        assert_eq!(turn_before_last_response(&on), None);
        assert!(q.tail_start > n - 2, "{}", q.tail_start);
        assert_eq!(
            turn_before_last_response(&msgs[..n - 1]),
            None,
            "a history ending on the turn"
        );
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

    /// The standing rules of the fold are the summary's floor: a budget that leaves the summary
    /// more than `MIN_SUMMARY_TOKENS` but less than its rules is a budget the degrading steps
    /// must lift (the summary would drop a rule), and the same room without rules is fine.
    #[test]
    fn a_summary_squeezed_under_its_folds_standing_rules_is_a_budget_reason() {
        let rules = [
            "Never charge my Visa card ending in 4417 for any booking, fee or upgrade you make for me.",
            "Do not cancel reservation ZZ9Q7T under any circumstances, even if I ask you to later on.",
            "Always ask me before you run git push, book anything, or change any of my reservations.",
            "Only use the gift card ending in 7781 to pay, and never more than 300 dollars per booking.",
        ];
        let plain = [
            "Thanks, that is helpful to know about the fares for the flight to Boston next week.",
            "I see, so the seats on the earlier flight are taken; the later one would be fine then.",
            "Could you tell me again what the baggage allowance on the economy fare happens to be?",
            "Alright, and what would the total come to with the seat selection included as well?",
        ];
        let big = "flight HAT170 seat 12A available\n".repeat(40);
        let build = |said: &[&'static str; 4]| -> Vec<Message<'static>> {
            let mut v = vec![
                Message::text("system", "sys"),
                Message::text("user", "task"),
            ];
            for r in said {
                v.push(Message::text("user", r));
                v.push(Message::text("assistant", "Noted."));
            }
            v.push(Message::text("user", "What seats are left?"));
            v
        };
        let mut with_rules = build(&rules);
        let mut without = build(&plain);
        let big: &'static str = Box::leak(big.into_boxed_str());
        for v in [&mut with_rules, &mut without] {
            v.push(call("c0", "{\"flight\":\"HAT170\"}"));
            v.push(result("c0", big));
            for m in v.iter_mut() {
                m.wire = crate::wire::Format::OpenAIChat;
            }
        }
        // The tail holds its floor only (the last question and its tool round), in both plans.
        let roomy = |msgs: &[Message<'_>]| plan(msgs, &est(), &floor_tail(20_000));
        for msgs in [&with_rules, &without] {
            let p = roomy(msgs);
            assert!(p.reason.is_none(), "{:?}", p.reason);
        }
        let p = roomy(&with_rules);
        let idx: Vec<usize> = p.folded.clone();
        let floor = crate::digest::rules_floor_tokens(&with_rules, &idx, None, &est());
        assert!(floor > MIN_SUMMARY_TOKENS + 20, "{floor}");
        // The same tail and head, a budget leaving the summary between the two floors.
        let p = squeezed(&with_rules, 10);
        assert!(
            p.reason
                .as_deref()
                .is_some_and(|r| r.starts_with("budget") && r.contains("standing rules")),
            "{:?} (summary {} tokens, rules {floor})",
            p.reason,
            p.summary_tokens
        );
        let p = squeezed(&without, 10);
        assert!(p.reason.is_none(), "{:?}", p.reason);
    }

    /// A previous summary in the fold is the summary's floor at half its share: a budget whose
    /// tail leaves the new summary less is one the degrading steps must lift (fewer tail
    /// messages first), where the same room with no previous summary to carry is fine.
    #[test]
    fn a_summary_carrying_the_previous_one_squeezed_under_half_its_share_is_a_budget_reason() {
        let previous: &'static str = Box::leak(
            format!(
                "{SUMMARY_OPEN}\n## Tool calls\n{}{SUMMARY_CLOSE}",
                "- read django/core/servers/basehttp.py -> ok: class ThreadedWSGIServer\n"
                    .repeat(60)
            )
            .into_boxed_str(),
        );
        let thought: &'static str = Box::leak(
            "THOUGHT: the handler closes connections here.\n"
                .repeat(120)
                .into_boxed_str(),
        );
        let carrying = text_agent("Fix the server.", previous, thought);
        let plain = text_agent(
            "Fix the server.",
            "THOUGHT: let me look at the server.",
            thought,
        );
        let roomy = plan(&carrying, &est(), &floor_tail(40_000));
        assert!(roomy.reason.is_none(), "{:?}", roomy.reason);
        assert_eq!(
            roomy.previous_summary.as_deref().map(str::len),
            own_summary(&carrying[2]).map(str::len)
        );
        // The three messages of the tail whole, and a room over the minimum but under half the
        // share (the previous summary is larger than the share).
        let p = squeezed(&carrying, 100);
        assert!(
            p.reason
                .as_deref()
                .is_some_and(|r| r.starts_with("budget") && r.contains("carrying the previous")),
            "{:?} (summary {} tokens)",
            p.reason,
            p.summary_tokens
        );
        let p = squeezed(&plain, 100);
        assert!(p.reason.is_none(), "{:?}", p.reason);
        assert!(p.summary_tokens < 1_000);
    }

    /// Where no one can read the turns behind it again (`carried_whole`), the previous summary
    /// is the floor whole: a room between half of it and all of it is a budget reason there
    /// (the degrading steps lift it), and fine where the turns can be read again.
    #[test]
    fn a_previous_summary_that_is_the_only_home_of_its_turns_is_kept_whole() {
        let previous: &'static str = Box::leak(
            format!(
                "{SUMMARY_OPEN}\n## User requests\n{}{SUMMARY_CLOSE}",
                "- change the flight of reservation HXDUBJ to the next day, nonstop\n".repeat(12)
            )
            .into_boxed_str(),
        );
        let thought: &'static str =
            Box::leak("THOUGHT: searching flights.\n".repeat(120).into_boxed_str());
        let msgs = text_agent("Change my flight.", previous, thought);
        let body = est().text(own_summary(&msgs[2]).unwrap_or("")).ceil() as u64;
        assert!(body > 2 * MIN_SUMMARY_TOKENS, "{body}");
        let fixed = plan(&msgs, &est(), &floor_tail(40_000)).fixed_tokens;
        let opt = floor_tail(fixed + body * 3 / 4);
        let half = plan(&msgs, &est(), &opt);
        assert!(half.reason.is_none(), "{:?}", half.reason);
        let whole = plan(
            &msgs,
            &est(),
            &PlanOptions {
                carried_whole: true,
                ..opt
            },
        );
        assert!(
            whole
                .reason
                .as_deref()
                .is_some_and(|r| r.starts_with("budget") && r.contains("carrying the previous")),
            "{:?}",
            whole.reason
        );
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
            units: None,
            text: None,
            payload: None,
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
        assert_eq!(p.previous_at, Some(2));
        assert!(p.previous_alone);
    }

    #[test]
    fn a_summary_merged_into_a_turn_is_named_with_its_host() {
        // The host's own words are part of the fold: a caller reading the summary's messages in
        // its place keeps the host, without the summary.
        let big = "o\n".repeat(600);
        let mut msgs = agent(&big);
        let s = format!("{SUMMARY_OPEN}\nolder facts\n{SUMMARY_CLOSE}\nand my own question");
        msgs.insert(2, Message::text("assistant", &s));
        let p = plan(&msgs, &est(), &options(3_000));
        assert_eq!(p.previous_summary.as_deref(), Some("older facts"));
        assert_eq!(p.previous_at, Some(2));
        assert!(!p.previous_alone);
    }

    #[test]
    fn verify_finds_orphans_bad_json_collisions_and_budget() {
        // (A chat call's arguments are JSON a provider parses; a call of no wire format is a
        // client-run tool's, whose input is free text.)
        let mut bad = call("a", "{\"x\": 1");
        bad.wire = crate::message::Format::OpenAIChat;
        let msgs = vec![
            Message::text("user", "task"),
            bad,
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
    fn a_server_tool_answered_in_its_own_message_passes_the_check() {
        let h = serde_json::json!([
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": [
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "paris"}},
                {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
                    {"type": "web_search_result", "url": "https://w.example", "title": "P", "encrypted_content": "Eq"}]},
                {"type": "server_tool_use", "id": "srvtoolu_2", "name": "code_execution", "input": {"code": "2+2"}},
                {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_2", "content": {"type": "code_execution_result", "stdout": "4", "stderr": "", "return_code": 0, "content": []}},
                {"type": "text", "text": "Sunny."}]},
            {"role": "user", "content": "thanks"}
        ]);
        let msgs = crate::wire::read_history(&&h).expect("readable");
        assert_eq!(check(&msgs, WireFormat::Anthropic, &[1, 2]), vec![]);
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
