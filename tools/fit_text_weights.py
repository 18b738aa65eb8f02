"""Fit the text weights of `text_stats` (`O200K_SHAPE`, `CL100K_SHAPE`) on real text.

    python tools/fit_text_weights.py              # ../shared/data (CONTEXTFOLD_SHARED_DATA)
    python tools/fit_text_weights.py --holdout    # fit on the even rows, report the odd ones
    python tools/fit_text_weights.py --non-ascii --holdout   # the per-script weights alone

Prints, per encoding, the weights to paste into `src/text_stats.rs`, then per group the median
of ``estimate / exact - 1`` with the weights before this fit (``BEFORE``) and with the fitted
ones (for the request groups also the median of its absolute value). Every count is exact, from
`contextfold.count_text` with o200k_base and cl100k_base; nothing is downloaded.

The texts (groups):

- ``transcripts``: every distinct string of the recorded requests and conversations of
  shared/data (messages, system prompts, tool outputs, tool-call arguments; ids, roles and
  binary payloads left out), 4+ non-blank characters: 12,285 texts, the agent traffic the
  estimator serves (``transcripts (short)``: those of 128 bytes or less, reported only);
- ``requests (crewai)``, ``requests (pydantic-ai)``: the strings of each recorded request,
  summed per request; ``SWE calls``: the messages each of the 4,430 model calls of the SWE
  trajectories sent, summed per call. What `tools/accuracy_report.py` prices per request,
  without tools and per-message overheads, so the fit answers for whole requests too;
- ``en`` / ``fr`` / ``de`` / ``zh_CN`` / ``ja`` / ``ko`` / ``ru`` / ``ar``: the translations of
  the gettext catalogs Debian packages install, chunks of 3,000 characters
  (`tools/script_report.py`; ``en``: the message ids); ``emoji``: English with an emoji every
  fourth word; ``code``: the Python standard library's sources in chunks of 3,000 characters.

Each text is described by what the estimator reads of it (`text_stats::shape_of`: the whole text
up to 128 bytes, else its head and, above 1,024 bytes, three 64-byte windows, extrapolated to its
length), feature by feature as `Shape` counts them:

- per text, once (a prompt of a few words was priced ~10% under its count);
- letters and letter runs; digits and digit runs (numbers are split in pieces of up to three
  digits); punctuation and punctuation runs;
- whitespace runs, and on top: runs of newlines, such runs right after punctuation (o200k's
  pre-tokenizer joins them to the punctuation: ``.\n\n`` is one piece), and indentation (a
  whitespace byte right after a newline). A single space joins the word after it and costs
  nothing, a newline does not: code's and tool output's lines cost more than one weight per
  whitespace run priced (the standard library's code was 8% under, English UI strings 6%);
- escapes: a letter right after a backslash (``\\n`` in a JSON string) is a piece of its own;
- the UTF-8 lead bytes by class (2-byte; Cyrillic on, Arabic on; 3-byte; kana / CJK / Hangul,
  the ideographs; 4-byte emoji);
- the Latin-letter gate: when the sample holds a letter of Latin-1 / Latin Extended (UTF-8 leads
  0xC3-0xC9: accents, umlauts, ß) the letters and letter runs carry a second pair of weights.
  A vocabulary fitted mostly on English splits French and German words into more pieces (o200k:
  a 10-letter German word is 2.1 tokens, an English one 1.15), which no shape of the ASCII
  letters tells apart from English, while an accented letter in the sample does. A gate and not
  a weight per accented letter: French carries far more accents per word than German, and a
  per-letter weight priced French +2% and German -14%.

- the Latin Extended gate: when the sample holds a letter of Latin Extended (leads 0xC4-0xC9:
  Polish ą ę ł ś ż, Czech, ...) the letters and letter runs carry a third pair
  (``latin_ext_letter``, ``latin_ext_run``): o200k splits Polish words finer than French or
  German ones, and with the Latin gate alone Polish prose was priced 16% under;
- ``lead3_hangul``: Hangul's leads (0xEA-0xED) priced apart from kana.

``--non-ascii`` refits only the weights of non-ASCII text (``NON_ASCII``: the lead-byte classes
but ``lead3`` and ``lead4``, and the two gates) on the named corpora of
`tools/script_corpora.py`, each language in two equal halves: the seven Debian packages'
catalogs (``<lang> 7 packages``, interface strings, what tests/python/test_scripts.py pins) and
its other corpora pooled (``<lang> corpora``, mostly prose); Arabic from the seven packages alone;
with the transcripts and requests, by least absolute
deviation (``--lad``: a median fit, iteratively reweighted least squares) rather than least
squares, whose mean a few far-off chunks pull. The ASCII weights keep their value, so a text
without a non-ASCII byte is priced exactly as before (English, code, JSON), and so are emoji
(``lead3`` and ``lead4`` kept).

The fit is least squares of the relative residual ``(exact - estimate) / exact``, each row a text
(or a request), each group's rows weighted to the group's share (``--weights``, ``SHARES``):
the traffic first, the crewai requests most (its prose prompts were the group the first fits
moved most on the accuracy report), the scripts and code after. The weights not in ``--free``
keep their ``BEFORE`` value (`lead3`, other 3-byte characters, and `lead2_ar`, fitted by
`tools/fit_script_weights.py`, whose texts identify them best); when `lead2_hi` is not free it
moves against `lead2` so a Cyrillic or Arabic character keeps its price. Each encoding is fitted
on its own counts.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

import contextfold as cf  # noqa: E402
from script_report import LOCALES, catalog_texts, code_texts, emoji_texts  # noqa: E402
from transcripts import SHARED, load_conversations, load_requests  # noqa: E402

# `text_stats`: SAMPLE_BYTES, LONG_TEXT, WINDOWS, WINDOW, BASE64_TOKENS_PER_BYTE.
HEAD, LONG, WINDOWS, WINDOW = 128, 1024, 3, 64
BASE64_TOKENS_PER_BYTE = 0.677

# The fields of `ShapeWeights`, in its order.
NAMES = ["text", "letter", "letter_run", "digit", "digit_run", "punct", "punct_run", "space_run", "newline_run",
         "punct_newline", "indent", "escape", "lead2", "lead3", "lead2_hi", "lead2_ar", "lead3_cjk", "lead4", "lead3_han",
         "latin_letter", "latin_letter_run", "latin_ext_letter", "latin_ext_run", "lead3_hangul", "latin_ext"]
# Refitted by default: all but `lead3` and `lead2_ar`.
FREE = ["text", "letter", "letter_run", "digit", "digit_run", "punct", "punct_run", "space_run", "newline_run",
        "punct_newline", "indent", "escape", "lead2", "lead2_hi", "lead3_cjk", "lead4", "lead3_han", "latin_letter",
        "latin_letter_run", "latin_ext_letter", "latin_ext_run", "lead3_hangul", "latin_ext"]
# Refitted by ``--non-ascii``: what prices non-ASCII text, but `lead3` and `lead4` (emoji; the
# corpora add none).
NON_ASCII = ["lead2", "lead2_hi", "lead2_ar", "lead3_cjk", "lead3_han", "lead3_hangul", "latin_letter",
             "latin_letter_run", "latin_ext_letter", "latin_ext_run", "latin_ext"]
# The weights of `src/text_stats.rs` before this fit (0 for the features it did not have): those
# of the last full fit (this tool, least squares, before the Latin Extended gate and Hangul).
BEFORE = {
    "o200k": {"text": 0.254, "letter": 0.054, "letter_run": 0.607, "digit": 0.164, "digit_run": 1.479, "punct": 0.218,
              "punct_run": 0.488, "space_run": 0.174, "newline_run": 0.880, "indent": 0.982, "escape": 1.036,
              "punct_newline": -0.420, "lead2": 0.638, "lead3": 1.141, "lead2_hi": -0.372, "lead2_ar": 0.100,
              "lead3_cjk": -0.437, "lead4": 1.145, "lead3_han": 0.072, "latin_letter": 0.189,
              "latin_letter_run": -0.688},
    "cl100k": {"text": 0.260, "letter": 0.053, "letter_run": 0.595, "digit": 0.173, "digit_run": 1.460, "punct": 0.192,
               "punct_run": 0.532, "space_run": 0.200, "newline_run": 0.796, "indent": 0.917, "escape": 0.963,
               "punct_newline": -0.394, "lead2": 0.794, "lead3": 0.918, "lead2_hi": -0.363, "lead2_ar": 0.390,
               "lead3_cjk": 0.151, "lead4": 1.943, "lead3_han": -0.044, "latin_letter": 0.261,
               "latin_letter_run": -0.840},
}
ENCODINGS = ("o200k", "cl100k")
# Each group's share of the fit.
# ``--non-ascii``: every language of the named corpora alike, the traffic beside them.
CORPORA_SHARES = ("transcripts=1,requests (crewai)=1,requests (pydantic-ai)=1,SWE calls=1,"
                  + ",".join(f"{lang} {part}=1" for lang in ("en", "fr", "de", "pl", "ru", "zh_CN", "ja", "ko")
                             for part in ("7 packages", "corpora"))
                  + ",ar 7 packages=1")
SHARES = ("transcripts=1,requests (crewai)=10,requests (pydantic-ai)=1,SWE calls=6,en=0.5,fr=0.3,de=0.3,code=0.3,"
          "zh_CN=0.3,ja=0.3,ko=0.3,ru=0.3,ar=0.3,emoji=0.3")

_LETTERS = re.compile(rb"[A-Za-z]+")
_DIGIT = re.compile(rb"[0-9]")
_DIGITS = re.compile(rb"[0-9]+")
_PUNCT = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f!-/:-@\[-`{-\x7f]+")
_SPACE = re.compile(rb"[ \n\t\r]+")
_NEWLINES = re.compile(rb"\n+")
_PUNCT_NEWLINE = re.compile(rb"(?<=[\x00-\x08\x0b\x0c\x0e-\x1f!-/:-@\[-`{-\x7f])(?<!\n)\n")
_INDENT = re.compile(rb"(?<=\n)[ \t\r]")
_ESCAPE = re.compile(rb"(?<=\\)[A-Za-z]")
# Lead-byte ranges of `Shape`'s non-ASCII classes, and of the Latin-letter gate.
LEADS = {"lead2": (0xC0, 0xE0), "lead3": (0xE0, 0x100), "lead2_hi": (0xD0, 0xE0), "lead2_ar": (0xD8, 0xE0),
         "lead3_cjk": (0xE3, 0xEE), "lead4": (0xF0, 0x100), "lead3_han": (0xE4, 0xEA),
         "lead3_hangul": (0xEA, 0xEE)}
LATIN = (0xC3, 0xCA)
LATIN_EXT = (0xC4, 0xCA)

_SKIP_KEYS = {"id", "type", "role", "signature", "thoughtSignature", "thought_signature", "data", "image_url",
              "url", "encrypted_content", "tool_call_id", "call_id"}


def _strings(x: object, key: str | None = None):
    if isinstance(x, str):
        if key not in _SKIP_KEYS:
            yield x
    elif isinstance(x, list):
        for v in x:
            yield from _strings(v, key)
    elif isinstance(x, dict):
        for k, v in x.items():
            yield from _strings(v, k)


def transcript_texts(root: Path = SHARED) -> list[str]:
    """Every distinct string of shared/data's requests and conversations (4+ characters)."""
    seen: set[str] = set()
    for r in load_requests(root):
        seen.update(_strings([r.messages, r.system]))
    for name in ("mini-swe-agent-gemini3", "tau-bench-airline"):
        for c in load_conversations(root, name):
            seen.update(_strings(c.get("messages")))
    return sorted(s for s in seen if len(s.strip()) >= 4)


