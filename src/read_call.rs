//! A tool call that only reads a file: a coding agent's `Read(file_path=...)`,
//! `read_file(path=..., offset=...)`, `str_replace_editor(command="view", path=...)`. Such a
//! call is the same step as a text agent's `cat` or `sed -n` (`shell_line::reads_only`): its
//! result is the file's lines, which the agent reads again when it needs them.

use serde_json::{Map, Value};

/// Keys that name the file read.
/// (Gemini CLI's `read_file` names it `absolute_path`; several agents' `Read` `filePath`.)
const PATH_KEYS: [&str; 7] = [
    "file_path",
    "filePath",
    "absolute_path",
    "path",
    "filename",
    "file",
    "target_file",
];

/// Keys that page through it (Claude Code's `Read`: `offset`, `limit`; OpenHands' editor:
/// `view_range`; others: `start_line` / `end_line`, `line_start` / `line_end`, `lines`).
const PAGE_KEYS: [&str; 9] = [
    "offset",
    "limit",
    "view_range",
    "start_line",
    "end_line",
    "line_start",
    "line_end",
    "lines",
    "should_read_entire_file",
];

/// Words of a tool's name that say it reads (a lowercase part of the name: `Read`,
/// `read_file`, `view_file`, `open_file`, `cat`).
const READ_WORDS: [&str; 4] = ["read", "view", "open", "cat"];

/// Whether a call only reads a file: one path key, nothing but paging keys beside it (and an
/// editor's `command: "view"`), and a tool whose name says it reads or an editor told to view.
/// An action on a path (`delete_file(path)`, `LS(path)`) is no read: its name says otherwise.
pub fn reads_file(name: &str, args: &Map<String, Value>) -> bool {
    let paths = args
        .keys()
        .filter(|k| PATH_KEYS.contains(&k.as_str()))
        .count();
    if paths != 1 {
        return false;
    }
    let view = args.get("command").and_then(Value::as_str) == Some("view");
    let only_paging = args.keys().all(|k| {
        PATH_KEYS.contains(&k.as_str())
            || PAGE_KEYS.contains(&k.as_str())
            || (view && k == "command")
    });
    let lower = name.to_ascii_lowercase();
    only_paging && (view || READ_WORDS.iter().any(|w| lower.contains(w)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(json: &str) -> Map<String, Value> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_read_is_a_path_a_page_and_a_name_that_reads() {
        assert!(reads_file("Read", &args(r#"{"file_path":"/repo/a.py"}"#)));
        assert!(reads_file(
            "Read",
            &args(r#"{"file_path":"/repo/a.py","offset":40,"limit":20}"#)
        ));
        assert!(reads_file(
            "read_file",
            &args(r#"{"path":"a.py","start_line":1,"end_line":9}"#)
        ));
        assert!(reads_file(
            "str_replace_editor",
            &args(r#"{"command":"view","path":"/repo/a.py","view_range":[1,40]}"#)
        ));
        // Writes, edits, searches and actions on a path are not reads.
        assert!(!reads_file(
            "Write",
            &args(r#"{"file_path":"a.py","content":"x"}"#)
        ));
        assert!(!reads_file(
            "Edit",
            &args(r#"{"file_path":"a.py","old_string":"a","new_string":"b"}"#)
        ));
        assert!(!reads_file(
            "str_replace_editor",
            &args(r#"{"command":"create","path":"a.py"}"#)
        ));
        assert!(!reads_file("delete_file", &args(r#"{"path":"a.py"}"#)));
        assert!(!reads_file("LS", &args(r#"{"path":"/repo"}"#)));
        assert!(!reads_file(
            "Grep",
            &args(r#"{"pattern":"x","path":"/repo"}"#)
        ));
    }
}
