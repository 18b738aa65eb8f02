"""The model decides the token family whatever the wire format (issue 12, part 1)."""

from __future__ import annotations

import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import contextfold as cf
from transcripts import LOCAL, SHARED, load_conversations, shared_available, swe_call_kwargs, swe_calls


@pytest.mark.parametrize(
    ("model", "family", "encoding"),
    [
        ("gpt-4o-mini-2024-07-18", "openai", "o200k_base"),
        ("ft:gpt-4o-mini-2024-07-18:org::abc123", "openai", "o200k_base"),
        ("azure/gpt-4-0613", "openai", "cl100k_base"),
        ("groq/openai/gpt-oss-120b", "openai", "o200k_harmony"),
        ("openrouter/google/gemini-2.0-flash-exp:free", "gemini", None),
        ("google/gemini-3-pro-preview", "gemini", None),
        ("vertex_ai/claude-3-5-sonnet@20240620", "anthropic", None),
        ("bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic", None),
        ("anthropic/claude-sonnet-4.5", "anthropic", None),
        ("claude-3-5-haiku-latest", "anthropic", None),
        ("together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo", "llama", None),
        ("ollama/llama3.1:8b-instruct-q4_K_M", "llama", None),
        ("Qwen/Qwen2.5-72B-Instruct", "qwen", None),
        ("mistral-large-latest", "mistral", None),
        ("deepseek-ai/DeepSeek-R1", "deepseek", None),
        ("a-model-nobody-knows", "unknown", None),
        ("", "unknown", None),
    ],
)
def test_prefixes_suffixes_and_tags_resolve_to_the_family(model, family, encoding):
    info = cf.model_info(model)
    assert (info.family, info.encoding) == (family, encoding), info
    assert info.resolved


@pytest.mark.parametrize(
    ("model", "base", "family", "platform"),
    [
        # pydantic-ai's `provider:model` spelling (was resolved to the provider's name).
        ("openai:gpt-4o", "gpt-4o", "openai", None),
        ("anthropic:claude-sonnet-4-5", "claude-sonnet-4-5", "anthropic", None),
        ("google-vertex:gemini-3-flash-preview", "gemini-3-flash", "gemini", "vertex-ai"),
        ("google-gla:gemini-2.5-flash", "gemini-2.5-flash", "gemini", "gemini-api"),
        ("huggingface:deepseek-ai/DeepSeek-R1", "deepseek-r1", "deepseek", None),
        # Ollama tags after a colon are not providers.
        ("qwen3:0.6b", "qwen3", "qwen", None),
        ("mistral:7b", "mistral", "mistral", None),
        ("vertex_ai/gemini-2.5-pro", "gemini-2.5-pro", "gemini", "vertex-ai"),
        ("projects/p/locations/l/publishers/google/models/gemini-2.0-flash", "gemini-2.0-flash", "gemini", "vertex-ai"),
        ("gemini/gemini-3-pro-preview", "gemini-3-pro", "gemini", "gemini-api"),
        ("openrouter/google/gemini-2.5-flash", "gemini-2.5-flash", "gemini", None),
        ("gemini-3-flash-preview", "gemini-3-flash", "gemini", None),
    ],
)
def test_provider_prefixes_and_the_serving_platform_resolve(model, base, family, platform):
    info = cf.model_info(model)
    assert (info.base, info.family, info.platform) == (base, family, platform), info


def test_a_bare_gemini_3_name_reports_what_it_cannot_know():
    assert "serving platform" in cf.model_info("gemini-3-flash-preview").unknown_overheads
    assert "serving platform" not in cf.model_info("vertex_ai/gemini-3-flash-preview").unknown_overheads
    # Thought signatures are priced by their shape (tests/test_thought_signatures.py).
    assert "thought signatures" not in cf.model_info("gemini-3-flash-preview").unknown_overheads


def test_vertex_prices_a_gemini_function_turn_below_the_gemini_api():
    # The same request (recorded on both platforms in ../shared/data/pydantic-ai): 36 prompt
    # tokens on the Gemini API, 22 on Vertex AI.
    messages = [{"role": "user", "parts": [{"text": "Use the get_file tool now to retrieve a audio file, then describe what you received."}]}]
    tools = [{"name": "get_file", "description": "", "parametersJsonSchema": {"additionalProperties": False, "properties": {}, "type": "object"}}]
    api = cf.estimate(messages, provider="gemini", model="gemini/gemini-3-flash-preview", tools=tools)
    vertex = cf.estimate(messages, provider="gemini", model="vertex_ai/gemini-3-flash-preview", tools=tools)
    assert api == cf.estimate(messages, provider="gemini", model="gemini-3-flash-preview", tools=tools)
    assert abs(api - 36) <= 8 and abs(vertex - 22) <= 8 and vertex < api


