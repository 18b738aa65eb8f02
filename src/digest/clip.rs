//! A text clipped to one line of at most so many characters: runs of one punctuation
//! character (`=====` rules of test runners) cut to three, whitespace collapsed to single
//! spaces (a line never carries a newline), and over the limit its head and end kept around an
//! ellipsis. The line is read lazily from each end, so the work is bounded by the characters
//! kept, not by the text: a digest clips every tool output of a span several times over.

/// The collapse's state, fed one character at a time (read a text reversed and its line comes
/// out reversed: both rules are symmetric).
#[derive(Default)]
struct Collapse {
    prev: Option<char>,
    run: u32,
    /// Whitespace seen since the last character produced.
    pending: bool,
    started: bool,
}

/// What one character read gives the line.
enum Gives {
    Nothing,
    /// The character.
    One(char),
    /// A space (the whitespace before it, collapsed), then the character.
    Spaced(char),
}

/// Whether punctuation `c` after `prev` passes the collapse unchanged (a run of one character
/// up to its third), `run` counting that run: the one rule `Collapse::verbatim` and
/// `verbatim_back` both read a run of punctuation by.
#[inline(always)]
fn punct_passes(c: u8, prev: u8, run: &mut u32) -> bool {
    if c != prev {
        *run = 1;
        return true;
    }
    if *run >= 3 {
        return false;
    }
    *run += 1;
    true
}

impl Collapse {
    #[inline(always)]
    fn feed(&mut self, ch: char) -> Gives {
        // Runs of one punctuation character say nothing past their third.
        if Some(ch) == self.prev && ch.is_ascii_punctuation() {
            self.run += 1;
        } else {
            self.run = 1;
        }
        self.prev = Some(ch);
        if self.run > 3 {
            return Gives::Nothing;
        }
        if ch.is_whitespace() {
            self.pending = true;
            return Gives::Nothing;
        }
        let spaced = self.pending && self.started;
        self.pending = false;
        self.started = true;
        if spaced {
            Gives::Spaced(ch)
        } else {
            Gives::One(ch)
        }
    }

    /// Feed the characters of `texts`, in order (or each read backwards, `reversed`), passing
    /// the line to `out` until it is full. Whether it was (the line went on). Reads bytes,
    /// decoding only non-ASCII characters, and passes a run of ASCII characters that the rules
    /// leave unchanged (`verbatim`: words, single spaces, short punctuation) as one slice, and
    /// skips a run they drop (`skip_dropped`) at once: a digest clips megabytes of tool output,
    /// and a chain of `Chars` iterators cost several times this loop; one character at a time
    /// through the rules, this loop took 8 ns a byte of line.
    #[inline(always)]
    fn run(&mut self, texts: &[&str], reversed: bool, out: &mut impl Sink) -> bool {
        for &t in texts {
            let b = t.as_bytes();
            let mut i = if reversed { b.len() } else { 0 };
            loop {
                let (ch, ascii) = if reversed {
                    if i == 0 {
                        break;
                    }
                    if b[i - 1] < 0x80 {
                        i -= 1;
                        (char::from(b[i]), true)
                    } else {
                        let c = t[..i].chars().next_back().unwrap_or('\u{fffd}');
                        i -= c.len_utf8();
                        (c, false)
                    }
                } else {
                    if i == b.len() {
                        break;
                    }
                    if b[i] < 0x80 {
                        i += 1;
                        (char::from(b[i - 1]), true)
                    } else {
                        let c = t[i..].chars().next().unwrap_or('\u{fffd}');
                        i += c.len_utf8();
                        (c, false)
                    }
                };
                match self.feed(ch) {
                    Gives::Nothing => {
                        // What follows a dropped ASCII character the same way (an indentation's
                        // spaces, a rule's `=` past its third) is dropped too: skipped here.
                        if ascii {
                            i = self.skip_dropped(b, i, reversed);
                        }
                        continue;
                    }
                    Gives::One(c) => {
                        if !out.char(c) {
                            return true;
                        }
                    }
                    Gives::Spaced(c) => {
                        if !out.char(' ') || !out.char(c) {
                            return true;
                        }
                    }
                }
                if !ascii {
                    continue;
                }
                // After a character written, the ASCII ones that pass unchanged (`verbatim`)
                // are written as one slice.
                // (Read no further than the line takes: a clip to 48 characters reads 49.)
                let room = out.room();
                let j = if reversed {
                    let floor = i.saturating_sub(room);
                    floor + self.verbatim_back(&b[floor..], i - floor)
                } else {
                    self.verbatim(&b[..i.saturating_add(room).min(b.len())], i)
                };
                let run = if reversed { &t[j..i] } else { &t[i..j] };
                i = j;
                if !run.is_empty() && !out.ascii(run, reversed) {
                    return true;
                }
            }
        }
        false
    }

