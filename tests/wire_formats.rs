//! The five wire formats, read and edited by the core on `serde_json` values.
//!
//! One dialogue script is rendered in each format (OpenAI chat, OpenAI Responses, Anthropic,
//! Gemini, Bedrock). Table tests pin where each format's edits land; property tests check, for
//! random scripts in every format, that the pruned history is the same format (no new key on any
//! item or part, images become that format's text part), never larger in bytes or estimated
//! tokens, every call still paired with its result, every arguments payload valid JSON.

use contextfold::estimate::{Estimator, RequestExtras};
use contextfold::message::{Format, Message, Part};
use contextfold::provider::Provider;
use contextfold::prune::{plan, Edit, PruneOptions, Step};
use contextfold::wire::{detect, read_history};
use proptest::prelude::*;
use serde_json::{json, Value};

const FORMATS: [Format; 5] = [
    Format::OpenAIChat,
    Format::OpenAIResponses,
    Format::Anthropic,
    Format::Gemini,
    Format::Bedrock,
];

// A 640x480 PNG header (the size is all the pruner reads), padded to a realistic payload.
fn png_base64(pad: usize) -> String {
    format!(
        "iVBORw0KGgoAAAANSUhEUgAAAoAAAAHgCAYAAAA1{}",
        "A".repeat(pad)
    )
}

/// One step of a dialogue, independent of the format.
#[derive(Debug, Clone)]
enum Turn {
    User(String),
    Assistant(String),
    /// Parallel calls `(id, name, arguments object)` and then their results, in order.
    Calls(Vec<(String, String, Value)>, Vec<String>),
    /// A user message with a text and an image of `pad` extra base64 characters.
    Image(usize),
}

fn text_part(format: Format, text: &str) -> Value {
    match format {
        Format::OpenAIResponses => json!({"type": "input_text", "text": text}),
        Format::Gemini | Format::Bedrock => json!({"text": text}),
        _ => json!({"type": "text", "text": text}),
    }
}

