//! What must hold on any input, checked on fuzzed bytes. Shared by the cargo-fuzz targets
//! (`fuzz/fuzz_targets/*.rs`, coverage-guided) and the corpus replay that `cargo test` runs
//! (`tests/fuzz_corpus.rs`): a violated property panics, which both report as a failure.
//!
//! Plain Rust over the core (no Python): histories are decoded from the bytes by a small
//! decoder of our own (roles, texts, parts, tool calls and results linked by a few shared ids,
//! base64 images whose headers claim any size, tool schemas with `$ref` graphs).

#![allow(dead_code)]

use std::borrow::Cow;

use contextfold::compaction::{
    assemble, plan as compaction_plan, seat, verify, MaskOptions, PlanOptions, WireFormat,
};
use contextfold::estimate::{Estimator, RequestExtras, ResponseFormat, ToolDef};
use contextfold::exact::Counter;
use contextfold::ledger::{content_hash, Entry, Ledger};
use contextfold::media_tokens::MediaKind;
use contextfold::message::{
    Content, Detail, Image, ImageSource, MediaData, MediaPayload, Message, Part, Role, ToolCall,
};
use contextfold::provider::Provider;
use contextfold::prune::{plan, PruneOptions};
use contextfold::session_state::SessionState;
use contextfold::shrink_json::{shrink_json as shrink, MIN_MAX_CHARS};
use contextfold::tail_walk::{find_tail_start, legal_cuts, TailOptions};
use contextfold::tool_render::{render_tools, Json};
use contextfold::wire::edit::Change;
use contextfold::wire::Format;

/// serde_json's reading of `s` as one JSON document (no depth limit: shrink_json keeps any
/// depth, and the fuzz inputs are small enough for the stack).
fn parse(s: &str) -> Result<serde_json::Value, String> {
    let mut de = serde_json::Deserializer::from_str(s);
    de.disable_recursion_limit();
    let mut it = de.into_iter::<serde_json::Value>();
    let v = match it.next() {
        Some(Ok(v)) => v,
        Some(Err(e)) => return Err(e.to_string()),
        None => return Err("empty".into()),
    };
    match it.next() {
        None => Ok(v),
        Some(_) => Err("trailing characters".into()),
    }
}

fn kind(v: &serde_json::Value) -> u8 {
    use serde_json::Value::*;
    match v {
        Null => 0,
        Bool(_) => 1,
        Number(_) => 2,
        String(_) => 3,
        Array(_) => 4,
        Object(_) => 5,
    }
}

/// `shrink_json`: the output parses with serde_json, fits, is a fixed point, equals a valid
/// fitting input, keeps a container root's type and (unless the root itself was collapsed
/// into a `{"_cut": ...}` marker) the root object's keys.
pub fn shrink_json(data: &[u8]) {
    if data.len() < 2 {
        return;
    }
    let max = MIN_MAX_CHARS + (usize::from(u16::from_le_bytes([data[0], data[1]])) % 2048);
    let text = String::from_utf8_lossy(&data[2..]);
    let out = shrink(&text, max);
    let parsed = match parse(&out) {
        Ok(v) => v,
        Err(e) => panic!("output does not parse ({e}): {out:?} from {text:?}"),
    };
    let n = out.chars().count();
    assert!(n <= max, "{n} chars > {max}: {out:?}");
    assert_eq!(shrink(&out, max), out, "not idempotent");
    if let Ok(input) = parse(&text) {
        if text.chars().count() <= max {
            assert_eq!(out, *text, "a valid fitting input was changed");
        }
        // A container root keeps its type even when collapsed; a scalar root longer than
        // `max` (a 200-digit number) has no shorter form and becomes a marker string.
        if kind(&input) >= 4 {
            assert_eq!(kind(&parsed), kind(&input), "root type changed: {out:?}");
        }
        if let (serde_json::Value::Object(a), serde_json::Value::Object(b)) = (&input, &parsed) {
            if !out.starts_with("{\"_cut\":") {
                let ka: Vec<&String> = a.keys().collect();
                let kb: Vec<&String> = b.keys().collect();
                assert_eq!(ka, kb, "root keys changed: {out:?}");
            }
        }
    }
}

