//! A previous digest merged into the next one, section by section: its requests and rules
//! kept, its lines carried in forms that step down to what the room holds, its identifiers
//! carried into the new index.

use std::borrow::Cow;

use super::clip::{clip, clip_ends_into};
use super::forms::RESULT_HEAD_SHARE;
use super::{Builder, Section, OLD_TITLES, SECTIONS};
use crate::changing_call;
use crate::identifier_index;
use crate::standing_rules::rules_in;

/// Merge the sections of a previous digest (or keep foreign text as one entry); its identifier
/// index is carried into this one's.
pub(super) fn merge_previous<'a>(b: &mut Builder<'a>, prev: &'a str) {
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
        if crate::summary_trust::is_fold_line(item) {
            // The fold line a recoverable summary ends with (or one an earlier version carried
            // as an item): read as an item of the last section, it became a standing rule each
            // later summary held whole, one more at each compaction, past the summary's room.
            // (Its ids are carried from the span that holds the summary: `_fold_clause`.)
            continue;
        }
        match current {
            None => {
                if !line.starts_with("Earlier conversation folded") && !line.starts_with("Focus:") {
                    foreign.push_str(line);
                    foreign.push('\n');
                }
            }
            Some(Section::Requests) => b.request(Cow::Borrowed(item)),
            // The state and open items of an older span are history now. A state is carried
            // as long as the room holds it, stepping down as any carried line: cut to 400
            // characters at once, a SWE run's 12,001-character state (a script the agent
            // wrote) left a second digest 2,300 tokens short of its room, the room unused.
            Some(Section::LastState) => {
                let mut forms: Vec<String> = carried_forms(item, 400)
                    .into_iter()
                    .map(|f| format!("earlier state: {f}"))
                    .collect();
                forms.push(format!("earlier state: {}", clip(item, 120)));
                b.push(Section::Conclusions, forms);
            }
            Some(Section::Open) => match pending_in(item) {
                // Answered by the span's first observation (`Walk::new`).
                Some(cmd) if b.carried_command.is_none() => {
                    b.carried_command = Some(cmd.to_string());
                }
                _ => {
                    b.push(
                        Section::Conclusions,
                        vec![format!("earlier open item: {item}")],
                    );
                }
            },
            Some(s @ (Section::Calls | Section::Errors)) => {
                let pushed = b.push(s, carried_call_forms(item));
                b.mark_changes(
                    pushed,
                    s == Section::Calls && changing_call::line_changes(item),
                );
            }
            Some(s) => {
                b.push(s, carried_forms(item, CARRIED_NOTE_FLOOR));
            }
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

/// A previous digest's line is carried as that digest wrote it: at its fullest a long output of
/// thousands of characters. Its shorter forms step down from its length by this factor, to a
/// floor (`CARRIED_CALL_FLOOR`, `CARRIED_NOTE_FLOOR`), so a room that holds most of the line
/// keeps most of it: with no step between the whole line and 240 characters, a second digest
/// whose room held most of a SWE run's `ls -R` line kept 240 characters and left the room
/// two-thirds empty (1,673 tokens of summary became 459 in a room of 1,638).
const CARRIED_STEP: f64 = 0.7;

/// The shortest form of a carried call or error line (characters), before its command alone.
const CARRIED_CALL_FLOOR: usize = 240;

/// The shortest form of a carried conclusion, note or other line (characters).
const CARRIED_NOTE_FLOOR: usize = 200;

/// A carried line whole, then clipped to `CARRIED_STEP` of the form before, down to `floor`
/// characters (always that form last).
fn carried_forms(item: &str, floor: usize) -> Vec<String> {
    let chars = item.chars().count();
    let mut forms = vec![item.to_string()];
    let mut n = (chars as f64 * CARRIED_STEP) as usize;
    while n > floor {
        forms.push(clip(item, n));
        n = (n as f64 * CARRIED_STEP) as usize;
    }
    forms.push(clip(item, floor));
    forms
}

/// The command of a previous digest's open item for the command its fold ended on
/// (`Walk::pending_command`), or None for any other item.
pub(super) fn pending_in(item: &str) -> Option<&str> {
    item.strip_prefix("ran `$ ")?
        .strip_suffix(PENDING_OUTPUT)
        .filter(|c| !c.is_empty())
}

/// How the open item of a pending command ends (`Walk::pending_command`).
pub(super) const PENDING_OUTPUT: &str = "`; its output is in the messages kept after this summary";

/// Share of a carried call line's characters its call may keep in a shorter form (its
/// outcome takes the rest), and the least it keeps.
const CARRIED_CALL_SHARE: f64 = 0.4;
const CARRIED_CALL_MIN_CHARS: usize = 60;

/// The forms of a previous digest's call or error line (`call -> verdict: body`): the line
/// whole, then shorter by `CARRIED_STEP` down to `CARRIED_CALL_FLOOR`, each keeping the call's
/// head and end and the outcome's verdict and both ends, as a call's own forms clip its
/// result (`RESULT_HEAD_SHARE`: the last lines say how it ended); then the call with the
/// outcome's end. A line clipped by its head alone lost the end first, where the exception a
/// run ended on and a test run's counts stand (`… line 61, in …` for
/// `ImproperlyConfigured: Requested setting INSTALLED_APPS`), and its last form, the call
/// alone, kept of `$ (command not in this span) -> error: ... FAILURE: prefetch_related
/// returned None` nothing at all.
pub(super) fn carried_call_forms(item: &str) -> Vec<String> {
    let Some(i) = item.find(" -> ") else {
        let mut forms = carried_forms(item, CARRIED_CALL_FLOOR);
        forms.push(clip(item, 120));
        return forms;
    };
    let (call, outcome) = (&item[..i], &item[i + 4..]);
    // The verdict (`error: `, `ok: rc=0: `) stays whole; the body is what is clipped.
    let verdict_end = verdict_len(outcome);
    let (verdict, body) = outcome.split_at(verdict_end);
    let form = |n: usize, call_share: f64, body_share: f64| {
        let call_max = ((n as f64 * call_share) as usize).max(CARRIED_CALL_MIN_CHARS);
        let mut f = String::with_capacity(n + 8);
        clip_ends_into(call, call_max, 0.6, &mut f);
        f.push_str(" -> ");
        f.push_str(verdict);
        let used = f.chars().count();
        let left = n.saturating_sub(used);
        if left >= 16 {
            clip_ends_into(body, left, body_share, &mut f);
        } else if !body.trim().is_empty() {
            f.push('…');
        }
        f
    };
    let chars = item.chars().count();
    let mut out = vec![item.to_string()];
    let mut n = (chars as f64 * CARRIED_STEP) as usize;
    while n > CARRIED_CALL_FLOOR {
        out.push(form(n, CARRIED_CALL_SHARE, RESULT_HEAD_SHARE));
        n = (n as f64 * CARRIED_STEP) as usize;
    }
    out.push(form(
        CARRIED_CALL_FLOOR,
        CARRIED_CALL_SHARE,
        RESULT_HEAD_SHARE,
    ));
    out.push(form(120, 0.6, 0.0));
    out.dedup();
    out
}

/// Bytes of a digest's outcome that say its verdict: `error: ` or `ok: `, and the return
/// code after it (`rc=1: `); 0 where the outcome opens otherwise (`no result in this span`).
fn verdict_len(outcome: &str) -> usize {
    let Some(rest) = outcome
        .strip_prefix("error: ")
        .or_else(|| outcome.strip_prefix("ok: "))
    else {
        return 0;
    };
    let at = outcome.len() - rest.len();
    if let Some(r) = rest.strip_prefix("rc=") {
        let digits = r
            .find(|c: char| !(c.is_ascii_digit() || c == '-'))
            .unwrap_or(r.len());
        if digits > 0 && r[digits..].starts_with(": ") {
            return at + 3 + digits + 2;
        }
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A previous digest's call or error line, shortened, keeps its call, its verdict and the
    /// end of its outcome (where the exception or the test counts are), down to its last form.
    #[test]
    fn a_carried_error_line_keeps_its_verdict_and_its_end_when_shortened() {
        let frames: String = (0..30)
            .map(|k| format!("File \"/testbed/django/db/m{k}.py\", line {k}, in f{k} "))
            .collect();
        let item = format!(
            "$ python3 reproduce_issue.py -> error: rc=1: Traceback (most recent call last): {frames}django.core.exceptions.ImproperlyConfigured: Requested setting INSTALLED_APPS"
        );
        let forms = carried_call_forms(&item);
        assert_eq!(forms[0], item);
        assert!(forms.len() > 3, "{forms:?}");
        for f in &forms[1..] {
            assert!(
                f.starts_with("$ python3 reproduce_issue.py -> error: rc=1: "),
                "{f}"
            );
            assert!(f.ends_with("INSTALLED_APPS"), "{f}");
            assert!(f.chars().count() < item.chars().count(), "{f}");
        }
        let last = forms.last().unwrap();
        assert!(last.chars().count() <= 130, "{last}");
        // Forms only shorten, and no two are the same.
        assert!(
            forms
                .windows(2)
                .all(|w| w[0].chars().count() > w[1].chars().count()),
            "{forms:?}"
        );
        // A line without an outcome steps down as any carried line.
        assert!(carried_call_forms("$ ls -R").iter().all(|f| f == "$ ls -R"));
        assert_eq!(verdict_len("ok: rc=0: done"), "ok: rc=0: ".len());
        assert_eq!(verdict_len("error: boom"), "error: ".len());
        assert_eq!(verdict_len("no result in this span"), 0);
    }
}
