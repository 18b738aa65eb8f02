//! The heuristic estimator: what a history costs in a provider's tokens, without tokenizing.
//!
//! One estimator prices every message for every caller (totals, per-message lists, the tail
//! walk, pruning, the session ledger), and one overhead function prices what surrounds the
//! messages (system prompt, tool definitions, reply priming): two call sites that count
//! differently make a compaction trigger and the budget it compacts to disagree.

use crate::client_tools::{client_tool_tokens, ANTHROPIC_TOOL_USE_PROMPT};
use crate::encoding::Encoding;
use crate::fixed_needle::FixedNeedle;
use crate::image::{dims_of_base64, dims_of_bytes};
use crate::image_tokens::{image_tokens, rule_for, ImageRule};
use crate::media_tokens::media_tokens;
use crate::message::{
    Content, Detail, Format, Image, ImageSource, MediaKind, Message, Part, Role, ThoughtSignatures,
    ToolCall,
};
use crate::model_info::{drops_earlier_thinking, is_gemini_3, model_info, Family, ModelInfo};
use crate::profile::{on_vertex_ai, profile_for, Profile};
use crate::provider::Provider;
pub use crate::request_extras::{RequestExtras, ResponseFormat, ToolDef};
use crate::summary_marker::{SUMMARY_CLOSE, SUMMARY_OPEN};
use crate::text_stats::{
    text_tokens, text_tokens_whole, TextWeights, BASE64_TOKENS_PER_BYTE, LONG_TEXT, SAMPLE_BYTES,
};
use crate::tool_render::{
    openai_response_format_tokens, openai_system_tokens, openai_tool_block_tokens,
};

/// Tokens per character for opaque parts (audio, files, unknown blocks) priced from their
/// serialized size: the common 4 characters per token rule, for lack of anything better.
pub(crate) const OPAQUE_CHARS_PER_TOKEN: f64 = 4.0;

/// The `type` of a provider-hosted tool definition (`{"type":"web_search"}`,
/// `{"type":"code_execution_20260120","name":"code_execution"}`): small objects whose type is
/// not `function`/`custom`. Function definitions (large, or typed `function`) return None.
fn hosted_tool_type(json: &str) -> Option<&str> {
    // Hosted tool definitions are a few fields; a long definition is a function schema.
    if json.len() > 1024 {
        return None;
    }
    // Only a top-level type names a hosted tool: a schema's `"type":"object"` sits deeper, and
    // so does the `"type":"auto"` of a code interpreter's `container`, which sorted keys put
    // first (pydantic-ai's recorded `code_interpreter` tools were priced as definitions).
    let depth_at = |at: usize| {
        json[..at].bytes().fold(0i64, |d, b| match b {
            b'{' => d + 1,
            b'}' => d - 1,
            _ => d,
        })
    };
    let at = json
        .match_indices("\"type\":\"")
        .map(|(i, _)| i + 8)
        .find(|&at| depth_at(at) == 1)?;
    let end = at + json[at..].find('"')?;
    let ty = &json[at..end];
    (!matches!(ty, "function" | "custom" | "object")).then_some(ty)
}

/// Whether the JSON object `json` sets its own `key` (not a nested one) to `true`.
fn top_level_true(json: &str, key: &str) -> bool {
    json.contains(&format!("\"{key}\":true"))
        && serde_json::from_str::<serde_json::Value>(json)
            .is_ok_and(|v| v.get(key) == Some(&serde_json::Value::Bool(true)))
}

/// Hidden tokens of a provider-hosted tool: its server-side prompt, and for search and fetch
/// tools the results the server inserts (unknowable offline: a median prior). Fitted: the
/// median of `usage - estimate without it` over every recorded request carrying that tool in
/// shared/data (n in brackets; `tools/fit_family_overheads.py` prints them); None for tools with
/// fewer than 2 recordings (priced as a definition).
pub(crate) fn hosted_tool_tokens(family: Family, ty: &str) -> Option<f64> {
    let starts = |p: &str| ty.starts_with(p);
    // OpenRouter's own search tool runs the same way whatever model it serves: its prior holds
    // for every family (the OpenAI and Anthropic arms below do not know the type).
    if starts("openrouter:") && ty.ends_with("web_search") {
        return Some(2_290.0); // [4] openrouter:web_search
    }
    match family {
        Family::OpenAI => Some(match () {
            _ if starts("web_search") => 9_300.0, // [12] openai + azure Responses
            _ if starts("code_interpreter") => 2_850.0, // [6]
            _ if starts("image_generation") => 1_775.0, // [9]
            _ if starts("file_search") => 1_150.0, // [2]
            _ if starts("mcp") => 1_160.0,        // [5] the listed tools of the MCP server included
            _ => return None,
        }),
        Family::Anthropic => Some(match () {
            _ if starts("web_search") => 14_000.0, // [14] search results included
            _ if starts("web_fetch") => 4_250.0,   // [2] fetched page included
            _ if starts("code_execution") => 4_990.0, // [16]
            _ if starts("tool_search_tool") => 140.0, // [26] beside function tools
            // [3] with replay's streamed twin; labelled by the first iteration's prompt (the
            // request as sent, `usage.iterations[0]`): the top-level input_tokens sum every
            // executor iteration of the advisor loop (fitted on them: 1,750).
            _ if starts("advisor") => 1_110.0,
            _ => return None,
        }),
        _ if ty.ends_with("web_search") => Some(2_290.0), // [4] as openrouter:web_search
        _ => None,
    }
}

