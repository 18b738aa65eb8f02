//! What a model name says about how a request is billed: its token family, its public tokenizer
//! (when there is one) and its context window.
//!
//! The wire format (`provider`) says how messages are read; the model says how they cost. A
//! Gemini model called through an OpenAI-compatible router is billed by Gemini's tokenizer, a
//! Llama model on Groq by Llama's chat template. Routing and vendor prefixes (`openrouter/`,
//! `google/`, `vertex_ai/`, `bedrock/`, `us.anthropic.`, `azure/`, `groq/`, `together_ai/`,
//! `ollama/`, `meta-llama/`, `Qwen/`, `ft:`) and suffixes (dates, `-latest`, `:free`, Bedrock
//! `-v1:0`, Vertex `@20240620`, Ollama quantization tags) are stripped before the lookup. An
//! unknown name never fails: it resolves to `Family::Unknown`, priced by the caller's provider.

use crate::encoding::{encoding_for, Encoding};

/// A model's token family: one tokenizer and chat template lineage, priced by one profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    OpenAI,
    Anthropic,
    Gemini,
    /// Google's open models: Gemini's SentencePiece vocabulary.
    Gemma,
    Llama,
    Qwen,
    Mistral,
    DeepSeek,
    /// Amazon Nova (Bedrock).
    Nova,
    /// Cohere Command.
    Cohere,
    /// Zhipu GLM.
    Glm,
    /// Moonshot Kimi.
    Kimi,
    MiniMax,
    /// xAI Grok.
    Grok,
    Unknown,
}

impl Family {
    /// The name `model_info` reports.
    pub fn name(self) -> &'static str {
        match self {
            Family::OpenAI => "openai",
            Family::Anthropic => "anthropic",
            Family::Gemini => "gemini",
            Family::Gemma => "gemma",
            Family::Llama => "llama",
            Family::Qwen => "qwen",
            Family::Mistral => "mistral",
            Family::DeepSeek => "deepseek",
            Family::Nova => "nova",
            Family::Cohere => "cohere",
            Family::Glm => "glm",
            Family::Kimi => "kimi",
            Family::MiniMax => "minimax",
            Family::Grok => "grok",
            Family::Unknown => "unknown",
        }
    }
}

/// Where a model is served, when its name says so and the platform bills the same model
/// differently. Google serves Gemini on two platforms that count the same request differently
/// (identical recorded requests in ../shared/data/pydantic-ai: 36 vs 22 and 33 vs 19 prompt
/// tokens): the Gemini Developer API and Vertex AI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Platform {
    /// The Gemini Developer API (`gemini/` LiteLLM, `google-gla:` pydantic-ai, `models/`).
    GeminiApi,
    /// Vertex AI (`vertex_ai/` LiteLLM, `google-vertex:` pydantic-ai, a
    /// `projects/.../publishers/google/models/...` resource name).
    VertexAi,
}

impl Platform {
    /// The name `model_info` reports.
    pub fn name(self) -> &'static str {
        match self {
            Platform::GeminiApi => "gemini-api",
            Platform::VertexAi => "vertex-ai",
        }
    }
}

/// What is known about one model name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    /// The name as given.
    pub model: String,
    /// The base name after prefixes, suffixes and snapshot dates were stripped.
    pub base: String,
    pub family: Family,
    /// The serving platform, when the name's routing prefix says it and it changes the billing.
    pub platform: Option<Platform>,
    /// The public tokenizer, when the provider publishes it (OpenAI models only).
    pub encoding: Option<Encoding>,
    /// Total context window in tokens (Gemini: the input limit), None when unknown.
    pub context_window: Option<u64>,
    /// The table entry that matched (`"gpt-4o"` for `gpt-4o-mini-2024-07-18`), if any.
    pub matched: Option<&'static str>,
    /// Hidden overheads this library cannot know for the model and prices by a fitted average.
    pub unknown_overheads: &'static [&'static str],
}

impl ModelInfo {
    /// One line saying how the name was resolved.
    pub fn resolved(&self) -> String {
        let how = match self.matched {
            Some(m) => format!("matched {m:?}"),
            None if self.family == Family::Unknown => {
                "no known family: priced with the provider's default profile".to_string()
            }
            None => "family from the name; context window unknown".to_string(),
        };
        if self.base == self.model {
            format!("{:?}: {how}", self.model)
        } else {
            format!("{:?} -> {:?}: {how}", self.model, self.base)
        }
    }
}

