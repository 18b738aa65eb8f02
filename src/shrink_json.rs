//! JSON-safe shrinking of tool-call arguments.
//!
//! Slicing an arguments string to 200 chars and appending "...[truncated]" leaves a text that
//! is not JSON; providers that re-parse arguments answer HTTP 400 on that turn and on every
//! later one (the history is replayed), so the session is dead. Here the document is shrunk
//! *inside* its structure and the result is always valid JSON.
//!
//! ## What the output keeps, stage by stage
//! The input is scanned once to validate it (iteratively, with an explicit stack: no recursion,
//! so nesting depth is only bounded by memory) and to count the children of every container.
//! Then the first stage whose result fits `max_chars` is used:
//! 0. the input itself when it fits (byte-identical), else its compact form (whitespace
//!    outside strings removed) when that fits;
//! 1. **strings**: every string value longer than a common cap `C` (found by arithmetic over the
//!    string widths, as large as fits, never below [`SHORT_STRING`]) keeps a head and a short
//!    tail around a marker `…[cut N chars]…`, so the longest strings shrink first and short ones
//!    (paths, ids, enums) stay whole. Keys, numbers, booleans and null are never touched;
//! 2. **arrays**: arrays with more than `K + 1` items keep their first `K - 1` items, a marker
//!    element `"…[N items cut]…"` and their last item, `K` as large as fits (binary search,
//!    at least 2); strings then get the room that is left;
//! 3. **depth**: non-empty containers at depth `D` and below become marker strings
//!    (`"…[object of N keys cut]…"`, `"…[array of N items cut]…"`), `D` as large as fits; the
//!    array and string caps then get the room that is left. At `D = 0` the whole document is one
//!    marker, which always fits; the root keeps its type even then (`{"_cut":"…[object of N
//!    keys cut]…"}`, `["…[array of N items cut]…"]`), since arguments must stay an object.
//!
//! Every cut is made on a character boundary of the *decoded* string: a UTF-8 sequence, an
//! escape (`\n`, `\u00e9`) and an escaped surrogate pair (`\ud83d\ude00`) are one unit each, and
//! the kept head and tail are the original raw bytes, so nothing is re-escaped. `N` in a string
//! marker counts decoded characters (what Python's `len` returns for the decoded value).
//!
//! Invalid JSON (including a document already cut mid-value) becomes
//! `{"invalid_json_preview":"<head>…","original_chars":N}`: still valid JSON, still saying what
//! the call was.
//!
//! ## Sizes
//! `max_chars` counts *characters* (Unicode scalar values) of the output text, the unit of
//! Python's `len(str)`, not bytes. Values below [`MIN_MAX_CHARS`] are raised to it.
//!
//! ## Guarantees
//! The output parses; it fits `max_chars`; it is a deterministic function of the input, and
//! since a fitting input is returned unchanged, `shrink(shrink(x)) == shrink(x)`. Time is
//! linear in the input per pass with O(log) passes (binary searches), memory is O(containers +
//! long strings), never O(depth) of the call stack.

use std::borrow::Cow;

use crate::json_string::push_json_string;

/// String values at most this long (characters of their JSON text, quotes excluded) are never
/// cut; it is also the smallest cap a cut string is shrunk to.
pub const SHORT_STRING: usize = 32;
/// Containers whose raw text is at most this many bytes are never collapsed into a marker
/// (the longest marker is about this long, so collapsing them would not save anything).
const COLLAPSE_MIN_BYTES: usize = 40;
/// In the array and depth stages, strings are first kept up to this many characters (paths,
/// identifiers) if that is enough to fit; only then down to `SHORT_STRING`.
const PATH_STRING: usize = 64;
/// The smallest `max_chars` honoured: room for the largest marker document. Smaller values are
/// raised to it.
pub const MIN_MAX_CHARS: usize = 64;

/// Shrink `text` (normally a tool call's `arguments`) to valid JSON of at most `max_chars`
/// characters. See the module docs for what is kept.
pub fn shrink_json(text: &str, max_chars: usize) -> String {
    shrink_json_cow(text, max_chars).into_owned()
}

/// The key an object's root takes when the whole document is one marker (`{"_cut":"…[object
/// of N keys cut]…"}`): arguments must stay an object.
const ROOT_CUT_KEY: &str = "_cut";

