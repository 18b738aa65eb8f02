"""The Compactor's options, checked once: a frozen ``CompactorConfig`` built at construction.

Every option is validated when the Compactor is made, never inside ``compact()``: a wrong type
is a ``TypeError``, a value out of range a ``ValueError``, both naming the option. Counts
beyond any real history or budget are clamped to ``HUGE`` (they mean "all of it") so no sum in
the core can overflow.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, cast

from contextfold import _core
from contextfold._args import HUGE

Strategy = Literal["mask", "summarize", "hybrid"]
WireFormat = Literal["chat", "responses", "anthropic", "gemini", "bedrock"]
TriggerKind = Literal["tokens", "fraction", "messages"]

#: The core counts a tool result's cap in 32 bits: a larger cap means "never shortened".
_U32_MAX = (1 << 32) - 1
#: Shortened arguments stay valid JSON with a marker saying so: they need this much room
#: (the core's own floor, ``shrink_json::MIN_MAX_CHARS``).
MIN_ARGUMENTS_CHARS = 64
#: The fewest messages a Compactor's tail keeps whole: the last message and the one it answers.
#: A third (the default until stop 83) cost the summary its room where a long system prompt
#: leaves little: on the shared data's cuts, the tokens the agent used next kept 1,213 -> 1,240
#: of 1,436 (tau-bench) and 4,620 -> 4,613 of 6,073 (SWE); agent loops 1,230 -> 1,245 and
#: 4,604 -> 4,623 (``tools/future_report.py [--loop]``, docs/evaluation.md). Masking still
#: protects three (``compaction::MASK_MIN_TAIL`` in the core).
DEFAULT_MIN_TAIL = 2


def _int(name: str, value: Any, *, minimum: int, maximum: int = HUGE) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return min(int(value), maximum)


def _opt_int(name: str, value: Any, *, minimum: int) -> int | None:
    return None if value is None else _int(name, value, minimum=minimum)


def _real(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value}")
    return v


def _opt_str(name: str, value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{name} must be a str or None, got {type(value).__name__}")
    return value


def _choice(name: str, value: Any, valid: Iterable[str]) -> str:
    valid = tuple(valid)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, one of {', '.join(valid)}; got {type(value).__name__}")
    if value not in valid:
        raise ValueError(f"unknown {name} {value!r}; valid: {', '.join(valid)}")
    return value


def _count_or_fraction(name: str, kind: str, value: Any) -> float:
    """The value of a ``(kind, value)`` option: a fraction within (0, 1], else a positive count."""
    if kind == "fraction":
        v = _real(name, value)
        if not 0.0 < v <= 1.0:
            raise ValueError(f"{name}: a fraction must be within (0, 1], got {value}")
        return v
    return float(_int(name, value, minimum=1))


def parse_trigger(trigger: Any) -> tuple[TriggerKind, float] | None:
    """``trigger`` as ``(kind, value)``: tokens (int), a fraction of the window (float),
    ``(kind, value)`` or Anthropic's ``{"type": "input_tokens", "value": n}``."""
    if trigger is None:
        return None
    kinds: dict[str, TriggerKind] = {"input_tokens": "tokens", "tokens": "tokens", "messages": "messages", "fraction": "fraction"}
    if isinstance(trigger, dict):
        kind = kinds.get(str(trigger.get("type")))
        if kind is None:
            raise ValueError(f"unknown trigger type {trigger.get('type')!r}; valid: input_tokens, messages, fraction")
        if "value" not in trigger:
            raise ValueError("trigger needs a 'value'")
        return kind, _count_or_fraction("trigger", kind, trigger["value"])
    if isinstance(trigger, tuple):
        if len(trigger) != 2:
            raise ValueError(f"trigger must be (kind, value), got {trigger!r}")
        kind_name, value = trigger
        if kind_name not in ("tokens", "fraction", "messages"):
            raise ValueError(f"unknown trigger kind {kind_name!r}; valid: tokens, fraction, messages")
        return kinds[kind_name], _count_or_fraction("trigger", kind_name, value)
    if isinstance(trigger, bool):
        raise TypeError("trigger must be tokens (int), a fraction (float) or (kind, value)")
    if isinstance(trigger, int):
        return "tokens", float(_int("trigger", trigger, minimum=1))
    if isinstance(trigger, float):
        return "fraction", _count_or_fraction("trigger", "fraction", trigger)
    raise TypeError("trigger must be tokens (int), a fraction (float) or (kind, value)")


