//! Property tests of `shrink_json` against an independent oracle (serde_json): generated
//! documents in every form (spaced, ASCII-escaped, cut mid-value), structure compared value by value.
//!
//! Case counts (on top of `tests/shrink_json.rs` and the hypothesis suite):
//! `valid_documents` 40,000, `cut_documents` 10,000, `whitespace_and_ascii_forms` 10,000.
//! `PROPTEST_CASES` overrides them all.

use contextfold::shrink_json::{shrink_json, shrink_json_cow, MIN_MAX_CHARS, SHORT_STRING};
use proptest::prelude::*;
use serde_json::Value;
use std::borrow::Cow;

fn cases(n: u32) -> ProptestConfig {
    let n = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(n);
    ProptestConfig {
        cases: n,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// --- generation ----------------------------------------------------------------------------

/// Strings mixing ASCII, escapes, 2-4 byte UTF-8 and astral characters (surrogate pairs when
/// ASCII-escaped), short and long.
fn string() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[a-z /._-]{0,12}",
        1 => "[\"\\\\\n\t\u{1}\u{1f}]{1,3}",
        1 => "[é中€ß]{1,4}",
        1 => "[😀🎉𝄞]{1,3}",
        1 => Just("…[12 chars cut]…".to_string()),
    ];
    prop::collection::vec(piece, 0..12).prop_map(|v| v.concat())
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        string().prop_map(Value::String),
        // Long strings: what shrinking is for.
        (string(), 2usize..30).prop_map(|(s, k)| Value::String(s.repeat(k))),
    ];
    leaf.prop_recursive(5, 64, 10, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            // Arrays long enough for elision.
            prop::collection::vec(inner.clone(), 8..30).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,10}|[é中😀\"\\\\]{1,3}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Serialize with optional spacing and optional ASCII escaping (`\uXXXX`, surrogate pairs),
/// the way Python's json.dumps does by default.
fn to_text(v: &Value, spaced: bool, ascii: bool) -> String {
    let compact = serde_json::to_string(v).unwrap();
    let spaced_text = if spaced {
        serde_json::to_string_pretty(v).unwrap()
    } else {
        compact
    };
    if !ascii {
        return spaced_text;
    }
    let mut out = String::with_capacity(spaced_text.len());
    for c in spaced_text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut buf = [0u16; 2];
            for u in c.encode_utf16(&mut buf) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    out
}

// --- checks --------------------------------------------------------------------------------

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// `out` is `orig`, or a head and a tail of it around one `…[N chars cut]…` marker.
fn is_cut_of(out: &str, orig: &str) -> bool {
    if out == orig {
        return true;
    }
    let n_orig = chars(orig);
    let mut from = 0;
    while let Some(p) = out[from..].find("…[").map(|p| p + from) {
        let Some(rest) = out[p..].strip_prefix("…[cut ") else {
            from = p + "…".len();
            continue;
        };
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if let (Ok(n), Some(tail)) = (
            digits.parse::<usize>(),
            rest[digits.len()..].strip_prefix(" chars]…"),
        ) {
            let head = &out[..p];
            if orig.starts_with(head)
                && orig.ends_with(tail)
                && chars(head) + chars(tail) + n == n_orig
            {
                return true;
            }
        }
        from = p + "…".len();
    }
    false
}

/// Same structure: same keys in the same order, same array lengths, same atoms; strings kept
/// or cut with a marker.
fn same_shape(out: &Value, orig: &Value) -> Result<(), String> {
    // Iterative: explicit stack of pairs.
    let mut stack = vec![(out, orig)];
    while let Some((a, b)) = stack.pop() {
        match (a, b) {
            (Value::String(x), Value::String(y)) => {
                if !is_cut_of(x, y) {
                    return Err(format!("{x:?} is not a cut of {y:?}"));
                }
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
                stack.extend(x.iter().zip(y));
            }
            (Value::Object(x), Value::Object(y)) if x.keys().eq(y.keys()) => {
                stack.extend(x.values().zip(y.values()));
            }
            _ if a == b => {}
            _ => return Err(format!("{a} differs from {b}")),
        }
    }
    Ok(())
}

/// Characters of the "skeleton": the compact text with every string value longer than
/// SHORT_STRING characters (of JSON text) cut to SHORT_STRING. When it fits, shrinking only
/// cuts strings.
fn skeleton_chars(text: &str) -> usize {
    // Token-level scan of valid JSON: track whether a string is a key (followed by ':').
    let b = text.as_bytes();
    let mut total = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b' ' | b'\n' | b'\r' | b'\t' => i += 1,
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let w = chars(&text[start..j]);
                let mut k = j + 1;
                while k < b.len() && matches!(b[k], b' ' | b'\n' | b'\r' | b'\t') {
                    k += 1;
                }
                let is_key = b.get(k) == Some(&b':');
                total += 2 + if is_key { w } else { w.min(SHORT_STRING) };
                i = j + 1;
            }
            _ => {
                total += 1;
                i += 1;
            }
        }
    }
    total
}

