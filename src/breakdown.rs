//! Where a request's estimated tokens go: per message, by role and by kind of content, and
//! which parts were priced by an assumption rather than measured.
//!
//! The breakdown never prices anything itself: every figure comes from the `Estimator` (its
//! per-part and per-call prices, its per-message total, its overhead), so `Breakdown::total`
//! equals `Estimator::total` for the same history by construction. Within a message the
//! fractional shares of each kind are rounded by largest remainder to the message's rounded
//! total, the same integer `estimate_each` returns.

use crate::estimate::{Estimator, RequestExtras};
use crate::image::{dims_of_base64, dims_of_bytes, Dims};
use crate::image_tokens::{reference, sized_delta};
use crate::message::{Content, Image, ImageSource, MediaKind, Message, Part, Role};

/// What a share of the tokens pays for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Message text (and text files) outside tool results.
    Text,
    /// Tool calls: ids, names, arguments and their JSON syntax.
    ToolCalls,
    /// Tool results: their content and the id of the call they answer.
    ToolOutputs,
    Images,
    /// Visible reasoning, thinking blocks and encrypted reasoning sent back.
    Reasoning,
    /// Audio, video, documents and unknown part types.
    Media,
    /// Tool definitions and the hidden tool-use prompt.
    ToolSchemas,
    /// Per-message envelopes (role, name, separators), reply priming.
    Overhead,
}

impl Kind {
    /// Every kind, in the order of `Breakdown::by_kind` and `MessageShare::by_kind`.
    pub const ALL: [Kind; 8] = [
        Kind::Text,
        Kind::ToolCalls,
        Kind::ToolOutputs,
        Kind::Images,
        Kind::Reasoning,
        Kind::Media,
        Kind::ToolSchemas,
        Kind::Overhead,
    ];

    /// The kind's name as shown to users (`tool_calls`, `tool_outputs`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::ToolCalls => "tool_calls",
            Kind::ToolOutputs => "tool_outputs",
            Kind::Images => "images",
            Kind::Reasoning => "reasoning",
            Kind::Media => "media",
            Kind::ToolSchemas => "tool_schemas",
            Kind::Overhead => "overhead",
        }
    }

    fn slot(self) -> usize {
        self as usize
    }
}

/// Whole tokens per kind, indexed like `Kind::ALL`.
pub type KindTokens = [u64; Kind::ALL.len()];

/// One message's tokens, split by kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageShare {
    /// The message's tokens: `Estimator::message` of it.
    pub tokens: u32,
    pub by_kind: KindTokens,
}

/// A part priced by an assumption: an image whose size could not be read, media sent by
/// reference, a part of unknown type priced from its JSON size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmeasured {
    /// Index of the message holding the part.
    pub index: usize,
    /// `image`, `audio`, `video`, `document` or the part's own type name.
    pub kind: String,
    /// Tokens the estimate charged for it.
    pub assumed_tokens: u32,
    pub reason: &'static str,
}

/// The whole breakdown of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breakdown {
    /// Equals `Estimator::total` for the same messages and extras.
    pub total: u64,
    pub per_message: Vec<MessageShare>,
    /// The request overhead (`Estimator::overhead`), split by kind.
    pub request: KindTokens,
    /// The share of the request overhead that is a top-level system prompt (envelope included).
    pub request_system: u64,
    pub unmeasured: Vec<Unmeasured>,
}

impl Breakdown {
    /// Tokens per kind over the whole request (messages and overhead).
    pub fn by_kind(&self) -> KindTokens {
        let mut out = self.request;
        for m in &self.per_message {
            for (o, v) in out.iter_mut().zip(m.by_kind) {
                *o += v;
            }
        }
        out
    }
}

