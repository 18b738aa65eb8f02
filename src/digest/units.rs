//! A digest's units and their forms, built when first read: a span of thousands of tool calls
//! gives each call four forms (its result in 6,000 characters down to 48), and the packer reads
//! most of the richest ones never (a room of 250k tokens against 8M of rich forms on a 10k-message
//! history). A unit knows how many forms it has and which are equal without building them
//! (`Forms::repeats`: a clip that keeps a text whole gives the same line at any larger limit).

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::forms::Forms;
use super::Section;
use crate::estimate::Estimator;

/// One unit of the digest: its section and forms from the richest to the shortest (a packing
/// chooses one, `pack`).
///
/// A packing moves a unit by *steps*: each shortening step takes it to its next distinct form,
/// so after `s` steps it stands at distinct form `min(s, levels - 1)`. Which of its forms are
/// distinct (its plan, `Forms::repeats`) is found only when a packing needs a form between
/// the richest and the shortest: most units of a long span are only ever read in their
/// shortest form (their key, a state that dropped them) and never need it.
pub(super) struct Entry<'a> {
    pub(super) section: Section,
    pub(super) focus: bool,
    /// Whether its first form is a fullest form beyond the ones the packing was tuned on (a
    /// call's result past 6,000 characters, a thought past 900): the room left is given to it
    /// only once every other unit has had its share (`pack::Packing::give_back`).
    pub(super) rich_top: bool,
    /// For a rule: the request entry it was said in (it need not be written twice).
    pub(super) from: Option<usize>,
    /// Worth the least of its section (`pack::IDLE`): a command that prints a file's lines
    /// (`cat`, `sed -n`, `head`, ...; the file is still there to print again, a run's output is
    /// not), or a thought that names nothing (`digest::idle::names_nothing`: "I need more lines.").
    /// Dropped before the others of its section, given room back after every other unit.
    pub(super) idle: bool,
    /// A call that changed something (`changing_call`: an edit, a booking): past the drops that
    /// keep only the newest calls (`pack::droppable`).
    pub(super) changes: bool,
    /// How many forms the unit has (equal ones counted apart).
    count: usize,
    /// The index of each distinct form (a run of equal forms appears once, as its last).
    plan: OnceLock<Vec<usize>>,
    /// Whether the second form differs from the first (`Forms::repeats(1)`), asked of every
    /// call's unit by the packing's first step (`at_rich_top`) before any plan is needed.
    second_differs: OnceLock<bool>,
    /// Each form, by index (built when first read).
    forms: Vec<OnceLock<String>>,
    /// Tokens of the distinct form at each index, never less than a shorter form's (so
    /// shortening never costs).
    costs: Vec<OnceLock<f64>>,
    build: Option<Box<dyn Forms + 'a>>,
}

impl<'a> Entry<'a> {
    /// A unit whose forms are given (empty ones left out, equal neighbours once); None when
    /// no form is left.
    pub(super) fn given(section: Section, forms: Vec<String>) -> Option<Self> {
        let mut forms: Vec<String> = forms.into_iter().filter(|f| !f.is_empty()).collect();
        forms.dedup();
        if forms.is_empty() {
            return None;
        }
        let n = forms.len();
        Some(Entry {
            section,
            focus: false,
            rich_top: false,
            from: None,
            idle: false,
            changes: false,
            count: n,
            plan: OnceLock::from((0..n).collect::<Vec<_>>()),
            second_differs: OnceLock::from(true),
            forms: forms.into_iter().map(OnceLock::from).collect(),
            costs: (0..n).map(|_| OnceLock::new()).collect(),
            build: None,
        })
    }

    /// A unit whose forms are built when read, and told apart when a packing needs to.
    pub(super) fn lazy(section: Section, build: Box<dyn Forms + 'a>) -> Self {
        let n = build.count().max(1);
        Entry {
            section,
            focus: false,
            rich_top: false,
            from: None,
            idle: false,
            changes: false,
            count: n,
            plan: OnceLock::new(),
            second_differs: OnceLock::new(),
            forms: (0..n).map(|_| OnceLock::new()).collect(),
            costs: (0..n).map(|_| OnceLock::new()).collect(),
            build: Some(build),
        }
    }

    /// The index of each distinct form: a run of equal forms is one, read at its last
    /// (cheapest) form.
    fn plan(&self) -> &[usize] {
        self.plan.get_or_init(|| {
            let Some(b) = &self.build else {
                return (0..self.count).collect();
            };
            let mut plan = vec![0];
            for j in 1..self.count {
                let repeats = if j == 1 {
                    !self.second_differs()
                } else {
                    b.repeats(j)
                };
                if repeats {
                    if let Some(last) = plan.last_mut() {
                        *last = j;
                    }
                } else {
                    plan.push(j);
                }
            }
            plan
        })
    }

