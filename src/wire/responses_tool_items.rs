//! The Responses API's own client-run tools: a call item and the output item the client sends
//! back, paired by a call id like `function_call` / `function_call_output`
//! (https://platform.openai.com/docs/api-reference/responses/create, input item list; the item
//! types of `openai.types.responses.ResponseInputItemParam`, openai-python 3.57):
//!
//! | call | output | the output names the call by |
//! | --- | --- | --- |
//! | `shell_call` | `shell_call_output` | `call_id` |
//! | `local_shell_call` | `local_shell_call_output` | `id` |
//! | `apply_patch_call` | `apply_patch_call_output` | `call_id` |
//! | `computer_call` | `computer_call_output` | `call_id` |
//! | `program` | `program_output` | `call_id` |
//! | `mcp_approval_request` | `mcp_approval_response` | `approval_request_id` (the request's `id`) |
//! | `tool_search_call` | `tool_search_output` | `call_id`, when both carry one (a search the server ran has none) |
//!
//! Read as an opaque item each, a compaction could fold a call and keep its output (the API
//! refuses an output whose call it was not sent). Read here as a call and its result, they are
//! kept or folded together, the digest shows them as calls, and a screenshot is priced as the
//! image it is. Nothing else is ever written into these items (their `wire` stays unknown): a
//! shell call's output is a list of chunks and a screenshot an object, where an edit of a
//! `function_call_output` writes a string. An old screenshot is the one edit
//! (`blank_screenshot`).

use std::borrow::Cow;

use super::fields::{invalid, json_or_str, opt_id, opt_str};
use super::input::{Input, Key, ReadResult, Src};
use super::openai_chat::image_url;
use crate::message::{Content, Detail, Image, ImageSource, Message, Part, ToolCall};

/// Where a call item of type `kind` keeps the id its output answers by (see the module doc):
/// repair renames a duplicate there.
pub(crate) fn call_id_key(kind: &str) -> Option<&'static str> {
    match kind {
        "custom_tool_call" | "shell_call" | "local_shell_call" | "computer_call"
        | "apply_patch_call" | "program" | "tool_search_call" => Some("call_id"),
        "mcp_approval_request" => Some("id"),
        _ => None,
    }
}

/// Where an output item of type `kind` names the call it answers (see the module doc).
pub(crate) fn result_id_key(kind: &str) -> Option<&'static str> {
    match kind {
        "custom_tool_call_output"
        | "shell_call_output"
        | "apply_patch_call_output"
        | "computer_call_output"
        | "program_output"
        | "tool_search_output" => Some("call_id"),
        "local_shell_call_output" => Some("id"),
        "mcp_approval_response" => Some("approval_request_id"),
        _ => None,
    }
}

/// A 1x1 grey PNG: what an old `computer_call_output` shows in place of its screenshot.
const ONE_PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNoAAAAggCBd81ytgAAAABJRU5ErkJggg==";

/// Whether `msg` is a computer call's screenshot (a `computer_call_output` item).
pub(crate) fn is_screenshot(msg: &Message<'_>) -> bool {
    msg.item == Some("computer_call_output")
}

/// The image an old screenshot becomes: a computer call's output must be a
/// `computer_screenshot` (the API takes no text there), so the mask of one is a single pixel,
/// priced at an image's least. Never masked, a computer-use loop's screenshots stayed whole
/// however old, and `strategy="mask"` could free nothing in it.
pub(crate) fn blank_screenshot() -> Image<'static> {
    Image {
        source: ImageSource::Base64(ONE_PIXEL_PNG),
        detail: Detail::default(),
    }
}

/// The edit of screenshot `msg` (`is_screenshot`) to `blank_screenshot`: the whole `output`
/// object, whether it named its image by URL or by file id.
pub(crate) fn screenshot_masked(msg: &Message<'_>) -> Option<super::edit::Written> {
    if !is_screenshot(msg) || !matches!(msg.parts(), [Part::Image(_)]) {
        return None;
    }
    let url = format!("data:image/png;base64,{ONE_PIXEL_PNG}");
    Some((
        vec![super::edit::Step::Key("output")],
        super::edit::object_of(&[("type", "computer_screenshot"), ("image_url", &url)]),
    ))
}

