//! A fixed string searched for in many texts, with `memchr`'s vectorized substring search.
//!
//! `str::find(&str)` runs the standard library's Two-Way searcher a byte at a time, and
//! `str::contains` vectorizes only needles of up to 32 bytes: the digest asks a few fixed
//! questions of every tool output of a fold ("test session starts", a traceback's 34-byte
//! header, a summary's closing marker), and those scalar searches were about 2% of a SWE
//! compaction's CPU (`perf`, round 84). The searcher is built once, on first use.

use std::sync::OnceLock;

use memchr::memmem::Finder;

/// A fixed needle and its searcher, for a `static`.
pub struct FixedNeedle {
    needle: &'static str,
    finder: OnceLock<Finder<'static>>,
}

impl FixedNeedle {
    pub const fn new(needle: &'static str) -> Self {
        FixedNeedle {
            needle,
            finder: OnceLock::new(),
        }
    }

    /// The byte offset of the needle's first occurrence in `text`, as `text.find(needle)`.
    pub fn find(&self, text: &str) -> Option<usize> {
        self.finder
            .get_or_init(|| Finder::new(self.needle.as_bytes()))
            .find(text.as_bytes())
    }

    /// Whether `text` holds the needle, as `text.contains(needle)`.
    pub fn is_in(&self, text: &str) -> bool {
        self.find(text).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_str_find_finds() {
        static N: FixedNeedle = FixedNeedle::new("session starts");
        for text in [
            "",
            "session start",
            "=== test session starts ===",
            "é session starts session starts",
            "session starts",
        ] {
            assert_eq!(N.find(text), text.find("session starts"), "{text:?}");
            assert_eq!(N.is_in(text), text.contains("session starts"));
        }
    }
}
