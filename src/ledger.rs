//! The session ledger: per-message costs cached across the turns of one conversation, the usage
//! anchor and the correction factor.
//!
//! An agent asks "how full is this context?" before every model call, on a history that only
//! grew since the last call. The ledger remembers, for each message of the last history seen, an
//! identity, a cheap fingerprint and its estimated cost, so the next estimate prices only the
//! messages appended since: the provider's last reported prompt tokens plus an estimate of only
//! what was appended is the trigger that stays within a few percent of the real count.
//!
//! # Prefix-change contract
//!
//! The ledger is plain Rust and knows nothing of Python: the caller (the bindings) gives each
//! message an `id` (there: the address of the message object, `id(m)`) and a `fingerprint` (there:
//! a hash of the object's type, number of keys, content length and number of tool calls).
//! [`Ledger::matching_prefix`] compares the ids of EVERY cached message, in order, with the new
//! history (a pointer compare per message: ~10k per microsecond), so a replaced, removed or
//! inserted earlier message always ends the reused prefix at its position. Fingerprints of the
//! last [`VERIFY_TAIL`] messages of the reused prefix are re-checked on each call
//! ([`Ledger::verify_range`]), which catches in-place edits of recent messages and the one case
//! ids cannot see: a message removed, freed, and a new one allocated at the same address and
//! inserted at the same position. Edits deeper in the history that keep the same object (mutating
//! a dict in place) must be declared with [`Ledger::invalidate`] (Python: `session.invalidate(i)`
//! or `session.reset()`).
//!
//! # Anchor and correction
//!
//! A recorded usage says what the provider really counted for the first `n` messages (plus the
//! request overhead). While those `n` messages are unchanged, an estimate is
//! `real + (heuristic cost of the messages appended since)`; when the anchored prefix changes,
//! the anchor is dropped and the estimate is `correction * heuristic`. The correction is
//! `real / heuristic`, smoothed exponentially over the recorded usages of the session, and reset
//! when the recorded model changes (a different tokenizer).
//!
//! The appended part is NOT scaled by the correction: measured on the 4,310 later calls of the
//! SWE trajectories in `shared/data`, scaling it worsens p90 from 1.67% to 1.93% and p99 from
//! 8.0% to 10.6%. The whole-history ratio mixes errors that do not recur in the next messages
//! (a first tool output the heuristic mispriced, hidden provider overhead), while the marginal
//! cost of new messages has a median ratio real / heuristic of 0.99.

use crate::message::{Content, ImageSource, Message, Part};

/// Fingerprints of this many messages at the end of the reused prefix are re-checked each call.
pub const VERIFY_TAIL: usize = 8;

/// Weight of the newest observation in the smoothed correction (exponential moving average).
pub const DEFAULT_SMOOTHING: f64 = 0.5;

/// Ratios real / heuristic outside this range are not used to calibrate: such a usage counts
/// something the messages do not show (server-side state, a wrong `messages=`).
pub const RATIO_RANGE: (f64, f64) = (0.2, 5.0);

/// What the ledger remembers of one message: never the message itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Identity of the message object (its address), compared, never dereferenced.
    pub id: usize,
    /// Cheap content fingerprint, re-checked for the most recent messages.
    pub fingerprint: u64,
    /// Hash of everything the message view holds ([`content_hash`]): independent of the
    /// process, it is what a saved state compares after a replica hop.
    pub content: u64,
    /// Estimated tokens (the estimator's rounded per-message cost).
    pub tokens: u32,
    /// Bytes of the message as compact JSON (0 when the session does not track wire size).
    pub wire_bytes: u64,
    /// Characters of text the message carries (for logs).
    pub chars: u64,
}

/// The provider's real count of a prefix of the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Anchor {
    /// Number of leading messages the count covers.
    pub messages: usize,
    /// Prompt tokens the provider reported for them (overhead included).
    pub real: u64,
}

/// What a saved state keeps of one cached message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    pub content: u64,
    pub tokens: u32,
    pub wire_bytes: u64,
    pub chars: u64,
}

