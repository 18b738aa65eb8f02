//! Where a test run says how it ended: an output that prints its runner's summary line
//! (`Ran 82 tests in 0.094s` / `OK (skipped=2)`, `=== 3 failed, 10 passed in 2.1s ===`,
//! `test result: ok. 12 passed`) and then teardown chatter is shown up to that summary.
//!
//! A digest keeps the end of a long result, and its shortest form keeps about 30 characters of
//! it. Django's test runner prints `Destroying test database for alias 'default'...` once per
//! process after its verdict, so a folded run of the annotations suite kept
//! `database for alias 'default'...` and lost `Ran 82 tests` and `OK (skipped=2)`.
//!
//! A line repeated right after itself counts once: a run with eight processes prints that
//! teardown line once per process and database alias (18 lines after `OK` in a folded
//! contenttypes run), which is one thing said, not eighteen.

/// Distinct lines at an output's end searched for a summary (a line that repeats the one after
/// it is not counted).
const SUMMARY_LINES: usize = 12;

/// Lines at an output's end read at most, repeats included: an output of one line repeated
/// thousands of times is not read whole.
const SUMMARY_LINES_READ: usize = 256;

/// Whether a line is a test runner's verdict or count (unittest, pytest, cargo, jest).
fn is_summary(line: &str) -> bool {
    let t = line.trim();
    let counted = |word: &str| {
        t.match_indices(word).any(|(i, _)| {
            t[..i]
                .trim_end()
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_digit())
        })
    };
    (t.starts_with("Ran ") && t.contains(" test"))
        || t == "OK"
        || t.starts_with("OK (")
        || t.starts_with("FAILED (")
        || t.starts_with("test result: ")
        || t.starts_with("Tests:")
        || (t.starts_with('=') && (counted(" passed") || counted(" failed") || counted(" error")))
}

/// Whether a line after the verdict may say something of its own about the run.
fn says_failure(line: &str) -> bool {
    const WORDS: [&[u8]; 5] = [b"error", b"fail", b"traceback", b"exception", b"warning"];
    // Compared in place, ignoring ASCII case (a lowercased copy of every line at the end of
    // every observation was most of the search), each place tried only at a word's first letter.
    let b = line.as_bytes();
    (0..b.len()).any(|i| {
        matches!(b[i] | 0x20, b'e' | b'f' | b't' | b'w')
            && WORDS
                .iter()
                .any(|w| b.len() - i >= w.len() && b[i..i + w.len()].eq_ignore_ascii_case(w))
    })
}

/// `text` up to the end of its last test summary line, when that line is among its last
/// `SUMMARY_LINES` lines and what follows it is neither empty nor says anything of a failure;
/// None otherwise.
pub(super) fn up_to_summary(text: &str) -> Option<&str> {
    let mut end = text.trim_end().len();
    // The lines after a summary are read for a failure only once there is one: most outputs
    // have none, and reading each of their last lines for one was most of this search.
    let mut after: [&str; SUMMARY_LINES] = [""; SUMMARY_LINES];
    let mut n = 0;
    for _ in 0..SUMMARY_LINES_READ {
        let start = text[..end].rfind('\n').map_or(0, |i| i + 1);
        let line = &text[start..end];
        if is_summary(line) {
            let after_failure = after[..n].iter().any(|l| says_failure(l));
            return (n > 0 && !after_failure).then_some(&text[..end]);
        }
        let repeat = n > 0 && after[n - 1].trim() == line.trim();
        if !line.trim().is_empty() && !repeat {
            if n == SUMMARY_LINES {
                return None;
            }
            after[n] = line;
            n += 1;
        }
        if start == 0 {
            return None;
        }
        end = start - 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_django_run_is_shown_up_to_its_verdict() {
        let out = "Creating test database for alias 'default'...\nFound 82 test(s).\n\
                   ....s....\n------\nRan 82 tests in 0.094s\n\nOK (skipped=2)\n\
                   Destroying test database for alias 'default'...\n\
                   Destroying test database for alias 'default'...\n";
        assert_eq!(
            up_to_summary(out).unwrap(),
            "Creating test database for alias 'default'...\nFound 82 test(s).\n\
             ....s....\n------\nRan 82 tests in 0.094s\n\nOK (skipped=2)"
        );
    }

    #[test]
    fn a_teardown_line_repeated_per_process_counts_once() {
        let teardown =
            |alias: &str| format!("Destroying test database for alias '{alias}'...\n").repeat(9);
        let out = format!(
            "Testing against Django\n.....\n------\nRan 59 tests in 0.632s\n\nOK\n{}{}",
            teardown("default"),
            teardown("other")
        );
        assert_eq!(
            up_to_summary(&out).unwrap(),
            "Testing against Django\n.....\n------\nRan 59 tests in 0.632s\n\nOK"
        );
        // Distinct lines still count one each: thirteen of them hide the verdict.
        let distinct: String = (0..13).map(|i| format!("cleanup step {i}\n")).collect();
        assert_eq!(up_to_summary(&format!("Ran 3 tests\nOK\n{distinct}")), None);
        // A repeated line read far enough stops the search.
        let flood = "same line\n".repeat(SUMMARY_LINES_READ + 1);
        assert_eq!(up_to_summary(&format!("Ran 3 tests\nOK\n{flood}")), None);
    }

    #[test]
    fn pytest_and_cargo_verdicts_are_summaries() {
        assert!(is_summary("==== 1 failed, 10 passed in 2.31s ===="));
        assert!(is_summary("test result: ok. 12 passed; 0 failed"));
        assert!(is_summary("Ran 1 test in 0.001s"));
        assert!(!is_summary("== passed the check =="));
        assert!(!is_summary("Running tests..."));
    }

    #[test]
    fn an_output_that_ends_on_its_verdict_or_fails_after_it_is_left_alone() {
        assert_eq!(up_to_summary("Ran 3 tests in 0.1s\n\nOK\n"), None);
        assert_eq!(
            up_to_summary("Ran 3 tests in 0.1s\n\nOK\nError: could not remove /tmp/x\n"),
            None
        );
        assert_eq!(up_to_summary("no tests here\nat all"), None);
        let far: String = (0..20).map(|i| format!("line {i}\n")).collect();
        let far = format!("Ran 3 tests\nOK\n{far}");
        assert_eq!(up_to_summary(&far), None);
    }
}
