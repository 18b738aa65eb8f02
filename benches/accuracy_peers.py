"""Accuracy against provider-reported prompt tokens, contextfold and each peer side by side.

    python benches/accuracy_peers.py [--max-swe-calls 400] [--markdown]

Data sets (``shared/data`` when present, else the ``tests/data`` subset): the SWE-bench
trajectories (every recorded model call, evenly subsampled to ``--max-swe-calls``), and the
recorded cassettes with usage: OpenAI chat.completions, Anthropic messages, Gemini
generateContent. Each implementation gets what a user would pass it: contextfold the request in
its own wire format with ``provider`` / ``model`` / ``tools`` / ``system``; the peers OpenAI-style
messages (a top-level system prompt prepended as a system message) and ``tools`` in OpenAI's
shape (Anthropic definitions converted) where they take them; no peer reads Gemini ``contents``. An implementation that raises on a request is counted in ``failed``, not in the errors.
Prints median and p90 of |estimate / reported - 1| per data set.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "support"))

import contextfold as cf  # noqa: E402
import peers  # noqa: E402
from reference_estimate import reference_estimate  # noqa: E402
from transcripts import LOCAL, SHARED, load_conversations, load_requests, shared_available, swe_calls, system_text  # noqa: E402


class Case:
    """One request with its reported prompt tokens, in contextfold's and the peers' shapes."""

    def __init__(self, messages: list, real: int, *, provider: str, model: str, tools: Any = None, system: Any = None) -> None:
        self.messages, self.real, self.provider, self.model, self.tools, self.system = messages, real, provider, model, tools, system

    def openai_messages(self) -> list:
        if any(isinstance(m, dict) and "parts" in m for m in self.messages):
            # Gemini `contents`: no peer takes this wire format.
            raise TypeError("Gemini contents are not OpenAI messages")
        system = self.system
        if isinstance(system, list):  # Anthropic system blocks: their text
            system = "\n".join(b.get("text", "") for b in system if isinstance(b, dict))
        if isinstance(system, str) and system:
            return [{"role": "system", "content": system}, *self.messages]
        return self.messages

    def openai_tools(self) -> list | None:
        if not self.tools:
            return None
        out = []
        for t in self.tools:
            if not isinstance(t, dict):
                continue
            if t.get("type") == "function":
                out.append(t)
            elif "input_schema" in t:  # Anthropic tool definition, in OpenAI's shape
                fn = {"name": t.get("name"), "description": t.get("description", ""), "parameters": t["input_schema"]}
                out.append({"type": "function", "function": fn})
        return out or None


def _flat_tools(tools: Any) -> Any:
    if isinstance(tools, list) and tools and isinstance(tools[0], dict) and ("functionDeclarations" in tools[0] or "function_declarations" in tools[0]):
        out: list = []
        for t in tools:
            out.extend(t.get("functionDeclarations") or t.get("function_declarations") or [])
        return out or None
    return tools if isinstance(tools, list) else None


def datasets(max_swe: int) -> dict[str, list[Case]]:
    root = SHARED if shared_available() else LOCAL
    out: dict[str, list[Case]] = {}
    calls = list(swe_calls(load_conversations(root, "mini-swe-agent-gemini3")))
    step = max(1, len(calls) // max_swe) if max_swe else 1
    out[f"SWE-bench trajectories, Gemini 3 Pro ({len(calls):,} calls, every {step})"] = [
        Case(msgs, real, provider="gemini", model=conv.get("model") or "gemini-3-pro-preview") for conv, _k, msgs, real in calls[::step]
    ]
    sets = {
        ("openai", "chat.completions"): "OpenAI chat.completions cassettes",
        ("anthropic", "messages"): "Anthropic messages cassettes",
        ("google", "generateContent"): "Gemini generateContent cassettes",
    }
    for r in load_requests(root):
        name = sets.get((r.provider, r.api))
        if name is None or r.options.get("response_format"):
            continue
        out.setdefault(name, []).append(
            Case(r.messages, r.usage or 0, provider=r.profile, model=r.model, tools=_flat_tools(r.tools), system=system_text(r.system))
        )
    return out


def implementations() -> dict[str, Callable[[Case], int]]:
    impls: dict[str, Callable[[Case], int]] = {
        "contextfold estimate": lambda c: cf.estimate(c.messages, provider=c.provider, model=c.model, tools=c.tools, system=c.system),
        "contextfold count (exact, OpenAI)": lambda c: cf.count(c.openai_messages(), model=c.model, tools=c.openai_tools()),
        "reference (chars/4)": lambda c: reference_estimate(c.openai_messages()),
    }
    if peers.LANGCHAIN:
        impls["langchain count_tokens_approximately"] = lambda c: peers.LANGCHAIN[1](c.openai_messages(), tools=c.openai_tools())
    if peers.LITELLM:
        impls["litellm token_counter"] = lambda c: peers.LITELLM.token_counter(model=c.model, messages=c.openai_messages(), tools=c.openai_tools())
    if peers.O200K is not None:
        impls["tiktoken cookbook (o200k)"] = lambda c: peers.cookbook_count(c.openai_messages())
    return impls


def measure(cases: list[Case], fn: Callable[[Case], int]) -> tuple[list[float], int]:
    errs, failed = [], 0
    for c in cases:
        try:
            est = fn(c)
        except Exception:  # a peer that cannot read a request: counted, not hidden
            failed += 1
            continue
        errs.append(abs(est / c.real - 1))
    return errs, failed


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-swe-calls", type=int, default=400, help="subsample the SWE calls evenly to about this many (0: all)")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    for lib, why in peers.MISSING.items():
        print(f"skipped {lib}: {why}", file=sys.stderr)
    impls = implementations()
    rows = []
    for name, cases in datasets(args.max_swe_calls).items():
        cells = []
        for impl, fn in impls.items():
            errs, failed = measure(cases, fn)
            if not errs:
                cells.append("n/a")
                continue
            cell = f"{statistics.median(errs):.1%} / {_pct(errs, 0.9):.1%}"
            if failed:
                cell += f" ({len(errs)} read)"
            cells.append(cell)
        rows.append((name, len(cases), cells))
    head = ["data set", "n", *impls]
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("| --- | ---: |" + " ---: |" * len(impls))
        for name, n, cells in rows:
            print(f"| {name} | {n:,} | " + " | ".join(cells) + " |")
    else:
        for name, n, cells in rows:
            print(f"{name} (n={n})")
            for impl, cell in zip(impls, cells):
                print(f"  {impl:40s} median / p90 |error|: {cell}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