    /// Where the ASCII text after index `i` of `b` (the character just written the last
    /// read, `prev`) stops passing the collapse unchanged, the state left as after feeding
    /// it: no whitespace but a single space before a character that is neither whitespace nor
    /// past ASCII, no run of one punctuation character past its third.
    #[inline(always)]
    fn verbatim(&mut self, b: &[u8], i: usize) -> usize {
        let Some(mut prev) = self.prev.map(|c| c as u8) else {
            return i;
        };
        let mut run = self.run;
        let mut j = i;
        loop {
            // (Plain bytes first, in a loop of their own: most of a text.)
            let from = j;
            j = crate::alnum_run::skip_forward(b, j);
            while j < b.len() && CLASS[usize::from(b[j])] == Class::Plain {
                j += 1;
            }
            if j > from {
                run = 1;
                prev = b[j - 1];
            }
            let Some(&c) = b.get(j) else { break };
            match CLASS[usize::from(c)] {
                Class::Punct => {
                    if !punct_passes(c, prev, &mut run) {
                        break;
                    }
                }
                Class::Space => {
                    // The space and the character after it together: the space alone would
                    // leave the collapse's pending space unwritten.
                    let Some(&n) = b.get(j + 1).filter(|&&n| CLASS[usize::from(n)].shown()) else {
                        break;
                    };
                    run = 1;
                    prev = n;
                    j += 2;
                    continue;
                }
                Class::Plain | Class::Other => break,
            }
            prev = c;
            j += 1;
        }
        if j > i {
            self.prev = Some(char::from(prev));
            self.run = run;
        }
        j
    }

    /// `verbatim` read backwards: where the text before index `i` stops passing unchanged.
    #[inline(always)]
    fn verbatim_back(&mut self, b: &[u8], i: usize) -> usize {
        let Some(mut prev) = self.prev.map(|c| c as u8) else {
            return i;
        };
        let mut run = self.run;
        let mut j = i;
        loop {
            let from = j;
            j = crate::alnum_run::skip_back(b, j);
            while j > 0 && CLASS[usize::from(b[j - 1])] == Class::Plain {
                j -= 1;
            }
            if j < from {
                run = 1;
                prev = b[j];
            }
            if j == 0 {
                break;
            }
            let c = b[j - 1];
            match CLASS[usize::from(c)] {
                Class::Punct => {
                    if !punct_passes(c, prev, &mut run) {
                        break;
                    }
                }
                Class::Space => {
                    // (As `verbatim` reads it: the space with the character before it.)
                    let Some(&n) = j
                        .checked_sub(2)
                        .map(|k| &b[k])
                        .filter(|&&n| CLASS[usize::from(n)].shown())
                    else {
                        break;
                    };
                    run = 1;
                    prev = n;
                    j -= 2;
                    continue;
                }
                Class::Plain | Class::Other => break,
            }
            prev = c;
            j -= 1;
        }
        if j < i {
            self.prev = Some(char::from(prev));
            self.run = run;
        }
        j
    }

