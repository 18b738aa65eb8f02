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
use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::changing_call;
use crate::estimate::Estimator;
use crate::identifier_index::{self, Collector, Ident};
use crate::message::{Content, Message, Part, Role, ToolCall};
use crate::read_call;
use crate::recall;
use crate::shell_line::reads_only;
use crate::standing_rules::rules_in;
use crate::tool_outcome::{self, return_code, Producer};

mod carried;
mod clip;
mod fences;
mod forms;
mod idle;
mod json_compact;
mod pack;
mod request_edges;
mod run_summary;
mod runner_setup;
mod session_header;
mod thought_call;
mod traceback;
mod units;

use carried::{carried_call_forms, merge_previous, PENDING_OUTPUT};
use clip::{clip, clip_ends, is_whole};
use fences::{command_fence_and_shells, thought_before};
use forms::{
    Call, Clipped, Command, Conclusion, Forms, Outcome, Request, CONCLUSION_PLAN, RESULT_HEAD_SHARE,
};
use idle::{names_nothing, only_courtesy, only_intends};
use request_edges::repeated_edges;
use units::Entry;

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

/// Characters of a command the fold ends on (its output kept after the summary).
const PENDING_COMMAND_CHARS: usize = 800;

/// The outcome of a previous digest's pending command that no observation of the span answered.
const UNANSWERED: &str = "no output: the turn after it was not its output";

/// The command of an observation whose assistant turn an earlier compaction cut to its marker
/// (a degraded fold keeps the turn's head and end, and a short keep holds neither its thought
/// nor its fenced command): the command was in the span, cut away, not missing from it.
const CUT_COMMAND: &str = "(command cut by an earlier compaction)";

/// (characters, head share) of the newest thought's forms: its fullest form, then the usual
/// ones. A thought between 900 and 12,000 characters is sized to the room its forms leave
/// (`pack::Packing::fill`) where no call's result is.
const LAST_STATE_PLAN: [(usize, f64); 4] = [(12_000, 0.6), (900, 0.6), (400, 0.6), (160, 0.6)];

/// Share of the room the identifiers carried from the previous summary may keep.
const CARRIED_INDEX_SHARE: f64 = 0.5;

/// Share of a room of up to `SMALL_ROOM_TOKENS` the identifier index is sure to get (it takes
/// more when the rest is short). In the tight rooms of short dialogues (120-640 tokens for a
/// 1,300-4,300-token fold) an id, a flight number or a certificate is a fact in 3-6 tokens
/// where a clipped request line takes 30-40: on the first held-out probe set
/// (`tests/data/probes/heldout.refs.json`) 40% kept 175 facts of 282 where 25% kept 165 and
/// 55% kept 173 (an earlier build). With the 25% deep tail, over the whole data set
/// (`tools/future_report.py`, the facts each agent wrote after a cut): 40% kept 1,072 of the
/// tau-bench dialogues' 1,436 facts, 45% 1,077, 50% 1,082, 55% 1,084; the SWE runs 4,522, 4,520,
/// 4,525, 4,522 of 6,073; both held-out sets at 0.75x / 1x the naive budget 177 / 488, 180 / 489,
/// 180 / 493, 180 / 493 of 608. 50% is where it stops gaining.
const INDEX_SHARE: f64 = 0.5;

/// The index's sure share of a larger room: there the units have space, and a larger share
/// only makes the packing shorten more of them (12% more time on the SWE runs, no fact more).
const LARGE_ROOM_INDEX_SHARE: f64 = 0.25;

/// Rooms up to this many tokens give the index `INDEX_SHARE`.
const SMALL_ROOM_TOKENS: f64 = 3_000.0;

/// The text of a message: borrowed when it is one string, joined text blocks otherwise.
fn text_of<'m>(m: &'m Message<'_>) -> Cow<'m, str> {
    match &m.content {
        Content::Text(t) => Cow::Borrowed(t.as_ref()),
        Content::Parts(ps) => Cow::Owned(parts_text(ps)),
        Content::None => Cow::Borrowed(""),
    }
}

/// A text agent's observation and a person's words beside it in one user turn, as the formats
/// that alternate turns send them (Anthropic, Bedrock, Gemini: the harness's output block and
/// the text the person typed, in either order, one user turn): the observation (the text blocks
/// opening with a return code) and the words (the other text blocks). None for any other turn.
/// Read as one observation, the words went with it: a standing rule ("Never charge my Visa card
/// ending in 4417.") typed beside a command's output was lost at the first fold in these formats,
/// where chat sends it as a turn of its own.
pub(crate) fn observation_and_words<'m>(m: &'m Message<'_>) -> Option<(Cow<'m, str>, String)> {
    let (coded, words): (Vec<&str>, Vec<&str>) =
        text_blocks(m).partition(|t| return_code(t).is_some());
    if coded.is_empty() || words.is_empty() {
        return None;
    }
    let observation = match coded.as_slice() {
        [one] => Cow::Borrowed(*one),
        many => Cow::Owned(many.join("\n")),
    };
    Some((observation, words.join("\n")))
}

/// The text blocks of a message's content list that say something (not blank), in order.
pub(crate) fn text_blocks<'m>(m: &'m Message<'_>) -> impl Iterator<Item = &'m str> + 'm {
    m.parts().iter().filter_map(|p| match p {
        Part::Text(t) if !t.trim().is_empty() => Some(t.as_ref()),
        _ => None,
    })
}

/// The first text block of a turn of several and the others' text (non-empty), or None.
fn first_and_rest<'m>(m: &'m Message<'_>) -> Option<(&'m str, String)> {
    let mut texts = text_blocks(m);
    let first = texts.next()?;
    let rest: Vec<&str> = texts.collect();
    (!rest.is_empty()).then(|| (first, rest.join("\n")))
}

/// Whether a user turn says something of the user's own: it carries no tool results, or it
/// carries text of its own beside them (an Anthropic user message holds the results of the
/// last calls and what the user says next in one turn: "Never run the deploy against
/// prod-eu-1" beside a `tool_result` was neither a request nor a rule of the summary).
fn speaks(m: &Message<'_>) -> bool {
    if m.result_ids().next().is_none() {
        return true;
    }
    match &m.content {
        Content::Parts(ps) => ps
            .iter()
            .any(|p| matches!(p, Part::Text(t) if !t.trim().is_empty())),
        _ => false,
    }
}

/// What a result's parts say: their text, else what they are (`[web_search_result x5]`,
/// `[image]`): a server tool's structured result is no empty one.
fn result_text(content: &[Part<'_>]) -> String {
    // Texts, and what structured blocks say (search results, a file a server tool viewed).
    let mut text = String::new();
    for p in content {
        let said = match p {
            Part::Text(t) => t.as_ref(),
            Part::Opaque { text: Some(t), .. } => t.as_ref(),
            _ => continue,
        };
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(said);
    }
    if !text.trim().is_empty() || content.is_empty() {
        return text;
    }
    let mut kinds: Vec<(&str, usize)> = Vec::new();
    for p in content {
        let kind = match p {
            Part::Opaque { kind, .. } => kind.as_ref(),
            Part::Image(_) => "image",
            _ => continue,
        };
        match kinds.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => kinds.push((kind, 1)),
        }
    }
    let listed: Vec<String> = kinds
        .iter()
        .map(|&(k, n)| {
            if n > 1 {
                format!("{k} x{n}")
            } else {
                k.to_string()
            }
        })
        .collect();
    if listed.is_empty() {
        text
    } else {
        format!("[{}]", listed.join(", "))
    }
}

/// The first line of `text` that holds anything, trimmed.
fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
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

/// The share of a clipped JSON result taken from its head (`RESULT_HEAD_SHARE` for text,
/// whose last lines say how it ended).
const JSON_HEAD_SHARE: f64 = 0.6;

/// A command's observation read once for the units that show it: its body, code and whether
/// the run of `cmd` failed (`ToolOutcome::failure_of`).
fn outcome_of<'t>(text: Cow<'t, str>, cmd: &str) -> Outcome<'t> {
    let producer = Producer::Command(Cow::Borrowed(cmd));
    outcome_for(text, &json_compact::ShownArgs::default(), &producer)
}

/// As `outcome_of`, for the result of a call of a fold that has shown the string arguments
/// `shown` (a JSON result leaves out the pairs that echo them: `json_compact::compact_for`),
/// read as `producer` printed it (`ToolOutcome::failure_by`).
fn outcome_for<'t>(
    text: Cow<'t, str>,
    shown: &json_compact::ShownArgs,
    producer: &Producer<'_>,
) -> Outcome<'t> {
    let mut o = tool_outcome::read_cow(text);
    if *producer == Producer::FileRead && o.failed.is_none() {
        // A file a read returned inside a JSON record is read and shown as the file
        // (`read_call::file_text`; taken out here, the record is parsed once).
        if let Some(file) = read_call::file_text(&o.body) {
            o.body = Cow::Owned(file);
        }
    }
    let err = o.failure_or_report_by(producer);
    // A JSON result is shown compactly: every value in about half the characters
    // (`json_compact`).
    // A failed run's Python traceback is shown by its ends (`traceback::condense`); a test
    // run, up to its runner's verdict (`run_summary`).
    let (body, head_share) = match json_compact::compact_for(&o.body, shown) {
        Some(c) => (Cow::Owned(c), JSON_HEAD_SHARE),
        None => {
            let body = match err.then(|| traceback::condense(&o.body)).flatten() {
                Some(c) => Cow::Owned(c),
                None => o.body,
            };
            // (A pytest run's environment header says nothing of the run: `session_header`.)
            let body = match session_header::without_session_header(&body) {
                Some(c) => Cow::Owned(c),
                None => body,
            };
            let (body, share) = match (run_summary::up_to_summary(&body).map(str::len), body) {
                // A run shown up to its verdict keeps its end only: the verdict is what it said.
                (Some(n), Cow::Borrowed(b)) => (Cow::Borrowed(&b[..n]), 0.0),
                (Some(n), Cow::Owned(mut b)) => {
                    b.truncate(n);
                    (Cow::Owned(b), 0.0)
                }
                (None, body) => (body, RESULT_HEAD_SHARE),
            };
            // Nor a Django run's database setup and teardown (`runner_setup`), left out after
            // the verdict is looked for: the teardown after a verdict is what marks a run to be
            // shown by its end (`run_summary::up_to_summary`), and the setup lines fill the
            // head of every other run.
            match runner_setup::without_runner_setup(&body) {
                Some(c) => (Cow::Owned(c), share),
                None => (body, share),
            }
        }
    };
    // (A search prints where things are: its shortest forms keep more of it, `forms::command_plan`.)
    let search = matches!(producer, Producer::Command(cmd) if crate::shell_line::searches(cmd));
    Outcome {
        err,
        code: o.code,
        text: Some(body),
        head_share,
        search,
    }
}

struct Builder<'a> {
    entries: Vec<Entry<'a>>,
    /// What the units so far say (`units::key`), by section: the richest form of each unit
    /// whose forms were given, and the shortest form of every unit.
    seen: HashSet<(Section, u64)>,
    /// Whether units built lazily are keyed by their richest form too (when a previous
    /// digest is merged: its units were keyed so).
    keyed: bool,
    focus: Vec<String>,
    index: Collector,
    /// Sentences that open or close two user turns of the span or more (`repeated_edges`):
    /// left out of the clipped forms of the requests they open or close.
    repeated: HashSet<String>,
    /// The string arguments of the span's calls so far, which their results need not repeat.
    shown_args: json_compact::ShownArgs,
    /// The command a previous digest ended on (its open item "ran `$ cmd`; its output is in
    /// the messages kept after this summary"): the observation that opens this span is its.
    carried_command: Option<String>,
    /// The commands run so far with what they printed (`run_key`), and the unit of the
    /// newest run of each.
    runs: HashMap<u64, usize>,
    /// Units of runs that a later run of the same command printing the same superseded: left
    /// out of the digest (`without_superseded`), the newest standing for both.
    superseded: Vec<usize>,
}

/// Whether `rest` (what follows a decimal number) opens with a unit of time: "s", "ms", "sec",
/// "seconds" (after at most one space), then no letter or digit.
fn is_duration_unit(rest: &[u8]) -> bool {
    let rest = rest.strip_prefix(b" ").unwrap_or(rest);
    ["seconds", "second", "secs", "sec", "ms", "s"]
        .iter()
        .any(|u| {
            rest.starts_with(u.as_bytes())
                && rest.get(u.len()).is_none_or(|b| !b.is_ascii_alphanumeric())
        })
}

/// A command's run: its section, the command and what it printed with every duration masked
/// (a test run's timing, "Ran 20 tests in 0.412s"). An agent runs the same failing test again
/// after reverting its change ("the test fails even without my changes"): the digest listed
/// the same run twice at full length, where the second said nothing new; the newest is kept,
/// in its place (after the edits between them, which did not change what it printed). Every
/// other figure is compared as it is: a run whose failures went from 2 to 1, or whose loss went
/// from 2.31 to 0.05, is a new run.
fn run_key(section: Section, cmd: &str, outcome: &Outcome<'_>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    section.hash(&mut h);
    cmd.hash(&mut h);
    outcome.code.hash(&mut h);
    outcome.err.hash(&mut h);
    let text = outcome.text.as_deref().unwrap_or("").as_bytes();
    // Hashed a stretch at a time (an output may run to megabytes): the text up to each
    // duration whole, the duration as one mark.
    let (mut i, mut from) = (0, 0);
    while i < text.len() {
        if !text[i].is_ascii_digit() {
            i = next_digit(text, i + 1);
            continue;
        }
        let start = i;
        while i < text.len() && text[i].is_ascii_digit() {
            i += 1;
        }
        if i + 1 < text.len() && text[i] == b'.' && text[i + 1].is_ascii_digit() {
            i += 1;
            while i < text.len() && text[i].is_ascii_digit() {
                i += 1;
            }
            if is_duration_unit(&text[i..]) {
                h.write(&text[from..start]);
                h.write_u8(0xFF);
                from = i;
            }
        }
    }
    h.write(&text[from..]);
    h.finish()
}

/// Where the first ASCII digit of `text` at or after `i` is (`text.len()` without one): a block
/// of bytes tested at a time, as vector code (a command's output is mostly other bytes, and
/// `run_key` stepped over them one by one).
fn next_digit(text: &[u8], mut i: usize) -> usize {
    const BLOCK: usize = 32;
    while let Some(block) = text.get(i..i + BLOCK) {
        let digits = block
            .iter()
            .enumerate()
            .fold(0u32, |m, (k, c)| m | u32::from(c.is_ascii_digit()) << k);
        if digits != 0 {
            return i + digits.trailing_zeros() as usize;
        }
        i += BLOCK;
    }
    text[i.min(text.len())..]
        .iter()
        .position(u8::is_ascii_digit)
        .map_or(text.len(), |k| i + k)
}

impl<'a> Builder<'a> {
    /// The units of a span's digest, starting from the sections of `previous` (the summary
    /// folded with the span), merged.
    fn new(previous: Option<&'a str>, focus: Vec<String>, repeated: HashSet<String>) -> Self {
        let mut b = Builder {
            entries: Vec::new(),
            seen: HashSet::new(),
            keyed: previous.is_some(),
            focus,
            index: Collector::default(),
            repeated,
            shown_args: json_compact::ShownArgs::default(),
            carried_command: None,
            runs: HashMap::new(),
            superseded: Vec::new(),
        };
        if let Some(prev) = previous {
            merge_previous(&mut b, prev);
        }
        b
    }

    /// Add `e` unless a unit of its section said the same already: its richest form (`first`,
    /// for a unit whose forms were given) or its shortest form (a request carried over in its
    /// short form is the same request; two units whose richest forms agree agree in their
    /// shortest). Whether it was added.
    fn add(&mut self, mut e: Entry<'a>, first: Option<(Section, u64)>) -> bool {
        let last = units::key(e.section, e.last());
        if first.is_some_and(|f| self.seen.contains(&f)) || self.seen.contains(&last) {
            return false;
        }
        self.seen.extend(first);
        self.seen.insert(last);
        e.focus = !self.focus.is_empty() && {
            let lower = e.richest().to_lowercase();
            self.focus.iter().any(|w| lower.contains(w.as_str()))
        };
        self.entries.push(e);
        true
    }

    /// A unit of the given forms.
    fn push(&mut self, section: Section, forms: Vec<String>) -> bool {
        let Some(e) = Entry::given(section, forms) else {
            return false;
        };
        let first = units::key(section, e.richest());
        self.add(e, Some(first))
    }

    /// A unit whose forms are built when read (`forms::Forms`).
    fn push_lazy(&mut self, section: Section, forms: Box<dyn Forms + 'a>) -> bool {
        let e = Entry::lazy(section, forms);
        // Beside a previous digest's units (given whole, as it wrote them) a unit is compared
        // by its richest form too, as they are: the same call carried and made again is one.
        let first = self.keyed.then(|| units::key(section, e.richest()));
        self.add(e, first)
    }

    fn request(&mut self, text: Cow<'a, str>) {
        let rules = rules_in(&text);
        let idle = only_courtesy(&text);
        // The clipped forms are cut from the request without its courtesy edges: the
        // conditions sit in its middle, which a clip would lose first.
        let forms = Request::without(text, &self.repeated, &rules);
        let at = self.entries.len();
        let said_in = self
            .push_lazy(Section::Requests, Box::new(forms))
            .then_some(at);
        for r in rules {
            let before = self.entries.len();
            if self.push(Section::Rules, vec![r]) {
                self.entries[before].from = said_in;
            }
        }
        if let Some(at) = said_in {
            self.entries[at].idle = idle;
        }
    }

