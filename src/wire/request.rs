//! A request body as the user passes it to the provider's SDK (`client.chat.completions.create(
//! **body)`, `client.responses.create(**body)`, `client.messages.create(**body)`, Gemini's
//! `generate_content` request, Bedrock's `converse`): which API it is written for, where its
//! history, system prompt, tools and structured-output schema are, and the settings that cost
//! prompt tokens without being text (thinking, tool_choice, MCP servers, server tools).
//!
//! Each format reads its own body (`openai_chat::body`, `openai_responses::body`,
//! `anthropic::body`, `gemini::body`, `bedrock::body`); this file tells them apart and holds
//! what they share. The values stay the caller's (`V`): the bindings hand them back to Python
//! unchanged and the estimator reads them with the history and extras readers.

use std::borrow::Cow;

use super::fields::{invalid, opt_str};
use super::input::{Input, Key, ReadResult, Shape, Src};
use super::{anthropic, bedrock, gemini, openai_chat, openai_responses};
use crate::provider::Provider;

/// The API a body is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    OpenAIChat,
    OpenAIResponses,
    Anthropic,
    Gemini,
    Bedrock,
}

impl Api {
    /// Its name, as the bindings and the CLI say it.
    pub fn name(self) -> &'static str {
        match self {
            Api::OpenAIChat => "openai-chat",
            Api::OpenAIResponses => "openai-responses",
            Api::Anthropic => "anthropic",
            Api::Gemini => "gemini",
            Api::Bedrock => "bedrock",
        }
    }

    /// The `provider=` (wire format) a history of this API is estimated with; the model named
    /// in the body decides the token family.
    pub fn provider(self) -> Provider {
        match self {
            Api::OpenAIChat | Api::OpenAIResponses => Provider::OpenAI,
            Api::Anthropic => Provider::Anthropic,
            Api::Gemini => Provider::Gemini,
            // Converse blocks are read generically and priced by the model.
            Api::Bedrock => Provider::OpenAICompatible,
        }
    }
}

/// Extended thinking / reasoning as the body asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Thinking {
    /// Not set (or disabled).
    #[default]
    Off,
    /// Anthropic `{"type": "enabled", "budget_tokens"}`, Gemini `thinkingConfig` with a
    /// budget, OpenRouter `reasoning.max_tokens`.
    Enabled { budget: Option<u64> },
    /// Anthropic `{"type": "adaptive"}`: the model decides.
    Adaptive,
}

/// What `tool_choice` forces.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolChoice {
    /// Not set: the API's default (auto).
    #[default]
    Unset,
    Auto,
    None,
    /// Any tool must be called (Anthropic `any`, OpenAI `required`, Gemini mode `ANY`).
    Any,
    /// This tool must be called.
    Tool(String),
}

/// An MCP server the provider connects to (Anthropic `mcp_servers`): its tools are fetched by
/// the server at request time, unknown offline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    pub name: String,
    pub url: String,
}

/// The settings of a body that are not text but may cost prompt tokens.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Settings {
    pub thinking: Thinking,
    /// OpenAI `reasoning_effort` / Responses `reasoning.effort`, Gemini `thinkingLevel`.
    pub reasoning_effort: Option<String>,
    pub tool_choice: ToolChoice,
    pub mcp_servers: Vec<McpServer>,
    /// Provider-hosted tools that are not in `tools` as definitions (Gemini `googleSearch`,
    /// `codeExecution`, `urlContext`): their keys.
    pub server_tools: Vec<String>,
    /// Cache breakpoints (`cache_control`) on the body, its system blocks and its tools.
    pub cache_breakpoints: u32,
}

/// Where a body keeps its history.
#[derive(Debug, Clone)]
pub enum History<'a, V> {
    /// A list of messages (or Responses input items, Gemini contents).
    List(V),
    /// The Responses API's `input` given as one string: one user message.
    Text(Cow<'a, str>),
}

/// One request body, read.
#[derive(Debug, Clone)]
pub struct Body<'a, V> {
    pub api: Api,
    pub model: Option<Cow<'a, str>>,
    pub history: History<'a, V>,
    /// The top-level system prompt: a string or a list of text blocks (Gemini's
    /// `systemInstruction.parts`).
    pub system: Option<V>,
    /// Tool definitions, one per tool (Gemini's `functionDeclarations` and Bedrock's
    /// `toolConfig.tools` flattened).
    pub tools: Vec<V>,
    /// The structured-output option as sent (`response_format`, `text`, `output_format`,
    /// `generationConfig`), read by `response_format::read_response_format`.
    pub response_format: Option<V>,
    pub settings: Settings,
}

