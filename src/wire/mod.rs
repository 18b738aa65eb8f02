//! The wire formats: how each provider's request JSON is read into message views and how an
//! edit is written back in that same format.
//!
//! One file per format owns its detection (which shapes belong to it), its reading into
//! [`crate::message::Message`] views and its edit writer. `read` holds what the formats share
//! (the message / content / part dispatch); `input` the accessor trait every reader is generic
//! over; `edit` the format-neutral edit the bindings apply without knowing any format.

pub mod anthropic;
pub mod bedrock;
pub mod edit;
pub mod gemini;
pub mod input;
pub mod json_size;
pub mod langchain;
pub mod openai_chat;
pub mod openai_responses;
pub mod read;
pub mod request;
pub mod response_format;
pub mod wire_format;

pub use edit::{Change, Edit, Step};
pub use input::{Input, Key, ReadError, ReadResult, Shape};
pub use json_size::{json_string_len, push_json_string};
pub use read::{
    read_extras, read_history, read_message, read_system, read_tools, ExtrasError, HistoryError,
};
pub use request::{read_request, Api, Body, History, McpServer, Settings, Thinking, ToolChoice};
pub use wire_format::WireFormat;

use crate::message::Message;

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

/// The format of a whole history: the first message that shows one (`Unknown` when none does,
/// e.g. a history of plain text messages). The one detection of the library: the bindings'
/// `detect_wire_format` is this over the messages read so far.
pub fn detect(msgs: &[Message<'_>]) -> Format {
    msgs.iter()
        .map(|m| m.wire)
        .find(|f| *f != Format::Unknown)
        .unwrap_or_default()
}
