"""One compaction reads each message object once: the plans, the digest and the checks of a
``compact`` call share a ``MessageCache``. What the core finds through the cache must be what
it finds reading the objects afresh, on every wire format."""

from __future__ import annotations

import copy
import pickle
import sys
from pathlib import Path

import pytest

import contextfold as cf
from contextfold import _core

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "support"))
from compaction_shapes import FORMATS, PROVIDER, convert  # noqa: E402
from transcripts import first_conversations  # noqa: E402


def _histories() -> list[list[dict]]:
    return first_conversations(4)


def _plan(run, msgs, cache=None, **kw):
    return _core.compaction_plan(msgs, run.priced, run.options, budget_tokens=run.effective, tail_tokens=run.tail,
                                 summary_tokens=run.summary_tokens, cache=cache, **kw)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_cached_read_plans_digests_and_checks_as_a_fresh_read(fmt: str) -> None:
    provider = PROVIDER[fmt]
    checked = 0
    for chat in _histories():
        msgs, system = convert(chat, fmt)
        c = cf.Compactor(provider=provider, system=system, budget=max(1, cf.estimate(msgs, provider=provider) // 3))
        run = c._start(msgs)
        cache = _core.MessageCache()
        first = _plan(run, msgs, cache)
        assert first == _plan(run, msgs)
        # A second plan of the same objects but the last, replaced by a copy of another
        # message: the new object is read, not taken for the one it replaced.
        changed = list(msgs)
        i = len(msgs) - 1
        changed[i] = copy.deepcopy(msgs[1])
        again = dict(costs=first["costs"], reprice=[i], masks=False, check_input=False)
        assert _plan(run, changed, cache, **again) == _plan(run, changed, **again)
        folded = [msgs[k] for k in first["folded"]]
        if folded:
            kw = dict(max_tokens=max(64, run.summary_tokens), provider=provider)
            assert _core.extractive_digest(folded, cache=cache, **kw) == _core.extractive_digest(folded, **kw)
            # The same fold digested again in the cache's compaction at other rooms (its index
            # as the first digest ranked it) and with a previous summary (ranked afresh).
            previous = _core.extractive_digest(folded[:2], max_tokens=200, provider=provider)
            for prior in (None, previous):
                for room in (48, 300, 2_000):
                    kw = dict(max_tokens=room, provider=provider, previous=prior)
                    assert _core.extractive_digest(folded, cache=cache, **kw) == _core.extractive_digest(folded, **kw)
            checked += 1
        out = [*msgs[: int(first["head_end"])], {"role": "user", "content": "a summary"},
               *msgs[int(first["tail_start"]):]]
        assert _core.compaction_verify(out, run.priced, cache=cache) == _core.compaction_verify(out, run.priced)
    assert checked >= len(_histories()) // 2


def test_each_message_object_is_read_once() -> None:
    msgs = _histories()[0]
    c = cf.Compactor(budget=max(1, cf.estimate(msgs) // 3))
    run = c._start(msgs)
    cache = _core.MessageCache()
    _plan(run, msgs, cache)
    assert len(cache) == len(msgs)
    _plan(run, msgs, cache)
    assert len(cache) == len(msgs)
    # A copy is a new object; the same object twice is one.
    _core.compaction_verify([*msgs, dict(msgs[-1]), msgs[-1]], run.priced, cache=cache)
    assert len(cache) == len(msgs) + 1


def test_a_bad_message_read_through_the_cache_names_its_index() -> None:
    cache = _core.MessageCache()
    request = cf.Compactor(budget=100)._request("chat")
    good = {"role": "user", "content": "hello"}
    _core.compaction_verify([good], request, cache=cache)
    with pytest.raises(cf.InvalidMessageError, match="message 2, field 'content'"):
        _core.compaction_verify([good, good, {"role": "user", "content": 5}], request, cache=cache)
    # The bad message is not cached: the next read raises again.
    with pytest.raises(cf.InvalidMessageError, match="message 0, field 'content'"):
        _core.compaction_verify([{"role": "user", "content": 5}], request, cache=cache)


def test_a_request_carrying_a_cache_still_copies_and_pickles() -> None:
    msgs = _histories()[0]
    cache = _core.MessageCache()
    _core.compaction_verify(msgs, cf.Compactor(budget=100)._request("chat"), cache=cache)
    request = cf.SummaryRequest(messages=msgs[2:9], provider="openai", max_tokens=300, read_cache=cache)
    for other in (pickle.loads(pickle.dumps(request)), copy.deepcopy(request), copy.copy(request)):
        assert other.messages == request.messages
        # (A copied cache starts empty: it held readings of the original's objects.)
        assert isinstance(other.read_cache, _core.MessageCache)
        assert len(other.read_cache) == (len(msgs) if other.read_cache is cache else 0)
        assert cf.ExtractiveSummarizer().summarize(other).text == cf.ExtractiveSummarizer().summarize(request).text
