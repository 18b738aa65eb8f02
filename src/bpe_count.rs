//! Exact token counts of ordinary text, each thread splitting with its own compiled regex.
//!
//! The count is tiktoken's: split the text with the encoding's pattern, then each piece is one
//! token when it is in the vocabulary, else as many as byte-pair merging by rank leaves. The
//! encoder's own `CoreBPE::encode_ordinary` does exactly this, but its per-thread regex copies
//! are clones of one compiled fancy-regex program, which holds ONE scratch pool: the first
//! thread to use it takes scratch space lock-free, every other thread through a mutex, once per
//! match. Measured on the 20 longest SWE trajectories: the same loop of `count` took 87.7 ms on
//! the first thread and 124.9 ms on another, and `count_many` on 2 threads reached 1.4x. Here
//! every thread compiles the pattern once (~2 ms) and owns its pools; the vocabulary is
//! shared read-only (read back from the encoder once per process: ~13 MB for o200k, measured
//! as the resident-size growth of the first `count`).

use std::cell::RefCell;
use std::sync::OnceLock;

use fancy_regex::Regex;
use rustc_hash::FxHashMap;
use tiktoken_rs::{byte_pair_split, CoreBPE, Rank};

/// cl100k_base's split pattern, as tiktoken publishes it (openai_public.py, `cl100k_base`).
const CL100K_PATTERN: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";

/// Pieces longer than this are merged by the encoder itself: the plain merge here is quadratic
/// in the piece's length (real text splits into pieces of a few bytes; a 100 MB run of one
/// letter is one piece).
const LONG_PIECE: usize = 2048;

/// One vocabulary: ordinary token bytes to rank, and the split pattern.
pub struct Vocab {
    ranks: FxHashMap<Vec<u8>, Rank>,
    pattern: &'static str,
    /// Which per-thread regex slot this vocabulary's pattern uses.
    slot: usize,
}

/// The vocabulary of an encoder, read back from it once: every rank it decodes to bytes,
/// special tokens excluded (ordinary text never produces them).
fn vocab_of(bpe: &CoreBPE, pattern: &'static str, slot: usize) -> Vocab {
    let special: Vec<Vec<u8>> = bpe
        .special_tokens()
        .into_iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
    let mut ranks = FxHashMap::default();
    // o200k's ordinary ranks end below 200,000 and cl100k's near 100,256; decoding stops being
    // possible past the last one, and a run of failures that long means the end was passed.
    let mut misses = 0;
    let mut rank: Rank = 0;
    while misses < 4096 {
        match bpe.decode_bytes(&[rank]) {
            Ok(bytes) if !special.contains(&bytes) => {
                ranks.insert(bytes, rank);
                misses = 0;
            }
            _ => misses += 1,
        }
        rank += 1;
    }
    Vocab {
        ranks,
        pattern,
        slot,
    }
}

/// The o200k vocabulary (o200k_base; o200k_harmony splits and merges ordinary text the same
/// way, only its special tokens differ).
pub fn o200k() -> &'static Vocab {
    static V: OnceLock<Vocab> = OnceLock::new();
    V.get_or_init(|| {
        vocab_of(
            tiktoken_rs::o200k_base_singleton(),
            tiktoken_rs::O200K_BASE_PAT_STR,
            0,
        )
    })
}

/// The cl100k_base vocabulary.
pub fn cl100k() -> &'static Vocab {
    static V: OnceLock<Vocab> = OnceLock::new();
    V.get_or_init(|| vocab_of(tiktoken_rs::cl100k_base_singleton(), CL100K_PATTERN, 1))
}

thread_local! {
    /// This thread's compiled split patterns, one slot per vocabulary.
    static SPLITTERS: RefCell<[Option<Regex>; 2]> = const { RefCell::new([None, None]) };
}

impl Vocab {
    /// Tokens of `text` encoded as ordinary text (special-token text counted as plain text),
    /// the same count as `bpe.encode_ordinary(text).len()`; `bpe` (the same encoder) takes the
    /// rare text whose split the fast path cannot finish (a giant piece, a regex error).
    pub fn count(&self, text: &str, bpe: &CoreBPE) -> usize {
        let fast = SPLITTERS.with(|cell| {
            let mut slots = cell.borrow_mut();
            let re = match &mut slots[self.slot] {
                Some(re) => re,
                empty => empty.insert(Regex::new(self.pattern).ok()?),
            };
            let mut n = 0;
            for m in re.find_iter(text) {
                let piece = m.ok()?.as_str().as_bytes();
                n += if piece.len() == 1 || self.ranks.contains_key(piece) {
                    1
                } else if piece.len() > LONG_PIECE {
                    return None;
                } else {
                    byte_pair_split(piece, &self.ranks).len()
                };
            }
            Some(n)
        });
        fast.unwrap_or_else(|| bpe.encode_ordinary(text).len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts() -> Vec<String> {
        let mut t: Vec<String> = [
            "",
            "Hello, world!",
            "  leading and trailing spaces   ",
            "def f(x):\n    return x ** 2  \n\n\n\tend",
            "I'm sure they'll say WE'RE done; it's 12345678 o'clock",
            "上下文窗口管理是智能体系统中的一个重要问题 and émigré naïve Ελληνικά русский",
            "emoji 😀🚀 <|endoftext|> <|im_start|>user",
            "{\"a\": [1, 2, 3], \"b\": {\"c\": null}}\r\n",
            "------------------------------------------------------------",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        t.push("x".repeat(5000)); // one piece longer than LONG_PIECE
        t.push(" ".repeat(300) + "x");
        t.push("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVph+/=".repeat(50));
        t
    }

    #[test]
    fn counts_equal_the_encoders_own() {
        let (o, c) = (
            tiktoken_rs::o200k_base_singleton(),
            tiktoken_rs::cl100k_base_singleton(),
        );
        for t in texts() {
            assert_eq!(o200k().count(&t, o), o.encode_ordinary(&t).len(), "{t:?}");
            assert_eq!(cl100k().count(&t, c), c.encode_ordinary(&t).len(), "{t:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn random_text_counts_equal_the_encoders_own(
            t in "[a-zA-Z0-9 \\n\\t\\r'.,;:!?(){}\\[\\]\"/=+\\-_éüß中文😀ΩЖ]{0,300}"
        ) {
            let (o, c) = (tiktoken_rs::o200k_base_singleton(), tiktoken_rs::cl100k_base_singleton());
            proptest::prop_assert_eq!(o200k().count(&t, o), o.encode_ordinary(&t).len());
            proptest::prop_assert_eq!(cl100k().count(&t, c), c.encode_ordinary(&t).len());
        }
    }

    #[test]
    fn each_thread_counts_the_same() {
        let o = tiktoken_rs::o200k_base_singleton();
        let want: Vec<usize> = texts().iter().map(|t| o.encode_ordinary(t).len()).collect();
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    let got: Vec<usize> = texts().iter().map(|t| o200k().count(t, o)).collect();
                    assert_eq!(got, want);
                });
            }
        });
    }
}
