//! The message model: borrowed views of one chat history, normalized across wire formats.
//!
//! The wire readers (`crate::wire`) fill these views in one walk over the caller's values.
//! Strings are borrowed (`&'a str`) from those values, which the caller keeps alive, so an 8 MB
//! history is never copied; only values that have no string form (an Anthropic `tool_use.input`
//! object, say) are serialized into owned text.
//!
//! One model covers the five wire formats (OpenAI chat and Responses, Anthropic, Gemini,
//! Bedrock): the provider chosen by the caller decides how a view is priced, not how it is
//! read. Each message remembers the format it was read from (`wire`), which decides how an edit
//! of it is written.

use std::borrow::Cow;

/// What a non-image binary part holds, from its MIME type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaKind {
    /// An image sent by reference only (no bytes to read a header from).
    Image,
    Audio,
    Video,
    /// PDFs and office documents: billed per page.
    Document,
    /// Plain text sent as a file: priced as text by the caller.
    Text,
    /// No MIME type known.
    Unknown,
}

impl MediaKind {
    /// Classify a MIME type (`audio/wav`), an OpenAI audio `format` (`wav`, `mp3`) or a Bedrock
    /// document / video `format` (`pdf`, `docx`, `mp4`: DocumentBlock and VideoBlock in the
    /// Bedrock Converse API reference).
    pub fn from_mime(mime: &str) -> MediaKind {
        let m = mime.trim().to_ascii_lowercase();
        match m.as_str() {
            "pdf" | "doc" | "docx" | "xls" | "xlsx" => return MediaKind::Document,
            "csv" | "html" | "txt" | "md" => return MediaKind::Text,
            "mkv" | "mov" | "mp4" | "webm" | "flv" | "mpeg" | "mpg" | "wmv" | "three_gp" => {
                return MediaKind::Video
            }
            _ => {}
        }
        if m.starts_with("audio/")
            || matches!(
                m.as_str(),
                "wav" | "mp3" | "flac" | "ogg" | "pcm16" | "aac" | "opus"
            )
        {
            MediaKind::Audio
        } else if m.starts_with("image/") {
            MediaKind::Image
        } else if m.starts_with("video/") {
            MediaKind::Video
        } else if m.starts_with("text/") || m == "application/json" {
            MediaKind::Text
        } else if m == "application/pdf"
            || m.contains("document")
            || m.contains("msword")
            || m.contains("presentation")
            || m.contains("spreadsheet")
        {
            MediaKind::Document
        } else {
            MediaKind::Unknown
        }
    }
}

/// The wire format a message was read from: decides how an edit of it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Format {
    /// Nothing format-specific seen (a plain `{"role", "content": "text"}` message): any format
    /// could have sent it, and nothing in it is ever edited.
    #[default]
    Unknown,
    /// OpenAI Chat Completions: `tool_calls`, role `tool`, `image_url` parts.
    OpenAIChat,
    /// OpenAI Responses input items: `function_call` / `function_call_output` items,
    /// `input_text` / `input_image` parts.
    OpenAIResponses,
    /// Anthropic Messages: `tool_use` / `tool_result` / `image` blocks.
    Anthropic,
    /// Gemini `contents`: `parts` with `functionCall` / `functionResponse` / `inlineData`.
    Gemini,
    /// Gemini parts spelled in snake case (`function_call`, `inline_data`: the Python SDK's
    /// field names).
    GeminiSnake,
    /// Bedrock Converse: `toolUse` / `toolResult` / `image` content blocks.
    Bedrock,
    /// A LangChain message object, read by meaning by the bindings (see `langchain`).
    LangChain,
}

impl Format {
    /// Combine what two parts of one message say: the first specific format wins, except that
    /// a Gemini message learns its key spelling from its parts.
    pub(crate) fn merge(self, other: Format) -> Format {
        match (self, other) {
            (Format::Unknown, o) => o,
            (Format::Gemini, Format::GeminiSnake) => Format::GeminiSnake,
            (s, _) => s,
        }
    }

    /// Its name, as the bindings and reports say it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Unknown => "unknown",
            Format::OpenAIChat => "openai_chat",
            Format::OpenAIResponses => "openai_responses",
            Format::Anthropic => "anthropic",
            Format::Gemini | Format::GeminiSnake => "gemini",
            Format::Bedrock => "bedrock",
            Format::LangChain => "langchain",
        }
    }
}

