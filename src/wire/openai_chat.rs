//! OpenAI Chat Completions messages: `{"role", "content", "tool_calls", "tool_call_id"}`.
//!
//! Detection: a `tool_calls` list, a `tool_call_id`, or an `image_url` part. Edits
//! (https://platform.openai.com/docs/api-reference/chat/create): a tool result is the `tool`
//! message's `content` string; an omitted image becomes `{"type":"text","text":...}`; shortened
//! arguments stay a JSON *string* at `tool_calls[j].function.arguments`.

use std::borrow::Cow;

use super::dialect::{BlankText, CallIdRule, Dialect};
use super::edit::{
    if_smaller, if_smaller_string, image_replaced, json_string, object_of, plain_text, CallAt,
    Change, Step, Written,
};
use super::fields::{
    detail, image_source, invalid, json_or_str, opt_id, opt_str, text_field, PartReader, Reader,
};
use super::input::{Input, Key, ReadResult, Shape, Src};
use super::request_body::{
    cache_breakpoints, history_list, list_items, opt_u64, tool_choice, Api, Body, Thinking,
};
use super::wire_format::WireFormat;
use super::Format;
use crate::message::{Content, Detail, Image, ImageSource, Message, Part, ToolCall};

/// What `Message::item` says of a chat message that makes a custom tool's call: its calls'
/// arguments are never edited.
pub(crate) const CUSTOM_CALLS: &str = "custom tool calls";

/// What `Message::item` says of a chat message sent with `tool_calls: []`, which OpenAI refuses
/// ("Invalid 'messages[1].tool_calls': empty array. Expected an array with minimum length 1",
/// https://github.com/openai/openai-node/pull/1341, https://github.com/home-assistant/core/pull/118577)
/// and Qwen too ("Empty tool_calls is not supported in message"): a compatible server's or an
/// SDK's answer appended as it came. (Mistral answered the 2 recorded requests that carry one.)
pub(crate) const EMPTY_CALLS: &str = "empty tool_calls";

/// What `Message::item` says of an assistant message that makes a legacy function call: its
/// call sits at `function_call`, not in `tool_calls`.
pub(crate) const LEGACY_FUNCTION_CALL: &str = "function_call";

/// What `Message::item` says of a legacy `function` result: its call id is the function's
/// name, read from `name` (no id is sent, and none is priced).
pub(crate) const LEGACY_FUNCTION_RESULT: &str = "function result";

/// A legacy chat function call, `message.function_call: {"name", "arguments"}` (the
/// `functions` parameter's calls, deprecated in favour of `tools` but still accepted:
/// https://platform.openai.com/docs/api-reference/chat/create#chat-create-function_call). It
/// carries no id, and its result (`{"role": "function", "name"}`) names the function: the call
/// is read with the function's name for its id, so the two pair as Ollama's id-less calls do.
pub(crate) fn legacy_function_call<'a, V: Input<'a>>(c: &V) -> ReadResult<ToolCall<'a>, V::Error> {
    if !matches!(c.shape(), Shape::Map | Shape::Object) {
        return Err(invalid(
            "function_call",
            format!("expected a function call object, got {}", c.type_name()),
        ));
    }
    let name = opt_id(c, Key::name, format_args!("function_call.name"))?
        .ok_or_else(|| invalid("function_call.name", "missing"))?;
    let arguments = match c.get(Key::arguments).src()? {
        Some(a) => json_or_str(&a, "function_call.arguments")?,
        None => Cow::Borrowed(""),
    };
    Ok(ToolCall {
        id: name,
        name,
        arguments,
    })
}

