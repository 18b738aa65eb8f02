//! A pytest run's session header: the lines between `=== test session starts ===` and
//! `collected N items` (the platform, the interpreter and runner versions, a plugin's package
//! table, `rootdir`, `configfile`, `plugins`). A result is shown by its head and its end, and a
//! failed run's head was that header: an astropy run's error line spent 900 of its characters
//! on `Numpy: 1.25.2 Scipy: not available ...` before the first test, and an agent loop's
//! summary listed seven such runs of one test file. The header says nothing of the run; the
//! `=== test session starts ===` line that opens it stays, so the run still reads as one.

use crate::fixed_needle::FixedNeedle;

/// Lines read after the opening line for the `collected` line that ends the header (pytest
/// prints a dozen or two; a plugin table can add a few more).
const MAX_HEADER_LINES: usize = 48;

/// `text` without its pytest session header, when it has one that ends within
/// `MAX_HEADER_LINES` lines with a `collected` / `collecting` line; None otherwise (nothing to
/// leave out).
pub(super) fn without_session_header(text: &str) -> Option<String> {
    static OPEN: FixedNeedle = FixedNeedle::new("test session starts");
    let open = OPEN.find(text)?;
    let header_start = text[open..].find('\n').map(|i| open + i + 1)?;
    let mut at = header_start;
    for _ in 0..MAX_HEADER_LINES {
        let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
        let line = text[at..end].trim_start();
        if line.starts_with("collect") {
            if at == header_start {
                return None;
            }
            let mut out = String::with_capacity(text.len() - (at - header_start));
            out.push_str(&text[..header_start]);
            out.push_str(&text[at..]);
            return Some(out);
        }
        if end == text.len() {
            return None;
        }
        at = end + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pytest_session_header_is_left_out_and_its_run_kept() {
        let run = "<returncode>1</returncode>\n<output>\n=== test session starts ===\nplatform linux -- Python 3.9.20, pytest-7.4.0\n\nRunning tests with Astropy version 5.2.dev64.\nPackage versions:\nNumpy: 1.25.2\nrootdir: /testbed\nplugins: hypothesis-6.82.6, xdist-3.3.1\ncollected 193 items\n\nastropy/table/tests/test_mixin.py ...FF [100%]\n=== 2 failed, 185 passed in 1.94s ===\n</output>";
        let out = without_session_header(run).expect("a header");
        assert_eq!(
            out,
            "<returncode>1</returncode>\n<output>\n=== test session starts ===\ncollected 193 items\n\nastropy/table/tests/test_mixin.py ...FF [100%]\n=== 2 failed, 185 passed in 1.94s ===\n</output>"
        );
        // `collecting ... collected 3 items` (a verbose run) ends it too.
        let verbose = "=== test session starts ===\nplatform linux\ncollecting ... collected 3 items\nt.py::a PASSED";
        assert_eq!(
            without_session_header(verbose).as_deref(),
            Some("=== test session starts ===\ncollecting ... collected 3 items\nt.py::a PASSED")
        );
    }

    #[test]
    fn an_output_without_a_whole_header_is_left_as_it_is() {
        // No header, a header with nothing in it, one cut before its `collected` line, and a
        // run whose `collected` line is too far to be its header's end.
        let long = format!(
            "=== test session starts ===\n{}collected 1 item",
            "line\n".repeat(MAX_HEADER_LINES + 1)
        );
        for text in [
            "ok",
            "=== test session starts ===\ncollected 1 item\n",
            "=== test session starts ===\nplatform linux -- Python 3.9",
            "=== test session starts ===",
            long.as_str(),
        ] {
            assert_eq!(without_session_header(text), None, "{text}");
        }
    }
}
