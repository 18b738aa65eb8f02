//! The heuristic estimator: what a history costs in a provider's tokens, without tokenizing.
//!
//! One estimator prices every message for every caller (totals, per-message lists, the tail
//! walk, pruning, the session ledger), and one overhead function prices what surrounds the
//! messages (system prompt, tool definitions, reply priming): two call sites that count
//! differently make a compaction trigger and the budget it compacts to disagree.

use std::borrow::Cow;

use crate::exact::Encoding;
use crate::image::{dims_of_base64, dims_of_bytes};
use crate::image_tokens::{image_tokens, rule_for, ImageRule};
use crate::media_tokens::media_tokens;
use crate::message::{Content, Detail, Image, ImageSource, MediaKind, Message, Part, ToolCall};
use crate::profile::{profile, Profile, Provider};
use crate::text_stats::{text_tokens, BASE64_TOKENS_PER_BYTE};

/// Tokens per character for opaque parts (audio, files, unknown blocks) priced from their
/// serialized size: the common 4 characters per token rule, for lack of anything better.
const OPAQUE_CHARS_PER_TOKEN: f64 = 4.0;

/// Tokens of tool-call arguments once escaped inside the JSON envelope, per raw token.
const ESCAPED_ARGUMENTS_FACTOR: f64 = 1.15;

/// A tool definition as sent: its name and its whole definition serialized as compact JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolDef<'a> {
    pub name: Cow<'a, str>,
    pub json: Cow<'a, str>,
}

/// What a request carries besides its messages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestExtras<'a> {
    /// A top-level system prompt (Anthropic `system`, or one to be prepended).
    pub system: Option<Cow<'a, str>>,
    pub tools: Vec<ToolDef<'a>>,
}

/// Prices messages for one provider and model.
#[derive(Debug, Clone, Copy)]
pub struct Estimator {
    provider: Provider,
    profile: Profile,
    image_rule: ImageRule,
    /// Tokenize text with this encoding instead of the sampled shape estimate (opt-in, used by
    /// sessions that price only a few new messages per turn and can afford BPE).
    encoding: Option<Encoding>,
}

impl Estimator {
    /// The estimator of `provider`'s billing; `model` (may be empty) picks the image rule.
    pub fn new(provider: Provider, model: &str) -> Self {
        Estimator {
            provider,
            profile: profile(provider),
            image_rule: rule_for(provider, model),
            encoding: None,
        }
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
            None => self.profile.text_scale * text_tokens(s.as_bytes()),
        }
    }

    /// Tokens of one image part.
    pub fn image(&self, img: &Image<'_>) -> u32 {
        let dims = match img.source {
            ImageSource::Base64(s) => dims_of_base64(s),
            ImageSource::Bytes(b) => dims_of_bytes(b),
            ImageSource::Url(_) => None,
        };
        image_tokens(self.image_rule, dims, img.detail)
    }

    /// Tokens of a call id: random alphanumerics that BPE splits almost per pair of characters
    /// (`call_2IDxBAleIuZyViB5UVOapbQA`: 17 o200k tokens for 29 characters).
    fn id(&self, id: &str) -> f64 {
        self.profile.text_scale * id.len() as f64 * BASE64_TOKENS_PER_BYTE
    }

    fn tool_call(&self, c: &ToolCall<'_>) -> f64 {
        // The whole envelope: id, name, arguments and the syntax around them
        // (`{"id":..,"type":"function","function":{"name":..,"arguments":..}}`). Arguments travel
        // as JSON inside a JSON string, so every quote is escaped: measured on the 1,048 tool-call
        // messages of shared/data, the escaped arguments cost 1.15x their raw o200k tokens.
        self.profile.per_tool_call
            + self.id(c.id)
            + self.text(c.name)
            + ESCAPED_ARGUMENTS_FACTOR * self.text(&c.arguments)
    }

    fn part(&self, p: &Part<'_>) -> f64 {
        match p {
            Part::Text(t) => self.text(t),
            Part::Image(img) => self.image(img) as f64,
            Part::ToolUse(c) => self.tool_call(c),
            Part::ToolResult {
                tool_use_id,
                content,
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
                ..
            } => {
                if *media == MediaKind::Image {
                    // An image by reference (Gemini `fileData`, a file id): the default size.
                    return image_tokens(self.image_rule, None, Detail::Auto) as f64;
                }
                // Base64 carries 3 bytes per 4 characters.
                let decoded = payload_chars.map(|c| c / 4 * 3);
                media_tokens(self.provider, *media, decoded).unwrap_or_else(|| {
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
        t += match &m.content {
            Content::None => 0.0,
            Content::Text(s) => self.text(s),
            Content::Parts(parts) => parts.iter().map(|x| self.part(x)).sum(),
        };
        for c in &m.tool_calls {
            t += self.tool_call(c);
        }
        if let Some(id) = m.tool_call_id {
            t += p.per_tool_result + self.id(id);
        }
        if let Some(r) = &m.reasoning {
            t += self.text(r);
        }
        t
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
        let p = &self.profile;
        let mut t = p.per_request;
        if let Some(s) = &extras.system {
            t += p.per_message + self.text(s);
        }
        if !extras.tools.is_empty() {
            t += p.tools_base;
            for tool in &extras.tools {
                t += p.per_tool_def + p.tool_schema_scale * self.text(&tool.json);
            }
        }
        t.round() as u32
    }

    /// Tokens of a whole request: every message plus the overhead. Equals
    /// `each(ms).sum() + overhead(extras)`.
    pub fn total(&self, ms: &[Message<'_>], extras: &RequestExtras<'_>) -> u64 {
        ms.iter().map(|m| u64::from(self.message(m))).sum::<u64>()
            + u64::from(self.overhead(extras))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Detail;

    fn call<'a>(id: &'a str, name: &'a str, args: &'a str) -> ToolCall<'a> {
        ToolCall {
            id,
            name,
            arguments: Cow::Borrowed(args),
        }
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
    fn with_encoding_tokenizes_text_scaled_by_the_profile() {
        let text = "The quick brown fox jumps over the lazy dog.";
        let exact = Encoding::O200kBase.count(text) as f64;
        let e = Estimator::new(Provider::Gemini, "").with_encoding(Some(Encoding::O200kBase));
        assert_eq!(e.text(text), profile(Provider::Gemini).text_scale * exact);
        let m = Message::text("user", text);
        let sampled = Estimator::new(Provider::Gemini, "");
        assert_eq!(
            e.message_f64(&m) - e.text(text),
            sampled.message_f64(&m) - sampled.text(text)
        );
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
        };
        let each: u64 = e.each(&ms).iter().map(|&x| u64::from(x)).sum();
        assert_eq!(e.total(&ms, &extras), each + u64::from(e.overhead(&extras)));
        assert!(e.overhead(&extras) > e.overhead(&RequestExtras::default()));
    }
}