/// The process-independent part of a ledger (see [`Ledger::snapshot`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub overhead: u64,
    pub smoothing: f64,
    pub anchor: Option<Anchor>,
    pub correction: Option<f64>,
    pub last_len: usize,
    pub last_usage: Option<u64>,
    pub last_model: Option<String>,
    pub usages: u64,
    pub entries: Vec<Stored>,
}

/// One estimate, decomposed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The final figure: anchored or calibrated.
    pub tokens: u64,
    /// The uncalibrated heuristic: sum of per-message costs plus the overhead.
    pub heuristic: u64,
    /// Messages covered by a usage anchor (0 when not anchored).
    pub anchored: usize,
}

/// What recording a usage did, for logs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recorded {
    pub messages: usize,
    pub chars: u64,
    /// The heuristic for those messages before the usage was known.
    pub heuristic: u64,
    /// What the session would have answered (anchored or calibrated) before this usage.
    pub estimate: u64,
    pub real: u64,
    pub correction: f64,
    /// True when the recorded model differed from the previous one and the correction restarted.
    pub model_changed: bool,
}

/// Per-session cache of message costs, usage anchor and correction.
#[derive(Debug, Clone)]
pub struct Ledger {
    // Struct of arrays: the identity scan of every call reads `ids` alone (8 bytes a message,
    // 80 KB for 10k messages: it stays in L2 and compares as memory blocks).
    ids: Vec<usize>,
    fingerprints: Vec<u64>,
    contents: Vec<u64>,
    /// True for a ledger restored from a saved state until its first history is matched: its
    /// ids and cheap fingerprints belong to another process and mean nothing here.
    unbound: bool,
    /// `cum_tokens[i]` = tokens of the first `i` messages (one more element than `ids`).
    cum_tokens: Vec<u64>,
    cum_wire: Vec<u64>,
    cum_chars: Vec<u64>,
    overhead: u64,
    anchor: Option<Anchor>,
    correction: Option<f64>,
    smoothing: f64,
    /// Messages of the last estimated history (what `record` applies to by default).
    last_len: usize,
    last_usage: Option<u64>,
    last_model: Option<String>,
    usages: u64,
}

impl Ledger {
    /// An empty ledger for requests whose overhead (system, tools, priming) is `overhead`.
    pub fn new(overhead: u32, smoothing: f64) -> Self {
        Ledger {
            ids: Vec::new(),
            fingerprints: Vec::new(),
            contents: Vec::new(),
            unbound: false,
            cum_tokens: vec![0],
            cum_wire: vec![0],
            cum_chars: vec![0],
            overhead: u64::from(overhead),
            anchor: None,
            correction: None,
            smoothing: smoothing.clamp(0.0, 1.0),
            last_len: 0,
            last_usage: None,
            last_model: None,
            usages: 0,
        }
    }

    /// Number of messages whose costs are cached.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The cached identities, oldest first.
    pub fn ids(&self) -> &[usize] {
        &self.ids
    }

    /// How many leading cached messages have the same ids, in order, as `ids`.
    pub fn matching_prefix(&self, ids: &[usize]) -> usize {
        let n = self.ids.len().min(ids.len());
        let (a, b) = (&self.ids[..n], &ids[..n]);
        // Block compares (memcmp) find the block of the first difference; the common case, an
        // unchanged prefix, is one pass at memory speed.
        const BLOCK: usize = 512;
        let mut start = 0;
        for (x, y) in a.chunks(BLOCK).zip(b.chunks(BLOCK)) {
            if x != y {
                return start + x.iter().zip(y).position(|(p, q)| p != q).unwrap_or(x.len());
            }
            start += x.len();
        }
        n
    }

    /// `matching_prefix` over a history of `len` messages whose `i`-th id is `id_at(i)`, for
    /// callers that read ids one at a time.
    pub fn matching_prefix_by(&self, len: usize, mut id_at: impl FnMut(usize) -> usize) -> usize {
        let n = self.ids.len().min(len);
        let mut i = 0;
        while i < n && self.ids[i] == id_at(i) {
            i += 1;
        }
        i
    }

