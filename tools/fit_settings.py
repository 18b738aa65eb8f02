"""The hidden prompt of request settings (Anthropic thinking, tool_choice), fitted on shared/data.

    python tools/fit_settings.py

For every recorded Anthropic Messages request (and OpenRouter requests to Anthropic models
asking for ``reasoning``), prints per (thinking type, tool_choice type, tools or not) the number
of requests and the median of ``usage - estimate`` where the estimate is ``estimate_request`` of
the body WITHOUT the settings' constants (``settings_tokens`` taken off): the constants of
``src/request_settings.rs`` are these medians.
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

import contextfold as cf  # noqa: E402
from transcripts import SHARED, load_requests, request_body  # noqa: E402


def main() -> None:
    groups: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for r in load_requests(SHARED):
        anthropic = r.provider == "anthropic" and r.api == "messages"
        routed = r.provider == "openrouter" and r.model.startswith("anthropic/")
        if not (anthropic or routed):
            continue
        body = request_body(r)
        read = cf.read_request(body, provider=r.profile)
        base = cf.estimate_request(body, provider=r.profile) - read.settings_tokens
        key = (f"{r.provider}: thinking={read.settings.thinking}", f"tool_choice={read.settings.tool_choice}",
               "tools" if r.tools else "no tools")
        groups[key].append(r.usage - base)
    print("| group | tool_choice | tools | n | median usage - estimate |\n| --- | --- | --- | ---: | ---: |")
    for key, diffs in sorted(groups.items()):
        print(f"| {' | '.join(key)} | {len(diffs)} | {statistics.median(diffs):+.0f} |")


if __name__ == "__main__":
    main()