    /// After an ASCII character dropped (whitespace, or punctuation past its run's third),
    /// index `i` moved past the ASCII characters right after it that are dropped as well:
    /// whitespace after whitespace, the same punctuation after punctuation. The state is as
    /// after feeding them.
    #[inline(always)]
    fn skip_dropped(&mut self, b: &[u8], i: usize, reversed: bool) -> usize {
        let Some(prev) = self.prev.map(|c| c as u8) else {
            return i;
        };
        let ws = is_ascii_space(prev);
        let same = |c: u8| if ws { is_ascii_space(c) } else { c == prev };
        let mut j = i;
        let mut last = prev;
        if reversed {
            while j > 0 && same(b[j - 1]) {
                last = b[j - 1];
                j -= 1;
            }
        } else {
            while j < b.len() && same(b[j]) {
                last = b[j];
                j += 1;
            }
        }
        let skipped = i.abs_diff(j) as u32;
        if skipped > 0 {
            self.prev = Some(char::from(last));
            if !ws {
                self.run += skipped;
            }
        }
        j
    }
}

/// How the collapse treats an ASCII byte.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Passes unchanged: neither whitespace nor punctuation.
    Plain,
    /// Punctuation: passes unless its run's fourth or later.
    Punct,
    /// A space: passes when single between characters shown.
    Space,
    /// Whitespace but a space (tab, newline, ...), or past ASCII.
    Other,
}

impl Class {
    /// Always shown when it follows a single space.
    fn shown(self) -> bool {
        matches!(self, Class::Plain | Class::Punct)
    }
}

/// An ASCII byte `char::is_whitespace` holds: a space, tab to carriage return.
fn is_ascii_space(c: u8) -> bool {
    matches!(c, b' ' | 0x09..=0x0d)
}

/// Each byte's `Class`; `Other` for tab to carriage return, and for bytes past ASCII.
const CLASS: [Class; 256] = {
    let mut t = [Class::Other; 256];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        t[b] = if c == b' ' {
            Class::Space
        } else if matches!(c, 0x09..=0x0d) {
            Class::Other
        } else if c.is_ascii_punctuation() {
            Class::Punct
        } else {
            Class::Plain
        };
        b += 1;
    }
    t
};

/// Where a collapsed line goes.
trait Sink {
    /// One character; false when the line is full and this one did not fit.
    fn char(&mut self, c: char) -> bool;
    /// Characters past which the line is surely full (more are not read for it).
    fn room(&self) -> usize;
    /// ASCII characters in the order read (`reversed`: from the slice's end); false when the
    /// line is full and some did not fit.
    fn ascii(&mut self, run: &str, reversed: bool) -> bool {
        if reversed {
            run.bytes().rev().all(|b| self.char(char::from(b)))
        } else {
            run.bytes().all(|b| self.char(char::from(b)))
        }
    }
}

/// The first `max` characters of a line.
struct Head<'l> {
    line: &'l mut String,
    room: usize,
}

impl Sink for Head<'_> {
    fn char(&mut self, c: char) -> bool {
        if self.room == 0 {
            return false;
        }
        self.line.push(c);
        self.room -= 1;
        true
    }

    fn room(&self) -> usize {
        self.room + 1
    }

    fn ascii(&mut self, run: &str, _reversed: bool) -> bool {
        let k = run.len().min(self.room);
        self.line.push_str(&run[..k]);
        self.room -= k;
        k == run.len()
    }
}

/// The last `max` characters of a line, read backwards: each character's UTF-8 bytes come
/// out reversed, so the bytes reversed once at the end are the line's end in order (a `char`
/// per character, read back one at a time, cost more than the collapse that read them).
struct Tail {
    rev: Vec<u8>,
    n: usize,
    max: usize,
}

impl Tail {
    /// The characters read, in the line's order, appended to `out`.
    fn push_to(mut self, out: &mut String) {
        self.rev.reverse();
        // (Whole characters were pushed, each reversed: reversed back, the bytes are UTF-8.)
        out.push_str(std::str::from_utf8(&self.rev).unwrap_or_default());
    }
}

