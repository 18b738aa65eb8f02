//! The wire formats: how each provider's request JSON is read into message views and how an
//! edit is written back in that same format.
//!
//! One file per format owns its detection (which shapes belong to it), its reading into
//! [`crate::message::Message`] views and its [`Dialect`]: its keys, roles, turn rules and
//! writers (a text message, a text block, an edit). Below the formats: `input` (the accessor
//! trait every reader is generic over), `fields` (the field readers and the content walk they
//! share), `edit` (the format-neutral edit the bindings apply without knowing any format) and
//! `dialect` (the type). Above them, and the only `match` over formats: `read` (which reader
//! reads a part) and this file (which dialect writes a message).
//!
//! A new format is one file here: its reader, its `DIALECT`, and an arm in `dialect_of` and in
//! `read`'s part dispatch.

pub mod anthropic;
pub mod bedrock;
pub mod dialect;
pub mod edit;
pub mod fields;
pub mod gemini;
pub mod input;
pub mod item_reference;
pub mod json_size;
pub mod langchain;
pub mod openai_chat;
pub mod openai_responses;
pub mod read;
pub mod request;
pub mod request_body;
pub mod response_format;
pub mod responses_tool_items;
pub mod tools_format;
pub mod wire_format;

pub use dialect::{prefill_end, BlankText, CallIdRule, Dialect};
pub use edit::{Change, Edit, Step};
pub use input::{Input, Key, ReadError, ReadResult, Shape};
pub use json_size::{json_string_len, push_json_string};
pub use read::{
    not_a_tool, read_extras, read_history, read_message, read_system, read_tools, ExtrasError,
    HistoryError,
};
pub use request::{
    format_field, read_request, read_request_at, Api, Body, History, McpServer, Settings, Thinking,
    ToolChoice, Turn,
};
pub use tools_format::tools_format;
pub use wire_format::WireFormat;

pub use crate::message::Format;
use crate::message::{Content, Message, Part};

/// The dialect a message read as `f` is written in; `None` for a message that shows no format
/// (plain `{"role", "content": "text"}`), which any format could have sent.
pub fn dialect_of(f: Format) -> Option<&'static Dialect> {
    Some(match f {
        Format::Unknown => return None,
        Format::OpenAIChat => &openai_chat::DIALECT,
        Format::OpenAIResponses => &openai_responses::DIALECT,
        Format::Anthropic => &anthropic::DIALECT,
        Format::Gemini => &gemini::DIALECT,
        Format::GeminiSnake => &gemini::SNAKE_DIALECT,
        Format::Bedrock => &bedrock::DIALECT,
        Format::LangChain => &langchain::DIALECT,
    })
}

impl WireFormat {
    /// The format a compaction writes for a history read as `f` (`detect`); `None` when
    /// nothing in the history is specific to one format.
    pub fn of(f: Format) -> Option<WireFormat> {
        dialect_of(f).map(|d| d.wire)
    }

    /// The dialect that writes this format.
    pub fn dialect(self) -> &'static Dialect {
        match self {
            WireFormat::Chat => &openai_chat::DIALECT,
            WireFormat::Responses => &openai_responses::DIALECT,
            WireFormat::Anthropic => &anthropic::DIALECT,
            WireFormat::Gemini => &gemini::DIALECT,
            WireFormat::Bedrock => &bedrock::DIALECT,
        }
    }

    /// Turns alternate user / assistant and the first non-system turn is the user's.
    pub fn strict_turns(self) -> bool {
        self.dialect().strict_turns
    }

    /// Tool calls are answered in the very next message (Anthropic, Gemini, Bedrock), in the run
    /// of `tool` messages that follows (chat), or anywhere later (Responses).
    pub(crate) fn results_in_next_message(self) -> bool {
        self.strict_turns()
    }

    /// The assistant's role string on this wire.
    pub fn assistant_role(self) -> &'static str {
        self.dialect().assistant_role
    }

    /// A whole text message of this format (a summary, a merged turn), as compact JSON;
    /// `assistant`: the assistant's turn (else the user's).
    pub fn text_message_json(self, assistant: bool, text: &str) -> String {
        let d = self.dialect();
        (d.text_message)(if assistant { d.assistant_role } else { "user" }, text)
    }

    /// A text block of this format carrying `text`, as compact JSON (for merging into a
    /// message of the assistant's turn when `assistant`, else the user's).
    pub fn text_block_json(self, assistant: bool, text: &str) -> String {
        (self.dialect().text_block)(assistant, text)
    }

    /// The edit that adds `text` (a summary) to message `msg` of this format: a text block
    /// first (`at_start`) or last in its content list; a string content becomes `text` and the
    /// string (at the start) or two blocks (at the end); a chat message without content (it
    /// only called tools) gets `text` as its content.
    pub fn merge_text(
        self,
        msg: &Message<'_>,
        text: &str,
        at_start: bool,
    ) -> (Vec<Step>, edit::Action) {
        let assistant = msg.role == crate::message::Role::Assistant;
        let path = vec![Step::Key(self.dialect().content_key)];
        let block = self.text_block_json(assistant, text);
        let action = match &msg.content {
            Content::None => edit::Action::Set(edit::json_string(text)),
            Content::Text(t) if at_start => {
                edit::Action::Set(edit::json_string(&format!("{text}\n\n{t}")))
            }
            Content::Text(t) => {
                edit::Action::Set(format!("[{},{block}]", self.text_block_json(assistant, t)))
            }
            Content::Parts(ps) => edit::Action::Insert {
                position: if at_start {
                    crate::summary_placement::leading_thinking(msg)
                } else {
                    ps.len()
                },
                value: block,
            },
        };
        (path, action)
    }

    /// The edit that takes contextfold's summary out of the message it was merged into
    /// (`merge_text`'s inverse): a string content becomes what followed the summary, a text
    /// block holding only the summary is removed. With whether the summary opened the message
    /// (it was merged at the start of a later turn, not at the end of an earlier one). None when
    /// the message holds no summary or nothing besides it (`without_summary`), or holds it in a
    /// block with other text after it.
    pub fn unmerge_text(self, msg: &Message<'_>) -> Option<(Vec<Step>, edit::Action, bool)> {
        crate::summary_marker::without_summary(msg)?;
        let key = Step::Key(self.dialect().content_key);
        match &msg.content {
            Content::Text(t) => {
                let rest = crate::summary_marker::after_summary(t)?;
                Some((vec![key], edit::Action::Set(edit::json_string(&rest)), true))
            }
            Content::Parts(ps) => {
                let (at, rest) = ps.iter().enumerate().find_map(|(k, p)| match p {
                    Part::Text(t) => crate::summary_marker::after_summary(t).map(|r| (k, r)),
                    _ => None,
                })?;
                rest.trim().is_empty().then(|| {
                    let leads = at == crate::summary_placement::leading_thinking(msg);
                    (vec![key, Step::Index(at)], edit::Action::Remove, leads)
                })
            }
            Content::None => None,
        }
    }
}