/// A client-run tool's call item of type `kind` (see the module doc), or None for another type.
pub(crate) fn call<'a, V: Input<'a>>(
    kind: &'a str,
    m: &V,
) -> ReadResult<Option<Message<'a>>, V::Error> {
    // (id key, arguments key, the call's name)
    let (id_key, args_key, name) = match kind {
        "shell_call" => (Key::call_id, Key::action, "shell"),
        "local_shell_call" => (Key::call_id, Key::action, "local_shell"),
        "computer_call" => (Key::call_id, Key::action, "computer"),
        "apply_patch_call" => (Key::call_id, Key::operation, "apply_patch"),
        "program" => (Key::call_id, Key::code, "program"),
        "mcp_approval_request" => (Key::id, Key::arguments, ""),
        // (A search the server ran carries no call id and pairs with nothing: left opaque.)
        "tool_search_call" if opt_id(m, Key::call_id, "call_id")?.is_some() => {
            (Key::call_id, Key::arguments, "tool_search")
        }
        _ => return Ok(None),
    };
    let id = opt_id(m, id_key, id_key.as_str())?.ok_or_else(|| {
        invalid(
            id_key.as_str(),
            format!("a {kind} item needs its {}", id_key.as_str()),
        )
    })?;
    // An MCP approval request names the tool it asks to call.
    let name = match name {
        "" => opt_id(m, Key::name, "name")?.unwrap_or(kind),
        n => n,
    };
    // (A computer call may batch its steps under `actions`.)
    let args = match m.get(args_key).src()? {
        Some(a) => json_or_str(&a, args_key.as_str())?,
        None => match m.get(Key::actions).src()? {
            Some(a) => json_or_str(&a, "actions")?,
            None => Cow::Borrowed(""),
        },
    };
    let mut msg = Message::empty("assistant");
    msg.tool_calls.push(ToolCall {
        id,
        name,
        arguments: args,
    });
    Ok(Some(msg))
}

/// A client-run tool's output item of type `kind` (see the module doc), or None for another
/// type: a tool message answering its call, its content what the output says.
pub(crate) fn output<'a, V: Input<'a>>(
    kind: &'a str,
    m: &V,
) -> ReadResult<Option<Message<'a>>, V::Error> {
    let id_key = match kind {
        "shell_call_output"
        | "apply_patch_call_output"
        | "computer_call_output"
        | "program_output" => Key::call_id,
        "local_shell_call_output" => Key::id,
        "mcp_approval_response" => Key::approval_request_id,
        "tool_search_output" if opt_id(m, Key::call_id, "call_id")?.is_some() => Key::call_id,
        _ => return Ok(None),
    };
    let mut msg = Message::empty("tool");
    msg.tool_call_id = Some(opt_id(m, id_key, id_key.as_str())?.ok_or_else(|| {
        invalid(
            id_key.as_str(),
            format!("a {kind} item needs its {}", id_key.as_str()),
        )
    })?);
    msg.content = match kind {
        "shell_call_output" => shell_output(m)?,
        "computer_call_output" => screenshot(m)?,
        "program_output" => text_of(m, Key::result)?,
        // The tools the search loaded, as the JSON the model reads.
        "tool_search_output" => match m.get(Key::tools).src()? {
            Some(t) => Content::Text(Cow::Owned(t.json_text().src()?)),
            None => Content::None,
        },
        "mcp_approval_response" => {
            let approve = m.get(Key::approve).src()?;
            let approved = match approve {
                Some(a) => a.json_text().src()? == "true",
                None => false,
            };
            let verdict = if approved { "approved" } else { "denied" };
            match opt_str(m, Key::reason, "reason")? {
                Some(r) => Content::Text(Cow::Owned(format!("{verdict}: {r}"))),
                None => Content::Text(Cow::Borrowed(verdict)),
            }
        }
        // `local_shell_call_output` (a JSON string) and `apply_patch_call_output` (an optional
        // log, beside its `completed` / `failed` status).
        _ => match (opt_str(m, Key::output, "output")?, kind) {
            (Some(o), "apply_patch_call_output") => patch_output(m, o)?,
            (Some(o), _) => Content::Text(o),
            (None, _) => match opt_str(m, Key::status, "status")? {
                Some(s) => Content::Text(s),
                None => Content::None,
            },
        },
    };
    Ok(Some(msg))
}

/// A string field as the message's text (None when absent).
fn text_of<'a, V: Input<'a>>(m: &V, key: Key) -> ReadResult<Content<'a>, V::Error> {
    Ok(match opt_str(m, key, key.as_str())? {
        Some(t) => Content::Text(t),
        None => Content::None,
    })
}

/// An apply-patch output's log, after `failed:` when its status says the patch failed (the
/// digest reads the verdict off the text).
fn patch_output<'a, V: Input<'a>>(m: &V, log: Cow<'a, str>) -> ReadResult<Content<'a>, V::Error> {
    Ok(match opt_str(m, Key::status, "status")?.as_deref() {
        Some("failed") => Content::Text(Cow::Owned(format!("failed: {log}"))),
        _ => Content::Text(log),
    })
}

/// A shell call's output: each chunk's stdout, then its stderr, then how it ended (`[Command
/// finished with exit code N]`, or `[Command timed out]`), chunks apart by a blank line.
fn shell_output<'a, V: Input<'a>>(m: &V) -> ReadResult<Content<'a>, V::Error> {
    let Some(chunks) = m.get(Key::output).src()? else {
        return Ok(Content::None);
    };
    let Some(items) = chunks.items().src()? else {
        return Err(invalid(
            "output",
            "a shell_call_output's output must be a list of chunks",
        ));
    };
    let mut text = String::new();
    for (k, c) in items.iter().enumerate() {
        let path = format!("output[{k}]");
        if k > 0 {
            text.push_str("\n\n");
        }
        for key in [Key::stdout, Key::stderr] {
            if let Some(s) = opt_str(c, key, format_args!("{path}.{}", key.as_str()))? {
                if !s.is_empty() {
                    text.push_str(s.trim_end_matches('\n'));
                    text.push('\n');
                }
            }
        }
        if let Some(o) = c.get(Key::outcome).src()? {
            match opt_str(&o, Key::kind, format_args!("{path}.outcome.type"))?.as_deref() {
                Some("exit") => {
                    let code = match o.get(Key::exit_code).src()? {
                        Some(n) => n.json_text().src()?,
                        None => "?".to_string(),
                    };
                    text.push_str(&format!("[Command finished with exit code {code}]"));
                }
                Some("timeout") => text.push_str("[Command timed out]"),
                _ => {}
            }
        }
    }
    Ok(Content::Text(Cow::Owned(text.trim_end().to_string())))
}