@dataclass(frozen=True, slots=True)
class KeepRule:
    """What ``keep=`` asks for: tool uses never masked, or the protected tail's size."""

    tool_uses: int = 0
    min_tail: int | None = None
    tail_tokens: int | None = None
    tail_share: float | None = None


def parse_keep(keep: Any) -> KeepRule:
    """``keep``: an int (the last N tool uses, Anthropic's ``keep``), ``(kind, value)`` with kind
    ``tool_uses``, ``messages``, ``tokens`` or ``fraction`` (LangChain's words), or a dict
    ``{"type": kind, "value": v}``."""
    if keep is None:
        return KeepRule()
    if isinstance(keep, dict):
        if "value" not in keep:
            raise ValueError("keep needs a 'value'")
        keep = (str(keep.get("type")), keep["value"])
    if isinstance(keep, bool):
        raise TypeError("keep must be an int or (kind, value)")
    if isinstance(keep, int):
        return KeepRule(tool_uses=_int("keep", keep, minimum=0))
    if isinstance(keep, tuple):
        if len(keep) != 2:
            raise ValueError(f"keep must be (kind, value), got {keep!r}")
        kind, value = keep
        if kind == "tool_uses":
            return KeepRule(tool_uses=_int("keep", value, minimum=0))
        if kind == "messages":
            return KeepRule(min_tail=_int("keep", value, minimum=1))
        if kind == "tokens":
            return KeepRule(tail_tokens=_int("keep", value, minimum=1))
        if kind == "fraction":
            return KeepRule(tail_share=_count_or_fraction("keep", "fraction", value))
        raise ValueError(f"unknown keep kind {kind!r}; valid: tool_uses, messages, tokens, fraction")
    raise TypeError(f"keep must be an int or (kind, value), got {type(keep).__name__}")


def _pinned(value: Any) -> tuple[int, ...] | Callable[[Any], bool] | None:
    if value is None:
        return None
    if callable(value):
        return cast("Callable[[Any], bool]", value)
    if isinstance(value, (str, bytes, dict)) or not isinstance(value, Iterable):
        raise TypeError(f"pinned must be message indices or a predicate, got {type(value).__name__}")
    out = []
    for i in value:
        if isinstance(i, bool) or not isinstance(i, int):
            raise TypeError(f"pinned must hold int message indices, got {type(i).__name__}")
        out.append(max(-HUGE, min(int(i), HUGE)))
    return tuple(out)


