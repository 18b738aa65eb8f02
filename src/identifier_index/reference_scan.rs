//! The scan in its plainest form (a list of every token, each predicate a pass of its own over
//! the token's bytes, every line split): the reference the byte-class scan must agree with,
//! identifier for identifier and in the same order.

use super::classify::{
    error_entry, has_scheme, is_config_key, is_number, is_record_id, is_token_char, is_unit,
    is_uuid,
};
use super::{Collector, Kind};

const PATH_EXTENSIONS: [&str; 30] = [
    "py", "rs", "js", "ts", "tsx", "jsx", "json", "md", "txt", "toml", "yaml", "yml", "cfg", "ini",
    "c", "h", "cc", "cpp", "hpp", "go", "java", "sh", "html", "css", "rst", "lock", "xml", "sql",
    "log", "csv",
];

fn is_path(t: &str) -> bool {
    if t.len() < 3 || t.len() > 160 || t.starts_with("//") || t.contains("://") {
        return false;
    }
    let rooted = t.starts_with('/') || t.starts_with('~') || t.starts_with('.') || t.ends_with('/');
    let t = t.trim_start_matches("./");
    let valid = t
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'/' | b'-' | b'~'));
    if !valid {
        return false;
    }
    let has_ext = t.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty() && !stem.ends_with('/') && PATH_EXTENSIONS.contains(&ext)
    });
    let segments: Vec<&str> = t.split('/').filter(|s| !s.is_empty()).collect();
    let named = segments
        .iter()
        .filter(|s| s.bytes().any(|c| c.is_ascii_alphabetic()))
        .count();
    let dir_like = t.contains('/')
        && named >= 2
        && segments.iter().all(|s| s.len() >= 2)
        && (rooted || segments.len() >= 3);
    has_ext || dir_like
}

fn is_symbol(t: &str) -> bool {
    let core = t.strip_suffix("()").unwrap_or(t);
    if core.len() < 4 || core.len() > 80 {
        return false;
    }
    if !core
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
        || core.starts_with('.')
        || core.ends_with('.')
        || core.bytes().next().is_some_and(|c| c.is_ascii_digit())
        || !core.bytes().any(|c| c.is_ascii_alphabetic())
    {
        return false;
    }
    if t.ends_with("()") {
        return true;
    }
    let dotted = core.contains('.')
        && core
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().any(|c| c.is_ascii_alphabetic()))
        && core.split('.').count() >= 2
        && core.bytes().any(|c| c.is_ascii_lowercase());
    let snake = core.contains('_') && core.trim_matches('_').contains('_')
        || core.starts_with('_') && core.len() > 4;
    let humps = core
        .as_bytes()
        .windows(2)
        .filter(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase())
        .count();
    let camel = core.bytes().next().is_some_and(|c| c.is_ascii_uppercase()) && humps >= 1;
    dotted || snake || camel
}

fn trim_token(t: &str) -> &str {
    // A leading `./` or `../` belongs to the path.
    let mut s = t;
    while !(s.starts_with("./") || s.starts_with("../")) {
        match s.strip_prefix(['.', ',', ':', '=', '?', '&', '-', '+']) {
            Some(rest) => s = rest,
            None => break,
        }
    }
    s.trim_end_matches(['.', ',', ':', '=', '?', '&', ';', '-', '+'])
}

fn is_hex(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The runs of identifier characters of `text`, each with whether it is ASCII letters only.
fn tokens_of(text: &str) -> Vec<(&str, bool)> {
    let b = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let ch = text[i..].chars().next().unwrap_or(' ');
        if !is_token_char(ch) {
            i += ch.len_utf8();
            continue;
        }
        let start = i;
        let mut letters = true;
        while i < b.len() {
            let ch = text[i..].chars().next().unwrap_or(' ');
            if !is_token_char(ch) {
                break;
            }
            letters &= ch.is_ascii_alphabetic();
            i += ch.len_utf8();
        }
        tokens.push((&text[start..i], letters));
    }
    tokens
}

