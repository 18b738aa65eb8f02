//! Packing a digest's units into its room: every unit starts in its richest form; while the
//! digest is over its room the oldest units of the cheapest kind are shortened, then dropped,
//! and the room a shortening freed beyond need is given back to the newest units.
//!
//! The steps that are sure to run whole are not walked one unit at a time: each step's state
//! is known without prices (which units it shortens or drops), and the total of a state is
//! never below what its units cost in it (a shorter form never costs more, `Entry::cost`; only
//! a rule a shortened request no longer holds adds tokens, and rules are counted as they stand
//! at the start). So the packing starts from the last state whose lower bound is still over
//! the room, and prices only the forms it reads from there: on a span of thousands of calls,
//! the richest forms are never built.

use std::cell::RefCell;

use rustc_hash::FxHashMap;

use super::units::{self, Entry};
use super::{
    Section, CARRIED_INDEX_SHARE, INDEX_SHARE, LARGE_ROOM_INDEX_SHARE, SECTIONS, SMALL_ROOM_TOKENS,
};
use crate::estimate::Estimator;
use crate::identifier_index::{self, Ident, Shown};

/// Which form of a unit a packing uses (the shortening steps it took: `units::Entry`), and
/// whether the unit is kept.
#[derive(Debug, Clone, Copy)]
struct Slot {
    level: u8,
    alive: bool,
}

/// Each phase: which section, keep the newest `keep`, shorten (to the next form) or drop.
/// Rules are never dropped (they render first: only the last-resort cut could reach them);
/// requests only when their forms after three steps (240 characters) do not fit once every
/// call and conclusion, every error but the newest and the last state are gone (the second
/// round of phases, which reaches focus units too,
/// may shorten the rest further). Taking every request to its shortest form first kept 2 more
/// of the probe set's 149 folded requests and lost 1.5 points of its facts
/// (docs/guides/compaction.md). An error's detail (its arguments) is shortened to its shortest
/// form before any request is: the error's message stays in every form.
///
/// The first three steps take the units that have an extra fullest form (`Entry::rich_top`: a
/// call's result past 6,000 characters, the newest thought past 900) to their usual fullest,
/// and no other unit (`RICH_ONLY`): every later step finds every unit where it would without
/// those forms, so they are read only where the room holds them. The next two take calls and
/// conclusions from their fullest form to their middle one (`forms::MIDDLE_RESULT_CHARS`), so
/// every later step finds them where it would without that form; likewise the first step on
/// errors.
const PHASES: [(Section, usize, bool); 38] = [
    (Section::Calls, RICH_ONLY, true),
    (Section::Errors, RICH_ONLY, true),
    (Section::LastState, RICH_ONLY, true),
    (Section::Calls, 0, true),
    (Section::Conclusions, 0, true),
    (Section::Calls, 0, true),
    (Section::Conclusions, 0, true),
    (Section::Calls, 0, true),
    (Section::Earlier, 0, true),
    (Section::Conclusions, 0, true),
    (Section::Calls, 0, true),
    (Section::LastState, 0, true),
    (Section::Conclusions, 0, true),
    (Section::Calls, IDLE | 2, false),
    (Section::Conclusions, IDLE | 2, false),
    (Section::Requests, IDLE, false),
    (Section::Calls, 8, false),
    (Section::Conclusions, 6, false),
    (Section::Calls, 0, true),
    (Section::Calls, 4, false),
    (Section::Earlier, 0, true),
    (Section::Conclusions, 3, false),
    (Section::Errors, 0, true),
    (Section::Errors, 0, true),
    (Section::Errors, 0, true),
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
    // Then every error but the newest, and the last state, before the oldest requests: a tight
    // room kept a 70-token error line and the last state where it dropped four of nine
    // requests (tau-bench dialogue 0 at the naive budget). On the held-out probe sets at the
    // naive budget, facts 518 -> 521 of 608 (0.5x: 114 -> 113; 1.5x unchanged); successive
    // compactions of every tau-bench dialogue, median last / first 1.24x -> 1.22x.
    (Section::Errors, 1, false),
    (Section::LastState, 0, false),
    (Section::Requests, 3, false),
];

/// A shortening step's `keep` that reaches only the units at their extra fullest form.
const RICH_ONLY: usize = usize::MAX;

/// A dropping step's `keep` with this bit drops only the idle units (`units::Entry::idle`)
/// among all but the newest `keep & !IDLE`. On calls, the commands that print a file's lines,
/// and the calls of a tool that only reads a file (`read_call::reads_file`: over the held-out
/// SWE runs as `Read` and `Bash` calls, facts at 0.75x / 1x / 1.5x the naive budget 167 / 216 /
/// 230 -> 170 / 216 / 232 of 254): a file printed can be printed again, a script's or a test
/// run's output cannot. Run before
/// the calls are cut to the newest eight: on the held-out probe sets
/// (`tests/data/probes/heldout*.refs.json`) the newest eight of a SWE run's folded calls were
/// mostly `cat` and `sed -n` of the file being edited, and what the reproduction script
/// printed was gone. On conclusions, it drops the
/// thoughts that name nothing ("Let's see the implementation.") or only say what comes next
/// ("I will read `x.py` to see ...", `digest::idle::only_intends`; the four sets' facts at
/// 0.75x / 1x / 1.5x the naive budget: 1,697 -> 1,701): a SWE fold kept six such
/// lines among its sixteen conclusions, beside eight of its 29 calls (facts at the naive
/// budget over the four probe sets: 611 -> 617, with the give-back order of
/// `Packing::give_back`).
const IDLE: usize = 1 << 40;

/// Whether shortening step (`keep`) reaches unit `i` at `slot`.
fn reaches(entries: &[Entry<'_>], slot: Slot, i: usize, keep: usize) -> bool {
    keep != RICH_ONLY || entries[i].at_rich_top(usize::from(slot.level))
}

/// Requests dropped as a last resort keep the first ones of the span (the goal) too.
const FIRST_REQUESTS_KEPT: usize = 2;

/// Every step of a packing: each phase without the focus units, then each with them.
fn step(t: usize) -> (bool, (Section, usize, bool)) {
    (t >= PHASES.len(), PHASES[t % PHASES.len()])
}

const STEPS: usize = 2 * PHASES.len();

/// What every packing of one set of units shares: the units, their prices, which rules a
/// request may cover (a rule said inside a request kept whole is not written twice), and the
/// state after each step run whole.
struct Units<'e, 'a> {
    entries: &'e [Entry<'a>],
    est: &'e Estimator,
    fixed: f64,
    /// Per request: the rules said in it, in order.
    said: Vec<Vec<usize>>,
    /// States, one after the other (`state`): [0] the start, [t + 1] after steps 0..=t run
    /// whole. (One array each: a vector per state cost an allocation and a copy per step.)
    slots: Vec<Slot>,
    covers: Vec<Option<usize>>,
    /// Lower bound of each state's total (filled when asked).
    bounds: Vec<Option<f64>>,
}

