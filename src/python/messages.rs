//! One walk over the caller's Python history into core `Message` views.
//!
//! Strings are borrowed, never copied: `Keep` holds a strong reference to every Python object a
//! view borrows from, so the borrowed `&str` stay valid even while the GIL is released and other
//! threads mutate the caller's containers. Dicts are read with interned keys; SDK objects
//! (pydantic models of the OpenAI / Anthropic clients) by attribute, so no `model_dump()` of
//! the whole history is ever made.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType,
};

use crate::estimate::{RequestExtras, ToolDef};
use crate::message::{
    Content, Detail, Image, ImageSource, MediaKind, Message, Part, Role, ToolCall,
};

use super::json_out::{json_len, json_text};

/// Strong references to every Python object whose data a view borrows.
pub struct Keep<'py> {
    objs: RefCell<Vec<Bound<'py, PyAny>>>,
    bufs: RefCell<Vec<Box<[u8]>>>,
}

impl<'py> Keep<'py> {
    pub fn new() -> Self {
        Keep {
            objs: RefCell::new(Vec::with_capacity(64)),
            bufs: RefCell::new(Vec::new()),
        }
    }

    /// Borrow the UTF-8 of a Python str for as long as `self` lives.
    fn str<'k>(&'k self, s: Bound<'py, PyString>) -> PyResult<Cow<'k, str>> {
        match s.to_str() {
            Ok(v) => {
                let p: *const str = v;
                self.objs.borrow_mut().push(s.into_any());
                // SAFETY: the str object is kept alive by `self.objs` for 'k, and CPython never
                // moves or frees the UTF-8 buffer of a live str (strings are immutable).
                Ok(Cow::Borrowed(unsafe { &*p }))
            }
            // Lone surrogates have no UTF-8 form: price a lossy copy instead of failing.
            Err(_) => Ok(Cow::Owned(s.to_string_lossy().into_owned())),
        }
    }

    /// Borrow the bytes of a bytes object, or keep a private copy of a mutable buffer.
    fn bytes<'k>(&'k self, b: &Bound<'py, PyAny>) -> PyResult<Option<&'k [u8]>> {
        if let Ok(bytes) = b.cast::<PyBytes>() {
            let p: *const [u8] = bytes.as_bytes();
            self.objs.borrow_mut().push(b.clone());
            // SAFETY: bytes objects are immutable and kept alive by `self.objs`.
            return Ok(Some(unsafe { &*p }));
        }
        if let Ok(ba) = b.cast::<PyByteArray>() {
            // A bytearray may change while the GIL is released: copy it.
            let copy: Box<[u8]> = ba.to_vec().into_boxed_slice();
            let p: *const [u8] = &*copy;
            self.bufs.borrow_mut().push(copy);
            // SAFETY: the boxed copy lives in `self.bufs` until `self` drops; boxes don't move.
            return Ok(Some(unsafe { &*p }));
        }
        Ok(None)
    }
}

static INVALID_MESSAGE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `contextfold.InvalidMessageError(reason, index, field)`.
#[cold]
pub fn invalid(py: Python<'_>, index: usize, field: &str, reason: &str) -> PyErr {
    match INVALID_MESSAGE.import(py, "contextfold.errors", "InvalidMessageError") {
        Ok(cls) => match cls.call1((reason, index, field)) {
            Ok(exc) => PyErr::from_value(exc),
            Err(e) => e,
        },
        Err(e) => e,
    }
}

/// A field of a dict or an attribute of an SDK object; `None` when absent or `None`.
fn field<'py>(
    obj: &Bound<'py, PyAny>,
    key: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let v = if let Ok(d) = obj.cast::<PyDict>() {
        d.get_item(key)?
    } else {
        obj.getattr_opt(key)?
    };
    Ok(v.filter(|v| !v.is_none()))
}

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".to_string())
}

/// What `opaque` learns of a media part.
#[derive(Default)]
struct MediaInfo {
    mime: Option<String>,
    /// Characters of the inline payload (base64 or text), if any.
    payload: Option<usize>,
}

// Media parts nest their payload a few levels down (`source.data`, `input_audio.data`).
const MEDIA_DEPTH: usize = 4;

