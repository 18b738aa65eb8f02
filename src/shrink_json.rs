//! JSON-safe shrinking of tool-call arguments (SEEDS item 2).
//!
//! Slicing an arguments string and appending "...[truncated]" leaves invalid JSON that providers
//! reject on every later turn. Here the document is parsed (iteratively: no recursion, so any
//! nesting depth is safe, and linear in the input) and shrunk *inside* its structure:
//! 1. the longest strings are cut first, all to a common cap found by binary search, each
//!    keeping a head and a short tail around a marker `…[cut N chars]…`; strings of at most
//!    `SHORT_STRING` characters (paths, ids, enums) are never cut;
//! 2. if that is not enough, arrays of more than three items keep their first and last items
//!    around a marker element `…[N items cut]…`;
//! 3. if even that skeleton is too long, containers below a depth collapse into marker strings
//!    (`…[object of N keys cut]…`), the depth decreasing until the output fits.
//!
//! Every key, number, boolean and null of what remains is kept verbatim. Sizes are counted in
//! characters (Unicode scalar values) of the output text. Input that already fits is returned
//! unchanged, byte for byte; the output of a shrink fits, so shrinking is idempotent.

use crate::wire::push_json_string;

/// Strings this short (in characters) are never cut.
pub const SHORT_STRING: usize = 32;
/// The smallest `max_chars` for which the output is guaranteed to fit.
pub const MIN_MAX_CHARS: usize = 64;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Object,
    Array,
    Str,
    /// Number, true, false, null: kept verbatim.
    Atom,
}

const NONE: u32 = u32::MAX;

struct Node {
    kind: Kind,
    /// Raw byte range: the string body without quotes, or the atom's text.
    start: usize,
    end: usize,
    /// Raw byte range of the key (without quotes) when the node is an object member.
    key: Option<(usize, usize)>,
    first_child: u32,
    last_child: u32,
    next: u32,
    n_children: usize,
    depth: usize,
    /// Characters of the raw string body (strings), raw text (atoms) or key.
    chars: usize,
    key_chars: usize,
}

struct Doc<'a> {
    text: &'a str,
    nodes: Vec<Node>,
}

fn char_len(s: &str) -> usize {
    s.chars().count()
}