impl Sink for Tail {
    fn char(&mut self, c: char) -> bool {
        let mut buf = [0u8; 4];
        self.rev.extend(c.encode_utf8(&mut buf).bytes().rev());
        self.n += 1;
        self.n < self.max
    }

    fn room(&self) -> usize {
        self.max - self.n + 1
    }

    fn ascii(&mut self, run: &str, _reversed: bool) -> bool {
        let k = run.len().min(self.max - self.n);
        self.rev
            .extend(run.as_bytes()[run.len() - k..].iter().rev());
        self.n += k;
        self.n < self.max
    }
}

/// How long a line is, up to `max + 1` characters, and its character at `at`.
struct Count {
    n: usize,
    max: usize,
    at: usize,
    at_char: Option<char>,
}

impl Sink for Count {
    fn char(&mut self, c: char) -> bool {
        if self.n == self.at {
            self.at_char = Some(c);
        }
        self.n += 1;
        self.n <= self.max + 1
    }

    fn room(&self) -> usize {
        self.max.saturating_add(2).saturating_sub(self.n)
    }

    fn ascii(&mut self, run: &str, _reversed: bool) -> bool {
        if (self.n..self.n + run.len()).contains(&self.at) {
            self.at_char = Some(char::from(run.as_bytes()[self.at - self.n]));
        }
        self.n += run.len();
        self.n <= self.max + 1
    }
}

/// The first `max` characters of the collapsed line of `texts` (read in order) appended to
/// `line`, and whether the line is longer.
fn collapse_head(texts: &[&str], max: usize, line: &mut String) -> bool {
    Collapse::default().run(texts, false, &mut Head { line, room: max })
}

/// Whitespace collapsed, at most `max` characters (an ellipsis marks a cut).
pub(super) fn clip(s: &str, max: usize) -> String {
    clip_ends(s, max, 1.0)
}

/// Bytes `is_whole` counts letters and digits over between checks of the count (at most 255:
/// a block's count is summed in a byte, `solid_over`).
const SOLID_BLOCK: usize = 128;

/// Whether `clip_ends(s, max, head_share)` gives `s`'s whole line: `s` is not cut to windows
/// and its line holds at most `max` characters, or one more with the ellipsis exactly where the
/// clip would put its own (a line an earlier clip made: clipping it again changes nothing).
/// Then a clip to any larger limit gives the same line. Reads at most `max + 1` characters
/// (none when the byte length decides).
pub(super) fn is_whole(s: &str, max: usize, head_share: f64) -> bool {
    if s.len() <= max {
        return true;
    }
    let window = max.saturating_mul(8).max(64);
    if s.len() > 2 * window {
        return false;
    }
    // Letters and digits all survive the collapse: more of them than the line may hold, and
    // it is not whole (a byte count, far cheaper than collapsing).
    if solid_over(&[s], max + 1) {
        return false;
    }
    let head_n = (max as f64 * head_share) as usize;
    let mut count = Count {
        n: 0,
        max,
        at: head_n,
        at_char: None,
    };
    let longer = Collapse::default().run(&[s], false, &mut count);
    !longer && (count.n <= max || count.at_char == Some('…'))
}

/// Whether `texts` hold more than `n` ASCII letters and digits, each a character of their
/// collapsed line (the collapse keeps them all). Counted a block at a time: a digest asks this
/// of every unit's forms, and a test per byte kept the count from running as vector code.
fn solid_over(texts: &[&str], n: usize) -> bool {
    let mut solid = 0usize;
    for t in texts {
        for block in t.as_bytes().chunks(SOLID_BLOCK) {
            // Summed in a byte (a block holds at most 128 bytes): the sum runs as vector code
            // sixteen bytes an instruction, where a `usize` count ran two.
            let k = block.iter().fold(0u8, |k, c| {
                k.wrapping_add(u8::from(c.is_ascii_alphanumeric()))
            });
            solid += usize::from(k);
            if solid > n {
                return true;
            }
        }
    }
    false
}