/// `message.tool_calls`: `[{"id", "type": "function", "function": {"name", "arguments"}}]`, and
/// whether one of them is a custom tool's call (`CUSTOM_CALLS`).
pub(crate) fn tool_calls<'a, V: Input<'a>>(
    calls: &V,
) -> ReadResult<(Vec<ToolCall<'a>>, bool), V::Error> {
    let Some(items) = calls.items().src()? else {
        return Err(invalid(
            "tool_calls",
            format!("expected a list, got {}", calls.type_name()),
        ));
    };
    let mut out = Vec::with_capacity(items.len());
    let mut custom_call = false;
    for (j, c) in items.iter().enumerate() {
        if !matches!(c.shape(), Shape::Map | Shape::Object) {
            return Err(invalid(
                format!("tool_calls[{j}]"),
                format!("expected a tool call object, got {}", c.type_name()),
            ));
        }
        let id = opt_id(c, Key::id, format_args!("tool_calls[{j}].id"))?;
        // A custom tool's call (`{"type": "custom", "custom": {"name", "input"}}`,
        // ChatCompletionMessageCustomToolCallParam): its free-form input read as its arguments.
        if let Some(custom) = c.get(Key::custom).src()? {
            let name = opt_id(
                &custom,
                Key::name,
                format_args!("tool_calls[{j}].custom.name"),
            )?
            .ok_or_else(|| invalid(format!("tool_calls[{j}].custom.name"), "missing"))?;
            let input = opt_str(
                &custom,
                Key::input,
                format_args!("tool_calls[{j}].custom.input"),
            )?;
            out.push(ToolCall {
                id: id.unwrap_or(name),
                name,
                arguments: input.unwrap_or(Cow::Borrowed("")),
            });
            custom_call = true;
            continue;
        }
        let Some(f) = c.get(Key::function).src()? else {
            return Err(invalid(
                format!("tool_calls[{j}].function"),
                "missing: a tool call needs a function",
            ));
        };
        let name = opt_id(&f, Key::name, format_args!("tool_calls[{j}].function.name"))?
            .ok_or_else(|| invalid(format!("tool_calls[{j}].function.name"), "missing"))?;
        let arguments = match f.get(Key::arguments).src()? {
            Some(a) => json_or_str(&a, format_args!("tool_calls[{j}].function.arguments"))?,
            None => Cow::Borrowed(""),
        };
        out.push(ToolCall {
            // Ollama's native calls carry no id: their results name the tool (`tool_name`,
            // read as the result's call id in `read::read_message`).
            id: id.unwrap_or(name),
            name,
            arguments,
        });
    }
    Ok((out, custom_call))
}

/// OpenRouter `reasoning_details`: the visible text and summaries are priced as reasoning;
/// signatures and encrypted data are not billed as text (see `Profile::encrypted_per_byte`).
pub(crate) fn reasoning_details<'a, V: Input<'a>>(
    d: &V,
) -> ReadResult<Option<Cow<'a, str>>, V::Error> {
    let Some(items) = d.items().src()? else {
        return Ok(None);
    };
    let mut text = String::new();
    for item in &items {
        if !matches!(item.shape(), Shape::Map | Shape::Object) {
            continue;
        }
        for key in [Key::text, Key::summary] {
            if let Some(v) = item.get(key).src()? {
                if let Some(s) = v.str().src()? {
                    text.push_str(&s);
                }
            }
        }
    }
    Ok((!text.is_empty()).then_some(Cow::Owned(text)))
}

/// An `image_url` value: a URL string or `{"url", "detail"}`.
pub(crate) fn image_url<'a, V: Input<'a>>(
    u: &V,
    default: Detail,
    path: &str,
) -> ReadResult<Part<'a>, V::Error> {
    let (url, detail) = match u.str().src()? {
        Some(s) => (s, default),
        None => {
            let url = opt_str(u, Key::url, format_args!("{path}.url"))?
                .ok_or_else(|| invalid(format!("{path}.url"), "missing"))?;
            (url, detail(u, path)?.unwrap_or(default))
        }
    };
    Ok(Part::Image(Image {
        source: image_source(url),
        detail,
    }))
}

