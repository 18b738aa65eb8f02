//! A JSON tool result written in fewer tokens, every key and value kept in document order:
//! `key=value` pairs without quotes around plain strings, and an array of objects that share
//! their keys as one header row and one row of values per object
//! (`flights=[origin|destination|flight_number; BOS|SEA|HAT006; SEA|LAS|HAT018]`).
//!
//! A digest shows a call's result clipped to a number of characters; a reservation or a
//! profile as the API printed it spends about half of those on quotes, braces and keys
//! repeated for every item, so a clip keeps the first flight of four and none of the
//! payment methods. Written compactly the same characters hold every value.
//!
//! An array of search hits (objects of a file, a line number and the line's text, as a search
//! tool returns grep's matches in JSON) is written as grep prints them, `path:line:text`, the
//! path left out where the call named it: `1379:    def resolve_expression(self):`, and a
//! count that only repeats how many hits there are left out with the key they sit under.
//! As a table its first 60 characters held the header and the path, and a clipped result lost
//! the line number and the text that were what the search found.

use crate::json_string::push_json_string;

/// Results longer than this (bytes) are shown as printed: a digest clips them to a few
/// thousand characters anyway, and parsing megabytes for that is not worth it.
const MAX_BYTES: usize = 256 * 1024;

/// Nesting deeper than this is not rewritten (the result is shown as printed).
const MAX_DEPTH: usize = 48;

/// Characters that make a string ambiguous unquoted in the compact form.
const NEEDS_QUOTES: &[char] = &[
    ',', ';', '|', '=', '[', ']', '{', '}', '"', '\n', '\r', '\t',
];