/// Whether `shrunk` (a `shrink_json` output) is an object collapsed whole into its one marker,
/// none of its keys kept.
pub fn collapsed_whole(shrunk: &str) -> bool {
    shrunk
        .strip_prefix("{\"")
        .and_then(|r| r.strip_prefix(ROOT_CUT_KEY))
        .and_then(|r| r.strip_prefix("\":\"…[object of "))
        .and_then(|r| r.strip_suffix(" keys cut]…\"}"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// True when `text` is one valid RFC 8259 JSON value (surrounding whitespace allowed).
pub fn is_valid_json(text: &str) -> bool {
    validate(text).is_some()
}

/// As [`shrink_json`], borrowing the input when it comes back unchanged (valid and fitting).
pub fn shrink_json_cow(text: &str, max_chars: usize) -> Cow<'_, str> {
    let max = max_chars.max(MIN_MAX_CHARS);
    let Some(doc) = validate(text) else {
        return Cow::Owned(invalid_wrapper(text, max));
    };
    if doc.lone_surrogate {
        // Grammatical JSON (Python's json writes it for a str holding a lone surrogate), but
        // not Unicode text: strict parsers (serde_json, Go, many proxies) reject it, which is
        // the poisoned-history failure this function exists to prevent. `\ufffd` has the same
        // length, so the document's shape and sizes are unchanged.
        let fixed = replace_lone_surrogates(text);
        return Cow::Owned(shrink_json_cow(&fixed, max).into_owned());
    }
    // Cheap exits first: the input fits as it is (byte-identical), or once compacted.
    if text.len() <= max || char_count(text.as_bytes()) <= max {
        return Cow::Borrowed(text);
    }
    Cow::Owned(shrink_valid(text, &doc, max))
}

// ---------------------------------------------------------------------------------------------
// Scanning

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    ObjOpen,
    ObjClose,
    ArrOpen,
    ArrClose,
    Colon,
    Comma,
    /// A string: raw body range (quotes excluded) and its width in characters.
    Str {
        start: usize,
        end: usize,
        width: usize,
    },
    /// A number or literal: raw range.
    Atom {
        start: usize,
        end: usize,
    },
    Eof,
    Error,
}

/// Characters (Unicode scalar values) of a UTF-8 byte slice: the bytes that do not continue a
/// sequence.
fn char_count(b: &[u8]) -> usize {
    b.iter().filter(|&&c| (c & 0xC0) != 0x80).count()
}

struct Lexer<'a> {
    b: &'a [u8],
    i: usize,
    /// A `\uD800`-`\uDFFF` escape that is not half of a pair was seen.
    lone_surrogate: bool,
}

impl<'a> Lexer<'a> {
    fn new(text: &'a str) -> Self {
        Lexer {
            b: text.as_bytes(),
            i: 0,
            lone_surrogate: false,
        }
    }

    fn next(&mut self) -> Tok {
        let b = self.b;
        while self.i < b.len() && matches!(b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
        let Some(&c) = b.get(self.i) else {
            return Tok::Eof;
        };
        let single = |t: Tok, i: &mut usize| {
            *i += 1;
            t
        };
        match c {
            b'{' => single(Tok::ObjOpen, &mut self.i),
            b'}' => single(Tok::ObjClose, &mut self.i),
            b'[' => single(Tok::ArrOpen, &mut self.i),
            b']' => single(Tok::ArrClose, &mut self.i),
            b':' => single(Tok::Colon, &mut self.i),
            b',' => single(Tok::Comma, &mut self.i),
            b'"' => self.string(),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Tok::Error,
        }
    }

    fn literal(&mut self, word: &[u8]) -> Tok {
        let start = self.i;
        if self.b[start..].starts_with(word) {
            self.i += word.len();
            Tok::Atom { start, end: self.i }
        } else {
            Tok::Error
        }
    }

    fn digits(&mut self) -> usize {
        let s = self.i;
        while self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
        }
        self.i - s
    }

