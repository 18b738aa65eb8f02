//! What a request body holds once read, whatever its API: the API, where its history, system
//! prompt, tools and structured-output schema are, and the settings that cost prompt tokens
//! without being text (thinking, tool_choice, MCP servers, cache breakpoints); and the field
//! readers every format's body reader shares. Below the formats; which format reads a body is
//! `request`'s dispatch, above them.

use std::borrow::Cow;

use super::fields::{invalid, opt_str};
use super::input::{Input, Key, ReadResult, Shape, Src};
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
    /// Gemini `contents` given as the Python SDK also takes them (a string, one part, a list
    /// mixing contents and parts), grouped into turns as the SDK groups them before sending.
    Turns(Vec<Turn<V>>),
}

/// One turn of a [`History::Turns`].
#[derive(Debug, Clone)]
pub enum Turn<V> {
    /// A message (a Gemini `Content`) as given.
    Message(V),
    /// Parts the SDK sends as one `Content` of this role.
    Parts { role: &'static str, parts: Vec<V> },
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
    /// The body's field of each tool (`tools[j]`; Gemini's `tools[i].functionDeclarations[k]`
    /// and Bedrock's `toolConfig.tools[i]`, whose lists are flattened), to name the body's
    /// field of an error at `tools[j]` of `tools`.
    pub tool_fields: Vec<String>,
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
            tool_fields: Vec::new(),
            response_format: None,
            settings: Settings::default(),
        }
    }
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
