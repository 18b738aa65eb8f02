//! A call of a "think" tool: the model's reasoning written as a tool call. Anthropic's think
//! tool (anthropic.com/engineering/claude-think-tool, 2025-03-20) is a tool named `think` with
//! one string argument, `thought`, that "will not obtain new information or change the
//! database, but just append the thought to the log"; tau-bench's airline agent has the same
//! tool (47 of the 149 dialogues of ../shared/data call it, 71 calls, median 256 characters of
//! arguments). What such a call holds is a conclusion ("IFOYYZ is basic economy without
//! insurance, booked more than 24 hours ago, and cannot be canceled"): the digest writes it as
//! `think: <thought>`, clipped as a conclusion is, in the calls' place (filed with the
//! conclusions it went earlier in the tightest rooms and lost facts), instead of as a call line
//! whose arguments are cut to a few dozen characters and whose result says nothing.

use serde_json::Value;

use crate::read_call::name_has_word;

/// The words of a tool's name that say it only thinks.
const THINK_WORDS: [&str; 2] = ["think", "thinking"];

/// The thought of a call of tool `name` with `args`: the one string among its arguments, when
/// a whole word of the name says it thinks and the string says something. None for any other
/// call (an argument beside the thought, as a planner's step numbers, makes it a call: its
/// result is what the tool answered).
pub(super) fn thought_of<'v>(name: &str, args: Option<&'v Value>) -> Option<&'v str> {
    if !name_has_word(name, &THINK_WORDS) {
        return None;
    }
    let obj = args?.as_object()?;
    let mut values = obj.values();
    let only = values.next()?.as_str()?;
    (values.next().is_none() && !only.trim().is_empty()).then_some(only)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_think_call_is_its_thought() {
        let args = json!({"thought": "NQNU5R is business class: it can be canceled at any time."});
        assert_eq!(
            thought_of("think", Some(&args)),
            Some("NQNU5R is business class: it can be canceled at any time.")
        );
        let reasoning = json!({"reasoning": "check the fare first"});
        assert_eq!(
            thought_of("think_tool", Some(&reasoning)),
            Some("check the fare first")
        );
    }

    #[test]
    fn other_calls_and_planners_are_no_thought() {
        let args = json!({"thought": "x"});
        assert_eq!(thought_of("rethink_plan_v2", Some(&args)), None);
        assert_eq!(thought_of("search", Some(&args)), None);
        // A step counter beside the thought: a planner whose answer matters.
        let planner = json!({"thought": "step one", "thoughtNumber": 1, "totalThoughts": 3});
        assert_eq!(thought_of("sequentialthinking", Some(&planner)), None);
        assert_eq!(thought_of("think", Some(&json!({"thought": "  "}))), None);
        assert_eq!(thought_of("think", Some(&json!({"thought": 3}))), None);
        assert_eq!(thought_of("think", Some(&json!([]))), None);
        assert_eq!(thought_of("think", None), None);
    }
}
