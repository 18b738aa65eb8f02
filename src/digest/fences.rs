//! The command of a text agent's turn: the fenced block its harness runs (```` ```bash ````),
//! told apart from code its thought quotes, and the thought before it.

/// Where the first code fence (```) starts: one vectorized search for the three backticks
/// (a search for the backtick stopped at every one of code that quotes names in single
/// backticks, and the turns' fences were 3% of a SWE digest).
fn find_fence(text: &str) -> Option<usize> {
    static FENCE: std::sync::OnceLock<memchr::memmem::Finder<'static>> = std::sync::OnceLock::new();
    FENCE
        .get_or_init(|| memchr::memmem::Finder::new(b"```"))
        .find(text.as_bytes())
}

/// Info strings of a fence that runs a shell: a text agent's action (mini-swe-agent parses
/// only ```` ```bash ```` blocks; others write `sh` or `console`).
const SHELL_FENCES: [&str; 5] = ["bash", "sh", "shell", "zsh", "console"];

/// The fenced block a text agent runs: the last one whose info string names a shell, else the
/// last one (a thought may quote code in ```` ```python ```` before its command). Its start
/// and its body (the info line skipped).
pub(super) fn command_fence(text: &str) -> Option<(usize, &str)> {
    // A turn whose middle the library cut (`degrade::cut_text`) may have lost its command's
    // opening fence: a closing fence left alone after the marker closes a block that opens at
    // the marker. (Paired across the cut, the fences after it pair off by one, and the
    // thought between two quoted blocks was taken for the command.)
    if let Some(m) = crate::degrade::cut_marker_at(text) {
        let (head, tail) = (&text[..m.start], &text[m.end..]);
        if fence_count(head).is_multiple_of(2) && !fence_count(tail).is_multiple_of(2) {
            let close = find_fence(tail)?;
            let after = m.end + close + 3;
            let later = fence_in(&text[after..]).map(|(at, cmd, shell)| (after + at, cmd, shell));
            let cut =
                Some((m.start, tail[..close].trim(), false)).filter(|(_, cmd, _)| !cmd.is_empty());
            let chosen = [fence_in(head), cut, later].into_iter().flatten().fold(
                None,
                |chosen: Option<(usize, &str, bool)>, b| match chosen {
                    Some(c) if c.2 && !b.2 => Some(c),
                    _ => Some(b),
                },
            );
            return chosen.map(|(at, cmd, _)| (at, cmd));
        }
    }
    fence_in(text).map(|(at, cmd, _)| (at, cmd))
}

/// How many fences (```) `text` holds.
fn fence_count(text: &str) -> usize {
    let (mut n, mut from) = (0, 0);
    while let Some(i) = find_fence(&text[from..]) {
        n += 1;
        from += i + 3;
    }
    n
}

/// `command_fence` and how many of the text's blocks are fenced as shell (`shell_blocks`,
/// asked of a turn with a command): the blocks read once where no cut marker pairs them apart.
pub(super) fn command_fence_and_shells(text: &str) -> Option<(usize, &str, usize)> {
    if crate::degrade::cut_marker_at(text).is_some() {
        return command_fence(text).map(|(at, cmd)| (at, cmd, shell_blocks(text)));
    }
    let mut shells = 0;
    let chosen = fenced_blocks(text).fold(None, |chosen, (start, cmd, shell)| {
        shells += usize::from(shell);
        choose_fence(chosen, start, cmd, shell)
    });
    chosen.map(|(at, cmd, _)| (at, cmd, shells))
}

/// The block `fence_in` keeps of the one `chosen` so far and the next one: a shell block
/// over one that is not, else the later one; never an empty one.
fn choose_fence<'t>(
    chosen: Option<(usize, &'t str, bool)>,
    start: usize,
    cmd: &'t str,
    shell: bool,
) -> Option<(usize, &'t str, bool)> {
    if !cmd.is_empty() && (shell || !chosen.is_some_and(|(_, _, s)| s)) {
        Some((start, cmd, shell))
    } else {
        chosen
    }
}

