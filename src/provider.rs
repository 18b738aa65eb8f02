//! The provider names a caller passes (`provider="anthropic"`): the five spellings, and which
//! token family prices a model the name does not say.

use crate::model_info::Family;

/// The wire format a history is written in (how messages are read). What they cost is decided
/// by the model's `Family` (`model_info`), this provider's default family when the model is
/// unknown.
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

    /// The family that prices a model this provider's wire format carries when the model name
    /// says nothing (no model, or an unknown name): OpenAI's chat format defaults to OpenAI's
    /// models, Anthropic's and Gemini's to theirs, the others to the generic profile.
    pub fn default_family(self) -> Family {
        match self {
            Provider::OpenAI => Family::OpenAI,
            Provider::Anthropic => Family::Anthropic,
            Provider::Gemini => Family::Gemini,
            Provider::Ollama | Provider::OpenAICompatible => Family::Unknown,
        }
    }
}

impl Family {
    /// The provider whose image and media formulas bill this family: the three that publish
    /// theirs, and the generic vision-encoder rule for the rest.
    pub fn pricing_provider(self) -> Provider {
        match self {
            Family::OpenAI => Provider::OpenAI,
            Family::Anthropic => Provider::Anthropic,
            Family::Gemini | Family::Gemma => Provider::Gemini,
            _ => Provider::OpenAICompatible,
        }
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
