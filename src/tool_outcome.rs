//! What a tool's output says about its run: the exit code or error flag the tool reports, and
//! the text the run printed.
//!
//! Agents wrap a command's output in several shapes, and reading the wrapper as output is
//! wrong both ways: a JSON envelope (`{"output": "...", "exit_code": 0, "error": null}`, the
//! shape of hermes-agent's `terminal` tool) says "error" in every result, and its output is one
//! line of escaped text; a source listing that prints `raise ValueError` is not a failure, and
//! a script that exits 1 after printing `FAIL` is. Shapes read:
//! - mini-swe-agent observations: `<returncode>N</returncode>` then `<output>...</output>`;
//! - a JSON object with an exit code (`exit_code`, `returncode`, ...), a body (`output`,
//!   `stdout`, `stderr`) or an error field (`error`, `is_error`): Gemini's `functionResponse`
//!   names `output` and `error` as the keys of a function's output and error details
//!   (https://ai.google.dev/api/caching#FunctionResponse);
//! - a one-key object around a function's return value (`{"result": ...}`,
//!   `{"return_value": ...}`): its value, with no verdict of its own;
//! - a line that reports the exit code: `Exit code: 1` (a header or trailer line),
//!   `[Command finished with exit code 1]`, `Process exited with code 1`,
//!   `returned non-zero exit status 1`.
//!
//! Anything else is plain text with no verdict (`failed: None`): `words_say_failure` judges
//! it by its words, read as what printed it (`Producer`, from the call): a shell command that
//! only prints files failed only by its own diagnostic line, a file read only by a short
//! message.

use std::borrow::Cow;
use std::sync::OnceLock;

use aho_corasick::AhoCorasick;

use serde_json::{Map, Value};

use crate::char_cut::{head_bytes, tail_bytes};
use crate::read_call;
use crate::shell_line;

/// One tool output, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutcome<'t> {
    /// The exit code the output reports, if any.
    pub code: Option<i64>,
    /// Whether the run failed, when the output says so (a code, an error field); `None` when
    /// only its words could tell.
    pub failed: Option<bool>,
    /// What the run printed: inside the wrapper, unescaped when it was JSON.
    pub body: Cow<'t, str>,
}

/// Bytes at either end of an output where a wrapper's tags or an exit-code line are looked for:
/// they lead or end the text, so looking further would scan whole outputs for nothing.
const EDGE_BYTES: usize = 256;

/// Keys of a JSON envelope's exit code.
const CODE_KEYS: [&str; 6] = [
    "exit_code",
    "exitCode",
    "returncode",
    "return_code",
    "exit_status",
    "exitStatus",
];
/// Keys of a JSON envelope's printed text, in the order they are joined (Bedrock's Nova code
/// interpreter result spells them `stdOut` / `stdErr`, in the recorded pydantic-ai requests).
const BODY_KEYS: [&str; 5] = ["output", "stdout", "stdOut", "stderr", "stdErr"];
/// Keys of a JSON envelope's error: a value other than null, false, "" or an empty container
/// means the run failed.
const ERROR_KEYS: [&str; 3] = ["error", "is_error", "isError"];
/// Keys whose `false` means the run failed.
const SUCCESS_KEYS: [&str; 2] = ["success", "ok"];
/// A record's `status` values that say how the call went (compared ignoring ASCII case):
/// `{"status": "error", "output": "No snapshot found"}` is a failure however plain its output
/// reads; any other status (`available`, `cancelled`, `pending`) is data.
const FAILED_STATUSES: [&str; 6] = ["error", "failed", "failure", "fail", "timeout", "timed_out"];
const SUCCEEDED_STATUSES: [&str; 5] = ["ok", "success", "succeeded", "completed", "done"];

/// What a record's top-level `status` says of the call: Some(true) failed, Some(false)
/// succeeded, None no verdict (absent, or a status of the data).
fn status_verdict(obj: &Map<String, Value>) -> Option<bool> {
    let status = obj.get("status")?.as_str()?.trim();
    let is = |words: &[&str]| words.iter().any(|w| status.eq_ignore_ascii_case(w));
    if is(&FAILED_STATUSES) {
        Some(true)
    } else if is(&SUCCEEDED_STATUSES) {
        Some(false)
    } else {
        None
    }
}

/// Lines of a read tool's result up to which it may be a message rather than a file.
const READ_MESSAGE_LINES: usize = 2;

/// What printed a tool's output, as its call says: it decides whose words the output holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Producer<'c> {
    /// A shell tool's command line (`shell_line::shell_command`; a text agent's fenced command,
    /// borrowed).
    Command(Cow<'c, str>),
    /// A tool that only reads a file (`read_call::reads_file`): its output is the file's.
    FileRead,
    /// Any other call.
    Call,
}

impl Producer<'static> {
    /// What a call of tool `name` with (parsed) arguments `args` is.
    pub fn of_call(name: &str, args: Option<&Value>) -> Self {
        let Some(args) = args else {
            return Producer::Call;
        };
        if let Some(cmd) = shell_line::shell_command(args) {
            return Producer::Command(Cow::Owned(cmd));
        }
        match args.as_object() {
            Some(map) if read_call::reads_file(name, map) => Producer::FileRead,
            _ => Producer::Call,
        }
    }

    /// The same, from the call's JSON arguments (a call whose arguments do not parse is a call).
    pub fn of_arguments(name: &str, arguments: &str) -> Self {
        Producer::of_call(name, serde_json::from_str::<Value>(arguments).ok().as_ref())
    }
}

