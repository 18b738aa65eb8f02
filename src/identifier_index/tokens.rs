//! The tokens identifiers are read from: runs of identifier characters (`is_token_char`), each
//! with the classes of its bytes gathered while the run is read, so a token that cannot be an
//! identifier is set aside by a mask test instead of a pass per predicate over its bytes. Only
//! the tokens holding a mark are read at all (`MarkedTokens`): words of lower-case letters, most
//! of any text, are stepped over by a block of bytes at a time.

use super::classify::is_token_char;

/// `a`-`f`.
pub const LOWER_HEX: u32 = 1;
/// `g`-`z`.
pub const LOWER_REST: u32 = 1 << 1;
/// `A`-`F`.
pub const UPPER_HEX: u32 = 1 << 2;
/// `G`-`Z`.
pub const UPPER_REST: u32 = 1 << 3;
pub const DIGIT: u32 = 1 << 4;
pub const UNDERSCORE: u32 = 1 << 5;
pub const DOT: u32 = 1 << 6;
pub const SLASH: u32 = 1 << 7;
pub const DASH: u32 = 1 << 8;
pub const COLON: u32 = 1 << 9;
pub const TILDE: u32 = 1 << 10;
pub const COMMA: u32 = 1 << 11;
pub const EQUALS: u32 = 1 << 12;
/// `#`, `$`, `%`, `@`, `+`, `?` and `&`: no predicate asks for them by class.
pub const OTHER: u32 = 1 << 13;
/// A non-ASCII identifier character (a letter or digit of another script).
pub const NON_ASCII: u32 = 1 << 14;

pub const LOWER: u32 = LOWER_HEX | LOWER_REST;
pub const UPPER: u32 = UPPER_HEX | UPPER_REST;
pub const LETTER: u32 = LOWER | UPPER;
/// The bytes of a hex number.
pub const HEX: u32 = DIGIT | LOWER_HEX | UPPER_HEX;

/// The class of each ASCII byte an identifier token may hold; 0 for the others.
const CLASS: [u32; 128] = {
    let mut t = [0; 128];
    let mut c = 0;
    while c < 128 {
        let b = c as u8;
        t[c] = match b {
            b'a'..=b'f' => LOWER_HEX,
            b'g'..=b'z' => LOWER_REST,
            b'A'..=b'F' => UPPER_HEX,
            b'G'..=b'Z' => UPPER_REST,
            b'0'..=b'9' => DIGIT,
            b'_' => UNDERSCORE,
            b'.' => DOT,
            b'/' => SLASH,
            b'-' => DASH,
            b':' => COLON,
            b'~' => TILDE,
            b',' => COMMA,
            b'=' => EQUALS,
            b'#' | b'$' | b'%' | b'@' | b'+' | b'?' | b'&' => OTHER,
            _ => 0,
        };
        c += 1;
    }
    t
};

/// Bytes that make the token holding them worth reading: identifier characters that
/// `Collector::scan` can keep a word of lower-case letters for (capitals, digits, `_`, `/`,
/// `-` of a UUID, `#`, `$`, `%`, `@`, `~`), `.` (a dotted name's; dropped again when it ends its
/// token) and every non-ASCII byte (its character decoded tells). The other punctuation of
/// tokens (`,` `:` `=` `?` `&` `+`) splits or trims to words of lower-case letters only.
const fn is_mark(c: u8) -> bool {
    c >= 0x80
        || (CLASS[c as usize] & !(LOWER | COMMA | COLON | EQUALS) != 0
            && !matches!(c, b'?' | b'&' | b'+'))
}

/// Bytes read at a time for marks: most spans of text have none.
const BLOCK: usize = 64;

/// `MARK_AT[k][c]`: bit `k` set when `c` is a mark (`is_mark`), so the marks of eight bytes are
/// eight lookups OR-ed, with no shift or branch per byte.
const MARK_AT: [[u8; 256]; 8] = {
    let mut t = [[0; 256]; 8];
    let mut k = 0;
    while k < 8 {
        let mut c = 0;
        while c < 256 {
            if is_mark(c as u8) {
                t[k][c] = 1 << k;
            }
            c += 1;
        }
        k += 1;
    }
    t
};

/// The marks of the bytes of `b` from `from` on, bit `k` for byte `from + k`, up to `BLOCK`.
fn marks_at(b: &[u8], from: usize) -> u64 {
    let Some(block) = b.get(from..from + BLOCK) else {
        return b[from..].iter().enumerate().fold(0, |m, (k, &c)| {
            m | u64::from(MARK_AT[0][usize::from(c)]) << k
        });
    };
    block.chunks_exact(8).enumerate().fold(0, |m, (j, eight)| {
        let byte = eight
            .iter()
            .zip(&MARK_AT)
            .fold(0, |m8, (&c, at)| m8 | at[usize::from(c)]);
        m | u64::from(byte) << (8 * j)
    })
}

