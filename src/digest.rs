//! The extractive digest: an offline, deterministic summary of folded messages, sized to a
//! token budget.
//!
//! Sections: the user's requests in order, each tool call with its key arguments and outcome
//! (errors kept apart), files and paths touched, identifiers (short string arguments: ids,
//! codes), decisions, the last state and open items. Text agents that run commands in fenced
//! blocks (mini-swe-agent) get their commands and return codes as calls. When over budget,
//! detail goes first (outcome snippets, old decisions, old successful calls: their identifiers
//! stay in the identifier list), requests and errors last. A previous digest is merged section
//! by section, so a second compaction keeps what the first one kept.

use std::borrow::Cow;
use std::collections::HashSet;

use serde_json::Value;

use crate::estimate::Estimator;
use crate::message::{Content, Message, Part, Role};

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
    Requests,
    Calls,
    Errors,
    Files,
    Identifiers,
    Decisions,
    LastState,
    Open,
    Earlier,
}

const SECTIONS: [(Section, &str); 9] = [
    (Section::Requests, "User requests"),
    (Section::Calls, "Tool calls"),
    (Section::Errors, "Errors"),
    (Section::Files, "Files and paths"),
    (Section::Identifiers, "Identifiers"),
    (Section::Decisions, "Decisions and notes"),
    (Section::LastState, "Last state"),
    (Section::Open, "Open items"),
    (Section::Earlier, "Earlier summary"),
];

/// Sections rendered as one comma-separated line.
fn is_list(s: Section) -> bool {
    matches!(s, Section::Files | Section::Identifiers)
}

#[derive(Debug, Clone)]
struct Entry {
    section: Section,
    text: String,
    /// A shorter form used before the entry is dropped.
    short: Option<String>,
    focus: bool,
    /// Dropped before the others of its section (paths only seen in output).
    weak: bool,
    alive: bool,
    tokens: f64,
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

const PATH_EXTENSIONS: [&str; 28] = [
    "py", "rs", "js", "ts", "tsx", "jsx", "json", "md", "txt", "toml", "yaml", "yml", "cfg", "ini",
    "c", "h", "cc", "cpp", "hpp", "go", "java", "sh", "html", "css", "rst", "lock", "xml", "sql",
];

/// Whitespace collapsed, at most `max` characters (an ellipsis marks a cut).
fn clip(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(max.min(s.len()) + 3);
    let mut count = 0;
    let mut space = false;
    for ch in s.chars() {
        if ch.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if space {
            if count + 1 >= max {
                out.push('…');
                return out;
            }
            out.push(' ');
            count += 1;
            space = false;
        }
        if count >= max {
            out.push('…');
            return out;
        }
        out.push(ch);
        count += 1;
    }
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

fn is_path_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'/' | b'-')
}

/// Path-like tokens of a text, in order of appearance: runs of `[A-Za-z0-9_./-]` that carry a
/// known file extension or at least two named directory levels.
fn paths_in(text: &str, out: &mut Vec<String>, seen: &mut HashSet<String>, limit: usize) {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() && out.len() < limit {
        while i < b.len() && !is_path_byte(b[i]) {
            i += 1;
        }
        let start = i;
        let mut marked = false;
        while i < b.len() && is_path_byte(b[i]) {
            marked |= b[i] == b'/' || b[i] == b'.';
            i += 1;
        }
        // A run glued to non-ASCII text is part of a word, not a path.
        let glued = (i < b.len() && b[i] >= 0x80) || (start > 0 && b[start - 1] >= 0x80);
        if !marked || glued {
            continue;
        }
        // ASCII bytes only: the slice is on character boundaries.
        let t = text[start..i]
            .trim_end_matches('.')
            .trim_start_matches("./");
        if t.len() < 3 || t.len() > 120 || t.starts_with('-') || t.starts_with("//") {
            continue;
        }
        let has_ext = t
            .rsplit_once('.')
            .is_some_and(|(stem, ext)| !stem.is_empty() && PATH_EXTENSIONS.contains(&ext));
        let dir_like = t.contains('/')
            && t.split('/')
                .filter(|s| s.bytes().any(|c| c.is_ascii_alphabetic()))
                .count()
                >= 2;
        if (has_ext || dir_like) && !seen.contains(t) {
            seen.insert(t.to_string());
            out.push(t.to_string());
        }
    }
}