/// Reads the fuzz input as a stream of choices; past its end every read is 0 / empty.
struct Src<'a> {
    s: &'a str,
    at: usize,
}

impl<'a> Src<'a> {
    fn u8(&mut self) -> u8 {
        let b = self.s.as_bytes().get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[usize::from(self.u8()) % xs.len()]
    }
    /// A slice of the input at char boundaries, up to 255 bytes (or ~16 KB on a 255 marker).
    fn str(&mut self) -> &'a str {
        let mut n = usize::from(self.u8());
        if n == 255 {
            n = usize::from(self.u8()) << 6;
        }
        let b = self.s.len();
        let mut start = self.at.min(b);
        while !self.s.is_char_boundary(start) {
            start += 1;
        }
        let mut end = (start + n).min(b);
        while !self.s.is_char_boundary(end) {
            end += 1;
        }
        self.at = end;
        &self.s[start..end]
    }
}

const IDS: [&str; 5] = ["call_0", "call_1", "toolu_2", "", "call_0 "];
const ROLES: [&str; 9] = [
    "system",
    "user",
    "assistant",
    "tool",
    "developer",
    "model",
    "function",
    "weird",
    "",
];
const MODELS: [&str; 6] = [
    "gpt-4o",
    "gpt-5",
    "o3",
    "gpt-3.5-turbo-0301",
    "gpt-4.1-mini",
    "claude-sonnet-4-5",
];

fn b64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= c.len() {
                out.push(A[(n >> shift) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Base64 images whose headers claim the fuzzed size (up to 4 billion pixels a side), as a
/// bare string, a data URL and a data URL with the wrong MIME type.
fn synthetic_images(w: u32, h: u32) -> [String; 3] {
    let mut png = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13];
    png.extend_from_slice(b"IHDR");
    png.extend_from_slice(&w.to_be_bytes());
    png.extend_from_slice(&h.to_be_bytes());
    png.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    let mut gif = b"GIF89a".to_vec();
    gif.extend_from_slice(&(w as u16).to_le_bytes());
    gif.extend_from_slice(&(h as u16).to_le_bytes());
    gif.extend_from_slice(&[0; 8]);
    let p = b64(&png);
    [
        p.clone(),
        format!("data:image/png;base64,{p}"),
        format!("data:image/jpeg;base64,{}", b64(&gif)),
    ]
}

fn call<'a>(src: &mut Src<'a>) -> ToolCall<'a> {
    let id = if src.u8().is_multiple_of(4) {
        src.str()
    } else {
        src.pick(&IDS)
    };
    ToolCall {
        id,
        name: src.str(),
        arguments: Cow::Borrowed(src.str()),
    }
}

