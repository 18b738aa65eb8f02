//! Where the summary of a compaction sits: which messages of the middle stay verbatim around
//! it (pinned ones, server compaction items, and what keeps their neighbours' roles apart),
//! where the tail starts, and whether the summary is a message of its own or a text block
//! merged into a neighbour, so that no two neighbours of the output share a role.

use std::collections::HashSet;

use crate::message::{Content, Message, Part};
use crate::turn::{collide, seat, Turn};
use crate::wire::WireFormat;

/// Where the summary goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// A new message of this turn (User or Assistant) between the kept messages and the tail.
    Insert(Turn),
    /// A text block added to caller message `index` (at its start, or at its end), because
    /// any new message there would share a role with a neighbour.
    Merge { index: usize, at_start: bool },
}

/// The seat found: the tail's start (moved from the walk's when the roles asked it), the kept
/// segments of the middle (`a..b` ranges of caller indices, in order) and the placement.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Seat {
    pub tail_start: usize,
    pub segments: Vec<(usize, usize)>,
    pub placement: Placement,
}

/// True when a part is an opaque compaction item of a server (OpenAI Responses `compaction`
/// items, Anthropic `compaction` blocks): kept verbatim, never folded.
pub(crate) fn is_server_compaction(m: &Message<'_>) -> bool {
    match &m.content {
        Content::Parts(parts) => parts.iter().any(|p| {
            matches!(p, Part::Opaque { kind, .. } if kind == "compaction" || kind.ends_with("_compaction") || kind == "compaction_summary")
        }),
        _ => false,
    }
}

/// True for a message that stands for the rest of the conversation: a Responses
/// `configuration_update` (its settings "stay in effect until a later update replaces them")
/// or `additional_tools` item (tools declared mid-conversation, which later calls name), or a
/// turn that adds or removes tools mid-conversation (Anthropic's `tool_addition` /
/// `tool_removal` blocks, Bedrock's `toolAddition` / `toolRemoval`). Folded like a turn, the
/// settings reverted and the calls after it named tools declared nowhere: kept verbatim, never
/// folded.
pub(crate) fn is_standing_item(m: &Message<'_>) -> bool {
    matches!(m.item, Some("configuration_update" | "additional_tools"))
        || m.parts().iter().any(|p| {
            matches!(p, Part::Opaque { kind, .. } if matches!(kind.as_ref(),
                "tool_addition" | "tool_removal" | "toolAddition" | "toolRemoval"))
        })
}

/// How many thinking or reasoning parts open `m`'s content: a summary merged at its start goes
/// after them (Anthropic wants a turn's thinking first; the signed blocks stay as they are).
pub(crate) fn leading_thinking(m: &Message<'_>) -> usize {
    match &m.content {
        Content::Parts(ps) => ps.iter().take_while(|p| p.is_thinking()).count(),
        _ => 0,
    }
}

/// The history around the fold, as the seat search reads it.
pub(crate) struct Seating<'s, 'a> {
    pub msgs: &'s [Message<'a>],
    /// `legal[i]`: a cut before message `i` splits no tool group.
    pub legal: &'s [bool],
    pub format: WireFormat,
    pub head_end: usize,
    pub pinned: &'s HashSet<usize>,
    pub min_tail: usize,
}

impl Seating<'_, '_> {
    /// Kept verbatim wherever it is: pinned, a server's compaction item, or a Responses item
    /// that stands for the rest of the conversation (`is_standing_item`).
    pub fn special(&self, i: usize) -> bool {
        self.pinned.contains(&i)
            || is_server_compaction(&self.msgs[i])
            || is_standing_item(&self.msgs[i])
    }

    /// The whole tool group around message `i` (`a..b`, never before the head's end).
    fn group_of(&self, i: usize) -> (usize, usize) {
        let n = self.msgs.len();
        let mut a = i;
        while a > self.head_end && !self.legal[a] {
            a -= 1;
        }
        let mut b = i + 1;
        while b < n && !self.legal[b] {
            b += 1;
        }
        (a, b)
    }