    fn number(&mut self) -> Tok {
        let start = self.i;
        if self.b[self.i] == b'-' {
            self.i += 1;
        }
        match self.b.get(self.i) {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Tok::Error,
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return Tok::Error;
            }
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Tok::Error;
            }
        }
        Tok::Atom { start, end: self.i }
    }

    fn string(&mut self) -> Tok {
        let b = self.b;
        self.i += 1;
        let start = self.i;
        let mut width = 0usize;
        loop {
            // Plain bytes in bulk: the common case.
            let run_start = self.i;
            while self.i < b.len() && !matches!(b[self.i], b'"' | b'\\' | 0x00..=0x1F) {
                self.i += 1;
            }
            width += char_count(&b[run_start..self.i]);
            match b.get(self.i) {
                Some(b'"') => {
                    let end = self.i;
                    self.i += 1;
                    return Tok::Str { start, end, width };
                }
                Some(b'\\') => match b.get(self.i + 1) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                        self.i += 2;
                        width += 2;
                    }
                    Some(b'u') => {
                        match b.get(self.i + 2..self.i + 6) {
                            Some(h) if h.iter().all(u8::is_ascii_hexdigit) => {}
                            _ => return Tok::Error,
                        }
                        let (n, _) = unit(&b[self.i..]);
                        if n == 6 && surrogate(&b[self.i + 2..self.i + 6]) {
                            self.lone_surrogate = true;
                        }
                        self.i += n;
                        width += n;
                    }
                    _ => return Tok::Error,
                },
                // A raw control character or the end of the text: not a JSON string.
                _ => return Tok::Error,
            }
        }
    }
}

/// What validation learned: per container, in opening order, its child count and whether its
/// raw text is short enough that collapsing it into a marker would not save anything.
struct Doc {
    counts: Vec<u32>,
    small: Vec<bool>,
    max_depth: usize,
    max_array: usize,
    root_is_container: bool,
    /// Some string escapes a lone surrogate (see `replace_lone_surrogates`).
    lone_surrogate: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Value,
    ValueOrClose,
    KeyOrClose,
    Key,
    Colon,
    CommaOrClose,
    Done,
}

/// Validate `text` as one RFC 8259 JSON value (surrounding whitespace allowed) and count every
/// container's children. `None` when it is not JSON.
fn validate(text: &str) -> Option<Doc> {
    let mut lx = Lexer::new(text);
    // Stack of (is_object, ordinal).
    let mut stack: Vec<(bool, usize)> = Vec::new();
    let mut counts: Vec<u32> = Vec::new();
    let mut opened: Vec<usize> = Vec::new();
    let mut small: Vec<bool> = Vec::new();
    let mut doc = Doc {
        counts: Vec::new(),
        small: Vec::new(),
        max_depth: 0,
        max_array: 0,
        root_is_container: false,
        lone_surrogate: false,
    };
    let mut state = State::Value;
    loop {
        let t = lx.next();
        match (state, t) {
            (State::Done, Tok::Eof) => break,
            (State::Value | State::ValueOrClose, Tok::ObjOpen | Tok::ArrOpen) => {
                if let Some(&(_, ord)) = stack.last() {
                    counts[ord] = counts[ord].saturating_add(1);
                } else {
                    doc.root_is_container = true;
                }
                let is_obj = t == Tok::ObjOpen;
                stack.push((is_obj, counts.len()));
                counts.push(0);
                // Start offset for now; replaced by the smallness flag at the close.
                opened.push(lx.i - 1);
                small.push(false);
                doc.max_depth = doc.max_depth.max(stack.len());
                state = if is_obj {
                    State::KeyOrClose
                } else {
                    State::ValueOrClose
                };
            }
            (State::Value | State::ValueOrClose, Tok::Str { .. } | Tok::Atom { .. }) => {
                if let Some(&(_, ord)) = stack.last() {
                    counts[ord] = counts[ord].saturating_add(1);
                }
                state = if stack.is_empty() {
                    State::Done
                } else {
                    State::CommaOrClose
                };
            }
            (State::KeyOrClose | State::Key, Tok::Str { .. }) => state = State::Colon,
            (State::Colon, Tok::Colon) => state = State::Value,
            (State::CommaOrClose, Tok::Comma) => {
                state = if stack.last()?.0 {
                    State::Key
                } else {
                    State::Value
                };
            }
            (State::KeyOrClose | State::CommaOrClose, Tok::ObjClose)
            | (State::ValueOrClose | State::CommaOrClose, Tok::ArrClose) => {
                let (is_obj, ord) = stack.pop()?;
                if is_obj != (t == Tok::ObjClose) {
                    return None;
                }
                if !is_obj {
                    doc.max_array = doc.max_array.max(counts[ord] as usize);
                }
                let start = opened.pop()?;
                small[ord] = lx.i - start <= COLLAPSE_MIN_BYTES;
                state = if stack.is_empty() {
                    State::Done
                } else {
                    State::CommaOrClose
                };
            }
            _ => return None,
        }
    }
    doc.counts = counts;
    doc.small = small;
    doc.lone_surrogate = lx.lone_surrogate;
    Some(doc)
}

