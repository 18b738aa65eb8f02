"""`preload` builds, ahead of the first request, the tokenizer vocabularies pricing counts with.

Each check runs in a fresh interpreter: in the test process another test has usually built them
already, and what `preload` changes is what a new process has in memory.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import contextfold as cf

HISTORY = [
    {"role": "system", "content": "You are a helpful assistant. Never share the user's card number."},
    {"role": "user", "content": "Which flights leave SFO for JFK tomorrow?"},
]
TOOLS = [{"type": "function", "function": {"name": "search_flights", "description": "Search flights.",
                                           "parameters": {"type": "object", "properties": {
                                               "origin": {"type": "string"}}}}}]


def _fresh(code: str) -> dict:
    """Run ``code`` (which prints one JSON object) in a new interpreter; its output, parsed."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _run(kwargs: dict, *, preload: bool) -> dict:
    return _fresh(
        "import json, contextfold as cf\n"
        "from contextfold import _core\n"
        f"kw = {kwargs!r}\n"
        "before = _core._vocabularies_built()\n"
        f"got = cf.preload(**kw) if {preload!r} else None\n"
        "after_preload = _core._vocabularies_built()\n"
        f"est = cf.estimate({HISTORY!r}, tools={TOOLS!r}, **kw)\n"
        "print(json.dumps({'before': before, 'got': got, 'after_preload': after_preload,\n"
        "                  'estimate': est, 'after': _core._vocabularies_built()}))\n")


@pytest.mark.parametrize(("model", "encoding"), [("gpt-4o", "o200k_base"), ("gpt-4", "cl100k_base"),
                                                 (None, "o200k_base"), ("gpt-oss-120b", "o200k_harmony")])
def test_preload_builds_the_vocabulary_an_openai_model_is_priced_with(model, encoding):
    kw = {} if model is None else {"model": model}
    pre = _run(kw, preload=True)
    assert pre["before"] == []
    assert pre["got"] == [encoding]
    # (o200k_harmony counts ordinary text with o200k_base's vocabulary.)
    assert pre["after_preload"] == [encoding.replace("harmony", "base")]
    # The estimate found it built and built nothing more.
    assert pre["after"] == pre["after_preload"]


def test_an_estimate_after_preload_is_the_estimate_without_it():
    for kw in ({"model": "gpt-4o"}, {"model": "gpt-4"}):
        cold = _run(kw, preload=False)
        warm = _run(kw, preload=True)
        assert cold["after"] == warm["after"]  # the first estimate builds the same vocabulary
        assert warm["estimate"] == cold["estimate"] == cf.estimate(HISTORY, tools=TOOLS, **kw)


@pytest.mark.parametrize(("provider", "model"), [("anthropic", "claude-sonnet-4-5"), ("gemini", "gemini-2.5-pro"),
                                                 ("openai-compatible", "llama-3.3-70b")])
def test_preload_builds_nothing_for_a_model_without_a_public_tokenizer(provider, model):
    got = _fresh("import json, contextfold as cf\nfrom contextfold import _core\n"
                 f"got = cf.preload(provider={provider!r}, model={model!r})\n"
                 "print(json.dumps({'got': got, 'built': _core._vocabularies_built()}))\n")
    assert got == {"got": [], "built": []}


def test_preload_rejects_an_unknown_provider():
    with pytest.raises(ValueError, match="provider"):
        cf.preload(provider="nope")  # type: ignore[arg-type]


def test_the_proxy_builds_the_openai_vocabulary_at_start_up_beside_the_event_loop():
    got = _fresh("import json\nfrom starlette.testclient import TestClient\n"
                 "from contextfold import _core\nfrom contextfold.serve.app import create_app\n"
                 "from contextfold.serve.config import ServeConfig\n"
                 "app = create_app(ServeConfig(upstream='http://127.0.0.1:9'))\n"
                 "before = _core._vocabularies_built()\n"
                 "with TestClient(app) as client:\n"
                 "    assert client.get('/healthz').text == 'ok\\n'\n"
                 "    preloaded = app.state.proxy.preloaded.result(timeout=120)\n"
                 "print(json.dumps({'before': before, 'preloaded': preloaded, 'built': _core._vocabularies_built()}))\n")
    assert got == {"before": [], "preloaded": ["o200k_base"], "built": ["o200k_base"]}
