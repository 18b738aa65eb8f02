"""The proxy's counters and its added-latency histogram, written in Prometheus' text format.

Kept in-process with no dependency: the few series a proxy needs do not justify a client
library. Format: https://prometheus.io/docs/instrumenting/exposition_formats/
"""

from __future__ import annotations

import threading
from collections import defaultdict

__all__ = ["LATENCY_BUCKETS", "Metrics"]

#: Upper bounds of the added-latency histogram, in seconds.
LATENCY_BUCKETS: tuple[float, ...] = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0)


class Metrics:
    """Counters by label set and the added-latency histogram (seconds the proxy spent before
    the request left for the upstream), split by whether the turn compacted."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: defaultdict[tuple[str, str], int] = defaultdict(int)
        self.compactions: defaultdict[tuple[str, str], int] = defaultdict(int)
        self.tokens_saved = 0
        self.fold_hits = 0
        self.upstream_errors = 0
        self.recalls: defaultdict[str, int] = defaultdict(int)
        self.withheld: defaultdict[tuple[str, str], int] = defaultdict(int)
        self.reads: defaultdict[tuple[str, str], int] = defaultdict(int)
        self._buckets: dict[str, list[int]] = {}
        self._sum: defaultdict[str, float] = defaultdict(float)
        self._count: defaultdict[str, int] = defaultdict(int)

    def request(self, api: str, outcome: str) -> None:
        """Count a request of ``api`` by outcome (``forwarded``, ``compacted``, ``refused``, ...)."""
        with self._lock:
            self.requests[(api, outcome)] += 1

    def compaction(self, api: str, strategy: str, saved: int) -> None:
        """Count a compaction and the estimated tokens it saved."""
        with self._lock:
            self.compactions[(api, strategy)] += 1
            self.tokens_saved += max(0, saved)

    def latency(self, seconds: float, *, compacted: bool) -> None:
        """Record the proxy's added latency of one request."""
        key = "true" if compacted else "false"
        with self._lock:
            buckets = self._buckets.setdefault(key, [0] * len(LATENCY_BUCKETS))
            for i, bound in enumerate(LATENCY_BUCKETS):
                if seconds <= bound:
                    buckets[i] += 1
            self._sum[key] += seconds
            self._count[key] += 1

    def hit(self) -> None:
        """Count a request sent with a fold found in the fold cache."""
        with self._lock:
            self.fold_hits += 1

    def upstream_error(self) -> None:
        """Count an upstream that could not be reached, or broke off its response (stalled past the
        timeout or dropped the connection after its headers)."""
        with self._lock:
            self.upstream_errors += 1

    def recall(self, api: str) -> None:
        """Count a recall round the proxy answered for a request of ``api``."""
        with self._lock:
            self.recalls[api] += 1

    def recall_withheld(self, api: str, reason: str) -> None:
        """Count a request of ``api`` sent with a fold but without the recall tool, folded without
        recall, for ``reason`` (``Pricing.no_recall``)."""
        with self._lock:
            self.withheld[(api, reason)] += 1

    def body_read(self, api: str, how: str) -> None:
        """Count a request body of ``api`` read ``how``: ``appended`` (only what the client
        appended to the conversation's last body, ``Folder.fast``) or ``whole`` (``Folder.slow``)."""
        with self._lock:
            self.reads[(api, how)] += 1

    def render(self) -> str:
        """All series in Prometheus text format."""
        out: list[str] = []
        with self._lock:
            out += ["# HELP contextfold_requests_total Requests proxied, by API and outcome.",
                    "# TYPE contextfold_requests_total counter"]
            out += [f'contextfold_requests_total{{api="{a}",outcome="{o}"}} {n}' for (a, o), n in sorted(self.requests.items())]
            out += ["# HELP contextfold_compactions_total Compactions made, by API and strategy.",
                    "# TYPE contextfold_compactions_total counter"]
            out += [f'contextfold_compactions_total{{api="{a}",strategy="{s}"}} {n}' for (a, s), n in sorted(self.compactions.items())]
            out += ["# HELP contextfold_tokens_saved_total Estimated prompt tokens removed by compactions.",
                    "# TYPE contextfold_tokens_saved_total counter", f"contextfold_tokens_saved_total {self.tokens_saved}",
                    "# HELP contextfold_fold_reuses_total Requests sent with a fold found in the fold cache.",
                    "# TYPE contextfold_fold_reuses_total counter", f"contextfold_fold_reuses_total {self.fold_hits}",
                    "# HELP contextfold_upstream_errors_total Requests whose upstream could not be reached or broke off its response.",
                    "# TYPE contextfold_upstream_errors_total counter",
                    f"contextfold_upstream_errors_total {self.upstream_errors}",
                    "# HELP contextfold_recall_rounds_total Recall rounds the proxy answered, by API.",
                    "# TYPE contextfold_recall_rounds_total counter"]
            out += [f'contextfold_recall_rounds_total{{api="{a}"}} {n}' for a, n in sorted(self.recalls.items())]
            out += ["# HELP contextfold_recall_withheld_total Requests sent with a fold folded without recall and "
                    "offered no recall tool, by API and reason.",
                    "# TYPE contextfold_recall_withheld_total counter"]
            out += [f'contextfold_recall_withheld_total{{api="{a}",reason="{r}"}} {n}'
                    for (a, r), n in sorted(self.withheld.items())]
            out += [("# HELP contextfold_body_reads_total Request bodies read, by API and how: only what the client "
                     "appended since the conversation's last body, or whole."),
                    "# TYPE contextfold_body_reads_total counter"]
            out += [f'contextfold_body_reads_total{{api="{a}",read="{h}"}} {n}' for (a, h), n in sorted(self.reads.items())]
            out += [
                    "# HELP contextfold_added_latency_seconds Time the proxy spent on a request between its body arriving and its departure upstream.",
                    "# TYPE contextfold_added_latency_seconds histogram"]
            for key in sorted(self._buckets):
                for bound, n in zip(LATENCY_BUCKETS, self._buckets[key]):
                    out.append(f'contextfold_added_latency_seconds_bucket{{compacted="{key}",le="{bound}"}} {n}')
                out.append(f'contextfold_added_latency_seconds_bucket{{compacted="{key}",le="+Inf"}} {self._count[key]}')
                out.append(f'contextfold_added_latency_seconds_sum{{compacted="{key}"}} {self._sum[key]:.6f}')
                out.append(f'contextfold_added_latency_seconds_count{{compacted="{key}"}} {self._count[key]}')
        return "\n".join(out) + "\n"
