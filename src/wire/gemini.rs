//! Gemini `contents`: `{"role": "user" | "model", "parts": [...]}` with parts keyed by their
//! kind: `text`, `inlineData`, `functionCall`, `functionResponse` (snake case from the Python
//! SDK's field names: `inline_data`, `function_call`, `function_response`).
//!
//! Detection: a `parts` list. Edits (https://ai.google.dev/api/caching#Part): a tool result is
//! the `functionResponse.response` object, replaced by `{"output": text}` (the key the docs name
//! for a function's output, https://ai.google.dev/api/caching#FunctionResponse), or by its own
//! JSON with the middle of its longest string cut; an omitted
//! image becomes `{"text": ...}`; shortened arguments stay a JSON *object* at
//! `functionCall.args`.

use std::borrow::Cow;

use super::anthropic::object_arguments;
use super::dialect::{BlankText, CallIdRule, Dialect};
use super::edit::role_and_text_list;
use super::edit::{
    if_smaller, if_smaller_string, image_replaced, json_string, object_of, one_text_part,
    plain_text, CallAt, Change, Step, Written,
};
use super::fields::{
    image_data, invalid, json_or_str, opaque, opt_id, opt_str, PartReader, Reader,
};
use super::input::{Input, Key, ReadResult, Shape, Src};
use super::request_body::{list_items, opt_u64, Api, Body, History, Thinking, ToolChoice, Turn};
use super::wire_format::WireFormat;
use super::Format;
use crate::message::{Content, Detail, Image, ImageSource, Message, Part, ToolCall};
use crate::recall::RecalledSource;

