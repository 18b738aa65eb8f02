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

/// Words of a tool's name that say it reads (`Read`, `read_file`, `view_file`, `openFile`,
/// `cat`): whole words of the name, so `openapi_spec`, `thread_log` or `category` are not.
const READ_WORDS: [&str; 4] = ["read", "view", "open", "cat"];

/// Whether one of the words of a tool's name is one of `READ_WORDS`.
fn name_says_read(name: &str) -> bool {
    name_has_word(name, &READ_WORDS)
}

/// Whether one of the words of a tool's name (split at `_`, `-`, `.`, spaces and a lowercase
/// letter followed by a capital; lowercased) is one of `words`.
pub fn name_has_word(name: &str, words: &[&str]) -> bool {
    let mut word = String::new();
    let mut prev_lower = false;
    let mut says = false;
    for c in name.chars().chain(std::iter::once(' ')) {
        let boundary = !c.is_ascii_alphanumeric() || (prev_lower && c.is_ascii_uppercase());
        if boundary && !word.is_empty() {
            says |= words.contains(&word.as_str());
            word.clear();
        }
        if c.is_ascii_alphanumeric() {
            word.push(c.to_ascii_lowercase());
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
    }
    says
}

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
    only_paging && (view || name_says_read(name))
}

/// Words of a tool's name that say it searches (`Grep`, `grep_search`, `search_files`,
/// `search_file_content`, `find_in_files`), with a word that says what: files or their
/// content, not a catalogue (`search_direct_flight` finds flights, not where a name is).
const SEARCH_WORDS: [&str; 2] = ["search", "find"];
const SEARCHED_WORDS: [&str; 5] = ["file", "files", "content", "code", "codebase"];

/// Whether a tool searches files for where things are, by its name (`SEARCH_WORDS` with
/// `SEARCHED_WORDS`, or `grep` / `rg`): the same step as a shell's `grep -n`
/// (`shell_line::searches`).
pub fn searches_files(name: &str) -> bool {
    name_has_word(name, &["grep", "rg"])
        || (name_has_word(name, &SEARCH_WORDS) && name_has_word(name, &SEARCHED_WORDS))
}

/// The file a read returned inside a JSON record (hermes-agent's `read_file` returns
/// `{"content": "1|import os\\n2|...", "total_lines": 24, "file_size": 900, "truncated": false,
/// ...}`): the record's longest string when it has more than one line and twice the bytes of
/// its other strings together, else None (a record of texts of like size is data to show
/// whole; numbers and flags beside the file are its size and paging). Shown
/// as the file, not as the record: clipped, the record kept `content="76|def call_command…` and
/// `…alse, is_image=false`, the flags taking the end a file's last lines would have.
pub fn file_text(result: &str) -> Option<String> {
    let t = result.trim();
    if !t.starts_with('{') {
        return None;
    }
    let record: Map<String, Value> = serde_json::from_str(t).ok()?;
    let mut strings: Vec<String> = record
        .into_iter()
        .filter_map(|(_, v)| match v {
            Value::String(s) => Some(s),
            _ => None,
        })
        .collect();
    let longest = (0..strings.len()).max_by_key(|&i| strings[i].len())?;
    let text = strings.swap_remove(longest);
    let others: usize = strings.iter().map(String::len).sum();
    (text.len() >= 2 * others && text.trim().contains('\n')).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_in_a_json_record_is_its_longest_string() {
        let file = "1|import os\n2|class ConfigError(Exception):\n3|    pass";
        let record = serde_json::json!({"content": file, "total_lines": 3, "file_size": 60,
            "truncated": false, "is_binary": false, "is_image": false})
        .to_string();
        assert_eq!(file_text(&record).as_deref(), Some(file));
        // Not a record, one line, or fields of like size: none.
        assert_eq!(file_text(file), None);
        assert_eq!(
            file_text(r#"{"content": "one line", "total_lines": 1}"#),
            None
        );
        let rows = serde_json::json!({"a": "x\ny", "b": "z\nw", "c": "u\nv"}).to_string();
        assert_eq!(file_text(&rows), None);
        assert_eq!(file_text("{not json"), None);
    }

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
        // A search is no read, and is told by its name.
        for search in [
            "Grep",
            "grep_search",
            "search_files",
            "search_file_content",
            "findInFiles",
        ] {
            assert!(searches_files(search), "{search}");
        }
        for other in [
            "search_direct_flight",
            "find_user_id",
            "Read",
            "web_search",
            "file_write",
        ] {
            assert!(!searches_files(other), "{other}");
        }
        // The name's whole words: a read in `readFile` and `ReadFile`, none in `openapi_spec`,
        // `thread_log` or `category`.
        assert!(reads_file("readFile", &args(r#"{"filePath":"a.py"}"#)));
        assert!(reads_file("ReadFile", &args(r#"{"path":"a.py"}"#)));
        for not_read in ["openapi_spec", "thread_log", "category", "bread"] {
            assert!(
                !reads_file(not_read, &args(r#"{"path":"a.py"}"#)),
                "{not_read}"
            );
        }
    }
}
