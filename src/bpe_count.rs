//! Exact token counts of ordinary text.
//!
//! The count is tiktoken's: split the text with the encoding's pattern, then each piece is one
//! token when it is in the vocabulary, else as many as byte-pair merging by rank leaves. The
//! split is `pretokenize`'s (tiktoken's patterns as code, no regex: the regex was most of the
//! time of a count, and the encoder's compiled regex copies share one scratch pool that every
//! thread but the first reached through a mutex per match). The vocabulary is shared read-only
//! (read back once per process from an encoder then dropped: the first o200k count grows the
//! resident size by ~25 MB, cl100k's by ~18 MB, where keeping tiktoken-rs's shared encoder made
//! it ~69 and ~38 MB: `benches/first_call.py`). Pieces that are not one token are merged once
//! per thread and their counts remembered, and recent short pieces are kept in a small table that stays in
//! cache (`Memory`): agent histories repeat the same words, identifiers, paths and JSON keys.

use std::cell::RefCell;
use std::sync::OnceLock;

use rustc_hash::{FxHashMap, FxHashSet};
use tiktoken_rs::{byte_pair_split, CoreBPE, Rank};

use crate::bpe_merge::merged_len;

use crate::pretokenize::{split, Pattern};

/// Pieces longer than this are merged with a heap (`bpe_merge`): the plain merge rescans every
/// pair after each merge, quadratic in the piece's length (real text splits into pieces of a
/// few bytes; a 1 MB run of letters is one piece).
const LONG_PIECE: usize = 128;

/// Pieces longer than this are not remembered (a long run is rarely seen twice).
const MEMO_PIECE: usize = 2048;

/// Merged pieces remembered per thread and vocabulary before the memory starts over: ~64k
/// pieces of a few bytes each, a few MB at most.
const MERGED_CAP: usize = 1 << 16;

/// One vocabulary: ordinary token bytes to rank, and the split pattern.
pub struct Vocab {
    ranks: FxHashMap<Vec<u8>, Rank>,
    /// The tokens of up to 7 bytes, packed into one integer each (`short_key`): most pieces are
    /// that short, and looking one up then costs one multiply and one compare, where the byte
    /// map hashes the slice and compares it through `memcmp` (8% of a count).
    short: FxHashSet<u64>,
    pattern: Pattern,
    /// Which per-thread memory of merged pieces this vocabulary uses.
    slot: usize,
}

/// The vocabulary of an encoder, read back from it once: every rank it decodes to bytes,
/// special tokens excluded (ordinary text never produces them).
fn vocab_of(bpe: &CoreBPE, pattern: Pattern, slot: usize) -> Vocab {
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
    let short = ranks.keys().filter_map(|t| short_key(t)).collect();
    Vocab {
        ranks,
        short,
        pattern,
        slot,
    }
}

/// A piece of up to 7 bytes as one integer: its bytes, and its length in the top byte (so
/// `"a"` and `"a\0"` differ).
#[inline(always)]
fn short_key(piece: &[u8]) -> Option<u64> {
    if piece.len() > 7 {
        return None;
    }
    let mut k = (piece.len() as u64) << 56;
    for (j, &b) in piece.iter().enumerate() {
        k |= u64::from(b) << (8 * j);
    }
    Some(k)
}

/// The o200k vocabulary (o200k_base; o200k_harmony splits and merges ordinary text the same
/// way, only its special tokens differ).
pub fn o200k() -> &'static Vocab {
    O200K.get_or_init(|| {
        let vocab = vocab_of(&encoder(tiktoken_rs::o200k_base()), Pattern::O200k, 0);
        built_one(vocab)
    })
}

/// The cl100k_base vocabulary.
pub fn cl100k() -> &'static Vocab {
    CL100K.get_or_init(|| {
        let vocab = vocab_of(&encoder(tiktoken_rs::cl100k_base()), Pattern::Cl100k, 1);
        built_one(vocab)
    })
}