/// Split `target` whole tokens over fractional `shares` by largest remainder (negative shares,
/// float noise of a subtraction, count as zero).
fn apportion(shares: &[f64; Kind::ALL.len()], target: u64) -> KindTokens {
    let mut out = [0u64; Kind::ALL.len()];
    let mut given = 0u64;
    for (o, s) in out.iter_mut().zip(shares) {
        *o = s.max(0.0).floor() as u64;
        given += *o;
    }
    let mut order: Vec<usize> = (0..shares.len()).collect();
    order.sort_by(|&a, &b| {
        let fa = shares[a].max(0.0).fract();
        let fb = shares[b].max(0.0).fract();
        fb.total_cmp(&fa).then(a.cmp(&b))
    });
    // Floors never exceed a share, so `given <= sum(shares)`; the rounded total is at least
    // `sum - 0.5`, so at most one unit per share is missing, except through clamped noise.
    let mut i = 0;
    while given < target {
        out[order[i % order.len()]] += 1;
        given += 1;
        i += 1;
    }
    while given > target {
        let big = (0..out.len()).max_by_key(|&k| out[k]).unwrap_or(0);
        out[big] -= 1;
        given -= 1;
    }
    out
}

/// The pixel size a caller knows for an image reference (URL or file id), if any.
pub type SizeOf<'s> = &'s (dyn Fn(&str) -> Option<Dims> + Sync);

struct Walk<'e> {
    est: &'e Estimator,
    size_of: SizeOf<'e>,
    index: usize,
    shares: [f64; Kind::ALL.len()],
    /// Tokens the caller's sizes add to the estimator's price of the current message.
    sized: f64,
    unmeasured: Vec<Unmeasured>,
}

impl Walk<'_> {
    fn add(&mut self, kind: Kind, tokens: f64) {
        self.shares[kind.slot()] += tokens;
    }

    fn assumed(&mut self, kind: &str, tokens: f64, reason: &'static str) {
        self.unmeasured.push(Unmeasured {
            index: self.index,
            kind: kind.to_string(),
            assumed_tokens: tokens.round() as u32,
            reason,
        });
    }

    /// An image part the estimator priced at `price`: re-priced when the caller knows the size
    /// of its reference, listed as an assumption when nobody does.
    fn image(&mut self, img: &Image<'_>, price: f64) {
        if let Some(d) = reference(&img.source).and_then(self.size_of) {
            let delta = sized_delta(self.est.image_rule(), d, img.detail) as f64;
            self.sized += delta;
            self.add(Kind::Images, price + delta);
            return;
        }
        self.add(Kind::Images, price);
        let reason = match img.source {
            ImageSource::Url(_) => {
                "remote image URL: size unknown, priced as a 1024x1024 image (image_sizes= sizes it)"
            }
            ImageSource::File(_) => {
                "image sent by file id or file URI: size unknown, priced as a 1024x1024 image \
                 (image_sizes= sizes it by that id)"
            }
            ImageSource::Base64(s) if dims_of_base64(s).is_none() => {
                "image header unreadable: priced as a 1024x1024 image"
            }
            ImageSource::Bytes(b) if dims_of_bytes(b).is_none() => {
                "image header unreadable: priced as a 1024x1024 image"
            }
            _ => return,
        };
        self.assumed("image", price, reason);
    }

    /// One part; `text_kind` is what its text counts as (tool output inside a result).
    fn part(&mut self, p: &Part<'_>, text_kind: Kind) {
        let price = self.est.part(p);
        match p {
            Part::Text(_) => self.add(text_kind, price),
            Part::Image(img) => self.image(img, price),
            Part::ToolUse(_) => self.add(Kind::ToolCalls, price),
            Part::ToolResult { content, .. } => {
                let before: f64 = self.shares.iter().sum::<f64>() - self.sized;
                for c in content {
                    self.part(c, Kind::ToolOutputs);
                }
                // What the estimator charged for the nested parts (without the caller's sizes).
                let nested: f64 = self.shares.iter().sum::<f64>() - self.sized - before;
                // The result's own envelope: its call id and separators.
                self.add(Kind::ToolOutputs, price - nested);
            }
            Part::Thinking { .. } | Part::EncryptedReasoning(_) => self.add(Kind::Reasoning, price),
            Part::Opaque {
                kind,
                media,
                payload_chars,
                ..
            } => match media {
                MediaKind::Image => {
                    self.add(Kind::Images, price);
                    self.assumed(
                        "image",
                        price,
                        "image sent by reference (file id or URI): priced as a 1024x1024 image",
                    );
                }
                MediaKind::Audio | MediaKind::Video | MediaKind::Document => {
                    self.add(Kind::Media, price);
                    if payload_chars.is_none() {
                        let (name, reason) = match media {
                            MediaKind::Audio => {
                                ("audio", "audio without inline data: assumed a 10 s clip")
                            }
                            MediaKind::Video => {
                                ("video", "video without inline data: assumed a 60 s video")
                            }
                            _ => ("document", "document without inline data: assumed 3 pages"),
                        };
                        self.assumed(name, price, reason);
                    }
                }
                MediaKind::Text => self.add(text_kind, price),
                MediaKind::Unknown => {
                    self.add(Kind::Media, price);
                    self.assumed(
                        kind,
                        price,
                        "unknown part type: priced at 4 characters per token of its JSON",
                    );
                }
            },
        }
    }

    fn message(&mut self, m: &Message<'_>) -> MessageShare {
        self.shares = [0.0; Kind::ALL.len()];
        self.sized = 0.0;
        let is_result = m.role == Role::Tool || m.tool_call_id.is_some();
        let text_kind = if is_result {
            Kind::ToolOutputs
        } else {
            Kind::Text
        };
        match &m.content {
            Content::None => {}
            Content::Text(s) => self.add(text_kind, self.est.text(s)),
            Content::Parts(parts) => {
                // (An earlier turn's thinking the API drops costs nothing: it is no reasoning
                // share, and the envelope is not the negative of its price.)
                let dropped = self.est.thinking_dropped(m, parts);
                for p in parts {
                    if dropped && p.is_thinking() {
                        continue;
                    }
                    self.part(p, text_kind);
                }
            }
        }
        for c in &m.tool_calls {
            self.add(Kind::ToolCalls, self.est.tool_call(c));
        }
        if let Some(r) = &m.reasoning {
            self.add(Kind::Reasoning, self.est.text(r));
        }
        self.add(Kind::Reasoning, self.est.signatures(&m.thought_signatures));
        // Whatever the estimator charged beyond the parts is the envelope: role, name and
        // separators (overhead); a tool result's call id belongs to the output it labels.
        let full = self.est.message_f64(m) + self.sized;
        let envelope = full - self.shares.iter().sum::<f64>();
        if m.tool_call_id.is_some() {
            let bare = self.est.message_f64(&Message::empty(m.role_str));
            self.add(Kind::Overhead, bare);
            self.add(Kind::ToolOutputs, envelope - bare);
        } else {
            self.add(Kind::Overhead, envelope);
        }
        // `Estimator::message` is this price rounded (priced once); the caller's sizes move it
        // by whole tokens, as `size_correction` moves `estimate_each`.
        let tokens = full.round() as u32;
        MessageShare {
            tokens,
            by_kind: apportion(&self.shares, u64::from(tokens)),
        }
    }
}

