//! What the wire readers share: the message, content and part dispatch, media sniffing, tool
//! definitions and system prompts. Format-specific shapes are read by the format files.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt::Display;

use super::input::{Input, Key, ReadError, ReadResult, Shape, Src};
use super::{anthropic, bedrock, gemini, openai_chat, openai_responses, Format};
use crate::estimate::{RequestExtras, ToolDef};
use crate::message::{
    Content, Detail, ImageSource, MediaKind, Message, Part, Role, ThoughtSignatures,
};

// Real histories nest content two levels deep (a tool result inside a user message); a hostile
// depth must not overflow the stack.
const MAX_CONTENT_DEPTH: u32 = 32;

// Media parts nest their payload a few levels down (`source.data`, `input_audio.data`).
const MEDIA_DEPTH: usize = 4;

/// The top-level fields of a message, read in one pass.
const MESSAGE_FIELDS: [Key; 9] = [
    Key::role,
    Key::content,
    Key::parts,
    Key::tool_calls,
    Key::tool_call_id,
    Key::name,
    Key::reasoning_content,
    Key::reasoning,
    Key::reasoning_details,
];

/// The state of one message's read: content depth and the format its parts show.
pub(crate) struct Reader {
    depth: Cell<u32>,
    format: Cell<Format>,
    signatures: Cell<ThoughtSignatures>,
}

impl Reader {
    pub(crate) fn new() -> Self {
        Reader {
            depth: Cell::new(0),
            format: Cell::new(Format::Unknown),
            signatures: Cell::new(ThoughtSignatures::default()),
        }
    }

    /// Record the Gemini thought signature beside part `p`, if it has one (base64 text, or the
    /// Python SDK's raw bytes).
    pub(crate) fn thought_signature<'a, V: Input<'a>>(
        &self,
        p: &V,
        path: &str,
    ) -> ReadResult<(), V::Error> {
        for key in [Key::thoughtSignature, Key::thought_signature] {
            let Some(v) = p.get(key).src()? else {
                continue;
            };
            let mut s = self.signatures.get();
            if let Some(t) = v.str().src()? {
                s.add_base64(&t);
            } else if let Some(b) = v.bytes().src()? {
                s.add_bytes(b);
            } else if v.shape() != Shape::Null {
                return Err(invalid(
                    format!("{path}.{}", key.as_str()),
                    format!("expected base64 text or bytes, got {}", v.type_name()),
                ));
            }
            self.signatures.set(s);
            return Ok(());
        }
        Ok(())
    }

    /// Record that the message shows `f`.
    pub(crate) fn saw(&self, f: Format) {
        self.format.set(self.format.get().merge(f));
    }
}

/// An invalid-value error.
#[cold]
pub(crate) fn invalid<E>(field: impl Into<String>, reason: impl Into<String>) -> ReadError<E> {
    ReadError::invalid(field, reason)
}

/// Only a lossy (lone-surrogate) id is owned; it has no exact form to borrow.
#[inline]
pub(crate) fn borrowed_or_placeholder(c: Cow<'_, str>) -> &'_ str {
    match c {
        Cow::Borrowed(s) => s,
        Cow::Owned(_) => "\u{fffd}",
    }
}

/// A string value, or an error naming `path` when it is another type.
#[inline]
pub(crate) fn str_value<'a, V: Input<'a>>(
    v: Option<V>,
    path: impl Display,
) -> ReadResult<Option<Cow<'a, str>>, V::Error> {
    match v {
        None => Ok(None),
        Some(v) => match v.str().src()? {
            Some(s) => Ok(Some(s)),
            None => Err(invalid(
                path.to_string(),
                format!("expected a string, got {}", v.type_name()),
            )),
        },
    }
}

/// A required-if-present string field.
#[inline]
pub(crate) fn opt_str<'a, V: Input<'a>>(
    obj: &V,
    key: Key,
    path: impl Display,
) -> ReadResult<Option<Cow<'a, str>>, V::Error> {
    str_value(obj.get(key).src()?, path)
}

