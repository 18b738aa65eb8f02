//! Pruning of old tool output: a plan of edits computed from the message views.
//!
//! Outside the protected tail (the same tail walk and estimator as everywhere), large tool
//! results become a one-line placeholder naming the tool and the size, an output repeated later
//! becomes a pointer to the newer copy, images become a short placeholder and long tool-call
//! arguments are shrunk with `shrink_json` (still valid JSON). The plan decides
//! what to change in format-neutral terms; each message's wire format writes the change as an
//! [`Edit`] (a path inside the message and a replacement in that format), kept only when it
//! makes the message smaller in bytes and in estimated tokens. The bindings apply the edits
//! copy-on-write, without knowing any format.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::call_pairs::CallPairs;
use crate::estimate::Estimator;
use crate::image::{dims_of_base64, dims_of_bytes};
use crate::message::{Content, Image, ImageSource, MediaKind, Message, Part};
use crate::shrink_json::shrink_json;
use crate::tail_walk::{find_tail_start, legal_cuts, TailOptions};
use crate::wire::edit::{calls_at, CallAt, Change};
use crate::wire::responses_tool_items;
use crate::wire::write_edit as write;
pub use crate::wire::{Edit, Step};

/// Thresholds of a prune (all sizes in tokens of the estimator unless named chars).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PruneOptions {
    /// Tokens the untouched tail holds (the tail walk's budget).
    pub protect_tail_tokens: u64,
    /// Messages at the start never edited (system prompt, task).
    pub protect_first_n: usize,
    pub min_tail: usize,
    pub soft_ceiling: f64,
    /// Tool results costing more than this become a placeholder.
    pub tool_result_max_tokens: u32,
    /// Tool-call arguments longer than this (characters) are shrunk to it.
    pub arguments_max_chars: usize,
    /// Replace images outside the tail with a placeholder.
    pub prune_images: bool,
    /// Replace a tool result identical to a newer one with a pointer to it.
    pub dedupe: bool,
    /// Cache-aware mode: the pruned region ends only at block boundaries placed every
    /// `cache_block_tokens` of cumulative history, so it does not move every turn and the
    /// already-sent prefix stays byte-identical between block crossings. 0 disables.
    pub cache_block_tokens: u64,
    /// A placeholder names the identifiers its output held (`recall::mentions_said`): read
    /// from each output's ends, so off where no one reads the placeholders (a compaction's
    /// middle that is folded).
    pub mentions: bool,
}

impl Default for PruneOptions {
    fn default() -> Self {
        PruneOptions {
            protect_tail_tokens: 40_000,
            protect_first_n: 1,
            min_tail: 3,
            soft_ceiling: 1.5,
            tool_result_max_tokens: 200,
            arguments_max_chars: 2_000,
            prune_images: true,
            dedupe: true,
            cache_block_tokens: 0,
            mentions: false,
        }
    }
}

/// What a prune decided: the tail start it protected and the edits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrunePlan {
    /// Messages from here on are untouched.
    pub protected_from: usize,
    pub edits: Vec<Edit>,
    /// The format-neutral change behind each edit (same order and length as `edits`): what
    /// callers that re-price or filter edits (the compaction planner) reason about.
    pub changes: Vec<(usize, Change)>,
}

// FxHash-style 64-bit hash of the length, the first and the last 256 bytes: cheap whatever the
// output's size, and equal hashes are confirmed by comparing the whole texts.
fn text_hash(s: &str) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    const EDGE: usize = 256;
    let b = s.as_bytes();
    let mut h = s.len() as u64;
    // The two edges are hashed in place (no copy); EDGE is a multiple of 8, so this equals
    // hashing their concatenation.
    let mut feed = |bytes: &[u8]| {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
            h = (h.rotate_left(5) ^ w).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            h = (h.rotate_left(5) ^ b as u64).wrapping_mul(K);
        }
    };
    if b.len() <= 2 * EDGE {
        feed(b);
    } else {
        feed(&b[..EDGE]);
        feed(&b[b.len() - EDGE..]);
    }
    h
}

