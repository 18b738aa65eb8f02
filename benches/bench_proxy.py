"""Load on ``contextfold serve``: concurrent agent conversations of thousands of messages on
loopback, every turn appending two messages, the proxy compacting when a history reaches the
gate and folding it the same way on the turns after.

Three processes: a fake upstream (uvicorn, answers every chat completion at once with a usage
of ~1 token per 4 bytes received), the proxy (``python -m contextfold serve``, as a user runs
it) and this load generator (httpx, one connection per conversation). Reported:

- the proxy's own time per request (``x-contextfold-proxy-ms``: from the body's arrival to the
  request's departure upstream), as a curve (p50/p90/p99/p99.9/max), turns that reuse a fold or
  need none apart from the turns that compacted; the time the body took to arrive
  (``x-contextfold-read-ms``) apart;
- the end-to-end latency through the proxy beside the same requests sent straight to the
  upstream (the direct run goes first, with the same bodies);
- errors (any non-200) and the proxy's resident memory sampled every 1,000 requests;
- how the proxy read the bodies (``contextfold_body_reads_total``: from where the
  conversation's last body ended, or whole).

``--recall`` runs the proxy with ``--recall``; ``--alternate-choices`` has every conversation
ask for one choice and two (``n``) by turns, so with ``--recall`` its turns switch between the
recoverable fold and the fold without recall.

CI runs ``bench_proxy_smoke`` once (``--benchmark-disable``): 4 conversations of 200-400
messages, 40 requests, zero errors asserted. The full run, on demand::

    python benches/bench_proxy.py --full          # 64 conversations of 2k-10k messages, 10^4 requests
    python benches/bench_proxy.py --conversations 8 --requests 400   # anything in between
    python benches/bench_proxy.py --recall --alternate-choices        # n=1 / n=2 by turns
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

pytest.importorskip("uvicorn", reason="contextfold serve needs its extra: pip install 'contextfold[proxy]'")

import httpx  # noqa: E402

WORDS = ("file test error value path config request token window budget summary tool call output "
         "history parse build check run fix read write line module import class return list").split()
REPLY = {
    "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "gpt-4o",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
}


async def upstream_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The fake upstream: reads the body, answers a chat completion billed ~len(body) / 4."""
    if scope["type"] == "lifespan":
        while True:
            msg = await receive()
            if msg["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif msg["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    size = 0
    more = True
    while more:
        msg = await receive()
        size += len(msg.get("body", b""))
        more = msg.get("more_body", False)
    body = dict(REPLY, usage={"prompt_tokens": size // 4, "completion_tokens": 1, "total_tokens": size // 4 + 1})
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_up(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: the process exited with {proc.returncode}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise RuntimeError(f"{url} did not come up")


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def message_pair(rng: random.Random, i: int) -> list[bytes]:
    """Two messages a turn appends: a reply and a user message, or a tool call and its result."""
    def words(lo: int, hi: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))

    if i % 4 == 3:
        call = {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{i}", "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/m{i}.py"})}}]}
        return [json.dumps(call).encode(), json.dumps({"role": "tool", "tool_call_id": f"call_{i}",
                                                       "content": words(10, 60)}).encode()]
    return [json.dumps({"role": "assistant", "content": words(5, 30)}).encode(),
            json.dumps({"role": "user", "content": words(3, 20)}).encode()]


@dataclass
class Result:
    """One request: its end-to-end seconds, the proxy's own ms, the fold header, the status."""

    seconds: float
    proxy_ms: float | None
    read_ms: float | None
    fold: str
    status: int


@dataclass
class Run:
    results: list[Result] = field(default_factory=list)
    rss: list[tuple[int, float]] = field(default_factory=list)


async def drive(url: str, *, conversations: int, lo: int, hi: int, requests: int, seed: int,
                pid: int | None, alternate: bool = False) -> Run:
    """``conversations`` concurrent conversations of ``lo``-``hi`` starting messages, ``requests``
    in all, each turn appending two messages; ``alternate``: turns ask for one choice and two
    (``n``) by turns."""
    run = Run()
    per = max(1, requests // conversations)
    limits = httpx.Limits(max_connections=conversations, max_keepalive_connections=conversations)
    # TCP_NODELAY on the load generator's sockets too, so neither run waits on delayed ACKs.
    transport = httpx.AsyncHTTPTransport(limits=limits, socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
    async with httpx.AsyncClient(timeout=600, transport=transport) as client:
        async def one(c: int) -> None:
            rng = random.Random(seed * 1000 + c)
            parts = [json.dumps({"role": "system", "content": f"You are agent {c}. " + "Follow the rules. " * 40}).encode(),
                     json.dumps({"role": "user", "content": f"task {c}: fix the failing tests"}).encode()]
            size = rng.randint(lo, hi)
            while len(parts) < size:
                parts += message_pair(rng, len(parts))
            prefix = bytearray(b'{"messages":[' + b",".join(parts))
            for turn in range(per):
                choices = b',"n":%d' % (1 + turn % 2) if alternate else b""
                body = bytes(prefix) + b'],"model":"gpt-4o","max_tokens":64' + choices + b"}"
                t = time.perf_counter()
                r = await client.post(url, content=body, headers={"content-type": "application/json",
                                                                 "authorization": "Bearer sk-bench"})
                dt = time.perf_counter() - t
                ms, read = r.headers.get("x-contextfold-proxy-ms"), r.headers.get("x-contextfold-read-ms")
                run.results.append(Result(dt, float(ms) if ms else None, float(read) if read else None,
                                          r.headers.get("x-contextfold-fold", ""), r.status_code))
                if pid is not None and len(run.results) % 1000 == 0:
                    run.rss.append((len(run.results), rss_mb(pid)))
                for m in message_pair(rng, len(parts) + 2 * turn):
                    prefix += b"," + m

        await asyncio.gather(*(one(c) for c in range(conversations)))
    return run


def percentiles(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {}
    xs = sorted(xs)
    def q(p: float) -> float:
        return xs[min(len(xs) - 1, int(p * len(xs)))]
    return {"n": len(xs), "p50": q(0.50), "p90": q(0.90), "p99": q(0.99), "p99.9": q(0.999), "max": xs[-1],
            "mean": statistics.fmean(xs)}


def body_reads(metrics: str) -> dict[str, int]:
    """``contextfold_body_reads_total`` of the chat API, by how the body was read."""
    prefix = 'contextfold_body_reads_total{api="chat",read="'
    return {line[len(prefix):].split('"', 1)[0]: int(line.rsplit(" ", 1)[1])
            for line in metrics.splitlines() if line.startswith(prefix)}


def measure(*, conversations: int, lo: int, hi: int, requests: int, seed: int = 1,
            context_window: int = 128_000, direct: bool = True, recall: bool = False,
            alternate: bool = False) -> dict[str, Any]:
    """Start the upstream and the proxy (with ``--recall`` when ``recall``), run the load (direct
    first when ``direct``; ``alternate``: see ``drive``), report."""
    up_port, proxy_port = free_port(), free_port()
    here = os.path.dirname(os.path.abspath(__file__))
    up = subprocess.Popen([sys.executable, "-c", f"import sys; sys.path.insert(0, {here!r}); import uvicorn, bench_proxy; "
                           f"uvicorn.run(bench_proxy.upstream_app, host='127.0.0.1', port={up_port}, "
                           "log_level='warning', lifespan='on')"])
    proxy = subprocess.Popen([sys.executable, "-m", "contextfold", "serve", "--upstream", f"http://127.0.0.1:{up_port}",
                              "--port", str(proxy_port), "--context-window", str(context_window),
                              "--log-level", "warning", *(["--recall"] if recall else [])])
    try:
        wait_up(f"http://127.0.0.1:{up_port}/", up)
        wait_up(f"http://127.0.0.1:{proxy_port}/healthz", proxy)
        report: dict[str, Any] = {"conversations": conversations, "messages": [lo, hi], "requests": requests,
                                  "recall": recall, "alternate_choices": alternate}
        if direct:
            d = asyncio.run(drive(f"http://127.0.0.1:{up_port}/v1/chat/completions", conversations=conversations,
                                  lo=lo, hi=hi, requests=requests, seed=seed, pid=None, alternate=alternate))
            report["direct_ms"] = percentiles([r.seconds * 1000 for r in d.results])
        rss0 = rss_mb(proxy.pid)
        p = asyncio.run(drive(f"http://127.0.0.1:{proxy_port}/v1/chat/completions", conversations=conversations,
                              lo=lo, hi=hi, requests=requests, seed=seed, pid=proxy.pid, alternate=alternate))
        quiet = [r for r in p.results if r.fold != "new"]
        loud = [r for r in p.results if r.fold == "new"]
        report["errors"] = sum(r.status != 200 for r in p.results)
        report["proxied_ms"] = percentiles([r.seconds * 1000 for r in p.results])
        report["proxy_own_ms_no_compaction"] = percentiles([r.proxy_ms for r in quiet if r.proxy_ms is not None])
        report["proxy_own_ms_compacting"] = percentiles([r.proxy_ms for r in loud if r.proxy_ms is not None])
        report["body_read_ms"] = percentiles([r.read_ms for r in p.results if r.read_ms is not None])
        report["folds"] = {k: sum(r.fold == k for r in p.results) for k in ("none", "new", "reused")}
        report["rss_mb"] = {"before": rss0, "samples": p.rss, "after": rss_mb(proxy.pid)}
        report["body_reads"] = body_reads(httpx.get(f"http://127.0.0.1:{proxy_port}/metrics").text)
        return report
    finally:
        for proc in (proxy, up):
            proc.terminate()
            proc.wait(timeout=30)


def bench_proxy_smoke(benchmark: Any) -> None:
    """The CI smoke run: a small load through the real proxy process, zero errors."""
    report = benchmark.pedantic(
        lambda: measure(conversations=4, lo=200, hi=400, requests=40, context_window=8_000, direct=False),
        rounds=1, iterations=1)
    assert report["errors"] == 0
    assert report["folds"]["new"] >= 1  # the 8k window makes these histories compact
    assert report["folds"]["reused"] >= 1
    assert report["body_reads"].get("appended", 0) >= 1  # turns that only append are read from where they left off


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help="64 conversations of 2k-10k messages, 10^4 requests")
    ap.add_argument("--conversations", type=int, default=8)
    ap.add_argument("--min-messages", type=int, default=2000)
    ap.add_argument("--max-messages", type=int, default=10_000)
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--context-window", type=int, default=128_000)
    ap.add_argument("--no-direct", action="store_true", help="skip the direct run")
    ap.add_argument("--recall", action="store_true", help="run the proxy with --recall")
    ap.add_argument("--alternate-choices", action="store_true", help="turns ask for n=1 and n=2 by turns")
    ap.add_argument("--curve", type=str, default=None,
                    help="comma-separated concurrency levels, e.g. 8,16,32,64 (requests scale with them)")
    a = ap.parse_args()
    if a.curve:
        for level in (int(x) for x in a.curve.split(",")):
            report = measure(conversations=level, lo=a.min_messages, hi=a.max_messages,
                             requests=max(a.requests, level * 16), context_window=a.context_window,
                             direct=not a.no_direct, recall=a.recall, alternate=a.alternate_choices)
            print(json.dumps(report), flush=True)
        return
    if a.full:
        a.conversations, a.min_messages, a.max_messages, a.requests = 64, 2000, 10_000, 10_000
    report = measure(conversations=a.conversations, lo=a.min_messages, hi=a.max_messages, requests=a.requests,
                     context_window=a.context_window, direct=not a.no_direct, recall=a.recall,
                     alternate=a.alternate_choices)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