enum Node<'a> {
    Object(Vec<(String, Node<'a>)>),
    Array(Vec<Node<'a>>),
    Str(String),
    /// A number, `true`, `false` or `null`, as written.
    Literal(&'a str),
}

struct Parser<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Parser<'a> {
    fn skip_ws(&mut self) {
        let b = self.text.as_bytes();
        while self.at < b.len() && matches!(b[self.at], b' ' | b'\n' | b'\r' | b'\t') {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        self.skip_ws();
        (self.peek() == Some(c)).then(|| self.at += 1)
    }

    fn value(&mut self, depth: usize) -> Option<Node<'a>> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.skip_ws();
        match self.peek()? {
            b'{' => {
                self.at += 1;
                let mut items = Vec::new();
                if self.eat(b'}').is_some() {
                    return Some(Node::Object(items));
                }
                loop {
                    self.skip_ws();
                    let key = self.string()?;
                    self.eat(b':')?;
                    items.push((key, self.value(depth + 1)?));
                    if self.eat(b',').is_none() {
                        self.eat(b'}')?;
                        return Some(Node::Object(items));
                    }
                }
            }
            b'[' => {
                self.at += 1;
                let mut items = Vec::new();
                if self.eat(b']').is_some() {
                    return Some(Node::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    if self.eat(b',').is_none() {
                        self.eat(b']')?;
                        return Some(Node::Array(items));
                    }
                }
            }
            b'"' => self.string().map(Node::Str),
            _ => {
                let b = self.text.as_bytes();
                let start = self.at;
                while self.at < b.len()
                    && matches!(b[self.at], b'-' | b'+' | b'.' | b'0'..=b'9' | b'a'..=b'z' | b'E')
                {
                    self.at += 1;
                }
                let lit = &self.text[start..self.at];
                let known = matches!(lit, "true" | "false" | "null") || lit.parse::<f64>().is_ok();
                known.then_some(Node::Literal(lit))
            }
        }
    }

    /// A JSON string at the cursor, decoded.
    fn string(&mut self) -> Option<String> {
        if self.peek()? != b'"' {
            return None;
        }
        self.at += 1;
        let mut out = String::new();
        loop {
            let rest = &self.text[self.at..];
            let stop = rest.find(['"', '\\'])?;
            out.push_str(&rest[..stop]);
            self.at += stop;
            if self.peek()? == b'"' {
                self.at += 1;
                return Some(out);
            }
            // An escape.
            let code = *self.text.as_bytes().get(self.at + 1)?;
            self.at += 2;
            match code {
                b'"' => out.push('"'),
                b'\\' => out.push('\\'),
                b'/' => out.push('/'),
                b'b' => out.push('\u{8}'),
                b'f' => out.push('\u{c}'),
                b'n' => out.push('\n'),
                b'r' => out.push('\r'),
                b't' => out.push('\t'),
                b'u' => {
                    let unit = self.hex4()?;
                    let c = if (0xD800..0xDC00).contains(&unit)
                        && self.text[self.at..].starts_with("\\u")
                    {
                        self.at += 2;
                        let low = self.hex4()?;
                        char::from_u32(
                            0x10000 + ((unit - 0xD800) << 10) + (low.checked_sub(0xDC00)? & 0x3FF),
                        )
                    } else {
                        char::from_u32(unit)
                    };
                    out.push(c.unwrap_or('\u{FFFD}'));
                }
                _ => return None,
            }
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let h = self.text.get(self.at..self.at + 4)?;
        self.at += 4;
        u32::from_str_radix(h, 16).ok()
    }
}

/// `text` (a tool's result) rewritten compactly when it is one JSON object or array; None
/// when it is not JSON, is too large or too deep.
#[cfg(test)]
pub(super) fn compact(text: &str) -> Option<String> {
    compact_for(text, &ShownArgs::default())
}

/// The string arguments (key, value) of the calls a fold has shown so far, which a JSON
/// result need not repeat (`compact_for`).
#[derive(Default)]
pub(super) struct ShownArgs {
    by_key: std::collections::HashMap<String, std::collections::HashSet<String>>,
}

impl ShownArgs {
    /// Note the top-level string arguments of a call.
    pub(super) fn add(&mut self, args: &serde_json::Map<String, serde_json::Value>) {
        for (k, v) in args {
            if let serde_json::Value::String(s) = v {
                // (Copied only when new: a fold repeats the same arguments call after call.)
                if !self.has(k, s) {
                    self.by_key.entry(k.clone()).or_default().insert(s.clone());
                }
            }
        }
    }

    fn has(&self, key: &str, value: &str) -> bool {
        self.by_key.get(key).is_some_and(|vs| vs.contains(value))
    }
}

/// As `compact`, for the result of a call whose fold showed the string arguments `shown`
/// (key, value): a top-level pair that echoes one (the same key and string value:
/// `get_reservation_details(reservation_id=X)` answering `reservation_id=X, ...`, or every
/// reservation of a profile repeating the `user_id=...` its `get_user_details` call was made
/// with) is left out, since a call's line shows it. A clipped result spent its first
/// characters on the echo: seven reservations of one user each showed `user_id=amelia_d…`
/// and no flight.
pub(super) fn compact_for(text: &str, shown: &ShownArgs) -> Option<String> {
    let t = text.trim();
    if t.len() > MAX_BYTES || !(t.starts_with('{') || t.starts_with('[')) {
        return None;
    }
    let mut p = Parser { text: t, at: 0 };
    let root = p.value(0)?;
    p.skip_ws();
    if p.at != t.len() {
        return None;
    }
    let mut out = String::with_capacity(t.len() / 2);
    match &root {
        // The top object needs no braces: the result is one.
        Node::Object(items) => {
            let echoes = |(key, v): &(String, Node<'_>)| match v {
                Node::Str(s) => shown.has(key, s),
                _ => false,
            };
            let rest = items.iter().filter(|p| !echoes(p));
            // A result that is nothing but the echo is shown as it is.
            if rest.clone().next().is_none() {
                pairs(&mut out, items, shown);
            } else if write_bare_hits(&mut out, rest.clone(), shown).is_none() {
                pairs_of(&mut out, rest, shown);
            }
        }
        other => write(&mut out, other, shown),
    }
    Some(out)
}

fn pairs_of<'i, 'n: 'i>(
    out: &mut String,
    items: impl Iterator<Item = &'i (String, Node<'n>)>,
    shown: &ShownArgs,
) {
    for (k, (key, v)) in items.enumerate() {
        if k > 0 {
            out.push_str(", ");
        }
        scalar_text(out, key);
        out.push('=');
        write(out, v, shown);
    }
}

fn pairs(out: &mut String, items: &[(String, Node<'_>)], shown: &ShownArgs) {
    pairs_of(out, items.iter(), shown);
}

/// Keys a search hit names its file, line number and line's text by: hermes-agent's
/// `search_files` matches (`path`, `line`, `content`, `SearchResult.to_dict` in
/// `tools/file_operations.py`, hermes-agent 0.19.0) and the other spellings a search tool's
/// record may use for the same three.
const HIT_PATH_KEYS: &[&str] = &["path", "file", "file_path", "filename", "filepath"];
const HIT_LINE_KEYS: &[&str] = &["line", "line_number", "lineno", "line_no"];
const HIT_TEXT_KEYS: &[&str] = &["content", "text", "line_text", "match", "snippet"];

/// A search hit's (path key, path, line number, text) when `node` is an object of exactly a
/// file, a whole line number and a string text (in any order).
fn hit<'n>(node: &'n Node<'_>) -> Option<(&'n str, &'n str, &'n str, &'n str)> {
    let Node::Object(o) = node else {
        return None;
    };
    if o.len() != 3 {
        return None;
    }
    let (mut path, mut line, mut text) = (None, None, None);
    for (k, v) in o {
        match v {
            Node::Str(s) if HIT_PATH_KEYS.contains(&k.as_str()) => {
                path = Some((k.as_str(), s.as_str()))
            }
            Node::Literal(l)
                if HIT_LINE_KEYS.contains(&k.as_str()) && l.bytes().all(|b| b.is_ascii_digit()) =>
            {
                line = Some(*l)
            }
            Node::Str(s) if HIT_TEXT_KEYS.contains(&k.as_str()) => text = Some(s.as_str()),
            _ => return None,
        }
    }
    let (key, path) = path?;
    Some((key, path, line?, text?))
}

/// `items` written as grep prints its matches, one `path:line:text` per hit joined by `; `,
/// when every item is a hit (`hit`); the path is left out where the call's arguments named it
/// under the same key. None when an item is not a hit.
fn write_hits(out: &mut String, items: &[Node<'_>], shown: &ShownArgs) -> Option<()> {
    let hits = items.iter().map(hit).collect::<Option<Vec<_>>>()?;
    for (k, (key, path, line, text)) in hits.into_iter().enumerate() {
        if k > 0 {
            out.push_str("; ");
        }
        if !shown.has(key, path) {
            out.push_str(path);
            out.push(':');
        }
        out.push_str(line);
        out.push(':');
        // (A line's text is one line: a newline inside would be taken for the next hit's.)
        out.push_str(text.trim_end().replace(['\n', '\r'], " ").as_str());
    }
    Some(())
}

/// Keys a search result counts its hits under (hermes-agent's `total_count`, and the usual
/// other spellings).
fn is_count_key(key: &str) -> bool {
    key.contains("count") || key == "total" || key.starts_with("total_") || key.starts_with("num_")
}

/// The members of a result object that are a search's hits and, at most, their count: the hits
/// alone, as grep prints them (`write_hits`). The count says nothing the hits do not, and the
/// key and the bracket took the head of a clipped result (`total_count=2, matches=[1135…`),
/// where the first hit's line number and text belong. None (nothing written) otherwise: another
/// member, a count that differs from the hits shown (a capped search keeps it), no hits.
fn write_bare_hits<'i, 'n: 'i>(
    out: &mut String,
    members: impl Iterator<Item = &'i (String, Node<'n>)> + Clone,
    shown: &ShownArgs,
) -> Option<()> {
    let mut hits = None;
    for (key, v) in members.clone() {
        match v {
            Node::Array(items) if hits.is_none() && !items.is_empty() => hits = Some(items),
            Node::Literal(_) if is_count_key(key) => {}
            _ => return None,
        }
    }
    let hits = hits?;
    let n = hits.len().to_string();
    let mut counts = members.filter_map(|(_, v)| match v {
        Node::Literal(l) => Some(*l),
        _ => None,
    });
    if counts.any(|l| l != n) {
        return None;
    }
    write_hits(out, hits, shown)
}

fn scalar_text(out: &mut String, s: &str) {
    if s.is_empty() || s.trim() != s || s.contains(NEEDS_QUOTES) {
        push_json_string(out, s);
    } else {
        out.push_str(s);
    }
}

/// The keys every item of `items` has, in order, when all are objects with the same keys
/// (two items at least).
fn shared_keys<'n>(items: &'n [Node<'_>]) -> Option<Vec<&'n str>> {
    if items.len() < 2 {
        return None;
    }
    let Node::Object(first) = &items[0] else {
        return None;
    };
    if first.is_empty() {
        return None;
    }
    let keys: Vec<&str> = first.iter().map(|(k, _)| k.as_str()).collect();
    let same = items.iter().all(|n| match n {
        Node::Object(o) => {
            o.len() == keys.len() && o.iter().zip(&keys).all(|((k, _), want)| k == want)
        }
        _ => false,
    });
    same.then_some(keys)
}

fn write(out: &mut String, node: &Node<'_>, shown: &ShownArgs) {
    match node {
        Node::Literal(l) => out.push_str(l),
        Node::Str(s) => scalar_text(out, s),
        Node::Object(items) => {
            out.push('{');
            pairs(out, items, shown);
            out.push('}');
        }
        Node::Array(items) => {
            out.push('[');
            // (`write_hits` writes nothing when an item is not a hit.)
            if items.is_empty() || write_hits(out, items, shown).is_none() {
                write_items(out, items, shown);
            }
            out.push(']');
        }
    }
}

/// An array's items: a table when they are objects that share their keys (the keys once, then
/// each object's values), else each as it is.
fn write_items(out: &mut String, items: &[Node<'_>], shown: &ShownArgs) {
    let Some(keys) = shared_keys(items) else {
        for (k, item) in items.iter().enumerate() {
            if k > 0 {
                out.push_str(", ");
            }
            write(out, item, shown);
        }
        return;
    };
    for (k, key) in keys.iter().enumerate() {
        if k > 0 {
            out.push('|');
        }
        scalar_text(out, key);
    }
    for item in items {
        out.push_str("; ");
        if let Node::Object(o) = item {
            for (k, (_, v)) in o.iter().enumerate() {
                if k > 0 {
                    out.push('|');
                }
                write(out, v, shown);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{compact, compact_for, ShownArgs};

    #[test]
    fn a_reservation_keeps_every_value_in_fewer_characters() {
        let raw = r#"{"reservation_id": "4OG6T3", "cabin": "basic_economy", "flights": [{"origin": "BOS", "destination": "SEA", "flight_number": "HAT006", "date": "2024-05-11", "price": 87}, {"origin": "SEA", "destination": "LAS", "flight_number": "HAT018", "date": "2024-05-11", "price": 96}], "insurance": "yes", "note": "paid, then changed", "empty": ""}"#;
        let c = compact(raw).unwrap();
        assert_eq!(
            c,
            "reservation_id=4OG6T3, cabin=basic_economy, flights=[origin|destination|flight_number|date|price; \
             BOS|SEA|HAT006|2024-05-11|87; SEA|LAS|HAT018|2024-05-11|96], insurance=yes, \
             note=\"paid, then changed\", empty=\"\""
        );
        assert!(c.len() * 4 < raw.len() * 3, "{} of {}", c.len(), raw.len());
    }

    #[test]
    fn a_result_leaves_out_the_pairs_that_echo_its_call() {
        let raw = r#"{"reservation_id": "4OG6T3", "user_id": "mia_li_3668", "cabin": "economy"}"#;
        let args: serde_json::Value =
            serde_json::from_str(r#"{"reservation_id": "4OG6T3", "user_id": "other_1"}"#).unwrap();
        let mut shown = ShownArgs::default();
        shown.add(args.as_object().unwrap());
        assert_eq!(
            compact_for(raw, &shown).unwrap(),
            "user_id=mia_li_3668, cabin=economy"
        );
        // A result that is nothing but the echo is shown as it is.
        let echo = r#"{"reservation_id": "4OG6T3"}"#;
        assert_eq!(compact_for(echo, &shown).unwrap(), "reservation_id=4OG6T3");
        // Nested pairs and non-string values are never taken for an echo.
        let nested = r#"{"r": {"reservation_id": "4OG6T3"}, "n": 1}"#;
        let n_args: serde_json::Value = serde_json::from_str(r#"{"n": 1}"#).unwrap();
        let mut n_shown = ShownArgs::default();
        n_shown.add(n_args.as_object().unwrap());
        assert_eq!(
            compact_for(nested, &n_shown).unwrap(),
            "r={reservation_id=4OG6T3}, n=1"
        );
    }

    #[test]
    fn a_result_leaves_out_any_shown_argument_of_the_same_key_only() {
        let mut shown = ShownArgs::default();
        for args in [
            r#"{"user_id": "u_1"}"#,
            r#"{"reservation_id": "R2", "n": 3}"#,
        ] {
            let v: serde_json::Value = serde_json::from_str(args).unwrap();
            shown.add(v.as_object().unwrap());
        }
        // The same value under another key is not an echo; a non-string argument never is.
        let raw = r#"{"reservation_id": "R2", "user_id": "u_1", "owner": "u_1", "n": "3"}"#;
        assert_eq!(compact_for(raw, &shown).unwrap(), "owner=u_1, n=3");
    }

    #[test]
    fn search_hits_are_written_as_grep_prints_them() {
        // hermes-agent's `search_files` result for a pattern searched in one file.
        let raw = r#"{"total_count": 2, "matches": [{"path": "django/forms/models.py", "line": 1149, "content": "class ModelChoiceIterator:"}, {"path": "django/forms/models.py", "line": 1161, "content": "class ModelChoiceIteratorValue:  "}]}"#;
        assert_eq!(
            compact(raw).unwrap(),
            "django/forms/models.py:1149:class ModelChoiceIterator:; \
             django/forms/models.py:1161:class ModelChoiceIteratorValue:"
        );
        // A count that is not the number of hits shown (a capped search) stays, with the key.
        let capped =
            r#"{"total_count": 40, "matches": [{"path": "a.py", "line": 3, "content": "x"}]}"#;
        assert_eq!(
            compact(capped).unwrap(),
            "total_count=40, matches=[a.py:3:x]"
        );
        let other = r#"{"total_count": 1, "truncated": true, "matches": [{"path": "a.py", "line": 3, "content": "x"}]}"#;
        assert_eq!(
            compact(other).unwrap(),
            "total_count=1, truncated=true, matches=[a.py:3:x]"
        );
        // The path the call searched is not repeated; another path is.
        let args: serde_json::Value =
            serde_json::from_str(r#"{"pattern": "Iterator", "path": "django/forms/models.py"}"#)
                .unwrap();
        let mut shown = ShownArgs::default();
        shown.add(args.as_object().unwrap());
        let mixed = r#"{"matches": [{"path": "django/forms/models.py", "line": 7, "content": "    x = 1"}, {"path": "a.py", "line": 9, "content": "y\nz"}]}"#;
        assert_eq!(
            compact_for(mixed, &shown).unwrap(),
            "7:    x = 1; a.py:9:y z"
        );
        // Objects that are not all hits (another key, a line that is no whole number) stay a
        // table.
        for other in [
            r#"[{"path": "a", "line": 1, "content": "x"}, {"path": "b", "line": 2.5, "content": "y"}]"#,
            r#"[{"path": "a", "line": 1, "content": "x", "col": 3}, {"path": "b", "line": 2, "content": "y", "col": 4}]"#,
        ] {
            assert!(
                compact(other).unwrap().starts_with("[path|line|content"),
                "{other}"
            );
        }
    }

    #[test]
    fn escapes_are_decoded_and_ambiguous_strings_quoted() {
        assert_eq!(
            compact(r#"["a\u00e9", "x\ny", "\ud83d\ude00", 1.5e3, null]"#).unwrap(),
            "[aé, \"x\\ny\", 😀, 1.5e3, null]"
        );
        assert_eq!(compact(r#"{"k": {"a": [1, 2]}}"#).unwrap(), "k={a=[1, 2]}");
    }

    #[test]
    fn text_that_is_not_one_json_document_is_left_alone() {
        for t in [
            "plain text",
            "{\"a\": 1} trailing",
            "{\"a\": }",
            "[1, 2",
            "{\"a\": tru}",
            "\"just a string\"",
        ] {
            assert!(compact(t).is_none(), "{t}");
        }
        let deep = "[".repeat(100) + &"]".repeat(100);
        assert!(compact(&deep).is_none());
    }
}