/// The weights pricing a family's text from its sampled shape, and the density they are scaled
/// by: Gemini's own weights (its vocabulary prices digits, punctuation and whitespace unlike
/// o200k, so no one scale of o200k fits both its prose and its code: `TextWeights::GEMINI`),
/// else o200k's times the profile's density. `Profile::text_scale` still prices what is counted
/// in o200k tokens (text tokenized by `with_encoding`, ids, opaque parts). Measured and not
/// kept for `with_encoding` (Session `text_encoding="o200k_base"` on the SWE trajectories,
/// `tools/session_accuracy.py`): the o200k count times the Gemini/o200k ratio of the whole
/// text's shape took the first calls from 8.9% to 2.5% off but the later calls' p99 from 3.3% to
/// 4.3% (aligned `ls -la` listings priced ~20% over); `whole` weights on the whole text instead
/// of BPE, 3.3% and 3.6%.
fn text_weights_of(
    family: Family,
    encoding: Option<Encoding>,
    profile: &Profile,
) -> (&'static TextWeights, f64) {
    match (family, encoding) {
        (Family::Gemini | Family::Gemma, _) => (&TextWeights::GEMINI, 1.0),
        // OpenAI's cl100k models: that vocabulary's own per-script weights.
        (Family::OpenAI, Some(Encoding::Cl100kBase)) => (&TextWeights::CL100K, profile.text_scale),
        _ => (&TextWeights::O200K, profile.text_scale),
    }
}

/// What the request overhead pays for, in fractional tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OverheadParts {
    /// Reply priming and the request's fixed cost.
    pub priming: f64,
    /// The envelope of a top-level system prompt.
    pub system_envelope: f64,
    /// The text of a top-level system prompt.
    pub system_text: f64,
    /// Tool definitions and the hidden tool-use prompt, and a structured-output schema.
    pub tool_schemas: f64,
}

impl OverheadParts {
    /// The whole overhead, in the order the estimator has always added it.
    pub fn sum(&self) -> f64 {
        self.priming + (self.system_envelope + self.system_text) + self.tool_schemas
    }
}

/// Prices messages for one provider and model.
#[derive(Debug, Clone, Copy)]
pub struct Estimator {
    provider: Provider,
    /// The token family pricing text, envelopes and overheads (the model's, else the
    /// provider's default).
    family: Family,
    /// The model's public tokenizer, when it has one: prices the tool block exactly.
    model_encoding: Option<Encoding>,
    /// gpt-5 reasoning models add their own tool preamble.
    gpt5: bool,
    /// gpt-4o (not gpt-4o-mini): a strict Responses function tool adds its hidden prompt.
    gpt4o_strict_prompt: bool,
    /// Tokens a serving stack adds to every request beyond the profile (gpt-oss's harmony
    /// system message).
    hidden_request: f64,
    profile: Profile,
    /// The weights of the sampled text estimate, and the density they are multiplied by.
    text_weights: &'static TextWeights,
    sampled_text_scale: f64,
    image_rule: ImageRule,
    /// The media resolution of images that set none (`RequestExtras::media_resolution`).
    media_resolution: Detail,
    /// Tokenize text with this encoding instead of the sampled shape estimate (opt-in, used by
    /// sessions that price only a few new messages per turn and can afford BPE).
    encoding: Option<Encoding>,
    /// A Gemini 3 name that does not say its serving platform: the first thought signature of
    /// the history settles it (`settle_platform`).
    platform_open: bool,
    /// A Claude model whose Messages API drops the thinking of earlier turns from its input
    /// (`drops_earlier_thinking`).
    drops_earlier_thinking: bool,
}

impl Estimator {
    /// The estimator of a history in `provider`'s wire format sent to `model` (may be empty):
    /// the model's token family prices text, images and overheads; an unknown model is priced
    /// by the provider's default family.
    pub fn new(provider: Provider, model: &str) -> Self {
        Self::for_model(provider, &model_info(model))
    }

    /// The estimator of an already resolved model.
    pub fn for_model(provider: Provider, info: &ModelInfo) -> Self {
        let family = match info.family {
            Family::Unknown => provider.default_family(),
            f => f,
        };
        let base = info.base.as_str();
        let profile = profile_for(family, info);
        let (text_weights, sampled_text_scale) = text_weights_of(family, info.encoding, &profile);
        Estimator {
            provider,
            family,
            // An OpenAI model whose name says no encoding (no model, or a name tiktoken does not
            // know yet) is read as o200k, the encoding of every OpenAI chat model since gpt-4o,
            // as its text already is (`text_weights_of`): its tool block and system prompt are
            // priced by that exact rendering. The constants of `profile::OPENAI` priced the
            // tool blocks of ../shared/data a median 40% over it (71 distinct tool lists of the
            // OpenAI chat requests; the 14 tau-bench airline tools 1,591 against 1,375).
            model_encoding: if family == Family::OpenAI {
                Some(info.encoding.unwrap_or(Encoding::O200kBase))
            } else {
                None
            },
            gpt5: base.starts_with("gpt-5") && !base.starts_with("gpt-5-chat"),
            gpt4o_strict_prompt: base.starts_with("gpt-4o") && !base.starts_with("gpt-4o-mini"),
            // Harmony models (gpt-oss) get a system message from the server ("You are ChatGPT,
            // ... Knowledge cutoff ... Reasoning: medium ... # Valid channels", the format of
            // https://cookbook.openai.com/articles/openai-harmony): fitted +62 on the 10 plain
            // gpt-oss requests of shared/data (groq, cerebras, bedrock, ollama).
            hidden_request: if info.encoding == Some(Encoding::O200kHarmony) {
                62.0
            } else {
                0.0
            },
            profile,
            text_weights,
            sampled_text_scale,
            image_rule: rule_for(family.pricing_provider(), base),
            media_resolution: Detail::Auto,
            encoding: None,
            platform_open: info.family == Family::Gemini
                && info.platform.is_none()
                && is_gemini_3(base),
            drops_earlier_thinking: family == Family::Anthropic && drops_earlier_thinking(base),
        }
    }

