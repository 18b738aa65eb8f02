//! Turns and thoughts that say nothing a summary needs: a thought that names nothing or only
//! says what comes next, a user turn of courtesies. Such units go first when the room is short
//! (`pack::IDLE`).

/// Whether a thought names nothing: a short one with no identifier, number, path or quoted
/// code in it ("Let's see the implementation.", "I need more lines."). Such a conclusion goes
/// with the commands that only read files (`pack::IDLE`): dropped before the others, given
/// room after them.
pub(super) fn names_nothing(thought: &str) -> bool {
    let t = thought.trim();
    t.len() <= IDLE_THOUGHT_BYTES
        && !t.split_whitespace().any(|w| {
            let b = w.as_bytes();
            b.iter()
                .any(|c| c.is_ascii_digit() || matches!(c, b'_' | b'/' | b'$' | b'`' | b'(' | b'"'))
                || (b.len() >= 2 && b[1..].iter().any(u8::is_ascii_uppercase) && !is_short_caps(w))
                || w.trim_end_matches(['.', ',', ':', ';', '!', '?'])
                    .contains('.')
        })
}

/// Whether a user turn asks nothing: short, naming nothing (`names_nothing`), no question,
/// and each of its sentences a courtesy or a promise to come back ("Thank you, you too! Talk
/// soon.", "I'll gather those details and get back to you shortly."). Such a turn goes first
/// when requests must go (`pack::IDLE`): a held-out airline dialogue's tenth summary kept
/// "I'll be in touch soon with the details. Have a wonderful day as well!" and dropped "could
/// you please cancel the current reservation and book a new one in business class?".
pub(super) fn only_courtesy(turn: &str) -> bool {
    let t = turn.trim();
    // (names_nothing first: it reads the length before any byte.)
    !t.is_empty()
        && names_nothing(t)
        && !t.contains('?')
        && t.split_inclusive(['.', '!', '\n'])
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .all(|s| {
                let lower = s.to_ascii_lowercase();
                COURTESIES.iter().any(|c| lower.contains(c))
            })
}

/// What a courtesy or a promise to come back says (lower case): `only_courtesy`. No word of
/// consent ("yes", "sounds good", "go ahead"): a consent answers the agent's question.
const COURTESIES: [&str; 17] = [
    "thank",
    "appreciate",
    "have a great",
    "have a good",
    "have a nice",
    "have a wonderful",
    "talk soon",
    "talk to you",
    "get back to you",
    "be in touch",
    "be back",
    "you too",
    "goodbye",
    "bye",
    "shortly",
    "in a moment",
    "working on",
];

/// A word of two capitals ("ID", "OK", "US"), trailing punctuation aside: a common word, not an
/// identifier (a flight, a booking or an airport code is longer).
fn is_short_caps(word: &str) -> bool {
    let w = word.trim_end_matches(['.', ',', ':', ';', '!', '?', ')']);
    w.len() == 2 && w.bytes().all(|c| c.is_ascii_uppercase())
}

/// Whether a thought only says what the agent will do next ("I will read `x.py` to see how
/// ...", "Let's run the tests."): a short one opening with an intent, whose action the next
/// call line shows.
pub(super) fn only_intends(thought: &str) -> bool {
    let t = thought.trim();
    t.len() <= INTENT_THOUGHT_BYTES
        && !t.contains('\n')
        && INTENT_OPENINGS.iter().any(|o| {
            t.as_bytes()
                .get(..o.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(o.as_bytes()))
        })
}

/// The longest thought (bytes) `only_intends` reads as one: a longer one says more than its next
/// call line shows.
const INTENT_THOUGHT_BYTES: usize = 240;
/// How a thought that only says what comes next opens (compared ignoring ASCII case).
const INTENT_OPENINGS: [&str; 8] = [
    "i will ",
    "i'll ",
    "let's ",
    "let me ",
    "now i will ",
    "now, i will ",
    "now let's ",
    "next, i will ",
];

/// The longest thought (bytes) `names_nothing` reads as one.
const IDLE_THOUGHT_BYTES: usize = 160;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thought_that_names_nothing_is_told_apart() {
        for idle in [
            "Let's see the implementation.",
            "I need more lines.",
            "Okay, let's look a bit further down.",
            "Now I run the reproduction script.",
            // (Two capitals are a word, not a code.)
            "I can help with that. Could you please provide your user ID?",
        ] {
            assert!(names_nothing(idle), "{idle}");
        }
        for named in [
            "Line 214 is likely `UniqueConstraint.remove_sql`.",
            "The test fails with 2 errors.",
            "I need to edit django/db/models/query.py.",
            "It calls resolve_expression first.",
            "Reservation XEHM4B cannot be cancelled.",
            "The flight lands at SFO.",
            &"word ".repeat(40),
        ] {
            assert!(!names_nothing(named), "{named}");
        }
    }

    #[test]
    fn a_turn_that_asks_nothing_is_told_apart() {
        for courtesy in [
            "Thank you, you too! Talk soon.",
            "I'll gather those details and get back to you shortly. Thanks for your help!",
            "Thanks! I'll be in touch soon with the details. Have a wonderful day as well!",
            "Thank you for your patience. I'm working on finalizing those details now.",
        ] {
            assert!(only_courtesy(courtesy), "{courtesy}");
        }
        for asks in [
            // A consent answers the agent's question; a question asks; a name is named.
            "Yes, please go ahead with the booking. Thank you for your help!",
            "Thanks! Can you also add a bag?",
            "Thank you. My user ID is mia_li_3668.",
            "Thanks. Please cancel the current reservation and book a new one in business class.",
            "",
        ] {
            assert!(!only_courtesy(asks), "{asks}");
        }
    }

    #[test]
    fn a_thought_that_only_says_what_comes_next_is_told_apart() {
        // (Its action is the next call line: the held-out SWE folds kept lines like the first.)
        for intent in [
            "I will read the content of `django/db/models/query_utils.py` to understand `_unregister_lookup`.",
            "Let's run the reproduction script again to verify the fix.",
            "Now I will check `django/test/utils.py`.",
        ] {
            assert!(only_intends(intent), "{intent}");
        }
        for finding in [
            "The reproduction script confirmed the issue: the lookup remains in the cache.",
            "I see the `_unregister_lookup` method:\n```python\ndel cls.class_lookups[name]\n```",
            &format!("I will {}", "explain at length ".repeat(20)),
            "It seems the `sed` command worked correctly. Let's run the tests.",
        ] {
            assert!(!only_intends(finding), "{finding}");
        }
    }
}
