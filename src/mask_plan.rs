//! Which mask edits a compaction makes: prune's plan filtered by the caller's knobs, the
//! arguments of calls whose result was cleared, observations of text agents, thinking of older
//! turns, and placeholders made recoverable.
//!
//! Each kind of edit is one step below; `find_mask_edits` runs them over one region of the
//! history (the middle before the tail, or the tail itself when its floor overflows).

use std::collections::HashSet;

use crate::estimate::Estimator;
use crate::mask_edit::{writable, MaskEdit};
use crate::message::{Content, Message, Part};
use crate::prune::{self, call_order, group_sep, PruneOptions};
use crate::shrink_json::shrink_json;
use crate::summary_marker::own_summary;
use crate::turn::Turn;
use crate::wire::edit::{calls_at, CallAt, Change};

/// Arguments of a call whose result was cleared (`clear_tool_inputs`) shrink to this many
/// characters (shrink_json's floor: still valid JSON, keys and short values kept).
const CLEARED_INPUT_CHARS: usize = 64;

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

/// The call id a change touches (the result it replaces, or the call it shrinks).
fn edit_call_id<'a>(msgs: &[Message<'a>], index: usize, change: &Change) -> Option<&'a str> {
    let m = &msgs[index];
    let part = |k: usize| match &m.content {
        Content::Parts(ps) => ps.get(k),
        _ => None,
    };
    match change {
        Change::ResultText { part: None, .. } => m.tool_call_id,
        Change::ResultText { part: Some(k), .. } | Change::ResultPartText { part: k, .. } => {
            match part(*k) {
                Some(Part::ToolResult { tool_use_id, .. }) => Some(*tool_use_id),
                _ => None,
            }
        }
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
        // An image or a text part of a result message (a chat `tool` message's screenshot, a
        // Responses output list's, a computer call's): that call's output, as its whole text
        // is. Said by no call, `exclude_tools` and `keep` masked them all the same.
        Change::Image { .. } | Change::PartText { .. } => m.tool_call_id,
        Change::Text { .. } => None,
    }
}

/// The stand-in of a masked observation: its first line (the return code, say) and its size;
/// with `mentions`, the identifiers it held.
fn observation_placeholder(text: &str, tokens: u32, mentions: bool) -> String {
    let first: String = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .chars()
        .take(120)
        .collect();
    format!(
        "{}\n[output pruned to save context: {} bytes (~{} tokens){}]",
        first.trim_end(),
        group_sep(text.len()),
        group_sep(tokens as usize),
        if mentions {
            crate::recall::mentions_said(text)
        } else {
            String::new()
        }
    )
}

/// Whether the history uses structured tool calls anywhere.
fn has_structured_calls(msgs: &[Message<'_>]) -> bool {
    msgs.iter()
        .any(|m| m.has_tool_calls() || m.result_ids().next().is_some())
}

/// The region a mask pass covers, as prune bounds it: the first `protect_first_n` messages and
/// the last `protect_tail_tokens` (at least `min_tail` messages, the walk overshooting by at
/// most `soft_ceiling`) stay untouched; masking ends on `cache_block_tokens` blocks (0: off).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct MaskRegion {
    pub protect_first_n: usize,
    pub protect_tail_tokens: u64,
    pub min_tail: usize,
    pub soft_ceiling: f64,
    pub cache_block_tokens: u64,
}

impl MaskRegion {
    /// Everything from `start` on, the last message excepted, with no cache blocks.
    pub fn from(start: usize) -> Self {
        MaskRegion {
            protect_first_n: start,
            protect_tail_tokens: 0,
            min_tail: 1,
            soft_ceiling: 1.0,
            cache_block_tokens: 0,
        }
    }
}

