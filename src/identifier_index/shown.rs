//! Which identifiers a text already holds, each as a whole word (no letter, digit or `_` next to
//! either end: `HAT1` is not in `HAT110`). An index lists only what the summary's lines do not
//! show: an id written in a kept request or call line and again in the index is paid twice (a
//! quarter of a 47-token index held ids its airline summary showed above it).

use rustc_hash::FxHashMap;

use super::Ident;

/// The identifiers of a digest, ready to be found in each line a packing writes.
///
/// A pattern is in a text as a whole word only where its first word (a run of letters, digits
/// and `_`) is one of the text's words, whole; so each word of a text is looked up once, and a
/// candidate checked where it would start. A pattern of two words or more (`self.assertEqual`,
/// `django/db/models.py`) is keyed by its first two words and what separates them, read off
/// the text the same way: keyed by its first word alone, every `self` of a code line was checked
/// against the 47 `self.…` symbols of a SWE fold, and most of the lookups' time went there.
pub struct Shown<'a> {
    /// The distinct identifier texts.
    patterns: Vec<&'a str>,
    /// Per pattern `k`, its identifiers (one text may be of two kinds):
    /// `idents[of[k]..of[k + 1]]`, in the order given to `new`.
    of: Vec<u32>,
    idents: Vec<u32>,
    /// (where its key starts in the pattern, the pattern), grouped by key: a group's range is
    /// the key's in `one_word` or `two_words`.
    starts: Vec<(usize, u32)>,
    /// Patterns of one word (nothing but non-word characters after it), by that word.
    one_word: FxHashMap<&'a str, (u32, u32)>,
    /// Patterns of two words or more, by the text from their first word to the end of their
    /// second (`self.assertEqual` of `self.assertEqual(a, b)`).
    two_words: FxHashMap<&'a str, (u32, u32)>,
    /// Per first byte of a key's first word, a bit per length (`len_bit`) of the first words
    /// that open with it, for each map: most words of a text are none of them, and this test
    /// turns them away before a map hashes them (and, for `two_words`, before the next word is
    /// read).
    one_shapes: [u64; 256],
    two_shapes: [u64; 256],
    /// Patterns with no word character (found by a plain search).
    bare: Vec<usize>,
    n: usize,
}

/// A word's length as one bit of a shape table (lengths from 63 on share the last).
fn len_bit(len: usize) -> u64 {
    1 << len.min(63)
}

