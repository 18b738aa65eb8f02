"""Estimate every history of a JSONL corpus with Ray Data (``pip install '.[ray]'`` in a checkout).

    python examples/ray_estimate.py corpus.jsonl out_dir/ [--provider openai] [--model gpt-4o]

Each line of the corpus is a request body: ``{"messages": [...], "tools": [...], "model": ...}``
(what ``contextfold estimate`` reads). ``ray.data.read_json`` spreads the lines over the
cluster; ``map_batches`` prices each batch in one worker process with the library's own
functions (picklable, so Ray ships them as is); the result, one row per history with its
total and its breakdown by kind, is written as Parquet.

Arrow gives a column one schema for all rows: a key that some messages lack (``tool_calls``,
``name``) comes back as ``None`` in the others, and a struct (a tool's ``properties``) gets the
union of every row's fields. ``strip_nulls`` drops those ``None`` values again, so each history
is priced as it was written (an explicit ``null`` in the original is dropped too: it costs no
tokens either way for the fields contextfold reads).
"""

from __future__ import annotations

import argparse
from typing import Any

import contextfold as cf
from contextfold.breakdown import KINDS


def strip_nulls(value: Any) -> Any:
    """``value`` without the ``None`` entries Arrow's schema union added to dicts."""
    if isinstance(value, dict):
        return {k: strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [strip_nulls(v) for v in value]
    return value


def estimate_batch(batch: Any, *, provider: str = "openai", model: str | None = None) -> dict[str, list[Any]]:
    """One Ray batch (a ``pyarrow.Table``) -> totals and per-kind tokens of each history."""
    messages = batch.column("messages").to_pylist()
    tools = batch.column("tools").to_pylist() if "tools" in batch.column_names else [None] * len(messages)
    models = batch.column("model").to_pylist() if "model" in batch.column_names else [None] * len(messages)
    out: dict[str, list[Any]] = {"total": [], "messages": [], **{f"tokens_{k}": [] for k in KINDS}}
    for msgs, tls, m in zip(messages, tools, models):
        b = cf.breakdown(strip_nulls(msgs), provider=provider, model=model or m, tools=strip_nulls(tls) or None)
        out["total"].append(b.total)
        out["messages"].append(len(msgs))
        for k, v in b.by_kind.items():
            out[f"tokens_{k}"].append(v)
    return out


def run(corpus: str, *, provider: str = "openai", model: str | None = None) -> Any:
    """The Ray Dataset of estimates of every line of ``corpus`` (lazy until consumed)."""
    import ray

    ds = ray.data.read_json(corpus)
    return ds.map_batches(estimate_batch, batch_format="pyarrow", fn_kwargs={"provider": provider, "model": model})


def main() -> None:
    import ray

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus")
    ap.add_argument("out_dir")
    ap.add_argument("--provider", default="openai", choices=cf.PROVIDERS)
    ap.add_argument("--model")
    args = ap.parse_args()
    ray.init()  # a local instance, or the cluster named by RAY_ADDRESS
    ds = run(args.corpus, provider=args.provider, model=args.model)
    ds.write_parquet(args.out_dir)
    print(ds.sum("total"), "estimated prompt tokens over", ds.count(), "histories")


if __name__ == "__main__":
    main()
