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

/// Whether any of the 8 bytes of `w` must be escaped in a JSON string (a control character, `"`
/// or `\\`): the usual has-less-than / has-zero-byte bit tricks, exact for "any".
#[inline(always)]
fn word_needs_escape(w: u64) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let control = w.wrapping_sub(0x20 * LO) & !w & HI;
    let quote = w ^ (u64::from(b'"') * LO);
    let backslash = w ^ (u64::from(b'\\') * LO);
    let quote = quote.wrapping_sub(LO) & !quote & HI;
    let backslash = backslash.wrapping_sub(LO) & !backslash & HI;
    (control | quote | backslash) != 0
}

/// Append `s` as a JSON string literal (compact escapes, non-ASCII kept as UTF-8).
pub fn push_json_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let mut start = 0;
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        // Whole words with nothing to escape are skipped (the exact counter escapes every tool
        // output of a parallel batch: most of their bytes need nothing).
        if let Some(word) = bytes.get(i..i + 8) {
            let w = u64::from_le_bytes(word.try_into().expect("8 bytes"));
            if !word_needs_escape(w) {
                i += 8;
                continue;
            }
        }
        let b = bytes[i];
        i += 1;
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
        let i = i - 1;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn check(s: &str) {
        let mut out = String::new();
        push_json_string(&mut out, s);
        // serde_json writes the same compact escapes (`\u001f` for the other controls).
        assert_eq!(out, serde_json::to_string(s).unwrap(), "{s:?}");
        assert_eq!(json_string_len(s), out.len(), "{s:?}");
    }

    #[test]
    fn every_byte_in_every_position_of_a_word_is_escaped_as_json() {
        for b in 0u8..0x80 {
            for at in 0..17 {
                let mut s = "abcdefghijklmnopq".to_string();
                s.replace_range(at..at + 1, &char::from(b).to_string());
                check(&s);
            }
        }
        check("ünïcödé \"quoted\" \\ back\tslash\n\u{7f}\u{80}\u{1f}😀 and more text after it");
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_escaped_as_json(s in "[\\s\\S]{0,80}|[a-z\"\\\\\\x00-\\x1f ]{0,80}") {
            check(&s);
        }
    }
}
