//! The field readers every format shares: strings, ids, images, opaque media parts, and the
//! generic walk of a `content` value ([`Reader`]) whose parts the formats read. Below every
//! format file; the dispatch over formats sits above them (`read`).

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::fmt::Display;
use std::marker::PhantomData;

use super::input::{Input, Key, ReadError, ReadResult, Shape, Src};
use crate::message::{
    Content, Detail, Format, ImageSource, MediaData, MediaKind, MediaPayload, Part,
    ThoughtSignatures,
};

// Real histories nest content two levels deep (a tool result inside a user message); a hostile
// depth must not overflow the stack.
const MAX_CONTENT_DEPTH: u32 = 32;

// Media parts nest their payload a few levels down (`source.data`, `input_audio.data`).
const MEDIA_DEPTH: usize = 4;

/// The state of one message's read: content depth and the format its parts show.
pub(crate) struct Reader<D> {
    depth: Cell<u32>,
    pub(crate) format: Cell<Format>,
    pub(crate) signatures: Cell<ThoughtSignatures>,
    /// A part was read whose shape no edit of its format may write (a Gemini code execution
    /// read as a call and its result): the message is read, priced and never edited.
    pub(crate) frozen: Cell<bool>,
    /// The ids of the server-run calls read as calls (a Gemini code execution, a server-side
    /// tool invocation): one left without its result in the message is settled as the text it
    /// is (`gemini::settle_server_calls`).
    pub(crate) server_calls: RefCell<Vec<String>>,
    parts: PhantomData<D>,
}

/// How one content part of any format is read: implemented once, above every format file, by
/// the dispatch of `read` (formats read their nested content back through the [`Reader`]).
pub(crate) trait PartReader: Sized {
    fn part<'a, V: Input<'a>>(
        r: &Reader<Self>,
        p: &V,
        path: &str,
    ) -> ReadResult<Part<'a>, V::Error>;
}

impl<D: PartReader> Reader<D> {
    pub(crate) fn new() -> Self {
        Reader {
            depth: Cell::new(0),
            format: Cell::new(Format::Unknown),
            signatures: Cell::new(ThoughtSignatures::default()),
            frozen: Cell::new(false),
            server_calls: RefCell::new(Vec::new()),
            parts: PhantomData,
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

/// The `id` of a Responses item, when it is a string: only read to tell whether a reasoning item
/// is sent with the output item it precedes, so another type is no error (a chat message may
/// carry an id of its own, of any type, that no provider reads).
pub(crate) fn item_id<'a, V: Input<'a>>(id: Option<V>) -> ReadResult<Option<&'a str>, V::Error> {
    Ok(match id {
        Some(v) => v.str().src()?.map(borrowed_or_placeholder),
        None => None,
    })
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
pub(crate) fn json_or_str<'a, V: Input<'a>>(
    v: &V,
    path: impl Display,
) -> ReadResult<Cow<'a, str>, V::Error> {
    match v.str().src()? {
        Some(s) => Ok(s),
        None => Ok(Cow::Owned(
            v.json_text().inspect_err(|_| v.failed_at(&path)).src()?,
        )),
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
struct MediaInfo<'a> {
    mime: Option<String>,
    /// Characters of the inline payload (base64 or text), if any.
    payload: Option<usize>,
    /// The inline payload as sent (base64, maybe a data URL), when a string: its header may
    /// say its duration or pages (`media_header`).
    text: Option<Cow<'a, str>>,
    /// The inline payload as raw bytes (an SDK object's `bytes`), for the same reading.
    raw: Option<&'a [u8]>,
}

fn media_info<'a, V: Input<'a>>(
    v: &V,
    info: &mut MediaInfo<'a>,
    depth: usize,
) -> ReadResult<(), V::Error> {
    // (An SDK object too: google-genai's `Blob` holds its `mime_type` and `data` bytes as
    // fields, and read as no mapping, its audio was priced as unknown JSON.)
    if depth > MEDIA_DEPTH || !matches!(v.shape(), Shape::Map | Shape::Object) {
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
                            info.text = Some(text);
                        }
                    } else if key != "url" && key != "image_url" {
                        info.payload = Some(text.len());
                        info.text = Some(text);
                    }
                }
                _ => {}
            }
        } else if let Some(b) = val.bytes().src()? {
            // Raw bytes: expressed as the base64 characters they are sent as.
            info.payload = Some(b.len().div_ceil(3) * 4);
            info.raw = Some(b);
        } else {
            media_info(&val, info, depth + 1)?;
        }
    }
    Ok(())
}

