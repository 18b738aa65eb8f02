//! Bedrock Converse messages: `{"role", "content": [...]}` with blocks keyed by their kind:
//! `text`, `image`, `toolUse`, `toolResult`, `document`, `video`, `json` (inside results).
//!
//! Detection: a `toolUse` / `toolResult` / `image` block. Edits
//! (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ContentBlock.html): a
//! tool result's text is the `toolResult.content` list, replaced by `[{"text": ...}]`
//! (`ToolResultContentBlock`); an omitted image becomes `{"text": ...}`; shortened arguments
//! stay a JSON *object* at `toolUse.input`.

use std::borrow::Cow;

use super::anthropic::object_arguments;
use super::dialect::{BlankText, CallIdRule, Dialect};
use super::edit::role_and_text_list;
use super::edit::{
    content_text_block, if_smaller_parts, image_replaced, object_of, one_text_part, plain_text,
    result_block_text, CallAt, Change, Step, Written,
};
use super::fields::{
    content_texts, image_data, image_source, json_or_str, opaque, opt_id, search_result_text,
    with_text, PartReader, Reader,
};
use super::input::{Input, Key, ReadResult, Src};
use super::request_body::{history_list, list_items, opt_u64, Api, Body, Thinking, ToolChoice};
use super::wire_format::WireFormat;
use super::Format;
use crate::message::{Detail, Image, ImageSource, Message, Part, ToolCall};
use crate::recall::RecalledSource;

/// A Bedrock block, or `None` when `p` has none of Bedrock's block keys.
pub(crate) fn keyed_part<'a, V: Input<'a>, D: PartReader>(
    r: &Reader<D>,
    p: &V,
    path: &str,
) -> ReadResult<Option<Part<'a>>, V::Error> {
    if let Some(img) = p.get(Key::image).src()? {
        r.saw(Format::Bedrock);
        // `source`: `{"bytes"}` or `{"s3Location": {"uri"}}` (ImageSource in the API reference).
        let (bytes, s3) = match img.get(Key::source).src()? {
            Some(src) => (src.get(Key::bytes).src()?, src.get(Key::s3Location).src()?),
            None => (None, None),
        };
        let source = match (bytes, s3) {
            (Some(b), _) => image_data(&b)?.unwrap_or(ImageSource::Url("")),
            (None, Some(s3)) => ImageSource::File(
                opt_id(
                    &s3,
                    Key::uri,
                    format_args!("{path}.image.source.s3Location.uri"),
                )?
                .unwrap_or(""),
            ),
            (None, None) => image_source(Cow::Borrowed("")),
        };
        return Ok(Some(Part::Image(Image {
            source,
            detail: Detail::Auto,
        })));
    }
    if let Some(u) = p.get(Key::toolUse).src()? {
        r.saw(Format::Bedrock);
        let id = opt_id(&u, Key::toolUseId, format_args!("{path}.toolUse.toolUseId"))?;
        let name = opt_id(&u, Key::name, format_args!("{path}.toolUse.name"))?;
        let arguments = match u.get(Key::input).src()? {
            Some(i) => json_or_str(&i, format_args!("{path}.toolUse.input"))?,
            None => Cow::Borrowed("{}"),
        };
        return Ok(Some(Part::ToolUse(ToolCall {
            id: id.unwrap_or(""),
            name: name.unwrap_or(""),
            arguments,
        })));
    }
    if let Some(t) = p.get(Key::toolResult).src()? {
        r.saw(Format::Bedrock);
        let id = opt_id(
            &t,
            Key::toolUseId,
            format_args!("{path}.toolResult.toolUseId"),
        )?;
        let content = match t.get(Key::content).src()? {
            Some(c) => r.nested_parts(&c, &format!("{path}.toolResult.content"))?,
            None => Vec::new(),
        };
        // Bedrock's `ToolResultBlock.status` is `success` or `error`
        // (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolResultBlock.html).
        let is_error = t
            .get(Key::status)
            .src()?
            .is_some_and(|s| s.str().ok().flatten().as_deref() == Some("error"));
        return Ok(Some(Part::ToolResult {
            tool_use_id: id.unwrap_or(""),
            content,
            is_error,
            name: None,
        }));
    }
    // Reasoning (`ReasoningContentBlock`: `reasoningText` with its signature, or
    // `redactedContent`), read as the thinking it is: priced as reasoning, its signature free,
    // dropped by `keep_thinking_turns`, and never preceded by a summary in the turn it opens.
    if let Some(rc) = p.get(Key::reasoningContent).src()? {
        r.saw(Format::Bedrock);
        if let Some(t) = rc.get(Key::reasoningText).src()? {
            let at = format!("{path}.reasoningContent.reasoningText");
            return Ok(Some(Part::Thinking {
                text: super::fields::text_field(&t, Key::text, &at)?,
                signature: opt_id(&t, Key::signature, format_args!("{at}.signature"))?
                    .unwrap_or(""),
            }));
        }
        if let Some(d) = rc.get(Key::redactedContent).src()? {
            // (Its base64 text as JSON carries it; bytes as boto3 gives them have no text to
            // borrow and are priced as Anthropic prices an earlier turn's reasoning: nothing.)
            let encoded = match d.str().src()? {
                Some(Cow::Borrowed(s)) => s,
                _ => "",
            };
            return Ok(Some(Part::EncryptedReasoning(encoded)));
        }
        return Ok(Some(opaque("reasoningContent", &rc)?));
    }
    // Guardrail-scoped content (`GuardrailConverseContentBlock`: `text: {text, qualifiers}` or
    // `image: {format, source}`): the text or image it wraps, read and priced as such. Left
    // unknown, its text was no request of the summary's and an image in it was priced as its
    // base64 text (an 800x600 PNG at 168,302 tokens, against 638 as an image block).
    if let Some(g) = p.get(Key::guardContent).src()? {
        r.saw(Format::Bedrock);
        if let Some(t) = g.get(Key::text).src()? {
            let at = format!("{path}.guardContent.text");
            return Ok(Some(Part::Text(super::fields::text_field(
                &t,
                Key::text,
                &at,
            )?)));
        }
        if g.get(Key::image).src()?.is_some() {
            return keyed_part(r, &g, &format!("{path}.guardContent"));
        }
        return Ok(Some(opaque("guardContent", &g)?));
    }
    // An answer with citations (`CitationsContentBlock`: the generated `content` text blocks,
    // and the `citations` that back them): its text, read and priced as the answer it is.
    if let Some(c) = p.get(Key::citationsContent).src()? {
        r.saw(Format::Bedrock);
        let text = content_texts(&c, &format!("{path}.citationsContent"))?;
        return Ok(Some(Part::Text(Cow::Owned(text))));
    }
    // A search result (`SearchResultBlock`: `source`, `title`, `content` text blocks): priced by
    // its JSON, never edited, what it says kept for the summary.
    if let Some(s) = p.get(Key::searchResult).src()? {
        r.saw(Format::Bedrock);
        let at = format!("{path}.searchResult");
        return Ok(Some(with_text(
            opaque("searchResult", &s)?,
            search_result_text(&s, &at)?,
        )));
    }
    if let Some(j) = p.get(Key::json).src()? {
        return Ok(Some(Part::Text(Cow::Owned(j.json_text().src()?))));
    }
    for (key, kind) in [
        (Key::document, "document"),
        (Key::video, "video"),
        // Tools added or removed mid-conversation: priced by their JSON, and the turn that
        // holds one is kept wherever it stands (`summary_placement::is_standing_item`).
        (Key::toolAddition, "toolAddition"),
        (Key::toolRemoval, "toolRemoval"),
    ] {
        if let Some(d) = p.get(key).src()? {
            r.saw(Format::Bedrock);
            return Ok(Some(opaque(kind, &d)?));
        }
    }
    Ok(None)
}