/// Read a tool output (see the module doc for the shapes).
pub fn read(text: &str) -> ToolOutcome<'_> {
    if let Some(code) = return_code(text) {
        return ToolOutcome {
            code: Some(code),
            failed: Some(code != 0),
            body: Cow::Borrowed(observation_body(text)),
        };
    }
    if let Some(o) = json_envelope(text) {
        return o;
    }
    if let Some(o) = code_line(text) {
        return o;
    }
    if let Some(o) = stopped_run(text) {
        return o;
    }
    ToolOutcome {
        code: None,
        failed: None,
        body: Cow::Borrowed(observation_body(text)),
    }
}

/// What a harness writes before a run's `<output>` when it stopped the run: mini-swe-agent's
/// "The last command <command>...</command> timed out and has been killed." (its timeout
/// template, with no return code). Matched lowercase.
const STOPPED_WORDS: [&str; 3] = ["timed out", "been killed", "was killed"];

/// A run the harness stopped, said before its `<output>` block: a failure, whose body is what
/// the run printed, or (printing nothing, as a server that never returns) the harness's line
/// from the command on ("timed out and has been killed."). Read as plain text, the empty
/// output was a success: a SWE run's `runserver` that timed out was summarized
/// `-> ok: (empty)`.
fn stopped_run(text: &str) -> Option<ToolOutcome<'_>> {
    static OPEN: Tag = Tag::new("<output>");
    let at = OPEN.find(head_bytes(text, 2 * EDGE_BYTES))?;
    let preamble = &text[..at];
    let lower = preamble.to_ascii_lowercase();
    let hit = STOPPED_WORDS.iter().filter_map(|w| lower.find(w)).min()?;
    let body = observation_body(text);
    if !body.trim().is_empty() {
        return Some(ToolOutcome {
            code: None,
            failed: Some(true),
            body: Cow::Borrowed(body),
        });
    }
    // The line of the words, from the end of a tag before them (`</command>`) on.
    let line_start = preamble[..hit].rfind('\n').map_or(0, |i| i + 1);
    let line_end = preamble[hit..]
        .find('\n')
        .map_or(preamble.len(), |i| hit + i);
    let from = preamble[line_start..hit]
        .rfind('>')
        .map_or(line_start, |i| line_start + i + 1);
    Some(ToolOutcome {
        code: None,
        failed: Some(true),
        body: Cow::Borrowed(preamble[from..line_end].trim()),
    })
}

/// Whether the run of the shell command line `cmd`, every program of it a printer
/// (`shell_line::printers`), exited (`code`) 1 printing (`body`) no diagnostic line: a search
/// that matched nothing, files that differ (`ToolOutcome::failure_of`).
pub fn found_nothing(cmd: &str, code: Option<i64>, body: &str) -> bool {
    code == Some(1)
        && shell_line::printers(cmd)
            .is_some_and(|programs| !shell_line::has_diagnostic(body, &programs))
}

/// Whether a tool output reports a failure: by its verdict (`read`), else by the words of
/// what it printed (`words_say_failure`).
pub fn reports_failure(text: &str) -> bool {
    read(text).failure()
}

impl ToolOutcome<'_> {
    /// Whether the run failed: its verdict, else the words of what it printed
    /// (`words_say_failure`).
    pub fn failure(&self) -> bool {
        self.failed.unwrap_or_else(|| words_say_failure(&self.body))
    }

    /// Whether the run of the shell command line `cmd` failed: its verdict; else, when every
    /// program of the line only prints files (`shell_line::printers`: `cat`, `sed -n`, `grep`,
    /// `git diff`, ...), a diagnostic line of one of them (`cat: x.py: No such file or
    /// directory`); else the words of what it printed (`words_say_failure`). What such a line
    /// prints is the files' words: over the held-out SWE runs as tool calls with the output
    /// alone, a `cat` of a module that catches `Exception` was filed as an error; two such reads
    /// took 4,897 of the 7,560 characters of one fold's Errors (django-16631, at the naive
    /// cut's budget), and its Tool calls kept 6 calls where the same run as text kept 29.
    ///
    /// A line of such programs that exited 1 without a diagnostic found nothing: grep's "exit
    /// status is 0 if a line is selected, 1 if no lines were selected, and 2 if an error
    /// occurred" (GNU grep manual, Exit Status; POSIX grep likewise), diff's "1 means some
    /// differences were found" (GNU diffutils manual, Invoking diff). Filed as errors, the
    /// searches that matched nothing took a SWE run's Errors section (5 of its 10 lines
    /// `grep -n "..." x.py -> error: rc=1`) while the edits among its calls were dropped.
    pub fn failure_of(&self, cmd: &str) -> bool {
        if let Some(failed) = self.failed {
            return failed && !self.found_nothing(cmd);
        }
        match shell_line::printers(cmd) {
            Some(programs) => shell_line::has_diagnostic(&self.body, &programs),
            None => words_say_failure(&self.body),
        }
    }

    fn found_nothing(&self, cmd: &str) -> bool {
        found_nothing(cmd, self.code, &self.body)
    }

    /// Whether a file a read tool returned (`Producer::FileRead`) reports a failure: its
    /// verdict; else its words, only when it is a message, not a file (at most
    /// [`READ_MESSAGE_LINES`] lines: `File does not exist.`, `Error: ENOENT ...`). A file's
    /// lines are its own words: a module that catches `Exception`, returned unnumbered (Gemini
    /// CLI's `read_file` returns the text as it is), is no failed read. A file a tool returns in
    /// a JSON record (`{"content": "     1|import os\\n...", "total_lines": 24}`,
    /// `read_call::file_text`) is read as that file: read raw, the record was one line, and
    /// every read of a module that names `Exception` was filed as a failed read.
    pub fn read_failure(&self) -> bool {
        if let Some(failed) = self.failed {
            return failed;
        }
        let file = read_call::file_text(&self.body);
        let text = file.as_deref().unwrap_or(&self.body);
        let lines = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .take(READ_MESSAGE_LINES + 1);
        lines.count() <= READ_MESSAGE_LINES && words_say_failure(text)
    }

    /// Whether the run failed, read as `producer` printed it: a shell command's run
    /// (`failure_of`), a file read (`read_failure`), any other call (`failure`).
    pub fn failure_by(&self, producer: &Producer<'_>) -> bool {
        match producer {
            Producer::Command(cmd) => self.failure_of(cmd),
            Producer::FileRead => self.read_failure(),
            Producer::Call => self.failure(),
        }
    }

    /// Whether the run of the shell command line `cmd` exited 0 and yet printed that something
    /// failed (`words_say_failure`): a reproduction script's `Actual count: 2` then `FAIL:
    /// Count is incorrect!`, a check that prints the exception it caught. What such a run
    /// printed is what the turn found, and a digest files it beside the errors
    /// (`failure_or_report_by`). Not a line of programs that only print files
    /// (`shell_line::printers`): their words are the files'.
    pub fn exited_ok_reporting_failure(&self, cmd: &str) -> bool {
        self.exited_ok_with_failure_words() && shell_line::printers(cmd).is_none()
    }

    /// Whether the run exited 0 and its words say something failed (the first test of
    /// `exited_ok_reporting_failure`, before its producer is known).
    pub fn exited_ok_with_failure_words(&self) -> bool {
        self.code == Some(0) && words_say_failure(&self.body) && !ends_on_success(&self.body)
    }

    /// `failure_by`, or a command that exited 0 reporting a failure
    /// (`exited_ok_reporting_failure`): where a digest files a run.
    pub fn failure_or_report_by(&self, producer: &Producer<'_>) -> bool {
        self.failure_by(producer)
            || matches!(producer, Producer::Command(cmd) if self.exited_ok_reporting_failure(cmd))
    }

    /// The same reading, its body owned.
    pub fn into_owned(self) -> ToolOutcome<'static> {
        ToolOutcome {
            code: self.code,
            failed: self.failed,
            body: Cow::Owned(self.body.into_owned()),
        }
    }
}