/// Whether `c` is an ASCII identifier character.
fn is_token_byte(c: u8) -> bool {
    c < 0x80 && CLASS[usize::from(c)] != 0
}

/// The tokens of a text that hold a mark (`is_mark`), in order, each as `next_token` gives it:
/// the others, most of any text, can never be identifiers, and they are stepped over a block of
/// bytes at a time.
pub struct MarkedTokens<'a> {
    text: &'a str,
    /// Where the search resumes: the end of the last token read, or past a non-token character.
    at: usize,
    /// Start of the block of bytes whose marks `marks` holds.
    block: usize,
    /// The block's marks not read yet (none before `at`).
    marks: u64,
}

impl<'a> MarkedTokens<'a> {
    pub fn new(text: &'a str) -> Self {
        MarkedTokens {
            text,
            at: 0,
            block: 0,
            marks: marks_at(text.as_bytes(), 0),
        }
    }

    /// Marks before `at` are read.
    fn skip_to(&mut self, at: usize) {
        self.at = at;
        self.marks = match at - self.block {
            n if n < BLOCK => self.marks & (!0 << n),
            _ => 0,
        };
    }
}

impl Iterator for MarkedTokens<'_> {
    type Item = (usize, usize, u32);

    fn next(&mut self) -> Option<Self::Item> {
        let b = self.text.as_bytes();
        loop {
            while self.marks == 0 {
                self.block = (self.block + BLOCK).max(self.at);
                if self.block >= b.len() {
                    return None;
                }
                self.marks = marks_at(b, self.block);
            }
            let p = self.block + self.marks.trailing_zeros() as usize;
            self.marks &= self.marks - 1;
            let c = b[p];
            if c == b'.' && !b.get(p + 1).is_some_and(|&n| n >= 0x80 || is_token_byte(n)) {
                // A dot that ends its token: trimmed off.
                continue;
            }
            if c >= 0x80 {
                let ch = char_at(self.text, p);
                if !is_token_char(ch) {
                    self.skip_to(p + ch.len_utf8());
                    continue;
                }
            }
            // The token's start: back over its ASCII characters before the mark (there is no
            // non-ASCII one since `at`: it would be a mark read before this one), their
            // classes gathered on the way; then on from the mark (the characters before it
            // read once, not again from the start).
            let mut start = p;
            let mut before = 0;
            while start > self.at {
                let c = b[start - 1];
                let k = if c < 0x80 { CLASS[usize::from(c)] } else { 0 };
                if k == 0 {
                    break;
                }
                before |= k;
                start -= 1;
            }
            let (end, classes) = token_from(self.text, p);
            self.skip_to(end);
            return Some((start, end, before | classes));
        }
    }
}

/// The character starting at byte `i` of `text` (a char boundary).
fn char_at(text: &str, i: usize) -> char {
    text[i..].chars().next().unwrap_or(' ')
}

/// The first token of `text` starting at or after byte `from` (a char boundary): its start, end
/// and the classes of its bytes (OR-ed).
#[inline]
pub fn next_token(text: &str, from: usize) -> Option<(usize, usize, u32)> {
    let b = text.as_bytes();
    let mut i = from;
    loop {
        let c = *b.get(i)?;
        if c < 0x80 {
            if CLASS[usize::from(c)] != 0 {
                break;
            }
            i += 1;
        } else {
            let ch = char_at(text, i);
            if is_token_char(ch) {
                break;
            }
            i += ch.len_utf8();
        }
    }
    let (end, classes) = token_from(text, i);
    Some((i, end, classes))
}

/// Where the token that holds byte `i` of `text` (an identifier character's start) ends, from
/// `i` on, and the classes of its bytes from `i` (OR-ed).
#[inline]
fn token_from(text: &str, mut i: usize) -> (usize, u32) {
    let b = text.as_bytes();
    let mut classes = 0;
    while let Some(&c) = b.get(i) {
        if c < 0x80 {
            let k = CLASS[usize::from(c)];
            if k == 0 {
                break;
            }
            classes |= k;
            i += 1;
        } else {
            let ch = char_at(text, i);
            if !is_token_char(ch) {
                break;
            }
            classes |= NON_ASCII;
            i += ch.len_utf8();
        }
    }
    (i, classes)
}

/// The classes of the bytes of `t` (a piece of a token).
pub fn classes_of(t: &str) -> u32 {
    t.bytes().fold(0, |k, c| {
        k | if c < 0x80 {
            CLASS[usize::from(c)]
        } else {
            NON_ASCII
        }
    })
}
