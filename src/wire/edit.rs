//! Edits in a format the bindings apply without knowing any format.
//!
//! The planner says what it wants changed in format-neutral terms ([`Change`]: this tool
//! result's text, this image, these arguments); the message's format writes it as an [`Edit`]:
//! the path to the value it replaces inside that message, in that format's own keys, and the
//! replacement as compact JSON in that format. Applying an edit is a copy-on-write assignment
//! along the path; no key is ever added (the last step names a key the message already has).

use crate::json_string::{json_string_len, push_json_string};
use crate::message::{ImageSource, Message, Part, ToolCall};

/// What an edit does at its path inside a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Replace the value at the path (its last step names an existing key) with this JSON.
    Set(String),
    /// Remove the list element or the field the path ends on (an SDK object's field is set to
    /// None: its class has no way to go without it).
    Remove,
    /// Insert this JSON into the list at the path, at `position`.
    Insert { position: usize, value: String },
    /// Move the `tool_result` blocks of the list at the path before its other blocks, each
    /// group in its order, once the message's other edits are made: Anthropic refuses a user
    /// turn with text before its results (`repair` only).
    ResultsFirst,
    /// Append the blocks of the list at the same path in caller message `from`, once that
    /// message's own edits are made, before any insertion; `from` itself goes (`repair` only).
    Append { from: usize },
}

/// One step of a path inside a message: a field or a list position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    Key(&'static str),
    Index(usize),
}

/// Replace the value at `path` inside message `message` with the JSON value `value`. An empty
/// path sets the message's own fields that `value`, an object, names (Ollama's native images
/// masked: `content` and `images` together).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub message: usize,
    pub path: Vec<Step>,
    /// Compact JSON text of the replacement.
    pub value: String,
}

/// Which tool call of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallAt {
    /// `message.tool_calls[j]` (OpenAI chat; a Responses `function_call` item is its own call 0).
    ToolCalls(usize),
    /// The tool-call block at this content position (Anthropic, Gemini, Bedrock).
    Part(usize),
}

/// Every tool call of `m` with where it sits: its call fields, then its call blocks.
pub fn calls_at<'m, 'a>(m: &'m Message<'a>) -> impl Iterator<Item = (CallAt, &'m ToolCall<'a>)> {
    let fields = m
        .tool_calls
        .iter()
        .enumerate()
        .map(|(j, c)| (CallAt::ToolCalls(j), c));
    let blocks = m.parts().iter().enumerate().filter_map(|(k, p)| match p {
        Part::ToolUse(c) => Some((CallAt::Part(k), c)),
        _ => None,
    });
    fields.chain(blocks)
}

/// What the planner wants changed in one message, whatever its format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The text of a tool result becomes `text`: the message's own result (`part: None`:
    /// OpenAI `tool` message, Responses `function_call_output`) or the result block at content
    /// position `part` (Anthropic `tool_result`, Gemini `functionResponse`, Bedrock
    /// `toolResult`).
    ResultText { part: Option<usize>, text: String },
    /// The text part `inner` of the result block at content position `part` becomes `text`:
    /// a long result's middle cut beside the images it holds (a screenshot kept), in the
    /// formats whose result blocks hold lists of blocks (Anthropic, Bedrock).
    ResultPartText {
        part: usize,
        inner: usize,
        text: String,
    },
    /// The image part (or the media part: a document, a recording, `Part::masked_media`) at
    /// content position `part` becomes a text part saying `text`.
    Image { part: usize, text: String },
    /// The arguments of a call become `json` (valid JSON text of the same root type).
    Arguments { call: CallAt, json: String },
    /// The plain-text content of a message that is not a tool result (a text agent's
    /// observation sent as a user message) becomes `text`. Written only where the content is
    /// a string, so the message keeps its shape.
    Text { text: String },
    /// The text block at content position `part` of a message of several blocks (an
    /// assistant's long text beside its `tool_use`) becomes `text`. Written by the formats
    /// whose text blocks are `{"text": ...}` objects of the content list.
    PartText { part: usize, text: String },
}

/// What a format writer returns: the path and the replacement's JSON text.
pub(crate) type Written = (Vec<Step>, String);

/// The edit of text block `part` of a message whose blocks are `{"text": ...}` objects of its
/// `content` list (Anthropic, Bedrock) to `text` (`Change::PartText`).
pub(crate) fn content_text_block(msg: &Message<'_>, part: usize, text: &str) -> Option<Written> {
    let Some(Part::Text(old)) = msg.parts().get(part) else {
        return None;
    };
    if_smaller_string(
        old,
        vec![Step::Key("content"), Step::Index(part), Step::Key("text")],
        json_string(text),
    )
}

