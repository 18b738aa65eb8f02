//! How contextfold marks the summaries it writes, and the text of one in a message. The marker
//! is what a summary looks like on the wire; whether a later compaction trusts a message that
//! carries it is `summary_trust`'s business (by where the library put it and its hash).

use std::borrow::Cow;

use crate::message::{Content, Message, Part};

/// First line of every summary contextfold writes; how a later compaction recognises it.
pub const SUMMARY_OPEN: &str = "<contextfold:summary>";
/// Last line of a summary.
pub const SUMMARY_CLOSE: &str = "</contextfold:summary>";

/// The text of contextfold's own summary in a message (a text starting with the marker).
pub fn own_summary<'m>(m: &'m Message<'_>) -> Option<&'m str> {
    let inner = |t: &'m str| -> Option<&'m str> {
        let rest = t.trim_start().strip_prefix(SUMMARY_OPEN)?;
        let body = match rest.find(SUMMARY_CLOSE) {
            Some(end) => &rest[..end],
            None => rest,
        };
        Some(body.trim_matches('\n'))
    };
    match &m.content {
        Content::Text(t) => inner(t),
        Content::Parts(parts) => parts.iter().find_map(|p| match p {
            Part::Text(t) => inner(t),
            _ => None,
        }),
        Content::None => None,
    }
}

/// What follows the summary in a text that opens with it (after its closing marker), or None
/// when the text is not a summary's.
pub(crate) fn after_summary<'a>(t: &Cow<'a, str>) -> Option<Cow<'a, str>> {
    let trimmed = t.trim_start();
    let rest = trimmed.strip_prefix(SUMMARY_OPEN)?;
    let Some(end) = rest.find(SUMMARY_CLOSE) else {
        return Some(Cow::Borrowed(""));
    };
    let start = t.len() - rest.len() + end + SUMMARY_CLOSE.len();
    Some(match t {
        Cow::Borrowed(b) => Cow::Borrowed(b[start..].trim_start_matches('\n')),
        Cow::Owned(o) => Cow::Owned(o[start..].trim_start_matches('\n').to_string()),
    })
}

/// The message a summary was merged into, without the summary: the text the host message had
/// after it, its other parts and its tool calls (a summary is merged at the start of the next
/// message where a message of its own would put two turns of one role side by side). None
/// when `m` holds no summary, or nothing besides it. A later fold reads the host's own words
/// and calls from this: skipped whole as the previous summary's carrier, a merged assistant
/// turn's thought and calls were lost from every digest after.
pub fn without_summary<'a>(m: &Message<'a>) -> Option<Message<'a>> {
    let mut host = m.clone();
    match &m.content {
        Content::Text(t) => {
            let rest = after_summary(t)?;
            host.content = if rest.trim().is_empty() {
                Content::None
            } else {
                Content::Text(rest)
            };
        }
        Content::Parts(parts) => {
            let at = parts.iter().position(|p| match p {
                Part::Text(t) => after_summary(t).is_some(),
                _ => false,
            })?;
            let mut kept = parts.clone();
            let Part::Text(t) = &parts[at] else {
                return None;
            };
            match after_summary(t) {
                Some(rest) if !rest.trim().is_empty() => kept[at] = Part::Text(rest),
                _ => {
                    kept.remove(at);
                }
            }
            host.content = if kept.is_empty() {
                Content::None
            } else {
                Content::Parts(kept)
            };
        }
        Content::None => return None,
    }
    let empty = matches!(host.content, Content::None) && host.tool_calls.is_empty();
    (!empty).then_some(host)
}

/// Whether `m` carries `previous`, the summary the library trusts as its own (given apart, by
/// where it put it): a reader of the fold reads that message through `previous`, not again. A
/// text that merely carries the marker is data like any other.
pub fn carries_previous(m: &Message<'_>, previous: Option<&str>) -> bool {
    matches!(
        (own_summary(m), previous),
        (Some(s), Some(p)) if p.contains(s.trim())
    )
}
