//! Anthropic's client tools (`bash_*`, `text_editor_*`, `computer_*`): schema-less definitions
//! whose schema is built into the model, so their few JSON bytes say nothing of what they cost.
//! Anthropic documents a fixed input-token cost for each ("Specific tool pricing",
//! https://docs.claude.com/en/docs/about-claude/pricing#specific-tool-pricing; the tool pages
//! repeat them, e.g. https://docs.claude.com/en/docs/agents-and-tools/tool-use/bash-tool
//! "Pricing"). No recorded request in ../shared/data carries one, so the documented figures are
//! all there is.

use crate::model_info::Family;

/// "The bash tool adds 245 input tokens to your API calls."
const BASH: f64 = 245.0;

/// "Additional input tokens" of the text editor tool: 700 for `text_editor_20250429` (Claude
/// 4.x) and `text_editor_20250124` (Claude Sonnet 3.7); later versions taken alike.
const TEXT_EDITOR: f64 = 700.0;

/// Computer use: 735 "input tokens per tool definition" (Claude 4.x and Sonnet 3.7), and "the
/// computer use beta adds 466-499 tokens to the system prompt": a range, priced at its middle
/// (483) and listed as assumed (`COMPUTER_SYSTEM_PROMPT_RANGE`).
const COMPUTER: f64 = 735.0;
const COMPUTER_SYSTEM_PROMPT: f64 = 483.0;

/// The documented range of computer use's system prompt, for what a breakdown lists as assumed.
pub const COMPUTER_SYSTEM_PROMPT_RANGE: (u32, u32) = (466, 499);

/// The tool-use system prompt Anthropic adds whenever `tools` is set ("Tool use system prompt
/// token count": 346 tokens for `auto` / `none` on Claude 4.x and Sonnet 3.7,
/// https://docs.claude.com/en/docs/about-claude/pricing#tool-use-pricing). A request whose
/// only tools are client tools pays this, not `Profile::tools_base`, whose fitted surplus (+155)
/// is the rendering of function definitions' schemas.
pub const ANTHROPIC_TOOL_USE_PROMPT: f64 = 346.0;

/// Documented tokens of an Anthropic client tool of type `ty` (its definition and the prompt it
/// adds), or None for any other tool or family.
pub fn client_tool_tokens(family: Family, ty: &str) -> Option<f64> {
    if family != Family::Anthropic {
        return None;
    }
    // Anthropic's client tool types are versioned by date: `bash_20250124`.
    let (base, version) = ty.rsplit_once('_')?;
    if version.len() != 8 || !version.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    match base {
        "bash" => Some(BASH),
        "text_editor" => Some(TEXT_EDITOR),
        "computer" => Some(COMPUTER + COMPUTER_SYSTEM_PROMPT),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_client_tools_cost_their_documented_tokens() {
        let a = |ty| client_tool_tokens(Family::Anthropic, ty);
        assert_eq!(a("bash_20250124"), Some(245.0));
        assert_eq!(a("text_editor_20250728"), Some(700.0));
        assert_eq!(a("text_editor_20250124"), Some(700.0));
        assert_eq!(a("computer_20250124"), Some(735.0 + 483.0));
        // Server tools and other families are priced elsewhere.
        assert_eq!(a("web_search_20250305"), None);
        assert_eq!(a("text_editor_code_execution_20250825"), None);
        assert_eq!(a("computer_use_preview"), None);
        assert_eq!(client_tool_tokens(Family::OpenAI, "bash_20250124"), None);
    }
}