/// A Gemini part (no `type` key; its kind is its key).
pub(crate) fn keyed_part<'a, V: Input<'a>, D: PartReader>(
    r: &Reader<D>,
    p: &V,
    path: &str,
) -> ReadResult<Part<'a>, V::Error> {
    r.thought_signature(p, path)?;
    if let Some(t) = opt_str(p, Key::text, format_args!("{path}.text"))? {
        // An untyped text block is Bedrock's (`content: [{"text"}]`) unless the message is
        // already known to be Gemini (it has `parts`, seen before its parts are read: the
        // first format a message shows wins).
        r.saw(Format::Bedrock);
        return Ok(Part::Text(t));
    }
    if let Some((d, _, snake)) = spelled(p, Key::inlineData, Key::inline_data)? {
        r.saw(spelling(snake));
        let mime = match opt_id(&d, Key::mimeType, path)? {
            Some(m) => m,
            None => opt_id(&d, Key::mime_type, path)?.unwrap_or(""),
        };
        if mime.starts_with("image/") {
            if let Some(data) = d.get(Key::data).src()? {
                if let Some(source) = image_data(&data)? {
                    return Ok(Part::Image(Image {
                        source,
                        detail: part_resolution(p)?,
                    }));
                }
            }
        }
        return opaque("inlineData", &d);
    }
    if let Some((f, _, snake)) = spelled(p, Key::functionCall, Key::function_call)? {
        r.saw(spelling(snake));
        let name = opt_id(&f, Key::name, format_args!("{path}.functionCall.name"))?.unwrap_or("");
        let id = opt_id(&f, Key::id, format_args!("{path}.functionCall.id"))?.unwrap_or(name);
        let arguments = match f.get(Key::args).src()? {
            Some(a) => json_or_str(&a, format_args!("{path}.functionCall.args"))?,
            None => Cow::Borrowed("{}"),
        };
        return Ok(Part::ToolUse(ToolCall {
            id,
            name,
            arguments,
        }));
    }
    if let Some((f, _, snake)) = spelled(p, Key::functionResponse, Key::function_response)? {
        r.saw(spelling(snake));
        let name =
            opt_id(&f, Key::name, format_args!("{path}.functionResponse.name"))?.unwrap_or("");
        let own_id = opt_id(&f, Key::id, format_args!("{path}.functionResponse.id"))?;
        let id = own_id.unwrap_or(name);
        let body = match f.get(Key::response).src()? {
            Some(r) => r.json_text().src()?,
            None => String::new(),
        };
        let mut content = vec![Part::Text(Cow::Owned(body))];
        // Gemini 3 multimodal function responses carry images and files beside the
        // `response` object, in `functionResponse.parts`
        // (https://ai.google.dev/gemini-api/docs/function-calling, "Multimodal function
        // responses"): billed as media (1,088 tokens per image in the recorded requests).
        // (The key spelling its media parts use says nothing of the spelling of the
        // `functionResponse` an edit writes into: pydantic-ai sends `inline_data` inside a
        // `functionResponse`, and the message read as snake case could take no edit.)
        if let Some(media) = f.get(Key::parts).src()? {
            let spelled_as = r.format.get();
            content.extend(r.nested_parts(&media, &format!("{path}.functionResponse.parts"))?);
            r.format.set(spelled_as);
        }
        return Ok(Part::ToolResult {
            tool_use_id: id,
            content,
            // (A function's error is inside its `response`, read with its words.)
            is_error: false,
            name: own_id.map(|_| name),
        });
    }
    // Code the model ran with the code execution tool (`executableCode: {language, code}`) and
    // what the run returned (`codeExecutionResult: {outcome, output}`), both in the model's
    // turn: read as a call and its result in that turn, as a server tool's are, so the summary
    // shows the code and its output (and a failed run as an error) and both are priced as their
    // text. Unknown parts, they were priced as JSON (3x under for a table of numbers) and the
    // summary said "0 tool calls". No edit of Gemini's writes these parts: never edited.
    if let Some((e, key, snake)) = spelled(p, Key::executableCode, Key::executable_code)? {
        r.saw(spelling(snake));
        r.frozen.set(true);
        let code = opt_str(&e, Key::code, format_args!("{path}.{}.code", key.as_str()))?;
        let mut arguments = String::from("{\"code\":");
        crate::json_string::push_json_string(&mut arguments, code.as_deref().unwrap_or(""));
        arguments.push('}');
        r.server_calls.borrow_mut().push(CODE_EXECUTION.to_string());
        return Ok(Part::ToolUse(ToolCall {
            id: CODE_EXECUTION,
            name: CODE_EXECUTION,
            arguments: Cow::Owned(arguments),
        }));
    }
    if let Some((c, key, snake)) = spelled(p, Key::codeExecutionResult, Key::code_execution_result)?
    {
        r.saw(spelling(snake));
        r.frozen.set(true);
        let output = opt_str(
            &c,
            Key::output,
            format_args!("{path}.{}.output", key.as_str()),
        )?;
        let outcome = opt_id(
            &c,
            Key::outcome,
            format_args!("{path}.{}.outcome", key.as_str()),
        )?;
        return Ok(Part::ToolResult {
            tool_use_id: CODE_EXECUTION,
            content: vec![Part::Text(output.unwrap_or(Cow::Borrowed("")))],
            // `OUTCOME_OK`; `OUTCOME_FAILED`, `OUTCOME_DEADLINE_EXCEEDED` are failures.
            is_error: outcome.is_some_and(|o| o != "OUTCOME_OK"),
            name: None,
        });
    }
    // A server-side tool the model invoked (`toolCall: {id, toolType, args}`) and what it
    // returned (`toolResponse: {id, toolType, response}`), in the model's turn when the request
    // sets `toolConfig.includeServerSideToolInvocations` (google-genai `Part.tool_call` /
    // `Part.tool_response`): read as a call and its result in that turn, like a code run, so
    // the summary says what was searched and found. The SDK writes the inner key `tool_type`.
    if let Some((c, at, kind)) = server_part(r, p, path, Key::toolCall, Key::tool_call)? {
        let arguments = match c.get(Key::args).src()? {
            Some(a) => json_or_str(&a, format_args!("{path}.{at}.args"))?,
            None => Cow::Borrowed("{}"),
        };
        let id = opt_id(&c, Key::id, format_args!("{at}.id"))?.unwrap_or(kind);
        r.server_calls.borrow_mut().push(id.to_string());
        return Ok(Part::ToolUse(ToolCall {
            id,
            name: kind,
            arguments,
        }));
    }
    if let Some((c, at, kind)) = server_part(r, p, path, Key::toolResponse, Key::tool_response)? {
        let body = match c.get(Key::response).src()? {
            Some(v) => v.json_text().src()?,
            None => String::new(),
        };
        return Ok(Part::ToolResult {
            tool_use_id: opt_id(&c, Key::id, format_args!("{at}.id"))?.unwrap_or(kind),
            content: vec![Part::Text(Cow::Owned(body))],
            is_error: false,
            name: None,
        });
    }
    // An uploaded image (`fileData: {mimeType, fileUri}`, https://ai.google.dev/api/caching#FileData):
    // sized by its URI. Other files and other keyed parts: priced as media by their MIME type.
    if let Some((f, key, snake)) = spelled(p, Key::fileData, Key::file_data)? {
        let (mime_key, uri_key) = if snake {
            (Key::mime_type, Key::file_uri)
        } else {
            (Key::mimeType, Key::fileUri)
        };
        let mime = opt_id(&f, mime_key, format_args!("{path}.{}", key.as_str()))?;
        if mime.is_some_and(|m| m.starts_with("image/")) {
            r.saw(spelling(snake));
            let uri = opt_id(&f, uri_key, format_args!("{path}.{}", key.as_str()))?;
            return Ok(Part::Image(Image {
                source: ImageSource::File(uri.unwrap_or("")),
                detail: part_resolution(p)?,
            }));
        }
        // A YouTube video is passed by its URL alone, with no MIME type ("Pass a YouTube
        // URL as `file_uri`", Gemini API video understanding): priced as the video it is.
        if mime.is_none() {
            let uri = opt_id(&f, uri_key, format_args!("{path}.{}", key.as_str()))?;
            if uri.is_some_and(|u| u.contains("youtube.com/") || u.contains("youtu.be/")) {
                return opaque("video", p);
            }
        }
    }
    opaque("unknown", p)
}

