//! The index section written into a summary: the best identifiers that fit its tokens, one
//! line per kind, and which of them the summary's own lines already show.

use super::{Ident, Kind, INDEX_HEADING, KINDS};
use crate::estimate::Estimator;
use rustc_hash::FxHashMap;

/// The index section: the best identifiers that fit `max_tokens` (the estimator's), one line per
/// kind, items separated by `, ` (an item never holds a newline; `, ` inside an item is written
/// `,` so the list reads back). Empty when nothing fits.
pub fn render(idents: &[Ident], est: &Estimator, max_tokens: u64) -> String {
    render_priced(idents, &prices(idents, est), est, max_tokens)
}

/// Each identifier's tokens (`est.text` of its text), for `render_priced`.
pub fn prices(idents: &[Ident], est: &Estimator) -> Vec<f64> {
    idents.iter().map(|id| est.text(&id.text)).collect()
}

/// `render` with each identifier's tokens given (`prices`): a digest renders its index once per
/// packing (up to ten times) over the same identifiers.
pub fn render_priced(idents: &[Ident], prices: &[f64], est: &Estimator, max_tokens: u64) -> String {
    render_except(idents, prices, est, max_tokens, &[])
}

/// `render_priced` without the identifiers flagged in `shown` (`Shown::flags`: those the
/// summary's own lines already hold); a flag missing counts as not shown.
pub fn render_except(
    idents: &[Ident],
    prices: &[f64],
    est: &Estimator,
    max_tokens: u64,
    shown: &[bool],
) -> String {
    let budget = max_tokens as f64;
    let header = est.text(INDEX_HEADING) + 2.0;
    if budget <= header + 8.0 {
        return String::new();
    }
    let mut used = header;
    let mut chosen: Vec<&Ident> = Vec::new();
    let mut kinds_used = [false; KINDS.len()];
    for (k, (id, &tokens)) in idents.iter().zip(prices).enumerate() {
        if shown.get(k).copied().unwrap_or(false) {
            continue;
        }
        let line_cost = if kinds_used[id.kind as usize] {
            0.0
        } else {
            4.0
        };
        let cost = tokens + 1.0 + line_cost;
        if used + cost > budget {
            continue;
        }
        used += cost;
        kinds_used[id.kind as usize] = true;
        chosen.push(id);
    }
    if chosen.is_empty() {
        return String::new();
    }
    let mut out = String::from(INDEX_HEADING);
    for (kind, label) in KINDS {
        let items: Vec<String> = chosen
            .iter()
            .filter(|i| i.kind == kind)
            // A comma-space inside an item would read as two items in a `, ` list; an error's
            // list is split by ` | `, so its text stays as it was written (an error is quoted
            // to be matched: "22 queries executed, 25 expected").
            .map(|i| {
                if kind == Kind::Error {
                    i.text.clone()
                } else {
                    i.text.replace(", ", ",")
                }
            })
            .collect();
        if items.is_empty() {
            continue;
        }
        out.push_str("\n- ");
        out.push_str(label);
        out.push_str(": ");
        // Errors hold commas and colons of their own: one per line is not worth its tokens,
        // so they are separated by ` | `.
        out.push_str(&items.join(if kind == Kind::Error { " | " } else { ", " }));
    }
    out
}

/// Which identifiers a text already holds, each as a whole word (no letter, digit or `_` next to
/// either end: `HAT1` is not in `HAT110`). An index lists only what the summary's lines do not
/// show: an id written in a kept request or call line and again in the index is paid twice
/// (a quarter of a 47-token index held ids its airline summary showed above it).
pub struct Shown<'a> {
    /// The distinct identifier texts.
    patterns: Vec<&'a str>,
    /// Per pattern, the identifiers of that text (one text may be of two kinds).
    of: Vec<Vec<usize>>,
    /// Each pattern's first word (a run of letters, digits and `_`) and where it starts in the
    /// pattern, sorted by the word: a pattern is in a text as a whole word only where that word
    /// is one of the text's words, whole (see `shown_in`).
    starts: Vec<(&'a str, usize, usize)>,
    /// Per first word, its range in `starts`.
    by_word: FxHashMap<&'a str, (usize, usize)>,
    /// Per first byte of a first word, a bit per length (`len_bit`) of the first words that
    /// open with it: most words of a text are none of them, and this test turns them away
    /// before the map hashes them.
    word_shapes: [u64; 256],
    /// Patterns with no word character (found by a plain search).
    bare: Vec<usize>,
    n: usize,
}

/// A word's length as one bit of `Shown::word_shapes` (lengths from 63 on share the last).
fn len_bit(len: usize) -> u64 {
    1 << len.min(63)
}

/// A letter, digit or `_`: what a whole identifier may not touch.
pub(super) fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

