//! A Django test run's setup and teardown lines: `Creating test database for alias
//! 'default'...`, one `Cloning test database for alias 'default'...` per process and database,
//! `Testing against Django installed in '/testbed/django' with up to 8 processes`, `System
//! check identified no issues (0 silenced).` and the matching `Destroying ...` lines. A result
//! is shown by its head and its end, and a failed run's head was these lines: a held-out SWE
//! fold's two failed `runtests.py i18n` runs spent their heads on eight `Cloning` lines each,
//! and the `FAIL:` / `ERROR:` lines that said what broke were in the clipped middle. Over the
//! SWE runs of ../shared/data these lines are 2.3% of every observation's characters, nearly
//! all at the start of an output. They say nothing of the run; `Found 214 test(s).`, which
//! does, stays.

use crate::fixed_needle::FixedNeedle;

/// How each left-out line opens (after its indentation).
const SETUP_LINES: [&str; 5] = [
    "Creating test database for alias ",
    "Cloning test database for alias ",
    "Destroying test database for alias ",
    "Testing against Django installed in ",
    "System check identified no issues",
];

/// `text` without the lines a Django test run prints to set up and tear down its databases
/// (`SETUP_LINES`); None when it has none (nothing to leave out).
pub(super) fn without_runner_setup(text: &str) -> Option<String> {
    // (Most outputs are no Django test run: one vectorized search answers for them.)
    static MARK: FixedNeedle = FixedNeedle::new("test database for alias ");
    static INSTALLED: FixedNeedle = FixedNeedle::new("Testing against Django installed in ");
    if !MARK.is_in(text) && !INSTALLED.is_in(text) {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut left_out = false;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        // The runner's progress marks may open the line (its processes write to one stream:
        // `FTesting against Django ...`): they stay, the setup line goes.
        let rest = t.trim_start_matches(['.', 's', 'F', 'E', 'x']);
        if SETUP_LINES.iter().any(|s| rest.starts_with(s)) {
            left_out = true;
            let marks = &t[..t.len() - rest.len()];
            if !marks.is_empty() {
                out.push_str(marks);
                out.push('\n');
            }
        } else {
            out.push_str(line);
        }
    }
    left_out.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_django_runs_database_setup_is_left_out_and_its_test_count_stays() {
        let run = "Creating test database for alias 'default'...\n\
                   Testing against Django installed in '/testbed/django' with up to 8 processes\n\
                   Found 214 test(s).\n\
                   Cloning test database for alias 'default'...\n\
                   Cloning test database for alias 'default'...\n\
                   System check identified no issues (0 silenced).\n\
                   ..s..F\n\
                   ======================================================================\n\
                   FAIL: test_page_with_dash (i18n.tests.URLTagTests)\n\
                   AssertionError: 'de' is not None\n\
                   ----------------------------------------------------------------------\n\
                   Ran 214 tests in 1.2s\n\
                   \n\
                   FAILED (failures=1)\n\
                   Destroying test database for alias 'default'...\n";
        assert_eq!(
            without_runner_setup(run).as_deref(),
            Some(
                "Found 214 test(s).\n..s..F\n\
                 ======================================================================\n\
                 FAIL: test_page_with_dash (i18n.tests.URLTagTests)\n\
                 AssertionError: 'de' is not None\n\
                 ----------------------------------------------------------------------\n\
                 Ran 214 tests in 1.2s\n\nFAILED (failures=1)\n"
            )
        );
        // Progress marks written on the same line as a setup line stay.
        assert_eq!(
            without_runner_setup(
                "Creating test database for alias 'default'...\nFTesting against Django installed in '/testbed/django' with up to 8 processes\nType: dict\n"
            )
            .as_deref(),
            Some("F\nType: dict\n")
        );
        // An output that is no Django run is left as it is.
        assert_eq!(without_runner_setup("Creating tables...\nok\n"), None);
        // A line that only quotes one, inside other text, stays.
        assert_eq!(
            without_runner_setup("print('Cloning test database for alias x')\n"),
            None
        );
    }
}
