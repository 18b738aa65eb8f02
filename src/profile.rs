//! One place per token family's pricing rules: the constants the estimator and the overhead function
//! use. Every constant here is measured on the recorded requests in `shared/data` (see
//! `tools/calibrate_profiles.py`, which refits them) unless a comment cites a provider doc.

use crate::model_info::{Family, ModelInfo, Platform};

const VERTEX_TOOL_SCHEMA_SCALE: f64 = 0.2;
const VERTEX_PER_TOOL_CALL: f64 = 0.0;
const VERTEX_PER_TOOL_RESULT: f64 = 0.0;
/// Gemini 3 thought signatures sent back to the Gemini Developer API are billed as input
/// (https://ai.google.dev/gemini-api/docs/thinking says signatures add input tokens): 0.197
/// token per base64 character, the median of `(usage - estimate without them) / signature
/// characters` over the 46 gemini-3 requests of ../shared/data/pydantic-ai (provider `google`)
/// with field-2 signatures and no media (quartiles 0.187 / 0.209). Field-1 signatures are not
/// billed: Vertex AI's (25 requests: -0.012) and Gemini 2.5's (12 requests: 0.011).
const GEMINI_SIGNATURE_PER_CHAR: f64 = 0.197;

/// Pricing constants of one token family, in that family's tokens.
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
    /// Extra tokens per call when one message carries several (OpenAI wraps them in one
    /// `multi_tool_use.parallel` call whose JSON names every recipient).
    pub per_parallel_call: f64,
    /// Fixed tokens per tool result beyond its content (call id, wrapping).
    pub per_tool_result: f64,
    /// Tokens of tool-call arguments per raw token: 1.15 where they travel as JSON inside a
    /// JSON string (every quote escaped: measured on the 1,048 tool-call messages of
    /// shared/data), 1.0 where the model sees them raw (OpenAI).
    pub arguments_scale: f64,
    /// Share of a tool-call id's tokens that is billed: Gemini matches calls by name and
    /// order, its `id` never reaches the model.
    pub id_scale: f64,
    /// Hidden tokens added once when tool definitions are present (tool-use system prompt).
    pub tools_base: f64,
    /// Fixed tokens per tool definition beyond its serialized schema.
    pub per_tool_def: f64,
    /// Tokens of the serialized tool schemas per o200k-equivalent token of their JSON.
    pub tool_schema_scale: f64,
    /// Tokens billed per byte of encrypted reasoning sent back (OpenAI `encrypted_content`,
    /// Anthropic `redacted_thinking` data, thinking signatures).
    pub encrypted_per_byte: f64,
    /// Tokens billed per base64 character of a Gemini thought signature that opens with
    /// protobuf field 2 (`ThoughtSignatures::field2_chars`: the Gemini API's Gemini 3
    /// signatures); signatures of other shapes are not billed.
    pub signature_per_char: f64,
}

/// The generic profile: OpenAI-like chat templates, o200k-like density. Families without a
/// public tokenizer start from it and override what the recorded usage shows.
const GENERIC: Profile = Profile {
    text_scale: 1.0,
    per_message: 5.0,
    per_name: 1.0,
    per_request: 3.0,
    per_tool_call: 17.0,
    per_parallel_call: 0.0,
    per_tool_result: 8.0,
    arguments_scale: 1.15,
    id_scale: 1.0,
    tools_base: 30.0,
    per_tool_def: 8.0,
    tool_schema_scale: 0.8,
    encrypted_per_byte: 0.0,
    signature_per_char: 0.0,
};