    /// Indices whose fingerprints should be re-checked when the first `prefix` cached messages
    /// are reused: the last [`VERIFY_TAIL`] of them.
    pub fn verify_range(&self, prefix: usize) -> std::ops::Range<usize> {
        prefix.saturating_sub(VERIFY_TAIL)..prefix
    }

    /// The cached fingerprint of message `i`.
    pub fn fingerprint(&self, i: usize) -> Option<u64> {
        self.fingerprints.get(i).copied()
    }

    /// Forget the costs of messages `from..` (and the anchor when it covers any of them).
    pub fn invalidate(&mut self, from: usize) {
        if from >= self.ids.len() {
            return;
        }
        self.ids.truncate(from);
        self.fingerprints.truncate(from);
        self.contents.truncate(from);
        self.cum_tokens.truncate(from + 1);
        self.cum_wire.truncate(from + 1);
        self.cum_chars.truncate(from + 1);
        if self.anchor.is_some_and(|a| a.messages > from) {
            self.anchor = None;
        }
        self.last_len = self.last_len.min(from);
    }

    /// Cache the cost of the next message (call after `invalidate(prefix)`, in order).
    pub fn push(&mut self, e: Entry) {
        let last = self.ids.len();
        self.cum_tokens
            .push(self.cum_tokens[last] + u64::from(e.tokens));
        self.cum_wire.push(self.cum_wire[last] + e.wire_bytes);
        self.cum_chars.push(self.cum_chars[last] + e.chars);
        self.ids.push(e.id);
        self.fingerprints.push(e.fingerprint);
        self.contents.push(e.content);
    }

    /// True while the ledger holds costs restored from a saved state that no history of this
    /// process has been matched against yet (see [`Ledger::rebind`]).
    pub fn is_unbound(&self) -> bool {
        self.unbound
    }

    /// The content hash of cached message `i`.
    pub fn content(&self, i: usize) -> Option<u64> {
        self.contents.get(i).copied()
    }

    /// The cached messages `from..from + ids.len()` were matched by content hash against a
    /// history whose messages there have these ids and cheap fingerprints (after a restore,
    /// from 0; or equal copies of the messages the ledger saw). The rest of the cache (and the
    /// anchor, if it covers any of it) is dropped.
    pub fn rebind(&mut self, from: usize, ids: &[usize], fingerprints: &[u64]) {
        debug_assert_eq!(ids.len(), fingerprints.len());
        let end = (from + ids.len()).min(self.ids.len());
        self.invalidate(end);
        let n = end.saturating_sub(from);
        self.ids[from..end].copy_from_slice(&ids[..n]);
        self.fingerprints[from..end].copy_from_slice(&fingerprints[..n]);
        self.unbound = false;
    }

    /// Everything the ledger knows, without the process-bound ids and cheap fingerprints:
    /// what a replica needs to continue the conversation (see `session_state`).
    pub fn snapshot(&self) -> Snapshot {
        let at = |v: &Vec<u64>, i: usize| v[i + 1] - v[i];
        Snapshot {
            overhead: self.overhead,
            smoothing: self.smoothing,
            anchor: self.anchor,
            correction: self.correction,
            last_len: self.last_len,
            last_usage: self.last_usage,
            last_model: self.last_model.clone(),
            usages: self.usages,
            entries: (0..self.ids.len())
                .map(|i| Stored {
                    content: self.contents[i],
                    tokens: at(&self.cum_tokens, i) as u32,
                    wire_bytes: at(&self.cum_wire, i),
                    chars: at(&self.cum_chars, i),
                })
                .collect(),
        }
    }