/// The speaker of a message, as far as counting and grouping care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    Developer,
    User,
    Assistant,
    /// OpenAI `tool` (and the legacy `function`) result messages.
    Tool,
    /// Any other role string; priced like a user message.
    Other,
}

impl Role {
    /// Classify a wire role string. Gemini's `model` is the assistant.
    pub fn parse(role: &str) -> Role {
        match role {
            "system" => Role::System,
            "developer" => Role::Developer,
            "user" => Role::User,
            "assistant" | "model" => Role::Assistant,
            "tool" | "function" => Role::Tool,
            _ => Role::Other,
        }
    }
}

/// Requested image fidelity: OpenAI `detail`, Gemini's `mediaResolution` level (`Low`,
/// `Medium`, `High`, `UltraHigh`); other providers ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Detail {
    #[default]
    Auto,
    Low,
    High,
    /// gpt-5.4+ `original`: the larger patch budget.
    Original,
    /// Gemini `MEDIA_RESOLUTION_MEDIUM`.
    Medium,
    /// Gemini `MEDIA_RESOLUTION_ULTRA_HIGH` (set on a part only).
    UltraHigh,
}

impl Detail {
    /// Parse an OpenAI `detail` value; `None` for an unknown one.
    pub fn parse(s: &str) -> Option<Detail> {
        match s {
            "auto" => Some(Detail::Auto),
            "low" => Some(Detail::Low),
            "high" => Some(Detail::High),
            "original" => Some(Detail::Original),
            _ => None,
        }
    }

    /// A Gemini media resolution level (`MEDIA_RESOLUTION_LOW`, as the REST API and the SDK's
    /// enum write it, or `low`); `None` for an unknown one. Unspecified is `Auto`.
    pub fn parse_media_resolution(s: &str) -> Option<Detail> {
        let s = s.trim();
        let level = match s.get(..17) {
            Some(p) if p.eq_ignore_ascii_case("MEDIA_RESOLUTION_") => &s[17..],
            _ => s,
        };
        [
            ("UNSPECIFIED", Detail::Auto),
            ("LOW", Detail::Low),
            ("MEDIUM", Detail::Medium),
            ("HIGH", Detail::High),
            ("ULTRA_HIGH", Detail::UltraHigh),
        ]
        .into_iter()
        .find(|(name, _)| level.eq_ignore_ascii_case(name))
        .map(|(_, d)| d)
    }

    /// One byte for a saved state.
    pub fn code(self) -> u8 {
        match self {
            Detail::Auto => 0,
            Detail::Low => 1,
            Detail::High => 2,
            Detail::Original => 3,
            Detail::Medium => 4,
            Detail::UltraHigh => 5,
        }
    }

    /// The level of [`Detail::code`]; `None` for a byte no level has.
    pub fn from_code(c: u8) -> Option<Detail> {
        [
            Detail::Auto,
            Detail::Low,
            Detail::High,
            Detail::Original,
            Detail::Medium,
            Detail::UltraHigh,
        ]
        .into_iter()
        .find(|d| d.code() == c)
    }
}

