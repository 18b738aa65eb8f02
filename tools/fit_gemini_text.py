"""Fit the text weights of the Gemini token family (src/text_stats.rs `TextWeights::GEMINI`).

    python tools/fit_gemini_text.py          # ../shared/data (CONTEXTFOLD_SHARED_DATA)

Gemini's tokenizer (SentencePiece, 256k vocabulary, shared by Gemma) is not public, so its
density is fitted on what the providers billed:

- the Gemini 3 Pro SWE trajectories (mini-swe-agent-gemini3): call k of a trajectory sent the
  messages of call k-1 plus the new ones, so ``usage[k] - usage[k-1]`` is what Gemini billed for
  those messages (pairs served by the same upstream deployment only: counts dip when it
  switches); and the first call of each trajectory (system prompt + task);
- the plain Gemini requests of pydantic-ai / crewai (providers ``google`` and
  ``google-vertex``: no tools, images, thought signatures or response schema; 10+ tokens),
  whose usage is their text.

Each text is described by the byte-shape features the estimator reads (letters, letter runs,
digits, punctuation, punctuation runs, whitespace runs, 2-byte and 3/4-byte UTF-8 leads). The
fits are non-negative least squares of the billed tokens, each row weighted by 1/billed so
that every row counts by its relative error (a 60k-token dump does not outweigh a hundred short
messages), refitted without the rows off by more than 30% (cache or deployment glitches).

- ``whole``: fitted on the features of the WHOLE texts (plus a per-message cost, which comes
  out 0): Gemini's density, applied by the estimator to texts it reads whole.
- ``sampled``: fitted on the features of the sample the estimator reads of each long text
  (head and windows, extrapolated to its length), the texts read whole priced by ``whole``.

Printed: the weights, the errors of the per-call deltas (in-sample and held out by trajectory,
5 folds) and of the plain requests against o200k times one scale, and every SWE call priced by
a mirror of the estimator (src/text_stats.rs: same sample, same extrapolation, each message
rounded) with the o200k weights x 1.2 (before), the whole weights alone, and both sets.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

from transcripts import SHARED, load_conversations, load_requests, system_text  # noqa: E402

NAMES = ["letter", "letter_run", "digit", "punct", "punct_run", "space_run", "lead2", "lead3"]
# src/text_stats.rs O200K (fitted against o200k_base counts).
O200K = [0.066, 0.514, 0.855, 0.132, 0.783, 0.251, 0.211, 0.700]
BASE64_TOKENS_PER_BYTE = 0.677
TRIM = 0.3
SAMPLE_BYTES, LONG_TEXT, WINDOWS, WINDOW = 128, 1024, 3, 64

_LETTERS = re.compile(rb"[A-Za-z]+")
_DIGITS = re.compile(rb"[0-9]")
_PUNCT = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f!-/:-@\[-`{-\x7f]+")
_SPACE = re.compile(rb"[ \n\t\r]+")
_LEAD2 = re.compile(rb"[\xc0-\xdf]")
_LEAD3 = re.compile(rb"[\xe0-\xff]")


def shape(b: bytes) -> list[int]:
    """The features of `Shape` (src/text_stats.rs) over all of `b`, plus spaces and length."""
    letter_runs = _LETTERS.findall(b)
    punct_runs = _PUNCT.findall(b)
    space_runs = _SPACE.findall(b)
    return [
        sum(map(len, letter_runs)),
        len(letter_runs),
        len(_DIGITS.findall(b)),
        sum(map(len, punct_runs)),
        len(punct_runs),
        len(space_runs),
        len(_LEAD2.findall(b)),
        len(_LEAD3.findall(b)),
        sum(map(len, space_runs)),
        len(b),
    ]


def add(a: list, b: list) -> list:
    return [x + y for x, y in zip(a, b)]


def sample_shape(b: bytes) -> list[float]:
    """The features of what `shape_of` in src/text_stats.rs reads: the head, and the windows
    of a text over `LONG_TEXT` bytes (each moved to a character boundary)."""
    s = shape(b[:SAMPLE_BYTES])
    n = len(b)
    if n > LONG_TEXT:
        for k in range(1, WINDOWS + 1):
            at = n * k // (WINDOWS + 1)
            while at < n and (b[at] & 0xC0) == 0x80:
                at += 1
            s = add(s, shape(b[at : at + WINDOW]))
    return s


def sampled_tokens(b: bytes, w: list[float]) -> float:
    """`text_tokens` of src/text_stats.rs with weights `w`: the sample's tokens extrapolated."""
    if not b:
        return 0.0
    s = sample_shape(b)
    n = len(b)
    sampled, space = s[9], s[8]
    opaque = sampled >= 64 and space <= 0.01 * sampled and s[3] < 0.05 * sampled and s[6] + s[7] == 0
    t = sampled * BASE64_TOKENS_PER_BYTE if opaque else sum(x * y for x, y in zip(w, s))
    return max(t if sampled == n else t * n / sampled, 1.0)


