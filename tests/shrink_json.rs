//! Properties of shrink_json over generated documents: the output parses (checked with an
//! independent recursive checker), fits when feasible, keeps the root's key set, is idempotent.

use contextfold::shrink_json::{shrink_json, MIN_MAX_CHARS};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum V {
    Null,
    Bool(bool),
    Num(i64),
    Str(String),
    Arr(Vec<V>),
    Obj(Vec<(String, V)>),
}

fn esc(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            // Astral characters written as escaped surrogate pairs half of the time.
            c if (c as u32) > 0xFFFF && s.len().is_multiple_of(2) => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    o.push_str(&format!("\\u{:04x}", u));
                }
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn render(v: &V) -> String {
    match v {
        V::Null => "null".into(),
        V::Bool(b) => b.to_string(),
        V::Num(n) => n.to_string(),
        V::Str(s) => esc(s),
        V::Arr(a) => format!("[{}]", a.iter().map(render).collect::<Vec<_>>().join(",")),
        V::Obj(o) => format!(
            "{{{}}}",
            o.iter()
                .map(|(k, v)| format!("{}:{}", esc(k), render(v)))
                .collect::<Vec<_>>()
                .join(",")
        ),
    }
}

fn value() -> impl Strategy<Value = V> {
    let leaf = prop_oneof![
        Just(V::Null),
        any::<bool>().prop_map(V::Bool),
        any::<i64>().prop_map(V::Num),
        "[a-z/._]{0,20}".prop_map(V::Str),
        any::<String>().prop_map(V::Str),
        ("[ -~]{0,40}", 1usize..300).prop_map(|(s, k)| V::Str(s.repeat(k))),
    ];
    leaf.prop_recursive(6, 200, 12, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..12).prop_map(V::Arr),
            prop::collection::vec(("[a-z_]{1,10}", inner), 0..8).prop_map(V::Obj),
        ]
    })
}

/// Independent validity check: a small recursive-descent JSON parser (inputs are shallow).
fn parses(s: &str) -> bool {
    fn ws(b: &[u8], i: &mut usize) {
        while *i < b.len() && b" \t\n\r".contains(&b[*i]) {
            *i += 1;
        }
    }
    fn val(b: &[u8], i: &mut usize, depth: usize) -> bool {
        if depth > 2000 {
            return false;
        }
        ws(b, i);
        match b.get(*i) {
            Some(b'{') | Some(b'[') => {
                let close = if b[*i] == b'{' { b'}' } else { b']' };
                let obj = close == b'}';
                *i += 1;
                ws(b, i);
                if b.get(*i) == Some(&close) {
                    *i += 1;
                    return true;
                }
                loop {
                    if obj {
                        ws(b, i);
                        if b.get(*i) != Some(&b'"') || !string(b, i) {
                            return false;
                        }
                        ws(b, i);
                        if b.get(*i) != Some(&b':') {
                            return false;
                        }
                        *i += 1;
                    }
                    if !val(b, i, depth + 1) {
                        return false;
                    }
                    ws(b, i);
                    match b.get(*i) {
                        Some(b',') => *i += 1,
                        Some(c) if *c == close => {
                            *i += 1;
                            return true;
                        }
                        _ => return false,
                    }
                }
            }
            Some(b'"') => string(b, i),
            Some(_) => {
                let s = *i;
                while *i < b.len() && !b",]} \n\t\r".contains(&b[*i]) {
                    *i += 1;
                }
                let t = std::str::from_utf8(&b[s..*i]).unwrap_or("");
                matches!(t, "true" | "false" | "null") || t.parse::<f64>().is_ok()
            }
            None => false,
        }
    }
    fn string(b: &[u8], i: &mut usize) -> bool {
        *i += 1;
        while *i < b.len() {
            match b[*i] {
                b'"' => {
                    *i += 1;
                    return true;
                }
                b'\\' => {
                    if b.get(*i + 1) == Some(&b'u') {
                        let h = &b[(*i + 2).min(b.len())..(*i + 6).min(b.len())];
                        if h.len() != 4 || !h.iter().all(u8::is_ascii_hexdigit) {
                            return false;
                        }
                        // A high surrogate must be followed by a low one.
                        let v = u16::from_str_radix(std::str::from_utf8(h).unwrap(), 16).unwrap();
                        if (0xD800..0xDC00).contains(&v) && !b[*i + 6..].starts_with(b"\\u") {
                            return false;
                        }
                        *i += 6;
                    } else {
                        *i += 2;
                    }
                }
                c if c < 0x20 => return false,
                _ => *i += 1,
            }
        }
        false
    }
    let b = s.as_bytes();
    let mut i = 0;
    val(b, &mut i, 0) && {
        ws(b, &mut i);
        i == b.len()
    }
}

fn root_keys(s: &str) -> Vec<String> {
    // Top-level keys of an object rendered by `render` (keys are [a-z_]).
    let mut keys = Vec::new();
    let b = s.as_bytes();
    let (mut depth, mut in_str, mut i) = (0i32, false, 0usize);
    while i < b.len() {
        let c = b[i];
        if in_str {
            if c == b'\\' {
                i += 2;
                continue;
            }
            if c == b'"' {
                in_str = false;
            }
        } else if c == b'"' {
            if depth == 1 && (b[i - 1] == b'{' || b[i - 1] == b',') {
                let end = s[i + 1..].find('"').unwrap() + i + 1;
                if b.get(end + 1) == Some(&b':') {
                    keys.push(s[i + 1..end].to_string());
                }
            }
            in_str = true;
        } else if c == b'{' || c == b'[' {
            depth += 1;
        } else if c == b'}' || c == b']' {
            depth -= 1;
        }
        i += 1;
    }
    keys
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(50_000))]

    #[test]
    fn output_parses_fits_keeps_keys_and_is_idempotent(v in value(), max in MIN_MAX_CHARS..2_000usize) {
        let text = render(&v);
        prop_assert!(parses(&text), "generator produced invalid JSON: {}", text);
        let out = shrink_json(&text, max);
        prop_assert!(parses(&out), "invalid output: {}", out);
        prop_assert!(out.chars().count() <= max, "{} > {}", out.chars().count(), max);
        prop_assert_eq!(shrink_json(&out, max), out.clone());
        if text.chars().count() <= max {
            prop_assert_eq!(&out, &text);
        }
        if let V::Obj(_) = v {
            // Keys survive whenever the skeleton of the root fits (no collapse of the root; a
            // collapsed root object is `{"_cut":"…[object of N keys cut]…"}`).
            prop_assert!(out.starts_with('{'), "the root object became {}", out);
            if !out.starts_with("{\"_cut\":\"…[object of ") {
                prop_assert_eq!(root_keys(&out), root_keys(&text));
            }
        }
    }

    #[test]
    fn arbitrary_text_always_becomes_valid_json(s in any::<String>(), max in MIN_MAX_CHARS..500usize) {
        // Short text too: invalid JSON that already fits must come out as valid JSON.
        let out = shrink_json(&s, max);
        prop_assert!(out.chars().count() <= max);
        prop_assert!(parses(&out), "{}", out);
    }
}

#[test]
fn hundred_megabyte_input_completes() {
    let item = "{\"path\":\"src/a.py\",\"text\":\"some line of code\\n\"},";
    let mut s = String::from("[");
    while s.len() < 100_000_000 {
        s.push_str(item);
    }
    s.push_str("null]");
    let out = shrink_json(&s, 2_000);
    assert!(parses(&out) && out.chars().count() <= 2_000);
}
