//! What a request's settings cost beyond its text: the hidden prompt a provider adds when a body
//! asks for thinking or forces a tool, and what cannot be known offline (MCP servers' tools).
//!
//! Every constant is fitted on ../shared/data: the median of `usage - estimate without it` over
//! every recorded request carrying the setting (n in brackets; `tools/fit_settings.py` prints
//! the table), next to the same median over the requests without it (near 0, so the setting is
//! what differs).

use crate::estimate::Estimator;
use crate::model_info::Family;
use crate::wire::{Api, Settings, Thinking, ToolChoice};

/// Anthropic models with extended thinking enabled (`{"type": "enabled"}`): +30 tokens a request.
/// The 13 recorded plain Messages requests with it (claude-sonnet-4-5 / haiku-4-5 / opus-4-5,
/// budgets 1,024-10,000) were a median 30 over their estimate (prompts of 13-20 tokens billed
/// 43-51), the 2 OpenRouter requests asking an Anthropic model for `reasoning` 30 and 31, the 60
/// requests without thinking or tools +2; the budget does not change it. Adaptive thinking
/// (`{"type": "adaptive"}`, 3 recorded requests) costs nothing measurable (+1).
const ANTHROPIC_THINKING: f64 = 30.0;

/// Anthropic models forced to call a tool (`tool_choice: {"type": "any"}`): +105 tokens. The 7
/// recorded requests with it were a median 105 over (a spread of 97-141), one more with adaptive
/// thinking 113, the 107 with `auto` -1. A named tool (`{"type": "tool"}`, 6 requests, -150 to
/// +161, median -19) and `none` (1 request, +17) show no constant and are not priced. Anthropic
/// documents the tool-use system prompt as a per-choice constant ("Tool use system prompt token
/// count", https://docs.claude.com/en/docs/agents-and-tools/tool-use/overview#pricing): the
/// `auto` prompt is already in `Profile::tools_base`; `any` measures larger than its `auto`.
const ANTHROPIC_TOOL_CHOICE_ANY: f64 = 105.0;

/// DeepSeek models through the Responses API: +75 tokens a request, a preamble the endpoint
/// adds that its chat endpoint does not. The 3 recorded plain first turns
/// (deepseek-v4-flash, ../shared/data/pydantic-ai) are each exactly 75 over their text; with it,
/// the 13 DeepSeek requests' signed median goes from -10.7% to +9.8% (the 4 chat requests are
/// unchanged, 8-50% over; the 5 later turns carry reasoning items priced ~17 over).
const DEEPSEEK_RESPONSES: f64 = 75.0;

/// The same preamble beside tools: +18. DeepSeek's tool prompt (`profile::DEEPSEEK`
/// `tools_base`) was fitted over both of its endpoints from the messages alone, which cannot
/// say which endpoint a request went to, so it already holds part of this preamble for the
/// Responses requests it was fitted on. The 4 recorded Responses requests with tools
/// (deepseek-v4-flash, ../shared/data/pydantic-ai) are -1, 0, +36 and +37 over the messages'
/// estimate: median 18. With the whole 75 added they were 38-76 over (+10-17%), and the 13
/// DeepSeek requests' signed median +10.5%; with 18, +4.3%.
const DEEPSEEK_RESPONSES_BESIDE_TOOLS: f64 = 18.0;

/// Why an MCP server's share of a request is not in the estimate.
pub const MCP_REASON: &str = "MCP server: its tools are listed by the server at request time \
     (unknown offline); pass mcp_sizes={name: tokens} to price them";

impl Estimator {
    /// Tokens a body adds beyond its parts: its settings (`settings_tokens`) and what its API
    /// adds for this family.
    pub fn body_tokens(&self, api: Api, s: &Settings, tools: bool) -> f64 {
        let hidden = match (api, self.family()) {
            (Api::OpenAIResponses, Family::DeepSeek) if tools => DEEPSEEK_RESPONSES_BESIDE_TOOLS,
            (Api::OpenAIResponses, Family::DeepSeek) => DEEPSEEK_RESPONSES,
            _ => 0.0,
        };
        hidden + self.settings_tokens(s, tools)
    }

    /// Tokens the settings of a request add to its overhead (fractional); `tools` says whether
    /// the request defines any (a forced tool choice without tools costs nothing).
    pub fn settings_tokens(&self, s: &Settings, tools: bool) -> f64 {
        if self.family() != Family::Anthropic {
            return 0.0;
        }
        let mut n = 0.0;
        if matches!(s.thinking, Thinking::Enabled { .. }) {
            n += ANTHROPIC_THINKING;
        }
        if tools && s.tool_choice == ToolChoice::Any {
            n += ANTHROPIC_TOOL_CHOICE_ANY;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Provider;

    #[test]
    fn anthropic_thinking_and_forced_tools_cost_their_hidden_prompt() {
        let a = Estimator::new(Provider::Anthropic, "claude-sonnet-4-5");
        let mut s = Settings::default();
        assert_eq!(a.settings_tokens(&s, true), 0.0);
        s.thinking = Thinking::Enabled { budget: Some(1024) };
        assert_eq!(a.settings_tokens(&s, false), ANTHROPIC_THINKING);
        s.tool_choice = ToolChoice::Any;
        assert_eq!(
            a.settings_tokens(&s, true),
            ANTHROPIC_THINKING + ANTHROPIC_TOOL_CHOICE_ANY
        );
        // Without tools a forced choice has nothing to force.
        assert_eq!(a.settings_tokens(&s, false), ANTHROPIC_THINKING);
        // The API's own preamble: DeepSeek's Responses endpoint.
        let d = Estimator::new(Provider::OpenAI, "deepseek-v4-flash");
        let plain = Settings::default();
        assert_eq!(
            d.body_tokens(Api::OpenAIResponses, &plain, false),
            DEEPSEEK_RESPONSES
        );
        assert_eq!(
            d.body_tokens(Api::OpenAIResponses, &plain, true),
            DEEPSEEK_RESPONSES_BESIDE_TOOLS
        );
        assert_eq!(d.body_tokens(Api::OpenAIChat, &plain, false), 0.0);
        // Other families: nothing measured.
        let o = Estimator::new(Provider::OpenAI, "gpt-4o");
        assert_eq!(o.settings_tokens(&s, true), 0.0);
    }
}
