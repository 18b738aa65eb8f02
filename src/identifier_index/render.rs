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
    let mut out = String::from(INDEX_HEADING);
    for (kind, label) in KINDS {
        let items: Vec<String> = chosen
            .iter()
            .filter(|i| i.kind == kind)
            // A comma-space inside an item would read as two items in a `, ` list; an error's
            // list is split by ` | `, so its text stays as it was written (an error is quoted
            // to be matched: "22 queries executed, 25 expected").
            .map(|i| {
                if kind == Kind::Error {
                    i.text.clone()
                } else {
                    i.text.replace(", ", ",")
                }
            })
            .collect();
        if items.is_empty() {
            continue;
        }
        out.push_str("\n- ");
        out.push_str(label);
        out.push_str(": ");
        // Errors hold commas and colons of their own: one per line is not worth its tokens,
        // so they are separated by ` | `.
        out.push_str(&items.join(if kind == Kind::Error { " | " } else { ", " }));
    }
    out
}