/// `read` of a text that may be owned (the joined text blocks of a result): the body borrows
/// when the text does.
pub fn read_cow(text: Cow<'_, str>) -> ToolOutcome<'_> {
    match text {
        Cow::Borrowed(t) => read(t),
        Cow::Owned(t) => read(&t).into_owned(),
    }
}

/// Words that open a run's last line when it says the run succeeded (lowercase).
const SUCCESS_VERDICTS: [&str; 7] = [
    "success",
    "successfully",
    "pass",
    "passed",
    "ok",
    "all tests passed",
    "all checks passed",
];

/// Whether a run's last line is its verdict of success (`SUCCESS: Found expected error code.`,
/// `PASS`, `OK (skipped=1)`, `✓ all tests passed`): a script that exited 0 and says it worked
/// reports no failure, whatever words it printed before (a check that caught the exception it
/// expected printed `Caught ValidationError` and was filed under the errors). Not a line that
/// names a failure too (`PASS: 3, FAIL: 1`), nor a run with a check's failure on a line of its
/// own before (`FAIL: Output does not match expected for year 9.`, then the last check's
/// `SUCCESS: ...`).
fn ends_on_success(text: &str) -> bool {
    let Some(last) = text.trim_end().rsplit('\n').next() else {
        return false;
    };
    let opens = |line: &str, word: &str| {
        line.trim_start_matches(|c: char| !c.is_alphanumeric())
            .get(..word.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(word))
    };
    let verdict = SUCCESS_VERDICTS.iter().any(|v| {
        opens(last, v)
            && !last
                .trim_start_matches(|c: char| !c.is_alphanumeric())
                .get(v.len()..)
                .is_some_and(|rest| {
                    rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
                })
    });
    verdict
        && !last.to_ascii_lowercase().contains("fail")
        && !text.lines().any(|l| opens(l, "fail"))
}

/// Words that say a run failed (lowercase; `fail` covers failed, failure, FAIL).
const FAILURE_WORDS: [&str; 9] = [
    "error",
    "exception",
    "traceback",
    "fail",
    "fatal:",
    "not found",
    "invalid",
    "denied",
    "no such file",
];
/// Bytes of an output's head read for failure words.
const HEAD_WORD_BYTES: usize = 400;
/// Lines at an output's end read for them: where test runners and scripts print how the run
/// ended (`1 failed, 10 passed`, `FAILED (failures=2)`, an exception's last line).
const TAIL_WORD_LINES: usize = 2;

/// Whether an output with no verdict of its own reads as a failure: a failure word in its
/// first [`HEAD_WORD_BYTES`] bytes or on its last [`TAIL_WORD_LINES`] lines, unless it counts
/// none (`0 failed`, `no errors`, `errors=0`).
fn words_say_failure(text: &str) -> bool {
    let head = head_bytes(text, HEAD_WORD_BYTES);
    let trimmed = text.trim_end();
    let mut from = trimmed.len();
    for _ in 0..TAIL_WORD_LINES {
        match trimmed[..from].rfind('\n') {
            Some(i) => from = i,
            None => {
                from = 0;
                break;
            }
        }
    }
    // The end, where the head does not already cover it, and bounded like the head.
    let from = from.max(head.len());
    let tail = tail_bytes(&trimmed[from.min(trimmed.len())..], HEAD_WORD_BYTES);
    says_failure(head) || says_failure(tail)
}

fn says_failure(region: &str) -> bool {
    // Every output of a fold is read here: one lowercase copy of at most `HEAD_WORD_BYTES`, all
    // the words found in one pass (case-sensitive patterns keep the searcher's prefilter).
    static FINDER: OnceLock<AhoCorasick> = OnceLock::new();
    let finder = FINDER.get_or_init(|| {
        AhoCorasick::new(FAILURE_WORDS).unwrap_or_else(|e| unreachable!("fixed ASCII words: {e}"))
    });
    let l = region.to_ascii_lowercase();
    let b = l.as_bytes();
    finder.find_iter(&l).any(|m| {
        let line_start = l[..m.start()].rfind('\n').map_or(0, |i| i + 1);
        let line_end = l[m.end()..].find('\n').map_or(l.len(), |i| m.end() + i);
        let line = &l[line_start..line_end];
        if is_listing_line(line) {
            return false;
        }
        // Inside a name (`get_form_error`, `ValidationError`, `error_messages`, `add_error(`)
        // the word is code a listing shows, unless the name opens its line as an error class
        // does where a run ends (`ValueError: bad`).
        let prev = m.start().checked_sub(1).map(|i| b[i]);
        let next = b.get(m.end()).copied();
        if prev.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
            || next.is_some_and(|c| c == b'_' || c == b'(')
        {
            return error_class_opens(line, m.end() - line_start);
        }
        !counts_none(&l[..m.start()], &l[m.end()..])
    })
}

/// Whether a (lowercase) line is a line of a listing rather than a run's own words: a file
/// shown with its line numbers (`nl -ba`, `cat -n`: `  651<TAB>code`; `651→code`) or a search hit
/// (`grep -n`: `785:    code`, `django/forms/models.py:785:    code`). A tool-calling
/// agent's shell results often carry no exit code, and a listing of `django/forms/models.py`
/// names `get_form_error` and `error_messages` on every screen: over the held-out SWE runs as
/// such calls, seven reads and listings of one fold were filed as errors and filled the room.
fn is_listing_line(line: &str) -> bool {
    let t = line.trim_start().as_bytes();
    // A search hit names its file first (`path.py:785:code`): the line number follows it.
    let t = match t.iter().position(|&c| c == b':') {
        Some(colon)
            if !t[0].is_ascii_digit()
                && !t[..colon].contains(&b' ')
                && t[..colon].iter().any(|&c| c == b'/' || c == b'.') =>
        {
            &t[colon + 1..]
        }
        _ => t,
    };
    let digits = t.iter().take_while(|c| c.is_ascii_digit()).count();
    digits > 0
        && match t.get(digits) {
            Some(b'\t') => true,
            // `12→code`: the arrow (U+2192) several agents' file-reading tools number lines
            // with where `cat -n` puts a tab.
            Some(0xE2) => t[digits..].starts_with("\u{2192}".as_bytes()),
            // (`12:30:01 ERROR ...`, a log's time, is no line number.)
            Some(b':') => !t.get(digits + 1).is_some_and(u8::is_ascii_digit),
            _ => false,
        }
}

/// Whether the name that ends at byte `end` of a (lowercase) line opens the line as an error
/// class does where a traceback ends: `valueerror: bad`, `django.core.exceptions.
/// validationerror: [...]`, or the class alone on its line.
fn error_class_opens(line: &str, end: usize) -> bool {
    let t = line.trim_start();
    let start = line.len() - t.len();
    end > start
        && line[start..end]
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
        && matches!(line.as_bytes().get(end), None | Some(b':'))
}

/// Whether the words around a failure word count none of it: `0 failed`, `no errors`,
/// `failures=0`, `errors: 0`, `error count: 0`.
fn counts_none(before: &str, after: &str) -> bool {
    let word_end = after
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(after.len());
    let mut rest = after[word_end..].trim_start_matches([' ', '=', ':']);
    // A count's name may sit between the word and its number: `error count: 0`,
    // `failures found = 0`.
    for name in ["count", "found", "total", "detected"] {
        if let Some(r) = rest.strip_prefix(name) {
            if r.starts_with([' ', '=', ':']) {
                rest = r.trim_start_matches([' ', '=', ':']);
                break;
            }
        }
    }
    let zero_after = rest.starts_with('0') && !rest[1..].starts_with(|c: char| c.is_ascii_digit());
    let prev = before
        .trim_end()
        .rsplit(|c: char| c.is_whitespace() || c == '(' || c == ',')
        .next()
        .unwrap_or("");
    zero_after || prev == "0" || prev == "no"
}

/// `<returncode>N</returncode>` of a mini-swe-agent observation (at the start of the text).
pub fn return_code(text: &str) -> Option<i64> {
    static OPEN: Tag = Tag::new("<returncode>");
    static CLOSE: Tag = Tag::new("</returncode>");
    let text = head_bytes(text, EDGE_BYTES);
    let start = OPEN.find(text)? + OPEN.len();
    let end = CLOSE.find(&text[start..])? + start;
    text[start..end].trim().parse().ok()
}

/// A tag of an observation, found by a searcher built once: a digest reads every observation's
/// tags several times, and `str::find` built a searcher for the tag at each (most of the
/// digest's substring searching on the SWE trajectories).
struct Tag {
    tag: &'static str,
    finder: std::sync::OnceLock<memchr::memmem::Finder<'static>>,
}

impl Tag {
    const fn new(tag: &'static str) -> Self {
        Tag {
            tag,
            finder: std::sync::OnceLock::new(),
        }
    }

    fn len(&self) -> usize {
        self.tag.len()
    }

    /// Where the tag first starts in `text` (as `text.find(tag)`).
    fn find(&self, text: &str) -> Option<usize> {
        self.finder
            .get_or_init(|| memchr::memmem::Finder::new(self.tag))
            .find(text.as_bytes())
    }
}

/// The body of an observation: inside `<output>` when present.
fn observation_body(text: &str) -> &str {
    static OPEN: Tag = Tag::new("<output>");
    static CLOSE: Tag = Tag::new("</output>");
    if let Some(s) = OPEN.find(head_bytes(text, 2 * EDGE_BYTES)) {
        let body = &text[s + OPEN.len()..];
        // The closing tag ends the text (or comes before a short trailer).
        let tail_from = body.len().saturating_sub(2 * EDGE_BYTES);
        let tail_from = (tail_from..body.len())
            .find(|&i| body.is_char_boundary(i))
            .unwrap_or(body.len());
        return match CLOSE.find(&body[tail_from..]) {
            Some(e) => &body[..tail_from + e],
            None => body,
        };
    }
    text
}

/// A JSON object that wraps a run: it has an exit code, a body or an error field (at its top
/// level). Checked on the text's ends before it is parsed: a long output sits between its keys.
/// `None` for any other text.
pub fn json_envelope(text: &str) -> Option<ToolOutcome<'_>> {
    let t = text.trim();
    if !(t.starts_with('{') && t.ends_with('}')) {
        return None;
    }
    let named = |edge: &str| {
        names_a_key(edge, &CODE_KEYS)
            || names_a_key(edge, &BODY_KEYS)
            || names_a_key(edge, &ERROR_KEYS)
    };
    let worth_parsing = named(head_bytes(t, EDGE_BYTES))
        || named(tail_bytes(t, EDGE_BYTES))
        || names_a_key(head_bytes(t, EDGE_BYTES), &SUCCESS_KEYS)
        || (t.len() <= WRAPPER_MAX_BYTES && opens_with_key(t));
    if !worth_parsing {
        return None;
    }
    let obj: Map<String, Value> = serde_json::from_str(t).ok()?;
    let code = CODE_KEYS.iter().find_map(|k| obj.get(*k).and_then(integer));
    let bodies: Vec<&Value> = BODY_KEYS.iter().filter_map(|k| obj.get(*k)).collect();
    let errors: Vec<&Value> = ERROR_KEYS.iter().filter_map(|k| obj.get(*k)).collect();
    let flags: Vec<bool> = SUCCESS_KEYS
        .iter()
        .filter_map(|k| obj.get(*k).and_then(Value::as_bool))
        .collect();
    let status = status_verdict(&obj);
    // Whether a field of the record says the call failed: an error that holds something, a
    // `success` / `ok` that is false, a failed `status`.
    let said_failed =
        errors.iter().any(|v| present(v)) || flags.contains(&false) || status == Some(true);
    if code.is_none() && bodies.is_empty() && (!flags.is_empty() || status.is_some()) {
        // A record that says whether it succeeded is its own verdict, whatever its other fields
        // hold: hermes-agent's `patch` returns `{"success": true, "diff": "..."}`, and a diff
        // that edits error handling read as a failed call by its words. It is shown whole.
        return Some(ToolOutcome {
            code: None,
            failed: Some(said_failed),
            body: Cow::Borrowed(text),
        });
    }
    if code.is_none() && bodies.is_empty() && errors.is_empty() {
        // One key around the whole return value is a wrapper (the recorded Gemini requests of
        // pydantic-ai and crewai send a function's result as `{"return_value": ...}` or
        // `{"result": ...}`): its words decide, unless the wrapped string is an envelope itself
        // (a terminal's JSON sent back through Gemini), read once more.
        let mut fields = obj.into_iter();
        return match (fields.next(), fields.next()) {
            (Some((_, Value::String(s))), None) => Some(match json_envelope(&s) {
                Some(inner) => inner.into_owned(),
                None => ToolOutcome {
                    code: None,
                    failed: None,
                    body: Cow::Owned(s),
                },
            }),
            (Some((_, v)), None) => Some(ToolOutcome {
                code: None,
                failed: None,
                body: Cow::Owned(v.to_string()),
            }),
            _ => None,
        };
    }
    // A record that merely has an `error` field among its data is not an envelope: an
    // envelope's error stands beside a code or a body, or alone.
    if code.is_none() && bodies.is_empty() && obj.len() > errors.len() {
        return None;
    }
    let failed = code.is_some_and(|c| c != 0) || said_failed;
    let has_body = !bodies.is_empty();
    let mut body = String::new();
    for v in bodies.into_iter().chain(
        errors
            .into_iter()
            .filter(|v| matches!(v, Value::String(_) | Value::Object(_) | Value::Array(_))),
    ) {
        let piece = match v {
            Value::String(s) => Cow::Borrowed(s.as_str()),
            Value::Null => continue,
            other => Cow::Owned(other.to_string()),
        };
        if piece.trim().is_empty() {
            continue;
        }
        if !body.is_empty() {
            body.push('\n');
        }
        body.push_str(&piece);
    }
    // An envelope that names no printed text (a code and fields of its own) is shown whole.
    let body = if body.is_empty() && !has_body {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(body)
    };
    Some(ToolOutcome {
        code,
        failed: Some(failed),
        body,
    })
}