/// An encoder built for reading its vocabulary back, then dropped: nothing else counts with
/// it, and tiktoken-rs's shared one stayed in memory for the process's life (its two maps,
/// sorted tokens and regexes: ~50 of the ~70 MB a first o200k count added to the resident
/// size, against ~20 MB for the table kept).
fn encoder<E: std::fmt::Debug>(built: Result<CoreBPE, E>) -> CoreBPE {
    built.expect("tiktoken-rs builds its embedded encodings")
}

/// Run once a vocabulary is built, its encoder dropped (`after_build`).
static AFTER_BUILD: OnceLock<fn()> = OnceLock::new();

/// Have `hook` run on the building thread each time a vocabulary has been built and its
/// encoder dropped: the Python bindings return the allocator's free pages to the system there
/// (their allocator keeps freed pages, and the encoder's count as resident until reused).
pub fn after_build(hook: fn()) {
    let _ = AFTER_BUILD.set(hook);
}

fn built_one(vocab: Vocab) -> Vocab {
    if let Some(hook) = AFTER_BUILD.get() {
        hook();
    }
    vocab
}

static O200K: OnceLock<Vocab> = OnceLock::new();
static CL100K: OnceLock<Vocab> = OnceLock::new();

/// The o200k vocabulary if this process has built it, without building it.
pub fn o200k_if_built() -> Option<&'static Vocab> {
    O200K.get()
}

/// The cl100k_base vocabulary if this process has built it, without building it.
pub fn cl100k_if_built() -> Option<&'static Vocab> {
    CL100K.get()
}

/// Slots of the per-thread table of recent short pieces (`Memory::hot`): 8,192 x 16 bytes, about
/// an L2 cache.
const HOT_BITS: u32 = 13;

/// What one thread remembers of one vocabulary's pieces.
#[derive(Default)]
struct Memory {
    /// Token counts of pieces that are not one token.
    merged: FxHashMap<Box<[u8]>, u32>,
    /// Short pieces seen lately (`short_key` -> tokens), one per slot, the last one wins: the
    /// vocabulary's sets are megabytes, and probing them cost a cache miss per piece (9% of a
    /// count on its own), where the words of a text mostly repeat.
    hot: Vec<(u64, u32)>,
}

thread_local! {
    /// This thread's memory of pieces, one per vocabulary.
    static MEMORY: RefCell<[Memory; 2]> = RefCell::default();
}

impl Vocab {
    /// The vocabulary's ordinary tokens and their ranks (the merge's tests).
    #[cfg(test)]
    pub(crate) fn ranks(&self) -> &FxHashMap<Vec<u8>, Rank> {
        &self.ranks
    }

    /// Tokens of a piece not found in the memory.
    #[inline(always)]
    fn piece_tokens(&self, bytes: &[u8], key: Option<u64>, memory: &mut Memory) -> u32 {
        let one = match key {
            Some(k) => bytes.len() == 1 || self.short.contains(&k),
            None => self.ranks.contains_key(bytes),
        };
        if one {
            1
        } else if let Some(&k) = memory.merged.get(bytes) {
            k
        } else {
            let k = if bytes.len() > LONG_PIECE {
                merged_len(bytes, &self.ranks)
            } else {
                byte_pair_split(bytes, &self.ranks).len()
            } as u32;
            if bytes.len() <= MEMO_PIECE {
                if memory.merged.len() >= MERGED_CAP {
                    memory.merged.clear();
                }
                memory.merged.insert(bytes.into(), k);
            }
            k
        }
    }

