//! Anthropic Messages: content blocks `text`, `image`, `tool_use`, `tool_result`, `thinking`,
//! `redacted_thinking` (and the server / MCP tool blocks).
//!
//! Detection: one of those block types. Edits
//! (https://docs.anthropic.com/en/api/messages, content block types): a tool result's text is
//! the `tool_result` block's `content` (a string is accepted there); an omitted image becomes
//! `{"type":"text","text":...}`; shortened arguments stay a JSON *object* at the `tool_use`
//! block's `input`.

use std::borrow::Cow;

use super::dialect::{BlankText, CallIdRule, Dialect};
use super::edit::{
    content_text_block, if_smaller, if_smaller_parts, image_replaced, json_string, object_of,
    plain_text, result_block_text, CallAt, Change, Step, Written,
};
use super::fields::{
    image_data, invalid, json_or_str, opaque, opt_id, opt_str, search_result_text, with_text,
    PartReader, Reader,
};
use super::input::{Input, Key, ReadResult, Shape, Src};
use super::request_body::{
    cache_breakpoints, history_list, list_items, opt_u64, tool_choice, Api, Body, McpServer,
    Thinking,
};
use super::wire_format::WireFormat;
use super::Format;
use crate::message::{Detail, Image, ImageSource, Message, Part, ToolCall};
use crate::recall::RecalledSource;

/// `{"type":"image","source":{"type":"base64","media_type","data"} | {"type":"url","url"} |
/// {"type":"file","file_id"}}`.
fn image<'a, V: Input<'a>>(p: &V, path: &str) -> ReadResult<Part<'a>, V::Error> {
    let spath = format!("{path}.source");
    let src = p
        .get(Key::source)
        .src()?
        .ok_or_else(|| invalid(spath.as_str(), "missing"))?;
    let source = match opt_id(&src, Key::kind, format_args!("{spath}.type"))? {
        Some("base64") => match src.get(Key::data).src()? {
            Some(d) => image_data(&d)?
                .ok_or_else(|| invalid(format!("{spath}.data"), "expected base64 text or bytes"))?,
            None => return Err(invalid(format!("{spath}.data"), "missing")),
        },
        Some("url") => {
            ImageSource::Url(opt_id(&src, Key::url, format_args!("{spath}.url"))?.unwrap_or(""))
        }
        // Files API: `{"type":"file","file_id"}`
        // (https://docs.anthropic.com/en/docs/build-with-claude/files).
        Some("file") => ImageSource::File(
            opt_id(&src, Key::file_id, format_args!("{spath}.file_id"))?.unwrap_or(""),
        ),
        _ => ImageSource::Url(""),
    };
    Ok(Part::Image(Image {
        source,
        detail: Detail::Auto,
    }))
}

/// What a code execution run returned (`code_execution_tool_result`,
/// `bash_code_execution_tool_result`: `{stdout, stderr, return_code}`, or an error with its
/// `error_code`, https://docs.claude.com/en/docs/agents-and-tools/tool-use/code-execution-tool):
/// its output as text and whether it failed. Read as text, the summary shows what the run
/// printed (the answer of a programmatic tool-calling run is its stdout) and the run is priced
/// as what it printed; the message is then never edited (`Reader::frozen`), since the block's
/// content must stay an object. None for any other block or shape.
fn code_run<'a, V: Input<'a>, D: PartReader>(
    r: &Reader<D>,
    kind: &str,
    p: &V,
    path: &str,
) -> ReadResult<Option<(String, bool)>, V::Error> {
    if !matches!(
        kind,
        "code_execution_tool_result" | "bash_code_execution_tool_result"
    ) {
        return Ok(None);
    }
    let Some(c) = p.get(Key::content).src()? else {
        return Ok(None);
    };
    if !matches!(c.shape(), Shape::Map | Shape::Object) {
        return Ok(None);
    }
    let cpath = format!("{path}.content");
    if let Some(code) = opt_id(&c, Key::error_code, format_args!("{cpath}.error_code"))? {
        r.frozen.set(true);
        return Ok(Some((format!("error: {code}"), true)));
    }
    let stdout = opt_str(&c, Key::stdout, format_args!("{cpath}.stdout"))?;
    let stderr = opt_str(&c, Key::stderr, format_args!("{cpath}.stderr"))?;
    let code = match c.get(Key::return_code).src()? {
        Some(v) if v.shape() == Shape::Number => Some(v.json_text().src()?),
        _ => None,
    };
    if stdout.is_none() && stderr.is_none() && code.is_none() {
        return Ok(None);
    }
    r.frozen.set(true);
    let mut text = String::new();
    for s in [stdout, stderr].into_iter().flatten() {
        let s = s.trim_end_matches('\n');
        if !s.is_empty() {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(s);
        }
    }
    let failed = code.as_deref().is_some_and(|c| c != "0");
    if failed {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!("[exit code {}]", code.as_deref().unwrap_or("?")));
    }
    Ok(Some((text, failed)))
}