def request_texts(root: Path = SHARED) -> dict[str, list[list[str]]]:
    """The strings of each recorded request of shared/data (messages and system), by data set,
    and of each model call of the SWE trajectories (the messages it sent): what
    `tools/accuracy_report.py` prices per request, without the tools and per-message overheads."""
    out: dict[str, list[list[str]]] = {}
    for r in load_requests(root):
        out.setdefault(f"requests ({r.dataset})", []).append(list(_strings([r.messages, r.system])))
    for c in load_conversations(root, "mini-swe-agent-gemini3"):
        for req in c.get("requests") or []:
            if req.get("usage_prompt_tokens"):
                out.setdefault("SWE calls", []).append(list(_strings(c["messages"][: req["n_messages"]])))
    return out


def _add(a: Row, b: Row) -> Row:
    f = dict(a[0])
    for k, v in b[0].items():
        f[k] = f.get(k, 0.0) + v
    return f, a[1] + b[1], a[2] + b[2]


def _part(b: bytes) -> dict[str, float]:
    """`Shape` of one contiguous read (runs carry within it, as the scan's carries do)."""
    letters = [len(x) for x in _LETTERS.findall(b)]
    punct = _PUNCT.findall(b)
    space = _SPACE.findall(b)
    f = {"letter": sum(letters), "letter_run": len(letters), "digit": len(_DIGIT.findall(b)),
         "digit_run": len(_DIGITS.findall(b)), "punct": sum(map(len, punct)), "punct_run": len(punct),
         "space": sum(map(len, space)),
         "space_run": len(space), "newline_run": len(_NEWLINES.findall(b)),
         "punct_newline": len(_PUNCT_NEWLINE.findall(b)), "indent": len(_INDENT.findall(b)),
         "escape": len(_ESCAPE.findall(b))}
    for name, (lo, hi) in LEADS.items():
        f[name] = sum(lo <= x < hi for x in b)
    f["latin"] = sum(LATIN[0] <= x < LATIN[1] for x in b)
    f["latin_ext"] = sum(LATIN_EXT[0] <= x < LATIN_EXT[1] for x in b)
    return f


