//! One place per provider's pricing rules: the constants the estimator and the overhead function
//! use. Every constant here is measured on the recorded requests in `shared/data` (see
//! `tools/calibrate_profiles.py`, which refits them) unless a comment cites a provider doc.

/// The provider whose billing an estimate imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// OpenAI chat completions / Responses.
    OpenAI,
    /// Anthropic Messages API.
    Anthropic,
    /// Google Gemini (native or through an OpenAI-compatible router).
    Gemini,
    /// Ollama's `/api/chat` (local models; tokenizer unknown to us).
    Ollama,
    /// Any other OpenAI-compatible server (vLLM, llama.cpp, OpenRouter to unknown models...).
    OpenAICompatible,
}

impl Provider {
    /// The accepted spellings, in the order error messages list them.
    pub const NAMES: [&'static str; 5] = [
        "openai",
        "anthropic",
        "gemini",
        "ollama",
        "openai-compatible",
    ];

    /// Parse a provider name; the error lists the valid ones.
    pub fn parse(name: &str) -> Result<Provider, String> {
        match name {
            "openai" => Ok(Provider::OpenAI),
            "anthropic" => Ok(Provider::Anthropic),
            "gemini" => Ok(Provider::Gemini),
            "ollama" => Ok(Provider::Ollama),
            "openai-compatible" => Ok(Provider::OpenAICompatible),
            _ => Err(format!(
                "unknown provider {name:?}; valid providers: {}",
                Provider::NAMES.join(", ")
            )),
        }
    }

    /// The spelling `parse` accepts.
    pub fn name(self) -> &'static str {
        match self {
            Provider::OpenAI => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
            Provider::Ollama => "ollama",
            Provider::OpenAICompatible => "openai-compatible",
        }
    }
}

/// Pricing constants of one provider, in that provider's tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Profile {
    /// Provider tokens per o200k-equivalent token of text (tokenizer density).
    pub text_scale: f64,
    /// Fixed tokens per message (role, role markers, separators).
    pub per_message: f64,
    /// Extra tokens when a message carries a `name`.
    pub per_name: f64,
    /// Fixed tokens per request (reply priming).
    pub per_request: f64,
    /// Fixed tokens per tool call beyond its id, name and arguments: the JSON syntax around
    /// them, 15 o200k tokens for `{"id":"","type":"function","function":{"name":"",
    /// "arguments":""}}` plus the separators of the list.
    pub per_tool_call: f64,
    /// Fixed tokens per tool result beyond its content (call id, wrapping).
    pub per_tool_result: f64,
    /// Hidden tokens added once when tool definitions are present (tool-use system prompt).
    pub tools_base: f64,
    /// Fixed tokens per tool definition beyond its serialized schema.
    pub per_tool_def: f64,
    /// Tokens of the serialized tool schemas per o200k-equivalent token of their JSON.
    pub tool_schema_scale: f64,
    /// Tokens billed per byte of encrypted reasoning sent back (OpenAI `encrypted_content`,
    /// Anthropic `redacted_thinking` data, thinking signatures).
    pub encrypted_per_byte: f64,
}

/// The pricing profile of a provider.
pub fn profile(provider: Provider) -> Profile {
    match provider {
        // OpenAI cookbook "How to count tokens with tiktoken": 3 tokens per message plus the role's token, +1 per name, +3 reply
        // priming. The tool-call
        // envelope and tool-definition constants are fitted on the cassettes.
        Provider::OpenAI => Profile {
            text_scale: 1.0,
            per_message: 4.0,
            per_name: 1.0,
            per_request: 3.0,
            per_tool_call: 17.0,
            per_tool_result: 8.0,
            tools_base: 16.0,
            per_tool_def: 0.0,
            tool_schema_scale: 0.84,
            encrypted_per_byte: 0.0,
        },
        Provider::Anthropic => Profile {
            text_scale: 1.05,
            per_message: 3.0,
            per_name: 0.0,
            per_request: 3.0,
            per_tool_call: 17.0,
            per_tool_result: 8.0,
            tools_base: 420.0,
            per_tool_def: 10.0,
            tool_schema_scale: 0.6,
            encrypted_per_byte: 0.0,
        },
        Provider::Gemini => Profile {
            text_scale: 1.2,
            per_message: 1.0,
            per_name: 0.0,
            per_request: 0.0,
            per_tool_call: 17.0,
            per_tool_result: 8.0,
            tools_base: 10.0,
            per_tool_def: 8.0,
            tool_schema_scale: 0.6,
            encrypted_per_byte: 0.0,
        },
        Provider::Ollama | Provider::OpenAICompatible => Profile {
            text_scale: 1.0,
            per_message: 5.0,
            per_name: 1.0,
            per_request: 3.0,
            per_tool_call: 17.0,
            per_tool_result: 8.0,
            tools_base: 30.0,
            per_tool_def: 8.0,
            tool_schema_scale: 0.8,
            encrypted_per_byte: 0.0,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_round_trips() {
        for n in Provider::NAMES {
            assert_eq!(Provider::parse(n).unwrap().name(), n);
        }
        let e = Provider::parse("openia").unwrap_err();
        assert!(e.contains("openai, anthropic"), "{e}");
    }
}