    /// Tokens of `text` encoded as ordinary text (special-token text counted as plain text),
    /// the same count as the encoder's `encode_ordinary(text).len()`.
    pub fn count(&self, text: &str) -> usize {
        MEMORY.with(|cell| {
            let mut memories = cell.borrow_mut();
            let memory = &mut memories[self.slot];
            if memory.hot.is_empty() {
                memory.hot = vec![(0, 0); 1 << HOT_BITS];
            }
            let mut n = 0usize;
            split(text, self.pattern, |piece| {
                let key = short_key(piece.as_bytes());
                let Some(k) = key else {
                    n += self.piece_tokens(piece.as_bytes(), None, memory) as usize;
                    return;
                };
                // A key is never 0 (its top byte holds the length), so 0 marks an empty slot.
                let slot = (k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - HOT_BITS)) as usize;
                let (seen, tokens) = memory.hot[slot];
                if seen == k {
                    n += tokens as usize;
                    return;
                }
                let tokens = self.piece_tokens(piece.as_bytes(), key, memory);
                memory.hot[slot] = (k, tokens);
                n += tokens as usize;
            });
            n
        })
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
            assert_eq!(o200k().count(&t), o.encode_ordinary(&t).len(), "{t:?}");
            assert_eq!(cl100k().count(&t), c.encode_ordinary(&t).len(), "{t:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn random_text_counts_equal_the_encoders_own(
            t in "[a-zA-Z0-9 \\n\\t\\r'.,;:!?(){}\\[\\]\"/=+\\-_éüß中文😀ΩЖ]{0,300}"
        ) {
            let (o, c) = (tiktoken_rs::o200k_base_singleton(), tiktoken_rs::cl100k_base_singleton());
            proptest::prop_assert_eq!(o200k().count(&t), o.encode_ordinary(&t).len());
            proptest::prop_assert_eq!(cl100k().count(&t), c.encode_ordinary(&t).len());
        }

        #[test]
        fn any_text_counts_equal_the_encoders_own(
            // Any characters; and words of every script with contractions, numbers and runs
            // of whitespace between them.
            t in "\\PC{0,120}|([\\p{L}\\p{M}]{1,8}('s|'ll|'VE|'d|'T|ſ)?[ \\t\\n\\r\u{a0}\u{3000}]{0,4}[0-9٣½]{0,5}[.,!?/\"-]{0,3}){0,20}"
        ) {
            let (o, c) = (tiktoken_rs::o200k_base_singleton(), tiktoken_rs::cl100k_base_singleton());
            proptest::prop_assert_eq!(o200k().count(&t), o.encode_ordinary(&t).len());
            proptest::prop_assert_eq!(cl100k().count(&t), c.encode_ordinary(&t).len());
        }
    }

    #[test]
    fn real_texts_count_as_the_encoders_own() {
        // Every distinct string of ../shared/data, counted in one thread (the memories of
        // pieces filled and reused across texts).
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
        let mut strings = std::collections::BTreeSet::new();
        for f in [
            "crewai/requests.jsonl",
            "tau-bench-airline/conversations.jsonl",
            "replay/exchanges.jsonl",
        ] {
            let Ok(text) = std::fs::read_to_string(root.join(f)) else {
                continue;
            };
            for line in text.lines() {
                let mut stack = vec![serde_json::from_str::<serde_json::Value>(line).unwrap()];
                while let Some(v) = stack.pop() {
                    match v {
                        serde_json::Value::String(s) => {
                            strings.insert(s);
                        }
                        serde_json::Value::Array(a) => stack.extend(a),
                        serde_json::Value::Object(o) => stack.extend(o.into_iter().map(|(_, v)| v)),
                        _ => {}
                    }
                }
            }
        }
        if strings.is_empty() {
            eprintln!("SKIPPED: ../shared/data not found, real texts not counted");
            return;
        }
        let (o, c) = (
            tiktoken_rs::o200k_base_singleton(),
            tiktoken_rs::cl100k_base_singleton(),
        );
        for s in &strings {
            assert_eq!(o200k().count(s), o.encode_ordinary(s).len(), "{s:?}");
            assert_eq!(cl100k().count(s), c.encode_ordinary(s).len(), "{s:?}");
        }
        assert!(strings.len() > 1000, "{}", strings.len());
    }

    #[test]
    fn each_thread_counts_the_same() {
        let o = tiktoken_rs::o200k_base_singleton();
        let want: Vec<usize> = texts().iter().map(|t| o.encode_ordinary(t).len()).collect();
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    let got: Vec<usize> = texts().iter().map(|t| o200k().count(t)).collect();
                    assert_eq!(got, want);
                });
            }
        });
    }
}
