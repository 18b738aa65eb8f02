//! The saved state of a session: what a replica needs to continue a conversation that another
//! process (or this one, before a restart) was following.
//!
//! A ledger caches by object identity, which means nothing in another process; the state keeps
//! instead, per cached message, a content hash ([`crate::ledger::content_hash`]) and its costs,
//! plus the usage anchor, the correction, the last usage and model, and what prices the
//! request overhead (provider, model, text encoding, system prompt and tool definitions). The
//! restoring process matches its history against the hashes: the anchor survives only if every
//! message it covers hashes equal, so a changed history never inherits a real count that does
//! not apply to it.
//!
//! # Format (version 3)
//! ```text
//! "CFST"  u8 format version  str library version
//! str provider  opt-str model  opt-str text encoding  u8 track_wire  opt-str system
//! varint tool count, then per tool: str name, str json
//! opt(str name, opt-str description, str schema) response format  u8 media resolution
//! str meta (the Python layer's own settings, JSON)
//! f64 smoothing  varint overhead  opt-f64 correction  opt(varint messages, varint real) anchor
//! varint last_len  opt-varint last_usage  opt-str last_model  varint usages
//! varint message count, then per message: u64 content hash, varint tokens, wire bytes, chars
//! u64 checksum (StableHash of every byte before it)
//! ```
//! Integers are LEB128 varints, `u64`/`f64` little-endian, `str` a varint length and UTF-8,
//! `opt-X` a 0/1 byte then X. A 100-message conversation takes ~1.5 KB plus its tools' JSON.

use std::fmt;

use crate::ledger::{Anchor, Snapshot, StableHash, Stored, RATIO_RANGE};

const MAGIC: &[u8; 4] = b"CFST";
/// The largest token, byte or usage count a state may hold (what the Python layer clamps every
/// count to): a real count near `u64::MAX` would wrap the estimate it anchors.
pub const MAX_COUNT: u64 = 1 << 62;
/// The largest settings text (the layer above's JSON) a state may carry.
pub const MAX_META_BYTES: usize = 64 << 10;
/// Bumped whenever the layout or the meaning of a field changes.
pub const FORMAT_VERSION: u8 = 3;
/// The library that wrote a state: costs are those of its estimator, so a state is only read
/// back by the same version (a rolling upgrade starts its conversations' ledgers afresh).
pub const LIBRARY_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Everything a session is, minus what belongs to the process.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionState {
    pub provider: String,
    pub model: Option<String>,
    pub text_encoding: Option<String>,
    pub track_wire: bool,
    pub system: Option<String>,
    /// `(name, compact JSON)` of each tool definition.
    pub tools: Vec<(String, String)>,
    /// `(name, description, schema as compact JSON)` of the structured-output format.
    pub response_format: Option<(String, Option<String>, String)>,
    /// The media resolution of images that set none (`Detail::code`).
    pub media_resolution: u8,
    /// Settings of the layer above (opaque here).
    pub meta: String,
    pub ledger: Snapshot,
}

/// Why bytes are not a state this library can continue from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateError {
    /// Not a contextfold session state at all.
    NotAState,
    /// Written by another format version or library version.
    Version { format: u8, library: String },
    /// The checksum does not match: the bytes were changed or cut.
    Corrupted,
    /// Well-formed bytes whose fields contradict each other or are out of range.
    Invalid(&'static str),
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateError::NotAState => write!(f, "not a contextfold session state"),
            StateError::Version { format, library } => write!(
                f,
                "session state written by contextfold {library} (format {format}); this is \
                 contextfold {LIBRARY_VERSION} (format {FORMAT_VERSION}): start a new session"
            ),
            StateError::Corrupted => write!(f, "session state corrupted (checksum mismatch)"),
            StateError::Invalid(why) => write!(f, "session state invalid: {why}"),
        }
    }
}

impl std::error::Error for StateError {}

struct Writer(Vec<u8>);

