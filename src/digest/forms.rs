//! The forms of the units a digest builds from the span's messages, from the richest to the
//! shortest: a request or a thought clipped to fewer characters; a tool call with its
//! arguments and its result's outcome, both shorter at each form; a text agent's command with
//! its observation. Each says, without building a form, whether that form keeps every text it
//! clips whole (`clip::is_whole`), which tells equal forms apart cheaply (`units::Entry::lazy`).

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::Value;

use super::clip::{clip_ends, clip_ends_into, is_whole, whole_line_share};
use super::request_edges::{without_courtesy_edges, without_repeated_edges};

/// The forms of one unit.
/// `Send + Sync`: a digest builds many units' forms on several threads (`units::price_many`).
pub(super) trait Forms: Send + Sync {
    /// How many forms the plan holds.
    fn count(&self) -> usize;
    /// Whether form `j` (`j >= 1`) is the same line as form `j - 1`: every text it clips is
    /// kept whole (`clip::is_whole`), where the one before clips the same texts with larger
    /// limits. False means different (but for a line that happens to equal a clip of another
    /// text).
    fn repeats(&self, j: usize) -> bool;
    /// Form `j` (0: the richest).
    fn build(&self, j: usize) -> String;
    /// A form between two of the plan's, its result (or text) clipped to `chars` characters:
    /// the one unit a packing sizes to the room its forms leave (`pack::Packing::fill`). None
    /// for units whose forms are not sized so.
    fn build_sized(&self, _chars: usize) -> Option<String> {
        None
    }
}

/// Characters of a result in a call's fullest form (used while the room allows: a summary
/// fills the room it is given), and the longest a result sized to the room keeps
/// (`pack::Packing::fill`). A fold of a few messages holding one long output (a SWE agent's
/// `cat` of a module) stopped at 6,000 characters of it, beside thousands of unused tokens.
pub(super) const FULLEST_RESULT_CHARS: usize = 24_000;

/// Characters of a result in a call's second form: the fullest before the richest grew
/// (the first shortening step of the packing takes every call there, `pack::PHASES`).
pub(super) const RICH_RESULT_CHARS: usize = 6_000;

/// Characters of a successful result kept in a call's shortest form: a short result (a sum, a
/// count, "Transfer successful") survives whole, a long one keeps its end.
pub(super) const SHORT_RESULT_CHARS: usize = 48;

/// A text clipped to each of `plan`'s (characters, head share).
pub(super) struct Clipped<'a> {
    pub(super) text: Cow<'a, str>,
    pub(super) plan: &'static [(usize, f64)],
}

/// An assistant's earlier thought (a conclusion). The 1,800-character form sits between the
/// whole thought and 900 so that a room a little short of the whole is filled rather than left
/// (a summary fills the room it is given).
pub(super) const CONCLUSION_PLAN: [(usize, f64); 5] = [
    (4_000, 0.6),
    (1_800, 0.6),
    (900, 0.6),
    (300, 0.6),
    (120, 0.7),
];

impl Forms for Clipped<'_> {
    fn count(&self) -> usize {
        self.plan.len()
    }

    fn repeats(&self, j: usize) -> bool {
        let (max, share) = self.plan[j];
        is_whole(&self.text, max, share)
    }

    fn build(&self, j: usize) -> String {
        let (max, share) = self.plan[j];
        clip_ends(&self.text, max, share)
    }

    fn build_sized(&self, chars: usize) -> Option<String> {
        let (max, share) = self.plan[0];
        Some(clip_ends(&self.text, chars.min(max), share))
    }
}

/// An assistant's earlier thought (a conclusion): whole where a form holds it, else its findings
/// (`idle::findings_end`: without the closing sentences that only say what comes next) clipped,
/// so a short form's end is the thought's last finding rather than its next step.
pub(super) struct Conclusion<'a> {
    text: Cow<'a, str>,
    /// Where the findings end in `text` (bytes).
    findings: usize,
}

impl<'a> Conclusion<'a> {
    pub(super) fn new(text: Cow<'a, str>) -> Self {
        let findings = super::idle::findings_end(&text);
        Conclusion { text, findings }
    }