/// The value of the part key `p` has in either spelling, Gemini's REST camelCase (`camel`) or
/// the SDKs' snake_case (`snake`), with the key found and whether it was the snake one.
fn spelled<'a, V: Input<'a>>(
    p: &V,
    camel: Key,
    snake: Key,
) -> ReadResult<Option<(V, Key, bool)>, V::Error> {
    for (key, is_snake) in [(camel, false), (snake, true)] {
        if let Some(v) = p.get(key).src()? {
            return Ok(Some((v, key, is_snake)));
        }
    }
    Ok(None)
}

/// The format a part's key spelling shows.
fn spelling(snake: bool) -> Format {
    if snake {
        Format::GeminiSnake
    } else {
        Format::Gemini
    }
}

/// A server-run call of `msg` (read into `calls`: ids) whose result is not in the same message
/// becomes the text it is, `[name arguments]`: the summary and a summarizer's transcript still
/// say what was run. Such a call is answered by the server in the turn that makes it, never by
/// the next message: read as a call, it would need a result no one sends (the check refused the
/// history, `repair` wrote a `functionResponse` for it). The message is never edited.
pub(crate) fn settle_server_calls(msg: &mut Message<'_>, calls: &[String]) {
    let open: Vec<usize> = msg
        .parts()
        .iter()
        .enumerate()
        .filter_map(|(k, p)| match p {
            Part::ToolUse(c) if calls.iter().any(|id| id == c.id) && !msg.answered_here(c.id) => {
                Some(k)
            }
            _ => None,
        })
        .collect();
    let Content::Parts(parts) = &mut msg.content else {
        return;
    };
    for k in open {
        if let Part::ToolUse(c) = &parts[k] {
            let text = format!("[{} {}]", c.name, c.arguments);
            parts[k] = Part::Text(Cow::Owned(text));
        }
    }
}

/// The media resolution a Gemini 3 part asks for (`mediaResolution: {"level":
/// "MEDIA_RESOLUTION_LOW"}` beside its `inlineData` / `fileData`; google-genai
/// `Part.media_resolution`); `Auto` when it names none or a level this version does not know.
fn part_resolution<'a, V: Input<'a>>(p: &V) -> ReadResult<Detail, V::Error> {
    match spelled(p, Key::mediaResolution, Key::media_resolution)? {
        Some((m, _, _)) => media_resolution(&m),
        None => Ok(Detail::Auto),
    }
}