def sample_parts(b: bytes) -> list[bytes]:
    """The bytes of ``b`` the estimator reads (``text_stats``): its head, and over ``LONG`` bytes
    ``WINDOWS`` windows spread over the rest, each starting on a character."""
    n = len(b)
    parts = [b[:HEAD]]
    if n > LONG:
        for k in range(1, WINDOWS + 1):
            at = n * k // (WINDOWS + 1)
            while at < n and (b[at] & 0xC0) == 0x80:
                at += 1
            parts.append(b[at : at + WINDOW])
    return parts


def features(text: str) -> tuple[dict[str, float], float]:
    """(the features the estimator prices, extrapolated to the text's length; tokens priced
    whatever the weights: an opaque text's, per byte, with no features)."""
    b = text.encode()
    n = len(b)
    if not n:
        return {}, 0.0
    parts = sample_parts(b)
    f: dict[str, float] = {}
    for p in parts:
        for k, v in _part(p).items():
            f[k] = f.get(k, 0) + v
    sampled = sum(map(len, parts))
    if sampled >= 64 and f["space"] <= 0.01 * sampled and f["punct"] < 0.05 * sampled and f["lead2"] + f["lead3"] == 0:
        return {}, n * BASE64_TOKENS_PER_BYTE
    gate = 1.0 if f["latin"] > 0 else 0.0
    f["latin_letter"] = gate * f["letter"]
    f["latin_letter_run"] = gate * f["letter_run"]
    ext = 1.0 if f["latin_ext"] > 0 else 0.0
    f["latin_ext_letter"] = ext * f["letter"]
    f["latin_ext_run"] = ext * f["letter_run"]
    scale = n / sampled
    f = {k: v * scale for k, v in f.items()}
    f["text"] = 1.0  # once per text, not extrapolated
    return f, 0.0


