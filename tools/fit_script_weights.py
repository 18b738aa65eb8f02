"""Fit the per-script character weights of `text_stats` (`lead2`, `lead3`, `lead2_hi`,
`lead2_ar`, `lead3_cjk`, `lead4`, `lead3_han`) on the installed gettext catalogs.

    python tools/fit_script_weights.py          # lead3_han alone, the others kept
    python tools/fit_script_weights.py --all    # every non-ASCII class

The texts are `tools/script_report.py`'s (the translations Debian packages install, chunks of
3,000 characters, and English with emoji). The ASCII weights stay as `tools/fit_text_weights.py`
fitted them (which refits these too, with the traffic in the fit); what is fitted is the
per-character weight of each class of non-ASCII lead byte, by least squares of the relative residual ``(exact - estimate_without_them) / exact`` over every chunk of
every script, per encoding. The features are counted on the bytes the estimator reads (its head
and windows, `text_stats::shape_of`) and extrapolated as it does, so the fit prices what the
estimate sees; the estimate's current non-ASCII part (``CURRENT``, as in `text_stats.rs`) is
taken back out first. Prints the weights to paste into `O200K_SHAPE` / `CL100K_SHAPE` and the
median error per script they give.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import contextfold as cf  # noqa: E402
from fit_text_weights import sample_parts, solve as normal_solve  # noqa: E402
from script_report import LOCALES, catalog_texts, emoji_texts  # noqa: E402

# The feature classes of `text_stats::Shape`, by lead-byte range.
CLASSES = {
    "lead2": (0xC0, 0xE0),
    "lead2_hi": (0xD0, 0xE0),
    "lead2_ar": (0xD8, 0xE0),
    "lead3": (0xE0, 0x100),
    "lead3_cjk": (0xE3, 0xEE),
    "lead4": (0xF0, 0x100),
    "lead3_han": (0xE4, 0xEA),
}
# The weights in `text_stats.rs` (O200K_SHAPE, CL100K_SHAPE) the estimate is built with (last
# refitted by tools/fit_text_weights.py --non-ascii; Hangul's and Latin Extended's own weights
# are not fitted here and stay in the estimate).
CURRENT = {
    "o200k": {"lead2": 0.685, "lead2_hi": -0.424, "lead2_ar": 0.089, "lead3": 1.141, "lead3_cjk": -0.407,
              "lead4": 1.145, "lead3_han": -0.003},
    "cl100k": {"lead2": 0.322, "lead2_hi": 0.114, "lead2_ar": 0.377, "lead3": 0.918, "lead3_cjk": 0.104,
               "lead4": 1.943, "lead3_han": 0.010},
}


def sampled_features(text: str) -> list[float]:
    """Each class's count on the estimator's sample of ``text``, extrapolated to its length."""
    b = text.encode()
    n = len(b)
    parts = sample_parts(b)
    scale = n / sum(map(len, parts))
    return [scale * sum(lo <= x < hi for p in parts for x in p) for lo, hi in CLASSES.values()]


def solve(rows: list[list[float]], ys: list[float]) -> list[float]:
    """Least squares of ``rows`` against ``ys``: the normal equations, solved by
    ``fit_text_weights.solve`` (classes absent from the texts stay 0)."""
    k = len(rows[0])
    a = [[sum(r[i] * r[j] for r in rows) for j in range(k)] for i in range(k)]
    v = [sum(r[i] * y for r, y in zip(rows, ys)) for i in range(k)]
    return normal_solve(a, v, ridge=1e-6)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--all", action="store_true", help="fit every non-ASCII class, not lead3_han alone")
    args = ap.parse_args()
    names = list(CLASSES) if args.all else ["lead3_han"]
    corpora = {lang: catalog_texts(lang, 3000, every=True) for lang in LOCALES.values()}
    corpora["emoji"] = emoji_texts(3000, every=True)
    empty = [{"role": "user", "content": ""}]
    for enc, model in (("o200k", "gpt-4o"), ("cl100k", "gpt-4")):
        e0, c0 = cf.estimate(empty, model=model), cf.count(empty, model=model)
        fitted = [n for n in CLASSES if n in names]
        chunks: dict[str, list[tuple[int, float, list[float]]]] = {}
        rows, ys = [], []
        for lang, texts in corpora.items():
            for t in texts:
                m = [{"role": "user", "content": t}]
                exact = cf.count(m, model=model) - c0
                if exact <= 0:
                    continue
                f = dict(zip(CLASSES, sampled_features(t)))
                est = cf.estimate(m, model=model) - e0
                base = est - sum(CURRENT[enc][k] * f[k] for k in fitted)
                x = [f[k] for k in fitted]
                chunks.setdefault(lang, []).append((exact, base, x))
                rows.append([v / exact for v in x])
                ys.append((exact - base) / exact)
        w = solve(rows, ys)
        print(enc, {k: round(v, 3) for k, v in zip(fitted, w)})
        for lang, cs in chunks.items():
            e = [(base + sum(a * b for a, b in zip(w, x))) / exact - 1 for exact, base, x in cs]
            print(f"  {lang}: median {statistics.median(e):+.1%} (n={len(e)})")


if __name__ == "__main__":
    main()
