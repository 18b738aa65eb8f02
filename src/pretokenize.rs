//! tiktoken's pre-tokenizers (the o200k and cl100k split patterns) written out as code.
//!
//! A count needs only where each piece ends. tiktoken finds the pieces with a backtracking
//! regex (fancy-regex), which was most of the time of a count: on the 10k-message synthetic
//! history the regex split took ~70% of `count`. The patterns are simple enough to decide at
//! each position which alternative matches first and where it ends, with one classification
//! per character. The classes are the regex's own: they are read from `regex-syntax` (the
//! crate fancy-regex compiles the pattern with, same version), so every code point is classed
//! as the pattern classes it. The functions follow each alternative in the pattern's order,
//! with its backtracking spelled out; the tests compare every piece with the regex's on random
//! text, on every code point and on real transcripts.

use std::sync::OnceLock;

use regex_syntax::hir::{Class, HirKind};

const LU: u8 = 1;
const LT: u8 = 2;
const LL: u8 = 4;
const LM: u8 = 8;
const LO: u8 = 16;
const MARK: u8 = 32;
const NUM: u8 = 64;
const SPACE: u8 = 128;
/// `\p{L}`.
const LETTER: u8 = LU | LT | LL | LM | LO;
/// o200k's `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`.
const UPPERISH: u8 = LU | LT | LM | LO | MARK;
/// o200k's `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`.
const LOWERISH: u8 = LL | LM | LO | MARK;

/// The class bits of every code point: 256-code-point blocks, identical blocks stored once.
struct Table {
    ascii: [u8; 128],
    index: Vec<u16>,
    blocks: Vec<[u8; 256]>,
}

/// The code point ranges of one Unicode class as regex-syntax compiles it.
fn ranges(class: &str) -> Vec<(u32, u32)> {
    let hir = regex_syntax::parse(class).expect("a valid Unicode class");
    match hir.kind() {
        HirKind::Class(Class::Unicode(c)) => c
            .ranges()
            .iter()
            .map(|r| (r.start() as u32, r.end() as u32))
            .collect(),
        other => unreachable!("{class} compiled to {other:?}"),
    }
}

fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| {
        let mut flat = vec![0u8; 0x11_0000];
        for (class, bit) in [
            (r"\p{Lu}", LU),
            (r"\p{Lt}", LT),
            (r"\p{Ll}", LL),
            (r"\p{Lm}", LM),
            (r"\p{Lo}", LO),
            (r"\p{M}", MARK),
            (r"\p{N}", NUM),
            (r"\s", SPACE),
        ] {
            for (a, b) in ranges(class) {
                for c in a..=b {
                    flat[c as usize] |= bit;
                }
            }
        }
        let mut ascii = [0u8; 128];
        ascii.copy_from_slice(&flat[..128]);
        let mut seen = std::collections::HashMap::new();
        let mut blocks = Vec::new();
        let index = flat
            .chunks_exact(256)
            .map(|chunk| {
                let block: [u8; 256] = chunk.try_into().expect("256 bytes");
                *seen.entry(block).or_insert_with(|| {
                    blocks.push(block);
                    (blocks.len() - 1) as u16
                })
            })
            .collect();
        Table {
            ascii,
            index,
            blocks,
        }
    })
}

/// A text being split: its bytes (valid UTF-8) and the class table.
struct Cursor<'a> {
    b: &'a [u8],
    t: &'static Table,
}

