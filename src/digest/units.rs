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
pub(super) struct Entry<'a> {
    pub(super) section: Section,
    pub(super) focus: bool,
    /// For a rule: the request entry it was said in (it need not be written twice).
    pub(super) from: Option<usize>,
    /// The plan index of each form (equal forms of the plan appear once).
    plan: Vec<usize>,
    forms: Vec<OnceLock<String>>,
    /// Tokens of each form, never less than a shorter form's (so shortening never costs).
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
            from: None,
            plan: (0..n).collect(),
            forms: forms.into_iter().map(OnceLock::from).collect(),
            costs: (0..n).map(|_| OnceLock::new()).collect(),
            build: None,
        })
    }

    /// A unit whose forms are built when first read.
    pub(super) fn lazy(section: Section, build: Box<dyn Forms + 'a>) -> Self {
        // A run of equal forms is one level, built from its last (cheapest) form.
        let n = build.count();
        let mut plan = vec![0];
        for j in 1..n {
            if build.repeats(j) {
                if let Some(last) = plan.last_mut() {
                    *last = j;
                }
            } else {
                plan.push(j);
            }
        }
        let k = plan.len();
        Entry {
            section,
            focus: false,
            from: None,
            plan,
            forms: (0..k).map(|_| OnceLock::new()).collect(),
            costs: (0..k).map(|_| OnceLock::new()).collect(),
            build: Some(build),
        }
    }

    /// How many distinct forms.
    pub(super) fn levels(&self) -> usize {
        self.forms.len()
    }

    /// The form at `level` (0: the richest).
    pub(super) fn form(&self, level: usize) -> &str {
        self.forms[level].get_or_init(|| match &self.build {
            Some(b) => b.build(self.plan[level]),
            None => String::new(),
        })
    }

    /// The shortest form.
    pub(super) fn last(&self) -> &str {
        self.form(self.levels() - 1)
    }

    /// Tokens of the form at `level` as a line (its text plus ~1 token of list syntax), at
    /// least those of any shorter form.
    pub(super) fn cost(&self, level: usize, est: &Estimator) -> f64 {
        *self.costs[level].get_or_init(|| {
            let own = est.text(self.form(level)) + 1.0;
            if level + 1 < self.levels() {
                own.max(self.cost(level + 1, est))
            } else {
                own
            }
        })
    }
}

/// Units from which pricing many at once spreads over threads (a thread costs tens of
/// microseconds; building and pricing this many forms costs milliseconds).
const PRICE_APART_UNITS: usize = 512;

/// Units a thread takes at a time (the forms' sizes vary: small blocks even out the threads).
const PRICE_BLOCK: usize = 64;

/// Price the form `level(i)` of each unit `i` that has one not priced yet (and so build it),
/// spread over the machine's threads when there are many: each unit's forms and prices are
/// its own (`Entry::cost` reads only its unit), so they come out the same on any thread, and
/// whoever reads them next finds them ready.
pub(super) fn price_many(
    entries: &[Entry<'_>],
    level: impl Fn(usize) -> Option<usize> + Sync,
    est: &Estimator,
) {
    let todo: Vec<(usize, usize)> = (0..entries.len())
        .filter_map(|i| level(i).map(|l| (i, l)))
        .filter(|&(i, l)| entries[i].costs[l].get().is_none())
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
        for &(i, l) in &todo[from..(from + PRICE_BLOCK).min(todo.len())] {
            entries[i].cost(l, est);
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
                    err: false,
                },
                shortest: Default::default(),
            };
            let e = Entry::lazy(Section::Calls, Box::new(call()));
            assert_eq!(lazy_forms(&e), built(&call()), "{t:.80}");
            let command = || Command {
                joined: Command::join(t),
                outcome: Outcome {
                    text: Some(Cow::Borrowed(t.as_str())),
                    err: true,
                },
            };
            let e = Entry::lazy(Section::Errors, Box::new(command()));
            assert_eq!(lazy_forms(&e), built(&command()), "{t:.80}");
        }
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
