//! The dispatch over formats: a message, a part of any format, a history, tool definitions,
//! system prompts and a request's extras. Format-specific shapes are read by the format files;
//! the field readers they share live below them (`fields`).

use std::borrow::Cow;

use super::fields::{
    self, borrowed_or_placeholder, invalid, joined_text, opaque, opt_id, opt_str, str_value,
    PartReader,
};
use super::input::{Input, Key, ReadError, ReadResult, Shape, Src};
use super::{anthropic, bedrock, gemini, openai_chat, openai_responses, Format};
use crate::message::{Content, Detail, Image, ImageSource, Message, Part, Role};
use crate::request_extras::{RequestExtras, ToolDef};

/// The part readers of every format, tried in order (typed parts by their `type`, keyed parts
/// by the key that names their kind).
pub(crate) struct AnyFormat;

impl PartReader for AnyFormat {
    /// One content part of any supported wire format: typed parts by their `type`, keyed
    /// parts (Gemini, Bedrock) by the key that names their kind.
    fn part<'a, V: Input<'a>>(
        r: &fields::Reader<Self>,
        p: &V,
        path: &str,
    ) -> ReadResult<Part<'a>, V::Error> {
        if let Some(s) = p.str().src()? {
            return Ok(Part::Text(s));
        }
        if !matches!(p.shape(), Shape::Map | Shape::Object) {
            return Err(invalid(
                path,
                format!("expected a content part object, got {}", p.type_name()),
            ));
        }
        let Some(kind) = opt_id(p, Key::kind, format_args!("{path}.type"))? else {
            if let Some(part) = bedrock::keyed_part(r, p, path)? {
                return Ok(part);
            }
            return gemini::keyed_part(r, p, path);
        };
        if let Some(part) = openai_chat::typed_part(r, kind, p, path)? {
            return Ok(part);
        }
        if let Some(part) = openai_responses::typed_part(r, kind, p, path)? {
            return Ok(part);
        }
        if let Some(part) = anthropic::typed_part(r, kind, p, path)? {
            return Ok(part);
        }
        opaque(kind, p)
    }
}

/// The reader of one message, over every format's parts.
pub(crate) type Reader = fields::Reader<AnyFormat>;

/// The top-level fields of a message, read in one pass.
const MESSAGE_FIELDS: [Key; 14] = [
    Key::role,
    Key::content,
    Key::parts,
    Key::tool_calls,
    Key::tool_call_id,
    Key::name,
    Key::reasoning_content,
    Key::reasoning,
    Key::reasoning_details,
    Key::tool_name,
    Key::images,
    Key::kind,
    Key::function_call,
    // (A Responses item's id, read in the one pass over a message's fields rather than by a
    // lookup of its own for every assistant message.)
    Key::id,
];