/// The part of `s` a clip to `max` characters may show: all of it, or (a long text) windows of
/// its head and end around ` … ` (a window of 8 bytes per character kept covers squeezed rules
/// and runs of spaces).
fn windows(s: &str, max: usize, head_share: f64) -> (&str, &str, &str) {
    let window = max.saturating_mul(8).max(64);
    if s.len() <= 2 * window {
        return (s, "", "");
    }
    let head_w = ((window as f64 * head_share * 2.0) as usize).min(s.len());
    let mut a = head_w;
    while !s.is_char_boundary(a) {
        a -= 1;
    }
    let mut b = s.len() - (2 * window - head_w).min(s.len());
    while !s.is_char_boundary(b) {
        b += 1;
    }
    (&s[..a], " … ", &s[b.max(a)..])
}

/// Whether `s` is its own collapsed line: ASCII, no whitespace but single spaces between
/// characters, no run of one punctuation character past three. One pass over the bytes: most
/// texts a digest clips are short values (a path, a number) that pass unchanged.
fn collapsed_already(s: &str) -> bool {
    let b = s.as_bytes();
    if b.first() == Some(&b' ') || b.last() == Some(&b' ') {
        return false;
    }
    let mut run = 0u8;
    let mut prev = 0u8;
    for &c in b {
        if c >= 0x80 || matches!(c, 0x09..=0x0d) || (c == b' ' && prev == b' ') {
            return false;
        }
        run = if c == prev && c.is_ascii_punctuation() {
            run + 1
        } else {
            1
        };
        if run > 3 {
            return false;
        }
        prev = c;
    }
    true
}

/// Fewest characters of a head `whole_line_share` leaves beside the end's whole lines: a head
/// of a few (`_…__main__.__spec__.name is ...`) says nothing, and the share stays as given.
const MIN_SNAPPED_HEAD: usize = 12;

/// The head share at which `clip_ends(s, max, _)` shows whole the line of `s` its end starts
/// in: the end (`1 - head_share` of `max` characters) reaches back to that line's start when
/// the head can give what that takes, else `head_share`. A script's verdict is its last line
/// (`SUCCESS: Cause is None, so previous exception is hidden.`); an end of a fixed share cut
/// it to `so previous exception is hidden.` beside a head of `Exception: my ne`.
/// Reads the lines of the last `8 * max` bytes, each up to `max + 1` characters.
pub(super) fn whole_line_share(s: &str, max: usize, head_share: f64) -> f64 {
    let head_n = (max as f64 * head_share) as usize;
    let tail_n = max.saturating_sub(head_n);
    if head_n == 0 || s.len() <= max {
        return head_share;
    }
    let mut from = s.len().saturating_sub(max.saturating_mul(8));
    while !s.is_char_boundary(from) {
        from += 1;
    }
    let mut end = 0usize;
    for line in s[from..].trim_end().rsplit('\n') {
        let mut count = Count {
            n: 0,
            max,
            at: usize::MAX,
            at_char: None,
        };
        Collapse::default().run(&[line], false, &mut count);
        if count.n == 0 {
            continue;
        }
        let with = if end == 0 { count.n } else { end + 1 + count.n };
        if with > max {
            return head_share;
        }
        if with >= tail_n {
            return if max - with < MIN_SNAPPED_HEAD {
                head_share
            } else {
                1.0 - with as f64 / max as f64
            };
        }
        end = with;
    }
    head_share
}

/// Whitespace collapsed (a line never carries a newline); over `max` characters, the head
/// (`head_share` of `max`) and the end are kept around an ellipsis.
pub(super) fn clip_ends(s: &str, max: usize, head_share: f64) -> String {
    let mut line = String::new();
    clip_ends_into(s, max, head_share, &mut line);
    line
}