/// An edit of a Bedrock message.
pub(crate) fn write(msg: &Message<'_>, change: &Change) -> Option<Written> {
    match change {
        Change::ResultText {
            part: Some(k),
            text,
        } => {
            let Part::ToolResult { content, .. } = msg.parts().get(*k)? else {
                return None;
            };
            let value = one_text_part(text);
            if_smaller_parts(
                content,
                vec![
                    Step::Key("content"),
                    Step::Index(*k),
                    Step::Key("toolResult"),
                    Step::Key("content"),
                ],
                value,
            )
        }
        Change::ResultPartText { part, inner, text } => {
            result_block_text(msg, (*part, *inner), Some("toolResult"), text)
        }
        Change::PartText { part, text } => content_text_block(msg, *part, text),
        Change::Image { part, text } => image_replaced(
            msg,
            *part,
            vec![Step::Key("content"), Step::Index(*part)],
            text_block_json(text),
        ),
        Change::Text { text } => plain_text(msg, "content", text, Some(&one_text_part)),
        Change::Arguments {
            call: CallAt::Part(k),
            json,
        } => object_arguments(
            msg,
            *k,
            json,
            vec![
                Step::Key("content"),
                Step::Index(*k),
                Step::Key("toolUse"),
                Step::Key("input"),
            ],
        ),
        _ => None,
    }
}

/// A text message, `{"role", "content": [{"text"}]}`, as compact JSON.
pub(crate) fn text_message_json(role: &str, text: &str) -> String {
    role_and_text_list(role, "content", text)
}