    /// A ledger from a snapshot, unbound until the first history is matched against it.
    /// `None` when the snapshot contradicts itself (an anchor or last history longer than the
    /// cached messages, a correction that is not a positive finite number).
    pub fn restore(s: Snapshot) -> Option<Ledger> {
        let n = s.entries.len();
        if s.anchor.is_some_and(|a| a.messages > n)
            || s.last_len > n
            || s.correction.is_some_and(|c| !(c.is_finite() && c > 0.0))
            || !(0.0..=1.0).contains(&s.smoothing)
            || s.overhead > u64::from(u32::MAX)
        {
            return None;
        }
        let mut l = Ledger::new(s.overhead as u32, s.smoothing);
        for e in &s.entries {
            let last = l.ids.len();
            l.cum_tokens
                .push(l.cum_tokens[last].checked_add(u64::from(e.tokens))?);
            l.cum_wire.push(l.cum_wire[last].checked_add(e.wire_bytes)?);
            l.cum_chars.push(l.cum_chars[last].checked_add(e.chars)?);
            // No object of this process has address 0: nothing matches until `rebind`.
            l.ids.push(0);
            l.fingerprints.push(0);
            l.contents.push(e.content);
        }
        l.anchor = s.anchor;
        l.correction = s.correction;
        l.last_len = s.last_len;
        l.last_usage = s.last_usage;
        l.last_model = s.last_model;
        l.usages = s.usages;
        l.unbound = true;
        Some(l)
    }

    /// The uncalibrated heuristic of the first `n` cached messages plus the overhead.
    pub fn heuristic(&self, n: usize) -> u64 {
        self.cum_tokens[n.min(self.ids.len())] + self.overhead
    }

    /// Wire bytes of the list of the first `n` cached messages as compact JSON: the messages,
    /// the brackets and the commas between them (0 when wire size is not tracked).
    pub fn wire_bytes(&self, n: usize) -> u64 {
        let n = n.min(self.ids.len());
        let body = self.cum_wire[n];
        if body == 0 && n > 0 {
            return 0;
        }
        body + 2 + n.saturating_sub(1) as u64
    }

    /// Text characters of the first `n` cached messages.
    pub fn chars(&self, n: usize) -> u64 {
        self.cum_chars[n.min(self.ids.len())]
    }

    /// The estimate for the first `n` cached messages (normally all of them), and remember `n`
    /// as the history that a later `record` without explicit messages applies to.
    pub fn estimate(&mut self, n: usize) -> Estimate {
        let n = n.min(self.ids.len());
        self.last_len = n;
        self.peek(n)
    }

    /// `estimate` without remembering `n`.
    pub fn peek(&self, n: usize) -> Estimate {
        let n = n.min(self.ids.len());
        let heuristic = self.heuristic(n);
        let c = self.correction.unwrap_or(1.0);
        match self.anchor {
            Some(a) if a.messages <= n => {
                let appended = self.cum_tokens[n] - self.cum_tokens[a.messages];
                Estimate {
                    tokens: a.real + appended,
                    heuristic,
                    anchored: a.messages,
                }
            }
            _ => Estimate {
                tokens: (c * heuristic as f64).round() as u64,
                heuristic,
                anchored: 0,
            },
        }
    }

    /// Messages of the last estimated history.
    pub fn last_len(&self) -> usize {
        self.last_len
    }

    /// Record the provider's real prompt count for the first `n` cached messages (`model`: the
    /// model that answered, when known). Anchors later estimates and updates the correction.
    pub fn record(&mut self, n: usize, real: u64, model: Option<&str>) -> Recorded {
        let n = n.min(self.ids.len());
        let model_changed = match (model, self.last_model.as_deref()) {
            (Some(new), Some(old)) => new != old,
            _ => false,
        };
        if model_changed {
            self.correction = None;
        }
        if let Some(m) = model {
            self.last_model = Some(m.to_string());
        }
        let estimate = self.peek(n).tokens;
        let heuristic = self.heuristic(n);
        if heuristic > 0 {
            let ratio = real as f64 / heuristic as f64;
            if (RATIO_RANGE.0..=RATIO_RANGE.1).contains(&ratio) {
                self.correction = Some(match self.correction {
                    None => ratio,
                    Some(c) => c + self.smoothing * (ratio - c),
                });
            }
        }
        self.anchor = Some(Anchor { messages: n, real });
        self.last_usage = Some(real);
        self.usages += 1;
        Recorded {
            messages: n,
            chars: self.chars(n),
            heuristic,
            estimate,
            real,
            correction: self.correction(),
            model_changed,
        }
    }