impl<'e, 'a> Units<'e, 'a> {
    fn new(entries: &'e [Entry<'a>], est: &'e Estimator, fixed: f64) -> Self {
        let cover: Vec<Option<usize>> = entries
            .iter()
            .map(|r| {
                r.from.filter(|&q| {
                    r.section == Section::Rules && entries[q].richest().contains(r.richest())
                })
            })
            .collect();
        let mut said = vec![Vec::new(); entries.len()];
        for (r, e) in entries.iter().enumerate() {
            if let Some(q) = e.from {
                said[q].push(r);
            }
        }
        let start = vec![
            Slot {
                level: 0,
                alive: true
            };
            entries.len()
        ];
        let n = entries.len();
        let mut slots = Vec::with_capacity(n * (STEPS + 1));
        slots.extend_from_slice(&start);
        let mut covers = Vec::with_capacity(n * (STEPS + 1));
        covers.extend_from_slice(&cover);
        let mut u = Units {
            entries,
            est,
            fixed,
            said,
            slots,
            covers,
            bounds: vec![None; STEPS + 1],
        };
        let mut idx = Vec::new();
        for t in 0..STEPS {
            u.slots.extend_from_within(t * n..(t + 1) * n);
            u.covers.extend_from_within(t * n..(t + 1) * n);
            run_whole(
                entries,
                &u.said,
                t,
                &mut u.slots[(t + 1) * n..],
                &mut u.covers[(t + 1) * n..],
                &mut idx,
            );
        }
        u
    }

    /// State `s`: each unit's slot, and the request that covers each rule.
    fn state(&self, s: usize) -> (&[Slot], &[Option<usize>]) {
        let n = self.entries.len();
        (
            &self.slots[s * n..(s + 1) * n],
            &self.covers[s * n..(s + 1) * n],
        )
    }

    /// The lower bound of state `s`'s total, and of every state before it that a packing
    /// passes on its way (see the module's note).
    fn bound(&mut self, s: usize) -> f64 {
        if let Some(b) = self.bounds[s] {
            return b;
        }
        let (slots, _) = self.state(s);
        let (_, start_cover) = self.state(0);
        let entries = self.entries;
        // The forms the sum reads, priced first (over threads when many are new).
        units::price_many(
            entries,
            |i| {
                let counted = if entries[i].section == Section::Rules {
                    start_cover[i].is_none()
                } else {
                    slots[i].alive
                };
                counted.then_some(usize::from(slots[i].level))
            },
            self.est,
        );
        let b = self.fixed
            + self
                .entries
                .iter()
                .zip(slots)
                .zip(start_cover)
                .filter(|((e, sl), c)| {
                    if e.section == Section::Rules {
                        c.is_none()
                    } else {
                        sl.alive
                    }
                })
                .map(|((e, sl), _)| e.cost(usize::from(sl.level), self.est))
                .sum::<f64>();
        self.bounds[s] = Some(b);
        b
    }

    /// The last state whose total is sure to be over `room` (0 when none is). Bounds fall
    /// from state to state; they are read from the last state back, so the forms priced are
    /// those of states the packing reaches anyway (never every unit's richest form, unless
    /// the packing starts there).
    fn start_for(&mut self, room: f64) -> usize {
        (1..=STEPS)
            .rev()
            .find(|&s| self.bound(s) > room)
            .unwrap_or(0)
    }
}