/// Parse `text` into an arena (pre-order: a parent's index is below its children's).
fn parse(text: &str) -> Option<Doc<'_>> {
    let b = text.as_bytes();
    let mut nodes: Vec<Node> = Vec::new();
    let mut i = 0usize;
    let ws = |i: &mut usize| {
        while *i < b.len() && matches!(b[*i], b' ' | b'\t' | b'\n' | b'\r') {
            *i += 1;
        }
    };
    // Parse a string starting at the opening quote; returns the body range.
    let string = |i: &mut usize| -> Option<(usize, usize)> {
        debug_assert_eq!(b[*i], b'"');
        *i += 1;
        let start = *i;
        while *i < b.len() {
            match b[*i] {
                b'"' => {
                    let end = *i;
                    *i += 1;
                    return Some((start, end));
                }
                b'\\' => {
                    let e = *b.get(*i + 1)?;
                    match e {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => *i += 2,
                        b'u' => {
                            let hex = b.get(*i + 2..*i + 6)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            *i += 6;
                        }
                        _ => return None,
                    }
                }
                0x00..=0x1F => return None,
                _ => *i += 1,
            }
        }
        None
    };
    let number = |i: &mut usize| -> Option<()> {
        if b.get(*i) == Some(&b'-') {
            *i += 1;
        }
        match b.get(*i)? {
            b'0' => *i += 1,
            b'1'..=b'9' => {
                while b.get(*i).is_some_and(u8::is_ascii_digit) {
                    *i += 1;
                }
            }
            _ => return None,
        }
        if b.get(*i) == Some(&b'.') {
            *i += 1;
            if !b.get(*i).is_some_and(u8::is_ascii_digit) {
                return None;
            }
            while b.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
        }
        if matches!(b.get(*i), Some(b'e' | b'E')) {
            *i += 1;
            if matches!(b.get(*i), Some(b'+' | b'-')) {
                *i += 1;
            }
            if !b.get(*i).is_some_and(u8::is_ascii_digit) {
                return None;
            }
            while b.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
        }
        Some(())
    };

    // `"key" :` of an object member, leaving `i` on its value.
    let member_key = |i: &mut usize| -> Option<(usize, usize)> {
        if b.get(*i) != Some(&b'"') {
            return None;
        }
        let key = string(i)?;
        ws(i);
        if b.get(*i) != Some(&b':') {
            return None;
        }
        *i += 1;
        ws(i);
        Some(key)
    };
    // Open containers.
    let mut stack: Vec<u32> = Vec::new();
    let mut pending_key: Option<(usize, usize)> = None;
    ws(&mut i);
    loop {
        // Parse one value at `i`.
        let parent = stack.last().copied().unwrap_or(NONE);
        let depth = stack.len();
        let key = pending_key.take();
        let idx = nodes.len() as u32;
        let (kind, start, end) = match *b.get(i)? {
            b'{' => {
                i += 1;
                (Kind::Object, i, i)
            }
            b'[' => {
                i += 1;
                (Kind::Array, i, i)
            }
            b'"' => {
                let (s, e) = string(&mut i)?;
                (Kind::Str, s, e)
            }
            b't' if b[i..].starts_with(b"true") => {
                i += 4;
                (Kind::Atom, i - 4, i)
            }
            b'f' if b[i..].starts_with(b"false") => {
                i += 5;
                (Kind::Atom, i - 5, i)
            }
            b'n' if b[i..].starts_with(b"null") => {
                i += 4;
                (Kind::Atom, i - 4, i)
            }
            _ => {
                let s = i;
                number(&mut i)?;
                (Kind::Atom, s, i)
            }
        };
        let chars = match kind {
            Kind::Str => char_len(&text[start..end]),
            Kind::Atom => end - start,
            _ => 0,
        };
        let key_chars = key.map_or(0, |(s, e)| char_len(&text[s..e]));
        nodes.push(Node {
            kind,
            start,
            end,
            key,
            first_child: NONE,
            last_child: NONE,
            next: NONE,
            n_children: 0,
            depth,
            chars,
            key_chars,
        });
        if parent != NONE {
            let p = &mut nodes[parent as usize];
            p.n_children += 1;
            let last = p.last_child;
            p.last_child = idx;
            if last == NONE {
                nodes[parent as usize].first_child = idx;
            } else {
                nodes[last as usize].next = idx;
            }
        }
        if matches!(kind, Kind::Object | Kind::Array) {
            stack.push(idx);
            ws(&mut i);
            let close = if kind == Kind::Object { b'}' } else { b']' };
            if b.get(i) == Some(&close) {
                i += 1;
                stack.pop();
            } else {
                if kind == Kind::Object {
                    pending_key = Some(member_key(&mut i)?);
                }
                continue;
            }
        }
        // After a value: close containers or move to the next member.
        loop {
            ws(&mut i);
            let Some(&top) = stack.last() else {
                return (i == b.len()).then_some(Doc { text, nodes });
            };
            let is_obj = nodes[top as usize].kind == Kind::Object;
            match b.get(i)? {
                b',' => {
                    i += 1;
                    ws(&mut i);
                    if is_obj {
                        pending_key = Some(member_key(&mut i)?);
                    }
                    break;
                }
                b'}' if is_obj => {
                    i += 1;
                    stack.pop();
                }
                b']' if !is_obj => {
                    i += 1;
                    stack.pop();
                }
                _ => return None,
            }
        }
    }
}

/// How the document is shrunk.
#[derive(Clone, Copy)]
struct Plan {
    /// Strings longer than this many characters are cut to at most this size.
    cap: usize,
    trim_arrays: bool,
    /// Containers at this depth or deeper become markers (`usize::MAX`: none).
    collapse_at: usize,
}

fn digits(n: usize) -> usize {
    n.to_string().len()
}

