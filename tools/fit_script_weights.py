"""Fit the per-script character weights of `text_stats` (`lead2_hi`, `lead2_ar`, `lead3_cjk`,
`lead4`, and `lead2` / `lead3` for cl100k) on the installed gettext catalogs.

    python tools/fit_script_weights.py

The texts are `tools/script_report.py`'s (the translations Debian packages install, chunks of
3,000 characters, and English with emoji). The weights of ASCII text stay as fitted on the
transcripts; what is fitted is the per-character weight of each class of non-ASCII lead byte,
by least squares of the relative residual ``(exact - estimate_without_them) / exact`` over every
chunk, per encoding. Prints the weights to paste into `TextWeights::O200K` / `CL100K`.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import contextfold as cf  # noqa: E402
from script_report import LOCALES, catalog_texts, emoji_texts  # noqa: E402

# The feature classes of `text_stats::Shape` that the fit sets, by lead-byte range.
CLASSES = {
    "lead2": (0xC0, 0xE0),
    "lead2_hi": (0xD0, 0xE0),
    "lead2_ar": (0xD8, 0xE0),
    "lead3": (0xE0, 0x100),
    "lead3_cjk": (0xE3, 0xEE),
    "lead4": (0xF0, 0x100),
}


def features(text: str) -> list[float]:
    b = text.encode()
    return [float(sum(lo <= x < hi for x in b)) for lo, hi in CLASSES.values()]


def solve(rows: list[list[float]], ys: list[float]) -> list[float]:
    """Least squares by the normal equations (a handful of unknowns), Gaussian elimination."""
    k = len(rows[0])
    a = [[sum(r[i] * r[j] for r in rows) for j in range(k)] for i in range(k)]
    v = [sum(r[i] * y for r, y in zip(rows, ys)) for i in range(k)]
    for i in range(k):
        a[i][i] += 1e-6  # classes absent from the texts stay 0
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


def main() -> None:
    texts = [t for lang in LOCALES.values() for t in catalog_texts(lang, 3000)] + emoji_texts(3000)
    empty = [{"role": "user", "content": ""}]
    for enc, model in (("o200k", "gpt-4o"), ("cl100k", "gpt-4")):
        e0, c0 = cf.estimate(empty, model=model), cf.count(empty, model=model)
        rows, ys = [], []
        for t in texts:
            f = features(t)
            if not any(f):
                continue
            exact = cf.count([{"role": "user", "content": t}], model=model) - c0
            est = cf.estimate([{"role": "user", "content": t}], model=model) - e0
            # The estimate's current non-ASCII part is taken back out: lead2 0.211, lead3 0.700
            # per character (o200k's; cl100k is priced with them today).
            base = est - 0.211 * f[0] - 0.700 * f[3]
            rows.append([x / exact for x in f])
            ys.append((exact - base) / exact)
        w = solve(rows, ys)
        print(enc, {name: round(x, 3) for name, x in zip(CLASSES, w)})


if __name__ == "__main__":
    main()