def estimate(w: dict[str, float], f: dict[str, float], fixed: float) -> float:
    return max(fixed + sum(w.get(k, 0.0) * f.get(k, 0.0) for k in NAMES), 1.0)


def solve(a: list[list[float]], v: list[float], ridge: float = 1e-9) -> list[float]:
    """Least squares by the normal equations (a handful of unknowns), Gaussian elimination;
    ``ridge`` on the diagonal keeps a feature absent from the texts at 0."""
    k = len(v)
    a = [row[:] for row in a]
    v = v[:]
    for i in range(k):
        a[i][i] += ridge
    for i in range(k):
        p = max(range(i, k), key=lambda r: abs(a[r][i]))
        a[i], a[p], v[i], v[p] = a[p], a[i], v[p], v[i]
        for r in range(i + 1, k):
            f = a[r][i] / a[i][i]
            a[r] = [x - f * y for x, y in zip(a[r], a[i])]
            v[r] -= f * v[i]
    out = [0.0] * k
    for i in reversed(range(k)):
        out[i] = (v[i] - sum(a[i][j] * out[j] for j in range(i + 1, k))) / a[i][i]
    return out


# (features, tokens priced whatever the weights, exact tokens): one text, or the texts of one
# request summed.
Row = tuple[dict[str, float], float, int]