/// The dialogue in one wire format.
fn render(format: Format, turns: &[Turn]) -> Vec<Value> {
    let user_role = "user";
    let model_role = if format == Format::Gemini {
        "model"
    } else {
        "assistant"
    };
    let message = |role: &str, text: &str| -> Value {
        match format {
            Format::Gemini => json!({"role": role, "parts": [{"text": text}]}),
            Format::Bedrock => json!({"role": role, "content": [{"text": text}]}),
            _ => json!({"role": role, "content": text}),
        }
    };
    let mut out = Vec::new();
    for t in turns {
        match t {
            Turn::User(s) => out.push(message(user_role, s)),
            Turn::Assistant(s) => out.push(message(model_role, s)),
            Turn::Image(pad) => {
                let b64 = png_base64(*pad);
                let image = match format {
                    Format::OpenAIChat => {
                        json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{b64}")}})
                    }
                    Format::OpenAIResponses => {
                        json!({"type": "input_image", "image_url": format!("data:image/png;base64,{b64}")})
                    }
                    Format::Anthropic => {
                        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64}})
                    }
                    Format::Gemini => json!({"inlineData": {"mimeType": "image/png", "data": b64}}),
                    _ => json!({"image": {"format": "png", "source": {"bytes": b64}}}),
                };
                let key = if format == Format::Gemini {
                    "parts"
                } else {
                    "content"
                };
                out.push(
                    json!({"role": user_role, key: [text_part(format, "look at this"), image]}),
                );
            }
            Turn::Calls(calls, results) => match format {
                Format::OpenAIChat => {
                    let tc: Vec<Value> = calls
                        .iter()
                        .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}))
                        .collect();
                    out.push(json!({"role": "assistant", "content": null, "tool_calls": tc}));
                    for ((id, _, _), r) in calls.iter().zip(results) {
                        out.push(json!({"role": "tool", "tool_call_id": id, "content": r}));
                    }
                }
                Format::OpenAIResponses => {
                    for (id, name, args) in calls {
                        out.push(json!({"type": "function_call", "call_id": id, "name": name, "arguments": args.to_string()}));
                    }
                    for ((id, _, _), r) in calls.iter().zip(results) {
                        out.push(
                            json!({"type": "function_call_output", "call_id": id, "output": r}),
                        );
                    }
                }
                Format::Anthropic => {
                    let uses: Vec<Value> = calls
                        .iter()
                        .map(|(id, name, args)| json!({"type": "tool_use", "id": id, "name": name, "input": args}))
                        .collect();
                    out.push(json!({"role": "assistant", "content": uses}));
                    let res: Vec<Value> = calls
                        .iter()
                        .zip(results)
                        .map(|((id, _, _), r)| json!({"type": "tool_result", "tool_use_id": id, "content": r}))
                        .collect();
                    out.push(json!({"role": "user", "content": res}));
                }
                Format::Gemini => {
                    let fc: Vec<Value> = calls
                        .iter()
                        .map(|(id, name, args)| json!({"functionCall": {"id": id, "name": name, "args": args}}))
                        .collect();
                    out.push(json!({"role": "model", "parts": fc}));
                    let fr: Vec<Value> = calls
                        .iter()
                        .zip(results)
                        .map(|((id, name, _), r)| json!({"functionResponse": {"id": id, "name": name, "response": {"result": r}}}))
                        .collect();
                    out.push(json!({"role": "user", "parts": fr}));
                }
                _ => {
                    let uses: Vec<Value> = calls
                        .iter()
                        .map(|(id, name, args)| json!({"toolUse": {"toolUseId": id, "name": name, "input": args}}))
                        .collect();
                    out.push(json!({"role": "assistant", "content": uses}));
                    let res: Vec<Value> = calls
                        .iter()
                        .zip(results)
                        .map(|((id, _, _), r)| json!({"toolResult": {"toolUseId": id, "content": [{"text": r}]}}))
                        .collect();
                    out.push(json!({"role": "user", "content": res}));
                }
            },
        }
    }
    out
}

/// Apply edits the way the bindings do: assign the value at the path (the path must exist).
fn apply(history: &[Value], edits: &[Edit]) -> Vec<Value> {
    let mut out = history.to_vec();
    for e in edits {
        let (last, init) = e.path.split_last().expect("a path has a step");
        let mut node = &mut out[e.message];
        for step in init {
            node = match step {
                Step::Key(k) => node
                    .get_mut(*k)
                    .unwrap_or_else(|| panic!("no key {k} in {e:?}")),
                Step::Index(i) => node
                    .get_mut(*i)
                    .unwrap_or_else(|| panic!("no index {i} in {e:?}")),
            };
        }
        let value: Value = serde_json::from_str(&e.value).expect("an edit's value is JSON");
        match last {
            Step::Key(k) => {
                let obj = node.as_object_mut().expect("a key step into an object");
                assert!(obj.contains_key(*k), "edit adds key {k}: {e:?}");
                obj.insert((*k).to_string(), value);
            }
            Step::Index(i) => node[*i] = value,
        }
    }
    out
}

fn bytes(h: &[Value]) -> usize {
    serde_json::to_string(h).unwrap().len()
}

fn read(h: &[Value]) -> Vec<Message<'_>> {
    h.iter()
        .map(|m| contextfold::wire::read_message(&m).expect("a valid message"))
        .collect()
}

fn provider_of(format: Format) -> Provider {
    match format {
        Format::Anthropic => Provider::Anthropic,
        Format::Gemini => Provider::Gemini,
        _ => Provider::OpenAI,
    }
}

/// Keys a payload holds (a tool's arguments or response), not the format: not checked.
const PAYLOAD_KEYS: [&str; 5] = ["input", "args", "response", "arguments", "output"];

fn is_image_part(v: &Value) -> bool {
    let t = v.get("type").and_then(Value::as_str);
    matches!(t, Some("image_url" | "input_image" | "image"))
        || v.get("inlineData").is_some()
        || v.get("image").is_some()
}