/// What a server tool's structured result says: its `content` or `text` when a string.
fn said_by<'a, V: Input<'a>>(c: &V) -> ReadResult<Option<String>, V::Error> {
    if !matches!(c.shape(), Shape::Map | Shape::Object) {
        return Ok(None);
    }
    for key in [Key::content, Key::text] {
        if let Some(s) = c
            .get(key)
            .src()?
            .map(|v| v.str())
            .transpose()
            .src()?
            .flatten()
        {
            return Ok(Some(s.into_owned()));
        }
    }
    Ok(None)
}

/// The Anthropic block types.
pub(crate) fn typed_part<'a, V: Input<'a>, D: PartReader>(
    r: &Reader<D>,
    kind: &'a str,
    p: &V,
    path: &str,
) -> ReadResult<Option<Part<'a>>, V::Error> {
    Ok(Some(match kind {
        "image" => {
            r.saw(Format::Anthropic);
            image(p, path)?
        }
        "tool_use" | "server_tool_use" | "mcp_tool_use" => {
            r.saw(Format::Anthropic);
            let id = opt_id(p, Key::id, format_args!("{path}.id"))?.unwrap_or("");
            let name = opt_id(p, Key::name, format_args!("{path}.name"))?.unwrap_or("");
            let arguments = match p.get(Key::input).src()? {
                Some(i) => json_or_str(&i, format_args!("{path}.input"))?,
                None => Cow::Borrowed("{}"),
            };
            Part::ToolUse(ToolCall {
                id,
                name,
                arguments,
            })
        }
        k if k == "tool_result" || k.ends_with("_tool_result") => {
            r.saw(Format::Anthropic);
            let tool_use_id =
                opt_id(p, Key::tool_use_id, format_args!("{path}.tool_use_id"))?.unwrap_or("");
            if let Some(run) = code_run(r, kind, p, path)? {
                return Ok(Some(Part::ToolResult {
                    tool_use_id,
                    content: vec![Part::Text(Cow::Owned(run.0))],
                    is_error: run.1,
                    name: None,
                }));
            }
            let content = match p.get(Key::content).src()? {
                None => Vec::new(),
                Some(c) if matches!(c.shape(), Shape::Str | Shape::List) => {
                    r.nested_parts(&c, &format!("{path}.content"))?
                }
                // Server tool results carry structured objects: priced by their JSON, and not
                // text, so never replaced by a text. What one says (a file a text editor
                // viewed, an advisor's answer: its `content` or `text`) is kept for the summary.
                Some(c) => vec![with_text(opaque(kind, &c)?, said_by(&c)?)],
            };
            // (`is_error` is a boolean; anything else says nothing.)
            let is_error = match p.get(Key::is_error).src()? {
                Some(v) if v.shape() == Shape::Bool => v.json_text().src()? == "true",
                _ => false,
            };
            Part::ToolResult {
                tool_use_id,
                content,
                is_error,
                name: None,
            }
        }
        "thinking" => {
            r.saw(Format::Anthropic);
            Part::Thinking {
                text: r.thinking_text(p, path)?,
                signature: opt_id(p, Key::signature, format_args!("{path}.signature"))?
                    .unwrap_or(""),
            }
        }
        // A document block (PDF, text; by base64, URL or file id) is Anthropic's alone;
        // priced as media, unless it carries its content inline.
        "document" => {
            r.saw(Format::Anthropic);
            match content_document(r, p, path)? {
                Some(part) => part,
                None => opaque(kind, p)?,
            }
        }
        // A search result (RAG, https://docs.claude.com/en/docs/build-with-claude/search-results):
        // priced by its JSON, never edited, its title, source and text kept for the summary.
        "search_result" => {
            r.saw(Format::Anthropic);
            with_text(opaque(kind, p)?, search_result_text(p, path)?)
        }
        "redacted_thinking" => {
            r.saw(Format::Anthropic);
            Part::EncryptedReasoning(
                opt_id(p, Key::data, format_args!("{path}.data"))?.unwrap_or(""),
            )
        }
        _ => return Ok(None),
    }))
}