    fn whole_at(&self, max: usize, share: f64) -> bool {
        is_whole(&self.text, max, share)
    }

    fn form(&self, max: usize, share: f64) -> String {
        if self.whole_at(max, share) {
            clip_ends(&self.text, max, share)
        } else {
            clip_ends(&self.text[..self.findings], max, share)
        }
    }
}

impl Forms for Conclusion<'_> {
    fn count(&self) -> usize {
        CONCLUSION_PLAN.len()
    }

    fn repeats(&self, j: usize) -> bool {
        let (max, share) = CONCLUSION_PLAN[j];
        if self.whole_at(max, share) {
            return true;
        }
        // Both clips of the findings (the form before held the whole thought otherwise).
        let (before, before_share) = CONCLUSION_PLAN[j - 1];
        !self.whole_at(before, before_share) && is_whole(&self.text[..self.findings], max, share)
    }

    fn build(&self, j: usize) -> String {
        let (max, share) = CONCLUSION_PLAN[j];
        self.form(max, share)
    }

    fn build_sized(&self, chars: usize) -> Option<String> {
        let (max, share) = CONCLUSION_PLAN[0];
        Some(self.form(chars.min(max), share))
    }
}

/// Characters of a request's forms: the first two of the whole request, the others of its
/// core (without its courtesy edges, `without_courtesy_edges`).
const REQUEST_PLAN: [usize; 7] = [4_000, 1_500, 400, 240, 160, 120, 80];

/// A user request: whole up to 4,000 characters, then shorter (a long one keeps its head and
/// end); from 400 characters down, cut from its core.
pub(super) struct Request<'a> {
    text: Cow<'a, str>,
    /// Where the request without its courtesy edges lies in `text` (found once: every form
    /// from the third and every check of one reads it).
    core: std::ops::Range<usize>,
    /// The core without the standing rules said in it, where it had any (`without_rules`).
    core_without_rules: Option<String>,
}

/// The shortest share of a request's core that its rules may leave (bytes, of the core's): a
/// request that is mostly rules keeps them in its shorter forms.
const CORE_LEFT_BY_RULES: f64 = 0.3;

impl<'a> Request<'a> {
    #[cfg(test)]
    pub(super) fn new(text: Cow<'a, str>) -> Self {
        Self::without(text, &std::collections::HashSet::new(), &[])
    }

    /// A request whose shorter forms (from the third) also leave out the sentences of
    /// `repeated` that open or close it (`request_edges::repeated_edges`: said in other turns
    /// too) and the standing `rules` said in it: a rule is written whole in its own section
    /// wherever the request's form does not hold it, and a clip that kept the rule's sentence
    /// as its end lost the clause before it ("New York (EWR or JFK) to a West Coast city"
    /// between "I'm looking for the che…" and "…I prefer basic economy if it's cheaper.", that
    /// rule written whole above it).
    pub(super) fn without(
        text: Cow<'a, str>,
        repeated: &std::collections::HashSet<String>,
        rules: &[String],
    ) -> Self {
        let core = without_repeated_edges(without_courtesy_edges(&text), repeated);
        let core_without_rules = without_rules(core, rules);
        // The core is a slice of the text: its place is its pointer's offset.
        let start = core.as_ptr() as usize - text.as_ptr() as usize;
        let core = start..start + core.len();
        Request {
            text,
            core,
            core_without_rules,
        }
    }

    /// The text form `j` clips.
    fn source(&self, j: usize) -> &str {
        if j < 2 {
            &self.text
        } else {
            self.core_without_rules
                .as_deref()
                .unwrap_or(&self.text[self.core.clone()])
        }
    }
}