/// `name(key=value, ...)` with short values whole and long ones cut; ids collected.
fn call_line(name: &str, args: &str, ids: &mut Vec<String>) -> String {
    let mut s = String::from(name);
    s.push('(');
    match serde_json::from_str::<Value>(args) {
        Ok(Value::Object(map)) => {
            for (k, (key, v)) in map.iter().enumerate() {
                if k == 6 {
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
                        if t.chars().count() <= 60 {
                            if t.chars().any(char::is_whitespace) {
                                s.push('"');
                                s.push_str(t);
                                s.push('"');
                            } else {
                                s.push_str(t);
                            }
                            if (2..=40).contains(&t.len()) && !t.chars().any(char::is_whitespace) {
                                ids.push(t.clone());
                            }
                        } else {
                            s.push('"');
                            s.push_str(&clip(t, 40));
                            s.push_str(&format!("\" ({} chars)", t.len()));
                        }
                    }
                    Value::Array(_) | Value::Object(_) => {
                        let j = v.to_string();
                        collect_strings(v, ids, 0);
                        s.push_str(&clip(&j, 80));
                    }
                    other => s.push_str(&other.to_string()),
                }
            }
        }
        Ok(other) => s.push_str(&clip(&other.to_string(), 80)),
        Err(_) => s.push_str(&clip(args, 80)),
    }
    s.push(')');
    s
}

fn collect_strings(v: &Value, ids: &mut Vec<String>, depth: usize) {
    if depth > 3 {
        return;
    }
    match v {
        Value::String(t) if (2..=40).contains(&t.len()) && !t.chars().any(char::is_whitespace) => {
            ids.push(t.clone())
        }
        Value::Array(a) => a
            .iter()
            .take(20)
            .for_each(|x| collect_strings(x, ids, depth + 1)),
        Value::Object(o) => o
            .values()
            .take(20)
            .for_each(|x| collect_strings(x, ids, depth + 1)),
        _ => {}
    }
}

/// Outcome of a call from its result text.
fn outcome(text: Option<&str>) -> (bool, String) {
    match text {
        None => (false, "no result in this span".into()),
        Some(t) => {
            let err = looks_like_error(t);
            let body = observation_body(t);
            let mut s = String::new();
            if let Some(rc) = return_code(t) {
                s.push_str(&format!("rc={rc}: "));
            }
            s.push_str(&clip(body, if err { 160 } else { 80 }));
            (
                err,
                if err {
                    format!("error: {s}")
                } else {
                    format!("ok: {s}")
                },
            )
        }
    }
}

struct Builder {
    entries: Vec<Entry>,
    seen: HashSet<(Section, String)>,
    focus: Vec<String>,
}

impl Builder {
    fn push(&mut self, section: Section, text: String, short: Option<String>) {
        self.push_weak(section, text, short, false);
    }

    fn push_weak(&mut self, section: Section, text: String, short: Option<String>, weak: bool) {
        if text.is_empty() || !self.seen.insert((section, text.clone())) {
            return;
        }
        let focus = !self.focus.is_empty() && {
            let lower = text.to_lowercase();
            self.focus.iter().any(|w| lower.contains(w.as_str()))
        };
        self.entries.push(Entry {
            section,
            text,
            short,
            focus,
            weak,
            alive: true,
            tokens: 0.0,
        });
    }
}