/// Ask the CPU to start loading the bytes `text_hash(s)` reads (its two edges), a few texts
/// before they are hashed: by the time a plan hashes a long history's outputs, every one of
/// them has left the cache since it was read and priced.
#[inline]
fn prefetch_edges(s: &str) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        const EDGE: usize = 256;
        let b = s.as_bytes();
        let tail = b.len().saturating_sub(EDGE).max(EDGE.min(b.len()));
        for range in [0..b.len().min(EDGE), tail..b.len()] {
            for off in range.step_by(64) {
                // SAFETY: `off < b.len()`: inside the string; a prefetch never faults.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(b.as_ptr().add(off).cast()) };
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = s;
}

fn result_text<'m>(m: &'m Message<'_>) -> Option<&'m str> {
    match &m.content {
        Content::Text(t) if m.tool_call_id.is_some() => Some(t),
        _ => None,
    }
}

fn block_text<'m>(content: &'m [Part<'_>]) -> Option<&'m str> {
    match content {
        [Part::Text(t)] => Some(t),
        _ => None,
    }
}

pub(crate) fn group_sep(n: usize) -> String {
    // 1234567 -> "1,234,567": placeholders are read by models and people.
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// The one-line stand-in of a pruned output. Sizes: UTF-8 bytes (known without a scan) and
/// the estimator's tokens.
/// With `text` (the output), it also names the identifiers the output held.
fn placeholder(tool: &str, text: Option<&str>, bytes: usize, tokens: u32) -> String {
    let tool = if tool.is_empty() { "a tool" } else { tool };
    format!(
        "[output pruned to save context: {tool} returned {} bytes (~{} tokens){}]",
        group_sep(bytes),
        group_sep(tokens as usize),
        text.map_or_else(String::new, crate::recall::mentions_said)
    )
}

/// Arguments over `max_chars` characters shrunk to valid JSON within it; `None` when they fit,
/// or when shrinking changes nothing. Text that is not JSON becomes a valid JSON preview.
fn shorter_arguments(args: &str, max_chars: usize) -> Option<String> {
    if args.len() <= max_chars || args.chars().count() <= max_chars {
        return None;
    }
    let text = shrink_json(args, max_chars);
    (text != args).then_some(text)
}

/// Edits that shrink, in every message, each tool call's arguments longer than `max_chars`
/// characters to valid JSON of at most `max_chars` (`shrink_json`), written in each message's
/// own format (a degrading step of the compaction: the pending round's calls too).
pub fn argument_edits(msgs: &[Message<'_>], max_chars: usize) -> Vec<Edit> {
    let mut out = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        for (call, c) in calls_at(m) {
            if let Some(json) = shorter_arguments(&c.arguments, max_chars) {
                out.extend(write(i, m, &Change::Arguments { call, json }));
            }
        }
    }
    out
}

/// The end of the prunable region: the tail start, or in cache-aware mode the last block
/// boundary at or before it (boundaries at every `block` tokens of cumulative cost, which only
/// depend on the messages before them, so they do not move as the history grows).
pub fn prune_end(costs: &[u32], tail_start: usize, block: u64, legal: &[bool]) -> usize {
    if block == 0 {
        return tail_start;
    }
    let mut acc = 0u64;
    let mut next = block;
    let mut end = 0;
    for (i, &c) in costs.iter().enumerate().take(tail_start) {
        acc += u64::from(c);
        if acc >= next {
            // Boundary after message i, moved back to a legal cut so groups stay whole.
            let mut b = i + 1;
            while b > 0 && !legal[b] {
                b -= 1;
            }
            end = end.max(b);
            next = (acc / block + 1) * block;
        }
    }
    end
}

/// Plan the prune of `msgs` priced by `est`.
pub fn plan(msgs: &[Message<'_>], est: &Estimator, opt: &PruneOptions) -> PrunePlan {
    plan_with(msgs, est, &est.each(msgs), &legal_cuts(msgs), opt)
}

/// As [`plan`], with the costs (`est.each(msgs)`) and legal cuts (`legal_cuts(msgs)`) a caller
/// already has.
pub fn plan_with(
    msgs: &[Message<'_>],
    est: &Estimator,
    costs: &[u32],
    legal: &[bool],
    opt: &PruneOptions,
) -> PrunePlan {
    plan_paired(msgs, est, costs, legal, opt, &CallPairs::new(msgs))
}

/// As [`plan_with`], with the history's call pairs a caller already has.
pub(crate) fn plan_paired<'m, 'a>(
    msgs: &'m [Message<'a>],
    est: &Estimator,
    costs: &[u32],
    legal: &[bool],
    opt: &PruneOptions,
    calls: &CallPairs<'m, 'a>,
) -> PrunePlan {
    let tail = find_tail_start(
        costs,
        legal,
        &TailOptions {
            budget_tokens: opt.protect_tail_tokens,
            protect_first_n: opt.protect_first_n,
            min_tail: opt.min_tail,
            soft_ceiling: opt.soft_ceiling,
        },
    );
    let end = prune_end(costs, tail, opt.cache_block_tokens, legal);
    let first = opt.protect_first_n.min(end);
    let mut pruner = Pruner {
        est,
        opt,
        calls,
        dedupe: Dedupe::index(msgs, opt.dedupe),
        edits: Vec::new(),
        changes: Vec::new(),
    };
    for (i, m) in msgs.iter().enumerate().take(end).skip(first) {
        let whole = pruner.result_message(i, m, costs[i]);
        for (j, c) in m.tool_calls.iter().enumerate() {
            pruner.arguments(i, m, CallAt::ToolCalls(j), &c.arguments);
        }
        for (part, p) in m.parts().iter().enumerate() {
            match p {
                // (Said in the placeholder of the result they were part of.)
                _ if whole && p.is_media() => {}
                Part::Image(_) if opt.prune_images && m.images_from == Some(part) => {
                    pruner.native_images(i, m, part);
                }
                // (Ollama's native images after the first: masked with it.)
                Part::Image(_) if m.images_from.is_some_and(|from| part > from) => {}
                Part::Image(img) if opt.prune_images => pruner.image(i, m, part, img),
                Part::ToolResult {
                    tool_use_id,
                    content,
                    ..
                } => pruner.result_block(i, m, part, p, tool_use_id, content),
                Part::ToolUse(c) => pruner.arguments(i, m, CallAt::Part(part), &c.arguments),
                Part::Opaque { .. } if opt.prune_images && p.masked_media().is_some() => {
                    pruner.media(i, m, part, p);
                }
                _ => {}
            }
        }
    }
    PrunePlan {
        protected_from: tail,
        edits: pruner.edits,
        changes: pruner.changes,
    }
}

/// What an image outside the tail says in its place: its size, when its bytes tell it.
fn image_placeholder(img: &Image<'_>) -> String {
    let dims = match img.source {
        ImageSource::Base64(s) => dims_of_base64(s),
        ImageSource::Bytes(b) => dims_of_bytes(b),
        ImageSource::Url(_) | ImageSource::File(_) => None,
    };
    match dims {
        Some(d) => format!("[image omitted: {}x{}]", d.width, d.height),
        None => "[image omitted]".to_string(),
    }
}

/// What a document, a recording or a video outside the tail says in its place: its kind and,
/// when its bytes tell, its pages or seconds. Also an image by reference's.
pub(crate) fn media_placeholder(p: &Part<'_>) -> String {
    let (kind, units) = match p {
        Part::Image(img) => return image_placeholder(img),
        Part::Opaque { media, units, .. } => (*media, *units),
        _ => return "[omitted]".to_string(),
    };
    let (name, unit) = match kind {
        MediaKind::Document => ("document", "page"),
        MediaKind::Audio => ("audio", "second"),
        MediaKind::Video => ("video", "second"),
        _ => ("image", ""),
    };
    match units {
        Some(n) if !unit.is_empty() => format!(
            "[{name} omitted: {} {unit}{}]",
            group_sep(n as usize),
            if n == 1 { "" } else { "s" }
        ),
        _ => format!("[{name} omitted]"),
    }
}

/// `text` followed, a line each, by what each part of `parts` that `which` picks was
/// (`media_placeholder`): the images and documents a placeholder stands for beside the text.
pub(crate) fn say_media(text: &mut String, parts: &[Part<'_>], which: impl Fn(&Part<'_>) -> bool) {
    for p in parts.iter().filter(|p| which(p)) {
        text.push('\n');
        text.push_str(&media_placeholder(p));
    }
}

/// The ids of the history's calls, in order.
pub(crate) fn call_order<'a>(msgs: &[Message<'a>]) -> Vec<&'a str> {
    msgs.iter().flat_map(Message::calls).map(|c| c.id).collect()
}

/// Texts of up to this many bytes are never replaced by a pointer, so they are not hashed.
const DEDUPE_MIN: usize = 64;

/// Whether `t` is a stand-in an earlier compaction wrote for an output (a prune placeholder, a
/// pointer to a copy, a recoverable fold's placeholder, a masked observation's first line and
/// size). Two of them can be equal for outputs that were not (the same tool, the same byte
/// count; two pointers to one message): deduplicated as copies, they made an agent loop's
/// different outputs "the same output as" each other, down a chain of pointers.
fn is_stand_in(t: &str) -> bool {
    let t = t.trim();
    [PRUNED_OPENER, "[same output as message ", FOLDED_OPENER]
        .iter()
        .any(|m| t.starts_with(m))
        || (t.ends_with(" tokens)]")
            && t.lines()
                .last()
                .is_some_and(|l| l.starts_with(PRUNED_OPENER)))
}

/// How a masked output's placeholder opens (`placeholder`, `mask_plan`'s observation
/// placeholder), and a recoverable fold's (`recall::placeholder`).
pub(crate) const PRUNED_OPENER: &str = "[output pruned to save context:";
pub(crate) const FOLDED_OPENER: &str = "[folded ";

/// The newest occurrence of each tool-result text, to point older copies at it.
struct Dedupe<'t> {
    enabled: bool,
    newest: HashMap<u64, (usize, &'t str)>,
    /// The hash of each tool-result message's text, computed once.
    hashes: Vec<u64>,
}

impl<'t> Dedupe<'t> {
    fn index(msgs: &'t [Message<'_>], enabled: bool) -> Self {
        let mut d = Dedupe {
            enabled,
            newest: HashMap::new(),
            hashes: Vec::new(),
        };
        if !enabled {
            return d;
        }
        d.hashes = vec![0; msgs.len()];
        const AHEAD: usize = 8;
        for (i, m) in msgs.iter().enumerate() {
            if let Some(t) = msgs.get(i + AHEAD).and_then(result_text) {
                prefetch_edges(t);
            }
            if let Some(t) = result_text(m).filter(|t| t.len() > DEDUPE_MIN && !is_stand_in(t)) {
                d.hashes[i] = text_hash(t);
                d.newest.insert(d.hashes[i], (i, t));
            }
            if let Content::Parts(parts) = &m.content {
                for p in parts {
                    if let Part::ToolResult { content, .. } = p {
                        if let Some(t) =
                            block_text(content).filter(|t| t.len() > DEDUPE_MIN && !is_stand_in(t))
                        {
                            d.newest.insert(text_hash(t), (i, t));
                        }
                    }
                }
            }
        }
        d
    }

    /// A pointer to a newer copy of `t` (the text of message `i`; `h` its hash when known).
    fn pointer(&self, i: usize, t: &str, h: Option<u64>) -> Option<String> {
        if !self.enabled || t.len() <= DEDUPE_MIN || is_stand_in(t) {
            return None;
        }
        let &(j, other) = self.newest.get(&h.unwrap_or_else(|| text_hash(t)))?;
        (j > i && other == t).then(|| format!("[same output as message {j}, omitted here]"))
    }
}

