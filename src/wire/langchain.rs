//! LangChain messages (`langchain_core.messages.BaseMessage` and subclasses): how one is read
//! by meaning, and how an edit is written back.
//!
//! A LangChain message is an object of bookkeeping around what a provider integration sends:
//! `additional_kwargs`, `response_metadata`, `id`, `usage_metadata`, `artifact`, `status` and
//! the `type` tag are never sent, so they are never priced. What is read, and how:
//! - `type` gives the role: `system` (or `additional_kwargs["__openai_role__"]`, LangChain's
//!   marker for `developer`), `human` -> `user`, `ai` -> `assistant`, `tool`, `function`,
//!   `chat` -> its `role`; the `...MessageChunk` types the same. A `RemoveMessage` (a LangGraph
//!   state instruction) or an unknown type is an error naming `type`.
//! - `name` when set and not empty, as OpenAI chat sends it.
//! - `content`: a string, or one part per block (so part positions are block positions, which
//!   the edits rely on). Blocks any wire format has (OpenAI `text` / `image_url`, Anthropic
//!   `image` / `thinking` / `tool_result`, ...) are read as the core reads them; LangChain's own
//!   standard blocks are mapped here: `image` / `audio` / `video` / `file` / `text-plain` with
//!   `base64`, `url`, `file_id` or a v0 `source_type`, `reasoning` (its text, as reasoning),
//!   a v1 `tool_call` block, and `non_standard` (its `value`, a provider block).
//! - An AI message's `tool_calls` `[{"name", "args", "id"}]`: each a call whose arguments are
//!   `json.dumps(args, ensure_ascii=False)`, the text LangChain's OpenAI integration and
//!   `convert_to_openai_messages` send, priced in the envelope of the provider asked for. A
//!   content block that repeats one of these calls (an Anthropic `tool_use`, a Responses
//!   `function_call`, a v1 `tool_call` with the same id) is not priced twice: the integrations
//!   send the call once. `invalid_tool_calls` are not priced (`convert_to_openai_messages`
//!   drops them too).
//! - A tool message's `tool_call_id`.
//! - The Gemini thought signatures langchain-google-genai keeps for an AI message's calls in
//!   `additional_kwargs["__gemini_function_call_thought_signatures__"]` (sent back with them).
//!
//! The reader is generic over [`Input`], so the bindings' Python objects and `cargo test`'s
//! JSON values are read by the same code; the bindings only recognise a LangChain object.
//!
//! An edit is written on the object's own fields: a tool result's text is `content`; an omitted
//! image becomes the block `{"type":"text","text":...}` at `content[i]`; shortened arguments are
//! the `args` *object* of `tool_calls[j]` (LangChain keeps them parsed; each provider
//! integration serializes them). Blocks the core reads as another format's (an Anthropic
//! `tool_use` block) are edited as that format writes them.

use std::borrow::Cow;

use super::anthropic;
use super::dialect::Dialect;
use super::edit::{CallAt, Change, Step, Written};
use super::fields::{
    borrowed_or_placeholder, image_source, invalid, opt_id, opt_str, PartReader, Reader,
};
use super::input::{Input, Key, ReadResult, Shape, Src};
use super::openai_chat;
use crate::message::{
    Content, Detail, Format, Image, MediaData, MediaKind, MediaPayload, Message, Part, Role,
    ThoughtSignatures, ToolCall,
};

