//! Standing rules: the sentences of user and system messages that constrain every later turn
//! ("never push to main", "do not modify the tests", "always ask before booking", "only use the
//! gift card", approval gates). A summary keeps them verbatim, whatever else it shortens, so a
//! compaction never turns a forbidden action into an allowed one.

use std::sync::OnceLock;

use aho_corasick::AhoCorasick;

/// Words and phrases that make a sentence a standing rule (matched case-insensitively at word
/// boundaries).
const MARKERS: [&str; 21] = [
    "never",
    "always",
    "must",
    "only",
    "should not",
    "shouldn't",
    "make sure",
    "at most",
    "no more than",
    "don't want",
    "do not want",
    "approval",
    "approve",
    "ask me",
    "ask before",
    "unless",
    "avoid",
    "prefer",
    "under no circumstances",
    "not allowed",
    "without my",
];

/// Imperatives that make a rule only when they open the sentence ("Do not push", "Please don't
/// touch the tests"); "I do not have the id" states a fact.
const OPENERS: [&str; 4] = ["do not", "don't", "dont", "please do not"];

/// Longest rule kept whole (characters); a longer sentence keeps its head and end.
const MAX_RULE_CHARS: usize = 600;

/// Every marker and opener, found in one pass over a lowercased text (`rules_in`'s test of a
/// whole text: a digest asks it of every user request, and 25 searches each cost more than the
/// rest of the request's units). Case-sensitive patterns over the lowercase keep the searcher's
/// vector prefilter, which an ASCII-case-insensitive one gives up. Leftmost-first: only whether
/// there is a match is asked (any match semantics find one where any pattern occurs), and with
/// the standard semantics the searcher has no vector prefilter for 25 patterns of nine first
/// letters; it ran its automaton over every byte (on the 10k history, 6% of a compaction).
fn markers() -> &'static AhoCorasick {
    static FINDER: OnceLock<AhoCorasick> = OnceLock::new();
    FINDER.get_or_init(|| {
        AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostFirst)
            .build(MARKERS.iter().chain(OPENERS.iter()))
            .unwrap_or_else(|e| unreachable!("fixed ASCII patterns: {e}"))
    })
}

/// Whether `text` holds a marker or an opener anywhere, in any case.
fn holds_marker(text: &str) -> bool {
    let lower = if text.is_ascii() {
        text.to_ascii_lowercase()
    } else {
        text.to_lowercase()
    };
    markers().is_match(&lower)
}

/// A searcher per marker (`MARKERS`' order), built once: `has_marker` looks for each marker in
/// each sentence of a text that holds one, and `str::find` built a searcher every time.
fn marker_finders() -> &'static [memchr::memmem::Finder<'static>] {
    static FINDERS: OnceLock<Vec<memchr::memmem::Finder<'static>>> = OnceLock::new();
    FINDERS.get_or_init(|| MARKERS.iter().map(memchr::memmem::Finder::new).collect())
}

fn has_marker(lower: &str) -> bool {
    let opening = lower.trim_start_matches(|c: char| !c.is_alphanumeric());
    let opening = opening.strip_prefix("please ").unwrap_or(opening);
    if OPENERS.iter().any(|o| opening.starts_with(o)) {
        return true;
    }
    MARKERS.iter().zip(marker_finders()).any(|(m, finder)| {
        let mut from = 0;
        while let Some(i) = finder.find(&lower.as_bytes()[from..]) {
            let at = from + i;
            let before = lower[..at].chars().next_back();
            let after = lower[at + m.len()..].chars().next();
            let edge = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
            if edge(before) && edge(after) && !says_no_rule(&lower[..at], m, &lower[at + m.len()..])
            {
                return true;
            }
            from = at + m.len();
        }
        false
    })
}

/// The words of `text` (lowercase), letters and apostrophes kept (`i've`, `there's`).
fn words(text: &str) -> impl DoubleEndedIterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '\u{2019}'))
        .filter(|w| !w.is_empty())
}