impl Writer {
    fn varint(&mut self, mut x: u64) {
        loop {
            let b = (x & 0x7f) as u8;
            x >>= 7;
            if x == 0 {
                self.0.push(b);
                return;
            }
            self.0.push(b | 0x80);
        }
    }
    fn str(&mut self, s: &str) {
        self.varint(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn opt<T>(&mut self, v: Option<T>, f: impl FnOnce(&mut Self, T)) {
        match v {
            None => self.0.push(0),
            Some(x) => {
                self.0.push(1);
                f(self, x);
            }
        }
    }
    fn f64(&mut self, x: f64) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    fn u64(&mut self, x: u64) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

type R<T> = Result<T, StateError>;

const TRUNCATED: StateError = StateError::Invalid("truncated field");

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> R<&'a [u8]> {
        let end = self.at.checked_add(n).ok_or(TRUNCATED)?;
        let s = self.b.get(self.at..end).ok_or(TRUNCATED)?;
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self) -> R<u8> {
        Ok(self.take(1)?[0])
    }
    fn varint(&mut self) -> R<u64> {
        let mut x = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            x |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(x);
            }
        }
        Err(StateError::Invalid("varint longer than 64 bits"))
    }
    fn usize(&mut self) -> R<usize> {
        usize::try_from(self.varint()?).map_err(|_| StateError::Invalid("count out of range"))
    }
    fn str(&mut self) -> R<String> {
        let n = self.usize()?;
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| StateError::Invalid("string not UTF-8"))
    }
    fn opt<T>(&mut self, f: impl FnOnce(&mut Self) -> R<T>) -> R<Option<T>> {
        match self.u8()? {
            0 => Ok(None),
            1 => f(self).map(Some),
            _ => Err(StateError::Invalid("option tag not 0 or 1")),
        }
    }
    fn f64(&mut self) -> R<f64> {
        Ok(f64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn u64(&mut self) -> R<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
}

fn checksum(b: &[u8]) -> u64 {
    let mut h = StableHash::default();
    h.bytes(b);
    h.finish()
}

impl SessionState {
    /// The state as bytes (see the module docs for the layout).
    pub fn encode(&self) -> Vec<u8> {
        let l = &self.ledger;
        let mut w = Writer(Vec::with_capacity(
            64 + 16 * l.entries.len() + self.meta.len(),
        ));
        w.0.extend_from_slice(MAGIC);
        w.0.push(FORMAT_VERSION);
        w.str(LIBRARY_VERSION);
        w.str(&self.provider);
        w.opt(self.model.as_deref(), Writer::str);
        w.opt(self.text_encoding.as_deref(), Writer::str);
        w.0.push(u8::from(self.track_wire));
        w.opt(self.system.as_deref(), Writer::str);
        w.varint(self.tools.len() as u64);
        for (name, json) in &self.tools {
            w.str(name);
            w.str(json);
        }
        w.opt(
            self.response_format.as_ref(),
            |w, (name, description, schema)| {
                w.str(name);
                w.opt(description.as_deref(), Writer::str);
                w.str(schema);
            },
        );
        w.0.push(self.media_resolution);
        w.str(&self.meta);
        w.f64(l.smoothing);
        w.varint(l.overhead);
        w.opt(l.correction, Writer::f64);
        w.opt(l.anchor, |w, a| {
            w.varint(a.messages as u64);
            w.varint(a.real);
        });
        w.varint(l.last_len as u64);
        w.opt(l.last_usage, Writer::varint);
        w.opt(l.last_model.as_deref(), Writer::str);
        w.varint(l.usages);
        w.varint(l.entries.len() as u64);
        for e in &l.entries {
            w.u64(e.content);
            w.varint(u64::from(e.tokens));
            w.varint(e.wire_bytes);
            w.varint(e.chars);
        }
        let sum = checksum(&w.0);
        w.u64(sum);
        w.0
    }

    /// Read a state written by [`SessionState::encode`] of this library version.
    pub fn decode(b: &[u8]) -> Result<SessionState, StateError> {
        if b.len() < MAGIC.len() + 1 || &b[..4] != MAGIC {
            return Err(StateError::NotAState);
        }
        let mut r = Reader { b, at: 4 };
        let format = r.u8()?;
        let library = if format == FORMAT_VERSION {
            r.str().map_err(|_| StateError::Corrupted)?
        } else {
            String::from("?")
        };
        if format != FORMAT_VERSION || library != LIBRARY_VERSION {
            // A version mismatch is reported as such only if the bytes are intact; a flipped
            // version byte is corruption.
            if b.len() >= 8 && checksum(&b[..b.len() - 8]).to_le_bytes() == b[b.len() - 8..] {
                return Err(StateError::Version { format, library });
            }
            return Err(StateError::Corrupted);
        }
        if b.len() < r.at + 8 || checksum(&b[..b.len() - 8]).to_le_bytes() != b[b.len() - 8..] {
            return Err(StateError::Corrupted);
        }
        let body = &b[..b.len() - 8];
        let mut r = Reader { b: body, at: r.at };
        let provider = r.str()?;
        let model = r.opt(Reader::str)?;
        let text_encoding = r.opt(Reader::str)?;
        let track_wire = match r.u8()? {
            0 => false,
            1 => true,
            _ => return Err(StateError::Invalid("track_wire not 0 or 1")),
        };
        let system = r.opt(Reader::str)?;
        let n_tools = r.usize()?;
        // Each tool takes at least 2 bytes: a count beyond what is left is a lie, not a
        // reason to allocate.
        if n_tools > body.len() {
            return Err(StateError::Invalid("tool count larger than the state"));
        }
        let mut tools = Vec::with_capacity(n_tools);
        for _ in 0..n_tools {
            tools.push((r.str()?, r.str()?));
        }
        let response_format = r.opt(|r| Ok((r.str()?, r.opt(Reader::str)?, r.str()?)))?;
        let media_resolution = r.u8()?;
        let meta = r.str()?;
        let smoothing = r.f64()?;
        let overhead = r.varint()?;
        let correction = r.opt(Reader::f64)?;
        let anchor = r.opt(|r| {
            Ok(Anchor {
                messages: r.usize()?,
                real: r.varint()?,
            })
        })?;
        let last_len = r.usize()?;
        let last_usage = r.opt(Reader::varint)?;
        let last_model = r.opt(Reader::str)?;
        let usages = r.varint()?;
        let n = r.usize()?;
        if n > body.len() / 11 {
            return Err(StateError::Invalid("message count larger than the state"));
        }
        let mut entries = Vec::with_capacity(n);
        for _ in 0..n {
            let content = r.u64()?;
            let tokens = u32::try_from(r.varint()?)
                .map_err(|_| StateError::Invalid("message cost out of range"))?;
            entries.push(Stored {
                content,
                tokens,
                wire_bytes: r.varint()?,
                chars: r.varint()?,
            });
        }
        if r.at != body.len() {
            return Err(StateError::Invalid("trailing bytes"));
        }
        // Every field within its range, so no arithmetic on a restored state can wrap (the
        // checksum is not a MAC: anyone who can write the bytes can make it match).
        if meta.len() > MAX_META_BYTES {
            return Err(StateError::Invalid("settings larger than 64 KiB"));
        }
        if anchor.is_some_and(|a| a.real > MAX_COUNT || a.messages > n)
            || last_usage.is_some_and(|u| u > MAX_COUNT)
            || usages > MAX_COUNT
            || last_len > n
        {
            return Err(StateError::Invalid("usage count out of range"));
        }
        if correction.is_some_and(|c| !(RATIO_RANGE.0..=RATIO_RANGE.1).contains(&c)) {
            return Err(StateError::Invalid("correction out of range"));
        }
        if !(0.0..=1.0).contains(&smoothing) || overhead > u64::from(u32::MAX) {
            return Err(StateError::Invalid("smoothing or overhead out of range"));
        }
        if entries
            .iter()
            .any(|e| e.wire_bytes > MAX_COUNT || e.chars > MAX_COUNT)
        {
            return Err(StateError::Invalid("message size out of range"));
        }
        Ok(SessionState {
            provider,
            model,
            text_encoding,
            track_wire,
            system,
            tools,
            response_format,
            media_resolution,
            meta,
            ledger: Snapshot {
                overhead,
                smoothing,
                anchor,
                correction,
                last_len,
                last_usage,
                last_model,
                usages,
                entries,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::{Entry, Ledger};

    fn state() -> SessionState {
        let mut l = Ledger::new(42, 0.5);
        for i in 0..50u32 {
            l.push(Entry {
                id: 1000 + i as usize,
                fingerprint: 7,
                content: u64::from(i) * 0x1234_5678_9abc,
                tokens: 10 + i,
                wire_bytes: 300 + u64::from(i),
                chars: 250,
            });
        }
        l.estimate(40);
        l.record(40, 2_000, Some("gpt-4o"));
        SessionState {
            provider: "openai".into(),
            model: Some("gpt-4o".into()),
            text_encoding: None,
            track_wire: true,
            system: Some("be brief".into()),
            tools: vec![("f".into(), "{\"name\":\"f\"}".into())],
            response_format: Some(("Out".into(), None, "{\"type\":\"object\"}".into())),
            media_resolution: 4,
            meta: "{}".into(),
            ledger: l.snapshot(),
        }
    }

    #[test]
    fn round_trips_and_restores_the_same_numbers() {
        let s = state();
        let bytes = s.encode();
        assert!(bytes.len() < 1200, "{}", bytes.len());
        let back = SessionState::decode(&bytes).unwrap();
        assert_eq!(back, s);
        let mut orig = Ledger::restore(s.ledger.clone()).unwrap();
        let mut restored = Ledger::restore(back.ledger).unwrap();
        assert!(restored.is_unbound());
        for n in [0, 10, 40, 50] {
            assert_eq!(orig.estimate(n), restored.estimate(n));
            assert_eq!(restored.wire_bytes(n), orig.wire_bytes(n));
        }
        assert_eq!(restored.anchor().unwrap().messages, 40);
    }

    #[test]
    fn every_single_byte_flip_and_every_cut_is_refused() {
        let bytes = state().encode();
        for i in 0..bytes.len() {
            for bit in [0x01u8, 0x80] {
                let mut b = bytes.clone();
                b[i] ^= bit;
                assert!(
                    SessionState::decode(&b).is_err(),
                    "flip at byte {i} accepted"
                );
            }
        }
        for n in 0..bytes.len() {
            assert!(
                SessionState::decode(&bytes[..n]).is_err(),
                "cut at {n} accepted"
            );
        }
    }

    #[test]
    fn another_version_is_a_version_error() {
        let mut s = state().encode();
        s[4] = FORMAT_VERSION + 1;
        let body = s.len() - 8;
        let sum = checksum(&s[..body]);
        s[body..].copy_from_slice(&sum.to_le_bytes());
        assert!(matches!(
            SessionState::decode(&s),
            Err(StateError::Version { format, .. }) if format == FORMAT_VERSION + 1
        ));
        assert_eq!(
            SessionState::decode(b"not a state"),
            Err(StateError::NotAState)
        );
    }

    #[test]
    fn contradictory_fields_do_not_restore() {
        let mut s = state();
        s.ledger.anchor = Some(Anchor {
            messages: 51,
            real: 1,
        });
        assert!(Ledger::restore(s.ledger.clone()).is_none());
        s.ledger.anchor = None;
        s.ledger.correction = Some(f64::NAN);
        assert!(Ledger::restore(s.ledger).is_none());
    }

    #[test]
    fn a_forged_state_with_a_valid_checksum_is_refused_when_a_count_is_out_of_range() {
        // What an attacker who can write the key does: any field, checksum recomputed.
        let forge = |f: &dyn Fn(&mut SessionState)| {
            let mut s = state();
            f(&mut s);
            SessionState::decode(&s.encode())
        };
        let anchor = |s: &mut SessionState| {
            s.ledger.anchor = Some(Anchor {
                messages: 10,
                real: u64::MAX,
            })
        };
        assert!(matches!(forge(&anchor), Err(StateError::Invalid(_))));
        assert!(matches!(
            forge(&|s| s.ledger.last_usage = Some(u64::MAX)),
            Err(StateError::Invalid(_))
        ));
        assert!(matches!(
            forge(&|s| s.ledger.usages = u64::MAX),
            Err(StateError::Invalid(_))
        ));
        assert!(matches!(
            forge(&|s| s.ledger.correction = Some(1e300)),
            Err(StateError::Invalid(_))
        ));
        assert!(matches!(
            forge(&|s| s.meta = "[".repeat(100_000)),
            Err(StateError::Invalid(_))
        ));
        assert!(matches!(
            forge(&|s| s.ledger.last_len = 10_000),
            Err(StateError::Invalid(_))
        ));
        // In range, the same forgery reads back (a MAC, not a range check, tells it apart).
        assert!(forge(&|s| s.ledger.usages = 7).is_ok());
    }
}