/// `core` without the sentences of `rules` it holds verbatim (each rule a sentence of it,
/// `standing_rules::rules_in`), the rest joined by single spaces; None where it holds none, or
/// where what is left is under `CORE_LEFT_BY_RULES` of it.
fn without_rules(core: &str, rules: &[String]) -> Option<String> {
    // (Most requests state no rule: nothing is copied for them.)
    let mut said = rules
        .iter()
        .filter(|r| !r.is_empty() && core.contains(r.as_str()));
    let first = said.next()?;
    let mut left = core.replacen(first.as_str(), " ", 1);
    for r in said {
        left = left.replacen(r.as_str(), " ", 1);
    }
    let left = left.split_whitespace().collect::<Vec<_>>().join(" ");
    (left.len() as f64 >= core.len() as f64 * CORE_LEFT_BY_RULES).then_some(left)
}

impl Forms for Request<'_> {
    fn count(&self) -> usize {
        REQUEST_PLAN.len()
    }

    fn repeats(&self, j: usize) -> bool {
        let src = self.source(j);
        let same_text = j != 2 || src.trim() == self.text.trim();
        same_text && is_whole(src, REQUEST_PLAN[j], 0.6)
    }

    fn build(&self, j: usize) -> String {
        clip_ends(self.source(j), REQUEST_PLAN[j], 0.6)
    }
}

/// The outcome of a call: what its result printed (inside the tool's wrapper,
/// `tool_outcome::read`), the exit code it reported and whether it failed.
pub(super) struct Outcome<'a> {
    pub(super) text: Option<Cow<'a, str>>,
    pub(super) code: Option<i64>,
    pub(super) err: bool,
    /// The share of a clipped result taken from its head (`RESULT_HEAD_SHARE`, or none for a
    /// test run shown up to its verdict: `run_summary`).
    pub(super) head_share: f64,
    /// A search's output (`shell_line::searches`, `read_call::searches_files`): where things
    /// are, kept longer in the shortest forms (`SEARCH_RESULT_CHARS`).
    pub(super) search: bool,
}

/// The share of a clipped result taken from its head: the last lines say how it ended.
pub(super) const RESULT_HEAD_SHARE: f64 = 0.35;

impl Outcome<'_> {
    /// `ok: …` / `error: …` with `chars` characters of the result (its head and, more, its
    /// end: the last lines say how it ended), appended to `out` (the form's own string).
    fn push_line(&self, chars: usize, out: &mut String) {
        let Some(body) = self.text.as_deref() else {
            out.push_str("no result in this span");
            return;
        };
        out.push_str(if self.err { "error: " } else { "ok: " });
        let start = out.len();
        if let Some(rc) = self.code {
            // (Writing to a String cannot fail.)
            let _ = write!(out, "rc={rc}");
            if chars > 0 && !body.trim().is_empty() {
                out.push_str(": ");
            }
        }
        if chars > 0 {
            clip_ends_into(body, chars, self.share(chars), out);
        }
        if out.len() == start {
            out.push_str(if body.trim().is_empty() {
                "(empty)"
            } else {
                "…"
            });
        }
    }

    fn whole(&self, chars: usize) -> bool {
        // (The share decides only whether a line of `chars + 1` characters with an ellipsis
        // where the clip would put its own is whole: a clip's own line, not a tool's output. The
        // packing asks this of every form of every unit, and `share` reads the result's end.)
        self.text
            .as_deref()
            .is_none_or(|t| chars == 0 || is_whole(t, chars, self.head_share))
    }

    /// The head share of a clip to `chars`: the line the end starts in whole where the head
    /// can give what that takes (`whole_line_share`).
    fn share(&self, chars: usize) -> f64 {
        self.text.as_deref().map_or(self.head_share, |t| {
            whole_line_share(t, chars, self.head_share)
        })
    }
}

/// Characters of a result in a call's second form: between the fullest and the short forms, so
/// that a room too small for a long output's fullest form still gets most of it rather than a
/// tenth (the step from 6,000 characters to 600 left rooms a third full).
pub(super) const MIDDLE_RESULT_CHARS: usize = 2_400;

/// Characters of a result in the shortest form of a call or command: an error keeps its
/// message, a search its matches (`SEARCH_RESULT_CHARS`), any other result its end.
fn shortest_result_chars(err: bool, search: bool) -> usize {
    if err {
        160
    } else if search {
        SEARCH_RESULT_CHARS
    } else {
        SHORT_RESULT_CHARS
    }
}

