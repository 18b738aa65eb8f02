//! The last steps before a compaction gives up: cut the middle of one oversized message,
//! keeping its head and its end (where tools print their summary lines and errors), the cut
//! named by a fold id so it can be recalled.

use std::borrow::Cow;

use crate::compaction::MaskEdit;
use crate::estimate::Estimator;
use crate::json_string::push_json_string;
use crate::mask_edit::writable;
use crate::message::{Content, Message, Part};
use crate::prune::group_sep;
use crate::recall::{fold_id, RECALL_TOOL};
use crate::wire::edit::{calls_at, Change};

/// Share of the kept tokens given to the head; the rest (minus the marker) to the end.
const HEAD_SHARE: f64 = 0.5;

/// A cut never keeps less than this many tokens of a message (head and end together).
pub const MIN_KEPT_TOKENS: u32 = 16;

/// The byte offsets of a text's character boundaries, its end included, by character index:
/// the searches below bisect over characters.
enum Bounds {
    /// An ASCII text of this many bytes: each byte is a character (no table: the table of a
    /// tool output of 100 KB took 800 KB, built twice for each cut).
    Ascii(usize),
    Table(Vec<usize>),
}

impl Bounds {
    fn of(text: &str) -> Self {
        if text.is_ascii() {
            return Bounds::Ascii(text.len());
        }
        Bounds::Table(
            text.char_indices()
                .map(|(b, _)| b)
                .chain([text.len()])
                .collect(),
        )
    }

    /// The characters of the text (the last boundary's index).
    fn chars(&self) -> usize {
        match self {
            Bounds::Ascii(n) => *n,
            Bounds::Table(t) => t.len() - 1,
        }
    }

    /// The byte offset of character boundary `k`.
    fn at(&self, k: usize) -> usize {
        match self {
            Bounds::Ascii(_) => k,
            Bounds::Table(t) => t[k],
        }
    }
}