/// Every object in `new` has only keys its counterpart in `old` has, except inside payloads,
/// and an image part may have become the format's text part.
fn no_new_keys(format: Format, old: &Value, new: &Value, path: &str) -> Result<(), String> {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            if is_image_part(old) && !is_image_part(new) {
                let want = text_part(format, "");
                let keys: Vec<&String> = n.keys().collect();
                let want_keys: Vec<&String> = want.as_object().unwrap().keys().collect();
                return if keys == want_keys && n.get("type") == want.get("type") {
                    Ok(())
                } else {
                    Err(format!("{path}: image became {new}"))
                };
            }
            for (k, v) in n {
                let Some(ov) = o.get(k) else {
                    return Err(format!("{path}: new key {k}"));
                };
                if !PAYLOAD_KEYS.contains(&k.as_str()) {
                    no_new_keys(format, ov, v, &format!("{path}.{k}"))?;
                }
            }
            Ok(())
        }
        (Value::Array(o), Value::Array(n)) => {
            if o.len() != n.len() {
                return Err(format!("{path}: list length {} -> {}", o.len(), n.len()));
            }
            for (i, (a, b)) in o.iter().zip(n).enumerate() {
                no_new_keys(format, a, b, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        // Anthropic accepts a string where a tool result's list of blocks was.
        (Value::Array(_), Value::String(_)) if path.ends_with(".content") => Ok(()),
        (a, b) if std::mem::discriminant(a) == std::mem::discriminant(b) => Ok(()),
        (a, b) => Err(format!("{path}: {a} became {b}")),
    }
}

fn call_and_result_ids(msgs: &[Message<'_>]) -> (Vec<String>, Vec<String>) {
    let mut calls: Vec<String> = msgs
        .iter()
        .flat_map(|m| m.call_ids())
        .map(String::from)
        .collect();
    let mut results: Vec<String> = msgs
        .iter()
        .flat_map(|m| m.result_ids())
        .map(String::from)
        .collect();
    calls.sort();
    results.sort();
    (calls, results)
}

/// Prune `history` (a rendering in `format`) and check every promise of the edit contract.
fn check_prune(
    format: Format,
    history: &[Value],
    opt: &PruneOptions,
) -> Result<Vec<Value>, String> {
    let est = Estimator::new(provider_of(format), "");
    let views = read(history);
    let p = plan(&views, &est, opt);
    let out = apply(history, &p.edits);
    let new_views = read(&out);
    // The edits never make a history look like another format. They may remove the only
    // thing that showed its format (a chat image replaced by a text part): then it shows none.
    let (before, after) = (detect(&views), detect(&new_views));
    if after != before && after != Format::Unknown {
        return Err(format!(
            "format {:?} -> {:?}",
            detect(&views),
            detect(&new_views)
        ));
    }
    for (i, (a, b)) in history.iter().zip(&out).enumerate() {
        no_new_keys(format, a, b, &format!("[{i}]"))?;
        if i >= p.protected_from && a != b {
            return Err(format!("protected message {i} changed"));
        }
    }
    // (An image's placeholder may be longer than an image given by URL or file id, which costs
    // hundreds of tokens all the same: `wire::edit::image_replaced`. Every other edit shrinks.)
    let images = p.edits.iter().any(|e| e.value.contains("[image omitted"));
    if bytes(&out) > bytes(history) && !images {
        return Err(format!("bytes grew {} -> {}", bytes(history), bytes(&out)));
    }
    let extras = RequestExtras::default();
    let (before, after) = (est.total(&views, &extras), est.total(&new_views, &extras));
    if after > before {
        return Err(format!("tokens grew {before} -> {after}"));
    }
    if call_and_result_ids(&views) != call_and_result_ids(&new_views) {
        return Err("calls and results no longer pair".into());
    }
    for m in &new_views {
        let args = m
            .tool_calls
            .iter()
            .map(|c| &c.arguments)
            .chain(m.parts().iter().filter_map(|p| match p {
                Part::ToolUse(c) => Some(&c.arguments),
                _ => None,
            }));
        for a in args {
            if serde_json::from_str::<Value>(a).is_err() {
                return Err(format!("arguments not JSON: {a}"));
            }
        }
    }
    Ok(out)
}

fn sample_turns() -> Vec<Turn> {
    let big = "line of test output with some words in it\n".repeat(400);
    let args = json!({"path": "src/app.py", "content": "x = 1\n".repeat(800)});
    vec![
        Turn::User("fix the failing test".into()),
        Turn::Calls(
            vec![
                ("c1".into(), "run_tests".into(), json!({"path": "tests"})),
                ("c2".into(), "write_file".into(), args),
            ],
            vec![big.clone(), "ok".into()],
        ),
        Turn::Image(3_000),
        Turn::Assistant("I see the failure.".into()),
        Turn::Calls(
            vec![("c3".into(), "run_tests".into(), json!({"path": "tests"}))],
            vec![big.replace("words", "other words")],
        ),
        Turn::User("thanks".into()),
        Turn::Assistant("done".into()),
        Turn::User("bye".into()),
    ]
}

fn tight() -> PruneOptions {
    PruneOptions {
        protect_tail_tokens: 10,
        protect_first_n: 1,
        arguments_max_chars: 500,
        ..PruneOptions::default()
    }
}

#[test]
fn every_format_is_detected_and_read_into_the_same_views() {
    let turns = sample_turns();
    let mut costs = Vec::new();
    for f in FORMATS {
        let h = render(f, &turns);
        let views = read(&h);
        assert_eq!(detect(&views), f, "{f:?}");
        let (calls, results) = call_and_result_ids(&views);
        assert_eq!(calls, ["c1", "c2", "c3"], "{f:?}");
        assert_eq!(results, ["c1", "c2", "c3"], "{f:?}");
        let images = views
            .iter()
            .flat_map(|m| m.parts())
            .filter(|p| matches!(p, Part::Image(_)))
            .count();
        assert_eq!(images, 1, "{f:?}");
        costs.push(Estimator::new(Provider::OpenAI, "").total(&views, &RequestExtras::default()));
    }
    // The same dialogue costs about the same in every shape (envelopes differ a little).
    let (lo, hi) = (costs.iter().min().unwrap(), costs.iter().max().unwrap());
    assert!(*hi as f64 <= *lo as f64 * 1.15, "{costs:?}");
}

#[test]
fn edits_land_where_each_format_keeps_the_value() {
    let turns = sample_turns();
    // (format, the big result's path, what the replacement looks like)
    let expect: [(Format, Value); 5] = [
        (Format::OpenAIChat, json!(["tool", "content", "string"])),
        (
            Format::OpenAIResponses,
            json!(["function_call_output", "output", "string"]),
        ),
        (
            Format::Anthropic,
            json!(["user", "content[0].content", "string"]),
        ),
        (
            Format::Gemini,
            json!(["user", "parts[0].functionResponse.response", "object"]),
        ),
        (
            Format::Bedrock,
            json!(["user", "content[0].toolResult.content", "list"]),
        ),
    ];
    for (f, _) in &expect {
        let h = render(*f, &turns);
        let out = check_prune(*f, &h, &tight()).unwrap_or_else(|e| panic!("{f:?}: {e}"));
        let s = serde_json::to_string(&out).unwrap();
        assert!(
            s.contains("run_tests returned"),
            "{f:?}: no placeholder in {s}"
        );
        assert!(s.contains("[image omitted: 640x480]"), "{f:?}: image kept");
        assert!(
            bytes(&out) < bytes(&h) / 3,
            "{f:?}: {} -> {}",
            bytes(&h),
            bytes(&out)
        );
        match f {
            Format::OpenAIChat => {
                assert!(out[2]["content"]
                    .as_str()
                    .unwrap()
                    .contains("run_tests returned"));
                let args = out[1]["tool_calls"][1]["function"]["arguments"]
                    .as_str()
                    .unwrap();
                assert!(
                    args.chars().count() <= 500
                        && serde_json::from_str::<Value>(args).unwrap().is_object()
                );
                assert_eq!(
                    out[4]["content"][1],
                    json!({"type": "text", "text": "[image omitted: 640x480]"})
                );
            }
            Format::OpenAIResponses => {
                assert_eq!(out[3]["type"], "function_call_output");
                assert!(out[3]["output"]
                    .as_str()
                    .unwrap()
                    .contains("run_tests returned"));
                assert!(out[3].get("content").is_none());
                let args = out[2]["arguments"].as_str().unwrap();
                assert!(args.chars().count() <= 500 && serde_json::from_str::<Value>(args).is_ok());
                assert_eq!(
                    out[5]["content"][1],
                    json!({"type": "input_text", "text": "[image omitted: 640x480]"})
                );
            }
            Format::Anthropic => {
                assert!(out[2]["content"][0]["content"]
                    .as_str()
                    .unwrap()
                    .contains("run_tests returned"));
                assert!(out[1]["content"][1]["input"].is_object());
                assert_eq!(
                    out[3]["content"][1],
                    json!({"type": "text", "text": "[image omitted: 640x480]"})
                );
            }
            Format::Gemini => {
                let r = &out[2]["parts"][0]["functionResponse"]["response"];
                assert!(
                    r["output"].as_str().unwrap().contains("run_tests returned"),
                    "{r}"
                );
                assert!(out[1]["parts"][1]["functionCall"]["args"].is_object());
                assert_eq!(
                    out[3]["parts"][1],
                    json!({"text": "[image omitted: 640x480]"})
                );
            }
            _ => {
                let c = &out[2]["content"][0]["toolResult"]["content"];
                assert!(
                    c[0]["text"]
                        .as_str()
                        .unwrap()
                        .contains("run_tests returned"),
                    "{c}"
                );
                assert_eq!(c.as_array().unwrap().len(), 1);
                assert!(out[1]["content"][1]["toolUse"]["input"].is_object());
                assert_eq!(
                    out[3]["content"][1],
                    json!({"text": "[image omitted: 640x480]"})
                );
            }
        }
    }
}

#[test]
fn gemini_snake_case_parts_are_edited_under_their_own_keys() {
    let big = "output line\n".repeat(2_000);
    let h = vec![
        json!({"role": "user", "parts": [{"text": "task"}]}),
        json!({"role": "model", "parts": [{"function_call": {"name": "ls", "args": {"p": "."}}}]}),
        json!({"role": "user", "parts": [{"function_response": {"name": "ls", "response": {"result": big}}}]}),
        json!({"role": "model", "parts": [{"text": "a"}]}),
        json!({"role": "user", "parts": [{"text": "b"}]}),
        json!({"role": "model", "parts": [{"text": "c"}]}),
    ];
    let views = read(&h);
    assert_eq!(views[2].wire, Format::GeminiSnake);
    let out = check_prune(Format::Gemini, &h, &tight()).unwrap();
    assert!(
        out[2]["parts"][0]["function_response"]["response"]["output"]
            .as_str()
            .unwrap()
            .contains("ls returned")
    );
}

#[test]
fn an_image_is_replaced_where_its_placeholder_saves_tokens_whatever_its_bytes() {
    // A Responses image given by file id is smaller in bytes than the text part that would
    // replace it, and costs hundreds of tokens: the budget is in tokens, so it is replaced, as
    // an image by a long URL is. (A test of bytes kept a URL image's "[image omitted]" where
    // its recoverable placeholder was longer than the URL, and the URL was lost to recall.)
    let history = |image: Value| {
        vec![
            json!({"role": "user", "content": "task"}),
            json!({"role": "user", "content": [image]}),
            json!({"role": "assistant", "content": "a"}),
            json!({"role": "user", "content": "b"}),
            json!({"role": "assistant", "content": "c"}),
        ]
    };
    let est = Estimator::new(Provider::OpenAI, "");
    let h = history(json!({"type": "input_image", "file_id": "file-1"}));
    let p = plan(&read(&h), &est, &tight());
    assert_eq!(p.edits.len(), 1, "{:?}", p.edits);
    check_prune(Format::OpenAIResponses, &h, &tight()).unwrap();
    let long = format!("https://example.com/{}.png", "a".repeat(200));
    let h = history(json!({"type": "input_image", "image_url": long}));
    let p = plan(&read(&h), &est, &tight());
    assert_eq!(p.edits.len(), 1);
    check_prune(Format::OpenAIResponses, &h, &tight()).unwrap();
}

#[test]
fn custom_tool_calls_and_server_tool_results_are_never_rewritten() {
    let free_text = "*** Begin Patch\n".to_string() + &"+ line\n".repeat(1_000);
    let h = vec![
        json!({"role": "user", "content": "task"}),
        json!({"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": free_text}),
        json!({"type": "custom_tool_call_output", "call_id": "c1", "output": "done"}),
        json!({"role": "assistant", "content": [{"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": "x"}}]}),
        json!({"role": "user", "content": [{"type": "web_search_tool_result", "tool_use_id": "s1", "content": {"type": "web_search_tool_result_error", "error_code": "unavailable", "pad": "x".repeat(5_000)}}]}),
        json!({"role": "assistant", "content": "a"}),
        json!({"role": "user", "content": "b"}),
        json!({"role": "assistant", "content": "c"}),
    ];
    let views = read(&h);
    let p = plan(&views, &Estimator::new(Provider::OpenAI, ""), &tight());
    assert!(p.edits.is_empty(), "{:?}", p.edits);
}

#[test]
fn errors_name_the_message_and_the_field() {
    let h = json!([
        {"role": "user", "content": "ok"},
        {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": 5}}]},
    ]);
    let err = read_history(&&h).unwrap_err();
    assert_eq!(err.index, 1);
    assert!(
        matches!(err.error, contextfold::wire::ReadError::Invalid { ref field, .. } if field == "tool_calls[0].function.name")
    );
}

// --- property tests --------------------------------------------------------------------------

fn turn() -> impl Strategy<Value = Turn> {
    let text = "[a-z \\n\"\\\\é]{0,40}".prop_map(String::from);
    prop_oneof![
        2 => text.clone().prop_map(Turn::User),
        2 => text.clone().prop_map(Turn::Assistant),
        1 => (0usize..4_000).prop_map(Turn::Image),
        4 => (1usize..4, 0usize..3_000, 1usize..60, text).prop_map(|(k, arg_len, repeat, word)| {
            let calls = (0..k)
                .map(|j| {
                    let args = json!({"path": format!("f{j}.py"), "body": word.repeat(arg_len / (word.len() + 1) + 1), "n": j});
                    (String::new(), format!("tool_{j}"), args)
                })
                .collect();
            let results = (0..k).map(|j| format!("{word}{j} ").repeat(repeat * 20)).collect();
            Turn::Calls(calls, results)
        }),
    ]
}

/// Unique call ids across the script.
fn number(mut turns: Vec<Turn>) -> Vec<Turn> {
    let mut n = 0;
    for t in &mut turns {
        if let Turn::Calls(calls, _) = t {
            for c in calls {
                c.0 = format!("call_{n}");
                n += 1;
            }
        }
    }
    turns
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn pruning_keeps_every_format_valid_and_never_grows(
        turns in prop::collection::vec(turn(), 0..14),
        budget in 0u64..3_000,
        max_args in 64usize..1_500,
        max_result in 20u32..400,
        dedupe in any::<bool>(),
    ) {
        let mut script = vec![Turn::User("the task".into())];
        script.extend(number(turns));
        let opt = PruneOptions {
            protect_tail_tokens: budget,
            arguments_max_chars: max_args,
            tool_result_max_tokens: max_result,
            dedupe,
            ..PruneOptions::default()
        };
        for f in FORMATS {
            let h = render(f, &script);
            if let Err(e) = check_prune(f, &h, &opt) {
                prop_assert!(false, "{:?}: {}", f, e);
            }
        }
    }
}

/// A text agent's long observation (a user message of plain text) is rewritten where each
/// format keeps a message's text: a string stays a string, text blocks become one text (a string
/// where the format allows one, else that format's one-text-part list); a message holding
/// anything but text, and a tool result, are never rewritten by a plain-text change.
#[test]
fn plain_text_change_lands_where_each_format_keeps_the_text() {
    use contextfold::wire::edit::Change;
    use contextfold::wire::write_edit as write;
    let long = "ls -la output line\n".repeat(200);
    let change = Change::Text {
        text: "[observation pruned]".into(),
    };
    let s = json!("[observation pruned]");
    let one = json!([{"text": "[observation pruned]"}]);
    type Case<'a> = (Value, Format, Option<(&'a str, Value)>);
    let cases: Vec<Case> = vec![
        (
            json!({"role": "user", "content": long}),
            Format::OpenAIChat,
            Some(("content", s.clone())),
        ),
        // A plain text message shows no format: its string content is writable all the same.
        (
            json!({"role": "user", "content": long}),
            Format::Unknown,
            Some(("content", s.clone())),
        ),
        (
            json!({"role": "user", "content": long}),
            Format::Anthropic,
            Some(("content", s.clone())),
        ),
        (
            json!({"role": "user", "content": [{"type": "text", "text": long}, {"type": "text", "text": long}]}),
            Format::Anthropic,
            Some(("content", s.clone())),
        ),
        (
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": long}]}),
            Format::OpenAIResponses,
            Some(("content", s.clone())),
        ),
        (
            json!({"role": "user", "parts": [{"text": long}]}),
            Format::Gemini,
            Some(("parts", one.clone())),
        ),
        (
            json!({"role": "user", "content": [{"text": long}]}),
            Format::Bedrock,
            Some(("content", one.clone())),
        ),
        (
            json!({"role": "user", "content": [{"type": "text", "text": long},
                {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}]}),
            Format::Anthropic,
            None,
        ),
        (
            json!({"type": "function_call_output", "call_id": "c1", "output": long}),
            Format::OpenAIResponses,
            None,
        ),
    ];
    for (msg, format, expected) in cases {
        let h = vec![msg];
        let mut views = read(&h);
        views[0].wire = format;
        let edit = write(0, &views[0], &change);
        assert_eq!(edit.is_some(), expected.is_some(), "{format:?} {}", h[0]);
        if let (Some(e), Some((key, value))) = (edit, expected) {
            assert_eq!(
                e.path,
                [Step::Key(match key {
                    "parts" => "parts",
                    _ => "content",
                })]
            );
            let out = apply(&h, &[e]);
            assert_eq!(out[0][key], value);
            assert!(bytes(&out) < bytes(&h));
        }
    }
}

#[test]
fn untyped_text_blocks_are_bedrock_in_content_and_gemini_in_parts() {
    let one = |m: Value| detect(&read(std::slice::from_ref(&m)));
    assert_eq!(
        one(json!({"role": "user", "content": [{"text": "hi"}]})),
        Format::Bedrock
    );
    assert_eq!(
        one(json!({"role": "user", "parts": [{"text": "hi"}]})),
        Format::Gemini
    );
    assert_eq!(
        one(
            json!({"role": "user", "parts": [{"text": "hi"}, {"inline_data": {"mime_type": "text/plain", "data": "aGk="}}]})
        ),
        Format::GeminiSnake
    );
    // Typed text parts are shared by chat and Anthropic: nothing specific.
    assert_eq!(
        one(json!({"role": "user", "content": [{"type": "text", "text": "hi"}]})),
        Format::Unknown
    );
    assert_eq!(detect(&[]), Format::Unknown);
}