def _names(name: str, value: Any) -> tuple[str, ...]:
    # A str is one tool name, never its characters.
    if isinstance(value, str):
        return (value,)
    if value is None:
        return ()
    if isinstance(value, (bytes, dict)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a tool name or a list of names, got {type(value).__name__}")
    out = tuple(value)
    for v in out:
        if not isinstance(v, str):
            raise TypeError(f"{name} must hold tool names (str), got {type(v).__name__}")
    return out


@dataclass(frozen=True, slots=True)
class CompactorConfig:
    """The Compactor's options as checked values (see ``Compactor`` for what each means).
    ``tail_tokens`` / ``min_tail`` / ``tail_share`` / ``keep_tool_uses`` already fold in
    ``keep=``. Build with ``CompactorConfig.build(**options)``."""

    provider: str
    model: str | None
    context_window: int | None
    budget: int | None
    strategy: Strategy
    protect_first_n: int
    tail_tokens: int | None
    tail_share: float
    pinned: tuple[int, ...] | Callable[[Any], bool] | None
    trigger: tuple[TriggerKind, float] | None
    keep_tool_uses: int
    clear_at_least: int
    min_free_share: float
    exclude_tools: tuple[str, ...]
    clear_tool_inputs: bool
    keep_thinking_turns: int | None
    instructions: str | None
    wire_format: WireFormat | None
    summary_tokens: int | None
    summary_max_tokens: int | None
    min_tail: int
    tool_result_max_tokens: int
    arguments_max_chars: int
    cache_block_tokens: int | None

    @classmethod
    def build(
        cls,
        *,
        provider: Any = "openai",
        model: Any = None,
        context_window: Any = None,
        budget: Any = None,
        strategy: Any = "hybrid",
        protect_first_n: Any = 1,
        tail_tokens: Any = None,
        pinned: Any = None,
        trigger: Any = None,
        keep: Any = None,
        clear_at_least: Any = 0,
        min_free_share: Any = 0.05,
        exclude_tools: Any = (),
        clear_tool_inputs: Any = False,
        keep_thinking_turns: Any = None,
        instructions: Any = None,
        wire_format: Any = None,
        summary_tokens: Any = None,
        summary_max_tokens: Any = None,
        min_tail: Any = DEFAULT_MIN_TAIL,
        tool_result_max_tokens: Any = 200,
        arguments_max_chars: Any = 2000,
        cache_block_tokens: Any = None,
        tail_share: float = 0.5,
    ) -> CompactorConfig:
        """Check every option (``TypeError`` / ``ValueError`` naming it) and return the config."""
        share = _real("min_free_share", min_free_share)
        if not 0.0 <= share < 1.0:
            raise ValueError(f"min_free_share must be within [0, 1), got {min_free_share}")
        if not isinstance(clear_tool_inputs, bool):
            raise TypeError(f"clear_tool_inputs must be a bool, got {type(clear_tool_inputs).__name__}")
        if keep_thinking_turns is not None:
            if isinstance(keep_thinking_turns, bool) or not isinstance(keep_thinking_turns, int):
                raise TypeError(f"keep_thinking_turns must be an int or None, got {type(keep_thinking_turns).__name__}")
            if keep_thinking_turns < 1:
                raise ValueError("keep_thinking_turns must be >= 1 (the current turn keeps its thinking)")
        rule = parse_keep(keep)
        tail = rule.tail_tokens if rule.tail_tokens is not None else _opt_int("tail_tokens", tail_tokens, minimum=1)
        return cls(
            provider=_choice("provider", provider, _core.PROVIDERS),
            model=_opt_str("model", model),
            context_window=_opt_int("context_window", context_window, minimum=1),
            budget=_opt_int("budget", budget, minimum=1),
            strategy=_choice("strategy", strategy, ("mask", "summarize", "hybrid")),  # type: ignore[arg-type]
            protect_first_n=_int("protect_first_n", protect_first_n, minimum=0),
            tail_tokens=tail,
            tail_share=rule.tail_share if rule.tail_share is not None else tail_share,
            pinned=_pinned(pinned),
            trigger=parse_trigger(trigger),
            keep_tool_uses=rule.tool_uses,
            clear_at_least=_int("clear_at_least", clear_at_least, minimum=0),
            min_free_share=share,
            exclude_tools=_names("exclude_tools", exclude_tools),
            clear_tool_inputs=clear_tool_inputs,
            keep_thinking_turns=None if keep_thinking_turns is None else min(keep_thinking_turns, HUGE),
            instructions=_opt_str("instructions", instructions),
            wire_format=None if wire_format is None else _choice("wire_format", wire_format, _core.WIRE_FORMATS),  # type: ignore[arg-type]
            summary_tokens=_opt_int("summary_tokens", summary_tokens, minimum=1),
            summary_max_tokens=_opt_int("summary_max_tokens", summary_max_tokens, minimum=1),
            min_tail=rule.min_tail if rule.min_tail is not None else _int("min_tail", min_tail, minimum=1),
            tool_result_max_tokens=_int("tool_result_max_tokens", tool_result_max_tokens, minimum=0, maximum=_U32_MAX),
            arguments_max_chars=_int("arguments_max_chars", arguments_max_chars, minimum=MIN_ARGUMENTS_CHARS),
            cache_block_tokens=_opt_int("cache_block_tokens", cache_block_tokens, minimum=1),
        )

    def plan_options(self, *, recoverable: bool) -> _core.CompactionOptions:
        """The compaction plan's knobs of this config as the core's frozen options object, built
        once by the Compactor. What a summary never drops (requests, rules, the index) needs
        room: old output in the tail is masked rather than the summary squeezed below its share
        (``summary_floor_share``). The tail meets its target and never overshoots it
        (``soft_ceiling`` 1.0), so the summary's room stays put across compactions
        (``summary_room.stable_room``). With ``strategy="mask"`` the middle is never folded, so
        its placeholders always name their outputs' identifiers (``masks_only``)."""
        return _core.CompactionOptions(
            protect_first_n=self.protect_first_n, min_tail=self.min_tail, summary_floor_share=1.0, soft_ceiling=1.0,
            tool_result_max_tokens=self.tool_result_max_tokens, arguments_max_chars=self.arguments_max_chars,
            keep_tool_uses=self.keep_tool_uses, exclude_tools=list(self.exclude_tools),
            clear_tool_inputs=self.clear_tool_inputs, keep_thinking_turns=self.keep_thinking_turns,
            recoverable=recoverable, masks_only=self.strategy == "mask")