/// Byte offset where the longest prefix of `text` within `tokens` ends (on a char boundary).
fn prefix_end(text: &str, tokens: f64, est: &Estimator) -> usize {
    let bounds = Bounds::of(text);
    let (mut lo, mut hi) = (0usize, bounds.chars());
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if est.text(&text[..bounds.at(mid)]) <= tokens {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    bounds.at(lo)
}

/// Byte offset where the longest suffix of `text` within `tokens` starts.
fn suffix_start(text: &str, tokens: f64, est: &Estimator) -> usize {
    let bounds = Bounds::of(text);
    let (mut lo, mut hi) = (0usize, bounds.chars());
    // The smallest start whose suffix fits.
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if est.text(&text[bounds.at(mid)..]) <= tokens {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    bounds.at(lo)
}

/// `text` cut to about `keep_tokens`: its head, a marker saying what was cut (with `named`, the
/// id that restores the whole and the recall tool; without, when the model is offered no
/// recall tool, neither), and its end. A JSON text (a tool's envelope,
/// `{"output": "...", "exit_code": 0}`) is cut inside its longest string, so it stays valid
/// JSON with every other byte in place. None when the text is already that small.
pub fn cut_text(text: &str, keep_tokens: u32, est: &Estimator, named: bool) -> Option<String> {
    let keep = f64::from(keep_tokens.max(MIN_KEPT_TOKENS));
    if est.text(text) <= keep {
        return None;
    }
    let id = named.then(|| fold_id(text));
    let id = id.as_deref();
    cut_json_string(text, keep, est, id).or_else(|| cut_plain(text, keep, est, id))
}

/// The cut of a JSON text inside its longest string literal (the rest kept byte for byte), the
/// marker naming `id` (the whole text's). None when the text is not a JSON object or array, or
/// what lies outside that string leaves it too little.
fn cut_json_string(text: &str, keep: f64, est: &Estimator, id: Option<&str>) -> Option<String> {
    let t = text.trim();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return None;
    }
    serde_json::from_str::<serde_json::Value>(t).ok()?;
    let (start, end) = longest_string_literal(text)?;
    let value: String = serde_json::from_str(&text[start..end]).ok()?;
    let around = est.text(&text[..start]) + est.text(&text[end..]);
    let mut inside = keep - around;
    let mut out = String::new();
    // Escaped (`\n`, `\"`), the kept value costs more than it did raw: aimed again by the excess.
    for _ in 0..3 {
        if inside < f64::from(MIN_KEPT_TOKENS) {
            return None;
        }
        let cut = cut_plain(&value, inside, est, id)?;
        out.clear();
        out.push_str(&text[..start]);
        push_json_string(&mut out, &cut);
        out.push_str(&text[end..]);
        let over = est.text(&out) - keep;
        if over <= 0.0 {
            break;
        }
        inside -= over;
    }
    Some(out)
}

/// The byte span (quotes included) of the longest string literal of a JSON text.
fn longest_string_literal(text: &str) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let (mut best, mut i): (Option<(usize, usize)>, usize) = (None, 0);
    while i < b.len() {
        if b[i] != b'"' {
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        while i < b.len() && b[i] != b'"' {
            i += if b[i] == b'\\' { 2 } else { 1 };
        }
        let end = (i + 1).min(b.len());
        if best.is_none_or(|(s, e)| end - start > e - s) {
            best = Some((start, end));
        }
        i = end;
    }
    best
}

/// `cut_text` of plain text, the marker naming `id` (and the recall tool) when given.
fn cut_plain(text: &str, keep: f64, est: &Estimator, id: Option<&str>) -> Option<String> {
    if est.text(text) <= keep {
        return None;
    }
    // A short marker when little may stay; the head and end share what the marker leaves.
    let mentions = id.is_none() && keep >= MENTIONS_MIN_KEEP_TOKENS;
    let long = keep >= 96.0 || mentions;
    let marker_len = if long { 40.0 } else { 22.0 };
    let room = (keep - marker_len).max(0.0);
    let mut head = prefix_end(text, room * HEAD_SHARE, est);
    let mut tail = suffix_start(text, room * (1.0 - HEAD_SHARE), est).max(head);
    // A cut no id restores names what its middle mentioned, as a masked output's placeholder
    // does: the head and end then share what the names leave.
    let said = if mentions {
        middle_mentions(text, head, tail, est)
    } else {
        String::new()
    };
    if !said.is_empty() {
        let room = (room - est.text(&said)).max(0.0);
        head = prefix_end(text, room * HEAD_SHARE, est);
        tail = suffix_start(text, room * (1.0 - HEAD_SHARE), est).max(head);
    }
    let cut = group_sep(est.text(&text[head..tail]).ceil() as usize);
    let marker = match (id, long) {
        (Some(id), true) => {
            format!("[... ~{cut} tokens cut from the middle; id={id}, {RECALL_TOOL} restores the whole ...]")
        }
        (Some(id), false) => format!("[~{cut} tokens cut; id={id}, {RECALL_TOOL} restores it]"),
        (None, true) => format!("[... ~{cut} tokens cut from the middle{said} ...]"),
        (None, false) => format!("[~{cut} tokens cut]"),
    };
    let mut out = String::with_capacity(head + marker.len() + text.len() - tail + 2);
    out.push_str(&text[..head]);
    if head > 0 {
        out.push('\n');
    }
    out.push_str(&marker);
    if tail < text.len() {
        out.push('\n');
    }
    out.push_str(&text[tail..]);
    Some(out)
}

/// A cut keeps at least this many tokens before its marker names what the middle mentioned:
/// the names cost up to `MIDDLE_MENTIONS_MAX_TOKENS` of what the head and end would keep. Small
/// cuts name theirs too (a tool record cut to ~70 tokens keeps a few bytes of its opening key
/// and its last field, where its flight numbers and ids are what a later fold and the model
/// read): at 64 rather than 128 the agent-loop future facts went 1,245 -> 1,247 (tau) and
/// 4,674 -> 4,679 (SWE), one compaction 1,240 -> 1,241 / 4,645 -> 4,648
/// (`tools/future_report.py`). Under it a marker and its names would be all the cut keeps.
const MENTIONS_MIN_KEEP_TOKENS: f64 = 64.0;

/// Tokens a cut's marker spends on what its middle mentioned at most.
const MIDDLE_MENTIONS_MAX_TOKENS: f64 = 24.0;

/// `"; mentions a, b"`: the identifiers of `text[head..tail]` (`recall::mentions`) that the kept
/// head and end do not show, within `MIDDLE_MENTIONS_MAX_TOKENS`; none that could end the
/// marker or a JSON string early (`]`, quotes, backslashes, newlines). Empty when none.
fn middle_mentions(text: &str, head: usize, tail: usize, est: &Estimator) -> String {
    use crate::recall::{mentions, MENTIONS_SAID};
    let (kept_head, kept_end) = (&text[..head], &text[tail..]);
    // (A word the cut splits is shown in part on each side: not named from its middle half.)
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut from = head;
    if kept_head.chars().next_back().is_some_and(word) {
        from += text[head..tail]
            .find(|c: char| !word(c))
            .unwrap_or(tail - head);
    }
    let mut to = tail;
    if kept_end.chars().next().is_some_and(word) {
        // Up to the end of the last separator, which may take several bytes (an em-dash, a
        // no-break space, `。`): its start plus one sliced inside it.
        to = from + text[from..tail].trim_end_matches(word).len();
    }
    let middle = &text[from..to.max(from)];
    let mut names: Vec<String> = mentions(middle, 8)
        .into_iter()
        .filter(|w| {
            !w.contains([']', '[', '"', '\\', '\n'])
                && !w.ends_with('…')
                && !kept_head.contains(w.as_str())
                && !kept_end.contains(w.as_str())
        })
        .collect();
    while !names.is_empty() {
        let said = format!("{MENTIONS_SAID}{}", names.join(", "));
        if est.text(&said) <= MIDDLE_MENTIONS_MAX_TOKENS {
            return said;
        }
        names.pop();
    }
    String::new()
}

/// Where the first marker `cut_text` wrote into `text` stands (the byte range of the marker,
/// from its `[` to its `]`), or None. A marker stands at the start of a line (its head, when
/// one was kept, ends with a newline before it).
pub fn cut_marker_at(text: &str) -> Option<std::ops::Range<usize>> {
    static LINE_BRACKET: std::sync::OnceLock<memchr::memmem::Finder<'static>> =
        std::sync::OnceLock::new();
    // The `[`s that open a line: the text's first character, then each found after a newline
    // by one vectorized search (a search for every `[` stopped at each index of code a digest
    // reads, every assistant turn asked).
    let first = text.starts_with('[').then_some(0);
    let after_newlines = LINE_BRACKET
        .get_or_init(|| memchr::memmem::Finder::new(b"\n["))
        .find_iter(text.as_bytes())
        .map(|i| i + 1);
    for at in first.into_iter().chain(after_newlines) {
        let rest = &text[at..];
        let line = &rest[..rest.find('\n').unwrap_or(rest.len())];
        let Some(body) = line
            .strip_prefix("[... ~")
            .or_else(|| line.strip_prefix("[~"))
        else {
            continue;
        };
        let digits = body
            .find(|c: char| !(c.is_ascii_digit() || c == ','))
            .unwrap_or(body.len());
        let Some(after) = body[digits..].strip_prefix(" tokens cut") else {
            continue;
        };
        let Some(close) = after.find(']') else {
            continue;
        };
        let said = &after[..close];
        let known = digits > 0
            && (said.is_empty()
                || said == " from the middle ..."
                || (said.starts_with(" from the middle; mentions ") && said.ends_with(" ..."))
                || (said.starts_with(" from the middle; id=")
                    && said.ends_with(" restores the whole ..."))
                || (said.starts_with("; id=") && said.ends_with(" restores it")));
        if known {
            let end = at + (line.len() - after.len() + close + 1);
            return Some(at..end);
        }
    }
    None
}

/// The edit that cuts the middle of message `i` down to about `keep_tokens` (the message's
/// price), in the message's
/// own format, with the id and the whole text it folds: a tool result's text (the largest
/// result block), or a plain text message; failing both, with `arguments`, its longest call
/// arguments cut (`cut_arguments`: only where nothing can be folded, the cut of last resort; a
/// degrading step or the tail fill folds such a call instead). None when the message holds
/// none of these, or its format cannot write the cut.
pub fn cut_middle(
    msgs: &[Message<'_>],
    i: usize,
    keep_tokens: u32,
    est: &Estimator,
    named: bool,
    arguments: bool,
) -> Option<(MaskEdit, String, String)> {
    let m = &msgs[i];
    let joined = |ps: &[Part<'_>]| -> Option<String> {
        if ps.is_empty() || !ps.iter().all(|p| matches!(p, Part::Text(_))) {
            return None;
        }
        Some(
            ps.iter()
                .filter_map(|p| match p {
                    Part::Text(t) => Some(t.as_ref()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        )
    };
    let whole_content = || -> Option<Cow<'_, str>> {
        match &m.content {
            Content::Text(t) => Some(Cow::Borrowed(t.as_ref())),
            Content::Parts(ps) => joined(ps).map(Cow::Owned),
            Content::None => None,
        }
    };
    let text_to_cut = || -> Option<(Cow<'_, str>, Slot)> {
        Some(if m.tool_call_id.is_some() {
            match whole_content() {
                Some(t) => (t, Slot::Result(None)),
                // Texts beside images (a screenshot's tool result): the longest text is cut,
                // the images kept (they are priced by their size, not their base64).
                None => {
                    let (k, t) = longest_text(m.parts())?;
                    (Cow::Borrowed(t), Slot::Part(k))
                }
            }
        } else if let Some((t, slot)) = m
            .parts()
            .iter()
            .enumerate()
            .filter_map(|(k, p)| match p {
                Part::ToolResult { content, .. } => match joined(content) {
                    Some(t) => Some((Cow::Owned(t), Slot::Result(Some(k)))),
                    // A result block of texts beside images: its longest text.
                    None => longest_text(content)
                        .map(|(j, t)| (Cow::Borrowed(t), Slot::ResultPart(k, j))),
                },
                _ => None,
            })
            .max_by_key(|(t, _)| t.len())
        {
            (t, slot)
        } else if let Some(t) = whole_content() {
            (t, Slot::Text)
        } else {
            // A long text beside other blocks (an assistant's essay before its `tool_use`):
            // the longest text block. Before, nothing could be cut there, and a history that
            // fit with its middle cut raised `CompactionBudgetError` in Anthropic's shape.
            // Only where it is most of the message: else the call's arguments are the cut.
            let (k, t) = longest_text(m.parts())
                .filter(|(_, t)| 2.0 * est.text(t) > f64::from(est.message(m)))?;
            (Cow::Borrowed(t), Slot::Part(k))
        })
    };
    let Some((whole, slot)) = text_to_cut() else {
        return if arguments {
            cut_arguments(msgs, i, keep_tokens, est, named)
        } else {
            None
        };
    };
    // `keep_tokens` is the message's price; the cut is made on its text's estimate, which
    // prices the same characters a little differently: scale by the message's own ratio. The
    // images the message keeps beside the cut text are priced by their size, outside it.
    let images = images_price(m, est);
    let price = (f64::from(est.message(m)) - images).max(1.0);
    let ratio = (est.text(&whole) / price).clamp(0.05, 1.0);
    let keep = (f64::from(keep_tokens) - images).max(0.0);
    let text = cut_text(&whole, (keep * ratio) as u32, est, named)?;
    let change = match slot {
        Slot::Result(part) => Change::ResultText { part, text },
        Slot::ResultPart(part, inner) => Change::ResultPartText { part, inner, text },
        Slot::Part(part) => Change::PartText { part, text },
        Slot::Text => Change::Text { text },
    };
    let edit = writable(msgs, i, change)?;
    Some((edit, fold_id(&whole), whole.into_owned()))
}

/// Where the text a middle cut shortens sits in its message.
enum Slot {
    /// A tool result's whole text: the message's own (None) or result block `k`'s.
    Result(Option<usize>),
    /// Text part `j` of result block `k`, beside its images.
    ResultPart(usize, usize),
    /// The text part at content position `k`.
    Part(usize),
    /// The message's plain text.
    Text,
}

/// The tokens of the images message `m` holds, its result blocks' too: kept beside a cut,
/// priced outside it.
fn images_price(m: &Message<'_>, est: &Estimator) -> f64 {
    let of = |ps: &[Part<'_>]| -> f64 {
        ps.iter()
            .filter(|p| matches!(p, Part::Image(_)))
            .map(|p| est.part(p))
            .sum()
    };
    m.parts()
        .iter()
        .map(|p| match p {
            Part::ToolResult { content, .. } => of(content),
            _ => 0.0,
        })
        .sum::<f64>()
        + of(m.parts())
}

/// The longest text part of `parts`, with its position.
fn longest_text<'m>(parts: &'m [Part<'_>]) -> Option<(usize, &'m str)> {
    parts
        .iter()
        .enumerate()
        .filter_map(|(k, p)| match p {
            Part::Text(t) => Some((k, t.as_ref())),
            _ => None,
        })
        .max_by_key(|(_, t)| t.len())
}

/// Arguments shorter than this (characters) are never cut: the call's own envelope costs as
/// much.
const MIN_CUT_ARGUMENTS_CHARS: usize = 256;

/// ... unless the cut names its id (recoverable): it then loses nothing for good, and the last
/// degrading step shrinks arguments over 64 characters (`degrade.HARD_ARGS_CHARS`), where a
/// cut that names none would leave a shrink no recall restores.
const MIN_NAMED_CUT_ARGUMENTS_CHARS: usize = 64;

/// The edit that shrinks the longest arguments of message `i`'s calls so that the message
/// costs about `keep_tokens`, with the id and the whole arguments it folds: a call whose
/// arguments alone exceed a budget (a file written whole, a pasted document) is otherwise
/// beyond any cut, where the same text in a result is cut. The longest string value is cut in
/// its middle, its marker naming the id when `named`, as a JSON result's is; arguments without
/// one long string are shrunk whole (`shrink_json`), an object's naming the id when `named` by
/// the key a recoverable prune's shrunk arguments carry (`recall::arguments_with_id`; another
/// root cannot name it: None). Valid JSON either way. None when the message makes no call with arguments of
/// `MIN_CUT_ARGUMENTS_CHARS` or more (`MIN_NAMED_CUT_ARGUMENTS_CHARS` when `named`), or none
/// that can be cut so.
fn cut_arguments(
    msgs: &[Message<'_>],
    i: usize,
    keep_tokens: u32,
    est: &Estimator,
    named: bool,
) -> Option<(MaskEdit, String, String)> {
    let m = &msgs[i];
    let (call, c) = calls_at(m).max_by_key(|(_, c)| c.arguments.len())?;
    let args: &str = &c.arguments;
    let least = if named {
        MIN_NAMED_CUT_ARGUMENTS_CHARS
    } else {
        MIN_CUT_ARGUMENTS_CHARS
    };
    if args.len() < least {
        return None;
    }
    // The room the arguments get: the message's price less what the rest of it costs, turned
    // into characters at the arguments' own characters per token.
    let args_tokens = est.text(args).max(1.0);
    let rest = (f64::from(est.message(m)) - args_tokens).max(0.0);
    let room = (f64::from(keep_tokens) - rest).max(16.0);
    let chars = args.chars().count() as f64;
    let max_chars = ((room * chars / args_tokens) as usize).max(64);
    let id = fold_id(args);
    let json = match cut_json_string(args, room, est, named.then_some(id.as_str()))
        .filter(|j| j.len() < args.len() && crate::shrink_json::is_valid_json(j))
    {
        Some(j) => j,
        // Recoverable, a cut must name its id: `shrink_json`'s markers have no place for it,
        // so an object gains the key a recoverable prune's shrunk arguments name theirs by
        // (`recall::arguments_with_id`), within the same room; other roots cannot name it.
        None if named => {
            let with_id = |json: &str| crate::recall::arguments_with_id(json, &id);
            let clause = with_id("{}").chars().count() - 2;
            let shrunk = crate::shrink_json::shrink_json(args, max_chars.saturating_sub(clause));
            // Collapsed whole (`{"_cut": "…[object of 4 keys cut]…"}`), the id alone says as
            // much: the recall gives every key back.
            let json = if crate::shrink_json::collapsed_whole(&shrunk) {
                with_id("{}")
            } else {
                with_id(&shrunk)
            };
            if !json.contains(id.as_str()) {
                return None;
            }
            json
        }
        None => crate::shrink_json::shrink_json(args, max_chars),
    };
    if json.len() >= args.len() {
        return None;
    }
    let edit = writable(msgs, i, Change::Arguments { call, json })?;
    Some((edit, id, args.to_string()))
}

/// What a compaction must keep at the end whatever the budget: `(task, last user turn,
/// floor start)`. The task is the first user request, the last user turn the last user message
/// that is not only tool results nor a text agent's observation (`is_observation`); the floor
/// starts at the last user turn (when it is not the task) or at the pending tool round (the
/// last assistant message with calls when only results follow it), else at the last message.
pub fn tail_floor(msgs: &[Message<'_>]) -> (Option<usize>, Option<usize>, usize) {
    use crate::compaction::Turn;
    let n = msgs.len();
    // A user message that says something (results merged with the user's words count too).
    let own_turn = |m: &Message<'_>| {
        Turn::of(m) == Turn::User
            && !is_observation(m)
            && (m.result_ids().next().is_none()
                || matches!(&m.content, Content::Parts(ps) if ps.iter().any(|p| matches!(p, Part::Text(_)))))
    };
    let task = msgs.iter().position(own_turn);
    let last_user = msgs.iter().rposition(own_turn);
    let mut start = n.saturating_sub(1);
    if let Some(a) = msgs
        .iter()
        .rposition(|m| Turn::of(m) == Turn::Assistant && m.has_tool_calls())
    {
        let only_results = msgs[a + 1..]
            .iter()
            .all(|m| m.result_ids().next().is_some() && !own_turn(m));
        if only_results {
            start = start.min(a);
        }
    }
    // A programmatic tool-calling run still going at the end is that pending round: its
    // client rounds name its server call (`server_call_span`).
    if let Some(s) = crate::server_call_span::ServerSpans::of(msgs).pending_from {
        start = start.min(s);
    }
    if let (Some(u), Some(t)) = (last_user, task) {
        if u > t {
            start = start.min(u);
        }
    }
    (task, last_user, start)
}

/// Whether user message `m` is a text agent's observation, the harness's answer to a command
/// (mini-swe-agent's opens with `<returncode>N</returncode>`), not a person's turn: like a tool
/// result, it may be cut when nothing else makes room (a SWE run's 2,659-token "output too
/// long" answer, kept whole as the last user turn, left the summary of 30 messages and the
/// previous summary 296 tokens). A person never opens a turn with the tag.
fn is_observation(m: &Message<'_>) -> bool {
    // (An observation with a person's words beside it, in one turn, is the person's turn too.)
    m.plain_text().is_some_and(|t| {
        t.trim_start().starts_with("<returncode>") && crate::tool_outcome::return_code(&t).is_some()
    }) && crate::digest::observation_and_words(m).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Provider;

    #[test]
    fn a_text_agent_s_observation_is_no_last_user_turn_but_a_person_s_words_are() {
        let msgs = vec![
            Message::text("system", "You run shell commands."),
            Message::text("user", "Fix the parser."),
            Message::text("assistant", "THOUGHT: run it.\n\n```bash\npytest\n```"),
            Message::text(
                "user",
                "<returncode>1</returncode>\n<output>\nFAILED\n</output>",
            ),
        ];
        // The last user turn is the task: the observation may be cut like a tool result.
        assert_eq!(tail_floor(&msgs), (Some(1), Some(1), 3));
        let mut with_person = msgs.clone();
        with_person.push(Message::text(
            "user",
            "Also update the docs, and <returncode> is fine.",
        ));
        assert_eq!(tail_floor(&with_person), (Some(1), Some(4), 4));
    }

    #[test]
    fn every_marker_a_cut_writes_is_found_where_it_stands() {
        let est = Estimator::new(Provider::OpenAI, "gpt-4o");
        let text: String = (0..2_000).map(|k| format!("line {k}: ok\n")).collect();
        for (keep, named) in [(200, true), (200, false), (40, true), (40, false)] {
            let cut = cut_text(&text, keep, &est, named).expect("cut");
            let at = cut_marker_at(&cut).expect("marker");
            assert!(
                cut[at.clone()].starts_with('[') && cut[at.clone()].ends_with(']'),
                "{cut}"
            );
            assert!(cut[at.clone()].contains("tokens cut"), "{cut}");
            assert!(!cut[at.end..].starts_with(']'));
        }
        // Text that only looks like one: mid-line, or not the library's words.
        for t in [
            "see [~12 tokens cut] here",
            "[~ tokens cut]",
            "[... ~12 tokens removed ...]",
            "a\n[~12 tokens cut, or so]",
        ] {
            assert!(cut_marker_at(t).is_none(), "{t}");
        }
        assert_eq!(cut_marker_at("a\n[~1,234 tokens cut]\nb"), Some(2..21));
    }

    #[test]
    fn a_cut_keeps_head_and_end_names_the_id_and_fits() {
        let est = Estimator::new(Provider::OpenAI, "gpt-4o");
        let text: String = (0..2_000)
            .map(|k| format!("line {k}: ok\n"))
            .collect::<String>()
            + "FAILED: 3 errors\n";
        let cut = cut_text(&text, 200, &est, true).expect("cut");
        assert!(cut.starts_with("line 0: ok"));
        assert!(cut.ends_with("FAILED: 3 errors\n"));
        assert!(cut.contains(&format!("id={}", fold_id(&text))));
        // The pieces are sized apart (head, marker, end) and the cut is read whole, on its
        // sample: 220 estimated where o200k counts 213 (the estimator refitted by
        // tools/fit_text_weights.py prices these lines 8% under their count, 13.5% before, so
        // the bound was 210 when the cut held more lines than its estimate said).
        assert!(est.text(&cut) <= 225.0, "{}", est.text(&cut));
        assert!(cut_text("short", 200, &est, true).is_none());
        // Not recoverable (no recall tool offered): the marker names no id and no tool.
        let unnamed = cut_text(&text, 200, &est, false).expect("cut");
        assert!(
            unnamed.contains("tokens cut from the middle ...]"),
            "{unnamed}"
        );
        assert!(
            !unnamed.contains("id=") && !unnamed.contains(RECALL_TOOL),
            "{unnamed}"
        );
    }

    #[test]
    fn a_cut_no_id_restores_names_the_ids_its_middle_held_and_still_fits() {
        let est = Estimator::new(Provider::OpenAI, "gpt-4o");
        let text: String = (0..40)
            .map(|k| {
                format!(
                    "segment {k}: flight HAT{:03} on 2024-05-{:02}, seat ok\n",
                    100 + k,
                    1 + k % 28
                )
            })
            .collect();
        let cut = cut_text(&text, 200, &est, false).expect("cut");
        let at = cut_marker_at(&cut).expect("marker");
        let marker = &cut[at.clone()];
        assert!(
            marker.starts_with("[... ~") && marker.contains("; mentions HAT1"),
            "{marker}"
        );
        // Each name is one the cut took away, whole: not one the head or end still shows.
        let said = marker
            .split("; mentions ")
            .nth(1)
            .unwrap()
            .trim_end_matches(" ...]");
        let (head, end) = (&cut[..at.start], &cut[at.end..]);
        for name in said.split(", ") {
            assert!(
                text.contains(name) && !head.contains(name) && !end.contains(name),
                "{name}: {cut}"
            );
        }
        assert!(est.text(&cut) <= 225.0, "{}", est.text(&cut));
        // A small cut names its middle's ids too (in the long marker, which says them); named
        // by an id (recoverable), or kept under what a marker and its names take, it names
        // nothing more.
        for keep in [64, 100] {
            let small = cut_text(&text, keep, &est, false).unwrap();
            let at = cut_marker_at(&small).expect("marker");
            assert!(small[at].contains("; mentions HAT1"), "{small}");
            assert!(est.text(&small) <= f64::from(keep) + 25.0, "{small}");
        }
        assert!(!cut_text(&text, 200, &est, true)
            .unwrap()
            .contains("; mentions "));
        assert!(!cut_text(&text, 48, &est, false)
            .unwrap()
            .contains("; mentions "));
    }

    #[test]
    fn a_cut_whose_middle_ends_in_a_multibyte_separator_names_its_mentions_without_panicking() {
        let est = Estimator::new(Provider::OpenAI, "gpt-4o");
        // Separators of two, three and four bytes, each between words, so that wherever the
        // cut's end falls the last separator before it may be one of them.
        for sep in ["\u{a0}", "—", "。", "\u{1f600}", " "] {
            for word in ["word", "HAT123", "ß"] {
                for n in [200, 2_001, 20_000] {
                    let text = format!("{word}{sep}").repeat(n);
                    for keep in [128, 200, 1_000] {
                        if let Some(cut) = cut_text(&text, keep, &est, false) {
                            assert!(cut_marker_at(&cut).is_some(), "{sep:?} {word} {n} {keep}");
                        }
                        // The separator straddles each byte offset of the end once.
                        let shifted = format!("x{text}");
                        let _ = cut_text(&shifted, keep, &est, false);
                    }
                }
            }
        }
        // The middle ends just after the separator, whole: the word after it is split by the
        // kept end and not named.
        let text = "a—b";
        assert_eq!(middle_mentions(text, 0, 4, &est), "");
    }

    #[test]
    fn a_call_whose_arguments_alone_are_huge_has_them_shrunk_to_valid_json() {
        // A file written whole by one call: no text to cut, 25,000 tokens of arguments.
        let est = Estimator::new(Provider::OpenAI, "gpt-4o");
        let content = "z".repeat(100_000);
        for history in [
            serde_json::json!([{"role": "assistant", "content": null, "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "write", "arguments":
                    serde_json::json!({"path": "a.txt", "content": content}).to_string()}}]}]),
            serde_json::json!([{"role": "assistant", "content": [
                {"type": "tool_use", "id": "t", "name": "write", "input": {"path": "a.txt", "content": content}}]}]),
        ] {
            let msgs = crate::wire::read_history(&&history).expect("readable");
            let (edit, id, whole) = cut_middle(&msgs, 0, 300, &est, true, true).expect("a cut");
            let json = arguments_of(&edit);
            let v: serde_json::Value = serde_json::from_str(json).expect("still JSON");
            assert_eq!(v["path"], "a.txt", "{json}");
            assert!(est.text(json) <= 330.0, "{}", est.text(json));
            assert!(whole.len() > 100_000 && id == fold_id(&whole));
            // Recoverable: the cut names the id that restores the whole arguments.
            assert!(json.contains(&format!("id={id}")), "{json}");
        }
        // Short arguments are the call's own: nothing to cut.
        let small = serde_json::json!([{"role": "assistant", "content": null, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "read", "arguments": "{\"path\": \"a\"}"}}]}]);
        let msgs = crate::wire::read_history(&&small).expect("readable");
        assert!(cut_middle(&msgs, 0, 2, &est, true, true).is_none());
    }

    /// The new arguments of an arguments edit.
    fn arguments_of(edit: &MaskEdit) -> &str {
        match edit {
            MaskEdit::Change {
                change: Change::Arguments { json, .. },
                ..
            } => json,
            _ => panic!("not an arguments edit: {edit:?}"),
        }
    }

    /// A chat history of one call making `arguments`.
    fn one_call(arguments: &str) -> serde_json::Value {
        serde_json::json!([{"role": "assistant", "content": null, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "update_reservation_flights", "arguments": arguments}}]}])
    }

    #[test]
    fn arguments_with_no_long_string_cut_recoverably_name_their_id_by_the_fold_key() {
        // A booking of 40 flights: many short values, none long enough to cut inside. Until
        // stop 86 a recoverable cut had no place for the id and gave up (None).
        let est = Estimator::new(Provider::OpenAI, "gpt-4o");
        let flights: Vec<serde_json::Value> = (0..40)
            .map(|k| serde_json::json!({"flight_number": format!("HAT{k:03}"), "date": "2024-05-25"}))
            .collect();
        let args = serde_json::json!({"reservation_id": "FQ8APE", "flights": flights}).to_string();
        let history = one_call(&args);
        let msgs = crate::wire::read_history(&&history).expect("readable");
        let (edit, id, whole) = cut_middle(&msgs, 0, 120, &est, true, true).expect("a cut");
        let json = arguments_of(&edit);
        let v: serde_json::Value = serde_json::from_str(json).expect("still JSON");
        assert_eq!(v[crate::recall::RECALL_TOOL], id.as_str(), "{json}");
        assert_eq!(v["reservation_id"], "FQ8APE", "{json}");
        assert!(json.len() < args.len() && whole == args && id == fold_id(&whole));
        assert!(est.text(json) <= 140.0, "{}", est.text(json));
        // A root that is not an object has no place for the key: no recoverable cut.
        let list = serde_json::Value::Array(flights).to_string();
        let history = one_call(&list);
        let msgs = crate::wire::read_history(&&history).expect("readable");
        assert!(cut_middle(&msgs, 0, 120, &est, true, true).is_none());
        assert!(cut_middle(&msgs, 0, 120, &est, false, true).is_some());
        // Short arguments (a few keys, under 256 characters) are the call's own unless the cut
        // names its id: then, collapsed whole, the id alone stands for them.
        let short = serde_json::json!({"reservation_id": "FQ8APE", "cabin": "economy",
            "flights": [{"flight_number": "HAT056", "date": "2024-05-25"}], "payment_id": "credit_card_7407366"})
        .to_string();
        let history = one_call(&short);
        let msgs = crate::wire::read_history(&&history).expect("readable");
        assert!(cut_middle(&msgs, 0, 16, &est, false, true).is_none());
        let (edit, id, whole) = cut_middle(&msgs, 0, 16, &est, true, true).expect("a named cut");
        let json = arguments_of(&edit);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(json).unwrap(),
            serde_json::json!({crate::recall::RECALL_TOOL: id})
        );
        assert_eq!(whole, short);
    }

    #[test]
    fn a_gemini_response_is_cut_inside_its_own_object_up_to_nearly_its_whole_size() {
        // The response `{"result": "<a reservation as JSON text>"}` was written back as
        // `{"output": "<that object as JSON text>"}`, its quotes escaped once more: above
        // ~1,750 of its 2,097 tokens the cut outgrew the whole in bytes, no cut could be
        // written, and a history that needed 1,945 landed at 87% of its budget.
        let est = Estimator::new(Provider::Gemini, "gemini-2.5-flash");
        let flights: String = (0..60)
            .map(|k| {
                format!(
                    r#"{{"flight_number": "HAT{k:03}", "date": "2024-05-{:02}", "price": {}}}, "#,
                    10 + k % 20,
                    100 + 7 * k
                )
            })
            .collect();
        let result =
            format!(r#"{{"reservation_id": "EUJUY6", "flights": [{flights}], "status": "ok"}}"#);
        let history = serde_json::json!([{"role": "user", "parts": [{"functionResponse": {
            "id": "c", "name": "get_reservation_details", "response": {"result": result}}}]}]);
        let msgs = crate::wire::read_history(&&history).expect("readable");
        let price = est.message(&msgs[0]);
        for keep in [price / 2, price * 9 / 10] {
            let (edit, id, whole) = cut_middle(&msgs, 0, keep, &est, true, false).expect("a cut");
            let MaskEdit::Change { path, value, .. } = &edit else {
                panic!("not a change: {edit:?}")
            };
            assert_eq!(path.last(), Some(&crate::wire::Step::Key("response")));
            // The same object, its one string cut in the middle, its head and end in place.
            let v: serde_json::Value = serde_json::from_str(value).expect("JSON");
            let cut = v["result"].as_str().expect("the result key stays");
            assert_eq!(v.as_object().map(|o| o.len()), Some(1), "{value}");
            assert!(cut.starts_with(r#"{"reservation_id": "EUJUY6""#), "{cut}");
            assert!(cut.ends_with(r#""status": "ok"}"#), "{cut}");
            assert!(cut.contains(&format!("id={id}")));
            assert!(whole.contains("HAT031"));
        }
        // A placeholder (plain text) is still the function's `output`.
        let text = Change::ResultText {
            part: Some(0),
            text: "[output pruned]".to_string(),
        };
        let written = crate::wire::write_edit(0, &msgs[0], &text).expect("written");
        assert_eq!(written.value, r#"{"output":"[output pruned]"}"#);
    }

    #[test]
    fn a_json_envelope_is_cut_inside_its_output_and_stays_json() {
        let est = Estimator::new(Provider::OpenAI, "gpt-4o");
        let output: String = (0..2_000)
            .map(|k| format!("line {k}: \"ok\"\n"))
            .collect::<String>()
            + "FAILED: 3 errors";
        let mut text = String::from("{\"output\": ");
        push_json_string(&mut text, &output);
        text.push_str(", \"exit_code\": 1, \"error\": null}");
        let cut = cut_text(&text, 200, &est, true).expect("cut");
        let v: serde_json::Value = serde_json::from_str(&cut).expect("still JSON");
        let out = v["output"].as_str().expect("output");
        assert!(out.starts_with("line 0: \"ok\""));
        assert!(out.ends_with("FAILED: 3 errors"));
        // The id restores the whole envelope, not its output alone.
        assert!(out.contains(&format!("id={}", fold_id(&text))));
        assert!(cut.ends_with(", \"exit_code\": 1, \"error\": null}"));
        assert!(est.text(&cut) <= 210.0, "{}", est.text(&cut));
        // Not JSON (cut by an older version, or a text that only looks like it): cut as text.
        let broken = format!("{{\"output\": \"{}", "x ".repeat(3_000));
        assert!(cut_text(&broken, 200, &est, true).is_some());
    }

    #[test]
    fn a_colored_test_run_is_cut_though_its_json_escapes_outgrow_its_bytes() {
        // pytest's ANSI colours are 1 byte each in the text and 6 (`\u001b`) in the request:
        // a cut to 88% of the tokens is smaller than the JSON it replaces, not than the raw
        // bytes, and the lower bound alone refused it (astropy-14369's 9,074-byte run).
        let est = Estimator::new(Provider::OpenAI, "gpt-4o");
        let text = format!(
            "platform linux -- Python 3.9.20\n{}\n{}\n\u{1b}[32m732 passed\u{1b}[0m in 1.06s",
            "collected 732 items, running tests in astropy/units/tests/test_format.py ".repeat(40),
            "\u{1b}[32m.\u{1b}[0m".repeat(1_500)
        );
        // As a string, and as a list of text parts (an Anthropic user turn).
        let mut parts = Message::text("user", "");
        parts.content = Content::Parts(vec![Part::Text(Cow::Borrowed(text.as_str()))]);
        for msgs in [[Message::text("user", &text)], [parts]] {
            let price = est.message(&msgs[0]);
            for keep in [price / 2, price * 7 / 8] {
                let (_, _, whole) = cut_middle(&msgs, 0, keep, &est, false, false).expect("a cut");
                assert_eq!(whole, text);
            }
        }
    }
}