/// A letter, digit or `_`: what a whole identifier may not touch.
pub(super) fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Per ASCII byte, whether it is a letter, digit or `_` (a lookup: a line's every byte is asked).
const WORD_BYTE: [bool; 128] = {
    let mut t = [false; 128];
    let mut c = 0;
    while c < 128 {
        t[c] = (c as u8).is_ascii_alphanumeric() || c == b'_' as usize;
        c += 1;
    }
    t
};

/// An ASCII letter, digit or `_` (`c` below 0x80).
fn is_word_byte(c: u8) -> bool {
    WORD_BYTE[usize::from(c & 0x7f)]
}

/// Where the word that starts at byte `i` of `text` (a word character) ends. (A byte loop: a
/// line's words are a few bytes long, shorter than a read of eight at a time pays for.)
fn word_end(text: &str, mut i: usize) -> usize {
    let b = text.as_bytes();
    loop {
        match b.get(i) {
            Some(&c) if c < 0x80 => {
                if !is_word_byte(c) {
                    return i;
                }
                i += 1;
            }
            Some(_) => match text[i..].chars().next() {
                Some(ch) if is_word_char(ch) => i += ch.len_utf8(),
                _ => return i,
            },
            None => return i,
        }
    }
}

/// Where the run of non-word characters that starts at byte `i` of `text` ends.
fn gap_end(text: &str, mut i: usize) -> usize {
    let b = text.as_bytes();
    while let Some(&c) = b.get(i) {
        if c < 0x80 {
            if is_word_byte(c) {
                break;
            }
            i += 1;
        } else {
            match text[i..].chars().next() {
                Some(ch) if !is_word_char(ch) => i += ch.len_utf8(),
                _ => break,
            }
        }
    }
    i
}

/// A pattern's key: where its first word starts, whether it has a second, and the text from its
/// first word to the end of its second word, or of its first word when it has no second.
fn key_of(p: &str) -> Option<(usize, bool, &str)> {
    let off = p.char_indices().find(|&(_, c)| is_word_char(c))?.0;
    let first_end = word_end(p, off);
    let second = gap_end(p, first_end);
    if second == p.len() {
        return Some((off, false, &p[off..first_end]));
    }
    Some((off, true, &p[off..word_end(p, second)]))
}

/// The groups of `keys` (each key with its place in the pattern and the pattern) as ranges of
/// one array, by key, and the shape table of the keys' first words (`first_len`: a key's first
/// word's length).
#[allow(clippy::type_complexity)]
fn grouped<'a>(
    keys: &[(&'a str, usize, u32, usize)],
    starts: &mut Vec<(usize, u32)>,
) -> (FxHashMap<&'a str, (u32, u32)>, [u64; 256]) {
    let mut by_key: FxHashMap<&'a str, (u32, u32)> = FxHashMap::default();
    by_key.reserve(keys.len());
    for &(key, ..) in keys {
        by_key.entry(key).or_insert((u32::MAX, 0)).1 += 1;
    }
    // Each group's place in `starts`: its first key's turn, then filled in order (a group's
    // candidates are checked in any order: what is found is sorted).
    let base = starts.len();
    let mut next = base as u32;
    starts.resize(base + keys.len(), (0, 0));
    let mut shapes = [0u64; 256];
    for &(key, off, k, first_len) in keys {
        let g = by_key.get_mut(key).expect("counted above");
        if g.0 == u32::MAX {
            // (From here on the pair is the group's start and the next free place in it.)
            let count = g.1;
            (g.0, g.1) = (next, next);
            next += count;
        }
        starts[g.1 as usize] = (off, k);
        g.1 += 1;
        shapes[usize::from(key.as_bytes()[0])] |= len_bit(first_len);
    }
    (by_key, shapes)
}

impl<'a> Shown<'a> {
    /// Built once for a set of identifiers, read for each text a packing writes.
    pub fn new(idents: &'a [Ident]) -> Self {
        let mut at: FxHashMap<&str, u32> = FxHashMap::default();
        at.reserve(idents.len());
        let mut patterns: Vec<&'a str> = Vec::new();
        let mut pattern_of: Vec<u32> = Vec::with_capacity(idents.len());
        for id in idents {
            let k = *at.entry(id.text.as_str()).or_insert_with(|| {
                patterns.push(id.text.as_str());
                (patterns.len() - 1) as u32
            });
            pattern_of.push(k);
        }
        // Each pattern's identifiers, in order: counted, then placed.
        let mut of = vec![0u32; patterns.len() + 1];
        for &k in &pattern_of {
            of[k as usize + 1] += 1;
        }
        for k in 0..patterns.len() {
            of[k + 1] += of[k];
        }
        let mut filled = of.clone();
        let mut placed = vec![0u32; idents.len()];
        for (i, &k) in pattern_of.iter().enumerate() {
            placed[filled[k as usize] as usize] = i as u32;
            filled[k as usize] += 1;
        }
        let mut one = Vec::new();
        let mut two = Vec::new();
        let mut bare = Vec::new();
        for (k, p) in patterns.iter().enumerate() {
            match key_of(p) {
                Some((off, second, key)) => {
                    let first_len = word_end(p, off) - off;
                    let row = (key, off, k as u32, first_len);
                    if second {
                        two.push(row);
                    } else {
                        one.push(row);
                    }
                }
                None => bare.push(k),
            }
        }
        let mut starts = Vec::with_capacity(one.len() + two.len());
        let (one_word, one_shapes) = grouped(&one, &mut starts);
        let (two_words, two_shapes) = grouped(&two, &mut starts);
        Shown {
            patterns,
            of,
            idents: placed,
            starts,
            one_word,
            two_words,
            one_shapes,
            two_shapes,
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
    /// in both, or the pattern ends and the text's next character may not be a word one). A
    /// pattern's second word likewise follows the same run of non-word characters in the text
    /// and ends where the pattern's does. So each word of the text is looked up once (with the
    /// next word, where a pattern of two words opens with it), and a candidate checked where
    /// it would start. Each once, by pattern, in the order given to `new`.
    pub fn shown_in(&self, text: &str) -> Vec<u32> {
        if self.patterns.is_empty() {
            return Vec::new();
        }
        // The patterns found, each once in the end (a flag per pattern, cleared for every line
        // a packing writes, cost more than the few found).
        let mut found: Vec<u32> = Vec::new();
        let whole_at = |start: usize, p: &str| {
            text.is_char_boundary(start)
                && text[start..].starts_with(p)
                && !text[..start].chars().next_back().is_some_and(is_word_char)
                && !text[start + p.len()..]
                    .chars()
                    .next()
                    .is_some_and(is_word_char)
        };
        let candidates = |from: usize, range: (u32, u32), found: &mut Vec<u32>| {
            for &(off, k) in &self.starts[range.0 as usize..range.1 as usize] {
                if from >= off && whole_at(from - off, self.patterns[k as usize]) {
                    found.push(k);
                }
            }
        };
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if c < 0x80 {
                if !is_word_byte(c) {
                    i += 1;
                    continue;
                }
            } else {
                // (`i` is a character boundary: the loop steps by whole characters.)
                let ch = text[i..].chars().next().unwrap_or(' ');
                if !is_word_char(ch) {
                    i += ch.len_utf8();
                    continue;
                }
            }
            let from = i;
            i = word_end(text, i);
            let shape = len_bit(i - from);
            if self.one_shapes[usize::from(c)] & shape != 0 {
                if let Some(&range) = self.one_word.get(&text[from..i]) {
                    candidates(from, range, &mut found);
                }
            }
            if self.two_shapes[usize::from(c)] & shape != 0 {
                let second = gap_end(text, i);
                if second < b.len() {
                    if let Some(&range) = self.two_words.get(&text[from..word_end(text, second)]) {
                        candidates(from, range, &mut found);
                    }
                }
            }
        }
        for &k in &self.bare {
            let p = self.patterns[k];
            if text.match_indices(p).any(|(at, _)| whole_at(at, p)) {
                found.push(k as u32);
            }
        }
        found.sort_unstable();
        found.dedup();
        found
            .iter()
            .flat_map(|&k| {
                &self.idents[self.of[k as usize] as usize..self.of[k as usize + 1] as usize]
            })
            .copied()
            .collect()
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::Kind;
    use super::*;

    /// Identifiers of equal rank, one per word (the index's tests build them too).
    pub(in crate::identifier_index) fn idents(words: &[&str]) -> Vec<Ident> {
        words
            .iter()
            .map(|w| Ident {
                kind: Kind::Id,
                text: w.to_string(),
                weight: 1.0,
                recency: 1.0,
                carried: false,
            })
            .collect()
    }

    /// Whether `text` holds `w` as a whole word, by a plain search at every place (matches may
    /// overlap: `_a>_` is whole in `_a>_a>_` only where it overlaps the first).
    fn plainly_shown(text: &str, w: &str) -> bool {
        let word = |c: Option<char>| c.is_some_and(is_word_char);
        text.char_indices().any(|(at, _)| {
            text[at..].starts_with(w)
                && !word(text[..at].chars().next_back())
                && !word(text[at + w.len()..].chars().next())
        })
    }

    fn check(words: &[&str], text: &str) {
        let ids = idents(words);
        let want: Vec<bool> = words.iter().map(|w| plainly_shown(text, w)).collect();
        assert_eq!(Shown::new(&ids).flags(text), want, "{text:?} / {words:?}");
    }

    /// Patterns of two words or more are found by their first two words: a text whose first
    /// word is theirs but whose separator or second word differs, or whose second word runs on,
    /// holds none of them.
    #[test]
    fn patterns_of_several_words_are_found_by_their_first_two() {
        let words = [
            "self",
            "self.assertEqual",
            "self.assertEqual(a",
            "self.x",
            "self.x.y",
            "self..x",
            "django/db/models.py",
            "django/db",
            "./django/db/models.py",
            "a -> b",
            "5 ms",
            "ValueError: bad thing",
            "Größe12.x",
            "x.",
            "--x--",
        ];
        for text in [
            "self.assertEqual(a, b) self.assertEqualx self.x.y self .x self..x self.xy",
            "see django/db/models.py and ./django/db/models.py, django/dbx, django/db/",
            "a -> b a->b a -> bc 5 ms 5 msg ValueError: bad thing. ValueError: bad",
            "Größe12.x Größe12.xé x. x.. --x-- ---x--",
            "self",
            "self.",
            "",
        ] {
            check(&words, text);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2_000))]
        /// Texts made of the patterns themselves (whole, or cut short) between random
        /// fragments, so most patterns stand in them somewhere, whole or nearly.
        #[test]
        fn shown_finds_what_a_plain_search_finds_on_random_texts(
            words in proptest::collection::vec(
                "(self|a|ab|é|日)?([._/ :()\\->]{1,2}(self|a|ab|x1|é|_)){0,3}[.:)]?", 1..12),
            pieces in proptest::collection::vec(
                (0usize..12, 0usize..8, "(self|a|ab|x1|é|日|_)?[._/ :()\\->\n]{0,2}"), 0..16)
        ) {
            let words: Vec<&str> = words.iter().map(String::as_str).filter(|w| !w.is_empty()).collect();
            let mut text = String::new();
            for (w, cut, junk) in &pieces {
                if let Some(w) = words.get(*w) {
                    // (Cut at a character boundary: some patterns stand only in part.)
                    let mut end = w.len().saturating_sub(*cut % 3);
                    while !w.is_char_boundary(end) {
                        end -= 1;
                    }
                    text.push_str(&w[..end]);
                }
                text.push_str(junk);
            }
            let ids = idents(&words);
            let want: Vec<bool> = words.iter().map(|w| plainly_shown(&text, w)).collect();
            proptest::prop_assert_eq!(Shown::new(&ids).flags(&text), want);
        }
    }
}