/// OpenAI cookbook "How to count tokens with tiktoken": 3 tokens per message plus the role's token, +1 per name, +3 reply
/// priming. Tool calls as OpenAI bills them (exact.rs, derived on the cassettes): ids are
/// not billed, a call is ` to=functions.NAME` + the raw arguments + an end marker (4
/// tokens beyond the name), a result is authored by `functions.NAME` instead of `tool`
/// (~3 tokens: the called name is in another message). Pricing the JSON envelope instead
/// put the 315 call and result messages of shared/data at 2.86x their billed count. The
/// tool block of every OpenAI model is priced by its exact rendering (tool_render; o200k
/// when the name says no encoding); the tool constants below only serve tool shapes that
/// rendering does not know.
const OPENAI: Profile = Profile {
    text_scale: 1.0,
    per_message: 4.0,
    per_name: 1.0,
    per_request: 3.0,
    per_tool_call: 4.0,
    // Fitted on the 23 recorded messages with 2+ calls (count_each is exact on them):
    // `{"recipient_name": "functions.NAME", "parameters": ...}, ` per call.
    per_parallel_call: 5.5,
    per_tool_result: 3.0,
    arguments_scale: 1.0,
    id_scale: 0.0,
    tools_base: 16.0,
    per_tool_def: 0.0,
    tool_schema_scale: 0.84,
    encrypted_per_byte: 0.0,
    signature_per_char: 0.0,
};

/// Tool use: Anthropic documents the hidden tool-use system prompt per model and
/// tool_choice (https://docs.claude.com/en/docs/agents-and-tools/tool-use/overview,
/// "Pricing": 346 tokens for `auto`/`none`, 313 for `any`/`tool` on Claude 4.x and
/// Sonnet 3.7; Claude 3 Haiku 264/340, Claude 3 Opus 530/281). The tool definitions
/// themselves are rendered more verbosely than their JSON: fitted on the 128 requests
/// with function tools (anthropic, bedrock, openrouter; hosted tools apart), the block
/// costs ~155 tokens more than the documented prompt plus one token per o200k token of
/// the schemas (`tools/fit_family_overheads.py`).
const ANTHROPIC: Profile = Profile {
    text_scale: 1.05,
    per_message: 3.0,
    per_name: 0.0,
    per_request: 3.0,
    per_tool_call: 17.0,
    per_parallel_call: 0.0,
    per_tool_result: 8.0,
    arguments_scale: 1.15,
    id_scale: 1.0,
    tools_base: 346.0 + 155.0,
    per_tool_def: 0.0,
    tool_schema_scale: 0.95,
    encrypted_per_byte: 0.0,
    signature_per_char: 0.0,
};

/// Gemini bills declarations compactly: fitted on 162 requests with tools (google,
/// google-vertex, openrouter), no fixed tool prompt and ~0.7 token per o200k token.
/// Function calls and responses are rendered without the JSON envelope of OpenAI's
/// format and without their ids (fitted on the same requests). The usage counts content
/// only: no per-message role tokens (fitted: 57 plain requests were 2 over with one).
const GEMINI: Profile = Profile {
    // Only what is counted in o200k tokens (text tokenized by `with_encoding`, opaque
    // parts): the sampled text estimate uses Gemini's own weights
    // (`TextWeights::GEMINI`, chosen by `Estimator`).
    text_scale: 1.2,
    per_message: 0.0,
    per_name: 0.0,
    per_request: 0.0,
    per_tool_call: 8.0,
    per_parallel_call: 0.0,
    per_tool_result: 4.0,
    arguments_scale: 1.15,
    id_scale: 0.0,
    tools_base: 0.0,
    per_tool_def: 0.0,
    tool_schema_scale: 0.6,
    encrypted_per_byte: 0.0,
    signature_per_char: GEMINI_SIGNATURE_PER_CHAR,
};

/// Llama 3.1+ chat templates open with a system header carrying "Cutting Knowledge
/// Date" and "Today Date" lines (Meta's prompt-format docs,
/// https://www.llama.com/docs/model-cards-and-prompt-formats/llama3_1/): fitted +27 on
/// 7 plain requests; the tool-calling prompt of the served templates, fitted on 9
/// requests with tools (groq, bedrock): ~650 tokens.
const LLAMA: Profile = Profile {
    per_request: 30.0,
    tools_base: 650.0,
    per_tool_def: 0.0,
    tool_schema_scale: 1.0,
    ..GENERIC
};