/// Where an image's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageSource<'a> {
    /// Base64 text, with or without a `data:<mime>;base64,` prefix.
    Base64(&'a str),
    /// Raw bytes of the file (or its first bytes: only the header is read).
    Bytes(&'a [u8]),
    /// A remote URL: the size is unknown, priced with the provider's bounded default.
    Url(&'a str),
    /// An uploaded file, by its id (OpenAI `file_id`, Anthropic `source.file_id`) or URI
    /// (Gemini `fileData.fileUri`, Bedrock `s3Location.uri`): the size is unknown, priced like
    /// a URL; the id is what a caller's `image_sizes` is keyed by.
    File(&'a str),
}

/// One image part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image<'a> {
    pub source: ImageSource<'a>,
    pub detail: Detail,
}

/// A function call requested by the assistant (OpenAI `tool_calls[i]` or Anthropic `tool_use`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall<'a> {
    pub id: &'a str,
    pub name: &'a str,
    /// The arguments as JSON text (OpenAI sends a string; Anthropic's `input` object is
    /// serialized compactly by the bindings).
    pub arguments: Cow<'a, str>,
}

/// One element of a message's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part<'a> {
    Text(Cow<'a, str>),
    Image(Image<'a>),
    /// Anthropic `tool_use` block inside an assistant message.
    ToolUse(ToolCall<'a>),
    /// Anthropic `tool_result` block (inside a user message): its own nested content.
    ToolResult {
        tool_use_id: &'a str,
        content: Vec<Part<'a>>,
        /// The provider's own verdict that the call failed (Anthropic `is_error: true`,
        /// Bedrock `status: "error"`): read before the words of the content.
        is_error: bool,
        /// The function's name where the block names it beside an id of its own (a Gemini
        /// `functionResponse` carrying `id`): what a rewrite of the whole block must name.
        name: Option<&'a str>,
    },
    /// Visible reasoning text plus its opaque signature (Anthropic `thinking`).
    Thinking {
        text: Cow<'a, str>,
        signature: &'a str,
    },
    /// Encrypted reasoning that is sent back but never shown (Anthropic `redacted_thinking`,
    /// OpenAI `encrypted_content`).
    EncryptedReasoning(&'a str),
    /// Audio, video, files, documents and unknown part types. `payload_chars` is the length of
    /// the base64 (or text) payload when one is inline, `wire_chars` the whole part's JSON size.
    /// `units`: the billed units its payload's own header gives (`media_header`): seconds of
    /// audio (rounded up), pages of a document; None where it does not say. `text`: what the
    /// block says, for the summary only (a search result's title, source and text; a file a
    /// server tool viewed): never priced (the block is priced by its JSON) nor edited.
    /// `payload`: a document's inline bytes as sent, kept (documents only) so that a
    /// recoverable fold of it can give it back; None for other media and for documents sent by
    /// reference.
    Opaque {
        kind: Cow<'a, str>,
        media: MediaKind,
        payload_chars: Option<usize>,
        wire_chars: usize,
        units: Option<u32>,
        text: Option<Cow<'a, str>>,
        payload: Option<Box<MediaPayload<'a>>>,
    },
}

/// A document's inline payload as its block sent it: what a recoverable fold stores so that
/// `recall(id)` gives the document back (boxed in `Part::Opaque`: most parts hold none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaPayload<'a> {
    pub data: MediaData<'a>,
    /// The MIME type or format the block names (`application/pdf`, Bedrock's `pdf`), if any.
    pub mime: Option<String>,
}

/// Where a payload's bytes are: base64 text (maybe a `data:` URL), or raw bytes (an SDK's
/// `bytes`, Bedrock's boto3 blocks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MediaData<'a> {
    Base64(Cow<'a, str>),
    Bytes(&'a [u8]),
}

impl MediaPayload<'_> {
    /// The payload as base64 text, as sent when it was text (a `data:` URL kept whole).
    pub fn base64(&self) -> Cow<'_, str> {
        match &self.data {
            MediaData::Base64(t) => Cow::Borrowed(t.as_ref()),
            MediaData::Bytes(b) => Cow::Owned(crate::image::encode(b)),
        }
    }

    /// Its MIME type: the block's (a Bedrock format read as one), else its `data:` URL's,
    /// else `application/pdf` where its bytes start as a PDF's, else None.
    pub fn media_type(&self) -> Option<String> {
        let named = self
            .mime
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty());
        if let Some(m) = named {
            return Some(if m.contains('/') {
                m.to_ascii_lowercase()
            } else {
                document_mime(m).to_string()
            });
        }
        let pdf = match &self.data {
            MediaData::Base64(t) => {
                if let Some(declared) = crate::image::data_url_type(t) {
                    return Some(declared.to_string());
                }
                crate::media_header::is_pdf_base64(t)
            }
            MediaData::Bytes(b) => crate::media_header::is_pdf_bytes(b),
        };
        pdf.then(|| "application/pdf".to_string())
    }
}

/// Bedrock's document `format`s (DocumentBlock) and the MIME type each stands for.
const DOCUMENT_FORMATS: [(&str, &str); 9] = [
    ("pdf", "application/pdf"),
    ("csv", "text/csv"),
    ("doc", "application/msword"),
    (
        "docx",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ),
    ("xls", "application/vnd.ms-excel"),
    (
        "xlsx",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ),
    ("html", "text/html"),
    ("txt", "text/plain"),
    ("md", "text/markdown"),
];

/// The MIME type of a Bedrock document `format` (DocumentBlock: pdf, csv, doc, docx, xls,
/// xlsx, html, txt, md); `application/octet-stream` for any other.
pub fn document_mime(format: &str) -> &'static str {
    let format = format.to_ascii_lowercase();
    DOCUMENT_FORMATS
        .iter()
        .find(|(f, _)| *f == format)
        .map_or("application/octet-stream", |(_, mime)| mime)
}