/// A short string field borrowed as `&'a str` (ids, names, kinds).
#[inline]
pub(crate) fn opt_id<'a, V: Input<'a>>(
    obj: &V,
    key: Key,
    path: impl Display,
) -> ReadResult<Option<&'a str>, V::Error> {
    Ok(opt_str(obj, key, path)?.map(borrowed_or_placeholder))
}

/// A string field, `""` when absent.
#[inline]
pub(crate) fn text_field<'a, V: Input<'a>>(
    p: &V,
    key: Key,
    path: &str,
) -> ReadResult<Cow<'a, str>, V::Error> {
    Ok(opt_str(p, key, format_args!("{path}.{}", key.as_str()))?.unwrap_or(Cow::Borrowed("")))
}

/// Tool-call arguments: a string as is, anything else serialized as compact JSON.
#[inline]
pub(crate) fn json_or_str<'a, V: Input<'a>>(v: &V) -> ReadResult<Cow<'a, str>, V::Error> {
    match v.str().src()? {
        Some(s) => Ok(s),
        None => Ok(Cow::Owned(v.json_text().src()?)),
    }
}

/// A base64 / data-URL / remote image reference.
pub(crate) fn image_source(url: Cow<'_, str>) -> ImageSource<'_> {
    match url {
        Cow::Borrowed(s) if s.starts_with("data:") || !s.contains("://") => ImageSource::Base64(s),
        Cow::Borrowed(s) => ImageSource::Url(s),
        // A lossy copy is never a readable image.
        Cow::Owned(_) => ImageSource::Url(""),
    }
}

/// Image bytes given as raw bytes or as base64 text.
pub(crate) fn image_data<'a, V: Input<'a>>(d: &V) -> ReadResult<Option<ImageSource<'a>>, V::Error> {
    if let Some(b) = d.bytes().src()? {
        return Ok(Some(ImageSource::Bytes(b)));
    }
    Ok(d.str().src()?.map(image_source))
}

/// OpenAI `detail`.
pub(crate) fn detail<'a, V: Input<'a>>(
    obj: &V,
    path: &str,
) -> ReadResult<Option<Detail>, V::Error> {
    match opt_id(obj, Key::detail, format_args!("{path}.detail"))? {
        None => Ok(None),
        Some(d) => Detail::parse(d).map(Some).ok_or_else(|| {
            invalid(
                format!("{path}.detail"),
                format!("unknown detail {d:?}; valid: auto, low, high, original"),
            )
        }),
    }
}

/// What `opaque` learns of a media part.
#[derive(Default)]
struct MediaInfo {
    mime: Option<String>,
    /// Characters of the inline payload (base64 or text), if any.
    payload: Option<usize>,
}

fn media_info<'a, V: Input<'a>>(
    v: &V,
    info: &mut MediaInfo,
    depth: usize,
) -> ReadResult<(), V::Error> {
    if depth > MEDIA_DEPTH || v.shape() != Shape::Map {
        return Ok(());
    }
    let Some(entries) = v.entries().src()? else {
        return Ok(());
    };
    for (key, val) in entries {
        if let Some(text) = val.str().src()? {
            match key.as_str() {
                "media_type" | "mimeType" | "mime_type" | "format" => {
                    info.mime.get_or_insert_with(|| text.to_string());
                }
                "data" | "file_data" | "bytes" | "url" | "image_url" => {
                    if let Some(rest) = text.strip_prefix("data:") {
                        if let Some((mime, body)) = rest.split_once(',') {
                            info.mime.get_or_insert_with(|| {
                                mime.split(';').next().unwrap_or("").to_string()
                            });
                            info.payload = Some(body.len());
                        }
                    } else if key != "url" && key != "image_url" {
                        info.payload = Some(text.len());
                    }
                }
                _ => {}
            }
        } else if let Some(b) = val.bytes().src()? {
            // Raw bytes: expressed as the base64 characters they are sent as.
            info.payload = Some(b.len().div_ceil(3) * 4);
        } else {
            media_info(&val, info, depth + 1)?;
        }
    }
    Ok(())
}