pub(super) fn scan(c: &mut Collector, text: &str, weight: f64, recency: f64) {
    scan_error_lines(c, text, weight, recency);
    let tokens = tokens_of(text);
    for (k, &(raw, plain)) in tokens.iter().enumerate() {
        if plain {
            if raw.as_bytes()[0].is_ascii_uppercase() && is_symbol(raw) {
                c.add(Kind::Symbol, raw, weight, recency, false);
            }
            continue;
        }
        let whole = has_scheme(raw) || is_number(trim_token(raw));
        let seps: &[char] = if whole { &[] } else { &[',', '=', ':'] };
        for piece in raw.split(seps) {
            let t = trim_token(piece);
            if t.is_empty() || (t.len() < 2 && !t.bytes().all(|c| c.is_ascii_digit())) {
                continue;
            }
            if t.bytes().all(|c| c.is_ascii_alphabetic()) {
                if is_symbol(t) {
                    c.add(Kind::Symbol, t, weight, recency, false);
                }
                continue;
            }
            classify(c, t, tokens.get(k + 1).map(|&(n, _)| n), weight, recency);
        }
    }
}

fn scan_error_lines(c: &mut Collector, text: &str, weight: f64, recency: f64) {
    for line in text.lines() {
        let l = line.trim();
        if let Some((head, rest)) = l.split_once(": ") {
            let name = head.rsplit('.').next().unwrap_or(head);
            let is_err = !name.is_empty()
                && name.len() <= 60
                && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
                && (name.ends_with("Error")
                    || name.ends_with("Exception")
                    || matches!(name, "FAIL" | "FAILED" | "FAILURE")
                    || ["FAIL", "ERROR"].iter().any(|w| rest.starts_with(w)))
                && !rest.trim().is_empty();
            if is_err {
                let shown = error_entry(l, head, rest);
                c.add(Kind::Error, &shown, weight + 1.0, recency, false);
            }
        }
    }
}

fn classify(c: &mut Collector, t: &str, next: Option<&str>, weight: f64, recency: f64) {
    if t.starts_with("http://") || t.starts_with("https://") {
        let url = t.trim_end_matches([')', '.']);
        c.add(Kind::Url, url, weight, recency, false);
    } else if is_uuid(t)
        || (t.len() >= 7
            && t.len() <= 64
            && is_hex(t)
            && t.bytes().any(|c| c.is_ascii_digit())
            && t.bytes().any(|c| c.is_ascii_alphabetic()))
    {
        c.add(Kind::Hash, t, weight, recency, false);
    } else if let Some(n) = t
        .strip_prefix('#')
        .filter(|n| (2..=7).contains(&n.len()) && n.bytes().all(|c| c.is_ascii_digit()))
    {
        c.add(Kind::Issue, &format!("#{n}"), weight, recency, false);
    } else if is_path(t) {
        c.add(
            Kind::Path,
            t.trim_start_matches("./"),
            weight,
            recency,
            false,
        );
    } else if is_number(t) {
        if t.starts_with('$') {
            let amount = t.trim_end_matches(['.', ',']);
            c.add(Kind::Quantity, amount, weight, recency, false);
        } else if let Some(unit) = next.map(trim_token).filter(|u| is_unit(u)) {
            c.add(
                Kind::Quantity,
                &format!("{t} {unit}"),
                weight,
                recency,
                false,
            );
        }
    } else if is_number(t.trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == '%'))
        && is_unit(t.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.'))
    {
        c.add(Kind::Quantity, t, weight, recency, false);
    } else if is_record_id(t) {
        c.add(Kind::Id, t, weight, recency, false);
    } else if is_config_key(t) {
        c.add(Kind::Key, t, weight, recency, false);
    } else if is_symbol(t) {
        c.add(Kind::Symbol, t, weight, recency, false);
    }
}