    /// A tool call and its result (None: not in the span). Whether the result is an error.
    fn call(&mut self, c: &'a ToolCall<'a>, result: Option<CallResult<'a>>) -> bool {
        let parsed = serde_json::from_str::<Value>(&c.arguments);
        if let Some(args) = parsed.as_ref().ok().and_then(Value::as_object) {
            self.shown_args.add(args);
        }
        let producer = Producer::of_call(c.name, parsed.as_ref().ok());
        let outcome = result.map_or(
            Outcome {
                text: None,
                code: None,
                err: false,
                head_share: RESULT_HEAD_SHARE,
                search: false,
            },
            |r| {
                let mut o = outcome_for(r.text, &self.shown_args, &producer);
                o.err |= r.marked_error;
                o
            },
        );
        let err = outcome.err;
        if let Some(thought) =
            thought_call::thought_of(c.name, parsed.as_ref().ok()).filter(|_| !err)
        {
            let idle = names_nothing(thought) || only_intends(thought);
            let forms = Clipped {
                text: Cow::Owned(format!("{}: {thought}", c.name)),
                plan: &CONCLUSION_PLAN,
            };
            let pushed = self.push_lazy(Section::Calls, Box::new(forms));
            self.mark_idle(pushed, idle);
            return false;
        }
        let section = if err { Section::Errors } else { Section::Calls };
        let changes = !err && changing_call::changes(c.name, &producer);
        if let Producer::Command(cmd) = &producer {
            let run = run_key(section, cmd, &outcome);
            let idle = reads_only(cmd) || found_nothing(cmd, &outcome);
            let forms = Command {
                joined: Command::join(cmd),
                outcome,
            };
            let pushed = self.push_rich(section, Box::new(forms));
            self.ran(pushed, run);
            self.mark_idle(pushed, idle);
            self.mark_changes(pushed, changes);
            return err;
        }
        let reads = producer == Producer::FileRead;
        let mut outcome = outcome;
        outcome.search |= crate::read_call::searches_files(c.name);
        let forms = Call {
            name: c.name,
            args: &c.arguments,
            parsed,
            outcome,
            shortest: Default::default(),
        };
        let pushed = self.push_rich(section, Box::new(forms));
        self.mark_idle(pushed, reads);
        self.mark_changes(pushed, changes);
        err
    }

    /// A call or command unit, whose first form keeps its result past the packing's
    /// usual fullest (`forms::FULLEST_RESULT_CHARS`).
    /// Whether it was added (not said already).
    fn push_rich(&mut self, section: Section, forms: Box<dyn Forms + 'a>) -> bool {
        let pushed = self.push_lazy(section, forms);
        if pushed {
            self.mark_rich_top(true);
        }
        pushed
    }

    /// The unit just added (when `pushed`) is the newest run `run` (`run_key`): the unit of an
    /// earlier run that printed the same is superseded.
    fn ran(&mut self, pushed: bool, run: u64) {
        if pushed {
            if let Some(old) = self.runs.insert(run, self.entries.len() - 1) {
                self.superseded.push(old);
            }
        }
    }

    /// Whether the unit just added (when `pushed`) is idle (`units::Entry::idle`).
    fn mark_idle(&mut self, pushed: bool, idle: bool) {
        if let Some(e) = self.entries.last_mut().filter(|_| pushed) {
            e.idle = idle;
        }
    }

    /// Whether the unit just added (when `pushed`) is a call that changed something
    /// (`units::Entry::changes`).
    fn mark_changes(&mut self, pushed: bool, changes: bool) {
        if let Some(e) = self.entries.last_mut().filter(|_| pushed) {
            e.changes = changes;
        }
    }

    /// The unit just added has an extra fullest form (`units::Entry::rich_top`).
    fn mark_rich_top(&mut self, rich: bool) {
        if let Some(e) = self.entries.last_mut() {
            e.rich_top = rich;
        }
    }

    /// A text agent's command and the observation that answered it (`refused`: the harness
    /// ran no command of the turn and the observation says why). Whether it failed.
    fn command(&mut self, cmd: &str, observation: Cow<'a, str>, refused: bool) -> bool {
        // A refusal's first line says why; the rest is the harness's instructions, the same
        // every time (a SWE fold's five refusals took more of its Errors than its tracebacks).
        // It says the command did not run: "$ python3 apply_fix.py -> error: Please always
        // provide EXACTLY ONE action ..." read as the script's own failure.
        let observation = match observation {
            t if refused => Cow::Owned(format!("{NOT_RUN}{}", first_line(&t))),
            o => o,
        };
        let mut outcome = outcome_of(observation, cmd);
        outcome.err |= refused;
        let err = outcome.err;
        let forms = Command {
            joined: Command::join(cmd),
            outcome,
        };
        let section = if err { Section::Errors } else { Section::Calls };
        let run = run_key(section, cmd, &forms.outcome);
        let idle = reads_only(cmd) || found_nothing(cmd, &forms.outcome);
        let pushed = self.push_rich(section, Box::new(forms));
        self.ran(pushed, run);
        self.mark_idle(pushed, idle);
        let producer = Producer::Command(Cow::Borrowed(cmd));
        self.mark_changes(pushed, !err && changing_call::changes("", &producer));
        err
    }
}

/// What a refused command's line says before the harness's reason.
const NOT_RUN: &str = "not run, the turn was refused: ";

/// Whether the run of `cmd` was a search that matched nothing (`tool_outcome::found_nothing`).
/// Idle as a printed file is (`units::Entry::idle`): it can be run again, and what it says
/// (nothing matched) is worth less than the output of a script among the newest calls the
/// packing keeps. Over every SWE run cut at half and three quarters
/// (`tools/future_report.py`): 4,616 facts of 6,073 filed as plain calls, 4,618 as idle ones.
fn found_nothing(cmd: &str, outcome: &Outcome<'_>) -> bool {
    !outcome.err
        && tool_outcome::found_nothing(cmd, outcome.code, outcome.text.as_deref().unwrap_or(""))
}

/// A call's result within the span: its text, and whether the provider marked it failed.
#[derive(Clone)]
struct CallResult<'a> {
    text: Cow<'a, str>,
    /// `is_error` (Anthropic) / `status: "error"` (Bedrock): a verdict the text need not say.
    marked_error: bool,
}

/// Whether a call's result (with no error flag of the provider's) reports a failure, read as
/// its call printed it (`ToolOutcome::failure_or_report_by`: a shell command's run, a file
/// read), as a unit of the digest files it. The arguments are parsed only when the words alone
/// say it failed: a reading of what printed it only takes a failure back (a diagnostic line in
/// the middle of a long output that the words miss is the one case it would add, and is left
/// to the unit's own reading), or, for a run that exited 0, files it beside the errors.
fn call_failed(c: &ToolCall<'_>, text: &str) -> bool {
    let o = tool_outcome::read(text);
    if o.exited_ok_with_failure_words() {
        return o.failure_or_report_by(&Producer::of_arguments(c.name, &c.arguments));
    }
    if !o.failure() {
        return false;
    }
    // (A verdict is read by the producer too: a search that exited 1 found nothing.)
    o.failure_by(&Producer::of_arguments(c.name, &c.arguments))
}

/// The texts a call's result can come from, by (the index of the message making the call, its
/// id), within the span: each result answers the nearest call before it with its id
/// (`call_pairs`; ids are reused in real traffic). Several, in order, where one message makes
/// several calls of one id (Ollama's calls carry no id and are read with their tool's name:
/// two `run` calls of one turn, answered in order).
fn results_by_call<'a>(msgs: &'a [Message<'_>]) -> HashMap<(usize, &'a str), Vec<CallResult<'a>>> {
    let answered = crate::call_pairs::answered_calls(msgs);
    let mut results = HashMap::new();
    for (i, m) in msgs.iter().enumerate() {
        if let Some(id) = m.tool_call_id {
            if let Some(&k) = answered.get(&(i, id)) {
                results
                    .entry((k, id))
                    .or_insert_with(Vec::new)
                    .push(CallResult {
                        text: text_of(m),
                        marked_error: false,
                    });
            }
        }
        if let Content::Parts(ps) = &m.content {
            for p in ps {
                if let Part::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                    ..
                } = p
                {
                    // A server-run tool's result sits in the message that made the call
                    // (Anthropic's `web_search_tool_result` after its `server_tool_use`): the
                    // summary said "no result in this span" of every web search it folded.
                    let k = answered
                        .get(&(i, *tool_use_id))
                        .copied()
                        .or_else(|| m.answered_here(tool_use_id).then_some(i));
                    if let Some(k) = k {
                        results
                            .entry((k, *tool_use_id))
                            .or_insert_with(Vec::new)
                            .push(CallResult {
                                text: Cow::Owned(result_text(content)),
                                marked_error: *is_error,
                            });
                    }
                }
            }
        }
    }
    results
}

/// The walk over the span's messages: the units found and what the header counts.
struct Walk<'a> {
    b: Builder<'a>,
    msgs: &'a [Message<'a>],
    results: HashMap<(usize, &'a str), Vec<CallResult<'a>>>,
    /// Whether this agent's observations carry a return code (mini-swe-agent's do).
    coded: bool,
    /// Whether the agent calls tools through the API (a call in the span): its
    /// fenced blocks are code it quotes, never a command it runs, and a user turn after its
    /// reply is a person speaking.
    native: bool,
    /// The newest assistant thought: the last state, and where open items are looked for.
    last_thought: Option<Cow<'a, str>>,
    prev_command: Option<String>,
    /// Shell blocks in the turn `prev_command` came from (`shell_blocks`).
    prev_blocks: usize,
    /// Whether the newest assistant turn holds no command because an earlier compaction cut
    /// its middle (`degrade::cut_marker_at`): the observation after it answers a command that
    /// was in this span, cut away.
    prev_cut: bool,
    /// Whether `prev_command` is the previous digest's pending command
    /// (`Builder::carried_command`), which no observation has answered yet: an assistant turn
    /// first leaves it an open item again.
    carried: bool,
    n_calls: usize,
    n_errors: usize,
    n_requests: usize,
    /// The first message whose calls, results and thoughts become units (`read_whole_from`):
    /// before it, only requests and rules do, and the rest is counted for the header.
    whole_from: usize,
    /// Whether the header's counts of errors are wanted: a walk for the requests alone reads no
    /// call's outcome (on the 10k history, telling failures apart was a third of its time).
    counting: bool,
}

impl<'a> Walk<'a> {
    /// A walk over `msgs` (the span, `previous` the summary folded with it) that builds its
    /// units into `b`, calls and thoughts from message `whole_from` on; `counting`: whether the
    /// header's counts of errors are wanted (a walk for the requests alone reads no outcome).
    fn new(
        mut b: Builder<'a>,
        msgs: &'a [Message<'a>],
        previous: Option<&str>,
        whole_from: usize,
        counting: bool,
    ) -> Self {
        let pending = b.carried_command.take();
        // Whether the agent's observations carry a return code: one of the span's does, or the
        // previous digest's commands show theirs (a later fold may hold no observation of its
        // own: a rule the user stated right after a command, folded with the previous summary
        // alone, was read as the command's output and lost when that call line was shortened).
        let coded = msgs.iter().any(|m| {
            matches!(m.role, Role::User | Role::Other) && return_code(&text_of(m)).is_some()
        }) || previous.is_some_and(shows_return_codes);
        Walk {
            b,
            msgs,
            // (Read by the calls made units and by the counts alone.)
            results: if counting || whole_from < msgs.len() {
                results_by_call(msgs)
            } else {
                HashMap::new()
            },
            coded,
            // (The recall tool's calls are the library's own, made in text agents' histories too.)
            native: msgs
                .iter()
                .any(|m| m.calls().any(|c| c.name != recall::RECALL_TOOL)),
            last_thought: None,
            carried: pending.is_some(),
            prev_command: pending,
            prev_blocks: 1,
            prev_cut: false,
            n_calls: 0,
            n_errors: 0,
            n_requests: 0,
            whole_from,
            counting,
        }
    }

    /// A user turn: a request, or a text agent's observation of the command before it, or both
    /// (`observation_and_words`).
    fn user_turn(&mut self, k: usize, m: &'a Message<'a>) {
        // (The harness answers a command once, in one block: in a turn of several text blocks
        // read as its answer, the blocks after the first are a person's words, as a user turn
        // after the answer is in chat.)
        let split = observation_and_words(m).or_else(|| {
            let (first, rest) = first_and_rest(m)?;
            self.observation_at(k, first)
                .then_some((Cow::Borrowed(first), rest))
        });
        match split {
            Some((observation, words)) => {
                self.user_text(k, observation);
                self.n_requests += 1;
                self.b.request(Cow::Owned(words));
            }
            None => self.user_text(k, text_of(m)),
        }
    }

    /// Whether `text` of user turn `k` is a text agent's observation. An observation opens with
    /// its return code, or is the user turn right after a command: where the agent's
    /// observations carry a code, an uncoded answer to a command is still the harness speaking
    /// (a format complaint, a timeout, the submitted diff) when the agent answers it next.
    /// Otherwise (the coded observation follows, or the span ends here) a person may have
    /// spoken in between, and a request is never lost.
    fn observation_at(&self, k: usize, text: &str) -> bool {
        let coded_here = return_code(text).is_some();
        let answered = self
            .msgs
            .get(k + 1)
            .is_some_and(|n| n.role == Role::Assistant);
        // The harness answers a command once: a user turn after another user turn is a person
        // speaking (a rule stated after a format complaint was read as the command's output).
        let after_assistant = k
            .checked_sub(1)
            .and_then(|j| self.msgs.get(j))
            .is_some_and(|p| p.role == Role::Assistant);
        // The previous digest's pending command waits for its own output, which opens with a
        // return code where the agent's do: a person's words right after the summary (which
        // the agent then answers) are no output of it.
        let waiting = self.prev_command.is_some() && !(self.carried && self.coded && !coded_here);
        // A turn of several shell blocks is answered by the harness's refusal (`user_text`),
        // never by a person, wherever the span ends: at the span's end the refusal was read as
        // a user request (178 of 178 SWE spans that end on one; 7 of 348 summaries wrote it).
        let refusal = self.coded && self.prev_blocks > 1 && after_assistant && waiting;
        coded_here || refusal || (waiting && after_assistant && (!self.coded || answered))
    }

    /// A user turn's `text` (message `k`): a request, or a text agent's observation.
    fn user_text(&mut self, k: usize, text: Cow<'a, str>) {
        let coded_here = return_code(&text).is_some();
        let observation = self.observation_at(k, &text);
        // A turn of several shell blocks answered without a return code where the answers
        // carry one: the harness ran none of them and said why (mini-swe-agent's "provide
        // EXACTLY ONE action ... found 3 actions", 178 times in 64 of 120 SWE runs), and the
        // summary said the last one ran "ok".
        let refused = observation && !coded_here && self.coded && self.prev_blocks > 1;
        // (A person's words in between leave the command to the observation that follows.)
        let cmd = if observation {
            self.carried = false;
            self.prev_command.take().or_else(|| {
                coded_here.then(|| {
                    if std::mem::take(&mut self.prev_cut) {
                        CUT_COMMAND.to_string()
                    } else {
                        "(command not in this span)".to_string()
                    }
                })
            })
        } else {
            None
        };
        if let Some(cmd) = cmd {
            self.n_calls += 1;
            // (Before `whole_from` a command is counted, not made a unit.)
            let err = if k < self.whole_from {
                refused
                    || self.counting && {
                        let o = tool_outcome::read(&text);
                        o.failure_of(&cmd) || o.exited_ok_reporting_failure(&cmd)
                    }
            } else {
                self.b.command(&cmd, text, refused)
            };
            if err {
                self.n_errors += 1;
            }
        } else if !text.trim().is_empty() {
            self.n_requests += 1;
            self.b.request(text);
        }
    }

    /// The thought of an assistant turn (empty when it has none), its fenced command kept to
    /// wait for its observation. The fence is found once: the command, the thought before it
    /// and, when a newer thought comes, the conclusion all read it.
    fn thought(&mut self, m: &'a Message<'a>) -> Cow<'a, str> {
        if let Some(cmd) = self.prev_command.take().filter(|_| self.carried) {
            // No observation answered it in this span, and the agent spoke again: its output is
            // not in the messages after this summary either (the harness refused the turn it
            // came from, which held two commands; or a person spoke). A call that printed
            // nothing, not the open item it was, whose words said its output comes next.
            self.n_calls += 1;
            self.b.push(
                Section::Calls,
                carried_call_forms(&format!("$ {cmd} -> {UNANSWERED}")),
            );
        }
        self.carried = false;
        self.prev_command = None;
        let text = text_of(m);
        if text.trim().is_empty() {
            return Cow::Borrowed("");
        }
        let fence = if self.native {
            None
        } else {
            command_fence_and_shells(&text)
        };
        if let Some((_, cmd, shells)) = fence {
            self.prev_command = Some(cmd.to_string());
            self.prev_blocks = shells;
        }
        // (Only a text agent's turn holds its command in its text.)
        self.prev_cut =
            !self.native && fence.is_none() && crate::degrade::cut_marker_at(&text).is_some();
        let at = fence.map(|(at, _, _)| at);
        match &text {
            Cow::Borrowed(t) => Cow::Borrowed(thought_before(t, at)),
            Cow::Owned(t) => Cow::Owned(thought_before(t, at).to_string()),
        }
    }

    /// An assistant turn: the previous thought becomes a conclusion (this one is the last
    /// state until a newer one comes), its fenced command waits for its observation, and each
    /// tool call becomes a unit with its result.
    fn assistant_turn(&mut self, k: usize, m: &'a Message<'a>) {
        let own = self.thought(m);
        if !own.is_empty() {
            if let Some(prev) = self.last_thought.replace(own) {
                let idle = names_nothing(&prev) || only_intends(&prev);
                let pushed = self
                    .b
                    .push_lazy(Section::Conclusions, Box::new(Conclusion::new(prev)));
                self.b.mark_idle(pushed, idle);
            }
        }
        for (j, c) in m.calls().enumerate() {
            self.n_calls += 1;
            let result = self.result_of(k, m, j).cloned();
            if self.b.call(c, result) {
                self.n_errors += 1;
            }
        }
    }

    /// The result of call `j` of message `k` (`m`): of the calls of its id in `m`, the same
    /// place among that id's results.
    fn result_of(&self, k: usize, m: &Message<'a>, j: usize) -> Option<&CallResult<'a>> {
        let c = m.calls().nth(j)?;
        let nth = m.calls().take(j).filter(|d| d.id == c.id).count();
        self.results.get(&(k, c.id))?.get(nth)
    }

    /// An assistant turn before `whole_from`: what the header counts, the command its
    /// observation answers, and its thought (the newest one becomes the last state, or a
    /// conclusion once a turn read whole follows); no unit of its own.
    fn counted_turn(&mut self, k: usize, m: &'a Message<'a>) {
        let own = self.thought(m);
        if !own.is_empty() {
            self.last_thought = Some(own);
        }
        for (j, c) in m.calls().enumerate() {
            self.n_calls += 1;
            if self.counting
                && self
                    .result_of(k, m, j)
                    .is_some_and(|r| r.marked_error || call_failed(c, &r.text))
            {
                self.n_errors += 1;
            }
        }
    }

    /// A command the span ends on: its observation is in the kept tail, but the command is
    /// only here (a heredoc that writes a whole file: its 20,000 characters were dropped, the
    /// tail showing `rc=0` for a file nobody could see written).
    fn pending_command(&mut self) {
        if let Some(cmd) = self.prev_command.take() {
            self.n_calls += 1;
            // An open item, not a call: its output sits in the kept messages right after the
            // summary, and as the newest call it took one of the few places the packing keeps
            // for the newest calls (a check's `Batch size: 500` was dropped for it).
            let joined = Command::join(&cmd);
            self.b.push(
                Section::Open,
                vec![format!(
                    "ran `$ {}{PENDING_OUTPUT}",
                    clip_ends(&joined, PENDING_COMMAND_CHARS, 0.6)
                )],
            );
        }
    }

    /// The newest thought as the last state, and the open items it names.
    fn last_state(&mut self) {
        let Some(t) = self.last_thought.take().filter(|t| !t.trim().is_empty()) else {
            return;
        };
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
        // Its fullest form is read only where the room holds it (a packing that must shorten
        // takes it to 900 characters first): a fold ending on a 31,000-character thought was
        // written as 1,284 tokens in a 4,430-token room, 46% of the budget used.
        let rich = !is_whole(&t, LAST_STATE_PLAN[1].0, LAST_STATE_PLAN[1].1);
        let forms = Clipped {
            text: t,
            plan: &LAST_STATE_PLAN,
        };
        if self.b.push_lazy(Section::LastState, Box::new(forms)) {
            self.b.mark_rich_top(rich);
        }
        for o in open.into_iter().rev().take(3) {
            self.b.push(Section::Open, vec![o]);
        }
    }

    /// The digest's first line at its shortest: how many messages were folded (the floor's,
    /// `pack::floor`, when no packing fits the room).
    fn short_header(&self) -> String {
        short_header(self.msgs.len())
    }

    /// The digest's first line: what the span held (and the focus asked for).
    fn header(&self, instructions: Option<&str>) -> String {
        let mut header = format!(
            "Earlier conversation folded by contextfold ({} messages: {} user requests, {} tool calls, {} errors).",
            self.msgs.len(),
            self.n_requests,
            self.n_calls,
            self.n_errors
        );
        if let Some(i) = instructions.filter(|s| !s.trim().is_empty()) {
            header.push_str("\nFocus: ");
            header.push_str(&clip(i, 300));
        }
        header
    }
}