/// A part with no structure in the model (audio, video, files, documents, hosted-tool items):
/// its MIME kind and inline payload size are looked up so it can be priced as media.
pub(crate) fn opaque<'a, V: Input<'a>>(kind: &'a str, p: &V) -> ReadResult<Part<'a>, V::Error> {
    let mut info = MediaInfo::default();
    media_info(p, &mut info, 0)?;
    let media = match info.mime {
        Some(m) => MediaKind::from_mime(&m),
        None => match kind {
            "input_audio" | "audio" => MediaKind::Audio,
            "video" => MediaKind::Video,
            "document" | "file" | "input_file" => MediaKind::Document,
            _ => MediaKind::Unknown,
        },
    };
    Ok(Part::Opaque {
        kind: Cow::Borrowed(kind),
        media,
        payload_chars: info.payload,
        wire_chars: p.json_len().src()?,
    })
}

impl Reader {
    /// A `content` value: a string or a list of parts.
    pub(crate) fn content<'a, V: Input<'a>>(
        &self,
        c: &V,
        path: &str,
    ) -> ReadResult<Content<'a>, V::Error> {
        if let Some(s) = c.str().src()? {
            return Ok(Content::Text(s));
        }
        if c.shape() == Shape::List {
            let depth = self.depth.get();
            if depth >= MAX_CONTENT_DEPTH {
                return Err(invalid(
                    path,
                    format!("content nested deeper than {MAX_CONTENT_DEPTH} levels"),
                ));
            }
            let items = c.items().src()?.unwrap_or_default();
            self.depth.set(depth + 1);
            let mut parts = Vec::with_capacity(items.len());
            for (j, p) in items.iter().enumerate() {
                match self.part(p, &format!("{path}[{j}]")) {
                    Ok(part) => parts.push(part),
                    Err(e) => {
                        self.depth.set(depth);
                        return Err(e);
                    }
                }
            }
            self.depth.set(depth);
            return Ok(Content::Parts(parts));
        }
        Err(invalid(
            path,
            format!(
                "expected a string, a list of parts or None, got {}",
                c.type_name()
            ),
        ))
    }

    /// A content list that is read as a flat list of parts (a tool result's nested content).
    pub(crate) fn nested_parts<'a, V: Input<'a>>(
        &self,
        c: &V,
        path: &str,
    ) -> ReadResult<Vec<Part<'a>>, V::Error> {
        Ok(match self.content(c, path)? {
            Content::Text(t) => vec![Part::Text(t)],
            Content::Parts(v) => v,
            Content::None => Vec::new(),
        })
    }

    /// One content part of any supported wire format: typed parts by their `type`, keyed
    /// parts (Gemini, Bedrock) by the key that names their kind.
    pub(crate) fn part<'a, V: Input<'a>>(
        &self,
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
            if let Some(part) = bedrock::keyed_part(self, p, path)? {
                return Ok(part);
            }
            return gemini::keyed_part(self, p, path);
        };
        if let Some(part) = openai_chat::typed_part(self, kind, p, path)? {
            return Ok(part);
        }
        if let Some(part) = openai_responses::typed_part(self, kind, p, path)? {
            return Ok(part);
        }
        if let Some(part) = anthropic::typed_part(self, kind, p, path)? {
            return Ok(part);
        }
        opaque(kind, p)
    }

    /// The `thinking` of a block: a string (Anthropic) or a list of text parts (Mistral).
    pub(crate) fn thinking_text<'a, V: Input<'a>>(
        &self,
        p: &V,
        path: &str,
    ) -> ReadResult<Cow<'a, str>, V::Error> {
        match p.get(Key::thinking).src()? {
            None => Ok(Cow::Borrowed("")),
            Some(t) => Ok(joined_text(
                self.content(&t, &format!("{path}.thinking"))?,
                "",
            )),
        }
    }
}