/// A computer call's screenshot: an image by URL (a data URL included) or by file id.
fn screenshot<'a, V: Input<'a>>(m: &V) -> ReadResult<Content<'a>, V::Error> {
    let Some(o) = m.get(Key::output).src()? else {
        return Ok(Content::None);
    };
    let part = match o.get(Key::image_url).src()? {
        Some(u) => image_url(&u, Detail::default(), "output.image_url")?,
        None => Part::Image(Image {
            source: ImageSource::File(opt_id(&o, Key::file_id, "output.file_id")?.unwrap_or("")),
            detail: Detail::default(),
        }),
    };
    Ok(Content::Parts(vec![part]))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::message::{Content, Part, Role};
    use crate::wire::read::{read_history, read_message};

    #[test]
    fn each_client_run_call_and_its_output_share_an_id() {
        let items = json!([
            {"type": "shell_call", "call_id": "s1", "action": {"commands": ["ls"]}, "status": "completed"},
            {"type": "shell_call_output", "call_id": "s1", "output": [
                {"stdout": "a.py\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]},
            {"type": "local_shell_call", "id": "x", "call_id": "l1", "action": {"type": "exec", "command": ["ls"], "env": {}}, "status": "completed"},
            {"type": "local_shell_call_output", "id": "l1", "output": "{\"output\": \"a.py\"}"},
            {"type": "apply_patch_call", "call_id": "p1", "operation": {"type": "update_file", "path": "a.py", "diff": "+x"}, "status": "completed"},
            {"type": "apply_patch_call_output", "call_id": "p1", "status": "failed", "output": "context not found"},
            {"type": "computer_call", "id": "c", "call_id": "c1", "action": {"type": "click", "x": 1, "y": 2}, "pending_safety_checks": [], "status": "completed"},
            {"type": "computer_call_output", "call_id": "c1", "output": {"type": "computer_screenshot", "image_url": "https://example.com/s.png"}},
            {"type": "program", "id": "g", "call_id": "g1", "code": "return 1", "fingerprint": "f"},
            {"type": "program_output", "id": "go", "call_id": "g1", "result": "1", "status": "completed"},
            {"type": "mcp_approval_request", "id": "m1", "server_label": "git", "name": "push", "arguments": "{}"},
            {"type": "mcp_approval_response", "approval_request_id": "m1", "approve": false, "reason": "not on main"}
        ]);
        let msgs = read_history(&&items).unwrap();
        for pair in msgs.chunks(2) {
            let (call, out) = (&pair[0], &pair[1]);
            assert_eq!(call.role, Role::Assistant);
            assert_eq!(out.role, Role::Tool);
            assert_eq!(
                Some(call.tool_calls[0].id),
                out.tool_call_id,
                "{:?}",
                call.item
            );
        }
        let text = |k: usize| match &msgs[k].content {
            Content::Text(t) => t.to_string(),
            other => panic!("{other:?}"),
        };
        assert_eq!(text(1), "a.py\n[Command finished with exit code 0]");
        assert_eq!(text(5), "failed: context not found");
        assert_eq!(text(11), "denied: not on main");
        assert_eq!(msgs[10].tool_calls[0].name, "push");
        assert!(matches!(msgs[7].parts(), [Part::Image(_)]));
        assert_eq!(msgs[0].item, Some("shell_call"));
    }

    #[test]
    fn a_client_run_item_without_its_id_is_an_error_naming_the_field() {
        for item in [
            json!({"type": "shell_call", "action": {"commands": ["ls"]}}),
            json!({"type": "local_shell_call_output", "output": "x"}),
            json!({"type": "mcp_approval_response", "approve": true}),
        ] {
            let err = format!("{:?}", read_message(&&item).unwrap_err());
            assert!(
                err.contains("call_id") || err.contains("id"),
                "{item}: {err}"
            );
        }
        let bad = json!({"type": "shell_call_output", "call_id": "s", "output": "text"});
        assert!(format!("{:?}", read_message(&&bad).unwrap_err()).contains("output"));
    }
}
