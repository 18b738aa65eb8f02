//! The identifier index: exact identifiers of a folded span, kept verbatim in every summary.
//!
//! A summary that paraphrases loses what an agent needs to act again: the file it edited, the
//! booking it changed, the commit it checked out. The index lists them mechanically: paths,
//! URLs, hashes and hex ids, UUIDs, record and booking ids, the names and codes of JSON
//! records, numbers with units, error class names with their first line, issue / PR numbers,
//! config keys, function and class names.
//! Deduplicated, ranked by where they were said (the user's and the assistant's own words and
//! call arguments weigh more than tool output), how often and how recently, and bounded by a
//! token budget. A previous summary's index is read back and ranked first, so identifiers carry
//! over from one compaction to the next until the room runs out.

use std::borrow::Cow;

use rustc_hash::FxHashMap;

mod classify;
mod read_back;
#[cfg(test)]
mod reference_scan;
mod render;
mod shown;
mod tokens;

use classify::{
    error_entry, has_path_extension, has_scheme, is_config_key, is_json_key, is_number, is_path,
    is_path_extension, is_record_id, is_symbol, is_tag_name, is_token_char, is_unit, is_uuid,
    rfind_near_end, split_colon_space, trim_token, without_dot_slashes,
};

pub use read_back::{index_at, parse, strip};
pub use render::{prices, render, render_except, render_priced};
pub use shown::Shown;

use crate::char_cut::{head_bytes, tail_bytes};
use crate::message::{Content, Message, Part, Role};
use crate::tool_outcome;

/// Heading of the index section in a summary.
pub const INDEX_HEADING: &str = "## Identifier index";

/// What an identifier is; the order is the render order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Error,
    Path,
    Url,
    Id,
    /// A value of a JSON record: a person's name, a code (`json_value_key`).
    Value,
    Hash,
    Quantity,
    Issue,
    Key,
    /// A figure of a JSON record, with its key: a price, an amount paid, a date
    /// (`json_money_key`, `json_date_key`).
    Figure,
    Symbol,
}

const KINDS: [(Kind, &str); 11] = [
    (Kind::Error, "errors"),
    (Kind::Path, "paths"),
    (Kind::Url, "urls"),
    (Kind::Id, "ids"),
    (Kind::Value, "values"),
    (Kind::Hash, "hashes"),
    (Kind::Quantity, "quantities"),
    (Kind::Issue, "issues"),
    (Kind::Key, "keys"),
    (Kind::Figure, "figures"),
    (Kind::Symbol, "symbols"),
];

/// One identifier with its ranking evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Ident {
    pub kind: Kind,
    pub text: String,
    /// Sum of the weights of its mentions (user 3, assistant text and arguments 2, output 1).
    pub weight: f64,
    /// Position of the last mention in the span, 0..=1 (1: the newest message).
    pub recency: f64,
    /// Carried from a previous index.
    pub carried: bool,
}

impl Ident {
    fn score(&self) -> f64 {
        // Carried identifiers already won a place once: they go first, in their old order;
        // but a record's values and figures (a passenger's name, a country, a price) compete
        // with the new fold's by weight. Carried first, a profile's `USA` and `Lei Patel` kept
        // a reservation's four flight numbers out of a 149-token room when a new process merged
        // a summary it had not written (held-out airline dialogue task45-trial0).
        // Then every other kind before code symbols: symbols abound in file dumps, and an
        // exact path, id or error says more (a SWE fold's index held 150 symbols, most of its
        // tokens, beside the ids and paths the questions about it ask for). But a symbol the
        // conversation used (`SYMBOL_USED_WEIGHT`: the agent wrote it in two messages, the user
        // named it and it came back, or four outputs showed it) ranks with them: below every
        // other kind, the names an agent edits and calls again (`SimpleRSTHeader`,
        // `start_line`, said in 6 and 14 messages of one SWE fold) lost their place to the file
        // names of one `ls`.
        // A record's figures come after them (a record holds many, and its id or name says
        // which record it is), before symbols.
        let tier = if self.carried && !matches!(self.kind, Kind::Value | Kind::Figure) {
            1_000.0
        } else if self.little_used_symbol() {
            0.0
        } else if self.kind == Kind::Figure {
            50.0
        } else {
            100.0
        };
        let kind = if self.kind == Kind::Key { 0.8 } else { 1.0 };
        tier + kind * self.weight.min(12.0) * (0.5 + 0.5 * self.recency)
    }

    /// A code symbol the conversation did not use (`SYMBOL_USED_WEIGHT`).
    fn little_used_symbol(&self) -> bool {
        self.kind == Kind::Symbol && self.weight < SYMBOL_USED_WEIGHT
    }

    /// Ranked after the identifiers a digest reserves its index share for (`Ident::score`): a
    /// record's figures, and the code symbols the conversation did not use, unless carried.
    pub fn minor(&self) -> bool {
        !self.carried && (self.kind == Kind::Figure || self.little_used_symbol())
    }
}

/// Weight (`Ident::weight`, user 3, assistant 2, output 1 a message) from which a code symbol
/// ranks with the other identifiers. Over every SWE run of ../shared/data cut at half and three
/// quarters (`tools/future_report.py`), the names the agent wrote next that only the folded
/// span showed were kept 78.1% -> 85.2% (85.7% from 3, 82.8% from 6); the probe sets' scores
/// at the naive budget moved by at most one fact each.
pub const SYMBOL_USED_WEIGHT: f64 = 4.0;

/// One identifier found, with the last message that mentioned it.
struct Found {
    ident: Ident,
    /// The message (`Collector::serial`) of its last mention; None when only carried.
    serial: Option<u64>,
    /// Where it was first mentioned, as (message index, mention): set only when the collector
    /// scans its messages out of order (`Collector::out_of_order`), to merge in order.
    first: (usize, u64),
}

/// What a piece of a token gave the index (`Collector::scan_piece`), kept by the piece's text.
#[derive(Debug, Clone, Copy)]
enum Said {
    /// Nothing, whatever the text around it.
    Nothing,
    /// The identifier at this place of `Collector::found`, whatever the text around it.
    At(usize),
    /// A code symbol (the piece trimmed to `trim`) where the text around it does not make it a
    /// JSON key or a markup tag; its place in `found` once it is one.
    Symbol {
        trim: (usize, usize),
        at: Option<usize>,
    },
    /// A number (the piece trimmed to `trim`), an identifier with the unit the next token
    /// names, if it names one.
    Number { trim: (usize, usize) },
    /// What the text around it says (a record code): read again each time.
    InContext,
}

/// Distinct pieces a collector makes room for when it starts scanning (a SWE digest's are
/// 300-1,200; code symbols and paths most of its identifiers).
const PIECES_RESERVED: usize = 1024;

/// Accumulates identifiers over texts.
#[derive(Default)]
pub struct Collector {
    /// Per kind (`Kind as usize`): text -> place in `found`.
    by_text: [FxHashMap<String, usize>; KINDS.len()],
    /// In the order first found.
    found: Vec<Found>,
    /// The message being scanned: a file dump repeating a name forty times counts it once.
    serial: u64,
    /// Set (`out_of_order`): the index of the message being scanned, and the mentions so far,
    /// for `Found::first`.
    at: Option<usize>,
    mentions: u64,
    /// What each piece of a token read so far gave (`Said`): a span names the same paths,
    /// symbols and numbers again and again (a SWE digest's ~3,000 pieces are 300-1,200
    /// distinct), and a piece read before is its identifier's mention without being trimmed,
    /// classed and looked up by its text again.
    said: FxHashMap<String, Said>,
    /// Every piece read afresh (tests: the reading `said` must give the same as).
    #[cfg(test)]
    fresh: bool,
}

impl Collector {
    /// Add a mention of identifier `text` of `kind`; its place in `found` (None: no identifier).
    fn add(
        &mut self,
        kind: Kind,
        text: &str,
        weight: f64,
        recency: f64,
        carried: bool,
    ) -> Option<usize> {
        if text.is_empty() || text.contains('\n') {
            return None;
        }
        let (serial, first) = self.mention();
        match self.by_text[kind as usize].get(text) {
            Some(&at) => {
                self.mentioned(at, serial, first, weight, recency, carried);
                Some(at)
            }
            None => {
                let at = self.found.len();
                self.by_text[kind as usize].insert(text.to_string(), at);
                self.found.push(Found {
                    ident: Ident {
                        kind,
                        text: text.to_string(),
                        weight,
                        recency,
                        carried,
                    },
                    serial,
                    first,
                });
                Some(at)
            }
        }
    }

    /// The mention about to be added: the message it is in, and (scanning out of order) where
    /// it stands among the mentions.
    fn mention(&mut self) -> (Option<u64>, (usize, u64)) {
        let serial = (self.serial > 0).then_some(self.serial);
        let first = match self.at {
            Some(k) => {
                self.mentions += 1;
                (k, self.mentions)
            }
            None => (0, 0),
        };
        (serial, first)
    }

    /// Identifier `at` of `found` mentioned again (`mention`: the mention's message and place).
    fn mentioned(
        &mut self,
        at: usize,
        serial: Option<u64>,
        first: (usize, u64),
        weight: f64,
        recency: f64,
        carried: bool,
    ) {
        let f = &mut self.found[at];
        f.first = f.first.min(first);
        if serial.is_some() && std::mem::replace(&mut f.serial, serial) == serial {
            return;
        }
        f.ident.weight += weight;
        f.ident.recency = f.ident.recency.max(recency);
        f.ident.carried |= carried;
    }

    /// Room for a span's pieces and identifiers from the start (a digest's or an index's
    /// collector; a stand-in's few mentions are read without): grown from empty, the maps'
    /// rehashes were ~1% of a SWE compaction's CPU.
    pub fn make_room(&mut self) {
        self.said.reserve(PIECES_RESERVED);
        for (k, map) in self.by_text.iter_mut().enumerate() {
            map.reserve(if k == Kind::Symbol as usize || k == Kind::Path as usize {
                PIECES_RESERVED / 2
            } else {
                PIECES_RESERVED / 16
            });
        }
    }

    /// Scan one text said with `weight` at `recency`: its error lines, then its tokens in order
    /// (those that can hold an identifier: `tokens::MarkedTokens`).
    pub fn scan(&mut self, text: &str, weight: f64, recency: f64) {
        self.scan_error_lines(text, weight, recency);
        let own = stand_ins(text);
        // Where a full name taken whole ends: its last name is not read again on its own.
        let mut taken_to = 0;
        for (start, end, classes) in tokens::MarkedTokens::new(text) {
            if start < taken_to {
                continue;
            }
            // A token a clip cut (`…-14T06:33:04` of a carried line) or the library's own words
            // in a stand-in (`792 bytes`, `~148 tokens`) names nothing of the conversation.
            if text[..start].ends_with('…')
                || text[end..].starts_with('…')
                || own.iter().any(|r| r.contains(&start))
            {
                continue;
            }
            let raw = &text[start..end];
            if classes & !tokens::LETTER == 0 {
                if let Some(key) = json_value_key(text, start, end, raw) {
                    match last_name_after(text, key, end) {
                        Some((a, z)) => {
                            let full = format!("{raw} {}", &text[a..z]);
                            self.add(Kind::Value, &full, weight, recency, false);
                            taken_to = z;
                        }
                        None => {
                            self.add(Kind::Value, raw, weight, recency, false);
                        }
                    }
                    continue;
                }
                // Words of letters with a capital (words of lower-case letters alone are not
                // read) are CamelCase symbols, or a booking code where the text says so.
                if is_code_in_context(text, start, raw) {
                    self.add(Kind::Id, raw, weight, recency, false);
                } else {
                    self.scan_word(raw, classes, weight, recency);
                }
                continue;
            }
            // URLs stay whole; elsewhere `=` and `:` join a key to its value and commas
            // separate list items, unless they sit inside a number ("$1,023").
            let whole = (classes & tokens::COLON != 0 && has_scheme(raw))
                || (classes & tokens::DIGIT != 0 && is_number(trim_token(raw)));
            if whole || classes & (tokens::COMMA | tokens::EQUALS | tokens::COLON) == 0 {
                self.scan_piece(text, end, raw, weight, recency);
            } else {
                for piece in raw.split([',', '=', ':']) {
                    self.scan_piece(text, end, piece, weight, recency);
                }
            }
        }
    }

