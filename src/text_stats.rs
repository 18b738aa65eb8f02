//! Token estimate of a text from the shape of its bytes, read on a bounded sample.
//!
//! BPE vocabularies spend about one token per word-like run, a fraction of a token per letter
//! beyond that, more per punctuation run and digit, and roughly one token per CJK character.
//! The weights below were fitted by least squares against exact o200k_base counts of 12,500
//! distinct real texts (tool outputs, code, JSON arguments, prose) from the transcripts in
//! `shared/data` plus German, Russian, Chinese and Japanese samples; on those texts the median
//! per-text error is 5.3% and p90 16% (plain chars/4: 13% and 39%). The fit is reproduced by
//! `tools/fit_text_weights.py`.
//!
//! Long strings are read on a fixed-size sample (their head), so the cost
//! per message is bounded whatever its length: the estimate must stay far cheaper than the
//! tokenization it stands in for.

/// Byte classes; the class of a UTF-8 lead byte stands for its whole character.
#[derive(Clone, Copy)]
#[repr(u8)]
enum Class {
    Letter = 0,
    Digit = 1,
    Punct = 2,
    Space = 3,
    /// Lead byte of a 2-byte character (Latin accents, Greek, Cyrillic, Hebrew, Arabic).
    Lead2 = 4,
    /// Lead byte of a 3- or 4-byte character (CJK, emoji, most other scripts).
    Lead3 = 5,
    /// UTF-8 continuation byte: carries no weight, does not break a run.
    Cont = 6,
}

const N_CLASSES: usize = 7;

const fn class_table() -> [u8; 256] {
    let mut t = [Class::Punct as u8; 256];
    let mut b = 0usize;
    while b < 256 {
        let c = b as u8;
        t[b] = if c.is_ascii_alphabetic() {
            Class::Letter as u8
        } else if c.is_ascii_digit() {
            Class::Digit as u8
        } else if c == b' ' || c == b'\n' || c == b'\t' || c == b'\r' {
            Class::Space as u8
        } else if c >= 0xE0 {
            Class::Lead3 as u8
        } else if c >= 0xC0 {
            Class::Lead2 as u8
        } else if c >= 0x80 {
            Class::Cont as u8
        } else {
            Class::Punct as u8
        };
        b += 1;
    }
    t
}

static CLASS: [u8; 256] = class_table();

/// Counts of byte classes and of runs (maximal spans of one class) over the bytes read.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Shape {
    counts: [u32; N_CLASSES],
    runs: [u32; N_CLASSES],
    /// Bytes actually read.
    sampled: u32,
}

// Counting runs through an array (`counts[c] += 1`) stalls on store forwarding when a class
// repeats; instead each byte adds a one-hot word with an 8-bit lane per class, and the lanes are
// flushed into `Shape` before they can overflow.
const fn lane_table() -> [u64; 256] {
    let mut t = [0u64; 256];
    let mut b = 0usize;
    while b < 256 {
        t[b] = 1u64 << (8 * CLASS[b] as u32);
        b += 1;
    }
    t
}

static LANE: [u64; 256] = lane_table();
const LANE_FLUSH: usize = 255;

impl Shape {
    fn add_lanes(dst: &mut [u32; N_CLASSES], lanes: u64) {
        for (k, d) in dst.iter_mut().enumerate() {
            *d += ((lanes >> (8 * k)) & 0xFF) as u32;
        }
    }

    fn scan(&mut self, bytes: &[u8]) {
        let cont = Class::Cont as u8;
        let mut prev = u8::MAX;
        for chunk in bytes.chunks(LANE_FLUSH) {
            let (mut counts, mut runs) = (0u64, 0u64);
            for &b in chunk {
                let c = CLASS[b as usize];
                let lane = LANE[b as usize];
                counts += lane;
                // Continuation bytes belong to the character their lead byte started.
                let starts = (c != prev) & (c != cont);
                runs += lane * starts as u64;
                prev = if c == cont { prev } else { c };
            }
            Self::add_lanes(&mut self.counts, counts);
            Self::add_lanes(&mut self.runs, runs);
        }
        self.sampled += bytes.len() as u32;
    }
}

/// Bytes read from a long string: its head. One contiguous read touches the cache lines right
/// after the string's header (which the length read already brought in); windows spread over a
/// long string would each cost a cache miss, and on a 10k-message history those misses, not the
/// arithmetic, dominated the estimate (measured: 4x slower than a head sample). On the texts of
/// `shared/data` the head sample's median error is within 1.5 points of full-text features.
pub const SAMPLE_BYTES: usize = 128;

/// Read the shape of `text`, entirely when short, on its first `SAMPLE_BYTES` bytes when long.
pub fn shape_of(text: &[u8]) -> Shape {
    let mut s = Shape::default();
    s.scan(&text[..text.len().min(SAMPLE_BYTES)]);
    s
}