/// A media resolution written as its level (`"MEDIA_RESOLUTION_LOW"`, a generation config's
/// `mediaResolution`) or as a part's `{"level": ...}`; `Auto` for anything else.
pub(crate) fn media_resolution<'a, V: Input<'a>>(m: &V) -> ReadResult<Detail, V::Error> {
    let level = match m.shape() {
        Shape::Map | Shape::Object => match m.get(Key::level).src()? {
            Some(l) => l.str().src()?,
            None => None,
        },
        _ => m.str().src()?,
    };
    Ok(level
        .and_then(|l| Detail::parse_media_resolution(&l))
        .unwrap_or(Detail::Auto))
}

/// A server-side invocation's part under either spelling of its key (`camel` / `snake`): its
/// value, path and `toolType`. The message holding it is read as never edited.
fn server_part<'a, V: Input<'a>, D: PartReader>(
    r: &Reader<D>,
    p: &V,
    path: &str,
    camel: Key,
    snake: Key,
) -> ReadResult<Option<(V, String, &'a str)>, V::Error> {
    let Some((c, key, is_snake)) = spelled(p, camel, snake)? else {
        return Ok(None);
    };
    r.saw(spelling(is_snake));
    r.frozen.set(true);
    let at = format!("{path}.{}", key.as_str());
    let kind = server_tool_type(&c, &at)?;
    Ok(Some((c, at, kind)))
}

/// The `toolType` of a server-side tool invocation (`GOOGLE_SEARCH_WEB`), its name in the
/// summary; `server_tool` when it gives none.
fn server_tool_type<'a, V: Input<'a>>(c: &V, at: &str) -> ReadResult<&'a str, V::Error> {
    Ok(
        match opt_id(c, Key::toolType, format_args!("{at}.toolType"))? {
            Some(t) => t,
            None => {
                opt_id(c, Key::tool_type, format_args!("{at}.tool_type"))?.unwrap_or("server_tool")
            }
        },
    )
}

/// The call id and name of a Gemini code execution and its result (the API gives them none).
const CODE_EXECUTION: &str = "code_execution";

/// An edit of a Gemini content; `snake` when its parts use the SDK's snake-case keys.
pub(crate) fn write(msg: &Message<'_>, change: &Change, snake: bool) -> Option<Written> {
    let (call_key, response_key) = part_keys(snake);
    match change {
        Change::ResultText {
            part: Some(k),
            text,
        } => {
            let Part::ToolResult {
                content,
                tool_use_id,
                name,
                ..
            } = msg.parts().get(*k)?
            else {
                return None;
            };
            // A multimodal response (its screenshots in its own `parts`) is rewritten whole, by
            // its name (and id), with no parts: an edit of its `response` alone left the images,
            // and every old screenshot of a computer-use loop stayed.
            if let [Part::Text(_), media @ ..] = content.as_slice() {
                if !media.is_empty() && media.iter().all(Part::is_media) {
                    // (A response with no id of its own is named by its id: `tool_use_id`.)
                    let value = function_response_json(
                        tool_use_id,
                        name.unwrap_or(tool_use_id),
                        "output",
                        text,
                        None,
                    );
                    return Some((
                        vec![Step::Key("parts"), Step::Index(*k), Step::Key(response_key)],
                        value,
                    ));
                }
            }
            // The view's text is the response object's compact JSON: its exact size.
            let [Part::Text(old)] = content.as_slice() else {
                return None;
            };
            // A cut of that JSON is JSON still (`degrade::cut_text` cuts inside its longest
            // string): it stays the response object, its keys in place. Wrapped as an output
            // string it was the original escaped once more, every quote a `\"`: a reservation
            // cut to 1,880 tokens grew past its whole size in bytes, so no cut between ~1,750
            // tokens and the whole 2,097 could be written, and the history landed at 87% of
            // its budget. A placeholder (plain text) is the `output` the docs name.
            response_written(old, *k, response_key, text)
        }
        // The response beside its screenshots (a result's middle cut in the kept tail): the
        // `response` object written as a lone response's is, its `parts` kept. Not written, a
        // long pending response with a screenshot raised `CompactionBudgetError` where the
        // task and the last user turn fit.
        Change::ResultPartText {
            part: k,
            inner: 0,
            text,
        } => {
            let Part::ToolResult { content, .. } = msg.parts().get(*k)? else {
                return None;
            };
            let Some(Part::Text(old)) = content.first() else {
                return None;
            };
            response_written(old, *k, response_key, text)
        }
        Change::Image { part, text } => image_replaced(
            msg,
            *part,
            vec![Step::Key("parts"), Step::Index(*part)],
            text_block_json(text),
        ),
        Change::Text { text } => plain_text(msg, "parts", text, Some(&one_text_part)),
        // A text part beside the turn's images (an observation's mask or middle cut).
        Change::PartText { part, text } => {
            let Some(Part::Text(old)) = msg.parts().get(*part) else {
                return None;
            };
            if_smaller_string(
                old,
                vec![Step::Key("parts"), Step::Index(*part), Step::Key("text")],
                json_string(text),
            )
        }
        Change::Arguments {
            call: CallAt::Part(k),
            json,
        } => object_arguments(
            msg,
            *k,
            json,
            vec![
                Step::Key("parts"),
                Step::Index(*k),
                Step::Key(call_key),
                Step::Key("args"),
            ],
        ),
        _ => None,
    }
}

