"""``contextfold serve`` on a turn where no summary fits: the compaction's last degrading step
(``Compactor._bare``) keeps the head, the last user turn and what follows it (the newest output
cut), with a fold marker, the fold's standing rules alone or nothing between them. The real SDK
of each API sends a recorded SWE run turn by turn through the proxy, in front of a loopback
upstream that records what it receives.

The proxy forwarded such a turn as the client sent it, over the budget (the bare history's cut
copy of the newest message says of no client message which one it stands for, so no fold could
be recorded from it). Recording the bare history as the conversation's fold was tried and
reverted: every later turn then stood on the marker, and the next compaction lost the turns
behind the previous summary. Now the bare history goes upstream on its turn only, and the
conversation's fold stays the one before it: the next turn is read whole and compacted again,
from that fold and the client's own messages."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("starlette", reason="contextfold serve needs its extra: pip install '.[proxy]'")
pytest.importorskip("uvicorn", reason="contextfold serve needs its extra: pip install '.[proxy]'")

import contextfold as cf
import openai
from contextfold import _core
from contextfold.serve.apis import API_BY_NAME
from contextfold.serve.config import ServeConfig

from proxy_support import ProxyServer
from test_serve_newest import SHAPE, _checked, _sent_turn_by_turn, _texts, _upstream
from transcripts import LOCAL, load_conversations
from wire_shapes import convert


def _swe_run(api: str) -> tuple[list[Any], str, list[int], int]:
    """A recorded SWE run (django-13925) in ``api``'s shape: its first 30 messages, its system
    prompt, the history lengths its client sends (each ends with the environment's output) and
    the budget, 16% of the whole run. The task alone (~2,100 tokens with the system prompt) takes
    most of it: from its eighth command's output on, no summary fits beside the task and the
    newest output, and two or three turns in a row go bare."""
    conv = next(c for c in load_conversations(LOCAL, "mini-swe-agent-gemini3") if "django-13925" in c["source"])
    src = [dict(m) for m in conv["messages"]][:30]
    system = src[0]["content"]
    msgs = convert(src if api == "chat" else src[1:], SHAPE[api][0])
    ends = [e for e in range(2, len(msgs) + 1) if msgs[e - 1]["role"] == "user"]
    full = cf.estimate(convert(conv["messages"] if api == "chat" else conv["messages"][1:], SHAPE[api][0]),
                       provider=API_BY_NAME[api].provider, model=SHAPE[api][1])
    return msgs, system, ends, int(full * 0.16)


def _through_the_proxy(api: str) -> tuple[list[Any], str, int, list[tuple[int, dict[str, str], Any, list[Any]]]]:
    """The run sent turn by turn by ``api``'s SDK through a proxy with a gate at twice the budget:
    its messages, system prompt and budget, and per turn the history length, the response's
    headers, the body the upstream received and what the proxy's digest read."""
    msgs, system, ends, budget = _swe_run(api)
    seen = _sent_turn_by_turn(api, msgs, system, ends, budget)
    return msgs, system, budget, seen


@pytest.mark.parametrize("api", list(SHAPE))
def test_a_turn_where_no_summary_fits_goes_within_the_budget_and_the_fold_before_it_stays(api):
    msgs, system, budget, seen = _through_the_proxy(api)
    route = API_BY_NAME[api]
    # Every turn the proxy compacted, or should have, went within the budget, a history the API
    # takes. Before, each turn where no summary fit went as the client sent it: 4,769-5,295
    # tokens (chat) of a budget of 2,365.
    compacting = [s for s in seen if s[1]["x-contextfold-fold"] == "new" or "x-contextfold-not-compacted" in s[1]]
    for end, h, b, _ in compacting:
        tokens = _checked(api, b, system)
        assert tokens <= budget < int(h["x-contextfold-tokens-before"]), \
            (end, tokens, h.get("x-contextfold-not-compacted"))
        assert "x-contextfold-not-compacted" not in h and int(h["x-contextfold-tokens-after"]) <= budget
    # The turns where no summary fit: the whole history went as the compaction wrote it (the
    # header counts every client message), the head as it came, the newest output cut, and no
    # digest asked for.
    bare = [s for s in compacting if int(s[1]["x-contextfold-folded-messages"]) == s[0]]
    assert len(bare) >= 2, [(s[0], s[1]["x-contextfold-folded-messages"]) for s in compacting]
    for end, h, b, reads in bare:
        history = b[route.history_key]
        assert history[0] == msgs[0] and reads == []
        assert history[-1] != msgs[end - 1] and history[-1]["role"] == msgs[end - 1]["role"]
        assert max(_texts(msgs[end - 1]), key=len) not in _texts(history)
    # The conversation's fold stays the one before them: the turn after each is read whole and
    # compacted again (a bare history kept as the fold, the next turn extended it under the gate
    # and reused it); and the next turn that compacts with a digest reads the client's turns
    # behind the first fold's summary (that fold's last message whole), never a summary.
    for end, _, _, _ in bare:
        nxt = next(s for s in seen if s[0] > end)
        assert nxt[1]["x-contextfold-fold"] == "new", (end, nxt[0])
    # (The first fold with a summary: since the tail keeps two messages at least, the first
    # compaction comes a turn earlier, and may itself be bare.)
    first = next(s for s in seen if s[1]["x-contextfold-fold"] == "new"
                 and int(s[1]["x-contextfold-folded-messages"]) < s[0])
    k = int(first[1]["x-contextfold-folded-messages"])
    assert k < first[0] and first[3]
    (_, _, _, reads), *_ = [s for s in seen if s[0] > bare[-1][0] and s[3]]
    read = [m for r in reads for m in r]
    assert not any(_core.SUMMARY_MARKERS[0] in json.dumps(m) for m in read)
    assert max(_texts(msgs[k - 1]), key=len) in _texts(read)


def test_under_strict_a_turn_where_no_summary_fits_is_sent_and_sent_again_the_same():
    # With --strict the proxy answered 413 where it forwarded the turn over the budget; the bare
    # history goes now, and the same history again (an SDK's retry) goes as the same bytes.
    msgs, _, ends, budget = _swe_run("chat")
    with _upstream("chat") as up, ProxyServer(ServeConfig(upstream=up.url, budget=budget, trigger=2 * budget,
                                                          strict=True)) as proxy:
        sdk = openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0)
        try:
            for end in ends:
                raw = sdk.chat.completions.with_raw_response.create(model="gpt-4o", messages=msgs[:end])
                if int(raw.headers.get("x-contextfold-folded-messages", 0)) == end:
                    break
            else:
                pytest.fail("no turn went bare")
            again = sdk.chat.completions.with_raw_response.create(model="gpt-4o", messages=msgs[:end])
        finally:
            sdk.close()
    assert _checked("chat", up.seen[-2].body, "") <= budget < int(raw.headers["x-contextfold-tokens-before"])
    assert up.seen[-1].raw == up.seen[-2].raw
    assert again.headers["x-contextfold-tokens-after"] == raw.headers["x-contextfold-tokens-after"]