/// The chat part types: `text`, `image_url`, `refusal` (and the Assistants' `image_file`).
pub(crate) fn typed_part<'a, V: Input<'a>, D: PartReader>(
    r: &Reader<D>,
    kind: &str,
    p: &V,
    path: &str,
) -> ReadResult<Option<Part<'a>>, V::Error> {
    Ok(Some(match kind {
        "text" => Part::Text(text_field(p, Key::text, path)?),
        "refusal" => Part::Text(text_field(p, Key::refusal, path)?),
        "image_url" => {
            r.saw(Format::OpenAIChat);
            let u = p
                .get(Key::image_url)
                .src()?
                .ok_or_else(|| invalid(format!("{path}.image_url"), "missing"))?;
            image_url(&u, Detail::Auto, &format!("{path}.image_url"))?
        }
        // Assistants messages: `{"type":"image_file","image_file":{"file_id","detail"}}`
        // (https://platform.openai.com/docs/api-reference/messages/createMessage).
        "image_file" => {
            r.saw(Format::OpenAIChat);
            let fpath = format!("{path}.image_file");
            let f = p
                .get(Key::image_file)
                .src()?
                .ok_or_else(|| invalid(fpath.as_str(), "missing"))?;
            Part::Image(Image {
                source: ImageSource::File(
                    opt_id(&f, Key::file_id, format_args!("{fpath}.file_id"))?.unwrap_or(""),
                ),
                detail: detail(&f, &fpath)?.unwrap_or_default(),
            })
        }
        // Chat's own audio and file parts (`{"type": "input_audio", "input_audio": {...}}`,
        // `{"type": "file", "file": {...}}`; the Responses API's are `input_file` and it takes no
        // audio in a message): priced as media. They show the message is chat, so an old one is
        // masked in place; beside only text parts (which any format has), the message showed no
        // format and nothing in it could be written.
        "input_audio" | "file" => {
            r.saw(Format::OpenAIChat);
            let kind = if kind == "file" {
                "file"
            } else {
                "input_audio"
            };
            super::fields::opaque(kind, p)?
        }
        _ => return Ok(None),
    }))
}

/// An edit of a chat message.
pub(crate) fn write(msg: &Message<'_>, change: &Change) -> Option<Written> {
    match change {
        // An observation beside Ollama's native images, masked with them (`mask_plan`).
        Change::Text { text } if msg.images_from.is_some() => {
            native_whole(msg, msg.images_from?, text)
        }
        Change::Text { text } => plain_text(msg, "content", text, None),
        Change::ResultText { part: None, text } => match &msg.content {
            Content::Text(old) => {
                if_smaller_string(old, vec![Step::Key("content")], json_string(text))
            }
            // A result of texts and images (`prune`'s planner priced it smaller): Ollama's text
            // and its native `images` emptied together; a list of parts becomes one string, as
            // a `tool` message's content may be.
            Content::Parts(_) => match msg.images_from {
                Some(from) => native_whole(msg, from, text),
                None => Some((vec![Step::Key("content")], json_string(text))),
            },
            Content::None => None,
        },
        // The text beside a message's images (a tool result's or an observation's middle cut
        // or mask, the images kept): Ollama's `content` string, or the text part of a list.
        Change::PartText { part, text } => match (msg.images_from, msg.parts().get(*part)?) {
            (Some(from), Part::Text(old)) if from == 1 && *part == 0 => {
                if_smaller_string(old, vec![Step::Key("content")], json_string(text))
            }
            (None, Part::Text(old)) => if_smaller_string(
                old,
                vec![Step::Key("content"), Step::Index(*part), Step::Key("text")],
                json_string(text),
            ),
            _ => None,
        },
        Change::Image { part, text } => match msg.images_from {
            Some(from) if *part >= from => native_images_masked(msg, from, text),
            _ => image_replaced(
                msg,
                *part,
                vec![Step::Key("content"), Step::Index(*part)],
                text_block_json(text),
            ),
        },
        Change::Arguments {
            call: CallAt::ToolCalls(j),
            json,
        } => {
            // A custom tool's call has no `function` to write into, and its input is free text.
            if msg.item == Some(CUSTOM_CALLS) {
                return None;
            }
            let old = msg.tool_calls.get(*j)?;
            let path = if msg.item == Some(LEGACY_FUNCTION_CALL) {
                vec![Step::Key("function_call"), Step::Key("arguments")]
            } else {
                vec![
                    Step::Key("tool_calls"),
                    Step::Index(*j),
                    Step::Key("function"),
                    Step::Key("arguments"),
                ]
            };
            match &old.arguments {
                // Sent as an object (Ollama's native calls, whose client refuses a string
                // there): the reader serialized it (`fields::json_or_str`, the only owned
                // arguments but a lone surrogate's lossy copy), and it is written back as one.
                Cow::Owned(a) if a.starts_with('{') && json.starts_with('{') => {
                    if_smaller(a.len(), path, json.to_string())
                }
                _ => if_smaller_string(&old.arguments, path, json_string(json)),
            }
        }
        _ => None,
    }
}

