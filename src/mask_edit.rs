//! One edit of the compaction's masking pass, format-neutral, and how the message's own wire
//! format writes it.

use crate::message::Message;
use crate::wire::edit::{CallAt, Change};
use crate::wire::write_edit as write;
use crate::wire::{Edit, Step};

/// One mask edit: a format-neutral change to a message (prune's, or the compaction's own:
/// observation placeholders, cleared tool inputs), or a block removed whole (an old turn's
/// thinking). Each is written in the message's own wire format by [`MaskEdit::wire_edit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MaskEdit {
    /// `change` and how the message's format writes it (`path`, `value`), written once.
    Change {
        index: usize,
        change: Change,
        path: Vec<Step>,
        value: String,
    },
    DropPart {
        index: usize,
        part: usize,
    },
}

impl MaskEdit {
    pub fn index(&self) -> usize {
        match self {
            MaskEdit::Change { index, .. } | MaskEdit::DropPart { index, .. } => *index,
        }
    }

    /// Which kind of edit, for the result's `pruned` list.
    pub fn kind(&self) -> &'static str {
        match self {
            MaskEdit::Change { change, .. } => match change {
                Change::ResultText { part: None, .. } => "content",
                Change::ResultText { .. } | Change::ResultPartText { .. } => "result_block",
                Change::Image { .. } => "image",
                Change::Arguments {
                    call: CallAt::ToolCalls(_),
                    ..
                } => "arguments",
                Change::Arguments { .. } => "tool_use_input",
                Change::Text { .. } => "observation",
                Change::PartText { .. } => "text_block",
            },
            MaskEdit::DropPart { .. } => "drop_part",
        }
    }

    /// The part or call position the edit touches (0 for a whole message's text).
    pub fn slot(&self) -> usize {
        match self {
            MaskEdit::Change { change, .. } => match change {
                Change::ResultText { part, .. } => part.unwrap_or(0),
                Change::ResultPartText { part, .. } => *part,
                Change::Image { part, .. } | Change::PartText { part, .. } => *part,
                Change::Arguments {
                    call: CallAt::ToolCalls(j) | CallAt::Part(j),
                    ..
                } => *j,
                Change::Text { .. } => 0,
            },
            MaskEdit::DropPart { part, .. } => *part,
        }
    }

    /// The edit as the bindings apply it, in `m`'s own wire format: the path and the
    /// replacement's JSON (`Some`), or the removal of a content block (`None`).
    pub fn wire_edit(&self, m: &Message<'_>) -> (Vec<Step>, Option<String>) {
        match self {
            MaskEdit::Change { path, value, .. } => (path.clone(), Some(value.clone())),
            MaskEdit::DropPart { part, .. } => {
                let key = crate::wire::dialect_of(m.wire).map_or("content", |d| d.content_key);
                (vec![Step::Key(key), Step::Index(*part)], None)
            }
        }
    }

    /// A change prune already wrote in the message's format.
    pub(crate) fn written(e: Edit, change: Change) -> MaskEdit {
        MaskEdit::Change {
            index: e.message,
            change,
            path: e.path,
            value: e.value,
        }
    }
}

/// `change` to message `i` as a mask edit, when its format can write it.
pub(crate) fn writable(msgs: &[Message<'_>], i: usize, change: Change) -> Option<MaskEdit> {
    let e = write(i, &msgs[i], &change)?;
    Some(MaskEdit::written(e, change))
}
