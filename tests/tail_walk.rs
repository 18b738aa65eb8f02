//! Property tests of the tail walk and the prune plan as pure functions (no Python).
//!
//! `find_tail_start(costs, legal, opt)` with `head` = the first legal cut >= protect_first_n:
//! - P1 the start is a legal cut in `head..=n`;
//! - P2 floor: when something is left to summarize (`start > head`) the tail has >= min_tail;
//! - P3 budget first: every longer legal tail (a legal `s` in `head+1..start`) costs more than
//!   the budget, so the walk never protects less than the budget allows;
//! - P4 ceiling: the tail costs more than `budget * soft_ceiling` only when no shorter legal
//!   tail keeps the floor (the overshoot is forced by one message or one tool group);
//! - P5 something is summarized whenever a legal cut leaves both a middle and the floor.
//!
//! `legal_cuts` equals a brute-force definition; the prune plan edits only `head..tail`, its
//! shrunk arguments parse and fit, and cache-aware plans edit a subset of the plain region.

use std::borrow::Cow;

use contextfold::estimate::Estimator;
use contextfold::message::{Content, Format, Message, Part, ToolCall};
use contextfold::provider::Provider;
use contextfold::prune::{plan, PruneOptions, Step as PathStep};
use contextfold::tail_walk::{find_tail_start, legal_cuts, TailOptions};
use proptest::prelude::*;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn check_walk(costs: &[u32], legal: &[bool], opt: &TailOptions) -> Result<usize, TestCaseError> {
    let n = costs.len();
    let start = find_tail_start(costs, legal, opt);
    let mut head = opt.protect_first_n.min(n);
    while !legal[head] {
        head += 1;
    }
    let cost = |s: usize| costs[s..].iter().map(|&c| u64::from(c)).sum::<u64>() as f64;
    let budget = opt.budget_tokens as f64;
    let ceiling = budget * opt.soft_ceiling;
    let floor = n.saturating_sub(opt.min_tail);
    // P1
    prop_assert!(
        head <= start && start <= n,
        "start {start} head {head} n {n}"
    );
    prop_assert!(legal[start], "start {start} is not a legal cut");
    if start > head {
        // P2
        prop_assert!(n - start >= opt.min_tail, "floor: tail of {}", n - start);
        // P3
        for (s, _) in legal
            .iter()
            .enumerate()
            .take(start)
            .skip(head + 1)
            .filter(|(_, &l)| l)
        {
            prop_assert!(
                cost(s) > budget,
                "a longer legal tail from {s} costs {} <= budget {budget} (start {start})",
                cost(s)
            );
        }
        // P4
        if cost(start) > ceiling {
            prop_assert!(
                !(start + 1..=floor).any(|s| legal[s]),
                "tail {} over the ceiling {ceiling} though a shorter legal tail exists",
                cost(start)
            );
        }
    } else {
        // P5
        prop_assert!(
            !(head + 1..=floor).any(|s| legal[s]),
            "nothing summarized though a legal cut in {}..={floor} exists",
            head + 1
        );
    }
    Ok(start)
}

fn options() -> impl Strategy<Value = TailOptions> {
    (0u64..5_000, 0usize..4, 1usize..6, 1.0f64..3.0).prop_map(|(b, h, m, c)| TailOptions {
        budget_tokens: b,
        protect_first_n: h,
        min_tail: m,
        soft_ceiling: c,
    })
}

proptest! {
    #![proptest_config(config(20_000))]

    /// Any costs and any set of legal cuts (the function's contract does not assume groups).
    #[test]
    fn walk_on_arbitrary_costs_and_cuts(
        (costs, legal) in (0usize..40).prop_flat_map(|n| (
            prop::collection::vec(prop_oneof![8 => 1u32..300, 1 => 300u32..20_000], n),
            prop::collection::vec(prop::bool::weighted(0.7), n),
        )),
        opt in options(),
    ) {
        let mut legal = legal;
        legal.push(true); // the end is always a legal cut
        check_walk(&costs, &legal, &opt)?;
    }
}

// --- histories made of message views ---------------------------------------------------------

#[derive(Debug, Clone)]
enum Step {
    Text {
        user: bool,
        len: usize,
    },
    /// Assistant tool calls (OpenAI `tool_calls` or Anthropic `tool_use`), their results after
    /// `gap` plain messages, some results possibly missing, and orphan results.
    Calls {
        anthropic: bool,
        k: usize,
        result_len: usize,
        gap: usize,
        drop_last: bool,
    },
    Orphan,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (any::<bool>(), 1usize..2_000).prop_map(|(user, len)| Step::Text { user, len }),
        4 => (any::<bool>(), 1usize..5, prop_oneof![4 => 1usize..1_500, 1 => 1_500usize..20_000],
              prop_oneof![5 => Just(0usize), 1 => 1usize..3], prop::bool::weighted(0.1))
            .prop_map(|(anthropic, k, result_len, gap, drop_last)| Step::Calls {
                anthropic, k, result_len, gap, drop_last,
            }),
        1 => Just(Step::Orphan),
    ]
}

/// Owned strings the views borrow from.
struct Store {
    ids: Vec<String>,
    text: String,
    args: String,
}