/// Read one message of any supported format (OpenAI chat, a Responses input item, Anthropic,
/// Gemini `parts`, Bedrock). Errors name the field inside the message; the caller adds the
/// message's index.
pub fn read_message<'a, V: Input<'a>>(m: &V) -> ReadResult<Message<'a>, V::Error> {
    if !matches!(m.shape(), Shape::Map | Shape::Object) {
        return Err(invalid(
            "",
            format!(
                "a message must be a dict or an SDK message object, got {}",
                m.type_name()
            ),
        ));
    }
    let [role, content, parts, tool_calls, tool_call_id, name, reasoning_content, reasoning, reasoning_details, tool_name, images, kind, function_call, id] =
        m.get_many(&MESSAGE_FIELDS).src()?;
    let has_parts = parts.is_some();
    let role = match str_value(role, "role")?.map(borrowed_or_placeholder) {
        Some(role) => role,
        // A Gemini content may leave its role unset ("can be left blank or unset",
        // `Content.role` in the Gemini API reference): the user's, as a single turn is.
        None if parts.is_some() && content.is_none() => "user",
        None => return openai_responses::item::<AnyFormat, V>(m),
    };
    // Responses' `additional_tools` item carries a role (`developer`) beside its tools: read as
    // the item it is, its tools priced as their JSON, never edited, kept wherever it stands
    // (`summary_placement::is_standing_item`).
    if let Some(k) = kind.as_ref().map(|k| k.str()).transpose().src()?.flatten() {
        if k == "additional_tools" {
            let mut msg = Message::empty(role);
            if let Some(tools) = m.get(Key::tools).src()? {
                msg.content =
                    Content::Parts(vec![super::fields::opaque("additional_tools", &tools)?]);
            }
            msg.item = Some("additional_tools");
            return Ok(msg);
        }
    }
    let r = Reader::new();
    let mut msg = Message::empty(role);
    msg.content = match (content, parts) {
        (Some(c), _) => {
            let content = r.content(&c, "content")?;
            // Gemini-keyed parts (`functionCall`, ...) in a `content` list: no format writes a
            // message so, and a Gemini edit of it would name a `parts` list it does not have
            // (`repair` raised KeyError('parts')). It is read, priced, and never edited.
            if matches!(r.format.get(), Format::Gemini | Format::GeminiSnake) {
                r.format.set(Format::Unknown);
            }
            content
        }
        (None, Some(p)) => {
            r.saw(Format::Gemini);
            r.content(&p, "parts")?
        }
        (None, None) => Content::None,
    };
    if let Some(list) = images {
        msg.images_from = Some(match &msg.content {
            Content::None => 0,
            Content::Text(_) => 1,
            Content::Parts(ps) => ps.len(),
        });
        msg.content = with_images(msg.content, &list)?;
    }
    msg.name = str_value(name, "name")?.map(borrowed_or_placeholder);
    let call_id = str_value(tool_call_id, "tool_call_id")?.map(borrowed_or_placeholder);
    if call_id.is_some() {
        r.saw(Format::OpenAIChat);
    }
    // Only a `tool` message answers a call: a system or user message carrying a `tool_call_id`
    // (the field left on a message rewritten to another role) is the message its role says.
    // Read as a result, it hid the call's missing answer from the check and from `repair`.
    msg.tool_call_id = call_id.filter(|_| msg.role == Role::Tool);
    if msg.tool_call_id.is_none() && msg.role == Role::Tool {
        // Ollama's native `/api/chat` names the tool a result answers (`tool_name`), not a
        // call: its calls carry no id and are read with their name for one
        // (`openai_chat::tool_calls`), so the result pairs with the nearest call of that tool.
        msg.tool_call_id = str_value(tool_name, "tool_name")?.map(borrowed_or_placeholder);
    }
    if msg.tool_call_id.is_none() && role == "tool" && !has_parts {
        // A chat result with no id (null or left out) answers no call: read as the result of
        // the empty id, an orphan that the check names and `repair` drops, as it does a
        // result whose id is "". (Read as no result at all, it passed the check beside the
        // call it seemed to answer, whose repair then added an "interrupted" stand-in, and
        // the provider refused the id-less message.)
        msg.tool_call_id = Some("");
    }
    if msg.tool_call_id.is_none() && role == "function" {
        // A legacy chat function result (`{"role": "function", "name", "content"}`) names the
        // function it answers, as its call carries no id (`openai_chat::legacy_function_call`):
        // the name pairs the two, and is priced once, as the name it is.
        msg.tool_call_id = msg.name;
        msg.item = Some(openai_chat::LEGACY_FUNCTION_RESULT);
    }
    if msg.tool_call_id.is_some() {
        r.saw(Format::OpenAIChat);
    }
    if let (Some(call), None, Role::Assistant) = (&function_call, &tool_calls, msg.role) {
        msg.tool_calls = vec![openai_chat::legacy_function_call(call)?];
        msg.item = Some(openai_chat::LEGACY_FUNCTION_CALL);
        r.saw(Format::OpenAIChat);
    }
    if let Some(calls) = tool_calls {
        let (read, custom_call) = openai_chat::tool_calls(&calls)?;
        if read.is_empty() && msg.item.is_none() {
            msg.item = Some(openai_chat::EMPTY_CALLS);
        }
        msg.tool_calls = read;
        if custom_call {
            msg.item = Some(openai_chat::CUSTOM_CALLS);
        }
        r.saw(Format::OpenAIChat);
    }
    if msg.role == Role::Assistant {
        msg.item_id = super::fields::item_id(id)?;
        msg.reasoning = match str_value(reasoning_content, "reasoning_content")? {
            Some(r) => Some(r),
            // `reasoning` is a string on OpenAI-compatible servers, an object elsewhere.
            None => match reasoning.map(|r| r.str()).transpose().src()?.flatten() {
                Some(s) => Some(s),
                None => match reasoning_details {
                    Some(d) => openai_chat::reasoning_details(&d)?,
                    None => None,
                },
            },
        };
    }
    if !r.server_calls.borrow().is_empty() {
        gemini::settle_server_calls(&mut msg, &r.server_calls.borrow());
    }
    msg.wire = if r.frozen.get() {
        Format::Unknown
    } else {
        r.format.get()
    };
    msg.thought_signatures = r.signatures.get();
    Ok(msg)
}

