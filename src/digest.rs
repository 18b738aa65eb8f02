//! The extractive digest: an offline, deterministic summary of folded messages that fills the
//! token room it is given.
//!
//! Units, from the most to the least protected: the standing rules of user and system messages
//! (verbatim, never dropped), every user request (verbatim; a long one keeps its head and end;
//! shortened, never dropped), errors with their message, each tool call with its arguments whole
//! (a long value or command loses its middle, never its end) and the last lines of its result
//! (test counts, exit codes), the assistant's conclusions, the last state and open items, and
//! the identifier index (`identifier_index`) over the span. Each unit starts in its richest form;
//! while the digest is over its room, the oldest units of the cheapest kind are shortened, then
//! dropped (old tool calls first: their identifiers stay in the index), so what is left is the
//! most information per token, recent before old. A previous digest is merged section by
//! section: its requests and rules are kept (deduplicated), its identifiers carried.

use std::borrow::Cow;
use std::collections::HashSet;

use serde_json::Value;

use crate::estimate::Estimator;
use crate::identifier_index::{self, Collector};
use crate::message::{Content, Message, Part, Role};
use crate::standing_rules::rules_in;

/// Options of a digest.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DigestOptions<'a> {
    /// Tokens (the estimator's) the digest may take.
    pub max_tokens: u64,
    /// The text of the summary being updated (iterative compaction).
    pub previous: Option<&'a str>,
    /// A focus string: entries mentioning its words are dropped last.
    pub instructions: Option<&'a str>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Section {
    Rules,
    Requests,
    Errors,
    Calls,
    Conclusions,
    LastState,
    Open,
    Earlier,
}

const SECTIONS: [(Section, &str); 8] = [
    (Section::Rules, "Standing rules"),
    (Section::Requests, "User requests"),
    (Section::Errors, "Errors"),
    (Section::Calls, "Tool calls"),
    (Section::Conclusions, "Assistant conclusions"),
    (Section::LastState, "Last state"),
    (Section::Open, "Open items"),
    (Section::Earlier, "Earlier summary"),
];

/// Titles of earlier digests' sections, read back into today's.
const OLD_TITLES: [(&str, Section); 2] = [
    ("Decisions and notes", Section::Conclusions),
    ("User constraints", Section::Rules),
];

/// Characters of a result in a call's fullest form (used while the room allows: a summary
/// fills the room it is given).
const FULLEST_RESULT_CHARS: usize = 6_000;

/// Characters of a successful result kept in a call's shortest form: a short result (a sum, a
/// count, "Transfer successful") survives whole, a long one keeps its end.
const SHORT_RESULT_CHARS: usize = 48;
/// A tool call's arguments in its shortest form, whole (characters).
const SHORTEST_CALL_CHARS: usize = 160;

/// Share of the room the identifiers carried from the previous summary may keep.
const CARRIED_INDEX_SHARE: f64 = 0.5;

/// Share of the room the identifier index is sure to get (it takes more when the rest is short).
const INDEX_SHARE: f64 = 0.25;

#[derive(Debug, Clone)]
struct Entry {
    section: Section,
    /// Forms from the richest to the shortest; `level` is the one used.
    forms: Vec<String>,
    level: usize,
    focus: bool,
    alive: bool,
    tokens: f64,
    /// For a rule: the request entry it was said in (it need not be written twice).
    from: Option<usize>,
    /// Tokens of each form (priced once, before packing).
    costs: Vec<f64>,
}

impl Entry {
    fn text(&self) -> &str {
        &self.forms[self.level]
    }
}

const ERROR_WORDS: [&str; 9] = [
    "error",
    "exception",
    "traceback",
    "failed",
    "failure",
    "not found",
    "invalid",
    "denied",
    "no such file",
];

/// Sentences this short (characters) at either edge of a request are courtesy ("No problem.",
/// "Can you help with that?") when the rest is long: clipped forms leave them out.
const COURTESY_CHARS: usize = 28;

/// `text` without a short first sentence and a short last sentence, when what stays is still
/// three times as long as what goes; `text` itself otherwise.
fn without_courtesy_edges(text: &str) -> &str {
    let t = text.trim();
    let ends = |i: usize, c: char| {
        matches!(c, '.' | '!' | '?') && t[i + 1..].starts_with(char::is_whitespace)
    };
    let mut a = 0;
    if let Some((i, c)) = t.char_indices().find(|&(i, c)| ends(i, c)) {
        if i < COURTESY_CHARS {
            a = i + c.len_utf8();
        }
    }
    let mut b = t.len();
    let body = t.trim_end_matches(['.', '!', '?']);
    if let Some((i, c)) = body.char_indices().rev().find(|&(i, c)| ends(i, c)) {
        if t.len() - i <= COURTESY_CHARS && i >= a {
            b = i + c.len_utf8();
        }
    }
    let core = t[a..b].trim();
    if core.len() * 3 >= (t.len() - core.len()) * 9 && core.len() > 2 * COURTESY_CHARS {
        core
    } else {
        text
    }
}

/// Whitespace collapsed, at most `max` characters (an ellipsis marks a cut).
fn clip(s: &str, max: usize) -> String {
    clip_ends(s, max, 1.0)
}

