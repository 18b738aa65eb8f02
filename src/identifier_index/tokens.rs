//! The tokens identifiers are read from: runs of identifier characters (`is_token_char`), each
//! with the classes of its bytes gathered while the run is read, so a token that cannot be an
//! identifier (most of any text: plain words) is set aside by a mask test instead of a pass per
//! predicate over its bytes.

use super::is_token_char;

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

/// Bytes that make the token holding them worth reading: identifier characters other than
/// lower-case ASCII letters, and every non-ASCII byte (its character decoded tells).
const MARKS: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = c >= 0x80 || (CLASS[c] != 0 && CLASS[c] & LOWER == 0);
        c += 1;
    }
    t
};

/// Bytes read at a time for a mark: most spans of text have none.
const CHUNK: usize = 16;

/// The first marked byte (`MARKS`) of `b` at or after `from`.
fn next_mark(b: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while let Some(chunk) = b.get(i..i + CHUNK) {
        // No early exit inside a chunk: one branch per chunk instead of one per byte.
        if chunk.iter().fold(false, |any, &c| any | MARKS[usize::from(c)]) {
            break;
        }
        i += CHUNK;
    }
    b[i..]
        .iter()
        .position(|&c| MARKS[usize::from(c)])
        .map(|k| i + k)
}

/// The tokens of a text that hold anything but lower-case ASCII letters, in order, each as
/// `next_token` gives it: a word of those letters alone is never an identifier, and most of any
/// text is such words, so they are stepped over a chunk of bytes at a time.
pub struct MarkedTokens<'a> {
    text: &'a str,
    /// Where the search resumes: the end of the last token read, or past a non-token character.
    at: usize,
}

impl<'a> MarkedTokens<'a> {
    pub fn new(text: &'a str) -> Self {
        MarkedTokens { text, at: 0 }
    }
}

impl Iterator for MarkedTokens<'_> {
    type Item = (usize, usize, u32);

    fn next(&mut self) -> Option<Self::Item> {
        let b = self.text.as_bytes();
        loop {
            let p = next_mark(b, self.at)?;
            if b[p] >= 0x80 {
                let ch = char_at(self.text, p);
                if !is_token_char(ch) {
                    self.at = p + ch.len_utf8();
                    continue;
                }
            }
            // The token's start: back over the lower-case letters before its mark (none of the
            // bytes since `at` is marked, and the token read last ended at `at`).
            let mut start = p;
            while start > self.at && b[start - 1].is_ascii_lowercase() {
                start -= 1;
            }
            let token = next_token(self.text, start)?;
            self.at = token.1;
            return Some(token);
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
    let start = i;
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
    Some((start, i, classes))
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
