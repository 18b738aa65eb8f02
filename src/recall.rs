//! Recoverable folds: what a compaction removes is kept under a stable short id, and the text
//! left in its place names that id and says what was there, so a model can ask for it back
//! with the recall tool.
//!
//! The core owns the id (a hash of the removed text), the placeholder (tool, size, error,
//! the identifiers and paths it held), the page cut of a recall answer, and (through each
//! format's file in `wire/`) how the recall tool is declared and answered. The bindings only
//! move the removed text into a store.

use std::borrow::Cow;

use crate::char_cut::{head_bytes, tail_bytes};
use crate::estimate::Estimator;
use crate::mask_edit::MaskEdit;
use crate::message::{Content, ImageSource, Message, Part};
use crate::prune::group_sep;
use crate::tool_outcome::{self, Producer};
use crate::wire::edit::{CallAt, Change};
use crate::wire::write_edit as write;
use crate::wire::{anthropic, bedrock, gemini, openai_chat, openai_responses, WireFormat};
use rustc_hash::FxHashSet;

/// The recall tool's name, as declared in every format.
pub const RECALL_TOOL: &str = "contextfold_recall";

/// What the recall tool says it does (the model reads this).
pub const RECALL_DESCRIPTION: &str = "Restore content that contextfold folded out of this \
conversation to save context. Call it with the id a placeholder names ([folded ... id=...]); \
long content comes back in pages: call again with the offset the answer gives.";

/// The recall tool's parameters as JSON Schema (compact JSON).
pub const RECALL_SCHEMA: &str = r#"{"type":"object","properties":{"id":{"type":"string","description":"The id a contextfold placeholder names."},"offset":{"type":"integer","minimum":0,"description":"Character offset to start from (0: the beginning)."},"max_tokens":{"type":"integer","minimum":1,"description":"Upper bound of the page in tokens."}},"required":["id"]}"#;

/// A placeholder stays within this many estimated tokens (the issue's ~64).
pub const PLACEHOLDER_MAX_TOKENS: f64 = 64.0;

/// How many identifiers and paths a placeholder names at most. A masked output's mentions are
/// all a new process merging a summary it did not write knows of it: with 5, a reservation's
/// placeholder named its airports, its id and its user and none of its four flight numbers
/// (held-out airline dialogue task45-trial0). 8 (with exact identifiers first, `mentions`):
/// agent loops with a new Compactor per compaction in a new process kept 845 -> 855 facts of
/// the three held-out and main probe sets; `tools/future_report.py` tau-bench 1,187 -> 1,195
/// (loop 1,218 -> 1,225), SWE 4,614 -> 4,613 (loop 4,605 -> 4,608).
const MENTIONS: usize = 8;

/// Longest identifier a placeholder quotes (characters); longer ones are cut.
const MENTION_MAX_CHARS: usize = 48;

/// Prefix of every id: tells a fold id apart from any other token in a text.
pub const ID_PREFIX: &str = "cf";

/// The stable short id of `text`: `cf` + 12 hex digits of its 64-bit FNV-1a hash. Identical
/// text gets the same id in every process and version (a placeholder folded again keeps it).
pub fn fold_id(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{ID_PREFIX}{:012x}", h >> 16)
}

/// The fold ids a text names (`id=cf...` as placeholders and summaries write them), in order,
/// without repeats.
pub fn ids_in(text: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    // (Repeats are found by a set: a tool output of 200,000 id-shaped words, each checked
    // against the list so far, took 20 s.)
    let mut seen: FxHashSet<&str> = FxHashSet::default();
    let needle = "id=cf";
    let mut from = 0;
    while let Some(k) = text[from..].find(needle) {
        let start = from + k + 3;
        let end = start + 2 + 12;
        if let Some(id) = text.get(start..end) {
            if id[2..].bytes().all(|b| b.is_ascii_hexdigit()) && seen.insert(id) {
                out.push(id);
            }
        }
        from = start;
    }
    out
}