/// Read one LangChain message by meaning (see the module docs).
// Only the bindings (and the tests) read LangChain objects.
#[cfg_attr(not(feature = "python"), allow(dead_code))]
pub(crate) fn read<'a, V: Input<'a>, D: PartReader>(
    m: &V,
    r: &Reader<D>,
) -> ReadResult<Message<'a>, V::Error> {
    let kind = opt_id(m, Key::kind, "type")?
        .ok_or_else(|| invalid("type", "missing: a LangChain message needs a type"))?;
    let role: &'a str = match kind {
        "human" | "HumanMessageChunk" => "user",
        "ai" | "AIMessageChunk" => "assistant",
        "system" | "SystemMessageChunk" => system_role(m)?,
        "tool" | "ToolMessageChunk" => "tool",
        "function" | "FunctionMessageChunk" => "function",
        "chat" | "ChatMessageChunk" => opt_id(m, Key::role, "role")?
            .ok_or_else(|| invalid("role", "missing: a ChatMessage needs a role"))?,
        "remove" => {
            return Err(invalid(
                "type",
                "a RemoveMessage removes a message from LangGraph state; it is never sent, \
                 drop it before pricing the history",
            ))
        }
        other => {
            return Err(invalid(
                "type",
                format!(
                    "unknown LangChain message type {other:?}; valid: system, human, ai, tool, \
                     function, chat (and their chunks)"
                ),
            ))
        }
    };
    let mut msg = Message::empty(role);
    msg.name = opt_id(m, Key::name, "name")?.filter(|n| !n.is_empty());
    let calls = if msg.role == Role::Assistant {
        tool_calls(m)?
    } else {
        Vec::new()
    };
    if let Some(c) = m.get(Key::content).src()? {
        msg.content = content(r, &c, &calls)?;
    }
    if kind == "tool" || kind == "ToolMessageChunk" {
        msg.tool_call_id = opt_id(m, Key::tool_call_id, "tool_call_id")?;
    }
    msg.tool_calls = calls;
    if msg.role == Role::Assistant {
        msg.thought_signatures = gemini_signatures(m)?;
    }
    msg.wire = Format::LangChain;
    Ok(msg)
}

/// `system`, or the role LangChain keeps in `additional_kwargs["__openai_role__"]`
/// (`developer`).
fn system_role<'a, V: Input<'a>>(m: &V) -> ReadResult<&'a str, V::Error> {
    let Some(kw) = m.get(Key::additional_kwargs).src()? else {
        return Ok("system");
    };
    Ok(opt_id(&kw, Key::openai_role, "additional_kwargs.__openai_role__")?.unwrap_or("system"))
}

/// The Gemini thought signatures langchain-google-genai keeps beside an AI message's calls
/// (`additional_kwargs["__gemini_function_call_thought_signatures__"]`: call id -> base64
/// signature, or raw bytes) and sends back with them: priced by their shape as the Gemini
/// reader prices `thoughtSignature`. Nothing else of `additional_kwargs` is read.
fn gemini_signatures<'a, V: Input<'a>>(m: &V) -> ReadResult<ThoughtSignatures, V::Error> {
    let mut out = ThoughtSignatures::default();
    let Some(kw) = m.get(Key::additional_kwargs).src()? else {
        return Ok(out);
    };
    let Some(map) = kw.get(Key::gemini_call_signatures).src()? else {
        return Ok(out);
    };
    for (_, v) in map.entries().src()?.unwrap_or_default() {
        if let Some(s) = v.str().src()? {
            out.add_base64(&s);
        } else if let Some(b) = v.bytes().src()? {
            out.add_bytes(b);
        }
    }
    Ok(out)
}

/// Python's default `json.dumps` separators (`", "`, `": "`) put into compact JSON text: a
/// space after every comma and colon outside strings.
fn spaced(compact: &str) -> String {
    let mut out = String::with_capacity(compact.len() + compact.len() / 8);
    let (mut in_string, mut escaped) = (false, false);
    for ch in compact.chars() {
        out.push(ch);
        if in_string {
            match ch {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else {
            match ch {
                '"' => in_string = true,
                ',' | ':' => out.push(' '),
                _ => {}
            }
        }
    }
    out
}

/// Tool-call arguments as LangChain's integrations send them: a string as is, anything else
/// `json.dumps(args, ensure_ascii=False)` (Python's default separators, non-ASCII kept).
fn arguments<'a, V: Input<'a>>(args: Option<V>) -> ReadResult<Cow<'a, str>, V::Error> {
    let Some(args) = args else {
        return Ok(Cow::Borrowed("{}"));
    };
    if let Some(s) = args.str().src()? {
        return Ok(s);
    }
    Ok(Cow::Owned(spaced(&args.json_text().src()?)))
}

/// An AI message's `tool_calls`.
fn tool_calls<'a, V: Input<'a>>(m: &V) -> ReadResult<Vec<ToolCall<'a>>, V::Error> {
    let Some(list) = m.get(Key::tool_calls).src()? else {
        return Ok(Vec::new());
    };
    let items = list
        .items()
        .src()?
        .ok_or_else(|| invalid("tool_calls", "expected a list"))?;
    let mut out = Vec::with_capacity(items.len());
    for (j, c) in items.iter().enumerate() {
        let id = opt_id(c, Key::id, format_args!("tool_calls[{j}].id"))?.unwrap_or("");
        let name = opt_id(c, Key::name, format_args!("tool_calls[{j}].name"))?
            .ok_or_else(|| invalid(format!("tool_calls[{j}].name"), "missing"))?;
        let arguments = arguments(c.get(Key::args).src()?)?;
        out.push(ToolCall {
            id,
            name,
            arguments,
        });
    }
    Ok(out)
}

