"""compact() against LangChain's SummarizationMiddleware with a stub model, side by side, one run.

    pytest benches/bench_compact_peers.py --benchmark-enable   (release build)

Both get the same history, trigger and tail: the trigger is a third of the history's tokens
(each side with its own counter), the kept tail half of that. contextfold runs its default
``hybrid`` strategy with the extractive summarizer, once as it comes (the summary fills the room
the budget leaves) and once with the summary capped at 4,000 tokens (``SUMMARY_CAP_TOKENS``: what
a model's summary would be, like for like with the stub's); LangChain's middleware (langchain >= 1.0,
``langchain.agents.middleware.SummarizationMiddleware``) runs ``before_model`` with a stub chat
model answering a fixed summary (``FakeListChatModel``), so neither side waits on a model:
what is timed is the library's own work; contextfold runs a third time with a stub summarizer of its
own (``StubSummarizer``), like for like with the stub models. LangChain gets its own message objects, converted once
outside the timing (``peers.to_langchain``). hermes-agent's ``ContextCompressor`` with its summary
call stubbed likewise, when installed apart (``_hermes_setup``). Workloads: the synthetic 10k-message history and
the 20 longest real SWE trajectories.
"""

from __future__ import annotations

import pytest

import contextfold as cf
import peers


def _langchain_setup(histories: list[list[dict]]):
    pytest.importorskip("langchain.agents.middleware", reason="langchain >= 1.0 (pip install '.[bench]')")
    from langchain.agents.middleware import SummarizationMiddleware
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages.utils import count_tokens_approximately

    model = FakeListChatModel(responses=["## SESSION INTENT\nFix the bug.\n## SUMMARY\nRead the files."])
    runs = []
    for h in histories:
        lc = peers.to_langchain(h)
        budget = count_tokens_approximately(lc) // 3
        mw = SummarizationMiddleware(model, trigger=("tokens", budget), keep=("tokens", budget // 2))
        runs.append((mw, lc))

    def run() -> list:
        return [mw.before_model({"messages": lc}, None) for mw, lc in runs]

    return run


#: A summary cap a model-written summary would not exceed: LangChain's middleware trims what it
#: asks the model to summarize to 4,000 tokens (``trim_tokens_to_summarize``, default
#: ``_DEFAULT_TRIM_TOKEN_LIMIT = 4000`` in ``langchain/agents/middleware/summarization.py``,
#: langchain 1.5.2), and the Compactor's own default summary share is capped at 4,000 tokens
#: (``compactor.DEFAULT_SUMMARY_SHARE``, within [256, 4_000]).
SUMMARY_CAP_TOKENS = 4_000


def _contextfold_setup(histories: list[list[dict]], **compactor_kw):
    runs = []
    for h in histories:
        budget = cf.estimate(h) // 3
        runs.append((cf.Compactor(budget=budget, tail_tokens=budget // 2, **compactor_kw), h))

    def run() -> list:
        return [c.compact(h) for c, h in runs]

    return run


def _contextfold_capped_setup(histories: list[list[dict]]):
    """As the default row, the summary capped at what a model would write (``SUMMARY_CAP_TOKENS``):
    what is timed is the planning, the digest's reading of the folded span and the check, not
    the writing of a summary that fills the room (1.25M tokens on the 10k history)."""
    return _contextfold_setup(histories, summary_max_tokens=SUMMARY_CAP_TOKENS)


#: hermes' summary, as its stub model answers it (its compressor's own prompt asks for these sections).
HERMES_SUMMARY = "## SESSION INTENT\nFix the bug.\n## SUMMARY\nRead the files."


class StubSummarizer:
    """A summarizer answering a fixed summary, as the peers' stub models do: like for like with
    them, what is timed is the library's own work without a digest (the plan, the requests,
    rules and identifier index every summary is held to, the tail fill, the check)."""

    def summarize(self, request: object) -> object:
        from contextfold.summarize.base import SummaryResult

        return SummaryResult(HERMES_SUMMARY)

    async def asummarize(self, request: object) -> object:
        return self.summarize(request)


def _contextfold_stub_setup(histories: list[list[dict]]):
    """As the default row, the summary written by ``StubSummarizer``."""
    return _contextfold_setup(histories, summarizer=StubSummarizer())


def _hermes_setup(histories: list[list[dict]]):
    """hermes-agent's ``ContextCompressor`` (Nous Research, ``agent/context_compressor.py``), its
    summary call (``call_llm``) answered by a stub. hermes-agent installs top-level modules named
    ``agent``, ``utils``, ... and pins its dependencies: install it apart,
    ``pip install --no-deps --target DIR hermes-agent==0.19.0``, and name DIR in
    ``CONTEXTFOLD_BENCH_HERMES``. The trigger is a third of the history's tokens by hermes' own
    counter and the kept tail half of that, set on the compressor (``threshold_tokens``,
    ``tail_token_budget``); its per-session state is reset before each compression (it updates
    its previous summary otherwise)."""
    import os
    import sys

    where = os.environ.get("CONTEXTFOLD_BENCH_HERMES")
    if not where:
        pytest.skip("hermes-agent: pip install --no-deps --target DIR hermes-agent==0.19.0; CONTEXTFOLD_BENCH_HERMES=DIR")
    if where not in sys.path:
        sys.path.insert(0, where)
    hc = pytest.importorskip("agent.context_compressor")
    import logging
    from types import SimpleNamespace

    logging.getLogger("agent").setLevel(logging.CRITICAL)
    answer = SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=HERMES_SUMMARY))], usage=None)
    hc.call_llm = lambda **_: answer
    runs = []
    for h in histories:
        tokens = sum(hc._estimate_msg_budget_tokens(m) for m in h)
        budget = tokens // 3
        c = hc.ContextCompressor(model="gpt-4o", config_context_length=max(2 * budget, 200_000), quiet_mode=True)
        c.threshold_tokens, c.tail_token_budget = budget, budget // 2
        runs.append((c, h, tokens))

    def run() -> list:
        out = []
        for c, h, tokens in runs:
            c.on_session_reset()
            out.append(c.compress(h, current_tokens=tokens))
        return out

    return run


SETUPS = {"contextfold compact (hybrid, extractive)": _contextfold_setup,
          "contextfold compact (hybrid, extractive, summary_max_tokens=4000)": _contextfold_capped_setup,
          "contextfold compact (hybrid, stub summarizer)": _contextfold_stub_setup,
          "langchain SummarizationMiddleware (stub model)": _langchain_setup,
          "hermes ContextCompressor (stub model)": _hermes_setup}


@pytest.fixture(scope="module")
def swe_feasible(swe_histories: list[list[dict]]) -> list[list[dict]]:
    """The trajectories both sides can compact to a third (the tail alone may not fit)."""
    ok = []
    for h in swe_histories:
        try:
            _contextfold_setup([h])()
        except cf.CompactionBudgetError:
            continue
        ok.append(h)
    return ok


@pytest.mark.parametrize("impl", list(SETUPS))
@pytest.mark.parametrize("workload", ["history_10k", "swe_feasible"])
def bench_compact_peers(benchmark, request, impl, workload):
    data = request.getfixturevalue(workload)
    histories = [data] if workload == "history_10k" else data
    run = SETUPS[impl](histories)
    benchmark.group = f"compact vs peers/{workload}"
    out = benchmark(run)
    assert len(out) == len(histories)