/// A custom content document, `{"type":"document","source":{"type":"content","content": str |
/// [text or image blocks]}}` (citations' own chunks,
/// https://docs.claude.com/en/docs/build-with-claude/citations): its content is inline, so it is
/// priced as what it holds, not as pages of a file. One block stands for itself (a text, an
/// image); several become their texts joined, one part for the one wire block (edits address
/// blocks by position), so the images among several blocks are not priced. None for any other
/// source.
fn content_document<'a, V: Input<'a>, D: PartReader>(
    r: &Reader<D>,
    p: &V,
    path: &str,
) -> ReadResult<Option<Part<'a>>, V::Error> {
    let Some(src) = p.get(Key::source).src()? else {
        return Ok(None);
    };
    let spath = format!("{path}.source");
    if opt_id(&src, Key::kind, format_args!("{spath}.type"))? != Some("content") {
        return Ok(None);
    }
    let Some(content) = src.get(Key::content).src()? else {
        return Ok(None);
    };
    let mut parts = r.nested_parts(&content, &format!("{spath}.content"))?;
    if parts.len() == 1 {
        return Ok(parts.pop());
    }
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|part| match part {
            Part::Text(t) => Some(t.as_ref()),
            _ => None,
        })
        .collect();
    Ok(Some(Part::Text(Cow::Owned(texts.join("\n")))))
}

/// An edit of an Anthropic message.
pub(crate) fn write(msg: &Message<'_>, change: &Change) -> Option<Written> {
    match change {
        Change::ResultText {
            part: Some(k),
            text,
        } => {
            let Part::ToolResult { content, .. } = msg.parts().get(*k)? else {
                return None;
            };
            if_smaller_parts(
                content,
                vec![Step::Key("content"), Step::Index(*k), Step::Key("content")],
                json_string(text),
            )
        }
        Change::ResultPartText { part, inner, text } => {
            result_block_text(msg, (*part, *inner), None, text)
        }
        Change::Text { text } => plain_text(msg, "content", text, None),
        Change::PartText { part, text } => content_text_block(msg, *part, text),
        Change::Image { part, text } => image_replaced(
            msg,
            *part,
            vec![Step::Key("content"), Step::Index(*part)],
            text_block_json(text),
        ),
        Change::Arguments {
            call: CallAt::Part(k),
            json,
        } => object_arguments(
            msg,
            *k,
            json,
            vec![Step::Key("content"), Step::Index(*k), Step::Key("input")],
        ),
        _ => None,
    }
}

/// Shortened arguments of the tool-call block at `k`, written as an object: only when the
/// original was an object (its compact JSON is the view's text) and the new one is smaller.
pub(crate) fn object_arguments(
    msg: &Message<'_>,
    k: usize,
    json: &str,
    path: Vec<Step>,
) -> Option<Written> {
    let Part::ToolUse(c) = msg.parts().get(k)? else {
        return None;
    };
    if !(c.arguments.starts_with('{') && json.starts_with('{')) {
        return None;
    }
    if_smaller(c.arguments.len(), path, json.to_string())
}

