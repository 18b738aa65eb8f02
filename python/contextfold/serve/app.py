"""The ASGI app of ``contextfold serve``: the providers' own paths, forwarded to an upstream.

Starlette for routing and responses, httpx's ``AsyncClient`` (one pooled client per app) to the
upstream, served by uvicorn: three small, well-kept pieces with no framework between the bytes
and the socket, so a response streams through as it comes (no buffering of server-sent events)
and a body that needs no change is forwarded as the very bytes the client sent.

Routes: ``POST /v1/chat/completions``, ``/v1/responses``, ``/v1/messages``,
``/v1beta/models/{model}:generateContent`` (and ``:streamGenerateContent``; ``/v1/models/...``
too) are priced, folded and compacted; any other path is forwarded unchanged. ``GET /healthz``
and ``GET /metrics`` (Prometheus text) are the proxy's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import re
import signal
import socket
import time
import zlib
from collections.abc import AsyncIterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from email.utils import formatdate
from typing import TYPE_CHECKING, Any

import httpx
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from contextfold._core import preload
from contextfold.errors import InvalidUsageError
from contextfold.serve.apis import API_BY_NAME, Api
from contextfold.serve.config import ServeConfig
from contextfold.serve.fold_cache import FoldCache, MemoryFoldCache, RedisFoldCache
from contextfold.serve.folding import Conversation, Folder, Outcome
from contextfold.serve.metrics import Metrics
from contextfold.serve.recall_loop import RecallRequest, RecallRound, RecallRoute, StreamRelay, recall_round, response_of
from contextfold.serve.sse import HeldEvents, split_events
from contextfold.session import prompt_tokens_of

if TYPE_CHECKING:
    from contextfold._core import _Encoding

__all__ = ["create_app", "route_of"]

log = logging.getLogger("contextfold.serve")

# Hop-by-hop headers (RFC 9110 7.6.1) and those the transport sets again: never forwarded.
_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
                  "transfer-encoding", "upgrade", "host", "content-length"})
_HOP_BYTES = frozenset(h.encode() for h in _HOP)
#: Longest SSE line kept while looking for usage (longer lines pass through unread).
_MAX_LINE = 1 << 20


def route_of(method: str, path: str) -> tuple[Api | None, str | None]:
    """The API a request path belongs to and the model named in the path (Gemini), or None."""
    if method != "POST":
        return None, None
    if path.endswith("/chat/completions"):
        return API_BY_NAME["chat"], None
    if path.endswith("/responses"):
        return API_BY_NAME["responses"], None
    # Anthropic's Messages API is /v1/messages itself (a gateway may mount it under a prefix);
    # other APIs' paths end in /messages too (OpenAI Assistants' /v1/threads/{id}/messages) and
    # are not Anthropic's.
    if path.endswith("/v1/messages"):
        return API_BY_NAME["anthropic"], None
    for suffix in (":generateContent", ":streamGenerateContent"):
        if path.endswith(suffix) and "/models/" in path:
            return API_BY_NAME["gemini"], path[: -len(suffix)].rsplit("/models/", 1)[1]
    return None, None


def _upstream_key(api: Api | None, path: str, headers: Headers) -> str:
    """Which upstream a request goes to: its API's, or for a path the proxy does not fold, the
    API family it belongs to (``chat``, the default upstream, when nothing says otherwise)."""
    if api is not None:
        return api.name
    # Anthropic's other endpoints (/v1/messages/count_tokens, /v1/messages/batches, /v1/models,
    # /v1/files) share paths with OpenAI's, but its SDK sends anthropic-version on every request
    # and OpenAI's never does: without this they would reach the OpenAI upstream with the
    # Anthropic key.
    if path.startswith("/v1/messages/") or "anthropic-version" in headers:
        return "anthropic"
    if path.startswith("/v1beta") or "/models/" in path and ":" in path:
        return "gemini"
    return "chat"


#: The most bytes of a JSON response held to read it whole (usage, recall calls); more goes on to
#: the client as it comes, unread.
MAX_HELD_RESPONSE = 16 << 20


def _decoded(resp: httpx.Response, data: bytes) -> bytes | None:
    """A held response body without its content-encoding, at most ``MAX_HELD_RESPONSE`` bytes
    of it; None when it is larger decoded (a gzip bomb) or in an encoding not read here. The
    proxy asks for identity, which upstreams send; gzip and deflate are read all the same."""
    encoding = resp.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return data
    if encoding not in ("gzip", "x-gzip", "deflate"):
        return None
    # wbits 47: a zlib or gzip header, read from the data.
    d = zlib.decompressobj(47)
    try:
        out = d.decompress(data, MAX_HELD_RESPONSE)
    except zlib.error:
        return None
    return None if d.unconsumed_tail else out


def _one_document(resp: httpx.Response) -> bool:
    """Whether a response is one JSON document (or says nothing of its type): the proxy reads
    such a body whole (its usage, its recall calls), which delays nothing a client could use of
    it. Any other body (Ollama's NDJSON stream, a file) is not read and goes on as it comes."""
    media = resp.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return media in ("", "application/json") or media.endswith("+json")


def _relayed(content: bytes | AsyncIterator[bytes], status: int, headers: list[tuple[bytes, bytes]]) -> Response:
    """A response to the client with ``headers`` as they are, a name repeated as often as it
    is listed (starlette takes a mapping, which holds one value a name); a ``bytes`` body gets
    its content-length."""
    out = Response(content, status_code=status) if isinstance(content, bytes) else StreamingResponse(
        content, status_code=status)
    out.raw_headers = [*out.raw_headers, *headers]
    return out


class _BodyRefused(Exception):
    """A request body the proxy will not read: its status, the error's kind, the message."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


#: The content-encodings of a request body the proxy decodes to read it (the standard library's:
#: no brotli nor zstd there).
_READ_CODINGS = ("gzip", "x-gzip", "deflate")


def _request_decoded(raw: bytes, encoding: str, limit: int) -> bytes:
    """A request body without its ``Content-Encoding`` ``encoding`` (codings listed in the order
    they were applied), at most ``limit`` bytes of it decoded: ``_BodyRefused`` past that (a
    gzip bomb is refused as the plain body of that size is, never inflated whole); ValueError,
    saying why, for an encoding not read here or data that does not decode."""
    codings = [c for c in (c.strip().lower() for c in encoding.split(",")) if c not in ("", "identity")]
    for coding in codings:
        if coding not in _READ_CODINGS:
            raise ValueError(f"its content-encoding {coding!r} is not one this proxy reads (gzip, deflate)")
    data = raw
    for coding in reversed(codings):
        data = _inflated(data, coding, limit)
    return data


def _inflated(data: bytes, coding: str, limit: int) -> bytes:
    if coding == "deflate":
        # RFC 9110's deflate is a zlib stream; some clients send the raw deflate data alone.
        zlib_header = len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0
        wbits = 15 if zlib_header else -15
    else:
        wbits = 31
    out = bytearray()
    rest = data
    while rest:
        d = zlib.decompressobj(wbits)
        try:
            out += d.decompress(rest, limit - len(out) + 1)
        except zlib.error as e:
            raise ValueError(f"its {coding} encoding does not decode: {e}") from None
        if len(out) > limit:
            raise _BodyRefused(413, "request_too_large",
                               f"request body over this proxy's limit of {limit} bytes once its {coding} encoding is "
                               "decoded")
        if not d.eof:
            raise ValueError(f"its {coding} data ends before its end")
        # (gzip: members one after another make one body, as gzip(1) reads them.)
        rest = d.unused_data if wbits == 31 else b""
    return bytes(out)


class _UsageTap:
    """Reads the prompt tokens a response reports, from JSON or from SSE lines, without holding
    the stream: lines are looked at as they pass."""

    def __init__(self) -> None:
        # The line begun in an earlier chunk; None while skipping a line over ``_MAX_LINE``. Kept
        # in a bytearray that a chunk extends: joined anew with each chunk, a long line cost
        # quadratic time on the event loop (below).
        self._carry: bytearray | None = bytearray()
        self.tokens: int | None = None

    def feed(self, chunk: bytes) -> None:
        nl = chunk.rfind(b"\n")
        if nl < 0:
            if self._carry is not None:
                self._carry += chunk
                if len(self._carry) > _MAX_LINE:
                    self._carry = None
            return
        lines = chunk[:nl].split(b"\n")
        if self._carry is None:
            lines = lines[1:]  # the end of a line too long to read
        elif self._carry:
            lines[0] = bytes(self._carry) + lines[0]
        self._carry = bytearray(chunk[nl + 1:]) if len(chunk) - nl - 1 <= _MAX_LINE else None
        for line in lines:
            if line.startswith(b"data:") and b"sage" in line:  # usage / usageMetadata
                self._read(line[5:])

    def finish(self) -> None:
        if self._carry is not None and self._carry.startswith(b"data:"):
            self._read(bytes(self._carry[5:]))
        self._carry = bytearray()

    def read_json(self, body: bytes) -> None:
        self._read(body)

    def _read(self, text: bytes) -> None:
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            return
        if not isinstance(obj, dict):
            return
        # Anthropic's message_start and the Responses API's events wrap the response.
        inner = obj.get("message") if obj.get("type") == "message_start" else obj.get("response")
        if isinstance(inner, dict):
            obj = inner
        if "usage" not in obj and "usageMetadata" not in obj:
            return
        try:
            tokens, _ = prompt_tokens_of(obj)
        except (TypeError, InvalidUsageError, ValueError):
            return
        if tokens:
            self.tokens = max(tokens, self.tokens or 0)


class _Proxy:
    def __init__(self, config: ServeConfig, cache: FoldCache | None) -> None:
        self.config = config
        if cache is None:
            cache = RedisFoldCache(config.redis) if config.redis else MemoryFoldCache()
        self.cache = cache
        self.folder = Folder(config, cache)
        self.metrics = Metrics()
        self.client: httpx.AsyncClient | None = None
        self.workers = ThreadPoolExecutor(max_workers=config.workers, thread_name_prefix="contextfold-fold")
        self.preloaded: Future[list[_Encoding]] | None = None

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        limits = httpx.Limits(max_connections=self.config.max_connections,
                              max_keepalive_connections=self.config.max_connections)
        # TCP_NODELAY: httpx's async transport leaves Nagle on, and a body's last partial segment
        # then waits for the upstream's delayed ACK (measured: 4.5 ms -> 0.9 ms per 250 kB POST).
        transport = httpx.AsyncHTTPTransport(limits=limits, socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(self.config.timeout), transport=transport)
        # The first OpenAI-priced body would build the o200k vocabulary on a worker holding the
        # GIL (~0.15-0.3 s, the event loop stalled for every connection meanwhile:
        # benches/first_call.py); built here on a worker with the GIL released, start-up not
        # waiting for it.
        self.preloaded = self.workers.submit(preload)
        try:
            yield
        finally:
            await self.client.aclose()
            self.workers.shutdown(wait=False, cancel_futures=True)
            close = getattr(self.cache, "close", None)
            if callable(close):
                close()

    async def healthz(self, request: Request) -> Response:
        return PlainTextResponse("ok\n")

    async def metrics_page(self, request: Request) -> Response:
        return PlainTextResponse(self.metrics.render(), media_type="text/plain; version=0.0.4")

    async def forward(self, request: Request) -> Response:
        t0 = time.perf_counter()
        path = request.url.path
        api, model = route_of(request.method, path)
        key = _upstream_key(api, path, request.headers)
        # Errors the proxy answers itself are in the shape of the API the request was for.
        shape = api if api is not None else API_BY_NAME[key]
        try:
            raw = await request.body() if api is None else await self._bounded_body(request)
        except ClientDisconnect:
            # Gone before its body arrived: nobody to answer (it was an unhandled exception, logged
            # with a traceback at every dropped upload).
            return Response(status_code=400)
        except _BodyRefused as e:
            return self._error(shape, e.status, str(e), e.kind, Outcome(b""))
        t1 = time.perf_counter()
        outcome: Outcome
        # A compressed body is read decoded (it was forwarded unread: "body is not UTF-8").
        decoded, unread = raw, None
        coding = request.headers.get("content-encoding", "") if api is not None and raw else ""
        if coding.strip().lower() not in ("", "identity"):
            try:
                decoded = await asyncio.get_running_loop().run_in_executor(
                    self.workers, _request_decoded, raw, coding, self.config.max_body_bytes)
            except _BodyRefused as e:
                return self._error(shape, e.status, str(e), e.kind, Outcome(b""))
            except ValueError as e:
                unread = f"body not read: {e}"
        if api is None or not raw:
            outcome = Outcome(raw)
        elif unread is not None:
            outcome = Outcome(raw, reason=unread)
        else:
            fast = self.folder.fast(api, decoded, model)
            self.metrics.body_read(api.name, "whole" if fast is None else "appended")
            # Whole reads and compactions run on the few worker threads: the loop keeps relaying
            # the other conversations, and competes for the GIL with no more than these.
            outcome = fast if fast is not None else await asyncio.get_running_loop().run_in_executor(
                self.workers, self.folder.slow, api, decoded, model)
        # A body decoded and changed goes on plain, its content-encoding dropped (httpx sets its
        # length); one left as it was, as the very bytes the client sent, encoded.
        plain = decoded is not raw and outcome.body != decoded
        if decoded is not raw and not plain:
            outcome = replace(outcome, body=raw)
        try:
            base = self.config.upstream_for(key)
        except ValueError as e:
            return self._error(shape, 502, str(e), "upstream_not_configured", outcome)
        if outcome.refuse and api is not None:
            self.metrics.request(api.name, "refused")
            msg = f"request over the context budget and not compacted: {outcome.reason}"
            return self._error(shape, 413, msg, "request_too_large", outcome)
        # The path as the client sent it, percent-escapes kept: decoded, a "%3F" in a Gemini model
        # name became a "?" that started a query of the client's choosing, and a "%00" made a URL
        # httpx refuses (a 500).
        target = request.scope.get("raw_path") or path.encode()
        if not target.startswith(b"/"):
            # (Appended to the base URL, "@host/..." would name another host.)
            return self._error(shape, 400, "the request target must be a path starting with /", "invalid_request_error",
                               outcome)
        url = base + target.decode("latin-1") + (("?" + request.url.query) if request.url.query else "")
        try:
            httpx.URL(url)
        except httpx.InvalidURL as e:  # (over 65,536 characters, say)
            return self._error(shape, 400, f"the request URL cannot be forwarded: {e}", "invalid_request_error", outcome)
        # Header values as the bytes that came: h11 accepts any byte from 0x80 in a value (UTF-8,
        # latin-1), which httpx refuses to encode from str (a 500).
        headers = [(k, v) for k, v in request.headers.raw if k.lower() not in _HOP_BYTES and k.lower() != b"accept-encoding"
                   and not (plain and k.lower() == b"content-encoding")]
        # Identity, so the usage in the response can be read for calibration.
        headers.append((b"accept-encoding", b"identity"))
        added = time.perf_counter() - t1
        self.metrics.latency(added, compacted=outcome.compacted)
        if api is not None and outcome.recall is not None:
            return await self._recalling(api, request.method, url, headers, outcome, outcome.recall, base, added, t1 - t0)
        try:
            resp = await self._send(request.method, url, headers, outcome.body)
        except httpx.TransportError as e:
            return self._unreachable(shape, base, e, outcome)
        if (bad := await self._bad_status(resp, shape, base, outcome)) is not None:
            return bad
        if api is not None:
            self._count(api, outcome)
        tap = _UsageTap()
        if resp.headers.get("content-type", "").startswith("text/event-stream"):
            out_headers = self._out_headers(resp, outcome, added, t1 - t0, decoded=False)
            return _relayed(self._stream(resp, tap, outcome.conversation, shape, base), resp.status_code, out_headers)
        # Read whole only a successful JSON answer of a compacted route, for its usage (Gemini's
        # :streamGenerateContent without alt=sse is a JSON array of chunks, with no usage read
        # from it here): held, an NDJSON stream (Ollama's /api/chat) reached the client all at once
        # at its end.
        if api is None or resp.status_code >= 300 or not _one_document(resp) or path.endswith(":streamGenerateContent"):
            out_headers = self._out_headers(resp, outcome, added, t1 - t0, decoded=False)
            return _relayed(self._rest(resp, b"", resp.aiter_raw(), base), resp.status_code, out_headers)
        try:
            body, rest = await self._held(resp)
        except httpx.TransportError as e:
            # Headers came, then the body stalled past --timeout or was cut off: nothing has reached
            # the client yet, so it gets the same 502 as an upstream that never answered.
            await resp.aclose()
            return self._broke_off(shape, base, e, outcome)
        out_headers = self._out_headers(resp, outcome, added, t1 - t0, decoded=False)
        if rest is not None:
            return _relayed(self._rest(resp, body, rest, base), resp.status_code, out_headers)
        if resp.status_code < 300 and (text := _decoded(resp, body)) is not None:
            tap.read_json(text)
            self._calibrate(outcome.conversation, tap)
        return _relayed(body, resp.status_code, out_headers)

    async def _held(self, resp: httpx.Response) -> tuple[bytes, AsyncIterator[bytes] | None]:
        """A response body as the upstream sent it (its content-encoding kept), read up to
        ``MAX_HELD_RESPONSE`` bytes; and the rest of it to come (None: that was all of it, and
        the response is closed).
        Read decoded and whole, a 1 MB gzip body that expands to 1 GB took the proxy to 3.2 GB
        RSS and 18.7 s; a 300 MB body was held whole before a byte of it went on."""
        chunks: list[bytes] = []
        size = 0
        rest = resp.aiter_raw()
        async for chunk in rest:
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_HELD_RESPONSE:
                return b"".join(chunks), rest
        await resp.aclose()
        return b"".join(chunks), None

    async def _rest(self, resp: httpx.Response, head: bytes, rest: AsyncIterator[bytes], base: str
                    ) -> AsyncIterator[bytes]:
        """A response body not read (further): ``head`` (what was held, if any: a response past
        ``MAX_HELD_RESPONSE``), then the rest, each chunk as it comes. Cut off midway, it ends
        there: the client's parser refuses what came (a JSON body, an NDJSON line cut short)."""
        try:
            if head:
                yield head
            async for chunk in rest:
                yield chunk
        except httpx.TransportError as e:
            self.metrics.upstream_error()
            log.warning("upstream %s broke off a response it was relaying: %s", base, type(e).__name__)
        finally:
            await resp.aclose()

    async def _bad_status(self, resp: httpx.Response, shape: Api, base: str, outcome: Outcome,
                          req: RecallRequest | None = None) -> Response | None:
        """A 502 for a status the proxy cannot relay (outside 100-599: uvicorn has no reason phrase
        for it, and a 999 dropped the client's connection with a KeyError traceback); else None."""
        if 100 <= resp.status_code <= 599:
            return None
        await resp.aclose()
        self.metrics.upstream_error()
        log.warning("upstream %s answered status %d", base, resp.status_code)
        return self._error(shape, 502, f"upstream {base} answered an invalid HTTP status {resp.status_code}",
                           "bad_gateway", outcome, req)

    async def _bounded_body(self, request: Request) -> bytes:
        """The body of a request the proxy will parse, read within ``max_body_bytes`` and
        ``body_timeout``: it is held whole, then parsed into objects many times its size (10^6
        short messages, 35 MB: 1.2 GB at the peak), and a client sending a byte a second held the
        request open for as long as it liked. ``_BodyRefused`` past either."""
        limit = self.config.max_body_bytes
        length = request.headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            raise _BodyRefused(413, "request_too_large",
                               f"request body of {int(length)} bytes is over this proxy's limit of {limit} bytes")
        chunks: list[bytes] = []
        size = 0

        async def read() -> None:
            nonlocal size
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise _BodyRefused(413, "request_too_large",
                                       f"request body over this proxy's limit of {limit} bytes")
                chunks.append(chunk)
        try:
            await asyncio.wait_for(read(), self.config.body_timeout)
        except asyncio.TimeoutError:
            raise _BodyRefused(408, "request_timeout", f"request body not received within {self.config.body_timeout:g} s "
                               f"({size} bytes came)") from None
        return b"".join(chunks)

    async def _stream(self, resp: httpx.Response, tap: _UsageTap, conv: Conversation | None, shape: Api,
                      base: str) -> AsyncIterator[bytes]:
        # An SSE client acts on an event only once its blank line has arrived, so the bytes after
        # the last complete event are held until the rest of that event comes: that delays nothing
        # the client could use, and lets a stream the upstream breaks off end on an event boundary.
        # An upstream that never ends an event (not SSE in truth) is relayed as it comes.
        held = HeldEvents(flush_over=_MAX_LINE)
        try:
            async for chunk in resp.aiter_raw():
                tap.feed(chunk)
                if out := held.feed(chunk):
                    yield out
            tap.finish()
            if rest := held.rest:
                yield rest  # the upstream's last event, sent without its blank line
            if resp.status_code < 300:
                self._calibrate(conv, tap)
        except httpx.TransportError as e:
            # The upstream stalled past --timeout (or dropped the connection) mid-stream. The status
            # line is long gone, so the stream is ended cleanly (a complete HTTP body) with one
            # error event in the API's own stream shape, which its SDK raises as an error: a client
            # must not take a cut-off answer for a whole one, and an aborted connection would reach
            # it as a transport error naming no cause. The half-sent event is dropped.
            yield self._stream_broke_off(shape, base, e)
        finally:
            await resp.aclose()

    async def _recalling(self, api: Api, method: str, url: str, headers: list[tuple[bytes, bytes]], outcome: Outcome,
                         route: RecallRoute, base: str, added: float, read: float) -> Response:
        """Send a body that carries the recall tool and answer the model's recall calls
        (``recall_loop``). A JSON response is read whole: the first that calls no recall (or the
        last allowed) goes back as the upstream wrote it. A stream is relayed as it comes up to
        a tool call's first event (``_recall_stream``)."""
        req = RecallRequest(outcome.body, route)
        try:
            resp = await self._send(method, url, headers, req.body)
        except httpx.TransportError as e:
            return self._unreachable(api, base, e, outcome, req)
        if (bad := await self._bad_status(resp, api, base, outcome, req)) is not None:
            return bad
        self._count(api, outcome)
        if resp.status_code < 300 and resp.headers.get("content-type", "").startswith("text/event-stream"):
            return _relayed(self._recall_stream(api, method, url, headers, outcome, req, base, resp), resp.status_code,
                            self._out_headers(resp, outcome, added, read, decoded=False))
        first = True
        while True:
            if resp.status_code < 300 and not _one_document(resp):
                # (No recall call in it to read: it goes on as it comes.)
                return _relayed(self._rest(resp, b"", resp.aiter_raw(), base), resp.status_code, self._out_headers(
                    resp, outcome, added, read, decoded=False, extra=self._report_headers(req)))
            try:
                data, rest = await self._held(resp)
            except httpx.TransportError as e:
                await resp.aclose()
                return self._broke_off(api, base, e, outcome, req)
            out_headers = self._out_headers(resp, outcome, added, read, decoded=False, extra=self._report_headers(req))
            if rest is not None:
                # (No model turn is that large: it goes on as it comes, unread.)
                return _relayed(self._rest(resp, data, rest, base), resp.status_code, out_headers)
            text = _decoded(resp, data)
            if first and resp.status_code < 300 and text is not None:
                # Only the first response's usage is of the request priced.
                tap = _UsageTap()
                tap.read_json(text)
                self._calibrate(outcome.conversation, tap)
            first = False
            if resp.status_code >= 300 or req.told or text is None:
                break
            got = await self._round(api, response_of(api.name, text), req)
            if got is None:
                break
            req.answered(got)
            try:
                resp = await self._send(method, url, headers, req.body)
            except httpx.TransportError as e:
                return self._unreachable(api, base, e, outcome, req)
            if (bad := await self._bad_status(resp, api, base, outcome, req)) is not None:
                return bad
        return _relayed(data, resp.status_code, out_headers)

    async def _send(self, method: str, url: str, headers: list[tuple[bytes, bytes]], body: bytes) -> httpx.Response:
        """One request to the upstream, its response streamed (headers read, body not yet)."""
        assert self.client is not None, "the app runs inside its lifespan"
        return await self.client.send(self.client.build_request(method, url, headers=headers, content=body),
                                      stream=True)

    async def _round(self, api: Api, response: Any, req: RecallRequest) -> RecallRound | None:
        """The answered round for ``response``'s recall calls (None: it calls none); the note that
        recall is spent once ``req`` has had ``--recall-rounds`` rounds. Counted when paged."""
        assert self.folder.store is not None
        got = await asyncio.get_running_loop().run_in_executor(self.workers, functools.partial(
            recall_round, api.name, api.provider, response, self.folder.store, req.route,
            rounds=self.config.recall_rounds, spent=req.rounds >= self.config.recall_rounds))
        if got is not None and got.paged:
            self.metrics.recall(api.name)
        return got

    async def _recall_stream(self, api: Api, method: str, url: str, headers: list[tuple[bytes, bytes]], outcome: Outcome,
                             req: RecallRequest, base: str, resp: httpx.Response) -> AsyncIterator[bytes]:
        """The streamed rounds of a body that carries the recall tool, as one stream to the
        client (``StreamRelay``): each round's events go out as they come up to a tool call's
        first one; a round that calls recall is answered and the next round's events continue
        the stream, which ends with the request's report (``StreamRelay.finish``)."""
        relay = StreamRelay(api.name)
        try:
            while True:
                # The round is held to read its recall calls, so it is bounded: an upstream that
                # never ended its stream (or its event) grew the proxy without limit, and re-read
                # the bytes of an event with no blank line yet at each chunk (300 MB sent with no
                # separator: nothing reached the client in 60 s).
                held = HeldEvents()
                kept = 0
                async for chunk in resp.aiter_raw():
                    kept += len(chunk)
                    if kept > MAX_HELD_RESPONSE:
                        self.metrics.upstream_error()
                        log.warning("upstream %s sent a streamed round over %d bytes", base, MAX_HELD_RESPONSE)
                        yield relay.fail(api.stream_error(
                            f"upstream {base} sent a streamed round over {MAX_HELD_RESPONSE} bytes, more than the proxy "
                            "holds to answer its recall calls", "bad_gateway"), req.report())
                        return
                    for event in split_events(held.feed(chunk))[0]:
                        if out := relay.feed(event):
                            yield out
                await resp.aclose()
                pending = held.rest
                if pending.strip():
                    if out := relay.feed(pending):
                        yield out
                if relay.rounds == 0:
                    tap = _UsageTap()
                    tap.feed(relay.round_data())
                    tap.finish()
                    self._calibrate(outcome.conversation, tap)
                parsed = relay.response()
                got = None if req.told else await self._round(api, parsed, req)
                if got is None:
                    yield relay.finish(req.report())
                    return
                if sent := relay.end(True, parsed):
                    yield sent
                req.answered(got)
                resp = await self._send(method, url, headers, req.body)
                if resp.status_code >= 300 or not resp.headers.get("content-type", "").startswith("text/event-stream"):
                    # The stream to the client has begun: the failed round ends it with an error
                    # event its SDK raises.
                    await resp.aread()
                    self.metrics.upstream_error()
                    yield relay.fail(api.stream_error(
                        f"upstream {base} answered a recall round with status {resp.status_code}", "bad_gateway"),
                        req.report())
                    return
        except httpx.TransportError as e:
            yield relay.fail(self._stream_broke_off(api, base, e), req.report())
        finally:
            await resp.aclose()

    def _out_headers(self, resp: httpx.Response, outcome: Outcome, added: float, read: float, *,
                     decoded: bool, extra: dict[str, str] | None = None) -> list[tuple[bytes, bytes]]:
        """The upstream's response headers as relayed (hop-by-hop dropped; content-encoding too
        for a body read whole, ``decoded``, which httpx has decoded; a stream is relayed raw),
        each as often as it came, with the proxy's own (and ``extra``): what it did, its own work
        (after the body arrived, before it left) and the body's arrival (milliseconds). A header
        the proxy sets replaces the upstream's of that name."""
        own = self._headers(outcome)
        own["x-contextfold-proxy-ms"] = f"{added * 1000:.3f}"
        own["x-contextfold-read-ms"] = f"{read * 1000:.3f}"
        own.update(extra or {})
        mine = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in own.items()]
        names = {k for k, _ in mine}
        # A list, not a dict: an upstream's headers repeat (OpenAI sends two Set-Cookie), and a
        # dict kept only the last of them. Latin-1 both ways: the very bytes the upstream sent
        # (decoded as UTF-8 by httpx, a value beyond latin-1 could not be written back: a 500).
        kept = [(k.lower(), v) for k, v in resp.headers.raw
                if (name := k.lower()) not in _HOP_BYTES and name not in names
                and not (decoded and name == b"content-encoding")]
        return kept + mine

    def _unreachable(self, shape: Api, base: str, e: Exception, outcome: Outcome,
                     req: RecallRequest | None = None) -> Response:
        """A 502 in ``shape`` for an upstream that could not be reached; with the report of
        ``req``'s rounds when the request was sent with the recall tool (``_report_headers``)."""
        self.metrics.upstream_error()
        log.warning("upstream %s unreachable: %s", base, type(e).__name__)
        return self._error(shape, 502, f"upstream {base} unreachable: {type(e).__name__}", "bad_gateway", outcome, req)

    def _broke_off(self, shape: Api, base: str, e: Exception, outcome: Outcome,
                   req: RecallRequest | None = None) -> Response:
        """A 502 in ``shape`` for an upstream that broke off its response (as ``_unreachable``)."""
        self.metrics.upstream_error()
        log.warning("upstream %s broke off its response: %s", base, type(e).__name__)
        return self._error(shape, 502, f"upstream {base} broke off its response: {type(e).__name__}", "bad_gateway",
                           outcome, req)

    def _stream_broke_off(self, shape: Api, base: str, e: Exception) -> bytes:
        self.metrics.upstream_error()
        log.warning("upstream %s broke off its stream: %s", base, type(e).__name__)
        return shape.stream_error(f"upstream {base} broke off its stream: {type(e).__name__}", "bad_gateway")

    def _count(self, api: Api, outcome: Outcome) -> None:
        self.metrics.request(api.name, "compacted" if outcome.compacted else "forwarded")
        if outcome.compacted:
            self.metrics.compaction(api.name, outcome.strategy, outcome.saved)
        elif outcome.fold == "reused":
            self.metrics.hit()
        if outcome.recall_withheld is not None:
            self.metrics.recall_withheld(api.name, outcome.recall_withheld)

    def _calibrate(self, conv: Conversation | None, tap: _UsageTap) -> None:
        if conv is not None and tap.tokens is not None:
            conv.record_usage(tap.tokens)

    @staticmethod
    def _headers(o: Outcome) -> dict[str, str]:
        h = {"x-contextfold-strategy": o.strategy, "x-contextfold-fold": o.fold}
        if o.tokens_before is not None:
            h["x-contextfold-tokens-before"] = str(o.tokens_before)
        if o.tokens_after is not None:
            h["x-contextfold-tokens-after"] = str(o.tokens_after)
        if o.folded:
            h["x-contextfold-folded-messages"] = str(o.folded)
        if o.recall_withheld is not None:
            h["x-contextfold-recall-withheld"] = o.recall_withheld
        if o.reason:
            # Header values are latin-1 and one line.
            h["x-contextfold-not-compacted"] = o.reason.encode("ascii", "replace").decode()[:500].replace("\n", " ")
        return h

    @staticmethod
    def _report_headers(req: RecallRequest) -> dict[str, str]:
        """What ``req``'s recall rounds spent (``RecallRequest.report``), as a JSON response's
        headers. Every response to a request sent with the recall tool carries them, an error
        too: rounds that ran before it spent their tokens all the same."""
        report = req.report()
        h = {"x-contextfold-recall-rounds": str(report["recall-rounds"]),
             "x-contextfold-recall-tokens": str(report["recall-tokens"])}
        if report["recall-spent"]:
            h["x-contextfold-recall-spent"] = "1"
        return h

    def _error(self, shape: Api, status: int, message: str, kind: str, o: Outcome,
               req: RecallRequest | None = None) -> Response:
        headers = self._headers(o)
        if req is not None:
            headers.update(self._report_headers(req))
        return Response(shape.error_body(status, message, kind), status_code=status,
                        media_type="application/json", headers=headers)