/// The text parts of a content value, joined by `sep`.
fn joined_text<'a>(c: Content<'a>, sep: &str) -> Cow<'a, str> {
    match c {
        Content::Text(s) => s,
        Content::None => Cow::Borrowed(""),
        Content::Parts(parts) => {
            let mut s = String::new();
            for part in parts {
                if let Part::Text(t) = part {
                    if !s.is_empty() {
                        s.push_str(sep);
                    }
                    s.push_str(&t);
                }
            }
            Cow::Owned(s)
        }
    }
}

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
    let [role, content, parts, tool_calls, tool_call_id, name, reasoning_content, reasoning, reasoning_details] =
        m.get_many(&MESSAGE_FIELDS).src()?;
    let Some(role) = str_value(role, "role")?.map(borrowed_or_placeholder) else {
        return openai_responses::item(m);
    };
    let r = Reader::new();
    let mut msg = Message::empty(role);
    msg.content = match (content, parts) {
        (Some(c), _) => r.content(&c, "content")?,
        (None, Some(p)) => {
            r.saw(Format::Gemini);
            r.content(&p, "parts")?
        }
        (None, None) => Content::None,
    };
    msg.name = str_value(name, "name")?.map(borrowed_or_placeholder);
    msg.tool_call_id = str_value(tool_call_id, "tool_call_id")?.map(borrowed_or_placeholder);
    if msg.tool_call_id.is_some() {
        r.saw(Format::OpenAIChat);
    }
    if let Some(calls) = tool_calls {
        msg.tool_calls = openai_chat::tool_calls(&calls)?;
        r.saw(Format::OpenAIChat);
    }
    if msg.role == Role::Assistant {
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
    msg.wire = r.format.get();
    msg.thought_signatures = r.signatures.get();
    Ok(msg)
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
    items
        .iter()
        .enumerate()
        .map(|(index, m)| read_message(m).map_err(|error| HistoryError { index, error }))
        .collect()
}

/// A tool definitions error: the index `j` of the definition (`None` when `tools` is not a
/// list) and what is wrong.
pub type ToolsError<E> = (Option<usize>, ReadError<E>);

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
        let def = || -> ReadResult<ToolDef<'a>, V::Error> {
            let name = match (t.get(Key::function).src()?, t.get(Key::toolSpec).src()?) {
                (Some(f), _) => opt_str(&f, Key::name, format_args!("tools[{j}].function.name"))?,
                (None, Some(spec)) => {
                    opt_str(&spec, Key::name, format_args!("tools[{j}].toolSpec.name"))?
                }
                (None, None) => opt_str(t, Key::name, format_args!("tools[{j}].name"))?,
            };
            Ok(ToolDef {
                name: name.unwrap_or(Cow::Borrowed("")),
                json: Cow::Owned(t.json_text().src()?),
            })
        };
        out.push(def().map_err(|e| (Some(j), e))?);
    }
    Ok(out)
}

/// A system prompt: a string, or a list of text blocks (Anthropic, Bedrock, Gemini
/// `systemInstruction.parts` passed as the list). Errors name `system`.
pub fn read_system<'a, V: Input<'a>>(system: &V) -> ReadResult<Cow<'a, str>, V::Error> {
    let r = Reader::new();
    match r.content(system, "system") {
        Ok(c) => Ok(joined_text(c, "\n")),
        Err(ReadError::Invalid { field, reason }) => Err(ReadError::Invalid {
            field,
            reason: format!("system must be a string or a list of text blocks: {reason}"),
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

/// Extras of a request: optional tools, system and structured-output schema.
pub fn read_extras<'a, V: Input<'a>>(
    tools: Option<&V>,
    system: Option<&V>,
    response_format: Option<&V>,
) -> Result<RequestExtras<'a>, ExtrasError<V::Error>> {
    Ok(RequestExtras {
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