// ---------------------------------------------------------------------------------------------
// Rendering (and measuring, with the same walk)

/// Shrink parameters: string cap, items kept per long array, collapse depth.
#[derive(Clone, Copy, Debug)]
struct Params {
    cap: usize,
    keep: usize,
    depth: usize,
}

/// Where the walk writes: a real string, or only a character count (plus the widths of the
/// strings that the cap would cut, for the arithmetic of the string stage).
trait Sink {
    fn raw(&mut self, s: &str);
    /// A string value (raw body, its width) under cap `cap`.
    fn string(&mut self, body: &str, width: usize, cap: usize);
    /// True when the walk can stop: a measure already over its limit.
    fn over(&self) -> bool {
        false
    }
}

struct Measure {
    chars: usize,
    /// Stop counting past this: the answer is "does not fit" anyway.
    limit: usize,
    /// Widths of the strings longer than the cap that the walk kept.
    long: Vec<usize>,
}

impl Sink for Measure {
    fn raw(&mut self, s: &str) {
        self.chars += char_count(s.as_bytes());
    }
    fn string(&mut self, _body: &str, width: usize, cap: usize) {
        if width > cap {
            self.long.push(width);
        }
        // Upper bound: a cut string renders in at most `cap` characters.
        self.chars += 2 + width.min(cap);
    }
    fn over(&self) -> bool {
        self.chars > self.limit
    }
}

struct Render(String);

impl Sink for Render {
    fn raw(&mut self, s: &str) {
        self.0.push_str(s);
    }
    fn string(&mut self, body: &str, width: usize, cap: usize) {
        self.0.push('"');
        if width <= cap {
            self.0.push_str(body);
        } else {
            cut_string(&mut self.0, body, width, cap);
        }
        self.0.push('"');
    }
}

fn digits(n: usize) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// True when 4 hex digits name a UTF-16 surrogate (U+D800 to U+DFFF).
fn surrogate(hex: &[u8]) -> bool {
    matches!(
        hex,
        [b'd' | b'D', b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F', _, _]
    )
}

/// `text` (valid JSON) with every escape of a lone surrogate replaced by `\ufffd`.
fn replace_lone_surrogates(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut i, mut kept) = (0, 0);
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        let (n, _) = unit(&b[i..]);
        if n == 6 && b[i + 1] == b'u' && surrogate(&b[i + 2..i + 6]) {
            out.push_str(&text[kept..i]);
            out.push_str("\\ufffd");
            kept = i + 6;
        }
        i += n;
    }
    out.push_str(&text[kept..]);
    out
}

/// Length of one decoded character's raw text at the start of `b` (a string body): an escape,
/// an escaped surrogate pair, or one UTF-8 sequence. Returns (bytes, characters of output).
fn unit(b: &[u8]) -> (usize, usize) {
    if b[0] == b'\\' {
        if b.get(1) == Some(&b'u') {
            let hex = |s: &[u8]| {
                std::str::from_utf8(s)
                    .ok()
                    .and_then(|h| u16::from_str_radix(h, 16).ok())
            };
            let hi = b.get(2..6).and_then(hex);
            if let Some(0xD800..=0xDBFF) = hi {
                if b.get(6..8) == Some(b"\\u") {
                    if let Some(0xDC00..=0xDFFF) = b.get(8..12).and_then(hex) {
                        // A surrogate pair is one character: never split it.
                        return (12, 12);
                    }
                }
            }
            return (6, 6);
        }
        return (2, 2);
    }
    let n = match b[0] {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    };
    (n.min(b.len()), 1)
}

/// Write the cut rendering of a string body of `width` characters into at most `cap`
/// characters: head, marker `…[cut N chars]…`, tail, all on unit boundaries.
fn cut_string(out: &mut String, body: &str, width: usize, cap: usize) {
    let b = body.as_bytes();
    // The marker is at most this long: N (decoded characters cut) <= width.
    let marker_max = 14 + digits(width);
    let room = cap.saturating_sub(marker_max);
    let tail_room = (room / 4).min(24);
    let head_room = room - tail_room;
    // One forward pass: the head is the longest unit prefix within head_room; the tail starts at
    // the first unit boundary after which at most tail_room characters remain.
    let (mut i, mut w, mut units) = (0usize, 0usize, 0usize);
    let mut head_end = None;
    let mut head_units = 0;
    let mut tail_start = b.len();
    let mut units_before_tail = 0;
    let mut found_tail = false;
    while i < b.len() {
        if head_end.is_none() {
            let (_, uw) = unit(&b[i..]);
            if w + uw > head_room {
                head_end = Some(i);
                head_units = units;
            }
        }
        if head_end.is_some() && !found_tail && width - w <= tail_room {
            tail_start = i;
            units_before_tail = units;
            found_tail = true;
        }
        let (ub, uw) = unit(&b[i..]);
        i += ub;
        w += uw;
        units += 1;
    }
    let head_end = head_end.unwrap_or(b.len());
    if !found_tail {
        tail_start = b.len();
        units_before_tail = units;
    }
    let cut = units_before_tail - head_units;
    out.push_str(&body[..head_end]);
    out.push_str("…[cut ");
    out.push_str(&cut.to_string());
    out.push_str(" chars]…");
    out.push_str(&body[tail_start..]);
}