/// Qwen's chat template wraps tools in a fixed "# Tools" instruction block (Qwen2.5 /
/// Qwen3 tokenizer_config.json chat_template); fitted on 2 requests with tools: ~175.
const QWEN: Profile = Profile {
    tools_base: 175.0,
    per_tool_def: 0.0,
    tool_schema_scale: 1.0,
    ..GENERIC
};

/// Fitted: 12 plain requests +4, 18 with tools: ~10 beyond one token per schema token.
const MISTRAL: Profile = Profile {
    per_request: 7.0,
    tools_base: 10.0,
    per_tool_def: 0.0,
    tool_schema_scale: 1.0,
    ..GENERIC
};

/// Fitted: 13 plain requests -3 (the default is right), 9 with tools: ~265.
const DEEPSEEK: Profile = Profile {
    tools_base: 265.0,
    per_tool_def: 0.0,
    tool_schema_scale: 1.0,
    ..GENERIC
};

/// Fitted on Bedrock Converse: 9 plain requests 13 over with the generic envelope, 9
/// with tools: ~840 (Nova's tool-use system prompt).
const NOVA: Profile = Profile {
    per_message: 2.0,
    per_request: 0.0,
    tools_base: 840.0,
    per_tool_def: 0.0,
    tool_schema_scale: 1.0,
    ..GENERIC
};

/// Command R7B prepends its default preamble (fitted +487 on 3 plain requests) and a
/// tool instruction block (+910 more on 3 requests with tools).
const COHERE: Profile = Profile {
    per_request: 490.0,
    tools_base: 910.0,
    per_tool_def: 0.0,
    tool_schema_scale: 1.0,
    ..GENERIC
};

/// Fitted: 11 plain GLM requests +1; 2 with tools: ~66.
const GLM: Profile = Profile {
    tools_base: 66.0,
    per_tool_def: 0.0,
    tool_schema_scale: 1.0,
    ..GENERIC
};

/// Fitted: 2 plain MiniMax requests +21.
const MINIMAX: Profile = Profile {
    per_request: 24.0,
    ..GENERIC
};

/// The pricing profile of a token family.
///
/// "Fitted" below means: the median of `usage - estimate` over the recorded requests of that
/// family in shared/data (pydantic-ai + crewai `requests.jsonl`, every provider serving the
/// family, requests with images left out), plain requests for `per_request`, requests with
/// tools for `tools_base` with the schemas priced at about one token per o200k token of their
/// JSON (`tools/fit_family_overheads.py` prints these medians).
pub fn profile(family: Family) -> Profile {
    match family {
        Family::OpenAI => OPENAI,
        Family::Anthropic => ANTHROPIC,
        Family::Gemini | Family::Gemma => GEMINI,
        Family::Llama => LLAMA,
        Family::Qwen => QWEN,
        Family::Mistral => MISTRAL,
        Family::DeepSeek => DEEPSEEK,
        Family::Nova => NOVA,
        Family::Cohere => COHERE,
        Family::Glm => GLM,
        Family::MiniMax => MINIMAX,
        Family::Kimi | Family::Grok | Family::Unknown => GENERIC,
    }
}

/// A Gemini profile as Vertex AI bills it: function declarations and function turns lower
/// than the Gemini API the Gemini constants were fitted on (identical requests cost 14 tokens
/// fewer per declaration on Vertex: two pairs in ../shared/data/pydantic-ai; a function call +
/// response round ~20 fewer: the 17 Vertex gemini-3 requests with one or two rounds, 36-43
/// under per round with one declaration, 59 with two rounds; fitted on the 21 Vertex requests
/// with function declarations, gemini-2.0 / 2.5 / 3 flash), and thought signatures not billed.
pub fn on_vertex_ai(mut p: Profile) -> Profile {
    p.tool_schema_scale = VERTEX_TOOL_SCHEMA_SCALE;
    p.per_tool_call = VERTEX_PER_TOOL_CALL;
    p.per_tool_result = VERTEX_PER_TOOL_RESULT;
    p.signature_per_char = 0.0;
    p
}

