//! Bindings of recoverable folds (`crate::recall`): the fold ids of a plan's edits, the recall
//! tool's declaration, the calls of a model's message to it, its answer in that message's
//! format, and the page cut of an answer.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::messages::{Keep, Walker};
use crate::compaction::{PricedEdit, WireFormat};
use crate::message::{Content, Message, Part};
use crate::recall::{
    fold_of, image_result_json, page, recalled_layout, result_json, tool_json, RecalledSource,
    RECALL_TOOL,
};

/// `(id, removed text)` of every edit that removes recoverable text.
pub(crate) fn folds(ms: &[Message<'_>], edits: &[PricedEdit]) -> Vec<(String, String)> {
    edits
        .iter()
        .filter_map(|e| fold_of(&ms[e.edit.index()], &e.edit))
        .collect()
}

/// The stable short id of a text (`cf` + 12 hex digits of its hash).
#[pyfunction]
#[pyo3(signature = (text, /))]
fn fold_id(text: &str) -> String {
    crate::recall::fold_id(text)
}

/// The fold ids a text names (`id=cf...`; with `anywhere`, however written), in order,
/// without repeats.
#[pyfunction]
#[pyo3(signature = (text, /, *, anywhere = false))]
fn fold_ids_in(text: &str, anywhere: bool) -> Vec<String> {
    let ids = if anywhere {
        crate::recall::any_ids_in(text)
    } else {
        crate::recall::ids_in(text)
    };
    ids.into_iter().map(str::to_string).collect()
}

/// The recall tool's declaration in a format's tool list, as compact JSON.
#[pyfunction]
#[pyo3(signature = (*, format))]
fn recall_tool(format: &str) -> PyResult<String> {
    let f = WireFormat::parse(format).map_err(PyValueError::new_err)?;
    Ok(tool_json(f))
}

/// The calls of `message` to the recall tool: `(call id, arguments JSON)` each, read by the
/// core's readers whatever the format (a Responses `function_call` item is its own call).
#[pyfunction]
#[pyo3(signature = (message, /))]
fn recall_calls(py: Python<'_>, message: &Bound<'_, PyAny>) -> PyResult<Vec<(String, String)>> {
    let keep = Keep::new();
    let w = Walker::new(py, &keep);
    let m = w.message(message)?;
    let mut out: Vec<(String, String)> = m
        .tool_calls
        .iter()
        .filter(|c| c.name == RECALL_TOOL)
        .map(|c| (c.id.to_string(), c.arguments.to_string()))
        .collect();
    if let Content::Parts(ps) = &m.content {
        for p in ps {
            if let Part::ToolUse(c) = p {
                if c.name == RECALL_TOOL {
                    out.push((c.id.to_string(), c.arguments.to_string()));
                }
            }
        }
    }
    Ok(out)
}

/// The message answering recall call `call_id` of `message` with `text`, in `message`'s own
/// format (a chat `tool` message, a Responses `function_call_output` item, an Anthropic /
/// Bedrock user message with one result block, a Gemini user content with one
/// `functionResponse`), as compact JSON.
#[pyfunction]
#[pyo3(signature = (message, /, *, call_id, text))]
fn recall_result(
    py: Python<'_>,
    message: &Bound<'_, PyAny>,
    call_id: &str,
    text: &str,
) -> PyResult<String> {
    let keep = Keep::new();
    let w = Walker::new(py, &keep);
    let m = w.message(message)?;
    result_json(m.wire, call_id, RECALL_TOOL, text).ok_or_else(|| {
        PyValueError::new_err("a LangChain message: answer it with the history's dict format")
    })
}

/// One image of a stored original as the bindings pass it: `(kind, source, media type)`, kind
/// `"base64"` (source: the base64 payload), `"url"` or `"file"` (media type None).
type ImageTuple = (String, String, Option<String>);

/// The images `text` (a stored original) holds, read by `crate::recall::recalled_layout`
/// (`known_image`: the fold is known to be an image, so a lone URL or file id is one):
/// `(characters of text before them, [(kind, source, media type, width, height, start, end,
/// pages)])` with start and end in characters of `text` (width and height in pixels, None when
/// the header does not say them; kind `"document"` for a document's base64, with its pages
/// where its bytes say them), or None when it holds none.
#[pyfunction]
#[pyo3(signature = (text, /, *, known_image = false))]
#[allow(clippy::type_complexity)]
fn recall_images(
    text: &str,
    known_image: bool,
) -> Option<(
    usize,
    Vec<(
        String,
        String,
        Option<String>,
        Option<u32>,
        Option<u32>,
        usize,
        usize,
        Option<u32>,
    )>,
)> {
    let layout = recalled_layout(text, known_image)?;
    let images = layout
        .images
        .iter()
        .map(|img| {
            let (kind, source, media_type) = match img.source {
                RecalledSource::Base64 { media_type, data } => ("base64", data, Some(media_type)),
                RecalledSource::Url(u) => ("url", u, None),
                RecalledSource::File(f) => ("file", f, None),
                RecalledSource::Document { media_type, data } => {
                    ("document", data, Some(media_type))
                }
            };
            (
                kind.to_string(),
                source.to_string(),
                media_type.map(str::to_string),
                img.dims.map(|d| d.width),
                img.dims.map(|d| d.height),
                img.start,
                img.end,
                img.pages,
            )
        })
        .collect();
    Some((layout.text_end, images))
}

/// The message answering recall call `call_id` of `message` with `text` and `images` (as
/// `recall_images` gives them) as images, in `message`'s own format, as compact JSON; None
/// where that format's tool result cannot carry them (chat, a URL for Bedrock or Gemini).
#[pyfunction]
#[pyo3(signature = (message, /, *, call_id, text, images))]
fn recall_image_result(
    py: Python<'_>,
    message: &Bound<'_, PyAny>,
    call_id: &str,
    text: &str,
    images: Vec<ImageTuple>,
) -> PyResult<Option<String>> {
    let keep = Keep::new();
    let w = Walker::new(py, &keep);
    let m = w.message(message)?;
    let mut sources = Vec::with_capacity(images.len());
    for (kind, source, media_type) in &images {
        sources.push(match kind.as_str() {
            "base64" => RecalledSource::Base64 {
                media_type: media_type.as_deref().unwrap_or("image/png"),
                data: source,
            },
            "url" => RecalledSource::Url(source),
            "file" => RecalledSource::File(source),
            "document" => RecalledSource::Document {
                media_type: media_type.as_deref().unwrap_or("application/pdf"),
                data: source,
            },
            other => {
                return Err(PyValueError::new_err(format!(
                    "image kind must be 'base64', 'url', 'file' or 'document', got {other:?}"
                )))
            }
        });
    }
    Ok(image_result_json(
        m.wire,
        call_id,
        RECALL_TOOL,
        text,
        &sources,
    ))
}

/// One page of `text` from character `offset`, at most `max_tokens` estimated tokens:
/// `(page, end offset in characters, total characters)`.
#[pyfunction]
#[pyo3(signature = (text, /, *, offset, max_tokens, provider="openai", model=None))]
fn recall_page(
    text: &str,
    offset: usize,
    max_tokens: u32,
    provider: &str,
    model: Option<&str>,
) -> PyResult<(String, usize, usize)> {
    let est = super::estimator_args::estimator(provider, model)?;
    let (a, b, end) = page(text, offset, max_tokens.max(1), &est);
    Ok((text[a..b].to_string(), end, text.chars().count()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("RECALL_TOOL", RECALL_TOOL)?;
    m.add_function(wrap_pyfunction!(fold_id, m)?)?;
    m.add_function(wrap_pyfunction!(fold_ids_in, m)?)?;
    m.add_function(wrap_pyfunction!(recall_tool, m)?)?;
    m.add_function(wrap_pyfunction!(recall_calls, m)?)?;
    m.add_function(wrap_pyfunction!(recall_result, m)?)?;
    m.add_function(wrap_pyfunction!(recall_page, m)?)?;
    m.add_function(wrap_pyfunction!(recall_images, m)?)?;
    m.add_function(wrap_pyfunction!(recall_image_result, m)?)?;
    register_degrade(m)
}

/// The edit cutting the middle of `messages[index]` down to about `keep_tokens` (its head and
/// end kept; the marker names the fold id and the recall tool when `recoverable`): `((index,
/// path, value), id, whole text)`, or None when the message holds no text that can be cut.
#[pyfunction]
#[pyo3(signature = (messages, /, *, index, keep_tokens, provider="openai", model=None, recoverable=true, arguments=false))]
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
fn cut_middle<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
    index: usize,
    keep_tokens: u32,
    provider: &str,
    model: Option<&str>,
    recoverable: bool,
    arguments: bool,
) -> PyResult<Option<(super::prune::PlannedEdit<'py>, String, String)>> {
    let est = super::estimator_args::estimator(provider, model)?;
    let keep = Keep::new();
    let mut w = Walker::new(py, &keep);
    // Only the message cut is read (a message reads the same alone as in its history): the
    // tail fill cuts one message of a history of thousands.
    let items = Walker::snapshot(messages)?;
    let Some(item) = items.get(index) else {
        return Err(PyValueError::new_err(format!(
            "index {index} out of range for {} messages",
            items.len()
        )));
    };
    w.set_index(index);
    let m = w.message(item)?;
    let one = std::slice::from_ref(&m);
    let Some((edit, id, whole)) =
        crate::degrade::cut_middle(one, 0, keep_tokens, &est, recoverable, arguments)
    else {
        return Ok(None);
    };
    let (path, value) = edit.wire_edit(&m);
    let planned = super::prune::planned_edit(py, index, &path, value.as_deref())?;
    Ok(Some((planned, id, whole)))
}

pub fn register_degrade(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cut_middle, m)?)?;
    m.add_function(wrap_pyfunction!(tail_floor, m)?)?;
    Ok(())
}

/// `(task index, last user turn index, floor start, whether the last user turn also carries
/// tool results)` of a history (see `degrade::tail_floor`): a results turn with the user's
/// words beside them (Anthropic, Bedrock, Gemini) has its results cut like any tool output,
/// its words never.
#[pyfunction]
#[pyo3(signature = (messages, /))]
fn tail_floor(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
) -> PyResult<(Option<usize>, Option<usize>, usize, bool)> {
    let keep = Keep::new();
    let mut w = Walker::new(py, &keep);
    let ms = w.messages(messages)?;
    let (task, last_user, start) = crate::degrade::tail_floor(&ms);
    let results = last_user.is_some_and(|u| ms[u].result_ids().next().is_some());
    Ok((task, last_user, start, results))
}