impl Cursor<'_> {
    /// The class bits and UTF-8 length of the character at byte `i` (a character boundary).
    #[inline(always)]
    fn at(&self, i: usize) -> (u8, usize) {
        let b0 = self.b[i];
        if b0 < 0x80 {
            return (self.t.ascii[b0 as usize], 1);
        }
        let cont = |k: usize| u32::from(self.b[i + k] & 0x3F);
        let (c, len) = if b0 < 0xE0 {
            ((u32::from(b0 & 0x1F) << 6) | cont(1), 2)
        } else if b0 < 0xF0 {
            ((u32::from(b0 & 0x0F) << 12) | (cont(1) << 6) | cont(2), 3)
        } else {
            (
                (u32::from(b0 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3),
                4,
            )
        };
        let block = self.t.index[(c >> 8) as usize] as usize;
        (self.t.blocks[block][(c & 0xFF) as usize], len)
    }

    /// Whether the character at `i` has any of `bits`; false at the end.
    #[inline(always)]
    fn is(&self, i: usize, bits: u8) -> bool {
        i < self.b.len() && self.at(i).0 & bits != 0
    }

    /// The end of the run of characters with any of `bits` from `i`.
    #[inline(always)]
    fn run(&self, mut i: usize, bits: u8) -> usize {
        while i < self.b.len() {
            let (c, len) = self.at(i);
            if c & bits == 0 {
                break;
            }
            i += len;
        }
        i
    }

    /// The end of the run of characters with none of `bits` from `i`.
    #[inline(always)]
    fn run_not(&self, mut i: usize, bits: u8) -> usize {
        while i < self.b.len() {
            let (c, len) = self.at(i);
            if c & bits != 0 {
                break;
            }
            i += len;
        }
        i
    }

    /// `[^\r\n\p{L}\p{N}]` at `i`: its length, or 0.
    #[inline(always)]
    fn not_letter_digit_newline(&self, i: usize) -> usize {
        let b0 = self.b[i];
        if b0 == b'\r' || b0 == b'\n' {
            return 0;
        }
        let (c, len) = self.at(i);
        if c & (LETTER | NUM) == 0 {
            len
        } else {
            0
        }
    }

    /// `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at `i` (cl100k's `'(?i:[sdmt]|ll|ve|re)` is the same
    /// set): its length, or 0. Case-insensitive as the regex folds: `s` also matches U+017F
    /// (long s); no other of these letters has a fold outside ASCII (pinned by a test).
    #[inline(always)]
    fn contraction(&self, i: usize) -> usize {
        let b = self.b;
        if b.get(i) != Some(&b'\'') {
            return 0;
        }
        let lower = |k: usize| b.get(i + k).map(|c| c.to_ascii_lowercase());
        match lower(1) {
            Some(b's' | b't' | b'm' | b'd') => 2,
            Some(b'r' | b'v') if lower(2) == Some(b'e') => 3,
            Some(b'l') if lower(2) == Some(b'l') => 3,
            Some(0xC5) if b.get(i + 2) == Some(&0xBF) => 3,
            _ => 0,
        }
    }

    /// The whitespace run from `i` (a whitespace character): its end, where its last `\r` or
    /// `\n` starts, and where its last character starts.
    #[inline(always)]
    fn spaces(&self, i: usize) -> (usize, Option<usize>, usize) {
        let (mut k, mut last_newline, mut last_start) = (i, None, i);
        while k < self.b.len() {
            let (c, len) = self.at(k);
            if c & SPACE == 0 {
                break;
            }
            if self.b[k] == b'\r' || self.b[k] == b'\n' {
                last_newline = Some(k);
            }
            last_start = k;
            k += len;
        }
        (k, last_newline, last_start)
    }

    /// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+` from `j`: its end, or None.
    /// The greedy first part gives back characters from its end until the second can start.
    #[inline(always)]
    fn upper_then_lower(&self, j: usize) -> Option<usize> {
        let (mut k, mut last_lower) = (j, None);
        while k < self.b.len() {
            let (c, len) = self.at(k);
            if c & UPPERISH == 0 {
                break;
            }
            if c & LOWERISH != 0 {
                last_lower = Some(k);
            }
            k += len;
        }
        let t = if self.is(k, LOWERISH) { k } else { last_lower? };
        Some(self.run(t, LOWERISH))
    }

    /// The end of the o200k piece that starts at `i`.
    fn o200k_piece(&self, i: usize) -> usize {
        let n = self.b.len();
        let (c0, l0) = self.at(i);
        let p = self.not_letter_digit_newline(i);
        // `[^\r\n\p{L}\p{N}]?` first takes a character, then gives it back.
        let starts = [(p > 0).then_some(i + p), Some(i)];
        // 1: `P?[Lu Lt Lm Lo M]*[Ll Lm Lo M]+(contraction)?`
        for j in starts.into_iter().flatten() {
            if let Some(e) = self.upper_then_lower(j) {
                return e + self.contraction(e);
            }
        }
        // 2: `P?[Lu Lt Lm Lo M]+[Ll Lm Lo M]*(contraction)?`
        for j in starts.into_iter().flatten() {
            if self.is(j, UPPERISH) {
                let e = self.run(self.run(j, UPPERISH), LOWERISH);
                return e + self.contraction(e);
            }
        }
        // 3: `\p{N}{1,3}`
        if c0 & NUM != 0 {
            let mut e = i + l0;
            for _ in 0..2 {
                if !self.is(e, NUM) {
                    break;
                }
                e += self.at(e).1;
            }
            return e;
        }
        // 4: ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
        let other = SPACE | LETTER | NUM;
        let j = if self.b[i] == b' ' && i + 1 < n && self.at(i + 1).0 & other == 0 {
            Some(i + 1)
        } else if c0 & other == 0 {
            Some(i)
        } else {
            None
        };
        if let Some(j) = j {
            let mut e = self.run_not(j, other);
            while e < n && matches!(self.b[e], b'\r' | b'\n' | b'/') {
                e += 1;
            }
            return e;
        }
        // Only whitespace is left.
        let (k, last_newline, last_start) = self.spaces(i);
        // 5: `\s*[\r\n]+`: the run gives back characters until its last newline ends it.
        if let Some(nl) = last_newline {
            return nl + 1;
        }
        // 6: `\s+(?!\S)`: the whole run at the end of the text, else all but its last character.
        if k == n {
            return k;
        }
        if last_start > i {
            return last_start;
        }
        // 7: `\s+`
        k
    }

    /// The end of the cl100k piece that starts at `i`.
    fn cl100k_piece(&self, i: usize) -> usize {
        let n = self.b.len();
        let (c0, l0) = self.at(i);
        // 1: `'(?i:[sdmt]|ll|ve|re)`
        let c = self.contraction(i);
        if c > 0 {
            return i + c;
        }
        // 2: `[^\r\n\p{L}\p{N}]?+\p{L}++` (the possessive first part never gives back; it only
        // takes a character that is no letter anyway)
        let p = self.not_letter_digit_newline(i);
        if p > 0 {
            if self.is(i + p, LETTER) {
                return self.run(i + p, LETTER);
            }
        } else if c0 & LETTER != 0 {
            return self.run(i, LETTER);
        }
        // 3: `\p{N}{1,3}+`
        if c0 & NUM != 0 {
            let mut e = i + l0;
            for _ in 0..2 {
                if !self.is(e, NUM) {
                    break;
                }
                e += self.at(e).1;
            }
            return e;
        }
        // 4: ` ?[^\s\p{L}\p{N}]++[\r\n]*+`
        let other = SPACE | LETTER | NUM;
        let j = if self.b[i] == b' ' && i + 1 < n && self.at(i + 1).0 & other == 0 {
            Some(i + 1)
        } else if c0 & other == 0 {
            Some(i)
        } else {
            None
        };
        if let Some(j) = j {
            let mut e = self.run_not(j, other);
            while e < n && matches!(self.b[e], b'\r' | b'\n') {
                e += 1;
            }
            return e;
        }
        let (k, last_newline, last_start) = self.spaces(i);
        // 5: `\s++$`
        if k == n {
            return k;
        }
        // 6: `\s*[\r\n]`
        if let Some(nl) = last_newline {
            return nl + 1;
        }
        // 7: `\s+(?!\S)`
        if last_start > i {
            return last_start;
        }
        // 8: `\s`
        i + l0
    }
}