/// `content`: a string or a list of blocks, one part per block.
fn content<'a, V: Input<'a>, D: PartReader>(
    r: &Reader<D>,
    c: &V,
    calls: &[ToolCall<'a>],
) -> ReadResult<Content<'a>, V::Error> {
    if let Some(s) = c.str().src()? {
        return Ok(Content::Text(s));
    }
    let Some(blocks) = c.items().src()? else {
        return Err(invalid(
            "content",
            format!(
                "expected a string or a list of content blocks, got {}",
                c.type_name()
            ),
        ));
    };
    let mut parts = Vec::with_capacity(blocks.len());
    for (j, b) in blocks.iter().enumerate() {
        parts.push(block(r, b, j, calls)?);
    }
    Ok(Content::Parts(parts))
}

// A block that repeats a call of `tool_calls`: the integrations send the call once.
const REPEATED_CALL: Part<'static> = Part::Text(Cow::Borrowed(""));

/// Whether a call of `calls` has this (non-empty) id.
fn repeats(calls: &[ToolCall<'_>], id: &str) -> bool {
    !id.is_empty() && calls.iter().any(|c| c.id == id)
}

/// One content block.
fn block<'a, V: Input<'a>, D: PartReader>(
    r: &Reader<D>,
    b: &V,
    j: usize,
    calls: &[ToolCall<'a>],
) -> ReadResult<Part<'a>, V::Error> {
    let path = format!("content[{j}]");
    if b.shape() == Shape::Str {
        return r.part(b, &path);
    }
    let kind = match b.get(Key::kind).src()? {
        Some(k) => match k.str().src()? {
            Some(s) => s.into_owned(),
            None => return r.part(b, &path),
        },
        None => return r.part(b, &path),
    };
    let has = |k: Key| -> ReadResult<bool, V::Error> { Ok(b.get(k).src()?.is_some()) };
    match kind.as_str() {
        "image" | "audio" | "video" | "file" | "text-plain"
            if !has(Key::source)?
                && (has(Key::base64)?
                    || has(Key::url)?
                    || has(Key::file_id)?
                    || has(Key::source_type)?
                    || (kind == "text-plain" && has(Key::text)?)) =>
        {
            data_block(b, &kind, j)
        }
        "reasoning" => reasoning(b, j),
        "tool_call" => {
            let id = opt_id(b, Key::id, format_args!("{path}.id"))?.unwrap_or("");
            if repeats(calls, id) {
                return Ok(REPEATED_CALL);
            }
            let name = opt_id(b, Key::name, format_args!("{path}.name"))?.unwrap_or("");
            Ok(Part::ToolUse(ToolCall {
                id,
                name,
                arguments: arguments(b.get(Key::args).src()?)?,
            }))
        }
        "tool_use" | "function_call" => {
            let key = if kind == "tool_use" {
                Key::id
            } else {
                Key::call_id
            };
            match opt_id(b, key, format_args!("{path}.id"))? {
                Some(id) if repeats(calls, id) => Ok(REPEATED_CALL),
                _ => r.part(b, &path),
            }
        }
        "non_standard" => match b.get(Key::value).src()? {
            Some(v) if v.shape() == Shape::Map => r.part(&v, &path),
            _ => r.part(b, &path),
        },
        _ => r.part(b, &path),
    }
}

/// A LangChain standard data block (v1 `base64` / `url` / `file_id`, v0 `source_type`).
fn data_block<'a, V: Input<'a>>(b: &V, kind: &str, j: usize) -> ReadResult<Part<'a>, V::Error> {
    let path = |k: &str| format!("content[{j}].{k}");
    let source_type = opt_id(b, Key::source_type, path("source_type"))?;
    let text = opt_str(b, Key::text, path("text"))?;
    if let (Some(t), "text-plain" | "file") = (&text, kind) {
        if kind == "text-plain" || source_type == Some("text") {
            return Ok(Part::Text(t.clone()));
        }
    }
    // Inline data: v1 `base64`, v0 `data` with `source_type: "base64"`.
    let base64 = match opt_str(b, Key::base64, path("base64"))? {
        Some(s) => Some(s),
        None if source_type == Some("base64") => opt_str(b, Key::data, path("data"))?,
        None => None,
    };
    let url = opt_str(b, Key::url, path("url"))?;
    if kind == "image" {
        if let Some(source) = base64.clone().or(url) {
            return Ok(Part::Image(Image {
                source: image_source(source),
                detail: Detail::Auto,
            }));
        }
    }
    let mime = opt_str(b, Key::mime_type, path("mime_type"))?;
    let media = match mime.as_deref().map(MediaKind::from_mime) {
        Some(m) if m != MediaKind::Unknown => m,
        _ => match kind {
            "image" => MediaKind::Image,
            "audio" => MediaKind::Audio,
            "video" => MediaKind::Video,
            "text-plain" => MediaKind::Text,
            _ => MediaKind::Document,
        },
    };
    // Its pages or seconds from its header, as the same bytes in a chat part are priced
    // (`fields::opaque`): none, a three-page PDF was priced by its size, 5 pages.
    let units = base64
        .as_deref()
        .and_then(|t| crate::media_header::units_of(media, t))
        .map(|u| u.ceil().clamp(1.0, f64::from(u32::MAX)) as u32);
    let payload_chars = base64.as_ref().map(|s| s.len());
    // (A document's bytes kept for a recoverable fold, as `fields::opaque` keeps them.)
    let payload = base64.filter(|_| media == MediaKind::Document).map(|t| {
        Box::new(MediaPayload {
            data: MediaData::Base64(t),
            mime: mime.map(Cow::into_owned),
        })
    });
    Ok(Part::Opaque {
        kind: Cow::Owned(kind.to_string()),
        media,
        payload_chars,
        wire_chars: b.json_len().src()?,
        units,
        text: None,
        payload,
    })
}

