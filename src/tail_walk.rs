//! The backward tail walk: where the protected recent tail of a history begins.
//!
//! Works on per-message costs (the estimator's, the same numbers `estimate_each` returns) and
//! on where a cut is legal, so it is a pure function over two arrays that property tests can
//! hammer. The tail is chosen by a token budget, not a message count (ten messages can be 100
//! tokens or 100k), and a cut never separates a tool call from its results.

use crate::message::{Message, Role};
use crate::server_call_span::ServerSpans;

/// Where the tail may begin: `ok[i]` is true when starting the tail (or ending the summarized
/// middle) at message `i` separates no tool call from one of its results, and no reasoning
/// item from the item after it. `ok[n]` is true.
pub fn legal_cuts(msgs: &[Message<'_>]) -> Vec<bool> {
    let n = msgs.len();
    // A call at c answered at r forbids cuts at c+1..=r; a difference array marks the ranges.
    let mut forbid = vec![0i32; n + 2];
    let mut call_at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, m) in msgs.iter().enumerate() {
        // A Responses reasoning item is accepted only with the item it precedes: a head, a
        // pinned group or a tail that ends or opens between the two would send it alone. And
        // every output item of its response after it (a preamble message, then function calls:
        // the run of assistant items up to the next input) is accepted only with it: OpenAI
        // refuses "Item 'fc_..' of type 'function_call' was provided without its required
        // 'reasoning' item", so no cut falls inside that run either.
        if m.is_reasoning_item() && i + 1 < n {
            let mut end = i + 1;
            while end + 1 < n && msgs[end + 1].role == Role::Assistant {
                end += 1;
            }
            forbid[i + 1] += 1;
            forbid[end + 1] -= 1;
        }
        for id in m.result_ids() {
            if let Some(&c) = call_at.get(id) {
                if c < i {
                    forbid[c + 1] += 1;
                    forbid[i + 1] -= 1;
                }
            }
        }
        for id in m.call_ids() {
            call_at.insert(id, i);
        }
    }
    // A programmatic tool-calling run the history ends inside: its server call is answered by
    // no message yet, and its client rounds name it as their caller, so no cut falls after it
    // (`server_call_span`).
    if let Some(s) = ServerSpans::of(msgs).pending_from {
        forbid[s + 1] += 1;
        forbid[n] -= 1;
    }
    let mut ok = Vec::with_capacity(n + 1);
    let mut depth = 0;
    for f in forbid.iter().take(n + 1) {
        depth += f;
        ok.push(depth == 0);
    }
    ok
}

/// Options of the walk (see `find_tail_start`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TailOptions {
    /// Tokens the tail should hold.
    pub budget_tokens: u64,
    /// Messages at the start that are never summarized (system prompt, task).
    pub protect_first_n: usize,
    /// The tail keeps at least this many messages.
    pub min_tail: usize,
    /// The walk may take one more message while the tail stays under `budget * soft_ceiling`.
    pub soft_ceiling: f64,
}