    /// Settle the serving platform of a Gemini 3 model named without one from the thought
    /// signatures of `ms`, the next messages of the history in order; true when this switched
    /// the estimator to Vertex AI's pricing (`profile::on_vertex_ai`). Callers settle each batch
    /// of messages before pricing it; a no-op for any other model, and once settled.
    ///
    /// The signatures' shape says who issued them (`ThoughtSignatures`): field 2 is the Gemini
    /// API (the profile already prices it), field 1 on a Gemini 3 model is Vertex AI. Gemini 3
    /// puts a signature on the first function call of every model turn, so the messages priced
    /// before the first one carry no call and no result, and cost the same on both platforms:
    /// only the overhead (function declarations) must be priced after settling.
    pub fn settle_platform(&mut self, ms: &[Message<'_>]) -> bool {
        if !self.platform_open {
            return false;
        }
        let Some(s) = ms
            .iter()
            .map(|m| m.thought_signatures)
            .find(|s| s.field2_chars + s.field1_chars > 0)
        else {
            return false;
        };
        if s.field2_chars > 0 {
            self.platform_open = false;
            return false;
        }
        *self = self.settled_on_vertex_ai().unwrap_or(*self);
        true
    }

    /// This estimator settled on Vertex AI's pricing, when its serving platform is still open
    /// (a restored session whose saved overhead says it had settled so).
    pub fn settled_on_vertex_ai(mut self) -> Option<Self> {
        if !self.platform_open {
            return None;
        }
        self.platform_open = false;
        self.profile = on_vertex_ai(self.profile);
        Some(self)
    }

    /// The image formula of the model.
    pub fn image_rule(&self) -> ImageRule {
        self.image_rule
    }

    /// The token family this estimator prices with.
    pub fn family(&self) -> Family {
        self.family
    }

    /// The public tokenizers this estimator counts with exactly (an OpenAI model's system
    /// prompt and tool block; text, where `with_encoding` asked for it), each once.
    pub fn exact_encodings(&self) -> Vec<Encoding> {
        let mut out: Vec<Encoding> = self.model_encoding.into_iter().collect();
        if let Some(e) = self.encoding.filter(|e| !out.contains(e)) {
            out.push(e);
        }
        out
    }

    /// This estimator with text tokenized by `encoding` (scaled by the provider's tokenizer
    /// density), envelopes and images priced as before. BPE costs ~30 ns per byte, the sampled
    /// estimate a bounded amount per string: for callers that price few messages at a time.
    pub fn with_encoding(mut self, encoding: Option<Encoding>) -> Self {
        self.encoding = encoding;
        self
    }

    /// The provider this estimator imitates.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// Tokens of a text in this provider's tokenizer (fractional).
    pub fn text(&self, s: &str) -> f64 {
        match self.encoding {
            Some(e) => self.profile.text_scale * e.count(s) as f64,
            None => match own_summary_split(s) {
                // (An empty `rest` prices 0: `text_tokens` of an empty text.)
                Some((summary, rest)) => self.whole_text(summary) + self.sampled_text(rest),
                None => self.sampled_text(s),
            },
        }
    }

    fn sampled_text(&self, s: &str) -> f64 {
        if !matches!(self.family, Family::Gemini | Family::Gemma) && s.len() <= LONG_TEXT {
            // A text of up to 1 KiB is read whole rather than by its 128-byte head: a record's
            // head is its keys and its tail the figures (prices, dates), denser in tokens.
            // Against gpt-4o's exact counts of the 149 tau-bench airline dialogues, their tool
            // results (JSON records of 300-1,000 bytes) were priced a median 10.7% under by the
            // head, 5.0% read whole; the recorded requests' median error (the bodies,
            // `tools/accuracy_report.py --body`) went 2.5% -> 2.3% in all, OpenAI's 2.6% ->
            // 1.6%, crewai's 2.5% -> 1.4%, Anthropic's and Bedrock's the same (7.6%, 14.3%).
            // Gemini's own weights keep the head they were fitted on (read whole, Vertex AI's
            // requests went +5% -> +14%).
            return self.sampled_text_scale * text_tokens_whole(s.as_bytes(), self.text_weights);
        }
        self.sampled_text_scale * text_tokens(s.as_bytes(), self.text_weights)
    }

    /// Tokens of the text of a summary contextfold writes, as a history prices it once it is
    /// wrapped in its markers (`own_summary_split`): read whole, not sampled. The digest sizes
    /// its text by this, so the summary it writes for a room prices the same in the history.
    pub fn summary_text(&self, s: &str) -> f64 {
        match self.encoding {
            Some(e) => self.profile.text_scale * e.count(s) as f64,
            None => self.whole_text(s),
        }
    }

    /// A text read whole (see `own_summary_split`): above `WHOLE_SUMMARY_MAX` bytes, sampled.
    fn whole_text(&self, s: &str) -> f64 {
        if s.len() > WHOLE_SUMMARY_MAX {
            return self.sampled_text(s);
        }
        self.sampled_text_scale * text_tokens_whole(s.as_bytes(), self.text_weights)
    }

    /// Tokens of a system prompt's text: OpenAI models count it exactly, cached by content (it
    /// is as static over a conversation as the tools); other families read it whole instead of
    /// sampling it (the tau-bench airline policy opens with a date and a time: its 128-byte head
    /// extrapolated over 6,155 characters of prose put it 33% over).
    fn system_text(&self, s: &str) -> f64 {
        match (self.model_encoding, self.encoding) {
            (Some(enc), None) => self.profile.text_scale * f64::from(openai_system_tokens(s, enc)),
            (_, Some(_)) => self.text(s),
            (None, None) => {
                self.sampled_text_scale * text_tokens_whole(s.as_bytes(), self.text_weights)
            }
        }
    }

    /// The same estimator pricing an image that sets no resolution of its own at `detail` (a
    /// Gemini request's `generationConfig.mediaResolution`).
    pub fn with_media_resolution(mut self, detail: Detail) -> Self {
        self.media_resolution = detail;
        self
    }

    /// Tokens of one image part.
    pub fn image(&self, img: &Image<'_>) -> u32 {
        let dims = match img.source {
            ImageSource::Base64(s) => dims_of_base64(s),
            ImageSource::Bytes(b) => dims_of_bytes(b),
            ImageSource::Url(_) | ImageSource::File(_) => None,
        };
        let detail = match img.detail {
            Detail::Auto => self.media_resolution,
            d => d,
        };
        image_tokens(self.image_rule, dims, detail)
    }

    /// Tokens of a call id: random alphanumerics that BPE splits almost per pair of characters
    /// (`call_2IDxBAleIuZyViB5UVOapbQA`: 17 o200k tokens for 29 characters).
    fn id(&self, id: &str) -> f64 {
        self.profile.id_scale * self.profile.text_scale * id.len() as f64 * BASE64_TOKENS_PER_BYTE
    }

    pub(crate) fn tool_call(&self, c: &ToolCall<'_>) -> f64 {
        // The whole call as the family bills it: name, arguments and the syntax around them,
        // and the id where the model sees it (`Profile::per_tool_call`, `id_scale`,
        // `arguments_scale`): never the arguments alone (an agent that priced only the arguments
        // under-counted short parallel calls 10-15x).
        self.profile.per_tool_call
            + self.id(c.id)
            + self.text(c.name)
            + self.profile.arguments_scale * self.text(&c.arguments)
    }

    pub(crate) fn part(&self, p: &Part<'_>) -> f64 {
        match p {
            Part::Text(t) => self.text(t),
            Part::Image(img) => self.image(img) as f64,
            Part::ToolUse(c) => self.tool_call(c),
            Part::ToolResult {
                tool_use_id,
                content,
                ..
            } => {
                self.profile.per_tool_result
                    + self.id(tool_use_id)
                    + content.iter().map(|p| self.part(p)).sum::<f64>()
            }
            Part::Thinking { text, signature } => {
                self.text(text) + self.profile.encrypted_per_byte * signature.len() as f64
            }
            Part::EncryptedReasoning(data) => self.profile.encrypted_per_byte * data.len() as f64,
            Part::Opaque {
                media,
                payload_chars,
                wire_chars,
                units,
                ..
            } => {
                if *media == MediaKind::Image {
                    // An image by reference (Gemini `fileData`, a file id): the default size.
                    return image_tokens(self.image_rule, None, self.media_resolution) as f64;
                }
                // Base64 carries 3 bytes per 4 characters.
                let decoded = payload_chars.map(|c| c / 4 * 3);
                media_tokens(self.family.pricing_provider(), *media, decoded, *units)
                    .unwrap_or_else(|| {
                        self.profile.text_scale * *wire_chars as f64 / OPAQUE_CHARS_PER_TOKEN
                    })
            }
        }
    }

    /// Tokens of one message, envelope included (fractional).
    pub fn message_f64(&self, m: &Message<'_>) -> f64 {
        let p = &self.profile;
        let mut t = p.per_message;
        if let Some(name) = m.name {
            t += p.per_name + self.text(name);
        }
        let system = matches!(m.role, Role::System | Role::Developer);
        t += match &m.content {
            Content::None => 0.0,
            Content::Text(s) if system => self.system_text(s),
            Content::Text(s) => self.text(s),
            Content::Parts(parts) if system => parts
                .iter()
                .map(|x| match x {
                    Part::Text(s) => self.system_text(s),
                    _ => self.part(x),
                })
                .sum(),
            Content::Parts(parts) => {
                let dropped = self.thinking_dropped(m, parts);
                parts
                    .iter()
                    .filter(|x| !(dropped && x.is_thinking()))
                    .map(|x| self.part(x))
                    .sum()
            }
        };
        for c in &m.tool_calls {
            t += self.tool_call(c);
        }
        if m.tool_calls.len() > 1 {
            t += p.per_parallel_call * m.tool_calls.len() as f64;
        }
        // (A legacy `function` result's id is its `name`, priced above as the name it is.)
        if let Some(id) = m
            .tool_call_id
            .filter(|_| m.item != Some(crate::wire::openai_chat::LEGACY_FUNCTION_RESULT))
        {
            t += p.per_tool_result + self.id(id);
        }
        if let Some(r) = &m.reasoning {
            t += self.text(r);
        }
        t + self.signatures(&m.thought_signatures)
    }

    /// Whether the thinking of assistant message `m` (its content `parts`) is dropped from the
    /// input as sent (`drops_earlier_thinking`): an Anthropic Messages turn that calls no tool
    /// ended in its reply, so anything after it opens a new turn and its thinking is an earlier
    /// turn's. A turn that calls a tool may still be the last one (its results and the model's
    /// next step follow it, the thinking kept): priced as sent. Bedrock's Converse API bills
    /// the reasoning of earlier turns (its 4 recorded Claude requests carrying some are within
    /// 11 tokens with it priced, 13-43 under without), so only the Messages format drops it.
    pub(crate) fn thinking_dropped(&self, m: &Message<'_>, parts: &[Part<'_>]) -> bool {
        self.drops_earlier_thinking
            && m.role == Role::Assistant
            && m.wire == Format::Anthropic
            && m.tool_calls.is_empty()
            && !parts.iter().any(|p| matches!(p, Part::ToolUse(_)))
    }