/// Merge the sections of a previous digest (or keep foreign text as one entry).
fn merge_previous(b: &mut Builder, prev: &str) {
    let mut current: Option<Section> = None;
    let mut foreign = String::new();
    for line in prev.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            current = SECTIONS
                .iter()
                .find(|(_, t)| *t == title.trim())
                .map(|(s, _)| *s);
            continue;
        }
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        match current {
            None => {
                if !line.starts_with("Earlier conversation folded") && !line.starts_with("Focus:") {
                    foreign.push_str(line);
                    foreign.push('\n');
                }
            }
            Some(s) if is_list(s) => {
                for item in line.split(", ") {
                    b.push(s, item.trim().to_string(), None);
                }
            }
            // The state and open items of an older span are history now.
            Some(Section::LastState) => b.push(
                Section::Decisions,
                format!("earlier state: {}", clip(line, 300)),
                None,
            ),
            Some(Section::Open) => b.push(
                Section::Decisions,
                format!("earlier open item: {}", line.trim_start_matches("- ")),
                None,
            ),
            Some(s) => {
                let t = line.trim_start_matches("- ").to_string();
                let short = (s == Section::Calls).then(|| match t.find(" -> ") {
                    Some(i) => t[..i].to_string(),
                    None => t.clone(),
                });
                b.push(s, t, short);
            }
        }
    }
    if !foreign.is_empty() {
        let short = clip(&foreign, 600);
        b.push(Section::Earlier, foreign.trim().to_string(), Some(short));
    }
}

