//! A request body as the user passes it to the provider's SDK (`client.chat.completions.create(
//! **body)`, `client.responses.create(**body)`, `client.messages.create(**body)`, Gemini's
//! `generate_content` request, Bedrock's `converse`): which API it is written for, where its
//! history, system prompt, tools and structured-output schema are, and the settings that cost
//! prompt tokens without being text (thinking, tool_choice, MCP servers, server tools).
//!
//! Each format reads its own body (`openai_chat::body`, `openai_responses::body`,
//! `anthropic::body`, `gemini::body`, `bedrock::body`) into a `request_body::Body`; this file
//! tells them apart. The values stay the caller's (`V`): the bindings hand them back to Python
//! unchanged and the estimator reads them with the history and extras readers.

use super::fields::{invalid, opt_str};
use super::input::{Input, Key, ReadError, ReadResult, Shape, Src};
pub use super::request_body::{
    Api, Body, History, McpServer, Settings, Thinking, ToolChoice, Turn,
};
use super::{anthropic, bedrock, gemini, openai_chat, openai_responses};
use crate::provider::Provider;

/// Which API `body` is written for, from its keys: `contents` is Gemini; `input` without
/// `messages` the Responses API; `messages` with `toolConfig` / `inferenceConfig` / `modelId`
/// Bedrock Converse; `messages` with a top-level `system`, `anthropic_version`, `mcp_servers`
/// or `output_format` Anthropic. Otherwise `forced` (the caller's `provider=`) settles it, and
/// without one a field only chat has (`response_format`, `reasoning`, `reasoning_effort`,
/// `max_completion_tokens`, ...) says OpenAI chat; a `thinking` object, a `claude` model, tools
/// with `input_schema` or Anthropic blocks in the history say Anthropic; other `messages`
/// bodies are OpenAI chat.
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
    // Fields the Messages API refuses say chat before any hint of Anthropic below: a Claude
    // model behind an OpenAI-compatible endpoint (OpenRouter, Snowflake Cortex) was read as
    // Anthropic and its `response_format` or `reasoning` went unpriced (10 tokens estimated of
    // a request billed 668).
    for k in [
        Key::response_format,
        Key::reasoning,
        Key::reasoning_effort,
        Key::max_completion_tokens,
        Key::parallel_tool_calls,
        Key::stream_options,
    ] {
        if body.get(k).src()?.is_some() {
            return Ok(Api::OpenAIChat);
        }
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
    read_request_at(body, forced).map_err(|(_, e)| e)
}

/// [`read_request`], an accessor's own error (`ReadError::Source`: a schema that contains
/// itself, nesting past the bound, a property that raises) paired with the body's field being
/// read when it failed (`tools[0]`, `text`, `system`; empty where no part of the body is
/// singled out), which the error itself cannot carry.
pub fn read_request_at<'a, V: Input<'a>>(
    body: &V,
    forced: Option<Provider>,
) -> Result<Body<'a, V>, (String, ReadError<V::Error>)> {
    let unplaced = |e| (String::new(), e);
    let api = detect(body, forced).map_err(unplaced)?;
    let mut b = match api {
        Api::OpenAIChat => openai_chat::body(body),
        Api::OpenAIResponses => openai_responses::body(body),
        Api::Anthropic => anthropic::body(body),
        Api::Gemini => gemini::body(body),
        Api::Bedrock => bedrock::body(body),
    }
    .map_err(unplaced)?;
    if b.model.is_none() {
        b.model = match api {
            Api::Bedrock => opt_str(body, Key::modelId, "modelId"),
            _ => opt_str(body, Key::model, "model"),
        }
        .map_err(unplaced)?;
    }
    if b.tool_fields.is_empty() {
        b.tool_fields = (0..b.tools.len()).map(|j| format!("tools[{j}]")).collect();
    }
    check_parts(body, &b)?;
    Ok(b)
}

