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
pub mod response_format;
pub mod wire_format;

pub use edit::{Change, Edit, Step};
pub use input::{Input, Key, ReadError, ReadResult, Shape};
pub use json_size::{json_string_len, push_json_string};
pub use read::{
    read_extras, read_history, read_message, read_system, read_tools, ExtrasError, HistoryError,
};
pub use wire_format::WireFormat;

pub use crate::message::Format;
use crate::message::Message;

/// The format of a whole history: the first message that shows one (`Unknown` when none does,
/// e.g. a history of plain text messages). The one detection of the library: the bindings'
/// `detect_wire_format` is this over the messages read so far.
pub fn detect(msgs: &[Message<'_>]) -> Format {
    msgs.iter()
        .map(|m| m.wire)
        .find(|f| *f != Format::Unknown)
        .unwrap_or_default()
}