/// The digest of `msgs` (the folded middle), sized to `opt.max_tokens`.
pub fn digest<'a>(msgs: &'a [Message<'a>], est: &Estimator, opt: &DigestOptions<'a>) -> String {
    digest_indexed(msgs, est, opt, None).text
}

/// A digest with what it could not hold and the index it ranked (`digest_indexed`).
pub struct Digested {
    pub text: String,
    /// The span's identifiers and those the previous summary carries, ranked.
    pub ranked: Vec<Ident>,
    /// The user's requests (of the span and the previous summary; courtesies aside) the text
    /// leaves out: under extreme pressure the oldest but the first go, and a caller says so
    /// rather than drop them silently. A request a standing rule says whole is kept as that
    /// rule.
    pub requests_left_out: usize,
    /// The requests, courtesies aside.
    pub requests: usize,
}

/// `digest`, and its identifier index ranked (the span's identifiers and those `opt.previous`
/// carries, `identifier_index::Collector::ranked`). `ranked`: that index as a digest of the
/// same span and previous summary ranked it (what scanning the span again would give): a
/// compaction digests its fold again at other rooms when the first came out over its share
/// of the budget, and the scan was about a third of each digest.
pub fn digest_indexed<'a>(
    msgs: &'a [Message<'a>],
    est: &Estimator,
    opt: &DigestOptions<'a>,
    ranked: Option<Vec<Ident>>,
) -> Digested {
    let hosts = with_hosts(msgs, opt.previous);
    let msgs = hosts.as_deref().unwrap_or(msgs);
    let focus: Vec<String> = opt
        .instructions
        .unwrap_or("")
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| w.len() >= 4)
        .map(|w| w.to_lowercase())
        .collect();
    // A focus keeps the units it names, however old: the whole span is read.
    let whole_from = if focus.is_empty() {
        read_whole_from(msgs, opt.max_tokens)
    } else {
        0
    };
    digest_reading(msgs, est, opt, focus, whole_from, ranked)
}

/// The user's requests of `msgs` (a folded span) and of `opt.previous` (its requests section
/// carried), as the digest's requests section alone, packed into `opt.max_tokens` as the
/// digest packs them (long ones clipped head and tail, then the oldest dropped but the first
/// two): what a model's summary is held to (a model that paraphrased or forgot an earlier
/// request does not lose it). An empty string when the span and `previous` hold none.
pub fn requests_section<'a>(
    msgs: &'a [Message<'a>],
    est: &Estimator,
    opt: &DigestOptions<'a>,
) -> String {
    requests_sections(msgs, est, opt.previous, &[opt.max_tokens])
        .pop()
        .unwrap_or_default()
}

/// `requests_section` at each room of `rooms` (tokens), in order, from one walk of the span:
/// a caller that tries a share of its room and then a larger one read a 10k-message fold
/// three times (its requests are the same in every packing; their forms are built and priced
/// once).
pub fn requests_sections<'a>(
    msgs: &'a [Message<'a>],
    est: &Estimator,
    previous: Option<&'a str>,
    rooms: &[u64],
) -> Vec<String> {
    let hosts = with_hosts(msgs, previous);
    let msgs = hosts.as_deref().unwrap_or(msgs);
    let b = Builder::new(previous, Vec::new(), repeated_edges(msgs));
    // Requests become units in every message; calls and thoughts in none.
    let mut w = Walk::new(b, msgs, previous, msgs.len(), false);
    walk(&mut w, previous);
    let Walk { b, .. } = w;
    let mut entries = b.entries;
    entries.retain(|e| e.section == Section::Requests);
    if entries.is_empty() {
        return vec![String::new(); rooms.len()];
    }
    rooms
        .iter()
        .map(|&room| {
            pack::fit(&entries, "", "", &[], est, room)
                .text
                .trim()
                .to_string()
        })
        .collect()
}

/// The span with each message that carries the previous summary and more (a summary merged at
/// the start of a host message) replaced by the host without the summary
/// (`summary_marker::without_summary`), so its own text and calls are read; None when no
/// message does (the span is read as it is). A carrier is otherwise skipped whole: the
/// previous summary comes as `previous`.
fn with_hosts<'a>(msgs: &[Message<'a>], previous: Option<&str>) -> Option<Vec<Message<'a>>> {
    previous?;
    let hosts: Vec<(usize, Message<'a>)> = msgs
        .iter()
        .enumerate()
        .filter(|(_, m)| crate::summary_marker::carries_previous(m, previous))
        .filter_map(|(k, m)| crate::summary_marker::without_summary(m).map(|h| (k, h)))
        .collect();
    if hosts.is_empty() {
        return None;
    }
    let mut v = msgs.to_vec();
    for (k, h) in hosts {
        v[k] = h;
    }
    Some(v)
}

/// Whether a previous digest lists a command with its return code (`- $ cmd -> ok: rc=0...`,
/// as `forms::Outcome::line` writes it).
fn shows_return_codes(previous: &str) -> bool {
    previous.lines().any(|l| {
        l.starts_with("- $ ")
            && l.find(" -> ").is_some_and(|at| {
                let out = &l[at + 4..];
                out.starts_with("ok: rc=") || out.starts_with("error: rc=")
            })
    })
}

/// `digest_indexed`, reading whole from message `whole_from` on (`read_whole_from`).
fn digest_reading<'a>(
    msgs: &'a [Message<'a>],
    est: &Estimator,
    opt: &DigestOptions<'a>,
    focus: Vec<String>,
    whole_from: usize,
    ranked: Option<Vec<Ident>>,
) -> Digested {
    let b = Builder::new(opt.previous, focus, repeated_edges(msgs));
    let mut w = Walk::new(b, msgs, opt.previous, whole_from, true);
    if let Some(ranked) = ranked {
        walk(&mut w, opt.previous);
        return written(w, ranked, est, opt);
    }
    // The identifier index reads every message on its own (the walk never looks at it): on a
    // long span it scans on a second thread while the walk builds the units, and this thread
    // scans what that one has not reached when the walk is done (`Claims`). The result is that
    // of one scan in order, however the two split the span. The second thread is the one kept
    // for such work (`helper_thread`) rather than one spawned per digest: the SWE trajectories'
    // compactions (~2 ms digests) 0.964x the time (CPU 0.93x), the 10k history's unchanged
    // (`benches/ab_compact.py`, round 84).
    // The collector lives on the heap and the other thread holds its address alone: scanned in
    // place on this thread's stack, its counters shared cache lines with the walk's state (3%
    // more CPU, measured).
    let mut index = Box::new(std::mem::take(&mut w.b.index));
    index.make_room();
    if scan_apart(msgs) {
        let previous = opt.previous;
        let claims = Claims::new(msgs.len());
        let collector: &mut Collector = &mut index;
        let claims = &claims;
        let later = crate::helper_thread::beside(
            move || scan_front(collector, msgs, previous, claims),
            || {
                walk(&mut w, opt.previous);
                // The walk done, this thread scans what the other has not reached, from the
                // end back; the two collectors merge as one scan in order would have found.
                scan_back(msgs, previous, claims)
            },
        );
        index.merge(later);
    } else {
        walk(&mut w, opt.previous);
        scan_index(&mut index, msgs, opt.previous);
    }
    written(w, index.ranked(), est, opt)
}

/// The digest a walk's units and the span's index (`ranked`) write, with that index.
fn written<'a>(
    mut w: Walk<'a>,
    ranked: Vec<Ident>,
    est: &Estimator,
    opt: &DigestOptions<'a>,
) -> Digested {
    w.pending_command();
    w.last_state();
    let header = w.header(opt.instructions);
    let short = w.short_header();
    let Walk { b, .. } = w;
    let entries = without_superseded(b.entries, &b.superseded);
    let fitted = pack::fit(&entries, &header, &short, &ranked, est, opt.max_tokens);
    Digested {
        text: fitted.text,
        ranked,
        requests_left_out: fitted.requests_left_out,
        requests: fitted.requests,
    }
}

/// `entries` without those of `superseded` (`Builder::ran`), each unit's `from` (the request
/// that says a rule) moved to the request's new place.
fn without_superseded<'a>(entries: Vec<Entry<'a>>, superseded: &[usize]) -> Vec<Entry<'a>> {
    if superseded.is_empty() {
        return entries;
    }
    let mut gone = vec![false; entries.len()];
    for &i in superseded {
        gone[i] = true;
    }
    let mut at = Vec::with_capacity(entries.len());
    let mut k = 0;
    for &g in &gone {
        at.push(k);
        k += usize::from(!g);
    }
    entries
        .into_iter()
        .zip(gone)
        .filter(|(_, g)| !g)
        .map(|(mut e, _)| {
            e.from = e.from.map(|q| at[q]);
            e
        })
        .collect()
}

fn short_header(n: usize) -> String {
    format!("Earlier conversation folded by contextfold ({n} messages).")
}