/// Past participles a speaker's guess or history takes after "must have" / "have never" ("I
/// must have left it", "I've never flown"), beside the regular `-ed` ones.
const PARTICIPLES: [&str; 16] = [
    "been",
    "left",
    "lost",
    "made",
    "had",
    "got",
    "gotten",
    "forgot",
    "forgotten",
    "done",
    "seen",
    "taken",
    "gone",
    "put",
    "sent",
    "flown",
];

fn participle(word: &str) -> bool {
    (word.len() > 3 && word.ends_with("ed")) || PARTICIPLES.contains(&word)
}

/// Whether the marker `m`, between `before` and `after` (lowercase), is a word of description
/// rather than of a rule, by its neighbours: "must" of a guess ("I must have left it
/// somewhere", "there must be a way"), "never mind", "always" / "never" of the speaker's past
/// ("I've always had great flights", "I have never been"), "the only" of a fact ("I'm the only
/// passenger"), "make sure" of the speaker's own promise ("I'll make sure to find the id").
/// Read off the false rules the user turns of the recorded dialogues gave (`Actually, never
/// mind.` kept as a rule through every later compaction); narrow on purpose: a rule missed
/// is worse than a line too many, so each pattern is one a constraint cannot take.
fn says_no_rule(before: &str, m: &str, after: &str) -> bool {
    let mut next = words(after);
    let (n1, n2) = (next.next().unwrap_or(""), next.next().unwrap_or(""));
    let mut prev = words(before).rev();
    let (p1, p2) = (prev.next().unwrap_or(""), prev.next().unwrap_or(""));
    let perfect = |w: &str| {
        matches!(
            w,
            "have" | "has" | "had" | "i've" | "we've" | "i\u{2019}ve" | "we\u{2019}ve"
        )
    };
    match m {
        "must" => {
            (matches!(n1, "have" | "'ve" | "\u{2019}ve") && participle(n2))
                || (p1 == "there"
                    && n1 == "be"
                    && matches!(n2, "a" | "an" | "some" | "something" | "another"))
        }
        "never" => n1 == "mind" || (perfect(p1) && participle(n1)),
        "always" => perfect(p1) || matches!(p1, "was" | "were"),
        // ("The only card I use is ..." opens a rule; "I'm the only passenger" states a fact.)
        "only" => p1 == "the" && !p2.is_empty(),
        "make sure" => {
            matches!(p1, "i'll" | "i\u{2019}ll" | "we'll" | "we\u{2019}ll")
                || (p1 == "will" && matches!(p2, "i" | "we"))
                || (p1 == "me" && p2 == "let")
        }
        _ => false,
    }
}

/// Words that make a rule an imperative when they open it ("Never charge my card", "Always ask
/// me"), beside `OPENERS`.
const IMPERATIVES: [&str; 6] = [
    "never",
    "always",
    "only",
    "avoid",
    "make sure",
    "under no circumstances",
];

/// Whether `rule` opens with an imperative ("Do not cancel ...", "Never charge ...", "Always
/// ask ..."): a standing order, where a rule that only holds a marker may state a preference of
/// the moment ("I don't want to cancel the flight, just the insurance."). A summary with room
/// for some rules only keeps the imperatives first.
pub fn imperative(rule: &str) -> bool {
    let lower = rule.to_lowercase();
    let opening = lower.trim_start_matches(|c: char| !c.is_alphanumeric());
    let opening = opening.strip_prefix("please ").unwrap_or(opening);
    OPENERS.iter().chain(IMPERATIVES.iter()).any(|w| {
        opening
            .strip_prefix(w)
            .is_some_and(|rest| rest.chars().next().is_none_or(|c| !c.is_alphanumeric()))
    })
}

/// Sentences of `text` that state a rule, each on one line (whitespace collapsed), in order.
pub fn rules_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    // Most texts hold no marker at all: one pass over the whole text rules them out.
    if !holds_marker(text) {
        return out;
    }
    let mut start = 0;
    let b = text.as_bytes();
    let mut i = 0;
    while i <= b.len() {
        let end_here = i == b.len()
            || b[i] == b'\n'
            || (matches!(b[i], b'.' | b'!' | b'?')
                && (i + 1 == b.len() || b[i + 1].is_ascii_whitespace()));
        if end_here {
            let stop = if i < b.len() && b[i] != b'\n' {
                i + 1
            } else {
                i
            };
            let sentence = text[start..stop].trim();
            if sentence.len() >= 8 && has_marker(&sentence.to_lowercase()) {
                out.push(one_line(sentence));
            }
            start = (i + 1).min(b.len());
        }
        i += 1;
    }
    out
}