def fit(groups: dict[str, list[Row]], free: list[str], base: dict[str, float],
        shares: dict[str, float], lad: bool = False) -> dict[str, float]:
    """``base`` with ``free`` refitted: weighted least squares of the relative residual, or with
    ``lad`` its least absolute deviation (iteratively reweighted least squares: each row's weight
    divided by its residual of the step before, 60 steps)."""
    k = len(free)
    # (share of the row, the free features over exact, the residual left to them)
    data: list[tuple[float, list[float], float]] = []
    for g, rows in groups.items():
        # A row none of the free features touch cannot move them (an ASCII text).
        rows = [r for r in rows if r[0] and r[2] > 0 and any(r[0].get(n) for n in free)]
        if not shares.get(g) or not rows:
            continue
        s = shares[g] / len(rows)
        for f, opaque, exact in rows:
            fixed = opaque + sum(base.get(n, 0.0) * f.get(n, 0.0) for n in NAMES if n not in free)
            data.append((s, [f.get(n, 0.0) / exact for n in free], (exact - fixed) / exact))
    scale = [1.0] * len(data)
    for _ in range(60 if lad else 1):
        a = [[0.0] * k for _ in range(k)]
        v = [0.0] * k
        for (s, x, y), c in zip(data, scale):
            for i in range(k):
                v[i] += s * c * x[i] * y
                for j in range(i, k):
                    a[i][j] += s * c * x[i] * x[j]
        for i in range(k):
            for j in range(i):
                a[i][j] = a[j][i]
        sol = solve(a, v)
        if lad:
            scale = [1.0 / max(abs(y - sum(p * q for p, q in zip(sol, x))), 1e-3) for _, x, y in data]
    w = dict(base)
    w.update(zip(free, sol))
    if "lead2_hi" not in free:
        # A Cyrillic or Arabic character is priced lead2 + lead2_hi (+ lead2_ar): keep that sum.
        w["lead2_hi"] = base["lead2_hi"] - (w["lead2"] - base["lead2"])
    return w


