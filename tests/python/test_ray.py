"""The documented Ray Data example (examples/ray_estimate.py) on a local Ray instance: every
history of a real JSONL corpus is priced exactly as `contextfold.breakdown` prices it locally.
Needs the `[ray]` extra; skipped (visibly) without it."""

from __future__ import annotations

import importlib.util
import json

import pytest

import contextfold as cf
from transcripts import LOCAL, ROOT, load_conversations

ray = pytest.importorskip("ray", reason="Ray Data example: pip install '.[ray]'")

# Ray's own modules warn about their own deprecated settings while they start.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    ray.shutdown()


def _example():
    spec = importlib.util.spec_from_file_location("ray_estimate", ROOT / "examples" / "ray_estimate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_ray_example_prices_a_real_corpus_like_the_library(local_ray, tmp_path):
    rows = [{"model": "gpt-4o", "messages": c["messages"], "tools": c["tools"]} for c in load_conversations(LOCAL, "tau-bench-airline")]
    corpus = tmp_path / "tau.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = _example().run(str(corpus)).to_pandas()
    assert len(got) == len(rows)
    want = sorted(cf.breakdown(r["messages"], model="gpt-4o", tools=r["tools"]).total for r in rows)
    assert sorted(got["total"]) == want
    assert int(got["tokens_tool_schemas"].sum()) > 0 and int(got["tokens_tool_outputs"].sum()) > 0