/// A text content block, `{"text"}` (Converse blocks carry no type), as compact JSON.
pub(crate) fn text_block_json(text: &str) -> String {
    object_of(&[("text", text)])
}

/// A tool of the Converse tool configuration, `{"toolSpec": {"name", "description",
/// "inputSchema": {"json": schema}}}`
/// (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolSpecification.html),
/// as compact JSON; `schema` is compact JSON.
pub(crate) fn tool_declaration_json(name: &str, description: &str, schema: &str) -> String {
    let mut s = String::from("{\"toolSpec\":{\"name\":");
    s.push_str(&super::edit::json_string(name));
    s.push_str(",\"description\":");
    s.push_str(&super::edit::json_string(description));
    s.push_str(",\"inputSchema\":{\"json\":");
    s.push_str(schema);
    s.push_str("}}}");
    s
}

/// The user message answering `toolUse` `call_id` with `text` (one `toolResult` block), as
/// compact JSON.
pub(crate) fn tool_result_json(call_id: &str, text: &str) -> String {
    let mut s = String::from("{\"role\":\"user\",\"content\":[{\"toolResult\":{\"toolUseId\":");
    s.push_str(&super::edit::json_string(call_id));
    s.push_str(",\"content\":[");
    s.push_str(&object_of(&[("text", text)]));
    s.push_str("]}}]}");
    s
}

