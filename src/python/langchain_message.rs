//! LangChain messages (`langchain_core.messages.BaseMessage` and subclasses) read by meaning.
//!
//! A LangChain message is an object of bookkeeping around what a provider integration sends:
//! `additional_kwargs`, `response_metadata`, `id`, `usage_metadata`, `artifact`, `status` and
//! the `type` tag are never sent, so they are never priced. What is read, and how:
//! - `type` gives the role: `system` (or `additional_kwargs["__openai_role__"]`, LangChain's
//!   marker for `developer`), `human` -> `user`, `ai` -> `assistant`, `tool`, `function`,
//!   `chat` -> its `role`; the `...MessageChunk` types the same. A `RemoveMessage` (a LangGraph
//!   state instruction) or an unknown type is an `InvalidMessageError` naming `type`.
//! - `name` when set and not empty, as OpenAI chat sends it.
//! - `content`: a string, or one part per block (so part positions are block positions, which
//!   the edits rely on). Blocks any wire format has (OpenAI `text` / `image_url`, Anthropic
//!   `image` / `thinking` / `tool_result`, ...) are read as the core reads them; LangChain's own
//!   standard blocks are mapped here: `image` / `audio` / `video` / `file` / `text-plain` with
//!   `base64`, `url`, `file_id` or a v0 `source_type`, `reasoning` (its text, as reasoning),
//!   a v1 `tool_call` block, and `non_standard` (its `value`, a provider block).
//! - An AI message's `tool_calls` `[{"name", "args", "id"}]`: each a call whose arguments are
//!   `json.dumps(args, ensure_ascii=False)` (written in Rust), the text LangChain's OpenAI integration and
//!   `convert_to_openai_messages` send, priced in the envelope of the provider asked for. A
//!   content block that repeats one of these calls (an Anthropic `tool_use`, a Responses
//!   `function_call`, a v1 `tool_call` with the same id) is not priced twice: the integrations
//!   send the call once. `invalid_tool_calls` are not priced (`convert_to_openai_messages`
//!   drops them too).
//! - A tool message's `tool_call_id`.
//! - The Gemini thought signatures langchain-google-genai keeps for an AI message's calls in
//!   `additional_kwargs["__gemini_function_call_thought_signatures__"]` (sent back with them).
//!
//! Detection never imports LangChain: `BaseMessage` is looked up in `sys.modules` (no LangChain
//! message can exist before `langchain_core.messages.base` is imported) and cached once found;
//! exact dicts skip the check entirely.

use std::borrow::Cow;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple, PyType};

use super::json_out::spaced_json_text;
use super::py_input::{Keep, PyInput};
use crate::message::{
    Content, Detail, Image, MediaKind, Message, Part, ThoughtSignatures, ToolCall,
};
use crate::wire::fields::{borrowed_or_placeholder, image_source};
use crate::wire::read::Reader;
use crate::wire::{Format, Input, ReadError, ReadResult};

static SYS_MODULES: PyOnceLock<Py<PyDict>> = PyOnceLock::new();
static BASE_MESSAGE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `langchain_core.messages.BaseMessage` once someone has imported it (never imported here).
fn base_message(py: Python<'_>) -> Option<&Py<PyType>> {
    if let Some(cls) = BASE_MESSAGE.get(py) {
        return Some(cls);
    }
    let modules = SYS_MODULES
        .get_or_try_init(py, || -> PyResult<Py<PyDict>> {
            Ok(py
                .import("sys")?
                .getattr("modules")?
                .cast_into::<PyDict>()?
                .unbind())
        })
        .ok()?
        .bind(py);
    let module = modules
        .get_item(intern!(py, "langchain_core.messages.base"))
        .ok()??;
    let cls = module
        .getattr(intern!(py, "BaseMessage"))
        .ok()?
        .cast_into::<PyType>()
        .ok()?;
    Some(BASE_MESSAGE.get_or_init(py, || cls.unbind()))
}

