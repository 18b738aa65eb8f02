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

use super::anthropic::{self, object_arguments};
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
        Change::Arguments {
            call: CallAt::Part(k),
            json,
        } => object_arguments(
            msg,
            *k,
            json,
            vec![Step::Key("content"), Step::Index(*k), Step::Key("input")],
        ),
        // A tool result block (Anthropic style) inside a LangChain message's content.
        Change::ResultText { part: Some(_), .. } => anthropic::write(msg, change),
        // Text, tool-result text and images sit where OpenAI chat keeps them (`content`,
        // `content[i]` with an OpenAI-style text block), which LangChain reads as is.
        _ => openai_chat::write(msg, change),
    }
}