/// A `reasoning` block: its `reasoning` text (v1) or its `summary` texts (the Responses
/// shape LangChain's OpenAI integration stores), priced as reasoning; an `encrypted_content`
/// as the opaque data it is.
fn reasoning<'a, V: Input<'a>>(b: &V, j: usize) -> ReadResult<Part<'a>, V::Error> {
    let path = |k: &str| format!("content[{j}].{k}");
    let mut text = opt_str(b, Key::reasoning, path("reasoning"))?;
    if text.is_none() {
        if let Some(summary) = b.get(Key::summary).src()? {
            let mut joined = String::new();
            for s in summary.items().src()?.unwrap_or_default() {
                if let Some(t) = opt_str(&s, Key::text, path("summary.text"))? {
                    joined.push_str(&t);
                }
            }
            text = Some(Cow::Owned(joined));
        }
    }
    let signature = opt_str(b, Key::encrypted_content, path("encrypted_content"))?
        .map(borrowed_or_placeholder)
        .unwrap_or("");
    Ok(Part::Thinking {
        text: text.unwrap_or(Cow::Borrowed("")),
        signature,
    })
}

/// An edit of a LangChain message.
pub(crate) fn write(msg: &Message<'_>, change: &Change) -> Option<Written> {
    match change {
        Change::Arguments {
            call: CallAt::ToolCalls(j),
            json,
        } => {
            let old = msg.tool_calls.get(*j)?;
            // The view's text is the arguments as LangChain's integrations serialize the
            // object; the replacement stays an object of the same root type.
            if !(old.arguments.starts_with('{') && json.starts_with('{')) {
                return None;
            }
            (json.len() < old.arguments.len()).then(|| {
                (
                    vec![Step::Key("tool_calls"), Step::Index(*j), Step::Key("args")],
                    json.clone(),
                )
            })
        }
        // A tool_use or tool result block (Anthropic style) inside a LangChain message's
        // content: edited as Anthropic writes it.
        Change::Arguments {
            call: CallAt::Part(_),
            ..
        }
        | Change::ResultText { part: Some(_), .. }
        | Change::ResultPartText { .. } => anthropic::write(msg, change),
        // Text, tool-result text and images sit where OpenAI chat keeps them (`content`,
        // `content[i]` with an OpenAI-style text block), which LangChain reads as is.
        _ => openai_chat::write(msg, change),
    }
}

