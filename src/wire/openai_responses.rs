//! OpenAI Responses API input items: role-less `function_call` / `function_call_output` /
//! `reasoning` items beside `{"role", "content"}` messages with `input_text` / `input_image`
//! parts.
//!
//! Detection: an item without a `role` but with a `type`, or a Responses part type. Edits
//! (https://platform.openai.com/docs/api-reference/responses/create, input item list): a tool
//! result is the `function_call_output` item's `output` string; an omitted image becomes
//! `{"type":"input_text","text":...}`; shortened arguments stay a JSON *string* at the
//! `function_call` item's `arguments`. A `custom_tool_call`'s free-form `input` is not JSON and
//! is never shortened.

use std::borrow::Cow;

use super::dialect::{BlankText, CallIdRule, Dialect};
use super::edit::{
    if_smaller_string, image_replaced, json_string, object_of, plain_text, CallAt, Change, Step,
    Written,
};
use super::fields::{
    detail, invalid, json_or_str, opaque, opt_id, opt_items, opt_str, text_field, PartReader,
    Reader,
};
use super::input::{Input, Key, ReadResult, Src};
use super::openai_chat::image_url;
use super::request_body::{cache_breakpoints, list_items, tool_choice, Api, Body, History};
use super::wire_format::WireFormat;
use super::Format;
use super::{item_reference, responses_tool_items};
use crate::message::{Content, Image, ImageSource, Message, Part, ToolCall};
use crate::recall::RecalledSource;

/// The Responses part types: `input_text`, `output_text`, `summary_text`, `reasoning_text`,
/// `input_image`, `input_file`.
pub(crate) fn typed_part<'a, V: Input<'a>, D: PartReader>(
    r: &Reader<D>,
    kind: &'a str,
    p: &V,
    path: &str,
) -> ReadResult<Option<Part<'a>>, V::Error> {
    Ok(Some(match kind {
        "input_text" | "output_text" | "summary_text" | "reasoning_text" => {
            r.saw(Format::OpenAIResponses);
            Part::Text(text_field(p, Key::text, path)?)
        }
        "input_image" => {
            r.saw(Format::OpenAIResponses);
            let detail = detail(p, path)?.unwrap_or_default();
            // `image_url` (a URL or data URL) or `file_id` (an uploaded file), per the
            // Responses input_image content part.
            match p.get(Key::image_url).src()? {
                Some(u) => image_url(&u, detail, &format!("{path}.image_url"))?,
                None => Part::Image(Image {
                    source: ImageSource::File(
                        opt_id(p, Key::file_id, format_args!("{path}.file_id"))?.unwrap_or(""),
                    ),
                    detail,
                }),
            }
        }
        // A file (PDF and other documents by file id, URL or data): priced as media.
        "input_file" => {
            r.saw(Format::OpenAIResponses);
            opaque(kind, p)?
        }
        _ => return Ok(None),
    }))
}

