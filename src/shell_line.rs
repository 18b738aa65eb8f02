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
    let mut out = Vec::new();
    for step in steps(cmd)? {
        match program_words(step) {
            // (A blank step: the line's end, or between two line ends.)
            None if step.trim().is_empty() => {}
            None => return None,
            Some((_, "cd")) => {}
            Some((_, p)) => out.push(p.rsplit('/').next().unwrap_or(p)),
        }
    }
    Some(out)
}

/// A step's words from its program on (leading `VAR=value` words, and `(`, `{`, `!`, skipped),
/// and its program as written; None when it has none.
fn program_words(step: &str) -> Option<(Vec<&str>, &str)> {
    let words: Vec<&str> = step
        .split_whitespace()
        .map(|w| w.trim_start_matches(['(', '{', '!']))
        .filter(|w| !w.is_empty())
        .skip_while(|w| {
            w.find('=')
                .is_some_and(|at| at > 0 && !w[..at].contains('/'))
        })
        .collect();
    let program = *words.first()?;
    Some((words, program))
}

/// The bytes of a command line outside quotes, with their offsets (a backslash and the byte it
/// escapes are skipped, in double quotes too); `quote` after the walk says whether a quote was
/// left open.
struct Unquoted<'a> {
    b: &'a [u8],
    i: usize,
    quote: Option<u8>,
}

impl<'a> Unquoted<'a> {
    fn new(cmd: &'a str) -> Self {
        Unquoted {
            b: cmd.as_bytes(),
            i: 0,
            quote: None,
        }
    }
}

impl Iterator for Unquoted<'_> {
    type Item = (usize, u8);

    fn next(&mut self) -> Option<(usize, u8)> {
        while self.i < self.b.len() {
            let (at, c) = (self.i, self.b[self.i]);
            self.i += 1;
            match self.quote {
                Some(q) => {
                    if c == b'\\' && q == b'"' {
                        self.i += 1;
                    } else if c == q {
                        self.quote = None;
                    }
                }
                None => match c {
                    b'\\' => self.i += 1,
                    b'\'' | b'"' => self.quote = Some(c),
                    _ => return Some((at, c)),
                },
            }
        }
        None
    }
}

/// The quote (`'` or `"`) left open at the end of `cmd`, if any.
pub fn open_quote(cmd: &str) -> Option<u8> {
    let mut scan = Unquoted::new(cmd);
    scan.by_ref().for_each(drop);
    scan.quote
}

/// The steps of a command line: split at `|`, `||`, `&&`, `;` and line ends outside quotes.
/// None when its quotes do not balance.
fn steps(cmd: &str) -> Option<Vec<&str>> {
    let b = cmd.as_bytes();
    let mut steps: Vec<&str> = Vec::new();
    let mut from = 0;
    let mut scan = Unquoted::new(cmd);
    while let Some((i, c)) = scan.next() {
        if matches!(c, b'|' | b';' | b'\n' | b'&') {
            let pair = b.get(i + 1) == Some(&c) && c != b';' && c != b'\n';
            // A lone `&` is a redirection's (`2>&1`) or a background job's: no step ends.
            if c != b'&' || pair {
                steps.push(&cmd[from..i]);
                if pair {
                    scan.next();
                }
                from = i + 1 + usize::from(pair);
            }
        }
    }
    if scan.quote.is_some() {
        return None;
    }
    steps.push(&cmd[from.min(cmd.len())..]);
    Some(steps)
}

/// Programs that write, move or remove files whatever their options.
const FILE_WRITERS: [&str; 9] = [
    "tee", "patch", "mv", "cp", "rm", "touch", "truncate", "ln", "rmdir",
];

/// `git` subcommands that change the work tree or the history.
const GIT_WRITERS: [&str; 12] = [
    "apply",
    "am",
    "checkout",
    "restore",
    "commit",
    "stash",
    "reset",
    "rm",
    "mv",
    "revert",
    "cherry-pick",
    "merge",
];