def test_open_weight_deepseek_r1_pays_its_template_markers_only():
    # Recorded on the Hugging Face router: "Hello" costs 4 prompt tokens (BOS, <｜User｜>, Hello,
    # <｜Assistant｜>); DeepSeek's own API adds 2 (6 for deepseek-reasoner).
    hello = [{"role": "user", "content": "Hello"}]
    assert cf.estimate(hello, provider="openai-compatible", model="deepseek-ai/DeepSeek-R1") == 4
    assert cf.estimate(hello, provider="openai-compatible", model="deepseek-reasoner") > 4


def test_unknown_models_never_raise_and_say_what_is_unknown():
    info = cf.model_info("my-local-finetune")
    assert info.family == "unknown" and info.context_window is None
    assert "tokenizer" in info.unknown_overheads
    assert cf.estimate([{"role": "user", "content": "hi"}], provider="openai-compatible", model="my-local-finetune") > 0
    with pytest.raises(TypeError):
        cf.model_info(None)  # type: ignore[arg-type]


def test_context_window_is_the_core_table():
    for m in ("gpt-4o-2024-08-06", "claude-sonnet-4-5", "gemini-2.5-pro", "llama-3.3-70b-versatile"):
        assert cf.context_window(m) == cf.model_info(m).context_window
    with pytest.raises(cf.UnknownModelError):
        cf.context_window("my-local-finetune")


def test_the_model_not_the_wire_format_prices_the_text():
    text = [{"role": "user", "content": "def f(x):\n    return [i * x for i in range(10)]\n" * 50}]
    as_openai = cf.estimate(text, provider="openai")
    routed_gemini = cf.estimate(text, provider="openai", model="google/gemini-3-pro-preview")
    native_gemini = cf.estimate(text, provider="gemini", model="gemini-3-pro-preview")
    assert routed_gemini == native_gemini
    assert routed_gemini > as_openai


def test_openai_tool_block_is_priced_by_its_exact_rendering():
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Get the weather of a city",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string", "description": "City name"}},
                    "required": ["city"],
                },
            },
        }
    ]
    ms = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "weather in Paris?"}]
    exact = cf.count(ms, model="gpt-4o", tools=tools) - cf.count(ms, model="gpt-4o")
    est = cf.estimate(ms, model="gpt-4o", tools=tools) - cf.estimate(ms, model="gpt-4o")
    assert abs(est - exact) <= 3, (est, exact)


@pytest.mark.parametrize("root", [pytest.param(LOCAL, id="tests-data"), pytest.param(SHARED, id="shared-data")])
def test_gemini_trajectories_routed_as_openai_are_priced_as_gemini(root):
    if root == SHARED and not shared_available():
        pytest.skip(f"full transcripts not found at {SHARED}")
    errs = [
        cf.estimate(ms, **swe_call_kwargs(conv)) / usage - 1
        for conv, _, ms, usage in swe_calls(load_conversations(root, "mini-swe-agent-gemini3"))
    ]
    assert errs and all(swe_call_kwargs(c)["provider"] == "openai" for c in load_conversations(root, "mini-swe-agent-gemini3"))
    # Measured on ../shared/data (4,430 calls): median |err| 2.6%, signed -0.9% (as o200k: -16.2%).
    assert statistics.median(abs(e) for e in errs) <= 0.05
    assert abs(statistics.median(errs)) <= 0.05


@given(st.text(max_size=80))
@settings(max_examples=300, deadline=None)
def test_any_model_name_resolves_and_prices(name):
    info = cf.model_info(name)
    assert info.family in {"openai", "anthropic", "gemini", "gemma", "llama", "qwen", "mistral", "deepseek", "nova",
                           "cohere", "glm", "kimi", "minimax", "grok", "unknown"}
    assert cf.estimate([{"role": "user", "content": "hello"}], provider="openai-compatible", model=name) > 0