impl<'a, V> Body<'a, V> {
    pub(crate) fn new(api: Api, history: History<'a, V>) -> Self {
        Body {
            api,
            model: None,
            history,
            system: None,
            tools: Vec::new(),
            response_format: None,
            settings: Settings::default(),
        }
    }
}

/// Which API `body` is written for, from its keys: `contents` is Gemini; `input` without
/// `messages` the Responses API; `messages` with `toolConfig` / `inferenceConfig` / `modelId`
/// Bedrock Converse; `messages` with a top-level `system`, `anthropic_version`, `mcp_servers`
/// or `output_format` Anthropic. Otherwise `forced` (the caller's `provider=`) settles it, and
/// without one a `thinking` object, a `claude` model, tools with `input_schema` or Anthropic
/// blocks in the history say Anthropic; other `messages` bodies are OpenAI chat.
pub fn detect<'a, V: Input<'a>>(body: &V, forced: Option<Provider>) -> ReadResult<Api, V::Error> {
    if !matches!(body.shape(), Shape::Map | Shape::Object) {
        return Err(invalid(
            "",
            format!(
                "expected a request body (an object with messages, input or contents), got {}",
                body.type_name()
            ),
        ));
    }
    if body.get(Key::contents).src()?.is_some() {
        return Ok(Api::Gemini);
    }
    let messages = body.get(Key::messages).src()?;
    if messages.is_none() {
        if body.get(Key::input).src()?.is_some() {
            return Ok(Api::OpenAIResponses);
        }
        return Err(invalid(
            "messages",
            "expected a request body with messages, input or contents",
        ));
    }
    for k in [Key::toolConfig, Key::inferenceConfig, Key::modelId] {
        if body.get(k).src()?.is_some() {
            return Ok(Api::Bedrock);
        }
    }
    // Fields only the Messages API has say Anthropic whatever the caller's provider.
    for k in [
        Key::system,
        Key::anthropic_version,
        Key::mcp_servers,
        Key::output_format,
    ] {
        if body.get(k).src()?.is_some() {
            return Ok(Api::Anthropic);
        }
    }
    match forced {
        Some(Provider::Anthropic) => return Ok(Api::Anthropic),
        Some(Provider::OpenAI | Provider::OpenAICompatible | Provider::Ollama) => {
            return Ok(Api::OpenAIChat)
        }
        _ => {}
    }
    // z.ai and DeepSeek chat bodies take a `thinking` object too: only unforced is it a hint.
    if body.get(Key::thinking).src()?.is_some() {
        return Ok(Api::Anthropic);
    }
    if let Some(m) = opt_str(body, Key::model, "model")? {
        if m.to_ascii_lowercase().contains("claude") {
            return Ok(Api::Anthropic);
        }
    }
    if let Some(tools) = body.get(Key::tools).src()? {
        for t in tools.items().src()?.unwrap_or_default() {
            if t.get(Key::input_schema).src()?.is_some() {
                return Ok(Api::Anthropic);
            }
        }
    }
    if let Some(ms) = messages {
        for m in ms.items().src()?.unwrap_or_default().iter().take(64) {
            // Reading a message that fails is the history reader's error to report.
            if let Ok(msg) = super::read_message(m) {
                if msg.wire == super::Format::Anthropic {
                    return Ok(Api::Anthropic);
                }
            }
        }
    }
    Ok(Api::OpenAIChat)
}

/// Read a request body (see the module docs). `forced` is the caller's `provider=`. Errors
/// name the body's field (`messages`, `tools[2]`, `thinking.budget_tokens`).
pub fn read_request<'a, V: Input<'a>>(
    body: &V,
    forced: Option<Provider>,
) -> ReadResult<Body<'a, V>, V::Error> {
    let api = detect(body, forced)?;
    let mut b = match api {
        Api::OpenAIChat => openai_chat::body(body)?,
        Api::OpenAIResponses => openai_responses::body(body)?,
        Api::Anthropic => anthropic::body(body)?,
        Api::Gemini => gemini::body(body)?,
        Api::Bedrock => bedrock::body(body)?,
    };
    if b.model.is_none() {
        b.model = match api {
            Api::Bedrock => opt_str(body, Key::modelId, "modelId")?,
            _ => opt_str(body, Key::model, "model")?,
        };
    }
    Ok(b)
}