/// A Responses input item without a role (`function_call`, `function_call_output`,
/// `reasoning`, hosted-tool calls).
pub(crate) fn item<'a, D: PartReader, V: Input<'a>>(m: &V) -> ReadResult<Message<'a>, V::Error> {
    let kind = match opt_id(m, Key::kind, "type")? {
        Some(kind) => kind,
        // An item reference may leave out its `type` (`{"id": "msg_..."}`: the Responses
        // input's item reference, `type` optional and `item_reference` by default,
        // https://platform.openai.com/docs/api-reference/responses/create).
        None if opt_id(m, Key::id, "id")?.is_some() => item_reference::ITEM_REFERENCE,
        None => {
            return Err(invalid(
                "role",
                "missing (and no Responses item `type` either)",
            ))
        }
    };
    let r = Reader::<D>::new();
    let mut msg = match kind {
        "function_call" | "custom_tool_call" => {
            let mut msg = Message::empty("assistant");
            let id = opt_id(m, Key::call_id, "call_id")?.unwrap_or("");
            let name = opt_id(m, Key::name, "name")?
                .ok_or_else(|| invalid("name", "a function_call item needs a name"))?;
            let args = match m.get(Key::arguments).src()? {
                Some(a) => json_or_str(&a, "arguments")?,
                None => match m.get(Key::input).src()? {
                    Some(a) => json_or_str(&a, "input")?,
                    None => Cow::Borrowed(""),
                },
            };
            msg.tool_calls.push(ToolCall {
                id,
                name,
                arguments: args,
            });
            // Only a function_call's arguments are JSON (and may be shortened).
            if kind == "function_call" {
                msg.wire = Format::OpenAIResponses;
            }
            msg
        }
        "function_call_output" | "custom_tool_call_output" => {
            let mut msg = Message::empty("tool");
            msg.tool_call_id = opt_id(m, Key::call_id, "call_id")?;
            if let Some(o) = m.get(Key::output).src()? {
                msg.content = r.content(&o, "output")?;
            }
            msg.wire = Format::OpenAIResponses;
            msg
        }
        // A generated image sent back: priced as the image it is (its base64 `result`), not
        // as a megabyte of text. Never edited.
        "image_generation_call" => {
            let mut msg = Message::empty("assistant");
            msg.content = match m
                .get(Key::result)
                .src()?
                .map(|r| r.str())
                .transpose()
                .src()?
                .flatten()
            {
                Some(Cow::Borrowed(b64)) if !b64.is_empty() => {
                    Content::Parts(vec![Part::Image(Image {
                        source: ImageSource::Base64(b64),
                        detail: Default::default(),
                    })])
                }
                _ => Content::Parts(vec![opaque(kind, m)?]),
            };
            msg
        }
        // A stored reasoning item sent by reference (its id opens with `rs_`): read as the
        // reasoning item it stands for, so it stays with the item after it
        // (`tail_walk::legal_cuts`) and no output is taken to answer it
        // (`item_reference::bind`). Read as a call, each round's output bound to the round's
        // reasoning reference and the pairs chained across every round: no cut was legal, and
        // a history that fit twice over raised `CompactionBudgetError`.
        "item_reference" if opt_id(m, Key::id, "id")?.is_some_and(|id| id.starts_with("rs_")) => {
            let mut msg = Message::empty("assistant");
            msg.content = Content::Parts(vec![Part::EncryptedReasoning("")]);
            msg
        }
        // A hosted tool's run sent back (web search, file search, a code interpreter run, an
        // MCP call or tool listing): the call and its result in the one item, read as a call
        // and its result in one message (as Anthropic's server tools are), so the summary shows
        // what was searched or run and what came back, and each is priced as what it holds (a
        // code interpreter chart as an image: priced whole as JSON, a 1024x1024 PNG's data URL
        // cost 1,049,318 tokens). Never edited.
        "web_search_call"
        | "file_search_call"
        | "code_interpreter_call"
        | "mcp_call"
        | "mcp_list_tools" => hosted_call(kind, m)?,
        "reasoning" => {
            let mut msg = Message::empty("assistant");
            let mut parts = Vec::new();
            if let Some(e) = opt_id(m, Key::encrypted_content, "encrypted_content")? {
                parts.push(Part::EncryptedReasoning(e));
            }
            // Its `summary_text` / `reasoning_text` parts are reasoning, not the assistant's
            // words: read as thinking (priced as text all the same), the item seats as the
            // role-free item it is, and no summary merges into it.
            for key in [Key::summary, Key::content] {
                if let Some(s) = m.get(key).src()? {
                    if let Content::Parts(p) = r.content(&s, key.as_str())? {
                        parts.extend(p.into_iter().map(|p| match p {
                            Part::Text(text) => Part::Thinking {
                                text,
                                signature: "",
                            },
                            other => other,
                        }));
                    }
                }
            }
            msg.content = Content::Parts(parts);
            msg.item_id = super::fields::item_id(m.get(Key::id).src()?)?;
            msg
        }
        // The client-run tools' calls and outputs, paired by id (`responses_tool_items`).
        other => match responses_tool_items::call(other, m)? {
            Some(msg) => msg,
            None => match responses_tool_items::output(other, m)? {
                Some(msg) => msg,
                None => {
                    let mut msg = Message::empty("assistant");
                    msg.content = Content::Parts(vec![opaque(kind, m)?]);
                    msg
                }
            },
        },
    };
    msg.item = Some(kind);
    // Parts of a reasoning item are merged: their positions are not the item's, never edited.
    if kind == "reasoning" {
        msg.wire = Format::Unknown;
    }
    Ok(msg)
}

