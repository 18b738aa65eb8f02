//! A tool call that searches: `search_files(pattern=...)`, `Grep(pattern=...)`,
//! `find_files(...)`, `glob(...)`. Its result lists what it found in other files (the lines a
//! pattern matched, the names a glob matched), so their words are the files', not the tool's:
//! hermes-agent's `search_files` returning `{"total_count": 2, "matches": [{"content": "# if the
//! request failed, retry"}]}` was filed as a failed call by the word `failed`.

use crate::read_call::name_has_word;

/// Words of a tool's name that say it searches (whole words: `search_files`, `Grep`,
/// `findFiles`, `glob`, `rg`; not `research_notes` or `finder_config`).
const SEARCH_WORDS: [&str; 5] = ["search", "grep", "find", "glob", "rg"];

/// Whether a tool named `name` searches.
pub fn searches(name: &str) -> bool {
    name_has_word(name, &SEARCH_WORDS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_is_named_by_a_whole_word() {
        for name in [
            "search_files",
            "Grep",
            "grep",
            "findFiles",
            "glob",
            "rg",
            "search_direct_flight",
            "web-search",
        ] {
            assert!(searches(name), "{name}");
        }
        for name in [
            "research_notes",
            "finder_config",
            "Read",
            "terminal",
            "regrep",
            "globals",
        ] {
            assert!(!searches(name), "{name}");
        }
    }
}