/// Whether `line` opens a here-document (`<<EOF`, `<< 'EOF'`, `<<-"END"`; `<<<` is a
/// here-string, `1 << 4` a shift).
pub fn opens_here_document(line: &str) -> bool {
    let b = line.as_bytes();
    let mut from = 0;
    while let Some(k) = memchr::memmem::find(&b[from..], b"<<") {
        let at = from + k;
        from = at + 2;
        if b.get(at + 2) == Some(&b'<') {
            from = at + 3;
            continue;
        }
        let rest = line[at + 2..].strip_prefix('-').unwrap_or(&line[at + 2..]);
        let rest = rest.trim_start().trim_start_matches(['\'', '"']);
        if rest
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        {
            return true;
        }
    }
    false
}

/// Whether a command line changes files: an in-place edit (`sed -i`, `perl -pi`), a program
/// that writes, moves or removes them (`FILE_WRITERS`, `git apply` and the like:
/// `GIT_WRITERS`), or output sent to a file (`> x.py`, `>> x.py`, `cat <<'EOF' > x.py`; not
/// `2>&1` nor `/dev/null`). A heredoc is read by its first line (its body is the file's).
pub fn changes_files(cmd: &str) -> bool {
    let line = if cmd.contains("<<") {
        cmd.lines().next().unwrap_or("")
    } else {
        cmd
    };
    if writes_by_redirect(line) {
        return true;
    }
    let Some(steps) = steps(line) else {
        return false;
    };
    steps
        .into_iter()
        .filter_map(program_words)
        .any(|(words, program)| {
            let program = program.rsplit('/').next().unwrap_or(program);
            let opts = || words[1..].iter().take_while(|w| w.starts_with('-'));
            match program {
                "sed" => opts().any(|o| {
                    *o == "--in-place" || o.starts_with("--in-place=") || is_short_with(o, 'i')
                }),
                "perl" => opts().any(|o| is_short_with(o, 'i')),
                "git" => git_subcommand(&words[1..]).is_some_and(|sub| GIT_WRITERS.contains(&sub)),
                p => FILE_WRITERS.contains(&p),
            }
        })
}

/// The subcommand of `git`'s arguments: the first word that is no option, `-C DIR` and
/// `-c KEY=VALUE` passed with their values.
fn git_subcommand<'a>(args: &[&'a str]) -> Option<&'a str> {
    let mut words = args.iter();
    while let Some(w) = words.next() {
        if *w == "-C" || *w == "-c" {
            words.next();
        } else if !w.starts_with('-') {
            return Some(w);
        }
    }
    None
}

/// Whether `opt` is a cluster of short options (`-i`, `-pi`, `-i.bak`) that holds `-c`.
fn is_short_with(opt: &str, c: char) -> bool {
    opt.strip_prefix('-')
        .filter(|o| !o.starts_with('-'))
        .and_then(|o| o.split('.').next())
        .is_some_and(|o| o.contains(c))
}

