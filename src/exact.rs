//! Exact prompt-token counts for OpenAI models, with the tokenizers OpenAI publishes.
//!
//! tiktoken-rs embeds the vocabularies, so this works offline. Each is read back once per
//! process from an encoder built for it (0.13-0.25 s for o200k; the encoder is then dropped)
//! and shared read-only by every thread; the counting splits text without a regex
//! (`pretokenize`, `bpe_count`).
//!
//! What a chat.completions request is billed (derived on the recorded cassettes,
//! `tools/derive_openai_rendering.py`, which is the Python reference of this module):
//! - per message 3 tokens + role + content (+ name + 1), + 3 for reply priming: the OpenAI
//!   cookbook "How to count tokens with tiktoken" (verified there against the API);
//!   gpt-3.5-turbo-0301: 4 per message, -1 per name;
//! - reasoning models (o3, o4, gpt-5) bill 1 token less per request (every recording);
//! - tool-call ids are not billed; a call is `" to=functions.NAME"` + its arguments re-serialized
//!   as compact JSON + a per-call constant of the model generation (`Counter::per_call`), and its
//!   result is authored by `functions.NAME` instead of `tool`; several calls in one message are
//!   one call to `multi_tool_use.parallel` and their results one message of the JSON list of
//!   outputs, less a fitted constant (`Counter::count_each`);
//! - tool definitions and `response_format` schemas: `tool_render`; the tool block is appended
//!   to the first system message (`Counter::tool_block`), the schema after it
//!   (`Counter::structured_output`);
//! - images: the provider formulas of `image_tokens` from the pixel size in the header.

use crate::encoding::base_model;
pub use crate::encoding::{encoding_for, Encoding, UnknownModel};
use crate::image::{dims_of_base64, dims_of_bytes};
use crate::image_tokens::{image_tokens, rule_for, ImageRule};
use crate::json_string::push_json_string;
use crate::message::{Content, ImageSource, Message, Part, Role, ToolCall};
use crate::model_info::Family;
use crate::provider::Provider;
use crate::tool_render::{
    parse_json, render_response_format, render_tools, response_format_title, title_tokens,
    tools_without_property_comments, Json,
};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

/// Most tokens one opaque part is estimated at in an exact count: beyond any context window (a
/// payload of a terabyte, say), and far from the counts' 32-bit limit.
const OPAQUE_MAX_TOKENS: f64 = (1u32 << 24) as f64;

/// Tokens a batch of parallel tool calls costs beyond its `multi_tool_use.parallel` call and the
/// one message of its outputs, on the gpt-4o / gpt-4.1 generation: `PARALLEL_BATCH_BASE +
/// PARALLEL_PER_CALL x calls`. Fitted on the 18 recorded batches of these models
/// (../shared/data/{crewai,pydantic-ai}) once tools without property comments were billed 1 less
/// (`tool_render::tools_without_property_comments`): every batch of 2 calls (14) was 5 under and
/// every batch of 3 (4) 1 under with the single constant -9 fitted before; -4 for 2 calls and -8
/// for 3 make all 18 exact.
const PARALLEL_BATCH_BASE: i32 = 4;
const PARALLEL_PER_CALL: i32 = -4;

/// The same constant on reasoning models (gpt-5, o-series): -9 a batch, the earlier fit over
/// every recorded batch; the gpt-5-nano batches of 3 calls (4 requests of one test) stay 7 under.
const PARALLEL_BATCH_REASONING: i32 = -9;

/// How one model is billed.
#[derive(Debug, Clone, Copy)]
pub struct Counter {
    pub encoding: Encoding,
    /// o-series and gpt-5: one token less per request, more per tool call.
    reasoning: bool,
    gpt5: bool,
    /// Tokens each single tool call costs beyond its header and arguments (see `Counter::new`).
    per_call: u32,
    /// gpt-3.5-turbo-0301: 4 per message, -1 per name (cookbook).
    legacy_0301: bool,
    image_rule: ImageRule,
    /// The request is written for the Responses API (`Counter::for_responses`).
    responses: bool,
    /// gpt-4o (not gpt-4o-mini): its strict function tools cost more on the Responses API.
    model_is_gpt4o: bool,
    /// The gpt-4o / gpt-4.1 chat template (chatgpt-4o, gpt-4.5, gpt-5-chat alike): the models
    /// the Responses rules were fitted on beside gpt-5 (`Counter::for_responses`).
    gpt4o_generation: bool,
}

/// Tokens gpt-4o adds on the Responses API when a function tool is `strict`: the 3 recorded
/// requests with one (pydantic-ai's output-tool tests, 0-2 calls in their history) were 216,
/// 216 and 229 over the non-strict rendering (2 of 3 exact with it); strict tools on gpt-4.1
/// (1 request) and gpt-5 models (10) cost nothing more, nor do gpt-4o's strict tools on
/// chat.completions.
pub(crate) const GPT4O_STRICT_RESPONSES: i64 = 216;

impl Counter {
    /// The rules of `model`; an unknown model is an error.
    pub fn new(model: &str) -> Result<Counter, UnknownModel> {
        let encoding = encoding_for(model)?;
        let m = base_model(model);
        let gpt5 = m.starts_with("gpt-5") && !m.starts_with("gpt-5-chat");
        let reasoning = gpt5 || m.starts_with("o3") || m.starts_with("o4");
        // The call's end-of-call marker and framing, per model generation (residuals of the
        // recorded requests with single calls, arguments compacted, ../shared/data/{crewai,
        // pydantic-ai}):
        // - gpt-4o / gpt-4.1 (and chatgpt-4o, gpt-4.5, gpt-5-chat, same template): 2. Exact on
        //   25 of 27 gpt-4.1-mini and 15 of 19 gpt-4o-mini requests with calls (1 left them 1
        //   token under per call: 2 and 7 exact); on gpt-4o it moves 8 requests from +1 to 0;
        // - gpt-5 models: 7 (every recording with a call); o-series: 3 (the two o3-mini
        //   requests with a call, both exact; o4 has no recording with calls, assumed like o3);
        // - gpt-4 / gpt-3.5: 1, the cookbook-era value (4 recorded requests with calls, too few
        //   and too spread, +0 / +3 / +3 / +6, to fit another).
        let gpt4o_generation = !gpt5
            && !reasoning
            && ["gpt-4o", "gpt-4.1", "gpt-4.5", "chatgpt-4o", "gpt-5-chat"]
                .iter()
                .any(|p| m.starts_with(p));
        let per_call = if gpt5 {
            7
        } else if reasoning {
            3
        } else if gpt4o_generation {
            2
        } else {
            1
        };
        Ok(Counter {
            encoding,
            reasoning,
            gpt5,
            per_call,
            legacy_0301: m.starts_with("gpt-3.5-turbo-0301"),
            image_rule: rule_for(Provider::OpenAI, m),
            responses: false,
            model_is_gpt4o: m.starts_with("gpt-4o") && !m.starts_with("gpt-4o-mini"),
            gpt4o_generation,
        })
    }

