//! How contextfold marks the summaries it writes, and the text of one in a message. The marker
//! is what a summary looks like on the wire; whether a later compaction trusts a message that
//! carries it is `summary_trust`'s business (by where the library put it and its hash).

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