/// Whether `m` is a LangChain message. Exact dicts (most histories) cost one type compare.
#[inline]
pub(super) fn is_message(m: &Bound<'_, PyAny>) -> bool {
    if m.is_exact_instance_of::<PyDict>() {
        return false;
    }
    match base_message(m.py()) {
        Some(cls) => m.is_instance(cls.bind(m.py())).unwrap_or(false),
        None => false,
    }
}

#[cold]
fn invalid(field: impl Into<String>, reason: impl Into<String>) -> ReadError<PyErr> {
    ReadError::invalid(field, reason)
}

/// A field of a block or a tool call: a dict's key, another object's attribute (never a
/// method); `None` when absent or null.
fn field<'py>(
    obj: &Bound<'py, PyAny>,
    name: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let v = match obj.cast::<PyDict>() {
        Ok(d) => d.get_item(name)?,
        Err(_) => obj.getattr_opt(name)?,
    };
    Ok(v.filter(|v| !v.is_none() && !v.is_callable()))
}

/// A string field borrowed for `'k`; an error naming `path` when it holds another type.
fn str_field<'k, 'py>(
    keep: &'k Keep<'py>,
    obj: &Bound<'py, PyAny>,
    name: &Bound<'py, PyString>,
    path: impl FnOnce() -> String,
) -> ReadResult<Option<Cow<'k, str>>, PyErr> {
    match field(obj, name).map_err(ReadError::Source)? {
        None => Ok(None),
        Some(v) => match v.cast::<PyString>() {
            Ok(s) => Ok(Some(keep.str(s))),
            Err(_) => Err(invalid(
                path(),
                format!(
                    "expected a string, got {}",
                    v.get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                ),
            )),
        },
    }
}

fn id_field<'k, 'py>(
    keep: &'k Keep<'py>,
    obj: &Bound<'py, PyAny>,
    name: &Bound<'py, PyString>,
    path: impl FnOnce() -> String,
) -> ReadResult<Option<&'k str>, PyErr> {
    Ok(str_field(keep, obj, name, path)?.map(borrowed_or_placeholder))
}

/// Tool-call arguments as LangChain's integrations send them: a string as is, anything else
/// `json.dumps(args, ensure_ascii=False)` (Python's default separators, non-ASCII kept), written
/// without a Python call. Values `json` cannot serialize are written as the core writes any
/// value (SDK objects dumped, others as their `str`).
fn arguments<'k, 'py>(
    keep: &'k Keep<'py>,
    args: Option<Bound<'py, PyAny>>,
    path: impl FnOnce() -> String,
) -> ReadResult<Cow<'k, str>, PyErr> {
    let Some(args) = args else {
        return Ok(Cow::Borrowed("{}"));
    };
    if let Ok(s) = args.cast::<PyString>() {
        return Ok(keep.str(s));
    }
    spaced_json_text(&args)
        .map(Cow::Owned)
        .map_err(|e| invalid(path(), format!("could not be serialized: {e}")))
}

/// The tool calls of the message being read: a content block that repeats one is not priced
/// twice.
struct Calls<'k> {
    calls: Vec<ToolCall<'k>>,
}

impl Calls<'_> {
    fn has(&self, id: &str) -> bool {
        !id.is_empty() && self.calls.iter().any(|c| c.id == id)
    }
}

/// Read one LangChain message by meaning (see the module docs).
pub(super) fn read<'k, 'py>(
    m: &Bound<'py, PyAny>,
    keep: &'k Keep<'py>,
) -> ReadResult<Message<'k>, PyErr> {
    let py = m.py();
    let kind = id_field(keep, m, intern!(py, "type"), || "type".into())?
        .ok_or_else(|| invalid("type", "missing: a LangChain message needs a type"))?;
    let role: &'k str = match kind {
        "human" | "HumanMessageChunk" => "user",
        "ai" | "AIMessageChunk" => "assistant",
        "system" | "SystemMessageChunk" => system_role(keep, m)?,
        "tool" | "ToolMessageChunk" => "tool",
        "function" | "FunctionMessageChunk" => "function",
        "chat" | "ChatMessageChunk" => id_field(keep, m, intern!(py, "role"), || "role".into())?
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
    msg.name = id_field(keep, m, intern!(py, "name"), || "name".into())?.filter(|n| !n.is_empty());
    let calls = Calls {
        calls: if msg.role == crate::message::Role::Assistant {
            tool_calls(keep, m)?
        } else {
            Vec::new()
        },
    };
    if let Some(c) = field(m, intern!(py, "content")).map_err(ReadError::Source)? {
        msg.content = content(keep, &c, &calls)?;
    }
    if kind == "tool" || kind == "ToolMessageChunk" {
        msg.tool_call_id = id_field(keep, m, intern!(py, "tool_call_id"), || {
            "tool_call_id".into()
        })?;
    }
    msg.tool_calls = calls.calls;
    if msg.role == crate::message::Role::Assistant {
        msg.thought_signatures = gemini_signatures(m)?;
    }
    msg.wire = Format::LangChain;
    Ok(msg)
}

