//! What a wire format declares about itself: its keys, its roles, its turn rules and its
//! writers. Each format file holds one [`Dialect`] (`DIALECT`); nothing outside `src/wire/`
//! names a format's keys, and the dispatch from a [`crate::message::Format`] or a
//! [`WireFormat`] to its dialect is the one `match` over formats (`wire::dialect_of`).

use super::edit::{Change, Written};
use super::wire_format::WireFormat;
use crate::message::{Content, Message, Part};

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
    /// What the provider takes as a tool call's id.
    pub call_id: CallIdRule,
    /// The text a provider refuses in a message's content (a text block, or the content string).
    pub blank_text: BlankText,
    /// Two turns of one role in a row are refused, wherever they are (a history written so
    /// comes to the provider as it was written).
    pub refuses_same_role: bool,
    /// A final assistant turn (a prefill) whose text ends in whitespace is refused.
    pub refuses_prefill_trailing_space: bool,
    /// Servers of the format refuse an assistant turn right before a system message (Mistral's
    /// request validator: "Unexpected role 'system' after role 'assistant'"), while OpenAI
    /// takes it: a summary is never written as one.
    pub refuses_assistant_before_system: bool,
    /// Servers of the format refuse a user turn right after a tool result (Mistral's request
    /// validator: "Unexpected role 'user' after role 'tool'"), while OpenAI takes it: a summary
    /// is never written as one.
    pub refuses_user_after_tool: bool,
}

/// Text the provider refuses as a block of a message's content, or as the whole content.
/// A turn of such text alone is refused as a message without content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlankText {
    /// Any text is taken.
    Taken,
    /// An empty text is refused.
    Empty,
    /// An empty or whitespace-only text is refused.
    Whitespace,
}

impl BlankText {
    /// Whether `text` is refused.
    pub fn refuses(self, text: &str) -> bool {
        match self {
            BlankText::Taken => false,
            BlankText::Empty => text.is_empty(),
            BlankText::Whitespace => text.trim().is_empty(),
        }
    }
}

/// The ids a provider takes for a client tool call (and so for the result that answers it).
/// A history carried over from another provider keeps that provider's ids (Kimi's
/// `functions.get_weather:0`, a gateway's 44-character UUIDs), which this one refuses.
#[derive(Debug, Clone, Copy)]
pub struct CallIdRule {
    /// Only ASCII letters, digits, `_` and `-`, at least one of them.
    pub word_chars_only: bool,
    /// The longest id taken, in characters.
    pub max_chars: Option<usize>,
}

impl CallIdRule {
    /// Any id, as OpenAI-compatible servers take (vLLM's `chatcmpl-tool-<32 hex>`; Ollama's empty
    /// ids of the recorded exchanges).
    pub const ANY: CallIdRule = CallIdRule {
        word_chars_only: false,
        max_chars: None,
    };

    /// Whether some id is refused.
    pub fn restricts(&self) -> bool {
        self.word_chars_only || self.max_chars.is_some()
    }

    /// Why `id` is refused, or `None` when it is taken.
    pub fn refuses(&self, id: &str) -> Option<String> {
        if self.word_chars_only && (id.is_empty() || !id.bytes().all(is_id_byte)) {
            return Some(if id.is_empty() {
                "an empty id".to_string()
            } else {
                "characters other than letters, digits, _ and -".to_string()
            });
        }
        match self.max_chars {
            Some(max) if id.chars().count() > max => Some(format!("longer than {max} characters")),
            _ => None,
        }
    }

    /// `id` made one the rule takes: each other character `_`, an empty id `call`, cut to the
    /// longest taken. Two ids may come out alike; the repair makes them unique after.
    pub fn accepted(&self, id: &str) -> String {
        let mut out: String = if self.word_chars_only {
            id.chars()
                .map(|c| {
                    if c.is_ascii() && is_id_byte(c as u8) {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        } else {
            id.to_string()
        };
        if out.is_empty() && self.word_chars_only {
            out.push_str("call");
        }
        if let Some((at, _)) = self.max_chars.and_then(|max| out.char_indices().nth(max)) {
            out.truncate(at);
        }
        out
    }
}

fn is_id_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Where a final assistant turn's text ends in whitespace: `None` for the content string, or
/// the position of its last block (blocks `blank` refuses left out, as the repair removes
/// them), with the text; nothing when it ends otherwise (a call, text ending in a word).
pub fn prefill_end<'m>(m: &'m Message<'_>, blank: BlankText) -> Option<(Option<usize>, &'m str)> {
    let ends_in_space = |t: &str| t.chars().next_back().is_some_and(char::is_whitespace);
    match &m.content {
        Content::Text(t) => ends_in_space(t).then_some((None, t.as_ref())),
        Content::Parts(ps) => {
            let (k, p) = ps
                .iter()
                .enumerate()
                .rev()
                .find(|(_, p)| !matches!(p, Part::Text(t) if blank.refuses(t)))?;
            match p {
                Part::Text(t) if ends_in_space(t) => Some((Some(k), t.as_ref())),
                _ => None,
            }
        }
        Content::None => None,
    }
}