/// The edit of text block `inner` of the result block at content position `part`
/// (`Change::ResultPartText`) to `text`, in the formats whose result blocks hold a `content`
/// list of `{"text": ...}` blocks, under the block itself (Anthropic: `wrapper` None) or
/// under its one key (Bedrock's `toolResult`).
pub(crate) fn result_block_text(
    msg: &Message<'_>,
    (part, inner): (usize, usize),
    wrapper: Option<&'static str>,
    text: &str,
) -> Option<Written> {
    let Part::ToolResult { content, .. } = msg.parts().get(part)? else {
        return None;
    };
    let Part::Text(old) = content.get(inner)? else {
        return None;
    };
    let mut path = vec![Step::Key("content"), Step::Index(part)];
    path.extend(wrapper.map(Step::Key));
    path.extend([Step::Key("content"), Step::Index(inner), Step::Key("text")]);
    if_smaller_string(old, path, json_string(text))
}

/// A JSON string literal.
pub(crate) fn json_string(text: &str) -> String {
    let mut s = String::with_capacity(text.len() + 2);
    push_json_string(&mut s, text);
    s
}

/// A JSON object with one string field: `{"<key>":"<text>"}`.
pub(crate) fn object_of(fields: &[(&str, &str)]) -> String {
    let mut s = String::from("{");
    for (i, (k, v)) in fields.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        push_json_string(&mut s, k);
        s.push(':');
        push_json_string(&mut s, v);
    }
    s.push('}');
    s
}

/// A list holding one `{"text": ...}` part: the plain text of a Gemini `parts` list or a
/// Bedrock `content` list.
pub(crate) fn one_text_part(text: &str) -> String {
    format!("[{}]", object_of(&[("text", text)]))
}

/// A message of a role and one text part in the list under `key`: `{"role", key: [{"text"}]}`
/// (Gemini `parts`, Bedrock `content`).
pub(crate) fn role_and_text_list(role: &str, key: &str, text: &str) -> String {
    let mut s = String::from("{\"role\":");
    push_json_string(&mut s, role);
    s.push(',');
    push_json_string(&mut s, key);
    s.push(':');
    s.push_str(&one_text_part(text));
    s.push('}');
    s
}

/// `Change::Text` where a message's text lives at `key`: string content becomes the new string;
/// content made only of text parts becomes one text, written by `list` as that format's list of
/// one text part, or as a plain string when `list` is `None` (formats whose content may be a
/// string). Anything else in the content (an image, a tool block) and nothing is written.
pub(crate) fn plain_text(
    msg: &Message<'_>,
    key: &'static str,
    text: &str,
    list: Option<&dyn Fn(&str) -> String>,
) -> Option<Written> {
    match &msg.content {
        crate::message::Content::Text(old) => {
            if_smaller_string(old, vec![Step::Key(key)], json_string(text))
        }
        crate::message::Content::Parts(parts) if !parts.is_empty() => {
            let value = match list {
                Some(list) => list(text),
                None => json_string(text),
            };
            if_smaller_than(
                text_parts_bytes(parts)?,
                || parts_bytes(parts, false, json_string_len),
                vec![Step::Key(key)],
                value,
            )
        }
        _ => None,
    }
}

/// A lower bound on the compact JSON bytes of a string value `text`: its UTF-8 and two quotes
/// (escapes only add; O(1), where the exact size would scan a large tool output).
pub(crate) fn string_bytes(text: &str) -> usize {
    text.len() + 2
}

