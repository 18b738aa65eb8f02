//! The fuzz targets' properties (`fuzz/checks.rs`) on the saved corpus (`fuzz/seeds/`: inputs
//! that reached new coverage in the cargo-fuzz runs, minimized, plus every input that once
//! failed), then a short pseudo-random run mutating them. The coverage-guided run itself needs
//! cargo-fuzz (see fuzz/README.md); this replay keeps CI to a few seconds.

#[path = "../fuzz/checks.rs"]
mod checks;

use std::path::Path;

fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

/// xorshift64*: a fixed-seed mutation stream, the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// libFuzzer-like mutations: flip, insert, erase, duplicate a range, splice two inputs.
fn mutate(rng: &mut Rng, a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut v = a.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(5) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 => {
                let i = rng.below(v.len() + 1);
                v.insert(i, rng.next() as u8);
            }
            2 if !v.is_empty() => {
                let i = rng.below(v.len());
                let n = rng.below(v.len() - i) + 1;
                v.drain(i..i + n.min(16));
            }
            3 if !v.is_empty() => {
                let i = rng.below(v.len());
                let n = (rng.below(v.len() - i) + 1).min(64);
                let piece = v[i..i + n].to_vec();
                let at = rng.below(v.len() + 1);
                v.splice(at..at, piece);
            }
            _ if !b.is_empty() => {
                let i = rng.below(b.len());
                let at = rng.below(v.len() + 1);
                v.truncate(at);
                v.extend_from_slice(&b[i..]);
            }
            _ => {}
        }
        v.truncate(4096);
    }
    v
}

/// Run `check` on every corpus input, then on `mutations` mutants, on a thread with a big stack
/// (serde_json's oracle recurses on deep documents).
fn replay(target: &'static str, check: fn(&[u8]), mutations: usize) {
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            let inputs = corpus(target);
            assert!(inputs.len() >= 20, "corpus of {target} too small");
            for input in &inputs {
                check(input);
            }
            let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
            for _ in 0..mutations {
                let a = &inputs[rng.below(inputs.len())];
                let b = &inputs[rng.below(inputs.len())];
                check(&mutate(&mut rng, a, b));
            }
        })
        .unwrap()
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e));
}

#[test]
fn shrink_json_corpus_and_mutants() {
    replay("shrink_json", checks::shrink_json, 20_000);
}

#[test]
fn history_corpus_and_mutants() {
    replay("history", checks::history, 2_000);
}

#[test]
fn compaction_on_the_history_seeds_and_mutants() {
    // The history seeds are byte streams like any other: the compaction decoder reads them
    // its own way (well-formed agent histories with thinking, every wire format).
    replay("history", checks::compaction, 4_000);
}

/// The long run the fuzzing report counts: `CONTEXTFOLD_FUZZ_CASES` mutants (default 10^6) of
/// the seeds through `checks::compaction` and `checks::history`, any case slower than 2 s
/// counted as a hang. Run: `CONTEXTFOLD_FUZZ_CASES=1000000 cargo test --release --locked
/// --test fuzz_corpus -- --ignored --nocapture long_run`.
#[test]
#[ignore]
fn long_run_counts_cases_panics_and_hangs() {
    let cases: usize = std::env::var("CONTEXTFOLD_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            let inputs = corpus("history");
            let mut rng = Rng(0x2545_f491_4f6c_dd1d);
            let mut slowest = std::time::Duration::ZERO;
            let start = std::time::Instant::now();
            for k in 0..cases {
                let a = &inputs[rng.below(inputs.len())];
                let b = &inputs[rng.below(inputs.len())];
                let input = mutate(&mut rng, a, b);
                let t = std::time::Instant::now();
                checks::compaction(&input);
                if k % 8 == 0 {
                    checks::history(&input);
                }
                let dt = t.elapsed();
                slowest = slowest.max(dt);
                assert!(dt.as_secs() < 2, "hang: case {k} took {dt:?}: {input:?}");
            }
            println!(
                "fuzz long run: {cases} compaction cases ({} history cases), 0 panics, 0 invalid outputs, 0 hangs; slowest case {slowest:?}; {:?} in all",
                cases.div_ceil(8),
                start.elapsed()
            );
        })
        .unwrap()
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e));
}
