//! A step that changes something the agent cannot read back as it was: a file edited, moved or
//! removed (`sed -i`, `cat > x.py`, `git apply`, an editor's `str_replace`, `write_file`), a
//! booking made or cancelled (`book_reservation`, `cancel_reservation`). What a read printed
//! can be printed again; which edit was made, and what the action returned, only the history
//! says. A digest keeps such calls past the drops that keep only the newest calls
//! (`digest::pack`): one SWE run's merged summary (django-13121, compacted in a new process
//! each time) had kept its four newest calls and lost the `sed -i '12i from
//! django.utils.dateparse import parse_duration'` that added the fix's import.
//!
//! Measured against the same build without it (facts kept; the probe sets of
//! `tests/data/probes`, the continuation of `tools/future_report.py`): held-out sets at 0.75x /
//! 1x / 1.5x the naive budget 184 / 523 / 588 -> 191 / 523 / 588 of 608; the main set 105 / 193
//! / 203 -> 105 / 192 / 203 of 203; the SWE continuation 4,618 -> 4,626 of 6,073 (as terminal
//! calls with JSON results 4,540 -> 4,544, as `Read` and `Bash` calls 4,486 -> 4,489); the
//! agent loops: held-out 484 -> 484, in a new process 435 -> 434; main 191 -> 190, in a new
//! process 194 -> 189. Kept only past the drop to the newest eight calls (not the newest
//! four), the held-out sets at 0.75x gained 2 and the continuation 5.

use crate::read_call::name_has_word;
use crate::shell_line;
use crate::tool_outcome::Producer;

/// Words of a tool's name that say it changes something: files (`write_file`, `Edit`,
/// `MultiEdit`, `create_file`, `str_replace_editor`, `apply_patch`, `delete_file`,
/// `move_file`), or records (`book_reservation`, `cancel_reservation`,
/// `update_reservation_flights`, `send_certificate`, `transfer_to_human_agents`).
const CHANGE_WORDS: [&str; 16] = [
    "write",
    "edit",
    "multiedit",
    "create",
    "replace",
    "insert",
    "patch",
    "apply",
    "delete",
    "remove",
    "move",
    "rename",
    "book",
    "cancel",
    "update",
    "send",
];

/// Words of a tool's name that say each call replaces the whole of a list the agent keeps for
/// itself (Claude Code's `TodoWrite`, Gemini CLI's `write_todos`, Codex's `update_plan`): the
/// newest call says it all, and an agent calls it every few turns.
const STATE_WORDS: [&str; 3] = ["todo", "todos", "plan"];

/// Whether a call of tool `name`, read as `producer` (`Producer::of_call`), changes
/// something: a shell tool's command line that changes files (`shell_line::changes_files`), or
/// a tool whose name says it does (`CHANGE_WORDS`) and does not keep the agent's own list
/// (`STATE_WORDS`); a file read (an editor told to `view`) never does.
pub fn changes(name: &str, producer: &Producer<'_>) -> bool {
    match producer {
        Producer::Command(cmd) => shell_line::changes_files(cmd),
        Producer::FileRead => false,
        Producer::Call => name_changes(name),
    }
}

fn name_changes(name: &str) -> bool {
    name_has_word(name, &CHANGE_WORDS) && !name_has_word(name, &STATE_WORDS)
}

/// Whether a line a previous digest wrote for a call (`$ COMMAND -> ...` or `name(args) ->
/// ...`) is one of a step that changes something. A command that digest clipped is read by
/// its head, a quote the clip left open closed there: the programs and their flags come first
/// (`sed -i '330,332c\ if (\n not field.null o…schema.py` was read as no edit, its quote
/// unbalanced, and a merged summary dropped it before the reads around it).
pub fn line_changes(line: &str) -> bool {
    let call = line.split(" -> ").next().unwrap_or(line);
    match call.strip_prefix("$ ") {
        Some(cmd) => {
            let cmd = cmd.replace(" ⏎ ", "\n");
            shell_line::changes_files(&cmd)
                || cmd.split_once('…').is_some_and(|(head, _)| {
                    let mut head = head.to_string();
                    if let Some(q) = shell_line::open_quote(&head) {
                        head.push(char::from(q));
                    }
                    shell_line::changes_files(&head)
                })
        }
        None => {
            let name = call.split('(').next().unwrap_or("");
            !name.is_empty() && !name.contains(' ') && name_changes(name)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clipped_edit_line_of_a_previous_digest_is_still_an_edit() {
        assert!(line_changes(
            "$ sed -i '330,332c\\ if (\\n not field.null o…db/backends/sqlite3/schema.py -> ok: rc=0"
        ));
        assert!(line_changes(
            "$ cat <<'EOF' > reproduce_issue.py ⏎ import…F ⏎ python reproduce_issue.py -> ok: rc=0"
        ));
        assert!(!line_changes(
            "$ sed -n '325,340p' django/db/backends/sqlite3/schema.py -> ok: rc=0: def add_field(se…table."
        ));
        assert!(!line_changes("$ grep -n \"def x(\" a.py…b.py -> ok: rc=0"));
    }

    fn changes_json(name: &str, json: &str) -> bool {
        let args: serde_json::Value = serde_json::from_str(json).unwrap();
        changes(name, &Producer::of_call(name, Some(&args)))
    }

    #[test]
    fn edits_and_bookings_change_things_and_reads_do_not() {
        assert!(changes_json(
            "bash",
            r#"{"command":"sed -i 's/a/b/' x.py"}"#
        ));
        assert!(!changes_json("bash", r#"{"command":"sed -n '1,9p' x.py"}"#));
        let edit = r#"{"command":"str_replace","path":"x.py","old_str":"a","new_str":"b"}"#;
        assert!(changes_json("str_replace_based_edit_tool", edit));
        let view = r#"{"command":"view","path":"x.py"}"#;
        assert!(!changes_json("str_replace_based_edit_tool", view));
        assert!(changes_json(
            "Edit",
            r#"{"file_path":"x.py","old_string":"a","new_string":"b"}"#
        ));
        assert!(changes_json(
            "cancel_reservation",
            r#"{"reservation_id":"NQNU5R"}"#
        ));
        assert!(!changes_json(
            "get_reservation_details",
            r#"{"reservation_id":"NQNU5R"}"#
        ));
        assert!(!changes_json("Read", r#"{"file_path":"x.py"}"#));
        // A list the agent rewrites whole every few turns is no change to keep.
        for name in ["TodoWrite", "write_todos", "update_plan"] {
            assert!(
                !changes_json(name, r#"{"todos":[{"content":"fix","status":"pending"}]}"#),
                "{name}"
            );
        }
        assert!(line_changes(
            "$ sed -i '12i from x import y' a.py -> ok: rc=0"
        ));
        assert!(line_changes(
            "$ cat <<'EOF' > r.py ⏎ import os ⏎ EOF -> ok: rc=0"
        ));
        assert!(!line_changes("$ grep -n x a.py -> ok: rc=1"));
        assert!(line_changes(
            "book_reservation(cabin=economy) -> ok: reservation_id=HATHAT"
        ));
        assert!(!line_changes(
            "search_direct_flight(date=2024-05-25) -> ok: [..]"
        ));
    }
}