impl<'a> Shown<'a> {
    /// Built once for a set of identifiers, read for each text a packing writes.
    pub fn new(idents: &'a [Ident]) -> Self {
        let mut at: FxHashMap<&str, usize> = FxHashMap::default();
        let mut of: Vec<Vec<usize>> = Vec::new();
        let mut patterns: Vec<&'a str> = Vec::new();
        for (i, id) in idents.iter().enumerate() {
            let k = *at.entry(id.text.as_str()).or_insert_with(|| {
                patterns.push(id.text.as_str());
                of.push(Vec::new());
                patterns.len() - 1
            });
            of[k].push(i);
        }
        let mut starts = Vec::with_capacity(patterns.len());
        let mut bare = Vec::new();
        for (k, p) in patterns.iter().enumerate() {
            match p.char_indices().find(|&(_, c)| is_word_char(c)) {
                Some((off, _)) => {
                    let len = p[off..]
                        .char_indices()
                        .find(|&(_, c)| !is_word_char(c))
                        .map_or(p.len() - off, |(j, _)| j);
                    starts.push((&p[off..off + len], off, k));
                }
                None => bare.push(k),
            }
        }
        starts.sort_unstable();
        let mut by_word: FxHashMap<&'a str, (usize, usize)> = FxHashMap::default();
        by_word.reserve(starts.len());
        let mut word_shapes = [0u64; 256];
        for (j, &(w, _, _)) in starts.iter().enumerate() {
            by_word.entry(w).or_insert((j, j)).1 = j + 1;
            word_shapes[usize::from(w.as_bytes()[0])] |= len_bit(w.len());
        }
        Shown {
            patterns,
            of,
            starts,
            by_word,
            word_shapes,
            bare,
            n: idents.len(),
        }
    }

    /// How many identifiers were given to `new`.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether no identifier was given to `new`.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Per identifier (in the order given to `new`), whether `text` holds it whole.
    pub fn flags(&self, text: &str) -> Vec<bool> {
        let mut out = vec![false; self.n];
        for i in self.shown_in(text) {
            out[i as usize] = true;
        }
        out
    }

    /// The identifiers (their places in the order given to `new`) that `text` holds whole: no
    /// letter, digit or `_` next to either end (`HAT1` is not in `HAT110`). Such a match's
    /// first word is one of the text's words, whole: the character before it is the
    /// pattern's own (not a word character) or, at the pattern's start, not a word character
    /// either; and it ends where the pattern's first word ends (a non-word character follows
    /// in both, or the pattern ends and the text's next character may not be a word one). So
    /// each word of the text is looked up once, and a candidate checked where it would start.
    /// In no particular order (each once).
    pub fn shown_in(&self, text: &str) -> Vec<u32> {
        if self.patterns.is_empty() {
            return Vec::new();
        }
        // The patterns found, each once in the end (a flag per pattern, cleared for every line
        // a packing writes, cost more than the few found).
        let mut found: Vec<usize> = Vec::new();
        let mark = |k: usize, found: &mut Vec<usize>| found.push(k);
        let whole_at = |start: usize, p: &str| {
            text.is_char_boundary(start)
                && text[start..].starts_with(p)
                && !text[..start].chars().next_back().is_some_and(is_word_char)
                && !text[start + p.len()..]
                    .chars()
                    .next()
                    .is_some_and(is_word_char)
        };
        let check = |from: usize, to: usize, found: &mut Vec<usize>| {
            // (`from < to`: a word holds a character.)
            if self.word_shapes[usize::from(text.as_bytes()[from])] & len_bit(to - from) == 0 {
                return;
            }
            if let Some(&(a, b)) = self.by_word.get(&text[from..to]) {
                for &(_, off, k) in &self.starts[a..b] {
                    if from >= off && whole_at(from - off, self.patterns[k]) {
                        mark(k, found);
                    }
                }
            }
        };
        let b = text.as_bytes();
        let mut run: Option<usize> = None;
        let mut i = 0;
        while i < b.len() {
            let (word, width) = if b[i] < 0x80 {
                (b[i].is_ascii_alphanumeric() || b[i] == b'_', 1)
            } else {
                // (`i` is a character boundary: the loop steps by whole characters.)
                let c = text[i..].chars().next().unwrap_or(' ');
                (is_word_char(c), c.len_utf8())
            };
            match (word, run) {
                (true, None) => run = Some(i),
                (false, Some(from)) => {
                    check(from, i, &mut found);
                    run = None;
                }
                _ => {}
            }
            i += width;
        }
        if let Some(from) = run {
            check(from, b.len(), &mut found);
        }
        for &k in &self.bare {
            let p = self.patterns[k];
            if text.match_indices(p).any(|(at, _)| whole_at(at, p)) {
                mark(k, &mut found);
            }
        }
        found.sort_unstable();
        found.dedup();
        found
            .iter()
            .flat_map(|&k| self.of[k].iter().map(|&i| i as u32))
            .collect()
    }
}