/// The user message answering `call_id` with `text` and `images` in one `toolResult` block, as
/// compact JSON: an image's bytes as their base64 (what Bedrock's REST API reads), an S3 URI
/// as its `s3Location`. None for an image Bedrock cannot be given (an http(s) URL, a file id
/// that is no S3 URI).
pub(crate) fn tool_result_with_images_json(
    call_id: &str,
    text: &str,
    images: &[RecalledSource<'_>],
) -> Option<String> {
    // Bedrock names an image's format by its short name (ImageBlock.format).
    let format_of = |media_type: &str| match media_type {
        "image/jpeg" | "image/jpg" => "jpeg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        _ => "png",
    };
    let mut content = vec![object_of(&[("text", text)])];
    for img in images {
        content.push(match *img {
            RecalledSource::Base64 { media_type, data } => image_block(
                format_of(media_type),
                &object_of(&[("bytes", data)]),
            ),
            RecalledSource::File(uri) if uri.starts_with("s3://") => {
                let ext = uri.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
                image_block(
                    format_of(&format!("image/{ext}")),
                    &format!("{{\"s3Location\":{}}}", object_of(&[("uri", uri)])),
                )
            }
            // A `toolResult` may hold a DocumentBlock: a format of nine, a name (letters,
            // digits, single spaces, hyphens, parentheses, brackets) and its bytes.
            RecalledSource::Document { media_type, data } => format!(
                "{{\"document\":{{\"format\":\"{}\",\"name\":\"recalled document\",\"source\":{}}}}}",
                crate::message::document_format(media_type)?,
                object_of(&[("bytes", data)])
            ),
            _ => return None,
        });
    }
    Some(format!(
        "{{\"role\":\"user\",\"content\":[{{\"toolResult\":{{\"toolUseId\":{},\"content\":[{}]}}}}]}}",
        super::edit::json_string(call_id),
        content.join(",")
    ))
}

/// An ImageBlock of `format` (`png`, ...) from `source` (its JSON).
fn image_block(format: &str, source: &str) -> String {
    format!("{{\"image\":{{\"format\":\"{format}\",\"source\":{source}}}}}")
}

/// Where the id of the `toolUse` block at `at` sits (repair renames duplicates there).
pub(crate) fn call_id_path(at: CallAt) -> Option<Vec<Step>> {
    match at {
        CallAt::Part(k) => Some(vec![
            Step::Key("content"),
            Step::Index(k),
            Step::Key("toolUse"),
            Step::Key("toolUseId"),
        ]),
        CallAt::ToolCalls(_) => None,
    }
}

/// Where the `toolResult` block at `part` names its call.
pub(crate) fn result_id_path(part: Option<usize>) -> Option<Vec<Step>> {
    part.map(|k| {
        vec![
            Step::Key("content"),
            Step::Index(k),
            Step::Key("toolResult"),
            Step::Key("toolUseId"),
        ]
    })
}

/// A `toolResult` block with `status: "error"`, saying `text`, as compact JSON.
pub(crate) fn error_result_block_json(call_id: &str, text: &str) -> String {
    let mut s = String::from("{\"toolResult\":{\"toolUseId\":");
    s.push_str(&super::edit::json_string(call_id));
    s.push_str(",\"content\":[");
    s.push_str(&object_of(&[("text", text)]));
    s.push_str("],\"status\":\"error\"}}");
    s
}

/// Bedrock Converse messages.
pub const DIALECT: Dialect = Dialect {
    wire: WireFormat::Bedrock,
    history_key: "messages",
    content_key: "content",
    assistant_role: "assistant",
    strict_turns: true,
    thinking_in_content: true,
    text_message: text_message_json,
    text_block: |_, text| text_block_json(text),
    write,
    // `toolUseId`: length 1-64, pattern `^[a-zA-Z0-9_-]+$`
    // (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolUseBlock.html).
    call_id: CallIdRule {
        word_chars_only: true,
        max_chars: Some(64),
    },
    // "The text field in the ContentBlock object at messages.95.content.0 is blank. Add text to
    // the text field, and try again." (https://github.com/aws/bedrock-agentcore-sdk-python/pull/185).
    // Empty text only: a recorded Converse request to Claude Sonnet 4.5 with a `"\n"` block
    // among its user turn's six blocks was answered (pydantic-ai's
    // test_bedrock_cache_write_and_read cassette).
    blank_text: BlankText::Empty,
    // "A conversation must alternate between user and assistant roles. Make sure the
    // conversation alternates between user and assistant roles and try again."
    // (https://github.com/langchain-ai/langchain-aws/issues/130,
    // https://github.com/Portkey-AI/gateway/issues/748); none of the 136 recorded Converse
    // requests sends two turns of one role.
    refuses_same_role: true,
    // Claude through Converse: "ValidationException: final assistant content cannot end with
    // trailing whitespace" (https://github.com/junjiem/dify-plugin-agent-mcp_sse/pull/118).
    refuses_prefill_trailing_space: true,
    refuses_assistant_before_system: false,
    refuses_user_after_tool: false,
};
/// A Converse body: `messages`, `system` (text blocks), `toolConfig.tools` (`toolSpec`s) and
/// `toolConfig.toolChoice` (`{"auto"|"any": {}}`, `{"tool": {"name"}}`), and Anthropic's
/// `thinking` passed in `additionalModelRequestFields`.
pub(crate) fn body<'a, V: Input<'a>>(b: &V) -> ReadResult<Body<'a, V>, V::Error> {
    let mut out = Body::new(Api::Bedrock, history_list(b, Key::messages)?);
    out.system = b.get(Key::system).src()?;
    // A `cachePoint` block among the system blocks is a breakpoint too (it prices nothing).
    if let Some(system) = &out.system {
        for block in system.items().src()?.unwrap_or_default() {
            if block.get(Key::cachePoint).src()?.is_some() {
                out.settings.cache_breakpoints += 1;
            }
        }
    }
    if let Some(tc) = b.get(Key::toolConfig).src()? {
        // A Converse `Tool` is a union, a `toolSpec` or a `cachePoint` (AWS Bedrock API
        // reference, `Tool`, https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Tool.html):
        // a cache point is no definition but a cache breakpoint, as Anthropic's `cache_control`.
        let mut kept = Vec::new();
        for (j, t) in list_items(tc.get(Key::tools).src()?, "toolConfig.tools")?
            .into_iter()
            .enumerate()
        {
            if t.get(Key::cachePoint).src()?.is_some() {
                out.settings.cache_breakpoints += 1;
            } else {
                // Checked here, where the body's index is known (the estimate reads the kept
                // list, whose indices skip the cache points).
                let field = format!("toolConfig.tools[{j}]");
                super::read::tool_name(&t, &field)?;
                kept.push(t);
                out.tool_fields.push(field);
            }
        }
        out.tools = kept;
        if let Some(choice) = tc.get(Key::toolChoice).src()? {
            out.settings.tool_choice = if choice.get(Key::any).src()?.is_some() {
                ToolChoice::Any
            } else if let Some(t) = choice.get(Key::tool).src()? {
                let name =
                    super::fields::opt_str(&t, Key::name, "toolConfig.toolChoice.tool.name")?;
                ToolChoice::Tool(name.map(Cow::into_owned).unwrap_or_default())
            } else if choice.get(Key::auto).src()?.is_some() {
                ToolChoice::Auto
            } else {
                ToolChoice::Unset
            };
        }
    }
    if let Some(extra) = b.get(Key::additionalModelRequestFields).src()? {
        if let Some(t) = extra.get(Key::thinking).src()? {
            if opt_id(&t, Key::kind, "additionalModelRequestFields.thinking.type")?
                == Some("enabled")
            {
                out.settings.thinking = Thinking::Enabled {
                    budget: opt_u64(&t, Key::budget_tokens, "thinking")?,
                };
            }
        }
    }
    Ok(out)
}