fn check_valid(text: &str, max: usize) -> Result<(), TestCaseError> {
    // Compare with the oracle's parse of the text (not the generated value): serde_json's
    // default float parsing may differ from the generator's f64 in the last place.
    let v: Value = serde_json::from_str(text).unwrap();
    let v = &v;
    let out = shrink_json(text, max);
    let parsed: Value =
        serde_json::from_str(&out).map_err(|e| TestCaseError::fail(format!("{e}: {out}")))?;
    prop_assert!(chars(&out) <= max, "{} > {max}: {out}", chars(&out));
    prop_assert_eq!(shrink_json(&out, max), out.clone(), "not idempotent");
    // The root keeps its type (an Anthropic tool_use input must be an object).
    prop_assert_eq!(
        std::mem::discriminant(&parsed),
        std::mem::discriminant(v),
        "root type changed: {}",
        out
    );
    if chars(text) <= max {
        prop_assert!(matches!(shrink_json_cow(text, max), Cow::Borrowed(_)));
        prop_assert_eq!(&out, text);
    }
    if skeleton_chars(text) <= max {
        same_shape(&parsed, v).map_err(TestCaseError::fail)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(cases(40_000))]
    #[test]
    fn valid_documents(v in value(), max in prop_oneof![64usize..200, 200usize..3000]) {
        let text = to_text(&v, false, false);
        check_valid(&text, max)?;
    }
}

proptest! {
    #![proptest_config(cases(10_000))]
    #[test]
    fn whitespace_and_ascii_forms(v in value(), max in 64usize..2000, spaced: bool) {
        let text = to_text(&v, spaced, true);
        check_valid(&text, max)?;
    }
}

proptest! {
    #![proptest_config(cases(10_000))]
    #[test]
    fn cut_documents(v in value(), cut in 0.0f64..1.0, max in 64usize..1000) {
        // A document someone already sliced mid-value, at a character boundary.
        let text = to_text(&v, false, false);
        let n = chars(&text);
        let keep = ((n as f64) * cut) as usize;
        let sliced: String = text.chars().take(keep).collect();
        let out = shrink_json(&sliced, max);
        let parsed: Value = serde_json::from_str(&out)
            .map_err(|e| TestCaseError::fail(format!("{e}: {out}")))?;
        prop_assert!(chars(&out) <= max);
        prop_assert_eq!(shrink_json(&out, max), out.clone());
        if serde_json::from_str::<Value>(&sliced).is_err() {
            prop_assert_eq!(&parsed["original_chars"], &Value::from(chars(&sliced)));
            let preview = parsed["invalid_json_preview"].as_str().unwrap();
            let head = preview.strip_suffix('…').unwrap_or(preview);
            prop_assert!(sliced.starts_with(head));
        }
    }
}

#[test]
fn depth_100k_and_big_inputs_do_not_overflow() {
    let depth = 100_000;
    for (open, close) in [("[", "]"), ("{\"k\":", "}")] {
        let s = format!("{}0{}", open.repeat(depth), close.repeat(depth));
        let out = shrink_json(&s, 200);
        assert!(chars(&out) <= 200);
        serde_json::from_str::<Value>(&out).unwrap();
        // Unbalanced: invalid, wrapped.
        let bad = format!("{}0", open.repeat(depth));
        assert!(shrink_json(&bad, 200).starts_with("{\"invalid_json_preview\""));
    }
    // 8 MB of mixed content in the debug build (100 MB runs in the Python suite, release).
    let item = "{\"path\":\"/a/b.py\",\"text\":\"lorem ipsum dolor sit amet \\n\",\"n\":12345},";
    let s = format!("[{}1]", item.repeat(8_000_000 / item.len()));
    let out = shrink_json(&s, 2_000);
    assert!(chars(&out) <= 2_000);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v[0]["path"], "/a/b.py");
}

#[test]
fn minimum_is_enforced() {
    let s = format!("{{\"a\":\"{}\"}}", "x".repeat(500));
    assert!(chars(&shrink_json(&s, 0)) <= MIN_MAX_CHARS);
}

#[test]
fn the_generator_reaches_every_stage() {
    // Guard against vacuous properties: generated documents hit each stage of the shrinker.
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut strings, mut arrays, mut depth, mut fits) = (0, 0, 0, 0);
    for k in 0..2_000usize {
        let v = value().new_tree(&mut runner).unwrap().current();
        let text = to_text(&v, false, false);
        let out = shrink_json(&text, 64 + (k * 7) % 600);
        if out == text {
            fits += 1;
        }
        strings += usize::from(out.contains("…[cut "));
        arrays += usize::from(out.contains(" items cut]…\"") && !out.contains("\"…[array of"));
        depth += usize::from(out.contains("\"…[object of") || out.contains("\"…[array of"));
    }
    assert!(
        fits > 100 && strings > 100 && arrays > 100 && depth > 30,
        "fits {fits}, strings {strings}, arrays {arrays}, depth {depth}"
    );
}