/// A text message, `{"role", "content": text}` (Messages takes a plain string as one text
/// block), as compact JSON.
pub(crate) fn text_message_json(role: &str, text: &str) -> String {
    super::openai_chat::text_message_json(role, text)
}

/// A text block, `{"type": "text", "text"}`, as compact JSON.
pub(crate) fn text_block_json(text: &str) -> String {
    super::openai_chat::text_block_json(text)
}

/// A client tool of the Messages tool list, `{"name", "description", "input_schema"}`
/// (https://docs.anthropic.com/en/api/messages#body-tools), as compact JSON; `schema` is
/// compact JSON.
pub(crate) fn tool_declaration_json(name: &str, description: &str, schema: &str) -> String {
    let mut s = String::from("{\"name\":");
    s.push_str(&json_string(name));
    s.push_str(",\"description\":");
    s.push_str(&json_string(description));
    s.push_str(",\"input_schema\":");
    s.push_str(schema);
    s.push('}');
    s
}

/// The user message answering `tool_use` block `call_id` with `text` (one `tool_result`
/// block), as compact JSON.
pub(crate) fn tool_result_json(call_id: &str, text: &str) -> String {
    let block = object_of(&[
        ("type", "tool_result"),
        ("tool_use_id", call_id),
        ("content", text),
    ]);
    format!("{{\"role\":\"user\",\"content\":[{block}]}}")
}

