//! What a wire format declares about itself: its keys, its roles, its turn rules and its
//! writers. Each format file holds one [`Dialect`] (`DIALECT`); nothing outside `src/wire/`
//! names a format's keys, and the dispatch from a [`crate::message::Format`] or a
//! [`WireFormat`] to its dialect is the one `match` over formats (`wire::dialect_of`).

use super::edit::{Change, Written};
use super::wire_format::WireFormat;
use crate::message::Message;

/// One wire format's own knowledge, as data and writers.
#[derive(Debug)]
pub struct Dialect {
    /// The format a compaction writes for a history read in this dialect.
    pub wire: WireFormat,
    /// Where a request body carries the history (`messages`; Responses `input`; Gemini
    /// `contents`).
    pub history_key: &'static str,
    /// Where a message keeps its list of content parts (`content`; Gemini `parts`).
    pub content_key: &'static str,
    /// The assistant's role string (`assistant`; Gemini `model`).
    pub assistant_role: &'static str,
    /// Turns alternate user / assistant and the first non-system turn is the user's; a tool
    /// call is answered in the very next message.
    pub strict_turns: bool,
    /// Reasoning (thinking) is a block of the message's own content list, which an edit may
    /// drop whole; elsewhere it is an item of its own (Responses) or a field (chat).
    pub thinking_in_content: bool,
    /// A whole text message `(role, text)`, as compact JSON.
    pub text_message: fn(&str, &str) -> String,
    /// A text block `(assistant_turn, text)` to merge into a message, as compact JSON.
    pub text_block: fn(bool, &str) -> String,
    /// The path and replacement JSON of a change to one of its messages; `None` when the format
    /// cannot express it or the edit would not make the message smaller.
    pub write: fn(&Message<'_>, &Change) -> Option<Written>,
}