struct Frame {
    is_obj: bool,
    /// Children in the input.
    n: usize,
    /// Index of the next child in the input.
    next: usize,
    /// Elements written so far (for commas).
    written: usize,
    /// Long array: children `keep - 1 ..= n - 2` are replaced by one marker element.
    elide: bool,
}

/// Walk the validated document, writing it under `p` into `sink`.
fn walk<S: Sink>(text: &str, doc: &Doc, p: Params, sink: &mut S) {
    let mut lx = Lexer::new(text);
    let mut stack: Vec<Frame> = Vec::new();
    let mut ordinal = 0usize;
    // > 0 while skipping a dropped or collapsed value (nesting inside it).
    let mut skip = 0usize;
    let mut expect_key = false;
    loop {
        if sink.over() {
            return;
        }
        let t = lx.next();
        if skip > 0 {
            match t {
                Tok::ObjOpen | Tok::ArrOpen => {
                    ordinal += 1;
                    skip += 1;
                }
                Tok::ObjClose | Tok::ArrClose => skip -= 1,
                Tok::Eof | Tok::Error => return,
                _ => {}
            }
            continue;
        }
        // A string is a key right after `{` or after `,` inside an object.
        let key_pos = std::mem::take(&mut expect_key);
        match t {
            Tok::Eof | Tok::Error => return,
            Tok::Colon => {}
            Tok::Comma => expect_key = stack.last().is_some_and(|f| f.is_obj),
            Tok::ObjClose | Tok::ArrClose => {
                stack.pop();
                sink.raw(if t == Tok::ObjClose { "}" } else { "]" });
            }
            Tok::Str { start, end, .. } if key_pos => {
                if let Some(f) = stack.last_mut() {
                    if f.written > 0 {
                        sink.raw(",");
                    }
                    f.written += 1;
                }
                sink.raw("\"");
                sink.raw(&text[start..end]);
                sink.raw("\":");
            }
            _ => {
                // A value.
                let depth = stack.len();
                if let Some(f) = stack.last_mut() {
                    if !f.is_obj {
                        let idx = f.next;
                        f.next += 1;
                        if f.elide && idx + 1 >= p.keep && idx + 1 < f.n {
                            if idx + 1 == p.keep {
                                if f.written > 0 {
                                    sink.raw(",");
                                }
                                f.written += 1;
                                sink.raw(&format!("\"…[{} items cut]…\"", f.n - p.keep));
                            }
                            if matches!(t, Tok::ObjOpen | Tok::ArrOpen) {
                                ordinal += 1;
                                skip = 1;
                            }
                            continue;
                        }
                        if f.written > 0 {
                            sink.raw(",");
                        }
                        f.written += 1;
                    }
                }
                match t {
                    Tok::Str { start, end, width } => sink.string(&text[start..end], width, p.cap),
                    Tok::Atom { start, end } => sink.raw(&text[start..end]),
                    Tok::ObjOpen | Tok::ArrOpen => {
                        let is_obj = t == Tok::ObjOpen;
                        let n = doc.counts.get(ordinal).copied().unwrap_or(0) as usize;
                        ordinal += 1;
                        let small = doc.small.get(ordinal - 1).copied().unwrap_or(true);
                        if depth >= p.depth && !small {
                            let marker = if is_obj {
                                format!("\"…[object of {n} keys cut]…\"")
                            } else {
                                format!("\"…[array of {n} items cut]…\"")
                            };
                            // The root keeps its type: arguments must stay an object (an
                            // Anthropic tool_use input is one), so it wraps the marker.
                            if depth == 0 && is_obj {
                                sink.raw("{\"");
                                sink.raw(ROOT_CUT_KEY);
                                sink.raw("\":");
                                sink.raw(&marker);
                                sink.raw("}");
                            } else if depth == 0 {
                                sink.raw("[");
                                sink.raw(&marker);
                                sink.raw("]");
                            } else {
                                sink.raw(&marker);
                            }
                            skip = 1;
                            continue;
                        }
                        sink.raw(if is_obj { "{" } else { "[" });
                        stack.push(Frame {
                            is_obj,
                            n,
                            next: 0,
                            written: 0,
                            elide: !is_obj && n >= p.keep.saturating_add(2),
                        });
                        expect_key = is_obj;
                    }
                    _ => {}
                }
            }
        }
    }
}

