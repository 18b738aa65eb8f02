"""Hostile texts against what finds fold ids: a tool output holding many words shaped like ids.

A compaction reads the ids its new messages and the texts it stores name
(``compactor.kept_named``): an output of 200,000 distinct ``cf`` + 12 hex digit words (3 MB, a
hex dump or a listing of hashes) took 22 s to compact, the core deduplicating each id against
every one found before it; now about 1 s. (Timed in no test here: these pin what is found and
kept, and such a history's compaction time shows in the suite's own.)
"""

from __future__ import annotations

import contextfold as cf
from contextfold import _core

N = 200_000


def _listing(prefix: str = "") -> str:
    return " ".join(f"{prefix}cf{i:012x}" for i in range(N))


def test_every_id_of_a_text_of_many_ids_is_found_once_in_order():
    for anywhere, text in ((True, _listing()), (False, _listing("id="))):
        found = _core.fold_ids_in(text + " " + text, anywhere=anywhere)
        assert len(found) == N and found[0] == "cf000000000000" and found[-1] == f"cf{N - 1:012x}"


def test_a_tool_output_of_many_id_shaped_words_is_cut_and_recallable():
    history = [
        {"role": "system", "content": "You list objects."},
        {"role": "user", "content": "list the objects"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": _listing()},
        {"role": "assistant", "content": "done " * 50},
        {"role": "user", "content": "next " * 30},
        {"role": "assistant", "content": "ok " * 50},
        {"role": "user", "content": "and? " * 30},
    ]
    c = cf.Compactor(budget=2_000, recoverable=True, store=cf.MemoryContentStore(max_bytes=1 << 30))
    r = c.compact(history)
    assert r.changed and r.tokens_after <= 2_000
    # The output is cut and its original recallable, byte-exact.
    cut = r.messages[3]["content"]
    (fold_id,) = [i for i in _core.fold_ids_in(cut) if c.store.get(i) is not None]
    assert c.recall(fold_id) == history[3]["content"]
