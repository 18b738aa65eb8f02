"""``contextfold compact``: fold a history to a token budget, written in its own wire format."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Annotated, Any, NoReturn, Optional

import typer

import contextfold
from contextfold import report as rep
from contextfold.cli.app import (
    EPILOG,
    EXIT_BAD_INPUT,
    EXIT_BUDGET_UNREACHABLE,
    EXIT_OK,
    EXIT_OVER_BUDGET,
    EXIT_UNKNOWN_MODEL,
    EXIT_USAGE,
    JsonOneOpt,
    MaxBytesOpt,
    ModelOpt,
    ProviderOpt,
    StrictOpt,
    app,
    stderr_console,
    stdout_console,
)
from contextfold.cli.documents import failure_of, open_input, read_document, say_unknown_model
from contextfold.cli.output import clean, is_stdout, write_text
from contextfold.cli.summarizer import summarizer_from
from contextfold.errors import UnknownModelWarning, _InputFaultError
from contextfold.inputs import Request, read_request
from contextfold.request import breakdown_of


# Where each wire format keeps its history inside a request body. The written body is the input
# with only this key replaced: every other key (a Bedrock body's modelId, system, toolConfig and
# inferenceConfig, say) is part of the request and must survive, even when nothing was folded.
_HISTORY_KEY = {"openai-chat": "messages", "anthropic": "messages", "openai-responses": "input", "gemini": "contents",
                "bedrock": "messages"}


def _with_history(doc: Any, wire: str, messages: list[Any]) -> Any:
    """``doc`` with its history replaced by ``messages``: a bare list for a history, else the
    body with every other key kept, but for the recorded calls (``requests``) that sent a
    prefix the compaction changed."""
    if not isinstance(doc, dict):
        return messages
    key = _HISTORY_KEY.get(wire) or next((k for k in ("messages", "input", "contents") if k in doc), None)
    if key is None:
        # A body the reader accepted without a known history key: writing a bare list would drop
        # the rest of the request, so refuse instead.
        raise ValueError(f"cannot tell where a {wire} body keeps its history")
    out = dict(doc, **{key: messages})
    if isinstance(doc.get("requests"), list) and isinstance(doc[key], list):
        # Call k sent ``messages[:n_messages]`` and the provider reported its prompt tokens: a
        # prefix the fold rewrote is no longer what was sent, and `report` priced it against
        # that usage (worst +194% on the bundled trajectory compacted to 6,000 tokens).
        same = 0
        for a, b in zip(doc[key], messages):
            if a != b:
                break
            same += 1
        out["requests"] = [r for r in doc["requests"]
                           if not isinstance(r, dict) or not isinstance(r.get("n_messages"), int)
                           or r["n_messages"] <= same]
    return out


def _say_store_unusable(store: Path, e: OSError) -> NoReturn:
    """A ``--store`` directory that cannot be made or written: a usage error naming it (exit 2),
    as an unwritable output is."""
    stderr_console().print(f"error: --store {clean(store)}: {e.strerror or e}", markup=False)
    raise typer.Exit(EXIT_USAGE) from None


def _say_unreachable(e: contextfold.CompactionBudgetError, req: Request, budget: int, *, as_json: bool) -> None:
    """A budget no compaction reaches: one line on stderr and, with ``--json``, an error object
    on stdout (a script reading stdout gets an answer, not silence)."""
    message = " ".join(str(e).split())
    stderr_console().print(clean(f"error: cannot compact to {budget:,} tokens: {message} (exit {EXIT_BUDGET_UNREACHABLE}; nothing written)"),
                           markup=False)
    if as_json:
        before = (breakdown_of(req.body) if req.body is not None
                  else contextfold.breakdown(req.messages, **req.options())).total
        print(json.dumps({"error": message, "budget": budget, "floor_tokens": e.tokens, "tokens_before": before,
                          "messages_before": len(req.messages), "over_budget": True, "output": None}))


@app.command(
    epilog="Example: [bold]contextfold compact examples/swe-trajectory.json --budget 8000 -o compacted.json[/]  ·  "
    "[bold]contextfold compact body.json --budget 20000 --summarizer openai:gpt-4.1-mini -o body.small.json[/]\n\n"
    + EPILOG
)
def compact(
    file: Annotated[str, typer.Argument(help="JSON history or request body, or '-' for stdin (one document).")],
    budget: Annotated[int, typer.Option("--budget", "-b", min=1, help="Target prompt tokens after compaction (system and tools included).")],
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the compacted history / body here, same wire format as the input ('-': stdout). An existing file is replaced only once the new one is complete.")] = None,
    strategy: Annotated[str, typer.Option(help="mask (prune old tool output only), summarize (head + summary + tail) or hybrid (mask, then summarize if needed).")] = "hybrid",
    summarizer: Annotated[str, typer.Option(help="extractive (offline, default) or PROVIDER:MODEL, e.g. openai:gpt-4.1-mini, anthropic:claude-haiku-4-5, ollama:llama3.2 (needs the SDK extra and its API key).")] = "extractive",
    summarizer_window: Annotated[Optional[int], typer.Option(min=1, help="Context window of the summarizer model in tokens (for a model contextfold does not know).")] = None,
    focus: Annotated[Optional[str], typer.Option(help="What the summary should keep (like /compact <focus>).")] = None,
    store: Annotated[Optional[Path], typer.Option("--store", help="A directory that keeps the turns behind each summary (one file each): a later `compact --store` of the grown history reads them in the summary's place instead of summarizing the summary.")] = None,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    as_json: JsonOneOpt = False,
    allow_over: Annotated[bool, typer.Option("--allow-over", help="Exit 0 even when the result is over the budget (else exit 5); a budget no compaction reaches still exits 6.")] = False,
    repair: Annotated[bool, typer.Option("--repair", help="Repair the history first (a call without its result gets a stand-in, a result without its call goes, duplicate ids are made unique, arguments that are not valid JSON are kept as a string): each change is a note. Without it, a compaction that would keep such a fault exits 1 naming the message.")] = False,
    exact: Annotated[bool, typer.Option("--exact", help="Hold the budget by the model's exact token count, not the estimate (an OpenAI chat body or history whose model has a public tokenizer): `contextfold count` of the written file is within it.")] = False,
    max_bytes: MaxBytesOpt = None,
    strict: StrictOpt = False,
) -> None:
    """Fold the middle of a history into a summary (and mask old tool output) to fit a token
    budget; write the new history in the input's own wire format and show what changed.
    A result over the budget (--strategy mask that cannot reach it) is said and exits 5; a
    budget below what must stay verbatim exits 6 with nothing written."""
    if strategy not in ("mask", "summarize", "hybrid"):
        raise typer.BadParameter(f"expected mask, summarize or hybrid; got {strategy!r}", param_hint="--strategy")
    chosen = summarizer_from(summarizer, summarizer_window)
    say_unknown_model(model, strict=strict)
    src = open_input(file, None, max_bytes)
    if src.jsonl:
        src.stream.close()
        stderr_console().print("error: compact takes one document; for a JSONL corpus use the Python API (see the Ray example)", markup=False)
        raise typer.Exit(EXIT_USAGE)
    doc = read_document(src)
    try:
        req = read_request(doc, provider=provider, model=model)
    except (ValueError, TypeError, RecursionError) as e:
        stderr_console().print(failure_of(e, None).describe(src.name), markup=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    if model is None:
        say_unknown_model(req.model, strict=strict)
    kept: dict[str, Any] = {}
    if store is not None:
        try:
            kept["store"] = contextfold.DirectoryContentStore(store)
        except OSError as e:
            _say_store_unusable(store, e)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnknownModelWarning)  # said above, on stderr
            # Priced as `estimate` prices the body (its settings included), so a result within the
            # budget is one `estimate` of the written file finds within it.
            if exact:
                kept["exact"] = True
            if repair:
                kept["repair"] = True
            result = rep.compact_request(req, budget, strategy=strategy, summarizer=chosen, instructions=focus, **kept)
    except contextfold.CompactionBudgetError as e:
        _say_unreachable(e, req, budget, as_json=as_json)
        raise typer.Exit(EXIT_BUDGET_UNREACHABLE) from None
    except contextfold.CompactionError as e:
        fix = " (--repair fixes it)" if isinstance(e, _InputFaultError) else ""
        stderr_console().print(f"error: {clean(e)}{fix}", markup=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    except OSError as e:
        if store is None:
            raise
        # (The store's directory went away or filled up while the turns were written.)
        _say_store_unusable(store, e)
    except contextfold.UnknownModelError as e:
        # (--exact with a model that has no public tokenizer, or none named.)
        stderr_console().print(f"error: --exact: {clean(e)}", markup=False)
        raise typer.Exit(EXIT_UNKNOWN_MODEL) from None
    except (ValueError, TypeError, RecursionError) as e:
        if exact and str(e).startswith("exact=True"):
            # (A body --exact cannot count: another provider's, a Responses body, a system apart.)
            stderr_console().print(f"error: --exact: {clean(e)}", markup=False)
            raise typer.Exit(EXIT_USAGE) from None
        stderr_console().print(failure_of(e, None).describe(src.name), markup=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    try:
        body = _with_history(doc, req.wire, result.messages)
    except ValueError as e:
        stderr_console().print(f"{clean(src.name)}: {clean(e)}", markup=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    over = result.tokens_after > budget
    if output is not None:
        try:
            text = json.dumps(body, ensure_ascii=False)
            text.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate cannot be UTF-8: write it as a JSON escape, which reads back the same.
            text = json.dumps(body, ensure_ascii=True)
        write_text(output, text + ("\n" if is_stdout(output) else ""))
    folded = list(result.removed)
    summary_doc = {
        "messages_before": len(req.messages),
        "messages_after": len(result.messages),
        "tokens_before": result.tokens_before,
        "tokens_after": result.tokens_after,
        "budget": budget,
        "over_budget": over,
        "strategy_used": result.strategy_used,
        "fallback_used": result.fallback_used,
        "folded": folded,
        "pruned": [{"index": p.index, "kind": p.kind, "slot": p.slot, "tokens_saved": p.tokens_saved} for p in result.pruned],
        "reason": result.reason,
        "notes": list(result.notes),
        "output": str(output) if output is not None else None,
    }
    code = EXIT_OVER_BUDGET if over and not allow_over else EXIT_OK
    # With `-o -` the history is on stdout: what was done goes to stderr.
    out = stderr_console() if is_stdout(output) else stdout_console()
    if as_json:
        if is_stdout(output):
            out.print(json.dumps(summary_doc), markup=False, highlight=False)
        else:
            print(json.dumps(summary_doc))
    else:
        out.print(clean(f"{src.name} ({req.wire}, {req.provider}{', ' + req.model if req.model else ''}): budget {budget:,} tokens"), markup=False)
        for text_line in rep.compaction_lines(result, len(req.messages)):
            out.print(clean(text_line), markup=False)
        if store is None and any("id=cf" in n for n in result.notes):
            # (The Python API's Compactor keeps what it cut for `recall`; this process ends here.)
            out.print("(the ids above name text kept in this process only: --store DIR keeps it)", markup=False)
        if result.changed:
            if output is not None and not is_stdout(output):
                out.print(clean(f"wrote {output}"), markup=False)
            elif output is None:
                out.print("(no --output: nothing written)", markup=False)
    if over:
        stderr_console().print(
            f"{'warning' if allow_over else 'error'}: the result is {result.tokens_after:,} tokens, over the budget of {budget:,}"
            + ("" if allow_over else " (exit 5; --allow-over accepts it)"), markup=False)
    raise typer.Exit(code)