/// LangChain messages: written as chat (their content blocks are chat's), edited on the
/// objects' own fields.
pub const DIALECT: Dialect = Dialect {
    write,
    ..openai_chat::DIALECT
};

#[cfg(test)]
mod reader_tests {
    use serde_json::{json, Value};

    use super::read;
    use crate::message::{Content, MediaKind, Part, Role};
    use crate::wire::read::Reader;

    fn read_value(v: &Value) -> Result<crate::message::Message<'_>, String> {
        read(&v, &Reader::new()).map_err(|e| format!("{e:?}"))
    }

    #[test]
    fn types_give_roles_and_developer_keeps_its_marker() {
        for (kind, role) in [
            ("human", Role::User),
            ("ai", Role::Assistant),
            ("tool", Role::Tool),
        ] {
            let v = json!({"type": kind, "content": "hi", "tool_call_id": "c1"});
            assert_eq!(read_value(&v).unwrap().role, role);
        }
        let dev = json!({"type": "system", "content": "rules",
                         "additional_kwargs": {"__openai_role__": "developer"}});
        assert_eq!(read_value(&dev).unwrap().role_str, "developer");
        let chat = json!({"type": "chat", "role": "critic", "content": "no"});
        assert_eq!(read_value(&chat).unwrap().role_str, "critic");
    }

    #[test]
    fn bookkeeping_is_never_read_and_remove_is_an_error() {
        let v = json!({"type": "human", "content": "x", "id": "run-1",
                       "response_metadata": {"big": "y".repeat(1000)}});
        let m = read_value(&v).unwrap();
        assert_eq!(m.content, Content::Text("x".into()));
        let e = read_value(&json!({"type": "remove", "id": "m1"})).unwrap_err();
        assert!(e.contains("RemoveMessage"), "{e}");
        let e = read_value(&json!({"type": "robot", "content": "x"})).unwrap_err();
        assert!(e.contains("unknown LangChain message type"), "{e}");
    }

    #[test]
    fn call_arguments_are_json_dumps_with_python_separators() {
        let v = json!({"type": "ai", "content": "",
                       "tool_calls": [{"name": "book", "id": "c1",
                                       "args": {"ids": [1, 2], "note": "a, b: c"}}]});
        let m = read_value(&v).unwrap();
        assert_eq!(m.tool_calls.len(), 1);
        assert_eq!(
            m.tool_calls[0].arguments,
            r#"{"ids": [1, 2], "note": "a, b: c"}"#
        );
        let s = json!({"type": "ai", "content": "",
                       "tool_calls": [{"name": "f", "id": "c2", "args": "{\"raw\":1}"}]});
        assert_eq!(
            read_value(&s).unwrap().tool_calls[0].arguments,
            r#"{"raw":1}"#
        );
    }

    #[test]
    fn a_block_repeating_a_call_is_not_read_twice() {
        let v = json!({"type": "ai",
                       "content": [{"type": "text", "text": "ok"},
                                   {"type": "tool_use", "id": "c1", "name": "f", "input": {}}],
                       "tool_calls": [{"name": "f", "id": "c1", "args": {}}]});
        let m = read_value(&v).unwrap();
        let Content::Parts(ps) = &m.content else {
            panic!()
        };
        assert_eq!(ps[1], Part::Text("".into()));
        assert_eq!(m.tool_calls.len(), 1);
    }

    #[test]
    fn standard_blocks_map_to_parts() {
        let v = json!({"type": "human", "content": [
            {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"},
            {"type": "audio", "base64": "AAAA", "mime_type": "audio/wav"},
            {"type": "reasoning", "summary": [{"text": "thought "}, {"text": "more"}]},
            {"type": "text-plain", "text": "file body", "mime_type": "text/plain"},
        ]});
        let m = read_value(&v).unwrap();
        let Content::Parts(ps) = &m.content else {
            panic!()
        };
        assert!(matches!(ps[0], Part::Image(_)));
        assert!(matches!(
            ps[1],
            Part::Opaque {
                media: MediaKind::Audio,
                payload_chars: Some(4),
                ..
            }
        ));
        assert!(matches!(&ps[2], Part::Thinking { text, .. } if text == "thought more"));
        assert_eq!(ps[3], Part::Text("file body".into()));
    }

    #[test]
    fn gemini_signatures_beside_calls_are_priced() {
        let v = json!({"type": "ai", "content": "",
                       "tool_calls": [{"name": "f", "id": "c1", "args": {}}],
                       "additional_kwargs": {"__gemini_function_call_thought_signatures__":
                                             {"c1": "EqQBCkYIBxgC"}}});
        let m = read_value(&v).unwrap();
        assert_eq!(m.thought_signatures.field2_chars, 12);
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::message::{Content, ToolCall};
    use crate::wire::Format;

    fn ai_call(arguments: &str) -> Message<'_> {
        let mut m = Message::empty("assistant");
        m.tool_calls.push(ToolCall {
            id: "call_1",
            name: "write",
            arguments: Cow::Borrowed(arguments),
        });
        m.wire = Format::LangChain;
        m
    }

    #[test]
    fn shortened_arguments_are_the_args_object_of_the_call() {
        let long = format!("{{\"path\": \"/a\", \"body\": \"{}\"}}", "x".repeat(500));
        let m = ai_call(&long);
        let change = Change::Arguments {
            call: CallAt::ToolCalls(0),
            json: r#"{"body":"xx…","path":"/a"}"#.to_string(),
        };
        let (path, value) = write(&m, &change).unwrap();
        assert_eq!(
            path,
            vec![Step::Key("tool_calls"), Step::Index(0), Step::Key("args")]
        );
        assert_eq!(value, r#"{"body":"xx…","path":"/a"}"#);
        // Never a bigger value, never a change of root type, never a call that is not there.
        let bigger = Change::Arguments {
            call: CallAt::ToolCalls(0),
            json: format!("{{\"b\":\"{}\"}}", "y".repeat(600)),
        };
        assert!(write(&m, &bigger).is_none());
        let list = Change::Arguments {
            call: CallAt::ToolCalls(0),
            json: "[1]".to_string(),
        };
        assert!(write(&m, &list).is_none());
        let absent = Change::Arguments {
            call: CallAt::ToolCalls(1),
            json: "{}".to_string(),
        };
        assert!(write(&m, &absent).is_none());
    }

    #[test]
    fn a_tool_result_is_the_content_string() {
        let mut m = Message::empty("tool");
        m.tool_call_id = Some("call_1");
        m.content = Content::Text(Cow::Borrowed("a long listing of many files"));
        m.wire = Format::LangChain;
        let change = Change::ResultText {
            part: None,
            text: "[pruned]".into(),
        };
        let (path, value) = write(&m, &change).unwrap();
        assert_eq!(path, vec![Step::Key("content")]);
        assert_eq!(value, r#""[pruned]""#);
    }
}