    /// How many distinct forms.
    pub(super) fn levels(&self) -> usize {
        self.plan().len()
    }

    /// How many shortening steps can move the unit at most (its distinct forms are fewer, or
    /// as many: the steps past its shortest leave it there).
    pub(super) fn steps(&self) -> usize {
        self.count - 1
    }

    /// The distinct form a unit stands at after `steps` shortening steps.
    pub(super) fn level_at(&self, steps: usize) -> usize {
        steps.min(self.levels() - 1)
    }

    /// The index of the form a unit stands at after `steps` steps: its shortest needs no plan.
    fn index_at(&self, steps: usize) -> usize {
        if steps >= self.steps() {
            self.count - 1
        } else {
            self.plan()[self.level_at(steps)]
        }
    }

    fn built(&self, j: usize) -> &str {
        self.forms[j].get_or_init(|| match &self.build {
            Some(b) => b.build(j),
            None => String::new(),
        })
    }

    /// Whether the second form differs from the first (both given, or `Forms::repeats`).
    fn second_differs(&self) -> bool {
        *self.second_differs.get_or_init(|| match &self.build {
            Some(b) if self.count > 1 => !b.repeats(1),
            _ => true,
        })
    }

    /// Whether the form after `steps` steps is the unit's extra fullest one (`rich_top`):
    /// its first form (`index_at(steps) == 0`), which only a unit of one form stands at after
    /// a step, and one of more at none only when its second form differs (the plan's first
    /// distinct form is then the first). Told without the plan.
    pub(super) fn at_rich_top(&self, steps: usize) -> bool {
        self.rich_top && (self.count == 1 || (steps == 0 && self.second_differs()))
    }

    /// A form sized to `chars` characters of its result (`Forms::build_sized`).
    pub(super) fn sized(&self, chars: usize) -> Option<String> {
        self.build.as_ref()?.build_sized(chars)
    }

    /// The form after `steps` shortening steps (0: the richest).
    pub(super) fn form(&self, steps: usize) -> &str {
        self.built(self.index_at(steps))
    }

    /// The richest form (equal to the first distinct form: read without telling forms apart).
    pub(super) fn richest(&self) -> &str {
        self.built(0)
    }

    /// The shortest form.
    pub(super) fn last(&self) -> &str {
        self.built(self.count - 1)
    }

    /// Tokens of the form after `steps` steps as a line (its text plus ~1 token of list
    /// syntax), at least those of any shorter form.
    pub(super) fn cost(&self, steps: usize, est: &Estimator) -> f64 {
        self.cost_of(self.index_at(steps), est)
    }

    /// Whether `cost(steps)` is known without building, pricing or telling forms apart.
    pub(super) fn priced(&self, steps: usize) -> bool {
        if steps >= self.steps() {
            return self.costs[self.count - 1].get().is_some();
        }
        match self.plan.get() {
            Some(plan) => self.costs[plan[steps.min(plan.len() - 1)]].get().is_some(),
            None => false,
        }
    }

    /// Tokens of the distinct form at index `j` (one of the plan's).
    fn cost_of(&self, j: usize, est: &Estimator) -> f64 {
        *self.costs[j].get_or_init(|| {
            let own = est.text(self.built(j)) + 1.0;
            if j + 1 >= self.count {
                return own;
            }
            let plan = self.plan();
            match plan.binary_search(&j) {
                Ok(d) if d + 1 < plan.len() => own.max(self.cost_of(plan[d + 1], est)),
                _ => own,
            }
        })
    }
}

/// Units from which pricing many at once spreads over threads (a thread costs tens of
/// microseconds; building and pricing this many forms costs milliseconds).
const PRICE_APART_UNITS: usize = 512;

/// Units a thread takes at a time (the forms' sizes vary: small blocks even out the threads).
const PRICE_BLOCK: usize = 64;

