//! JSON string literals: their size and their text, written the way httpx-based SDKs send them
//! (compact escapes, non-ASCII kept as UTF-8). The ground floor shared by wire sizes, edits,
//! `shrink_json` and the exact counter's tool rendering.

/// Bytes of `s` as a JSON string literal, quotes included.
pub fn json_string_len(s: &str) -> usize {
    let mut n = s.len() + 2;
    for &b in s.as_bytes() {
        n += match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0C => 1,
            0x00..=0x1F => 5,
            _ => 0,
        };
    }
    n
}

/// Append `s` as a JSON string literal (compact escapes, non-ASCII kept as UTF-8).
pub fn push_json_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let mut start = 0;
    let bytes = s.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let esc: Option<&str> = match b {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            b'\n' => Some("\\n"),
            b'\r' => Some("\\r"),
            b'\t' => Some("\\t"),
            0x08 => Some("\\b"),
            0x0C => Some("\\f"),
            0x00..=0x1F => None,
            _ => continue,
        };
        out.push_str(&s[start..i]);
        match esc {
            Some(e) => out.push_str(e),
            None => out.push_str(&format!("\\u{:04x}", b)),
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}