/// Characters of the output under `p` (an upper bound for cut strings), counted up to `limit`
/// only: past it the walk stops early.
fn measure(text: &str, doc: &Doc, p: Params, limit: usize) -> Measure {
    let mut m = Measure {
        chars: 0,
        limit,
        long: Vec::new(),
    };
    walk(text, doc, p, &mut m);
    m
}

/// The largest string cap (>= `floor`) for which the document fits, from a measure at cap
/// `floor`: length(C) = fixed + sum(min(w, C)) over the strings longer than `floor`.
fn best_cap(m: &Measure, floor: usize, max: usize) -> usize {
    let mut w = m.long.clone();
    w.sort_unstable();
    let fixed = m.chars - w.len() * floor;
    // Walk the sorted widths: between w[j-1] and w[j], strings j.. are at the cap.
    let mut below = 0usize; // sum of the widths of the strings under the cap
    let mut lo = floor;
    for (j, &wj) in w.iter().enumerate() {
        let above = w.len() - j;
        // Largest C in [lo, wj] with fixed + below + C * above <= max.
        let room = max.saturating_sub(fixed + below);
        let c = room / above;
        if c < wj {
            return c.max(lo);
        }
        below += wj;
        lo = wj;
    }
    usize::MAX
}

/// Largest value in `lo..=hi` for which `fits` holds, assuming it holds at `lo`.
fn largest(lo: usize, hi: usize, mut fits: impl FnMut(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (lo, hi);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

fn shrink_valid(text: &str, doc: &Doc, max: usize) -> String {
    const ALL: usize = usize::MAX;
    let fits = |p: Params| measure(text, doc, p, max).chars <= max;
    // Render with the largest string cap that fits on top of `p` (whose cap is the floor).
    let finish = |p: Params| {
        let cap = best_cap(&measure(text, doc, p, usize::MAX), p.cap, max);
        let mut r = Render(String::with_capacity(max.min(text.len()) + 16));
        walk(text, doc, Params { cap, ..p }, &mut r);
        r.0
    };
    let full = Params {
        cap: ALL,
        keep: ALL,
        depth: ALL,
    };
    // Stage 0: the compact form. Stage 1: strings only, down to SHORT_STRING.
    for cap in [ALL, SHORT_STRING] {
        if fits(Params { cap, ..full }) {
            return finish(Params { cap, ..full });
        }
    }
    // Search bounds: K kept items take at least 2K - 1 characters and every level of nesting
    // two, so larger values cannot fit (this keeps the searches short on huge inputs).
    let keep_hi = doc.max_array.min(max / 2 + 1).max(2);
    let depth_hi = doc.max_depth.min(max / 2 + 1);
    // Stage 2: long arrays keep their ends; strings keep up to PATH_STRING if that is enough.
    if doc.max_array >= 4 {
        for floor in [PATH_STRING, SHORT_STRING] {
            let p = Params {
                cap: floor,
                keep: 2,
                depth: ALL,
            };
            if fits(p) {
                let keep = largest(2, keep_hi, |k| fits(Params { keep: k, ..p }));
                return finish(Params { keep, ..p });
            }
        }
    }
    // Stage 3: deep containers collapse. At depth 0 the root is one marker, which always fits.
    if !doc.root_is_container {
        // A lone number longer than max_chars (strings and literals fit at stage 1).
        return format!("\"…[number of {} chars cut]…\"", text.trim().len());
    }
    // The deepest collapse depth that fits, preferring the larger string floor on a tie.
    let mut best: Option<Params> = None;
    for floor in [PATH_STRING, SHORT_STRING] {
        let p = Params {
            cap: floor,
            keep: 2,
            depth: 0,
        };
        if !fits(p) {
            continue;
        }
        let depth = largest(0, depth_hi, |d| fits(Params { depth: d, ..p }));
        if best.is_none_or(|b| depth > b.depth) {
            best = Some(Params { depth, ..p });
        }
    }
    let p = best.unwrap_or(Params {
        cap: SHORT_STRING,
        keep: 2,
        depth: 0,
    });
    let keep = largest(2, keep_hi, |k| fits(Params { keep: k, ..p }));
    finish(Params { keep, ..p })
}

/// Escaped width of one character inside a JSON string.
fn escaped_width(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        '\0'..='\u{1f}' => 6,
        _ => 1,
    }
}

/// The stand-in for a text that is not JSON: a preview of its head and its length.
#[cold]
fn invalid_wrapper(text: &str, max: usize) -> String {
    let total = text.chars().count();
    let fixed = "{\"invalid_json_preview\":\"\",\"original_chars\":}"
        .chars()
        .count()
        + digits(total);
    let room = max.saturating_sub(fixed);
    let all: usize = text.chars().map(escaped_width).sum();
    let head_len = if all <= room {
        text.len()
    } else {
        // Keep room for the ellipsis that says the preview was cut.
        let mut w = 0;
        let mut end = 0;
        for (i, c) in text.char_indices() {
            w += escaped_width(c);
            if w + 1 > room {
                break;
            }
            end = i + c.len_utf8();
        }
        end
    };
    let mut preview = text[..head_len].to_string();
    if head_len < text.len() {
        preview.push('…');
    }
    let mut out = String::from("{\"invalid_json_preview\":");
    push_json_string(&mut out, &preview);
    out.push_str(",\"original_chars\":");
    out.push_str(&total.to_string());
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> usize {
        s.chars().count()
    }

    #[test]
    fn fitting_valid_input_is_returned_byte_identical() {
        for s in ["{\"a\": 1}", "  [1, 2 ,3]\n", "\"x\"", "null", "-0.5e+3"] {
            assert!(matches!(shrink_json_cow(s, 100), Cow::Borrowed(t) if t == s));
        }
    }

    #[test]
    fn whitespace_is_dropped_before_anything_is_cut() {
        let s = format!(
            "{{\n  \"a\": [1, 2, 3],\n  \"b\": \"{}\"\n}}",
            "x".repeat(50)
        );
        let out = shrink_json(&s, 70);
        assert_eq!(
            out,
            format!("{{\"a\":[1,2,3],\"b\":\"{}\"}}", "x".repeat(50))
        );
    }

    #[test]
    fn longest_strings_shrink_first_and_short_ones_stay() {
        let s = format!(
            "{{\"path\":\"/src/app.py\",\"content\":\"{}\",\"mode\":\"w\",\"n\":3}}",
            "abcdefghij".repeat(100)
        );
        let out = shrink_json(&s, 200);
        assert!(chars(&out) <= 200, "{out}");
        assert!(out.starts_with("{\"path\":\"/src/app.py\",\"content\":\"abcdefghij"));
        assert!(out.ends_with(",\"mode\":\"w\",\"n\":3}"), "{out}");
        assert!(out.contains("…[cut "));
    }

    #[test]
    fn surrogate_pairs_and_escapes_are_never_split() {
        let body = "\\ud83d\\ude00\\n\\u00e9é".repeat(40);
        let s = format!("{{\"k\":\"{body}\"}}");
        for max in 64..140 {
            let out = shrink_json(&s, max);
            assert!(chars(&out) <= max);
            // The kept head is a whole number of units: it starts with whole repetitions.
            let head = &out["{\"k\":\"".len()..out.find('…').unwrap()];
            let mut rest = head;
            for u in ["\\ud83d\\ude00", "\\n", "\\u00e9", "é"].iter().cycle() {
                if rest.is_empty() {
                    break;
                }
                assert!(rest.starts_with(u), "split unit in {head:?}");
                rest = &rest[u.len()..];
            }
        }
    }

    #[test]
    fn long_arrays_keep_their_ends() {
        let items: Vec<String> = (0..1000).map(|i| i.to_string()).collect();
        let s = format!("{{\"ids\":[{}]}}", items.join(","));
        let out = shrink_json(&s, 120);
        assert!(chars(&out) <= 120, "{out}");
        assert!(out.starts_with("{\"ids\":[0,1,"));
        assert!(out.ends_with(",999]}"));
        assert!(out.contains("items cut]…\""));
    }

    #[test]
    fn deep_nesting_collapses_without_recursion() {
        let depth = 100_000;
        let s = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let out = shrink_json(&s, 100);
        assert!(chars(&out) <= 100);
        assert!(out.contains("array of 1 items cut"), "{out}");
        let obj = format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth));
        let out = shrink_json(&obj, 100);
        assert!(
            chars(&out) <= 100 && out.starts_with("{\"a\":{\"a\":"),
            "{out}"
        );
    }

    #[test]
    fn a_collapsed_root_keeps_its_type() {
        let keys: Vec<String> = (0..40)
            .map(|i| format!("\"key_{i:02}_{}\":1", "k".repeat(20)))
            .collect();
        let obj = format!("{{{}}}", keys.join(","));
        assert_eq!(
            shrink_json(&obj, 64),
            "{\"_cut\":\"…[object of 40 keys cut]…\"}"
        );
        // Told apart from a shrink that keeps a key, or an object whose own key is `_cut`.
        assert!(collapsed_whole(&shrink_json(&obj, 64)));
        let kept = format!("{{\"a\":\"{}\",\"b\":1}}", "x".repeat(1_000));
        assert!(!collapsed_whole(&shrink_json(&kept, 64)));
        assert!(!collapsed_whole(
            "{\"_cut\":\"…[object of 4 keys cut]…\",\"a\":1}"
        ));
        assert!(!collapsed_whole(
            "{\"_cut\":\"…[object of many keys cut]…\"}"
        ));
        let arr = format!("[{}]", vec![format!("{{{}}}", keys[0]); 50].join(","));
        let out = shrink_json(&arr, 64);
        assert!(
            out.starts_with('[') && out.ends_with(']') && chars(&out) <= 64,
            "{out}"
        );
    }

    #[test]
    fn invalid_json_becomes_a_valid_preview() {
        let s = format!("{{\"path\":\"a.py\",\"content\":\"{}", "y".repeat(500));
        let out = shrink_json(&s, 100);
        assert!(chars(&out) <= 100);
        assert!(out.starts_with("{\"invalid_json_preview\":\"{\\\"path\\\""));
        assert!(out.ends_with(&format!(",\"original_chars\":{}}}", chars(&s))));
        // Short invalid input is wrapped too (it must come out valid).
        assert_eq!(
            shrink_json("{'a': 1}", 100),
            "{\"invalid_json_preview\":\"{'a': 1}\",\"original_chars\":8}"
        );
        assert!(shrink_json("", 64).contains("\"original_chars\":0"));
    }

    #[test]
    fn idempotent_and_fits_at_the_minimum() {
        let s = format!(
            "{{\"a\":[{}],\"b\":{{\"c\":\"{}\"}}}}",
            "\"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz\",".repeat(30) + "1",
            "q".repeat(3000)
        );
        for max in [0, 64, 65, 80, 100, 200, 500, 1000] {
            let once = shrink_json(&s, max);
            assert!(chars(&once) <= max.max(MIN_MAX_CHARS), "{max}: {once}");
            assert_eq!(shrink_json(&once, max), once);
        }
    }

    #[test]
    fn rejects_what_is_not_json() {
        for s in [
            "",
            " ",
            "{",
            "}",
            "[1,]",
            "{\"a\"}",
            "{\"a\":1,}",
            "01",
            "1.",
            "-",
            "1e",
            "tru",
            "\"\\x\"",
            "\"a\nb\"",
            "[1 2]",
            "{1:2}",
            "1 2",
            "NaN",
            "\u{feff}1",
            "[}",
            "{]",
        ] {
            assert!(validate(s).is_none(), "{s:?}");
        }
        for s in [
            "0",
            "-0.0e-0",
            "[]",
            "{}",
            "[[],{}]",
            "{\"a\":{\"b\":[1,\"x\"]}}",
        ] {
            assert!(validate(s).is_some(), "{s:?}");
        }
    }

    #[test]
    fn lone_surrogate_escapes_become_replacement_characters() {
        // Found by the fuzzer: Python's json.dumps("\ud800") is grammatical JSON that strict
        // parsers refuse; the output must parse everywhere.
        let out = shrink_json(
            r#"{"s":"a\ud800b\udc00","pair":"\ud83d\ude00","e":"\\ud800"}"#,
            1000,
        );
        assert_eq!(
            out,
            r#"{"s":"a\ufffdb\ufffd","pair":"\ud83d\ude00","e":"\\ud800"}"#
        );
        assert_eq!(shrink_json(&out, 1000), out);
    }
}