/// The document `format` (its short name, the file extension) of a MIME type: `document_mime`
/// read back; None for a type no document format stands for.
pub fn document_format(media_type: &str) -> Option<&'static str> {
    DOCUMENT_FORMATS
        .iter()
        .find(|(_, mime)| *mime == media_type)
        .map(|(f, _)| *f)
}

impl Part<'_> {
    /// Whether the part is reasoning sent back: a thinking block (Anthropic `thinking`, Bedrock
    /// `reasoningText`) or encrypted reasoning (`redacted_thinking`, a Responses item's
    /// `encrypted_content`, Bedrock `redactedContent`).
    pub fn is_thinking(&self) -> bool {
        matches!(self, Part::Thinking { .. } | Part::EncryptedReasoning(_))
    }

    /// The media of an opaque part that an old one is masked as an image is (a PDF, a recording,
    /// a video, an image by reference): hundreds of tokens a page or a second, old output like a
    /// screenshot. None for any other part, a file of text and a block of no known media (a
    /// search result, a server tool's item) included: words or structure a mask would lose.
    pub fn masked_media(&self) -> Option<MediaKind> {
        match self {
            Part::Opaque { media, .. } => match media {
                MediaKind::Document | MediaKind::Audio | MediaKind::Video | MediaKind::Image => {
                    Some(*media)
                }
                MediaKind::Text | MediaKind::Unknown => None,
            },
            _ => None,
        }
    }

    /// Whether the part is an image or masked media (`masked_media`).
    pub fn is_media(&self) -> bool {
        matches!(self, Part::Image(_)) || self.masked_media().is_some()
    }
}

/// A message's content field.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Content<'a> {
    /// Absent or `null` (an assistant message that only calls tools).
    #[default]
    None,
    Text(Cow<'a, str>),
    Parts(Vec<Part<'a>>),
}

/// One message, normalized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message<'a> {
    pub role: Role,
    /// The role string as sent (its tokens are part of the envelope).
    pub role_str: &'a str,
    pub name: Option<&'a str>,
    pub content: Content<'a>,
    pub tool_calls: Vec<ToolCall<'a>>,
    /// OpenAI tool result: the id of the call it answers.
    pub tool_call_id: Option<&'a str>,
    /// Reasoning text sent back by OpenAI-compatible servers (`reasoning_content`, `reasoning`).
    pub reasoning: Option<Cow<'a, str>>,
    /// The wire format the message was read from (`Unknown` when nothing in it is specific).
    pub wire: Format,
    /// Gemini thought signatures sent back on this message's parts.
    pub thought_signatures: ThoughtSignatures,
    /// The `type` of a role-less Responses item (`function_call`, `shell_call`, ...): the
    /// output a repair writes for an unanswered call must be of the call's own kind. On a chat
    /// message, `openai_chat::CUSTOM_CALLS` when it calls a custom tool (no `function` to edit).
    pub item: Option<&'a str>,
    /// The `id` a Responses output item came back with (`rs_...`, `msg_...`), on a reasoning
    /// item or an assistant message: OpenAI binds a reasoning item to the item after it.
    pub item_id: Option<&'a str>,
    /// The content position where the images of Ollama's native `images` field start (they
    /// run to the end of the parts, after the text of `content`): an edit of one of them is
    /// written on that field, as the message has no content list to hold it.
    pub images_from: Option<usize>,
}

/// The Gemini thought signatures (`thoughtSignature` / `thought_signature` beside a part) of one
/// message, in base64 characters, by the protobuf field their bytes open with: that field says
/// which serving platform issued them, and so whether they are billed when sent back.
///
/// The distinct signatures of the recorded Gemini requests (../shared/data, with or without
/// usage):
/// - Gemini 3 on the Gemini Developer API: 82, every one opens with field 2 (byte `0x12`,
///   base64 `E`);
/// - Gemini 3 on Vertex AI: 59, every one opens with field 1 (byte `0x0a`, base64 `C`), and
///   the payload inside with the same 4 bytes;
/// - Gemini 2.5 on the Gemini API: 39, every one opens with field 1.
///
/// Only the first group is billed (see `Estimator`), so the shape, not the model name, tells a
/// Gemini API history from a Vertex one when the caller names a bare model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThoughtSignatures {
    /// Characters of signatures opening with protobuf field 2 (Gemini API, Gemini 3).
    pub field2_chars: usize,
    /// Characters of signatures opening with protobuf field 1 (Vertex AI; Gemini 2.x).
    pub field1_chars: usize,
    /// Characters of anything else sent as a signature (placeholders such as
    /// `skip_thought_signature_validator`, which clients send to skip validation).
    pub other_chars: usize,
}