    /// The smoothed real / heuristic ratio (1.0 before any usage).
    pub fn correction(&self) -> f64 {
        self.correction.unwrap_or(1.0)
    }

    /// The last recorded real prompt count.
    pub fn last_usage(&self) -> Option<u64> {
        self.last_usage
    }

    /// The usage anchor in force, if any.
    pub fn anchor(&self) -> Option<Anchor> {
        self.anchor
    }

    /// The model of the last recorded usage.
    pub fn last_model(&self) -> Option<&str> {
        self.last_model.as_deref()
    }

    /// Number of usages recorded since the last reset.
    pub fn usages(&self) -> u64 {
        self.usages
    }

    /// The overhead every estimate adds (system, tools, priming).
    pub fn overhead(&self) -> u64 {
        self.overhead
    }

    /// The overhead changed while the cached costs still hold (a Gemini 3 session that settled
    /// its serving platform: only the tools' price moved). Anchor and correction are kept: the
    /// anchored count is real, and the correction is a smoothed ratio.
    pub fn set_overhead(&mut self, overhead: u32) {
        self.overhead = u64::from(overhead);
    }

    /// Forget everything: cached costs, anchor, correction, last usage and model.
    pub fn reset(&mut self) {
        let (overhead, smoothing) = (self.overhead as u32, self.smoothing);
        *self = Ledger::new(overhead, smoothing);
    }

    /// The estimator changed (model switch): costs, anchor and correction no longer apply.
    pub fn reset_with_overhead(&mut self, overhead: u32) {
        let smoothing = self.smoothing;
        *self = Ledger::new(overhead, smoothing);
    }
}

/// Characters of the payload a message carries (text, tool-call ids, names and arguments,
/// inline image data, reasoning): the "payload chars" of the calibration logs.
pub fn payload_chars(m: &Message<'_>) -> u64 {
    fn part(p: &Part<'_>) -> usize {
        match p {
            Part::Text(t) => t.len(),
            Part::Image(img) => match img.source {
                ImageSource::Base64(s) | ImageSource::Url(s) | ImageSource::File(s) => s.len(),
                ImageSource::Bytes(b) => b.len().div_ceil(3) * 4,
            },
            Part::ToolUse(c) => c.id.len() + c.name.len() + c.arguments.len(),
            Part::ToolResult {
                tool_use_id,
                content,
                ..
            } => tool_use_id.len() + content.iter().map(part).sum::<usize>(),
            Part::Thinking { text, signature } => text.len() + signature.len(),
            Part::EncryptedReasoning(d) => d.len(),
            Part::Opaque { wire_chars, .. } => *wire_chars,
        }
    }
    let mut n = m.role_str.len() + m.name.map_or(0, str::len);
    n += match &m.content {
        Content::None => 0,
        Content::Text(t) => t.len(),
        Content::Parts(ps) => ps.iter().map(part).sum(),
    };
    n += m
        .tool_calls
        .iter()
        .map(|c| c.id.len() + c.name.len() + c.arguments.len())
        .sum::<usize>();
    n += m.tool_call_id.map_or(0, str::len) + m.reasoning.as_ref().map_or(0, |r| r.len());
    let s = &m.thought_signatures;
    n += s.field2_chars + s.field1_chars + s.other_chars;
    n as u64
}

/// A 64-bit hash of a byte stream, the same in every process and version of this format
/// (no random seed): word-at-a-time multiply-rotate, finished with murmur3's avalanche.
#[derive(Debug, Clone, Copy)]
pub struct StableHash(u64);