/// The edit that makes `change` to message `index` in its own format, or `None` when the format
/// cannot express it or the edit would not make the message smaller.
pub fn write_edit(index: usize, msg: &Message<'_>, change: &Change) -> Option<Edit> {
    let (path, value) = match dialect_of(msg.wire) {
        Some(d) => (d.write)(msg, change)?,
        // A message that shows no format is plain `{"role", "content": "..."}`: its text is at
        // `content` in every format that has string content, so a plain-text change can be
        // written; nothing else can.
        None => match change {
            Change::Text { .. } => (openai_chat::DIALECT.write)(msg, change)?,
            // Ollama's native images (on a plain user turn) are written on their own field.
            Change::Image { part, .. } if msg.images_from.is_some_and(|f| *part >= f) => {
                (openai_chat::DIALECT.write)(msg, change)?
            }
            // A computer call's old screenshot (its one edit).
            Change::Image { part: 0, .. } if responses_tool_items::is_screenshot(msg) => {
                responses_tool_items::screenshot_masked(msg)?
            }
            _ => return None,
        },
    };
    Some(Edit {
        message: index,
        path,
        value,
    })
}

/// Whether `msg`'s calls keep their arguments as a JSON string that a provider parses: OpenAI
/// chat function calls and Responses `function_call` items. Not a custom tool's call (its
/// input is free text, as is what the Responses API's client-run items carry: a `program`'s
/// code, a shell action), not LangChain's (LangChain keeps arguments a model cut off in
/// `invalid_tool_calls` and sends them itself), and not the object arguments of the other
/// formats (Anthropic `input`, Gemini `args`, Bedrock `input`, Ollama's native calls: serialized
/// by the reader, never invalid).
pub fn json_string_arguments(msg: &Message<'_>) -> bool {
    match msg.wire {
        Format::OpenAIChat => msg.item != Some(openai_chat::CUSTOM_CALLS),
        Format::OpenAIResponses => msg.item == Some("function_call"),
        _ => false,
    }
}

/// Where call `j` of `msg` keeps its arguments when they are a JSON string a provider parses
/// (`json_string_arguments`): `tool_calls[j].function.arguments` (or a legacy chat
/// `function_call.arguments`), a Responses item's `arguments`.
pub fn json_arguments_path(msg: &Message<'_>, j: usize) -> Option<Vec<Step>> {
    if j >= msg.tool_calls.len() || !json_string_arguments(msg) {
        return None;
    }
    Some(match (msg.wire, msg.item) {
        (Format::OpenAIResponses, _) => vec![Step::Key("arguments")],
        (_, Some(openai_chat::LEGACY_FUNCTION_CALL)) => {
            vec![Step::Key("function_call"), Step::Key("arguments")]
        }
        _ => vec![
            Step::Key("tool_calls"),
            Step::Index(j),
            Step::Key("function"),
            Step::Key("arguments"),
        ],
    })
}

/// The format of a whole history: the first message that shows one (`Unknown` when none does,
/// e.g. a history of plain text messages). The one detection of the library: the bindings'
/// `detect_wire_format` is this over the messages read so far.
pub fn detect(msgs: &[Message<'_>]) -> Format {
    msgs.iter()
        .map(|m| match (m.wire, m.item) {
            // A role-less item is a Responses item whatever its own edits may write (a
            // `custom_tool_call` or a `shell_call` is never edited, and so shows no format):
            // a history of plain messages and such items is a Responses input.
            (Format::Unknown, Some(_)) => Format::OpenAIResponses,
            (f, _) => f,
        })
        .find(|f| *f != Format::Unknown)
        .unwrap_or_default()
}
