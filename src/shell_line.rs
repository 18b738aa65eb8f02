//! A shell command line, as an agent's step: the command a shell tool's call runs, whether it
//! only reads files, and whether what it printed is the files' words or the run's own.
//!
//! Agents run shell commands two ways: a text agent fences them in its reply, a tool-calling
//! agent sends them as a shell tool's call (`bash(command="sed -n '1,40p' x.py")`). Either way
//! the command says how to read its output: `cat models.py` prints a module whose
//! `except Exception:` is no failure of `cat`, which says so only in its own diagnostic line
//! (`cat: models.py: No such file or directory`).

use serde_json::Value;

/// Commands that print a file's lines and change nothing. (Searches, `grep -n`, `find`, `ls`,
/// are not among them: their short output says where things are, which probes ask.)
const READ_COMMANDS: [&str; 6] = ["cat", "head", "tail", "nl", "less", "more"];

/// Whether a text agent's command only reads files: its first program (after a leading
/// `cd DIR &&`) is one of `READ_COMMANDS`, or `sed -n`.
pub fn reads_only(cmd: &str) -> bool {
    let mut c = cmd.trim_start();
    if let Some(rest) = c.strip_prefix("cd ") {
        match rest.find("&&") {
            Some(at) => c = rest[at + 2..].trim_start(),
            None => return false,
        }
    }
    let mut words = c.split_whitespace();
    match words.next() {
        Some("sed") => words.next() == Some("-n"),
        Some(w) => READ_COMMANDS.contains(&w),
        None => false,
    }
}

/// Keys a shell tool's call may hold beside its command, none of which says more than the
/// command does: Claude Code's `Bash` (`description`, `timeout`, `run_in_background`), Codex's
/// `shell` (`workdir`, `timeout_ms`, `with_escalated_permissions`, `justification`), Gemini
/// CLI's `run_shell_command` (`description`, `dir_path`), OpenHands' `execute_bash`
/// (`is_input`, `timeout`), and the like.
const SHELL_SIDE_KEYS: [&str; 12] = [
    "description",
    "timeout",
    "timeout_ms",
    "run_in_background",
    "is_background",
    "workdir",
    "cwd",
    "dir_path",
    "directory",
    "is_input",
    "with_escalated_permissions",
    "justification",
];

/// The command line of a call to a shell tool: its arguments are a `command` (or `cmd`), a
/// string or an argv whose `bash -lc SCRIPT` form is the script, and nothing but
/// `SHELL_SIDE_KEYS` beside it. Such a call is shown as the command a text agent runs
/// (`$ cmd -> outcome`), planned and ranked as one: a function-calling coding agent's
/// `bash(command="sed -n '1,40p' x.py")` is the same step as a text agent's `sed -n`, reads
/// only (`reads_only`) and goes first when the room is short. Over the SWE trajectories
/// rewritten as `bash` tool calls, the Call forms kept fewer of the facts the agent needed next
/// than the Command forms of the same trajectories as text.
pub fn shell_command(args: &Value) -> Option<String> {
    let map = args.as_object()?;
    let (key, value) = map
        .iter()
        .find(|(k, _)| matches!(k.as_str(), "command" | "cmd"))?;
    if map
        .keys()
        .any(|k| k != key && !SHELL_SIDE_KEYS.contains(&k.as_str()))
    {
        return None;
    }
    let cmd = match value {
        Value::String(s) => s.clone(),
        Value::Array(argv) => {
            let words: Option<Vec<&str>> = argv.iter().map(Value::as_str).collect();
            let words = words?;
            match words.as_slice() {
                [shell, flag, script]
                    if matches!(*shell, "bash" | "sh" | "zsh" | "/bin/bash" | "/bin/sh")
                        && matches!(*flag, "-c" | "-lc") =>
                {
                    (*script).to_string()
                }
                _ => words.join(" "),
            }
        }
        _ => return None,
    };
    (!cmd.trim().is_empty()).then_some(cmd)
}

