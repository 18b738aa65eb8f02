"""A compaction stores what its result names, and nothing else.

A compaction plans, degrades and tries several folds and cuts before it returns one history;
every plan used to store the originals its placeholders named, whether or not the history
returned used that plan. A ``DirectoryContentStore`` never expires, so the texts no message
named stayed on disk for good (on the 10k-message synthetic history, 3,570 entries for the one
its result named). The bundled conversations are compacted here with each store a user can run
without a server, and the store is read back: every id the result names restores its text, and
every entry is named (or is a record the store keeps by design for a later Compactor: the span
behind a summary, an edited copy's original).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

import contextfold as cf
from contextfold.evaluation import Fixture, _tokens, naive_cut

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from transcripts import LOCAL, SHARED, load_conversations, shared_available  # noqa: E402

_IDS = re.compile(r"(?<![0-9A-Za-z_])cf[0-9a-f]{12}(?![0-9A-Za-z_])")

#: Records a Compactor given a store files by design, named by a summary or a copy rather than
#: by a placeholder (``contextfold.fold_sources``).
_RECORDS = ('{"copy": ', '{"summary": ')


def _entries(store: Any) -> dict[str, str]:
    """Every id ``store`` holds and its text."""
    if isinstance(store, cf.DirectoryContentStore):
        return {f.stem: f.read_text(encoding="utf-8") for f in store.path.glob("cf*.txt")}
    return {fold_id: store.get(fold_id) for fold_id in list(store._items)}


def _named(result: cf.CompactionResult, entries: dict[str, str]) -> set[str]:
    """The ids the result's messages and notes name, and those the texts stored under them name
    in turn (a folded span that holds a placeholder)."""
    named = set(_IDS.findall(json.dumps(result.messages) + "\n".join(result.notes)))
    todo = list(named & set(entries))
    while todo:
        for fold_id in _IDS.findall(entries[todo.pop()]):
            if fold_id in entries and fold_id not in named:
                named.add(fold_id)
                todo.append(fold_id)
    return named


def _cases(limit: int) -> list[tuple[str, list[Any], Any]]:
    """``(name, history, tools)``: each bundled conversation cut at half and whole."""
    root = SHARED if shared_available() else LOCAL
    out = []
    for data_set in ("tau-bench-airline", "mini-swe-agent-gemini3"):
        for conv in load_conversations(root, data_set)[:limit]:
            msgs = conv["messages"]
            for share in (0.5, 1.0):
                out.append((conv["source"], msgs[:max(4, int(len(msgs) * share))], conv.get("tools")))
    return out


@pytest.mark.parametrize("strategy", ["hybrid", "mask"])
def test_a_compaction_stores_only_what_its_result_names(strategy: str, tmp_path: Path) -> None:
    # Measured over the first 40 conversations of each shared data set at the naive cut's
    # budget (hybrid): 1,141 entries for 160 compactions before, 672 of them (1.85 MB) named
    # by nothing; now 469, none unnamed, the same 244 named ids all restoring their text.
    compacted = named_total = 0
    for k, (name, history, tools) in enumerate(_cases(12)):
        budget = _tokens(naive_cut(history), Fixture(name, history, (), "openai", tools, None))
        for store in (cf.MemoryContentStore(), cf.DirectoryContentStore(tmp_path / f"{strategy}-{k}")):
            c = cf.Compactor(budget=budget, tools=tools, strategy=strategy, recoverable=True, store=store,
                             min_free_share=0.0)
            try:
                r = c.compact(history)
            except cf.CompactionError:
                continue
            compacted += 1
            entries = _entries(store)
            named = _named(r, entries)
            records = {i for i, t in entries.items() if t.startswith(_RECORDS)}
            assert set(entries) - records <= named, (name, sorted(set(entries) - records - named))
            # Every id a message shows restores its text (the model was promised it).
            for fold_id in set(_IDS.findall(json.dumps(r.messages))):
                assert c.recall(fold_id), (name, fold_id)
            named_total += len(named & set(entries))
    assert compacted >= 40 and named_total > 0, (compacted, named_total)


def test_a_refused_compaction_stores_nothing(tmp_path: Path) -> None:
    # A compaction that raises (its floor alone misses the budget) returns nothing to name:
    # before, the plans made on the way had stored every placeholder's original.
    _, history, tools = _cases(1)[1]
    store = cf.DirectoryContentStore(tmp_path / "folds")
    with pytest.raises(cf.CompactionBudgetError):
        cf.Compactor(budget=50, tools=tools, recoverable=True, store=store).compact(history)
    assert _entries(store) == {}


def _write_turn(k: int, args_lines: int, out_lines: int) -> list[dict[str, Any]]:
    """A call writing a file (``args_lines`` lines) and its output (``out_lines`` lines)."""
    args = json.dumps({"path": f"src/f{k}.py", "content": f"# file {k}\n" + "x = 1\n" * args_lines})
    return [{"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{k}", "type": "function", "function": {"name": "write_file", "arguments": args}}]},
            {"role": "tool", "tool_call_id": f"c{k}", "content": f"wrote src/f{k}.py\n" + f"log line {k}\n" * out_lines}]


@pytest.mark.parametrize("max_bytes", [100_000, 150_000])
def test_an_evicted_id_a_cleared_call_names_is_no_silent_loss(max_bytes: int) -> None:
    # A cleared call's arguments name their id as the recall tool's argument
    # ({"contextfold_recall": "cf..."}), not as id=cf...: the check for ids evicted during the
    # compaction read only the latter, and a second compaction whose own outputs evicted the
    # first one's cleared arguments returned a history naming two ids nothing held.
    history: list[dict[str, Any]] = [{"role": "system", "content": "You write files."},
                                     {"role": "user", "content": "write the files"}]
    for k in range(4):
        history += _write_turn(k, 3_000, 10)
    history += [{"role": "assistant", "content": "done"}, {"role": "user", "content": "more"}]
    store = cf.MemoryContentStore(max_bytes=max_bytes)
    c = cf.Compactor(budget=int(cf.estimate(history) * 0.4), recoverable=True, store=store, strategy="mask",
                     clear_tool_inputs=True, arguments_max_chars=200)
    first = c.compact(history)
    assert re.search(r'contextfold_recall\\?":\s*\\?"cf', json.dumps(first.messages))
    later = list(first.messages)
    for k in range(10, 13):
        later += _write_turn(k, 10, 2_500)
    later += [{"role": "assistant", "content": "done"}, {"role": "user", "content": "again"}]
    # (A Compactor per call, sharing the store.)
    c = cf.Compactor(budget=int(cf.estimate(later) * 0.5), recoverable=True, store=store, strategy="mask",
                     clear_tool_inputs=True, arguments_max_chars=200)
    try:
        r = c.compact(later)
    except ValueError as e:
        assert "evicted" in str(e)
        return
    named = set(_IDS.findall(json.dumps(r.messages)))
    assert all(store.get(i) is not None for i in named), sorted(i for i in named if store.get(i) is None)