    /// These rules for a request written for the Responses API, which bills tool definitions
    /// and calls unlike chat.completions (`Counter::responses_tool_block`; derived on the
    /// recorded Responses requests with usage, ../shared/data/{crewai,pydantic-ai},
    /// `tools/derive_responses_rendering.py`, which prints how many requests back each rule):
    /// - a function call in the history costs 2 less than in chat on the gpt-4o / gpt-4.1
    ///   generation: the 8 recorded gpt-4o requests with calls and no reasoning item (9 calls)
    ///   were each 2 per call over with chat's constant, all 8 exact with it. gpt-5 and
    ///   o-series calls keep chat's constant: one gpt-5 request alone is countable with a call
    ///   (5 over chat's constant), too few to fit a rule on; the other 38 gpt-5 ones with calls
    ///   also send encrypted reasoning or `tool_search` / `additional_tools` items no tokenizer
    ///   counts, and the o-series has none;
    /// - hosted tools (`web_search`, `code_interpreter`, `mcp`, ...) are priced by the
    ///   estimator's fitted constants (`estimate::hosted_tool_tokens`): their prompt and
    ///   results are inserted by the server, no tokenizer sees them.
    pub fn for_responses(mut self) -> Counter {
        self.responses = true;
        if self.gpt4o_generation {
            self.per_call -= 2;
        }
        self
    }

    fn text(&self, s: &str) -> u32 {
        self.encoding.count(s) as u32
    }

    /// The image formula of the model.
    pub fn image_rule(&self) -> ImageRule {
        self.image_rule
    }

    fn image(&self, source: &ImageSource<'_>, detail: crate::message::Detail) -> u32 {
        let dims = match source {
            ImageSource::Base64(b) => dims_of_base64(b),
            ImageSource::Bytes(b) => dims_of_bytes(b),
            ImageSource::Url(_) | ImageSource::File(_) => None,
        };
        image_tokens(self.image_rule, dims, detail)
    }

    fn part(&self, p: &Part<'_>) -> u32 {
        match p {
            Part::Text(t) => self.text(t),
            Part::Image(img) => self.image(&img.source, img.detail),
            // Other providers' blocks, should a history carry them: their text.
            Part::ToolUse(c) => self.text(c.name) + self.text(&c.arguments),
            Part::ToolResult { content, .. } => content.iter().map(|p| self.part(p)).sum(),
            Part::Thinking { text, .. } => self.text(text),
            // Encrypted reasoning is not prompt text.
            Part::EncryptedReasoning(_) => 0,
            // Audio, files and hosted-tool items are billed by meters no tokenizer reproduces:
            // estimated as the estimator prices them (by the second, the page, their JSON),
            // where they counted nothing: 60 s of audio and a 30-page PDF counted 7 tokens, and
            // `Compactor(exact=True)` kept a history 37x over its budget.
            Part::Opaque {
                media,
                payload_chars,
                wire_chars,
                units,
                ..
            } => crate::media_tokens::media_tokens(
                Provider::OpenAI,
                *media,
                payload_chars.map(|c| c / 4 * 3),
                *units,
            )
            .unwrap_or(*wire_chars as f64 / crate::estimate::OPAQUE_CHARS_PER_TOKEN)
            .ceil()
            .min(OPAQUE_MAX_TOKENS) as u32,
        }
    }

