//! Which call each tool result answers. Call ids are not unique in real traffic: 37 of the 149
//! recorded tau-bench dialogues reuse an id for a later call (112 of their 867 calls share
//! one), so a map from id to call pairs an output with the wrong call (a user profile shown as
//! the result of `calculate`). A result answers the nearest call before it with its id.

use std::collections::HashMap;

use crate::message::{Message, ToolCall};

/// For each result, by (its message's index, its call id), the index of the message whose call
/// it answers: the nearest one before it making a call with that id. A result with no such
/// call is absent.
pub fn answered_calls<'a>(msgs: &[Message<'a>]) -> HashMap<(usize, &'a str), usize> {
    let mut open: HashMap<&'a str, usize> = HashMap::new();
    let mut out = HashMap::new();
    for (i, m) in msgs.iter().enumerate() {
        for id in m.result_ids() {
            if let Some(&k) = open.get(id) {
                out.insert((i, id), k);
            }
        }
        for c in m.calls() {
            open.insert(c.id, i);
        }
    }
    out
}

/// The calls of a history found by where they are: the call a result answers, or a call by
/// the message that makes it.
pub struct CallPairs<'m, 'a> {
    msgs: &'m [Message<'a>],
    answered: HashMap<(usize, &'a str), usize>,
}

impl<'m, 'a> CallPairs<'m, 'a> {
    pub fn new(msgs: &'m [Message<'a>]) -> Self {
        CallPairs {
            msgs,
            answered: answered_calls(msgs),
        }
    }

    /// The call `id` that message `at` answers with a result, or that it makes itself.
    pub fn call(&self, at: usize, id: &str) -> Option<&'m ToolCall<'a>> {
        let k = self.answered.get(&(at, id)).copied().unwrap_or(at);
        self.msgs.get(k)?.calls().find(|c| c.id == id)
    }

    /// The tool name of [`CallPairs::call`].
    pub fn name(&self, at: usize, id: &str) -> Option<&'a str> {
        self.call(at, id).map(|c| c.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn call(id: &'static str, name: &'static str) -> Message<'static> {
        let mut m = Message::text("assistant", "");
        m.tool_calls = vec![ToolCall {
            id,
            name,
            arguments: Cow::Borrowed("{}"),
        }];
        m
    }

    fn result(id: &'static str) -> Message<'static> {
        let mut m = Message::text("tool", "out");
        m.tool_call_id = Some(id);
        m
    }

    /// An id used again for a later call: each result answers the call just before it.
    #[test]
    fn a_reused_call_id_pairs_each_result_with_the_call_before_it() {
        let msgs = vec![
            Message::text("user", "hi"),
            call("c1", "get_user_details"),
            result("c1"),
            call("c2", "search"),
            result("c2"),
            call("c1", "calculate"),
            result("c1"),
        ];
        let pairs = CallPairs::new(&msgs);
        assert_eq!(pairs.name(2, "c1"), Some("get_user_details"));
        assert_eq!(pairs.name(6, "c1"), Some("calculate"));
        assert_eq!(pairs.name(4, "c2"), Some("search"));
        // A call by the message that makes it; an id nobody called.
        assert_eq!(pairs.name(5, "c1"), Some("calculate"));
        assert_eq!(pairs.name(2, "zz"), None);
    }
}
