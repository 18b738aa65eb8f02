//! A Python traceback in a failed run's output, shown by its ends: the outermost frame (where
//! the agent's own script called in) and the innermost (where the exception was raised), each
//! with its source line, then the exception. The frames between are counted, not shown. The
//! ends are the outermost and innermost frames outside the interpreter's own library, where
//! there are any (a unittest failure's test line, not `unittest/case.py`); the library's frames
//! beyond them are counted too.
//!
//! A digest shows an error clipped to a number of characters. A Django reproduction's
//! traceback runs 10-20 frames through the framework (`utils.py, line 84, in _execute ...`),
//! and a head-and-end clip kept the first frames and the exception where the script's own
//! line (`reproduce_issue.py, line 42`) and the chained exception's message sat in the cut.

use crate::fixed_needle::FixedNeedle;

/// The line that opens a traceback.
const HEADER: &str = "Traceback (most recent call last):";

/// Frames kept at each end of a traceback; a traceback of fewer frames than both ends plus one
/// is left as it is (nothing would be saved).
const ENDS: usize = 1;

/// Whether a line opens a frame: `  File "path", line N, in name`.
fn is_frame(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("File \"") && t.contains("\", line ")
}

/// Whether a frame's `File` line is in the interpreter's own library (`.../lib/python3.9/
/// unittest/case.py`, `<frozen importlib._bootstrap>`), not in an installed package or the
/// project.
fn in_python_library(frame: &str) -> bool {
    let t = frame.trim_start();
    let path = t
        .strip_prefix("File \"")
        .and_then(|p| p.split('"').next())
        .unwrap_or("");
    path.starts_with("<frozen ") || (path.contains("/lib/python") && !path.contains("-packages/"))
}