/// Every fold id a text holds, however written (`id=cf...` in a placeholder or summary, the
/// recall tool's argument in a call's cleared arguments): `cf` and 12 lower-case hex digits
/// standing as a word of their own. In order, without repeats.
pub fn any_ids_in(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut out: Vec<&str> = Vec::new();
    let mut seen: FxHashSet<&str> = FxHashSet::default();
    for k in memchr::memmem::find_iter(b, ID_PREFIX.as_bytes()) {
        let end = k + ID_PREFIX.len() + 12;
        if end > b.len()
            || (k > 0 && word(b[k - 1]))
            || b.get(end).is_some_and(|&c| word(c))
            || !b[k + 2..end]
                .iter()
                .all(|&c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
        {
            continue;
        }
        // (ASCII throughout, so these are char boundaries.)
        let id = &text[k..end];
        if seen.insert(id) {
            out.push(id);
        }
    }
    out
}

/// Bytes of a text read at each end when a placeholder describes it: tools print what matters
/// (the command, the error, the summary line) first and last, and a bound keeps the cost of a
/// placeholder independent of the output's size.
const SCAN_BYTES: usize = 2_048;

/// The first and last [`SCAN_BYTES`] of `text` (all of it when shorter), each ending (and
/// starting) between words where it can: a cut inside one named a piece of it (`ParseEr` of
/// `ParseError` at byte 2,048).
fn ends(text: &str) -> (&str, &str) {
    if text.len() <= 2 * SCAN_BYTES {
        return (text, "");
    }
    let between = |c: char| c.is_whitespace() || ",;:\"'()[]{}<>".contains(c);
    let head = head_bytes(text, SCAN_BYTES);
    let head = match head.rfind(between) {
        Some(i) if i > 0 => &head[..i],
        _ => head,
    };
    let tail = tail_bytes(text, SCAN_BYTES);
    let tail = match tail.find(between) {
        Some(i) => &tail[i..],
        None => tail,
    };
    (head, tail)
}

/// The identifiers and paths `text` holds, best first by the identifier index's own ranking
/// (`identifier_index::Collector`: errors, paths, ids, a JSON record's values, quantities before
/// code symbols; frequent and late before rare and early), read from its first and last
/// [`SCAN_BYTES`], at most `k`, each at most [`MENTION_MAX_CHARS`] characters. Deterministic.
///
/// The index reads a JSON record's values, not its keys: a word-shape reading named
/// `first_name, last_name, certificate_7473723` for a user profile and `flight_number,
/// reservation_id, user_id` for a booking, each key counted once per record.
pub fn mentions(text: &str, k: usize) -> Vec<String> {
    use crate::identifier_index::Kind;
    let (head, tail) = ends(text);
    let mut c = crate::identifier_index::Collector::default();
    c.scan(head, 1.0, 0.5);
    if !tail.is_empty() {
        c.scan(tail, 1.0, 1.0);
    }
    // Exact identifiers before a record's values and figures, whatever their counts: a
    // booking repeats its airports in every segment, and its flight numbers once each.
    let mut ranked = c.ranked();
    ranked.sort_by_key(|id| {
        !matches!(
            id.kind,
            Kind::Error | Kind::Path | Kind::Url | Kind::Id | Kind::Hash | Kind::Issue
        )
    });
    ranked
        .into_iter()
        .take(k)
        .map(|id| {
            let w = id.text;
            if w.chars().count() > MENTION_MAX_CHARS {
                let cut: String = w.chars().take(MENTION_MAX_CHARS - 1).collect();
                format!("{cut}…")
            } else {
                w
            }
        })
        .collect()
}

/// How a placeholder introduces the identifiers it names (read back by the identifier index).
pub const MENTIONS_SAID: &str = "; mentions ";

/// Characters a masked output's placeholder spends on what it mentions at most.
const MENTIONS_SAID_MAX_CHARS: usize = 160;

/// Tokens a masked output's placeholder spends on what it mentions at most, priced as o200k
/// prices them (a non-recoverable stand-in is written without the history's estimator): with
/// the stand-in's own ~25 tokens, within the ~64 a placeholder takes. 160 characters of dense
/// ids (`credit_card_1245537`, eight of them) came to ~60 tokens, a profile's placeholder to 84.
const MENTIONS_SAID_MAX_TOKENS: f64 = 36.0;

/// `"; mentions a, b, c"`: the identifiers a masked output's placeholder names (those of
/// [`mentions`], read from the tool's printed body), dropped from the end to stay within
/// [`MENTIONS_SAID_MAX_CHARS`]; empty when it names none.
pub fn mentions_said(original: &str) -> String {
    let o = tool_outcome::read(original);
    static EST: std::sync::OnceLock<Estimator> = std::sync::OnceLock::new();
    let est = EST.get_or_init(|| Estimator::new(crate::provider::Provider::OpenAI, "gpt-4o"));
    let mut names = mentions(&o.body, MENTIONS);
    loop {
        if names.is_empty() {
            return String::new();
        }
        let said = format!("{MENTIONS_SAID}{}", names.join(", "));
        if said.len() <= MENTIONS_SAID.len() + MENTIONS_SAID_MAX_CHARS
            && est.text(&said) <= MENTIONS_SAID_MAX_TOKENS
        {
            return said;
        }
        names.pop();
    }
}

/// The one-line stand-in of a folded piece: what it was (`what`: "tool output", "tool input",
/// "image", "observation", "messages"), of which tool, its size, whether it held an error
/// (`marked_error`: the provider's own flag, Anthropic `is_error` / Bedrock `status: "error"`;
/// else its verdict or words, read as `producer` printed it: `ToolOutcome::failure_by`), what
/// it mentions, and the id to recall it by. At most
/// [`PLACEHOLDER_MAX_TOKENS`] tokens (mentions are dropped from the end until it fits).
#[allow(clippy::too_many_arguments)]
pub fn placeholder(
    est: &Estimator,
    what: &str,
    tool: Option<&str>,
    tokens: u32,
    original: &str,
    marked_error: bool,
    producer: &Producer<'_>,
    id: &str,
) -> String {
    let of = match tool {
        Some(t) if !t.is_empty() => format!(" of {t}"),
        _ => String::new(),
    };
    // What the run printed, read once: its verdict, and the words mentions are read from
    // (inside a JSON envelope, its escaped newlines would glue two lines' words into one).
    let (error, mut names) = if what == "image" || what.starts_with("document") {
        ("", Vec::new())
    } else {
        let o = tool_outcome::read(original);
        (
            if marked_error || o.failure_by(producer) {
                ", held an error"
            } else {
                ""
            },
            mentions(&o.body, MENTIONS),
        )
    };
    loop {
        let said = if names.is_empty() {
            String::new()
        } else {
            format!("{MENTIONS_SAID}{}", names.join(", "))
        };
        let text = format!(
            "[folded {what}{of}, ~{} tokens{error}{said}; id={id}, {RECALL_TOOL} restores it]",
            group_sep(tokens as usize)
        );
        if names.is_empty() || est.text(&text) <= PLACEHOLDER_MAX_TOKENS {
            return text;
        }
        names.pop();
    }
}

/// The text an edit removes from its message, as the recall tool gives it back: a tool
/// result's text (its text blocks joined by newlines), an observation's text, a call's
/// arguments (JSON text), an image's source (URL or base64). `None` for edits that remove
/// nothing recoverable (thinking dropped whole).
pub fn original<'m>(m: &'m Message<'_>, e: &MaskEdit) -> Option<Cow<'m, str>> {
    let MaskEdit::Change { change, .. } = e else {
        return None;
    };
    let joined = |ps: &'m [Part<'_>]| result_original(ps);
    match change {
        Change::ResultText { part: None, .. } | Change::Text { .. } => match &m.content {
            Content::Text(t) => Some(Cow::Borrowed(t.as_ref())),
            Content::Parts(ps) => joined(ps),
            Content::None => None,
        },
        Change::ResultText { part: Some(k), .. } => match m.parts().get(*k)? {
            Part::ToolResult { content, .. } => joined(content),
            _ => None,
        },
        Change::PartText { part, .. } => match m.parts().get(*part)? {
            Part::Text(t) => Some(Cow::Borrowed(t.as_ref())),
            _ => None,
        },
        Change::ResultPartText { part, inner, .. } => match m.parts().get(*part)? {
            Part::ToolResult { content, .. } => match content.get(*inner)? {
                Part::Text(t) => Some(Cow::Borrowed(t.as_ref())),
                _ => None,
            },
            _ => None,
        },
        // Ollama's native images masked together: one original restores one image, so several
        // keep their plain placeholder.
        Change::Image { part, .. }
            if m.images_from == Some(*part) && m.parts().len() > *part + 1 =>
        {
            None
        }
        Change::Image { part, .. } => match m.parts().get(*part)? {
            // A document masked alone: its payload as sent (a `data:` URL kept whole).
            p @ Part::Opaque { .. } => document_payload(p).map(|d| d.base64()),
            Part::Image(img) => match img.source {
                ImageSource::Base64(t) | ImageSource::Url(t) | ImageSource::File(t) => {
                    Some(Cow::Borrowed(t))
                }
                // (Bedrock's and the SDKs' raw bytes: kept as their base64, as the recall tool
                // answers in text.)
                ImageSource::Bytes(b) => Some(Cow::Owned(crate::image::encode(b))),
            },
            _ => None,
        },
        Change::Arguments { call, .. } => match call {
            CallAt::ToolCalls(j) => m
                .tool_calls
                .get(*j)
                .map(|c| Cow::Borrowed(c.arguments.as_ref())),
            CallAt::Part(k) => match m.parts().get(*k)? {
                Part::ToolUse(c) => Some(Cow::Borrowed(c.arguments.as_ref())),
                _ => None,
            },
        },
    }
}

/// The payload a document part keeps (`Part::Opaque::payload`), when it is a document that
/// holds one: what a fold of it stores and gives back.
pub(crate) fn document_payload<'p, 'a>(
    p: &'p Part<'a>,
) -> Option<&'p crate::message::MediaPayload<'a>> {
    match p {
        Part::Opaque {
            media: crate::message::MediaKind::Document,
            payload: Some(d),
            ..
        } => Some(d),
        _ => None,
    }
}

/// How a stored original introduces a document's payload (`[document, application/pdf,
/// base64]`), its MIME type said so that a payload sent as raw bytes or bare base64 (Bedrock's
/// `format: "pdf"`) is given back as the same type.
const DOCUMENT_LINE: (&str, &str) = ("[document, ", ", base64]");