/// Check the parts the estimate and the exact count read after the body (the system prompt,
/// the tools' names, the structured-output option) with the readers the estimate uses, so a
/// bad one is refused here, naming the body's field (`instructions`, not the system message
/// the exact count makes of it; `text`, not `response_format`), for every caller alike. The
/// exact count renders tools and formats itself and took what the estimate refuses. Gemini
/// and Bedrock check their tools' names as they flatten them. A tool's schema is serialized
/// only by the estimate (twice would double the cost of a body's tools): `Body::tool_fields`
/// names the body's field of an error it raises at `tools[j]` of the flattened list.
fn check_parts<'a, V: Input<'a>>(
    body: &V,
    b: &Body<'a, V>,
) -> Result<(), (String, ReadError<V::Error>)> {
    if let Some(s) = b.system.as_ref().filter(|s| s.shape() != Shape::Null) {
        if let Err(e) = super::read::read_system(s) {
            let field = system_field(b.api);
            return Err((field.to_string(), renamed(e, "system", field)));
        }
    }
    // An SDK object (a pydantic model class for OpenAI's `parse`, a Gemini config) is read from
    // its dump by the estimate, and was checked by its SDK.
    if let Some(r) = b
        .response_format
        .as_ref()
        .filter(|r| !matches!(r.shape(), Shape::Null | Shape::Object))
    {
        if let Err(e) = super::response_format::read_response_format(r) {
            let field = format_field(body, b.api);
            return Err((field.to_string(), renamed(e, "response_format", field)));
        }
    }
    if !matches!(b.api, Api::Gemini | Api::Bedrock) {
        for (j, t) in b.tools.iter().enumerate() {
            super::read::tool_name(t, format_args!("tools[{j}]"))
                .map_err(|e| (format!("tools[{j}]"), e))?;
        }
    }
    Ok(())
}

/// The body field that holds the system prompt.
fn system_field(api: Api) -> &'static str {
    match api {
        Api::OpenAIResponses => "instructions",
        Api::Gemini => "systemInstruction",
        Api::OpenAIChat | Api::Anthropic | Api::Bedrock => "system",
    }
}

/// The body field that holds the structured-output option.
pub fn format_field<'a, V: Input<'a>>(body: &V, api: Api) -> &'static str {
    let has = |k: Key| matches!(body.get(k), Ok(Some(_)));
    match api {
        Api::OpenAIResponses => "text",
        Api::Anthropic if has(Key::output_format) => "output_format",
        Api::Anthropic => "output_config.format",
        Api::Gemini if has(Key::generationConfig) => "generationConfig",
        Api::Gemini if has(Key::generation_config) => "generation_config",
        Api::Gemini => "config",
        Api::OpenAIChat | Api::Bedrock => "response_format",
    }
}

/// `e` with the field (and the reason's "{from} must ...") renamed from the extras reader's
/// name to the body's.
#[cold]
fn renamed<E>(e: ReadError<E>, from: &str, to: &str) -> ReadError<E> {
    match e {
        ReadError::Invalid { field, reason } => ReadError::Invalid {
            field: match field.strip_prefix(from) {
                Some(rest) => format!("{to}{rest}"),
                None => field,
            },
            reason: reason.replacen(&format!("{from} must"), &format!("{to} must"), 1),
        },
        e => e,
    }
}

#[cfg(test)]
mod tests {
    use super::super::request_body::*;
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

    /// A Claude model behind an OpenAI-compatible endpoint: a field the Messages API refuses
    /// says chat (pydantic-ai's recorded Snowflake and OpenRouter requests), where the model's
    /// name alone says Anthropic.
    #[test]
    fn a_chat_only_field_says_chat_for_a_claude_model() {
        let msgs = json!([{"role": "user", "content": "The capital of Mexico"}]);
        for (k, v) in [
            ("response_format", json!({"type": "json_object"})),
            ("reasoning", json!({"enabled": true})),
            ("reasoning_effort", json!("high")),
            ("max_completion_tokens", json!(64)),
        ] {
            let b = json!({"model": "anthropic/claude-sonnet-4.5", "messages": msgs, k: v});
            assert_eq!(read(&b).api, Api::OpenAIChat, "{k}");
        }
        let plain = json!({"model": "claude-sonnet-4-6", "messages": msgs});
        assert_eq!(read(&plain).api, Api::Anthropic);
    }

