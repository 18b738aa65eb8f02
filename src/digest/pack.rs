//! Packing a digest's units into its room: every unit starts in its richest form; while the
//! digest is over its room the oldest units of the cheapest kind are shortened, then dropped,
//! and the room a shortening freed beyond need is given back to the newest units. The units'
//! forms are read, never copied: a packing is a small state per unit (form, alive, tokens).

use super::{Entry, Section, CARRIED_INDEX_SHARE, INDEX_SHARE, SECTIONS};
use crate::estimate::Estimator;
use crate::identifier_index::{self, Ident};

/// Which form of a unit a packing uses, whether the unit is kept, and its tokens.
#[derive(Debug, Clone, Copy)]
struct Slot {
    level: usize,
    alive: bool,
    tokens: f64,
}

/// Each phase: which section, keep the newest `keep`, shorten (to the next form) or drop.
/// Rules are never dropped (they render first: only the last-resort cut could reach them);
/// requests only when even their shortest forms do not fit.
const PHASES: [(Section, usize, bool); 24] = [
    (Section::Calls, 0, true),
    (Section::Conclusions, 0, true),
    (Section::Calls, 0, true),
    (Section::Earlier, 0, true),
    (Section::Conclusions, 0, true),
    (Section::Calls, 0, true),
    (Section::LastState, 0, true),
    (Section::Conclusions, 0, true),
    (Section::Calls, 8, false),
    (Section::Conclusions, 6, false),
    (Section::Calls, 4, false),
    (Section::Earlier, 0, true),
    (Section::Conclusions, 3, false),
    (Section::Errors, 0, true),
    (Section::Requests, 0, true),
    (Section::Errors, 0, true),
    (Section::Errors, 3, false),
    (Section::Requests, 0, true),
    (Section::Open, 1, false),
    (Section::Earlier, 0, false),
    (Section::Requests, 0, true),
    // Last resorts when even the shortest requests do not fit: the oldest go first.
    (Section::Conclusions, 0, false),
    (Section::Calls, 0, false),
    (Section::Requests, 3, false),
];

/// Requests dropped as a last resort keep the first ones of the span (the goal) too.
const FIRST_REQUESTS_KEPT: usize = 2;

/// What every packing of one set of units shares: the units, their prices, and which rules a
/// request may cover (a rule said inside a request kept whole is not written twice).
struct Units<'e> {
    entries: &'e [Entry],
    fixed: f64,
    /// Per unit: the request whose richest form holds it (rules only).
    cover: Vec<Option<usize>>,
    /// Per request: the rules said in it, in order.
    said: Vec<Vec<usize>>,
}

impl<'e> Units<'e> {
    fn new(entries: &'e [Entry], fixed: f64) -> Self {
        let cover: Vec<Option<usize>> = entries
            .iter()
            .map(|r| {
                r.from.filter(|&q| {
                    r.section == Section::Rules && entries[q].forms[0].contains(&*r.forms[0])
                })
            })
            .collect();
        let mut said = vec![Vec::new(); entries.len()];
        for (r, e) in entries.iter().enumerate() {
            if let Some(q) = e.from {
                said[q].push(r);
            }
        }
        Units {
            entries,
            fixed,
            cover,
            said,
        }
    }
}

/// One packing in progress.
struct Packing<'u, 'e> {
    units: &'u Units<'e>,
    slots: Vec<Slot>,
    cover: Vec<Option<usize>>,
    total: f64,
}

impl<'u, 'e> Packing<'u, 'e> {
    fn new(units: &'u Units<'e>) -> Self {
        let slots: Vec<Slot> = units
            .entries
            .iter()
            .map(|e| Slot {
                level: 0,
                alive: true,
                tokens: e.costs[0],
            })
            .collect();
        let cover = units.cover.clone();
        let total = units.fixed
            + slots
                .iter()
                .zip(&cover)
                .filter(|(_, c)| c.is_none())
                .map(|(s, _)| s.tokens)
                .sum::<f64>();
        Packing {
            units,
            slots,
            cover,
            total,
        }
    }

