//! LangChain messages (`langchain_core.messages.BaseMessage`): how an edit is written back.
//!
//! The bindings read these objects by meaning (`src/python/langchain_message.rs`: `type` to
//! role, `content` as a string or blocks, `tool_calls` as `{"name", "args", "id"}`,
//! `tool_call_id`), one part per content block so part positions are block positions. An edit
//! is written on the object's own fields: a tool result's text is `content`; an omitted image
//! becomes the block `{"type":"text","text":...}` at `content[i]`; shortened arguments are the
//! `args` *object* of `tool_calls[j]` (LangChain keeps them parsed; each provider integration
//! serializes them). Blocks the core reads as another format's (an Anthropic `tool_use`
//! block) are edited as that format writes them.

use super::anthropic;
use super::dialect::Dialect;
use super::edit::{CallAt, Change, Step, Written};
use super::openai_chat;
use crate::message::Message;

/// An edit of a LangChain message.
pub(crate) fn write(msg: &Message<'_>, change: &Change) -> Option<Written> {
    match change {
        Change::Arguments {
            call: CallAt::ToolCalls(j),
            json,
        } => {
            let old = msg.tool_calls.get(*j)?;
            // The view's text is the arguments as LangChain's integrations serialize the
            // object; the replacement stays an object of the same root type.
            if !(old.arguments.starts_with('{') && json.starts_with('{')) {
                return None;
            }
            (json.len() < old.arguments.len()).then(|| {
                (
                    vec![Step::Key("tool_calls"), Step::Index(*j), Step::Key("args")],
                    json.clone(),
                )
            })
        }
        // A tool_use or tool result block (Anthropic style) inside a LangChain message's
        // content: edited as Anthropic writes it.
        Change::Arguments {
            call: CallAt::Part(_),
            ..
        }
        | Change::ResultText { part: Some(_), .. } => anthropic::write(msg, change),
        // Text, tool-result text and images sit where OpenAI chat keeps them (`content`,
        // `content[i]` with an OpenAI-style text block), which LangChain reads as is.
        _ => openai_chat::write(msg, change),
    }
}

/// LangChain messages: written as chat (their content blocks are chat's), edited on the
/// objects' own fields.
pub const DIALECT: Dialect = Dialect {
    write,
    ..openai_chat::DIALECT
};

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::message::{Content, ToolCall};
    use crate::wire::Format;

    fn ai_call(arguments: &str) -> Message<'_> {
        let mut m = Message::empty("assistant");
        m.tool_calls.push(ToolCall {
            id: "call_1",
            name: "write",
            arguments: Cow::Borrowed(arguments),
        });
        m.wire = Format::LangChain;
        m
    }

    #[test]
    fn shortened_arguments_are_the_args_object_of_the_call() {
        let long = format!("{{\"path\": \"/a\", \"body\": \"{}\"}}", "x".repeat(500));
        let m = ai_call(&long);
        let change = Change::Arguments {
            call: CallAt::ToolCalls(0),
            json: r#"{"body":"xx…","path":"/a"}"#.to_string(),
        };
        let (path, value) = write(&m, &change).unwrap();
        assert_eq!(
            path,
            vec![Step::Key("tool_calls"), Step::Index(0), Step::Key("args")]
        );
        assert_eq!(value, r#"{"body":"xx…","path":"/a"}"#);
        // Never a bigger value, never a change of root type, never a call that is not there.
        let bigger = Change::Arguments {
            call: CallAt::ToolCalls(0),
            json: format!("{{\"b\":\"{}\"}}", "y".repeat(600)),
        };
        assert!(write(&m, &bigger).is_none());
        let list = Change::Arguments {
            call: CallAt::ToolCalls(0),
            json: "[1]".to_string(),
        };
        assert!(write(&m, &list).is_none());
        let absent = Change::Arguments {
            call: CallAt::ToolCalls(1),
            json: "{}".to_string(),
        };
        assert!(write(&m, &absent).is_none());
    }

    #[test]
    fn a_tool_result_is_the_content_string() {
        let mut m = Message::empty("tool");
        m.tool_call_id = Some("call_1");
        m.content = Content::Text(Cow::Borrowed("a long listing of many files"));
        m.wire = Format::LangChain;
        let change = Change::ResultText {
            part: None,
            text: "[pruned]".into(),
        };
        let (path, value) = write(&m, &change).unwrap();
        assert_eq!(path, vec![Step::Key("content")]);
        assert_eq!(value, r#""[pruned]""#);
    }
}