/// A lower bound on the JSON bytes of a tool result's nested content, whatever its format wrote
/// (a string, text blocks, JSON blocks): each text is at least its own length plus two.
/// `None` when the content holds anything but text (an image, a server tool's structured
/// result): such a result is not replaced by a plain text.
pub(crate) fn text_parts_bytes(parts: &[Part<'_>]) -> Option<usize> {
    parts_bytes(parts, false, |t| t.len() + 2)
}

/// A lower bound on the JSON bytes of a tool result's content of text, image and media blocks
/// (a screenshot or a PDF a tool returned is old tool output like its text); None for any
/// other block.
pub(crate) fn result_parts_bytes(parts: &[Part<'_>]) -> Option<usize> {
    parts_bytes(parts, true, |t| t.len() + 2)
}

/// The bytes of `parts` with each text priced by `text_bytes` (its lower bound, or its exact
/// escaped size); images count with `images` (their smallest block and source), else they and
/// any other block give None.
fn parts_bytes(
    parts: &[Part<'_>],
    images: bool,
    text_bytes: impl Fn(&str) -> usize,
) -> Option<usize> {
    // The smallest image block of any format: `{"image":{}}` and its source.
    const IMAGE_MIN: usize = 12;
    parts
        .iter()
        .map(|p| match p {
            Part::Text(t) => Some(text_bytes(t)),
            Part::Image(img) if images => Some(IMAGE_MIN + source_bytes(&img.source)),
            // (A document or a recording beside them: its whole block's JSON.)
            Part::Opaque { wire_chars, .. } if images && p.masked_media().is_some() => {
                Some(*wire_chars)
            }
            _ => None,
        })
        .sum()
}

/// `if_smaller` for a tool result's content `parts` (`result_parts_bytes`, then its texts'
/// exact escaped sizes). None when the content holds other blocks. A content holding images
/// is replaced whatever its bytes, as one image is (`image_replaced`): a screenshot is priced
/// by its pixels, and the planner writes the edit only where it saves tokens. A bytes test
/// kept every screenshot a computer-use tool returned as a URL or a small PNG.
pub(crate) fn if_smaller_parts(
    parts: &[Part<'_>],
    path: Vec<Step>,
    value: String,
) -> Option<Written> {
    let old_min = result_parts_bytes(parts)?;
    if parts.iter().any(Part::is_media) {
        return Some((path, value));
    }
    if_smaller_than(
        old_min,
        || parts_bytes(parts, true, json_string_len),
        path,
        value,
    )
}

/// A lower bound on the JSON bytes of an image's source value (`0` when it has none).
pub(crate) fn source_bytes(src: &ImageSource<'_>) -> usize {
    match src {
        ImageSource::Base64(s) | ImageSource::Url(s) | ImageSource::File(s) if s.is_empty() => 0,
        ImageSource::Base64(s) | ImageSource::Url(s) | ImageSource::File(s) => s.len() + 2,
        ImageSource::Bytes(b) => b.len().div_ceil(3) * 4 + 2,
    }
}

/// `Some(written)` only when the replacement is smaller than the lower bound of what it
/// replaces: an edit never grows a request.
pub(crate) fn if_smaller(old_min: usize, path: Vec<Step>, value: String) -> Option<Written> {
    (value.len() < old_min).then_some((path, value))
}

/// Part `part` of `msg`, an image, replaced by a text block, whatever their sizes: an image is
/// priced by its pixels (a 60-byte URL costs hundreds of tokens) and its placeholder by its
/// words, and the edit is planned only where it saves tokens (`prune`). A bytes test kept a URL
/// image's "[image omitted]" in place of its recoverable placeholder (longer than the URL), and
/// the URL was lost to recall. A document or a recording (`Part::masked_media`) likewise.
/// None when the part is neither.
pub(crate) fn image_replaced(
    msg: &Message<'_>,
    part: usize,
    path: Vec<Step>,
    value: String,
) -> Option<Written> {
    msg.parts()
        .get(part)
        .is_some_and(Part::is_media)
        .then_some((path, value))
}

/// `if_smaller` for a string value `old` (`string_bytes`, then its exact escaped size).
pub(crate) fn if_smaller_string(old: &str, path: Vec<Step>, value: String) -> Option<Written> {
    if_smaller_than(
        string_bytes(old),
        || Some(json_string_len(old)),
        path,
        value,
    )
}

/// `if_smaller` against the O(1) lower bound `old_min` first (a placeholder for a large output
/// passes there), then, where the bound refuses, against `exact()`, the replaced value's
/// escaped size (O(bytes)). A text full of control characters (a test run's ANSI colours,
/// `\u001b` in JSON: 6 bytes for 1) cut to 88% of its tokens is larger than its raw bytes, though
/// smaller than what it replaces: the bound alone refused every cut of a 9,074-byte pytest output.
fn if_smaller_than(
    old_min: usize,
    exact: impl FnOnce() -> Option<usize>,
    path: Vec<Step>,
    value: String,
) -> Option<Written> {
    (value.len() < old_min || exact().is_some_and(|e| value.len() < e)).then_some((path, value))
}