/// `command_fence` of text whose fences pair in order: the chosen block's start, its body and
/// whether its info string names a shell.
fn fence_in(text: &str) -> Option<(usize, &str, bool)> {
    fenced_blocks(text).fold(None, |chosen, (start, cmd, shell)| {
        choose_fence(chosen, start, cmd, shell)
    })
}

/// The fenced blocks of `text`, paired in order: each one's start, its body (trimmed) and
/// whether its info string names a shell (`SHELL_FENCES`).
fn fenced_blocks(text: &str) -> impl Iterator<Item = (usize, &str, bool)> {
    let mut from = 0;
    std::iter::from_fn(move || {
        let start = from + find_fence(&text[from..])?;
        let after = &text[start + 3..];
        let nl = after.find('\n')?;
        let shell = SHELL_FENCES.contains(&after[..nl].trim().to_ascii_lowercase().as_str());
        let body = &after[nl + 1..];
        let end = find_fence(body).unwrap_or(body.len());
        // Past the closing fence (or the end of an unclosed block).
        from = start + 3 + nl + 1 + (end + 3).min(body.len());
        Some((start, body[..end].trim(), shell))
    })
}

/// How many blocks of `text` are fenced as shell (`SHELL_FENCES`): a text agent's harness runs
/// one action a turn.
fn shell_blocks(text: &str) -> usize {
    fenced_blocks(text).filter(|&(_, _, shell)| shell).count()
}

/// The command of a text agent's turn (`command_fence`).
#[cfg(test)]
pub(super) fn fenced_command(text: &str) -> Option<&str> {
    command_fence(text).map(|(_, cmd)| cmd)
}

/// The reasoning before the command, without its `THOUGHT:` label.
#[cfg(test)]
pub(super) fn thought(text: &str) -> &str {
    thought_before(text, command_fence(text).map(|(at, _)| at))
}

/// The reasoning of a turn's text before its command (`at`: where `command_fence` found it),
/// without its `THOUGHT:` label.
pub(super) fn thought_before(text: &str, at: Option<usize>) -> &str {
    let before = at.map_or(text, |i| &text[..i]);
    before
        .trim()
        .strip_prefix("THOUGHT:")
        .unwrap_or(before.trim())
        .trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A turn the library cut in its middle, the command's opening fence cut with it: the
    /// block the lone closing fence ends is the command, opening at the marker, and the
    /// thought is what stands before the marker (the thought between two quoted blocks was
    /// taken for the command: "ran `$ If `load=False`, it doesn't call ...`").
    #[test]
    fn a_command_whose_opening_fence_was_cut_is_read_from_the_marker() {
        let text = "THOUGHT: The check is on line 93.\n```python\n93: if x is None:\n```\nIf `load=False`, \
                    nothing runs.\n```python\nloader.load_disk()\n```\nLet me wr\n\
                    [... ~832 tokens cut from the middle ...]\nprint('PASS')\nEOF\n```";
        let (at, cmd) = command_fence(text).expect("a command");
        assert_eq!(cmd, "print('PASS')\nEOF");
        assert_eq!(
            thought_before(text, Some(at)),
            thought_before(&text[..at], None)
        );
        assert!(thought_before(text, Some(at)).ends_with("Let me wr"));
        // A shell block after the cut block is still the command.
        let later = format!("{text}\nthen\n```bash\npython repro.py\n```");
        assert_eq!(fenced_command(&later), Some("python repro.py"));
        // Fences that pair on both sides of a marker are read as they stand.
        let paired = "```bash\nls\n```\n[~40 tokens cut]\n```bash\npwd\n```";
        assert_eq!(fenced_command(paired), Some("pwd"));
    }

    #[test]
    fn the_command_is_the_shell_fence_not_code_quoted_in_the_thought() {
        let t = "THOUGHT: the method reads\n```python\ndef write(self):\n    pass\n```\nso I check it.\n\n```bash\nsed -n '70,75p' connect.py\n```";
        assert_eq!(fenced_command(t), Some("sed -n '70,75p' connect.py"));
        assert!(thought(t).contains("def write(self)"));
        // Without a shell fence, the last block; an unclosed one still counts.
        assert_eq!(fenced_command("a\n```\nls\n```\nb\n```\npwd"), Some("pwd"));
        assert_eq!(fenced_command("no fence here"), None);
    }
}