fn cut_marker(n: usize) -> String {
    format!("…[cut {n} chars]…")
}

fn items_marker(n: usize) -> String {
    format!("…[{n} items cut]…")
}

fn collapsed_marker(kind: Kind, n: usize) -> String {
    match kind {
        Kind::Object => format!("…[object of {n} keys cut]…"),
        _ => format!("…[array of {n} items cut]…"),
    }
}

impl Doc<'_> {
    fn children(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let mut c = self.nodes[i].first_child;
        std::iter::from_fn(move || {
            (c != NONE).then(|| {
                let cur = c as usize;
                c = self.nodes[cur].next;
                cur
            })
        })
    }

    fn trimmed(&self, i: usize, plan: &Plan) -> bool {
        let n = &self.nodes[i];
        plan.trim_arrays && n.kind == Kind::Array && n.n_children > 3
    }

    /// Upper bound of the output size (characters) under `plan`: one bottom-up pass.
    fn size(&self, plan: &Plan) -> usize {
        let mut size = vec![0usize; self.nodes.len()];
        for i in (0..self.nodes.len()).rev() {
            let n = &self.nodes[i];
            size[i] = if matches!(n.kind, Kind::Object | Kind::Array) && n.depth >= plan.collapse_at
            {
                char_len(&collapsed_marker(n.kind, n.n_children)) + 2
            } else {
                match n.kind {
                    Kind::Str => n.chars.min(plan.cap.max(SHORT_STRING)) + 2,
                    Kind::Atom => n.chars,
                    Kind::Object => {
                        2 + n.n_children.saturating_sub(1)
                            + self
                                .children(i)
                                .map(|c| self.nodes[c].key_chars + 3 + size[c])
                                .sum::<usize>()
                    }
                    Kind::Array if self.trimmed(i, plan) => {
                        let first = n.first_child as usize;
                        let last = n.last_child as usize;
                        2 + 2
                            + size[first]
                            + size[last]
                            + char_len(&items_marker(n.n_children - 2))
                            + 2
                    }
                    Kind::Array => {
                        2 + n.n_children.saturating_sub(1)
                            + self.children(i).map(|c| size[c]).sum::<usize>()
                    }
                }
            };
        }
        size[0]
    }

    /// Write the string body `raw` cut to at most `cap` characters (quotes excluded), never
    /// inside an escape sequence, a surrogate pair or a UTF-8 character.
    fn write_str(&self, out: &mut String, raw: &str, chars: usize, cap: usize) {
        out.push('"');
        if chars <= cap {
            out.push_str(raw);
            out.push('"');
            return;
        }
        // Atoms: one character, or one escape (a \uD8xx\uDCxx pair counts as one).
        let atoms = atoms(raw);
        let marker_len = char_len(&cut_marker(chars));
        let keep = cap.saturating_sub(marker_len + digits(chars).saturating_sub(1));
        let head_budget = keep - keep / 3;
        let tail_budget = keep / 3;
        let (mut head_end, mut used) = (0usize, 0usize);
        for &(_, e, w) in &atoms {
            if used + w > head_budget {
                break;
            }
            used += w;
            head_end = e;
        }
        let mut tail_start = raw.len();
        let mut tail_used = 0usize;
        for &(s, _, w) in atoms.iter().rev() {
            if tail_used + w > tail_budget || s < head_end {
                break;
            }
            tail_used += w;
            tail_start = s;
        }
        let cut = chars - used - tail_used;
        out.push_str(&raw[..head_end]);
        out.push_str(&cut_marker(cut));
        out.push_str(&raw[tail_start..]);
        out.push('"');
    }

    fn write(&self, plan: &Plan) -> String {
        let mut out = String::new();
        // Work items: enter a node, or emit literal text.
        enum W {
            Node(usize),
            Text(&'static str),
            Owned(String),
        }
        let mut stack = vec![W::Node(0)];
        while let Some(w) = stack.pop() {
            let i = match w {
                W::Text(t) => {
                    out.push_str(t);
                    continue;
                }
                W::Owned(t) => {
                    out.push_str(&t);
                    continue;
                }
                W::Node(i) => i,
            };
            let n = &self.nodes[i];
            if let Some((ks, ke)) = n.key {
                out.push('"');
                out.push_str(&self.text[ks..ke]);
                out.push_str("\":");
            }
            if matches!(n.kind, Kind::Object | Kind::Array) && n.depth >= plan.collapse_at {
                push_json_string(&mut out, &collapsed_marker(n.kind, n.n_children));
                continue;
            }
            match n.kind {
                Kind::Atom => out.push_str(&self.text[n.start..n.end]),
                Kind::Str => self.write_str(
                    &mut out,
                    &self.text[n.start..n.end],
                    n.chars,
                    plan.cap.max(SHORT_STRING),
                ),
                Kind::Object | Kind::Array => {
                    let (open, close) = if n.kind == Kind::Object {
                        ("{", "}")
                    } else {
                        ("[", "]")
                    };
                    out.push_str(open);
                    let kids: Vec<usize> = if self.trimmed(i, plan) {
                        vec![n.first_child as usize, n.last_child as usize]
                    } else {
                        self.children(i).collect()
                    };
                    let mut items: Vec<W> = Vec::with_capacity(kids.len() * 2 + 2);
                    for (j, &c) in kids.iter().enumerate() {
                        if j > 0 {
                            items.push(W::Text(","));
                        }
                        if j == 1 && self.trimmed(i, plan) {
                            let mut m = String::new();
                            push_json_string(&mut m, &items_marker(n.n_children - 2));
                            items.push(W::Owned(m));
                            items.push(W::Text(","));
                        }
                        items.push(W::Node(c));
                    }
                    items.push(W::Text(close));
                    stack.extend(items.into_iter().rev());
                }
            }
        }
        out
    }
}