/// `content` with the images of Ollama's native `images` field (base64 strings beside the
/// text) as image parts after it: priced as the images they are. The message stays one a text
/// edit writes at `content` (its format is not changed); a masked image is written on the
/// `images` field (`Message::images_from`, `openai_chat::native_images_masked`).
fn with_images<'a, V: Input<'a>>(
    content: Content<'a>,
    list: &V,
) -> ReadResult<Content<'a>, V::Error> {
    let Some(items) = list.items().src()? else {
        return Err(invalid(
            "images",
            format!("expected a list of base64 images, got {}", list.type_name()),
        ));
    };
    let mut parts = match content {
        Content::None => Vec::new(),
        Content::Text(t) => vec![Part::Text(t)],
        Content::Parts(p) => p,
    };
    for (k, item) in items.iter().enumerate() {
        // The ollama SDK's typed `Message` holds `Image` objects: the image is their `value`
        // (base64 text, bytes, or a file path, whose size is unknown here).
        let wrapped = match item.shape() {
            Shape::Object | Shape::Map => item.get(Key::value).src()?,
            _ => None,
        };
        let item = wrapped.as_ref().unwrap_or(item);
        let source = match item.str().src()? {
            Some(Cow::Borrowed(s)) => ImageSource::Base64(s),
            Some(Cow::Owned(_)) => ImageSource::Url(""),
            None => match item.bytes().src()? {
                Some(b) => ImageSource::Bytes(b),
                None if wrapped.is_some() => ImageSource::Url(""),
                None => {
                    return Err(invalid(
                        format!("images[{k}]"),
                        format!("expected base64 text or bytes, got {}", item.type_name()),
                    ))
                }
            },
        };
        parts.push(Part::Image(Image {
            source,
            detail: Detail::default(),
        }));
    }
    Ok(Content::Parts(parts))
}

/// Why a history could not be read: the message index and what went wrong in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryError<E> {
    pub index: usize,
    pub error: ReadError<E>,
}

/// Read a whole history (a list of messages).
pub fn read_history<'a, V: Input<'a>>(seq: &V) -> Result<Vec<Message<'a>>, HistoryError<V::Error>> {
    let items = match seq.items() {
        Ok(Some(items)) => items,
        Ok(None) => {
            return Err(HistoryError {
                index: 0,
                error: invalid(
                    "",
                    format!(
                        "messages must be a list of messages, got {}",
                        seq.type_name()
                    ),
                ),
            })
        }
        Err(e) => {
            return Err(HistoryError {
                index: 0,
                error: ReadError::Source(e),
            })
        }
    };
    let mut msgs = items
        .iter()
        .enumerate()
        .map(|(index, m)| read_message(m).map_err(|error| HistoryError { index, error }))
        .collect::<Result<Vec<_>, _>>()?;
    super::item_reference::bind(&mut msgs);
    Ok(msgs)
}

/// A tool definitions error: the index `j` of the definition (`None` when `tools` is not a
/// list) and what is wrong.
pub type ToolsError<E> = (Option<usize>, ReadError<E>);