/// The history list at `key`, an error naming it when it is not a list.
pub(crate) fn history_list<'a, V: Input<'a>>(
    body: &V,
    key: Key,
) -> ReadResult<History<'a, V>, V::Error> {
    match body.get(key).src()? {
        Some(v) if v.shape() == Shape::List => Ok(History::List(v)),
        Some(v) => Err(invalid(
            key.as_str(),
            format!("{} must be a list, got {}", key.as_str(), v.type_name()),
        )),
        None => Err(invalid(key.as_str(), "missing")),
    }
}

/// The items of a list field (`tools`), an error naming it when it is not a list.
pub(crate) fn list_items<'a, V: Input<'a>>(
    v: Option<V>,
    path: &str,
) -> ReadResult<Vec<V>, V::Error> {
    match v {
        None => Ok(Vec::new()),
        Some(v) => v.items().src()?.ok_or_else(|| {
            invalid(
                path,
                format!("{path} must be a list, got {}", v.type_name()),
            )
        }),
    }
}

/// An integer field (a budget), `None` when absent.
pub(crate) fn opt_u64<'a, V: Input<'a>>(
    obj: &V,
    key: Key,
    path: &str,
) -> ReadResult<Option<u64>, V::Error> {
    let Some(v) = obj.get(key).src()? else {
        return Ok(None);
    };
    if v.shape() != Shape::Number {
        return Err(invalid(
            format!("{path}.{}", key.as_str()),
            format!("expected an integer, got {}", v.type_name()),
        ));
    }
    // Numbers carry no accessor of their own: their JSON text is the number.
    let text = v.json_text().src()?;
    Ok(text
        .parse::<f64>()
        .ok()
        .filter(|n| *n >= 0.0)
        .map(|n| n as u64))
}

/// `tool_choice` in OpenAI's spelling (`"auto"`, `"none"`, `"required"`, `{"type":
/// "function", "function": {"name"}}`, Responses `{"type": "function", "name"}`,
/// `{"type": "allowed_tools", "mode"}`) or Anthropic's (`{"type": "auto" | "any" | "tool" |
/// "none", "name"}`).
pub(crate) fn tool_choice<'a, V: Input<'a>>(
    body: &V,
    key: Key,
) -> ReadResult<ToolChoice, V::Error> {
    let Some(tc) = body.get(key).src()? else {
        return Ok(ToolChoice::Unset);
    };
    let path = key.as_str();
    let word = match tc.str().src()? {
        Some(s) => s,
        None => match opt_str(&tc, Key::kind, format_args!("{path}.type"))? {
            Some(t) if t == "allowed_tools" => {
                opt_str(&tc, Key::mode, format_args!("{path}.mode"))?.unwrap_or(Cow::Borrowed(""))
            }
            Some(t) => t,
            None => Cow::Borrowed(""),
        },
    };
    Ok(match word.as_ref() {
        "auto" => ToolChoice::Auto,
        "none" => ToolChoice::None,
        "any" | "required" => ToolChoice::Any,
        "tool" | "function" | "custom" => {
            let name = match tc.get(Key::function).src()? {
                Some(f) => opt_str(&f, Key::name, format_args!("{path}.function.name"))?,
                None => opt_str(&tc, Key::name, format_args!("{path}.name"))?,
            };
            ToolChoice::Tool(name.map(|n| n.into_owned()).unwrap_or_default())
        }
        _ => ToolChoice::Unset,
    })
}

/// Whether a value carries `cache_control` (a system block, a tool definition, the body).
pub(crate) fn has_cache_control<'a, V: Input<'a>>(v: &V) -> ReadResult<bool, V::Error> {
    if !matches!(v.shape(), Shape::Map | Shape::Object) {
        return Ok(false);
    }
    Ok(v.get(Key::cache_control).src()?.is_some())
}