fn part<'a>(src: &mut Src<'a>, images: &'a [String; 3], depth: usize) -> Part<'a> {
    match src.u8() % 8 {
        0 | 1 => Part::Text(Cow::Borrowed(src.str())),
        2 => {
            let source = match src.u8() % 5 {
                0 => ImageSource::Base64(src.str()),
                1 => ImageSource::Url(src.str()),
                2 => ImageSource::Bytes(src.str().as_bytes()),
                k => ImageSource::Base64(&images[usize::from(k) % 3]),
            };
            let detail = src.pick(&[Detail::Auto, Detail::Low, Detail::High, Detail::Original]);
            Part::Image(Image { source, detail })
        }
        3 => Part::ToolUse(call(src)),
        4 if depth < 3 => {
            let tool_use_id = src.pick(&IDS);
            let k = src.u8() % 4;
            Part::ToolResult {
                tool_use_id,
                is_error: false,
                content: (0..k).map(|_| part(src, images, depth + 1)).collect(),
                name: None,
            }
        }
        5 => Part::Thinking {
            text: Cow::Borrowed(src.str()),
            signature: src.str(),
        },
        6 => Part::EncryptedReasoning(src.str()),
        _ => Part::Opaque {
            kind: Cow::Borrowed(src.str()),
            media: src.pick(&[
                MediaKind::Image,
                MediaKind::Audio,
                MediaKind::Video,
                MediaKind::Document,
                MediaKind::Text,
                MediaKind::Unknown,
            ]),
            payload_chars: match src.u8() % 3 {
                0 => None,
                1 => Some(usize::from(src.u8()) << 20),
                _ => Some(usize::MAX >> (src.u8() % 64)),
            },
            wire_chars: usize::from(src.u8()) << (src.u8() % 40),
            units: match src.u8() % 3 {
                0 => None,
                1 => Some(u32::from(src.u8())),
                _ => Some(u32::MAX >> (src.u8() % 32)),
            },
            text: match src.u8() % 2 {
                0 => None,
                _ => Some(Cow::Borrowed(src.str())),
            },
            // A document's kept bytes: any text or bytes, under any type a block may name.
            payload: match src.u8() % 3 {
                0 => None,
                1 => Some(Box::new(MediaPayload {
                    data: MediaData::Base64(Cow::Borrowed(src.str())),
                    mime: None,
                })),
                _ => Some(Box::new(MediaPayload {
                    data: MediaData::Bytes(src.str().as_bytes()),
                    mime: Some(src.str().to_string()),
                })),
            },
        },
    }
}

fn message<'a>(src: &mut Src<'a>, images: &'a [String; 3]) -> Message<'a> {
    let role_str = src.pick(&ROLES);
    let flags = src.u8();
    let mut m = Message::empty(role_str);
    debug_assert_eq!(m.role, Role::parse(role_str));
    if flags & 1 != 0 {
        m.name = Some(src.str());
    }
    m.content = match (flags >> 1) & 3 {
        0 => Content::None,
        1 | 2 => Content::Text(Cow::Borrowed(src.str())),
        _ => {
            let k = src.u8() % 6;
            Content::Parts((0..k).map(|_| part(src, images, 0)).collect())
        }
    };
    for _ in 0..(flags >> 3) & 3 {
        m.tool_calls.push(call(src));
    }
    if flags & 0x20 != 0 {
        m.tool_call_id = Some(src.pick(&IDS));
    }
    if flags & 0x40 != 0 {
        m.reasoning = Some(Cow::Borrowed(src.str()));
    }
    // Which wire format writes this message's edits (a view of any shape under any format: a
    // writer must refuse what its format cannot express, never write something invalid).
    m.wire = src.pick(&[
        Format::OpenAIChat,
        Format::OpenAIResponses,
        Format::Anthropic,
        Format::Gemini,
        Format::GeminiSnake,
        Format::Bedrock,
        Format::Unknown,
    ]);
    m
}

fn to_json(v: &serde_json::Value) -> Json {
    use serde_json::Value as V;
    match v {
        V::Null => Json::Null,
        V::Bool(b) => Json::Bool(*b),
        V::Number(n) => Json::Number(n.to_string()),
        V::String(s) => Json::String(s.clone()),
        V::Array(a) => Json::Array(a.iter().map(to_json).collect()),
        V::Object(o) => Json::Object(o.iter().map(|(k, v)| (k.clone(), to_json(v))).collect()),
    }
}