    fn text(&self, i: usize) -> &'e str {
        &self.units.entries[i].forms[self.slots[i].level]
    }

    /// Shorten, then drop, units phase by phase until the total fits `room` (focus units
    /// only in the second pass).
    fn shrink(&mut self, room: f64) {
        let entries = self.units.entries;
        for focus_pass in [false, true] {
            for &(sec, keep, shorten) in &PHASES {
                if self.total <= room {
                    return;
                }
                let idx: Vec<usize> = (0..entries.len())
                    .filter(|&i| {
                        self.slots[i].alive
                            && entries[i].section == sec
                            && (focus_pass || !entries[i].focus)
                    })
                    .collect();
                let n = idx.len();
                for (k, &i) in idx.iter().enumerate() {
                    if self.total <= room {
                        break;
                    }
                    if shorten {
                        let s = &mut self.slots[i];
                        if s.level + 1 < entries[i].forms.len() {
                            s.level += 1;
                            let t = entries[i].costs[s.level];
                            self.total += t - s.tokens;
                            s.tokens = t;
                        }
                    } else if k + keep < n
                        && !(sec == Section::Requests
                            && k < FIRST_REQUESTS_KEPT
                            && n > keep + FIRST_REQUESTS_KEPT)
                    {
                        self.slots[i].alive = false;
                        self.total -= self.slots[i].tokens;
                    } else {
                        continue;
                    }
                    if entries[i].section == Section::Requests {
                        self.uncover(i);
                    }
                }
            }
        }
    }

    /// A request `i` was shortened or dropped: the rules it no longer holds are priced again.
    fn uncover(&mut self, i: usize) {
        for &r in &self.units.said[i] {
            if self.cover[r] == Some(i)
                && (!self.slots[i].alive || !self.text(i).contains(self.text(r)))
            {
                self.cover[r] = None;
                self.total += self.slots[r].tokens;
            }
        }
    }

    /// A shortening can free more than needed (one long output): give the room left back to
    /// the newest units, a form at a time, and bring back dropped ones that fit again.
    fn give_back(&mut self, room: f64) {
        let entries = self.units.entries;
        for i in (0..entries.len()).rev() {
            if entries[i].section == Section::Requests {
                continue;
            }
            let costs = &entries[i].costs;
            let s = &mut self.slots[i];
            if !s.alive && self.cover[i].is_none() {
                s.level = entries[i].forms.len() - 1;
                let t = costs[s.level];
                if self.total + t > room {
                    continue;
                }
                s.alive = true;
                s.tokens = t;
                self.total += t;
            }
            while s.alive && s.level > 0 {
                let t = costs[s.level - 1];
                if self.total + t - s.tokens > room {
                    break;
                }
                self.total += t - s.tokens;
                s.level -= 1;
                s.tokens = t;
            }
        }
    }

    /// The digest text: the header, the sections' kept units, the index.
    fn render(mut self, header: &str, index: &str) -> String {
        for (s, c) in self.slots.iter_mut().zip(&self.cover) {
            if c.is_some() {
                s.alive = false;
            }
        }
        let entries = self.units.entries;
        let mut out = String::from(header);
        for (sec, title) in SECTIONS {
            let items: Vec<usize> = (0..entries.len())
                .filter(|&i| self.slots[i].alive && entries[i].section == sec)
                .collect();
            if items.is_empty() {
                continue;
            }
            out.push_str("\n## ");
            out.push_str(title);
            out.push('\n');
            for i in items {
                if !matches!(sec, Section::LastState | Section::Earlier) {
                    out.push_str("- ");
                }
                out.push_str(self.text(i));
                out.push('\n');
            }
        }
        if !index.is_empty() {
            out.push('\n');
            out.push_str(index);
            out.push('\n');
        }
        out
    }
}

