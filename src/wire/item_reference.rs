//! Responses calls sent by reference. With `store: true` a client may send a stored item by its
//! id alone (`{"type": "item_reference", "id": "fc_..."}`) and the call's output inline
//! (`function_call_output` with the call's `call_id`). The reference names the item, not the
//! call, so nothing in the history pairs the output with it: the output read as an orphan made
//! a valid input raise `UnpairedToolCallsError`, and `repair` dropped the outputs.
//!
//! Here each output whose call id no earlier call makes is taken to answer the earliest
//! reference before it that no output has claimed: that reference is read as the call (its
//! item's type unknown offline, it is never edited), so the two are kept or folded together.

use std::borrow::Cow;
use std::collections::{HashSet, VecDeque};

use crate::message::{Message, ToolCall};

/// The `type` of a reference item (`Message::item`).
pub const ITEM_REFERENCE: &str = "item_reference";

/// Whether `msgs` holds a reference item (`bind` has work to do).
pub fn any(msgs: &[Message<'_>]) -> bool {
    msgs.iter().any(|m| m.item == Some(ITEM_REFERENCE))
}

/// Read each reference that an otherwise unanswered output follows as that output's call (see
/// the module doc). Returns the indices of the references bound (their price changed).
pub fn bind<'a>(msgs: &mut [Message<'a>]) -> Vec<usize> {
    let mut called: HashSet<&'a str> = HashSet::new();
    let mut unclaimed: VecDeque<usize> = VecDeque::new();
    let mut bound = Vec::new();
    for i in 0..msgs.len() {
        // (A reference to a reasoning item is read as that item: no output answers it.)
        if msgs[i].item == Some(ITEM_REFERENCE)
            && msgs[i].tool_calls.is_empty()
            && !msgs[i].is_reasoning_item()
        {
            unclaimed.push_back(i);
            continue;
        }
        let ids: Vec<&'a str> = msgs[i].result_ids().collect();
        for id in ids {
            if called.contains(id) {
                continue;
            }
            let Some(r) = unclaimed.pop_front() else {
                continue;
            };
            msgs[r].tool_calls.push(ToolCall {
                id,
                name: ITEM_REFERENCE,
                arguments: Cow::Borrowed("{}"),
            });
            called.insert(id);
            bound.push(r);
        }
        called.extend(msgs[i].call_ids());
    }
    bound
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{any, bind};
    use crate::compaction::check;
    use crate::wire::read::{read_history, read_message};
    use crate::wire::wire_format::WireFormat;

    #[test]
    fn an_output_answers_the_reference_before_it_that_no_output_claimed() {
        let h = json!([
            {"role": "user", "content": "go"},
            {"type": "item_reference", "id": "fc_0"},
            {"type": "item_reference", "id": "fc_1"},
            {"type": "function_call_output", "call_id": "call_0", "output": "a"},
            {"type": "function_call_output", "call_id": "call_1", "output": "b"},
            {"type": "function_call", "call_id": "call_2", "name": "ls", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_2", "output": "c"},
            {"type": "item_reference", "id": "msg_3"},
            {"role": "user", "content": "next"}
        ]);
        let items = h.as_array().unwrap();
        let mut msgs: Vec<_> = items.iter().map(|m| read_message(&m).unwrap()).collect();
        assert!(any(&msgs));
        assert!(!check(&msgs, WireFormat::Responses, &[]).is_empty());
        assert_eq!(bind(&mut msgs), vec![1, 2]);
        assert_eq!(msgs[1].tool_calls[0].id, "call_0");
        assert_eq!(msgs[2].tool_calls[0].id, "call_1");
        // A reference no output follows (a stored message) stays a plain item.
        assert!(msgs[7].tool_calls.is_empty());
        assert!(check(&msgs, WireFormat::Responses, &[]).is_empty());
        // A whole history is read bound.
        assert_eq!(read_history(&&h).unwrap(), msgs);
    }
}