// Least-squares weights, o200k_base tokens per feature (see module docs and
// tools/fit_text_weights.py): letters, letter runs, digits, punctuation, punctuation runs,
// whitespace runs, 2-byte characters, 3/4-byte characters.
const W_LETTER: f64 = 0.066;
const W_LETTER_RUN: f64 = 0.514;
const W_DIGIT: f64 = 0.855;
const W_PUNCT: f64 = 0.132;
const W_PUNCT_RUN: f64 = 0.783;
const W_SPACE_RUN: f64 = 0.251;
const W_LEAD2: f64 = 0.211;
const W_LEAD3: f64 = 0.700;

/// Tokens per byte of base64-like text (encrypted reasoning, inline files), measured on the
/// 450 such strings of the transcripts against o200k_base: 0.677 tokens per character.
pub const BASE64_TOKENS_PER_BYTE: f64 = 0.677;

impl Shape {
    /// True when the sample looks like base64 or another opaque token (no spaces, hardly any
    /// punctuation, long): BPE splits such text much finer than prose.
    fn is_opaque(&self) -> bool {
        let c = &self.counts;
        let n = self.sampled as f64;
        n >= 64.0
            && (c[Class::Space as usize] as f64) <= 0.01 * n
            && (c[Class::Punct as usize] as f64) < 0.05 * n
            && c[Class::Lead2 as usize] + c[Class::Lead3 as usize] == 0
    }

    /// Estimated o200k-equivalent tokens of the sampled bytes.
    fn sample_tokens(&self) -> f64 {
        if self.is_opaque() {
            return self.sampled as f64 * BASE64_TOKENS_PER_BYTE;
        }
        let c = |k: Class| self.counts[k as usize] as f64;
        let r = |k: Class| self.runs[k as usize] as f64;
        W_LETTER * c(Class::Letter)
            + W_LETTER_RUN * r(Class::Letter)
            + W_DIGIT * c(Class::Digit)
            + W_PUNCT * c(Class::Punct)
            + W_PUNCT_RUN * r(Class::Punct)
            + W_SPACE_RUN * r(Class::Space)
            + W_LEAD2 * c(Class::Lead2)
            + W_LEAD3 * c(Class::Lead3)
    }
}

/// Estimated tokens (o200k_base-equivalent, fractional) of a UTF-8 text of `text.len()` bytes.
///
/// The sample's token density is extrapolated to the whole length; an empty text costs 0.
pub fn text_tokens(text: &[u8]) -> f64 {
    if text.is_empty() {
        return 0.0;
    }
    let shape = shape_of(text);
    let t = shape.sample_tokens();
    if shape.sampled as usize == text.len() {
        // Any non-empty text is at least one token.
        t.max(1.0)
    } else {
        (t * text.len() as f64 / shape.sampled as f64).max(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_prose_is_about_four_chars_per_token() {
        let s = "The quick brown fox jumps over the lazy dog while the agent reads the file. ";
        let t = text_tokens(s.repeat(20).as_bytes());
        let ratio = (s.len() * 20) as f64 / t;
        assert!((3.3..5.5).contains(&ratio), "chars/token {ratio}");
    }

    #[test]
    fn cjk_costs_far_more_per_byte_than_ascii() {
        let zh = "上下文窗口管理是智能体系统中的一个重要问题".repeat(10);
        let t = text_tokens(zh.as_bytes());
        let chars = zh.chars().count() as f64;
        assert!(
            t > 0.5 * chars && t < 1.2 * chars,
            "{t} tokens for {chars} chars"
        );
    }

    #[test]
    fn base64_is_priced_as_opaque() {
        let b = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM0"
            .repeat(100);
        let t = text_tokens(b.as_bytes());
        let per_byte = t / b.len() as f64;
        assert!((per_byte - BASE64_TOKENS_PER_BYTE).abs() < 1e-9);
    }

    #[test]
    fn long_text_cost_is_bounded_by_the_sample() {
        let s = "fn main() { println!(\"hello\"); }\n".repeat(100_000);
        let shape = shape_of(s.as_bytes());
        assert_eq!(shape.sampled as usize, SAMPLE_BYTES);
        let t = text_tokens(s.as_bytes());
        assert!(t > s.len() as f64 / 6.0 && t < s.len() as f64 / 2.0);
    }

    #[test]
    fn repetition_scales_linearly_within_sampling_noise() {
        // Sampling makes the estimate a density times a length: repeating a text k times must
        // cost about k times as much, whichever windows the sample happens to read.
        let s = "let x = compute(a, b) + 42; // why\n";
        let one = text_tokens(s.repeat(10).as_bytes()) / 10.0;
        for k in 1..200 {
            let t = text_tokens(s.repeat(k).as_bytes());
            let per = t / k as f64;
            assert!((per / one - 1.0).abs() < 0.15, "k={k}: {per} vs {one}");
        }
    }
}