/// A message of Ollama's native images (content parts `from` on) replaced whole by `text`:
/// the `content` string and the emptied `images` written together (an empty path: the
/// message's own fields). None when the text before the images is not one string.
fn native_whole(msg: &Message<'_>, from: usize, text: &str) -> Option<Written> {
    if !matches!(msg.parts().get(..from)?, [] | [Part::Text(_)]) {
        return None;
    }
    Some((
        Vec::new(),
        format!("{{\"content\":{},\"images\":[]}}", json_string(text)),
    ))
}

/// The images of Ollama's native `images` field (content parts `from` on) masked: the field
/// emptied and `text` said after the message's text, one edit of both fields (an empty path:
/// the message's own fields its object names). Ollama's `content` is a string and its images
/// base64 beside it: an edit at `content[k]` named a list the message does not have, and no
/// text can stand in the `images` list. All of them go at once, so that two edits of one
/// message never write the field twice (`prune` plans one for the message). None when the
/// message's content is a list of more than one text (no string to say `text` in).
fn native_images_masked(msg: &Message<'_>, from: usize, text: &str) -> Option<Written> {
    let parts = msg.parts();
    if !matches!(parts.get(from..)?.first(), Some(Part::Image(_))) {
        return None;
    }
    let content = match &parts[..from] {
        [] => text.to_string(),
        [Part::Text(t)] if t.is_empty() => text.to_string(),
        [Part::Text(t)] => format!("{t}\n{text}"),
        _ => return None,
    };
    Some((
        Vec::new(),
        format!("{{\"content\":{},\"images\":[]}}", json_string(&content)),
    ))
}

/// A text message, `{"role", "content": text}`, as compact JSON.
pub(crate) fn text_message_json(role: &str, text: &str) -> String {
    object_of(&[("role", role), ("content", text)])
}

/// A text content part, `{"type": "text", "text"}`, as compact JSON.
pub(crate) fn text_block_json(text: &str) -> String {
    object_of(&[("type", "text"), ("text", text)])
}

/// A function tool of the chat tool list, `{"type": "function", "function": {"name",
/// "description", "parameters"}}` (https://platform.openai.com/docs/api-reference/chat/create#chat-create-tools),
/// as compact JSON; `schema` is compact JSON.
pub(crate) fn tool_declaration_json(name: &str, description: &str, schema: &str) -> String {
    let mut s = String::from("{\"type\":\"function\",\"function\":{\"name\":");
    s.push_str(&json_string(name));
    s.push_str(",\"description\":");
    s.push_str(&json_string(description));
    s.push_str(",\"parameters\":");
    s.push_str(schema);
    s.push_str("}}");
    s
}

/// Ollama's native `tool` message answering the call of tool `name` with `text` (its calls
/// carry no id: the result names the tool), as compact JSON.
pub(crate) fn named_tool_result_json(name: &str, text: &str) -> String {
    object_of(&[("role", "tool"), ("tool_name", name), ("content", text)])
}