/// The `response` object of the function response at part `k` (under `response_key`, its
/// spelling) written as `text` when smaller than its view `old` (the object's compact JSON): a
/// cut of that JSON is JSON still, and stays the object; a placeholder (plain text) is its
/// `output`.
fn response_written(
    old: &str,
    k: usize,
    response_key: &'static str,
    text: &str,
) -> Option<Written> {
    let value = if is_json_object(text) {
        text.to_string()
    } else {
        object_of(&[("output", text)])
    };
    if_smaller(
        old.len(),
        vec![
            Step::Key("parts"),
            Step::Index(k),
            Step::Key(response_key),
            Step::Key("response"),
        ],
        value,
    )
}

/// A text message, `{"role", "parts": [{"text"}]}`, as compact JSON.
pub(crate) fn text_message_json(role: &str, text: &str) -> String {
    role_and_text_list(role, "parts", text)
}

/// A text part, `{"text"}`, as compact JSON.
pub(crate) fn text_block_json(text: &str) -> String {
    object_of(&[("text", text)])
}

/// A tool of Gemini's tool list holding one function declaration, `{"functionDeclarations":
/// [{"name", "description", "parameters"}]}` (https://ai.google.dev/api/caching#Tool), as
/// compact JSON; `schema` is compact JSON.
pub(crate) fn tool_declaration_json(name: &str, description: &str, schema: &str) -> String {
    let mut s = String::from("{\"functionDeclarations\":[{\"name\":");
    s.push_str(&super::edit::json_string(name));
    s.push_str(",\"description\":");
    s.push_str(&super::edit::json_string(description));
    s.push_str(",\"parameters\":");
    s.push_str(schema);
    s.push_str("}]}");
    s
}

/// Whether `text` is a JSON object (what a `functionResponse.response` must be).
fn is_json_object(text: &str) -> bool {
    text.trim_start().starts_with('{')
        && matches!(
            serde_json::from_str::<serde_json::Value>(text),
            Ok(serde_json::Value::Object(_))
        )
}

/// The key of a function call / response part in the REST spelling or (`snake`) the Python
/// SDK's.
fn part_keys(snake: bool) -> (&'static str, &'static str) {
    if snake {
        ("function_call", "function_response")
    } else {
        ("functionCall", "functionResponse")
    }
}

/// A `functionResponse` part answering `call_id` of `name` with `{field: text}`, as compact
/// JSON; the id is named only when the call had one (a call read without an id has its name as
/// id).
fn response_part_json(call_id: &str, name: &str, field: &str, text: &str, snake: bool) -> String {
    let f = function_response_json(call_id, name, field, text, None);
    format!("{{\"{}\":{f}}}", part_keys(snake).1)
}

/// A `functionResponse` object: `name`, `id` where it is not the name, `response` as
/// `{field: text}`, and `parts` (their JSON, joined) where given.
fn function_response_json(
    call_id: &str,
    name: &str,
    field: &str,
    text: &str,
    parts: Option<&str>,
) -> String {
    let mut f = String::from("{\"name\":");
    f.push_str(&super::edit::json_string(name));
    if call_id != name {
        f.push_str(",\"id\":");
        f.push_str(&super::edit::json_string(call_id));
    }
    f.push_str(",\"response\":");
    f.push_str(&object_of(&[(field, text)]));
    if let Some(parts) = parts {
        f.push_str(",\"parts\":[");
        f.push_str(parts);
        f.push(']');
    }
    f.push('}');
    f
}