    fn calls(&self, calls: &[ToolCall<'_>]) -> u32 {
        match calls {
            [] => 0,
            [c] => {
                self.text(&format!(" to=functions.{}", c.name))
                    + self.text(&billed_arguments(&c.arguments))
                    + self.per_call
            }
            // Parallel calls: one call to the `multi_tool_use.parallel` wrapper, its JSON in
            // Python's default spacing with each call's arguments as sent, plus the batch
            // constant (`parallel_batch`).
            _ => {
                let mut s = String::from("{\"tool_uses\": [");
                for (i, c) in calls.iter().enumerate() {
                    if i > 0 {
                        s.push_str(", ");
                    }
                    s.push_str("{\"recipient_name\": \"functions.");
                    s.push_str(c.name);
                    s.push_str("\", \"parameters\": ");
                    let args = billed_arguments(&c.arguments);
                    s.push_str(if args.trim().is_empty() { "{}" } else { &args });
                    s.push('}');
                }
                s.push_str("]}");
                (self.text(" to=multi_tool_use.parallel") + self.text(&s))
                    .saturating_add_signed(self.parallel_batch(calls.len()))
            }
        }
    }

    /// Tokens a batch of `calls` parallel calls costs beyond its wrapper call and outputs.
    fn parallel_batch(&self, calls: usize) -> i32 {
        if self.reasoning {
            return PARALLEL_BATCH_REASONING;
        }
        let calls = i32::try_from(calls).unwrap_or(i32::MAX);
        PARALLEL_BATCH_BASE.saturating_add(PARALLEL_PER_CALL.saturating_mul(calls))
    }

    /// Tokens of one message, envelope included; `calls` maps tool-call ids to their function
    /// and batch (the latest call with its id before `m`).
    fn message(&self, m: &Message<'_>, calls: &HashMap<&str, CallInfo<'_>>, batch: Batched) -> u32 {
        match batch {
            Batched::No => {}
            Batched::Opens => {
                return 3 + self.text("multi_tool_use.parallel") + self.batch_output(m, "[", "]")
            }
            // `", "` merges into one token where `,` + ` "` were counted apart.
            Batched::Continues => return self.batch_output(m, ", ", "").saturating_sub(1),
        }
        let mut n = if self.legacy_0301 { 4 } else { 3 };
        // (A legacy `function` result renders as its role and name: it answers no tool call.)
        if m.role == Role::Tool
            && m.tool_call_id.is_some()
            && m.item != Some(crate::wire::openai_chat::LEGACY_FUNCTION_RESULT)
        {
            let name = m
                .tool_call_id
                .and_then(|id| calls.get(id).map(|c| c.name))
                .or(m.name)
                .unwrap_or("");
            n += self.text(&format!("functions.{name}"));
        } else {
            n += self.text(m.role_str);
            if let Some(name) = m.name {
                n += self.text(name);
                if self.legacy_0301 {
                    n -= 1;
                } else {
                    n += 1;
                }
            }
        }
        n = n.saturating_add(match &m.content {
            Content::None => 0,
            Content::Text(t) => self.text(t),
            Content::Parts(ps) => ps.iter().fold(0u32, |a, p| a.saturating_add(self.part(p))),
        });
        if let Some(r) = &m.reasoning {
            n += self.text(r);
        }
        n + self.calls(&m.tool_calls)
    }

    /// Tokens of one result inside its batch's JSON list of outputs: `before`, the result's
    /// text as a JSON string, `after`; its non-text parts (images) by their own formulas.
    fn batch_output(&self, m: &Message<'_>, before: &str, after: &str) -> u32 {
        let mut s = String::from(before);
        let mut media = 0;
        match &m.content {
            Content::None => push_json_string(&mut s, ""),
            Content::Text(t) => push_json_string(&mut s, t),
            Content::Parts(ps) => {
                let mut text = String::new();
                for p in ps {
                    match p {
                        Part::Text(t) => text.push_str(t),
                        _ => media += self.part(p),
                    }
                }
                push_json_string(&mut s, &text);
            }
        }
        s.push_str(after);
        self.text(&s) + media
    }

    /// Tokens of each message, envelope included (the reply priming is not in any of them).
    ///
    /// The results of a batch of parallel calls are billed as one message from
    /// `multi_tool_use.parallel` whose content is the JSON list of the outputs: the first result
    /// carries the envelope and `[OUTPUT]`, each later one `, OUTPUT` less the token `", "`
    /// merges into. That equals the list's own count on every recorded batch (it can differ by
    /// a token where BPE merges across two outputs) and keeps a message's count unchanged when
    /// later messages are appended.
    ///
    /// A long history is spread over the machine's cores (`spread`): each message's count
    /// depends only on the call index and its batch position, both settled first.
    pub fn count_each(&self, messages: &[Message<'_>]) -> Vec<u32> {
        // Each result answers the latest call with its id made before it (ids repeat in real
        // histories: tau-bench's reuse one call id 4 messages later).
        let mut calls: HashMap<&str, CallInfo<'_>> = HashMap::new();
        let mut opened = HashSet::new();
        let plan: Vec<(Option<CallInfo<'_>>, Batched)> = messages
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let batch = (m.tool_calls.len() > 1).then_some(i);
                for c in &m.tool_calls {
                    calls.insert(
                        c.id,
                        CallInfo {
                            name: c.name,
                            batch,
                        },
                    );
                }
                let info = m.tool_call_id.and_then(|id| calls.get(id)).copied();
                let batched = match (m.role, info) {
                    (Role::Tool, Some(CallInfo { batch: Some(b), .. })) if opened.insert(b) => {
                        Batched::Opens
                    }
                    (Role::Tool, Some(CallInfo { batch: Some(_), .. })) => Batched::Continues,
                    _ => Batched::No,
                };
                (info, batched)
            })
            .collect();
        spread(messages, |from, to| {
            messages[from..to]
                .iter()
                .zip(&plan[from..to])
                .map(|(m, (info, batched))| {
                    let mut view = HashMap::new();
                    if let (Some(id), Some(info)) = (m.tool_call_id, info) {
                        view.insert(id, *info);
                    }
                    self.message(m, &view, *batched)
                })
                .collect()
        })
    }

    /// Tokens of everything around the messages: reply priming, tool definitions, the
    /// structured-output schema and the per-model constants.
    pub fn overhead(
        &self,
        messages: &[Message<'_>],
        tools: &[Json],
        response_format: Option<&Json>,
    ) -> u64 {
        let system = system_text(messages);
        self.overhead_with(
            system.as_deref(),
            text_replies(messages),
            tools,
            response_format,
        )
    }

    /// `overhead` from what it reads of the messages: the first system message's text and the
    /// number of earlier assistant replies with text (`text_replies`).
    pub fn overhead_with(
        &self,
        system: Option<&str>,
        replies: usize,
        tools: &[Json],
        response_format: Option<&Json>,
    ) -> u64 {
        let mut n: i64 = 3;
        if self.reasoning {
            n -= 1;
        }
        let hosted_split;
        let tools = if self.responses {
            let (functions, hosted) = responses_tools(tools);
            n += hosted;
            hosted_split = functions;
            &hosted_split[..]
        } else {
            tools
        };
        let tool_text = (!tools.is_empty()).then(|| render_tools(tools));
        if let Some(block) = &tool_text {
            n += if self.responses {
                self.responses_tool_block(system, tools, block)
            } else {
                self.tool_block(system, tools, block)
            };
        }
        if let Some(rf) = response_format {
            if let Some(text) = render_response_format(rf) {
                n += self.structured_output(
                    system,
                    replies as i64,
                    &text,
                    response_format_title(rf),
                    tool_text.as_deref(),
                );
            }
        }
        n.max(0) as u64
    }

    /// Tokens a json_schema `response_format` adds, its schema rendered as `text` (root title
    /// `title`), after the rendered tool block `tools` when the request has tools.
    ///
    /// Derived on the 79 recorded requests with one (../shared/data/{crewai,pydantic-ai}, 19
    /// schemas, all exact; `tools/derive_response_format.py` prints the table):
    /// - the block is appended after a blank line to the tool block when there is one (9
    ///   requests, 6 schemas), else to the first system message, + 4 (70 requests, 15
    ///   schemas): BPE merges across the seam as with the tool block. Priced alone, the
    ///   requests of one schema whose system texts end differently were 1 token apart. Without
    ///   a system message or tools (no recording) it is assumed to open a system message of its
    ///   own, which costs 3 more than joining one, as the tool block does;
    /// - the schema's root title, not in the text, costs twice its tokens + 1 (17 schemas with
    ///   titles of 1 to 6 tokens, all exact, and 2 without one; kept in the JSON instead, the 5
    ///   whose titles are not 2 tokens long miss by 1-4; the rendering it comes from cannot be
    ///   told from the counts);
    /// - 4 more for each earlier assistant reply with text content (2 requests, gpt-4o and
    ///   gpt-4o-mini, 2 schemas: both 4 under without it). Both replies are JSON answers to the
    ///   schema, as a constrained-format reply would be rendered; whether a plain-text reply
    ///   costs the same the data cannot tell.
    fn structured_output(
        &self,
        system: Option<&str>,
        replies: i64,
        text: &str,
        title: Option<&str>,
        tools: Option<&str>,
    ) -> i64 {
        let block = match (tools, system) {
            (Some(tools), _) => self.appended(tools, text),
            (None, Some(system)) => self.appended(system, text) + 4,
            // The Responses API bills a lone `text.format` without that envelope: the 2
            // recorded requests with one and neither instructions nor tools (gpt-4o-mini,
            // gpt-5.4-mini, two test suites) were 7 and 8 over with it, 0 and 1 over without.
            (None, None) if self.responses => self.text(text) as i64 + 1,
            (None, None) => self.text(text) as i64 + 1 + 4 + 3,
        };
        let title = title.map_or(0, |t| title_tokens(self.text(t) as usize) as i64);
        block + title + 4 * replies
    }

    /// Tokens `block` adds appended to `text` after a blank line: `T(text + "\n\n" + block) -
    /// T(text)`, from the tail of `text` that decides the seam (`seam_tail`).
    fn appended(&self, text: &str, block: &str) -> i64 {
        let tail = seam_tail(text);
        self.text(&format!("{tail}\n\n{block}")) as i64 - self.text(tail) as i64
    }

    /// Tokens the rendered tool block `block` adds to a request with these messages.
    ///
    /// Without a system message the block opens one of its own (+3, its envelope). Otherwise it
    /// is appended to the first system message after a blank line, so BPE merges across the
    /// seam: the block costs `T(system + "\n\n" + block) - T(system) - 1`. Fitted on the 125
    /// recorded requests with tools and a system message (../shared/data/{crewai,
    /// pydantic-ai}): priced alone, the block left them +1 / -1 depending on how the system
    /// text ends (42 exact); appended, 51 exact before the per-call and argument rules, 80
    /// after. gpt-5 models add their own tool preamble instead of the envelope and the -1: +84
    /// wherever the block goes (the 12 recorded gpt-5 requests with tools and no calls, 6 of
    /// them with a system message, all exact; +83 priced alone left them 1-2 under).
    ///
    /// On the gpt-4o / gpt-4.1 generation each tool whose properties carry no comment is billed
    /// 1 less (`tool_render::tools_without_property_comments`).
    fn tool_block(&self, system: Option<&str>, tools: &[Json], block: &str) -> i64 {
        let (alone, seam) = if self.gpt5 { (84, 84) } else { (3, -1) };
        let bare = if self.reasoning {
            0
        } else {
            tools_without_property_comments(tools) as i64
        };
        let placed = match system {
            Some(system) => self.appended(system, block) + seam,
            None => self.text(block) as i64 + alone,
        };
        placed - bare
    }

    /// Tokens the rendered function block `block` adds to a Responses request. The same text as
    /// chat's, placed otherwise. Fitted on the 35 recorded Responses requests with function tools
    /// only and no reasoning items (`tools/derive_responses_rendering.py` prints each rule's
    /// support; chat's rules left the gpt-5 ones 80-84 over and the gpt-4o ones 6-8 over):
    /// - gpt-5 models bill it with 3 more tokens instead of their chat tool preamble (+84): 15
    ///   requests, 13 exact (one 2 over; the one with a call 5 over, see `for_responses`);
    ///   with instructions 2 more: 3 requests, 2 exact (a gpt-5.2 one 14 over);
    /// - on gpt-5 models each tool without properties 1 less: 8 requests, all exact;
    /// - the gpt-4o / gpt-4.1 generation 3 fewer: 16 requests (14 gpt-4o, 2 gpt-4.1), 15 exact;
    /// - on both, each tool without a commented property 1 less: 15 requests, 12 exact;
    /// - gpt-4o's strict tools `GPT4O_STRICT_RESPONSES`.
    ///
    /// Other models (o-series, gpt-4, gpt-3.5) have no such recording: chat's rule.
    fn responses_tool_block(&self, system: Option<&str>, tools: &[Json], block: &str) -> i64 {
        let uncommented = tools_without_property_comments(tools) as i64;
        let base = if self.gpt5 {
            let empty = tools
                .iter()
                .filter(|t| {
                    let f = t.get("function").unwrap_or(t);
                    f.get("parameters").map_or(&[][..], Json::props).is_empty()
                })
                .count() as i64;
            let placed = if system.is_some() { 2 } else { 3 };
            placed - empty
        } else if !self.gpt4o_generation {
            // The o-series and older models have no recorded Responses request with function
            // tools: chat's rule.
            return self.tool_block(system, tools, block);
        } else if self.strict_preamble(tools) {
            -3 + GPT4O_STRICT_RESPONSES
        } else {
            -3
        };
        self.text(block) as i64 + base - uncommented
    }

    /// Whether gpt-4o bills its hidden prompt for strict function tools (Responses only).
    fn strict_preamble(&self, tools: &[Json]) -> bool {
        self.responses
            && self.model_is_gpt4o
            && tools
                .iter()
                .any(|t| matches!(t.get("strict"), Some(Json::Bool(true))))
    }

    /// Prompt tokens of a whole chat.completions request.
    pub fn count(
        &self,
        messages: &[Message<'_>],
        tools: &[Json],
        response_format: Option<&Json>,
    ) -> u64 {
        self.count_each(messages)
            .iter()
            .map(|&t| u64::from(t))
            .sum::<u64>()
            + self.overhead(messages, tools, response_format)
    }
}

/// A Responses request's tools split into the definitions rendered as functions (`function`,
/// `custom`, untyped) and the tokens of the hosted ones, priced as the estimator prices them
/// (rounded). Hosted tools the estimator has no constant for (`tool_search`, `namespace`) add
/// nothing here: their cost is not known.
fn responses_tools(tools: &[Json]) -> (Vec<Json>, i64) {
    let mut functions = Vec::with_capacity(tools.len());
    let mut hosted = 0.0;
    for t in tools {
        match t.get("type").and_then(Json::as_str) {
            None | Some("function" | "custom") => functions.push(t.clone()),
            Some(ty) => {
                hosted += crate::estimate::hosted_tool_tokens(Family::OpenAI, ty).unwrap_or(0.0);
            }
        }
    }
    (functions, hosted.round() as i64)
}

/// The arguments of a call as billed: re-serialized as compact JSON when they parse (key order
/// and values kept), as sent otherwise. Fitted on ../shared/data: arguments sent with spaces
/// (`{"a": 2, "b": 6}`) are billed as `{"a":2,"b":6}` (the o3-mini call sent spaced was 3
/// tokens over, exact compacted; 4 of the gpt-4.1-mini / gpt-4o-mini misses likewise).
fn billed_arguments<'a>(args: &'a str) -> Cow<'a, str> {
    match parse_json(args) {
        Some(v) => {
            let mut out = String::with_capacity(args.len());
            v.write_compact(&mut out);
            if out == args {
                Cow::Borrowed(args)
            } else {
                Cow::Owned(out)
            }
        }
        None => Cow::Borrowed(args),
    }
}

/// The end of `text` from which the tokens at its seam with appended text are decided: after the
/// last line break followed by an ASCII letter or digit in the last 2 KiB: tiktoken's
/// pre-tokenizer never lets a piece cross such a break (a piece may end in line breaks or
/// start with one non-letter, never a line break), and BPE merges only within a piece, so `T(tail + x) - T(tail) == T(text + x) - T(text)`; the whole text when
/// there is no such break (a short or single-line system message).
fn seam_tail(text: &str) -> &str {
    let from = text.len().saturating_sub(2048);
    let from = (from..=text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    let window = &text[from..];
    let bytes = window.as_bytes();
    let cut = (0..bytes.len().saturating_sub(1))
        .rev()
        .find(|&i| bytes[i] == b'\n' && bytes[i + 1].is_ascii_alphanumeric());
    match cut {
        Some(i) if from > 0 || i > 0 => &window[i + 1..],
        _ => text,
    }
}

/// Whether `m` is an assistant reply with text (what a structured output bills 4 more for).
fn is_text_reply(m: &Message<'_>) -> bool {
    m.role == Role::Assistant
        && m.tool_calls.is_empty()
        && match &m.content {
            Content::None => false,
            Content::Text(t) => !t.is_empty(),
            Content::Parts(ps) => !ps.is_empty(),
        }
}

/// The number of assistant replies with text among `messages`.
fn text_replies(messages: &[Message<'_>]) -> usize {
    messages.iter().filter(|m| is_text_reply(m)).count()
}

/// The text of the first system (or developer) message, which the tool block and the
/// structured-output schema join; `None` without one.
fn system_text<'m>(messages: &'m [Message<'_>]) -> Option<Cow<'m, str>> {
    let system = messages
        .iter()
        .find(|m| matches!(m.role, Role::System | Role::Developer))?;
    Some(match &system.content {
        Content::None => Cow::Borrowed(""),
        Content::Text(t) => Cow::Borrowed(t.as_ref()),
        Content::Parts(ps) => Cow::Owned(
            ps.iter()
                .filter_map(|p| match p {
                    Part::Text(t) => Some(t.as_ref()),
                    _ => None,
                })
                .collect(),
        ),
    })
}

/// Counts a session remembers by content before starting over (~24 bytes each).
const MEMO_CAP: usize = 1 << 20;

/// What counting appended messages needs to know of the earlier ones: the calls they made
/// (function name and parallel batch of each call id), the batches whose outputs message is
/// open, the first system text and the text replies (the overhead reads both). Owned: it
/// outlives the messages, so a session counts only what was appended since.
#[derive(Debug, Clone, Default)]
pub struct CountContext {
    calls: HashMap<String, (String, Option<usize>)>,
    opened: HashSet<usize>,
    seen: usize,
    system: Option<String>,
    replies: usize,
}

impl CountContext {
    /// Messages counted so far.
    pub fn len(&self) -> usize {
        self.seen
    }

    /// Whether nothing was counted yet.
    pub fn is_empty(&self) -> bool {
        self.seen == 0
    }
}

impl Counter {
    /// Tokens of `new`, the messages appended after those `ctx` has seen, exactly as
    /// `count_each` of the whole history would give them; `ctx` learns them.
    ///
    /// `memo` remembers counts by content (the message, its batch position and the function a
    /// result answers): a history rebuilt with the same messages (after a compaction, a
    /// restart) is recounted by hashing, not tokenizing. Bounded: cleared past `MEMO_CAP`.
    pub fn count_appended(
        &self,
        ctx: &mut CountContext,
        memo: &mut HashMap<u64, u32>,
        new: &[Message<'_>],
    ) -> Vec<u32> {
        // The call context is settled in order; the counts the memo lacks are then tokenized
        // spread over the cores (a first call on a long history is a whole count).
        let mut plan: Vec<Planned> = Vec::with_capacity(new.len());
        for m in new {
            let i = ctx.seen;
            let batch = (m.tool_calls.len() > 1).then_some(i);
            for c in &m.tool_calls {
                ctx.calls
                    .insert(c.id.to_string(), (c.name.to_string(), batch));
            }
            let info = m.tool_call_id.and_then(|id| ctx.calls.get(id)).cloned();
            let batched = match (m.role, &info) {
                (Role::Tool, Some((_, Some(b)))) if ctx.opened.insert(*b) => Batched::Opens,
                (Role::Tool, Some((_, Some(_)))) => Batched::Continues,
                _ => Batched::No,
            };
            let key = {
                let mut h = crate::ledger::StableHash::default();
                h.u64(crate::ledger::content_hash(m));
                h.u64(batched as u64);
                h.str(info.as_ref().map_or("", |(name, _)| name.as_str()));
                h.str(self.encoding.name());
                h.finish()
            };
            plan.push((info, batched, key));
            if ctx.system.is_none() && matches!(m.role, Role::System | Role::Developer) {
                ctx.system = system_text(std::slice::from_ref(m)).map(Cow::into_owned);
            }
            ctx.replies += usize::from(is_text_reply(m));
            ctx.seen += 1;
        }
        let known: &HashMap<u64, u32> = memo;
        let out = spread(new, |from, to| {
            (from..to)
                .map(|j| {
                    let (info, batched, key) = &plan[j];
                    if let Some(&n) = known.get(key) {
                        return n;
                    }
                    let m = &new[j];
                    let mut view: HashMap<&str, CallInfo<'_>> = HashMap::new();
                    if let (Some(id), Some((name, b))) = (m.tool_call_id, info) {
                        view.insert(id, CallInfo { name, batch: *b });
                    }
                    self.message(m, &view, *batched)
                })
                .collect()
        });
        for ((_, _, key), &n) in plan.iter().zip(&out) {
            if memo.len() >= MEMO_CAP {
                memo.clear();
            }
            memo.insert(*key, n);
        }
        out
    }

    /// `overhead` of the history `ctx` has seen.
    pub fn overhead_of(
        &self,
        ctx: &CountContext,
        tools: &[Json],
        response_format: Option<&Json>,
    ) -> u64 {
        self.overhead_with(ctx.system.as_deref(), ctx.replies, tools, response_format)
    }
}

/// One appended message's count context: the call its result answers (function, batch), its
/// place in a batch's outputs, and its memo key.
type Planned = (Option<(String, Option<usize>)>, Batched, u64);

/// Below this many bytes of text a history is counted on the calling thread: a thread costs
/// its start and an empty memory of merged pieces (`bpe_count`).
const SPREAD_FROM_BYTES: u64 = 1 << 20;

/// Counts in progress in this process.
static COUNTING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// One count in progress, and how many others were when it started.
struct Busy {
    others: usize,
}

impl Busy {
    fn enter() -> Busy {
        use std::sync::atomic::Ordering;
        Busy {
            others: COUNTING.fetch_add(1, Ordering::AcqRel),
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        COUNTING.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// `f(from, to)` over contiguous ranges of `messages` of about equal text, one per available
/// core, concatenated in order; one range on the calling thread when the history is small.
fn spread<F>(messages: &[Message<'_>], f: F) -> Vec<u32>
where
    F: Fn(usize, usize) -> Vec<u32> + Sync,
{
    let bytes: Vec<u64> = messages
        .iter()
        .map(|m| crate::ledger::payload_chars(m) + 16)
        .collect();
    let total: u64 = bytes.iter().sum();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Counts already running elsewhere (`count_many`, a caller's thread pool) have the cores:
    // threads of this one would only compete with them
    // (a pool of 2 callers on 2 cores measured 1.27x slower with every count spread).
    let _busy = Busy::enter();
    if cores < 2 || total < SPREAD_FROM_BYTES || _busy.others > 0 {
        return f(0, messages.len());
    }
    let share = total.div_ceil(cores as u64);
    let mut cuts = vec![0];
    let mut acc = 0;
    for (i, b) in bytes.iter().enumerate() {
        acc += b;
        if acc >= share * cuts.len() as u64 && cuts.len() < cores && i + 1 < messages.len() {
            cuts.push(i + 1);
        }
    }
    cuts.push(messages.len());
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = cuts
            .windows(2)
            .skip(1)
            .map(|w| {
                let (from, to) = (w[0], w[1]);
                scope.spawn(move || f(from, to))
            })
            .collect();
        let mut out = f(cuts[0], cuts[1]);
        for h in handles {
            // A panic in a counting thread is a bug; re-raise it where it is seen.
            out.extend(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        out
    })
}

/// How a tool result is billed: alone, or as part of its batch's one outputs message.
#[derive(Clone, Copy)]
#[repr(u8)]
enum Batched {
    No,
    Opens,
    Continues,
}

/// What a tool-call id refers to: the function called and, for a call made in a batch of
/// parallel calls, the batch (the index of the message that made it).
#[derive(Clone, Copy)]
struct CallInfo<'a> {
    name: &'a str,
    batch: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counting_appended_messages_equals_counting_the_whole_history() {
        let v = serde_json::json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "weather in Paris and Rome?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "w", "arguments": "{\"c\":\"Paris\"}"}},
                {"id": "b", "type": "function", "function": {"name": "w", "arguments": "{\"c\":\"Rome\"}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "sunny"},
            {"role": "tool", "tool_call_id": "b", "content": "rain"},
            {"role": "assistant", "content": "Sunny in Paris, rain in Rome."},
            {"role": "user", "content": "thanks"},
        ]);
        let ms = crate::wire::read_history(&&v).unwrap();
        let c = Counter::new("gpt-4o").unwrap();
        for cut in 0..=ms.len() {
            let mut ctx = CountContext::default();
            let mut memo = HashMap::new();
            let mut each = c.count_appended(&mut ctx, &mut memo, &ms[..cut]);
            each.extend(c.count_appended(&mut ctx, &mut memo, &ms[cut..]));
            assert_eq!(each, c.count_each(&ms), "cut at {cut}");
            assert_eq!(c.overhead_of(&ctx, &[], None), c.overhead(&ms, &[], None));
        }
    }

    #[test]
    fn spread_concatenates_its_ranges_in_order_whatever_the_cores() {
        let text = "x".repeat(4096);
        let ms: Vec<Message<'_>> = (0..600).map(|_| Message::text("user", &text)).collect();
        let out = spread(&ms, |a, b| (a..b).map(|i| i as u32).collect());
        assert_eq!(out, (0..600).collect::<Vec<u32>>());
        let small = &ms[..3];
        assert_eq!(spread(small, |a, b| vec![(b - a) as u32]), vec![3]);
    }

    #[test]
    fn a_spread_count_equals_the_sum_of_its_messages() {
        let c = Counter::new("gpt-4o").unwrap();
        let text = "The quick brown fox jumps over the lazy dog. ".repeat(200);
        let ms: Vec<Message<'_>> = (0..200).map(|_| Message::text("user", &text)).collect();
        let one = c.count_each(&ms[..1])[0];
        assert!(c.count_each(&ms).iter().all(|&n| n == one));
    }
    use std::borrow::Cow;

    #[test]
    fn model_names_map_like_tiktoken() {
        for (m, e) in [
            ("gpt-4o", Encoding::O200kBase),
            ("gpt-4o-mini-2024-07-18", Encoding::O200kBase),
            ("ft:gpt-4o-mini:org::abc", Encoding::O200kBase),
            ("openai/gpt-4.1", Encoding::O200kBase),
            ("o3-mini", Encoding::O200kBase),
            ("gpt-5-nano", Encoding::O200kBase),
            ("gpt-4", Encoding::Cl100kBase),
            ("gpt-4-0125-preview", Encoding::Cl100kBase),
            ("gpt-3.5-turbo", Encoding::Cl100kBase),
            ("gpt-oss-20b", Encoding::O200kHarmony),
        ] {
            assert_eq!(encoding_for(m), Ok(e), "{m}");
        }
        let err = encoding_for("claude-3-5-sonnet").unwrap_err();
        assert!(err.to_string().contains("encoding="));
    }

    #[test]
    fn special_token_text_is_ordinary_text() {
        let e = Encoding::O200kBase;
        assert_eq!(e.count(""), 0);
        assert_eq!(e.count("hello world"), 2);
        // tiktoken: encode_ordinary("<|endoftext|>") is 7 tokens in o200k_base.
        assert!(e.count("<|endoftext|>") > 1);
    }

    #[test]
    fn cookbook_example_counts() {
        // OpenAI cookbook "How to count tokens with tiktoken": 129 (gpt-4) / 124 (gpt-4o).
        let msgs = [
            ("system", None, "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."),
            ("system", Some("example_user"), "New synergies will help drive top-line growth."),
            ("system", Some("example_assistant"), "Things working well together will increase revenue."),
            ("system", Some("example_user"), "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."),
            ("system", Some("example_assistant"), "Let's talk later when we're less busy about how to do better."),
            ("user", None, "This late pivot means we don't have time to boil the ocean for the client deliverable."),
        ];
        let ms: Vec<Message<'_>> = msgs
            .iter()
            .map(|&(role, name, text)| {
                let mut m = Message::text(role, text);
                m.name = name;
                m
            })
            .collect();
        assert_eq!(Counter::new("gpt-4").unwrap().count(&ms, &[], None), 129);
        assert_eq!(Counter::new("gpt-4o").unwrap().count(&ms, &[], None), 124);
    }

    #[test]
    fn tool_results_are_authored_by_the_function() {
        let c = Counter::new("gpt-4o").unwrap();
        let mut a = Message::empty("assistant");
        a.tool_calls.push(ToolCall {
            id: "call_abcdefghijklmnop",
            name: "get_weather",
            arguments: Cow::Borrowed("{\"city\":\"Paris\"}"),
        });
        let mut t = Message::text("tool", "sunny");
        t.tool_call_id = Some("call_abcdefghijklmnop");
        let each = c.count_each(&[a, t]);
        let e = Encoding::O200kBase;
        assert_eq!(
            each[0] as usize,
            3 + e.count("assistant")
                + e.count(" to=functions.get_weather")
                + e.count("{\"city\":\"Paris\"}")
                + 2
        );
        assert_eq!(
            each[1] as usize,
            3 + e.count("functions.get_weather") + e.count("sunny")
        );
    }

    fn call(name: &'static str, args: &'static str) -> ToolCall<'static> {
        ToolCall {
            id: "call_1",
            name,
            arguments: Cow::Borrowed(args),
        }
    }

    #[test]
    fn parallel_calls_are_one_wrapper_call_and_one_outputs_message() {
        let c = Counter::new("gpt-4o").unwrap();
        let e = Encoding::O200kBase;
        let mut a = Message::empty("assistant");
        let mut first = call("delete_file", "{\"path\": \".env\"}");
        first.id = "call_a";
        let mut second = call("create_file", "{\"path\": \"test.txt\"}");
        second.id = "call_b";
        a.tool_calls.push(first);
        a.tool_calls.push(second);
        let mut r1 = Message::text("tool", "true");
        r1.tool_call_id = Some("call_a");
        let mut r2 = Message::text("tool", "Line one\n\"two\"");
        r2.tool_call_id = Some("call_b");
        let each = c.count_each(&[a, r1, r2]);
        // The wrapper in Python's default spacing; each call's arguments compacted.
        let wrapper = "{\"tool_uses\": [{\"recipient_name\": \"functions.delete_file\", \
                       \"parameters\": {\"path\":\".env\"}}, {\"recipient_name\": \
                       \"functions.create_file\", \"parameters\": {\"path\":\"test.txt\"}}]}";
        assert_eq!(
            each[0] as i64,
            (3 + e.count("assistant") + e.count(" to=multi_tool_use.parallel") + e.count(wrapper))
                as i64
                + i64::from(PARALLEL_BATCH_BASE + 2 * PARALLEL_PER_CALL)
        );
        // The outputs are one JSON list: newlines and quotes are billed escaped. Priced per
        // message the sum can differ from the list's own count by a token where BPE merges
        // across the boundary between two outputs.
        let list = "[\"true\", \"Line one\\n\\\"two\\\"\"]";
        let whole = 3 + e.count("multi_tool_use.parallel") + e.count(list);
        assert!(((each[1] + each[2]) as usize).abs_diff(whole) <= 1);
        // A result's count does not depend on the results after it.
        let mut r1 = Message::text("tool", "true");
        r1.tool_call_id = Some("call_a");
        let mut a = Message::empty("assistant");
        a.tool_calls.push(call("delete_file", "{}"));
        a.tool_calls.push(call("create_file", "{}"));
        a.tool_calls[0].id = "call_a";
        a.tool_calls[1].id = "call_b";
        assert_eq!(c.count_each(&[a, r1])[1], each[1]);
    }

    #[test]
    fn reasoning_models_bill_more_per_call() {
        let mut a = Message::empty("assistant");
        a.tool_calls.push(call("f", "{}"));
        let ms = [a];
        let each = |m: &str| Counter::new(m).unwrap().count_each(&ms)[0];
        assert_eq!(each("gpt-5") - each("gpt-4o"), 5);
        assert_eq!(each("o3-mini") - each("gpt-4o"), 1);
    }

    #[test]
    fn per_call_constant_by_model_generation() {
        for (model, per_call) in [
            ("gpt-4o", 2),
            ("gpt-4o-mini-2024-07-18", 2),
            ("gpt-4.1-mini", 2),
            ("chatgpt-4o-latest", 2),
            ("gpt-4", 1),
            ("gpt-4-0125-preview", 1),
            ("gpt-3.5-turbo", 1),
            ("o3-mini", 3),
            ("o4-mini", 3),
            ("gpt-5-nano", 7),
            ("gpt-5-chat-latest", 2),
        ] {
            assert_eq!(Counter::new(model).unwrap().per_call, per_call, "{model}");
        }
    }

    #[test]
    fn responses_calls_keep_chats_constant_where_no_recordings_fit_another() {
        // gpt-4o / gpt-4.1: 2 less per call (8 recorded requests); gpt-5 and o-series: chat's
        // constant (one gpt-5 recording is no rule; the o-series has none).
        for (model, shift) in [
            ("gpt-4o", -2),
            ("gpt-4.1-mini", -2),
            ("gpt-5", 0),
            ("gpt-5-mini", 0),
            ("o3-mini", 0),
            ("gpt-4", 0),
        ] {
            let chat = Counter::new(model).unwrap();
            let resp = Counter::new(model).unwrap().for_responses();
            assert_eq!(
                resp.per_call as i32 - chat.per_call as i32,
                shift,
                "{model}"
            );
        }
    }

    #[test]
    fn responses_tool_block_is_chats_on_models_without_recordings() {
        let tool = crate::tool_render::parse_json(
            r#"{"type":"function","name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string","description":"City"}},"required":["city"]}}"#,
        )
        .unwrap();
        let user = [Message::text("user", "weather in Paris?")];
        let added = |c: Counter| {
            c.count(&user, std::slice::from_ref(&tool), None) as i64
                - c.count(&user, &[], None) as i64
        };
        let block = Encoding::O200kBase.count(&render_tools(std::slice::from_ref(&tool))) as i64;
        assert_eq!(
            added(Counter::new("o3-mini").unwrap().for_responses()),
            block + 3
        );
        assert_eq!(
            added(Counter::new("gpt-4o").unwrap().for_responses()),
            block - 3
        );
        assert_eq!(
            added(Counter::new("gpt-5").unwrap().for_responses()),
            block + 3
        );
    }

    #[test]
    fn arguments_are_billed_as_compact_json() {
        for (sent, billed) in [
            ("{\"a\": 2, \"b\": 6}", "{\"a\":2,\"b\":6}"),
            ("{\"a\":2,\"b\":6}", "{\"a\":2,\"b\":6}"),
            // Key order, number text and non-ASCII are kept; nested values compacted too.
            (
                "{ \"z\": 1.50, \"a\": [1, {\"x\": \"é\"}] }",
                "{\"z\":1.50,\"a\":[1,{\"x\":\"é\"}]}",
            ),
            ("", ""),
            // Not JSON: billed as sent.
            ("{\"a\": 2", "{\"a\": 2"),
            ("not json", "not json"),
        ] {
            assert_eq!(billed_arguments(sent), billed, "{sent:?}");
        }
        assert!(matches!(billed_arguments("{\"a\":1}"), Cow::Borrowed(_)));
        // The spaced and compact forms of one call cost the same.
        let c = Counter::new("o3-mini").unwrap();
        let mut spaced = Message::empty("assistant");
        spaced
            .tool_calls
            .push(call("f", "{\"first_number\": 3, \"second_number\": 4}"));
        let mut tight = Message::empty("assistant");
        tight
            .tool_calls
            .push(call("f", "{\"first_number\":3,\"second_number\":4}"));
        assert_eq!(c.count_each(&[spaced]), c.count_each(&[tight]));
    }

    fn tools() -> Vec<Json> {
        vec![crate::tool_render::parse_json(
            r#"{"type":"function","function":{"name":"get_weather","description":"Get the weather","parameters":{"type":"object","properties":{"city":{"type":"string","description":"City name"}},"required":["city"]}}}"#,
        )
        .unwrap()]
    }

    #[test]
    fn the_tool_block_joins_the_first_system_message() {
        let e = Encoding::O200kBase;
        let block = render_tools(&tools());
        let c = Counter::new("gpt-4o").unwrap();
        let user = Message::text("user", "weather in Paris?");
        let base = |ms: &[Message<'_>]| c.count(ms, &[], None) as i64;
        let with = |ms: &[Message<'_>]| c.count(ms, &tools(), None) as i64;
        // No system message: the block opens one of its own (+3, its envelope).
        let ms = [user.clone()];
        assert_eq!(with(&ms) - base(&ms), e.count(&block) as i64 + 3);
        // Appended to the system text after a blank line: the seam merges ("task" + "\n\n"
        // and "python." + "\n\n" tokenize differently), less one.
        for system in [
            "Validate the output of the task",
            "Do not include code block markers like ```json or ```python.",
            "line one\nline two ends here.\n",
        ] {
            let ms = [Message::text("system", system), user.clone()];
            let want = e.count(&format!("{system}\n\n{block}")) as i64 - e.count(system) as i64 - 1;
            assert_eq!(with(&ms) - base(&ms), want, "{system:?}");
            // Only the first system message takes the block.
            let two = [
                Message::text("system", system),
                user.clone(),
                Message::text("developer", "other"),
            ];
            assert_eq!(with(&two) - base(&two), want, "{system:?}");
        }
        // gpt-5 models: their own preamble (+84), at the same seam.
        let c5 = Counter::new("gpt-5-mini").unwrap();
        let added5 = |ms: &[Message<'_>]| {
            c5.count(ms, &tools(), None) as i64 - c5.count(ms, &[], None) as i64
        };
        assert_eq!(
            added5(std::slice::from_ref(&user)),
            e.count(&block) as i64 + 84
        );
        let system = "Validate the output of the task";
        assert_eq!(
            added5(&[Message::text("system", system), user.clone()]),
            e.count(&format!("{system}\n\n{block}")) as i64 - e.count(system) as i64 + 84
        );
    }

    #[test]
    fn tools_without_property_comments_cost_one_less_before_gpt5() {
        let bare = crate::tool_render::parse_json(
            r#"{"type":"function","function":{"name":"get_weather","description":"","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}"#,
        )
        .unwrap();
        let e = Encoding::O200kBase;
        let block = render_tools(std::slice::from_ref(&bare));
        let user = [Message::text("user", "weather in Paris?")];
        let added = |model: &str| {
            let c = Counter::new(model).unwrap();
            c.count(&user, std::slice::from_ref(&bare), None) as i64
                - c.count(&user, &[], None) as i64
        };
        assert_eq!(added("gpt-4o"), e.count(&block) as i64 + 3 - 1);
        assert_eq!(added("gpt-4.1-mini"), e.count(&block) as i64 + 3 - 1);
        assert_eq!(added("gpt-5-mini"), e.count(&block) as i64 + 84);
        // A description, a title or a default on any property renders a comment: no discount.
        assert_eq!(
            crate::tool_render::tools_without_property_comments(&tools()),
            0
        );
        assert_eq!(
            crate::tool_render::tools_without_property_comments(&[bare.clone(), bare]),
            2
        );
    }

    #[test]
    fn parallel_batches_cost_less_per_call() {
        let c = Counter::new("gpt-4o").unwrap();
        let batch = |n: usize| {
            let mut a = Message::empty("assistant");
            for _ in 0..n {
                a.tool_calls.push(call("f", "{}"));
            }
            c.count_each(&[a])[0] as i64
        };
        let wrapper = |n: usize| {
            let one = "{\"recipient_name\": \"functions.f\", \"parameters\": {}}";
            let list = vec![one; n].join(", ");
            Encoding::O200kBase.count(&format!("{{\"tool_uses\": [{list}]}}")) as i64
        };
        let e = Encoding::O200kBase;
        let head = 3 + e.count("assistant") as i64 + e.count(" to=multi_tool_use.parallel") as i64;
        assert_eq!(batch(2), head + wrapper(2) - 4);
        assert_eq!(batch(3), head + wrapper(3) - 8);
        // Reasoning models keep the single constant.
        let c5 = Counter::new("gpt-5-nano").unwrap();
        let mut a = Message::empty("assistant");
        a.tool_calls.push(call("f", "{}"));
        a.tool_calls.push(call("f", "{}"));
        assert_eq!(c5.count_each(&[a])[0] as i64, head + wrapper(2) - 9);
    }

    #[test]
    fn structured_output_costs_by_context() {
        let e = Encoding::O200kBase;
        let rf = crate::tool_render::parse_json(
            r#"{"type":"json_schema","json_schema":{"name":"Out","strict":true,"schema":{"title":"LLMGuardrailResult","type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}}}"#,
        )
        .unwrap();
        let text = render_response_format(&rf).unwrap();
        assert!(!text.contains("LLMGuardrailResult") && !text.contains("required"));
        // The root title: twice its tokens (5) + 1.
        let title = 2 * e.count("LLMGuardrailResult") as i64 + 1;
        assert_eq!(title, 11);
        let c = Counter::new("gpt-4o-mini").unwrap();
        let added = |ms: &[Message<'_>], tools: &[Json]| {
            c.count(ms, tools, Some(&rf)) as i64 - c.count(ms, tools, None) as i64
        };
        let user = Message::text("user", "hi");
        let joined =
            |before: &str| e.count(&format!("{before}\n\n{text}")) as i64 - e.count(before) as i64;
        // Appended to the system text (the seam decides: "task" and "python." end differently),
        // + 4.
        for system in [
            "Validate the output of the task",
            "like ```json or ```python.",
        ] {
            let sys = Message::text("system", system);
            assert_eq!(
                added(&[sys.clone(), user.clone()], &[]),
                joined(system) + 4 + title
            );
        }
        // With tools: appended to the tool block, whatever the system message.
        let block = render_tools(&tools());
        let sys = Message::text("system", "Be brief.");
        assert_eq!(
            added(&[sys.clone(), user.clone()], &tools()),
            joined(&block) + title
        );
        assert_eq!(
            added(std::slice::from_ref(&user), &tools()),
            joined(&block) + title
        );
        // Neither: a system message of its own (assumed, unrecorded).
        assert_eq!(
            added(std::slice::from_ref(&user), &[]),
            e.count(&text) as i64 + 8 + title
        );
        // Each earlier assistant text reply: 4 more; a reply that only calls a tool, none.
        let reply = Message::text("assistant", "{\"a\":\"x\"}");
        let mut calling = Message::empty("assistant");
        calling.tool_calls.push(call("f", "{}"));
        let ms = [sys.clone(), user.clone(), reply, calling, user.clone()];
        assert_eq!(added(&ms, &[]), joined("Be brief.") + 4 + title + 4);
        // A json_object format adds nothing.
        let json_object = crate::tool_render::parse_json(r#"{"type":"json_object"}"#).unwrap();
        assert_eq!(
            c.count(&ms, &[], Some(&json_object)),
            c.count(&ms, &[], None)
        );
    }

    #[test]
    fn the_seam_tail_prices_like_the_whole_system_text() {
        let e = Encoding::O200kBase;
        let block = "\n\n# Tools\n\n## functions";
        let para = "Some instructions, with punctuation: (a) / b -- c.\n  indented line\n";
        for text in [
            String::new(),
            "short".to_string(),
            para.repeat(80),
            format!("{}\n/usr/bin path.\n\nTrailing words", para.repeat(60)),
            format!("{}é日本語\n1234 digits", para.repeat(60)),
            "x".repeat(5000),
        ] {
            let tail = seam_tail(&text);
            assert!(text.ends_with(tail));
            let whole = e.count(&format!("{text}{block}")) as i64 - e.count(&text) as i64;
            let cut = e.count(&format!("{tail}{block}")) as i64 - e.count(tail) as i64;
            assert_eq!(whole, cut, "{}", text.len());
            if text.len() > 4096 && text.contains('\n') {
                assert!(tail.len() <= 2048);
            }
        }
    }

    #[test]
    fn reasoning_models_bill_one_less() {
        let ms = [Message::text("user", "hi")];
        let a = Counter::new("gpt-4o").unwrap().count(&ms, &[], None);
        let b = Counter::new("gpt-5").unwrap().count(&ms, &[], None);
        assert_eq!(a, b + 1);
    }
}