/// Whether a command line sends output to a file (`>` or `>>` outside quotes, to a target
/// other than a file descriptor or `/dev/...`).
fn writes_by_redirect(line: &str) -> bool {
    let b = line.as_bytes();
    Unquoted::new(line).any(|(i, c)| {
        if c != b'>' {
            return false;
        }
        let mut j = i + 1;
        if b.get(j) == Some(&b'>') {
            j += 1;
        }
        // (`>&2`, `2>&1`: a descriptor; `>|`: clobber, then the target.)
        if b.get(j) == Some(&b'&') {
            return false;
        }
        if b.get(j) == Some(&b'|') {
            j += 1;
        }
        let target = line[j..]
            .trim_start()
            .split(|ch: char| ch.is_whitespace() || ";|&)".contains(ch))
            .next()
            .unwrap_or("")
            .trim_matches(['"', '\'']);
        !target.is_empty() && !target.starts_with("/dev/")
    })
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

/// Programs that search files for lines and print where each match is (`grep -n` prints
/// `path:line:text`): their output says where things are defined. (`find`, which lists names,
/// tried among them: SWE facts the agent used next 4,632 -> 4,638 of 6,073, in the agent loop
/// 4,657 -> 4,659, the held-out agent loops 520 -> 517 of 608; no gain to tell from noise.)
const SEARCHERS: [&str; 5] = ["grep", "egrep", "fgrep", "rg", "ag"];

/// Whether a command line is a search: every program only prints (`printers`) and one of them
/// searches (`SEARCHERS`, `git grep`).
pub fn searches(cmd: &str) -> bool {
    printers(cmd).is_some_and(|progs| {
        progs.iter().any(|p| SEARCHERS.contains(p))
            || (progs.contains(&"git") && runs_git(cmd, "grep"))
    })
}

/// Whether a `git` step of a command line runs `subcommand` (read as `git_subcommand` reads
/// it: `git -C repo grep`, not `git log --grep`).
fn runs_git(cmd: &str, subcommand: &str) -> bool {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    words
        .iter()
        .enumerate()
        .any(|(i, w)| *w == "git" && git_subcommand(&words[i + 1..]) == Some(subcommand))
}

/// Whether every `git` step of a command line runs a subcommand that prints (`GIT_PRINTERS`).
fn git_prints(cmd: &str) -> bool {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let mut any = false;
    for (i, w) in words.iter().enumerate() {
        if *w == "git" {
            // (Options before the subcommand: `git --no-pager log`, `git -C testbed diff`.)
            match git_subcommand(&words[i + 1..]) {
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
    fn a_here_document_is_told_from_a_here_string_and_a_shift() {
        assert!(opens_here_document("cat <<'EOF' > f.py"));
        assert!(opens_here_document("cat << \"END_OF\" >> f"));
        assert!(opens_here_document("python3 - <<-\"PY\""));
        assert!(!opens_here_document("grep x <<< \"$v\""));
        assert!(!opens_here_document("echo $((1 << 4))"));
        assert!(!opens_here_document("echo done"));
    }

    #[test]
    fn a_line_that_edits_moves_or_writes_files_changes_them() {
        for cmd in [
            "sed -i 's/a/b/' x.py",
            "cd /testbed && sed -i.bak '12i import os' django/db/x.py",
            "sed --in-place -e 's/a/b/' x.py",
            "perl -pi -e 's/a/b/' x.py",
            "echo 'x = 1' > settings.py",
            "cat >> notes.md",
            "cat <<'EOF' > reproduce.py\nimport django\nprint(1 > 0)\nEOF",
            "python gen.py 2>&1 | tee out.log",
            "git apply fix.patch",
            "git -C repo checkout -- x.py",
            "mv a.py b.py && ls",
            "rm -rf build",
        ] {
            assert!(changes_files(cmd), "{cmd}");
        }
        for cmd in [
            "sed -n '1,40p' x.py",
            "grep -rn 'a > b' src/",
            "python -c \"print(1 > 0)\"",
            "python reproduce.py 2>&1",
            "python run.py > /dev/null 2>&1",
            "ls -la >&2",
            "git diff",
            "git log --oneline -5",
            "cat <<'EOF' | python\nimport os\nopen('x', 'w').write('>')\nEOF",
            "pytest -x tests/",
        ] {
            assert!(!changes_files(cmd), "{cmd}");
        }
    }

    #[test]
    fn a_search_is_a_line_of_printers_one_of_which_searches() {
        for search in [
            "grep -n \"class HashedFilesMixin\" django/contrib/staticfiles/storage.py",
            "cd /testbed && grep -rn 'def post_process' . | head -20",
            "rg -n get_latest_lastmod django/",
            "git grep -n resolve_expression",
            "grep -n a x.py && grep -n b x.py",
        ] {
            assert!(searches(search), "{search}");
        }
        // A run filtered by grep is a run; a file printed, a print.
        for other in [
            "python reproduce.py | grep FAIL",
            "cat x.py",
            "sed -n '1,40p' x.py",
            "git log --oneline | head",
            "git log --grep fix | head",
        ] {
            assert!(!searches(other), "{other}");
        }
    }

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