    /// The API takes one Tool object where the list goes (a recorded body answered with a call
    /// of its tool).
    #[test]
    fn a_gemini_tools_object_is_one_tool() {
        let b = json!({
            "contents": [{"role": "user", "parts": [{"text": "What is the capital of France?"}]}],
            "tools": {"function_declarations": [{"name": "get_capital", "description": "d"}]},
        });
        let r = read(&b);
        assert_eq!(r.tools.len(), 1);
        assert_eq!(
            r.tool_fields,
            vec!["tools.functionDeclarations[0]".to_string()]
        );
        let bad = json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": "x"});
        let e = read_request(&&bad, None).unwrap_err();
        assert!(format!("{e:?}").contains("tools must be a list"), "{e:?}");
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
            "tools": [{"functionDeclarations": [{"name": "a"}, {"name": "b"}], "codeExecution": null},
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

    fn field_of(b: serde_json::Value) -> String {
        match read_request(&&b, None) {
            Err(super::super::ReadError::Invalid { field, .. }) => field,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_bad_system_tool_name_or_format_is_refused_naming_the_body_field() {
        let user = json!([{"role": "user", "content": "fine"}]);
        assert_eq!(
            field_of(json!({"model": "gpt-4o", "instructions": 5, "input": user})),
            "instructions"
        );
        assert_eq!(
            field_of(json!({"model": "claude-sonnet-4-5", "system": 5, "messages": user})),
            "system"
        );
        assert_eq!(
            field_of(json!({"model": "gpt-4o", "messages": user,
                            "tools": [{"type": "function", "function": {"name": 5}}]})),
            "tools[0].function.name"
        );
        assert_eq!(
            field_of(json!({"model": "gpt-4o", "messages": user, "response_format": "json"})),
            "response_format"
        );
        assert_eq!(
            field_of(json!({"model": "gpt-4.1", "input": "hi", "text": {"format": 5}})),
            "text.format"
        );
        assert_eq!(
            field_of(
                json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
                            "tools": [{"functionDeclarations": [{"name": "a"}, {"name": 5}]}]})
            ),
            "tools[0].functionDeclarations[1].name"
        );
        // Bedrock's index counts the cache point the estimate's list skips.
        assert_eq!(
            field_of(json!({"modelId": "m", "messages": [],
                            "toolConfig": {"tools": [{"cachePoint": {"type": "default"}},
                                                     {"toolSpec": {"name": 5}}]}})),
            "toolConfig.tools[1].toolSpec.name"
        );
    }

    #[test]
    fn flattened_tools_keep_the_body_field_they_came_from() {
        let gem = json!({"contents": "hi", "tools": [{"googleSearch": {}},
                         {"functionDeclarations": [{"name": "a"}, {"name": "b"}]}]});
        assert_eq!(
            read(&gem).tool_fields,
            [
                "tools[1].functionDeclarations[0]",
                "tools[1].functionDeclarations[1]"
            ]
        );
        let bed = json!({"modelId": "m", "messages": [],
                         "toolConfig": {"tools": [{"cachePoint": {"type": "default"}},
                                                  {"toolSpec": {"name": "t"}}]}});
        assert_eq!(read(&bed).tool_fields, ["toolConfig.tools[1]"]);
        let chat = json!({"model": "gpt-4o", "messages": [], "tools": [{"type": "function",
                          "function": {"name": "a"}}, {"type": "function", "function": {"name": "b"}}]});
        assert_eq!(read(&chat).tool_fields, ["tools[0]", "tools[1]"]);
    }

    fn turns(contents: serde_json::Value) -> Vec<(String, usize)> {
        let b = json!({"model": "gemini-2.5-flash", "contents": contents});
        match read_request(&&b, None).unwrap().history {
            History::Turns(ts) => ts
                .iter()
                .map(|t| match t {
                    Turn::Message(m) => (format!("message {}", m["role"]), 1),
                    Turn::Parts { role, parts } => (role.to_string(), parts.len()),
                })
                .collect(),
            History::List(_) => vec![("as given".to_string(), 0)],
            History::Text(_) => panic!("text"),
        }
    }

    #[test]
    fn gemini_contents_in_the_sdk_shapes_are_grouped_into_turns_as_the_sdk_sends_them() {
        let user = |n: usize| ("user".to_string(), n);
        assert_eq!(turns(json!("Why is the sky blue?")), vec![user(1)]);
        assert_eq!(turns(json!(["Why?", "Answer in one line."])), vec![user(2)]);
        assert_eq!(turns(json!([{"text": "Why?"}])), vec![user(1)]);
        assert_eq!(turns(json!({"text": "Why?"})), vec![user(1)]);
        assert_eq!(turns(json!([["a", "b"], "c"])), vec![user(2), user(1)]);
        // A run of function calls is the model's turn; a content breaks a run.
        assert_eq!(
            turns(json!(["q", {"functionCall": {"name": "f", "args": {}}},
                         {"role": "user", "parts": [{"text": "r"}]}, "s"])),
            vec![
                user(1),
                ("model".to_string(), 1),
                ("message \"user\"".to_string(), 1),
                user(1)
            ]
        );
        // The REST shape is handed back as given.
        assert_eq!(
            turns(json!([{"role": "user", "parts": [{"text": "hi"}]}])),
            vec![("as given".to_string(), 0)]
        );
        assert!(read_request(&&json!({"contents": 5}), None).is_err());
    }
}