/// Whitespace collapsed (a line never carries a newline); over `max` characters, the head
/// (`head_share` of `max`) and the end are kept around an ellipsis.
fn clip_ends(s: &str, max: usize, head_share: f64) -> String {
    // Only the edges can be kept: a long text is cut to windows of its head and end first (a
    // window of 8 bytes per character kept covers squeezed rules and runs of spaces), so the
    // work is bounded by `max`, not by the text.
    let window = max.saturating_mul(8).max(64);
    let cut;
    let s = if s.len() > 2 * window {
        let head_w = ((window as f64 * head_share * 2.0) as usize).min(s.len());
        let mut a = head_w;
        while !s.is_char_boundary(a) {
            a -= 1;
        }
        let mut b = s.len() - (2 * window - head_w).min(s.len());
        while !s.is_char_boundary(b) {
            b += 1;
        }
        cut = format!("{} … {}", &s[..a], &s[b.max(a)..]);
        cut.as_str()
    } else {
        s
    };
    // A unit's shortened forms clip the same text several times over: its collapsed line and
    // character count are kept from the last call (compared by content, never by address).
    COLLAPSED.with(|cell| {
        let mut cached = cell.borrow_mut();
        if cached.0 != s {
            let squeezed = squeeze_rules(s);
            let mut line = String::with_capacity(squeezed.len().min(max * 4 + 8));
            for w in squeezed.split_whitespace() {
                if !line.is_empty() {
                    line.push(' ');
                }
                line.push_str(w);
            }
            let total = line.chars().count();
            cached.0.clear();
            cached.0.push_str(s);
            cached.1 = line;
            cached.2 = total;
        }
        cut_line(&cached.1, cached.2, max, head_share)
    })
}

thread_local! {
    /// The last text `clip_ends` collapsed: (input, collapsed line, its characters).
    static COLLAPSED: std::cell::RefCell<(String, String, usize)> =
        const { std::cell::RefCell::new((String::new(), String::new(), 0)) };
}

/// `line` (collapsed, `total` characters) at most `max` characters: its head (`head_share` of
/// `max`) and end around an ellipsis.
fn cut_line(line: &str, total: usize, max: usize, head_share: f64) -> String {
    if line.len() <= max || total <= max {
        return line.to_string();
    }
    let head_n = ((max as f64 * head_share) as usize).min(total);
    let tail_n = max.saturating_sub(head_n).min(total - head_n);
    let head_end = line
        .char_indices()
        .nth(head_n)
        .map_or(line.len(), |(i, _)| i);
    // The tail's start counted from the end: O(tail), not O(line).
    let tail_start = if tail_n == 0 {
        line.len()
    } else {
        line.char_indices()
            .rev()
            .nth(tail_n - 1)
            .map_or(line.len(), |(i, _)| i)
    };
    let mut out = String::with_capacity(head_end + (line.len() - tail_start) + 3);
    out.push_str(&line[..head_end]);
    out.push('…');
    out.push_str(&line[tail_start..]);
    out
}

/// The text of a message: borrowed when it is one string, joined text blocks otherwise.
fn text_of<'m>(m: &'m Message<'_>) -> Cow<'m, str> {
    match &m.content {
        Content::Text(t) => Cow::Borrowed(t.as_ref()),
        Content::Parts(ps) => Cow::Owned(parts_text(ps)),
        Content::None => Cow::Borrowed(""),
    }
}