/// The legacy `function` message answering a `function_call` of function `name` with `text`,
/// as compact JSON.
pub(crate) fn legacy_function_result_json(name: &str, text: &str) -> String {
    object_of(&[("role", "function"), ("name", name), ("content", text)])
}

/// The `tool` message answering call `call_id` with `text`, as compact JSON.
pub(crate) fn tool_result_json(call_id: &str, text: &str) -> String {
    object_of(&[
        ("role", "tool"),
        ("tool_call_id", call_id),
        ("content", text),
    ])
}

/// Where the id of call `at` sits in a chat message (repair renames duplicates there).
pub(crate) fn call_id_path(at: CallAt) -> Option<Vec<Step>> {
    match at {
        CallAt::ToolCalls(j) => Some(vec![
            Step::Key("tool_calls"),
            Step::Index(j),
            Step::Key("id"),
        ]),
        CallAt::Part(_) => None,
    }
}

/// Where a `tool` message names the call it answers.
pub(crate) fn result_id_path(part: Option<usize>) -> Option<Vec<Step>> {
    part.is_none().then(|| vec![Step::Key("tool_call_id")])
}

/// OpenAI chat completions (also Ollama and every OpenAI-compatible server).
pub const DIALECT: Dialect = Dialect {
    wire: WireFormat::Chat,
    history_key: "messages",
    content_key: "content",
    assistant_role: "assistant",
    strict_turns: false,
    thinking_in_content: false,
    text_message: text_message_json,
    text_block: |_, text| text_block_json(text),
    write,
    // (No rule is OpenAI's alone: the chat format is also every compatible server's.)
    call_id: CallIdRule::ANY,
    blank_text: BlankText::Taken,
    refuses_same_role: false,
    refuses_prefill_trailing_space: false,
    refuses_assistant_before_system: true,
    refuses_user_after_tool: true,
};
/// A chat.completions body: `messages`, `tools`, `response_format`, `tool_choice`,
/// `reasoning_effort`, and the `reasoning` / `thinking` objects of OpenAI-compatible servers
/// (OpenRouter `{"effort" | "max_tokens"}`, z.ai and DeepSeek `{"type": "enabled"}`).
pub(crate) fn body<'a, V: Input<'a>>(b: &V) -> ReadResult<Body<'a, V>, V::Error> {
    let mut out = Body::new(Api::OpenAIChat, history_list(b, Key::messages)?);
    out.tools = list_items(b.get(Key::tools).src()?, "tools")?;
    out.response_format = b.get(Key::response_format).src()?;
    out.settings.tool_choice = tool_choice(b, Key::tool_choice)?;
    out.settings.reasoning_effort =
        opt_str(b, Key::reasoning_effort, "reasoning_effort")?.map(Cow::into_owned);
    out.settings.thinking = compatible_thinking(b)?;
    out.settings.cache_breakpoints = cache_breakpoints(b, None, &out.tools)?;
    Ok(out)
}

