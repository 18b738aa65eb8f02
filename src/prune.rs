//! Pruning of old tool output: a plan of edits computed from the message views.
//!
//! Outside the protected tail (the same tail walk and estimator as everywhere), large tool
//! results become a one-line placeholder naming the tool and the size, an output repeated later
//! becomes a pointer to the newer copy, images become a short placeholder and long tool-call
//! arguments are shrunk with `shrink_json` (still valid JSON, SEEDS item 2). The plan says what
//! to replace; the bindings build new message objects only for the edited messages.

use std::collections::HashMap;

use crate::estimate::Estimator;
use crate::image::{dims_of_base64, dims_of_bytes};
use crate::message::{Content, ImageSource, Message, Part};
use crate::shrink_json::shrink_json;
use crate::tail_walk::{find_tail_start, legal_cuts, TailOptions};

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
        }
    }
}

/// One replacement. `part` indexes the message's content list; `call` its tool calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Replace the whole content of a tool-result message (OpenAI `tool`, Responses output).
    Content { index: usize, text: String },
    /// Replace the content of an Anthropic `tool_result` block.
    ResultBlock {
        index: usize,
        part: usize,
        text: String,
    },
    /// Replace an image part with a text part.
    Image {
        index: usize,
        part: usize,
        text: String,
    },
    /// Replace the arguments of a tool call (`tool_calls[call]`, or a `tool_use` block at
    /// content `part` when `in_content`).
    Arguments {
        index: usize,
        call: usize,
        in_content: bool,
        text: String,
    },
}

/// What a prune decided: the tail start it protected and the edits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrunePlan {
    /// Messages from here on are untouched.
    pub protected_from: usize,
    pub edits: Vec<Edit>,
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