def create_app(config: ServeConfig, *, cache: FoldCache | None = None) -> Starlette:
    """The proxy as an ASGI app (run it with uvicorn, or any ASGI server). ``cache`` overrides
    the fold cache the config names (memory, or Redis with ``config.redis``)."""
    proxy = _Proxy(config, cache)
    forward = Route("/{path:path}", proxy.forward, methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
    # Any path: "{path:path}" is ".*", which stops at a line break (a "%0A" in the path), and such
    # a request got starlette's plain-text 404.
    forward.path_regex = re.compile(r"^/(?P<path>.*)$", re.DOTALL)
    routes = [
        Route("/healthz", proxy.healthz, methods=["GET"]),
        Route("/metrics", proxy.metrics_page, methods=["GET"]),
        forward,
    ]

    async def unrouted(request: Request, exc: Exception) -> Response:
        # (A target that is no path: "*", or a whole URL, "http://host/v1/chat/completions".)
        shape = API_BY_NAME[_upstream_key(None, request.url.path, request.headers)]
        status = exc.status_code if isinstance(exc, HTTPException) else 404
        return proxy._error(shape, status, f"no route for {request.method} {request.url.path[:64]!r}",
                            "invalid_request_error", Outcome(b""))

    app = Starlette(routes=routes, lifespan=proxy.lifespan, exception_handlers={404: unrouted, 405: unrouted},
                    middleware=[Middleware(_DateHeader)])
    app.state.proxy = proxy
    return app


class _DateHeader:
    """A ``Date`` on the responses the proxy writes itself (errors, /healthz, /metrics); a relayed
    response keeps the upstream's. uvicorn's own ``date`` and ``server`` headers are off
    (``server_options``): beside the upstream's they were sent twice, and a client's HTTP
    library joined the two dates into one value."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def dated(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or ())
                if not any(k.lower() == b"date" for k, _ in headers):
                    message = {**message, "headers": [*headers, (b"date", formatdate(usegmt=True).encode())]}
            await send(message)

        await self.app(scope, receive, dated)


#: Bytes of a request's head (its request line and headers) uvicorn's h11 parser holds while it
#: arrives: above httpx's 65,536-character URL limit, so a longer URL reaches the proxy, which
#: answers it in the API's error shape. At h11's default of 16 KiB such a head got a plain-text
#: "Invalid HTTP request received." whenever it came in more than one read (under load: the
#: suite's long-URL test failed in one clean-checkout run of three).
MAX_HEAD_BYTES = 256 * 1024


def server_options() -> dict[str, Any]:
    """The uvicorn settings the proxy is served with (``run``; the test suite's servers too)."""
    return {"h11_max_incomplete_event_size": MAX_HEAD_BYTES, "server_header": False, "date_header": False}


def _stopped(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def run(config: ServeConfig, **uvicorn_options: Any) -> None:
    """Serve ``config`` with uvicorn until SIGINT or SIGTERM, then return (exit code 0);
    ``uvicorn_options`` over ``server_options()``. The access log never shows a credential
    sent in the query (``access_log.RedactSecrets``)."""
    import uvicorn

    from contextfold.serve.access_log import RedactSecrets

    server = uvicorn.Server(uvicorn.Config(create_app(config), host=config.host, port=config.port,
                                           **{**server_options(), **uvicorn_options}))
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, RedactSecrets) for f in access.filters):
        access.addFilter(RedactSecrets())
    # uvicorn shuts down gracefully on SIGTERM, then raises the signal again under the handler
    # it found: the default one ended the process by the signal (exit 143) where the command
    # promises 0 for a proxy stopped.
    signal.signal(signal.SIGTERM, _stopped)
    server.run()