/// Reasoning asked of an OpenAI-compatible server: OpenRouter's `reasoning` object (unless
/// `enabled: false` or `effort: "none"`), or a `thinking: {"type": "enabled"}` object.
pub(crate) fn compatible_thinking<'a, V: Input<'a>>(b: &V) -> ReadResult<Thinking, V::Error> {
    if let Some(r) = b.get(Key::reasoning).src()? {
        if matches!(r.shape(), Shape::Map | Shape::Object) {
            let effort = opt_str(&r, Key::effort, "reasoning.effort")?;
            let off = effort.as_deref() == Some("none")
                || r.get(Key::enabled)
                    .src()?
                    .is_some_and(|e| e.json_text().is_ok_and(|t| t == "false"));
            if !off {
                return Ok(Thinking::Enabled { budget: None });
            }
        }
    }
    if let Some(t) = b.get(Key::thinking).src()? {
        if opt_str(&t, Key::kind, "thinking.type")?.as_deref() == Some("enabled") {
            return Ok(Thinking::Enabled {
                budget: opt_u64(&t, Key::budget_tokens, "thinking")?,
            });
        }
    }
    Ok(Thinking::Off)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::wire::edit::{CallAt, Change, Step};
    use crate::wire::read::read_history;
    use crate::wire::write_edit;

    /// Ollama's native `/api/chat` messages: calls without ids, results naming their tool,
    /// arguments sent as an object.
    #[test]
    fn ollama_calls_pair_by_tool_name_and_keep_object_arguments() {
        let h = json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "run", "arguments": {"cmd": "make"}}},
                {"function": {"name": "run", "arguments": {"cmd": "make test"}}}]},
            {"role": "tool", "tool_name": "run", "content": "built"},
            {"role": "tool", "tool_name": "run", "content": "2 failed"},
            {"role": "user", "content": "why?", "images": ["iVBORw0KGgo="]}
        ]);
        let msgs = read_history(&&h).unwrap();
        assert_eq!(msgs[1].tool_calls[0].id, "run");
        assert_eq!(msgs[2].tool_call_id, Some("run"));
        assert_eq!(msgs[3].tool_call_id, Some("run"));
        assert!(
            crate::compaction::check(&msgs, crate::wire::wire_format::WireFormat::Chat, &[])
                .is_empty()
        );
        assert_eq!(msgs[4].parts().len(), 2);
        let edit = write_edit(
            1,
            &msgs[1],
            &Change::Arguments {
                call: CallAt::ToolCalls(1),
                json: "{\"cmd\":\"make…\"}".to_string(),
            },
        )
        .unwrap();
        assert_eq!(edit.value, "{\"cmd\":\"make…\"}");
        assert_eq!(edit.path[3], Step::Key("arguments"));
        // A string sent as a string stays one.
        let chat = json!([{"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{\"cmd\":\"make test\"}"}}]}]);
        let msgs = read_history(&&chat).unwrap();
        let edit = write_edit(
            0,
            &msgs[0],
            &Change::Arguments {
                call: CallAt::ToolCalls(0),
                json: "{\"cmd\":\"m\"}".to_string(),
            },
        )
        .unwrap();
        assert_eq!(edit.value, "\"{\\\"cmd\\\":\\\"m\\\"}\"");
    }

    /// Ollama's native images sit in their own field beside a string content: a masked one is
    /// written on the message's `content` and `images` together, never at `content[k]`.
    #[test]
    fn ollama_native_images_are_masked_on_their_own_field() {
        let h = json!([
            {"role": "tool", "tool_name": "shot", "content": "screen", "images": ["iVBORw0KGgo=", "iVBORw0KGgo="]},
            {"role": "user", "content": "look", "images": ["iVBORw0KGgo="]},
            {"role": "user", "images": ["iVBORw0KGgo="]},
            {"role": "user", "content": [{"type": "text", "text": "a list"},
                {"type": "image_url", "image_url": {"url": "https://x.example/a.png"}}], "images": ["iVBORw0KGgo="]}
        ]);
        let msgs = read_history(&&h).unwrap();
        assert_eq!(
            msgs.iter().map(|m| m.images_from).collect::<Vec<_>>(),
            [Some(1), Some(1), Some(0), Some(2)]
        );
        let masked = |i: usize, part: usize| {
            let change = Change::Image {
                part,
                text: "[image omitted]".to_string(),
            };
            write_edit(i, &msgs[i], &change).map(|e| (e.path, e.value))
        };
        let whole = |content: &str| {
            Some((
                Vec::new(),
                format!("{{\"content\":\"{content}\",\"images\":[]}}"),
            ))
        };
        // A tool result's images, and a plain user turn's (no format shown: Ollama's field).
        assert_eq!(masked(0, 1), whole("screen\\n[image omitted]"));
        assert_eq!(masked(1, 1), whole("look\\n[image omitted]"));
        assert_eq!(masked(2, 0), whole("[image omitted]"));
        // A content list beyond one text has no string to say it in: left alone.
        assert_eq!(masked(3, 2), None);
        assert_eq!(masked(0, 0), None);
    }
}