/// The index where the protected tail begins; the summarizable middle is `head..start` where
/// `head` is the first legal cut at or after `protect_first_n`.
///
/// Rules, in order:
/// 1. `head` = first legal cut ≥ `protect_first_n` (a call in the head keeps its results).
///    When fewer than `min_tail + 1` messages follow the head, nothing can be summarized and
///    `head` is returned: the minimum compressible history is head + `min_tail` + 1 messages.
/// 2. Walk back from the end adding messages while the tail stays within `budget_tokens`; when
///    the next message would overflow it, take it anyway if the tail stays within
///    `budget_tokens * soft_ceiling` (once), so the cut does not land just before an oversized
///    message whose inclusion costs little more than the budget.
/// 3. Floor: the tail holds at least `min_tail` messages.
/// 4. Something is left to summarize: the start is at least `head + 1`.
/// 5. Legal cut: if the start splits a tool group, move it to the group's first message when
///    that keeps the tail within the ceiling or when moving past the group would break the
///    floor; else to the first message after the group. If no legal cut leaves both a
///    non-empty middle and the floor, `head` is returned (nothing to summarize).
pub fn find_tail_start(costs: &[u32], legal: &[bool], opt: &TailOptions) -> usize {
    let n = costs.len();
    debug_assert_eq!(legal.len(), n + 1);
    let mut head = opt.protect_first_n.min(n);
    while head < n && !legal[head] {
        head += 1;
    }
    // Saturating: a caller's `min_tail` near usize::MAX (found by the fuzzer) must mean
    // "nothing to summarize", not wrap around.
    if n - head < opt.min_tail.saturating_add(1) {
        return head;
    }
    let budget = opt.budget_tokens as f64;
    let ceiling = budget * opt.soft_ceiling.max(1.0);
    let mut start = n;
    let mut acc = 0f64;
    while start > head {
        let c = costs[start - 1] as f64;
        if acc + c <= budget {
            acc += c;
            start -= 1;
        } else {
            if acc + c <= ceiling {
                start -= 1;
            }
            break;
        }
    }
    let floor = n.saturating_sub(opt.min_tail);
    start = start.min(floor).max(head + 1);
    if legal[start] {
        return start;
    }
    let before = (head + 1..start).rev().find(|&i| legal[i]);
    let after = (start + 1..=floor).find(|&i| legal[i]);
    let tail_cost = |s: usize| costs[s..].iter().map(|&c| c as f64).sum::<f64>();
    match (before, after) {
        (Some(b), Some(a)) => {
            if tail_cost(b) <= ceiling {
                b
            } else {
                a
            }
        }
        (Some(b), None) => b,
        (None, Some(a)) => a,
        (None, None) => head,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;
    use std::borrow::Cow;

    fn opts(budget: u64) -> TailOptions {
        TailOptions {
            budget_tokens: budget,
            protect_first_n: 1,
            min_tail: 3,
            soft_ceiling: 1.5,
        }
    }

    #[test]
    fn budget_not_count_decides() {
        // One 50k-token output among small messages: the tail stops before it.
        let costs = [100, 10, 10, 10, 50_000, 10, 10, 10, 10];
        let legal = vec![true; costs.len() + 1];
        assert_eq!(find_tail_start(&costs, &legal, &opts(100)), 5);
    }

    #[test]
    fn soft_ceiling_takes_one_more_message() {
        let costs = [10, 10, 10, 10, 60, 40, 40];
        let legal = vec![true; costs.len() + 1];
        // 40 + 40 = 80 <= 100; + 60 = 140 <= 150: included.
        assert_eq!(find_tail_start(&costs, &legal, &opts(100)), 4);
    }

    #[test]
    fn floor_and_head_are_respected() {
        let costs = [10; 8];
        let legal = vec![true; 9];
        assert_eq!(find_tail_start(&costs, &legal, &opts(1)), 5);
        let everything_fits = find_tail_start(&costs, &legal, &opts(1_000_000));
        assert_eq!(everything_fits, 2, "leaves one message to summarize");
        assert_eq!(
            find_tail_start(&costs[..4], &legal[..5], &opts(1)),
            1,
            "too short"
        );
    }

    #[test]
    fn tool_groups_are_never_split() {
        let mut msgs = vec![Message::text("system", "s"), Message::text("user", "u")];
        let mut a = Message::empty("assistant");
        for id in ["c1", "c2"] {
            a.tool_calls.push(ToolCall {
                id,
                name: "f",
                arguments: Cow::Borrowed("{}"),
            });
        }
        msgs.push(a);
        for id in ["c1", "c2"] {
            let mut r = Message::empty("tool");
            r.tool_call_id = Some(id);
            msgs.push(r);
        }
        msgs.push(Message::text("assistant", "done"));
        msgs.push(Message::text("user", "next"));
        let legal = legal_cuts(&msgs);
        assert_eq!(legal, [true, true, true, false, false, true, true, true]);
        let costs = [5, 5, 5, 5, 5, 5, 5];
        // Budget for 4 messages would start at 3 (inside the group): moved to 2.
        assert_eq!(find_tail_start(&costs, &legal, &opts(20)), 2);
    }

    #[test]
    fn a_reasoning_item_is_never_cut_from_the_item_after_it() {
        let h = serde_json::json!([
            {"role": "user", "content": "task"},
            {"type": "reasoning", "id": "rs_0", "summary": [], "encrypted_content": "gAAA"},
            {"type": "function_call", "call_id": "c0", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c0", "output": "ok"},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "so"}]},
            {"type": "reasoning", "id": "rs_2", "summary": []},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
            {"role": "user", "content": "next"}
        ]);
        let msgs = crate::wire::read_history(&&h).expect("readable");
        assert!(
            msgs[1].is_reasoning_item()
                && msgs[4].is_reasoning_item()
                && msgs[5].is_reasoning_item()
        );
        assert!(!msgs[6].is_reasoning_item() && !msgs[2].is_reasoning_item());
        assert_eq!(
            legal_cuts(&msgs),
            [true, true, false, false, true, false, false, true, true]
        );
    }

    #[test]
    fn a_reasoning_item_stays_with_every_output_item_of_its_response() {
        // gpt-5 with a preamble: reasoning, a message, then the call. A tail opening at the call
        // sent it without its reasoning item (OpenAI: 400, "provided without its required
        // 'reasoning' item").
        let h = serde_json::json!([
            {"role": "user", "content": "task"},
            {"type": "reasoning", "id": "rs_0", "summary": [], "encrypted_content": "gAAA"},
            {"type": "message", "id": "msg_0", "role": "assistant", "content": [{"type": "output_text", "text": "Let me look."}]},
            {"type": "function_call", "id": "fc_0", "call_id": "c0", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c0", "output": "ok"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
            {"role": "user", "content": "next"}
        ]);
        let msgs = crate::wire::read_history(&&h).expect("readable");
        assert_eq!(
            legal_cuts(&msgs),
            [true, true, false, false, false, true, true, true]
        );
    }

    #[test]
    fn a_huge_min_tail_means_nothing_to_summarize() {
        let costs = [10u32; 6];
        let legal = [true; 7];
        for min_tail in [usize::MAX, usize::MAX - 1, 1 << 40] {
            let opt = TailOptions {
                min_tail,
                ..opts(5)
            };
            assert_eq!(find_tail_start(&costs, &legal, &opt), 1);
            assert_eq!(find_tail_start(&[], &[true], &opt), 0);
        }
    }
}