/// An edit of a Responses item.
pub(crate) fn write(msg: &Message<'_>, change: &Change) -> Option<Written> {
    // A function_call_output keeps its parts (if a list) under `output`.
    let list_key = if msg.tool_call_id.is_some() {
        "output"
    } else {
        "content"
    };
    match change {
        Change::ResultText { part: None, text } => {
            msg.tool_call_id?;
            match &msg.content {
                Content::Text(old) => {
                    if_smaller_string(old, vec![Step::Key("output")], json_string(text))
                }
                // A list of output parts (texts beside images) becomes one string, as an
                // output may be (`prune`'s planner priced it smaller).
                Content::Parts(_) => Some((vec![Step::Key("output")], json_string(text))),
                Content::None => None,
            }
        }
        // The text part of a list beside its images (a result's output, a message's content:
        // a middle cut or an observation's mask, the images kept).
        Change::PartText { part, text } => {
            let Some(Part::Text(old)) = msg.parts().get(*part) else {
                return None;
            };
            if_smaller_string(
                old,
                vec![Step::Key(list_key), Step::Index(*part), Step::Key("text")],
                json_string(text),
            )
        }
        // A message item (`{"role", "content": ...}`), never a function_call_output.
        Change::Text { text } if msg.tool_call_id.is_none() => {
            plain_text(msg, "content", text, None)
        }
        Change::Image { part, text } => image_replaced(
            msg,
            *part,
            vec![Step::Key(list_key), Step::Index(*part)],
            text_block_json(false, text),
        ),
        Change::Arguments {
            call: CallAt::ToolCalls(0),
            json,
        } => {
            let old = msg.tool_calls.first()?;
            if_smaller_string(
                &old.arguments,
                vec![Step::Key("arguments")],
                json_string(json),
            )
        }
        _ => None,
    }
}