/// Which split pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// o200k_base (and o200k_harmony).
    O200k,
    /// cl100k_base.
    Cl100k,
}

/// The pieces of `text` under `pattern`, as tiktoken's regex splits it: calls `each` with
/// every piece in order.
pub fn split<'t>(text: &'t str, pattern: Pattern, mut each: impl FnMut(&'t str)) {
    let cur = Cursor {
        b: text.as_bytes(),
        t: table(),
    };
    let mut i = 0;
    while i < text.len() {
        let e = match pattern {
            Pattern::O200k => cur.o200k_piece(i),
            Pattern::Cl100k => cur.cl100k_piece(i),
        };
        each(&text[i..e]);
        i = e;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fancy_regex::Regex;

    const CL100K: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";

    fn regexes() -> [(Pattern, Regex); 2] {
        [
            (
                Pattern::O200k,
                Regex::new(tiktoken_rs::O200K_BASE_PAT_STR).unwrap(),
            ),
            (Pattern::Cl100k, Regex::new(CL100K).unwrap()),
        ]
    }

    fn pieces(text: &str, p: Pattern) -> Vec<&str> {
        let mut out = Vec::new();
        split(text, p, |s| out.push(s));
        out
    }

    fn check(text: &str, regexes: &[(Pattern, Regex); 2]) {
        for (p, re) in regexes {
            let want: Vec<&str> = re.find_iter(text).map(|m| m.unwrap().as_str()).collect();
            assert_eq!(pieces(text, *p), want, "{p:?} {text:?}");
        }
    }

    #[test]
    fn the_contraction_letters_fold_as_the_regex_folds_them() {
        // Every character `(?i)` lets these letters match, besides their two ASCII cases.
        for (letter, extra) in [
            ('s', vec!['\u{17F}']),
            ('t', vec![]),
            ('r', vec![]),
            ('e', vec![]),
            ('v', vec![]),
            ('m', vec![]),
            ('l', vec![]),
            ('d', vec![]),
        ] {
            let mut want: Vec<char> = vec![letter.to_ascii_uppercase(), letter];
            want.extend(extra);
            want.sort();
            let got: Vec<char> = ranges(&format!("(?i)[{letter}]"))
                .into_iter()
                .flat_map(|(a, b)| (a..=b).filter_map(char::from_u32))
                .collect();
            assert_eq!(got, want, "{letter}");
        }
    }

    #[test]
    fn hand_picked_texts_split_as_the_regex_splits_them() {
        let re = regexes();
        for t in [
            "",
            "Hello, world!",
            "  leading and trailing spaces   ",
            "def f(x):\n    return x ** 2  \n\n\n\tend",
            "I'm sure they'll say WE'RE done; it's 12345678 o'clock 'S 'ſ 'Re 'LL 'vE x'd",
            "上下文窗口管理是智能体系统中的一个重要问题 and émigré naïve Ελληνικά русский",
            "emoji 😀🚀 <|endoftext|> <|im_start|>user",
            "{\"a\": [1, 2, 3], \"b\": {\"c\": null}}\r\n",
            "path/to/file.rs:12 //! \n/\r\n/x !\n/\n",
            "camelCaseWord HTTPServer XMLHttpRequest ǅungla ǈ Ǌ a\u{301}b \u{301}a \u{301}\u{301}",
            "\u{2003}\u{a0} \u{85}x \u{2028}\u{2029} \t\t\n \r\n  \u{3000}漢字",
            "١٢٣٤ ٥ ½¾ Ⅻ x²³ 🎉🎉 🇫🇷 👩‍👩‍👧",
            "  \n  x",
            " \r\n\r\n",
            "\n",
            " ",
            "'",
            "''s",
            " 's",
            "x's",
            "X'S",
            "'x",
        ] {
            check(t, &re);
        }
    }

    #[test]
    fn every_code_point_splits_as_the_regex_splits_it() {
        // Each code point between letters, digits, spaces, apostrophes and newlines, 64 at a
        // time: the class of every one of them and the alternatives around it.
        let re = regexes();
        let chars: Vec<char> = (0..0x11_0000u32).filter_map(char::from_u32).collect();
        for chunk in chars.chunks(64) {
            let mut t = String::new();
            for (k, &c) in chunk.iter().enumerate() {
                t.push(c);
                t.push_str(["a", "A", "1", " ", "'s", "\n", "", "x'", "é"][k % 9]);
                t.push(c);
                t.push(c);
            }
            check(&t, &re);
        }
    }

    fn strings_of(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::String(s) => out.push(s.clone()),
            serde_json::Value::Array(a) => a.iter().for_each(|x| strings_of(x, out)),
            serde_json::Value::Object(o) => o.values().for_each(|x| strings_of(x, out)),
            _ => {}
        }
    }

    #[test]
    fn real_transcripts_split_as_the_regex_splits_them() {
        // Every string of every recorded request and conversation in ../shared/data (~40 MB of
        // prose, code, tool output, JSON, several scripts), and each line as written.
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
        let files: Vec<_> = [
            "crewai/requests.jsonl",
            "pydantic-ai/requests.jsonl",
            "replay/exchanges.jsonl",
            "tau-bench-airline/conversations.jsonl",
            "mini-swe-agent-gemini3/conversations.jsonl",
        ]
        .iter()
        .map(|f| root.join(f))
        .filter(|p| p.is_file())
        .collect();
        if files.is_empty() {
            eprintln!("SKIPPED: ../shared/data not found, real transcripts not split");
            return;
        }
        let re = regexes();
        let mut texts = 0;
        for f in files {
            for line in std::fs::read_to_string(&f).unwrap().lines() {
                check(line, &re);
                let mut strings = Vec::new();
                strings_of(&serde_json::from_str(line).unwrap(), &mut strings);
                for s in &strings {
                    check(s, &re);
                }
                texts += strings.len() + 1;
            }
        }
        assert!(texts > 1000, "{texts}");
    }

    proptest::proptest! {
        #[test]
        fn random_text_splits_as_the_regex_splits_it(
            t in "[a-zA-Z0-9 \\n\\t\\r'.,;:!?(){}\\[\\]\"/=+\\-_éüßſ中文😀ΩЖ\u{301}\u{a0}\u{2003}ǅ٣½]{0,200}"
        ) {
            check(&t, &regexes());
        }

        #[test]
        fn any_text_splits_as_the_regex_splits_it(t in "\\PC{0,60}|[\\s\\S]{0,60}") {
            check(&t, &regexes());
        }
    }
}