/// Step `t` run over every unit it reaches, as when the total stays over the room (`said`: per
/// request, the rules said in it; `idx`: room for the units it reaches).
fn run_whole(
    entries: &[Entry<'_>],
    said: &[Vec<usize>],
    t: usize,
    slots: &mut [Slot],
    cover: &mut [Option<usize>],
    idx: &mut Vec<usize>,
) {
    let (focus_pass, (sec, keep, shorten)) = step(t);
    eligible_into(entries, slots, sec, focus_pass, idx);
    let n = idx.len();
    for (k, &i) in idx.iter().enumerate() {
        if shorten {
            if !reaches(entries, slots[i], i, keep) {
                continue;
            }
            if usize::from(slots[i].level) < entries[i].steps() {
                slots[i].level += 1;
            }
        } else if droppable(sec, k, keep, n, &entries[i]) {
            slots[i].alive = false;
        } else {
            continue;
        }
        if sec == Section::Requests {
            for &r in &said[i] {
                if cover[r] == Some(i) && !holds(entries, slots, i, r) {
                    cover[r] = None;
                }
            }
        }
    }
}

/// The live units of section `sec` a step reaches, oldest first, into `idx`.
fn eligible_into(
    entries: &[Entry<'_>],
    slots: &[Slot],
    sec: Section,
    focus_pass: bool,
    idx: &mut Vec<usize>,
) {
    idx.clear();
    idx.extend((0..entries.len()).filter(|&i| {
        slots[i].alive && entries[i].section == sec && (focus_pass || !entries[i].focus)
    }));
}

/// Whether a dropping step that keeps the newest `keep` of `n` drops the `k`th (`idle`: see
/// `IDLE`). A call that changed something (`Entry::changes`) is dropped only by the last
/// resort (`keep` 0).
fn droppable(sec: Section, k: usize, keep: usize, n: usize, e: &Entry<'_>) -> bool {
    if keep & IDLE != 0 {
        return e.idle && k + (keep & !IDLE) < n;
    }
    k + keep < n
        && !(e.changes && keep > 0)
        && !(sec == Section::Requests && k < FIRST_REQUESTS_KEPT && n > keep + FIRST_REQUESTS_KEPT)
}

/// Whether request `i`, as it stands, still holds rule `r`'s text.
fn holds(entries: &[Entry<'_>], slots: &[Slot], i: usize, r: usize) -> bool {
    slots[i].alive
        && entries[i]
            .form(usize::from(slots[i].level))
            .contains(entries[r].richest())
}

/// One packing in progress.
struct Packing<'u, 'e, 'a> {
    units: &'u Units<'e, 'a>,
    slots: Vec<Slot>,
    cover: Vec<Option<usize>>,
    total: f64,
    /// One unit written in a form sized to the room left (`fill`): its index and text.
    sized: Option<(usize, String)>,
}

impl<'u, 'e, 'a> Packing<'u, 'e, 'a> {
    /// The packing at state `s` (see `Units::start_for`), priced exactly.
    fn at(units: &'u Units<'e, 'a>, s: usize) -> Self {
        let (slots, cover) = units.state(s);
        let (slots, cover) = (slots.to_vec(), cover.to_vec());
        let mut p = Packing {
            units,
            slots,
            cover,
            total: 0.0,
            sized: None,
        };
        p.total = units.fixed
            + (0..units.entries.len())
                .filter(|&i| p.slots[i].alive && p.cover[i].is_none())
                .map(|i| p.tokens(i))
                .sum::<f64>();
        p
    }

    fn tokens(&self, i: usize) -> f64 {
        self.units.entries[i].cost(usize::from(self.slots[i].level), self.units.est)
    }

    fn text(&self, i: usize) -> &str {
        self.units.entries[i].form(usize::from(self.slots[i].level))
    }

    /// Run steps `from..` one unit at a time until the total fits `room`.
    fn shrink(&mut self, from: usize, room: f64) {
        let entries = self.units.entries;
        for t in from..STEPS {
            let (focus_pass, (sec, keep, shorten)) = step(t);
            if self.total <= room {
                return;
            }
            let mut idx = Vec::new();
            eligible_into(entries, &self.slots, sec, focus_pass, &mut idx);
            let n = idx.len();
            let mut order: Vec<(usize, usize)> = idx.iter().copied().enumerate().collect();
            if !shorten && matches!(sec, Section::Calls | Section::Conclusions) {
                // Among the droppable (all but the newest `keep`), the costliest go first: a
                // short line (`calculate(2499 - 1327) -> 1172.0`) holds as much as a long one
                // for a fraction of the room. Ties: the oldest first. (A step run whole drops
                // them all: the order matters only here.)
                let tokens: Vec<f64> = idx.iter().map(|&i| self.tokens(i)).collect();
                let keep = keep & !IDLE;
                order.sort_by(|&(ka, _), &(kb, _)| {
                    (ka + keep >= n)
                        .cmp(&(kb + keep >= n))
                        .then(tokens[kb].total_cmp(&tokens[ka]))
                        .then(ka.cmp(&kb))
                });
            }
            for (k, i) in order {
                if self.total <= room {
                    break;
                }
                if shorten {
                    if !reaches(entries, self.slots[i], i, keep) {
                        continue;
                    }
                    // (A step past the unit's last distinct form changes nothing: its tokens
                    // stay, and a request's rules hold as they did.)
                    if usize::from(self.slots[i].level) < entries[i].steps() {
                        let before = self.tokens(i);
                        self.slots[i].level += 1;
                        self.total += self.tokens(i) - before;
                    }
                } else if droppable(sec, k, keep, n, &entries[i]) {
                    self.slots[i].alive = false;
                    self.total -= self.tokens(i);
                } else {
                    continue;
                }
                if sec == Section::Requests {
                    self.uncover(i);
                }
            }
        }
    }

    /// A request `i` was shortened or dropped: the rules it no longer holds are priced again.
    fn uncover(&mut self, i: usize) {
        for &r in &self.units.said[i] {
            if self.cover[r] == Some(i) && !holds(self.units.entries, &self.slots, i, r) {
                self.cover[r] = None;
                self.total += self.tokens(r);
            }
        }
    }

    /// Request `i` grew: the rules it holds again are written inside it only (their own lines'
    /// tokens freed). Without this, a request shortened, then given its whole form back, was
    /// written beside its rule's own line: one airline summary in 25 said a rule twice.
    fn recover(&mut self, i: usize) {
        for &r in &self.units.said[i] {
            if self.cover[r].is_none() && holds(self.units.entries, &self.slots, i, r) {
                self.cover[r] = Some(i);
                self.total -= self.tokens(r);
            }
        }
    }

    /// A shortening can free more than needed (one long output): give the room left back, a
    /// form at a time, and bring back dropped units that fit again. The user's requests
    /// first, one form at a time across all of them (a clipped request loses its middle clause,
    /// where the conditions sit: more requests a form longer beat one request whole), the
    /// oldest first: the summary is the only home of the requests that set the task, while the
    /// newest folded ones sit next to the verbatim tail that answers them ("Yes, go ahead").
    /// Then the other units, newest first.
    fn give_back(&mut self, room: f64) {
        let entries = self.units.entries;
        let requests: Vec<usize> = (0..entries.len())
            .filter(|&i| entries[i].section == Section::Requests)
            .collect();
        // The requests that ask nothing (`Entry::idle`: courtesies) last of all, below.
        self.give_back_requests(&requests, room, false);
        // Every unit up to its usual fullest form first, then the extra fullest forms (a call's
        // result past 6,000 characters, a thought past 900): one long output grown first would
        // take the room older units need (a reproduction's `Parsed: 1970, Expected: 2070`
        // was lost to the newest output's 24,000 characters).
        // The idle units (`Entry::idle`: a command that only prints a file, a thought that names
        // nothing) after the others: a thought such as "Let's see the implementation." fits in
        // the crumbs the others leave, and came back before an older call's output.
        for idle in [false, true] {
            for i in (0..entries.len()).rev() {
                if entries[i].section != Section::Requests && entries[i].idle == idle {
                    self.grow_to(i, room, false, false);
                }
            }
        }
        // (Short, a courtesy came back in crumbs before an older request that asks, and before
        // the last state grew.)
        self.give_back_requests(&requests, room, true);
        // The extra fullest forms only once every unit stands whole at its usual fullest: a
        // room that had to drop or shorten anything has no room for them.
        if (0..entries.len()).all(|i| self.at_usual_fullest(i)) {
            for i in (0..entries.len()).rev() {
                if entries[i].section != Section::Requests {
                    self.grow_to(i, room, false, true);
                }
            }
        }
    }

    /// `give_back` to the requests that ask nothing (`idle`) or to the others: one form at a
    /// time across all of them, until none grows.
    fn give_back_requests(&mut self, requests: &[usize], room: f64, idle: bool) {
        let mut grew = true;
        while grew {
            grew = false;
            for &i in requests {
                if self.units.entries[i].idle == idle && self.grow(i, room, true) {
                    self.recover(i);
                    grew = true;
                }
            }
        }
    }

    /// Whether unit `i` is kept at its richest form but an extra fullest one (`rich_top`).
    fn at_usual_fullest(&self, i: usize) -> bool {
        let e = &self.units.entries[i];
        let level = usize::from(self.slots[i].level);
        self.slots[i].alive && (level == 0 || (level == 1 && e.at_rich_top(0)))
    }

    /// Give unit `i` what fits of the room left: bring it back when dropped (and no kept
    /// request covers it) in its shortest form, then longer forms, one (`one_form`) or as many
    /// as fit. Whether it grew. A form never costs less than a shorter one: over the room,
    /// nothing is tried (nor built).
    fn grow(&mut self, i: usize, room: f64, one_form: bool) -> bool {
        self.grow_to(i, room, one_form, true)
    }

    /// `grow`, up to the unit's extra fullest form only when `top` (`Entry::rich_top`).
    fn grow_to(&mut self, i: usize, room: f64, one_form: bool, top: bool) -> bool {
        let e = &self.units.entries[i];
        if self.total > room {
            return false;
        }
        if !self.slots[i].alive {
            if self.cover[i].is_some() {
                return false;
            }
            let shortest = e.steps();
            let t = e.cost(shortest, self.units.est);
            if self.total + t > room {
                return false;
            }
            self.slots[i].alive = true;
            self.slots[i].level = shortest as u8;
            self.total += t;
            if one_form {
                return true;
            }
        }
        // Growing reads the distinct forms: the steps past the last one are dropped first.
        self.slots[i].level = e.level_at(usize::from(self.slots[i].level)) as u8;
        let mut grew = false;
        while self.slots[i].level > 0 {
            if !top && e.at_rich_top(usize::from(self.slots[i].level) - 1) {
                break;
            }
            let now = self.tokens(i);
            let richer = e.cost(usize::from(self.slots[i].level) - 1, self.units.est);
            if self.total + richer - now > room {
                break;
            }
            self.total += richer - now;
            self.slots[i].level -= 1;
            grew = true;
            if one_form {
                break;
            }
        }
        grew
    }

    /// The room the forms leave (`left` tokens, once the index is written) given to one call:
    /// the newest whose next richer form did not fit, its result clipped to the characters that
    /// fill it (or, when no call's is shortened, the newest thought). A result's forms step
    /// from 6,000 characters to 2,400: a 3,000-token listing in a 1,430-token room stood at
    /// 2,400 and left a third of the room unused.
    fn fill(&mut self, left: f64) {
        if left < FILL_MIN_TOKENS {
            return;
        }
        let entries = self.units.entries;
        let est = self.units.est;
        let sizable = |i: usize, sections: &[Section]| {
            self.slots[i].alive
                && sections.contains(&entries[i].section)
                && self.slots[i].level > 0
                // (A call or command read from the span, or the newest thought: a previous
                // summary's carried line has no result to size.)
                && entries[i].rich_top
        };
        // The newest thought when no call's result is shortened: a fold of one long turn (a
        // SWE run's 5,000-character thought before its script) stood at 900 characters of
        // it, and 887 tokens of a 2,072-token room went unused.
        let Some(i) = (0..entries.len())
            .rev()
            .find(|&i| sizable(i, &[Section::Calls, Section::Errors]))
            .or_else(|| {
                (0..entries.len())
                    .rev()
                    .find(|&i| sizable(i, &[Section::LastState]))
            })
        else {
            return;
        };
        let now = self.tokens(i);
        let target = now + left - FILL_SLACK_TOKENS;
        let (mut lo, mut hi) = (
            entries[i].form(usize::from(self.slots[i].level)).len(),
            super::forms::FULLEST_RESULT_CHARS,
        );
        let mut best: Option<(String, f64)> = None;
        for _ in 0..FILL_STEPS {
            if lo >= hi {
                break;
            }
            let mid = lo + (hi - lo) / 2;
            let Some(text) = entries[i].sized(mid) else {
                return;
            };
            let t = est.text(&text) + 1.0;
            if t <= target {
                if t > now && best.as_ref().is_none_or(|(_, b)| t > *b) {
                    best = Some((text, t));
                }
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if let Some((text, t)) = best {
            self.total += t - now;
            self.sized = Some((i, text));
        }
    }

    /// Per identifier, whether the header or a kept unit's line shows it (what `render`
    /// writes before the index), each line's found once for every packing that writes it.
    fn shown_flags(&self, lines: &LineShown<'_>) -> Vec<bool> {
        let entries = self.units.entries;
        let mut out = vec![false; lines.shown.len()];
        let mut set = |ids: &[u32]| {
            for &k in ids {
                out[k as usize] = true;
            }
        };
        set(&lines.header);
        let mut cache = lines.lines.borrow_mut();
        for i in 0..entries.len() {
            if !self.slots[i].alive || self.cover[i].is_some() {
                continue;
            }
            match &self.sized {
                Some((k, text)) if *k == i => set(&lines.shown.shown_in(text)),
                _ => set(cache
                    .entry((i, self.slots[i].level))
                    .or_insert_with(|| lines.shown.shown_in(self.text(i)))),
            }
        }
        out
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
                match &self.sized {
                    Some((k, text)) if *k == i => out.push_str(text),
                    _ => out.push_str(self.text(i)),
                }
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

/// Tokens `identifier_index::render` budgets beyond its rendered text's estimate (its heading's
/// 2, its spare 8), which a share measured on the text must add back to hold that text.
const RENDER_SLACK: f64 = 10.0;

/// Which identifiers the digest's header and each unit's form show (`Shown::shown_in`): a
/// fit tries a dozen packings or more, most of whose lines the one before wrote too.
struct LineShown<'s> {
    shown: &'s Shown<'s>,
    header: Vec<u32>,
    /// By (unit, shortening steps).
    lines: RefCell<FxHashMap<(usize, u8), Vec<u32>>>,
}

/// What a packing chose, kept to be rendered again with one result sized to the room its
/// forms leave (`fit`, `Packing::fill`): its units' states, their total, and its index.
struct Packed {
    slots: Vec<Slot>,
    cover: Vec<Option<usize>>,
    total: f64,
    index: String,
    /// Tokens the index takes in the digest (0 without one).
    written: f64,
}

/// One packing of the units into `room` tokens (see `fit`); the index takes what is left of
/// `limit`, and never less than `reserve` (its share: the units may not squeeze it out when
/// `fit` moves the room to close a pricing gap), and lists only the identifiers the units'
/// lines do not show (`shown`). The text and what it chose.
#[allow(clippy::too_many_arguments)]
fn pack(
    units: &mut Units<'_, '_>,
    header: &str,
    idents: &[Ident],
    prices: &[f64],
    shown: &LineShown<'_>,
    room: f64,
    limit: f64,
    reserve: f64,
) -> (String, Packed) {
    let from = units.start_for(room);
    let est = units.est;
    let mut p = Packing::at(units, from);
    p.shrink(from, room);
    p.give_back(room);
    // The index gets its share and what the rest left. Its share was measured on its rendered
    // text; `render` budgets its heading, its spare and each line's label above that.
    let index_room = (limit - p.total).max(if idents.is_empty() {
        0.0
    } else {
        reserve + RENDER_SLACK
    });
    let shown_flags = p.shown_flags(shown);
    let index =
        identifier_index::render_except(idents, prices, est, index_room as u64, &shown_flags);
    let written = if index.is_empty() {
        0.0
    } else {
        est.summary_text(&index) + 2.0
    };
    let packed = Packed {
        slots: p.slots.clone(),
        cover: p.cover.clone(),
        total: p.total,
        index,
        written,
    };
    (p.render(header, &packed.index), packed)
}

/// `packed` rendered with one call's result sized to what its forms leave of `target` tokens
/// (`Packing::fill`); None when no result is sized.
fn sized(units: &Units<'_, '_>, packed: &Packed, header: &str, target: f64) -> Option<String> {
    let mut p = Packing {
        units,
        slots: packed.slots.clone(),
        cover: packed.cover.clone(),
        total: packed.total,
        sized: None,
    };
    let left = target - p.total - packed.written;
    if left < FILL_MIN_SHARE * target {
        return None;
    }
    p.fill(left);
    p.sized.is_some().then(|| p.render(header, &packed.index))
}

/// Tries at a sized form's aim (`fit`): each corrects the last by what the whole text missed.
const FILL_AIMS: usize = 4;

/// Room left under which no form is sized to it (tokens).
const FILL_MIN_TOKENS: f64 = 64.0;

/// Share of the limit the forms must leave before one is sized to it: a packing already
/// within a few percent of its room is left as it is (sized to its last percent, a long
/// digest priced whole lands over and is packed again: the 10k history's fold took 2x).
const FILL_MIN_SHARE: f64 = 0.03;

/// Tokens a sized form aims below the room left (line syntax, whole-text pricing).
const FILL_SLACK_TOKENS: f64 = 8.0;

/// Bisection steps of a sized form's length.
const FILL_STEPS: usize = 10;

/// The room the units get: the budget less what the identifier index is sure to keep (its
/// share, or the carried identifiers' cost up to half the room). Code symbols the
/// conversation did not use (`Ident::minor`), ranked after every other identifier not
/// carried, are not reserved for: they fill what the units leave; a record's figures, ranked
/// before them, are, up to [`FIGURE_SHARE`] of the room. (Over the four probe sets' 60
/// conversations at the naive budget, the symbols an index showed took 11,101 tokens and were
/// the only place of 7 facts; ids took 2,697 and were the only place of 118. The symbols the
/// conversation used are reserved for with the rest: with a threshold of 3, ranked among them
/// but left to fill, the SWE runs' next-turn names went 78.1% -> 80.8% kept, reserved 85.7%
/// (`tools/future_report.py`).)
fn units_room(idents: &[Ident], prices: &[f64], est: &Estimator, max_tokens: u64) -> f64 {
    let budget = max_tokens as f64;
    let n = idents.iter().take_while(|i| !i.minor()).count();
    let natural_index = est.text(&identifier_index::render_priced(
        &idents[..n],
        &prices[..n],
        est,
        max_tokens,
    )) + 2.0;
    // Identifiers carried from the previous summary keep their room (up to half of it): a
    // second compaction keeps what the first one indexed.
    let carried: Vec<Ident> = idents.iter().filter(|i| i.carried).cloned().collect();
    let carried_cost = if carried.is_empty() {
        0.0
    } else {
        est.text(&identifier_index::render(&carried, est, max_tokens)) + 2.0
    };
    let base = if budget <= SMALL_ROOM_TOKENS {
        INDEX_SHARE
    } else {
        LARGE_ROOM_INDEX_SHARE
    };
    let share = base.max((carried_cost / budget.max(1.0)).min(CARRIED_INDEX_SHARE));
    // A record's figures, ranked after the rest, are sure of a share of their own.
    let m = n + idents[n..]
        .iter()
        .take_while(|i| i.kind == identifier_index::Kind::Figure)
        .count();
    let with_figures = if m > n {
        est.text(&identifier_index::render_priced(
            &idents[..m],
            &prices[..m],
            est,
            max_tokens,
        )) + 2.0
    } else {
        natural_index
    };
    let figures = (with_figures - natural_index)
        .max(0.0)
        .min(budget * FIGURE_SHARE);
    let reserved = (natural_index + figures).min(budget * share);
    budget - reserved
}

/// Share of the room the figures the index lists are sure of (`Kind::Figure`: a JSON record's
/// prices, amounts and dates), within the index's share. As filler only, a second summary with
/// more to say dropped the first one's (tau-bench dialogues whose second summary kept 90%+ of
/// the first's identifiers: 148 -> 114 of 149). Shares of 0 / 5 / 10 / 20%: facts the
/// continuation used next in the tau-bench dialogues (`tools/future_report.py`, naive budget,
/// 1,436) 1,136 / 1,168 / 1,182 / 1,189; held-out probe facts 504 / 509 / 511 / 513 of 608; the
/// main set 194 / 190 / 190 / 191 of 203 (its losses: words in the middle of clipped
/// requests); at 20% the share above is 141 of 149.
const FIGURE_SHARE: f64 = 0.2;

/// Pairs of requests and rules from which one search of every request for all the rules at
/// once beats one search per pair (a span of thousands of turns can state a rule in each:
/// 3,000 requests against 3,000 rules took 6 s a pair at a time).
const RULES_SEARCHED_AT_ONCE: usize = 4_096;

/// For each entry, whether it is a request a rule already says: the rule is in its text and at
/// least four fifths of it.
fn said_by_rules(entries: &[Entry<'_>], rules: &[&str]) -> Vec<bool> {
    let requests: Vec<usize> = (0..entries.len())
        .filter(|&i| entries[i].section == Section::Requests)
        .collect();
    let said = said_by_rules_of(requests.iter().map(|&i| entries[i].richest().trim()), rules);
    let mut out = vec![false; entries.len()];
    for (&i, s) in requests.iter().zip(said) {
        out[i] = s;
    }
    out
}

/// `said_by_rules` of requests given by their texts (trimmed), in order.
fn said_by_rules_of<'q>(
    requests: impl ExactSizeIterator<Item = &'q str>,
    rules: &[&str],
) -> Vec<bool> {
    let says = |q: &str, r: &str| r.len() * 5 >= q.len() * 4;
    let finder = (requests.len() * rules.len() > RULES_SEARCHED_AT_ONCE)
        .then(|| aho_corasick::AhoCorasick::new(rules).ok())
        .flatten();
    requests
        .map(|q| match &finder {
            // Every occurrence of every rule (overlapping): the same pairs as the search
            // pair by pair finds.
            Some(f) => f
                .find_overlapping_iter(q)
                .any(|m| says(q, rules[m.pattern().as_usize()])),
            None => rules.iter().any(|r| q.contains(r) && says(q, r)),
        })
        .collect()
}

/// Shorten, then drop, the least informative units until the digest fits `max_tokens`; the
/// identifier index takes at least its share and whatever room the rest leaves. When no
/// packing fits (the rules, never dropped, and the header fill the room), the floor
/// (`floor`): the short header, every rule, then what requests still fit.
pub(super) fn fit(
    entries: &[Entry<'_>],
    header: &str,
    short_header: &str,
    idents: &[Ident],
    est: &Estimator,
    max_tokens: u64,
) -> Fitted {
    let fixed = est.text(header) + 3.0 * SECTIONS.len() as f64;
    let mut units = Units::new(entries, est, fixed);
    let budget = max_tokens as f64;
    // Each identifier priced once for the index's every rendering.
    let prices = identifier_index::prices(idents, est);
    let shown = Shown::new(idents);
    let lines = LineShown {
        shown: &shown,
        header: shown.shown_in(header),
        lines: RefCell::new(FxHashMap::default()),
    };
    let room = units_room(idents, &prices, est, max_tokens);
    let limit = budget;
    let mut best: Option<(f64, String, Packed)> = None;
    // Line-by-line prices differ a little from the rendered whole: pack again into a room
    // moved by the difference, over or under, and keep the fullest packing that fits (when none
    // does, the floor).
    // The shift of room and limit: moved by the gap until the fit is bracketed, then bisected.
    // When eight tries leave every packing over (forms change in jumps: 19 tokens over, the room
    // moved 23 a try, and the floor dropped a carried summary of 3,000 tokens), up to eight more
    // step down by a doubling share of the budget until one fits.
    let (mut shift, mut fits, mut over): (f64, Option<f64>, Option<f64>) = (0.0, None, None);
    let mut down = 0.0_f64;
    for k in 0..16 {
        if k >= 8 && best.is_some() {
            break;
        }
        let (out, packed) = pack(
            &mut units,
            header,
            idents,
            &prices,
            &lines,
            room + shift,
            limit + shift,
            limit - room,
        );
        let used = est.summary_text(&out);
        if used <= budget && best.as_ref().is_none_or(|(b, _, _)| used > *b) {
            best = Some((used, out, packed));
        }
        let gap = budget - used;
        // Within 2% under the budget; from the fifth try, within 4% (the whole text's estimate
        // samples long texts: a room moved by a few tokens can swing it by a hundred).
        let close = if k < 4 { 0.02 } else { 0.04 };
        if (0.0..=budget * close + 2.0).contains(&gap) {
            break;
        }
        if gap < 0.0 {
            over = Some(shift);
        } else {
            fits = Some(shift);
        }
        // A bracket narrower than two tokens moves no form: its packings are the ones tried.
        if let (Some(a), Some(b), Some(_)) = (fits, over, &best) {
            if (a - b).abs() < 2.0 {
                break;
            }
        }
        shift = match (fits, over) {
            _ if k >= 7 && best.is_none() => {
                down = (2.0 * down).max(budget * 0.05);
                shift - down
            }
            (Some(a), Some(b)) => (a + b) / 2.0,
            _ => shift + gap - if gap < 0.0 { 4.0 } else { 1.0 },
        };
    }
    match best {
        // The fullest packing, with what its forms leave given to one call's result (`fill`):
        // sized only once the units are chosen, so it never stands in for a repacking that
        // keeps more units (a probe's six looked-up reservations). Aimed 1% under the budget
        // (`fit` keeps what lands within 2% of it), in the packing's line prices, then again
        // by what the whole text missed (its line prices count every section's heading: ~10%
        // under on a short digest). Where the lines price over the whole (a long listing's lines
        // priced apart: 10% over) and that aim leaves no room to size a result, it is raised by
        // the difference once (a 900-token room stood at 84%). (Raised on every first aim, the
        // fuller digests left the successive SWE compactions' tails less to take: 33 of 903
        // under 95% of the budget against 26.)
        Some((used, text, packed)) => {
            let (mut best, mut best_used) = (text, used);
            let mut target = budget * 0.99;
            let mut raised = false;
            let over = packed.total + packed.written - used;
            for _ in 0..FILL_AIMS {
                if best_used >= budget * (1.0 - FILL_MIN_SHARE) {
                    break;
                }
                let out = match sized(&units, &packed, header, target) {
                    Some(out) => out,
                    None if !raised && over > 0.0 => {
                        raised = true;
                        target += over;
                        continue;
                    }
                    None => break,
                };
                let t = est.summary_text(&out);
                if t <= budget && t > best_used {
                    (best, best_used) = (out, t);
                }
                target += budget * 0.99 - t;
            }
            let (requests_left_out, requests) =
                requests_kept(entries, |i| packed.slots[i].alive, &best);
            Fitted {
                text: best,
                requests_left_out,
                requests,
            }
        }
        None => floor(entries, short_header, idents, &prices, &shown, est, budget),
    }
}

/// A fitted digest, and how many of the user's requests it could not hold.
pub(super) struct Fitted {
    pub(super) text: String,
    /// Requests (courtesies aside) left out of `text`: the oldest but the first went when even
    /// their shortest forms did not fit. One a standing rule of the digest says whole is kept.
    pub(super) requests_left_out: usize,
    /// Requests of the span and the previous summary, courtesies aside.
    pub(super) requests: usize,
}

/// Of the requests that ask something (`Entry::idle` ones ask nothing: "thanks!"): how many
/// `kept` (by entry) says are not in the digest `text`, and how many there are. A request a
/// standing rule says whole is written as that rule: kept where `text` holds the rule (a floor
/// of a few tokens holds none). (The rules are searched in the requests left out alone:
/// searched in every request, the count cost 3% of a digest of the 10k history.)
fn requests_kept(
    entries: &[Entry<'_>],
    kept: impl Fn(usize) -> bool,
    text: &str,
) -> (usize, usize) {
    let asking = |e: &Entry<'_>| e.section == Section::Requests && !e.idle;
    let requests = entries.iter().filter(|e| asking(e)).count();
    let out: Vec<&Entry<'_>> = entries
        .iter()
        .enumerate()
        .filter(|&(i, e)| asking(e) && !kept(i))
        .map(|(_, e)| e)
        .collect();
    if out.is_empty() {
        return (0, requests);
    }
    let rules: Vec<&str> = entries
        .iter()
        .filter(|e| e.section == Section::Rules)
        .map(Entry::richest)
        .filter(|r| text.contains(r))
        .collect();
    let said = said_by_rules_of(out.iter().map(|e| e.richest().trim()), &rules);
    (said.iter().filter(|&&s| !s).count(), requests)
}

/// The shortest a rule is clipped to (characters, its head kept) when the rules whole do not
/// fit the floor's room: under it a clipped rule no longer says what it forbids.
const RULE_CLIP_MIN: usize = 30;

/// Share of a clipped rule's characters taken from its head: all of them. A rule says what it
/// forbids and on what first, its qualifiers last: clipped by its head and end, "Do not cancel
/// reservation ZZ9Q7T under any circumstances." kept "Do not cancel reservation ZZ…r any
/// circumstances." and lost the reservation (tau-bench task35-trial3's second successive
/// compaction, whose room holds the rules whole only 3 tokens over the budget).
const RULE_HEAD_SHARE: f64 = 1.0;

/// The header and the rules section: every rule whole, as a list.
pub(super) fn rules_text(header: &str, rules: &[&str]) -> String {
    let mut out = String::from(header);
    if !rules.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&rules_lines(rules, &vec![usize::MAX; rules.len()], true));
    }
    out
}

/// The digest when no packing fits `budget`: the short header and every standing rule (whole,
/// else without the header, as many whole as fit and the others clipped: `squeezed_rules`), then
/// the user's requests that still fit at their shortest, the first (the task) and then the
/// newest, in half of what the rules leave when there are identifiers to index, and the index
/// in the rest. Before it, the last resort cut the packing's text at a line, and with it the
/// rules rendered last (`rules_floor_tokens` gives the room this needs).
fn floor(
    entries: &[Entry<'_>],
    header: &str,
    idents: &[Ident],
    prices: &[f64],
    shown: &Shown,
    est: &Estimator,
    budget: f64,
) -> Fitted {
    let fitted = |text: String, kept: &[usize]| {
        let mut is_kept = vec![false; entries.len()];
        for &i in kept {
            is_kept[i] = true;
        }
        let (requests_left_out, requests) = requests_kept(entries, |i| is_kept[i], &text);
        Fitted {
            text,
            requests_left_out,
            requests,
        }
    };
    let rules: Vec<&str> = entries
        .iter()
        .filter(|e| e.section == Section::Rules)
        .map(Entry::richest)
        .collect();
    let mut out = rules_text(header, &rules);
    if est.summary_text(&out) > budget {
        if rules.is_empty() {
            return fitted(cut_to_budget(out, est, budget), &[]);
        }
        out = squeezed_rules(&rules, est, budget);
    }
    // Requests not already said by a rule (a rule that is the whole request is written once).
    let said = said_by_rules(entries, &rules);
    let requests: Vec<usize> = (0..entries.len())
        .filter(|&i| entries[i].section == Section::Requests && !said[i])
        .collect();
    let order = requests
        .first()
        .into_iter()
        .chain(requests.iter().skip(1).rev());
    let left = budget - est.summary_text(&out);
    let requests_room = if idents.is_empty() {
        budget
    } else {
        budget - left / 2.0
    };
    let mut kept: Vec<usize> = Vec::new();
    let section = |kept: &[usize]| {
        let mut idx = kept.to_vec();
        idx.sort_unstable();
        let mut s = format!("\n## {}\n", super::SECTIONS[1].1);
        for i in idx {
            s.push_str("- ");
            s.push_str(entries[i].last());
            s.push('\n');
        }
        s
    };
    // Priced line by line (a span may hold thousands of requests), then checked whole.
    let mut total = est.summary_text(&out) + est.text(&section(&[]));
    for &i in order {
        let t = entries[i].cost(entries[i].steps(), est);
        if total + t <= requests_room {
            kept.push(i);
            total += t;
        }
    }
    while !kept.is_empty() && est.summary_text(&(out.clone() + &section(&kept))) > requests_room {
        kept.pop();
    }
    if !kept.is_empty() {
        out.push_str(&section(&kept));
    }
    let index_room = budget - est.summary_text(&out) - 2.0;
    if index_room > 0.0 {
        let index = identifier_index::render_except(
            idents,
            prices,
            est,
            index_room as u64,
            &shown.flags(&out),
        );
        let with = format!("{out}\n{index}\n");
        if !index.is_empty() && est.summary_text(&with) <= budget {
            return fitted(with, &kept);
        }
    }
    fitted(out, &kept)
}

/// The rules section alone (the header goes first: it says only that a fold happened, which
/// the summary's markers say too) in `budget` tokens. Every rule whole if they fit; else as
/// many whole as fit, the imperatives first ("Do not ...", "Never ...": `imperative`), the
/// shortest first among them (one a previous summary carried clipped last), and
/// the others clipped (their head) to the largest length that fits the room those leave, at
/// least `RULE_CLIP_MIN` characters, or left out. Rules are kept verbatim where they can be:
/// a clipped rule may no longer say what it forbids ("Do not cancel rese…rcumstances."), and a
/// room that holds two of three rules whole holds all three only clipped. Before, every rule
/// was clipped to the same step (240, 120, 60, 30 characters) with the header kept, and a room
/// too small for that kept a cut header and no rule.
///
/// Where the rules whole do not fit as a list, they are written one per line without the
/// list's dash (`bare_rules_line`) before any is clipped or left out: a dash is a token a
/// line, and the next digest reads a line under the heading with or without it. tau-bench
/// task35-trial3's three planted rules took 61 tokens as a list in a room of 60, and
/// "Do not cancel reservation ZZ9Q7T under any circumstances." was clipped to its head in
/// every compaction from the second; written bare they take 58.
fn squeezed_rules(rules: &[&str], est: &Estimator, budget: f64) -> String {
    let mut caps = vec![usize::MAX; rules.len()];
    let list = rules_lines(rules, &caps, true);
    if est.summary_text(&list) <= budget {
        return list;
    }
    let dash = !rules.iter().all(|r| bare_rules_line(r));
    let render = |caps: &[usize]| rules_lines(rules, caps, dash);
    let fits = |caps: &[usize]| est.summary_text(&render(caps)) <= budget;
    if !dash && fits(&caps) {
        return render(&caps);
    }
    // (A rule a previous summary carried clipped is no longer verbatim: it comes after the
    // whole ones; an imperative comes before a preference.)
    let mut order: Vec<usize> = (0..rules.len()).collect();
    order.sort_by_key(|&i| {
        (
            rules[i].contains('…'),
            !crate::standing_rules::imperative(rules[i]),
            rules[i].len(),
        )
    });
    caps.fill(0);
    for &i in &order {
        caps[i] = usize::MAX;
        if !fits(&caps) {
            caps[i] = 0;
        }
    }
    let rest: Vec<usize> = (0..rules.len()).filter(|&i| caps[i] == 0).collect();
    let longest = rest
        .iter()
        .map(|&i| rules[i].chars().count())
        .max()
        .unwrap_or(0);
    let with = |caps: &mut Vec<usize>, cap: usize| {
        for &i in &rest {
            caps[i] = cap;
        }
    };
    with(&mut caps, RULE_CLIP_MIN);
    if longest <= RULE_CLIP_MIN || !fits(&caps) {
        with(&mut caps, 0);
    } else {
        // The largest cap that fits, by bisection over characters (a text's price grows with
        // its length, up to the estimate's rounding).
        let (mut lo, mut hi) = (RULE_CLIP_MIN, longest);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            with(&mut caps, mid);
            if fits(&caps) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        with(&mut caps, lo);
    }
    if caps.iter().all(|&c| c == 0) {
        return String::new();
    }
    render(&caps)
}

/// The rules section: its heading and each rule clipped to its cap (characters, its head
/// kept; `usize::MAX` whole, 0 left out), as a list (`dash`) or one rule a line.
fn rules_lines(rules: &[&str], caps: &[usize], dash: bool) -> String {
    let mut out = format!("## {}\n", super::SECTIONS[0].1);
    for (r, &cap) in rules.iter().zip(caps) {
        if cap == 0 {
            continue;
        }
        if dash {
            out.push_str("- ");
        }
        if cap == usize::MAX {
            out.push_str(r);
        } else {
            out.push_str(&super::clip_ends(r, cap, RULE_HEAD_SHARE));
        }
        out.push('\n');
    }
    out
}

/// Whether a rule reads back as itself written without a list's dash: a line opening with
/// "#" would read as a heading, one opening with "- " would lose its dash.
fn bare_rules_line(rule: &str) -> bool {
    let t = rule.trim_start();
    t == rule && !t.is_empty() && !t.starts_with('#') && !t.starts_with("- ")
}

/// Last resort: cut by characters (about 3 characters per token), on a line boundary; the
/// index and the oldest details are at the end.
fn cut_to_budget(mut out: String, est: &Estimator, budget: f64) -> String {
    if est.summary_text(&out) <= budget {
        return out;
    }
    let mut max_chars = (budget * 3.0) as usize;
    while max_chars > 0 && est.summary_text(&out) > budget {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_searched_at_once_find_the_requests_a_search_pair_by_pair_finds() {
        // Requests that are a rule whole, hold one as most of their text, hold one as a small
        // part of it, or hold none; and enough of both for the search at once.
        let mut entries = Vec::new();
        let mut rules = Vec::new();
        for k in 0..120 {
            let rule = format!("Never touch table t{k}.");
            let request = match k % 4 {
                0 => rule.clone(),
                1 => format!("{rule} Ok."),
                2 => {
                    format!("{rule} Then, once the migration ran, report every row count you saw.")
                }
                _ => format!("Report the row counts of t{k}."),
            };
            entries.push(Entry::given(Section::Requests, vec![request]).expect("an entry"));
            entries.push(Entry::given(Section::Rules, vec![rule.clone()]).expect("an entry"));
            rules.push(rule);
        }
        let rules: Vec<&str> = rules.iter().map(String::as_str).collect();
        assert!(120 * rules.len() > RULES_SEARCHED_AT_ONCE);
        let pair_by_pair: Vec<bool> = entries
            .iter()
            .map(|e| {
                let q = e.richest().trim();
                e.section == Section::Requests
                    && rules
                        .iter()
                        .any(|r| q.contains(r) && r.len() * 5 >= q.len() * 4)
            })
            .collect();
        assert_eq!(said_by_rules(&entries, &rules), pair_by_pair);
        assert_eq!(pair_by_pair.iter().filter(|&&s| s).count(), 60);
        // Below the threshold the pairs are searched one by one: the same answer.
        assert_eq!(said_by_rules(&entries[..4], &rules[..2]), pair_by_pair[..4]);
    }

    #[test]
    fn rules_a_list_cannot_hold_whole_are_written_whole_one_a_line() {
        let est = Estimator::new(crate::provider::Provider::OpenAI, "");
        let rules = [
            "Always ask me before you run git push or book anything.",
            "Do not cancel reservation ZZ9Q7T under any circumstances.",
            "Never charge my Visa card ending in 4417.",
        ];
        let whole = [usize::MAX; 3];
        let (list, bare) = (
            est.summary_text(&rules_lines(&rules, &whole, true)),
            est.summary_text(&rules_lines(&rules, &whole, false)),
        );
        assert!(bare < list, "{bare} {list}");
        // A room between the two: every rule whole, no dash; the list where it fits.
        let out = squeezed_rules(&rules, &est, bare);
        assert_eq!(out, format!("## Standing rules\n{}\n", rules.join("\n")));
        assert!(squeezed_rules(&rules, &est, list).contains("\n- Never charge"));
        // A rule that would read back as a heading keeps the list (its rules clipped instead).
        let heading = ["# Never push to main without a review.", rules[1], rules[2]];
        let clipped = squeezed_rules(&heading, &est, bare);
        assert!(
            clipped.lines().skip(1).all(|l| l.starts_with("- ")),
            "{clipped}"
        );
    }
}
