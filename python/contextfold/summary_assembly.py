"""The compacted history put together: the head, the kept messages, the summary (a message of the
role the core's plan chose, merged into a tail message, or the provider's own compaction
messages) and the tail; and which planned message each assembled one stands for."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from contextfold import _core
from contextfold.prune import _copy
from contextfold.summary_message import summary_message
from contextfold.summary_room import neutralize_markers

if TYPE_CHECKING:  # pragma: no cover
    from contextfold.compaction_run import CompactionRun

OPEN, CLOSE = _core.SUMMARY_MARKERS


def merge_into(message: Any, text: str, *, at_start: bool, fmt: str) -> Any:
    """A copy of ``message`` carrying ``text`` as a text block (or prefix) of its content, as
    its wire format writes it (the core's ``merge_summary``)."""
    return _core.merge_summary(message, text, format=fmt, at_start=at_start, copy=_copy)  # type: ignore[arg-type]


def like_history(message: dict[str, Any], history: Sequence[Any]) -> Any:
    """A message the compaction adds, as the history holds them: a LangChain message in a
    history of LangChain messages (LangChain's own ``convert_to_messages``), else the dict."""
    # The type test runs in C over the history (``map``): a per-message Python call walked a
    # 10,000-message history for every message the compaction adds.
    base = sys.modules.get("langchain_core.messages.base")
    if base is None or not any(map(isinstance, history, itertools.repeat(base.BaseMessage))):
        return message
    from langchain_core.messages import convert_to_messages

    return convert_to_messages([message])[0]


def assemble(run: CompactionRun, base: list[Any], text: str, native: tuple[Any, ...], fold_line: str) -> list[Any]:
    """The compacted history: head, kept messages, the summary (wrapped in its markers, as a
    message of the plan's role or merged into the tail message the plan names; or the provider's
    own ``native`` messages), then the tail. ``base`` is the history with the tail's edits."""
    plan, fmt = run.plan, run.fmt
    head_end, tail_start = int(plan["head_end"]), int(plan["tail_start"])
    kept_idx: list[int] = plan["kept"]
    wrapped = f"{OPEN}\n{neutralize_markers(text)}{fold_line}\n{CLOSE}"
    out = base[:head_end] + [base[i] for i in kept_idx]
    if native and plan["summary_role"] is None and native_merges(plan, base, native, fmt):
        # (The seam takes no message of its own: the provider's blocks open the tail's turn,
        # where the provider itself writes them in a response. A plan moved since to a seam
        # where they cannot gets the summary's text merged, below.)
        out.extend(base[tail_start:])
        pos = merge_position(plan)
        out[pos] = with_native_blocks(out[pos], native[0])
        return out
    if native and (plan["summary_role"] is not None or fmt == "responses"):
        # (A Responses compaction item has no role: it goes before the tail even where the plan
        # merges a text summary into the tail's first turn, which would drop the item's encrypted
        # summary and keep only the user messages it was sent with.)
        return out + [like_history(m, run.msgs) for m in native] + base[tail_start:]
    if plan["summary_role"] is not None:
        summary = summary_message(wrapped, format=fmt, role=plan["summary_role"])
        out.append(like_history(summary, run.msgs))
        out.extend(base[tail_start:])
    else:
        out.extend(base[tail_start:])
        pos = merge_position(plan)
        out[pos] = merge_into(out[pos], wrapped, at_start=bool(plan["merge_at_start"]), fmt=fmt)
    return out


def _blocks(content: Any) -> list[Any] | None:
    """A message's content as a list of blocks (a string is one text block); None for another
    shape."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, (list, tuple)):
        return list(content)
    return None


def native_merges(plan: Mapping[str, Any], msgs: Sequence[Any], native: Sequence[Any], fmt: str) -> bool:
    """Whether a provider's own compaction message (``native``: Anthropic's assistant turn with
    its ``compaction`` block) can open the tail's turn where the plan merges the summary: the
    seam takes no message of its own (a user turn before it, an assistant turn after it), and
    the provider writes a compaction block first in the assistant turn it answers with, before
    its text and tool calls. Only at the start of an assistant turn of plain dicts whose content
    opens with no thinking block (those stay first, as signed)."""
    if fmt != "anthropic" or len(native) != 1 or plan["summary_role"] is not None or not plan["merge_at_start"]:
        return False
    block_msg = native[0]
    target_at = plan["merge_index"]
    if not isinstance(block_msg, Mapping) or target_at is None or not 0 <= int(target_at) < len(msgs):
        return False
    target = msgs[int(target_at)]
    if not isinstance(target, Mapping) or block_msg.get("role") is None or target.get("role") != block_msg.get("role"):
        return False
    ours, theirs = _blocks(block_msg.get("content")), _blocks(target.get("content"))
    if not ours or theirs is None:
        return False
    first = theirs[0] if theirs else None
    return not (isinstance(first, Mapping) and first.get("type") in ("thinking", "redacted_thinking"))


def with_native_blocks(message: Any, native: Mapping[str, Any]) -> Any:
    """A copy of ``message`` (an assistant turn) with the blocks of ``native`` (the provider's
    compaction turn) before its own (``native_merges`` said it can)."""
    out = _copy(message)
    out["content"] = [*(_blocks(native.get("content")) or []), *(_blocks(message.get("content")) or [])]
    return out


def merge_position(plan: Mapping[str, Any]) -> int:
    """Where in the assembled history (head, kept, tail) the message the plan merges the
    summary into lands."""
    head_end, tail_start, kept_idx = int(plan["head_end"]), int(plan["tail_start"]), plan["kept"]
    target = int(plan["merge_index"] or 0)
    if target < head_end:
        return target
    return head_end + kept_idx.index(target) if target in kept_idx else head_end + len(kept_idx) + target - tail_start


def assembled_from(plan: Mapping[str, Any], n: int) -> list[int | None]:
    """The message of the planned history (``n`` long) each message of its assembly stands for:
    head, kept, the summary (None), tail; the message the summary was merged into is None too."""
    head_end, tail_start, kept_idx = int(plan["head_end"]), int(plan["tail_start"]), plan["kept"]
    if plan["summary_role"] is not None:
        return [*range(head_end), *kept_idx, None, *range(tail_start, n)]
    sources: list[int | None] = [*range(head_end), *kept_idx, *range(tail_start, n)]
    sources[merge_position(plan)] = None
    return sources