fn group_sep(n: usize) -> String {
    // 1234567 -> "1,234,567": placeholders are read by models and people.
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// The one-line stand-in of a pruned output. Sizes: UTF-8 bytes (known without a scan) and
/// the estimator's tokens.
fn placeholder(tool: &str, bytes: usize, tokens: u32) -> String {
    let tool = if tool.is_empty() { "a tool" } else { tool };
    format!(
        "[output pruned to save context: {tool} returned {} bytes (~{} tokens)]",
        group_sep(bytes),
        group_sep(tokens as usize)
    )
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
    let (costs, legal) = (costs.to_vec(), legal.to_vec());
    let tail = find_tail_start(
        &costs,
        &legal,
        &TailOptions {
            budget_tokens: opt.protect_tail_tokens,
            protect_first_n: opt.protect_first_n,
            min_tail: opt.min_tail,
            soft_ceiling: opt.soft_ceiling,
        },
    );
    let end = prune_end(&costs, tail, opt.cache_block_tokens, &legal);
    let first = opt.protect_first_n.min(end);

    let mut tool_names: HashMap<&str, &str> = HashMap::new();
    for m in msgs {
        for c in &m.tool_calls {
            tool_names.insert(c.id, c.name);
        }
        if let Content::Parts(parts) = &m.content {
            for p in parts {
                if let Part::ToolUse(c) = p {
                    tool_names.insert(c.id, c.name);
                }
            }
        }
    }
    // Newest occurrence of each result text, to point older copies at it. Texts of up to
    // DEDUPE_MIN bytes are never replaced by a pointer, so they are not hashed at all.
    const DEDUPE_MIN: usize = 64;
    let mut newest: HashMap<u64, (usize, &str)> = HashMap::new();
    // The hash of each tool-result message's text, computed once.
    let mut hashes: Vec<u64> = Vec::new();
    if opt.dedupe {
        hashes = vec![0; msgs.len()];
        for (i, m) in msgs.iter().enumerate() {
            if let Some(t) = result_text(m).filter(|t| t.len() > DEDUPE_MIN) {
                hashes[i] = text_hash(t);
                newest.insert(hashes[i], (i, t));
            }
            if let Content::Parts(parts) = &m.content {
                for p in parts {
                    if let Part::ToolResult { content, .. } = p {
                        if let Some(t) = block_text(content).filter(|t| t.len() > DEDUPE_MIN) {
                            newest.insert(text_hash(t), (i, t));
                        }
                    }
                }
            }
        }
    }
    // `h`: the text's hash when already known.
    let pointer = |i: usize, t: &str, h: Option<u64>| -> Option<String> {
        if !opt.dedupe || t.len() <= DEDUPE_MIN {
            return None;
        }
        let &(j, other) = newest.get(&h.unwrap_or_else(|| text_hash(t)))?;
        (j > i && other == t).then(|| format!("[same output as message {j}, omitted here]"))
    };

    let mut edits = Vec::new();
    for (i, m) in msgs.iter().enumerate().take(end).skip(first) {
        if let Some(id) = m.tool_call_id {
            if let Content::Text(t) = &m.content {
                let tool = tool_names.get(id).copied().unwrap_or("");
                if let Some(text) = pointer(i, t, hashes.get(i).copied()) {
                    edits.push(Edit::Content { index: i, text });
                } else if costs[i] > opt.tool_result_max_tokens {
                    let text = placeholder(tool, t.len(), costs[i]);
                    edits.push(Edit::Content { index: i, text });
                }
            }
        }
        for (call, c) in m.tool_calls.iter().enumerate() {
            if c.arguments.len() > opt.arguments_max_chars
                && c.arguments.chars().count() > opt.arguments_max_chars
            {
                let text = shrink_json(&c.arguments, opt.arguments_max_chars);
                if text != *c.arguments {
                    edits.push(Edit::Arguments {
                        index: i,
                        call,
                        in_content: false,
                        text,
                    });
                }
            }
        }
        let Content::Parts(parts) = &m.content else {
            continue;
        };
        for (part, p) in parts.iter().enumerate() {
            match p {
                Part::Image(img) if opt.prune_images => {
                    let dims = match img.source {
                        ImageSource::Base64(s) => dims_of_base64(s),
                        ImageSource::Bytes(b) => dims_of_bytes(b),
                        ImageSource::Url(_) => None,
                    };
                    let text = match dims {
                        Some(d) => format!("[image omitted: {}x{}]", d.width, d.height),
                        None => "[image omitted]".to_string(),
                    };
                    edits.push(Edit::Image {
                        index: i,
                        part,
                        text,
                    });
                }
                Part::ToolResult {
                    tool_use_id,
                    content,
                } => {
                    let cost = est.message(&Message {
                        content: Content::Parts(vec![p.clone()]),
                        ..Message::empty("user")
                    });
                    let tool = tool_names.get(tool_use_id).copied().unwrap_or("");
                    let text_now = block_text(content);
                    if let Some(text) = text_now.and_then(|t| pointer(i, t, None)) {
                        edits.push(Edit::ResultBlock {
                            index: i,
                            part,
                            text,
                        });
                    } else if cost > opt.tool_result_max_tokens {
                        let bytes = content
                            .iter()
                            .map(|c| match c {
                                Part::Text(t) => t.len(),
                                _ => 0,
                            })
                            .sum();
                        let text = placeholder(tool, bytes, cost);
                        edits.push(Edit::ResultBlock {
                            index: i,
                            part,
                            text,
                        });
                    }
                }
                Part::ToolUse(c) if c.arguments.chars().count() > opt.arguments_max_chars => {
                    let text = shrink_json(&c.arguments, opt.arguments_max_chars);
                    if text != *c.arguments {
                        edits.push(Edit::Arguments {
                            index: i,
                            call: part,
                            in_content: true,
                            text,
                        });
                    }
                }
                _ => {}
            }
        }
    }
    PrunePlan {
        protected_from: tail,
        edits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;
    use crate::profile::Provider;
    use std::borrow::Cow;

    fn history<'a>(big: &'a str, args: &'a str) -> Vec<Message<'a>> {
        let mut v = vec![
            Message::text("system", "sys"),
            Message::text("user", "task"),
        ];
        for k in 0..6 {
            let id: &'static str = ["c0", "c1", "c2", "c3", "c4", "c5"][k];
            let mut a = Message::empty("assistant");
            a.tool_calls.push(ToolCall {
                id,
                name: "read_file",
                arguments: Cow::Borrowed(args),
            });
            v.push(a);
            let mut r = Message::empty("tool");
            r.tool_call_id = Some(id);
            r.content = Content::Text(Cow::Borrowed(big));
            v.push(r);
        }
        v
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
        assert!(plan.edits.iter().all(|e| match e {
            Edit::Content { index, text } | Edit::Arguments { index, text, .. } => {
                *index < plan.protected_from && *index >= 1 && !text.is_empty()
            }
            _ => false,
        }));
        let placeholders = plan
            .edits
            .iter()
            .filter(
                |e| matches!(e, Edit::Content { text, .. } if text.contains("read_file returned")),
            )
            .count();
        assert!(placeholders >= 1);
        for e in &plan.edits {
            if let Edit::Arguments { text, .. } = e {
                assert!(text.chars().count() <= 2_000);
            }
        }
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
            .any(|e| matches!(e, Edit::Content { text, .. } if text.starts_with("[same output as message"))));
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