/// The mask edits of a region: prune's plan filtered by the knobs, plus cleared inputs,
/// observation masking and thinking drops, made recoverable when asked. Pinned messages are
/// never edited. With `mentions`, a placeholder names the identifiers its output held (a
/// recoverable one always does).
#[allow(clippy::too_many_arguments)]
pub(crate) fn find_mask_edits(
    msgs: &[Message<'_>],
    est: &Estimator,
    costs: &[u32],
    legal: &[bool],
    opt: &MaskOptions,
    pinned: &HashSet<usize>,
    region: &MaskRegion,
    mentions: bool,
) -> Vec<MaskEdit> {
    let popt = PruneOptions {
        protect_tail_tokens: region.protect_tail_tokens,
        protect_first_n: region.protect_first_n,
        min_tail: region.min_tail,
        soft_ceiling: region.soft_ceiling,
        tool_result_max_tokens: opt.tool_result_max_tokens,
        arguments_max_chars: opt.arguments_max_chars,
        prune_images: opt.prune_images,
        dedupe: opt.dedupe,
        cache_block_tokens: region.cache_block_tokens,
        // (A recoverable edit's own placeholder names them: not read twice.)
        mentions: mentions && !opt.recoverable,
    };
    let calls = crate::call_pairs::CallPairs::new(msgs);
    let p = prune::plan_paired(msgs, est, costs, legal, &popt, &calls);
    let end = prune::prune_end(costs, p.protected_from, region.cache_block_tokens, legal);
    let span = region.protect_first_n.min(end)..end;
    let order = call_order(msgs);
    let (mut out, cleared) = allowed_prune_edits(msgs, p, opt, pinned, &calls, &order);
    if opt.clear_tool_inputs && !cleared.is_empty() {
        cleared_input_edits(msgs, &mut out, &cleared, pinned, span.clone());
    }
    if opt.mask_observations && !has_structured_calls(msgs) {
        let mentions = mentions && !opt.recoverable;
        let observed = observation_edits(msgs, est, costs, opt, pinned, span, mentions);
        // An observation masked whole with Ollama's native images (`Change::Text` on such a
        // message writes both fields) leaves no image edit of its own beside it.
        let whole: HashSet<usize> = observed
            .iter()
            .filter(|e| msgs[e.index()].images_from.is_some())
            .map(MaskEdit::index)
            .collect();
        out.retain(|e| {
            !(whole.contains(&e.index())
                && matches!(
                    e,
                    MaskEdit::Change {
                        change: Change::Image { .. },
                        ..
                    }
                ))
        });
        out.extend(observed);
    }
    if let Some(keep) = opt.keep_thinking_turns {
        out.extend(thinking_drops(msgs, keep, pinned, region.protect_first_n));
    }
    if opt.recoverable {
        out = crate::recall::recoverable_edits(msgs, est, costs, &calls, out);
    }
    out
}

/// Prune's edits minus those the knobs forbid (pinned messages, the last `keep_tool_uses`
/// calls, excluded tools), and the ids of the calls whose result text was cleared.
fn allowed_prune_edits<'a>(
    msgs: &[Message<'a>],
    p: prune::PrunePlan,
    opt: &MaskOptions,
    pinned: &HashSet<usize>,
    calls: &crate::call_pairs::CallPairs<'_, 'a>,
    order: &[&'a str],
) -> (Vec<MaskEdit>, HashSet<&'a str>) {
    let kept_ids: HashSet<&str> = order
        .iter()
        .rev()
        .take(opt.keep_tool_uses)
        .copied()
        .collect();
    let excluded = |idx: usize, id: Option<&str>| -> bool {
        id.is_some_and(|id| {
            kept_ids.contains(id)
                || calls
                    .name(idx, id)
                    .is_some_and(|n| opt.exclude_tools.iter().any(|x| x == n))
        })
    };
    let mut out: Vec<MaskEdit> = Vec::new();
    let mut cleared: HashSet<&'a str> = HashSet::new();
    for (e, (idx, change)) in p.edits.into_iter().zip(p.changes) {
        if pinned.contains(&idx) {
            continue;
        }
        let id = edit_call_id(msgs, idx, &change);
        if excluded(idx, id) {
            continue;
        }
        if matches!(change, Change::ResultText { .. }) {
            if let Some(id) = id {
                cleared.insert(id);
            }
        }
        out.push(MaskEdit::written(e, change));
    }
    (out, cleared)
}

/// `clear_tool_inputs`: the arguments of every call whose result was cleared shrink to valid
/// JSON of `CLEARED_INPUT_CHARS`, in place of any edit of `out` that shrank them less (the
/// arguments over `arguments_max_chars` were shrunk to that first, and kept 2,000 characters
/// where clearing keeps 64).
fn cleared_input_edits(
    msgs: &[Message<'_>],
    out: &mut Vec<MaskEdit>,
    cleared: &HashSet<&str>,
    pinned: &HashSet<usize>,
    span: std::ops::Range<usize>,
) {
    let mut edits = Vec::new();
    let mut clearing: HashSet<(usize, CallAt)> = HashSet::new();
    for i in span {
        if pinned.contains(&i) {
            continue;
        }
        for (call, c) in calls_at(&msgs[i]) {
            if cleared.contains(c.id) {
                let json = shrink_json(&c.arguments, CLEARED_INPUT_CHARS);
                if json == *c.arguments {
                    continue;
                }
                if let Some(e) = writable(msgs, i, Change::Arguments { call, json }) {
                    clearing.insert((i, call));
                    edits.push(e);
                }
            }
        }
    }
    out.retain(|e| {
        !matches!(e, MaskEdit::Change { index, change: Change::Arguments { call, .. }, .. }
            if clearing.contains(&(*index, *call)))
    });
    out.extend(edits);
}

/// Text agents (no structured calls): a long user message answering an assistant's command is
/// an observation, replaced by its first line and its size.
fn observation_edits(
    msgs: &[Message<'_>],
    est: &Estimator,
    costs: &[u32],
    opt: &MaskOptions,
    pinned: &HashSet<usize>,
    span: std::ops::Range<usize>,
    mentions: bool,
) -> Vec<MaskEdit> {
    let mut edits = Vec::new();
    for i in span.start.max(1)..span.end {
        let m = &msgs[i];
        // (A turn of several text blocks may hold a person's words beside the observation,
        // as the formats that alternate turns send them: the placeholder would replace both.)
        if pinned.contains(&i)
            || Turn::of(m) != Turn::User
            || Turn::of(&msgs[i - 1]) != Turn::Assistant
            || costs[i] <= opt.tool_result_max_tokens
            || crate::digest::text_blocks(m).nth(1).is_some()
        {
            continue;
        }
        if own_summary(m).is_some() {
            continue;
        }
        // Plain text, as a string or as text blocks only (replaced by a string).
        if let Some(t) = m.plain_text() {
            let text = observation_placeholder(&t, costs[i], mentions);
            edits.extend(writable(msgs, i, Change::Text { text }));
        } else if let Some((k, t)) = text_beside_images(m) {
            // A browser agent's observation: the page's text beside its screenshot. The text
            // is masked on its own part, over the threshold by its own tokens; the screenshot
            // by prune's image edit (outside the tail), or with it for Ollama's native images.
            let tokens = est.text(t).ceil() as u32;
            if tokens <= opt.tool_result_max_tokens {
                continue;
            }
            let mut text = observation_placeholder(t, tokens, mentions);
            let change = if m.images_from.is_some() {
                prune::say_media(&mut text, m.parts(), |p| p.is_media());
                Change::Text { text }
            } else {
                Change::PartText { part: k, text }
            };
            edits.extend(writable(msgs, i, change));
        }
    }
    edits
}

/// The one text part of a message whose other parts are all images, with its position.
fn text_beside_images<'m>(m: &'m Message<'_>) -> Option<(usize, &'m str)> {
    let Content::Parts(ps) = &m.content else {
        return None;
    };
    let mut text = None;
    for (k, p) in ps.iter().enumerate() {
        match p {
            Part::Text(t) if text.is_none() => text = Some((k, t.as_ref())),
            Part::Image(_) => {}
            _ => return None,
        }
    }
    text.filter(|_| ps.len() > 1)
}

/// Thinking of older turns goes whole (Anthropic drops it from earlier turns anyway); the last
/// `keep` turns (at least the current one) keep theirs byte-identical.
fn thinking_drops(
    msgs: &[Message<'_>],
    keep: usize,
    pinned: &HashSet<usize>,
    protect_first_n: usize,
) -> Vec<MaskEdit> {
    let with_thinking: Vec<usize> = msgs
        .iter()
        .enumerate()
        .filter(
            |(_, m)| matches!(&m.content, Content::Parts(ps) if ps.iter().any(Part::is_thinking)),
        )
        .map(|(i, _)| i)
        .collect();
    let cut = with_thinking.len().saturating_sub(keep.max(1));
    let mut edits = Vec::new();
    for &i in &with_thinking[..cut] {
        // The protected head stays byte-identical; the tail pass protects all before the tail
        // this way, and an edit there would be priced against the wrong slice. Only formats
        // whose thinking is a block of the message's own content array can drop it (a
        // Responses reasoning item is an item of its own, chat's a field).
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
            .filter(|(_, p)| p.is_thinking())
            .map(|(j, _)| j)
            .collect();
        // A message left without any content would be rejected: keep it whole then.
        if drops.len() < ps.len() || !msgs[i].tool_calls.is_empty() {
            edits.extend(
                drops
                    .into_iter()
                    .map(|part| MaskEdit::DropPart { index: i, part }),
            );
        }
    }
    edits
}