fn media_info(v: &Bound<'_, PyAny>, info: &mut MediaInfo, depth: usize) -> PyResult<()> {
    if depth > MEDIA_DEPTH {
        return Ok(());
    }
    let Ok(d) = v.cast::<PyDict>() else {
        return Ok(());
    };
    for (k, val) in d.iter() {
        let Ok(k) = k.cast::<PyString>() else {
            continue;
        };
        let key = k.to_str().unwrap_or("");
        if let Ok(s) = val.cast::<PyString>() {
            let text = s.to_str().unwrap_or("");
            match key {
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
        } else if let Ok(b) = val.cast::<PyBytes>() {
            // Raw bytes: express as the base64 characters they would be sent as.
            info.payload = Some(b.as_bytes().len().div_ceil(3) * 4);
        } else {
            media_info(&val, info, depth + 1)?;
        }
    }
    Ok(())
}

/// The fields of one message that the model reads.
#[derive(Default)]
struct Fields<'py> {
    role: Option<Bound<'py, PyAny>>,
    content: Option<Bound<'py, PyAny>>,
    parts: Option<Bound<'py, PyAny>>,
    tool_calls: Option<Bound<'py, PyAny>>,
    tool_call_id: Option<Bound<'py, PyAny>>,
    name: Option<Bound<'py, PyAny>>,
    reasoning_content: Option<Bound<'py, PyAny>>,
    reasoning: Option<Bound<'py, PyAny>>,
    reasoning_details: Option<Bound<'py, PyAny>>,
}