/// (argument characters, result characters) of a call's forms; errors keep more of their text.
fn call_plan(err: bool, search: bool) -> [(usize, usize); 6] {
    [
        (4_000, FULLEST_RESULT_CHARS),
        (1_200, RICH_RESULT_CHARS),
        (800, MIDDLE_RESULT_CHARS),
        (400, if err { 900 } else { 600 }),
        (160, if err || search { 360 } else { 160 }),
        (60, shortest_result_chars(err, search)),
    ]
}

/// Characters of a command's output (a shell run, not a JSON record) kept in its shortest
/// form, where a tool call's result keeps `SHORT_RESULT_CHARS`: a run's last lines say how it
/// ended (`Ran 12 tests ... OK`, `style.css yielded 1 times`) and 48 characters kept the end of
/// one of them. Over every SWE run cut at half and three quarters (`tools/future_report.py`)
/// the facts the agent used next went 4,632 -> 4,645 of 6,073 (agent loop 4,657 -> 4,674), the
/// held-out probe sets at the naive budget 527 -> 533 of 608. The same 72 for every call's
/// result too cost the airline dialogues 5 of their 1,436 facts (a booking's compact record
/// took another line's place), so a JSON record keeps 48.
pub(super) const SHORT_OUTPUT_CHARS: usize = 72;

/// Characters of a search's result (`grep -n`, a `Grep` tool) kept in its shortest form, and
/// 360 in the form before (as an error's): a search prints where things are, a match a line of
/// `path:line:text`, the places a continuing agent asks for ("where is `post_process`
/// defined?") in fewer characters than any other output, where a run's 48 kept
/// `44:class HashedF…_process(self, *args, **kwargs):` of three matches. Over every SWE run
/// cut at half and three quarters (`tools/future_report.py`, 6,073 facts the agent used next)
/// 48 / 160 / 240 / 360 characters kept 4,613 / 4,629 / 4,632 / 4,629, in the agent loop
/// 4,623 / 4,646 / 4,657 / 4,651; the held-out probe sets at the naive budget 524 / 525 / 527
/// / 528 of 608, and at half of it 123 / 122 / 121 / 121 (in the tightest rooms a longer
/// search takes the place of another line). Named search tools (hermes-agent's
/// `search_files`) too: the held-out SWE runs written as its calls, 88.2% -> 89.0% of facts.
/// A head share of 0.6 rather than the usual 0.35 (the first matches before the last) kept
/// fewer: 4,623 and 4,638.
pub(super) const SEARCH_RESULT_CHARS: usize = 240;

/// A tool call: `name(key=value, ...) -> outcome`.
pub(super) struct Call<'a> {
    pub(super) name: &'a str,
    pub(super) args: &'a str,
    pub(super) parsed: Result<Value, serde_json::Error>,
    pub(super) outcome: Outcome<'a>,
    /// `shortest_line`, kept: the check of the shortest form and the form itself both read it.
    pub(super) shortest: std::sync::OnceLock<String>,
}

/// A tool call's arguments in its shortest form, whole (characters).
const SHORTEST_CALL_CHARS: usize = 160;

impl Call<'_> {
    /// The arguments of the shortest form: bounded as a whole (a booking's nested lists of
    /// flights, passengers and payments run to hundreds of characters at 60 per value).
    fn shortest_line(&self) -> &str {
        self.shortest
            .get_or_init(|| call_line(self.name, self.args, &self.parsed, 60))
    }
}