/// Why a value of type `type_name` in a request's `tools` is refused (the estimate and the exact
/// counters alike).
pub fn not_a_tool(type_name: &str) -> String {
    format!("a tool definition must be a dict or an SDK tool object, got {type_name}")
}

/// Tool definitions (OpenAI `{"type":"function","function":{...}}`, Responses
/// `{"type":"function","name":...}`, Anthropic `{"name","input_schema"}`, Gemini
/// `{"functionDeclarations":[...]}`, Bedrock `{"toolSpec":{...}}`), each serialized once for the
/// overhead function. An error comes with the index `j` of the definition (`tools[j]`; `None`
/// when `tools` itself is not a list), and its field names `tools[j]...`.
pub fn read_tools<'a, V: Input<'a>>(tools: &V) -> Result<Vec<ToolDef<'a>>, ToolsError<V::Error>> {
    let items = match tools.items() {
        Ok(Some(items)) => items,
        Ok(None) => {
            return Err((
                None,
                invalid(
                    "tools",
                    format!(
                        "tools must be a list of tool definitions, got {}",
                        tools.type_name()
                    ),
                ),
            ))
        }
        Err(e) => return Err((None, ReadError::Source(e))),
    };
    let mut out = Vec::with_capacity(items.len());
    for (j, t) in items.iter().enumerate() {
        // A Bedrock `{"cachePoint": {...}}` entry marks a cache breakpoint: no definition.
        if matches!(t.get(Key::cachePoint), Ok(Some(_))) {
            continue;
        }
        // A Gemini Tool holding function declarations alone (`recall_tool("gemini")`, the tools
        // a Gemini body sends) is its declarations, each a definition, as the body reader reads
        // them (`gemini::read_body`): priced whole as one definition, the recall tool of a
        // recoverable Gemini compaction came to 84 tokens where the body sent with it came to 87,
        // and the proxy's compacting turns went 1-3 tokens over their budget.
        if let Some(decls) = gemini_declarations(t).map_err(|e| (Some(j), e))? {
            for (k, decl) in decls.iter().enumerate() {
                let def = || -> ReadResult<ToolDef<'a>, V::Error> {
                    let at = format_args!("tools[{j}].functionDeclarations[{k}]");
                    if !matches!(decl.shape(), Shape::Map | Shape::Object) {
                        return Err(invalid(at.to_string(), not_a_tool(&decl.type_name())));
                    }
                    let name = tool_name(decl, at)?;
                    Ok(ToolDef {
                        name: name.unwrap_or(Cow::Borrowed("")),
                        json: Cow::Owned(decl.json_text().src()?),
                    })
                };
                out.push(def().map_err(|e| (Some(j), e))?);
            }
            continue;
        }
        let def = || -> ReadResult<ToolDef<'a>, V::Error> {
            // (None, a number or a string read as an object has no field: it was priced as its
            // JSON, a tool of no name the caller never meant.)
            if !matches!(t.shape(), Shape::Map | Shape::Object) {
                return Err(invalid(format!("tools[{j}]"), not_a_tool(&t.type_name())));
            }
            let name = tool_name(t, format_args!("tools[{j}]"))?;
            Ok(ToolDef {
                name: name.unwrap_or(Cow::Borrowed("")),
                json: Cow::Owned(t.json_text().src()?),
            })
        };
        out.push(def().map_err(|e| (Some(j), e))?);
    }
    Ok(out)
}

/// The declarations of a Gemini Tool whose only set field is `functionDeclarations` (or
/// `function_declarations`) holding a list; `None` for any other tool (a Tool that also names a
/// server tool stays one definition priced as its JSON).
fn gemini_declarations<'a, V: Input<'a>>(t: &V) -> ReadResult<Option<Vec<V>>, V::Error> {
    if !matches!(t.shape(), Shape::Map | Shape::Object) {
        return Ok(None);
    }
    let decls = match t.get(Key::functionDeclarations).src()? {
        Some(d) => d,
        None => match t.get(Key::function_declarations).src()? {
            Some(d) => d,
            None => return Ok(None),
        },
    };
    let alone = t.entries().src()?.unwrap_or_default().iter().all(|(k, v)| {
        k == "functionDeclarations" || k == "function_declarations" || v.shape() == Shape::Null
    });
    if !alone {
        return Ok(None);
    }
    decls.items().src()
}

