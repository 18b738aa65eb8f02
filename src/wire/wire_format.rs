//! The formats a history is written in: what a request of each API accepts. The reader's
//! [`Format`] says what one message looked like (including "nothing specific" and spellings);
//! a [`WireFormat`] is what the compaction writes new messages in, each format's file owning
//! the JSON of its text messages and text blocks.

use super::{anthropic, bedrock, gemini, openai_chat, openai_responses, Format};

/// How a history is written on the wire (what a request of that API accepts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFormat {
    /// OpenAI chat completions, also Ollama and every OpenAI-compatible server.
    Chat,
    /// OpenAI Responses input items.
    Responses,
    /// Anthropic Messages (system separate).
    Anthropic,
    /// Gemini `contents` (user / model, parts).
    Gemini,
    /// Bedrock Converse messages.
    Bedrock,
}

impl WireFormat {
    /// The accepted spellings.
    pub const NAMES: [&'static str; 5] = ["chat", "responses", "anthropic", "gemini", "bedrock"];

    /// Parse a format name; the error lists the valid ones.
    pub fn parse(s: &str) -> Result<WireFormat, String> {
        match s {
            "chat" => Ok(WireFormat::Chat),
            "responses" => Ok(WireFormat::Responses),
            "anthropic" => Ok(WireFormat::Anthropic),
            "gemini" => Ok(WireFormat::Gemini),
            "bedrock" => Ok(WireFormat::Bedrock),
            _ => Err(format!(
                "unknown wire format {s:?}; valid formats: {}",
                WireFormat::NAMES.join(", ")
            )),
        }
    }

    /// Turns alternate user / assistant and the first non-system turn is the user's.
    pub fn strict_turns(self) -> bool {
        matches!(
            self,
            WireFormat::Anthropic | WireFormat::Gemini | WireFormat::Bedrock
        )
    }

    /// Its name, as `NAMES` spells it.
    pub fn name(self) -> &'static str {
        match self {
            WireFormat::Chat => "chat",
            WireFormat::Responses => "responses",
            WireFormat::Anthropic => "anthropic",
            WireFormat::Gemini => "gemini",
            WireFormat::Bedrock => "bedrock",
        }
    }

    /// The format a compaction writes for a history read as `f` (`crate::wire::detect`);
    /// `None` when nothing in the history is specific to one format.
    pub fn of(f: Format) -> Option<WireFormat> {
        match f {
            Format::Unknown => None,
            // LangChain messages are written as chat (their content blocks are chat's).
            Format::OpenAIChat | Format::LangChain => Some(WireFormat::Chat),
            Format::OpenAIResponses => Some(WireFormat::Responses),
            Format::Anthropic => Some(WireFormat::Anthropic),
            Format::Gemini | Format::GeminiSnake => Some(WireFormat::Gemini),
            Format::Bedrock => Some(WireFormat::Bedrock),
        }
    }

    /// Tool calls are answered in the very next message (Anthropic, Gemini, Bedrock), in the run
    /// of `tool` messages that follows (chat), or anywhere later (Responses).
    pub(crate) fn results_in_next_message(self) -> bool {
        self.strict_turns()
    }

    /// The assistant's role string on this wire.
    pub fn assistant_role(self) -> &'static str {
        match self {
            WireFormat::Gemini => "model",
            _ => "assistant",
        }
    }
}

impl WireFormat {
    /// A whole text message of this format (a summary, a merged turn), as compact JSON;
    /// `assistant`: the assistant's turn (else the user's).
    pub fn text_message_json(self, assistant: bool, text: &str) -> String {
        let role = if assistant {
            self.assistant_role()
        } else {
            "user"
        };
        match self {
            WireFormat::Chat => openai_chat::text_message_json(role, text),
            WireFormat::Anthropic => anthropic::text_message_json(role, text),
            WireFormat::Responses => openai_responses::text_message_json(role, text),
            WireFormat::Gemini => gemini::text_message_json(role, text),
            WireFormat::Bedrock => bedrock::text_message_json(role, text),
        }
    }

    /// A text block of this format carrying `text`, as compact JSON (for merging into a
    /// message of the assistant's turn when `assistant`, else the user's).
    pub fn text_block_json(self, assistant: bool, text: &str) -> String {
        match self {
            WireFormat::Chat => openai_chat::text_block_json(text),
            WireFormat::Anthropic => anthropic::text_block_json(text),
            WireFormat::Responses => openai_responses::text_block_json(assistant, text),
            WireFormat::Gemini => gemini::text_block_json(text),
            WireFormat::Bedrock => bedrock::text_block_json(text),
        }
    }
}