/// Byte ranges and widths (characters) of the atoms of a raw JSON string body.
fn atoms(raw: &str) -> Vec<(usize, usize, usize)> {
    let b = raw.as_bytes();
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < b.len() {
        let len = if b[i] == b'\\' {
            if b[i + 1] == b'u' {
                let hi = u16::from_str_radix(&raw[i + 2..i + 6], 16).unwrap_or(0);
                let pair = (0xD800..0xDC00).contains(&hi) && raw[i + 6..].starts_with("\\u");
                if pair {
                    12.min(b.len() - i)
                } else {
                    6
                }
            } else {
                2
            }
        } else {
            raw[i..].chars().next().map_or(1, char::len_utf8)
        };
        // Escapes are ASCII, so their width in characters is their byte length.
        let w = if b[i] == b'\\' { len } else { 1 };
        out.push((i, i + len, w));
        i += len;
    }
    out
}

/// A valid JSON object describing text that is not JSON: a preview and the original length.
fn invalid_fallback(text: &str, total: usize, max_chars: usize) -> String {
    let mut keep = max_chars.saturating_sub(48).min(total);
    loop {
        let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
        let mut out = String::from("{\"invalid_json_preview\":");
        push_json_string(&mut out, &text[..end]);
        out.push_str(&format!(",\"original_chars\":{total}}}"));
        let len = char_len(&out);
        if len <= max_chars || keep == 0 {
            return out;
        }
        keep = keep.saturating_sub((len - max_chars).max(1));
    }
}