/// A hosted tool's item (`web_search_call`, `file_search_call`, `code_interpreter_call`,
/// `mcp_call`, `mcp_list_tools`) as one assistant message holding the call and its result,
/// paired by the item's id.
fn hosted_call<'a, V: Input<'a>>(kind: &'a str, m: &V) -> ReadResult<Message<'a>, V::Error> {
    let id = opt_id(m, Key::id, "id")?.unwrap_or(kind);
    let json = |key: Key| -> ReadResult<Option<String>, V::Error> {
        m.get(key).src()?.map(|v| v.json_text()).transpose().src()
    };
    let wrap = |key: &str, value: Option<String>| -> String {
        let mut s = String::from("{");
        if let Some(v) = value {
            crate::json_string::push_json_string(&mut s, key);
            s.push(':');
            s.push_str(&v);
        }
        s.push('}');
        s
    };
    let text = |t: String| Part::Text(Cow::Owned(t));
    let (name, arguments, content, is_error): (&'a str, String, Vec<Part<'a>>, bool) = match kind {
        "web_search_call" => {
            let status = opt_id(m, Key::status, "status")?.unwrap_or("");
            let content = if status.is_empty() {
                Vec::new()
            } else {
                vec![text(status.to_string())]
            };
            (
                "web_search",
                json(Key::action)?.unwrap_or_else(|| "{}".into()),
                content,
                status == "failed",
            )
        }
        "file_search_call" => (
            "file_search",
            wrap("queries", json(Key::queries)?),
            json(Key::results)?.map(text).into_iter().collect(),
            false,
        ),
        "code_interpreter_call" => {
            let mut parts = Vec::new();
            for o in &opt_items(m, Key::outputs)? {
                if let Some(logs) = opt_str(o, Key::logs, "outputs[].logs")? {
                    parts.push(Part::Text(Cow::Owned(logs.into_owned())));
                } else if let Some(url) = o.get(Key::url).src()? {
                    parts.push(image_url(&url, Default::default(), "outputs[].url")?);
                }
            }
            (
                "code_interpreter",
                wrap("code", json(Key::code)?),
                parts,
                false,
            )
        }
        "mcp_call" => {
            let error = opt_str(m, Key::error, "error")?;
            let output = opt_str(m, Key::output, "output")?;
            let result = error.clone().or(output).map(|t| text(t.into_owned()));
            (
                opt_id(m, Key::name, "name")?.unwrap_or("mcp_call"),
                match m.get(Key::arguments).src()? {
                    Some(a) => json_or_str(&a, "arguments")?.into_owned(),
                    None => "{}".into(),
                },
                result.into_iter().collect(),
                error.is_some(),
            )
        }
        _ => (
            "mcp_list_tools",
            "{}".into(),
            json(Key::tools)?.map(text).into_iter().collect(),
            opt_str(m, Key::error, "error")?.is_some(),
        ),
    };
    let mut msg = Message::empty("assistant");
    msg.content = Content::Parts(vec![
        Part::ToolUse(ToolCall {
            id,
            name,
            arguments: Cow::Owned(arguments),
        }),
        Part::ToolResult {
            tool_use_id: id,
            content,
            is_error,
            name: None,
        },
    ]);
    Ok(msg)
}

/// A message item, `{"type": "message", "role", "content": text}`, as compact JSON.
pub(crate) fn text_message_json(role: &str, text: &str) -> String {
    object_of(&[("type", "message"), ("role", role), ("content", text)])
}

/// A text part: `output_text` in the assistant's messages, `input_text` in the others. An
/// `output_text` carries its (empty) `annotations`: the SDK's `ResponseOutputTextParam` marks
/// them required, and a strict backend refuses the part without them.
pub(crate) fn text_block_json(assistant: bool, text: &str) -> String {
    if !assistant {
        return object_of(&[("type", "input_text"), ("text", text)]);
    }
    let mut s = object_of(&[("type", "output_text"), ("text", text)]);
    s.pop();
    s.push_str(",\"annotations\":[]}");
    s
}

/// A function tool of the Responses tool list, `{"type": "function", "name", "description",
/// "parameters"}` (https://platform.openai.com/docs/api-reference/responses/create#responses-create-tools),
/// as compact JSON; `schema` is compact JSON.
pub(crate) fn tool_declaration_json(name: &str, description: &str, schema: &str) -> String {
    let mut s = String::from("{\"type\":\"function\",\"name\":");
    s.push_str(&json_string(name));
    s.push_str(",\"description\":");
    s.push_str(&json_string(description));
    s.push_str(",\"parameters\":");
    s.push_str(schema);
    s.push('}');
    s
}

/// The `function_call_output` item answering call `call_id` with `text`, as compact JSON.
pub(crate) fn tool_result_json(call_id: &str, text: &str) -> String {
    object_of(&[
        ("type", "function_call_output"),
        ("call_id", call_id),
        ("output", text),
    ])
}

/// The `function_call_output` item answering `call_id` with `text` and `images`: its `output`
/// a list of an `input_text` and `input_image` items (the Responses API's list output), as
/// compact JSON.
pub(crate) fn tool_result_with_images_json(
    call_id: &str,
    text: &str,
    images: &[RecalledSource<'_>],
) -> Option<String> {
    let mut output = vec![object_of(&[("type", "input_text"), ("text", text)])];
    for img in images {
        output.push(match *img {
            RecalledSource::Base64 { media_type, data } => object_of(&[
                ("type", "input_image"),
                ("image_url", &format!("data:{media_type};base64,{data}")),
            ]),
            RecalledSource::Url(u) => object_of(&[("type", "input_image"), ("image_url", u)]),
            RecalledSource::File(f) => object_of(&[("type", "input_image"), ("file_id", f)]),
            // (ResponseInputFileContent: a file's data as a `data:` URL, and a name for it.)
            RecalledSource::Document { media_type, data } => object_of(&[
                ("type", "input_file"),
                ("file_data", &format!("data:{media_type};base64,{data}")),
                ("filename", &document_filename(media_type)),
            ]),
        });
    }
    Some(format!(
        "{{\"type\":\"function_call_output\",\"call_id\":{},\"output\":[{}]}}",
        json_string(call_id),
        output.join(",")
    ))
}

/// The name a recalled document is given where its format asks for one (`document.pdf`): its
/// own name is not kept.
fn document_filename(media_type: &str) -> String {
    let ext = crate::message::document_format(media_type).unwrap_or("bin");
    format!("document.{ext}")
}

/// The `custom_tool_call_output` item answering custom tool call `call_id` with `text`, as
/// compact JSON.
pub(crate) fn custom_tool_result_json(call_id: &str, text: &str) -> String {
    object_of(&[
        ("type", "custom_tool_call_output"),
        ("call_id", call_id),
        ("output", text),
    ])
}

/// Where the id of a `function_call` item sits (repair renames duplicates there).
pub(crate) fn call_id_path(at: CallAt) -> Option<Vec<Step>> {
    matches!(at, CallAt::ToolCalls(0)).then(|| vec![Step::Key("call_id")])
}

/// Where a `function_call_output` item names the call it answers.
pub(crate) fn result_id_path(part: Option<usize>) -> Option<Vec<Step>> {
    part.is_none().then(|| vec![Step::Key("call_id")])
}

/// OpenAI Responses input items.
pub const DIALECT: Dialect = Dialect {
    wire: WireFormat::Responses,
    history_key: "input",
    content_key: "content",
    assistant_role: "assistant",
    strict_turns: false,
    thinking_in_content: false,
    text_message: text_message_json,
    text_block: text_block_json,
    write,
    // "Invalid 'input[95].call_id': string too long. Expected a string with maximum length 64"
    // (the API's own refusal, https://github.com/AnswerDotAI/fastllm/issues/45). Any characters:
    // Bedrock Mantle's Responses API took its own `resp_...:call_0` ids back (64 characters,
    // the recorded exchanges).
    call_id: CallIdRule {
        word_chars_only: false,
        max_chars: Some(64),
    },
    blank_text: BlankText::Taken,
    refuses_same_role: false,
    refuses_prefill_trailing_space: false,
    refuses_assistant_before_system: false,
    refuses_user_after_tool: false,
};
/// A Responses API body: `input` (a string or a list of items), `instructions`, `tools` (function
/// and hosted tools, MCP included), `text` (its `format`), `tool_choice`, `reasoning.effort`.
pub(crate) fn body<'a, V: Input<'a>>(b: &V) -> ReadResult<Body<'a, V>, V::Error> {
    let input = b
        .get(Key::input)
        .src()?
        .ok_or_else(|| invalid("input", "missing"))?;
    let history = match input.str().src()? {
        Some(s) => History::Text(s),
        None if input.shape() == super::Shape::List => History::List(input),
        None => {
            return Err(invalid(
                "input",
                format!(
                    "input must be a string or a list of items, got {}",
                    input.type_name()
                ),
            ))
        }
    };
    let mut out = Body::new(Api::OpenAIResponses, history);
    out.system = b.get(Key::instructions).src()?;
    out.tools = list_items(b.get(Key::tools).src()?, "tools")?;
    out.response_format = b.get(Key::text).src()?;
    out.settings.tool_choice = tool_choice(b, Key::tool_choice)?;
    if let Some(r) = b.get(Key::reasoning).src()? {
        out.settings.reasoning_effort =
            super::fields::opt_str(&r, Key::effort, "reasoning.effort")?.map(Cow::into_owned);
    }
    out.settings.cache_breakpoints = cache_breakpoints(b, None, &out.tools)?;
    Ok(out)
}