    /// A word of ASCII letters: a CamelCase symbol or nothing.
    fn scan_word(&mut self, word: &str, classes: u32, weight: f64, recency: f64) -> Said {
        // CamelCase needs a capital first and another after it (most capitalized words have
        // none: `The`, `None`).
        let b = word.as_bytes();
        if b[0].is_ascii_uppercase()
            && b[1..].iter().any(u8::is_ascii_uppercase)
            && is_symbol(word, classes)
        {
            return self.added(Kind::Symbol, word, weight, recency);
        }
        Said::Nothing
    }

    /// A mention of `text` of `kind` added by a reading that the text around it did not decide:
    /// what the piece read gave (`Said`).
    fn added(&mut self, kind: Kind, text: &str, weight: f64, recency: f64) -> Said {
        match self.add(kind, text, weight, recency, false) {
            Some(at) => Said::At(at),
            None => Said::Nothing,
        }
    }

    /// One piece of the token that ends at byte `end` of `text` (the token after it is a
    /// number's unit): read as it was read before when what it gave did not depend on the text
    /// around it (`Said`).
    fn scan_piece(&mut self, text: &str, end: usize, piece: &str, weight: f64, recency: f64) {
        #[cfg(test)]
        if self.fresh {
            self.read_piece(text, end, piece, weight, recency);
            return;
        }
        let said = match self.said.get(piece) {
            Some(&said) => said,
            None => {
                let said = self.read_piece(text, end, piece, weight, recency);
                self.said.insert(piece.to_string(), said);
                return;
            }
        };
        match said {
            Said::Nothing => {}
            Said::At(at) => {
                let (serial, first) = self.mention();
                self.mentioned(at, serial, first, weight, recency, false);
            }
            Said::Symbol { trim, at } => {
                let t = &piece[trim.0..trim.1];
                if is_json_key(text, end) || is_tag_name(text, end, t) {
                    return;
                }
                match at {
                    Some(at) => {
                        let (serial, first) = self.mention();
                        self.mentioned(at, serial, first, weight, recency, false);
                    }
                    None => {
                        let at = self.add(Kind::Symbol, t, weight, recency, false);
                        if let Some(Said::Symbol { at: known, .. }) = self.said.get_mut(piece) {
                            *known = at;
                        }
                    }
                }
            }
            Said::Number { trim } => {
                self.number(&piece[trim.0..trim.1], text, end, weight, recency);
            }
            Said::InContext => {
                self.read_piece(text, end, piece, weight, recency);
            }
        }
    }

    /// A number not of money (`t`), with the unit the token after it (in `text`, from byte
    /// `end`) names, if it names one.
    fn number(&mut self, t: &str, text: &str, end: usize, weight: f64, recency: f64) {
        if let Some(unit) = tokens::next_token(text, end)
            .map(|(s, e, _)| trim_token(&text[s..e]))
            .filter(|u| is_unit(u))
        {
            self.add(
                Kind::Quantity,
                &format!("{t} {unit}"),
                weight,
                recency,
                false,
            );
        } else if let Some(key) = json_money_key(text, end, t) {
            self.add(Kind::Figure, &format!("{key} {t}"), weight, recency, false);
        }
    }

    /// `scan_piece` read in full: what it gave.
    fn read_piece(
        &mut self,
        text: &str,
        end: usize,
        piece: &str,
        weight: f64,
        recency: f64,
    ) -> Said {
        let t = trim_token(piece);
        if t.is_empty() || (t.len() < 2 && !t.bytes().all(|c| c.is_ascii_digit())) {
            return Said::Nothing;
        }
        let classes = tokens::classes_of(t);
        if classes & !tokens::LETTER == 0 {
            // (Its place is searched for only where a record code may stand: a string searcher
            // built for every word of letters showed in the scan's profile.)
            if !could_be_code(t) {
                return self.scan_word(t, classes, weight, recency);
            }
            if is_code_in_context(text, rfind_near_end(&text[..end], t).unwrap_or(0), t) {
                self.add(Kind::Id, t, weight, recency, false);
            } else {
                self.scan_word(t, classes, weight, recency);
            }
            return Said::InContext;
        }
        // Every kind but a UUID of hex letters needs one of these (`classify`).
        if classes
            & (tokens::DIGIT | tokens::DOT | tokens::SLASH | tokens::UNDERSCORE | tokens::UPPER)
            == 0
            && !(classes & tokens::DASH != 0 && is_uuid(t))
        {
            return Said::Nothing;
        }
        let trim = (
            t.as_ptr() as usize - piece.as_ptr() as usize,
            t.as_ptr() as usize - piece.as_ptr() as usize + t.len(),
        );
        self.classify(t, trim, classes, text, end, weight, recency)
    }

    /// Error lines: `SomeError: message` / `Error: message` at a line start (or after a
    /// traceback's `File ...` lines), kept with their first line. Only the lines holding `: `
    /// are read, found from the colons of the whole text.
    fn scan_error_lines(&mut self, text: &str, weight: f64, recency: f64) {
        static COLON_SPACE: std::sync::OnceLock<memchr::memmem::Finder<'static>> =
            std::sync::OnceLock::new();
        // (One searcher for every text: built at each `: `, it showed in the scan's profile.)
        let finder = COLON_SPACE.get_or_init(|| memchr::memmem::Finder::new(b": "));
        let b = text.as_bytes();
        let mut from = 0;
        while let Some(i) = finder.find(&b[from..]) {
            let at = from + i;
            let start = memchr::memrchr(b'\n', &b[..at]).map_or(0, |n| n + 1);
            let end = memchr::memchr(b'\n', &b[at..]).map_or(b.len(), |n| at + n);
            self.scan_error_line(&text[start..end], weight, recency);
            from = end;
        }
    }

    /// One line of `scan_error_lines` (a `\r` before its newline is trimmed with the rest).
    fn scan_error_line(&mut self, line: &str, weight: f64, recency: f64) {
        let l = line.trim();
        if let Some((head, rest)) = split_colon_space(l) {
            let name = head.rsplit('.').next().unwrap_or(head);
            let is_err = !name.is_empty()
                && name.len() <= 60
                && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
                && (name.ends_with("Error")
                    || name.ends_with("Exception")
                    || matches!(name, "FAIL" | "FAILED" | "FAILURE")
                    || ["FAIL", "ERROR"].iter().any(|w| rest.starts_with(w)))
                && !rest.trim().is_empty();
            if is_err {
                let shown = error_entry(l, head, rest);
                self.add(Kind::Error, &shown, weight + 1.0, recency, false);
            }
        }
    }

    /// Which identifier `t` is, if any (`classes`: of its bytes). A number's unit is the token
    /// after the one `t` is part of, which ends at byte `end` of `text`. Each predicate runs
    /// only when `t` holds the classes of bytes it needs.
    #[allow(clippy::too_many_arguments)]
    fn classify(
        &mut self,
        t: &str,
        trim: (usize, usize),
        classes: u32,
        text: &str,
        end: usize,
        weight: f64,
        recency: f64,
    ) -> Said {
        use tokens::{DASH, DIGIT, DOT, HEX, LETTER, SLASH, TILDE, UNDERSCORE};
        let has = |k: u32| classes & k != 0;
        if has(SLASH) && (t.starts_with("http://") || t.starts_with("https://")) {
            let url = t.trim_end_matches([')', '.']);
            self.added(Kind::Url, url, weight, recency)
        } else if (has(DASH) && is_uuid(t))
            || (t.len() >= 7 && t.len() <= 64 && classes & !HEX == 0 && has(DIGIT) && has(LETTER))
        {
            self.added(Kind::Hash, t, weight, recency)
        } else if let Some(n) = t
            .strip_prefix('#')
            .filter(|n| (2..=7).contains(&n.len()) && n.bytes().all(|c| c.is_ascii_digit()))
        {
            self.added(Kind::Issue, &format!("#{n}"), weight, recency)
        } else if has(DOT | SLASH)
            && classes & !(LETTER | DIGIT | UNDERSCORE | DOT | SLASH | DASH | TILDE) == 0
            // Without a `/`, a path is known by its extension (a dotted name has none).
            && (has(SLASH) || t.rsplit_once('.').is_some_and(|(_, ext)| is_path_extension(ext)))
            && is_path(t)
        {
            self.added(Kind::Path, without_dot_slashes(t), weight, recency)
        } else if has(DIGIT) && is_number(t) {
            if t.starts_with('$') {
                let amount = t.trim_end_matches(['.', ',']);
                return self.added(Kind::Quantity, amount, weight, recency);
            }
            self.number(t, text, end, weight, recency);
            Said::Number { trim }
        } else if has(DIGIT)
            && is_number(t.trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == '%'))
            && is_unit(t.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.'))
        {
            self.added(Kind::Quantity, t, weight, recency)
        } else if let Some(key) = (has(DASH) && !has(LETTER) && is_iso_date(t))
            .then(|| json_date_key(text, end, t))
            .flatten()
        {
            self.added(Kind::Figure, &format!("{key} {t}"), weight, recency)
        } else if has(DIGIT) && has(LETTER) && is_record_id(t) {
            self.added(Kind::Id, t, weight, recency)
        } else if has(UNDERSCORE) && is_config_key(t) {
            self.added(Kind::Key, t, weight, recency)
        } else if is_symbol(t, classes) {
            // (A JSON key or a markup tag is no symbol: told by the text around it.)
            let at = if !is_json_key(text, end) && !is_tag_name(text, end, t) {
                self.add(Kind::Symbol, t, weight, recency, false)
            } else {
                None
            };
            Said::Symbol { trim, at }
        } else {
            Said::Nothing
        }
    }

    /// A collector for messages scanned out of order (later parts of a span first), to be
    /// `merge`d into the collector of the messages before them: it keeps where each identifier
    /// was first mentioned. `scan_message_at` gives each message's index.
    pub fn out_of_order() -> Self {
        Collector {
            at: Some(0),
            ..Default::default()
        }
    }

    /// Add what `later` (an `out_of_order` collector of messages that all come after this
    /// one's) found, as if this one had gone on to scan them in order: the same identifiers,
    /// weights, recencies and first-found order, so `ranked` is the same.
    pub fn merge(&mut self, later: Collector) {
        let mut found = later.found;
        found.sort_by_key(|f| f.first);
        for f in found {
            let Ident {
                kind,
                text,
                weight,
                recency,
                carried,
            } = f.ident;
            match self.by_text[kind as usize].get(text.as_str()) {
                Some(&at) => {
                    let mine = &mut self.found[at].ident;
                    mine.weight += weight;
                    mine.recency = mine.recency.max(recency);
                    mine.carried |= carried;
                }
                None => {
                    self.by_text[kind as usize].insert(text.clone(), self.found.len());
                    self.found.push(Found {
                        ident: Ident {
                            kind,
                            text,
                            weight,
                            recency,
                            carried,
                        },
                        serial: None,
                        first: (0, 0),
                    });
                }
            }
        }
    }

    /// Read back a previous summary's identifiers: those of its index carry over (first, in
    /// their order), and so do those its sections' lines show (an index leaves them out:
    /// `Shown`), but code symbols, after them: when a line is dropped or clipped, its
    /// identifiers take a place in the index as the previous index's do. Read as the oldest
    /// thing said instead, they lost their place to the new fold's: a new process merging an
    /// airline summary dropped a `get_reservation_details(reservation_id=OI5L9G) -> ...` line
    /// and, with it, the six reservation ids the previous index had left to that line.
    pub fn carry(&mut self, previous: &str) {
        for (kind, text) in parse(previous) {
            self.add(kind, &text, 2.0, 0.0, true);
        }
        let body = strip(previous);
        // From its first section on: the header line says only what was folded ("18 messages").
        let Some(at) = body.find("\n## ") else {
            return;
        };
        let mut lines = Collector::default();
        lines.scan(&body[at..], 2.0, 0.0);
        for f in lines.found {
            if f.ident.kind != Kind::Symbol {
                self.add(f.ident.kind, &f.ident.text, 2.0, 0.0, true);
            }
        }
    }

    /// A definition's line (`definition_lines`: `NAME:LINE`) weighs what its name weighs, and
    /// is as recent: a name the agent used ranks its line with it, one it never used stays
    /// among the little-used symbols.
    fn weigh_definitions(&mut self) {
        let symbols = &self.by_text[Kind::Symbol as usize];
        for i in 0..self.found.len() {
            let f = &self.found[i].ident;
            if f.kind != Kind::Symbol || f.carried {
                continue;
            }
            let Some(named) = f.text.split_once(':').and_then(|(name, line)| {
                (!line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| symbols.get(name))
                    .flatten()
            }) else {
                continue;
            };
            let (w, r) = (
                self.found[*named].ident.weight,
                self.found[*named].ident.recency,
            );
            let f = &mut self.found[i].ident;
            f.weight = f.weight.max(w);
            f.recency = f.recency.max(r);
        }
    }