fn parts_text(ps: &[Part<'_>]) -> String {
    let mut s = String::new();
    for p in ps {
        if let Part::Text(t) = p {
            if !s.is_empty() {
                s.push('\n');
            }
            s.push_str(t);
        }
    }
    s
}

fn looks_like_error(text: &str) -> bool {
    if let Some(rc) = return_code(text) {
        return rc != 0;
    }
    let head = lead(text, 400).to_ascii_lowercase();
    ERROR_WORDS.iter().any(|w| head.contains(w))
}

/// The first bytes of a text (on a character boundary): observation tags lead the text, so
/// looking for them further would scan whole outputs for nothing.
fn lead(text: &str, n: usize) -> &str {
    if text.len() <= n {
        return text;
    }
    let mut end = n;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// `<returncode>N</returncode>` of a mini-swe-agent observation (at the start of the text).
fn return_code(text: &str) -> Option<i64> {
    let text = lead(text, 256);
    let start = text.find("<returncode>")? + "<returncode>".len();
    let end = text[start..].find("</returncode>")? + start;
    text[start..end].trim().parse().ok()
}

/// The body of an observation: inside `<output>` when present.
fn observation_body(text: &str) -> &str {
    if let Some(s) = lead(text, 512).find("<output>") {
        let body = &text[s + "<output>".len()..];
        // The closing tag ends the text (or comes before a short trailer).
        let tail_from = body.len().saturating_sub(512);
        let tail_from = (tail_from..body.len())
            .find(|&i| body.is_char_boundary(i))
            .unwrap_or(body.len());
        return match body[tail_from..].find("</output>") {
            Some(e) => &body[..tail_from + e],
            None => body,
        };
    }
    text
}

/// Where the first code fence (```) starts: a byte search for the backtick, then a check.
fn find_fence(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut from = 0;
    while let Some(i) = b[from..].iter().position(|&c| c == b'`') {
        let at = from + i;
        if b.len() >= at + 3 && b[at + 1] == b'`' && b[at + 2] == b'`' {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// The first fenced code block of a text (its body, language line skipped).
fn fenced_command(text: &str) -> Option<&str> {
    let start = find_fence(text)?;
    let after = &text[start + 3..];
    let body_start = after.find('\n')? + 1;
    let body = &after[body_start..];
    let end = find_fence(body).unwrap_or(body.len());
    let cmd = body[..end].trim();
    (!cmd.is_empty()).then_some(cmd)
}

/// The reasoning before the command, without its `THOUGHT:` label.
fn thought(text: &str) -> &str {
    let before = match find_fence(text) {
        Some(i) => &text[..i],
        None => text,
    };
    before
        .trim()
        .strip_prefix("THOUGHT:")
        .unwrap_or(before.trim())
        .trim()
}

/// Runs of one punctuation character (`=====`, `-----` rules of test runners) cut to three:
/// they cost tokens and say nothing.
fn squeeze_rules(s: &str) -> Cow<'_, str> {
    let b = s.as_bytes();
    if !b
        .windows(4)
        .any(|w| w[0] == w[1] && w[1] == w[2] && w[2] == w[3] && w[0].is_ascii_punctuation())
    {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut run = 0;
    let mut prev = None;
    for ch in s.chars() {
        if Some(ch) == prev && ch.is_ascii_punctuation() {
            run += 1;
        } else {
            run = 1;
        }
        prev = Some(ch);
        if run <= 3 {
            out.push(ch);
        }
    }
    Cow::Owned(out)
}

/// `name(key=value, ...)`: every key, string values whole up to `max_value` characters (a
/// longer one keeps its head and end), nested values as compact JSON, likewise bounded.
fn call_line(
    name: &str,
    args: &str,
    parsed: &Result<Value, serde_json::Error>,
    max_value: usize,
) -> String {
    let mut s = String::from(name);
    s.push('(');
    match parsed {
        Ok(Value::Object(map)) => {
            for (k, (key, v)) in map.iter().enumerate() {
                if k == 16 {
                    s.push_str(", …");
                    break;
                }
                if k > 0 {
                    s.push_str(", ");
                }
                s.push_str(key);
                s.push('=');
                match v {
                    Value::String(t) => {
                        let shown = clip_ends(t, max_value, 0.6);
                        if shown.contains(' ') || shown.is_empty() {
                            s.push('"');
                            s.push_str(&shown);
                            s.push('"');
                        } else {
                            s.push_str(&shown);
                        }
                    }
                    other => s.push_str(&clip_ends(&other.to_string(), max_value * 2, 0.6)),
                }
            }
        }
        Ok(other) => s.push_str(&clip_ends(&other.to_string(), max_value * 2, 0.6)),
        Err(_) => s.push_str(&clip_ends(args, max_value * 2, 0.6)),
    }
    s.push(')');
    s
}

/// A command shown whole up to `max` characters; a longer one keeps its head and its end
/// (`&& git diff`, the file a heredoc writes to). Lines are joined by ` ⏎ `.
fn command_text(cmd: &str, max: usize) -> String {
    let joined: Vec<&str> = cmd
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    clip_ends(&joined.join(" ⏎ "), max, 0.6)
}

/// The outcome of a call from its result text, `chars` characters of it (its head and, more,
/// its end: the last lines say how it ended). None: no result in the span.
fn outcome(text: Option<&str>, chars: usize) -> (bool, String) {
    match text {
        None => (false, "no result in this span".into()),
        Some(t) => {
            let err = looks_like_error(t);
            let body = observation_body(t);
            let mut s = String::new();
            if let Some(rc) = return_code(t) {
                s.push_str(&format!("rc={rc}"));
                if chars > 0 && !body.trim().is_empty() {
                    s.push_str(": ");
                }
            }
            if chars > 0 {
                s.push_str(&clip_ends(body, chars, 0.35));
            }
            if s.is_empty() {
                s.push_str(if body.trim().is_empty() {
                    "(empty)"
                } else {
                    "…"
                });
            }
            (err, format!("{}: {s}", if err { "error" } else { "ok" }))
        }
    }
}

struct Builder {
    entries: Vec<Entry>,
    seen: HashSet<(Section, String)>,
    focus: Vec<String>,
    index: Collector,
}

impl Builder {
    fn push(&mut self, section: Section, forms: Vec<String>) {
        let mut forms: Vec<String> = forms.into_iter().filter(|f| !f.is_empty()).collect();
        forms.dedup();
        let Some(first) = forms.first() else {
            return;
        };
        // Deduplicated on the shortest form too: a request carried over in its short form is
        // the same request.
        let last = forms.last().cloned().unwrap_or_default();
        if self.seen.contains(&(section, first.clone()))
            || self.seen.contains(&(section, last.clone()))
        {
            return;
        }
        self.seen.insert((section, first.clone()));
        self.seen.insert((section, last));
        let focus = !self.focus.is_empty() && {
            let lower = first.to_lowercase();
            self.focus.iter().any(|w| lower.contains(w.as_str()))
        };
        self.entries.push(Entry {
            section,
            forms,
            level: 0,
            focus,
            alive: true,
            tokens: 0.0,
            from: None,
            costs: Vec::new(),
        });
    }

    fn request(&mut self, text: &str) {
        let at = self.entries.len();
        // The clipped forms are cut from the request without its courtesy edges: the
        // conditions sit in its middle, which a clip would lose first.
        let core = without_courtesy_edges(text);
        self.push(
            Section::Requests,
            vec![
                clip_ends(text, 4_000, 0.6),
                clip_ends(text, 1_500, 0.6),
                clip_ends(core, 400, 0.6),
                clip_ends(core, 240, 0.6),
                clip_ends(core, 160, 0.6),
                clip_ends(core, 120, 0.6),
                clip_ends(core, 80, 0.6),
            ],
        );
        let said_in = (self.entries.len() > at).then_some(at);
        for r in rules_in(text) {
            let before = self.entries.len();
            self.push(Section::Rules, vec![r]);
            if self.entries.len() > before {
                self.entries[before].from = said_in;
            }
        }
    }
}

/// Merge the sections of a previous digest (or keep foreign text as one entry); its identifier
/// index is carried into this one's.
fn merge_previous(b: &mut Builder, prev: &str) {
    b.index.carry(prev);
    let body = identifier_index::strip(prev);
    let mut current: Option<Section> = None;
    let mut old_list = false;
    let mut foreign = String::new();
    for line in body.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            let title = title.trim();
            old_list = matches!(title, "Files and paths" | "Identifiers");
            current = SECTIONS
                .iter()
                .find(|(_, t)| *t == title)
                .map(|(s, _)| *s)
                .or_else(|| {
                    OLD_TITLES
                        .iter()
                        .find(|(t, _)| *t == title)
                        .map(|(_, s)| *s)
                });
            continue;
        }
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if old_list {
            // An older digest's comma-separated lists: carried as identifiers.
            b.index.scan(line, 2.0, 0.0);
            continue;
        }
        let item = line.strip_prefix("- ").unwrap_or(line);
        match current {
            None => {
                if !line.starts_with("Earlier conversation folded") && !line.starts_with("Focus:") {
                    foreign.push_str(line);
                    foreign.push('\n');
                }
            }
            Some(Section::Requests) => b.request(item),
            // The state and open items of an older span are history now.
            Some(Section::LastState) => b.push(
                Section::Conclusions,
                vec![
                    format!("earlier state: {}", clip(item, 400)),
                    format!("earlier state: {}", clip(item, 120)),
                ],
            ),
            Some(Section::Open) => b.push(
                Section::Conclusions,
                vec![format!("earlier open item: {item}")],
            ),
            Some(s @ (Section::Calls | Section::Errors)) => {
                let head = match item.find(" -> ") {
                    Some(i) => &item[..i],
                    None => item,
                };
                b.push(s, vec![item.to_string(), clip(item, 240), clip(head, 120)]);
            }
            Some(s) => b.push(s, vec![item.to_string(), clip(item, 200)]),
        }
    }
    if !foreign.trim().is_empty() {
        for r in rules_in(&foreign) {
            b.push(Section::Rules, vec![r]);
        }
        b.push(
            Section::Earlier,
            vec![
                clip(&foreign, 2_000),
                clip(&foreign, 600),
                clip(&foreign, 200),
            ],
        );
    }
}

fn render(entries: &[Entry], header: &str, index: &str) -> String {
    let mut out = String::from(header);
    for (sec, title) in SECTIONS {
        let items: Vec<&Entry> = entries
            .iter()
            .filter(|e| e.alive && e.section == sec)
            .collect();
        if items.is_empty() {
            continue;
        }
        out.push_str("\n## ");
        out.push_str(title);
        out.push('\n');
        for e in items {
            if !matches!(sec, Section::LastState | Section::Earlier) {
                out.push_str("- ");
            }
            out.push_str(e.text());
            out.push('\n');
        }
    }
    if !index.is_empty() {
        out.push('\n');
        out.push_str(index);
        out.push('\n');
    }
    out
}

/// The digest of `msgs` (the folded middle), sized to `opt.max_tokens`.
pub fn digest(msgs: &[Message<'_>], est: &Estimator, opt: &DigestOptions<'_>) -> String {
    let focus: Vec<String> = opt
        .instructions
        .unwrap_or("")
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| w.len() >= 4)
        .map(|w| w.to_lowercase())
        .collect();
    let mut b = Builder {
        entries: Vec::new(),
        seen: HashSet::new(),
        focus,
        index: Collector::default(),
    };
    if let Some(prev) = opt.previous {
        merge_previous(&mut b, prev);
    }

    // Results by call id, within the span.
    let mut results: std::collections::HashMap<&str, Cow<'_, str>> =
        std::collections::HashMap::new();
    for m in msgs {
        if let Some(id) = m.tool_call_id {
            results.insert(id, text_of(m));
        }
        if let Content::Parts(ps) = &m.content {
            for p in ps {
                if let Part::ToolResult {
                    tool_use_id,
                    content,
                } = p
                {
                    results.insert(tool_use_id, Cow::Owned(parts_text(content)));
                }
            }
        }
    }
    let n = msgs.len().max(1) as f64;
    // Every unit starts in its fullest form (a summary fills the room it is given).
    let skip = 0usize;
    // Whether this agent's observations carry a return code (mini-swe-agent's do).
    let coded = msgs
        .iter()
        .any(|m| matches!(m.role, Role::User | Role::Other) && return_code(&text_of(m)).is_some());
    // The newest assistant thought: the last state, and where open items are looked for.
    let mut last_thought: Option<usize> = None;
    let mut n_calls = 0usize;
    let mut n_errors = 0usize;
    let mut n_requests = 0usize;
    let mut prev_command: Option<String> = None;
    for (k, m) in msgs.iter().enumerate() {
        // The previous summary comes as `opt.previous` (only one the library trusts as its
        // own); a text that merely carries the marker is data like any other.
        if let (Some(s), Some(p)) = (crate::compaction::own_summary(m), opt.previous) {
            if p.contains(s.trim()) {
                continue;
            }
        }
        identifier_index::scan_message(&mut b.index, m, (k + 1) as f64 / n);
        match m.role {
            Role::System | Role::Developer => {
                for r in rules_in(&text_of(m)) {
                    b.push(Section::Rules, vec![r]);
                }
            }
            Role::User | Role::Other if m.result_ids().next().is_none() => {
                let text = text_of(m);
                // A text agent's observation: it opens with its return code; where the agent's
                // observations carry none, the user turn right after a command.
                let observation =
                    return_code(&text).is_some() || (prev_command.is_some() && !coded);
                let cmd = prev_command.take().filter(|_| observation).or_else(|| {
                    return_code(&text)
                        .is_some()
                        .then(|| "(command not in this span)".to_string())
                });
                if let Some(cmd) = cmd {
                    // A text agent's observation of the command before it.
                    n_calls += 1;
                    let err = looks_like_error(&text);
                    let line = |c: usize, chars: usize| {
                        format!(
                            "$ {} -> {}",
                            command_text(&cmd, c),
                            outcome(Some(&text), chars).1
                        )
                    };
                    let plan = [
                        (2_000, FULLEST_RESULT_CHARS),
                        (600, if err { 900 } else { 700 }),
                        (300, if err { 360 } else { 200 }),
                        (140, if err { 160 } else { SHORT_RESULT_CHARS }),
                    ];
                    let forms = plan[skip..].iter().map(|&(c, o)| line(c, o)).collect();
                    if err {
                        n_errors += 1;
                        b.push(Section::Errors, forms);
                    } else {
                        b.push(Section::Calls, forms);
                    }
                } else if !text.trim().is_empty() {
                    n_requests += 1;
                    b.request(&text);
                }
            }
            Role::Assistant => {
                let text = text_of(m);
                prev_command = None;
                if !text.trim().is_empty() {
                    if let Some(cmd) = fenced_command(&text) {
                        prev_command = Some(cmd.to_string());
                    }
                    let t = thought(&text);
                    if !t.is_empty() {
                        // The previous thought becomes a conclusion; the newest is the last state.
                        if let Some(prev) = last_thought.replace(k) {
                            let pt = text_of(&msgs[prev]);
                            let th = thought(&pt);
                            b.push(
                                Section::Conclusions,
                                vec![
                                    clip_ends(th, 4_000, 0.6),
                                    clip_ends(th, 900, 0.6),
                                    clip_ends(th, 300, 0.6),
                                    clip_ends(th, 120, 0.7),
                                ],
                            );
                        }
                    }
                }
                let calls = m.tool_calls.iter().chain(match &m.content {
                    Content::Parts(ps) => ps
                        .iter()
                        .filter_map(|p| match p {
                            Part::ToolUse(c) => Some(c),
                            _ => None,
                        })
                        .collect::<Vec<_>>(),
                    _ => Vec::new(),
                });
                for c in calls {
                    n_calls += 1;
                    let res = results.get(c.id).map(|s| s.as_ref());
                    let err = res.is_some_and(looks_like_error);
                    let parsed = serde_json::from_str::<Value>(&c.arguments);
                    let line = |max: usize, chars: usize| {
                        format!(
                            "{} -> {}",
                            call_line(c.name, &c.arguments, &parsed, max),
                            outcome(res, chars).1
                        )
                    };
                    let plan = [
                        (1_200, FULLEST_RESULT_CHARS),
                        (400, if err { 900 } else { 600 }),
                        (160, if err { 360 } else { 160 }),
                        (60, if err { 160 } else { SHORT_RESULT_CHARS }),
                    ];
                    let mut forms: Vec<String> =
                        plan[skip..].iter().map(|&(m, o)| line(m, o)).collect();
                    // The shortest form bounds the arguments as a whole (a booking's nested
                    // lists of flights, passengers and payments run to hundreds of characters
                    // at 60 per value); the outcome, an error's message, stays.
                    forms.push(format!(
                        "{} -> {}",
                        clip_ends(
                            &call_line(c.name, &c.arguments, &parsed, 60),
                            SHORTEST_CALL_CHARS,
                            0.6
                        ),
                        outcome(res, if err { 160 } else { SHORT_RESULT_CHARS }).1
                    ));
                    if err {
                        n_errors += 1;
                        b.push(Section::Errors, forms);
                    } else {
                        b.push(Section::Calls, forms);
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(k) = last_thought {
        let text = text_of(&msgs[k]);
        let t = thought(&text);
        b.push(
            Section::LastState,
            vec![
                clip_ends(t, 900, 0.6),
                clip_ends(t, 400, 0.6),
                clip_ends(t, 160, 0.6),
            ],
        );
        let mut open = Vec::new();
        for line in t.lines() {
            let l = line.to_lowercase();
            if l.contains("todo")
                || l.starts_with("next")
                || l.contains("next step")
                || l.contains("still need")
                || l.contains("i need to")
            {
                open.push(clip(line, 240));
            }
        }
        for o in open.into_iter().rev().take(3) {
            b.push(Section::Open, vec![o]);
        }
    }

    let mut header = format!(
        "Earlier conversation folded by contextfold ({} messages: {} user requests, {} tool calls, {} errors).",
        msgs.len(),
        n_requests,
        n_calls,
        n_errors
    );
    if let Some(i) = opt.instructions.filter(|s| !s.trim().is_empty()) {
        header.push_str("\nFocus: ");
        header.push_str(&clip(i, 300));
    }
    let Builder { entries, index, .. } = b;
    fit(entries, &header, index.ranked(), est, opt.max_tokens)
}

/// One packing of `entries` into `room` tokens (see `fit`); the index takes what is left of
/// `limit`.
#[allow(clippy::too_many_arguments)]
fn pack(
    mut entries: Vec<Entry>,
    header: &str,
    idents: &[identifier_index::Ident],
    est: &Estimator,
    fixed: f64,
    room: f64,
    limit: f64,
) -> String {
    // A rule said inside a request kept whole is not written twice: it costs nothing while
    // that request's form still holds it, and comes back when the request is shortened.
    let mut cover: Vec<Option<usize>> = entries
        .iter()
        .map(|r| {
            r.from
                .filter(|&q| r.section == Section::Rules && entries[q].text().contains(r.text()))
        })
        .collect();
    let mut total: f64 = fixed
        + entries
            .iter()
            .zip(&cover)
            .filter(|(_, c)| c.is_none())
            .map(|(e, _)| e.tokens)
            .sum::<f64>();
    // Each phase: which section, keep the newest `keep`, shorten (to the next form) or drop.
    // Rules are never dropped (they render first: only the last-resort cut could reach them);
    // requests only when even their shortest forms do not fit.
    // An error's detail (its arguments) is shortened to its shortest form before any
    // request is: the error's message stays in every form.
    let phases: [(Section, usize, bool); 27] = [
        (Section::Calls, 0, true),
        (Section::Conclusions, 0, true),
        (Section::Calls, 0, true),
        (Section::Earlier, 0, true),
        (Section::Conclusions, 0, true),
        (Section::Calls, 0, true),
        (Section::LastState, 0, true),
        (Section::Conclusions, 0, true),
        (Section::Calls, 8, false),
        (Section::Conclusions, 6, false),
        (Section::Calls, 0, true),
        (Section::Calls, 4, false),
        (Section::Earlier, 0, true),
        (Section::Conclusions, 3, false),
        (Section::Errors, 0, true),
        (Section::Errors, 0, true),
        (Section::Errors, 0, true),
        (Section::Requests, 0, true),
        (Section::Errors, 0, true),
        (Section::Errors, 3, false),
        (Section::Requests, 0, true),
        (Section::Open, 1, false),
        (Section::Earlier, 0, false),
        (Section::Requests, 0, true),
        // Last resorts when even the shortest requests do not fit: the oldest go first.
        (Section::Conclusions, 0, false),
        (Section::Calls, 0, false),
        (Section::Requests, 3, false),
    ];
    // Requests dropped as a last resort keep the first ones of the span (the goal) too.
    const FIRST_REQUESTS_KEPT: usize = 2;
    for focus_pass in [false, true] {
        for &(sec, keep, shorten) in &phases {
            if total <= room {
                break;
            }
            let idx: Vec<usize> = (0..entries.len())
                .filter(|&i| {
                    entries[i].alive
                        && entries[i].section == sec
                        && (focus_pass || !entries[i].focus)
                })
                .collect();
            let n = idx.len();
            let mut order: Vec<(usize, usize)> = idx.iter().copied().enumerate().collect();
            if !shorten && matches!(sec, Section::Calls | Section::Conclusions) {
                // Among the droppable (all but the newest `keep`), the costliest go first: a
                // short line (`calculate(2499 - 1327) -> 1172.0`) holds as much as a long one
                // for a fraction of the room. Ties: the oldest first.
                order.sort_by(|&(ka, a), &(kb, b)| {
                    (ka + keep >= n)
                        .cmp(&(kb + keep >= n))
                        .then(entries[b].tokens.total_cmp(&entries[a].tokens))
                        .then(ka.cmp(&kb))
                });
            }
            for (k, i) in order {
                if total <= room {
                    break;
                }
                if shorten {
                    let e = &mut entries[i];
                    if e.level + 1 < e.forms.len() {
                        e.level += 1;
                        let t = e.costs[e.level];
                        total += t - e.tokens;
                        e.tokens = t;
                    }
                } else if k + keep < n
                    && !(sec == Section::Requests
                        && k < FIRST_REQUESTS_KEPT
                        && n > keep + FIRST_REQUESTS_KEPT)
                {
                    entries[i].alive = false;
                    total -= entries[i].tokens;
                } else {
                    continue;
                }
                if entries[i].section == Section::Requests {
                    for r in 0..entries.len() {
                        if cover[r] == Some(i)
                            && (!entries[i].alive || !entries[i].text().contains(entries[r].text()))
                        {
                            cover[r] = None;
                            total += entries[r].tokens;
                        }
                    }
                }
            }
        }
    }
    // A shortening can free more than needed (one long output): give the room left back, a
    // form at a time, and bring back dropped units that fit again. The user's requests first,
    // one form at a time across all of them, newest first (a clipped request loses its middle
    // clause, where the conditions sit: more requests a form longer beat one request whole);
    // then the other units, newest first.
    let requests: Vec<usize> = (0..entries.len())
        .rev()
        .filter(|&i| entries[i].section == Section::Requests)
        .collect();
    let mut grew = true;
    while grew {
        grew = false;
        for &i in &requests {
            if give_back(&mut entries[i], cover[i].is_none(), &mut total, room, true) {
                grew = true;
            }
        }
    }
    for i in (0..entries.len()).rev() {
        if entries[i].section != Section::Requests {
            give_back(&mut entries[i], cover[i].is_none(), &mut total, room, false);
        }
    }
    // The index gets its share and what the rest left.
    let index_room = (limit - total).max(0.0);
    let index = identifier_index::render(idents, est, index_room as u64);
    for (e, c) in entries.iter_mut().zip(&cover) {
        if c.is_some() {
            e.alive = false;
        }
    }
    render(&entries, header, &index)
}

/// Give `e` back what fits of the room left: bring it back when dropped (`revivable`: no kept
/// request covers it) in its shortest form, then longer forms, one (`one_form`) or as many as
/// fit. True when it grew.
fn give_back(e: &mut Entry, revivable: bool, total: &mut f64, room: f64, one_form: bool) -> bool {
    if !e.alive {
        if !revivable {
            return false;
        }
        let level = e.forms.len() - 1;
        let t = e.costs[level];
        if *total + t > room {
            return false;
        }
        e.alive = true;
        e.level = level;
        e.tokens = t;
        *total += t;
        if one_form {
            return true;
        }
    }
    let mut grew = false;
    while e.level > 0 {
        let t = e.costs[e.level - 1];
        if *total + t - e.tokens > room {
            break;
        }
        *total += t - e.tokens;
        e.level -= 1;
        e.tokens = t;
        grew = true;
        if one_form {
            break;
        }
    }
    grew
}

/// Shorten, then drop, the least informative units until the digest fits `max_tokens`; the
/// identifier index takes at least its share and whatever room the rest leaves.
fn fit(
    mut entries: Vec<Entry>,
    header: &str,
    idents: Vec<identifier_index::Ident>,
    est: &Estimator,
    max_tokens: u64,
) -> String {
    // Per line: its text plus ~1 token of list syntax.
    for e in &mut entries {
        e.costs = e.forms.iter().map(|f| est.text(f) + 1.0).collect();
        e.tokens = e.costs[0];
    }
    let fixed = est.text(header) + 3.0 * SECTIONS.len() as f64;
    let budget = max_tokens as f64;
    let natural_index = est.text(&identifier_index::render(&idents, est, max_tokens)) + 2.0;
    // Identifiers carried from the previous summary keep their room (up to half of it): a
    // second compaction keeps what the first one indexed.
    let carried: Vec<identifier_index::Ident> =
        idents.iter().filter(|i| i.carried).cloned().collect();
    let carried_cost = if carried.is_empty() {
        0.0
    } else {
        est.text(&identifier_index::render(&carried, est, max_tokens)) + 2.0
    };
    let share = INDEX_SHARE.max((carried_cost / budget.max(1.0)).min(CARRIED_INDEX_SHARE));
    let reserved = natural_index.min(budget * share);
    let room = budget - reserved;
    let limit = budget;
    let mut out = String::new();
    let mut best: Option<(f64, String)> = None;
    // Line-by-line prices differ a little from the rendered whole: pack again into a room
    // moved by the difference, over or under, and keep the fullest packing that fits (the last
    // resort cuts characters).
    // The shift of room and limit: moved by the gap until the fit is bracketed, then bisected.
    let (mut shift, mut fits, mut over): (f64, Option<f64>, Option<f64>) = (0.0, None, None);
    for _ in 0..8 {
        out = pack(
            entries.clone(),
            header,
            &idents,
            est,
            fixed,
            room + shift,
            limit + shift,
        );
        let used = est.text(&out);
        if used <= budget && best.as_ref().is_none_or(|(b, _)| used > *b) {
            best = Some((used, out.clone()));
        }
        let gap = budget - used;
        if (0.0..=budget * 0.02 + 2.0).contains(&gap) {
            break;
        }
        if gap < 0.0 {
            over = Some(shift);
        } else {
            fits = Some(shift);
        }
        shift = match (fits, over) {
            (Some(a), Some(b)) => (a + b) / 2.0,
            _ => shift + gap - if gap < 0.0 { 4.0 } else { 1.0 },
        };
    }
    if let Some((_, b)) = best {
        return b;
    }
    if est.text(&out) > budget {
        // Last resort: cut by characters (about 3 characters per token), on a line boundary;
        // the index and the oldest details are at the end.
        let mut max_chars = (budget * 3.0) as usize;
        while max_chars > 0 && est.text(&out) > budget {
            let mut cut = out
                .char_indices()
                .nth(max_chars)
                .map(|(i, _)| i)
                .unwrap_or(out.len());
            if let Some(nl) = out[..cut].rfind('\n') {
                cut = nl;
            }
            out.truncate(cut);
            max_chars = max_chars * 9 / 10;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;
    use crate::provider::Provider;
    use std::borrow::Cow;

    fn est() -> Estimator {
        Estimator::new(Provider::OpenAI, "")
    }

    fn history<'a>() -> Vec<Message<'a>> {
        let mut v = vec![Message::text(
            "user",
            "Book a flight for user mia_li_3668 from JFK to SEA",
        )];
        let mut a = Message::empty("assistant");
        a.tool_calls.push(ToolCall {
            id: "c1",
            name: "get_user_details",
            arguments: Cow::Borrowed("{\"user_id\":\"mia_li_3668\"}"),
        });
        v.push(a);
        let mut r = Message::empty("tool");
        r.tool_call_id = Some("c1");
        r.content = Content::Text(Cow::Borrowed(
            "{\"name\":\"Mia\",\"reservations\":[\"NO6JO3\"]}",
        ));
        v.push(r);
        let mut a = Message::empty("assistant");
        a.tool_calls.push(ToolCall {
            id: "c2",
            name: "read_file",
            arguments: Cow::Borrowed("{\"path\":\"src/app/main.py\"}"),
        });
        v.push(a);
        let mut r = Message::empty("tool");
        r.tool_call_id = Some("c2");
        r.content = Content::Text(Cow::Borrowed("Error: no such file src/app/main.py"));
        v.push(r);
        v.push(Message::text(
            "assistant",
            "I will search instead. TODO: check the config.",
        ));
        v
    }

    #[test]
    fn sections_hold_requests_calls_errors_files_and_ids() {
        let d = digest(
            &history(),
            &est(),
            &DigestOptions {
                max_tokens: 2_000,
                ..Default::default()
            },
        );
        for needle in [
            "## User requests",
            "mia_li_3668",
            "get_user_details(user_id=mia_li_3668) -> ok",
            "## Errors",
            "read_file(path=src/app/main.py) -> error",
            "src/app/main.py",
            "TODO: check the config",
        ] {
            assert!(d.contains(needle), "{needle:?} missing in\n{d}");
        }
    }

    #[test]
    fn fits_the_budget_and_is_deterministic() {
        let mut msgs = history();
        let long = "step ".repeat(200);
        for _ in 0..50 {
            msgs.push(Message::text("assistant", &long));
            msgs.push(Message::text("user", &long));
        }
        for budget in [80u64, 200, 600] {
            let o = DigestOptions {
                max_tokens: budget,
                ..Default::default()
            };
            let d = digest(&msgs, &est(), &o);
            assert!(
                est().text(&d) <= budget as f64 + 1.0,
                "{budget}: {}",
                est().text(&d)
            );
            assert_eq!(d, digest(&msgs, &est(), &o));
        }
    }

    #[test]
    fn clipped_requests_lose_their_courtesy_edges_before_their_conditions() {
        let r = "No problem. I recently made a reservation, and I'd like to change it to the \
                 cheapest business class round trip without changing the dates. Can you help with that?";
        assert_eq!(
            without_courtesy_edges(r),
            "I recently made a reservation, and I'd like to change it to the cheapest business \
             class round trip without changing the dates."
        );
        // Short requests, and long edges, stay as they are.
        assert_eq!(
            without_courtesy_edges("Thanks! Book it."),
            "Thanks! Book it."
        );
        let long_edges =
            "Neither of those flights work for me; I'm looking to fly after 11 AM EST. \
                          Could you check if there are any flights available after that?";
        assert_eq!(without_courtesy_edges(long_edges), long_edges);
    }

    #[test]
    fn a_second_digest_keeps_the_first_ones_identifiers() {
        let first = digest(
            &history(),
            &est(),
            &DigestOptions {
                max_tokens: 2_000,
                ..Default::default()
            },
        );
        let later = vec![
            Message::text("user", "also add a bag"),
            Message::text("assistant", "Done."),
        ];
        let o = DigestOptions {
            max_tokens: 2_000,
            previous: Some(&first),
            instructions: None,
        };
        let second = digest(&later, &est(), &o);
        for needle in [
            "mia_li_3668",
            "src/app/main.py",
            "get_user_details",
            "also add a bag",
        ] {
            assert!(second.contains(needle), "{needle:?} missing in\n{second}");
        }
    }

    #[test]
    fn text_agent_commands_become_calls_with_return_codes() {
        let msgs = vec![
            Message::text(
                "assistant",
                "THOUGHT: look\n\n```bash\ncat astropy/modeling/separable.py\n```",
            ),
            Message::text(
                "user",
                "<returncode>1</returncode>\n<output>\ncat: nope: No such file\n</output>",
            ),
        ];
        let d = digest(
            &msgs,
            &est(),
            &DigestOptions {
                max_tokens: 500,
                ..Default::default()
            },
        );
        assert!(
            d.contains("$ cat astropy/modeling/separable.py -> error: rc=1"),
            "{d}"
        );
        assert!(d.contains("astropy/modeling/separable.py"));
    }
}