/// The edits of one prune, collected message by message.
struct Pruner<'p> {
    est: &'p Estimator,
    opt: &'p PruneOptions,
    /// Which call each result answers (a tool's name for its placeholder).
    calls: &'p CallPairs<'p, 'p>,
    dedupe: Dedupe<'p>,
    edits: Vec<Edit>,
    changes: Vec<(usize, Change)>,
}

impl Pruner<'_> {
    /// Keep a change only when its format can write it and it saves estimated tokens.
    /// Whether it was kept.
    fn push(&mut self, i: usize, m: &Message<'_>, change: Change, saves_tokens: bool) -> bool {
        let Some(e) = saves_tokens.then(|| write(i, m, &change)).flatten() else {
            return false;
        };
        self.edits.push(e);
        self.changes.push((i, change));
        true
    }

    /// A result message (chat `tool`, a Responses output item) over its threshold, or a copy
    /// of a newer one. True when the whole result is replaced (its images with it).
    fn result_message(&mut self, i: usize, m: &Message<'_>, cost: u32) -> bool {
        let Some(id) = m.tool_call_id else {
            return false;
        };
        let tool = self.calls.name(i, id).unwrap_or("");
        let text = match &m.content {
            Content::Text(t) => match self
                .dedupe
                .pointer(i, t, self.dedupe.hashes.get(i).copied())
            {
                Some(text) => Some(text),
                None => (cost > self.opt.tool_result_max_tokens)
                    .then(|| placeholder(tool, self.opt.mentions.then_some(&**t), t.len(), cost)),
            },
            Content::Parts(ps) => self.result_parts(tool, ps, cost),
            Content::None => None,
        };
        let Some(text) = text else {
            return false;
        };
        // The whole message priced again with the new text (its old price is known).
        let after = self.est.message(&Message {
            role: m.role,
            role_str: m.role_str,
            name: m.name,
            content: Content::Text(Cow::Borrowed(&text)),
            tool_calls: m.tool_calls.clone(),
            tool_call_id: m.tool_call_id,
            reasoning: m.reasoning.clone(),
            wire: m.wire,
            thought_signatures: m.thought_signatures,
            item: m.item,
            item_id: m.item_id,
            images_from: None,
        });
        self.push(i, m, Change::ResultText { part: None, text }, after < cost)
    }

    /// The placeholder of a result whose content is a list of texts and images (a chat `tool`
    /// message's parts, a Responses output list, Ollama's text beside its native `images`):
    /// only when its text alone is over the threshold, as a short text beside a screenshot is
    /// kept and the screenshot masked on its own (`image`, `native_images`). The images are
    /// said after the text's placeholder, each by its size.
    fn result_parts(&self, tool: &str, ps: &[Part<'_>], cost: u32) -> Option<String> {
        if !ps
            .iter()
            .all(|p| matches!(p, Part::Text(_)) || p.is_media())
        {
            return None;
        }
        let joined = crate::message::joined_texts(ps)?;
        if self.est.text(&joined) <= f64::from(self.opt.tool_result_max_tokens) {
            return None;
        }
        let mut text = placeholder(
            tool,
            self.opt.mentions.then_some(&*joined),
            joined.len(),
            cost,
        );
        say_media(&mut text, ps, |p| p.is_media());
        Some(text)
    }

    /// Arguments longer than the knob, shrunk to valid JSON.
    fn arguments(&mut self, i: usize, m: &Message<'_>, call: CallAt, arguments: &str) {
        if let Some(json) = shorter_arguments(arguments, self.opt.arguments_max_chars) {
            let saves = self.est.text(&json) < self.est.text(arguments);
            self.push(i, m, Change::Arguments { call, json }, saves);
        }
    }

    /// An image outside the tail, replaced by its size.
    fn image(&mut self, i: usize, m: &Message<'_>, part: usize, img: &Image<'_>) {
        let text = image_placeholder(img);
        let after = if responses_tool_items::is_screenshot(m) {
            f64::from(self.est.image(&responses_tool_items::blank_screenshot()))
        } else {
            self.est.text(&text)
        };
        let saves = after < f64::from(self.est.image(img));
        self.push(i, m, Change::Image { part, text }, saves);
    }

    /// A document, a recording or a video outside the tail (`Part::masked_media`), replaced
    /// by what it was, as an image is by its size. Never masked, five three-page PDFs a tool
    /// returned stayed 29,151 tokens under `prune` and `strategy="mask"`.
    fn media(&mut self, i: usize, m: &Message<'_>, part: usize, p: &Part<'_>) {
        let text = media_placeholder(p);
        let saves = self.est.text(&text) < self.est.part(p);
        self.push(i, m, Change::Image { part, text }, saves);
    }

    /// The images of Ollama's native `images` field (content parts `from` on) outside the
    /// tail, each replaced by its size, all at once: one edit empties the field
    /// (`openai_chat::native_images_masked`), as two would each write it whole.
    fn native_images(&mut self, i: usize, m: &Message<'_>, from: usize) {
        let images: Vec<&Image<'_>> = m.parts()[from..]
            .iter()
            .filter_map(|p| match p {
                Part::Image(img) => Some(img),
                _ => None,
            })
            .collect();
        let text: Vec<String> = images.iter().map(|img| image_placeholder(img)).collect();
        let text = text.join("\n");
        let cost: f64 = images
            .iter()
            .map(|img| f64::from(self.est.image(img)))
            .sum();
        let saves = self.est.text(&text) < cost;
        self.push(i, m, Change::Image { part: from, text }, saves);
    }

    /// A result block (Anthropic `tool_result`, Bedrock `toolResult`, ...) over its threshold,
    /// or a copy of a newer one.
    fn result_block(
        &mut self,
        i: usize,
        m: &Message<'_>,
        part: usize,
        p: &Part<'_>,
        tool_use_id: &str,
        content: &[Part<'_>],
    ) {
        let est = self.est;
        let cost = est.message(&Message {
            content: Content::Parts(vec![p.clone()]),
            ..Message::empty("user")
        });
        let tool = self.calls.name(i, tool_use_id).unwrap_or("");
        let text = match block_text(content).and_then(|t| self.dedupe.pointer(i, t, None)) {
            Some(text) => Some(text),
            None => (cost > self.opt.tool_result_max_tokens).then(|| {
                let bytes = content
                    .iter()
                    .map(|c| match c {
                        Part::Text(t) => t.len(),
                        _ => 0,
                    })
                    .sum();
                let joined = self
                    .opt
                    .mentions
                    .then(|| crate::message::joined_texts(content))
                    .flatten();
                let mut text = placeholder(tool, joined.as_deref(), bytes, cost);
                // (Its screenshots said by their size, its documents by their pages, as a
                // chat result's are.)
                say_media(&mut text, content, |p| p.is_media());
                text
            }),
        };
        let Some(text) = text else {
            return;
        };
        // Images in a result (screenshots) are old output too: their price counts.
        let old: f64 = content
            .iter()
            .map(|c| match c {
                Part::Text(t) => est.text(t),
                Part::Image(img) => f64::from(est.image(img)),
                p if p.masked_media().is_some() => est.part(p),
                _ => 0.0,
            })
            .sum();
        let saves = est.text(&text) < old;
        let change = Change::ResultText {
            part: Some(part),
            text,
        };
        self.push(i, m, change, saves);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Format, ToolCall};
    use crate::provider::Provider;
    use std::borrow::Cow;

    fn history<'a>(big: &'a str, args: &'a str) -> Vec<Message<'a>> {
        let mut v = vec![
            Message::text("system", "sys"),
            Message::text("user", "task"),
        ];
        for k in 0..6 {
            let id: &'static str = ["c0", "c1", "c2", "c3", "c4", "c5"][k];
            let mut a = Message::empty("assistant");
            a.wire = Format::OpenAIChat;
            a.tool_calls.push(ToolCall {
                id,
                name: "read_file",
                arguments: Cow::Borrowed(args),
            });
            v.push(a);
            let mut r = Message::empty("tool");
            r.wire = Format::OpenAIChat;
            r.tool_call_id = Some(id);
            r.content = Content::Text(Cow::Borrowed(big));
            v.push(r);
        }
        v
    }

    #[test]
    fn argument_edits_shrink_every_long_call_the_last_one_too() {
        let args = format!("{{\"path\":\"a.py\",\"body\":\"{}\"}}", "x".repeat(500));
        let msgs = history("out", &args);
        let edits = argument_edits(&msgs, 80);
        // Six calls, the last (pending) one included; each written as valid JSON <= 80 chars.
        assert_eq!(edits.len(), 6);
        assert_eq!(edits.last().map(|e| e.message), Some(12));
        for e in &edits {
            let inner: String = serde_json::from_str(&e.value).unwrap();
            assert!(crate::shrink_json::is_valid_json(&inner) && inner.chars().count() <= 80);
        }
        assert!(argument_edits(&history("out", "{\"path\":\"a.py\"}"), 80).is_empty());
    }

    #[test]
    fn old_outputs_become_placeholders_and_the_tail_is_untouched() {
        let big = "line of output with some words in it\n".repeat(500);
        let args = format!("{{\"path\":\"a.py\",\"pattern\":\"{}\"}}", "x".repeat(5000));
        let msgs = history(&big, &args);
        let est = Estimator::new(Provider::OpenAI, "");
        let opt = PruneOptions {
            protect_tail_tokens: 5_000,
            dedupe: false,
            ..Default::default()
        };
        let plan = plan(&msgs, &est, &opt);
        assert!(plan.protected_from > 2 && plan.protected_from < msgs.len());
        assert!(plan
            .edits
            .iter()
            .all(|e| e.message < plan.protected_from && e.message >= 1));
        let placeholders = plan
            .edits
            .iter()
            .filter(|e| e.path == [Step::Key("content")] && e.value.contains("read_file returned"))
            .count();
        assert!(placeholders >= 1);
        let mut shortened = 0;
        for e in &plan.edits {
            if e.path.last() == Some(&Step::Key("arguments")) {
                let text: String = serde_json::from_str(&e.value).unwrap();
                assert!(text.chars().count() <= 2_000);
                assert!(serde_json::from_str::<serde_json::Value>(&text).is_ok());
                shortened += 1;
            }
        }
        assert!(shortened >= 1);
    }

    #[test]
    fn a_long_result_beside_an_image_is_replaced_whole_and_a_short_one_keeps_its_words() {
        use crate::message::Detail;
        let shot = Part::Image(Image {
            source: ImageSource::Url("https://example.com/shot.png"),
            detail: Detail::default(),
        });
        let long = "line of build output with some words in it\n".repeat(400);
        let mut msgs = history("out", "{}");
        for (k, text) in [(3, long.as_str()), (5, "built")] {
            msgs[k].content = Content::Parts(vec![Part::Text(Cow::Borrowed(text)), shot.clone()]);
        }
        let est = Estimator::new(Provider::OpenAI, "gpt-4o");
        let opt = PruneOptions {
            protect_tail_tokens: 10,
            dedupe: false,
            ..Default::default()
        };
        let plan = plan(&msgs, &est, &opt);
        let of = |k: usize| -> Vec<&Change> {
            plan.changes
                .iter()
                .filter(|(i, _)| *i == k)
                .map(|(_, c)| c)
                .collect()
        };
        // One edit writes the whole content (a string): no second edit of its image part.
        match of(3).as_slice() {
            [Change::ResultText { part: None, text }] => {
                assert!(text.starts_with("[output pruned to save context: read_file returned"));
                assert!(text.ends_with("\n[image omitted]"), "{text}");
            }
            other => panic!("{other:?}"),
        }
        let e = plan.edits.iter().find(|e| e.message == 3).unwrap();
        assert_eq!(e.path, [Step::Key("content")]);
        assert!(e.value.starts_with('"'));
        // A short text beside its image keeps its words: the image alone is masked.
        assert!(matches!(of(5).as_slice(), [Change::Image { part: 1, .. }]));
    }

    #[test]
    fn repeated_output_points_to_the_newer_copy() {
        let big = "same listing of the directory, again and again\n".repeat(3);
        let msgs = history(&big, "{}");
        let est = Estimator::new(Provider::OpenAI, "");
        let opt = PruneOptions {
            protect_tail_tokens: 10,
            ..Default::default()
        };
        let plan = plan(&msgs, &est, &opt);
        assert!(plan
            .edits
            .iter()
            .any(|e| e.value.starts_with("\"[same output as message")));
    }

    #[test]
    fn an_earlier_compaction_s_stand_ins_are_never_taken_for_copies() {
        // Two different outputs of one tool and byte count got equal placeholders; pointers to
        // one message are equal too. Neither is a copy of anything.
        let est = Estimator::new(Provider::OpenAI, "");
        let opt = PruneOptions {
            protect_tail_tokens: 10,
            ..Default::default()
        };
        for stand_in in [
            "[output pruned to save context: read_file returned 7,811 bytes (~2,757 tokens)]",
            "[same output as message 17, omitted here; it is a much longer pointer text]",
            "[folded tool output of read_file, ~2,757 tokens; id=cf0123456789ab, contextfold_recall restores it]",
            "<returncode>0</returncode>\n[output pruned to save context: 7,811 bytes (~2,757 tokens)]",
        ] {
            assert!(is_stand_in(stand_in), "{stand_in}");
            let msgs = history(stand_in, "{}");
            let plan = plan(&msgs, &est, &opt);
            assert!(
                !plan.edits.iter().any(|e| e.value.contains("[same output as message")),
                "{stand_in}: {:?}",
                plan.edits
            );
        }
        assert!(!is_stand_in("[1, 2, 3] a JSON list an output printed"));
    }

    #[test]
    fn cache_blocks_do_not_move_while_the_history_grows() {
        let costs: Vec<u32> = (0..200).map(|i| 100 + (i % 7) * 30).collect();
        let legal = vec![true; 201];
        let mut last = 0;
        for tail in 50..200 {
            let e = prune_end(&costs, tail, 5_000, &legal);
            assert!(e <= tail && e >= last);
            last = e;
        }
        let distinct: std::collections::BTreeSet<_> = (50..200)
            .map(|t| prune_end(&costs, t, 5_000, &legal))
            .collect();
        assert!(
            distinct.len() < 10,
            "boundary moved {} times",
            distinct.len()
        );
    }
}