/// The Gemini thought signatures langchain-google-genai keeps beside an AI message's calls
/// (`additional_kwargs["__gemini_function_call_thought_signatures__"]`: call id -> base64
/// signature, or raw bytes) and sends back with them: priced by their shape as the Gemini
/// reader prices `thoughtSignature` (`ThoughtSignatures`). Nothing else of `additional_kwargs`
/// is read.
fn gemini_signatures(m: &Bound<'_, PyAny>) -> ReadResult<ThoughtSignatures, PyErr> {
    let py = m.py();
    let mut out = ThoughtSignatures::default();
    let Some(kw) = field(m, intern!(py, "additional_kwargs")).map_err(ReadError::Source)? else {
        return Ok(out);
    };
    let key = intern!(py, "__gemini_function_call_thought_signatures__");
    let Some(map) = field(&kw, key).map_err(ReadError::Source)? else {
        return Ok(out);
    };
    let Ok(map) = map.cast::<PyDict>() else {
        return Ok(out);
    };
    for (_, v) in map.iter() {
        if let Ok(s) = v.cast::<PyString>() {
            out.add_base64(&s.to_cow().map_err(ReadError::Source)?);
        } else if let Ok(b) = v.cast::<PyBytes>() {
            out.add_bytes(b.as_bytes());
        }
    }
    Ok(out)
}

/// `system`, or the role LangChain keeps in `additional_kwargs["__openai_role__"]`
/// (`developer`).
fn system_role<'k, 'py>(keep: &'k Keep<'py>, m: &Bound<'py, PyAny>) -> ReadResult<&'k str, PyErr> {
    let py = m.py();
    let Some(kw) = field(m, intern!(py, "additional_kwargs")).map_err(ReadError::Source)? else {
        return Ok("system");
    };
    Ok(id_field(keep, &kw, intern!(py, "__openai_role__"), || {
        "additional_kwargs.__openai_role__".into()
    })?
    .unwrap_or("system"))
}

/// An AI message's `tool_calls`.
fn tool_calls<'k, 'py>(
    keep: &'k Keep<'py>,
    m: &Bound<'py, PyAny>,
) -> ReadResult<Vec<ToolCall<'k>>, PyErr> {
    let py = m.py();
    let Some(list) = field(m, intern!(py, "tool_calls")).map_err(ReadError::Source)? else {
        return Ok(Vec::new());
    };
    let items = sequence(&list).ok_or_else(|| invalid("tool_calls", "expected a list"))?;
    let mut out = Vec::with_capacity(items.len());
    for (j, c) in items.iter().enumerate() {
        let id =
            id_field(keep, c, intern!(py, "id"), || format!("tool_calls[{j}].id"))?.unwrap_or("");
        let name = id_field(keep, c, intern!(py, "name"), || {
            format!("tool_calls[{j}].name")
        })?
        .ok_or_else(|| invalid(format!("tool_calls[{j}].name"), "missing"))?;
        let args = field(c, intern!(py, "args")).map_err(ReadError::Source)?;
        let arguments = arguments(keep, args, || format!("tool_calls[{j}].args"))?;
        out.push(ToolCall {
            id,
            name,
            arguments,
        });
    }
    Ok(out)
}