def solve(a: list[list[float]], b: list[float]) -> list[float] | None:
    """x with a x = b by Gaussian elimination with partial pivoting; None when singular."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        if abs(m[p][c]) < 1e-12 * max(1.0, max(abs(v) for v in m[p][:n])):
            return None
        m[c], m[p] = m[p], m[c]
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c])]
    return [m[i][n] / m[i][i] for i in range(n)]


def nnls(rows: list[list[float]], ys: list[float], weights: list[float]) -> list[float]:
    """Non-negative weighted least squares (Lawson and Hanson's active-set method) on the
    normal equations."""
    k = len(rows[0])
    ata = [[0.0] * k for _ in range(k)]
    aty = [0.0] * k
    for x, y, wt in zip(rows, ys, weights):
        w2 = wt * wt
        for i in range(k):
            if x[i]:
                aty[i] += w2 * x[i] * y
                for j in range(k):
                    ata[i][j] += w2 * x[i] * x[j]

    def gradient(beta: list[float]) -> list[float]:
        return [aty[i] - sum(ata[i][j] * beta[j] for j in range(k)) for i in range(k)]

    def restricted(active: set[int]) -> list[float]:
        idx = sorted(active)
        sol = solve([[ata[i][j] for j in idx] for i in idx], [aty[i] for i in idx]) or [0.0] * len(idx)
        z = [0.0] * k
        for i, v in zip(idx, sol):
            z[i] = v
        return z

    beta = [0.0] * k
    active: set[int] = set()
    scale = max(abs(v) for v in aty) or 1.0
    for _ in range(10 * k):
        g = gradient(beta)
        free = [i for i in range(k) if i not in active and g[i] > 1e-10 * scale]
        if not free:
            break
        active.add(max(free, key=lambda i: g[i]))
        while True:
            z = restricted(active)
            if all(z[i] > 0 for i in active):
                beta = z
                break
            alpha = min(beta[i] / (beta[i] - z[i]) for i in active if z[i] <= 0)
            beta = [b + alpha * (zz - b) for b, zz in zip(beta, z)]
            active = {i for i in active if beta[i] > 1e-12}
    return beta


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def summary(errs: list[float]) -> str:
    a = [abs(e) for e in errs]
    return f"n={len(errs)} median|err| {statistics.median(a):.2%} p90 {pct(a, 0.9):.2%} signed {statistics.median(errs):+.2%}"


def has_signature(x: object) -> bool:
    s = json.dumps(x)
    return "thoughtSignature" in s or "thought_signature" in s


def texts_of(x: object):
    """Every text a Gemini or OpenAI-shaped request bills as text (roles left out)."""
    if isinstance(x, str):
        yield x
    elif isinstance(x, list):
        for v in x:
            yield from texts_of(v)
    elif isinstance(x, dict):
        for k, v in x.items():
            if k != "role":
                yield from texts_of(v)


# lead2 / lead3 are not identified by the data (the trajectories hold 213 2-byte and 299
# 3/4-byte characters in 9.6 MB): they keep what the Gemini profile priced them at before,
# the o200k weights times 1.2.
FREE = 6
LEADS = [1.2 * O200K[6], 1.2 * O200K[7]]


def features(b: bytes, sampled: bool) -> tuple[list[float], float]:
    """(the 8 features, extrapolated to the whole text when sampled; tokens priced apart):
    full text, or the sample `shape_of` reads. Opaque samples (base64-like) are priced per byte
    whatever the weights."""
    s = sample_shape(b) if sampled and len(b) > SAMPLE_BYTES else shape(b)
    n_sampled, space = s[9], s[8]
    if not b:
        return [0.0] * 8, 0.0
    scale = len(b) / n_sampled
    if sampled and n_sampled >= 64 and space <= 0.01 * n_sampled and s[3] < 0.05 * n_sampled and s[6] + s[7] == 0:
        return [0.0] * 8, len(b) * BASE64_TOKENS_PER_BYTE
    return [v * scale for v in s[:8]], 0.0


class Row:
    """Billed tokens of a set of texts: features summed, messages counted."""

    def __init__(self, group: int, texts: list[bytes], messages: int, billed: int, sampled: bool):
        self.group = group
        self.billed = billed
        self.x = [0.0] * 8
        # The features of texts read whole and of texts extrapolated from their sample.
        self.whole = [0.0] * 8
        self.offset = 0.0
        for b in texts:
            x, o = features(b, sampled)
            self.x = add(self.x, x)
            if len(b) <= SAMPLE_BYTES:
                self.whole = add(self.whole, x)
            self.offset += o
        self.messages = messages
        self.split = False

    def design(self) -> list[float]:
        if self.split:
            return self.whole[:FREE] + [a - b for a, b in zip(self.x[:FREE], self.whole)] + [float(self.messages)]
        return self.x[:FREE] + [float(self.messages)]

    def fixed(self) -> float:
        """Tokens not fitted: opaque texts, and the 2-byte / 3-4-byte leads at o200k weights."""
        return self.offset + LEADS[0] * self.x[6] + LEADS[1] * self.x[7]

    def predict(self, beta: list[float]) -> float:
        return self.fixed() + sum(b * v for b, v in zip(beta, self.design()))


def fit(rows: list[Row]) -> list[float]:
    """Weighted NNLS of billed - fixed on the design, each row by its relative error; rows off by
    more than TRIM after a fit are left out of the next (a few deltas are cache or deployment
    glitches: near-zero counts after a long message)."""
    kept = rows
    for _ in range(4):
        beta = nnls([r.design() for r in kept], [r.billed - r.fixed() for r in kept], [1.0 / r.billed for r in kept])
        kept = [r for r in rows if abs(r.predict(beta) / r.billed - 1) <= TRIM]
    return beta


def best_scale(rows: list[Row]) -> float:
    """The single o200k scale a code-fitted profile would use: weighted LS over the rows."""
    num = den = 0.0
    for r in rows:
        o = sum(w * v for w, v in zip(O200K, r.x)) + r.offset
        if abs(1.2 * o / r.billed - 1) <= TRIM:
            num += o / r.billed
            den += (o / r.billed) ** 2
    return num / den


def swe_rows(convs: list[dict], sampled: bool) -> list[Row]:
    """Per trajectory: the first call (system + task), then each call's new messages against the
    billed difference from the previous call served by the same deployment."""
    rows = []
    for t, conv in enumerate(convs):
        msgs = [m["content"].encode() for m in conv["messages"]]
        prev = None
        for req in conv["requests"]:
            u = req.get("usage_prompt_tokens")
            if not u:
                prev = None
                continue
            if prev is None:
                lo, billed = 0, u
            elif prev["upstream_provider"] == req["upstream_provider"]:
                lo, billed = prev["n_messages"], u - prev["usage_prompt_tokens"]
            else:
                prev = req
                continue
            prev = req
            if billed > 0:
                rows.append(Row(t, msgs[lo : req["n_messages"]], req["n_messages"] - lo, billed, sampled))
    return rows


def plain_requests() -> list:
    """The Gemini API / Vertex requests whose usage is their text: no tools, images, thought
    signatures or structured-output schema; 10+ tokens (below, rounding outweighs density)."""
    out = []
    for r in load_requests(SHARED):
        if r.provider not in ("google", "google-vertex") or r.tools or r.has_image:
            continue
        if has_signature(r.messages) or r.usage < 10:
            continue
        gen = r.options.get("generationConfig") or {}
        if gen.get("responseSchema") or gen.get("response_schema") or gen.get("responseJsonSchema"):
            continue
        out.append(r)
    return out


def plain_rows(reqs: list, sampled: bool) -> list[Row]:
    rows = []
    for i, r in enumerate(reqs):
        texts = [s.encode() for s in texts_of(r.messages)] + [s.encode() for s in texts_of(system_text(r.system) or [])]
        rows.append(Row(-1 - i, texts, len(r.messages) + (1 if r.system else 0), r.usage, sampled))
    return rows


def errs(rows: list[Row], beta: list[float]) -> list[float]:
    return [r.predict(beta) / r.billed - 1 for r in rows]


def scaled_errs(rows: list[Row], scale: float) -> list[float]:
    return [scale * (sum(w * v for w, v in zip(O200K, r.x)) + r.offset) / r.billed - 1 for r in rows]


def mirror(convs: list[dict], whole: list[float], sampled: list[float], folds: list[int] | None = None,
           sample: bool = True) -> tuple[list[float], list[float]]:
    """Errors of every SWE call and of the first calls, as the estimator prices them: each message
    rounded, texts up to SAMPLE_BYTES by `whole`, longer ones by `sampled` on their sample (or on
    the whole text with `sample=False`). `folds`: price trajectory t only if t % 5 is in it."""
    calls, first = [], []
    for t, conv in enumerate(convs):
        if folds is not None and t % 5 not in folds:
            continue
        toks = []
        for m in conv["messages"]:
            b = m["content"].encode()
            w = whole if len(b) <= SAMPLE_BYTES else sampled
            toks.append(round(sampled_tokens(b, w) if sample else sum(x * y for x, y in zip(w, shape(b)))))
        for k, req in enumerate(conv["requests"]):
            if req.get("usage_prompt_tokens"):
                calls.append(sum(toks[: req["n_messages"]]) / req["usage_prompt_tokens"] - 1)
                if k == 0:
                    first.append(calls[-1])
    return calls, first


def regime_fit(rows: list[Row], whole: list[float]) -> list[float]:
    """The sampled texts' weights, the texts read whole priced by `whole` (per message cost
    included): weighted NNLS on what the sample shows, trimmed as `fit`."""
    xs, ys, ws = [], [], []
    for r in rows:
        known = r.fixed() + sum(b * v for b, v in zip(whole[:FREE], r.whole)) + whole[FREE] * r.messages
        xs.append([a - b for a, b in zip(r.x[:FREE], r.whole)])
        ys.append(r.billed - known)
        ws.append(1.0 / r.billed)
    kept = list(range(len(rows)))
    for _ in range(4):
        beta = nnls([xs[i] for i in kept], [ys[i] for i in kept], [ws[i] for i in kept])
        kept = [i for i in range(len(rows)) if abs(sum(b * v for b, v in zip(beta, xs[i])) - ys[i]) <= TRIM * rows[i].billed]
    return beta


def main() -> None:
    convs = load_conversations(SHARED, "mini-swe-agent-gemini3")
    reqs = plain_requests()
    swe_full, plain_full = swe_rows(convs, False), plain_rows(reqs, False)
    swe_sampled = swe_rows(convs, True)
    print(f"{len(swe_full)} SWE rows (per-call deltas and first calls of {len(convs)} trajectories), "
          f"{len(plain_full)} plain Gemini requests\n")

    whole = fit(swe_full + plain_full)
    sampled = regime_fit(swe_sampled, whole)
    print("## TextWeights::GEMINI (lead2, lead3 fixed at " + ", ".join(f"{v:.3f}" for v in LEADS) + ")")
    print("| weights | " + " | ".join(NAMES[:FREE]) + " | per message |")
    print("| --- |" + " ---: |" * (FREE + 1))
    print("| whole text | " + " | ".join(f"{v:.3f}" for v in whole) + " |")
    print("| sampled | " + " | ".join(f"{v:.3f}" for v in sampled) + " | (whole's) |")
    print("| o200k | " + " | ".join(f"{v:.3f}" for v in O200K[:FREE]) + " | 0 |")

    print("\n## The whole-text weights on whole texts (the density, no sampling)")
    held: list[float] = []
    for fold in range(5):
        b = fit([r for r in swe_full if r.group % 5 != fold] + plain_full)
        held += errs([r for r in swe_full if r.group % 5 == fold], b)
    print(f"- SWE rows, o200k x 1.2:            {summary(scaled_errs(swe_full, 1.2))}")
    print(f"- SWE rows, Gemini, in-sample:      {summary(errs(swe_full, whole))}")
    print(f"- SWE rows, Gemini, held out (5 folds by trajectory): {summary(held)}")
    print(f"- plain requests, o200k x 1.2:      {summary(scaled_errs(plain_full, 1.2))}")
    print(f"- plain requests, o200k x 1.0:      {summary(scaled_errs(plain_full, 1.0))}")
    print(f"- plain requests, Gemini:           {summary(errs(plain_full, whole))}")
    print(f"- plain requests, Gemini fitted on the SWE rows alone: {summary(errs(plain_full, fit(swe_full)))}")
    o12 = [1.2 * w for w in O200K]
    gw, gs = whole[:FREE] + LEADS, sampled + LEADS
    calls, first = mirror(convs, o12, o12, sample=False)
    print(f"- SWE calls priced on whole texts, o200k x 1.2: {summary(calls)}; first calls {summary(first)}")
    calls, first = mirror(convs, gw, gw, sample=False)
    print(f"- SWE calls priced on whole texts, Gemini:      {summary(calls)}; first calls {summary(first)}")

    print("\n## The sampled weights on what the sample shows (texts read whole by the whole weights)")
    held = []
    for fold in range(5):
        bw = fit([r for r in swe_full if r.group % 5 != fold] + plain_full)
        bs = regime_fit([r for r in swe_sampled if r.group % 5 != fold], bw)
        for r in swe_sampled:
            if r.group % 5 == fold:
                known = r.fixed() + sum(b * v for b, v in zip(bw[:FREE], r.whole)) + bw[FREE] * r.messages
                held.append((known + sum(b * (a - c) for b, a, c in zip(bs, r.x, r.whole))) / r.billed - 1)
    print(f"- SWE rows, o200k x 1.2:            {summary(scaled_errs(swe_sampled, 1.2))}")
    print(f"- SWE rows, held out (5 folds by trajectory): {summary(held)}")

    print("\n## The estimator (sampled texts, rounded per message) on every SWE call")
    for label, w1, w2 in (("o200k x 1.2 (before)", o12, o12), ("Gemini whole-text weights alone", gw, gw),
                          ("Gemini whole + sampled weights", gw, gs)):
        calls, first = mirror(convs, w1, w2)
        print(f"- {label}: {summary(calls)}; first calls {summary(first)}")
    calls, first = [], []
    for fold in range(5):
        rest = [r for r in swe_full if r.group % 5 != fold]
        bw = fit(rest + plain_full)
        bs = regime_fit([r for r in swe_sampled if r.group % 5 != fold], bw)
        c, f = mirror(convs, bw[:FREE] + LEADS, bs + LEADS, folds=[fold])
        calls += c
        first += f
    print(f"- Gemini whole + sampled, held out (5 folds by trajectory): {summary(calls)}; first calls {summary(first)}")


if __name__ == "__main__":
    main()