/// The largest `x` in `lo..=hi` with `fits(x)`, for `fits` true up to some point (`lo` when
/// none is).
fn largest(mut lo: usize, mut hi: usize, fits: impl Fn(usize) -> bool) -> usize {
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

/// Shrink the JSON text `text` to at most `max_chars` characters, keeping it valid JSON and
/// keeping its keys, numbers, booleans, nulls, short strings and nesting (see module docs).
/// Text that already fits is returned unchanged; text that is not JSON becomes an object with
/// a preview and the original length. The result fits whenever `max_chars >= MIN_MAX_CHARS`.
pub fn shrink_json(text: &str, max_chars: usize) -> String {
    // Bytes bound characters from above: most inputs are decided without counting.
    if text.len() <= max_chars || char_len(text) <= max_chars {
        return text.to_string();
    }
    let total = char_len(text);
    let Some(doc) = parse(text) else {
        return invalid_fallback(text, total, max_chars);
    };
    let longest = doc
        .nodes
        .iter()
        .filter(|n| n.kind == Kind::Str)
        .map(|n| n.chars)
        .max()
        .unwrap_or(0);
    let max_depth = doc.nodes.iter().map(|n| n.depth).max().unwrap_or(0);
    for trim_arrays in [false, true] {
        let plan = |cap| Plan {
            cap,
            trim_arrays,
            collapse_at: usize::MAX,
        };
        if doc.size(&plan(SHORT_STRING)) <= max_chars {
            // Largest cap that fits: every string keeps as much as the budget allows.
            let cap = largest(SHORT_STRING, longest.max(SHORT_STRING), |c| {
                doc.size(&plan(c)) <= max_chars
            });
            return doc.write(&plan(cap));
        }
    }
    // Even the skeleton is too long: collapse containers from the deepest level up, at the
    // deepest level that fits (the size only grows with the depth kept: binary search).
    let plan = |collapse_at| Plan {
        cap: SHORT_STRING,
        trim_arrays: true,
        collapse_at,
    };
    let depth = largest(0, max_depth, |d| doc.size(&plan(d)) <= max_chars);
    doc.write(&plan(depth))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(s: &str) -> bool {
        parse(s).is_some()
    }

    #[test]
    fn fitting_input_is_returned_byte_identical() {
        let s = "{ \"a\" : [1, 2,   3] }";
        assert_eq!(shrink_json(s, 100), s);
    }

    #[test]
    fn long_strings_shrink_and_short_ones_stay() {
        let s = format!(
            "{{\"path\":\"/src/app.py\",\"content\":\"{}\",\"n\":3,\"ok\":true,\"x\":null}}",
            "abc ".repeat(2000)
        );
        let out = shrink_json(&s, 300);
        assert!(valid(&out), "{out}");
        assert!(char_len(&out) <= 300);
        assert!(
            out.contains("\"path\":\"/src/app.py\"")
                && out.contains("\"n\":3")
                && out.contains("\"ok\":true")
                && out.contains("\"x\":null")
        );
        assert!(out.contains("…[cut "));
        assert_eq!(shrink_json(&out, 300), out);
    }

    #[test]
    fn long_arrays_keep_first_and_last() {
        let items: Vec<String> = (0..500).map(|i| format!("{{\"id\":{i}}}")).collect();
        let s = format!("[{}]", items.join(","));
        let out = shrink_json(&s, 120);
        assert!(valid(&out) && char_len(&out) <= 120, "{out}");
        assert!(
            out.starts_with("[{\"id\":0}")
                && out.ends_with("{\"id\":499}]")
                && out.contains("498 items cut")
        );
    }

    #[test]
    fn deep_nesting_collapses_and_does_not_overflow() {
        let s = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let out = shrink_json(&s, 100);
        assert!(valid(&out) && char_len(&out) <= 100, "{out}");
    }

    #[test]
    fn invalid_and_cut_json_become_valid_objects() {
        for s in [
            "{\"a\": \"unterminated",
            "not json at all",
            "{\"a\":1}}",
            "[1,2,]",
        ] {
            let long = s.repeat(30);
            let out = shrink_json(&long, 80);
            assert!(valid(&out) && char_len(&out) <= 80, "{out}");
            assert!(out.contains("original_chars"));
        }
    }

    #[test]
    fn escapes_and_surrogate_pairs_are_never_split() {
        let body = "\\ud83d\\ude00é\\n\\\"".repeat(200);
        let s = format!("{{\"t\":\"{body}\"}}");
        for max in 64..200 {
            let out = shrink_json(&s, max);
            assert!(valid(&out) && char_len(&out) <= max, "{max}: {out}");
            assert!(
                !out.contains("\\ud83d\"") && !out.contains("\\ud83d…"),
                "{out}"
            );
        }
    }
}
