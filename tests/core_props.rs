//! Property tests of the estimator's building blocks: no input makes them panic, the vector
//! text classifier equals the scalar one, and costs grow with content.

use std::borrow::Cow;

use contextfold::digest::{digest, DigestOptions};
use contextfold::estimate::Estimator;
use contextfold::identifier_index::Collector;
use contextfold::image::{dims_of_base64, dims_of_bytes};
use contextfold::image_tokens::{image_tokens, rule_for};
use contextfold::message::{Content, Detail, Message, Part, ToolCall};
use contextfold::provider::Provider;
use contextfold::shell_line;
use contextfold::text_stats::{text_tokens, TextWeights};
use proptest::prelude::*;

const PROVIDERS: [Provider; 5] = [
    Provider::OpenAI,
    Provider::Anthropic,
    Provider::Gemini,
    Provider::Ollama,
    Provider::OpenAICompatible,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn header_parsing_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = dims_of_bytes(&bytes);
        let text = String::from_utf8_lossy(&bytes);
        let _ = dims_of_base64(&text);
    }

    #[test]
    fn crafted_headers_with_random_tails_never_panic(
        prefix in prop_oneof![
            Just(b"\x89PNG\r\n\x1a\n".to_vec()),
            Just(vec![0xFF, 0xD8, 0xFF]),
            Just(b"GIF89a".to_vec()),
            Just(b"RIFF\0\0\0\0WEBPVP8X".to_vec()),
            Just(b"RIFF\0\0\0\0WEBPVP8L".to_vec()),
            Just(b"RIFF\0\0\0\0WEBPVP8 ".to_vec()),
        ],
        tail in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        let mut b = prefix;
        b.extend(tail);
        if let Some(d) = dims_of_bytes(&b) {
            prop_assert!(d.width > 0 && d.height > 0);
            for p in PROVIDERS {
                let t = image_tokens(rule_for(p, "gpt-4o"), Some(d), Detail::High);
                prop_assert!(t <= 10_000);
            }
        }
    }

    #[test]
    fn text_estimate_is_finite_and_positive(s in any::<String>()) {
        let t = text_tokens(s.as_bytes(), &TextWeights::O200K);
        prop_assert!(t.is_finite());
        prop_assert!(s.is_empty() == (t == 0.0));
    }

    #[test]
    fn appending_a_tool_call_never_lowers_a_message(
        text in "[a-z ]{0,300}",
        id in "call_[A-Za-z0-9]{5,24}",
        args in "\\{\"[a-z]{1,8}\": \"[a-z0-9/]{0,40}\"\\}",
    ) {
        for p in PROVIDERS {
            let e = Estimator::new(p, "");
            let mut m = Message::empty("assistant");
            m.content = Content::Text(Cow::Borrowed(&text));
            let before = e.message(&m);
            m.tool_calls.push(ToolCall { id: &id, name: "read_file", arguments: Cow::Borrowed(&args) });
            prop_assert!(e.message(&m) > before);
        }
    }

    #[test]
    fn a_tool_result_costs_at_least_its_text(body in "[ -~]{1,400}") {
        for p in PROVIDERS {
            let e = Estimator::new(p, "");
            let mut plain = Message::empty("user");
            plain.content = Content::Text(Cow::Borrowed(&body));
            let mut result = Message::empty("user");
            result.content = Content::Parts(vec![Part::ToolResult {
                tool_use_id: "toolu_1",
                is_error: false,
                content: vec![Part::Text(Cow::Borrowed(&body))],
                name: None,
            }]);
            prop_assert!(e.message(&result) >= e.message(&plain));
        }
    }

    /// A shell command line and its output are read without a panic, whatever their bytes
    /// (quotes, escapes before multi-byte characters, separators), and a line whose
    /// programs all print files names each of them.
    #[test]
    fn a_shell_line_is_read_whatever_it_holds(
        cmd in "(cat|grep|sed|git|diff|cd|ls|X=1|[a-z]{1,5}|[ |&;'\"\\\\\n<>(){}=/:!]|é|→){0,40}",
        output in any::<String>(),
    ) {
        if let Some(progs) = shell_line::printers(&cmd) {
            prop_assert!(!progs.is_empty());
            let _ = shell_line::has_diagnostic(&output, &progs);
        }
        let _ = shell_line::programs(&cmd);
        let _ = shell_line::reads_only(&cmd);
    }

    /// A previous summary is merged whatever its lines hold (calls and errors with or without
    /// an outcome or a return code, the open item of a pending command, clip marks and
    /// characters of any width), with a span that opens on a text agent's observation or not,
    /// without a panic and within the room (as the history prices a summary: read whole).
    #[test]
    fn a_previous_summary_is_merged_whatever_its_lines_hold(
        lines in proptest::collection::vec(
            r"(- \$ [a-zé日🙂 '…]{0,30}( -> (ok|error): (rc=-?[0-9]{1,3}: )?[a-zé日🙂 …:]{0,60})?|- ran `\$ [a-zé …]{0,20}`; its output is in the messages kept after this summary|- [a-z]{1,8}\([a-z=]{0,10}\) -> (ok|error)[a-zé… ]{0,20}|## (Tool calls|Errors|Open items|User requests|Last state)|[a-zé…]{0,20})",
            0..24,
        ),
        observation in r"(<returncode>[0-9]</returncode>\n)?[a-zé日🙂 …\n]{0,80}",
        max_tokens in 40u64..600,
    ) {
        let previous = format!("Earlier conversation folded by contextfold (9 messages).\n{}", lines.join("\n"));
        let msgs = vec![
            Message::text("user", observation.as_str()),
            Message::text("assistant", "THOUGHT: next.\n\n```bash\nls\n```"),
        ];
        let est = Estimator::new(Provider::OpenAI, "gpt-4o");
        let out = digest(&msgs, &est, &DigestOptions { max_tokens, previous: Some(&previous), instructions: None });
        prop_assert!(est.summary_text(&out) <= max_tokens as f64 + 1.0, "{} > {max_tokens}: {out}", est.summary_text(&out));
    }

    /// The identifier index reads any text without a panic: the library's stand-ins and
    /// clip marks among characters of any width (a search back from a marker split one).
    #[test]
    fn the_index_reads_any_text_around_the_librarys_stand_ins(
        text in r"(\[~12 tokens cut\]|\[\.\.\. ~2,148 tokens cut from the middle \.\.\.\]| tokens\)\]|\[folded |\[output pruned to save context: |…|é|日本|🙂|HAT1[0-9]{2}|[a-z]{1,6}|[ \n\\\[\]:,.~-]|[0-9]{1,4}){0,40}",
    ) {
        let mut c = Collector::default();
        c.scan(&text, 1.0, 0.0);
        for id in c.ranked() {
            prop_assert!(!id.text.is_empty());
        }
    }
}