/// `part` (an opaque one) with what it says for the summary (`Part::Opaque::text`).
pub(crate) fn with_text<'a>(mut part: Part<'a>, said: Option<String>) -> Part<'a> {
    if let Part::Opaque { text, .. } = &mut part {
        *text = said.filter(|s| !s.trim().is_empty()).map(Cow::Owned);
    }
    part
}

/// The texts of `p`'s `content` list of text blocks (Anthropic's `{"type": "text", "text"}`,
/// Bedrock's `{"text"}`), joined by newlines; empty when it has none (or no list).
pub(crate) fn content_texts<'a, V: Input<'a>>(p: &V, path: &str) -> ReadResult<String, V::Error> {
    let mut out = String::new();
    for (k, item) in opt_items(p, Key::content)?.iter().enumerate() {
        if let Some(t) = opt_str(item, Key::text, format_args!("{path}.content[{k}].text"))? {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&t);
        }
    }
    Ok(out)
}

/// The items of `p`'s list field `key`; none when it is absent or no list.
pub(crate) fn opt_items<'a, V: Input<'a>>(p: &V, key: Key) -> ReadResult<Vec<V>, V::Error> {
    Ok(match p.get(key).src()? {
        Some(v) => v.items().src()?.unwrap_or_default(),
        None => Vec::new(),
    })
}

/// What a search result block says (Anthropic `search_result`, Bedrock `searchResult`: a
/// `title`, a `source`, `content` text blocks): `title (source): text`, for the summary.
pub(crate) fn search_result_text<'a, V: Input<'a>>(
    p: &V,
    path: &str,
) -> ReadResult<Option<String>, V::Error> {
    let body = content_texts(p, path)?;
    let title = opt_str(p, Key::title, format_args!("{path}.title"))?;
    let source = opt_str(p, Key::source, format_args!("{path}.source"))?;
    let head = match (title.as_deref(), source.as_deref()) {
        (Some(t), Some(s)) => format!("{t} ({s})"),
        (Some(x), None) | (None, Some(x)) => x.to_string(),
        (None, None) => String::new(),
    };
    Ok(match (head.is_empty(), body.is_empty()) {
        (true, true) => None,
        (false, true) => Some(head),
        (true, false) => Some(body),
        (false, false) => Some(format!("{head}: {body}")),
    })
}

/// A part with no structure in the model (audio, video, files, documents, hosted-tool items):
/// its MIME kind and inline payload size are looked up so it can be priced as media.
pub(crate) fn opaque<'a, V: Input<'a>>(kind: &'a str, p: &V) -> ReadResult<Part<'a>, V::Error> {
    let mut info = MediaInfo::default();
    media_info(p, &mut info, 0)?;
    let media = match info.mime {
        Some(ref m) => MediaKind::from_mime(m),
        None => match kind {
            "input_audio" | "audio" => MediaKind::Audio,
            "video" => MediaKind::Video,
            "document" | "file" | "input_file" => MediaKind::Document,
            _ => MediaKind::Unknown,
        },
    };
    let units = match (&info.text, info.raw) {
        (Some(t), _) => crate::media_header::units_of(media, t),
        (None, Some(b)) => crate::media_header::units_of_bytes(media, b),
        _ => None,
    }
    .map(|u| u.ceil().clamp(1.0, f64::from(u32::MAX)) as u32);
    // A document's bytes are kept for a recoverable fold to give back (a PDF a tool returned is
    // old output masked like a screenshot); other media are only priced.
    let payload = match (media, info.text, info.raw) {
        (MediaKind::Document, Some(t), _) => Some(MediaData::Base64(t)),
        (MediaKind::Document, None, Some(b)) => Some(MediaData::Bytes(b)),
        _ => None,
    }
    .map(|data| {
        Box::new(MediaPayload {
            data,
            mime: info.mime,
        })
    });
    Ok(Part::Opaque {
        kind: Cow::Borrowed(kind),
        media,
        payload_chars: info.payload,
        wire_chars: p.json_len().src()?,
        units,
        text: None,
        payload,
    })
}

impl<D: PartReader> Reader<D> {
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

    /// One content part of any supported wire format: the formats' part readers, through `D`
    /// (the dispatch sits above every format, so this walk does not import them).
    pub(crate) fn part<'a, V: Input<'a>>(
        &self,
        p: &V,
        path: &str,
    ) -> ReadResult<Part<'a>, V::Error> {
        D::part(self, p, path)
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
pub(crate) fn joined_text<'a>(c: Content<'a>, sep: &str) -> Cow<'a, str> {
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