/// The standing rules a digest of `folded` (indices of `msgs`, the previous summary's carrier
/// among them) keeps, in order: the previous summary's, then those of the system and user
/// turns of the span (a text agent's observation, opening with its return code, states none:
/// the harness speaks there, not the user). A summary written by a model is held to the same
/// list (`contextfold.summary_room.with_rules`).
pub fn fold_rules(msgs: &[Message<'_>], folded: &[usize], previous: Option<&str>) -> Vec<String> {
    let mut rules: Vec<String> = Builder::new(previous, Vec::new(), HashSet::new())
        .entries
        .iter()
        .filter(|e| e.section == Section::Rules)
        .map(|e| e.richest().to_string())
        .collect();
    for &i in folded {
        let Some(m) = msgs.get(i) else { continue };
        // (A summary merged into a host message: the host's own words are read.)
        let host;
        let m = if crate::summary_marker::carries_previous(m, previous) {
            match crate::summary_marker::without_summary(m) {
                Some(h) => {
                    host = h;
                    &host
                }
                None => continue,
            }
        } else {
            m
        };
        let spoken = match m.role {
            Role::System | Role::Developer => true,
            Role::User | Role::Other => speaks(m),
            _ => false,
        };
        if !spoken {
            continue;
        }
        let text = match observation_and_words(m) {
            Some((_, words)) => Cow::Owned(words),
            None => text_of(m),
        };
        if return_code(&text).is_some() {
            continue;
        }
        for r in rules_in(&text) {
            if !rules.contains(&r) {
                rules.push(r);
            }
        }
    }
    rules
}

/// Tokens the standing rules of a fold take in its digest at the least (the shortest header
/// and the rules whole, `pack::floor`): the room under which a summary of `folded` would have
/// to give up a rule. 0 when the fold states none (`fold_rules`).
pub fn rules_floor_tokens(
    msgs: &[Message<'_>],
    folded: &[usize],
    previous: Option<&str>,
    est: &Estimator,
) -> u64 {
    let rules = fold_rules(msgs, folded, previous);
    if rules.is_empty() {
        return 0;
    }
    let refs: Vec<&str> = rules.iter().map(String::as_str).collect();
    est.summary_text(&pack::rules_text(&short_header(folded.len()), &refs))
        .ceil() as u64
}

/// How many times its room the newest part of a span read whole holds, in text at
/// `BYTES_PER_TOKEN` (and at least `WHOLE_ROUNDS` rounds). Before it, only the user's requests
/// and the standing rules become units (they are the last a packing drops, if ever); calls,
/// errors and thoughts are counted for the header and not built.
///
/// A packing shortens calls, errors and conclusions, drops them (the costliest first, the
/// newest few kept), and gives what the room has left back newest first (`pack`): a unit this
/// old would have to be cheaper than hundreds of newer ones to be kept. On the 10k-message
/// history's fold (6,714 messages into 32,768 tokens), 3,386 calls were built and priced for 4
/// errors kept, all from the last rounds. Checked on the 6,625 digests of
/// `benches/dump_digests.py` (every real conversation of ../shared/data and the 10k fold, at
/// budgets from 64 tokens up, with and without a previous digest and a focus): the same bytes
/// as reading every message whole.
const WHOLE_ROOMS: u64 = 16;

/// The fewest assistant turns (rounds) the part read whole holds: a span of short rounds
/// (`ls` and its one-line answer) is read whole further back than its text alone would say.
const WHOLE_ROUNDS: usize = 256;

/// Bytes of text per token for `WHOLE_ROOMS` (about what English prose and code take).
const BYTES_PER_TOKEN: u64 = 4;

/// Where the part of `msgs` read whole starts (0: the whole span): at an assistant turn, so a
/// call and its result, or a command and its observation, are read together.
fn read_whole_from(msgs: &[Message<'_>], max_tokens: u64) -> usize {
    let want = max_tokens.saturating_mul(WHOLE_ROOMS * BYTES_PER_TOKEN);
    let mut bytes = 0u64;
    let mut rounds = 0usize;
    for (k, m) in msgs.iter().enumerate().rev() {
        bytes += message_bytes(m) as u64;
        if m.role == Role::Assistant {
            rounds += 1;
            if bytes >= want && rounds >= WHOLE_ROUNDS {
                return k;
            }
        }
    }
    0
}

/// The bytes of a message's text, arguments and results.
fn message_bytes(m: &Message<'_>) -> usize {
    fn parts(ps: &[Part<'_>]) -> usize {
        ps.iter()
            .map(|p| match p {
                Part::Text(t) => t.len(),
                Part::ToolUse(c) => c.arguments.len() + c.name.len(),
                Part::ToolResult { content, .. } => parts(content),
                Part::Thinking { text, .. } => text.len(),
                _ => 0,
            })
            .sum()
    }
    let content = match &m.content {
        Content::Text(t) => t.len(),
        Content::Parts(ps) => parts(ps),
        Content::None => 0,
    };
    content
        + m.tool_calls
            .iter()
            .map(|c| c.arguments.len() + c.name.len())
            .sum::<usize>()
}

/// Bytes of message text from which the index scans on its own thread: a thread costs tens of
/// microseconds, scanning this much code and tool output about 0.2 ms (the real SWE
/// trajectories' folds, 56-166 KB at a third of their size, scanned on the walk's thread at
/// 256 KB: their compaction took 1.07x the time it takes now).
const SCAN_APART_BYTES: usize = 32 * 1024;

/// Whether a span is long enough for the index to scan on its own thread.
fn scan_apart(msgs: &[Message<'_>]) -> bool {
    let mut bytes = 0usize;
    for m in msgs {
        bytes += match &m.content {
            Content::Text(t) => t.len(),
            Content::Parts(ps) => ps.len() * 64,
            Content::None => 0,
        };
        if bytes >= SCAN_APART_BYTES {
            return true;
        }
    }
    false
}

/// The messages of a span two scans share: one takes them from the front, the other from the
/// back, a chunk at a time, until they meet.
struct Claims {
    ends: std::sync::Mutex<(usize, usize)>,
    chunk: usize,
}

impl Claims {
    /// Chunks of about 1/128 of the span: few locks, and the two scans end close together.
    fn new(n: usize) -> Self {
        Claims {
            ends: std::sync::Mutex::new((0, n)),
            chunk: (n / 128).max(1),
        }
    }

    fn take(&self, from_front: bool) -> Option<std::ops::Range<usize>> {
        let mut e = self.ends.lock().unwrap_or_else(|p| p.into_inner());
        let (a, b) = *e;
        if a >= b {
            return None;
        }
        Some(if from_front {
            e.0 = (a + self.chunk).min(b);
            a..e.0
        } else {
            e.1 = b.saturating_sub(self.chunk).max(a);
            e.1..b
        })
    }
}

/// The front scan: the chunks of `claims` from the first on, in order, into `index`.
fn scan_front(
    index: &mut Collector,
    msgs: &[Message<'_>],
    previous: Option<&str>,
    claims: &Claims,
) {
    let n = msgs.len().max(1) as f64;
    while let Some(r) = claims.take(true) {
        for k in r {
            if !crate::summary_marker::carries_previous(&msgs[k], previous) {
                identifier_index::scan_message(index, &msgs[k], (k + 1) as f64 / n);
            }
        }
    }
}

/// The back scan: the chunks `scan_front` has not taken, from the last back, into a collector
/// to merge after the front's (`Collector::merge`).
fn scan_back(msgs: &[Message<'_>], previous: Option<&str>, claims: &Claims) -> Collector {
    let mut c = Collector::out_of_order();
    c.make_room();
    let n = msgs.len().max(1) as f64;
    while let Some(r) = claims.take(false) {
        for k in r {
            if !crate::summary_marker::carries_previous(&msgs[k], previous) {
                identifier_index::scan_message_at(&mut c, k, &msgs[k], (k + 1) as f64 / n);
            }
        }
    }
    c
}

/// The span's identifiers scanned into `index` (which holds the previous digest's, carried),
/// in order.
fn scan_index(index: &mut Collector, msgs: &[Message<'_>], previous: Option<&str>) {
    let n = msgs.len().max(1) as f64;
    for (k, m) in msgs.iter().enumerate() {
        if !crate::summary_marker::carries_previous(m, previous) {
            identifier_index::scan_message(index, m, (k + 1) as f64 / n);
        }
    }
}

/// Per message of the span: a system or developer message whose words (its digits aside) a
/// later one of the span repeats.
fn superseded_instructions(msgs: &[Message<'_>]) -> Vec<bool> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut out = vec![false; msgs.len()];
    for (k, m) in msgs.iter().enumerate().rev() {
        if matches!(m.role, Role::System | Role::Developer) {
            let shape: String = text_of(m).chars().filter(|c| !c.is_ascii_digit()).collect();
            out[k] = !seen.insert(shape);
        }
    }
    out
}

/// The walk over the span: each message's units, in order.
fn walk<'a>(w: &mut Walk<'a>, previous: Option<&str>) {
    let superseded = superseded_instructions(w.msgs);
    for (k, m) in w.msgs.iter().enumerate() {
        if crate::summary_marker::carries_previous(m, previous) {
            continue;
        }
        match m.role {
            // An instruction the operator gave mid-history ("the customer upgraded; you may
            // now query billing") is kept as a request is, its role said: as rules alone, all
            // but its imperatives were lost. One a later instruction of the same words
            // supersedes (a reminder injected each turn: "step 3 of 40, 9 min elapsed") gives
            // its rules only: kept each time, forty reminders filled the requests.
            Role::System | Role::Developer if superseded[k] => {
                for r in rules_in(&text_of(m)) {
                    w.b.push(Section::Rules, vec![r]);
                }
            }
            Role::System | Role::Developer => {
                let text = text_of(m);
                if !text.trim().is_empty() {
                    let role = if m.role == Role::System {
                        "system"
                    } else {
                        "developer"
                    };
                    w.b.request(Cow::Owned(format!("[{role}] {}", text.trim())));
                }
            }
            Role::User | Role::Other if speaks(m) => w.user_turn(k, m),
            Role::Assistant if k < w.whole_from => w.counted_turn(k, m),
            Role::Assistant => w.assistant_turn(k, m),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;
    use crate::provider::Provider;
    use carried::pending_in;
    use request_edges::without_repeated_edges;
    use std::borrow::Cow;

    /// The block search finds the digit the byte-by-byte walk finds, from every place, with
    /// digits in and across blocks, at the ends, or none.
    #[test]
    fn the_next_digit_is_the_one_a_walk_finds() {
        let mut texts: Vec<String> = vec![String::new(), "7".into(), "x".repeat(100)];
        for at in [0, 1, 31, 32, 33, 63, 64, 95, 99] {
            let mut t = "é-x_".repeat(25).into_bytes();
            t[at] = b'5';
            texts.push(String::from_utf8_lossy(&t).into_owned());
        }
        for t in &texts {
            let b = t.as_bytes();
            for i in 0..=b.len() {
                let walked = (i..b.len())
                    .find(|&k| b[k].is_ascii_digit())
                    .unwrap_or(b.len());
                assert_eq!(next_digit(b, i), walked, "{t:?} from {i}");
            }
        }
    }

    fn est() -> Estimator {
        Estimator::new(Provider::OpenAI, "")
    }

    /// The count of requests a digest leaves out is the count its requests section misses,
    /// in a packing (a tight room) and in the floor (a room that holds no packing); thanks
    /// asked nothing (not counted), and a request a rule says whole is kept as that rule.
    #[test]
    fn a_digest_counts_the_requests_it_leaves_out() {
        let texts: Vec<String> = (0..40)
            .map(|k| {
                format!(
                    "Q{k:03} please port the parser module number {k} to the new tokenizer and keep its error messages."
                )
            })
            .collect();
        let mut msgs = Vec::new();
        for (k, t) in texts.iter().enumerate() {
            msgs.push(Message::text("user", t));
            msgs.push(Message::text("assistant", "Done."));
            if k == 5 {
                msgs.push(Message::text("user", "thanks!"));
                msgs.push(Message::text("user", "Never push to the main branch."));
            }
        }
        let listed = |text: &str| {
            let requests = text.split("## User requests\n").nth(1).unwrap_or("");
            (0..40)
                .filter(|k| requests.contains(&format!("- Q{k:03} ")))
                .count()
        };
        let mut seen = Vec::new();
        for room in [4_000u64, 600, 150, 60] {
            let opt = DigestOptions {
                max_tokens: room,
                ..Default::default()
            };
            let d = digest_indexed(&msgs, &est(), &opt, None);
            assert_eq!(
                d.requests, 41,
                "{room}: thanks aside; the rule.s request kept as the rule"
            );
            assert_eq!(
                d.requests_left_out,
                40 - listed(&d.text),
                "{room}: {}",
                d.text
            );
            seen.push(d.requests_left_out);
        }
        assert_eq!(seen[0], 0);
        assert!(seen[1] > 0 && seen[2] > seen[1], "{seen:?}");
    }

    /// A fold of a text agent's command and the user's words right after it, beside the
    /// previous digest alone: that digest's commands show their return codes, so the agent's
    /// observations carry one, and an uncoded turn the span ends on is the user speaking (it was
    /// read as the command's output, and the rule went when that call line was shortened).
    #[test]
    fn a_rule_after_a_command_is_the_users_where_the_previous_digest_shows_codes() {
        let prev = "Earlier conversation folded by contextfold (6 messages).\n## User requests\n- Fix it.\n\n\
                    ## Tool calls\n- $ ls -> ok: rc=0: setup.py";
        let msgs = vec![
            Message::text(
                "assistant",
                "THOUGHT: I'll read the tests.\n\n```bash\ncat tests/test_dates.py\n```",
            ),
            Message::text(
                "user",
                "Do not cancel reservation ZZ9Q7T under any circumstances.",
            ),
        ];
        let d = digest_after(&msgs, prev, 600);
        assert!(!d.contains("-> ok: Do not cancel"), "{d}");
        assert!(
            d.contains("\n- Do not cancel reservation ZZ9Q7T under any circumstances."),
            "{d}"
        );
        assert!(shows_return_codes(prev) && !shows_return_codes("- $ ls -> ok: setup.py"));
    }

    /// A text agent in a format that alternates turns (Anthropic, Bedrock, Gemini): the user's
    /// words typed beside the harness's answer go into that answer's user turn, as a text block
    /// before or after it. They were read as part of the output and lost at the first fold.
    #[test]
    fn a_persons_words_beside_an_observation_in_one_turn_are_a_request() {
        let command = |c: &str| format!("THOUGHT: run it.\n\n```bash\n{c}\n```");
        let turn = |blocks: &[&str]| {
            let mut m = Message::text("user", "");
            m.content = Content::Parts(
                blocks
                    .iter()
                    .map(|b| Part::Text(Cow::Owned(b.to_string())))
                    .collect(),
            );
            m
        };
        let coded = "<returncode>0</returncode>\n<output>\nsetup.py\n</output>";
        let complaint =
            "Please always provide EXACTLY ONE action in triple backticks, found 2 actions.";
        let rule = "Never charge my Visa card ending in 4417.";
        let (c1, c2, c3) = (
            command("ls"),
            command("cat a.py\n```\n\n```bash\ncat b.py"),
            command("pwd"),
        );
        let msgs = vec![
            Message::text("user", "Fix the parser."),
            Message::text("assistant", &c1),
            turn(&[coded, rule]),
            Message::text("assistant", &c2),
            turn(&[complaint, "Always ask me before you run git push."]),
            Message::text("assistant", &c3),
            turn(&["Do not cancel reservation ZZ9Q7T.", coded]),
            Message::text("assistant", "THOUGHT: done."),
        ];
        let d = digest_within(&msgs, 2_000);
        for words in [
            rule,
            "Always ask me before you run git push.",
            "Do not cancel reservation ZZ9Q7T.",
        ] {
            assert!(d.contains(&format!("\n- {words}")), "{words}: {d}");
        }
        // The commands still have their outcomes, and the complaint is no request.
        assert!(d.contains("$ ls -> ok"), "{d}");
        assert!(!d.contains("- Please always provide"), "{d}");
        let all: Vec<usize> = (0..msgs.len()).collect();
        let rules = fold_rules(&msgs, &all, None);
        for words in [
            rule,
            "Always ask me before you run git push.",
            "Do not cancel reservation ZZ9Q7T.",
        ] {
            assert!(rules.iter().any(|r| r == words), "{words}: {rules:?}");
        }
    }

    /// A previous digest whose fold ended on a command: its open item says so.
    const PENDING_PREVIOUS: &str = "Earlier conversation folded by contextfold (6 messages).\n\
                                    ## User requests\n- Fix it.\n\n\
                                    ## Tool calls\n- $ ls -> ok: rc=0: setup.py\n\n\
                                    ## Open items\n- ran `$ python reproduce.py`; its output is in the messages kept after this summary";

    /// A fold that ended on a command leaves it an open item (its output was kept after the
    /// summary); a later fold of that output alone, beside the summary (no store to read the
    /// turns behind it), shows the command with its outcome, where it wrote
    /// `$ (command not in this span) -> error: ...` and kept the open item besides.
    #[test]
    fn a_carried_pending_command_is_the_command_of_the_output_that_follows() {
        let prev = PENDING_PREVIOUS;
        let msgs = vec![
            Message::text(
                "user",
                "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n  File \"reproduce.py\", line 3, in <module>\n    run()\nValueError: no such table: app_book\n</output>",
            ),
            Message::text(
                "assistant",
                "THOUGHT: The table is missing.\n\n```bash\nls app\n```",
            ),
        ];
        let d = digest_after(&msgs, prev, 600);
        assert!(
            d.contains("- $ python reproduce.py -> error: rc=1: "),
            "{d}"
        );
        assert!(d.contains("ValueError: no such table: app_book"), "{d}");
        assert!(!d.contains("command not in this span"), "{d}");
        assert!(
            !d.contains("earlier open item: ran `$ python reproduce.py`"),
            "{d}"
        );
        // A fold that opens on the agent's turn instead holds no output of it: the agent spoke
        // again, so none follows the summary either (it said so as an open item).
        let d = digest_after(&msgs[1..], prev, 600);
        assert!(
            d.contains(&format!("- $ python reproduce.py -> {UNANSWERED}")),
            "{d}"
        );
        assert!(!d.contains("earlier open item"), "{d}");
        assert_eq!(
            pending_in("ran `$ ls -la`; its output is in the messages kept after this summary"),
            Some("ls -la")
        );
        assert_eq!(pending_in("ran the tests again"), None);
    }

    /// The carried command waits for its own output, which a harness that prints return codes
    /// always opens with one: a person's words opening the fold (a rule planted right after the
    /// summary, answered by the agent) stay a request, not the command's output. The agent then
    /// spoke again, so the command is a call without output, not an open item whose output
    /// would be in the messages after the summary.
    #[test]
    fn a_persons_words_after_the_summary_are_no_output_of_the_carried_command() {
        let prev = PENDING_PREVIOUS;
        let wrapped = format!(
            "{}\n{prev}\n{}",
            crate::summary_marker::SUMMARY_OPEN,
            crate::summary_marker::SUMMARY_CLOSE
        );
        let host = Message::text("assistant", &wrapped);
        let msgs = vec![
            Message::text("user", "Do not modify the tests under any circumstances."),
            Message::text("assistant", "THOUGHT: Understood.\n\n```bash\nls app\n```"),
            Message::text(
                "user",
                "<returncode>0</returncode>\n<output>\nmodels.py\n</output>",
            ),
        ];
        for span in [msgs.clone(), [vec![host], msgs].concat()] {
            let d = digest_after(&span, prev, 600);
            assert!(
                d.contains("- Do not modify the tests under any circumstances."),
                "{d}"
            );
            assert!(!d.contains("reproduce.py -> ok: Do not"), "{d}");
            assert!(!d.contains("earlier open item"), "{d}");
            assert!(
                d.contains(&format!("- $ python reproduce.py -> {UNANSWERED}")),
                "{d}"
            );
        }
    }

    /// A previous digest's last state is carried as long as the new room holds it: a room
    /// that holds it whole keeps it whole, one that does not keeps what it can (cut to 400
    /// characters at once, a 12,001-character state left a second digest 2,300 tokens short of
    /// its room).
    #[test]
    fn a_carried_last_state_keeps_what_the_room_holds() {
        let state: String = (0..120)
            .map(|k| format!("step {k} checked module_{k}.py and found value_{k}. "))
            .collect();
        let prev = format!(
            "Earlier conversation folded by contextfold (9 messages).\n## User requests\n- Fix it.\n\n## Last state\n{state}"
        );
        let msgs = vec![Message::text("user", "Go on.")];
        let at = |max_tokens| digest_after(&msgs, &prev, max_tokens);
        let roomy = at(4_000);
        assert!(roomy.contains("module_119.py"), "{roomy}");
        assert!(roomy.contains("module_0.py"), "{roomy}");
        let tight = at(900);
        let kept = tight
            .lines()
            .find(|l| l.contains("earlier state:"))
            .map_or(0, |l| l.chars().count());
        assert!(kept > 1_000 && kept < state.len(), "{kept}\n{tight}");
    }

    /// An instruction given mid-history is kept whole with its role; one repeated each turn
    /// with other numbers (a reminder) only as its newest, its rules kept all the same.
    #[test]
    fn an_instruction_given_mid_history_is_kept_and_a_repeated_one_only_as_its_newest() {
        let fact = "The customer upgraded to the enterprise plan; you may now query billing.";
        let reminders: Vec<String> = (0..6)
            .map(|k| {
                format!(
                    "Reminder: step {k} of 6, {} min elapsed. Never push to main.",
                    3 * k
                )
            })
            .collect();
        let mut msgs = vec![Message::text("user", "Audit account ACME-4471.")];
        msgs.push(Message::text("developer", fact));
        for r in &reminders {
            msgs.push(Message::text("assistant", "Checking the next page."));
            msgs.push(Message::text("system", r));
        }
        let d = digest_within(&msgs, 2_000);
        assert!(d.contains(&format!("- [developer] {fact}")), "{d}");
        assert!(
            d.contains("- [system] Reminder: step 5 of 6, 15 min elapsed."),
            "{d}"
        );
        assert!(!d.contains("step 4 of 6"), "{d}");
        assert!(d.contains("Never push to main."), "{d}");
    }

    /// A text agent's turn that an earlier compaction cut to its marker (a degraded fold keeps
    /// 16 tokens of it: neither its thought nor its fenced command) is answered by an
    /// observation whose command was in the span: said as cut, where it read "not in this span".
    #[test]
    fn an_observation_after_a_turn_cut_to_its_marker_says_its_command_was_cut() {
        let msgs = vec![
            Message::text(
                "user",
                "<pr_description>Fix the year format.</pr_description>",
            ),
            Message::text(
                "assistant",
                "THOUGHT: Run the tests.\n\n```bash\npython -m pytest\n```",
            ),
            Message::text(
                "user",
                "<returncode>0</returncode>\n<output>\n5 passed\n</output>",
            ),
            Message::text("assistant", "[~253 tokens cut]"),
            Message::text("user", "<returncode>1</returncode>\n<output>\n</output>"),
            Message::text("assistant", "THOUGHT: Look again.\n\n```bash\nls\n```"),
        ];
        let d = digest_within(&msgs, 600);
        assert!(
            d.contains(&format!("- $ {CUT_COMMAND} -> error: rc=1")),
            "{d}"
        );
        assert!(!d.contains("command not in this span"), "{d}");
        assert!(d.contains("- $ python -m pytest -> ok: rc=0"), "{d}");
        // A turn that was never there is still said to be outside the span.
        let d = digest_within(&msgs[4..], 600);
        assert!(d.contains("(command not in this span)"), "{d}");
    }

    /// The digest of `msgs` in `max_tokens`, merging the `previous` digest (no focus or
    /// instructions).
    fn digest_after(msgs: &[Message<'_>], previous: &str, max_tokens: u64) -> String {
        digest(
            msgs,
            &est(),
            &DigestOptions {
                max_tokens,
                previous: Some(previous),
                ..Default::default()
            },
        )
    }

    /// The digest of `msgs` in `max_tokens`, with no previous summary, focus or instructions.
    fn digest_within(msgs: &[Message<'_>], max_tokens: u64) -> String {
        digest(
            msgs,
            &est(),
            &DigestOptions {
                max_tokens,
                ..Default::default()
            },
        )
    }

    /// A result the provider marked as failed (Anthropic `is_error`, Bedrock `status: "error"`)
    /// is an error whatever its words; unmarked, the same words are no verdict.
    #[test]
    fn a_result_marked_as_an_error_is_an_error() {
        let history = |marked: bool| {
            let mut a = Message::empty("assistant");
            a.content = Content::Parts(vec![Part::ToolUse(ToolCall {
                id: "toolu_1",
                name: "Edit",
                arguments: Cow::Borrowed(
                    r#"{"file_path":"src/app.py","old_string":"a","new_string":"b"}"#,
                ),
            })]);
            let mut r = Message::empty("user");
            r.content = Content::Parts(vec![Part::ToolResult {
                tool_use_id: "toolu_1",
                content: vec![Part::Text(Cow::Borrowed(
                    "File has been modified since read, by the user or a linter.",
                ))],
                is_error: marked,
                name: None,
            }]);
            for m in [&mut a, &mut r] {
                m.wire = crate::wire::Format::Anthropic;
            }
            vec![Message::text("user", "Rename a to b in src/app.py."), a, r]
        };
        let errors = |d: &str| section_of(d, "## Errors").to_string();
        let marked = digest_within(&history(true), 600);
        assert!(errors(&marked).contains("modified since read"), "{marked}");
        assert!(
            marked.contains("1 errors") || marked.contains("1 error"),
            "{marked}"
        );
        let unmarked = digest_within(&history(false), 600);
        assert!(
            !errors(&unmarked).contains("modified since read"),
            "{unmarked}"
        );
        assert!(unmarked.contains("modified since read"), "{unmarked}");
    }

    /// A call to a shell tool is shown as the command it ran (`$ cmd -> outcome`), whatever the
    /// tool is called and whether the command is a string or an argv; a call with arguments of
    /// its own beside `command` (an editor's `path`) stays a call.
    #[test]
    fn a_shell_tools_call_reads_as_its_command() {
        let calls = [
            (
                "c1",
                "bash",
                r#"{"command":"sed -n '1,40p' src/app.py"}"#,
                "def app():",
            ),
            (
                "c2",
                "Bash",
                r#"{"command":"pytest -q tests/test_app.py","description":"Run the tests","timeout":120000}"#,
                "1 failed, 3 passed in 0.40s",
            ),
            (
                "c3",
                "shell",
                r#"{"command":["bash","-lc","git diff --stat"],"workdir":"/repo"}"#,
                " src/app.py | 2 +-",
            ),
            (
                "c4",
                "str_replace_editor",
                r#"{"command":"view","path":"/repo/src/app.py"}"#,
                "1 def app():",
            ),
        ];
        let mut msgs = vec![Message::text("user", "Fix the failing test in src/app.py.")];
        for (id, name, args, out) in calls {
            msgs.extend(tool_round(id, name, args, out));
        }
        let d = digest_within(&msgs, 2_000);
        for line in [
            "- $ sed -n '1,40p' src/app.py -> ok: def app():",
            "- $ pytest -q tests/test_app.py -> ",
            "- $ git diff --stat -> ok:",
            "- str_replace_editor(command=",
        ] {
            assert!(d.contains(line), "{line:?} not in\n{d}");
        }
    }

    /// A call of a tool that only reads a file goes before the other calls when the room is
    /// short, as a `cat` does: the file can be read again, a test run's output cannot.
    #[test]
    fn a_read_tools_call_goes_first_when_the_room_is_short() {
        let rounds: Vec<[String; 6]> = (0..6)
            .map(|k| {
                let listing: String = (1..40)
                    .map(|n| format!("{n:>6}\u{2192}line {n} of module {k}\n"))
                    .collect();
                [
                    format!("r{k}"),
                    format!(r#"{{"file_path":"src/parser_{k}.py","offset":1,"limit":40}}"#),
                    listing,
                    format!("t{k}"),
                    format!(r#"{{"command":"pytest -q tests/test_parser_{k}.py"}}"#),
                    format!("3{k} passed in 0.4{k}s"),
                ]
            })
            .collect();
        let mut msgs = vec![Message::text("user", "Make the parser tests pass.")];
        for [rid, rargs, rout, tid, targs, tout] in &rounds {
            msgs.extend(tool_round(rid, "Read", rargs, rout));
            msgs.extend(tool_round(tid, "Bash", targs, tout));
        }
        // Rooms that hold every run and some reads keep the runs (a read packed as any call
        // left 4 runs and 3 reads in each); the room that holds all keeps all. (250-350 tokens
        // before the digest priced its text whole, as the history prices a summary; 300-380
        // before a text of up to 1 KiB was read whole.)
        for room in [310, 350, 400] {
            let d = digest_within(&msgs, room);
            let calls = section_of(&d, "## Tool calls");
            let runs = calls.lines().filter(|l| l.contains("$ pytest")).count();
            let reads = calls.lines().filter(|l| l.contains("Read(")).count();
            assert!(
                runs == 6 && reads < 6,
                "room {room}: {runs} runs, {reads} reads\n{d}"
            );
        }
        let d = digest_within(&msgs, 600);
        assert_eq!(d.matches("Read(").count(), 6, "{d}");
    }

    /// A shell tool's output with no exit code is read as its command's run: a `cat` of a
    /// module that catches `Exception` printed the module's words and is a call, not an error;
    /// the same `cat` of a file that is not there says so on its own line and is an error.
    #[test]
    fn a_printed_file_is_no_failure_of_its_command() {
        let module = "import os\n\ndef load(path):\n    try:\n        return open(path).read()\n    except Exception as error:\n        raise ValueError(f\"cannot read {path}\") from error\n";
        let mut msgs = vec![Message::text(
            "user",
            "Why does load() fail on missing files?",
        )];
        msgs.extend(tool_round(
            "c1",
            "terminal",
            r#"{"command":"cat src/loader.py"}"#,
            module,
        ));
        msgs.extend(tool_round(
            "c2",
            "terminal",
            r#"{"command":"cd /repo && cat src/missing.py"}"#,
            "cat: src/missing.py: No such file or directory",
        ));
        msgs.extend(tool_round(
            "c3",
            "terminal",
            r#"{"command":"python -c 'import loader'"}"#,
            "Traceback (most recent call last):\nValueError: cannot read x",
        ));
        // A read tool's file is the file's words too (returned unnumbered, as Gemini CLI's
        // `read_file` returns it); a short message is the tool's own.
        msgs.extend(tool_round(
            "c4",
            "read_file",
            r#"{"absolute_path":"/repo/src/loader.py"}"#,
            module,
        ));
        msgs.extend(tool_round(
            "c5",
            "read_file",
            r#"{"absolute_path":"/repo/src/gone.py"}"#,
            "Error: File not found: /repo/src/gone.py",
        ));
        let d = digest_within(&msgs, 2_000);
        let errors = section_of(&d, "## Errors");
        let calls = section_of(&d, "## Tool calls");
        assert!(
            calls.contains("read_file(absolute_path=/repo/src/loader.py) -> ok:"),
            "{d}"
        );
        assert!(
            errors.contains("read_file(absolute_path=/repo/src/gone.py) -> error:"),
            "{d}"
        );
        assert!(calls.contains("$ cat src/loader.py -> ok:"), "{d}");
        assert!(!errors.contains("src/loader.py"), "{d}");
        assert!(
            errors.contains("$ cd /repo && cat src/missing.py -> error:"),
            "{d}"
        );
        // Not a command that only prints files: its words are read.
        assert!(errors.contains("python -c"), "{d}");
        assert!(d.contains("3 errors"), "{d}");
    }

    /// A search that matched nothing (grep's exit status 1, no diagnostic) is a call, not an
    /// error; a grep that failed (a diagnostic, or status 2) and a script that exited 1 stay
    /// errors. Both as a tool's calls and as a harness's text turns.
    #[test]
    fn a_search_that_found_nothing_is_no_error() {
        let mut msgs = vec![Message::text("user", "Where is parse_duration used?")];
        msgs.extend(tool_round(
            "c1",
            "terminal",
            r#"{"command":"grep -rn parse_duration django/db/backends/sqlite3/"}"#,
            r#"{"output": "", "exit_code": 1, "error": null}"#,
        ));
        msgs.extend(tool_round(
            "c2",
            "terminal",
            r#"{"command":"grep -n x src/gone.py"}"#,
            r#"{"output": "grep: src/gone.py: No such file or directory", "exit_code": 2, "error": null}"#,
        ));
        msgs.extend(tool_round(
            "c3",
            "terminal",
            r#"{"command":"diff -u a.py b.py"}"#,
            r#"{"output": "--- a.py\n+++ b.py\n@@ -1 +1 @@\n-x = 1\n+x = 2", "exit_code": 1, "error": null}"#,
        ));
        msgs.extend(tool_round(
            "c4",
            "terminal",
            r#"{"command":"python check.py"}"#,
            r#"{"output": "", "exit_code": 1, "error": null}"#,
        ));
        let d = digest_within(&msgs, 2_000);
        let errors = section_of(&d, "## Errors");
        let calls = section_of(&d, "## Tool calls");
        assert!(
            calls.contains("$ grep -rn parse_duration django/db/backends/sqlite3/ -> ok: rc=1"),
            "{d}"
        );
        assert!(calls.contains("$ diff -u a.py b.py -> ok: rc=1"), "{d}");
        assert!(errors.contains("$ grep -n x src/gone.py -> error:"), "{d}");
        assert!(errors.contains("$ python check.py -> error: rc=1"), "{d}");
        assert!(d.contains("2 errors"), "{d}");
        // A harness that runs the commands of the agent's text (mini-swe-agent).
        let turn = |cmd: &str| format!("THOUGHT: Next.\n\n```bash\n{cmd}\n```");
        let observed =
            |rc: u8, out: &str| format!("<returncode>{rc}</returncode>\n<output>\n{out}</output>");
        let texts = [
            ("user", "Fix the duration bug.".to_string()),
            (
                "assistant",
                turn("grep -n \"test_duration\" tests/expressions/tests.py"),
            ),
            ("user", observed(1, "")),
            ("assistant", turn("cat tests/gone.py | grep x")),
            (
                "user",
                observed(1, "cat: tests/gone.py: No such file or directory\n"),
            ),
            ("assistant", turn("ls tests")),
            ("user", observed(0, "expressions\n")),
        ];
        let msgs: Vec<Message> = texts.iter().map(|(r, t)| Message::text(r, t)).collect();
        let d = digest_within(&msgs, 2_000);
        let errors = section_of(&d, "## Errors");
        assert!(
            section_of(&d, "## Tool calls")
                .contains("$ grep -n \"test_duration\" tests/expressions/tests.py -> ok: rc=1"),
            "{d}"
        );
        assert!(
            errors.contains("$ cat tests/gone.py | grep x -> error: rc=1"),
            "{d}"
        );
        assert!(!errors.contains("test_duration"), "{d}");
    }

    /// A call that changed something (an edit, a booking) outlives the drops that keep only the
    /// newest calls: older runs of scripts go first, and the edit made among them stays.
    #[test]
    fn an_edit_outlives_the_drops_that_keep_the_newest_calls() {
        let mut msgs = vec![Message::text(
            "user",
            "Fix the duration parsing in operations.py.",
        )];
        let outputs: Vec<String> = (0..16)
            .map(|k| format!("check {k}: value={} parsed ok\n", 1000 + k).repeat(6))
            .collect();
        let commands: Vec<String> = (0..16)
            .map(|k| match k {
                3 => r#"{"command":"sed -i '12i from django.utils.dateparse import parse_duration' operations.py"}"#.to_string(),
                _ => format!(r#"{{"command":"python check_{k}.py"}}"#),
            })
            .collect();
        let ids: Vec<String> = (0..16).map(|k| format!("c{k}")).collect();
        for k in 0..16 {
            let out = if k == 3 { "" } else { outputs[k].as_str() };
            msgs.extend(tool_round(&ids[k], "bash", &commands[k], out));
        }
        for room in [260, 320, 400] {
            let d = digest_within(&msgs, room);
            let calls = section_of(&d, "## Tool calls");
            assert!(
                calls.contains(
                    "sed -i '12i from django.utils.dateparse import parse_duration' operations.py"
                ),
                "{room}: {d}"
            );
            // The runs as old as the edit are gone: the drop did run.
            assert!(
                !calls.contains("check_2.py") && !calls.contains("check_4.py"),
                "{room}: {d}"
            );
        }
    }

    /// A previous summary's line that a merge drops gives its identifiers to the index ahead
    /// of the new fold's: they are the previous summary's, as its own index's are.
    #[test]
    fn a_merged_summary_keeps_the_ids_of_a_line_it_drops() {
        let old_ids = ["OI5L9G", "Q0ZF0J", "KA7I60", "I57WUD"];
        let prev = format!(
            "Earlier conversation folded by contextfold (9 messages: 1 user requests, 1 tool calls, 0 errors).\n\
             ## User requests\n- Which of my reservations fly business?\n\n## Tool calls\n\
             - get_user_details(user_id=sofia_kim_7287) -> ok: reservations=[{}]\n",
            old_ids.join(", ")
        );
        let fresh: Vec<String> = (0..200).map(|k| format!("HAT{:03}", 100 + k)).collect();
        let asks: Vec<String> = fresh
            .chunks(2)
            .map(|p| format!("Please check flights {} and {} for me.", p[0], p[1]))
            .collect();
        let mut msgs = Vec::new();
        for ask in &asks {
            msgs.push(Message::text("user", ask));
            msgs.push(Message::text("assistant", "Checking those flights now."));
        }
        let d = digest(
            &msgs,
            &est(),
            &DigestOptions {
                max_tokens: 260,
                previous: Some(&prev),
                ..Default::default()
            },
        );
        assert!(
            !d.contains("get_user_details"),
            "the room drops the line: {d}"
        );
        for id in old_ids {
            assert!(d.contains(id), "{id}: {d}");
        }
    }

    /// A request clipped in a small room leaves out the standing rule said in it (written
    /// whole in its own section) before it loses the clause the rule followed.
    #[test]
    fn a_clipped_request_gives_its_rule_s_room_to_its_own_clauses() {
        let ask = "No worries, I'll handle the cancellation on my own if needed. Moving on, I'm \
                   looking for the cheapest direct round-trip flight from New York (EWR or JFK) \
                   to a West Coast city. I'll depart on May 20 and return on May 25, and I prefer \
                   basic economy if it's cheaper. Can you book that for me?";
        let rule = "I'll depart on May 20 and return on May 25, and I prefer basic economy if it's cheaper.";
        let msgs = vec![
            Message::text("user", ask),
            Message::text("assistant", "Which West Coast city would you like?"),
        ];
        let mut clipped = 0;
        for room in (60..=160).step_by(5) {
            let d = digest_within(&msgs, room);
            let Some(line) = d.lines().find(|l| l.starts_with("- No worries")) else {
                continue;
            };
            if line.contains('…') || !line.contains("Can you book") {
                clipped += 1;
                assert!(d.contains(&format!("- {rule}")), "{room}: {d}");
                assert!(!line.contains("prefer basic economy"), "{room}: {d}");
                if line.len() > 150 {
                    assert!(
                        line.contains("(EWR or JFK) to a West Coast city"),
                        "{room}: {d}"
                    );
                }
            }
        }
        assert!(clipped > 0);
    }

    /// A think tool's call (`thought_call`) is its thought, clipped as a conclusion: the line
    /// keeps what the model concluded, not a call whose arguments are cut to a few dozen
    /// characters and whose result says nothing.
    #[test]
    fn a_think_call_shows_its_thought_not_an_empty_result() {
        let thought = "IFOYYZ is basic economy without insurance, booked more than 24 hours ago: \
                       it cannot be canceled. NQNU5R is business class and can be canceled at any time.";
        let args = serde_json::json!({ "thought": thought }).to_string();
        let mut a = Message::empty("assistant");
        a.tool_calls.push(ToolCall {
            id: "c1",
            name: "think",
            arguments: Cow::Owned(args),
        });
        let mut r = Message::empty("tool");
        r.tool_call_id = Some("c1");
        r.content = Content::Text(Cow::Borrowed(""));
        let msgs = vec![
            Message::text("user", "Please cancel IFOYYZ and NQNU5R: a change of plan."),
            a,
            r,
            Message::text(
                "assistant",
                "IFOYYZ cannot be canceled; shall I cancel NQNU5R?",
            ),
        ];
        let d = digest_within(&msgs, 400);
        assert!(d.contains(&format!("- think: {thought}")), "{d}");
        assert!(
            !d.contains("(empty)") && !d.contains("think(thought="),
            "{d}"
        );
        // In a small room the thought is clipped at its end, as a conclusion is, and stays a line.
        let mut clipped = 0;
        for room in 60..=110 {
            let d = digest_within(&msgs, room);
            if let Some(line) = d.lines().find(|l| l.starts_with("- think: ")) {
                assert!(
                    line.starts_with("- think: IFOYYZ is basic economy"),
                    "{room}: {d}"
                );
                clipped += usize::from(line.contains('…'));
            }
        }
        assert!(clipped > 0);
    }

    /// The index lists only identifiers the digest's lines do not show: at every room, no
    /// identifier of the index stands as a whole word above it, and every id of the fold is in
    /// the digest once the room holds its lines and index whole. (An airline digest's index
    /// spent a fifth of its 47 tokens on ids its request and call lines showed, and lost the
    /// profile's other reservation.)
    #[test]
    fn an_index_lists_no_identifier_its_lines_show() {
        let profile = r#"{"user_id": "aarav_garcia_1177", "payment_methods": {"certificate_7473723": {"amount": 150}, "gift_card_8887175": {"amount": 35}}, "reservations": ["M05KNL", "UHDAHF"]}"#;
        let mut a = Message::empty("assistant");
        a.tool_calls.push(ToolCall {
            id: "c1",
            name: "get_user_details",
            arguments: Cow::Borrowed(r#"{"user_id":"aarav_garcia_1177"}"#),
        });
        let mut r = Message::empty("tool");
        r.tool_call_id = Some("c1");
        r.content = Content::Text(Cow::Borrowed(profile));
        let msgs = vec![
            Message::text(
                "user",
                "My user ID is aarav_garcia_1177 and I want to change reservation M05KNL.",
            ),
            a,
            r,
            Message::text("assistant", "I found M05KNL and UHDAHF in your profile."),
        ];
        let ids = [
            "aarav_garcia_1177",
            "M05KNL",
            "UHDAHF",
            "certificate_7473723",
            "gift_card_8887175",
        ];
        let whole = |text: &str, id: &str| {
            text.match_indices(id).any(|(at, _)| {
                let before = text[..at].chars().next_back();
                let after = text[at + id.len()..].chars().next();
                ![before, after]
                    .iter()
                    .any(|c| c.is_some_and(|c| c.is_alphanumeric() || c == '_'))
            })
        };
        for room in (60..=400).step_by(20) {
            let d = digest_within(&msgs, room);
            let (lines, index) = match d.find(crate::identifier_index::INDEX_HEADING) {
                Some(at) => d.split_at(at),
                None => (d.as_str(), ""),
            };
            for id in ids {
                assert!(
                    !(whole(lines, id) && whole(index, id)),
                    "{room}: {id} written twice\n{d}"
                );
            }
            if room >= 300 {
                for id in ids {
                    assert!(whole(&d, id), "{room}: {id} lost\n{d}");
                }
            }
        }
    }

    /// A call id used again for a later call (37 of the 149 recorded tau-bench dialogues do):
    /// each call is shown with the result that answered it, not with the last result of its id.
    #[test]
    fn a_reused_call_id_shows_each_call_with_its_own_result() {
        let mut msgs = vec![Message::text(
            "user",
            "Change my flight, user aarav_garcia_1177.",
        )];
        for (name, args, out) in [
            (
                "get_user_details",
                "{\"user_id\":\"aarav_garcia_1177\"}",
                "{\"reservations\":[\"M05KNL\"]}",
            ),
            ("calculate", "{\"expression\":\"105 + 102\"}", "207.0"),
        ] {
            let mut a = Message::empty("assistant");
            a.tool_calls.push(ToolCall {
                id: "call_same",
                name,
                arguments: Cow::Borrowed(args),
            });
            msgs.push(a);
            let mut r = Message::empty("tool");
            r.tool_call_id = Some("call_same");
            r.content = Content::Text(Cow::Borrowed(out));
            msgs.push(r);
        }
        msgs.push(Message::text("assistant", "The difference is $207."));
        let d = digest_within(&msgs, 400);
        let line = |tool: &str| {
            d.lines()
                .find(|l| l.starts_with(&format!("- {tool}(")))
                .unwrap_or_else(|| panic!("no {tool} line\n{d}"))
                .to_string()
        };
        assert!(line("get_user_details").contains("M05KNL"), "{d}");
        assert!(!line("get_user_details").contains("207"), "{d}");
        assert!(line("calculate").contains("207.0"), "{d}");
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

    /// The requests section alone: the span's requests after the previous summary's (carried
    /// from its requests section, a model's other sections left out), nothing of the calls, no
    /// header and no index; a small room clips each request before any is dropped.
    #[test]
    fn the_requests_section_holds_the_previous_and_the_span_s_requests_alone() {
        let prev = "## Goal\nBook a trip.\n\n## User requests\n- Cancel all my future flights that are longer than 3 hours.";
        let mut msgs = history();
        msgs.push(Message::text(
            "user",
            "Then rebook me on the cheapest economy flight from JFK to SEA on May 20, and use the \
             travel certificate before any card; my card ending in 9912 is the backup.",
        ));
        let opt = |max_tokens| DigestOptions {
            max_tokens,
            previous: Some(prev),
            instructions: None,
        };
        let whole = requests_section(&msgs, &est(), &opt(2_000));
        assert!(
            whole.starts_with("## User requests\n- Cancel all my future flights"),
            "{whole}"
        );
        assert!(
            whole.contains("- Book a flight for user mia_li_3668 from JFK to SEA"),
            "{whole}"
        );
        assert!(
            whole.contains("my card ending in 9912 is the backup."),
            "{whole}"
        );
        for absent in [
            "get_user_details",
            "Book a trip",
            "TODO",
            "Identifier index",
            "folded by",
        ] {
            assert!(!whole.contains(absent), "{absent:?} in\n{whole}");
        }
        let small = requests_section(&msgs, &est(), &opt(60));
        assert!(est().summary_text(&small) <= 60.0, "{small}");
        assert_eq!(small.matches("\n- ").count(), 3, "{small}");
        assert!(small.contains('…'), "{small}");
        assert_eq!(
            requests_section(
                &msgs[1..3],
                &est(),
                &DigestOptions {
                    max_tokens: 500,
                    ..Default::default()
                }
            ),
            ""
        );
    }

    /// One walk packed at several rooms gives, room by room, what a walk for each room gives,
    /// with a previous summary's requests and a text agent's observations in the span (the
    /// walk for the requests alone reads no outcome; what it builds is the same).
    #[test]
    fn requests_sections_pack_each_room_as_a_walk_of_its_own() {
        let prev = "## User requests\n- Cancel all my future flights that are longer than 3 hours.";
        let texts: Vec<[String; 3]> = (0..12)
            .map(|k| {
                [
                    format!("Request {k}: rebook segment {k} on the cheapest economy fare and keep seat 1{k}A."),
                    format!("THOUGHT: check it.\n\n```bash\ncat notes_{k}.txt\n```"),
                    format!("<returncode>{}</returncode>\n<output>\nerror: no such file\n</output>", k % 2),
                ]
            })
            .collect();
        let mut msgs = history();
        for [request, thought, observation] in &texts {
            msgs.push(Message::text("user", request));
            msgs.push(Message::text("assistant", thought));
            msgs.push(Message::text("user", observation));
        }
        let rooms = [1u64 << 40, 40, 120, 400, 2_000];
        let one = requests_sections(&msgs, &est(), Some(prev), &rooms);
        assert_eq!(one.len(), rooms.len());
        for (room, text) in rooms.iter().zip(&one) {
            let alone = requests_section(
                &msgs,
                &est(),
                &DigestOptions {
                    max_tokens: *room,
                    previous: Some(prev),
                    instructions: None,
                },
            );
            assert_eq!(&alone, text, "room {room}");
        }
        assert!(
            one[0].contains("keep seat 111A.") && one[0].contains("Cancel all my future"),
            "{}",
            one[0]
        );
        assert!(one[1].len() < one[4].len(), "{:?}", one);
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

    /// A fold of two rules said as whole requests, a courtesy and a previous summary's two
    /// requests, digested into rooms from 40 tokens (under the header and the rules' own text)
    /// up: no room drops a rule; rooms too small for whole rules clip each one instead. Before,
    /// the last resort cut the packing's text at a line and kept "Okay, I'll try..." in place
    /// of both rules at 70 tokens.
    #[test]
    fn a_room_too_small_for_every_unit_keeps_every_standing_rule() {
        let prev = "Earlier conversation folded by contextfold (3 messages: 1 user requests, 0 tool calls, 0 errors).\n## User requests\n- I don't have the reservation ID with me, is it possible to look it up?\n- I don't remember the reservation ID, can we proceed with that information?";
        let carrier = format!("<contextfold:summary>\n{prev}\n</contextfold:summary>");
        let msgs = vec![
            Message::text("assistant", &carrier),
            Message::text(
                "user",
                "Okay, I'll try to find it and contact a human agent if needed. Thanks!",
            ),
            Message::text(
                "user",
                "Always ask me before you run git push or book anything.",
            ),
            Message::text(
                "user",
                "Do not cancel reservation ZZ9Q7T under any circumstances.",
            ),
        ];
        for budget in (40u64..=140).step_by(5) {
            let d = digest_after(&msgs, prev, budget);
            assert!(
                est().summary_text(&d) <= budget as f64,
                "{budget}: over\n{d}"
            );
            for rule in ["Always ask me befo", "Do not cancel rese"] {
                assert!(d.contains(rule), "{budget}: {rule:?} lost in\n{d}");
            }
            if budget >= 55 {
                assert!(d.contains("Do not cancel reservation ZZ9Q7T under any circumstances."));
            }
        }
        // The floor's price is what the plan holds the summary's room to.
        let idx: Vec<usize> = (0..msgs.len()).collect();
        let floor = rules_floor_tokens(&msgs, &idx, Some(prev), &est());
        assert!((25..=60).contains(&floor), "{floor}");
        let d = digest_after(&msgs, prev, floor);
        assert!(d.contains("Always ask me before you run git push or book anything."));
        assert!(d.contains("Do not cancel reservation ZZ9Q7T under any circumstances."));
        assert_eq!(rules_floor_tokens(&msgs[1..2], &[0], None, &est()), 0);
    }

    /// A summary merged at the start of the next assistant turn (a message of its own would
    /// have put two assistant turns side by side), folded again: the host's own thought and
    /// its call are read beside the previous summary, in the digest and the rules. Before, the
    /// carrier was skipped whole as the previous summary: the thought, the call to
    /// `apply_patch` and its error were in no later summary.
    #[test]
    fn a_turn_a_summary_was_merged_into_is_read_when_folded_again() {
        let prev = "Earlier conversation folded by contextfold (4 messages).\n## User requests\n- Fix the date parser";
        let carrier = format!(
            "<contextfold:summary>\n{prev}\n</contextfold:summary>\n\nThe bug is in parse_date: it drops the offset. Never edit the vendored tzdata."
        );
        let mut host = Message::text("assistant", &carrier);
        host.tool_calls.push(ToolCall {
            id: "c9",
            name: "apply_patch",
            arguments: Cow::Borrowed("{\"path\":\"src/dates/parse.py\"}"),
        });
        let mut r = Message::empty("tool");
        r.tool_call_id = Some("c9");
        r.content = Content::Text(Cow::Borrowed("Error: hunk 2 failed at line 88"));
        let mut user = Message::text("user", "Any luck?");
        for m in [&mut host, &mut r, &mut user] {
            m.wire = crate::wire::Format::OpenAIChat;
        }
        let msgs = vec![host, r, user];
        let d = digest_after(&msgs, prev, 600);
        for said in [
            "Fix the date parser",
            "parse_date",
            "apply_patch",
            "src/dates/parse.py",
            "hunk 2 failed",
        ] {
            assert!(d.contains(said), "{said:?} lost in\n{d}");
        }
        assert_eq!(d.matches("## User requests").count(), 1, "{d}");
        // The index a model's summary gets reads the host too.
        let idents = crate::identifier_index::collect(&msgs, Some(prev));
        assert!(
            idents.iter().any(|i| i.text == "src/dates/parse.py"),
            "{idents:?}"
        );
        // A carrier holding nothing but the summary is the previous summary alone.
        let alone = format!("<contextfold:summary>\n{prev}\n</contextfold:summary>");
        assert!(
            crate::summary_marker::without_summary(&Message::text("assistant", &alone)).is_none()
        );
        // A rule the host's text states is one of the fold's.
        let idx: Vec<usize> = (0..msgs.len()).collect();
        let mut as_user = msgs.clone();
        as_user[0].role = Role::User;
        assert!(fold_rules(&as_user, &idx, Some(prev))
            .iter()
            .any(|r| r.contains("Never edit the vendored tzdata")));
    }

    /// Three rules in rooms from 8 tokens to what they take whole: each room keeps as many
    /// rules verbatim as fit beside each other (the shortest first), never fewer in a larger
    /// room, and never the header in place of a rule. Before, a room under the rules whole
    /// clipped every rule to the same step ("Do not cancel rese…rcumstances.": none verbatim),
    /// and one under that kept a cut header ("Earlier conversation folded by contextfold (2 me").
    #[test]
    fn a_room_too_small_for_every_rule_keeps_the_most_rules_verbatim() {
        let rules = [
            "Do not cancel reservation ZZ9Q7T under any circumstances.",
            "Never charge my Visa card ending in 4417.",
            "Always ask me before you run git push or book anything.",
        ];
        let msgs: Vec<Message<'_>> = rules.iter().map(|r| Message::text("user", r)).collect();
        let verbatim = |d: &str| rules.iter().filter(|r| d.contains(*r)).count();
        // The most rules a room holds whole: the shortest ones, in their order, as the floor
        // writes them.
        let shortest = |k: usize| {
            let mut by_len: Vec<usize> = (0..rules.len()).collect();
            by_len.sort_by_key(|&i| rules[i].len());
            by_len.truncate(k);
            by_len.sort_unstable();
            by_len.iter().map(|&i| rules[i]).collect::<Vec<_>>()
        };
        let most = |budget: u64| {
            (0..=3)
                .rev()
                .find(|&k| est().summary_text(&pack::rules_text("", &shortest(k))) <= budget as f64)
                .unwrap_or(0)
        };
        let mut last = 0;
        for budget in 8u64..=60 {
            let d = digest_within(&msgs, budget);
            assert!(
                est().summary_text(&d) <= budget as f64,
                "{budget}: over\n{d}"
            );
            let n = verbatim(&d);
            assert!(
                n >= most(budget),
                "{budget}: {n} rules whole where {} fit\n{d}",
                most(budget)
            );
            assert!(
                n >= last,
                "{budget}: fewer rules whole than a smaller room kept\n{d}"
            );
            assert!(
                d.is_empty() || d.contains("## Standing rules"),
                "{budget}: no rule\n{d}"
            );
            last = n;
        }
        assert_eq!(last, 3);
    }

    /// A fold of one call whose result is far longer than the room: its forms step from 6,000
    /// characters (over the room) to 2,400 (half of a 900-token room unused: 438 tokens). The
    /// call's result is sized to what the room leaves instead, its head and end kept (the
    /// sampled estimate of a clip is not monotone in its length: 864, 965 and 1,255 tokens of
    /// rooms of 900, 1,100 and 1,300).
    #[test]
    fn a_long_result_is_sized_to_the_room_its_forms_leave() {
        let listing: String = (0..900)
            .map(|k| format!("tests/test_app.py::test_case_{k} PASSED\n"))
            .collect();
        let mut a = Message::empty("assistant");
        a.tool_calls.push(ToolCall {
            id: "c1",
            name: "bash",
            arguments: Cow::Borrowed("{\"cmd\":\"pytest -v\"}"),
        });
        let mut r = Message::empty("tool");
        r.tool_call_id = Some("c1");
        r.content = Content::Text(Cow::Borrowed(&listing));
        let msgs = vec![Message::text("user", "Run the tests."), a, r];
        for budget in [900u64, 1_100, 1_300] {
            let d = digest(
                &msgs,
                &est(),
                &DigestOptions {
                    max_tokens: budget,
                    ..Default::default()
                },
            );
            let used = est().summary_text(&d);
            assert!(
                used <= budget as f64 && used >= 0.85 * budget as f64,
                "{budget}: {used}\n{d}"
            );
            assert!(d.contains("test_case_0 PASSED") && d.contains("test_case_899 PASSED"));
        }
    }

    /// A fold of one long thought and no call: the thought is sized to the room its other
    /// forms leave, its head and end kept, instead of standing at 900 characters (a SWE run's
    /// fold of one 5,000-character turn left 887 tokens of a 2,072-token room unused).
    #[test]
    fn a_long_last_thought_is_sized_to_the_room_when_no_result_is() {
        let thought: String = (0..120)
            .map(|k| format!("Step {k}: the loader skips module_{k} when its path is not a list. "))
            .collect();
        let msgs = vec![
            Message::text("user", "Fix the migration loader."),
            Message::text("assistant", &thought),
        ];
        for budget in [700u64, 1_000, 1_400] {
            let d = digest_within(&msgs, budget);
            let used = est().summary_text(&d);
            assert!(
                used <= budget as f64 && used >= 0.85 * budget as f64,
                "{budget}: {used}\n{d}"
            );
            assert!(d.contains("Step 0:") && d.contains("module_119"), "{d}");
        }
    }

    /// A JSON result leaves out the string pairs an earlier call of the span was made with:
    /// seven reservations of one profile each repeating `user_id=...` (the argument of the
    /// profile's call) showed the id and no route where the room clipped them.
    #[test]
    fn a_json_result_does_not_repeat_an_earlier_calls_argument() {
        let call = |id: &'static str, name: &'static str, args: String| {
            let mut a = Message::empty("assistant");
            a.tool_calls.push(ToolCall {
                id,
                name,
                arguments: Cow::Owned(args),
            });
            a
        };
        let result = |id: &'static str, text: String| {
            let mut r = Message::empty("tool");
            r.tool_call_id = Some(id);
            r.content = Content::Text(Cow::Owned(text));
            r
        };
        let user = "amelia_davis_8890";
        let mut msgs = vec![
            Message::text("user", "Please cancel my one-passenger trips."),
            call(
                "p",
                "get_user_details",
                format!("{{\"user_id\":\"{user}\"}}"),
            ),
            result(
                "p",
                r#"{"name": "Amelia", "reservations": ["R1", "R2", "R3"]}"#.to_string(),
            ),
        ];
        let ids = ["c1", "c2", "c3"];
        for (k, (id, dest)) in ids.iter().zip(["DEN", "LAS", "MCO"]).enumerate() {
            msgs.push(call(
                id,
                "get_reservation_details",
                format!("{{\"reservation_id\":\"R{}\"}}", k + 1),
            ));
            msgs.push(result(id, format!(
                "{{\"reservation_id\": \"R{}\", \"user_id\": \"{user}\", \"origin\": \"BOS\", \"destination\": \"{dest}\", \"insurance\": \"no\"}}",
                k + 1
            )));
        }
        let d = digest_within(&msgs, 400);
        for dest in ["DEN", "LAS", "MCO"] {
            assert!(d.contains(&format!("destination={dest}")), "{dest} in\n{d}");
        }
        let results = d
            .lines()
            .filter(|l| l.starts_with("- get_reservation_details"));
        assert_eq!(
            results.filter(|l| !l.contains("user_id=")).count(),
            3,
            "{d}"
        );
        // The call that was made with it still shows it.
        assert!(
            d.contains(&format!("get_user_details(user_id={user})")),
            "{d}"
        );
    }

    /// A JSON result is digested in its compact form (`json_compact`): a reservation's eight
    /// flights, whose printed form a 260-token room clips, all keep
    /// their prices.
    #[test]
    fn a_json_result_keeps_every_value_where_its_printed_form_was_clipped() {
        let flights: Vec<String> = (0..8)
            .map(|k| {
                format!(
                    "{{\"origin\": \"BOS\", \"destination\": \"SEA\", \"flight_number\": \"HAT00{k}\", \"date\": \"2024-05-1{k}\", \"price\": {}}}",
                    311 + 7 * k
                )
            })
            .collect();
        let result = format!(
            "{{\"reservation_id\": \"4OG6T3\", \"flights\": [{}]}}",
            flights.join(", ")
        );
        let mut a = Message::empty("assistant");
        a.tool_calls.push(ToolCall {
            id: "c1",
            name: "get_reservation_details",
            arguments: Cow::Borrowed("{\"reservation_id\":\"4OG6T3\"}"),
        });
        let mut r = Message::empty("tool");
        r.tool_call_id = Some("c1");
        r.content = Content::Text(Cow::Borrowed(&result));
        let msgs = vec![
            Message::text("user", "What does my reservation hold?"),
            a,
            r,
        ];
        let d = digest_within(&msgs, 320);
        assert!(
            d.contains("flights=[origin|destination|flight_number|date|price; BOS|SEA|HAT000"),
            "{d}"
        );
        for k in 0..8 {
            assert!(
                d.contains(&format!("|{}", 311 + 7 * k)),
                "price {k} in\n{d}"
            );
        }
    }

    /// The commands that print a file's lines go before the other calls are cut to the newest
    /// eight: what a reproduction script printed survives ten file dumps after it.
    #[test]
    fn a_file_printed_goes_before_what_a_run_printed() {
        let mut msgs = vec![
            Message::text("user", "Fix the lookup cache bug."),
            Message::text("assistant", "THOUGHT: reproduce.\n\n```bash\npython reproduce_issue.py\n```"),
            Message::text(
                "user",
                "<returncode>0</returncode>\n<output>\nLookups after unregister: True\nCache size after unregister: 3\n</output>",
            ),
        ];
        let dump: String = (0..60)
            .map(|k| format!("{k}: line of the module {k}\n"))
            .collect();
        let dumps: Vec<String> = (0..10)
            .map(|k| format!("<returncode>0</returncode>\n<output>\n{dump}</output> {k}"))
            .collect();
        let cmds: Vec<String> = (0..10)
            .map(|k| {
                let c = if k % 2 == 0 { "cat" } else { "sed -n '1,60p'" };
                format!("THOUGHT: look.\n\n```bash\n{c} django/db/models/query_utils_{k}.py\n```")
            })
            .collect();
        for k in 0..10 {
            msgs.push(Message::text("assistant", &cmds[k]));
            msgs.push(Message::text("user", &dumps[k]));
        }
        // (From 300: at 280 a run's output kept at 72 characters leaves the newest dump out.)
        for room in [300, 340, 380] {
            let d = digest_within(&msgs, room);
            assert!(
                d.contains("$ python reproduce_issue.py -> ok"),
                "{room}: {d}"
            );
            assert!(d.contains("Cache size after unregister: 3"), "{room}: {d}");
            assert!(
                d.contains("$ sed -n '1,60p' django/db/models/query_utils_9.py"),
                "{room}: the newest dump stays:\n{d}"
            );
            assert!(
                !d.contains("$ cat django/db/models/query_utils_0.py"),
                "{room}: the oldest dump goes:\n{d}"
            );
        }
    }

    /// A search prints where things are (`path:line:text`), in fewer characters than the
    /// output of a run: in a room that takes every call to its shortest form, an old `grep -n`
    /// keeps its four matches where the same lines printed by a script keep their ends.
    #[test]
    fn an_old_search_keeps_its_matches_where_a_runs_output_keeps_its_ends() {
        let found =
            "44:class HashedFilesMixin:\n203:    def post_process(self, paths, dry_run=False, \
                     **options):\n251:    def _post_process(self, paths, adjustable_paths):\n\
                     397:    def post_process(self, *args, **kwargs):";
        let runs: Vec<String> = (0..4)
            .map(|r| {
                (0..40)
                    .map(|k| format!("iteration {k}: total {r}{k} yields\n"))
                    .collect()
            })
            .collect();
        let first_line = |first: &str| {
            let turns: Vec<(String, &str)> = std::iter::once((first.to_string(), found))
                .chain((0..3).map(|k| (format!("python3 reproduce_{k}.py"), runs[k].as_str())))
                .collect();
            let texts: Vec<(String, String)> = turns
                .iter()
                .map(|(cmd, out)| {
                    (
                        format!("THOUGHT: next.\n\n```bash\n{cmd}\n```"),
                        format!("<returncode>0</returncode>\n<output>\n{out}\n</output>"),
                    )
                })
                .collect();
            let mut msgs = vec![Message::text("user", "Fix the duplicate yields.")];
            for (call, output) in &texts {
                msgs.push(Message::text("assistant", call));
                msgs.push(Message::text("user", output));
            }
            // (275 before a text of up to 1 KiB was read whole: the rooms where the search
            // keeps its line and the script's is cut moved to 264-268.)
            let d = digest_within(&msgs, 267);
            let head: String = first.chars().take(12).collect();
            d.lines()
                .find(|l| l.contains(&head))
                .unwrap_or_else(|| panic!("no line of {first}: {d}"))
                .to_string()
        };
        let search = first_line("grep -n 'class HashedFilesMixin\\|def post_process' storage.py");
        for fact in ["44:class HashedFilesMixin", "203:", "397:"] {
            assert!(search.contains(fact), "{fact}: {search}");
        }
        let script = first_line("python3 find_defs.py storage.py");
        assert!(!script.contains("203:"), "{script}");
    }

    /// A text agent's harness complains about the format (an uncoded user turn answering the
    /// command); the user then states a rule. The rule is the user speaking, not the command's
    /// output: it was digested as `$ cmd -> ok: Do not cancel ...` and lost with the call.
    #[test]
    fn a_rule_stated_after_a_harness_complaint_is_a_rule_not_an_observation() {
        let msgs = vec![
            Message::text(
                "assistant",
                "THOUGHT: look.\n\n```bash\nls\n```\n\n```bash\npwd\n```",
            ),
            Message::text(
                "user",
                "Please always provide EXACTLY ONE action in triple backticks, found 2 actions.",
            ),
            Message::text(
                "user",
                "Do not cancel reservation ZZ9Q7T under any circumstances.",
            ),
            Message::text("assistant", "THOUGHT: one action.\n\n```bash\nls\n```"),
            Message::text(
                "user",
                "<returncode>0</returncode>\n<output>\nsetup.py\n</output>",
            ),
        ];
        let d = digest_within(&msgs, 400);
        assert!(
            !d.contains("-> ok: Do not cancel"),
            "read as an observation:\n{d}"
        );
        let rules = d.split("## Standing rules").nth(1).unwrap_or("");
        let requests = d.split("## User requests").nth(1).unwrap_or("");
        assert!(
            rules.contains("Do not cancel reservation ZZ9Q7T")
                || requests.contains("Do not cancel reservation ZZ9Q7T"),
            "{d}"
        );
    }

    /// A previous digest's long call line is carried as long as the new room holds it: between
    /// the line whole and 240 characters there are steps, so a room that holds most of the line
    /// is not left two-thirds empty. What the clipped line no longer shows, the index may list
    /// (the line's identifiers are the previous summary's): the listing's directories are
    /// counted in the whole digest.
    #[test]
    fn a_carried_call_line_keeps_what_the_room_holds() {
        let listing: String = (0..400)
            .map(|k| format!("./tests/view_tests/app{k}: __init__.py locale"))
            .collect::<Vec<_>>()
            .join(" ");
        let prev = format!(
            "Earlier conversation folded by contextfold (3 messages: 0 user requests, 2 tool calls, 0 errors).\n## Tool calls\n- $ ls -R -> ok: rc=0: {listing}\n"
        );
        let msgs = vec![Message::text("assistant", "THOUGHT: listing done.")];
        let carried = |max_tokens: u64| {
            let d = digest_after(&msgs, &prev, max_tokens);
            assert!(
                est().summary_text(&d) <= max_tokens as f64 + 1.0,
                "{max_tokens}"
            );
            let line = d
                .lines()
                .find(|l| l.starts_with("- $ ls -R"))
                .unwrap_or_else(|| panic!("{d}"))
                .chars()
                .count();
            let dirs = (0..400)
                .filter(|k| {
                    // (The line holds `./tests/...`; the index, the same path relative.)
                    let dir = format!("tests/view_tests/app{k}");
                    d.match_indices(&dir).any(|(at, _)| {
                        !d[at + dir.len()..].starts_with(|c: char| c.is_ascii_digit())
                    })
                })
                .count();
            (line, dirs, est().summary_text(&d))
        };
        let whole = listing.chars().count();
        let (line, _, used) = carried(2 * est().summary_text(&prev) as u64);
        assert!(line > whole, "{line} of {whole}");
        // A room of about half the line keeps more than a third of its directories, and fills
        // most of the room.
        let half = (est().summary_text(&prev) / 2.0) as u64;
        let (line, dirs, used_half) = carried(half);
        assert!(
            3 * dirs >= 400,
            "{dirs} directories ({line} characters of {whole})"
        );
        assert!(used_half >= 0.7 * half as f64, "{used_half} of {half}");
        assert!(used > used_half);
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
                est().summary_text(&d) <= budget as f64 + 1.0,
                "{budget}: {}",
                est().summary_text(&d)
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

    /// A long span of tool rounds (every fifth result an error, a request every 40 rounds) and
    /// of a text agent's commands.
    fn long_span(rounds: usize) -> (Vec<String>, Vec<(usize, String)>) {
        let mut args = Vec::new();
        let mut texts = Vec::new();
        for r in 0..rounds {
            args.push(format!(
                "{{\"path\":\"src/mod_{r}/file_{}.py\"}}",
                r * 7 % 13
            ));
            // Outputs of many sizes: a packing keeps the cheap ones longest.
            let size = 1 + (r * 7_919) % 61;
            let out = if r % 5 == 0 {
                format!(
                    "Error: no such file src/mod_{r}/file.py {}",
                    "(retry) ".repeat(size % 7)
                )
            } else {
                format!("line {r}: {}", "value = compute(x) + offset ".repeat(size))
            };
            texts.push((r, out));
        }
        (args, texts)
    }

    #[test]
    fn a_long_span_read_whole_only_from_its_newest_rounds_digests_the_same() {
        let (args, outs) = long_span(900);
        let ids: Vec<String> = (0..args.len()).map(|r| format!("call_{r}")).collect();
        let mut msgs = vec![Message::text(
            "user",
            "Fix the failing imports in src/ and never touch tests/.",
        )];
        for (r, out) in &outs {
            if r % 40 == 39 {
                msgs.push(Message::text(
                    "user",
                    "Also check the module number {r} again, please.",
                ));
            }
            let mut a = Message::text("assistant", "I look at the next module before changing it.");
            a.tool_calls.push(ToolCall {
                id: &ids[*r],
                name: "read_file",
                arguments: Cow::Borrowed(&args[*r]),
            });
            msgs.push(a);
            let mut t = Message::text("tool", out);
            t.tool_call_id = Some(&ids[*r]);
            msgs.push(t);
        }
        // A text agent's span: commands in fences, observations with return codes.
        let cmds: Vec<String> = (0..700)
            .map(|r| format!("THOUGHT: step {r}\n\n```bash\ngrep -n name_{r} src/app.py\n```"))
            .collect();
        let obs: Vec<String> = (0..700)
            .map(|r| {
                format!(
                    "<returncode>{}</returncode>\n<output>\n{r}: name_{r} = {}\n</output>",
                    // (grep's status 2: an error; 1 would be a search that found nothing.)
                    r % 7 / 6 * 2,
                    "x".repeat(r % 50)
                )
            })
            .collect();
        let mut text_agent = vec![Message::text(
            "user",
            "Rename every name_ variable; always run the tests.",
        )];
        for (c, o) in cmds.iter().zip(&obs) {
            text_agent.push(Message::text("assistant", c));
            text_agent.push(Message::text("user", o));
        }
        for span in [&msgs, &text_agent] {
            for budget in [64u64, 300, 1_200] {
                let opt = DigestOptions {
                    max_tokens: budget,
                    ..Default::default()
                };
                let from = read_whole_from(span, budget);
                assert!(from > 0, "{budget}: the whole span is read");
                assert_eq!(span[from].role, Role::Assistant);
                let whole = digest_reading(span, &est(), &opt, Vec::new(), 0, None).text;
                assert_eq!(digest(span, &est(), &opt), whole, "{budget}");
            }
        }
    }

    /// A fold digested again at another room with the index its first digest ranked (what a
    /// compaction does when the first came out over its share) is the digest written afresh:
    /// spans long enough to scan on two threads and short, with a previous digest or none.
    #[test]
    fn a_fold_digested_again_with_its_ranked_index_is_the_fresh_digest() {
        let (args, outs) = long_span(60);
        let ids: Vec<String> = (0..args.len()).map(|r| format!("call_{r}")).collect();
        let mut long = vec![Message::text("user", "Fix src/app.py; never touch tests/.")];
        for (r, out) in &outs {
            let mut a = Message::text("assistant", "I read the next module, HTTPError first.");
            a.tool_calls.push(ToolCall {
                id: &ids[*r],
                name: "read_file",
                arguments: Cow::Borrowed(&args[*r]),
            });
            long.push(a);
            let mut t = Message::text("tool", out);
            t.tool_call_id = Some(&ids[*r]);
            long.push(t);
        }
        assert!(scan_apart(&long), "the long span is scanned on two threads");
        let short = history();
        assert!(!scan_apart(&short));
        let first = digest(
            &short,
            &est(),
            &DigestOptions {
                max_tokens: 600,
                ..Default::default()
            },
        );
        for span in [&long, &short] {
            for previous in [None, Some(first.as_str())] {
                let at = |max_tokens| DigestOptions {
                    max_tokens,
                    previous,
                    instructions: None,
                };
                let ranked = digest_indexed(span, &est(), &at(2_000), None).ranked;
                for room in [40u64, 300, 1_500, 6_000] {
                    let again = digest_indexed(span, &est(), &at(room), Some(ranked.clone()));
                    assert_eq!(again.text, digest(span, &est(), &at(room)), "{room}");
                    assert_eq!(again.ranked, ranked);
                }
            }
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
        let d = digest_within(&msgs, 500);
        assert!(
            d.contains("$ cat astropy/modeling/separable.py -> error: rc=1"),
            "{d}"
        );
        assert!(d.contains("astropy/modeling/separable.py"));
    }

    /// The same failing test run again, printing the same but its timing: one line, the
    /// newest, after the edit between them; a run whose failures changed is a run of its own.
    #[test]
    fn a_run_that_printed_the_same_again_is_listed_once_as_the_newest() {
        let run = |secs: &str, failed: u32| {
            format!(
                "<returncode>1</returncode>\n<output>\nsss...F...s\n=== FAIL: test_custom_fields \
                 (inspectdb.tests.InspectDBTestCase)\nAssertionError: 'myfields.TextField' not found\n\
                 Ran 20 tests in {secs}s\nFAILED (failures={failed}, skipped=4)\n</output>"
            )
        };
        let turns = [
            (
                "THOUGHT: run the tests\n\n```bash\n./tests/runtests.py inspectdb\n```",
                run("0.412", 1),
            ),
            (
                "THOUGHT: revert\n\n```bash\ngit checkout django/core/management/commands/inspectdb.py\n```",
                "<returncode>0</returncode>\n<output>\nUpdated 1 path from the index\n</output>"
                    .to_string(),
            ),
            (
                "THOUGHT: again\n\n```bash\n./tests/runtests.py inspectdb\n```",
                run("0.398", 1),
            ),
            (
                "THOUGHT: and again after the fix\n\n```bash\n./tests/runtests.py inspectdb\n```",
                run("0.401", 2),
            ),
        ];
        let mut msgs = vec![Message::text("user", "Fix inspectdb's foreign keys.")];
        for (cmd, out) in &turns {
            msgs.push(Message::text("assistant", cmd));
            msgs.push(Message::text("user", out));
        }
        let d = digest_within(&msgs, 4_000);
        assert_eq!(d.matches("failures=1").count(), 1, "{d}");
        assert_eq!(d.matches("failures=2").count(), 1, "{d}");
        // (Its timing is the newest run's, listed after the revert.)
        let errors = d.split("## Errors").nth(1).unwrap_or("");
        let errors = errors.split("\n## ").next().unwrap_or("");
        assert!(
            errors.contains("0.398s") && !errors.contains("0.412s"),
            "{d}"
        );
        assert!(d.contains("Earlier conversation folded by contextfold (9 messages: 1 user requests, 4 tool calls, 3 errors)"), "{d}");
    }

    /// Only durations are masked: a script that printed other figures the second time ran
    /// anew (both lines stay).
    #[test]
    fn a_run_that_printed_other_figures_is_a_run_of_its_own() {
        let outs: Vec<String> = [
            "loss 2.31 acc 0.12 (3.2s)",
            "loss 0.05 acc 0.99 (3.1s)",
            "loss 0.05 acc 0.99 (2.9s)",
        ]
        .iter()
        .map(|o| format!("<returncode>0</returncode>\n<output>\n{o}\n</output>"))
        .collect();
        let mut msgs = vec![Message::text("user", "Train the model.")];
        for out in &outs {
            msgs.push(Message::text(
                "assistant",
                "THOUGHT: train\n\n```bash\npython train.py\n```",
            ));
            msgs.push(Message::text("user", out));
        }
        let d = digest_within(&msgs, 4_000);
        assert_eq!(d.matches("$ python train.py").count(), 2, "{d}");
        assert!(
            d.contains("loss 2.31") && d.contains("(2.9s)") && !d.contains("(3.1s)"),
            "{d}"
        );
    }

    /// Requests that must go to fit the room: the courtesies first, then the oldest. Before,
    /// the oldest went first whatever they asked: the tenth summary of a held-out airline
    /// dialogue kept four courtesies and dropped the request to rebook in business class.
    #[test]
    fn requests_that_ask_nothing_go_before_those_that_ask() {
        let mut texts: Vec<String> = Vec::new();
        for k in 0..8 {
            texts.push(format!(
                "Please change reservation number {k} to the cheapest business class round trip."
            ));
            texts.push("Noted.".to_string());
            texts.push(
                "Thank you so much, you too! I'll be in touch soon. Have a great day!".to_string(),
            );
            texts.push("Noted.".to_string());
        }
        let msgs = alternating(&texts, "user");
        let whole = digest_within(&msgs, 100_000);
        assert!(whole.contains("I'll be in touch soon"), "{whole}");
        let mut seen = 0;
        for room in (150..=300).step_by(25) {
            let d = digest_within(&msgs, room);
            let asks = (0..8)
                .filter(|k| d.contains(&format!("reservation number {k} ")))
                .count();
            if d.contains("I'll be in touch soon") {
                assert_eq!(
                    asks, 8,
                    "room {room}: a courtesy kept beside a request dropped\n{d}"
                );
            } else {
                seen += 1;
            }
        }
        assert!(seen > 0, "no room was tight enough to drop a courtesy");
    }

    /// A text agent's run: a thought before each command, the command's output after it.
    /// `texts` as turns of two roles by turns, the first `first` ("user" or "assistant").
    fn alternating<'t>(texts: &'t [String], first: &'static str) -> Vec<Message<'t>> {
        let second = if first == "user" { "assistant" } else { "user" };
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| Message::text(if i % 2 == 0 { first } else { second }, t))
            .collect()
    }

    fn text_round(thought: &str, cmd: &str, output: &str) -> [String; 2] {
        [
            format!("THOUGHT: {thought}\n\n```bash\n{cmd}\n```"),
            format!("<returncode>0</returncode>\n<output>\n{output}\n</output>"),
        ]
    }

    /// A room too small for every line gives what it holds to the older runs' outputs before
    /// the thoughts that name nothing: those fitted the crumbs the others left, and came back
    /// before an older call's output (a reproduction's `Lookups after unregister: True`).
    #[test]
    fn thoughts_that_name_nothing_give_way_to_older_outputs() {
        let mut texts = Vec::new();
        texts.extend(text_round(
            "Run the reproduction script first.",
            "python reproduce_issue.py",
            "Lookups before: True\nLookups after unregister: True",
        ));
        for k in 0..12 {
            texts.extend(text_round(
                [
                    "Let's see the implementation.",
                    "I need more lines.",
                    "Okay, let's look a bit further down.",
                ][k % 3],
                &format!("grep -n lookup_{k} django/db/models/query_utils.py"),
                &format!("{}: def lookup_{k}(self):", 100 + k),
            ));
        }
        let msgs = alternating(&texts, "assistant");
        let whole = digest_within(&msgs, 100_000);
        assert!(whole.contains("I need more lines."), "{whole}");
        // Rooms that hold some of the 13 calls: the calls take the room, the idle thoughts
        // what is left (the newest two are dropped last). Before, the newest idle thoughts were
        // given room first: 6 calls and 4 idle thoughts in each of these rooms. (Rooms of
        // 260-320 tokens before the digest priced its text whole, as the history prices a
        // summary: these lines price ~20% more read whole than sampled.)
        for room in [320, 360, 380] {
            let d = digest_within(&msgs, room);
            let count = |heading: &str, idle: bool| {
                section_of(&d, heading)
                    .lines()
                    .filter_map(|l| l.strip_prefix("- "))
                    .filter(|l| !idle || names_nothing(l))
                    .count()
            };
            let (calls, idle) = (
                count("## Tool calls", false),
                count("## Assistant conclusions", true),
            );
            assert!(
                calls >= 7 && idle <= 3,
                "room {room}: {calls} calls, {idle} idle thoughts\n{d}"
            );
        }
    }

    /// A conclusion clipped to fit keeps its head and its last finding: the sentence closing
    /// the thought that only says what comes next (its call line shows it) is what the clip
    /// leaves out, where a held-out SWE fold kept "... hand…verify this behavior with a
    /// script." and lost "consistent with previous behavior".
    #[test]
    fn a_clipped_conclusion_ends_on_its_last_finding_not_its_next_step() {
        let reasoning =
            "Both `ValueError` (empty sequence) and `TypeError` (incompatible types) are \
            now handled correctly. I should also consider other edge cases. What if `items()` \
            returns `None`? The list comprehension would raise `TypeError`, which the new \
            clause catches, and `None` would be returned. This seems acceptable for a broken \
            sitemap, and consistent with previous behavior where `TypeError` was caught.";
        let thought = format!("{reasoning}\n\nLet's verify this behavior with a script.");
        let mut texts = Vec::new();
        texts.extend(text_round(
            &thought,
            "python3 test_none_items.py",
            "Lastmod: None",
        ));
        for k in 0..10 {
            texts.extend(text_round(
                &format!("The sitemap index lists section_{k} as expected."),
                &format!("grep -n section_{k} django/contrib/sitemaps/views.py"),
                &format!("{}: def section_{k}(request):", 40 + k),
            ));
        }
        let msgs = alternating(&texts, "assistant");
        let whole = digest_within(&msgs, 100_000);
        assert!(
            whole.contains("Let's verify this behavior with a script."),
            "{whole}"
        );
        // (Rooms of 400-600 tokens: below them the oldest conclusion is dropped, above them whole.)
        let clipped = (400..600)
            .step_by(4)
            .map(|room| digest_within(&msgs, room))
            .filter_map(|d| {
                section_of(&d, "## Assistant conclusions")
                    .lines()
                    .find(|l| l.starts_with("- Both `ValueError`") && l.contains('…'))
                    .map(str::to_string)
            })
            .collect::<Vec<_>>();
        assert!(!clipped.is_empty(), "no room clipped the conclusion");
        for line in &clipped {
            assert!(line.ends_with("where `TypeError` was caught."), "{line}");
        }
    }

    /// The lines of a digest's section, from its heading to the next one ("" when absent).
    fn section_of<'d>(d: &'d str, heading: &str) -> &'d str {
        let Some(at) = d.find(heading) else { return "" };
        let body = &d[at + heading.len()..];
        &body[..body.find("\n## ").unwrap_or(body.len())]
    }

    /// An assistant turn calling a `terminal` tool through the API, and its result.
    fn terminal_round<'a>(id: &'a str, command: &'a str, result: &'a str) -> [Message<'a>; 2] {
        tool_round(id, "terminal", command, result)
    }

    /// An assistant turn calling tool `name` through the API with `args`, and its result.
    fn tool_round<'a>(
        id: &'a str,
        name: &'a str,
        args: &'a str,
        result: &'a str,
    ) -> [Message<'a>; 2] {
        let mut a = Message::text("assistant", "Checking.");
        a.tool_calls.push(ToolCall {
            id,
            name,
            arguments: Cow::Borrowed(args),
        });
        let mut r = Message::empty("tool");
        r.tool_call_id = Some(id);
        r.content = Content::Text(Cow::Borrowed(result));
        [a, r]
    }

    #[test]
    fn a_json_envelope_result_is_judged_by_its_exit_code_not_its_error_key() {
        let mut msgs = Vec::new();
        msgs.extend(terminal_round(
            "c1",
            r#"{"command":"grep -n parse_http_date django/utils/http.py"}"#,
            r#"{"output": "158:def parse_http_date(date):\n194:def parse_http_date_safe(date):", "exit_code": 0, "error": null}"#,
        ));
        msgs.extend(terminal_round(
            "c2",
            r#"{"command":"python3 reproduce_issue.py"}"#,
            r#"{"output": "Input: 70, Parsed: 1970, Expected: 2070\nFAIL", "exit_code": 1, "error": null}"#,
        ));
        let d = digest_within(&msgs, 600);
        assert!(d.contains("2 tool calls, 1 errors"), "{d}");
        let errors = section_of(&d, "## Errors");
        assert!(
            errors.contains("reproduce_issue.py")
                && errors.contains("rc=1: Input: 70, Parsed: 1970, Expected: 2070 FAIL"),
            "{d}"
        );
        assert!(!errors.contains("grep"), "{d}");
        // The output unescaped: its lines, not the envelope's `\n` and keys.
        assert!(
            d.contains("ok: rc=0: 158:def parse_http_date(date): 194:"),
            "{d}"
        );
        assert!(!d.contains("\"exit_code\""), "{d}");
    }

    /// A server-run tool's call and its result in one assistant message (Anthropic's
    /// `server_tool_use` and `web_search_tool_result`; an MCP call and its result): the result
    /// is the call's, said by what it holds where it holds no text, and an error counts.
    #[test]
    fn a_server_tools_result_in_the_calls_own_message_is_its_result() {
        let opaque = |kind: &'static str| Part::Opaque {
            kind: Cow::Borrowed(kind),
            media: crate::message::MediaKind::Unknown,
            payload_chars: None,
            wire_chars: 200,
            units: None,
            text: None,
            payload: None,
        };
        let mut a = Message::empty("assistant");
        a.content = Content::Parts(vec![
            Part::Text(Cow::Borrowed("Searching.")),
            Part::ToolUse(ToolCall {
                id: "srvtoolu_1",
                name: "web_search",
                arguments: Cow::Borrowed(r#"{"query":"checkout p99 regression"}"#),
            }),
            Part::ToolResult {
                tool_use_id: "srvtoolu_1",
                content: vec![opaque("web_search_result"), opaque("web_search_result")],
                is_error: false,
                name: None,
            },
            Part::ToolUse(ToolCall {
                id: "mcptoolu_1",
                name: "get_issue",
                arguments: Cow::Borrowed(r#"{"number":1234}"#),
            }),
            Part::ToolResult {
                tool_use_id: "mcptoolu_1",
                content: vec![Part::Text(Cow::Borrowed("issue 1234 not found (404)"))],
                is_error: true,
                name: None,
            },
        ]);
        let msgs = vec![
            Message::text("user", "Why is checkout slow?"),
            a,
            Message::text("assistant", "Found it."),
        ];
        let d = digest_within(&msgs, 600);
        assert!(
            d.contains(
                r#"web_search(query="checkout p99 regression") -> ok: [web_search_result x2]"#
            ),
            "{d}"
        );
        assert!(
            section_of(&d, "## Errors").contains("issue 1234 not found"),
            "{d}"
        );
        assert!(!d.contains("no result in this span"), "{d}");
        assert!(d.contains("2 tool calls, 1 errors"), "{d}");
    }

    /// A run that exits 0 and prints that a check failed (a reproduction script's verdict on
    /// the bug) is filed with the errors, its exit code shown; a `cat` that exits 0 printing a
    /// file's `except Exception` stays a call, as does a run whose words say nothing failed.
    #[test]
    fn a_run_that_exits_zero_reporting_a_failure_is_filed_with_the_errors() {
        let mut msgs = Vec::new();
        msgs.extend(terminal_round(
            "c1",
            r#"{"command":"python verify_wrong_result.py"}"#,
            r#"{"output": "Expected count: 1\nActual count: 2\nFAIL: Count is incorrect!", "exit_code": 0, "error": null}"#,
        ));
        msgs.extend(terminal_round(
            "c2",
            r#"{"command":"cat src/loader.py"}"#,
            r#"{"output": "def load(p):\n    try:\n        return open(p).read()\n    except Exception as error:\n        raise", "exit_code": 0, "error": null}"#,
        ));
        msgs.extend(terminal_round(
            "c3",
            r#"{"command":"python verify_wrong_result.py"}"#,
            r#"{"output": "Expected count: 1\nActual count: 1\nSUCCESS", "exit_code": 0, "error": null}"#,
        ));
        let d = digest_within(&msgs, 600);
        let errors = section_of(&d, "## Errors");
        let calls = section_of(&d, "## Tool calls");
        assert!(
            errors.contains(
                "$ python verify_wrong_result.py -> error: rc=0: Expected count: 1 Actual count: 2 FAIL: Count is incorrect!"
            ),
            "{d}"
        );
        assert!(calls.contains("$ cat src/loader.py -> ok: rc=0"), "{d}");
        assert!(calls.contains("Actual count: 1 SUCCESS"), "{d}");
        assert!(d.contains("3 tool calls, 1 errors"), "{d}");
        // Counted, not read whole (the part of a fold before `whole_from`): the same verdict.
        let c = ToolCall {
            id: "c1",
            name: "terminal",
            arguments: Cow::Borrowed(r#"{"command":"python verify_wrong_result.py"}"#),
        };
        assert!(call_failed(
            &c,
            r#"{"output": "Actual count: 2\nFAIL: Count is incorrect!", "exit_code": 0, "error": null}"#
        ));
        let cat = ToolCall {
            arguments: Cow::Borrowed(r#"{"command":"cat src/loader.py"}"#),
            ..c
        };
        assert!(!call_failed(
            &cat,
            r#"{"output": "except Exception as error:\n    raise", "exit_code": 0, "error": null}"#
        ));
    }

    #[test]
    fn code_quoted_by_an_agent_that_calls_tools_is_no_command_and_the_next_user_turn_is_a_request()
    {
        let mut msgs = Vec::new();
        msgs.extend(terminal_round(
            "c1",
            r#"{"command":"cat site.conf"}"#,
            "server { listen 80; }",
        ));
        msgs.push(Message::text(
            "assistant",
            "Done. To reload it yourself run:\n```bash\nsudo systemctl reload nginx\n```\nThen check the logs.",
        ));
        msgs.push(Message::text(
            "user",
            "Also rotate the TLS certificate for api.example.com, and never restart the database.",
        ));
        msgs.push(Message::text("assistant", "Will do."));
        let d = digest_within(&msgs, 600);
        assert!(
            section_of(&d, "## User requests").contains("never restart the database."),
            "{d}"
        );
        assert!(!d.contains("$ sudo systemctl"), "{d}");
        assert!(d.contains("Then check the logs."), "{d}");
        assert!(d.contains("1 user requests, 1 tool calls"), "{d}");
    }

    #[test]
    fn a_turn_of_several_actions_the_harness_refused_is_an_error_not_a_run() {
        let coded = |o: &str| format!("<returncode>0</returncode>\n<output>\n{o}\n</output>");
        let turns = [
            ("assistant", "THOUGHT: look\n\n```bash\nls src\n```".to_string()),
            ("user", coded("app.py")),
            (
                "assistant",
                "THOUGHT: fix and test\n\n```bash\nsed -i 's/a/b/' app.py\n```\n\n```bash\npython app.py\n```"
                    .to_string(),
            ),
            (
                "user",
                "Please always provide EXACTLY ONE action in triple backticks, found 2 actions.\n\n\
                 Please format your action in triple backticks as shown in <response_example>."
                    .to_string(),
            ),
            ("assistant", "THOUGHT: one at a time\n\n```bash\nsed -i 's/a/b/' app.py\n```".to_string()),
            ("user", coded("")),
            ("assistant", "THOUGHT: submit\n\n```bash\necho DONE && git diff\n```".to_string()),
            ("user", "diff --git a/app.py b/app.py\n-a\n+b".to_string()),
            ("assistant", "THOUGHT: done".to_string()),
        ];
        let msgs: Vec<Message<'_>> = turns.iter().map(|(r, t)| Message::text(r, t)).collect();
        let d = digest_within(&msgs, 800);
        let errors = section_of(&d, "## Errors");
        assert!(
            errors.contains(
                "$ python app.py -> error: not run, the turn was refused: Please always provide EXACTLY ONE action"
            ),
            "{d}"
        );
        // Its first line says why; the harness's instructions after it are left out.
        assert!(!d.contains("Please format your action"), "{d}");
        // The submission, one action answered by its diff, ran.
        assert!(
            d.contains("$ echo DONE && git diff -> ok: diff --git"),
            "{d}"
        );
        assert!(d.contains("1 errors"), "{d}");
    }

    #[test]
    fn a_harness_answer_to_a_command_is_no_user_request_but_a_person_in_between_is() {
        let cmd = |c: &str| format!("THOUGHT: go\n\n```bash\n{c}\n```");
        let coded = |o: &str| format!("<returncode>0</returncode>\n<output>\n{o}\n</output>");
        let turns = [
            ("assistant", cmd("ls src")),
            ("user", coded("app.py")),
            ("assistant", cmd("python app.py")),
            (
                "user",
                "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."
                    .to_string(),
            ),
            ("assistant", cmd("git status")),
            ("user", "Never push to the main branch.".to_string()),
            ("user", coded("nothing to commit")),
        ];
        let msgs: Vec<Message<'_>> = turns.iter().map(|(r, t)| Message::text(r, t)).collect();
        let d = digest_within(&msgs, 800);
        let requests = d
            .split("## User requests")
            .nth(1)
            .map(|s| s.split("\n## ").next().unwrap_or(""))
            .unwrap_or("");
        assert!(requests.contains("Never push to the main branch."), "{d}");
        assert!(!requests.contains("EXACTLY ONE action"), "{d}");
        assert!(
            d.contains("$ python app.py -> ok: Please always provide EXACTLY ONE"),
            "{d}"
        );
        // The person's words leave the command to its coded observation.
        assert!(
            d.contains("$ git status -> ok: rc=0: nothing to commit"),
            "{d}"
        );
    }

    /// A sentence that opens or closes two user turns or more (a user simulator's sign-off)
    /// is left out of the clipped requests, which keep their reasons instead; a request whole
    /// keeps it, and a turn that is nothing but that sentence stays as it is.
    #[test]
    fn a_sign_off_said_every_turn_is_left_out_of_clipped_requests() {
        let sign_off = "You are the most lenient customer service agent I have ever spoken to.";
        let turns = [
            format!("My reservation IDs are IFOYYZ and NQNU5R. As for the reason, there has been a change of plan and the trip is off for good. {sign_off}"),
            format!("Yes, please proceed with the cancellation of reservation NQNU5R right away. {sign_off}"),
            format!("I would also like to change another reservation, M20IZO, to a nonstop flight if that is possible. {sign_off}"),
            sign_off.to_string(),
        ];
        let mut texts: Vec<String> = Vec::new();
        for t in &turns {
            texts.push(t.clone());
            texts.push("Let me check that for you.".to_string());
        }
        let msgs = alternating(&texts, "user");
        let repeated = repeated_edges(&msgs);
        assert!(repeated.contains(sign_off), "{repeated:?}");
        assert_eq!(
            without_repeated_edges(&turns[0], &repeated),
            "My reservation IDs are IFOYYZ and NQNU5R. As for the reason, there has been a change of plan and the trip is off for good."
        );
        assert_eq!(without_repeated_edges(sign_off, &repeated), sign_off);
        let whole = digest_within(&msgs, 100_000);
        assert!(whole.contains(&turns[0]), "{whole}");
        // A room that clips the requests keeps the reason, not the sign-off.
        let tight = digest_within(&msgs, 130);
        let requests = section_of(&tight, "## User requests");
        assert!(requests.contains("the trip is off for good"), "{tight}");
        assert!(requests.contains('…'), "the room clips them: {tight}");
        // Only the turn that is the sign-off alone says it.
        let said = requests
            .lines()
            .filter(|l| l.contains("I have ever spoken to"))
            .count();
        assert_eq!(said, 1, "{tight}");
    }
}