fn one_line(s: &str) -> String {
    let words: Vec<&str> = s.split_whitespace().collect();
    let line = words.join(" ");
    if line.chars().count() <= MAX_RULE_CHARS {
        return line;
    }
    let chars: Vec<char> = line.chars().collect();
    let head: String = chars[..MAX_RULE_CHARS * 2 / 3].iter().collect();
    let tail: String = chars[chars.len() - MAX_RULE_CHARS / 3..].iter().collect();
    format!("{head} … {tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test of a whole text as first written: each marker searched in the lowercase.
    fn has_marker_anywhere(lower: &str) -> bool {
        MARKERS
            .iter()
            .chain(OPENERS.iter())
            .any(|m| lower.contains(m))
    }

    #[test]
    fn an_order_that_opens_the_rule_is_an_imperative_and_a_preference_is_not() {
        for r in [
            "Do not cancel reservation ZZ9Q7T under any circumstances.",
            "Never charge my Visa card ending in 4417.",
            "Always ask me before you run git push or book anything.",
            "- please don't touch the tests",
            "Only use the gift card ending in 7781.",
        ] {
            assert!(imperative(r), "{r}");
        }
        for r in [
            "I don't want to cancel the flight, just the insurance.",
            "We prefer aisle seats.",
            "Nevertheless, check the fare.",
            "Onlyfans is blocked here; you must not open it.",
        ] {
            assert!(!imperative(r), "{r}");
        }
    }

    #[test]
    fn the_one_pass_test_agrees_with_searching_the_lowercase() {
        let texts = [
            "NEVER push to main.",
            "Please DON'T touch the tests",
            "We Prefer aisle seats; Ask Me first.",
            "nothing to see here",
            "the onlyness of it",
            "Ünless you know, Straße ALWAYS wins",
            "asK me \u{212a}",
            "",
        ];
        for t in texts {
            assert_eq!(
                holds_marker(t),
                has_marker_anywhere(&t.to_lowercase()),
                "{t}"
            );
        }
    }

    #[test]
    fn a_guess_a_memory_or_a_promise_is_no_rule() {
        for t in [
            "I must have left it somewhere else.",
            "I must've misplaced the confirmation.",
            "I truly believe there must be a way, and I'm hoping you can help me find it.",
            "Sorry, there must be a mistake; I am a Gold member.",
            "Actually, never mind.",
            "As a Gold member, I've always had great experiences with you.",
            "I have never been to Denver.",
            "I'm the only passenger, Aarav Ahmed.",
            "If that's the only option, then yes, go ahead.",
            "I'll make sure to locate my user ID and get back to you soon.",
        ] {
            assert!(rules_in(t).is_empty(), "{t}");
        }
        // The same words in a rule keep it one.
        for t in [
            "You must have my approval before booking.",
            "The booking must have travel insurance.",
            "There must be no stopover longer than two hours.",
            "Never mind the seat, but never charge my Visa card.",
            "Always ask me first.",
            "The only card you may use is the one ending in 7781.",
            "Use the only certificate I have, and only that one.",
            "Make sure the refund goes to the original card.",
            "Please make sure we sit together.",
        ] {
            assert_eq!(rules_in(t).len(), 1, "{t}");
        }
    }

    #[test]
    fn finds_rules_and_leaves_the_rest() {
        let text = "Hi! Please book the flight.\nNever use my Visa card. I only want aisle seats! \
                    The weather is nice. I do not have the id. Do not change the return flight; \
                    always ask me before paying.";
        let rules = rules_in(text);
        assert_eq!(
            rules,
            vec![
                "Never use my Visa card.",
                "I only want aisle seats!",
                "Do not change the return flight; always ask me before paying.",
            ]
        );
        assert!(rules_in("The onlyness of the mustard.").is_empty());
    }
}