/// Cache breakpoints on the body itself, the items of `system` when it is a list, and `tools`.
pub(crate) fn cache_breakpoints<'a, V: Input<'a>>(
    body: &V,
    system: Option<&V>,
    tools: &[V],
) -> ReadResult<u32, V::Error> {
    let mut n = u32::from(has_cache_control(body)?);
    if let Some(s) = system {
        for b in s.items().src()?.unwrap_or_default() {
            n += u32::from(has_cache_control(&b)?);
        }
    }
    for t in tools {
        n += u32::from(has_cache_control(t)?);
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: &serde_json::Value) -> Body<'_, &serde_json::Value> {
        read_request(&v, None).unwrap()
    }

    #[test]
    fn each_api_is_told_by_its_keys() {
        let chat = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]});
        let resp = json!({"model": "gpt-5", "input": "hi", "instructions": "be brief"});
        let anth = json!({"model": "claude-sonnet-4-5", "max_tokens": 9, "messages": []});
        let gem = json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]});
        let bed = json!({"modelId": "anthropic.claude-3", "messages": [],
                         "toolConfig": {"tools": []}});
        assert_eq!(read(&chat).api, Api::OpenAIChat);
        assert_eq!(read(&resp).api, Api::OpenAIResponses);
        assert_eq!(read(&anth).api, Api::Anthropic);
        assert_eq!(read(&gem).api, Api::Gemini);
        assert_eq!(read(&bed).api, Api::Bedrock);
        assert_eq!(read(&bed).model.as_deref(), Some("anthropic.claude-3"));
        // The caller's provider settles a bare messages body.
        let bare = json!({"messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(
            read_request(&&bare, Some(Provider::Anthropic)).unwrap().api,
            Api::Anthropic
        );
        assert!(matches!(read(&resp).history, History::Text(ref t) if t == "hi"));
    }

    #[test]
    fn anthropic_settings_are_read_whole() {
        let b = json!({
            "model": "claude-sonnet-4-5",
            "system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": "hi"}],
            "thinking": {"type": "enabled", "budget_tokens": 2048},
            "tool_choice": {"type": "tool", "name": "get_weather"},
            "tools": [{"name": "get_weather", "input_schema": {"type": "object"}},
                      {"type": "web_search_20250305", "name": "web_search"}],
            "mcp_servers": [{"type": "url", "url": "https://mcp.example.com/sse", "name": "ex"}],
        });
        let r = read(&b);
        assert_eq!(r.api, Api::Anthropic);
        assert_eq!(r.tools.len(), 2);
        assert_eq!(
            r.settings.thinking,
            Thinking::Enabled { budget: Some(2048) }
        );
        assert_eq!(
            r.settings.tool_choice,
            ToolChoice::Tool("get_weather".into())
        );
        assert_eq!(
            r.settings.mcp_servers,
            vec![McpServer {
                name: "ex".into(),
                url: "https://mcp.example.com/sse".into()
            }]
        );
        assert_eq!(r.settings.cache_breakpoints, 1);
    }

    #[test]
    fn gemini_tools_and_config_are_flattened() {
        let b = json!({
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "systemInstruction": {"parts": [{"text": "be brief"}]},
            "tools": [{"functionDeclarations": [{"name": "a"}, {"name": "b"}]},
                      {"googleSearch": {}}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
            "generationConfig": {"thinkingConfig": {"thinkingBudget": 512},
                                 "responseJsonSchema": {"type": "object"}},
        });
        let r = read(&b);
        assert_eq!(r.tools.len(), 2);
        assert_eq!(r.settings.server_tools, vec!["googleSearch".to_string()]);
        assert_eq!(r.settings.tool_choice, ToolChoice::Any);
        assert_eq!(r.settings.thinking, Thinking::Enabled { budget: Some(512) });
        assert!(r.system.unwrap().is_array());
        assert!(r.response_format.is_some());
    }

    #[test]
    fn bad_fields_are_named() {
        let b = json!({"messages": "hi"});
        match read_request(&&b, None) {
            Err(super::super::ReadError::Invalid { field, .. }) => assert_eq!(field, "messages"),
            other => panic!("{other:?}"),
        }
        let b = json!({"model": "claude-x", "messages": [], "thinking": {"type": "enabled", "budget_tokens": "many"}});
        match read_request(&&b, None) {
            Err(super::super::ReadError::Invalid { field, .. }) => {
                assert_eq!(field, "thinking.budget_tokens")
            }
            other => panic!("{other:?}"),
        }
        assert!(read_request(&&json!([1]), None).is_err());
    }
}