impl ThoughtSignatures {
    /// Count one signature sent as base64 text.
    pub fn add_base64(&mut self, sig: &str) {
        match sig.as_bytes().first() {
            // The first base64 character holds the first byte's top 6 bits: `E` is 0x10-0x13
            // (0x12: field 2, length-delimited), `C` is 0x08-0x0b (0x0a: field 1).
            Some(b'E') => self.field2_chars += sig.len(),
            Some(b'C') => self.field1_chars += sig.len(),
            _ => self.other_chars += sig.len(),
        }
    }

    /// Count one signature sent as raw bytes (the Python SDK's `bytes` field): priced by the
    /// length of the base64 it travels as.
    pub fn add_bytes(&mut self, sig: &[u8]) {
        let chars = sig.len().div_ceil(3) * 4;
        match sig.first() {
            Some(0x12) => self.field2_chars += chars,
            Some(0x0a) => self.field1_chars += chars,
            _ => self.other_chars += chars,
        }
    }

    /// True when the message carries no signature.
    pub fn is_empty(&self) -> bool {
        self.field2_chars + self.field1_chars + self.other_chars == 0
    }
}

impl<'a> Message<'a> {
    /// A message with only a role and string content.
    pub fn text(role: &'a str, text: &'a str) -> Self {
        Message {
            role: Role::parse(role),
            role_str: role,
            name: None,
            content: Content::Text(Cow::Borrowed(text)),
            tool_calls: Vec::new(),
            tool_call_id: None,
            reasoning: None,
            wire: Format::Unknown,
            thought_signatures: ThoughtSignatures::default(),
            item: None,
            item_id: None,
            images_from: None,
        }
    }

    /// An empty message of the given role, to be filled field by field.
    pub fn empty(role: &'a str) -> Self {
        Message {
            role: Role::parse(role),
            role_str: role,
            name: None,
            content: Content::None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            reasoning: None,
            wire: Format::Unknown,
            thought_signatures: ThoughtSignatures::default(),
            item: None,
            item_id: None,
            images_from: None,
        }
    }

    /// The content parts (empty when the content is a string or absent).
    pub fn parts(&self) -> &[Part<'a>] {
        match &self.content {
            Content::Parts(p) => p,
            _ => &[],
        }
    }

