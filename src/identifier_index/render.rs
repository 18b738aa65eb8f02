//! The index section written into a summary: the best identifiers that fit its tokens, one
//! line per kind (those the summary's own lines show left out: `Shown`).

use super::{Ident, Kind, INDEX_HEADING, KINDS};
use crate::estimate::Estimator;

/// The index section: the best identifiers that fit `max_tokens` (the estimator's), one line per
/// kind, items separated by `, ` (an item never holds a newline; `, ` inside an item is written
/// `,` so the list reads back). Empty when nothing fits.
pub fn render(idents: &[Ident], est: &Estimator, max_tokens: u64) -> String {
    render_priced(idents, &prices(idents, est), est, max_tokens)
}

/// Each identifier's tokens (`est.text` of its text), for `render_priced`.
pub fn prices(idents: &[Ident], est: &Estimator) -> Vec<f64> {
    idents.iter().map(|id| est.text(&id.text)).collect()
}

/// `render` with each identifier's tokens given (`prices`): a digest renders its index once per
/// packing (up to ten times) over the same identifiers.
pub fn render_priced(idents: &[Ident], prices: &[f64], est: &Estimator, max_tokens: u64) -> String {
    render_except(idents, prices, est, max_tokens, &[])
}

/// `render_priced` without the identifiers flagged in `shown` (`Shown::flags`: those the
/// summary's own lines already hold); a flag missing counts as not shown.
pub fn render_except(
    idents: &[Ident],
    prices: &[f64],
    est: &Estimator,
    max_tokens: u64,
    shown: &[bool],
) -> String {
    let budget = max_tokens as f64;
    let header = est.text(INDEX_HEADING) + 2.0;
    if budget <= header + 8.0 {
        return String::new();
    }
    let mut used = header;
    let mut chosen: Vec<&Ident> = Vec::new();
    let mut kinds_used = [false; KINDS.len()];
    for (k, (id, &tokens)) in idents.iter().zip(prices).enumerate() {
        if shown.get(k).copied().unwrap_or(false) {
            continue;
        }
        let line_cost = if kinds_used[id.kind as usize] {
            0.0
        } else {
            4.0
        };
        let cost = tokens + 1.0 + line_cost;
        if used + cost > budget {
            continue;
        }
        used += cost;
        kinds_used[id.kind as usize] = true;
        chosen.push(id);
    }
    if chosen.is_empty() {
        return String::new();
    }
    // Written straight into one string (an item copied, then joined, cost an allocation per
    // identifier: a digest renders its index once per packing it tries).
    let mut out = String::with_capacity(
        INDEX_HEADING.len() + chosen.iter().map(|i| i.text.len() + 3).sum::<usize>() + 128,
    );
    out.push_str(INDEX_HEADING);
    for (kind, label) in KINDS {
        if !kinds_used[kind as usize] {
            continue;
        }
        out.push_str("\n- ");
        out.push_str(label);
        out.push_str(": ");
        // Errors hold commas and colons of their own: one per line is not worth its tokens,
        // so they are separated by ` | `.
        let sep = if kind == Kind::Error { " | " } else { ", " };
        for (n, i) in chosen.iter().filter(|i| i.kind == kind).enumerate() {
            if n > 0 {
                out.push_str(sep);
            }
            // A comma-space inside an item would read as two items in a `, ` list; an error's
            // list is split by ` | `, so its text stays as it was written (an error is quoted
            // to be matched: "22 queries executed, 25 expected").
            if kind == Kind::Error {
                out.push_str(&i.text);
            } else {
                push_without_comma_spaces(&mut out, &i.text);
            }
        }
    }
    out
}

/// `text` with each `, ` written `,` (as `str::replace` writes it) appended to `out`.
fn push_without_comma_spaces(out: &mut String, text: &str) {
    let mut rest = text;
    while let Some(at) = memchr::memchr(b',', rest.as_bytes()) {
        out.push_str(&rest[..=at]);
        let skip = if rest.as_bytes().get(at + 1) == Some(&b' ') {
            2
        } else {
            1
        };
        rest = &rest[at + skip..];
    }
    out.push_str(rest);
}

#[cfg(test)]
mod tests {
    use super::push_without_comma_spaces;

    #[test]
    fn comma_spaces_are_written_as_replace_writes_them() {
        for t in [
            "",
            "a",
            ", ",
            ",",
            ", , ",
            ",, ",
            "a, b,c ,d,  e",
            ",,,",
            "x, ",
            "é, ü,日",
        ] {
            let mut out = String::from(">");
            push_without_comma_spaces(&mut out, t);
            assert_eq!(out, format!(">{}", t.replace(", ", ",")), "{t:?}");
        }
    }
}