/// `clip_ends(s, max, head_share)` appended to `out`: a form writes its parts into one
/// string (each part in a string of its own, copied into a `format!` of the form, cost an
/// allocation and a copy per part).
pub(super) fn clip_ends_into(s: &str, max: usize, head_share: f64, out: &mut String) {
    if s.len() <= max && collapsed_already(s) {
        out.push_str(s);
        return;
    }
    let (head, mid, tail) = windows(s, max, head_share);
    let head_n = (max as f64 * head_share) as usize;
    let tail_n = max.saturating_sub(head_n);
    out.reserve(max.min(s.len()) + 4);
    let base = out.len();
    // More letters and digits than the line holds: it is longer, and only its head is read
    // from the front (collapsing `max` characters to keep `head_n` of them was most of a
    // digest's clipping).
    if s.len() > max && solid_over(&[head, tail], max) {
        collapse_head(&[head, mid, tail], head_n, out);
    } else if !collapse_head(&[head, mid, tail], max, out) {
        return;
    }
    // Longer than `max`: the head from the front, the end read backwards. (An ASCII head's
    // `head_n` characters are as many bytes.)
    let line = &out.as_bytes()[base..];
    let head_end = if line.len() >= head_n && line[..head_n].is_ascii() {
        base + head_n
    } else {
        out[base..]
            .char_indices()
            .nth(head_n)
            .map_or(out.len(), |(i, _)| base + i)
    };
    out.truncate(head_end);
    out.push('…');
    if tail_n > 0 {
        let mut end = Tail {
            rev: Vec::with_capacity(tail_n),
            n: 0,
            max: tail_n,
        };
        Collapse::default().run(&[tail, mid, head], true, &mut end);
        end.push_to(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    #[test]
    fn a_clip_shows_the_line_its_end_starts_in_whole_when_the_head_can_give_it() {
        let out = "Exception: my new error\n__cause__: None\n__context__: my error\n\
                   SUCCESS: Cause is None, hidden.";
        let share = whole_line_share(out, 70, 0.35);
        let line = clip_ends(out, 70, share);
        // The end's 46 characters started inside `__context__: my error`: that line is whole.
        assert!(
            line.ends_with("…__context__: my error SUCCESS: Cause is None, hidden."),
            "{line}"
        );
        assert!(line.starts_with("Exception: my new"), "{line}");
        assert_eq!(clip_ends(out, 70, 0.35).matches("__context__").count(), 0);
        // At 60 that would leave a head of 7 characters: the share stays as given.
        assert_eq!(whole_line_share(out, 60, 0.35), 0.35);
        // A last line longer than the whole clip, or a single line, keeps the share given.
        assert_eq!(whole_line_share(&"x".repeat(200), 60, 0.35), 0.35);
        let long_last = format!("head\n{}", "y ".repeat(80));
        assert_eq!(whole_line_share(&long_last, 60, 0.35), 0.35);
        // An end that already starts at a line's start, or a clip of the end only, is as given.
        assert_eq!(whole_line_share(out, 60, 0.0), 0.0);
        assert_eq!(whole_line_share("short", 60, 0.35), 0.35);
    }

    /// The clip as first written: the whole (windowed) text collapsed, then cut.
    fn reference(s: &str, max: usize, head_share: f64) -> String {
        let (h, m, t) = windows(s, max, head_share);
        let s = format!("{h}{m}{t}");
        let squeezed = squeeze_rules(&s);
        let line = squeezed.split_whitespace().collect::<Vec<_>>().join(" ");
        let total = line.chars().count();
        if line.len() <= max || total <= max {
            return line;
        }
        let head_n = ((max as f64 * head_share) as usize).min(total);
        let tail_n = max.saturating_sub(head_n).min(total - head_n);
        let head: String = line.chars().take(head_n).collect();
        let tail: String = line.chars().skip(total - tail_n).collect();
        format!("{head}…{tail}")
    }

    /// `is_whole` as its definition reads: the text is not cut to windows, and its whole line
    /// holds at most `max` characters, or `max + 1` with the ellipsis where a clip puts its own.
    fn reference_whole(s: &str, max: usize, head_share: f64) -> bool {
        if s.len() <= max {
            return true;
        }
        if s.len() > 2 * max.saturating_mul(8).max(64) {
            return false;
        }
        let squeezed = squeeze_rules(s);
        let line: Vec<char> = squeezed
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .collect();
        let head_n = (max as f64 * head_share) as usize;
        line.len() <= max || (line.len() == max + 1 && line.get(head_n) == Some(&'…'))
    }

    fn squeeze_rules(s: &str) -> Cow<'_, str> {
        let mut out = String::with_capacity(s.len());
        let mut run = 0;
        let mut prev = None;
        for ch in s.chars() {
            if Some(ch) == prev && ch.is_ascii_punctuation() {
                run += 1;
            } else {
                run = 1;
            }
            prev = Some(ch);
            if run <= 3 {
                out.push(ch);
            }
        }
        Cow::Owned(out)
    }

    #[test]
    fn a_whole_clip_is_the_same_line_at_every_larger_limit() {
        for s in [
            "a  b\n\n c",
            &"word ".repeat(40),
            &"x\n".repeat(300),
            "=====  ===",
        ] {
            for max in [1usize, 5, 8, 48, 200, 900] {
                if is_whole(s, max, 0.6) {
                    for larger in [max, max + 1, max * 3, 6_000] {
                        assert_eq!(clip_ends(s, larger, 0.35), clip_ends(s, max, 0.6));
                    }
                } else {
                    assert_ne!(
                        clip_ends(s, max, 0.6),
                        clip_ends(s, max * 8, 0.6),
                        "{s:?} {max}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_text_that_is_its_own_line_is_kept_as_it_is() {
        for s in [
            "src/app.py",
            "a b c",
            "x === y",
            "",
            " lead",
            "trail ",
            "two  spaces",
            "tab\there",
            "====",
            "é",
            "a\nb",
        ] {
            let reference = reference(s, 40, 0.6);
            assert_eq!(clip_ends(s, 40, 0.6), reference, "{s:?}");
            if collapsed_already(s) {
                assert_eq!(reference, s);
            }
        }
    }

    #[test]
    fn a_clipped_line_clipped_again_is_whole() {
        let text = "word ".repeat(500);
        for (max, share) in [(80, 0.6), (160, 0.35), (1_500, 0.7)] {
            let once = clip_ends(&text, max, share);
            assert!(is_whole(&once, max, share), "{once}");
            assert_eq!(clip_ends(&once, max, share), once);
            assert!(!is_whole(&text, max, share));
        }
    }

    #[test]
    fn reading_from_the_ends_matches_collapsing_the_whole_text() {
        // A deterministic stream of awkward texts: rules, runs of spaces and newlines, multibyte
        // characters, long and short, around every limit a digest uses.
        let pieces = [
            "word",
            " ",
            "  ",
            "\n",
            "\t",
            "=====",
            "---",
            "é",
            "日本語",
            "…",
            "a",
            "=",
            "==",
            "x ⏎ y",
            "FAILED",
            "\u{2003}",
            ".....",
            "passed",
        ];
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for case in 0..3_000 {
            let len = (next() % if case % 10 == 0 { 4_000 } else { 120 }) as usize;
            let s: String = (0..len)
                .map(|_| pieces[(next() % pieces.len() as u64) as usize])
                .collect();
            for max in [0usize, 1, 3, 8, 48, 80, 160, 400] {
                for share in [0.35, 0.6, 0.7, 1.0] {
                    assert_eq!(
                        clip_ends(&s, max, share),
                        reference(&s, max, share),
                        "{s:?} {max} {share}"
                    );
                    assert_eq!(
                        is_whole(&s, max, share),
                        reference_whole(&s, max, share),
                        "{s:?} {max} {share}"
                    );
                }
            }
        }
    }
}