/// A history decoded from the bytes, priced, walked and pruned: no panic; totals are sums;
/// the tail start is in range, a legal cut (or the head, when nothing can be summarized); the
/// prune plan only edits messages before the protected tail, and every shrunk `arguments` is
/// valid JSON; the exact count is the sum of its parts; content hashes and session states are
/// deterministic and round-trip; a tool schema from the bytes renders within its budget; and
/// the bytes themselves, read as a saved session state, are refused or read without a panic.
pub fn history(data: &[u8]) {
    let _ = SessionState::decode(data);
    let text = String::from_utf8_lossy(data);
    let mut src = Src { s: &text, at: 0 };
    let (w, h) = (
        u32::from_le_bytes([src.u8(), src.u8(), src.u8(), src.u8()]),
        u32::from_le_bytes([src.u8(), src.u8(), src.u8(), src.u8()]),
    );
    let images = synthetic_images(w, h);
    let provider = src.pick(&[
        Provider::OpenAI,
        Provider::Anthropic,
        Provider::Gemini,
        Provider::Ollama,
        Provider::OpenAICompatible,
    ]);
    let model = src.pick(&MODELS);
    let budget = match src.u8() % 4 {
        0 => 0,
        1 => u64::from(src.u8()) * 10,
        2 => u64::MAX >> (src.u8() % 64),
        _ => u64::from(src.u8()) << 12,
    };
    let protect_first_n = usize::from(src.u8() % 8);
    let min_tail = match src.u8() % 5 {
        4 => usize::MAX,
        k => usize::from(k),
    };
    let soft_ceiling = src.pick(&[1.0, 1.5, 0.0, -1.0, f64::NAN, f64::INFINITY, 1e300]);
    let system = src.str();
    let tool_text = src.str();
    let n = usize::from(src.u8() % 48);
    let msgs: Vec<Message<'_>> = (0..n).map(|_| message(&mut src, &images)).collect();

    let est = Estimator::new(provider, model);
    let extras = RequestExtras {
        system: (!system.is_empty()).then_some(Cow::Borrowed(system)),
        tools: vec![ToolDef {
            name: Cow::Borrowed("t"),
            json: Cow::Borrowed(tool_text),
        }],
        // The same arbitrary text as a structured-output schema (JSON or not).
        response_format: (!tool_text.is_empty()).then(|| ResponseFormat {
            name: Cow::Borrowed("r"),
            description: (!system.is_empty()).then_some(Cow::Borrowed(system)),
            schema: Cow::Borrowed(tool_text),
        }),
        media_resolution: Detail::from_code((n % 6) as u8).unwrap_or_default(),
    };
    let est = est.with_media_resolution(extras.media_resolution);
    let costs = est.each(&msgs);
    assert_eq!(costs.len(), n);
    let sum: u64 = costs.iter().map(|&c| u64::from(c)).sum();
    assert_eq!(
        est.total(&msgs, &extras),
        sum + u64::from(est.overhead(&extras))
    );

    let legal = legal_cuts(&msgs);
    assert_eq!(legal.len(), n + 1);
    assert!(legal[0] && legal[n], "the ends are always legal cuts");
    let opt = TailOptions {
        budget_tokens: budget,
        protect_first_n,
        min_tail,
        soft_ceiling,
    };
    let start = find_tail_start(&costs, &legal, &opt);
    let mut head = protect_first_n.min(n);
    while head < n && !legal[head] {
        head += 1;
    }
    assert!(
        start <= n && start >= head,
        "start {start} head {head} n {n}"
    );
    assert!(
        start == head || legal[start],
        "start {start} splits a tool group"
    );

    let popt = PruneOptions {
        protect_tail_tokens: budget,
        protect_first_n,
        min_tail,
        soft_ceiling,
        tool_result_max_tokens: u32::from(src.u8()),
        arguments_max_chars: usize::from(src.u8()) * 8,
        prune_images: src.u8() & 1 == 0,
        dedupe: src.u8() & 1 == 0,
        cache_block_tokens: u64::from(src.u8()) * 64,
        mentions: src.u8() & 1 == 0,
    };
    let p = plan(&msgs, &est, &popt);
    assert!(p.protected_from <= n);
    assert_eq!(p.edits.len(), p.changes.len());
    for (e, (i, change)) in p.edits.iter().zip(&p.changes) {
        assert_eq!(e.message, *i);
        assert!(
            *i < p.protected_from,
            "edit of protected message {i}: {e:?}"
        );
        // Every replacement is JSON in its format, and shortened arguments parse inside it.
        if let Err(err) = parse(&e.value) {
            panic!("edit value is not JSON ({err}): {:?}", e.value);
        }
        if let Change::Arguments { json, .. } = change {
            if let Err(err) = parse(json) {
                panic!("pruned arguments are not JSON ({err}): {json:?}");
            }
        }
    }

    // The exact counter runs BPE over every text: ~50x the cost of everything else here, so
    // one input in 16 takes this path (the fuzzer still steers into it through the selector).
    let exact = src.u8().is_multiple_of(16);
    if let Ok(counter) =
        Counter::new(model)
            .map_err(|_| ())
            .and_then(|c| if exact { Ok(c) } else { Err(()) })
    {
        let tools: Vec<Json> = parse(tool_text)
            .map(|v| vec![to_json(&v)])
            .unwrap_or_default();
        let each = counter.count_each(&msgs);
        assert_eq!(each.len(), n);
        let total = counter.count(&msgs, &tools, None);
        let parts: u64 = each.iter().map(|&c| u64::from(c)).sum();
        assert_eq!(total, parts + counter.overhead(&msgs, &tools, None));
    }
    if let Ok(v) = parse(tool_text) {
        let rendered = render_tools(&[to_json(&v)]);
        let bound = contextfold::tool_render::RENDER_BUDGET_BYTES + 4 * tool_text.len() + 4096;
        assert!(rendered.len() <= bound, "{} > {bound}", rendered.len());
    }

    let mut ledger = Ledger::new(est.overhead(&extras), 0.5);
    for (i, (m, &c)) in msgs.iter().zip(&costs).enumerate() {
        let hash = content_hash(m);
        assert_eq!(hash, content_hash(&m.clone()));
        ledger.push(Entry {
            id: i + 1,
            fingerprint: 0,
            content: hash,
            tokens: c,
            wire_bytes: 0,
            chars: 0,
        });
    }
    ledger.estimate(n);
    if n > 0 {
        ledger.record(n / 2, sum / 2 + 1, Some(model));
    }
    let state = SessionState {
        provider: provider.name().to_string(),
        model: Some(model.to_string()),
        text_encoding: None,
        track_wire: false,
        system: Some(system.to_string()),
        tools: vec![("t".into(), tool_text.to_string())],
        response_format: (!tool_text.is_empty())
            .then(|| ("r".into(), Some(system.to_string()), tool_text.to_string())),
        media_resolution: (n % 6) as u8,
        meta: String::new(),
        ledger: ledger.snapshot(),
    };
    let bytes = state.encode();
    let back = SessionState::decode(&bytes).expect("a state we wrote reads back");
    assert_eq!(back, state);
    let mut restored = Ledger::restore(back.ledger).expect("a state we wrote restores");
    assert_eq!(restored.estimate(n), ledger.estimate(n));
}