/// Programs whose output is the lines of files, or the names of files, or their own arguments:
/// whatever words it holds are those of the files (or of the agent), never the run's. Each
/// reports its own failure on a line of its own that opens with its name (POSIX utilities write
/// diagnostics as `utility: message`, e.g. `cat: x.py: No such file or directory`, `sed: -e
/// expression #1, char 3: unterminated `s' command`, `ls: cannot access 'x'`). `sed` is one in
/// any form: it prints lines of its input, or nothing (`sed -i`).
const PRINTERS: [&str; 22] = [
    "cat", "head", "tail", "nl", "less", "more", "sed", "grep", "egrep", "fgrep", "rg", "ag",
    "find", "ls", "tree", "wc", "sort", "uniq", "cut", "diff", "echo", "printf",
];

/// `git` subcommands that print files, their history or their names (git's diagnostics open
/// with `fatal:` or `error:`).
const GIT_PRINTERS: [&str; 6] = ["show", "diff", "log", "blame", "grep", "status"];

/// What a shell prints before its own diagnostic (`bash: line 1: cd: x: No such file or
/// directory`, `/bin/sh: 1: cd: can't cd to x`).
const SHELL_PREFIXES: [&str; 6] = [
    "bash:",
    "sh:",
    "zsh:",
    "/bin/sh:",
    "/bin/bash:",
    "/usr/bin/bash:",
];

