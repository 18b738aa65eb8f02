//! Server tool calls answered turns later.
//!
//! Anthropic's programmatic tool calling
//! (https://docs.claude.com/en/docs/agents-and-tools/tool-use/programmatic-tool-calling) runs a
//! `code_execution` `server_tool_use` whose code calls the client's own tools. The assistant
//! turn that opens the run holds the server call and the client `tool_use` blocks the code made
//! (each names the server call in `caller.tool_id`); the client answers them in a user turn of
//! `tool_result` blocks only; the code goes on in the next assistant turn, which makes more such
//! calls or ends the run with the server call's result (`code_execution_tool_result`). So the
//! server call is answered by a later assistant message, and the run between is one piece: a
//! cut inside it would send a client call whose `caller` names a folded server call, or a
//! server result without its call.
//!
//! Every other pairing rule stays as it is: a client call is answered by the next message, and
//! a server call answered in its own message (web search, an MCP call) links to no other one.

use std::collections::HashMap;

use crate::compaction::Turn;
use crate::message::{Message, Part};

/// Whether a call id is one Anthropic gives a server-run tool's call: `srvtoolu_...` for
/// `server_tool_use`, `mcptoolu_...` for `mcp_tool_use` (the Messages API's id patterns,
/// `^srvtoolu_[a-zA-Z0-9_]+$`, https://docs.claude.com/en/api/messages).
pub fn is_server_call_id(id: &str) -> bool {
    id.starts_with("srvtoolu_") || id.starts_with("mcptoolu_")
}

/// The server calls of a history answered in a later message, and a run still going at its end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerSpans<'a> {
    /// (message of the result, call id) -> message of the call, for each server result that
    /// answers a call of an earlier assistant message.
    pub answered: HashMap<(usize, &'a str), usize>,
    /// The calls those results answer: (message of the call, call id).
    pub calls: HashMap<(usize, &'a str), usize>,
    /// Where a run whose server call has no result yet begins, when the history ends inside it
    /// (every later message is a client round of that run: assistant calls, user results).
    pub pending_from: Option<usize>,
    /// The ids of that run's server calls still open.
    pub pending: Vec<&'a str>,
}

impl<'a> ServerSpans<'a> {
    /// The server runs of `msgs`.
    pub fn of(msgs: &[Message<'a>]) -> Self {
        let mut out = ServerSpans::default();
        // Server calls not answered in their own message, by id: the nearest one wins, as a
        // result answers the nearest call of its id.
        let mut open: HashMap<&'a str, usize> = HashMap::new();
        for (i, m) in msgs.iter().enumerate() {
            if Turn::of(m) != Turn::Assistant {
                continue;
            }
            // A result block in an assistant message is a server tool's (a client's
            // `tool_result` sits in a user message).
            for p in m.parts() {
                if let Part::ToolResult { tool_use_id, .. } = p {
                    if m.answered_here(tool_use_id) {
                        continue;
                    }
                    if let Some(c) = open.remove(tool_use_id) {
                        out.answered.insert((i, *tool_use_id), c);
                        out.calls.insert((c, *tool_use_id), i);
                    }
                }
            }
            for id in m.call_ids() {
                if is_server_call_id(id) {
                    open.insert(id, i);
                }
            }
        }
        // A run the history ends inside: its server call's message is followed only by the
        // run's client rounds.
        if let Some(&start) = open.values().min() {
            let in_run = |m: &Message<'_>| match Turn::of(m) {
                Turn::Assistant => m.call_ids().next().is_some(),
                Turn::User => {
                    !m.parts().is_empty()
                        && m.parts()
                            .iter()
                            .all(|p| matches!(p, Part::ToolResult { .. }))
                }
                _ => false,
            };
            if msgs[start + 1..].iter().all(in_run) {
                out.pending_from = Some(start);
                let mut ids: Vec<(usize, &'a str)> = open.iter().map(|(&k, &v)| (v, k)).collect();
                ids.sort_unstable();
                out.pending = ids.into_iter().map(|(_, id)| id).collect();
            }
        }
        out
    }

    /// Whether the call `id` of message `at` is a server call answered later or still running.
    pub fn spans(&self, at: usize, id: &str) -> bool {
        self.calls.contains_key(&(at, id))
            || (self.pending_from.is_some_and(|s| at >= s) && self.pending.contains(&id))
    }

    /// Whether the result `id` in message `at` answers a server call of an earlier message.
    pub fn answers(&self, at: usize, id: &str) -> bool {
        self.answered.contains_key(&(at, id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;
    use std::borrow::Cow;

    fn use_(id: &'static str, name: &'static str) -> Part<'static> {
        Part::ToolUse(ToolCall {
            id,
            name,
            arguments: Cow::Borrowed("{}"),
        })
    }

    fn result(id: &'static str) -> Part<'static> {
        Part::ToolResult {
            tool_use_id: id,
            content: vec![Part::Text(Cow::Borrowed("out"))],
            is_error: false,
            name: None,
        }
    }

    fn msg(role: &'static str, parts: Vec<Part<'static>>) -> Message<'static> {
        let mut m = Message::text(role, "");
        m.content = crate::message::Content::Parts(parts);
        m
    }

    /// A code-execution run that called a client tool twice, then returned its output.
    fn run() -> Vec<Message<'static>> {
        vec![
            Message::text("user", "query the regions"),
            msg(
                "assistant",
                vec![
                    use_("srvtoolu_01", "code_execution"),
                    use_("toolu_a", "query"),
                ],
            ),
            msg("user", vec![result("toolu_a")]),
            msg("assistant", vec![use_("toolu_b", "query")]),
            msg("user", vec![result("toolu_b")]),
            msg("assistant", vec![result("srvtoolu_01")]),
            Message::text("user", "thanks"),
        ]
    }

    #[test]
    fn a_server_call_answered_turns_later_spans_the_run() {
        let msgs = run();
        let s = ServerSpans::of(&msgs);
        assert!(s.spans(1, "srvtoolu_01"));
        assert!(s.answers(5, "srvtoolu_01"));
        assert!(!s.spans(1, "toolu_a"));
        assert_eq!(s.pending_from, None);
    }

    #[test]
    fn a_history_ending_inside_a_run_is_pending_from_its_server_call() {
        let msgs = run()[..5].to_vec();
        let s = ServerSpans::of(&msgs);
        assert_eq!(s.pending_from, Some(1));
        assert!(s.spans(1, "srvtoolu_01"));
        // A text turn after the server call ends no run: that call lost its result.
        let mut broken = run()[..3].to_vec();
        broken.push(Message::text("assistant", "done"));
        assert_eq!(ServerSpans::of(&broken).pending_from, None);
    }

    /// The run is one piece to the tail walk and to the checker: no cut inside it, and its
    /// server call's result turns later is no orphan.
    #[test]
    fn no_cut_falls_inside_a_run_and_the_checker_accepts_it() {
        use crate::wire::WireFormat;
        let msgs = run();
        let ok = crate::tail_walk::legal_cuts(&msgs);
        assert_eq!(ok, [true, true, false, false, false, false, true, true]);
        assert_eq!(
            crate::compaction::check(&msgs, WireFormat::Anthropic, &[]),
            []
        );
        let pending = run()[..5].to_vec();
        let ok = crate::tail_walk::legal_cuts(&pending);
        assert_eq!(ok, [true, true, false, false, false, true]);
        assert_eq!(
            crate::compaction::check(&pending, WireFormat::Anthropic, &[]),
            []
        );
        // Without its call, the result is an orphan.
        assert!(!crate::compaction::check(&msgs[3..], WireFormat::Anthropic, &[]).is_empty());
    }
}