/// A well-formed agent history decoded from the bytes: the task, then assistant turns with
/// thinking (signed, redacted or none), text and tool calls, each answered by its results, in
/// one wire format (parts-based calls for Anthropic / Gemini / Bedrock, `tool_calls` and tool
/// messages for chat and Responses).
fn agent_history<'a>(src: &mut Src<'a>, format: WireFormat) -> Vec<Message<'a>> {
    const CALL_IDS: [&str; 24] = [
        "t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9", "t10", "t11", "t12", "t13",
        "t14", "t15", "t16", "t17", "t18", "t19", "t20", "t21", "t22", "t23",
    ];
    let wire = match format {
        WireFormat::Chat => Format::OpenAIChat,
        WireFormat::Responses => Format::OpenAIResponses,
        WireFormat::Anthropic => Format::Anthropic,
        WireFormat::Gemini => Format::Gemini,
        WireFormat::Bedrock => Format::Bedrock,
    };
    let parts_calls = matches!(
        format,
        WireFormat::Anthropic | WireFormat::Gemini | WireFormat::Bedrock
    );
    // (What a well-formed turn says is never blank: Anthropic refuses blank text.)
    let said = |src: &mut Src<'a>| {
        let t = src.str();
        if t.trim().is_empty() {
            "ok"
        } else {
            t
        }
    };
    let mut v = vec![Message::text("user", said(src))];
    let turns = usize::from(src.u8() % 12);
    let mut next = 0;
    for _ in 0..turns {
        let flags = src.u8();
        let mut a = Message::empty("assistant");
        let mut parts = Vec::new();
        match flags % 3 {
            0 => parts.push(Part::Thinking {
                text: Cow::Borrowed(src.str()),
                signature: src.str(),
            }),
            1 => parts.push(Part::EncryptedReasoning(src.str())),
            _ => {}
        }
        if flags & 4 != 0 {
            parts.push(Part::Text(Cow::Borrowed(said(src))));
        }
        let k = usize::from((flags >> 3) % 4).min(CALL_IDS.len() - next);
        let ids = &CALL_IDS[next..next + k];
        next += k;
        let calls: Vec<ToolCall<'a>> = ids
            .iter()
            .map(|&id| ToolCall {
                id,
                name: src.pick(&["bash", "memory", "read"]),
                arguments: Cow::Borrowed(src.pick(&[
                    "{\"cmd\":\"ls -la\"}",
                    "{}",
                    "{\"path\":\"a/b.py\",\"n\":3}",
                ])),
            })
            .collect();
        if parts_calls {
            parts.extend(calls.into_iter().map(Part::ToolUse));
        } else {
            a.tool_calls = calls;
        }
        if parts.is_empty() {
            parts.push(Part::Text(Cow::Borrowed("ok")));
        }
        a.content = Content::Parts(parts);
        v.push(a);
        if k == 0 {
            v.push(Message::text("user", said(src)));
            continue;
        }
        if parts_calls {
            let mut r = Message::empty("user");
            r.content = Content::Parts(
                ids.iter()
                    .map(|&id| Part::ToolResult {
                        tool_use_id: id,
                        is_error: false,
                        content: vec![Part::Text(Cow::Borrowed(src.str()))],
                        name: None,
                    })
                    .collect(),
            );
            v.push(r);
        } else {
            for &id in ids {
                let mut r = Message::empty("tool");
                r.tool_call_id = Some(id);
                r.content = Content::Text(Cow::Borrowed(src.str()));
                v.push(r);
            }
        }
    }
    for m in &mut v {
        m.wire = wire;
    }
    v
}