/// The user content answering function call `call_id` of `name` with `text`: one
/// `functionResponse` part whose response is `{"output": text}` (the docs' key for a
/// function's output). `snake`: the Python SDK's key spelling.
pub(crate) fn tool_result_json(call_id: &str, name: &str, text: &str, snake: bool) -> String {
    let part = response_part_json(call_id, name, "output", text, snake);
    format!("{{\"role\":\"user\",\"parts\":[{part}]}}")
}

/// The user content answering `call_id` of `name` with `text` and `images`: one
/// `functionResponse` whose `parts` carry the images as inline data (Gemini 3's multimodal
/// function responses), as compact JSON. None for an image given by URL or file URI (a
/// function response part's file data needs a media type a recall does not know).
pub(crate) fn tool_result_with_images_json(
    call_id: &str,
    name: &str,
    text: &str,
    images: &[RecalledSource<'_>],
    snake: bool,
) -> Option<String> {
    let (inline, mime) = if snake {
        ("inline_data", "mime_type")
    } else {
        ("inlineData", "mimeType")
    };
    let mut parts = Vec::with_capacity(images.len());
    for img in images {
        // (A document is not given: neither google-genai's types nor its docs say a function
        // response part takes one; FunctionResponseBlob is any MIME type by its types alone.)
        let RecalledSource::Base64 { media_type, data } = *img else {
            return None;
        };
        parts.push(format!(
            "{{\"{inline}\":{}}}",
            object_of(&[(mime, media_type), ("data", data)])
        ));
    }
    let response = function_response_json(call_id, name, "output", text, Some(&parts.join(",")));
    let part = format!("{{\"{}\":{response}}}", part_keys(snake).1);
    Some(format!("{{\"role\":\"user\",\"parts\":[{part}]}}"))
}

/// The path to the id inside the part at `k` under `key`.
fn part_id_path(k: usize, key: &'static str) -> Vec<Step> {
    vec![
        Step::Key("parts"),
        Step::Index(k),
        Step::Key(key),
        Step::Key("id"),
    ]
}

/// Where the id of the `functionCall` part at `at` sits (repair renames duplicates there).
pub(crate) fn call_id_path(at: CallAt, snake: bool) -> Option<Vec<Step>> {
    match at {
        CallAt::Part(k) => Some(part_id_path(k, part_keys(snake).0)),
        CallAt::ToolCalls(_) => None,
    }
}

/// Where the `functionResponse` part at `part` names its call.
pub(crate) fn result_id_path(part: Option<usize>, snake: bool) -> Option<Vec<Step>> {
    part.map(|k| part_id_path(k, part_keys(snake).1))
}

/// A `functionResponse` part whose response is `{"error": text}` (the docs' key for error
/// details), as compact JSON; the id is named only when the call had one.
pub(crate) fn error_result_block_json(
    call_id: &str,
    name: &str,
    text: &str,
    snake: bool,
) -> String {
    response_part_json(call_id, name, "error", text, snake)
}

/// Gemini `contents` (user / model turns of `parts`), keys in camel case as the REST API
/// spells them.
pub const DIALECT: Dialect = Dialect {
    wire: WireFormat::Gemini,
    history_key: "contents",
    content_key: "parts",
    assistant_role: "model",
    strict_turns: true,
    thinking_in_content: true,
    text_message: text_message_json,
    text_block: |_, text| text_block_json(text),
    write: |msg, change| write(msg, change, false),
    // (Gemini's `functionCall.id` is optional and names no rule.)
    call_id: CallIdRule::ANY,
    // Recorded requests with a `{"text": ""}` user turn were answered (gemini-2.5-flash and
    // gemini-3-flash-preview, pydantic-ai's test_google cassettes); only a turn without parts is
    // refused ("contents.parts must not be empty").
    blank_text: BlankText::Taken,
    // (Two recorded gemini-3 requests with two model turns in a row were answered.)
    refuses_same_role: false,
    refuses_prefill_trailing_space: false,
    refuses_assistant_before_system: false,
    refuses_user_after_tool: false,
};

/// Gemini parts in the Python SDK's snake case (`function_call`, `inline_data`): written back
/// in the same spelling.
pub const SNAKE_DIALECT: Dialect = Dialect {
    write: |msg, change| write(msg, change, true),
    ..DIALECT
};
/// The history of a `generateContent` body. The REST API takes a list of `Content`s; the
/// Python SDK's `generate_content(contents=...)` also takes one `Content`, one part (a str, a
/// `Part`, a part dict) or a list mixing them, and wraps them before sending (google-genai's
/// `t_contents`): a list inside the list is one user turn of its parts, and a run of
/// consecutive parts is one turn, `model` when its parts are function calls and `user`
/// otherwise, a new run starting where that changes.
fn contents<'a, V: Input<'a>>(b: &V) -> ReadResult<History<'a, V>, V::Error> {
    let Some(c) = b.get(Key::contents).src()? else {
        return Err(invalid("contents", "missing"));
    };
    let items = match c.shape() {
        Shape::List => {
            let items = c.items().src()?.unwrap_or_default();
            // The REST shape, a list of contents, is handed back as given.
            let mut all_contents = true;
            for v in &items {
                if !is_content(v)? {
                    all_contents = false;
                    break;
                }
            }
            if all_contents {
                return Ok(History::List(c));
            }
            items
        }
        Shape::Str | Shape::Map | Shape::Object => vec![c],
        _ => {
            return Err(invalid(
                "contents",
                format!(
                    "contents must be a list, a Content or a part, got {}",
                    c.type_name()
                ),
            ))
        }
    };
    let mut turns = Vec::new();
    let mut run: Vec<V> = Vec::new();
    let mut run_role = "user";
    for v in items {
        let role = match v.shape() {
            Shape::List => {
                flush(&mut turns, &mut run, run_role);
                let parts = v.items().src()?.unwrap_or_default();
                turns.push(Turn::Parts {
                    role: "user",
                    parts,
                });
                continue;
            }
            Shape::Str => "user",
            Shape::Map | Shape::Object if !is_content(&v)? => {
                if v.get(Key::functionCall).src()?.is_some()
                    || v.get(Key::function_call).src()?.is_some()
                {
                    "model"
                } else {
                    "user"
                }
            }
            // A content, or a value no turn holds (the history reader reports it).
            _ => {
                flush(&mut turns, &mut run, run_role);
                turns.push(Turn::Message(v));
                continue;
            }
        };
        if role != run_role {
            flush(&mut turns, &mut run, run_role);
            run_role = role;
        }
        run.push(v);
    }
    flush(&mut turns, &mut run, run_role);
    Ok(History::Turns(turns))
}