/// `text` with the middle frames of each Python traceback in it replaced by one line saying
/// how many were left out; None when no traceback has frames to leave out.
pub(super) fn condense(text: &str) -> Option<String> {
    // (34 bytes: longer than `str::contains` vectorizes.)
    static FINDER: FixedNeedle = FixedNeedle::new(HEADER);
    if !FINDER.is_in(text) {
        return None;
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() != HEADER {
            out.push_str(lines[i]);
            out.push('\n');
            i += 1;
            continue;
        }
        out.push_str(lines[i]);
        out.push('\n');
        i += 1;
        // Frames: a `File` line and the more indented lines after it (the source line, the
        // carets under it), up to the first line that is neither (the exception).
        let mut frames: Vec<(usize, usize)> = Vec::new();
        while i < lines.len() && is_frame(lines[i]) {
            let start = i;
            let indent = lines[i].len() - lines[i].trim_start().len();
            i += 1;
            while i < lines.len()
                && !is_frame(lines[i])
                && !lines[i].trim().is_empty()
                && lines[i].len() - lines[i].trim_start().len() > indent
            {
                i += 1;
            }
            frames.push((start, i));
        }
        let keep = |out: &mut String, (a, b): (usize, usize)| {
            for line in &lines[a..b] {
                out.push_str(line);
                out.push('\n');
            }
        };
        // The ends are taken among the frames outside the interpreter's own library, where
        // there are any: a unittest failure opens in `unittest/case.py` (`testPartExecutor`)
        // and is raised in it (`fail`), and the test's own line between them was what a
        // digest left out.
        let own = |f: &(usize, usize)| !in_python_library(lines[f.0]);
        let (first, last) = match (frames.iter().position(own), frames.iter().rposition(own)) {
            (Some(a), Some(b)) => (a, b),
            _ => (0, frames.len().saturating_sub(1)),
        };
        let kept = usize::from(!frames.is_empty()) + usize::from(last > first);
        if frames.len() > kept + 1 && frames.len() > 2 * ENDS + 1 {
            changed = true;
            let gap = |out: &mut String, n: usize| {
                if n > 0 {
                    out.push_str(&format!("  [... {n} frames ...]\n"));
                }
            };
            gap(&mut out, first);
            keep(&mut out, frames[first]);
            if last > first {
                gap(&mut out, last - first - 1);
                keep(&mut out, frames[last]);
            }
            gap(&mut out, frames.len() - 1 - last);
        } else {
            for &f in &frames {
                keep(&mut out, f);
            }
        }
    }
    if !changed {
        return None;
    }
    if !text.ends_with('\n') {
        out.pop();
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHAINED: &str = "\
Traceback (most recent call last):
  File \"/testbed/django/db/backends/utils.py\", line 82, in _execute
    return self.cursor.execute(sql)
  File \"/testbed/django/db/backends/sqlite3/base.py\", line 414, in execute
    return Database.Cursor.execute(self, query)
sqlite3.OperationalError: table \"x\" already exists

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File \"reproduce_issue.py\", line 42, in <module>
    schema_editor.create_model(ManagementAgent.property_groups.through)
  File \"/testbed/django/db/backends/base/schema.py\", line 331, in create_model
    self.execute(sql, params or None)
  File \"/testbed/django/db/backends/base/schema.py\", line 145, in execute
    cursor.execute(sql, params)
  File \"/testbed/django/db/backends/utils.py\", line 66, in execute
    return self._execute_with_wrappers(sql, params, many=False, executor=self._execute)
  File \"/testbed/django/db/backends/sqlite3/base.py\", line 414, in execute
    return Database.Cursor.execute(self, query)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
django.db.utils.OperationalError: table \"x\" already exists
";

    #[test]
    fn a_traceback_keeps_the_scripts_frame_the_raising_frame_and_the_exception() {
        let c = condense(CHAINED).unwrap();
        // The short chained traceback stays whole; the long one keeps its ends.
        assert!(c.contains("utils.py\", line 82, in _execute"), "{c}");
        assert!(
            c.contains("line 42, in <module>\n    schema_editor.create_model("),
            "{c}"
        );
        assert!(c.contains("  [... 3 frames ...]\n"), "{c}");
        assert!(c.contains(
            "line 414, in execute\n    return Database.Cursor.execute(self, query)\n           ^^^"
        ));
        assert!(!c.contains("line 331, in create_model"), "{c}");
        assert!(
            c.contains("The above exception was the direct cause"),
            "{c}"
        );
        assert!(
            c.ends_with("django.db.utils.OperationalError: table \"x\" already exists\n"),
            "{c}"
        );
        assert!(c.len() < CHAINED.len() * 3 / 4);
    }

    #[test]
    fn a_test_failure_keeps_the_tests_own_frame_not_the_test_runners() {
        let lib = "/opt/miniconda3/envs/testbed/lib/python3.9/unittest/case.py";
        let tb = format!(
            "FAIL: test_page (i18n.tests.MiscTests)\n\
             Traceback (most recent call last):\n  \
             File \"{lib}\", line 59, in testPartExecutor\n    yield\n  \
             File \"{lib}\", line 592, in run\n    self._callTestMethod(testMethod)\n  \
             File \"{lib}\", line 550, in _callTestMethod\n    method()\n  \
             File \"/testbed/tests/i18n/tests.py\", line 1611, in test_page\n    self.assertIsNone(g('/de-simple-page/'))\n  \
             File \"{lib}\", line 1255, in assertIsNone\n    self.fail(msg)\n  \
             File \"{lib}\", line 676, in fail\n    raise self.failureException(msg)\n\
             AssertionError: 'de' is not None\n"
        );
        let c = condense(&tb).unwrap();
        assert_eq!(
            c,
            "FAIL: test_page (i18n.tests.MiscTests)\nTraceback (most recent call last):\n  \
             [... 3 frames ...]\n  \
             File \"/testbed/tests/i18n/tests.py\", line 1611, in test_page\n    self.assertIsNone(g('/de-simple-page/'))\n  \
             [... 2 frames ...]\nAssertionError: 'de' is not None\n"
        );
        // Frames of installed packages are the project's to read, not the interpreter's.
        assert!(!in_python_library(
            "  File \"/usr/lib/python3/dist-packages/numpy/core/x.py\", line 1, in f"
        ));
        assert!(in_python_library(
            "  File \"<frozen importlib._bootstrap>\", line 984, in _find_and_load_unlocked"
        ));
    }

    #[test]
    fn text_without_a_long_traceback_is_left_alone() {
        assert_eq!(condense("ValueError: x\n"), None);
        let short = "Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n    f()\n  File \"a.py\", line 2, in f\n    g()\n  File \"a.py\", line 3, in g\n    1/0\nZeroDivisionError: division by zero";
        assert_eq!(condense(short), None);
        let long = short.replace(
            "ZeroDivisionError",
            "  File \"a.py\", line 4, in h\n    x\nZeroDivisionError",
        );
        let c = condense(&long).unwrap();
        assert!(c.ends_with("ZeroDivisionError: division by zero"), "{c}");
        assert!(
            c.contains("[... 2 frames ...]")
                && c.contains("line 1, in <module>")
                && c.contains("line 4, in h")
        );
    }
}
