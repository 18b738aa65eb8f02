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

/// Where a thought's findings end (bytes): before the sentences that close it only saying what
/// comes next and naming nothing ("Let's verify this behavior with a script.": the next call
/// line shows it; "Let's look again around line 1053." names what a continuation asked for).
/// Its first sentence is always kept (the whole thought when it is one sentence). A
/// clipped conclusion keeps its head and its end: where the end was the intent, the last
/// finding ("... consistent with previous behavior where `TypeError` was caught.") was what the
/// clip cut (a held-out SWE fold).
pub(super) fn findings_end(thought: &str) -> usize {
    let mut end = thought.trim_end().len();
    loop {
        let body = &thought[..end];
        // The last sentence starts after the last line break or sentence end before its own.
        let inner = body.trim_end_matches(['.', '!', '?', ':']);
        let Some(start) = last_sentence_start(inner) else {
            return end;
        };
        let last = &body[start..];
        if !(only_intends(last) && names_nothing(last)) {
            return end;
        }
        let before = body[..start].trim_end().len();
        if before == 0 {
            return end;
        }
        end = before;
    }
}

/// Where the last sentence of `text` starts (bytes): after its last line break, or after the
/// last `.`, `!`, `?` or `:` followed by a space; None when `text` is one sentence.
fn last_sentence_start(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    (1..b.len()).rev().find(|&i| {
        b[i - 1] == b'\n'
            || (b[i].is_ascii_whitespace() && matches!(b[i - 1], b'.' | b'!' | b'?' | b':'))
    })
}

/// The longest thought (bytes) `only_intends` reads as one: a longer one says more than its next
/// call line shows.
const INTENT_THOUGHT_BYTES: usize = 240;
/// How a thought that only says what comes next opens (compared ignoring ASCII case): the
/// openings of the last sentences of the SWE runs' thoughts in ../shared/data that say a next
/// step ("Now I ...", "Let's check", "I will", "I need", "Now run", "I should", "Running the"),
/// and the apology for a turn the harness refused ("I made a mistake in the previous turn by
/// including two commands ...", 39 of the SWE runs' short thoughts): the next call line shows
/// the step. ("I apologize" is not one: an airline agent's "I apologize for the confusion.
/// Let's proceed with ... flight HAT052, departing at 03:00 EST" says what it proceeds with.)
const INTENT_OPENINGS: [&str; 22] = [
    "i will ",
    "i'll ",
    "let's ",
    "let me ",
    "now i will ",
    "now, i will ",
    "now let's ",
    "next, i will ",
    "now i'll ",
    "now i need to ",
    "i need to ",
    "i should ",
    "now run ",
    "run ",
    "running ",
    "now verify ",
    "okay, i'll ",
    "okay, i will ",
    "okay, let's ",
    "i'm going to ",
    "i am going to ",
    "i made a mistake",
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
    fn a_thoughts_findings_end_before_the_intent_that_closes_it() {
        for (thought, findings) in [
            (
                "Both errors are now handled.\nThis seems consistent with previous behavior.\n\nLet's verify this behavior with a script.",
                "Both errors are now handled.\nThis seems consistent with previous behavior.",
            ),
            (
                "The test fails with 2 errors. I will read the test again. Let me run it.",
                "The test fails with 2 errors.",
            ),
            // An intent that names something stays, and what comes before it.
            (
                "It recurses. Let's look at the file again around line 1053. Let me run it.",
                "It recurses. Let's look at the file again around line 1053.",
            ),
            // Its first sentence stays, whatever it says.
            ("I will read the file. Let me run it.", "I will read the file."),
        ] {
            assert_eq!(&thought[..findings_end(thought)], findings);
        }
        for whole in [
            "Let's run the reproduction script again to verify the fix.",
            "The fix works. It prints None.",
            "The fix works.\nI will explain at length how the cache is filled and why the lookup stays in it after the call, which is what the test needs, and why the other approach fails on both backends, with the query they run and the error each gives, in detail, so the reader can check each step of it again later.",
        ] {
            assert_eq!(findings_end(whole), whole.len(), "{whole}");
        }
    }

    #[test]
    fn a_thought_that_only_says_what_comes_next_is_told_apart() {
        // (Its action is the next call line: the held-out SWE folds kept lines like the first.)
        for intent in [
            "I will read the content of `django/db/models/query_utils.py` to understand `_unregister_lookup`.",
            "Let's run the reproduction script again to verify the fix.",
            "Now I will check `django/test/utils.py`.",
            // (Openings counted over the last sentences of the SWE runs' thoughts.)
            "Running `test_none_items.py`.",
            "Okay, I'll check the contents of `tests/staticfiles_tests`.",
            "I need to see more lines to see where the return happens.",
            "Run `test_none.py`.",
            "Run reproduction script.",
            // (An apology for a refused turn: the next call line is the step.)
            "I made a mistake in the previous turn by including two commands. I must provide exactly one bash block.",
        ] {
            assert!(only_intends(intent), "{intent}");
        }
        for finding in [
            "The reproduction script confirmed the issue: the lookup remains in the cache.",
            "I see the `_unregister_lookup` method:\n```python\ndel cls.class_lookups[name]\n```",
            &format!("I will {}", "explain at length ".repeat(20)),
            "It seems the `sed` command worked correctly. Let's run the tests.",
            "I apologize for the confusion. Let's proceed with changing your flight to HAT052.",
        ] {
            assert!(!only_intends(finding), "{finding}");
        }
    }
}