/// The programs a command line runs, one per step of its pipelines and lists (split at `|`,
/// `||`, `&&`, `;` and line ends outside quotes; a step's leading `VAR=value` words, and `(`,
/// `{`, `!`, skipped; a path's last part), `cd` steps left out. None when the line is not read
/// that simply: a heredoc (its body is no step), unbalanced quotes, a step with no program.
pub fn programs(cmd: &str) -> Option<Vec<&str>> {
    if cmd.contains("<<") {
        return None;
    }
    let b = cmd.as_bytes();
    let mut steps: Vec<&str> = Vec::new();
    let (mut from, mut i) = (0, 0);
    let mut quote: Option<u8> = None;
    while i < b.len() {
        let c = b[i];
        match quote {
            Some(q) => {
                if c == b'\\' && q == b'"' {
                    i += 1;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                b'\\' => i += 1,
                b'\'' | b'"' => quote = Some(c),
                b'|' | b';' | b'\n' | b'&' => {
                    let pair = b.get(i + 1) == Some(&c) && c != b';' && c != b'\n';
                    // A lone `&` is a redirection's (`2>&1`) or a background job's: no step ends.
                    if c != b'&' || pair {
                        steps.push(&cmd[from..i]);
                        i += usize::from(pair);
                        from = i + 1;
                    }
                }
                _ => {}
            },
        }
        i += 1;
    }
    if quote.is_some() {
        return None;
    }
    steps.push(&cmd[from.min(cmd.len())..]);
    let mut out = Vec::new();
    for step in steps {
        let words = step
            .split_whitespace()
            .map(|w| w.trim_start_matches(['(', '{', '!']))
            .filter(|w| !w.is_empty());
        let mut program = None;
        for w in words {
            let assignment = w
                .find('=')
                .is_some_and(|at| at > 0 && !w[..at].contains('/'));
            if !assignment {
                program = Some(w);
                break;
            }
        }
        match program {
            // (A blank step: the line's end, or between two line ends.)
            None if step.trim().is_empty() => {}
            None => return None,
            Some("cd") => {}
            Some(p) => out.push(p.rsplit('/').next().unwrap_or(p)),
        }
    }
    Some(out)
}

/// The programs of a command line (`programs`) when every one of them only prints files
/// (`PRINTERS`, `git show` and the like): what it printed is the files' words, and it failed
/// only where one of them says so on a diagnostic line (`has_diagnostic`). None otherwise.
pub fn printers(cmd: &str) -> Option<Vec<&str>> {
    let progs = programs(cmd)?;
    let all = !progs.is_empty()
        && progs
            .iter()
            .all(|p| PRINTERS.contains(p) || (*p == "git" && git_prints(cmd)));
    all.then_some(progs)
}

/// Whether every `git` step of a command line runs a subcommand that prints (`GIT_PRINTERS`).
fn git_prints(cmd: &str) -> bool {
    let mut words = cmd.split_whitespace();
    let mut any = false;
    while let Some(w) = words.next() {
        if w == "git" {
            // Options before the subcommand (`git --no-pager log`), `-C DIR` and `-c KEY=VALUE`
            // with their value (`git -C testbed diff`).
            let mut sub = None;
            while let Some(o) = words.next() {
                if o == "-C" || o == "-c" {
                    words.next();
                } else if !o.starts_with('-') {
                    sub = Some(o);
                    break;
                }
            }
            match sub {
                Some(s) if GIT_PRINTERS.contains(&s) => any = true,
                _ => return false,
            }
        }
    }
    any
}

/// Diagnostic lines that report no failure: GNU grep says so of a binary file that matches,
/// and exits 0 ("When type is 'binary', grep ... outputs a one-line message saying that a
/// binary file matches", GNU grep manual, `--binary-files`; since grep 3.5 the line is
/// `grep: FILE: binary file matches`, on stderr).
const NOTICES: [&str; 1] = ["binary file matches"];

/// Whether an output holds a diagnostic line of one of `programs` (a line opening with
/// `name:`), of the shell that ran them, or of git (`fatal:`, `error:`), other than a
/// notice (`NOTICES`). Every line is read: `cat a b` prints b's diagnostic after a's whole
/// text.
pub fn has_diagnostic(output: &str, programs: &[&str]) -> bool {
    let git = programs.contains(&"git");
    output.split('\n').any(|line| {
        let line = line.trim();
        let Some(colon) = line.find(':') else {
            return false;
        };
        let head = &line[..=colon];
        let name = &head[..colon];
        (SHELL_PREFIXES.contains(&head)
            || (git && (head == "fatal:" || head == "error:"))
            || programs.contains(&name))
            && !NOTICES.iter().any(|n| line.ends_with(n))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipeline_of_file_printers_is_read_step_by_step() {
        assert_eq!(
            programs("cd /repo && grep -n 'a|b' x.py | head -5; FOO=1 /usr/bin/cat y 2>&1")
                .unwrap(),
            vec!["grep", "head", "cat"]
        );
        assert!(printers("cd /repo && cat django/forms/models.py").is_some());
        assert!(printers("sed -n '1,40p' x.py && git diff -- x.py").is_some());
        assert!(printers("cat x.py && python x.py").is_none());
        assert!(printers("git commit -am wip").is_none());
        assert!(printers("git -C testbed diff -- x.py").is_some());
        assert!(printers("git -c core.pager=cat --no-pager log -3").is_some());
        assert!(printers("git -C testbed commit -m x").is_none());
        // A heredoc's body is no step, and unbalanced quotes are not read.
        assert!(programs("cat <<'EOF' > t.py\nimport os\nEOF").is_none());
        assert!(programs("echo 'unclosed").is_none());
    }

    #[test]
    fn a_shell_tools_arguments_give_its_command_line() {
        let shell = |args: &str| shell_command(&serde_json::from_str(args).unwrap());
        assert_eq!(shell(r#"{"cmd":"ls -la"}"#).as_deref(), Some("ls -la"));
        assert_eq!(
            shell(r#"{"command":["rg","-n","TODO"]}"#).as_deref(),
            Some("rg -n TODO")
        );
        for not_shell in [
            r#"{"command":"view","path":"x.py"}"#,
            r#"{"command":""}"#,
            r#"{"command":12}"#,
            r#"{"query":"ls"}"#,
            r#"["ls"]"#,
        ] {
            assert_eq!(shell(not_shell), None, "{not_shell}");
        }
    }

    #[test]
    fn a_printers_failure_is_its_own_diagnostic_line() {
        let progs = ["cat"];
        assert!(!has_diagnostic(
            "try:\n    x()\nexcept Exception:\n    raise ValueError('bad')",
            &progs
        ));
        assert!(has_diagnostic(
            "a = 1\ncat: b.py: No such file or directory",
            &progs
        ));
        assert!(has_diagnostic(
            "bash: line 1: cd: nowhere: No such file or directory",
            &progs
        ));
        assert!(!has_diagnostic("error: not a git repository", &progs));
        assert!(has_diagnostic("fatal: not a git repository", &["git"]));
        let grep = ["grep"];
        assert!(!has_diagnostic(
            "src/a.py:3:import x\ngrep: src/__pycache__/a.cpython-39.pyc: binary file matches",
            &grep
        ));
        assert!(has_diagnostic("grep: src: Is a directory", &grep));
    }
}