/// The items of a list or tuple (a snapshot).
fn sequence<'py>(v: &Bound<'py, PyAny>) -> Option<Vec<Bound<'py, PyAny>>> {
    if let Ok(l) = v.cast::<PyList>() {
        return Some(l.iter().collect());
    }
    v.cast::<PyTuple>().ok().map(|t| t.iter().collect())
}

/// `content`: a string or a list of blocks, one part per block.
fn content<'k, 'py>(
    keep: &'k Keep<'py>,
    c: &Bound<'py, PyAny>,
    calls: &Calls<'k>,
) -> ReadResult<Content<'k>, PyErr> {
    if let Ok(s) = c.cast::<PyString>() {
        return Ok(Content::Text(keep.str(s)));
    }
    let Some(blocks) = sequence(c) else {
        return Err(invalid(
            "content",
            format!(
                "expected a string or a list of content blocks, got {}",
                c.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ),
        ));
    };
    let r = Reader::new();
    let mut parts = Vec::with_capacity(blocks.len());
    for (j, b) in blocks.iter().enumerate() {
        parts.push(block(keep, &r, b, j, calls)?);
    }
    Ok(Content::Parts(parts))
}

// A block that repeats a call of `tool_calls`: the integrations send the call once.
const REPEATED_CALL: Part<'static> = Part::Text(Cow::Borrowed(""));

/// One content block.
fn block<'k, 'py>(
    keep: &'k Keep<'py>,
    r: &Reader,
    b: &Bound<'py, PyAny>,
    j: usize,
    calls: &Calls<'k>,
) -> ReadResult<Part<'k>, PyErr> {
    let py = b.py();
    let path = || format!("content[{j}]");
    let core = |v: &Bound<'py, PyAny>| r.part(&PyInput::new(v.clone(), keep), &path());
    if b.is_instance_of::<PyString>() {
        return core(b);
    }
    let kind = match field(b, intern!(py, "type")).map_err(ReadError::Source)? {
        Some(k) => match k.cast::<PyString>() {
            Ok(s) => s.to_cow().map_err(ReadError::Source)?.into_owned(),
            Err(_) => return core(b),
        },
        None => return core(b),
    };
    let has = |k: &Bound<'py, PyString>| -> ReadResult<bool, PyErr> {
        Ok(field(b, k).map_err(ReadError::Source)?.is_some())
    };
    match kind.as_str() {
        "image" | "audio" | "video" | "file" | "text-plain"
            if !has(intern!(py, "source"))?
                && (has(intern!(py, "base64"))?
                    || has(intern!(py, "url"))?
                    || has(intern!(py, "file_id"))?
                    || has(intern!(py, "source_type"))?
                    || (kind == "text-plain" && has(intern!(py, "text"))?)) =>
        {
            data_block(keep, b, &kind, j)
        }
        "reasoning" => reasoning(keep, b, j),
        "tool_call" => {
            let id =
                id_field(keep, b, intern!(py, "id"), || format!("{}.id", path()))?.unwrap_or("");
            if calls.has(id) {
                return Ok(REPEATED_CALL);
            }
            let name = id_field(keep, b, intern!(py, "name"), || format!("{}.name", path()))?
                .unwrap_or("");
            let args = field(b, intern!(py, "args")).map_err(ReadError::Source)?;
            Ok(Part::ToolUse(ToolCall {
                id,
                name,
                arguments: arguments(keep, args, || format!("{}.args", path()))?,
            }))
        }
        "tool_use" | "function_call" => {
            let key = if kind == "tool_use" {
                intern!(py, "id")
            } else {
                intern!(py, "call_id")
            };
            match id_field(keep, b, key, || format!("{}.id", path()))? {
                Some(id) if calls.has(id) => Ok(REPEATED_CALL),
                _ => core(b),
            }
        }
        "non_standard" => match field(b, intern!(py, "value")).map_err(ReadError::Source)? {
            Some(v) if v.is_instance_of::<PyDict>() => core(&v),
            _ => core(b),
        },
        _ => core(b),
    }
}