/// Price the form after `steps(i)` steps of each unit `i` that has one not priced yet (and so
/// build it, and tell its forms apart when it needs to),
/// spread over the machine's threads when there are many: each unit's forms and prices are
/// its own (`Entry::cost` reads only its unit), so they come out the same on any thread, and
/// whoever reads them next finds them ready.
pub(super) fn price_many(
    entries: &[Entry<'_>],
    steps: impl Fn(usize) -> Option<usize> + Sync,
    est: &Estimator,
) {
    let todo: Vec<(usize, usize)> = (0..entries.len())
        .filter_map(|i| steps(i).map(|s| (i, s)))
        .filter(|&(i, s)| !entries[i].priced(s))
        .collect();
    if todo.len() < 2 * PRICE_APART_UNITS {
        return; // the sum that follows prices them in turn
    }
    let threads = cores().min(todo.len() / PRICE_APART_UNITS);
    if threads < 2 {
        return;
    }
    let next = AtomicUsize::new(0);
    let work = || loop {
        let from = next.fetch_add(PRICE_BLOCK, Ordering::Relaxed);
        if from >= todo.len() {
            break;
        }
        for &(i, s) in &todo[from..(from + PRICE_BLOCK).min(todo.len())] {
            entries[i].cost(s, est);
        }
    };
    std::thread::scope(|s| {
        // A thread the system refuses leaves its share to the others.
        let helpers: Vec<_> = (1..threads)
            .filter_map(|_| std::thread::Builder::new().spawn_scoped(s, work).ok())
            .collect();
        work();
        for h in helpers {
            if let Err(panic) = h.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
}

/// The threads the machine runs at once, asked once (the answer reads cgroup files: asked at
/// every step of every packing, it cost more than the pricing it spread).
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// A key of what a unit says, for deduplication: a hash of its text, by section.
pub(super) fn key(section: Section, text: &str) -> (Section, u64) {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    (section, h.finish())
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::super::forms::{Call, Command, Forms, Outcome, Request};
    use super::super::Section;
    use super::Entry;

    /// The forms a unit whose forms were all built and deduplicated would have.
    fn built(forms: &dyn Forms) -> Vec<String> {
        let mut all: Vec<String> = (0..forms.count()).map(|j| forms.build(j)).collect();
        all.dedup();
        all
    }

    fn lazy_forms(e: &Entry<'_>) -> Vec<String> {
        (0..e.levels()).map(|l| e.form(l).to_string()).collect()
    }

    #[test]
    fn a_lazy_unit_has_the_forms_a_built_one_would() {
        let long = "line of output with words\n".repeat(400);
        let clipped_once = super::super::clip::clip_ends(&long, 1_500, 0.6);
        let texts: Vec<String> = vec![
            "short".into(),
            "a request of a few words".repeat(9),
            long.clone(),
            clipped_once,
            "=====\n".repeat(300),
            format!("<returncode>1</returncode>\n<output>\n{long}</output>"),
        ];
        for t in &texts {
            let request = || Request::new(Cow::Borrowed(t.as_str()));
            let e = Entry::lazy(Section::Requests, Box::new(request()));
            assert_eq!(lazy_forms(&e), built(&request()), "{t:.80}");
            let args = format!("{{\"path\":\"src/app.py\",\"content\":{:?}}}", t);
            let call = || Call {
                name: "write_file",
                args: &args,
                parsed: serde_json::from_str(&args),
                outcome: Outcome {
                    text: Some(Cow::Borrowed(t.as_str())),
                    code: None,
                    err: false,
                    head_share: super::super::forms::RESULT_HEAD_SHARE,
                    search: false,
                },
                shortest: Default::default(),
            };
            let e = Entry::lazy(Section::Calls, Box::new(call()));
            assert_eq!(lazy_forms(&e), built(&call()), "{t:.80}");
            let command = || Command {
                joined: Command::join(t),
                outcome: Outcome {
                    text: Some(Cow::Borrowed(t.as_str())),
                    code: None,
                    err: true,
                    head_share: super::super::forms::RESULT_HEAD_SHARE,
                    search: false,
                },
            };
            let e = Entry::lazy(Section::Errors, Box::new(command()));
            assert_eq!(lazy_forms(&e), built(&command()), "{t:.80}");
        }
    }

    /// `at_rich_top` tells the first form without the plan, as the plan would.
    #[test]
    fn the_extra_fullest_form_is_told_as_the_plan_tells_it() {
        let long = "line of output with words\n".repeat(400);
        for t in ["short", "a request of a few words", long.as_str()] {
            let plan: &'static [(usize, f64)] = &[(12_000, 0.6), (900, 0.6), (400, 0.6)];
            let mut e = Entry::lazy(
                Section::LastState,
                Box::new(super::super::forms::Clipped {
                    text: Cow::Owned(t.to_string()),
                    plan,
                }),
            );
            e.rich_top = true;
            let told: Vec<bool> = (0..4).map(|s| e.at_rich_top(s)).collect();
            let planned: Vec<bool> = (0..4).map(|s| e.index_at(s) == 0).collect();
            assert_eq!(told, planned, "{t:.40}");
        }
        let given = Entry::given(Section::Calls, vec!["a".into(), "b".into()]).unwrap();
        assert!((0..3).all(|s| given.at_rich_top(s) == (given.rich_top && given.index_at(s) == 0)));
    }

    #[test]
    fn a_shorter_form_never_costs_more() {
        let est = crate::estimate::Estimator::new(crate::provider::Provider::OpenAI, "");
        let text = "x = 1 # ✓ ".repeat(500) + &"plain words here ".repeat(300);
        let e = Entry::lazy(Section::Requests, Box::new(Request::new(Cow::Owned(text))));
        for l in 1..e.levels() {
            assert!(e.cost(l - 1, &est) >= e.cost(l, &est));
        }
    }
}