    /// Tokens of the Gemini thought signatures a message sends back: those of the Gemini API's
    /// shape, unless the platform is Vertex AI (see `ThoughtSignatures`).
    pub(crate) fn signatures(&self, s: &ThoughtSignatures) -> f64 {
        self.profile.signature_per_char * s.field2_chars as f64
    }

    /// Tokens of one message, rounded to a whole token.
    pub fn message(&self, m: &Message<'_>) -> u32 {
        self.message_f64(m).round() as u32
    }

    /// Tokens of every message, in order.
    pub fn each(&self, ms: &[Message<'_>]) -> Vec<u32> {
        ms.iter().map(|m| self.message(m)).collect()
    }

    /// The one overhead function: tokens a request costs beyond its messages (reply priming,
    /// a top-level system prompt, tool definitions and the hidden tool-use prompt).
    pub fn overhead(&self, extras: &RequestExtras<'_>) -> u32 {
        self.overhead_parts(extras).sum().round() as u32
    }

    /// The overhead split into what it pays for (fractional tokens); `overhead` is its rounded sum.
    pub fn overhead_parts(&self, extras: &RequestExtras<'_>) -> OverheadParts {
        let p = &self.profile;
        let mut o = OverheadParts {
            priming: p.per_request + self.hidden_request,
            ..OverheadParts::default()
        };
        if let Some(s) = &extras.system {
            o.system_envelope = p.per_message;
            o.system_text = self.system_text(s);
        }
        if !extras.tools.is_empty() {
            o.tool_schemas = self.tools(&extras.tools);
        }
        if let Some(rf) = &extras.response_format {
            o.tool_schemas += self.response_format(rf, !extras.tools.is_empty());
        }
        o
    }

    /// Tokens a structured-output schema adds. OpenAI models: what `count` bills for it
    /// (`exact::Counter::structured_output`: the rendered text and its root title, appended
    /// after a blank line to the tool block, else to the system message and 4 more), with the
    /// seam priced as one token: the overhead is priced without the messages, so the system
    /// text's ending (and `count`'s 4 per earlier assistant reply) is not known here. Gemini:
    /// nothing. Other families: the schema priced as their tool definitions are.
    fn response_format(&self, rf: &ResponseFormat<'_>, with_tools: bool) -> f64 {
        if let Some(enc) = self.model_encoding {
            let n =
                openai_response_format_tokens(&rf.name, rf.description.as_deref(), &rf.schema, enc);
            if let Some(n) = n {
                return f64::from(n) + if with_tools { 1.0 } else { 5.0 };
            }
        }
        // Gemini does not bill its `responseJsonSchema` as prompt tokens: the 5 recorded plain
        // Gemini requests with one (../shared/data/pydantic-ai, gemini-2.0 / 2.5 flash, schemas
        // of 350-690 JSON characters) cost 11-23 tokens, within 4 of their text alone.
        if matches!(self.family, Family::Gemini | Family::Gemma) {
            return 0.0;
        }
        let p = &self.profile;
        p.per_tool_def + p.tool_schema_scale * self.text(&rf.schema)
    }

    /// Tokens of the tool definitions and the hidden tool-use prompt.
    fn tools(&self, tools: &[ToolDef<'_>]) -> f64 {
        let mut functions: Vec<&ToolDef<'_>> = Vec::with_capacity(tools.len());
        let mut hosted = 0.0;
        let mut client = 0.0;
        for t in tools {
            let ty = hosted_tool_type(&t.json);
            if let Some(n) = ty.and_then(|ty| hosted_tool_tokens(self.family, ty)) {
                hosted += n;
            } else if let Some(n) = ty.and_then(|ty| client_tool_tokens(self.family, ty)) {
                client += n;
            } else {
                functions.push(t);
            }
        }
        if functions.is_empty() {
            // Client tools alone: their documented cost and the documented tool-use prompt.
            return if client > 0.0 {
                hosted + client + ANTHROPIC_TOOL_USE_PROMPT
            } else {
                hosted
            };
        }
        let hosted = hosted + client;
        // OpenAI models: the exact rendering `count` bills (tool_render), cached by content.
        if let Some(enc) = self.model_encoding {
            let jsons = functions.iter().map(|t| t.json.as_ref());
            if let Some(n) = openai_tool_block_tokens(jsons, enc) {
                // Measured on the cassettes (exact.rs): gpt-5 models add their own tool
                // preamble (+83) to chat.completions tools (`{"type":"function","function":
                // {...}}`), not to the Responses API's flat definitions (the 20 gpt-5 / gpt-5-mini
                // Responses requests with function tools were 83 over with it); elsewhere the
                // block opens a system message (+3).
                let chat_shape = functions.iter().any(|t| t.json.contains("\"function\":{"));
                let extra = if self.gpt5 && chat_shape { 83.0 } else { 3.0 };
                // gpt-4o bills a hidden prompt for a strict function tool of the Responses API,
                // as `count` does (`exact::GPT4O_STRICT_RESPONSES`): without it, the 3 recorded
                // requests with one were estimated 60-77% under.
                let strict = if self.gpt4o_strict_prompt
                    && functions.iter().any(|t| {
                        !t.json.contains("\"function\":{") && top_level_true(&t.json, "strict")
                    }) {
                    crate::exact::GPT4O_STRICT_RESPONSES as f64
                } else {
                    0.0
                };
                return hosted + f64::from(n) + extra + strict;
            }
        }
        let p = &self.profile;
        hosted
            + p.tools_base
            + functions
                .iter()
                .map(|tool| p.per_tool_def + p.tool_schema_scale * self.text(&tool.json))
                .sum::<f64>()
    }

    /// Each tool definition's own cost (fractional tokens), in order: what it would add alone
    /// (OpenAI models: its exact rendering; hosted tools: their fitted hidden prompt; Anthropic's
    /// client tools: their documented cost). A
    /// breakdown shares the tool block's cost out in these proportions (`by_tool`).
    pub fn tool_costs(&self, tools: &[ToolDef<'_>]) -> Vec<f64> {
        let p = &self.profile;
        tools
            .iter()
            .map(|t| {
                let ty = hosted_tool_type(&t.json);
                if let Some(n) = ty.and_then(|ty| {
                    hosted_tool_tokens(self.family, ty)
                        .or_else(|| client_tool_tokens(self.family, ty))
                }) {
                    return n;
                }
                if let Some(enc) = self.model_encoding {
                    if let Some(n) = openai_tool_block_tokens(std::iter::once(t.json.as_ref()), enc)
                    {
                        return f64::from(n);
                    }
                }
                p.per_tool_def + p.tool_schema_scale * self.text(&t.json)
            })
            .collect()
    }

    /// Tokens of a whole request: every message plus the overhead. Equals
    /// `each(ms).sum() + overhead(extras)`.
    pub fn total(&self, ms: &[Message<'_>], extras: &RequestExtras<'_>) -> u64 {
        self.messages_total(ms) + u64::from(self.overhead(extras))
    }

    /// Tokens of the messages alone (each rounded as `message` rounds it), without the request
    /// overhead: `total` is this plus `overhead`, so a history priced chunk by chunk sums to it.
    pub fn messages_total(&self, ms: &[Message<'_>]) -> u64 {
        ms.iter().map(|m| u64::from(self.message(m))).sum()
    }
}

/// A summary this long or shorter is read whole (~1 ns per byte); a longer one is sampled, as any
/// text: the 10,000-message synthetic history's summary fills a room of 1.25M tokens, and the
/// Compactor prices its history several times.
const WHOLE_SUMMARY_MAX: usize = 256 * 1024;

/// A text that opens with a summary contextfold wrote, as (the summary with its markers, the
/// text after it, possibly empty). The summary is read whole rather than sampled: a text over
/// `SAMPLE_BYTES` is priced from a sample (its 128-byte head, and windows at fixed shares of
/// its length over `LONG_TEXT`: `text_stats::shape_of`), and a summary is as uneven as texts
/// come (headings, requests, call lines, an index of ids), so two digests of the same room
/// priced 10% apart either way and the Compactor, aiming a digest at the room its history
/// left, missed it (a SWE run's compaction stood at 87.6% of its budget after two tries).
/// Over 317 digests of the successive compactions of the shared data (every sixth
/// conversation), against o200k counts: sampled, median error -4.5%, p90 13.0%; read whole,
/// -2.6% and 6.3%. A summary stays in the history
/// for every later turn, like a system prompt, so a sample's bias would repeat on each call.
/// A summary put at the start of a long message is split off from it too, and the host prices
/// as it did before the merge (its sampled head and windows stay where they were: a
/// 26,000-character thought priced 6,023 tokens alone and 6,457 with a 15-token summary merged
/// into it). Text that only opens like a summary, unclosed, is one text.
fn own_summary_split(s: &str) -> Option<(&str, &str)> {
    if s.len() <= SAMPLE_BYTES || !s.starts_with(SUMMARY_OPEN) {
        return None;
    }
    static CLOSE: FixedNeedle = FixedNeedle::new(SUMMARY_CLOSE);
    let end = CLOSE.find(s)? + SUMMARY_CLOSE.len();
    Some((&s[..end], s[end..].trim_start_matches('\n')))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Detail;
    use crate::text_stats::LONG_TEXT;
    use std::borrow::Cow;

    #[test]
    fn an_openai_model_counts_exactly_with_its_own_encoding_and_other_families_with_none() {
        use Encoding::{Cl100kBase, O200kBase, O200kHarmony};
        let of = |p, m| Estimator::new(p, m).exact_encodings();
        assert_eq!(of(Provider::OpenAI, "gpt-4o"), [O200kBase]);
        assert_eq!(of(Provider::OpenAI, "gpt-4"), [Cl100kBase]);
        assert_eq!(of(Provider::OpenAI, "gpt-oss-120b"), [O200kHarmony]);
        // No model, or a name tiktoken does not know: read as o200k (see `for_model`).
        assert_eq!(of(Provider::OpenAI, ""), [O200kBase]);
        assert_eq!(of(Provider::Anthropic, "claude-sonnet-4-5"), []);
        assert_eq!(of(Provider::Gemini, "gemini-2.5-pro"), []);
        let both = Estimator::new(Provider::OpenAI, "gpt-4o").with_encoding(Some(Cl100kBase));
        assert_eq!(both.exact_encodings(), [O200kBase, Cl100kBase]);
        let once = Estimator::new(Provider::OpenAI, "gpt-4o").with_encoding(Some(O200kBase));
        assert_eq!(once.exact_encodings(), [O200kBase]);
    }

    fn call<'a>(id: &'a str, name: &'a str, args: &'a str) -> ToolCall<'a> {
        ToolCall {
            id,
            name,
            arguments: Cow::Borrowed(args),
        }
    }

    /// A Messages turn that ended in its reply is an earlier turn once anything follows it: its
    /// thinking costs nothing on a model whose API drops it, and its full price on one that
    /// keeps it. A turn that calls a tool keeps its thinking's price (its results follow it in
    /// the same turn), and Bedrock's Converse messages keep it whatever the model.
    #[test]
    fn an_earlier_turns_thinking_is_free_where_the_messages_api_drops_it() {
        let thought = "Let me weigh the fare rules against the dates first. ".repeat(20);
        let turn = |thinking: bool, tool: bool, wire: Format| {
            let mut parts = Vec::new();
            if thinking {
                parts.push(Part::Thinking {
                    text: Cow::Borrowed(thought.as_str()),
                    signature: "c2lnbmF0dXJl",
                });
            }
            parts.push(Part::Text(Cow::Borrowed("The fare is $180.")));
            if tool {
                parts.push(Part::ToolUse(call("t1", "book", "{\"fare\":180}")));
            }
            Message {
                content: Content::Parts(parts),
                wire,
                ..Message::text("assistant", "")
            }
        };
        let drops = Estimator::new(Provider::Anthropic, "claude-sonnet-4-5");
        let keeps = Estimator::new(Provider::Anthropic, "claude-opus-4-5");
        let a = Format::Anthropic;
        let reply = turn(true, false, a);
        let bare = turn(false, false, a);
        assert_eq!(drops.message(&reply), drops.message(&bare));
        assert!(keeps.message(&reply) > keeps.message(&bare) + 100);
        let calling = turn(true, true, a);
        assert!(drops.message(&calling) > drops.message(&turn(false, true, a)) + 100);
        let converse = turn(true, false, Format::Bedrock);
        assert!(
            drops.message(&converse) > drops.message(&turn(false, false, Format::Bedrock)) + 100
        );
    }

    /// A summary merged at the start of a long message prices as the summary and the message
    /// apart: the host's sampled head and windows stay where they were.
    #[test]
    fn a_summary_merged_into_a_long_message_does_not_reprice_the_message() {
        let e = Estimator::new(Provider::OpenAI, "gpt-4o");
        let thought: String = (0..400)
            .map(|k| format!("    relation_parts[{k}] = lookup.split(LOOKUP_SEP)  # x{k}\n"))
            .collect();
        let summary = format!(
            "{SUMMARY_OPEN}\nEarlier conversation folded by contextfold (18 messages).\n## User requests\n- Fix the lookup.\n{SUMMARY_CLOSE}"
        );
        let merged = format!("{summary}\n\n{thought}");
        let apart = e.text(&summary) + e.text(&thought);
        assert!(
            (e.text(&merged) - apart).abs() < 1.0,
            "{} vs {apart}",
            e.text(&merged)
        );
        // Text that only looks like it at its start, unclosed, is one text.
        let unclosed = format!("{SUMMARY_OPEN}\n{thought}");
        assert_eq!(own_summary_split(&unclosed), None);
    }

    /// A long summary is read whole: the same lines in another order price the same (a sample
    /// reads the head and three windows, so moving the index of ids to the front moves it), and
    /// a text that opens like one without closing is sampled like any text.
    #[test]
    fn a_long_summary_is_read_whole_whatever_the_order_of_its_lines() {
        let e = Estimator::new(Provider::OpenAI, "gpt-4o");
        let prose: Vec<String> = (0..40)
            .map(|k| {
                format!("- The user asked to rebook flight {k} on a later date and keep the seat.")
            })
            .collect();
        let ids: Vec<String> = (0..40)
            .map(|k| {
                format!("- 9f{k:02}a7c3e1b2d4f60718293a4b5c6d7e8f{k:02} /srv/app/mod_{k}.py:{k}")
            })
            .collect();
        let body = |first: &[String], then: &[String]| {
            format!(
                "{SUMMARY_OPEN}\n{}\n{}\n{SUMMARY_CLOSE}",
                first.join("\n"),
                then.join("\n")
            )
        };
        let (a, b) = (body(&prose, &ids), body(&ids, &prose));
        assert!(a.len() > 4 * LONG_TEXT);
        assert!(
            (e.text(&a) - e.text(&b)).abs() < 1.0,
            "{} vs {}",
            e.text(&a),
            e.text(&b)
        );
        let sampled = |s: &str| e.sampled_text(s);
        assert!(
            (sampled(&a) - sampled(&b)).abs() > 10.0,
            "the sample did not move"
        );
        let unclosed = &a[..a.len() - SUMMARY_CLOSE.len() - 1];
        assert_eq!(e.text(unclosed), e.sampled_text(unclosed));
    }

    #[test]
    fn tool_call_envelope_counts_more_than_its_arguments() {
        let e = Estimator::new(Provider::OpenAI, "gpt-4o");
        let mut m = Message::empty("assistant");
        for i in 0..4 {
            let _ = i;
            m.tool_calls.push(call(
                "call_Xk3Jz9QpLm2Rt7Vw",
                "get_weather",
                "{\"city\":\"Paris\"}",
            ));
        }
        let args_only: f64 = 4.0 * e.text("{\"city\":\"Paris\"}");
        assert!(e.message(&m) as f64 > 3.0 * args_only);
    }

    #[test]
    fn gemini_signatures_read_their_shape_and_settle_the_platform() {
        let json = |sig: &str| {
            serde_json::json!([
                {"role": "user", "parts": [{"text": "read a.txt"}]},
                {"role": "model", "parts": [
                    {"functionCall": {"name": "read", "args": {"p": "a.txt"}}, "thoughtSignature": sig}
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "read", "response": {"output": "hello"}}}
                ]},
            ])
        };
        let api_sig = format!("E{}", "a".repeat(999));
        let vertex_sig = format!("C{}", "a".repeat(999));
        let (a, v) = (json(&api_sig), json(&vertex_sig));
        let api = crate::wire::read_history(&&a).unwrap();
        let vertex = crate::wire::read_history(&&v).unwrap();
        assert_eq!(api[1].thought_signatures.field2_chars, 1000);
        assert_eq!(vertex[1].thought_signatures.field1_chars, 1000);
        assert!(api[0].thought_signatures.is_empty());

        let bare = Estimator::new(Provider::Gemini, "gemini-3-pro-preview");
        // The Gemini API shape is billed, and settles nothing away from the Gemini API.
        let mut e = bare;
        assert!(!e.settle_platform(&api));
        assert!((e.message_f64(&api[1]) - e.message_f64(&vertex[1]) - 197.0).abs() < 1e-9);
        // Vertex's shape switches a bare Gemini 3 name to Vertex pricing, once.
        let mut e = bare;
        assert!(e.settle_platform(&vertex));
        assert!(!e.settle_platform(&vertex));
        let named = Estimator::new(Provider::Gemini, "vertex_ai/gemini-3-pro-preview");
        assert_eq!(e.each(&vertex), named.each(&vertex));
        assert!(e.message(&vertex[2]) < bare.message(&vertex[2]));
        // Names that already say their platform, and Gemini 2.x, never switch.
        for m in [
            "gemini/gemini-3-pro-preview",
            "vertex_ai/gemini-3-pro-preview",
            "gemini-2.5-pro",
        ] {
            let mut e = Estimator::new(Provider::Gemini, m);
            assert!(!e.settle_platform(&vertex), "{m}");
        }
    }

    #[test]
    fn image_costs_its_formula_not_its_base64_length() {
        let e = Estimator::new(Provider::OpenAI, "gpt-4o");
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend(1024u32.to_be_bytes());
        png.extend(1024u32.to_be_bytes());
        png.extend(std::iter::repeat_n(7u8, 3_000_000));
        let mut m = Message::empty("user");
        m.content = Content::Parts(vec![Part::Image(Image {
            source: ImageSource::Bytes(&png),
            detail: Detail::High,
        })]);
        assert_eq!(e.message(&m), 765 + 4);
    }

    #[test]
    fn a_record_of_up_to_a_kib_is_read_whole() {
        // A tau-bench reservation as its tool returns it: keys and codes first, figures (dates,
        // prices, birth dates) after. Its 128-byte head extrapolated priced it ~20% under.
        let record = r#"{"reservation_id": "HXDUBJ", "user_id": "yara_garcia_1905", "origin": "IAH", "destination": "SFO", "flight_type": "round_trip", "cabin": "economy", "flights": [{"origin": "IAH", "destination": "SFO", "flight_number": "HAT072", "date": "2024-05-18", "price": 154}, {"origin": "SFO", "destination": "IAH", "flight_number": "HAT278", "date": "2024-05-20", "price": 121}], "passengers": [{"first_name": "Yara", "last_name": "Garcia", "dob": "1980-04-11"}, {"first_name": "Noah", "last_name": "Ito", "dob": "1966-09-02"}], "payment_history": [{"payment_id": "credit_card_3040471", "amount": 610}], "created_at": "2024-05-03T17:19:51", "total_baggages": 2, "nonfree_baggages": 0, "insurance": "yes"}"#;
        assert!(record.len() > 128 && record.len() <= LONG_TEXT);
        let exact = Encoding::O200kBase.count(record) as f64;
        let by_head = text_tokens(record.as_bytes(), &TextWeights::O200K);
        for model in ["gpt-4o", ""] {
            let est = Estimator::new(Provider::OpenAI, model).text(record);
            assert!(
                (est / exact - 1.0).abs() < 0.1 && (by_head / exact - 1.0).abs() > 0.15,
                "{model:?}: {est} (the head: {by_head}) for {exact}"
            );
        }
        // Gemini's weights, fitted on the head sample, keep it.
        let gemini = Estimator::new(Provider::Gemini, "gemini-2.5-flash");
        assert_eq!(
            gemini.text(record),
            gemini.sampled_text_scale * text_tokens(record.as_bytes(), &TextWeights::GEMINI)
        );
    }

    #[test]
    fn with_encoding_tokenizes_text_scaled_by_the_profile() {
        let text = "The quick brown fox jumps over the lazy dog.";
        let exact = Encoding::O200kBase.count(text) as f64;
        let e = Estimator::new(Provider::Gemini, "").with_encoding(Some(Encoding::O200kBase));
        assert_eq!(
            e.text(text),
            crate::profile::profile(Family::Gemini).text_scale * exact
        );
        let m = Message::text("user", text);
        let sampled = Estimator::new(Provider::Gemini, "");
        assert_eq!(
            e.message_f64(&m) - e.text(text),
            sampled.message_f64(&m) - sampled.text(text)
        );
    }

    #[test]
    fn the_gemini_family_prices_text_by_its_own_weights_whatever_the_wire_format() {
        let s = "THOUGHT: list the files.\n\n```bash\nls -la src/ | head -n 40\n```";
        for (provider, model) in [
            (Provider::OpenAI, "google/gemini-3-pro-preview"),
            (Provider::Gemini, ""),
            (Provider::OpenAICompatible, "gemma-3-27b-it"),
        ] {
            let e = Estimator::new(provider, model);
            assert_eq!(
                e.text(s),
                text_tokens(s.as_bytes(), &TextWeights::GEMINI),
                "{model}"
            );
        }
        // Other families: o200k's weights times their density.
        let a = Estimator::new(Provider::Anthropic, "claude-sonnet-4-5");
        let scale = crate::profile::profile(Family::Anthropic).text_scale;
        assert_eq!(
            a.text(s),
            scale * text_tokens(s.as_bytes(), &TextWeights::O200K)
        );
    }

    #[test]
    fn hosted_tools_are_told_from_function_schemas() {
        assert_eq!(
            hosted_tool_type("{\"type\":\"web_search\"}"),
            Some("web_search")
        );
        assert_eq!(
            hosted_tool_type("{\"name\":\"code_execution\",\"type\":\"code_execution_20260120\"}"),
            Some("code_execution_20260120")
        );
        let f = "{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\"}}}";
        assert_eq!(hosted_tool_type(f), None);
        let a = "{\"name\":\"f\",\"input_schema\":{\"type\":\"object\"}}";
        assert_eq!(hosted_tool_type(a), None);
        // Not JSON: never a panic.
        assert_eq!(hosted_tool_type("}}}\"type\":\"x\""), None);
        let e = Estimator::new(Provider::OpenAI, "gpt-5");
        let web = RequestExtras {
            system: None,
            tools: vec![ToolDef {
                name: Cow::Borrowed("web_search"),
                json: Cow::Borrowed("{\"type\":\"web_search\"}"),
            }],
            response_format: None,
            ..Default::default()
        };
        assert!(e.overhead(&web) > 5_000);
    }

    #[test]
    fn total_is_each_plus_overhead() {
        let e = Estimator::new(Provider::Anthropic, "");
        let ms = vec![
            Message::text("user", "hello there, how are you?"),
            Message::text("assistant", "fine"),
        ];
        let extras = RequestExtras {
            system: Some(Cow::Borrowed("be brief")),
            tools: vec![ToolDef {
                name: Cow::Borrowed("f"),
                json: Cow::Borrowed("{\"name\":\"f\",\"input_schema\":{\"type\":\"object\"}}"),
            }],
            response_format: None,
            ..Default::default()
        };
        let each: u64 = e.each(&ms).iter().map(|&x| u64::from(x)).sum();
        assert_eq!(e.total(&ms, &extras), each + u64::from(e.overhead(&extras)));
        assert!(e.overhead(&extras) > e.overhead(&RequestExtras::default()));
    }
}
