//! OpenAI's public tokenizers and which model uses which: the ground floor the exact counter,
//! the model table and the estimator all build on (it imports nothing of the crate but the
//! per-thread splitter).

use std::fmt;

/// One of OpenAI's public tokenizers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    O200kBase,
    Cl100kBase,
    O200kHarmony,
}

impl Encoding {
    pub const NAMES: [&'static str; 3] = ["o200k_base", "cl100k_base", "o200k_harmony"];

    /// tiktoken's name of the encoding.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
            Encoding::O200kHarmony => "o200k_harmony",
        }
    }

    /// Parse a tiktoken encoding name.
    pub fn parse(name: &str) -> Option<Encoding> {
        match name {
            "o200k_base" => Some(Encoding::O200kBase),
            "cl100k_base" => Some(Encoding::Cl100kBase),
            "o200k_harmony" => Some(Encoding::O200kHarmony),
            _ => None,
        }
    }

    /// Build now what the first `count` with this encoding would build: the encoder and the
    /// counter's vocabulary read back from it (0.13-0.25 s and ~25 MB resident for o200k,
    /// ~0.06 s and ~18 MB for cl100k: `benches/first_call.py`), once per process.
    pub fn preload(self) {
        self.vocab();
    }

    /// Whether this process has built the vocabulary `count` uses (`preload`, or a first count).
    pub fn is_loaded(self) -> bool {
        match self {
            Encoding::O200kBase | Encoding::O200kHarmony => crate::bpe_count::o200k_if_built(),
            Encoding::Cl100kBase => crate::bpe_count::cl100k_if_built(),
        }
        .is_some()
    }

    /// The counter's vocabulary of this encoding, built on first use (o200k_harmony splits and
    /// merges ordinary text as o200k_base does).
    fn vocab(self) -> &'static crate::bpe_count::Vocab {
        match self {
            Encoding::O200kBase | Encoding::O200kHarmony => crate::bpe_count::o200k(),
            Encoding::Cl100kBase => crate::bpe_count::cl100k(),
        }
    }

    /// Tokens of `text` with special-token text (`<|endoftext|>`) counted as ordinary text,
    /// as the API does for message content.
    pub fn count(self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        // The same count as tiktoken's `encode_ordinary(text).len()`, split without the
        // encoder's regex (`pretokenize`).
        self.vocab().count(text)
    }
}

/// A model name that maps to no known OpenAI encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownModel(pub String);

/// Bytes of an unknown model's name its error quotes: a name sent by a client can be any size
/// (a 100,000-character one made a 100,157-character message).
const SHOWN_NAME_BYTES: usize = 120;

impl fmt::Display for UnknownModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = crate::char_cut::head_bytes(&self.0, SHOWN_NAME_BYTES);
        write!(f, "unknown model {shown:?}")?;
        if shown.len() < self.0.len() {
            write!(f, " (cut; {} bytes in all)", self.0.len())?;
        }
        write!(
            f,
            ": no OpenAI encoding is known for it; pass encoding= \
             (one of {}) to count_text, or use a known model name",
            Encoding::NAMES.join(", ")
        )
    }
}

impl std::error::Error for UnknownModel {}

// Model-name prefixes, as tiktoken's `model.py` maps them, longest first where they
// overlap. Dated and suffixed names (`gpt-4o-2024-11-20`, `gpt-4.1-mini`) match by prefix.
const PREFIXES: &[(&str, Encoding)] = &[
    ("gpt-oss", Encoding::O200kHarmony),
    ("gpt-4o", Encoding::O200kBase),
    ("chatgpt-4o", Encoding::O200kBase),
    ("gpt-4.1", Encoding::O200kBase),
    ("gpt-4.5", Encoding::O200kBase),
    ("gpt-5", Encoding::O200kBase),
    ("o1", Encoding::O200kBase),
    ("o3", Encoding::O200kBase),
    ("o4", Encoding::O200kBase),
    ("codex-", Encoding::O200kBase),
    ("gpt-4", Encoding::Cl100kBase),
    ("gpt-3.5", Encoding::Cl100kBase),
    ("gpt-35", Encoding::Cl100kBase),
    ("text-embedding-3", Encoding::Cl100kBase),
    ("text-embedding-ada-002", Encoding::Cl100kBase),
];

/// The model name without an `ft:` prefix, fine-tune suffix (`ft:gpt-4o:org::id`) or provider
/// path (`openai/gpt-4o`, `azure/gpt-4o`).
pub(crate) fn base_model(model: &str) -> &str {
    let m = model.trim();
    let m = m.rsplit('/').next().unwrap_or(m);
    match m.strip_prefix("ft:") {
        Some(rest) => rest.split(':').next().unwrap_or(rest),
        None => m,
    }
}

/// The encoding of an OpenAI model name.
pub fn encoding_for(model: &str) -> Result<Encoding, UnknownModel> {
    let m = base_model(model);
    PREFIXES
        .iter()
        .find(|(p, _)| m.starts_with(p))
        .map(|&(_, e)| e)
        .ok_or_else(|| UnknownModel(model.to_string()))
}