/// The user message answering `call_id` with `text` and `images` in one `tool_result` block
/// (a `tool_result`'s content takes text, image and document blocks), as compact JSON.
pub(crate) fn tool_result_with_images_json(
    call_id: &str,
    text: &str,
    images: &[RecalledSource<'_>],
) -> Option<String> {
    let mut content = vec![object_of(&[("type", "text"), ("text", text)])];
    for img in images {
        let (block, source) = match *img {
            RecalledSource::Base64 { media_type, data } => (
                "image",
                object_of(&[
                    ("type", "base64"),
                    ("media_type", media_type),
                    ("data", data),
                ]),
            ),
            RecalledSource::Url(u) => ("image", object_of(&[("type", "url"), ("url", u)])),
            RecalledSource::File(f) => ("image", object_of(&[("type", "file"), ("file_id", f)])),
            // A `tool_result` may hold `document` blocks (ToolResultBlockParam's content
            // union); a base64 document source is a PDF's alone (Base64PDFSource's media_type).
            RecalledSource::Document { media_type, data } => {
                if media_type != "application/pdf" {
                    return None;
                }
                (
                    "document",
                    object_of(&[
                        ("type", "base64"),
                        ("media_type", media_type),
                        ("data", data),
                    ]),
                )
            }
        };
        content.push(format!("{{\"type\":\"{block}\",\"source\":{source}}}"));
    }
    Some(format!(
        "{{\"role\":\"user\",\"content\":[{{\"type\":\"tool_result\",\"tool_use_id\":{},\"content\":[{}]}}]}}",
        json_string(call_id),
        content.join(",")
    ))
}

/// Where the id of the `tool_use` block at `at` sits (repair renames duplicates there).
pub(crate) fn call_id_path(at: CallAt) -> Option<Vec<Step>> {
    match at {
        CallAt::Part(k) => Some(vec![Step::Key("content"), Step::Index(k), Step::Key("id")]),
        CallAt::ToolCalls(_) => None,
    }
}

/// Where the `tool_result` block at `part` names its call.
pub(crate) fn result_id_path(part: Option<usize>) -> Option<Vec<Step>> {
    part.map(|k| {
        vec![
            Step::Key("content"),
            Step::Index(k),
            Step::Key("tool_use_id"),
        ]
    })
}

/// A `tool_result` block marked as an error (`is_error`), saying `text`, as compact JSON.
pub(crate) fn error_result_block_json(call_id: &str, text: &str) -> String {
    let block = object_of(&[
        ("type", "tool_result"),
        ("tool_use_id", call_id),
        ("content", text),
    ]);
    format!("{},\"is_error\":true}}", &block[..block.len() - 1])
}

/// Anthropic Messages (the system prompt apart).
pub const DIALECT: Dialect = Dialect {
    wire: WireFormat::Anthropic,
    history_key: "messages",
    content_key: "content",
    assistant_role: "assistant",
    strict_turns: true,
    thinking_in_content: true,
    text_message: text_message_json,
    text_block: |_, text| text_block_json(text),
    write,
    // "messages.1.content.1.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'" (the
    // API's own refusal, reported by agents that carried ids over from other providers:
    // https://github.com/RooCodeInc/Roo-Code/pull/10649, https://github.com/HKUDS/nanobot/pull/4356).
    call_id: CallIdRule {
        word_chars_only: true,
        max_chars: None,
    },
    // "messages: text content blocks must be non-empty" and "... must contain non-whitespace
    // text", and "messages.0: all messages must have non-empty content except for the optional
    // final assistant message" for a `content: ""` (the API's own refusals, reported by agents
    // that sent an empty tool output or model answer back:
    // https://github.com/anthropics/claude-code/issues/23440,
    // https://github.com/anthropics/claude-code/issues/6774,
    // https://github.com/crewAIInc/crewAI/pull/4429). No recorded Messages request sends one.
    blank_text: BlankText::Whitespace,
    // (The Messages API joins two turns of one role itself.)
    refuses_same_role: false,
    // "messages: final assistant content cannot end with trailing whitespace"
    // (https://github.com/tailcallhq/forgecode/issues/1872,
    // https://github.com/GCWing/OpenBitFun/pull/825).
    refuses_prefill_trailing_space: true,
    refuses_assistant_before_system: false,
    refuses_user_after_tool: false,
};
/// A Messages API body: `messages`, `system` (a string or text blocks), `tools` (client and
/// server tools), `output_format` (or `output_config.format`), `thinking`, `tool_choice`,
/// `mcp_servers`, `cache_control` breakpoints.
pub(crate) fn body<'a, V: Input<'a>>(b: &V) -> ReadResult<Body<'a, V>, V::Error> {
    let mut out = Body::new(Api::Anthropic, history_list(b, Key::messages)?);
    out.system = b.get(Key::system).src()?;
    out.tools = list_items(b.get(Key::tools).src()?, "tools")?;
    out.response_format = match b.get(Key::output_format).src()? {
        Some(f) => Some(f),
        None => match b.get(Key::output_config).src()? {
            Some(c) => c.get(Key::format).src()?,
            None => None,
        },
    };
    if let Some(t) = b.get(Key::thinking).src()? {
        out.settings.thinking = match opt_id(&t, Key::kind, "thinking.type")? {
            Some("enabled") => Thinking::Enabled {
                budget: opt_u64(&t, Key::budget_tokens, "thinking")?,
            },
            Some("adaptive") => Thinking::Adaptive,
            _ => Thinking::Off,
        };
    }
    out.settings.tool_choice = tool_choice(b, Key::tool_choice)?;
    for (j, s) in list_items(b.get(Key::mcp_servers).src()?, "mcp_servers")?
        .iter()
        .enumerate()
    {
        let field = |k: Key| -> ReadResult<String, V::Error> {
            Ok(
                super::fields::opt_str(s, k, format_args!("mcp_servers[{j}].{}", k.as_str()))?
                    .map(Cow::into_owned)
                    .unwrap_or_default(),
            )
        };
        out.settings.mcp_servers.push(McpServer {
            name: field(Key::name)?,
            url: field(Key::url)?,
        });
    }
    out.settings.cache_breakpoints = cache_breakpoints(b, out.system.as_ref(), &out.tools)?;
    Ok(out)
}
