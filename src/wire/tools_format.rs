//! Which wire format a list of tool definitions is written in. A history of plain text
//! messages (`{"role", "content": "..."}`) reads the same in OpenAI chat and Responses, and in
//! Anthropic and Bedrock alike; the tools sent beside it do not: each API takes its own shape
//! and refuses the others'. Where the history shows no format, the tools say which one the
//! caller writes, so what the library adds to them (the recall tool) takes their shape.
//!
//! The shapes, from the providers' API references:
//! - OpenAI chat: `{"type": "function", "function": {...}}`, `{"type": "custom", "custom": {...}}`
//!   (https://platform.openai.com/docs/api-reference/chat/create#chat-create-tools);
//! - Responses: `{"type": "function", "name": ...}` flat, `{"type": "custom", "name": ...}`, and
//!   its built-in tools by their `type` (`web_search`, `file_search`, `mcp`, ...)
//!   (https://platform.openai.com/docs/api-reference/responses/create#responses-create-tools);
//! - Anthropic: `{"name", "input_schema"}`, and its versioned client and server tools
//!   (`bash_20250124`, `web_search_20250305`: a type ending in a date)
//!   (https://docs.claude.com/en/docs/agents-and-tools/tool-use/overview);
//! - Gemini: `{"functionDeclarations": [...]}` and its built-ins (`googleSearch`,
//!   `codeExecution`, `urlContext`), in camel or snake case
//!   (https://ai.google.dev/api/caching#Tool);
//! - Bedrock Converse: `{"toolSpec": {...}}`, `{"cachePoint": {...}}`
//!   (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Tool.html).

use super::input::{Input, Key};
use super::WireFormat;

/// Responses' built-in tools, by `type` (the chat API has none of these).
const RESPONSES_BUILT_INS: &[&str] = &[
    "web_search",
    "web_search_preview",
    "file_search",
    "code_interpreter",
    "image_generation",
    "mcp",
    "local_shell",
    "shell",
    "apply_patch",
    "computer_use_preview",
];

/// The wire format the first telling definition of `tools` is written in; None when `tools` is
/// not a list or no definition tells (a value the readers refuse is theirs to report: this is
/// a hint and never fails).
pub fn tools_format<'a, V: Input<'a>>(tools: &V) -> Option<WireFormat> {
    let items = tools.items().ok()??;
    items.iter().find_map(tool_format)
}

/// The format one tool definition is written in, when its shape tells.
fn tool_format<'a, V: Input<'a>>(t: &V) -> Option<WireFormat> {
    let has = |k: Key| matches!(t.get(k), Ok(Some(_)));
    if has(Key::toolSpec) || has(Key::cachePoint) {
        return Some(WireFormat::Bedrock);
    }
    if [
        Key::functionDeclarations,
        Key::function_declarations,
        Key::googleSearch,
        Key::google_search,
        Key::googleSearchRetrieval,
        Key::google_search_retrieval,
        Key::codeExecution,
        Key::code_execution,
        Key::urlContext,
        Key::url_context,
    ]
    .into_iter()
    .any(has)
    {
        return Some(WireFormat::Gemini);
    }
    if has(Key::input_schema) {
        return Some(WireFormat::Anthropic);
    }
    if has(Key::function) || has(Key::custom) {
        return Some(WireFormat::Chat);
    }
    let kind = t.get(Key::kind).ok()??;
    let kind = kind.str().ok()??;
    if dated(&kind) {
        return Some(WireFormat::Anthropic);
    }
    if kind == "function" || kind == "custom" {
        // Flat, named at the top: chat nests both under their own key (read above).
        return has(Key::name).then_some(WireFormat::Responses);
    }
    RESPONSES_BUILT_INS
        .contains(&kind.as_ref())
        .then_some(WireFormat::Responses)
}

/// Whether a tool type ends in an 8-digit date (`bash_20250124`): Anthropic versions its
/// client and server tools so; Responses dates its own with underscores
/// (`web_search_preview_2025_03_11`).
fn dated(kind: &str) -> bool {
    match kind.rsplit_once('_') {
        Some((stem, date)) => {
            !stem.is_empty() && date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit())
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{tools_format, WireFormat};

    fn of(v: serde_json::Value) -> Option<WireFormat> {
        tools_format(&&v)
    }

    #[test]
    fn each_api_s_tool_shape_names_its_format() {
        let schema = json!({"type": "object", "properties": {}});
        let cases = [
            (
                json!([{"type": "function", "function": {"name": "f", "parameters": schema}}]),
                WireFormat::Chat,
            ),
            (
                json!([{"type": "custom", "custom": {"name": "grammar"}}]),
                WireFormat::Chat,
            ),
            (
                json!([{"type": "function", "name": "f", "parameters": schema}]),
                WireFormat::Responses,
            ),
            (json!([{"type": "web_search"}]), WireFormat::Responses),
            (
                json!([{"type": "web_search_preview_2025_03_11"}, {"type": "function", "name": "f"}]),
                WireFormat::Responses,
            ),
            (
                json!([{"name": "f", "description": "d", "input_schema": schema}]),
                WireFormat::Anthropic,
            ),
            (
                json!([{"type": "bash_20250124", "name": "bash"}]),
                WireFormat::Anthropic,
            ),
            (
                json!([{"functionDeclarations": [{"name": "f"}]}]),
                WireFormat::Gemini,
            ),
            (json!([{"google_search": {}}]), WireFormat::Gemini),
            (
                json!([{"toolSpec": {"name": "f", "inputSchema": {"json": schema}}}]),
                WireFormat::Bedrock,
            ),
        ];
        for (tools, want) in cases {
            assert_eq!(of(tools.clone()), Some(want), "{tools}");
        }
    }

    #[test]
    fn tools_that_tell_nothing_name_no_format() {
        for tools in [
            json!([]),
            json!(null),
            json!("tools"),
            json!([{"name": "f"}]),
            json!([{"type": "function"}, 3]),
            json!([{"type": "something_else", "name": "f"}]),
        ] {
            assert_eq!(of(tools.clone()), None, "{tools}");
        }
    }
}