/// A LangChain standard data block (v1 `base64` / `url` / `file_id`, v0 `source_type`).
fn data_block<'k, 'py>(
    keep: &'k Keep<'py>,
    b: &Bound<'py, PyAny>,
    kind: &str,
    j: usize,
) -> ReadResult<Part<'k>, PyErr> {
    let py = b.py();
    let path = |k: &str| format!("content[{j}].{k}");
    let source_type = id_field(keep, b, intern!(py, "source_type"), || path("source_type"))?;
    let text = str_field(keep, b, intern!(py, "text"), || path("text"))?;
    if let (Some(t), "text-plain" | "file") = (&text, kind) {
        if kind == "text-plain" || source_type == Some("text") {
            return Ok(Part::Text(t.clone()));
        }
    }
    // Inline data: v1 `base64`, v0 `data` with `source_type: "base64"`.
    let base64 = match str_field(keep, b, intern!(py, "base64"), || path("base64"))? {
        Some(s) => Some(s),
        None if source_type == Some("base64") => {
            str_field(keep, b, intern!(py, "data"), || path("data"))?
        }
        None => None,
    };
    let url = str_field(keep, b, intern!(py, "url"), || path("url"))?;
    if kind == "image" {
        if let Some(data) = base64 {
            return Ok(Part::Image(Image {
                source: image_source(data),
                detail: Detail::Auto,
            }));
        }
        if let Some(u) = url {
            return Ok(Part::Image(Image {
                source: image_source(u),
                detail: Detail::Auto,
            }));
        }
    }
    let mime = str_field(keep, b, intern!(py, "mime_type"), || path("mime_type"))?;
    let media = match mime.as_deref() {
        Some(m) if MediaKind::from_mime(m) != MediaKind::Unknown => MediaKind::from_mime(m),
        _ => match kind {
            "image" => MediaKind::Image,
            "audio" => MediaKind::Audio,
            "video" => MediaKind::Video,
            "text-plain" => MediaKind::Text,
            _ => MediaKind::Document,
        },
    };
    Ok(Part::Opaque {
        kind: Cow::Owned(kind.to_string()),
        media,
        payload_chars: base64.map(|s| s.len()),
        wire_chars: PyInput::new(b.clone(), keep)
            .json_len()
            .map_err(ReadError::Source)?,
    })
}

/// A `reasoning` block: its `reasoning` text (v1) or its `summary` texts (the Responses
/// shape LangChain's OpenAI integration stores), priced as reasoning; an `encrypted_content`
/// as the opaque data it is.
fn reasoning<'k, 'py>(
    keep: &'k Keep<'py>,
    b: &Bound<'py, PyAny>,
    j: usize,
) -> ReadResult<Part<'k>, PyErr> {
    let py = b.py();
    let path = |k: &str| format!("content[{j}].{k}");
    let mut text = str_field(keep, b, intern!(py, "reasoning"), || path("reasoning"))?;
    if text.is_none() {
        if let Some(summary) = field(b, intern!(py, "summary")).map_err(ReadError::Source)? {
            let mut joined = String::new();
            for s in sequence(&summary).unwrap_or_default() {
                if let Some(t) = str_field(keep, &s, intern!(py, "text"), || path("summary.text"))?
                {
                    joined.push_str(&t);
                }
            }
            text = Some(Cow::Owned(joined));
        }
    }
    let signature = id_field(keep, b, intern!(py, "encrypted_content"), || {
        path("encrypted_content")
    })?
    .unwrap_or("");
    Ok(Part::Thinking {
        text: text.unwrap_or(Cow::Borrowed("")),
        signature,
    })
}

static TO_OPENAI: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Bytes of the compact JSON of a LangChain message as langchain-core renders it for OpenAI
/// chat (`convert_to_openai_messages`): the size of what is sent, without its bookkeeping.
/// Only called for a message `is_message` recognized, so LangChain is already imported.
pub(super) fn wire_json_len(m: &Bound<'_, PyAny>) -> PyResult<usize> {
    let py = m.py();
    let convert = TO_OPENAI.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py
            .import("langchain_core.messages")?
            .getattr("convert_to_openai_messages")?
            .unbind())
    })?;
    super::json_out::json_len(&convert.bind(py).call1((m,))?)
}