def fit_medians(groups: dict[str, list[Row]], free: list[str], start: dict[str, float],
                shares: dict[str, float]) -> dict[str, float]:
    """``start`` with ``free`` moved to minimize what is reported: the sum over groups of
    ``share * median(estimate / exact - 1) ** 2`` (each group's own median, not the pooled
    rows', smoothed: the mean of its middle fifth), ten times the square of what a median exceeds
    4% by on top, and a hundredth of the squared mean absolute error (the rows' spread); by a
    pattern search from ``start`` (the LAD
    fit), then seeded random joint steps. Nelder-Mead stalled on this flat, stepped objective far
    from the best point."""
    data = []
    for g, rows in groups.items():
        if not shares.get(g):
            continue
        rows = [r for r in rows if r[2] > 0]
        fixed = [opaque + sum(start.get(n, 0.0) * f.get(n, 0.0) for n in NAMES if n not in free)
                 for f, opaque, _ in rows]
        xs = [[f.get(n, 0.0) for n in free] for f, _, _ in rows]
        data.append((shares[g], fixed, xs, [r[2] for r in rows]))

    def loss(w: list[float]) -> float:
        total = 0.0
        for share, fixed, xs, exact in data:
            e = sorted(max(b + sum(p * q for p, q in zip(w, x)), 1.0) / c - 1 for b, x, c in zip(fixed, xs, exact))
            # The median, smoothed: the mean of the middle fifth (a median moves by steps).
            m = statistics.fmean(e[len(e) * 2 // 5 : max(len(e) * 3 // 5, len(e) * 2 // 5 + 1)])
            total += share * (m**2 + 30 * max(abs(m) - 0.035, 0.0) ** 2 + 0.01 * statistics.fmean(map(abs, e)) ** 2)
        return total

    point = [start[n] for n in free]
    best = loss(point)
    # Pattern search (Hooke-Jeeves): each weight in turn stepped up and down, a step kept when it
    # lowers the loss; after a sweep that moved, the same move again as long as it pays (the
    # weights of a script are correlated, e.g. the Latin gate's letter and run weights, and move
    # along a valley no single weight's step follows); the step halved when a sweep moves nothing.
    step = 0.2
    while step >= 0.001:
        base = point
        for i in range(len(point)):
            for d in (step, -step):
                trial = point[:]
                trial[i] += d
                value = loss(trial)
                if value < best:
                    point, best = trial, value
                    break
        if point is base:
            step /= 2
            continue
        while True:
            trial = [2 * p - b for p, b in zip(point, base)]
            value = loss(trial)
            if value >= best:
                break
            base, point, best = point, trial, value
    # Then seeded random steps in every weight at once, shrinking: the pattern search stops in
    # the steps of the medians, short of points a joint move of several weights reaches.
    rng = random.Random(0)
    for radius in (0.2, 0.1, 0.05, 0.02, 0.01, 0.005):
        for _ in range(250):
            trial = [p + rng.gauss(0.0, radius) for p in point]
            value = loss(trial)
            if value < best:
                point, best = trial, value
    print(f"group-median loss: {best:.6f}", file=sys.stderr)
    w = dict(start)
    w.update(zip(free, point))
    return w


def medians(groups: dict[str, list[Row]], w: dict[str, float]) -> dict[str, str]:
    """Per group, the signed median of ``estimate / exact - 1`` (and the median of its absolute
    value for the requests, as the accuracy report prints them)."""
    out = {}
    for g, rows in groups.items():
        e = [estimate(w, f, o) / exact - 1 for f, o, exact in rows if exact > 0]
        if e:
            out[g] = f"{statistics.median(e):+.1%}"
            if g.startswith(("requests", "SWE")):
                out[g] += f" ({statistics.median(map(abs, e)):.1%})"
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--holdout", action="store_true", help="fit on the even rows, report the odd ones")
    ap.add_argument("--weights", default=SHARES,
                    help="each group's share of the fit")
    ap.add_argument("--free", default=",".join(FREE), help="the weights refitted (the others keep BEFORE's)")
    ap.add_argument("--lad", action="store_true", help="least absolute deviation, not least squares")
    ap.add_argument("--group-medians", action="store_true",
                    help="then minimize each group's squared median (fit_medians), from the LAD fit")
    ap.add_argument("--non-ascii", action="store_true",
                    help="refit NON_ASCII alone, by --lad, on the named corpora (CORPORA_SHARES)")
    args = ap.parse_args()
    if args.non_ascii:
        args.lad = True
        if args.free == ",".join(FREE):
            args.free = ",".join(NON_ASCII)
        if args.weights == SHARES:
            args.weights = CORPORA_SHARES
    free = [k for k in args.free.split(",") if k]
    shares = {k: float(v) for k, v in (x.split("=") for x in args.weights.split(","))}
    texts = {"transcripts": transcript_texts()}
    # The short ones apart (read whole by the estimator, a prompt of a few words).
    texts["transcripts (short)"] = [t for t in texts["transcripts"] if len(t.encode()) <= HEAD]
    requests = request_texts()
    texts.update({lang: catalog_texts(lang, 3000, every=True) for lang in LOCALES.values()})
    texts["code"] = code_texts(3000)
    texts["emoji"] = emoji_texts(3000, every=True)
    if args.non_ascii:
        from script_corpora import LANGS, corpora

        for lang in LANGS:
            # Interface strings (the seven packages' catalogs, as tests/python/test_scripts.py
            # reads them) apart from the other corpora, mostly prose: each is half a language.
            texts[f"{lang} 7 packages"] = catalog_texts(lang, 3000)
            texts[f"{lang} corpora"] = [t for c in corpora((lang,)) if not c.name.startswith("Debian catalogs")
                                        for t in c.chunks(3000)]
        texts["ar 7 packages"] = catalog_texts("ar", 3000)
    exact = {enc: {g: [cf.count_text(t, encoding=f"{enc}_base") for t in ts] for g, ts in texts.items()}
             for enc in ENCODINGS}
    feats = {g: [features(t) for t in ts] for g, ts in texts.items()}
    one = {enc: {t: (*f, x) for t, f, x in zip(texts["transcripts"], feats["transcripts"], exact[enc]["transcripts"])}
           for enc in ENCODINGS}
    for ts in (t for rs in requests.values() for t in rs):
        for t in ts:
            if t not in one["o200k"]:
                f = features(t)
                for enc in ENCODINGS:
                    one[enc][t] = (*f, cf.count_text(t, encoding=f"{enc}_base"))

    def rows(enc: str, part: int | None) -> dict[str, list[Row]]:
        out = {g: [(f, o, x) for i, ((f, o), x) in enumerate(zip(feats[g], exact[enc][g]))
                   if part is None or i % 2 == part] for g in texts}
        for name, rs in requests.items():
            out[name] = []
            for i, ts in enumerate(rs):
                if part is None or i % 2 == part:
                    row: Row = ({}, 0.0, 0)
                    for t in ts:
                        row = _add(row, one[enc][t])
                    out[name].append(row)
        return out

    fit_part, report_part = (0, 1) if args.holdout else (None, None)
    fitted = {enc: fit(rows(enc, fit_part), free, BEFORE[enc], shares, args.lad) for enc in ENCODINGS}
    if args.group_medians:
        fitted = {enc: fit_medians(rows(enc, fit_part), free, fitted[enc], shares) for enc in ENCODINGS}
    for enc in ENCODINGS:
        print(f"{enc}: " + ", ".join(f"{k}: {fitted[enc].get(k, 0.0):.3f}" for k in NAMES))
    label = "odd rows (held out)" if args.holdout else "all rows"
    print(f"\nmedian of estimate / exact - 1, {label}: before -> fitted")
    print("| group | n | " + " | ".join(ENCODINGS) + " |\n| --- | ---: | " + " | ".join("---" for _ in ENCODINGS) + " |")
    before = {enc: medians(rows(enc, report_part), BEFORE[enc]) for enc in ENCODINGS}
    after = {enc: medians(rows(enc, report_part), fitted[enc]) for enc in ENCODINGS}
    n = {g: len(r) for g, r in rows("o200k", report_part).items()}
    for g in [*texts, *requests]:
        cells = [f"{before[enc][g]} -> {after[enc][g]}" for enc in ENCODINGS]
        print(f"| {g} | {n[g]} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