/// Whether `edge` (an end of a JSON text) names one of `keys` as a key: quoted, as a JSON key
/// is written (`"output"`, not a word in the output).
fn names_a_key(edge: &str, keys: &[&str]) -> bool {
    keys.iter().any(|k| {
        edge.match_indices(k)
            .any(|(i, _)| edge[..i].ends_with('"') && edge[i + k.len()..].starts_with('"'))
    })
}

/// Bytes under which a JSON object is parsed to see whether it is a one-key wrapper (larger
/// ones are parsed only when an envelope's key shows at an edge).
const WRAPPER_MAX_BYTES: usize = 256 * 1024;

/// Whether a JSON text opens with a key (`{"key":`), the shape of a one-key wrapper.
fn opens_with_key(t: &str) -> bool {
    let Some(rest) = t.strip_prefix("{\"") else {
        return false;
    };
    match head_bytes(rest, 64).find('"') {
        Some(end) => rest[end + 1..].trim_start().starts_with(':'),
        None => false,
    }
}

fn integer(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Whether an error field says something: not null, false, empty or zero.
fn present(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::String(s) => !s.trim().is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        Value::Number(n) => n.as_f64() != Some(0.0),
    }
}

/// Phrases that end right before an exit code, matched in lowercase: at a line's start (after
/// `[`, `(` or spaces) for the first two, anywhere for the rest, which say what they are.
const LINE_MARKERS: [&str; 2] = ["exit code", "exit status"];
const INLINE_MARKERS: [&str; 5] = [
    "finished with exit code",
    "completed with exit code",
    "exited with code",
    "exited with exit code",
    "non-zero exit status",
];