impl Forms for Call<'_> {
    fn count(&self) -> usize {
        7
    }

    fn repeats(&self, j: usize) -> bool {
        if j == 6 {
            // The outcome is the previous form's: only the arguments' bound can differ.
            return is_whole(self.shortest_line(), SHORTEST_CALL_CHARS, 0.6);
        }
        let (max, chars) = call_plan(self.outcome.err, self.outcome.search)[j];
        self.outcome.whole(chars) && args_whole(self.args, &self.parsed, max)
    }

    fn build_sized(&self, chars: usize) -> Option<String> {
        let (max, _) = call_plan(self.outcome.err, self.outcome.search)[0];
        let mut s = String::new();
        push_call_line(self.name, self.args, &self.parsed, max, &mut s);
        s.push_str(" -> ");
        self.outcome.push_line(chars, &mut s);
        Some(s)
    }

    fn build(&self, j: usize) -> String {
        let mut s = String::new();
        if j == 6 {
            // The outcome, an error's message, stays.
            let (_, chars) = call_plan(self.outcome.err, self.outcome.search)[5];
            clip_ends_into(self.shortest_line(), SHORTEST_CALL_CHARS, 0.6, &mut s);
            s.push_str(" -> ");
            self.outcome.push_line(chars, &mut s);
            return s;
        }
        let (max, chars) = call_plan(self.outcome.err, self.outcome.search)[j];
        push_call_line(self.name, self.args, &self.parsed, max, &mut s);
        s.push_str(" -> ");
        self.outcome.push_line(chars, &mut s);
        s
    }
}

/// (command characters, observation characters) of a text agent's command forms.
fn command_plan(err: bool, search: bool) -> [(usize, usize); 6] {
    [
        (4_000, FULLEST_RESULT_CHARS),
        (2_000, RICH_RESULT_CHARS),
        (1_000, MIDDLE_RESULT_CHARS),
        (600, if err { 900 } else { 700 }),
        (300, if err || search { 360 } else { 200 }),
        (
            140,
            if err || search {
                shortest_result_chars(err, search)
            } else {
                SHORT_OUTPUT_CHARS
            },
        ),
    ]
}

/// A text agent's command and its observation: `$ command -> outcome`.
pub(super) struct Command<'a> {
    /// The command's lines joined by ` ⏎ ` (blank lines left out).
    pub(super) joined: String,
    pub(super) outcome: Outcome<'a>,
}

impl Command<'_> {
    pub(super) fn join(cmd: &str) -> String {
        let lines: Vec<&str> = cmd
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.trim().is_empty())
            .collect();
        lines.join(" ⏎ ")
    }
}

/// The head share of a clipped command: 60% of what is shown is its head.
const COMMAND_HEAD_SHARE: f64 = 0.6;
/// ... and 25% where its first line opens a here-document (`cat <<'EOF' > test_none.py`): a
/// script opens with its imports and setup and ends with what it does and prints, and the
/// clip's head was the setup (`settings.configure(DATABASES={...` in every SWE reproduction),
/// the line a continuing agent was asked about (`schema_editor.create_model(MyModel)`) in its
/// cut.
const HERE_DOCUMENT_HEAD_SHARE: f64 = 0.25;

impl Command<'_> {
    /// The share of a clip of the command to `max` characters that is its head
    /// (`COMMAND_HEAD_SHARE`; `HERE_DOCUMENT_HEAD_SHARE`, or what the command's own line takes
    /// up to `COMMAND_HEAD_SHARE`: the file a script is written to stays whole).
    fn head_share(&self, max: usize) -> f64 {
        let first = self.joined.split(" ⏎ ").next().unwrap_or("");
        if crate::shell_line::opens_here_document(first) {
            let line = (first.chars().count() + 4) as f64 / max.max(1) as f64;
            line.clamp(HERE_DOCUMENT_HEAD_SHARE, COMMAND_HEAD_SHARE)
        } else {
            COMMAND_HEAD_SHARE
        }
    }

    /// `$ command -> outcome`: a command shown whole up to `max` characters; a longer one
    /// keeps its head and its end (`&& git diff`, the file a heredoc writes to).
    fn form(&self, max: usize, chars: usize) -> String {
        let mut s = String::from("$ ");
        clip_ends_into(&self.joined, max, self.head_share(max), &mut s);
        s.push_str(" -> ");
        self.outcome.push_line(chars, &mut s);
        s
    }
}

