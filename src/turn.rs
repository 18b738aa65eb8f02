//! A message's turn as far as role alternation cares, and the seat it takes on a wire format.

use crate::message::{Content, Message, Part, Role};
use crate::wire::WireFormat;

/// A turn as far as alternation cares. OpenAI `tool` messages follow their call and never
/// collide with anything; system and developer messages neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    System,
    User,
    Assistant,
    Tool,
}

impl Turn {
    pub fn of(m: &Message<'_>) -> Turn {
        match m.role {
            Role::System | Role::Developer => Turn::System,
            Role::User | Role::Other => Turn::User,
            Role::Assistant => Turn::Assistant,
            Role::Tool => Turn::Tool,
        }
    }
}

/// The turn a message takes in alternation on `format`'s wire. Responses items without a role
/// of their own (function calls, reasoning) sit between messages freely: they never collide.
pub fn seat(format: WireFormat, m: &Message<'_>) -> Turn {
    let t = Turn::of(m);
    if format == WireFormat::Responses && t == Turn::Assistant {
        let item = match &m.content {
            Content::None => true,
            Content::Parts(ps) => ps.iter().all(|p| {
                matches!(
                    p,
                    Part::EncryptedReasoning(_) | Part::Thinking { .. } | Part::Opaque { .. }
                )
            }),
            Content::Text(_) => false,
        };
        if item {
            return Turn::Tool;
        }
    }
    t
}

/// Whether `a` followed by `b` breaks alternation: two user turns or two assistant turns in a
/// row (tool, system and role-free items never collide).
pub fn collide(a: Turn, b: Turn) -> bool {
    a == b && matches!(a, Turn::User | Turn::Assistant)
}