/// One packing of the units into `room` tokens (see `fit`); the index takes what is left of
/// `limit`.
fn pack(
    units: &Units<'_>,
    header: &str,
    idents: &[Ident],
    est: &Estimator,
    room: f64,
    limit: f64,
) -> String {
    let mut p = Packing::new(units);
    p.shrink(room);
    p.give_back(room);
    // The index gets its share and what the rest left.
    let index_room = (limit - p.total).max(0.0);
    let index = identifier_index::render(idents, est, index_room as u64);
    p.render(header, &index)
}

/// The room the units get: the budget less what the identifier index is sure to keep (its
/// share, or the carried identifiers' cost up to half the room).
fn units_room(idents: &[Ident], est: &Estimator, max_tokens: u64) -> f64 {
    let budget = max_tokens as f64;
    let natural_index = est.text(&identifier_index::render(idents, est, max_tokens)) + 2.0;
    // Identifiers carried from the previous summary keep their room (up to half of it): a
    // second compaction keeps what the first one indexed.
    let carried: Vec<Ident> = idents.iter().filter(|i| i.carried).cloned().collect();
    let carried_cost = if carried.is_empty() {
        0.0
    } else {
        est.text(&identifier_index::render(&carried, est, max_tokens)) + 2.0
    };
    let share = INDEX_SHARE.max((carried_cost / budget.max(1.0)).min(CARRIED_INDEX_SHARE));
    let reserved = natural_index.min(budget * share);
    budget - reserved
}

/// Shorten, then drop, the least informative units until the digest fits `max_tokens`; the
/// identifier index takes at least its share and whatever room the rest leaves.
pub(super) fn fit(
    mut entries: Vec<Entry>,
    header: &str,
    idents: Vec<Ident>,
    est: &Estimator,
    max_tokens: u64,
) -> String {
    // Per line: its text plus ~1 token of list syntax.
    for e in &mut entries {
        e.costs = e.forms.iter().map(|f| est.text(f) + 1.0).collect();
    }
    let fixed = est.text(header) + 3.0 * SECTIONS.len() as f64;
    let units = Units::new(&entries, fixed);
    let budget = max_tokens as f64;
    let room = units_room(&idents, est, max_tokens);
    let limit = budget;
    let mut out = String::new();
    let mut best: Option<(f64, String)> = None;
    // Line-by-line prices differ a little from the rendered whole: pack again into a room
    // moved by the difference, over or under, and keep the fullest packing that fits (the last
    // resort cuts characters).
    // The shift of room and limit: moved by the gap until the fit is bracketed, then bisected.
    let (mut shift, mut fits, mut over): (f64, Option<f64>, Option<f64>) = (0.0, None, None);
    for _ in 0..8 {
        out = pack(&units, header, &idents, est, room + shift, limit + shift);
        let used = est.text(&out);
        if used <= budget && best.as_ref().is_none_or(|(b, _)| used > *b) {
            best = Some((used, out.clone()));
        }
        let gap = budget - used;
        if (0.0..=budget * 0.02 + 2.0).contains(&gap) {
            break;
        }
        if gap < 0.0 {
            over = Some(shift);
        } else {
            fits = Some(shift);
        }
        shift = match (fits, over) {
            (Some(a), Some(b)) => (a + b) / 2.0,
            _ => shift + gap - if gap < 0.0 { 4.0 } else { 1.0 },
        };
    }
    match best {
        Some((_, b)) => b,
        None => cut_to_budget(out, est, budget),
    }
}

/// Last resort: cut by characters (about 3 characters per token), on a line boundary; the
/// index and the oldest details are at the end.
fn cut_to_budget(mut out: String, est: &Estimator, budget: f64) -> String {
    if est.text(&out) <= budget {
        return out;
    }
    let mut max_chars = (budget * 3.0) as usize;
    while max_chars > 0 && est.text(&out) > budget {
        let mut cut = out
            .char_indices()
            .nth(max_chars)
            .map(|(i, _)| i)
            .unwrap_or(out.len());
        if let Some(nl) = out[..cut].rfind('\n') {
            cut = nl;
        }
        out.truncate(cut);
        max_chars = max_chars * 9 / 10;
    }
    out
}