    /// The message's plain text when that is all it holds: its string, or its text blocks
    /// joined by newlines (borrowed when it is one string). None for an empty block list or
    /// any other kind of block.
    pub fn plain_text(&self) -> Option<Cow<'_, str>> {
        match &self.content {
            Content::Text(t) => Some(Cow::Borrowed(t.as_ref())),
            Content::Parts(ps) if ps.iter().all(|p| matches!(p, Part::Text(_))) => joined_texts(ps),
            _ => None,
        }
    }

    /// The tool calls this message makes: its `tool_calls` and its `tool_use` blocks.
    pub fn calls(&self) -> impl Iterator<Item = &ToolCall<'a>> + '_ {
        self.tool_calls
            .iter()
            .chain(self.parts().iter().filter_map(|p| match p {
                Part::ToolUse(c) => Some(c),
                _ => None,
            }))
    }

    /// Ids of the tool calls this message makes (OpenAI `tool_calls` and Anthropic `tool_use`)
    /// that another message must answer: a call answered in this message (`answered_here`)
    /// is not one.
    pub fn call_ids(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.tool_calls
            .iter()
            .map(|c| c.id)
            .chain(self.parts().iter().filter_map(|p| match p {
                Part::ToolUse(c) if !self.answered_here(c.id) => Some(c.id),
                _ => None,
            }))
    }

    /// Ids of the tool calls of an earlier message that this message answers (OpenAI
    /// `tool_call_id`, Anthropic `tool_result` blocks); a result of a call made in this
    /// message (`answered_here`) is not one.
    pub fn result_ids(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.tool_call_id
            .into_iter()
            .chain(self.parts().iter().filter_map(|p| match p {
                Part::ToolResult { tool_use_id, .. } if !self.answered_here(tool_use_id) => {
                    Some(*tool_use_id)
                }
                _ => None,
            }))
    }

    /// Whether the call `id` is both made and answered by this message's blocks. Anthropic
    /// runs its server tools itself (web search, web fetch, code execution, MCP connector)
    /// and returns each `server_tool_use` / `mcp_tool_use` block with its result
    /// (`web_search_tool_result`, `mcp_tool_result`, any `*_tool_result`) in the same
    /// assistant message; a client's `tool_result` only ever sits in the next (user) message.
    /// Such a pair links to no other message: it needs no result after it, and its result
    /// answers no earlier call (a stand-in `tool_result` for it is what Anthropic rejects).
    pub fn answered_here(&self, id: &str) -> bool {
        let blocks = self.parts();
        blocks
            .iter()
            .any(|p| matches!(p, Part::ToolUse(c) if c.id == id))
            && blocks
                .iter()
                .any(|p| matches!(p, Part::ToolResult { tool_use_id, .. } if *tool_use_id == id))
    }

    /// Whether the message is reasoning alone, as a Responses `reasoning` item is (encrypted
    /// content and summary, read with no wire format of its own since its parts are never
    /// edited; an empty list when the server stores it). OpenAI rejects such an item without
    /// the item it belongs to right after it (a function call, a message), so the two are
    /// kept or folded together.
    pub fn is_reasoning_item(&self) -> bool {
        self.role == Role::Assistant
            && self.wire == Format::Unknown
            && self.tool_calls.is_empty()
            && matches!(&self.content, Content::Parts(ps) if ps
                .iter()
                .all(Part::is_thinking))
    }

    /// True when the message requests at least one tool call.
    pub fn has_tool_calls(&self) -> bool {
        self.call_ids().next().is_some()
    }
}

/// The text blocks of `parts` joined by newlines, borrowed when there is one; None when there
/// is none (other blocks are skipped).
pub fn joined_texts<'m>(parts: &'m [Part<'_>]) -> Option<Cow<'m, str>> {
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(t.as_ref()),
            _ => None,
        })
        .collect();
    match texts.as_slice() {
        [] => None,
        [one] => Some(Cow::Borrowed(*one)),
        many => Some(Cow::Owned(many.join("\n"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_and_openai_links_are_both_seen() {
        let mut a = Message::empty("assistant");
        a.tool_calls.push(ToolCall {
            id: "call_1",
            name: "f",
            arguments: Cow::Borrowed("{}"),
        });
        a.content = Content::Parts(vec![Part::ToolUse(ToolCall {
            id: "toolu_2",
            name: "g",
            arguments: Cow::Borrowed("{}"),
        })]);
        assert_eq!(a.call_ids().collect::<Vec<_>>(), ["call_1", "toolu_2"]);

        let mut r = Message::empty("user");
        r.content = Content::Parts(vec![Part::ToolResult {
            tool_use_id: "toolu_2",
            is_error: false,
            content: vec![],
            name: None,
        }]);
        assert_eq!(r.result_ids().collect::<Vec<_>>(), ["toolu_2"]);
        assert!(!r.has_tool_calls());
    }

    #[test]
    fn a_server_tool_call_answered_in_its_own_message_links_to_no_other_message() {
        // Anthropic web search: `server_tool_use` and `web_search_tool_result` in one
        // assistant message, beside a client `tool_use` the next message answers.
        let mut a = Message::empty("assistant");
        a.content = Content::Parts(vec![
            Part::ToolUse(ToolCall {
                id: "srvtoolu_1",
                name: "web_search",
                arguments: Cow::Borrowed("{}"),
            }),
            Part::ToolResult {
                tool_use_id: "srvtoolu_1",
                is_error: false,
                content: vec![],
                name: None,
            },
            Part::ToolUse(ToolCall {
                id: "toolu_2",
                name: "read_file",
                arguments: Cow::Borrowed("{}"),
            }),
        ]);
        assert!(a.answered_here("srvtoolu_1"));
        assert!(!a.answered_here("toolu_2"));
        assert_eq!(a.call_ids().collect::<Vec<_>>(), ["toolu_2"]);
        assert_eq!(a.result_ids().count(), 0);
    }

    #[test]
    fn gemini_model_role_is_assistant() {
        assert_eq!(Role::parse("model"), Role::Assistant);
        assert_eq!(Role::parse("weird"), Role::Other);
    }
}