/// Whether `v` is a `Content` (it has `role` or `parts`) rather than a part.
fn is_content<'a, V: Input<'a>>(v: &V) -> ReadResult<bool, V::Error> {
    if !matches!(v.shape(), Shape::Map | Shape::Object) {
        return Ok(false);
    }
    Ok(v.get(Key::role).src()?.is_some() || v.get(Key::parts).src()?.is_some())
}

/// Close a run of parts as one turn.
fn flush<V>(turns: &mut Vec<Turn<V>>, run: &mut Vec<V>, role: &'static str) {
    if !run.is_empty() {
        turns.push(Turn::Parts {
            role,
            parts: std::mem::take(run),
        });
    }
}

/// A `generateContent` request: `contents`, `systemInstruction`, `tools` (function
/// declarations flattened; `googleSearch`, `codeExecution`, ... kept as server tools),
/// `toolConfig.functionCallingConfig.mode`, `generationConfig` (its schema and
/// `thinkingConfig`). The Python SDK's `config` (snake case, the same fields) is read too.
pub(crate) fn body<'a, V: Input<'a>>(b: &V) -> ReadResult<Body<'a, V>, V::Error> {
    let mut out = Body::new(Api::Gemini, contents(b)?);
    let config = b.get(Key::config).src()?;
    let field = |camel: Key, snake: Key| -> ReadResult<Option<V>, V::Error> {
        for src in [Some(b), config.as_ref()].into_iter().flatten() {
            for k in [camel, snake] {
                if let Some(v) = src.get(k).src()? {
                    return Ok(Some(v));
                }
            }
        }
        Ok(None)
    };
    out.system = match field(Key::systemInstruction, Key::system_instruction)? {
        Some(s) => match s.get(Key::parts).src()? {
            Some(p) => Some(p),
            None if s.str().src()?.is_some() || s.shape() == super::Shape::List => Some(s),
            None => s.get(Key::text).src()?,
        },
        None => None,
    };
    // The API takes one Tool object where the list goes (a recorded generateContent body of
    // `"tools": {"function_declarations": [...]}` was answered with a call of that tool).
    let tools = field(Key::tools, Key::tools)?;
    let one = tools
        .as_ref()
        .is_some_and(|t| matches!(t.shape(), super::Shape::Map | super::Shape::Object));
    let tools = if one {
        tools.into_iter().collect()
    } else {
        list_items(tools, "tools")?
    };
    for (j, t) in tools.into_iter().enumerate() {
        // (A None, a number or a string in the list held no tool: its tools went unpriced
        // without a word, where chat and Anthropic bodies name the item.)
        if !matches!(t.shape(), super::Shape::Map | super::Shape::Object) {
            return Err(invalid(
                format!("tools[{j}]"),
                super::read::not_a_tool(&t.type_name()),
            ));
        }
        let decls = match t.get(Key::functionDeclarations).src()? {
            Some(d) => Some(d),
            None => t.get(Key::function_declarations).src()?,
        };
        if let Some(d) = decls {
            let path = if one {
                "tools.functionDeclarations".to_string()
            } else {
                format!("tools[{j}].functionDeclarations")
            };
            for (k, decl) in list_items(Some(d), &path)?.into_iter().enumerate() {
                // Checked here, where the body's path is known (the estimate reads the
                // flattened list).
                let field = format!("{path}[{k}]");
                super::read::tool_name(&decl, &field)?;
                out.tools.push(decl);
                out.tool_fields.push(field);
            }
        }
        for (k, v) in t.entries().src()?.unwrap_or_default() {
            // An SDK `Tool` dumped whole names every kind, the unset ones as null.
            if k != "functionDeclarations"
                && k != "function_declarations"
                && v.shape() != super::Shape::Null
            {
                out.settings.server_tools.push(k);
            }
        }
    }
    if let Some(tc) = field(Key::toolConfig, Key::tool_config)? {
        let fc = match tc.get(Key::functionCallingConfig).src()? {
            Some(f) => Some(f),
            None => tc.get(Key::function_calling_config).src()?,
        };
        if let Some(fc) = fc {
            let mode = opt_str(&fc, Key::mode, "toolConfig.functionCallingConfig.mode")?;
            out.settings.tool_choice = match mode.as_deref().map(str::to_ascii_uppercase) {
                Some(m) if m == "ANY" || m == "VALIDATED" => ToolChoice::Any,
                Some(m) if m == "NONE" => ToolChoice::None,
                Some(m) if m == "AUTO" => ToolChoice::Auto,
                _ => ToolChoice::Unset,
            };
        }
    }
    // The SDK's `config` holds the generation settings itself.
    let gen = match field(Key::generationConfig, Key::generation_config)? {
        Some(g) => Some(g),
        None => config,
    };
    if let Some(g) = &gen {
        let thinking = match g.get(Key::thinkingConfig).src()? {
            Some(t) => Some(t),
            None => g.get(Key::thinking_config).src()?,
        };
        if let Some(t) = thinking {
            let mut budget = opt_u64(&t, Key::thinkingBudget, "thinkingConfig")?;
            if budget.is_none() {
                budget = opt_u64(&t, Key::thinking_budget, "thinkingConfig")?;
            }
            out.settings.thinking = match budget {
                Some(0) => Thinking::Off,
                b => Thinking::Enabled { budget: b },
            };
            for k in [Key::thinkingLevel, Key::thinking_level] {
                if let Some(l) = opt_str(&t, k, "thinkingConfig.thinkingLevel")? {
                    out.settings.reasoning_effort = Some(l.into_owned());
                }
            }
        }
    }
    out.response_format = gen;
    Ok(out)
}