fn borrowed_or_placeholder(c: Cow<'_, str>) -> &'_ str {
    match c {
        Cow::Borrowed(s) => s,
        // Only a lossy (lone-surrogate) id lands here; it has no exact form to borrow.
        Cow::Owned(_) => "\u{fffd}",
    }
}

/// Walks one history, knowing which message it is in for error messages.
pub struct Walker<'k, 'py> {
    py: Python<'py>,
    keep: &'k Keep<'py>,
    index: usize,
    keys: FieldKeys,
    depth: Cell<u32>,
}

// Real histories nest content two levels deep (a tool result inside a user message).
const MAX_CONTENT_DEPTH: u32 = 32;

/// The interned names of the message fields, compared by pointer first.
struct FieldKeys([*mut ffi::PyObject; 9]);

const FIELD_NAMES: [&str; 9] = [
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "name",
    "parts",
    "reasoning_content",
    "reasoning",
    "reasoning_details",
];

impl FieldKeys {
    fn new(py: Python<'_>) -> Self {
        FieldKeys([
            intern!(py, "role").as_ptr(),
            intern!(py, "content").as_ptr(),
            intern!(py, "tool_calls").as_ptr(),
            intern!(py, "tool_call_id").as_ptr(),
            intern!(py, "name").as_ptr(),
            intern!(py, "parts").as_ptr(),
            intern!(py, "reasoning_content").as_ptr(),
            intern!(py, "reasoning").as_ptr(),
            intern!(py, "reasoning_details").as_ptr(),
        ])
    }

    /// Which field a key names (`None` for other keys and non-string keys).
    fn slot<'f, 'py>(
        &self,
        py: Python<'py>,
        key: *mut ffi::PyObject,
        f: &'f mut Fields<'py>,
    ) -> Option<&'f mut Option<Bound<'py, PyAny>>> {
        let i = match self.0.iter().position(|&p| p == key) {
            Some(i) => i,
            None => {
                // SAFETY: `key` is a live borrowed reference held by the dict being read.
                let key = unsafe { Borrowed::from_ptr(py, key) };
                let key = key.cast::<PyString>().ok()?;
                let text = key.to_str().ok()?;
                FIELD_NAMES.iter().position(|&n| n == text)?
            }
        };
        Some(match i {
            0 => &mut f.role,
            1 => &mut f.content,
            2 => &mut f.tool_calls,
            3 => &mut f.tool_call_id,
            4 => &mut f.name,
            5 => &mut f.parts,
            6 => &mut f.reasoning_content,
            7 => &mut f.reasoning,
            _ => &mut f.reasoning_details,
        })
    }
}

impl<'k, 'py> Walker<'k, 'py> {
    pub fn new(py: Python<'py>, keep: &'k Keep<'py>) -> Self {
        Walker {
            py,
            keep,
            index: 0,
            keys: FieldKeys::new(py),
            depth: Cell::new(0),
        }
    }

    #[cold]
    fn err(&self, field: &str, reason: String) -> PyErr {
        invalid(self.py, self.index, field, &reason)
    }

    fn get(
        &self,
        obj: &Bound<'py, PyAny>,
        key: &Bound<'py, PyString>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        field(obj, key)
    }

    /// A required-if-present string field. `path` is only formatted when the field is wrong.
    fn opt_str(
        &self,
        obj: &Bound<'py, PyAny>,
        key: &Bound<'py, PyString>,
        path: impl std::fmt::Display,
    ) -> PyResult<Option<Cow<'k, str>>> {
        match self.get(obj, key)? {
            None => Ok(None),
            Some(v) => match v.cast_into::<PyString>() {
                Ok(s) => Ok(Some(self.keep.str(s)?)),
                Err(e) => Err(self.err(
                    &path.to_string(),
                    format!(
                        "expected a string, got {}",
                        type_name(e.into_inner().as_any())
                    ),
                )),
            },
        }
    }

    /// Borrowed str as `&'k str` (ids, names, roles: short, always valid UTF-8 in practice).
    fn opt_id(
        &self,
        obj: &Bound<'py, PyAny>,
        key: &Bound<'py, PyString>,
        path: impl std::fmt::Display,
    ) -> PyResult<Option<&'k str>> {
        Ok(self.opt_str(obj, key, path)?.map(borrowed_or_placeholder))
    }

    /// Set the message index that errors report (for callers that walk messages one by one).
    pub fn set_index(&mut self, index: usize) {
        self.index = index;
    }

    /// Parse a whole history (any sequence).
    pub fn messages(&mut self, seq: &Bound<'py, PyAny>) -> PyResult<Vec<Message<'k>>> {
        if seq.is_instance_of::<PyString>() || seq.is_instance_of::<PyDict>() {
            return Err(PyTypeError::new_err(format!(
                "messages must be a list of messages, got {}",
                type_name(seq)
            )));
        }
        let mut out = Vec::with_capacity(seq.len().unwrap_or(0));
        if let Ok(list) = seq.cast::<PyList>() {
            for (i, m) in list.iter().enumerate() {
                self.index = i;
                out.push(self.message(&m)?);
            }
        } else {
            for (i, m) in seq.try_iter()?.enumerate() {
                self.index = i;
                out.push(self.message(&m?)?);
            }
        }
        Ok(out)
    }

    /// Collect the fields of a message: one pass over a dict's items (no hash lookups for the
    /// fields it lacks), attribute reads for SDK objects.
    fn fields(&self, m: &Bound<'py, PyAny>) -> PyResult<Fields<'py>> {
        let py = self.py;
        let mut f = Fields::default();
        if m.is_exact_instance_of::<PyDict>() {
            // The hot path: one pass with borrowed references over an exact dict, keys matched
            // by identity with the interned field names (dict literals and json.loads keys of
            // these names are usually the same objects), by text otherwise. No Python code runs
            // during the pass, so the borrowed pointers stay valid; values kept are increfed.
            let mut pos: ffi::Py_ssize_t = 0;
            let mut k: *mut ffi::PyObject = std::ptr::null_mut();
            let mut v: *mut ffi::PyObject = std::ptr::null_mut();
            // SAFETY: `m` is an exact dict, and the GIL is held for the whole pass.
            while unsafe { ffi::PyDict_Next(m.as_ptr(), &mut pos, &mut k, &mut v) } != 0 {
                if v == unsafe { ffi::Py_None() } {
                    continue;
                }
                let Some(slot) = self.keys.slot(py, k, &mut f) else {
                    continue;
                };
                // SAFETY: `v` is a live borrowed reference from the dict; this increfs it.
                *slot = Some(unsafe { Bound::from_borrowed_ptr(py, v) });
            }
        } else if let Ok(d) = m.cast::<PyDict>() {
            for (k, v) in d.iter() {
                if v.is_none() {
                    continue;
                }
                if let Some(slot) = self.keys.slot(py, k.as_ptr(), &mut f) {
                    *slot = Some(v);
                }
            }
        } else {
            f.role = field(m, intern!(py, "role"))?;
            f.content = field(m, intern!(py, "content"))?;
            f.tool_calls = field(m, intern!(py, "tool_calls"))?;
            f.tool_call_id = field(m, intern!(py, "tool_call_id"))?;
            f.name = field(m, intern!(py, "name"))?;
            if f.content.is_none() {
                f.parts = field(m, intern!(py, "parts"))?;
            }
            f.reasoning_content = field(m, intern!(py, "reasoning_content"))?;
        }
        Ok(f)
    }

    fn str_value(
        &self,
        v: Option<Bound<'py, PyAny>>,
        path: &str,
    ) -> PyResult<Option<Cow<'k, str>>> {
        match v {
            None => Ok(None),
            Some(v) => match v.cast_into::<PyString>() {
                Ok(s) => Ok(Some(self.keep.str(s)?)),
                Err(e) => Err(self.err(
                    path,
                    format!(
                        "expected a string, got {}",
                        type_name(e.into_inner().as_any())
                    ),
                )),
            },
        }
    }

    fn id_value(&self, v: Option<Bound<'py, PyAny>>, path: &str) -> PyResult<Option<&'k str>> {
        Ok(self.str_value(v, path)?.map(borrowed_or_placeholder))
    }

    /// Parse one message (OpenAI chat, Anthropic, Gemini `parts`, or a Responses input item).
    pub fn message(&self, m: &Bound<'py, PyAny>) -> PyResult<Message<'k>> {
        let is_dict = m.is_instance_of::<PyDict>();
        if !is_dict
            && (m.is_instance_of::<PyString>()
                || m.is_instance_of::<PyList>()
                || m.is_instance_of::<PyTuple>()
                || m.is_instance_of::<PyInt>()
                || m.is_instance_of::<PyFloat>()
                || m.is_none())
        {
            return Err(self.err(
                "",
                format!(
                    "a message must be a dict or an SDK message object, got {}",
                    type_name(m)
                ),
            ));
        }
        let f = self.fields(m)?;
        let Some(role) = self.id_value(f.role, "role")? else {
            return self.item(m);
        };
        let mut msg = Message::empty(role);
        msg.content = match (f.content, f.parts) {
            (Some(c), _) => self.content(&c, "content")?,
            (None, Some(p)) => self.content(&p, "parts")?,
            (None, None) => Content::None,
        };
        msg.name = self.id_value(f.name, "name")?;
        msg.tool_call_id = self.id_value(f.tool_call_id, "tool_call_id")?;
        if let Some(calls) = f.tool_calls {
            msg.tool_calls = self.tool_calls(&calls)?;
        }
        if msg.role == Role::Assistant {
            msg.reasoning = match self.str_value(f.reasoning_content, "reasoning_content")? {
                Some(r) => Some(r),
                // `reasoning` is a string on OpenAI-compatible servers, an object elsewhere.
                None => match f.reasoning.map(|r| r.cast_into::<PyString>()) {
                    Some(Ok(s)) => Some(self.keep.str(s)?),
                    _ => match f.reasoning_details {
                        Some(d) => self.reasoning_details(&d)?,
                        None => None,
                    },
                },
            };
        }
        Ok(msg)
    }

    /// OpenRouter `reasoning_details`: the visible text and summaries are priced as reasoning;
    /// signatures and encrypted data are not billed as text (see `Profile::encrypted_per_byte`).
    fn reasoning_details(&self, d: &Bound<'py, PyAny>) -> PyResult<Option<Cow<'k, str>>> {
        let py = self.py;
        if !d.is_instance_of::<PyList>() {
            return Ok(None);
        }
        let mut text = String::new();
        for item in d.try_iter()? {
            let item = item?;
            for key in [intern!(py, "text"), intern!(py, "summary")] {
                if let Some(v) = field(&item, key)? {
                    if let Ok(s) = v.cast::<PyString>() {
                        text.push_str(&s.to_string_lossy());
                    }
                }
            }
        }
        Ok((!text.is_empty()).then_some(Cow::Owned(text)))
    }

    /// A Responses API input item without a role (`function_call`, `function_call_output`,
    /// `reasoning`, hosted-tool calls).
    fn item(&self, m: &Bound<'py, PyAny>) -> PyResult<Message<'k>> {
        let py = self.py;
        let Some(kind) = self.opt_id(m, intern!(py, "type"), "type")? else {
            return Err(self.err(
                "role",
                "missing (and no Responses item `type` either)".into(),
            ));
        };
        match kind {
            "function_call" | "custom_tool_call" => {
                let mut msg = Message::empty("assistant");
                let id = self
                    .opt_id(m, intern!(py, "call_id"), "call_id")?
                    .unwrap_or("");
                let name = self
                    .opt_id(m, intern!(py, "name"), "name")?
                    .ok_or_else(|| self.err("name", "a function_call item needs a name".into()))?;
                let args = match self.get(m, intern!(py, "arguments"))? {
                    Some(a) => self.json_or_str(&a)?,
                    None => match self.get(m, intern!(py, "input"))? {
                        Some(a) => self.json_or_str(&a)?,
                        None => Cow::Borrowed(""),
                    },
                };
                msg.tool_calls.push(ToolCall {
                    id,
                    name,
                    arguments: args,
                });
                Ok(msg)
            }
            "function_call_output" | "custom_tool_call_output" => {
                let mut msg = Message::empty("tool");
                msg.tool_call_id = self.opt_id(m, intern!(py, "call_id"), "call_id")?;
                if let Some(o) = self.get(m, intern!(py, "output"))? {
                    msg.content = self.content(&o, "output")?;
                }
                Ok(msg)
            }
            "reasoning" => {
                let mut msg = Message::empty("assistant");
                let mut parts = Vec::new();
                if let Some(e) =
                    self.opt_id(m, intern!(py, "encrypted_content"), "encrypted_content")?
                {
                    parts.push(Part::EncryptedReasoning(e));
                }
                for key in [intern!(py, "summary"), intern!(py, "content")] {
                    if let Some(s) = self.get(m, key)? {
                        if let Content::Parts(p) = self.content(&s, "summary")? {
                            parts.extend(p);
                        }
                    }
                }
                msg.content = Content::Parts(parts);
                Ok(msg)
            }
            _ => {
                let mut msg = Message::empty("assistant");
                msg.content = Content::Parts(vec![self.opaque(kind, m)?]);
                Ok(msg)
            }
        }
    }

    /// Tool-call arguments: a string as is, anything else serialized as compact JSON.
    fn json_or_str(&self, v: &Bound<'py, PyAny>) -> PyResult<Cow<'k, str>> {
        match v.cast::<PyString>() {
            Ok(s) => self.keep.str(s.clone()),
            Err(_) => Ok(Cow::Owned(json_text(v)?)),
        }
    }

    fn tool_calls(&self, calls: &Bound<'py, PyAny>) -> PyResult<Vec<ToolCall<'k>>> {
        let py = self.py;
        if !(calls.is_instance_of::<PyList>() || calls.is_instance_of::<PyTuple>()) {
            return Err(self.err(
                "tool_calls",
                format!("expected a list, got {}", type_name(calls)),
            ));
        }
        let mut out = Vec::with_capacity(calls.len()?);
        for (j, c) in calls.try_iter()?.enumerate() {
            let c = c?;
            let path = |f: &str| format!("tool_calls[{j}]{f}");
            if c.is_instance_of::<PyString>() || c.is_none() {
                return Err(self.err(
                    &path(""),
                    format!("expected a tool call object, got {}", type_name(&c)),
                ));
            }
            let id = self
                .opt_id(
                    &c,
                    intern!(py, "id"),
                    format_args!("tool_calls[{j}]{}", ".id"),
                )?
                .unwrap_or("");
            let Some(f) = self.get(&c, intern!(py, "function"))? else {
                return Err(self.err(
                    &path(".function"),
                    "missing: a tool call needs a function".into(),
                ));
            };
            let name = self
                .opt_id(
                    &f,
                    intern!(py, "name"),
                    format_args!("tool_calls[{j}]{}", ".function.name"),
                )?
                .ok_or_else(|| self.err(&path(".function.name"), "missing".into()))?;
            let arguments = match self.get(&f, intern!(py, "arguments"))? {
                Some(a) => self.json_or_str(&a)?,
                None => Cow::Borrowed(""),
            };
            out.push(ToolCall {
                id,
                name,
                arguments,
            });
        }
        Ok(out)
    }

    /// A `content` value: None, a string, or a list of parts.
    fn content(&self, c: &Bound<'py, PyAny>, path: &str) -> PyResult<Content<'k>> {
        if let Ok(s) = c.cast::<PyString>() {
            return Ok(Content::Text(self.keep.str(s.clone())?));
        }
        if c.is_instance_of::<PyList>() || c.is_instance_of::<PyTuple>() {
            // Tool results nest content in content; a hostile depth must not overflow the stack.
            let depth = self.depth.get();
            if depth >= MAX_CONTENT_DEPTH {
                return Err(self.err(
                    path,
                    format!("content nested deeper than {MAX_CONTENT_DEPTH} levels"),
                ));
            }
            self.depth.set(depth + 1);
            let mut parts = Vec::with_capacity(c.len()?);
            for (j, p) in c.try_iter()?.enumerate() {
                match self.part(&p?, &format!("{path}[{j}]")) {
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
        Err(self.err(
            path,
            format!(
                "expected a string, a list of parts or None, got {}",
                type_name(c)
            ),
        ))
    }

    fn image_url(&self, u: &Bound<'py, PyAny>, detail: Detail, path: &str) -> PyResult<Part<'k>> {
        let py = self.py;
        let (url, detail) = if let Ok(s) = u.cast::<PyString>() {
            (self.keep.str(s.clone())?, detail)
        } else {
            let url = self
                .opt_str(u, intern!(py, "url"), format_args!("{path}.url"))?
                .ok_or_else(|| self.err(&format!("{path}.url"), "missing".into()))?;
            let d = self.detail(u, path)?.unwrap_or(detail);
            (url, d)
        };
        Ok(Part::Image(Image {
            source: self.image_source(url),
            detail,
        }))
    }

    fn image_source(&self, url: Cow<'k, str>) -> ImageSource<'k> {
        match url {
            Cow::Borrowed(s) if s.starts_with("data:") || !s.contains("://") => {
                ImageSource::Base64(s)
            }
            Cow::Borrowed(s) => ImageSource::Url(s),
            // A lossy copy is never a readable image.
            Cow::Owned(_) => ImageSource::Url(""),
        }
    }

    fn detail(&self, obj: &Bound<'py, PyAny>, path: &str) -> PyResult<Option<Detail>> {
        match self.opt_id(
            obj,
            intern!(self.py, "detail"),
            format_args!("{path}.detail"),
        )? {
            None => Ok(None),
            Some(d) => Detail::parse(d).map(Some).ok_or_else(|| {
                self.err(
                    &format!("{path}.detail"),
                    format!("unknown detail {d:?}; valid: auto, low, high, original"),
                )
            }),
        }
    }

    fn text_field(
        &self,
        p: &Bound<'py, PyAny>,
        key: &Bound<'py, PyString>,
        path: &str,
    ) -> PyResult<Cow<'k, str>> {
        let name = key.to_str().unwrap_or("text");
        Ok(self
            .opt_str(p, key, format_args!("{path}.{name}"))?
            .unwrap_or(Cow::Borrowed("")))
    }

    /// One content part of any supported wire format.
    fn part(&self, p: &Bound<'py, PyAny>, path: &str) -> PyResult<Part<'k>> {
        let py = self.py;
        if let Ok(s) = p.cast::<PyString>() {
            return Ok(Part::Text(self.keep.str(s.clone())?));
        }
        if p.is_none() || p.is_instance_of::<PyList>() || p.is_instance_of::<PyInt>() {
            return Err(self.err(
                path,
                format!("expected a content part object, got {}", type_name(p)),
            ));
        }
        let Some(kind) = self.opt_id(p, intern!(py, "type"), format_args!("{path}.type"))? else {
            return self.gemini_part(p, path);
        };
        Ok(match kind {
            "text" | "input_text" | "output_text" | "summary_text" | "reasoning_text" => {
                Part::Text(self.text_field(p, intern!(py, "text"), path)?)
            }
            "refusal" => Part::Text(self.text_field(p, intern!(py, "refusal"), path)?),
            "image_url" => {
                let u = self
                    .get(p, intern!(py, "image_url"))?
                    .ok_or_else(|| self.err(&format!("{path}.image_url"), "missing".into()))?;
                self.image_url(&u, Detail::Auto, &format!("{path}.image_url"))?
            }
            "input_image" => {
                let detail = self.detail(p, path)?.unwrap_or_default();
                match self.get(p, intern!(py, "image_url"))? {
                    Some(u) => self.image_url(&u, detail, &format!("{path}.image_url"))?,
                    None => Part::Image(Image {
                        source: ImageSource::Url(""),
                        detail,
                    }),
                }
            }
            "image" => self.anthropic_image(p, path)?,
            "tool_use" | "server_tool_use" | "mcp_tool_use" => {
                let id = self
                    .opt_id(p, intern!(py, "id"), format_args!("{path}.id"))?
                    .unwrap_or("");
                let name = self
                    .opt_id(p, intern!(py, "name"), format_args!("{path}.name"))?
                    .unwrap_or("");
                let arguments = match self.get(p, intern!(py, "input"))? {
                    Some(i) => self.json_or_str(&i)?,
                    None => Cow::Borrowed("{}"),
                };
                Part::ToolUse(ToolCall {
                    id,
                    name,
                    arguments,
                })
            }
            k if k == "tool_result" || k.ends_with("_tool_result") => {
                let tool_use_id = self
                    .opt_id(
                        p,
                        intern!(py, "tool_use_id"),
                        format_args!("{path}.tool_use_id"),
                    )?
                    .unwrap_or("");
                let content = match self.get(p, intern!(py, "content"))? {
                    None => Vec::new(),
                    Some(c) => {
                        if c.is_instance_of::<PyString>()
                            || c.is_instance_of::<PyList>()
                            || c.is_instance_of::<PyTuple>()
                        {
                            match self.content(&c, &format!("{path}.content"))? {
                                Content::Text(t) => vec![Part::Text(t)],
                                Content::Parts(v) => v,
                                Content::None => Vec::new(),
                            }
                        } else {
                            // Server tool results carry structured objects: price their JSON.
                            vec![Part::Text(Cow::Owned(json_text(&c)?))]
                        }
                    }
                };
                Part::ToolResult {
                    tool_use_id,
                    content,
                }
            }
            "thinking" => Part::Thinking {
                text: self.thinking_text(p, path)?,
                signature: self
                    .opt_id(
                        p,
                        intern!(py, "signature"),
                        format_args!("{path}.signature"),
                    )?
                    .unwrap_or(""),
            },
            "redacted_thinking" => Part::EncryptedReasoning(
                self.opt_id(p, intern!(py, "data"), format_args!("{path}.data"))?
                    .unwrap_or(""),
            ),
            _ => self.opaque(kind, p)?,
        })
    }

    fn anthropic_image(&self, p: &Bound<'py, PyAny>, path: &str) -> PyResult<Part<'k>> {
        let py = self.py;
        let spath = format!("{path}.source");
        let src = self
            .get(p, intern!(py, "source"))?
            .ok_or_else(|| self.err(&spath, "missing".into()))?;
        let source = match self.opt_id(&src, intern!(py, "type"), format_args!("{spath}.type"))? {
            Some("base64") => {
                let data = self.get(&src, intern!(py, "data"))?;
                match data {
                    Some(d) => match self.keep.bytes(&d)? {
                        Some(b) => ImageSource::Bytes(b),
                        None => match d.cast_into::<PyString>() {
                            Ok(s) => self.image_source(self.keep.str(s)?),
                            Err(_) => {
                                return Err(self.err(
                                    &format!("{spath}.data"),
                                    "expected base64 text or bytes".into(),
                                ))
                            }
                        },
                    },
                    None => return Err(self.err(&format!("{spath}.data"), "missing".into())),
                }
            }
            Some("url") => ImageSource::Url(
                self.opt_id(&src, intern!(py, "url"), format_args!("{spath}.url"))?
                    .unwrap_or(""),
            ),
            _ => ImageSource::Url(""),
        };
        Ok(Part::Image(Image {
            source,
            detail: Detail::Auto,
        }))
    }

    /// The `thinking` of a block: a string (Anthropic) or a list of text parts (Mistral).
    fn thinking_text(&self, p: &Bound<'py, PyAny>, path: &str) -> PyResult<Cow<'k, str>> {
        match self.get(p, intern!(self.py, "thinking"))? {
            None => Ok(Cow::Borrowed("")),
            Some(t) => match self.content(&t, &format!("{path}.thinking"))? {
                Content::Text(s) => Ok(s),
                Content::None => Ok(Cow::Borrowed("")),
                Content::Parts(parts) => {
                    let mut s = String::new();
                    for part in parts {
                        if let Part::Text(t) = part {
                            s.push_str(&t);
                        }
                    }
                    Ok(Cow::Owned(s))
                }
            },
        }
    }

    /// Bedrock Converse blocks: `{"image": {"format", "source": {"bytes"}}}`, `toolUse`,
    /// `toolResult`, `document`, `video`.
    fn bedrock_part(&self, p: &Bound<'py, PyAny>, path: &str) -> PyResult<Option<Part<'k>>> {
        let py = self.py;
        if let Some(img) = self.get(p, intern!(py, "image"))? {
            let bytes = match self.get(&img, intern!(py, "source"))? {
                Some(src) => self.get(&src, intern!(py, "bytes"))?,
                None => None,
            };
            let source = match bytes {
                Some(b) => match self.keep.bytes(&b)? {
                    Some(raw) => ImageSource::Bytes(raw),
                    None => match b.cast_into::<PyString>() {
                        Ok(s) => self.image_source(self.keep.str(s)?),
                        Err(_) => ImageSource::Url(""),
                    },
                },
                None => ImageSource::Url(""),
            };
            return Ok(Some(Part::Image(Image {
                source,
                detail: Detail::Auto,
            })));
        }
        if let Some(u) = self.get(p, intern!(py, "toolUse"))? {
            let id = self.opt_id(
                &u,
                intern!(py, "toolUseId"),
                format_args!("{path}.toolUse.toolUseId"),
            )?;
            let name = self.opt_id(&u, intern!(py, "name"), format_args!("{path}.toolUse.name"))?;
            let arguments = match self.get(&u, intern!(py, "input"))? {
                Some(i) => self.json_or_str(&i)?,
                None => Cow::Borrowed("{}"),
            };
            return Ok(Some(Part::ToolUse(ToolCall {
                id: id.unwrap_or(""),
                name: name.unwrap_or(""),
                arguments,
            })));
        }
        if let Some(r) = self.get(p, intern!(py, "toolResult"))? {
            let id = self.opt_id(
                &r,
                intern!(py, "toolUseId"),
                format_args!("{path}.toolResult.toolUseId"),
            )?;
            let content = match self.get(&r, intern!(py, "content"))? {
                Some(c) => match self.content(&c, &format!("{path}.toolResult.content"))? {
                    Content::Parts(v) => v,
                    Content::Text(t) => vec![Part::Text(t)],
                    Content::None => Vec::new(),
                },
                None => Vec::new(),
            };
            return Ok(Some(Part::ToolResult {
                tool_use_id: id.unwrap_or(""),
                content,
            }));
        }
        if let Some(j) = self.get(p, intern!(py, "json"))? {
            return Ok(Some(Part::Text(Cow::Owned(json_text(&j)?))));
        }
        for (key, kind) in [
            (intern!(py, "document"), "document"),
            (intern!(py, "video"), "video"),
        ] {
            if let Some(d) = self.get(p, key)? {
                return Ok(Some(self.opaque(kind, &d)?));
            }
        }
        Ok(None)
    }

    /// Gemini parts carry their kind as the key: `text`, `inlineData`, `functionCall`,
    /// `functionResponse`.
    fn gemini_part(&self, p: &Bound<'py, PyAny>, path: &str) -> PyResult<Part<'k>> {
        let py = self.py;
        if let Some(t) = self.opt_str(p, intern!(py, "text"), format_args!("{path}.text"))? {
            return Ok(Part::Text(t));
        }
        if let Some(part) = self.bedrock_part(p, path)? {
            return Ok(part);
        }
        for key in [intern!(py, "inlineData"), intern!(py, "inline_data")] {
            if let Some(d) = self.get(p, key)? {
                let mime = self
                    .opt_id(&d, intern!(py, "mimeType"), path)?
                    .or(self.opt_id(&d, intern!(py, "mime_type"), path)?)
                    .unwrap_or("");
                if mime.starts_with("image/") {
                    if let Some(data) = self.get(&d, intern!(py, "data"))? {
                        if let Some(b) = self.keep.bytes(&data)? {
                            return Ok(Part::Image(Image {
                                source: ImageSource::Bytes(b),
                                detail: Detail::Auto,
                            }));
                        }
                        if let Ok(s) = data.cast_into::<PyString>() {
                            let s = self.keep.str(s)?;
                            return Ok(Part::Image(Image {
                                source: self.image_source(s),
                                detail: Detail::Auto,
                            }));
                        }
                    }
                }
                return self.opaque("inlineData", &d);
            }
        }
        for key in [intern!(py, "functionCall"), intern!(py, "function_call")] {
            if let Some(f) = self.get(p, key)? {
                let name = self
                    .opt_id(
                        &f,
                        intern!(py, "name"),
                        format_args!("{path}.functionCall.name"),
                    )?
                    .unwrap_or("");
                let id = self
                    .opt_id(
                        &f,
                        intern!(py, "id"),
                        format_args!("{path}.functionCall.id"),
                    )?
                    .unwrap_or(name);
                let arguments = match self.get(&f, intern!(py, "args"))? {
                    Some(a) => self.json_or_str(&a)?,
                    None => Cow::Borrowed("{}"),
                };
                return Ok(Part::ToolUse(ToolCall {
                    id,
                    name,
                    arguments,
                }));
            }
        }
        for key in [
            intern!(py, "functionResponse"),
            intern!(py, "function_response"),
        ] {
            if let Some(f) = self.get(p, key)? {
                let name = self
                    .opt_id(
                        &f,
                        intern!(py, "name"),
                        format_args!("{path}.functionResponse.name"),
                    )?
                    .unwrap_or("");
                let id = self
                    .opt_id(
                        &f,
                        intern!(py, "id"),
                        format_args!("{path}.functionResponse.id"),
                    )?
                    .unwrap_or(name);
                let body = match self.get(&f, intern!(py, "response"))? {
                    Some(r) => json_text(&r)?,
                    None => String::new(),
                };
                return Ok(Part::ToolResult {
                    tool_use_id: id,
                    content: vec![Part::Text(Cow::Owned(body))],
                });
            }
        }
        // Gemini `fileData` and other keyed parts: priced as media by their MIME type.
        self.opaque("unknown", p)
    }

    /// A part the model has no structure for (audio, video, files, documents, hosted-tool
    /// items): its MIME kind and inline payload size are looked up so it can be priced as media.
    fn opaque(&self, kind: &'k str, p: &Bound<'py, PyAny>) -> PyResult<Part<'k>> {
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
            wire_chars: json_len(p)?,
        })
    }

    /// Tool definitions (OpenAI `{"type":"function","function":{...}}`, Responses
    /// `{"type":"function","name":...}`, Anthropic `{"name","input_schema"}`, Gemini
    /// `{"functionDeclarations":[...]}`), each serialized once for the overhead function.
    pub fn tools(&self, tools: &Bound<'py, PyAny>) -> PyResult<Vec<ToolDef<'k>>> {
        let py = self.py;
        if !(tools.is_instance_of::<PyList>() || tools.is_instance_of::<PyTuple>()) {
            return Err(PyTypeError::new_err(format!(
                "tools must be a list of tool definitions, got {}",
                type_name(tools)
            )));
        }
        let mut out = Vec::new();
        for (j, t) in tools.try_iter()?.enumerate() {
            let t = t?;
            let name = match self.get(&t, intern!(py, "function"))? {
                Some(f) => self.opt_str(
                    &f,
                    intern!(py, "name"),
                    format_args!("tools[{j}].function.name"),
                )?,
                None => self.opt_str(&t, intern!(py, "name"), format_args!("tools[{j}].name"))?,
            };
            out.push(ToolDef {
                name: name.unwrap_or(Cow::Borrowed("")),
                json: Cow::Owned(json_text(&t)?),
            });
        }
        Ok(out)
    }

    /// A system prompt: a string, or a list of text blocks (Anthropic).
    pub fn system(&self, system: &Bound<'py, PyAny>) -> PyResult<Cow<'k, str>> {
        match self.content(system, "system") {
            Ok(Content::Text(t)) => Ok(t),
            Ok(Content::Parts(parts)) => {
                let mut s = String::new();
                for p in parts {
                    if let Part::Text(t) = p {
                        if !s.is_empty() {
                            s.push('\n');
                        }
                        s.push_str(&t);
                    }
                }
                Ok(Cow::Owned(s))
            }
            Ok(Content::None) => Ok(Cow::Borrowed("")),
            Err(_) => Err(PyTypeError::new_err(format!(
                "system must be a string or a list of text blocks, got {}",
                type_name(system)
            ))),
        }
    }

    /// Extras of a request: optional tools and system.
    pub fn extras(
        &self,
        tools: Option<&Bound<'py, PyAny>>,
        system: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<RequestExtras<'k>> {
        Ok(RequestExtras {
            system: match system {
                Some(s) if !s.is_none() => Some(self.system(s)?),
                _ => None,
            },
            tools: match tools {
                Some(t) if !t.is_none() => self.tools(t)?,
                _ => Vec::new(),
            },
        })
    }
}