/// An exit code on the first or last line of the text (the last wins: it reports how the
/// run ended); the body is the text without that line.
fn code_line(text: &str) -> Option<ToolOutcome<'_>> {
    let trimmed = text.trim_end();
    let last_start = trimmed.rfind('\n').map_or(0, |i| i + 1);
    let last = &trimmed[last_start..];
    if last.len() <= EDGE_BYTES {
        if let Some(code) = line_code(last) {
            return Some(ToolOutcome {
                code: Some(code),
                failed: Some(code != 0),
                body: Cow::Borrowed(trimmed[..last_start].trim_end()),
            });
        }
    }
    let first_end = text.find('\n').unwrap_or(text.len());
    let first = &text[..first_end];
    if first.len() <= EDGE_BYTES && last_start != 0 {
        if let Some(code) = line_code(first) {
            return Some(ToolOutcome {
                code: Some(code),
                failed: Some(code != 0),
                body: Cow::Borrowed(text[first_end..].trim_start_matches('\n')),
            });
        }
    }
    None
}

/// The exit code one line reports.
fn line_code(line: &str) -> Option<i64> {
    // Every marker says "exit": most lines are let go without a lowercase copy.
    if !line
        .as_bytes()
        .windows(4)
        .any(|w| w.eq_ignore_ascii_case(b"exit"))
    {
        return None;
    }
    let l = line.to_ascii_lowercase();
    let head = l.trim_start_matches([' ', '\t', '[', '(', '#', '>']);
    let at_start = LINE_MARKERS
        .iter()
        .find(|m| head.starts_with(*m))
        .map(|m| &head[m.len()..]);
    let rest = at_start.or_else(|| {
        INLINE_MARKERS
            .iter()
            .find_map(|m| l.find(m).map(|i| &l[i + m.len()..]))
    })?;
    let rest = rest.trim_start_matches([' ', ':', '=']);
    let digits = rest
        .char_indices()
        .take_while(|&(i, c)| c.is_ascii_digit() || (i == 0 && c == '-'))
        .count();
    rest[..digits].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(text: &str) -> Option<bool> {
        read(text).failed
    }

    #[test]
    fn a_run_that_exited_0_and_ends_on_its_success_reports_no_failure() {
        let caught = "<returncode>0</returncode>\n<output>\nCaught ValidationError: {'__all__': ['Price must be non-negative.']}\nField: __all__, Code: invalid_price\nSUCCESS: Found expected error code.\n</output>";
        assert!(!read(caught).exited_ok_with_failure_words());
        for end in [
            "PASS",
            "OK (skipped=1)",
            "✓ All tests passed!",
            "Passed: the error is raised",
        ] {
            let run = format!(
                "<returncode>0</returncode>\n<output>\nError raised as expected\n{end}\n</output>"
            );
            assert!(!read(&run).exited_ok_with_failure_words(), "{end}");
        }
        // A last line that is no verdict, or names a failure beside its pass, still reports one.
        let mixed = "<returncode>0</returncode>\n<output>\nFAIL: Output does not match expected for year 9.\nSUCCESS: Output matches expected for year 123.\n</output>";
        assert!(read(mixed).exited_ok_with_failure_words());
        for end in [
            "FAIL: Count is incorrect!",
            "PASS: 3, FAIL: 1",
            "Okay, the error is still there",
            "passes: 2",
        ] {
            let run = format!("<returncode>0</returncode>\n<output>\nActual count: 2\nError: wrong count\n{end}\n</output>");
            assert!(read(&run).exited_ok_with_failure_words(), "{end}");
        }
    }

    #[test]
    fn a_record_that_says_it_succeeded_is_its_own_verdict() {
        let patch = r#"{"success": true, "diff": "--- a/x.py\n+++ b/x.py\n-    raise ValueError('error')\n+    raise TypeError('failed')\n", "files_modified": ["x.py"]}"#;
        assert_eq!(failed(patch), Some(false));
        assert_eq!(read(patch).body, patch);
        assert_eq!(
            failed(r#"{"success": false, "diff": "", "error": "old_string not found"}"#),
            Some(true)
        );
        assert_eq!(
            failed(r#"{"ok": true, "error": "rate limited"}"#),
            Some(true)
        );
        // Fields that disagree: any that says the call failed is the verdict.
        assert_eq!(
            failed(r#"{"success": true, "status": "error"}"#),
            Some(true)
        );
        // A success flag that is not a boolean is data.
        assert_eq!(failed(r#"{"success": "partial", "note": "x"}"#), None);
        // A status that says how the call went, beside an output or alone.
        assert_eq!(
            failed(r#"{"status": "error", "output": "No snapshot found for rollback."}"#),
            Some(true)
        );
        assert_eq!(
            failed(r#"{"status": "Success", "output": "3 rows"}"#),
            Some(false)
        );
        assert_eq!(
            failed(r#"{"status": "failed", "reason": "quota"}"#),
            Some(true)
        );
        // A status of the data is none.
        assert_eq!(
            failed(r#"{"reservation_id": "4OG6T3", "status": "cancelled", "flights": []}"#),
            None
        );
        assert_eq!(
            failed(r#"{"status": "available", "output": "seats: 3"}"#),
            Some(false)
        );
    }

    #[test]
    fn a_file_a_read_tool_returns_in_a_json_record_is_no_failed_read() {
        let record = r#"{"content": "     1|import os\n     2|class ConfigError(Exception):\n     3|    pass", "total_lines": 3, "truncated": false}"#;
        assert!(!read(record).read_failure());
        // Read as any call's output, its words still decide (a record is data of any kind).
        assert!(read(record).failure());
        // A message in a record, or an error envelope, is a failed read.
        assert!(read(r#"{"message": "Error: file not found: src/x.py"}"#).read_failure());
        assert!(read(r#"{"error": "File not found: src/x.py"}"#).read_failure());
        assert!(read("Error: ENOENT: no such file or directory").read_failure());
    }

    #[test]
    fn a_json_envelope_with_exit_code_zero_and_a_null_error_is_a_success() {
        let o = read(
            r#"{"output": "158:def parse_http_date(date):\n194:def x():", "exit_code": 0, "error": null}"#,
        );
        assert_eq!(o.code, Some(0));
        assert_eq!(o.failed, Some(false));
        assert_eq!(o.body, "158:def parse_http_date(date):\n194:def x():");
    }

    #[test]
    fn a_json_envelope_with_a_nonzero_exit_code_failed_and_its_output_is_unescaped() {
        let o =
            read(r#"{"output": "Input: 70, Parsed: 1970\nFAIL", "exit_code": 1, "error": null}"#);
        assert_eq!((o.code, o.failed), (Some(1), Some(true)));
        assert_eq!(o.body, "Input: 70, Parsed: 1970\nFAIL");
    }

    #[test]
    fn an_envelope_error_message_is_the_failure_and_part_of_the_body() {
        let o = read(
            r#"{"output": "", "exit_code": 124, "error": "Command timed out after 60 seconds"}"#,
        );
        assert_eq!(o.failed, Some(true));
        assert_eq!(o.body, "Command timed out after 60 seconds");
        assert_eq!(failed(r#"{"error": "reservation not found"}"#), Some(true));
        assert_eq!(failed(r#"{"output": {"temp": 15}}"#), Some(false));
        assert_eq!(read(r#"{"output": {"temp": 15}}"#).body, r#"{"temp":15}"#);
        assert_eq!(failed(r#"{"stdout": "ok", "success": false}"#), Some(true));
        assert_eq!(
            failed(r#"{"stdout": "a", "stderr": "b", "returncode": "0"}"#),
            Some(false)
        );
        assert_eq!(
            read(r#"{"stdout": "a", "stderr": "b", "returncode": 0}"#).body,
            "a\nb"
        );
    }

    #[test]
    fn a_one_key_wrapper_gives_its_value_and_leaves_the_verdict_to_its_words() {
        let o = read(r#"{"return_value": "line one\nline two"}"#);
        assert_eq!((o.code, o.failed), (None, None));
        assert_eq!(o.body, "line one\nline two");
        assert_eq!(read(r#"{"result": {"temp": 15}}"#).body, r#"{"temp":15}"#);
        assert!(reports_failure(
            r#"{"result": "Traceback (most recent call last):\n  x"}"#
        ));
        assert!(!reports_failure(r#"{"result": "12 passed"}"#));
        // A terminal's envelope sent back inside a wrapper is read as the envelope.
        let o = read(r#"{"result": "{\"output\": \"FAIL\", \"exit_code\": 1}"}"#);
        assert_eq!(
            (o.code, o.failed, o.body.as_ref()),
            (Some(1), Some(true), "FAIL")
        );
        // Two keys of data are a record, shown as it is.
        let t = r#"{"temp": 15, "unit": "C"}"#;
        assert_eq!(read(t).body, t);
    }

    #[test]
    fn a_record_with_an_error_field_among_its_data_is_not_an_envelope() {
        assert_eq!(
            failed(r#"{"reservation_id": "X1", "error": null, "status": "active"}"#),
            None
        );
        assert_eq!(
            failed(r#"{"reservation_id": "X1", "status": "cancelled"}"#),
            None
        );
        assert_eq!(failed(r#"{"output": "unterminated"#), None);
    }

    #[test]
    fn an_exit_code_line_at_either_end_is_the_verdict_and_leaves_the_body() {
        let o = read("Exit code: 0\nWall time: 0.2 seconds\nOutput:\nall good");
        assert_eq!((o.code, o.failed), (Some(0), Some(false)));
        assert!(o.body.starts_with("Wall time"));
        let o = read("Traceback (most recent call last):\n  ...\nValueError: x\n[Command finished with exit code 1]");
        assert_eq!((o.code, o.failed), (Some(1), Some(true)));
        assert!(o.body.ends_with("ValueError: x"));
        assert_eq!(failed("building\nProcess exited with code 2"), Some(true));
        assert_eq!(
            failed("x\nCommand 'ls' returned non-zero exit status 2."),
            Some(true)
        );
        assert_eq!(
            failed("collected 12 items\n12 passed\n[The command completed with exit code 0.]"),
            Some(false)
        );
    }

    #[test]
    fn words_about_exit_codes_inside_a_listing_are_no_verdict() {
        // Source code that mentions exit codes in its middle, not on an edge line of its own.
        assert_eq!(
            failed("def main():\n    sys.exit(code)  # exit code 1 on error\n    return"),
            None
        );
        assert_eq!(failed("raise ValueError('bad')\ntry:\n    pass"), None);
        // A one-line output is not a header over a body.
        assert_eq!(failed("exit code"), None);
    }

    #[test]
    fn words_judge_an_output_without_a_verdict_at_its_head_and_last_lines() {
        assert!(words_say_failure(
            "Traceback (most recent call last):\n  File x"
        ));
        let mut listing = "collected 12 items\n".to_string();
        listing.push_str(&"test_a.py ....\n".repeat(60));
        assert!(!words_say_failure(&listing));
        listing
            .push_str("FAILED test_a.py::test_x - AssertionError\n==== 1 failed, 11 passed ====\n");
        assert!(words_say_failure(&listing));
        assert!(words_say_failure(
            "Input: 70, Parsed: 1970, Expected: 2070\nFAIL"
        ));
        // Counts of none are no failure.
        assert!(!words_say_failure("5680 passed, 0 failures in 12.3s"));
        assert!(!words_say_failure(
            "Ran 4 tests\n\nOK (errors=0, failures=0)"
        ));
        assert!(!words_say_failure("build finished with no errors"));
        assert!(!words_say_failure("lint done\nerror count: 0"));
        assert!(!words_say_failure("Failures found = 0, warnings found = 3"));
        assert!(words_say_failure("lint done\nerror count: 2"));
        assert!(words_say_failure("error found: config.yaml missing"));
        // A failure word deep in the middle of a long output is not read.
        let mid = format!("{}error\n{}done", "x\n".repeat(400), "y\n".repeat(10));
        assert!(!words_say_failure(&mid));
    }

    /// A listing's words are the file's, not the run's: code naming errors, line-numbered or as
    /// search hits, is no failure; a run's own error lines are, an error class opening its line
    /// included.
    #[test]
    fn a_listing_that_names_errors_is_no_failure() {
        for listing in [
            "   785\t    def get_form_error(self):\n   786\t        return gettext(\"Please correct the duplicate values below.\")\n   787\t    error_messages=error_messages,",
            "785:    def get_form_error(self):\n790:        self.add_error(None, errors)",
            "  41\u{2192}        except Exception as error:\n  42\u{2192}            log(error)",
            "django/forms/models.py:785:    def get_form_error(self):\ndjango/forms/formsets.py:12:from django.core.exceptions import ValidationError",
            "class ModelFormMixin:\n    error_messages = {}\n    def clean(self):\n        raise ValidationError('bad')",
        ] {
            assert!(!words_say_failure(listing), "{listing}");
        }
        for run in [
            "Traceback (most recent call last):\n  File \"x.py\", line 3\nModuleNotFoundError: No module named 'reproduce_app'",
            "django.core.exceptions.ValidationError: ['Enter a valid date.']",
            "ValueError",
            "error: pathspec 'x' did not match any file(s) known to git",
            "12:30:01 ERROR connection refused",
            "bash: foo: command not found",
            "1 failed, 3 passed in 0.40s",
        ] {
            assert!(words_say_failure(run), "{run}");
        }
    }

    #[test]
    fn a_run_the_harness_stopped_is_a_failure_saying_so() {
        // mini-swe-agent's timeout template: no return code, the words before the output.
        let t = "The last command <command>python3 -m mypkg runserver --noreload</command> timed out \
                 and has been killed.\nThe output of the command was:\n <output>\n\n</output>\n\
                 Please try another command and make sure to avoid those requiring interactive input.";
        let o = read(t);
        assert_eq!(o.failed, Some(true));
        assert_eq!(o.body, "timed out and has been killed.");
        let printed = t.replace(
            "<output>\n\n</output>",
            "<output>\nStarting server\n</output>",
        );
        let o = read(&printed);
        assert_eq!((o.failed, o.body.trim()), (Some(true), "Starting server"));
        // Words of the output itself are the run's, not the harness's.
        let o = read("<output>\nthe job timed out twice before\n</output>");
        assert_eq!(o.failed, None);
    }

    #[test]
    fn a_mini_swe_agent_observation_keeps_its_tags_reading() {
        let o = read("<returncode>1</returncode>\n<output>\ncat: nope: No such file\n</output>");
        assert_eq!((o.code, o.failed), (Some(1), Some(true)));
        assert_eq!(o.body, "\ncat: nope: No such file\n");
    }

    #[test]
    fn an_owned_text_reads_the_same() {
        let t = r#"{"output": "x", "exit_code": 3}"#;
        assert_eq!(read_cow(Cow::Owned(t.to_string())), read(t));
    }
}