    /// Identifiers, best first.
    pub fn ranked(mut self) -> Vec<Ident> {
        self.weigh_definitions();
        // Each score computed once, not at every comparison (the sort of a SWE digest's ~1,000
        // identifiers was ~1.7% of a compaction's CPU, after the scan's join). The first-found
        // place breaks ties, so the order is total and any sort gives the same one.
        let mut v: Vec<(f64, usize, Ident)> = self
            .found
            .into_iter()
            .enumerate()
            .map(|(i, f)| (f.ident.score(), i, f.ident))
            .collect();
        v.sort_unstable_by(|(sa, ia, _), (sb, ib, _)| {
            sb.partial_cmp(sa)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(ia.cmp(ib))
        });
        v.into_iter().map(|(_, _, id)| id).collect()
    }
}

/// The byte ranges of the library's own stand-ins in `text`, brackets included: a masked
/// output's placeholder (`[output pruned to save context: ...]`), a recoverable fold's
/// (`[folded ...]`) and a cut's marker (`[... ~2,148 tokens cut from the middle ...]`). Their
/// sizes, ids and tool names are not the conversation's: a fold read from a history a
/// compaction had masked indexed `792 bytes`, `148 tokens` and the tool's name, and carried
/// them from summary to summary.
fn stand_ins(text: &str) -> Vec<std::ops::Range<usize>> {
    use crate::prune::{FOLDED_OPENER, PRUNED_OPENER};
    use memchr::memmem::Finder;
    use std::sync::OnceLock;
    /// (Vectorized finders: a JSON text has a `[` at every list, and every text a digest
    /// indexes is asked.)
    struct Finders {
        /// Every stand-in says its size in tokens: a text that does not is read as it is.
        size: Finder<'static>,
        openers: [Finder<'static>; 2],
        cut: Finder<'static>,
        clipped_end: Finder<'static>,
    }
    static FINDERS: OnceLock<Finders> = OnceLock::new();
    let f = FINDERS.get_or_init(|| Finders {
        size: Finder::new(" tokens"),
        openers: [Finder::new(PRUNED_OPENER), Finder::new(FOLDED_OPENER)],
        cut: Finder::new(" tokens cut"),
        clipped_end: Finder::new(" tokens)]"),
    });
    let b = text.as_bytes();
    let mut out: Vec<std::ops::Range<usize>> = Vec::new();
    if f.size.find(b).is_none() {
        return out;
    }
    let to_bracket = |at: usize| text[at..].find(']').map_or(text.len(), |j| at + j + 1);
    for opener in &f.openers {
        for at in opener.find_iter(b) {
            // What a stand-in mentions (`; mentions HAT132, Lei Ito`) is the conversation's:
            // read, so that a placeholder folded again carries its identifiers on.
            push_around_mentions(&mut out, text, at..to_bracket(at), "; id=");
        }
    }
    // A cut's marker: `[... ~2,148 tokens cut ...]` or `[~2,148 tokens cut]`, its bracket at
    // most 16 bytes back (moved to a character's start: the text may be any script).
    for at in f.cut.find_iter(b) {
        let mut lo = at.saturating_sub(16);
        while !text.is_char_boundary(lo) {
            lo += 1;
        }
        let Some(open) = text[lo..at].rfind('[').map(|i| lo + i) else {
            continue;
        };
        let digits = text[open..at].trim_start_matches(['[', '.', ' ', '~']);
        if !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit() || c == b',') {
            // What a cut's middle mentioned (`; mentions HAT066, 2024-05-19 ...]`) is the
            // conversation's, as a placeholder's is.
            push_around_mentions(&mut out, text, open..to_bracket(at), " ...]");
        }
    }
    // A placeholder whose opening a clip cut away (`…o save context: 3,625 bytes (~1,006
    // tokens)]` ending a carried line): from the clip's ellipsis (or the line's start).
    for at in f.clipped_end.find_iter(b) {
        let line = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let from = text[line..at].rfind('…').map_or(line, |i| line + i);
        out.push(from..at + " tokens)]".len());
    }
    out
}

/// The stand-in at `span` of `text` as ranges not to index: all of it, or, where it names what
/// it mentions (`; mentions a, b`, up to `list_end` or the bracket), all of it but that list.
fn push_around_mentions(
    out: &mut Vec<std::ops::Range<usize>>,
    text: &str,
    span: std::ops::Range<usize>,
    list_end: &str,
) {
    use crate::recall::MENTIONS_SAID;
    let (at, end) = (span.start, span.end);
    let Some(k) = text[at..end].find(MENTIONS_SAID) else {
        out.push(span);
        return;
    };
    let list = at + k + MENTIONS_SAID.len();
    let stop = text[list..end].find(list_end).map_or(end - 1, |j| list + j);
    out.push(at..list);
    out.push(stop..end);
}

/// Bytes of one text scanned at each end: identifiers of a long output sit at its edges (the
/// command's echo, the error, the summary line); a file dump's middle only adds noise, and the
/// scan stays bounded whatever the size of the outputs.
const SCAN_EDGE_BYTES: usize = 4_096;
/// As `SCAN_EDGE_BYTES`, for tool output.
const OUTPUT_EDGE_BYTES: usize = 768;

/// The key whose value the token at `start..end` of `text` is, in a JSON document
/// (`"key": "value"` or `"key": 12`); None elsewhere.
fn json_key_of(text: &str, start: usize, end: usize) -> Option<&str> {
    let b = text.as_bytes();
    let quoted = start > 0 && b[start - 1] == b'"';
    if quoted != (b.get(end) == Some(&b'"')) {
        return None;
    }
    let mut j = if quoted { start - 1 } else { start };
    while j > 0 && b[j - 1] == b' ' {
        j -= 1;
    }
    if j == 0 || b[j - 1] != b':' {
        return None;
    }
    j -= 1;
    while j > 0 && b[j - 1] == b' ' {
        j -= 1;
    }
    if j == 0 || b[j - 1] != b'"' {
        return None;
    }
    let key_end = j - 1;
    let key_start = b[..key_end].iter().rposition(|&c| c == b'"')? + 1;
    (key_end - key_start <= 40).then(|| &text[key_start..key_end])
}

/// The key whose value the word of letters at `start..end` of `text` is, when it is a value of a
/// JSON record that no other rule takes for an identifier (None otherwise): a person's name (a capitalized word that is the value
/// of a key naming one: `"first_name": "Anya"`) or a code of three or four capitals that is
/// the value of a key (an airport, a currency: `"origin": "BOS"`). An agent acting on an
/// API's records quotes them back (the passengers of a booking, the airports of its
/// flights), and in a tight room each is a fact in a token or two where the record's line,
/// clipped, kept its first and last keys. Over the held-out probe sets at the naive budget,
/// 461 -> 482 facts of 608.
fn json_value_key<'t>(text: &'t str, start: usize, end: usize, word: &str) -> Option<&'t str> {
    let b = word.as_bytes();
    let name =
        b.len() >= 2 && b[0].is_ascii_uppercase() && b[1..].iter().all(u8::is_ascii_lowercase);
    let code = (3..=4).contains(&b.len()) && b.iter().all(u8::is_ascii_uppercase);
    if !name && !code {
        return None;
    }
    // (Two-letter codes, a state or a country, said little beside the rest.)
    json_key_of(text, start, end).filter(|key| code || key.to_ascii_lowercase().ends_with("name"))
}

/// The key of a JSON record whose number `t` (ending at or before byte `end` of `text`) is the
/// value, when the key names money: `"price": 1936`, `"amount": 150`, `"total_cost": 80`.
/// Read as `price 1936`: what a booking cost and what was paid are the facts a refund, a
/// change of cabin or a complaint comes back to, and a bare number says nothing.
fn json_money_key<'t>(text: &'t str, end: usize, t: &str) -> Option<&'t str> {
    let key = key_of_value_before(text, end, t)?;
    // The key or its last `_` part, in any case (no allocation: every number of a JSON
    // document under some key is asked).
    let k = key.as_bytes();
    let last = k
        .iter()
        .rposition(|&c| c == b'_')
        .map_or(k, |i| &k[i + 1..]);
    [
        "price", "amount", "cost", "fee", "total", "refund", "balance", "paid",
    ]
    .iter()
    .any(|m| last.eq_ignore_ascii_case(m.as_bytes()))
    .then_some(key)
}

/// `YYYY-MM-DD`.
fn is_iso_date(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

/// The key of a JSON record whose value the date `t` (ending at or before byte `end`) is, when
/// the key names a date (`"date": "2024-05-23"`, `"departure_date"`): a flight's day, which a
/// change of booking is about.
fn json_date_key<'t>(text: &'t str, end: usize, t: &str) -> Option<&'t str> {
    key_of_value_before(text, end, t).filter(|k| k.to_ascii_lowercase().contains("date"))
}

/// [`json_key_of`] the piece `t` of the token ending at byte `end` (its last occurrence there:
/// a piece of a token split at `,` `=` `:` knows the token's end, not its own).
fn key_of_value_before<'t>(text: &'t str, end: usize, t: &str) -> Option<&'t str> {
    let start = rfind_near_end(&text[..end], t)?;
    json_key_of(text, start, start + t.len())
}

/// Where the last name of a person's record is in `text` (its byte range), when the word ending
/// at `end` is the value of `key`, a first-name key, and the next member of the same record is a
/// last-name key holding one capitalized word: `"first_name": "Sophia", "last_name":
/// "Johansson"`. A record's passenger is indexed as `Sophia Johansson`: listed apart, the
/// first and last names of a booking's four passengers could not be paired back, and a
/// question about who travels is answered with the full name.
fn last_name_after(text: &str, key: &str, end: usize) -> Option<(usize, usize)> {
    let key = key.to_ascii_lowercase();
    if !matches!(
        key.as_str(),
        "first_name" | "firstname" | "given_name" | "givenname"
    ) {
        return None;
    }
    let b = text.as_bytes();
    let ws = |mut i: usize| {
        while b
            .get(i)
            .is_some_and(|c| matches!(c, b' ' | b'\n' | b'\r' | b'\t'))
        {
            i += 1;
        }
        i
    };
    // After the first name's closing quote: `, "<key>": "<Last>"`.
    let mut i = ws(end + 1);
    (b.get(i) == Some(&b',')).then_some(())?;
    i = ws(i + 1);
    (b.get(i) == Some(&b'"')).then_some(())?;
    let key_start = i + 1;
    let key_len = b
        .get(key_start..)?
        .iter()
        .take(41)
        .position(|&c| c == b'"')?;
    let last_key = text[key_start..key_start + key_len].to_ascii_lowercase();
    if !matches!(
        last_key.as_str(),
        "last_name" | "lastname" | "family_name" | "familyname" | "surname"
    ) {
        return None;
    }
    i = ws(key_start + key_len + 1);
    (b.get(i) == Some(&b':')).then_some(())?;
    i = ws(i + 1);
    (b.get(i) == Some(&b'"')).then_some(())?;
    let a = i + 1;
    let len = b.get(a..)?.iter().take(41).position(|&c| c == b'"')?;
    let last = &b[a..a + len];
    // A capitalized word; a hyphen or an apostrophe may open another (`Chen-Li`, `O'Neil`).
    let name = last.len() >= 2
        && last[0].is_ascii_uppercase()
        && last.windows(2).all(|w| {
            w[1].is_ascii_lowercase()
                || (matches!(w[1], b'-' | b'\'') && w[0].is_ascii_alphabetic())
                || (w[1].is_ascii_uppercase() && matches!(w[0], b'-' | b'\''))
        })
        && last[last.len() - 1].is_ascii_lowercase();
    name.then_some((a, a + len))
}

/// Bytes of a JSON tool result read whole: a record's identifiers and values sit in its
/// middle (a booking's passengers, between its flights and its payments), where the edges of
/// a 1,500-byte reservation missed them; a JSON result is records, not a file's dump.
const JSON_SCAN_BYTES: usize = 16_384;