// Total context window (prompt + output) in tokens, by base-name prefix. The longest prefix that
// ends at a name boundary ("-", "@", ":", "/", "." or the end) wins.
//
// Sources (read 2025-11): OpenAI https://platform.openai.com/docs/models (each model page,
// "Context window"); Anthropic https://docs.anthropic.com/en/docs/about-claude/models/overview
// ("Context window"; the 1M-token window of Sonnet 4 / 4.5 is a beta behind a request header, so
// the default 200K is listed); Google https://ai.google.dev/gemini-api/docs/models (each model's
// "Input token limit": Gemini's output limit is separate, so this is the prompt limit); Meta
// Llama model cards (https://www.llama.com/docs/model-cards-and-prompt-formats/, "context
// length"); Mistral https://docs.mistral.ai/getting-started/models/ ("Max tokens"); DeepSeek
// https://api-docs.deepseek.com/quick_start/pricing ("context length").
const CONTEXT_WINDOWS: &[(&str, u64)] = &[
    // OpenAI
    ("gpt-5", 400_000),
    ("gpt-5-chat", 128_000),
    ("gpt-5-chat-latest", 128_000),
    ("gpt-5.1", 400_000),
    ("gpt-5.1-chat", 128_000),
    ("gpt-5.2", 400_000),
    ("codex-mini", 200_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4.5-preview", 128_000),
    ("gpt-4o", 128_000),
    ("chatgpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-1106-preview", 128_000),
    ("gpt-4-0125-preview", 128_000),
    ("gpt-4-vision-preview", 128_000),
    ("gpt-4-32k", 32_768),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("gpt-3.5-turbo-instruct", 4_096),
    ("o1", 200_000),
    ("o1-mini", 128_000),
    ("o1-preview", 128_000),
    ("o3", 200_000),
    ("o3-mini", 200_000),
    ("o4-mini", 200_000),
    ("gpt-oss-120b", 131_072),
    ("gpt-oss-20b", 131_072),
    // Anthropic (dots in versions become dashes: claude-sonnet-4.5 -> claude-sonnet-4-5)
    ("claude-opus-4", 200_000),
    ("claude-sonnet-4", 200_000),
    ("claude-haiku-4", 200_000),
    ("claude-3", 200_000),
    ("claude-2-1", 200_000),
    ("claude-2-0", 100_000),
    ("claude-2", 100_000),
    ("claude-v2", 100_000),
    ("claude-instant", 100_000),
    // Google Gemini (input token limit)
    ("gemini-3-pro", 1_048_576),
    ("gemini-3-flash", 1_048_576),
    ("gemini-2.5-pro", 1_048_576),
    ("gemini-2.5-flash", 1_048_576),
    ("gemini-2.5-flash-lite", 1_048_576),
    ("gemini-2.0-flash", 1_048_576),
    ("gemini-2.0-flash-lite", 1_048_576),
    ("gemini-2.0-pro", 2_097_152),
    ("gemini-1.5-pro", 2_097_152),
    ("gemini-1.5-flash", 1_048_576),
    ("gemini-1.0-pro", 30_720),
    // Meta Llama
    ("llama-3.1", 131_072),
    ("llama-3.2", 131_072),
    ("llama-3.3", 131_072),
    ("llama3.1", 131_072),
    ("llama3.2", 131_072),
    ("llama3.3", 131_072),
    ("llama3-8b-8192", 8_192),
    ("llama3-70b-8192", 8_192),
    // Mistral
    ("mistral-large", 131_072),
    ("mistral-medium", 131_072),
    ("mistral-small", 131_072),
    ("codestral", 262_144),
    // DeepSeek
    ("deepseek-chat", 131_072),
    ("deepseek-reasoner", 131_072),
];

/// Name prefixes of each family, tried in order on the base name (and, for the vendor-only
/// names of routers, on the vendor path segment).
const FAMILIES: &[(&str, Family)] = &[
    ("gpt-", Family::OpenAI),
    ("chatgpt", Family::OpenAI),
    ("o1", Family::OpenAI),
    ("o3", Family::OpenAI),
    ("o4", Family::OpenAI),
    ("codex", Family::OpenAI),
    ("text-embedding", Family::OpenAI),
    ("davinci", Family::OpenAI),
    ("babbage", Family::OpenAI),
    ("claude", Family::Anthropic),
    ("gemini", Family::Gemini),
    ("gemma", Family::Gemma),
    ("llama", Family::Llama),
    ("meta-llama", Family::Llama),
    ("codellama", Family::Llama),
    ("qwen", Family::Qwen),
    ("qwq", Family::Qwen),
    ("mistral", Family::Mistral),
    ("mixtral", Family::Mistral),
    ("ministral", Family::Mistral),
    ("magistral", Family::Mistral),
    ("codestral", Family::Mistral),
    ("devstral", Family::Mistral),
    ("pixtral", Family::Mistral),
    ("open-mistral", Family::Mistral),
    ("open-mixtral", Family::Mistral),
    ("deepseek", Family::DeepSeek),
    ("nova", Family::Nova),
    ("command", Family::Cohere),
    ("c4ai", Family::Cohere),
    ("glm", Family::Glm),
    ("zai-glm", Family::Glm),
    ("kimi", Family::Kimi),
    ("moonshot", Family::Kimi),
    ("minimax", Family::MiniMax),
    ("grok", Family::Grok),
];

/// Bedrock's vendor segment (`us.anthropic.claude-...`, `meta.llama3-...`).
const BEDROCK_VENDORS: &[&str] = &[
    "anthropic.",
    "meta.",
    "amazon.",
    "mistral.",
    "cohere.",
    "deepseek.",
    "qwen.",
    "openai.",
    "google.",
    "moonshot.",
    "minimax.",
    "writer.",
    "ai21.",
];

/// Routers and SDKs that spell a model `provider:model` (pydantic-ai's `openai:gpt-4o`,
/// `google-vertex:gemini-2.5-pro`, `bedrock:us.anthropic...`): the part before the first `:` is
/// stripped only when it is one of these, so Ollama tags (`qwen3:0.6b`) keep their meaning.
const COLON_PROVIDERS: &[&str] = &[
    "openai",
    "openai-chat",
    "openai-responses",
    "azure",
    "anthropic",
    "bedrock",
    "google",
    "google-gla",
    "google-vertex",
    "gemini",
    "vertex_ai",
    "vertexai",
    "groq",
    "mistral",
    "cohere",
    "deepseek",
    "cerebras",
    "grok",
    "xai",
    "huggingface",
    "heroku",
    "moonshotai",
    "openrouter",
    "together",
    "fireworks",
    "ollama",
    "litellm",
    "vercel",
    "nebius",
    "ovhcloud",
    "github",
    "alibaba",
    "sambanova",
];

/// The serving platform a routing prefix names (see [`Platform`]).
fn platform_of(model: &str) -> Option<Platform> {
    let m = model.trim().to_ascii_lowercase();
    const VERTEX: &[&str] = &[
        "vertex_ai/",
        "vertex_ai_beta/",
        "vertex-ai/",
        "vertexai/",
        "vertex/",
        "google-vertex:",
        "google-vertex/",
        "vertex_ai:",
        "vertexai:",
    ];
    const GEMINI_API: &[&str] = &[
        "gemini/",
        "google-gla:",
        "google-gla/",
        "models/",
        "gemini:",
    ];
    if VERTEX.iter().any(|p| m.starts_with(p)) || m.contains("/publishers/google/models/") {
        return Some(Platform::VertexAi);
    }
    if GEMINI_API.iter().any(|p| m.starts_with(p)) {
        return Some(Platform::GeminiApi);
    }
    None
}

/// Bedrock cross-region inference prefixes.
const REGIONS: &[&str] = &[
    "us.", "eu.", "apac.", "au.", "ca.", "jp.", "us-gov.", "global.",
];

fn is_boundary(b: u8) -> bool {
    matches!(b, b'-' | b'@' | b':' | b'/' | b'.' | b'_')
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Strip one trailing snapshot date or version tag: `-2024-08-06`, `-20241022`, `-0125`,
/// `-latest`, `-v1`, `-001`, `-exp-01-21`, `-preview-05-06`.
fn strip_suffix_once(m: &str) -> Option<&str> {
    for tag in ["-latest", "-exp", "-preview"] {
        if let Some(r) = m.strip_suffix(tag) {
            return Some(r);
        }
    }
    let (head, last) = m.rsplit_once('-')?;
    // -2024-08-06 / -05-06 / -20241022 / -001 / -v1
    if is_digits(last) && (last.len() == 8 || last.len() == 2 || last.len() == 3) {
        return Some(head);
    }
    if last.len() >= 2 && last.starts_with('v') && is_digits(&last[1..]) {
        return Some(head);
    }
    if is_digits(last) && last.len() == 4 && head.ends_with(|c: char| c.is_ascii_alphabetic()) {
        // gpt-4-0125-preview (after -preview went), gpt-3.5-turbo-0301 keep their meaning for
        // tiktoken's prefixes; only strip the year of a date (`-2024`).
        if last.starts_with("20") {
            return Some(head);
        }
    }
    None
}

/// The base name of a model: lowercase, without routing prefixes, vendor segments, fine-tune
/// wrappers, tags, and snapshot dates.
pub fn base_name(model: &str) -> String {
    let mut m = model.trim().to_ascii_lowercase();
    if let Some((head, rest)) = m.split_once(':') {
        // pydantic-ai's `provider:model`, when what follows names a model: `mistral:7b` is
        // Ollama's tag of `mistral`, not a Mistral-hosted model called `7b`.
        if !rest.is_empty()
            && COLON_PROVIDERS.contains(&head)
            && family_of(&base_name(rest), rest) != Family::Unknown
        {
            return base_name(rest);
        }
    }
    if let Some(rest) = m.strip_prefix("ft:") {
        // ft:gpt-4o-mini-2024-07-18:org::id -> the base model.
        m = rest.split(':').next().unwrap_or(rest).to_string();
    }
    // Routing prefixes: "openrouter/google/gemini-2.5-pro", "models/gemini-1.5-pro",
    // "accounts/fireworks/models/llama-v3p1-70b-instruct", "meta-llama/Llama-3.3-70B".
    if let Some((_, last)) = m.rsplit_once('/') {
        m = last.to_string();
    }
    // Vertex "claude-3-5-sonnet@20240620"; OpenRouter "model:free"; Ollama "qwen3:0.6b",
    // "llama3.1:8b-instruct-q4_K_M"; Bedrock "...-v1:0".
    if let Some((head, _)) = m.split_once('@') {
        m = head.to_string();
    }
    if let Some((head, _)) = m.split_once(':') {
        m = head.to_string();
    }
    for r in REGIONS {
        if let Some(rest) = m.strip_prefix(r) {
            if BEDROCK_VENDORS.iter().any(|v| rest.starts_with(v)) {
                m = rest.to_string();
            }
            break;
        }
    }
    for v in BEDROCK_VENDORS {
        if let Some(rest) = m.strip_prefix(v) {
            m = rest.to_string();
            break;
        }
    }
    if m.starts_with("claude") {
        // "claude-3.5-sonnet" (OpenRouter) and "claude-sonnet-4.5" spell versions with dots.
        let mut b = m.into_bytes();
        for i in 1..b.len().saturating_sub(1) {
            if b[i] == b'.' && b[i - 1].is_ascii_digit() && b[i + 1].is_ascii_digit() {
                b[i] = b'-';
            }
        }
        // Only ASCII bytes were replaced by ASCII bytes: still UTF-8.
        m = String::from_utf8(b).unwrap_or_default();
    }
    while let Some(r) = strip_suffix_once(&m) {
        if r.is_empty() {
            break;
        }
        m = r.to_string();
    }
    m
}

fn prefix_match(name: &str, prefix: &str) -> bool {
    name.starts_with(prefix)
        && (name.len() == prefix.len() || is_boundary(name.as_bytes()[prefix.len()]))
}

/// The family of a base name, or of the router's vendor segment (`mistralai/...`).
fn family_of(base: &str, raw: &str) -> Family {
    if let Some(&(_, f)) = FAMILIES.iter().find(|(p, _)| base.starts_with(p)) {
        return f;
    }
    // Vendor paths name the family when the model name does not (`mistralai/mistral-small`
    // matched above; `deepseek-ai/...`, `moonshotai/...` do here).
    let raw = raw.to_ascii_lowercase();
    for seg in raw.split('/').rev().skip(1) {
        let seg = seg.trim_end_matches("ai").trim_end_matches('-');
        if let Some(&(_, f)) = FAMILIES.iter().find(|(p, _)| seg.starts_with(p)) {
            return f;
        }
        if seg == "anthropic" {
            return Family::Anthropic;
        }
        if seg == "google" {
            return Family::Gemini;
        }
        if seg == "openai" {
            return Family::OpenAI;
        }
        if seg == "meta" {
            return Family::Llama;
        }
    }
    Family::Unknown
}

/// Hidden overheads that depend on the serving stack and are priced by a fitted average.
fn unknown_overheads(f: Family, platform: Option<Platform>) -> &'static [&'static str] {
    match f {
        // Gemini's serving platforms bill the same request differently (Vertex AI: cheaper
        // function declarations and turns, thought signatures not billed; `profile::
        // on_vertex_ai`). A name with a routing prefix says which; a bare Gemini 3 name is
        // settled by its history's first thought signature (`Estimator::settle_platform`),
        // which a first turn does not have yet; a bare Gemini 2.x name is priced as the
        // Gemini API (its signatures look the same on both).
        Family::Gemini if platform.is_none() => &["tool-use prompt", "serving platform"],
        // Exact for chat.completions (`count`); the Responses API adds server-side items.
        Family::OpenAI => &[],
        // Documented per model and tool_choice; `tool_choice: any/tool` costs ~30 fewer.
        Family::Anthropic => &["tool_choice"],
        Family::Gemini | Family::Gemma => &["tool-use prompt"],
        _ => &["chat template", "tool-use prompt", "tokenizer"],
    }
}

/// Whether a Claude model (its base name, `ModelInfo::base`) keeps only the last assistant
/// turn's thinking blocks in its input: Anthropic's Messages API strips the `thinking` and
/// `redacted_thinking` blocks of earlier turns before the model reads them, and they count as
/// no input tokens ("context_window = (input_tokens - previous_thinking_tokens) +
/// current_turn_tokens", https://platform.claude.com/docs/en/build-with-claude/context-windows).
/// Which turns are kept depends on the model (extended thinking guide,
/// https://platform.claude.com/docs/en/build-with-claude/extended-thinking): Opus models
/// before Claude Opus 4.5, Sonnet models before Claude Sonnet 4.6 and every Haiku model through
/// Claude Haiku 4.5 keep the last turn's alone; later models (and Claude Mythos) keep them
/// all. A name that says no tier or version keeps them all: priced as sent.
pub fn drops_earlier_thinking(base: &str) -> bool {
    let words: Vec<&str> = base.split('-').collect();
    if words.first() != Some(&"claude") {
        return false;
    }
    let tier = words
        .iter()
        .find(|w| matches!(**w, "opus" | "sonnet" | "haiku"));
    // (A snapshot date is no version: `claude-sonnet-4-20250514`.)
    let numbers: Vec<u32> = words
        .iter()
        .filter_map(|w| w.parse::<u32>().ok())
        .filter(|&n| n < 100)
        .collect();
    let Some(&major) = numbers.first() else {
        return false;
    };
    let version = (major, numbers.get(1).copied().unwrap_or(0));
    match tier {
        Some(&"opus") => version < (4, 5),
        Some(&"sonnet") => version < (4, 6),
        Some(&"haiku") => version <= (4, 5),
        _ => false,
    }
}

/// A Gemini model of generation 3 or later (a base name, see [`ModelInfo::base`]).
pub fn is_gemini_3(base: &str) -> bool {
    base.starts_with("gemini-") && !is_gemini_before_3(base)
}

/// Gemini 1.x / 2.x (their thought signatures are not billed: the 12 gemini-2.5 requests with
/// signatures in ../shared/data are priced within a few tokens without them).
fn is_gemini_before_3(base: &str) -> bool {
    [
        "gemini-1",
        "gemini-2",
        "gemini-pro",
        "gemini-ultra",
        "gemini-exp",
    ]
    .iter()
    .any(|p| base.starts_with(p))
}

/// Resolve a model name. Never fails: an unknown name has `Family::Unknown`.
pub fn model_info(model: &str) -> ModelInfo {
    let base = base_name(model);
    let family = family_of(&base, model);
    let platform = match family {
        Family::Gemini | Family::Gemma => platform_of(model),
        _ => None,
    };
    let encoding = if family == Family::OpenAI {
        encoding_for(&base).ok()
    } else {
        None
    };
    let matched = CONTEXT_WINDOWS
        .iter()
        .filter(|(p, _)| prefix_match(&base, p))
        .max_by_key(|(p, _)| p.len());
    let unknown = unknown_overheads(family, platform);
    ModelInfo {
        model: model.to_string(),
        base,
        family,
        platform,
        encoding,
        context_window: matched.map(|&(_, w)| w),
        matched: matched.map(|&(p, _)| p),
        unknown_overheads: unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fam(m: &str) -> &'static str {
        model_info(m).family.name()
    }

    #[test]
    fn routing_prefixes_and_suffixes_resolve_to_the_family() {
        let cases = [
            ("google/gemini-3-pro-preview", "gemini"),
            ("openrouter/google/gemini-2.0-flash-exp:free", "gemini"),
            ("vertex_ai/claude-3-5-sonnet@20240620", "anthropic"),
            (
                "bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0",
                "anthropic",
            ),
            ("us.meta.llama4-maverick-17b-instruct-v1:0", "llama"),
            ("azure/gpt-4o-2024-11-20", "openai"),
            ("groq/llama-3.3-70b-versatile", "llama"),
            ("together_ai/Qwen/Qwen2.5-72B-Instruct-Turbo", "qwen"),
            ("ollama/qwen3:0.6b", "qwen"),
            ("meta-llama/Llama-3.3-70B-Instruct", "llama"),
            ("ft:gpt-4o-mini-2024-07-18:org::abc", "openai"),
            ("mistral-large-latest", "mistral"),
            ("mistralai/mistral-small", "mistral"),
            ("deepseek-ai/DeepSeek-R1", "deepseek"),
            ("openai/gpt-oss-120b", "openai"),
            ("llama3.1:8b-instruct-q4_K_M", "llama"),
            ("my-finetune", "unknown"),
            ("", "unknown"),
        ];
        for (m, f) in cases {
            assert_eq!(fam(m), f, "{m}");
        }
    }

    #[test]
    fn provider_colon_prefixes_are_stripped_but_ollama_tags_kept() {
        let cases = [
            ("openai:gpt-4o", "gpt-4o", "openai"),
            (
                "anthropic:claude-sonnet-4-5",
                "claude-sonnet-4-5",
                "anthropic",
            ),
            (
                "google-vertex:gemini-3-flash-preview",
                "gemini-3-flash",
                "gemini",
            ),
            ("google-gla:gemini-2.5-flash", "gemini-2.5-flash", "gemini"),
            (
                "groq:llama-3.3-70b-versatile",
                "llama-3.3-70b-versatile",
                "llama",
            ),
            (
                "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0",
                "claude-sonnet-4-5",
                "anthropic",
            ),
            (
                "huggingface:deepseek-ai/DeepSeek-R1",
                "deepseek-r1",
                "deepseek",
            ),
            ("ollama:qwen3:0.6b", "qwen3", "qwen"),
            ("mistral:7b", "mistral", "mistral"),
            ("mistral:latest", "mistral", "mistral"),
            ("mistral:mistral-large-latest", "mistral-large", "mistral"),
            ("qwen3:0.6b", "qwen3", "qwen"),
            ("openai:", "openai", "unknown"),
        ];
        for (m, base, f) in cases {
            let i = model_info(m);
            assert_eq!((i.base.as_str(), i.family.name()), (base, f), "{m}");
        }
    }

    #[test]
    fn a_routing_prefix_names_the_gemini_serving_platform() {
        let cases = [
            ("vertex_ai/gemini-3-flash-preview", Some(Platform::VertexAi)),
            ("google-vertex:gemini-2.5-pro", Some(Platform::VertexAi)),
            (
                "projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash",
                Some(Platform::VertexAi),
            ),
            ("gemini/gemini-2.5-flash", Some(Platform::GeminiApi)),
            ("google-gla:gemini-3-pro-preview", Some(Platform::GeminiApi)),
            ("models/gemini-2.0-flash", Some(Platform::GeminiApi)),
            // OpenRouter's vendor segment says who made the model, not where it runs.
            ("openrouter/google/gemini-2.5-flash", None),
            ("gemini-3-flash-preview", None),
            // Only Gemini models are billed differently by platform.
            ("vertex_ai/claude-3-5-sonnet@20240620", None),
        ];
        for (m, p) in cases {
            assert_eq!(model_info(m).platform, p, "{m}");
        }
    }

    #[test]
    fn gemini_overheads_say_what_the_name_leaves_unknown() {
        // Thought signatures are priced by their shape, whatever the name says.
        for m in [
            "gemini-3-flash-preview",
            "gemini/gemini-3-flash-preview",
            "vertex_ai/gemini-3-pro-preview",
            "gemini-2.5-flash",
        ] {
            assert!(
                !model_info(m)
                    .unknown_overheads
                    .contains(&"thought signatures"),
                "{m}"
            );
        }
        // The platform is unknown until a name or a history says it.
        assert!(model_info("gemini-3-flash-preview")
            .unknown_overheads
            .contains(&"serving platform"));
        assert!(model_info("gemini-2.5-flash")
            .unknown_overheads
            .contains(&"serving platform"));
        for m in [
            "gemini/gemini-3-flash-preview",
            "vertex_ai/gemini-3-pro-preview",
        ] {
            assert!(
                !model_info(m)
                    .unknown_overheads
                    .contains(&"serving platform"),
                "{m}"
            );
        }
        assert_eq!(
            model_info("gemini-3-flash-preview").context_window,
            Some(1_048_576)
        );
    }

    #[test]
    fn snapshots_keep_their_context_window_and_encoding() {
        let i = model_info("gpt-4o-mini-2024-07-18");
        assert_eq!(
            (i.base.as_str(), i.context_window),
            ("gpt-4o-mini", Some(128_000))
        );
        assert_eq!(i.encoding, Some(Encoding::O200kBase));
        assert_eq!(
            model_info("openai/gpt-oss-120b").encoding,
            Some(Encoding::O200kHarmony)
        );
        assert_eq!(
            model_info("gpt-4-0613").encoding,
            Some(Encoding::Cl100kBase)
        );
        assert_eq!(
            model_info("anthropic/claude-sonnet-4.5").base,
            "claude-sonnet-4-5"
        );
        assert_eq!(
            model_info("us.anthropic.claude-3-7-sonnet-20250219-v1:0").context_window,
            Some(200_000)
        );
        assert_eq!(
            model_info("claude-3-5-haiku-latest").base,
            "claude-3-5-haiku"
        );
        assert_eq!(
            model_info("gemini-2.0-flash-001").context_window,
            Some(1_048_576)
        );
        assert_eq!(model_info("gpt-4").context_window, Some(8_192));
        assert_eq!(model_info("claude-sonnet-4-6").encoding, None);
        assert_eq!(model_info("some-local-model").context_window, None);
        // Any text resolves without a panic.
        for m in [
            "claude-é.5",
            "-",
            ":",
            "@",
            "ft:",
            "us.",
            "claude-3.",
            "日本語-v1",
            "x-2024",
        ] {
            let _ = model_info(m);
        }
    }

    /// Claude models named by their tier and version: which drop the thinking of earlier turns
    /// (Anthropic's extended thinking guide), snapshot dates and platform prefixes aside.
    #[test]
    fn claude_models_before_opus_4_5_and_sonnet_4_6_drop_earlier_thinking() {
        for m in [
            "claude-sonnet-4-5-20250929",
            "claude-sonnet-4-20250514",
            "us.anthropic.claude-sonnet-4-20250514-v1:0",
            "claude-3-7-sonnet-latest",
            "claude-opus-4-1",
            "claude-opus-4",
            "claude-haiku-4-5",
        ] {
            assert!(drops_earlier_thinking(&model_info(m).base), "{m}");
        }
        for m in [
            "claude-opus-4-5",
            "claude-sonnet-4-6",
            "claude-sonnet-5",
            "claude-opus-5",
            "claude-mythos-preview",
            "claude-fable-5-1",
            "gpt-4o",
        ] {
            assert!(!drops_earlier_thinking(&model_info(m).base), "{m}");
        }
    }
}