impl Forms for Command<'_> {
    fn count(&self) -> usize {
        6
    }

    fn repeats(&self, j: usize) -> bool {
        let (max, chars) = command_plan(self.outcome.err, self.outcome.search)[j];
        self.outcome.whole(chars) && is_whole(&self.joined, max, self.head_share(max))
    }

    fn build_sized(&self, chars: usize) -> Option<String> {
        let (max, _) = command_plan(self.outcome.err, self.outcome.search)[0];
        Some(self.form(max, chars))
    }

    fn build(&self, j: usize) -> String {
        let (max, chars) = command_plan(self.outcome.err, self.outcome.search)[j];
        self.form(max, chars)
    }
}

/// Whether every argument `call_line` shows at `max_value` is whole.
fn args_whole(args: &str, parsed: &Result<Value, serde_json::Error>, max_value: usize) -> bool {
    match parsed {
        Ok(Value::Object(map)) => map.iter().take(16).all(|(_, v)| match v {
            Value::String(t) => is_whole(t, max_value, 0.6),
            other => is_whole(&other.to_string(), max_value * 2, 0.6),
        }),
        Ok(other) => is_whole(&other.to_string(), max_value * 2, 0.6),
        Err(_) => is_whole(args, max_value * 2, 0.6),
    }
}

/// `name(key=value, ...)`: every key, string values whole up to `max_value` characters (a
/// longer one keeps its head and end), nested values as compact JSON, likewise bounded.
fn call_line(
    name: &str,
    args: &str,
    parsed: &Result<Value, serde_json::Error>,
    max_value: usize,
) -> String {
    let mut s = String::new();
    push_call_line(name, args, parsed, max_value, &mut s);
    s
}

/// `call_line(...)` appended to `s`.
fn push_call_line(
    name: &str,
    args: &str,
    parsed: &Result<Value, serde_json::Error>,
    max_value: usize,
    s: &mut String,
) {
    s.push_str(name);
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
                    other => clip_ends_into(&other.to_string(), max_value * 2, 0.6, s),
                }
            }
        }
        Ok(other) => clip_ends_into(&other.to_string(), max_value * 2, 0.6, s),
        Err(_) => clip_ends_into(args, max_value * 2, 0.6, s),
    }
    s.push(')');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(cmd: &str) -> Command<'static> {
        Command {
            joined: Command::join(cmd),
            outcome: Outcome {
                text: Some(Cow::Borrowed("")),
                code: Some(0),
                err: false,
                head_share: RESULT_HEAD_SHARE,
                search: false,
            },
        }
    }

    #[test]
    fn a_clipped_script_keeps_its_file_and_what_it_does_not_its_setup() {
        let script = command(
            "cat <<'EOF' > test_none.py\nimport os\nimport django\nfrom django.conf import settings\n\
             settings.configure(DATABASES={'default': {'ENGINE': 'django.db.backends.sqlite3', 'NAME': ':memory:'}},\n\
             INSTALLED_APPS=['__main__'])\ndjango.setup()\nfrom django.db import models, connection\n\
             class MyModel(models.Model):\n    name = models.CharField(max_length=100)\n\
             with connection.schema_editor() as schema_editor:\n    schema_editor.create_model(MyModel)\n\
             print(MyModel.objects.bulk_update([], ['name']))\nEOF",
        );
        let line = script.build(4);
        assert!(
            line.starts_with("$ cat <<'EOF' > test_none.py ⏎ "),
            "{line}"
        );
        assert!(
            line.contains("schema_editor.create_model(MyModel)"),
            "{line}"
        );
        assert!(line.contains("class MyModel(models.Model)"), "{line}");
        assert!(!line.contains("settings.configure("), "{line}");
        // At the shortest form the file's name stays whole.
        assert!(
            script.build(5).starts_with("$ cat <<'EOF' > test_none.py"),
            "{}",
            script.build(5)
        );
        // Any other long command keeps its head as before.
        let other = command(&format!(
            "python -c \"{}\" && git diff",
            "x = 1; ".repeat(60)
        ));
        assert!(
            other
                .build(5)
                .starts_with("$ python -c \"x = 1; x = 1; x = 1;"),
            "{}",
            other.build(5)
        );
    }
}