/// Scan `text`, or its two edges when it is long (tool output that is a JSON document of up
/// to `JSON_SCAN_BYTES`, whole).
fn scan_edges(c: &mut Collector, text: &str, weight: f64, recency: f64) {
    let json = weight <= 1.0 && text.len() <= JSON_SCAN_BYTES && {
        let t = text.trim_start();
        t.starts_with('{') || t.starts_with('[')
    };
    if json {
        c.scan(&json_lines(text), weight, recency);
        return;
    }
    // Tool output is read at its edges only; what the user and the assistant said, further.
    let edge = if weight <= 1.0 {
        OUTPUT_EDGE_BYTES
    } else {
        SCAN_EDGE_BYTES
    };
    // What is read of an output goes without a listing's directory lines (`without_listed_dirs`:
    // read on the edges only, as the rest of the output).
    let scan = |c: &mut Collector, t: &str| match (weight <= 1.0)
        .then(|| without_listed_dirs(t))
        .flatten()
    {
        Some(files) => c.scan(&files, weight, recency),
        None => c.scan(t, weight, recency),
    };
    if text.len() <= 2 * edge {
        scan(c, text);
        return;
    }
    let a = head_bytes(text, edge).len();
    let b = text.len() - tail_bytes(text, edge).len();
    // Cut at line ends so no identifier is split; an edge without one (a JSON reply on one
    // line) is cut between tokens: a cut inside `HAT170` would index `HAT1`.
    let head = match text[..a].rfind('\n') {
        Some(i) => &text[..i],
        None => &text[..text[..a].rfind(ends_token).unwrap_or(0)],
    };
    let tail = match text[b..].find('\n') {
        Some(i) => &text[b + i..],
        None => text[b..].find(ends_token).map_or("", |i| &text[b + i..]),
    };
    scan(c, head);
    scan(c, tail);
}

/// Words that name a record code (lower case): in a key (`reservation_id`, `"reservations"`)
/// or just before it in prose ("reservation UHDAHF").
const CODE_NAMES: [&str; 3] = ["reservation", "booking", "confirmation"];

/// Whether a word of 5-8 capital letters at byte `start` of `text` is a record code (a
/// booking's `UHDAHF`): named as one just before it ("reservation UHDAHF", "booking ID:
/// SDZQKO"), or the quoted value (or list item) of a key that names one or ends in `id`. A code
/// of letters alone has nothing else to tell it from a word: the tau-bench airline data's
/// reservation ids are six letters or digits, and those without a digit (about one in seven)
/// were never indexed. Over every message of ../shared/data this reads all 19 distinct such
/// words of the airline dialogues (every one a code) and none of the 268 of the SWE runs (SQL
/// keywords, statuses, log levels stay words; a looser window, any id key within 48 bytes
/// before a quoted word, took a quoted SQL `WHERE` and a status `"ACTIVE"`).
fn is_code_in_context(text: &str, start: usize, word: &str) -> bool {
    if !could_be_code(word) {
        return false;
    }
    let b = text.as_bytes();
    let names = |key: &[u8]| {
        let k = key.to_ascii_lowercase();
        let k = std::str::from_utf8(&k).unwrap_or("");
        CODE_NAMES.iter().any(|n| k.contains(n))
            || k == "id"
            || k.ends_with("_id")
            || k.ends_with("_ids")
    };
    // Prose: the name, then at most a few filler words and marks ("reservation ID: ").
    let mut i = start;
    let mut words = 0;
    loop {
        while i > 0
            && matches!(
                b[i - 1],
                b' ' | b':' | b'#' | b'=' | b'"' | b'\'' | b'(' | b'_'
            )
        {
            i -= 1;
        }
        let w_end = i;
        while i > 0 && b[i - 1].is_ascii_alphabetic() {
            i -= 1;
        }
        if i == w_end {
            break;
        }
        let w = text[i..w_end].to_ascii_lowercase();
        if CODE_NAMES.iter().any(|n| w.starts_with(n)) {
            return true;
        }
        words += 1;
        if words > 2 || !matches!(w.as_str(), "id" | "ids" | "number" | "code" | "no") {
            break;
        }
    }
    // JSON: the quoted value of a key, or an item of a list that is one.
    let end = start + word.len();
    if start == 0
        || !matches!(b[start - 1], b'"' | b'\'')
        || !matches!(b.get(end), Some(b'"' | b'\''))
    {
        return false;
    }
    let back = |mut j: usize| {
        while j > 0 && b[j - 1].is_ascii_whitespace() {
            j -= 1;
        }
        j
    };
    let mut j = back(start - 1);
    if j > 0 && matches!(b[j - 1], b'[' | b',') {
        // A list item: back to the list's opening bracket (flat lists of strings only).
        let floor = j.saturating_sub(400);
        while j > floor && b[j - 1] != b'[' {
            if matches!(b[j - 1], b'{' | b'}' | b']') {
                return false;
            }
            j -= 1;
        }
        if j == floor {
            return false;
        }
        j = back(j - 1);
    }
    if j == 0 || b[j - 1] != b':' {
        return false;
    }
    j = back(j - 1);
    if j == 0 || b[j - 1] != b'"' {
        return false;
    }
    let key_end = j - 1;
    let key_start = b[..key_end]
        .iter()
        .rposition(|&c| c == b'"')
        .map_or(0, |k| k + 1);
    key_end - key_start <= 64 && names(&b[key_start..key_end])
}

/// Whether `word` has a record code's shape (5-8 capital letters), which `is_code_in_context`
/// needs before it reads the text around it.
fn could_be_code(word: &str) -> bool {
    (5..=8).contains(&word.len()) && word.bytes().all(|c| c.is_ascii_uppercase())
}

/// A character no identifier holds (`is_token_char`): a cut there splits none.
fn ends_token(c: char) -> bool {
    !is_token_char(c)
}

/// Directory lines a listing must hold before they are left out of the index.
const LISTING_DIRS: usize = 8;

/// A tool output that lists directories (`ls -R` heads each with `./django/conf:`, `find -type
/// d` prints one per line), without those lines, when it holds `LISTING_DIRS` of them or more.
/// The directories of a tree are no identifiers anyone acted on: one `ls -R` of a Django
/// checkout took 18 of an index's 21 paths (`django/conf/locale/af/LC_MESSAGES`, one per
/// locale) beside the files the run edited. Files listed (a path with an extension) stay.
fn without_listed_dirs(text: &str) -> Option<String> {
    let listed_dir = |line: &str| {
        let l = line.trim().trim_end_matches([':', '/']);
        l.contains('/') && !l.contains(char::is_whitespace) && is_path(l) && !has_path_extension(l)
    };
    // (None below `LISTING_DIRS` directory lines: the output is read as it is.) Each such line
    // holds a '/': only the lines around the '/'s the vectorized `memchr` finds are read, where
    // trimming and searching every line of every output (`text.lines().filter(..)`) was ~2% of
    // a compaction's CPU (`perf`, round 84). A line is the text between two '\n' as `lines`
    // gives it, but for a '\r' before its '\n', which `listed_dir` trims.
    let b = text.as_bytes();
    let mut found = 0;
    let mut at = 0;
    while let Some(i) = memchr::memchr(b'/', &b[at..]) {
        let slash = at + i;
        let start = memchr::memrchr(b'\n', &b[at..slash]).map_or(at, |j| at + j + 1);
        let end = memchr::memchr(b'\n', &b[slash..]).map_or(b.len(), |j| slash + j);
        if listed_dir(&text[start..end]) {
            found += 1;
            if found == LISTING_DIRS {
                break;
            }
        }
        at = end;
    }
    if found < LISTING_DIRS {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    for l in text.split_inclusive('\n') {
        if !listed_dir(l) {
            out.push_str(l);
        }
    }
    Some(out)
}

/// `scan_message` of the message at index `k` of its span (an `out_of_order` collector
/// records it).
pub fn scan_message_at(c: &mut Collector, k: usize, m: &Message<'_>, recency: f64) {
    if c.at.is_some() {
        c.at = Some(k);
    }
    scan_message(c, m, recency);
}

/// The texts of a message with the weight of who said them.
pub fn scan_message(c: &mut Collector, m: &Message<'_>, recency: f64) {
    c.serial += 1;
    let is_result = m.role == Role::Tool || m.tool_call_id.is_some();
    let own = match m.role {
        Role::User | Role::Other if !is_result => 3.0,
        Role::System | Role::Developer => 3.0,
        Role::Assistant => 2.0,
        _ => 1.0,
    };
    // A text agent's observation (a user message opening with its return code) is output.
    let text_weight = |t: &str| {
        if own == 3.0 && t.trim_start().starts_with("<returncode>") {
            1.0
        } else {
            own
        }
    };
    let body = |c: &mut Collector, t: &str| {
        // A result that is one number is what the call computed (a calculator's total, a
        // count): under no key, no rule above indexes it, and once its call line is packed
        // out of the digest the figure is gone.
        if let Some(n) = computed_figure(t) {
            c.add(Kind::Figure, &format!("result {n}"), 1.0, recency, false);
        }
        scan_edges(c, t, 1.0, recency);
        definition_lines(c, t, recency);
    };
    // A JSON envelope's output is read unescaped: its `\n` escapes would join the lines that
    // hold an error's message into one.
    let output = |c: &mut Collector, t: &str| match tool_outcome::json_envelope(t) {
        Some(o) => body(c, &o.body),
        None => body(c, t),
    };
    match &m.content {
        Content::Text(t) if is_result => output(c, t),
        Content::Text(t) => {
            let w = text_weight(t);
            scan_edges(c, t, w, recency);
            if w <= 1.0 {
                definition_lines(c, t, recency);
            }
        }
        Content::Parts(ps) => {
            for p in ps {
                match p {
                    Part::Text(t) => scan_edges(c, t, text_weight(t), recency),
                    Part::ToolUse(call) => {
                        scan_edges(c, &json_unescaped(&call.arguments), 2.0, recency);
                    }
                    Part::ToolResult { content, .. } => {
                        for q in content {
                            if let Part::Text(t) = q {
                                output(c, t);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        Content::None => {}
    }
    for call in &m.tool_calls {
        scan_edges(c, &json_unescaped(&call.arguments), 2.0, recency);
    }
}

/// The definitions a numbered dump shows (`nl -ba`, `cat -n`; `numbered_output`):
/// `NAME:LINE` for each numbered line that opens with `def`, `async def` or `class`, ranked as
/// its name is (`Collector::ranked`). The index reads an output's edges only, and a dump's line
/// numbers were lost with its middle: "where is X defined, at which line" is what the held-out
/// probes ask of SWE folds (`get_latest_lastmod` at 165, `resolve_lookup_value` at 1053), and
/// a SWE agent's next `sed -n '165,180p'` reads the line it saw. Found by the keywords, not by
/// reading every line: a dump of thousands of lines holds a few dozen.
fn definition_lines(c: &mut Collector, text: &str, recency: f64) {
    if !numbered_output(text) {
        return;
    }
    static KEYWORDS: std::sync::OnceLock<[memchr::memmem::Finder<'static>; 2]> =
        std::sync::OnceLock::new();
    let finders = KEYWORDS.get_or_init(|| {
        [
            memchr::memmem::Finder::new(b"def "),
            memchr::memmem::Finder::new(b"class "),
        ]
    });
    let bytes = text.as_bytes();
    for finder in finders {
        // (The line start of the hit before, and where that hit was: a line is searched back
        // once, however many keywords it holds.)
        let (mut start, mut from) = (0, 0);
        for at in finder.find_iter(bytes) {
            // What precedes the keyword on its line says whether it is a numbered definition;
            // what follows it, the name (read up to the name's end only: a line of prose may be
            // long, and prose says "class" and "def" often).
            if let Some(i) = memchr::memrchr(b'\n', &bytes[from..at]) {
                start = from + i + 1;
            }
            from = at;
            if let Some((name, line)) = numbered_definition(&text[start..at], &text[at..]) {
                c.add(Kind::Symbol, &format!("{name}:{line}"), 1.0, recency, false);
            }
        }
    }
}

/// Whether an output is a numbered dump (`nl -ba`, `cat -n`, a read tool's numbered lines): one of
/// its first three lines (besides a harness's tags, `<returncode>`, `<output>`) is a number and a
/// tab. Read before the keywords are sought: outputs of prose and code say "class" and "def"
/// often (the synthetic history's hold 225,000), and only a numbered one says where. A search's
/// `path:line:` matches are not read here: its call line keeps them (a search's shortest form),
/// and the same lines twice cost a tight room a call (`an_old_search_keeps_its_matches_...`).
fn numbered_output(text: &str) -> bool {
    text.lines()
        .map(str::trim_start)
        .filter(|l| !l.is_empty() && !l.starts_with('<'))
        .take(3)
        .any(|l| {
            let digits = l.bytes().take_while(u8::is_ascii_digit).count();
            (1..=6).contains(&digits) && l.as_bytes().get(digits) == Some(&b'\t')
        })
}

/// The name a numbered line defines and its number, from what precedes the keyword on its
/// line (`before`) and the text from the keyword on (`code`, opening with `def ` or `class `):
/// `   165\t    def get_latest_lastmod(self):` (nl -ba, cat -n).
fn numbered_definition<'t>(before: &'t str, code: &'t str) -> Option<(&'t str, &'t str)> {
    // Read back from the keyword, so that a keyword in prose is told apart in a few bytes: the
    // indentation (and `async`), the tab after the number, the number, then nothing but spaces.
    let b = before.trim_end_matches([' ', '\t']);
    let b = b
        .strip_suffix("async")
        .map_or(b, |a| a.trim_end_matches([' ', '\t']));
    if !before[b.len()..].starts_with('\t') {
        return None;
    }
    let digits = b.bytes().rev().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 6 || !b[..b.len() - digits].trim().is_empty() {
        return None;
    }
    let number = &b[b.len() - digits..];
    let after = code
        .strip_prefix("def ")
        .or_else(|| code.strip_prefix("class "))?;
    let n = after
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    (n >= 3).then(|| (&after[..n], number))
}

/// A tool result's text that is a single number of three digits or more (`1203.0`, `-1,250`),
/// as written: a figure a call computed. Shorter numbers (an exit code, a flag) say little
/// without their call.
fn computed_figure(text: &str) -> Option<&str> {
    // (Length before digits: every result of a history passes here, some of them megabytes;
    // the trim reads only the whitespace at its ends.)
    let t = text.trim();
    (t.len() <= 32
        && t.bytes().filter(u8::is_ascii_digit).count() >= 3
        && is_number(t.strip_prefix('-').unwrap_or(t)))
    .then_some(t)
}

/// A JSON document with the line breaks and tabs escaped in its strings decoded, every other
/// escape (`\"`, `\\`) and so its structure kept: a result such as `{"path": "app.py",
/// "content": "import os\nsettings.configure()"}` is read as its lines, where the raw text
/// indexed `nsettings.configure`, and its records' keys and values are still found by their
/// quotes. Borrowed when there is no escape.
fn json_lines(text: &str) -> Cow<'_, str> {
    decode_escapes(text, false)
}

/// A call's arguments (JSON text) with the escapes of its strings decoded: a script passed as
/// `{"command": "cat <<EOF\nsettings.configure()"}` is read as the lines it holds, where the
/// raw text indexed `nsettings.configure` (the escape's `n` glued to the next word) and lost
/// every identifier that opens a line of a script, a patch or a file an agent writes.
/// Borrowed when there is no escape.
fn json_unescaped(text: &str) -> Cow<'_, str> {
    decode_escapes(text, true)
}

/// `text` with its JSON escapes for line breaks and tabs decoded, and with `all`, every other
/// escape too (quotes, backslashes, `\uXXXX`; backspace and form feed as spaces); without it,
/// other escapes stay as written.
fn decode_escapes(text: &str, all: bool) -> Cow<'_, str> {
    let Some(first) = memchr::memchr(b'\\', text.as_bytes()) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..first]);
    let mut chars = text[first..].chars();
    while let Some(ch) = chars.next() {
        if ch != '\\' {
            out.push(ch);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            None => out.push('\\'),
            Some(other) if !all => {
                out.push('\\');
                out.push(other);
            }
            // (Backspace and form feed separate words as a space does.)
            Some('b' | 'f') => out.push(' '),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                // A lone surrogate half (an emoji's) is no identifier's: a space stands for it.
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(decoded) => out.push(decoded),
                    None => out.push(' '),
                }
            }
            Some(other) => out.push(other),
        }
    }
    Cow::Owned(out)
}