/// A tool result's content as the recall tool gives it back: its texts joined by newlines, then
/// each image it held (a computer-use tool's screenshot) as a line saying so and its source
/// (base64 or URL) on the next, then each document it held (a PDF a tool returned) likewise
/// (`[document, <MIME type>, base64]`, then its payload as sent), so that masking the result
/// loses nothing for good.
fn result_original<'m>(parts: &'m [Part<'_>]) -> Option<Cow<'m, str>> {
    let mut images = parts.iter().filter_map(|p| match p {
        Part::Image(img) => Some(img),
        _ => None,
    });
    let first = images.next();
    let mut documents = parts.iter().filter_map(document_payload).peekable();
    if first.is_none() && documents.peek().is_none() {
        return crate::message::joined_texts(parts);
    }
    let mut out = crate::message::joined_texts(parts).map_or_else(String::new, Cow::into_owned);
    for img in first.into_iter().chain(images) {
        if !out.is_empty() {
            out.push('\n');
        }
        match img.source {
            ImageSource::Base64(t) => {
                out.push_str("[image, base64]\n");
                out.push_str(t);
            }
            ImageSource::Url(t) => {
                out.push_str("[image, url]\n");
                out.push_str(t);
            }
            ImageSource::File(t) => {
                out.push_str("[image, file]\n");
                out.push_str(t);
            }
            ImageSource::Bytes(b) => {
                out.push_str("[image, base64]\n");
                out.push_str(&crate::image::encode(b));
            }
        }
    }
    for d in parts.iter().filter_map(document_payload) {
        if !out.is_empty() {
            out.push('\n');
        }
        let media_type = d
            .media_type()
            .unwrap_or_else(|| "application/octet-stream".into());
        out.push_str(DOCUMENT_LINE.0);
        out.push_str(&media_type);
        out.push_str(DOCUMENT_LINE.1);
        out.push('\n');
        out.push_str(&d.base64());
    }
    Some(Cow::Owned(out))
}

/// A tool result's tokens as its message prices them: the texts as text, each image by its
/// pixel size (never its base64 length), each document, recording or video by its pages or
/// seconds (`Estimator::part`).
fn result_tokens(est: &Estimator, parts: &[Part<'_>]) -> u32 {
    let text = crate::message::joined_texts(parts).map_or(0.0, |t| est.text(&t));
    let images: u32 = parts
        .iter()
        .map(|p| match p {
            Part::Image(img) => est.image(img),
            p if p.masked_media().is_some() => est.part(p).ceil() as u32,
            _ => 0,
        })
        .sum();
    text.ceil() as u32 + images
}

/// The id to store an edit's removed text under, and that text.
pub fn fold_of(m: &Message<'_>, e: &MaskEdit) -> Option<(String, String)> {
    let text = original(m, e)?;
    Some((fold_id(&text), text.into_owned()))
}

/// Shrunk arguments that name the fold: an object gains `"contextfold_recall": id` (still
/// valid JSON of the same root type); other roots stay as they are (the id is then only in
/// the store, found by the call's result placeholder).
pub(crate) fn arguments_with_id(json: &str, id: &str) -> String {
    let t = json.trim_end();
    if let Some(body) = t.strip_suffix('}') {
        let body = body.trim_end();
        let sep = if body.ends_with('{') { "" } else { "," };
        format!("{body}{sep}\"{RECALL_TOOL}\":\"{id}\"}}")
    } else {
        json.to_string()
    }
}

/// What a placeholder says was folded: `what`, and the images and documents of `parts` that
/// went with it (and that the fold keeps).
fn with_images<'w>(what: &'w str, parts: &[Part<'_>]) -> Cow<'w, str> {
    let images = parts.iter().filter(|p| matches!(p, Part::Image(_))).count();
    let documents: Vec<&Part<'_>> = parts
        .iter()
        .filter(|p| document_payload(p).is_some())
        .collect();
    if images + documents.len() == 0 {
        return Cow::Borrowed(what);
    }
    let images = match images {
        0 => String::new(),
        1 => " and 1 image".to_string(),
        n => format!(" and {n} images"),
    };
    let documents = match documents.len() {
        0 => String::new(),
        n => format!(
            " and {n} document{}{}",
            if n == 1 { "" } else { "s" },
            pages_said(&documents)
        ),
    };
    Cow::Owned(format!("{what}{images}{documents}"))
}

/// `" (3 pages)"`: the pages of `documents` together, as their bytes say them (the plain mask
/// says them so: `[document omitted: 3 pages]`); empty when one does not say.
fn pages_said(documents: &[&Part<'_>]) -> String {
    let pages: Option<u32> = documents
        .iter()
        .map(|p| match p {
            Part::Opaque { units, .. } => *units,
            _ => None,
        })
        .sum();
    match pages {
        Some(n) => format!(
            " ({} page{})",
            group_sep(n as usize),
            if n == 1 { "" } else { "s" }
        ),
        None => String::new(),
    }
}

/// The placeholder of a text an edit removed that no call produced (an observation, a text
/// block), naming `id`.
fn plain(est: &Estimator, what: &str, tokens: u32, text: &str, id: &str) -> String {
    placeholder(est, what, None, tokens, text, false, &Producer::Call, id)
}

/// The same edits, each placeholder rewritten to name the fold's id and what it held (the
/// edit is dropped when its message's format cannot write the new text smaller). `calls`:
/// which call each result answers (its tool's name; what printed an output an edit replaces,
/// a shell command's run or a file read, whose words the output holds).
pub fn recoverable_edits(
    msgs: &[Message<'_>],
    est: &Estimator,
    costs: &[u32],
    calls: &crate::call_pairs::CallPairs<'_, '_>,
    edits: Vec<MaskEdit>,
) -> Vec<MaskEdit> {
    let mut out = Vec::with_capacity(edits.len());
    for e in edits {
        let i = e.index();
        let m = &msgs[i];
        // (An old screenshot of a computer call becomes a pixel: no text of it can name a
        // fold the model would recall.)
        if crate::wire::responses_tool_items::is_screenshot(m) {
            out.push(e);
            continue;
        }
        let Some(text) = original(m, &e) else {
            out.push(e);
            continue;
        };
        let id = fold_id(&text);
        // The message's price when the edit replaces its whole text (known: no scan of a
        // long output); a block's own estimate otherwise.
        let tokens = match &e {
            MaskEdit::Change {
                change: Change::ResultText { part: None, .. } | Change::Text { .. },
                ..
            } => costs[i],
            MaskEdit::Change {
                change: Change::ResultText { part: Some(k), .. },
                ..
            } => match m.parts().get(*k) {
                Some(Part::ToolResult { content, .. }) => result_tokens(est, content),
                _ => est.text(&text).ceil() as u32,
            },
            // An image by its pixels, as its message prices it: its source's length said a
            // 255-token screenshot was ~102,324 tokens, and a URL image ~10.
            MaskEdit::Change {
                change: Change::Image { part, .. },
                ..
            } => match m.parts().get(*part) {
                Some(Part::Image(img)) => est.image(img),
                // A document by its pages, as its message prices it (never its base64).
                Some(p @ Part::Opaque { .. }) => est.part(p).ceil() as u32,
                _ => est.text(&text).ceil() as u32,
            },
            _ => est.text(&text).ceil() as u32,
        };
        let MaskEdit::Change { change, .. } = &e else {
            out.push(e);
            continue;
        };
        let new = match change {
            Change::ResultText { part, .. } => {
                // The result block the edit replaces (None: the message's whole text): its
                // call, the texts its mentions are read from (an image's base64 says nothing),
                // and the provider's error flag.
                let (call, parts, marked) = match part {
                    None => (m.tool_call_id, m.parts(), false),
                    Some(k) => match m.parts().get(*k) {
                        Some(Part::ToolResult {
                            tool_use_id,
                            content,
                            is_error,
                            ..
                        }) => (Some(*tool_use_id), content.as_slice(), *is_error),
                        _ => (None, &[][..], false),
                    },
                };
                let tool = call.and_then(|c| calls.name(i, c));
                let producer = call
                    .and_then(|c| calls.call(i, c))
                    .map_or(Producer::Call, |c| {
                        Producer::of_arguments(c.name, &c.arguments)
                    });
                let words = match &m.content {
                    Content::Text(t) if part.is_none() => Some(Cow::Borrowed(t.as_ref())),
                    _ => crate::message::joined_texts(parts),
                };
                // A screenshot masked with its result's text is said, as the recall gives
                // it back.
                let what = with_images("tool output", parts);
                let mut text = placeholder(
                    est,
                    &what,
                    tool,
                    tokens,
                    words.as_deref().unwrap_or(""),
                    marked,
                    &producer,
                    &id,
                );
                // A recording, a video or a document sent by reference beside the text: said as
                // the plain mask says it (its bytes are not kept; a document's inline bytes are,
                // said in `what`). Left out, a result of a line and a PDF read "tool output, ~5
                // tokens", the PDF unsaid.
                crate::prune::say_media(&mut text, parts, |p| {
                    p.masked_media().is_some() && document_payload(p).is_none()
                });
                Change::ResultText { part: *part, text }
            }
            // (An observation beside Ollama's native images goes with them: its words are
            // read from its text, never from their base64.)
            Change::Text { .. } => Change::Text {
                text: plain(
                    est,
                    &with_images("observation", m.parts()),
                    tokens,
                    &crate::message::joined_texts(m.parts()).unwrap_or(Cow::Borrowed(&text)),
                    &id,
                ),
            },
            Change::Image { part, .. } => Change::Image {
                part: *part,
                text: placeholder(
                    est,
                    &match m.parts().get(*part) {
                        Some(p @ Part::Opaque { .. }) => format!("document{}", pages_said(&[p])),
                        _ => "image".to_string(),
                    },
                    None,
                    tokens,
                    "",
                    false,
                    &Producer::Call,
                    &id,
                ),
            },
            // (A user turn's text beside its screenshot is a browser agent's observation.)
            Change::PartText { part, .. } => Change::PartText {
                part: *part,
                text: plain(
                    est,
                    if crate::turn::Turn::of(m) == crate::turn::Turn::User {
                        "observation"
                    } else {
                        "text"
                    },
                    tokens,
                    &text,
                    &id,
                ),
            },
            Change::ResultPartText { part, inner, .. } => Change::ResultPartText {
                part: *part,
                inner: *inner,
                text: plain(est, "text", tokens, &text, &id),
            },
            Change::Arguments { call, json } => Change::Arguments {
                call: *call,
                json: arguments_with_id(json, &id),
            },
        };
        match write(i, m, &new) {
            Some(w) => out.push(MaskEdit::Change {
                index: i,
                change: new,
                path: w.path,
                value: w.value,
            }),
            None => out.push(e),
        }
    }
    out
}

/// The character offset where a page of `text` starting at character `offset` ends, the page
/// holding at most `max_tokens` estimated tokens (at least one character, so paging always
/// moves on). Returns `(start byte, end byte, end char offset)`.
pub fn page(text: &str, offset: usize, max_tokens: u32, est: &Estimator) -> (usize, usize, usize) {
    let bounds: Vec<usize> = text
        .char_indices()
        .map(|(b, _)| b)
        .chain(std::iter::once(text.len()))
        .collect();
    let chars = bounds.len() - 1;
    let start_c = offset.min(chars);
    let start = bounds[start_c];
    let fits = |end_c: usize| est.text(&text[start..bounds[end_c]]) <= f64::from(max_tokens);
    if fits(chars) {
        return (start, text.len(), chars);
    }
    let (mut lo, mut hi) = (start_c + 1, chars);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    // Prefer to end at a line break within the last quarter of the page.
    let end_c = lo;
    let piece = &text[start..bounds[end_c]];
    let end_c = match piece.rfind('\n') {
        Some(nl) if nl >= piece.len() * 3 / 4 && end_c < chars => {
            start_c + piece[..=nl].chars().count()
        }
        _ => end_c,
    };
    (start, bounds[end_c], end_c)
}

/// Where an image a fold held is given back from: its base64 (with the media type its `data:`
/// URL declared or its header says), a URL, or a provider's file id / storage URI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecalledSource<'a> {
    Base64 {
        media_type: &'a str,
        data: &'a str,
    },
    Url(&'a str),
    File(&'a str),
    /// A document's base64 payload (a PDF) and its MIME type.
    Document {
        media_type: &'a str,
        data: &'a str,
    },
}

/// One image a stored original holds: its source, its pixel size when its header says it, and
/// the characters of the original it spans (`start..end`, the line break before its `[image,
/// ...]` line included), so a recall's offsets stay those of the text `recall(id)` returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecalledImage<'a> {
    pub source: RecalledSource<'a>,
    pub dims: Option<crate::image::Dims>,
    /// A document's pages, where its bytes say them (`media_header`).
    pub pages: Option<u32>,
    pub start: usize,
    pub end: usize,
}

/// A stored original read for its images: the characters of text before them (`text_end`) and
/// the images after, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecalledLayout<'a> {
    pub text_end: usize,
    pub images: Vec<RecalledImage<'a>>,
}

/// The media type an image's header says (PNG, JPEG, GIF, WebP), or None.
fn sniffed_media_type(src: &crate::image::ByteSource<'_>) -> Option<&'static str> {
    let head = src.read(0, 12);
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// `source` as base64 text: the media type its `data:` URL declares (None for bare base64) and
/// its payload; None where it is not base64 (a tool's output that only looks like it).
fn base64_parts(source: &str) -> Option<(Option<&str>, &str)> {
    let data = crate::image::strip_data_url(source);
    let b64 = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=' | b'-' | b'_');
    (!data.is_empty() && data.bytes().all(b64)).then(|| (crate::image::data_url_type(source), data))
}

/// `source` read as base64 image data: the media type its `data:image/...;base64,` prefix
/// declares (else the one its header says; `assume`: image/png when neither does, for a source
/// stored under an `[image, base64]` line), its payload and its pixel size. None for a text
/// that is not base64 of an image (a tool's output of base64 is given back as text).
fn base64_image(
    source: &str,
    assume: bool,
) -> Option<(RecalledSource<'_>, Option<crate::image::Dims>)> {
    use crate::image::{dims, ByteSource};
    let (declared, data) = base64_parts(source)?;
    if declared.is_some_and(|t| !t.starts_with("image/")) {
        return None;
    }
    let bytes = ByteSource::from_base64(data);
    let media_type = match (declared, sniffed_media_type(&bytes)) {
        (Some(t), _) => t,
        (None, Some(t)) => t,
        (None, None) if assume => "image/png",
        (None, None) => return None,
    };
    Some((RecalledSource::Base64 { media_type, data }, dims(&bytes)))
}

/// `source` as a document's payload: base64 (maybe a `data:` URL, whose type is then the
/// document's) of `media_type`, or (None) of the type its `data:` URL declares, else a PDF's
/// where its bytes begin as one. None for a text that is neither (an image's `data:` URL
/// included), so a tool's output of base64 is given back as text.
fn base64_document<'s>(
    source: &'s str,
    media_type: Option<&'s str>,
) -> Option<(RecalledSource<'s>, Option<u32>)> {
    use crate::message::MediaKind;
    let (declared, data) = base64_parts(source)?;
    let media_type = match (media_type, declared) {
        (Some(t), _) => t,
        (None, Some(t)) if MediaKind::from_mime(t) == MediaKind::Document => t,
        (None, None) if crate::media_header::is_pdf_base64(data) => "application/pdf",
        _ => return None,
    };
    let pages = crate::media_header::units_of(MediaKind::Document, data).map(|u| u.ceil() as u32);
    Some((RecalledSource::Document { media_type, data }, pages))
}

/// `source` (one line) as an image given by where it is: a URL, else a file id / storage URI.
fn located_image(source: &str) -> Option<RecalledSource<'_>> {
    // (A `data:` URL is read by `base64_image`: one that is not an image's is no image.)
    if source.is_empty() || source.contains(char::is_whitespace) || source.starts_with("data:") {
        return None;
    }
    Some(
        if source.starts_with("https://") || source.starts_with("http://") {
            RecalledSource::Url(source)
        } else {
            RecalledSource::File(source)
        },
    )
}

/// The images a stored original holds, as `original` and `result_original` write them: a
/// tool result's texts followed by `[image, base64|url|file]` lines each with its source on
/// the next line, or (an image folded alone) the source itself. A lone source is an image when
/// it is base64 of one (its header says so) or a `data:image/` URL; a URL or file id only when
/// `known_image` (the caller knows the fold was an image: its placeholder said `folded image`),
/// as a tool's output can be a bare URL. None when the text holds no image.
pub fn recalled_layout(text: &str, known_image: bool) -> Option<RecalledLayout<'_>> {
    type Found<'s> = (
        RecalledSource<'s>,
        Option<crate::image::Dims>,
        Option<u32>,
        usize,
        usize,
    );
    let mut found: Vec<Found<'_>> = Vec::new();
    let mut end = text.len();
    // Read from the end: a text before the images may itself hold a line like `[image, url]`.
    while let Some(nl) = text[..end].rfind('\n') {
        let source = &text[nl + 1..end];
        let marker_start = text[..nl].rfind('\n').map_or(0, |i| i + 1);
        let marker = &text[marker_start..nl];
        let image = match marker {
            "[image, base64]" => base64_image(source, true).map(|(s, d)| (s, d, None)),
            "[image, url]" | "[image, file]" => located_image(source).map(|s| (s, None, None)),
            _ => marker
                .strip_prefix(DOCUMENT_LINE.0)
                .and_then(|m| m.strip_suffix(DOCUMENT_LINE.1))
                .filter(|t| t.contains('/') && !t.contains(char::is_whitespace))
                .and_then(|t| base64_document(source, Some(t)))
                .map(|(s, pages)| (s, None, pages)),
        };
        let Some((src, dims, pages)) = image else {
            break;
        };
        let start = marker_start.saturating_sub(1);
        found.push((src, dims, pages, start, end));
        end = start;
        if marker_start == 0 {
            break;
        }
    }
    if found.is_empty() {
        let lone = base64_image(text, false)
            .map(|(s, d)| (s, d, None))
            .or_else(|| base64_document(text, None).map(|(s, p)| (s, None, p)))
            .or_else(|| {
                known_image
                    .then(|| located_image(text).map(|s| (s, None, None)))
                    .flatten()
            })?;
        found.push((lone.0, lone.1, lone.2, 0, text.len()));
        end = 0;
    }
    found.reverse();
    // Byte offsets to characters: a URL may hold non-ASCII; base64 never does.
    let chars = |b: usize| text[..b].chars().count();
    Some(RecalledLayout {
        text_end: chars(end),
        images: found
            .into_iter()
            .map(|(source, dims, pages, s, e)| RecalledImage {
                source,
                dims,
                pages,
                start: chars(s),
                end: chars(e),
            })
            .collect(),
    })
}

/// The message (Responses: the item) answering call `call_id` of tool `name` with `text` and
/// `images` as images, in the format of the message that made the call, as compact JSON; None
/// where that format's tool result cannot carry one of them (a chat `tool` message holds text
/// alone; Bedrock takes bytes or an S3 URI; Gemini's function response parts inline data, and
/// no document; Anthropic a base64 document that is a PDF).
/// Bedrock's bytes are written as their base64 (the JSON its REST API reads; the Python SDK
/// takes raw bytes: the bindings' caller decodes them).
pub fn image_result_json(
    wire: crate::wire::Format,
    call_id: &str,
    name: &str,
    text: &str,
    images: &[RecalledSource<'_>],
) -> Option<String> {
    use crate::wire::Format;
    match wire {
        Format::OpenAIResponses => {
            openai_responses::tool_result_with_images_json(call_id, text, images)
        }
        Format::Anthropic => anthropic::tool_result_with_images_json(call_id, text, images),
        Format::Bedrock => bedrock::tool_result_with_images_json(call_id, text, images),
        Format::Gemini => gemini::tool_result_with_images_json(call_id, name, text, images, false),
        Format::GeminiSnake => {
            gemini::tool_result_with_images_json(call_id, name, text, images, true)
        }
        Format::OpenAIChat | Format::Unknown | Format::LangChain => None,
    }
}

/// The recall tool's declaration in `format`'s tool list, as compact JSON.
pub fn tool_json(format: WireFormat) -> String {
    match format {
        WireFormat::Chat => {
            openai_chat::tool_declaration_json(RECALL_TOOL, RECALL_DESCRIPTION, RECALL_SCHEMA)
        }
        WireFormat::Responses => {
            openai_responses::tool_declaration_json(RECALL_TOOL, RECALL_DESCRIPTION, RECALL_SCHEMA)
        }
        WireFormat::Anthropic => {
            anthropic::tool_declaration_json(RECALL_TOOL, RECALL_DESCRIPTION, RECALL_SCHEMA)
        }
        WireFormat::Gemini => {
            gemini::tool_declaration_json(RECALL_TOOL, RECALL_DESCRIPTION, RECALL_SCHEMA)
        }
        WireFormat::Bedrock => {
            bedrock::tool_declaration_json(RECALL_TOOL, RECALL_DESCRIPTION, RECALL_SCHEMA)
        }
    }
}

/// The message (Responses: the item) answering call `call_id` of tool `name` with `text`, in
/// the format of the message that made the call (`wire`), as compact JSON.
pub fn result_json(
    wire: crate::wire::Format,
    call_id: &str,
    name: &str,
    text: &str,
) -> Option<String> {
    use crate::wire::Format;
    Some(match wire {
        // An Ollama call carries no id (read with its name for one): its result names the tool.
        Format::OpenAIChat if call_id == name => openai_chat::named_tool_result_json(name, text),
        Format::OpenAIChat | Format::Unknown => openai_chat::tool_result_json(call_id, text),
        Format::OpenAIResponses => openai_responses::tool_result_json(call_id, text),
        Format::Anthropic => anthropic::tool_result_json(call_id, text),
        Format::Gemini => gemini::tool_result_json(call_id, name, text, false),
        Format::GeminiSnake => gemini::tool_result_json(call_id, name, text, true),
        Format::Bedrock => bedrock::tool_result_json(call_id, text),
        Format::LangChain => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Provider;

    /// The answer `image_result_json` writes in `format` for `sources`, parsed.
    fn answer(format: crate::wire::Format, sources: &[RecalledSource<'_>]) -> serde_json::Value {
        serde_json::from_str(&image_result_json(format, "t1", RECALL_TOOL, "h", sources).unwrap())
            .unwrap()
    }

    /// `change` made to the first message, as an edit whose original `original` reads.
    fn first_edit(change: Change) -> MaskEdit {
        MaskEdit::Change {
            index: 0,
            change,
            path: Vec::new(),
            value: String::new(),
        }
    }

    /// The ends a placeholder names the identifiers of are cut between words: a cut at byte
    /// 2,048 inside `ParseError` named `ParseEr` beside it.
    #[test]
    fn a_placeholder_names_no_piece_of_a_word_cut_at_its_read_window() {
        let body: String = (0..120)
            .map(|n| format!("src/app/mod0.py:{n}: assert parse(x) == {n}  # ParseError\n"))
            .collect();
        assert!(body.len() > 2 * SCAN_BYTES);
        let (head, tail) = ends(&body);
        assert!(head.len() <= SCAN_BYTES && tail.len() <= SCAN_BYTES);
        let names = mentions(&body, MENTIONS);
        assert!(names.contains(&"ParseError".to_string()), "{names:?}");
        for n in &names {
            assert!(
                body.contains(&format!(" {n}"))
                    || body.contains(&format!("{n}:"))
                    || n.contains('/'),
                "{n}"
            );
        }
        assert!(
            !names.iter().any(|n| n == "ParseEr" || n == "ParseErr"),
            "{names:?}"
        );
    }

    #[test]
    fn a_screenshot_in_a_masked_tool_result_is_kept_and_priced_by_its_pixels() {
        use crate::message::{Content, Detail, Image};
        // A 1x1 PNG: the image's price is its pixel size's, far under its base64 length's.
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
        let data = png.repeat(40);
        let mut m = Message::empty("user");
        m.content = Content::Parts(vec![Part::ToolResult {
            tool_use_id: "t1",
            is_error: false,
            content: vec![
                Part::Text(Cow::Borrowed("screen 1")),
                Part::Image(Image {
                    source: ImageSource::Base64(&data),
                    detail: Detail::Auto,
                }),
            ],
            name: None,
        }]);
        let e = first_edit(Change::ResultText {
            part: Some(0),
            text: String::new(),
        });
        let kept = original(&m, &e).unwrap();
        assert!(kept.starts_with("screen 1\n[image, base64]\n"), "{kept}");
        assert!(kept.ends_with(data.as_str()));
        let est = Estimator::new(Provider::Anthropic, "claude-sonnet-4-5");
        let Part::ToolResult { content, .. } = &m.parts()[0] else {
            unreachable!()
        };
        let tokens = result_tokens(&est, content);
        let image = match &content[1] {
            Part::Image(img) => est.image(img),
            _ => unreachable!(),
        };
        assert!(image > 0);
        assert_eq!(tokens, est.text("screen 1").ceil() as u32 + image);
        assert!(f64::from(tokens) < est.text(&kept) / 4.0, "{tokens}");
        // A result of texts alone is stored as its texts, as before.
        let mut t = Message::empty("user");
        t.content = Content::Parts(vec![Part::ToolResult {
            tool_use_id: "t2",
            is_error: false,
            content: vec![
                Part::Text(Cow::Borrowed("a")),
                Part::Text(Cow::Borrowed("b")),
            ],
            name: None,
        }]);
        assert_eq!(original(&t, &e).unwrap(), "a\nb");
    }

    /// A 1280x800 PNG's header as base64 (24 bytes: signature and IHDR's size).
    fn png_1280x800() -> String {
        let mut png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR".to_vec();
        png.extend_from_slice(&1280u32.to_be_bytes());
        png.extend_from_slice(&800u32.to_be_bytes());
        png.extend_from_slice(&[8, 2, 0, 0, 0, 0, 0, 0, 0]);
        crate::image::encode(&png)
    }

    #[test]
    fn a_stored_original_is_read_for_the_images_it_holds_never_a_texts_lookalike() {
        let png = png_1280x800();
        let dims = Some(crate::image::Dims {
            width: 1280,
            height: 800,
        });
        // A tool result's text and its screenshots, as `result_original` writes them.
        let stored = format!("café log\n[image, url]\nnot a url\n[image, base64]\n{png}\n[image, url]\nhttps://x.test/a.png");
        let l = recalled_layout(&stored, false).unwrap();
        assert_eq!(
            l.text_end,
            "café log\n[image, url]\nnot a url".chars().count()
        );
        assert_eq!(l.images.len(), 2);
        assert_eq!(
            l.images[0].source,
            RecalledSource::Base64 {
                media_type: "image/png",
                data: &png
            }
        );
        assert_eq!(l.images[0].dims, dims);
        assert_eq!(l.images[0].start, l.text_end);
        assert_eq!(l.images[0].end, l.images[1].start);
        assert_eq!(
            l.images[1].source,
            RecalledSource::Url("https://x.test/a.png")
        );
        assert_eq!(l.images[1].end, stored.chars().count());
        // An image folded alone: its base64, or its data URL.
        let alone = recalled_layout(&png, false).unwrap();
        assert_eq!((alone.text_end, alone.images[0].end), (0, png.len()));
        let url = format!("data:image/jpeg;base64,{png}");
        assert!(matches!(
            recalled_layout(&url, false).unwrap().images[0].source,
            RecalledSource::Base64 {
                media_type: "image/jpeg",
                ..
            }
        ));
        // A URL is an image only where the fold is known to be one; texts never are.
        assert!(recalled_layout("https://x.test/a.png", false).is_none());
        assert!(recalled_layout("https://x.test/a.png", true).is_some());
        assert!(recalled_layout("all 12 passed", true).is_none());
        assert!(recalled_layout("aGVsbG8gd29ybGQ=", false).is_none());
        assert!(recalled_layout("data:text/plain;base64,aGVsbG8=", true).is_none());
        assert!(recalled_layout("[image, base64]\n", false).is_none());
    }

    /// A two-page PDF's bytes: its page objects are what `media_header` counts.
    fn pdf_two_pages() -> Vec<u8> {
        b"%PDF-1.4\n1 0 obj\n<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>\nendobj\n\
2 0 obj\n<< /Type /Page /Parent 1 0 R >>\nendobj\n3 0 obj\n<< /Type /Page /Parent 1 0 R >>\nendobj\n%%EOF\n"
            .to_vec()
    }

    #[test]
    fn a_documents_bytes_are_stored_with_its_fold_and_read_back_as_a_document() {
        use crate::message::{MediaData, MediaKind, MediaPayload};
        let pdf = pdf_two_pages();
        let b64 = crate::image::encode(&pdf);
        fn doc<'a>(data: MediaData<'a>, mime: Option<&str>) -> Part<'a> {
            Part::Opaque {
                kind: Cow::Borrowed("document"),
                media: MediaKind::Document,
                payload_chars: None,
                wire_chars: 0,
                units: Some(2),
                text: None,
                payload: Some(Box::new(MediaPayload {
                    data,
                    mime: mime.map(str::to_string),
                })),
            }
        }
        // Bedrock's raw bytes under its format's short name: stored as base64 under the MIME
        // type the name stands for.
        let raw: &[u8] = &pdf;
        let mut m = Message::empty("user");
        m.content = Content::Parts(vec![Part::ToolResult {
            tool_use_id: "t1",
            is_error: false,
            content: vec![
                Part::Text(Cow::Borrowed("fetched")),
                doc(MediaData::Bytes(raw), Some("pdf")),
            ],
            name: None,
        }]);
        let e = first_edit(Change::ResultText {
            part: Some(0),
            text: String::new(),
        });
        let kept = original(&m, &e).unwrap();
        assert_eq!(
            kept,
            format!("fetched\n[document, application/pdf, base64]\n{b64}")
        );
        let l = recalled_layout(&kept, false).unwrap();
        assert_eq!(l.text_end, "fetched".len());
        assert_eq!(
            (l.images[0].source, l.images[0].pages),
            (
                RecalledSource::Document {
                    media_type: "application/pdf",
                    data: &b64
                },
                Some(2)
            )
        );
        // Masked alone: its payload as sent, a data URL kept whole and read by its type.
        let url = format!("data:application/pdf;base64,{b64}");
        let url = url.as_str();
        let mut alone = Message::empty("user");
        alone.content = Content::Parts(vec![doc(MediaData::Base64(Cow::Borrowed(url)), None)]);
        let e = first_edit(Change::Image {
            part: 0,
            text: String::new(),
        });
        assert_eq!(original(&alone, &e).unwrap(), url);
        assert!(matches!(
            recalled_layout(url, false).unwrap().images[0].source,
            RecalledSource::Document { data, .. } if data == b64
        ));
        assert!(matches!(
            recalled_layout(&b64, false).unwrap().images[0].source,
            RecalledSource::Document {
                media_type: "application/pdf",
                ..
            }
        ));
        // A tool's output of base64, or of a document line over no base64, stays text.
        assert!(recalled_layout("aGVsbG8gd29ybGQ=", false).is_none());
        assert!(recalled_layout("data:text/plain;base64,aGVsbG8=", false).is_none());
        assert!(recalled_layout(
            "log\n[document, application/pdf, base64]\nnot base64!",
            false
        )
        .is_none());
        assert!(recalled_layout("log\n[document, a b, base64]\nJVBERi0x", false).is_none());
        // A document sent by reference keeps no bytes: nothing to store, as before.
        let mut by_ref = alone.clone();
        by_ref.content = Content::Parts(vec![Part::Opaque {
            kind: Cow::Borrowed("document"),
            media: MediaKind::Document,
            payload_chars: None,
            wire_chars: 80,
            units: None,
            text: None,
            payload: None,
        }]);
        assert!(original(&by_ref, &e).is_none());
    }

    #[test]
    fn a_document_answer_is_written_where_the_format_carries_one() {
        use crate::wire::Format;
        let pdf = [RecalledSource::Document {
            media_type: "application/pdf",
            data: "JVBE",
        }];
        let docx = [RecalledSource::Document {
            media_type: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            data: "UEsD",
        }];
        let a = answer(Format::Anthropic, &pdf);
        assert_eq!(
            a["content"][0]["content"][1],
            serde_json::json!({"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}})
        );
        let b = answer(Format::Bedrock, &pdf);
        let d = &b["content"][0]["toolResult"]["content"][1]["document"];
        assert_eq!(
            (&d["format"], &d["source"]["bytes"]),
            (&"pdf".into(), &"JVBE".into())
        );
        let b = answer(Format::Bedrock, &docx);
        assert_eq!(
            b["content"][0]["toolResult"]["content"][1]["document"]["format"],
            "docx"
        );
        let r = answer(Format::OpenAIResponses, &pdf);
        assert_eq!(
            r["output"][1],
            serde_json::json!({"type": "input_file", "file_data": "data:application/pdf;base64,JVBE", "filename": "document.pdf"})
        );
        // Anthropic's base64 document is a PDF's alone; Gemini's function response and a chat
        // `tool` message take none.
        assert!(image_result_json(Format::Anthropic, "t1", RECALL_TOOL, "h", &docx).is_none());
        assert!(image_result_json(Format::Gemini, "t1", RECALL_TOOL, "h", &pdf).is_none());
        assert!(image_result_json(Format::OpenAIChat, "t1", RECALL_TOOL, "h", &pdf).is_none());
    }

    #[test]
    fn an_image_answer_is_written_where_the_format_carries_one() {
        use crate::wire::Format;
        let img = [RecalledSource::Base64 {
            media_type: "image/png",
            data: "iVBO",
        }];
        let url = [RecalledSource::Url("https://x.test/a.png")];
        let a = answer(Format::Anthropic, &img);
        assert_eq!(a["content"][0]["content"][1]["source"]["data"], "iVBO");
        let b = answer(Format::Bedrock, &img);
        assert_eq!(
            b["content"][0]["toolResult"]["content"][1]["image"]["format"],
            "png"
        );
        let r = answer(Format::OpenAIResponses, &img);
        assert_eq!(r["output"][1]["image_url"], "data:image/png;base64,iVBO");
        let g = answer(Format::Gemini, &img);
        let f = &g["parts"][0]["functionResponse"];
        assert_eq!(
            (
                &f["response"]["output"],
                &f["parts"][0]["inlineData"]["data"]
            ),
            (&"h".into(), &"iVBO".into())
        );
        let s = answer(Format::GeminiSnake, &img);
        assert_eq!(
            s["parts"][0]["function_response"]["parts"][0]["inline_data"]["mime_type"],
            "image/png"
        );
        assert!(image_result_json(Format::OpenAIChat, "t1", RECALL_TOOL, "h", &img).is_none());
        assert!(image_result_json(Format::Bedrock, "t1", RECALL_TOOL, "h", &url).is_none());
        assert!(image_result_json(Format::Gemini, "t1", RECALL_TOOL, "h", &url).is_none());
        let a = answer(Format::Anthropic, &url);
        assert_eq!(a["content"][0]["content"][1]["source"]["type"], "url");
    }

    #[test]
    fn fold_id_is_stable_short_and_content_addressed() {
        let a = fold_id("hello world");
        assert_eq!(a.len(), 14);
        assert!(a.starts_with("cf"));
        assert_eq!(a, fold_id("hello world"));
        assert_ne!(a, fold_id("hello world!"));
    }

    #[test]
    fn ids_in_finds_every_id_a_text_names_once() {
        let a = fold_id("a");
        let b = fold_id("b");
        let t = format!("x id={a} y id={b} z id={a} id=cfzz");
        assert_eq!(ids_in(&t), vec![a.as_str(), b.as_str()]);
    }

    #[test]
    fn a_bookings_placeholder_names_its_flight_numbers_before_its_airports() {
        // The shape of a recorded tau-bench airline reservation (task45-trial0): its airports
        // repeat in every segment, its flight numbers appear once each.
        let booking = r#"{"reservation_id": "4OG6T3", "user_id": "noah_muller_9847", "origin": "BOS", "destination": "LAS", "flight_type": "round_trip", "cabin": "basic_economy", "flights": [{"origin": "BOS", "destination": "SEA", "flight_number": "HAT006", "date": "2024-05-11", "price": 87}, {"origin": "SEA", "destination": "LAS", "flight_number": "HAT018", "date": "2024-05-11", "price": 96}, {"origin": "LAS", "destination": "SEA", "flight_number": "HAT040", "date": "2024-05-17", "price": 63}, {"origin": "SEA", "destination": "BOS", "flight_number": "HAT253", "date": "2024-05-17", "price": 52}], "passengers": [{"first_name": "Noah", "last_name": "Muller", "dob": "1963-01-22"}], "payment_history": [{"payment_id": "credit_card_7574394", "amount": 328}], "created_at": "2024-05-09T15:14:07", "insurance": "yes"}"#;
        let said = mentions_said(booking);
        for id in [
            "4OG6T3",
            "noah_muller_9847",
            "HAT006",
            "HAT018",
            "HAT040",
            "HAT253",
        ] {
            assert!(said.contains(id), "{id} not in {said}");
        }
        assert!(
            said.len() <= MENTIONS_SAID.len() + MENTIONS_SAID_MAX_CHARS,
            "{said}"
        );
        let names = mentions(booking, MENTIONS);
        let first_value = names.iter().position(|n| n == "BOS" || n == "SEA");
        let last_flight = names.iter().rposition(|n| n.starts_with("HAT")).unwrap();
        assert!(first_value.is_none_or(|v| v > last_flight), "{names:?}");
    }

    #[test]
    fn a_profiles_pruned_placeholder_stays_within_64_tokens() {
        // A recorded tau-bench profile (task46-trial1): seven payment ids. 160 characters of
        // them took the non-recoverable stand-in to 84 tokens.
        let mut profile = String::from(
            r#"{"name": {"first_name": "Noah", "last_name": "Muller"}, "payment_methods": {"#,
        );
        for (k, id) in [
            1245537, 6040264, 3255100, 3983998, 7574394, 6873705, 8301303,
        ]
        .iter()
        .enumerate()
        {
            let sep = if k > 0 { ", " } else { "" };
            profile.push_str(&format!(
                r#"{sep}"credit_card_{id}": {{"source": "credit_card", "brand": "visa", "last_four": "1167", "id": "credit_card_{id}"}}"#
            ));
        }
        profile.push_str(r#"}, "membership": "gold", "reservations": ["SDZQKO", "4OG6T3"]}"#);
        let said = mentions_said(&profile);
        assert!(said.contains("credit_card_1245537"), "{said}");
        let est = Estimator::new(Provider::OpenAI, "gpt-4o");
        let stand_in = format!(
            "[output pruned to save context: get_user_details returned 1,210 bytes (~410 tokens){said}]"
        );
        assert!(
            est.text(&stand_in) <= PLACEHOLDER_MAX_TOKENS,
            "{} {stand_in}",
            est.text(&stand_in)
        );
    }

    #[test]
    fn placeholder_names_tool_error_mentions_and_id_within_64_tokens() {
        let est = Estimator::new(Provider::OpenAI, "gpt-4o");
        let text = "Traceback (most recent call last):\n  File \"src/app/models.py\", line 3\nKeyError: 'user_id'\n".repeat(50);
        let p = placeholder(
            &est,
            "tool output",
            Some("run_tests"),
            2_000,
            &text,
            false,
            &Producer::Call,
            "cf0123456789ab",
        );
        assert!(p.contains("run_tests"), "{p}");
        assert!(p.contains("held an error"), "{p}");
        assert!(p.contains("src/app/models.py"), "{p}");
        assert!(p.contains("id=cf0123456789ab"), "{p}");
        assert!(est.text(&p) <= PLACEHOLDER_MAX_TOKENS, "{p}");
        let long: String = (0..200)
            .map(|k| format!("very_long_identifier_name_{k}_x "))
            .collect();
        let p = placeholder(
            &est,
            "tool output",
            Some("grep"),
            9_000,
            &long,
            false,
            &Producer::Call,
            "cf0123456789ab",
        );
        assert!(est.text(&p) <= PLACEHOLDER_MAX_TOKENS, "{p}");
        // The provider's flag says what the words do not.
        let quiet = "File has been modified since read, by the user or a linter.";
        let said = |marked| {
            placeholder(
                &est,
                "tool output",
                Some("Edit"),
                20,
                quiet,
                marked,
                &Producer::Call,
                "cf0123456789ab",
            )
        };
        assert!(said(true).contains("held an error"), "{}", said(true));
        assert!(!said(false).contains("held an error"), "{}", said(false));
        // A shell tool's output is read as its command's run: a printed module's words are
        // the module's.
        let module =
            "try:\n    run()\nexcept Exception as error:\n    raise ValueError('x') from error\n";
        let of = |producer: Producer<'_>, text| {
            placeholder(
                &est,
                "tool output",
                Some("terminal"),
                900,
                text,
                false,
                &producer,
                "cf0123456789ab",
            )
        };
        let cmd = |c: &'static str| Producer::Command(c.into());
        assert!(of(Producer::Call, module).contains("held an error"));
        assert!(!of(cmd("cat src/run.py"), module).contains("held an error"));
        assert!(of(
            cmd("cat src/gone.py"),
            "cat: src/gone.py: No such file or directory"
        )
        .contains("held an error"));
        assert!(of(cmd("python src/run.py"), module).contains("held an error"));
        // A file a read tool returned is the file's words; a short message is the tool's.
        assert!(!of(Producer::FileRead, module).contains("held an error"));
        assert!(
            of(Producer::FileRead, "Error: file not found: src/gone.py").contains("held an error")
        );
        assert!(!tool_outcome::reports_failure("all 12 passed\nexit code 0"));
        assert!(tool_outcome::reports_failure("exit code: 2"));
    }

    #[test]
    fn pages_cover_the_text_exactly_and_stay_within_their_tokens() {
        let est = Estimator::new(Provider::OpenAI, "gpt-4o");
        let text = "line é ünïcode 12345\n".repeat(400);
        let mut offset = 0;
        let mut back = String::new();
        let chars = text.chars().count();
        while offset < chars {
            let (a, b, end) = page(&text, offset, 100, &est);
            assert!(est.text(&text[a..b]) <= 100.0);
            assert!(end > offset);
            back.push_str(&text[a..b]);
            offset = end;
        }
        assert_eq!(back, text);
    }

    #[test]
    fn arguments_keep_their_root_and_name_the_id() {
        assert_eq!(
            arguments_with_id("{\"a\":1}", "cf1"),
            "{\"a\":1,\"contextfold_recall\":\"cf1\"}"
        );
        assert_eq!(
            arguments_with_id("{}", "cf1"),
            "{\"contextfold_recall\":\"cf1\"}"
        );
        assert_eq!(arguments_with_id("[1]", "cf1"), "[1]");
    }

    #[test]
    fn every_fold_id_is_found_however_it_is_written() {
        let text = r#"[output pruned; id=cf0123456789ab] {"contextfold_recall": "cfabcdef012345"} id=cf0123456789ab xcf0123456789ab cf0123456789abc cf0123456789AB cfabcdef01234"#;
        assert_eq!(any_ids_in(text), vec!["cf0123456789ab", "cfabcdef012345"]);
        assert_eq!(any_ids_in("é cf0123456789ab"), vec!["cf0123456789ab"]);
        assert!(any_ids_in("cf").is_empty() && any_ids_in("").is_empty());
    }
}
