//! The index section read back from a summary: where it starts, what it lists, and the
//! summary without it (a merge carries a previous index and reads the rest as the summary).

use super::{Kind, INDEX_HEADING, KINDS};
/// Where `summary`'s index section starts: the last line that is the heading alone. A tool
/// output quoted in a call line may hold the heading's text mid-line (a fetched page planted
/// `## Identifier index`); once a summary whose lines show every identifier has no index of
/// its own, the last occurrence of that text anywhere would cut the carried summary there.
pub fn index_at(summary: &str) -> Option<usize> {
    let mut end = summary.len();
    while let Some(at) = summary[..end].rfind(INDEX_HEADING) {
        let line_start = at == 0 || summary.as_bytes()[at - 1] == b'\n';
        let rest = &summary[at + INDEX_HEADING.len()..];
        let line_end = rest.split('\n').next().unwrap_or("").trim().is_empty();
        if line_start && line_end {
            return Some(at);
        }
        end = at;
    }
    None
}

/// The identifiers of an index section found in `summary` (the last one written by contextfold).
pub fn parse(summary: &str) -> Vec<(Kind, String)> {
    let mut out = Vec::new();
    let Some(at) = index_at(summary) else {
        return out;
    };
    for line in summary[at + INDEX_HEADING.len()..].lines().skip(1) {
        let Some(rest) = line.strip_prefix("- ") else {
            if line.trim().is_empty() {
                continue;
            }
            break;
        };
        let Some((label, items)) = rest.split_once(": ") else {
            break;
        };
        let Some(&(kind, _)) = KINDS.iter().find(|(_, l)| *l == label) else {
            break;
        };
        let sep = if kind == Kind::Error { " | " } else { ", " };
        for item in items.split(sep) {
            let item = item.trim();
            if !item.is_empty() {
                out.push((kind, item.to_string()));
            }
        }
    }
    out
}

/// The summary without its index section (what a merge reads as the summary's own text).
pub fn strip(summary: &str) -> &str {
    match index_at(summary) {
        Some(at) => summary[..at].trim_end(),
        None => summary,
    }
}