fn render(entries: &[Entry], header: &str) -> String {
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
        if is_list(sec) {
            let list: Vec<&str> = items.iter().map(|e| e.text.as_str()).collect();
            out.push_str(&list.join(", "));
            out.push('\n');
        } else if sec == Section::LastState || sec == Section::Earlier {
            for e in items {
                out.push_str(&e.text);
                out.push('\n');
            }
        } else {
            for e in items {
                out.push_str("- ");
                out.push_str(&e.text);
                out.push('\n');
            }
        }
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
    let mut files = Vec::new();
    let mut seen_files = HashSet::new();
    let mut output_files = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    // The newest assistant thought: the last state, and where open items are looked for.
    let mut last_thought: Option<usize> = None;
    let mut n_calls = 0usize;
    let mut n_errors = 0usize;
    let mut n_requests = 0usize;
    let mut prev_command: Option<String> = None;
    for (k, m) in msgs.iter().enumerate() {
        let own = crate::compaction::own_summary(m);
        if let Some(s) = own {
            // A summary folded again (not given as `previous`): merge it too.
            if opt.previous.is_none_or(|p| p.trim() != s.trim()) {
                merge_previous(&mut b, s);
            }
            continue;
        }
        match m.role {
            Role::User | Role::Other if m.result_ids().next().is_none() => {
                let text = text_of(m);
                if let Some(cmd) = prev_command.take() {
                    // A text agent's observation of the command before it.
                    n_calls += 1;
                    let (err, out) = outcome(Some(&text));
                    paths_in(&cmd, &mut files, &mut seen_files, 200);
                    // Paths an output mentions are weak hints: its edges are enough.
                    let body = observation_body(&text);
                    paths_in(lead(body, 300), &mut output_files, &mut seen_files, 100);
                    if body.len() > 600 {
                        let mut from = body.len() - 200;
                        while !body.is_char_boundary(from) {
                            from += 1;
                        }
                        paths_in(&body[from..], &mut output_files, &mut seen_files, 100);
                    }
                    // A heredoc or script: its first line says what it does.
                    let shown = match cmd.split_once('\n') {
                        Some((first, rest)) => {
                            format!("{first} … ({} more lines)", rest.lines().count())
                        }
                        None => cmd.clone(),
                    };
                    let line = format!("$ {} -> {}", clip(&shown, 160), out);
                    if err {
                        n_errors += 1;
                        b.push(Section::Errors, line, None);
                    } else {
                        b.push(
                            Section::Calls,
                            line,
                            Some(format!("$ {}", clip(&shown, 100))),
                        );
                    }
                } else if !text.trim().is_empty() {
                    n_requests += 1;
                    paths_in(&text, &mut files, &mut seen_files, 200);
                    b.push(Section::Requests, clip(&text, 400), Some(clip(&text, 160)));
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
                        // The previous thought becomes a decision; the newest is the last state.
                        if let Some(prev) = last_thought.replace(k) {
                            let pt = text_of(&msgs[prev]);
                            b.push(Section::Decisions, clip(thought(&pt), 200), None);
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
                    let mut call_ids = Vec::new();
                    call_ids.push(c.name.to_string());
                    let line = call_line(c.name, &c.arguments, &mut call_ids);
                    paths_in(&c.arguments, &mut files, &mut seen_files, 200);
                    ids.extend(call_ids);
                    let res = results.get(c.id).map(|s| s.as_ref());
                    let (err, out) = outcome(res);
                    if err {
                        n_errors += 1;
                        b.push(Section::Errors, format!("{line} -> {out}"), Some(line));
                    } else {
                        b.push(Section::Calls, format!("{line} -> {out}"), Some(line));
                    }
                }
            }
            _ => {}
        }
    }
    if !b.entries.iter().any(|e| e.section == Section::Identifiers) || !ids.is_empty() {
        let mut seen_ids = HashSet::new();
        for id in ids {
            if seen_ids.insert(id.clone()) && !seen_files.contains(&id) {
                b.push(Section::Identifiers, id, None);
            }
        }
    }
    for f in files {
        b.push(Section::Files, f, None);
    }
    for f in output_files {
        b.push_weak(Section::Files, f, None, true);
    }
    if let Some(k) = last_thought {
        let text = text_of(&msgs[k]);
        let t = thought(&text);
        b.push(Section::LastState, clip(t, 400), None);
        let mut open = Vec::new();
        for line in t.lines() {
            let l = line.to_lowercase();
            if l.contains("todo")
                || l.starts_with("next")
                || l.contains("next step")
                || l.contains("still need")
                || l.contains("i need to")
            {
                open.push(clip(line, 160));
            }
        }
        for o in open.into_iter().rev().take(3) {
            b.push(Section::Open, o, None);
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
    fit(b.entries, &header, est, opt.max_tokens)
}

/// Drop detail until the rendered digest fits `max_tokens`.
fn fit(mut entries: Vec<Entry>, header: &str, est: &Estimator, max_tokens: u64) -> String {
    // Per line: its text plus ~1 token of list syntax.
    for e in &mut entries {
        e.tokens = est.text(&e.text) + 1.0;
    }
    let fixed = est.text(header) + 3.0 * SECTIONS.len() as f64;
    let budget = max_tokens as f64;
    let mut total: f64 = fixed + entries.iter().map(|e| e.tokens).sum::<f64>();
    // Each phase: which entries, keep the newest `keep` of them, shorten or drop.
    let phases: [(Section, usize, bool); 10] = [
        (Section::Calls, 0, true),
        (Section::Earlier, 0, true),
        (Section::Decisions, 3, false),
        (Section::Calls, 4, false),
        (Section::Requests, 0, true),
        (Section::Errors, 0, true),
        (Section::Errors, 3, false),
        (Section::Files, 30, false),
        (Section::Requests, 2, false),
        (Section::Identifiers, 30, false),
    ];
    // Paths only seen in output go first.
    for e in entries.iter_mut() {
        if total <= budget {
            break;
        }
        if e.alive && e.weak {
            e.alive = false;
            total -= e.tokens;
        }
    }
    for focus_pass in [false, true] {
        for &(sec, keep, shorten) in &phases {
            if total <= budget {
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
            for (k, &i) in idx.iter().enumerate() {
                if total <= budget {
                    break;
                }
                if shorten {
                    if let Some(s) = entries[i].short.take() {
                        let t = est.text(&s) + 1.0;
                        total += t - entries[i].tokens;
                        entries[i].text = s;
                        entries[i].tokens = t;
                    }
                } else if k + keep < n {
                    entries[i].alive = false;
                    total -= entries[i].tokens;
                }
            }
        }
    }
    let mut out = render(&entries, header);
    if est.text(&out) > budget {
        // Last resort: cut by characters (about 3 characters per token), on a line boundary.
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
