//! Bedrock Converse messages: `{"role", "content": [...]}` with blocks keyed by their kind:
//! `text`, `image`, `toolUse`, `toolResult`, `document`, `video`, `json` (inside results).
//!
//! Detection: a `toolUse` / `toolResult` / `image` block. Edits
//! (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ContentBlock.html): a
//! tool result's text is the `toolResult.content` list, replaced by `[{"text": ...}]`
//! (`ToolResultContentBlock`); an omitted image becomes `{"text": ...}`; shortened arguments
//! stay a JSON *object* at `toolUse.input`.

use std::borrow::Cow;

use super::anthropic::object_arguments;
use super::edit::role_and_text_list;
use super::edit::{
    if_smaller, image_bytes, object_of, one_text_part, plain_text, result_parts_bytes, CallAt,
    Change, Step, Written,
};
use super::input::{Input, Key, ReadResult, Src};
use super::read::{image_data, image_source, json_or_str, opaque, opt_id, Reader};
use super::Format;
use crate::message::{Detail, Image, ImageSource, Message, Part, ToolCall};

/// A Bedrock block, or `None` when `p` has none of Bedrock's block keys.
pub(crate) fn keyed_part<'a, V: Input<'a>>(
    r: &Reader,
    p: &V,
    path: &str,
) -> ReadResult<Option<Part<'a>>, V::Error> {
    if let Some(img) = p.get(Key::image).src()? {
        r.saw(Format::Bedrock);
        // `source`: `{"bytes"}` or `{"s3Location": {"uri"}}` (ImageSource in the API reference).
        let (bytes, s3) = match img.get(Key::source).src()? {
            Some(src) => (src.get(Key::bytes).src()?, src.get(Key::s3Location).src()?),
            None => (None, None),
        };
        let source = match (bytes, s3) {
            (Some(b), _) => image_data(&b)?.unwrap_or(ImageSource::Url("")),
            (None, Some(s3)) => ImageSource::File(
                opt_id(
                    &s3,
                    Key::uri,
                    format_args!("{path}.image.source.s3Location.uri"),
                )?
                .unwrap_or(""),
            ),
            (None, None) => image_source(Cow::Borrowed("")),
        };
        return Ok(Some(Part::Image(Image {
            source,
            detail: Detail::Auto,
        })));
    }
    if let Some(u) = p.get(Key::toolUse).src()? {
        r.saw(Format::Bedrock);
        let id = opt_id(&u, Key::toolUseId, format_args!("{path}.toolUse.toolUseId"))?;
        let name = opt_id(&u, Key::name, format_args!("{path}.toolUse.name"))?;
        let arguments = match u.get(Key::input).src()? {
            Some(i) => json_or_str(&i)?,
            None => Cow::Borrowed("{}"),
        };
        return Ok(Some(Part::ToolUse(ToolCall {
            id: id.unwrap_or(""),
            name: name.unwrap_or(""),
            arguments,
        })));
    }
    if let Some(t) = p.get(Key::toolResult).src()? {
        r.saw(Format::Bedrock);
        let id = opt_id(
            &t,
            Key::toolUseId,
            format_args!("{path}.toolResult.toolUseId"),
        )?;
        let content = match t.get(Key::content).src()? {
            Some(c) => r.nested_parts(&c, &format!("{path}.toolResult.content"))?,
            None => Vec::new(),
        };
        return Ok(Some(Part::ToolResult {
            tool_use_id: id.unwrap_or(""),
            content,
        }));
    }
    if let Some(j) = p.get(Key::json).src()? {
        return Ok(Some(Part::Text(Cow::Owned(j.json_text().src()?))));
    }
    for (key, kind) in [(Key::document, "document"), (Key::video, "video")] {
        if let Some(d) = p.get(key).src()? {
            r.saw(Format::Bedrock);
            return Ok(Some(opaque(kind, &d)?));
        }
    }
    Ok(None)
}

// The smallest Bedrock image block, without its bytes.
const IMAGE_SKELETON: &str = r#"{"image":{}}"#;

/// An edit of a Bedrock message.
pub(crate) fn write(msg: &Message<'_>, change: &Change) -> Option<Written> {
    match change {
        Change::ResultText {
            part: Some(k),
            text,
        } => {
            let Part::ToolResult { content, .. } = msg.parts().get(*k)? else {
                return None;
            };
            let value = one_text_part(text);
            if_smaller(
                result_parts_bytes(content)?,
                vec![
                    Step::Key("content"),
                    Step::Index(*k),
                    Step::Key("toolResult"),
                    Step::Key("content"),
                ],
                value,
            )
        }
        Change::Image { part, text } => if_smaller(
            image_bytes(msg, *part, IMAGE_SKELETON)?,
            vec![Step::Key("content"), Step::Index(*part)],
            text_block_json(text),
        ),
        Change::Text { text } => plain_text(msg, "content", text, Some(&one_text_part)),
        Change::Arguments {
            call: CallAt::Part(k),
            json,
        } => object_arguments(
            msg,
            *k,
            json,
            vec![
                Step::Key("content"),
                Step::Index(*k),
                Step::Key("toolUse"),
                Step::Key("input"),
            ],
        ),
        _ => None,
    }
}

/// A text message, `{"role", "content": [{"text"}]}`, as compact JSON.
pub(crate) fn text_message_json(role: &str, text: &str) -> String {
    role_and_text_list(role, "content", text)
}

/// A text content block, `{"text"}` (Converse blocks carry no type), as compact JSON.
pub(crate) fn text_block_json(text: &str) -> String {
    object_of(&[("text", text)])
}