/// The ranked identifiers of `msgs`, with `previous`'s index carried first.
pub fn collect(msgs: &[Message<'_>], previous: Option<&str>) -> Vec<Ident> {
    let mut c = Collector::default();
    c.make_room();
    if let Some(p) = previous {
        c.carry(p);
    }
    let n = msgs.len().max(1) as f64;
    for (i, m) in msgs.iter().enumerate() {
        // The previous summary is read through `previous` (its index carried), not rescanned;
        // the message it was merged into, if any, is read without it.
        if let (Some(s), Some(p)) = (crate::compaction::own_summary(m), previous) {
            if p.contains(s.trim()) {
                if let Some(host) = crate::summary_marker::without_summary(m) {
                    scan_message(&mut c, &host, (i + 1) as f64 / n);
                }
                continue;
            }
        }
        scan_message(&mut c, m, (i + 1) as f64 / n);
    }
    c.ranked()
}

#[cfg(test)]
mod tests {
    use super::shown::is_word_char;
    use super::*;
    use crate::estimate::Estimator;

    /// The search back from the end finds what `rfind` finds: the last match, a needle at the
    /// very start or end, overlapping matches, none, an empty needle, other scripts.
    #[test]
    fn the_search_back_from_the_end_finds_what_rfind_finds() {
        let texts = [
            "",
            "a",
            "aaa",
            "12,5 5",
            "abcabc",
            "é5é5",
            "日本5.5 日本",
            "x…y 5",
        ];
        let needles = [
            "", "a", "aa", "5", "5 5", "abc", "bca", "é5", "日本", "本5", "zz", "5.5",
        ];
        for t in texts {
            for n in needles {
                for end in (0..=t.len()).filter(|&e| t.is_char_boundary(e)) {
                    assert_eq!(
                        rfind_near_end(&t[..end], n),
                        t[..end].rfind(n),
                        "{t:?} {n:?}"
                    );
                }
            }
        }
    }

    /// The library's own stand-ins are not the conversation's identifiers: a masked output's
    /// placeholder, a cut's marker (whole, or with its opening clipped away at the end of a
    /// carried line), and a token a clip cut in two.
    #[test]
    fn a_listing_s_directories_are_left_out_and_dot_slash_paths_stay_relative() {
        // An `ls -R` of a checkout (SWE run 114 of the recorded mini-swe-agent set): its
        // directory heads took 18 of the index's 21 paths, each indexed as `/django/...`, a
        // root path that is not there, beside the files the run edited.
        let mut ls = String::from("<returncode>0</returncode>\n<output>\n.:\n./Django.egg-info:\n");
        for loc in ["af", "ar", "ar_DZ", "ast", "az", "be"] {
            ls.push_str(&format!(
                "./django/conf/locale/{loc}:\n./django/conf/locale/{loc}/LC_MESSAGES:\n"
            ));
        }
        ls.push_str("./django/db/models/constraints.py\n</output>");
        let msgs = vec![
            Message::text("user", "Fix the constraint error message."),
            Message::text("assistant", "cat ./django/db/models/base.py"),
            Message::text("tool", &ls),
        ];
        let paths: Vec<String> = collect(&msgs, None)
            .into_iter()
            .filter(|i| i.kind == Kind::Path)
            .map(|i| i.text)
            .collect();
        assert_eq!(
            paths,
            [
                "django/db/models/base.py",
                "django/db/models/constraints.py"
            ]
        );
        // Fewer directory lines than a listing holds are read as they are.
        let few = "moved to ./django/conf/locale/af/LC_MESSAGES:\n./django/conf/locale/ar:";
        let got: Vec<String> = collect(&[Message::text("tool", few)], None)
            .into_iter()
            .map(|i| i.text)
            .collect();
        assert!(
            got.contains(&"django/conf/locale/ar".to_string()),
            "{got:?}"
        );
    }

    /// The '/'-led search finds a listing where the walk of every line did (its lines `\r\n`
    /// or `\n`, a directory line first or last, fewer or more than `LISTING_DIRS`).
    #[test]
    fn a_listing_is_found_as_the_walk_of_every_line_found_it() {
        let by_lines = |text: &str| {
            text.lines()
                .filter(|line| {
                    let l = line.trim().trim_end_matches([':', '/']);
                    l.contains('/')
                        && !l.contains(char::is_whitespace)
                        && is_path(l)
                        && !has_path_extension(l)
                })
                .nth(LISTING_DIRS - 1)
                .is_some()
        };
        for n in [0, 1, 7, 8, 9, 20] {
            for sep in ["\n", "\r\n"] {
                for edges in [("", ""), ("moved a/b.py to x/y\n", "\n$ ls a/b/c d/e")] {
                    let dirs: Vec<String> = (0..n).map(|i| format!("./pkg/sub{i}:")).collect();
                    let text = format!("{}{}{}", edges.0, dirs.join(sep), edges.1);
                    assert_eq!(
                        without_listed_dirs(&text).is_some(),
                        by_lines(&text),
                        "{text:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_librarys_stand_ins_and_clipped_tokens_are_not_indexed() {
        let text = "Booked HAT132 for Lei Ito.\n\
                    [output pruned to save context: get_reservation_details returned 792 bytes (~260 tokens)]\n\
                    <returncode>0</returncode>\n[... ~2,148 tokens cut from the middle ...]\n\
                    - $ nl -ba a/b.py -> ok: rc=0: …o save context: 3,625 bytes (~1,006 tokens)]\n\
                    - get_reservation_details -> ok: created_at=2024-05-…-14T06:33:04, total=5 MB";
        let mut c = Collector::default();
        c.scan(text, 1.0, 0.0);
        let found: Vec<String> = c.ranked().into_iter().map(|i| i.text).collect();
        assert!(found.iter().any(|t| t == "HAT132"), "{found:?}");
        assert!(found.iter().any(|t| t == "5 MB"), "{found:?}");
        for junk in [
            "792 bytes",
            "260 tokens",
            "148 tokens",
            "3,625 bytes",
            "006 tokens",
            "1,006 tokens",
            "14T06",
        ] {
            assert!(
                !found.iter().any(|t| t.contains(junk)),
                "{junk} in {found:?}"
            );
        }
        assert!(!found.iter().any(|t| t.starts_with("14T06")), "{found:?}");
        assert!(stand_ins("nothing of the library's here [1, 2]").is_empty());
        // What a stand-in mentions is read; its own words around the list are not.
        for stand_in in [
            "[output pruned to save context: get_user_details returned 1,210 bytes (~410 tokens); mentions certificate_7473723, /srv/app/config.yaml]",
            "[folded tool output of get_user_details, ~410 tokens; mentions certificate_7473723, /srv/app/config.yaml; id=cf0123456789ab, contextfold_recall restores it]",
            "head\n[... ~2,148 tokens cut from the middle; mentions certificate_7473723, /srv/app/config.yaml ...]\nend",
        ] {
            let mut c = Collector::default();
            c.scan(stand_in, 1.0, 0.0);
            let found: Vec<String> = c.ranked().into_iter().map(|i| i.text).collect();
            assert!(found.iter().any(|t| t == "certificate_7473723"), "{found:?}");
            assert!(found.iter().any(|t| t == "/srv/app/config.yaml"), "{found:?}");
            assert!(
                !found.iter().any(|t| t.contains("tokens") || t.contains("bytes") || t.contains("cf0123")),
                "{found:?}"
            );
        }
        // Any script before a marker: the search back never splits a character.
        for pad in ["", "é", "ééééééééa", "日本語の出力x", "🙂🙂🙂🙂🙂y"] {
            let t = format!("{pad}[~12 tokens cut]{pad} and 12 tokens cut, ~3 tokens)]");
            let found = stand_ins(&t);
            assert!(
                found.iter().any(|r| t[r.clone()] == *"[~12 tokens cut]"),
                "{t}: {found:?}"
            );
        }
    }
    use crate::message::ToolCall;
    use crate::provider::Provider;

    /// The word-keyed search finds what a plain search of every identifier, checked for whole
    /// words, finds: on texts mixing prefixes (`HAT1`, `HAT110`), leading symbols (`$105`,
    /// `#123`, `./x`), spaces inside an identifier (`5 ms`, an error line), other scripts and
    /// identifiers with no word character.
    #[test]
    fn shown_finds_what_a_plain_search_finds() {
        let texts = [
            "HAT1 HAT110 xHAT1 HAT1_ HAT1-2 (HAT1) $105 $1050 a$105 #123 ##123 #1234",
            "src/app.py src/app.pyc ./src/app.py 5 ms 5 msg took 15 ms ValueError: bad thing here",
            "Größe12 Größe123 éHAT1 HAT1é 名前ID1 ID1 -- ... --x",
            "reservation_id=M05KNL,UHDAHF;M05KNL2 __init__ ___init__ a.b.c a.b",
            "",
        ];
        let words = [
            "HAT1",
            "HAT110",
            "$105",
            "#123",
            "src/app.py",
            "./src/app.py",
            "5 ms",
            "ValueError: bad thing",
            "Größe12",
            "ID1",
            "--",
            "...",
            "M05KNL",
            "UHDAHF",
            "__init__",
            "a.b",
            "b.c",
        ];
        let idents = shown::tests::idents(&words);
        let shown = Shown::new(&idents);
        let word = |c: Option<char>| c.is_some_and(is_word_char);
        for text in texts {
            let want: Vec<bool> = words
                .iter()
                .map(|w| {
                    text.match_indices(w).any(|(at, _)| {
                        !word(text[..at].chars().next_back())
                            && !word(text[at + w.len()..].chars().next())
                    })
                })
                .collect();
            assert_eq!(shown.flags(text), want, "{text}");
        }
    }

    /// An identifier counts as shown only as a whole word: `HAT1` is not in `HAT110`, and an id
    /// written inside `key=value` or after a `$` is.
    #[test]
    fn an_identifier_is_shown_only_as_a_whole_word() {
        let ident = |kind, text: &str| Ident {
            kind,
            text: text.to_string(),
            weight: 1.0,
            recency: 1.0,
            carried: false,
        };
        let idents = [
            ident(Kind::Id, "HAT1"),
            ident(Kind::Id, "M05KNL"),
            ident(Kind::Quantity, "$105"),
            ident(Kind::Path, "src/app.py"),
            ident(Kind::Id, "HAT110"),
            ident(Kind::Id, "UHDAHF"),
        ];
        let shown = Shown::new(&idents);
        let text = "get_reservation_details(reservation_id=M05KNL) -> flight HAT110 at $105, see src/app.pyc";
        assert_eq!(
            shown.flags(text),
            vec![false, true, true, false, true, false]
        );
        assert_eq!(Shown::new(&[]).flags(text), Vec::<bool>::new());
        // The index leaves the shown ones out, and lists the rest.
        let est = Estimator::new(Provider::OpenAI, "");
        let index = render_except(
            &idents,
            &prices(&idents, &est),
            &est,
            500,
            &shown.flags(text),
        );
        for (id, listed) in [
            ("HAT1", true),
            ("M05KNL", false),
            ("$105", false),
            ("UHDAHF", true),
        ] {
            let found = index.split([' ', ',', '\n']).any(|w| w == id);
            assert_eq!(found, listed, "{id} in\n{index}");
        }
    }

    /// A previous summary's identifiers carry over: those of its index first, then those its
    /// lines show (which its index left out), all carried; code symbols of its lines are not
    /// read.
    #[test]
    fn a_previous_summarys_lines_give_their_identifiers_too() {
        let previous = "Earlier conversation folded by contextfold (40 messages: 2 user requests, 9 tool calls, 0 errors).\n## Tool calls\n- get_user_details(user_id=aarav_garcia_1177) -> ok: reservations=[ZZ9Q7T], MigrationLoader\n\n## Identifier index\n- ids: K2L9QX";
        let mut c = Collector::default();
        c.carry(previous);
        let got: Vec<(String, bool)> = c
            .ranked()
            .into_iter()
            .map(|i| (i.text, i.carried))
            .collect();
        assert_eq!(got[0], ("K2L9QX".to_string(), true), "{got:?}");
        for id in ["aarav_garcia_1177", "ZZ9Q7T"] {
            assert!(got.contains(&(id.to_string(), true)), "{id}: {got:?}");
        }
        assert!(
            !got.iter()
                .any(|(t, _)| t == "MigrationLoader" || t == "40 messages"),
            "{got:?}"
        );
    }

    #[test]
    fn carried_values_give_way_to_the_new_folds_ids_but_carried_ids_do_not() {
        let previous = "Earlier conversation folded by contextfold (4 messages).\n## Identifier index\n- ids: K2L9QX\n- values: USA, Lei Patel\n- figures: price 1956";
        let msgs = [Message::text(
            "assistant",
            "Reservation 4OG6T3 holds flights HAT006 and HAT018; HAT006 is delayed.",
        )];
        let got: Vec<String> = collect(&msgs, Some(previous))
            .into_iter()
            .map(|i| i.text)
            .collect();
        let at = |t: &str| got.iter().position(|g| g == t).unwrap_or(usize::MAX);
        assert_eq!(at("K2L9QX"), 0, "{got:?}");
        for new in ["4OG6T3", "HAT006", "HAT018"] {
            assert!(
                at(new) < at("USA") && at(new) < at("Lei Patel"),
                "{new}: {got:?}"
            );
        }
        // Still indexed, after them.
        assert!(
            at("USA") < usize::MAX && at("price 1956") < usize::MAX,
            "{got:?}"
        );
    }

    /// The index heading counts only as a line of its own: the same text quoted mid-line by a
    /// call's result neither ends the summary's own text nor gives identifiers.
    #[test]
    fn an_index_heading_counts_only_as_a_line_of_its_own() {
        let planted = "Earlier conversation folded by contextfold (9 messages).\n## Tool calls\n- fetch(url=https://x.test/p3) -> ok: ## Identifier index - ids: FAKE123 page text\n- fetch(url=https://x.test/p4) -> ok: page four\n\n## Last state\nPage 4 read.";
        assert_eq!(index_at(planted), None);
        assert_eq!(strip(planted), planted);
        assert!(parse(planted).is_empty());
        let real = format!("{planted}\n\n## Identifier index\n- ids: K2L9QX");
        assert_eq!(strip(&real), planted);
        assert_eq!(parse(&real), vec![(Kind::Id, "K2L9QX".to_string())]);
        assert_eq!(index_at("## Identifier index\n- ids: A1B2C3"), Some(0));
    }

    /// A code symbol the agent wrote in two messages ranks with the paths, before the file names
    /// one listing showed; a symbol an output showed once stays after every other kind.
    #[test]
    fn a_symbol_the_agent_used_ranks_before_the_file_names_of_one_listing() {
        let listing: String = (0..40).map(|k| format!("module_{k}.py\n")).collect();
        let texts = [
            "THOUGHT: list the package.\n\n```bash\nls astropy/io/ascii\n```".to_string(),
            format!("<output>\n{listing}</output>"),
            "THOUGHT: SimpleRSTHeader sets position_line.\n\n```bash\ngrep -n SimpleRSTHeader astropy/io/ascii/rst.py\n```".to_string(),
            "<output>\n27:class SimpleRSTHeader(FixedWidthHeader):\n</output>".to_string(),
            "THOUGHT: edit SimpleRSTHeader.\n\n```bash\nsed -i 's/x/y/' astropy/io/ascii/rst.py\n```".to_string(),
        ];
        let ranked = collect_text_agent(&texts);
        let at = |text: &str| {
            ranked
                .iter()
                .position(|i| i.text == text)
                .unwrap_or_else(|| panic!("{text}: {ranked:?}"))
        };
        let used = at("SimpleRSTHeader");
        assert!(!ranked[used].minor());
        for k in 0..40 {
            assert!(
                used < at(&format!("module_{k}.py")),
                "module_{k}.py: {ranked:?}"
            );
        }
        // Shown once, by an output: after every path.
        let once = at("FixedWidthHeader");
        assert!(ranked[once].minor());
        assert!(at("module_39.py") < once, "{ranked:?}");
    }

    /// The ranked index of a text agent's turns: `texts` alternate assistant turns and their
    /// observations (user messages), the first an assistant's.
    fn collect_text_agent(texts: &[String]) -> Vec<Ident> {
        let msgs: Vec<Message<'_>> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| Message::text(if i % 2 == 0 { "assistant" } else { "user" }, t))
            .collect();
        collect(&msgs, None)
    }

    /// The definitions of a numbered dump are indexed with their lines, from its middle too
    /// (the index reads an output's edges only), and rank as their names do: the line of a name
    /// the agent used with it, one it never used among the little-used symbols.
    #[test]
    fn a_definition_in_a_numbered_dump_is_indexed_with_its_line() {
        for (line, found) in [
            (
                "   165\t    def get_latest_lastmod(self):",
                Some(("get_latest_lastmod", "165")),
            ),
            (
                "    44\tclass HashedFilesMixin:",
                Some(("HashedFilesMixin", "44")),
            ),
            (
                "44\t\tdef tab_indented(self):",
                Some(("tab_indented", "44")),
            ),
            // A search's matches: its call line keeps them.
            ("44:class HashedFilesMixin:", None),
            (
                "django/db/models/sql/query.py:1053:    def resolve_lookup_value(self):",
                None,
            ),
            (
                "  12\t    async def fetch(self, url=1.0):",
                Some(("fetch", "12")),
            ),
            // Not numbered, not a definition, or a name too short to say anything.
            ("    def get_latest_lastmod(self):", None),
            ("   166\t        if not hasattr(self, 'lastmod'):", None),
            ("   170\t    def f(x):", None),
            ("Ran 12 tests: class A", None),
        ] {
            let at = ["def ", "class "]
                .iter()
                .filter_map(|k| line.find(k))
                .min()
                .unwrap_or(line.len());
            assert_eq!(
                numbered_definition(&line[..at], &line[at..]),
                found,
                "{line}"
            );
        }
        let dump: String = (150..200)
            .map(|k| match k {
                165 => "   165\t    def get_latest_lastmod(self):\n".to_string(),
                180 => "   180\t    def _urls(self, page, protocol, domain):\n".to_string(),
                _ => format!("   {k}\t        x = {k}\n"),
            })
            .collect();
        let texts = [
            "THOUGHT: read get_latest_lastmod.\n\n```bash\nnl -ba django/contrib/sitemaps/__init__.py | sed -n '150,200p'\n```".to_string(),
            format!("<returncode>0</returncode>\n<output>\n{dump}</output>"),
            "THOUGHT: get_latest_lastmod only catches TypeError.\n\n```bash\nsed -i '171s/x/y/' django/contrib/sitemaps/__init__.py\n```".to_string(),
        ];
        let ranked = collect_text_agent(&texts);
        let of = |text: &str| ranked.iter().find(|i| i.text == text);
        let used = of("get_latest_lastmod:165").unwrap_or_else(|| panic!("{ranked:?}"));
        assert!(
            !used.minor() && used.weight >= SYMBOL_USED_WEIGHT,
            "{used:?}"
        );
        let unused = of("_urls:180").unwrap_or_else(|| panic!("{ranked:?}"));
        assert!(unused.minor(), "{unused:?}");
    }

    /// A JSON object's keys are field names and a markup tag's name is a prompt's section, not
    /// symbols; a JSON value, and code, still are.
    #[test]
    fn a_json_key_or_a_tag_name_is_not_a_symbol() {
        let mut c = Collector::default();
        c.scan(
            r#"{"first_name": "Mei", "payment_history" : [], "cabin": "basic_economy"} then call parse_http_date(x)"#,
            1.0,
            1.0,
        );
        c.scan(
            "Format your action as shown in <response_example>.\n<response_example>x</response_example> via response_example_fn",
            1.0,
            1.0,
        );
        let got: Vec<String> = c.ranked().into_iter().map(|i| i.text).collect();
        assert!(!got.iter().any(|t| t == "response_example"), "{got:?}");
        for key in ["first_name", "payment_history"] {
            assert!(!got.iter().any(|t| t == key), "{key}: {got:?}");
        }
        for kept in ["basic_economy", "parse_http_date", "response_example_fn"] {
            assert!(got.iter().any(|t| t == kept), "{kept}: {got:?}");
        }
    }

    /// A code of capital letters alone is an id where the text names it or quotes it after an
    /// id key; the same word elsewhere, and SQL keywords or log levels, are not.
    #[test]
    fn a_booking_code_of_letters_alone_is_an_id_where_the_text_says_so() {
        let ids = |text: &str| of_kind(Kind::Id, text);
        let profile = r#"{"user_id": "aarav_garcia_1177", "reservations": ["M05KNL", "UHDAHF"]}"#;
        assert!(
            ids(profile).contains(&"UHDAHF".to_string()),
            "{:?}",
            ids(profile)
        );
        for said in [
            "Please cancel reservation UHDAHF.",
            "My booking SDZQKO was delayed",
            "reservation_id=IFOYYZ",
            r#"{"reservation_id": "PUNERT", "status": "ACTIVE"}"#,
        ] {
            let got = ids(said);
            assert!(
                got.iter()
                    .any(|t| ["UHDAHF", "SDZQKO", "IFOYYZ", "PUNERT"].contains(&t.as_str())),
                "{said}: {got:?}"
            );
            assert!(!got.contains(&"ACTIVE".to_string()), "{said}: {got:?}");
        }
        for not_code in [
            "SELECT name FROM users WHERE user_id = 3 GROUP BY name",
            "ERROR: PASSED with DEBUG output",
            "The UHDAHF word alone, with no name before it.",
            r#"{"level": "DEBUG", "state": "FAILED"}"#,
        ] {
            assert_eq!(ids(not_code), Vec::<String>::new(), "{not_code}");
        }
    }

    #[test]
    fn names_and_codes_of_a_json_record_are_values() {
        let values = |text: &str| of_kind(Kind::Value, text);
        let booking = r#"{"origin": "BOS", "flights": [{"flight_number": "HAT006"}], "passengers": [{"first_name": "Anya", "last_name": "Brown"}], "cabin": "economy", "state": "TX", "note": "Thanks"}"#;
        let mut got = values(booking);
        got.sort();
        assert_eq!(got, ["Anya Brown", "BOS"], "{booking}");
        // The same words outside a JSON value are no values.
        for prose in [
            "Anya Brown flies from BOS.",
            "origin=BOS, first_name=Anya",
            r#"{"BOS": 1, "Anya": 2}"#,
        ] {
            assert_eq!(values(prose), Vec::<String>::new(), "{prose}");
        }
    }

    /// A tool result that is one number of three digits or more (a calculator's total) is a
    /// figure, `result` its key: no JSON key names it, and a folded call line loses it.
    #[test]
    fn a_result_that_is_one_number_is_a_figure() {
        let figures = |role: &str, text: &str| -> Vec<String> {
            collect(&[Message::text(role, text)], None)
                .into_iter()
                .filter(|i| i.kind == Kind::Figure)
                .map(|i| i.text)
                .collect()
        };
        assert_eq!(figures("tool", "1203.0"), ["result 1203.0"]);
        assert_eq!(figures("tool", " -1,250\n"), ["result -1,250"]);
        // An exit code or a flag says little without its call; a number inside words, or said
        // by a person, is read by the other rules.
        for (role, text) in [
            ("tool", "0"),
            ("tool", "42"),
            ("tool", "1203 passed"),
            ("user", "1203.0"),
            ("assistant", "1203.0"),
        ] {
            assert_eq!(figures(role, text), Vec::<String>::new(), "{role}: {text}");
        }
    }

    /// A record's price, amount paid and date are figures, said with their key, ranked after
    /// the record's ids and names; the same numbers and dates elsewhere are none.
    #[test]
    fn prices_and_dates_of_a_json_record_are_figures_after_its_ids() {
        let figures = |text: &str| {
            let mut v = of_kind(Kind::Figure, text);
            v.sort();
            v
        };
        let booking = r#"{"reservation_id": "M05KNL", "flights": [{"flight_number": "HAT227", "date": "2024-05-23", "price": 1936}], "payment_history": [{"payment_id": "gift_card_8887175", "amount": 2787}], "total_baggages": 2, "created_at": "2024-05-14T06:33:04", "dob": "1992-09-13", "seats": 12}"#;
        assert_eq!(
            figures(booking),
            ["amount 2787", "date 2024-05-23", "price 1936"]
        );
        let mut c = Collector::default();
        c.scan(booking, 1.0, 1.0);
        let ranked: Vec<Kind> = c.ranked().into_iter().map(|i| i.kind).collect();
        let first_figure = ranked.iter().position(|k| *k == Kind::Figure).unwrap();
        assert!(
            ranked[..first_figure].contains(&Kind::Id)
                && ranked[first_figure..]
                    .iter()
                    .all(|k| matches!(k, Kind::Figure | Kind::Symbol)),
            "{ranked:?}"
        );
        for elsewhere in [
            "The flight on 2024-05-23 costs 1936.",
            "price=1936, date=2024-05-23",
            r#"{"seats": 1936, "dob": "2024-05-23"}"#,
        ] {
            assert_eq!(figures(elsewhere), Vec::<String>::new(), "{elsewhere}");
        }
    }

    /// A script passed in a call's JSON arguments, or returned in a JSON result, is read as its
    /// lines: no identifier that opens a line takes the `n` of the `\n` escape before it, and
    /// escaped quotes, tabs and unicode escapes separate or decode as they would in the text.
    #[test]
    fn a_calls_escaped_script_is_read_as_its_lines() {
        let args = r#"{"command":"cat <<'EOF' > repro.py\nsettings.configure(DEBUG=True)\n\tphoto_ct = ContentType.objects.get_for_model(Photo)\nprint(\"HAT229\")  # caf\u00e9 \ud83d\nEOF","path":"C:\\Users\\me\\notes.txt"}"#;
        let mut m = Message::text("assistant", "");
        m.tool_calls.push(ToolCall {
            id: "c1",
            name: "bash",
            arguments: Cow::Borrowed(args),
        });
        let texts: Vec<String> = collect(&[m], None).into_iter().map(|i| i.text).collect();
        for want in [
            "settings.configure",
            "photo_ct",
            "ContentType.objects.get_for_model",
            "HAT229",
            "repro.py",
        ] {
            assert!(texts.iter().any(|t| t == want), "{want} not in {texts:?}");
        }
        assert!(
            !texts
                .iter()
                .any(|t| t.starts_with('n') && t.contains("settings") || t.starts_with("tphoto")),
            "{texts:?}"
        );
        // A JSON result holding a file's lines is read as those lines, its quotes kept.
        let mut c = Collector::default();
        scan_edges(
            &mut c,
            r#"{"path": "repro.py", "content": "import os\nsettings.configure(DEBUG=True)\n", "first_name": "Mei"}"#,
            1.0,
            1.0,
        );
        let read: Vec<String> = c.ranked().into_iter().map(|i| i.text).collect();
        assert!(read.iter().any(|t| t == "settings.configure"), "{read:?}");
        assert!(read.iter().any(|t| t == "Mei"), "{read:?}");
        assert!(!read.iter().any(|t| t.starts_with("nsettings")), "{read:?}");
        assert_eq!(json_unescaped("plain"), "plain");
        assert_eq!(
            json_lines(r#"{"a":"x\ny \"q\" \\n"}"#),
            "{\"a\":\"x\ny \\\"q\\\" \\\\n\"}"
        );
        assert_eq!(json_unescaped(r"a\\nb\"), "a\\nb\\");
        assert_eq!(json_unescaped(r"\u00e9\ud83d"), "\u{e9} ");
    }

    /// A person's first and last names, adjacent in one record, are one value: the passengers
    /// of a booking can be told apart. Names not adjacent, or not a name, stay apart.
    #[test]
    fn a_records_first_and_last_name_are_one_value() {
        let values = |text: &str| {
            let mut v = of_kind(Kind::Value, text);
            v.sort();
            v
        };
        let booking = r#"{"passengers": [{"first_name": "Sophia", "last_name": "Johansson", "dob": "1990-01-01"}, {"first_name":"James","last_name":"O'Neil"}, {"firstName": "Mei",
            "lastName": "Chen-Li"}]}"#;
        assert_eq!(
            values(booking),
            ["James O'Neil", "Mei Chen-Li", "Sophia Johansson"]
        );
        // Another member between them, a last name that is no name, and a last name alone.
        assert_eq!(
            values(r#"{"first_name": "Ava", "dob": "1990", "last_name": "Rossi"}"#),
            ["Ava", "Rossi"]
        );
        assert_eq!(
            values(r#"{"first_name": "Ava", "last_name": "ROSSI-1"}"#),
            ["Ava"]
        );
        assert_eq!(values(r#"{"last_name": "Rossi"}"#), ["Rossi"]);
        // A name at the end of the text, with nothing after it, is read without running off.
        assert_eq!(values(r#"{"first_name": "Ava""#), ["Ava"]);
    }

    /// A JSON result is read whole up to `JSON_SCAN_BYTES`: a value in its middle is found.
    #[test]
    fn a_json_result_is_read_past_its_edges() {
        let filler = format!("\"{}\"", "x".repeat(1_000));
        let result =
            format!(r#"{{"a": {filler}, "passengers": [{{"first_name": "Mei"}}], "b": {filler}}}"#);
        let mut c = Collector::default();
        scan_edges(&mut c, &result, 1.0, 1.0);
        assert!(
            c.ranked().iter().any(|i| i.text == "Mei"),
            "the middle of a JSON result was not read"
        );
    }

    fn kinds(text: &str) -> Vec<(Kind, String)> {
        let mut c = Collector::default();
        c.scan(text, 1.0, 1.0);
        c.ranked().into_iter().map(|i| (i.kind, i.text)).collect()
    }

    /// The items of `kind` in `text`, ranked.
    fn of_kind(kind: Kind, text: &str) -> Vec<String> {
        kinds(text)
            .into_iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, t)| t)
            .collect()
    }

    /// pytest draws a failing test's name between rules of underscores: the rule is no
    /// symbol, the name between is.
    #[test]
    fn a_rule_of_underscores_is_not_a_symbol() {
        let symbols = of_kind(
            Kind::Symbol,
            "____________________________ test_render_unicode_width ____________________________",
        );
        assert_eq!(symbols, vec!["test_render_unicode_width".to_string()]);
    }

    #[test]
    fn finds_each_kind() {
        let found = kinds(
            "Edited src/app/main.py and django/utils/http.py; see https://github.com/o/r/pull/13614 \
             (#13614), commit 3f2a9c1d, id 123e4567-e89b-12d3-a456-426614174000. Reservation OBUT9V \
             for sofia_kim_7287 on HAT229 costs $1,023 and takes 5 hours. Set DJANGO_SETTINGS_MODULE; \
             call parse_http_date() in pkgutil.iter_modules and ASCIIUsernameValidator.\n\
             AssertionError: 22 != 25 : 22 queries executed, 25 expected",
        );
        for (kind, text) in [
            (Kind::Path, "src/app/main.py"),
            (Kind::Path, "django/utils/http.py"),
            (Kind::Url, "https://github.com/o/r/pull/13614"),
            (Kind::Issue, "#13614"),
            (Kind::Hash, "3f2a9c1d"),
            (Kind::Hash, "123e4567-e89b-12d3-a456-426614174000"),
            (Kind::Id, "OBUT9V"),
            (Kind::Id, "sofia_kim_7287"),
            (Kind::Id, "HAT229"),
            (Kind::Quantity, "$1,023"),
            (Kind::Quantity, "5 hours"),
            (Kind::Key, "DJANGO_SETTINGS_MODULE"),
            (Kind::Symbol, "parse_http_date"),
            (Kind::Symbol, "pkgutil.iter_modules"),
            (Kind::Symbol, "ASCIIUsernameValidator"),
            (
                Kind::Error,
                "AssertionError: 22 != 25 : 22 queries executed, 25 expected",
            ),
        ] {
            assert!(
                found.iter().any(|(k, t)| *k == kind && t == text),
                "{kind:?} {text:?} missing in {found:?}"
            );
        }
        for plain in ["Edited", "and", "costs", "takes"] {
            assert!(
                !found.iter().any(|(_, t)| t == plain),
                "{plain} taken: {found:?}"
            );
        }
    }

    #[test]
    fn render_is_bounded_and_reads_back() {
        let est = Estimator::new(Provider::OpenAI, "");
        let mut c = Collector::default();
        for i in 0..200 {
            c.scan(
                &format!("file src/mod{i}/part.py booking AB{i:04}X"),
                1.0,
                i as f64 / 200.0,
            );
        }
        let ids = c.ranked();
        let text = render(&ids, &est, 120);
        assert!(est.text(&text) <= 120.0 + 1.0, "{}", est.text(&text));
        let back = parse(&text);
        assert!(!back.is_empty());
        // The newest are ranked first.
        assert!(text.contains("src/mod199/part.py"), "{text}");
        // Carried identifiers come back first on the next round.
        let mut next = Collector::default();
        next.carry(&text);
        next.scan("new thing other/dir/new.rs", 3.0, 1.0);
        let again = render(&next.ranked(), &est, 1_000);
        for (_, t) in &back {
            assert!(again.contains(t.as_str()), "{t} lost in {again}");
        }
        assert!(again.contains("other/dir/new.rs"));
        assert!(!again.contains("\n\n"));
    }

    /// What each scan found, in the order found (the ranking's tie-break), with its evidence.
    fn found_by(scan: fn(&mut Collector, &str, f64, f64), texts: &[&str]) -> Vec<String> {
        found_by_collector(Collector::default(), scan, texts)
    }

    /// `found_by` with collector `c`.
    fn found_by_collector(
        mut c: Collector,
        scan: fn(&mut Collector, &str, f64, f64),
        texts: &[&str],
    ) -> Vec<String> {
        for (i, t) in texts.iter().enumerate() {
            c.serial = i as u64 / 2 + 1;
            scan(&mut c, t, 1.0 + (i % 3) as f64, i as f64 / 10.0);
        }
        c.found
            .iter()
            .map(|f| {
                let i = &f.ident;
                format!(
                    "{:?} {:?} {} {} {:?}",
                    i.kind, i.text, i.weight, i.recency, f.serial
                )
            })
            .collect()
    }

    fn as_first_written(texts: &[&str]) {
        assert_eq!(
            found_by(Collector::scan, texts),
            found_by(reference_scan::scan, texts),
            "{texts:?}"
        );
    }

    #[test]
    fn sed_addresses_and_word_pairs_are_no_paths() {
        // Paths without an extension are known by their directories; `sed` expressions and
        // prose pairs filled a SWE fold's index with `N/A`, `/pass/d`, `s/print`, `try/except`.
        let text = "sed -i '/pass/d' x; sed 's/print/log/' y; N/A, True/False, try/except, \
                    list/queryset, RelatedIn.as_sql/d, but /testbed/django, \
                    django/db/models/sql/, astropy/io/fits and /build/out";
        let paths = of_kind(Kind::Path, text);
        assert_eq!(
            paths,
            [
                "/testbed/django",
                "django/db/models/sql/",
                "astropy/io/fits",
                "/build/out"
            ],
            "{paths:?}"
        );
        as_first_written(&[text]);
    }

    #[test]
    fn a_uuid_of_hex_letters_only_is_a_hash() {
        // No digit, no upper case, no `.`/`/`/`_`: the one mask test that sets plain pieces
        // aside must still let this one through.
        let text = "id deadbeef-cafe-face-bead-abcdefabcdef, not-a-uuid-at-all";
        let found = kinds(text);
        assert_eq!(
            found,
            [(
                Kind::Hash,
                "deadbeef-cafe-face-bead-abcdefabcdef".to_string()
            )]
        );
        as_first_written(&[text]);
    }

    #[test]
    fn a_numbers_unit_is_the_next_token_past_any_other_characters() {
        let text = "took 250 — (ms) then 3 «seconds», 7 ünits, 9\r\n%";
        let found = kinds(text);
        for q in ["250 ms", "3 seconds", "9 %"] {
            assert!(
                found.iter().any(|(k, t)| *k == Kind::Quantity && t == q),
                "{q} missing in {found:?}"
            );
        }
        as_first_written(&[text]);
    }

    #[test]
    fn an_error_quoted_in_a_sentence_and_its_own_line_are_one_entry() {
        let text = "django.db.utils.OperationalError: Cannot add a UNIQUE column\n\
                    The error is `django.db.utils.OperationalError: Cannot add a UNIQUE column`.\n\
                    `django.db.utils.OperationalError: Cannot add a UNIQUE column`\n\
                    E   sqlite3.OperationalError: Cannot add a UNIQUE column";
        let errors = of_kind(Kind::Error, text);
        assert_eq!(
            errors,
            [
                "django.db.utils.OperationalError: Cannot add a UNIQUE column",
                "sqlite3.OperationalError: Cannot add a UNIQUE column",
            ],
        );
        // A line opening with the error is shown as it is.
        assert_eq!(
            of_kind(Kind::Error, "KeyError: 'user_id' (in `load`)"),
            ["KeyError: 'user_id' (in `load`)"]
        );
        as_first_written(&[text]);
    }

    #[test]
    fn an_error_item_is_rendered_as_written_and_read_back_whole() {
        // Errors are listed apart by ` | `: a comma-space of their own stays, so the quote can be
        // matched ("executed, 25" was written "executed,25").
        let est = Estimator::new(Provider::OpenAI, "");
        let mut c = Collector::default();
        c.scan(
            "AssertionError: 22 queries executed, 25 expected\nsee a/b.py, c/d.py",
            1.0,
            1.0,
        );
        let text = render(&c.ranked(), &est, 500);
        assert!(
            text.contains("AssertionError: 22 queries executed, 25 expected"),
            "{text}"
        );
        assert!(parse(&text).contains(&(
            Kind::Error,
            "AssertionError: 22 queries executed, 25 expected".to_string()
        )));
    }

    #[test]
    fn error_lines_are_read_as_the_lines_split() {
        as_first_written(&[
            "x\r\nValueError: bad\r\n  KeyError:  \nFAILED:\t\nlog: FAIL now\nE: ERROR x: y",
            "a: b: c\nTypeError: one: two\n\nfoo.barError: z",
            "OSError: \u{a0}\u{3000}x",
        ]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2_000))]
        /// One collector reads the same pieces again and again, in places that make them
        /// something else (a JSON key or a markup tag for a symbol, a unit after a number or
        /// none, a code named as one or not), across several messages: what it remembers of a
        /// piece (`Said`) gives what reading every piece afresh gives.
        #[test]
        fn pieces_read_again_in_other_places_scan_as_first_written(
            texts in proptest::collection::vec(
                proptest::collection::vec((0usize..12, 0usize..10, "[ \n,;]"), 0..12),
                1..5,
            )
        ) {
            const PIECES: [&str; 12] = [
                "FooBar", "self.x_y", "12", "12ms", "$5", "ABCDEF", "HAT170", "src/app.py",
                "1.5", "Foo.Bar", "max_tokens", "HTTPError",
            ];
            const PLACES: [&str; 10] = [
                "{\"P\": 1}", "<P>", "</P", "P ms", "P kb", "reservation P", "\"id\": \"P\"",
                "P", "x=P,", "(P).",
            ];
            let texts: Vec<String> = texts
                .iter()
                .map(|parts| {
                    parts
                        .iter()
                        .map(|(p, at, sep)| PLACES[*at].replace('P', PIECES[*p]) + sep)
                        .collect()
                })
                .collect();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let fresh = Collector {
                fresh: true,
                ..Default::default()
            };
            proptest::prop_assert_eq!(
                found_by(Collector::scan, &refs),
                found_by_collector(fresh, Collector::scan, &refs)
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn random_identifier_texts_scan_as_first_written(
            parts in proptest::collection::vec(
                (
                    proptest::prop_oneof![
                        "(\\./)?[a-z_.~-]{0,12}(/[a-zA-Z0-9_.]{1,6}){0,3}\\.(py|rs|json|md|x)",
                        "https?://[a-z.]{1,10}(/[a-z0-9]{1,5}){0,3}[).:]?",
                        "[0-9a-fA-F]{5,40}",
                        "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
                        "[a-f]{8}-[a-f]{4}-[a-f]{4}-[a-f]{4}-[a-f]{12}",
                        "\\$?[0-9]{1,4}([.,][0-9]{1,3}){0,2}",
                        "[0-9.]{1,4}(ms|s|MB|%|px|kb|Hours|x)",
                        "#[0-9]{1,8}",
                        "[A-Z][a-z]{1,5}[A-Z][a-zA-Z0-9]{0,6}(\\(\\))?",
                        "_?[a-z]{1,5}_[a-z0-9_]{1,8}",
                        "[A-Z]{2,5}_[A-Z0-9_]{1,6}",
                        "[A-Z0-9_-]{3,10}",
                        "[a-z]{1,6}(\\.[a-z_]{1,6}){1,3}",
                        "([A-Za-z]{0,6}\\.)?([A-Z][a-z]{1,6}Error|Exception|FAIL|FAILED|Error): ?(FAIL|ERROR|msg)?",
                        "[a-zA-Z]{1,8}",
                        "[.,:=?&+;#$%@~/()\\-]{1,3}",
                        "[\\p{L}\\p{N}]{1,3}",
                        "[éß日本٣\\u{a0}\\u{3000}—]{1,2}",
                    ],
                    "[ \n\t,=:]|\r\n|: |",
                ),
                0..40,
            )
        ) {
            let text: String = parts.iter().flat_map(|(p, s)| [p.as_str(), s.as_str()]).collect();
            let (a, b) = text.split_at(text.char_indices().nth(text.chars().count() / 2).map_or(0, |(i, _)| i));
            proptest::prop_assert_eq!(
                found_by(Collector::scan, &[&text, a, b]),
                found_by(reference_scan::scan, &[&text, a, b])
            );
        }
    }

    proptest::proptest! {
        // A dotted name of lower-case letters is about one soup in two hundred.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4_000))]
        #[test]
        fn random_character_soup_scans_as_first_written(
            text in "([a-z]{1,6}|[A-F0-9]{1,3}|[G-Z]|[ ._/:,=#$%@+~?&;()\\n\\r\\t\\-é日—\\u{a0}]){0,120}"
        ) {
            proptest::prop_assert_eq!(
                found_by(Collector::scan, &[&text]),
                found_by(reference_scan::scan, &[&text])
            );
        }
    }

    #[test]
    fn an_edge_of_a_one_line_output_splits_no_identifier() {
        // A JSON reply on one line, longer than both edges: wherever the edge falls, only whole
        // flight numbers are indexed.
        for pad in 0..32 {
            let flights: Vec<String> = (0..200)
                .map(|k| format!("{{\"flight_number\": \"HAT{}\"}}", 170 + k))
                .collect();
            let text = format!("{}[{}]", " ".repeat(pad), flights.join(", "));
            assert!(!text.contains('\n') && text.len() > 2 * OUTPUT_EDGE_BYTES);
            let mut c = Collector::default();
            scan_edges(&mut c, &text, 1.0, 1.0);
            let ids: Vec<String> = c
                .ranked()
                .into_iter()
                .filter(|i| i.text.starts_with("HAT") || i.text.starts_with("AT"))
                .map(|i| i.text)
                .collect();
            assert!(!ids.is_empty());
            for id in &ids {
                let n: usize = id.trim_start_matches("HAT").parse().unwrap_or(0);
                assert!(
                    id.starts_with("HAT") && (170..370).contains(&n),
                    "{pad}: {id}"
                );
            }
        }
    }

    #[test]
    fn a_span_scanned_from_both_ends_and_merged_ranks_as_one_scan_in_order() {
        // Identifiers repeated within a message, across messages, said by different roles,
        // and carried from a previous index.
        let texts: Vec<(&str, String)> = (0..60)
            .map(|k| {
                let role = ["user", "assistant", "tool"][k % 3];
                let text = format!(
                    "Edit src/mod_{}/file_{}.py for issue #{} (ValueError: bad id {}); \
                     see https://example.com/run/{} and src/mod_{}/file_{}.py, build {}MB. \
                     Class Handler{} calls parse_config_{}",
                    k % 7,
                    k % 5,
                    100 + k % 11,
                    k % 4,
                    k % 9,
                    k % 7,
                    k % 5,
                    k * 3 % 17,
                    k % 6,
                    k % 8
                );
                (role, text)
            })
            .collect();
        let mut texts = texts;
        // Two paths of equal score (same speaker, same messages last) rank by where each was
        // first found, which the newest message that names both says the other way round.
        texts[3].1.push_str(" Also alpha/one.rs.");
        texts[6].1.push_str(" Also beta/two.rs.");
        texts[51].1.push_str(" Then beta/two.rs and alpha/one.rs.");
        let msgs: Vec<Message<'_>> = texts.iter().map(|(r, t)| Message::text(r, t)).collect();
        let previous = "## Identifier index\n- paths: src/mod_3/file_3.py, carried/only.rs";
        let n = msgs.len() as f64;
        let mut one = Collector::default();
        one.carry(previous);
        for (k, m) in msgs.iter().enumerate() {
            scan_message(&mut one, m, (k + 1) as f64 / n);
        }
        let want = one.ranked();
        for split in [0, 1, 17, 30, 59, 60] {
            for chunk in [1, 3, 8] {
                let mut front = Collector::default();
                front.carry(previous);
                for (k, m) in msgs.iter().enumerate().take(split) {
                    scan_message(&mut front, m, (k + 1) as f64 / n);
                }
                // The rest a chunk at a time from the end back, each chunk in order.
                let mut back = Collector::out_of_order();
                let mut end = msgs.len();
                while end > split {
                    let start = end.saturating_sub(chunk).max(split);
                    for (k, m) in msgs.iter().enumerate().take(end).skip(start) {
                        scan_message_at(&mut back, k, m, (k + 1) as f64 / n);
                    }
                    end = start;
                }
                front.merge(back);
                assert_eq!(front.ranked(), want, "split {split}, chunk {chunk}");
            }
        }
    }

    #[test]
    fn a_newline_never_reaches_an_item() {
        let mut c = Collector::default();
        c.scan(
            "ValueError: first line\nsecond line\n## Install\n",
            1.0,
            1.0,
        );
        let est = Estimator::new(Provider::OpenAI, "");
        let text = render(&c.ranked(), &est, 500);
        assert!(text.lines().all(|l| !l.starts_with("## Install")), "{text}");
        assert!(text.contains("ValueError: first line"));
    }
}
