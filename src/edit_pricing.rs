//! What a mask edit saves: a message priced with one edit, or with all of its edits, applied.
//!
//! The compaction plan weighs every edit by the tokens it saves, so the pricing of an edited
//! message lives apart from the choice of edits (`mask_plan`) and from the plan itself.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::estimate::Estimator;
use crate::mask_edit::MaskEdit;
use crate::message::{Content, Message, Part};
use crate::wire::edit::{CallAt, Change};

/// An edit with the tokens it saves (the message's cost before minus after that edit alone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PricedEdit {
    pub edit: MaskEdit,
    pub saved: u32,
}

/// A copy of `m` with one edit applied (for pricing).
pub(crate) fn edited<'a>(m: &Message<'a>, e: &MaskEdit) -> Message<'a> {
    let mut out = m.clone();
    match e {
        MaskEdit::Change { change, .. } => match change {
            Change::ResultText { part: None, text } | Change::Text { text } => {
                out.content = Content::Text(Cow::Owned(text.clone()));
                // (Ollama's native images go with the result's text: `openai_chat::write`.)
                out.images_from = None;
            }
            Change::ResultText {
                part: Some(part),
                text,
            } => {
                if let Content::Parts(ps) = &mut out.content {
                    if let Some(Part::ToolResult { content, .. }) = ps.get_mut(*part) {
                        *content = vec![Part::Text(Cow::Owned(text.clone()))];
                    }
                }
            }
            Change::ResultPartText { part, inner, text } => {
                if let Content::Parts(ps) = &mut out.content {
                    if let Some(Part::ToolResult { content, .. }) = ps.get_mut(*part) {
                        if let Some(p) = content.get_mut(*inner) {
                            *p = Part::Text(Cow::Owned(text.clone()));
                        }
                    }
                }
            }
            // Ollama's native images go together, the text said in their place.
            Change::Image { part, text } if m.images_from == Some(*part) => {
                if let Content::Parts(ps) = &mut out.content {
                    ps.truncate(*part);
                    ps.push(Part::Text(Cow::Owned(text.clone())));
                }
            }
            // A computer call's screenshot becomes a one-pixel image, not text.
            Change::Image { part, .. } if crate::wire::responses_tool_items::is_screenshot(m) => {
                if let Content::Parts(ps) = &mut out.content {
                    if let Some(p) = ps.get_mut(*part) {
                        *p = Part::Image(crate::wire::responses_tool_items::blank_screenshot());
                    }
                }
            }
            Change::Image { part, text } | Change::PartText { part, text } => {
                if let Content::Parts(ps) = &mut out.content {
                    if let Some(p) = ps.get_mut(*part) {
                        *p = Part::Text(Cow::Owned(text.clone()));
                    }
                }
            }
            Change::Arguments {
                call: CallAt::Part(k),
                json,
            } => {
                if let Content::Parts(ps) = &mut out.content {
                    if let Some(Part::ToolUse(c)) = ps.get_mut(*k) {
                        c.arguments = Cow::Owned(json.clone());
                    }
                }
            }
            Change::Arguments {
                call: CallAt::ToolCalls(j),
                json,
            } => {
                if let Some(c) = out.tool_calls.get_mut(*j) {
                    c.arguments = Cow::Owned(json.clone());
                }
            }
        },
        MaskEdit::DropPart { part, .. } => {
            if let Content::Parts(ps) = &mut out.content {
                if *part < ps.len() {
                    ps.remove(*part);
                }
            }
        }
    }
    out
}

/// Cost of each edited message with all its edits applied (drops last, highest part first).
pub(crate) fn costs_with(
    msgs: &[Message<'_>],
    est: &Estimator,
    costs: &[u32],
    edits: &[PricedEdit],
) -> u64 {
    let mut by_msg: HashMap<usize, Vec<&MaskEdit>> = HashMap::new();
    for e in edits {
        by_msg.entry(e.edit.index()).or_default().push(&e.edit);
    }
    let mut total: u64 = costs.iter().map(|&c| u64::from(c)).sum();
    for (i, mut es) in by_msg {
        // Drops shift later parts: apply them after the replacements, highest part first.
        es.sort_by_key(|e| match e {
            MaskEdit::DropPart { part, .. } => (1, usize::MAX - part),
            _ => (0, 0),
        });
        let mut m = msgs[i].clone();
        for e in es {
            m = edited(&m, e);
        }
        total = total - u64::from(costs[i]) + u64::from(est.message(&m));
    }
    total
}

/// Each edit with the tokens it saves on its own.
pub(crate) fn priced(
    msgs: &[Message<'_>],
    est: &Estimator,
    costs: &[u32],
    edits: Vec<MaskEdit>,
) -> Vec<PricedEdit> {
    edits
        .into_iter()
        .map(|edit| {
            let i = edit.index();
            let after = est.message(&edited(&msgs[i], &edit));
            PricedEdit {
                saved: costs[i].saturating_sub(after),
                edit,
            }
        })
        .collect()
}

/// Edits re-indexed relative to `offset` (for pricing a slice); edits before the slice are
/// not part of it and are left out (never wrapped below zero).
pub(crate) fn shifted(edits: &[PricedEdit], offset: usize) -> Vec<PricedEdit> {
    edits
        .iter()
        .filter_map(|e| {
            let mut e = e.clone();
            match &mut e.edit {
                MaskEdit::Change { index, .. } | MaskEdit::DropPart { index, .. } => {
                    *index = index.checked_sub(offset)?
                }
            }
            Some(e)
        })
        .collect()
}