/// The compaction plan with every option drawn from the bytes, on a well-formed agent history
/// with thinking (or, one input in four, on an arbitrary decoded history): never a panic; the
/// plan partitions the history (head, kept + folded = the middle, tail); no mask edit touches
/// the protected head, the tail's edits stay in the tail; every edit names a message; and on a
/// well-formed history assembled with a summary of the planned size (no tail edits), the
/// check finds nothing but the budget.
pub fn compaction(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut src = Src { s: &text, at: 0 };
    let format = src.pick(&[
        WireFormat::Anthropic,
        WireFormat::Chat,
        WireFormat::Responses,
        WireFormat::Gemini,
        WireFormat::Bedrock,
    ]);
    let well_formed = !src.u8().is_multiple_of(4);
    let images = synthetic_images(64, 64);
    let msgs: Vec<Message<'_>> = if well_formed {
        agent_history(&mut src, format)
    } else {
        let n = usize::from(src.u8() % 24);
        (0..n).map(|_| message(&mut src, &images)).collect()
    };
    let n = msgs.len();
    let provider = match format {
        WireFormat::Anthropic | WireFormat::Bedrock => Provider::Anthropic,
        WireFormat::Gemini => Provider::Gemini,
        _ => Provider::OpenAI,
    };
    let est = Estimator::new(provider, "");
    let total: u64 = est.each(&msgs).iter().map(|&c| u64::from(c)).sum();
    let budget = match src.u8() % 4 {
        0 => total * u64::from(src.u8()) / 256,
        1 => u64::from(src.u8()) * 16,
        2 => u64::MAX >> (src.u8() % 64),
        _ => total / 2,
    };
    let mask = MaskOptions {
        tool_result_max_tokens: u32::from(src.u8()),
        arguments_max_chars: usize::from(src.u8()) * 8,
        prune_images: src.u8() & 1 == 0,
        dedupe: src.u8() & 1 == 0,
        cache_block_tokens: u64::from(src.u8()) * 16,
        keep_tool_uses: usize::from(src.u8() % 5),
        exclude_tools: if src.u8() & 1 == 0 {
            vec!["memory".into()]
        } else {
            Vec::new()
        },
        clear_tool_inputs: src.u8() & 1 == 0,
        keep_thinking_turns: match src.u8() % 4 {
            0 => None,
            k => Some(usize::from(k) - 1),
        },
        mask_observations: src.u8() & 1 == 0,
        recoverable: src.u8() & 1 == 0,
    };
    let protect_first_n = usize::from(src.u8() % 6);
    let pinned: Vec<usize> = (0..src.u8() % 3)
        .map(|_| usize::from(src.u8()) % (n + 2))
        .collect();
    let opt = PlanOptions {
        format,
        budget_tokens: budget,
        overhead_tokens: u64::from(src.u8()),
        tail_tokens: budget / u64::from(src.u8() % 4 + 1),
        summary_tokens: u64::from(src.u8()) * 8 + 1,
        protect_first_n,
        min_tail: usize::from(src.u8() % 5),
        soft_ceiling: src.pick(&[1.0, 1.5, 0.0, f64::NAN, f64::INFINITY]),
        pinned: pinned.clone(),
        mask,
        trusted_summaries: Vec::new(),
        summary_floor: u64::from(src.u8()) * 8,
        find_masks: src.u8() & 1 == 0,
        carried_whole: src.u8() & 1 == 0,
        masks_only: src.u8() & 1 == 0,
    };
    let p = compaction_plan(&msgs, &est, &opt);
    assert_eq!(p.costs.len(), n);
    assert!(
        p.head_end <= p.tail_start && p.tail_start <= n,
        "{} {} {n}",
        p.head_end,
        p.tail_start
    );
    let mut middle: Vec<usize> = p.kept.iter().chain(&p.folded).copied().collect();
    middle.sort_unstable();
    if !p.folded.is_empty() {
        assert_eq!(middle, (p.head_end..p.tail_start).collect::<Vec<_>>());
    }
    let head = protect_first_n.min(n);
    for e in &p.mask_edits {
        let i = e.edit.index();
        assert!(i < n, "mask edit of message {i} of {n}");
        assert!(
            i >= head,
            "mask edit {i} inside the protected head of {head}"
        );
        assert!(!pinned.contains(&i), "mask edit of pinned message {i}");
    }
    for e in &p.tail_edits {
        let i = e.edit.index();
        assert!(
            i >= p.tail_start && i < n,
            "tail edit {i} outside {}..{n}",
            p.tail_start
        );
    }
    if !well_formed || p.folded.is_empty() || !p.tail_edits.is_empty() {
        return;
    }
    // (Never empty and never ending in a space, as no summary is: Anthropic and Bedrock refuse
    // empty text, and a final assistant turn's text ending in whitespace.)
    let summary = "x ".repeat(
        (p.summary_tokens.min(4096) as usize)
            .saturating_sub(24)
            .max(1),
    ) + "x";
    let out = assemble(&msgs, &p, &summary);
    let v = verify(&out, format, &est, 0, None, &p.seams);
    let problems: Vec<_> = v
        .failures
        .iter()
        // A role collision at the summary's seam is what the planner's last resort gives when
        // neither neighbour can take the summary (a pinned message before it, a turn with
        // thinking after it); the Compactor's own check refuses it with a CompactionError, so
        // it never reaches a provider. Anything else is an invalid output.
        .filter(|f| !matches!(f.kind(), "over_budget" | "role_collision"))
        .collect();
    assert!(
        problems.is_empty(),
        "{problems:?} format {format:?} roles {:?} out {:?} head_end {} tail_start {} kept {:?} placement {:?} seams {:?} min_tail {} pinned {pinned:?}",
        msgs.iter().map(|m| seat(format, m)).collect::<Vec<_>>(),
        out.iter().map(|m| seat(format, m)).collect::<Vec<_>>(),
        p.head_end, p.tail_start, p.kept, p.placement, p.seams, opt.min_tail
    );
}