fn build<'a>(steps: &[Step], st: &'a Store) -> Vec<Message<'a>> {
    let text = |len: usize| &st.text[..len.min(st.text.len())];
    let mut msgs = vec![Message::text("system", "You are a coding agent.")];
    let mut next_id = 0usize;
    for s in steps {
        match *s {
            Step::Text { user, len } => {
                msgs.push(Message::text(
                    if user { "user" } else { "assistant" },
                    text(len),
                ));
            }
            Step::Orphan => {
                let mut r = Message::empty("tool");
                r.tool_call_id = Some(&st.ids[next_id]);
                r.content = Content::Text(Cow::Borrowed(text(50)));
                next_id += 1;
                msgs.push(r);
            }
            Step::Calls {
                anthropic,
                k,
                result_len,
                gap,
                drop_last,
            } => {
                let ids = &st.ids[next_id..next_id + k];
                next_id += k;
                let calls: Vec<ToolCall<'a>> = ids
                    .iter()
                    .map(|id| ToolCall {
                        id,
                        name: "read_file",
                        arguments: Cow::Borrowed(&st.args),
                    })
                    .collect();
                let mut a = Message::empty("assistant");
                a.wire = if anthropic {
                    Format::Anthropic
                } else {
                    Format::OpenAIChat
                };
                if anthropic {
                    a.content = Content::Parts(calls.into_iter().map(Part::ToolUse).collect());
                } else {
                    a.tool_calls = calls;
                }
                msgs.push(a);
                for _ in 0..gap {
                    msgs.push(Message::text("assistant", "thinking about it"));
                }
                let answered = if drop_last { k - 1 } else { k };
                if anthropic && answered > 0 {
                    let mut u = Message::empty("user");
                    u.wire = Format::Anthropic;
                    u.content = Content::Parts(
                        ids[..answered]
                            .iter()
                            .map(|id| Part::ToolResult {
                                tool_use_id: id,
                                is_error: false,
                                content: vec![Part::Text(Cow::Borrowed(text(result_len)))],
                                name: None,
                            })
                            .collect(),
                    );
                    msgs.push(u);
                } else {
                    for id in &ids[..answered] {
                        let mut r = Message::empty("tool");
                        r.wire = Format::OpenAIChat;
                        r.tool_call_id = Some(id);
                        r.content = Content::Text(Cow::Borrowed(text(result_len)));
                        msgs.push(r);
                    }
                }
            }
        }
    }
    msgs
}

fn store() -> &'static Store {
    static STORE: std::sync::OnceLock<Store> = std::sync::OnceLock::new();
    STORE.get_or_init(make_store)
}

fn make_store() -> Store {
    let line = "fn main() { println!(\"hello\"); } // some code and some words\n";
    Store {
        ids: (0..400).map(|i| format!("call_{i:04}")).collect(),
        text: line.repeat(20_000 / line.len() + 1),
        args: format!(
            "{{\"path\":\"/repo/src/lib.rs\",\"content\":\"{}\",\"line\":12}}",
            "x = 1\\n".repeat(150)
        ),
    }
}

/// Brute force: a cut at i is legal when no result at or after i answers a call before i.
fn brute_legal(msgs: &[Message<'_>]) -> Vec<bool> {
    let n = msgs.len();
    (0..=n)
        .map(|i| {
            !msgs[i..].iter().enumerate().any(|(j, m)| {
                m.result_ids().any(|rid| {
                    // The call answered is the latest one with that id before the result.
                    msgs[..i + j]
                        .iter()
                        .rposition(|c| c.call_ids().any(|cid| cid == rid))
                        .is_some_and(|c| c < i)
                })
            })
        })
        .collect()
}

proptest! {
    #![proptest_config(config(5_000))]

    #[test]
    fn walk_on_histories_and_prune_plan(
        steps in prop::collection::vec(step(), 0..30),
        opt in options(),
        provider in prop_oneof![Just(Provider::OpenAI), Just(Provider::Anthropic)],
        max_args in 64usize..3_000,
        block in prop_oneof![Just(0u64), 500u64..20_000],
    ) {
        let msgs = build(&steps, store());
        let legal = legal_cuts(&msgs);
        prop_assert_eq!(&legal, &brute_legal(&msgs));
        let est = Estimator::new(provider, "");
        let costs = est.each(&msgs);
        let start = check_walk(&costs, &legal, &opt)?;

        // The prune plan: same tail, edits only between the protected head and the tail.
        let popt = PruneOptions {
            protect_tail_tokens: opt.budget_tokens,
            protect_first_n: opt.protect_first_n,
            min_tail: opt.min_tail,
            soft_ceiling: opt.soft_ceiling,
            arguments_max_chars: max_args,
            tool_result_max_tokens: 100,
            cache_block_tokens: block,
            ..PruneOptions::default()
        };
        let p = plan(&msgs, &est, &popt);
        prop_assert_eq!(p.protected_from, start);
        let plain = plan(&msgs, &est, &PruneOptions { cache_block_tokens: 0, ..popt });
        for e in &p.edits {
            let index = e.message;
            prop_assert!(index >= opt.protect_first_n && index < start, "edit at {index}, tail {start}");
            let value: serde_json::Value = serde_json::from_str(&e.value).expect("edit values are JSON");
            let args = match (e.path.last(), &value) {
                (Some(PathStep::Key("arguments")), serde_json::Value::String(a)) => Some(a.clone()),
                (Some(PathStep::Key("input")), v) => Some(v.to_string()),
                _ => None,
            };
            if let Some(text) = args {
                prop_assert!(text.chars().count() <= max_args);
                prop_assert!(serde_json::from_str::<serde_json::Value>(&text).is_ok(), "{text}");
            }
            // Cache-aware edits are a subset of the plain plan's (blocks end at or before it).
            prop_assert!(plain.edits.contains(e), "cache-aware edit {e:?} not in the plain plan");
        }
    }
}