impl Default for StableHash {
    fn default() -> Self {
        StableHash(0x243f_6a88_85a3_08d3)
    }
}

impl StableHash {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;

    #[inline]
    fn word(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(23) ^ w).wrapping_mul(Self::K);
    }

    /// Feed a length-prefixed byte string (so `"ab" + "c"` and `"a" + "bc"` differ).
    pub fn bytes(&mut self, b: &[u8]) {
        self.word(b.len() as u64);
        let mut chunks = b.chunks_exact(8);
        for c in &mut chunks {
            self.word(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.word(u64::from_le_bytes(last));
        }
    }

    pub fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }

    pub fn u64(&mut self, x: u64) {
        self.word(x);
    }

    pub fn finish(self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

/// Hash of everything a message view holds (role, name, text, parts, tool calls, ids,
/// reasoning): equal views hash equal in every process, so a restored ledger can tell which
/// messages of a new process's history are the ones it priced and anchored. Reads every byte
/// once (~1 ns per 8 bytes), only for messages being priced.
pub fn content_hash(m: &Message<'_>) -> u64 {
    fn part(h: &mut StableHash, p: &Part<'_>) {
        match p {
            Part::Text(t) => {
                h.u64(1);
                h.str(t);
            }
            Part::Image(img) => {
                h.u64(2);
                h.u64(img.detail as u64);
                match img.source {
                    ImageSource::Base64(s) => {
                        h.u64(1);
                        h.str(s);
                    }
                    ImageSource::Url(s) => {
                        h.u64(2);
                        h.str(s);
                    }
                    ImageSource::Bytes(b) => {
                        h.u64(3);
                        h.bytes(b);
                    }
                    ImageSource::File(s) => {
                        h.u64(4);
                        h.str(s);
                    }
                }
            }
            Part::ToolUse(c) => {
                h.u64(3);
                call(h, c);
            }
            Part::ToolResult {
                tool_use_id,
                content,
                is_error,
                ..
            } => {
                // (A result marked as an error hashes apart; an unmarked one as before.)
                h.u64(if *is_error { 5 } else { 4 });
                h.str(tool_use_id);
                h.u64(content.len() as u64);
                for p in content {
                    part(h, p);
                }
            }
            Part::Thinking { text, signature } => {
                h.u64(5);
                h.str(text);
                h.str(signature);
            }
            Part::EncryptedReasoning(d) => {
                h.u64(6);
                h.str(d);
            }
            Part::Opaque {
                kind,
                media,
                payload_chars,
                wire_chars,
                units,
                text,
                // (The kept bytes change no price: their size and pages are hashed above.)
                payload: _,
            } => {
                h.u64(7);
                h.str(kind);
                h.u64(*media as u64);
                h.u64(payload_chars.map_or(u64::MAX, |n| n as u64));
                h.u64(*wire_chars as u64);
                h.u64(units.map_or(u64::MAX, u64::from));
                if let Some(t) = text {
                    h.str(t);
                }
            }
        }
    }
    fn call(h: &mut StableHash, c: &crate::message::ToolCall<'_>) {
        h.str(c.id);
        h.str(c.name);
        h.str(&c.arguments);
    }
    let mut h = StableHash::default();
    h.str(m.role_str);
    match m.name {
        Some(n) => {
            h.u64(1);
            h.str(n);
        }
        None => h.u64(0),
    }
    match &m.content {
        Content::None => h.u64(0),
        Content::Text(t) => {
            h.u64(1);
            h.str(t);
        }
        Content::Parts(ps) => {
            h.u64(2);
            h.u64(ps.len() as u64);
            for p in ps {
                part(&mut h, p);
            }
        }
    }
    h.u64(m.tool_calls.len() as u64);
    for c in &m.tool_calls {
        call(&mut h, c);
    }
    match m.tool_call_id {
        Some(id) => {
            h.u64(1);
            h.str(id);
        }
        None => h.u64(0),
    }
    match &m.reasoning {
        Some(r) => {
            h.u64(1);
            h.str(r);
        }
        None => h.u64(0),
    }
    // Their lengths by shape, which is all that prices them; hashed only where present, so a
    // message without signatures hashes as before.
    let s = &m.thought_signatures;
    if !s.is_empty() {
        h.u64(s.field2_chars as u64);
        h.u64(s.field1_chars as u64);
        h.u64(s.other_chars as u64);
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn entry(id: usize, tokens: u32) -> Entry {
        Entry {
            id,
            content: id as u64 * 17 + 3,
            fingerprint: id as u64 * 31,
            tokens,
            wire_bytes: u64::from(tokens) * 4,
            chars: u64::from(tokens) * 4,
        }
    }

    pub(super) fn ledger(ids: &[usize]) -> Ledger {
        let mut l = Ledger::new(10, DEFAULT_SMOOTHING);
        for &id in ids {
            l.push(entry(id, 100));
        }
        l
    }

    #[test]
    fn matching_prefix_stops_at_replaced_removed_or_inserted_message() {
        let ids: Vec<usize> = (1..=20).collect();
        let l = ledger(&ids);
        // Extended history: the whole cache is reused.
        let mut longer = ids.clone();
        longer.extend([100, 101]);
        assert_eq!(l.matching_prefix(&longer), 20);
        // Replaced message 11.
        let mut replaced = longer.clone();
        replaced[11] = 999;
        assert_eq!(l.matching_prefix(&replaced), 11);
        // Removed message 3.
        let mut removed = longer.clone();
        removed.remove(3);
        assert_eq!(l.matching_prefix(&removed), 3);
        // Inserted before message 17.
        let mut inserted = longer.clone();
        inserted.insert(17, 555);
        assert_eq!(l.matching_prefix(&inserted), 17);
        // Shorter history.
        assert_eq!(l.matching_prefix(&ids[..5]), 5);
        assert_eq!(l.matching_prefix(&[]), 0);
    }

    #[test]
    fn matching_prefix_agrees_with_a_plain_scan_across_block_edges() {
        let ids: Vec<usize> = (0..1500).map(|i| i * 7 + 1).collect();
        let l = ledger(&ids);
        for at in [0, 1, 511, 512, 513, 1023, 1024, 1200, 1499] {
            let mut other = ids.clone();
            other[at] = 0;
            assert_eq!(l.matching_prefix(&other), at);
            assert_eq!(l.matching_prefix_by(other.len(), |i| other[i]), at);
        }
        assert_eq!(l.matching_prefix(&ids[..1000]), 1000);
    }

    #[test]
    fn verify_range_is_the_tail_of_the_reused_prefix() {
        let l = ledger(&(0..100).collect::<Vec<_>>());
        assert_eq!(l.verify_range(100), 92..100);
        assert_eq!(l.verify_range(3), 0..3);
    }

    #[test]
    fn heuristic_is_sum_plus_overhead_and_costs_only_new_entries() {
        let mut l = ledger(&[1, 2, 3]);
        assert_eq!(l.estimate(3).tokens, 310);
        l.push(entry(4, 50));
        assert_eq!(l.estimate(4).tokens, 360);
        assert_eq!(l.heuristic(2), 210);
        assert_eq!(l.wire_bytes(4), 1400 + 2 + 3);
    }

    #[test]
    fn anchored_estimate_is_real_plus_appended() {
        let mut l = ledger(&[1, 2, 3]);
        l.estimate(3);
        let r = l.record(3, 330, Some("m"));
        assert_eq!(r.heuristic, 310);
        assert_eq!(r.estimate, 310);
        assert!((l.correction() - 330.0 / 310.0).abs() < 1e-12);
        // Same history: the real count itself.
        assert_eq!(l.estimate(3).tokens, 330);
        l.push(entry(4, 100));
        let e = l.estimate(4);
        assert_eq!(e.anchored, 3);
        assert_eq!(e.tokens, 330 + 100);
    }

    #[test]
    fn changed_anchored_prefix_falls_back_to_calibrated_heuristic() {
        let mut l = ledger(&[1, 2, 3, 4]);
        l.estimate(4);
        l.record(4, 820, None);
        l.invalidate(2);
        assert!(l.anchor().is_none());
        l.push(entry(7, 100));
        let e = l.estimate(3);
        assert_eq!(e.anchored, 0);
        assert_eq!(e.tokens, (310.0 * 820.0 / 410.0_f64).round() as u64);
    }

    #[test]
    fn correction_is_smoothed_and_reset_on_model_change() {
        let mut l = ledger(&[1]);
        l.record(1, 220, Some("a")); // ratio 2.0
        assert!((l.correction() - 2.0).abs() < 1e-12);
        l.record(1, 110, Some("a")); // ratio 1.0 -> 1.5 with smoothing 0.5
        assert!((l.correction() - 1.5).abs() < 1e-12);
        let r = l.record(1, 165, Some("b")); // new model: restarts at 1.5 exactly
        assert!(r.model_changed);
        assert!((l.correction() - 1.5).abs() < 1e-12);
        // Absurd ratio (server-side state): anchors but does not calibrate.
        l.record(1, 100_000, Some("b"));
        assert!((l.correction() - 1.5).abs() < 1e-12);
        assert_eq!(l.last_usage(), Some(100_000));
        l.reset();
        assert_eq!(l.correction(), 1.0);
        assert!(l.is_empty() && l.last_usage().is_none());
    }

    #[test]
    fn payload_chars_counts_text_and_tool_calls() {
        let mut m = Message::text("user", "hello");
        assert_eq!(payload_chars(&m), 9);
        m.tool_calls.push(crate::message::ToolCall {
            id: "c1",
            name: "f",
            arguments: std::borrow::Cow::Borrowed("{}"),
        });
        assert_eq!(payload_chars(&m), 14);
    }

    #[test]
    fn record_applies_to_last_estimated_history_length() {
        let mut l = ledger(&[1, 2, 3, 4]);
        l.estimate(2);
        assert_eq!(l.last_len(), 2);
        let r = l.record(l.last_len(), 300, None);
        assert_eq!(r.messages, 2);
        assert_eq!(l.anchor().unwrap().messages, 2);
        // A longer history is anchored on the 2 recorded messages.
        assert_eq!(l.estimate(4).anchored, 2);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn matching_prefix_is_the_naive_common_prefix(
                cached in proptest::collection::vec(0usize..6, 0..1200),
                other in proptest::collection::vec(0usize..6, 0..1200),
            ) {
                let l = ledger(&cached);
                let naive = cached.iter().zip(&other).take_while(|(a, b)| a == b).count();
                prop_assert_eq!(l.matching_prefix(&other), naive);
                prop_assert_eq!(l.matching_prefix_by(other.len(), |i| other[i]), naive);
            }

            #[test]
            fn anchored_estimate_is_real_plus_appended_costs(
                costs in proptest::collection::vec(0u32..5000, 1..60),
                cut in 0usize..60,
                real in 0u64..1_000_000,
            ) {
                let mut l = Ledger::new(7, DEFAULT_SMOOTHING);
                for (i, &c) in costs.iter().enumerate() {
                    l.push(entry(i + 1, c));
                }
                let cut = cut.min(costs.len());
                l.record(cut, real, None);
                let appended: u64 = costs[cut..].iter().map(|&c| u64::from(c)).sum();
                prop_assert_eq!(l.estimate(costs.len()).tokens, real + appended);
                // Invalidating inside the anchored prefix falls back to the calibrated heuristic.
                if cut > 0 {
                    l.invalidate(cut - 1);
                    prop_assert!(l.anchor().is_none());
                    let h = l.heuristic(cut - 1);
                    prop_assert_eq!(l.estimate(cut - 1).tokens, (l.correction() * h as f64).round() as u64);
                }
            }
        }
    }
}