    /// Kept groups of the middle before `tail_start`, each a whole tool group, extended back
    /// while its first message would share a role with what precedes it in the output.
    pub fn kept_segments(&self, tail_start: usize) -> Vec<(usize, usize)> {
        let mut segs: Vec<(usize, usize)> = Vec::new();
        for i in self.head_end..tail_start {
            if !self.special(i) {
                continue;
            }
            let (a, b) = self.group_of(i);
            let b = b.min(tail_start);
            match segs.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => segs.push((a, b)),
            }
        }
        // Alternation at each seam: extend a segment back to earlier legal cuts.
        let mut k = 0;
        while k < segs.len() {
            let prev_end = if k == 0 { self.head_end } else { segs[k - 1].1 };
            let prev_turn = (prev_end > 0).then(|| seat(self.format, &self.msgs[prev_end - 1]));
            let (mut a, b) = segs[k];
            while a > prev_end
                && prev_turn.is_some_and(|t| collide(t, seat(self.format, &self.msgs[a])))
            {
                a -= 1;
                while a > prev_end && !self.legal[a] {
                    a -= 1;
                }
            }
            segs[k] = (a, b);
            if k > 0 && a <= segs[k - 1].1 {
                segs[k - 1].1 = b;
                segs.remove(k);
            } else {
                k += 1;
            }
        }
        segs
    }

    /// The summary's role: no collision with the message before it (the last kept one or the
    /// head's last) nor with the tail's first; strict formats want a user turn first; no
    /// assistant turn right before a system message, nor a user turn right after a tool
    /// result, where the format's servers refuse one
    /// (`Dialect::refuses_assistant_before_system`, `Dialect::refuses_user_after_tool`).
    fn choose(&self, segs: &[(usize, usize)], t: usize) -> Option<Turn> {
        let msgs = self.msgs;
        let prev_idx = segs.last().map(|s| s.1).unwrap_or(self.head_end);
        let prev = (prev_idx > 0).then(|| seat(self.format, &msgs[prev_idx - 1]));
        let first_turn = (0..prev_idx).all(|i| Turn::of(&msgs[i]) == Turn::System);
        // An empty tail (min_tail 0) has no first message to collide with.
        let next = (t < msgs.len()).then(|| seat(self.format, &msgs[t]));
        let dialect = self.format.dialect();
        let before_system = next == Some(Turn::System) && dialect.refuses_assistant_before_system;
        let after_tool = prev == Some(Turn::Tool) && dialect.refuses_user_after_tool;
        [Turn::User, Turn::Assistant].into_iter().find(|&c| {
            let user_first_ok = c == Turn::User || !first_turn || !self.format.strict_turns();
            let system_ok = c == Turn::User || !before_system;
            let tool_ok = c == Turn::Assistant || !after_tool;
            !prev.is_some_and(|p| collide(p, c))
                && !next.is_some_and(|x| collide(c, x))
                && user_first_ok
                && system_ok
                && tool_ok
        })
    }

    /// Whether `m` may carry the summary as a text block: never a turn with thinking (its
    /// signed blocks stay as they are), a tool result at its start, or a Responses item without
    /// content (a role-less item: an `image_generation_call` read as its image has parts, but no
    /// `content` to write them in, and the merge raised `InvalidMessageError`).
    fn mergeable(&self, m: &Message<'_>, at_start: bool) -> bool {
        if self.format == WireFormat::Responses && m.item.is_some() {
            return false;
        }
        let parts_ok = match &m.content {
            Content::Parts(ps) => !ps
                .iter()
                .any(|p| p.is_thinking() || (at_start && matches!(p, Part::ToolResult { .. }))),
            Content::None => self.format == WireFormat::Chat,
            Content::Text(_) => true,
        };
        matches!(Turn::of(m), Turn::User | Turn::Assistant) && parts_ok
    }

    /// Merge into a neighbour instead of a same-role pair. Pinned messages, server compaction
    /// items and the head (the task stays byte-identical, and so does the prompt cache's
    /// prefix) are never merged into: the tail's first message takes the summary at its start,
    /// else the first user turn of the tail that can carry a text after its own blocks (a
    /// tool-result turn of a thinking tool loop).
    fn merge_into(&self, tail_start: usize) -> Option<Placement> {
        let msgs = self.msgs;
        // A tail that opens on system messages (a note mid-conversation, where no summary
        // message may stand before it: `choose`) has the turn right after them take the summary
        // at its start, as the tail's first turn would; found last, the user's last turn took
        // it after their own words.
        let first = (tail_start..msgs.len())
            .find(|&i| Turn::of(&msgs[i]) != Turn::System)
            .unwrap_or(tail_start);
        if !self.special(first) && self.mergeable(&msgs[first], true) {
            return Some(Placement::Merge {
                index: first,
                at_start: true,
            });
        }
        (tail_start..msgs.len())
            .find(|&i| {
                !self.special(i)
                    && Turn::of(&msgs[i]) == Turn::User
                    && self.mergeable(&msgs[i], false)
            })
            .map(|index| Placement::Merge {
                index,
                at_start: false,
            })
    }

    /// The seat for a tail the walk starts at `tail_start`: a summary message of its own where
    /// the roles allow, else at a nearby legal cut (earlier while the tail stays within
    /// `ceiling` tokens, then later), else merged into a neighbour, else from the nearest
    /// earlier cut where either works.
    pub fn place(&self, costs: &[u32], tail_start: usize, ceiling: f64) -> Seat {
        let segments = self.kept_segments(tail_start);
        if let Some(turn) = self.choose(&segments, tail_start) {
            return Seat {
                tail_start,
                segments,
                placement: Placement::Insert(turn),
            };
        }
        if let Some(seat) = self.nearby_insert(costs, tail_start, ceiling) {
            return seat;
        }
        if let Some(placement) = self.merge_into(tail_start) {
            return Seat {
                tail_start,
                segments,
                placement,
            };
        }
        // No seat and no message that may carry the summary (a pinned turn opens a tail of tool
        // results, say): a valid request comes before the tail's ceiling, so the tail keeps
        // more, from the nearest earlier legal cut whose roles work out (the budget check and
        // the Compactor's degrading steps follow).
        (self.head_end + 1..tail_start)
            .rev()
            .filter(|&t| self.legal[t])
            .find_map(|t| {
                let segments = self.kept_segments(t);
                if segments.last().is_some_and(|l| l.1 >= t) {
                    return None;
                }
                let placement = self
                    .choose(&segments, t)
                    .map(Placement::Insert)
                    .or_else(|| self.merge_into(t))?;
                Some(Seat {
                    tail_start: t,
                    segments,
                    placement,
                })
            })
            .or_else(|| {
                self.after_thinking(tail_start).map(|placement| Seat {
                    tail_start,
                    segments: segments.clone(),
                    placement,
                })
            })
            .unwrap_or(Seat {
                tail_start,
                segments,
                placement: Placement::Insert(Turn::User),
            })
    }

    /// The last resort of a chat thinking tool loop (LangChain messages of a thinking model):
    /// every cut opens the tail on an assistant turn with thinking after the user's task, and
    /// the tool results are `tool` messages, which carry no summary. The tail's first turn takes
    /// the summary after its thinking, before its text and calls (where the model writes its
    /// own text); before, no seat was found and the compaction failed as a role collision.
    fn after_thinking(&self, tail_start: usize) -> Option<Placement> {
        let m = self.msgs.get(tail_start)?;
        let Content::Parts(ps) = &m.content else {
            return None;
        };
        let lead = leading_thinking(m);
        let ok = self.format != WireFormat::Responses
            && !self.special(tail_start)
            && Turn::of(m) == Turn::Assistant
            && lead > 0
            && !ps[lead..].iter().any(Part::is_thinking);
        ok.then_some(Placement::Merge {
            index: tail_start,
            at_start: true,
        })
    }

    /// A summary message of its own at one of the 3 legal cuts before `tail_start` whose tail
    /// stays within `ceiling` tokens, else at one of the 3 after it.
    fn nearby_insert(&self, costs: &[u32], tail_start: usize, ceiling: f64) -> Option<Seat> {
        let n = self.msgs.len();
        let tail_cost = |t: usize| -> u64 { costs[t..].iter().map(|&c| u64::from(c)).sum() };
        let earlier = (self.head_end + 1..tail_start)
            .rev()
            .filter(|&t| self.legal[t])
            .take(3)
            .filter(|&t| tail_cost(t) as f64 <= ceiling);
        let later = (tail_start + 1..=n.saturating_sub(self.min_tail))
            .filter(|&t| self.legal[t])
            .take(3);
        earlier.chain(later).find_map(|t| {
            let segments = self.kept_segments(t);
            if segments.last().is_some_and(|l| l.1 >= t) {
                return None;
            }
            let turn = self.choose(&segments, t)?;
            Some(Seat {
                tail_start: t,
                segments,
                placement: Placement::Insert(turn),
            })
        })
    }

    /// Output positions where the assembled history (head, kept segments, summary, tail) joins
    /// messages that were not neighbours in the input.
    pub fn seams(&self, segments: &[(usize, usize)], placement: Placement) -> Vec<usize> {
        let mut seams = Vec::new();
        let mut pos = self.head_end;
        // (A kept segment right after the head or after another one joins messages that were
        // neighbours in the history: no seam of the compaction's making. Two user turns in a
        // row there are the caller's, which chat allows; a pinned second one was refused.)
        let mut next = self.head_end;
        for &(a, b) in segments {
            if pos > 0 && a != next {
                seams.push(pos);
            }
            pos += b - a;
            next = b;
        }
        if pos > 0 {
            seams.push(pos);
        }
        if let Placement::Insert(_) = placement {
            seams.push(pos + 1);
        }
        seams
    }
}
