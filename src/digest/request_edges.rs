//! The edges of a user request that a clipped form leaves out: courtesy sentences ("No
//! problem.", "Can you help with that?") and sentences said at the edge of two turns or more
//! (a user simulator's sign-off).

use std::collections::HashSet;

use crate::message::{Content, Message, Role};

/// Sentences this short (characters) at either edge of a request are courtesy ("No problem.",
/// "Can you help with that?") when the rest is long: clipped forms leave them out.
const COURTESY_CHARS: usize = 28;

/// `text` without a short first sentence and a short last sentence, when what stays is still
/// one and a half times as long as what goes (a 95-character request between "Alright, then."
/// and "Could you help with that?" loses its edges); `text` itself otherwise.
pub(super) fn without_courtesy_edges(text: &str) -> &str {
    let t = text.trim();
    let ends = |i: usize, c: char| {
        matches!(c, '.' | '!' | '?') && t[i + 1..].starts_with(char::is_whitespace)
    };
    let mut a = 0;
    if let Some((i, c)) = t.char_indices().find(|&(i, c)| ends(i, c)) {
        if i < COURTESY_CHARS {
            a = i + c.len_utf8();
        }
    }
    let mut b = t.len();
    let body = t.trim_end_matches(['.', '!', '?']);
    if let Some((i, c)) = body.char_indices().rev().find(|&(i, c)| ends(i, c)) {
        if t.len() - i <= COURTESY_CHARS && i >= a {
            b = i + c.len_utf8();
        }
    }
    let core = t[a..b].trim();
    if core.len() * 2 >= (t.len() - core.len()) * 3 && core.len() > 2 * COURTESY_CHARS {
        core
    } else {
        text
    }
}

/// The shortest sentence `repeated_edges` counts (bytes): "Thanks." said twice is courtesy
/// (`without_courtesy_edges`), not a repeated line.
const REPEATED_SENTENCE_BYTES: usize = 20;

/// Longest user turn (bytes) read for its edge sentences: a request, not a pasted log.
const REPEATED_TURN_BYTES: usize = 4_000;

/// The first and the last sentence of `text` (trimmed; the same one when it has one).
fn edge_sentences(text: &str) -> (&str, &str) {
    let t = text.trim();
    let ends = |b: &[u8], i: usize| {
        matches!(b[i], b'.' | b'!' | b'?') && b.get(i + 1).is_some_and(u8::is_ascii_whitespace)
    };
    let b = t.as_bytes();
    // (The ends found by a vectorized search: a digest reads the edges of every user turn up
    // to `REPEATED_TURN_BYTES`, observations too, and a test per byte was 3% of it.)
    let first = memchr::memchr3_iter(b'.', b'!', b'?', b)
        .find(|&i| ends(b, i))
        .map_or(t, |i| &t[..=i]);
    let body = t.trim_end_matches(['.', '!', '?']);
    let last = memchr::memchr3_iter(b'.', b'!', b'?', &b[..body.len()])
        .rev()
        .find(|&i| ends(b, i))
        .map_or(t, |i| t[i + 1..].trim_start());
    (first.trim(), last.trim())
}

/// The sentences that open or close two user turns of `msgs` or more: a user simulator's or a
/// person's sign-off said every turn ("You are the most lenient customer service agent I have
/// ever spoken to."), which a clipped request kept in place of its reason.
pub(super) fn repeated_edges(msgs: &[Message<'_>]) -> HashSet<String> {
    // (Fx: a turn of one sentence, an observation without a full stop among them, is hashed
    // whole, and SipHash took as long as finding the edges.)
    let mut count: rustc_hash::FxHashMap<&str, usize> = rustc_hash::FxHashMap::default();
    for m in msgs.iter().filter(|m| m.role == Role::User) {
        let Content::Text(t) = &m.content else {
            continue;
        };
        if t.len() > REPEATED_TURN_BYTES {
            continue;
        }
        let (first, last) = edge_sentences(t);
        // A turn of one sentence counts it once.
        let edges = if first == last {
            &[first][..]
        } else {
            &[first, last][..]
        };
        for &e in edges.iter().filter(|e| e.len() >= REPEATED_SENTENCE_BYTES) {
            *count.entry(e).or_default() += 1;
        }
    }
    count
        .into_iter()
        .filter(|&(_, n)| n >= 2)
        .map(|(e, _)| e.to_string())
        .collect()
}

/// `core` without its first and last sentences while they are in `repeated` and something is
/// left (a slice of `core`).
pub(super) fn without_repeated_edges<'t>(core: &'t str, repeated: &HashSet<String>) -> &'t str {
    let mut c = core.trim();
    loop {
        let (first, last) = edge_sentences(c);
        if first.len() == c.len() {
            return c;
        }
        if repeated.contains(first) {
            c = c[first.len()..].trim();
        } else if repeated.contains(last) {
            c = c[..c.len() - last.len()].trim();
        } else {
            return c;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipped_requests_lose_their_courtesy_edges_before_their_conditions() {
        let r = "No problem. I recently made a reservation, and I'd like to change it to the \
                 cheapest business class round trip without changing the dates. Can you help with that?";
        assert_eq!(
            without_courtesy_edges(r),
            "I recently made a reservation, and I'd like to change it to the cheapest business \
             class round trip without changing the dates."
        );
        let short_core =
            "Alright, then. I'd like to change my recent reservation to the cheapest business \
                          round trip while keeping the same dates. Could you help with that?";
        assert_eq!(
            without_courtesy_edges(short_core),
            "I'd like to change my recent reservation to the cheapest business round trip while \
             keeping the same dates."
        );
        // Short requests, and long edges, stay as they are.
        assert_eq!(
            without_courtesy_edges("Thanks! Book it."),
            "Thanks! Book it."
        );
        let long_edges =
            "Neither of those flights work for me; I'm looking to fly after 11 AM EST. \
                          Could you check if there are any flights available after that?";
        assert_eq!(without_courtesy_edges(long_edges), long_edges);
    }
}
