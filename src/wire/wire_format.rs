//! The formats a history is written in: what a request of each API accepts. The reader's
//! [`Format`] says what one message looked like (including "nothing specific" and spellings);
//! a [`WireFormat`] is what the compaction writes new messages in. What each format writes is
//! its own file's `DIALECT` (`WireFormat::dialect`).

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
}