/// The pricing profile of one resolved model: its family's profile with what a model
/// generation's chat template adds (documented, or fitted across providers serving it).
/// `family` is the family that prices the request (the model's, else the provider's default).
pub fn profile_for(family: Family, info: &ModelInfo) -> Profile {
    let mut p = profile(family);
    if family != info.family {
        // An unknown name priced by the provider's default family: nothing more is known.
        return p;
    }
    let base = info.base.as_str();
    match family {
        // Open-weight DeepSeek checkpoints (R1, V3, V2 and the R1 distills) served by third
        // parties run their tokenizer_config.json `chat_template` (huggingface.co/deepseek-ai/
        // DeepSeek-R1, DeepSeek-V3): `<｜begin▁of▁sentence｜>` + system, `<｜User｜>` + text
        // per user turn, `<｜Assistant｜>` + text + `<｜end▁of▁sentence｜>` per reply and a
        // closing `<｜Assistant｜>`: one marker per message, two per request (the generic 5 and
        // 3 put the 6 plain open-weight DeepSeek requests of ../shared/data, huggingface,
        // openrouter and groq, 5 tokens over each). DeepSeek's own API names (`deepseek-chat`,
        // `deepseek-reasoner`, `deepseek-v4-*`) add a server-side prompt: generic constants.
        Family::DeepSeek
            if ["deepseek-r1", "deepseek-v3", "deepseek-v2"]
                .iter()
                .any(|p| base.starts_with(p)) =>
        {
            p.per_message = 1.0;
            p.per_request = 2.0;
        }
        // GLM-5 templates add ~6 tokens more than GLM-4.x (fitted: the 4 plain GLM-5.x
        // requests of ../shared/data/pydantic-ai, crusoe and zai, are each 6 under with the
        // GLM-4 constants; the 5 plain GLM-4.6 / 4.7 requests are 1 over).
        Family::Glm if base.starts_with("glm-5") => p.per_request += 6.0,
        // A name that says Vertex AI (a bare Gemini 3 name is settled from its history's
        // thought signatures instead: `Estimator::settle_platform`).
        Family::Gemini | Family::Gemma if info.platform == Some(Platform::VertexAi) => {
            p = on_vertex_ai(p);
        }
        _ => {}
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::model_info::model_info;

    fn of(model: &str) -> Profile {
        let info = model_info(model);
        profile_for(info.family, &info)
    }

    #[test]
    fn open_weight_deepseek_is_priced_by_its_chat_template_markers() {
        for m in [
            "deepseek-ai/DeepSeek-R1",
            "huggingface:deepseek-ai/DeepSeek-V3-0324",
            "deepseek-r1-distill-llama-70b",
        ] {
            let p = of(m);
            assert_eq!((p.per_message, p.per_request), (1.0, 2.0), "{m}");
        }
        // DeepSeek's own API names keep the generic constants (its server adds a prompt).
        assert_eq!(of("deepseek-reasoner"), profile(Family::DeepSeek));
        assert_eq!(of("deepseek-chat"), profile(Family::DeepSeek));
    }

    #[test]
    fn glm_5_adds_to_the_glm_4_request_overhead() {
        let glm4 = of("zai/glm-4.7");
        assert_eq!(glm4, profile(Family::Glm));
        assert_eq!(of("zai/GLM-5.2").per_request, glm4.per_request + 6.0);
    }

    #[test]
    fn vertex_ai_prices_gemini_function_declarations_and_turns_lower() {
        let api = of("gemini/gemini-3-flash-preview");
        let bare = of("gemini-3-flash-preview");
        let vertex = of("vertex_ai/gemini-3-flash-preview");
        assert_eq!(api, bare);
        assert!(vertex.tool_schema_scale < api.tool_schema_scale);
        assert!(vertex.per_tool_call < api.per_tool_call);
        assert!(vertex.per_tool_result < api.per_tool_result);
        assert_eq!(vertex.text_scale, api.text_scale);
        // An unknown name priced by a provider's default family gets that family's profile.
        let info = model_info("my-model");
        assert_eq!(profile_for(Family::Gemini, &info), profile(Family::Gemini));
    }
}