/// The name of one tool definition (`function.name`, `toolSpec.name` or `name`), `None` when
/// it has none; an error names `{at}.function.name` ... when the name is not a string.
pub(crate) fn tool_name<'a, V: Input<'a>>(
    t: &V,
    at: impl std::fmt::Display,
) -> ReadResult<Option<Cow<'a, str>>, V::Error> {
    match (t.get(Key::function).src()?, t.get(Key::toolSpec).src()?) {
        (Some(f), _) => opt_str(&f, Key::name, format_args!("{at}.function.name")),
        (None, Some(spec)) => opt_str(&spec, Key::name, format_args!("{at}.toolSpec.name")),
        (None, None) => opt_str(t, Key::name, format_args!("{at}.name")),
    }
}

/// A system prompt: a string, a list of text blocks (Anthropic, Bedrock, Gemini
/// `systemInstruction.parts` passed as the list), or Gemini's `systemInstruction` itself, a
/// Content object (`{"parts": [...]}`, as google-genai's `GenerateContentConfig` takes it).
/// Errors name `system` (`system.parts[0]` inside a Content object).
pub fn read_system<'a, V: Input<'a>>(system: &V) -> ReadResult<Cow<'a, str>, V::Error> {
    let r = Reader::new();
    let content = if matches!(system.shape(), Shape::Map | Shape::Object) {
        match system.get(Key::parts).src()? {
            Some(parts) => r.content(&parts, "system.parts"),
            None => r.content(system, "system"),
        }
    } else {
        r.content(system, "system")
    };
    match content {
        Ok(c) => Ok(joined_text(c, "\n")),
        Err(ReadError::Invalid { field, reason }) => Err(ReadError::Invalid {
            field,
            reason: format!(
                "system must be a string, a list of text blocks or a Content object with parts: {reason}"
            ),
        }),
        Err(e) => Err(e),
    }
}

/// Where reading a request's extras failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtrasError<E> {
    /// In `tools` (at `tools[j]` when `Some(j)`).
    Tools(Option<usize>, ReadError<E>),
    System(ReadError<E>),
    ResponseFormat(ReadError<E>),
}

/// The `mediaResolution` of a Gemini generation config (either spelling); `Auto` when unset.
fn config_resolution<'a, V: Input<'a>>(c: &V) -> ReadResult<Detail, V::Error> {
    for key in [Key::mediaResolution, Key::media_resolution] {
        if let Some(m) = c.get(key).src()? {
            return super::gemini::media_resolution(&m);
        }
    }
    Ok(Detail::Auto)
}

/// Extras of a request: optional tools, system and structured-output schema.
pub fn read_extras<'a, V: Input<'a>>(
    tools: Option<&V>,
    system: Option<&V>,
    response_format: Option<&V>,
) -> Result<RequestExtras<'a>, ExtrasError<V::Error>> {
    // A Gemini generation config given as the response format sets the media resolution of
    // every image that sets none itself.
    let media_resolution = match response_format {
        Some(r) if matches!(r.shape(), Shape::Map | Shape::Object) => {
            config_resolution(r).map_err(ExtrasError::ResponseFormat)?
        }
        _ => Detail::Auto,
    };
    Ok(RequestExtras {
        media_resolution,
        response_format: match response_format {
            Some(r) if r.shape() != Shape::Null => super::response_format::read_response_format(r)
                .map_err(ExtrasError::ResponseFormat)?,
            _ => None,
        },
        system: match system {
            Some(s) if s.shape() != Shape::Null => {
                Some(read_system(s).map_err(ExtrasError::System)?)
            }
            _ => None,
        },
        tools: match tools {
            Some(t) if t.shape() != Shape::Null => {
                read_tools(t).map_err(|(j, e)| ExtrasError::Tools(j, e))?
            }
            _ => Vec::new(),
        },
    })
}