/// The breakdown of a request, priced by `est` exactly as `est.total(ms, extras)` prices it,
/// plus `size_correction` for the image references `size_of` knows (which are then measured,
/// not assumed).
pub fn breakdown(
    est: &Estimator,
    ms: &[Message<'_>],
    extras: &RequestExtras<'_>,
    size_of: SizeOf<'_>,
) -> Breakdown {
    let mut walk = Walk {
        est,
        size_of,
        index: 0,
        shares: [0.0; Kind::ALL.len()],
        sized: 0.0,
        unmeasured: Vec::new(),
    };
    let mut per_message = Vec::with_capacity(ms.len());
    for (i, m) in ms.iter().enumerate() {
        walk.index = i;
        per_message.push(walk.message(m));
    }
    let o = est.overhead_parts(extras);
    // `Estimator::overhead` is this sum rounded: the system prompt and tools priced once.
    let overhead = o.sum().round() as u32;
    let mut shares = [0.0; Kind::ALL.len()];
    shares[Kind::Overhead.slot()] = o.priming + o.system_envelope;
    shares[Kind::Text.slot()] = o.system_text;
    shares[Kind::ToolSchemas.slot()] = o.tool_schemas;
    let request = apportion(&shares, u64::from(overhead));
    // The system prompt's share, rounded alone and capped by what is left after the schemas.
    let request_system = ((o.system_envelope + o.system_text).round() as u64)
        .min(u64::from(overhead) - request[Kind::ToolSchemas.slot()]);
    let total = per_message.iter().map(|m| u64::from(m.tokens)).sum::<u64>() + u64::from(overhead);
    Breakdown {
        total,
        per_message,
        request,
        request_system,
        unmeasured: walk.unmeasured,
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::estimate::ToolDef;
    use crate::image_tokens::size_correction;
    use crate::message::{Detail, Image, ToolCall};
    use crate::provider::Provider;

    fn history() -> Vec<Message<'static>> {
        let mut call = Message::empty("assistant");
        call.content = Content::Text(Cow::Borrowed("Let me look."));
        call.tool_calls.push(ToolCall {
            id: "call_Xk3Jz9QpLm2Rt7Vw",
            name: "read_file",
            arguments: Cow::Borrowed("{\"path\":\"src/main.rs\"}"),
        });
        let mut result = Message::empty("tool");
        result.tool_call_id = Some("call_Xk3Jz9QpLm2Rt7Vw");
        result.content = Content::Text(Cow::Borrowed("fn main() { println!(\"hi\"); }\n"));
        let mut picture = Message::empty("user");
        picture.content = Content::Parts(vec![
            Part::Text(Cow::Borrowed("what is in this picture?")),
            Part::Image(Image {
                source: ImageSource::Url("https://example.com/cat.png"),
                detail: Detail::Auto,
            }),
            Part::Opaque {
                kind: Cow::Borrowed("input_audio"),
                media: MediaKind::Audio,
                payload_chars: None,
                wire_chars: 40,
                units: None,
                text: None,
                payload: None,
            },
        ]);
        let mut thinking = Message::empty("assistant");
        thinking.content = Content::Parts(vec![
            Part::Thinking {
                text: Cow::Borrowed("The user wants a description."),
                signature: "c2lnbmF0dXJl",
            },
            Part::ToolUse(ToolCall {
                id: "toolu_01",
                name: "describe",
                arguments: Cow::Borrowed("{}"),
            }),
        ]);
        let mut anthropic_result = Message::empty("user");
        anthropic_result.content = Content::Parts(vec![Part::ToolResult {
            tool_use_id: "toolu_01",
            is_error: false,
            content: vec![Part::Text(Cow::Borrowed("a cat on a mat"))],
            name: None,
        }]);
        vec![
            Message::text("system", "You are a coding agent."),
            Message::text("user", "Fix the bug in main.rs please."),
            call,
            result,
            picture,
            thinking,
            anthropic_result,
        ]
    }

    fn extras() -> RequestExtras<'static> {
        RequestExtras {
            system: Some(Cow::Borrowed("Answer briefly.")),
            tools: vec![ToolDef {
                name: Cow::Borrowed("read_file"),
                json: Cow::Borrowed(
                    "{\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"parameters\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}}}",
                ),
            }],
            response_format: None,
            ..Default::default()
        }
    }

    #[test]
    fn totals_agree_with_the_estimator_for_every_provider() {
        let ms = history();
        for p in [
            Provider::OpenAI,
            Provider::Anthropic,
            Provider::Gemini,
            Provider::Ollama,
        ] {
            let est = Estimator::new(p, "gpt-4o");
            let b = breakdown(&est, &ms, &extras(), &|_| None);
            assert_eq!(b.total, est.total(&ms, &extras()), "{p:?}");
            let each = est.each(&ms);
            for (share, e) in b.per_message.iter().zip(&each) {
                assert_eq!(share.tokens, *e);
                assert_eq!(share.by_kind.iter().sum::<u64>(), u64::from(*e));
            }
            assert_eq!(
                b.request.iter().sum::<u64>(),
                u64::from(est.overhead(&extras()))
            );
            assert_eq!(b.by_kind().iter().sum::<u64>(), b.total);
        }
    }

    #[test]
    fn kinds_land_where_they_belong() {
        let est = Estimator::new(Provider::Anthropic, "");
        let b = breakdown(&est, &history(), &extras(), &|_| None);
        let k = |i: usize, kind: Kind| b.per_message[i].by_kind[kind as usize];
        assert!(k(2, Kind::ToolCalls) > k(2, Kind::Text));
        assert!(k(3, Kind::ToolOutputs) > 0 && k(3, Kind::Text) == 0);
        assert!(k(4, Kind::Images) > 0 && k(4, Kind::Media) > 0);
        assert!(k(5, Kind::Reasoning) > 0 && k(5, Kind::ToolCalls) > 0);
        assert!(k(6, Kind::ToolOutputs) > 0 && k(6, Kind::Text) == 0);
        assert!(b.request[Kind::ToolSchemas as usize] > 0);
        assert!(b.request_system > 0);
    }

    #[test]
    fn assumptions_are_listed_with_their_price() {
        let est = Estimator::new(Provider::OpenAI, "gpt-4o");
        let b = breakdown(&est, &history(), &RequestExtras::default(), &|_| None);
        let kinds: Vec<(usize, &str)> = b
            .unmeasured
            .iter()
            .map(|u| (u.index, u.kind.as_str()))
            .collect();
        assert_eq!(kinds, [(4, "image"), (4, "audio")]);
        // gpt-4o prices an unknown-size image as 1024x1024 at auto detail: 765 tokens.
        assert_eq!(b.unmeasured[0].assumed_tokens, 765);
        assert!(b.unmeasured[0].reason.contains("URL"));
    }

    #[test]
    fn sized_references_are_repriced_and_no_longer_assumed() {
        let mut ms = history();
        let mut file = Message::empty("user");
        // Inside a tool result: the result's own envelope must stay what the estimator charged.
        file.content = Content::Parts(vec![Part::ToolResult {
            tool_use_id: "toolu_02",
            is_error: false,
            content: vec![
                Part::Text(Cow::Borrowed("screenshot")),
                Part::Image(Image {
                    source: ImageSource::File("file-abc"),
                    detail: Detail::High,
                }),
            ],
            name: None,
        }]);
        ms.push(file);
        let est = Estimator::new(Provider::OpenAI, "gpt-4o");
        let sizes = |r: &str| match r {
            "https://example.com/cat.png" => Some(Dims {
                width: 512,
                height: 512,
            }),
            "file-abc" => Some(Dims {
                width: 2048,
                height: 1024,
            }),
            _ => None,
        };
        let b = breakdown(&est, &ms, &extras(), &sizes);
        let fix: i64 = ms
            .iter()
            .map(|m| size_correction(est.image_rule(), m, &sizes))
            .sum();
        assert_eq!(
            b.total,
            est.total(&ms, &extras()).saturating_add_signed(fix)
        );
        assert_eq!(b.by_kind().iter().sum::<u64>(), b.total);
        let kinds: Vec<&str> = b.unmeasured.iter().map(|u| u.kind.as_str()).collect();
        assert_eq!(kinds, ["audio"]);
        // 512x512: 85 + 170; 2048x1024 high: 1536x768 after the 768-px shortest side, 6 tiles,
        // 85 + 6 * 170 (OpenAI's tile formula).
        assert_eq!(b.per_message[4].by_kind[Kind::Images as usize], 255);
        assert_eq!(b.per_message[7].by_kind[Kind::Images as usize], 1105);
        let assumed = breakdown(&est, &ms, &extras(), &|_| None);
        let outputs = |b: &Breakdown| b.per_message[7].by_kind[Kind::ToolOutputs as usize];
        assert_eq!(outputs(&b), outputs(&assumed));
        let reasons: Vec<&str> = assumed.unmeasured.iter().map(|u| u.reason).collect();
        assert!(reasons[2].contains("file id"), "{reasons:?}");
    }

    #[test]
    fn apportion_keeps_the_rounded_total() {
        let mut s = [0.0; Kind::ALL.len()];
        s[0] = 1.4;
        s[1] = 1.4;
        s[7] = 1.4;
        assert_eq!(apportion(&s, 4).iter().sum::<u64>(), 4);
        s[7] = -1e-12;
        assert_eq!(apportion(&s, 3).iter().sum::<u64>(), 3);
    }
}
